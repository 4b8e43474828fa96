"""Cross-check: the ``optimal`` solver's decisions against the exact LP (``lp``).

Both solvers are independent: ``optimal`` is L-BFGS on the squared hinge with a
recall certificate (stored) and a Gordan-type margin bound (not stored), see
``notes/optimal_solver.md``; ``lp`` is HiGHS on the margin LP (``notes/simulation.md``).
The instances are seeded and span both sides of the finite-size threshold
``replica.optimal.finite_size.capacity(d).p_c`` (fractions 0.85 .. 1.15).

Default run: 64 instances at d = 6 and 8 (OP and DP).  ``slow``: 48 more at d = 10,
12 and 16.
"""

import pytest

from replica.optimal.finite_size import capacity
from validation import make_instance, solve
from validation.solvers import assess

FRACTIONS = (0.85, 0.95, 1.05, 1.15)


def _cases(dims, seeds):
    cases = []
    for d in dims:
        p_c = capacity(d).p_c
        for frac in FRACTIONS:
            p = max(3, int(round(frac * p_c)))
            for problem in ("op", "dp"):
                for seed in seeds:
                    cases.append((d, p, problem, 1000 * d + seed))
    return cases


def _check(cases):
    decisions = []
    for d, p, problem, seed in cases:
        inst = make_instance(d, p, problem=problem, seed=seed)
        ours = solve(inst, "optimal", refine=False)
        exact = solve(inst, "lp")
        assert exact.status in ("stored", "not_stored"), (d, p, problem, seed, exact.message)
        assert ours.status == exact.status, (d, p, problem, seed, ours.message, exact.message)
        # the decision against an independent float64 recall check of the returned W
        assert assess(inst, ours.W)[0] == (ours.status == "stored")
        decisions.append(ours.status)
    # the set really spans the threshold
    assert decisions.count("stored") >= len(cases) // 5
    assert decisions.count("not_stored") >= len(cases) // 5


def test_optimal_agrees_with_lp_small_d():
    fast = _cases((6, 8), range(4))
    assert len(fast) == 64
    _check(fast)


@pytest.mark.slow
def test_optimal_agrees_with_lp_larger_d():
    slow = _cases((10, 12), range(2)) + _cases((16,), range(1))
    assert len(slow) == 40
    _check(slow)
