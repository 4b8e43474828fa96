"""The results pages of the site: one page per ``experiments/<topic>/README.md``.

``docs/conf.py`` calls :func:`results_page` at build time for every topic folder and writes
the text to ``docs/results/<topic>.md`` (not committed).  Two things happen to the
README on the way:

* paths of figures, links and included files are made relative to ``docs/results`` (the
  README's own paths are relative to its folder), and a link to another topic's README
  becomes a link to that topic's results page;
* **one title per page.**  A generated block (``<!-- BEGIN generated: NAME ... -->``) is
  written by its script as a page of its own and often opens with a heading that
  restates the heading it sits under (``# Rectangular memories ... (theory)`` followed by
  ``## Rectangular memories ...: theory tables``).  When a block is the only block with a
  heading in its section of the README, its opening heading is dropped and the block's
  own sub-headings move up to sit directly under the section's heading.  Blocks that
  share a section keep their headings: there they tell the blocks apart.

:func:`heading_problems` lists what breaks that rule in a page's text (more than one
level-1 heading, a heading that skips a level, two headings in a row with the same text,
a block heading left alone under a section heading); ``conf.py`` fails the build on any,
and ``tests/test_docs_site.py`` runs it over every topic without building the site.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Heading", "headings", "merge_block_headings", "heading_problems", "results_page"]

HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
BEGIN = re.compile(r"^<!-- BEGIN generated: (\S+)")
END = re.compile(r"^<!-- END generated: (\S+)")


@dataclass(frozen=True)
class Heading:
    """One markdown heading of a page.

    Attributes
    ----------
    line : int
        Its line index in the text.
    level : int
        1 for ``#``, 2 for ``##``, ...
    text : str
        The heading's text.
    block : str or None
        The generated block it lies in, or None for the page's hand-written text.
    opens_block : bool
        True when it is the first non-blank line of its generated block.
    """

    line: int
    level: int
    text: str
    block: str | None
    opens_block: bool


def headings(lines: list[str]) -> list[Heading]:
    """Every ATX heading of ``lines`` outside fenced code, with the generated block it lies in."""
    found: list[Heading] = []
    fence: str | None = None
    block: str | None = None
    first_in_block = False
    for index, line in enumerate(lines):
        fence_match = FENCE.match(line)
        if fence is not None:
            if fence_match and fence_match.group(1)[0] == fence[0] and len(fence_match.group(1)) >= len(fence):
                fence = None
            continue
        if fence_match:
            fence = fence_match.group(1)
            first_in_block = False
            continue
        if BEGIN.match(line):
            block, first_in_block = BEGIN.match(line).group(1), True
            continue
        if END.match(line):
            block, first_in_block = None, False
            continue
        heading = HEADING.match(line)
        if heading:
            found.append(Heading(index, len(heading.group(1)), heading.group(2), block,
                                 block is not None and first_in_block))
        if line.strip():
            first_in_block = False
    return found


def _sections(found: list[Heading]) -> dict[int, list[Heading]]:
    """The block-opening headings grouped by the hand-written heading they sit under (its line)."""
    groups: dict[int, list[Heading]] = {}
    section: Heading | None = None
    for heading in found:
        if heading.block is None:
            section = heading
        elif heading.opens_block and section is not None:
            groups.setdefault(section.line, []).append(heading)
    return groups


def _lone_openers(found: list[Heading]) -> dict[int, Heading]:
    """The block-opening headings that are alone in their section and can be merged into it
    (their block holds no other heading at or above their level), by the section's line."""
    lone = {}
    for section_line, openers in _sections(found).items():
        if len(openers) != 1:
            continue
        opener = openers[0]
        inside = [h for h in found if h.block == opener.block and h.line > opener.line]
        if all(h.level > opener.level for h in inside):
            lone[section_line] = opener
    return lone


