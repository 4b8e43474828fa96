"""The spectrum at capacity at finite d: the finite load ratio p/d against the measured rank-m spectra.

The rank-m memories at capacity of ``rank_spectra_at_capacity.py`` put mass just below the
truncation point s_kappa of ``replica.spectrum(0.5)``, where the d -> infinity law has none.
``notes/spectra.md`` (section 7) derives the finite-size law behind it: the optimal memory
is its dual sum of p rank-one pushes whose squared sizes are the water-filling costs of the
blocks, and at the ratios p/d of a simulation the spectrum of that sum is wider than the
quarter circle; its top-m truncation, normalised by its own Frobenius norm, has its
smallest values below s_kappa.  ``replica.asymptotic.finite_size_spectra.finite_ratio_spectrum``
computes that law at the measured d and p with no fitted constant.  This script

* **measures** (data ``finite_size_spectra.json``) on every stored instance of
  ``rank_spectra_at_capacity.json`` (same seeds: ``make_instance(d, p, problem,
  seed=SeedSequence([1, code, d, t]))``) the full-rank decision W
  (``solve(inst, "optimal", kappa=1.0, refine=False)``, the first phase of the rank-m search,
  whose top-m SVD is the start that stored every one of those instances) and the certified
  full-rank max-margin W (``solve_max_margin(inst, W_dec, tol=0.02)``), all d singular values
  of each; and, at d = 256 (DP, the theory's p_c), the same two memories and the rank-m
  search with one start (``restarts=1, refine=False``) on the first ``LARGE_RANK_TRIALS`` of
  them (its cost and outcome), on the first ``--large-trials`` instances, as long as
  ``--max-seconds`` allows;
* **renders** (block ``finite_size_spectra`` of ``README.md`` and ``finite_size_spectra.png``)
  the prediction against every measured memory: the mass below s_kappa with a 95 % basic
  bootstrap interval over memories and the KS distance to ``replica.spectrum(0.5)`` (the
  intervals of ``rank_spectra_at_capacity.summarise``), the model's expected mass and its KS
  for the same number of pooled memories; the top-m truncations of the full-rank memories
  (the object the model describes directly) and the paired difference between each rank-m
  memory and the top-m truncation of its own full-rank start.

Usage::

    python -m experiments.spectra.finite_size_spectra --resume [--max-seconds S] [--large-trials N]
    python -m experiments.spectra.finite_size_spectra --render
"""

from __future__ import annotations

import json
import pathlib
import sys
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import replica  # noqa: E402
from replica.asymptotic.finite_size_spectra import finite_ratio_spectrum, pooled_ks  # noqa: E402
from replica.asymptotic.spectra import normalized_singular_values  # noqa: E402
from experiments.pages import demote_headings, write_block  # noqa: E402
from experiments.provenance import read_record, write_record  # noqa: E402
from experiments.runner import run  # noqa: E402
from experiments.spectra import rank_spectra_at_capacity as capacity  # noqa: E402

SEED = 2                 # the model's costs and directions, the bootstrap
INSTANCE_SEED = capacity.SEED
KAPPA = capacity.KAPPA
CODE = capacity.CODE
LARGE = ("dp", 256)      # the size beyond the rank-m measurements: p = the theory's p_c
LARGE_TRIALS = 3         # instances at the large d (the two full-rank memories)
LARGE_RANK_TRIALS = 1    # of which the first also run the rank-m search (its cost and outcome)
BOOTSTRAP = 1000
MODEL_MEMORIES = {32: 400, 64: 300, 128: 200, 256: 100}
HERE = pathlib.Path(__file__).resolve().parent
PAGE = HERE / "README.md"
DATA = HERE / "finite_size_spectra.json"
PROVENANCE = HERE / "finite_size_spectra.provenance.json"
FIGURE = HERE / "finite_size_spectra.png"
RANK_DATA = HERE / "rank_spectra.json"
NAME = "finite_size_spectra"
COMMAND = "python -m experiments.spectra.finite_size_spectra"
LAW = replica.spectrum(KAPPA)
S_KAPPA = float(LAW.support()[0])


