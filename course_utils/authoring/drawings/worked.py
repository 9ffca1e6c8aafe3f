"""Drawings of the lessons' worked examples, with their numbers: a softmax step by step (01), what
dividing by sqrt(d_k) does to one row (01b), two heads against one (03), a causal mask on a score
matrix (05), inputs and targets shifted by one (11). Every number is computed here from the lesson's
own inputs (the same small matrices, the same sentence), never typed in; ``tests/test_drawings.py``
checks that each decimal drawn is one the lesson prints."""

from __future__ import annotations

import csv
import math
from pathlib import Path

from ...helpers.palette import DATA, HIGHLIGHT, INK, KEY, MASK, MUTED, PARAMETER, QUERY, VALUE, text_on, weight_colour
from .drawing import drawing
from .svg import Canvas

# Lesson 01, section 3.3: three queries, four keys, four values (d_k = d_v = 2).
Q1 = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
K1 = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]]
V1 = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]
ROW_01B = [15.5, -16.1, 2.3]  # lesson 01b, section 1.2: one query's raw scores at d_k = 256
S_05 = [[2.1, 1.5, 0.4], [0.8, 3.1, 1.2], [1.4, 0.7, 2.5]]  # lesson 05, section 3 (and 01b, section 2.3)
TEXT_11 = "the hen sat."  # lesson 11, section 1


def fmt(x: float) -> str:
    """A number as NumPy prints it rounded to 4 decimals: ``0.088``, ``2.0281``, ``1`` (no trailing zeros)."""
    r = round(x, 4)
    return str(int(r)) if r == int(r) else f"{r:.4f}".rstrip("0")


def softmax(row: list[float]) -> list[float]:
    top = max(row)
    e = [math.exp(v - top) for v in row]
    return [v / sum(e) for v in e]


def _dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b))


def _cells(c: Canvas, x: float, y: float, values: list[str], w: float, h: float, *, fills: list[str] | None = None,
           role=PARAMETER, size: float = 14) -> None:
    """A row of ``len(values)`` cells of ``w`` x ``h`` px holding ``values``, filled with ``fills``."""
    for j, v in enumerate(values):
        fill = fills[j] if fills else "#FFFFFF"
        c.rect(x + j * w, y, w, h, fill=fill, stroke=role.strong, sw=1.2)
        if v:
            c.text(x + (j + 0.5) * w, y + h / 2, v, size=size, colour=INK if fill == "#FFFFFF" else text_on(fill))


