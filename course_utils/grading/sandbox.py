"""Where and how a submission's worker runs: the isolation asked for, limits, and a clean end.

Three levels. ``auto`` (the default) is ``bubblewrap`` or nothing: a level that was asked for and
cannot be had stops the run (:class:`Refused`, a clear message, exit status 2), and a weaker one is
used only when asked for by name with ``--i-understand`` (then the header and the report say so).
Student code never runs as root: as root, every worker becomes a user id of its own that no
account and no process has (one per job slot); without one free, the run stops.

- ``bubblewrap`` (Debian's ``bubblewrap``, ``bwrap``): the worker sees a read-only view of
  Python, the installed libraries and a private copy of the course's package, its own folder
  and ``/tmp`` (both empty tmpfs of a fixed size); nothing else of the machine (not the course
  checkout, the solutions, the class folder or the grades); no network; its own process
  namespace, so every process it started ends with it.
- ``separate user`` (``--isolation user``, root only): the worker runs as a user of its own, in an
  empty network namespace; it cannot write outside its folder (except where anyone may), every
  process of that user is ended after each submission, but it can still READ whatever any user
  of the machine may read (the class folder, the solutions, if readable).
- ``none`` (not as root): same user as the grader; limits and a clean end only. Not a security boundary.

Always: a new session, limits on address space, processes, file size, open files and CPU
time; a memory cgroup per job slot where the machine allows one (``grading.cgroup``: it counts
memory in ``memfd``s and tmpfs files, which the address-space limit does not); the folder's size
checked after each task where it is not a tmpfs; stdout and stderr thrown away; the grader is a
"child subreaper", so a process that detaches from the worker stays the grader's descendant and is
ended with it.
"""

from __future__ import annotations

import ctypes
import os
import pwd
import resource
import shutil
import signal
import subprocess
import sys
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from . import cgroup
from .worker import START, bootstrap

PACKAGE = Path(__file__).resolve().parents[1]
INSIDE_PACKAGE, INSIDE_FOLDER = "/grader/package", "/submission"
THREAD_ENV = {k: "1" for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS")}
_libc = ctypes.CDLL(None, use_errno=True)


@dataclass(frozen=True)
class Limits:
    memory_bytes: int = 4 * 2**30  # address space of each worker process (0: none)
    processes: int = 64  # processes and threads of a worker's user
    file_bytes: int = 64 * 2**20  # the largest file a worker may write
    cpu_seconds: int = 300
    folder_bytes: int = 128 * 2**20  # the worker's folder, and its /tmp (bubblewrap)
    folder_files: int = 2000  # files in its folder (checked after each task where it is not a tmpfs)


class Refused(Exception):
    """The isolation asked for cannot be had here (the message says why and what to do)."""


@dataclass(frozen=True)
class Isolation:
    kind: str  # "bubblewrap", "separate user" or "none"
    reason: str  # why not stronger (empty for bubblewrap as root)
    uids: tuple[int, ...] = ()  # one user per job slot (root only)

    def label(self) -> str:
        return self.kind + (f" ({self.reason})" if self.reason else "")


def become_subreaper() -> None:
    """Orphaned descendants (a detached process of a worker) become this process's children, not init's."""
    with suppress(Exception):
        _libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def copy_package(run_dir: Path) -> Path:
    """A read-only private copy of the course's package (no caches): the only ``course_utils`` a worker sees."""
    target = run_dir / "package"
    shutil.copytree(PACKAGE, target / "course_utils", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for path in sorted(target.rglob("*"), reverse=True) + [target]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    return target


def site_dirs() -> list[str]:
    """The folders of installed libraries on this Python's path (never the course checkout)."""
    dirs = [p for p in sys.path if p and Path(p).name in ("site-packages", "dist-packages") and Path(p).is_dir()]
    return list(dict.fromkeys(os.path.realpath(p) for p in dirs))


_HELD: list = []  # lock files of the users this run holds (two runs on one machine never share one)


def _free_uids(count: int, start: int = 61000) -> tuple[int, ...]:
    """``count`` user ids that no account has, no process runs as, and no other run of the grader holds."""
    import fcntl
    import tempfile

    uids, uid = [], start
    busy = {st.st_uid for p in Path("/proc").iterdir() if p.name.isdigit() for st in [_stat(p)] if st}
    while len(uids) < count and uid < 65000:
        try:
            pwd.getpwuid(uid)
        except KeyError:
            lock = open(Path(tempfile.gettempdir()) / f"course-grade-user-{uid}.lock", "a")  # noqa: SIM115
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                lock.close()
            else:
                if uid in busy:
                    lock.close()
                else:
                    _HELD.append(lock)
                    uids.append(uid)
        uid += 1
    return tuple(uids)


def _stat(path: Path):
    with suppress(OSError):
        return path.stat()
    return None


def _bwrap_argv(folder: Path, package: Path, limits: Limits) -> list[str]:
    """bwrap's arguments: read-only Python and libraries, the package at INSIDE_PACKAGE, an empty folder of
    ``limits.folder_bytes`` at INSIDE_FOLDER and at /tmp (``folder`` itself stays outside)."""
    argv = [shutil.which("bwrap") or "bwrap", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--die-with-parent", "--new-session", "--ro-bind", "/usr", "/usr"]
    if os.geteuid() != 0:
        argv.append("--unshare-user-try")
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    size = str(limits.folder_bytes)
    argv += ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache",  # /tmp first: Python may live under /tmp
             "--perms", "1777", "--size", size, "--tmpfs", "/tmp"]
    python = os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))
    reads = [python, sys.base_prefix, sys.prefix, *site_dirs()]
    made = {"/", "/usr"}
    for path in dict.fromkeys(os.path.realpath(p) for p in reads):
        if path.startswith("/usr/") or path == "/usr":
            continue
        for parent in list(Path(path).parents)[::-1][1:]:  # bwrap would make these 0700: a user could not pass
            if str(parent) not in made:
                made.add(str(parent))
                argv += ["--perms", "0755", "--dir", str(parent)]
        argv += ["--ro-bind", path, path]
    argv += ["--perms", "0755", "--dir", "/grader", "--ro-bind", str(package), INSIDE_PACKAGE,
             "--perms", "1777", "--size", size, "--tmpfs", INSIDE_FOLDER, "--proc", "/proc", "--dev", "/dev",
             "--chdir", INSIDE_FOLDER, "--clearenv"]
    for key, value in _environment(INSIDE_FOLDER).items():
        argv += ["--setenv", key, value]
    return argv


