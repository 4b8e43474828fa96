"""Rectangular memories: instances with d_in != d_out and the solvers on d_out x d_in memories."""

import numpy as np
import pytest

from validation import EmbeddingModel, make_instance, solve
from validation.solvers.hebbian import hebbian_matrix


def _same(a, b):
    return a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("problem", ["op", "dp"])
@pytest.mark.parametrize("ensemble", ["gaussian", "sphere"])
def test_square_through_d_in_d_out_is_bit_identical(problem, ensemble):
    ref = make_instance(7, 15, problem, seed=11, embeddings=EmbeddingModel(ensemble))
    for kwargs in ({"d_in": 7, "d_out": 7, "d": None}, {"d_in": 7}, {"d_out": 7}):
        d = kwargs.pop("d", 7)
        inst = make_instance(d, 15, problem, seed=11, embeddings=EmbeddingModel(ensemble, **kwargs))
        assert inst.d == 7 and inst.square and inst.shape == (7, 7)
        assert _same(inst.inputs, ref.inputs) and _same(inst.targets, ref.targets)
        assert _same(inst.candidates(3), ref.candidates(3))
        assert inst.to_dict() == ref.to_dict()


@pytest.mark.parametrize("problem", ["op", "dp"])
def test_rectangular_shapes_and_shared_draws(problem):
    inst = make_instance(None, 12, problem, seed=5, embeddings=EmbeddingModel(d_in=10, d_out=4))
    assert inst.d is None and not inst.square
    assert (inst.d_in, inst.d_out, inst.shape) == (10, 4, (4, 10))
    assert inst.inputs.shape == (12, 10) and inst.targets.shape == (12, 4)
    assert inst.candidates(2).shape == (12, 4)
    assert inst.score_scale == pytest.approx(np.sqrt(40.0))
    meta = inst.to_dict()
    assert meta["d"] is None and (meta["d_in"], meta["d_out"]) == (10, 4)
    # the inputs are those of the square instance of dimension d_in, the outputs of d_out
    assert _same(inst.inputs, make_instance(10, 12, problem, seed=5).inputs)
    out_square = make_instance(4, 12, problem, seed=5)
    assert _same(inst.targets, out_square.targets)
    assert _same(inst.candidates(7), out_square.candidates(7))
    # d with only one of them: the other is d
    assert make_instance(6, 12, problem, seed=5, embeddings=EmbeddingModel(d_out=3)).shape == (3, 6)


@pytest.mark.parametrize("kwargs, name", [
    ({"d_in": 1, "d_out": 4}, "d_in"), ({"d_in": 4, "d_out": 1}, "d_out"),
    ({"d_in": 0, "d_out": 4}, "d_in"), ({"d_in": 4.5, "d_out": 4}, "d_in"),
])
def test_bad_dimensions_name_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        make_instance(None, 10, embeddings=EmbeddingModel(**kwargs))


def test_d_beside_both_dimensions_and_a_missing_dimension_are_rejected():
    with pytest.raises(ValueError, match="d must be None"):
        make_instance(8, 10, embeddings=EmbeddingModel(d_in=8, d_out=4))
    with pytest.raises(ValueError, match="d_out"):
        make_instance(None, 10, embeddings=EmbeddingModel(d_in=8))
    with pytest.raises(ValueError, match="d"):
        make_instance(None, 10)


@pytest.mark.parametrize("problem", ["op", "dp"])
@pytest.mark.parametrize("ensemble", ["gaussian", "sphere"])
def test_ensemble_scales_and_competitor_variance(problem, ensemble):
    # inputs N(0, I/d_in), outputs N(0, I/d_out): E||e||^2 = E||u||^2 = 1 and
    # Var(u^T W e) = ||W||_F^2 / (d_in d_out) for a fixed W (closed form); 600 facts,
    # 360,000 competitor scores: the sample variance is within a few per cent
    d_in, d_out, p = 24, 6, 600
    inst = make_instance(None, p, problem, seed=2, embeddings=EmbeddingModel(ensemble, d_in=d_in, d_out=d_out))
    assert np.mean(np.sum(inst.inputs ** 2, axis=1)) == pytest.approx(1.0, abs=0.03)
    assert np.mean(np.sum(inst.targets ** 2, axis=1)) == pytest.approx(1.0, abs=0.06)
    W = np.random.default_rng(0).standard_normal((d_out, d_in))
    S = inst.scores(W)
    off = S[~np.eye(p, dtype=bool)]
    expected = np.sum(W ** 2) / (d_in * d_out)
    assert np.var(off) == pytest.approx(expected, rel=0.1)


