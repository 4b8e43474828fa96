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
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from replica.common.checks import check_choice, check_int, check_memory
from replica.common.ensembles import ENSEMBLES
from replica.common.results import json_safe
from replica.common.seeds import resolve_seed

from . import _rng

__all__ = ["make_instance", "instance_bytes", "Instance", "PROBLEMS", "ENSEMBLES"]

PROBLEMS = ("op", "dp")


def instance_bytes(d: int, p: int) -> float:
    """Bytes :func:`make_instance` needs for ``(d, p)``: inputs and targets (``p x d`` float64
    each) and one ``p x d`` draw in flight; the same for OP and DP (DP candidates are
    regenerated, never stored)."""
    return 3.0 * 8.0 * float(d) * float(p)


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
    d, p : int
        Dimension and number of associations.
    problem : {"op", "dp"}
    ensemble : {"gaussian", "sphere"}
    seed : int
        The resolved integer seed (``replica.common.seeds.resolve_seed``): the
        instance is a pure function of ``(seed, d, p, problem, ensemble)``.
    inputs : ndarray, float64, shape (p, d), read-only
        Row ``mu`` is the input ``e_mu``.
    targets : ndarray, float64, shape (p, d), read-only
        Row ``mu`` is the target output of input ``mu`` (OP: ``u_mu``; DP:
        ``u^(mu)_mu``, equal bit for bit to ``candidates(mu)[mu]``).
    dp_key : numpy.uint64
        Key of the DP candidate generator (``validation._rng``); also set for
        OP instances but unused there.
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
    def ensemble_code(self) -> int:
        """Integer code of the ensemble for the numba kernels (0 gaussian, 1 sphere)."""
        return _rng.ENSEMBLE_CODES[self.ensemble]

    def candidates(self, mu) -> np.ndarray:
        """Candidate outputs of input ``mu``.

        Parameters
        ----------
        mu : int
            Input index, ``0 <= mu < p``.

        Returns
        -------
        ndarray, float64, shape (n_candidates, d)
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
        return _rng.dp_pairs(self.dp_key, self.ensemble_code, np.full(n, mu), np.arange(n), self.d)

    def scores_from_images(self, images) -> np.ndarray:
        """Score matrix from the images ``Y[mu] = W @ e_mu``.

        Parameters
        ----------
        images : array_like, shape (p, d)
            ``images[mu] = W @ inputs[mu]`` (for ``W = Q R^T``:
            ``inputs @ R @ Q.T``).

        Returns
        -------
        ndarray, float64, shape (n_candidates, p)
            ``S[rho, mu] = candidates(mu)[rho] @ images[mu]``.

        Raises
        ------
        ValueError
            If ``images`` does not have shape (p, d).
        """
        Y = np.ascontiguousarray(images, dtype=np.float64)
        if Y.shape != (self.p, self.d):
            raise ValueError(f"images must have shape (p, d) = {(self.p, self.d)}, got {Y.shape}")
        if self.problem == "op":
            return self.table @ Y.T
        out = np.empty((self.n_candidates, self.p), dtype=np.float64)
        _rng.dp_scores_into(self.dp_key, self.ensemble_code, Y, out)
        return out

    def scores(self, W) -> np.ndarray:
        """Score matrix ``S[rho, mu] = candidates(mu)[rho] @ W @ inputs[mu]``.

        Parameters
        ----------
        W : array_like, shape (d, d)

        Returns
        -------
        ndarray, float64, shape (n_candidates, p)
            Targets at ``S[target_index[mu], mu]`` (the diagonal when
            ``outputs`` is None).  DP scores are computed blockwise by the
            numba generator; no ``d p^2`` array is formed.

        Raises
        ------
        ValueError
            If ``W`` is not (d, d).
        """
        mat = np.asarray(W, dtype=np.float64)
        if mat.shape != (self.d, self.d):
            raise ValueError(f"W must have shape (d, d) = {(self.d, self.d)}, got {mat.shape}")
        return self.scores_from_images(self.inputs @ mat.T)

    def to_dict(self) -> dict:
        """Metadata (no arrays), JSON-safe."""
        meta = {"d": self.d, "p": self.p, "problem": self.problem,
                "ensemble": self.ensemble, "seed": self.seed}
        if self.outputs is not None:
            meta["outputs"] = self.outputs
        if self.weights is not None:
            meta["weighted"] = True
            meta["weights_normalised"] = self.weights_normalised
        return json_safe(meta)


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


def make_instance(d, p, problem="op", ensemble="gaussian", seed=None, *, outputs=None,
                  targets=None, weights=None) -> Instance:
    """Build a random memory problem, reproducible from its arguments.

    Parameters
    ----------
    d : int
        Dimension, ``d >= 2``.
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

    Returns
    -------
    Instance

    Raises
    ------
    ValueError
        For ``d < 2``, ``p < 2``, ``outputs`` outside ``[2, p]``, ``targets``
        of the wrong length, dtype or range, an output that answers no fact,
        ``targets`` without ``outputs``, ``weights`` of the wrong length or not
        finite and positive, an unknown problem or ensemble, a seed that
        is not None, a non-negative integer, a SeedSequence or a Generator, or an
        instance larger than the memory limit (:func:`instance_bytes` against
        ``replica.common.checks.check_memory``: half the available memory, or
        ``LINEAR_MEMORY_LIMIT_BYTES``), checked before anything is allocated.

    Notes
    -----
    See ``notes/simulation.md`` (ensembles and the DP generator).
    """
    d = check_int(d, "d", low=2)
    p = check_int(p, "p", low=2)
    problem = check_choice(problem, "problem", PROBLEMS)
    ensemble = check_choice(ensemble, "ensemble", ENSEMBLES)
    seed = resolve_seed(seed)
    K, answer_map = _answer_map(p, outputs, targets)
    w, normalised = _weights(p, weights)
    check_memory(instance_bytes(d, p), f"make_instance(d={d}, p={p})")
    inputs_ss, outputs_ss, key_ss = np.random.SeedSequence(seed).spawn(3)
    inputs = _draw_vectors(np.random.default_rng(inputs_ss), p, d, ensemble)
    dp_key = np.uint64(key_ss.generate_state(1, dtype=np.uint64)[0])
    index = np.arange(p) if answer_map is None else answer_map
    vectors = None
    if problem == "op":
        vectors = _draw_vectors(np.random.default_rng(outputs_ss), p if K is None else K, d, ensemble)
        target_vectors = vectors if K is None else vectors[index]
        if K is None:
            vectors = None
    else:
        target_vectors = _rng.dp_pairs(dp_key, _rng.ENSEMBLE_CODES[ensemble], np.arange(p), index, d)
    for arr in (inputs, target_vectors, vectors, answer_map):
        if arr is not None:
            arr.setflags(write=False)
    return Instance(d=d, p=p, problem=problem, ensemble=ensemble, seed=seed, inputs=inputs,
                    targets=target_vectors, dp_key=dp_key, outputs=K, answer_map=answer_map,
                    output_vectors=vectors, weights=w, weights_normalised=normalised)
