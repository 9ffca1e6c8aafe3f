"""The training loop the small models of the course share."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn

from ..core.validation import require_nonnegative_int, require_positive_float, require_positive_int


def train_steps(
    model: nn.Module,
    batch_loss: Callable[[torch.Generator], Tensor],
    *,
    steps: int,
    lr: float,
    seed: int = 0,
    clip: float | None = None,
    log_every: int = 0,
    on_step: Callable[[int], None] | None = None,
) -> list[float]:
    """Train ``model`` with Adam for ``steps`` steps; return the loss of every step.

    ``batch_loss(generator)`` draws a fresh batch with ``generator`` (a
    ``torch.Generator`` seeded with ``seed``, so the data are the same on every
    run), runs the model on it and returns the scalar loss. ``clip`` caps the
    gradient norm (None: no clipping). ``log_every > 0`` prints the loss every
    that many steps; ``on_step(step)`` (1-based) runs after every step.
    """
    require_positive_int(steps=steps)
    require_nonnegative_int(log_every=log_every)
    require_positive_float(lr=lr)
    if clip is not None:
        require_positive_float(clip=clip)
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    losses = []
    for step in range(1, steps + 1):
        loss = batch_loss(generator)
        optimizer.zero_grad()
        loss.backward()
        if clip is not None:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        losses.append(loss.item())
        if log_every and step % log_every == 0:
            print(f"step {step:4d}  loss {loss.item():.4f}")
        if on_step is not None:
            on_step(step)
    return losses
