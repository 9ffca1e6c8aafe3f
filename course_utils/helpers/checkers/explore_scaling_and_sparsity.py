"""Checker for lesson 10 (scaling and sparsity): ``sparsemax_threshold``, the threshold tau of every
row with sparsemax(z) = max(z - tau, 0), on a single key, equal scores, a score that stands out by more
than 1, large batches and a hidden random batch."""

from __future__ import annotations

from collections.abc import Callable

import torch

from .compare import ALLCLOSE, Answers, call_unchanged, close, expect_like, largest_difference, same_tensor
from .registry import register
from .report import Hint, call, expect_tensor, failing_case, generator

NOTEBOOK = "10_explore_scaling_and_sparsity"


def _tau_reference(z: torch.Tensor) -> torch.Tensor:
    z_sorted = z.sort(dim=-1, descending=True).values
    k = torch.arange(1, z.shape[-1] + 1, dtype=z.dtype)
    cumsum = z_sorted.cumsum(-1)
    kept = (1 + k * z_sorted > cumsum).sum(-1, keepdim=True)
    return (cumsum.gather(-1, kept - 1) - 1) / kept


def _tau_cases(seed: int) -> list[tuple[str, torch.Tensor]]:
    g = torch.Generator().manual_seed(10)
    cases = [
        ("the worked example z = [1.2, 0.9, 0.1, -0.5]", torch.tensor([[1.2, 0.9, 0.1, -0.5]], dtype=torch.float64)),
        ("a row whose top score stands out by more than 1 (only one key kept)",
         torch.tensor([[5.0, 1.0, 0.5]], dtype=torch.float64)),
        ("equal scores (every key kept)", torch.zeros(2, 6, dtype=torch.float64)),
        ("a single key (m = 1)", torch.tensor([[0.3], [-2.0]], dtype=torch.float64)),
        ("unsorted rows of a batch (4, 6, 10)", 2 * torch.randn(4, 6, 10, generator=g, dtype=torch.float64)),
        ("large scores, 3 x 300", 40 * torch.randn(3, 300, generator=g, dtype=torch.float64)),
        ("float32 scores (8, 12), as in the notebook", 2 * torch.randn(8, 12, generator=g)),
    ]
    g = generator(seed)
    m = int(torch.randint(2, 21, (1,), generator=g))
    cases.append((f"a hidden random batch (3, 5, {m})", torch.randn(3, 5, m, generator=g, dtype=torch.float64)))
    return cases


def _mistakes(z: torch.Tensor) -> list[tuple[str, Callable[[], torch.Tensor]]]:
    return [
        ("you returned z_(1) - 1, which is only a lower bound of tau; find how many keys k(z) are kept, then "
         "tau = (sum of the k largest - 1) / k.", lambda: z.amax(-1, keepdim=True) - 1),
        ("you kept every key (tau = (sum of all - 1) / m). Keep only the keys with 1 + k z_(k) > sum of the k largest.",
         lambda: (z.sum(-1, keepdim=True) - 1) / z.shape[-1]),
    ]


def _otherwise(case) -> str:
    z, got = case.info["z"], case.got
    gap = (torch.clamp(z - got, min=0).sum(-1) - 1).abs().max().item()
    if gap > 1e-6:
        return f"with your tau the weights max(z - tau, 0) do not sum to 1 (largest gap {gap:.3g})."
    return f"your tau differs from the expected by up to {largest_difference(got, case.expected):.3g}."


@register("sparsemax threshold", takes="sparsemax_threshold")
def check_sparsemax_threshold(fn: Callable[[torch.Tensor], torch.Tensor], seed: int) -> None:
    """``fn(z (..., m)) -> tau (..., 1)``: the threshold with sparsemax(z) = max(z - tau, 0)."""
    answers = Answers(lambda a, b: close(a, b, atol=1e-6, rtol=0), _otherwise)
    for name, z in _tau_cases(seed):
        want = _tau_reference(z)
        with failing_case(f"on {name}"):
            got = expect_tensor(call_unchanged(fn, z, names=("z",), case=f"on {name}"), "tau")
            if got.shape == want.shape[:-1]:
                got = got.unsqueeze(-1)  # (..., ) is fine too
            if got.shape != want.shape:
                raise Hint(f"tau should have shape {tuple(want.shape)} (one threshold per row, keepdim), got "
                           f"{tuple(got.shape)}.")
            if got.is_complex() or got.dtype == torch.bool:
                raise Hint(f"tau should be real numbers, got a {got.dtype} tensor.")
            expect_like(got, z, "tau", why=ALLCLOSE)
            got = got.to(torch.float64)
            if got.isnan().any():
                raise Hint("your tau contains NaN: a 0/0 (a count of kept keys that is 0?) or a NaN from the scores' "
                           "arithmetic. At least the largest score is always kept, so k(z) >= 1.")
            if not close(got, want, atol=1e-6, rtol=0):
                again = call(fn, z.clone(), case=f"on {name}")
                if isinstance(again, torch.Tensor) and not same_tensor(again.reshape(got.shape).double(), got):
                    raise Hint("your function gives different answers for the same input.")
        answers.add(f"on {name}", got, want, lambda z=z: _mistakes(z), z=z)
    answers.verdict()
