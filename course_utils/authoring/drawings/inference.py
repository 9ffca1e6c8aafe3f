"""Drawings of attention at inference scale: the KV cache and grouped-query attention (15), tiled
attention over key blocks (16)."""

from __future__ import annotations

import math

from ...helpers.palette import DATA, HIGHLIGHT, INK, KEY, MASK, MUTED, PARAMETER, QUERY, VALUE, weight_colour
from .drawing import drawing
from .svg import Canvas

_PROMPT = ["the", "cat", "sat", "on"]


def _tokens(c: Canvas, x: float, y: float, words: list[str], cell: float, *, first: int = 0,
            highlight: int | None = None) -> None:
    """Tokens as a column, one row per position, aligned with the rows of the matrices beside them."""
    for k, word in enumerate(words):
        role = HIGHLIGHT if k == highlight else DATA
        c.rect(x, y + k * cell, 64, cell, fill=role.light, stroke=MUTED, sw=1.2)
        c.text(x + 32, y + (k + 0.5) * cell, word, size=14)
        c.text(x - 6, y + (k + 0.5) * cell, str(first + k), size=13, colour=MUTED, anchor="end")


def _qkv(c: Canvas, x: float, y: float, rows: int, cell: float, names: tuple[str, str, str], *,
         new_rows: int | None = None, skip_q: bool = False) -> None:
    """Q, K, V side by side as rows x 3 grids; ``new_rows``: only the last rows are new (outlined)."""
    for k, (role, name) in enumerate(zip((QUERY, KEY, VALUE), names)):
        if skip_q and k == 0:
            continue
        gx = x + k * 84
        n = rows
        c.grid(gx, y, n, 3, cell, role=role)
        c.text(gx + 1.5 * cell, y - 14, name, size=16, bold=True, colour=role.strong)
        if new_rows:
            c.rect(gx - 3, y + (n - new_rows) * cell - 3, 3 * cell + 6, new_rows * cell + 6, stroke=HIGHLIGHT.strong,
                   sw=2.5, rx=3)


