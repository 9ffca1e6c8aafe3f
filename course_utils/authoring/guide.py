"""Fill the generated parts of INSTRUCTORS.md: the notebook table and what each exercise's checkers catch.

    python -m course_utils.authoring.guide                              # reading times, checkers; keeps run times
    python -m course_utils.authoring.guide --run notebooks/01_*.ipynb   # benchmark these notebooks first
    python -m course_utils.authoring.guide --benchmark bench.md         # or read a saved benchmark table

Run times come from ``nbtools benchmark`` (``authoring/benchmark.py``; the first three columns of its
first table: wall seconds on one core and peak memory per notebook; for an exercise, its solution
notebook is what a finished student notebook costs).
A notebook not measured yet keeps its previous figure, or shows TO BE MEASURED. Reading time is
estimated from word counts: prose at 200 words a minute plus code at 10 lines a minute.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "INSTRUCTORS.md"
TABLE = ("<!-- notebook-table:start -->", "<!-- notebook-table:end -->")
CATCHES = ("<!-- checkers:start -->", "<!-- checkers:end -->")
UNMEASURED = "TO BE MEASURED"
WORDS_PER_MINUTE, CODE_LINES_PER_MINUTE = 200, 10

# notebook key ("01", "01b"): (core or optional, prerequisites, learning outcomes)
PLAN = {
    "01": ("core", "Python, NumPy, matrix products", "attention as a soft look-up; softmax(QK^T/sqrt(d_k))V in NumPy and PyTorch with a stable softmax, every shape named; worked examples by hand; write one self-attention head Q = XW_Q, K = XW_K, V = XW_V; the O(n^2) cost"),
    "02": ("core", "01", "read attention heatmaps; tell a real pattern from an artefact of the input"),
    "03": ("core", "01, 02", "why several heads; write the split into heads, merge back; the reshape that runs and is wrong; count parameters (4d^2 + 4d, any h); one module for self- and cross-attention"),
    "03b": ("core", "01b, 03", "the same weights in nn.MultiheadAttention; attention dropout; its inverted masks (attn_mask, key_padding_mask) and what goes wrong silently; write the (B*h, n, m) mask for a per-sequence mask"),
    "01b": ("core", "01", "measure why the scores are divided by sqrt(d_k) (variance, saturation, gradient); padding and causal masks; a masked softmax with no NaN for a fully masked row"),
    "04": ("core", "01-03, a little of RNNs", "additive (Bahdanau) attention in a GRU encoder-decoder; one decoder step; read where it looks while it writes and measure how far its peaks sit from the anti-diagonal (task: peak_offsets)"),
    "04b": ("optional", "04", "the same model on dates written eight ways: attention that reorders; alignment accuracy measured against each output character's deciding span"),
    "05": ("core (exercise)", "01, 03", "write a causal mask and masked attention; test a layer for leaks from the future"),
    "06": ("core (exercise)", "03, 05", "predict cross-attention shapes; build a cross-attention layer with a padding mask; measure which encoder position each decoder position reads"),
    "07": ("core (exercise)", "03", "measure heads by attention entropy and mean attention distance; label heads local or global; test the labels by switching heads off"),
    "07b": ("optional", "02, 05, 07", "why copying from context takes two attention layers (a previous-token head, then an induction head); recognise a phase change in training; measure heads with a previous-token and an induction score (write the induction score); test the circuit by switching heads off; explain the fixed-length trap and why the circuit fails on longer blocks and copies elsewhere"),
    "08": ("core (exercise)", "04", "token accuracy, exact match and accuracy by length; attention vs no attention as sources grow"),
    "09": ("core", "03", "why attention ignores order; sinusoidal and learned positions; read a position back off its encoding"),
    "09b": ("core", "01b, 03, 09", "a post-norm Transformer block from the course's parts, equal to nn.TransformerEncoderLayer; its parameter count; write the pre-norm forward pass; order and the causal mask"),
    "10": ("optional", "01", "measure softmax saturation without scaling and what it costs in training (3 seeds); sparsemax's threshold and top-k attention"),
    "11": ("core", "05, 09b", "next-token prediction with causal self-attention; write the next-token distribution at a temperature; generate text from a tiny GPT; see a model without the mask cheat"),
    "12": ("optional", "07", "compare head counts at a fixed budget over seeds; find where one head fails; what each head does, by entropy and distance"),
    "13": ("optional", "04", "define closeness to the anti-diagonal and follow it over 10 epochs; where each step's peak sits; stored runs to 100 epochs"),
    "14": ("optional", "01", "time and memory of attention as the sequence grows; the slope per doubling; fused scaled_dot_product_attention"),
    "15": ("optional (exercise)", "05, 11", "write the attention step of a KV cache (bottom-right causal mask); cached generation equal to uncached; work and time of a step against context length; build grouped-query attention and measure the smaller cache"),
    "16": ("optional (exercise)", "01, 14", "a one-pass softmax with a running maximum; attention over key blocks equal to scaled_dot_product_attention; its peak memory against the from-scratch version"),
    "17": ("optional (exercise)", "09, 11", "write rotary position embeddings; show the score depends only on the offset; RoPE against learned and sinusoidal positions over three seeds, also at twice the trained length"),
}


def reading_minutes(path: Path) -> int:
    """Estimated minutes to read a notebook's prose and code, rounded up to 5."""
    nb = nbformat.read(path, as_version=4)
    words = sum(len(c.source.split()) for c in nb.cells if c.cell_type == "markdown")
    code = sum(len([line for line in c.source.splitlines() if line.strip()]) for c in nb.cells if c.cell_type == "code")
    minutes = words / WORDS_PER_MINUTE + code / CODE_LINES_PER_MINUTE
    return int(-(-minutes // 5) * 5)


def notebook_key(name: str) -> str:
    """"01b" for 01b_scaling_and_masks.ipynb, "04" for 04_seq2seq_with_attention.ipynb."""
    m = re.match(r"\d\d[a-z]?(?=_)", name)
    if not m:
        raise ValueError(f"a course notebook's name starts with its number (01_, 01b_), got {name!r}")
    return m.group(0)


def parse_benchmark(text: str) -> dict[str, str]:
    """{notebook key: "wall s / peak MiB"} from nbtools' benchmark table; solutions win for exercises."""
    found: dict[str, tuple[bool, str]] = {}
    for line in text.splitlines():
        m = re.match(r"\|\s*(\S+\.ipynb)\s*\|\s*([\d.]+)\s*\|\s*(\d+)\s*\|", line)
        if m:
            path, seconds, mib = m.groups()
            number, solution = notebook_key(Path(path).name), "/solutions/" in path
            if number not in found or solution or not found[number][0]:
                found[number] = (solution, f"{float(seconds):.0f} s, {mib} MiB")
    return {number: figure for number, (_, figure) in found.items()}


def current_runtimes(guide: str) -> dict[str, str]:
    """The run times already in the guide's table (so a partial benchmark keeps the others)."""
    out = {}
    for line in guide.split(TABLE[0])[-1].split(TABLE[1])[0].splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) >= 5 and re.match(r"\d\d", cells[0].strip("`")):
            out[notebook_key(cells[0].strip("`"))] = cells[4]
    return out


def notebook_table(runtimes: dict[str, str]) -> str:
    rows = ["| notebook | core or optional | prerequisites | reading (estimate) | run time, peak memory (measured) | learning outcomes |",
            "| --- | --- | --- | ---: | ---: | --- |"]
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]*.ipynb")):
        number = notebook_key(path.name)
        if number not in PLAN:
            raise ValueError(f"{path.name} has no entry in guide.PLAN (core or optional, prerequisites, outcomes)")
        kind, needs, outcomes = PLAN[number]
        source = ROOT / "notebooks" / "solutions" / path.name
        minutes = reading_minutes(source if source.exists() else path)
        runtime = runtimes.get(number) or UNMEASURED
        rows.append(f"| `{path.stem}` | {kind} | {needs} | {minutes} min | {runtime} | {outcomes} |")
    return "\n".join(rows)