# --------------------------------------------------------------------------------------
# measurement
# --------------------------------------------------------------------------------------
def _instance(problem, d, p, t):
    from validation import make_instance

    return make_instance(d, p, problem, seed=np.random.SeedSequence([INSTANCE_SEED, CODE[problem], d, t]))


def full_rank_memories(problem, d, p, t, inst=None) -> dict:
    """The full-rank decision W and the certified full-rank max-margin W of one instance: all d singular values."""
    from validation import solve
    from validation.solvers.maxmargin import solve_max_margin

    inst = _instance(problem, d, p, t) if inst is None else inst
    t0 = time.perf_counter()
    dec = solve(inst, "optimal", kappa=1.0, refine=False)
    row = {"problem": problem, "d": d, "p": p, "trial": t, "status_decision": dec.status,
           "seconds_decision": time.perf_counter() - t0}
    if not dec.stored:
        return row
    t1 = time.perf_counter()
    best = solve_max_margin(inst, dec.W, tol=0.02, seed=np.random.SeedSequence([SEED, CODE[problem], d, t]))
    row.update(margin_decision=float(dec.margin), sv_decision=np.linalg.svd(dec.W, compute_uv=False).tolist(),
               status_max_margin=best.status, margin_max_margin=float(best.margin),
               margin_bound=float(best.margin_bound), gap=None if best.gap is None else float(best.gap),
               sv_max_margin=np.linalg.svd(best.W, compute_uv=False).tolist(),
               seconds_max_margin=time.perf_counter() - t1)
    return row


def large_trial(t) -> dict:
    """One instance at the large d: the two full-rank memories and, for t < LARGE_RANK_TRIALS, the rank-m search."""
    from validation import solve

    problem, d = LARGE
    p = int(round(replica.capacity(d, kappa=KAPPA).p_c))
    inst = _instance(problem, d, p, t)
    row = full_rank_memories(problem, d, p, t, inst)
    if t >= LARGE_RANK_TRIALS:
        return row
    t0 = time.perf_counter()
    rank = solve(inst, "optimal", kappa=KAPPA, restarts=1, refine=False,
                 seed=np.random.SeedSequence([INSTANCE_SEED, CODE[problem], d, t, 1]))
    starts = rank.info.get("starts", [])
    row.update(status_rank=rank.status, seconds_rank=time.perf_counter() - t0,
               rank_starts=[{k: st.get(k) for k in ("kind", "outcome", "iterations", "recall_fraction", "seconds")}
                            for st in starts])
    if rank.stored:
        row.update(margin_rank=float(rank.margin), sv_rank=np.linalg.svd(rank.W, compute_uv=False).tolist())
    return row


def _save(data, seconds, complete):
    DATA.write_text(json.dumps(data, indent=0) + "\n")
    write_record(PROVENANCE, command=COMMAND, seed=SEED, seconds=seconds, complete=complete, threads=1)


def _stored_trials(cap):
    return [(r["problem"], r["d"], r["p"], r["trial"]) for r in cap["rows"] if r["status"] == "stored"]


def measure(resume, max_seconds, large_trials) -> None:
    from validation.solvers import set_threads

    set_threads(1)
    old = json.loads(DATA.read_text()) if resume and DATA.exists() else {}
    data = {"seed": SEED, "instance_seed": INSTANCE_SEED, "kappa": KAPPA,
            "full_rank": old.get("full_rank", []), "large": old.get("large", [])}
    spent = float(read_record(PROVENANCE)["wall_time_s"]) if resume and PROVENANCE.exists() else 0.0
    start = time.perf_counter()
    complete = True

    def out_of_time():
        return max_seconds is not None and time.perf_counter() - start > max_seconds

    done = {(r["problem"], r["d"], r["trial"]) for r in data["full_rank"]}
    jobs = [(lambda a=a: full_rank_memories(*a), "full_rank", a) for a in _stored_trials(json.loads(
        capacity.DATA.read_text())) if (a[0], a[1], a[3]) not in done]
    done_large = {r["trial"] for r in data["large"]}
    jobs += [(lambda t=t: large_trial(t), "large", t) for t in range(large_trials) if t not in done_large]
    for job, key, _label in jobs:
        if out_of_time():
            complete = False
            break
        row = job()
        data[key].append(row)
        print(key, {k: v for k, v in row.items() if not k.startswith("sv_")}, flush=True)
        _save(data, spent + time.perf_counter() - start, complete=False)
    _save(data, spent + time.perf_counter() - start, complete=complete)


