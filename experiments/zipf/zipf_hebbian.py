"""The Hebbian memories' Zipf error at N = 1000 facts, many instances, beside ``replica.zipf_error``.

For every dimension in ``DIMENSIONS``, Zipf exponent in ``EXPONENTS`` and ensemble in
``ENSEMBLES``, ``validation.zipf.measure_zipf(d, N, a, solvers=MEMORIES, trials=INSTANCES,
problem=PROBLEM, seed=SEED, settings=ZipfSettings(ensemble=...))`` (the library function
behind ``validation zipf``, whose default problem is ``op``: N facts with N distinct
outputs, every output competing) measures, on the same ``INSTANCES`` instances (seeds
``task_seed(SEED, N, t)``), the two Hebbian memories

* ``hebbian``: ``W = sum_mu u_mu e_mu^T`` (unweighted);
* ``hebbian_frequency``: ``W = sum_mu f_mu u_mu e_mu^T`` (frequency-weighted),

with ``f_mu = mu^-a / H_{N,a}`` and the error ``E = sum_mu f_mu 1{mu not recalled}`` (recall
checked in float64, ties fail).  The Hebbian W is the rule's own memory, so ``E`` of one
instance is exact and the mean over the instances, with its standard error, is a
measurement of the expected error; the interval is the normal (central-limit) 95 %
interval ``mean ± 1.96 s.e.``.  Beside each point, the theory of that memory,
``replica.zipf_error(d, ZipfFacts(N, a, weights=None or "frequency"), memory="hebbian",
ensemble=...)``, as it was at measurement time (for the page only; the scoreboard evaluates
the theory itself).

Writes ``experiments/zipf/zipf_hebbian.json`` (one record per (d, a, ensemble, weights)),
``zipf_hebbian.provenance.json``, the block ``zipf_hebbian`` of ``experiments/zipf/README.md``
and the figure ``zipf_hebbian.png``.  :func:`zipf_hebbian_points` gives the records as the
scoreboard's measured points.

Usage::

    OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python -m experiments.zipf.zipf_hebbian   # measure (one thread)
    python -m experiments.zipf.zipf_hebbian --render  # the page and figure from the committed data
"""

from __future__ import annotations

import json
import pathlib
import time

from experiments.pages import write_block
from experiments.provenance import read_record
from experiments.runner import run

N = 1000
DIMENSIONS = (16, 32, 64, 128)
EXPONENTS = (1.5, 2.0)
ENSEMBLES = ("gaussian", "sphere")
MEMORIES = ("hebbian", "hebbian_frequency")
WEIGHTS = {"hebbian": None, "hebbian_frequency": "frequency"}
PROBLEM = "op"   # the default of measure_zipf and of `validation zipf --problem`
INSTANCES = 1000
SEED = 20261207
Z975 = 1.959963984540054
INTERVAL = "normal 95 % interval of the mean, mean ± 1.96 s.e. (s.e. = sd / sqrt(n), ddof 1)"
HERE = pathlib.Path(__file__).resolve().parent
DATA, PROVENANCE = HERE / "zipf_hebbian.json", HERE / "zipf_hebbian.provenance.json"
PAGE, FIGURE = HERE / "README.md", HERE / "zipf_hebbian.png"
COMMAND = "python -m experiments.zipf.zipf_hebbian"


def measure_cell(d, a, ensemble, instances=INSTANCES, seed=SEED) -> list[dict]:
    """The records of both memories at one (d, a, ensemble), measured on ``instances`` instances."""
    import warnings

    import replica
    from validation.measurements.zipf import ZipfSettings, measure_zipf

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", replica.TheoryOffWarning)
        m = measure_zipf(d, N, a, solvers=MEMORIES, trials=instances, problem=PROBLEM, seed=seed,
                         settings=ZipfSettings(ensemble=ensemble))
    out = []
    for pt in m.points:
        if pt.status != "ok" or pt.failures:
            raise RuntimeError(f"d={d} a={a} {ensemble} {pt.solver}: {pt.message}")
        half = Z975 * pt.stderr
        out.append({"d": d, "N": N, "a": a, "ensemble": ensemble, "problem": m.problem, "memory": "hebbian",
                    "solver": pt.solver, "weights": WEIGHTS[pt.solver], "instances": pt.trials, "seed": m.seed,
                    "mean": pt.error, "stderr": pt.stderr, "low": pt.error - half, "high": pt.error + half,
                    "recalled_mean": pt.recalled, "theory": pt.theory, "theory_source": pt.theory_source,
                    "cell_seconds": round(m.seconds, 2)})
    return out


