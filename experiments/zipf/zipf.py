"""Measured recall error of facts with Zipf frequencies against d, beside ``replica.zipf_error``.

Writes ``experiments/zipf/zipf.json`` (every measurement's ``to_dict``, the theory curves, the seed)
and its provenance record ``zipf.provenance.json`` (the command, the run time, the code commit and
the runs that added dimensions or solvers later), then renders ``experiments/zipf/README.md`` (the table) and
``experiments/zipf/zipf.png`` (E against d, log-log, one panel per Zipf exponent) from that file.
The measurement is :func:`validation.zipf.measure_zipf` at ``d`` in ``DIMENSIONS``, Zipf
exponents ``EXPONENTS`` and ``N = round(OVERLOAD * replica.capacity(d).p_c)`` facts (the
memory is over its all-stored capacity by the factor ``OVERLOAD`` at every d), ``TRIALS``
instances per (d, a) shared by the solvers.  Run in this process (one core).  See
``notes/zipf.md``.

Usage::

    python -m experiments.zipf.zipf               # measure (about 5 minutes on one core), write json, md and png
    python -m experiments.zipf.zipf --render      # re-render md and png from the committed experiments/zipf/zipf.json
    python -m experiments.zipf.zipf --add 128 --trials 4   # append more dimensions to the committed data
    python -m experiments.zipf.zipf --add-solver adam_frequency --adam-steps 1000   # more memories, same instances
    python -m experiments check zipf              # exit 1 if experiments/zipf/README.md is stale (run in CI)
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import time


from validation import ZipfSettings
from validation.figures import plot_zipf
from validation.solvers import set_threads
from validation.measurements.zipf import (ZIPF_LABELS, ZIPF_SOLVERS, ZIPF_THEORY, measure_zipf, overloaded_facts, slope_rows,
                            slope_text, zipf_frequencies, zipf_theory_curves)

from experiments.pages import demote_headings, write_block
from experiments.provenance import read_record
from experiments.runner import record_path, run

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
DATA, PROVENANCE = HERE / "zipf.json", HERE / "zipf.provenance.json"
LABELS = ZIPF_LABELS


def facts(d) -> int:
    """Number of facts at d: ``OVERLOAD`` times the all-stored capacity ``replica.capacity(d).p_c``."""
    return overloaded_facts(d, OVERLOAD)


def _commit() -> str:
    """The code commit, read when a measurement starts; ``+modified`` when tracked files differ from it."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=HERE, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=HERE,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+modified" if dirty else "")


def _measure_runs(dimensions, trials) -> list[dict]:
    """``measure_zipf(...).to_dict()`` at every (a, d), ``trials`` instances each."""
    runs = []
    for a in EXPONENTS:
        for d in dimensions:
            r = measure_zipf(d, facts(d), a, solvers=SOLVERS, trials=trials, problem=PROBLEM, seed=SEED,
                             settings=ZipfSettings(adam_steps=ADAM_STEPS, progress=False))
            runs.append(r.to_dict())
            print(f"a={a} d={d} N={r.N}: {r.seconds:.0f} s; "
                  + ", ".join(f"{pt.solver} {pt.error:.4g}" for pt in r.points), flush=True)
    return runs


def _theory_curves(dimensions) -> list[dict]:
    return zipf_theory_curves(sorted(set(CURVE_D) | {d for d in dimensions if d > max(CURVE_D)}), EXPONENTS, OVERLOAD)


def measure() -> dict:
    start, commit = time.perf_counter(), _commit()
    runs = _measure_runs(DIMENSIONS, TRIALS)
    return {"command": "python -m experiments.zipf.zipf", "commit": commit, "seed": SEED, "trials": TRIALS,
            "problem": PROBLEM, "overload": OVERLOAD, "adam_steps": ADAM_STEPS, "dimensions": list(DIMENSIONS),
            "exponents": list(EXPONENTS), "seconds": time.perf_counter() - start, "measurements": runs,
            "theory_curves": _theory_curves(DIMENSIONS)}


RUN_KEYS = {"command": "command", "commit": "code_commit", "seconds": "wall_time_s",
            "extensions": "extensions", "solver_extensions": "solver_extensions"}
"""Keys of a measurement's dict that describe the run, not the data: they go into ``zipf.provenance.json``
(under the record's own names), the rest into ``zipf.json``."""


