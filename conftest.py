"""pytest set-up shared by `pytest` and `pytest --nbval`.

- Unit tests run PyTorch on one CPU thread.
- Notebooks run in a kernel of this very environment (no kernel-name mismatches), on the CPU:
  `get_device()` honours COURSE_DEVICE, which is set to "cpu" here unless it is already set, so
  an instructor's GPU machine reproduces the stored outputs too. `COURSE_DEVICE=cuda pytest`
  runs every notebook's training on the GPU instead (outputs that depend on the device are
  not compared; the assertions in the cells still hold).
- Nothing is remembered between runs: every notebook trains its models afresh, every time.
- Outputs are sanitized with tests/nbval_sanitize.cfg (addresses, timings, rates).
- On Linux each notebook's kernel is a fork of a template process that has imported PyTorch, NumPy
  and matplotlib once per pytest process (tests/forked_kernels.py): the same kernel, started about a
  second sooner. `COURSE_FORKED_KERNELS=0 pytest` starts every kernel the usual way.
- Two tiers. The README's `pytest` runs the unit tests and every lesson and solution notebook.
  The `slow` tier (`pytest -m slow`; CI runs it) holds what takes minutes and repeats code
  the first tier already ran: the student versions of the notebooks that have a solution twin
  (nbval runs them top to bottom, no task done, no error allowed; tests/test_student_notebooks.py
  checks in the first tier that they are the up-to-date stubs of their solutions), JupyterLab in
  Chromium (tests/test_browser.py), the grader on a class folder (tests/test_grade_class.py) and
  the stored experiments' first steps trained again (tests/test_experiments.py).
  `pytest -m ""` runs both tiers; so does naming files (`pytest notebooks/05_causal_mask.ipynb`).
"""

import os
import sys
from pathlib import Path

import pytest

# nbval is loaded here (pyproject.toml's addopts say `-p no:nbval`), not by its entry point, so that
# this line comes first: nbval imports nbformat, which imports jsonschema, which builds 38 parsers for
# the optional `rfc3987_syntax` package (IRI formats: nothing a notebook uses) in every pytest process,
# about 0.75 s of CPU each; measured, one test file under `pytest` went from 6.8 s to 3.9 s of wall time.
# Notebook kernels are other processes: they never see this.
sys.modules.setdefault("rfc3987_syntax", None)
pytest_plugins = ["nbval.plugin"]

ROOT = Path(__file__).resolve().parent
os.environ.setdefault("COURSE_DEVICE", "cpu")  # inherited by the notebook kernels nbval starts


def pytest_configure(config):
    # Unit tests that train run on one CPU thread, as the notebooks do (seed_everything):
    # on a busy 2-core machine two threads can be many times slower than one. xdist's controller
    # runs no test: it skips importing PyTorch (a second of CPU).
    if not getattr(config.option, "numprocesses", None) or hasattr(config, "workerinput"):
        import torch

        torch.set_num_threads(1)
        import gc

        # PyTorch's hundreds of thousands of objects live as long as the process: moved out of the
        # garbage collector's reach, every full collection (pytest's assertion rewriting of the test
        # modules sets off many) stops walking them. Collecting the suite: 6.0 s -> 4.4 s of CPU.
        gc.freeze()
    # Naming files runs all of them: `pytest notebooks/05_causal_mask.ipynb` or `pytest tests/test_browser.py`
    # runs the slow tier's items in them too (the tier only thins whole folders).
    named = [arg.split("::")[0] for arg in config.args]
    typed_m = any(a == "-m" or a.startswith("-m") for a in config.invocation_params.args)  # not addopts' -m
    if not typed_m and named and all(Path(a).suffix in (".py", ".ipynb") for a in named):
        config.option.markexpr = ""
    if hasattr(config.option, "nbval_current_env"):
        from nbval import kernel

        _retry_kernel_starts()
        kernel.RunningKernel.stop = _stop_kernel
        _fork_kernels_from_a_template(config)
        config.option.nbval_current_env = True
        if not config.option.nbval_sanitize_with:
            config.option.nbval_sanitize_with = str(ROOT / "tests" / "nbval_sanitize.cfg")