def merge_block_headings(text: str) -> str:
    """Drop the opening heading of every generated block that is alone in its section.

    The block's other headings move so that its first sub-level sits one level below the
    section's heading.  A block that holds another heading at or above its opening
    heading's level keeps everything (merging it would lift that heading to the section's
    level).
    """
    lines = text.split("\n")
    found = headings(lines)
    by_line = {h.line: h for h in found}
    drop: set[int] = set()
    relevel: dict[int, int] = {}
    for section_line, opener in _lone_openers(found).items():
        section = by_line[section_line]
        inside = [h for h in found if h.block == opener.block and h.line > opener.line]
        drop.add(opener.line)
        for h in inside:
            relevel[h.line] = h.level - opener.level + section.level
    out: list[str] = []
    skip_blank = False
    for index, line in enumerate(lines):
        if index in drop:
            skip_blank = True
            continue
        if skip_blank and not line.strip():
            skip_blank = False
            continue
        skip_blank = False
        if index in relevel:
            line = "#" * relevel[index] + " " + by_line[index].text
        out.append(line)
    return "\n".join(out)


def heading_problems(text: str) -> list[str]:
    """What keeps a page from having one title and a clean outline (empty when nothing does)."""
    found = headings(text.split("\n"))
    problems = []
    titles = [h for h in found if h.level == 1]
    if len(titles) != 1:
        problems.append(f"{len(titles)} level-1 headings (one title expected): "
                        + "; ".join(h.text for h in titles))
    if found and found[0].level != 1:
        problems.append(f"the first heading is not the title: {found[0].text!r}")
    for before, after in zip(found, found[1:]):
        if after.level > before.level + 1:
            problems.append(f"heading {after.text!r} (level {after.level}) follows "
                            f"{before.text!r} (level {before.level}): a level is skipped")
        if after.text.strip().lower() == before.text.strip().lower():
            problems.append(f"two headings in a row read {after.text!r}")
    by_line = {h.line: h for h in found}
    for section_line, opener in _lone_openers(found).items():
        problems.append(f"generated heading {opener.text!r} restates the section "
                        f"{by_line[section_line].text!r} it sits under")
    return problems


def results_page(topic: Path, results_dir: Path, experiments_dir: Path) -> str:
    """The text of the results page of ``topic`` (an ``experiments/<topic>`` folder).

    Parameters
    ----------
    topic : Path
        The topic folder; its ``README.md`` is the page.
    results_dir : Path
        The folder the page is written to (``docs/results``); paths are made relative to it.
    experiments_dir : Path
        The ``experiments`` folder, to recognise links to another topic's README.

    Returns
    -------
    str
        The page's markdown, with one title (:func:`merge_block_headings`).
    """
    def moved(path: str) -> str:
        if "://" in path or path.startswith(("/", "#")):
            return path
        return os.path.relpath(topic / path, results_dir)

    def linked(path: str) -> str:
        """A link to another topic's README becomes a link to that topic's results page."""
        target, _, anchor = path.partition("#")
        if "://" in target or not target.endswith("README.md"):
            return path
        folder = (topic / target).resolve().parent
        if folder.parent == experiments_dir.resolve() and (folder / "README.md").exists():
            return f"{folder.name}.md" + (f"#{anchor}" if anchor else "")
        return path

    text = (topic / "README.md").read_text(encoding="utf-8")
    text = re.sub(r"(!\[[^\]]*\]\()([^)\s]+)(\))", lambda m: m.group(1) + moved(m.group(2)) + m.group(3), text)
    text = re.sub(r"((?<!!)\[[^\]]*\]\()([^)\s]+)(\))", lambda m: m.group(1) + linked(m.group(2)) + m.group(3), text)
    text = re.sub(r"^(```\{include\} )(\S+)$", lambda m: m.group(1) + moved(m.group(2)), text, flags=re.M)
    text = merge_block_headings(text)
    return (f"<!-- This file is written by docs/conf.py from experiments/{topic.name}/README.md; do not edit. -->\n\n"
            + text.rstrip("\n") + "\n\n"
            f"*Source: `experiments/{topic.name}/` in the repository (scripts, data, figures and this page).*\n")
