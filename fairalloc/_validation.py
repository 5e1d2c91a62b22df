"""Input validation used at every public boundary (one place, messages name argument and index).

All helpers return a *new*, read-only float64 array: callers' arrays are never mutated and the
library never mutates what it validated.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .errors import InputError

__all__ = ["as_array", "as_bool", "as_finite_float", "as_gang_sizes", "as_labels",
           "as_option", "as_positive_int", "as_positive_float", "as_time_limit", "as_tolerance",
           "fmt_index"]


def fmt_index(idx: Sequence[int] | np.ndarray) -> str:
    """Format an index tuple the way numpy users write it: ``[3, 1]``."""
    return "[" + ", ".join(str(int(i)) for i in idx) + "]"


def _first(mask: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argwhere(mask)[0])


def _plainly_valid(arr: np.ndarray, *, positive: bool, nonneg: bool, integer: bool) -> bool:
    """Whether every entry passes `as_array`'s checks, by whole-array reductions (no masks):
    the common case of valid data; on ``False`` the checks run entry by entry to name the
    first offender."""
    if positive:
        ok = bool((arr > 0).all())  # (NaN fails every comparison)
    elif nonneg:
        ok = bool((arr >= 0).all())
    else:
        ok = True
    ok = ok and bool(np.isfinite(arr).all())
    return ok and (not integer or bool((arr == np.round(arr)).all()))


def as_array(
    value: Any,
    name: str,
    *,
    ndim: int | tuple[int, ...],
    shape: tuple[int | None, ...] | None = None,
    nonneg: bool = True,
    positive: bool = False,
    allow_empty: bool = False,
    integer: bool = False,
    allow_nan: bool = False,
) -> np.ndarray:
    """Validate ``value`` as a finite float array and return a read-only copy.

    Parameters
    ----------
    value : array_like
        The caller's data (never modified).
    name : str
        Argument name used in error messages.
    ndim : int or tuple of int
        Accepted number(s) of dimensions.
    shape : tuple, optional
        Expected shape; ``None`` entries are free.
    nonneg, positive : bool
        Sign requirements on every entry.
    allow_empty : bool
        Whether a zero-size array is acceptable.
    integer : bool
        Require integral values (returned as float64 all the same).
    allow_nan : bool
        Accept NaN as "missing" (e.g. an unprofiled entry); NaN entries skip the other checks,
        infinities are still rejected.

    Raises
    ------
    InputError
        Naming ``name`` and the first offending index.

    Examples
    --------
    >>> as_array([[1, 2], [0, 3]], "utility", ndim=2).shape
    (2, 2)
    """
    if isinstance(value, list | tuple):
        try:  # convert once, so that text inside a list is seen below
            value = np.asarray(value)
        except (TypeError, ValueError, OverflowError):
            pass  # ragged or odd: reported by the conversion below
    if isinstance(value, str | bytes) or (isinstance(value, np.ndarray)
                                          and value.dtype.kind in "USa"):
        # numpy would turn the string "1" into the number 1
        raise InputError(f"{name} must be numeric, got text ({value!r})"[:200], argument=name)
    try:
        arr = np.array(value, dtype=np.float64, copy=True)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InputError(f"{name} must be a numeric array ({exc})", argument=name) from None
    ndims = (ndim,) if isinstance(ndim, int) else tuple(ndim)
    if arr.ndim not in ndims:
        want = " or ".join(str(d) for d in ndims)
        raise InputError(
            f"{name} must have {want} dimension(s), got shape {arr.shape}", argument=name
        )
    if shape is not None:
        for axis, (got, want_len) in enumerate(zip(arr.shape, shape, strict=False)):
            if want_len is not None and got != want_len:
                raise InputError(
                    f"{name} has shape {arr.shape}; axis {axis} must have length {want_len}",
                    argument=name,
                )
    if arr.size == 0 and not allow_empty:
        raise InputError(f"{name} is empty (shape {arr.shape})", argument=name)
    if not allow_nan and _plainly_valid(arr, positive=positive, nonneg=nonneg,
                                        integer=integer):
        arr.flags.writeable = False
        return arr
    present = ~np.isnan(arr) if allow_nan else np.ones(arr.shape, dtype=bool)
    need_finite = "finite (nan: missing)" if allow_nan else "finite"
    checks = [(present & ~np.isfinite(arr), need_finite)]
    if positive:
        checks.append((present & (arr <= 0), "positive"))
    elif nonneg:
        checks.append((present & (arr < 0), "non-negative"))
    for bad, need in checks:
        if bad.any():
            idx = _first(bad)
            shown = f"{arr[idx]:g}" if np.isfinite(arr[idx]) else str(arr[idx])
            raise InputError(
                f"{name}{fmt_index(idx)} is {shown}; every entry must be {need}",
                argument=name,
                index=idx,
            )
    if integer:
        bad = present & (arr != np.round(arr))
        if bad.any():
            idx = _first(bad)
            raise InputError(
                f"{name}{fmt_index(idx)} is {arr[idx]:g}; every entry must be an integer",
                argument=name,
                index=idx,
            )
    arr.flags.writeable = False
    return arr


def _as_real(value: Any, name: str) -> float:
    """A real scalar (Python or numpy number, or a 0-d array); bools and strings are refused."""
    if isinstance(value, bool | np.bool_ | str | bytes):
        raise InputError(f"{name} must be a number, got {value!r}", argument=name)
    if isinstance(value, np.ndarray) and value.ndim != 0:
        raise InputError(f"{name} must be a scalar, got an array of shape {value.shape}",
                         argument=name)
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"{name} must be a number, got {value!r}", argument=name) from None


def as_finite_float(value: Any, name: str, *, lo: float | None = None, hi: float | None = None,
                    lo_open: bool = False) -> float:
    """Validate a finite real scalar in ``[lo, hi]`` (``(lo, hi]`` with ``lo_open``).

    Examples
    --------
    >>> as_finite_float(0.5, "alpha", lo=0.0, hi=1.0, lo_open=True)
    0.5
    """
    out = _as_real(value, name)
    bad = not np.isfinite(out)
    if lo is not None:
        bad = bad or out < lo or (lo_open and out == lo)
    if hi is not None:
        bad = bad or out > hi
    if bad:
        rng = ""
        if lo is not None or hi is not None:
            left = "(" if lo_open else "["
            rng = f" in {left}{'-inf' if lo is None else f'{lo:g}'}, " \
                  f"{'inf' if hi is None else f'{hi:g}'}]"
        raise InputError(f"{name} must be a finite number{rng}, got {value!r}", argument=name)
    return out


def as_tolerance(value: Any, name: str) -> float:
    """Validate a relative tolerance: finite, in
    [`fairalloc.tolerances.MIN_TOL`, `fairalloc.tolerances.MAX_TOL`].

    Examples
    --------
    >>> as_tolerance(1e-6, "gap_tol")
    1e-06
    """
    from .tolerances import MAX_TOL, MIN_TOL

    return as_finite_float(value, name, lo=MIN_TOL, hi=MAX_TOL)


def as_time_limit(value: Any, name: str = "time_limit") -> float | None:
    """Validate an optional time limit in seconds: ``None`` or a finite positive number.

    Examples
    --------
    >>> as_time_limit(None), as_time_limit(2)
    (None, 2.0)
    """
    if value is None:
        return None
    return as_finite_float(value, name, lo=0.0, lo_open=True)


def as_bool(value: Any, name: str) -> bool:
    """Validate a flag: a Python or numpy bool (not 0/1, not a string)."""
    if not isinstance(value, bool | np.bool_):
        raise InputError(f"{name} must be True or False, got {value!r}", argument=name)
    return bool(value)


def as_positive_float(value: Any, name: str, *, allow_zero: bool = False) -> float:
    """Validate a finite positive (or non-negative) scalar."""
    out = _as_real(value, name)
    if not np.isfinite(out) or out < 0 or (out == 0 and not allow_zero):
        need = "non-negative" if allow_zero else "positive"
        raise InputError(f"{name} must be a finite {need} number, got {value!r}", argument=name)
    return out


def as_positive_int(value: Any, name: str, *, allow_zero: bool = False) -> int:
    """Validate a positive (or non-negative) integer."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise InputError(f"{name} must be an integer, got {value!r}", argument=name)
    out = int(value)
    if out < 0 or (out == 0 and not allow_zero):
        need = "non-negative" if allow_zero else "positive"
        raise InputError(f"{name} must be a {need} integer, got {value!r}", argument=name)
    return out


