"""One public function per quantity, with its models behind it (``replica.common.registry``).

Each front end takes the parameters of the quantity, picks the model that the certified
measurements support at that point (``model=`` picks another by name), and returns the
model's result, whose ``model`` field names the model and whose ``validity`` says how far
that model was checked there (``replica.common.validity``).

=====================  ==============================================================
front end              models (registry order)
=====================  ==============================================================
:func:`capacity`       ``hull_budget`` (few outputs, ``d_out < d``), ``shared_outputs``
                       (square, original problem), ``finite_size`` (square),
                       ``budget`` (``d_out x d`` weight budget)
:func:`hebbian_capacity` ``finite_size`` (square), ``rectangular``
:func:`max_margin`     ``image`` (image-space block cost), ``block_cost``
:func:`accuracy`       ``finite_size_hull``, ``replica_symmetric`` (optimal memory),
                       ``hebbian_scores`` (Hebbian memory, correlated embeddings)
:func:`zipf_error`     ``knapsack`` (optimal), ``hebbian-finite-size``,
                       ``hebbian-gaussian`` (Hebbian); the model follows from
                       ``memory`` and the facts' weights (``replica.variants.zipf``)
:func:`spectrum`       ``finite_ratio`` (the dual sum at finite ``d`` and ``p / d``),
                       ``quarter_circle`` (``d -> infinity``)
=====================  ==============================================================

``python -m replica models`` (or :func:`replica.common.registry.describe`) lists every
model with its note and tolerance; the scoreboard page lists every measured point.
"""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np

from .common import registry
from .common.checks import check_choice, check_int
from .common.deprecation import accepts_old_calls
from .common.validity import MESSAGE_LIMIT, choose_model, warn_if_off, with_validity
from .common.validity import validity as _validity
from .optimal import finite_size  # also registers the unit of the loads p / p_c
from .optimal.capacity_equation import TOLERANCE_FIELDS, old_tolerance_keywords, settings_dict

__all__ = ["capacity", "hebbian_capacity", "max_margin", "accuracy", "spectrum", "validity"]


def validity(quantity, *, model=None, **parameters):
    """How far ``model`` of ``quantity`` (default: the front end's choice) was checked at ``parameters``.

    ``replica.validity("capacity", d=64)`` is the record ``replica.capacity(64).validity``
    carries, without computing the capacity (``replica.common.validity.validity``).
    """
    return _validity(quantity, model=model, **parameters)


def _model(quantity: str, params: dict, model):
    if model is not None and not isinstance(model, str):
        raise ValueError(f"model must be a model name (str) or None; got {model!r}")
    return choose_model(quantity, params, model)


def _accepted(impl, passed) -> tuple[str, ...]:
    """The settings a model takes through ``options``: its keyword-only parameters that the front end
    does not set itself (``passed``), with a grouped ``options`` of its own read as the
    :class:`replica.Tolerances` fields."""
    names = []
    for param in inspect.signature(impl).parameters.values():
        if param.kind is not param.KEYWORD_ONLY or param.name in passed:
            continue
        names.extend(TOLERANCE_FIELDS if param.name == "options" else (param.name,))
    return tuple(dict.fromkeys(names))


def _options(options, quantity: str, chosen, passed=()) -> dict:
    """The settings of ``options`` (``None``, a :class:`replica.Tolerances` or a dict) for the model ``chosen``.

    A setting the model does not take is a ``ValueError`` that names the model's settings:
    nothing given is dropped silently.
    """
    settings = settings_dict(options, f"{quantity}()")
    accepted = _accepted(chosen.implementation(), passed)
    unknown = [name for name in settings if name not in accepted]
    if unknown:
        takes = f"its settings: {', '.join(accepted)}" if accepted else "it takes none"
        raise ValueError(f"{quantity}(): {', '.join(unknown)}: not settings of model {chosen.name!r} ({takes})")
    return settings


def _grouped(settings: dict, impl, passed=()) -> dict:
    """``settings`` as keywords of ``impl``: the :class:`replica.Tolerances` fields it takes through an
    ``options`` of its own are gathered there."""
    own = {p.name for p in inspect.signature(impl).parameters.values()
           if p.kind is p.KEYWORD_ONLY and p.name not in passed and p.name != "options"}
    keywords = {k: v for k, v in settings.items() if k in own}
    grouped = {k: v for k, v in settings.items() if k not in own}
    if grouped:
        keywords["options"] = grouped
    return keywords