@drawing(
    "kv_cache", notebook="15", section="the KV cache: prefill, then one step at a time",
    title="The KV cache: prefill of the prompt, then one decode step",
    alt="""Two rows. Top, prefill: the prompt "the cat sat on" (positions 0 to 3) goes through the model at
    once; every position gets its query, key and value (blue, orange and green matrices with one row per
    position). The keys and values are stored in the KV cache, per layer, of shape (B, h, t, d_k) with
    t = 4. The attention weights form a 4 by 4 lower triangle (the causal mask), and the last position's
    output predicts the next token, "the". Bottom, one decode step: only the new token "the" at position 4
    is run through the model. It gets one query, one key and one value; the key and value are appended to
    the cache (the new fifth row, outlined in yellow-brown), and the single new query attends over all five
    cached keys, a 1 by 5 row of weights with no mask needed, because the cache holds only the past. Its
    output predicts "mat". Each step computes one new query, key and value instead of the whole sequence
    again.""",
)
def kv_cache() -> Canvas:
    c = Canvas(800, 560)
    cell = 22
    c.text(20, 24, "prefill: the whole prompt at once", size=15, bold=True, anchor="start")
    c.text(20, 300, "decode: one new token", size=15, bold=True, anchor="start")
    c.line((14, 276), (786, 276), colour="#D0D0D0", sw=1.5, arrow=None, dash="4 4")

    # Prefill.
    y0 = 80
    _tokens(c, 48, y0, _PROMPT, cell)
    c.line((118, y0 + 2 * cell), (150, y0 + 2 * cell))
    _qkv(c, 160, y0, 4, cell, ("Q", "K", "V"))
    c.rect(232, y0 - 36, 174, 4 * cell + 56, stroke=INK, sw=1.5, rx=8, dash="6 4")
    c.text(319, y0 + 4 * cell + 36, "stored: the KV cache", size=14, bold=True)
    wx = 460
    c.line((410, y0 + 2 * cell), (wx - 6, y0 + 2 * cell))
    c.grid(wx, y0, 4, 4, cell, role=PARAMETER,
           fill=lambda i, j: MASK.strong if j > i else weight_colour(1 / (i + 1)))
    c.text(wx + 2 * cell, y0 - 14, "weights", size=15, bold=True)
    c.text(wx + 2 * cell, y0 + 4 * cell + 16, "(4, 4), causal", size=13, colour=MUTED, mono=True)
    c.line((wx + 4 * cell + 6, y0 + 3.5 * cell), (630, y0 + 3.5 * cell))
    c.box(636, y0 + 3.5 * cell - 20, 140, 40, "next: \"the\"", role=DATA, bold=True)
    c.text(706, y0 + 3.5 * cell - 36, "from the last row", size=13, colour=MUTED)
    c.text(319, y0 + 4 * cell + 56, "K, V: (B, h, t, d_k), t = 4", size=13, colour=MUTED, mono=True)

    # One decode step.
    y1 = 346
    _tokens(c, 48, y1 + 4 * cell, ["the"], cell, first=4, highlight=0)
    c.line((118, y1 + 4.5 * cell), (150, y1 + 4.5 * cell))
    c.grid(160, y1 + 4 * cell, 1, 3, cell, role=QUERY)
    c.text(160 + 1.5 * cell, y1 + 4 * cell - 14, "q", size=16, bold=True, colour=QUERY.strong)
    _qkv(c, 160, y1, 5, cell, ("Q", "K", "V"), new_rows=1, skip_q=True)
    c.rect(232, y1 - 36, 174, 5 * cell + 56, stroke=INK, sw=1.5, rx=8, dash="6 4")
    c.text(319, y1 + 5 * cell + 36, "the cache, one row longer:", size=14, bold=True)
    c.text(319, y1 + 5 * cell + 56, "the new k and v appended", size=14)
    weights = [0.1, 0.35, 0.05, 0.2, 0.3]
    below = y1 + 5 * cell + 76  # the query's path under the cache, to the weights
    c.line((160 + 1.5 * cell, y1 + 5 * cell + 4), (160 + 1.5 * cell, below), (wx + 2.5 * cell, below),
           (wx + 2.5 * cell, y1 + 4 * cell + cell + 6), colour=QUERY.strong)
    c.line((410, y1 + 2.5 * cell), (wx - 6, y1 + 2.5 * cell))
    c.grid(wx, y1 + 4 * cell, 1, 5, cell, role=PARAMETER, fill=lambda i, j: weight_colour(weights[j]))
    c.text(wx + 2.5 * cell, y1 + 4 * cell - 14, "weights (1, 5)", size=15, bold=True)
    c.text(wx + 2.5 * cell, y1 + 2 * cell - 10, "q attends over", size=13, colour=MUTED)
    c.text(wx + 2.5 * cell, y1 + 2 * cell + 8, "every cached key", size=13, colour=MUTED)
    c.line((wx + 5 * cell + 6, y1 + 4.5 * cell), (630, y1 + 4.5 * cell))
    c.box(636, y1 + 4.5 * cell - 20, 140, 40, "next: \"mat\"", role=DATA, bold=True)
    c.text(706, y1 + 4.5 * cell + 36, "computed: 1 q, 1 k, 1 v", size=13, colour=MUTED)
    return c


ROW_16 = [2.0, 5.0, 1.0, 7.0]  # lesson 16, section 2: the row whose running maximum and sum it traces


