"""Correlated embeddings: inputs ``Sigma_in^{1/2} g`` and outputs ``Sigma_out^{1/2} g``, ``g ~ N(0, I/d)``.

The optimal memory does not see invertible covariances (``W -> Sigma_out^{1/2} W
Sigma_in^{1/2}`` is a rank-preserving bijection of the memories); the Hebbian rule does.
Its expected recall accuracy depends on the spectra through their effective ranks
``r = (tr Sigma)^2 / tr(Sigma^2)``: the finite-size Hebbian model with the input and
output dimensions replaced by ``r_in`` and ``r_out`` has the exact second moments of the
target and competitor scores.  Derivations and the theorems: ``notes/covariance.md``.

Public functions
----------------
power_law_spectrum
    Eigenvalues ``lambda_i`` proportional to ``i^-exponent``, mean 1.
effective_rank
    ``(sum lambda)^2 / sum lambda^2``.
covariance_hebbian_accuracy
    Expected Hebbian recall accuracy with correlated inputs and outputs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from scipy import special

from ..common.checks import check_choice, check_int, check_real
from ..common.ensembles import check_ensemble
from ..common.validity import Validity, reports_validity
from ..common.results import Result
from ..common.seeds import resolve_seed
from ..hebbian.finite_size import hebbian_input_failure_probability
from ..hebbian.model import memory_failure_probability

__all__ = [
    "power_law_spectrum",
    "effective_rank",
    "covariance_hebbian_accuracy",
    "CovarianceHebbianAccuracy",
]

PROBLEMS = ("dp", "op")
_DEFAULT_SIZE = 100_000  # Monte-Carlo samples of one input's environment (decoupled problem)
_CHUNK = 4096  # samples drawn at once (the sample does not depend on the size's split)


def power_law_spectrum(d, exponent):
    """Eigenvalues ``lambda_i = i^-exponent / mean_j(j^-exponent)``, ``i = 1..d``: a power-law spectrum of mean 1.

    Parameters
    ----------
    d : int
        Dimension, ``d >= 2``.
    exponent : float
        Decay exponent ``>= 0`` (finite); ``0`` gives ``d`` ones.

    Returns
    -------
    ndarray, shape (d,)
        Decreasing eigenvalues with ``sum = d``.

    Raises
    ------
    ValueError
        If ``d < 2`` or ``exponent`` is negative or not finite.

    Examples
    --------
    >>> power_law_spectrum(4, 1.0).round(4)
    array([1.92, 0.96, 0.64, 0.48])
    """
    d = check_int(d, "d", low=2)
    exponent = check_real(exponent, "exponent", low=0.0)
    if exponent == 0.0:
        return np.ones(d)
    values = np.arange(1, d + 1, dtype=np.float64) ** -exponent
    return values / values.mean()


def _check_spectrum(values, d, name):
    """A spectrum of length ``d``, finite, ``>= 0``, not all zero; returned normalised to trace ``d``."""
    if values is None:
        return np.ones(d)
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a sequence of {d} real eigenvalues, got {values!r}") from None
    if arr.shape != (d,):
        raise ValueError(f"{name} must have length d = {d} (the eigenvalues of the covariance), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite")
    if np.any(arr < 0.0):
        raise ValueError(f"{name} must be >= 0 (a covariance is positive semi-definite), got {float(arr.min())!r}")
    total = float(arr.sum())
    if total <= 0.0:
        raise ValueError(f"{name} must not be all zero")
    return arr / (total / d)


def effective_rank(spectrum):
    """Effective rank ``(sum lambda)^2 / sum lambda^2`` of a covariance with eigenvalues ``spectrum``.

    Between 1 (one direction) and ``len(spectrum)`` (isotropic).

    Raises
    ------
    ValueError
        If ``spectrum`` is empty, not finite, negative somewhere or all zero.
    """
    try:
        arr = np.asarray(spectrum, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"spectrum must be a sequence of real eigenvalues, got {spectrum!r}") from None
    if arr.ndim != 1 or arr.size < 1:
        raise ValueError(f"spectrum must be a non-empty 1-d sequence, got shape {arr.shape}")
    arr = _check_spectrum(arr, arr.size, "spectrum")
    return arr.size / float(np.mean(arr * arr))


@dataclass(frozen=True)
class CovarianceHebbianAccuracy(Result):
    """Expected Hebbian recall accuracy with correlated embeddings (see :func:`covariance_hebbian_accuracy`).

    ``status`` is ``"ok"`` (a fixed Monte-Carlo sample or a quadrature, no iteration);
    ``message`` names the model.  ``stderr`` is the Monte-Carlo standard error of
    ``accuracy`` (decoupled problem, ``samples`` draws with ``seed``; 0 for the quadrature).
    ``input_effective_rank`` and ``output_effective_rank`` are ``(tr Sigma)^2 / tr Sigma^2``.
    """

    STATUSES = ("ok",)

    d: int
    p: float
    problem: str
    accuracy: float
    stderr: float
    input_failure_probability: float
    input_effective_rank: float
    output_effective_rank: float
    samples: int
    seed: int | None
    status: str
    converged: bool
    message: str
    validity: Validity | None = None  # how far the prediction was checked (replica.common.validity)
    model: str = ""  # the registry model that computed it (replica.common.registry)
    ensemble: str = "gaussian"


def _fresh_failure_sample(lam_in, lam_out, p, size, seed):
    """Per-draw ``1 - Phi(t / sigma)^(p-1)`` over the exact law of one input's environment (decoupled problem).

    Given ``e_mu``: ``a = |e_mu|^2``, the overlaps ``c_nu = e_nu . e_mu`` are i.i.d.
    ``N(0, v)``, ``v = e_mu^T Sigma_in e_mu / d``, so ``S = sum c^2 = v chi^2_{p-1}``; the
    crosstalk ``r = sum c_nu u_nu ~ N(0, S Sigma_out / d)``; ``y = a u_mu + r``,
    ``t = u_mu . y``, and the fresh candidates are i.i.d. ``N(0, y^T Sigma_out y / d)`` given ``y``.
    """
    d = lam_in.size
    rng = np.random.default_rng(seed)
    root_out = np.sqrt(lam_out)
    out = np.empty(size)
    for start in range(0, size, _CHUNK):
        n = min(_CHUNK, size - start)
        g = rng.standard_normal((n, d)) / math.sqrt(d)
        a = (g * g) @ lam_in
        v = (g * g) @ (lam_in * lam_in) / d
        s = v * 2.0 * rng.standard_gamma(0.5 * (p - 1.0), size=n)
        u = rng.standard_normal((n, d)) * (root_out / math.sqrt(d))
        r = rng.standard_normal((n, d)) * (root_out * np.sqrt(s / d)[:, None])
        y = a[:, None] * u + r
        t = np.sum(u * y, axis=1)
        sigma = np.sqrt(np.maximum((y * y) @ lam_out / d, 1e-300))
        out[start:start + n] = -np.expm1((p - 1.0) * special.log_ndtr(t / sigma))
    return out


@reports_validity("covariance_hebbian_accuracy")
def covariance_hebbian_accuracy(d, p, *, input_spectrum=None, output_spectrum=None, problem="dp",
                                ensemble="gaussian", size=_DEFAULT_SIZE, seed=None):
    """Expected fraction of the ``p`` facts that ``W = sum_mu u_mu e_mu^T`` recalls with correlated embeddings.

    Inputs ``e = Sigma_in^{1/2} g`` and outputs ``u = Sigma_out^{1/2} g'`` with
    ``g, g' ~ N(0, I/d)`` and the spectra normalised to trace ``d`` (so that the isotropic
    case is the package's ``N(0, I/d)``).  The accuracy is ``1 - f`` with ``f`` the
    probability that one input is not recalled (linearity of expectation).

    * ``problem="dp"`` (fresh candidates): given ``y = W e_mu`` the ``p - 1`` candidates are
      i.i.d. ``N(0, y^T Sigma_out y / d)``, so ``f = E[1 - Phi(t / sigma)^(p-1)]`` exactly;
      the expectation over the environment of the input (``|e_mu|^2``, ``e_mu^T Sigma_in
      e_mu``, the crosstalk ``chi^2_{p-1}``, ``u_mu`` and the crosstalk vector) is a
      Monte-Carlo mean over ``size`` exact draws (seeded; ``stderr`` reported).
    * ``problem="op"`` (the other stored outputs compete): the finite-size Hebbian model
      of a ``r_out x r_in`` memory (:func:`replica.hebbian.model.memory_failure_probability`)
      at the effective ranks ``r = (tr Sigma)^2 / tr Sigma^2``, which gives the exact mean
      and variance of every ingredient of the scores; exact for isotropic spectra (then it
      is :func:`replica.hebbian_accuracy`, bit for bit) and for flat spectra on a
      subspace, a moment match otherwise, too pessimistic for steep spectra
      (``notes/covariance.md``, measured errors there).

    Parameters
    ----------
    d : int
        Dimension of inputs and outputs, ``d >= 2``.
    p : float
        Number of stored facts, ``p >= 2``.
    input_spectrum, output_spectrum : array_like of length d, optional
        Eigenvalues of ``Sigma_in`` and ``Sigma_out`` (``>= 0``, not all zero; rescaled to
        trace ``d``).  ``None``: isotropic.
    problem : {"dp", "op"}
        ``"dp"``: every input has its own fresh candidates (independent given ``W e_mu``);
        ``"op"``: the other stored outputs compete (the model of
        :func:`replica.hebbian_accuracy`, which this equals for isotropic spectra).
    ensemble : {"gaussian"}
        Only Gaussian embeddings have a covariance model here.
    size : int
        Monte-Carlo draws (decoupled problem), ``>= 1000``.
    seed : None, int, SeedSequence or Generator
        Seed of the draws (``None``: ``DEFAULT_SEED``).

    Returns
    -------
    CovarianceHebbianAccuracy
        ``accuracy``, ``stderr``, ``input_failure_probability`` and the effective ranks.

    Raises
    ------
    ValueError
        If ``d < 2``, ``p < 2``, a spectrum has the wrong length, is negative, not finite or
        all zero, or ``problem`` / ``ensemble`` is not allowed.
    """
    d = check_int(d, "d", low=2)
    p = check_real(p, "p", low=2.0)
    problem = check_choice(problem, "problem", PROBLEMS)
    check_ensemble(ensemble)
    if ensemble != "gaussian" and not (input_spectrum is None and output_spectrum is None and problem == "op"):
        raise ValueError(f"ensemble must be 'gaussian' for correlated embeddings (Sigma^(1/2) g) or the decoupled "
                         f"problem; unit-norm embeddings take isotropic spectra and problem='op'; got {ensemble!r}")
    lam_in = _check_spectrum(input_spectrum, d, "input_spectrum")
    lam_out = _check_spectrum(output_spectrum, d, "output_spectrum")
    r_in = d / float(np.mean(lam_in * lam_in))
    r_out = d / float(np.mean(lam_out * lam_out))
    if problem == "dp":
        size = check_int(size, "size", low=1000)
        seed = resolve_seed(seed)
        draws = _fresh_failure_sample(lam_in, lam_out, p, size, seed)
        fail, stderr = float(draws.mean()), float(draws.std(ddof=1) / math.sqrt(size))
        message = (f"decoupled problem: exact conditional law of the fresh candidates, Monte-Carlo mean over "
                   f"{size} draws of the environment (seed {seed}); notes/covariance.md")
    elif ensemble != "gaussian":  # isotropic unit-norm embeddings: the finite-size Hebbian model itself
        fail = hebbian_input_failure_probability(d, p, ensemble)
        stderr, size, seed = 0.0, 0, None
        message = ("finite-size Hebbian model of unit-norm embeddings (stored outputs compete), "
                   "notes/hebbian_finite_size.md")
    else:
        fail = memory_failure_probability(r_in, r_out, p, "gaussian", "stored")
        stderr, size, seed = 0.0, 0, None
        message = (f"finite-size Hebbian model (stored outputs compete) at the effective ranks r_in = {r_in:.6g}, "
                   f"r_out = {r_out:.6g}: second moments exact, shapes matched (notes/covariance.md)")
    if not math.isfinite(fail):  # pragma: no cover - the quadrature and the draws are finite
        raise ArithmeticError(f"covariance_hebbian_accuracy: failure probability {fail!r}")
    return CovarianceHebbianAccuracy(
        d=d, p=p, problem=problem, accuracy=1.0 - fail, stderr=stderr, input_failure_probability=fail,
        input_effective_rank=r_in, output_effective_rank=r_out, samples=size, seed=seed, status="ok",
        converged=True, message=message, ensemble=ensemble)
