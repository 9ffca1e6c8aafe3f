"""How long the notebooks take, what each training costs, and how long the README's ``pytest`` runs.

    python -m course_utils.authoring.nbtools benchmark [NOTEBOOK ...]   # default: every notebook
    python -m course_utils.authoring.nbtools benchmark --pytest         # also time `pytest` in a fresh clone

Seconds say as much about the machine as about the suite, so ``--pytest`` also measures a **floor** in the
same run: one Python start that imports ``torch``, ``matplotlib.pyplot`` and ``course_utils.core`` (the
second-fastest of eight, four started before the suite and four after it), and reports the suite in floors
beside the seconds, wall and CPU alike.

Each notebook (lesson, solution and student version alike) runs top to bottom in a fresh kernel of
this environment, pinned to one core (``taskset -c 0`` where it exists; ``seed_everything`` pins
PyTorch to one thread), on the CPU, with nothing stored from an earlier run (the course keeps no
training cache). Its client and kernel run in a child process whose resource usage is read when it
ends: wall seconds, CPU seconds of client and kernel together, and the peak memory of the larger.
Every training appends its record to a log (``COURSE_TRAINING_LOG``, see ``models/training.py``),
from which the second table is made. Prints Markdown: ``authoring/guide.py`` reads the first table
(its first three columns). A benchmark is not a test: nothing here asserts a time.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ONE_CORE = ["taskset", "-c", "0"] if shutil.which("taskset") else []
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
RUN_ONE = """
import sys
sys.modules["rfc3987_syntax"] = None  # jsonschema's optional IRI check: 0.8 s of CPU at import, never used by nbformat
import nbformat
from nbclient.exceptions import CellExecutionError
from course_utils.authoring.nbtools import execute
path = sys.argv[1]
try:
    execute(nbformat.read(path, as_version=4), __import__("pathlib").Path(path).parent)
except CellExecutionError as error:
    print(str(error).strip().splitlines()[-1][:200], file=sys.stderr)
    sys.exit(1)
"""


def run_measured(command: list[str], env: dict[str, str], cwd: Path = ROOT) -> dict:
    """Run ``command`` to its end; its wall and CPU seconds (with every process it waited for) and peak RSS."""
    start = time.perf_counter()
    process = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = ANSI.sub("", process.stdout.read()).strip().splitlines()
    _, status, usage = os.wait4(process.pid, 0)  # usage: the process and every process it waited for (the kernel)
    return {"wall": time.perf_counter() - start, "cpu": usage.ru_utime + usage.ru_stime, "peak_mib": usage.ru_maxrss / 1024,
            "ok": os.waitstatus_to_exitcode(status) == 0, "last_line": (lines or [""])[-1],
            "failed": [line for line in lines if line.startswith(("FAILED ", "ERROR "))]}


def run_notebook(path: Path, log: Path) -> dict:
    """Execute one notebook in a fresh kernel on one core; its measures and the training records it wrote."""
    path = path.resolve()
    rel = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
    env = {**os.environ, "COURSE_TRAINING_LOG": str(log), "COURSE_NOTEBOOK": rel, "OMP_NUM_THREADS": "1"}
    env.setdefault("COURSE_DEVICE", "cpu")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    log.unlink(missing_ok=True)
    result = run_measured(ONE_CORE + [sys.executable, "-c", RUN_ONE, str(path)], env)
    result["trainings"] = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    result["notebook"] = rel
    return result


def notebook_table(results: list[dict], cpu_floor: float | None = None) -> str:
    """The notebooks' Markdown table; with ``cpu_floor`` (CPU seconds of one floor) a last column in floors."""
    floors = cpu_floor is not None
    rows = ["| notebook | wall s | peak MiB | CPU s | trainings | training CPU s | ran |" + (" CPU floors |" if floors else ""),
            "| --- | ---: | ---: | ---: | ---: | ---: | --- |" + (" ---: |" if floors else "")]
    for r in results:
        training_cpu = sum(t["cpu_s"] for t in r["trainings"])
        ran = "ok" if r["ok"] else "error: " + r["last_line"].replace("|", "/")
        rows.append(f"| {r['notebook']} | {r['wall']:.1f} | {r['peak_mib']:.0f} | {r['cpu']:.1f} | "
                    f"{len(r['trainings'])} | {training_cpu:.1f} | {ran} |" + (f" {r['cpu'] / cpu_floor:.1f} |" if floors else ""))
    return "\n".join(rows)


