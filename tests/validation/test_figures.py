"""Figure 1 and the collapse view 1b on small synthetic curves: they draw, write a PNG and mark what they should."""

import importlib.util
import math
import os

import matplotlib
import pytest
from matplotlib.colors import same_color

matplotlib.use("Agg")

from validation import figures  # noqa: E402
from validation.capacity.fit import fit_logistic  # noqa: E402
from validation.capacity.loads import load  # noqa: E402
from validation.reproduce import QUICK  # noqa: E402
from validation.reproduce.report import _write_report  # noqa: E402
from validation.reproduce.sections import collapse_text, figure_collapse, figure_success  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _estimate(problem, solver, d, theory_p_c, counts, kappa=1.0, not_found=()):
    """An estimate dict as the figures read it: ``counts`` is ``[(p, stored, not_stored), ...]``, fitted here."""
    not_found = list(not_found) or [0] * len(counts)
    curve = [{"p": p, "alpha": load(d, p), "trials": k + m + f, "stored": k, "not_stored": m, "undecided": 0,
              "errors": 0, "not_found": f} for (p, k, m), f in zip(counts, not_found)]
    fit = fit_logistic([c["p"] for c in curve], [c["stored"] for c in curve],
                       [c["stored"] + c["not_stored"] + c["not_found"] for c in curve])
    p_c, low, high = (math.exp(v) for v in (fit.log_p_c, fit.log_p_c_low, fit.log_p_c_high))
    return {"problem": problem, "solver": solver, "d": d, "kappa": kappa, "p_c": p_c, "p_c_low": low,
            "p_c_high": high, "alpha": load(d, p_c), "alpha_low": load(d, low), "alpha_high": load(d, high),
            "slope": fit.slope, "status": fit.status, "curve": curve, "undecided": 0, "errors": 0,
            "not_found": sum(not_found),
            "theory": {"p_c": theory_p_c, "alpha": load(d, theory_p_c), "alpha_c": 0.5}}


def _synthetic():
    """OP, DP and Hebbian curves at two d, one of them separated and one unbracketed, and a rank-m curve."""
    return [
        _estimate("op", "optimal", 8, 20.0, [(16, 6, 0), (19, 4, 2), (21, 2, 4), (24, 0, 6)]),
        _estimate("op", "optimal", 12, 40.0, [(36, 6, 0), (42, 0, 6), (48, 0, 6)]),  # separated
        _estimate("dp", "optimal", 8, 20.0, [(16, 6, 0), (19, 4, 2), (21, 3, 3), (24, 1, 5)]),
        _estimate("dp", "optimal", 12, 40.0, [(39, 5, 1), (40, 4, 2)]),  # unbracketed: never below 1/2
        _estimate("op", "hebbian", 8, 3.0, [(2, 5, 1), (3, 3, 3), (5, 1, 5)]),
        _estimate("op", "hebbian", 12, 6.0, [(4, 5, 1), (6, 3, 3), (9, 1, 5)]),
        _estimate("op", "optimal", 8, 15.0, [(12, 6, 0), (15, 3, 1), (18, 0, 2)], kappa=0.5,
                  not_found=[0, 2, 4]),
    ]


def test_synthetic_set_has_every_fit_status_the_figures_mark():
    statuses = {e["status"] for e in _synthetic()}
    assert statuses == {"ok", "separated", "unbracketed"}


@pytest.fixture
def drawn(monkeypatch):
    """The figures drawn by the plotting functions, kept open (``_save`` still writes the PNG)."""
    kept = []
    save = figures._save

    def keep(fig, path):
        kept.append(fig)
        return save(fig, path)

    monkeypatch.setattr(figures, "_save", keep)
    return kept


def _legend_texts(fig):
    return [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]


def _open_marker_labels(fig):
    """Labels of the marker lines drawn with white faces (open markers)."""
    return [line.get_label() for ax in fig.axes for line in ax.get_lines()
            if line.get_marker() == "o" and same_color(line.get_markerfacecolor(), "white")]


def _is_png(path):
    with open(path, "rb") as fh:
        return fh.read(8) == b"\x89PNG\r\n\x1a\n"


def test_plot_success_writes_a_png_with_one_panel_per_memory_and_problem(tmp_path, drawn):
    path = figures.plot_success(_synthetic(), str(tmp_path / "fig1.png"))
    assert _is_png(path) and os.path.getsize(path) > 10_000
    fig = drawn[0]
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles == ["optimal memory, original problem (OP)", "optimal memory, decoupled problem (DP)",
                      "Hebbian memory, original problem (OP)"]  # kappa < 1 is not on figure 1
    legend = _legend_texts(fig)
    assert "d = 12 (fit separated)" in legend and "d = 12 (fit unbracketed)" in legend and "d = 8" in legend
    assert sorted(_open_marker_labels(fig)) == ["d = 12 (fit separated)", "d = 12 (fit unbracketed)"]
    # the finite-size theory p_c(d) of every curve: a diamond on P = 1/2 at the theory load
    diamonds = [line for ax in fig.axes for line in ax.get_lines() if line.get_marker() == "D"]
    assert len(diamonds) == 6 and all(line.get_ydata()[0] == 0.5 for line in diamonds)
    assert "load" in fig.axes[0].get_xlabel() and "P(stored)" in fig.axes[0].get_ylabel()
    # colours by d are the same in every panel
    colors = {}
    for ax in fig.axes:
        for line in ax.get_lines():
            if line.get_label().startswith("d = "):
                d = line.get_label().split()[2]
                colors.setdefault(d, set()).add(tuple(line.get_color()))
    assert all(len(c) == 1 for c in colors.values()) and len(colors) == 2


