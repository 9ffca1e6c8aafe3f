"""Drawings of the course's models: the bottleneck of a seq2seq model without attention (04, 08), one
decoder step of the seq2seq model (04), the Transformer block (09b) and the causal language model's
stack (11)."""

from __future__ import annotations

from ...helpers.palette import DATA, HIGHLIGHT, INK, KEY, MUTED, PARAMETER, QUERY, RESIDUAL, VALUE, Role, weight_colour
from .drawing import drawing
from .svg import Canvas


@drawing(
    "decoder_step", notebook="04", section="5. One decoder step",
    title="One decoder step of the seq2seq model with additive attention",
    alt="""One step t of the GRU decoder. The decoder state s that enters the step (s_0 at t = 0) is the
    query, drawn in blue. The encoder states h_0 to h_4 along the bottom serve twice: as keys (orange arrow)
    and as values (green arrow). The score network computes e_{t,i} = v transposed tanh(W_s s + W_h h_i)
    for every source position i; a softmax over i gives the weights alpha_{t,i}, shaded like the course's
    heatmaps; the context c_t is the weighted sum of the encoder states, sum over i of alpha_{t,i} h_i. The
    GRU cell takes the embedding of the previous token y_{t-1} (<sos> at t = 0) and c_t as input, and s as
    its state, and returns the new state s'. The output layer W_out reads [s'; c_t] and gives logits over the
    vocabulary; their argmax is the next token y_t. A dashed arrow carries y_t back to the previous-token box,
    and the line beside it says that step t + 1 reads y_t as its previous token and s' as its state s.""",
)
def decoder_step() -> Canvas:
    c = Canvas(800, 520)
    c.box(20, 50, 160, 50, "token y_{t-1}", role=DATA, note="<sos> at t = 0")
    c.box(226, 52, 130, 46, "embedding", role=PARAMETER)
    c.line((180, 75), (222, 75))
    c.box(20, 156, 160, 62, ["state s", "the query"], role=QUERY, size=15, note="s_{0} at t = 0")

    # Encoder states: keys and values.
    hx, hy, hw = 20, 426, 44
    for i in range(5):
        c.box(hx + i * (hw + 10), hy, hw, 40, f"h_{{{i}}}", role=DATA, size=15)
    c.text(hx + 130, hy + 62, "encoder states h_{i}: keys and values", size=15, colour=INK)

    # The score network, the weights, the context.
    c.box(210, 250, 246, 62, "e_{t,i} = vᵀtanh(W_{s}s + W_{h}h_{i})", role=PARAMETER, size=15,
          note="for every position i")
    c.line((100, 222), (100, 270), (206, 270), colour=QUERY.strong)
    c.line((150, hy - 4), (150, 350), (300, 350), (300, 316), colour=KEY.strong)
    c.text(160, 372, "as keys", size=13, colour=KEY.strong, anchor="start")
    alphas = [0.03, 0.05, 0.12, 0.72, 0.08]
    ax, ay, cell = 478, 269, 24
    c.line((456, 281), (ax - 4, 281))
    c.grid(ax, ay, 1, 5, cell, role=PARAMETER, fill=lambda i, j: weight_colour(alphas[j]))
    c.text(ax + 2.5 * cell, ay - 14, "α_{t,i} = softmax_{i}", size=15)
    c.box(460, 380, 150, 50, "context c_{t}", role=VALUE, bold=True, note="Σ_{i} α_{t,i} h_{i}")
    c.line((ax + 2.5 * cell, ay + cell + 4), (ax + 2.5 * cell, 376))
    c.line((hx + 5 * hw + 44, hy + 20), (535, hy + 20), (535, 434), colour=VALUE.strong)
    c.text(300, hy + 8, "as values", size=13, colour=VALUE.strong, anchor="start")

    # The GRU update and the prediction.
    c.box(460, 150, 150, 62, "GRU cell", role=PARAMETER, bold=True, note="[emb; c_{t}] and s")
    c.line((356, 75), (520, 75), (520, 146))
    c.line((180, 184), (456, 184))
    c.line((600, 376), (600, 216), colour=VALUE.strong)
    c.box(640, 150, 140, 62, "W_{out}[s'; c_{t}]", role=PARAMETER, note="logits")
    c.line((610, 181), (636, 181))
    c.text(623, 168, "s'", size=15)
    c.line((610, 405), (710, 405), (710, 216), colour=VALUE.strong)
    c.box(650, 50, 120, 50, "token y_{t}", role=DATA, bold=True, note="the next token")
    c.line((710, 146), (710, 104))
    c.text(718, 125, "argmax", size=13, colour=MUTED, anchor="start")
    c.line((710, 50), (710, 24), (100, 24), (100, 46), colour=MUTED, dash="6 4")
    c.text(405, 38, "step t + 1 reads y_{t} as its y_{t-1}, and s' as its state s", size=15, colour=MUTED)
    return c


