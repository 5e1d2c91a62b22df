"""MkDocs hook: publish ``formulations/*.md`` and ``proofs/*.md`` without copying them.

Each file of the repository's ``formulations/`` and ``proofs/`` folders becomes a generated
page at the same relative path (``formulations/<name>.md``), read at build time, so the site
always shows the current text. Relative links between those pages keep working (same layout);
links to other repository files (source, tests) become inline code, since they are not part of
the site. The navigation is assembled here: hand-written pages, then the generated ones.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("formulations", "proofs")
_LINK = re.compile(r"(?<!!)\[([^\]]+)\]\(([^)\s]+)\)")
# a page named as code, e.g. `proofs/market_equilibrium.md` or `volatile_fisher_market.md#units`
_PAGE_CODE = re.compile(
    r"(?<![`\[])`((?:\.\./)?(?:(?:formulations|proofs)/)?[\w-]+\.md)(#[\w-]+)?`(?!`)")


def _title(path: Path) -> str:
    """The page's first heading as plain text (navigation titles show no Markdown)."""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return _plain(line[2:].strip())
    return path.stem.replace("_", " ")


def _plain(text: str) -> str:
    """Markdown inline markup removed: code spans, emphasis, links, maths delimiters."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[`*$]|(?<!\w)_|_(?!\w)", "", text).strip()


def _sources() -> dict[str, Path]:
    out = {}
    for folder in FOLDERS:
        for p in sorted((ROOT / folder).glob("*.md")):
            out[f"{folder}/{p.name}"] = p
    return out


def _rewrite(text: str, src: str, published: set[str]) -> str:
    base = Path(src).parent

    def fix(m: re.Match[str]) -> str:
        label, target = m.group(1), m.group(2)
        if re.match(r"^[a-z]+:", target) or target.startswith(("#", "/")):
            return m.group(0)
        path, _, anchor = target.partition("#")
        resolved = (base / path).as_posix()
        parts: list[str] = []
        for seg in resolved.split("/"):
            if seg == "..":
                if parts:
                    parts.pop()
            elif seg not in ("", "."):
                parts.append(seg)
        norm = "/".join(parts)
        if norm in published:
            return m.group(0)
        return f"{label} (`{norm}`)" if label.strip("`") != norm else f"`{norm}`"

    return _LINK.sub(fix, text)


def _link_pages(text: str, src: str, published: set[str]) -> str:
    """Formulation and proof pages named as inline code (`proofs/x.md`, `x.md#anchor`
    beside the page) become links, outside code blocks."""
    base = posixpath.dirname(src)

    def link(m: re.Match[str]) -> str:
        name, anchor = m.group(1), m.group(2) or ""
        for cand in (name.removeprefix("../"), posixpath.join(base, name)):
            cand = posixpath.normpath(cand)
            if cand in published and cand != src:
                rel = posixpath.relpath(cand, base or ".")
                return f"[`{cand}`]({rel}{anchor})"
        return m.group(0)

    return _outside_code_blocks(text, lambda chunk: _PAGE_CODE.sub(link, chunk))


def _outside_code_blocks(text: str, fn) -> str:
    """Apply ``fn`` to the parts of ``text`` outside fenced and indented code blocks."""
    out, chunk, fence = [], [], None
    prev_blank = True
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if fence is None and stripped.startswith(("```", "~~~")):
            out.append(fn("".join(chunk)))
            chunk = []
            fence = stripped[:3]
            out.append(line)
        elif fence is not None:
            out.append(line)
            if stripped.startswith(fence):
                fence = None
        elif line.startswith("    ") and prev_blank and stripped:
            out.append(fn("".join(chunk)))
            chunk = []
            out.append(line)
            continue
        else:
            chunk.append(line)
        prev_blank = not stripped
    out.append(fn("".join(chunk)))
    return "".join(out)


def on_config(config, **kwargs):
    docs = Path(config["docs_dir"])
    sources = _sources()

    def pages(folder: str) -> list:
        return [{_title(p): rel} for rel, p in sources.items() if rel.startswith(folder + "/")]

    howto = [{_title(p): f"how-to/{p.name}"} for p in sorted((docs / "how-to").glob("*.md"))]
    api = [{_title(p): f"api/{p.name}"} for p in sorted((docs / "api").glob("*.md"))]
    config["nav"] = [
        {"Home": "index.md"},
        {"Tutorial": "tutorial.md"},
        {"Architecture": "architecture.md"},
        {"How-to guides": howto},
        {"Formulations": pages("formulations")},
        {"Proofs": pages("proofs")},
        {"API reference": api},
        {"References": "references.md"},
    ]
    return config


def on_files(files, config, **kwargs):
    sources = _sources()
    published = set(sources)
    # the hand-written pages (e.g. references.md) are link targets too
    pages = {f.src_uri for f in files if f.src_uri.endswith(".md")}
    for rel, path in sources.items():
        text = _rewrite(path.read_text(encoding="utf-8"), rel, published | pages)
        text = _link_pages(text, rel, published)
        files.append(File.generated(config, rel, content=text))
    return files


def on_page_markdown(markdown, page, **kwargs):
    """Hand-written pages link the formulation and proof pages they name as code too."""
    src = page.file.src_uri
    if src.split("/")[0] in FOLDERS:
        return markdown
    return _link_pages(markdown, src, set(_sources()))
