"""Every code example of the README and the tutorial runs as a doctest.

The shown outputs are the package's real outputs: a changed number fails here, so a page
cannot drift from the code.  Outputs are printed at the precision the arithmetic carries
on any machine (``docs/reproducibility.md``): closed forms in full, solver margins to
three digits, statuses as words.
"""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = {"README.md": 8, "docs/tutorial/index.md": 10}  # page -> least number of examples


@pytest.mark.parametrize("page", sorted(PAGES))
def test_examples_run_as_shown(page):
    # a code fence ends an example's expected output, as a blank line would
    text = "\n".join("" if line.strip().startswith("```") else line
                      for line in (ROOT / page).read_text().splitlines())
    parser = doctest.DocTestParser()
    test = parser.get_doctest(text, {}, page, str(ROOT / page), 0)
    assert len(test.examples) >= PAGES[page], f"{page}: only {len(test.examples)} examples found"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    out = []
    runner.run(test, out=out.append)
    assert runner.failures == 0, "".join(out)