def _attention(c: Canvas, cx: float, y: float, fork: float) -> None:
    """Multi-head self-attention (a box whose top is ``y``), fed by three arrows from the fork at
    height ``fork``: its input used as queries, keys and values."""
    c.box(cx - 100, y, 200, 46, "multi-head attention", role=PARAMETER, size=15)
    c.line((cx - 50, fork), (cx + 50, fork), arrow=None)
    for k, (role, name) in enumerate([(QUERY, "Q"), (KEY, "K"), (VALUE, "V")]):
        x = cx + (k - 1) * 50
        c.line((x, fork), (x, y + 50), colour=role.strong)
        c.text(x + 11, (fork + y + 46) / 2, name, size=13, colour=role.strong, bold=True)


def _add(c: Canvas, cx: float, cy: float) -> None:
    c.circle(cx, cy, 12, fill="#FFFFFF", stroke=INK, sw=1.8)
    c.text(cx, cy - 1, "+", size=18, bold=True)


def _residual(c: Canvas, *points: tuple[float, float]) -> None:
    c.line(*points, colour=RESIDUAL.strong, sw=4)


@drawing(
    "transformer_block", notebook="09b", section="the block's two sub-layers and their residual paths",
    title="The Transformer block, post-norm and pre-norm, with its residual paths",
    alt="""Two versions of the same block side by side, data flowing upwards from the input x of shape
    (B, T, d_model) to the output of the same shape. Left, post-norm, the course's TransformerBlock (as in
    Vaswani et al.): x feeds multi-head self-attention as queries, keys and values (three arrows in blue,
    orange and green); a thick grey residual path carries x around the attention to an addition, and a
    LayerNorm follows: y = LayerNorm(x + attention(x)). The same pattern wraps the feed-forward network
    (Linear, ReLU, Linear): out = LayerNorm(y + FFN(y)). Right, pre-norm (norm_first=True, as in GPT-2 and
    the language model of lesson 11): the residual path runs straight from input to output, and each
    sub-layer sits on a side branch that starts with its own LayerNorm and is added back:
    y = x + attention(LayerNorm(x)), out = y + FFN(LayerNorm(y)). Nothing normalises the residual path
    itself, which is why a model built from pre-norm blocks ends with a final LayerNorm.""",
)
def transformer_block() -> Canvas:
    c = Canvas(800, 640)
    c.line((400, 14), (400, 626), colour="#D0D0D0", sw=1.5, arrow=None, dash="4 4")
    main, bx = 680, 510  # pre-norm: the residual line, the branch
    for cx, at, title, formula in [
        (200, 200, "post-norm (course default)", "y = LN(x + Attn(x)), out = LN(y + FFN(y))"),
        (600, main, "pre-norm (norm_first=True)", "y = x + Attn(LN(x)), out = y + FFN(LN(y))"),
    ]:
        c.text(cx, 26, title, size=16, bold=True)
        c.text(cx, 50, formula, size=13, colour=MUTED, mono=True)
        c.box(at - 90, 574, 180, 40, "x  (B, T, d_model)", role=DATA, size=15)
        c.box(at - 90, 76, 180, 40, "out  (B, T, d_model)", role=DATA, size=15, bold=True)

    # Post-norm: the sub-layers on the main line, the residual paths around them, a LayerNorm after each sum.
    cx, side = 200, 340
    c.line((cx, 574), (cx, 530), arrow=None)
    _attention(c, cx, 450, 530)
    _residual(c, (cx, 556), (side, 556), (side, 424), (cx + 16, 424))
    c.line((cx, 450), (cx, 440))
    _add(c, cx, 424)
    c.line((cx, 412), (cx, 398))
    c.box(cx - 70, 360, 140, 34, "LayerNorm", role=PARAMETER, size=15)
    c.line((cx, 360), (cx, 302))
    c.text(cx - 10, 330, "y", size=15, bold=True, anchor="end")
    c.box(cx - 100, 252, 200, 46, "feed-forward", role=PARAMETER, size=15, note="Linear, ReLU, Linear")
    _residual(c, (cx, 330), (side, 330), (side, 204), (cx + 16, 204))
    c.line((cx, 252), (cx, 220))
    _add(c, cx, 204)
    c.line((cx, 192), (cx, 178))
    c.box(cx - 70, 140, 140, 34, "LayerNorm", role=PARAMETER, size=15)
    c.line((cx, 140), (cx, 120))
    c.text(side - 8, 542, "residual", size=13, colour=RESIDUAL.strong, anchor="end")

    # Pre-norm: the residual path straight up; each sub-layer on a branch that starts with a LayerNorm.
    _residual(c, (main, 574), (main, 392))
    _add(c, main, 376)
    _residual(c, (main, 364), (main, 212))
    _add(c, main, 196)
    _residual(c, (main, 184), (main, 120))
    c.text(main + 8, 490, "residual", size=13, colour=RESIDUAL.strong, anchor="start")
    c.line((main, 556), (bx, 556), (bx, 550))
    c.box(bx - 70, 512, 140, 34, "LayerNorm", role=PARAMETER, size=15)
    c.line((bx, 512), (bx, 500), arrow=None)
    _attention(c, bx, 400, 500)
    c.line((bx, 400), (bx, 376), (main - 16, 376))
    c.text(main + 10, 350, "y", size=15, bold=True, anchor="start")
    c.line((main, 340), (bx, 340), (bx, 332))
    c.box(bx - 70, 294, 140, 34, "LayerNorm", role=PARAMETER, size=15)
    c.line((bx, 294), (bx, 276))
    c.box(bx - 100, 226, 200, 46, "feed-forward", role=PARAMETER, size=15, note="Linear, ReLU, Linear")
    c.line((bx, 226), (bx, 196), (main - 16, 196))
    return c


