"""Every install hint is copy-paste correct from a clone (issue #30, Build 2).

fairalloc is not on a package index, so ``pip install 'fairalloc[plot]'`` fails; from the
checkout it is ``pip install ".[plot]"`` (double quotes: the same line works in a POSIX shell,
PowerShell and cmd.exe). This test reads every hint the package prints or documents -- Python
string literals (error messages, docstrings; an f-string's fields read as ``{}``), the docs'
Markdown and notebooks, the README, the examples and the benchmarks -- and checks each
``pip install`` argument, and that each extra it names is declared in pyproject.toml.
"""

from __future__ import annotations

import ast
import json
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: where hints are read: the package, its documentation and the runnable scripts
SOURCES = ("fairalloc", "docs", "examples", "benchmarks", "README.md")
#: skipped: build output and notebook checkpoints
SKIP_PARTS = {"site", ".ipynb_checkpoints", "__pycache__"}
#: ``pip install [-e] ARG``: the argument as typed
PIP = re.compile(r"pip install\s+(?:-e\s+)?(\"[^\"]*\"|'[^']*'|[^\s`'\",)]+)")
#: the one right form of a hint with extras: ".[a]" or ".[a,b]" ({} where an f-string fills it)
EXTRAS = re.compile(r'^"\.\[([a-z{}]+(?:,[a-z{}]+)*)\]"$')
#: packages a hint may name directly (not fairalloc's extras): a solver's own wheel
THIRD_PARTY = {"gurobipy"}


def _files() -> list[Path]:
    out = []
    for name in SOURCES:
        base = ROOT / name
        paths = [base] if base.is_file() else sorted(base.rglob("*"))
        out += [p for p in paths if p.suffix in {".py", ".md", ".ipynb"} and p.is_file()
                and not SKIP_PARTS & set(p.relative_to(ROOT).parts)]
    return out


def _texts(path: Path) -> list[str]:
    """The text a reader sees: string literals of Python (implicitly joined, as printed), the
    cells of a notebook, a Markdown page whole."""
    raw = path.read_text(encoding="utf-8")
    if path.suffix == ".ipynb":
        cells = json.loads(raw)["cells"]
        return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
                for c in cells]
    if path.suffix == ".md":
        return [raw]
    texts = []
    for node in ast.walk(ast.parse(raw)):
        if isinstance(node, ast.JoinedStr):
            texts.append("".join(v.value if isinstance(v, ast.Constant) else "{}"
                                 for v in node.values))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            texts.append(node.value)
    texts.append("\n".join(ln for ln in raw.splitlines() if ln.lstrip().startswith("#")))
    return texts


def _extras() -> set[str]:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return set(meta["project"]["optional-dependencies"])


def _hints() -> list[tuple[str, str]]:
    found = []
    for path in _files():
        for text in _texts(path):
            for arg in PIP.findall(text):
                found.append((str(path.relative_to(ROOT)), arg))
    return found


def test_hints_are_found() -> None:
    """The scan sees the hints it must check (a scan that finds nothing checks nothing)."""
    args = {arg for _, arg in _hints()}
    assert {'".[plot]"', '".[ray]"', '".[testing]"', "."} <= args, sorted(args)
    assert '".[{}]"' in args  # the backends' f-string hint


def test_every_install_hint_works_from_a_clone() -> None:
    """On main, eleven hints in the package said ``pip install 'fairalloc[...]'``."""
    extras = _extras()
    bad = []
    for where, arg in _hints():
        if arg == "." or arg in THIRD_PARTY:
            continue
        m = EXTRAS.match(arg)
        if m is None:
            bad.append(f'{where}: pip install {arg} (write pip install ".[extra]")')
            continue
        unknown = [e for e in m.group(1).split(",") if e != "{}" and e not in extras]
        if unknown:
            bad.append(f"{where}: pip install {arg}: no extra {unknown} in pyproject.toml")
    assert not bad, "\n".join(bad)


def test_no_text_names_the_package_with_extras() -> None:
    """``fairalloc[extra]`` asks an index for a package that is not there, pip or not."""
    bad = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in _files() for text in _texts(p)
           for m in re.finditer(r"fairalloc\[[^\]]*\]", text)]
    assert not bad, "\n".join(bad)

