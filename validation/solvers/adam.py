"""Adam on the softmax cross-entropy over the p candidates (baseline, step budget).

The loss of a memory W on an instance is the mean over inputs of the
cross-entropy of the softmax over its p candidate scores::

    L(W) = (1/p) sum_mu [ -S[mu, mu] + log sum_rho exp(S[rho, mu]) ],
    S[rho, mu] = u^(mu)_rho^T W e_mu,

and ``dL/dW = sum_{rho, mu} G[rho, mu] u^(mu)_rho e_mu^T`` with
``G = (softmax(S) - I) / p`` (softmax over rho in every column).  This is the
protocol of the source paper and of Nichani, Lee & Bietti (2024).  W (kappa = 1)
or the factors Q, R of ``W = Q R^T`` (kappa < 1) are updated by Adam.  OP uses
float32 GEMMs; DP regenerates the candidates every step with the numba kernels
of :mod:`validation._rng` in float64 (slow at large d: ``2 p^2 d`` normals per
step).  Recall is checked every ``check_every`` steps on the current scores and
confirmed in float64 before stopping.  Cross-entropy cannot certify that an
instance is not storable, so the status is ``stored`` or ``undecided``.
See ``notes/simulation.md``.
"""

from __future__ import annotations

import time

import numpy as np

from replica.common.checks import check_int, check_real

from .. import _rng
from ..recall import recall_check
from . import Solution, assess, rank_for

__all__ = ["solve_adam", "cross_entropy"]


def _softmax_gradient(S):
    """``(softmax over axis 0 - I) / p`` and the mean cross-entropy."""
    p = S.shape[1]
    shifted = S - S.max(axis=0, keepdims=True)
    expo = np.exp(shifted)
    total = expo.sum(axis=0, keepdims=True)
    diag = np.arange(p)
    loss = float(np.mean(np.log(total[0]) - shifted[diag, diag]))
    G = expo / total
    G[diag, diag] -= 1.0
    G /= p
    return G, loss


def cross_entropy(instance, W) -> float:
    """Mean softmax cross-entropy of the targets under memory ``W`` (float64).

    Parameters
    ----------
    instance : validation.Instance
    W : array_like (d, d)

    Returns
    -------
    float
    """
    _, loss = _softmax_gradient(instance.scores(W))
    return loss


class _Scorer:
    """Scores and loss gradients in W for OP (float32 GEMMs) and DP (numba, float64)."""

    def __init__(self, instance):
        self.instance = instance
        self.op = instance.problem == "op"
        dtype = np.float32 if self.op else np.float64
        self.dtype = dtype
        self.inputs = np.ascontiguousarray(instance.inputs, dtype=dtype)
        if self.op:
            self.outputs = np.ascontiguousarray(instance.targets, dtype=dtype)
        else:
            p = instance.p
            self.S = np.empty((p, p))
            self.combo = np.empty((p, instance.d))

    def scores(self, Y):
        if self.op:
            return self.outputs @ Y.T
        _rng.dp_scores_into(self.instance.dp_key, self.instance.ensemble_code,
                            np.ascontiguousarray(Y, dtype=np.float64), self.S)
        return self.S

    def weight_gradient(self, G):
        """``sum_{rho,mu} G[rho,mu] u^(mu)_rho e_mu^T`` as a (d, d) array."""
        if self.op:
            return self.outputs.T @ (G @ self.inputs)
        _rng.dp_combinations_into(self.instance.dp_key, self.instance.ensemble_code,
                                  np.ascontiguousarray(G, dtype=np.float64), self.combo)
        return self.combo.T @ self.inputs


