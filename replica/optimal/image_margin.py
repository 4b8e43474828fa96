"""The largest margin with the block cost computed in the image space ``R^d``.

:func:`replica.max_margin` prices one block (one input ``mu``) by the water filling of its
``p`` fields, as if they were ``p`` independent coordinates moved at unit price.  They are
not: all of them are projections ``u_rho^T y`` of one image ``y = W e_mu`` in ``R^d``,
moving the target and the top competitors moves ``y``, and that move shifts every other
competitor too.  :func:`max_margin_image` keeps the budget and the scale law of
:func:`replica.max_margin` and replaces the water filling by the exact least move of the
image (``notes/max_margin.md``, section "The block cost in the image space"):

    p E[ |y* - y0|^2 / r ] = F d^2,
    y* = argmin { |y - y0|^2 : (t - u_rho)^T y >= k for rho = 1 .. p - 1 }.

The expectation is a Monte-Carlo average over sampled blocks (the cavity image ``y0``,
the block's own candidate vectors ``t, u_rho`` and its scales ``r, s^2``), with the
field-space water filling of the same blocks as a control variate whose mean is the
precise estimate of :func:`replica.max_margin`'s equation.  The paper's full-rank
``q -> 1`` equation (Giorlandino, Goldt, Maillard, arXiv 2605.10795) is the special case
in which the moved candidates are orthonormal and leave the others alone.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy.optimize import brentq

from ..common.checks import check_int, check_memory
from ..common.ensembles import check_ensemble
from ..common.results import Result
from ..common.seeds import resolve_seed
from ..common.validity import Validity, reports_validity
from .cost import CostEstimator, field_law
from .finite_size import block_scales, scaled_block_cost, shape_variance
from .water_filling import water_filling_sorted

__all__ = ["max_margin_image", "ImageMarginResult", "ImageMarginWarning", "least_move", "sample_image_blocks",
           "ImageBlocks", "TOLERANCE"]

TOLERANCE = 0.05
"""Stated tolerance of :func:`max_margin_image` (relative, against the certified max margin)."""

CHUNK = 32
"""Blocks drawn per random stream ``SeedSequence([seed, chunk index])`` (the sample depends on it)."""

MAX_ITER = 2000
"""Active-set iterations allowed per block."""

KEEP = 4
"""Competitors kept per block, ``KEEP * d`` (those with the largest cavity fields)."""

REPAIR_ROUNDS = 4
"""Root searches allowed: after each, blocks whose dropped competitors bind get all of them back."""

CONTROL_ROWS = 6000
"""Rows of the Rao-Blackwellised estimator of the control variate's mean (:func:`replica.max_margin`'s)."""


class ImageMarginWarning(RuntimeWarning):
    """:func:`max_margin_image` did not converge (a block's least move, the root, or a dropped competitor)."""


def least_move(target, competitors, image, margin):
    """Least squared move of a block's image that gives the target the margin over every competitor.

    Solves ``min |y - y0|^2`` subject to ``(t - u_rho)^T y >= margin`` for every competitor
    ``u_rho``: the projection of ``y0`` on the block's feasible polyhedron, by the
    Lawson-Hanson active-set method on its dual (``notes/max_margin.md``, section "The
    block cost in the image space").

    Parameters
    ----------
    target : array_like, shape (d,)
        The target candidate ``t``.
    competitors : array_like, shape (m, d)
        The competitors ``u_rho`` (rows), ``m >= 1``.
    image : array_like, shape (d,)
        The image ``y0 = W e`` before the move.
    margin : float
        The required gap ``k`` (any real; negative allows the target below a competitor).

    Returns
    -------
    cost : float
        ``|y* - y0|^2``.
    moved : ndarray, shape (d,)
        The moved image ``y*``.

    Raises
    ------
    ValueError
        On shapes that do not match, non-finite entries, or a non-converged solve (the
        feasible set is then empty or degenerate, e.g. a competitor equal to the target).
    """
    from ._image_kernels import OK, least_move as kernel

    t = np.ascontiguousarray(target, dtype=np.float64)
    U = np.ascontiguousarray(competitors, dtype=np.float64)
    y0 = np.ascontiguousarray(image, dtype=np.float64)
    if t.ndim != 1 or y0.shape != t.shape or U.ndim != 2 or U.shape[1] != t.shape[0] or U.shape[0] < 1:
        raise ValueError(f"need target (d,), competitors (m, d) with m >= 1 and image (d,); got shapes "
                         f"{t.shape}, {U.shape}, {y0.shape}")
    margin = float(margin)
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(U)) and np.all(np.isfinite(y0)) and math.isfinite(margin)):
        raise ValueError("target, competitors, image and margin must be finite")
    y = np.empty_like(y0)
    cost, status, _, worst = kernel(t, U, y0, margin, y, MAX_ITER)
    if status != OK:
        raise ValueError(f"the least move did not converge (status {status}, largest violation {worst:.3g}): the "
                         "constraints may be infeasible or degenerate")
    return float(cost), y


