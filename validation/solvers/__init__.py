"""Solvers for memory problems behind one interface: ``solve(instance, solver=...)``.

* ``hebbian`` -- ``W = sum_mu u_mu e_mu^T`` (best rank-m approximation for kappa < 1).
* ``optimal`` -- margin-maximising projected-gradient solver
  (:func:`validation.solvers.optimal.solve_optimal`).
* ``lp`` -- exact feasibility by linear programming (HiGHS), small d, full rank.
* ``adam`` -- Adam on the softmax cross-entropy (baseline with a step budget).

Every solver returns a :class:`Solution` whose ``stored`` flag is verified in
float64 by :func:`validation.recall.recall_check` on the returned W.  What
``status`` means for each solver is in ``notes/simulation.md``.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass, field

import numpy as np

from replica.common.checks import check_choice, check_kappa

__all__ = ["Solution", "solve", "solve_arguments", "SHARED_ARGUMENTS", "SOLVERS", "rank_for", "assess"]

SOLVERS = ("hebbian", "optimal", "lp", "adam")
STATUSES = ("stored", "not_stored", "undecided")

_DISPATCH = {
    "hebbian": ("validation.solvers.hebbian", "solve_hebbian"),
    "optimal": ("validation.solvers.optimal", "solve_optimal"),
    "lp": ("validation.solvers.lp", "solve_lp"),
    "adam": ("validation.solvers.adam", "solve_adam"),
}


def rank_for(d: int, kappa: float) -> int:
    """Rank ``m = max(1, round(kappa d))`` of a rank-constrained memory.

    Parameters
    ----------
    d : int
        Dimension.
    kappa : float
        Rank ratio in (0, 1].

    Returns
    -------
    int
        Python's ``round`` (half to even) is used: ``kappa d = 2.5 -> 2``.

    Raises
    ------
    ValueError
        If ``kappa`` is outside (0, 1].
    """
    kappa = float(check_kappa(kappa))
    return max(1, int(round(kappa * d)))


@dataclass(frozen=True, eq=False)
class Solution:
    """Result of :func:`solve`.

    Attributes
    ----------
    solver : str
    kappa : float
    rank : int
        ``max(1, round(kappa d))``.
    W : ndarray (d, d) or None
        The memory (float64).
    factors : tuple (Q, R) or None
        ``W = Q @ R.T`` with Q, R of shape (d, rank), when the solver works in factor form.
    stored : bool
        The returned W recalls all p inputs (verified in float64, ties fail).
    recall_fraction : float
        Fraction of recalled inputs.
    margin : float
        ``min_mu min_{rho != mu} (S[mu, mu] - S[rho, mu]) / (||W||_F / d)``; negative
        when some input is not recalled.
    converged : bool
        The solver reached its stopping criterion (not merely its budget).
    iterations : int
    seconds : float
        Wall time of the solve.
    status : {"stored", "not_stored", "undecided"}
        ``not_stored`` is a statement about the whole class of W (rank m) only for
        ``optimal`` and ``lp``; for ``hebbian`` it is about the rule's own W and
        ``adam`` never says ``not_stored``.  See ``message``.
    message : str
        What happened, in words.
    info : dict
        Solver-specific small diagnostics (JSON-friendly), e.g. the LP optimum.
    """

    solver: str
    kappa: float
    rank: int
    W: np.ndarray | None
    factors: tuple | None
    stored: bool
    recall_fraction: float
    margin: float
    converged: bool
    iterations: int
    seconds: float
    status: str
    message: str = ""
    info: dict = field(default_factory=dict)

    def matrix(self) -> np.ndarray:
        """The memory as a dense (d, d) array (``Q @ R.T`` when only factors are held).

        Returns
        -------
        ndarray (d, d)

        Raises
        ------
        ValueError
            If the solution holds neither W nor factors.
        """
        if self.W is not None:
            return self.W
        if self.factors is not None:
            Q, R = self.factors
            return Q @ R.T
        raise ValueError("this Solution holds neither W nor factors")

    def to_dict(self) -> dict:
        """JSON-friendly summary without arrays."""
        margin = float(self.margin)
        return {
            "solver": self.solver,
            "kappa": float(self.kappa),
            "rank": int(self.rank),
            "stored": bool(self.stored),
            "recall_fraction": float(self.recall_fraction),
            "margin": margin if math.isfinite(margin) else None,
            "converged": bool(self.converged),
            "iterations": int(self.iterations),
            "seconds": float(self.seconds),
            "status": self.status,
            "message": self.message,
            "info": dict(self.info),
        }


def assess(instance, W=None, *, images=None):
    """Verify a memory on an instance in float64.

    Parameters
    ----------
    instance : validation.Instance
    W : array_like (d, d), optional
        The memory.  Needed for the margin normalisation.
    images : array_like (p, d), optional
        ``images[mu] = W @ e_mu`` if already at hand (saves a product).

    Returns
    -------
    stored : bool
    recall_fraction : float
    margin : float
        Normalised margin (see :class:`Solution`).
    recalled : ndarray of bool (p,)

    Raises
    ------
    ValueError
        If ``W`` has the wrong shape.
    """
    from validation.recall import normalised_margin, recall_check

    mat = np.asarray(W, dtype=np.float64)
    if mat.shape != (instance.d, instance.d):
        raise ValueError(f"W must have shape (d, d) = {(instance.d, instance.d)}, got {mat.shape}")
    S = instance.scores(mat) if images is None else instance.scores_from_images(images)
    recalled, margins = recall_check(S)
    return (bool(recalled.all()), float(recalled.mean()), normalised_margin(margins, mat), recalled)


SHARED_ARGUMENTS = ("tol", "max_iter", "time_limit", "seed", "refine")
"""Arguments that every solver understands under the same name (see :func:`solve`)."""


def solve_arguments(settings) -> dict:
    """Split a flat settings mapping into :func:`solve` keyword arguments.

    Sweeps store one flat dictionary of solver settings per task; this puts the shared
    names (:data:`SHARED_ARGUMENTS`) into their own keywords and everything else into
    ``options``.

    Parameters
    ----------
    settings : mapping or None

    Returns
    -------
    dict
        Keyword arguments for :func:`solve` (without ``instance``, ``solver``, ``kappa``).
    """
    flat = dict(settings or {})
    out = {name: flat.pop(name) for name in SHARED_ARGUMENTS if name in flat}
    if flat:
        out["options"] = flat
    return out


def solve(instance, solver="optimal", *, kappa=1.0, tol=None, max_iter=None, time_limit=None,
          seed=None, refine=None, options=None) -> Solution:
    """Solve a memory problem: find W that recalls every input, or decide it cannot.

    Parameters
    ----------
    instance : validation.Instance
        From :func:`validation.make_instance`.
    solver : {"optimal", "hebbian", "lp", "adam"}
        See the module docstring and ``notes/simulation.md``.
    kappa : float
        Rank ratio in (0, 1]; the rank is ``max(1, round(kappa d))``.  ``lp``
        supports only ``kappa = 1``.
    tol : float, optional
        The solver's decision tolerance (``optimal``: ``not_stored`` when no W can
        reach a normalised margin above ``tol``; ``lp``: threshold on the LP optimum).
        ``None`` takes the solver's default.  Not used by ``hebbian`` and ``adam``.
    max_iter : int, optional
        Iteration budget (``optimal``: L-BFGS iterations of the decision phase;
        ``adam``: steps; ``lp``: constraint-generation rounds).
    time_limit : float, optional
        Wall-time budget in seconds; the status is ``undecided`` when it runs out.
    seed : None, int, SeedSequence or Generator, optional
        For solvers with random initialisation (``adam`` at ``kappa < 1``); the
        deterministic solvers ignore it.  ``None`` is the package default seed.
    refine : bool, optional
        ``optimal`` only: after ``stored``, continue towards the max-margin W.
    options : mapping, optional
        Solver-specific settings (``notes/simulation.md`` lists them per solver).
        Unknown names raise ``ValueError``.

    Returns
    -------
    Solution

    Raises
    ------
    ValueError
        For an unknown solver, kappa outside (0, 1], an instance that is not an
        :class:`validation.Instance`, bad or unknown options, an argument the solver
        does not take, or an LP too large to handle.
    """
    from validation.ensembles import Instance

    if not isinstance(instance, Instance):
        raise ValueError(f"instance must be a validation.Instance, got {type(instance).__name__}")
    solver = check_choice(solver, "solver", SOLVERS)
    kappa = float(check_kappa(kappa))
    if options is not None and not isinstance(options, dict):
        try:
            options = dict(options)
        except (TypeError, ValueError):
            raise ValueError(f"options must be a mapping of solver settings, got "
                             f"{type(options).__name__}") from None
    kwargs = _solver_keywords(solver, dict(options or {}), tol=tol, max_iter=max_iter,
                              time_limit=time_limit, seed=seed, refine=refine)
    module_name, func_name = _DISPATCH[solver]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        if getattr(exc, "name", None) == module_name:
            raise ImportError(
                f"solver {solver!r} needs the module {module_name}, which is not available "
                f"in this installation ({exc})") from exc
        raise
    function = getattr(module, func_name)
    _check_option_names(solver, function, kwargs)
    solution = function(instance, kappa=kappa, **kwargs)
    if solution.status not in STATUSES:  # pragma: no cover - solver bug guard
        raise RuntimeError(f"solver {solver!r} returned unknown status {solution.status!r}")
    return solution


# How each solver spells the shared arguments; None: the solver does not take it.
_SPELLING = {
    "optimal": {"tol": "tol", "max_iter": "max_iterations", "time_limit": "time_limit",
                "seed": None, "refine": "refine"},
    "lp": {"tol": "tol", "max_iter": "max_rounds", "time_limit": "time_limit",
           "seed": None, "refine": None},
    "adam": {"tol": None, "max_iter": "steps", "time_limit": None, "seed": "seed",
             "refine": None},
    "hebbian": {"tol": None, "max_iter": None, "time_limit": None, "seed": None,
                "refine": None},
}
_IGNORED = ("seed",)  # harmless for deterministic solvers


def _check_option_names(solver, function, options):
    import inspect

    params = inspect.signature(function).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return  # the solver checks its own option names
    known = [name for name, p in params.items()
             if p.kind is inspect.Parameter.KEYWORD_ONLY]
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(map(repr, unknown))} for solver {solver!r}; "
                         f"valid options: {', '.join(known) or 'none'}")


def _solver_keywords(solver, options, **shared):
    spelling = _SPELLING[solver]
    for name, value in shared.items():
        if value is None:
            continue
        target = spelling[name]
        if target is None:
            if name in _IGNORED:
                continue
            raise ValueError(f"solver {solver!r} does not take {name}; got {name}={value!r}")
        if target in options:
            raise ValueError(f"{name} given twice (as {name}= and in options[{target!r}])")
        options[target] = value
    return options