def _square_params(d, d_out) -> tuple[int, int | None]:
    d = check_int(d, "d", low=2)
    if d_out is not None:
        d_out = check_int(d_out, "d_out", low=1)
    return d, d_out


@accepts_old_calls(old_tolerance_keywords("capacity"))
def capacity(d, kappa=1.0, margin=0.0, top_k=1, *, d_out=None, outputs=None, problem="dp", ensemble="gaussian",
             model=None, options=None):
    """Capacity ``p_c`` of the optimal memory: the load stored with probability 1/2.

    Parameters
    ----------
    d : int
        Input dimension (the memory is ``d x d``, or ``d_out x d``), ``d >= 2``.
    kappa : float, optional
        Rank fraction ``m / min(d, d_out)`` in ``(0, 1]``.
    margin : float, optional
        Stability margin ``>= 0`` in competitor standard deviations.
    top_k : int, optional
        The target among the ``top_k`` best.
    d_out : int, optional
        Output dimension (``None``: ``d``, a square memory).
    outputs : int, optional
        ``K`` distinct answers shared by the facts (``None``: one per fact).
    problem : {"dp", "op"}, optional
        Decoupled (own candidates per input, the default) or original (shared outputs)
        problem.  A square memory with one answer per fact stores about ``0.1 d`` more
        facts in the OP (its shared outputs correlate the constraints; model
        ``shared_outputs``, the default there from ``d = 8``); the problem matters too with
        ``outputs=K`` and with ``d_out < d``.  The simulations default to ``"op"`` (``docs/glossary.md``, "problem").
    ensemble : {"gaussian", "sphere"}, optional
        N(0, I/d) or unit-norm embeddings.
    model : str, optional
        ``"finite_size"`` (square memories: ``p E[C_p] = F(kappa) d^2``,
        ``notes/finite_size_capacity.md``), ``"shared_outputs"`` (square, ``problem="op"``
        at full rank, one answer per fact, gaussian: ``p E[C_p] (1 - gamma E[C_p]/d) = d^2``,
        ``notes/shared_outputs.md``), ``"budget"`` (``d_out x d``: ``p E[C_p] =
        F(kappa; d_out/d) d d_out``, ``notes/rectangular.md``) or ``"hull_budget"`` (few
        outputs: the outputs' convex hull times the budget,
        ``notes/rectangular_few_outputs.md``).  Default: the model the certified
        measurements support at this point (``replica.common.registry.choose``).
    options : replica.Tolerances or dict, optional
        The model's settings.  ``finite_size``, ``shared_outputs`` and ``budget``: ``rel_tol``, ``tol``,
        ``max_iter``, ``seed`` of the Monte-Carlo root
        (:func:`replica.optimal.finite_size.capacity`; unset: its defaults).
        ``hull_budget`` reads shipped Monte-Carlo tables: ``{"replicas": 2 or 3}`` only.
        The flat keywords ``rel_tol=``, ``tol=``, ``max_iter=``, ``seed=`` still work,
        with a ``DeprecationWarning``, for one release.

    Returns
    -------
    CapacityResult, SharedOutputsCapacityResult, RectangularCapacityResult or FewOutputsCapacityResult
        ``p_c``, ``alpha``, ``stderr``, ``status``, ``message``, ``model`` and ``validity``.

    Raises
    ------
    ValueError
        If an argument is outside its range, ``model`` is unknown, or the model cannot be
        evaluated at these parameters (the message says what it needs).

    Examples
    --------
    >>> import replica
    >>> r = replica.capacity(64)
    >>> r.model, round(r.p_c, 1), r.validity.verdict
    ('finite_size', 564.2, 'checked')
    >>> round(replica.capacity(64, options=replica.Tolerances(rel_tol=1e-2)).p_c)
    565
    """
    d, d_out = _square_params(d, d_out)
    params = {"d": d, "kappa": kappa, "margin": margin, "top_k": top_k, "d_out": d_out, "outputs": outputs,
              "problem": problem, "ensemble": ensemble}
    chosen = _model("capacity", params, model)
    impl = chosen.implementation()
    if chosen.name == "hull_budget":
        settings = settings_dict(options, "capacity()")
        given = sorted(set(settings) - {"replicas"})
        if given:
            raise ValueError(f"{', '.join(given)}: not settings of model 'hull_budget' (it reads shipped Monte-Carlo "
                             f"tables; options={{'replicas': 2 or 3}}); pass model='budget' for the budget theory")
        return impl(d, d_out, problem, **settings)
    if chosen.name == "finite_size":
        passed = ("outputs", "problem", "ensemble")
        settings = _options(options, "capacity", chosen, passed)
        return impl(d, kappa, margin, top_k, outputs=outputs, problem=problem, ensemble=ensemble,
                    **_grouped(settings, impl, passed))
    passed = ("margin", "top_k", "problem", "ensemble")
    settings = _options(options, "capacity", chosen, passed)
    return impl(d, d_out, kappa, margin=margin, top_k=top_k, problem=problem, ensemble=ensemble,
                **_grouped(settings, impl, passed))


