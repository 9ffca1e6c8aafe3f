"""The notebook kernels nbval starts, forked from a template (tests/forked_kernels.py, conftest.py).

A forked kernel must be the kernel `python -m ipykernel_launcher` would have been: its own process in the
notebook's folder, with its own environment, the inline backend, nothing drawn or seeded before it runs;
it must stop when told to, stop when its stand-in is killed, and take an interrupt.
"""

import os
import signal
import sys
import time

import pytest
from nbval.kernel import CURRENT_ENV_KERNEL_NAME, RunningKernel

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or os.environ.get("COURSE_FORKED_KERNELS") == "0", reason="kernels fork on Linux only"
)


def run(kernel: RunningKernel, code: str) -> tuple[str, dict]:
    """Run ``code``; return what it printed and the reply's content."""
    printed = []

    def output(msg):
        if msg["msg_type"] == "stream":
            printed.append(msg["content"]["text"])

    reply = kernel.kc.execute_interactive(code, timeout=60, output_hook=output, allow_stdin=False)
    return "".join(printed), reply["content"]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(")")[-1].split()[0] != "Z"


def gone_within(pid: int, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while alive(pid) and time.monotonic() < end:
        time.sleep(0.05)
    return not alive(pid)


@pytest.fixture
def kernel(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_TEST_MARK", "set after the template started")
    k = RunningKernel(CURRENT_ENV_KERNEL_NAME, cwd=str(tmp_path))
    yield k
    if hasattr(k, "km"):  # not stopped by the test
        k.stop()


def test_a_forked_kernel_is_a_fresh_kernel_in_its_own_folder_environment_and_seeds(kernel, tmp_path):
    assert "forked_kernels.py" in " ".join(kernel.km.provisioner.process.args)  # the stand-in, not ipykernel
    code = "\n".join([
        "import os, random, sys, matplotlib.pyplot as plt, numpy, torch",
        "print(os.getcwd(), '' in sys.path, os.environ['COURSE_TEST_MARK'], os.environ['JPY_PARENT_PID'], sep='|')",
        "print(*sys.path, sep='|')",
        "print(plt.get_backend(), len(plt.get_fignums()), os.getpid(), sep='|')",
        "print(torch.initial_seed(), numpy.random.random(), random.random())",
    ])
    other = RunningKernel(CURRENT_ENV_KERNEL_NAME, cwd=str(tmp_path))
    try:
        (printed, reply), (printed_other, _) = run(kernel, code), run(other, code)
    finally:
        other.stop()
    assert reply["status"] == "ok", reply
    where, path, backend, seeds = printed.splitlines()
    assert where.split("|") == [str(tmp_path), "True", "set after the template started", str(os.getpid())]
    assert os.path.join(ROOT, "tests") not in path.split("|")  # the template's script folder is not the kernel's
    name, figures, pid = backend.split("|")
    assert (name, figures) == ("module://matplotlib_inline.backend_inline", "0")
    assert int(pid) != kernel.km.provisioner.process.pid and alive(int(pid))
    other_seeds = printed_other.splitlines()[3]
    assert all(a != b for a, b in zip(seeds.split(), other_seeds.split(), strict=True)), (seeds, other_seeds)
    kernel.stop()
    assert gone_within(int(pid), 10)


@pytest.mark.slow
def test_a_forked_kernel_takes_an_interrupt_and_ends_with_its_stand_in(kernel):
    printed, _ = run(kernel, "import os; print(os.getpid())")
    pid = int(printed)
    msg_id = kernel.kc.execute("import time; time.sleep(60)", allow_stdin=False)
    time.sleep(0.5)
    kernel.km.interrupt_kernel()
    reply = kernel.kc.get_shell_msg(timeout=20)
    assert reply["parent_header"]["msg_id"] == msg_id and reply["content"]["ename"] == "KeyboardInterrupt"
    os.kill(kernel.km.provisioner.process.pid, signal.SIGKILL)  # a shutdown that timed out kills the stand-in
    assert gone_within(pid, 10)


@pytest.mark.slow
def test_without_a_template_the_stand_in_becomes_the_usual_kernel(tmp_path):
    from jupyter_client.kernelspec import KernelSpec
    from jupyter_client.manager import KernelManager

    script = os.path.join(ROOT, "tests", "forked_kernels.py")
    km = KernelManager()
    km._kernel_spec = KernelSpec(argv=[sys.executable, "-I", "-S", script, "connect", str(tmp_path / "none.sock"),
                                       "-f", "{connection_file}"], language="python")
    km.start_kernel(cwd=str(tmp_path))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        printed = []
        reply = kc.execute_interactive("import os; print(os.getpid())", timeout=60,
                                       output_hook=lambda m: printed.append(m["content"].get("text", "")))
        assert reply["content"]["status"] == "ok" and int("".join(printed)) == km.provisioner.process.pid
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
