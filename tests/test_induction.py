"""course_utils.models.induction (lesson 07b): the copy tasks, the attention-only model, the head scores,
the ablation, the training's early stop, and the stored three-seed study the lesson quotes."""

import json

import pytest
import torch

from course_utils import MultiHeadAttention, causal_mask, seed_everything
from course_utils.core.metrics import offset_share
from course_utils.models.induction import (
    AttentionOnlyTransformer,
    CopyBatch,
    ablate_heads,
    accuracy_by_source,
    copy_accuracy,
    copy_batch,
    copy_losses,
    held_out,
    induction_score,
    previous_token_score,
    repeat_batch,
    right_predictions,
    train_induction,
)
from course_utils.studies import induction_study as S


def g(seed=0):
    return torch.Generator().manual_seed(seed)


def test_repeat_batch_repeats_each_rows_block_and_marks_what_a_copy_predicts():
    batch = repeat_batch(50, 20, (3, 7), 11, g())
    assert batch.tokens.shape == batch.copied.shape == (50, 20)
    assert batch.tokens.dtype == torch.long and batch.copied.dtype == torch.bool
    periods = set()
    for tokens, copied in zip(batch.tokens, batch.copied):
        L = int((~copied).sum()) - 1  # copied from t = L + 1 on
        periods.add(L)
        assert 3 <= L <= 7 and not copied[: L + 1].any() and copied[L + 1 :].all()
        assert torch.equal(tokens[L:], tokens[: 20 - L])  # the block, again and again
    t = torch.arange(20)
    sources = batch.source[batch.copied]
    assert torch.equal(batch.tokens[batch.copied], batch.tokens.gather(1, batch.source.clamp_min(0))[batch.copied])
    assert bool((sources < t.expand(50, 20)[batch.copied]).all()) and bool((batch.source[~batch.copied] == -1).all())
    assert periods == set(range(3, 8))  # every period of the range drawn
    fixed = repeat_batch(4, 8, 4, 5, g())
    assert torch.equal(fixed.tokens[:, 4:], fixed.tokens[:, :4]) and fixed.copied[:, 5:].all()
    assert torch.equal(repeat_batch(4, 8, 4, 5, g(1)).tokens, repeat_batch(4, 8, 4, 5, g(1)).tokens)


def test_held_out_is_a_block_then_the_same_block():
    test = held_out(6, count=10, vocab_size=20)
    assert test.tokens.shape == (10, 12) and torch.equal(test.tokens[:, 6:], test.tokens[:, :6])
    assert torch.equal(held_out(6, count=10, vocab_size=20).tokens, test.tokens)  # the same every time
    assert test.copied.sum().item() == 10 * 5


def test_copy_batch_copies_one_block_to_a_later_place():
    batch = copy_batch(40, 30, 6, 50, g())
    assert batch.copied.sum(1).eq(5).all()  # the copy's tokens after its first
    for tokens, source in zip(batch.tokens, batch.source):
        start = int((source >= 0).nonzero()[0]) - 1
        origin = int(source[start + 1]) - 1
        assert origin + 6 <= start and torch.equal(tokens[origin : origin + 6], tokens[start : start + 6])
        assert source[start + 1 : start + 6].tolist() == list(range(origin + 1, origin + 6))


@pytest.mark.parametrize(("call", "error"), [
    (lambda: repeat_batch(2, 8, 8), ValueError),  # no repeat
    (lambda: repeat_batch(2, 8, (5, 3)), ValueError),
    (lambda: repeat_batch(2, 8, 2.5), ValueError),
    (lambda: repeat_batch(2, 8, True), ValueError),
    (lambda: repeat_batch(0, 8, 2), ValueError),
    (lambda: copy_batch(2, 10, 6), ValueError),
    (lambda: copy_batch(2, 10, 1), ValueError),
])
def test_bad_task_arguments_are_refused(call, error):
    with pytest.raises(error):
        call()


def test_the_model_is_the_course_parts_in_order():
    torch.manual_seed(0)
    model = AttentionOnlyTransformer(13, 10, d_model=8, num_layers=2, num_heads=2)
    tokens = torch.randint(13, (3, 10))
    logits, weights = model(tokens)
    assert logits.shape == (3, 10, 13) and weights.shape == (3, 2, 2, 10, 10)
    assert bool((weights.triu(1) == 0).all())  # causal
    # By hand: embeddings, then x + attention(LayerNorm(x)) per layer, final LayerNorm, read-out.
    x = model.token_embedding(tokens) + model.position.table.weight[:10]
    for norm, attention in zip(model.norms, model.attentions):
        y = norm(x)
        x = x + attention(y, y, y, causal_mask(10))[0]
    torch.testing.assert_close(logits, model.head(model.norm(x)))
    assert sum(p.numel() for p in AttentionOnlyTransformer(128, 48).parameters()) == 18_496