def _token_row(c: Canvas, x: float, y: float, chars: str, *, cell: float = 44, role=DATA, bold: bool = False) -> None:
    for t, ch in enumerate(chars):
        c.rect(x + t * cell, y, cell, 36, fill=role.light, stroke=role.strong, sw=1.5)
        c.text(x + (t + 0.5) * cell, y + 18, "␣" if ch == " " else ch, size=17, mono=True, bold=bold)


@drawing(
    "lm_stack", notebook="11", section="3. The model, built in plain sight",
    title="The causal language model: embeddings, N pre-norm blocks with a causal mask, final norm, LM head",
    alt="""The course's CausalLM from bottom to top. The input is T = 6 characters of the text "the cat",
    "t h e space c a", token ids of shape (B, T). A token embedding (an nn.Embedding of V rows of d_model)
    and a position embedding for positions 0 to T - 1 (learned, or sinusoidal) are added: x of shape
    (B, T, d_model). N pre-norm Transformer blocks follow, each with masked self-attention under
    causal_mask(T), so position t reads positions 0 to t only; then a final LayerNorm and the LM head, a
    Linear(d_model, V) layer, give logits of shape (B, T, V). At the top, the targets are the same text
    shifted by one, "h e space c a t": the logits at position t are scored with cross-entropy against
    token t + 1, at every position at once.""",
)
def lm_stack() -> Canvas:
    c = Canvas(800, 650)
    cx, cell = 300, 44
    x0 = cx - 3 * cell
    shapes = 600
    # Inputs and targets: the same text, shifted by one.
    _token_row(c, x0, 580, "the ca")
    c.text(x0 - 10, 598, "inputs", size=14, anchor="end", bold=True)
    _token_row(c, x0, 40, "he cat", bold=True)
    c.text(x0 - 10, 58, "targets", size=14, anchor="end", bold=True)
    for t in range(6):
        c.text(x0 + (t + 0.5) * cell, 630, str(t), size=13, colour=MUTED)
    c.text(x0 - 10, 630, "position", size=13, colour=MUTED, anchor="end")
    c.text(cx, 92, "cross-entropy of logits[:, t] against token t + 1, at every t", size=13, colour=MUTED)
    c.text(shapes, 598, "tokens (B, T)", size=13, mono=True, colour=MUTED, anchor="start")
    c.text(shapes, 58, "tokens shifted by one", size=13, colour=MUTED, anchor="start")

    # Embeddings.
    c.line((cx, 580), (cx, 556), (cx - 100, 556), (cx - 100, 534))
    c.box(cx - 190, 490, 180, 40, "token embedding", role=PARAMETER, size=15)
    c.box(cx + 10, 490, 180, 40, "position embedding", role=PARAMETER, size=15)
    c.text(cx + 110, 560, "positions 0 … T-1", size=13, colour=MUTED, anchor="start")
    c.line((cx + 100, 568), (cx + 100, 534))
    c.line((cx - 100, 490), (cx - 100, 462), (cx - 16, 462))
    c.line((cx + 100, 490), (cx + 100, 462), (cx + 16, 462))
    c.circle(cx, 462, 12, fill="#FFFFFF", stroke=INK, sw=1.8)
    c.text(cx, 461, "+", size=18, bold=True)
    c.line((cx, 450), (cx, 418))
    c.text(shapes, 436, "x (B, T, d_model)", size=13, mono=True, colour=MUTED, anchor="start")

    # N blocks, drawn as a deck.
    for k in (2, 1):
        c.rect(cx - 180 + 8 * k, 300 - 8 * k, 360, 114, fill="#F3F3F3", stroke=PARAMETER.strong, sw=1.2, rx=8)
    c.rect(cx - 180, 300, 360, 114, fill=PARAMETER.light, stroke=PARAMETER.strong, sw=1.8, rx=8)
    c.text(cx + 20, 328, "Transformer block (pre-norm)", size=15, bold=True)
    c.text(cx + 20, 352, "masked self-attention + FFN,", size=14)
    c.text(cx + 20, 374, "each with its residual path", size=14)
    c.text(cx + 20, 396, "mask: causal_mask(T)", size=13, mono=True, colour=MUTED)
    mini = 9
    c.grid(cx - 160, 330, 6, 6, mini, role=PARAMETER, fill=lambda i, j: "#3D3D3D" if j > i else "#FFFFFF", sw=0.8)
    c.text(cx + 204, 292, "× N", size=18, bold=True, anchor="start")
    c.text(shapes, 340, "N = num_layers", size=13, colour=MUTED, anchor="start")

    # Final norm, LM head, logits.
    c.line((cx, 284), (cx, 262))
    c.box(cx - 80, 226, 160, 34, "final LayerNorm", role=PARAMETER, size=15)
    c.line((cx, 226), (cx, 206))
    c.box(cx - 125, 168, 250, 36, "LM head: Linear(d_model, V)", role=PARAMETER, size=15)
    c.line((cx, 168), (cx, 146))
    c.box(cx - 110, 108, 220, 36, "logits", role=DATA, size=15, bold=True)
    c.text(shapes, 126, "(B, T, V)", size=13, mono=True, colour=MUTED, anchor="start")
    return c


