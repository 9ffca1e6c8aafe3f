"""Cached generation against the uncached model: same tokens, same logits, fewer positions processed."""

import pytest
import torch

from course_utils.models.kv_cache import (
    KVCache,
    count_positions,
    forward_with_cache,
    generate_cached,
    kv_cache_bytes,
)
from course_utils.models.language_model import CausalLM, generate, stepwise_logits
from course_utils.models.rotary import rotary_lm


def _model(positions: str = "learned", **kw) -> CausalLM:
    torch.manual_seed(0)
    if positions == "rope":
        return rotary_lm(11, 40, d_model=16, num_heads=2, num_layers=2, **kw).eval()
    return CausalLM(11, 40, d_model=16, num_heads=2, num_layers=2, positions=positions, **kw).eval()


@pytest.mark.parametrize("positions", ["learned", "sinusoidal", "rope"])
def test_cached_generation_gives_the_same_tokens_and_logits(positions):
    model = _model(positions)
    prompt = torch.randint(0, 11, (3, 5), generator=torch.Generator().manual_seed(1))
    tokens, logits = generate_cached(model, prompt, 20, return_logits=True)
    assert torch.equal(tokens, generate(model, prompt, 20))
    oracle = stepwise_logits(model, tokens[:, :-1])[:, 4:]  # the logits each uncached step chose from
    assert logits.shape == (3, 20, 11)
    assert torch.allclose(logits, oracle, atol=1e-5)


def test_forward_with_cache_in_chunks_equals_one_pass():
    model = _model("sinusoidal")
    tokens = torch.randint(0, 11, (2, 17), generator=torch.Generator().manual_seed(2))
    full, _ = model(tokens)
    cache, parts = None, []
    for a, b in [(0, 4), (4, 5), (5, 12), (12, 17)]:
        logits, cache = forward_with_cache(model, tokens[:, a:b], cache)
        parts.append(logits)
    assert torch.allclose(torch.cat(parts, 1), full, atol=1e-5)
    assert cache.length == 17
    assert cache.nbytes == kv_cache_bytes(2, 2, 2, 17, 8) == 2 * 2 * 2 * 2 * 17 * 8 * 4


def test_sampling_with_the_same_generator_gives_the_same_tokens():
    model = _model()
    prompt = torch.tensor([1, 2, 3])
    a = generate_cached(model, prompt, 10, temperature=1.0, generator=torch.Generator().manual_seed(5))
    b = generate(model, prompt, 10, temperature=1.0, generator=torch.Generator().manual_seed(5))
    assert a.shape == (13,) and torch.equal(a, b)


def test_positions_processed():
    model = _model()
    prompt = torch.zeros(1, 4, dtype=torch.long)
    with count_positions(model) as uncached:
        generate(model, prompt, 10)
    with count_positions(model) as cached:
        generate_cached(model, prompt, 10)
    assert uncached[0] == sum(4 + i for i in range(10))  # every step re-runs the whole sequence
    assert cached[0] == 4 + 9  # the prompt once, then one position per step


def test_cache_passed_in_is_not_changed_and_dtype_follows_model():
    model = _model().double()
    tokens = torch.randint(0, 11, (1, 6))
    _, cache = forward_with_cache(model, tokens[:, :3])
    _, longer = forward_with_cache(model, tokens[:, 3:], cache)
    assert cache.length == 3 and longer.length == 6
    assert longer.keys[0].dtype == torch.float64
    assert isinstance(KVCache().length, int) and KVCache().nbytes == 0


def test_kv_cache_errors():
    model = _model()
    with pytest.raises(ValueError, match="max_len"):
        generate_cached(model, torch.zeros(1, 30, dtype=torch.long), 12)
    with pytest.raises(ValueError, match="causal"):
        generate_cached(_model(causal=False), torch.zeros(1, 3, dtype=torch.long), 2)
    with pytest.raises(TypeError, match="CausalLM"):
        forward_with_cache(torch.nn.Linear(2, 2), torch.zeros(1, 2, dtype=torch.long))
    with pytest.raises(ValueError, match=r"\(B, s\)"):
        forward_with_cache(model, torch.zeros(3, dtype=torch.long))
    _, cache = forward_with_cache(model, torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="batch size"):
        forward_with_cache(model, torch.zeros(1, 1, dtype=torch.long), cache)
    with pytest.raises(ValueError, match="temperature"):
        generate_cached(model, torch.zeros(3, dtype=torch.long), 2, temperature=-1)
    with pytest.raises(ValueError, match="kv_heads"):
        kv_cache_bytes(1, 1, 0, 1, 1)


def test_kv_cache_bytes_grouped_query():
    full = kv_cache_bytes(32, 1, 32, 4096, 128, torch.float16)
    assert full == 2 * 32 * 32 * 4096 * 128 * 2 == 2_147_483_648
    assert kv_cache_bytes(32, 1, 8, 4096, 128, torch.float16) * 4 == full


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_cached_generation_on_gpu():
    model = _model("rope").cuda()
    prompt = torch.randint(0, 11, (2, 3), device="cuda")
    tokens, logits = generate_cached(model, prompt, 8, return_logits=True)
    assert tokens.device.type == "cuda" and torch.equal(tokens, generate(model, prompt, 8))
    assert torch.allclose(logits, stepwise_logits(model, tokens[:, :-1])[:, 2:], atol=1e-4)


def test_quiz_15_numbers():
    import json

    from course_utils.models.data_files import data_path

    bank = json.loads(data_path("quizzes.json").read_text(encoding="utf-8"))["15"]
    q = next(q for q in bank if "4,096 tokens" in q["prompt"])
    size = kv_cache_bytes(32, 1, 32, 4096, 128, torch.float16)
    assert f"{size / 1e9:.2f} GB" in q["options"][q["answer"]]
    assert f"{size / 2e9:.2f} GB" in q["options"][0] and f"{2 * size / 1e9:.2f} GB" in q["options"][2]
    assert f"{size / 32 / 1e6:.0f} MB" in q["options"][3]
    with count_positions(_model()) as count:
        pass
    assert count == [0]