def test_the_model_refuses_bad_tokens():
    model = AttentionOnlyTransformer(10, 6, d_model=4)
    with pytest.raises(ValueError, match="max_len"):
        model(torch.zeros(1, 7, dtype=torch.long))
    with pytest.raises(ValueError):
        model(torch.full((1, 3), 10))
    with pytest.raises(ValueError):
        model(torch.zeros(1, 3))
    with pytest.raises(TypeError):
        model([[1, 2]])
    with pytest.raises(ValueError):
        AttentionOnlyTransformer(10, 6, d_model=0)


def test_scores_of_perfect_heads():
    T, L = 12, 5
    induction = torch.zeros(T, T)
    previous = torch.zeros(T, T)
    for i in range(T):
        induction[i, i - L + 1 if i >= L else 0] = 1.0
        previous[i, max(i - 1, 0)] = 1.0
    assert induction_score(induction, L).item() == 1.0 and induction_score(previous, L).item() == 0.0
    assert previous_token_score(previous, L).item() == 1.0
    stacked = torch.stack([induction, previous])[None]  # (1, 2, T, T)
    assert induction_score(stacked, L).tolist() == [[1.0, 0.0]]
    assert torch.equal(previous_token_score(stacked, L), offset_share(stacked[..., :L, :L], -1))
    late = previous.clone()
    late[L:] = induction[L:]  # a previous-token head in the first block only still scores 1
    assert previous_token_score(late, L).item() == 1.0
    assert previous_token_score(induction, L).item() == pytest.approx(1 / (L - 1))  # only query 1 reads key 0
    assert induction_score(induction.double(), L).dtype == torch.float64


@pytest.mark.parametrize(("weights", "period", "error"), [
    (torch.rand(4, 5), 2, ValueError),  # not square
    (torch.rand(5, 5), 5, ValueError),  # no repeat
    (torch.rand(5, 5), 0, ValueError),
    (torch.rand(5, 5), 2.0, ValueError),
    (torch.rand(5, 5), True, ValueError),
    (torch.ones(5, 5, dtype=torch.long), 2, ValueError),
    ([[1.0]], 1, TypeError),
])
def test_induction_score_refuses_bad_input(weights, period, error):
    with pytest.raises(error):
        induction_score(weights, period)


def test_ablating_a_head_zeroes_its_output_and_only_inside_the_block():
    torch.manual_seed(0)
    model = AttentionOnlyTransformer(13, 10, d_model=8, num_layers=2, num_heads=2).eval()
    tokens = torch.randint(13, (2, 10))
    before, weights = model(tokens)
    outputs = []
    with ablate_heads(model, [(1, 0)]):  # a hook registered after the ablation's sees what W_o gets
        hook = model.attentions[1].W_o.register_forward_pre_hook(lambda m, args: outputs.append(args[0]))
        ablated, ablated_weights = model(tokens)
    hook.remove()
    assert bool((outputs[0][..., :4] == 0).all()) and bool((outputs[0][..., 4:] != 0).any())
    torch.testing.assert_close(ablated_weights, weights)  # the weights are still computed
    assert not torch.allclose(ablated, before)
    torch.testing.assert_close(model(tokens)[0], before)  # the hook is gone
    for bad in ([(2, 0)], [(0, 2)], [(0,)], [(True, 0)]):
        with pytest.raises(ValueError):
            with ablate_heads(model, bad):
                pass
    with pytest.raises(TypeError):
        with ablate_heads(MultiHeadAttention(4, 1), [(0, 0)]):
            pass


def test_accuracy_and_losses_count_only_the_tokens_they_should():
    batch = CopyBatch(torch.tensor([[1, 2, 3, 1, 2, 3]]), torch.tensor([[-1, -1, -1, -1, 1, 2]]))
    logits = torch.full((1, 6, 4), -10.0)
    logits[0, torch.arange(5), batch.tokens[0, 1:]] = 10.0  # right everywhere
    logits[0, 4, 3] = 0.0  # position 4 predicts token 5 (= 3) less surely
    copied, fresh = copy_losses(logits, batch)
    assert 0.0 < copied.item() < 1.0 and fresh.item() < 1e-6

    class Fixed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.p = torch.nn.Parameter(torch.zeros(()))

        def forward(self, tokens):
            wrong = logits.clone()
            wrong[0, 3] = -logits[0, 3]  # the prediction of token 4 (copied) is now wrong
            return wrong, None

    assert copy_accuracy(Fixed(), batch) == 0.5
    assert right_predictions(Fixed(), batch).tolist() == [[False, True, True, True, False, True]]
    by_source = accuracy_by_source(Fixed(), batch)
    assert by_source[1:3].tolist() == [0.0, 1.0] and by_source[[0, 3, 4, 5]].isnan().all()
    with pytest.raises(TypeError):
        copy_accuracy(Fixed(), batch.tokens)


def test_training_measures_without_stopping_and_stops_at_its_target():
    torch.manual_seed(0)
    model = AttentionOnlyTransformer(16, 12, d_model=8)
    test = repeat_batch(8, 12, 4, 16, g(5))
    history = train_induction(model, steps=6, length=12, period=(2, 4), batch_size=4, test=test, check_every=2)
    assert len(history["loss"]) == len(history["copied_loss"]) == 6 and history["check_steps"] == [2, 4, 6]
    assert all(0.0 <= a <= 1.0 for a in history["accuracy"])
    history = train_induction(model, steps=6, length=12, batch_size=4, period=3, test=test, target=0.0, check_every=2)
    assert len(history["loss"]) == 2  # stopped at the first check
    with pytest.raises(ValueError):
        train_induction(model, steps=6, target=0.5)


