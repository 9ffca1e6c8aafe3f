"""The checker of notebook 03b `torch_attn_mask`: held-out wrong answers (none accepted, none called "a bug in the
checker", no hint naming a mistake that was not made) and every valid answer the task allows."""


import torch
from torch import nn

from course_utils.helpers import checkers


def _run(check, fn, capsys, seeds=(0, 1, 2)):
    results = [check(fn, seed=s) for s in seeds]
    capsys.readouterr()
    return results


def _all(results, status, *words):
    for r in results:
        assert r.status == status, r.message
        assert "bug in the checker" not in r.message
        for word in words:
            assert word in r.message, r.message


# --------------------------------------------------------------------------- 03b torch_attn_mask


def _float_mask(dtype):
    def fn(mask, h):
        blocked = (~mask).repeat_interleave(h, 0) if mask.dim() == 3 else ~mask
        return torch.zeros(blocked.shape, dtype=dtype).masked_fill(blocked, float("-inf"))
    return fn


def test_torch_attn_mask_accepts_what_multihead_attention_accepts(capsys):
    mha, x = nn.MultiheadAttention(8, 2, batch_first=True), torch.randn(1, 5, 8)
    mask = torch.ones(5, 5, dtype=torch.bool).tril()
    for dtype in (torch.float32, torch.float64, torch.float16):
        accepted = _run(checkers.check_torch_attn_mask, _float_mask(dtype), capsys)[0].status == "correct"
        try:
            mha(x, x, x, attn_mask=_float_mask(dtype)(mask, 2))
            works = True
        except RuntimeError:
            works = False
        assert accepted == works, dtype
    _all(_run(checkers.check_torch_attn_mask, _float_mask(torch.float64), capsys), "wrong", "float64", "bool")


def test_torch_attn_mask_on_another_device_is_named(capsys):
    fn = lambda mask, h: ((~mask).repeat_interleave(h, 0) if mask.dim() == 3 else ~mask).to("meta")  # noqa: E731
    _all(_run(checkers.check_torch_attn_mask, fn, capsys), "wrong", "device 'meta'")
