"""Notebook tooling for maintainers: refresh stored outputs, make student versions, benchmark.

Run from the repository root:

    python -m course_utils.tooling.nbtools execute [NOTEBOOK ...]   # re-run in place (default: all, then students)
    python -m course_utils.tooling.nbtools students [SOLUTION ...]  # only regenerate + run student versions
    python -m course_utils.tooling.nbtools benchmark [NOTEBOOK ...] # wall time and peak memory table

Exercise notebooks have one source of truth, ``notebooks/solutions/NN_name.ipynb``.
Inside its code cells, a solution region is marked like this::

    def causal_mask(n):
        ### BEGIN SOLUTION
        return torch.ones(n, n, dtype=torch.bool).tril()
        ### END SOLUTION

The student version ``notebooks/NN_name.ipynb`` has each region replaced by
``raise NotImplementedError(...)`` at the marker's indentation.
"""

from __future__ import annotations

import argparse
import copy
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
SOLUTIONS = NOTEBOOKS / "solutions"
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
STUB = 'raise NotImplementedError("Your turn: replace this line with your code.")'
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
CELL_TIMEOUT = 600
# Where the course lives on GitHub: the Binder and Colab links and the Colab set-up cell use it.
# A fork changes these two lines and runs `python -m course_utils.tooling.nbtools execute`.
REPOSITORY = "attention-course/attention-mechanisms"
BRANCH = "main"
BADGES_TAG, COLAB_TAG = "course-badges", "colab-setup"
COLAB_SETUP = f'''# On Google Colab only: fetch the course's helper package and data. Elsewhere this cell does nothing.
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
    """The two badges every notebook starts with: open this notebook in Binder, or in Colab."""
    binder, colab = launch_links(path)
    return (
        f"[![Open in Binder](https://mybinder.org/badge_logo.svg)]({binder}) "
        f"[![Open in Colab](https://colab.research.google.com/assets/colab-badge.svg)]({colab})"
    )


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
        at = nb.cells.index(code) if code is not None else len(nb.cells)
        nb.cells.insert(at, nbformat.v4.new_code_cell(COLAB_SETUP, metadata={"tags": [COLAB_TAG]}))
    return nb


def is_student_version(nb: nbformat.NotebookNode) -> bool:
    return nb.metadata.get("course", {}).get("role") == "student"


def student_source(source: str) -> str:
    """Replace every solution region of one cell's source with the stub."""
    out, inside = [], False
    for line in source.splitlines():
        marker = line.strip()
        if marker == BEGIN:
            if inside:
                raise ValueError(f"nested {BEGIN!r} in cell:\n{source}")
            inside = True
            out.append(line[: len(line) - len(line.lstrip())] + STUB)
        elif marker == END:
            if not inside:
                raise ValueError(f"{END!r} without {BEGIN!r} in cell:\n{source}")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError(f"{BEGIN!r} without {END!r} in cell:\n{source}")
    return "\n".join(out)


def make_student_notebook(solution: nbformat.NotebookNode, student_path: Path | None = None) -> nbformat.NotebookNode:
    """The student version of a solution notebook: stubs instead of solutions, outputs cleared,
    and (given its path) badges that open the student version itself."""
    nb = copy.deepcopy(solution)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = student_source(cell.source)
            cell.outputs, cell.execution_count = [], None
    nb.metadata["course"] = {"role": "student", "generated_from": f"solutions/{_name(solution)}"}
    return add_header(nb, student_path) if student_path is not None else nb


def _name(nb: nbformat.NotebookNode) -> str:
    return nb.metadata.get("course", {}).get("file", "")


def _kernel_manager():
    """A kernel manager that starts ipykernel with this Python (the current environment)."""
    from ipykernel.kernelspec import RESOURCES, get_kernel_dict
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    class CurrentEnv(KernelSpecManager):
        def get_kernel_spec(self, kernel_name):
            return self.kernel_spec_class(resource_dir=RESOURCES, **get_kernel_dict())

    return KernelManager(kernel_name="python3", kernel_spec_manager=CurrentEnv())


def execute(nb: nbformat.NotebookNode, cwd: Path, allow_errors: bool = False) -> nbformat.NotebookNode:
    """Run every cell of ``nb`` in a fresh kernel of this environment, in directory ``cwd``."""
    from nbclient import NotebookClient

    client = NotebookClient(
        nb, km=_kernel_manager(), timeout=CELL_TIMEOUT, allow_errors=allow_errors,
        resources={"metadata": {"path": str(cwd)}}, record_timing=False,
    )
    client.execute()
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
    student = is_student_version(nb)
    execute(add_header(nb, path), path.parent, allow_errors=student)
    nbformat.write(tidy(nb, path), path)


def write_students(solution_paths: list[Path] | None = None) -> list[Path]:
    """Regenerate the student versions of these solutions (default: all) and run them (errors allowed)."""
    written = []
    for solution_path in solution_paths or sorted(SOLUTIONS.glob("*.ipynb")):
        solution = tidy(nbformat.read(solution_path, as_version=4), solution_path)
        student_path = NOTEBOOKS / solution_path.name
        nb = execute(make_student_notebook(solution, student_path), student_path.parent, allow_errors=True)
        nbformat.write(tidy(nb, student_path), student_path)
        written.append(student_path)
    return written


def benchmark(paths: list[Path]) -> str:
    """Execute each notebook in a fresh kernel; a Markdown table of wall seconds and the kernel's peak memory."""
    probe = nbformat.v4.new_code_cell(
        "import resource, sys\n"
        "peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "print(peak / 2**20 if sys.platform == 'darwin' else peak / 2**10)"  # bytes on macOS, KiB on Linux
    )
    rows = ["| notebook | wall s | peak kernel RSS MiB |", "| --- | ---: | ---: |"]
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        nb.cells.append(probe)
        start = time.perf_counter()
        execute(nb, path.parent, allow_errors=is_student_version(nb))
        seconds = time.perf_counter() - start
        mib = float(nb.cells[-1].outputs[-1].text)
        rows.append(f"| {path.relative_to(ROOT)} | {seconds:.1f} | {mib:.0f} |")
    return "\n".join(rows)


def _paths(args: list[str]) -> list[Path]:
    return [Path(a).resolve() for a in args] if args else all_notebooks()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m course_utils.tooling.nbtools", description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["execute", "students", "benchmark"])
    parser.add_argument("notebooks", nargs="*", help="notebook paths (default: all)")
    args = parser.parse_args(argv)
    if args.command == "execute":
        # No paths: every lesson and solution notebook, then the student versions.
        for path in _paths(args.notebooks):
            start = time.perf_counter()
            nb = nbformat.read(path, as_version=4)
            if is_student_version(nb):
                print(f"skip {path.relative_to(ROOT)} (student version: use 'students')")
                continue
            execute_in_place(path)
            print(f"executed {path.relative_to(ROOT)} in {time.perf_counter() - start:.1f} s")
        if not args.notebooks:
            for path in write_students():
                print(f"wrote {path.relative_to(ROOT)}")
    elif args.command == "students":
        solutions = [Path(a).resolve() for a in args.notebooks] or None
        for path in write_students(solutions):
            print(f"wrote {path.relative_to(ROOT)}")
    else:
        print(benchmark(_paths(args.notebooks)))


if __name__ == "__main__":
    main()
