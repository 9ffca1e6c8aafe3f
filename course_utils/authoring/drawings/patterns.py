"""Drawings of attention patterns: how to read a heatmap (02), who reads whom in cross-attention (06),
the head patterns a trained layer shows (07). Shaded like the course's heatmaps (viridis), queries on the
rows in blue, keys on the columns in orange."""

from __future__ import annotations

import csv
import math
from pathlib import Path

from ...helpers.palette import DATA, INK, KEY, MUTED, PARAMETER, QUERY, VALUE, text_on, weight_colour
from .drawing import drawing
from .svg import Canvas

SENTENCE = ["the", "cat", "sat", "on", "the", "mat"]  # lessons 02 and 03
# Lesson 02, section 2: who looks for what (query feature, key feature, weight in units of the strength).
RULES_02 = [("determiner", "noun", 1.0), ("verb", "animate", 1.0), ("verb", "place", 0.5), ("animate", "verb", 1.0),
            ("preposition", "place", 1.0), ("place", "preposition", 1.0)]
STRENGTH_02 = 12.0


def lesson_02_weights() -> list[list[float]]:
    """Lesson 02's hand-written attention, computed as the lesson computes it: the features X of
    ``data/sentence_features.csv``, Q = XW with W from ``RULES_02``, K = X, softmax(QK^T / sqrt(6)) row by row."""
    path = Path(__file__).resolve().parents[3] / "data" / "sentence_features.csv"
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    names, X = rows[0][1:], [[float(v) for v in r[1:]] for r in rows[1:]]
    col, d = {name: j for j, name in enumerate(names)}, len(names)
    W = [[0.0] * d for _ in range(d)]
    for looker, wanted, weight in RULES_02:
        W[col[looker]][col[wanted]] = weight * STRENGTH_02
    out = []
    for x in X:
        q = [sum(x[a] * W[a][b] for a in range(d)) for b in range(d)]
        scores = [sum(qb * kb for qb, kb in zip(q, k)) / math.sqrt(d) for k in X]
        e = [math.exp(v - max(scores)) for v in scores]
        out.append([v / sum(e) for v in e])
    return out


def _rows(pattern, n: int) -> list[list[float]]:
    """An n x n weight matrix from ``pattern(i)``: the keys query i reads (equal shares), each row summing to 1."""
    out = []
    for i in range(n):
        keys = pattern(i)
        out.append([1 / len(keys) if j in keys else 0.0 for j in range(n)])
    return out


def _heatmap(c: Canvas, x: float, y: float, w: list[list[float]], cell: float) -> None:
    c.grid(x, y, len(w), len(w[0]), cell, role=PARAMETER, fill=lambda i, j: weight_colour(w[i][j]), sw=1.0)