_SOURCE_08 = ["3", "1", "4", "1", "5", "9"]  # a source to reverse, as in lessons 04 and 08


@drawing(
    "seq2seq_bottleneck", notebook="08/04", section="1. Two models, one difference (08); 2. The bottleneck (04)",
    title="The bottleneck: a seq2seq model without attention squeezes the source into one vector",
    alt="""Two encoder-decoder models on the same source, the six tokens 3 1 4 1 5 9, to be written backwards.
    Top, without attention: the GRU encoder reads the tokens one by one (a chain of states h0 to h5), and the
    source reaches the decoder only through the first decoder state s_0, made from the encoder's final states:
    one vector of the same size whatever the length of the source.
    Every decoder step (d0 to d5, producing 9 5 1 4 1 3) must draw on that single vector: the longer the source,
    the more it has to hold, and the first source tokens, read longest ago, are the hardest to recover. Bottom,
    with attention: every encoder state h0 to h5 is kept as a key and value (orange over green), and each
    decoder step, its state the query (blue), reads all of them with its own weights; the step drawn, d0, puts
    most weight on h5, the last source token, which it must write first. Nothing has to fit in one vector.""",
)
def seq2seq_bottleneck() -> Canvas:
    n, w = len(_SOURCE_08), 52
    target = _SOURCE_08[::-1]
    c = Canvas(800, 500)
    ex, dx = 40, 470  # left edges of the encoder and the decoder rows
    c.text(20, 24, "without attention: one vector between encoder and decoder", size=15, bold=True, anchor="start")
    c.line((14, 250), (786, 250), colour="#D0D0D0", sw=1.5, arrow=None, dash="4 4")
    c.text(20, 276, "with attention: every encoder state stays readable", size=15, bold=True, anchor="start")
    for top, keep in ((60, False), (306, True)):
        for k, tok in enumerate(_SOURCE_08):
            x = ex + k * w
            c.box(x + 4, top, w - 8, 32, tok, role=DATA, size=15, bold=True)
            c.line((x + w / 2, top + 34), (x + w / 2, top + 56), sw=1.5)
            if keep:
                c.rect(x + 4, top + 60, w - 8, 22, fill=KEY.light, stroke=KEY.strong, sw=1.5, rx=3)
                c.rect(x + 4, top + 82, w - 8, 22, fill=VALUE.light, stroke=VALUE.strong, sw=1.5, rx=3)
                c.text(x + w / 2, top + 82, f"h{k}", size=14, bold=True)
            else:
                c.box(x + 4, top + 60, w - 8, 44, f"h{k}", role=PARAMETER, size=14)
            if k:
                c.line((x - 4, top + 82), (x + 4, top + 82), sw=1.5)
        for k, tok in enumerate(target):
            x = dx + k * w
            c.box(x + 4, top + 60, w - 8, 44, f"d{k}", role=QUERY if keep and k == 0 else PARAMETER, size=14)
            c.line((x + w / 2, top + 58), (x + w / 2, top + 36), sw=1.5)
            c.box(x + 4, top, w - 8, 32, tok, role=DATA, size=15, bold=True)
            if k:
                c.line((x - 4, top + 82), (x + 4, top + 82), sw=1.5)
    # Without attention: only the first decoder state, made from the encoder's final states, crosses.
    mid = (ex + n * w + dx) / 2
    c.line((ex + n * w - 4, 142), (mid - 28, 142), colour=HIGHLIGHT.strong, sw=3)
    c.box(mid - 24, 122, 48, 40, "s_{0}", role=HIGHLIGHT, size=16, bold=True)
    c.line((mid + 26, 142), (dx, 142), colour=HIGHLIGHT.strong, sw=3)
    c.lines(mid, 196, ["the source reaches the decoder", "only through s_{0}: one vector,", "whatever its length"],
            size=15, colour=HIGHLIGHT.strong)
    # With attention: the step d0 reads every encoder state.
    weights = [0.02, 0.02, 0.03, 0.05, 0.12, 0.76]
    for k, a in enumerate(weights):
        x = ex + k * w + w / 2
        c.path(f"M{dx + w / 2:.1f},{306 + 104:.1f} C{dx + w / 2:.1f},{470:.1f} {x:.1f},{470:.1f} {x:.1f},{306 + 106:.1f}",
               colour=QUERY.strong if a > 0.5 else "#ADADAD", sw=1.5 + 3 * a, arrow="end")
    c.text(dx + 3 * w, 482, "d0 reads every h_{i}, most of all h5", size=15, colour=QUERY.strong)
    return c


