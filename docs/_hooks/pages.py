"""MkDocs hook: publish ``formulations/*.md`` and ``proofs/*.md`` without copying them.

Each file of the repository's ``formulations/`` and ``proofs/`` folders becomes a generated
page at the same relative path (``formulations/<name>.md``), read at build time, so the site
always shows the current text. Relative links between those pages keep working (same layout);
links to other repository files (source, tests) become inline code, since they are not part of
the site. The navigation is assembled here: hand-written pages, then the generated ones.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("formulations", "proofs")
_LINK = re.compile(r"(?<!!)\[([^\]]+)\]\(([^)\s]+)\)")


def _title(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return path.stem.replace("_", " ")


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
    ]
    return config


def on_files(files, config, **kwargs):
    sources = _sources()
    published = set(sources)
    for rel, path in sources.items():
        text = _rewrite(path.read_text(encoding="utf-8"), rel, published)
        files.append(File.generated(config, rel, content=text))
    return files
