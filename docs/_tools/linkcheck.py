"""Check every internal link of a built site: each ``href``/``src`` of ``site/**/*.html`` that
is not an external address must name a file of the site and, with ``#anchor``, an element id
(or name) of that page. No network.

    python docs/_tools/linkcheck.py SITE_DIR

Prints the number of links checked and each broken one (page, target, why); exits 1 if any.
"""

from __future__ import annotations

import posixpath
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

LINK_ATTRS = {"a": "href", "link": "href", "img": "src", "script": "src", "source": "src",
              "iframe": "src"}
#: pages whose links are written for another location (mkdocs' 404 page is served anywhere)
SKIP_PAGES = {"404.html"}


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        d = dict(attrs)
        for key in ("id", "name") if tag in ("a",) else ("id",):
            if d.get(key):
                self.ids.add(d[key] or "")
        attr = LINK_ATTRS.get(tag)
        if attr and d.get(attr) and not (tag == "link" and d.get("rel") in ("canonical",)):
            self.links.append(d[attr] or "")


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8", errors="replace"))
    return page


def _target(site: Path, page: Path, href: str) -> tuple[Path | None, str]:
    parts = urlsplit(href)
    anchor = unquote(parts.fragment)
    if not parts.path:
        return page, anchor
    base = page.parent.relative_to(site).as_posix()
    rel = posixpath.normpath(posixpath.join(base, unquote(parts.path)))
    if rel.startswith(".."):
        return None, anchor
    target = site / rel
    if parts.path.endswith("/") or target.is_dir():
        target = target / "index.html"
    return target, anchor


def check_site(site: Path) -> tuple[int, list[str]]:
    """(links checked, broken links as 'page -> target: why')."""
    site = site.resolve()
    pages = {p: _parse(p) for p in site.rglob("*.html")}
    checked, broken = 0, []
    for page, parsed in sorted(pages.items()):
        if page.name in SKIP_PAGES and page.parent == site:
            continue
        for href in parsed.links:
            scheme = urlsplit(href).scheme
            if scheme or href.startswith("//"):
                continue  # external (http, https, mailto, data, javascript)
            checked += 1
            target, anchor = _target(site, page, href)
            where = f"{page.relative_to(site)} -> {href}"
            if target is None:
                broken.append(f"{where}: outside the site")
            elif not target.exists():
                broken.append(f"{where}: no such file")
            elif anchor and target.suffix == ".html":
                ids = (pages.get(target) or _parse(target)).ids
                if anchor not in ids:
                    broken.append(f"{where}: no element with id {anchor!r}")
    return checked, broken


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(__doc__)
        return 2
    checked, broken = check_site(Path(args[0]))
    for b in broken:
        print(b)
    print(f"{checked} internal links checked, {len(broken)} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
