"""numpydoc on every public name: ``numpydoc.validate`` over each function and class of
``fairalloc.__all__`` and of every public submodule's ``__all__``, for the checks

* PR01 (every parameter documented), PR02 (no documented parameter the signature lacks),
* RT01 (a Returns section), EX01 (an Examples section).

`tests/numpydoc_gaps.json` lists the gaps not yet fixed, per name. It only shrinks: a new
gap fails the test (document the new parameter), and so does a listed gap that is fixed
(remove it from the list: ``python tests/test_numpydoc.py --write``).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import pkgutil
import sys
import warnings
from pathlib import Path

import pytest

_NO_NUMPYDOC = 'numpydoc not installed: pip install ".[dev]" in the checkout'
validate = pytest.importorskip("numpydoc.validate", reason=_NO_NUMPYDOC).validate

import fairalloc  # noqa: E402

CHECKS = ("PR01", "PR02", "RT01", "EX01")
GAPS = Path(__file__).with_name("numpydoc_gaps.json")


@functools.cache
def public_names() -> dict[str, object]:
    """``dotted path -> object`` for each public function and class, first path seen."""
    modules = ["fairalloc"] + sorted(
        f"fairalloc.{m.name}" for m in pkgutil.iter_modules(fairalloc.__path__)
        if not m.name.startswith("_"))
    seen: dict[int, str] = {}
    out: dict[str, object] = {}
    for modname in modules:
        module = importlib.import_module(modname)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name, None)
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and id(obj) not in seen:
                seen[id(obj)] = f"{modname}.{name}"
                out[f"{modname}.{name}"] = obj
    return out


@functools.cache
def gaps() -> dict[str, list[str]]:
    """``name -> the checks it fails``, for every public name failing one."""
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # numpydoc: unknown section titles
        for path in public_names():
            codes = sorted({code for code, _ in validate(path)["errors"] if code in CHECKS})
            if codes:
                out[path] = codes
    return out


def test_public_names_are_found() -> None:
    names = public_names()
    assert len(names) > 150
    assert {"fairalloc.fisher_market", "fairalloc.solve_round", "fairalloc.sim.simulate",
            "fairalloc.testing.check_policy"} <= set(names)


def test_numpydoc_parameters_returns_examples() -> None:
    known = json.loads(GAPS.read_text(encoding="utf-8"))
    found = gaps()
    new = {n: sorted(set(c) - set(known.get(n, ()))) for n, c in found.items()}
    new = {n: c for n, c in new.items() if c}
    fixed = {n: sorted(set(c) - set(found.get(n, ()))) for n, c in known.items()}
    fixed = {n: c for n, c in fixed.items() if c}
    assert not new, f"undocumented (numpydoc {CHECKS}): {new}"
    assert not fixed, (f"fixed: remove from {GAPS.name} "
                       f"(python tests/test_numpydoc.py --write): {fixed}")


def test_documented_names_stay_documented() -> None:
    """What this test was added for: the names the issue found without Parameters/Returns."""
    found = gaps()
    for name in ("fairalloc.sim.simulate", "fairalloc.sim.compare", "fairalloc.sim.utilization",
                 "fairalloc.sim.summarize", "fairalloc.properties.check_market",
                 "fairalloc.properties.envy_free", "fairalloc.properties.pareto_optimal"):
        assert name not in found, (name, found.get(name))


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    GAPS.write_text(json.dumps(gaps(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {GAPS}")
