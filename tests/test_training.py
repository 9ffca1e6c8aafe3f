"""The course's one training loop (course_utils/models/training.py): its Adam against PyTorch's,
train_steps against a loop written out by hand, callbacks that measure, the early stop and the record."""

import json

import pytest
import torch
from torch import nn

from course_utils.models.seq2seq import Seq2SeqNoAttention
from course_utils.models.seq2seq_data import make_reversal_data
from course_utils.models.seq2seq_training import train_seq2seq
from course_utils.models.training import Adam, Trainer, early_stop, train_steps


def _problem(seed: int = 0):
    torch.manual_seed(seed)
    model = nn.Linear(3, 1)
    true_w = torch.tensor([[1.0, -2.0, 0.5]])

    def batch_loss(generator):
        x = torch.randn(16, 3, generator=generator)
        return ((model(x) - x @ true_w.T) ** 2).mean()

    return model, batch_loss, true_w


def _hand_written(steps, lr, seed, clip=None, final_lr=None):
    """The reference: PyTorch's Adam (and LambdaLR for the decay), one step after another."""
    ref, _, true_w = _problem()
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(ref.parameters(), lr=lr)
    end = 1.0 if final_lr is None else final_lr / lr
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda k: 1.0 + (end - 1.0) * k / steps)
    losses = []
    for _ in range(steps):
        x = torch.randn(16, 3, generator=generator)
        loss = ((ref(x) - x @ true_w.T) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        if clip is not None:
            nn.utils.clip_grad_norm_(ref.parameters(), clip)
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
    return ref, losses


@pytest.mark.parametrize("clip", [None, 0.1])
def test_same_losses_and_weights_as_a_hand_written_loop(clip):
    model, batch_loss, _ = _problem()
    losses = train_steps(model, batch_loss, steps=25, lr=0.05, seed=3, clip=clip)
    ref, expected = _hand_written(25, 0.05, 3, clip=clip)
    assert losses == expected
    assert torch.equal(model.weight, ref.weight) and torch.equal(model.bias, ref.bias)


def test_the_learning_rate_decay_is_pytorchs_lambda_schedule_bit_for_bit():
    model, batch_loss, _ = _problem()
    trainer = Trainer(model, batch_loss, lambda g: (g for _ in range(25)), lr=0.05, seed=3, final_lr=0.005, decay_steps=25)
    losses = trainer.run().step_losses
    ref, expected = _hand_written(25, 0.05, 3, final_lr=0.005)
    assert losses == expected and torch.equal(model.weight, ref.weight)


def test_the_course_adam_is_pytorchs_adam_bit_for_bit():
    torch.manual_seed(0)
    ours, theirs = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 2)), None
    theirs = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 2))
    theirs.load_state_dict(ours.state_dict())
    ours[0].bias.requires_grad_(False)  # a parameter that never gets a gradient is left alone
    theirs[0].bias.requires_grad_(False)
    a, b = Adam(ours.parameters(), lr=0.01), torch.optim.Adam(theirs.parameters(), lr=0.01)
    for step in range(30):
        x = torch.randn(4, 5) * (1 + step)  # gradients of every size
        for net, opt in ((ours, a), (theirs, b)):
            opt.zero_grad()
            net(x).pow(2).sum().backward()
            opt.step()
    for p, q in zip(ours.parameters(), theirs.parameters()):
        assert torch.equal(p, q)


def test_the_course_adam_counts_steps_per_parameter_as_pytorch_does():
    """Issue 33: a parameter without a gradient in some steps (a head that is switched off, an embedding row
    not in the batch) gets PyTorch's bias corrections for ITS step count, bit for bit."""
    torch.manual_seed(1)
    ours = nn.ModuleList([nn.Linear(4, 3), nn.Linear(4, 3)])
    theirs = nn.ModuleList([nn.Linear(4, 3), nn.Linear(4, 3)])
    theirs.load_state_dict(ours.state_dict())
    a, b = Adam(ours.parameters(), lr=0.02), torch.optim.Adam(theirs.parameters(), lr=0.02)
    for step in range(25):
        x = torch.randn(6, 4)
        for net, opt in ((ours, a), (theirs, b)):
            opt.zero_grad()
            used = net[:1] if step % 3 else net  # the second layer skips two steps out of three
            sum(layer(x).pow(2).sum() for layer in used).backward()
            opt.step()
        for p, q in zip(ours.parameters(), theirs.parameters()):
            assert torch.equal(p, q), step


