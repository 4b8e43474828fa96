"""The landing page's figure, scoreboard summary and first commands, written at build time.

``docs/conf.py`` calls :func:`write_landing` before Sphinx reads the pages; ``docs/index.rst``
includes what it writes into ``docs/_static/landing/`` (not committed):

* ``capacity.png`` and ``figure.rst``: the capacity p_c against d, the theory's lines
  beside every certified measurement of the validity table
  (``replica/common/validity_table.json``, written by ``python -m experiments run
  scoreboard``), with its interval; lower bounds are drawn open, with an arrow;
* ``summary.rst``: per quantity and model, how many measured points check the theory,
  show it off and leave it unchecked, and how many trials they hold;
* ``commands.rst``: the install command and a first call, read from ``README.md``.

Nothing here is typed by hand: every number comes from the validity table or from
``replica`` (the theory lines).  It runs offline in about two seconds.  To look at the
figure alone::

    python docs/landing.py --out /tmp/landing
"""

from __future__ import annotations

import argparse
import io
import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
TABLE = ROOT / "replica" / "common" / "validity_table.json"
README = ROOT / "README.md"
OUT = DOCS / "_static" / "landing"

SQUARE = {"kappa": 1.0, "margin": 0.0, "top_k": 1, "outputs": None, "ensemble": "gaussian", "ratio": 1.0}
LOWER_BOUND_KAPPA = 0.25
CERTIFIED_KINDS = ("interval", "bracket")
VERDICTS = ("checked", "off", "unchecked")

__all__ = ["Series", "capacity_series", "draw_figure", "figure_rst", "summary_rst", "commands_rst",
           "write_landing"]


@dataclass
class Series:
    """Measured points of one memory, with the theory they are compared with.

    Attributes
    ----------
    label : str
        Legend label.
    theory : callable
        d -> the theory's p_c (the line).
    points : list of dict
        The validity table's points (``d``, ``measured``, ``low``, ``high``, ``kind``,
        ``trials``, ``theory``, ``measured_text``), duplicates removed.
    tolerance : float or None
        The model's stated relative tolerance, drawn as a band.
    """

    label: str
    theory: object
    points: list = field(default_factory=list)
    tolerance: float | None = None


def load_table(path: Path = TABLE) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def _matches(fixed: dict, want: dict) -> bool:
    return all(fixed.get(key, value) == value for key, value in want.items())


def _points(model: dict, want: dict, kinds: tuple[str, ...]) -> list[dict]:
    """The model's points in the regimes matching ``want``, of the given kinds, once each."""
    seen, out = set(), []
    for regime in model["regimes"]:
        if not _matches(regime["fixed"], want):
            continue
        for point in regime["points"]:
            key = (point["d"], point["measured"], point["low"], point["high"], point["trials"])
            if point["kind"] in kinds and key not in seen:
                seen.add(key)
                out.append(dict(point, problem=regime["fixed"].get("problem", "op")))
    return sorted(out, key=lambda p: (p["problem"], p["d"], p["trials"]))


def capacity_series(table: dict) -> dict[str, Series]:
    """The three memories of the figure: optimal at full rank, optimal at rank d/4, Hebbian."""
    import replica

    capacity = table["quantities"]["capacity"]["models"]["finite_size"]
    hebbian = table["quantities"]["hebbian_capacity"]["models"]["finite_size"]
    kappa = LOWER_BOUND_KAPPA
    return {
        "optimal": Series("optimal, full rank", lambda d: replica.capacity(d).p_c,
                          _points(capacity, SQUARE, CERTIFIED_KINDS), capacity["tolerance"]),
        "rank": Series(f"optimal, rank d/{round(1 / kappa)}",
                       lambda d: replica.capacity(d, kappa=kappa).p_c,
                       _points(capacity, dict(SQUARE, kappa=kappa), ("lower_bound",))),
        "hebbian": Series("Hebbian rule, OP", lambda d: replica.hebbian_capacity(d).p_c,
                          _points(hebbian, {"kappa": 1.0, "ensemble": "gaussian", "ratio": 1.0},
                                  CERTIFIED_KINDS)),
    }


def _interval_kind(point: dict) -> str:
    """The kind of interval of a point, from the parenthesis of its measured text."""
    if point["kind"] == "bracket":
        return "bracket"
    match = re.search(r"\(([^()]*)\)\s*$", point.get("measured_text", ""))
    kind = match.group(1).split(";")[0].strip() if match else point["kind"]
    return f"lower bound ({kind})" if point["kind"] == "lower_bound" else kind