def test_scores_are_the_explicit_float64_products():
    inst = make_instance(None, 9, "dp", seed=4, embeddings=EmbeddingModel(d_in=3, d_out=8))
    W = np.random.default_rng(1).standard_normal((8, 3))
    S = inst.scores(W)
    for mu in range(9):
        np.testing.assert_allclose(S[:, mu], inst.candidates(mu) @ (W @ inst.inputs[mu]), rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="d_out, d_in"):
        inst.scores(np.zeros((3, 8)))


def test_hebbian_rectangular_is_the_sum_of_outer_products():
    inst = make_instance(None, 20, "op", seed=3, embeddings=EmbeddingModel(d_in=12, d_out=5))
    W, factors = hebbian_matrix(inst)
    assert factors is None and W.shape == (5, 12)
    np.testing.assert_allclose(W, sum(np.outer(inst.targets[m], inst.inputs[m]) for m in range(20)), atol=1e-12)
    sol = solve(inst, "hebbian")
    assert sol.rank == 5 and sol.W.shape == (5, 12)


def test_rectangular_rejections():
    inst = make_instance(None, 12, "op", seed=0, embeddings=EmbeddingModel(d_in=8, d_out=4))
    for solver in ("optimal", "hebbian"):
        with pytest.raises(ValueError, match="rectangular"):
            solve(inst, solver, kappa=0.5)
    with pytest.raises(ValueError, match="kappa"):
        solve(inst, "lp", kappa=0.5)
    with pytest.raises(ValueError, match="adam"):
        solve(inst, "adam")
    with pytest.raises(ValueError, match="search modes"):
        solve(inst, "optimal", options={"give_up": True})


def _explicit_recall(inst, W):
    """Every input recalled, from the explicit float64 products u^T (W e) (ties fail)."""
    for mu in range(inst.p):
        s = inst.candidates(mu) @ (W @ inst.inputs[mu])
        target = s[mu]
        if not np.all(np.delete(s, mu) < target):
            return False
    return True


# (d_in, d_out) at aspect ratios d_out / d_in = 1/4, 4, 1/2, 2 and loads around the measured
# transitions (optimal, 6 seeds per load, refine=False): both verdicts occur in every group
CASES = {(16, 4): (8, 12, 16), (4, 16): (20, 24, 28), (16, 8): (28, 32, 36), (8, 16): (36, 40, 44)}


@pytest.mark.parametrize("shape", list(CASES))
@pytest.mark.parametrize("problem", ["op", "dp"])
def test_optimal_decisions_agree_with_the_lp(shape, problem):
    d_in, d_out = shape
    verdicts, undecided = [], 0
    for p in CASES[shape]:
        for seed in range(3):
            inst = make_instance(None, p, problem, seed=100 * p + seed,
                                 embeddings=EmbeddingModel(d_in=d_in, d_out=d_out))
            # max_iter: an instance whose best margin is almost 0 can take the decision run
            # 20000 iterations (OP (16, 8), p = 36, seed 3600: the LP optimum is 0)
            opt = solve(inst, "optimal", refine=False, max_iter=2000)
            lp = solve(inst, "lp")
            assert lp.status in ("stored", "not_stored")
            if opt.status == "undecided":
                undecided += 1
                assert lp.status == "not_stored" or not opt.converged
                continue
            assert opt.status == lp.status, (shape, problem, p, seed, opt.message, lp.message)
            assert opt.W.shape == (d_out, d_in) and lp.W.shape == (d_out, d_in)
            if opt.status == "stored":
                assert _explicit_recall(inst, opt.W) and _explicit_recall(inst, lp.W)
            else:
                assert not _explicit_recall(inst, opt.W)
            verdicts.append(opt.status)
    assert set(verdicts) == {"stored", "not_stored"} and undecided <= 1


