"""The memory problem built by :func:`validation.make_instance`: :class:`Instance`.

An instance holds its inputs and targets (OP: also its outputs; DP: the key of its
candidate generator, :mod:`validation._rng`), its weights, covariance roots and the
settings it was built from (``notes/simulation.md``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from replica.common.checks import check_int
from replica.common.results import json_safe

from . import _rng

__all__ = ["Instance", "check_square_instance"]


@dataclass(frozen=True, eq=False)
class Instance:
    """A random memory problem; build it with :func:`make_instance`.

    Attributes
    ----------
    d : int or None
        Dimension of a square instance (``d_in = d_out = d``); None for a rectangular one.
        Functions built on a ``d x d`` memory reject a rectangular instance with a
        ValueError (:func:`check_square_instance`).
    p : int
        Number of associations.
    d_in, d_out : int
        Input and output dimensions (both ``d`` when square); a memory is ``d_out x d_in``.
    problem : {"op", "dp"}
    ensemble : {"gaussian", "sphere"}
    seed : int
        The resolved integer seed (``replica.common.seeds.resolve_seed``): the
        instance is a pure function of ``(seed, d, p, problem, ensemble)``.
    inputs : ndarray, float64, shape (p, d_in), read-only
        Row ``mu`` is the input ``e_mu``.
    targets : ndarray, float64, shape (p, d_out), read-only
        Row ``mu`` is the target output of input ``mu`` (OP: ``u_mu``; DP:
        ``u^(mu)_mu``, equal bit for bit to ``candidates(mu)[mu]``; to rounding with an
        output covariance).
    dp_key : numpy.uint64
        Key of the DP candidate generator (``validation._rng``); also set for
        OP instances but unused there.
    generator : int
        Version of the DP candidate generator (``validation._rng.GENERATORS``; the DP
        candidates and targets depend on it, OP instances do not).
    outputs : int or None
        Number ``K`` of distinct answers, or None (one answer per fact).
    answer_map : ndarray of int64, shape (p,), read-only, or None
        The target map ``f`` (``outputs=K`` only).
    output_vectors : ndarray, float64, shape (K, d), read-only, or None
        OP with ``outputs=K``: row ``k`` is the shared output ``u_k``
        (``targets[mu] = output_vectors[f(mu)]``).
    weights : ndarray, float64, shape (p,), read-only, or None
        Query frequencies of the facts, positive and summing to one (``weights=``
        of :func:`make_instance`); None: every fact counts the same.
    weights_normalised : bool
        True if the ``weights`` passed to :func:`make_instance` did not sum to one
        and were divided by their sum.
    input_root, output_root : ndarray, float64, read-only, or None
        ``Sigma_in^(1/2)`` (d_in x d_in) and ``Sigma_out^(1/2)`` (d_out x d_out) of the
        covariances (scaled to trace = dimension), or None (isotropic).
    input_spectrum, output_spectrum : ndarray, float64, read-only, or None
        Eigenvalues of the scaled covariances, decreasing, summing to the dimension.
    input_covariance_factor, output_covariance_factor : float or None
        The factor the given covariance was multiplied by to get trace = dimension
        (1.0 when it already had it); None without a covariance.
    """

    d: int
    p: int
    problem: str
    ensemble: str
    seed: int
    inputs: np.ndarray = field(repr=False)
    targets: np.ndarray = field(repr=False)
    dp_key: np.uint64 = field(repr=False)
    outputs: int | None = None
    answer_map: np.ndarray | None = field(default=None, repr=False)
    output_vectors: np.ndarray | None = field(default=None, repr=False)
    weights: np.ndarray | None = field(default=None, repr=False)
    weights_normalised: bool = False
    d_in: int = 0
    d_out: int = 0
    input_root: np.ndarray | None = field(default=None, repr=False)
    output_root: np.ndarray | None = field(default=None, repr=False)
    input_spectrum: np.ndarray | None = field(default=None, repr=False)
    output_spectrum: np.ndarray | None = field(default=None, repr=False)
    input_covariance_factor: float | None = None
    output_covariance_factor: float | None = None
    generator: int = _rng.DEFAULT_GENERATOR   # make_instance always sets it

    def __post_init__(self):
        if self.d is not None:  # square: d_in = d_out = d
            if not self.d_in:
                object.__setattr__(self, "d_in", self.d)
            if not self.d_out:
                object.__setattr__(self, "d_out", self.d)

    @property
    def square(self) -> bool:
        """True when ``d_in == d_out`` was built from ``d`` (``Instance.d`` is set)."""
        return self.d is not None

    @property
    def shape(self) -> tuple:
        """Shape ``(d_out, d_in)`` of a memory of this instance."""
        return (self.d_out, self.d_in)

    @property
    def score_scale(self) -> float:
        """``sqrt(d_in d_out)`` (``d`` when square): a competitor score ``u^T W e`` has
        standard deviation ``||W||_F / score_scale`` (isotropic ensembles)."""
        return float(self.d) if self.d is not None else math.sqrt(self.d_in * self.d_out)

    def generator_pairs(self, mus, rhos) -> np.ndarray:
        """DP: the generator's vectors ``g`` of the candidates ``(mus[k], rhos[k])``,
        shape (n, d_out); the candidates are ``g Sigma_out^(1/2)`` (:meth:`candidate_pairs`)."""
        return _rng.dp_pairs(self.dp_key, self.candidate_code, mus, rhos, self.d_out)

    def candidate_pairs(self, mus, rhos) -> np.ndarray:
        """DP: the candidates ``u^(mus[k])_(rhos[k])`` as rows of a new (n, d_out) array."""
        g = self.generator_pairs(mus, rhos)
        return g if self.output_root is None else g @ self.output_root

    def output_images(self, images) -> np.ndarray:
        """DP: images ``Sigma_out^(1/2) W e_mu`` (rows) the generator's vectors are scored
        against (the images themselves without an output covariance)."""
        return images if self.output_root is None else np.ascontiguousarray(images @ self.output_root)

    @property
    def n_candidates(self) -> int:
        """Candidates per input: ``K`` with ``outputs=K``, else ``p``."""
        return self.p if self.outputs is None else self.outputs

    @property
    def target_index(self) -> np.ndarray:
        """Row of the target in every score column: ``f(mu)`` (``mu`` when ``outputs`` is None)."""
        return np.arange(self.p) if self.answer_map is None else self.answer_map

    @property
    def table(self) -> np.ndarray:
        """OP candidate vectors shared by every input, shape (n_candidates, d)."""
        return self.targets if self.output_vectors is None else self.output_vectors

    @property
    def candidate_code(self) -> int:
        """Integer code of the DP candidate law (ensemble and generator) for the numba kernels."""
        return _rng.candidate_code(self.ensemble, self.generator)

    def candidates(self, mu) -> np.ndarray:
        """Candidate outputs of input ``mu``.

        Parameters
        ----------
        mu : int
            Input index, ``0 <= mu < p``.

        Returns
        -------
        ndarray, float64, shape (n_candidates, d_out)
            Row ``rho`` is candidate ``rho``; row ``target_index[mu]`` is the
            target.  OP: a read-only view of the shared outputs; DP: a new
            array, regenerated.

        Raises
        ------
        ValueError
            If ``mu`` is out of range.
        """
        mu = check_int(mu, "mu", low=0, high=self.p - 1)
        if self.problem == "op":
            return self.table
        n = self.n_candidates
        return self.candidate_pairs(np.full(n, mu), np.arange(n))

    def scores_from_images(self, images) -> np.ndarray:
        """Score matrix from the images ``Y[mu] = W @ e_mu``.

        Parameters
        ----------
        images : array_like, shape (p, d_out)
            ``images[mu] = W @ inputs[mu]`` (for ``W = Q R^T``:
            ``inputs @ R @ Q.T``).

        Returns
        -------
        ndarray, float64, shape (n_candidates, p)
            ``S[rho, mu] = candidates(mu)[rho] @ images[mu]``.

        Raises
        ------
        ValueError
            If ``images`` does not have shape (p, d_out).
        """
        Y = np.ascontiguousarray(images, dtype=np.float64)
        if Y.shape != (self.p, self.d_out):
            raise ValueError(f"images must have shape (p, d_out) = {(self.p, self.d_out)}, got {Y.shape}")
        if self.problem == "op":
            return self.table @ Y.T
        out = np.empty((self.n_candidates, self.p), dtype=np.float64)
        _rng.dp_scores_into(self.dp_key, self.candidate_code, self.output_images(Y), out)
        return out

    def scores(self, W) -> np.ndarray:
        """Score matrix ``S[rho, mu] = candidates(mu)[rho] @ W @ inputs[mu]``.

        Parameters
        ----------
        W : array_like, shape (d_out, d_in)

        Returns
        -------
        ndarray, float64, shape (n_candidates, p)
            Targets at ``S[target_index[mu], mu]`` (the diagonal when
            ``outputs`` is None).  DP scores are computed blockwise by the
            numba generator; no ``d p^2`` array is formed.

        Raises
        ------
        ValueError
            If ``W`` is not (d_out, d_in).
        """
        mat = np.asarray(W, dtype=np.float64)
        if mat.shape != self.shape:
            raise ValueError(f"W must have shape (d_out, d_in) = {self.shape}, got {mat.shape}")
        return self.scores_from_images(self.inputs @ mat.T)

    def to_dict(self) -> dict:
        """Metadata (no arrays), JSON-safe."""
        meta = {"d": self.d, "p": self.p, "problem": self.problem,
                "ensemble": self.ensemble, "seed": self.seed}
        if self.problem == "dp":
            meta["generator"] = self.generator
        if self.outputs is not None:
            meta["outputs"] = self.outputs
        if self.weights is not None:
            meta["weighted"] = True
            meta["weights_normalised"] = self.weights_normalised
        if not self.square:
            meta["d_in"], meta["d_out"] = self.d_in, self.d_out
        for side in ("input", "output"):
            spectrum = getattr(self, f"{side}_spectrum")
            if spectrum is not None:
                meta[f"{side}_covariance"] = {
                    "trace": float(spectrum.sum()),
                    "trace_factor": getattr(self, f"{side}_covariance_factor"),
                    "effective_rank": float(spectrum.sum() ** 2 / np.square(spectrum).sum()),
                    "largest": float(spectrum[0]), "smallest": float(spectrum[-1])}
        return json_safe(meta)


def check_square_instance(instance, function: str) -> int:
    """The dimension ``d`` of a square ``instance``, for a function that needs ``d_in == d_out``.

    The one check of the functions built on a ``d x d`` memory (the box-MILP bounds, the
    rank-constrained and Adam solvers, the score distribution): a rectangular instance
    (``make_instance(None, p, d_in=, d_out=)``, ``Instance.d`` None) gets a ValueError
    naming ``function`` before any work is done.

    Parameters
    ----------
    instance : Instance
    function : str
        Name of the calling function, for the message.

    Returns
    -------
    int
        ``instance.d``.

    Raises
    ------
    ValueError
        If ``instance`` is not an :class:`Instance`, or is rectangular.
    """
    if not isinstance(instance, Instance):
        raise ValueError(f"instance must be a validation.Instance (make_instance), got "
                         f"{type(instance).__name__}")
    if instance.d is None:
        raise ValueError(f"{function} needs a square instance (d_in == d_out); got d_in={instance.d_in}, "
                         f"d_out={instance.d_out}")
    return int(instance.d)
