"""``replica models``: every quantity of the theory, its models, their tolerances and verdicts.

The registry is ``replica.common.registry``; the verdict counts are those of the shipped
validity table (``experiments/scoreboard/README.md`` lists every measured point).
"""

from __future__ import annotations

import sys

from ..common.cliutil import add_command, render

COLUMNS = ["quantity", "front_end", "model", "tolerance", "checked", "off", "unchecked", "note", "summary"]


def register(subparsers) -> None:
    add_command(subparsers, "models", run,
                help="the theory registry: quantities, models, tolerances and scoreboard verdicts",
                description=("One row per model of every quantity: its front end, stated tolerance, the count of "
                             "certified measured points per verdict (the scoreboard) and the note that derives it.  "
                             "The first model of a quantity that is checked at a point is its default there."))


def rows() -> list[dict]:
    """The registry with the verdict counts of the shipped validity table."""
    from ..common import registry
    from ..common.validity import validity_table

    table = validity_table().get("quantities", {})
    out = []
    for q in registry.QUANTITIES.values():
        for m in q.models:
            regimes = table.get(q.name, {}).get("models", {}).get(m.name, {}).get("regimes", [])
            verdicts = [pt["verdict"] for r in regimes for pt in r["points"]]
            tol = f"{100 * m.tolerance:g} %" if q.error_kind == "relative" else f"{m.tolerance:g}"
            out.append({"quantity": q.name, "front_end": q.front_end, "model": m.name, "tolerance": tol,
                        **{v: verdicts.count(v) for v in ("checked", "off", "unchecked")},
                        "note": m.note, "summary": m.summary})
    return out


def run(args) -> int:
    render(rows(), COLUMNS, args.format, digits=6, stream=sys.stdout)
    return 0
