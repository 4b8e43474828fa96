"""``report.md`` of ``validation reproduce`` and the writing of every output.

:func:`write_outputs` draws the figures (:mod:`validation.reproduce.sections`: figures 1 to 8 and
the collapse view 1b),
writes the CSV tables (:mod:`validation.reproduce.tables`) and ``report.md``, whose text
is generated from the numbers.  See ``notes/reproduce.md``.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from .plan import scale_runs
from .sections import (figure_accuracy, figure_alpha_kappa, figure_alpha_vs_d, figure_collapse, figure_outputs,
                       figure_scores, figure_spectra, figure_success, figure_zipf, score_panels, spectra_panels)
from .tables import (ACCURACY_COLUMNS, GAP_COLUMNS, OUTPUTS_COLUMNS, ZIPF_COLUMNS, accuracy_rows, fmt, kappa_points,
                     outputs_rows, table_alpha_kappa, table_capacity, table_op_dp_gap, table_op_vs_dp,
                     table_success_curves, write_csv, zipf_rows)

__all__ = ["ReproduceData", "write_outputs"]


@dataclass(frozen=True)
class ReproduceData:
    """What a run measured, as :func:`write_outputs` reads it.

    Attributes
    ----------
    estimates : list of dict
        Capacity estimates (``CapacityEstimate.to_dict()`` with NaN for missing floats,
        and ``wall_s``), in the order of :func:`~validation.reproduce.plan.capacity_runs`.
    specs : list of tuple
        (problem, solver, kappa, ensemble, p) of the measurements
        (:func:`~validation.reproduce.plan.measurement_specs`).
    measurements : dict
        (problem, solver, kappa, p) -> records of :func:`~validation.reproduce.spectra_trial.measurement_trial`.
    theory : dict
        Theory curves of figures 2 and 3 (``alpha_d``, ``kappa``).
    accuracy : list of AccuracyCurve
    outputs : list of dict
        Capacity estimates with ``K`` distinct answers (key ``outputs``).
    zipf : dict or None
        The Zipf error measurements (``measurements``: ``ZipfMeasurement.to_dict()``
        dicts; ``theory_curves``), or None when the configuration has none.
    """

    estimates: list
    specs: list
    measurements: dict
    theory: dict
    accuracy: list
    outputs: list = ()
    zipf: dict | None = None


def write_outputs(out, config, data: ReproduceData, run=None) -> dict:
    """Draw the figures, write the CSV tables and ``report.md``; return their paths and the run record.

    ``data`` holds what the run measured (:class:`ReproduceData`).  ``run`` (optional)
    holds the wall times of the run (``stages``: name -> seconds, ``start``: its
    ``time.perf_counter()`` at the start, ``workers``: a description); the report
    states them, with the total up to the report's own writing (``total``, measured here
    unless ``run`` already has it, as a run read back by
    :func:`~validation.reproduce.saved.render_saved` does).  The returned ``"run"`` is
    that record with its ``total``.
    """
    estimates, meas_specs, measurements = data.estimates, data.specs, data.measurements
    theory, accuracy, outputs = data.theory, data.accuracy, data.outputs
    text = {}
    cap_table, cap_rows = table_capacity(out, estimates)
    tables = [cap_table, table_success_curves(out, estimates)]
    fig1, text["fig1"] = figure_success(out, estimates)
    fig1b, text["fig1b"] = figure_collapse(out, estimates)
    fig2, text["fig2"] = figure_alpha_vs_d(out, estimates, theory)
    kpoints = kappa_points(config, estimates)
    fig3, text["fig3"] = figure_alpha_kappa(out, config, theory, kpoints)
    tables.append(table_alpha_kappa(out, kpoints))
    spec_panels, moment_rows = spectra_panels(config, meas_specs, measurements)
    fig4, text["fig4"] = figure_spectra(out, spec_panels, moment_rows)
    tables.append(write_csv(os.path.join(out, "spectra_moments.csv"), moment_rows, list(moment_rows[0])))
    scores, score_rows = score_panels(config, meas_specs, measurements)
    fig5, text["fig5"] = figure_scores(out, scores, score_rows)
    tables.append(write_csv(os.path.join(out, "score_summary.csv"), score_rows,
                            list(score_rows[0]) if score_rows else []))
    cmp_table, cmp_rows = table_op_vs_dp(out, config, estimates, moment_rows, score_rows)
    tables.append(cmp_table)
    figs = {"fig1": fig1, "fig1b": fig1b, "fig2": fig2, "fig3": fig3, "fig4": fig4, "fig5": fig5}
    if accuracy:  # a configuration without accuracy curves has no figure 6
        acc_rows = accuracy_rows(accuracy)
        tables.append(write_csv(os.path.join(out, "accuracy.csv"), acc_rows, list(ACCURACY_COLUMNS)))
        figs["fig6"], text["fig6"] = figure_accuracy(out, config, accuracy, acc_rows)
    if outputs:  # nor one without K-answer estimates a figure 7
        out_rows = outputs_rows(outputs)
        tables.append(write_csv(os.path.join(out, "outputs.csv"), out_rows, list(OUTPUTS_COLUMNS)))
        figs["fig7"], text["fig7"] = figure_outputs(out, config, out_rows)
    if data.zipf:
        tables.append(write_csv(os.path.join(out, "zipf.csv"), zipf_rows(data.zipf["measurements"]),
                                list(ZIPF_COLUMNS)))
        figs["fig8"], text["fig8"] = figure_zipf(out, config, data.zipf)
    gap_table, gap_rows = table_op_dp_gap(out, config, cap_rows)
    tables.append(gap_table)
    if run is not None and "total" not in run:  # the run's wall time up to the report, as the report states it
        run = {**run, "total": time.perf_counter() - run["start"]}
    report = _write_report(out, config, figs, text, cmp_rows, cap_rows, gap_rows, run)
    return {"figures": list(figs.values()), "tables": tables, "report": report, "run": run}


def _md_table(rows, columns, digits=3):
    """``rows`` as a markdown table of ``columns`` (floats with ``digits`` decimals)."""
    head = "| " + " | ".join(columns) + " |\n|" + "---|" * len(columns) + "\n"
    body = ""
    for r in rows:
        cells = []
        for c in columns:
            v = r.get(c, "")
            cells.append(fmt(v, digits) if isinstance(v, float) else str(v))
        body += "| " + " | ".join(cells) + " |\n"
    return head + body


def _figure_sizes(config) -> list:
    """(figure, sizes) lines of the report: the d and counts behind every figure the configuration draws."""
    def dims(values):
        return ", ".join(f"{v:g}" for v in values) if values else "none"

    runs = scale_runs(config)
    cap = sorted(set(config.optimal_dims) | {d for _, d, _, _ in runs})
    scale = "; ".join(f"{prob.upper()} d = {d}: {t} trials per point, {r} refinement rounds, bracketing design"
                      for prob, d, t, r in runs)
    lines = [
        ("1, 2", f"optimal OP and DP at d = {dims(cap)} (largest {max(cap)}); Hebbian at d = "
                 f"{dims(config.hebbian_dims)}; {config.trials} trials per point and round at d <= "
                 f"{max(config.optimal_dims)}" + (f"; {scale}" if scale else "")),
        ("3", f"OP at d = {config.kappa_dim}, kappa = {dims(config.kappas)}, {config.rank_restarts} starts "
              "of the rank-m search"),
        ("4, 5", f"d = {config.spectra_dim}, {config.spectra_instances} instances per configuration"),
    ]
    if config.accuracy_dims or config.accuracy_optimal_dims or config.accuracy_adam_dims:
        lines.append(("6", f"Hebbian d = {dims(config.accuracy_dims)}; optimal d = "
                           f"{dims(config.accuracy_optimal_dims)}; Adam d = {dims(config.accuracy_adam_dims)}; "
                           f"{config.accuracy_trials} instances per load"))
    if config.outputs_grid:
        lines.append(("7", f"d = {config.outputs_dim}, K = {dims(config.outputs_grid)}"))
    if config.zipf_dims:
        lines.append(("8", f"d = {dims(config.zipf_dims)}, a = {dims(config.zipf_exponents)}, N = "
                           f"{config.zipf_overload:g} p_c(d) facts, {config.zipf_trials} instances per (d, a), OP"))
    return lines


def _run_section(config, run) -> str:
    """The report's account of the run: wall times and the sizes of every figure."""
    lines = ["## The run\n"]
    if run is not None:
        total = run["total"]
        figures = total - sum(run["stages"].values())
        lines.append(f"Wall time of this invocation: {total:.0f} s ({total / 60:.1f} min), executor: "
                     f"{run['workers']}. Trials already in `results.sqlite` are reused, so a resumed run "
                     "takes less.\n")
        lines.append("| stage | wall time (s) |\n|---|---|")
        lines += [f"| {name} | {sec:.0f} |" for name, sec in run["stages"].items()]
        lines.append(f"| figures, tables, report | {figures:.0f} |")
        lines.append("")
        if run.get("alongside"):
            seconds, runs = run["alongside"]
            names = ", ".join(f"{r[0].upper()} d = {r[2]}" for r in runs)
            lines.append(f"The large-d capacity estimates ({names}) ran in a second thread alongside the "
                         f"stages above, sharing the workers, and took {seconds:.0f} s; the main thread waited "
                         "for them in the stage so named. The estimates do not depend on this (every trial's "
                         "seed depends on its key only).\n")
    lines.append("| figure | sizes |\n|---|---|")
    lines += [f"| {fig} | {sizes} |" for fig, sizes in _figure_sizes(config)]
    return "\n".join(lines) + "\n\n"


