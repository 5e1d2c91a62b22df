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

import pytest

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



# -- packaging metadata (issue #30, Build 7) --------------------------------------------------
#: where each group of requirements must be used: the library's own (core and the extras that
#: turn on its optional parts), the benchmarks', the developers' (tests, tools, docs)
USED_IN = {"": ("fairalloc",), "bench": ("benchmarks",),
           "dev": ("fairalloc", "tests", "tools", "examples", "docs")}
#: distributions used other than by ``import``: (file, text that shows the use)
USED_AS_TOOL = {
    "ruff": ("pyproject.toml", "[tool.ruff]"),
    "mypy": ("tests/test_architecture.py", '_tool("mypy")'),
    "import-linter": ("tests/test_architecture.py", '_tool("lint-imports")'),
    "mkdocs": ("mkdocs.yml", "site_name"),
    "mkdocs-material": ("mkdocs.yml", "name: material"),
    "mkdocstrings": ("mkdocs.yml", "mkdocstrings"),
    "mkdocs-jupyter": ("mkdocs.yml", "mkdocs-jupyter"),
    "ipykernel": ("tests/test_notebooks.py", "ipykernel"),
    "ecos": ("benchmarks/families.py", '"ECOS"'),
    "pytest-xdist": (".ci/run", "python -m pytest -q -p no:cacheprovider -n auto"),
}
#: import name of a distribution, where the two differ
MODULE = {"pyyaml": "yaml"}


def _requirements(group: str) -> list[str]:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    reqs = meta["dependencies"] if group == "" else meta["optional-dependencies"][group]
    return [re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower() for r in reqs]


def _imported(module: str, where: tuple[str, ...]) -> bool:
    name = re.escape(module)
    pattern = re.compile(rf"^\s*(?:import|from)\s+{name}\b|importorskip\(\"{name}[\".]",
                         re.MULTILINE)
    for folder in where:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix == ".py" or path.suffix == ".ipynb":
                if pattern.search(path.read_text(encoding="utf-8", errors="replace")):
                    return True
    return False


@pytest.mark.parametrize("group", list(USED_IN))
def test_no_declared_dependency_goes_unused(group: str) -> None:
    """On main ``rich`` was in the dev extra but only the benchmarks import it."""
    unused = []
    for dist in _requirements(group):
        if dist in USED_AS_TOOL:
            path, text = USED_AS_TOOL[dist]
            if text in (ROOT / path).read_text(encoding="utf-8"):
                continue
        elif _imported(MODULE.get(dist, dist.replace("-", "_")), USED_IN[group]):
            continue
        unused.append(dist)
    assert not unused, f"[{group or 'dependencies'}] declares, never uses: {unused}"


def test_metadata_names_authors_classifiers_and_urls() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert meta["authors"] and all(a.get("name") for a in meta["authors"])
    assert all(url.startswith("https://") for url in meta["urls"].values()), meta["urls"]
    assert "Documentation" in meta["urls"]
    classifiers = meta["classifiers"]
    assert not [c for c in classifiers if c.startswith("License ::")]  # PEP 639: license =
    assert "Typing :: Typed" in classifiers and (ROOT / "fairalloc" / "py.typed").exists()
    minor = meta["requires-python"].removeprefix(">=")
    assert f"Programming Language :: Python :: {minor}" in classifiers
    try:
        from trove_classifiers import classifiers as known
    except ImportError:  # the canonical list is not a dependency; checked where installed
        known = None
    if known is not None:
        assert [c for c in classifiers if c not in known] == []


def test_ci_installs_every_extra_alone_with_a_smoke() -> None:
    """CI (`.ci/extras`, called by `.ci/run`) installs each extra alone in a fresh venv and runs
    its smoke command from `.ci/extra_smoke.py`: every extra but dev (the README's command)
    has one, and the smoke script names no extra pyproject.toml lacks."""
    from tests.scripts import load_script

    smoke = load_script(".ci/extra_smoke.py", "ci_extra_smoke")
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
                 ["project"]["optional-dependencies"])
    assert set(smoke.SMOKES) == extras - {"dev"}, (sorted(smoke.SMOKES), sorted(extras))
    assert "bash .ci/extras" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert '$WHEEL[$extra]' in (ROOT / ".ci" / "extras").read_text(encoding="utf-8")
