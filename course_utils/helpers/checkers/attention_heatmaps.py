"""Checker for lesson 02 (attention heatmaps): ``offset_share``, the mean weight that a
query puts on the key ``offset`` positions away from it.

``check_offset_share`` runs the student's function on fixed cases and on hidden random ones (n != m
both ways, offsets at both ends of their range, rows that are one-hot, uniform or tied), prints one
line (a pass, or a hint naming the mistake and the case) and returns a truthy result only for a
correct answer. Any number type is accepted: a Python float, a NumPy scalar, a 0-d array or tensor.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from .compare import Answers, two_numbers
from .registry import register
from .report import Hint, StudentCrash, as_float, call, failing_case, generator

NOTEBOOK = "02_attention_heatmaps"
TOLERANCE = 1e-5  # the weights are float32: a correct mean is within ~1e-7 of the float64 reference


def _valid_queries(n: int, m: int, offset: int) -> list[int]:
    """The queries i that have a key at i + offset (0 <= i + offset < m)."""
    return [i for i in range(n) if 0 <= i + offset < m]


def _mean_at(w: torch.Tensor, offset: int, divide_by: int | None = None) -> float:
    """``sum_i w[i, i + offset]`` over the valid queries, divided by their number (or by ``divide_by``)."""
    rows = _valid_queries(*w.shape, offset)
    total = sum(w[i, i + offset].item() for i in rows)
    return total / (len(rows) if divide_by is None else divide_by) if rows else math.nan


def _reference(w: torch.Tensor, offset: int) -> float:
    return _mean_at(w.double(), offset)


def _mistakes(w: torch.Tensor, offset: int) -> list[tuple]:
    """``(hint, value)`` or ``(key, hint, value)`` for every known wrong answer, most specific first."""
    w = w.double()
    n, m = w.shape
    rows = _valid_queries(n, m, offset)
    total = _mean_at(w, offset, divide_by=1)
    first_top = w.argmax(dim=-1)  # the first of tied keys, as torch.argmax and np.argmax pick
    nonzero = [i for i in rows if w[i, i + offset] > 0]
    out = [
        ("the offset runs the wrong way: you read weights[i, i - offset] (or swapped rows and columns). Query i "
         "is row i; its key `offset` positions away is column i + offset, so offset -1 is the previous token.",
         _mean_at(w, -offset) if _valid_queries(n, m, -offset) else None),
        ("n", f"you divided by n = {'m = ' if n == m else ''}{n}, the number of all queries. A query with no key at "
         "i + offset (query 0 has no previous token) has no share to measure: average only over the queries that "
         "have that key.", total / n),
        ("m", f"you divided by m = {m}, the number of keys: average over the queries that have a key at i + offset "
         f"(here {len(rows)}).", total / m),
        ("you counted how often the key at i + offset is a query's STRONGEST key (argmax). The task asks for the "
         "weight itself: a query that gives that key 0.45 and another key 0.55 still puts 0.45 there.",
         sum(int(first_top[i]) == i + offset for i in rows) / len(rows)),
        ("you left out the queries that give the key at i + offset zero weight: a query that ignores that key "
         "still counts, with its 0, in the mean (only queries with no key at i + offset are left out).",
         sum(w[i, i + offset].item() for i in nonzero) / len(nonzero) if nonzero else None),
        ("you summed the weights over the queries: take their MEAN, so that the share stays between 0 and 1.",
         total),
        ("your answer is 100 times too large: return a share between 0 and 1, not a percentage.",
         100 * total / len(rows)),
    ]
    wrap = ("you wrapped around (torch.roll, an index % m, or a negative index: Python reads weights[0, -1] as the "
            "LAST key): the key i + offset must exist; queries whose key falls off either end are left out, not "
            "paired with a key from the other end.")
    for key, size in (("wrap n", n), ("wrap min", min(n, m))):  # every query, or the diagonal of a rolled matrix
        out.append((key, wrap, sum(w[i, (i + offset) % m].item() for i in range(size)) / size))
    if n != m:
        for size, name in ((n, "n"), (m, "m")):
            divisor = size - abs(offset)
            out.append((f"{name} - |offset|", f"you divided by {name} - |offset| = {divisor}: that counts the queries "
                        f"with a key at i + offset only when n = m. Here n = {n} queries and m = {m} keys: count the "
                        f"queries with 0 <= i + offset < m (here {len(rows)}).",
                        total / divisor if divisor else (math.inf if total > 0 else None)))
    return out


def _row_kinds(seed: int) -> list[str]:
    return ["softmax", "one-hot", "uniform", "tie"] if seed % 2 else ["tie", "softmax", "one-hot", "uniform"]


def _weights(n: int, m: int, g: torch.Generator, kinds: list[str]) -> tuple[torch.Tensor, str]:
    """Random weights ``(n, m)`` (float32) whose rows cycle through ``kinds``, and a description of them."""
    w = torch.softmax(3 * torch.randn(n, m, generator=g), dim=-1)
    for i in range(n):
        kind = kinds[i % len(kinds)]
        if kind == "one-hot":
            w[i] = 0.0
            w[i, int(torch.randint(m, (1,), generator=g))] = 1.0
        elif kind == "uniform":
            w[i] = 1.0 / m
        elif kind == "tie" and m >= 3:  # the two strongest keys share the top weight exactly
            keys = torch.randperm(m, generator=g)[:3].tolist()
            w[i] = 0.0
            w[i, keys[0]], w[i, keys[1]], w[i, keys[2]] = 0.4, 0.4, 0.2
    names = {"softmax": "random", "one-hot": "one-hot", "uniform": "uniform", "tie": "two keys tied at the top"}
    used = [names[k] for k in kinds[:n] if k != "tie" or m >= 3]
    return w, "rows " + ", ".join(used)


def _fixed_cases() -> list[tuple[str, torch.Tensor, int]]:
    g = torch.Generator().manual_seed(2)
    stripe = torch.zeros(5, 5)
    stripe[1:, :-1] = torch.eye(4)
    stripe[0] = 0.2  # query 0 has no previous token: its row is uniform, as in the gallery
    tall, _ = _weights(7, 3, g, ["softmax", "one-hot", "tie"])
    wide, _ = _weights(3, 8, g, ["tie", "softmax", "uniform"])
    return [
        ("a previous-token stripe (5, 5) whose row 0 is uniform, offset -1", stripe, -1),
        ("the same stripe, offset 0 (the diagonal)", stripe, 0),
        ("uniform rows (4, 6), offset 2", torch.full((4, 6), 1.0 / 6), 2),
        ("n = 7 queries > m = 3 keys, offset 0 (only queries 0-2 have a key on the diagonal)", tall, 0),
        ("n = 3 queries < m = 8 keys, offset +4", wide, 4),
        ("n = 3, m = 8, offset m - 1 = +7 (only query 0 has that key)", wide, 7),
        ("n = 7, m = 3, offset -(n - 1) = -6 (only query 6 has that key)", tall, -6),
    ]


def _random_cases(seed: int, count: int = 6) -> list[tuple[str, torch.Tensor, int]]:
    g = generator(seed)
    cases = []
    for k in range(count):
        n, m = (int(v) for v in torch.randint(2, 13, (2,), generator=g))
        if k % 2 == 0 and n == m:
            m = n + 1 + int(torch.randint(4, (1,), generator=g))  # at least half of the cases have n != m
        offset = int(torch.randint(-(n - 1), m, (1,), generator=g))  # some query has the key i + offset
        w, rows = _weights(n, m, g, _row_kinds(seed + k))
        description = f"hidden weights ({n}, {m}) (n = {n} queries, m = {m} keys; {rows}), offset {offset:+d}"
        cases.append((description, w, offset))
    return cases


def _check_once(fn: Callable, w: torch.Tensor, offset: int) -> float:
    given = w.clone()
    try:
        result = call(fn, given, offset)
    except StudentCrash as crash:
        crash.tip = crash.tip or ("Read n and m from weights.shape (queries and keys need not be as many) and keep "
                                  "only the queries i with 0 <= i + offset < m.")
        raise
    if not torch.equal(given, w):
        raise Hint("your function changed the weights you passed in (an in-place edit): read them, don't write them.")
    n, m = w.shape
    shape = (len(result),) if isinstance(result, (list, tuple)) else tuple(getattr(result, "shape", ()))
    count = len(_valid_queries(n, m, offset))
    if shape in ((count,), (n,), (n, 1)) and shape != (1,):
        raise Hint(f"you returned {shape[0]} values, one per query: return their MEAN, one number.")
    got = as_float(result, "offset_share")
    if math.isnan(got):
        raise Hint("your result is NaN: a mean over no queries at all? Keep the queries with 0 <= i + offset < m; "
                   "every case here has at least one.")
    return got


def _same(a: float, b) -> bool:
    return b is not None and (a == b or (not math.isnan(b) and abs(a - b) <= TOLERANCE))


@register("offset_share", twins={"offset_share": "course_utils.core.metrics.offset_share"})
def check_offset_share(fn: Callable[[torch.Tensor, int], float], seed: int) -> None:
    """Check ``fn(weights (n, m), offset) -> float``: the mean of ``weights[i, i + offset]`` over the queries i
    with ``0 <= i + offset < m``, on 7 fixed cases and 6 hidden random ones (repeat a run with ``seed=``)."""
    answers = Answers(_same, lambda c: "expected {}, got {}".format(*two_numbers(c.expected, c.got))
                      + ": the mean of weights[i, i + offset] over the queries i that have that key (0 <= i + offset < m).")
    for description, w, offset in [*_fixed_cases(), *_random_cases(seed)]:
        with failing_case(description):
            got = _check_once(fn, w, offset)
        answers.add(description, got, _reference(w, offset), lambda w=w, offset=offset: _mistakes(w, offset))
    answers.verdict()