def _qkv_arrows(c: Canvas, x: float, y0: float, y1: float, roles: tuple[Role, Role, Role], gap: float = 34) -> None:
    """Three upward arrows into a sub-layer at ``x - gap``, ``x``, ``x + gap``: queries, keys, values."""
    for k, (role, name) in enumerate(zip(roles, "QKV")):
        xa = x + (k - 1) * gap
        c.line((xa, y0), (xa, y1), colour=role.strong, sw=2.2)
        c.text(xa + 10, (y0 + y1) / 2, name, size=14, bold=True, colour=role.strong, anchor="start")


@drawing(
    "decoder_layer", notebook="06", section="1. One mechanism, two sources: a decoder layer has both kinds",
    title="An encoder-decoder Transformer: masked self-attention, then cross-attention into the encoder",
    alt="""Left, the encoder: the m source tokens go through self-attention and a feed-forward network, and come
    out as the encoder outputs X, m vectors. Right, one decoder layer, data flowing upwards from the n target
    tokens so far. First masked self-attention: queries, keys and values (blue, orange and green arrows) all come
    from the decoder's own stream, and a causal mask keeps each position from reading later ones. Then
    cross-attention: the queries (blue) come from the decoder's stream, the keys (orange) and values (green)
    from the encoder outputs X, drawn as two arrows crossing over from the left; no causal mask, since the
    source is known in full, only a padding mask for the encoder's pad positions. Then the feed-forward network
    and, at the top, the logits for the next target token. Every sub-layer has its residual path and LayerNorm,
    left out of the drawing.""",
)
def decoder_layer() -> Canvas:
    c = Canvas(800, 520)
    ex, dx, w = 40, 430, 300
    mid = dx + w / 2
    c.text(ex + 130, 22, "encoder", size=16, bold=True)
    c.text(mid, 22, "decoder layer", size=16, bold=True)
    c.box(ex, 440, 260, 40, "source tokens (m)", role=DATA, size=15)
    c.line((ex + 130, 438), (ex + 130, 398))
    c.box(ex, 334, 260, 60, ["self-attention + FFN"], role=PARAMETER, size=15, note="no mask (padding only)")
    c.line((ex + 130, 332), (ex + 130, 312))
    c.box(ex, 262, 260, 46, "encoder outputs X (m, d)", role=DATA, size=15, bold=True)
    c.lines(ex + 130, 160, ["the decoder asks (queries),", "the encoder answers", "(keys and values)"], size=14,
            colour=MUTED)

    c.box(dx, 460, w, 40, "target tokens so far (n)", role=DATA, size=15)
    _qkv_arrows(c, mid, 458, 414, (QUERY, KEY, VALUE))
    c.box(dx, 350, w, 60, "masked self-attention", role=PARAMETER, size=15, note="causal mask: no peeking ahead")
    for k, role in enumerate((KEY, VALUE)):  # keys and values cross over from the encoder
        xa, y = mid - 34 + 34 * k, 274 + 18 * k
        c.line((ex + 264, y), (xa, y), colour=role.strong, sw=2.2, arrow=None)
        c.line((xa, y), (xa, 230), colour=role.strong, sw=2.2)
    c.text(ex + 272, 262, "K from the encoder", size=14, bold=True, colour=KEY.strong, anchor="start")
    c.text(ex + 272, 306, "V from the encoder", size=14, bold=True, colour=VALUE.strong, anchor="start")
    c.line((mid + 34, 348), (mid + 34, 230), colour=QUERY.strong, sw=2.2)
    c.text(mid + 44, 300, "Q from the decoder", size=14, bold=True, colour=QUERY.strong, anchor="start")
    c.box(dx, 166, w, 60, "cross-attention", role=PARAMETER, size=15, note="padding mask on X; no causal mask",
          sw=2.4)
    c.line((mid, 164), (mid, 144))
    c.box(dx, 100, w, 40, "feed-forward network", role=PARAMETER, size=15)
    c.line((mid, 98), (mid, 80))
    c.box(dx + 40, 44, w - 80, 32, "logits: next token", role=DATA, size=15, bold=True)
    return c
