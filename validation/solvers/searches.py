"""Two search modes of the ``optimal`` solver: give-up (most facts recalled) and top-k recall.

Both repeat the decision solver of :mod:`validation.solvers.optimal` on the instance
with some constraints ``(mu, rho)`` left out, warm-started from the previous round's
W, and verify the final W in float64 on the *whole* instance with
:mod:`validation.measurements.recall`.  Neither search is convex, so a run that does not store
everything is a lower-bound verdict, status ``not_found``, never the ``not_stored``
certificate.  See ``notes/recall_accuracy.md`` (give-up) and ``notes/top_k.md``.

Give-up (``OptimalOptions(give_up=True)``)
    While some kept input is not recalled, give up the costliest of the kept inputs
    that the round's W does not recall -- cost: the input's squared hinge
    ``sum_rho (1 - m_{mu rho}(W))_+^2`` at the round's squared-hinge minimiser, the
    simulation's analogue of the water-filling cost that the replica theory gives up
    (``notes/recall_accuracy.md``) -- drop all their constraints, re-solve.  Each round
    gives up ``ceil(give_up_fraction * n)`` of the ``n`` unrecalled kept inputs (at
    least one).  It ends when every kept input is recalled: the number of inputs the
    final W recalls (given-up ones recalled by chance included) is a lower bound on
    the largest number any W recalls.

    With query frequencies (``Instance.weights`` set, ``make_instance(weights=)``) the
    search maximises the *recalled mass* ``sum_{mu recalled} f_mu`` instead: it gives up
    the unrecalled kept inputs with the largest cost per unit of frequency,
    ``squared hinge / f_mu``, the analogue of the order ``C_mu / f_mu`` of the knapsack in
    ``notes/zipf.md`` (section 2); the recalled mass of the final W (float64) is a lower
    bound on the largest recalled mass any W reaches.  Without weights the search is
    unchanged.  With ``give_up_readd=r`` an add-back phase follows: up to ``r`` of the
    inputs the final W does not recall (the most frequent first with weights, else the
    smallest squared hinge first) are put back one at a time and re-solved; one stays
    when the round's W recalls it and every kept input, else it is given up again.
    With ``give_up_swaps=s`` up to ``s`` swap attempts follow (:func:`_swap`): one kept
    input out, ``give_up_swap_size`` given-up inputs back, kept when the re-solved W
    recalls every other kept input and more in all (more mass with weights).  With
    ``give_up_restarts=R`` the whole search runs ``R`` more times with log-normally
    perturbed costs (seeded) and the best run is returned.

Top-k (``OptimalOptions(top_k=k)``, ``k >= 2``)
    Input ``mu`` is top-k recalled when fewer than ``k`` competitors score at least
    its target (:func:`validation.measurements.recall.top_k_recalled`).  Exempt the ``k - 1``
    strongest competitors of every input under the current W, solve the rest (a convex
    problem), recompute the exempt sets under the new W, and repeat until the
    restricted problem is stored (then every input is top-k recalled: ``stored``,
    verified in float64), the exempt sets stop changing, or ``max_rounds`` ends.  With
    ``top_k_restarts=R`` a run that does not store is followed by up to ``R`` runs from
    random starts (seeded), until one stores.
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from replica.common.seeds import resolve_seed, restart_stream

from ..instances.ensembles import check_square_instance
from .engine.decision import DecisionRun
from .engine.problem import ConstraintProblem
from .engine.solution import Solution, assess, rank_for
from .engine.start import Unknowns, initial_point

__all__ = ["solve_give_up", "solve_top_k", "top_k_check"]


class _Search:
    """Rounds of the decision solver with left-out constraints; shared by both modes."""

    def __init__(self, instance, kappa, tol, max_iter, time_limit, refine, options):
        self.t_start = time.perf_counter()
        self.instance, self.kappa, self.o = instance, kappa, options
        self.args = {"tol": tol, "max_iter": max_iter, "refine": refine}
        self.deadline = None if time_limit is None else self.t_start + time_limit
        self.prob = ConstraintProblem(instance)  # nothing left out: float64 costs and exempt sets
        self.blocked = np.zeros((instance.p, instance.n_candidates), dtype=bool)
        self.initial = options.initial
        self.rounds = self.iterations = 0
        self.last = None
        self.out_of_budget = False
        self.interrupted = False   # a round ended by Ctrl-C (under ``decision.monitored``)
        self.swap_attempts = 0

    def out_of_time(self):
        """True once the time limit has passed."""
        return self.deadline is not None and time.perf_counter() >= self.deadline

    def fork(self):
        """A new search of the same instance and settings that shares this one's clock and time limit."""
        other = _Search(self.instance, self.kappa, self.args["tol"], self.args["max_iter"], None,
                        self.args["refine"], self.o)
        other.t_start, other.deadline = self.t_start, self.deadline
        return other

    def solve_round(self):
        """One decision solve with the current ``blocked``, warm-started; returns its Solution."""
        remaining = None
        if self.deadline is not None:
            remaining = self.deadline - time.perf_counter()
            if remaining <= 0:
                self.out_of_budget = True
                return None
        options = dataclasses.replace(self.o, give_up=False, top_k=1, top_k_restarts=0, initial=self.initial)
        run = DecisionRun(self.instance, self.kappa, time_limit=remaining, options=options,
                          blocked=self.blocked.copy(), **self.args)
        sol = run.run()
        self.rounds += 1
        self.iterations += sol.iterations
        self.initial = run.final_factors() if sol.factors is not None else sol.W
        self.last = sol
        self.interrupted = sol.message.startswith("interrupted")
        if not sol.converged and sol.status == "undecided":
            self.out_of_budget = True
        return sol

    def margins(self, W):
        """float64 margins (p, n_candidates) of every constraint under W (target: +inf)."""
        Y = self.prob.images(W)
        return self.prob.block_margins(Y, 0, self.prob.p, exact=True)

    def result(self, status, stored, fraction, margin, message, info):
        sol = self.last
        return Solution(
            solver="optimal", kappa=self.kappa, rank=sol.rank, W=sol.W, factors=sol.factors, stored=stored,
            recall_fraction=fraction, margin=margin, converged=status != "undecided",
            iterations=self.iterations, seconds=time.perf_counter() - self.t_start, status=status,
            message=message, info={"rounds": self.rounds, "lower_bound": status != "stored",
                                   "last_round": "restricted problem (left-out constraints dropped): " + sol.message,
                                   **info})


