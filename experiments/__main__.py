"""``python -m experiments list | check [NAME ...] | run NAME``: list, check and rerun the experiments.

* ``list``: every experiment with its topic, expected wall time on 2 cores and whether
  its page can be rendered from the committed data;
* ``check``: render every page from its committed data (in place, then put back) and
  fail with a diff where the committed page differs; fail too where an experiment
  declares ``measures = [q]`` (its ``experiment.toml``) and ``q`` has no measurement of
  its folder in ``experiments/scoreboard/measurements.py`` or, for a quantity with a
  theory, no point of its folder on the scoreboard (the ``coverage`` of
  ``replica/common/validity_table.json``); exit 1 then, 0 when all agree;
* ``run NAME``: measure again and rewrite the data, figures and page (``--render``: only
  render from the committed data); arguments after ``--`` go to the script, for example
  ``python -m experiments run many_to_one -- 16``.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import subprocess
import sys
from pathlib import Path

from . import QUESTIONS, ROOT, Experiment, experiments, find, topics

TABLE = ROOT / "replica" / "common" / "validity_table.json"


def _environment(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(root), *filter(None, [env.get("PYTHONPATH")])])
    env.setdefault("MPLBACKEND", "Agg")
    return env


def _script(experiment: Experiment, args, root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", experiment.module, *args], cwd=root, env=_environment(root),
                          capture_output=True, text=True)


CSV_REL_TOL = 1e-12
"""Relative tolerance of a float cell of a rendered CSV table: sums and BLAS reductions of the
same data differ in their last bits between CPUs and kernels (docs/reproducibility.md); pages
and every other output are compared text for text."""


def same_table(old: str, new: str, rel_tol: float = CSV_REL_TOL) -> bool:
    """Whether two CSV texts hold the same cells, floats equal to ``rel_tol`` and everything else exactly."""
    import csv
    import io
    import math

    a, b = list(csv.reader(io.StringIO(old))), list(csv.reader(io.StringIO(new)))
    if len(a) != len(b) or any(len(x) != len(y) for x, y in zip(a, b)):
        return False
    for row_a, row_b in zip(a, b):
        for x, y in zip(row_a, row_b):
            if x == y:
                continue
            try:
                fx, fy = float(x), float(y)
            except ValueError:
                return False
            if not math.isclose(fx, fy, rel_tol=rel_tol, abs_tol=0.0):
                return False
    return True


def check(experiment: Experiment, root: Path = ROOT) -> tuple[bool, str]:
    """Render ``experiment`` from its committed data and compare the text it writes with the committed files.

    The files it writes are put back as they were whatever happens, so a check never
    changes the tree.

    Returns
    -------
    (bool, str)
        Whether every output equals the committed one, and a unified diff (or the
        script's error output) where not.
    """
    if experiment.render is None:
        raise ValueError(f"experiment {experiment.name!r} has no render mode")
    folder = experiment.folder(root)
    touched = [folder / p for p in (*experiment.outputs, *experiment.figures)]
    saved = {p: (p.read_bytes() if p.exists() else None) for p in touched}
    try:
        done = _script(experiment, experiment.render, root)
        if done.returncode != 0:
            return False, f"{experiment.module} {' '.join(experiment.render)} failed:\n{done.stderr[-4000:]}"
        diffs = []
        for rel in experiment.outputs:
            path = folder / rel
            old = (saved[path] or b"").decode()
            new = path.read_text() if path.exists() else ""
            if old != new and not (path.suffix == ".csv" and same_table(old, new)):
                name = os.path.relpath(path, root)
                diffs.append("".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                                          f"{name} (committed)", f"{name} (rendered)")))
        return not diffs, "\n".join(diffs)
    finally:
        for path, content in saved.items():
            if content is None:
                path.unlink(missing_ok=True)
            elif not path.exists() or path.read_bytes() != content:
                path.write_bytes(content)


def coverage_problems(table: Path = TABLE, chosen=None, points=None, root: Path = ROOT) -> list[str]:
    """What the declared ``measures`` of the experiments lack, one message per (experiment, quantity).

    A declared quantity fails when ``experiments.scoreboard.measurements.all_measurements``
    (or ``points``) has no measurement of it from the experiment's folder, and, for a
    quantity with a theory (``THEORY_QUANTITIES``), when the validity table ``table`` does
    not list the pair ``["experiments/<folder>", quantity]`` in its ``coverage`` (a table
    without that key covers nothing).

    Parameters
    ----------
    table : Path
        The validity table (``replica/common/validity_table.json``).
    chosen : list of Experiment, optional
        The experiments to check (default: all of ``root``).
    points : list of dict, optional
        The measurements (default: ``all_measurements()`` of the chosen experiments'
        folders, from the committed data; one message says so when they cannot be read).

    Returns
    -------
    list of str
        Empty when every declared pair is measured and on the scoreboard.
    """
    chosen = experiments(root) if chosen is None else chosen
    declared = [(e, q) for e in chosen for q in e.measures]
    if not declared:
        return []
    try:
        from .scoreboard.measurements import THEORY_QUANTITIES, all_measurements, coverage

        measured = coverage(all_measurements({e.topic for e in chosen}) if points is None else points)
    except (ImportError, OSError, KeyError, ValueError) as exc:
        return [f"the measurements of {', '.join(sorted({e.topic for e in chosen}))} cannot be read: "
                f"{type(exc).__name__}: {exc}"]
    data = json.loads(Path(table).read_text()) if Path(table).exists() else {}
    covered = {tuple(pair) for pair in data.get("coverage", [])}
    shown = os.path.relpath(table, root)
    problems = []
    for e, q in declared:
        folder = f"experiments/{e.topic}"
        if (folder, q) not in measured:
            problems.append(f"{e.topic}/{e.name}: declares measures {q!r}, but experiments/scoreboard/measurements.py "
                            f"has no {q!r} measurement from {folder}")
        if q in THEORY_QUANTITIES and (folder, q) not in covered:
            problems.append(f"{e.topic}/{e.name}: declares measures {q!r}, but {shown} has no {q!r} point from "
                            f"{folder} (not on the scoreboard)")
    return problems


def _list(root: Path) -> int:
    rows = [("topic", "experiment", "wall time (2 cores)", "render from data", "committed data")]
    for topic in topics(root):
        for e in topic.experiments:
            rendered = ("yes" if e.render is not None else f"by {e.checked_by}" if e.checked_by
                        else "no (measured page)")
            rows.append((topic.name, e.name, e.wall_time, rendered,
                         f"{len(e.data)} file(s)" if e.data else "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for i, row in enumerate(rows):
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))
    print(f"\n{len(rows) - 1} experiments in {len(topics(root))} topics; questions: "
          + "; ".join(QUESTIONS.values()))
    return 0


def _check(names, root: Path, table: Path = TABLE) -> int:
    chosen = [find(n, root) for n in names] if names else experiments(root)
    failed, unchecked, through = [], [], []
    for e in chosen:
        if e.checked_by:
            print(f"- {e.topic}/{e.name}: writes data only; rendered and checked by {e.checked_by}")
            through.append(e.name)
            continue
        if e.render is None:
            unchecked.append(e.name)
            print(f"- {e.topic}/{e.name}: not checked (no render mode: its page is written by the measurement)")
            continue
        ok, diff = check(e, root)
        print(f"{'ok' if ok else 'DIFFERS'} {e.topic}/{e.name}")
        if not ok:
            failed.append(e.name)
            print(diff)
    print(f"\n{len(chosen) - len(failed) - len(unchecked) - len(through)} agree with their committed data, "
          f"{len(failed)} differ, {len(through)} are checked through the experiment that renders their data, "
          f"{len(unchecked)} have no render mode")
    if failed:
        print("differ: " + ", ".join(failed) + " (python -m experiments run NAME --render rewrites them)",
              file=sys.stderr)
    problems = coverage_problems(table, chosen, root=root)
    declared = sum(len(e.measures) for e in chosen)
    print(f"\nmeasured quantities: {declared} declared (experiment, quantity) pairs, {len(problems)} problems")
    for line in problems:
        print(f"MISSING {line}")
    if problems:
        print(f"measures: {len(problems)} declared pairs are not measured or not on the scoreboard "
              "(python -m experiments run scoreboard)", file=sys.stderr)
    return 1 if failed or problems else 0


def _run(name: str, render_only: bool, extra, root: Path) -> int:
    e = find(name, root)
    args = e.render if render_only else e.run
    if args is None:
        print(f"experiments: {name} has no render mode; run it without --render to measure", file=sys.stderr)
        return 2
    if not render_only:
        print(f"{e.topic}/{e.name}: measuring (expected wall time on 2 cores: {e.wall_time})", flush=True)
    return subprocess.run([sys.executable, "-m", e.module, *args, *extra], cwd=root, env=_environment(root)).returncode


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser("list", help="list the experiments with their wall time")
    chk = sub.add_parser("check", help="render every page from its data and compare with the committed page")
    chk.add_argument("names", nargs="*", metavar="NAME", help="only these experiments")
    chk.add_argument("--table", type=Path, default=TABLE, metavar="PATH",
                     help="the validity table whose coverage the declared measures are checked against")
    run = sub.add_parser("run", help="measure one experiment again (or only render it)")
    run.add_argument("name", metavar="NAME")
    run.add_argument("--render", action="store_true", help="only render the page from the committed data")
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    args = parser.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    try:
        if args.command == "list":
            return _list(ROOT)
        if args.command == "check":
            return _check(args.names, ROOT, args.table)
        return _run(args.name, args.render, extra, ROOT)
    except ValueError as exc:
        print(f"experiments: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
