"""Random memory problems: the original problem (OP) and the decoupled problem (DP).

An instance holds ``p`` inputs ``e_mu`` in R^d and, for every input, ``p``
candidate outputs indexed ``rho = 0..p-1`` of which ``rho = mu`` is the target.

* ``op``: one shared output set ``u_0..u_{p-1}``; the candidates of every input
  are all the outputs, and the target of input ``mu`` is ``u_mu``.
* ``dp``: every input ``mu`` has its own independent candidates ``u^(mu)_rho``;
  the target is ``u^(mu)_mu``.  They are regenerated on demand by the
  counter-based generator of :mod:`validation._rng` and never stored, so an
  instance takes ``O(p d)`` memory.

With ``outputs=K`` the facts share ``K`` distinct answers: a target map
``f: {0..p-1} -> {0..K-1}`` (default ``f(mu) = mu mod K``) picks the target of
input ``mu``, and the candidates of every input are ``K`` vectors indexed
``k = 0..K-1`` (OP: the shared outputs ``u_0..u_{K-1}``, target ``u_{f(mu)}``;
DP: its own ``u^(mu)_0..u^(mu)_{K-1}``, target ``u^(mu)_{f(mu)}``).  Every
output must be the answer of at least one fact.  ``outputs=None`` is the
one-answer-per-fact problem above (``K = p``, ``f(mu) = mu``), unchanged.

Ensembles: ``gaussian`` (i.i.d. N(0, I_d / d)) and ``sphere`` (uniform on the
unit sphere).  See ``notes/simulation.md``.

Rectangular memories: with ``d_in`` and ``d_out`` the inputs lie in R^{d_in} and the
outputs (targets, candidates) in R^{d_out}, and a memory ``W`` is ``d_out x d_in``.
The ensembles are N(0, I/d_in) for the inputs and N(0, I/d_out) for the outputs
(the ``sphere`` ensemble: unit spheres of R^{d_in} and R^{d_out}), so that a competitor
score ``u^T W e`` has variance ``||W||_F^2 / (d_in d_out)`` and the normalised margin
divides by ``||W||_F / sqrt(d_in d_out)`` (``d`` when square).

Correlated embeddings: with ``input_covariance`` (``output_covariance``) the vectors are
``e = Sigma_in^(1/2) g`` (``u = Sigma_out^(1/2) g``) for the isotropic draw ``g`` of the
same seed; the covariance is scaled to trace = dimension first (``E ||e||^2 = 1`` as in
the isotropic ensemble; storability and Hebbian recall do not depend on that scale).
DP candidates stay those of the counter-based generator (``g``); a score
``u^T W e = g^T (Sigma_out^(1/2) W e)`` applies the root to the images.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from replica.common.checks import check_choice, check_int, check_memory
from replica.common.ensembles import ENSEMBLES
from replica.common.results import json_safe
from replica.common.seeds import resolve_seed
from replica.variants.covariance import power_law_spectrum

from . import _rng

__all__ = ["make_instance", "instance_bytes", "check_generator", "Instance", "PROBLEMS", "ENSEMBLES",
           "power_law_spectrum", "covariance_root", "check_square_instance"]

PROBLEMS = ("op", "dp")


def instance_bytes(d: int, p: int, d_out: int | None = None) -> float:
    """Bytes :func:`make_instance` needs for ``(d, p)``: inputs and targets (``p x d`` float64
    each) and one ``p x d`` draw in flight; the same for OP and DP (DP candidates are
    regenerated, never stored).  With ``d_out``, ``d`` is the input dimension: inputs
    ``p x d`` and two ``p x d_out`` arrays."""
    if d_out is None:
        return 3.0 * 8.0 * float(d) * float(p)
    return 8.0 * float(p) * (float(d) + 2.0 * float(d_out))


def covariance_root(covariance, dim, name="covariance"):
    """Checked covariance scaled to trace = ``dim``, and its symmetric square root.

    Parameters
    ----------
    covariance : array_like
        A symmetric positive semi-definite ``(dim, dim)`` matrix, or a 1-D spectrum of
        length ``dim`` (a diagonal covariance), finite, not zero.
    dim : int
        The dimension of the vectors.
    name : str
        Argument name for the messages.

    Returns
    -------
    root : ndarray, float64, shape (dim, dim), read-only
        ``Sigma^(1/2)`` of the scaled covariance (symmetric; eigenvalues below
        ``1e-12`` times the largest, rounding of a singular matrix, are set to zero).
    spectrum : ndarray, float64, shape (dim,), read-only
        Eigenvalues of the scaled covariance, decreasing, summing to ``dim``.
    factor : float
        The factor the given covariance was multiplied by (``dim / trace``; 1.0 when its
        trace already was ``dim`` to 1e-12).

    Raises
    ------
    ValueError
        Naming ``name``: wrong shape, not finite, not symmetric, not positive
        semi-definite (an eigenvalue below ``-1e-10`` times the largest), or zero.
    """
    arr = np.array(covariance, dtype=np.float64)
    if arr.ndim == 1:
        if arr.shape != (dim,):
            raise ValueError(f"{name} must be a ({dim}, {dim}) matrix or a spectrum of length {dim}, "
                             f"got shape {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} must be finite")
        if np.any(arr < 0.0):
            raise ValueError(f"{name} must be positive semi-definite: spectrum value "
                             f"{float(arr.min()):.3g} < 0")
        lam, vectors = arr, None
    elif arr.shape == (dim, dim):
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} must be finite")
        size = float(np.abs(arr).max())
        if float(np.abs(arr - arr.T).max()) > 1e-10 * size:
            raise ValueError(f"{name} must be symmetric (largest |C - C^T| = "
                             f"{float(np.abs(arr - arr.T).max()):.3g})")
        lam, vectors = np.linalg.eigh(0.5 * (arr + arr.T))
        top = float(lam.max()) if lam.size else 0.0
        if float(lam.min()) < -1e-10 * max(top, 0.0) or top <= 0.0 and float(lam.min()) < 0.0:
            raise ValueError(f"{name} must be positive semi-definite: smallest eigenvalue "
                             f"{float(lam.min()):.3g} (largest {top:.3g})")
    else:
        raise ValueError(f"{name} must be a ({dim}, {dim}) matrix or a spectrum of length {dim}, "
                         f"got shape {arr.shape}")
    total = float(lam.sum())
    if not total > 0.0:
        raise ValueError(f"{name} must not be zero")
    factor = 1.0 if math.isclose(total, dim, rel_tol=1e-12, abs_tol=0.0) else dim / total
    lam = np.where(lam > 1e-12 * float(lam.max()), lam * factor, 0.0)
    if vectors is None:
        root = np.diag(np.sqrt(lam))
    else:
        root = (vectors * np.sqrt(lam)) @ vectors.T
        root = 0.5 * (root + root.T)
    spectrum = np.sort(lam)[::-1].copy()
    for a in (root, spectrum):
        a.setflags(write=False)
    return root, spectrum, factor


def _draw_vectors(rng: np.random.Generator, count: int, d: int, ensemble: str) -> np.ndarray:
    z = rng.standard_normal((count, d))
    if ensemble == "sphere":
        z /= np.linalg.norm(z, axis=1, keepdims=True)
    else:
        z /= np.sqrt(d)
    return z


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


def _weights(p, weights):
    """Checked, normalised query frequencies for ``make_instance``: ``(w, normalised)``."""
    if weights is None:
        return None, False
    w = np.array(weights, dtype=np.float64)
    if w.shape != (p,):
        raise ValueError(f"weights must have length p = {p}, got shape {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w <= 0.0):
        raise ValueError("weights must be finite and positive")
    total = float(w.sum())
    normalised = not math.isclose(total, 1.0, rel_tol=1e-12, abs_tol=0.0)
    if normalised:
        w /= total
    w.setflags(write=False)
    return w, normalised


def _answer_map(p, outputs, targets):
    """Checked ``(K, f)`` for ``make_instance``: ``(None, None)`` when ``outputs`` is None."""
    if outputs is None:
        if targets is not None:
            raise ValueError("targets needs outputs: pass outputs=K with a target map")
        return None, None
    K = check_int(outputs, "outputs", low=2, high=p)
    if targets is None:
        return K, np.arange(p, dtype=np.int64) % K
    arr = np.asarray(targets)
    if arr.shape != (p,) or arr.dtype.kind not in "iu":
        raise ValueError(f"targets must be an integer array of length p = {p}, got "
                         f"shape {arr.shape} and dtype {arr.dtype}")
    if arr.min() < 0 or arr.max() >= K:
        raise ValueError(f"targets must lie in [0, outputs - 1] = [0, {K - 1}], got "
                         f"[{arr.min()}, {arr.max()}]")
    unused = np.flatnonzero(np.bincount(arr, minlength=K) == 0)
    if unused.size:
        raise ValueError(f"targets must use every one of the outputs = {K} answers; output "
                         f"{int(unused[0])} is the answer of no fact")
    return K, arr.astype(np.int64)


def _dimensions(d, d_in, d_out):
    """Checked ``(d, d_in, d_out)`` for ``make_instance``: ``d`` is None unless ``d_in == d_out``."""
    if d_in is None and d_out is None:
        d = check_int(d, "d", low=2)
        return d, d, d
    if d_in is not None and d_out is not None:
        if d is not None:
            raise ValueError(f"d must be None when both d_in and d_out are given, got d={d!r}")
        d_in, d_out = check_int(d_in, "d_in", low=2), check_int(d_out, "d_out", low=2)
        return (d_in if d_in == d_out else None), d_in, d_out
    if d is None:
        missing = "d_out" if d_out is None else "d_in"
        raise ValueError(f"{missing} is needed (or d): got d=None and {missing}=None")
    d = check_int(d, "d", low=2)
    d_in = d if d_in is None else check_int(d_in, "d_in", low=2)
    d_out = d if d_out is None else check_int(d_out, "d_out", low=2)
    return (d if d_in == d_out else None), d_in, d_out


def check_generator(generator) -> int:
    """The DP generator version: ``generator`` itself if in ``validation._rng.GENERATORS``,
    ``validation._rng.default_generator()`` for None; ValueError otherwise."""
    if generator is None:
        return _rng.default_generator()
    if isinstance(generator, (bool, np.bool_)) or not isinstance(generator, (int, np.integer)) \
            or int(generator) not in _rng.GENERATORS:
        raise ValueError(f"generator must be one of {_rng.GENERATORS} or None, got {generator!r}")
    return int(generator)


def _draw_instance(seed, p, dims, problem, ensemble, answers, roots, generator):
    """``(inputs, targets, output vectors or None, dp_key)`` of :func:`make_instance` from checked
    arguments (``dims = (d_in, d_out)``, ``answers = (K, answer_map)``, ``roots`` the covariance
    roots or None).  ``SeedSequence(seed).spawn(3)``: inputs, OP outputs, DP generator key."""
    (d_in, d_out), (K, answer_map), (in_root, out_root) = dims, answers, roots
    inputs_ss, outputs_ss, key_ss = np.random.SeedSequence(seed).spawn(3)
    inputs = _draw_vectors(np.random.default_rng(inputs_ss), p, d_in, ensemble)
    if in_root is not None:
        inputs = inputs @ in_root   # rows e_mu = Sigma_in^(1/2) g_mu (the root is symmetric)
    dp_key = np.uint64(key_ss.generate_state(1, dtype=np.uint64)[0])
    index = np.arange(p) if answer_map is None else answer_map
    vectors = None
    if problem == "op":
        vectors = _draw_vectors(np.random.default_rng(outputs_ss), p if K is None else K, d_out, ensemble)
        if out_root is not None:
            vectors = vectors @ out_root
        target_vectors = vectors if K is None else vectors[index]
        if K is None:
            vectors = None
    else:
        target_vectors = _rng.dp_pairs(dp_key, _rng.candidate_code(ensemble, generator), np.arange(p), index, d_out)
        if out_root is not None:
            target_vectors = target_vectors @ out_root
    return inputs, target_vectors, vectors, dp_key


def _root(covariance, dim, name):
    """``covariance_root`` of a given covariance, or ``(None, None, None)`` (isotropic)."""
    return (None, None, None) if covariance is None else covariance_root(covariance, dim, name)


def _check_instance_memory(d, d_in, d_out, p):
    """``check_memory`` of the instance's arrays before anything is allocated."""
    if d is not None:
        check_memory(instance_bytes(d, p), f"make_instance(d={d}, p={p})")
    else:
        check_memory(instance_bytes(d_in, p, d_out), f"make_instance(d_in={d_in}, d_out={d_out}, p={p})")


