"""Check that every page of a built site shows its formulas typeset, with the network off.

Usage::

    sphinx-build -b html docs docs/_build/html
    python tools/check_math_rendered.py docs/_build/html

Opens every ``.html`` file of the site (``_static/`` excepted) from the file system in
headless Chromium (Debian's ``chromium`` package, ``/usr/bin/chromium``; another binary
with ``--chromium PATH`` or the variable ``CHROMIUM``), with the network switched off
(DevTools' offline emulation, and a proxy that leads nowhere), waits for the page's load
and for MathJax to finish typesetting, and reads the page's visible text
(``document.body.innerText``). A page fails when that text still holds a raw TeX
delimiter, ``\\(``, ``\\[`` or ``$$``: its math was not rendered (for instance because
the renderer could not be loaded without network). Code blocks (``pre``, ``code``) are
hidden before the text is read, so that a page may show TeX source as code.

Exit status: 0 when no page fails, 1 when some do (each is listed with the offending
text), 2 when Chromium cannot be started or a page cannot be read.

Chromium is driven through the DevTools protocol over a pipe (``--remote-debugging-pipe``:
requests on file descriptor 3, answers on 4), so no port is opened and nothing but the
standard library is needed.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DELIMITERS = ("\\(", "\\[", "$$")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--mute-audio", "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
         "--host-resolver-rules=MAP * ~NOTFOUND")
PAGE_TIMEOUT = 60.0

# Run in each page once it has loaded: wait for MathJax (when the page loads it) to end its
# first typesetting pass, hide code, and return the visible text.
READ_TEXT = """
(async () => {
  const mj = window.MathJax;
  if (mj && mj.startup && mj.startup.promise) {
    await mj.startup.promise;
  }
  for (const el of document.querySelectorAll('pre, code')) { el.style.display = 'none'; }
  return JSON.stringify({
    text: document.body ? document.body.innerText : '',
    mathjax: !!(mj && mj.version),
    math: document.querySelectorAll('.math, mjx-container').length,
  });
})()
"""


class Chromium:
    """A headless Chromium driven through the DevTools protocol over a pipe."""

    def __init__(self, binary: str):
        self.profile = tempfile.mkdtemp(prefix="check-math-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def wire_fds():  # in the child: requests on fd 3, answers on fd 4, both kept across exec
            high_r = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 10)  # copies above 4, so that the
            high_w = fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 10)  # dup2 below clobbers neither
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        self.proc = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self.profile}", "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            # dup2 makes fds 3 and 4 inheritable; close_fds=False keeps them open across exec
            # (every other descriptor of this process is non-inheritable, PEP 446)
            preexec_fn=wire_fds, close_fds=False)
        os.close(to_child_r)
        os.close(from_child_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict] = []

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=10)
        except Exception:  # noqa: BLE001 - the browser may already be gone
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("no answer from Chromium")
            ready, _, _ = select.select([self._from_child], [], [], max(0.0, min(1.0, deadline - time.monotonic())))
            if ready:
                chunk = os.read(self._from_child, 1 << 20)
                if not chunk:
                    raise RuntimeError("Chromium closed its DevTools pipe (did it start?)")
                self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method: str, params: dict | None = None, session: str | None = None,
             timeout: float = PAGE_TIMEOUT) -> dict:
        self._next_id += 1
        request = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            request["sessionId"] = session
        os.write(self._to_child, json.dumps(request).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            message = self._read_message(deadline)
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def wait_event(self, method: str, session: str, timeout: float = PAGE_TIMEOUT) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            for i, event in enumerate(self.events):
                if event.get("method") == method and event.get("sessionId") == session:
                    return self.events.pop(i)
            self.events.append(self._read_message(deadline))


def find_chromium(explicit: str | None) -> str | None:
    for candidate in (explicit, os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if candidate and shutil.which(candidate):
            return shutil.which(candidate)
    return None


def raw_delimiters(text: str) -> list[str]:
    """Short excerpts of ``text`` around each raw TeX delimiter (at most 5)."""
    pattern = "|".join(re.escape(d) for d in DELIMITERS)
    found = []
    for match in re.finditer(pattern, text):
        excerpt = text[max(0, match.start() - 30): match.end() + 40].replace("\n", " ")
        found.append(excerpt)
        if len(found) == 5:
            break
    return found


def pages_of(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("*.html") if "_static" not in p.relative_to(site).parts)


def check(site: Path, binary: str, verbose: bool = False) -> tuple[int, dict[str, list[str]]]:
    """Open every page of ``site``; return the number checked and the offenders."""
    pages = pages_of(site)
    offenders: dict[str, list[str]] = {}
    browser = Chromium(binary)
    try:
        target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        browser.send("Page.enable", session=session)
        browser.send("Network.enable", session=session)
        browser.send("Network.emulateNetworkConditions", {"offline": True, "latency": 0, "downloadThroughput": -1,
                                                          "uploadThroughput": -1}, session=session)
        for page in pages:
            browser.events.clear()
            browser.send("Page.navigate", {"url": page.resolve().as_uri()}, session=session)
            browser.wait_event("Page.loadEventFired", session)
            result = browser.send("Runtime.evaluate", {"expression": READ_TEXT, "awaitPromise": True,
                                                       "returnByValue": True}, session=session)
            if "exceptionDetails" in result:
                raise RuntimeError(f"{page}: {result['exceptionDetails'].get('text')}")
            info = json.loads(result["result"]["value"])
            excerpts = raw_delimiters(info["text"])
            name = str(page.relative_to(site))
            if excerpts:
                offenders[name] = excerpts
            if verbose:
                print(f"{'FAIL' if excerpts else 'ok  '} {name} (math elements {info['math']}, "
                      f"MathJax {'loaded' if info['mathjax'] else 'absent'})")
    finally:
        browser.close()
    return len(pages), offenders


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", type=Path, help="the built HTML site (a folder of .html files)")
    parser.add_argument("--chromium", help="the Chromium binary (default: $CHROMIUM, then chromium on PATH)")
    parser.add_argument("--verbose", "-v", action="store_true", help="one line per page")
    args = parser.parse_args(argv)
    if not args.site.is_dir():
        print(f"check_math_rendered: {args.site} is not a folder", file=sys.stderr)
        return 2
    binary = find_chromium(args.chromium)
    if binary is None:
        print("check_math_rendered: no Chromium found (Debian: apt-get install -y chromium)", file=sys.stderr)
        return 2
    start = time.monotonic()
    try:
        checked, offenders = check(args.site, binary, verbose=args.verbose)
    except (RuntimeError, TimeoutError, OSError) as error:
        print(f"check_math_rendered: {error}", file=sys.stderr)
        return 2
    if checked == 0:
        print(f"check_math_rendered: no .html page under {args.site}", file=sys.stderr)
        return 2
    for name, excerpts in offenders.items():
        print(f"raw TeX in {name}:")
        for excerpt in excerpts:
            print(f"    ...{excerpt}...")
    print(f"check_math_rendered: {checked} pages checked in {time.monotonic() - start:.0f} s, "
          f"{len(offenders)} with raw TeX delimiters ({', '.join(DELIMITERS)}) in their visible text")
    return 1 if offenders else 0


if __name__ == "__main__":
    sys.exit(main())