@drawing(
    "softmax_numbers", notebook="01", section="3.3 Worked example: 3 queries, 4 keys",
    title="Query 0 of the worked example: scores, scaling, exponentials, weights and output, with their numbers",
    alt="""Query 0 = [1, 0] of the worked example meets the four keys k0 = [1, 0], k1 = [0, 1], k2 = [1, 1] and
    k3 = [0, 0], one column per key. Row by row, from top to bottom: the dot products q times k are 1, 0, 1, 0;
    divided by the square root of d_k = 2 they become the scores 0.7071, 0, 0.7071, 0; their exponentials are
    2.0281, 1, 2.0281, 1, which sum to 6.0562; divided by that sum they become the weights 0.3349, 0.1651,
    0.3349, 0.1651, shaded like the course's heatmaps, summing to 1. Equal scores get equal weights. The last
    rows hold the values v0 = [1, 2], v1 = [3, 4], v2 = [5, 6], v3 = [7, 8] in green, and the output, the
    weighted average of the values: [3.6605, 4.6605].""",
)
def softmax_numbers() -> Canvas:
    q = Q1[0]
    dots = [_dot(q, k) for k in K1]
    scores = [d / math.sqrt(2) for d in dots]
    exps = [math.exp(s) for s in scores]
    weights = softmax(scores)
    out = [sum(w * v[f] for w, v in zip(weights, V1)) for f in range(2)]
    c = Canvas(800, 470)
    x0, w, h, top = 250, 92, 38, 76
    c.text(20, 24, "query 0 = [1, 0] against the four keys, one step per row", size=15, bold=True, anchor="start")
    for j, k in enumerate(K1):
        c.text(x0 + (j + 0.5) * w, top - 16, f"k{j} [{fmt(k[0])}, {fmt(k[1])}]", size=14, bold=True,
               colour=KEY.strong)
    rows = [
        ("q · k_{j}", [fmt(d) for d in dots], None, ""),
        ("÷ √d_{k} = √2: scores", [fmt(s) for s in scores], None, ""),
        ("exp(score)", [fmt(e) for e in exps], None, f"sum {fmt(sum(exps))}"),
        ("÷ sum: weights", [fmt(v) for v in weights], [weight_colour(v) for v in weights], "sum 1"),
    ]
    for r, (label, values, fills, note) in enumerate(rows):
        y = top + r * (h + 14)
        c.text(x0 - 14, y + h / 2, label, size=15, anchor="end", colour=QUERY.strong if r == 0 else INK)
        _cells(c, x0, y, values, w, h, fills=fills)
        if note:
            c.text(x0 + 4 * w + 14, y + h / 2, note, size=15, bold=True, anchor="start")
    vy = top + 4 * (h + 14) + 14
    c.text(x0 - 14, vy + h / 2, "values v_{j}", size=15, anchor="end", colour=VALUE.strong, bold=True)
    _cells(c, x0, vy, [f"[{fmt(v[0])}, {fmt(v[1])}]" for v in V1], w, h, fills=[VALUE.light] * 4, role=VALUE)
    oy = vy + h + 52
    c.line((x0 + 2 * w, vy + h + 4), (x0 + 2 * w, oy - 4))
    c.text(x0 + 2 * w + 12, vy + h + 24, "Σ_{j} weight_{j} · v_{j}", size=15, anchor="start")
    c.text(x0 - 14, oy + h / 2, "output", size=15, anchor="end", bold=True)
    c.box(x0 + 2 * w - 90, oy, 180, h, f"[{fmt(out[0])}, {fmt(out[1])}]", role=DATA, size=15, bold=True)
    c.lines(x0 + 4 * w + 14, oy + h / 2 - 8, ["between the smallest", "and the largest value"], size=13,
            colour=MUTED, anchor="start")
    return c


@drawing(
    "scaling_numbers", notebook="01b", section="1.2 What large scores do to the softmax",
    title="One row of raw scores at d_k = 256, softmaxed as they are and after dividing by sqrt(d_k) = 16",
    alt="""Two routes for the same three raw scores of one query at d_k = 256: 15.5, -16.1 and 2.3. Top route,
    unscaled: the softmax of the raw scores is practically one-hot, about 1 for the first key, about 2e-14 and
    2e-06 for the others, drawn as one bright cell and two dark ones. Bottom route, scaled: the scores divided by
    the square root of d_k, which is 16, become 0.9688, -1.0063 and 0.1437; their exponentials are 2.6346, 0.3656
    and 1.1546, summing to 4.1548; the weights are 0.6341, 0.088 and 0.2779, a real distribution over the three
    keys. The order of the keys is the same in both routes; only the scaled one leaves the other keys a share
    and lets gradient through.""",
)
def scaling_numbers() -> Canvas:
    raw, d_k = ROW_01B, 256
    scaled = [s / math.sqrt(d_k) for s in raw]
    exps = [math.exp(s) for s in scaled]
    raw_w, weights = softmax(raw), softmax(scaled)
    c = Canvas(800, 420)
    x0, w, h = 250, 104, 38
    c.text(20, 24, "one query, three keys, d_{k} = 256: the same row twice", size=15, bold=True, anchor="start")
    for j in range(3):
        c.text(x0 + (j + 0.5) * w, 58, f"key {j}", size=14, bold=True, colour=KEY.strong)
    c.text(x0 - 14, 94, "raw scores q · k", size=15, anchor="end")
    _cells(c, x0, 75, [fmt(v) for v in raw], w, h)
    c.text(20, 150, "unscaled", size=15, bold=True, anchor="start", colour=MUTED)
    c.text(x0 - 14, 150, "softmax", size=15, anchor="end")
    approx = [f"≈ {v:.0e}".replace("e-0", "e-").replace("e+00", "") if v < 0.5 else "≈ 1" for v in raw_w]
    _cells(c, x0, 131, approx, w, h, fills=[weight_colour(v) for v in raw_w])
    c.text(x0 + 3 * w + 14, 150, "one-hot in practice", size=15, anchor="start")
    c.line((14, 192), (786, 192), colour="#D0D0D0", sw=1.5, arrow=None, dash="4 4")
    c.text(20, 222, "scaled", size=15, bold=True, anchor="start", colour=MUTED)
    rows = [(f"÷ √d_{{k}} = {math.isqrt(d_k)}", [fmt(v) for v in scaled], None, ""),
            ("exp", [fmt(v) for v in exps], None, f"sum {fmt(sum(exps))}"),
            ("÷ sum: weights", [fmt(v) for v in weights], [weight_colour(v) for v in weights], "a real distribution")]
    for r, (label, values, fills, note) in enumerate(rows):
        y = 246 + r * (h + 16)
        c.text(x0 - 14, y + h / 2, label, size=15, anchor="end")
        _cells(c, x0, y, values, w, h, fills=fills)
        if note:
            c.text(x0 + 3 * w + 14, y + h / 2, note, size=15, anchor="start")
    return c


