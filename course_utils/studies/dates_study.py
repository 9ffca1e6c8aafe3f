"""The dates task trained as lesson 04b trains it, and the maintainer command that repeats it over seeds.

    python -m course_utils.studies.dates_study            # seeds 0 1 2, with and without attention
    python -m course_utils.studies.dates_study --seeds 0  # one seed

writes ``data/results/dates_seeds.json``: exact-match and alignment accuracy on the held-out
set, per written form, for every seed and both models, with the settings and the loss of the
first optimiser steps (``tests/test_dates.py`` re-runs those steps and compares). On one CPU thread a
run (126 steps) took about 6 s of CPU with attention and 3 s without on a loaded shared machine
(issue 26: 5 epochs of batches of 64, 625 steps, had taken 20 s and 11 s there).
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

import torch

from ..models import dates as D
from ..models.repro import seed_everything
from ..models.seq2seq import Seq2SeqNoAttention, Seq2SeqWithAttention
from ..models.seq2seq_training import TrainHistory, train_seq2seq

SETTINGS = {"num_train": 8000, "num_heldout": 1000, "epochs": 2, "batch_size": 128, "lr": 1e-2, "final_lr": 5e-4}
RESULTS = Path(__file__).resolve().parents[2] / "data" / "results" / "dates_seeds.json"
PREFIX_STEPS = 10  # how many step losses the results file keeps, for the test that re-runs them


def build_model(attention: bool, seed: int) -> torch.nn.Module:
    """The course's GRU encoder-decoder over the date characters, its weights drawn with ``seed``."""
    torch.manual_seed(seed)
    cls = Seq2SeqWithAttention if attention else Seq2SeqNoAttention
    return cls(len(D.VOCAB))


def train_dates(attention: bool = True, seed: int = 0, data: tuple | None = None, on_epoch_end=None,
                **overrides) -> tuple:
    """Train one model on the dates task with ``SETTINGS`` (``overrides`` changes some of them).

    Returns ``(model, history, train, heldout)``; ``data`` may pass ``(train, heldout)`` made earlier;
    ``on_epoch_end(epoch, model)`` is passed to ``train_seq2seq``.
    """
    settings = {**SETTINGS, **overrides}
    train, heldout = data or D.make_date_data(settings["num_train"], settings["num_heldout"], seed=seed)
    model = build_model(attention, seed)
    history: TrainHistory = train_seq2seq(
        model, train, epochs=settings["epochs"], batch_size=settings["batch_size"], lr=settings["lr"],
        final_lr=settings["final_lr"], seed=seed, on_epoch_end=on_epoch_end,
    )
    return model, history, train, heldout


def held_out_scores(model: torch.nn.Module, heldout: D.DateData) -> dict:
    """Exact match (and, with attention, alignment accuracy) on the held-out set."""
    pred, weights = D.decode_with_weights(model, heldout)
    out = {"exact": (pred == heldout.tgt).all(1).float().mean().item()}
    if weights is not None:
        out["alignment"] = D.alignment_accuracy(weights, heldout.spans)
    return out


def run_one(attention: bool, seed: int) -> dict:
    """One training run: exact match and alignment by form, overall, after each epoch, seconds and the
    first step losses."""
    epochs = []
    _, heldout = data = D.make_date_data(SETTINGS["num_train"], SETTINGS["num_heldout"], seed=seed)
    model, history, _, heldout = train_dates(attention, seed, data=data,
                                             on_epoch_end=lambda e, m: epochs.append(held_out_scores(m, heldout)))
    pred, weights = D.decode_with_weights(model, heldout)
    forms = D.by_form(heldout, pred, weights)
    exact = ((pred == heldout.tgt) | (heldout.tgt == 0)).all(1).float().mean().item()
    out = {"exact": exact, "by_form": forms, "by_epoch": epochs, "seconds": history.seconds,
           "first_losses": history.step_losses[:PREFIX_STEPS]}
    if weights is not None:
        out["alignment"] = D.alignment_accuracy(weights, heldout.spans)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m course_utils.studies.dates_study", description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    seed_everything(0, threads=1)
    runs = []
    for seed in args.seeds:
        for attention in (True, False):
            result = run_one(attention, seed)
            runs.append({"seed": seed, "attention": attention, **result})
            print(f"seed {seed} attention={attention}: exact {result['exact']:.3f}"
                  + (f", alignment {result['alignment']:.3f}" if attention else "") + f" ({result['seconds']:.1f} s)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"settings": SETTINGS, "forms": list(D.FORM_NAMES), "vocab_size": len(D.VOCAB), "threads": 1,
            "torch": torch.__version__, "machine": platform.machine(),
            "command": "python -m course_utils.studies.dates_study --seeds " + " ".join(map(str, args.seeds))}
    args.out.write_text(json.dumps({**meta, "runs": runs}, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out.name}")


if __name__ == "__main__":
    main()
