"""Notebook tooling for maintainers: refresh stored outputs, make student versions, benchmark.

Run from the repository root:

    python -m course_utils.authoring.nbtools execute [NOTEBOOK ...]   # re-run in place (default: all, then students)
    python -m course_utils.authoring.nbtools execute --jobs 2         # the same, two notebooks at a time
    python -m course_utils.authoring.nbtools students [SOLUTION ...]  # only regenerate + run student versions
    python -m course_utils.authoring.nbtools benchmark [NOTEBOOK ...] # time, memory, trainings (authoring/benchmark.py)
    python -m course_utils.authoring.nbtools benchmark --pytest       # and the README's pytest in a fresh clone

Exercise notebooks have one source of truth, ``notebooks/solutions/NN_name.ipynb``; their
student versions in ``notebooks/`` are generated from it (``student_versions``) and stored
after a run that must raise no error.
"""

from __future__ import annotations

import argparse
import copy
import time
from pathlib import Path

import nbformat

from . import student_versions
from .student_versions import BEGIN, END, STUB, student_source  # noqa: F401 (the names tests and tools use)

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
SOLUTIONS = NOTEBOOKS / "solutions"
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
CELL_TIMEOUT = 600
# Where the course lives on GitHub: the Binder and Colab links and the Colab set-up cell use it.
# A fork changes these two lines and runs `python -m course_utils.authoring.nbtools execute`.
REPOSITORY = "attention-course/attention-mechanisms"
BRANCH = "main"
BADGES_TAG, COLAB_TAG = "course-badges", "colab-setup"
COLAB_SETUP = f'''# @title Colab set-up (on Colab only: fetches the course's package and data; elsewhere it does nothing)
import sys

if "google.colab" in sys.modules:
    import os
    import subprocess

    if not os.path.isdir("/content/attention-course"):
        subprocess.run(["git", "clone", "--quiet", "--depth", "1", "--branch", "{BRANCH}",
                        "https://github.com/{REPOSITORY}", "/content/attention-course"], check=True)
    # --no-deps keeps Colab's own PyTorch, NumPy and plotting libraries as they are.
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "-e", "/content/attention-course"], check=True)
    sys.path.insert(0, "/content/attention-course")'''


def all_notebooks() -> list[Path]:
    """Every committed notebook: lessons, student versions and solutions."""
    return sorted(p for p in NOTEBOOKS.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def launch_links(path: Path) -> tuple[str, str]:
    """The Binder and Colab URLs that open the notebook at ``path`` (inside the repository)."""
    rel = path.resolve().relative_to(ROOT).as_posix()
    binder = f"https://mybinder.org/v2/gh/{REPOSITORY}/{BRANCH}?urlpath=lab/tree/{rel}"
    colab = f"https://colab.research.google.com/github/{REPOSITORY}/blob/{BRANCH}/{rel}"
    return binder, colab


def badges(path: Path) -> str:
    """The two launch links every notebook starts with: open this notebook in Binder, or in Colab.
    Plain text links, not the services' badge images: offline (a laptop on a train, a locked-down
    lab) a remote image is a broken-image icon, while a text link still reads."""
    binder, colab = launch_links(path)
    return f"Open this notebook in [Binder]({binder}) · in [Colab]({colab}) (a copy that runs in your browser)"


def add_header(nb: nbformat.NotebookNode, path: Path) -> nbformat.NotebookNode:
    """Make the first cell the badges for ``path`` and the first code cell the Colab set-up cell."""
    first = nb.cells[0] if nb.cells else None
    if first is not None and BADGES_TAG in first.metadata.get("tags", []):
        first.source = badges(path)
    else:
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(badges(path), metadata={"tags": [BADGES_TAG]}))
    code = next((c for c in nb.cells if c.cell_type == "code"), None)
    if code is not None and COLAB_TAG in code.metadata.get("tags", []):
        code.source = COLAB_SETUP
    else:
        code = nbformat.v4.new_code_cell(COLAB_SETUP, metadata={"tags": [COLAB_TAG]})
        nb.cells.insert(_first_code_index(nb), code)
    # Collapsed: JupyterLab hides the source, Colab shows the cell as a titled form.
    code.metadata["jupyter"] = {"source_hidden": True}
    code.metadata["cellView"] = "form"
    return nb


def _first_code_index(nb: nbformat.NotebookNode) -> int:
    return next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"), len(nb.cells))


def is_student_version(nb: nbformat.NotebookNode) -> bool:
    return nb.metadata.get("course", {}).get("role") == "student"


def make_student_notebook(solution: nbformat.NotebookNode, student_path: Path | None = None) -> nbformat.NotebookNode:
    """The student version of a solution notebook (``student_versions.student_version``) and, given
    its path, the header whose badges open the student version itself. The student version has the
    solution's cells in the same order (a solution without the header gets it first, as
    ``execute`` would give it)."""
    if student_path is None:
        return student_versions.student_version(solution)
    solution = add_header(copy.deepcopy(solution), SOLUTIONS / student_path.name)
    return add_header(student_versions.student_version(solution), student_path)


