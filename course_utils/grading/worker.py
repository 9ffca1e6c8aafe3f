"""The worker of ``course-grade``: the one process where a submission's code runs.

Started by ``grade_sandbox.worker_command`` as ``python -I -S -c <bootstrap>`` (no site
customisation, no ``PYTHONPATH``, only a private copy of the course's package and the installed
libraries on its path), in the submission's private folder. It moves the request and reply pipes
(its stdin and stdout) to private descriptors and sends its own stdout/stderr to /dev/null, so
nothing the student's code prints can pass for a message. Then it answers the grader's requests
(``grade_channel``): first ``setup(plan)``, which runs the cells and statements of the plan
(``grade_plan``) in one ``__main__`` namespace and returns the task objects (as references) and
the first error of each cell; then the calls of the checkers on those objects.

Nothing here decides anything: whatever this process sends back is only the student's answer.
"""

from __future__ import annotations

import ast
import builtins
import linecache
import os
import sys
import types

START = "from course_utils.grading.worker import serve_submission\nserve_submission()\n"
DROP = (  # run as root inside the sandbox: become the job slot's own user first (no new privileges, no groups)
    "import ctypes\n"
    "ctypes.CDLL(None, use_errno=True).prctl(38, 1, 0, 0, 0)\n"
    "os.setgroups([]); os.setgid({gid}); os.setuid({uid})\n"
)


def bootstrap(paths: list[str], uid: int | None = None, then: str = START) -> str:
    """The ``-c`` program that puts ``paths`` first on ``sys.path``, becomes ``uid`` (if given), then runs ``then``."""
    drop = DROP.format(uid=uid, gid=uid) if uid is not None else ""
    return f"import sys, os\nsys.path[:0] = {list(paths)!r}\n{drop}{then}"


class Notebook:
    """The submission's namespace and the setup request that fills it."""

    def __init__(self) -> None:
        module = types.ModuleType("__main__")
        module.__dict__.update({"__builtins__": builtins, "get_ipython": self.get_ipython})
        sys.modules["__main__"] = module
        self.ns = module.__dict__
        self._shell = None

    def get_ipython(self):
        """An IPython shell on the same namespace, made only when a cell's magic asks for one."""
        if self._shell is None:
            from IPython.core.interactiveshell import InteractiveShell

            self._shell = InteractiveShell.instance(user_ns=self.ns, user_module=sys.modules["__main__"])
        return self._shell

    def setup(self, plan: dict, names: list) -> dict:
        """Run the plan's cells; {"objects": {name: object}, "missing": [...], "errors": [[cell, "Type: msg"]]}."""
        errors = []
        for cell, code, statements in plan["cells"]:
            filename = f"<cell {cell + 1}>"
            linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
            try:
                tree = ast.parse(code, filename)
            except (SyntaxError, ValueError) as err:
                errors.append([cell, f"{type(err).__name__}: {err}"])
                continue
            for index in statements if statements is not None else range(len(tree.body)):
                try:
                    exec(compile(ast.Module([tree.body[index]], []), filename, "exec"), self.ns)  # noqa: S102
                except BaseException as err:  # noqa: BLE001 - the cell stops here, as in the notebook
                    errors.append([cell, f"{type(err).__name__}: {err}"])
                    break
        return {"objects": {n: self.ns[n] for n in names if n in self.ns},
                "missing": [n for n in names if n not in self.ns], "errors": errors}


def serve_submission() -> None:
    requests, replies = os.dup(0), os.dup(1)
    quiet = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(quiet, fd)
    sys.argv = ["submission"]
    from . import transport  # noqa: F401 - before the student's code runs
    from .channel import Endpoint

    try:
        from ..helpers.checkers import fixtures
    except ImportError:  # a package without fixtures: no checker passes one
        fixtures = None
    endpoint = Endpoint(requests, replies, student_side=True, fixtures=fixtures)
    endpoint.exports[0] = Notebook().setup
    endpoint.serve()
    os._exit(0)
