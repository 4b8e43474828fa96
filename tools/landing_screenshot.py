"""Screenshot of the landing page of the built site, as a reader first sees it (1280 x 900).

Usage::

    sphinx-build -W -b html docs docs/_build/html
    python tools/landing_screenshot.py [--site docs/_build/html] [--out docs/_static/landing.png]

Opens ``index.html`` from the file system in headless Chromium (Debian's ``chromium``
package; another binary with ``--browser``) with the network switched off (a proxy that
leads nowhere), in a 1280 x 900 window, and writes the PNG that ``docs/contributing.md``
shows.  Exit status 2 when there is no browser or no built site.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WINDOW = "1280,900"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--hide-scrollbars", "--proxy-server=127.0.0.1:9",
         "--proxy-bypass-list=<-loopback>", "--host-resolver-rules=MAP * ~NOTFOUND",
         "--virtual-time-budget=5000")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, default=ROOT / "docs" / "_build" / "html")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "_static" / "landing.png")
    parser.add_argument("--window", default=WINDOW, help="width,height in pixels (default %(default)s)")
    parser.add_argument("--browser", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = parser.parse_args(argv)
    if not Path(args.browser).exists():
        print(f"landing_screenshot: no browser at {args.browser} (apt-get install chromium)", file=sys.stderr)
        return 2
    index = args.site / "index.html"
    if not index.exists():
        print(f"landing_screenshot: no built site at {args.site} (run sphinx-build first)", file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([args.browser, *FLAGS, f"--user-data-dir={profile}", f"--window-size={args.window}",
                        f"--screenshot={args.out.resolve()}", index.resolve().as_uri()],
                       check=True, capture_output=True, timeout=120)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
