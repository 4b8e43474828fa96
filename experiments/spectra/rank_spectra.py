"""Rank-m spectra against d: the max-margin W at rank m = d / 2 against ``replica.spectrum(0.5)``.

For kappa = 0.5, the problems and dimensions of ``PLAN`` and ``p = round(0.95 p_c)`` with
``p_c = replica.capacity(d, kappa=0.5).p_c`` (the theory's p_c, not a measured one), this
script draws Gaussian instances, stores each with
``validation.solve(inst, "optimal", kappa=0.5, refine=False)`` (the rank-m restart search)
and compares four rank-m memories of the same instance:

(a) the decision W (no refinement);
(b) the ridge-path refined W (``solve(..., kappa=0.5, refine=True)``);
(c) the rank-m max-margin W of
    :func:`validation.solvers.rank_margin.solve_rank_max_margin` started from (b)
    (alternating certified half-steps; a stationary point, not a certified optimum, and
    never below (b));
(d) the top-m truncation of the full-rank max-margin W (the certified full-rank solver
    ``solve_max_margin``, run inside (c) from the rank-m W with a 1 % gap).

Per memory it records the verified normalised margin; per (problem, d) the normalised
singular values (``replica.asymptotic.spectra.normalized_singular_values(s, 0.5)``) pooled over the
instances, their KS distance to ``replica.spectrum(0.5)`` (``scipy.stats.kstest``) and the
mass below the truncation point ``s_kappa = replica.spectrum(0.5).support()[0]``.  On the
first instances (``SECOND_STARTS``) the alternation also runs from the decision W (a) to
see whether two starts reach the same margin.  The per-instance records (margins, statuses
and the raw singular values of (a)-(d)) are saved in ``experiments/spectra/rank_spectra.json``
after every (problem, d), with a provenance record, and ``experiments/spectra/README.md`` and
``experiments/spectra/rank_spectra.png`` are rendered from them, so an interrupted run leaves
results.  One process, one thread.

Usage::

    python -m experiments.spectra.rank_spectra            # measure (about 14 min on one core), save, render
    python -m experiments.spectra.rank_spectra --render   # the page and figure from the committed data
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
from scipy import stats  # noqa: E402

import replica  # noqa: E402
from replica.asymptotic.spectra import normalized_singular_values  # noqa: E402
from validation import make_instance, solve  # noqa: E402
from validation.measurements.recall import normalised_margin, recall_check  # noqa: E402
from validation.solvers import set_threads  # noqa: E402
from validation.solvers.rank_margin import solve_rank_max_margin  # noqa: E402
from experiments.pages import demote_headings, write_block  # noqa: E402
from experiments.provenance import read_record  # noqa: E402
from experiments.runner import run  # noqa: E402

SEED = 0
KAPPA = 0.5
LOAD = 0.95
# (problem, d, instances, alternation time limit per instance in s); d = 128 last
PLAN = (("op", 32, 8, 120.0), ("op", 64, 4, 240.0), ("dp", 32, 4, 120.0), ("dp", 64, 2, 300.0),
        ("op", 128, 2, 300.0))
SECOND_STARTS = {("op", 32): 2, ("op", 64): 1, ("dp", 32): 1}   # instances with a second start
KINDS = ("a", "b", "c", "d")
LABELS = {"a": "(a) decision W", "b": "(b) ridge-refined W", "c": "(c) rank-m max margin",
          "d": "(d) top-m of full-rank max margin"}
HERE = pathlib.Path(__file__).resolve().parent
DATA, PROVENANCE = HERE / "rank_spectra.json", HERE / "rank_spectra.provenance.json"
LAW = replica.spectrum(KAPPA)
S_KAPPA = float(LAW.support()[0])


def verified_margin(inst, W) -> float:
    """Normalised margin ``d min (s_target - s_competitor) / ||W||_F`` from float64 scores."""
    _, margins = recall_check(inst.scores(W), inst.target_index)
    return float(normalised_margin(margins, W))


def truncated(W, rank):
    """Best rank-``rank`` approximation of W (top singular triplets)."""
    U, s, Vt = np.linalg.svd(W)
    return (U[:, :rank] * s[:rank]) @ Vt[:rank]


def measure_instance(problem, d, t, time_limit, second_start):
    """The record of one instance: margins, statuses and the raw singular values of (a)-(d)."""
    code = 0 if problem == "op" else 1
    p = int(round(LOAD * replica.capacity(d, kappa=KAPPA).p_c))
    inst = make_instance(d, p, problem, seed=np.random.SeedSequence([SEED, code, d, t]))
    t0 = time.perf_counter()
    dec = solve(inst, "optimal", kappa=KAPPA, refine=False)
    row = {"problem": problem, "d": d, "p": p, "instance": t, "decision": dec.status}
    if dec.status != "stored":
        return row
    ridge = solve(inst, "optimal", kappa=KAPPA, refine=True)
    rank = solve_rank_max_margin(inst, KAPPA, ridge.W, time_limit=time_limit,
                                 seed=np.random.SeedSequence([SEED, code, d, t, 1]))
    mats = {"a": dec.W, "b": ridge.W, "c": rank.W, "d": truncated(rank.full_rank_W, rank.rank)}
    row.update({f"margin_{k}": verified_margin(inst, W) for k, W in mats.items()})
    row.update(status_c=rank.status, sweeps_c=rank.sweeps, full_rank_margin=rank.full_rank_margin,
               full_rank_bound=rank.full_rank_bound, rank_bound=rank.rank_bound,
               max_step_gap=max((g for g in rank.gaps if g is not None), default=np.nan))
    if second_start:
        other = solve_rank_max_margin(inst, KAPPA, dec.W, time_limit=time_limit,
                                      seed=np.random.SeedSequence([SEED, code, d, t, 2]),
                                      options={"full_rank": False})
        row.update(margin_c2=other.margin, status_c2=other.status)
    row["seconds"] = time.perf_counter() - t0
    row.update({f"sv_{k}": np.linalg.svd(W, compute_uv=False).tolist() for k, W in mats.items()})
    return row


def pooled_by_case(rows):
    """``{(problem, d): {"rows": stored rows, "spectra": [{kind: normalised singular values}]}}`` in PLAN order."""
    pooled = {}
    for row in rows:
        entry = pooled.setdefault((row["problem"], row["d"]), {"spectra": [], "rows": []})
        if row["decision"] == "stored":
            entry["rows"].append(row)
            entry["spectra"].append({k: normalized_singular_values(np.asarray(row[f"sv_{k}"]), KAPPA)
                                     for k in KINDS})
    return pooled


def law_distances(values):
    """KS distance to ``replica.spectrum(0.5)`` and the mass below ``s_kappa``."""
    return float(stats.kstest(values, LAW.cdf).statistic), float(np.mean(values < S_KAPPA))


def _cell(x, fmt=".4f"):
    return "-" if x is None or (isinstance(x, float) and not np.isfinite(x)) else format(x, fmt)


def margin_table(rows):
    lines = ["| problem | d | p | inst. | (a) decision | (b) ridge | (c) rank-m max margin | (c) from (a) "
             "| (d) top-m of full rank | full-rank margin | rank-m bound | status (c), sweeps "
             "| max half-step gap | s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["decision"] != "stored":
            lines.append(f"| {r['problem']} | {r['d']} | {r['p']} | {r['instance']} | {r['decision']} "
                         "| - | - | - | - | - | - | - | - | - |")
            continue
        c2 = _cell(r.get("margin_c2")) + (f" ({r['status_c2']})" if "status_c2" in r else "")
        lines.append(
            f"| {r['problem']} | {r['d']} | {r['p']} | {r['instance']} | {_cell(r['margin_a'])} "
            f"| {_cell(r['margin_b'])} | {_cell(r['margin_c'])} | {c2} | {_cell(r['margin_d'])} "
            f"| {_cell(r['full_rank_margin'])} | {_cell(r['rank_bound'])} | {r['status_c']}, {r['sweeps_c']} "
            f"| {_cell(r['max_step_gap'], '.4f')} | {r['seconds']:.0f} |")
    return lines


def law_table(pooled):
    lines = ["| problem | d | instances | values | " + " | ".join(f"KS {k}" for k in KINDS) + " | "
             + " | ".join(f"below s_k {k}" for k in KINDS) + " | mean margin " + " / ".join(KINDS) + " |",
             "|---|---|---|---|" + "---|" * (2 * len(KINDS) + 1)]
    for (problem, d), entry in pooled.items():
        if not entry["spectra"]:
            continue
        dist = {k: law_distances(np.concatenate([s[k] for s in entry["spectra"]])) for k in KINDS}
        means = " / ".join(f"{np.mean([r[f'margin_{k}'] for r in entry['rows']]):.3f}" for k in KINDS)
        n = sum(s["a"].size for s in entry["spectra"])
        lines.append(f"| {problem} | {d} | {len(entry['spectra'])} | {n} | "
                     + " | ".join(f"{dist[k][0]:.3f}" for k in KINDS) + " | "
                     + " | ".join(f"{dist[k][1]:.3f}" for k in KINDS) + f" | {means} |")
    return lines


def write_page(pooled, rows, wall, complete):
    lines = [
        f"Written by `python -m experiments.spectra.rank_spectra` (seed {SEED}, kappa = {KAPPA}, "
        f"p = round({LOAD} p_c) with p_c = `replica.capacity(d, kappa={KAPPA}).p_c`, the theory's p_c, "
        f"not a measured one; Gaussian ensemble; one process, one thread; wall time {wall:.0f} s"
        + ("" if complete else "; **run incomplete**: the rows below are those finished") + ").",
        "Instances: `make_instance(d, p, problem, seed=SeedSequence([0, code, d, t]))` (code 0 OP, 1 DP). "
        f"Truncation point s_kappa = {S_KAPPA:.4f}; the predicted law has no mass below it.",
        "",
        "Normalised margins `d min_i m_i(W) / ||W||_F`, verified in float64 from the scores. "
        "(c) is a stationary point of the alternation (a lower bound on the best rank-m margin); "
        "the rank-m bound is certified (an upper bound on every rank-m margin); "
        "'(c) from (a)' runs the alternation from the decision W instead of the ridge-refined one.",
        "",
        *margin_table(rows),
        "",
        "Pooled normalised singular values: KS distance to `replica.spectrum(0.5)` and the fraction "
        "below s_kappa, for (a)-(d).",
        "",
        *law_table(pooled),
        "",
    ]
    write_block(HERE / "README.md", "rank_spectra", demote_headings("\n".join(lines)), "rank_spectra")


def write_figure(pooled):
    keys = [key for key, entry in pooled.items() if entry["spectra"]]
    if not keys:
        return
    fig, axes = plt.subplots(1, len(keys) + 1, figsize=(3.2 * (len(keys) + 1), 3.2))
    grid = np.linspace(S_KAPPA, 2.0, 200)
    for ax, key in zip(axes, keys):
        for k in KINDS:
            values = np.concatenate([s[k] for s in pooled[key]["spectra"]])
            ax.hist(values, bins=24, range=(0.0, 2.4), density=True, histtype="step", label=LABELS[k])
        ax.plot(grid, LAW.pdf(grid), "k-", lw=1.5, label="replica.spectrum(0.5)")
        ax.set_title(f"{key[0].upper()}, d = {key[1]}")
        ax.set_xlabel("normalised singular value")
    axes[0].legend(fontsize=6)
    ax = axes[-1]
    for problem, style in (("op", "-"), ("dp", "--")):
        ds = [d for (q, d) in keys if q == problem]
        for k, color in zip(KINDS, ("C0", "C1", "C2", "C3")):
            ks = [law_distances(np.concatenate([s[k] for s in pooled[(problem, d)]["spectra"]]))[0] for d in ds]
            if ds:
                ax.plot(ds, ks, style, color=color, marker="o", label=f"KS {k} {problem.upper()}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("d")
    ax.set_ylabel("KS distance")
    ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(HERE / "rank_spectra.png", dpi=120)
    plt.close(fig)


def render(data, wall):
    """Write the page block and the figure from the saved records."""
    pooled = pooled_by_case(data["rows"])
    write_page(pooled, data["rows"], wall, complete=data["complete"])
    write_figure(pooled)


def _save(rows, complete):
    DATA.write_text(json.dumps({"seed": SEED, "kappa": KAPPA, "load": LOAD, "complete": complete, "rows": rows},
                               indent=1) + "\n")


def _arguments(parser) -> None:
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiply the instance counts (at least 1 each); default 1")


def _measure(job) -> int:
    if job.args.scale <= 0:
        print(f"{job.command}: --scale must be positive, got {job.args.scale}", file=sys.stderr)
        return 2
    set_threads(1)
    rows = []
    for problem, d, count, time_limit in PLAN:
        for t in range(max(1, int(round(count * job.args.scale)))):
            second = t < SECOND_STARTS.get((problem, d), 0)
            rows.append(measure_instance(problem, d, t, time_limit, second))
            print({k: v for k, v in rows[-1].items() if not k.startswith("sv_")}, flush=True)
        _save(rows, complete=False)
        render(json.loads(DATA.read_text()), job.elapsed())
    _save(rows, complete=True)
    job.record(DATA, seed=SEED, scale=job.args.scale)
    return 0


def _render(job) -> None:
    render(json.loads(DATA.read_text()), read_record(PROVENANCE)["wall_time_s"])


def main(argv=None) -> int:
    return run(__file__, __doc__, measure=_measure, render=_render, argv=argv, arguments=_arguments, seed=SEED)


if __name__ == "__main__":
    sys.exit(main())