def _environment(home: str) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": home, "MPLCONFIGDIR": home, "MPLBACKEND": "Agg", "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0", **THREAD_ENV}


def worker_command(iso: Isolation, slot: int, folder: Path, package: Path, then: str = START,
                   limits: Limits = Limits()) -> tuple[list[str], dict]:
    """(argv, environment) that start a worker for job ``slot`` in ``folder`` (``then``: what it runs)."""
    uid = iso.uids[slot] if iso.uids else None
    if iso.kind == "bubblewrap":
        code = bootstrap([INSIDE_PACKAGE, *site_dirs()], uid=uid, then=then)
        return [*_bwrap_argv(folder, package, limits), sys.executable, "-I", "-S", "-c", code], {}
    return [sys.executable, "-I", "-S", "-c", bootstrap([str(package), *site_dirs()], then=then)], _environment(str(folder))


def _user_processes(uid: int) -> int:
    return sum(1 for p in Path("/proc").iterdir() if p.name.isdigit() and (st := _stat(p)) and st.st_uid == uid)


def preexec(iso: Isolation, slot: int, limits: Limits, group: str = ""):
    """What the worker's process does between fork and exec: session, memory group, limits, user, no network."""
    uid = iso.uids[slot] if iso.uids else None
    extra = 0 if os.geteuid() == 0 else _user_processes(os.geteuid())  # a non-root user's other processes count

    def in_child() -> None:
        os.setsid()
        cgroup.join(group)
        os.umask(0o022)
        for name, value in (("RLIMIT_AS", limits.memory_bytes), ("RLIMIT_NPROC", limits.processes + extra),
                            ("RLIMIT_FSIZE", limits.file_bytes), ("RLIMIT_NOFILE", 256), ("RLIMIT_CORE", 0),
                            ("RLIMIT_CPU", limits.cpu_seconds)):
            if value:
                resource.setrlimit(getattr(resource, name), (value, value))
        if iso.kind != "bubblewrap":
            _libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: the worker dies with its grader
        if iso.kind == "separate user":
            _libc.unshare(0x40000000)  # CLONE_NEWNET: a network namespace with nothing in it
            _libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)

    return in_child


def spawn(iso: Isolation, slot: int, folder: Path, package: Path, limits: Limits, group: str = "") -> subprocess.Popen:
    argv, env = worker_command(iso, slot, folder, package, limits=limits)
    return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            cwd=folder, env=env, preexec_fn=preexec(iso, slot, limits, group),
                            close_fds=True)


def kill_user(uid: int) -> None:
    """End every process of ``uid`` (a child becomes that user and signals everything it may: kill(-1))."""
    for _ in range(3):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            try:
                os.setgid(uid)
                os.setuid(uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)


