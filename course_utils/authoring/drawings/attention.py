"""Drawings of attention itself: one head's projections (01), heads split and merged (03/03b), the
causal mask on a sentence (05)."""

from __future__ import annotations

from ...helpers.palette import INK, KEY, MASK, MUTED, PARAMETER, QUERY, VALUE, weight_colour
from .drawing import drawing
from .svg import Canvas

# Lesson 01, section 5: three tokens (cat, sat, down) with d_model = 4, projected to d_k = d_v = 2 by the
# lesson's fixed matrices; everything else is computed from them.
_X = [[1, 2, 3, 4], [0, 1, 0, 1], [1, 0, 1, 0]]
_W_Q = [[1, 0], [0, 1], [1, 1], [0, 0]]
_W_K = [[0, 1], [1, 0], [0, 0], [1, 1]]
_W_V = [[1, 1], [0, 0], [0, 1], [1, 0]]


def head_example() -> dict[str, list[list[float]]]:
    """Lesson 01's head on its three-token sentence, computed as the lesson computes it (the course's
    ``scaled_dot_product_attention`` in float32): Q, K, V, the raw scores QK^T, the weights
    softmax(QK^T / sqrt(d_k)) and the output AV."""
    import torch  # here, not at the top: the other drawings need no PyTorch

    from ...core.attention import scaled_dot_product_attention

    X, W_Q, W_K, W_V = (torch.tensor(m, dtype=torch.float32) for m in (_X, _W_Q, _W_K, _W_V))
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    out, weights = scaled_dot_product_attention(Q, K, V)
    tensors = {"Q": Q, "K": K, "V": V, "QK": Q @ K.T, "A": weights, "AV": out}
    return {name: t.tolist() for name, t in tensors.items()}


def _cell(x: float) -> str:
    """A number in a cell: integers as they are, fractions to 4 decimals as the lesson prints them."""
    return str(int(x)) if x == int(x) else f"{x:.4f}"


