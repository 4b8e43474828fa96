"""Where the trials of a capacity estimate go: the first points of a design, the expansion, the refinement.

One function per design places the first points (:data:`STARTS`: ``"grid"``,
``"bracket"``); :func:`expand` extends them until P(stored) = 1/2 is bracketed and
:func:`refine` adds points at the fitted p_c and the fitted 20 % and 80 % points
(``notes/capacity_estimation.md``, "Grid").  :class:`PointRunner` runs the trials.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..runtime.sweep import Task, run_tasks
from .settings import CapacityDesign, SweepSettings
from .trials import TrialCounts, check_trials

__all__ = ["PointRunner", "STARTS", "expand", "refine"]


class PointRunner:
    """Runs ``trials`` more trials at grid points through :func:`validation.runtime.sweep.run_tasks`."""

    def __init__(self, template: Task, trials: int, sweep: SweepSettings, counts: TrialCounts):
        self.template, self.trials, self.sweep, self.counts = template, trials, sweep, counts
        self.first_error = None   # text of the first trial that failed with an error

    def run(self, ps) -> None:
        m = self.template
        check_trials(m, max(ps))
        first = {p: self.counts.done(p) for p in ps}
        tasks = [dataclasses.replace(m, p=int(p), trial=t) for p in ps for t in range(first[p], first[p] + self.trials)]
        rep = run_tasks(tasks, store=self.sweep.store, executor=self.sweep.executor, progress=self.sweep.progress,
                        desc=f"{m.problem}/{m.solver} d={m.d} kappa={m.kappa:g}")
        for t in tasks:
            record = rep.records[t]
            if record["status"] == "error" and self.first_error is None:
                self.first_error = f"p={t.p} trial={t.trial}: {record.get('error')}"
            self.counts.add(t.p, self.counts.classify(record))


def _snap(ps):
    return sorted({max(2, int(round(p))) for p in ps})


def _start_grid(runner: PointRunner, design: CapacityDesign, center: float) -> None:
    """``initial_points`` log-spaced points over ``exp(+-initial_width)`` around ``center``."""
    w = design.initial_width
    runner.run(_snap(center * np.exp(np.linspace(-w, w, design.initial_points))))


def _start_bracket(runner: PointRunner, design: CapacityDesign, center: float) -> None:
    """``center``, then single points ``exp(+-step)`` away (step doubling) until P = 1/2 is bracketed."""
    counts = runner.counts
    last = _snap([center])[0]
    runner.run([last])
    step = design.bracket_step
    for _ in range(design.max_expansions):
        high, low = counts.sides()
        if (high and low) or counts.mostly_undecided(last):
            break
        up = counts.frequency(last) >= 0.5  # mostly stored here: P = 1/2 lies at larger p
        new = [p for p in _snap([last * math.exp(step if up else -step)]) if p not in counts]
        if not new:
            break
        last = new[0]
        runner.run([last])
        step *= 2


STARTS = {"grid": _start_grid, "bracket": _start_bracket}
"""The function placing the first points of each design: ``STARTS[kind](runner, design, center)``."""


def expand(runner: PointRunner, design: CapacityDesign) -> None:
    """Extend outwards in steps of ``exp(2 initial_width)`` until the frequencies bracket 1/2."""
    counts = runner.counts
    step = 2 * design.initial_width
    for _ in range(design.max_expansions):
        if not counts.any_decided():
            break  # nothing decided (every trial undecided or failed): more points will not help
        have_high, have_low = counts.sides()
        if have_high and have_low:
            break
        ps = counts.points()
        if not have_low:    # everything stored: go to larger p
            new = [ps[-1] * math.exp(step)]
        else:               # nothing stored: go to smaller p
            new = [max(2.0, ps[0] * math.exp(-step))]
        new = [p for p in _snap(new) if p not in counts]
        if not new:
            break
        runner.run(new)
        if counts.mostly_undecided(new[0]):
            break  # mostly undecided out there: going further would not bracket P = 1/2


def refine(runner: PointRunner, design: CapacityDesign) -> None:
    """``rounds`` rounds of new trials at the fitted p_c and the fitted 80 % and 20 % points."""
    counts = runner.counts
    for _ in range(design.rounds):
        fit = counts.fit()
        if fit.status == "failed":
            break
        new = _snap([math.exp(fit.log_p_c), fit.quantile(0.8), fit.quantile(0.2)])
        # keep new points near the data (a flat fit can put quantiles far away)
        ps = counts.points()
        new = [p for p in new if ps[0] / 2 <= p <= ps[-1] * 2]
        if new:
            runner.run(new)
