"""RoPE against a rotation matrix built entry by entry, its relative-position property, and the rotary model."""

import math

import pytest
import torch

from course_utils.core.multihead import MultiHeadAttention
from course_utils.core.rope import RotaryMultiHeadAttention, apply_rope, rope_angles, rope_rotation_matrix
from course_utils.models.language_model import CausalLM
from course_utils.models.rotary import rotary_lm


def rotation_by_hand(p: int, d: int, base: float = 10000.0) -> torch.Tensor:
    """Oracle: the (d, d) block-diagonal rotation, one 2x2 block [[cos, -sin], [sin, cos]] per pair, from math.cos/sin."""
    R = torch.zeros(d, d, dtype=torch.float64)
    for i in range(d // 2):
        a = p * base ** (-2 * i / d)
        R[2 * i, 2 * i], R[2 * i, 2 * i + 1] = math.cos(a), -math.sin(a)
        R[2 * i + 1, 2 * i], R[2 * i + 1, 2 * i + 1] = math.sin(a), math.cos(a)
    return R


@pytest.mark.parametrize("d, offset", [(2, 0), (8, 0), (16, 5), (64, 1000)])
def test_apply_rope_equals_rotation_matrices(d, offset):
    x = torch.randn(3, 6, d, dtype=torch.float64, generator=torch.Generator().manual_seed(d))
    got = apply_rope(x, offset)
    for t in range(6):
        want = x[:, t] @ rotation_by_hand(offset + t, d).T
        assert torch.allclose(got[:, t], want, atol=1e-10)
        assert torch.allclose(rope_rotation_matrix(offset + t, d), rotation_by_hand(offset + t, d), atol=1e-12)


def test_score_depends_only_on_the_offset():
    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(1, 32, generator=g, dtype=torch.float64), torch.randn(1, 32, generator=g, dtype=torch.float64)

    def score(i: int, j: int) -> float:
        return float(apply_rope(q, i) @ apply_rope(k, j).T)

    for offset in (0, 3, -7):
        scores = [score(p, p + offset) for p in (10, 11, 50, 500)]
        assert max(scores) - min(scores) < 1e-9
    assert abs(score(10, 13) - score(10, 14)) > 1e-3  # a different offset gives a different score
    for p, q_ in [(3, 10), (0, 7)]:  # R(p)^T R(q) = R(q - p)
        assert torch.allclose(rope_rotation_matrix(p, 8).T @ rope_rotation_matrix(q_, 8), rope_rotation_matrix(q_ - p, 8), atol=1e-12)


def test_rope_keeps_norms_dtype_and_position_zero():
    x = torch.randn(2, 5, 6)
    y = apply_rope(x)
    assert y.dtype == x.dtype and y.shape == x.shape
    assert torch.allclose(y.norm(dim=-1), x.norm(dim=-1), atol=1e-5)
    assert torch.equal(y[:, 0], x[:, 0])  # position 0: angle 0
    assert apply_rope(x.double()).dtype == torch.float64


def test_rope_rejects_bad_input():
    with pytest.raises(ValueError, match="even"):
        apply_rope(torch.randn(3, 5))
    with pytest.raises(ValueError, match="x must be a floating-point tensor"):  # a wrong dtype: ValueError
        apply_rope(torch.arange(6).view(3, 2))
    with pytest.raises(ValueError, match=r"\(\.\.\., T, d\)"):
        apply_rope(torch.randn(4))
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        apply_rope([[1.0, 2.0]])
    with pytest.raises(ValueError, match="offset"):
        apply_rope(torch.randn(3, 4), offset=-1)
    with pytest.raises(ValueError, match="positions"):
        rope_angles(torch.arange(3), 4)
    with pytest.raises(ValueError, match="even"):
        RotaryMultiHeadAttention(6, 2)


def test_rotary_attention_same_params_and_rotated_scores():
    torch.manual_seed(0)
    plain = MultiHeadAttention(16, 2)
    rotary = RotaryMultiHeadAttention(16, 2)
    rotary.load_state_dict(plain.state_dict())
    x = torch.randn(2, 5, 16)
    _, w = rotary(x, x, x)
    Q = apply_rope(plain.split_heads(plain.W_q(x)))
    K = apply_rope(plain.split_heads(plain.W_k(x)))
    assert torch.allclose(w, torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(8), -1), atol=1e-6)


def test_rotary_lm_matches_sinusoidal_parameters_and_runs():
    torch.manual_seed(3)
    sinusoidal = CausalLM(7, 12, d_model=16, num_heads=2, num_layers=2, positions="sinusoidal")
    torch.manual_seed(3)
    rope = rotary_lm(7, 12, d_model=16, num_heads=2, num_layers=2)
    assert all(torch.equal(a, b) for a, b in zip(sinusoidal.state_dict().values(), rope.state_dict().values()))
    assert isinstance(rope.blocks[0].attn, RotaryMultiHeadAttention)
    logits, weights = rope(torch.randint(0, 7, (3, 12)))
    assert logits.shape == (3, 12, 7) and weights.shape == (3, 2, 2, 12, 12)
    with pytest.raises(ValueError, match="positions"):
        rotary_lm(7, 12, positions="learned")


def test_quiz_17_angle():
    import json

    from course_utils.models.data_files import data_path

    bank = json.loads(data_path("quizzes.json").read_text(encoding="utf-8"))["17"]
    q = next(q for q in bank if "d = 8" in q["prompt"])
    assert "1 radian" in q["options"][q["answer"]]
    assert rope_angles(torch.tensor([10.0], dtype=torch.float64), 8)[0, 1].item() == pytest.approx(1.0)