@drawing(
    "qkv_projection", notebook="01", section="5. One head with learned projections",
    title="One self-attention head with the lesson's numbers: Q, K and V from X, then softmax(QK^T / sqrt(d_k)) V",
    alt="""Left, the input X: three tokens (cat, sat, down) as the rows of a 3 by 4 matrix, shape (n, d_model),
    with the lesson's numbers: cat = [1, 2, 3, 4], sat = [0, 1, 0, 1], down = [1, 0, 1, 0]. X is multiplied by
    three learned grey matrices of 0s and 1s of shape (d_model, d_k) = (4, 2): W_Q gives the queries Q (blue),
    W_K the keys K (orange), W_V the values V (green), each of shape (n, d_k) = (3, 2), one row per token; cat's
    query is [4, 5], its key [6, 5] and its value [5, 4]. Right, the attention: Q times K transposed gives the
    raw scores, shape (n, n), with 49, 13 and 5 in cat's row; divided by the square root of d_k and softmaxed
    along each row they become the weights A, shaded like the course's heatmaps, each row summing to 1: every
    token puts most of its weight on cat (1.0000, 0.8943 and 0.9998). Finally A times V gives the output,
    shape (n, d_v) = (3, 2): each token's weighted average of the values, close to cat's value [5, 4].""",
)
def qkv_projection() -> Canvas:
    ex = head_example()
    c = Canvas(800, 584)
    cell = 22
    c.text(20, 24, "1  project each token three ways", size=15, bold=True, anchor="start")
    c.text(462, 24, "2  attend", size=15, bold=True, anchor="start")
    c.line((446, 14), (446, 570), colour="#D0D0D0", sw=1.5, arrow=None, dash="4 4")
    ints = {"size": 13}

    # X, the input: three tokens of d_model = 4.
    x0, y0 = 84, 231
    c.matrix(x0, y0, 3, 4, cell, "X", ["(n, d_model)", "= (3, 4)"], role=PARAMETER, fill=lambda i, j: "#FFFFFF",
             text=lambda i, j: _cell(_X[i][j]), **ints)
    for i, token in enumerate(["cat", "sat", "down"]):
        c.text(x0 - 8, y0 + (i + 0.5) * cell, token, size=14, anchor="end")

    # Three projections: X W_Q = Q, X W_K = K, X W_V = V.
    rows = [(110, QUERY, "Q", _W_Q), (264, KEY, "K", _W_K), (418, VALUE, "V", _W_V)]
    mid = y0 + 1.5 * cell
    trunk = x0 + 4 * cell + 16
    c.line((x0 + 4 * cell + 3, mid), (trunk, mid), arrow=None)
    for yc, role, name, W in rows:
        c.line((trunk, mid), (trunk, yc), (200, yc), arrow=None)
        c.text(210, yc, "×", size=17, colour=INK)
        c.matrix(222, yc - 2 * cell, 4, 2, cell, f"W_{{{name}}}", ["(d_model, d_k)", "= (4, 2)"], role=PARAMETER,
                 name_size=16, text=lambda i, j, W=W: _cell(W[i][j]), **ints)
        c.text(313, yc, "=", size=20, colour=INK)
        c.matrix(334, yc - 1.5 * cell, 3, 2, cell, name, ["(n, d_k)", "= (3, 2)"], role=role,
                 text=lambda i, j, M=ex[name]: _cell(M[i][j]), **ints)
        c.text(334 + 2 * cell + 8, yc - 1.5 * cell - 14, f"= XW_{{{name}}}", size=15, colour=role.strong,
               anchor="start")

    # Raw scores, weights, output. Q's rows and K's rows meet in QK^T; the gap before A holds the step between.
    right = 334 + 2 * cell + 4
    sc, s_x, s_y = 26, 482, 150
    c.line((right, 110), (456, 110), (456, s_y + 0.5 * sc), (s_x - 4, s_y + 0.5 * sc), colour=QUERY.strong)
    c.line((right, 264), (468, 264), (468, s_y + 2.5 * sc), (s_x - 4, s_y + 2.5 * sc), colour=KEY.strong)
    c.matrix(s_x, s_y, 3, 3, sc, "QKᵀ", ["(n, n)", "raw scores"], role=PARAMETER, name_size=16,
             fill=lambda i, j: "#FFFFFF", text=lambda i, j: _cell(ex["QK"][i][j]), **ints)
    ac, a_x = 50, 640
    arrow_y = s_y + 1.5 * sc
    c.line((s_x + 3 * sc + 6, arrow_y), (a_x - 6, arrow_y))
    c.text((s_x + 3 * sc + a_x) / 2, arrow_y - 16, "÷√2,", size=14, colour=MUTED)
    c.text((s_x + 3 * sc + a_x) / 2, arrow_y + 16, "softmax", size=14, colour=MUTED)
    c.matrix(a_x, s_y, 3, 3, ac, "A (weights)", ["(n, n)", "rows sum to 1"], role=PARAMETER, name_size=16,
             fill=lambda i, j: weight_colour(ex["A"][i][j]), text=lambda i, j: _cell(round(ex["A"][i][j], 4)), **ints)

    o_x, o_y = 520, 392
    c.line((a_x + 1.5 * ac, s_y + 3 * ac + 50), (a_x + 1.5 * ac, o_y + 1.5 * ac), (o_x + 2 * ac + 6, o_y + 1.5 * ac))
    c.line((right, 418), (o_x - 6, 418), colour=VALUE.strong)
    c.matrix(o_x, o_y, 3, 2, ac, "output AV", ["(n, d_v) = (3, 2)"], role=PARAMETER, name_size=16,
             fill=lambda i, j: "#FFFFFF", text=lambda i, j: _cell(round(ex["AV"][i][j], 4)), **ints)
    return c


