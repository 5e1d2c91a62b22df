"""Argument checks and drawing helpers shared by the strategy modules (private: the
public strategies are re-exported by
`fairalloc.testing.strategies`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from hypothesis import Phase, find, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ...errors import InputError

__all__ = ["ACCELERATOR_TYPES", "PERMILLE", "Range", "Size", "array_code", "as_count",
           "density_permille", "fmt_array", "minimal", "plural", "size_bounds",
           "sparse_positive", "value_draws", "value_range"]


#: Default accelerator type names, in the order `clusters` uses them.
ACCELERATOR_TYPES = ("v100", "p100", "k80", "a100", "t4", "h100")

Size = int | tuple[int, int]
Range = tuple[float, float]

# a per-entry draw below this many thousandths (of 1000) is a zero; shrinking drives it to 0,
# so minimal counterexamples are as sparse as they can be
PERMILLE = 1000


# ============================================================================================
# argument validation (when a strategy is built)
# ============================================================================================
def size_bounds(spec: Any, name: str, *, minimum: int = 1) -> tuple[int, int]:
    if isinstance(spec, bool):
        raise InputError(f"{name} must be an int or a (low, high) pair, got {spec!r}",
                         argument=name)
    if isinstance(spec, int | np.integer):
        lo = hi = int(spec)
    elif isinstance(spec, Sequence) and len(spec) == 2 and all(
            isinstance(v, int | np.integer) and not isinstance(v, bool) for v in spec):
        lo, hi = int(spec[0]), int(spec[1])
    else:
        raise InputError(f"{name} must be an int or a (low, high) pair of ints, got {spec!r}",
                         argument=name)
    if lo < minimum or hi < lo:
        raise InputError(f"{name} = {spec!r} must satisfy {minimum} <= low <= high",
                         argument=name)
    return lo, hi


def as_count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise InputError(f"{name} must be a positive int, got {value!r}", argument=name)
    return int(value)


def value_range(spec: Any, name: str, *, allow_zero: bool = False) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in spec)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a (low, high) pair of numbers, got {spec!r}",
                         argument=name) from None
    ok = (math.isfinite(lo) and math.isfinite(hi) and lo <= hi
          and (lo >= 0 if allow_zero else lo > 0))
    if not ok:
        need = "0 <= low" if allow_zero else "0 < low"
        raise InputError(f"{name} = {spec!r} must be finite with {need} <= high",
                         argument=name)
    return lo, hi


def density_permille(value: Any, name: str = "density") -> int:
    """Permille of entries that are zero, from the fraction of non-zero entries."""
    try:
        d = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number in [0, 1], got {value!r}",
                         argument=name) from None
    if not 0.0 <= d <= 1.0:
        raise InputError(f"{name} must be in [0, 1], got {value!r}", argument=name)
    return int(round(PERMILLE * (1.0 - d)))


def reals(lo: float, hi: float, **kw: Any) -> st.SearchStrategy[float]:
    """Finite floats in ``[lo, hi]``, never subnormal: the library refuses subnormal inputs
    (`fairalloc.InputError`), so a domain that drew one would report a false failure."""
    opts = {"allow_nan": False, "allow_infinity": False, "allow_subnormal": False, **kw}
    return st.floats(lo, hi, **opts)


def value_draws(lo: float, hi: float, integers: bool) -> st.SearchStrategy[float]:
    if integers:
        ilo, ihi = math.ceil(lo), math.floor(hi)
        if ilo > ihi:
            raise InputError(f"values ({lo:g}, {hi:g}) contain no integer", argument="values")
        return st.integers(ilo, ihi).map(float)
    return reals(lo, hi)


def sparse_positive(draw: st.DrawFn, shape: tuple[int, ...], vals: st.SearchStrategy[float],
                     zero_permille: int) -> np.ndarray:
    """Non-negative array of ``shape`` whose rows (axis 0) each have a positive entry."""
    n = shape[0]
    flat_len = int(np.prod(shape[1:]))
    values = draw(arrays(np.float64, (n, flat_len), elements=vals))
    roll = draw(arrays(np.int64, (n, flat_len), elements=st.integers(0, PERMILLE - 1)))
    out = np.where(roll >= zero_permille, values, 0.0)
    # every row gets one surely positive entry: its favourite (valid by construction)
    fav = draw(arrays(np.int64, n, elements=st.integers(0, flat_len - 1)))
    fav_val = draw(arrays(np.float64, n, elements=vals))
    rows = np.arange(n)
    out[rows, fav] = np.where(out[rows, fav] > 0, out[rows, fav], fav_val)
    return out.reshape(shape)


def minimal(strategy: st.SearchStrategy[Any], condition: Any = None) -> Any:
    """The simplest value ``strategy`` draws (satisfying ``condition``): where shrinking ends.

    Handy to see what a strategy's minimal counterexamples look like.

    Examples
    --------
    >>> from fairalloc.testing.strategies import utilities
    >>> minimal(utilities(n=2, m=3)).tolist()
    [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]]
    """
    cond = (lambda _: True) if condition is None else condition
    conf = settings(database=None, phases=[Phase.generate, Phase.shrink], deadline=None)
    return find(strategy, cond, settings=conf)


def fmt_array(arr: np.ndarray) -> str:
    return np.array2string(np.asarray(arr), precision=6, separator=", ", suppress_small=False,
                           floatmode="maxprec")


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def array_code(arr: np.ndarray) -> str:
    return f"np.array({np.asarray(arr).tolist()!r})"
