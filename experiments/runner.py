"""The command line every experiment script shares: measure or render, where to write, what made each data file.

An experiment script hands its work to :func:`run`::

    from experiments.runner import run

    def measure(job):            # simulate; write the data files of the folder
        job.path("example.json").write_text(...)
        job.record("example.json", seed=SEED)   # example.provenance.json beside it

    def render(job):             # page (and figures) from the committed data only
        data = json.loads(job.path("example.json").read_text())
        write_block(job.path("README.md"), "example", ..., "example")

    def main(argv=None) -> int:
        return run(__file__, __doc__, measure=measure, render=render, argv=argv)

and :func:`run` gives every script the same options:

* no option: measure, then render from the data just written;
* ``--render``: render only, from the committed data (what ``python -m experiments check`` runs);
* ``--out DIR``: write into ``DIR`` instead of the script's folder.  The script works in its
  folder as usual; afterwards every file it wrote or changed there is moved into ``DIR``
  (same relative path) and the folder is put back as it was.  A declared output outside
  the folder (a block of the project ``README.md``, a package table) goes to
  ``DIR/repository/<its path in the repository>``;
* the script's own options, added by ``arguments(parser)`` (for example the dimension of
  ``many_to_one``: ``python -m experiments run many_to_one -- 16``).

A measurement is timed (``job.elapsed()``), and every data file it writes gets a
provenance record ``<name>.provenance.json`` beside it (:mod:`experiments.provenance`):
written by the script through ``job.record`` (with the fields it knows: the seed, the
settings), or else by the runner after the measurement, for every declared data file the
measurement changed without writing its record.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from . import Experiment, read_topic
from .provenance import read_record, write_record

__all__ = ["Job", "run", "parser_for", "experiment_of", "record_path", "records_of", "is_record", "RUNS"]

RUNS: list[str] = []
"""The modules whose ``main`` went through :func:`run` in this process, in order (tests read it)."""

_SKIPPED_PARTS = {"__pycache__", ".ipynb_checkpoints"}


def record_path(data: Path) -> Path:
    """The provenance record beside the data file ``data``: ``<name>.provenance.json``.

    ``rank_saturation.jsonl`` -> ``rank_saturation.provenance.json``; a report folder
    written by ``validation reproduce`` keeps one ``provenance.json`` for all its files
    (see :func:`records_of`).
    """
    data = Path(data)
    return data.with_name(data.name.split(".", 1)[0] + ".provenance.json")


def is_record(path: Path) -> bool:
    """Whether ``path`` is a provenance record (``*.provenance.json`` or a report folder's ``provenance.json``)."""
    name = Path(path).name
    return name == "provenance.json" or name.endswith(".provenance.json")


def records_of(data: Path) -> list[Path]:
    """The records that may describe ``data``: its own, then the one of its report folder."""
    data = Path(data)
    return [record_path(data), data.parent / "provenance.json"]


def experiment_of(script: Path) -> Experiment | None:
    """The ``experiment.toml`` entry of ``script`` (its folder's toml, the entry named by its file name)."""
    script = Path(script).resolve()
    toml = script.parent / "experiment.toml"
    if not toml.exists():
        return None
    for e in read_topic(toml).experiments:
        if e.name == script.stem:
            return e
    return None


def _module(script: Path) -> str:
    script = Path(script).resolve()
    return f"experiments.{script.parent.name}.{script.stem}"


def _files(folder: Path) -> dict[Path, bytes]:
    """Every file under ``folder`` but the scripts and caches, with its bytes."""
    out = {}
    for path in folder.rglob("*"):
        if path.is_file() and path.suffix != ".py" and not _SKIPPED_PARTS & set(path.parts):
            out[path] = path.read_bytes()
    return out


def _stamps(paths) -> dict[Path, int]:
    """The modification times (ns) of ``paths``: a file rewritten with the same bytes still counts as written."""
    return {p: p.stat().st_mtime_ns for p in paths if p.exists()}


@dataclass
class Job:
    """One run of an experiment script: what it was asked and where it writes.

    Attributes
    ----------
    module : str
        The script's module (``experiments.<topic>.<name>``).
    folder : Path
        The script's folder: its committed data, page and figures.
    out : Path
        Where the written files end up (``--out``; the folder by default).
    args : argparse.Namespace
        The parsed options, the script's own included.
    render_only : bool
        ``--render``: no measurement, the page from the committed data.
    experiment : Experiment or None
        The script's entry in its folder's ``experiment.toml``.
    seed : object
        The seed a record gets when the script does not give one.
    argv : list of str
        The arguments of the run, as the records store them.
    started : float
        ``time.perf_counter()`` when the run started (:meth:`elapsed`).
    recorded : set of Path
        The records written by :meth:`record` so far.
    """

    module: str
    folder: Path
    out: Path
    args: argparse.Namespace
    render_only: bool
    experiment: Experiment | None = None
    seed: object = None
    argv: list = field(default_factory=list)
    started: float = field(default_factory=time.perf_counter)
    recorded: set = field(default_factory=set)

    @property
    def command(self) -> str:
        """``python -m <module>``, the command that measures (the options are in the record's ``argv``)."""
        return f"python -m {self.module}"

    def elapsed(self) -> float:
        """Seconds since the run started."""
        return time.perf_counter() - self.started

    def path(self, name: str | Path) -> Path:
        """The file ``name`` of the script's folder (read the committed data, write the data and page there)."""
        return self.folder / name

    def output(self, rel: str) -> Path:
        """A declared output outside the folder (``outputs`` of the toml, e.g. ``"../../README.md"``).

        Raises
        ------
        ValueError
            When ``rel`` is not among the declared outputs: a script writes outside its folder only
            where its ``experiment.toml`` says so.
        """
        declared = () if self.experiment is None else self.experiment.outputs
        if rel not in declared:
            raise ValueError(f"{self.module}: output {rel!r} is not declared in the outputs of its experiment.toml "
                             f"({', '.join(declared) or 'none'})")
        return (self.folder / rel).resolve()

    def declared(self, path: str | Path) -> Path:
        """``path`` resolved, if the script may write it: inside its folder, or a declared output.

        Raises
        ------
        ValueError
            When ``path`` is outside the folder and not among the declared outputs.
        """
        path = Path(path).resolve()
        if path.is_relative_to(self.folder):
            return path
        return self.output(os.path.relpath(path, self.folder))

    def record(self, data: str | Path, *, seed=None, seconds: float | None = None, command: str | None = None,
               **extra) -> dict:
        """Write the provenance record beside the data file ``data`` (relative to the folder, or a path).

        ``seed`` defaults to the seed given to :func:`run`, ``seconds`` to :meth:`elapsed`,
        ``command`` to :attr:`command`; the other fields go into the record as they are.
        """
        data = self.path(data)
        target = record_path(data)
        self.recorded.add(target)
        return write_record(target, command=command or self.command, seed=self.seed if seed is None else seed,
                            seconds=self.elapsed() if seconds is None else seconds,
                            **{"argv": list(self.argv), **extra})

    def read_record(self, data: str | Path) -> dict:
        """The provenance record of the committed data file ``data`` (its own, else its report folder's)."""
        data = self.path(data)
        for candidate in records_of(data):
            if candidate.exists():
                return read_record(candidate)
        return read_record(record_path(data))  # raises, naming the missing record


def _declared_outside(job: Job) -> list[Path]:
    if job.experiment is None:
        return []
    return [(job.folder / rel).resolve() for rel in (*job.experiment.outputs, *job.experiment.figures)
            if not (job.folder / rel).resolve().is_relative_to(job.folder)]


def _record_changed_data(job: Job, before: dict[Path, bytes]) -> None:
    """Write a record for every declared data file of the folder that the measurement changed without one."""
    if job.experiment is None:
        return
    for rel in job.experiment.data:
        data = (job.folder / rel).resolve()
        if is_record(data) or not data.is_relative_to(job.folder) or "*" in rel or not data.exists():
            continue
        if before.get(data) == data.read_bytes():
            continue
        if any(r in job.recorded or (r.exists() and before.get(r) != r.read_bytes()) for r in records_of(data)):
            continue
        job.record(data)


def _move_into(job: Job, before: dict[Path, bytes], stamps: dict[Path, int],
               outside: dict[Path, bytes | None]) -> list[Path]:
    """Move what the run wrote into ``job.out`` and put the folder (and the outside outputs) back."""
    moved = []
    now = _files(job.folder)
    for path, content in now.items():
        if before.get(path) != content or stamps.get(path) != path.stat().st_mtime_ns:
            target = job.out / path.relative_to(job.folder)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
            moved.append(target)
            if path not in before:
                path.unlink()
            elif before[path] != content:
                path.write_bytes(before[path])
    for path, content in outside.items():
        current = path.read_bytes() if path.exists() else None
        if current is not None and (current != content or stamps.get(path) != path.stat().st_mtime_ns):
            target = job.out / "repository" / path.relative_to(job.folder.parent.parent)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(current)
            moved.append(target)
            if content is None:
                path.unlink()
            elif content != current:
                path.write_bytes(content)
    return moved


def parser_for(script: str | Path, doc: str | None, arguments: Callable | None = None,
               measures: bool = True, renders: bool = True) -> argparse.ArgumentParser:
    """The command line of ``script``: the shared options and those ``arguments(parser)`` adds."""
    description = (doc or _module(script)).strip().splitlines()[0]
    parser = argparse.ArgumentParser(prog=f"python -m {_module(script)}", description=description)
    mode = parser.add_mutually_exclusive_group()
    if renders:
        mode.add_argument("--render", "--from-data", dest="render", action="store_true",
                          help="write the page (and figures) from the committed data, without measuring")
    else:
        parser.set_defaults(render=False)
    mode.add_argument("--measure", action="store_true",
                      help="measure, then render (the default" + ("" if measures else "; this script only renders")
                      + ")")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="write the data, page and figures into DIR instead of the script's folder")
    if arguments is not None:
        arguments(parser)
    return parser


