"""The recall task, the one-head RecallAttention model and its training helper."""

import math

import pytest
import torch

from course_utils.models.recall_task import RecallAttention, recall_batch, train_recall


def test_recall_batch_is_a_valid_task():
    keys, values, query, target = recall_batch(200, 5, 9, 4, torch.Generator().manual_seed(0))
    assert keys.shape == values.shape == (200, 5) and query.shape == target.shape == (200,)
    assert keys.min() >= 0 and keys.max() < 9 and values.min() >= 0 and values.max() < 4
    for k, v, q, t in zip(keys.tolist(), values.tolist(), query.tolist(), target.tolist()):
        assert len(set(k)) == 5, "keys of one example must all differ"
        assert k.count(q) == 1 and v[k.index(q)] == t
    # every slot and every key id gets used
    assert set(keys.flatten().tolist()) == set(range(9))
    slots = (keys == query[:, None]).float().argmax(-1)
    assert set(slots.tolist()) == set(range(5))


def test_recall_batch_repeats_with_the_same_generator():
    a = recall_batch(8, 3, 6, 5, torch.Generator().manual_seed(1))
    b = recall_batch(8, 3, 6, 5, torch.Generator().manual_seed(1))
    assert all(torch.equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("args", [(4, 7, 6, 3), (0, 2, 6, 3), (4, 2, 6, 0), (4, 2.0, 6, 3)])
def test_recall_batch_validation(args):
    with pytest.raises(ValueError):
        recall_batch(*args)


def test_model_matches_a_hand_computation():
    torch.manual_seed(0)
    model = RecallAttention(num_keys=7, num_values=5, d_model=6, d_k=4, scale=True)
    keys, values, query = torch.tensor([[3, 0, 6]]), torch.tensor([[4, 1, 2]]), torch.tensor([0])
    logits, weights = model(keys, values, query)
    E, Ev = model.key_embedding.weight, model.value_embedding.weight
    Wq, Wk = model.W_q.weight, model.W_k.weight
    q = [sum(Wq[a, b] * E[0, b] for b in range(6)) for a in range(4)]
    scores = []
    for key in (3, 0, 6):
        k = [sum(Wk[a, b] * E[key, b] for b in range(6)) for a in range(4)]
        scores.append(sum(q[a] * k[a] for a in range(4)) / 2.0)  # sqrt(d_k) = 2
    exps = [math.exp(s.item()) for s in scores]
    w = [e / sum(exps) for e in exps]
    context = [sum(w[i] * Ev[v, c].item() for i, v in enumerate((4, 1, 2))) for c in range(6)]
    expected = model.readout.bias + model.readout.weight @ torch.tensor(context)
    torch.testing.assert_close(weights, torch.tensor([w]))
    torch.testing.assert_close(logits, expected.unsqueeze(0))


def test_scale_flag_only_divides_the_scores():
    torch.manual_seed(1)
    scaled = RecallAttention(10, 4, 8, 16, scale=True)
    unscaled = RecallAttention(10, 4, 8, 16, scale=False)
    unscaled.load_state_dict(scaled.state_dict())
    keys, values, query, _ = recall_batch(6, 4, 10, 4, torch.Generator().manual_seed(2))
    torch.testing.assert_close(unscaled.scores(keys, query), 4.0 * scaled.scores(keys, query))
    _, w = unscaled(keys, values, query)
    torch.testing.assert_close(w, torch.softmax(4.0 * scaled.scores(keys, query), -1))


def test_initial_queries_and_keys_have_unit_variance_entries():
    torch.manual_seed(3)
    model = RecallAttention(num_keys=4000, num_values=2, d_model=64, d_k=64)
    ids = torch.arange(4000)
    with torch.no_grad():
        q = model.W_q(model.key_embedding(ids))
        k = model.W_k(model.key_embedding(ids))
        raw = (q[:2000] * k[2000:]).sum(-1)  # dot products of unrelated tokens
    assert abs(q.var().item() - 1) < 0.2 and abs(k.var().item() - 1) < 0.2
    assert abs(raw.var().item() / 64 - 1) < 0.25  # unscaled scores: variance about d_k


def test_model_validation():
    with pytest.raises(ValueError, match="d_k"):
        RecallAttention(4, 4, 8, 0)
    model = RecallAttention(4, 4, 8, 2)
    with pytest.raises(ValueError, match=r"\(B, P\)"):
        model(torch.zeros(2, 3, dtype=torch.long), torch.zeros(2, 4, dtype=torch.long), torch.zeros(2, dtype=torch.long))
    with pytest.raises(ValueError, match="query shape"):
        model.scores(torch.zeros(2, 3, dtype=torch.long), torch.zeros(3, dtype=torch.long))



def test_train_recall_learns_and_repeats():
    def run():
        torch.manual_seed(0)
        model = RecallAttention(num_keys=8, num_values=4, d_model=16, d_k=16)
        return train_recall(model, steps=120, num_pairs=3, batch_size=32, lr=1e-2, eval_every=40, eval_size=200, seed=0)

    history = run()
    assert len(history["loss"]) == 120 and history["eval_step"] == [40, 80, 120]
    assert len(history["accuracy"]) == len(history["correct_weight"]) == 3
    assert history["accuracy"][-1] > 0.9  # chance is 1/4
    assert history["correct_weight"][-1] > 0.8  # it solved the task by attending to the matching key
    assert sum(history["loss"][-10:]) < sum(history["loss"][:10]) / 3
    assert run() == history  # same seed, same numbers


def test_train_recall_validation():
    with pytest.raises(ValueError, match="positive"):
        train_recall(RecallAttention(4, 4, 8, 2), steps=0, num_pairs=2)
