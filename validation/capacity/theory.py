"""What the replica theory predicts for a capacity measurement (``notes/finite_size_capacity.md``)."""

from __future__ import annotations

import math

from ..solvers.engine.registry import HEBBIAN_THEORY, solver_spec

__all__ = ["theory_capacity", "asymptotic_alpha"]


def theory_capacity(d: int, solver: str, kappa: float = 1.0, ensemble: str = "gaussian",
                    accuracy: float | None = None, outputs: int | None = None, problem: str = "op",
                    top_k: int = 1) -> dict:
    """Finite-size theory prediction matching a measurement.

    ``replica.capacity(d, kappa)`` for ``optimal``/``lp``/``adam`` and
    ``replica.hebbian_capacity(d, ensemble=..., kappa=...)`` for ``hebbian``
    (``notes/finite_size_capacity.md``, ``notes/hebbian_finite_size.md``).  With an
    ``accuracy`` threshold: ``replica.accuracy_capacity`` (``notes/recall_accuracy.md``;
    the replica-symmetric optimal memory, or the Hebbian memory at kappa = 1).  With
    ``outputs=K`` distinct answers: ``replica.capacity(d, kappa, outputs=K,
    problem=problem)`` (``notes/many_to_one.md``) for the optimal memory; no theory
    (NaN) for the Hebbian memory or an accuracy threshold.  With ``top_k >= 2`` (top-k
    recall): ``replica.capacity(d, kappa, top_k=top_k)`` (``notes/top_k.md``).  With one
    answer per fact the prediction is the ``finite_size`` model for either ``problem`` (the
    reproduction's grids are placed on it); the OP's own model, which adds the
    shared-outputs term, is ``replica.capacity(d, problem="op")`` (``notes/shared_outputs.md``).

    Returns
    -------
    dict
        ``p_c``, ``alpha``, ``alpha_c`` (the d -> infinity value), ``source`` (the
        function used) and, for the optimal memory, ``stderr`` of p_c.
    """
    import replica

    if outputs is not None:
        return _outputs_theory(d, solver, kappa, accuracy, outputs, problem)
    if accuracy is not None:
        return _accuracy_theory(d, solver, kappa, ensemble, accuracy)
    if solver_spec(solver).is_hebbian:
        res = replica.hebbian_capacity(d, ensemble=ensemble, kappa=kappa)
        source = "replica.hebbian_capacity"
    elif top_k > 1:
        res = replica.capacity(d, kappa, top_k=top_k)
        source = f"replica.capacity(top_k={top_k})"
    else:
        res = replica.capacity(d, kappa)
        source = "replica.capacity"
    out = {"p_c": float(res.p_c), "alpha": float(res.alpha), "alpha_c": float(res.alpha_c), "source": source}
    if not solver_spec(solver).is_hebbian:
        out["stderr"] = float(res.stderr)
    return out


def _outputs_theory(d, solver, kappa, accuracy, outputs, problem) -> dict:
    """:func:`theory_capacity` with ``K`` distinct answers (``replica.capacity(outputs=K)``)."""
    import replica

    if solver_spec(solver).is_hebbian or accuracy is not None:
        return {"p_c": math.nan, "alpha": math.nan, "alpha_c": math.nan,
                "source": "none (no theory of K shared answers for the Hebbian memory or an accuracy threshold)"}
    res = replica.capacity(d, kappa, outputs=outputs, problem=problem)
    return {"p_c": float(res.p_c), "alpha": float(res.alpha), "alpha_c": float(res.alpha_c),
            "source": f"replica.capacity(outputs={outputs}, problem={problem!r})", "stderr": float(res.stderr)}


def _accuracy_theory(d, solver, kappa, ensemble, accuracy) -> dict:
    """:func:`theory_capacity` at an accuracy threshold (``replica.accuracy_capacity``)."""
    import replica

    if solver_spec(solver).is_hebbian and kappa != 1.0:
        return {"p_c": math.nan, "alpha": math.nan, "alpha_c": math.nan,
                "source": "none (no accuracy theory of the rank-truncated Hebbian memory)"}
    memory = solver_spec(solver).capacity_theory
    res = replica.accuracy_capacity(d, accuracy, memory, ensemble, kappa)
    # d -> infinity: the Hebbian accuracy jumps at alpha = 1/2 (for A < 1), the optimal one at alpha_c(kappa)
    alpha_c = 0.5 if memory == HEBBIAN_THEORY else float(replica.alpha_c(kappa))
    return {"p_c": float(res.p_c), "alpha": float(res.alpha), "alpha_c": alpha_c, "stderr": float(res.stderr),
            "source": f"replica.accuracy_capacity(accuracy={accuracy:g}, memory={memory!r})"}


def asymptotic_alpha(solver: str, kappa: float) -> float:
    """alpha_c(kappa) = F(kappa)/2 (optimal) or F(kappa)/8 (Hebbian): the grid centre without a theory p_c."""
    import replica

    return float(replica.alpha_c_hebbian(kappa) if solver_spec(solver).is_hebbian else replica.alpha_c(kappa))