def run(script: str | Path, doc: str | None = None, *, measure: Callable | None = None,
        render: Callable | None = None, argv=None, arguments: Callable | None = None, seed=None) -> int:
    """Run an experiment script: parse its command line, measure and/or render, time it, record provenance.

    Parameters
    ----------
    script : str or Path
        The script's ``__file__``.
    doc : str, optional
        Its docstring (the first line is the ``--help`` description).
    measure : callable, optional
        ``measure(job)`` simulates and writes the data (and may write a partial page); None
        for a script that only renders (then every mode renders).
    render : callable, optional
        ``render(job)`` writes the page and figures from the data; None for a script that
        writes data only (rendered by another experiment): ``--render`` then exits 2.
    argv : list of str, optional
        The arguments (default ``sys.argv[1:]``).
    arguments : callable, optional
        ``arguments(parser)`` adds the script's own options to the ``argparse`` parser.
    seed : optional
        The seed written into a record the script does not write itself.

    Returns
    -------
    int
        The exit status: what ``measure`` or ``render`` returned (None counts as 0), 2 for
        ``--render`` of a script without a render mode.
    """
    if measure is None and render is None:
        raise ValueError("run: a script needs measure, render or both")
    script = Path(script).resolve()
    module = _module(script)
    RUNS.append(module)
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser_for(script, doc, arguments, measures=measure is not None,
                      renders=render is not None).parse_args(argv)
    folder = script.parent
    out = folder if args.out is None else Path(args.out).resolve()
    job = Job(module=module, folder=folder, out=out, args=args, render_only=bool(args.render),
              experiment=experiment_of(script), seed=seed, argv=argv)
    relocate = out != folder
    before = _files(folder) if (relocate or measure is not None) else {}
    outside = {p: (p.read_bytes() if p.exists() else None) for p in _declared_outside(job)} if relocate else {}
    stamps = _stamps([*before, *outside]) if relocate else {}
    status = 0
    try:
        if measure is not None and not job.render_only:
            status = measure(job) or 0
            _record_changed_data(job, before)
            if status:
                return int(status)
        if render is not None:
            status = render(job) or 0
        return int(status)
    finally:
        if relocate:
            moved = _move_into(job, before, stamps, outside)
            print(f"{module}: {len(moved)} file(s) written into {os.path.relpath(out)}", file=sys.stderr)

