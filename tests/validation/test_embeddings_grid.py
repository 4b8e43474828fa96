"""The grid of a capacity measured on N given facts never goes past N.

A file of N facts cannot give a trial at p > N.  The designs place points around the
Gaussian theory's p_c and step outwards; on given embeddings a point above N is measured
at p = N instead, and when every load tried stores, up to all N facts, the estimate says
"all N given facts stored: p_c > N" with the status ``all_facts_stored`` (not a fit).
"""

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from validation.capacity import CapacityDesign, CapacityEstimate, TrialCounts, estimate_embedding_capacity
from validation.capacity.fit import interval_text
from validation.cli import main

GLOSSARY = Path(__file__).resolve().parents[2] / "docs" / "glossary.md"


def _facts(path, n, d, seed=0):
    rng = np.random.default_rng(seed)
    np.savez(path, inputs=rng.standard_normal((n, d)) / math.sqrt(d),
             outputs=rng.standard_normal((n, d)) / math.sqrt(d))
    return path


@pytest.fixture(scope="module")
def few_facts(tmp_path_factory):
    # 12 facts at d = 6: the Gaussian theory puts p_c near 15, above N, so every load stores
    return _facts(tmp_path_factory.mktemp("few") / "few.npz", 12, 6)


@pytest.fixture(scope="module")
def near_facts(tmp_path_factory):
    # 20 facts at d = 7: p_c near 18, just below N; the grid around it reaches past 20
    return _facts(tmp_path_factory.mktemp("near") / "near.npz", 20, 7)


@pytest.mark.parametrize("design", ["grid", "bracket"])
def test_all_facts_stored_is_said_and_is_not_a_fit(few_facts, design):
    est = estimate_embedding_capacity(few_facts, seed=3, design=CapacityDesign(design, trials=3, rounds=1))
    ps = [c.p for c in est.curve]
    assert max(ps) == 12 and all(p <= 12 for p in ps), ps
    assert est.errors == 0 and all(c.stored == c.trials for c in est.curve)
    assert est.status == "all_facts_stored" and not est.converged
    assert "all 12 given facts stored: p_c > 12" in est.message
    assert "extrapolation" not in est.message
    assert math.isnan(est.p_c) and math.isnan(est.slope) and est.p_c_low == 12.0 and math.isinf(est.p_c_high)
    assert math.isclose(est.alpha_low, 12 * math.log(12) / 36, rel_tol=1e-12)
    data = json.loads(json.dumps(est.to_dict(), allow_nan=False))
    assert data["status"] == "all_facts_stored" and data["p_c"] is None and data["p_c_low"] == 12.0
    assert data["facts"] == 12 and max(c["p"] for c in data["curve"]) == 12


def test_a_transition_below_n_is_fitted_without_a_point_above_n(near_facts):
    est = estimate_embedding_capacity(near_facts, seed=0, design=CapacityDesign("grid", trials=4, rounds=2))
    ps = [c.p for c in est.curve]
    # the first grid around p_c ~ 18 spans 14..24: its points above 20 are measured at 20
    assert 20 in ps and max(ps) == 20, ps
    assert est.errors == 0 and "failed with an error" not in est.message
    assert est.status in ("ok", "separated") and est.converged
    assert est.p_c < 20 and est.curve[-1].stored < est.curve[-1].trials


def test_center_must_lie_within_the_facts(few_facts):
    with pytest.raises(ValueError, match=re.escape("center must lie in [2, N] = [2, 12]") + ".*got 13"):
        estimate_embedding_capacity(few_facts, design=CapacityDesign(trials=1, rounds=0, center=13))


def test_the_cli_says_p_c_above_n(few_facts, capsys):
    assert main(["capacity", "--embeddings", str(few_facts), "--trials", "3", "--rounds", "1", "--seed", "3",
                 "--workers", "0"]) == 0
    out = capsys.readouterr().out
    assert "measured  p_c = > 12  (all 12 given facts stored at every load tried: no fit" in out
    assert "status: all_facts_stored; all 12 given facts stored: p_c > 12" in out
    rows = [line.split() for line in out.splitlines() if re.match(r"^\d+\s", line)]
    assert rows and max(int(r[0]) for r in rows) == 12


def test_counts_with_a_limit():
    counts = TrialCounts(limit=10)
    counts.add(8, "stored")
    assert 8 in counts and 30 not in counts and not counts.stored_up_to_limit()   # 10 not tried yet
    counts.add(10, "stored")
    assert 30 in counts and counts.done(30) == 1 and counts.frequency(30) == 1.0
    assert counts.stored_up_to_limit()
    with pytest.raises(ValueError, match=re.escape("p must lie in [2, 10]") + ".*got 11"):
        counts.add(11, "stored")
    counts.add(9, "not_stored")
    assert not counts.stored_up_to_limit()
    unlimited = TrialCounts()
    unlimited.add(10, "stored")
    assert 30 not in unlimited and not unlimited.stored_up_to_limit()


def test_the_status_is_documented():
    assert CapacityEstimate.STATUSES[-1] == "failed"   # the failed status stays last (result contract)
    assert "all_facts_stored" in CapacityEstimate.STATUSES
    glossary = GLOSSARY.read_text()
    for status in CapacityEstimate.STATUSES:
        assert re.search(rf"^{status} \(", glossary, re.M), f"docs/glossary.md has no entry for status {status!r}"
    assert interval_text(math.nan, 12.0, math.inf, "all_facts_stored") == "above 12.0 (all given facts stored)"
