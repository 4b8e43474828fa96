"""Sphinx configuration of the linear-memory-capacity documentation.

Build with ``sphinx-build -W --keep-going -b html docs docs/_build/html``.

Three kinds of pages are written here at build time so that they cannot drift from the
code, the notes and the experiments (none of them is committed):

* ``api/generated/<package>.rst``: one autosummary list per package, made from the
  package's ``__all__`` (functions, result types, other classes);
* ``theory/<note>.md``: one page per ``notes/*.md``, which includes the note with
  myst-parser (the notes are never copied);
* ``results/<topic>.md``: one page per experiment topic, made from
  ``experiments/<topic>/README.md`` (the topic's results page, with its figures) by
  ``docs/results_pages.py``, with one title per page: the build stops when a page has
  another (a generated block's heading that restates the one it sits under is dropped);
* ``_static/landing/``: the landing page's figure (p_c against d, theory and certified
  measurements), its scoreboard summary and its first commands, made by
  ``docs/landing.py`` from ``replica/common/validity_table.json`` and ``README.md``.

The example gallery ``auto_examples/`` is written by sphinx-gallery, which runs every
``examples/plot_*.py`` script of the repository during the build (the build fails when
one fails). Formulas are typeset by a copy of MathJax shipped inside the site
(``sphinx-mathjax-offline``), so that they render without network access; the build
fails when a written page loads a stylesheet or a script from the network (``setup``).
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOCS))
os.environ.setdefault("NUMBA_CACHE_DIR", str(DOCS / "_build" / "numba-cache"))

import replica  # noqa: E402
import landing  # noqa: E402
import offline  # noqa: E402
import results_pages  # noqa: E402

project = "linear-memory-capacity"
author = "The linear-memory-capacity authors"
copyright = "2026, The linear-memory-capacity authors"
release = replica.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    # MathJax 3 from the sphinx-mathjax-offline wheel, copied into _static/mathjax and used
    # by sphinx.ext.mathjax (the default math renderer): no page loads anything from the network
    "sphinx-mathjax-offline",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
html_static_path = ["_static"]
html_theme = "pydata_sphinx_theme"
html_theme_options = {
    "show_toc_level": 2,
    "navigation_with_keys": False,
    # the landing page uses the full width for its figure and scoreboard summary
    "secondary_sidebar_items": {"**": ["page-toc"], "index": []},
}
html_sidebars = {"index": []}
html_css_files = ["landing.css"]
html_title = "linear-memory-capacity"
exclude_patterns = ["_build"]

# sphinx-gallery: the scripts live in the repository's examples/; their pages, figures
# and downloads are generated into docs/auto_examples/ (ignored by git) at every build.
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"__init__\.py",
    # a failing example stops nothing at once but fails the build at its end
    "abort_on_example_error": False,
    "only_warn_on_example_error": False,
    "plot_gallery": "True",
    "download_all_examples": False,
    "remove_config_comments": True,
    "matplotlib_animations": False,
    "image_scrapers": ("matplotlib",),
    # the scripts are numbered in reading order: plot_<n>_<name>.py
    "within_subsection_order": "FileNameSortKey",
    # show what a script prints, not the value of a cell's last expression
    "capture_repr": (),
    # the timing pages are written into docs/sg_execution_times.rst and
    # auto_examples/sg_execution_times.rst (both ignored by git); setup() below drops their
    # block that loads scripts from the network (docs/offline.py)
    "write_computation_times": True,
    "reset_modules": ("matplotlib",),
}

# myst-parser: the notes and reports are GitHub markdown; equations are $...$, $$...$$
# (dollarmath) or amsmath environments, rendered by MathJax (the local copy above).
myst_enable_extensions: list[str] = ["dollarmath", "amsmath"]
myst_heading_anchors = 3

# autosummary / autodoc / numpydoc
autosummary_generate = True
autosummary_imported_members = True
autodoc_member_order = "bysource"
autodoc_typehints = "none"
autodoc_default_options = {"members": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
# Docstrings are checked by their owners (ruff, tests); here only the sections that
# would break the rendering are validated.
numpydoc_validation_checks = set()

PACKAGES = {
    "replica": "Replica theory: closed forms, finite-size theory, laws and spectra (no random instances).",
    "validation": "Simulation: instances, solvers and what they decide.",
}


def _is_result_type(obj) -> bool:
    from replica.common.results import Result

    return inspect.isclass(obj) and issubclass(obj, Result)


def _api_page(package: str, summary: str) -> str:
    """The autosummary page of ``package``: every name of its ``__all__``, grouped by kind."""
    module = importlib.import_module(package)
    names = sorted(module.__all__, key=str.lower)
    groups = {"Functions": [], "Result types": [], "Classes": [], "Other names": []}
    for name in names:
        obj = getattr(module, name)
        if _is_result_type(obj):
            groups["Result types"].append(name)
        elif inspect.isclass(obj):
            groups["Classes"].append(name)
        elif callable(obj):
            groups["Functions"].append(name)
        else:
            groups["Other names"].append(name)
    title = f"``{package}``"
    lines = [
        ".. This file is written by docs/conf.py from the package's __all__; do not edit.",
        "",
        title,
        "=" * len(title),
        "",
        summary,
        "",
        f".. automodule:: {package}",
        "   :no-members:",
        "",
        f".. currentmodule:: {package}",
        "",
    ]
    for heading, members in groups.items():
        if not members:
            continue
        lines += [heading, "-" * len(heading), "", ".. autosummary::", "   :toctree: .", ""]
        lines += [f"   {name}" for name in members]
        lines.append("")
    return "\n".join(lines)


def _theory_page(note: Path) -> str:
    rel = os.path.relpath(note, DOCS / "theory")
    return (
        f"<!-- This file is written by docs/conf.py: it includes notes/{note.name}; do not edit. -->\n\n"
        f"```{{include}} {rel}\n```\n\n"
        f"*Source: `notes/{note.name}` in the repository.*\n"
    )


def _write_if_changed(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def _write_generated_pages() -> None:
    for package, summary in PACKAGES.items():
        _write_if_changed(DOCS / "api" / "generated" / f"{package}.rst", _api_page(package, summary))
    notes = sorted((ROOT / "notes").glob("*.md"))
    for note in notes:
        _write_if_changed(DOCS / "theory" / note.name, _theory_page(note))
    topics = sorted(p.parent for p in (ROOT / "experiments").glob("*/README.md"))
    problems = []
    for topic in topics:
        page = results_pages.results_page(topic, DOCS / "results", ROOT / "experiments")
        problems += [f"results/{topic.name}.md: {problem}" for problem in results_pages.heading_problems(page)]
        _write_if_changed(DOCS / "results" / f"{topic.name}.md", page)
    if problems:  # one title per results page (docs/results_pages.py)
        raise RuntimeError("results pages without one clean title:\n  " + "\n  ".join(problems))
    for folder, names in ((DOCS / "theory", {note.name for note in notes}),
                          (DOCS / "results", {f"{topic.name}.md" for topic in topics})):
        for page in folder.glob("*.md"):  # the page of a note or topic that was removed
            if page.name not in names and "written by docs/conf.py" in page.read_text(encoding="utf-8"):
                page.unlink()


_write_generated_pages()
landing.write_landing(DOCS / "_static" / "landing")


# -- offline: no page loads a stylesheet or a script from the network (docs/offline.py) --------


def _drop_remote_assets(app, docname, source):
    if docname.rsplit("/", 1)[-1] == offline.TIMING_PAGE:
        source[0] = offline.drop_raw_html(source[0])


def _check_offline(app, exception):
    """Fail the build when a written page loads a stylesheet or a script from the network."""
    if exception is not None or app.builder.format != "html":
        return
    remote = offline.remote_assets_in_site(Path(app.outdir))
    if remote:
        from sphinx.errors import ExtensionError

        raise ExtensionError("pages that load a stylesheet or a script from the network:\n  "
                             + "\n  ".join(remote[:20]))


def setup(app):
    app.connect("source-read", _drop_remote_assets)
    app.connect("build-finished", _check_offline)