def test_the_stored_study_holds_the_lessons_claims_and_is_what_the_package_trains():
    """data/results/induction_seeds.json, which lesson 07b quotes: three seeds, the settings of the study
    command, the claims of issue 27 on every seed, and its first training steps repeat today."""
    study = json.loads(S.RESULTS.read_text(encoding="utf-8"))
    assert study["settings"] == S.SETTINGS and sorted(study["seeds"]) == ["0", "1", "2"]
    for seed, run in study["seeds"].items():
        two, one, fixed = run["two_layers"], run["one_layer"], run["fixed_period"]
        assert two["accuracy"] >= 0.9 and one["accuracy"] < 0.4, seed
        assert two["previous_token"][0][0] > 0.8 and two["induction"][1][0] > 0.7, seed
        assert max(two["without"].values()) < 0.2 and fixed["accuracy"] > 0.97 and fixed["accuracy_other"] < 0.15, seed
        assert two["longer"]["24"] < two["longer"]["20"] < two["accuracy"] and two["random_place"] < 0.6, seed
    s = S.SETTINGS
    seed_everything(0)
    model = AttentionOnlyTransformer(s["vocab_size"], s["length"], s["d_model"], 2)
    losses = train_induction(model, steps=S.PREFIX_STEPS, length=s["length"], period=tuple(s["period"]),
                             batch_size=s["batch_size"], lr=s["lr"], seed=0)["loss"]
    assert losses == pytest.approx(study["seeds"]["0"]["two_layers"]["first_losses"], abs=1e-4)


# --- circuits and K-composition (07b sections 7 and 8), ablation of any model's heads (11b) -------------

from course_utils.models.circuits import head_matrices, ov_circuit, qk_circuit, without_layer_1  # noqa: E402
from course_utils.models.induction import attention_layers  # noqa: E402
from course_utils.models.language_model import CausalLM  # noqa: E402


def test_head_matrices_give_the_scores_the_head_computes():
    torch.manual_seed(0)
    model = AttentionOnlyTransformer(11, 8, d_model=12, num_layers=2, num_heads=3)
    mha = model.attentions[1]
    for lin in (mha.W_q, mha.W_k):
        torch.nn.init.zeros_(lin.bias)
    x = torch.randn(5, 12)
    Q, K = mha.split_heads(mha.W_q(x[None])), mha.split_heads(mha.W_k(x[None]))  # (1, h, 5, d_k)
    for head in range(3):
        W = head_matrices(model, 1, head)
        torch.testing.assert_close(qk_circuit(x, x, W["W_Q"], W["W_K"]), Q[0, head] @ K[0, head].T)
        assert W["W_V"].shape == (12, 4) and W["W_O"].shape == (4, 12)
    with pytest.raises(ValueError):
        head_matrices(model, 2, 0)
    with pytest.raises(ValueError):
        head_matrices(model, 0, 3)


def test_ov_circuit_is_the_product_in_order():
    g = torch.Generator().manual_seed(0)
    x, wv, wo, wu = (torch.randn(s, generator=g) for s in ((3, 6), (6, 2), (2, 6), (6, 9)))
    torch.testing.assert_close(ov_circuit(x, wv, wo, wu), x @ wv @ wo @ wu)


def test_without_layer_1_is_the_model_when_layer_1_writes_nothing_and_differs_otherwise():
    torch.manual_seed(0)
    model = AttentionOnlyTransformer(13, 10, d_model=16, num_layers=2).eval()
    tokens = torch.randint(13, (4, 10))
    full, _ = model(tokens)
    for part in ("query", "key", "value"):
        assert not torch.allclose(without_layer_1(model, tokens, part), full, atol=1e-4)
    with torch.no_grad():
        model.attentions[0].W_o.weight.zero_()
        model.attentions[0].W_o.bias.zero_()
    full, _ = model(tokens)
    for part in ("query", "key", "value"):
        torch.testing.assert_close(without_layer_1(model, tokens, part), full)
    with pytest.raises(ValueError):
        without_layer_1(model, tokens, "keys")
    with pytest.raises(TypeError):
        without_layer_1(AttentionOnlyTransformer(13, 10, d_model=16, num_layers=1), tokens)


def test_ablate_heads_works_on_a_causal_lm_and_restores_it():
    torch.manual_seed(0)
    model = CausalLM(7, 12, d_model=16, num_heads=2, num_layers=2).eval()
    assert len(attention_layers(model)) == 2
    tokens = torch.randint(7, (2, 12))
    before, _ = model(tokens)
    with ablate_heads(model, [(1, 0), (1, 1)]):
        off, _ = model(tokens)
    after, _ = model(tokens)
    assert not torch.allclose(off, before) and torch.equal(after, before)
    with pytest.raises(TypeError):
        attention_layers(torch.nn.Linear(2, 2))
