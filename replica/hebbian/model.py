"""The finite-size model of the Hebbian memory: one input's environment and its competitors.

Quadrature over the environment of one input (``a = |e_mu|^2``, ``b = |u_mu|^2`` and
the leave-one-out crosstalk) of the probability that the largest of its ``p - 1``
competitors beats the target, for the ``gaussian`` and ``sphere`` ensembles.  The
model and what it neglects are derived in ``notes/hebbian_finite_size.md``; the
public functions are in :mod:`replica.hebbian.finite_size`.
"""

from __future__ import annotations

import functools

import numpy as np
from scipy import special, stats

from ..common.checks import check_int, check_real
from ..common.ensembles import check_ensemble

__all__ = ["failure_probability", "memory_failure_probability", "PAIRINGS", "check_d_p",
           "sphere_crosstalk_scale", "projection_law"]

PAIRINGS = ("stored", "fresh")
"""Competitors of :func:`memory_failure_probability`: the other stored outputs, or fresh candidates."""

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


def sphere_crosstalk_scale(d, p):
    """Gamma law matched to mean and variance of S = sum of p - 1 squared projections (sphere)."""
    mean = (p - 1.0) / d
    var = (p - 1.0) * (2.0 * d - 2.0) / (d * d * (d + 2.0))
    return stats.gamma(mean * mean / var, scale=var / mean)


def projection_law(d):
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
def _gaussian_environment(d_in, d_out, p, crosstalk_terms=None):
    """Flattened environment grid (a, b, t, |y|^2, weight), gaussian ensemble.

    ``e ~ N(0, I/d_in)``, ``u ~ N(0, I/d_out)`` (``d_in = d_out = d`` for the square
    memory).  By default the crosstalk has the ``p - 2`` terms other than the competitor's
    own pair term (leave-one-out), which is treated exactly in
    :func:`_gaussian_competitor_sf`; ``crosstalk_terms`` overrides that count (``p - 1``
    for fresh candidates, which have no pair term).  The dimensions may be real (the
    effective ranks of ``replica.variants.covariance``).
    """
    nodes = _GAUSS_NODES
    terms = p - 2.0 if crosstalk_terms is None else crosstalk_terms
    a, wa = _gamma_nodes(0.5 * d_in, 2.0 / d_in, nodes["norm"])  # |e|^2 ~ chi^2_{d_in} / d_in
    b, wb = _gamma_nodes(0.5 * d_out, 2.0 / d_out, nodes["norm"])  # |u|^2 ~ chi^2_{d_out} / d_out
    s_over_a, ws = _crosstalk_nodes_gaussian(d_in, terms)
    chi, wc = _chi_square_nodes(d_out - 1.0, nodes["perp"])
    z, wz = _z_grid(nodes["z"])
    A, B, SA, C, Z = np.meshgrid(a, b, s_over_a, chi, z, indexing="ij")
    weight = np.einsum("i,j,k,l,m->ijklm", wa, wb, ws, wc, wz).ravel()
    A, B, SA, C, Z = (v.ravel() for v in (A, B, SA, C, Z))
    S = A * SA                                            # sum of the crosstalk c_lam^2 ~ (a/d_in) chi^2_terms
    h = A * np.sqrt(B) + np.sqrt(S / d_out) * Z           # y . u_mu / |u_mu|
    target = np.sqrt(B) * h                               # t
    y2 = h * h + (S / d_out) * C                          # |y|^2
    return A, B, target, y2, weight


def _chi_square_nodes(dof, n):
    """Nodes of ``chi^2_dof`` (a point mass at 0 when ``dof`` is 0, i.e. a rank-one direction)."""
    if dof <= 1e-12:
        return np.zeros(1), np.ones(1)
    return _gamma_nodes(0.5 * dof, 2.0, n)


def _crosstalk_nodes_gaussian(d_in, terms):
    if terms <= 1e-12:
        return np.zeros(1), np.ones(1)
    return _gamma_nodes(0.5 * terms, 2.0 / d_in, _GAUSS_NODES["crosstalk_scale"])