def _retry_kernel_starts(attempts: int = 3, start=None) -> None:
    """Start a notebook's kernel again when it dies before it answers (at most ``attempts`` tries).

    jupyter_client picks five free TCP ports, then the kernel binds them; with two xdist workers
    starting kernels, another process (a kernel, or a client's outgoing connection) can take a port
    in between, and the kernel dies on "Address already in use" (nbval shows "Kernel died before
    replying to kernel_info", and every cell of that notebook errors). A new start picks new ports.
    Each try is ``start`` (default: ``_start_kernel``).
    """
    from nbval import kernel

    start = start or _start_kernel

    def start_new_kernel(*args, **kwargs):
        for attempt in range(1, attempts + 1):
            try:
                return start(*args, **kwargs)
            except RuntimeError:  # the dead kernel's manager is shut down
                if attempt == attempts:
                    raise

    kernel.start_new_kernel = start_new_kernel


def _stop_kernel(self) -> None:
    """nbval's ``RunningKernel.stop``, less up to 0.1 s of polling: the kernel is killed and waited for.

    jupyter_client kills the kernel's process group, then looks every 0.1 s whether it has gone; here
    the same kill comes first and the wait is for the process itself.
    """
    import signal
    import subprocess

    self.kc.stop_channels()
    process = getattr(self.km.provisioner, "process", None)
    if process is not None and process.poll() is None:
        try:
            if os.getpgid(process.pid) == process.pid:  # its own group (jupyter_client starts a new session)
                os.killpg(process.pid, signal.SIGKILL)  # the group, as jupyter_client's kill does
            else:
                process.kill()
            process.wait(timeout=5)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
    self.km.shutdown_kernel(now=True)  # finds the process gone, and cleans up after it
    del self.km


def _start_kernel(startup_timeout: float = 60, kernel_name: str = "python", **kwargs):
    """nbval's ``start_new_kernel``, less jupyter_client's closing wait: ``(manager, client)``.

    jupyter_client's ``wait_for_ready``, once the kernel has answered, listens to IOPub until it has
    been silent for 0.2 s: 0.2 s of every notebook's set-up. nbval's RunningKernel checks IOPub itself
    right after (it waits for the kernel's idle status there), so the kernel's first answer is enough.
    """
    import queue
    import time

    from jupyter_client.manager import KernelManager
    from nbval import kernel

    km = KernelManager(kernel_name=kernel_name, kernel_spec_manager=kernel.NbvalKernelspecManager())
    km.start_kernel(**kwargs)
    deadline = time.monotonic() + startup_timeout
    _wait_for_port(km, deadline)
    kc = km.client()
    kc.start_channels()
    try:
        while True:
            if not km.is_alive():  # before a second's wait for a reply that cannot come
                raise RuntimeError("Kernel died before replying to kernel_info")
            kc.kernel_info()
            try:
                reply = kc.get_shell_msg(timeout=1)
            except queue.Empty:
                reply = None
            if reply is not None and reply["msg_type"] == "kernel_info_reply":
                kc._handle_kernel_info_reply(reply)  # as wait_for_ready does: the kernel's protocol version
                return km, kc
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {startup_timeout} seconds")
    except RuntimeError:
        kc.stop_channels()
        km.shutdown_kernel()
        raise


