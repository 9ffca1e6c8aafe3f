"""Checkers for lesson 08 (attention vs no attention): token accuracy, exact match and accuracy by
length, on a hand-made batch, a perfect prediction and hidden random batches (source lengths 1..15)."""

from __future__ import annotations

import operator

import torch

from .compare import Answers, call_unchanged, fraction_close
from .registry import register
from .report import Hint, StudentCrash, as_float, failing_case, generator, kind_of

NOTEBOOK = "08_attention_vs_no_attention"
_TRAINING = "course_utils.models.seq2seq_training"


# Hand-made reversal predictions (PAD = 0, EOS = 2, symbols 3..11); each row shows one situation.
_ACC_TARGET = (
    [4, 3, 2, 0, 0, 0, 0],  # source length 2: right
    [5, 6, 7, 2, 0, 0, 0],  # length 3: right, then garbage after <eos> (that must not count)
    [8, 9, 10, 11, 2, 0, 0],  # length 4: every symbol right, but no <eos> (the model did not stop)
    [3, 4, 5, 6, 7, 8, 2],  # length 6: one wrong symbol
    [9, 9, 9, 9, 9, 9, 2],  # length 6: stopped far too early
    [6, 7, 2, 0, 0, 0, 0],  # length 2: both symbols wrong
)
_ACC_PRED = (
    [4, 3, 2, 0, 0, 0, 0],
    [5, 6, 7, 2, 9, 9, 0],
    [8, 9, 10, 11, 11, 11, 11],
    [3, 4, 5, 9, 7, 8, 2],
    [9, 2, 0, 0, 0, 0, 0],
    [7, 6, 2, 0, 0, 0, 0],
)
_ACC_LENGTHS = (2, 3, 4, 6, 6, 2)  # no length 5: only lengths present are keys


def _acc_case() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return torch.tensor(_ACC_PRED), torch.tensor(_ACC_TARGET), torch.tensor(_ACC_LENGTHS)