def _gaussian_competitor_sf(target, y2, a, b, d_in, d_out):
    """P(s_nu - x_nu c_nu > t | environment) for the gaussian ensemble (exact given the environment).

    With xi = sqrt(d_out) u_nu . v_hat, v = y_{-nu} - c u_mu and |u_nu|^2 = (xi^2 + k)/d_out,
    k ~ chi^2_{d_out-1}, c ~ N(0, a/d_in): s~ = |v| xi / sqrt(d_out) + c (xi^2 + k) / d_out, a
    quadratic in the standard normal xi given (c, k).
    """
    xc, wxc = _hermite(_GAUSS_NODES["pair"])
    kk, wk = _chi_square_nodes(d_out - 1.0, _GAUSS_NODES["chi"])
    t = target[:, None, None]
    c = np.sqrt(a / d_in)[:, None, None] * xc[None, :, None]
    quad = c / d_out
    lin = np.sqrt(np.maximum(y2[:, None, None] - 2.0 * c * t + c * c * b[:, None, None], 0.0) / d_out)
    const = c * kk[None, None, :] / d_out - t
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


def _gaussian_failure(d_in, d_out, p, unstored=0.0):
    a, b, target, y2, weight = _gaussian_environment(d_in, d_out, p)
    n = p - 1.0
    # Cheap bound to skip environment points that cannot matter: Gaussian competitors
    # (an upper bound for the unstored ones too, whose variance y2 / d_out is smaller).
    rough = -np.expm1((n + unstored) * special.log_ndtr(target / np.sqrt((y2 + a * (1.0 + 2.0 / d_out) * (d_out / d_in))
                                                                         / d_out)))
    bound = weight * np.minimum(1.0, 30.0 * rough)
    keep = bound > _PRUNE * bound.sum()
    sf = _gaussian_competitor_sf(target[keep], y2[keep], a[keep], b[keep], d_in, d_out)
    with np.errstate(divide="ignore"):
        log_hold = n * np.log1p(-np.minimum(sf, 1.0))
        if unstored:
            # u_rho ~ N(0, I/d) independent of W: u_rho . y ~ N(0, |y|^2 / d), with |y|^2 the
            # leave-one-out image plus the left-out pair term's mean a / d
            log_hold = log_hold + unstored * special.log_ndtr(target[keep] / np.sqrt((y2[keep] + a[keep] / d_out)
                                                                                     / d_out))
        fail = -np.expm1(log_hold)
    return float(np.dot(fail, weight[keep]))


def _gaussian_fresh_failure(d_in, d_out, p):
    """Fresh candidates (DP): given ``y = W e_mu`` each competitor is ``N(0, |y|^2 / d_out)``, exactly."""
    _, _, target, y2, weight = _gaussian_environment(d_in, d_out, p, crosstalk_terms=p - 1.0)
    with np.errstate(divide="ignore"):
        fail = -np.expm1((p - 1.0) * special.log_ndtr(target / np.sqrt(np.maximum(y2, 1e-300) / d_out)))
    return float(np.dot(fail, weight))


def _sphere_environment(d_in, d_out, p, crosstalk_terms=None):
    """Environment grid (t, |y|^2, weight) for the sphere ensemble (leave-one-out by default).

    ``e`` uniform on the unit sphere of ``R^d_in``, ``u`` on that of ``R^d_out``; the
    crosstalk has ``p - 2`` terms (or ``crosstalk_terms``), see :func:`_gaussian_environment`.
    """
    nodes = _SPHERE_NODES
    terms = p - 2.0 if crosstalk_terms is None else crosstalk_terms
    if terms <= 1e-12:
        S, ws = np.zeros(1), np.ones(1)
    else:  # sphere_crosstalk_scale(d, n) is the law of n - 1 squared projections
        n = p - 1.0 if crosstalk_terms is None else crosstalk_terms + 1.0
        S, ws = _mapped_nodes(sphere_crosstalk_scale(d_in, n), nodes["crosstalk_scale"])
    chi, wc = _gamma_nodes(0.5 * (d_out - 1.0), 2.0, nodes["perp"])
    z, wz = _z_grid(nodes["z"])
    SS, C, Z = np.meshgrid(S, chi, z, indexing="ij")
    weight = np.einsum("i,j,k->ijk", ws, wc, wz).ravel()
    SS, C, Z = (v.ravel() for v in (SS, C, Z))
    target = 1.0 + np.sqrt(SS / d_out) * Z
    y2 = target * target + (SS / d_out) * C
    return target, y2, weight