def two_head_rows() -> tuple[list[str], dict[str, list[float]]]:
    """Lesson 03, section 1.1: the weights of "cat" for head 1 (word class), head 2 (previous token) and one
    head asking both, computed from ``data/sentence_features.csv`` as the lesson does."""
    path = Path(__file__).resolve().parents[3] / "data" / "sentence_features.csv"
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    names, tokens = rows[0][1:], [r[0] for r in rows[1:]]
    X = [[float(v) for v in r[1:]] for r in rows[1:]]
    n, s, col = len(tokens), 12.0, {name: j for j, name in enumerate(names)}
    W = [[0.0] * len(names) for _ in names]
    for looker, wanted in [("determiner", "noun"), ("verb", "animate"), ("animate", "verb"),
                           ("preposition", "place"), ("place", "preposition")]:
        W[col[looker]][col[wanted]] = s
    cat = tokens.index("cat")
    q_class = [sum(X[cat][a] * W[a][b] for a in range(len(names))) for b in range(len(names))]
    q_prev = [s if j == cat - 1 else 0.0 for j in range(n)]
    P = [[1.0 if i == j else 0.0 for j in range(n)] for i in range(n)]
    heads = {
        "class": softmax([_dot(q_class, X[j]) / math.sqrt(len(names)) for j in range(n)]),
        "previous": softmax([_dot(q_prev, P[j]) / math.sqrt(n) for j in range(n)]),
        "both": softmax([_dot(q_class + q_prev, X[j] + P[j]) / math.sqrt(len(names) + n) for j in range(n)]),
    }
    return tokens, heads