def _write_report(out, config, figs, text, cmp_rows, cap_rows, gap_rows=(), run=None):
    """Write ``report.md``: the run, one section per figure, the OP-DP tables and every estimate.

    ``figs`` and ``text`` map the figure keys of ``names`` (``"fig1"``, ``"fig1b"``, ...,
    ``"fig8"``) to the figure's path and its paragraph; the key gives the section number.  A key
    missing from ``figs`` (figure 8 without Zipf measurements) has no section.
    """
    path = os.path.join(out, "report.md")
    names = {"fig1": "Success probability against load",
             "fig1b": "Collapse: success probability against p / p_c(d) of the finite-size theory",
             "fig2": "Capacity against 1/ln p",
             "fig3": "Rank-constrained capacity alpha_c(kappa)", "fig4": "Singular-value spectra",
             "fig5": "Score distributions, optimal against Hebbian", "fig6": "Recall accuracy against load",
             "fig7": "Capacity with K distinct answers",
             "fig8": "Facts with Zipf frequencies: error against d"}
    with open(path, "w") as fh:
        fh.write(f"# Theory against simulation ({config.name} run)\n\n")
        fh.write(f"Generated by `validation reproduce{' --quick' if config.name == 'quick' else ''}`; "
                 f"seed {config.seed}; {config.trials} trials per grid point and round; optimal solver "
                 f"`{config.optimal_solver}`; every trial is in `results.sqlite` "
                 "(`validation export --out DIR --format csv`).\n\n")
        fh.write(_run_section(config, run))
        for key, name in names.items():
            if key not in figs:
                continue
            number = key.removeprefix("fig")
            fh.write(f"## {number}. {name}\n\n![{name}]({os.path.basename(figs[key])})\n\n{text[key]}\n\n")
        if gap_rows:
            fh.write("## OP against DP capacity with d\n\n`op_minus_dp` = (OP p_c - DP p_c) / DP p_c; 95% "
                     "profile-likelihood intervals; theory: the finite-size p_c, the same for both problems; "
                     "`op_status` / `dp_status`: the fit status (`ok`; `unbracketed`: an end of the interval "
                     "was not found, the interval is not closed).\n\n")
            fh.write(_md_table(gap_rows, list(GAP_COLUMNS)) + "\n")
        fh.write(f"## OP against DP at d = {config.spectra_dim} near capacity\n\n")
        fh.write(_md_table(cmp_rows, list(cmp_rows[0])) + "\n")
        fh.write("## All capacity estimates\n\n")
        fh.write(_md_table(cap_rows, ["problem", "solver", "d", "kappa", "p_c", "p_c_low", "p_c_high",
                                      "theory_p_c", "rel_diff_p_c", "alpha", "theory_alpha", "status",
                                      "undecided", "errors", "trials", "wall_s"], digits=3) + "\n")
        fh.write("`wall_s`: wall time of the estimate in this invocation (seconds; trials reused from the "
                 "store cost almost nothing).\n")
    return path
