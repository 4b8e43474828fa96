"""Finite-size theory of the Hebbian (correlation-matrix) memory ``W_H = sum_mu u_mu e_mu^T``.

The score of candidate ``rho`` for input ``mu`` is ``s[rho, mu] = u_rho^T W_H e_mu``.
Input ``mu`` is recalled when its target score ``t = s[mu, mu]`` beats all ``p - 1``
competitor scores; an instance is stored when every input is recalled.

The model (derived in ``notes/hebbian_finite_size.md``) conditions on the
*environment* of one input: ``a = |e_mu|^2``, ``b = |u_mu|^2``, the crosstalk
vector ``r = sum_{nu != mu} (e_nu . e_mu) u_nu`` through its component along
``u_mu`` and its squared perpendicular norm.  Given the environment the target is
known, ``t = a b + u_mu . r``, and so is ``y = W_H e_mu``.  Each competitor ``nu``
is then written exactly as

    s_nu - x_nu c_nu = u_nu . (y_{-nu} - c_nu u_mu) + c_nu |u_nu|^2,

with ``c_nu = e_nu . e_mu`` and ``x_nu = u_nu . u_mu``; the pair term
``x_nu c_nu``, which sits in the target as well, is moved to the target side.  Its
law given the environment is Gaussian-with-quadratic-term (``gaussian``
ensemble) or the projection of a uniform unit vector (``sphere``), and the
largest of the ``p - 1`` competitors has the exact law ``F^(p-1)``.  The
environment is taken leave-one-out (``p - 2`` crosstalk terms), which makes the
competitor's condition exact given it.  What is neglected (named and measured in
the note): dependence between different inputs (product over inputs), the
dependence between competitors of one input beyond one shared leave-one-out
environment, and, for ``sphere``, the non-Gaussianity of the crosstalk vector ``r``.

Public functions
----------------
hebbian_input_failure_probability
    P(one input is not recalled).
hebbian_success_probability
    P(all p inputs recalled), ``(1 - failure)^p``.
hebbian_capacity
    The real ``p`` at which that probability is 1/2.
hebbian_score_moments, hebbian_score_laws
    Exact score moments and model samplers of the target and competitor laws,
    in units of the competitor standard deviation.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special, stats

from .common.checks import check_int, check_kappa, check_memory, check_real
from .common.ensembles import ENSEMBLES, check_ensemble
from .common.results import Result
from .common.seeds import as_generator

__all__ = [
    "ENSEMBLES",
    "hebbian_input_failure_probability",
    "hebbian_success_probability",
    "hebbian_capacity",
    "HebbianCapacityResult",
    "hebbian_score_moments",
    "HebbianScoreMoments",
    "hebbian_score_laws",
    "HebbianScoreLaws",
]


# Quadrature sizes.  Measured (notes/hebbian_finite_size.md): relative error of the
# failure probability below 2e-3 against grids twice as fine, for d = 16 ... 1024.
_GAUSS_NODES = {"norm": 8, "crosstalk_scale": 3, "perp": 3, "z": 41, "pair": 8, "chi": 3}
_SPHERE_NODES = {"crosstalk_scale": 5, "perp": 6, "z": 121, "pair": 16}
_Z_MAX = 8.5
_PRUNE = 1e-9  # environment points whose (bounded) contribution is below this fraction are skipped


# --------------------------------------------------------------------------------------
# quadrature helpers
# --------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _hermite(n):
    x, w = special.roots_hermitenorm(n)
    x.setflags(write=False)
    w = w / w.sum()
    w.setflags(write=False)
    return x, w


@functools.lru_cache(maxsize=256)
def _gamma_nodes(shape, scale, n):
    nodes, weights = _mapped_nodes(stats.gamma(shape, scale=scale), n)
    nodes.setflags(write=False)
    return nodes, weights


def _mapped_nodes(dist, n):
    """Nodes and weights for E[f(X)]: Gauss-Hermite nodes pushed through ``ppf(Phi(x))``."""
    x, w = _hermite(n)
    lo = dist.ppf(special.ndtr(np.minimum(x, 0.0)))
    hi = dist.isf(special.ndtr(-np.maximum(x, 0.0)))
    return np.where(x <= 0, lo, hi), w


def _z_grid(n):
    z = np.linspace(-_Z_MAX, _Z_MAX, n)
    w = np.exp(-0.5 * z * z)
    return z, w / w.sum()


def _sphere_crosstalk_scale(d, p):
    """Gamma law matched to mean and variance of S = sum of p - 1 squared projections (sphere)."""
    mean = (p - 1.0) / d
    var = (p - 1.0) * (2.0 * d - 2.0) / (d * d * (d + 2.0))
    return stats.gamma(mean * mean / var, scale=var / mean)


def _projection_law(d):
    """Law of x = v . e for a fixed unit v and e uniform on S^{d-1}: x = 2 B - 1, B ~ Beta((d-1)/2, (d-1)/2)."""
    half = 0.5 * (d - 1.0)
    return stats.beta(half, half, loc=-1.0, scale=2.0)


def _projection_sf(v, d):
    """P(x > v) for the projection law, density ∝ (1 - x^2)^((d-3)/2) on [-1, 1]."""
    half = 0.5 * (d - 1.0)
    inside = special.betainc(half, half, np.clip(0.5 * (1.0 - v), 0.0, 1.0))
    return np.where(v >= 1.0, 0.0, np.where(v <= -1.0, 1.0, inside))


# --------------------------------------------------------------------------------------
# environments
# --------------------------------------------------------------------------------------
def _gaussian_environment(d, p):
    """Flattened leave-one-out environment grid (a, b, t_{-nu}, |y_{-nu}|^2, weight), gaussian ensemble.

    The crosstalk of the environment has the ``p - 2`` terms other than the competitor's own
    pair term, which is treated exactly in :func:`_gaussian_competitor_sf`.
    """
    nodes = _GAUSS_NODES
    a, wa = _gamma_nodes(0.5 * d, 2.0 / d, nodes["norm"])  # |e|^2 and |u|^2 ~ chi^2_d / d
    s_over_a, ws = _crosstalk_nodes_gaussian(d, p)
    chi, wc = _gamma_nodes(0.5 * (d - 1.0), 2.0, nodes["perp"])
    z, wz = _z_grid(nodes["z"])
    A, B, SA, C, Z = np.meshgrid(a, a, s_over_a, chi, z, indexing="ij")
    weight = np.einsum("i,j,k,l,m->ijklm", wa, wa, ws, wc, wz).ravel()
    A, B, SA, C, Z = (v.ravel() for v in (A, B, SA, C, Z))
    S = A * SA                                            # sum_{lam != mu, nu} c_lam^2 ~ (a/d) chi^2_{p-2}
    h = A * np.sqrt(B) + np.sqrt(S / d) * Z               # y_{-nu} . u_mu / |u_mu|
    target = np.sqrt(B) * h                               # t_{-nu}
    y2 = h * h + (S / d) * C                              # |y_{-nu}|^2
    return A, B, target, y2, weight


def _crosstalk_nodes_gaussian(d, p):
    if p - 2.0 <= 1e-12:
        return np.zeros(1), np.ones(1)
    return _gamma_nodes(0.5 * (p - 2.0), 2.0 / d, _GAUSS_NODES["crosstalk_scale"])


def _gaussian_competitor_sf(target, y2, a, b, d):
    """P(s_nu - x_nu c_nu > t | environment) for the gaussian ensemble (exact given the environment).

    With xi = sqrt(d) u_nu . v_hat, v = y_{-nu} - c u_mu and |u_nu|^2 = (xi^2 + k)/d, k ~ chi^2_{d-1}:
    s~ = |v| xi / sqrt(d) + c (xi^2 + k) / d, a quadratic in the standard normal xi given (c, k).
    """
    xc, wxc = _hermite(_GAUSS_NODES["pair"])
    kk, wk = _gamma_nodes(0.5 * (d - 1.0), 2.0, _GAUSS_NODES["chi"])
    t = target[:, None, None]
    c = np.sqrt(a / d)[:, None, None] * xc[None, :, None]
    quad = c / d
    lin = np.sqrt(np.maximum(y2[:, None, None] - 2.0 * c * t + c * c * b[:, None, None], 0.0) / d)
    const = c * kk[None, None, :] / d - t
    disc = lin * lin - 4.0 * quad * const
    q = -0.5 * (lin + np.sqrt(np.maximum(disc, 0.0)))
    with np.errstate(divide="ignore", invalid="ignore"):
        near = const / q                                  # the root near -const/lin
        far = q / quad                                    # the root at |xi| ~ d |v| / |c|
        prob = special.ndtr(-near) + np.where(quad > 0, special.ndtr(far), -special.ndtr(-far))
        linear_only = special.ndtr(const / lin)
    prob = np.where(disc <= 0.0, np.where(quad > 0, 1.0, 0.0), prob)
    prob = np.where(quad == 0.0, linear_only, prob)
    return np.clip(np.einsum("eij,i,j->e", prob, wxc, wk), 0.0, 1.0)


def _gaussian_failure(d, p):
    a, b, target, y2, weight = _gaussian_environment(d, p)
    n = p - 1.0
    # Cheap bound to skip environment points that cannot matter: Gaussian competitors.
    rough = -np.expm1(n * special.log_ndtr(target / np.sqrt((y2 + a * (1.0 + 2.0 / d)) / d)))
    bound = weight * np.minimum(1.0, 30.0 * rough)
    keep = bound > _PRUNE * bound.sum()
    sf = _gaussian_competitor_sf(target[keep], y2[keep], a[keep], b[keep], d)
    with np.errstate(divide="ignore"):
        fail = -np.expm1(n * np.log1p(-np.minimum(sf, 1.0)))
    return float(np.dot(fail, weight[keep]))


def _sphere_environment(d, p):
    """Leave-one-out environment grid (t_{-nu}, |y_{-nu}|^2, weight) for the sphere ensemble."""
    nodes = _SPHERE_NODES
    if p - 2.0 <= 1e-12:
        S, ws = np.zeros(1), np.ones(1)
    else:
        S, ws = _mapped_nodes(_sphere_crosstalk_scale(d, p - 1.0), nodes["crosstalk_scale"])
    chi, wc = _gamma_nodes(0.5 * (d - 1.0), 2.0, nodes["perp"])
    z, wz = _z_grid(nodes["z"])
    SS, C, Z = np.meshgrid(S, chi, z, indexing="ij")
    weight = np.einsum("i,j,k->ijk", ws, wc, wz).ravel()
    SS, C, Z = (v.ravel() for v in (SS, C, Z))
    target = 1.0 + np.sqrt(SS / d) * Z
    y2 = target * target + (SS / d) * C
    return target, y2, weight


def _sphere_competitor_sf(target, y2, d):
    """P(s_nu - x_nu c_nu > t | environment) for the sphere ensemble: |v| x + c, x and c projections."""
    c, wcc = _mapped_nodes(_projection_law(d), _SPHERE_NODES["pair"])
    t = target[:, None]
    norm_v = np.sqrt(np.maximum(y2[:, None] - 2.0 * c * t + c * c, 1e-300))
    return np.clip(_projection_sf((t - c) / norm_v, d) @ wcc, 0.0, 1.0)


def _sphere_failure(d, p):
    target, y2, weight = _sphere_environment(d, p)
    sf = _sphere_competitor_sf(target, y2, d)
    with np.errstate(divide="ignore"):
        fail = -np.expm1((p - 1.0) * np.log1p(-np.minimum(sf, 1.0)))
    return float(np.dot(fail, weight))


def _failure(d, p, ensemble):
    return _gaussian_failure(d, p) if ensemble == "gaussian" else _sphere_failure(d, p)


def _check_d_p(d, p, ensemble):
    d = check_int(d, "d", low=2)
    p = check_real(p, "p", low=2.0)
    check_ensemble(ensemble)
    return d, p


# --------------------------------------------------------------------------------------
# public: probabilities
# --------------------------------------------------------------------------------------
def hebbian_input_failure_probability(d, p, ensemble="gaussian"):
    """Probability that one given input is not recalled by the Hebbian memory.

    ``E_env[1 - F(t)^(p-1)]`` over the environment of the input (norms and crosstalk),
    with ``F`` the exact conditional law of one competitor score (with its pair term
    moved to the target side); see ``notes/hebbian_finite_size.md``.

    Parameters
    ----------
    d : int
        Dimension, ``d >= 2``.
    p : float
        Number of stored associations, ``p >= 2`` (real values interpolate smoothly).
    ensemble : {"gaussian", "sphere"}
        Embedding ensemble: i.i.d. N(0, I/d) or uniform unit vectors.

    Returns
    -------
    float
        The probability, in ``[0, 1]``.

    Raises
    ------
    ValueError
        If ``d < 2``, ``p < 2`` or the ensemble is unknown.
    """
    d, p = _check_d_p(d, p, ensemble)
    return _failure(d, p, ensemble)


def hebbian_success_probability(d, p, ensemble="gaussian"):
    """Probability that ``W_H = sum_mu u_mu e_mu^T`` stores all ``p`` associations.

    ``(1 - f)^p`` with ``f = hebbian_input_failure_probability(d, p, ensemble)``:
    the inputs are treated as independent (measured: the product of the per-input
    rates agrees with the sampled probability within about 0.01 at d = 64;
    ``notes/hebbian_finite_size.md``).  Parameters and errors as
    :func:`hebbian_input_failure_probability`.
    """
    d, p = _check_d_p(d, p, ensemble)
    return float(math.exp(p * math.log1p(-min(_failure(d, p, ensemble), 1.0))))


# --------------------------------------------------------------------------------------
# public: capacity
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class HebbianCapacityResult(Result):
    """Finite-size Hebbian capacity: ``P(all stored) = 1/2`` at ``p = p_c`` (see :func:`hebbian_capacity`).

    ``status``: ``"converged"`` (``|P - 1/2| <= tol`` at ``p_c``), ``"not_converged"``
    (the root was not accepted), ``"max_iter"`` (Brent's method ran out of iterations)
    or ``"unbracketed"`` (``P(all stored) <= 1/2`` already at ``p = 2``, or still above
    1/2 at ``p = 1e15``; ``p_c`` is then NaN).  ``message`` gives the residual.
    """

    STATUSES = ("converged", "not_converged", "max_iter", "unbracketed")

    d: int
    ensemble: str
    kappa: float
    p_c: float
    alpha: float
    alpha_c: float
    success_probability: float
    input_failure_probability: float
    converged: bool
    iterations: int
    residual: float  # |P(all stored) - 1/2| at p_c
    status: str
    message: str


_SECANT_STEPS = 12  # secant steps on ln(-ln P) before the bracketed Brent search


class _SuccessGap:
    """``g(x) = ln P(all stored at p = e^x) + ln 2`` and its nearly linear form, counting calls."""

    def __init__(self, d, ensemble):
        self.d, self.ensemble = d, ensemble
        self.calls = 0

    def __call__(self, log_p):
        self.calls += 1
        fail = _failure(self.d, math.exp(log_p), self.ensemble)
        return math.exp(log_p) * math.log1p(-min(fail, 1.0 - 1e-300)) + math.log(2.0)

    def linear(self, log_p):
        """``ln(-ln P) - ln ln 2``: nearly linear in ``ln p``."""
        minus_ln_p = math.log(2.0) - self(log_p)
        return math.log(minus_ln_p) - math.log(math.log(2.0)) if minus_ln_p > 0 else -math.inf

    def secant(self, lo, rel_tol):
        """Secant steps from below the asymptotic guess; ``(root or None, last iterate)``."""
        # Asymptotic guess p ln p = d^2/8 lies above the finite-size root at small d; start below it.
        guess = self.d * self.d / 8.0
        for _ in range(60):
            guess = self.d * self.d / (8.0 * math.log(max(guess, 2.0)))
        x0 = max(math.log(0.6 * guess), lo + 0.05)
        h0 = self.linear(x0)
        x1 = max(x0 - h0 / 8.0, lo + 0.01) if math.isfinite(h0) else x0 + 1.0
        for _ in range(_SECANT_STEPS):
            h1 = self.linear(x1)
            if not (math.isfinite(h0) and math.isfinite(h1)) or h1 == h0:
                break
            x2 = x1 - h1 * (x1 - x0) / (h1 - h0)
            if not math.isfinite(x2) or x2 < lo:
                break
            x0, h0, x1 = x1, h1, x2
            if abs(x1 - x0) <= rel_tol:
                return x1, x1
        return None, x1

    def brent(self, lo, start, rel_tol, max_iter):
        """Bracket by factors of 2 above ``start``, then Brent; ``(root, status, message)``."""
        hi = max(start if math.isfinite(start) else lo, lo) + math.log(2.0)
        while self(hi) > 0.0:
            lo, hi = hi, hi + math.log(2.0)
            if hi > math.log(1e15):
                return math.nan, "unbracketed", "no p with P(all stored) < 1/2 found below 1e15"
        root, info = optimize.brentq(self, lo, hi, xtol=rel_tol * 1e-2, rtol=4 * np.finfo(float).eps,
                                     maxiter=max_iter, full_output=True, disp=False)
        if not info.converged:
            return root, "max_iter", f"Brent root search did not converge in {max_iter} iterations ({info.flag})"
        return root, None, None


def hebbian_capacity(d, ensemble="gaussian", kappa=1.0, *, rel_tol=1e-9, tol=1e-6, max_iter=100):
    """Real ``p_c`` at which the Hebbian memory stores everything with probability 1/2.

    Solves ``hebbian_success_probability(d, p_c, ensemble) = 1/2`` by secant steps on
    ``ln(-ln P)`` against ``ln p`` (nearly linear), with a bracketed Brent search as
    fallback; the root is accepted only if ``|P - 1/2| <= tol``.
    ``alpha = p_c ln p_c / d^2``; ``alpha_c = 1/8`` is the ``d -> infinity`` value
    (``notes/hebbian_finite_size.md``).

    Parameters
    ----------
    d : int
        Dimension, ``d >= 2``.
    ensemble : {"gaussian", "sphere"}
        Embedding ensemble.
    kappa : float
        Rank fraction.  Only ``kappa = 1`` (the Hebbian matrix itself) is
        supported: the finite-size law of the rank-``kappa d`` truncation of
        ``W_H`` is not derived here.  Its asymptote ``F(kappa)/8`` is
        :func:`replica.alpha_c_hebbian`.
    rel_tol : float
        Relative accuracy of ``p_c`` (on ``ln p``), in ``[1e-14, 1e-2]``.
    tol : float
        Accepted ``|P(all stored) - 1/2|`` at ``p_c``, in ``(0, 0.1]``.
    max_iter : int
        Iterations of the Brent fallback.

    Returns
    -------
    HebbianCapacityResult
        ``status`` and ``message`` say whether and how the root was found; ``p_c`` is
        NaN when ``status == "unbracketed"``.

    Raises
    ------
    ValueError
        If ``d < 2``, the ensemble is unknown, ``kappa`` is outside (0, 1] or
        ``kappa != 1``, or ``rel_tol``, ``tol`` or ``max_iter`` is out of range.
    """
    d = check_int(d, "d", low=2)
    check_ensemble(ensemble)
    kappa = float(check_kappa(kappa))
    if kappa != 1.0:
        raise ValueError(
            f"kappa must be 1 for hebbian_capacity (finite-size theory of the rank-truncated "
            f"Hebbian memory not implemented; its d -> infinity capacity is alpha_c_hebbian(kappa)), "
            f"got {kappa!r}")
    rel_tol = check_real(rel_tol, "rel_tol", low=1e-14, high=1e-2)
    tol = check_real(tol, "tol", low=0.0, high=0.1, low_open=True)
    max_iter = check_int(max_iter, "max_iter", low=1)
    gap = _SuccessGap(d, ensemble)
    lo = math.log(2.0)
    status = message = None
    if gap(lo) <= 0.0:
        log_p, status, message = math.nan, "unbracketed", "P(all stored) <= 1/2 already at p = 2"
    else:
        log_p, last = gap.secant(lo, rel_tol)
        if log_p is None:
            log_p, status, message = gap.brent(lo, last, rel_tol, max_iter)
    return _hebbian_capacity_result(gap, kappa, math.exp(log_p), tol, status, message)


def _hebbian_capacity_result(gap, kappa, p_c, tol, status, message) -> HebbianCapacityResult:
    d = gap.d
    if status == "unbracketed":
        return HebbianCapacityResult(d=d, ensemble=gap.ensemble, kappa=kappa, p_c=math.nan, alpha=math.nan,
                                     alpha_c=0.125, success_probability=math.nan,
                                     input_failure_probability=math.nan, converged=False,
                                     iterations=gap.calls, residual=math.nan, status=status, message=message)
    fail = _failure(d, p_c, gap.ensemble)
    prob = math.exp(p_c * math.log1p(-fail))
    residual = abs(prob - 0.5)
    detail = f"|P - 1/2| = {residual:.3g} (tol {tol:.3g}), {gap.calls} evaluations"
    if status is None:
        status = "converged" if residual <= tol else "not_converged"
        message = f"{'converged' if residual <= tol else 'root not accepted'}: {detail}"
    else:
        message = f"{message}; {detail}"
    return HebbianCapacityResult(
        d=d, ensemble=gap.ensemble, kappa=kappa, p_c=p_c, alpha=p_c * math.log(p_c) / (d * d), alpha_c=0.125,
        success_probability=prob, input_failure_probability=fail, converged=status == "converged",
        iterations=gap.calls, residual=residual, status=status, message=message)


# --------------------------------------------------------------------------------------
# public: score laws
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class HebbianScoreMoments(Result):
    """Exact first two moments of the Hebbian scores (raw units and competitor-std units).

    A closed form: ``status`` is always ``"ok"``.
    """

    STATUSES = ("ok",)

    d: int
    p: float
    ensemble: str
    competitor_std: float
    target_mean: float
    target_std: float
    norm_std: float
    crosstalk_std: float
    standardized_target_mean: float
    standardized_target_std: float
    heuristic_competitor_std: float
    status: str = "ok"
    converged: bool = True
    message: str = "exact moments"


def hebbian_score_moments(d, p, ensemble="gaussian"):
    """Exact mean and variance of target and competitor scores of ``W_H``.

    Gaussian ensemble (``E|e|^4 = 1 + 2/d``)::

        E t = 1,  Var t = (1 + 2/d)^2 - 1 + (p - 1)/d^2,   Var s = 2 (1 + 2/d)/d + (p - 2)/d^2

    Sphere: ``Var t = (p - 1)/d^2``, ``Var s = 2/d + (p - 2)/d^2``.  The first term of
    ``Var t`` is the norm factor ``|u|^2 |e|^2`` (standard deviation about ``2/sqrt(d)``);
    the ``2/d`` terms of ``Var s`` come from ``(u_rho . u_mu)|e_mu|^2`` and
    ``|u_rho|^2 (e_rho . e_mu)``.  ``heuristic_competitor_std = sqrt(p)/d`` is the
    ``p >> d`` value of the asymptotic theory.  ``notes/hebbian_finite_size.md``.

    Parameters and errors as :func:`hebbian_input_failure_probability`; returns a
    :class:`HebbianScoreMoments`.
    """
    d, p = _check_d_p(d, p, ensemble)
    fourth = 1.0 + 2.0 / d if ensemble == "gaussian" else 1.0
    norm_var = fourth * fourth - 1.0
    cross_var = (p - 1.0) / (d * d)
    comp_var = 2.0 * fourth / d + (p - 2.0) / (d * d)
    sd = math.sqrt(comp_var)
    t_sd = math.sqrt(norm_var + cross_var)
    return HebbianScoreMoments(d=d, p=p, ensemble=ensemble, competitor_std=sd, target_mean=1.0,
                               target_std=t_sd, norm_std=math.sqrt(norm_var), crosstalk_std=math.sqrt(cross_var),
                               standardized_target_mean=1.0 / sd, standardized_target_std=t_sd / sd,
                               heuristic_competitor_std=math.sqrt(p) / d)


@dataclass(frozen=True)
class HebbianScoreLaws(Result):
    """Model laws of the Hebbian scores in units of the competitor standard deviation.

    Samplers draw from the finite-size model of ``notes/hebbian_finite_size.md``
    (environment of one input, then its competitors); they are meant for figures.
    ``threshold = sqrt(2 ln p)`` is the leading extreme-value level and
    ``gaussian_expected_max`` the exact mean of the largest of ``p - 1`` i.i.d.
    N(0, 1), both for comparison with the largest competitor.  ``status`` is always
    ``"ok"``.  The samplers take ``seed`` (None, int, SeedSequence or Generator;
    ``None`` means ``DEFAULT_SEED``); a Generator is consumed as it is.
    """

    STATUSES = ("ok",)

    d: int
    p: int
    ensemble: str
    moments: HebbianScoreMoments
    threshold: float
    gaussian_expected_max: float
    input_failure_probability: float
    status: str = "ok"
    converged: bool = True
    message: str = "exact moments and model samplers"

    @property
    def competitor_std(self) -> float:
        return self.moments.competitor_std

    @property
    def target_mean(self) -> float:
        return self.moments.standardized_target_mean

    @property
    def target_std(self) -> float:
        return self.moments.standardized_target_std

    # ----- sampling -------------------------------------------------------------------
    def _environment(self, size, rng, *, leave_one_out=False):
        """Sample (a, b, t, |y|^2); with ``leave_one_out`` the crosstalk has p - 2 terms (t_{-nu}, y_{-nu})."""
        check_memory(64.0 * math.prod(np.atleast_1d(size)), f"a Hebbian sample of size {size!r}")
        d = self.d
        terms = self.p - (2 if leave_one_out else 1)
        if self.ensemble == "gaussian":
            a = rng.gamma(0.5 * d, 2.0 / d, size)
            b = rng.gamma(0.5 * d, 2.0 / d, size)
            S = a * rng.gamma(0.5 * terms, 2.0 / d, size) if terms > 0 else np.zeros(size)
        else:
            a = np.ones(size)
            b = np.ones(size)
            S = _sphere_crosstalk_scale(d, terms + 1.0).rvs(size=size, random_state=rng) if terms > 0 \
                else np.zeros(size)
        h = a * np.sqrt(b) + np.sqrt(S / d) * rng.standard_normal(size)
        target = np.sqrt(b) * h
        y2 = h * h + (S / d) * rng.chisquare(d - 1, size)
        return a, b, target, y2

    def _competitors(self, a, b, target, y2, count, rng):
        """Actual competitor scores s_nu (pair term included), shape (len(a), count)."""
        d = self.d
        n = a.size
        norm_y = np.sqrt(y2)[:, None]
        along = np.clip(target[:, None] / np.maximum(norm_y, 1e-300), -np.sqrt(b)[:, None], np.sqrt(b)[:, None])
        perp = np.sqrt(np.maximum(b[:, None] - along * along, 0.0))
        if self.ensemble == "gaussian":
            c = np.sqrt(a / d)[:, None] * rng.standard_normal((n, count))
            xi1 = rng.standard_normal((n, count))
            xi2 = rng.standard_normal((n, count))
            rest = rng.chisquare(d - 2, (n, count)) if d > 2 else 0.0
            u2 = (xi1 * xi1 + xi2 * xi2 + rest) / d
            proj_y = xi1 / math.sqrt(d)
            proj_perp = xi2 / math.sqrt(d)
        else:
            law = _projection_law(d)
            c = law.rvs(size=(n, count), random_state=rng)
            x1 = law.rvs(size=(n, count), random_state=rng)
            x2 = _projection_law(d - 1).rvs(size=(n, count), random_state=rng) if d > 2 else \
                rng.choice([-1.0, 1.0], size=(n, count))
            u2 = 1.0
            proj_y = x1
            proj_perp = np.sqrt(np.maximum(1.0 - x1 * x1, 0.0)) * x2
        # u_nu . y_{-nu} and x_nu = u_nu . u_mu from the components along y and along u_mu's perpendicular part
        x_pair = along * proj_y + perp * proj_perp
        return norm_y * proj_y + c * u2, x_pair * c

    def rvs_target(self, size, seed=None):
        """Target scores ``s[mu, mu]`` / competitor std, from the model environment."""
        size = check_int(size, "size", low=0)
        _, _, target, _ = self._environment(size, as_generator(seed))
        return target / self.competitor_std

    def rvs_competitor(self, size, seed=None):
        """One competitor score ``s[rho, mu]`` / competitor std per sample (model law)."""
        size = check_int(size, "size", low=0)
        rng = as_generator(seed)
        a, b, target, y2 = self._environment(size, rng, leave_one_out=True)
        score, _ = self._competitors(a, b, target, y2, 1, rng)
        return score[:, 0] / self.competitor_std

    def rvs_joint(self, size, seed=None, *, chunk=2048):
        """Pairs (target, largest competitor) / competitor std, and the recall indicator.

        Returns ``(target, top_competitor, recalled)`` from the leave-one-out environment:
        ``recalled`` is the model's condition ``max_nu (s_nu - x_nu c_nu) < t_{-nu}`` and
        ``target = t_{-top} + x_top c_top`` is the full target seen by the largest
        competitor.  Cost ``size * (p - 1)``.
        """
        size = check_int(size, "size", low=0)
        rng = as_generator(seed)
        targets, tops, oks = [], [], []
        for start in range(0, size, chunk):
            m = min(chunk, size - start)
            a, b, target, y2 = self._environment(m, rng, leave_one_out=True)
            score, pair = self._competitors(a, b, target, y2, int(self.p) - 1, rng)
            top = np.argmax(score, axis=1)
            rows = np.arange(m)
            targets.append(target + pair[rows, top])
            tops.append(score[rows, top])
            oks.append(np.all(score - pair < target[:, None], axis=1))
        return (_concatenate(targets) / self.competitor_std, _concatenate(tops) / self.competitor_std,
                _concatenate(oks).astype(bool))


def _concatenate(arrays):
    return np.concatenate(arrays) if arrays else np.empty(0)


def hebbian_score_laws(d, p, ensemble="gaussian"):
    """Predicted target and competitor score laws of the Hebbian memory.

    Parameters
    ----------
    d : int
        Dimension, ``d >= 2``.
    p : int
        Number of associations, ``p >= 2`` (integer: samplers draw ``p - 1`` competitors).
    ensemble : {"gaussian", "sphere"}

    Returns
    -------
    HebbianScoreLaws
        Exact moments, the threshold ``sqrt(2 ln p)``, and model samplers
        (``rvs_target``, ``rvs_competitor``, ``rvs_joint``).  See
        ``notes/hebbian_finite_size.md``.

    Raises
    ------
    ValueError
        If ``d < 2``, ``p < 2`` or the ensemble is unknown.
    """
    from .extremes import expected_max

    d, _ = _check_d_p(d, p, ensemble)
    p = check_int(p, "p", low=2)
    return HebbianScoreLaws(d=d, p=p, ensemble=ensemble, moments=hebbian_score_moments(d, p, ensemble),
                            threshold=math.sqrt(2.0 * math.log(p)),
                            gaussian_expected_max=float(expected_max(p - 1.0)),
                            input_failure_probability=_failure(d, float(p), ensemble))
