"""Screened DP full passes of the ``optimal`` solver (``notes/optimal_solver.md``, section 6).

The screen skips regenerating candidates whose margins provably stay above the
working-set threshold; these tests check that it changes nothing: the same working set,
violation counts and loss at a checked W, and the same decisions on OP and DP instances
near p_c (``replica.capacity(d).p_c``), with screening on and off.
"""

from __future__ import annotations

import numpy as np
import pytest

import replica
from validation.instances.ensembles import make_instance
from validation.solvers import optimal as opt
from validation.solvers.engine.decision import DecisionRun, score_sigma
from validation.solvers.engine.problem import ConstraintProblem, exact_min_margins, full_pass
from validation.solvers.engine.screening import DPScreen
from validation.solvers.engine.options import OptimalOptions


def _entries(fp):
    return sorted(zip(fp.ws.rows.tolist(), fp.ws.cols.tolist()))


def _solve(instance, screen, monkeypatch):
    run = DecisionRun(instance, 1.0, tol=1e-3, max_iter=20000, time_limit=None, refine=False,
                      options=OptimalOptions(screen_dp=screen))
    return run, run.run()


def _check_pass(prob, screen, W, threshold, keep):
    plain = full_pass(prob, W, threshold, keep, 1 << 14)
    screened = full_pass(prob, W, threshold, keep, 1 << 14, screen)
    assert _entries(screened) == _entries(plain)
    np.testing.assert_array_equal(screened.violated, plain.violated)
    assert screened.loss == pytest.approx(plain.loss, rel=1e-12, abs=1e-12)
    assert (screened.min_margin > 0) == (plain.min_margin > 0)
    # the float64 minima of the scanned inputs, completed by scanning the screened ones,
    # are those of a scan of every constraint
    exact = exact_min_margins(prob, W, 1 << 14)
    np.testing.assert_array_equal(exact_min_margins(prob, W, 1 << 14, known=screened.input_min), exact)
    np.testing.assert_array_equal(plain.input_min, exact)


def test_screened_pass_equals_plain_pass_along_a_path():
    """References at W0, then passes at W0 moved by growing amounts: the screen must skip some
    inputs at small moves and rescan at large ones, with a pass equal to the plain one."""
    inst = make_instance(32, 180, "dp", seed=3)
    prob = ConstraintProblem(inst)
    rng = np.random.default_rng(5)
    W0 = prob.targets.T @ prob.inputs
    screen = DPScreen(prob, tracked=40)
    keep = 8
    threshold = 1.0 + np.linalg.norm(W0) / prob.d
    full_pass(prob, W0, threshold, keep, 1 << 14, screen)  # references
    E = rng.standard_normal(W0.shape) * np.linalg.norm(W0) / prob.d
    for step, scale in ((0.0, 1.0), (0.01, 1.3), (0.05, 0.7), (0.3, 1.0), (2.0, 1.0)):
        before = screen.screened
        _check_pass(prob, screen, scale * W0 + step * E, threshold * scale, keep)
        if step <= 0.01:
            assert screen.screened > before  # the screen did skip work here


def test_screen_bound_is_a_lower_bound():
    """The bound on untracked margins never exceeds the true smallest untracked margin."""
    inst = make_instance(16, 60, "dp", seed=7)
    prob = ConstraintProblem(inst)
    rng = np.random.default_rng(1)
    W0 = rng.standard_normal((16, 16))
    screen = DPScreen(prob, tracked=10)
    full_pass(prob, W0, 1.0, 4, 1 << 14, screen)
    inputs = np.arange(prob.p)
    for step in (0.0, 0.05, 0.5):
        W = W0 + step * rng.standard_normal((16, 16))
        Y = prob.images(W)
        lb = screen.lower_bounds(Y, inputs)
        M = prob.block_margins(Y, 0, prob.p, exact=True)
        M[inputs[:, None], screen.cand] = np.inf  # keep the untracked ones only
        assert np.all(lb <= M.min(axis=1) + 1e-12)


@pytest.mark.parametrize("d", [16, 32])
@pytest.mark.parametrize("fraction", [0.9, 1.0, 1.1])
@pytest.mark.parametrize("problem", ["op", "dp"])
def test_same_decisions_with_and_without_screening(d, fraction, problem, monkeypatch):
    p = int(round(fraction * replica.capacity(d).p_c))
    inst = make_instance(d, p, problem, seed=11)
    run_on, on = _solve(inst, True, monkeypatch)
    run_off, off = _solve(inst, False, monkeypatch)
    assert on.status == off.status
    assert on.status in ("stored", "not_stored")
    assert (run_on.screen is not None) == (problem == "dp")
    assert run_off.screen is None


def test_dp_start_pass_is_reused_by_the_first_refresh():
    """Full-rank DP: the start is not rescaled, so the first refresh reuses the start's pass
    (no candidate is regenerated) and its working set is that of a plain pass there."""
    inst = make_instance(64, 540, "dp", seed=4)  # p > 257: not every competitor is tracked
    run = DecisionRun(inst, 1.0, tol=1e-3, max_iter=20000, time_limit=None, refine=False, options=OptimalOptions())
    assert run.start_pass is not None and run.screen.scanned == inst.p
    W = run.params.W(run.x)
    run.refresh()
    assert run.screen.scanned == inst.p and run.screen.screened == 0  # nothing scanned again
    assert run.full_passes == 1 and run.start_pass is None
    plain = full_pass(run.prob, W, run.threshold(score_sigma(W, run.d)), run.max_active, 1 << 14)
    assert sorted(zip(run.ws.rows.tolist(), run.ws.cols.tolist())) == _entries(plain)


def test_dp_rescaled_start_scans_again(monkeypatch):
    """With the start rescaled (the OP's start), the first refresh of the same DP instance
    scans inputs again: the reuse above is what saves that scan."""
    inst = make_instance(64, 540, "dp", seed=4)
    run = DecisionRun(inst, 1.0, tol=1e-3, max_iter=20000, time_limit=None, refine=False,
                      options=OptimalOptions(rescale_dp_start=True))
    assert run.start_pass is None
    run.refresh()
    assert run.screen.scanned > inst.p


@pytest.mark.parametrize("d, fraction, seed", [(32, 0.9, 11), (32, 1.0, 11), (32, 1.1, 11), (32, 0.9, 12),
                                               (32, 1.0, 12), (32, 1.1, 12), (64, 0.95, 13), (64, 1.05, 13)])
def test_same_dp_decisions_with_and_without_start_rescaling(d, fraction, seed, monkeypatch):
    p = int(round(fraction * replica.capacity(d).p_c))
    inst = make_instance(d, p, "dp", seed=seed)
    reused = opt.solve_optimal(inst, refine=False)
    rescaled = opt.solve_optimal(inst, refine=False, options={"rescale_dp_start": True})
    assert reused.status == rescaled.status
    assert reused.status in ("stored", "not_stored")
