"""Grade one submission: its row of the table. Runs in a judge process of ``course-grade``, where no
student code ever runs: the submission is read as data, the hidden inputs are drawn and the
verdicts computed here, and the student's functions run in a worker (``grade_sandbox``) that
only answers calls (``grade_channel``, ``checkers.transport``).

One wall clock (``timeout``) covers the whole submission, checks included; each task's check
has at most ``task_timeout`` of it. A worker that stops answering, sends something malformed,
ends itself or runs out of time costs that task (``crashed: ...`` / ``timed out``); the worker is
then ended, with everything it started, and the next task gets a fresh one.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import stat
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbformat.reader import NotJSONError

from .transport import ChannelClosed, TimedOut, remote_from
from .channel import Endpoint
from .exercises import Exercise, Invalid, code_sources, identify, load_check
from .plan import Plan, copied_from, make_plan, reaches_course, twin_calls
from .report import Result
from .sandbox import Isolation, Limits, end_worker, spawn

MAX_NOTEBOOK_BYTES = 32 * 2**20
TWIN_HINT = ("calls the course's own {name}: write it yourself (the course's version is what your function is "
             "checked against).")
SIGNALS = {signal.SIGKILL: "killed (out of memory, or over the process limit)", signal.SIGXFSZ: "wrote a file over the size limit",
           signal.SIGXCPU: "used up its CPU time", signal.SIGSEGV: "crashed (segmentation fault)"}


@dataclass
class Context:
    """What every submission of one run shares."""

    table: dict[str, Exercise]
    isolation: Isolation
    slot: int
    run_dir: Path
    package: Path
    timeout: float = 120.0
    task_timeout: float = 30.0
    limits: Limits = field(default_factory=Limits)
    groups: tuple[str, ...] = ()  # a memory cgroup per job slot ("" where none could be made)


def read_submission(path: Path, limit: int = MAX_NOTEBOOK_BYTES) -> bytes:
    """The bytes of a regular file at ``path``, never through a symlink, at most ``limit`` of them."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as err:
        if os.path.islink(path):
            raise Invalid("a symbolic link, not a notebook: submit the notebook file itself") from None
        raise Invalid(f"cannot read the file ({type(err).__name__})") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise Invalid("not a regular file")
        if info.st_size > limit:
            raise Invalid(f"larger than {limit // 2**20} MiB")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise Invalid(f"larger than {limit // 2**20} MiB")
    return data


def parse_notebook(data: bytes) -> nbformat.NotebookNode:
    try:
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
    except (UnicodeDecodeError, json.JSONDecodeError, NotJSONError, RecursionError):
        raise Invalid("invalid JSON (not a notebook)") from None
    except Exception as err:  # noqa: BLE001 - nbformat raises several kinds for bad input
        raise Invalid(f"not a notebook ({' '.join(str(err).split())[:120]})") from None
    if not isinstance(nb.get("cells"), list):
        raise Invalid("not a notebook (no cells)")
    return nb


class Worker:
    """A worker process for one submission, started on demand with a plan, ended on any trouble."""

    def __init__(self, ctx: Context, folder: Path) -> None:
        self.ctx, self.folder = ctx, folder
        self.proc = self.endpoint = self.report = None

    def launch(self, plan: Plan, names: list[str], deadline: float) -> dict:
        self.stop()
        group = self.ctx.groups[self.ctx.slot] if self.ctx.slot < len(self.ctx.groups) else ""
        self.proc = spawn(self.ctx.isolation, self.ctx.slot, self.folder, self.ctx.package, self.ctx.limits, group)
        self.endpoint = Endpoint(self.proc.stdout.fileno(), self.proc.stdin.fileno())
        self.endpoint.deadline = deadline
        setup = remote_from({"id": 0, "name": "setup"}, self.endpoint)
        report = setup(plan.to_message(), names)
        if not (isinstance(report, dict) and isinstance(report.get("objects"), dict)
                and isinstance(report.get("missing"), list) and isinstance(report.get("errors"), list)):
            raise ChannelClosed("the worker's set-up answer is malformed")
        self.report = report
        return report

    def why_closed(self, err: ChannelClosed) -> str:
        """What ended the conversation, for the row."""
        if isinstance(err, TimedOut) or self.proc is None:
            return str(err)
        with contextlib.suppress(Exception):
            self.proc.wait(2)
        code = self.proc.returncode
        if code is None or "malformed" in str(err):
            return str(err)
        if code < 0 or code > 128:
            return f"the worker was {SIGNALS.get(-code if code < 0 else code - 128, f'ended by signal {abs(code) % 128}')}"
        return f"the notebook ended its own process (exit status {code})"

    def stop(self) -> None:
        if self.proc is not None:
            end_worker(self.proc, self.ctx.isolation, self.ctx.slot)
        self.proc = self.endpoint = self.report = None


def verdict(result: object) -> str:
    """One CSV value from a check's CheckResult (every checker returns one: checkers/report.py)."""
    status, hint, error = (str(getattr(result, k, "") or "") for k in ("status", "hint", "error"))
    if status == "correct" and result:
        return "correct"
    if status == "not done":
        return "not done"
    if status == "crashed":
        return f"crashed: {error or hint}"
    if status == "wrong":
        return f"wrong: {hint or 'the checker gave no explanation'}"
    if status == "checker error":
        return f"crashed: the checker failed, not the student's code: {error}"
    return f"crashed: the checker returned no verdict ({type(result).__name__})"


