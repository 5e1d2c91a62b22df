"""Deprecation shims for renamed keyword arguments: the one way fairalloc keeps an old spelling.

fairalloc spells its solver options one way across solvers, plans and sweeps: ``gap_tol`` (a
relative optimality gap), ``time_limit`` (seconds) and ``node_limit`` (branch-and-bound nodes).
`renamed_kwargs` keeps an older spelling (``mip_gap``, ``milp_time_limit``,
``milp_node_limit``) working with a ``DeprecationWarning``; passing both spellings is an
`fairalloc.InputError` naming the old one. The wrapped function keeps its signature
(``inspect.signature`` follows ``__wrapped__``), so the docs show only the new names.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from .errors import InputError

__all__ = ["RENAMED_OPTIONS", "renamed_kwargs", "renames_of", "resolve_renamed"]

_F = TypeVar("_F", bound=Callable[..., Any])

#: every old option spelling -> its one name (CHANGELOG "Deprecated" lists the same table)
RENAMED_OPTIONS: Mapping[str, str] = {
    "mip_gap": "gap_tol",
    "milp_time_limit": "time_limit",
    "milp_node_limit": "node_limit",
}

#: `resolve_renamed`'s ``stacklevel`` from the `renamed_kwargs` wrapper: the warning points
#: at the wrapper's caller, the user's line
_WRAPPER_STACKLEVEL = 2


def resolve_renamed(kwargs: dict[str, Any], renames: Mapping[str, str], where: str, *,
                    stacklevel: int = 2) -> dict[str, Any]:
    """Return ``kwargs`` with each old key of ``renames`` moved to its new key.

    Warns a ``DeprecationWarning`` per old key given; raises `fairalloc.InputError` (naming
    the old key) when the old and the new key are both given. ``kwargs`` is not mutated.
    ``stacklevel`` counts as `warnings.warn` does from the function that calls this one (2:
    that function's caller).
    """
    out = dict(kwargs)
    for old, new in renames.items():
        if old not in out:
            continue
        if new in out:
            raise InputError(f"{where}: pass {new}, not both {new} and its deprecated "
                             f"spelling {old}", argument=old)
        warnings.warn(f"{where}: {old} is deprecated, use {new} (same meaning)",
                      DeprecationWarning, stacklevel=stacklevel + 1)
        out[new] = out.pop(old)
    return out


def renamed_kwargs(**renames: str) -> Callable[[_F], _F]:
    """Decorator: accept each ``old=new`` keyword rename with a ``DeprecationWarning``.

    Examples
    --------
    >>> import warnings
    >>> @renamed_kwargs(mip_gap="gap_tol")
    ... def f(*, gap_tol=1e-3):
    ...     return gap_tol
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     f(mip_gap=0.5), w[0].category.__name__
    (0.5, 'DeprecationWarning')
    """

    def wrap(func: _F) -> _F:
        where = getattr(func, "__qualname__", getattr(func, "__name__", "function"))
        if where.endswith(".__init__"):
            where = where[: -len(".__init__")]

        @functools.wraps(func)
        def inner(*args: Any, **kwargs: Any) -> Any:
            if renames.keys() & kwargs.keys():
                kwargs = resolve_renamed(kwargs, renames, where,
                                         stacklevel=_WRAPPER_STACKLEVEL)
            return func(*args, **kwargs)

        inner.__renamed_kwargs__ = dict(renames)  # type: ignore[attr-defined]
        return inner  # type: ignore[return-value]

    return wrap


def renames_of(func: Any) -> dict[str, str]:
    """The ``old -> new`` keyword renames `renamed_kwargs` gave ``func`` (``{}``: none), for
    code that checks keyword names against a signature (which shows only the new names)."""
    return dict(getattr(func, "__renamed_kwargs__", {}))
