"""``Instance.from_embeddings``: given vectors solved as the drawn OP instance is, and bad input refused.

A ``make_instance`` OP instance rebuilt from its own arrays has the same arrays bit for bit, so
every solver must return the same status, margin and W (compared exactly: no tolerance).
"""

import numpy as np
import pytest

from validation import EmbeddingModel, FactSettings, Instance, make_instance, solve

SHAPES = {
    "square": dict(d=12, p=40),
    "square-over-capacity": dict(d=12, p=70),
    "rectangular": dict(d=None, p=40, embeddings=EmbeddingModel(d_in=10, d_out=14)),
    "many-to-one": dict(d=12, p=60, facts=FactSettings(outputs=15)),
    "rectangular-many-to-one": dict(d=None, p=50, embeddings=EmbeddingModel(d_in=14, d_out=9),
                                    facts=FactSettings(outputs=20)),
}


def _rebuilt(inst):
    if inst.answer_map is None:
        return Instance.from_embeddings(inst.inputs, inst.targets, seed=inst.seed)
    return Instance.from_embeddings(inst.inputs, inst.output_vectors, answers=inst.answer_map, seed=inst.seed)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_same_arrays_as_the_drawn_instance(shape):
    inst = make_instance(problem="op", seed=3, **SHAPES[shape])
    given = _rebuilt(inst)
    assert (given.d, given.p, given.d_in, given.d_out, given.outputs) == (inst.d, inst.p, inst.d_in, inst.d_out,
                                                                          inst.outputs)
    assert given.problem == "op" and given.ensemble == "given"
    for name in ("inputs", "targets", "table", "target_index"):
        assert np.array_equal(getattr(given, name), getattr(inst, name)), name
    assert not given.inputs.flags.writeable and not given.targets.flags.writeable


@pytest.mark.parametrize("solver", ["optimal", "lp", "hebbian"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_same_decision_and_margin(shape, solver):
    inst = make_instance(problem="op", seed=3, **SHAPES[shape])
    a, b = solve(inst, solver), solve(_rebuilt(inst), solver)
    assert (a.status, a.stored) == (b.status, b.stored)
    assert a.margin == b.margin   # bit for bit: the same float64 arrays through the same arithmetic
    assert np.array_equal(a.W, b.W)


def test_both_verdicts_are_covered():
    stored = {shape: solve(make_instance(problem="op", seed=3, **SHAPES[shape]), "optimal").stored
              for shape in ("square", "square-over-capacity")}
    assert stored == {"square": True, "square-over-capacity": False}


@pytest.mark.parametrize("solver", ["adam", "svp"])
def test_square_only_solvers(solver):
    inst = make_instance(12, 40, "op", seed=3)
    a, b = solve(inst, solver, seed=5), solve(_rebuilt(inst), solver, seed=5)
    assert (a.status, a.margin) == (b.status, b.margin)
    assert np.array_equal(a.W, b.W)


def test_outputs_no_fact_answers_compete():
    rng = np.random.default_rng(0)
    inputs, outputs = rng.standard_normal((20, 16)), rng.standard_normal((60, 16))
    answers = rng.permutation(60)[:20]
    inst = Instance.from_embeddings(inputs, outputs, answers, weights=np.arange(1.0, 21.0))
    assert inst.n_candidates == 60 and inst.outputs == 60 and inst.weights_normalised
    assert np.isclose(inst.weights.sum(), 1.0)
    sol = solve(inst, "optimal")
    assert sol.stored
    scores = inst.scores(sol.W)
    best = np.argmax(scores, axis=0)
    assert np.array_equal(best, answers)   # the distractor rows never win


def test_default_answers_and_integral_float_answers():
    rng = np.random.default_rng(1)
    inputs, outputs = rng.standard_normal((6, 4)), rng.standard_normal((6, 4))
    a = Instance.from_embeddings(inputs, outputs)
    assert a.outputs is None and a.answer_map is None and np.array_equal(a.targets, outputs)
    b = Instance.from_embeddings(inputs, outputs[:3], answers=np.array([0.0, 1.0, 2.0, 0.0, 1.0, 2.0]))
    assert b.answer_map.dtype == np.int64 and b.outputs == 3


def _bad_cases():
    rng = np.random.default_rng(2)
    X, U = rng.standard_normal((5, 4)), rng.standard_normal((5, 4))
    nan_x, inf_u = X.copy(), U.copy()
    nan_x[1, 2], inf_u[3, 0] = np.nan, np.inf
    dup_both, dup_one = U.copy(), rng.standard_normal((7, 4))
    dup_both[4] = dup_both[1]
    dup_one[6] = dup_one[2]
    same_x = X.copy()
    same_x[3] = same_x[0]
    return [
        ("nan", dict(inputs=nan_x, outputs=U), "inputs must be finite"),
        ("inf", dict(inputs=X, outputs=inf_u), "outputs must be finite"),
        ("1-d inputs", dict(inputs=X[0], outputs=U), "inputs must be a 2-D array"),
        ("3-d outputs", dict(inputs=X, outputs=U[None]), "outputs must be a 2-D array"),
        ("one output", dict(inputs=X, outputs=U[:1], answers=[0] * 5), "outputs must have at least 2 rows"),
        ("text", dict(inputs=X.astype(str), outputs=U), "inputs must be an array of real numbers"),
        ("K != p", dict(inputs=X, outputs=U[:4]), "answers is needed"),
        ("answers length", dict(inputs=X, outputs=U, answers=[0, 1, 2]), "answers must have one entry per fact"),
        ("answers range", dict(inputs=X, outputs=U, answers=[0, 1, 2, 3, 5]), "answers must be rows of outputs"),
        ("negative answer", dict(inputs=X, outputs=U, answers=[0, 1, 2, 3, -1]), "answers must be rows"),
        ("float answers", dict(inputs=X, outputs=U, answers=[0, 1, 2.5, 3, 4]), "answers must be integers"),
        ("bool answers", dict(inputs=X, outputs=U, answers=[True] * 5), "answers must be integers"),
        ("both answers identical", dict(inputs=X, outputs=dup_both), "outputs rows 1 and 4 are identical and "
                                                                      "both are answers"),
        ("answer tied with a distractor", dict(inputs=X, outputs=dup_one, answers=[0, 1, 2, 3, 4]),
         "outputs row 2 .* identical to row 6"),
        ("identical inputs", dict(inputs=same_x, outputs=U), "inputs rows 0 and 3 are identical"),
        ("weights length", dict(inputs=X, outputs=U, weights=[1.0, 2.0]), "weights must have length"),
        ("negative weight", dict(inputs=X, outputs=U, weights=[1.0, 2.0, -1.0, 1.0, 1.0]),
         "weights must be finite and positive"),
    ]


@pytest.mark.parametrize("name, kwargs, message", _bad_cases(), ids=[c[0] for c in _bad_cases()])
def test_bad_input_is_refused_naming_the_argument(name, kwargs, message):
    with pytest.raises(ValueError, match=message) as info:
        Instance.from_embeddings(**kwargs)
    assert "\n" not in str(info.value)
    if "both are answers" in message or "identical to row" in message or "inputs rows" in message:
        assert "can never" in str(info.value)


def test_identical_inputs_with_the_same_answer_are_allowed():
    rng = np.random.default_rng(3)
    X, U = rng.standard_normal((5, 4)), rng.standard_normal((3, 4))
    X[4] = X[0]
    inst = Instance.from_embeddings(X, U, answers=[0, 1, 2, 1, 0])
    assert inst.p == 5
