"""Checker for lesson 04 (seq2seq with attention): ``peak_offsets``, the offset of each token step's
largest weight from the mirrored position, on hidden padded batches (lengths from 1 up,
T_out != T_in, many ties, padded positions that hold more than any real weight)."""

from __future__ import annotations

import math

import numpy as np
import torch

from .compare import Answers, call_unchanged
from .registry import register
from .report import Hint, failing_case, generator, kind_of

NOTEBOOK = "04_seq2seq_with_attention"
TWINS = {"anti_diagonal_offsets": "course_utils.helpers.lesson_plots.anti_diagonal_offsets"}


def _offset_cases(g: torch.Generator):
    """(name, weights (B, T_out, T_in), lengths (B,)): padded sources whose padded positions hold more
    than any weight (as an unmasked model's would), T_out != T_in, many ties, a length of 1."""
    cases = []
    for B, T_in, extra, ties in [(6, 10, 1, False), (5, 7, 4, False), (4, 6, 1, True), (40, 12, 0, False)]:
        T_out = T_in + extra
        lengths = torch.randint(1, T_in + 1, (B,), generator=g)
        lengths[:3] = torch.tensor([T_in, 1, int(torch.randint(2, T_in, (1,), generator=g))])
        real = torch.arange(T_in) < lengths[:, None, None]  # (B, 1, T_in)
        if ties:  # whole-number scores: equal scores give exactly equal weights; row 0 of each is uniform
            scores = torch.randint(0, 3, (B, T_out, T_in), generator=g).float()
            scores[:, 0] = 0.0
        else:  # a peak on the mirror or beside it, sometimes anywhere
            mirror = lengths[:, None] - 1 - torch.arange(T_out)
            peak = mirror + torch.randint(-1, 2, (B, T_out), generator=g)
            anywhere = (torch.rand(B, T_out, generator=g) * lengths[:, None]).long()
            peak = torch.where(torch.rand(B, T_out, generator=g) < 0.2, anywhere, peak)
            peak = torch.minimum(peak.clamp(min=0), lengths[:, None] - 1)
            scores = torch.randn(B, T_out, T_in, generator=g) + 4 * torch.nn.functional.one_hot(peak, T_in)
        weights = torch.softmax(scores.masked_fill(~real, float("-inf")), -1)
        weights = torch.where(real, weights, 1 + torch.rand(B, T_out, T_in, generator=g))
        kind = "many tied weights, " if ties else ""
        cases.append((f"{kind}weights {(B, T_out, T_in)}, lengths {lengths.tolist()}", weights, lengths))
    return cases



def _is_sequence(x) -> bool:
    return (isinstance(x, torch.Tensor) and x.dim() > 0) or isinstance(x, (list, tuple, np.ndarray))


def _as_offsets(result, lengths: torch.Tensor) -> list[int]:
    """The answer as a flat list of ints: a 1-D tensor/array/list, or one such sequence per example."""
    nested = isinstance(result, (list, tuple)) and len(result) == len(lengths) and all(map(_is_sequence, result))
    out = []
    for part in result if nested else [result]:
        if not _is_sequence(part):
            raise Hint(f"return the offsets as a 1-D tensor or a list, got {kind_of(part)}.")
        for v in (part.detach().cpu().reshape(-1).tolist() if isinstance(part, torch.Tensor)
                  else np.asarray(part, dtype=object).reshape(-1).tolist()):
            if isinstance(v, np.generic):
                v = v.item()
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v != int(v):
                raise Hint(f"an offset is a whole number (a difference of two positions), got {v!r}.")
            out.append(int(v))
    return out


class _Judge:
    """Whether offsets point, from ``base + sign * offset``, at a largest weight of ``table`` among positions
    0..limit-1."""

    def __init__(self, base, limit, best, table, sign: int = 1) -> None:
        self.base, self.limit, self.best, self.table, self.sign = base, limit, best, table, sign

    def hits(self, got: torch.Tensor) -> torch.Tensor:
        pos = self.base + self.sign * got
        inside = (pos >= 0) & (pos < self.limit)
        at = torch.minimum(pos.clamp(min=0), torch.as_tensor(self.limit) - 1)
        return inside & (self.table.gather(1, at[:, None]).squeeze(1) == self.best)

    def holds(self, got: torch.Tensor) -> bool:
        return bool(self.hits(got).all())