def test_the_course_adam_takes_what_pytorchs_takes_and_rejects_bad_betas():
    w = nn.Parameter(torch.ones(3))
    with pytest.raises(TypeError, match="iterable of tensors"):
        Adam(w, lr=0.1)  # torch.optim.Adam raises TypeError for one tensor too
    with pytest.raises(TypeError):
        torch.optim.Adam(w, lr=0.1)
    opt = Adam([w], lr=0.1)
    w.sum().backward()
    opt.step()
    assert not torch.equal(w.detach(), torch.ones(3))
    for betas in [(1.0, 0.999), (0.9,), (0.9, 1.0), (0.9, 1), (-0.1, 0.9), (0.9, float("nan")), "ab", 0.9]:
        with pytest.raises(ValueError, match="betas"):
            Adam([w], lr=0.1, betas=betas)
    with pytest.raises(ValueError, match="non-empty"):
        Adam([], lr=0.1)


def test_it_learns_and_calls_back_and_logs(capsys):
    model, batch_loss, true_w = _problem()
    seen = []
    losses = train_steps(model, batch_loss, steps=300, lr=0.05, log_every=100, on_step=seen.append)
    assert seen == list(range(1, 301))
    assert losses[-1] < 1e-3 < losses[0]
    torch.testing.assert_close(model.weight.detach(), true_w, atol=0.02, rtol=0)
    assert capsys.readouterr().out.splitlines() == [f"step  {k}  loss {losses[k - 1]:.4f}" for k in (100, 200, 300)]


def test_a_callback_that_measures_changes_nothing():
    class Noisy(nn.Module):  # its training forward pass draws from the global random state
        def __init__(self):
            super().__init__()
            self.lin, self.drop = nn.Linear(3, 1), nn.Dropout(0.3)

        def forward(self, x):
            return self.lin(self.drop(x))

    def run(callback):
        torch.manual_seed(0)
        model = Noisy()
        trainer = Trainer(model, lambda g: model(torch.randn(8, 3, generator=g)).pow(2).mean(),
                          lambda g: (g for _ in range(12)), lr=0.01)
        if callback:
            trainer.add_callback("on_step_end", callback)
        return trainer.run().step_losses, model.lin.weight.detach().clone(), torch.get_rng_state()

    def look(trainer):
        trainer.model.eval()
        torch.rand(100)
        torch.manual_seed(99)

    plain, watched = run(None), run(look)
    assert plain[0] == watched[0] and torch.equal(plain[1], watched[1]) and torch.equal(plain[2], watched[2])


def test_early_stop_ends_at_the_first_check_that_holds_and_changes_nothing_before():
    model, batch_loss, _ = _problem()
    checked = []

    def good_enough(m):
        checked.append(m.training)
        return (m.weight - torch.tensor([[1.0, -2.0, 0.5]])).abs().max().item() < 0.5

    losses = train_steps(model, batch_loss, steps=300, lr=0.05, stop_when=good_enough, check_every=5)
    assert len(losses) % 5 == 0 and 5 <= len(losses) < 300 and len(checked) == len(losses) // 5
    assert not any(checked), "stop_when must see the model in eval mode"
    full, _ = _hand_written(300, 0.05, 0)
    _, expected = _hand_written(len(losses), 0.05, 0)
    assert losses == expected  # the checks changed nothing
    assert full.weight.ne(model.weight).any()  # and it did stop