def _running_sum(c: Canvas, y: float) -> None:
    """The running maximum m and sum l of one row, read one element at a time: at each step the old sum
    (grey) shrinks by e^(m - m_new) when the maximum grows, and the new term e^(x_j - m_new) (orange) is added."""
    c.text(20, y, "the running max m and sum ℓ of one row, the lesson's [2, 5, 1, 7], one key at a time:", size=15,
           bold=True, anchor="start")
    m, l, unit, x0, step = -math.inf, 0.0, 96, 40, 190
    for j, x in enumerate(ROW_16):
        m_new = max(m, x)
        old, new = l * math.exp(m - m_new), math.exp(x - m_new)
        cx = x0 + j * step
        c.box(cx, y + 20, 64, 30, f"x = {x:g}", role=KEY, size=14, bold=True)
        grew = m_new > m
        c.text(cx + 74, y + 35, (f"m: {m:g} → {m_new:g}" if j else f"m = {m_new:g}") if grew else f"m stays {m:g}",
               size=14, anchor="start", bold=grew)
        scale = f"old ℓ × e^{{{m:g} − {m_new:g}}}" if j and grew else ("old ℓ × 1" if j else "ℓ = 0 to start")
        c.text(cx, y + 74, scale, size=15, anchor="start", colour=MUTED)
        if old:
            c.rect(cx, y + 94, old * unit, 26, fill="#D9D9D9", stroke=MUTED, sw=1.2)
        c.rect(cx + old * unit, y + 94, new * unit, 26, fill=KEY.light, stroke=KEY.strong, sw=1.2)
        c.text(cx, y + 138, f"+ e^{{{x:g} − {m_new:g}}}: ℓ = {old + new:.4f}", size=15, anchor="start")
        if j:
            c.line((cx - 22, y + 107), (cx - 8, y + 107), sw=1.5)
        m, l = m_new, old + new
    weights = ", ".join(f"{math.exp(x - m) / l:.4f}" for x in ROW_16)
    c.text(400, y + 172, f"after the last key: softmax = e^{{x − m}} / ℓ = [{weights}]", size=15)


