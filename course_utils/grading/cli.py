"""Grade a class: a folder of submitted notebooks in, a grade table and a class report out.

    course-grade SUBMISSIONS_DIR --out grades.csv [--jobs N] [--timeout S] [--task-timeout S]
                 [--memory GIB] [--isolation auto|bubblewrap|user|none [--i-understand]]

Every ``.ipynb`` under the folder (any file names, sub-folders per student) is recognised as one
of the course's notebooks with tasks (``grade_exercises``: the table is read off the notebooks'
checker cells). Each is graded by a judge process (``grade_judge``) in which no student code
runs: the student's functions run in a sandboxed worker (``grade_sandbox``, ``grade_worker``)
that executes only the cells the tasks need (``grade_plan``) and answers the checkers' calls
with plain data; the hidden inputs and the verdicts stay in the judge. A submission costs only
its own row: a notebook that loops, ends its process, floods its output, eats memory or sends
garbage becomes a ``timed out`` or ``crashed: ...`` value, and the class goes on.

Output: ``grades.csv`` (one row per submission, sorted), ``grades_report.md`` and
``grades_report.html`` beside it (``grade_report``). INSTRUCTORS.md ("Grade a class") says what
the grader guarantees with and without the sandbox.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import multiprocessing
import os
import resource
import shutil
import signal
import stat
import sys
import tempfile
import time
from contextlib import suppress
from multiprocessing.connection import wait
from pathlib import Path

from . import cgroup
from .exercises import Exercise, exercises, load_check
from .judge import Context, grade_submission
from .report import Result, clean, csv_cell
from .sandbox import (
    Limits,
    Refused,
    become_subreaper,
    copy_package,
    detect,
    end_tree,
    kill_user,
)

FIXED_COLUMNS = ["submission", "exercise", "correct", "tasks"]
FLAGS = "flags"
GRACE = 30.0  # seconds past a submission's own time limit before its judge itself is stopped


def find_submissions(folder: Path) -> list[tuple[Path, str, str]]:
    """(path, relative name, "" or why it is refused) of every ``.ipynb`` under ``folder``, never
    following a symbolic link (a linked file is listed, refused; a linked folder is not entered)."""
    found = []
    for here, dirs, files in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d != ".ipynb_checkpoints")
        for name in files:
            if name.endswith(".ipynb"):
                path = Path(here) / name
                mode = os.lstat(path).st_mode
                why = ("a symbolic link, not a notebook: submit the notebook file itself" if stat.S_ISLNK(mode)
                       else "" if stat.S_ISREG(mode) else "not a regular file")
                found.append((path, path.relative_to(folder).as_posix(), why))
    return sorted(found, key=lambda item: item[1])


def _judge(conn, ctx: Context) -> None:
    """A judge process: grade the submissions it is sent, one at a time, until it gets None."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the main process handles Ctrl-C
    become_subreaper()
    import torch

    torch.set_num_threads(1)  # one core per judge: --jobs judges share the machine
    if ctx.limits.memory_bytes:  # a worker's callback into a checker's layer cannot take the machine's memory
        judge_bytes = ctx.limits.memory_bytes + 4 * 2**30
        resource.setrlimit(resource.RLIMIT_AS, (judge_bytes, judge_bytes))
    while (job := conn.recv()) is not None:
        path, rel = job
        try:
            row = grade_submission(Path(path), rel, ctx)
        except Exception as err:  # noqa: BLE001 - the grader's own failure: this row only
            row = Result(rel, problem=f"crashed: the grader failed on this file ({type(err).__name__}: {err})")
        conn.send(row)


