"""Checkers for the "your turn" cells of the explorations (notebooks 10-14).

Each ``check_*`` takes the student's function, runs it on hidden cases (n != m, large
sizes, every boundary), prints one line and returns True only for a correct answer.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from .report import Hint, expect_tensor, report


def _as_float_list(value, what: str) -> list[float]:
    if isinstance(value, torch.Tensor):
        value = value.tolist()
    try:
        return [float(v) for v in value]
    except (TypeError, ValueError):
        raise Hint(f"{what} should be a list (or 1-D tensor/array) of numbers, got {type(value).__name__}.") from None


# --- 10: the sparsemax threshold -----------------------------------------------------------------


def _tau_reference(z: torch.Tensor) -> torch.Tensor:
    z_sorted = z.sort(dim=-1, descending=True).values
    k = torch.arange(1, z.shape[-1] + 1, dtype=z.dtype)
    cumsum = z_sorted.cumsum(-1)
    kept = (1 + k * z_sorted > cumsum).sum(-1, keepdim=True)
    return (cumsum.gather(-1, kept - 1) - 1) / kept


def _tau_cases() -> list[tuple[str, torch.Tensor]]:
    g = torch.Generator().manual_seed(10)
    return [
        ("the worked example z = [1.2, 0.9, 0.1, -0.5]", torch.tensor([[1.2, 0.9, 0.1, -0.5]], dtype=torch.float64)),
        ("a row whose top score stands out by more than 1 (only one key kept)", torch.tensor([[5.0, 1.0, 0.5]], dtype=torch.float64)),
        ("equal scores (every key kept)", torch.zeros(2, 6, dtype=torch.float64)),
        ("a single key (m = 1)", torch.tensor([[0.3], [-2.0]], dtype=torch.float64)),
        ("unsorted rows of a batch (4, 6, 10)", 2 * torch.randn(4, 6, 10, generator=g, dtype=torch.float64)),
        ("large scores, 3 x 300", 40 * torch.randn(3, 300, generator=g, dtype=torch.float64)),
    ]


def check_sparsemax_threshold(fn: Callable[[torch.Tensor], torch.Tensor]) -> bool:
    """``fn(z (..., m)) -> tau (..., 1)``: the threshold with sparsemax(z) = max(z - tau, 0)."""

    def check() -> None:
        for name, z in _tau_cases():
            got = expect_tensor(fn(z.clone()), "tau")
            want = _tau_reference(z)
            if got.shape == want.shape[:-1]:
                got = got.unsqueeze(-1)  # (..., ) is fine too
            if got.shape != want.shape:
                raise Hint(f"on {name}: tau should have shape {tuple(want.shape)} (one threshold per row, keepdim), "
                           f"got {tuple(got.shape)}.")
            got = got.to(torch.float64)
            if torch.allclose(got, want, atol=1e-6):
                continue
            z_sorted = z.sort(dim=-1, descending=True).values
            if torch.allclose(got, z_sorted[..., :1] - 1, atol=1e-6):
                raise Hint(f"on {name}: you returned z_(1) - 1, which is only a lower bound of tau; "
                           "find how many keys k(z) are kept, then tau = (sum of the k largest - 1) / k.")
            if torch.allclose(got, (z.sum(-1, keepdim=True) - 1) / z.shape[-1], atol=1e-6):
                raise Hint(f"on {name}: you kept every key (tau = (sum of all - 1) / m). Keep only the keys with "
                           "1 + k z_(k) > sum of the k largest.")
            if not torch.equal(fn(z.clone()), fn(z.clone())):
                raise Hint(f"on {name}: your function gives different answers for the same input.")
            if (torch.clamp(z - got, min=0).sum(-1) - 1).abs().max() > 1e-6:
                raise Hint(f"on {name}: with your tau the weights max(z - tau, 0) do not sum to 1 "
                           f"(largest gap {(torch.clamp(z - got, min=0).sum(-1) - 1).abs().max().item():.3g}).")
            raise Hint(f"on {name}: your tau differs from the expected by up to {(got - want).abs().max().item():.3g}.")

    return report("sparsemax threshold", check)


# --- 11: the next-token distribution at a temperature ---------------------------------------------


def check_next_token_probs(fn: Callable[[torch.Tensor, float], torch.Tensor]) -> bool:
    """``fn(logits (..., V), temperature) -> probabilities (..., V)``; temperature 0 means greedy (one-hot)."""

    def check() -> None:
        g = torch.Generator().manual_seed(11)
        cases = [(2 * torch.randn(3, 26, generator=g), tau) for tau in (1.0, 0.5, 2.0, 0.05)]
        cases += [(torch.randn(2, 4, 7, generator=g), 1.5), (torch.tensor([[1.0, 3.0, 3.0 - 1e-3, -2.0]]), 0.0),
                  (30 * torch.randn(5, 1000, generator=g), 0.0)]
        for logits, tau in cases:
            name = f"logits {tuple(logits.shape)} at temperature {tau}"
            got = expect_tensor(fn(logits.clone(), tau), "the probabilities")
            if got.shape != logits.shape:
                raise Hint(f"on {name}: the result should have the logits' shape {tuple(logits.shape)}, got {tuple(got.shape)}.")
            got = got.float()
            if tau == 0:
                want = torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[-1]).float()
                if not torch.allclose(got, want):
                    raise Hint(f"on {name}: temperature 0 is greedy decoding: all probability on the largest logit "
                               "(a one-hot row); dividing by 0 does not get you there.")
                continue
            want = torch.softmax(logits / tau, -1)
            if torch.allclose(got, want, atol=1e-5):
                continue
            if torch.allclose(got, torch.softmax(logits * tau, -1), atol=1e-5):
                raise Hint(f"on {name}: you multiplied by the temperature; divide the logits by it.")
            if torch.allclose(got, torch.softmax(logits, -1), atol=1e-5):
                raise Hint(f"on {name}: the temperature has no effect in your function: use softmax(logits / temperature).")
            if not torch.allclose(got.sum(-1), torch.ones(logits.shape[:-1]), atol=1e-4):
                raise Hint(f"on {name}: each row over the vocabulary (the last axis) must sum to 1.")
            raise Hint(f"on {name}: your probabilities differ from softmax(logits / temperature) by up to "
                       f"{(got - want).abs().max().item():.3g}.")

    return report("next-token probabilities", check)


# --- 12: positions with a marker beside them -------------------------------------------------------


def _beside_reference(tokens: torch.Tensor, marker_id: int) -> torch.Tensor:
    marker = tokens == marker_id
    beside = torch.zeros_like(marker)
    beside[:, 1:] |= marker[:, :-1]
    beside[:, :-1] |= marker[:, 1:]
    return beside


def check_marker_beside(fn: Callable[[torch.Tensor, int], torch.Tensor]) -> bool:
    """``fn(tokens (B, n), marker_id) -> (B, n) bool``: the previous or the next token is a marker."""

    def check() -> None:
        g = torch.Generator().manual_seed(12)
        cases = [
            ("one marker in the middle", torch.tensor([[0, 1, 6, 2, 3]]), 6),
            ("a marker at both ends", torch.tensor([[6, 0, 1, 2, 6]]), 6),
            ("two markers side by side", torch.tensor([[0, 6, 6, 1, 2, 3]]), 6),
            ("no marker at all", torch.tensor([[0, 1, 2], [3, 4, 5]]), 6),
            ("sequences of length 1 and a marker id of 0", torch.tensor([[0], [1]]), 0),
            ("length 2", torch.tensor([[3, 1], [1, 3]]), 3),
            ("a random batch (500, 12)", torch.randint(0, 7, (500, 12), generator=g), 6),
        ]
        for name, tokens, marker_id in cases:
            got = expect_tensor(fn(tokens.clone(), marker_id), "the result")
            want = _beside_reference(tokens, marker_id)
            if got.shape != want.shape:
                raise Hint(f"on {name}: the result should have shape {tuple(want.shape)} (B, n), got {tuple(got.shape)}.")
            got = got.bool()
            if torch.equal(got, want):
                continue
            marker = tokens == marker_id
            if torch.equal(got, torch.roll(marker, 1, 1) | torch.roll(marker, -1, 1)):
                raise Hint(f"on {name}: torch.roll wraps around: the first position has no previous token and the "
                           "last has no next one.")
            if torch.equal(got, want | marker):
                raise Hint(f"on {name}: you also marked the markers themselves; only the NEIGHBOURS of a marker count.")
            left, right = torch.zeros_like(marker), torch.zeros_like(marker)
            left[:, 1:], right[:, :-1] = marker[:, :-1], marker[:, 1:]
            if torch.equal(got, left) or torch.equal(got, right):
                raise Hint(f"on {name}: you looked on one side only: a marker before OR after the position counts.")
            wrong = (got != want).nonzero()[0].tolist()
            raise Hint(f"on {name}: wrong at sequence {wrong[0]}, position {wrong[1]} "
                       f"(tokens {tokens[wrong[0]].tolist()}).")

    return report("marker beside", check)


# --- 13: where the peak of each token step sits ---------------------------------------------------


def _offset_share_reference(weights: torch.Tensor, lengths: torch.Tensor, offset: int) -> float:
    t = torch.arange(weights.shape[1])
    mirror = lengths[:, None] - 1 - t
    steps = t < lengths[:, None]
    return ((weights.argmax(-1) == mirror + offset) & steps).sum().item() / steps.sum().item()


def check_argmax_offset_share(fn: Callable[[torch.Tensor, torch.Tensor, int], float]) -> bool:
    """``fn(weights (N, T_out, T_in), lengths (N,), offset) -> float``: the share of token steps t < n whose
    largest weight sits at the mirrored position m(t) = n - 1 - t plus ``offset``."""

    def check() -> None:
        g = torch.Generator().manual_seed(13)
        lengths = torch.tensor([4, 7, 5, 10, 4])
        w = torch.softmax(3 * torch.randn(5, 11, 10, generator=g), -1)
        for b, n in enumerate(lengths.tolist()):
            w[b, n + 1 :] = 0  # padded steps
            w[b, :, n:] = 0  # padded source positions
            w[b, n] = 0
            w[b, n, 0] = 1  # the <eos> step looks at position 0
            for t in range(0, n, 2):
                w[b, t] = 0
                w[b, t, min(n - 1, n - t)] = 1  # every other step: one step beside the mirror (or on it at t=0)
        cases = [(offset, w, lengths) for offset in (0, 1, -1, 2)]
        shuffled = torch.randperm(5, generator=g)
        cases.append((1, w[shuffled], lengths[shuffled]))
        for offset, weights, lens in cases:
            name = f"offset {offset:+d} on a padded batch with lengths {lens.tolist()}"
            got = fn(weights.clone(), lens.clone(), offset)
            try:
                got = float(got)
            except (TypeError, ValueError):
                raise Hint(f"on {name}: return one number (a share between 0 and 1), got {type(got).__name__}.") from None
            want = _offset_share_reference(weights, lens, offset)
            if math.isclose(got, want, abs_tol=1e-6):
                continue
            t = torch.arange(weights.shape[1])
            steps_with_eos = t <= lens[:, None]
            mirror = lens[:, None] - 1 - t
            hit = weights.argmax(-1) == mirror + offset
            if math.isclose(got, (hit & steps_with_eos).sum().item() / steps_with_eos.sum().item(), abs_tol=1e-6):
                raise Hint(f"on {name}: you counted the <eos> step; only the n token steps t < n have a mirrored position.")
            if math.isclose(got, hit.float().mean().item(), abs_tol=1e-6):
                raise Hint(f"on {name}: you averaged over padded steps too; keep only the steps t < n of each example.")
            if math.isclose(got, _offset_share_reference(weights, lens, -offset), abs_tol=1e-6) and offset:
                raise Hint(f"on {name}: the sign of the offset is flipped: the position is m(t) + offset.")
            if any(math.isclose(got, _offset_share_reference(weights, lens, offset + k), abs_tol=1e-6) for k in (1, -1)):
                raise Hint(f"on {name}: your mirrored position is one off: m(t) = n - 1 - t (positions count from 0).")
            per_sequence = [hit[b, :n].float().mean().item() for b, n in enumerate(lens.tolist())]
            if math.isclose(got, sum(per_sequence) / len(per_sequence), abs_tol=1e-6):
                raise Hint(f"on {name}: you averaged the share of each sequence, then over the sequences; pool all "
                           "token steps instead (a sequence of length 10 has 10 steps, one of length 4 has 4).")
            raise Hint(f"on {name}: expected {want:.4f}, got {got:.4f}.")

    return report("argmax offset share", check)


# --- 14: slope per doubling -------------------------------------------------------------------------


def check_slopes(fn: Callable[[list, list], list]) -> bool:
    """``fn(lengths, times) -> slopes``: the local log-log slope between each pair of neighbouring lengths."""

    def check() -> None:
        cases = [
            ("an exact T^2 law", [16, 32, 64, 128], [1e-5 * T**2 for T in (16, 32, 64, 128)]),
            ("an exact T^1.5 law on lengths that are not doublings", [100, 300, 1000], [T**1.5 for T in (100, 300, 1000)]),
            ("a flat start and a jump", [64, 128, 256, 512, 1024], [1.0, 1.1, 2.0, 16.0, 64.0]),
            ("two lengths only", [512, 1024], [0.02, 0.081]),
        ]
        for name, lengths, times in cases:
            got = _as_float_list(fn(list(lengths), list(times)), "the slopes")
            want = [math.log(t1 / t0) / math.log(T1 / T0) for T0, T1, t0, t1 in zip(lengths, lengths[1:], times, times[1:])]
            if len(got) != len(want):
                raise Hint(f"on {name}: {len(lengths)} lengths give {len(want)} slopes (one per neighbouring pair), "
                           f"got {len(got)}.")
            if all(math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9) for a, b in zip(got, want)):
                continue
            ratios = [math.log2(t1 / t0) for t0, t1 in zip(times, times[1:])]
            if all(math.isclose(a, b, rel_tol=1e-6) for a, b in zip(got, ratios)):
                raise Hint(f"on {name}: you divided by log 2 (one doubling) although the lengths do not double; "
                           "divide log(t1/t0) by log(T1/T0).")
            if all(math.isclose(a, t1 / t0, rel_tol=1e-6) for a, t0, t1 in zip(got, times, times[1:])):
                raise Hint(f"on {name}: that is the time ratio t1/t0; the slope is its logarithm over log(T1/T0).")
            raise Hint(f"on {name}: expected {[round(w, 3) for w in want]}, got {[round(v, 3) for v in got]}.")

    return report("slopes per doubling", check)
