"""Score laws of the Hebbian memory: exact moments and samplers of the finite-size model.

Target and competitor scores of ``W_H = sum_mu u_mu e_mu^T`` in units of the
competitor standard deviation (``notes/hebbian_finite_size.md``); re-exported by
:mod:`replica.hebbian.finite_size`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..common.checks import check_int, check_memory
from ..common.results import Result
from ..common.seeds import as_generator
from ..asymptotic.extremes import expected_max
from .model import check_d_p, failure_probability, projection_law, sphere_crosstalk_scale

__all__ = ["hebbian_score_moments", "HebbianScoreMoments", "hebbian_score_laws", "HebbianScoreLaws"]


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
    d, p = check_d_p(d, p, ensemble)
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
            S = sphere_crosstalk_scale(d, terms + 1.0).rvs(size=size, random_state=rng) if terms > 0 \
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
            law = projection_law(d)
            c = law.rvs(size=(n, count), random_state=rng)
            x1 = law.rvs(size=(n, count), random_state=rng)
            x2 = projection_law(d - 1).rvs(size=(n, count), random_state=rng) if d > 2 else \
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
    d, _ = check_d_p(d, p, ensemble)
    p = check_int(p, "p", low=2)
    return HebbianScoreLaws(d=d, p=p, ensemble=ensemble, moments=hebbian_score_moments(d, p, ensemble),
                            threshold=math.sqrt(2.0 * math.log(p)),
                            gaussian_expected_max=float(expected_max(p - 1.0)),
                            input_failure_probability=failure_probability(d, float(p), ensemble))

