"""sparsemax and top-k softmax: hand examples, an independent bisection solver, properties, masks, gradients."""

import itertools
import math

import numpy as np
import pytest
import torch

from course_utils.core.sparse import sparsemax, topk_softmax


def _bisection_sparsemax(z: list[float], iters: int = 200) -> list[float]:
    """Independent reference: find tau with sum(max(z - tau, 0)) = 1 by bisection (no sorting)."""
    lo, hi = min(z) - 1.0, max(z)  # the sum is >= 1 at lo and 0 at hi
    for _ in range(iters):
        mid = (lo + hi) / 2
        if sum(max(v - mid, 0.0) for v in z) > 1.0:
            lo = mid
        else:
            hi = mid
    tau = (lo + hi) / 2
    return [max(v - tau, 0.0) for v in z]


@pytest.mark.parametrize(
    "z, expected",
    [
        ([1.0, 0.0, -1.0], [1.0, 0.0, 0.0]),  # gap >= 1: one-hot
        ([0.5, 0.0, -1.0], [0.75, 0.25, 0.0]),  # tau = -0.25 by hand
        ([2.0, 2.0, 2.0, 2.0], [0.25, 0.25, 0.25, 0.25]),  # ties: uniform
        ([0.3, 0.1, 0.2], [0.3 + 1 / 3 - 0.2, 0.1 + 1 / 3 - 0.2, 0.2 + 1 / 3 - 0.2]),  # all kept: z + (1 - sum z) / 3
        ([5.0], [1.0]),
    ],
)
def test_sparsemax_hand_examples(z, expected):
    got = sparsemax(torch.tensor(z, dtype=torch.float64))
    torch.testing.assert_close(got, torch.tensor(expected, dtype=torch.float64))


def test_sparsemax_two_keys_is_a_clipped_line():
    # sparsemax([t, 0]) = [clip((t + 1) / 2, 0, 1), 1 - that]  (the "sparse sigmoid")
    for t in torch.linspace(-3, 3, 61, dtype=torch.float64).tolist():
        p = min(max((t + 1) / 2, 0.0), 1.0)
        got = sparsemax(torch.tensor([t, 0.0], dtype=torch.float64))
        torch.testing.assert_close(got, torch.tensor([p, 1 - p], dtype=torch.float64))


def test_sparsemax_matches_bisection_on_random_rows():
    g = torch.Generator().manual_seed(0)
    scores = torch.randn(200, 7, generator=g, dtype=torch.float64) * torch.tensor([0.1, 1.0, 3.0, 10.0]).repeat(50)[:, None]
    got = sparsemax(scores)
    expected = torch.tensor([_bisection_sparsemax(row) for row in scores.tolist()], dtype=torch.float64)
    torch.testing.assert_close(got, expected, atol=1e-9, rtol=0)


def test_sparsemax_is_the_closest_point_of_the_simplex():
    g = torch.Generator().manual_seed(1)
    z = torch.randn(5, generator=g, dtype=torch.float64) * 2
    p = sparsemax(z)
    others = torch.distributions.Dirichlet(torch.ones(5, dtype=torch.float64)).sample((5000,))
    assert ((others - z).norm(dim=-1) >= (p - z).norm() - 1e-12).all()


def test_sparsemax_properties_on_a_batch():
    g = torch.Generator().manual_seed(2)
    scores = torch.randn(4, 3, 6, 9, generator=g) * 3
    w = sparsemax(scores)
    assert w.shape == scores.shape
    assert (w >= 0).all()
    torch.testing.assert_close(w.sum(-1), torch.ones(4, 3, 6))
    assert (w == 0).any(), "scores with std 3 over 9 keys should give exact zeros"
    # order is kept: a higher score never gets a smaller weight
    i, j = torch.triu_indices(9, 9, offset=1)
    higher = scores[..., i] > scores[..., j]
    assert (w[..., i][higher] >= w[..., j][higher]).all()
    # adding a constant to a row changes nothing
    torch.testing.assert_close(sparsemax(scores + 7.5), w)