class ImageBlocks(NamedTuple):
    """Sampled blocks of :func:`sample_image_blocks` (``n`` blocks, ``K`` kept competitors each).

    ``norm`` (``r``), ``shape`` (``s^2``), ``image`` (``y0``, shape (n, d)), ``target``
    (``t``, (n, d)), ``competitors`` (the ``K`` with the largest cavity fields, (n, K, d)),
    ``p``, ``ensemble``, ``seed``.
    """

    norm: np.ndarray
    shape: np.ndarray
    image: np.ndarray
    target: np.ndarray
    competitors: np.ndarray
    p: int
    ensemble: str
    seed: int


def _unit_rows(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _chunk(d, p, ensemble, seed, index, size, var):
    """All the draws of one chunk of blocks (r, s^2, y0, t and every competitor), its first ``size`` kept.

    A chunk always draws ``CHUNK`` blocks, so a block does not depend on how many are sampled.
    """
    r, s2, y0, t, u = _full_chunk(d, p, ensemble, seed, index, var)
    return r[:size], s2[:size], y0[:size], t[:size], u[:size]


def _full_chunk(d, p, ensemble, seed, index, var):
    size = CHUNK
    rng = np.random.default_rng(np.random.SeedSequence([seed, index]))
    r = rng.chisquare(d, size) / d if ensemble == "gaussian" else np.ones(size)
    s2 = rng.gamma(1.0 / var, var, size)
    y0 = _unit_rows(rng.standard_normal((size, d))) * np.sqrt(d * r * s2)[:, None]
    t = rng.standard_normal((size, d))
    u = rng.standard_normal((size, p - 1, d))
    if ensemble == "gaussian":
        t /= math.sqrt(d)
        u /= math.sqrt(d)
    else:
        t, u = _unit_rows(t), _unit_rows(u)
    return r, s2, y0, t, u


def sample_image_blocks(d, p, ensemble="gaussian", blocks=2000, seed=None, keep=None) -> ImageBlocks:
    """Blocks of the image-space margin equation: cavity image, candidates and scales.

    Per block: ``r = |e|^2 ~ chi^2_d / d`` (gaussian) or 1 (sphere); ``s^2`` Gamma with mean
    1 and the variance of :func:`replica.optimal.finite_size.shape_variance`; the cavity
    image ``y0`` isotropic with ``|y0|^2 = d r s^2`` (its fields have standard deviation
    ``sqrt(r s^2)`` in units of ``||W||_F / d``); ``t`` and the ``p - 1`` competitors
    i.i.d. ``N(0, I/d)`` (gaussian) or uniform on the unit sphere.  Only the ``keep``
    competitors with the largest cavity fields ``u^T y0`` are kept (default ``4 d``);
    :func:`max_margin_image` checks the dropped ones at its root and solves the few blocks where one
    binds again with all their competitors.  Blocks are drawn
    ``CHUNK`` at a time from ``SeedSequence([seed, chunk index])``, so the first ``n``
    blocks do not depend on ``blocks``.
    """
    var = shape_variance(d, 1.0)
    keep = min(p - 1, keep or 4 * d)
    n = int(blocks)
    out = [np.empty(n), np.empty(n), np.empty((n, d)), np.empty((n, d)), np.empty((n, keep, d))]
    for index, start in enumerate(range(0, n, CHUNK)):
        size = min(CHUNK, n - start)
        r, s2, y0, t, u = _chunk(d, p, ensemble, seed, index, size, var)
        if keep < p - 1:
            fields = np.einsum("bmd,bd->bm", u, y0)
            top = np.argpartition(-fields, keep - 1, axis=1)[:, :keep]
            u = np.take_along_axis(u, top[:, :, None], axis=1)
        for arr, x in zip(out, (r, s2, y0, t, u)):
            arr[start:start + size] = x
    return ImageBlocks(*out, p=int(p), ensemble=ensemble, seed=int(seed))


def _dropped_violations(blocks: ImageBlocks, moved, margin) -> dict:
    """Blocks whose moved image violates the margin against a competitor that was not kept.

    Returns ``{block index: all its competitors}`` (drawn again from the block's stream).
    """
    n, d = blocks.image.shape
    if blocks.competitors.shape[1] == blocks.p - 1:
        return {}
    var = shape_variance(d, 1.0)
    found = {}
    for index, start in enumerate(range(0, n, CHUNK)):
        size = min(CHUNK, n - start)
        _, _, _, t, u = _chunk(d, blocks.p, blocks.ensemble, blocks.seed, index, size, var)
        y = moved[start:start + size]
        gaps = np.einsum("bd,bd->b", t, y)[:, None] - np.einsum("bmd,bd->bm", u, y)
        scale = 1.0 + abs(margin) + np.linalg.norm(y, axis=1) / math.sqrt(d)
        for b in np.nonzero(gaps.min(axis=1) < margin - 1e-9 * scale)[0]:
            found[start + int(b)] = np.ascontiguousarray(u[b])
    return found


@dataclass(frozen=True)
class ImageMarginResult(Result):
    """Largest margin with the image-space block cost (see :func:`max_margin_image`).

    ``status``: ``"converged"`` (root bracketed and found, every block's least move
    converged, no dropped competitor violated at the root), ``"not_converged"`` (a block's
    least move failed or a dropped competitor is still violated after ``REPAIR_ROUNDS``
    root searches; counts in ``failed_blocks``, ``dropped_violations``) or ``"no_bracket"``
    (no sign change found).  ``full_blocks``: blocks solved with all their competitors
    because a dropped one bound at an earlier root.
    """

    STATUSES = ("converged", "not_converged", "no_bracket")

    p: int
    d: int
    ensemble: str
    margin: float  # negative above the capacity of this equation
    stderr: float  # Monte-Carlo standard error of the margin (delta method)
    storable: bool
    expected_cost: float  # E[|y* - y0|^2 / r] at the root (control-variate estimate)
    expected_cost_stderr: float
    control_mean: float  # E[s^2 C_p(margin / sigma)], max_margin's equation at this margin
    control_coefficient: float  # regression coefficient of the control variate
    correlation: float  # between the image-space and the field-space block costs
    blocks: int
    kept_competitors: int
    failed_blocks: int
    dropped_violations: int
    full_blocks: int
    iterations: int
    residual: float  # |p E / (F d^2) - 1| at the root
    seed: int
    status: str
    converged: bool
    message: str
    validity: Validity | None = None
    model: str = ""  # the registry model that computed it (replica.common.registry)


def _estimate(costs, control, r, control_mean, control_err):
    """Regression estimate of E[costs / r] with the control variate ``control / r`` of known mean."""
    a, b = costs / r, control / r
    n = a.size
    vb = b.var()
    beta = float(np.mean((a - a.mean()) * (b - b.mean())) / vb) if vb > 0 else 0.0
    resid = a - beta * b
    mean = float(resid.mean() + beta * control_mean)
    err = math.hypot(float(resid.std(ddof=1) / math.sqrt(n)), beta * control_err)
    corr = float(np.corrcoef(a, b)[0, 1]) if vb > 0 and a.var() > 0 else 0.0
    return mean, err, beta, corr


@reports_validity("max_margin_image")
def max_margin_image(d, p, *, ensemble="gaussian", blocks=2000, seed=None, xtol=1e-4):
    """Largest margin at load ``p`` with the exact block cost in the image space ``R^d``.

    Solves ``p E[|y* - y0|^2 / r] = d^2`` for the margin ``k`` (units ``||W||_F / d``, as
    :func:`replica.max_margin`), where for one block ``y0`` is the cavity image, ``t`` and
    ``u_rho`` its candidate vectors, ``r = |e|^2`` and ``y*`` the least move of ``y0`` with
    ``(t - u_rho)^T y >= k`` for every competitor (:func:`least_move`).  Budget and scale
    law are those of :func:`replica.max_margin` (full rank, ``F = 1``); only the block cost
    differs: the water filling of :func:`replica.max_margin` treats the block's ``p`` fields
    as independent coordinates, this one moves the image they all project.  Derivation,
    assumptions and measured accuracy: ``notes/max_margin.md``, section "The block cost in
    the image space" (paper: Giorlandino, Goldt, Maillard, arXiv 2605.10795).  Stated
    tolerance: 5 % (:data:`TOLERANCE`) against the certified max margin, measured at d = 16,
    32 and 64, both ensembles, loads 0.2-0.9 p_c, as means over hundreds of instances
    (``experiments/margins``; the ``validity`` record of each call gives the verdict at the
    nearest measured point).

    The expectation is averaged over ``blocks`` sampled blocks (:func:`sample_image_blocks`,
    common random numbers for every margin), with the field-space water filling of the same
    blocks as a control variate: its mean is :func:`replica.max_margin`'s
    ``E[s^2 C_p(k / sigma)]`` from the Rao-Blackwellised estimator (``CONTROL_ROWS`` rows).
    The root is found by Brent's method in ``k``; ``stderr`` is the Monte-Carlo standard
    error of ``E`` at the root over the slope ``dE/dk`` (delta method).  Cost on one core:
    about 1-5 s per 1000 blocks at d = 32-64 (the least moves), plus the control's mean.

    Parameters
    ----------
    d : int
        Dimension, ``d >= 2``.
    p : int
        Number of stored pairs, an integer ``p >= 2`` (the block has ``p - 1`` competitors).
    ensemble : {"gaussian", "sphere"}, optional
        Embedding ensemble: N(0, 1/d) coordinates or unit-norm embeddings.
    blocks : int, optional
        Sampled blocks, ``100 <= blocks <= 10**6`` (the standard error falls like
        ``1 / sqrt(blocks)``).
    seed : None, int, SeedSequence or Generator, optional
        Seed of the sampled blocks and of the control's estimator (``None``: ``DEFAULT_SEED``).
    xtol : float, optional
        Absolute tolerance of the root in ``k``, in ``(0, 0.1]``.

    Returns
    -------
    ImageMarginResult
        ``margin`` (negative above this equation's capacity), ``stderr``, ``status``,
        ``converged``, the control-variate details, ``failed_blocks`` and
        ``dropped_violations``, and ``validity``.

    Raises
    ------
    ValueError
        If ``d < 2``, ``p`` is not an integer ``>= 2``, ``ensemble`` is unknown, ``blocks``
        or ``xtol`` is out of range, or the sample would not fit in memory.

    Warns
    -----
    ImageMarginWarning
        When ``status`` is not ``"converged"``.
    """
    d = check_int(d, "d", low=2)
    p = check_int(p, "p", low=2)
    ensemble = check_ensemble(ensemble)
    blocks = check_int(blocks, "blocks", low=100, high=10**6)
    if isinstance(xtol, bool) or not isinstance(xtol, (int, float)) or not (0.0 < float(xtol) <= 0.1):
        raise ValueError(f"xtol must be a number in (0, 0.1], got {xtol!r}")
    seed = resolve_seed(seed)
    keep = min(p - 1, KEEP * d)
    check_memory(8.0 * blocks * (keep + 3) * d, f"blocks={blocks} at d={d}, {keep} kept competitors")
    equation = _ImageEquation(sample_image_blocks(d, p, ensemble, blocks, seed, keep))
    common = dict(p=p, d=d, ensemble=ensemble, blocks=blocks, kept_competitors=keep, seed=seed)
    for _ in range(REPAIR_ROUNDS):
        k, lo, hi, bracket = _solve(equation, xtol)
        if not bracket:
            break
        violated = _dropped_violations(equation.sample, equation.evaluate(k).moved, k)
        if not violated:
            break
        equation.use_all_competitors(violated)  # and solve again with their full competitor sets
    if not bracket:
        result = ImageMarginResult(
            **common, margin=math.nan, stderr=math.inf, storable=False, expected_cost=math.nan,
            expected_cost_stderr=math.inf, control_mean=math.nan, control_coefficient=math.nan, correlation=math.nan,
            failed_blocks=equation.failed, dropped_violations=0, full_blocks=len(equation.full),
            iterations=equation.evaluations,
            residual=math.inf, status="no_bracket", converged=False,
            message=f"no sign change of p E / d^2 - 1 between {lo:.3g} and {hi:.3g}")
        warnings.warn(result.message, ImageMarginWarning, stacklevel=3)
        return result
    return _root_result(equation, k, len(violated), common)


class _Point(NamedTuple):
    mean: float
    err: float
    beta: float
    corr: float
    control_mean: float
    failed: int
    moved: np.ndarray
    slope: float | None = None  # d mean / dk, the regression coefficient held fixed


def _solve(equation, xtol):
    """The root of ``equation.h`` within ``xtol``: Newton's method from 0 with the slopes of the sample.

    Falls back to a bracket (:func:`_bracket`) and Brent's method when the slopes are missing
    or Newton's steps do not settle.  Returns ``(k, lo, hi, bracketed)``.
    """
    from ..common.roots import newton_root

    def newton(k):
        point = equation.evaluate(k)
        slope = None if point.slope is None else equation.sample.p * point.slope / equation.budget
        return equation.h(k), slope

    if equation.evaluate(0.0).slope is not None:
        search = newton_root(newton, 0.0, -math.inf, xtol, 60)
        if not search.exhausted:
            return search.x, search.x, search.x, True
    lo, hi, bracket = _bracket(equation.h)
    if not bracket:
        return math.nan, lo, hi, False
    return float(brentq(equation.h, lo, hi, xtol=xtol, rtol=1e-12, maxiter=200)), lo, hi, True


class _ImageEquation:
    """``p E[|y* - y0|^2 / r] / d^2 - 1`` on one fixed sample of blocks (common random numbers)."""

    def __init__(self, sample: ImageBlocks):
        self.sample = sample
        d = sample.image.shape[1]
        self.budget = float(d) ** 2
        # field-space water filling of the same blocks (the control variate): homogeneous, no rescaling needed
        self.target_field = np.einsum("bd,bd->b", sample.target, sample.image)
        self.competitor_fields = -np.sort(-np.einsum("bmd,bd->bm", sample.competitors, sample.image), axis=1)
        law = field_law(d, sample.ensemble)
        self.estimator = CostEstimator(0.0, 1, sample.seed, law)
        self.scales = block_scales(d, 1.0, law.name)
        self.cache = {}
        self.failed = 0
        self.evaluations = 0
        self.full = {}  # block index -> all its competitors, for blocks whose dropped ones bind

    def use_all_competitors(self, violated: dict):
        """Solve the blocks of ``violated`` with all their competitors from now on."""
        for b, competitors in violated.items():
            fields = -np.sort(-(competitors @ self.sample.image[b]))
            self.full[b] = (competitors, fields)
        self.cache.clear()

    def evaluate(self, k: float) -> _Point:
        from ._image_kernels import OK, least_move_slope, least_moves_slopes

        if k not in self.cache:
            s = self.sample
            n = s.norm.size
            moved, costs, statuses = np.empty_like(s.image), np.empty(n), np.empty(n, np.int64)
            dcosts = np.empty(n)
            least_moves_slopes(s.target, s.competitors, s.image, k, moved, costs, statuses, dcosts, MAX_ITER)
            u = self.target_field - k
            control, level, active = water_filling_sorted(u, self.competitor_fields)
            dcontrol = np.where(active > 0, 2.0 * (level - u), 0.0)  # d/dk of the water filling of u = t - k
            for b, (competitors, fields) in self.full.items():
                costs[b], statuses[b], _, _, dcosts[b] = least_move_slope(s.target[b], competitors, s.image[b], k,
                                                                          moved[b], MAX_ITER)
                one, lvl, act = water_filling_sorted(np.array([u[b]]), fields[None, :])
                control[b], dcontrol[b] = one[0], (2.0 * (lvl[0] - u[b]) if act[0] > 0 else 0.0)
            self.evaluations += 1
            c_mean, c_err, c_slope = scaled_block_cost(self.estimator, s.p, CONTROL_ROWS, k, self.scales, slopes=True)
            mean, err, beta, corr = _estimate(costs, control, s.norm, float(c_mean), float(c_err))
            slope = None if c_slope is None else float(np.mean((dcosts - beta * dcontrol) / s.norm) + beta * c_slope)
            failed = int(np.sum(statuses != OK))
            self.failed = max(self.failed, failed)
            self.cache[k] = _Point(mean, err, beta, corr, float(c_mean), failed, moved, slope)
        return self.cache[k]

    def h(self, k: float) -> float:
        return self.sample.p * self.evaluate(k).mean / self.budget - 1.0


def _bracket(h):
    """A sign change of the increasing ``h``: from 0 up by doubling 0.25, or down when ``h(0) > 0``."""
    if h(0.0) <= 0.0:
        lo, hi = 0.0, 0.25
        for _ in range(30):
            if h(hi) > 0.0:
                return lo, hi, True
            lo, hi = hi, 2.0 * hi
        return lo, hi, False
    lo, hi = -0.25, 0.0
    for _ in range(30):
        if h(lo) < 0.0:
            return lo, hi, True
        lo, hi = 2.0 * lo, lo
    return lo, hi, False


def _root_result(equation, k, dropped, common) -> ImageMarginResult:
    """The result at the root ``k``: its standard error from the slope of the cost, the status and the message."""
    blocks, keep = common["blocks"], common["kept_competitors"]
    at = equation.evaluate(k)
    slope = at.slope  # dE/dk of the sample (the regression coefficient held fixed)
    if slope is None:  # laws without slopes: a central difference
        step = max(0.02 * abs(k), 0.01)
        slope = (equation.evaluate(k + step).mean - equation.evaluate(k - step).mean) / (2.0 * step)
    stderr = at.err / slope if slope > 0 else math.inf
    failed = equation.failed
    residual = abs(equation.h(k))
    ok = failed == 0 and dropped == 0 and math.isfinite(stderr)
    message = (f"margin {k:.4g} +- {stderr:.2g} (Monte-Carlo s.e., {blocks} blocks, control correlation "
               f"{at.corr:.2f}); residual {residual:.2g}")
    if failed:
        message += f"; {failed} blocks' least moves did not converge"
    if dropped:
        message += f"; {dropped} blocks violate a competitor dropped from the kept {keep}"
    if not math.isfinite(stderr):
        message += "; the cost does not increase with the margin at the root"
    result = ImageMarginResult(
        **common, margin=k, stderr=stderr, storable=bool(k >= 0.0), expected_cost=at.mean,
        expected_cost_stderr=at.err, control_mean=at.control_mean, control_coefficient=at.beta,
        correlation=at.corr, failed_blocks=failed, dropped_violations=dropped, full_blocks=len(equation.full),
        iterations=equation.evaluations,
        residual=residual, status="converged" if ok else "not_converged", converged=ok, message=message)
    if not ok:
        warnings.warn(message, ImageMarginWarning, stacklevel=4)
    return result