def solve_adam(instance, kappa=1.0, *, steps=20000, learning_rate=0.1, check_every=10,
               beta1=0.9, beta2=0.999, epsilon=1e-8, init_scale=0.1, seed=None) -> Solution:
    """Adam on the softmax cross-entropy, stopping as soon as every input is recalled.

    Parameters
    ----------
    instance : validation.Instance
    kappa : float
        Rank ratio in (0, 1]; kappa < 1 trains factors Q, R (d x m), ``W = Q R^T``.
    steps : int
        Step budget (default 20000).
    learning_rate : float
        Adam step size (default 0.1; W entries of order 1 are reached in tens of steps).
    check_every : int
        Recall is checked every this many steps (default 10).
    beta1, beta2, epsilon : float
        Adam constants (defaults 0.9, 0.999, 1e-8).
    init_scale : float
        Factor initialisation: entries ``N(0, init_scale^2 / d)`` (default 0.1).
        Full-rank W starts at 0 (the loss is convex in W).
    seed : int, optional
        Seed of the factor initialisation (default: the instance's seed).

    Returns
    -------
    Solution
        ``stored``/``converged`` once all inputs are recalled (verified in
        float64); otherwise status ``undecided`` (budget exhausted: cross-entropy
        gives no certificate of non-storability).  ``info``: final ``loss``.

    Raises
    ------
    ValueError
        For bad options.

    Notes
    -----
    See ``notes/simulation.md`` (Adam baseline).
    """
    steps = check_int(steps, "steps", low=1)
    learning_rate = check_real(learning_rate, "learning_rate", low=0.0, low_open=True)
    check_every = check_int(check_every, "check_every", low=1)
    beta1 = check_real(beta1, "beta1", low=0.0, high=1.0, high_open=True)
    beta2 = check_real(beta2, "beta2", low=0.0, high=1.0, high_open=True)
    epsilon = check_real(epsilon, "epsilon", low=0.0, low_open=True)
    init_scale = check_real(init_scale, "init_scale", low=0.0, low_open=True)
    seed = instance.seed if seed is None else check_int(seed, "seed", low=0)

    start = time.perf_counter()
    d = instance.d
    rank = rank_for(d, kappa)
    factored = rank < d
    scorer = _Scorer(instance)
    dtype = scorer.dtype
    if factored:
        rng = np.random.default_rng(np.random.SeedSequence([seed, 0xADA]))
        params = [(init_scale / np.sqrt(d)) * rng.standard_normal((d, rank)).astype(dtype)
                  for _ in range(2)]
    else:
        params = [np.zeros((d, d), dtype=dtype)]
    first = [np.zeros_like(x) for x in params]
    second = [np.zeros_like(x) for x in params]

    def current_W(ps):
        return ps[0] @ ps[1].T if factored else ps[0]

    stored = False
    loss = float("nan")
    step = 0
    for step in range(1, steps + 1):
        W = current_W(params)
        Y = scorer.inputs @ W.T
        S = scorer.scores(Y)
        if (step - 1) % check_every == 0:
            recalled, _ = recall_check(S)
            if recalled.all():
                ok, _, _, _ = assess(instance, np.asarray(W, dtype=np.float64))
                if ok:
                    stored = True
                    step -= 1  # this step's update was not taken
                    break
        G, loss = _softmax_gradient(S)
        grad_W = scorer.weight_gradient(G.astype(dtype, copy=False))
        grads = [grad_W @ params[1], grad_W.T @ params[0]] if factored else [grad_W]
        corr1 = 1.0 - beta1**step
        corr2 = 1.0 - beta2**step
        for x, g, m, v in zip(params, grads, first, second):
            m *= beta1
            m += (1.0 - beta1) * g
            v *= beta2
            v += (1.0 - beta2) * (g * g)
            x -= (learning_rate / corr1) * m / (np.sqrt(v / corr2) + epsilon)
    else:
        step = steps

    W64 = np.asarray(current_W(params), dtype=np.float64)
    ok, fraction, margin, _ = assess(instance, W64)
    stored = stored or ok
    factors = (np.asarray(params[0], np.float64), np.asarray(params[1], np.float64)) if factored else None
    seconds = time.perf_counter() - start
    if stored:
        status = "stored"
        message = f"Adam stored all {instance.p} inputs after {step} steps (verified in float64)"
    else:
        status = "undecided"
        message = (f"step budget {steps} exhausted with recall {fraction:.4g}; cross-entropy training "
                   f"cannot certify that no memory stores the instance")
    return Solution(solver="adam", kappa=float(kappa), rank=rank, W=W64, factors=factors,
                    stored=stored, recall_fraction=fraction, margin=margin, converged=stored,
                    iterations=int(step), seconds=seconds, status=status, message=message,
                    info={"loss": loss, "learning_rate": learning_rate, "steps": steps})