def split(full: dict) -> tuple[dict, dict]:
    """``(data, record fields)`` of a measurement's dict (see ``RUN_KEYS``)."""
    data = {k: v for k, v in full.items() if k not in RUN_KEYS}
    return data, {RUN_KEYS[k]: full[k] for k in RUN_KEYS if k in full}


def joined(data: dict, record: dict) -> dict:
    """The committed data with the run's fields read back from its provenance record (what the page shows)."""
    return {**data, **{k: record[r] for k, r in RUN_KEYS.items() if r in record}}


def read_data(path: pathlib.Path = None) -> dict:
    """``zipf.json`` joined with its record ``zipf.provenance.json``."""
    path = DATA if path is None else path
    return joined(json.loads(path.read_text()), read_record(record_path(path)))


def extend(data, dimensions, trials) -> dict:
    """``data`` with measurements at more dimensions (``trials`` instances each) appended.

    The committed measurements are kept as they are; the extension's command, commit,
    trial count and run time are recorded under ``"extensions"``.
    """
    dimensions = [int(d) for d in dimensions if int(d) not in data["dimensions"]]
    if not dimensions:
        raise SystemExit("experiments/zipf/zipf.py --add: every dimension given is measured already")
    start, commit = time.perf_counter(), _commit()
    runs = _measure_runs(dimensions, trials)
    out = dict(data)
    out["measurements"] = sorted(data["measurements"] + runs, key=lambda m: (m["a"], m["d"]))
    out["dimensions"] = sorted(data["dimensions"] + dimensions)
    out["theory_curves"] = _theory_curves(out["dimensions"])
    out["extensions"] = data.get("extensions", []) + [
        {"command": f"python -m experiments.zipf.zipf --add {' '.join(map(str, dimensions))} --trials {trials}",
         "commit": commit, "dimensions": dimensions, "trials": trials,
         "seconds": time.perf_counter() - start}]
    return out


def add_solvers(data, solvers, adam_steps) -> dict:
    """``data`` with the points of more ``solvers`` measured on the committed instances.

    Every measurement keeps its d, N, exponent and instance count, so the seeds
    ``task_seed(SEED, N, t)`` build the same instances; the new points are appended to its
    ``points`` and the run (command, commit, Adam steps, seconds) is recorded under
    ``"solver_extensions"``.
    """
    solvers = [s for s in solvers if not any(pt["solver"] == s for m in data["measurements"] for pt in m["points"])]
    if not solvers:
        raise SystemExit("experiments/zipf/zipf.py --add-solver: every solver given is measured already")
    start, commit = time.perf_counter(), _commit()
    out = dict(data)
    out["measurements"] = []
    for m in data["measurements"]:
        r = measure_zipf(m["d"], m["N"], m["a"], solvers=solvers, trials=m["trials"], problem=m["problem"],
                         seed=m["seed"], settings=ZipfSettings(adam_steps=adam_steps, progress=False))
        out["measurements"].append({**m, "points": m["points"] + [pt.to_dict() for pt in r.points]})
        print(f"a={m['a']} d={m['d']} N={m['N']}: {r.seconds:.0f} s; "
              + ", ".join(f"{pt.solver} {pt.error:.4g}" for pt in r.points), flush=True)
    out["solver_extensions"] = data.get("solver_extensions", []) + [
        {"command": f"python -m experiments.zipf.zipf --add-solver {' '.join(solvers)} --adam-steps {adam_steps}",
         "commit": commit, "solvers": solvers, "adam_steps": adam_steps,
         "seconds": time.perf_counter() - start}]
    return out


def _fmt(pt) -> str:
    return f"{pt['error']:.4f} ± {pt['stderr']:.4f} ({pt['trials']})"


def _extension_text(data) -> str:
    """The dimensions added later by ``--add``, with their instance counts, commits and run times."""
    return "".join(f" (d = {', '.join(map(str, e['dimensions']))}: {e['trials']} instances, added by `{e['command']}` "
                   f"in {e['seconds']:.0f} s at code commit `{e['commit'][:10]}`)" for e in data.get("extensions", []))


def _adam_steps(data, solver) -> int:
    """The Adam step budget of ``solver``'s points: the main run's, or that of the run that added them."""
    for e in data.get("solver_extensions", []):
        if solver in e["solvers"]:
            return e["adam_steps"]
    return data["adam_steps"]


