"""Look at the documentation as a reader does: build the site, serve it on localhost, open pages
in headless Chromium, save screenshots and report whether their mathematics was typeset.

    python docs/_tools/screenshots.py [--out DIR] [--site DIR] [PAGE ...]

PAGE is a site path such as ``formulations/eisenberg_gale/`` (default: a formulation page, an
API page and a proof). Needs Debian's ``chromium`` and, because the build loads KaTeX from a CDN
that an offline machine cannot reach, a local copy of the same KaTeX version (Debian's
``libjs-katex``, ``/usr/share/javascript/katex``, or ``--katex DIR``): the server answers the
CDN address's files from it (``/_katex/``) and rewrites the pages' KaTeX URLs to that path.
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
CDN = re.compile(r"https://cdn\.jsdelivr\.net/npm/katex@[\d.]+/dist/")
PAGES = ("formulations/eisenberg_gale/", "api/markets/", "proofs/market_equilibrium/")
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--hide-scrollbars")
WINDOW = "1280,1800"
#: milliseconds of page time Chromium lets scripts run before it captures the page
SCRIPT_BUDGET_MS = 8000
TIMEOUT_S = 120
HTTP_OK = http.HTTPStatus.OK
HTTP_NOT_FOUND = http.HTTPStatus.NOT_FOUND


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
    """Static files of the site; KaTeX from a local directory; CDN KaTeX URLs rewritten."""

    katex: Path

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        if path.startswith("/_katex/"):
            f = self.katex / path[len("/_katex/"):]
            if not f.exists() and f.name.endswith(".min.js"):  # Debian ships contrib/ unminified
                f = f.with_name(f.name.replace(".min.js", ".js"))
            return self._send(f)
        local = Path(self.translate_path(path))
        if local.is_dir():
            local = local / "index.html"
        if local.suffix == ".html" and local.exists():
            html = CDN.sub("/_katex/", local.read_text(encoding="utf-8")).encode()
            self.send_response(HTTP_OK)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(html)))
            self.end_headers()
            self.wfile.write(html)
            return None
        return super().do_GET()

    def _send(self, f: Path) -> None:
        if not f.is_file():
            self.send_error(HTTP_NOT_FOUND)
            return
        data = f.read_bytes()
        self.send_response(HTTP_OK)
        self.send_header("Content-Type", self.guess_type(str(f)))
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def serve(site: Path, katex: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    handler = type("SiteHandler", (Handler,), {"katex": katex})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             functools.partial(handler, directory=str(site)))
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
    ap.add_argument("--katex", type=Path, default=Path("/usr/share/javascript/katex"))
    args = ap.parse_args(argv)
    if not (args.katex / "katex.min.js").exists():
        raise SystemExit(f"no KaTeX at {args.katex}: apt-get install -y libjs-katex")
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        site = args.site
        if site is None:
            site = Path(tmp) / "site"
            print(f"built the site in {build(site):.1f} s")
        server, base = serve(site, args.katex)
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
