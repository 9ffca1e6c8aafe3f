"""The course's own versions of the tasks of notebooks 11-13, which those lessons go on with after
the task (imported under another name): each agrees with what its checker accepts, and refuses bad
input with a clear error."""

import inspect
import textwrap

import pytest
import torch

from course_utils.helpers.checkers import check_argmax_offset_share, check_marker_beside, check_next_token_probs
from course_utils.models.head_task import marker_beside
from course_utils.models.language_model import CausalLM, generate, next_token_probs
from course_utils.models.seq2seq_data import argmax_offset_share


def _written_out(fn):
    """The course's function as a student's own copy of its code (the checkers refuse the course's
    function itself, and an answer that calls it)."""
    namespace = {**fn.__globals__, "__name__": "__main__"}
    exec(compile(textwrap.dedent(inspect.getsource(fn)), "<a student's cell>", "exec"), namespace)  # noqa: S102
    return namespace[fn.__name__]


def test_the_checkers_accept_the_course_functions_written_out_and_refuse_them_handed_over(capsys):
    for check, fn in [(check_next_token_probs, next_token_probs), (check_marker_beside, marker_beside),
                      (check_argmax_offset_share, argmax_offset_share)]:
        assert check(_written_out(fn)), capsys.readouterr().out
        assert check(fn).status == "wrong"
    assert capsys.readouterr().out.count("calls the course's own") == 3


def test_next_token_probs_is_softmax_of_the_scaled_logits_and_one_hot_at_zero():
    logits = torch.tensor([[2.0, -1.0, 2.0, 0.5]])
    assert torch.allclose(next_token_probs(logits, 2.0), torch.softmax(logits / 2, dim=-1))
    assert torch.equal(next_token_probs(logits, 0), torch.tensor([[1.0, 0.0, 0.0, 0.0]]))  # a tie: the first
    half = next_token_probs(logits.double(), 0.0)
    assert half.dtype == torch.float64 and half.shape == logits.shape


@pytest.mark.parametrize("temperature", [-1.0, float("nan"), True, "1"])
def test_next_token_probs_refuses_a_bad_temperature(temperature):
    with pytest.raises(ValueError, match="temperature"):
        next_token_probs(torch.zeros(3), temperature)


def test_next_token_probs_refuses_integer_logits():
    with pytest.raises(ValueError, match="floating-point"):
        next_token_probs(torch.tensor([1, 2]), 1.0)


def test_generate_samples_from_next_token_probs():
    torch.manual_seed(0)
    model = CausalLM(7, 10, d_model=16, num_heads=2, num_layers=1).eval()
    prompt = torch.tensor([[1, 2]])
    drawn = generate(model, prompt, 5, temperature=0.7, generator=torch.Generator().manual_seed(3))
    tokens, g = prompt, torch.Generator().manual_seed(3)
    with torch.no_grad():
        for _ in range(5):
            probs = next_token_probs(model(tokens)[0][:, -1], 0.7)
            tokens = torch.cat([tokens, torch.multinomial(probs, 1, generator=g)], dim=1)
    assert torch.equal(drawn, tokens)


def test_marker_beside_ends_pairs_and_length_one():
    tokens = torch.tensor([[6, 0, 6, 6, 1, 2], [0, 1, 2, 3, 4, 6]])
    expected = torch.tensor([[False, True, True, True, True, False], [False, False, False, False, True, False]])
    assert torch.equal(marker_beside(tokens, 6), expected)
    assert torch.equal(marker_beside(torch.tensor([[6], [1]]), 6), torch.zeros(2, 1, dtype=torch.bool))


def test_marker_beside_refuses_bad_input():
    with pytest.raises(ValueError, match="2 dimension"):
        marker_beside(torch.tensor([0, 6, 1]), 6)
    with pytest.raises(TypeError, match="marker_id"):
        marker_beside(torch.tensor([[0, 6, 1]]), 6.0)


def _one_hot_rows(lengths: list[int], t_out: int, t_in: int, peak) -> torch.Tensor:
    """Attention whose token step t of example b peaks at peak(n, t), padded."""
    w = torch.zeros(len(lengths), t_out, t_in)
    for b, n in enumerate(lengths):
        for t in range(n + 1):
            w[b, t, min(max(peak(n, t), 0), n - 1)] = 1.0
    return w


def test_argmax_offset_share_pools_the_token_steps_only():
    lengths = torch.tensor([4, 6])
    mirror = _one_hot_rows([4, 6], 7, 6, lambda n, t: n - 1 - t)
    assert argmax_offset_share(mirror, lengths, 0) == 1.0
    assert argmax_offset_share(mirror, lengths, 1) == 0.0
    shifted = _one_hot_rows([4, 6], 7, 6, lambda n, t: n - t)  # one to the right; step 0 has no such position
    assert argmax_offset_share(shifted, lengths, 1) == pytest.approx(8 / 10)  # pooled: 3 + 5 of 4 + 6 steps
    assert argmax_offset_share(shifted, lengths, 0) == pytest.approx(2 / 10)


def test_argmax_offset_share_refuses_bad_input():
    w = torch.zeros(2, 5, 4)
    with pytest.raises(ValueError, match="one length per example"):
        argmax_offset_share(w, torch.tensor([4]), 0)
    with pytest.raises(TypeError, match="offset"):
        argmax_offset_share(w, torch.tensor([4, 3]), 0.5)
    with pytest.raises(ValueError, match="integer"):
        argmax_offset_share(w, torch.tensor([4.0, 3.0]), 0)
