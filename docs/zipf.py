"""Measured recall error of facts with Zipf frequencies against d, beside ``replica.zipf_error``.

Writes ``docs/zipf.json`` (every measurement's ``to_dict``, the theory curves, the seed,
the run time and the code commit), then renders ``docs/zipf.md`` (the table) and
``docs/zipf.png`` (E against d, log-log, one panel per Zipf exponent) from that file.
The measurement is :func:`validation.zipf.measure_zipf` at ``d`` in ``DIMENSIONS``, Zipf
exponents ``EXPONENTS`` and ``N = round(OVERLOAD * replica.capacity(d).p_c)`` facts (the
memory is over its all-stored capacity by the factor ``OVERLOAD`` at every d), ``TRIALS``
instances per (d, a) shared by the solvers.  Run in this process (one core).  See
``notes/zipf.md``.

Usage::

    python docs/zipf.py               # measure (about 5 minutes on one core), write json, md and png
    python docs/zipf.py --from-data   # re-render md and png from the committed docs/zipf.json
    python docs/zipf.py --add 128 --trials 4   # append more dimensions to the committed data
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import time

import numpy as np

import replica
from validation.solvers import set_threads
from validation.zipf import measure_zipf, theory_zipf_error

DIMENSIONS = (16, 32, 64)
EXPONENTS = (1.5, 2.0)
OVERLOAD = 2.0
TRIALS = 6
SOLVERS = ("optimal", "hebbian", "hebbian_frequency", "adam")
ADAM_STEPS = 300
SEED = 0
PROBLEM = "op"
CURVE_D = (16, 20, 24, 28, 32, 40, 48, 56, 64)  # theory curves of the figure
HERE = pathlib.Path(__file__).resolve().parent
DATA = HERE / "zipf.json"
LABELS = {"optimal": "optimal, weighted give-up (upper bound on the best E)", "hebbian": "Hebbian",
          "hebbian_frequency": "Hebbian, w = f", "adam": "Adam-CE"}


def facts(d) -> int:
    """Number of facts at d: ``OVERLOAD`` times the all-stored capacity ``replica.capacity(d).p_c``."""
    return int(round(OVERLOAD * replica.capacity(d).p_c))


def predicted_exponent(solver, a):
    """Asymptotic exponent of d in E (``notes/zipf.md``, sections 4-5), or None (no power law / no theory)."""
    if solver == "optimal":
        return -2.0 * (a - 1.0)
    if solver == "hebbian_frequency":
        return -(a - 1.0) / (2.0 * a)
    return None


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=HERE, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _measure_runs(dimensions, trials) -> list[dict]:
    """``measure_zipf(...).to_dict()`` at every (a, d), ``trials`` instances each."""
    runs = []
    for a in EXPONENTS:
        for d in dimensions:
            r = measure_zipf(d, facts(d), a, solvers=SOLVERS, trials=trials, problem=PROBLEM, seed=SEED,
                             adam_steps=ADAM_STEPS, progress=False)
            runs.append(r.to_dict())
            print(f"a={a} d={d} N={r.N}: {r.seconds:.0f} s; "
                  + ", ".join(f"{pt.solver} {pt.error:.4g}" for pt in r.points), flush=True)
    return runs


def _theory_curves(dimensions) -> list[dict]:
    curve_d = sorted(set(CURVE_D) | {d for d in dimensions if d > max(CURVE_D)})
    curves = []
    for a in EXPONENTS:
        for solver in ("optimal", "hebbian", "hebbian_frequency"):
            values = [theory_zipf_error(d, facts(d), a, solver)[0] for d in curve_d]
            curves.append({"a": a, "solver": solver, "d": curve_d, "N": [facts(d) for d in curve_d],
                           "error": values})
    return curves


def measure() -> dict:
    start = time.perf_counter()
    runs = _measure_runs(DIMENSIONS, TRIALS)
    return {"command": "python docs/zipf.py", "commit": _commit(), "seed": SEED, "trials": TRIALS,
            "problem": PROBLEM, "overload": OVERLOAD, "adam_steps": ADAM_STEPS, "dimensions": list(DIMENSIONS),
            "exponents": list(EXPONENTS), "seconds": time.perf_counter() - start, "measurements": runs,
            "theory_curves": _theory_curves(DIMENSIONS)}


def extend(data, dimensions, trials) -> dict:
    """``data`` with measurements at more dimensions (``trials`` instances each) appended.

    The committed measurements are kept as they are; the extension's command, commit,
    trial count and run time are recorded under ``"extensions"``.
    """
    dimensions = [int(d) for d in dimensions if int(d) not in data["dimensions"]]
    if not dimensions:
        raise SystemExit("docs/zipf.py --add: every dimension given is measured already")
    start = time.perf_counter()
    runs = _measure_runs(dimensions, trials)
    out = dict(data)
    out["measurements"] = sorted(data["measurements"] + runs, key=lambda m: (m["a"], m["d"]))
    out["dimensions"] = sorted(data["dimensions"] + dimensions)
    out["theory_curves"] = _theory_curves(out["dimensions"])
    out["extensions"] = data.get("extensions", []) + [
        {"command": f"python docs/zipf.py --add {' '.join(map(str, dimensions))} --trials {trials}",
         "commit": _commit(), "dimensions": dimensions, "trials": trials,
         "seconds": time.perf_counter() - start}]
    return out


def _series(data, a, solver):
    """(d, error, stderr, point dicts) of one measured series, in increasing d."""
    pts = [(m["d"], pt) for m in data["measurements"] if m["a"] == a for pt in m["points"] if pt["solver"] == solver]
    pts.sort(key=lambda x: x[0])
    return (np.array([d for d, _ in pts], dtype=float), np.array([pt["error"] for _, pt in pts], dtype=float),
            np.array([pt["stderr"] for _, pt in pts], dtype=float), [pt for _, pt in pts])


def fitted_slope(d, e):
    """Least-squares slope of ln E against ln d over the points with E > 0 (None with fewer than 2)."""
    keep = e > 0
    if keep.sum() < 2:
        return None
    return float(np.polyfit(np.log(d[keep]), np.log(e[keep]), 1)[0])


def _theory_slope(data, a, solver):
    """Slope of the theory at the measured d (same N), least squares in log-log."""
    d = np.array(data["dimensions"], dtype=float)
    e = np.array([_theory(data, a, solver, int(x)) for x in d])
    return fitted_slope(d, e)


def _theory(data, a, solver, d):
    for m in data["measurements"]:
        if m["a"] == a and m["d"] == d:
            for pt in m["points"]:
                if pt["solver"] == solver:
                    return pt["theory"]
    return None


def _fmt(pt) -> str:
    return f"{pt['error']:.4f} ± {pt['stderr']:.4f} ({pt['trials']})"


def _slope_text(s) -> str:
    return "n/a" if s is None else f"{s:+.2f}"


def _extension_text(data) -> str:
    """The dimensions added later by ``--add``, with their instance counts, commits and run times."""
    return "".join(f" (d = {', '.join(map(str, e['dimensions']))}: {e['trials']} instances, added by `{e['command']}` "
                   f"in {e['seconds']:.0f} s at code commit `{e['commit'][:10]}`)" for e in data.get("extensions", []))


def markdown(data) -> str:
    lines = [
        "# Facts with Zipf frequencies: measured recall error against d, beside `replica.zipf_error`",
        "",
        f"Produced by `{data['command']}` in {data['seconds']:.0f} s (one process, one thread), code commit "
        f"`{data['commit'][:10]}`, seed {data['seed']}, data in `docs/zipf.json`.  **{data['trials']} instances** "
        f"per (d, a){_extension_text(data)}, problem `{data['problem']}` (N facts with N distinct outputs), "
        "instance seeds "
        "`task_seed(seed, N, trial)`, the same instances for every solver.  Few instances keep the run short: "
        "the standard errors are large, and the slopes below are least-squares fits to the few measured d.",
        "",
        f"N = round({data['overload']:g} × `replica.capacity(d).p_c`) at every d: the memory is over its all-stored "
        "capacity by the same factor at every d (a fixed N would be far over capacity at d = 16 and make the "
        "give-up search slow there, and under capacity at d = 128).  Frequencies f_mu = mu^-a / H_{N,a}; "
        "E = sum_mu f_mu 1{mu not recalled}, recall checked in float64; each cell is the mean of E over the "
        "instances ± its standard error sd / sqrt(n) (n in brackets).",
        "",
        "* **optimal (give-up)**: the weighted give-up search of the optimal solver "
        "(`solve(..., 'optimal', options={'give_up': True})` on `make_instance(..., weights=f)`: the largest "
        "squared hinge per unit of frequency given up first).  Its recalled mass is a **lower bound on the best "
        "recalled mass**, so its E is an **upper bound on the error of the best memory**.",
        "* **Hebbian**: W = sum_mu u_mu e_mu^T (the error of this memory).  **Hebbian w = f**: "
        "W = sum_mu f_mu u_mu e_mu^T.",
        f"* **Adam-CE**: Adam on the unweighted softmax cross-entropy, {data['adam_steps']} steps from W = 0 "
        "(a small budget; the error of the trained W, an upper bound on the best error).",
        "* Theory: `replica.zipf_error(d, N, a)` (optimal: the replica-symmetric knapsack, "
        "`notes/zipf.md` section 2), `memory='hebbian'` (finite-size model) and `weights='frequency'` "
        "(Gaussian model, section 3).",
        "",
        "| a | d | N | optimal give-up (upper bound on best E) | theory optimal | Hebbian | theory Hebbian "
        "| Hebbian w = f | theory w = f | Adam-CE |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for m in data["measurements"]:
        pts = {pt["solver"]: pt for pt in m["points"]}
        lines.append(f"| {m['a']:g} | {m['d']} | {m['N']} | {_fmt(pts['optimal'])} | {pts['optimal']['theory']:.4f} | "
                     f"{_fmt(pts['hebbian'])} | {pts['hebbian']['theory']:.4f} | {_fmt(pts['hebbian_frequency'])} | "
                     f"{pts['hebbian_frequency']['theory']:.4f} | {_fmt(pts['adam'])} |")
    lines += ["", "Fitted log-log slopes d ln E / d ln d (least squares over the measured d; theory: the same fit "
              "to `replica.zipf_error` at the same d and N; asymptotic: `notes/zipf.md` section 4, for N fixed "
              "and large):", "",
              "| a | memory | measured slope | theory slope (same d, N) | asymptotic exponent |",
              "|---|---|---|---|---|"]
    for a in data["exponents"]:
        for solver in SOLVERS:
            d, e, _, _ = _series(data, a, solver)
            pred = predicted_exponent(solver, a)
            theory = _theory_slope(data, a, solver) if solver != "adam" else None
            asym = {"hebbian": "none (E → 1 when N ln N > d²/2)", "adam": "no theory"}.get(
                solver, _slope_text(pred))
            lines.append(f"| {a:g} | {LABELS[solver]} | {_slope_text(fitted_slope(d, e))} | "
                         f"{_slope_text(theory)} | {asym} |")
    ended = sum(pt["budget_ended"] for m in data["measurements"] for pt in m["points"] if pt["solver"] == "adam")
    total = sum(pt["trials"] for m in data["measurements"] for pt in m["points"] if pt["solver"] == "adam")
    lines += ["", f"Adam ended on its step budget in {ended} of {total} solves (their W is measured).  "
              "Statuses of the measurements: " + ", ".join(sorted({m["status"] for m in data["measurements"]})) + ".",
              ""]
    return "\n".join(lines)


def figure(data, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = {"optimal": "C0", "hebbian": "C1", "hebbian_frequency": "C2", "adam": "C3"}
    markers = {"optimal": "o", "hebbian": "s", "hebbian_frequency": "^", "adam": "x"}
    fig, axes = plt.subplots(1, len(data["exponents"]), figsize=(11, 4.6), sharey=True)
    for ax, a in zip(np.atleast_1d(axes), data["exponents"]):
        for c in data["theory_curves"]:
            if c["a"] == a:
                ax.plot(c["d"], c["error"], color=colours[c["solver"]], lw=1.1, alpha=0.8)
        for solver in SOLVERS:
            d, e, se, _ = _series(data, a, solver)
            pred = predicted_exponent(solver, a)
            label = f"{LABELS[solver]}: slope {_slope_text(fitted_slope(d, e))}"
            label += f" (asymptotic {pred:+.2f})" if pred is not None else ""
            ok = e > 0
            ax.errorbar(d[ok], e[ok], yerr=np.minimum(se[ok], 0.999 * e[ok]), fmt=markers[solver], ms=5, capsize=2,
                        color=colours[solver], label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(data["dimensions"])
        ax.set_xticklabels([str(x) for x in data["dimensions"]])
        ax.set_xlabel("d")
        ax.set_title(f"a = {a:g}, N = {data['overload']:g} p_c(d)")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7, loc="lower left")
    np.atleast_1d(axes)[0].set_ylabel("E = mass of the facts not recalled")
    fig.suptitle(f"Zipf recall error: {data['trials']} instances per point (mean ± s.e.); lines: replica.zipf_error",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from-data", action="store_true", help="re-render from the committed docs/zipf.json")
    parser.add_argument("--add", type=int, nargs="+", metavar="D",
                        help="measure these dimensions too and append them to the committed docs/zipf.json")
    parser.add_argument("--trials", type=int, default=TRIALS, help="instances per point of --add")
    args = parser.parse_args(argv)
    if args.add:
        set_threads(1)
        data = extend(json.loads(DATA.read_text()), args.add, args.trials)
        DATA.write_text(json.dumps(data, indent=1, allow_nan=False) + "\n")
    elif not args.from_data:
        set_threads(1)
        data = measure()
        DATA.write_text(json.dumps(data, indent=1, allow_nan=False) + "\n")
    data = json.loads(DATA.read_text())
    (HERE / "zipf.md").write_text(markdown(data))
    figure(data, HERE / "zipf.png")
    print((HERE / "zipf.md").read_text())


if __name__ == "__main__":
    main()
