"""Notebook kernels forked from a process that has already imported PyTorch: cheaper kernel starts.

Every notebook nbval checks runs in a kernel of its own (22 in the default tier), and every one of them
starts a Python, starts IPython and imports PyTorch, NumPy and matplotlib: about 1.5 s of CPU each, the
same work 22 times. Here a pytest run that runs notebooks starts one *template* process (``serve``;
under xdist the controller starts it and the workers share it) that does that work once and waits. The
kernel command nbval launches becomes a small *stand-in* (``connect``, started with ``python -I -S``: no
site, no imports) that asks the template for a kernel; the template forks, and the fork runs
``ipykernel`` with the stand-in's connection file, working directory, environment and standard streams,
exactly as ``python -m ipykernel_launcher -f FILE`` would.

Only what a fresh kernel would import anyway is imported ahead, and nothing is run: no tensor is made,
no RNG is drawn (each fork seeds PyTorch's and NumPy's from the OS, as an import does), no figure is
drawn, matplotlib's backend is the one ipykernel would choose, and ``matplotlib.pyplot`` (which hooks
the inline backend into IPython) is left for the notebook to import. The template starts with the pytest
process's environment, which is the kernels' own but for jupyter_client's JPY_* variables; what reads
those (IPython, ipykernel) is imported in the kernel.

The stand-in is the process jupyter_client manages: it forwards the signals it gets (an interrupt, a
terminate) to the kernel, and exits when the kernel does. The two hold the ends of a socket pair, so
each sees the other go: a kernel whose stand-in was killed exits at once.

Linux only (conftest.py uses it there, unless ``COURSE_FORKED_KERNELS=0``); elsewhere, and with it off,
kernels start the usual way. Students never meet it: their kernels are JupyterLab's.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import time

# What each notebook's first cell imports anyway, and reads nothing of a kernel's own environment. IPython and
# ipykernel are not among them (0.05 s): they read the JPY_* variables jupyter_client sets as they import.
HEAVY = ("numpy", "torch", "matplotlib", "matplotlib.figure", "course_utils.core")


def serve(path: str) -> None:
    """The template: listen on the Unix socket ``path``, import ``HEAVY``, fork a kernel per request.

    It ends when its standard input closes (the pytest process that started it has ended). The forks keep
    this process's command line: ``ps`` shows each kernel as ``forked_kernels.py serve``.
    """
    import select

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)  # before the imports: a stand-in that comes early waits in the backlog
    listener.listen(16)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is the pytest process's to handle
    # Each kernel is waited for as it ends, so its CPU time counts in this process's children, and so in the
    # pytest process's (which waits for this one): `nbtools benchmark --pytest` reads it there.
    signal.signal(signal.SIGCHLD, _reap)
    if not os.environ.get("MPLBACKEND"):  # what ipykernel's IPKernelApp.init_pylab sets, before matplotlib reads it
        os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    import importlib

    for name in HEAVY:
        importlib.import_module(name)
    early = {"matplotlib.pyplot", "IPython", "ipykernel"} & set(sys.modules)
    assert not early, f"{early} must be imported in the kernel, with its environment and IPython there"
    try:
        while True:
            ready, _, _ = select.select([listener, sys.stdin], [], [])
            if sys.stdin in ready and not os.read(sys.stdin.fileno(), 1):
                return
            if listener in ready:
                conn, _ = listener.accept()
                with conn:
                    _fork_kernel(listener, conn)
    finally:
        listener.close()
        os.unlink(path)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        _wait_for_kernels(timeout=10)


def _reap(signum=None, frame=None) -> None:
    """Wait for every kernel that has ended (SIGCHLD's handler)."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:  # no kernel left
        pass


def _wait_for_kernels(timeout: float) -> None:
    """At the end, wait up to ``timeout`` seconds for kernels still shutting down."""
    end = time.monotonic() + timeout
    try:
        while time.monotonic() < end:
            if not os.waitpid(-1, os.WNOHANG)[0]:
                time.sleep(0.02)
    except ChildProcessError:
        pass


def _fork_kernel(listener: socket.socket, conn: socket.socket) -> None:
    data, fds, _, _ = socket.recv_fds(conn, 1 << 16, 4)
    while chunk := conn.recv(1 << 16):  # the rest of a long environment; the stand-in then shuts its side
        data += chunk
    request = json.loads(data)
    pid = os.fork()
    if pid:
        for fd in fds:
            os.close(fd)
        conn.sendall(str(pid).encode())
        return
    try:  # the kernel
        listener.close()
        conn.close()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.setsid()
        for fd, target in zip(fds[:3], (0, 1, 2)):
            os.dup2(fd, target)
            os.close(fd)
        lifeline = socket.socket(fileno=fds[3])
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = ["ipykernel_launcher", *request["args"]]
        del sys.path[0]  # this script's folder; ipykernel_launcher drops its own entry too
        _exit_when_closed(lifeline)
        import numpy
        import torch

        torch.seed()  # a fresh import seeds both from the OS: so does each fork, not the template's seeds
        numpy.random.seed()  # (Python's own `random` is reseeded at every fork by CPython)
        from ipykernel import kernelapp

        kernelapp.launch_new_instance()
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    except BaseException:  # noqa: BLE001 (a fork must never return into the template's loop)
        import traceback

        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _exit_when_closed(lifeline: socket.socket) -> None:
    """End this kernel as soon as its stand-in is gone (killed, say, by a timed-out shutdown)."""
    import threading

    def watch() -> None:
        while lifeline.recv(1):
            pass
        os._exit(1)

    threading.Thread(target=watch, name="stand-in watcher", daemon=True).start()


def connect(path: str, args: list[str]) -> int:
    """The stand-in: ask the template at ``path`` for a kernel with ``args``; live as long as it does.

    Without a template to answer (it failed to start, or was killed), it becomes the usual kernel.
    """
    try:
        pid, mine = _ask(path, args)
    except OSError as error:
        print(f"forked_kernels: no kernel from the template ({error}); starting one the usual way", file=sys.stderr)
        os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", *args])

    def forward(signum, frame):
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, forward)
    while mine.recv(1):  # b"" once the kernel has ended (a signal in between is forwarded, and recv resumes)
        pass
    return 0


def _ask(path: str, args: list[str]) -> tuple[int, socket.socket]:
    """Send the template this process's request and standard streams; return the kernel's pid and lifeline."""
    mine, theirs = socket.socketpair()
    for attempt in range(40):  # the template binds its socket the moment it starts: 2 s is ample
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            client.connect(path)
            break
        except (FileNotFoundError, ConnectionRefusedError):
            client.close()
            if attempt == 39:
                raise
            time.sleep(0.05)
    request = {"args": args, "cwd": os.getcwd(), "env": dict(os.environ)}
    streams = [fd if _is_open(fd) else os.open(os.devnull, os.O_RDWR) for fd in (0, 1, 2)]
    with client:
        socket.send_fds(client, [json.dumps(request).encode()], [*streams, theirs.fileno()])
        theirs.close()
        client.shutdown(socket.SHUT_WR)
        answer = client.recv(64)
    if not answer:
        raise ConnectionResetError("the template closed the connection without forking")
    return int(answer), mine


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
    elif sys.argv[1] == "connect":
        sys.exit(connect(sys.argv[2], sys.argv[3:]))
    else:
        sys.exit(f"usage: {sys.argv[0]} serve PATH | connect PATH ARGS...")
