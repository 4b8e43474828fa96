"""``python -m experiments list | check [NAME ...] | run NAME | new NAME``: list, check, rerun and start experiments.

* ``list``: every experiment with its topic, expected wall time on 2 cores and whether
  its page can be rendered from the committed data;
* ``check``: render every page from its committed data (in place, then put back) and
  fail with a diff where the committed page differs or the render wrote a file of
  ``experiments/`` its ``experiment.toml`` does not declare as an output or figure; fail too where a file of an
  experiment folder is not declared in its ``experiment.toml``, where a declared data file
  has no provenance record beside it (``<name>.provenance.json``), where a declared path
  or a ``run``/``render`` argument points outside the repository, and where an experiment
  declares ``measures = [q]`` and ``q`` has no measurement of its folder in
  ``experiments/scoreboard/measurements.py`` or, for a quantity with a theory, no point of
  its folder on the scoreboard (the ``coverage`` of ``replica/common/validity_table.json``);
  exit 1 then, 0 when all agree;
* ``run NAME``: measure again and rewrite the data, their provenance records, figures and
  page (``--render``: only render from the committed data); arguments after ``--`` go to
  the script, for example ``python -m experiments run many_to_one -- 16``;
* ``new NAME``: write the skeleton of a new experiment (``experiments/NAME/NAME.py``
  through the runner, ``experiment.toml``, ``README.md`` with a generated block,
  ``tests/test_experiment_NAME.py``) and run its example measurement once.

Every script runs through :func:`experiments.runner.run`, so every one takes the same
options: none (measure, then render), ``--render`` (render from the committed data only),
``--out DIR`` (write into ``DIR`` and leave the folder as it was), then its own.  See
``docs/contributing.md``, "How to add an experiment".
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


_NOT_WATCHED = {"__pycache__", ".ipynb_checkpoints"}
_CACHE_SUFFIXES = (".nbi", ".nbc", ".pyc")


def _stamps(root: Path) -> dict[Path, int]:
    """Modification time (ns) of every file of ``experiments/`` but the code and caches.

    Files outside ``experiments/`` (the project ``README.md``, notes, the validity table) are
    written through ``Job.output``, which refuses an undeclared one; they are not watched
    here, since they are edited by hand too.
    """
    root = Path(root)
    watched = []
    for folder, dirs, files in os.walk(root / "experiments"):
        dirs[:] = [d for d in dirs if d not in _NOT_WATCHED]
        watched += [Path(folder) / name for name in files if not name.endswith((".py", *_CACHE_SUFFIXES))]
    out = {}
    for path in watched:
        try:
            out[path.resolve()] = path.stat().st_mtime_ns
        except OSError:
            continue
    return out


def check(experiment: Experiment, root: Path = ROOT) -> tuple[bool, str]:
    """Render ``experiment`` from its committed data and compare the text it writes with the committed files.

    The files it declares (outputs and figures) are put back as they were whatever happens,
    so a check never changes them; a file of ``experiments/`` it writes that its
    ``experiment.toml`` does not declare fails the check (a render writes only its declared
    outputs and figures).

    Returns
    -------
    (bool, str)
        Whether every output equals the committed one and nothing else was written, and a
        unified diff (or the script's error output, or the undeclared files) where not.
    """
    if experiment.render is None:
        raise ValueError(f"experiment {experiment.name!r} has no render mode")
    folder = experiment.folder(root)
    touched = [folder / p for p in (*experiment.outputs, *experiment.figures)]
    saved = {p: (p.read_bytes() if p.exists() else None) for p in touched}
    before = _stamps(root)
    try:
        done = _script(experiment, experiment.render, root)
        if done.returncode != 0:
            return False, f"{experiment.module} {' '.join(experiment.render)} failed:\n{done.stderr[-4000:]}"
        declared = {p.resolve() for p in touched}
        stray = sorted(os.path.relpath(p, Path(root).resolve()) for p, stamp in _stamps(root).items()
                       if before.get(p) != stamp and p not in declared)
        diffs = [f"{experiment.module} {' '.join(experiment.render)} wrote files its experiment.toml does not "
                 f"declare as outputs or figures: {', '.join(stray)}"] if stray else []
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


FIGURE_SUFFIXES = (".png", ".svg", ".pdf", ".jpg")
_NOT_DATA = {"experiment.toml"}


def _ignored(paths: list[Path], root: Path) -> set[Path]:
    """The paths git ignores (working files such as a result store), none outside a git work tree."""
    if not paths or not (Path(root) / ".git").exists():
        return set()
    done = subprocess.run(["git", "check-ignore", "--stdin"], cwd=root, input="\n".join(map(str, paths)),
                          capture_output=True, text=True)
    return {Path(line) for line in done.stdout.splitlines() if line}


def _matches(folder: Path, patterns) -> set[Path]:
    """The files ``patterns`` (relative to ``folder``, ``*`` allowed) name, resolved."""
    out = set()
    for rel in patterns:
        if any(c in rel for c in "*?["):
            out |= {p.resolve() for p in folder.glob(rel) if p.is_file()}
        else:
            out.add((folder / rel).resolve())
    return out


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def layout_problems(root: Path = ROOT, chosen=None) -> list[str]:
    """What the experiment folders hold that their ``experiment.toml`` does not say, one message per file.

    A problem is

    * a file of a folder that no ``experiment.toml`` of the folder declares (as ``data``,
      ``outputs`` or ``figures`` of an experiment, or as the topic's own ``data``); the
      scripts, ``experiment.toml`` and files git ignores are left out;
    * a declared data file of a folder without a provenance record beside it
      (``<name>.provenance.json``, or the ``provenance.json`` of a report folder), or missing;
    * a declared path (data, output, figure) outside the repository, an argument of ``run``
      or ``render`` that names an absolute path, or data outside the folder that the folder
      holding it does not declare.  A script writes outside its folder only through the
      outputs its toml declares (for example the scoreboard's ``replica/common/validity_table.json``).

    Parameters
    ----------
    root : Path
        The repository (its ``experiments/`` folder is checked).
    chosen : list of Experiment, optional
        Only the folders of these experiments (default: every folder).
    """
    from .runner import is_record, records_of

    root = Path(root).resolve()
    base = root / "experiments"
    every = topics(root)
    names = None if chosen is None else {e.topic for e in chosen}
    declared_by_folder = {}
    for topic in every:
        folder = (base / topic.name).resolve()
        declared = _matches(folder, topic.data)
        for e in topic.experiments:
            declared |= _matches(folder, (*e.data, *e.outputs, *e.figures))
        declared_by_folder[folder] = declared
    problems = []
    for topic in every:
        if names is not None and topic.name not in names:
            continue
        folder = (base / topic.name).resolve()
        where = f"experiments/{topic.name}"
        data = set(_matches(folder, topic.data))
        for e in topic.experiments:
            for key in ("run", "render"):
                for arg in getattr(e, key) or ():
                    if arg.startswith("/") or arg.startswith("~"):
                        problems.append(f"{where}/{e.name}: {key} argument {arg!r} is a path outside the repository "
                                        "(write into the folder, or give a folder with --out when running)")
            for key in ("data", "outputs", "figures"):
                for rel in getattr(e, key):
                    path = (folder / rel).resolve()
                    if not _inside(path, root):
                        problems.append(f"{where}/{e.name}: declared {key[:-1] if key != 'data' else 'data'} "
                                        f"{rel!r} is outside the repository")
            for path in _matches(folder, e.data):
                if _inside(path, folder):
                    data.add(path)
                elif _inside(path, base):
                    owner = base / path.relative_to(base).parts[0]
                    if path not in declared_by_folder.get(owner.resolve(), set()):
                        problems.append(f"{where}/{e.name}: reads {os.path.relpath(path, root)}, which "
                                        f"{os.path.relpath(owner, root)}/experiment.toml does not declare")
                elif not path.exists():
                    problems.append(f"{where}/{e.name}: declared data {os.path.relpath(path, root)} is missing")
        for path in sorted(data):
            if is_record(path) or path.suffix in FIGURE_SUFFIXES:
                continue
            if not path.exists():
                problems.append(f"{where}: declared data {path.relative_to(folder)} is missing")
            elif not any(r.exists() for r in records_of(path)):
                problems.append(f"{where}: data {path.relative_to(folder)} has no provenance record beside it "
                                f"({path.name.split('.', 1)[0]}.provenance.json)")
        present = [p.resolve() for p in folder.rglob("*") if p.is_file() and p.suffix != ".py"
                   and p.name not in _NOT_DATA and "__pycache__" not in p.parts]
        ignored = _ignored(present, root)
        for path in sorted(set(present) - declared_by_folder[folder] - ignored):
            problems.append(f"{where}: {path.relative_to(folder)} is not declared in its experiment.toml "
                            "(data, outputs or figures of an experiment, or the topic's data)")
    return problems


SKELETON_SCRIPT = '''"""{title}: {question_line}

Replace the example measurement (the mean of ``SAMPLES`` standard normal draws, seed ``SEED``)
with yours.  A measurement writes ``experiments/{name}/{name}.json`` and its provenance record
``{name}.provenance.json`` beside it; ``--render`` writes the block ``{name}`` of
``experiments/{name}/README.md`` from the committed data only.

Usage::

    python -m experiments run {name}            # measure, then render
    python -m experiments run {name} --render   # the page from the committed data
    python -m experiments run {name} -- --samples 5000
"""

from __future__ import annotations

import json
import pathlib

import numpy as np

from experiments.pages import write_block
from experiments.provenance import read_record
from experiments.runner import run

SEED = 0
SAMPLES = 1000
HERE = pathlib.Path(__file__).resolve().parent
DATA, PROVENANCE = HERE / "{name}.json", HERE / "{name}.provenance.json"


def measure(samples: int = SAMPLES, seed: int = SEED) -> dict:
    """The measurement: the mean of ``samples`` standard normal draws and its standard error."""
    draws = np.random.default_rng(seed).standard_normal(samples)
    return {{"samples": samples, "seed": seed, "mean": float(draws.mean()),
            "stderr": float(draws.std(ddof=1) / np.sqrt(samples))}}


def markdown(data: dict, record: dict) -> list[str]:
    """The page block: what was measured, by which command, in how long."""
    return [f"Generated by `python -m experiments run {name}` from `experiments/{name}/{name}.json` "
            f"(seed {{data['seed']}}, {{record['wall_time_s']:.1f}} s).",
            "",
            "| samples | mean | standard error |",
            "|---|---|---|",
            f"| {{data['samples']}} | {{data['mean']:+.4f}} | {{data['stderr']:.4f}} |"]


def _arguments(parser) -> None:
    parser.add_argument("--samples", type=int, default=SAMPLES, help="draws (default %(default)s)")


def _measure(job) -> None:
    DATA.write_text(json.dumps(measure(job.args.samples), indent=1) + "\\n")
    job.record(DATA, seed=SEED, samples=job.args.samples)


def _render(job) -> None:
    data = json.loads(DATA.read_text())
    write_block(HERE / "README.md", "{name}", markdown(data, read_record(PROVENANCE)), "{name}")


def main(argv=None) -> int:
    return run(__file__, __doc__, measure=_measure, render=_render, argv=argv, arguments=_arguments, seed=SEED)


if __name__ == "__main__":
    raise SystemExit(main())
'''

SKELETON_TOML = '''title = "{title}"
question = "{question}"
order = 99

[[experiment]]
name = "{name}"
wall_time = "1 s"
run = []
render = ["--render"]
data = ["{name}.json", "{name}.provenance.json"]
'''

SKELETON_PAGE = '''# {title}

The question, the theory it is compared with (a note in `notes/`), and the verdict: written by
hand.  The numbers below are written by `python -m experiments run {name}` from the committed data.

<!-- BEGIN generated: {name} (python -m experiments run {name}) -->
<!-- END generated: {name} -->
'''

SKELETON_TEST = '''"""experiments/{name}: the page is what the committed data give."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the experiments live beside the package, not in it
    sys.path.insert(0, str(ROOT))

from experiments import find  # noqa: E402
from experiments.__main__ import check, layout_problems  # noqa: E402


def test_{name}_page_is_rendered_from_its_data():
    ok, diff = check(find("{name}", ROOT), ROOT)
    assert ok, diff


def test_{name}_declares_its_files_and_records_them():
    assert layout_problems(ROOT, [find("{name}", ROOT)]) == []
'''


def _load_script(path: Path):
    """The script at ``path`` as a module (``experiments.<topic>.<name>``), outside ``sys.modules``."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"experiments.{path.parent.name}.{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def new(name: str, root: Path = ROOT, *, title: str | None = None, question: str = "variants",
        measure: bool = True) -> list[Path]:
    """Write the skeleton of experiment ``name``: its folder, script, ``experiment.toml``, page and test.

    The script goes through :mod:`experiments.runner`; with ``measure`` its example
    measurement runs once, so the folder holds data, a provenance record and a rendered page
    (and ``python -m experiments check`` passes).

    Returns
    -------
    list of Path
        The files written.

    Raises
    ------
    ValueError
        When ``name`` is not a lower-case Python identifier, is taken, or ``question`` is not
        one of ``QUESTIONS``.
    """
    import keyword
    import re

    if not re.fullmatch(r"[a-z][a-z0-9_]*", name) or keyword.iskeyword(name):
        raise ValueError(f"name must be a lower-case Python identifier (letters, digits, _), got {name!r}")
    if question not in QUESTIONS:
        raise ValueError(f"question must be one of {', '.join(QUESTIONS)}, got {question!r}")
    root = Path(root)
    folder = root / "experiments" / name
    if folder.exists() or any(e.name == name for e in experiments(root)):
        raise ValueError(f"experiment {name!r} exists already ({os.path.relpath(folder, root)})")
    taken = [p for p in (root / "experiments" / f"{name}.py", root / "tests" / f"test_experiment_{name}.py")
             if p.exists()]
    if taken:
        raise ValueError(f"name {name!r} is taken: {os.path.relpath(taken[0], root)} exists")
    title = title or name.replace("_", " ").capitalize()
    fields = {"name": name, "title": title.replace('"', "'"), "question": question,
              "question_line": QUESTIONS[question]}
    folder.mkdir(parents=True)
    written = {folder / f"{name}.py": SKELETON_SCRIPT, folder / "experiment.toml": SKELETON_TOML,
               folder / "README.md": SKELETON_PAGE, root / "tests" / f"test_experiment_{name}.py": SKELETON_TEST}
    for path, template in written.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(template.format(**fields))
    out = list(written)
    if measure:
        status = _load_script(folder / f"{name}.py").main([])
        if status:
            raise ValueError(f"the skeleton's measurement failed with exit status {status}")
        out += [folder / f"{name}.json", folder / f"{name}.provenance.json"]
    return out


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
    layout = layout_problems(root, chosen if names else None)
    print(f"\nfiles: every file declared, every data file with its provenance record: {len(layout)} problems")
    for line in layout:
        print(f"LAYOUT {line}")
    if layout:
        print(f"files: {len(layout)} problems (declare the file in its experiment.toml, or write its record)",
              file=sys.stderr)
    problems = coverage_problems(table, chosen, root=root)
    declared = sum(len(e.measures) for e in chosen)
    print(f"\nmeasured quantities: {declared} declared (experiment, quantity) pairs, {len(problems)} problems")
    for line in problems:
        print(f"MISSING {line}")
    if problems:
        print(f"measures: {len(problems)} declared pairs are not measured or not on the scoreboard "
              "(python -m experiments run scoreboard)", file=sys.stderr)
    return 1 if failed or problems or layout else 0


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
    make = sub.add_parser("new", help="write the skeleton of a new experiment (script, toml, page, test)")
    make.add_argument("name", metavar="NAME", help="the experiment's name: its folder, script and page block")
    make.add_argument("--title", default=None, help="the page title (default: from NAME)")
    make.add_argument("--question", default="variants", choices=list(QUESTIONS),
                      help="the question of the results pages it belongs to (default %(default)s)")
    make.add_argument("--no-measure", action="store_true",
                      help="do not run the example measurement (the folder then has no data yet)")
    make.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    args = parser.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    try:
        if args.command == "list":
            return _list(ROOT)
        if args.command == "check":
            return _check(args.names, ROOT, args.table)
        if args.command == "new":
            for path in new(args.name, args.root, title=args.title, question=args.question,
                            measure=not args.no_measure):
                print(f"wrote {os.path.relpath(path, args.root)}")
            print(f"next: edit experiments/{args.name}/{args.name}.py (measure, markdown) and README.md, then "
                  f"python -m experiments run {args.name}")
            return 0
        return _run(args.name, args.render, extra, ROOT)
    except ValueError as exc:
        print(f"experiments: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
