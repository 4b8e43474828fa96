"""The documentation site without building it: one title per results page, a landing page
made from the committed data, and no page that needs the network.

The pages are checked as ``docs/conf.py`` writes them (``docs/results_pages.py``,
``docs/landing.py``, ``docs/offline.py``); a built site in ``docs/_build/html``, when there
is one, is checked too.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
SITE = DOCS / "_build" / "html"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"docs_{name}", DOCS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


results_pages = _load("results_pages")
landing = _load("landing")
offline = _load("offline")

TOPICS = sorted(p.parent.name for p in (REPO / "experiments").glob("*/README.md"))


@pytest.mark.parametrize("topic", TOPICS)
def test_every_results_page_has_one_title(topic):
    page = results_pages.results_page(REPO / "experiments" / topic, DOCS / "results", REPO / "experiments")
    assert results_pages.heading_problems(page) == []


PAGE = """# Topic title

Prose.

<!-- BEGIN generated: one (python -m experiments run one) -->
## Topic title: tables

Header.

### First table

```text
# not a heading
```

### Second table
<!-- END generated: one -->

## A section

<!-- BEGIN generated: two (python -m experiments run two) -->
## Part two at d = 8
<!-- END generated: two -->

<!-- BEGIN generated: three (python -m experiments run three) -->
## Part two at d = 16
<!-- END generated: three -->
"""


def test_a_block_alone_under_its_section_loses_its_restated_heading():
    merged = results_pages.merge_block_headings(PAGE)
    outline = [("#" * h.level, h.text) for h in results_pages.headings(merged.split("\n"))]
    assert outline == [("#", "Topic title"), ("##", "First table"), ("##", "Second table"),
                       ("##", "A section"), ("##", "Part two at d = 8"), ("##", "Part two at d = 16")]
    assert "# not a heading" in merged  # code is left alone
    assert results_pages.heading_problems(merged) == []
    problems = results_pages.heading_problems(PAGE)
    assert any("restates the section 'Topic title'" in p for p in problems)


def test_a_block_with_sections_of_its_own_keeps_them():
    page = ("# Title\n\n<!-- BEGIN generated: one (x) -->\n## Part A\n\ntext\n\n## Part B\n\ntext\n"
            "<!-- END generated: one -->\n")
    assert results_pages.merge_block_headings(page) == page
    assert results_pages.heading_problems(page) == []


def test_heading_problems_names_a_second_title_and_a_skipped_level():
    problems = results_pages.heading_problems("# One\n\n### Deep\n\n# Two\n")
    assert any("2 level-1 headings" in p for p in problems)
    assert any("a level is skipped" in p for p in problems)


def test_summary_counts_every_point_of_the_validity_table():
    table = landing.load_table()
    summary = landing.summary_rst(table)
    counted = {verdict: sum(int(n) for n in re.findall(rf":v-{verdict}:`(\d+)`", summary))
               for verdict in landing.VERDICTS}
    expected = {verdict: 0 for verdict in landing.VERDICTS}
    for quantity in table["quantities"].values():
        for model in quantity["models"].values():
            for regime in model["regimes"]:
                for point in regime["points"]:
                    expected[point["verdict"]] += 1
    assert counted == expected
    rows = sum(len(quantity["models"]) for quantity in table["quantities"].values())
    assert summary.count("   * - ") == rows + 1  # and the header


def test_figure_points_come_from_the_table_with_their_interval_kind():
    table = landing.load_table()
    series = landing.capacity_series(table)
    raw = json.dumps(table)
    for s in series.values():
        assert s.points
        for point in s.points:
            assert json.dumps(point["measured_text"]) in raw
            assert point["trials"] > 0
    assert {p["kind"] for p in series["rank"].points} == {"lower_bound"}
    assert {p["kind"] for p in series["optimal"].points} <= {"interval", "bracket"}
    text = landing.figure_rst(series, "/_static/landing/capacity.png")
    assert "trials each" in text and "lower bound" in text


def test_commands_are_the_readmes():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    text = landing.commands_rst(readme)
    first = re.search(r"```bash\n(.+)\n", readme).group(1)
    for command in first.split("&&"):
        assert f"   {command.strip()}\n" in text
    assert ">>> import replica" in text


TIMING_PAGE = """
Computation times
=================

.. container::

  .. raw:: html

    <script src="https://code.jquery.com/jquery-3.7.0.js"></script>
    <link href="https://cdn.datatables.net/1.13.6/css/dataTables.bootstrap5.min.css" rel="stylesheet" />

  .. list-table::
   :header-rows: 1

   * - Example
     - Time
"""


def test_the_timing_page_loses_its_network_block_and_keeps_its_table():
    text = offline.drop_raw_html(TIMING_PAGE)
    assert "https://" not in text and "raw::" not in text
    assert ".. list-table::" in text and "* - Example" in text


def test_sphinx_gallery_timing_page_is_still_what_is_dropped(tmp_path):
    gen_gallery = pytest.importorskip("sphinx_gallery.gen_gallery")
    conf = {"write_computation_times": True, "src_dir": str(tmp_path)}
    gen_gallery.write_computation_times(conf, None, [])
    page = tmp_path / "sg_execution_times.rst"
    if not page.exists():
        pytest.skip("this sphinx-gallery writes no timing page without examples")
    text = page.read_text(encoding="utf-8")
    assert offline.remote_assets(offline.drop_raw_html(text)) == []
    assert not re.search(r"(https?:)?//[\w.-]+/\S+\.(js|css)", offline.drop_raw_html(text))


def test_remote_assets_are_found():
    html = ('<link rel="stylesheet" href="_static/a.css"><script src="//cdn.example/x.js"></script>'
            '<link href="https://cdn.example/y.css" rel="stylesheet"><a href="https://arxiv.org">paper</a>')
    assert offline.remote_assets(html) == ["//cdn.example/x.js", "https://cdn.example/y.css"]


@pytest.mark.skipif(not (SITE / "index.html").exists(), reason="no built site in docs/_build/html")
def test_built_site():
    assert offline.remote_assets_in_site(SITE) == []
    for page in sorted((SITE / "results").glob("*.html")):
        assert page.read_text(encoding="utf-8").count("<h1") == 1, page.name
