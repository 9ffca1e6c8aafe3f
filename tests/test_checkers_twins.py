"""The check that an answer does not only hand its work to the course's own function: a static check of
source text (``twins.twin_calls`` for a grader, on a notebook's cells; ``answer_twin_calls`` inside a
notebook or script), which works under a profiler, in threads and for decorated functions."""

import cProfile
import functools
import importlib
import inspect
import sys
import threading

import pytest
import torch

import course_utils
from course_utils.core import masks
from course_utils.core.masks import causal_mask as course_causal_mask
from course_utils.helpers import checkers
from course_utils.helpers.checkers import check_causal_mask, check_cross_attention, twin_calls

SETUP = """import functools
import importlib
import torch
import course_utils
import course_utils as cu
from course_utils.core import masks
from course_utils import causal_mask as course_causal_mask
from course_utils import MultiHeadAttention, scaled_dot_product_attention
"""

HANDS_OVER = {  # a notebook cell defining causal_mask: it hands the work to the course's causal_mask
    "the package's name": "def causal_mask(n):\n    return course_utils.causal_mask(n)\n",
    "an alias of the package": "def causal_mask(n):\n    return cu.causal_mask(n).clone()\n",
    "an attribute chain": "def causal_mask(n):\n    return course_utils.core.masks.causal_mask(n)\n",
    "a module alias": "def causal_mask(n):\n    return masks.causal_mask(n) & True\n",
    "importlib": "def causal_mask(n):\n    m = importlib.import_module('course_utils.core.masks')\n    return m.causal_mask(n)\n",
    "getattr": "def causal_mask(n):\n    return getattr(course_utils, 'causal_mask')(n)\n",
    "a local alias": "def causal_mask(n):\n    f = course_causal_mask\n    return f(n)\n",
    "an import inside": "def causal_mask(n):\n    from course_utils.core.masks import causal_mask as c\n    return c(n)\n",
    "a notebook helper": "def helper(n):\n    return course_causal_mask(n)\n\n\ndef causal_mask(n):\n    return helper(n).clone()\n",
    "a plain alias": "causal_mask = course_causal_mask\n",
    "a lambda": "causal_mask = lambda n: cu.causal_mask(n)\n",
    "a decorated function": "@functools.lru_cache(maxsize=None)\ndef causal_mask(n):\n    return course_causal_mask(n)\n",
    "a %%time cell": "%%time\ndef causal_mask(n):\n    return course_causal_mask(n)\n",
    "functools.partial": "causal_mask = functools.partial(course_causal_mask)\n",
}

OWN_WORK = {  # answers that compute the mask themselves, whatever else the notebook imported
    "torch": "def causal_mask(n):\n    return torch.ones(n, n, dtype=torch.bool).tril()\n",
    "a copy of the package's body": inspect.getsource(masks.causal_mask),
    "a later import under another name": "def causal_mask(n):\n    return torch.ones(n, n).tril().bool()\n"
                                         "from course_utils.core.masks import causal_mask as course_version\n",
    "a value the course computed is data": "M = course_causal_mask(64)\n\n\ndef causal_mask(n):\n    return M[:n, :n]\n",
    "a parameter named like a module": "def causal_mask(n, masks=None):\n    return torch.ones(n, n).tril().bool()\n",
}


@pytest.mark.parametrize("name", HANDS_OVER)
def test_a_notebook_answer_that_hands_its_work_over_is_found(name):
    assert twin_calls("check_causal_mask", [SETUP, HANDS_OVER[name]]) == ["causal_mask"]
    assert twin_calls("causal_mask", [SETUP, HANDS_OVER[name]]) == ["causal_mask"]  # by the object the check takes


@pytest.mark.parametrize("name", OWN_WORK)
def test_an_answer_that_does_the_work_is_not_flagged(name):
    assert twin_calls("check_causal_mask", [SETUP, OWN_WORK[name]]) == []


