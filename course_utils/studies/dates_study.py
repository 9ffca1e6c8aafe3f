"""The maintainer command that repeats lesson 04b's training of the dates task over seeds
(the training itself: ``models/dates_training.py``).

    python -m course_utils.studies.dates_study            # seeds 0 1 2, with and without attention
    python -m course_utils.studies.dates_study --seeds 0  # one seed

writes ``data/results/dates_seeds.json``: exact-match and alignment accuracy on the held-out
set, per written form, for every seed and both models, with the settings and the loss of the
first optimiser steps (``tests/test_dates.py`` re-runs those steps and compares). On one CPU thread a
run (126 steps of 64 examples) took about 3 s of CPU with attention and 1.6 s without (issue 36; before,
126 steps of 128 examples took about 6 s and 3 s, and in issue 26 625 steps of 64 had taken 20 s and 11 s).
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

import torch

from ..models import dates as D
from ..models.dates_training import SETTINGS, train_dates
from ..models.repro import seed_everything

RESULTS = Path(__file__).resolve().parents[2] / "data" / "results" / "dates_seeds.json"
PREFIX_STEPS = 10  # how many step losses the results file keeps, for the test that re-runs them


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