def _sphere_competitor_sf(target, y2, d_in, d_out):
    """P(s_nu - x_nu c_nu > t | environment) for the sphere ensemble: |v| x + c, x and c projections."""
    c, wcc = _mapped_nodes(projection_law(d_in), _SPHERE_NODES["pair"])
    t = target[:, None]
    norm_v = np.sqrt(np.maximum(y2[:, None] - 2.0 * c * t + c * c, 1e-300))
    return np.clip(_projection_sf((t - c) / norm_v, d_out) @ wcc, 0.0, 1.0)


def _sphere_failure(d_in, d_out, p, unstored=0.0):
    target, y2, weight = _sphere_environment(d_in, d_out, p)
    sf = _sphere_competitor_sf(target, y2, d_in, d_out)
    with np.errstate(divide="ignore"):
        log_hold = (p - 1.0) * np.log1p(-np.minimum(sf, 1.0))
        if unstored:
            # u_rho uniform on the sphere, independent of W: P(u_rho . y < t) = 1 - sf_proj(t / |y|)
            ratio = target / np.sqrt(y2 + 1.0 / d_out)
            log_hold = log_hold + unstored * np.log1p(-np.minimum(_projection_sf(ratio, d_out), 1.0))
        fail = -np.expm1(log_hold)
    return float(np.dot(fail, weight))


def _sphere_fresh_failure(d_in, d_out, p):
    """Fresh candidates (DP): given ``y`` each competitor is ``|y| x``, ``x`` the projection law of ``R^d_out``."""
    target, y2, weight = _sphere_environment(d_in, d_out, p, crosstalk_terms=p - 1.0)
    sf = _projection_sf(target / np.sqrt(np.maximum(y2, 1e-300)), d_out)
    with np.errstate(divide="ignore"):
        fail = -np.expm1((p - 1.0) * np.log1p(-np.minimum(sf, 1.0)))
    return float(np.dot(fail, weight))


def failure_probability(d, p, ensemble, unstored=0.0):
    """P(one input is not recalled) in the model, for checked ``d``, ``p`` and ``ensemble``.

    ``unstored`` (``>= 0``, real) more outputs compete that are not stored in ``W`` (the
    outputs of facts left out of the memory): each is independent of ``W``, so its score
    given the input's environment is ``u_rho . y`` with ``y = W e_mu`` (``notes/zipf.md``,
    section 6).  ``unstored=0`` is the model of ``notes/hebbian_finite_size.md`` bit for bit.
    """
    return memory_failure_probability(d, d, p, ensemble, unstored=unstored)


def memory_failure_probability(d_in, d_out, p, ensemble, competitors="stored", unstored=0.0):
    """P(one input is not recalled) by a ``d_out x d_in`` Hebbian memory (checked arguments).

    ``competitors="stored"``: the other stored outputs compete (the model of
    ``notes/hebbian_finite_size.md``, pair term moved to the target side), plus
    ``unstored`` outputs not stored in ``W`` (see :func:`failure_probability`);
    ``"fresh"``: every input has its own independent candidates (decoupled problem),
    which given ``y = W e_mu`` are independent of each other, so that the law of the
    largest is exact given the environment (``notes/rectangular.md``).  ``d_in`` and
    ``d_out`` may be real (>= 1) for the gaussian ensemble.
    """
    if competitors != "stored":
        if unstored:
            raise ValueError("unstored outputs are modelled for competitors='stored' only")
        return (_gaussian_fresh_failure if ensemble == "gaussian" else _sphere_fresh_failure)(d_in, d_out, p)
    return (_gaussian_failure if ensemble == "gaussian" else _sphere_failure)(d_in, d_out, p, unstored)


def check_d_p(d, p, ensemble):
    """Check ``d >= 2``, ``p >= 2`` and the ensemble name; return ``(d, p)`` as ``(int, float)``."""
    d = check_int(d, "d", low=2)
    p = check_real(p, "p", low=2.0)
    check_ensemble(ensemble)
    return d, p


