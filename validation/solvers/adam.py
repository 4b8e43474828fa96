"""Adam on the softmax cross-entropy over the candidates (baseline, step budget).

The loss of a memory W on an instance is the mean over inputs of the
cross-entropy of the softmax over its candidate scores::

    L(W) = (1/p) sum_mu [ -S[f(mu), mu] + log sum_rho exp(S[rho, mu]) ],
    S[rho, mu] = u^(mu)_rho^T W e_mu,

and ``dL/dW = sum_{rho, mu} G[rho, mu] u^(mu)_rho e_mu^T`` with
``G = (softmax(S) - T) / p`` (softmax over rho in every column, ``T[f(mu), mu] = 1``).
With ``weighted=True`` the factor ``1/p`` is the instance's query frequency ``f_mu``
(the expected cross-entropy of queries drawn with those frequencies).
With one answer per fact there are p candidates and ``f(mu) = mu`` (``T = I``); with
``outputs=K`` (``notes/many_to_one.md``) there are K: in the OP the K shared outputs are
the classes, in the DP the K candidates of every input, and ``f`` is the instance's
target map (``Instance.target_index``).  This is the
protocol of the source paper and of Nichani, Lee & Bietti (2024).  W (kappa = 1)
or the factors Q, R of ``W = Q R^T`` (kappa < 1) are updated by Adam.  OP uses
float32 GEMMs; DP regenerates the candidates every step with the numba kernels
of :mod:`validation.instances._candidate_kernels` in float64 (slow at large d: ``2 p^2 d`` normals per
step).  Recall is checked every ``check_every`` steps on the current scores and
confirmed in float64 before stopping (once every input is recalled, or once the
recall fraction reaches ``stop_accuracy``).  Decoupled (AdamW) weight decay and a
truncated-normal start of W are options.  Cross-entropy cannot certify that an
instance is not storable, so the status is ``stored`` or ``undecided``.
See ``notes/simulation.md`` and, for the protocol of Nichani, Lee & Bietti,
``notes/ce_protocol.md``.
"""

from __future__ import annotations

import time

import numpy as np

from replica.common.checks import check_int, check_real
from replica.common.seeds import resolve_seed

from ..instances import _candidate_kernels as _candidates
from ..instances.ensembles import check_square_instance
from ..measurements.recall import recall_check
from .engine.solution import Solution, assess, rank_for
from .engine.memories import balanced_factors
from .engine.options import AdamOptions

__all__ = ["solve_adam", "AdamOptions"]


def _softmax_gradient(S, target=None, weights=None):
    """``(softmax over axis 0 - T) w_mu`` and the weighted cross-entropy ``sum_mu w_mu CE_mu``.

    ``S`` has shape (n_candidates, p); the target of column ``mu`` is row ``target[mu]``
    (``mu`` when ``target`` is None).  ``weights`` (shape (p,), summing to one) weight the
    columns; ``None`` is ``w_mu = 1/p``, the mean cross-entropy.
    """
    p = S.shape[1]
    shifted = S - S.max(axis=0, keepdims=True)
    expo = np.exp(shifted)
    total = expo.sum(axis=0, keepdims=True)
    cols = np.arange(p)
    rows = cols if target is None else target
    per_input = np.log(total[0]) - shifted[rows, cols]
    G = expo / total
    G[rows, cols] -= 1.0
    if weights is None:
        loss = float(np.mean(per_input))
        G /= p
    else:
        loss = float(np.dot(weights, per_input))
        G *= weights
    return G, loss


