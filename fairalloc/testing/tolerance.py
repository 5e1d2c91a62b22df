"""Per-property tolerances of the property checks (`fairalloc.testing.Tolerance`).

Each property judges its violation against a reference of its own, taken from the instance
(the table below), so that a verdict does not depend on the units of the instance: a violation
``v`` of property ``P`` with reference ``r`` and instance value scale ``S`` (its largest
utility times supply; cluster: its largest throughput) passes when

    v <= rtol * r    or    v <= atol * S

``rtol`` is relative to the property's own reference; ``atol`` is an absolute floor *expressed
as a fraction of the instance's scale* (so it too is unit free: throughputs times 1e6 or 1e-6
give the same verdict). Above the tolerance but within `fairalloc.testing.checks.ACCURACY_BAND`
of ``S`` a violation is a warning, not a failure (solver accuracy).

==================  =========================================================================
property            reference ``r`` of the relative tolerance
==================  =========================================================================
feasible            the supply of the good (market; at least 1) / 1 (cluster time fractions)
                    and a type's workers (cluster capacity)
market_clearing     the market's value ``p . s`` at the policy's prices
budget_clearing     the buyer's budget
envy_free           the larger of the agent's own (per-budget) value and the envied bundle's
sharing_incentive   the agent's guaranteed share (its budget / weight share of everything)
proportionality     the agent's proportional share of its value of everything
pareto_optimal      the agent's best level: its value of the whole supply of its best good
                    (cluster: its throughput alone on its fastest usable type)
strategy_proof      the larger of the agent's true value when honest and when lying
==================  =========================================================================

This module needs neither hypothesis nor the domains (the CLI parses ``--tol`` with it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from .defaults import DEFAULT_TOL

__all__ = ["DEFAULT_ATOL", "Tolerance", "parse_tolerance_option", "resolve_tolerances"]

#: absolute floor of every property by default, as a fraction of the instance's value scale:
#: solver noise on a value that should be exactly zero (an ACCURACY contract of the checks)
DEFAULT_ATOL = 1e-9


def _fraction(value: Any, what: str, index: tuple[Any, ...] | None,
              lo: float = 0.0, hi: float = 1.0) -> float:
    """``value`` as a float in [lo, hi) (``hi`` included when below 1), else an InputError
    naming ``tol`` and ``what``."""
    ok = not isinstance(value, bool | str | bytes)
    v = math.nan
    if ok:
        try:
            v = float(value)
        except (TypeError, ValueError, OverflowError):
            ok = False
    if not ok or not (lo <= v <= hi) or v >= 1.0:
        span = f"[{lo:g}, {hi:g}]" if hi < 1.0 else f"[{lo:g}, 1)"
        raise InputError(f"tol: {what} must be a number in {span}, got {value!r}",
                         argument="tol", index=index)  # type: ignore[arg-type]
    return v


@dataclass(frozen=True)
class Tolerance:
    """The tolerance of one property: a violation passes when it is at most ``rtol * reference``
    or at most ``atol * scale``.

    Parameters
    ----------
    rtol : float
        Relative to the property's own reference (the module's table), in
        [`fairalloc.tolerances.MIN_TOL`, `fairalloc.tolerances.MAX_TOL`] (1e-15 to 0.1).
    atol : float
        An absolute floor, as a fraction of the instance's value scale, in [0, 1).

    Examples
    --------
    >>> Tolerance(1e-3).allows(5e-4, reference=1.0, scale=10.0)
    True
    >>> Tolerance(1e-3, atol=0.0).allows(5e-3, reference=1.0, scale=10.0)
    False
    """

    rtol: float = DEFAULT_TOL
    atol: float = DEFAULT_ATOL

    def __post_init__(self) -> None:
        object.__setattr__(self, "rtol", _rtol(self.rtol, "rtol", None))
        object.__setattr__(self, "atol", _fraction(self.atol, "atol", None))

    def allows(self, violation: float, reference: float, scale: float) -> bool:
        """Whether ``violation`` is at most ``rtol * |reference|`` or ``atol * |scale|``."""
        return bool(violation <= max(self.rtol * abs(reference), self.atol * abs(scale)))


def _rtol(value: Any, what: str, index: tuple[Any, ...] | None) -> float:
    """A relative tolerance: in [MIN_TOL, MAX_TOL] of `fairalloc.tolerances`, as every
    tolerance of `fairalloc.properties`."""
    from ..tolerances import MAX_TOL, MIN_TOL

    return _fraction(value, what, index, MIN_TOL, MAX_TOL)


def _one(value: Any, name: str) -> Tolerance:
    """A mapping value: a `Tolerance`, ``rtol`` or ``(rtol, atol)``."""
    if isinstance(value, Tolerance):
        return value
    where = (name,)
    if isinstance(value, tuple | list):
        if len(value) not in (1, 2):
            raise InputError(f"tol[{name!r}] must be rtol or (rtol, atol), got {value!r}",
                             argument="tol", index=where)  # type: ignore[arg-type]
        rtol = _rtol(value[0], f"the rtol of {name!r}", where)
        atol = _fraction(value[1], f"the atol of {name!r}", where) if len(value) == 2 \
            else DEFAULT_ATOL
        return Tolerance(rtol, atol)
    return Tolerance(_rtol(value, f"the rtol of {name!r}", where))


def resolve_tolerances(tol: Any, properties: Iterable[str],
                       canonical: Callable[[str], str] | None = None) -> dict[str, Tolerance]:
    """The `Tolerance` of each property: ``tol`` is one number (the ``rtol`` of every
    property), one `Tolerance`, or a mapping ``{property: Tolerance | rtol | (rtol, atol)}``
    (the others keep the default ``Tolerance()``; the key ``"default"`` sets them).
    ``canonical`` maps a key to its property name (aliases; it raises for an unknown one).

    Examples
    --------
    >>> t = resolve_tolerances({"envy_free": (1e-3, 0.0)}, ["envy_free", "pareto_optimal"])
    >>> t["envy_free"], t["pareto_optimal"].rtol
    (Tolerance(rtol=0.001, atol=0.0), 1e-06)
    """
    names = tuple(properties)
    if isinstance(tol, Tolerance):
        return dict.fromkeys(names, tol)
    if not isinstance(tol, Mapping):
        return dict.fromkeys(names, Tolerance(_rtol(tol, "tol", None)))
    given: dict[str, Tolerance] = {}
    base = Tolerance()
    for key, value in tol.items():
        if not isinstance(key, str):
            raise InputError(f"tol: the key {key!r} is not a property name",
                             argument="tol", index=(key,))  # type: ignore[arg-type]
        if key.strip().lower() == "default":
            base = _one(value, key)
            continue
        try:
            name = canonical(key) if canonical is not None else key
        except InputError as exc:
            raise InputError(f"tol: {exc}", argument="tol",
                             index=(key,)) from None  # type: ignore[arg-type]
        given[name] = _one(value, key)
    return {n: given.get(n, base) for n in names}


def parse_tolerance_option(items: Iterable[str]) -> Any:
    """The ``tol=`` of ``fairalloc check --tol``: ``1e-6`` (every property) or
    ``PROP=RTOL[,ATOL]`` (repeatable; ``default=RTOL[,ATOL]`` for the others).

    Examples
    --------
    >>> parse_tolerance_option(["envy-free=1e-3,0", "1e-5"])
    {'envy-free': (0.001, 0.0), 'default': (1e-05,)}
    """
    out: dict[str, tuple[float, ...]] = {}
    for i, item in enumerate(items):
        name, sep, value = item.partition("=")
        if not sep:
            name, value = "default", item
        parts = [p.strip() for p in value.split(",")]
        try:
            nums = tuple(float(p) for p in parts)
        except ValueError:
            nums = ()
        if not name.strip() or len(nums) not in (1, 2):
            raise InputError(f"--tol must look like RTOL or PROPERTY=RTOL[,ATOL], got {item!r}",
                             argument="--tol", index=(i,))
        out[name.strip()] = nums
    return out