def solve_give_up(instance, kappa, *, tol, max_iter, time_limit, refine, options, seed=None) -> Solution:
    """Give-up mode: the most inputs recalled by rounds of giving up the costliest ones.

    Parameters as :func:`validation.solvers.optimal.solve_optimal` (checked there);
    ``max_iter`` and ``time_limit`` are per round and for the whole search (restarts
    included), ``max_rounds`` per run of the greedy phase.  ``seed`` draws the cost
    perturbations of the restarts (``give_up_restarts``; None: ``DEFAULT_SEED``).

    Returns
    -------
    validation.Solution
        ``stored`` when the W recalls all p inputs (certified by float64 recall);
        ``not_found`` when the search ended with every kept input recalled but not all
        p (``recall_fraction`` is a lower bound on the best accuracy); ``undecided``
        when a budget ended first (the fraction is still that of the returned W).
        ``info``: ``recalled`` (inputs the W recalls), ``given_up``, ``rounds``,
        ``lower_bound`` (True unless stored), ``first_status`` (the decision on all
        inputs: ``not_stored`` there is a certificate that not all p can be stored).
        With ``instance.weights`` set, inputs are given up in decreasing squared hinge
        per unit of frequency, and ``info`` also holds ``weighted`` (True) and
        ``recalled_mass`` (the sum of the weights of the inputs the W recalls, float64
        recall): a lower bound on the best recalled mass, as the message says.  With
        ``give_up_readd > 0``, ``info["readded"]`` counts the inputs the add-back phase
        put back.  ``info["moves"]`` maps each phase (``add_back``, ``swaps``,
        ``restarts``) to the improvements it made, None when it did not run: inputs put
        back and accepted swaps (of the returned run), restarts that beat the best run so far;
        ``info["swap_attempts"]`` and ``info["restart_runs"]`` count the attempts and runs;
        with restarts, ``info["seed"]`` (the integer seed), ``info["run_scores"]`` (the
        count, or mass, of every run, the unperturbed one first: the result of ``R``
        restarts is the first best of the first ``R + 1``) and ``info["run_seconds"]``.
    """
    weights = instance.weights
    search = _Search(instance, kappa, tol, max_iter, time_limit, refine, options)
    run = _give_up_run(search, weights, options, None)
    first = run["first"]
    runs = [(run, time.perf_counter() - search.t_start)]
    if options.give_up_restarts:
        root = resolve_seed(seed)
        runs += _give_up_restarts(search, weights, options, root)
    best, restart_gains = run, 0
    for candidate, _ in runs[1:]:
        if candidate["search"].last is not None and candidate["score"] > best["score"]:
            best, restart_gains = candidate, restart_gains + 1
    searches = [candidate["search"] for candidate, _ in runs]
    run_scores = [candidate["score"] for candidate, _ in runs]
    run_seconds = [seconds for _, seconds in runs]
    search = best["search"]
    search.rounds = sum(s.rounds for s in searches)
    search.iterations = sum(s.iterations for s in searches)
    search.t_start = searches[0].t_start
    kept, readded = best["kept"], best["readded"]
    W = search.last.matrix()
    stored, fraction, margin, recalled = assess(instance, W)
    kept_done = bool(recalled[kept].all())
    status = "stored" if stored else ("not_found" if kept_done else "undecided")
    n_rec = int(recalled.sum())
    message = (f"give-up search: W recalls {n_rec} of {instance.p} inputs (float64) after "
               f"{search.rounds} rounds, {int((~kept).sum())} given up")
    info = {"recalled": n_rec, "given_up": int((~kept).sum()), "first_status": first, "mode": "give_up"}
    back = f", {readded} added back" if options.give_up_readd else ""
    if options.give_up_readd:
        info["readded"] = readded
    more = ""
    if options.give_up_swaps:
        more += f", {best['swaps']} swaps accepted of {best['swap_attempts']} tried"
    if options.give_up_restarts:
        more += f", best of {len(searches)} runs ({restart_gains} restarts improved)"
    back += more
    message += back
    info["moves"] = {"add_back": readded if options.give_up_readd else None,
                     "swaps": best["swaps"] if options.give_up_swaps else None,
                     "restarts": restart_gains if options.give_up_restarts else None}
    info["swap_attempts"] = sum(s.swap_attempts for s in searches)
    info["restart_runs"] = len(searches) - 1
    if options.give_up_restarts:
        info["seed"] = root
        info["run_scores"] = [None if not math.isfinite(v) else v for v in run_scores]
        info["run_seconds"] = run_seconds
    if weights is None:
        if status == "not_found":
            message += "; a lower bound on the most inputs any W recalls (not a certificate)"
        elif status == "undecided":
            message += "; budget ended with kept inputs not recalled (lower bound from the last W)"
        return search.result(status, stored, fraction, margin, message, info)
    mass = math.fsum(weights[recalled].tolist())
    message = (f"weighted give-up search (largest squared hinge per unit of frequency given up first): W "
               f"recalls {n_rec} of {instance.p} inputs, recalled mass {mass:.6g} (float64) after "
               f"{search.rounds} rounds, {int((~kept).sum())} given up{back}")
    if status == "not_found":
        message += "; a lower bound on the best recalled mass any W reaches (not a certificate)"
    elif status == "undecided":
        message += ("; budget ended with kept inputs not recalled (a lower bound on the best recalled mass, "
                    "from the last W)")
    return search.result(status, stored, fraction, margin, message,
                         {**info, "weighted": True, "recalled_mass": mass})