def hebbian_capacity(d, ensemble="gaussian", kappa=1.0, *, d_out=None, problem="op", model=None, options=None):
    """Capacity ``p_c`` of the Hebbian rule ``W = sum_mu u_mu e_mu^T`` (its stored outputs compete).

    Parameters
    ----------
    d : int
        Input dimension, ``d >= 2``.
    ensemble : {"gaussian", "sphere"}, optional
    kappa : float, optional
        Rank fraction (square memories): the best rank-``kappa d`` approximation.
    d_out : int, optional
        Output dimension (``None``: square).
    problem : {"op", "dp"}, optional
        ``"op"`` (the default, unlike :func:`capacity`): the Hebbian memory's competitors are
        its own stored outputs, so the square model exists for ``"op"`` only; a ``d_out x d``
        memory also takes ``"dp"`` (``docs/glossary.md``, "problem").
    model : str, optional
        ``"finite_size"`` (square, ``notes/hebbian_finite_size.md``) or ``"rectangular"``
        (``notes/rectangular.md``).
    options : replica.Tolerances or dict, optional
        The root's settings ``rel_tol``, ``tol``, ``max_iter``
        (:func:`replica.hebbian.finite_size.hebbian_capacity`; unset: ``1e-9``, ``1e-6``,
        ``100``).  The model is deterministic: a ``seed`` is a ``ValueError``.

    Returns
    -------
    HebbianCapacityResult or RectangularHebbianCapacityResult

    Examples
    --------
    >>> import replica
    >>> replica.hebbian_capacity(64).model
    'finite_size'
    """
    d, d_out = _square_params(d, d_out)
    params = {"d": d, "kappa": kappa, "d_out": d_out, "problem": problem, "ensemble": ensemble}
    chosen = _model("hebbian_capacity", params, model)
    impl = chosen.implementation()
    settings = _options(options, "hebbian_capacity", chosen, ("problem",))
    if chosen.name == "finite_size":
        if problem != "op":
            raise ValueError(f"problem must be 'op' for the square Hebbian memory (its stored outputs are the "
                             f"competitors); got {problem!r}")
        return impl(d, ensemble, kappa, **settings)
    if kappa != 1.0:
        raise ValueError(f"kappa must be 1 for a d_out x d Hebbian memory; got {kappa!r}")
    return impl(d, d_out, ensemble, problem=problem, **settings)


def _old_margin_keywords(args, kwargs):
    """``max_margin(..., seed=)`` and ``options={"tolerances": ...}``, the call styles before ``options=Tolerances``."""
    nested = isinstance(kwargs.get("options"), dict) and "tolerances" in kwargs["options"]
    if "seed" not in kwargs and not nested:
        return None
    kwargs = dict(kwargs)
    options = settings_dict(kwargs.get("options"), "max_margin()")
    if nested:
        tolerances = options.pop("tolerances")
        options.update(settings_dict(tolerances, "max_margin()"))
    if kwargs.get("seed") is not None:
        if "seed" in options:
            raise TypeError("max_margin() got seed twice: as a keyword and in options")
        options["seed"] = kwargs["seed"]
    kwargs.pop("seed", None)
    kwargs["options"] = options
    return args, kwargs, ("max_margin(seed=) and options={'tolerances': Tolerances(...)} are deprecated and will be "
                          "removed in the next release; pass options=replica.Tolerances(seed=, rel_tol=, ...) or "
                          "options={'seed': ..., ...}")