@drawing(
    "two_heads_vs_one", notebook="03", section="1.1 Two questions, one head or two",
    title="Two heads answer two questions whole; one head asking both splits its weight",
    alt="""The query "cat" of the sentence "the cat sat on the mat" asks two questions: which verb do I do, and
    which word came just before me. Each question is drawn as one row of six cells, one per key word (the, cat,
    sat, on, the, mat), shaded like the course's heatmaps. Top, two heads: head 1 (word class) puts weight 0.96
    on "sat"; head 2 (previous token) puts 0.96 on the first "the". Their outputs are kept side by side,
    concatenated, and the output projection W_O can use each answer whole. Bottom, one head asking both questions
    with one softmax row: it splits its weight, 0.47 on "the" and 0.47 on "sat", so its output is half of one
    word and half of the other and neither answer arrives at full strength.""",
)
def two_heads_vs_one() -> Canvas:
    tokens, heads = two_head_rows()
    c = Canvas(800, 430)
    x0, w, h = 220, 54, 40
    shown = lambda row: [fmt(round(v, 2)) if v >= 0.1 else "" for v in row]  # noqa: E731 (the printed top weights)
    c.text(20, 24, "the query \"cat\" asks two questions", size=15, bold=True, anchor="start")
    for j, t in enumerate(tokens):
        c.text(x0 + (j + 0.5) * w, 64, t, size=15, bold=True, colour=KEY.strong)
    c.text(x0 + 3 * w, 86, "keys", size=13, colour=KEY.strong)
    c.text(20, 122, "two heads", size=15, bold=True, anchor="start")
    layout = [("class", 140, ["head 1: which verb", "do I do?"]), ("previous", 204, ["head 2: which word", "came before me?"]),
              ("both", 330, ["one head asking", "both questions"])]
    for key, y, label in layout:
        c.box(20, y - 2, 180, h + 4, label, role=QUERY, size=14)
        row = heads[key]
        _cells(c, x0, y, shown(row), w, h, fills=[weight_colour(v) for v in row])
        c.line((200, y + h / 2), (x0 - 4, y + h / 2), colour=QUERY.strong)
    c.line((14, 284), (786, 284), colour="#D0D0D0", sw=1.5, arrow=None, dash="4 4")
    c.text(20, 310, "one head", size=15, bold=True, anchor="start")
    ox = x0 + 6 * w + 40
    c.line((x0 + 6 * w + 6, 160), (ox - 4, 176), colour=VALUE.strong)
    c.line((x0 + 6 * w + 6, 224), (ox - 4, 200), colour=VALUE.strong)
    c.box(ox, 160, 64, 56, ["sat"], role=VALUE, size=15, bold=True)
    c.box(ox + 64, 160, 64, 56, ["the"], role=VALUE, size=15, bold=True)
    c.text(ox + 64, 142, "concatenated", size=14)
    c.line((ox + 128, 188), (ox + 146, 188))
    c.box(ox + 150, 168, 52, 40, "W_{O}", role=PARAMETER, size=16)
    c.text(ox + 64, 236, "both answers whole", size=14, colour=MUTED)
    c.line((x0 + 6 * w + 6, 350), (ox - 4, 350), colour=VALUE.strong)
    c.box(ox, 326, 150, 48, ["½ the + ½ sat"], role=VALUE, size=15, bold=True)
    c.text(ox + 75, 396, "neither answer whole", size=14, colour=MUTED)
    return c


@drawing(
    "masked_scores_numbers", notebook="05", section="3. Masking the scores: why -inf",
    title="A causal mask on a 3 by 3 score matrix: blocked scores become minus infinity, then weight 0",
    alt="""Four 3 by 3 matrices from left to right, rows are queries and columns keys. First the raw scores
    S = [[2.1, 1.5, 0.4], [0.8, 3.1, 1.2], [1.4, 0.7, 2.5]]. Second the causal mask, True on and below the
    diagonal (white: may attend) and False above it (dark: blocked). Third the scores with every blocked entry
    replaced by minus infinity: row 0 keeps only 2.1, row 1 keeps 0.8 and 3.1, row 2 keeps all three. Fourth
    the weights, the softmax of each row, shaded like the course's heatmaps: row 0 is 1, 0, 0; row 1 is 0.0911,
    0.9089, 0, the softmax of 0.8 and 3.1 alone; row 2 is 0.2222, 0.1103, 0.6675, the ordinary softmax of its
    three scores. Every row still sums to 1 and every blocked key gets weight exactly 0.""",
)
def masked_scores_numbers() -> Canvas:
    S, n = S_05, len(S_05)
    weights = [softmax(row[: i + 1]) + [0.0] * (n - i - 1) for i, row in enumerate(S)]
    c = Canvas(800, 350)
    cell, wide, y0 = 46, 62, 84
    xs = [36, 220, 404, 590]
    c.text(20, 24, "the scores of three tokens, masked before the softmax", size=15, bold=True, anchor="start")
    c.matrix(xs[0], y0, n, n, cell, "S", (), role=PARAMETER, fill=lambda i, j: "#FFFFFF",
             text=lambda i, j: fmt(S[i][j]), size=14)
    for j in range(n):  # the keys, along the bottom of S
        c.text(xs[0] + (j + 0.5) * cell, y0 + n * cell + 14, str(j), size=14, colour=KEY.strong, bold=True)
    c.text(xs[0] + n * cell + 8, y0 + n * cell + 14, "k", size=14, colour=KEY.strong, anchor="start", bold=True)
    c.text(xs[0] + n * cell / 2, y0 + n * cell + 36, "raw scores", size=13, colour=MUTED, mono=True)
    c.matrix(xs[1], y0, n, n, cell, "causal mask", "True = may attend", role=MASK,
             fill=lambda i, j: MASK.strong if j > i else "#FFFFFF", text=lambda i, j: "F" if j > i else "T", size=14)
    c.matrix(xs[2], y0, n, n, cell, "S, blocked = −∞", "masked_fill(~mask, −∞)", role=PARAMETER,
             fill=lambda i, j: "#E6E6E6" if j > i else "#FFFFFF", text=lambda i, j: "−∞" if j > i else fmt(S[i][j]),
             size=14)
    c.matrix(xs[3], y0, n, n, wide, "weights", "softmax per row", role=PARAMETER,
             fill=lambda i, j: weight_colour(weights[i][j]), text=lambda i, j: fmt(weights[i][j]), size=14)
    mid = y0 + n * cell / 2
    for k, sym in enumerate(["&", "→", "→"]):
        c.text((xs[k] + n * cell + xs[k + 1]) / 2, mid, sym, size=20, bold=True)
    for i in range(n):
        c.text(xs[0] - 10, y0 + (i + 0.5) * cell, str(i), size=14, colour=QUERY.strong, anchor="end", bold=True)
    c.text(xs[0] - 10, y0 - 14, "q", size=14, colour=QUERY.strong, anchor="end", bold=True)
    c.text(400, 326, "e^{−∞} = 0: a blocked key gets weight exactly 0, and each row still sums to 1", size=15)
    return c