def make_instance(d, p, problem="op", ensemble="gaussian", seed=None, *, outputs=None,
                  targets=None, weights=None, d_in=None, d_out=None, input_covariance=None,
                  output_covariance=None, generator=None) -> Instance:
    """Build a random memory problem, reproducible from its arguments.

    Parameters
    ----------
    d : int or None
        Dimension, ``d >= 2``: the default of ``d_in`` and ``d_out``.  Must be None
        when both ``d_in`` and ``d_out`` are given.
    p : int
        Number of associations, ``p >= 2``.
    problem : {"op", "dp"}
        Original problem (shared outputs) or decoupled problem (own candidates
        per input).
    ensemble : {"gaussian", "sphere"}
        ``gaussian``: i.i.d. N(0, I_d / d); ``sphere``: uniform on the unit sphere.
    seed : None, int, SeedSequence or Generator
        Resolved to an integer by ``replica.common.seeds.resolve_seed`` (``None``:
        the package default ``DEFAULT_SEED``); the integer is stored in
        ``Instance.seed``.  ``SeedSequence(seed).spawn(3)`` gives three
        children: inputs, OP outputs, DP generator key.  Instances with the same
        seed but different ``p`` share their leading rows (and DP candidates
        with equal ``(mu, rho)``); use different seeds (e.g. from
        ``SeedSequence.spawn``) for independent instances.
    outputs : int or None
        Number ``K`` of distinct answers, ``2 <= K <= p``; None (default): one
        answer per fact (bit-identical to instances built without it).
    targets : array_like of int, shape (p,), optional
        The target map ``f`` with values in ``[0, K - 1]``, every value used at
        least once (``outputs`` only; default ``f(mu) = mu mod K``, balanced).
    weights : array_like of float, shape (p,), optional
        Query frequencies ``f_mu`` of the facts (for example Zipf's law,
        ``notes/zipf.md``), finite and positive.  Weights that do not sum to one
        are divided by their sum, and ``Instance.weights_normalised`` says so.  They
        do not change the vectors (the instance is bit-identical to one built
        without them); they weight the recalled mass of the weighted give-up search
        and of the error ``E = sum_mu f_mu 1{mu not recalled}``.
    d_in, d_out : int, optional
        Input and output dimensions, ``>= 2`` (default ``d``): inputs in R^{d_in} from
        N(0, I/d_in), outputs and candidates in R^{d_out} from N(0, I/d_out) (``sphere``:
        the unit spheres), memories ``d_out x d_in``.  ``d_in = d_out = d`` (the default)
        is bit-identical to an instance built without them (also with ``d=None``,
        ``d_in = d_out``: then ``Instance.d = d_in``); an instance with ``d_in != d_out``
        has ``Instance.d = None``.  Its inputs are those of the square
        instance of dimension ``d_in`` and the same seed, its outputs (OP) and DP
        candidates those of the square instance of dimension ``d_out``.
    input_covariance, output_covariance : array_like, optional
        Covariance of the inputs (outputs): a symmetric positive semi-definite
        ``(d_in, d_in)`` (``(d_out, d_out)``) matrix or a 1-D spectrum (a diagonal
        covariance, e.g. :func:`power_law_spectrum`), scaled to trace = dimension
        (:func:`covariance_root`; ``Instance.input_covariance_factor`` records the
        factor).  Vectors are ``e = Sigma_in^(1/2) g`` and ``u = Sigma_out^(1/2) g`` for
        the isotropic draws ``g`` of the same seed (DP: the generator's candidates,
        the root applied to the images).  None (default): isotropic, bit-identical.
    generator : {1, 2} or None
        Version of the DP candidate generator (``notes/simulation.md``, section 2); None
        (default): 2, or the value of the environment variable
        ``LINEAR_MEMORY_DP_GENERATOR`` when it is set.  ``generator=1`` builds the
        DP instances of results made before version 2.  OP instances do not depend on it.

    Returns
    -------
    Instance

    Raises
    ------
    ValueError
        For ``d < 2``, ``d_in < 2``, ``d_out < 2``, ``d`` given beside both ``d_in`` and
        ``d_out``, a covariance of the wrong shape, not finite, not symmetric or not
        positive semi-definite, ``p < 2``, ``outputs`` outside ``[2, p]``, ``targets``
        of the wrong length, dtype or range, an output that answers no fact,
        ``targets`` without ``outputs``, an unknown ``generator``, ``weights`` of the wrong length or not
        finite and positive, an unknown problem or ensemble, a seed that
        is not None, a non-negative integer, a SeedSequence or a Generator, or an
        instance larger than the memory limit (:func:`instance_bytes` against
        ``replica.common.checks.check_memory``: half the available memory, or
        ``LINEAR_MEMORY_LIMIT_BYTES``), checked before anything is allocated.

    Notes
    -----
    See ``notes/simulation.md`` (ensembles and the DP generator).
    """
    d, d_in, d_out = _dimensions(d, d_in, d_out)
    p = check_int(p, "p", low=2)
    problem = check_choice(problem, "problem", PROBLEMS)
    ensemble = check_choice(ensemble, "ensemble", ENSEMBLES)
    seed = resolve_seed(seed)
    generator = check_generator(generator)
    K, answer_map = _answer_map(p, outputs, targets)
    w, normalised = _weights(p, weights)
    (in_root, in_spectrum, in_factor), (out_root, out_spectrum, out_factor) = (
        _root(input_covariance, d_in, "input_covariance"), _root(output_covariance, d_out, "output_covariance"))
    _check_instance_memory(d, d_in, d_out, p)
    return _built_instance(seed, p, (d, d_in, d_out), problem, ensemble, (K, answer_map), (w, normalised),
                           ((in_root, in_spectrum, in_factor), (out_root, out_spectrum, out_factor)), generator)


