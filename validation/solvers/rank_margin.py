"""Max-margin W at rank m by alternating convex half-steps, each certified.

At rank ``m = max(1, round(kappa d))`` the max-margin problem

    minimise (1/2) ||W||_F^2   subject to   m_i(W) = <A_i, W>_F >= 1,   rank W <= m,

(``A_i = (t_mu - u_rho) e_mu^T``; OP or DP constraints as in
:mod:`validation.solvers.maxmargin`) is not convex.  With ``W = Q X^T`` for a fixed
orthonormal ``Q`` (d x m), or ``W = Y R^T`` for a fixed orthonormal ``R``, it is the
convex QP of the full-rank solver restricted to a linear subspace ``S``, whose dual
replaces every ``A_i`` by its projection ``P_S A_i``:

    S_Q = {Q X^T}:   P_Q A_i = (Q Q^T (t_mu - u_rho)) e_mu^T    (projected constraint vectors),
    S_R = {Y R^T}:   P_R A_i = (t_mu - u_rho) (R R^T e_mu)^T    (projected inputs).

The certified solver :func:`~validation.solvers.maxmargin.solve_max_margin` solves each
such half-step exactly (its :class:`~validation.solvers.engine.dual_ascent.MaxMarginData` carries
the projection); its full passes score with ``W`` itself, which lies in ``S``.  The
alternation sets ``Q`` to the column space
of the current ``W``, solves in ``S_Q``, sets ``R`` to the row space, solves in ``S_R``,
and repeats.  The current ``W`` lies in both subspaces, so no half-step lowers the
verified normalised margin.  Every half-step has its own certified gap (relative to the
optimum *in its subspace*); the end point is a stationary point of the alternation, not
a certified rank-m optimum (the problem is not convex).

Two upper bounds on every rank-m normalised margin come from a full-rank solve: its
certified bound ``d ||W(lam)||_F / sum lam`` and the tighter rank-m bound
``d ||W(lam)||_(m) / sum lam`` (``||G||_(m)`` the root of the sum of the m largest
squared singular values: ``<G, W> <= ||G||_(m) ||W||_F`` for rank-m ``W``).  See
``notes/max_margin.md``, section 9.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from replica.common.checks import check_int, check_real, check_scalar_kappa
from replica.common.results import Result
from replica.common.seeds import as_generator

from ..instances.ensembles import check_square_instance
from .engine.dual_ascent import DualAscentRun
from .engine.dual_working_set import MaxMarginData, MaxMarginOptions
from .engine.memories import balanced_factors, truncated_svd
from .engine.options import SolverOptions
from .engine.solution import rank_for
from .engine.warmup import warm_up_max_margin

__all__ = ["solve_rank_max_margin", "RankMarginResult", "RankMarginOptions"]

_BLOCK_ELEMENTS = 1 << 22       # scores per block of the float64 verification


@dataclass(frozen=True)
class RankMarginOptions(SolverOptions):
    """Settings of :func:`solve_rank_max_margin` (``notes/max_margin.md``, section 9).

    Attributes
    ----------
    step_tol : float
        Certified relative gap at which a half-step stops (default 0.005), in (0, 1).
    step_max_iter : int
        Most sweeps of one half-step (default 20000, >= 1).
    full_rank : bool
        Also solve the full-rank max margin (default True): the bounds
        ``full_rank_bound`` and ``rank_bound`` and ``full_rank_W``.
    full_rank_tol : float
        Certified gap of that solve (default 0.01), in (0, 1).
    starts : int
        Alternations run (default 1, >= 1): start 0 from ``W0``, the others from random
        Gaussian factors (``seed``); the best verified margin is returned.
    max_margin : MaxMarginOptions or mapping or None
        Working-set and sweep settings of every solve (default: :class:`MaxMarginOptions`).

    Raises
    ------
    ValueError
        For a value out of range, naming the option.
    """

    SOLVER: ClassVar[str] = "rank_max_margin"

    step_tol: float = 0.005
    step_max_iter: int = 20000
    full_rank: bool = True
    full_rank_tol: float = 0.01
    starts: int = 1
    max_margin: MaxMarginOptions | None = None

    def __post_init__(self):
        for name in ("step_tol", "full_rank_tol"):
            self._set(name, check_real(getattr(self, name), name, low=0.0, high=1.0,
                                       low_open=True, high_open=True))
        for name in ("step_max_iter", "starts"):
            self._set(name, check_int(getattr(self, name), name, low=1))
        if not isinstance(self.full_rank, (bool, np.bool_)):
            raise ValueError(f"full_rank must be True or False, got {self.full_rank!r}")
        self._set("max_margin", MaxMarginOptions.coerce(self.max_margin))


@dataclass(frozen=True, eq=False)
class RankMarginResult(Result):
    """Result of :func:`solve_rank_max_margin` (``notes/max_margin.md``, section 9).

    Attributes
    ----------
    W : ndarray, float64, shape (d, d)
        The rank-m memory ``Q @ R.T`` (exactly rank m).
    factors : tuple (Q, R)
        ``W = Q @ R.T``, shapes (d, m) (balanced: ``Q = U S^(1/2)``, ``R = V S^(1/2)``).
    rank : int
        ``m = max(1, round(kappa d))``.
    margin : float
        Normalised margin ``d min_i m_i(W) / ||W||_F`` of ``W`` over all constraints,
        verified in float64 (a lower bound on the best rank-m margin).
    start_margin : float
        The same for the top-m truncation of the start ``W0``.
    full_rank_margin, full_rank_bound : float
        Verified margin and certified upper bound of the full-rank max margin (``nan``
        when ``options.full_rank`` is False); the bound holds for every W, hence for
        every rank-m W.
    rank_bound : float
        Certified upper bound on every rank-m normalised margin:
        ``min(full_rank_bound, d ||W(lam)||_(m) / sum lam)`` at the final dual iterate of
        the full-rank solve (``nan`` without it).
    sweeps : int
        Alternations done from the returned start (a sweep is a column-space and a
        row-space half-step).
    start_margins : tuple of float
        Final verified margin of every start (``options.starts``; start 0 is ``W0``);
        ``W`` is from the best.
    half_steps : tuple of dict
        Per half-step of every start: ``start``, ``side`` (``"columns"``: ``W = Q X^T``; ``"rows"``: ``W = Y R^T``),
        ``status`` (of :class:`~validation.solvers.maxmargin.MaxMarginResult`),
        ``margin``, ``margin_bound`` (certified in its subspace), ``gap``, ``iterations``,
        ``seconds``.
    gaps : tuple of float or None
        The certified relative gap of each half-step in its subspace.
    seconds : float
        Wall time.
    full_rank_W : ndarray (d, d) or None
        The full-rank max-margin W (None without ``options.full_rank``).
    status : str
        ``"converged"``: a sweep raised the margin by at most ``tol`` (relative), a
        stationary point of the alternation -- *not* a certified rank-m optimum;
        ``"max_iter"`` / ``"time_limit"``: the budget ended first; ``"no_margin"``: no
        rank-m W of positive margin was found (the alternation stops after the first sweep
        that ends without one: start from a storing W).
    converged : bool
        True for ``"converged"`` only.
    message : str
        One line: the margin, the bounds, the sweeps.
    """

    STATUSES: ClassVar[tuple[str, ...]] = ("converged", "max_iter", "time_limit", "no_margin")

    W: np.ndarray = field(repr=False)
    factors: tuple = field(repr=False)
    rank: int
    margin: float
    start_margin: float
    full_rank_margin: float
    full_rank_bound: float
    rank_bound: float
    sweeps: int
    start_margins: tuple
    half_steps: tuple
    gaps: tuple
    seconds: float
    full_rank_W: np.ndarray | None = field(repr=False)
    status: str
    converged: bool
    message: str

    def _payload(self) -> dict:
        out = super()._payload()
        for name in ("W", "factors", "full_rank_W"):
            out.pop(name, None)
        return out


def rank_relaxation_bound(G, total, d, rank):
    """``d ||G||_(m) / total``: an upper bound on every rank-m normalised margin.

    Parameters
    ----------
    G : ndarray (d, d)
        ``W(lam) = sum_i lam_i A_i`` for some ``lam >= 0``.
    total : float
        ``sum_i lam_i`` (> 0).
    d, rank : int

    Returns
    -------
    float
        ``d sqrt(sum of the rank largest s_k(G)^2) / total`` (``inf`` when ``total <= 0``).
        For rank-m ``W``: ``min_i m_i(W) <= <G, W> / total <= ||G||_(m) ||W||_F / total``
        (von Neumann's trace inequality and Cauchy-Schwarz); at least as tight as the
        nuclear/Frobenius relaxation ``{||W||_* <= sqrt(m), ||W||_F <= 1}``, which
        contains the convex hull of the unit rank-m matrices (``notes/max_margin.md``).
    """
    if not total > 0:
        return np.inf
    s = np.linalg.svd(G, compute_uv=False)
    return float(d * np.sqrt(np.sum(s[:rank] ** 2)) / total)


class _Alternation:
    """State of a rank-m solve: :meth:`full_rank`, per start :meth:`begin` and :meth:`alternate`
    (of :meth:`half_step`), then :meth:`finish`."""

    def __init__(self, instance, rank, W0, *, tol, max_iter, time_limit, seed, options):
        self.t_start = time.perf_counter()
        self.deadline = None if time_limit is None else self.t_start + time_limit
        self.tol, self.max_iter, self.o = tol, max_iter, options
        self.rng = as_generator(seed)
        self.data = MaxMarginData(instance)
        self.rank = rank
        self.steps, self.start_margins = [], []
        self.full = (np.nan, np.nan, np.nan, None)   # margin, bound, rank bound, W
        self.begin(W0)

    def begin(self, W0):
        """Start an alternation from the top-m truncation of ``W0``."""
        factors = balanced_factors(W0, self.rank)
        self.W = factors[0] @ factors[1].T
        self.margin = self.start_margin = self.verified(self.W)
        self.sweeps, self.status = 0, None

    def state(self):
        return {name: getattr(self, name) for name in ("W", "margin", "start_margin", "sweeps", "status")}

    def verified(self, W):
        data = self.data
        return data.normalised(W, data.exact_min_margin(W, _BLOCK_ELEMENTS))

    def remaining(self):
        return None if self.deadline is None else self.deadline - time.perf_counter()

    def solve(self, tol, max_iter):
        """One certified solve on ``self.data`` (with its current projection) from ``self.W``."""
        left = self.remaining()
        run = DualAscentRun(self.data, self.W, tol=tol, max_iter=max_iter,
                   time_limit=None if left is None else max(left, 1e-3), seed=self.rng,
                   callback=None, options=self.o.max_margin)
        return run, run.run()

    def half_step(self, side):
        """Solve in ``S_Q`` (``side = "columns"``) or ``S_R`` (``"rows"``) from the current W."""
        data = self.data
        U, _, V = truncated_svd(self.W, self.rank)
        if side == "columns":
            data.vector_basis = U
        else:
            inputs = np.ascontiguousarray((data.inputs @ V) @ V.T)
            inputs.setflags(write=data.inputs.flags.writeable)   # the kernels' compiled type
            data.sweep_inputs = inputs
        try:
            _, res = self.solve(self.o.step_tol, self.o.step_max_iter)
        finally:
            data.vector_basis, data.sweep_inputs = None, data.inputs
        if res.margin >= self.margin:   # never below the start (W0 is verified by the solve)
            self.W, self.margin = res.W, res.margin
        self.steps.append({"start": len(self.start_margins), "side": side, "status": res.status,
                           "margin": float(res.margin), "margin_bound": float(res.margin_bound), "gap": res.gap,
                           "iterations": int(res.iterations), "seconds": float(res.seconds)})
        return res

    def full_rank(self):
        """The full-rank max margin from the current W: upper bounds on every rank-m margin."""
        run, res = self.solve(self.o.full_rank_tol, 100000)
        lam = run.ws.lam
        bound = rank_relaxation_bound(run.ws.memory(), float(lam.sum()), self.data.d, self.rank)
        self.full = (float(res.margin), float(res.margin_bound),
                     min(float(res.margin_bound), bound), res.W)

    def budget_status(self, time_only=False):
        if not time_only and self.sweeps >= self.max_iter:
            return "max_iter"
        left = self.remaining()
        return "time_limit" if left is not None and left <= 0 else None

    def run(self):
        if self.o.full_rank:
            self.full_rank()
        best = None
        for k in range(self.o.starts):
            if k > 0:
                if self.budget_status(time_only=True) is not None:
                    break
                d = self.data.d   # random start: Gaussian factors N(0, 1/d)
                self.begin(self.rng.standard_normal((d, self.rank)) @ self.rng.standard_normal((self.rank, d)))
            self.alternate()
            self.start_margins.append(float(self.margin))
            if best is None or self.margin > best["margin"]:
                best = self.state()
        for name, value in best.items():
            setattr(self, name, value)
        return self.finish()

    def alternate(self):
        """Alternate half-steps from the current W until a sweep gains at most ``tol``."""
        while self.status is None:
            before = self.margin
            for side in ("columns", "rows"):
                self.half_step(side)
                self.status = self.budget_status(time_only=True)
                if self.status is not None:
                    break
            self.sweeps += 1
            if self.status is not None:
                break
            if not self.margin > 0:
                self.status = "no_margin"   # no storing W in the subspaces of a sweep: stuck
            elif self.margin - before <= self.tol * self.margin:
                self.status = "converged"
            else:
                self.status = self.budget_status()

    def finish(self):
        factors = balanced_factors(self.W, self.rank)
        W = factors[0] @ factors[1].T
        margin = self.verified(W)    # the exactly rank-m product, verified in float64
        status = self.status if margin > 0 else "no_margin"
        fmargin, fbound, rbound, fW = self.full
        msg = (f"rank {self.rank}: normalised margin {margin:.6g} (float64, all constraints) after "
               f"{self.sweeps} sweeps from {self.start_margin:.6g} (best of {len(self.start_margins)} "
               f"starts); a stationary point of the "
               f"alternation, not a certified rank-m optimum; upper bounds: rank-m {rbound:.6g}, "
               f"full rank {fbound:.6g} (full-rank margin {fmargin:.6g})")
        if status != "converged":
            msg = f"{status}: " + msg
        gaps = tuple(step["gap"] for step in self.steps)
        return RankMarginResult(
            W=W, factors=factors, rank=self.rank, margin=float(margin),
            start_margin=float(self.start_margin), full_rank_margin=fmargin, full_rank_bound=fbound,
            rank_bound=rbound, sweeps=self.sweeps, start_margins=tuple(self.start_margins),
            half_steps=tuple(self.steps), gaps=gaps,
            seconds=time.perf_counter() - self.t_start, full_rank_W=fW, status=status,
            converged=status == "converged", message=msg)


def solve_rank_max_margin(instance, kappa, W0, *, tol=1e-3, max_iter=50, time_limit=None, seed=None,
                          options=None) -> RankMarginResult:
    """Max-margin W of rank ``m = max(1, round(kappa d))`` by alternating certified half-steps.

    Parameters
    ----------
    instance : validation.Instance
        OP or DP instance (``make_instance``), any number of distinct answers.
    kappa : float
        Rank fraction in (0, 1].
    W0 : array_like, shape (d, d)
        Start, e.g. ``solve(instance, "optimal", kappa=kappa, refine=False).W``; its top-m
        truncation is used (it need not store, but a storing start is the useful one).
    tol : float, optional
        The alternation stops (``"converged"``) when a sweep raises the verified
        normalised margin by at most ``tol`` times the margin (default 1e-3), in (0, 1).
    max_iter : int, optional
        Most sweeps (default 50, >= 1).
    time_limit : float or None, optional
        Wall-time budget in seconds of the whole solve: the full-rank solve of
        ``options.full_rank`` (first), then the sweeps (checked between half-steps and
        passed to each).  The first call of a process compiles the numba kernels first.
    seed : None, int, SeedSequence or Generator, optional
        Order of the inputs in the sweeps (``None``: ``DEFAULT_SEED``).
    options : RankMarginOptions or mapping, optional
        Half-step and full-rank settings (:class:`RankMarginOptions`).

    Returns
    -------
    RankMarginResult
        ``W``, ``factors``, ``margin`` (verified), the per-half-step certified gaps, and
        the upper bounds ``rank_bound`` and ``full_rank_bound``.

    Raises
    ------
    ValueError
        For a rectangular instance (``d_in != d_out``), ``kappa`` outside (0, 1], ``tol``
        outside (0, 1), ``max_iter < 1``, a
        non-positive ``time_limit``, a ``W0`` that is not a finite (d, d) array, bad options.

    Notes
    -----
    Derivation and certificates: ``notes/max_margin.md``, section 9.  The result is a
    stationary point of the alternation; ``margin <= best rank-m margin <= rank_bound``.
    """
    d = check_square_instance(instance, "solve_rank_max_margin")
    kappa = check_scalar_kappa(kappa)
    tol = check_real(tol, "tol", low=0.0, high=1.0, low_open=True, high_open=True)
    max_iter = check_int(max_iter, "max_iter", low=1)
    if time_limit is not None:
        time_limit = check_real(time_limit, "time_limit", low=0.0, low_open=True)
    W0 = np.array(W0, dtype=np.float64)
    if W0.shape != (d, d) or not np.all(np.isfinite(W0)):
        raise ValueError(f"W0 must be a finite ({d}, {d}) array, got shape {W0.shape}")
    options = RankMarginOptions.coerce(options)
    warm_up_max_margin()
    rank = rank_for(d, kappa)
    return _Alternation(instance, rank, W0, tol=tol, max_iter=max_iter, time_limit=time_limit,
                        seed=seed, options=options).run()