def as_option(value: Any, name: str, choices: Sequence[str]) -> str:
    """Validate a string option against its allowed values."""
    if not isinstance(value, str) or value not in choices:
        raise InputError(
            f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}", argument=name
        )
    return value


def as_gang_sizes(workers: Any, n: int, num_gpus: float) -> np.ndarray:
    """Validate per-job gang sizes (default 1): positive integers that fit in ``num_gpus``.

    Examples
    --------
    >>> as_gang_sizes(None, 2, 4).tolist(), as_gang_sizes([1, 4], 2, 4).tolist()
    ([1.0, 1.0], [1.0, 4.0])
    """
    if workers is None:
        if n and num_gpus < 1:  # (5e-324 GPUs made a makespan term -inf)
            raise InputError(f"num_gpus = {num_gpus:g} is less than one GPU: the default gang "
                             "of one worker does not fit (pass workers, or count GPUs)",
                             argument="num_gpus")
        return np.ones(n)
    w = as_array(workers, "workers", ndim=1, shape=(n,), positive=True, integer=True)
    big = np.flatnonzero(w > num_gpus)
    if big.size:
        i = int(big[0])
        raise InputError(f"workers[{i}] = {w[i]:g} exceeds num_gpus = {num_gpus:g}",
                         argument="workers", index=(i,))
    return w


def as_labels(value: Any, name: str, n: int, what: str) -> tuple[Any, ...]:
    """Validate ``n`` unique, hashable labels (ids or names); ``None`` gives ``(0, ..., n-1)``.

    ``what`` names what is labelled in the messages ("buyers", "goods").

    Examples
    --------
    >>> as_labels(None, "ids", 2, "buyers"), as_labels(["a", "b"], "ids", 2, "buyers")
    ((0, 1), ('a', 'b'))
    """
    if value is None:
        return tuple(range(n))
    if isinstance(value, str | bytes) or not hasattr(value, "__iter__"):
        raise InputError(f"{name} must be a sequence of labels, got {type(value).__name__}",
                         argument=name)
    labels = tuple(value.tolist() if isinstance(value, np.ndarray) else value)
    if len(labels) != n:
        raise InputError(f"{name} has {len(labels)} entries for {n} {what}", argument=name)
    seen: dict[Any, int] = {}
    for i, label in enumerate(labels):
        try:
            first = seen.setdefault(label, i)
        except TypeError:
            raise InputError(f"{name}[{i}] = {label!r} is not hashable", argument=name,
                             index=(i,)) from None
        if first != i:
            raise InputError(f"{name}[{i}] = {label!r} repeats {name}[{first}]; {name} must "
                             f"be unique", argument=name, index=(i,))
    return labels