def _give_up_restarts(search, weights, options, root):
    """The restarts of :func:`solve_give_up`: ``[(run, seconds)]`` of up to ``give_up_restarts``
    more runs, run ``r`` with costs perturbed by draws from ``restart_stream(root, r)``, until
    ``search``'s time limit."""
    out = []
    for r in range(options.give_up_restarts):
        if search.out_of_time():
            break
        rng = np.random.default_rng(restart_stream(root, r))
        t_run = time.perf_counter()
        candidate = _give_up_run(search.fork(), weights, options, rng)
        out.append((candidate, time.perf_counter() - t_run))
    return out


def _give_up_run(search, weights, options, rng):
    """One run of the give-up search: greedy rounds, add-back, swaps.

    ``rng`` (restarts): the greedy costs are multiplied by ``exp(give_up_jitter z)``.
    Returns a dict: ``search``, ``kept``, ``first`` (status of the first round),
    ``readded``, ``swaps`` (accepted), ``swap_attempts`` and ``score`` (recalled count, or
    mass with weights, of ``search.last``; -inf without a W).
    """
    instance = search.instance
    kept = np.ones(instance.p, dtype=bool)
    first = None
    while True:
        sol = search.solve_round()
        if sol is None:
            break
        first = first or sol.status
        if sol.status == "stored" or search.out_of_budget or search.rounds >= options.max_rounds:
            break
        M = search.margins(sol.matrix())
        unrecalled = np.flatnonzero(kept & ~(M.min(axis=1) > 0))
        if unrecalled.size == 0:
            break
        cost = np.square(np.maximum(1.0 - M[unrecalled], 0.0)).sum(axis=1)
        if weights is not None:
            cost = cost / weights[unrecalled]  # cost per unit of frequency (notes/zipf.md, section 2)
        if rng is not None:
            cost = cost * np.exp(options.give_up_jitter * rng.standard_normal(unrecalled.size))
        count = max(1, math.ceil(options.give_up_fraction * unrecalled.size))
        drop = unrecalled[np.argsort(-cost, kind="stable")[:count]]
        kept[drop] = False
        search.blocked[drop] = True
    readded = _add_back(search, kept, weights, options.give_up_readd) if options.give_up_readd else 0
    swaps = 0
    if options.give_up_swaps:
        swaps = _swap(search, kept, weights, options.give_up_swaps, options.give_up_swap_size)
    score = -math.inf
    if search.last is not None:
        recalled = search.margins(search.last.matrix()).min(axis=1) > 0
        score = _value(recalled, weights)
    return {"search": search, "kept": kept, "first": first, "readded": readded, "swaps": swaps,
            "swap_attempts": search.swap_attempts, "score": score}