@drawing(
    "heatmap_reading", notebook="02", section="2. From features to queries and keys: how to read it",
    title="How to read an attention heatmap: rows are queries, columns are keys",
    alt="""Left, the lesson's hand-written attention for the sentence "the cat sat on the mat" (queries Q = XW,
    keys K = X), drawn as a heatmap: queries down the left in blue, keys along the bottom in orange, bright cells
    for large weights on the course's viridis scale, and every weight of at least 0.05 written in its cell, as
    the lesson prints them. Both "the" rows put 0.49 on "cat" and 0.49 on "mat"; "cat" puts 0.96 on "sat";
    "sat" puts 0.90 on "cat" and 0.08 on "mat"; "on" puts 0.96 on "mat"; "mat" puts 0.96 on "on". One row is
    outlined in blue: the query "cat", the word asking, and its weights over all the keys; every row sums to 1.
    One column is outlined in orange: the key "mat", and how much each query reads it (0.49, 0.08, 0.96 and
    0.49); a column need not sum to anything. Right, three shapes to recognise, each a small heatmap: a bright
    diagonal, where every token reads itself; a bright column, where every query reads the same key; a stripe
    just below the diagonal, where every token reads the token before it, a pattern of position rather than of
    content.""",
)
def heatmap_reading() -> Canvas:
    n, cell = len(SENTENCE), 40
    gx, gy = 96, 84
    c = Canvas(800, 480)
    weights = lesson_02_weights()
    c.text(20, 24, "the heatmap above, Q = XW and K = X, read two ways", size=15, bold=True, anchor="start")
    _heatmap(c, gx, gy, weights, cell)
    for i in range(n):  # the weights the lesson prints: every key with at least 0.05, to 2 decimals
        for j in range(n):
            if weights[i][j] >= 0.05:
                c.text(gx + (j + 0.5) * cell, gy + (i + 0.5) * cell, f"{weights[i][j]:.2f}", size=13,
                       colour=text_on(weight_colour(weights[i][j])))
    for k, word in enumerate(SENTENCE):
        c.text(gx - 8, gy + (k + 0.5) * cell, word, size=14, colour=QUERY.strong, anchor="end", bold=True)
        c.text(gx + (k + 0.5) * cell, gy + n * cell + 16, word, size=14, colour=KEY.strong, bold=True)
    c.text(gx - 8, gy - 16, "queries", size=14, colour=QUERY.strong, anchor="end", bold=True)
    c.text(gx + n * cell / 2, gy + n * cell + 40, "keys", size=14, colour=KEY.strong, bold=True)
    row, col = 1, 5
    c.rect(gx - 3, gy + row * cell - 3, n * cell + 6, cell + 6, stroke=QUERY.strong, sw=3, rx=4)
    c.rect(gx + col * cell - 3, gy - 3, cell + 6, n * cell + 6, stroke=KEY.strong, sw=3, rx=4)
    c.lines(gx + n * cell / 2, 390, ["a row: one query (\"cat\") and its", "weights over every key; sums to 1"],
            size=14, colour=QUERY.strong)
    c.lines(gx + n * cell / 2, 438, ["a column: one key (\"mat\"): how much", "each query reads it; no fixed sum"],
            size=14, colour=KEY.strong)

    small, sx = 17, 420
    shapes = [
        (lambda i: [i], "a diagonal", ["every token reads itself"]),
        (lambda i: [2], "a column", ["every query reads one key,", "whoever asks"]),
        (lambda i: [max(i - 1, 0)], "a stripe below the diagonal", ["every token reads the one before:",
                                                                   "position, not content"]),
    ]
    for k, (pattern, name, note) in enumerate(shapes):
        y = 60 + k * 138
        _heatmap(c, sx, y, _rows(pattern, n), small)
        c.text(sx + n * small + 18, y + 14, name, size=15, bold=True, anchor="start")
        c.lines(sx + n * small + 18, y + 50, note, size=14, anchor="start")
    return c


