"""The package's structure, checked so it cannot rot silently (docs/architecture.md).

* the import graph follows the layer contract in ``pyproject.toml`` (``lint-imports``), with no
  cycles between the modules of any package;
* every tolerance and heuristic constant is named (``tools/check_constants.py``);
* every module is small, or says at its top that it is one cohesive algorithm;
* public callables spell out their arguments (no ``**kwargs``), and every lazily exported name
  is visible to type checkers: ``mypy --strict`` rejects a wrong keyword for each of them.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import fairalloc as fa
from tests.scripts import load_script

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "fairalloc"
MAX_LINES = 800  # a module longer than this must declare itself one cohesive algorithm
COHESIVE = "one cohesive algorithm"  # the phrase its module docstring must contain


def _tool(name: str) -> Path:
    """An entry point installed next to this interpreter (the test extra installs both)."""
    exe = Path(sys.executable).parent / name
    found = exe if exe.exists() else shutil.which(name)
    assert found, f"{name} is not installed: pip install '.[dev]'"
    return Path(found)


def test_import_graph_follows_the_layer_contract() -> None:
    proc = subprocess.run([str(_tool("lint-imports")), "--no-cache"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout, proc.stdout[-2000:]


def _check_constants():  # type: ignore[no-untyped-def]
    return load_script("tools/check_constants.py")


def test_no_inline_tolerances_or_heuristic_constants() -> None:
    hits = _check_constants().scan([PACKAGE])
    assert hits == [], "name these constants (see tools/check_constants.py):\n" + "\n".join(hits)


def test_the_constant_checker_finds_an_inline_literal(tmp_path: Path) -> None:
    """The checker itself can fail: an inline tolerance in a function body is reported."""
    src = tmp_path / "mod.py"
    src.write_text("LIMIT = 1e-9  # named: fine\n\ndef f(x):\n    return x > 1e-7\n")
    checker = _check_constants()
    checker.ROOT = tmp_path
    assert checker.scan([src]) == ["mod.py:4: 1e-07"]


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_module_is_small_or_declares_one_cohesive_algorithm() -> None:
    too_long = []
    for path in _modules():
        text = path.read_text()
        lines = text.count("\n")
        doc = ast.get_docstring(ast.parse(text)) or ""
        if lines > MAX_LINES and COHESIVE not in " ".join(doc.split()).lower():
            too_long.append(f"{path.relative_to(ROOT)}: {lines} lines")
    assert too_long == [], "split these, or state at the top that each is " + COHESIVE + \
        ":\n" + "\n".join(too_long)


def _public_callables() -> dict[str, object]:
    names = {n: getattr(fa, n) for n in fa._LAZY}
    for sub in ("sim", "testing"):
        module = importlib.import_module(f"fairalloc.{sub}")
        names |= {f"{sub}.{n}": getattr(module, n) for n in module.__all__}
    return {n: v for n, v in names.items() if callable(v)}


def _signatures(obj: object) -> list[tuple[str, inspect.Signature]]:
    if inspect.isclass(obj):
        out = []
        for attr, member in vars(obj).items():
            if (attr == "__init__" or not attr.startswith("_")) and inspect.isfunction(member):
                out.append((attr, inspect.signature(member)))
        return out
    try:
        return [("", inspect.signature(obj))]  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return []


def test_public_callables_spell_out_their_arguments() -> None:
    hidden = []
    for name, obj in _public_callables().items():
        if isinstance(obj, type) and (issubclass(obj, BaseException)
                                      or getattr(obj, "_is_protocol", False)):
            continue  # exceptions take a message; a Protocol is a type, not a constructor
        for attr, sig in _signatures(obj):
            if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()):
                hidden.append(f"{name}{'.' + attr if attr else ''}{sig}")
    assert hidden == [], "public callables with **kwargs:\n" + "\n".join(hidden)


@pytest.mark.parametrize(("package", "table"), [("fairalloc", "_LAZY"),
                                               ("fairalloc.throughput", "_EXPORTS"),
                                               ("fairalloc.throughput.structured", "_EXPORTS")])
def test_every_lazy_export_is_visible_to_type_checkers(package: str, table: str) -> None:
    """The ``TYPE_CHECKING`` block imports each lazily exported name from its own module."""
    module = importlib.import_module(package)
    assert module.__file__ is not None
    tree = ast.parse(Path(module.__file__).read_text())
    seen: dict[str, str] = {}
    for node in ast.walk(tree):
        if (isinstance(node, ast.If) and isinstance(node.test, ast.Name)
                and node.test.id == "TYPE_CHECKING"):
            for stmt in node.body:
                if isinstance(stmt, ast.ImportFrom):
                    for alias in stmt.names:
                        seen[alias.asname or alias.name] = stmt.module or ""
    exports = dict(getattr(module, table))
    assert seen == exports
    assert all(getattr(module, name) is not None for name in exports)  # each one resolves


def test_mypy_strict_rejects_a_wrong_argument_to_every_public_callable(tmp_path: Path) -> None:
    names = sorted(n for n, v in _public_callables().items()
                   if "." not in n and not (isinstance(v, type) and issubclass(v, BaseException)))
    script = tmp_path / "wrong_arguments.py"
    script.write_text("import fairalloc as fa\n\n" + "".join(
        f"fa.{n}(not_an_argument_of_{n}=1)\n" for n in names))
    env = {**os.environ, "MYPYPATH": str(ROOT)}  # this checkout, installed or editable
    proc = subprocess.run(
        [str(_tool("mypy")), "--strict", "--follow-imports=silent", "--no-incremental",
         "--cache-dir", str(tmp_path / "cache"), script.name],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    assert "wrong_arguments.py" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]
    flagged = {line.split(":")[1] for line in proc.stdout.splitlines()
               if line.startswith(script.name) and "error:" in line
               and "not_an_argument_of_" in line}
    missed = [n for i, n in enumerate(names, start=3) if str(i) not in flagged]
    assert missed == [], "mypy --strict accepted a wrong keyword for: " + ", ".join(missed)


@pytest.mark.parametrize("module", ["fairalloc", "fairalloc.sim", "fairalloc.testing"])
def test_import_is_cheap_and_side_effect_free(module: str) -> None:
    """Importing a package never imports a solver stack (cvxpy) eagerly."""
    code = (f"import sys, {module}; "
            "print(int('cvxpy' in sys.modules), int('clarabel' in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout.split()
    assert out == ["0", "0"]
