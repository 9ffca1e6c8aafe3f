"""pytest set-up shared by `pytest` and `pytest --nbval`.

- Unit tests run PyTorch on one CPU thread.
- Notebooks run in a kernel of this very environment (no kernel-name mismatches).
- Outputs are sanitized with tests/nbval_sanitize.cfg (addresses, timings, rates).
- Student versions of exercise notebooks are not validated by nbval (their stubs
  raise NotImplementedError by design); tests/test_student_notebooks.py runs them.
"""

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent


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
    if path.suffix == ".ipynb":
        metadata = json.loads(path.read_text(encoding="utf-8")).get("metadata", {})
        if metadata.get("course", {}).get("role") == "student":
            return True
    return None