def _missing(name: str, plan: Plan, errors: list) -> str:
    if name in plan.broken_defines:
        cell = plan.broken_defines[name]
        return f"crashed: {plan.broken[cell]} (cell {cell + 1})"
    if errors:
        cell, error = errors[-1]
        return f"crashed: {error} (cell {cell + 1})"
    return f"not done: the notebook defines no {name}"


def _run_check(task, obj, worker: Worker, ctx: Context, deadline: float) -> str:
    worker.endpoint.deadline = min(deadline, time.monotonic() + ctx.task_timeout)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        result = load_check(task)(obj)
    return verdict(result)


def _over_quota(folder: Path, limits: Limits) -> str:
    """Why the worker's folder is over its limits ('' if it is not; bubblewrap's is a tmpfs of a fixed size)."""
    size = files = 0
    for here, dirs, names in os.walk(folder):
        files += len(names) + len(dirs)
        for name in names:
            with contextlib.suppress(OSError):
                size += os.lstat(os.path.join(here, name)).st_blocks * 512
        if files > limits.folder_files or size > limits.folder_bytes:
            return (f"the notebook wrote more than {limits.folder_bytes // 2**20} MiB or {limits.folder_files} files "
                    "in its folder")
    return ""


def _empty(folder: Path) -> None:
    for entry in folder.iterdir():
        if entry.name != "submission.ipynb":
            with contextlib.suppress(OSError):
                (shutil.rmtree if entry.is_dir() and not entry.is_symlink() else os.unlink)(entry)


def grade_tasks(sources: list[str], exercise: Exercise, ctx: Context, folder: Path, deadline: float) -> dict[str, str]:
    """Each task's value. One worker runs the cells all tasks need; if that set-up fails (it loops, or the
    process ends), each task gets a worker that runs only the cells it needs itself."""
    names = [t.name for t in exercise.tasks]
    plan, values, worker = make_plan(sources, names), {}, Worker(ctx, folder)
    shared = True
    try:
        for task in exercise.tasks:
            twins = twin_calls(task, sources)
            if twins:
                values[task.name] = "wrong: " + TWIN_HINT.format(name=twins[0])
                continue
            try:
                if time.monotonic() >= deadline:
                    raise TimedOut("the submission's time is up")
                used = plan
                if shared and worker.report is None:
                    try:
                        worker.launch(plan, names, min(deadline, time.monotonic() + ctx.task_timeout))
                    except ChannelClosed:
                        shared = False
                if not shared:
                    used = make_plan(sources, [task.name])
                    worker.launch(used, [task.name], min(deadline, time.monotonic() + ctx.task_timeout))
                objects = worker.report["objects"]
                if task.name not in objects:
                    values[task.name] = _missing(task.name, used, worker.report["errors"])
                    continue
                values[task.name] = _run_check(task, objects[task.name], worker, ctx, deadline)
                over = _over_quota(folder, ctx.limits)
                if over:
                    values[task.name] = f"crashed: {over}"
                    worker.stop()
                    _empty(folder)
            except ChannelClosed as err:
                values[task.name] = "timed out" if isinstance(err, TimedOut) else f"crashed: {worker.why_closed(err)}"
                worker.stop()
    finally:
        worker.stop()
    return values


@contextlib.contextmanager
def time_limit(seconds: float):
    """Raise :class:`TimedOut` in this (the judge's main) thread after ``seconds``: the judge's own reading of a
    notebook (parsing, the plan, the static checks) is under the submission's time limit too."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def ring(signum, frame):
        raise TimedOut("the submission's time is up")

    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.01))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def grade_submission(path: Path, rel: str, ctx: Context) -> Result:
    """The outcome of one submission; all of it within ``ctx.timeout`` (and a few seconds to end a worker)."""
    start = time.monotonic()
    try:
        with time_limit(ctx.timeout + 5):
            return _grade(path, rel, ctx, start)
    except TimedOut:
        return Result(rel, problem="timed out", seconds=time.monotonic() - start)


def _grade(path: Path, rel: str, ctx: Context, start: float) -> Result:
    try:
        data = read_submission(path)
        nb = parse_notebook(data)
        exercise = ctx.table[identify(nb, ctx.table)]
    except Invalid as why:
        return Result(rel, problem=f"invalid: {why}", seconds=time.monotonic() - start)
    sources = code_sources(nb)
    folder = Path(tempfile.mkdtemp(prefix="submission-", dir=ctx.run_dir))
    try:
        (folder / "submission.ipynb").write_bytes(data)
        if ctx.isolation.uids:
            os.chown(folder, ctx.isolation.uids[ctx.slot], ctx.isolation.uids[ctx.slot])
        values = grade_tasks(sources, exercise, ctx, folder, start + ctx.timeout)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    flags = [f"{t.name}: copy of {where}" for t in exercise.tasks if (where := copied_from(sources, t.name))]
    flags += [f"{t.name}: the static check cannot follow it ({how}): look at it" for t in exercise.tasks
              if values.get(t.name) == "correct" and (how := reaches_course(sources, t.name))]
    return Result(rel, exercise.notebook, values, "; ".join(flags), time.monotonic() - start)
