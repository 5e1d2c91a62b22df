"""numpydoc on every public name: ``numpydoc.validate`` over each function and class of
``fairalloc.__all__`` and of every public submodule's ``__all__``, for the checks

* PR01 (every parameter documented), PR02 (no documented parameter the signature lacks),
* RT01 (a Returns section), EX01 (an Examples section).

Every public name passes all four: there is no list of exceptions (a new parameter without
its description fails the test).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil
import warnings

import pytest

_NO_NUMPYDOC = 'numpydoc not installed: pip install ".[dev]" in the checkout'
validate = pytest.importorskip("numpydoc.validate", reason=_NO_NUMPYDOC).validate

import fairalloc  # noqa: E402

CHECKS = ("PR01", "PR02", "RT01", "EX01")


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
            "fairalloc.testing.check_policy", "fairalloc.RoundResult",
            "fairalloc.testing.PropertyCheck"} <= set(names)


def test_numpydoc_parameters_returns_examples() -> None:
    found = gaps()
    assert not found, f"undocumented (numpydoc {CHECKS}): {found}"


def test_documented_names_stay_documented() -> None:
    """What this test was added for: the names the issue found without Parameters/Returns."""
    found = gaps()
    for name in ("fairalloc.sim.simulate", "fairalloc.sim.compare", "fairalloc.sim.utilization",
                 "fairalloc.sim.summarize", "fairalloc.properties.check_market",
                 "fairalloc.properties.envy_free", "fairalloc.properties.pareto_optimal",
                 "fairalloc.solve_round", "fairalloc.RoundResult",
                 "fairalloc.testing.PropertyCheck"):
        assert name not in found, (name, found.get(name))
