"""Training, greedy decoding and accuracy for the seq2seq models (teacher forcing, Adam, cross-entropy)."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..core.validation import (
    require_int,
    require_nonnegative_int,
    require_positive_float,
    require_positive_int,
    require_same_device_and_dtype,
    require_tensor,
)
from .seq2seq_data import PAD_ID, ReversalData, iterate_batches
from .training import TrainHistory, Trainer, early_stop


def sequence_loss(logits: Tensor, tgt: Tensor, pad_id: int = PAD_ID) -> Tensor:
    """Mean cross-entropy over the non-pad target tokens: logits ``(B, T_out, V)``, tgt ``(B, T_out)``."""
    require_tensor("logits", logits, floating=True)
    require_tensor("tgt", tgt, integer=True)
    require_int(pad_id=pad_id)
    if logits.dim() != 3 or logits.shape[:2] != tgt.shape:
        raise ValueError(f"logits (B, T_out, V) and tgt (B, T_out) do not fit: {tuple(logits.shape)}, {tuple(tgt.shape)}")
    if tgt.device.type != "meta" and not (tgt != pad_id).any():
        raise ValueError(f"tgt {tuple(tgt.shape)} holds only padding (pad_id={pad_id}): no token to score, the mean "
                         "would be NaN")
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1), ignore_index=pad_id)


def train_seq2seq(
    model: nn.Module,
    data: ReversalData,
    *,
    epochs: int = 5,
    batch_size: int = 64,
    lr: float = 3e-3,
    clip: float | None = 1.0,
    final_lr: float | None = None,
    by_length: bool = False,
    device: torch.device | str = "cpu",
    seed: int = 0,
    on_epoch_end: Callable[[int, nn.Module], None] | None = None,
    stop_when: Callable[[nn.Module], bool | float] | None = None,
    target: float | None = None,
    check_every: int = 1,
    name: str = "train_seq2seq",
) -> TrainHistory:
    """Train with teacher forcing, Adam and cross-entropy that ignores ``PAD_ID`` (the course's one loop,
    ``training.Trainer``); built in notebook 04.

    The batch order comes from a generator seeded with ``seed``. ``clip`` caps the
    gradient norm (None: no clipping). With ``final_lr``, the learning rate falls
    linearly from ``lr`` to ``final_lr`` over all steps (None: constant ``lr``).
    ``by_length``: batches of equal-length sources (faster; see ``iterate_batches``).

    ``on_epoch_end(epoch, model)``, if given, is called after each epoch with the epoch
    number ``1, ..., epochs`` and the model (on ``device``), to measure or save it between
    epochs. It may switch the model to eval mode and draw random numbers: the global
    random state is restored after the call and the model put back in training mode, so
    the training (losses and parameters) is the same with or without a callback. Its
    time is not counted in ``seconds``.

    Early stop: ``stop_when(model)`` is checked every ``check_every`` epochs, after ``on_epoch_end``;
    training ends once it is true, or, given ``target``, once the number it returns is ``>= target``
    (see ``training.early_stop``). ``name`` names the training in its record (``COURSE_TRAINING_LOG``).

    The model is moved to ``device`` and left in training mode. Returns the loss history, the wall
    and CPU seconds of the training and why it stopped.
    """
    _check_data(data)
    require_positive_int(epochs=epochs, batch_size=batch_size, check_every=check_every)
    require_nonnegative_int(seed=seed)
    require_positive_float(lr=lr)
    device = torch.device(device)
    model.to(device)

    def batch_loss(batch: ReversalData) -> Tensor:
        batch = batch.to(device)
        logits, _ = model(batch.src, batch.lengths, batch.tgt)
        return sequence_loss(logits, batch.tgt)

    def batches(generator: torch.Generator):
        return iterate_batches(data, batch_size, shuffle=True, by_length=by_length, generator=generator)

    steps = epochs * -(-len(data) // batch_size)  # ceil: the last batch of an epoch may be smaller
    trainer = Trainer(model, batch_loss, batches, lr=lr, epochs=epochs, seed=seed, clip=clip, final_lr=final_lr,
                      decay_steps=steps, size=len, name=name)
    if on_epoch_end is not None:
        trainer.add_callback("on_epoch_end", lambda t: on_epoch_end(t.epoch, t.model))
    if stop_when is not None:
        trainer.add_callback("on_epoch_end", early_stop(stop_when, every=check_every, target=target, event="on_epoch_end"))
    return trainer.run()


def _check_data(data: ReversalData) -> None:
    if not isinstance(data, ReversalData):
        raise TypeError(f"data must be a ReversalData (make_reversal_data), got {type(data).__name__}")


# --- Decoding and metrics -------------------------------------------------------


@torch.no_grad()
def predict(
    model: nn.Module, data: ReversalData, *, device: torch.device | str = "cpu", batch_size: int = 500
) -> Tensor:
    """Greedy predictions ``(N, T_out)`` aligned with ``data.tgt`` (``PAD_ID`` after ``EOS_ID``).

    The model runs on ``device``; the predictions are on the device of ``data`` (the CPU for data
    made by ``make_reversal_data``), so they compare directly with ``data.tgt``.
    """
    _check_data(data)
    require_positive_int(batch_size=batch_size)
    model.to(device).eval()
    out = torch.full_like(data.tgt, PAD_ID)
    for start in range(0, len(data), batch_size):
        index = torch.arange(start, min(start + batch_size, len(data)), device=out.device)
        batch = data.subset(index).to(device)
        tokens, _ = model.greedy_decode(batch.src, batch.lengths, max_len=batch.tgt.shape[1])
        out[index, : tokens.shape[1]] = tokens.to(out.device)
    return out


def _check_pred(pred: Tensor, target: Tensor) -> None:
    require_tensor("pred", pred, integer=True)
    require_tensor("target", target, integer=True)
    require_same_device_and_dtype(same_dtype=False, pred=pred, target=target)
    if pred.shape != target.shape or pred.dim() != 2:
        raise ValueError(f"pred and target must both have shape (N, T_out), got {tuple(pred.shape)} and {tuple(target.shape)}")


def token_accuracy(pred: Tensor, target: Tensor, pad_id: int = PAD_ID) -> float:
    """Fraction of the non-pad target tokens (``<eos>`` included) that ``pred`` gets right, pooled over all sequences."""
    _check_pred(pred, target)
    require_int(pad_id=pad_id)
    real = target != pad_id
    if not real.any():
        raise ValueError(f"target {tuple(target.shape)} holds only padding (pad_id={pad_id}): no token to score")
    return ((pred == target) & real).sum().item() / real.sum().item()


def sequence_correct(pred: Tensor, target: Tensor, pad_id: int = PAD_ID) -> Tensor:
    """Bool ``(N,)``: every non-pad target token (``<eos>`` included) is right; positions where the target is pad do not count."""
    _check_pred(pred, target)
    require_int(pad_id=pad_id)
    return ((pred == target) | (target == pad_id)).all(dim=1)


def exact_match_accuracy(pred: Tensor, target: Tensor, pad_id: int = PAD_ID) -> float:
    """Fraction of sequences that are entirely right (see ``sequence_correct``)."""
    right = sequence_correct(pred, target, pad_id)
    if right.numel() == 0:
        raise ValueError(f"pred and target hold no sequence (shape {tuple(target.shape)}): no accuracy to give")
    return right.float().mean().item()


def accuracy_by_length(
    pred: Tensor, target: Tensor, lengths: Tensor, pad_id: int = PAD_ID, exact: bool = False
) -> dict[int, float]:
    """Token accuracy (or, with ``exact=True``, exact-match accuracy) for each source length.

    Returns ``{source length: accuracy}`` with int keys, sorted by length.
    """
    _check_pred(pred, target)
    require_tensor("lengths", lengths, integer=True)
    require_same_device_and_dtype(same_dtype=False, pred=pred, lengths=lengths)
    if lengths.shape != pred.shape[:1]:
        raise ValueError(f"lengths must have shape ({pred.shape[0]},), got {tuple(lengths.shape)}")
    metric = exact_match_accuracy if exact else token_accuracy
    return {int(n): metric(pred[lengths == n], target[lengths == n], pad_id) for n in torch.unique(lengths).tolist()}


def evaluate(
    model: nn.Module, data: ReversalData, *, device: torch.device | str = "cpu", batch_size: int = 500
) -> dict:
    """Greedy-decode ``data``; return ``token_accuracy``, ``exact_accuracy``, ``by_length`` (token accuracy
    per source length), ``exact_by_length`` and the predictions ``pred`` ``(N, T_out)``."""
    pred = predict(model, data, device=device, batch_size=batch_size)
    return {
        "token_accuracy": token_accuracy(pred, data.tgt),
        "exact_accuracy": exact_match_accuracy(pred, data.tgt),
        "by_length": accuracy_by_length(pred, data.tgt, data.lengths),
        "exact_by_length": accuracy_by_length(pred, data.tgt, data.lengths, exact=True),
        "pred": pred,
    }