class Judges:
    """``jobs`` judge processes, forked after the checkers were imported (before any student code ran)."""

    def __init__(self, ctx: Context, jobs: int) -> None:
        self.ctx, self.mp = ctx, multiprocessing.get_context("fork")
        self.slots = [self._start(slot) for slot in range(jobs)]

    def _start(self, slot: int) -> dict:
        mine, theirs = self.mp.Pipe()
        ctx = dataclasses.replace(self.ctx, slot=slot)
        proc = self.mp.Process(target=_judge, args=(theirs, ctx), daemon=True)
        proc.start()
        theirs.close()
        return {"proc": proc, "conn": mine, "job": None, "since": 0.0, "slot": slot}

    def _stop(self, slot: dict) -> None:
        """Stop a judge that overran, with its worker and everything that started (its slot's user too)."""
        end_tree(slot["proc"].pid, self.ctx.isolation, slot["slot"])
        slot["proc"].join(5)

    def grade_all(self, jobs: list[tuple[Path, str]], done) -> None:
        queue = list(jobs)
        while queue or any(s["job"] for s in self.slots):
            for slot in self.slots:
                if slot["job"] is None and queue:
                    slot["job"], slot["since"] = queue.pop(0), time.monotonic()
                    slot["conn"].send((str(slot["job"][0]), slot["job"][1]))
            busy = [s for s in self.slots if s["job"]]
            for conn in wait([s["conn"] for s in busy], timeout=1.0):
                slot = next(s for s in busy if s["conn"] is conn)
                try:
                    row = conn.recv()
                except (EOFError, OSError):
                    row = Result(slot["job"][1], problem="crashed: the grader's judge process ended")
                    self._replace(slot)
                slot["job"] = None
                done(row)
            for slot in busy:
                if slot["job"] and time.monotonic() - slot["since"] > self.ctx.timeout + GRACE:
                    rel = slot["job"][1]
                    self._stop(slot)
                    self._replace(slot)
                    slot["job"] = None
                    done(Result(rel, problem="timed out"))

    def _replace(self, slot: dict) -> None:
        with suppress(OSError):
            slot["conn"].close()
        slot.update(self._start(slot["slot"]))

    def shut_down(self) -> None:
        for slot in self.slots:
            with suppress(OSError, ValueError):
                slot["conn"].send(None)
        for slot in self.slots:
            slot["proc"].join(10)
            if slot["proc"].is_alive():
                self._stop(slot)
            if self.ctx.isolation.uids:
                kill_user(self.ctx.isolation.uids[slot["slot"]])


def grade_folder(folder: Path, *, jobs: int = 1, timeout: float = 120, task_timeout: float = 30,
                 memory_gib: float = 4, isolation: str = "auto", accept_less: bool = False, progress=None,
                 header=None) -> list[Result]:
    """Grade every notebook under ``folder``; the results (one per submission), in any order. Raises
    ``sandbox.Refused`` (before any student code runs) when the isolation asked for cannot be had."""
    sys.dont_write_bytecode = True  # grading writes nothing into the course checkout (not even __pycache__)
    folder = folder.resolve()
    items = find_submissions(folder)
    progress = progress or (lambda done, total, result: None)
    table = exercises()
    for spec in table.values():  # imported now, before any student code runs anywhere
        for task in spec.tasks:
            load_check(task)
    run_dir = Path(tempfile.mkdtemp(prefix="course-grade-"))
    results: list[Result] = []
    iso, groups = None, ()

    def done(result: Result) -> None:
        results.append(result)
        progress(len(results), len(items), result)

    try:
        run_dir.chmod(0o711)
        package = copy_package(run_dir)
        iso = detect(max(1, jobs), run_dir, package, isolation, accept_less)
        limits = Limits(memory_bytes=int(memory_gib * 2**30), cpu_seconds=int(timeout) + 30)
        groups = tuple(cgroup.create(f"course-grade-{os.getpid()}-{slot}", limits.memory_bytes + 3 * limits.folder_bytes)
                       for slot in range(max(1, jobs)))
        if header:
            header(len(items), iso, all(groups))
        for _path, rel, why in items:
            if why:
                done(Result(rel, problem=f"invalid: {why}"))
        ctx = Context(table, iso, 0, run_dir, package, timeout, task_timeout, limits, groups)
        become_subreaper()
        judges = Judges(ctx, max(1, jobs))
        try:
            judges.grade_all([(path, rel) for path, rel, why in items if not why], done)
        finally:
            judges.shut_down()
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
        for group in groups:
            cgroup.remove(group)
    for result in results:
        result.isolation = iso.label() if iso else ""
    return results


def task_columns(results: list[Result], table: dict[str, Exercise]) -> list[str]:
    present = {r.exercise for r in results if r.exercise} or set(table)
    columns = [t.name for ex, spec in table.items() if ex in present for t in spec.tasks]
    return list(dict.fromkeys(columns))


