"""Rank-m spectra at the capacity: storing rank-m memories at the measured p_c against ``replica.spectrum(0.5)``.

The paper (Giorlandino, Goldt, Maillard, arXiv 2605.10795) states that the ``m = kappa d``
non-zero singular values of the optimal rank-m memory *at capacity* follow the quarter
circle truncated to ``[s_kappa, 2]`` (``replica.spectrum(kappa)``, ``notes/spectra.md``).
At the capacity the set of rank-m memories that store an instance shrinks towards that
optimum, so the spectrum of any storing rank-m memory at a load where about half the
instances are stored tests the claim.  For kappa = 1/2 and each row of ``PLAN`` this script

* draws ``make_instance(d, p, problem, seed=SeedSequence([SEED, code, d, t]))`` (code 0 OP,
  1 DP) at ``p`` = the measured rank-m p_c of ``experiments/rank/README.md`` (d = 32 and
  64; a lower bound there, since only ``stored`` is certified at rank m) or the theory's
  ``replica.capacity(d, kappa=0.5).p_c`` (d = 128, not measured);
* solves it with the rank-m restart search
  ``solve(inst, "optimal", kappa=0.5, restarts=R, refine=False, seed=SeedSequence([SEED, code, d, t, 1]))``
  (R as on the rank pages: 8 at d = 32, 4 at d >= 64): its ``stored`` is verified in
  float64, its ``not_found`` (every start ended without storing) is counted as not stored;
* on every stored instance refines the decision W along the ridge path
  (``solve(..., restarts=1, refine=True, options={"initial": factors of the decision W})``:
  the storing start of ``refine=True`` continued from the same W, without a second search);
* records all d singular values of both memories.

The render mode normalises them (``replica.asymptotic.spectra.normalized_singular_values(s,
0.5)``, as ``rank_spectra.py`` does), pools them per (problem, d) and reports the KS
distance to ``replica.spectrum(0.5)`` (``scipy.stats.kstest``) with a bootstrap interval
over memories, the fraction below ``s_kappa``, P(stored) with its Wilson interval, the
KS of the same number of top-m truncated Gaussian matrices (the finite-d distance of a
matrix whose limit law is the prediction) and a fit ``KS ~ c d^-a`` per problem.  It
writes the block ``rank_spectra_at_capacity`` of ``experiments/spectra/README.md`` and the
figure ``rank_spectra_at_capacity.png`` from the committed data only.

Usage::

    python -m experiments.spectra.rank_spectra_at_capacity            # measure, then render
    python -m experiments.spectra.rank_spectra_at_capacity --resume   # keep the trials already in the data file
    python -m experiments.spectra.rank_spectra_at_capacity --render   # render from the committed data
"""

from __future__ import annotations

import json
import math
import pathlib
import sys
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

import replica  # noqa: E402
from replica.asymptotic.spectra import normalized_singular_values  # noqa: E402
from experiments.pages import demote_headings, write_block  # noqa: E402
from experiments.runner import run  # noqa: E402
from experiments.provenance import read_record, write_record  # noqa: E402

SEED = 1
KAPPA = 0.5
CODE = {"op": 0, "dp": 1}
# (problem, d, p, where p comes from, starts R, trials); the rows run in this order
PLAN = (
    ("dp", 32, 167, "measured p_c 167.0 (lower bound)", 8, 24),
    ("op", 32, 170, "measured p_c 170.1 (lower bound)", 8, 24),
    ("dp", 64, 513, "measured p_c 513.0 (lower bound)", 4, 10),
    ("op", 64, 522, "measured p_c 521.9 (lower bound)", 4, 10),
    ("dp", 128, 1648, "theory p_c 1647.7 (not measured)", 4, 8),
)
AT_CAPACITY = (0.3, 0.7)    # P(stored) at which a load counts as the capacity
BOOTSTRAP = 1000            # resamples of the memories for the KS intervals
NULL_DRAWS = 200            # Gaussian reference draws per row
HERE = pathlib.Path(__file__).resolve().parent
PAGE = HERE / "README.md"
DATA = HERE / "rank_spectra_at_capacity.json"
PROVENANCE = HERE / "rank_spectra_at_capacity.provenance.json"
FIGURE = HERE / "rank_spectra_at_capacity.png"
NAME = "rank_spectra_at_capacity"
COMMAND = "python -m experiments.spectra.rank_spectra_at_capacity"
MEMORIES = ("refined", "decision")
LABELS = {"refined": "ridge-refined W", "decision": "decision W"}
LAW = replica.spectrum(KAPPA)
S_KAPPA = float(LAW.support()[0])