def test_the_last_definition_of_the_name_is_the_answer():
    cells = [SETUP, HANDS_OVER["the package's name"], OWN_WORK["torch"]]
    assert twin_calls("check_causal_mask", cells) == []
    assert twin_calls("check_causal_mask", [SETUP, OWN_WORK["torch"], HANDS_OVER["a module alias"]]) == ["causal_mask"]


CLASSES = {
    "super().forward": ("class CrossAttention(MultiHeadAttention):\n    def forward(self, d, e, m=None):\n"
                        "        return super().forward(d, e, e, m)\n", ["MultiHeadAttention"]),
    "the inherited forward": ("class CrossAttention(MultiHeadAttention):\n    pass\n", ["MultiHeadAttention"]),
    "a layer of the course inside": ("class CrossAttention(torch.nn.Module):\n    def __init__(self, d, h):\n"
                                     "        super().__init__()\n        self.mha = MultiHeadAttention(d, h)\n\n"
                                     "    def forward(self, d, e, m=None):\n        return self.mha(d, e, e, m)\n",
                                     ["MultiHeadAttention"]),
    "its own forward with the course's attention": (
        "class CrossAttention(torch.nn.Module):\n    def __init__(self, d, h):\n        super().__init__()\n"
        "        self.W_q = torch.nn.Linear(d, d)\n\n    def forward(self, d, e, m=None):\n"
        "        return scaled_dot_product_attention(self.W_q(d), e, e, m)\n", []),
    "a subclass with a forward of its own": ("class CrossAttention(MultiHeadAttention):\n    def forward(self, d, e, m=None):\n"
                                             "        return self.W_o(d), None\n", []),
}


@pytest.mark.parametrize("name", CLASSES)
def test_a_class_task_is_read_as_a_class(name):
    cell, expected = CLASSES[name]
    assert twin_calls("check_cross_attention", [SETUP, cell]) == expected


def test_an_unknown_task_or_an_unreadable_notebook_is_a_clear_error():
    with pytest.raises(KeyError, match="no single check takes"):
        twin_calls("no_such_task", [SETUP])
    chain = "".join(f"def f{k}(n):\n    return f{k + 1}(n)\n" for k in range(3000))
    with pytest.raises(ValueError, match="nested too deeply"):
        twin_calls("check_causal_mask", [SETUP, chain + "def causal_mask(n):\n    return f0(n)\n"])
    assert twin_calls("check_causal_mask", ["def causal_mask(n:\n", "((((" * 50]) == []  # cells that do not parse


# --- in a script or a notebook: the answer object itself -------------------------------------------------


def mask_by_the_course(n):
    return course_utils.causal_mask(n)


def mask_by_importlib(n):
    return importlib.import_module("course_utils.core.masks").causal_mask(n).clone()


def mask_by_hand(n):
    return torch.ones(n, n, dtype=torch.bool).tril()


