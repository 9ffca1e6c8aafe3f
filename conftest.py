"""pytest set-up shared by `pytest` and `pytest --nbval`.

- Unit tests run PyTorch on one CPU thread.
- Notebooks run in a kernel of this very environment (no kernel-name mismatches), on the CPU:
  `get_device()` honours COURSE_DEVICE, which is set to "cpu" here unless it is already set, so
  an instructor's GPU machine reproduces the stored outputs too. `COURSE_DEVICE=cuda pytest`
  runs every notebook's training on the GPU instead (outputs that depend on the device are
  not compared; the assertions in the cells still hold).
- Outputs are sanitized with tests/nbval_sanitize.cfg (addresses, timings, rates).
- Student versions of the exercise notebooks are validated like every other notebook: stored
  from a fresh run, they must run to the end with no error.
"""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent
os.environ.setdefault("COURSE_DEVICE", "cpu")  # inherited by the notebook kernels nbval starts


def pytest_configure(config):
    # Unit tests that train run on one CPU thread, as the notebooks do (seed_everything):
    # on a busy 2-core machine two threads can be many times slower than one.
    import torch

    torch.set_num_threads(1)
    if hasattr(config.option, "nbval_current_env"):
        config.option.nbval_current_env = True
        if not config.option.nbval_sanitize_with:
            config.option.nbval_sanitize_with = str(ROOT / "tests" / "nbval_sanitize.cfg")


def pytest_ignore_collect(collection_path, config):
    path = Path(collection_path)
    if ".ipynb_checkpoints" in path.parts:
        return True
    if path.suffix == ".ipynb" and "submissions" in path.relative_to(ROOT).parts[:2]:
        return True  # tests/submissions: the grader's test data (endless loops, crashes), never run by nbval
    return None