def measure(instances=INSTANCES, seed=SEED) -> dict:
    """Every record, with the settings of the run."""
    from validation.solvers import set_threads

    set_threads(1)
    records = []
    for ensemble in ENSEMBLES:
        for a in EXPONENTS:
            for d in DIMENSIONS:
                cell = measure_cell(d, a, ensemble, instances, seed)
                records += cell
                print(f"{ensemble} a={a:g} d={d}: " + "; ".join(
                    f"{r['solver']} {r['mean']:.4f} ± {r['stderr']:.4f} (theory {r['theory']:.4f})" for r in cell)
                    + f"; {cell[0]['cell_seconds']:.0f} s", flush=True)
    return {"N": N, "problem": PROBLEM, "seed": seed, "instances": instances,
            "instance_seeds": "validation.sweep.task_seed(seed, N, t), t = 0 .. instances - 1 (same instances "
                              "for both memories)",
            "interval": INTERVAL, "records": records}


def read_data(path=DATA) -> dict:
    """The committed data."""
    return json.loads(pathlib.Path(path).read_text())


_WORDS = {None: "unweighted", "frequency": "frequency-weighted"}


def zipf_hebbian_points(path=DATA) -> list[dict]:
    """The committed records as the scoreboard's measured points (quantity ``zipf_error``), one per record."""
    out = []
    for r in read_data(path)["records"]:
        params = {"d": int(r["d"]), "N": int(r["N"]), "a": float(r["a"]), "memory": "hebbian"}
        if r["weights"] is not None:
            params["weights"] = r["weights"]
        if r["ensemble"] != "gaussian":
            params["ensemble"] = r["ensemble"]
        params["problem"] = r["problem"]
        mean, low, high, n = float(r["mean"]), float(r["low"]), float(r["high"]), int(r["instances"])
        out.append({"quantity": "zipf_error", "experiment": "experiments/zipf",
                    "regime": f"Hebbian memory, N = {r['N']}, {_WORDS[r['weights']]}, {r['ensemble']}",
                    "params": params, "kind": "interval", "measured": mean, "low": low, "high": high, "trials": n,
                    "measured_text": f"{mean:.3f} [{low:.3f}, {high:.3f}] (mean, 95 % normal interval, n = {n})",
                    "error_kind": "absolute"})
    return out


def page_block(data, record) -> list[str]:
    """The generated block ``zipf_hebbian`` from the data and its provenance record."""
    recs = data["records"]
    ns = sorted({r["instances"] for r in recs})
    cells = len(recs) // len(MEMORIES)
    per = record["cpu_time_s"] / (cells * data["instances"])
    out = [
        f"Produced by `{record['command']}` in {record['wall_time_s']:.0f} s wall time, {record['cpu_time_s']:.0f} s "
        f"CPU time (one process, one thread, on a shared machine; {1e3 * per:.0f} ms CPU per instance and "
        f"(d, a, ensemble), both memories) at code commit "
        f"`{record['code_commit']}`, seed {data['seed']}, data `experiments/zipf/zipf_hebbian.json`.  "
        f"N = {data['N']} facts, problem `{data['problem']}` (the default of `validation zipf`: N distinct outputs, "
        f"every output competes), {' or '.join(map(str, ns))} instances per (d, a, ensemble), the same instances "
        "for both memories (seeds `task_seed(seed, N, t)`), measured by `validation.zipf.measure_zipf`.  "
        "E = sum_mu f_mu 1{mu not recalled}, recall checked in float64; the Hebbian W is the rule's own, so each "
        "instance's E is exact and the mean over the instances measures the expected E.  Interval: "
        f"{data['interval']}.  Theory: `replica.zipf_error(d, ZipfFacts(N, a, weights), memory='hebbian', "
        "ensemble=...)` with its default model today (unweighted: `hebbian-finite-size`; frequency-weighted: "
        "`hebbian-conditional`, the heavy facts exact and the tail a Gaussian field), computed when the page is "
        "rendered, and as it was at measurement time (then the frequency-weighted memory had the "
        "independent-Gaussian model, today `model='hebbian-gaussian'`).  Difference: theory today - measured, and in "
        "units of the s.e.", "",
        "| d | a | ensemble | weights | measured E [95 % interval] (n) | s.e. | theory today (model) | "
        "difference | difference / s.e. | theory at measurement |",
        "|---|---|---|---|---|---|---|---|---|---|"]
    order = sorted(recs, key=lambda r: (r["weights"] is None, r["a"], r["ensemble"], r["d"]))
    for r in order:
        diff = r["now"] - r["mean"]
        out.append(f"| {r['d']} | {r['a']:g} | {r['ensemble']} | {_WORDS[r['weights']]} | {r['mean']:.4f} "
                   f"[{r['low']:.4f}, {r['high']:.4f}] ({r['instances']}) | {r['stderr']:.4f} | {r['now']:.4f} "
                   f"({r['now_model']}) | {diff:+.4f} | {_in_se(diff, r['stderr'])} | {r['theory']:.4f} |")
    out += ["", *_reading(recs)]
    return out


