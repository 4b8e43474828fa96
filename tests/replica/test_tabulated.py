"""The fast paths of the theory against the Monte-Carlo and quadrature references they replace.

Provenance of the references:

* ``CostEstimator`` (``replica.optimal.cost``), run afresh in the test: the Monte-Carlo
  estimator of ``E[C_p]`` whose sample functions the shipped table ``cost_table.npz`` holds;
* ``with reference_monte_carlo(): ...``: the capacity searches with the tables switched
  off, i.e. the code path of every capacity before the tables (run afresh in the test);
* the committed ``experiments/margins/margins_theory.csv``: ``replica.max_margin`` of every
  measured row, rendered by the code before Newton's method (commit 79d7b8a and earlier);
* the numbers quoted in ``README.md`` (``capacity(64)``: ``p_c = 564.2, alpha = 0.8727``;
  ``capacity(16)``: ``61.6``);
* values printed by commit 79d7b8a (before the changes) for ``max_margin_image``, quoted
  below with their standard errors;
* ``replica.variants.few_outputs._clouds`` (the scipy NNLS and LP vertex tests) on the same
  seeded clouds as the compiled kernel, run afresh in the test.
"""

from __future__ import annotations

import csv
import math
import warnings
from pathlib import Path

import numpy as np
import pytest

from replica.common.seeds import DEFAULT_SEED
from replica.optimal import cost_table as cost
from replica.optimal.cost import CostEstimator
from replica.optimal.cost_table import (TABLE_ROWS, CostTableMiss, TabulatedCostEstimator, cost_table,
                                        reference_monte_carlo, tabulated_estimator)
from replica.optimal.finite_size import capacity, max_margin

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def table():
    data = cost_table()
    assert data is not None, "replica/optimal/cost_table.npz is missing"
    return data


@pytest.mark.parametrize("top_k, p, rows", [
    (1, 2.0, 4096), (1, 7.3, 9216), (1, 20.5, 10752), (1, 33.0, 6144), (1, 88.0, 5120), (1, 564.2, 4608),
    (1, 20294.8, 2048), (2, 40.7, 8192), (3, 300.3, 4096)])
def test_the_table_is_the_monte_carlo_sample_function_of_the_default_seed(table, top_k, p, rows):
    fresh = CostEstimator(0.0, top_k, DEFAULT_SEED).estimate(p, rows)
    read = TabulatedCostEstimator(top_k, table).estimate(p, rows)
    assert read[0] == pytest.approx(fresh[0], rel=1e-10)
    assert read[1] == pytest.approx(fresh[1], rel=1e-7, abs=1e-12)
    assert (read[3], read[4]) == (fresh[3], fresh[4])  # order statistics and completeness


@pytest.mark.parametrize("top_k, p", [(1, 50.0), (1, 3000.0), (2, 500.0)])
def test_table_values_agree_with_an_independent_seed_within_their_standard_errors(table, top_k, p):
    rows = TABLE_ROWS[-1]
    read_mean, read_err = TabulatedCostEstimator(top_k, table).estimate(p, rows)[:2]
    other_mean, other_err = CostEstimator(0.0, top_k, 12345).estimate(p, rows)[:2]
    assert abs(read_mean - other_mean) < 4.0 * math.hypot(read_err, other_err)


def test_the_table_misses_outside_its_range_and_answers_only_for_its_seed_and_law(table):
    estimator = TabulatedCostEstimator(1, table)
    with pytest.raises(CostTableMiss):
        estimator.estimate(2.0**17, 4096)
    with pytest.raises(CostTableMiss):
        estimator.estimate(100.0, 4000)  # not a tabulated sample size
    with pytest.raises(CostTableMiss):
        estimator.estimate(100.0, 4096, margin=0.5)
    assert tabulated_estimator(0.0, 1, DEFAULT_SEED + 1) is None
    assert tabulated_estimator(0.0, 1, DEFAULT_SEED, rel_tol=2e-3) is None
    assert tabulated_estimator(0.5, 1, DEFAULT_SEED) is None
    assert tabulated_estimator(0.0, 4, DEFAULT_SEED) is None
    with reference_monte_carlo():
        assert tabulated_estimator(0.0, 1, DEFAULT_SEED) is None
    assert tabulated_estimator(0.0, 1, DEFAULT_SEED) is not None


@pytest.mark.parametrize("kwargs", [
    dict(d=3), dict(d=8), dict(d=64), dict(d=40, kappa=0.5), dict(d=12, top_k=3), dict(d=16, outputs=8, problem="op"),
    dict(d=16, outputs=40, problem="dp")])
def test_the_tabulated_capacity_equals_the_monte_carlo_search(kwargs):
    fast = capacity(**kwargs)
    with reference_monte_carlo():
        slow = capacity(**kwargs)
    assert fast.p_c == pytest.approx(slow.p_c, rel=1e-9)
    assert fast.stderr == pytest.approx(slow.stderr, rel=1e-6)
    assert fast.expected_cost == pytest.approx(slow.expected_cost, rel=1e-9)
    assert (fast.samples, fast.order_statistics, fast.status) == (slow.samples, slow.order_statistics, slow.status)


def test_the_readme_numbers_are_kept():
    r64, r16 = capacity(64), capacity(16)
    assert (f"{r64.p_c:.1f}", f"{r64.alpha:.4f}", f"{r16.p_c:.1f}") == ("564.2", "0.8727", "61.6")


