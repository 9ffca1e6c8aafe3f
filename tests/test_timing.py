"""course_utils.helpers.timing: timer bookkeeping (fake clock), slope fit, memory formulas.

No assertion here depends on how fast the machine is: the timer's arithmetic is
checked with a fake clock, and the one real-clock test only uses the fact that
time.sleep(s) never returns before s seconds have passed.
"""

import math
import random
import time

import pytest
import torch

from course_utils.helpers.timing import (
    Timing,
    call_peak_bytes,
    format_bytes,
    loglog_slope,
    score_matrix_bytes,
    tensor_bytes,
    time_call,
    time_calls,
)


class FakeClock:
    """A clock that only moves when a fake piece of work says how long it took."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def work(self, seconds: float):
        def fn():
            self.now += seconds

        return fn


# --- the timer -------------------------------------------------------------------------


def test_timer_reports_seconds_per_call_of_known_work():
    clock = FakeClock()
    timing = time_call(clock.work(0.25), repeats=4, warmup=2, clock=clock)
    assert timing.number == 1
    assert timing.times == pytest.approx((0.25,) * 4)
    assert timing.median == pytest.approx(0.25) and timing.min == pytest.approx(0.25)


def test_timer_keeps_the_ratio_of_two_known_works():
    clock = FakeClock()
    got = time_calls({"small": clock.work(0.002), "big": clock.work(0.032)}, repeats=3, clock=clock)
    assert got["big"].median / got["small"].median == pytest.approx(16.0)


def test_min_time_groups_fast_calls_and_divides_by_their_number():
    clock = FakeClock()
    calls = []

    def fn():
        calls.append(1)
        clock.now += 0.001

    timing = time_call(fn, repeats=3, warmup=1, min_time=0.0105, clock=clock)
    assert timing.number == 11  # ceil(0.0105 / 0.001): the smallest count lasting >= min_time
    assert timing.times == pytest.approx((0.001,) * 3)  # per call, not per repeat
    assert len(calls) == 1 + 3 * 11  # warm-up + repeats * number


def test_median_ignores_one_disturbed_repeat_and_min_is_the_fastest():
    durations = iter([0.01, 0.01, 0.5, 0.01, 0.012])  # the third repeat was hit by other load
    clock = FakeClock()

    def fn():
        clock.now += next(durations)

    timing = time_call(fn, repeats=4, warmup=1, clock=clock)
    assert timing.times == pytest.approx((0.01, 0.5, 0.01, 0.012))
    assert timing.median == pytest.approx(0.011)
    assert timing.min == pytest.approx(0.01)


def test_functions_run_round_robin_after_their_warm_up():
    order = []
    fns = {name: (lambda name=name: order.append(name)) for name in "abc"}
    time_calls(fns, repeats=3, warmup=2)
    assert order == list("aabbcc") + list("abc") * 3


def test_tuple_keys_name_each_function_and_its_size():
    clock = FakeClock()
    fns = {(name, T): clock.work(T * scale) for T in (1, 2) for name, scale in (("slow", 1.0), ("fast", 0.5))}
    got = time_calls(fns, repeats=2, clock=clock)
    assert set(got) == set(fns)
    assert got["slow", 2].median == pytest.approx(2.0) and got["fast", 1].median == pytest.approx(0.5)


def test_real_clock_never_reports_less_than_a_sleep():
    # time.sleep(s) waits at least s seconds; extra load can only make the timing larger.
    timing = time_call(lambda: time.sleep(0.004), repeats=3, warmup=0)
    assert len(timing.times) == 3
    assert timing.min >= 0.004


@pytest.mark.parametrize("kwargs", [{"repeats": 0}, {"repeats": 1.5}, {"warmup": -1}, {"min_time": -1.0}])
def test_timer_rejects_bad_settings(kwargs):
    with pytest.raises(ValueError):
        time_call(lambda: None, **kwargs)
    with pytest.raises(ValueError, match="empty"):
        time_calls({})


def test_timing_median_of_an_even_number_of_repeats():
    assert Timing((1.0, 4.0, 2.0, 3.0), number=1).median == 2.5


# --- the log-log slope -----------------------------------------------------------------


@pytest.mark.parametrize("k, c", [(2.0, 3e-9), (1.0, 5.0), (2.5, 0.7), (0.5, 1e3)])
def test_slope_of_an_exact_power_law(k, c):
    x = [64, 128, 256, 512, 1024, 2048]
    y = [c * v**k for v in x]
    got_k, got_c = loglog_slope(x, y)
    assert got_k == pytest.approx(k, abs=1e-9)
    assert got_c == pytest.approx(c, rel=1e-9)


def test_slope_with_multiplicative_noise_stays_close():
    rng = random.Random(0)
    x = [2**i for i in range(6, 14)]
    y = [4e-9 * v**2 * math.exp(rng.uniform(-0.2, 0.2)) for v in x]  # up to +-20 % noise
    k, _ = loglog_slope(x, y)
    assert abs(k - 2.0) < 0.1


def test_constant_overhead_flattens_the_slope_at_small_sizes():
    # y = overhead + a * x**2: small x is dominated by the overhead, large x by x**2.
    x = [2**i for i in range(4, 14)]
    y = [1e-4 + 1e-9 * v**2 for v in x]
    k_small, _ = loglog_slope(x[:3], y[:3])
    k_large, _ = loglog_slope(x[-3:], y[-3:])
    assert k_small < 0.5
    assert 1.9 < k_large <= 2.0


def test_slope_matches_a_two_point_hand_calculation():
    k, c = loglog_slope([10, 1000], [3.0, 12.0])
    assert k == pytest.approx(math.log(4) / math.log(100))
    assert c * 10**k == pytest.approx(3.0)


@pytest.mark.parametrize(
    "x, y, match",
    [([1, 2], [1.0], "same length"), ([1, 2], [1.0, 0.0], "positive"), ([-1, 2], [1.0, 2.0], "positive"),
     ([5], [1.0], "two different"), ([3, 3], [1.0, 2.0], "two different")],
)
def test_slope_rejects_bad_input(x, y, match):
    with pytest.raises(ValueError, match=match):
        loglog_slope(x, y)


# --- memory ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int8])
@pytest.mark.parametrize("shape", [(2, 3, 5, 7), (1, 8, 64, 64), (4,), ()])
def test_tensor_bytes_equals_element_size_times_numel(shape, dtype):
    t = torch.zeros(shape, dtype=dtype)
    assert tensor_bytes(shape, dtype) == t.element_size() * t.numel()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64])
def test_score_matrix_bytes_equals_the_real_scores(dtype):
    B, h, n, m, d_k = 2, 3, 5, 7, 4
    Q = torch.randn(B, h, n, d_k, dtype=dtype)
    K = torch.randn(B, h, m, d_k, dtype=dtype)
    scores = Q @ K.transpose(-2, -1)
    assert score_matrix_bytes(B, h, n, m, dtype) == scores.element_size() * scores.numel()
    square = Q @ Q.transpose(-2, -1)
    assert score_matrix_bytes(B, h, n, dtype=dtype) == square.element_size() * square.numel()  # m = n


def test_score_matrix_bytes_of_a_large_matrix_by_hand():
    # 8192 x 8192 float32 scores of one head: 8192 * 8192 * 4 bytes, computed without allocating.
    assert score_matrix_bytes(1, 1, 8192) == 268_435_456
    assert score_matrix_bytes(1, 1, 8192, dtype=torch.float16) == 134_217_728
    assert score_matrix_bytes(1, 8, 100_000) == 8 * 10**10 * 4


@pytest.mark.parametrize("bad", [0, -1, 2.0, True])
def test_score_matrix_bytes_rejects_bad_sizes(bad):
    with pytest.raises(ValueError):
        score_matrix_bytes(1, 8, bad)
    with pytest.raises(ValueError):
        tensor_bytes((2, bad) if bad != 0 else (2, -3))


@pytest.mark.parametrize(
    "num, text",
    [(0, "0 B"), (999, "999 B"), (1000, "1 kB"), (2_097_152, "2.097 MB"), (268_435_456, "268.4 MB"),
     (3.2e11, "320 GB"), (4e12, "4 TB")],
)
def test_format_bytes(num, text):
    assert format_bytes(num) == text


def test_call_peak_sees_a_call_that_holds_two_large_tensors_at_once():
    import sys

    if not sys.platform.startswith("linux"):
        assert call_peak_bytes(lambda: None) is None
        return
    n = 16_000_000  # 64 MB of float32

    def two_at_once():
        a = torch.ones(n)
        b = a * 2  # a and b alive together
        return float(b[0])

    one = n * 4
    big = torch.ones(2 * n)  # raise the process's earlier peak above what the call needs
    del big
    extra = call_peak_bytes(two_at_once)
    assert 1.8 * one < extra < 2.5 * one, extra / one
    assert call_peak_bytes(lambda: None) < 0.2 * one


def test_call_peak_is_never_negative(monkeypatch):
    # VmHWM is updated lazily: right after the reset it can read below VmRSS.
    import sys

    from course_utils.helpers import timing

    if not sys.platform.startswith("linux"):
        return
    readings = {"VmRSS": 10_000_000, "VmHWM": 9_990_000}
    monkeypatch.setattr(timing, "_proc_status_bytes", lambda key: readings[key])
    assert call_peak_bytes(lambda: None) == 0