def _in_se(diff, stderr) -> str:
    """``diff / stderr`` as a table cell (``n/a`` when every instance gave the same E)."""
    return f"{diff / stderr:+.1f}" if stderr > 0 else "n/a"


def _reading(recs) -> list[str]:
    """Generated sentences: where the theory leaves the interval, and by how much."""
    lines = []
    for weights in ("frequency", None):
        at = [r for r in recs if r["weights"] == weights]
        outside = [r for r in at if not r["low"] <= r["now"] <= r["high"]]
        worst = max(at, key=lambda r: abs(r["now"] - r["mean"]))
        above = sum(r["now"] > r["high"] for r in at)
        below = sum(r["now"] < r["low"] for r in at)
        relative = max(abs(r["now"] / r["mean"] - 1.0) for r in at)
        ses = [r["stderr"] for r in at]
        lines.append(
            f"**{_WORDS[weights].capitalize()}.**  The theory lies outside the 95 % interval at {len(outside)} of "
            f"{len(at)} points ({above} above it, {below} below); the largest difference is "
            f"{worst['now'] - worst['mean']:+.4f} (d = {worst['d']}, a = {worst['a']:g}, {worst['ensemble']}: "
            f"theory {worst['now']:.4f}, measured {worst['mean']:.4f}); the largest relative difference is "
            f"{100 * relative:.1f} %.  Standard errors "
            f"{min(ses):.4f} to {max(ses):.4f}; {sum(s < 0.005 for s in ses)} of {len(at)} are below 0.005.")
        lines.append("")
    return lines[:-1]


def figure(data, path=FIGURE) -> None:
    """Measured E (mean, 95 % interval) against d beside the theory, one panel per (ensemble, a)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    recs = data["records"]
    fig, axes = plt.subplots(len(ENSEMBLES), len(EXPONENTS), figsize=(9, 7), sharex=True, sharey=True)
    for i, ensemble in enumerate(ENSEMBLES):
        for j, a in enumerate(EXPONENTS):
            ax = axes[i][j]
            for weights, color in ((None, "C0"), ("frequency", "C1")):
                at = sorted((r for r in recs if r["ensemble"] == ensemble and r["a"] == a and r["weights"] == weights),
                            key=lambda r: r["d"])
                d = [r["d"] for r in at]
                ax.errorbar(d, [r["mean"] for r in at], yerr=[[r["mean"] - r["low"] for r in at],
                                                              [r["high"] - r["mean"] for r in at]],
                            fmt="o", color=color, capsize=3, label=f"{_WORDS[weights]}, measured")
                ax.plot(d, [r["now"] for r in at], "--", color=color, label=f"{_WORDS[weights]}, theory")
                if weights is not None:
                    ax.plot(d, [r["theory"] for r in at], ":", color=color,
                            label=f"{_WORDS[weights]}, independent-Gaussian model")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_title(f"{ensemble}, a = {a:g}")
            ax.grid(True, which="both", alpha=0.3)
            if i == len(ENSEMBLES) - 1:
                ax.set_xlabel("d")
            if j == 0:
                ax.set_ylabel("E (Zipf-weighted error)")
    axes[0][0].legend(fontsize=8)
    fig.suptitle(f"Hebbian memories, N = {data['N']}, {data['problem'].upper()}: mean E with 95 % interval "
                 f"({data['instances']} instances); dashed: replica.zipf_error", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _arguments(parser) -> None:
    parser.add_argument("--instances", type=int, default=INSTANCES,
                        help="instances per (d, a, ensemble) (default %(default)s)")


def _measure(job) -> None:
    instances = job.args.instances
    cpu = time.process_time()
    data = measure(instances)
    DATA.write_text(json.dumps(data, indent=1, allow_nan=False) + "\n")
    cpu = time.process_time() - cpu
    solves = len(data["records"]) // len(MEMORIES) * instances
    job.record(DATA, seed=SEED, threads=1, instances=instances, cpu_time_s=round(cpu, 1),
               cpu_seconds_per_instance=round(cpu / solves, 4))


def with_current_theory(data) -> dict:
    """The data with each record's ``now`` and ``now_model``: ``replica.zipf_error`` of today's default model."""
    import warnings

    import replica

    records = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", replica.TheoryOffWarning)
        for r in data["records"]:
            t = replica.zipf_error(r["d"], replica.ZipfFacts(r["N"], r["a"], weights=r["weights"]), memory="hebbian",
                                   ensemble=r["ensemble"])
            records.append(dict(r, now=t.error, now_model=t.model))
    return dict(data, records=records)


def _render(job) -> None:
    data = with_current_theory(read_data())
    write_block(PAGE, "zipf_hebbian", page_block(data, read_record(PROVENANCE)), "zipf_hebbian")
    figure(data)


def main(argv=None) -> int:
    return run(__file__, __doc__, measure=_measure, render=_render, argv=argv, arguments=_arguments, seed=SEED)


if __name__ == "__main__":
    raise SystemExit(main())