@accepts_old_calls(_old_margin_keywords)
def max_margin(d, p, kappa=1.0, top_k=1, *, ensemble="gaussian", model=None, options=None):
    """Largest margin of the max-margin memory at load ``p``, in units of ``||W||_F / d``.

    Parameters
    ----------
    d : int
        Dimension, ``d >= 2``.
    p : int
        Number of stored facts.
    kappa : float, optional
        Rank fraction (``block_cost`` only).
    top_k : int, optional
        Target among the ``top_k`` best (``block_cost`` only).
    ensemble : {"gaussian", "sphere"}, optional
    model : str, optional
        ``"image"`` (the block's least move in the image space, ``notes/max_margin.md``,
        section 11) or ``"block_cost"`` (the water-filling cost with the blocks' scale
        fluctuations).
    options : replica.Tolerances or dict, optional
        The model's settings: ``seed`` of its Monte-Carlo sample (both models; unset: the
        package seed); ``image``: ``blocks``, ``xtol``; ``block_cost``: ``rel_tol``, ``tol``,
        ``max_iter`` (:func:`replica.optimal.max_margin`) and ``scale_fluctuations``.  The
        keyword ``seed=`` and ``options={"tolerances": replica.Tolerances(...)}`` still work,
        with a ``DeprecationWarning``, for one release.

    Returns
    -------
    ImageMarginResult or MarginCapacityResult
        ``margin`` (negative above capacity), ``stderr``, ``model``, ``validity``.
    """
    d = check_int(d, "d", low=2)
    params = {"d": d, "p": p, "kappa": kappa, "top_k": top_k, "ensemble": ensemble}
    chosen = _model("max_margin", params, model)
    impl = chosen.implementation()
    settings = _grouped(_options(options, "max_margin", chosen, ("ensemble",)), impl, ("ensemble",))
    if chosen.name == "image":
        return impl(d, p, ensemble=ensemble, **settings)
    return impl(d, p, kappa, top_k, ensemble=ensemble, **settings)


def _spectrum_argument(value, d):
    """A spectrum given as an exponent (power law, ``replica.power_law_spectrum``) or as ``d`` values."""
    if value is None:
        return None, None
    if np.ndim(value) == 0:
        from .variants.covariance import power_law_spectrum

        return power_law_spectrum(d, float(value)), float(value)
    return value, "array"


def accuracy(d, p, kappa=1.0, *, memory="optimal", problem="dp", ensemble="gaussian", input_spectrum=None,
             output_spectrum=None, model=None, options=None):
    """Expected fraction of the ``p`` facts recalled (above capacity: below 1).

    Parameters
    ----------
    d : int
        Dimension, ``d >= 2``.
    p : int
        Number of facts.
    kappa : float, optional
        Rank fraction of the optimal memory.
    memory : {"optimal", "hebbian"}, optional
        The best memory (the most facts recalled) or the Hebbian rule.
    problem : {"dp", "op"}, optional
        ``"dp"`` (the default, as :func:`capacity`): the optimal memory's models are made
        for the decoupled problem; the Hebbian memory takes either (its isotropic
        unit-norm case needs ``"op"``; ``docs/glossary.md``, "problem").
    ensemble : {"gaussian", "sphere"}, optional
        Embedding ensemble (the optimal memory's models: gaussian; the Hebbian memory: unit-norm
        embeddings with isotropic spectra and ``problem="op"``).
    input_spectrum, output_spectrum : float or array_like, optional
        Hebbian memory with correlated embeddings: a power-law exponent (the spectrum
        ``replica.power_law_spectrum(d, exponent)``) or ``d`` eigenvalues.
    model : str, optional
        ``"finite_size_hull"`` (the best count at the integer ``p``, with the outputs'
        hull), ``"replica_symmetric"`` (the knapsack of the block costs) or
        ``"hebbian_scores"`` (``memory="hebbian"``); ``notes/recall_accuracy.md``,
        ``notes/covariance.md``.
    options : replica.Tolerances or dict, optional
        The model's sampling settings: ``seed`` and ``size`` (every model; unset: the
        package seed and the model's sample size); ``replica_symmetric``: ``tol``;
        ``finite_size_hull``: ``instances``, ``hull``.

    Returns
    -------
    FiniteSizeAccuracyResult, OptimalAccuracyResult or CovarianceHebbianAccuracy
    """
    d = check_int(d, "d", low=2)
    lam_in, input_exponent = _spectrum_argument(input_spectrum, d)
    lam_out, output_exponent = _spectrum_argument(output_spectrum, d)
    params = {"d": d, "p": p, "kappa": kappa, "memory": memory, "problem": problem, "ensemble": ensemble,
              "input_exponent": input_exponent, "output_exponent": output_exponent}
    if memory not in ("optimal", "hebbian"):
        raise ValueError(f"memory must be 'optimal' or 'hebbian'; got {memory!r}")
    if memory == "optimal" and (lam_in is not None or lam_out is not None):
        raise ValueError("input_spectrum and output_spectrum need memory='hebbian'")
    chosen = _model("accuracy", params, model)
    impl = chosen.implementation()
    passed = ("input_spectrum", "output_spectrum", "problem", "ensemble")
    settings = _options(options, "accuracy", chosen, passed)
    if chosen.name != "hebbian_scores":
        return impl(d, p, kappa, **settings)
    if kappa != 1.0:
        raise ValueError(f"kappa must be 1 for the Hebbian memory's accuracy; got {kappa!r}")
    result = impl(d, p, input_spectrum=lam_in, output_spectrum=lam_out, problem=problem, ensemble=ensemble,
                  **settings)
    return with_validity(result, "accuracy", model=chosen.name, **params)