# --------------------------------------------------------------------------------------
# measurement
# --------------------------------------------------------------------------------------
def measure_trial(problem, d, p, restarts, t) -> dict:
    """One instance: the decision of the rank-m search and, when stored, the ridge-refined W."""
    from validation import make_instance, solve
    from validation.solvers.engine.memories import balanced_factors

    code = CODE[problem]
    inst = make_instance(d, p, problem, seed=np.random.SeedSequence([SEED, code, d, t]))
    search_seed = np.random.SeedSequence([SEED, code, d, t, 1])
    t0 = time.perf_counter()
    dec = solve(inst, "optimal", kappa=KAPPA, restarts=restarts, refine=False, seed=search_seed)
    starts = dec.info.get("starts", [])
    row = {"problem": problem, "d": d, "p": p, "trial": t, "restarts": restarts, "status": dec.status,
           "starts_run": len(starts), "seconds_search": time.perf_counter() - t0}
    if not dec.stored:
        return row
    row.update(stored_by=starts[-1]["kind"] if starts else None, margin_decision=float(dec.margin),
               sv_decision=np.linalg.svd(dec.W, compute_uv=False).tolist())
    t1 = time.perf_counter()
    ref = solve(inst, "optimal", kappa=KAPPA, restarts=1, refine=True, seed=search_seed,
                options={"initial": balanced_factors(dec.W, d // 2)})
    row.update(refined_status=ref.status, seconds_refine=time.perf_counter() - t1,
               refine_converged=bool(ref.info.get("refine_converged", False)),
               refine_gap=ref.info.get("refine_gap"))
    if ref.stored:
        row.update(margin_refined=float(ref.margin), sv_refined=np.linalg.svd(ref.W, compute_uv=False).tolist())
    return row


def _save(rows, seconds, complete):
    DATA.write_text(json.dumps({"plan": [list(r) for r in PLAN], "seed": SEED, "kappa": KAPPA, "rows": rows},
                               indent=0) + "\n")
    write_record(PROVENANCE, command=COMMAND, seed=SEED, seconds=seconds, complete=complete,
                 threads=1)


def measure(resume: bool, max_seconds: float | None) -> None:
    from validation.solvers import set_threads

    set_threads(1)
    rows = json.loads(DATA.read_text())["rows"] if resume and DATA.exists() else []
    spent = float(read_record(PROVENANCE)["wall_time_s"]) if resume and PROVENANCE.exists() else 0.0
    done = {(r["problem"], r["d"], r["trial"]) for r in rows}
    start = time.perf_counter()
    complete = True
    for problem, d, p, _, restarts, trials in PLAN:
        for t in range(trials):
            if (problem, d, t) in done:
                continue
            if max_seconds is not None and time.perf_counter() - start > max_seconds:
                complete = False
                break
            row = measure_trial(problem, d, p, restarts, t)
            rows.append(row)
            print({k: v for k, v in row.items() if not k.startswith("sv_")}, flush=True)
            _save(rows, spent + time.perf_counter() - start, complete=False)
    _save(rows, spent + time.perf_counter() - start, complete=complete)


# --------------------------------------------------------------------------------------
# analysis (also used by experiments/scoreboard/scoreboard.py)
# --------------------------------------------------------------------------------------
def normalised(row, memory):
    """The m = d / 2 normalised singular values of one stored memory (``rank_spectra.py``'s units)."""
    return normalized_singular_values(np.asarray(row[f"sv_{memory}"]), KAPPA)


def ks(values) -> float:
    """KS distance of pooled values to ``replica.spectrum(0.5)``."""
    return float(stats.kstest(np.asarray(values), LAW.cdf).statistic)


def _rng(*key):
    return np.random.default_rng(np.random.SeedSequence([SEED, 7, *key]))


def bootstrap_ks(spectra, key) -> np.ndarray:
    """KS distances of ``BOOTSTRAP`` resamples (with replacement) of the memories."""
    rng = _rng(*key)
    n = len(spectra)
    return np.array([ks(np.concatenate([spectra[i] for i in rng.integers(0, n, n)])) for _ in range(BOOTSTRAP)])


def basic_interval(estimate, resamples, level=0.95):
    """Basic (pivotal) bootstrap interval ``[2 x - q_hi, 2 x - q_lo]`` of the estimate ``x``.

    The percentile interval of a KS distance sits above the estimate (a resample repeats
    memories, and repeated values are further from any continuous law); the basic interval
    corrects that shift.
    """
    q_lo, q_hi = np.quantile(resamples, [(1 - level) / 2, (1 + level) / 2])
    return float(2 * estimate - q_hi), float(2 * estimate - q_lo)


def null_ks(d, memories, key) -> np.ndarray:
    """KS distances of ``memories`` pooled top-m truncations of d x d Gaussian matrices, ``NULL_DRAWS`` times.

    The law of such a truncation tends to ``replica.spectrum(0.5)`` as d grows; at finite d
    this is the distance a memory whose limit law is the prediction still shows.
    """
    rng = _rng(*key)
    out = []
    for _ in range(NULL_DRAWS):
        pooled = []
        for _ in range(memories):
            s = np.linalg.svd(rng.standard_normal((d, d)), compute_uv=False)
            s[d // 2:] = 0.0
            pooled.append(normalized_singular_values(s, KAPPA))
        out.append(ks(np.concatenate(pooled)))
    return np.array(out)


def summarise(data, reference=True) -> list[dict]:
    """One summary per row of the plan that has trials: counts, P(stored), KS with intervals.

    ``reference=False`` leaves out the Gaussian reference (its SVDs; the scoreboard does not use it).
    """
    from validation.measurements.intervals import wilson_interval

    out = []
    for i, (problem, d, p, source, restarts, _) in enumerate(data["plan"]):
        rows = [r for r in data["rows"] if r["problem"] == problem and r["d"] == d]
        if not rows:
            continue
        count = {s: sum(r["status"] == s for r in rows) for s in ("stored", "not_found", "not_stored", "undecided")}
        decided = count["stored"] + count["not_found"] + count["not_stored"]
        low, high = wilson_interval(count["stored"], decided)
        stored = [r for r in rows if r["status"] == "stored" and "sv_refined" in r]
        entry = {"problem": problem, "d": d, "p": p, "source": source, "restarts": restarts, "trials": len(rows),
                 **count, "p_stored": count["stored"] / decided if decided else math.nan,
                 "p_stored_low": float(low), "p_stored_high": float(high), "memories": len(stored),
                 "values": len(stored) * (d // 2),
                 "seconds": sum(r["seconds_search"] + r.get("seconds_refine", 0.0) for r in rows)}
        entry["at_capacity"] = bool(AT_CAPACITY[0] <= entry["p_stored"] <= AT_CAPACITY[1])
        for memory in MEMORIES:
            spectra = [normalised(r, memory) for r in stored]
            if not spectra:
                continue
            pooled = np.concatenate(spectra)
            boot = bootstrap_ks(spectra, (i, MEMORIES.index(memory)))
            value = ks(pooled)
            low, high = basic_interval(value, boot)
            entry[memory] = {"ks": value, "ks_low": max(low, 0.0), "ks_high": high,
                             "below": float(np.mean(pooled < S_KAPPA)),
                             "margin": float(np.mean([r[f"margin_{memory}"] for r in stored])),
                             "boot": boot}
        if stored:
            entry["refine_converged"] = sum(bool(r.get("refine_converged")) for r in stored)
        if stored and reference:
            null = null_ks(d, len(stored), (i, 9))
            entry["null"] = {"mean": float(null.mean()), "low": float(np.quantile(null, 0.025)),
                             "high": float(np.quantile(null, 0.975))}
        out.append(entry)
    return out


def trend(summaries, problem, memory) -> dict | None:
    """Least-squares fit ``log KS = log c - a log d`` over the d of ``problem``, with a bootstrap interval of a."""
    rows = [s for s in summaries if s["problem"] == problem and memory in s]
    if len(rows) < 2:
        return None
    x = np.log([s["d"] for s in rows])
    a = -np.polyfit(x, np.log([s[memory]["ks"] for s in rows]), 1)[0]
    boots = np.array([s[memory]["boot"] for s in rows])          # (d, BOOTSTRAP)
    slopes = -np.polyfit(x, np.log(np.maximum(boots, 1e-12)), 1)[0]
    low, high = basic_interval(a, slopes)
    return {"a": float(a), "low": low, "high": high,
            "ds": [s["d"] for s in rows], "ks": [s[memory]["ks"] for s in rows]}


# --------------------------------------------------------------------------------------
# rendering
# --------------------------------------------------------------------------------------
def _interval(x, low, high, fmt=".3f"):
    return f"{x:{fmt}} [{low:{fmt}}, {high:{fmt}}]"


def page_lines(data, summaries) -> list[str]:
    record = read_record(PROVENANCE)
    lines = [
        f"Measured by `{COMMAND}` (seed {SEED}, kappa = {KAPPA}, Gaussian ensemble, one process, one thread) at "
        f"code commit {record['code_commit']}, {record['date']}, {record['wall_time_s']:.0f} s"
        + ("" if record.get("complete", True) else "; **run incomplete**: the rows hold the trials finished")
        + f"; data `{DATA.name}`.  Instances `make_instance(d, p, problem, seed=SeedSequence([{SEED}, code, d, t]))` "
        "(code 0 OP, 1 DP), t = 0, 1, ...; search `solve(inst, \"optimal\", kappa=0.5, restarts=R, refine=False)`; "
        "`not_found` (all R starts ended without storing) counts as not stored, so P(stored) is a lower bound.  "
        f"Truncation point s_kappa = {S_KAPPA:.4f}; the predicted law has no mass below it.",
        "",
        "**Loads and stored fraction.** P(stored) with its 95 % Wilson interval over the decided trials; "
        f"*at capacity*: the point estimate lies in [{AT_CAPACITY[0]}, {AT_CAPACITY[1]}].",
        "",
        "| problem | d | p (source) | starts R | trials | stored / not_found / not_stored / undecided "
        "| P(stored) [95 % Wilson] | at capacity | s (all trials) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summaries:
        lines.append(f"| {s['problem'].upper()} | {s['d']} | {s['p']} ({s['source']}) | {s['restarts']} | "
                     f"{s['trials']} | {s['stored']} / {s['not_found']} / {s['not_stored']} / {s['undecided']} | "
                     f"{_interval(s['p_stored'], s['p_stored_low'], s['p_stored_high'], '.2f')} | "
                     f"{'yes' if s['at_capacity'] else 'no'} | {s['seconds']:.0f} |")
    lines += [
        "",
        "**Spectra of the storing memories.** Pooled `normalized_singular_values(s, 0.5)` of the storing "
        "memories (m = d / 2 values each).  KS: distance to `replica.spectrum(0.5)`, with a 95 % "
        f"basic bootstrap interval over memories ({BOOTSTRAP} resamples, `basic_interval`); below s_k: fraction of the values below s_kappa; "
        f"Gaussian reference: KS of the same number of top-m truncated d x d Gaussian matrices (mean [2.5 %, "
        f"97.5 %] over {NULL_DRAWS} draws), the distance left at this d and sample size by a matrix whose limit "
        "law is the prediction.  Margins: normalised, verified in float64, mean over the memories; "
        "'refinement converged': memories whose refinement reports `refine_converged` (its 2 % gap to the "
        "certified upper bound closed; at rank m that bound is the full-rank one, and the refinement stops at its "
        "iteration cap instead).",
        "",
        "| problem | d | memories | values | KS ridge-refined W | below s_k (refined) | KS decision W "
        "| below s_k (decision) | Gaussian reference KS | mean margin refined / decision | refinement converged |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summaries:
        if "refined" not in s:
            lines.append(f"| {s['problem'].upper()} | {s['d']} | 0 | 0 | - | - | - | - | - | - | - |")
            continue
        r, dec, null = s["refined"], s["decision"], s["null"]
        lines.append(f"| {s['problem'].upper()} | {s['d']} | {s['memories']} | {s['values']} | "
                     f"{_interval(r['ks'], r['ks_low'], r['ks_high'])} | {r['below']:.3f} | "
                     f"{_interval(dec['ks'], dec['ks_low'], dec['ks_high'])} | {dec['below']:.3f} | "
                     f"{_interval(null['mean'], null['low'], null['high'])} | "
                     f"{r['margin']:.4f} / {dec['margin']:.4f} | {s['refine_converged']} / {s['memories']} |")
    lines += ["", "**KS against d.** Least-squares fit of `log KS = log c - a log d` over the d of each problem "
              "(95 % basic bootstrap interval of a from the per-d resamples above).", "",
              "| problem | memory | d | KS | a [95 % bootstrap] |", "|---|---|---|---|---|"]
    for problem in ("dp", "op"):
        for memory in MEMORIES:
            fit = trend(summaries, problem, memory)
            if fit is None:
                continue
            lines.append(f"| {problem.upper()} | {LABELS[memory]} | {', '.join(map(str, fit['ds']))} | "
                         f"{', '.join(f'{k:.3f}' for k in fit['ks'])} | "
                         f"{_interval(fit['a'], fit['low'], fit['high'], '.2f')} |")
    return lines


def write_figure(data, summaries) -> None:
    ds = sorted({s["d"] for s in summaries if "refined" in s})
    if not ds:
        return
    fig, axes = plt.subplots(1, len(ds) + 1, figsize=(3.3 * (len(ds) + 1), 3.3))
    grid = np.linspace(S_KAPPA, 2.0, 300)
    for ax, d in zip(axes, ds):
        for s, color in ((s, "C0" if s["problem"] == "dp" else "C1") for s in summaries if s["d"] == d):
            rows = [r for r in data["rows"] if r["problem"] == s["problem"] and r["d"] == d and "sv_refined" in r]
            if not rows:
                continue
            for memory, style in (("refined", "-"), ("decision", ":")):
                values = np.concatenate([normalised(r, memory) for r in rows])
                ax.hist(values, bins=20, range=(0.0, 2.4), density=True, histtype="step", color=color,
                        linestyle=style, label=f"{s['problem'].upper()} {LABELS[memory]} ({len(rows)})")
        ax.plot(grid, LAW.pdf(grid), "k-", lw=1.5, label="replica.spectrum(0.5)")
        ax.axvline(S_KAPPA, color="k", lw=0.5, ls="--")
        ax.set_title(f"d = {d}")
        ax.set_xlabel("normalised singular value")
        ax.legend(fontsize=5)
    ax = axes[-1]
    for problem, color in (("dp", "C0"), ("op", "C1")):
        for memory, marker, style in (("refined", "o", "-"), ("decision", "s", ":")):
            rows = [s for s in summaries if s["problem"] == problem and memory in s]
            if not rows:
                continue
            ks_ = np.array([s[memory]["ks"] for s in rows])
            err = np.maximum(np.array([[k - s[memory]["ks_low"], s[memory]["ks_high"] - k]
                                       for k, s in zip(ks_, rows)]).T, 0.0)
            ax.errorbar([s["d"] for s in rows], ks_, yerr=err, color=color, marker=marker, linestyle=style,
                        capsize=2, label=f"{problem.upper()} {LABELS[memory]}")
        rows = [s for s in summaries if s["problem"] == problem and "null" in s]
        if rows:
            ax.plot([s["d"] for s in rows], [s["null"]["mean"] for s in rows], color=color, ls="--", lw=0.8,
                    label=f"{problem.upper()} Gaussian reference")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("d")
    ax.set_ylabel("KS distance to replica.spectrum(0.5)")
    ax.legend(fontsize=5)
    fig.tight_layout()
    fig.savefig(FIGURE, dpi=120)
    plt.close(fig)


def render() -> list[str]:
    data = json.loads(DATA.read_text())
    summaries = summarise(data)
    lines = page_lines(data, summaries)
    write_block(PAGE, NAME, demote_headings("\n".join(lines)), NAME)
    write_figure(data, summaries)
    return lines


def _arguments(parser) -> None:
    parser.add_argument("--resume", action="store_true", help="keep the trials already in the data file")
    parser.add_argument("--max-seconds", type=float, default=None,
                        help="start no new trial after this many seconds (the page says the run is incomplete)")


def _measure(job) -> None:
    measure(job.args.resume, job.args.max_seconds)


def _render(job) -> None:
    print("\n".join(render()))


def main(argv=None) -> int:
    return run(__file__, __doc__, measure=_measure, render=_render, argv=argv, arguments=_arguments, seed=SEED)


if __name__ == "__main__":
    sys.exit(main())
