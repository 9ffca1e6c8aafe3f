"""The dates task trained as lesson 04b trains it: the settings and one call that trains a model.

``studies/dates_study.py`` repeats this training over seeds for the stored experiment
(``data/results/dates_seeds.json``). Shapes as in ``models/dates.py``. Used in notebook 04b.
"""

from __future__ import annotations

import torch

from . import dates as D
from .seq2seq import Seq2SeqNoAttention, Seq2SeqWithAttention
from .seq2seq_training import TrainHistory, train_seq2seq

SETTINGS = {"num_train": 4000, "num_heldout": 1000, "epochs": 2, "batch_size": 64, "lr": 1.5e-2, "final_lr": 5e-4}


def build_model(attention: bool, seed: int) -> torch.nn.Module:
    """The course's GRU encoder-decoder over the date characters, its weights drawn with ``seed``."""
    torch.manual_seed(seed)
    cls = Seq2SeqWithAttention if attention else Seq2SeqNoAttention
    return cls(len(D.VOCAB))


def train_dates(attention: bool = True, seed: int = 0, data: tuple | None = None, on_epoch_end=None,
                **overrides) -> tuple:
    """Train one model on the dates task with ``SETTINGS`` (``overrides`` changes some of them).

    Returns ``(model, history, train, heldout)``; ``data`` may pass ``(train, heldout)`` made earlier
    (``DateData``: ``src`` (N, T_in), ``tgt`` (N, 11)); ``on_epoch_end(epoch, model)`` is passed to
    ``train_seq2seq``.
    """
    unknown = set(overrides) - set(SETTINGS)
    if unknown:
        raise TypeError(f"train_dates: unknown settings {sorted(unknown)}; expected some of {sorted(SETTINGS)}")
    settings = {**SETTINGS, **overrides}
    train, heldout = data or D.make_date_data(settings["num_train"], settings["num_heldout"], seed=seed)
    model = build_model(attention, seed)
    history: TrainHistory = train_seq2seq(
        model, train, epochs=settings["epochs"], batch_size=settings["batch_size"], lr=settings["lr"],
        final_lr=settings["final_lr"], seed=seed, on_epoch_end=on_epoch_end,
    )
    return model, history, train, heldout