def checker_catches() -> str:
    """Per exercise, the named mistakes of its checkers' test banks (tests/test_checkers_NN.py)."""
    sys.path.insert(0, str(ROOT / "tests"))
    lines = []
    for path in sorted((ROOT / "tests").glob("test_checkers_[0-9][0-9].py")):
        module = importlib.import_module(path.stem)
        banks = [(name, value) for name, value in vars(module).items()
                 if isinstance(value, dict) and "WRONG" in name and value]
        lines.append(f"**{path.stem[-2:]}**: "
                     + sum(len(bank) for _, bank in banks).__str__() + " named mistakes, each rejected with its hint.")
        for name, bank in banks:
            keys = [k if isinstance(k, str) else getattr(k, "__name__", str(k)).replace("_", " ") for k in bank]
            lines.append(f"- {name.replace('_', ' ').lower()}: " + "; ".join(keys))
        lines.append("")
    return "\n".join(lines).rstrip()


def replace_between(text: str, markers: tuple[str, str], body: str) -> str:
    start, end = markers
    head, rest = text.split(start, 1)
    return f"{head}{start}\n{body}\n{end}{rest.split(end, 1)[1]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course_utils.authoring.guide", description=__doc__.split("\n")[0])
    parser.add_argument("--run", nargs="*", type=Path, default=[], help="benchmark these notebooks now")
    parser.add_argument("--benchmark", type=Path, help="a saved `nbtools benchmark` table")
    args = parser.parse_args(argv)
    guide = GUIDE.read_text(encoding="utf-8")
    runtimes = current_runtimes(guide)
    if args.benchmark:
        runtimes.update(parse_benchmark(args.benchmark.read_text(encoding="utf-8")))
    if args.run:
        from .benchmark import benchmark

        table = benchmark([p.resolve() for p in args.run])
        print(table)
        runtimes.update(parse_benchmark(table))
    guide = replace_between(guide, TABLE, notebook_table({k: v for k, v in runtimes.items() if v != UNMEASURED}))
    guide = replace_between(guide, CATCHES, checker_catches())
    GUIDE.write_text(guide, encoding="utf-8")
    print(f"updated {GUIDE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
