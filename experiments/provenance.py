"""Provenance records of experiment data: what made a data file, where and how long it took.

Every measurement writes ``<name>.provenance.json`` beside its data: the command, the
seed, the code commit (with ``+dirty`` when the work tree had uncommitted changes), the
machine (CPU model, cores, operating system), the Python and numpy versions, the date
and the wall time.  A render from the committed data reads the wall time back from it,
so a rendered page states the run that made its numbers.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

__all__ = ["machine", "code_commit", "write_record", "read_record"]


def code_commit(root: Path | None = None) -> str:
    """The short commit of the work tree, with ``+dirty`` when its code has uncommitted changes.

    Code: the Python files, the packages ``replica`` and ``validation`` (with their data) and
    ``pyproject.toml``; pages and data written by earlier measurements do not count.
    """
    root = Path(root or Path(__file__).resolve().parents[1])
    try:
        sha = subprocess.run(["git", "rev-parse", "--short=10", "HEAD"], cwd=root, capture_output=True,
                             text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ":(glob)**/*.py",
                                "replica", "validation", "pyproject.toml"], cwd=root,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git work tree)"
    return sha + ("+dirty" if dirty else "")


def machine() -> dict:
    """CPU model, logical cores, operating system and the versions that compute."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), cpu)
    except OSError:
        pass
    import numpy

    return {"cpu": cpu, "cores": os.cpu_count(), "system": f"{platform.system()} {platform.release()}",
            "python": platform.python_version(), "numpy": numpy.__version__}


def write_record(path: Path, *, command: str, seed, seconds: float, **extra) -> dict:
    """Write the provenance record ``path`` of one measurement and return it."""
    record = {"command": command, "seed": seed, "code_commit": code_commit(), "machine": machine(),
              "date": datetime.date.today().isoformat(), "wall_time_s": round(float(seconds), 1),
              "argv": sys.argv[1:], **extra}
    Path(path).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return record


def read_record(path: Path) -> dict:
    """The provenance record at ``path``.

    Raises
    ------
    FileNotFoundError
        When the data has no record (the message says how to make one).
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: measure the experiment again to write its provenance record")
    return json.loads(path.read_text())


def write_results(path: Path, results) -> None:
    """Save a list of package results (each with ``to_dict``) as JSON, the data file of a measured page."""
    import json

    Path(path).write_text(json.dumps([r.to_dict() for r in results], indent=1) + "\n")


def read_results(path: Path, result_type) -> list:
    """The results saved by :func:`write_results`, read back with ``result_type.from_dict``."""
    import json

    return [result_type.from_dict(item) for item in json.loads(Path(path).read_text())]
