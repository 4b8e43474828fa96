"""The memory problem built by :func:`validation.make_instance`: :class:`Instance`.

An instance holds its inputs and targets (OP: also its outputs; DP: the key of its
candidate generator, :mod:`validation.instances._candidate_kernels`), its weights, covariance roots and the
settings it was built from (``notes/simulation.md``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from replica.common.checks import check_int
from replica.common.results import json_safe
from replica.common.seeds import resolve_seed

from . import _candidate_kernels as _candidates

__all__ = ["Instance", "check_square_instance", "check_weights", "GIVEN_ENSEMBLE"]

GIVEN_ENSEMBLE = "given"
"""``Instance.ensemble`` of an instance built by :meth:`Instance.from_embeddings`."""


@dataclass(frozen=True, eq=False)
class Instance:
    """A memory problem: a random one from :func:`make_instance`, given vectors by :meth:`from_embeddings`.

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
    ensemble : {"gaussian", "sphere", "given"}
        ``"given"``: the vectors were given (:meth:`from_embeddings`), not drawn.
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
        Key of the DP candidate generator (``validation.instances._candidate_kernels``); also set for
        OP instances but unused there.
    generator : int
        Version of the DP candidate generator (``validation.instances._candidate_kernels.GENERATORS``; the DP
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
    generator: int = _candidates.DEFAULT_GENERATOR   # make_instance always sets it

    def __post_init__(self):
        if self.d is not None:  # square: d_in = d_out = d
            if not self.d_in:
                object.__setattr__(self, "d_in", self.d)
            if not self.d_out:
                object.__setattr__(self, "d_out", self.d)

    @classmethod
    def from_embeddings(cls, inputs, outputs, answers=None, weights=None, *, seed=None) -> Instance:
        """The original problem (OP) of given vectors: a memory must map every input to its answer.

        Fact ``mu`` asks input ``inputs[mu]`` for answer ``outputs[answers[mu]]``; every row
        of ``outputs`` competes for every input, as in the OP of :func:`make_instance`
        (``notes/simulation.md``, "Facts in given embeddings").  The instance goes to every
        solver that takes an OP instance (:func:`validation.solve`); the decisions and their
        certificates are those of a drawn instance.  Its ``ensemble`` is ``"given"``.

        Parameters
        ----------
        inputs : array_like of real, shape (p, d_in)
            Row ``mu`` is the input ``e_mu`` of fact ``mu`` (for example a subject
            representation); ``p >= 2``, ``d_in >= 2``.
        outputs : array_like of real, shape (K, d_out)
            Row ``k`` is the output ``u_k`` (for example an unembedding row); ``K >= 2``,
            ``d_out >= 2``.  Rows no fact answers are competitors only.
        answers : array_like of int, shape (p,), optional
            ``answers[mu]`` is the row of ``outputs`` that answers fact ``mu`` (integral
            floats accepted).  None (default): fact ``mu`` answers output ``mu``, which
            needs ``K = p``.
        weights : array_like of float, shape (p,), optional
            Query frequencies of the facts, finite and positive; divided by their sum if
            they do not sum to one (``weights_normalised``), as in :class:`FactSettings`.
        seed : None, int, SeedSequence or Generator, optional
            Stored as ``Instance.seed`` (resolved by ``replica.common.seeds.resolve_seed``;
            None: the package default): the seed of the random starts of ``adam`` at
            ``kappa < 1``.  The vectors do not depend on it.

        Returns
        -------
        Instance
            ``problem="op"``, ``ensemble="given"``, read-only float64 copies of the
            arrays; ``d = d_in`` when ``d_in == d_out`` (square), else None.  With
            ``answers`` it has ``outputs=K``, ``answer_map=answers`` and
            ``output_vectors=outputs``; without, one answer per fact (``outputs=None``).
            A :func:`make_instance` OP instance rebuilt from its own arrays
            (``inputs``, and ``targets`` or ``output_vectors`` with ``answer_map``) has
            the same arrays bit for bit, so every solver gives it the same result.

        Raises
        ------
        ValueError
            One line naming the argument: ``inputs`` or ``outputs`` not a 2-D array of
            real numbers, with fewer than 2 rows or columns, or with a NaN or infinite
            entry; ``answers`` missing while ``K != p``, of the wrong length, not
            integers, or out of ``[0, K - 1]``; an answer whose output vector equals
            another row of ``outputs`` (the two always score the same, so the fact can
            never be recalled; two facts answered by identical rows can never both be);
            two identical inputs with different answers (the same reason); ``weights``
            of the wrong length, not finite or not positive.
        """
        inputs = _given_matrix(inputs, "inputs", "fact")
        outputs = _given_matrix(outputs, "outputs", "output")
        p, K = inputs.shape[0], outputs.shape[0]
        answer_map = _given_answers(answers, p, K)
        index = np.arange(p) if answer_map is None else answer_map
        _check_distinct_answers(outputs, index)
        _check_consistent_inputs(inputs, index)
        w, normalised = check_weights(p, weights)
        targets = outputs if answer_map is None else np.ascontiguousarray(outputs[answer_map])
        for arr in (inputs, outputs, targets, answer_map):
            if arr is not None:
                arr.setflags(write=False)
        d_in, d_out = inputs.shape[1], outputs.shape[1]
        return cls(d=d_in if d_in == d_out else None, p=p, problem="op", ensemble=GIVEN_ENSEMBLE,
                   seed=resolve_seed(seed), inputs=inputs, targets=targets, dp_key=np.uint64(0),
                   outputs=None if answer_map is None else K, answer_map=answer_map,
                   output_vectors=None if answer_map is None else outputs, weights=w,
                   weights_normalised=normalised, d_in=d_in, d_out=d_out)

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
        return _candidates.dp_pairs(self.dp_key, self.candidate_code, mus, rhos, self.d_out)

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
        return _candidates.candidate_code(self.ensemble, self.generator)

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
        _candidates.dp_scores_into(self.dp_key, self.candidate_code, self.output_images(Y), out)
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


def check_weights(p, weights):
    """Checked query frequencies of ``p`` facts, divided by their sum: ``(w, normalised)``.

    ``(None, False)`` for ``weights=None``; ``normalised`` is True when the given weights
    did not sum to one.  ValueError naming ``weights``: not of length ``p``, not finite
    or not positive.
    """
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


def _given_matrix(values, name, row):
    """A C-contiguous float64 copy of a 2-D finite real array with at least 2 rows and 2 columns."""
    arr = np.asarray(values)
    if arr.dtype.kind not in "biuf" or arr.dtype.kind == "b":
        raise ValueError(f"{name} must be an array of real numbers, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (one row per {row}), got shape {arr.shape}")
    if arr.shape[0] < 2 or arr.shape[1] < 2:
        raise ValueError(f"{name} must have at least 2 rows and 2 columns, got shape {arr.shape}")
    arr = np.array(arr, dtype=np.float64, order="C")
    bad = np.argwhere(~np.isfinite(arr))
    if bad.size:
        i, j = (int(x) for x in bad[0])
        raise ValueError(f"{name} must be finite: entry [{i}, {j}] is {arr[i, j]!r} "
                         f"({len(bad)} non-finite entries)")
    return arr


def _given_answers(answers, p, K):
    """The checked answer map (int64 array of length ``p`` in ``[0, K - 1]``), or None (fact mu answers mu)."""
    if answers is None:
        if K != p:
            raise ValueError(f"answers is needed when outputs has a different number of rows than inputs "
                             f"(K = {K} outputs, p = {p} facts): give the row of outputs that answers each fact")
        return None
    arr = np.asarray(answers)
    if arr.ndim != 1 or arr.shape[0] != p:
        raise ValueError(f"answers must have one entry per fact (length p = {p}, the rows of inputs), "
                         f"got shape {arr.shape}")
    if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise ValueError(f"answers must be integers (rows of outputs), got dtype {arr.dtype}"
                         + (" with non-integral values" if arr.dtype.kind == "f" else ""))
    bad = np.flatnonzero((arr < 0) | (arr >= K))
    if bad.size:
        mu = int(bad[0])
        raise ValueError(f"answers must be rows of outputs, in [0, K - 1] = [0, {K - 1}]: fact {mu} has "
                         f"answer {int(arr[mu])} ({bad.size} out of range)")
    return np.array(arr, dtype=np.int64)


def _identical_rows(arr):
    """Groups (arrays of row indices, increasing) of two or more bit-identical rows of ``arr``."""
    _, inverse, counts = np.unique(arr, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    return [np.flatnonzero(inverse == g) for g in np.flatnonzero(counts > 1)]


def _check_distinct_answers(outputs, index):
    """ValueError naming ``outputs`` when an answer's output vector equals another row of ``outputs``."""
    answered = np.zeros(outputs.shape[0], dtype=bool)
    answered[index] = True
    for rows in _identical_rows(outputs):
        hits = rows[answered[rows]]
        if hits.size >= 2:
            a, b = int(hits[0]), int(hits[1])
            fa, fb = int(np.flatnonzero(index == a)[0]), int(np.flatnonzero(index == b)[0])
            raise ValueError(f"outputs rows {a} and {b} are identical and both are answers (of facts {fa} and "
                             f"{fb}): they always score the same, so they can never both be recalled")
        if hits.size == 1:
            a, b = int(hits[0]), int(rows[rows != hits[0]][0])
            fa = int(np.flatnonzero(index == a)[0])
            raise ValueError(f"outputs row {a} (the answer of fact {fa}) is identical to row {b}: they always "
                             f"score the same, so fact {fa} can never be recalled")


def _check_consistent_inputs(inputs, index):
    """ValueError naming ``inputs`` when two identical inputs have different answers."""
    for rows in _identical_rows(inputs):
        answers = index[rows]
        if np.any(answers != answers[0]):
            other = int(rows[np.flatnonzero(answers != answers[0])[0]])
            raise ValueError(f"inputs rows {int(rows[0])} and {other} are identical but their answers differ "
                             f"(outputs {int(index[rows[0]])} and {int(index[other])}): they can never both be "
                             "recalled")