@drawing(
    "tiled_attention", notebook="16", section="attention over key blocks",
    title="Tiled attention: one query block, key and value blocks streamed with a running max and sum",
    alt="""One block of queries (blue, n_q rows of d_k features) meets the keys in blocks: K transposed is cut
    into blocks K_0, K_1, K_2 (orange) and V into matching blocks V_0, V_1, V_2 (green). The drawing shows
    block j = 1 being processed. Only its scores S_1 = Q K_1 transposed / sqrt(d_k), of shape (n_q, block),
    exist in memory, outlined; the scores of block 0 are gone, already folded into the running state, and
    those of block 2 have not been computed yet: the full n by m score matrix never exists. Per query row the
    running state holds the largest score so far m, the running sum l (drawn as ℓ) of exp(score - m), and the accumulator
    acc of exp-weighted values (n_q by d_v). For each block: m_new = max(m, rowmax S_j); P = exp(S_j - m_new);
    l becomes l times exp(m - m_new) plus the row sums of P; acc becomes acc times exp(m - m_new) plus P V_j;
    then m = m_new. The factor exp(m - m_new) rescales what was summed under the old maximum. After the last
    block the output is acc / l, equal to softmax(Q K transposed / sqrt(d_k)) V. Along the bottom, the same
    update pictured on the lesson's row 2, 5, 1, 7, one element at a time, the sum l drawn as a bar: the old sum
    (grey) shrinks by exp(m - m_new) whenever the maximum grows and the new term (orange) is added: m goes 2, 5,
    5, 7 and l goes 1.0000, 1.0498, 1.0681, 1.1446; at the end the softmax is exp(x - m) / l = 0.0059, 0.1182,
    0.0022, 0.8737.""",
)
def tiled_attention() -> Canvas:
    c = Canvas(800, 640)
    cell, nq, b, d = 22, 4, 4, 3
    gap = 12
    sx, ky, sy = 150, 64, 170  # left of the first key block; top of K^T; top of the scores
    bx = lambda j: sx + j * (b * cell + gap)  # noqa: E731 (left edge of block j)
    c.text(20, 24, "one query block; key and value blocks stream past, one at a time (block j = 1 now)", size=15,
           bold=True, anchor="start")
    c.text(sx - 14, ky + 1.5 * cell, "Kᵀ", size=17, bold=True, colour=KEY.strong, anchor="end")
    for j in range(3):
        state = ("done", "now", "next")[j]
        c.grid(bx(j), ky, d, b, cell, role=KEY, fill=(lambda i, k: "#FFFFFF") if state != "now" else None)
        c.text(bx(j) + b * cell / 2, ky - 14 + 0, f"K_{{{j}}}", size=15, bold=True, colour=KEY.strong)
        # scores of this block
        if state == "now":
            c.grid(bx(j), sy, nq, b, cell, role=HIGHLIGHT, fill=lambda i, k: HIGHLIGHT.light)
            c.rect(bx(j) - 4, sy - 4, b * cell + 8, nq * cell + 8, stroke=HIGHLIGHT.strong, sw=2.5, rx=4)
            c.text(bx(j) + b * cell / 2, sy + nq * cell / 2, "S_{1}", size=16, bold=True)
        else:
            c.rect(bx(j), sy, b * cell, nq * cell, fill="#F4F4F4" if state == "done" else "#FFFFFF",
                   stroke=MUTED, sw=1.2, dash="5 4")
            c.lines(bx(j) + b * cell / 2, sy + nq * cell / 2, ["folded into", "m, ℓ, acc"] if state == "done"
                    else ["not", "computed"], size=13, colour=MUTED)
        vx = bx(j) + (b - d) * cell / 2
        c.grid(vx, 310, b, d, cell, role=VALUE, fill=(lambda i, k: "#FFFFFF") if state != "now" else None)
        c.text(vx + d * cell / 2, 310 + b * cell + 16, f"V_{{{j}}}", size=15, bold=True, colour=VALUE.strong)
    c.grid(40, sy, nq, d, cell, role=QUERY)
    c.text(40 + d * cell / 2, sy - 14, "Q block", size=15, bold=True, colour=QUERY.strong)
    c.text(40 + d * cell / 2, sy + nq * cell + 16, "(n_q, d_k)", size=13, colour=MUTED, mono=True)
    c.line((40 + d * cell + 4, sy + nq * cell / 2), (bx(0) - 6, sy + nq * cell / 2), colour=QUERY.strong)
    c.text(bx(1) + b * cell / 2, sy + nq * cell + 18, "(n_q, block)", size=13, colour=MUTED, mono=True)
    c.text(bx(1) + b * cell / 2, sy + nq * cell + 36, "the only scores held", size=13, colour=HIGHLIGHT.strong)

    # The running state per query row.
    rx = 530
    c.text(rx + 70, sy - 40, "running state, per query row", size=14, bold=True)
    c.grid(rx, sy, nq, 1, cell, role=PARAMETER, fill=lambda i, k: "#FFFFFF")
    c.text(rx + cell / 2, sy - 14, "m", size=16, bold=True)
    c.grid(rx + 44, sy, nq, 1, cell, role=PARAMETER, fill=lambda i, k: "#FFFFFF")
    c.text(rx + 44 + cell / 2, sy - 14, "ℓ", size=16, bold=True)
    c.grid(rx + 88, sy, nq, d, cell, role=VALUE, fill=lambda i, k: "#FFFFFF")
    c.text(rx + 88 + 1.5 * cell, sy - 14, "acc", size=16, bold=True, colour=VALUE.strong)
    c.text(rx + 88 + 1.5 * cell, sy + nq * cell + 16, "(n_q, d_v)", size=13, colour=MUTED, mono=True)
    c.lines(rx + 80, sy + nq * cell + 62, ["updated from S_{1} and V_{1},", "then S_{1} is dropped"], size=15)
    c.lines(rx + 80, 380, ["never held: the whole", "(n, m) score matrix"], size=14, colour=MUTED)

    # The update, pictured on lesson 16's own row, one key at a time.
    _running_sum(c, 446)
    return c


