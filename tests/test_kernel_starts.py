"""conftest.py starts a notebook's kernel again when it dies on start (a TCP port taken in between)."""

import conftest
from nbval import kernel


def test_a_kernel_that_dies_on_start_is_started_again(monkeypatch):
    calls = []

    def flaky(*args, **kwargs):
        calls.append(kwargs)
        if len(calls) < 3:
            raise RuntimeError("Kernel died before replying to kernel_info")
        return "manager", "client"

    monkeypatch.setattr(kernel, "start_new_kernel", flaky)
    conftest._retry_kernel_starts(attempts=3)
    assert kernel.start_new_kernel(kernel_name="k") == ("manager", "client") and len(calls) == 3

    calls.clear()
    monkeypatch.setattr(kernel, "start_new_kernel", flaky)
    conftest._retry_kernel_starts(attempts=2)
    try:
        kernel.start_new_kernel(kernel_name="k")
    except RuntimeError as err:
        assert "Kernel died" in str(err) and len(calls) == 2
    else:
        raise AssertionError("a kernel that dies on every try must fail the notebook")
