"""Grade a class: a folder of exercise notebooks in, a grade table and a class report out.

    course-grade SUBMISSIONS_DIR --out grades.csv [--timeout SECONDS] [--jobs N] [--memory GIB]

Every ``.ipynb`` under the folder (any file names, sub-folders per student) is recognised as
one of the exercises 05-08 by its notebook metadata, or by the functions it defines when the
metadata was stripped. Each runs in a fresh kernel of this environment, in a temporary folder
(the submission itself is never changed; files it writes land in the temporary folder), with a
time limit for the whole notebook and a memory limit for its kernel. Then, in the same kernel,
every ``course_utils`` module is dropped and the exercise's checkers are loaded again from the
course's files, and run on the functions and classes the notebook defined. A grade comes from
those checkers, never from text the notebook printed; a notebook that patched the checkers gets
the grade of its own functions.

THIS RUNS STUDENT CODE with your permissions. For submissions you do not trust, run it in a
container (INSTRUCTORS.md shows the command).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager, suppress
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
KERNEL_CODE = Path(__file__).with_name("grade_kernel.py")
CHECKERS = "course_utils.helpers.checkers"
FIXED_COLUMNS = ["submission", "exercise", "correct", "tasks"]
MAX_OUTPUTS_PER_CELL = 50  # a notebook that prints forever must not fill the grader's memory
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
CELL_FILE = re.compile(r"\(\d+\.py, line (\d+)\)")


@dataclass(frozen=True)
class Exercise:
    tasks: tuple[tuple[str, str], ...]  # (the name the notebook defines, its check function in CHECKERS)


# The exercises and their tasks, in course order (tests/test_grade.py checks this against the notebooks).
EXERCISES = {
    "05_causal_mask": Exercise((
        ("causal_mask", "check_causal_mask"),
        ("masked_attention", "check_masked_attention"),
        ("leaks_future", "check_leaks_future"))),
    "06_cross_attention": Exercise((
        ("cross_attention_shapes", "check_cross_attention_shapes"),
        ("CrossAttention", "check_cross_attention"),
        ("strongest_source", "check_strongest_source"))),
    "07_head_patterns": Exercise((
        ("head_entropy", "check_head_entropy"),
        ("head_mean_distance", "check_head_mean_distance"),
        ("classify_heads", "check_classify_heads"))),
    "08_attention_vs_no_attention": Exercise((
        ("token_accuracy", "check_token_accuracy"),
        ("exact_match", "check_exact_match"),
        ("accuracy_by_length", "check_accuracy_by_length"))),
}
DEFINITION = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)", re.MULTILINE)


class Invalid(Exception):
    """The file is not a notebook of one of this course's exercises."""


def read_notebook(path: Path) -> nbformat.NotebookNode:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise Invalid(f"cannot read the file ({type(err).__name__})") from None
    try:
        nb = nbformat.reads(text, as_version=4)
    except Exception as err:  # noqa: BLE001 - nbformat raises several kinds for bad input
        kind = "invalid JSON" if isinstance(err, json.JSONDecodeError) or "JSON" in type(err).__name__ else "not a notebook"
        raise Invalid(f"{kind} ({one_line(str(err), 120)})") from None
    if not isinstance(nb.get("cells"), list):
        raise Invalid("not a notebook (no cells)")
    return nb


def identify(nb: nbformat.NotebookNode) -> str:
    """The exercise a notebook is: from its metadata, else from the names its code defines."""
    course = nb.get("metadata", {}).get("course", {})
    named = ""
    if isinstance(course, dict):
        for key in ("generated_from", "file"):
            stem = Path(str(course.get(key) or "")).stem
            if stem in EXERCISES:
                return stem
            named = named or stem
    code = "\n".join(c.get("source", "") for c in nb.cells if c.get("cell_type") == "code")
    defined = set(DEFINITION.findall(code))
    hits = {ex: sum(name in defined for name, _ in spec.tasks) for ex, spec in EXERCISES.items()}
    best = max(hits, key=hits.get)
    if hits[best] >= 2:
        return best
    if named:
        raise Invalid(f"notebook {named} is not one of the exercises ({', '.join(EXERCISES)})")
    raise Invalid("not an exercise of this course (no course metadata, none of the exercises' functions)")


def one_line(text: str, limit: int = 300) -> str:
    text = " ".join(ANSI.sub("", str(text)).split())
    text = CELL_FILE.sub(r"(line \1)", text)  # IPython's name for a cell's code says nothing to a reader
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _kernel_manager(memory_bytes: int):
    """A kernel manager whose kernel (this Python) limits its own address space first."""
    from ipykernel.kernelspec import RESOURCES, get_kernel_dict
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    launcher = ("import resource, sys; limit = int(sys.argv.pop(1)); "
                "resource.setrlimit(resource.RLIMIT_AS, (limit, limit)) if limit > 0 else None; "
                "from ipykernel import kernelapp; kernelapp.launch_new_instance()")

    class Limited(KernelSpecManager):
        def get_kernel_spec(self, kernel_name):
            spec = get_kernel_dict()
            spec["argv"] = [sys.executable, "-c", launcher, str(memory_bytes), "-f", "{connection_file}"]
            return self.kernel_spec_class(resource_dir=RESOURCES, **spec)

    return KernelManager(kernel_name="python3", kernel_spec_manager=Limited())