def _spread(points: list[dict]) -> dict[int, float]:
    """A small multiplicative offset in d for points that share a d, so that their bars do not overlap."""
    by_d: dict[float, list[int]] = {}
    for index, point in enumerate(points):
        by_d.setdefault(point["d"], []).append(index)
    shift = {}
    for indices in by_d.values():
        n = len(indices)
        for k, index in enumerate(indices):
            shift[index] = 2 ** (0.05 * (k - (n - 1) / 2))
    return shift


STYLE = {"optimal": {"color": "#1f77b4"}, "rank": {"color": "#555555"}, "hebbian": {"color": "#d62728"}}
PROBLEM_MARKER = {"op": "o", "dp": "s"}


def _draw_series(left, right, name: str, s: Series, d_max: float, relative: bool) -> None:
    """One memory: its theory line and marks on the left; on the right (if ``relative``) each
    point divided by its theory value."""
    color = STYLE[name]["color"]
    d_min = min(point["d"] for point in s.points)
    grid = sorted({round(2 ** (k / 2)) for k in range(int(2 * math.log2(d_min)), int(2 * math.log2(d_max)) + 1)})
    left.plot(grid, [s.theory(d) for d in grid], "-", color=color, lw=1.4, alpha=0.8, zorder=1)
    shift = _spread(s.points)
    for index, point in enumerate(s.points):
        d, theory = point["d"] * shift[index], point["theory"]
        low, high = point["low"], point["high"]
        if point["kind"] == "lower_bound":
            left.plot([point["d"]], [low], "^", mfc="white", color=color, ms=6, mew=1.2)
            if relative:
                y = 100 * (low / theory - 1)
                right.annotate("", xy=(d, y + 1.6), xytext=(d, y),
                               arrowprops={"arrowstyle": "-|>", "color": color, "lw": 1.2, "mutation_scale": 9})
                right.plot([d], [y], "^", mfc="white", color=color, ms=6, mew=1.2)
        elif point["kind"] == "bracket":
            left.plot([point["d"]] * 2, [low, high], "-", color=color, lw=2.5, solid_capstyle="butt")
            if relative:
                right.plot([d, d], [100 * (low / theory - 1), 100 * (high / theory - 1)], "-", color=color,
                           lw=3, solid_capstyle="butt")
        else:
            marker = PROBLEM_MARKER.get(point["problem"], "o")
            left.plot([point["d"]], [point["measured"]], marker, color=color, ms=4)
            if relative:
                y = 100 * (point["measured"] / theory - 1)
                err = [[y - 100 * (low / theory - 1)], [100 * (high / theory - 1) - y]]
                right.errorbar([d], [y], yerr=err, fmt=marker, color=color, ms=4, capsize=2, lw=1)