class _Steps:
    """The token steps t < n of a case, example after example, and what the right offsets must hit."""

    def __init__(self, weights: torch.Tensor, lengths: torch.Tensor) -> None:
        B, T_out, T_in = weights.shape
        self.steps = torch.arange(T_out) < lengths[:, None]  # (B, T_out)
        self.b, self.t = self.steps.nonzero(as_tuple=True)  # example after example, t ascending
        self.n, self.T_out, self.T_in = lengths[self.b], T_out, T_in
        self.mirror = self.n - 1 - self.t
        real = torch.arange(T_in) < lengths[:, None, None]
        self.rows = weights[self.b, self.t]  # (steps, T_in)
        self.real_max = weights.masked_fill(~real, float("-inf")).amax(-1)[self.b, self.t]
        self.columns = weights.transpose(1, 2)[self.b, self.t]  # (steps, T_out): source position t, every step
        self.right = _Judge(self.mirror, self.n, self.real_max, self.rows)

    def mistakes(self) -> list[tuple[str, _Judge]]:
        n, t, T_in, mirror, rows, real_max, columns = (self.n, self.t, self.T_in, self.mirror, self.rows,
                                                       self.real_max, self.columns)
        axis = ("wrong axis: you took the argmax over the output steps (axis 1). Row t of weights[b] is output step t: "
                "take the argmax over the source positions, the last axis (dim=-1).")
        return [
            ("your peak can land on a padded source position (i >= n): take the argmax over the n real positions only "
             "(weights[b, t, :n]). Here the padded positions hold large numbers, as they would without a padding mask.",
             _Judge(mirror, T_in, rows.amax(-1), rows)),
            ("the mirrored position uses each example's own length n = lengths[b], not the padded width T_in = "
             "weights.shape[-1]: it is n - 1 - t.", _Judge(T_in - 1 - t, n, real_max, rows)),
            ("the mirrored position uses each example's own length n = lengths[b], not the padded width T_in, and the "
             "argmax must skip the padded positions i >= n.", _Judge(T_in - 1 - t, T_in, rows.amax(-1), rows)),
            ("off by one: every offset is 1 too small. Positions count from 0, so the mirrored position of step t is "
             "n - 1 - t (n - t is the 1-based formula).", _Judge(mirror + 1, n, real_max, rows)),
            ("off by one: every offset is 1 too large. The peak (argmax) and the mirrored position n - 1 - t both count "
             "from 0: do not add 1 to either.", _Judge(mirror - 1, n, real_max, rows)),
            ("off by two: n + 1 - t is the mirror when positions count from 1, but argmax counts from 0: use n - 1 - t.",
             _Judge(mirror + 2, n, real_max, rows)),
            ("the sign is flipped: the offset is the peak position minus the mirrored position, peak - (n - 1 - t), "
             "so a peak to the right of the mirror gives +1.", _Judge(mirror, n, real_max, rows, sign=-1)),
            ("axis n", axis, _Judge(mirror, n, columns.masked_fill(~self.steps[self.b], float("-inf")).amax(-1), columns)),
            ("axis T", axis, _Judge(mirror, self.T_out, columns.amax(-1), columns)),
        ]

    def reordered(self, got: torch.Tensor) -> str | None:
        """The order a list of right offsets came in, if not example after example."""
        step_major = sorted(range(len(self.b)), key=lambda k: (int(self.t[k]), int(self.b[k])))
        flipped = sorted(range(len(self.b)), key=lambda k: (int(self.b[k]), -int(self.t[k])))
        for name, order in (("step after step (all examples at t = 0, then t = 1, ...)", step_major),
                            ("with t descending within each example", flipped)):
            placed = torch.empty_like(got)
            placed[torch.tensor(order)] = got
            if self.right.holds(placed):
                return name
        return None


def _check_lengths(got: list[int], lengths: torch.Tensor, steps: _Steps) -> None:
    B, T_out = steps.steps.shape
    if len(got) == len(steps.b):
        return
    if len(got) == int((lengths + 1).sum()):
        raise Hint("you included the <eos> step t = n: only the n token steps t < n have a mirrored position.")
    if len(got) == B * T_out:
        raise Hint(f"you returned every step of the padded {(B, T_out)} grid: keep only the steps t < n of each "
                   "example (the <eos> step and padded steps have no mirrored position).")
    raise Hint(f"expected {len(steps.b)} offsets (one per token step t < n, example after example), got {len(got)}.")


def _otherwise(case) -> str:
    steps = case.info["steps"]
    k = int((~steps.right.hits(case.got)).nonzero()[0])
    b, t, n, mirror = (int(v[k]) for v in (steps.b, steps.t, steps.n, steps.mirror))
    return (f"at example {b}, step {t} (n = {n}, mirrored position {mirror}): offset {int(case.got[k])} does not point "
            f"at a largest weight among positions 0..n-1 (weights {[round(w, 3) for w in steps.rows[k, :n].tolist()]}).")


@register("peak_offsets", twins=TWINS)
def check_peak_offsets(fn, seed: int) -> None:
    """Check ``fn(weights (B, T_out, T_in), lengths (B,)) -> offsets``: for every example b and token step
    t < n = lengths[b], the position of the largest weight among the real positions i < n minus the mirrored
    position n - 1 - t, example after example (a 1-D tensor or list; one sequence per example is fine too).
    Where a row has several largest weights, an offset to any of them is right."""
    answers = Answers(lambda got, judge: judge.holds(got), _otherwise)
    for where, weights, lengths in _offset_cases(generator(seed)):
        with failing_case(where):
            got = _as_offsets(call_unchanged(fn, weights, lengths, names=("weights", "lengths"), case=where), lengths)
            steps = _Steps(weights, lengths)
            _check_lengths(got, lengths, steps)
        got = torch.tensor(got, dtype=torch.long)
        if not answers.add(where, got, steps.right, steps.mistakes, steps=steps):
            order = steps.reordered(got)
            if order is not None:
                raise Hint(f"your offsets are right but in another order, {order}: list them example after example, "
                           "steps t = 0, 1, ..., n - 1 of example 0, then those of example 1, and so on.", where)
    answers.verdict()