# --- issue 24: low-precision inputs and bad bases ------------------------------------------------


def rope_float64(x: torch.Tensor, offset: int, base: float = 10000.0) -> torch.Tensor:
    """Oracle: the rotation of x (taken exactly, in float64) with angles from math.cos / math.sin per position."""
    x = x.double()
    T, d = x.shape[-2], x.shape[-1]
    out = torch.empty_like(x)
    for t in range(T):
        for i in range(d // 2):
            a = (offset + t) * base ** (-2 * i / d)
            c, s = math.cos(a), math.sin(a)
            out[..., t, 2 * i] = x[..., t, 2 * i] * c - x[..., t, 2 * i + 1] * s
            out[..., t, 2 * i + 1] = x[..., t, 2 * i] * s + x[..., t, 2 * i + 1] * c
    return out


@pytest.mark.parametrize("dtype, atol", [(torch.float16, 0.01), (torch.bfloat16, 0.05), (torch.float32, 1e-4)])
@pytest.mark.parametrize("offset", [0, 1000, 4090, 8180])
def test_low_precision_rope_matches_a_float64_rotation_up_to_position_8192(dtype, atol, offset):
    """The angle at position 4096 must not be computed in float16 (off by up to 4.4 before the fix)."""
    x = torch.randn(2, 12, 16, generator=torch.Generator().manual_seed(offset)).to(dtype)
    got = apply_rope(x, offset)
    assert got.dtype == dtype and got.shape == x.shape
    want = rope_float64(x, offset)  # the input as given (already rounded to dtype), rotated exactly
    assert (got.double() - want).abs().max().item() < atol * 3  # |x| up to ~3: relative error of dtype


def test_rope_angles_in_float32_at_least():
    positions = torch.tensor([2048.0, 4096.0, 8192.0])  # exact in float16 too
    assert rope_angles(positions, 8).dtype == torch.float32
    assert rope_angles(positions.double(), 8).dtype == torch.float64
    half = rope_angles(positions.half(), 8)
    assert half.dtype == torch.float32 and torch.allclose(half, rope_angles(positions, 8))
    assert rope_rotation_matrix(8191, 8, dtype=torch.float16).dtype == torch.float16
    assert torch.allclose(rope_rotation_matrix(8191, 8, dtype=torch.float16).double(), rotation_by_hand(8191, 8), atol=2e-3)


@pytest.mark.parametrize("base", [0, 0.0, -10000.0, float("nan"), float("inf"), True, "10000"])
def test_rope_refuses_a_base_that_is_not_a_positive_number(base):
    x = torch.randn(2, 3, 8)
    for call in (lambda: apply_rope(x, 0, base), lambda: rope_angles(torch.arange(3.0), 8, base),
                 lambda: rope_rotation_matrix(3, 8, base), lambda: RotaryMultiHeadAttention(16, 2, base)):
        with pytest.raises(ValueError, match="base must be a finite number > 0"):
            call()


def test_rope_offsets_and_positions_are_whole_numbers():
    import numpy as np

    x = torch.randn(3, 4)
    assert torch.equal(apply_rope(x, np.int64(5)), apply_rope(x, 5))  # NumPy integers count as integers
    for offset in (True, 2.5, -1, "3"):
        with pytest.raises(ValueError, match="offset must be a non-negative integer"):
            apply_rope(x, offset)
    assert torch.allclose(rope_rotation_matrix(-3, 4), rope_rotation_matrix(3, 4).T)
    with pytest.raises(ValueError, match="position must be an integer"):
        rope_rotation_matrix(2.5, 4)


# --- issue 33: float32 precision at long positions --------------------------------------------------------


def _reference64(x: torch.Tensor, offset: int) -> torch.Tensor:
    """Oracle: the rotation computed from math.cos/sin of exact float64 angles, on float64 x."""
    T, d = x.shape[-2], x.shape[-1]
    out = torch.empty_like(x, dtype=torch.float64)
    xd = x.double()
    for t in range(T):
        p = offset + t
        for i in range(d // 2):
            a = p * 10000.0 ** (-2 * i / d)
            c, s = math.cos(a), math.sin(a)
            out[..., t, 2 * i] = xd[..., t, 2 * i] * c - xd[..., t, 2 * i + 1] * s
            out[..., t, 2 * i + 1] = xd[..., t, 2 * i] * s + xd[..., t, 2 * i + 1] * c
    return out


@pytest.mark.parametrize("offset", [0, 4090, 8180])
def test_float32_rope_is_within_1e_4_of_float64_up_to_position_8192(offset):
    x = torch.ones(2, 12, 16)  # all ones: the worst case for an angle error (both features of a pair count)
    x[1] = torch.randn(12, 16, generator=torch.Generator().manual_seed(offset))
    got = apply_rope(x, offset)
    assert got.dtype == torch.float32
    err = (got.double() - _reference64(x, offset)).abs().max().item()
    assert err < 1e-4, err
    R = rope_rotation_matrix(offset + 11, 16, dtype=torch.float32)
    assert (R.double() - rotation_by_hand(offset + 11, 16)).abs().max().item() < 1e-6


def test_float32_rope_tells_adjacent_positions_apart_at_2_25():
    x = torch.ones(2, 16)
    y = apply_rope(x, offset=2**25)
    assert not torch.equal(y[0], y[1])  # in float32 arithmetic 2**25 + 1 == 2**25: the angles come from float64
    assert (y.double() - _reference64(x, 2**25)).abs().max().item() < 1e-4
    with pytest.raises(ValueError, match="2\\*\\*53"):
        apply_rope(x, offset=2**53)