def _solver_extension_text(data) -> str:
    return "".join(f"  The {', '.join(LABELS[s] for s in e['solvers'])} points were added on the same instances by "
                   f"`{e['command']}` in {e['seconds']:.0f} s at code commit `{e['commit'][:10]}`."
                   for e in data.get("solver_extensions", []))


def _measured(data) -> list:
    """The solvers measured, in the package's order."""
    present = {pt["solver"] for m in data["measurements"] for pt in m["points"]}
    return [s for s in ZIPF_SOLVERS if s in present]


def _budget_text(data, solver) -> str:
    ended = sum(pt["budget_ended"] for m in data["measurements"] for pt in m["points"] if pt["solver"] == solver)
    total = sum(pt["trials"] for m in data["measurements"] for pt in m["points"] if pt["solver"] == solver)
    return f"{LABELS[solver]} ended on its step budget in {ended} of {total} solves (their W is measured)."


def markdown(data) -> str:
    solvers = _measured(data)
    with_theory = [s for s in solvers if s in ZIPF_THEORY]
    lines = [
        "# Facts with Zipf frequencies: measured recall error against d, beside `replica.zipf_error`",
        "",
        f"Produced by `{data['command']}` in {data['seconds']:.0f} s (one process, one thread), code commit "
        f"`{data['commit'][:10]}`, seed {data['seed']}, data in `experiments/zipf/zipf.json`.  **{data['trials']} instances** "
        f"per (d, a){_extension_text(data)}, problem `{data['problem']}` (N facts with N distinct outputs), "
        "instance seeds "
        "`task_seed(seed, N, trial)`, the same instances for every solver." + _solver_extension_text(data)
        + "  Few instances keep the run short: "
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
        f"* **Adam-CE**: Adam on the unweighted softmax cross-entropy, {_adam_steps(data, 'adam')} steps from W = 0.  "
        "Above capacity the cross-entropy has no minimiser that recalls every fact, so the run always ends on its "
        "budget; the unweighted loss treats the rare facts as the frequent ones, and its minimiser recalls few "
        "facts of either kind.  An upper bound on the best error, no theory.",
    ]
    if "adam_frequency" in solvers:
        lines.append(f"* **Adam-CE, f-weighted**: Adam on the frequency-weighted cross-entropy sum_mu f_mu CE_mu "
                     f"(`options={{'weighted': True}}`: the expected loss of queries drawn from the Zipf law, as a "
                     f"model trained on Zipf samples sees it), {_adam_steps(data, 'adam_frequency')} steps from "
                     "W = 0.  An upper bound on the best error, no theory.")
    lines += [
        "* Theory: `replica.zipf_error(d, ZipfFacts(N, a))` (optimal: the replica-symmetric knapsack, "
        "`notes/zipf.md` section 2), `memory='hebbian'` (finite-size model) and `weights='frequency'` "
        "(Gaussian model, section 3).",
        "",
        "| a | d | N | " + " | ".join(f"{LABELS[s]} | theory" if s in with_theory else LABELS[s] for s in solvers)
        + " |",
        "|---|---|---|" + "---|" * (len(solvers) + len(with_theory)),
    ]
    for m in data["measurements"]:
        pts = {pt["solver"]: pt for pt in m["points"]}
        cells = []
        for s in solvers:
            cells.append(_fmt(pts[s]))
            if s in with_theory:
                cells.append(f"{pts[s]['theory']:.4f}")
        lines.append(f"| {m['a']:g} | {m['d']} | {m['N']} | " + " | ".join(cells) + " |")
    lines += _hebbian_check(data)
    lines += ["", "Fitted log-log slopes d ln E / d ln d (least squares over the measured d; theory: the same fit "
              "to `replica.zipf_error` at the same d and N; asymptotic: `notes/zipf.md` section 4, for N fixed "
              "and large):", "",
              "| a | memory | measured slope | theory slope (same d, N) | asymptotic exponent |",
              "|---|---|---|---|---|"]
    for row in slope_rows(data["measurements"]):
        lines.append(f"| {row['a']:g} | {row['label']} | {slope_text(row['measured'])} | "
                     f"{slope_text(row['theory'])} | {_asymptotic_text(row)} |")
    lines += ["", " ".join(_budget_text(data, s) for s in solvers if s not in ZIPF_THEORY)
              + "  Statuses of the measurements: " + ", ".join(sorted({m["status"] for m in data["measurements"]}))
              + ".", ""]
    return "\n".join(lines)


