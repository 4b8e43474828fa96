"""Screenshots of the built documentation site, to look at it as a reader does.

Usage::

    sphinx-build -b html docs docs/_build/html
    python tools/screenshots.py [--site docs/_build/html] [--out docs/_build/screenshots]

Takes PNG screenshots of the index, the tutorial, the API page and two results pages with
headless Chromium (Debian's ``chromium`` package, ``/usr/bin/chromium``).  The pages are
opened from the file system; nothing is fetched from the network (the site ships its own
copy of MathJax, so equations are typeset; ``tools/check_math_rendered.py`` checks every
page for that).  The screenshots are not committed.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PAGES = ("index.html", "tutorial/index.html", "api/index.html", "results/headline.html",
         "results/margins.html", "theory/finite_size_capacity.html")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--window-size=1280,1600")


def main(argv=None) -> int:
    root = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, default=root / "_build" / "html")
    parser.add_argument("--out", type=Path, default=root / "_build" / "screenshots")
    parser.add_argument("--browser", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = parser.parse_args(argv)
    if not Path(args.browser).exists():
        print(f"screenshots: no browser at {args.browser} (apt-get install chromium)", file=sys.stderr)
        return 2
    if not (args.site / "index.html").exists():
        print(f"screenshots: no built site at {args.site} (run sphinx-build first)", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    for page in PAGES:
        target = args.out / (page.replace("/", "_").removesuffix(".html") + ".png")
        with tempfile.TemporaryDirectory() as profile:
            subprocess.run([args.browser, *FLAGS, f"--user-data-dir={profile}", f"--screenshot={target}",
                            (args.site / page).resolve().as_uri()],
                           check=True, capture_output=True, timeout=120)
        print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
