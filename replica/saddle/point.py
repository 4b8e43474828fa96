"""Replica-symmetric saddle point of the decoupled problem (Gardner volume of W).

For ``N = d^2`` spherical weights (``||W||_F^2 = d^2``) and ``p`` blocks of ``p``
fields each (one target, ``n = p - 1`` competitors; unit variance, independent
across candidates), the replica-symmetric free entropy per weight is

    phi(q) = 1/2 ln(1 - q) + q / (2 (1 - q)) + (p / d^2) E_t ln Z(t; q),
    Z(t; q) = Int Dx prod_{rho >= 2} Phi((sqrt(q)(t_1 - t_rho) + sqrt(1 - q) x - margin) / sqrt(1 - q)),

with ``t`` in R^p i.i.d. N(0, 1) and ``q`` the overlap of two solutions.  The saddle
point ``d phi / d q = 0`` gives ``q*(p, d)``; ``phi(q*)`` is the log-volume of the
solutions per weight; ``q* -> 1`` at the capacity ``p_c E[C_{p_c}] = d^2`` (water
filling, :mod:`replica.optimal.finite_size`).  Derivation, numerics and checks:
``notes/replica_saddle.md``.

Numerics
--------
The expectation over the ``p``-dimensional ``t`` sits inside the log.  It is taken
by Monte Carlo over a FIXED sample of blocks (common random numbers: ``phi(q)`` and
its derivative are deterministic smooth functions of ``q`` and ``p`` and the root
residual is meaningful):

* the target ``t_1`` on stratified (symmetric) normal quantiles;
* the ``K`` largest competitors exactly in law from ``K`` Latin-hypercube uniforms
  (:func:`replica.asymptotic.extremes.order_statistics_from_uniforms`, smooth in ``p``);
* the other ``n - K`` competitors, i.i.d. N(0, 1) conditioned below the ``K``-th,
  through the conditional expectation of their summed ``log Phi`` (a 1-D integral in
  ``t`` per quadrature node ``x``; its neglected fluctuation is estimated by
  :meth:`ReplicaSample.bulk_fluctuation` and checked against full samples).

``ln Z`` for one block is an integral of a strictly log-concave function of ``x``:
the mode by safeguarded Newton, the tails cut where the log-integrand has dropped by
40, Gauss-Legendre on each side, everything in log space.  ``d ln Z / d q`` is the
posterior mean of ``dS/dq`` at fixed ``x`` (analytic).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from ..common.checks import as_float_array, check_int, check_real
from ..common.results import Result
from ..common.roots import brent, walk_bracket
from ..common.seeds import DEFAULT_SEED
from .sample import DEFAULT_EXACT_COMPETITORS, DEFAULT_SAMPLES, ReplicaSample, check_p, resolve_sample

__all__ = [
    "DEFAULT_SEED",
    "DEFAULT_SAMPLES",
    "DEFAULT_EXACT_COMPETITORS",
    "ReplicaSample",
    "free_entropy",
    "free_entropy_derivative",
    "saddle_point",
    "SaddlePoint",
    "sample_capacity",
    "SampleCapacity",
]

# ``DEFAULT_SEED`` (from replica.common.seeds) seeds the common random numbers when
# ``seed=None``: the theory functions are then pure functions of their parameters (the
# Monte-Carlo error is reported).  ``DEFAULT_SAMPLES``, ``DEFAULT_EXACT_COMPETITORS``
# and ``ReplicaSample`` live in replica.saddle.sample.


def _entropic(q):
    return 0.5 * math.log1p(-q) + q / (2.0 * (1.0 - q))


def _over_q(d, p, q, margin, seed, sample, derivative):
    """``phi(q)`` (or ``d phi / d q``) element by element, shaped like ``q``."""
    qs = as_float_array(q, "q")
    d = check_int(d, "d", low=2)
    margin = check_real(margin, "margin", low=0.0)
    sample = resolve_sample(sample, seed)
    p = check_p(p, sample.exact_competitors)
    load = p / d**2
    out = np.empty(qs.shape)
    for idx, qv in np.ndenumerate(qs):
        qv = check_real(float(qv), "q", low=0.0, high=1.0, low_open=derivative, high_open=True)
        log_z, dlog_z, _ = sample.log_partition(p, qv, margin, derivative=derivative)
        if derivative:
            out[idx] = qv / (2.0 * (1.0 - qv) ** 2) + load * float(dlog_z.mean())
        else:
            out[idx] = _entropic(qv) + load * float(log_z.mean())
    return float(out) if qs.ndim == 0 else out


def free_entropy(d, p, q, margin=0.0, *, seed=None, sample=None):
    """Replica-symmetric free entropy per weight ``phi(q)`` of the decoupled problem.

    ``phi(q) = 1/2 ln(1-q) + q/(2(1-q)) + (p/d^2) E_t ln Z(t; q)`` with
    ``Z(t; q) = Int Dx prod_{rho>=2} Phi((sqrt(q)(t_1-t_rho) + sqrt(1-q) x - margin)/sqrt(1-q))``
    (derived in ``notes/replica_saddle.md``, sections 1-3).  ``E_t`` is a
    Monte-Carlo mean over a fixed :class:`ReplicaSample` (common random numbers).

    Parameters
    ----------
    d : int
        Dimension ``d >= 2`` (``N = d^2`` weights).
    p : float
        Block size (one target and ``p - 1`` competitors; also the number of blocks),
        ``p >= 2``; an integer when ``p - 1 <= exact_competitors``.
    q : float or array_like
        Overlap of two solutions, ``0 <= q < 1``.
    margin : float, optional
        Stability margin ``>= 0`` in competitor standard deviations.
    seed : None, int, SeedSequence or Generator, optional
        Seed of the default-size sample (``None``: ``DEFAULT_SEED``) when ``sample`` is
        None.
    sample : ReplicaSample, optional
        The sample to use (its own size, seed and exact competitors); reuse one for
        speed and common random numbers across calls.

    Returns
    -------
    float or ndarray
        ``phi(q)``, shaped like ``q``.

    Raises
    ------
    ValueError
        If ``q`` is outside ``[0, 1)``, ``p < 2`` (or non-integer when it must be an
        integer), ``d < 2``, ``margin < 0``, or both ``seed`` and ``sample`` are given.
    """
    return _over_q(d, p, q, margin, seed, sample, derivative=False)


def free_entropy_derivative(d, p, q, margin=0.0, *, seed=None, sample=None):
    """``d phi / d q = q / (2 (1-q)^2) + (p/d^2) E_t d ln Z / d q`` (analytic in ``q``).

    ``d ln Z / d q`` is the posterior mean over ``x`` of
    ``sum_rho (phi/Phi)(u_rho) (t_1 - t_rho - margin sqrt(q)) / (2 sqrt(q) (1-q)^{3/2})``
    (``notes/replica_saddle.md``, section 4).  Parameters, return value and errors as
    :func:`free_entropy`, with ``0 < q < 1`` (at ``q = 0`` the derivative of the
    Monte-Carlo mean is singular like ``q^{-1/2}`` unless the sample is symmetric).
    """
    return _over_q(d, p, q, margin, seed, sample, derivative=True)


@dataclass(frozen=True)
class SaddlePoint(Result):
    """Replica-symmetric saddle point ``q*`` of the decoupled problem (see :func:`saddle_point`).

    ``status``:

    * ``"converged"`` -- ``|R(q*)| <= tol``, every mode search converged and ``R`` crosses
      zero upwards;
    * ``"not_converged"`` -- a root was found but one of these checks failed;
    * ``"max_iter"`` -- Brent's method ran out of iterations;
    * ``"above_capacity"`` -- ``(p/d^2) E[C_p] >= 1`` on the sample: no root with
      ``q < 1`` (``q = 1``, ``free_entropy = -inf``);
    * ``"unbracketed"`` -- ``R(q) >= 0`` already at ``q = 1e-8``.

    ``message`` says what happened, with the residual.
    """

    STATUSES = ("converged", "not_converged", "max_iter", "above_capacity", "unbracketed")

    p: float
    d: int
    margin: float
    load: float  # p / d^2
    alpha: float  # p ln p / d^2
    q: float
    q_stderr: float
    free_entropy: float
    free_entropy_stderr: float
    derivative: float  # d phi / d q at q
    residual: float  # |2 (1-q)^2 d phi/dq| at q
    capacity_coefficient: float  # 1 - (p/d^2) E[C_p] on the sample (> 0 below capacity)
    mean_cost: float  # E[C_p] on the sample
    status: str
    converged: bool
    iterations: int
    message: str
    samples: int
    seed: int
    exact_competitors: int


class _Equation:
    """``R(q) = 2 (1-q)^2 dphi/dq = q + 2 (1-q)^2 (p/d^2) E d ln Z/dq`` on a fixed sample."""

    def __init__(self, sample, p, d, margin):
        self.sample, self.p, self.d, self.margin = sample, p, d, margin
        self.load = p / float(d) ** 2
        self.evaluations = 0
        self.flags = 0
        cost, bulk_active = sample.water_filling(p, margin)
        self.mean_cost = float(cost.mean())
        self.bulk_active = int(bulk_active.sum())
        self.at_one = 1.0 - self.load * self.mean_cost
        self.last = {}

    def __call__(self, q):
        if q >= 1.0:
            return self.at_one
        log_z, dlog_z, info = self.sample.log_partition(self.p, q, self.margin, derivative=True)
        self.evaluations += 1
        self.flags += int(np.count_nonzero(info[:, 4]))
        value = q + 2.0 * (1.0 - q) ** 2 * self.load * float(dlog_z.mean())
        self.last[q] = (log_z, dlog_z, value)
        return value

    def result(self, **fields) -> SaddlePoint:
        """A :class:`SaddlePoint` with the fields common to every outcome filled in."""
        s = self.sample
        return SaddlePoint(p=float(self.p), d=self.d, margin=self.margin, load=self.load,
                           alpha=self.p * math.log(self.p) / self.d**2,
                           capacity_coefficient=self.at_one, mean_cost=self.mean_cost,
                           iterations=self.evaluations, samples=s.samples, seed=s.seed,
                           exact_competitors=s.exact_competitors, **fields)

    def failure(self, status, message, q, free_entropy=math.nan, residual=math.nan) -> SaddlePoint:
        return self.result(q=q, q_stderr=math.nan, free_entropy=free_entropy,
                           free_entropy_stderr=math.nan, derivative=math.nan, residual=residual,
                           status=status, converged=False, message=message)

    def lower_end(self):
        """``(q_lo, R(q_lo))`` with ``R(q_lo) < 0`` if one is found down to ``q = 1e-8``."""
        walk = walk_bracket(self, 1e-4, lambda q: q * 1e-2, inside=lambda value: value >= 0.0,
                            give_up=lambda q: not q > 1e-8)
        return walk.x, walk.value

    def at_root(self, root, tol, brent_converged) -> SaddlePoint:
        """Free entropy, Monte-Carlo errors and the acceptance checks at the root."""
        if root not in self.last:
            self(root)
        log_z, dlog_z, value = self.last[root]
        m = self.sample.samples
        phi_se = self.load * float(log_z.std(ddof=1)) / math.sqrt(m)
        # delta method for q*: se(R)/|R'(q*)|, slope from a common-random-number difference
        r_se = 2.0 * (1.0 - root) ** 2 * self.load * float(dlog_z.std(ddof=1)) / math.sqrt(m)
        h = 1e-4 * min(root, 1.0 - root)
        slope = (self(root + h) - self(root - h)) / (2.0 * h)
        status, message = self._verdict(abs(value), tol, slope, brent_converged)
        return self.result(q=float(root), q_stderr=r_se / abs(slope) if slope != 0 else math.inf,
                           free_entropy=_entropic(root) + self.load * float(log_z.mean()),
                           free_entropy_stderr=phi_se, derivative=value / (2.0 * (1.0 - root) ** 2),
                           residual=abs(value), status=status, converged=status == "converged",
                           message=message)

    def _verdict(self, residual, tol, slope, brent_converged):
        detail = f"|R(q*)| = {residual:.3g} (tol {tol:.3g}), {self.evaluations} evaluations"
        if not brent_converged:
            status, message = "max_iter", f"max_iter reached: {detail}"
        elif self.flags:
            status, message = "not_converged", (f"not converged: mode search did not converge in "
                                                f"{self.flags} block evaluations; {detail}")
        elif slope <= 0:
            status, message = "not_converged", f"not converged: R'(q*) <= 0, not a regular crossing; {detail}"
        elif residual > tol:
            status, message = "not_converged", f"not converged: {detail}"
        else:
            status, message = "converged", f"converged: {detail}"
        if self.bulk_active:
            message += (f"; note: in {self.bulk_active} of {self.sample.samples} blocks the K-th exact "
                        "competitor is active at q -> 1 (increase exact_competitors)")
        return status, message


def saddle_point(d, p, margin=0.0, *, tol=1e-10, max_iter=200, seed=None, sample=None) -> SaddlePoint:
    """Solve ``d phi / d q = 0`` for the replica-symmetric overlap ``q*``.

    The equation is solved in the scaled form ``R(q) = 2 (1-q)^2 dphi/dq = 0``, i.e.
    ``q = -2 (1-q)^2 (p/d^2) E_t d ln Z/dq``, which stays of order one as ``q -> 1``,
    where ``R(1) = 1 - (p/d^2) E[C_p]`` (the coefficient of ``1/(2(1-q))`` in ``phi``;
    ``C_p`` the water-filling cost on the same sample).  ``R(0+) < 0``, so below
    capacity (``R(1) > 0``) a root is bracketed in ``(0, 1)`` and found by ``brentq``;
    it is accepted only if ``|R(q*)| <= tol``.  At or above capacity on the sample
    (``R(1) <= 0``) there is no root with ``q < 1``: the result has ``q = 1``,
    ``free_entropy = -inf`` and status ``"above_capacity"``.  Derivation and checks:
    ``notes/replica_saddle.md``.

    Parameters
    ----------
    d : int
        Dimension ``d >= 2``.
    p : float
        Number of stored pairs (= block size), ``p >= 2``.
    margin : float, optional
        Stability margin ``>= 0``.
    tol : float, optional
        Accepted ``|R(q*)|``, in ``(0, 1e-3]``.
    max_iter : int, optional
        Iterations of Brent's method.
    seed, sample : optional
        The Monte-Carlo sample (see :func:`free_entropy`).

    Returns
    -------
    SaddlePoint
        ``q`` and its Monte-Carlo ``q_stderr`` (delta method, i.i.d. formula, so
        conservative for the stratified sample), ``free_entropy`` ``phi(q*)`` and its
        stderr, ``derivative``, ``residual``, ``capacity_coefficient``, ``status``,
        ``converged``, ``iterations`` (evaluations of the sample), ``message``.

    Raises
    ------
    ValueError
        If ``p < 2`` (or non-integer when it must be an integer), ``d < 2``,
        ``margin < 0``, ``tol`` outside ``(0, 1e-3]``, ``max_iter < 1``, or both
        ``seed`` and ``sample`` are given.
    """
    d = check_int(d, "d", low=2)
    margin = check_real(margin, "margin", low=0.0)
    tol = check_real(tol, "tol", low=0.0, high=1e-3, low_open=True)
    max_iter = check_int(max_iter, "max_iter", low=1)
    sample = resolve_sample(sample, seed)
    eq = _Equation(sample, check_p(p, sample.exact_competitors), d, margin)
    if eq.at_one <= 0.0:
        return eq.failure("above_capacity", f"at or above capacity on this sample: (p/d^2) E[C_p] = "
                          f"{1.0 - eq.at_one:.6g} >= 1, no saddle point with q < 1",
                          q=1.0, free_entropy=-math.inf)
    q_lo, r_lo = eq.lower_end()
    if r_lo >= 0.0:
        return eq.failure("unbracketed", f"no sign change: R(q) = {r_lo:.3g} >= 0 already at q = 1e-8",
                          q=q_lo, residual=abs(r_lo))
    found = brent(eq, q_lo, 1.0, xtol=1e-15, rtol=4.5 * np.finfo(float).eps, max_iter=max_iter)
    return eq.at_root(min(found.root, np.nextafter(1.0, 0.0)), tol, found.converged)


@dataclass(frozen=True)
class SampleCapacity(Result):
    """Capacity ``p_c`` from ``p E[C_p] = d^2`` on a :class:`ReplicaSample` (see :func:`sample_capacity`).

    ``status``: ``"converged"`` (``residual <= tol``), ``"not_converged"`` or
    ``"max_iter"`` (bracketing or Brent's method ran out of iterations); ``message``
    gives the residual.
    """

    STATUSES = ("converged", "not_converged", "max_iter")

    d: int
    margin: float
    p_c: float
    alpha: float  # p_c ln p_c / d^2
    mean_cost: float  # E[C_p] on the sample at p_c
    cost_stderr: float
    bulk_active: int  # blocks whose level falls below the K-th exact competitor at p_c
    status: str
    converged: bool
    iterations: int
    residual: float  # |log(p E[C_p] / d^2)| at p_c
    message: str
    samples: int
    seed: int
    exact_competitors: int


class _SampleLoad:
    """``log(p E[C_p]) - log(d^2)`` on a sample, in ``log p`` (interpolated between integers)."""

    def __init__(self, sample, d, margin):
        self.sample, self.d, self.margin = sample, d, margin
        self.target = float(d) ** 2
        self.evaluations = 0

    def total(self, p):
        """``p E[C_p]`` on the sample (linear between integers where ``p`` must be one)."""
        if p - 1.0 < self.sample.exact_competitors and not float(p).is_integer():
            lo, hi = math.floor(p), math.ceil(p)
            w = p - lo
            return (1.0 - w) * self._load_cost(lo) + w * self._load_cost(hi)
        return self._load_cost(p)

    def _load_cost(self, p):
        self.evaluations += 1
        return p * float(self.sample.water_filling(p, self.margin)[0].mean())

    def __call__(self, log_p):
        return math.log(self.total(math.exp(log_p))) - math.log(self.target)


def sample_capacity(d, margin=0.0, *, tol=1e-12, max_iter=100, seed=None, sample=None) -> SampleCapacity:
    """Where the saddle point reaches ``q* = 1`` on a given sample: ``p E[C_p] = d^2``.

    This is the zero of the coefficient ``R(1) = 1 - (p/d^2) E[C_p]`` of ``1/(2(1-q))``
    in ``phi`` (``notes/replica_saddle.md``, section 5), evaluated with the SAME blocks
    as :func:`saddle_point`, so that the two can be compared without Monte-Carlo noise
    between them.  (:func:`replica.optimal.finite_size.capacity` solves the same equation with
    a far more precise estimator of ``E[C_p]``; use that for the capacity itself.)
    For ``p - 1 <= exact_competitors`` the blocks exist only for integer ``p`` and
    ``p E[C_p]`` is interpolated linearly between integers.

    Parameters
    ----------
    d : int
        Dimension ``d >= 2``.
    margin : float, optional
        Stability margin ``>= 0``.
    tol : float, optional
        Accepted residual ``|log(p E[C_p] / d^2)|``, in ``(0, 1e-3]``.
    max_iter : int, optional
        Bracketing steps (``log p`` by 0.5) and Brent iterations allowed.
    seed, sample : optional
        The Monte-Carlo sample (see :func:`free_entropy`).

    Returns
    -------
    SampleCapacity

    Raises
    ------
    ValueError
        If ``d < 2``, ``margin < 0``, ``tol`` or ``max_iter`` is out of range, both
        ``seed`` and ``sample`` are given, or the capacity falls below ``p = 2``.
    """
    d = check_int(d, "d", low=2)
    margin = check_real(margin, "margin", low=0.0)
    tol = check_real(tol, "tol", low=0.0, high=1e-3, low_open=True)
    max_iter = check_int(max_iter, "max_iter", low=1)
    sample = resolve_sample(sample, seed)
    g = _SampleLoad(sample, d, margin)
    lo = math.log(2.0)
    if g(lo) >= 0.0:
        raise ValueError(f"capacity below p = 2 for d={d}, margin={margin!r}: "
                         f"2 E[C_2] >= d^2 on this sample")
    walk = walk_bracket(g, lo, lambda x: x + 0.5, inside=lambda value: value < 0.0, previous=lo, max_steps=max_iter)
    if walk.steps == max_iter and g(walk.x) < 0.0:
        root, converged_brent = walk.x, False
    else:
        found = brent(g, walk.lo, walk.hi, xtol=1e-14, rtol=4.5 * np.finfo(float).eps, max_iter=max_iter)
        root, converged_brent = found.root, found.converged
    return _sample_capacity_result(g, math.exp(root), abs(g(root)), tol, converged_brent)


def _sample_capacity_result(g, p_c, residual, tol, converged_brent) -> SampleCapacity:
    sample, k = g.sample, g.sample.exact_competitors
    p_eval = p_c if (p_c - 1.0 >= k or float(p_c).is_integer()) else float(round(p_c))
    cost, bulk_active = sample.water_filling(p_eval, g.margin)
    detail = f"|log(p E[C_p] / d^2)| = {residual:.3g} (tol {tol:.3g}), {g.evaluations} evaluations"
    if not converged_brent:
        status, message = "max_iter", f"max_iter reached: {detail}"
    elif residual <= tol:
        status, message = "converged", f"converged: {detail}"
    else:
        status, message = "not_converged", f"not converged: {detail}"
    return SampleCapacity(d=g.d, margin=g.margin, p_c=p_c,
                          alpha=p_c * math.log(p_c) / g.target, mean_cost=g.total(p_c) / p_c,
                          cost_stderr=float(cost.std(ddof=1)) / math.sqrt(sample.samples),
                          bulk_active=int(bulk_active.sum()), status=status,
                          converged=status == "converged", iterations=g.evaluations,
                          residual=residual, message=message, samples=sample.samples,
                          seed=sample.seed, exact_competitors=k)
