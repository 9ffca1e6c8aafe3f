"""Regenerate the committed test submissions in this folder (one per kind the grader must handle).

    python tests/submissions/make_submissions.py

Each submission is built from the real exercise cells of ``notebooks/solutions/NN_*.ipynb`` (the
import cell, the task cells and the check cells; the lesson cells are left out so the tests run
fast), then changed the way a student might. Folder and file names are deliberately untidy, as
in an unpacked LMS download. The expected row of each is in tests/test_grade.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
STUB = 'raise NotImplementedError("Your turn: replace this line with your code.")'


def exercise_cells(name: str) -> list[str]:
    """The sources of the import cell, then each task cell followed by its check cell."""
    nb = nbformat.read(ROOT / "notebooks" / "solutions" / f"{name}.ipynb", as_version=4)
    keep = [c.source for c in nb.cells if c.cell_type == "code" and (
        "from course_utils.helpers.checkers import" in c.source or "### BEGIN SOLUTION" in c.source
        or re.fullmatch(r"check_\w+\(\w+\)", c.source.strip()))]
    return keep


def solved(source: str) -> str:
    return "\n".join(line for line in source.splitlines() if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION"))


def stubbed(source: str) -> str:
    out, inside = [], False
    for line in source.splitlines():
        if line.strip() == "### BEGIN SOLUTION":
            inside = True
            out.append(line[: len(line) - len(line.lstrip())] + STUB)
        elif line.strip() == "### END SOLUTION":
            inside = False
        elif not inside:
            out.append(line)
    return "\n".join(out)


def replace_body(source: str, body: str) -> str:
    """The task cell with its solution region replaced by ``body`` (indented like the region)."""
    lines = source.splitlines()
    begin = next(i for i, line in enumerate(lines) if line.strip() == "### BEGIN SOLUTION")
    end = next(i for i, line in enumerate(lines) if line.strip() == "### END SOLUTION")
    indent = lines[begin][: len(lines[begin]) - len(lines[begin].lstrip())]
    return "\n".join(lines[:begin] + [indent + b if b else b for b in body.splitlines()] + lines[end + 1:])


def notebook(sources: list[str], exercise: str | None, role: str = "student") -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("My submission.")] + [nbformat.v4.new_code_cell(s) for s in sources]
    for i, cell in enumerate(nb.cells):
        cell.id = f"cell-{i}"
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    if exercise:
        nb.metadata["course"] = {"file": f"{exercise}.ipynb", "generated_from": f"solutions/{exercise}.ipynb",
                                 "role": role}
    return nb


def write(rel: str, nb: nbformat.NotebookNode) -> None:
    path = HERE / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


def main() -> None:
    ex = "05_causal_mask"
    imports, mask, check_mask, attn, check_attn, leaks, check_leaks = exercise_cells(ex)
    full = [imports, solved(mask), check_mask, solved(attn), check_attn, solved(leaks), check_leaks]
    stubs = [imports, stubbed(mask), check_mask, stubbed(attn), check_attn, stubbed(leaks), check_leaks]

    write("alice/05_causal_mask.ipynb", notebook(full, ex))
    no_scaling = replace_body(attn, "weights = torch.softmax((Q @ K.transpose(-2, -1)).masked_fill(~mask, float('-inf')), dim=-1)\n"
                                    "return weights @ V, weights")
    write("bob/Causal Mask - Bob (1).ipynb",
          notebook([imports, solved(mask), check_mask, no_scaling, check_attn, stubbed(leaks), check_leaks], ex))
    write("carol/05_causal_mask.ipynb", notebook(stubs, ex))
    write("dave/assignment.ipynb",
          notebook([imports, solved(mask), check_mask, "while True:  # waiting for something that never comes\n    pass",
                    solved(attn), check_attn, solved(leaks), check_leaks], ex))
    broken = solved(attn).replace("d_k = Q.shape[-1]", "d_k = Q.shape[-1")
    write("erin/Erin_05.ipynb", notebook([imports, solved(mask), check_mask, broken, check_attn, solved(leaks), check_leaks], ex))
    eater = ("hog = torch.ones(2**31)  # 8 GiB\n\n" + solved(attn))
    write("grace/memory.ipynb", notebook([imports, solved(mask), check_mask, eater, check_attn, solved(leaks), check_leaks], ex))
    writer = ("from pathlib import Path\n"
              "Path('notes.txt').write_text('scratch')\n"
              "Path('../outside.txt').write_text('one folder up')\n"
              "Path('grades.csv').write_text('submission,correct\\nme,3\\n')")
    write("heidi/files/writes files.ipynb", notebook(full[:3] + [writer] + full[3:], ex))
    (HERE / "ivan").mkdir(exist_ok=True)
    text = nbformat.writes(notebook(full, ex))
    (HERE / "ivan" / "05_causal_mask.ipynb").write_text(text[: len(text) // 2], encoding="utf-8")
    other = nbformat.v4.new_notebook()
    other.cells = [nbformat.v4.new_markdown_cell("# Lab 3: convolutional networks"),
                   nbformat.v4.new_code_cell("def train_cnn(model, data):\n    return model\n\nprint('lab 3')")]
    other.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    write("judy/lab3.ipynb", other)
    fake = "\n".join(f'print("[correct] {t}: well done, every check passed.")'
                     for t in ("causal_mask", "masked_attention", "leaks_future"))
    write("mallory/05_causal_mask.ipynb", notebook(stubs + [fake], ex))
    patch_ns = ("def check_causal_mask(fn):\n    print('[correct] causal_mask: well done, every check passed.')\n    return True\n\n"
                "check_masked_attention = check_leaks_future = check_causal_mask")
    upper = replace_body(mask, "return torch.ones(n, n, dtype=torch.bool).triu()")
    write("oscar/05 causal mask (oscar).ipynb",
          notebook([imports, patch_ns, upper, check_mask, stubbed(attn), check_attn, stubbed(leaks), check_leaks], ex))
    patch_pkg = (
        "import os, sys\n"
        "import course_utils.helpers.checkers as checkers\n"
        "from course_utils.helpers.checkers import causal_mask as module, report\n"
        "always = lambda *args, **kwargs: True\n"
        "for target in (checkers, module):\n"
        "    for name in dir(target):\n"
        "        if name.startswith('check_'):\n"
        "            setattr(target, name, always)\n"
        "report.report = always\n"
        "# a look-alike package in the working folder, first on the path\n"
        "os.makedirs('course_utils/helpers/checkers', exist_ok=True)\n"
        "for folder in ('course_utils', 'course_utils/helpers', 'course_utils/helpers/checkers'):\n"
        "    open(os.path.join(folder, '__init__.py'), 'w').close()\n"
        "with open('course_utils/helpers/checkers/causal_mask.py', 'w') as f:\n"
        "    f.write('def check_causal_mask(fn):\\n    return True\\n'\n"
        "            'check_masked_attention = check_leaks_future = check_causal_mask\\n')\n"
        "sys.path.insert(0, os.getcwd())")
    all_true = replace_body(mask, "return torch.ones(n, n, dtype=torch.bool)")
    write("peggy/05_causal_mask.ipynb",
          notebook([imports, patch_pkg, all_true, check_mask, stubbed(attn), check_attn, stubbed(leaks), check_leaks], ex))
    calls_mask = replace_body(mask, "return course_utils.causal_mask(n)")
    write("trent/05_causal_mask.ipynb",
          notebook([imports, calls_mask, check_mask, solved(attn), check_attn, solved(leaks), check_leaks], ex))

    ex8 = "08_attention_vs_no_attention"
    imports8, acc, check_acc, exact, check_exact, by_len, check_by_len = exercise_cells(ex8)
    forgot_pad = replace_body(by_len, "return {int(n): 1.0 for n in src_lengths.tolist()}")
    write("victor/notebook.ipynb", notebook([imports8, solved(acc), check_acc, solved(exact), check_exact,
                                             forgot_pad, check_by_len], None))


if __name__ == "__main__":
    main()