def training_table(results: list[dict]) -> str:
    rows = ["| notebook | cell | training | model | epochs | steps | CPU s | wall s | loss | stopped | metric / target |",
            "| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |"]
    for r in results:
        where = Path(r["notebook"]).stem + (" (solution)" if "/solutions/" in r["notebook"] else "")
        for t in r["trainings"]:
            metric = "" if t["metric"] is None else f"{t['metric']:.4g}"
            if t["target"] is not None:
                metric += f" / {t['target']:.4g}"
            rows.append(f"| {where} | {t['cell'] if t['cell'] is not None else ''} | {t['name']} | {t['model']} | {t['epochs']} | "
                        f"{t['steps']} | {t['cpu_s']:.2f} | {t['wall_s']:.2f} | {t['loss']:.4f} | {t['stop']} | {metric} |")
    return "\n".join(rows)


def attention_ratio() -> str:
    """The course's attention over PyTorch's fused kernel at T = 1024 (``studies/attention_speed.py``)."""
    from ..studies.attention_speed import fused_ratio

    return f"{fused_ratio(1024).ratio:.2f}x without a mask, {fused_ratio(1024, masked=True).ratio:.2f}x with a causal mask"


FLOOR_CODE = "import torch, matplotlib.pyplot, course_utils.core"
FLOOR_RUNS = 4


def second_fastest(values: list[float]) -> float:
    """The second-smallest of ``values`` (at least two): robust to one lucky run, not spoiled by one slow one."""
    if len(values) < 2:
        raise ValueError(f"second_fastest needs at least two values, got {len(values)}")
    return sorted(values)[1]


def floor(runs: list[dict]) -> dict:
    """The floor from measured runs of ``FLOOR_CODE`` (``run_measured``'s dicts): second-fastest wall and CPU."""
    return {"wall": second_fastest([r["wall"] for r in runs]), "cpu": second_fastest([r["cpu"] for r in runs])}


def floor_runs(env: dict[str, str], cwd: Path = ROOT, runs: int = FLOOR_RUNS) -> list[dict]:
    """Start Python ``runs`` times importing torch, matplotlib.pyplot and course_utils.core; each run measured."""
    return [run_measured([sys.executable, "-c", FLOOR_CODE], env, cwd) for _ in range(runs)]


def measure_floor(env: dict[str, str], cwd: Path = ROOT, runs: int = FLOOR_RUNS) -> dict:
    """``floor`` of ``runs`` Python starts (``floor_runs``)."""
    return floor(floor_runs(env, cwd, runs))


def in_floors(measured: dict, the_floor: dict, runs: str = f"{FLOOR_RUNS}") -> str:
    """One line: the suite's wall and CPU seconds, each also in floors of the same kind (``runs``: which floors)."""
    return (f"{measured['wall']:.0f} s wall = {measured['wall'] / the_floor['wall']:.0f} floors, "
            f"{measured['cpu']:.0f} s CPU (all processes) = {measured['cpu'] / the_floor['cpu']:.0f} floors "
            f"(floor: {the_floor['wall']:.2f} s wall, {the_floor['cpu']:.2f} s CPU, second-fastest of {runs})")


def time_pytest(root: Path = ROOT) -> str:
    """The README's ``pytest`` in a fresh clone of the committed tree (nothing stored), in seconds and floors."""
    with tempfile.TemporaryDirectory() as tmp:
        clone = Path(tmp) / "clone"
        subprocess.run(["git", "clone", "--quiet", str(root), str(clone)], check=True)
        env = {**os.environ, "PYTHONPATH": str(clone)}
        before = floor_runs(env, clone)
        r = run_measured([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfE"], env, cwd=clone)
        after = floor_runs(env, clone)
    # Floors are taken before and after the suite: a machine that slows down or speeds up while the suite runs
    # (a shared host) moves the floor by 10-25% between runs, the suite less.
    runs = f"{2 * FLOOR_RUNS}, {FLOOR_RUNS} before the suite and {FLOOR_RUNS} after"
    line = f"README's `pytest` in a fresh clone: {in_floors(r, floor(before + after), runs)}: {r['last_line']}"
    return "\n".join([line, *r["failed"]])


def benchmark(paths: list[Path], with_pytest: bool = False) -> str:
    """Run the notebooks one after the other; the Markdown report (floor, notebooks, trainings, attention, pytest)."""
    the_floor = measure_floor({**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])})
    with tempfile.TemporaryDirectory() as tmp:
        results = [run_notebook(path, Path(tmp) / "trainings.jsonl") for path in paths]
    parts = [f"Floor (one Python start importing torch, matplotlib.pyplot and course_utils.core, second-fastest of "
             f"{FLOOR_RUNS}): {the_floor['wall']:.2f} s wall, {the_floor['cpu']:.2f} s CPU", "",
             notebook_table(results, the_floor["cpu"]), "", training_table(results), "",
             f"Course attention vs PyTorch's fused kernel at T = 1024: {attention_ratio()}"]
    if with_pytest:
        parts.append(time_pytest())
    return "\n".join(parts)
