"""The best recall count at the integer p (replica.variants.accuracy_finite).

References: the knapsack on given costs by hand; the replica-symmetric count
``replica.variants.optimal_accuracy`` (the p -> infinity value of the same model); the certified
brackets of ``experiments/accuracy/accuracy_search.csv`` (give-up search below, MILP bound
above: an independent solver).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

import replica
from replica.variants.accuracy_finite import kept_counts

DATA = Path(__file__).resolve().parents[2] / "experiments" / "accuracy" / "accuracy_search.csv"


def test_the_knapsack_keeps_the_cheapest_that_fit():
    costs = np.array([[3.0, 1.0, 2.0], [5.0, 5.0, 5.0], [np.inf, 0.5, 0.5]])
    assert kept_counts(costs, 3.5).tolist() == [2, 0, 2]


def test_below_capacity_every_fact_is_kept():
    r = replica.variants.finite_size_accuracy(16, 20, instances=2000, size=2000)
    assert r.accuracy > 0.999  # 20 facts cost far less than the budget 16^2
    assert r.status == "ok" and r.validity is not None


def test_the_integer_count_lies_about_half_a_fact_below_the_replica_symmetric_one():
    for d, p in ((8, 28), (10, 38)):
        finite = replica.variants.finite_size_accuracy(d, p, hull=False)
        rs = replica.variants.optimal_accuracy(d, p)
        assert 0.3 < p * (rs.accuracy - finite.accuracy) < 1.2


@pytest.mark.parametrize("d, ratio", [(6, "1.25"), (8, "1.25")])
def test_within_its_tolerance_of_the_closed_certified_brackets(d, ratio):
    with DATA.open(newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if (r["problem"], r["d"], r["ratio"]) == ("dp", str(d), ratio)]
    p = int(rows[0]["p"])
    searches = ("greedy", "add_back", "swaps", "restarts_2", "restarts_4", "restarts_8")
    lower = np.mean([max(int(r[k]) for k in searches) for r in rows]) / p
    upper = np.mean([int(r["bound_upper"]) for r in rows]) / p
    theory = replica.variants.finite_size_accuracy(d, p).accuracy
    assert lower - 0.03 <= theory <= upper + 0.03, (theory, lower, upper)
    assert replica.variants.optimal_accuracy(d, p).accuracy > theory  # the correction lowers the count


def test_bad_arguments_are_refused_with_their_name():
    with pytest.raises(ValueError, match="p"):
        replica.variants.finite_size_accuracy(8, 1)
    with pytest.raises(ValueError, match="kappa"):
        replica.variants.finite_size_accuracy(8, 28, kappa=1.5)