def _logged(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        return fn(*args)
    return wrapper


@_logged
def decorated_by_the_course(n):
    return course_causal_mask(n)


@torch.no_grad()
def no_grad_by_the_course(n):
    return masks.causal_mask(n)


@_logged
def decorated_by_hand(n):
    return mask_by_hand(n)


class ByTheCourse(course_utils.MultiHeadAttention):
    def forward(self, dec, enc, mask=None):
        return super().forward(dec, enc, enc, None if mask is None else mask.unsqueeze(1))


def _verdicts(check, answers):
    return [(check(answer, seed=0).status, check(answer, seed=0).hint[:41]) for answer in answers]


ANSWERS = [mask_by_the_course, mask_by_importlib, decorated_by_the_course, no_grad_by_the_course, course_causal_mask,
           mask_by_hand, decorated_by_hand, lambda n: masks.causal_mask(n)]
EXPECTED = [("wrong", "calls the course's own causal_mask: write")] * 5 + [("correct", "")] * 2 + [
    ("wrong", "calls the course's own causal_mask: write")]


def test_answers_in_a_module_are_read_from_their_source(capsys):
    assert _verdicts(check_causal_mask, ANSWERS) == EXPECTED
    assert check_cross_attention(ByTheCourse, seed=0).hint.startswith("calls the course's own MultiHeadAttention")


def test_the_check_works_under_a_profiler(capsys):
    profiler = cProfile.Profile()
    found = profiler.runcall(_verdicts, check_causal_mask, ANSWERS)
    assert found == EXPECTED
    sys.setprofile(lambda *args: None)  # a profiler that was running keeps running
    try:
        assert _verdicts(check_causal_mask, ANSWERS[:1]) == EXPECTED[:1]
        assert sys.getprofile() is not None
    finally:
        sys.setprofile(None)


def test_the_check_works_in_a_thread(capsys):
    found = []
    thread = threading.Thread(target=lambda: found.append(_verdicts(check_causal_mask, ANSWERS)))
    thread.start()
    thread.join()
    assert found == [EXPECTED]


def test_in_a_notebook_the_cells_give_the_imports(capsys):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    cells = [
        "from course_utils.helpers.checkers import check_causal_mask\nimport course_utils as cuu\n",
        "def my_wrapper(fn):\n    def inner(n):\n        return fn(n)\n    return inner\n",  # no functools.wraps
        "@my_wrapper\ndef causal_mask(n):\n    return cuu.causal_mask(n)\n",
        "%prun -q -r verdict = check_causal_mask(causal_mask)\n",
        "import torch\ndef causal_mask(n):\n    return torch.ones(n, n, dtype=torch.bool).tril()\n",
        "fine = check_causal_mask(causal_mask)\n",
        "class CrossAttentionX(cuu.MultiHeadAttention):\n    pass\n",
        "from course_utils.helpers.checkers import check_cross_attention\nlayer = check_cross_attention(CrossAttentionX)\n",
    ]
    for cell in cells:
        assert shell.run_cell(cell, store_history=True).success, cell
    assert shell.user_ns["verdict"].hint.startswith("calls the course's own causal_mask")
    assert shell.user_ns["fine"].status == "correct"
    assert shell.user_ns["layer"].hint.startswith("calls the course's own MultiHeadAttention")


def test_a_remote_stand_in_is_not_read():
    class StandIn:  # what a grader hands the checker: only calls reach the student's code
        __name__ = "causal_mask"

        def __call__(self, n):
            return course_causal_mask(n)

    assert check_causal_mask(StandIn(), seed=0).status == "correct"  # the grader runs twin_calls on the cells


def test_every_registered_twin_names_a_course_object():
    pending = {"course_utils.core.multihead.split_heads"}  # lesson 03's reference, to come with its notebook
    for check in checkers.CHECKS.values():
        for _display, path in check.twins:
            module, _, name = path.rpartition(".")
            obj = getattr(importlib.import_module(module), name, None)
            if path in pending and obj is None:
                continue
            assert obj is not None and f"{obj.__module__}.{obj.__qualname__}" == path, (check.name, path)


def test_a_lazy_linecache_entry_does_not_hide_a_twin(monkeypatch):
    """linecache keeps 1-tuples for modules it will load lazily; reading the notebook's cells from it must skip
    them (a crash there made the twin check find nothing, and an answer that only calls the course's
    TransformerBlock was marked correct)."""
    import linecache

    from course_utils.helpers.checkers import answer_source

    class Shell:
        user_ns = {"In": []}

    monkeypatch.setattr(answer_source, "_ipython", lambda: Shell())
    monkeypatch.setitem(linecache.cache, "lazy_module_for_the_test", (lambda: None,))
    monkeypatch.setitem(linecache.cache, "<ipython-input-1-abc>", (5, None, ["x = 1\n"], "<ipython-input-1-abc>"))
    assert "x = 1\n" in answer_source._notebook_cells()  # and no ValueError from the lazy entry
