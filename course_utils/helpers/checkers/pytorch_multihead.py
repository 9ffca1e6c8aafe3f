"""Checker for the task of lesson 03b (``nn.MultiheadAttention`` and the mask-convention trap):
``torch_attn_mask(mask, num_heads)``, the course's mask turned into ``nn.MultiheadAttention``'s ``attn_mask``.

The course's mask is bool, True = may attend, shape ``(n, m)`` or ``(B, n, m)``. ``nn.MultiheadAttention``
reads a bool ``attn_mask`` the other way round (True = blocked) and wants a per-sequence mask once per
head, ``(B * h, n, m)``, where row ``b * h + i`` is sequence b, head i. A float mask that gives the same
attention (0 where allowed, -inf where blocked, which ``nn.MultiheadAttention`` adds to the scores) is
accepted too, in float32, the dtype of the notebook's queries (``nn.MultiheadAttention`` rejects a float mask
of another dtype than the queries').

``check_torch_attn_mask`` calls the student's function only with plain tensors and ints and reads only the
tensor it returns (the contract with the grader, ``checkers/__init__.py``): on fixed cases and hidden random ones (n != m, one head,
one sequence, sequences with different masks), it names the mistake it recognises (no inversion, the
copies in the wrong order, one copy instead of one per head, a float 0/1 mask, an in-place change)
and otherwise says which entries differ.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .registry import register
from .report import Hint, call, failing_case, generator

NOTEBOOK = "03b_pytorch_multihead"
QUERY_DTYPE = torch.float32  # the notebook's queries: nn.MultiheadAttention wants a float mask in their dtype


def _reference(mask: torch.Tensor, num_heads: int) -> torch.Tensor:
    blocked = ~mask
    return blocked.repeat_interleave(num_heads, dim=0) if mask.dim() == 3 else blocked


def _as_blocked(result: torch.Tensor, where: str) -> torch.Tensor:
    """The student's mask as bool True = blocked; a float mask counts if it is 0 (keep) / -inf (block)."""
    if result.dtype == torch.bool:
        return result
    if result.dtype.is_floating_point:
        if bool(((result == 0) | (result == float("-inf"))).all()):
            if result.dtype != QUERY_DTYPE:
                raise Hint(f"your 0/-inf mask has dtype {result.dtype}: nn.MultiheadAttention accepts a float mask "
                           f"only in the queries' dtype ({QUERY_DTYPE} in the notebook) and raises on this one. Return "
                           "a bool tensor (True = blocked), which works with queries of any dtype.", where)
            return result == float("-inf")
        if bool(((result == 0) | (result == 1)).all()):
            raise Hint("your mask is a float tensor of 0s and 1s. nn.MultiheadAttention ADDS a float mask to the "
                       "scores (0 keeps a key, -inf blocks it), so a 1.0 blocks nothing: return a bool tensor, "
                       "True = blocked.", where)
        raise Hint("nn.MultiheadAttention adds a float mask to the scores: return a bool tensor (True = blocked) "
                   f"instead; yours has dtype {result.dtype} and values other than 0 and -inf.", where)
    raise Hint(f"return a bool tensor (True = blocked), got dtype {result.dtype}. Careful: ~ on an integer "
               "tensor flips every bit (~1 is -2), it does not swap 0 and 1.", where)


def _check_shape(result: torch.Tensor, mask: torch.Tensor, h: int, where: str) -> None:
    want = tuple(_reference(mask, h).shape)
    got = tuple(result.shape)
    if got == want:
        return
    if mask.dim() == 2:
        if got[-2:] == want:
            raise Hint(f"a 2-D mask stays 2-D, {want} (n, m): nn.MultiheadAttention shares it across the batch "
                       f"and the heads by itself; you returned {got}.", where)
        if got == want[::-1]:
            raise Hint(f"rows are queries and columns keys: return {want} (n, m), not its transpose {got}.", where)
    elif got == (*want[:1], *want[:0:-1]):
        raise Hint(f"rows are queries and columns keys: return {want} (B * num_heads, n, m), not the transpose "
                   f"{got} of each mask.", where)
    else:
        B, n, m = mask.shape
        if got == (B, n, m) and h > 1:
            raise Hint(f"one copy of each sequence's mask per head: nn.MultiheadAttention wants (B * num_heads, n, m) "
                       f"= {want}, got {got}.", where)
        if got == (B, h, n, m):
            raise Hint(f"batch and heads share one axis: reshape (B, num_heads, n, m) = {got} into "
                       f"(B * num_heads, n, m) = {want}.", where)
    raise Hint(f"the mask should have shape {want}, got {got}.", where)