def _random_acc_case(g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A hidden random batch: 7..16 sequences of source length 1..15, every kind of prediction error."""
    N = int(torch.randint(7, 17, (1,), generator=g))
    lengths = torch.randint(1, 16, (N,), generator=g)
    T = int(lengths.max()) + 3
    target = torch.zeros(N, T, dtype=torch.long)
    pred = torch.zeros(N, T, dtype=torch.long)
    for b, L in enumerate(lengths.tolist()):
        row = torch.cat([torch.randint(3, 12, (L,), generator=g), torch.tensor([2])])
        target[b, : L + 1] = row
        out = row.clone()
        # every kind once, then a second early stop (so that "never stops" and "stops early" are not as many),
        # then kinds other than those two
        kind = b % 6 if b < 6 else 3 if b == 6 else (0, 1, 4, 5)[int(torch.randint(0, 4, (1,), generator=g))]
        if kind == 1:  # one wrong symbol
            k = int(torch.randint(0, L, (1,), generator=g))
            out[k] = 3 + (out[k] - 3 + 1) % 9
        elif kind == 2:  # never stops: a symbol where <eos> belongs, and more after it
            out[L] = 3
            pred[b, L + 1:] = 4
        elif kind == 3:  # stops early
            k = int(torch.randint(0, L, (1,), generator=g))
            out[k:] = 0
            out[k] = 2
        elif kind == 4:  # right, then garbage after <eos> where the target is padding
            pred[b, L + 1:] = 5
        elif kind == 5:  # everything wrong
            out = torch.where(out == 2, torch.tensor(3), 3 + (out - 3 + 4) % 9)
        pred[b, : L + 1] = out
    return pred, target, lengths


def _real(target: torch.Tensor) -> torch.Tensor:
    return target != 0


def _token_acc_ref(pred, target) -> float:
    real = _real(target)
    return ((pred == target) & real).sum().item() / real.sum().item()


def _exact_ref(pred, target) -> float:
    return ((pred == target) | ~_real(target)).all(dim=1).float().mean().item()


def _by_length_ref(pred, target, lengths, metric=_token_acc_ref) -> dict[int, float]:
    return {int(n): metric(pred[lengths == n], target[lengths == n]) for n in torch.unique(lengths).tolist()}


def _token_acc_mistakes(pred, target) -> list[tuple[str, float]]:
    real, right = _real(target), pred == target
    symbols = real & (target != 2)
    per_row = (right & real).sum(1).float() / real.sum(1)
    return [
        ("you counted the padding positions: only positions where the TARGET is not <pad> are tokens.",
         right.float().mean().item()),
        ("you divided by every position, padding included: divide by the number of non-pad target tokens.",
         (right & real).sum().item() / target.numel()),
        ("you chose the positions by the PREDICTION (pred != PAD): which positions count is decided by the "
         "target alone; what the model writes after its <eos> is ignored, a missing token is wrong.",
         (right & (pred != 0)).sum().item() / (pred != 0).sum().item()),
        ("<eos> is a target token too: count it (only <pad> is excluded). A model that does not stop is wrong "
         "at the <eos> position.", (right & symbols).sum().item() / symbols.sum().item()),
        ("you averaged the per-sequence accuracies: pool all tokens of all sequences instead (correct tokens / "
         "all real tokens), so that a long sequence weighs more than a short one.", per_row.mean().item()),
        ("that is the exact-sequence accuracy (whole sequences right): token accuracy counts single tokens.",
         _exact_ref(pred, target)),
    ]


def _exact_mistakes(pred, target) -> list[tuple[str, float]]:
    real, right = _real(target), pred == target
    symbols = real & (target != 2)
    return [
        ("that is the token accuracy: a sequence counts only if ALL its target tokens are right.",
         _token_acc_ref(pred, target)),
        ("you compared the padding positions too: what the model writes where the target is <pad> does not "
         "count (e.g. use (pred == target) | (target == PAD)).", right.all(dim=1).float().mean().item()),
        ("the <eos> position must be right too: a model that never stops, or stops too early, is not exactly right.",
         (right | ~symbols).all(dim=1).float().mean().item()),
        ("you used any() instead of all(): one right token does not make a sequence right.",
         (right & real).any(dim=1).float().mean().item()),
        ("you compared only the positions before the prediction's own <eos>: a model that stops too early (or writes "
         "<eos> nowhere) is not exactly right. Compare every position where the TARGET is not <pad>.",
         _until_predicted_eos(pred, target)),
    ]


def _until_predicted_eos(pred, target) -> float:
    rows = []
    for p, t in zip(pred.tolist(), target.tolist()):
        stop = p.index(2) if 2 in p else len(p)
        rows.append(p[:stop] == t[:stop])
    return sum(rows) / len(rows)


def _fraction_cases(seed: int):
    pred, target, _ = _acc_case()
    yield "the hand-made example", pred, target
    yield "a perfect prediction", target.clone(), target
    g = generator(seed)
    for k in range(2):
        p, t, _ = _random_acc_case(g)
        yield f"hidden random batch {k + 1}, pred and target of shape {tuple(p.shape)}", p, t


def _fraction_otherwise(case) -> str:
    if case.got > 1:
        return f"you returned {case.got:g}, more than 1: return a fraction (divide the count by the total)."
    return (f"you returned {case.got:.4f}, expected {case.expected:.4f}. Compare the prediction with the target "
            "only where the target is not <pad>.")


def _fraction(fn, name: str, reference, mistakes, seed: int) -> None:
    answers = Answers(fraction_close, _fraction_otherwise)
    for desc, p, t in _fraction_cases(seed):
        with failing_case(desc):
            got = as_float(call_unchanged(fn, p, t, names=("pred", "target"), case=desc), name, "should return")
        answers.add(desc, got, reference(p, t), lambda p=p, t=t: [
            ("you returned a percentage: return a fraction between 0 and 1.", 100 * reference(p, t)), *mistakes(p, t)])
    answers.verdict()


@register("token_accuracy", twins={"token_accuracy": f"{_TRAINING}.token_accuracy"})
def check_token_accuracy(fn, seed: int) -> None:
    """Check ``fn(pred (N, T), target (N, T)) -> float``: right tokens / non-pad target tokens, pooled, on the
    hand-made example, a perfect prediction and 2 hidden random batches (source lengths 1..15)."""
    _fraction(fn, "token_accuracy", _token_acc_ref, _token_acc_mistakes, seed)


@register("exact_match", twins={"exact_match_accuracy": f"{_TRAINING}.exact_match_accuracy",
                                "sequence_correct": f"{_TRAINING}.sequence_correct"})
def check_exact_match(fn, seed: int) -> None:
    """Check ``fn(pred (N, T), target (N, T)) -> float``: fraction of sequences right at every non-pad target
    position, on the same 4 batches as ``check_token_accuracy``."""
    _fraction(fn, "exact_match", _exact_ref, _exact_mistakes, seed)


def _as_length(key) -> int:
    if isinstance(key, bool) or isinstance(key, torch.Tensor):
        raise TypeError
    return operator.index(key)  # Python or NumPy integers


def _by_length_answer(fn, pred, target, lengths, desc: str) -> dict[int, float]:
    try:
        result = call_unchanged(fn, pred, target, lengths, names=("pred", "target", "src_lengths"), case=desc)
    except StudentCrash as crash:
        if type(crash.error).__name__ == "ZeroDivisionError":
            raise Hint("division by zero: a length with no sequences has no accuracy. Use only the source lengths "
                       "present in the batch (e.g. torch.unique(src_lengths)), not a range of lengths.") from None
        raise
    if not isinstance(result, dict):
        if type(result).__name__ == "dict":  # a dict that is not plain data (seen from another process)
            raise Hint("the keys should be the source lengths as ints and the values numbers ({5: 0.8, ...}); your dict "
                       "has other keys or values.")
        raise Hint(f"return a dict {{source length: accuracy}}, got {kind_of(result)}.")
    expected = _by_length_ref(pred, target, lengths)
    keys = list(result)
    if any(isinstance(k, torch.Tensor) for k in keys):
        raise Hint("your keys are tensors: use Python ints, e.g. int(n), so that result[5] finds length 5 "
                   "(a tensor key is never equal to an int key in a dict).")
    try:
        result = {_as_length(k): v for k, v in result.items()}
    except TypeError:
        raise Hint(f"the keys should be the source lengths as ints, got {[type(k).__name__ for k in keys]}.") from None
    got_keys, want = set(result), set(expected)
    if got_keys == {n + 1 for n in want}:
        raise Hint("your lengths are one too large: you counted the target tokens, which include <eos>. "
                   "Use the source lengths you are given.")
    if got_keys == {n - 1 for n in want}:
        raise Hint("your lengths are one too small: use the source lengths you are given.")
    if got_keys > want:
        raise Hint(f"you returned lengths that do not occur ({sorted(got_keys - want)}): only the source lengths "
                   "present in the batch are keys (no 0/0 buckets).")
    if got_keys < want:
        raise Hint(f"lengths {sorted(want - got_keys)} are missing: every source length present in the batch "
                   "needs a key, the shortest and the longest included.")
    if got_keys != want and got_keys == set(range(min(got_keys), max(got_keys) + 1)) and got_keys & want:
        raise Hint(f"your keys {sorted(got_keys)} look like a range of lengths, but the source lengths present are "
                   f"{sorted(want)}: a range can skip the longest length (range stops before its end) and include "
                   "lengths with no sequences. Use the lengths present, e.g. torch.unique(src_lengths).")
    if got_keys != want:
        raise Hint(f"your keys {sorted(got_keys)} are not the source lengths present, {sorted(want)}: bucket the "
                   "sequences by the source lengths you are given, not by counting tokens of pred or target.")
    return {k: as_float(v, f"the value for length {k}") for k, v in result.items()}


def _by_length_mistakes(pred, target, lengths) -> list[tuple[str, dict]]:
    want = set(_by_length_ref(pred, target, lengths))
    return [
        ("your values are exact-sequence accuracies: the task asks for TOKEN accuracy per length.",
         _by_length_ref(pred, target, lengths, _exact_ref)),
        ("you counted the padding positions: only positions where the target is not <pad> are tokens.",
         _by_length_ref(pred, target, lengths, lambda p, t: (p == t).float().mean().item())),
        ("you left out the <eos> position: it is a target token too (only <pad> is excluded).",
         _by_length_ref(pred, target, lengths, lambda p, t: ((p == t) & (t > 2)).sum().item() / (t > 2).sum().item())),
        ("every length got the accuracy of the whole batch: compute it over the sequences of that length only.",
         {k: _token_acc_ref(pred, target) for k in want}),
    ]


def _same_values(got: dict, want: dict) -> bool:
    return set(got) == set(want) and all(fraction_close(got[k], want[k]) for k in want)


def _by_length_otherwise(case) -> str:
    k = next(k for k in sorted(case.expected) if not fraction_close(case.got[k], case.expected[k]))
    return (f"for source length {k} you returned {case.got[k]:.4f}, expected {case.expected[k]:.4f}: the token "
            "accuracy of the sequences with that source length.")


@register("accuracy_by_length", twins={"accuracy_by_length": f"{_TRAINING}.accuracy_by_length"})
def check_accuracy_by_length(fn, seed: int) -> None:
    """Check ``fn(pred (N, T), target (N, T), src_lengths (N,)) -> {length: token accuracy}`` on the hand-made
    example and 2 hidden random batches (source lengths 1..15, with gaps)."""
    g = generator(seed)
    cases = [("the hand-made example", *_acc_case())]
    for k in range(2):
        p, t, lengths = _random_acc_case(g)
        cases.append((f"hidden random batch {k + 1}: {len(lengths)} sequences, source lengths "
                      f"{sorted(set(lengths.tolist()))}", p, t, lengths))
    answers = Answers(_same_values, _by_length_otherwise)
    for desc, pred, target, lengths in cases:
        with failing_case(desc):
            got = _by_length_answer(fn, pred, target, lengths, desc)
        answers.add(desc, got, _by_length_ref(pred, target, lengths),
                    lambda a=(pred, target, lengths): _by_length_mistakes(*a))
    answers.verdict()