def _client_class():
    from nbclient import NotebookClient

    class BoundedClient(NotebookClient):
        def output(self, outs, msg, display_id, cell_index):
            if len(outs) >= MAX_OUTPUTS_PER_CELL and msg["msg_type"] != "error":
                return None
            return super().output(outs, msg, display_id, cell_index)

    return BoundedClient


def grading_cell(exercise: str, nonce: str, task_limit: int) -> nbformat.NotebookNode:
    spec = EXERCISES[exercise]
    tasks = [(name, name, check) for name, check in spec.tasks]
    source = (
        "import builtins as _course_grade_builtins\n"
        "_course_grade = {'__name__': 'course_grade_kernel', '__builtins__': _course_grade_builtins}\n"
        f"_course_grade_builtins.exec({KERNEL_CODE.read_text(encoding='utf-8')!r}, _course_grade)\n"
        "_course_grade['report'](" + repr(nonce) + ", _course_grade['grade'](_course_grade_builtins.globals(), "
        f"{str(ROOT)!r}, {CHECKERS!r}, {tasks!r}, {task_limit}))\n"
    )
    return nbformat.v4.new_code_cell(source)


@contextmanager
def _watchdog(client, seconds: float, outcome: dict):
    """Interrupt the kernel after ``seconds`` (the cell gets KeyboardInterrupt); kill it 10 s later if
    the cell still runs. Plain signals, so that the timer thread touches no kernel-client state."""
    pid = client.km.provisioner.process.pid

    def interrupt():
        outcome["timed_out"] = True
        with suppress(OSError):
            os.kill(pid, signal.SIGINT)
        killer.start()

    def kill():
        with suppress(OSError):
            os.kill(pid, signal.SIGKILL)

    killer = threading.Timer(10, kill)
    timer = threading.Timer(seconds, interrupt)
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        killer.cancel()