def test_other_seeds_and_tolerances_run_the_monte_carlo():
    seeded = capacity(20, seed=7)
    with reference_monte_carlo():
        assert capacity(20, seed=7) == seeded
    loose = capacity(20, rel_tol=2e-3)
    with reference_monte_carlo():
        assert capacity(20, rel_tol=2e-3) == loose


def test_the_environment_variable_switches_the_tables_off(monkeypatch):
    monkeypatch.setenv("REPLICA_NO_TABLES", "1")
    assert not cost.tables_enabled()
    monkeypatch.setenv("REPLICA_NO_TABLES", "0")
    assert cost.tables_enabled()


@pytest.mark.parametrize("d", [2, 9, 31])
def test_the_sphere_table_holds_the_monte_carlo_roots(d):
    from replica.optimal.capacity_equation import _sphere_table

    if not _sphere_table():
        pytest.skip("sphere_capacity_table.json not shipped")
    fast = capacity(d, ensemble="sphere")
    with reference_monte_carlo():
        slow = capacity(d, ensemble="sphere")
    assert fast == slow  # every field, bit for bit


@pytest.mark.parametrize("d, ensemble", [(5, "gaussian"), (24, "sphere")])
def test_the_hebbian_table_holds_the_quadrature_roots(d, ensemble):
    from replica.hebbian.finite_size import _hebbian_table, hebbian_capacity

    if not _hebbian_table():
        pytest.skip("hebbian_capacity_table.json not shipped")
    fast = hebbian_capacity(d, ensemble)
    with reference_monte_carlo():
        slow = hebbian_capacity(d, ensemble)
    assert fast == slow


def test_every_margin_in_one_pass_equals_the_margin_by_margin_estimate():
    margins = np.array([-1.0, 0.0, 0.4, 1.3, 2.0])
    one_pass = CostEstimator(0.0, 1, DEFAULT_SEED)
    means, errs, slopes = one_pass.estimate_margins(109.0, 4096, margins, slopes=True)
    for m, mean, err, slope in zip(margins, means, errs, slopes):
        single = CostEstimator(0.0, 1, DEFAULT_SEED)
        ref_mean, ref_err = single.estimate(109.0, 4096, float(m))[:2]
        assert mean == pytest.approx(ref_mean, rel=1e-8)  # the truncation order may differ: bound 1e-6
        assert err == pytest.approx(ref_err, rel=1e-6)
        h = 1e-5
        up = single.estimate(109.0, 4096, float(m) + h)[0]
        down = single.estimate(109.0, 4096, float(m) - h)[0]
        assert slope == pytest.approx((up - down) / (2 * h), rel=1e-3)  # the regression coefficient held fixed


def test_max_margin_keeps_the_committed_theory_of_the_margins_experiment():
    rows = list(csv.DictReader(open(ROOT / "experiments" / "margins" / "margins_theory.csv")))
    picked = [r for r in rows if r["ensemble"] == "gaussian" and r["x"] in ("0.40", "0.80")][:3]
    assert picked
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for r in picked:
            new = max_margin(int(r["d"]), int(r["p"]))
            assert new.margin == pytest.approx(float(r["theory"]), rel=1e-8, abs=1e-10)
            assert new.stderr == pytest.approx(float(r["theory_se"]), rel=1e-3)  # analytic slope
            old = max_margin(int(r["d"]), int(r["p"]), scale_fluctuations=False)
            assert old.margin == pytest.approx(float(r["fixed_scale_theory"]), rel=1e-8, abs=1e-10)


def test_max_margin_image_stays_within_its_tolerance_of_the_brent_root():
    from replica.optimal.image_margin import max_margin_image

    # commit 79d7b8a (Brent's method): 1.057129720875515 +- 0.029049708742293946
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = max_margin_image(16, 30, blocks=400)
    assert abs(result.margin - 1.057129720875515) <= 2e-4
    assert result.stderr == pytest.approx(0.029049708742293946, rel=0.05)


@pytest.mark.parametrize("p, d_out, clouds", [(6, 1, 30), (12, 4, 40), (30, 8, 20), (45, 12, 6)])
def test_the_compiled_cloud_kernel_gives_the_statistics_of_the_scipy_path(p, d_out, clouds):
    from replica.variants.few_outputs import _clouds, _clouds_compiled

    ref = _clouds(p, d_out, clouds, np.random.default_rng(11))
    new = _clouds_compiled(p, d_out, clouds, np.random.default_rng(11))
    assert np.array_equal(ref[0], new[0]) and np.array_equal(ref[1], new[1])
    assert new[2] == pytest.approx(ref[2], rel=1e-10)


def test_the_fft_kinematic_factor_equals_the_sequential_convolution():
    from replica.variants.few_outputs import kinematic_factor

    pmf = np.array([0.05, 0.3, 0.4, 0.2, 0.05])
    for p, d_in, d_out in [(20, 16, 4), (40, 16, 4), (90, 64, 4)]:
        law = np.array([1.0])
        for _ in range(p):
            law = np.convolve(law, pmf)
        index = np.arange(d_in * d_out - 1, -1, -2)
        exact = min(1.0, 2.0 * law[index[index < len(law)]].sum())
        assert kinematic_factor(pmf, p, d_in, d_out) == pytest.approx(exact, rel=1e-10, abs=1e-14)