@drawing(
    "grouped_query_attention", notebook="15", section="grouped-query attention",
    title="Grouped-query attention between multi-head and multi-query attention, and what the cache stores",
    alt="""Three panels, each with h = 8 query heads (blue boxes 0 to 7) on top and the key/value heads
    below (each box a key half in orange over a value half in green); a line joins every query head to the
    key/value head it reads. Left, multi-head attention: h_kv = h = 8, every query head has its own keys
    and values. Middle, grouped-query attention with h_kv = 2: the query heads form 2 groups of 4, and query
    head i reads key/value head i // 4 (i divided by h / h_kv, rounded down). Right, multi-query attention:
    h_kv = 1, all eight query heads share one key/value head. Under each panel, a bar for what the KV
    cache stores per layer and token: 2 h_kv d_k numbers (keys and values), that is 16, 4 and 2 times d_k,
    so grouped-query attention caches 4 times less than multi-head here and multi-query 8 times less. The
    number of query heads, and so the number of attention patterns, stays 8 in all three.""",
)
def grouped_query_attention() -> Canvas:
    c = Canvas(800, 420)
    h, box, gap = 8, 24, 5
    row = h * box + (h - 1) * gap
    panels = [(8, "multi-head", "h_kv = h = 8"), (2, "grouped-query", "h_kv = 2: groups of 4"),
              (1, "multi-query", "h_kv = 1")]
    for p, (h_kv, title, sub) in enumerate(panels):
        x0 = 24 + p * 262
        cx = x0 + row / 2
        c.text(cx, 26, title, size=16, bold=True)
        c.text(cx, 48, sub, size=14, colour=MUTED)
        qy, kvy = 80, 200
        group = h // h_kv
        kv_w = box if h_kv == h else min(group * (box + gap) - gap - 8, 110)
        kv_x = [x0 + (k * group + (group - 1) / 2) * (box + gap) + box / 2 - kv_w / 2 for k in range(h_kv)]
        for i in range(h):
            qx = x0 + i * (box + gap)
            k = i // group
            c.line((qx + box / 2, qy + 30), (kv_x[k] + kv_w / 2, kvy), colour=MUTED, sw=1.5, arrow=None)
        for i in range(h):
            qx = x0 + i * (box + gap)
            c.rect(qx, qy, box, 30, fill=QUERY.light, stroke=QUERY.strong, sw=1.5, rx=3)
            c.text(qx + box / 2, qy + 15, str(i), size=14)
        for k in range(h_kv):
            c.rect(kv_x[k], kvy, kv_w, 26, fill=KEY.light, stroke=KEY.strong, sw=1.5, rx=3)
            c.text(kv_x[k] + kv_w / 2, kvy + 13, "K", size=14, bold=True, colour=KEY.strong)
            c.rect(kv_x[k], kvy + 26, kv_w, 26, fill=VALUE.light, stroke=VALUE.strong, sw=1.5, rx=3)
            c.text(kv_x[k] + kv_w / 2, kvy + 39, "V", size=14, bold=True, colour=VALUE.strong)
        if p == 0:
            c.text(x0, qy - 12, "query heads", size=13, colour=QUERY.strong, anchor="start")
            c.text(x0, kvy + 68, "key/value heads", size=13, colour=KEY.strong, anchor="start")
        # What the cache stores per layer and token.
        c.rect(x0, 312, row * h_kv / h, 22, fill="#BDBDBD", stroke=INK, sw=1.2)
        c.text(x0, 296, f"cache: 2·{h_kv}·d_k per token", size=14, anchor="start")
        c.text(x0, 352, ("1×", "4× smaller", "8× smaller")[p], size=14, bold=p > 0, anchor="start")
    c.text(400, 382, "query head i reads key/value head i // (h / h_kv)", size=14, mono=True)
    c.text(400, 404, "the cache holds keys and values: 2 · h_kv · d_k numbers per token, per layer", size=13,
           colour=MUTED)
    return c