def test_early_stop_with_a_target_and_the_history_says_why():
    model, batch_loss, _ = _problem()
    history = Trainer(model, batch_loss, lambda g: (g for _ in range(200)), lr=0.05).add_callback(
        "on_step_end", early_stop(lambda m: -m.weight.sub(torch.tensor([[1.0, -2.0, 0.5]])).abs().max(), target=-0.5, every=4)).run()
    assert history.stop_reason == "target" and history.target == -0.5 and history.metric >= -0.5
    assert len(history.step_losses) % 4 == 0 and len(history.step_losses) < 200
    unreached = Trainer(_problem()[0], batch_loss, lambda g: (g for _ in range(8)), lr=0.05).add_callback(
        "on_step_end", early_stop(lambda m: 0.0, target=1.0)).run()
    assert unreached.stop_reason == "budget" and unreached.metric == 0.0 and len(unreached.step_losses) == 8


def test_train_seq2seq_stops_early_by_epochs():
    data = make_reversal_data(40, 2, 5, seed=0)
    torch.manual_seed(0)
    model = Seq2SeqNoAttention(12, emb_dim=8, hidden_dim=16)
    epochs_seen = []
    history = train_seq2seq(model, data, epochs=6, batch_size=16, seed=1, check_every=2,
                            stop_when=lambda m: epochs_seen.append(len(epochs_seen)) or len(epochs_seen) == 2)
    assert history.stop_reason == "stop_when" and len(history.epoch_losses) == 4 and len(history.step_losses) == 12


def test_the_training_record(tmp_path, monkeypatch):
    log = tmp_path / "trainings.jsonl"
    monkeypatch.setenv("COURSE_TRAINING_LOG", str(log))
    monkeypatch.setenv("COURSE_NOTEBOOK", "notebooks/07_head_patterns.ipynb")
    model, batch_loss, _ = _problem()
    train_steps(model, batch_loss, steps=6, lr=0.05, name="linear", stop_when=lambda m: 0.25, target=0.5, check_every=3)
    train_steps(model, batch_loss, steps=2, lr=0.05)
    first, second = (json.loads(line) for line in log.read_text().splitlines())
    assert first["name"] == "linear" and second["name"] == "train_steps"
    assert first["notebook"] == "notebooks/07_head_patterns.ipynb" and first["model"] == "Linear"
    assert (first["steps"], first["epochs"], first["stop"], first["metric"], first["target"]) == (6, 1, "budget", 0.25, 0.5)
    assert first["cpu_s"] >= 0 and first["wall_s"] >= 0 and first["threads"] == torch.get_num_threads()
    assert second["steps"] == 2 and second["metric"] is None and isinstance(second["loss"], float)
    monkeypatch.delenv("COURSE_TRAINING_LOG")
    train_steps(model, batch_loss, steps=2, lr=0.05)
    assert len(log.read_text().splitlines()) == 2


@pytest.mark.parametrize("steps", [0, -1, 2.5])
def test_steps_must_be_a_positive_integer(steps):
    model, batch_loss, _ = _problem()
    with pytest.raises(ValueError, match="steps must be a positive integer"):
        train_steps(model, batch_loss, steps=steps, lr=0.1)


def test_bad_callbacks_and_checks_are_refused():
    model, batch_loss, _ = _problem()
    trainer = Trainer(model, batch_loss, lambda g: [g], lr=0.1)
    with pytest.raises(ValueError, match="event must be one of on_step_end, on_epoch_end"):
        trainer.add_callback("on_batch_end", print)
    with pytest.raises(TypeError, match="callback must be callable"):
        trainer.add_callback("on_step_end", None)
    with pytest.raises(TypeError, match="stop_when must be a function"):
        early_stop(0.9)
    with pytest.raises(TypeError, match="target must be a number"):
        early_stop(lambda m: 1.0, target="0.9")
    with pytest.raises(ValueError, match="decay_steps must be a positive integer"):
        Trainer(model, batch_loss, lambda g: [g], lr=0.1, final_lr=0.01)
    trainer.run()
    with pytest.raises(RuntimeError, match="has run already"):
        trainer.run()