def test_plot_collapse_writes_a_png_with_lower_bounds_and_open_markers(tmp_path, drawn):
    path = figures.plot_collapse(_synthetic(), str(tmp_path / "fig1b.png"))
    assert _is_png(path) and os.path.getsize(path) > 10_000
    fig = drawn[0]
    titles = [ax.get_title() for ax in fig.axes if ax.get_title() and "zoom" not in ax.get_title()]
    assert titles[:3] == ["optimal memory, original problem (OP)", "optimal memory, decoupled problem (DP)",
                          "Hebbian memory, original problem (OP)"]
    assert titles[3].startswith("rank-constrained") and "lower bounds" in titles[3]
    legend = _legend_texts(fig)
    assert "kappa = 0.5: lower bound" in legend
    assert "d = 12 (fit separated)" in _open_marker_labels(fig)
    assert "d = 12 (fit unbracketed)" in _open_marker_labels(fig)
    # the points sit at p / p_c(d): the OP d = 8 curve at 16/20 ... 24/20
    op8 = next(line for line in fig.axes[0].get_lines() if line.get_label() == "d = 8")
    assert list(op8.get_xdata()) == pytest.approx([0.8, 0.95, 1.05, 1.2])
    # the theory's crossing: a vertical line at x = 1 in every panel
    for ax in fig.axes[:4]:
        assert any(list(line.get_xdata()) == [1.0, 1.0] for line in ax.get_lines())


def test_collapse_view_skips_estimates_without_theory_and_fits_that_failed(tmp_path):
    ests = _synthetic()
    ests.append(dict(ests[0], d=16, theory={"p_c": math.nan, "alpha": math.nan}))
    ests.append(dict(ests[2], d=16, p_c=math.nan, p_c_low=math.nan, p_c_high=math.nan, slope=math.nan,
                     status="failed", theory={"p_c": 70.0, "alpha": load(16, 70.0)}))
    assert _is_png(figures.plot_collapse(ests, str(tmp_path / "b.png")))
    assert _is_png(figures.plot_success(ests, str(tmp_path / "a.png")))
    text = collapse_text(ests)
    assert "d = 16" not in text


def test_collapse_text_gives_the_crossings_and_marks_separated_unbracketed_and_lower_bounds():
    ests = _synthetic()
    text = collapse_text(ests)
    op8 = ests[0]
    assert f"d = 8: {op8['p_c'] / 20.0:.3f} [" in text
    assert "optimal OP d = 12 (`separated`)" in text and "optimal DP d = 12 (`unbracketed`)" in text
    assert "between 0.900 and 1.050 (bracket)" in text  # the loads 36 and 42 over the theory p_c 40
    assert "(extrapolated, no interval)" in text
    assert "rank-constrained optimal OP, d = 8" in text and "LOWER BOUNDS" in text and "kappa = 0.5:" in text
    assert "crosses P(stored) = 1/2 at x = 1" in text


def test_report_sections_keep_figure_1_first_and_put_the_collapse_view_after_it(tmp_path):
    ests = _synthetic()
    figs, text = {}, {}
    figs["fig1"], text["fig1"] = figure_success(str(tmp_path), ests)
    figs["fig1b"], text["fig1b"] = figure_collapse(str(tmp_path), ests)
    assert os.path.basename(figs["fig1"]) == "fig1_success_probability.png"
    assert os.path.basename(figs["fig1b"]) == "fig1b_collapse.png"
    for i in range(2, 8):
        figs[f"fig{i}"], text[f"fig{i}"] = str(tmp_path / f"fig{i}.png"), f"text {i}"
    report = open(_write_report(str(tmp_path), QUICK, figs, text, [{"quantity": "x"}], [])).read()
    heads = [line for line in report.splitlines() if line.startswith("## ") and line[3].isdigit()]
    assert [h.split(".")[0] for h in heads] == ["## 1", "## 1b", "## 2", "## 3", "## 4", "## 5", "## 6", "## 7"]
    assert "](fig1_success_probability.png)" in report and "](fig1b_collapse.png)" in report
    assert text["fig1b"] in report


def test_collapse_script_draws_both_figures_from_the_committed_full_run(tmp_path):
    import shutil
    import sys

    if str(ROOT) not in sys.path:  # the experiments live beside the package
        sys.path.insert(0, str(ROOT))
    script = importlib.import_module("experiments.reproduction.collapse")
    results = os.path.join(ROOT, "experiments", "reproduction", "full")
    shutil.copy(os.path.join(ROOT, "experiments", "reproduction", "README.md"), tmp_path / "README.md")
    estimates = script.load_estimates(results)  # refits every curve and checks p_c and status against the table
    # the committed run has fitted and separated curves (its last unbracketed one, DP d = 256, is
    # fitted since the run with DP generator 2)
    assert {e["status"] for e in estimates} >= {"ok", "separated"}
    script.main(["--results", results, "--out", str(tmp_path)])
    for name in ("full_fig1.png", "full_collapse.png"):
        assert _is_png(tmp_path / name)
    from experiments.pages import read_block

    assert read_block((tmp_path / "README.md").read_text(), "full_collapse") == collapse_text(estimates).strip()