def this_python_kernel():
    """A kernel manager that starts ipykernel with this Python (the current environment), whatever kernels are installed."""
    from ipykernel.kernelspec import RESOURCES, get_kernel_dict
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    class CurrentEnv(KernelSpecManager):
        def get_kernel_spec(self, kernel_name):
            return self.kernel_spec_class(resource_dir=RESOURCES, **get_kernel_dict())

    return KernelManager(kernel_name="python3", kernel_spec_manager=CurrentEnv())


def execute(nb: nbformat.NotebookNode, cwd: Path, allow_errors: bool = False,
            timeout: int = CELL_TIMEOUT) -> nbformat.NotebookNode:
    """Run every cell of ``nb`` in a fresh kernel of this environment (the caller's environment variables),
    in directory ``cwd``, each within ``timeout`` seconds; the kernel is shut down at the end."""
    from nbclient import NotebookClient

    # A kernel manager given (not a kernel name) makes nbclient use jupyter_client's blocking client. Its
    # asyncio client can miss the wake-up for a reply that has arrived, and then waits out the cell timeout
    # (seen in tests/test_wrong_answers.py: a kernel idle for 300 s, its reply waiting); a blocking poll cannot.
    client = NotebookClient(
        nb, km=this_python_kernel(), timeout=timeout, allow_errors=allow_errors,
        resources={"metadata": {"path": str(cwd)}}, record_timing=False,
    )
    # The client does not own a kernel manager it is given, so it would leave the kernel running:
    # cleanup_kc=True shuts it down (else every notebook executed keeps a kernel alive until exit).
    client.execute(cleanup_kc=True)
    return nb


def tidy(nb: nbformat.NotebookNode, path: Path) -> nbformat.NotebookNode:
    """Stable metadata so that re-running a notebook gives a minimal diff."""
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata.setdefault("course", {})["file"] = path.name
    # Widget state would store every image an explorer drew; the static drawing beside
    # each widget is what a reader without a kernel sees.
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
    return nb


def execute_in_place(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    execute(add_header(nb, path), path.parent)
    nbformat.write(tidy(nb, path), path)


def write_student(solution_path: Path) -> Path:
    """Regenerate the student version of one solution and run it: a fresh student notebook must
    run to its last cell without an error (unfinished tasks print one line)."""
    solution = tidy(nbformat.read(solution_path, as_version=4), solution_path)
    student_path = NOTEBOOKS / solution_path.name
    nb = execute(make_student_notebook(solution, student_path), student_path.parent)
    nbformat.write(tidy(nb, student_path), student_path)
    return student_path


def write_students(solution_paths: list[Path] | None = None, jobs: int = 1) -> list[Path]:
    """Regenerate and run the student versions of these solutions (default: all), ``jobs`` at a time."""
    return _map(write_student, solution_paths or sorted(SOLUTIONS.glob("*.ipynb")), jobs)


def _map(fn, items: list, jobs: int) -> list:
    """``[fn(x) for x in items]``, in ``jobs`` processes when ``jobs > 1`` (each notebook has its own kernel)."""
    if jobs <= 1 or len(items) <= 1:
        return [fn(x) for x in items]
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(fn, items))


def _execute_timed(path: Path) -> str:
    start = time.perf_counter()
    execute_in_place(path)
    return f"executed {path.relative_to(ROOT)} in {time.perf_counter() - start:.1f} s"


def _paths(args: list[str]) -> list[Path]:
    return [Path(a).resolve() for a in args] if args else all_notebooks()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m course_utils.authoring.nbtools", description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["execute", "students", "benchmark"])
    parser.add_argument("notebooks", nargs="*", help="notebook paths (default: all)")
    parser.add_argument("--jobs", type=int, default=1, help="notebooks run at once by execute/students (default 1)")
    parser.add_argument("--pytest", action="store_true", help="benchmark: also time the README's pytest in a fresh clone")
    args = parser.parse_intermixed_args(argv)  # --jobs before or after the notebook paths
    if args.command == "execute":
        # No paths: every lesson and solution notebook, then the student versions.
        paths = []
        for path in _paths(args.notebooks):
            if is_student_version(nbformat.read(path, as_version=4)):
                print(f"skip {path.relative_to(ROOT)} (student version: use 'students')")
            else:
                paths.append(path)
        for line in _map(_execute_timed, paths, args.jobs):
            print(line)
        if not args.notebooks:
            for path in write_students(jobs=args.jobs):
                print(f"wrote {path.relative_to(ROOT)}")
    elif args.command == "students":
        solutions = [Path(a).resolve() for a in args.notebooks] or None
        for path in write_students(solutions, jobs=args.jobs):
            print(f"wrote {path.relative_to(ROOT)}")
    else:
        from .benchmark import benchmark

        print(benchmark(_paths(args.notebooks), with_pytest=args.pytest))


if __name__ == "__main__":
    main()
