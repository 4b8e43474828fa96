"""Confidence intervals of binomial proportions."""

from __future__ import annotations

import numpy as np

__all__ = ["wilson_interval"]


def wilson_interval(stored, decided, z=1.959964):
    """Wilson score interval of a binomial proportion ``stored / decided`` (arrays allowed).

    Parameters
    ----------
    stored, decided : float or array
        Successes and trials (``decided > 0``; a count may be fractional, e.g. a mean
        accuracy times the inputs).
    z : float
        Normal quantile of the confidence level (default: 95 %).

    Returns
    -------
    (low, high) : arrays
        Clipped to [0, 1]; exactly 0 (1) at no (every) success.
    """
    k = np.asarray(stored, float)
    n = np.maximum(np.asarray(decided, float), 1e-300)
    phat = k / n
    denom = 1 + z * z / n
    centre = (phat + z * z / (2 * n)) / denom
    half = z * np.sqrt(phat * (1 - phat) / n + z * z / (4 * n * n)) / denom
    low = np.where(k <= 0, 0.0, np.clip(centre - half, 0, 1))
    high = np.where(k >= n, 1.0, np.clip(centre + half, 0, 1))
    return low, high
