"""The benchmark's ratio of the course's attention to the fused kernel: what it measures, never how fast."""

import pytest
import torch

from course_utils.studies import attention_speed
from course_utils.studies.attention_speed import FusedRatio, fused_ratio


def test_fused_ratio_times_both_on_one_thread_and_restores_the_thread_count(monkeypatch):
    seen = []
    real = attention_speed._cpu_seconds

    def spy(fn):
        seen.append(torch.get_num_threads())
        return real(fn)

    monkeypatch.setattr(attention_speed, "_cpu_seconds", spy)
    before = torch.get_num_threads()
    result = fused_ratio(32, repeats=3, masked=True)
    assert torch.get_num_threads() == before
    assert seen == [1] * 6  # 3 repeats of the two contestants, each on one thread
    assert result.T == 32 and result.masked and result.ours_s >= 0 and result.fused_s >= 0
    assert "T=32 (causal mask" in str(FusedRatio(0.03, 0.01, 32, True)) and FusedRatio(0.03, 0.01, 32, True).ratio == pytest.approx(3)


@pytest.mark.parametrize("kwargs", [dict(T=0), dict(T=2.5), dict(repeats=0), dict(masked="yes"), dict(heads=True)])
def test_fused_ratio_refuses_bad_settings(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        fused_ratio(**{"T": 8, **kwargs})