def _built_instance(seed, p, dims, problem, ensemble, answers, weights, covariances, generator):
    """The :class:`Instance` of :func:`make_instance` from checked arguments (``dims = (d,
    d_in, d_out)``, ``answers = (K, answer_map)``, ``weights = (w, normalised)``,
    ``covariances``: (root, spectrum, factor) of the inputs and of the outputs); its
    arrays are read-only."""
    (d, d_in, d_out), (K, answer_map), (w, normalised) = dims, answers, weights
    (in_root, in_spectrum, in_factor), (out_root, out_spectrum, out_factor) = covariances
    inputs, target_vectors, vectors, dp_key = _draw_instance(seed, p, (d_in, d_out), problem, ensemble,
                                                             answers, (in_root, out_root), generator)
    for arr in (inputs, target_vectors, vectors, answer_map):
        if arr is not None:
            arr.setflags(write=False)
    return Instance(d=d, p=p, problem=problem, ensemble=ensemble, seed=seed, inputs=inputs,
                    targets=target_vectors, dp_key=dp_key, outputs=K, answer_map=answer_map,
                    output_vectors=vectors, weights=w, weights_normalised=normalised,
                    d_in=d_in, d_out=d_out, input_root=in_root, output_root=out_root,
                    input_spectrum=in_spectrum, output_spectrum=out_spectrum,
                    input_covariance_factor=in_factor, output_covariance_factor=out_factor,
                    generator=generator)
