"""The neighbours-and-count task, its model, training loop, evaluation and head ablation."""

import pytest
import torch
import torch.nn.functional as F

from course_utils import seed_everything
from course_utils.models.head_task import (
    HeadsModel,
    NeighbourCountTask,
    ToyBatch,
    ablate_heads,
    evaluate,
    task_loss,
    train_heads_model,
)


def test_ids_and_names():
    task = NeighbourCountTask(length=5, num_symbols=3, max_markers=2)
    assert task.names() == ["a", "b", "c", "#", "-"]
    assert (task.marker_id, task.edge_id, task.vocab_size) == (3, 4, 4)
    assert (task.num_neighbour_classes, task.num_count_classes) == (5, 3)
    assert task.to_text(torch.tensor([0, 3, 2])) == ["a", "#", "c"]


@pytest.mark.parametrize("kwargs", [dict(length=1), dict(num_symbols=0), dict(num_symbols=27), dict(max_markers=13)])
def test_bad_task_settings_are_refused(kwargs):
    with pytest.raises(ValueError):
        NeighbourCountTask(**kwargs)


def test_sample_labels_agree_with_the_tokens_loop_by_loop():
    task = NeighbourCountTask(length=7, num_symbols=4, max_markers=3)
    batch = task.sample(200, torch.Generator().manual_seed(0))
    assert all(t.shape == (200, 7) for t in batch)
    for row in range(200):
        tokens = batch.tokens[row].tolist()
        assert all(0 <= t <= task.marker_id for t in tokens)
        markers = tokens.count(task.marker_id)
        assert batch.count[row].tolist() == [markers] * 7
        for i in range(7):
            before = tokens[i - 1] if i > 0 else task.edge_id
            after = tokens[i + 1] if i < 6 else task.edge_id
            assert batch.prev[row, i].item() == before
            assert batch.next[row, i].item() == after


def test_sample_covers_every_count_and_is_reproducible():
    task = NeighbourCountTask()
    a = task.sample(400, torch.Generator().manual_seed(3))
    b = task.sample(400, torch.Generator().manual_seed(3))
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    counts = torch.bincount(a.count[:, 0], minlength=task.num_count_classes)
    assert counts.tolist() and (counts > 50).all()  # each of 0..3 markers about 100 times in 400
    assert set(a.tokens.unique().tolist()) == set(range(task.vocab_size))
    with pytest.raises(ValueError):
        task.sample(0)


def test_model_shapes_and_rows_of_weights():
    task = NeighbourCountTask(length=6, num_symbols=3, max_markers=2)
    model = HeadsModel(task, d_model=16, num_heads=4, d_hidden=8)
    batch = task.sample(5, torch.Generator().manual_seed(1))
    (prev, nxt, count), weights = model(batch.tokens)
    assert prev.shape == nxt.shape == (5, 6, 5) and count.shape == (5, 6, 3)
    assert weights.shape == (5, 4, 6, 6)
    torch.testing.assert_close(weights.sum(-1), torch.ones(5, 4, 6))
    with pytest.raises(ValueError, match="tokens must have shape"):
        model(torch.zeros(2, 7, dtype=torch.long))


@pytest.mark.parametrize("num_heads", [1, 4, 16])
def test_model_with_other_head_counts(num_heads):
    task = NeighbourCountTask()
    model = HeadsModel(task, d_model=64, num_heads=num_heads)
    _, weights = model(task.sample(2, torch.Generator().manual_seed(0)).tokens)
    assert weights.shape == (2, num_heads, 12, 12)
    assert sum(p.numel() for p in model.attention.parameters()) == 4 * 64**2 + 4 * 64


def test_model_depends_on_position():
    # Without position embeddings every position holding the same token would get the same logits.
    task = NeighbourCountTask(length=4, num_symbols=2, max_markers=0)
    model = HeadsModel(task, d_model=8, num_heads=2, d_hidden=8)
    (prev, _, _), _ = model(torch.zeros(1, 4, dtype=torch.long))
    assert not torch.allclose(prev[0, 0], prev[0, 1])


def test_task_loss_is_the_sum_of_three_cross_entropies():
    task = NeighbourCountTask(length=5, num_symbols=3, max_markers=2)
    batch = task.sample(4, torch.Generator().manual_seed(2))
    torch.manual_seed(0)
    logits = (torch.randn(4, 5, 5), torch.randn(4, 5, 5), torch.randn(4, 5, 3))
    expected = 0.0
    for out, y in zip(logits, (batch.prev, batch.next, batch.count)):
        expected += sum(F.cross_entropy(out[b, i : i + 1], y[b, i : i + 1]) for b in range(4) for i in range(5)) / 20
    torch.testing.assert_close(task_loss(logits, batch), expected)


