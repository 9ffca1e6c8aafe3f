"""conftest.py's kernel starts for nbval: answered at the first reply, started again when one dies on start."""

import conftest
from nbval import kernel


def test_a_kernel_that_dies_on_start_is_started_again(monkeypatch):
    calls = []

    def flaky(*args, **kwargs):
        calls.append(kwargs)
        if len(calls) < 3:
            raise RuntimeError("Kernel died before replying to kernel_info")
        return "manager", "client"

    monkeypatch.setattr(kernel, "start_new_kernel", kernel.start_new_kernel)  # restored after the test
    conftest._retry_kernel_starts(attempts=3, start=flaky)
    assert kernel.start_new_kernel(kernel_name="k") == ("manager", "client") and len(calls) == 3

    calls.clear()
    conftest._retry_kernel_starts(attempts=2, start=flaky)
    try:
        kernel.start_new_kernel(kernel_name="k")
    except RuntimeError as err:
        assert "Kernel died" in str(err) and len(calls) == 2
    else:
        raise AssertionError("a kernel that dies on every try must fail the notebook")


def test_a_kernel_started_for_nbval_answers_and_a_dead_one_is_reported(tmp_path, monkeypatch):
    running = kernel.RunningKernel(kernel.CURRENT_ENV_KERNEL_NAME, cwd=str(tmp_path))  # conftest's start, then nbval's IOPub check
    try:
        assert running.kc.execute_interactive("1 + 1", timeout=30)["content"]["status"] == "ok"
    finally:
        running.stop()
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # "python3" is not nbval's kernel: it starts the usual way
    (tmp_path / "ipykernel_launcher.py").write_text("raise SystemExit(3)\n")  # a kernel that dies at once
    try:
        conftest._start_kernel(kernel_name="python3", cwd=str(tmp_path), startup_timeout=20)
    except RuntimeError as err:
        assert "Kernel died" in str(err)
    else:
        raise AssertionError("a kernel that dies must be reported")