# --------------------------------------------------------------------------------------
# analysis
# --------------------------------------------------------------------------------------
def top_m(singular_values) -> np.ndarray:
    """The m = d / 2 normalised values of the top-m truncation of a memory (given all d singular values)."""
    s = np.sort(np.asarray(singular_values, dtype=float))[::-1].copy()
    s[len(s) // 2:] = 0.0
    return normalized_singular_values(s, KAPPA)


def fourth_moment(singular_values) -> float:
    """Fourth moment of all d singular values in units of ``||W||_F / sqrt(d)`` (the quarter circle has 2)."""
    return float(np.mean(normalized_singular_values(np.asarray(singular_values, dtype=float), 1.0) ** 4))


def _rng(*key):
    return np.random.default_rng(np.random.SeedSequence([SEED, 7, *key]))


def basic(estimate, resamples):
    low, high = capacity.basic_interval(estimate, resamples)
    return max(low, 0.0), high


def measured_stats(spectra, key) -> dict:
    """Mass below s_kappa and KS of pooled memories, each with a 95 % basic bootstrap interval over memories."""
    spectra = [np.asarray(s) for s in spectra]
    rng = _rng(*key)
    n = len(spectra)
    law = [np.asarray(LAW.cdf(s)) for s in spectra]
    below = [np.mean(s < S_KAPPA) for s in spectra]
    est_b = float(np.mean(np.concatenate(spectra) < S_KAPPA))
    est_k = pooled_ks(np.concatenate(law))
    boot_b, boot_k = np.empty(BOOTSTRAP), np.empty(BOOTSTRAP)
    for b in range(BOOTSTRAP):
        pick = rng.integers(0, n, n)
        boot_b[b] = np.mean([below[i] for i in pick])
        boot_k[b] = pooled_ks(np.concatenate([law[i] for i in pick]))
    return {"n": n, "below": est_b, "below_ci": basic(est_b, boot_b), "ks": est_k, "ks_ci": basic(est_k, boot_k),
            "smallest": float(np.mean([s[-1] for s in spectra])), "boot_below": boot_b}


_MODELS: dict = {}


def model(d, p, margin=0.0, memories=None):
    """``finite_ratio_spectrum`` at (d, p) with ``memories`` rows of water-filling costs at ``margin`` (cached)."""
    from replica.optimal import sample_optimal_scores

    memories = memories or MODEL_MEMORIES[d]
    key = (d, p, round(margin, 6), memories)
    if key not in _MODELS:
        costs = sample_optimal_scores(p, margin, size=memories * p, seed=np.random.SeedSequence([SEED, d, p])).cost
        _MODELS[key] = finite_ratio_spectrum(d, costs.reshape(memories, p), KAPPA,
                                             seed=np.random.SeedSequence([SEED, d, p, 1]))
    return _MODELS[key]


def predicted(spec, n) -> dict:
    """The model's expected mass below s_kappa and the law of the KS of n pooled memories."""
    ks = spec.ks_distances(n, seed=SEED)
    fractions = spec.below_fractions(n, seed=SEED)
    return {"below": spec.below, "below_se": spec.below_stderr, "below_range": tuple(np.quantile(fractions, [.025, .975])),
            "ks": float(ks.mean()), "ks_range": tuple(np.quantile(ks, [.025, .975]))}


def checks(value, interval, expected, model_range) -> tuple[str, str, str]:
    """(model's expectation inside the measured interval, measured value inside the model's range for n, verdict).

    The first is the test of the bootstrap interval; with few memories whose counts below
    s_kappa are small integers a bootstrap interval is too narrow (it has zero width when
    every memory has the same count), so the second, the model's own 95 % range of the
    statistic pooled over as many memories, is reported beside it.  Verdict: *agrees* when
    both hold, *off* when neither does, *borderline* otherwise.
    """
    inside = interval[0] <= expected <= interval[1]
    within = model_range[0] <= value <= model_range[1]
    return ("yes" if inside else "no", "yes" if within else "no",
            "agrees" if inside and within else "off" if not (inside or within) else "borderline")


def below_checks(row):
    got, pred = row["measured"], row["predicted"]
    return checks(got["below"], got["below_ci"], pred["below"], pred["below_range"])


def ks_checks(row):
    got, pred = row["measured"], row["predicted"]
    return checks(got["ks"], got["ks_ci"], pred["ks"], pred["ks_range"])

# rendering
# --------------------------------------------------------------------------------------
def _iv(x, interval, fmt=".3f"):
    return f"{x:{fmt}} [{interval[0]:{fmt}}, {interval[1]:{fmt}}]"


def rank_m_rows(cap) -> list[dict]:
    """Rank-m memories at capacity (``rank_spectra_at_capacity.json``): measured against the model at margin 0."""
    out = []
    for i, s in enumerate(capacity.summarise(cap, reference=False)):
        stored = [r for r in cap["rows"] if r["problem"] == s["problem"] and r["d"] == s["d"]
                  and r["status"] == "stored" and "sv_refined" in r]
        if not stored:
            continue
        pred = predicted(model(s["d"], s["p"]), len(stored))
        for j, memory in enumerate(capacity.MEMORIES):
            got = measured_stats([capacity.normalised(r, memory) for r in stored], (i, j))
            got.update(ks=s[memory]["ks"], ks_ci=(s[memory]["ks_low"], s[memory]["ks_high"]))
            out.append({"problem": s["problem"], "d": s["d"], "p": s["p"], "memory": memory, "measured": got,
                        "predicted": pred, "values": [capacity.normalised(r, memory) for r in stored]})
    return out


def full_rank_rows(fr, rank_data) -> list[dict]:
    """Top-m truncations of the full-rank memories: this run's (at the capacity loads) and (d) of ``rank_spectra.json``."""
    groups: dict = {}
    for r in fr["full_rank"] + fr["large"]:
        if "sv_max_margin" in r:
            groups.setdefault((r["problem"], r["d"], r["p"]), []).append(r)
    out = []
    for k, ((problem, d, p), rows) in enumerate(sorted(groups.items(), key=lambda x: (x[0][1], x[0][0]))):
        margin = float(np.mean([r["margin_max_margin"] for r in rows]))
        for j, (memory, label, m) in enumerate((("sv_max_margin", "max-margin", margin), ("sv_decision", "decision", 0.0))):
            got = measured_stats([top_m(r[memory]) for r in rows], (100 + k, j))
            spec = model(d, p, m)
            got["m4"] = float(np.mean([fourth_moment(r[memory]) for r in rows]))
            out.append({"problem": problem, "d": d, "p": p, "memory": label, "margin": m, "measured": got,
                        "predicted": predicted(spec, len(rows)), "fourth_moment": spec.fourth_moment,
                        "model_smallest": float(spec.values[:, -1].mean()), "source": "capacity load",
                        "values": [top_m(r[memory]) for r in rows]})
    for k, (problem, d) in enumerate(sorted({(r["problem"], r["d"]) for r in rank_data["rows"] if "sv_d" in r},
                                            key=lambda x: (x[1], x[0]))):
        rows = [r for r in rank_data["rows"] if r["problem"] == problem and r["d"] == d and "sv_d" in r]
        p = rows[0]["p"]
        margin = float(np.mean([r["full_rank_margin"] for r in rows]))
        got = measured_stats([normalized_singular_values(np.asarray(r["sv_d"]), KAPPA) for r in rows], (200 + k,))
        spec = model(d, p, margin)
        out.append({"problem": problem, "d": d, "p": p, "memory": "max-margin", "margin": margin, "measured": got,
                    "predicted": predicted(spec, len(rows)), "fourth_moment": spec.fourth_moment,
                    "model_smallest": float(spec.values[:, -1].mean()), "source": "0.95 p_c (rank_spectra.json)"})
    return out


def paired_rows(cap, fr) -> list[dict]:
    """Each rank-m memory against the top-m truncation of its own full-rank decision W (same instance)."""
    start = {(r["problem"], r["d"], r["trial"]): r for r in fr["full_rank"] if "sv_decision" in r}
    groups: dict = {}
    for r in cap["rows"]:
        key = (r["problem"], r["d"], r["trial"])
        if r["status"] == "stored" and "sv_refined" in r and key in start:
            groups.setdefault(key[:2], []).append((r, start[key]))
    for r in fr["large"]:
        if "sv_rank" in r:
            groups.setdefault((r["problem"], r["d"]), []).append(({"sv_decision": r["sv_rank"]}, r))
    out = []
    for k, ((problem, d), pairs) in enumerate(sorted(groups.items(), key=lambda x: (x[0][1], x[0][0]))):
        for memory in ("refined", "decision"):
            if not all(f"sv_{memory}" in a for a, _ in pairs):
                continue
            diff = np.array([[np.mean(capacity.normalised(a, memory) < S_KAPPA) - np.mean(top_m(b["sv_decision"]) < S_KAPPA),
                              capacity.normalised(a, memory)[-1] - top_m(b["sv_decision"])[-1]] for a, b in pairs])
            rng = _rng(300 + k, memory == "refined")
            boot = np.array([diff[rng.integers(0, len(diff), len(diff))].mean(axis=0) for _ in range(BOOTSTRAP)])
            est = diff.mean(axis=0)
            out.append({"problem": problem, "d": d, "memory": memory, "pairs": len(pairs),
                        "below": float(est[0]), "below_ci": capacity.basic_interval(est[0], boot[:, 0]),
                        "smallest": float(est[1]), "smallest_ci": capacity.basic_interval(est[1], boot[:, 1])})
    return out


def _problem(row):
    return row["problem"].upper() + ("" if row["problem"] == "dp" else " (model made for DP)")


def verdict_sentence(rows, memory) -> str:
    """Per problem: the d where the model's mass below s_kappa agrees, is borderline or is off (with the difference)."""
    parts = []
    for problem in ("dp", "op"):
        sel = [r for r in rows if r["problem"] == problem and r["memory"] == memory]
        if not sel:
            continue
        words = []
        for word in ("agrees", "borderline", "off"):
            ds = [f"{r['d']} ({r['measured']['below'] - r['predicted']['below']:+.3f})" for r in sel
                  if below_checks(r)[2] == word]
            if ds:
                words.append(f"{word} at d = {', '.join(ds)}")
        parts.append(f"{problem.upper()} {'; '.join(words)}")
    return "; ".join(parts)


def _model_cells(r) -> str:
    pred = r["predicted"]
    return (f"{pred['below']:.3f} +- {pred['below_se']:.3f} [{pred['below_range'][0]:.3f}, "
            f"{pred['below_range'][1]:.3f}]")


def header_lines(record) -> list[str]:
    return [
        f"Measured by `{COMMAND}` (seed {SEED}; instances of `rank_spectra_at_capacity.py`, seed {INSTANCE_SEED}; "
        f"one process, one thread) at code commit {record['code_commit']}, {record['date']}, "
        f"{record['wall_time_s']:.0f} s" + ("" if record.get("complete", True) else "; **run incomplete**")
        + f"; data `{DATA.name}`.  Model: `finite_ratio_spectrum(d, costs, 0.5)` with "
        "`costs = sample_optimal_scores(p, margin).cost` in rows of p (water-filling costs of p independent "
        f"blocks), {', '.join(f'{m} memories at d = {d}' for d, m in MODEL_MEMORIES.items())} (seed {SEED}); "
        "no parameter is fitted.  Intervals: 95 % basic bootstrap over memories "
        f"({BOOTSTRAP} resamples); the KS intervals of the rank-m memories are those of the table above.  "
        "Model columns: expected mass below s_kappa (+- Monte-Carlo s.e.) with the 2.5-97.5 % range of the "
        "fraction pooled over as many memories as measured; the mean KS of as many pooled memories with its "
        "2.5-97.5 % range.  Columns *a / b / verdict*: (a) the model's expected value lies inside the measured "
        "interval, (b) the measured value lies inside the model's range; *agrees* when both hold, *off* when "
        "neither does, *borderline* otherwise.",
        ""]


def model_lines(rank_rows) -> list[str]:
    """The model at the DP capacity loads: ratios, fourth moment, finite-d and leading-order mass below s_kappa."""
    loads = sorted({(r["d"], r["p"]) for r in rank_rows if r["problem"] == "dp"})
    loads.append((LARGE[1], int(round(replica.capacity(LARGE[1], kappa=KAPPA).p_c))))
    lines = ["**The model at the DP capacity loads** (margin 0).  c = p / d; r = E[C^2] / E[C]^2 of the sampled "
             "costs; 2 + r/c: fourth moment of the full spectrum of the dual sum as d -> infinity at this ratio; "
             "below s_k at this d: the expected mass of the sampled memories (+- s.e.); leading order: the same mass "
             "for the d -> infinity product law at the effective ratio c / r (`asymptotic_below`), without the "
             "finite number of kept values.", "",
             "| d | p | c | r | c / r | 2 + r/c | below s_k at this d | leading order |", "|---|---|---|---|---|---|---|---|"]
    for d, p in loads:
        spec = model(d, p)
        lines.append(f"| {d} | {p} | {spec.ratio:.2f} | {spec.cost_ratio:.3f} | {spec.effective_ratio:.2f} | "
                     f"{spec.fourth_moment:.3f} | {spec.below:.4f} +- {spec.below_stderr:.4f} | "
                     f"{spec.asymptotic_below():.4f} |")
    return lines + [""]


def page_lines(cap, fr, rank_rows, full_rows, pairs) -> list[str]:
    lines = header_lines(read_record(PROVENANCE)) + [
        "**Rank-m memories at capacity** (`rank_spectra_at_capacity.json`, model at margin 0).",
        "",
        "| problem | d | p | memory | memories | below s_k measured [95 %] | below s_k model [range for n] "
        "| a / b / verdict | KS measured [95 %] | KS model for n [range] | a / b / verdict "
        "| smallest value measured / model |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rank_rows:
        got, pred = r["measured"], r["predicted"]
        lines.append(
            f"| {_problem(r)} | {r['d']} | {r['p']} | {capacity.LABELS[r['memory']]} | {got['n']} | "
            f"{_iv(got['below'], got['below_ci'])} | {_model_cells(r)} | {' / '.join(below_checks(r))} | "
            f"{_iv(got['ks'], got['ks_ci'])} | {_iv(pred['ks'], pred['ks_range'])} | {' / '.join(ks_checks(r))} | "
            f"{got['smallest']:.3f} / {model(r['d'], r['p']).values[:, -1].mean():.3f} |")
    d, p = LARGE[1], int(round(replica.capacity(LARGE[1], kappa=KAPPA).p_c))
    big = predicted(model(d, p), 4)
    lines += ["", f"Mass below s_kappa (measured minus predicted in brackets), ridge-refined W: "
              f"{verdict_sentence(rank_rows, 'refined')}.  Decision W: {verdict_sentence(rank_rows, 'decision')}.  "
              f"Prediction at d = {d} (DP, p = {p}, the theory's p_c): mass below s_kappa {big['below']:.3f} +- "
              f"{big['below_se']:.3f}, KS of 4 pooled memories {_iv(big['ks'], big['ks_range'])}.", ""]
    lines += model_lines(rank_rows) + [
              "**Top-m truncations of full-rank memories** (the object the model describes: the top m singular "
              "values of the dual sum).  Max-margin: the certified full-rank max-margin W (gap at most 2 %), model "
              "at the mean certified margin of these memories; decision: the full-rank decision W (its top-m SVD "
              "is the start of the rank-m search), model at margin 0.  Fourth moment: of all d singular values in "
              "units of `||W||_F / sqrt(d)`, mean over memories, against the model's `2 + r / c` (d -> infinity at "
              "the same ratio and cost law; the quarter circle has 2).", "",
              "| problem | d | p | load | memory | memories | below s_k measured [95 %] | below s_k model "
              "[range for n] | a / b / verdict | smallest value measured / model | 4th moment measured / 2 + r/c |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in full_rows:
        got = r["measured"]
        m4 = f"{got['m4']:.3f} / {r['fourth_moment']:.3f}" if "m4" in got else f"- / {r['fourth_moment']:.3f}"
        lines.append(
            f"| {_problem(r)} | {r['d']} | {r['p']} | {r['source']} | {r['memory']} | {got['n']} | "
            f"{_iv(got['below'], got['below_ci'])} | {_model_cells(r)} | {' / '.join(below_checks(r))} | "
            f"{got['smallest']:.3f} / {r['model_smallest']:.3f} | {m4} |")
    lines += ["", "**Each rank-m memory against the top-m truncation of its own start** (same instance: the "
              "rank-m memory minus the top-m truncation of the full-rank decision W, whose top-m SVD is the start "
              "that stored it; mean over instances with a 95 % basic bootstrap interval).", "",
              "| problem | d | rank-m memory | instances | change of the mass below s_k [95 %] "
              "| change of the smallest value [95 %] |", "|---|---|---|---|---|---|"]
    for r in pairs:
        label = capacity.LABELS[r["memory"]] if r["d"] != LARGE[1] else "decision W (one start)"
        lines.append(f"| {r['problem'].upper()} | {r['d']} | {label} | {r['pairs']} | "
                     f"{_iv(r['below'], r['below_ci'], '+.3f')} | {_iv(r['smallest'], r['smallest_ci'], '+.3f')} |")
    lines += ["", large_lines(fr["large"])]
    return lines


def large_lines(large) -> str:
    """The cost of the large-d trials and what they gave."""
    if not large:
        return f"**d = {LARGE[1]}**: not measured."
    problem, d = LARGE
    searched = [r for r in large if "status_rank" in r]
    stored = sum(r["status_rank"] == "stored" for r in searched)
    secs = {k: [r[k] for r in large if k in r] for k in ("seconds_decision", "seconds_max_margin", "seconds_rank")}
    names = {"seconds_decision": "full-rank decision", "seconds_max_margin": "certified full-rank max margin",
             "seconds_rank": "rank-m search with one start"}
    text = "; ".join(f"{names[k]} {np.mean(v):.0f} s ({len(v)})" for k, v in secs.items() if v)
    starts = "; ".join(f"start {st['kind']}: {st['outcome']} after {st['iterations']} iterations, "
                       f"{st['recall_fraction']:.2f} of the inputs recalled"
                       for r in searched for st in r.get("rank_starts", []))
    return (f"**d = {d}** ({problem.upper()}, p = {large[0]['p']}, the theory's p_c, not measured): the two "
            f"full-rank memories on {len(large)} instance(s) (rows d = {d} of the second table); the rank-m search "
            f"with one start on {len(searched)}, which stored {stored} ({starts or 'no start recorded'}; `not_found` "
            f"counts as not stored).  Mean wall time per instance (one thread, on a machine shared with other jobs; "
            f"instances in brackets): {text}.")


def write_figure(rank_rows, full_rows) -> None:
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 4))
    styles = [("rank-m, ridge-refined W", [r for r in rank_rows if r["memory"] == "refined"], "o", "-"),
              ("rank-m, decision W", [r for r in rank_rows if r["memory"] == "decision"], "s", ":"),
              ("top-m of full-rank max-margin W", [r for r in full_rows if r["memory"] == "max-margin"
                                                    and r["source"] == "capacity load"], "^", "--")]
    for problem, color in (("dp", "C0"), ("op", "C1")):
        for label, rows, marker, style in styles:
            sel = sorted((r for r in rows if r["problem"] == problem), key=lambda r: r["d"])
            if not sel:
                continue
            y = np.array([r["measured"]["below"] for r in sel])
            err = np.maximum(np.array([[v - r["measured"]["below_ci"][0], r["measured"]["below_ci"][1] - v]
                                       for v, r in zip(y, sel)]).T, 0.0)
            ax.errorbar([r["d"] for r in sel], y, yerr=err, color=color, marker=marker, linestyle=style, capsize=2,
                        label=f"{problem.upper()} {label}", mfc="none" if problem == "op" else color)
    ds = sorted({r["d"] for r in rank_rows} | {r["d"] for r in full_rows if r["source"] == "capacity load"})
    loads = {r["d"]: r["p"] for r in rank_rows if r["problem"] == "dp"}
    loads.update({r["d"]: r["p"] for r in full_rows if r["d"] not in loads and r["problem"] == "dp"})
    ds = [d for d in ds if d in loads]
    pred = [model(d, loads[d]) for d in ds]
    ax.errorbar(ds, [s.below for s in pred], yerr=[2 * s.below_stderr for s in pred], color="k", lw=1.5,
                label="model, DP at capacity (finite_ratio_spectrum)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("d")
    ax.set_ylabel("fraction of the m kept values below s_kappa")
    ax.legend(fontsize=6)
    big = max((r for r in rank_rows if r["problem"] == "dp" and r["memory"] == "refined"), key=lambda r: r["d"])
    d = big["d"]
    k = min(16, d // 2)
    index = np.arange(d // 2 - k + 1, d // 2 + 1)
    bx.plot(index, np.mean(big["values"], axis=0)[-k:], "o-", color="C0", label=f"rank-m ridge-refined W ({len(big['values'])})")
    full = [r for r in full_rows if r["problem"] == "dp" and r["d"] == d and r["memory"] == "max-margin"
            and r["source"] == "capacity load"]
    if full:
        bx.plot(index, np.mean(full[0]["values"], axis=0)[-k:], "^--", color="C2",
                label=f"top-m of full-rank max-margin W ({len(full[0]['values'])})")
    spec = model(d, big["p"])
    bx.plot(index, spec.values.mean(axis=0)[-k:], "k-", label=f"model ({spec.memories} sampled memories)")
    bx.axhline(S_KAPPA, color="k", lw=0.5, ls="--", label="s_kappa")
    bx.set_xlabel("index of the kept value (m = last)")
    bx.set_ylabel("mean normalised singular value")
    bx.set_title(f"DP, d = {d}, p = {big['p']}: the smallest kept values")
    bx.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(FIGURE, dpi=120)
    plt.close(fig)


def render() -> list[str]:
    cap = json.loads(capacity.DATA.read_text())
    fr = json.loads(DATA.read_text())
    rank_data = json.loads(RANK_DATA.read_text())
    rank_rows = rank_m_rows(cap)
    full_rows = full_rank_rows(fr, rank_data)
    pairs = paired_rows(cap, fr)
    lines = page_lines(cap, fr, rank_rows, full_rows, pairs)
    write_block(PAGE, NAME, demote_headings("\n".join(lines)), NAME)
    write_figure(rank_rows, full_rows)
    return lines


def _arguments(parser) -> None:
    parser.add_argument("--resume", action="store_true", help="keep the memories already in the data file")
    parser.add_argument("--max-seconds", type=float, default=None,
                        help="start no new instance after this many seconds (the page says the run is incomplete)")
    parser.add_argument("--large-trials", type=int, default=LARGE_TRIALS,
                        help=f"instances at d = {LARGE[1]} (default {LARGE_TRIALS}; 0 skips them)")


def _measure(job) -> None:
    measure(job.args.resume, job.args.max_seconds, job.args.large_trials)


def _render(job) -> None:
    print("\n".join(render()))


def main(argv=None) -> int:
    return run(__file__, __doc__, measure=_measure, render=_render, argv=argv, arguments=_arguments, seed=SEED)


if __name__ == "__main__":
    sys.exit(main())
