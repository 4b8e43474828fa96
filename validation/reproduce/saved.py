"""What a reproduce run measured, kept beside its report so the report can be written again.

:func:`validation.reproduce.reproduce` saves its :class:`~validation.reproduce.report.ReproduceData`,
its configuration and the wall times of the run in ``OUT/reproduce_data.json``
(:func:`save_run`).  :func:`render_saved` reads that file and writes the figures, CSV tables
and ``report.md`` again without measuring: the text it writes equals what the run wrote
(the report's wall times are the run's, read from the file).  ``validation reproduce
--render --out OUT`` calls it.
"""

from __future__ import annotations

import json
import os

from replica.common.results import numpy_to_json

from ..measurements.accuracy import AccuracyCurve
from .config import ReproduceConfig
from .report import ReproduceData, write_outputs

__all__ = ["DATA_FILE", "save_run", "load_run", "render_saved"]

DATA_FILE = "reproduce_data.json"
_FORMAT = 1


def save_run(out, config: ReproduceConfig, data: ReproduceData, run: dict) -> str:
    """Write ``OUT/reproduce_data.json``: the configuration, the measured data and the run's wall times.

    ``run`` is the run record :func:`~validation.reproduce.report.write_outputs` returned;
    its ``total`` (the wall time the report states) is kept, its clock start is not.
    """
    payload = {
        "format": _FORMAT,
        "config": config.to_dict(),
        "run": {key: value for key, value in run.items() if key != "start"},
        "estimates": data.estimates,
        "specs": [list(spec) for spec in data.specs],
        "measurements": [{"key": list(key), "records": records} for key, records in data.measurements.items()],
        "theory": data.theory,
        "accuracy": [curve.to_dict() for curve in data.accuracy],
        "outputs": list(data.outputs),
        "zipf": data.zipf,
    }
    path = os.path.join(out, DATA_FILE)
    with open(path, "w") as fh:
        json.dump(payload, fh, default=numpy_to_json)
        fh.write("\n")
    return path


def load_run(out) -> tuple[ReproduceConfig, ReproduceData, dict]:
    """The configuration, data and run record saved by :func:`save_run` in ``out``.

    Raises
    ------
    FileNotFoundError
        When ``out`` holds no ``reproduce_data.json`` (a run older than the file, or another folder).
    ValueError
        When the file is of another format.
    """
    path = os.path.join(out, DATA_FILE)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} does not exist: only a run that saved its data can be rendered again")
    with open(path) as fh:
        payload = json.load(fh)
    if payload.get("format") != _FORMAT:
        raise ValueError(f"{path}: format {payload.get('format')!r}, expected {_FORMAT}")
    data = ReproduceData(
        estimates=payload["estimates"],
        specs=[tuple(spec) for spec in payload["specs"]],
        measurements={tuple(m["key"]): m["records"] for m in payload["measurements"]},
        theory=payload["theory"],
        accuracy=[AccuracyCurve.from_dict(curve) for curve in payload["accuracy"]],
        outputs=payload["outputs"],
        zipf=payload["zipf"],
    )
    run = payload["run"]
    if run.get("alongside"):
        seconds, runs = run["alongside"]
        run["alongside"] = (seconds, [tuple(r) for r in runs])
    return ReproduceConfig.from_dict(payload["config"]), data, run


def render_saved(out) -> dict:
    """Write the figures, CSV tables and ``report.md`` of ``out`` again from ``OUT/reproduce_data.json``.

    Returns the paths written, as :func:`~validation.reproduce.report.write_outputs` does.
    """
    config, data, run = load_run(out)
    return write_outputs(out, config, data, run)
