"""List numeric literals written inline in fairalloc's function bodies.

Every accuracy tolerance and heuristic constant must be a named, documented module constant
(``UPPER_CASE = value  # what it is``) or a documented argument of a public function; the
accuracy contracts shared by several modules live in :mod:`fairalloc.tolerances`. This
script (run by ``tests/test_architecture.py``) finds the literals that break that rule.

Allowed inline: the integers 0-3 (indexing, ndim, small arithmetic), the floats 0, 0.5, 1
and 2, any integer used as a subscript, exponent or ``round``/``range`` argument, and a
public function's documented defaults.

Usage: ``python tools/check_constants.py [paths...]`` (default: the whole package).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ALLOWED = {0, 1, 2, 3, -1, 0.5, -0.5}  # 0 == 0.0 and 1 == 1.0: floats included
_FORMAT_CALLS = {"round", "range"}
# files whose literals are neither tolerances nor heuristics (figure layout; hypothesis
# generator ranges, documented in each strategy's docstring)
EXEMPT = {"fairalloc/sim/plots.py", "fairalloc/testing/strategies"}  # a file or a package


def _literals(tree: ast.AST) -> Iterator[tuple[int, object]]:
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node

    def enclosing_function(node: ast.AST) -> ast.AST | None:
        while node in parents:
            node = parents[node]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                return node
        return None

    def exempt(node: ast.Constant) -> bool:
        parent = parents.get(node)
        if isinstance(parent, ast.UnaryOp):  # -1e-9 is the literal 1e-9
            parent = parents.get(parent)
        if isinstance(node.value, int):
            if isinstance(parent, (ast.Subscript, ast.Slice, ast.Index)) or (
                    isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Pow)
                    and parent.right is node):
                return True
            if (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name)
                    and parent.func.id in _FORMAT_CALLS):
                return True
        return False

    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or isinstance(node.value, bool):
            continue
        if not isinstance(node.value, (int, float)) or node.value in ALLOWED:
            continue
        func = enclosing_function(node)
        if func is None:
            continue  # module or class level: a named constant
        args = getattr(func, "args", None)
        if args is not None and any(node is d for d in (*args.defaults, *args.kw_defaults)):
            name = getattr(func, "name", "<lambda>")
            if not name.startswith("_"):
                continue  # a public function's documented default
        if exempt(node):
            continue
        yield node.lineno, node.value


def scan(paths: list[Path]) -> list[str]:
    """Return ``path:line: value`` for every inline literal under ``paths``."""
    found = []
    for path in paths:
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for f in files:
            tree = ast.parse(f.read_text(), filename=str(f))
            rel = f.resolve().relative_to(ROOT)
            if str(rel) in EXEMPT or str(rel.parent) in EXEMPT:
                continue
            found += [f"{rel}:{line}: {value!r}" for line, value in _literals(tree)]
    return found


if __name__ == "__main__":
    targets = [Path(p) for p in sys.argv[1:]] or [ROOT / "fairalloc"]
    hits = scan(targets)
    print("\n".join(hits))
    print(f"{len(hits)} inline numeric literal(s)", file=sys.stderr)
    sys.exit(1 if hits else 0)
