"""Look at the documentation as a reader does: build the site, serve it on localhost, open pages
in headless Chromium, save screenshots and report whether their mathematics was typeset.

    python docs/_tools/screenshots.py [--out DIR] [--site DIR] [PAGE ...]

PAGE is a site path such as ``formulations/eisenberg_gale/`` (default: a formulation page, an
API page and a proof). Needs Debian's ``chromium``; nothing else, and no network: the site bundles
KaTeX (``docs/vendor/katex``) and loads nothing from another host. The server refuses any path
outside the site, so a page that still referenced a CDN would show its maths as raw TeX here.
Prints, per page, the number of typeset formulas (``.katex`` elements in the rendered DOM),
KaTeX errors, and formulas left as raw ``\\(`` ``\\)`` text; exits 1 if a page has an error or
an untypeset formula.
"""

from __future__ import annotations

import argparse
import functools
import http
import http.server
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = ("formulations/eisenberg_gale/", "api/markets/", "proofs/market_equilibrium/")
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--hide-scrollbars")
WINDOW = "1280,1800"
#: milliseconds of page time Chromium lets scripts run before it captures the page
SCRIPT_BUDGET_MS = 8000
TIMEOUT_S = 120


def build(site: Path) -> float:
    """``mkdocs build --strict`` into ``site``; returns the seconds it took."""
    import time

    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
                   cwd=ROOT, check=True, env={**_env(), "NO_MKDOCS_2_WARNING": "1"})
    return time.perf_counter() - t0


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)


class Handler(http.server.SimpleHTTPRequestHandler):
    """The site's static files, quietly."""

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass


def serve(site: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    """Serve ``site`` on a free loopback port; returns the server and its base address."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             functools.partial(Handler, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def chromium(args: list[str], profile: Path) -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        raise SystemExit("chromium not found: apt-get install -y chromium")
    proc = subprocess.run([exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                           f"--window-size={WINDOW}",
                           f"--virtual-time-budget={SCRIPT_BUDGET_MS}", *args],
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    return proc.stdout


def check_dom(dom: str) -> dict[str, int]:
    """Typeset formulas, KaTeX errors, and arithmatex spans still holding raw TeX."""
    raw = re.findall(r'class="arithmatex">\s*\\[\(\[]', dom)
    return {"typeset": len(re.findall(r'class="katex"', dom)),
            "errors": len(re.findall(r'class="katex-error"', dom)),
            "untypeset": len(raw)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("pages", nargs="*", default=list(PAGES))
    ap.add_argument("--out", type=Path,
                    default=Path(tempfile.gettempdir()) / "fairalloc-screenshots")
    ap.add_argument("--site", type=Path, help="an already built site (default: build one)")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        site = args.site
        if site is None:
            site = Path(tmp) / "site"
            print(f"built the site in {build(site):.1f} s")
        server, base = serve(site)
        bad = 0
        try:
            for page in args.pages:
                url = base + page.lstrip("/")
                name = page.strip("/").replace("/", "_") or "index"
                png = args.out / f"{name}.png"
                chromium([f"--screenshot={png}", url], Path(tmp) / f"p-{name}-1")
                counts = check_dom(chromium(["--dump-dom", url], Path(tmp) / f"p-{name}-2"))
                ok = counts["errors"] == 0 and counts["untypeset"] == 0 and png.exists()
                bad += not ok
                print(f"{page}: {counts['typeset']} formulas typeset, {counts['errors']} KaTeX "
                      f"errors, {counts['untypeset']} left as raw TeX -> {png}"
                      + ("" if ok else "  FAILED"))
        finally:
            server.shutdown()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
