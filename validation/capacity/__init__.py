"""Measured storage capacity: P(stored) on an adaptive grid of p and the p_c where it is 1/2.

For given (d, problem, solver, kappa, ensemble) every point of a grid of p gets
``trials`` independent instances (seeds from ``SeedSequence(seed, spawn_key=(p, trial))``,
see :func:`validation.runtime.sweep.task_seed`).  The first points are placed by a *design*
(:class:`CapacityDesign`: a log-spaced grid around the theory's finite-size p_c, or a
bracketing walk from it), and refined where the transition is: a logistic model in ln p,

    P(stored | p) = 1 / (1 + exp(slope * (ln p - ln p_c))),

is fitted to the binomial counts by maximum likelihood (:func:`fit_logistic`), and new
points go to the fitted p_c and to the fitted 20 % and 80 % points.  The 95 % interval
of p_c is the profile-likelihood interval of ln p_c (slope profiled out; deviance
<= 3.84).  ``undecided`` trials (a solver that stopped without deciding) and ``error``
trials are counted and reported, never counted as stored or not stored.

With ``criterion="accuracy:A"`` a trial counts as stored when the returned W recalls
at least the fraction ``A`` of the inputs (its ``recall_fraction``), and p_c is the
capacity at accuracy ``A`` (theory: ``replica.accuracy_capacity``); the designs and the
fit are the same.  For solvers that do not maximise the accuracy (``optimal`` and ``lp``
return the squared-hinge minimiser or the LP's W above the all-stored capacity,
``adam`` its trained W) that p_c is a lower bound on the accuracy capacity of the best
memory (``notes/recall_accuracy.md``, "In simulation").

alpha = p_c ln p_c / d^2 (natural log).

See ``notes/capacity_estimation.md`` for the design and its justification.

Modules: :mod:`~validation.capacity.loads` (alpha(p) and p(alpha)),
:mod:`~validation.capacity.theory` (the prediction beside a measurement),
:mod:`~validation.capacity.fit` (logistic fit and interval),
:mod:`~validation.capacity.results` (result types), :mod:`~validation.capacity.trials`
(the storage trial and the counting of verdicts), :mod:`~validation.capacity.settings`
(the ``design`` and ``options`` of a measurement, :class:`CapacityDesign` and
:class:`CapacityOptions`, and the measurement's task), :mod:`~validation.capacity.design` (where the
points go), :mod:`~validation.capacity.driver` (:func:`estimate_capacity`) and
:mod:`~validation.capacity.compare` (the table of ``validation compare``) and
:mod:`~validation.capacity.embeddings` (:func:`estimate_embedding_capacity`: facts sampled
from given embeddings, ``validation capacity --embeddings``).
"""

from __future__ import annotations

from ..instances.ensembles import ENSEMBLES, PROBLEMS
from ..solvers import SOLVERS
from .compare import TABLE_ROWS, comparison_markdown, comparison_row
from .driver import estimate_capacity
from .embeddings import EMBEDDING_TRIAL, embedding_theory, estimate_embedding_capacity, load_embeddings, sample_facts
from .fit import LogisticFit, fit_logistic
from .loads import load, p_from_load
from .results import CapacityEstimate, CurvePoint
from .settings import BRACKET_FROM_D, DESIGNS, CapacityDesign, CapacityOptions, SweepSettings, parse_criterion
from .theory import theory_capacity
from .trials import STORAGE_TRIAL, TrialCounts, record_status, storage_trial

__all__ = ["CurvePoint", "CapacityEstimate", "CapacityDesign", "CapacityOptions", "SweepSettings", "LogisticFit",
           "estimate_capacity", "fit_logistic", "theory_capacity", "storage_trial", "load", "parse_criterion",
           "DESIGNS", "PROBLEMS", "SOLVERS", "ENSEMBLES",
           "p_from_load", "record_status", "TrialCounts", "TABLE_ROWS", "comparison_row", "comparison_markdown",
           "STORAGE_TRIAL", "BRACKET_FROM_D", "estimate_embedding_capacity", "load_embeddings", "sample_facts",
           "embedding_theory", "EMBEDDING_TRIAL"]
