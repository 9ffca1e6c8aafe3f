"""Lesson 07b's trainings repeated over seeds: the maintainer command behind its three-seed claims.

    python -m course_utils.studies.induction_study            # seeds 0 1 2
    python -m course_utils.studies.induction_study --seeds 0  # one seed, printed, nothing written

writes ``data/results/induction_seeds.json``: the settings, and for every seed the three trainings of
the lesson, each exactly as the notebook runs it (``seed_everything(seed)`` before the model is made,
the data drawn with ``seed``, the checks during training on the first ``check_count`` of the 500
held-out sequences, the final accuracy on all 500): the 2-layer model (steps to 90% and to the target,
its held-out accuracy curve, the previous-token and induction scores of both heads, each head switched
off, blocks longer than any seen in training, a block copied at a random place, where along the
sequence layer 1 reads the previous token, and its first step losses, which ``tests/test_induction.py``
re-runs), the 1-layer model for ``one_layer_steps`` steps (more than the 2-layer model needs on any
seed), and the 1-layer model trained on one fixed block length (the trap), measured at another length.
About 4 s of CPU per seed on one thread.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch

from ..models import induction as I
from ..models.repro import seed_everything

SETTINGS = {"vocab_size": 128, "length": 48, "period": [4, 16], "d_model": 32, "batch_size": 64, "lr": 1e-2,
            "steps": 400, "one_layer_steps": 300, "target": 0.95, "check_every": 10, "check_count": 128, "test_period": 16,
            "fixed_period": 16, "fixed_target": 0.99, "other_period": 12, "longer_periods": [20, 24], "copy_block": 8}
RESULTS = Path(__file__).resolve().parents[2] / "data" / "results" / "induction_seeds.json"
PREFIX_STEPS = 5  # how many step losses of the 2-layer training the file keeps, for the test that re-runs them


def train(seed: int, num_layers: int, period, target: float | None, check: I.CopyBatch, steps: int) -> tuple:
    """One training of the lesson, measured during training on ``check``: ``(model, history, cpu seconds)``."""
    s = SETTINGS
    seed_everything(seed)
    model = I.AttentionOnlyTransformer(s["vocab_size"], s["length"], s["d_model"], num_layers)
    cpu = time.process_time()
    history = I.train_induction(model, steps=steps, length=s["length"], period=period,
                                batch_size=s["batch_size"], lr=s["lr"], seed=seed, test=check, target=target,
                                check_every=s["check_every"], name=f"induction_study {num_layers} layers")
    return model, history, time.process_time() - cpu


@torch.no_grad()
def head_scores(model: I.AttentionOnlyTransformer, test: I.CopyBatch, period: int) -> dict:
    """Previous-token and induction score of every head (layer by layer, head by head) on ``test``."""
    model.eval()
    _, weights = model(test.tokens)  # (B, layers, h, T, T)
    return {"previous_token": I.previous_token_score(weights, period).mean(0).tolist(),
            "induction": I.induction_score(weights, period).mean(0).tolist()}


def first_step(history: dict, level: float) -> int | None:
    return next((s for s, a in zip(history["check_steps"], history["accuracy"]) if a >= level), None)


def curve(history: dict) -> dict:
    """The held-out accuracy at every check, and the mean loss on the copied tokens of the training
    batches over the steps up to each check."""
    losses, checks = history["copied_loss"], history["check_steps"]
    return {"steps": checks, "accuracy": history["accuracy"],
            "copied_loss": [sum(losses[max(0, c - 10) : c]) / len(losses[max(0, c - 10) : c]) for c in checks]}


@torch.no_grad()
def along_the_sequence(model: I.AttentionOnlyTransformer) -> dict:
    """Where the circuit works: layer 1's weight on the previous token at queries 1-15 and 17-47 (blocks of
    24), and the accuracy on copies at a random place whose source is at position <= 15 or >= 16."""
    s = SETTINGS
    model.eval()
    _, weights = model(I.held_out(24, vocab_size=s["vocab_size"]).tokens)
    previous = weights[:, 0, 0].diagonal(offset=-1, dim1=-2, dim2=-1).mean(0)  # (47,): queries 1..47
    anywhere = I.copy_batch(500, s["length"], s["copy_block"], s["vocab_size"], torch.Generator().manual_seed(2024))
    right = I.right_predictions(model, anywhere)
    near, far = anywhere.copied & (anywhere.source <= 15), anywhere.source >= 16
    return {"previous_1_15": previous[:15].mean().item(), "previous_17_47": previous[16:].mean().item(),
            "random_place": right[anywhere.copied].float().mean().item(),
            "random_place_source_1_15": right[near].float().mean().item(),
            "random_place_source_16_on": right[far].float().mean().item(),
            "share_source_16_on": (far.sum() / anywhere.copied.sum()).item()}


def run_seed(seed: int) -> dict:
    s = SETTINGS
    test = I.held_out(s["test_period"], vocab_size=s["vocab_size"])
    check = I.held_out(s["test_period"], count=s["check_count"], vocab_size=s["vocab_size"])  # test's first rows
    two, h2, cpu2 = train(seed, 2, tuple(s["period"]), s["target"], check, s["steps"])
    out = {"two_layers": {
        "steps": len(h2["loss"]), "steps_to_90": first_step(h2, 0.9), "cpu_s": round(cpu2, 2),
        "first_losses": h2["loss"][:PREFIX_STEPS],
        "accuracy": I.copy_accuracy(two, test), "curve": curve(h2), **head_scores(two, test, s["test_period"]),
        "without": {}, "longer": {}, **along_the_sequence(two),
    }}
    for layer in range(2):
        with I.ablate_heads(two, [(layer, 0)]):
            out["two_layers"]["without"][f"layer {layer + 1}"] = I.copy_accuracy(two, test)
    for period in [s["other_period"], *s["longer_periods"]]:
        out["two_layers"]["longer"][str(period)] = I.copy_accuracy(two, I.held_out(period, vocab_size=s["vocab_size"]))
    one, h1, cpu1 = train(seed, 1, tuple(s["period"]), None, check, s["one_layer_steps"])
    out["one_layer"] = {"steps": len(h1["loss"]), "cpu_s": round(cpu1, 2), "accuracy": I.copy_accuracy(one, test),
                        "curve": curve(h1),
                        **head_scores(one, test, s["test_period"])}
    fixed, hf, cpuf = train(seed, 1, s["fixed_period"], s["fixed_target"], check, s["steps"])
    other = I.held_out(s["other_period"], vocab_size=s["vocab_size"])
    out["fixed_period"] = {"steps": len(hf["loss"]), "cpu_s": round(cpuf, 2), "accuracy": I.copy_accuracy(fixed, test),
                           "accuracy_other": I.copy_accuracy(fixed, other),
                           **head_scores(fixed, test, s["test_period"])}
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args(argv)
    runs = {str(seed): run_seed(seed) for seed in args.seeds}
    result = {"settings": SETTINGS, "seeds": runs, "torch": torch.__version__, "machine": platform.machine()}
    if args.seeds == [0, 1, 2]:
        RESULTS.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {RESULTS}")
    else:
        print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