def table_rows(results: list[Result], table: dict[str, Exercise] | None = None) -> list[dict[str, str]]:
    """The rows of grades.csv, sorted by submission path; every value one line of printable text (``clean``)."""
    table = table if table is not None else exercises()
    columns = task_columns(results, table)
    rows = []
    for r in sorted(results, key=lambda r: csv_cell(r.submission)):  # the order grades.csv shows
        tasks = len(table[r.exercise].tasks) if r.exercise in table else 0
        row = {"submission": r.submission, "exercise": r.exercise,
               "correct": str(sum(v == "correct" for v in r.values.values())), "tasks": str(tasks)}
        row.update({column: r.problem or r.values.get(column, "") for column in columns})
        row[FLAGS] = r.flags
        rows.append({key: clean(value) for key, value in row.items()})
    return rows


def write_csv(rows: list[dict[str, str]], path: Path) -> None:
    """Write the table in one step (a temporary file in the same folder, renamed over ``path``; removed if
    anything fails). Every cell is cleaned and kept from reading as a formula (``report.csv_cell``)."""
    fields = FIXED_COLUMNS + [c for c in (rows[0] if rows else {}) if c not in FIXED_COLUMNS]
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", newline="", encoding="utf-8", errors="backslashreplace") as f:
            writer = csv.DictWriter(f, fieldnames=[csv_cell(c) for c in fields], lineterminator="\n")
            writer.writeheader()
            writer.writerows({csv_cell(k): csv_cell(row.get(k, "")) for k in fields} for row in rows)
        os.chmod(temp, 0o644)
        os.replace(temp, path)
    finally:
        with suppress(FileNotFoundError):
            os.unlink(temp)


def _show_progress(done: int, total: int, result: Result) -> None:
    values = result.values
    verdict = result.problem or f"{sum(v == 'correct' for v in values.values())}/{len(values)} correct"
    print(clean(f"[{done}/{total}] {result.submission}: {result.exercise or '-'} {verdict} "
                f"({result.seconds:.0f} s)", 400), file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    from .report import write_reports

    parser = argparse.ArgumentParser(prog="course-grade", description=__doc__.split("\n")[0])
    parser.add_argument("submissions", type=Path, help="folder with the submitted notebooks (searched recursively)")
    parser.add_argument("--out", type=Path, default=Path("grades.csv"), help="the grade table (default grades.csv)")
    parser.add_argument("--jobs", type=int, default=1, help="submissions graded at a time (default 1)")
    parser.add_argument("--timeout", type=float, default=120, help="seconds per submission, checks included (default 120)")
    parser.add_argument("--task-timeout", type=float, default=30, help="seconds per task's check, within that (default 30)")
    parser.add_argument("--memory", type=float, default=4, help="GiB of address space per worker (default 4; 0: none)")
    parser.add_argument("--isolation", choices=["auto", "bubblewrap", "user", "none"], default="auto",
                        help="bubblewrap (auto, the default) or stop; a weaker one only by name (see INSTRUCTORS.md)")
    parser.add_argument("--i-understand", action="store_true",
                        help="grade with --isolation user or none, weaker than bubblewrap (INSTRUCTORS.md says how)")
    args = parser.parse_args(argv)
    if not args.submissions.is_dir():
        parser.error(f"{args.submissions} is not a folder")
    start = time.monotonic()

    def header(total: int, iso, memory_groups: bool) -> None:
        if iso.kind != "bubblewrap":
            print(f"WARNING: student code runs WITHOUT the sandbox (isolation: {iso.kind}): "
                  "INSTRUCTORS.md (\"Grade a class\") says what a submission can then do.", file=sys.stderr)
        print(clean(f"grading {total} notebooks under {args.submissions}, {args.jobs} at a time; isolation: "
                    f"{iso.label()}; memory: {'a cgroup per job' if memory_groups else 'address-space limit only'}"),
              file=sys.stderr, flush=True)

    try:
        results = grade_folder(args.submissions, jobs=args.jobs, timeout=args.timeout, task_timeout=args.task_timeout,
                               memory_gib=args.memory, isolation=args.isolation, accept_less=args.i_understand,
                               progress=_show_progress, header=header)
    except Refused as why:
        print(f"course-grade: stopped before grading: {why}", file=sys.stderr)
        return 2
    rows = table_rows(results)
    write_csv(rows, args.out)
    isolation = results[0].isolation if results else ""
    reports = write_reports(rows, args.out, isolation)
    print(clean(f"graded {len(rows)} notebooks in {time.monotonic() - start:.0f} s: {args.out}, "
                + ", ".join(str(p) for p in reports)), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