class Oracle(HeadsModel):
    """Answers from the labels themselves (optionally with the count always wrong)."""

    def __init__(self, task, answers: ToyBatch, wrong_count: bool = False):
        super().__init__(task, d_model=8, num_heads=2, d_hidden=4)
        self.answers, self.wrong_count = answers, wrong_count

    def forward(self, tokens):
        C, K = self.task.num_neighbour_classes, self.task.num_count_classes
        count = (self.answers.count + 1) % K if self.wrong_count else self.answers.count
        logits = (F.one_hot(self.answers.prev, C).float(), F.one_hot(self.answers.next, C).float(),
                  F.one_hot(count, K).float())
        return logits, None


def test_evaluate_counts_right_answers():
    task = NeighbourCountTask(length=5, num_symbols=3, max_markers=2)
    batch = task.sample(10, torch.Generator().manual_seed(4))
    assert evaluate(Oracle(task, batch), batch) == {"prev": 1.0, "next": 1.0, "count": 1.0, "all": 1.0}
    assert evaluate(Oracle(task, batch, wrong_count=True), batch) == {"prev": 1.0, "next": 1.0, "count": 0.0, "all": 0.0}


@pytest.mark.slow  # trains (seconds of CPU); notebooks 07 and 12 train it in the first tier
def test_training_is_reproducible_and_learns_the_task():
    task = NeighbourCountTask()
    seed_everything(0)
    short = train_heads_model(HeadsModel(task), steps=30, seed=0)
    seed_everything(0)
    model = HeadsModel(task)
    losses = train_heads_model(model, steps=150, seed=0)
    assert losses[:30] == short  # same seeds, same thread count: the same run
    assert losses[-1] < 0.1 * losses[0]
    accuracy = evaluate(model, task.sample(500, torch.Generator().manual_seed(99)))
    assert accuracy["all"] > 0.95, accuracy


def test_train_refuses_bad_settings():
    with pytest.raises(ValueError):
        train_heads_model(HeadsModel(NeighbourCountTask()), steps=0)
    with pytest.raises(ValueError, match="clip"):
        train_heads_model(HeadsModel(NeighbourCountTask()), steps=1, clip=0.0)


def test_clipping_reaches_the_training():  # notebook 12 clips at 1: a tiny cap must change the run
    task = NeighbourCountTask(length=6, num_symbols=3, max_markers=2)
    runs = []
    for clip in (None, 1e-4):
        seed_everything(0)
        runs.append(train_heads_model(HeadsModel(task, d_model=16, num_heads=2, d_hidden=8), steps=3, batch_size=8,
                                      lr=1e-2, clip=clip))
    assert runs[0][0] == runs[1][0]  # the same first batch and weights
    assert runs[0][2] != runs[1][2]  # but smaller steps after it


def test_ablating_heads_zeroes_their_slice_before_w_o():
    torch.manual_seed(0)
    task = NeighbourCountTask(length=6, num_symbols=3, max_markers=2)
    model = HeadsModel(task, d_model=16, num_heads=4, d_hidden=8)
    tokens = task.sample(3, torch.Generator().manual_seed(5)).tokens
    before, weights_before = model(tokens)

    # By hand: recompute the layer, zero heads 1 and 3 (features 4..7 and 12..15), mix with W_o.
    mha = model.attention
    x = model.token_embedding(tokens) + model.position_embedding(torch.arange(6))
    _, weights = mha(x, x, x)
    V = mha.split_heads(mha.W_v(x))  # (B, h, n, d_k)
    heads = weights @ V
    heads[:, [1, 3]] = 0.0
    expected = model.readout(x + mha.W_o(mha.merge_heads(heads)))

    with ablate_heads(model, [3, 1]):
        (prev, nxt, count), weights_inside = model(tokens)
    torch.testing.assert_close(torch.cat([prev, nxt, count], -1), expected)
    torch.testing.assert_close(weights_inside, weights_before)  # the weights are untouched

    after, _ = model(tokens)  # the hook is gone after the block
    assert all(torch.equal(a, b) for a, b in zip(before, after))
    with pytest.raises(ValueError, match="heads must be in 0..3"):
        with ablate_heads(model, [4]):
            pass