def _hebbian_check(data) -> list:
    """The unweighted Hebbian memory's recalled fraction beside the theory's accuracy, and why E scatters."""
    rows = {}
    for m in data["measurements"]:
        pt = next((pt for pt in m["points"] if pt["solver"] == "hebbian"), None)
        if pt is not None:
            rows.setdefault((m["d"], m["N"], pt["trials"]), (pt["recalled"] / m["N"], 1.0 - pt["theory"]))
    if not rows:
        return []
    top = ", ".join(f"{f[0]:.2f} at a = {a:g}" for a in data["exponents"]
                    for f in [zipf_frequencies(facts(min(data["dimensions"])), a)])
    lines = ["", "**The unweighted Hebbian memory.**  Its W does not depend on the frequencies, so every fact is "
             "recalled with the same probability and E has the expectation 1 - `replica.hebbian_accuracy` at every a. "
             "One instance's E is dominated by the 0/1 outcome of the few most frequent facts (the first has "
             f"f_1 = {top} at the smallest d), so with a handful of instances the mean E scatters far more than its "
             "standard error says (when no instance recalls the first fact, the sample spread is small).  The "
             "recalled fraction counts every fact alike and is the sharper check; the instances are the same at "
             "both exponents (their seeds depend on the seed, N and the instance only):", "",
             "| d | N | instances | recalled fraction (measured) | binomial s.e. "
             "| theory (1 - E of replica.zipf_error) | difference / s.e. |",
             "|---|---|---|---|---|---|---|"]
    for (d, n, k), (frac, theory) in sorted(rows.items()):
        se = (theory * (1.0 - theory) / (n * k)) ** 0.5
        lines.append(f"| {d} | {n} | {k} | {frac:.4f} | {se:.4f} | {theory:.4f} | {(frac - theory) / se:+.1f} |")
    lines += ["", "The binomial s.e. `sqrt(q (1 - q) / (N n))` at the theory's q treats the N n facts as independent; "
              "the facts of one instance share W, so it is a lower bound on the real standard error (the data keep "
              "only the mean count per point, not its spread between instances)."]
    return lines


def _asymptotic_text(row) -> str:
    """The asymptotic-exponent cell of a slope row."""
    if row["solver"] == "hebbian":
        return "none (E → 1 when N ln N > d²/2)"
    if row["theory"] is None:
        return "no theory"
    return slope_text(row["asymptotic"])


def figure(data, path) -> None:
    counts = sorted({m["trials"] for m in data["measurements"]})
    plot_zipf(data["measurements"], data["theory_curves"], path,
              title=f"Zipf recall error, N = {data['overload']:g} p_c(d): {' or '.join(map(str, counts))} instances "
                    "per point (mean ± s.e.); lines: replica.zipf_error")


def _arguments(parser) -> None:
    parser.add_argument("--add", type=int, nargs="+", metavar="D",
                        help="measure these dimensions too and append them to the committed experiments/zipf/zipf.json")
    parser.add_argument("--trials", type=int, default=TRIALS, help="instances per point of --add")
    parser.add_argument("--add-solver", nargs="+", metavar="S", choices=("adam_frequency",),
                        help="measure these solvers on the committed instances and append their points")
    parser.add_argument("--adam-steps", type=int, default=ADAM_STEPS, help="Adam steps of --add-solver")


def _measure(job) -> None:
    args = job.args
    set_threads(1)
    if args.add or args.add_solver:
        full = read_data()
        if args.add:
            full = extend(full, args.add, args.trials)
        if args.add_solver:
            full = add_solvers(full, args.add_solver, args.adam_steps)
        data, fields = split(full)
        record = {**read_record(PROVENANCE), **fields}   # the main run's record, with the runs that added to it
        PROVENANCE.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        job.recorded.add(PROVENANCE)
    else:
        data, fields = split(measure())
        job.record(DATA, seed=SEED, seconds=fields["wall_time_s"], run_commit=fields["code_commit"])
    DATA.write_text(json.dumps(data, indent=1, allow_nan=False) + "\n")


def _render(job) -> None:
    data = read_data()
    text = markdown(data)
    write_block(HERE / "README.md", "zipf", demote_headings(text), "zipf")
    figure(data, HERE / "zipf.png")
    print(text)


def main(argv=None) -> int:
    return run(__file__, __doc__, measure=_measure, render=_render, argv=argv, arguments=_arguments, seed=SEED)


if __name__ == "__main__":
    raise SystemExit(main())
