"""Generated blocks inside hand-written pages.

A page (an experiment's ``README.md``, the project ``README.md``, a note) keeps its
hand-written text, and every number a script computes sits between two markers::

    <!-- BEGIN generated: NAME (python -m experiments run EXPERIMENT) -->
    ...
    <!-- END generated: NAME -->

:func:`replace_block` swaps the text between the markers of one block and leaves the rest
of the page alone; :func:`write_block` does it in a file.  The command in the opening
marker says which experiment writes the block.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["replace_block", "write_block", "read_block", "demote_headings", "begin_marker", "end_marker"]


def begin_marker(name: str, experiment: str) -> str:
    """The opening marker of block ``name``, written by ``experiment``."""
    return f"<!-- BEGIN generated: {name} (python -m experiments run {experiment}) -->"


def end_marker(name: str) -> str:
    """The closing marker of block ``name``."""
    return f"<!-- END generated: {name} -->"


def _span(text: str, name: str, where: str) -> tuple[int, int, int]:
    """Start of the opening marker, end of it, and start of the closing marker of block ``name``."""
    opening = re.compile(r"<!-- BEGIN generated: " + re.escape(name) + r" \([^)]*\) -->")
    found = list(opening.finditer(text))
    if len(found) != 1:
        raise ValueError(f"{where}: {len(found)} opening markers of the generated block {name!r} (need exactly 1)")
    close = text.find(end_marker(name), found[0].end())
    if close < 0:
        raise ValueError(f"{where}: the generated block {name!r} has no closing marker {end_marker(name)!r}")
    return found[0].start(), found[0].end(), close


def replace_block(text: str, name: str, body: str | list[str], experiment: str, *, where: str = "page") -> str:
    """``text`` with the block ``name`` replaced by ``body`` (a string or a list of lines).

    Raises
    ------
    ValueError
        When the page does not hold exactly one block of that name (``where`` names the page).
    """
    if not isinstance(body, str):
        body = "\n".join(body)
    start, _, close = _span(text, name, where)
    return text[:start] + begin_marker(name, experiment) + "\n" + body.rstrip("\n") + "\n" + text[close:]


def read_block(text: str, name: str, *, where: str = "page") -> str:
    """The text of block ``name`` (without its markers)."""
    _, body_start, close = _span(text, name, where)
    return text[body_start:close].strip("\n")


def write_block(path: Path, name: str, body: str | list[str], experiment: str) -> bool:
    """Write block ``name`` of the page at ``path``; return whether the file changed."""
    path = Path(path)
    old = path.read_text()
    new = replace_block(old, name, body, experiment, where=str(path))
    if new != old:
        path.write_text(new)
    return new != old


def demote_headings(markdown: str, levels: int = 1) -> str:
    """Markdown with every heading (outside code fences) moved ``levels`` levels down.

    A generated page written as a document of its own starts at ``#``; inside a topic page
    its headings sit below the page title.
    """
    out, fence = [], False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fence = not fence
        if not fence and re.match(r"#+ ", line):
            line = "#" * levels + line
        out.append(line)
    return "\n".join(out) + ("\n" if markdown.endswith("\n") else "")