def _descendants(root: int | None = None) -> tuple[list[int], list[int]]:
    """(living, ended but not collected) processes below ``root`` (default: this process), ``root`` included."""
    parents, states = {}, {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            with suppress(OSError, ValueError, IndexError):
                fields = (p / "stat").read_text().rsplit(")", 1)[1].split()
                parents[int(p.name)], states[int(p.name)] = int(fields[1]), fields[0]
    found, frontier = [], [root or os.getpid()]
    while frontier:
        children = [pid for pid, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    found += [root] if root in states else []
    return [p for p in found if states[p] != "Z"], [p for p in found if states[p] == "Z" and p != root]


def end_worker(proc: subprocess.Popen | None, iso: Isolation, slot: int) -> None:
    """End the worker and everything it started (detached processes too: this process is their subreaper),
    then collect them."""
    if proc is not None:
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with suppress(ProcessLookupError):
            proc.kill()
        with suppress(Exception):
            proc.wait(5)
        for stream in (proc.stdin, proc.stdout):
            with suppress(Exception):
                stream.close()
    if iso.uids:
        kill_user(iso.uids[slot])
    end_tree(None)


def end_tree(root: int | None, iso: Isolation | None = None, slot: int = 0) -> None:
    """End every process below ``root`` (default: this process) and ``root`` itself; a fork bomb keeps
    forking, so: stop them all, then kill them all, until none is left. With ``iso``, also the slot's user."""
    for _ in range(100):
        living, ended = _descendants(root)
        _reap(ended)
        if not living:
            break
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for pid in living:
                with suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, sig)
        time.sleep(0.01)
    if iso is not None and iso.uids:
        kill_user(iso.uids[slot])


def _reap(pids: list[int]) -> None:
    """Collect those of ``pids`` that are this process's children and have ended (orphans adopted here)."""
    for pid in pids:
        with suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


LESS = "to grade with less isolation, ask for it: --isolation user (as root) or --isolation none (not as root), with --i-understand"


def detect(jobs: int, run_dir: Path, package: Path, want: str = "auto", accept_less: bool = False) -> Isolation:
    """The isolation asked for (``want``: "auto" = "bubblewrap", "user" or "none"), or :class:`Refused`.
    A weaker one than bubblewrap needs ``accept_less``; student code never runs as root."""
    root = os.geteuid() == 0
    uids = _free_uids(jobs) if root else ()
    if root and len(uids) < jobs:
        raise Refused(f"running as root, and fewer than {jobs} free user ids for the workers: student code never "
                      "runs as root")
    if want in ("auto", "bubblewrap"):
        if shutil.which("bwrap") is None:
            raise Refused(f"bubblewrap is not installed (apt-get install bubblewrap); {LESS}")
        iso = Isolation("bubblewrap", "" if root else "not root: no user of its own", uids)
        problem = _probe(iso, run_dir, package)
        if problem:
            raise Refused(f"bubblewrap does not work here ({problem}); {LESS}")
        return iso
    if not accept_less:
        raise Refused(f"--isolation {want} is weaker than bubblewrap (INSTRUCTORS.md says what it lets a submission "
                      "do): add --i-understand to grade with it")
    if want == "user":
        if not root:
            raise Refused("--isolation user needs root (each worker runs as a user of its own)")
        iso = Isolation("separate user", "asked for: a submission can read what any user may read", uids)
        problem = _probe(iso, run_dir, package)
        if problem:
            raise Refused(f"a separate user cannot run this Python ({problem})")
        return iso
    if root:
        raise Refused("--isolation none would run student code as root: use --isolation user or bubblewrap")
    return Isolation("none", "asked for: NOT a security boundary")


def _probe(iso: Isolation, run_dir: Path, package: Path) -> str:
    """'' if a worker can start under ``iso`` (and import torch), else what went wrong."""
    folder = run_dir / "probe"
    folder.mkdir(exist_ok=True)
    if iso.uids:
        os.chown(folder, iso.uids[0], iso.uids[0])
    argv, env = worker_command(iso, 0, folder, package, then="import torch, course_utils.grading.transport\n")
    try:
        done = subprocess.run(argv, cwd=folder, env=env, capture_output=True, timeout=120,
                              preexec_fn=preexec(iso, 0, Limits()))
    except (OSError, subprocess.SubprocessError) as err:
        return f"{type(err).__name__}: {err}"
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    lines = done.stderr.decode(errors="replace").strip().splitlines()
    return "" if done.returncode == 0 else (lines[-1] if lines else f"exit status {done.returncode}")