def test_sparsemax_small_and_large_temperature():
    z = torch.tensor([0.4, -0.3, 0.1, 0.0, -0.2], dtype=torch.float64)
    eps = 1e-2  # scores this close together: every key kept, closed form 1/m + eps (z - mean z)
    torch.testing.assert_close(sparsemax(eps * z), 0.2 + eps * (z - z.mean()))
    assert sparsemax(100 * z).tolist() == [1.0, 0.0, 0.0, 0.0, 0.0]


def test_sparsemax_jacobian():
    # d sparsemax / dz = diag(s) - s s^T / |S|, s = indicator of the support (Martins & Astudillo, 2016)
    z = torch.tensor([1.2, 0.9, -0.5, 0.7, -2.0], dtype=torch.float64)
    jac = torch.autograd.functional.jacobian(sparsemax, z)
    s = (sparsemax(z) > 0).double()
    torch.testing.assert_close(jac, torch.diag(s) - torch.outer(s, s) / s.sum())


def test_sparsemax_mask():
    g = torch.Generator().manual_seed(3)
    scores = torch.randn(3, 6, generator=g)
    mask = torch.tensor([[1, 1, 0, 1, 0, 1], [1, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0]], dtype=torch.bool)
    w = sparsemax(scores, mask)
    torch.testing.assert_close(w[0, mask[0]], sparsemax(scores[0, mask[0]]))  # same as the allowed keys alone
    assert (w[~mask] == 0).all()
    assert w[1].tolist() == [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert w[2].tolist() == [0.0] * 6  # fully masked row: zeros, no NaN
    # a masked key with a huge score still gets 0; integer 0/1 masks work and broadcast
    big = torch.tensor([[100.0, 0.0, 0.5]])
    assert sparsemax(big, torch.tensor([0, 1, 1])).tolist() == [[0.0, 0.25, 0.75]]
    scores.requires_grad_(True)
    sparsemax(scores, mask).sum().backward()
    assert torch.isfinite(scores.grad).all()


def test_topk_hand_example():
    got = topk_softmax(torch.tensor([3.0, 1.0, 2.0, 0.0], dtype=torch.float64), k=2)
    e3, e2 = math.exp(3.0), math.exp(2.0)
    torch.testing.assert_close(got, torch.tensor([e3 / (e3 + e2), 0.0, e2 / (e3 + e2), 0.0], dtype=torch.float64))


def test_topk_extremes_and_zero_count():
    g = torch.Generator().manual_seed(4)
    scores = torch.randn(5, 4, 8, generator=g)
    torch.testing.assert_close(topk_softmax(scores, k=8), torch.softmax(scores, -1))
    one_hot = torch.nn.functional.one_hot(scores.argmax(-1), 8).float()
    assert torch.equal(topk_softmax(scores, k=1), one_hot)
    for k in range(1, 9):
        w = topk_softmax(scores, k)
        assert ((w == 0).sum(-1) == 8 - k).all()
        torch.testing.assert_close(w.sum(-1), torch.ones(5, 4))
        # the kept keys are the k largest: every kept score beats every dropped one
        for row_s, row_w in zip(scores.reshape(-1, 8), w.reshape(-1, 8)):
            kept, dropped = row_s[row_w > 0], row_s[row_w == 0]
            if len(dropped):
                assert kept.min() > dropped.max()


def test_topk_gradient_is_zero_for_dropped_keys():
    scores = torch.tensor([0.5, 2.0, -1.0, 1.5, 0.0], requires_grad=True)
    w = topk_softmax(scores, k=2)
    (w * torch.tensor([1.0, -2.0, 3.0, 0.5, 4.0])).sum().backward()
    dropped = torch.tensor([True, False, True, False, True])
    assert (scores.grad[dropped] == 0).all()
    assert (scores.grad[~dropped] != 0).all()


def test_topk_mask():
    scores = torch.tensor([[5.0, 1.0, 2.0, 3.0], [5.0, 1.0, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0]])
    mask = torch.tensor([[False, True, True, True], [True, False, False, False], [False] * 4])
    w = topk_softmax(scores, k=2, mask=mask)
    torch.testing.assert_close(w[0], torch.tensor([0.0, 0.0, 1.0, math.e]) / (1 + math.e))  # keeps 3 and 2, not masked 5
    assert w[1].tolist() == [1.0, 0.0, 0.0, 0.0]  # fewer allowed keys than k
    assert w[2].tolist() == [0.0] * 4  # fully masked row


@pytest.mark.parametrize("fn", [sparsemax, lambda s, mask=None: topk_softmax(s, 1, mask)])
def test_validation(fn):
    with pytest.raises(ValueError, match="floating-point"):
        fn(torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match=r"shape \(\)"):
        fn(torch.tensor(1.0))
    with pytest.raises(ValueError, match="does not broadcast"):
        fn(torch.zeros(2, 3), torch.ones(2, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="bool"):
        fn(torch.zeros(2, 3), torch.ones(2, 3))


@pytest.mark.parametrize("k", [0, 4, 1.5, True])
def test_topk_rejects_bad_k(k):
    with pytest.raises(ValueError, match="1 <= k <= m = 3"):
        topk_softmax(torch.zeros(2, 3), k)


def test_all_supports_enumerated_agree_with_sparsemax():
    # Another independent check on small rows: the projection is the candidate support S whose
    # tau_S = (sum_S z - 1) / |S| gives weights that are >= 0 on S and keep every other z_j <= tau_S.
    g = torch.Generator().manual_seed(5)
    for z in (torch.randn(4, generator=g, dtype=torch.float64) * 1.5 for _ in range(50)):
        found = []
        for size in range(1, 5):
            for S in itertools.combinations(range(4), size):
                tau = (sum(z[j].item() for j in S) - 1) / size
                inside = all(z[j] - tau >= 0 for j in S)
                outside = all(z[j] <= tau for j in range(4) if j not in S)
                if inside and outside:
                    found.append([max(z[j].item() - tau, 0.0) if j in S else 0.0 for j in range(4)])
        assert found, z
        torch.testing.assert_close(sparsemax(z), torch.tensor(found[0], dtype=torch.float64))


# --- Numerics and gradients held against a float64 NumPy oracle (issues 11 and 13) -------------------


def _oracle(z: np.ndarray, allowed: np.ndarray | None = None) -> np.ndarray:
    """float64 sparsemax of each row by bisection on tau (no sorting), written apart from the package.

    Masked keys (allowed False) take no part and get 0; a fully masked row gets zeros.
    """
    z = np.asarray(z, dtype=np.float64)
    allowed = np.ones(z.shape, bool) if allowed is None else np.broadcast_to(allowed, z.shape)
    zz = np.where(allowed, z, -np.inf)
    top = zz.max(axis=-1, keepdims=True)
    zz = zz - np.where(np.isfinite(top), top, 0.0)  # shift-invariant; the top allowed score is now 0
    lo, hi = np.full(top.shape, -1.0), np.zeros(top.shape)  # sum(max(z - tau, 0)) is >= 1 at -1 and 0 at 0
    for _ in range(200):
        mid = (lo + hi) / 2
        over = np.maximum(zz - mid, 0.0).sum(axis=-1, keepdims=True) > 1.0
        lo, hi = np.where(over, mid, lo), np.where(over, hi, mid)
    return np.where(allowed, np.maximum(zz - (lo + hi) / 2, 0.0), 0.0)


def _oracle_jacobian(z: np.ndarray) -> np.ndarray:
    """Closed form (Martins & Astudillo 2016): diag(s) - s s^T / |S|, s = 1 on the oracle's support."""
    s = (_oracle(z) > 1e-12).astype(np.float64)
    return np.diag(s) - np.outer(s, s) / s.sum()


@pytest.mark.parametrize(
    "dtype, largest",
    [(torch.float32, 3e7), (torch.float32, 1e8), (torch.float32, 1e30), (torch.float16, 4e3), (torch.float16, 1e4), (torch.bfloat16, 3e4)],
)
def test_masked_sparsemax_with_a_huge_largest_score(dtype, largest):
    # Before the fix, "largest - 2" rounded back to "largest": a masked key tied with the best one.
    g = torch.Generator().manual_seed(0)
    scores = (largest - 4 * torch.randint(0, 3, (64, 6), generator=g)).to(dtype)
    scores[:, 0] = largest
    mask = torch.rand(64, 6, generator=g) < 0.6
    mask[:, 0] = True
    w = sparsemax(scores, mask)
    assert (w[~mask] == 0).all()
    torch.testing.assert_close(w.double().sum(-1), torch.ones(64, dtype=torch.float64), atol=1e-2, rtol=0)
    expected = _oracle(scores.double().numpy(), mask.numpy())
    torch.testing.assert_close(w.double(), torch.from_numpy(expected), atol=1e-2 if dtype != torch.float32 else 1e-6, rtol=0)


def test_sparsemax_matches_the_oracle_with_masks_and_fully_masked_rows():
    g = torch.Generator().manual_seed(1)
    scores = torch.randn(500, 7, generator=g, dtype=torch.float64) * 2
    mask = torch.rand(500, 7, generator=g) < 0.5
    mask[:5] = False
    w = sparsemax(scores, mask)
    torch.testing.assert_close(w, torch.from_numpy(_oracle(scores.numpy(), mask.numpy())), atol=1e-12, rtol=0)
    assert (w[:5] == 0).all() and (w[~mask] == 0).all()


def test_gradient_at_a_tie_with_the_threshold():
    # z = [2, 1, 0, 0]: tau = 1 exactly, so key 1 sits on the threshold with weight 0.
    z = torch.tensor([2.0, 1.0, 0.0, 0.0], dtype=torch.float64)
    jac = torch.autograd.functional.jacobian(sparsemax, z)
    assert jac.tolist() == [[0.0] * 4] * 4  # support {0}: the weight is 1 whatever z does nearby
    torch.testing.assert_close(jac, torch.from_numpy(_oracle_jacobian(z.numpy())))


def test_jacobian_on_tied_integer_scores_matches_the_closed_form_oracle():
    g = torch.Generator().manual_seed(2)
    rows = torch.randint(-3, 4, (300, 5), generator=g).double()  # integer scores: many ties with tau
    for z in rows:
        jac = torch.autograd.functional.jacobian(sparsemax, z)
        torch.testing.assert_close(jac, torch.from_numpy(_oracle_jacobian(z.numpy())), atol=0, rtol=0)


def test_the_row_sum_gets_exactly_zero_gradient_and_dropped_keys_get_none():
    g = torch.Generator().manual_seed(3)
    z = torch.randint(-3, 4, (10_000, 6), generator=g).float().requires_grad_(True)
    w = sparsemax(z)
    (grad_sum,) = torch.autograd.grad(w.sum(), z, retain_graph=True)
    assert (grad_sum == 0).all()  # the row sum is the constant 1
    upstream = torch.randn(10_000, 6, generator=g)
    (grad,) = torch.autograd.grad(w, z, upstream)
    assert (grad[w == 0] == 0).all()  # a key with weight 0 gets no gradient, ties included
    # masked keys too, and the gradient only moves the allowed keys
    mask = torch.rand(10_000, 6, generator=g) < 0.7
    (grad,) = torch.autograd.grad(sparsemax(z, mask), z, upstream)
    assert (grad[~mask] == 0).all()


def test_gradcheck_away_from_ties():
    g = torch.Generator().manual_seed(4)
    z = (torch.randn(8, 5, generator=g, dtype=torch.float64) * 3).requires_grad_(True)
    mask = torch.rand(8, 5, generator=g) < 0.7
    assert torch.autograd.gradcheck(lambda s: sparsemax(s), (z,))
    assert torch.autograd.gradcheck(lambda s: sparsemax(s, mask), (z,))
