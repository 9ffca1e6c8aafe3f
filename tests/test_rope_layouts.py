"""The two RoPE layouts (models/rotary.py, notebook 17): adjacent pairs and halves differ by a fixed
permutation of the features; scores agree; weights run in the wrong layout change the model's output,
and permuting W_Q and W_K per head converts them exactly."""

import pytest
import torch

from course_utils.core.rope import apply_rope
from course_utils.models.kv_cache import generate_cached
from course_utils.models.language_model import generate
from course_utils.models.rotary import (
    HalvesRotaryMultiHeadAttention,
    apply_rope_halves,
    halves_permutation,
    layout_of,
    rotary_lm,
    run_with_layout,
    to_layout,
)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """Oracle: Hugging Face's helper, written out."""
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


@pytest.mark.parametrize("offset", [0, 7, 1000])
def test_halves_layout_is_hugging_face_rotate_half(offset):
    x = torch.randn(2, 3, 9, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    d = x.shape[-1]
    positions = torch.arange(offset, offset + x.shape[-2], dtype=torch.float64)
    angles = positions[:, None] * 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (T, d/2)
    cos, sin = torch.cat([angles.cos()] * 2, -1), torch.cat([angles.sin()] * 2, -1)
    torch.testing.assert_close(apply_rope_halves(x, offset), x * cos + rotate_half(x) * sin, rtol=0, atol=1e-12)


def test_the_layouts_differ_by_a_permutation_and_give_the_same_scores():
    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(4, 16, dtype=torch.float64, generator=g), torch.randn(4, 16, dtype=torch.float64, generator=g)
    perm = halves_permutation(16)
    assert sorted(perm.tolist()) == list(range(16)) and perm[:3].tolist() == [0, 2, 4] and perm[8] == 1
    torch.testing.assert_close(apply_rope_halves(q[:, perm], 3), apply_rope(q, 3)[:, perm], rtol=0, atol=1e-12)
    pairs = apply_rope(q) @ apply_rope(k).T
    halves = apply_rope_halves(q[:, perm]) @ apply_rope_halves(k[:, perm]).T
    torch.testing.assert_close(halves, pairs, rtol=0, atol=1e-12)
    unpermuted = apply_rope_halves(q) @ apply_rope_halves(k).T  # the same vectors, the other layout: other scores
    assert (unpermuted - pairs).abs().max() > 0.1


def test_wrong_layout_changes_the_model_and_to_layout_converts_it_exactly():
    torch.manual_seed(0)
    model = rotary_lm(11, 24, d_model=16, num_heads=2, num_layers=2).eval()
    tokens = torch.randint(0, 11, (3, 20), generator=torch.Generator().manual_seed(2))
    logits, _ = model(tokens)
    wrong, _ = run_with_layout(model, "halves")(tokens)
    assert (wrong - logits).abs().max() > 1e-3
    converted = to_layout(model, "halves")
    assert layout_of(converted) == "halves" and layout_of(model) == "pairs"
    assert all(isinstance(b.attn, HalvesRotaryMultiHeadAttention) for b in converted.blocks)
    torch.testing.assert_close(converted(tokens)[0], logits, rtol=0, atol=1e-5)
    torch.testing.assert_close(to_layout(converted, "pairs")(tokens)[0], logits, rtol=0, atol=1e-5)
    back = to_layout(converted, "pairs")
    for a, b in zip(back.parameters(), model.parameters()):
        assert torch.equal(a, b)  # a permutation and its inverse: the same weights bit for bit


def test_the_kv_cache_rotates_in_the_model_s_layout():
    torch.manual_seed(3)
    model = to_layout(rotary_lm(11, 40, d_model=16, num_heads=2, num_layers=2).eval(), "halves")
    prompt = torch.randint(0, 11, (2, 5), generator=torch.Generator().manual_seed(4))
    assert torch.equal(generate_cached(model, prompt, 12), generate(model, prompt, 12))
