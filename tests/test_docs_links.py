"""The documentation's link checker (docs/_tools/linkcheck.py, run on the built site by
tests/test_sim_docs.py) and the docs hook's page links and navigation titles."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.scripts import load_script

ROOT = Path(__file__).resolve().parents[1]


linkcheck = load_script("docs/_tools/linkcheck.py")


def _site(tmp_path: Path, pages: dict[str, str]) -> Path:
    for rel, html in pages.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"<html><body>{html}</body></html>")
    return tmp_path


def test_good_links_pass(tmp_path: Path) -> None:
    site = _site(tmp_path, {
        "index.html": '<a href="a/">a</a> <a href="a/#sec">sec</a> <a href="#top">top</a>'
                      '<h1 id="top">t</h1> <img src="img/x.png"> <a href="https://x.org/">x</a>'
                      '<a href="mailto:a@b.c">m</a> <script src="js/s.js"></script>',
        "a/index.html": '<h2 id="sec">s</h2><a href="../index.html#top">back</a>',
        "img/x.png": "", "js/s.js": ""})
    checked, broken = linkcheck.check_site(site)
    assert broken == [] and checked == 6  # external addresses are not counted


def test_broken_links_are_reported(tmp_path: Path) -> None:
    site = _site(tmp_path, {
        "index.html": '<a href="missing/">m</a> <a href="a/#nope">n</a> <a href="#gone">g</a>'
                      '<a href="../../etc/passwd">o</a>',
        "a/index.html": '<h2 id="sec">s</h2>'})
    checked, broken = linkcheck.check_site(site)
    assert checked == 4 and len(broken) == 4
    text = "\n".join(broken)
    assert "missing/: no such file" in text and "'nope'" in text and "'gone'" in text
    assert "outside the site" in text
    assert linkcheck.main([str(site)]) == 1


@pytest.fixture(scope="module")
def hook():
    pytest.importorskip("mkdocs")
    return load_script("docs/_hooks/pages.py", "pages_hook")


def test_pages_named_as_code_become_links(hook) -> None:
    published = {"formulations/a.md", "proofs/b.md"}
    text = ("see `proofs/b.md`, `b.md#claim` and `tests/t.py`\n\n"
            "```\n`proofs/b.md` in a code block\n```\n")
    out = hook._link_pages(text, "proofs/c.md", published)
    assert "[`proofs/b.md`](b.md)" in out and "[`proofs/b.md`](b.md#claim)" in out
    assert "`tests/t.py`" in out and "\n`proofs/b.md` in a code block" in out
    out = hook._link_pages("see `formulations/a.md`", "proofs/c.md", published)
    assert "[`formulations/a.md`](../formulations/a.md)" in out
    out = hook._link_pages("see `proofs/b.md`", "tutorial.md", published)
    assert "[`proofs/b.md`](proofs/b.md)" in out


def test_navigation_titles_are_plain_text(hook, tmp_path: Path) -> None:
    p = tmp_path / "x.md"
    p.write_text("# Certificates: `ok` is a *proof* (Gavel §4.1)\n")
    assert hook._title(p) == "Certificates: ok is a proof (Gavel §4.1)"


SPHINX_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|mod|data|exc|obj|const):`")
#: files a reader of the docs does not have (the papers' texts, notes outside the repository)
PRIVATE_FILES = re.compile(r"gavel\.txt|shockwave\.txt|themis\.md|ares\.md|ANCHORS\.md|DESIGN\.md")


def test_docstrings_use_mkdocstrings_cross_references() -> None:
    """API pages render [`Name`][identifier] links; a Sphinx role would show as raw text."""
    hits = [f"{p.relative_to(ROOT)}:{i}" for p in sorted((ROOT / "fairalloc").rglob("*.py"))
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if SPHINX_ROLE.search(line)]
    assert not hits, hits


def test_docs_cite_papers_not_files_readers_do_not_have() -> None:
    pages = [*(ROOT / "fairalloc").rglob("*.py"), *(ROOT / "docs").rglob("*.md"),
             *(ROOT / "formulations").glob("*.md"), *(ROOT / "proofs").glob("*.md")]
    hits = [f"{p.relative_to(ROOT)}:{i}" for p in sorted(pages)
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if PRIVATE_FILES.search(line)]
    assert not hits, hits


def test_documentation_url_is_one_address() -> None:
    """mkdocs.yml's ``site_url`` (its default, when FAIRALLOC_SITE_URL is not set) and the
    package's ``Documentation`` Project-URL name the same address, and it is an https one."""
    import tomllib

    mk = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    m = re.search(r'^site_url:\s*(?:!ENV\s*\[\s*FAIRALLOC_SITE_URL\s*,\s*"([^"]+)"\s*\]|(\S+))\s*$',
                  mk, re.M)
    assert m, "mkdocs.yml sets no site_url"
    site_url = m.group(1) or m.group(2)
    urls = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["urls"]
    assert urls["Documentation"] == site_url, (urls, site_url)
    assert re.fullmatch(r"https://[\w.-]+/(?:[\w.-]+/)*", site_url), site_url
