"""Capacity of given embeddings: facts sampled from a synthetic ``.npz``, the sweep, the CLI."""

import math

import numpy as np
import pytest

from validation.capacity import CapacityDesign, estimate_embedding_capacity, load_embeddings, sample_facts
from validation.cli import main


@pytest.fixture(scope="module")
def gaussian_npz(tmp_path_factory):
    rng = np.random.default_rng(0)
    path = tmp_path_factory.mktemp("emb") / "gaussian.npz"
    np.savez(path, inputs=rng.standard_normal((300, 6)) / math.sqrt(6),
             outputs=rng.standard_normal((300, 6)) / math.sqrt(6))
    return path


@pytest.fixture(scope="module")
def estimate(gaussian_npz):
    return estimate_embedding_capacity(gaussian_npz, seed=7, design=CapacityDesign(trials=4, rounds=0))


def test_sampling_is_seeded_and_keeps_the_answers():
    rng = np.random.default_rng(1)
    inputs, outputs = rng.standard_normal((50, 5)), rng.standard_normal((10, 5))
    answers = np.arange(50) % 10
    a, b = sample_facts(inputs, outputs, answers, 20, seed=3), sample_facts(inputs, outputs, answers, 20, seed=3)
    assert np.array_equal(a.inputs, b.inputs) and np.array_equal(a.targets, b.targets)
    assert not np.array_equal(a.inputs, sample_facts(inputs, outputs, answers, 20, seed=4).inputs)
    rows = [int(np.flatnonzero((inputs == x).all(axis=1))[0]) for x in a.inputs]
    assert rows == sorted(rows) and len(set(rows)) == 20
    assert np.array_equal(a.targets, outputs[answers[rows]])   # every fact keeps its answer
    assert a.outputs == len(set(answers[rows])) and a.n_candidates <= 10
    with pytest.raises(ValueError, match="p must lie in"):
        sample_facts(inputs, outputs, answers, 51, seed=3)


def test_gaussian_embeddings_near_the_gaussian_theory(estimate):
    assert estimate.status in ("ok", "separated") and estimate.ensemble == "given"
    assert (estimate.d, estimate.d_in, estimate.d_out, estimate.facts) == (6, 6, 6, 300)
    assert estimate.theory["source"] == "replica.capacity"
    assert abs(math.log(estimate.p_c / estimate.theory["p_c"])) < 0.25
    assert math.isclose(estimate.alpha, estimate.p_c * math.log(estimate.p_c) / 36, rel_tol=1e-12)
    assert math.isclose(estimate.bits_per_parameter, estimate.p_c * math.log2(estimate.p_c) / 36, rel_tol=1e-12)
    data = estimate.to_dict()
    assert data["embeddings"].endswith("gaussian.npz") and data["facts"] == 300
    assert "embeddings" not in data["solver_options"]


def test_reproducible(gaussian_npz, estimate):
    again = estimate_embedding_capacity(gaussian_npz, seed=7, design=CapacityDesign(trials=4, rounds=0))
    assert again.p_c == estimate.p_c
    assert [c.stored for c in again.curve] == [c.stored for c in estimate.curve]


def test_rectangular_many_to_one(tmp_path):
    rng = np.random.default_rng(2)
    path = tmp_path / "rect.npz"
    np.savez(path, inputs=rng.standard_normal((200, 5)), outputs=rng.standard_normal((150, 8)),
             answers=rng.integers(0, 150, 200))
    est = estimate_embedding_capacity(path, "hebbian", seed=1, design=CapacityDesign(trials=3, rounds=0))
    assert (est.d, est.d_in, est.d_out) == (5, 5, 8)
    assert est.theory["source"] == "replica.variants.rectangular_hebbian_capacity"
    for c in est.curve:
        assert math.isclose(c.alpha, c.p * math.log(c.p) / 40, rel_tol=1e-12)
        assert math.isclose(c.bits_per_parameter, c.p * math.log2(c.p) / 40, rel_tol=1e-12)
    with pytest.raises(ValueError, match="rectangular"):
        estimate_embedding_capacity(path, "adam", design=CapacityDesign(trials=1, rounds=0))


def test_bad_files(tmp_path):
    path = tmp_path / "bad.npz"
    np.savez(path, inputs=np.ones((4, 3)))
    with pytest.raises(ValueError, match="no array 'outputs'"):
        load_embeddings(path)
    nan = tmp_path / "nan.npz"
    x = np.random.default_rng(0).standard_normal((4, 3))
    x[0, 0] = np.nan
    np.savez(nan, inputs=x, outputs=np.eye(4, 3))
    with pytest.raises(ValueError, match="inputs must be finite"):
        load_embeddings(nan)
    with pytest.raises(ValueError, match="cannot be read"):
        load_embeddings(tmp_path / "missing.npz")


def test_cli(gaussian_npz, capsys):
    assert main(["capacity", "--embeddings", str(gaussian_npz), "--trials", "4", "--rounds", "0", "--seed", "7",
                 "--format", "csv"]) == 0
    out = capsys.readouterr().out
    grid, summary = out.split("\n\n")
    assert grid.splitlines()[0].endswith(",bits_per_parameter")
    values = dict(line.split(",", 1) for line in summary.strip().splitlines()[1:])
    assert values["facts"] == "300" and values["theory_source"] == "replica.capacity"
    assert float(values["bits_per_parameter"]) > 0
    assert main(["capacity", "--embeddings", str(gaussian_npz), "--d", "6"]) == 2
    assert "--d does not apply with --embeddings" in capsys.readouterr().err
    assert main(["capacity"]) == 2
    assert "--d is required" in capsys.readouterr().err
