"""The documentation works offline (issue #30): the built site typesets its mathematics with the
KaTeX it bundles, loads no script, style or font from another host, carries no empty
``<script src="">``, and no page shows unrendered maths or raw cross-reference markup.

The site is built once (``mkdocs build --strict``, notebooks from their stored outputs) into a
temporary folder; a second test opens two pages in headless Chromium when it is installed.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.scripts import load_script

ROOT = Path(__file__).resolve().parents[1]
KATEX = ("vendor/katex/katex.min.js", "vendor/katex/contrib/auto-render.min.js",
         "vendor/katex/katex.min.css")
BUILD_TIMEOUT_S = 300


def _missing_docs_tool() -> str | None:
    for mod in ("mkdocs", "material", "mkdocstrings", "mkdocs_jupyter"):
        if importlib.util.find_spec(mod) is None:
            return mod
    return None


pytestmark = pytest.mark.skipif(
    _missing_docs_tool() is not None,
    reason=f"documentation tools not installed ({_missing_docs_tool()}): pip install '.[docs]'")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("docs") / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "FAIRALLOC_DOCS_EXECUTE": "false"}
    env.pop("FAIRALLOC_SITE_URL", None)
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d",
                           str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=BUILD_TIMEOUT_S, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out


def _pages(site: Path) -> dict[str, str]:
    return {str(p.relative_to(site)): p.read_text(encoding="utf-8")
            for p in sorted(site.rglob("*.html"))}


#: attributes that make the browser fetch something as the page loads (links a reader follows,
#: <a href>, are not loads)
_LOADS = re.compile(r"<(?:script|img|iframe|source|audio|video)\b[^>]*\bsrc=\"([^\"]*)\"|"
                    r"<link\b[^>]*\bhref=\"([^\"]*)\"[^>]*>")
_REMOTE_IMPORT = re.compile(r"""(?:import\(|@import\s+(?:url\()?)\s*["']?(https?:)?//""")


def _remote_loads(html: str) -> list[str]:
    bad = []
    for m in _LOADS.finditer(html):
        url = m.group(1) if m.group(1) is not None else m.group(2)
        tag = m.group(0)
        if m.group(2) is not None and re.search(r'rel="(?:canonical|alternate|prev|next)"', tag):
            continue  # navigation metadata, not a resource the page loads
        if url == "" or re.match(r"(?:https?:)?//", url):
            bad.append(tag[:160])
    bad += [m.group(0) for m in _REMOTE_IMPORT.finditer(html)]
    return bad


class _Text(HTMLParser):
    """The page's reading text outside maths spans, code, scripts and styles."""

    SKIP = frozenset({"script", "style", "code", "pre", "textarea"})
    VOID = frozenset({"br", "img", "meta", "link", "input", "hr", "source", "wbr"})

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[tuple[str, bool]] = []
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in self.VOID:
            classes = (dict(attrs).get("class") or "").split()
            self.stack.append((tag, tag in self.SKIP or "arithmatex" in classes))

    def handle_endtag(self, tag: str) -> None:
        while self.stack and self.stack.pop()[0] != tag:
            pass

    def handle_data(self, data: str) -> None:
        if not any(skip for _, skip in self.stack):
            self.parts.append(data)


#: TeX that reached the page as text: delimiters arithmatex did not capture, or TeX commands
_RAW_TEX = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$|\$[^$\s](?:[^$\n]*[^$\s])?\$(?!\d)"
                      r"|\\(?:frac|sum|le|ge|log)\b")


def _raw_maths(html: str) -> list[str]:
    parser = _Text()
    parser.feed(html)
    return _RAW_TEX.findall("".join(parser.parts))


def test_katex_is_bundled_and_every_page_loads_it_locally(site: Path) -> None:
    for rel in KATEX:
        assert (site / rel).is_file(), rel
    css = (site / "vendor/katex/katex.min.css").read_text(encoding="utf-8")
    fonts = set(re.findall(r"url\((fonts/[^)]+\.woff2)\)", css))
    assert fonts and all((site / "vendor/katex" / f).is_file() for f in fonts)
    page = (site / "proofs/market_equilibrium/index.html").read_text(encoding="utf-8")
    for rel in KATEX:
        assert f'"../../{rel}"' in page, rel


def test_no_page_loads_anything_from_another_host(site: Path) -> None:
    pages = _pages(site)
    assert len(pages) > 50 and any(p.startswith("notebooks/") for p in pages)
    bad = {rel: hits for rel, html in pages.items() if (hits := _remote_loads(html))}
    assert not bad, dict(list(bad.items())[:5])


def test_no_page_shows_unrendered_maths_or_raw_cross_references(site: Path) -> None:
    pages = _pages(site)
    raw = {rel: hits[:5] for rel, html in pages.items() if (hits := _raw_maths(html))}
    assert not raw, raw
    # a cross-reference mkdocstrings did not resolve, or one inside a code block, shows as text
    refs = {rel: len(re.findall(r"\]\[fairalloc\.", html)) for rel, html in pages.items()}
    assert not {rel: n for rel, n in refs.items() if n}
    # the maths is there, waiting for KaTeX
    page = (site / "proofs/market_symmetry/index.html").read_text(encoding="utf-8")
    assert '<div class="arithmatex">\\[' in page


def test_site_url_gives_canonical_links(site: Path) -> None:
    page = (site / "tutorial/index.html").read_text(encoding="utf-8")
    assert re.search(r'<link rel="canonical" href="https?://[^"]+/tutorial/"', page)
    assert (site / "sitemap.xml").read_text(encoding="utf-8").count("<loc>http") > 50


def test_the_checks_catch_what_they_look_for() -> None:
    assert _remote_loads('<script src=""> </script>')
    assert _remote_loads('<script src="https://cdn.example/katex.min.js"></script>')
    assert _remote_loads('<link rel="stylesheet" href="//cdn.example/k.css">')
    assert _remote_loads('<script type="module">await import("https://x.org/m.mjs")</script>')
    assert not _remote_loads('<script src="../js/a.js"></script><a href="https://x.org">x</a>'
                             '<link rel="canonical" href="https://x.org/a/">')
    assert _raw_maths("<p>its value is\n$$\n\\sum_i x_i\n$$</p>")
    assert _raw_maths("<p>a price $p_j$ here</p>")
    assert not _raw_maths('<p><span class="arithmatex">\\(p_j\\)</span> costs $5 or $6</p>'
                          "<pre><code>$x$ \\(y\\)</code></pre>")


@pytest.mark.skipif(shutil.which("chromium") is None and shutil.which("chromium-browser") is None,
                    reason="no headless browser (apt-get install chromium); the built HTML is "
                    "checked by the tests above")
def test_two_pages_typeset_their_maths_in_a_headless_browser(site: Path, tmp_path: Path) -> None:
    shots = load_script("docs/_tools/screenshots.py")
    server, base = shots.serve(site)  # loopback only; the pages may load nothing else
    try:
        for page in ("proofs/market_equilibrium/", "formulations/eisenberg_gale/"):
            dom = shots.chromium(["--dump-dom", base + page], tmp_path / page.replace("/", "_"))
            counts = shots.check_dom(dom)
            assert counts["typeset"] > 0 and counts["errors"] == 0, (page, counts)
            assert counts["untypeset"] == 0, (page, counts)
    finally:
        server.shutdown()
