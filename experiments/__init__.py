"""The experiments: one folder per topic, each with its scripts, data, figures and page.

Every folder ``experiments/<topic>/`` holds

* ``README.md``, the topic's results page: the question, the theory, the figures, the
  tables and the verdict.  Its numbers sit in generated blocks
  (:mod:`experiments.pages`) that the scripts write from the committed data;
* ``experiment.toml``, what the folder holds: the page title and, per script, its name,
  its expected wall time on 2 cores, the arguments that measure (``run``) and those
  that render the page from the committed data (``render``), and the files it writes;
* the scripts, their data files, each with its provenance record ``<name>.provenance.json``
  beside it (the command, seed, code commit, machine and wall time that made it), and their
  figures.  Every script runs through :mod:`experiments.runner`, which parses ``--render`` and
  ``--out``, times the measurement and writes the records.

``python -m experiments list`` lists them, ``python -m experiments check`` renders every
page from its committed data and fails (with a diff) where a committed page differs, and
``python -m experiments run NAME`` measures one experiment again.  The documentation
build includes each ``README.md`` as one results page.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["Experiment", "Topic", "ROOT", "HERE", "topics", "experiments", "find", "read_topic"]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

QUESTIONS = {
    "scoreboard": "How far every prediction holds",
    "capacity": "How many facts can be stored?",
    "mechanism": "How does the optimum store them?",
    "variants": "Variants of the memory and of the facts",
    "accuracy": "Above capacity: how many facts are recalled?",
    "reproducibility": "Reproducibility",
}


@dataclass(frozen=True)
class Experiment:
    """One script of a topic folder and what it writes.

    Attributes
    ----------
    name : str
        The name ``python -m experiments run NAME`` takes (the script's file name).
    topic : str
        The folder under ``experiments/``.
    wall_time : str
        Expected wall time of a measurement on 2 cores, as the committed data records it.
    run : tuple of str
        Arguments of the script that measure and then render.
    render : tuple of str or None
        Arguments that render the page from the committed data without measuring; None
        when the script has no such mode (its page is written by the measurement only).
    outputs : tuple of str
        Text files the rendering writes, relative to the topic folder (checked).
    figures : tuple of str
        Figures the rendering writes (restored after a check, not compared byte for byte:
        PNG bytes depend on the matplotlib version).
    data : tuple of str
        The committed data the page is rendered from.
    checked_by : str
        For a script that writes only data: the experiment that renders that data (and
        whose check covers it); "" otherwise.
    measures : tuple of str
        The quantities (``experiments.scoreboard.measurements.THEORY_QUANTITIES``) of
        which its committed data holds certified measurements; ``python -m experiments
        check`` fails when such a quantity has no measurement of the folder or is not on
        the scoreboard (``replica/common/validity_table.json``).
    """

    name: str
    topic: str
    wall_time: str
    run: tuple[str, ...] = ()
    render: tuple[str, ...] | None = None
    outputs: tuple[str, ...] = ("README.md",)
    figures: tuple[str, ...] = ()
    data: tuple[str, ...] = ()
    notes: str = ""
    checked_by: str = ""
    measures: tuple[str, ...] = ()

    @property
    def module(self) -> str:
        """The module the script runs as (``python -m experiments.<topic>.<name>``)."""
        return f"experiments.{self.topic}.{self.name}"

    def folder(self, root: Path = ROOT) -> Path:
        return Path(root) / "experiments" / self.topic


@dataclass(frozen=True)
class Topic:
    """A topic folder: its results page and its experiments.

    Attributes
    ----------
    data : tuple of str
        Files of the folder written by a command of the package rather than by one of its
        scripts (the top-level ``data`` of ``experiment.toml``; ``*`` patterns allowed), each
        with its provenance record beside it like any other data file.
    """

    name: str
    title: str
    question: str
    order: int
    experiments: tuple[Experiment, ...] = field(default=())
    data: tuple[str, ...] = field(default=())


def read_topic(path: Path) -> Topic:
    """The topic of the ``experiment.toml`` at ``path``.

    Raises
    ------
    ValueError
        When a key is missing or the question is not one of ``QUESTIONS``.
    """
    meta = tomllib.loads(path.read_text())
    where = path.relative_to(path.parents[2]) if len(path.parents) > 2 else path
    try:
        title, question = meta["title"], meta["question"]
    except KeyError as exc:
        raise ValueError(f"{where}: missing key {exc.args[0]!r}") from None
    if question not in QUESTIONS:
        raise ValueError(f"{where}: question {question!r} is not one of {sorted(QUESTIONS)}")
    runs = []
    for entry in meta.get("experiment", []):
        entry = dict(entry)
        measures = entry.get("measures", [])
        if not isinstance(measures, list) or not all(isinstance(q, str) for q in measures):
            raise ValueError(f"{where}: measures of {entry.get('name')!r} must be a list of quantity names")
        for key in ("run", "outputs", "figures", "data", "measures"):
            if key in entry:
                entry[key] = tuple(entry[key])
        if "render" in entry:
            entry["render"] = tuple(entry["render"])
        runs.append(Experiment(topic=path.parent.name, **entry))
    return Topic(path.parent.name, title, question, int(meta.get("order", 99)), tuple(runs),
                 tuple(meta.get("data", ())))


def topics(root: Path = ROOT) -> list[Topic]:
    """Every topic folder under ``root/experiments``, in the order of the results pages."""
    found = [read_topic(p) for p in sorted((Path(root) / "experiments").glob("*/experiment.toml"))]
    order = list(QUESTIONS)
    return sorted(found, key=lambda t: (order.index(t.question), t.order, t.name))


def experiments(root: Path = ROOT) -> list[Experiment]:
    """Every experiment of every topic."""
    return [e for t in topics(root) for e in t.experiments]


def find(name: str, root: Path = ROOT) -> Experiment:
    """The experiment called ``name``.

    Raises
    ------
    ValueError
        When no experiment has that name (the message lists the names).
    """
    every = experiments(root)
    for e in every:
        if e.name == name:
            return e
    raise ValueError(f"no experiment {name!r}; the experiments are: {', '.join(e.name for e in every)}")