def _check_once(fn: Callable, mask: torch.Tensor, h: int, where: str) -> None:
    given = mask.clone()
    result = call(fn, given, h, case=where)
    if not torch.equal(given, mask):
        raise Hint("your function changed the mask you passed in (in place, e.g. logical_not_() or mask[...] = ...): "
                   "build a new tensor, the course's mask is still needed as it was.", where)
    if not isinstance(result, torch.Tensor):
        raise Hint(f"return a torch.Tensor (the attn_mask), got {type(result).__name__}.", where)
    _check_shape(result, mask, h, where)
    blocked = _as_blocked(result, where)
    want = _reference(mask, h)
    if torch.equal(blocked, want):
        return
    if torch.equal(blocked, ~want):
        raise Hint("not inverted: this course's mask says True = may attend, nn.MultiheadAttention's attn_mask says "
                   "True = blocked. Pass ~mask: as it is, every query would attend only to the keys it must not see.",
                   where)
    if torch.equal(blocked, want.mT):
        raise Hint("rows are queries and columns keys: you returned the transpose of the mask (n and m swapped).", where)
    if mask.dim() == 3:
        for order in (~mask).repeat(h, 1, 1), mask.repeat(h, 1, 1):
            if torch.equal(blocked, order):
                raise Hint("the copies are in the wrong order: repeat(num_heads, 1, 1) stacks all the sequences, "
                           "then all again (row i * B + b). nn.MultiheadAttention reads row b * num_heads + i as "
                           "sequence b, head i: the heads of one sequence side by side (repeat_interleave on dim 0)."
                           + ("" if torch.equal(order, (~mask).repeat(h, 1, 1)) else " And invert it: True = blocked."),
                           where)
    wrong = (blocked != want).nonzero()[0].tolist()
    raise Hint(f"entry {tuple(wrong)} should be {bool(want[tuple(wrong)])} (True = blocked), got "
               f"{bool(blocked[tuple(wrong)])}; {int((blocked != want).sum())} of {want.numel()} entries differ.", where)


def _random_mask(shape: tuple[int, ...], g: torch.Generator) -> torch.Tensor:
    """A bool mask with at least one allowed key per row, not the same for every sequence of a batch
    (when there are two keys or more)."""
    mask = torch.rand(shape, generator=g) < 0.6

    def give_every_query_a_key() -> None:
        rows = mask.view(-1, shape[-1])
        empty = ~rows.any(-1)
        rows[empty, torch.randint(shape[-1], (int(empty.sum()),), generator=g)] = True

    give_every_query_a_key()
    if len(shape) == 3 and shape[0] > 1 and bool((mask == mask[:1]).all()):
        mask[-1] = ~mask[0]  # with m >= 2 keys it stays different from mask[0] after the next line
        give_every_query_a_key()
    return mask


def _cases(seed: int) -> list[tuple[str, torch.Tensor, int]]:
    g = generator(seed)
    causal = torch.ones(5, 5, dtype=torch.bool).tril()
    keep = torch.tensor([[True, True, True, False, False], [True] * 5]).unsqueeze(1)
    cases = [
        ("a causal mask (5, 5), num_heads=8", causal, 8),
        ("a mask (3, 7) with n = 3 queries, m = 7 keys, num_heads=2", _random_mask((3, 7), g), 2),
        ("causal and padding, (2, 5, 5): a different mask per sequence, num_heads=8", causal & keep, 8),
        ("one sequence (1, 4, 4), num_heads=1", _random_mask((1, 4, 4), g), 1),
        ("(3, 4, 6), num_heads=1", _random_mask((3, 4, 6), g), 1),
    ]
    for _ in range(4):  # hidden: the seed repeats them
        B, n, m, h = (int(v) for v in torch.randint(1, 7, (4,), generator=g))
        B, m, h = B % 3 + 2, m + 1, h % 4 + 2  # two or more sequences, keys and heads: the order of the copies matters
        cases.append((f"hidden mask ({B}, {n}, {m}), num_heads={h}", _random_mask((B, n, m), g), h))
    return cases


@register("torch_attn_mask")
def check_torch_attn_mask(fn: Callable[[torch.Tensor, int], torch.Tensor], seed: int) -> None:
    """Check ``fn(mask, num_heads)``: the course's bool mask (True = may attend) of shape ``(n, m)`` or
    ``(B, n, m)`` -> ``nn.MultiheadAttention``'s ``attn_mask`` for the same attention (bool, True = blocked;
    ``(n, m)``, or ``(B * num_heads, n, m)`` with row ``b * num_heads + i`` for sequence b, head i)."""
    for where, mask, h in _cases(seed):
        with failing_case(where):
            _check_once(fn, mask, h, where)
