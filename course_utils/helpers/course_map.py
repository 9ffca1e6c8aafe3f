"""The course map: for every notebook, what it teaches and where its pieces are (one entry each, in order).

The README's and the instructor guide's notebook tables are generated from it (``authoring/guide.py``), and
``tests/test_course_map.py`` holds every entry to its notebook and to the package. Pure data; imports nothing.
Fields: ``key`` ("05"), ``stem`` ("05_causal_mask"), ``title`` (the notebook's first heading after "05 · ");
``kind`` (core or optional, "(exercise)" for an exercise); ``needs`` (notebooks to read first) and ``background``;
``outcomes``; ``sections`` (its numbered headings, ``## 2.`` and ``### 2.1``, exactly as the solution writes
them); ``tasks`` ({what the student writes: its check}, task 1 first); ``builds`` (the functions and classes of
``core/`` and ``models/`` whose docstring says "Built in notebook NN"); ``drawings`` (its ``<!-- drawing: NAME
-->`` markers); ``plots`` (its plot modules in ``helpers/``); ``tests`` (its files in ``tests/``).

The one rule to find a notebook's pieces, for notebook ``NN_name``: its entry here names them all
(``python -m course_utils.helpers.course_map NN`` prints them as paths); its checker is always
``helpers/checkers/<name>.py``, and new checker tests go to ``tests/test_checkers_NN.py``.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import NamedTuple


class Task(NamedTuple):
    """One task: its number in the notebook, the function (or class) the student writes, and its check."""

    number: int
    function: str
    check: str


@dataclass(frozen=True)
class Notebook:
    key: str
    stem: str
    title: str
    kind: str
    needs: tuple[str, ...]
    outcomes: str
    sections: tuple[str, ...]
    tasks: dict[str, str]
    builds: tuple[str, ...]
    drawings: tuple[str, ...]
    plots: tuple[str, ...]
    tests: tuple[str, ...]
    background: str = ""

    @property
    def name(self) -> str:
        """The stem without its number: ``"causal_mask"`` for ``05_causal_mask``."""
        return self.stem.split("_", 1)[1]

    @property
    def checker(self) -> str | None:
        """The checker module's path (from the repository root), or None for a notebook without tasks."""
        return f"course_utils/helpers/checkers/{self.name}.py" if self.tasks else None

    def task_list(self) -> list[Task]:
        return [Task(number, function, check) for number, (function, check) in enumerate(self.tasks.items(), 1)]

    def prerequisites(self) -> str:
        """``"01, 02; a little of RNNs"``: the notebooks to read first, then anything else."""
        return "; ".join(part for part in (", ".join(self.needs), self.background) if part) or "none"

    def pieces(self) -> dict[str, list[str]]:
        """Every file of this notebook, by kind, as paths from the repository root."""
        return {
            "notebook": [f"notebooks/{self.stem}.ipynb", f"notebooks/solutions/{self.stem}.ipynb"],
            "checker": [self.checker] if self.checker else [],
            "reference code": [f"course_utils/{b.rsplit('.', 1)[0].replace('.', '/')}.py: {b.rsplit('.', 1)[1]}"
                               for b in self.builds],
            "drawings": [f"notebooks/figures/{d}.svg" for d in self.drawings],
            "plots": [f"course_utils/helpers/{p}.py" for p in self.plots],
            "tests": [f"tests/{t}" for t in self.tests],
        }