@drawing(
    "cross_attention_who_reads", notebook="06", section="1. One mechanism, two sources",
    title="Cross-attention: decoder positions ask, encoder positions answer",
    alt="""Left, who reads whom: three decoder positions y0, y1, y2 along the top are the queries (blue); five
    encoder positions x0 to x4 along the bottom supply the keys (orange) and the values (green). Every decoder
    position is joined to every encoder position: no causal mask, because the source is known in full before
    decoding starts. Right, the weights of that call, scaled_dot_product_attention(Y, X, X), form a grid of shape
    (n, m) = (3, 5), one row per decoder position and one column per encoder position, each row summing to 1
    (the shading is an illustration, not computed).
    The output has one row per query, shape (n, d) = (3, 4): the output belongs to the decoder. Below, the
    mistake that runs without error: with the arguments swapped, (X, Y, Y), the encoder asks the questions and
    the weights come out (5, 3).""",
)
def cross_attention_who_reads() -> Canvas:
    n, m = 3, 5
    c = Canvas(800, 420)
    c.text(20, 24, "scaled_dot_product_attention(Y, X, X): n = 3 queries, m = 5 keys", size=15, bold=True,
           anchor="start")
    dx = [150 + 110 * i for i in range(n)]
    ex = [60 + 84 * j for j in range(m)]
    top, bottom = 70, 300
    c.text(20, top - 6, "decoder Y", size=14, bold=True, anchor="start")
    for i in range(n):
        for j in range(m):
            c.line((dx[i], top + 40), (ex[j] + 26, bottom - 2), colour="#ADADAD", sw=1.5, arrow=None)
    for i, x in enumerate(dx):
        c.box(x - 30, top, 60, 40, f"y{i}", role=QUERY, size=15, bold=True)
    for j, x in enumerate(ex):
        c.rect(x, bottom, 52, 26, fill=KEY.light, stroke=KEY.strong, sw=1.5, rx=3)
        c.text(x + 26, bottom + 13, f"k{j}", size=14, colour=INK)
        c.rect(x, bottom + 26, 52, 26, fill=VALUE.light, stroke=VALUE.strong, sw=1.5, rx=3)
        c.text(x + 26, bottom + 39, f"v{j}", size=14, colour=INK)
        c.text(x + 26, bottom + 68, f"x{j}", size=14, bold=True)
    c.text(20, bottom + 98, "encoder X: keys and values", size=14, bold=True, anchor="start")
    c.rect(142, 166, 216, 48, fill="#FFFFFF", stroke="#D0D0D0", sw=1, rx=6)  # a label on the lines, readable
    c.lines(250, 190, ["every query reads every key:", "no causal mask"], size=14)

    gx, gy, cell = 560, 120, 34
    weights = [[0.1, 0.6, 0.1, 0.1, 0.1], [0.05, 0.1, 0.1, 0.7, 0.05], [0.3, 0.1, 0.2, 0.1, 0.3]]
    c.text(gx + m * cell / 2, gy - 40, "weights (n, m) = (3, 5)", size=15, bold=True)
    c.text(gx + m * cell / 2, gy - 18, "rows sum to 1", size=13, colour=MUTED)
    c.grid(gx, gy, n, m, cell, role=PARAMETER, fill=lambda i, j: weight_colour(weights[i][j]))
    for i in range(n):
        c.text(gx - 8, gy + (i + 0.5) * cell, f"y{i}", size=14, colour=QUERY.strong, anchor="end", bold=True)
    for j in range(m):
        c.text(gx + (j + 0.5) * cell, gy + n * cell + 16, f"x{j}", size=14, colour=KEY.strong, bold=True)
    c.box(gx + 10, 262, m * cell - 20, 50, "output (3, 4)", role=DATA, size=15, bold=True, note="one row per query")
    c.text(gx + m * cell / 2, 350, "swapped (X, Y, Y): weights (5, 3),", size=14, colour=MUTED)
    c.text(gx + m * cell / 2, 372, "the encoder asks: no error", size=14, colour=MUTED)
    return c


@drawing(
    "head_patterns", notebook="07", section="4. Eight heads, one sequence: what to look for",
    title="Three kinds of head on a sequence of 12: previous symbol, next symbol, flat rows for counting",
    alt="""Three attention patterns over n = 12 positions, each a 12 by 12 heatmap with queries on the rows and
    keys on the columns, shaded like the course's heatmaps. Left, a previous-symbol head: a bright stripe just
    below the diagonal, query i reads key i minus 1 (the first query has no previous key and reads itself).
    Middle, a next-symbol head: the stripe just above the diagonal, query i reads key i plus 1. Right, a
    counting head: flat rows, every key gets about 1/12, so the output is the average of the values and the
    share of markers in it counts them. The first two have low entropy and a mean distance of one position;
    the flat head has the highest entropy and the mean distance of uniform attention.""",
)
def head_patterns() -> Canvas:
    n, cell = 12, 16
    c = Canvas(800, 360)
    c.text(20, 24, "what a trained layer's heads can look like (n = 12)", size=15, bold=True, anchor="start")
    patterns = [
        (lambda i: [max(i - 1, 0)], "previous symbol", ["stripe below the diagonal:", "query i reads key i − 1"]),
        (lambda i: [min(i + 1, n - 1)], "next symbol", ["stripe above the diagonal:", "query i reads key i + 1"]),
        (lambda i: list(range(n)), "count the markers", ["flat rows: every key ≈ 1/12,", "an average of all values"]),
    ]
    for k, (pattern, name, note) in enumerate(patterns):
        x = 40 + k * 256
        c.text(x + n * cell / 2, 60, name, size=15, bold=True)
        _heatmap(c, x, 80, _rows(pattern, n), cell)
        c.text(x - 6, 88, "q", size=13, colour=QUERY.strong, anchor="end", bold=True)
        c.text(x + n * cell - 6, 80 + n * cell + 14, "k", size=13, colour=KEY.strong, bold=True)
        c.lines(x + n * cell / 2, 80 + n * cell + 46, note, size=14)
    return c
