"""Long experiments behind the explorations (notebooks 10-13), run by maintainers, not by notebooks.

The notebooks must stay fast, so training runs with many seeds or many steps are done
here once and stored as small JSON files in ``data/results/``; the notebooks read and
plot them (``course_utils.helpers.exploration_plots.load_result``). Run from the
repository root:

    python -m course_utils.studies.experiments list
    python -m course_utils.studies.experiments run heads_long        # one experiment
    python -m course_utils.studies.experiments run all               # every experiment (about 30 min on 2 busy cores)
    python -m course_utils.studies.experiments run heads_long --seeds 1  # one seed, into heads_long.seed1.part.json
    python -m course_utils.studies.experiments merge heads_long      # join the .part.json files of the seeds

Running the seeds as separate processes (``--seeds``, then ``merge``) uses several cores.

Every experiment pins PyTorch to one CPU thread and seeds everything, so a rerun on the
same machine gives the same file; another CPU can change the last digits, never the
conclusions the notebooks assert. ``tests/test_experiments.py`` reruns a short prefix of
each experiment and compares it with the stored file.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections.abc import Callable
from pathlib import Path

import torch

from course_utils.models.head_task import HeadsModel, NeighbourCountTask, task_loss, train_heads_model
from course_utils.models.language_model import (
    CausalLM,
    CharVocab,
    RepeatPatternTask,
    generation_accuracy,
    lm_loss,
    load_corpus,
    sample_windows,
    train_lm,
)
from course_utils.models.recall_task import RecallAttention, train_recall
from course_utils.models.repro import seed_everything
from course_utils.models.seq2seq import Seq2SeqWithAttention
from course_utils.models.seq2seq_data import heldout_reversal_data, make_reversal_data
from course_utils.models.seq2seq_training import evaluate, train_seq2seq
from course_utils.models.training import train_steps

RESULTS = Path(__file__).resolve().parents[2] / "data" / "results"
SEEDS = (0, 1, 2)


def _r(x: float, digits: int = 4) -> float:
    return round(float(x), digits)


# --- 12: how many heads ----------------------------------------------------------------------


def _beside_marker(task: NeighbourCountTask, tokens: torch.Tensor) -> torch.Tensor:
    """(B, n) bool: the previous or the next symbol is a marker."""
    marker = tokens == task.marker_id
    beside = torch.zeros_like(marker)
    beside[:, 1:] |= marker[:, :-1]
    beside[:, :-1] |= marker[:, 1:]
    return beside


def heads_long(seeds=SEEDS, steps=None, eval_every: int = 250, lrs=(3e-3, 1e-2, 2e-2), lr: float = 3e-3,
               budget: int = 100, clip: float | None = 1.0) -> dict:
    """Count accuracy of 1-, 2- and 4-head models through long training (batch 64 as notebook 12; lr 3e-3, a
    gentler rate than the notebook's 1e-2, at which long runs stay noisy; no clipping), and a learning-rate sweep
    of the 1-head model trained as the notebook trains it: its budget of 100 steps, its gradient clipping at
    ``clip``, its rate 1e-2 among the rates. ``steps={}`` runs the sweep alone."""
    steps = {1: 10_000, 2: 2_000, 4: 500} if steps is None else steps
    task = NeighbourCountTask(length=12, num_symbols=6, max_markers=3)
    test = task.sample(1000, torch.Generator().manual_seed(2024))
    beside = _beside_marker(task, test.tokens)
    curves = {}
    for h, total in steps.items():
        for seed in seeds:
            seed_everything(seed)
            model = HeadsModel(task, d_model=64, num_heads=h)
            log = {"step": [], "count": [], "count_beside": [], "count_not_beside": [], "all": []}

            def measure(step: int, model=model, log=log) -> None:
                if step % eval_every:
                    return
                model.eval()
                with torch.no_grad():
                    (prev, nxt, count), _ = model(test.tokens)
                model.train()
                right = count.argmax(-1) == test.count
                every = right & (prev.argmax(-1) == test.prev) & (nxt.argmax(-1) == test.next)
                log["step"].append(step)
                log["count"].append(_r(right.float().mean()))
                log["count_beside"].append(_r(right[beside].float().mean()))
                log["count_not_beside"].append(_r(right[~beside].float().mean()))
                log["all"].append(_r(every.float().mean()))

            def batch_loss(g, model=model):
                batch = task.sample(64, g)
                return task_loss(model(batch.tokens)[0], batch)

            train_steps(model, batch_loss, steps=total, lr=lr, seed=seed, on_step=measure)
            curves[f"{h} heads, seed {seed}"] = {"heads": h, "seed": seed, **log}
    sweep = []
    for sweep_lr in lrs:
        for seed in seeds:
            seed_everything(seed)
            model = HeadsModel(task, d_model=64, num_heads=1)
            train_heads_model(model, steps=budget, batch_size=64, lr=sweep_lr, seed=seed, clip=clip)
            model.eval()
            with torch.no_grad():
                (_, _, count), _ = model(test.tokens)
            right = count.argmax(-1) == test.count
            sweep.append({"lr": sweep_lr, "seed": seed, "count": _r(right.float().mean()),
                          "count_beside": _r(right[beside].float().mean())})
    return {"settings": {"batch_size": 64, "lr": lr, "budget": budget, "sweep_lrs": list(lrs), "sweep_clip": clip,
                         "d_model": 64, "test_sequences": 1000, "eval_every": eval_every, "steps": {str(h): s for h, s in steps.items()}},
            "curves": curves, "lr_sweep_at_budget": sweep}


# --- 13: longer training of the reversal model -----------------------------------------------


def _antidiagonal(weights: torch.Tensor, lengths: torch.Tensor) -> dict:
    """Mirror weight, argmax on mirror, weight at offsets -2..+2 of the mirror, over the token steps."""
    t_out, t_in = weights.shape[1:]
    t = torch.arange(t_out)
    mirror = (lengths[:, None] - 1 - t).clamp(min=0)
    steps = t < lengths[:, None]
    out = {"mirror weight": _r(weights.gather(-1, mirror[..., None]).squeeze(-1)[steps].mean()),
           "argmax on mirror": _r((weights.argmax(-1) == mirror).float()[steps].mean()),
           "argmax at +1": _r((weights.argmax(-1) == mirror + 1).float()[steps].mean())}
    for k in (-2, -1, 1, 2):
        position = mirror + k
        exists = (position >= 0) & (position < lengths[:, None])
        w = weights.gather(-1, position.clamp(0, t_in - 1)[..., None]).squeeze(-1) * exists
        out[f"weight at {k:+d}"] = _r(w[steps].mean())
    return out


def longer_training(seeds=SEEDS, long_epochs: int = 100, short_epochs: int = 20, every: int = 5) -> dict:
    """The bidirectional reversal model of notebook 13: 20 epochs with lr 5e-3 -> 5e-4 (the notebook's
    schedule) and ``long_epochs`` at a constant 5e-3, for every seed; measured every ``every`` epochs."""
    heldout = heldout_reversal_data(4, 10, num_sequences=1000)
    runs = {}
    for label, epochs, final_lr in (("20 epochs, decaying lr", short_epochs, 5e-4),
                                    (f"{long_epochs} epochs, constant lr", long_epochs, None)):
        for seed in seeds if epochs else ():
            train_data = make_reversal_data(2000, 4, 10, seed=seed, exclude=heldout)
            seed_everything(seed)
            model = Seq2SeqWithAttention(12, emb_dim=32, hidden_dim=64, attn_dim=64, bidirectional=True)
            log: dict[str, list] = {"epoch": []}

            def watch(epoch: int, model, log=log, epochs=epochs) -> None:
                if epoch % every and epoch != epochs:
                    return
                model.eval()
                with torch.no_grad():
                    _, weights = model(heldout.src, heldout.lengths, heldout.tgt)
                log["epoch"].append(epoch)
                for name, value in _antidiagonal(weights, heldout.lengths).items():
                    log.setdefault(name, []).append(value)
                log.setdefault("exact accuracy", []).append(_r(evaluate(model, heldout)["exact_accuracy"]))

            train_seq2seq(model, train_data, epochs=epochs, batch_size=64, lr=5e-3, final_lr=final_lr, clip=1.0,
                          by_length=True, seed=seed, on_epoch_end=watch)
            runs[f"{label}, seed {seed}"] = {"schedule": label, "seed": seed, **log}
    return {"settings": {"train_sequences": 2000, "lengths": [4, 10], "batch_size": 64, "lr": 5e-3,
                         "every": every}, "runs": runs}


# --- 10: what the sqrt(d_k) comparison isolates ----------------------------------------------


def scaling_sweep(seeds=SEEDS, lrs=(3e-4, 1e-3, 3e-3), steps: int = 300) -> dict:
    """Steps to 95% held-out accuracy on the recall task (d_k = 128) for three variants: scaled,
    unscaled, and unscaled with W_q and W_k multiplied by d_k^(-1/4) at the start."""
    d_k, rows = 128, []
    for variant in ("scaled", "unscaled", "unscaled, W_q and W_k x d_k^(-1/4)"):
        for lr in lrs:
            for seed in seeds:
                torch.manual_seed(seed)
                model = RecallAttention(64, 16, 64, d_k, scale=variant == "scaled")
                if variant.startswith("unscaled,"):
                    with torch.no_grad():
                        model.W_q.weight.mul_(d_k**-0.25)
                        model.W_k.weight.mul_(d_k**-0.25)
                history = train_recall(model, steps=steps, num_pairs=16, lr=lr, eval_every=10, seed=seed)
                hit = next((s for s, a in zip(history["eval_step"], history["accuracy"]) if a >= 0.95), None)
                rows.append({"variant": variant, "lr": lr, "seed": seed, "steps_to_95": hit,
                             "final_accuracy": _r(history["accuracy"][-1])})
    return {"settings": {"d_k": d_k, "steps": steps, "eval_every": 10, "num_pairs": 16}, "runs": rows}


# --- 11: held-out text, and the unmasked model on the pattern task ---------------------------


def lm_checks(seeds=SEEDS, steps: int = 150, pattern_steps: int = 80, lr: float = 6e-3, pattern_lr: float = 1e-2) -> dict:
    """Notebook 11's text model trained on the first 90% of the corpus, with the loss on the last 10%;
    and masked / unmasked models trained on the pattern task, scored by greedy generation."""
    text = load_corpus("tiny_corpus.txt")
    vocab = CharVocab(text)
    ids = vocab.encode(text)
    cut = int(0.9 * len(ids))
    train_ids, held_ids = ids[:cut], ids[cut:]
    held_inputs, held_targets = sample_windows(held_ids, 32, 64, torch.Generator().manual_seed(123))
    text_runs = []
    for seed in seeds:
        seed_everything(seed)
        model = CausalLM(len(vocab), 32, d_model=64, num_heads=4, num_layers=2)
        log = {"step": [], "held-out loss": []}

        def measure(step, model=model, log=log):
            if step % 25 == 0:
                model.eval()
                with torch.no_grad():
                    log["step"].append(step)
                    log["held-out loss"].append(_r(lm_loss(model(held_inputs)[0], held_targets)))
                model.train()

        losses = train_steps(model, lambda g, model=model: _lm_batch_loss(model, train_ids, g), steps=steps, lr=lr,
                             seed=seed, clip=1.0, on_step=measure)
        text_runs.append({"seed": seed, "train loss": [_r(sum(losses[s - 25:s]) / 25) for s in log["step"]], **log})
    task = RepeatPatternTask(period=5, num_symbols=8, length=24)
    test = task.sample(500, torch.Generator().manual_seed(999))
    pattern_runs = []
    for causal in (True, False):
        for seed in seeds:
            seed_everything(seed)
            model = CausalLM(task.vocab_size, task.length, d_model=32, num_heads=2, num_layers=1, causal=causal)
            losses = train_lm(model, lambda g: task.batch(64, g), steps=pattern_steps, lr=pattern_lr, seed=seed)
            token_acc, seq_acc = generation_accuracy(model, test, prompt_len=task.period)
            pattern_runs.append({"causal": causal, "seed": seed, "final train loss": _r(sum(losses[-20:]) / 20),
                                 "token accuracy": _r(token_acc), "sequence accuracy": _r(seq_acc)})
    return {"settings": {"train_share": 0.9, "held_out_characters": len(held_ids), "text_steps": steps, "text_lr": lr,
                         "pattern_steps": pattern_steps, "pattern_lr": pattern_lr}, "text": text_runs, "pattern": pattern_runs}


def _lm_batch_loss(model: CausalLM, ids: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    inputs, targets = sample_windows(ids, 32, 32, g)
    return lm_loss(model(inputs)[0], targets)


EXPERIMENTS: dict[str, Callable[..., dict]] = {
    "heads_long": heads_long,
    "longer_training": longer_training,
    "scaling_sweep": scaling_sweep,
    "lm_checks": lm_checks,
}


def run(name: str, write: bool = True, part: str = "", **kwargs) -> dict:
    """Run one experiment on one CPU thread; with ``write``, store ``data/results/<name><part>.json``."""
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; known: {sorted(EXPERIMENTS)}")
    torch.set_num_threads(1)
    start = time.perf_counter()
    result = {"experiment": name, "command": f"python -m course_utils.studies.experiments run {name}",
              "torch": torch.__version__.split("+")[0], "machine": platform.machine(),
              **EXPERIMENTS[name](**kwargs)}
    result["minutes"] = round((time.perf_counter() - start) / 60, 1)
    if write:
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / f"{name}{part}.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return result


def merge(name: str) -> dict:
    """Join ``data/results/<name>.seed*.part.json`` (one seed each) into ``<name>.json``; remove the parts."""
    parts = sorted(RESULTS.glob(f"{name}.seed*.part.json"))
    if not parts:
        raise ValueError(f"no data/results/{name}.seed*.part.json to merge")
    results = [json.loads(p.read_text(encoding="utf-8")) for p in parts]
    merged = dict(results[0])
    for key, value in merged.items():
        if isinstance(value, dict) and key != "settings":
            merged[key] = {k: v for r in results for k, v in r[key].items()}
        elif isinstance(value, list):
            merged[key] = [item for r in results for item in r[key]]
    merged["minutes"] = round(sum(r["minutes"] for r in results), 1)  # CPU-process minutes, summed over the parts
    (RESULTS / f"{name}.json").write_text(json.dumps(merged, indent=1) + "\n", encoding="utf-8")
    for p in parts:
        p.unlink()
    return merged


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m course_utils.studies.experiments", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the experiments")
    run_parser = sub.add_parser("run", help="run experiments and write data/results/<name>.json")
    run_parser.add_argument("names", nargs="+", help=f"experiment names, or 'all': {', '.join(EXPERIMENTS)}")
    run_parser.add_argument("--seeds", type=int, nargs="+", help="only these seeds, into <name>.seed<S>.part.json")
    merge_parser = sub.add_parser("merge", help="join the per-seed parts of an experiment into <name>.json")
    merge_parser.add_argument("name")
    args = parser.parse_args(argv)
    if args.command == "merge":
        merge(args.name)
        print(f"data/results/{args.name}.json written")
        return
    if args.command == "list":
        for name, fn in EXPERIMENTS.items():
            print(f"{name:<16} {fn.__doc__.splitlines()[0]}")
        return
    names = list(EXPERIMENTS) if args.names == ["all"] else args.names
    for name in names:
        if args.seeds:
            part = ".seed" + "-".join(map(str, args.seeds)) + ".part"
            result = run(name, part=part, seeds=tuple(args.seeds))
        else:
            part, result = "", run(name)
        print(f"{name}: data/results/{name}{part}.json written ({result['minutes']} min)")


if __name__ == "__main__":
    main()