def _wait_for_port(km, deadline: float) -> None:
    """Wait until the kernel listens on its IOPub port (or has died, or ``deadline`` has passed).

    A client that connects before the kernel listens is refused, and ZeroMQ tries again after longer
    and longer waits: a kernel that takes a second to start was reached about two seconds later.
    """
    import socket
    import time

    if km.transport != "tcp":
        return
    while time.monotonic() < deadline and km.is_alive():
        try:
            socket.create_connection((km.ip, km.iopub_port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.01)


_TEMPLATE: dict = {}  # "path": the socket of this process's kernel template, once started


def _fork_kernels_from_a_template(config) -> None:
    """nbval's kernels start as forks of one process that has imported PyTorch (tests/forked_kernels.py).

    Each notebook's kernel then skips importing PyTorch, NumPy and matplotlib: about 1.1 s of CPU per
    notebook, 22 notebooks in the default tier. Under xdist the controller starts the one template at
    once, when the run has notebooks, and its workers share it (``pytest_configure_node``); without
    xdist it starts with the first kernel. It ends with the process that started it. Linux only;
    ``COURSE_FORKED_KERNELS=0`` starts every kernel the usual way.
    """
    if sys.platform != "linux" or os.environ.get("COURSE_FORKED_KERNELS", "1") == "0":
        return
    from nbval import kernel

    script = ROOT / "tests" / "forked_kernels.py"
    get_kernel_spec = kernel.NbvalKernelspecManager.get_kernel_spec
    if hasattr(config, "workerinput"):
        _TEMPLATE["path"] = config.workerinput.get("course_kernel_template")  # the controller's, if any
    elif getattr(config.option, "numprocesses", None) and _runs_notebooks(config):
        _TEMPLATE["path"] = _start_template(script)  # it imports while the workers collect

    def forked(self, kernel_name):
        spec = get_kernel_spec(self, kernel_name)
        if kernel_name == kernel.CURRENT_ENV_KERNEL_NAME and "ipykernel_launcher" in spec.argv:
            if not _TEMPLATE.get("path"):
                _TEMPLATE["path"] = _start_template(script)
            args = spec.argv[spec.argv.index("ipykernel_launcher") + 1 :]  # -f {connection_file}
            spec.argv = [sys.executable, "-I", "-S", str(script), "connect", _TEMPLATE["path"], *args]
        return spec

    kernel.NbvalKernelspecManager.get_kernel_spec = forked


def _start_template(script: Path) -> str:
    """Start the template (``forked_kernels.py serve``), ended at this process's exit; its socket's path."""
    import atexit
    import shutil
    import subprocess
    import tempfile

    folder = tempfile.mkdtemp(prefix="course-kernels-")
    path = os.path.join(folder, "template.sock")
    process = subprocess.Popen([sys.executable, str(script), "serve", path], stdin=subprocess.PIPE, cwd=ROOT)

    def stop() -> None:
        process.stdin.close()  # the template's signal to end
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        shutil.rmtree(folder, ignore_errors=True)

    atexit.register(stop)
    return path


def _runs_notebooks(config) -> bool:
    """Whether the paths pytest was given hold a notebook it may run (the grader's test data aside)."""
    for arg in config.args:
        path = Path(arg.split("::")[0])
        if path.suffix == ".ipynb":
            return True
        if path.is_dir() and any("submissions" not in p.parts and ".ipynb_checkpoints" not in p.parts
                                 for p in path.resolve().rglob("*.ipynb")):
            return True
    return False


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """xdist, on the controller: each worker gets the controller's kernel template, if it started one."""
    if _TEMPLATE.get("path"):
        node.workerinput["course_kernel_template"] = _TEMPLATE["path"]


def pytest_collection_modifyitems(config, items):
    """Student versions (notebooks/NN_x.ipynb with a twin in notebooks/solutions/) are `slow`."""
    import pytest

    for item in items:
        path = Path(str(item.fspath))
        if path.suffix == ".ipynb" and path.parent == ROOT / "notebooks" and (path.parent / "solutions" / path.name).exists():
            item.add_marker(pytest.mark.slow)


def pytest_ignore_collect(collection_path, config):
    path = Path(collection_path)
    if ".ipynb_checkpoints" in path.parts:
        return True
    if path.suffix == ".ipynb" and "submissions" in path.relative_to(ROOT).parts[:2]:
        return True  # tests/submissions: the grader's test data (endless loops, crashes), never run by nbval
    return None


@pytest.fixture
def live_child_pids():
    """A function that returns the pids of this process's living child processes (the kernels it started)."""
    import psutil  # installed with ipykernel

    return lambda: {p.pid for p in psutil.Process().children(recursive=True) if p.status() != psutil.STATUS_ZOMBIE}