@pytest.mark.parametrize("problem", ["op", "dp"])
def test_refined_rectangular_margin_is_verified(problem):
    # the certified max-margin refinement on a d_out x d_in memory: its margin is the float64
    # normalised margin min (t - u)^T W e / (||W||_F / sqrt(d_in d_out)) of the returned W
    inst = make_instance(None, 20, problem, seed=8, embeddings=EmbeddingModel(d_in=6, d_out=12))
    sol = solve(inst, "optimal")
    assert sol.status == "stored" and sol.info["refined"]
    S = inst.scores(sol.W)
    margins = [S[mu, mu] - np.max(np.delete(S[:, mu], mu)) for mu in range(inst.p)]
    unit = np.linalg.norm(sol.W) / np.sqrt(6 * 12)
    assert sol.margin == pytest.approx(min(margins) / unit, rel=1e-9)
    assert sol.info["margin_bound"] >= sol.margin * (1 - 1e-9)


# ------------------------------------------------------------------------------------
# functions built on a d x d memory: a rectangular instance is a ValueError, not a TypeError
# ------------------------------------------------------------------------------------
def _square_only_calls():
    """``name -> call(instance, W)`` for every entry point that needs ``d_in == d_out``."""
    from validation.bounds.accuracy import accuracy_bound, check_bound_arguments, constraint_rows
    from validation.bounds.top_k import top_k_decision
    from validation.measurements.spectra_and_scores import score_distribution
    from validation.solvers.adam import solve_adam
    from validation.solvers.optimal import solve_optimal
    from validation.solvers.rank_margin import solve_rank_max_margin
    from validation.solvers.rank_search import solve_rank_search
    from validation.solvers.svp import solve_svp

    return {
        "accuracy_bound": lambda inst, W: accuracy_bound(inst, time_limit=5.0),
        "top_k_decision": lambda inst, W: top_k_decision(inst, 2, time_limit=5.0),
        "constraint_rows": lambda inst, W: constraint_rows(inst),
        "check_bound_arguments": lambda inst, W: check_bound_arguments(inst, 1e4, 5.0, True,
                                                                       function="check_bound_arguments"),
        "score_distribution": lambda inst, W: score_distribution(inst, W),
        "solve_svp": lambda inst, W: solve_svp(inst),
        "solve_adam": lambda inst, W: solve_adam(inst, max_iter=5),
        "solve_rank_search": lambda inst, W: solve_rank_search(inst, 1.0),
        "solve_rank_max_margin": lambda inst, W: solve_rank_max_margin(inst, 1.0, W),
        # the top-k search mode of the optimal solver (validation.solve rejects it before)
        "solve_top_k": lambda inst, W: solve_optimal(inst, options={"top_k": 2}),
    }


@pytest.mark.parametrize("name", list(_square_only_calls()))
@pytest.mark.parametrize("problem", ["op", "dp"])
def test_square_only_functions_reject_a_rectangular_instance(name, problem):
    inst = make_instance(None, 10, problem, seed=1, embeddings=EmbeddingModel(d_in=6, d_out=3))
    W = np.random.default_rng(0).standard_normal(inst.shape)
    message = rf"^{name} needs a square instance \(d_in == d_out\); got d_in=6, d_out=3$"
    with pytest.raises(ValueError, match=message):
        _square_only_calls()[name](inst, W)


def test_square_only_functions_still_take_a_square_instance_built_from_d_in_and_d_out():
    from validation.bounds.accuracy import constraint_rows
    from validation.instances.ensembles import check_square_instance
    from validation.measurements.spectra_and_scores import score_distribution

    inst = make_instance(None, 6, "op", seed=1, embeddings=EmbeddingModel(d_in=3, d_out=3))
    assert check_square_instance(inst, "f") == 3
    A, owner = constraint_rows(inst)
    assert A.shape == (6 * 5, 9) and owner.shape == (30,)
    W = np.random.default_rng(0).standard_normal((3, 3))
    assert score_distribution(inst, W).targets.shape == (6,)
    with pytest.raises(ValueError, match="^instance must be a validation.Instance"):
        check_square_instance(object(), "f")


def test_functions_that_take_a_rectangular_instance_are_unchanged():
    # the memory-independent checks and the certified max margin work on d_out x d_in memories
    from validation import solve_max_margin
    from validation.solvers import assess
    from validation.solvers.searches import top_k_check

    inst = make_instance(None, 10, "dp", seed=1, embeddings=EmbeddingModel(d_in=6, d_out=3))
    W = np.random.default_rng(0).standard_normal(inst.shape)
    assert top_k_check(inst, W, 2).shape == (10,)
    assert assess(inst, W)[0] == bool(np.all(np.argmax(inst.scores(W), axis=0) == np.arange(10)))
    assert solve_max_margin(inst, max_iter=50).W.shape == (3, 6)
