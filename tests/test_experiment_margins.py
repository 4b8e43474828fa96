"""The margins experiment: per-instance data, its summary with sampling errors, the verdicts and the scoreboard points.

No solver runs here: the tests read the committed data of ``experiments/margins`` and check
the reductions on small synthetic tables.
"""

from __future__ import annotations

import csv
import math
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the experiments live beside the package, not in it
    sys.path.insert(0, str(ROOT))

from experiments.margins import margins, margins_image  # noqa: E402
from experiments.scoreboard import measurements  # noqa: E402
from replica.common.validity import point_verdict  # noqa: E402
from replica.optimal.image_margin import TOLERANCE  # noqa: E402


def _csv(path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _row(t, status="stored", margin=1.0, bound=1.004, reached=1):
    return {"d": "16", "ensemble": "gaussian", "x": "0.90", "p": "55", "instance": str(t), "status": status,
            "margin": f"{margin:.6f}", "bound": f"{bound:.6f}", "gap_reached": str(reached), "seconds": "0.1"}


def test_summary_keeps_only_closed_gaps_in_the_means():
    rows = [_row(0, margin=1.0, bound=1.004), _row(1, margin=1.2, bound=1.205), _row(2, margin=0.8, bound=0.803),
            _row(3, status="not_stored", margin=-0.5, bound=0.001, reached=0),
            _row(4, margin=5.0, bound=9.0, reached=0)]                        # stored, gap open: counted, not averaged
    (s,) = margins.summarise(rows)
    assert (s["trials"], s["stored"], s["not_stored"], s["undecided"], s["n"]) == (5, 4, 1, 0, 3)
    m = np.array([1.0, 1.2, 0.8])
    b = np.array([1.004, 1.205, 0.803])
    se_m, se_b = m.std(ddof=1) / math.sqrt(3), b.std(ddof=1) / math.sqrt(3)
    assert float(s["margin"]) == pytest.approx(m.mean(), abs=1e-5)
    assert float(s["margin_se"]) == pytest.approx(se_m, abs=1e-5)
    t = measurements.t975(2)
    assert float(s["low"]) == pytest.approx(m.mean() - t * se_m, abs=2e-5)
    assert float(s["high"]) == pytest.approx(b.mean() + t * se_b, abs=2e-5)
    # the median runs over every decided instance, the not-stored one below every stored one
    assert float(s["median"]) == pytest.approx(1.0, abs=1e-5)


def test_median_interval_brackets_the_median():
    values = np.arange(1.0, 101.0)
    med, lo, hi = margins.median_interval(values)
    assert med == 50.5 and lo < med < hi and (lo, hi) == (40.0, 61.0)   # ranks n/2 -+ 1.96 sqrt(n)/2 (+1 above)


def test_committed_summary_is_the_reduction_of_the_instances():
    instances = margins.read_instances()
    assert instances, "margins_instances.csv is missing"
    assert [{k: str(v) for k, v in r.items()} for r in margins.summarise(instances)] == _csv(margins.MEASURED)
    # every planned instance is there, with its seed index and the first measurement's generator
    have = {}
    for r in instances:
        have.setdefault((int(r["d"]), r["ensemble"], int(r["p"])), []).append(int(r["instance"]))
        assert int(r["generator"]) == margins.GENERATOR
    for d, e, x, p, n in margins.plan_points():
        assert sorted(have[(d, e, p)]) == list(range(n)), (d, e, x)
        assert n >= 20 and n >= margins.FIRST[d]


def test_verdicts_are_the_scoreboard_rule_on_the_sampling_interval():
    rows = margins_image.joined()
    assert len(rows) == 30
    for r in rows:
        assert r["low"] <= r["margin"] <= r["bound"] <= r["high"]
        error, verdict = point_verdict(r["theory"], "interval", r["margin"], r["low"], r["high"], TOLERANCE)
        assert (r["verdict"], r["error"]) == (verdict, error)


def test_scoreboard_points_carry_n_and_the_sampling_interval():
    points = measurements.margins()
    assert len(points) == 30
    summary = {(int(r["d"]), r["ensemble"], int(r["p"])): r for r in _csv(margins.MEASURED)}
    for p in points:
        r = summary[(p["params"]["d"], p["params"].get("ensemble", "gaussian"), p["params"]["p"])]
        assert p["kind"] == "interval" and p["trials"] == int(r["n"]) >= 20
        assert (p["measured"], p["low"], p["high"]) == (float(r["margin"]), float(r["low"]), float(r["high"]))
        assert p["low"] < p["measured"] < float(r["bound"]) < p["high"]
        assert f"over {r['n']} instances" in p["measured_text"]