def _heads_row(c: Canvas, x: float, y: float, cell: float, fill, *, split: str, h: int = 4, d_k: int = 2,
               T: int = 3, gap: float = 8) -> float:
    """One tensor of lesson 03 as cells holding their head's number: ``split`` "none" (B, T, d_model),
    "tokens" (B, T, h, d_k: a strip per token, cut into heads) or "heads" (B, h, T, d_k: a block per head).
    Returns the width drawn."""
    number = lambda i, j: str(j // d_k)  # noqa: E731 (the head a feature belongs to)
    role = PARAMETER
    if split == "none":
        c.grid(x, y, T, h * d_k, cell, role=role, fill=lambda i, j: fill(j // d_k), text=number)
        return h * d_k * cell
    if split == "tokens":
        for t in range(T):
            for head in range(h):
                c.grid(x + head * (d_k * cell + gap), y + t * (cell + gap), 1, d_k, cell, role=role,
                       fill=lambda i, j, head=head: fill(head), text=lambda i, j, head=head: str(head))
        return h * d_k * cell + (h - 1) * gap
    for head in range(h):
        c.grid(x + head * (d_k * cell + 2 * gap), y, T, d_k, cell, role=role, fill=lambda i, j, head=head: fill(head),
               text=lambda i, j, head=head: str(head))
    return h * d_k * cell + (h - 1) * 2 * gap


@drawing(
    "heads_split_merge", notebook="03/03b", section="splitting into heads, and merging them back",
    title="Multi-head attention: split into heads, attend per head, merge, W_O",
    alt="""A U-shaped flow, drawn for T = 3 tokens, d_model = 8 and h = 4 heads of d_k = 2 features; every cell is
    marked with the number of the head it belongs to. Down the left side: the input x of shape (B, T, d_model)
    goes through W_Q (the keys and values go the same way through W_K and W_V) to q, still (B, T, d_model),
    whose features are the four heads' slices side by side. q.view(B, T, h, d_k) cuts each token's row into
    h pieces of d_k features without moving a number; .transpose(1, 2) makes the head the outer axis,
    (B, h, T, d_k): one T by d_k block per head. Along the bottom: each head attends on its own,
    softmax(Q_i K_i transposed / sqrt(d_k)) V_i, with weights of shape (B, h, T, T). Up the right side the
    steps run backwards: the heads' outputs (B, h, T, d_k) are transposed back to (B, T, h, d_k), reshaped to
    (B, T, d_model), where the heads sit side by side again, and mixed by the output projection W_O into the
    output of shape (B, T, d_model).""",
)
def heads_split_merge() -> Canvas:
    c = Canvas(800, 582)
    cell, T = 18, 3
    tint = lambda head: (QUERY.light, "#B7D5EC")[head % 2]  # noqa: E731 (neighbouring heads: two shades)
    out_tint = lambda head: ("#FFFFFF", "#E9E9E9")[head % 2]  # noqa: E731
    lx, rx = 60, 440  # left edges of the two columns
    c.text(20, 22, "split (queries shown; keys and values the same way)", size=15, bold=True, anchor="start")
    c.text(780, 22, "merge", size=15, bold=True, anchor="end")

    def step(x: float, y0: float, y1: float, label: str, note: str = "", up: bool = False) -> None:
        c.line((x, y1 if up else y0), (x, y0 if up else y1))
        c.text(x + 12, (y0 + y1) / 2 - (8 if note else 0), label, size=14, mono=True, anchor="start")
        if note:
            c.text(x + 12, (y0 + y1) / 2 + 10, note, size=13, colour=MUTED, anchor="start")

    # Left column, top to bottom.
    w = 8 * cell
    c.grid(lx, 66, T, 8, cell, role=PARAMETER, fill=lambda i, j: "#FFFFFF")
    c.text(lx + w / 2, 52, "x", size=17, bold=True)
    c.text(lx + w + 12, 66 + 1.5 * cell, "(B, T, d_model)", size=13, colour=MUTED, mono=True, anchor="start")
    step(lx + w / 2, 66 + T * cell + 6, 166, "W_Q: Linear(d_model, d_model)")
    _heads_row(c, lx, 172, cell, tint, split="none")
    c.text(lx + w + 12, 172 + 1.5 * cell, "q  (B, T, d_model)", size=13, colour=QUERY.strong, mono=True, anchor="start")
    step(lx + w / 2, 172 + T * cell + 6, 270, ".view(B, T, h, d_k)", "each token's row cut into h slices")
    w3 = _heads_row(c, lx, 276, cell, tint, split="tokens")
    c.text(lx + w3 + 12, 276 + 1.5 * cell + 8, "(B, T, h, d_k)", size=13, colour=QUERY.strong, mono=True,
           anchor="start")
    step(lx + w / 2, 276 + T * (cell + 8) + 4, 394, ".transpose(1, 2)", "the head becomes an outer axis")
    w4 = _heads_row(c, lx, 400, cell, tint, split="heads")
    c.text(lx + w4 + 12, 400 + 1.5 * cell, "Q  (B, h, T, d_k)", size=13, colour=QUERY.strong, mono=True,
           anchor="start")

    # Bottom: attention in each head.
    band_y = 490
    c.line((lx + w4 / 2, 400 + T * cell + 6), (lx + w4 / 2, band_y - 4))
    c.rect(40, band_y, 720, 70, fill="#F6F6F6", stroke=MUTED, sw=1.2, rx=8)
    for k, (role, name) in enumerate([(QUERY, "Q_{i}"), (KEY, "K_{i}"), (VALUE, "V_{i}")]):
        c.box(60 + k * 62, band_y + 18, 52, 34, name, role=role, size=15, bold=True)
    c.text(258, band_y + 24, "each head i on its own:  softmax(Q_{i}K_{i}ᵀ / √d_{k}) V_{i}", size=15,
           anchor="start")
    c.text(258, band_y + 48, "weights (B, h, T, T), output (B, h, T, d_k)", size=13, colour=MUTED, mono=True,
           anchor="start")
    c.line((rx + w4 / 2, band_y), (rx + w4 / 2, 400 + T * cell + 6))

    # Right column, bottom to top.
    _heads_row(c, rx, 400, cell, out_tint, split="heads")
    c.text(rx + w4 + 12, 400 + 1.5 * cell, "(B, h, T, d_k)", size=13, colour=MUTED, mono=True, anchor="start")
    step(rx + w / 2, 276 + T * (cell + 8) + 4, 394, ".transpose(1, 2)", up=True)
    _heads_row(c, rx, 276, cell, out_tint, split="tokens")
    c.text(rx + w3 + 12, 276 + 1.5 * cell + 8, "(B, T, h, d_k)", size=13, colour=MUTED, mono=True, anchor="start")
    step(rx + w / 2, 172 + T * cell + 6, 270, ".reshape(B, T, d_model)", "the heads side by side again", up=True)
    _heads_row(c, rx, 172, cell, out_tint, split="none")
    c.text(rx + w + 12, 172 + 1.5 * cell, "(B, T, d_model)", size=13, colour=MUTED, mono=True, anchor="start")
    step(rx + w / 2, 66 + T * cell + 6, 166, "W_O: Linear(d_model, d_model)", "mixes the heads", up=True)
    c.grid(rx, 66, T, 8, cell, role=PARAMETER, fill=lambda i, j: "#FFFFFF")
    c.text(rx + w / 2, 52, "output", size=17, bold=True)
    c.text(rx + w + 12, 66 + 1.5 * cell, "(B, T, d_model)", size=13, colour=MUTED, mono=True, anchor="start")
    return c


@drawing(
    "causal_mask_sentence", notebook="05", section="the causal mask",
    title="The causal mask on the sentence 'the cat sat on the mat'",
    alt="""A 6 by 6 grid for the sentence "the cat sat on the mat". Rows are the queries, the token that is
    looking, listed down the left in blue; columns are the keys, the tokens it may look at, listed along the
    bottom in orange; positions count from 0. A cell holds True (white: may attend) when the key's position
    is at most the query's, and False (dark: blocked) when the key comes later. So the True cells form the
    lower triangle with the diagonal: "the" (row 0) sees only itself, "sat" (row 2, outlined) sees "the",
    "cat" and "sat", and the last token "mat" sees the whole sentence. Blocked cells get a score of minus
    infinity before the softmax, hence weight 0. In code: causal_mask(6), shape (n, n) = (6, 6), built as
    torch.ones(6, 6, dtype=torch.bool).tril().""",
)
def causal_mask_sentence() -> Canvas:
    words = ["the", "cat", "sat", "on", "the", "mat"]
    n, cell = len(words), 50
    c = Canvas(800, 450)
    gx, gy = 130, 60
    blocked = lambda i, j: j > i  # noqa: E731
    c.grid(gx, gy, n, n, cell, role=MASK, fill=lambda i, j: MASK.strong if blocked(i, j) else "#FFFFFF",
           text=lambda i, j: "False" if blocked(i, j) else "True", size=13)
    for i, word in enumerate(words):
        c.text(gx - 10, gy + (i + 0.5) * cell, f"{i} {word}", size=15, colour=QUERY.strong, anchor="end", bold=True)
        c.text(gx + (i + 0.5) * cell, gy + n * cell + 16, word, size=15, colour=KEY.strong, bold=True)
        c.text(gx + (i + 0.5) * cell, gy + n * cell + 34, str(i), size=14, colour=KEY.strong)
    c.text(gx - 10, gy - 16, "query i", size=15, colour=QUERY.strong, anchor="end", bold=True)
    c.text(gx + n * cell / 2, gy + n * cell + 58, "key j", size=15, colour=KEY.strong, bold=True)
    c.text(gx + n * cell / 2, gy - 16, "causal_mask(6): (n, n) = (6, 6)", size=14, mono=True)
    row = 2
    c.rect(gx - 3, gy + row * cell - 3, n * cell + 6, cell + 6, stroke=QUERY.strong, sw=3, rx=4)

    tx = gx + n * cell + 36
    c.rect(tx, 74, 22, 22, fill="#FFFFFF", stroke=MASK.strong, sw=1.5)
    c.text(tx + 34, 85, "True: may attend (key j ≤ query i)", size=15, anchor="start")
    c.rect(tx, 110, 22, 22, fill=MASK.strong, stroke=MASK.strong, sw=1.5)
    c.text(tx + 34, 121, "False: blocked (key j comes later)", size=15, anchor="start")
    notes = [
        ("Row 2, \"sat\", may look at \"the\",", INK), ("\"cat\" and \"sat\": never at \"on\"", INK),
        ("or anything after it.", INK), ("", INK),
        ("Blocked cells get score −∞", INK), ("before the softmax: weight 0.", INK), ("", INK),
        ("The first token sees only itself;", INK), ("the last sees the whole sentence.", INK), ("", INK),
        ("torch.ones(6, 6, dtype=torch.bool)", MUTED), (".tril()", MUTED),
    ]
    for k, (line, colour) in enumerate(notes):
        if line:
            c.text(tx, 170 + 22 * k, line, size=15 if colour == INK else 13, colour=colour, anchor="start",
                   mono=colour != INK)
    return c