class _Scorer:
    """Scores and loss gradients in W for OP (float32 GEMMs) and DP (numba, float64)."""

    def __init__(self, instance, weighted=False):
        self.instance = instance
        self.op = instance.problem == "op"
        dtype = np.float32 if self.op else np.float64
        self.dtype = dtype
        self.inputs = np.ascontiguousarray(instance.inputs, dtype=dtype)
        self.target = None if instance.outputs is None else instance.target_index
        if weighted and instance.weights is None:
            raise ValueError("options weighted=True needs an instance with weights (make_instance(..., weights=))")
        # the loss weights in the dtype of the scores, cast once (not at every step)
        self.weights = np.asarray(instance.weights, dtype=dtype) if weighted else None
        if self.op:
            self.outputs = np.ascontiguousarray(instance.table, dtype=dtype)
        else:
            p = instance.p
            self.S = np.empty((instance.n_candidates, p))
            self.combo = np.empty((p, instance.d))

    def scores(self, Y):
        if self.op:
            return self.outputs @ Y.T
        _candidates.dp_scores_into(self.instance.dp_key, self.instance.candidate_code,
                            np.ascontiguousarray(Y, dtype=np.float64), self.S)
        return self.S

    def weight_gradient(self, G):
        """``sum_{rho,mu} G[rho,mu] u^(mu)_rho e_mu^T`` as a (d, d) array."""
        if self.op:
            return self.outputs.T @ (G @ self.inputs)
        _candidates.dp_combinations_into(self.instance.dp_key, self.instance.candidate_code,
                                  np.ascontiguousarray(G, dtype=np.float64), self.combo)
        return self.combo.T @ self.inputs


_TRUNCATED_STD = 0.87962566103423978
"""Standard deviation of a standard normal truncated to [-2, 2]."""


def _truncated_normal(rng, shape):
    """Standard normals truncated to [-2, 2] (rejection), divided by their std."""
    z = rng.standard_normal(shape)
    while True:
        bad = np.abs(z) > 2.0
        if not bad.any():
            return z / _TRUNCATED_STD
        z[bad] = rng.standard_normal(int(bad.sum()))


