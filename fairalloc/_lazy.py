"""Lazy re-exports for packages (PEP 562): a name's module is imported on first access.

``import fairalloc`` stays cheap, and a scheduler that calls one policy pays only for that
policy's modules. Each package that uses this lists its names in a ``TYPE_CHECKING`` block too,
so static type checkers see them; ``tests/test_architecture.py`` checks the two agree.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, names: Mapping[str, str], namespace: dict[str, Any],
                 submodules: Collection[str] = ()
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Return ``(__getattr__, __dir__)`` for ``package`` exporting ``names`` lazily.

    ``names`` maps each exported name to the submodule (relative to ``package``) that defines
    it; the first access imports that submodule and caches the value in ``namespace`` (the
    package's ``globals()``), so later accesses are plain attribute lookups. Each of
    ``submodules`` is the package's attribute of that name, imported on first access (SPEC 1,
    as ``numpy.linalg`` is reachable from ``import numpy``).

    Examples
    --------
    >>> getattr_, dir_ = lazy_exports("fairalloc", {"Cluster": "data"}, {}, ["queuing"])
    >>> getattr_("Cluster").__name__, getattr_("queuing").__name__, dir_()
    ('Cluster', 'fairalloc.queuing', ['Cluster', 'queuing'])
    """
    subs = frozenset(submodules)

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            if name in subs:  # importing a submodule binds it in the package's namespace
                return importlib.import_module(f"{package}.{name}")
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(names) | subs)

    return __getattr__, __dir__
