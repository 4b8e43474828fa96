"""Recall checks (validation.measurements.recall): exact argmax, ties fail."""

import math

import numpy as np
import pytest

from validation.measurements.recall import (competitor_scale, normalised_margin, recall_check, recalled_from_images,
                                          top_competitors)


def test_hand_example():
    # columns are inputs; the target of input mu is row mu
    S = np.array([[3.0, 1.0, 0.0],
                  [2.0, 1.0, 5.0],
                  [1.0, 0.5, 4.0]])
    recalled, margins = recall_check(S)
    np.testing.assert_array_equal(recalled, [True, False, False])
    # input 1: target 1.0 ties with row 0 (1.0) -> failure, margin 0
    np.testing.assert_allclose(margins, [1.0, 0.0, -1.0])
    idx, val = top_competitors(S)
    np.testing.assert_array_equal(idx, [1, 0, 1])
    np.testing.assert_allclose(val, [2.0, 1.0, 5.0])


def test_ties_fail_and_nan_fails():
    S = np.eye(4)
    S[2, 1] = 1.0  # tie for input 1
    S[0, 3] = np.nan  # NaN competitor for input 3
    recalled, margins = recall_check(S)
    np.testing.assert_array_equal(recalled, [True, False, True, False])
    assert margins[1] == 0.0 and math.isnan(margins[3])
    recalled, _ = recall_check(np.zeros((5, 5)))
    assert not recalled.any()


def test_matches_numpy_argmax_random():
    rng = np.random.default_rng(0)
    for _ in range(20):
        p = int(rng.integers(2, 30))
        S = rng.standard_normal((p, p)) + 1.5 * np.eye(p)
        recalled, margins = recall_check(S)
        masked = S.copy()
        np.fill_diagonal(masked, -np.inf)
        np.testing.assert_array_equal(recalled, np.argmax(S, axis=0) == np.arange(p))
        np.testing.assert_allclose(margins, np.diag(S) - masked.max(axis=0))


def test_float32_accepted():
    S = (np.eye(3) * 2).astype(np.float32)
    recalled, _ = recall_check(S)
    assert recalled.all()


def test_normalised_margin():
    W = np.eye(4) * 2.0  # ||W||_F = 4, d = 4 -> scale 1
    assert competitor_scale(W) == pytest.approx(1.0)
    assert normalised_margin([0.5, 0.25, 3.0], 3 * W) == pytest.approx(0.25 / 3.0)
    assert normalised_margin([0.0], np.zeros((3, 3))) == 0.0
    assert math.isnan(normalised_margin([np.nan, 1.0], W))


def test_bad_shapes():
    with pytest.raises(ValueError, match="scores"):
        recall_check(np.ones(3))
    with pytest.raises(ValueError, match="W"):
        competitor_scale(np.ones(3))


def test_competitor_scale_of_a_rectangular_memory():
    # ||W||_F / sqrt(d_in d_out): a 2 x 8 all-ones W has ||W||_F = 4 and sqrt(16) = 4 (closed form)
    assert competitor_scale(np.ones((2, 8))) == pytest.approx(1.0)
    assert competitor_scale(np.ones((8, 2))) == pytest.approx(1.0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_row_order_kernel_equals_the_column_kernel(dtype):
    # recall_check reads a C-ordered score matrix row by row (contiguous); the column kernel
    # (used for other layouts) is the reference: the same recalled flags and margins, bit for
    # bit, with ties (strict: a tie fails), NaN competitors and NaN targets
    from validation.measurements.recall import _recall_columns_kernel

    rng = np.random.default_rng(7)
    for n, p in ((2, 5), (7, 3), (50, 30), (300, 100)):
        S = rng.standard_normal((n, p)).astype(dtype)
        t = rng.integers(0, n, p)
        S[t[0], 0] = S[:, 0].max()  # a tie with the best competitor (when there is one)
        if n > 2 and p > 2:
            S[(t[1] + 1) % n, 1] = np.nan
            S[t[2], 2] = np.nan
        fast = recall_check(S, t)
        r, m = np.empty(p, dtype=bool), np.empty(p)
        _recall_columns_kernel(S, t.astype(np.int64), r, m)
        assert np.array_equal(fast[0], r) and np.array_equal(fast[1], m, equal_nan=True)
        slow = recall_check(np.asfortranarray(S), t)  # another layout: the column kernel
        assert np.array_equal(slow[0], r) and np.array_equal(slow[1], m, equal_nan=True)


def _hebbian_images(n, p, d, seed):
    """Candidates and Hebbian images with a mix of recalled and lost inputs."""
    rng = np.random.default_rng(seed)
    C = rng.standard_normal((n, d)) / np.sqrt(d)
    E = rng.standard_normal((p, d)) / np.sqrt(d)
    W = C[:p].T @ E
    return C, E @ W.T


@pytest.mark.parametrize("n, p, d", [(400, 400, 16), (1000, 1000, 64), (300, 120, 32)])
def test_screened_recall_equals_the_float64_recall(n, p, d):
    C, Y = _hebbian_images(n, p, d, seed=n + d)
    targets = None if n == p else np.arange(p, dtype=np.int64) * 2
    expected = recall_check(C @ Y.T, targets)[0]
    got = recalled_from_images(C, Y, targets)
    assert 0 < expected.sum() < p  # both verdicts occur
    assert np.array_equal(got, expected)


def test_screened_recall_decides_ties_and_near_ties_in_float64():
    # Reference: recall_check on the float64 product.  Column 0: a competitor row equal to the
    # target row (an exact tie: lost).  Column 1: a competitor above the target by 1e-12 in
    # relative terms (far below float32 resolution: lost).  Column 2: the same competitor just
    # below (recalled).  The float32 screen cannot tell them apart; the float64 repair must.
    d = 8
    rng = np.random.default_rng(3)
    C = rng.standard_normal((6, d))
    Y = rng.standard_normal((3, d))
    for mu in range(3):
        Y[mu] = C[mu] * 5.0  # the target scores far above the random competitors
    C[3] = C[0]
    C[4] = C[1] * (1 + 1e-12)
    C[5] = C[2] * (1 - 1e-12)
    expected = recall_check(C @ Y.T, np.arange(3))[0]
    assert expected.tolist() == [False, False, True]
    assert recalled_from_images(C, Y, np.arange(3)).tolist() == [False, False, True]


def test_screened_recall_nan_fails_and_bad_shapes_raise():
    C, Y = _hebbian_images(50, 50, 8, seed=1)
    Y[7, 0] = np.nan
    got = recalled_from_images(C, Y)
    assert not got[7]
    assert np.array_equal(got, recall_check(C @ Y.T)[0])
    with pytest.raises(ValueError, match="share d"):
        recalled_from_images(C, Y[:, :4])
    with pytest.raises(ValueError, match="targets"):
        recalled_from_images(C, Y, np.arange(49))