NOTEBOOKS: tuple[Notebook, ...] = (
    Notebook('01', '01_scaled_dot_product_attention', 'Scaled dot-product attention',
             kind='core', needs=(), background='Python, NumPy, matrix products',
             outcomes=('attention as a soft look-up; softmax(QK^T/sqrt(d_k))V in NumPy and PyTorch with a stable '
                       'softmax, every shape named; worked examples by hand; write one self-attention head Q = XW_Q, K '
                       '= XW_K, V = XW_V; the O(n^2) cost'),
             sections=('1. Attention as a soft look-up', '2. The formula, shape by shape', '3. Attention in NumPy',
                       '3.1 A softmax that does not overflow', '3.2 The attention function',
                       '3.3 Worked example: 3 queries, 4 keys', '3.4 Worked example: 2 tokens',
                       '3.5 Worked example: "the cat slept"', '4. The same in PyTorch',
                       '5. One head with learned projections', '6. What attention costs'),
             tasks={'qkv_head': 'check_qkv_head'},
             builds=('core.attention.check_qkv', 'core.attention.scaled_dot_product_attention'),
             drawings=('qkv_projection',), plots=('lesson_plots',),
             tests=('test_checkers_lessons.py', 'test_notebook01_examples.py', 'test_attention.py')),
    Notebook('01b', '01b_scaling_and_masks', 'Why $\\sqrt{d_k}$, and masks',
             kind='core', needs=('01',),
             outcomes=('measure why the scores are divided by sqrt(d_k) (variance, saturation, gradient); padding and '
                       'causal masks; a masked softmax with no NaN for a fully masked row'),
             sections=('1. Why divide by $\\sqrt{d_k}$?', '1.1 The variance of $q \\cdot k$ grows like $d_k$',
                       '1.2 What large scores do to the softmax', '1.3 Saturation as $d_k$ grows',
                       '1.4 The gradient through a saturated softmax vanishes', '2. Masks', '2.1 Padding',
                       '2.2 A query with no key to attend to', '2.3 The causal mask',
                       '3. Checking against `course_utils` and PyTorch'),
             tasks={'masked_softmax': 'check_masked_softmax'},
             builds=('core.masks.check_mask', 'core.masks.causal_mask', 'core.masks.padding_mask',
                     'models.seq2seq.masked_softmax'),
             drawings=('causal_mask_sentence',), plots=(), tests=('test_checkers_lessons.py', 'test_checkers_01b.py')),
    Notebook('02', '02_attention_heatmaps', 'Attention heatmaps',
             kind='core', needs=('01',),
             outcomes='read attention heatmaps; tell a real pattern from an artefact of the input',
             sections=('1. A sentence described by hand', '2. From features to queries and keys', '3. Adding position',
                       '4. Attention entropy: one number per row',
                       '5. A gallery of patterns, each built from real queries and keys',
                       '6. Temperature: from sharp to flat', '7. Attention weights are not an explanation'),
             tasks={'offset_share': 'check_offset_share'},
             builds=('core.metrics.attention_entropy', 'core.metrics.offset_share'),
             drawings=(), plots=('lesson_plots',),
             tests=('test_checkers_heatmaps.py', 'test_checkers_02.py', 'test_lesson_plots_02.py', 'test_metrics.py')),
    Notebook('03', '03_multi_head_attention', 'Multi-head attention',
             kind='core', needs=('01', '02'),
             outcomes=('why several heads; write the split into heads, merge back; the reshape that runs and is wrong; '
                       'count parameters (4d^2 + 4d, any h); one module for self- and cross-attention'),
             sections=('1. The idea', '1.1 Two questions, one head or two', '2. Multi-head attention in plain sight',
                       '2.1 Project', '2.2 Split into heads', '2.3 A reshape that runs and is wrong',
                       '2.4 Attention in every head at once', '2.5 Merge the heads', '2.6 Output projection',
                       '2.7 The same split with sizes that all differ', '3. Counting the parameters',
                       '4. Same weights, course version',
                       '5. Self-attention and cross-attention: one module, two calls'),
             tasks={'split_heads': 'check_split_heads'},
             builds=('core.multihead.split_heads', 'core.multihead.MultiHeadAttention',
                     'core.multihead.to_torch_multihead'),
             drawings=('heads_split_merge',), plots=('multihead_plots',),
             tests=('test_checkers_lessons.py', 'test_multihead.py', 'test_multihead_plots.py')),
    Notebook('03b', '03b_pytorch_multihead', '`nn.MultiheadAttention` and the mask-convention trap',
             kind='core', needs=('01b', '03'),
             outcomes=('the same weights in nn.MultiheadAttention; attention dropout; its inverted masks (attn_mask, '
                       'key_padding_mask) and what goes wrong silently; write the (B*h, n, m) mask for a per-sequence '
                       'mask'),
             sections=("1. Same weights, PyTorch's `nn.MultiheadAttention`", '2. Attention dropout',
                       '3. The mask-convention trap', '3.1 Padding masks: `key_padding_mask`',
                       '3.2 One more difference: the shape of a per-sequence mask'),
             tasks={'torch_attn_mask': 'check_torch_attn_mask'}, builds=(), drawings=(), plots=('multihead_plots',),
             tests=('test_checkers_pytorch_multihead.py', 'test_multihead.py')),
    Notebook('04', '04_seq2seq_with_attention', 'Sequence-to-sequence with additive (Bahdanau) attention',
             kind='core', needs=('01', '02', '03'), background='a little of RNNs',
             outcomes=('additive (Bahdanau) attention in a GRU encoder-decoder; one decoder step; read where it looks '
                       'while it writes and measure how far its peaks sit from the anti-diagonal (task: peak_offsets)'),
             sections=('1. The task: write the input backwards', '2. The bottleneck that attention removes',
                       '3. The encoder', '4. Additive attention in plain sight',
                       '4.1 The weights must depend on the decoder state', '4.2 Four scoring functions',
                       '5. One decoder step', '6. Teacher forcing', '7. Training', '8. Evaluation with greedy decoding',
                       '8.1 The same network without attention', "8.2 Luong's variant, trained beside Bahdanau",
                       '9. Where the model looks'),
             tasks={'peak_offsets': 'check_peak_offsets'},
             builds=('core.scores.dot_scores', 'core.scores.scaled_dot_scores', 'core.scores.AdditiveScore',
                     'core.scores.MultiplicativeScore', 'models.seq2seq.Seq2SeqNoAttention',
                     'models.seq2seq.Seq2SeqWithAttention', 'models.seq2seq_data.decoder_inputs',
                     'models.seq2seq_training.train_seq2seq'),
             drawings=('decoder_step',), plots=('lesson_plots',),
             tests=('test_checkers_lessons.py', 'test_checkers_04.py', 'test_seq2seq.py', 'test_lesson_plots.py')),
    Notebook('04b', '04b_dates_to_iso8601', 'Attention that must reorder: dates into ISO 8601',
             kind='optional', needs=('04',),
             outcomes=('the same model on dates written eight ways: attention that reorders; alignment accuracy '
                       "measured against each output character's deciding span"),
             sections=('1 · The data: eight ways to write a date, one answer each',
                       '2 · Which input characters decide each output character?',
                       "3 · Train the course's model, unchanged", '4 · Predict, then run',
                       '5 · One map per written form', '6 · Alignment accuracy', '7 · Its mistakes',
                       '8 · The same model without attention'),
             tasks={'full_year': 'check_full_year', 'output_spans': 'check_output_spans',
                    'alignment_accuracy': 'check_alignment_accuracy'},
             builds=('models.dates.full_year', 'models.dates.output_spans', 'models.dates.alignment_hits',
                     'models.dates.alignment_accuracy'),
             drawings=(), plots=('date_plots',),
             tests=('test_checkers_dates.py', 'test_checkers_04b.py', 'test_dates.py')),
    Notebook('05', '05_causal_mask', 'Causal masks: attention that cannot see the future (exercises)',
             kind='core (exercise)', needs=('01', '03'),
             outcomes='write a causal mask and masked attention; test a layer for leaks from the future',
             sections=('1. Why a decoder must not see the future', '2. The mask and its conventions',
                       '3. Masking the scores: why $-\\infty$', '4. Masked self-attention',
                       '5. No future leakage, checked from the outside',
                       '6. The additive form: a float mask of 0 and $-\\infty$',
                       '7. `nn.MultiheadAttention`: True means blocked',
                       '8. Edge case: a query with nothing to attend to', '9. Final check of your three functions'),
             tasks={'causal_mask': 'check_causal_mask', 'masked_attention': 'check_masked_attention',
                    'leaks_future': 'check_leaks_future'},
             builds=(), drawings=('causal_mask_sentence',), plots=(), tests=('test_checkers_05.py',)),
    Notebook('06', '06_cross_attention', 'Cross-attention (exercise)',
             kind='core (exercise)', needs=('03', '05'),
             outcomes=('predict cross-attention shapes; build a cross-attention layer with a padding mask; measure '
                       'which encoder position each decoder position reads'),
             sections=('1. One mechanism, two sources', '2. Task 1: predict the shapes',
                       '3. Task 2: a cross-attention layer', "3.1 Your layer, the course's and PyTorch's",
                       '4. A task where we know which encoder position is needed',
                       '5. Task 3: which encoder position does each decoder position read?', '6. Train for a moment',
                       '7. Move the items: the attention follows the content', '8. A question with no answer'),
             tasks={'cross_attention_shapes': 'check_cross_attention_shapes', 'CrossAttention': 'check_cross_attention',
                    'strongest_source': 'check_strongest_source'},
             builds=('core.metrics.strongest_source',),
             drawings=(), plots=(), tests=('test_checkers_06.py', 'test_strongest_source.py')),
    Notebook('07', '07_head_patterns', 'Head patterns: which head looks where? (exercises)',
             kind='core (exercise)', needs=('03',),
             outcomes=('measure heads by attention entropy and mean attention distance; label heads local or global; '
                       'test the labels by switching heads off'),
             sections=('1. A task that needs two ways of looking', '2. The model', '2.1 Before training', '3. Training',
                       '4. Eight heads, one sequence', '5. Measuring a head',
                       '6. Does the label mean anything? Switch heads off', '7. Another seed, other heads'),
             tasks={'head_entropy': 'check_head_entropy', 'head_mean_distance': 'check_head_mean_distance',
                    'classify_heads': 'check_classify_heads'},
             builds=('core.metrics.mean_attention_distance',),
             drawings=(), plots=(), tests=('test_checkers_07.py', 'test_head_task.py')),
    Notebook('07b', '07b_induction_heads', 'Induction heads: two layers of attention that copy',
             kind='optional', needs=('02', '05', '07'),
             outcomes=('why copying from context takes two attention layers (a previous-token head, then an induction '
                       'head); recognise a phase change in training; measure heads with a previous-token and an '
                       'induction score (write the induction score); test the circuit by switching heads off; explain '
                       'the fixed-length trap and why the circuit fails on longer blocks and copies elsewhere'),
             sections=('1. A task that only copying can solve', '2. A Transformer made of attention only',
                       '3. Two layers, one layer, and a phase change', '4. The two heads', '5. Measuring the heads',
                       '6. Switch each head off', '7. Break it', '7.1 The fixed-length trap', '7.2 Longer blocks',
                       '7.3 A copy at a random place'),
             tasks={'induction_score': 'check_induction_score'}, builds=('models.induction.AttentionOnlyTransformer',),
             drawings=('induction_circuit',), plots=('induction_plots', 'exploration_plots'),
             tests=('test_checkers_induction.py', 'test_induction.py')),
    Notebook('08', '08_attention_vs_no_attention', 'Exercise: attention vs. no attention',
             kind='core (exercise)', needs=('04',),
             outcomes='token accuracy, exact match and accuracy by length; attention vs no attention as sources grow',
             sections=('1. Two models, one difference', '2. Data: reversal with sources up to 24 tokens',
                       '3. Your task: measuring', '4. Training under the same budget',
                       '5. Accuracy against source length', '6. Which outputs fail first?'),
             tasks={'token_accuracy': 'check_token_accuracy', 'exact_match': 'check_exact_match',
                    'accuracy_by_length': 'check_accuracy_by_length'},
             builds=(), drawings=(), plots=(), tests=('test_checkers_08.py',)),
    Notebook('09', '09_positional_encoding', 'Positions: why attention needs them, and two ways to add them',
             kind='core', needs=('03',),
             outcomes=('why attention ignores order; sinusoidal and learned positions; read a position back off its '
                       'encoding'),
             sections=('1. Self-attention cannot see word order', '2. Sinusoidal positional encodings',
                       '3. Back to the dog: positions break the symmetry', '4. What the sines buy: offsets',
                       '4.1 Similarity depends only on the offset', '4.2 Shifting by $k$ is a rotation',
                       '5. The alternative: learned position embeddings'),
             tasks={'decode_position': 'check_decode_position'},
             builds=('core.positions.sinusoidal_positional_encoding', 'core.positions.SinusoidalPositionalEncoding',
                     'core.positions.LearnedPositionalEmbedding'),
             drawings=(), plots=(), tests=('test_checkers_09_09b.py', 'test_checkers_09.py')),
    Notebook('09b', '09b_transformer_block', "A Transformer block from the course's parts",
             kind='core', needs=('01b', '03', '09'),
             outcomes=("a post-norm Transformer block from the course's parts, equal to nn.TransformerEncoderLayer; "
                       'its parameter count; write the pre-norm forward pass; order and the causal mask'),
             sections=('1. From lesson 09: two sentences and their positions', '2. The parts of a block',
                       '2.1 LayerNorm and the FFN in plain sight', '3. The block', '3.1 Pre-norm',
                       '3.2 Counting the parameters', "4. Same weights: the course block and PyTorch's encoder layer",
                       '5. The whole block is still blind to order',
                       "6. With a causal mask: the decoder's self-attention"),
             tasks={'pre_norm_block': 'check_pre_norm_block'},
             builds=('core.transformer.PositionwiseFeedForward', 'core.transformer.TransformerBlock',
                     'core.transformer.to_torch_encoder_layer'),
             drawings=('transformer_block',), plots=(), tests=('test_checkers_09_09b.py', 'test_transformer.py')),
    Notebook('10', '10_explore_scaling_and_sparsity', 'Explore further: scaling, saturation and sparse attention',
             kind='optional', needs=('01',),
             outcomes=('measure softmax saturation without scaling and what it costs in training (3 seeds); '
                       "sparsemax's threshold and top-k attention"),
             sections=('1. The scaling is a temperature',
                       '2. Without the scaling the softmax saturates, and more so as $d_k$ grows', '2.1 One picture',
                       "2.2 How big is the softmax's gradient?", '2.3 Growing $d_k$ from 8 to 128 without scaling',
                       '3. What the missing scaling does to training', '3.1 At initialisation',
                       '3.2 Training the three variants, three seeds', '4. Sparse attention: sparsemax and top-$k$',
                       '4.1 Sparsemax in plain sight', '4.2 Top-$k$ softmax',
                       '4.3 The same scores, three normalisations', '4.4 What exact zeros do to the output',
                       '4.5 What exact zeros do to the gradients',
                       '4.6 The temperature decides how many keys sparsemax keeps'),
             tasks={'sparsemax_threshold': 'check_sparsemax_threshold'},
             builds=('core.sparse.sparsemax', 'core.sparse.topk_softmax'), drawings=(), plots=('exploration_plots',),
             tests=('test_checkers_explorations.py', 'test_checkers_10.py', 'test_sparse.py', 'test_recall_task.py',
                    'test_exploration_plots.py')),
    Notebook('11', '11_next_token_predictor', 'A tiny GPT: causal self-attention and next-token prediction',
             kind='core', needs=('05', '09b'),
             outcomes=('next-token prediction with causal self-attention; write the next-token distribution at a '
                       'temperature; generate text from a tiny GPT; see a model without the mask cheat'),
             sections=('1. Next-token prediction', '2. A task with checkable answers: repeated patterns',
                       '3. The model, built in plain sight', '4. The model cannot cheat', '4.1 Change a future token',
                       '4.2 One pass equals one pass per prefix', '5. Training on the pattern task',
                       '6. Generating, one token at a time', '6.1 Greedy decoding',
                       '6.2 Where the heads look while generating',
                       '7. Text: a character-level model of a tiny rhyme book', '7.1 Temperature',
                       '7.2 Attention on generated text', '8. Without the mask: a model that cheats'),
             tasks={'next_token_probs': 'check_next_token_probs'},
             builds=('models.language_model.shift_by_one', 'models.language_model.sample_windows',
                     'models.language_model.CausalLM', 'models.language_model.lm_loss',
                     'models.language_model.next_token_probs', 'models.language_model.generate'),
             drawings=('lm_stack',), plots=('exploration_plots',),
             tests=('test_checkers_explorations.py', 'test_checkers_11.py', 'test_language_model.py')),
    Notebook('12', '12_explore_head_count', 'Explore further: how many heads, and what does each one do?',
             kind='optional', needs=('07',),
             outcomes=('compare head counts at a fixed budget over seeds; find where one head fails; what each head '
                       'does, by entropy and distance'),
             sections=('1. What changes when the number of heads changes', '2. The experiment',
                       '3. A smaller budget: the loss curves', '4. What does the single head do?',
                       '4.1 A hundred times the budget: stored long runs', '5. Entropy per head across models',
                       '6. The answers'),
             tasks={'marker_beside': 'check_marker_beside'}, builds=('models.head_task.marker_beside',),
             drawings=(), plots=('exploration_plots',), tests=('test_checkers_explorations.py', 'test_head_task.py')),
    Notebook('13', '13_explore_longer_training', 'Explore further: train longer, and measure the anti-diagonal',
             kind='optional', needs=('04',),
             outcomes=("define closeness to the anti-diagonal and follow it over 10 epochs; where each step's peak "
                       'sits; stored runs to 100 epochs'),
             sections=('1. What "on the anti-diagonal" means, step by step',
                       '2. Data and settings: train past the solved task', '3. A callback that looks after every epoch',
                       '4. Ten epochs, measured after each one', '4.1 The matrix, epoch by epoch',
                       '4.2 The measures against the loss and the accuracy', '5. Where does the rest of the weight go?',
                       '6. A one-directional encoder: sharper, but one position off',
                       '7. Other seeds, and up to ten times longer',
                       '8. Verdict: does longer training give a one-hot anti-diagonal?'),
             tasks={'argmax_offset_share': 'check_argmax_offset_share'},
             builds=('models.seq2seq_data.argmax_offset_share',),
             drawings=(), plots=('exploration_plots',), tests=('test_checkers_explorations.py', 'test_checkers_13.py')),
    Notebook('14', '14_attention_cost', 'What attention costs: time and memory as the sequence grows',
             kind='optional', needs=('01',),
             outcomes=('time and memory of attention as the sequence grows; the slope per doubling; fused '
                       'scaled_dot_product_attention'),
             sections=('1. Three ways to compute the same attention', '2. Count before you measure',
                       '3. Memory: the score matrix', '3.1 One head at 8,192 tokens', '3.2 The peak inside one call',
                       '4. Time: how it grows with $T$', '4.1 The log-log plot and the fitted exponent',
                       '4.2 The slope per doubling', '5. Where the time goes, at $T = 1024$',
                       '6. Attention against an RNN', '7. What changes on a GPU, and what does not'),
             tasks={'slopes': 'check_slopes'}, builds=(), drawings=(), plots=('exploration_plots',),
             tests=('test_checkers_explorations.py', 'test_checkers_14.py', 'test_timing.py',
                    'test_attention_speed.py')),
    Notebook('15', '15_kv_cache', 'The KV cache: generating without recomputing the past (exercise)',
             kind='optional (exercise)', needs=('05', '11'),
             outcomes=('write the attention step of a KV cache (bottom-right causal mask); cached generation equal to '
                       'uncached; work and time of a step against context length; build grouped-query attention and '
                       'measure the smaller cache'),
             sections=('1. What `generate` does again and again', '2. Your task: the attention step of a cache',
                       '3. Cached generation in the model', '4. The speed-up against the context length',
                       '5. What the cache costs: memory', '6. Grouped-query attention: a smaller cache'),
             tasks={'cached_attention': 'check_cached_attention'}, builds=('core.attention.grouped_query_attention',),
             drawings=('kv_cache', 'grouped_query_attention'), plots=(),
             tests=('test_checkers_inference.py', 'test_checkers_15.py', 'test_kv_cache.py')),
    Notebook('16', '16_online_softmax_and_tiled_attention',
             'Online softmax and tiled attention: attention without the $n \\times m$ matrix (exercise)',
             kind='optional (exercise)', needs=('01', '14'),
             outcomes=('a one-pass softmax with a running maximum; attention over key blocks equal to '
                       'scaled_dot_product_attention; its peak memory against the from-scratch version'),
             sections=('1. Why a softmax needs the maximum', '2. One pass: a running maximum and a rescaled sum',
                       '3. Your task: one block of the online softmax', '4. Tiled attention',
                       '5. Peak memory: tiled against from scratch', '6. Time, and what the real kernels add'),
             tasks={'online_update': 'check_online_update'},
             builds=('core.tiled_attention.online_softmax', 'core.tiled_attention.tiled_attention'),
             drawings=('tiled_attention',), plots=(),
             tests=('test_checkers_inference.py', 'test_checkers_16.py', 'test_tiled_attention.py')),
    Notebook('17', '17_rotary_position_embeddings', 'Rotary position embeddings (RoPE) (exercise)',
             kind='optional (exercise)', needs=('09', '11'),
             outcomes=('write rotary position embeddings; show the score depends only on the offset; RoPE against '
                       'learned and sinusoidal positions over three seeds, also at twice the trained length'),
             sections=('1. Rotations keep only the difference', '2. Your task: RoPE for a batch of heads',
                       '3. Added positions do not have this property', "4. RoPE in the course's language model"),
             tasks={'rope': 'check_rope'},
             builds=('core.rope.rope_angles', 'core.rope.apply_rope', 'core.rope.rope_rotation_matrix',
                     'core.rope.RotaryMultiHeadAttention'),
             drawings=('rope_rotation',), plots=(), tests=('test_checkers_inference.py', 'test_rope.py')),

)

_LATEX = ((r"$\sqrt{d_k}$", "√d_k"), (r"$n \times m$", "n × m"))


def plain_title(title: str) -> str:
    """A title without LaTeX, for tables and links: ``Why $\\sqrt{d_k}$`` -> ``Why √d_k``."""
    for latex, plain in _LATEX:
        title = title.replace(latex, plain)
    return re.sub(r"[$\\]", "", title)


def notebook(key: str) -> Notebook:
    """The entry of a notebook by its key (``"05"``, ``"01b"``) or its stem (``"05_causal_mask"``)."""
    for entry in NOTEBOOKS:
        if key in (entry.key, entry.stem):
            return entry
    raise KeyError(f"no notebook {key!r} in the course map; it has {[e.key for e in NOTEBOOKS]}")


def main(argv: list[str]) -> int:
    for key in argv or [entry.key for entry in NOTEBOOKS]:
        entry = notebook(key)
        print(f"{entry.stem}: {plain_title(entry.title)} ({entry.kind})")
        for kind, paths in entry.pieces().items():
            print(f"  {kind}: " + (", ".join(paths) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
