"""Random memory problems: the original problem (OP) and the decoupled problem (DP).

An instance holds ``p`` inputs ``e_mu`` in R^d and, for every input, ``p``
candidate outputs indexed ``rho = 0..p-1`` of which ``rho = mu`` is the target.

* ``op``: one shared output set ``u_0..u_{p-1}``; the candidates of every input
  are all the outputs, and the target of input ``mu`` is ``u_mu``.
* ``dp``: every input ``mu`` has its own independent candidates ``u^(mu)_rho``;
  the target is ``u^(mu)_mu``.  They are regenerated on demand by the
  counter-based generator of :mod:`validation.instances._candidate_kernels` and never stored, so an
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

import dataclasses
import math
import warnings
from dataclasses import dataclass

import numpy as np

from replica.common.checks import check_choice, check_int, check_memory
from replica.common.ensembles import ENSEMBLES
from replica.common.seeds import resolve_seed
from replica.variants.covariance import power_law_spectrum

from . import _candidate_kernels as _candidates
from .instance import Instance, check_square_instance, check_weights

__all__ = ["make_instance", "EmbeddingModel", "FactSettings", "instance_bytes", "check_generator", "Instance",
           "PROBLEMS", "ENSEMBLES", "power_law_spectrum", "covariance_root", "check_square_instance"]

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
    """The DP generator version: ``generator`` itself if in ``validation.instances._candidate_kernels.GENERATORS``,
    ``validation.instances._candidate_kernels.default_generator()`` for None; ValueError otherwise."""
    if generator is None:
        return _candidates.default_generator()
    if isinstance(generator, (bool, np.bool_)) or not isinstance(generator, (int, np.integer)) \
            or int(generator) not in _candidates.GENERATORS:
        raise ValueError(f"generator must be one of {_candidates.GENERATORS} or None, got {generator!r}")
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
        code = _candidates.candidate_code(ensemble, generator)
        target_vectors = _candidates.dp_pairs(dp_key, code, np.arange(p), index, d_out)
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


@dataclass(frozen=True, eq=False)
class EmbeddingModel:
    """How :func:`make_instance` draws the input and output vectors.

    Attributes
    ----------
    ensemble : {"gaussian", "sphere"}
        ``gaussian``: i.i.d. N(0, I_d / d); ``sphere``: uniform on the unit sphere.
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

    The fields are checked by :func:`make_instance`, which knows ``d``.
    """

    ensemble: str = "gaussian"
    d_in: int | None = None
    d_out: int | None = None
    input_covariance: object = None
    output_covariance: object = None


@dataclass(frozen=True, eq=False)
class FactSettings:
    """The facts of :func:`make_instance`: how many distinct answers, which answer each fact has, how often it is asked.

    Attributes
    ----------
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

    The fields are checked by :func:`make_instance`, which knows ``p``.
    """

    outputs: int | None = None
    targets: object = None
    weights: object = None


_EMBEDDING_FIELDS = tuple(f.name for f in dataclasses.fields(EmbeddingModel))
_FACT_FIELDS = tuple(f.name for f in dataclasses.fields(FactSettings))


def _settings(embeddings, facts, flat):
    """``(EmbeddingModel, FactSettings)`` of :func:`make_instance`, the deprecated flat keywords folded in."""
    embeddings = EmbeddingModel() if embeddings is None else embeddings
    facts = FactSettings() if facts is None else facts
    if not isinstance(embeddings, EmbeddingModel):
        raise ValueError(f"embeddings must be an EmbeddingModel, got {type(embeddings).__name__}")
    if not isinstance(facts, FactSettings):
        raise ValueError(f"facts must be a FactSettings, got {type(facts).__name__}")
    unknown = sorted(set(flat) - set(_EMBEDDING_FIELDS) - set(_FACT_FIELDS))
    if unknown:
        raise TypeError(f"make_instance() got unexpected keyword arguments {unknown}")
    if flat:
        on_embeddings = [k for k in flat if k in _EMBEDDING_FIELDS]
        on_facts = [k for k in flat if k in _FACT_FIELDS]
        use = [f"{cls}({', '.join(f'{k}=...' for k in names)})" for cls, names in
               (("embeddings=EmbeddingModel", on_embeddings), ("facts=FactSettings", on_facts)) if names]
        warnings.warn(f"make_instance({', '.join(f'{k}=...' for k in flat)}) is deprecated; pass "
                      f"{' and '.join(use)}", DeprecationWarning, stacklevel=3)
        embeddings = dataclasses.replace(embeddings, **{k: flat[k] for k in on_embeddings})
        facts = dataclasses.replace(facts, **{k: flat[k] for k in on_facts})
    return embeddings, facts


def make_instance(d, p, problem="op", ensemble=None, seed=None, *, embeddings=None, facts=None, generator=None,
                  **flat) -> Instance:
    """Build a random memory problem, reproducible from its arguments.

    Parameters
    ----------
    d : int or None
        Dimension, ``d >= 2``: the default of ``embeddings.d_in`` and ``embeddings.d_out``.
        Must be None when both are given.
    p : int
        Number of associations, ``p >= 2``.
    problem : {"op", "dp"}
        Original problem (shared outputs) or decoupled problem (own candidates
        per input).
    ensemble : {"gaussian", "sphere"}, optional
        Deprecated (``DeprecationWarning``): use ``embeddings=EmbeddingModel(ensemble)``.
    seed : None, int, SeedSequence or Generator
        Resolved to an integer by ``replica.common.seeds.resolve_seed`` (``None``:
        the package default ``DEFAULT_SEED``); the integer is stored in
        ``Instance.seed``.  ``SeedSequence(seed).spawn(3)`` gives three
        children: inputs, OP outputs, DP generator key.  Instances with the same
        seed but different ``p`` share their leading rows (and DP candidates
        with equal ``(mu, rho)``); use different seeds (e.g. from
        ``SeedSequence.spawn``) for independent instances.
    embeddings : EmbeddingModel, optional
        Ensemble, rectangular shape (``d_in``, ``d_out``) and covariances of the vectors
        (default ``EmbeddingModel()``: gaussian, square, isotropic).
    facts : FactSettings, optional
        Distinct answers (``outputs``, ``targets``) and query frequencies (``weights``)
        of the facts (default ``FactSettings()``: one answer per fact, unweighted).
    generator : {1, 2} or None
        Version of the DP candidate generator (``notes/simulation.md``, section 2); None
        (default): 2, or the value of the environment variable
        ``LINEAR_MEMORY_DP_GENERATOR`` when it is set.  ``generator=1`` builds the
        DP instances of results made before version 2.  OP instances do not depend on it.
    **flat
        Deprecated (``DeprecationWarning``): the fields of :class:`EmbeddingModel`
        (``d_in``, ``d_out``, ``input_covariance``, ``output_covariance``) and of
        :class:`FactSettings` (``outputs``, ``targets``, ``weights``) as keywords; they
        replace those of ``embeddings`` and ``facts``.

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
    if ensemble is not None:
        flat = {"ensemble": ensemble, **flat}
    embeddings, facts = _settings(embeddings, facts, flat)
    d, d_in, d_out = _dimensions(d, embeddings.d_in, embeddings.d_out)
    p = check_int(p, "p", low=2)
    problem = check_choice(problem, "problem", PROBLEMS)
    ensemble = check_choice(embeddings.ensemble, "ensemble", ENSEMBLES)
    seed = resolve_seed(seed)
    generator = check_generator(generator)
    K, answer_map = _answer_map(p, facts.outputs, facts.targets)
    w, normalised = check_weights(p, facts.weights)
    covariances = (_root(embeddings.input_covariance, d_in, "input_covariance"),
                   _root(embeddings.output_covariance, d_out, "output_covariance"))
    _check_instance_memory(d, d_in, d_out, p)
    draw = (seed, p, (d, d_in, d_out), problem, ensemble, generator)
    return _built_instance(draw, (K, answer_map), (w, normalised), covariances)


def _built_instance(draw, answers, weights, covariances):
    """The :class:`Instance` of :func:`make_instance` from checked arguments (``draw = (seed, p,
    (d, d_in, d_out), problem, ensemble, generator)``, ``answers = (K, answer_map)``, ``weights = (w,
    normalised)``, ``covariances``: (root, spectrum, factor) of the inputs and of the outputs); its
    arrays are read-only."""
    seed, p, dims, problem, ensemble, generator = draw
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
