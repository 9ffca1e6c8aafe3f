"""train_steps: the shared Adam loop, checked against a loop written out by hand."""

import pytest
import torch
from torch import nn

from course_utils.models.training import train_steps


def _problem(seed: int = 0):
    torch.manual_seed(seed)
    model = nn.Linear(3, 1)
    true_w = torch.tensor([[1.0, -2.0, 0.5]])

    def batch_loss(generator):
        x = torch.randn(16, 3, generator=generator)
        return ((model(x) - x @ true_w.T) ** 2).mean()

    return model, batch_loss, true_w


@pytest.mark.parametrize("clip", [None, 0.1])
def test_same_losses_and_weights_as_a_hand_written_loop(clip):
    model, batch_loss, true_w = _problem()
    losses = train_steps(model, batch_loss, steps=25, lr=0.05, seed=3, clip=clip)

    ref, _, _ = _problem()  # same initial weights
    generator = torch.Generator().manual_seed(3)
    optimizer = torch.optim.Adam(ref.parameters(), lr=0.05)
    expected = []
    for _ in range(25):
        x = torch.randn(16, 3, generator=generator)
        loss = ((ref(x) - x @ true_w.T) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        if clip is not None:
            nn.utils.clip_grad_norm_(ref.parameters(), clip)
        optimizer.step()
        expected.append(loss.item())
    assert losses == expected
    assert torch.equal(model.weight, ref.weight) and torch.equal(model.bias, ref.bias)


def test_it_learns_and_calls_back_and_logs(capsys):
    model, batch_loss, true_w = _problem()
    seen = []
    losses = train_steps(model, batch_loss, steps=300, lr=0.05, log_every=100, on_step=seen.append)
    assert seen == list(range(1, 301))
    assert losses[-1] < 1e-3 < losses[0]
    torch.testing.assert_close(model.weight.detach(), true_w, atol=0.02, rtol=0)
    assert capsys.readouterr().out.splitlines()[0].startswith("step  100  loss ")


@pytest.mark.parametrize("steps", [0, -1, 2.5])
def test_steps_must_be_a_positive_integer(steps):
    model, batch_loss, _ = _problem()
    with pytest.raises(ValueError, match="steps must be a positive integer"):
        train_steps(model, batch_loss, steps=steps, lr=0.1)
