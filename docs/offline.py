"""The site renders whole without network: no page loads a stylesheet or a script from elsewhere.

Formulas are typeset by a copy of MathJax inside the site (``sphinx-mathjax-offline``).
sphinx-gallery's timing pages (``sg_execution_times.rst``, one for all galleries in
``docs/`` and one in ``auto_examples/``, both written at build time and not committed)
open with a raw HTML block that loads Bootstrap, jQuery and DataTables from CDNs, only to
make their table sortable; :func:`drop_raw_html` removes that block as Sphinx reads the page
(``docs/conf.py``, event ``source-read``), and the table stays, in the theme's own style.
:func:`remote_assets_in_site` lists what a built site still loads from the network;
``docs/conf.py`` fails the build on any (event ``build-finished``), and
``tests/test_docs_site.py`` checks a built site when there is one.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["TIMING_PAGE", "drop_raw_html", "remote_assets", "remote_assets_in_site"]

TIMING_PAGE = "sg_execution_times"
RAW_HTML_BLOCK = re.compile(r"^(?P<indent>[ ]*)\.\. raw:: html\n(?:(?P=indent)[ ]+.*\n|[ \t]*\n)*", re.M)
REMOTE_ASSET = re.compile(
    r"<(?:link|script)\b[^>]*?\b(?:href|src)\s*=\s*[\"']((?:https?:)?//[^\"']+)[\"']", re.I)


def drop_raw_html(text: str) -> str:
    """``text`` (reStructuredText) without its ``.. raw:: html`` blocks."""
    return RAW_HTML_BLOCK.sub("", text)


def remote_assets(html: str) -> list[str]:
    """The network URLs of the stylesheets and scripts an HTML page loads."""
    return REMOTE_ASSET.findall(html)


def remote_assets_in_site(outdir: Path) -> list[str]:
    """``page: url`` for every stylesheet or script a built site's pages load from the network."""
    outdir = Path(outdir)
    found = []
    for page in sorted(outdir.rglob("*.html")):
        if "_static" in page.relative_to(outdir).parts:
            continue
        html = page.read_text(encoding="utf-8", errors="replace")
        found += [f"{page.relative_to(outdir).as_posix()}: {url}" for url in remote_assets(html)]
    return found
