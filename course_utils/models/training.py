"""The course's one training loop, after minGPT's ``Trainer``: Adam, gradient clipping, a linear
learning-rate decay, named callbacks, an early stop and a training record.

Every trainer of the course runs on it: ``train_steps`` below (a fresh batch every step, for the
head task, the recall task and the language model) and ``train_seq2seq`` (epochs over a data set).

    trainer = Trainer(model, batch_loss, batches, lr=3e-3, epochs=5)
    trainer.add_callback("on_epoch_end", lambda t: print(t.epoch, t.history.epoch_losses[-1]))
    history = trainer.run()

A callback ``fn(trainer)`` runs after every optimizer step (``"on_step_end"``) or epoch
(``"on_epoch_end"``); it reads ``trainer.model``, ``.step``, ``.epoch``, ``.loss``, ``.history`` and may
call ``trainer.stop(reason)``. A callback that only measures leaves the training as it was: it runs
with the global random state forked, the model goes back to training mode after it, and its time
is not counted as training time. ``early_stop`` is such a callback.

Training record: where the environment variable ``COURSE_TRAINING_LOG`` names a file, every run
appends one JSON line to it (``write_record``); ``python -m course_utils.authoring.nbtools benchmark``
reads them.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor, nn

from ..core.validation import require_nonnegative_int, require_positive_float, require_positive_int

LOG_VARIABLE = "COURSE_TRAINING_LOG"
EVENTS = ("on_step_end", "on_epoch_end")


class Adam:
    """Adam (Kingma & Ba, 2015) as ``torch.optim.Adam`` computes it on the CPU, bit for bit.

    The course's own few lines, because every ``torch.optim`` optimizer imports ``torch._dynamo`` when
    it is made (about a second of CPU in each fresh process: every notebook that trains, every test
    worker). For each parameter ``p`` with gradient ``g`` at its step ``t`` (the steps in which it had a gradient):
    ``m = lerp(m, g, 1 - beta1)``, ``v = beta2 v + (1 - beta2) g^2``,
    ``p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)``.
    """

    def __init__(self, params: Iterable[nn.Parameter], lr: float, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8) -> None:
        require_positive_float(lr=lr, eps=eps)
        if isinstance(params, Tensor):  # as torch.optim does: one tensor is not an iterable of parameters
            raise TypeError("params must be an iterable of tensors (model.parameters(), or [p] for one), got a "
                            f"{type(params).__name__}")
        self.params = list(params)
        if not self.params or not all(isinstance(p, Tensor) for p in self.params):
            raise ValueError(f"params must be a non-empty iterable of tensors, got {len(self.params)} items of types "
                             f"{sorted({type(p).__name__ for p in self.params})}")
        if (not isinstance(betas, (tuple, list)) or len(betas) != 2
                or not all(isinstance(b, (int, float)) and not isinstance(b, bool) and 0 <= b < 1 for b in betas)):
            raise ValueError(f"betas must be two numbers in [0, 1), (beta1, beta2), got {betas!r}")
        self.lr, self.betas, self.eps = lr, (float(betas[0]), float(betas[1])), eps
        self.t = [0] * len(self.params)  # steps per parameter, as torch.optim.Adam counts them (a step without a grad
        self.m: list[Tensor] = []  # does not count); m and v, the running means of g and g^2, are made at the
        self.v: list[Tensor] = []  # first step, on the parameters' device

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        beta1, beta2 = self.betas
        if not self.m:
            self.m, self.v = [torch.zeros_like(p) for p in self.params], [torch.zeros_like(p) for p in self.params]
        for k, (p, m, v) in enumerate(zip(self.params, self.m, self.v)):
            if p.grad is None:
                continue
            self.t[k] += 1
            step_size = self.lr / (1 - beta1 ** float(self.t[k]))
            correction2 = (1 - beta2 ** float(self.t[k])) ** 0.5
            m.lerp_(p.grad, 1 - beta1)
            v.mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
            p.addcdiv_(m, (v.sqrt() / correction2).add_(self.eps), value=-step_size)


@dataclass
class TrainHistory:
    """What a training did: the loss of every step, the mean loss of every epoch, its wall and CPU
    seconds (callbacks not counted), why it stopped (``"budget"``: it ran every step), and the
    last value ``early_stop`` measured with its target (None without one)."""

    step_losses: list[float] = field(default_factory=list)
    epoch_losses: list[float] = field(default_factory=list)
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    stop_reason: str = "budget"
    metric: float | None = None
    target: float | None = None


class Trainer:
    """Train ``model`` with Adam on the batches of ``batches(generator)``, ``epochs`` times.

    ``batches(generator)`` returns the batches of one epoch (anything ``batch_loss`` takes), drawn
    with ``generator``, a ``torch.Generator`` seeded with ``seed``: the data are the same on every
    run. ``batch_loss(batch)`` returns the scalar loss. ``size(batch)`` weights a batch in its
    epoch's mean loss (None: every batch counts once). ``clip`` caps the gradient norm (None: no
    clipping). With ``final_lr`` the learning rate falls linearly from ``lr`` to ``final_lr`` over
    ``decay_steps`` steps. ``name`` names the training in its record.
    """

    def __init__(self, model: nn.Module, batch_loss: Callable[[Any], Tensor], batches: Callable[[torch.Generator], Iterable],
                 *, lr: float, epochs: int = 1, seed: int = 0, clip: float | None = None, final_lr: float | None = None,
                 decay_steps: int | None = None, size: Callable[[Any], int] | None = None, name: str = "training") -> None:
        require_positive_int(epochs=epochs)
        require_nonnegative_int(seed=seed)
        require_positive_float(lr=lr)
        if clip is not None:
            require_positive_float(clip=clip)
        if final_lr is not None:
            require_positive_float(allow_zero=True, final_lr=final_lr)
            require_positive_int(decay_steps=decay_steps)
        self.model, self.batch_loss, self.batches, self.size, self.name = model, batch_loss, batches, size, name
        self.epochs, self.seed, self.clip, self.lr, self.final_lr, self.decay_steps = epochs, seed, clip, lr, final_lr, decay_steps
        self.optimizer = Adam(model.parameters(), lr=lr)
        self.callbacks: dict[str, list[Callable[[Trainer], None]]] = {event: [] for event in EVENTS}
        self.step, self.epoch, self.loss = 0, 0, math.nan
        self.history = TrainHistory()
        self._stopping: str | None = None
        self._callback_wall = self._callback_cpu = 0.0

    def add_callback(self, event: str, callback: Callable[[Trainer], None]) -> Trainer:
        """Call ``callback(trainer)`` at every ``event`` (``"on_step_end"`` or ``"on_epoch_end"``)."""
        if event not in EVENTS:
            raise ValueError(f"event must be one of {', '.join(EVENTS)}, got {event!r}")
        if not callable(callback):
            raise TypeError(f"callback must be callable, got {type(callback).__name__}")
        self.callbacks[event].append(callback)
        return self

    def stop(self, reason: str = "callback") -> None:
        """End the training after the current step (a callback calls this); ``reason`` goes in the history."""
        self._stopping = reason

    def run(self) -> TrainHistory:
        """Train; return the history (also ``trainer.history``), and append the record if one is kept. Runs once."""
        if self.step:
            raise RuntimeError("this Trainer has run already: make a new one to train again")
        wall, cpu = time.perf_counter(), time.process_time()
        generator = torch.Generator().manual_seed(self.seed)  # seeded once, drawn on from epoch to epoch
        self.model.train()
        for self.epoch in range(1, self.epochs + 1):  # noqa: B020 (callbacks read the epoch off the trainer)
            total, count = 0.0, 0
            for batch in self.batches(generator):
                self._take_step(batch)
                n = 1 if self.size is None else self.size(batch)
                total, count = total + self.loss * n, count + n
                self._trigger("on_step_end")
                if self._stopping:
                    break
            if count:
                self.history.epoch_losses.append(total / count)
            if not self._stopping:
                self._trigger("on_epoch_end")
            if self._stopping:
                self.history.stop_reason = self._stopping
                break
        self.history.seconds = time.perf_counter() - wall - self._callback_wall
        self.history.cpu_seconds = time.process_time() - cpu - self._callback_cpu
        write_record(self)
        return self.history

    def _take_step(self, batch) -> None:
        loss = self.batch_loss(batch)
        if not isinstance(loss, Tensor) or loss.numel() != 1 or not loss.requires_grad:
            raise ValueError("batch_loss must return the scalar loss, a one-element tensor that requires grad, got "
                             + (f"shape {tuple(loss.shape)}, requires_grad={loss.requires_grad}"
                                if isinstance(loss, Tensor) else type(loss).__name__))
        self.optimizer.zero_grad()
        loss.backward()
        if self.clip is not None:
            nn.utils.clip_grad_norm_(self.model.parameters(), self.clip)
        self.optimizer.step()
        self.step += 1
        if self.final_lr is not None:  # linear decay: lr at step k is lr * (1 + (final_lr / lr - 1) * k / decay_steps)
            self.optimizer.lr = self.lr * (1.0 + (self.final_lr / self.lr - 1.0) * self.step / self.decay_steps)
        self.loss = loss.item()
        self.history.step_losses.append(self.loss)

    def _trigger(self, event: str) -> None:
        if not self.callbacks[event]:
            return
        wall, cpu = time.perf_counter(), time.process_time()
        with forked_rng(_device_of(self.model)):
            for callback in self.callbacks[event]:
                callback(self)
        self.model.train()
        self._callback_wall += time.perf_counter() - wall
        self._callback_cpu += time.process_time() - cpu


def early_stop(stop_when: Callable[[nn.Module], bool | float], *, every: int = 1, target: float | None = None,
               event: str = "on_step_end") -> Callable[[Trainer], None]:
    """A callback that ends the training once ``stop_when(model)`` is true, or, given ``target``, once
    the number it returns is ``>= target``; checked every ``every`` steps (or epochs, with
    ``event="on_epoch_end"``), with the model in eval mode and no gradients. The last value goes
    in the history (``metric``, ``target``)."""
    if not callable(stop_when):
        raise TypeError(f"stop_when must be a function of the model, got {type(stop_when).__name__}")
    require_positive_int(every=every)
    if target is not None and (isinstance(target, bool) or not isinstance(target, (int, float))):
        raise TypeError(f"target must be a number, got {type(target).__name__}")

    def check(trainer: Trainer) -> None:
        if (trainer.step if event == "on_step_end" else trainer.epoch) % every:
            return
        trainer.model.eval()
        with torch.no_grad():
            value = stop_when(trainer.model)
        if target is None:
            trainer.history.metric = None if isinstance(value, bool) else float(value)
            if value:
                trainer.stop("stop_when")
        else:
            trainer.history.metric, trainer.history.target = float(value), target
            if float(value) >= target:
                trainer.stop("target")

    return check


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
    stop_when: Callable[[nn.Module], bool | float] | None = None,
    target: float | None = None,
    check_every: int = 1,
    name: str = "train_steps",
) -> list[float]:
    """Train ``model`` with Adam for at most ``steps`` steps; return the loss of every step taken.

    ``batch_loss(generator)`` draws a fresh batch with ``generator`` (a ``torch.Generator`` seeded
    with ``seed``, so the data are the same on every run), runs the model on it and returns the
    scalar loss. ``clip`` caps the gradient norm (None: no clipping). ``log_every > 0`` prints the
    loss every that many steps; ``on_step(step)`` (1-based) runs after every step. Early stop:
    ``stop_when(model)`` is checked every ``check_every`` steps (see ``early_stop``).
    """
    require_positive_int(steps=steps, check_every=check_every)
    require_nonnegative_int(log_every=log_every)
    trainer = Trainer(model, batch_loss, lambda generator: (generator for _ in range(steps)), lr=lr, seed=seed, clip=clip,
                      name=name)
    if log_every:
        trainer.add_callback("on_step_end", lambda t: print(f"step {t.step:4d}  loss {t.loss:.4f}") if t.step % log_every == 0 else None)
    if on_step is not None:
        trainer.add_callback("on_step_end", lambda t: on_step(t.step))
    if stop_when is not None:
        trainer.add_callback("on_step_end", early_stop(stop_when, every=check_every, target=target))
    return trainer.run().step_losses


def forked_rng(device: torch.device):
    """Context manager: restore, on exit, the global random states of the CPU and of ``device``."""
    if device.type == "cpu":
        return torch.random.fork_rng(devices=[])
    return torch.random.fork_rng(devices=[device], device_type=device.type)


def _device_of(model: nn.Module) -> torch.device:
    return next(model.parameters()).device


def write_record(trainer: Trainer) -> None:
    """Append the training's record to the file ``COURSE_TRAINING_LOG`` names (nothing if unset): one JSON line
    with ``name``, ``notebook`` (``COURSE_NOTEBOOK``, set by the benchmark), ``cell`` (the IPython execution count),
    ``model``, ``epochs``, ``steps``, ``cpu_s``, ``wall_s``, ``callbacks_cpu_s``, ``loss`` (last step), ``epoch_loss``
    (last epoch's mean), ``stop`` (the reason), ``metric``, ``target``, ``seed``, ``lr``, ``device``, ``threads``."""
    path = os.environ.get(LOG_VARIABLE)
    if not path:
        return
    h = trainer.history
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    line = {
        "name": trainer.name, "notebook": os.environ.get("COURSE_NOTEBOOK"),
        "cell": getattr(shell, "execution_count", None), "model": type(trainer.model).__name__,
        "epochs": trainer.epoch, "steps": trainer.step, "cpu_s": round(h.cpu_seconds, 3), "wall_s": round(h.seconds, 3),
        "callbacks_cpu_s": round(trainer._callback_cpu, 3), "loss": trainer.loss,
        "epoch_loss": h.epoch_losses[-1] if h.epoch_losses else None, "stop": h.stop_reason, "metric": h.metric,
        "target": h.target, "seed": trainer.seed, "lr": trainer.lr, "device": str(_device_of(trainer.model)),
        "threads": torch.get_num_threads(),
    }
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")