def _value(recalled, weights):
    """What the search maximises: the number of recalled inputs, or their mass with weights."""
    if weights is None:
        return int(recalled.sum())
    return math.fsum(weights[recalled].tolist())


_SWAP_OUT_CANDIDATES = 8  # kept inputs tried per group of given-up ones before the next group


def _swap(search, kept, weights, attempts, size) -> int:
    """The swap phase of the give-up search: returns the number of accepted swaps.

    From ``search.last`` (every kept input recalled): give up one kept input ``k`` and put
    back a group of ``size`` given-up inputs, re-solve warm-started from the best W, and
    accept when the round's W (float64) recalls every other kept input and scores more
    (:func:`_value`); then ``kept`` becomes the inputs that W recalls.  Tried in order:
    ``k`` among the ``_SWAP_OUT_CANDIDATES`` kept inputs with the smallest margin (with
    weights: the least frequent) under the best W, groups of the given-up inputs by
    increasing squared hinge (with weights: per unit of frequency); after an accepted swap
    the order is recomputed.  Ends after ``attempts`` re-solves, when every pair was tried
    at the same W (a local optimum of this move), or when a budget ends.
    """
    if search.last is None or search.out_of_budget:
        return 0
    best, best_initial = search.last, search.initial
    M = search.margins(best.matrix())
    recalled = M.min(axis=1) > 0
    if not recalled[kept].all():
        return 0
    kept |= recalled
    search.blocked[:] = ~kept[:, None]
    score = _value(recalled, weights)
    accepted = trial = 0
    while search.swap_attempts < attempts:
        mins = M.min(axis=1)
        ins, outs = np.flatnonzero(kept), np.flatnonzero(~kept)
        if ins.size == 0 or outs.size == 0:
            break
        cost = np.square(np.maximum(1.0 - M[outs], 0.0)).sum(axis=1)
        if weights is None:
            out_order = outs[np.argsort(cost, kind="stable")]
            in_order = ins[np.argsort(mins[ins], kind="stable")]
        else:
            out_order = outs[np.argsort(cost / weights[outs], kind="stable")]
            in_order = ins[np.argsort(weights[ins], kind="stable")]
        n_in = min(ins.size, _SWAP_OUT_CANDIDATES)
        if trial >= n_in * math.ceil(outs.size / size):
            break  # every pair tried at this W
        k = in_order[trial % n_in]
        group = out_order[(trial // n_in) * size:(trial // n_in + 1) * size]
        trial += 1
        search.blocked[k] = True
        search.blocked[group] = False
        search.initial = best_initial
        search.swap_attempts += 1
        sol = search.solve_round()
        if sol is not None:
            M_new = search.margins(sol.matrix())
            now = M_new.min(axis=1) > 0
            others = kept.copy()
            others[k] = False
            if now[others].all() and _value(now, weights) > score:
                kept[:] = now
                search.blocked[:] = ~kept[:, None]
                best, best_initial, M, score = sol, search.initial, M_new, _value(now, weights)
                accepted += 1
                trial = 0
                if search.out_of_budget:
                    break
                continue
        search.blocked[:] = ~kept[:, None]
        if sol is None or search.out_of_budget:
            break
    search.last, search.initial = best, best_initial
    search.out_of_budget = False
    return accepted


def _add_back(search, kept, weights, limit) -> int:
    """The add-back phase of the give-up search: returns the number of inputs put back for good.

    Starts from ``search.last`` (every kept input recalled); ``kept`` and
    ``search.blocked`` are updated in place, and ``search.last`` is left at the W of
    the last successful round.
    """
    if search.last is None or search.out_of_budget:
        return 0
    best, best_initial = search.last, search.initial
    M = search.margins(best.matrix())
    recalled = M.min(axis=1) > 0
    if not recalled[kept].all():
        return 0
    kept |= recalled  # given up but recalled by this W: their constraints hold, keep them
    search.blocked[recalled] = False
    out = np.flatnonzero(~recalled)
    if weights is not None:
        order = out[np.argsort(-weights[out], kind="stable")]
    else:
        cost = np.square(np.maximum(1.0 - M[out], 0.0)).sum(axis=1)
        order = out[np.argsort(cost, kind="stable")]
    added = 0
    for mu in order[:limit]:
        if kept[mu]:
            continue  # recalled by chance after an earlier add-back
        search.blocked[mu] = False
        sol = search.solve_round()
        if sol is None:
            search.blocked[mu] = True
            break
        M = search.margins(sol.matrix())
        now = M.min(axis=1) > 0
        if now[kept].all() and now[mu]:
            kept |= now
            search.blocked[now] = False
            best, best_initial = sol, search.initial
            added += 1
        else:
            search.blocked[mu] = True
        if search.out_of_budget:
            break
    search.last, search.initial = best, best_initial
    search.out_of_budget = False
    return added


def top_k_check(instance, W, top_k):
    """float64 top-k recall of every input of ``instance`` under W (ties fail).

    Returns
    -------
    ndarray of bool (p,)
        :func:`validation.measurements.recall.top_k_recalled` of the instance's score matrix.
    """
    from validation.measurements.recall import top_k_recalled

    targets = None if instance.outputs is None else instance.target_index
    return top_k_recalled(instance.scores(np.asarray(W, dtype=np.float64)), top_k, targets)


def _strongest(M, count):
    """Per row, the columns of the ``count`` smallest margins (the strongest competitors), sorted."""
    part = np.argpartition(M, count - 1, axis=1)[:, :count]
    return np.sort(part, axis=1)


def _top_k_run(search, k, W0):
    """One top-k search from ``W0``: alternate exempt sets and restricted solves.

    Returns ``changed``: exempt entries changed in the last round (None if there was one round).
    """
    exempt = _strongest(search.margins(W0), k - 1)
    rows = np.arange(search.instance.p)[:, None]
    changed = None
    while True:
        search.blocked[:] = False
        search.blocked[rows, exempt] = True
        sol = search.solve_round()
        if sol is None or sol.status == "stored" or search.out_of_budget:
            return changed
        new = _strongest(search.margins(sol.matrix()), k - 1)
        changed = int((new != exempt).sum())
        exempt = new
        if changed == 0 or search.rounds >= search.o.max_rounds:
            return changed


def solve_top_k(instance, kappa, *, tol, max_iter, time_limit, refine, options, seed=None) -> Solution:
    """Top-k mode: store every input in the top ``options.top_k`` (``k >= 2``).

    Parameters as :func:`validation.solvers.optimal.solve_optimal`; ``top_k`` must be
    below the number of candidates (checked there).  Without restarts the search is
    deterministic and ``seed`` plays no part; with ``top_k_restarts=R`` a search that does
    not store runs again, up to ``R`` times, from random starts: restart ``r`` starts from
    ``W`` with standard normal entries drawn from
    ``replica.common.seeds.restart_stream(seed, r)`` (None: ``DEFAULT_SEED``; a stream
    apart from the instance's own), and the first run that stores is returned.  When none
    stores, the run whose W puts the most inputs in the top k is returned (the first of
    equals).  The time limit covers all runs; when it ends the restarts, the first run's
    verdict stands.

    Returns
    -------
    validation.Solution
        ``stored`` when every input is top-k recalled (float64, certified);
        ``not_found`` when the exempt sets stopped changing (or ``max_rounds`` ended)
        without it: a lower-bound verdict, not a certificate; ``undecided`` when the
        time or iteration budget ended a round of the first run (a Ctrl-C under
        :func:`validation.solvers.engine.decision.monitored` too; the message then starts with
        ``interrupted``).  ``recall_fraction`` is the top-k
        recall fraction of the W, ``margin`` its plain (top-1) normalised margin;
        ``info``: ``top_k``, ``top_k_recalled`` (count), ``top1_fraction``, ``rounds``,
        ``exempt_changed`` (exempt entries changed in the last round), ``lower_bound``,
        ``restart_runs`` (restarts run) and ``stored_by`` (None, or the run that stored:
        0 for the first, ``r + 1`` for restart ``r``); with restarts also
        ``restarts_cut_short`` (the time limit or a Ctrl-C ended them early) and ``seed``
        (the integer seed).

    Raises
    ------
    ValueError
        For a rectangular instance (``d_in != d_out``).
    """
    d = check_square_instance(instance, "solve_top_k")
    k = options.top_k
    search = _Search(instance, kappa, tol, max_iter, time_limit, refine, options)
    params = Unknowns(d, rank_for(d, kappa))
    changed = _top_k_run(search, k, params.W(initial_point(search.prob, params, options.initial)))
    runs, cut_short, root = [_top_k_result(search, k, changed)], False, None
    if options.top_k_restarts and not runs[0][2].all() and not search.out_of_budget:
        root = resolve_seed(seed)
        cut_short = _top_k_restarts(search, k, params, root, runs)
    # the run that stored, else the one whose W puts the most inputs in the top k (the first of equals)
    counts = [int(ok.sum()) for _, _, ok in runs]
    best, changed, ok = runs[counts.index(max(counts))]
    searches = [s for s, _, _ in runs]
    best.rounds = sum(s.rounds for s in searches)
    best.iterations = sum(s.iterations for s in searches)
    best.t_start = search.t_start
    interrupted = any(s.interrupted for s in searches)
    _, top1, margin, _ = assess(instance, best.last.matrix())
    n_ok = int(ok.sum())
    if ok.all():
        status = "stored"
    else:
        # the first run ran to its end unless it was out of budget; restarts cut short by the
        # budget leave its not_found (a lower bound) standing
        status = "undecided" if search.out_of_budget else "not_found"
    message = (f"top-{k} search: W puts the target of {n_ok} of {instance.p} inputs in the top {k} "
               f"(float64) after {best.rounds} rounds")
    if options.top_k_restarts:
        message += f" in {len(runs)} runs"
        if cut_short:
            message += f" (the budget ended the restarts after {len(runs) - 1} of {options.top_k_restarts})"
    if status == "not_found":
        message += ("; exempt sets " + ("stopped changing" if changed == 0 else "still changing at max_rounds")
                    + ": no W found, a lower-bound verdict (not a certificate)")
    elif status == "undecided":
        message += "; budget ended"
    if interrupted:
        message = "interrupted (Ctrl-C); " + message
    stored_by = searches.index(best) if status == "stored" else None
    info = {"top_k": k, "top_k_recalled": n_ok, "top1_fraction": top1, "exempt_changed": changed,
            "mode": "top_k", "restart_runs": len(runs) - 1, "stored_by": stored_by}
    if options.top_k_restarts:
        info.update(restarts_cut_short=cut_short, seed=root)
    return best.result(status, bool(ok.all()), float(ok.mean()), margin, message, info)


def _top_k_result(search, k, changed):
    """``(search, changed, ok)``: a finished top-k run with the float64 top-k check of its W."""
    return search, changed, top_k_check(search.instance, search.last.matrix(), k)


def _top_k_restarts(search, k, params, root, runs):
    """The restarts of :func:`solve_top_k` after ``search`` did not store, appended to ``runs``
    (as :func:`_top_k_result`); returns ``cut_short``.

    Restart ``r`` starts from standard normal W drawn from ``restart_stream(root, r)``.  It
    stops at the first run that stores; ``cut_short`` is True when the time limit or a
    Ctrl-C ended the restarts first.  A restart whose round hit ``max_iter`` is kept and the
    next one runs (``max_iter`` is per round).  Runs without any round are left out.
    """
    d = search.instance.d
    for r in range(search.o.top_k_restarts):
        if search.out_of_time():
            return True
        other = search.fork()
        other.initial = np.random.default_rng(restart_stream(root, r)).standard_normal((d, d))  # rank m if kappa < 1
        changed = _top_k_run(other, k, params.W(initial_point(other.prob, params, other.initial)))
        if other.last is None:
            return True
        runs.append(_top_k_result(other, k, changed))
        if runs[-1][2].all():
            return False
        if other.interrupted or (other.out_of_budget and other.out_of_time()):
            return True
    return False
