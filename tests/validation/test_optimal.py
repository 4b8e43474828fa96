"""Tests of the ``optimal`` solver (validation.solvers.optimal) and its kernels.

Reference values are independent computations: dense numpy margins, float64 recall
(``validation.solvers.assess``), brute-force minimisation on a grid, and the
weak-duality inequality of ``notes/optimal_solver.md``.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from validation import make_instance, solve
from validation.solvers.engine import _optimal_kernels as _k
from validation.solvers import OptimalOptions, assess
from validation.solvers.engine.lbfgs import LBFGS, line_search, norm_poly
from validation.solvers.engine.problem import ConstraintProblem, exact_min_margins, full_pass
from validation.solvers.optimal import solve_optimal


def _dense_margins(inst, W):
    """margins[mu, rho] = (t_mu - u^(mu)_rho) . W e_mu, diagonal +inf (numpy, float64)."""
    out = np.empty((inst.p, inst.p))
    for mu in range(inst.p):
        cand = inst.candidates(mu)
        y = W @ inst.inputs[mu]
        out[mu] = cand[mu] @ y - cand @ y
        out[mu, mu] = np.inf
    return out


@pytest.mark.parametrize("problem", ["op", "dp"])
def test_stored_solution_recalls_in_float64(problem):
    inst = make_instance(16, 40, problem=problem, seed=3)
    sol = solve_optimal(inst, refine=False)
    assert sol.status == "stored" and sol.stored and sol.converged
    stored, fraction, margin, _ = assess(inst, sol.W)
    assert stored and fraction == 1.0
    assert margin > 0
    assert sol.margin == pytest.approx(margin, rel=1e-9)


@pytest.mark.parametrize("problem", ["op", "dp"])
def test_not_stored_only_with_certificate(problem):
    inst = make_instance(8, 34, problem=problem, seed=5)  # ~1.5 x the finite-size p_c
    sol = solve_optimal(inst, refine=False)
    assert sol.status == "not_stored"
    assert sol.info["margin_bound"] <= sol.info["tol"]
    assert not sol.stored
    stored, _, margin, _ = assess(inst, sol.W)
    assert not stored and margin < 0


def test_margin_bound_is_an_upper_bound_on_every_w():
    """Weak duality: d ||sum lam_i a_i|| / sum lam_i >= normalised margin of any W."""
    inst = make_instance(10, 30, seed=2)
    prob = ConstraintProblem(inst)
    rng = np.random.default_rng(0)
    W0 = rng.normal(size=(10, 10))
    ws = full_pass(prob, W0, np.inf, 10**6, 1 << 20).ws
    lam = rng.random(ws.size)
    bound = 10 * np.linalg.norm(ws.combine(lam, exact=True)) / lam.sum()
    for _ in range(20):
        W = rng.normal(size=(10, 10))
        gamma = 10 * _dense_margins(inst, W).min() / np.linalg.norm(W)
        assert gamma <= bound + 1e-12
    sol = solve_optimal(inst)  # refined: the reported bound must exceed the margin
    assert sol.status == "stored"
    assert sol.margin <= sol.info["margin_bound"] + 1e-12


def test_refinement_raises_the_margin_and_reports_its_gap():
    inst = make_instance(12, 30, seed=7)
    plain = solve_optimal(inst, refine=False)
    refined = solve_optimal(inst, refine=True, options=OptimalOptions(refine_tol=0.05, refine_max_iter=20000))
    assert plain.status == refined.status == "stored"
    assert refined.margin >= plain.margin
    assert refined.info["refine_converged"]
    gap = (refined.info["margin_bound"] - refined.margin) / refined.info["margin_bound"]
    assert 0 <= gap <= 0.05


@pytest.mark.parametrize("kappa", [0.25, 0.5])
def test_rank_constrained_stores_easy_instances(kappa):
    d = 16
    inst = make_instance(d, 24, seed=11)
    sol = solve(inst, "optimal", kappa=kappa, refine=False)
    m = max(1, round(kappa * d))
    assert sol.rank == m
    assert sol.status == "stored" and sol.stored
    Q, R = sol.factors
    assert Q.shape == (d, m) and R.shape == (d, m)
    np.testing.assert_allclose(sol.W, Q @ R.T, rtol=1e-12, atol=1e-12)
    assert np.linalg.matrix_rank(sol.W) <= m
    assert assess(inst, sol.W)[0]


def test_rank_constrained_never_claims_not_stored_without_bound():
    inst = make_instance(12, 40, seed=1)  # far above the rank-3 capacity
    sol = solve_optimal(inst, kappa=0.25, max_iter=300, refine=False)
    assert sol.status in ("undecided", "not_stored")
    if sol.status == "not_stored":
        assert sol.info["margin_bound"] <= sol.info["tol"]
    else:
        # converged only when L-BFGS ended at a stationary point of the factor problem
        assert sol.converged == ("stalled" in sol.message)


def test_budget_exhausted_is_undecided():
    inst = make_instance(16, 66, seed=0)  # near the finite-size threshold
    sol = solve_optimal(inst, max_iter=1, refine=False, options={"refresh": 1})
    assert sol.status == "undecided"
    assert not sol.converged and sol.info["margin_bound"] > sol.info["tol"]
    assert "budget ended" in sol.message


def test_time_limit_is_undecided():
    inst = make_instance(16, 66, seed=0)
    sol = solve_optimal(inst, time_limit=1e-9, refine=False)
    assert sol.status == "undecided" and not sol.converged
    assert sol.iterations <= OptimalOptions().refresh


@pytest.mark.parametrize("problem", ["op", "dp"])
def test_reproducible(problem):
    inst = make_instance(12, 36, problem=problem, seed=4)
    a = solve_optimal(inst, options={"refine_max_iter": 300})
    b = solve_optimal(make_instance(12, 36, problem=problem, seed=4), options=OptimalOptions(refine_max_iter=300))
    assert a.status == b.status
    np.testing.assert_array_equal(a.W, b.W)


def test_warm_start():
    inst = make_instance(16, 50, seed=2)
    cold = solve_optimal(inst, refine=False)
    warm = solve_optimal(inst, refine=False, options={"initial": cold.W})
    assert cold.status == warm.status == "stored"
    assert warm.iterations <= cold.iterations
    # the next p of a grid (same seed: the first 50 associations are shared), warm-started
    # from the smaller instance's W, given as an array and as a (Q, R) pair
    bigger = make_instance(16, 56, seed=2)
    np.testing.assert_array_equal(bigger.inputs[:50], inst.inputs)
    from_array = solve_optimal(bigger, refine=False, options={"initial": cold.W})
    from_pair = solve_optimal(bigger, refine=False, options={"initial": (cold.W, np.eye(16))})
    assert from_array.status == from_pair.status == "stored"
    assert assess(bigger, from_pair.W)[0]
    np.testing.assert_array_equal(from_array.W, from_pair.W)
    assert from_array.iterations == from_pair.iterations


def test_working_set_kernels_match_dense_margins():
    for problem in ("op", "dp"):
        inst = make_instance(9, 25, problem=problem, seed=8)
        prob = ConstraintProblem(inst)
        W = np.random.default_rng(1).normal(size=(9, 9))
        fp = full_pass(prob, W, np.inf, 10**6, 1 << 20)
        ws, min32 = fp.ws, fp.min_margin
        dense = _dense_margins(inst, W)
        assert ws.size == 25 * 24
        np.testing.assert_allclose(ws.margins(prob.images(W)), dense[ws.rows, ws.cols],
                                   rtol=1e-4, atol=1e-4)
        assert min32 == pytest.approx(dense.min(), rel=1e-4, abs=1e-5)
        # full squared hinge and violations per input, over all p (p - 1) constraints
        off = ~np.eye(25, dtype=bool)
        hinge = np.where(off, np.maximum(1.0 - dense, 0.0), 0.0)
        assert fp.loss == pytest.approx(np.square(hinge).sum(), rel=1e-4)
        np.testing.assert_array_equal(fp.violated, ((dense < 1.0) & off).sum(axis=1))
        np.testing.assert_allclose(exact_min_margins(prob, W, 1 << 20), dense.min(axis=1),
                                   rtol=1e-12, atol=1e-12)
        # capped working set keeps the smallest margins of each input
        ws3 = full_pass(prob, W, np.inf, 3, 64).ws
        for mu in range(25):
            kept = np.sort(dense[mu, ws3.cols[ws3.rows == mu]])
            np.testing.assert_allclose(kept, np.sort(dense[mu])[:3], rtol=1e-4, atol=1e-4)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 7), p=st.integers(2, 90), keep=st.integers(1, 40),
       threshold=st.floats(-1.0, 4.0), offset=st.integers(0, 3), seed=st.integers(0, 2**32 - 1),
       dtype=st.sampled_from([np.float32, np.float64]))
def test_select_block_matches_numpy_reference(n, p, keep, threshold, offset, seed, dtype):
    """The heap selection kernel against sort-based numpy (continuous scores: no ties)."""
    n = min(n, p)
    offset = min(offset, p - n)
    keep = min(keep, p - 1)
    S = np.random.default_rng(seed).normal(size=(n, p)).astype(dtype)
    idx = np.full((n, keep), -1, dtype=np.int64)
    cnt = np.empty(n, dtype=np.int64)
    mins = np.empty(n)
    loss = np.empty(n)
    viol = np.empty(n, dtype=np.int64)
    _k.select_block(S, offset, threshold, keep, idx, cnt, mins, loss, viol)
    for i in range(n):
        mu = offset + i
        margins = S[i, mu] - S[i].astype(np.float64)
        margins[mu] = np.inf
        assert mins[i] == pytest.approx(margins.min(), rel=1e-6, abs=1e-6)
        below = np.flatnonzero(margins < threshold)
        expect = below[np.argsort(margins[below], kind="stable")][:keep]
        assert cnt[i] == expect.size
        assert sorted(idx[i, :cnt[i]]) == sorted(expect)
        hinge = np.maximum(1.0 - margins[np.arange(p) != mu], 0.0)
        assert loss[i] == pytest.approx(np.square(hinge).sum(), rel=1e-6, abs=1e-9)
        assert viol[i] == np.count_nonzero(margins < 1.0)


def test_working_set_rounds_that_raise_the_full_loss_are_undone():
    """Far above p_c with a tiny working-set cap, the rounds on the working set raise the
    loss of the constraints left out.  The solver must undo such rounds (and grow the cap)
    rather than keep going: without that it needs 480-650 iterations on these instances
    (measured), with it 80-120, and at d = 256, p = 1.13 p_c it diverged to |W| ~ 1e38."""
    for seed in range(2):
        sol = solve_optimal(make_instance(16, 150, seed=seed), refine=False, max_iter=3000,
                            options={"max_active": 2})
        assert sol.status == "not_stored"
        assert sol.info["rejected_rounds"] >= 1
        assert sol.iterations < 250
        assert np.all(np.isfinite(sol.W)) and np.linalg.norm(sol.W) < 1e6


def test_lbfgs_ring_buffer_matches_textbook_two_loop():
    """The numba two-loop recursion over the ring buffer against Nocedal-Wright Alg. 7.4
    written with Python lists (memory 4, 7 updates: the buffer wraps around)."""
    rng = np.random.default_rng(5)
    n, memory = 30, 4
    A = rng.normal(size=(n, n))
    H = A @ A.T + n * np.eye(n)  # SPD: every pair has s.y > 0
    lb = LBFGS(memory)
    pairs = []
    for _ in range(7):
        s_ = rng.normal(size=n)
        y_ = H @ s_
        lb.update(s_, y_)
        pairs = (pairs + [(s_, y_)])[-memory:]
        g = rng.normal(size=n)
        q = g.copy()
        alphas = []
        for s_i, y_i in reversed(pairs):
            a = (s_i @ q) / (s_i @ y_i)
            alphas.append(a)
            q -= a * y_i
        q *= (pairs[-1][0] @ pairs[-1][1]) / (pairs[-1][1] @ pairs[-1][1])
        for (s_i, y_i), a in zip(pairs, reversed(alphas)):
            b = (y_i @ q) / (s_i @ y_i)
            q += (a - b) * s_i
        np.testing.assert_allclose(lb.direction(g), -q, rtol=1e-12, atol=1e-12)
    lb.reset()
    np.testing.assert_array_equal(lb.direction(g), -g)


def test_line_search_matches_grid_minimum():
    rng = np.random.default_rng(3)
    m0, m1, m2 = rng.normal(size=50), rng.normal(size=50), rng.normal(size=50) * 0.1

    def h(t, quad):
        m = m0 + t * m1 + (t * t * m2 if quad else 0)
        return np.sum(np.maximum(1 - m, 0) ** 2)

    grid = np.linspace(0, 20, 200001)
    t, v = line_search(m0, m1, None, 0.0, (0, 0, 0, 0, 0))
    best = min(h(g, False) for g in grid[::10])
    assert v == pytest.approx(h(t, False)) and v <= best + 1e-9
    t2, v2 = line_search(m0, m1, m2, 0.0, (0, 0, 0, 0, 0))
    # the kernel sums the 50 terms in its own order (numpy sums pairwise): at t2 = 0 the two
    # values of the same loss may differ by a few ulps, so compare within 50 roundoffs
    assert v2 == pytest.approx(h(t2, True)) and v2 <= h(0.0, True) * (1 + 50 * np.finfo(float).eps)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 300), seed=st.integers(0, 2**32 - 1), shift=st.floats(-3.0, 3.0),
       ridge=st.floats(0.01, 10.0))
def test_line_search_ridge_term(n, seed, shift, ridge):
    """The ridge term ``ridge * ||W + t D||_F^2`` of the refinement phase.

    With a real norm polynomial (c0 = ||W||^2 > 0, c1 = 2 W.D, c2 = ||D||^2), a
    vanishing ridge (1e-300) must give the ridge-free step when the hinge minimum is
    positive, and a non-vanishing ridge
    must minimise hinge + ridge * polynomial (checked against a grid, and its value
    includes the ridge part, so a kernel that ignored the term would fail)."""
    rng = np.random.default_rng(seed)
    m0, m1 = rng.normal(size=n) + shift, rng.normal(size=n)
    W, D = rng.normal(size=(4, 4)), rng.normal(size=(4, 4))
    poly = norm_poly(W, D, None)
    assert poly[0] > 0 and poly[2] > 0 and poly[3] == poly[4] == 0
    np.testing.assert_allclose(np.polyval(poly[2::-1], 0.7), np.sum((W + 0.7 * D) ** 2), rtol=1e-12)

    def objective(t, lam):
        hinge = np.sum(np.maximum(1.0 - m0[:, None] - np.outer(m1, t), 0.0) ** 2, axis=0)
        return hinge + lam * (poly[0] + poly[1] * t + poly[2] * t * t)

    t_free, v_free = line_search(m0, m1, None, 0.0, poly)
    if v_free > 0:
        # (where the hinge is 0 along a stretch of the line, a vanishing ridge is all that
        # defines the minimiser, so only a positive hinge minimum must be unchanged)
        t_tiny, v_tiny = line_search(m0, m1, None, 1e-300, poly)
        assert t_tiny == pytest.approx(t_free, rel=1e-12, abs=1e-300)
        assert v_tiny == pytest.approx(v_free, rel=1e-12, abs=1e-280)  # + 1e-300 * poly(t)
    t_ridge, v_ridge = line_search(m0, m1, None, ridge, poly)
    assert v_ridge == pytest.approx(objective(np.array([t_ridge]), ridge)[0], rel=1e-9)
    grid = np.linspace(0.0, 2.0 * max(t_ridge, t_free, 1.0), 4001)
    best = objective(grid, ridge).min()
    assert v_ridge <= best + 1e-9 * (1.0 + abs(best))
    assert v_ridge <= objective(np.array([t_free]), ridge)[0] + 1e-9 * (1.0 + abs(v_ridge))


@pytest.mark.parametrize("keywords, name", [
    ({"tol": 0.0}, "tol"), ({"tol": -1.0}, "tol"), ({"max_iter": 0}, "max_iter"),
    ({"refine": "yes"}, "refine"), ({"time_limit": -1.0}, "time_limit"),
    ({"options": {"max_active": 0}}, "max_active"), ({"options": {"refresh": 0}}, "refresh"),
    ({"options": {"refine_tol": 2.0}}, "refine_tol"),
    ({"options": {"no_such_option": 1}}, "no_such_option"),
    ({"options": {"max_iter": 5}}, "max_iter"),
    ({"options": {"initial": np.zeros((3, 3))}}, "initial"),
])
def test_bad_options_raise(keywords, name):
    inst = make_instance(6, 8, seed=0)
    with pytest.raises(ValueError, match=name):
        solve_optimal(inst, **keywords)


def test_unknown_option_lists_the_valid_ones():
    with pytest.raises(ValueError, match="refine_max_iter") as err:
        solve(make_instance(6, 8, seed=0), "optimal", options={"max_activ": 3})
    assert "max_activ" in str(err.value) and "block_elements" in str(err.value)


def test_deprecated_refine_iterations_alias():
    # refine_max_iter budgets the rank-m ridge path (full rank uses the max-margin solver)
    inst = make_instance(12, 20, seed=7)
    with pytest.warns(DeprecationWarning, match="refine_max_iter"):
        old = solve(inst, "optimal", kappa=0.5, options={"refine_iterations": 40})
    new = solve(inst, "optimal", kappa=0.5, options={"refine_max_iter": 40})
    assert old.status == "stored" and old.info["refined"]
    # the budget is checked at full passes, every ``refresh`` iterations
    assert old.info["refine_iterations"] == new.info["refine_iterations"] < 40 + OptimalOptions().refresh
    np.testing.assert_array_equal(old.W, new.W)


@pytest.mark.parametrize("problem", ["op", "dp"])
def test_full_rank_refinement_is_certified(problem):
    # refine=True at full rank runs the certified max-margin solver from the stored W: the
    # reported gap is (margin_bound - margin) / margin_bound with the float64 margin of the
    # returned W, at most refine_tol, and the margin is at least the decision's
    inst = make_instance(12, 30, problem, seed=3)
    plain = solve(inst, "optimal", refine=False)
    refined = solve(inst, "optimal", options={"refine_tol": 0.01})
    assert plain.status == refined.status == "stored" and refined.stored
    assert refined.info["refine_status"] == "converged" and refined.info["refine_converged"]
    bound = refined.info["margin_bound"]
    assert refined.info["refine_gap"] == pytest.approx((bound - refined.margin) / bound, rel=1e-12)
    assert refined.info["refine_gap"] <= 0.01
    assert refined.margin >= plain.margin
    # the margin is that of the returned W, recomputed independently
    S = inst.scores(refined.W)
    cols, rows = np.arange(inst.p), inst.target_index
    comp = S.copy()
    comp[rows, cols] = -np.inf
    gap_scores = S[rows, cols] - comp.max(axis=0)
    assert inst.d * gap_scores.min() / np.linalg.norm(refined.W) == pytest.approx(refined.margin, rel=1e-9)


@pytest.mark.parametrize("kappa", [0.0, -0.5, 1.5, float("nan")])
def test_bad_kappa_raises(kappa):
    with pytest.raises(ValueError, match="kappa"):
        solve_optimal(make_instance(6, 8, seed=0), kappa=kappa)
