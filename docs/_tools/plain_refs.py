"""Rewrite ``[`Title`][fairalloc.name]`` cross-references in docstrings to plain inline code.

    python docs/_tools/plain_refs.py [--check] PATH...

``help()`` shows a docstring as written, so the Markdown link form reads as raw markup there;
``fairalloc.name`` in backticks reads well in both places, and the docs build links it
(``docs/_hooks/plain_refs.py``). Each ``[`Title`][fairalloc.name]`` becomes ``fairalloc.name``
in the backticks it had (the identifier, which names the object fully, replaces the title); a
reference whose title is not inline code is left alone. With ``--check`` nothing is written and
the exit status is 1 when a file would change. PATH is a file or a folder (its ``*.py`` files).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

#: a Markdown reference link whose title is inline code and whose identifier is a fairalloc name
BRACKET_REF = re.compile(r"\[(``?)[^`\]\n]+\1\]\[(fairalloc(?:\.[A-Za-z_]\w*)*)\]")


def plain(text: str) -> str:
    """``text`` with each ``[`Title`][fairalloc.name]`` made ``fairalloc.name`` inline code.

    Examples
    --------
    >>> plain("see [`ok`][fairalloc.results.Certificate.ok] and [the page][fairalloc.sim]")
    'see `fairalloc.results.Certificate.ok` and [the page][fairalloc.sim]'
    """
    return BRACKET_REF.sub(lambda m: f"{m.group(1)}{m.group(2)}{m.group(1)}", text)


def _files(paths: list[Path]) -> list[Path]:
    return sorted(f for p in paths for f in ([p] if p.is_file() else p.rglob("*.py")))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("paths", nargs="+", type=Path)
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 on a change")
    args = ap.parse_args(argv)
    changed = []
    for f in _files(args.paths):
        text = f.read_text(encoding="utf-8")
        new = plain(text)
        if new != text:
            changed.append(f)
            if not args.check:
                f.write_text(new, encoding="utf-8")
    for f in changed:
        print(f"{'would rewrite' if args.check else 'rewrote'} {f}")
    return 1 if (args.check and changed) else 0


if __name__ == "__main__":
    sys.exit(main())