def spectrum(kappa=1.0, *, d=None, p=None, problem="dp", model=None, options=None):
    """Predicted singular-value law of the optimal memory at capacity.

    Without ``d``: the ``d -> infinity`` law, model ``quarter_circle`` (``QuarterCircle()``
    at full rank, ``TruncatedQuarterCircle(kappa)`` below; ``replica.asymptotic.spectra``,
    ``notes/spectra.md``).  With ``d`` (and the load ``p``, default the finite-size
    capacity): the model the certified measurements support there; ``finite_ratio`` is
    the law of the memory's dual sum of ``p`` pushes at that ``d``
    (``replica.optimal.finite_spectrum``, ``notes/spectra.md`` section 7), a
    :class:`replica.asymptotic.FiniteRatioSpectrum` with ``cdf``, ``below`` (the mass below
    ``s_kappa``) and ``ks_distances(n)``, whose ``validity`` says how far the model was
    checked at that ``d``.  For the ``d -> infinity`` law (a ``scipy.stats`` distribution,
    without a record): ``replica.validity("spectrum", d=..., kappa=..., problem=...,
    model="quarter_circle")``.

    ``options``: ``finite_ratio`` takes ``memories`` and ``seed``; the ``quarter_circle``
    law is in closed form and has no settings, so any setting given is a ``ValueError``.

    Examples
    --------
    >>> import replica
    >>> type(replica.spectrum(0.5)).__name__
    'TruncatedQuarterCircle'
    >>> law = replica.spectrum(0.5, d=32, model="finite_ratio", options={"memories": 50})
    >>> law.d, law.p, law.rank
    (32, 167, 16)
    """
    problem = check_choice(problem, "problem", ("dp", "op"))
    if d is None:
        if p is not None:
            raise ValueError("spectrum(): p needs d (the d -> infinity law has no load)")
        params = {"kappa": kappa, "problem": problem}
        if model is None:
            chosen = next(m for m in registry.models("spectrum") if m.domain(params) is None)
        else:
            chosen = registry.model("spectrum", model)
        if chosen.domain(params) is not None:
            raise ValueError(f"spectrum(): model {chosen.name!r} needs {chosen.domain(params)}")
    else:
        d = check_int(d, "d", low=2)
        p = None if p is None else check_int(p, "p", low=2)
        chosen = _model("spectrum", {"d": d, "p": p, "kappa": kappa, "problem": problem}, model)
    impl = chosen.implementation()
    settings = _options(options, "spectrum", chosen, ("problem",))
    if chosen.name == "quarter_circle":
        return impl(kappa)
    law = impl(d, p, kappa, problem=problem, **settings)
    record = _validity("spectrum", model=chosen.name, d=d, kappa=kappa, problem=problem)
    at_capacity = float(finite_size.capacity(d, kappa).p_c)
    if record.verdict != "unchecked" and abs(np.log(law.p / at_capacity)) > SPECTRUM_LOAD_RANGE:
        # every measurement of the spectrum is at the capacity: a record there says nothing about other loads
        message = f"unchecked: measured only at capacity (p near {at_capacity:.0f}); nearest: {record.message}"
        record = dataclasses.replace(record, verdict="unchecked", message=message[:MESSAGE_LIMIT])
    return dataclasses.replace(law, validity=warn_if_off(record, stacklevel=3))


SPECTRUM_LOAD_RANGE = 0.1   # |ln(p / p_c)| within which a finite-d spectrum takes the record of its measurements