def run_notebook(nb, exercise: str, workdir: Path, timeout: float, memory_bytes: int) -> dict:
    """Execute ``nb`` then the grading cell; {"tasks": ..., "error": first error, "timed_out": bool}."""
    from nbclient.exceptions import DeadKernelError

    for cell in nb.cells:
        if cell.get("cell_type") == "code":
            cell.outputs, cell.execution_count = [], None
    nonce = f"COURSE-GRADE-{secrets.token_hex(16)}:"
    task_limit = int(max(5, min(timeout, 30)))
    nb.cells.append(grading_cell(exercise, nonce, task_limit))
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    client = _client_class()(nb, km=_kernel_manager(memory_bytes), allow_errors=True, record_timing=False,
                             resources={"metadata": {"path": str(workdir)}}, shutdown_kernel="immediate", timeout=None)
    outcome = {"error": "", "timed_out": False, "died": ""}
    try:
        # cleanup_kc=True: shut the kernel down afterwards (a client given a kernel manager would
        # leave it running, and a submission's leftover threads with it, until the grader exits).
        with client.setup_kernel(cleanup_kc=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
            deadline = time.monotonic() + timeout  # from the kernel's start
            for index, cell in enumerate(nb.cells[:-1]):
                if cell.get("cell_type") != "code":
                    continue
                remaining = deadline - time.monotonic()
                if remaining < 1:
                    outcome["timed_out"] = True
                    break
                with _watchdog(client, remaining, outcome):
                    client.execute_cell(cell, index)
                if outcome["timed_out"]:
                    break
                errors = [o for o in cell.outputs if o.get("output_type") == "error"]
                if errors and not outcome["error"]:
                    outcome["error"] = f"{errors[0].ename}: {errors[0].evalue} (cell {index + 1})"
            with _watchdog(client, 60 + task_limit * len(EXERCISES[exercise].tasks), outcome):
                client.execute_cell(nb.cells[-1], len(nb.cells) - 1)
    except DeadKernelError:
        outcome["died"] = "the kernel died (memory limit reached, or the notebook ended its own process)"
    except Exception as err:  # noqa: BLE001 - a kernel that fails to start is this submission's problem only
        outcome["died"] = f"{type(err).__name__}: {err}"
    for out in nb.cells[-1].get("outputs", []):
        text = out.get("text") or out.get("data", {}).get("text/plain", "")
        for line in str(text).splitlines():
            if line.startswith(nonce):
                outcome.update(json.loads(line[len(nonce):]))
                return outcome
    return outcome


def task_values(outcome: dict, exercise: str) -> dict[str, str]:
    """One CSV value per task from what happened in the kernel."""
    results = outcome.get("tasks") or {}
    values = {}
    for name, _ in EXERCISES[exercise].tasks:
        status, detail = results.get(name, ["", ""])
        if status == "correct":
            values[name] = "correct"
        elif status == "wrong":
            values[name] = f"wrong: {detail}"
        elif status == "not done":
            values[name] = "not done"
        elif status == "timed out" or (status in ("", "missing") and outcome.get("timed_out")):
            values[name] = "timed out"
        elif status == "crashed":
            values[name] = f"crashed: {detail}"
        elif outcome.get("died"):
            values[name] = f"crashed: {outcome['died']}"
        elif outcome.get("error") and status in ("", "missing"):
            values[name] = f"crashed: {outcome['error']}"
        elif status == "missing":
            values[name] = f"not done: the notebook defines no {name}"
        else:
            values[name] = f"crashed: the grader got no verdict ({outcome.get('error') or 'no output'})"
    return values


def grade_one(path: str, folder: str, timeout: float, memory_gib: float) -> dict:
    """Grade one submission (in a worker process): its row of the table, without the totals."""
    start = time.monotonic()
    rel = Path(path).relative_to(folder).as_posix()
    try:
        nb = read_notebook(Path(path))
        exercise = identify(nb)
    except Invalid as reason:
        return {"submission": rel, "exercise": "", "values": {}, "invalid": f"invalid: {reason}",
                "seconds": time.monotonic() - start}
    temp = Path(tempfile.mkdtemp(prefix="course-grade-"))
    try:
        workdir = temp / "work"
        workdir.mkdir()
        shutil.copyfile(path, workdir / "submission.ipynb")
        outcome = run_notebook(nb, exercise, workdir, timeout, int(memory_gib * 2**30))
        values = {k: one_line(v.replace(str(workdir), ".").replace(str(temp), ".")) for k, v in
                  task_values(outcome, exercise).items()}
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    return {"submission": rel, "exercise": exercise, "values": values, "seconds": time.monotonic() - start}


def find_submissions(folder: Path) -> list[Path]:
    return sorted((p for p in folder.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts and p.is_file()),
                  key=lambda p: p.relative_to(folder).as_posix())


def columns_for(results: list[dict]) -> list[str]:
    present = {r["exercise"] for r in results if r["exercise"]} or set(EXERCISES)
    return [name for ex, spec in EXERCISES.items() if ex in present for name, _ in spec.tasks]


def table(results: list[dict]) -> list[dict[str, str]]:
    """The rows of grades.csv, sorted by submission path."""
    task_columns = columns_for(results)
    rows = []
    for r in sorted(results, key=lambda r: r["submission"]):
        row = {"submission": r["submission"], "exercise": r["exercise"]}
        values = r["values"]
        row["correct"] = str(sum(v == "correct" for v in values.values()))
        row["tasks"] = str(len(values))
        for column in task_columns:
            row[column] = r["invalid"] if "invalid" in r else values.get(column, "")
        rows.append(row)
    return rows


def write_csv(rows: list[dict[str, str]], path: Path) -> None:
    fields = FIXED_COLUMNS + [c for c in (rows[0] if rows else {}) if c not in FIXED_COLUMNS]
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def grade_folder(folder: Path, timeout: float = 120, jobs: int = 1, memory_gib: float = 4,
                 progress=None) -> list[dict]:
    """Grade every notebook under ``folder`` with ``jobs`` kernels at a time; the results, in any order."""
    paths = find_submissions(folder)
    progress = progress or (lambda done, total, result: None)
    results = []
    args = [(str(p), str(folder), timeout, memory_gib) for p in paths]
    with ProcessPoolExecutor(max_workers=max(1, jobs), mp_context=get_context("spawn")) as pool:
        futures = [pool.submit(grade_one, *a) for a in args]
        for future in as_completed(futures):
            results.append(future.result())
            progress(len(results), len(paths), results[-1])
    return results


def _show_progress(done: int, total: int, result: dict) -> None:
    values = result["values"]
    verdict = result.get("invalid") or f"{sum(v == 'correct' for v in values.values())}/{len(values)} correct"
    print(f"[{done}/{total}] {result['submission']}: {result['exercise'] or '-'} {verdict} "
          f"({result['seconds']:.0f} s)", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    from .grade_report import write_reports

    parser = argparse.ArgumentParser(prog="course-grade", description=__doc__.split("\n")[0])
    parser.add_argument("submissions", type=Path, help="folder with the submitted notebooks (searched recursively)")
    parser.add_argument("--out", type=Path, default=Path("grades.csv"), help="the grade table (default grades.csv)")
    parser.add_argument("--timeout", type=float, default=120, help="seconds per notebook (default 120)")
    parser.add_argument("--jobs", type=int, default=1, help="kernels run at a time (default 1)")
    parser.add_argument("--memory", type=float, default=4, help="GiB of address space per kernel (default 4; 0: none)")
    args = parser.parse_args(argv)
    if not args.submissions.is_dir():
        parser.error(f"{args.submissions} is not a folder")
    folder = args.submissions.resolve()
    start = time.monotonic()
    total = len(find_submissions(folder))
    print(f"grading {total} notebooks under {args.submissions} with {args.jobs} kernel(s) at a time",
          file=sys.stderr, flush=True)
    rows = table(grade_folder(folder, args.timeout, args.jobs, args.memory, _show_progress))
    write_csv(rows, args.out)
    reports = write_reports(rows, args.out)
    print(f"graded {total} notebooks in {time.monotonic() - start:.0f} s: {args.out}, "
          + ", ".join(str(p) for p in reports), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