def draw_figure(series: dict[str, Series], out: Path, relative: tuple[str, ...] = ("optimal", "rank")) -> None:
    """Two panels: p_c against d with the theory lines, and measured / theory - 1 with the intervals.

    The right panel shows the series named in ``relative`` (the Hebbian intervals, many
    times wider at these d, would hide the others).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    d_max = max(point["d"] for s in series.values() for point in s.points)
    kind = Counter(_interval_kind(p) for p in series["optimal"].points if p["kind"] == "interval").most_common(1)
    kind = kind[0][0] if kind else "95 %"
    with plt.rc_context({"font.size": 12, "axes.titlesize": 12, "legend.fontsize": 10.5}):
        fig, (left, right) = plt.subplots(1, 2, figsize=(9.4, 4.7), gridspec_kw={"width_ratios": [1, 1.1]})
        for name, s in series.items():
            _draw_series(left, right, name, s, d_max, name in relative)
        tolerance = 100 * series["optimal"].tolerance if series["optimal"].tolerance else None
        if tolerance:
            right.axhspan(-tolerance, tolerance, color=STYLE["optimal"]["color"], alpha=0.10, lw=0)
        right.axhline(0, color="0.3", lw=0.8)
        for ax in (left, right):
            ax.set_xscale("log", base=2)
            ax.set_xlabel("d (embedding dimension)")
            ax.grid(alpha=0.3, which="major")
            ax.set_xticks([8, 16, 32, 64, 128, 256, 512])
            ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
        left.set_yscale("log")
        left.set_ylabel("p_c (pairs stored w.p. 1/2)")
        left.set_title("Theory (lines), measurements (marks)")
        right.set_ylim(-4.5, 8.5)
        right.set_ylabel("measured / theory - 1  (%)")
        right.set_title("Optimal memory: measured against theory")
        left.legend(handles=[Line2D([], [], color=STYLE[name]["color"], lw=1.4, label=s.label)
                             for name, s in series.items()], loc="upper left")
        marks = [
            Line2D([], [], marker="o", ls="", color="0.2", ms=4, label=f"OP, {kind} interval"),
            Line2D([], [], marker="s", ls="", color="0.2", ms=4, label=f"DP, {kind} interval"),
            Line2D([], [], marker="", ls="-", color="0.2", lw=3, label="bracket"),
            Line2D([], [], marker="^", ls="", mfc="white", color="0.2", ms=6, mew=1.2,
                   label="lower bound (p_c is above)"),
        ]
        if tolerance:
            marks.append(Patch(color=STYLE["optimal"]["color"], alpha=0.15,
                               label=f"tolerance of the full-rank model, \u00b1{tolerance:g} %"))
        fig.legend(handles=marks, loc="lower center", ncol=3, frameon=False,
                   handletextpad=0.3, columnspacing=1.2)
        fig.tight_layout(rect=(0, 0.115, 1, 1))
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=110, metadata={"Software": None})
        plt.close(fig)
    _write_if_changed(out, buffer.getvalue())


def _kind_phrase(kind: str, count: int) -> str:
    """'95 % PL', 33 -> '33 intervals (95 % PL)'; 'bracket', 2 -> '2 brackets'."""
    if kind == "bracket":
        return f"{count} bracket" + ("s" if count != 1 else "")
    if kind.startswith("lower bound"):
        return f"{count} lower bound" + ("s" if count != 1 else "") + kind[len("lower bound"):]
    return f"{count} interval" + ("s" if count != 1 else "") + f" ({kind})"


def _best(points: list[dict]) -> dict:
    """The certified interval at the largest d (the most trials among ties)."""
    intervals = [p for p in points if p["kind"] == "interval"]
    return max(intervals, key=lambda p: (p["d"], p["trials"]))


def figure_rst(series: dict[str, Series], image: str, target: str = "_static/landing/capacity.png") -> str:
    """A sentence with the largest certified measurements, then the figure with its caption.

    ``image`` is the figure's path for Sphinx, ``target`` the link that opens it at full size.
    """
    optimal, hebbian = _best(series["optimal"].points), _best(series["hebbian"].points)
    def stated(point: dict) -> str:
        return (f"p_c = {point['measured']:.1f} pairs ({_interval_kind(point)} interval "
                f"[{point['low']:.1f}, {point['high']:.1f}], {point['trials']} trials, "
                f"{point['problem'].upper()}; theory {point['theory']:.1f})")

    lead = (f"At d = {optimal['d']:g} the optimal memory stores {stated(optimal)}; "
            f"the Hebbian rule (W = sum of u e^T) at d = {hebbian['d']:g} stores {stated(hebbian)}.")
    parts = []
    for s in series.values():
        kinds = Counter(_interval_kind(p) for p in s.points)
        kind_text = ", ".join(_kind_phrase(kind, count) for kind, count in kinds.most_common())
        parts.append(f"{s.label}: {kind_text}, {_range([p['trials'] for p in s.points])} trials each")
    widths = [100 * (p["high"] - p["low"]) / p["theory"] for p in series["hebbian"].points]
    caption = (
        "Marks: the certified measurements of the validity table "
        "(``replica/common/validity_table.json``, ``python -m experiments run scoreboard``); "
        + "; ".join(parts) + ". "
        "PL: profile likelihood of the fitted P(stored); bracket: all trials stored at one load, none at "
        "the next; lower bound: a search, whose failures prove nothing. Lines: ``replica.capacity(d)``, "
        f"``replica.capacity(d, kappa={LOWER_BOUND_KAPPA:g})``, ``replica.hebbian_capacity(d)``. Right: the "
        f"Hebbian intervals ({min(widths):.0f} to {max(widths):.0f} % of the theory wide) are left out."
    )
    return (".. This file is written by docs/landing.py at build time; do not edit.\n\n"
            f"{lead}\n\n"
            f".. figure:: {image}\n   :alt: capacity p_c against d, measured and theory\n"
            f"   :target: {target}\n   :figclass: landing-figure\n   :width: 100%\n\n"
            f"   {caption}\n")


def _range(values: list[float]) -> str:
    low, high = min(values), max(values)
    return f"{low:g}" if low == high else f"{low:g} to {high:g}"


def _thousands(n: int) -> str:
    """12345 -> '12 345' (a narrow no-break space between groups of three digits)."""
    return f"{n:,}".replace(",", "\u202f")


def _measurement(regime: dict, point: dict) -> tuple:
    """What identifies one measurement (listed once per model, and once per experiment that shares it)."""
    return (json.dumps(regime["fixed"], sort_keys=True), point["d"], point["measured"], point["low"],
            point["high"], point["trials"])


def _counts(model: dict) -> tuple[Counter, dict]:
    """The model's points by verdict (as the scoreboard counts them) and its distinct measurements."""
    verdicts, measurements = Counter(), {}
    for regime in model["regimes"]:
        for point in regime["points"]:
            verdicts[point["verdict"]] += 1
            measurements[_measurement(regime, point)] = int(point.get("trials") or 0)
    return verdicts, measurements