@drawing(
    "next_token_shift", notebook="11", section="1. Next-token prediction",
    title="Inputs and targets: the same text shifted by one, each position paired with the token after it",
    alt="""The text "the hen sat." written twice, one character per cell. Top row, the inputs: every character
    but the last, positions 0 to 10. Bottom row, the targets: every character but the first, shifted one cell
    to the left, so that the target under position t is the character at position t + 1 of the text. Arrows
    pair each input position with its target. Position 4 is highlighted: it reads the prefix "the h" (positions
    0 to 4, outlined) and its target is "e". A string of T + 1 characters gives T training examples, all trained
    in one forward pass; the causal mask makes sure position t reads only inputs 0 to t, never its own target.
    Underneath, the same on token ids: the sequence [7, 4, 1, 4, 2] gives inputs [7, 4, 1, 4] and targets
    [4, 1, 4, 2].""",
)
def next_token_shift() -> Canvas:
    inputs, targets = TEXT_11[:-1], TEXT_11[1:]
    show = lambda ch: "␣" if ch == " " else ch  # noqa: E731
    c = Canvas(800, 380)
    x0, w, t = 150, 54, 4
    c.text(20, 24, f"the text \"{TEXT_11}\", shifted by one", size=15, bold=True, anchor="start")
    c.text(x0 - 14, 100, "inputs", size=15, bold=True, anchor="end")
    c.text(x0 - 14, 210, "targets", size=15, bold=True, anchor="end")
    for k, (a, b) in enumerate(zip(inputs, targets)):
        x = x0 + k * w
        c.text(x + w / 2, 62, str(k), size=13, colour=MUTED)
        role = HIGHLIGHT if k <= t else DATA
        c.box(x + 4, 80, w - 8, 40, show(a), role=role, size=17, bold=True, sw=1.5)
        c.box(x + 4, 190, w - 8, 40, show(b), role=HIGHLIGHT if k == t else DATA, size=17, bold=True, sw=1.5)
        c.line((x + w / 2, 124), (x + w / 2, 186), colour=INK if k == t else "#ADADAD", sw=2.4 if k == t else 1.5)
    c.rect(x0, 74, (t + 1) * w, 52, stroke=HIGHLIGHT.strong, sw=2.5, rx=6)
    c.text(x0 + (t + 1) * w / 2, 148, f"position {t} reads \"{inputs[: t + 1]}\"", size=14, bold=True,
           halo="#FFFFFF")
    c.text(x0 + (t + 0.5) * w, 252, f"target \"{targets[t]}\"", size=14, bold=True)
    c.text(20, 300, "on token ids:", size=15, anchor="start")
    ids = [7, 4, 1, 4, 2]
    c.text(150, 300, f"sequence {ids}", size=15, anchor="start", mono=True)
    c.text(150, 330, f"inputs {ids[:-1]}, targets {ids[1:]}", size=15, anchor="start", mono=True)
    c.text(20, 360, "the causal mask keeps position t from reading input t + 1, its own target", size=14,
           colour=MUTED, anchor="start")
    return c