def _initial_params(d, rank, dtype, seed, options):
    """Full rank: ``[W]`` (zero or lecun-normal); rank m: ``[Q, R]``, ``N(0, init_scale^2 / d)`` entries."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0xADA]))
    if rank >= d:
        if options.init == "zero":
            return [np.zeros((d, d), dtype=dtype)]
        return [(_truncated_normal(rng, (d, d)) / np.sqrt(d)).astype(dtype)]
    scale = options.init_scale / np.sqrt(d)
    return [scale * rng.standard_normal((d, rank)).astype(dtype) for _ in range(2)]


class _Adam:
    """Adam moments of the parameters and the update rule."""

    def __init__(self, params, options):
        self.params = params
        self.o = options
        self.first = [np.zeros_like(x) for x in params]
        self.second = [np.zeros_like(x) for x in params]

    def W(self):
        ps = self.params
        return ps[0] @ ps[1].T if len(ps) == 2 else ps[0]

    def update(self, step, grad_W):
        o, ps = self.o, self.params
        grads = [grad_W @ ps[1], grad_W.T @ ps[0]] if len(ps) == 2 else [grad_W]
        corr1 = 1.0 - o.beta1**step
        corr2 = 1.0 - o.beta2**step
        for x, g, m, v in zip(ps, grads, self.first, self.second):
            if o.weight_decay > 0.0:
                x -= (o.learning_rate * o.weight_decay) * x  # decoupled, on the old x
            m *= o.beta1
            m += (1.0 - o.beta1) * g
            v *= o.beta2
            v += (1.0 - o.beta2) * (g * g)
            x -= (o.learning_rate / corr1) * m / (np.sqrt(v / corr2) + o.epsilon)


def _train(instance, scorer, adam, max_iter, deadline):
    """Adam steps until ``stop_accuracy`` is reached (verified in float64) or a budget ends.

    Returns ``(reached, steps, loss, timed_out)``; ``steps`` counts the updates taken.
    """
    check_every, stop = adam.o.check_every, adam.o.stop_accuracy
    loss = float("nan")
    for step in range(1, max_iter + 1):
        W = adam.W()
        S = scorer.scores(scorer.inputs @ W.T)
        if (step - 1) % check_every == 0:
            recalled, _ = recall_check(S, scorer.target)
            if recalled.mean() >= stop and assess(instance, np.asarray(W, dtype=np.float64))[1] >= stop:
                return True, step - 1, loss, False  # this step's update was not taken
        if deadline is not None and time.perf_counter() > deadline:
            return False, step - 1, loss, True
        G, loss = _softmax_gradient(S, scorer.target, scorer.weights)
        adam.update(step, scorer.weight_gradient(G.astype(scorer.dtype, copy=False)))
    return False, max_iter, loss, False


def _outcome(p, stop, steps, stored, fraction, early, budget):
    """``(status, message)`` of a finished run from the float64 verdict on its W.

    ``early``: the run stopped at ``fraction >= stop``; ``budget``: the budget that ended it otherwise.
    """
    if stored:
        return "stored", f"Adam stored all {p} inputs after {steps} steps (verified in float64)"
    tail = "cross-entropy training cannot certify that no memory stores the instance"
    if early:
        missed = int(round((1.0 - fraction) * p))
        return "undecided", (f"Adam reached recall {fraction:.4g} >= stop_accuracy {stop:g} after "
                             f"{steps} steps (verified in float64); {missed} of {p} inputs not "
                             f"recalled, so this W does not store the instance; {tail}")
    return "undecided", f"{budget} with recall {fraction:.4g}; {tail}"


def solve_adam(instance, kappa=1.0, *, max_iter=20000, time_limit=None, seed=None,
               options=None) -> Solution:
    """Adam on the softmax cross-entropy, stopping once the recall target is reached.

    Parameters
    ----------
    instance : validation.Instance
    kappa : float
        Rank ratio in (0, 1]; kappa < 1 trains factors Q, R (d x m), ``W = Q R^T``.
    max_iter : int
        Step budget (default 20000).
    time_limit : float or None
        Wall-time budget in seconds (default: none); checked before every step.
    seed : None, int, SeedSequence or Generator
        Seed of the initialisation (factors at kappa < 1, W with
        ``init="lecun_normal"``; ``replica.common.seeds.resolve_seed``).  ``None``
        takes the instance's seed, so that a seeded instance gives one reproducible
        run; the seed used is ``info["seed"]``.
    options : AdamOptions or mapping, optional
        Learning rate, Adam constants, recall-check period, initialisation, early-stop
        accuracy ``stop_accuracy``, decoupled ``weight_decay``
        (:class:`validation.solvers.AdamOptions`).

    Returns
    -------
    Solution
        ``stored``/``converged`` when the returned W recalls every input (verified in
        float64).  Otherwise status ``undecided`` and ``converged`` False: the step
        budget or time limit was used up, or the run stopped early at
        ``recall_fraction >= stop_accuracy`` with some input not recalled (the
        achieved fraction is in ``message`` and ``recall_fraction``); cross-entropy
        gives no certificate of non-storability.  ``info``: final ``loss``,
        ``learning_rate``, ``max_iter``, ``seed``, ``stop_accuracy`` and
        ``stop_accuracy_reached`` (the verified fraction of the returned W reaches it).

    Raises
    ------
    ValueError
        For a rectangular instance (``d_in != d_out``), bad options, max_iter,
        time_limit or seed.

    Notes
    -----
    See ``notes/simulation.md`` (Adam baseline) and ``notes/ce_protocol.md``.
    """
    d = check_square_instance(instance, "solve_adam")
    max_iter = check_int(max_iter, "max_iter", low=1)
    if time_limit is not None:
        time_limit = check_real(time_limit, "time_limit", low=0.0, low_open=True)
    options = AdamOptions.coerce(options)
    seed = instance.seed if seed is None else resolve_seed(seed)

    start = time.perf_counter()
    rank = rank_for(d, kappa)
    scorer = _Scorer(instance, options.weighted)
    adam = _Adam(_initial_params(d, rank, scorer.dtype, seed, options), options)
    deadline = None if time_limit is None else start + time_limit
    early, steps, loss, timed_out = _train(instance, scorer, adam, max_iter, deadline)

    W64 = np.asarray(adam.W(), dtype=np.float64)
    stored, fraction, margin, _ = assess(instance, W64)
    budget = (f"time limit {time_limit:g} s reached after {steps} steps" if timed_out
              else f"step budget {max_iter} exhausted")
    status, message = _outcome(instance.p, options.stop_accuracy, steps, stored, fraction, early, budget)
    params = adam.params
    factors = balanced_factors(W64, rank) if len(params) == 2 else None
    info = {"loss": loss, "learning_rate": options.learning_rate, "max_iter": max_iter, "seed": seed,
            "stop_accuracy": options.stop_accuracy, "weighted": options.weighted,
            "stop_accuracy_reached": bool(fraction >= options.stop_accuracy)}
    return Solution(solver="adam", kappa=float(kappa), rank=rank, W=W64, factors=factors,
                    stored=stored, recall_fraction=fraction, margin=margin, converged=stored,
                    iterations=int(steps), seconds=time.perf_counter() - start, status=status,
                    message=message, info=info)