def summary_rst(table: dict, scoreboard: str = "results/scoreboard") -> str:
    """The scoreboard in one table: per quantity and model, the points by verdict and their trials."""
    rows = []
    everything: dict = {}
    for quantity, entry in table["quantities"].items():
        first = True
        for model_name, model in entry["models"].items():
            verdicts, measurements = _counts(model)
            everything.update({(quantity, *key): n for key, n in measurements.items()})
            trials = sum(measurements.values())
            cells = [f"``{quantity}``" if first else "", f"``{model_name}``"]
            for verdict in VERDICTS:
                count = verdicts.get(verdict, 0)
                cells.append(f":v-{verdict}:`{count}`" if count else ":v-none:`0`")
            cells.append(_thousands(trials))
            rows.append(cells)
            first = False
    lines = [".. This file is written by docs/landing.py at build time; do not edit.", ""]
    lines += [f".. role:: v-{name}\n   :class: v-{name}\n" for name in (*VERDICTS, "none")]
    lines += [".. list-table::", "   :header-rows: 1", "   :class: landing-summary", "",
              "   * - quantity", "     - model", "     - checked", "     - off", "     - unchecked",
              "     - trials"]
    for cells in rows:
        lines.append(f"   * - {cells[0]}")
        lines += [f"     - {cell}" for cell in cells[1:]]
    note = ("Measured points per model: each certified measurement of a quantity (an interval, a bracket "
            "or a bound) counts against every model that predicts it there; "
            f"{len(everything)} distinct measurements, {_thousands(sum(everything.values()))} trials. "
            "*checked*: the interval lies within the model's tolerance; *off*: the theory lies outside it "
            "by more than the tolerance; *unchecked*: too wide to tell, or a bound the theory respects. "
            f"Every point: :doc:`/{scoreboard}`.")
    lines += ["", ".. container:: landing-summary-note", "", f"   {note}", ""]
    return "\n".join(lines)


def _readme_blocks(readme: str, language: str) -> list[list[str]]:
    blocks, current = [], None
    for line in readme.splitlines():
        if current is None and line.strip() == f"```{language}":
            current = []
        elif current is not None and line.strip() == "```":
            blocks.append(current)
            current = None
        elif current is not None:
            current.append(line)
    return blocks


def commands_rst(readme: str) -> str:
    """The install command and a first call, as ``README.md`` gives them (its first bash and python blocks)."""
    bash = _readme_blocks(readme, "bash")
    if not bash or not bash[0]:
        raise ValueError("README.md has no ```bash block to take the install command from")
    install = [part.strip() for part in bash[0][0].split("&&")]
    python = _readme_blocks(readme, "python")
    first_call: list[str] = []
    if python:
        lines = python[0]
        starts = [i for i, line in enumerate(lines) if line.startswith(">>> ")]
        # the first example that calls replica.capacity, with its output, and the validity line after it
        for i in starts:
            if "replica.capacity(" in lines[i]:
                stop = next((j for j in starts if j > i and "validity" in lines[j]), None)
                end = next((j for j in starts if stop is not None and j > stop), len(lines))
                first_call = [re.sub(r"\s{2,}#.*$", "", line) for line in [">>> import replica"] + lines[i:end]]
                break
    out = [".. This file is written by docs/landing.py at build time from README.md; do not edit.", "",
           ".. code-block:: bash", ""]
    out += [f"   {command}" for command in install]
    if first_call:
        out += ["", ".. code-block:: python", ""] + [f"   {line}" for line in first_call]
    return "\n".join(out) + "\n"


def _write_if_changed(path: Path, content: bytes | str) -> None:
    data = content.encode("utf-8") if isinstance(content, str) else content
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_bytes() != data:
        path.write_bytes(data)


def write_landing(out: Path = OUT, table_path: Path = TABLE, readme: Path = README) -> list[Path]:
    """Write the landing page's figure and fragments into ``out``; returns the files."""
    table = load_table(table_path)
    series = capacity_series(table)
    image = out / "capacity.png"
    draw_figure(series, image)
    files = {
        "figure.rst": figure_rst(series, "/" + image.relative_to(DOCS).as_posix()
                                 if image.is_relative_to(DOCS) else str(image)),
        "summary.rst": summary_rst(table),
        "commands.rst": commands_rst(Path(readme).read_text(encoding="utf-8")),
    }
    for name, text in files.items():
        _write_if_changed(out / name, text)
    return [image] + [out / name for name in files]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    for path in write_landing(args.out.resolve()):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
