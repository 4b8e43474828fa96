"""The theory registry: every quantity ``replica`` predicts, and the models behind it.

Like ``scipy.optimize.minimize(method=...)``: one public function per quantity (a
*front end*, :mod:`replica.quantities`) and, behind it, the models that predict it.  Each
model knows

* the function that implements it (``module:function``, imported on first use);
* where it can be evaluated at all (:attr:`Model.domain`, a reason when it cannot);
* where its derivation is made for (:attr:`Model.designed_for`), which decides the
  default outside every measured regime;
* its stated tolerance against certified measurements, and its note in ``notes/``.

Validity belongs to the quantity: the scoreboard (``experiments/scoreboard``) evaluates
every model of a quantity at every certified measurement of that quantity, so each model
has its own verdicts (``replica/common/validity_table.json``).  The default model at a
point (:func:`choose`) is the first model, in the registry's order, whose verdict there
is ``"checked"``; else the first model made for that point whose verdict is not ``"off"``;
else the first model that can be evaluated.  ``model=`` picks one by name.

This module imports nothing heavy: it holds names and rules, not implementations.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass, field
from typing import Callable

__all__ = ["Model", "Quantity", "QUANTITIES", "quantity", "model", "models", "choose", "coordinates",
           "PREDICTIONS", "model_of_prediction", "describe", "UNITS", "register_unit"]


def _close(a, b) -> bool:
    return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)


@dataclass(frozen=True)
class Model:
    """One model of a quantity.

    Attributes
    ----------
    quantity, name : str
        The quantity it predicts and its name there (``model=name``).
    function : str
        The implementation, ``"module:function"``.
    summary : str
        One line: what the model is.
    note : str
        The note that derives it (``notes/...``).
    tolerance : float
        The stated tolerance against certified measurements (in the quantity's unit of error).
    domain : callable
        ``domain(params) -> str | None``: why the model cannot be evaluated at ``params``
        (``None``: it can).
    designed_for : callable
        ``designed_for(params) -> bool``: whether its derivation is made for ``params``.
    """

    quantity: str
    name: str
    function: str
    summary: str
    note: str
    tolerance: float
    domain: Callable[[dict], str | None] = field(default=lambda params: None, repr=False)
    designed_for: Callable[[dict], bool] = field(default=lambda params: True, repr=False)

    def implementation(self) -> Callable:
        """The function that implements the model (imported on first use)."""
        module, name = self.function.split(":")
        return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class Quantity:
    """A predicted quantity: its front end, its unit of error and its models (in order of preference).

    ``fixed`` and ``continuous`` name the parameters that select a measured regime
    (equal values) and those along which a regime extends (a range; the nearest
    measurement is found in their logarithms).
    """

    name: str
    front_end: str
    value_field: str
    error_kind: str
    fixed: tuple[str, ...]
    continuous: tuple[str, ...]
    defaults: dict
    models: tuple[Model, ...]
    summary: str


def _square(params) -> bool:
    return params.get("d_out") is None or int(params["d_out"]) == int(params["d"])


def _needs_square(params):
    return None if _square(params) else "a square memory (d_out = d)"


def _needs_rectangular(params):
    return None if not _square(params) else "d_out different from d"


def _plain_storage(params, made: str):
    """Why ``params`` are not full rank, zero margin, top-1, one answer per fact, gaussian (``None``: they are)."""
    for name, default in (("kappa", 1.0), ("margin", 0.0), ("top_k", 1)):
        if not _close(params.get(name, default), default):
            return f"{name} = {default} ({made} at full rank, zero margin, top-1 recall)"
    if params.get("outputs") is not None:
        return "one answer per fact (outputs=None)"
    if params.get("ensemble", "gaussian") != "gaussian":
        return "gaussian embeddings"
    return None


def _few_outputs_domain(params):
    if _square(params) or int(params["d_out"]) >= int(params["d"]):
        return "fewer outputs than inputs (d_out < d)"
    if int(params["d_out"]) > 256:
        return "d_out <= 256"
    return _plain_storage(params, "the hull model is made")


def _few_outputs_made_for(params) -> bool:
    return int(params["d_out"]) <= int(params["d"]) / 4 + 1e-9


def _shared_outputs_domain(params):
    if not _square(params):
        return "a square memory (d_out = d)"
    if params.get("problem", "dp") != "op":
        return "problem='op' (shared outputs; the DP's capacity is the finite_size model)"
    return _plain_storage(params, "the shared-outputs term is calibrated")


def _shared_outputs_made_for(params) -> bool:
    return int(params["d"]) >= 8


def _budget_domain(params):
    if _square(params):
        return "d_out different from d (the square memory is the finite_size model)"
    if params.get("outputs") is not None:
        return "one answer per fact (outputs=None)"
    return None


def _optimal_memory(params):
    return None if params.get("memory", "optimal") == "optimal" else "memory='optimal'"


def _hebbian_accuracy_domain(params):
    if params.get("memory", "optimal") != "hebbian":
        return "memory='hebbian'"
    if params.get("ensemble", "gaussian") != "gaussian":
        if params.get("input_exponent") is not None or params.get("output_exponent") is not None:
            return "gaussian embeddings for correlated spectra"
        if params.get("problem", "dp") != "op":
            return "problem='op' for unit-norm embeddings"
    return None


def _image_domain(params):
    for name, default in (("kappa", 1.0), ("top_k", 1)):
        if not _close(params.get(name, default), default):
            return f"{name} = {default} (the image-space cost is made at full rank, top-1 recall)"
    return None


def _rs_accuracy_domain(params):
    if params.get("ensemble", "gaussian") != "gaussian":
        return "gaussian embeddings"
    return _optimal_memory(params)


def _hull_accuracy_domain(params):
    return _rs_accuracy_domain(params) or (None if _close(params.get("kappa", 1.0), 1.0) else "kappa = 1")


QUANTITIES: dict[str, Quantity] = {}


def _register(q: Quantity) -> None:
    QUANTITIES[q.name] = q


_register(Quantity(
    "capacity", "replica.capacity", "p_c", "relative",
    fixed=("problem", "kappa", "margin", "top_k", "outputs", "ensemble", "ratio"), continuous=("d",),
    defaults={"kappa": 1.0, "margin": 0.0, "top_k": 1, "outputs": None, "problem": "dp", "ensemble": "gaussian",
              "d_out": None},
    summary="p_c of the optimal memory: the load stored with probability 1/2",
    models=(
        Model("capacity", "hull_budget", "replica.variants.few_outputs:few_outputs_capacity",
              "P(stored) = H(p) K(p): the outputs' convex hull times the weight budget, for few outputs",
              "notes/rectangular_few_outputs.md", 0.08, _few_outputs_domain, _few_outputs_made_for),
        Model("capacity", "shared_outputs", "replica.optimal.shared_outputs:shared_outputs_capacity",
              "p E[C_p] (1 - gamma E[C_p]/d) = d^2: the OP's shared outputs correlate its constraints",
              "notes/shared_outputs.md", 0.02, _shared_outputs_domain, _shared_outputs_made_for),
        Model("capacity", "finite_size", "replica.optimal.finite_size:capacity",
              "p E[C_p] = F(kappa) d^2 with the water-filling cost of one block (square memories)",
              "notes/finite_size_capacity.md", 0.02, _needs_square),
        Model("capacity", "budget", "replica.variants.rectangular:rectangular_capacity",
              "p E[C_p] = F(kappa; d_out/d_in) d_in d_out: the weight budget of a d_out x d_in memory",
              "notes/rectangular.md", 0.08, _budget_domain),
    )))

_register(Quantity(
    "hebbian_capacity", "replica.hebbian_capacity", "p_c", "relative",
    fixed=("problem", "kappa", "ensemble", "ratio"), continuous=("d",),
    defaults={"kappa": 1.0, "problem": "op", "ensemble": "gaussian", "d_out": None},
    summary="p_c of the Hebbian rule W = sum u e^T",
    models=(
        Model("hebbian_capacity", "finite_size", "replica.hebbian.finite_size:hebbian_capacity",
              "finite-size Gaussian model of the Hebbian scores (its stored outputs compete)",
              "notes/hebbian_finite_size.md", 0.08, _needs_square),
        Model("hebbian_capacity", "rectangular", "replica.variants.rectangular:rectangular_hebbian_capacity",
              "the same model for a d_out x d_in memory", "notes/rectangular.md", 0.08, _needs_rectangular),
    )))

_register(Quantity(
    "max_margin", "replica.max_margin", "margin", "relative",
    fixed=("ensemble", "kappa", "top_k"), continuous=("d", "load"),
    defaults={"kappa": 1.0, "top_k": 1, "ensemble": "gaussian"},
    summary="the largest margin reachable at load p (units ||W||_F / d)",
    models=(
        Model("max_margin", "image", "replica.optimal.image_margin:max_margin_image",
              "block cost of the least move in the image space R^d", "notes/max_margin.md", 0.05, _image_domain),
        Model("max_margin", "block_cost", "replica.optimal.finite_size:max_margin",
              "water-filling block cost with the blocks' scale fluctuations", "notes/max_margin.md", 0.05),
    )))

_register(Quantity(
    "accuracy", "replica.accuracy", "accuracy", "absolute",
    fixed=("memory", "kappa", "problem", "ensemble", "input_exponent", "output_exponent"), continuous=("d", "load"),
    defaults={"kappa": 1.0, "memory": "optimal", "problem": "dp", "ensemble": "gaussian", "input_exponent": None,
              "output_exponent": None},
    summary="the expected fraction of the p facts recalled",
    models=(
        Model("accuracy", "finite_size_hull", "replica.variants.accuracy_finite:finite_size_accuracy",
              "best recall count at the integer p, with the outputs' hull (optimal memory)",
              "notes/recall_accuracy.md", 0.03, _hull_accuracy_domain),
        Model("accuracy", "replica_symmetric", "replica.variants.accuracy:optimal_accuracy",
              "replica-symmetric knapsack of the block costs (optimal memory)", "notes/recall_accuracy.md", 0.03,
              _rs_accuracy_domain),
        Model("accuracy", "hebbian_scores", "replica.variants.covariance:covariance_hebbian_accuracy",
              "finite-size model of the Hebbian scores, with correlated embeddings", "notes/covariance.md", 0.03,
              _hebbian_accuracy_domain),
    )))

_register(Quantity(
    "accuracy_capacity", "replica.accuracy_capacity", "p_c", "relative",
    fixed=("memory", "ensemble", "kappa", "accuracy"), continuous=("d",),
    defaults={"accuracy": 0.99, "memory": "optimal", "ensemble": "gaussian", "kappa": 1.0},
    summary="the load at which a threshold fraction of the facts (e.g. 99 %) is recalled",
    models=(
        Model("accuracy_capacity", "replica_symmetric", "replica.variants.accuracy:accuracy_capacity",
              "root of the expected accuracy (optimal: replica-symmetric knapsack; Hebbian: finite-size model)",
              "notes/recall_accuracy.md", 0.05),
    )))

def _zipf_memory(memory):
    def domain(params):
        return None if params.get("memory", "optimal") == memory else f"memory={memory!r}"
    return domain


def _zipf_hull(params):
    why = _zipf_memory("optimal")(params)
    if why is not None:
        return why
    if params.get("samples") is not None:
        return "samples=None (every fact seen)"
    d, N = params.get("d"), params.get("N")
    if d is None or N is None:
        return None
    return None if d <= 32 and d + 1 < N <= 256 else "d <= 32 and d + 1 < N <= 256 (the hull's cloud statistics)"


def _zipf_weighted(params):
    if params.get("memory", "optimal") != "hebbian":
        return "memory='hebbian'"
    return None if params.get("weights") not in (None, "none") else "weights (the weighted Hebbian memory)"


def _zipf_weighted_exact(params):
    why = _zipf_weighted(params)
    if why is not None:
        return why
    return None if params.get("samples") is None else "samples=None (fixed weights, every fact seen)"


def _zipf_unweighted(params):
    if params.get("memory", "optimal") != "hebbian":
        return "memory='hebbian'"
    return None if params.get("weights") in (None, "none") else "weights=None (the unweighted Hebbian memory)"


_register(Quantity(
    "zipf_error", "replica.zipf_error", "error", "absolute",
    fixed=("memory", "kappa", "ensemble", "weights", "samples"), continuous=("d", "N", "a"),
    defaults={"memory": "optimal", "kappa": 1.0, "ensemble": "gaussian", "weights": None, "samples": None},
    summary="the frequency mass of the facts not recalled, Zipf frequencies",
    models=(
        Model("zipf_error", "hull_knapsack", "replica.variants.zipf:zipf_error",
              "optimal memory: the knapsack over the facts whose target is a vertex of its candidates' hull",
              "notes/zipf.md", 0.03, _zipf_hull),
        Model("zipf_error", "knapsack", "replica.variants.zipf:zipf_error",
              "optimal memory: replica-symmetric knapsack of the block costs", "notes/zipf.md", 0.03,
              _zipf_memory("optimal")),
        Model("zipf_error", "hebbian-finite-size", "replica.variants.zipf:zipf_error",
              "unweighted Hebbian memory: the finite-size model at p = N", "notes/zipf.md", 0.03, _zipf_unweighted),
        Model("zipf_error", "hebbian-conditional", "replica.variants.zipf:zipf_error",
              "weighted Hebbian memory: the heaviest facts exactly, the rest a Gaussian field", "notes/zipf.md",
              0.03, _zipf_weighted_exact),
        Model("zipf_error", "hebbian-gaussian", "replica.variants.zipf:zipf_error",
              "weighted Hebbian memory: independent Gaussian scores", "notes/zipf.md", 0.03, _zipf_weighted),
    )))

def _finite_ratio_domain(params):
    if params.get("d") is None:
        return "a finite memory size d"
    if params.get("ensemble", "gaussian") != "gaussian":
        return "gaussian embeddings"
    return None


def _dp_problem(params) -> bool:
    return params.get("problem", "dp") == "dp"


_register(Quantity(
    "spectrum", "replica.spectrum", "ks", "absolute",
    fixed=("problem", "kappa", "ensemble"), continuous=("d",),
    defaults={"kappa": 1.0, "problem": "dp", "ensemble": "gaussian"},
    summary="the singular-value law of the optimal memory at capacity (error: the KS distance)",
    models=(
        Model("spectrum", "finite_ratio", "replica.optimal.finite_spectrum:optimal_finite_spectrum",
              "the dual sum of p pushes at finite d and p/d (error: its predicted KS against the measured one)",
              "notes/spectra.md", 0.02, _finite_ratio_domain, _dp_problem),
        Model("spectrum", "quarter_circle", "replica.asymptotic.spectra:spectrum",
              "quarter circle, truncated at s_kappa for rank kappa d", "notes/spectra.md", 0.05,
              designed_for=lambda params: params.get("d") is None),
    )))


# The name under which an implementation reports its validity (``reports_validity``):
# prediction -> (quantity, model).
PREDICTIONS = {
    "capacity": ("capacity", "finite_size"),
    # a square d x d memory is the finite_size model, bit for bit
    "rectangular_capacity": ("capacity", lambda r: "finite_size" if r.d_in == r.d_out else "budget"),
    "few_outputs_capacity": ("capacity", "hull_budget"),
    "shared_outputs_capacity": ("capacity", "shared_outputs"),
    "hebbian_capacity": ("hebbian_capacity", "finite_size"),
    "rectangular_hebbian_capacity": ("hebbian_capacity",
                                     lambda r: "finite_size" if r.d_in == r.d_out else "rectangular"),
    "max_margin": ("max_margin", "block_cost"),
    "max_margin_image": ("max_margin", "image"),
    "optimal_accuracy": ("accuracy", "replica_symmetric"),
    "finite_size_accuracy": ("accuracy", "finite_size_hull"),
    "covariance_hebbian_accuracy": ("accuracy", "hebbian_scores"),
    "accuracy_capacity": ("accuracy_capacity", "replica_symmetric"),
    "zipf_error": ("zipf_error", None),  # the result's own ``model`` field names it
    "spectrum": ("spectrum", "quarter_circle"),
}


def model_of_prediction(prediction: str, result=None) -> Model:
    """The model that an implementation named ``prediction`` is (``PREDICTIONS``; ``result.model`` where it says).

    An entry's model is a name, ``None`` (the result's own ``model`` field names it) or a
    function of the result (the model the result turned out to be, e.g. a square
    ``rectangular_capacity`` is the ``finite_size`` model).
    """
    q, m = PREDICTIONS[prediction]
    if m is None:
        m = result.model
    elif callable(m):
        m = m(result)
    return model(q, m)


def quantity(name: str) -> Quantity:
    """The quantity ``name``; ``ValueError`` naming the valid ones otherwise."""
    try:
        return QUANTITIES[name]
    except KeyError:
        raise ValueError(f"quantity must be one of {', '.join(map(repr, QUANTITIES))}; got {name!r}") from None


def models(name: str) -> tuple[Model, ...]:
    """The models of quantity ``name``, in order of preference."""
    return quantity(name).models


def model(quantity_name: str, name: str) -> Model:
    """The model ``name`` of ``quantity_name``; ``ValueError`` naming the valid ones otherwise."""
    q = quantity(quantity_name)
    for m in q.models:
        if m.name == name:
            return m
    raise ValueError(f"model must be one of {', '.join(repr(m.name) for m in q.models)} for {q.front_end}; "
                     f"got {name!r}")


# Units of derived coordinates, registered by the layer that computes them (the registry is the
# bottom layer and imports no model): "load" -> f(d), the p_c that measures p (replica.optimal.finite_size).
UNITS: dict[str, Callable[[int], float]] = {}


def register_unit(name: str, unit: Callable[[int], float]) -> None:
    """Register the unit ``unit(d)`` of a derived coordinate (``"load"``: ``p / unit(d)``)."""
    UNITS[name] = unit


def _ratio(params) -> float:
    d_out = params.get("d_out")
    return 1.0 if d_out is None else round(float(d_out) / float(params["d"]), 12)


def coordinates(quantity_name: str, params: dict) -> tuple[dict, dict]:
    """The fixed and continuous coordinates of a call of ``quantity_name`` with ``params``.

    Missing parameters take the quantity's defaults; ``ratio`` is ``d_out / d`` (1 for a
    square memory) and ``load`` is ``p / capacity(d).p_c`` where the quantity has one.
    """
    q = quantity(quantity_name)
    values = dict(q.defaults)
    values.update({k: v for k, v in params.items() if v is not None or k not in q.defaults})
    if "ratio" in q.fixed:
        values["ratio"] = _ratio(values)
    if "load" in q.continuous and "load" not in values:
        if "load" not in UNITS:
            raise RuntimeError("the unit of 'load' is registered by replica.optimal.finite_size: import it first")
        values["load"] = float(values["p"]) / UNITS["load"](int(values["d"]))
    fixed = {k: values.get(k) for k in q.fixed}
    continuous = {k: float(values[k]) for k in q.continuous}
    return fixed, continuous


def choose(quantity_name: str, params: dict, name: str | None = None,
           verdict: Callable[[str], str] | None = None) -> Model:
    """The model to evaluate ``quantity_name`` at ``params`` (``name``: the caller's choice).

    The default is the first model (registry order) whose validity verdict at ``params``
    is ``"checked"``; else the first whose derivation is made for ``params`` and whose
    verdict is not ``"off"``; else the first that can be evaluated there.  ``verdict(model
    name)`` gives the verdicts (``replica.common.validity.verdict_of``, which the front
    ends pass); without it every verdict counts as ``"unchecked"``.

    Raises
    ------
    ValueError
        If ``name`` is not a model of the quantity, the named model cannot be evaluated
        at ``params``, or no model can.
    """
    q = quantity(quantity_name)
    if name is not None:
        chosen = model(quantity_name, name)
        reason = chosen.domain(params)
        if reason is not None:
            raise ValueError(f"model {name!r} of {q.front_end} needs {reason}; got {_shown(params)}")
        return chosen
    usable = [m for m in q.models if m.domain(params) is None]
    if not usable:
        needs = "; ".join(f"{m.name!r} needs {m.domain(params)}" for m in q.models)
        raise ValueError(f"no model of {q.front_end} can be evaluated at {_shown(params)}: {needs}")
    if len(usable) == 1:
        return usable[0]
    verdicts = {m.name: verdict(m.name) if verdict is not None else "unchecked" for m in usable}
    for m in usable:
        if verdicts[m.name] == "checked":
            return m
    for m in usable:
        if m.designed_for(params) and verdicts[m.name] != "off":
            return m
    return usable[0]


def _shown(params) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in params.items())


def describe() -> list[str]:
    """The registry as table rows: quantity, front end, model, summary, tolerance, note."""
    rows = []
    for q in QUANTITIES.values():
        for m in q.models:
            tol = f"{100 * m.tolerance:g} %" if q.error_kind == "relative" else f"{m.tolerance:g}"
            rows.append(f"| {q.name} | `{q.front_end}` | `{m.name}` | {m.summary} | {tol} | {m.note} |")
    return rows
