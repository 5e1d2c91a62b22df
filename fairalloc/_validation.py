"""Input validation used at every public boundary (one place, messages name argument and index).

All helpers return a *new*, read-only float64 array: callers' arrays are never mutated and the
library never mutates what it validated.

What counts as a number
-----------------------
Wherever a number is expected (a scalar argument or an entry of an array argument), fairalloc
accepts the **real numbers**: Python ``int`` and ``float``, numpy integer and floating scalars
and arrays, and other real number types that convert to ``float`` (``decimal.Decimal``,
``fractions.Fraction``, any ``numbers.Real``), mixed freely. It refuses, with an
`fairalloc.InputError` naming the argument and the first offending index:

* **complex numbers**, even with a zero imaginary part (Python ``complex``, numpy complex
  scalars and arrays): numpy would silently drop the imaginary part;
* **bools** (``True``/``False``, numpy bools, bool arrays, and a bool inside a list of
  numbers): numpy reads them as 0 and 1, but a flag where a number belongs is a mistake, and
  fairalloc's scalar arguments refuse them too (`fairalloc._validation.as_bool` is
  the converse: a flag is never 0 or 1);
* text (numpy would read ``"1"`` as 1), ``None`` (except where an argument documents NaN as
  "missing": there ``None`` is missing too), nested sequences where a number belongs,
  dates, and any other object;
* integers too large for a float (``10**400``);
* **subnormal numbers**: a nonzero finite value whose magnitude is below
  ``np.finfo(float).tiny`` (about 2.2e-308, e.g. ``5e-324``). Such a value has lost most of
  its significant digits, and the solvers (and any rescaling by a factor below one) flush it
  to 0 while the input still says it is nonzero, so a certificate computed from the input and
  a solver's reading of it would disagree. Pass 0, or a normal number (rescale the units).
  The rule holds for every scalar and every array entry validated here.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import numbers
import operator
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import numpy as np

from .errors import InputError

__all__ = ["as_array", "as_bool", "as_finite_float", "as_gang_sizes", "as_labels",
           "as_option", "as_positive_int", "as_positive_float", "as_real_array",
           "as_time_limit", "as_tolerance", "as_tuning_value", "check_keywords", "check_knobs",
           "fmt_index"]

#: the smallest positive normal float64: a nonzero magnitude below it is subnormal and refused
#: (ACCURACY: the input contract; see the module notes)
_TINY = float(np.finfo(np.float64).tiny)
_SUBNORMAL_WHY = ("subnormal (a nonzero magnitude below np.finfo(float).tiny = 2.2e-308 loses "
                  "its precision and solvers read it as 0): pass 0 or a normal number")

#: scalar types that are real numbers (a bool is an int in Python: refused separately)
_REAL_TYPES = (int, float, np.integer, np.floating, Decimal, numbers.Real)
#: scalar types that look numeric but are not real numbers here (checked first: numpy's
#: timedelta64 is a signedinteger, a bool an int)
_NOT_REAL_TYPES = (bool, np.bool_, complex, np.complexfloating, np.timedelta64,
                   np.datetime64)


def fmt_index(idx: Sequence[int] | np.ndarray) -> str:
    """Format an index tuple the way numpy users write it: ``[3, 1]``."""
    return "[" + ", ".join(str(int(i)) for i in idx) + "]"


def _refuse_subnormal(arr: np.ndarray, name: str) -> None:
    """Raise `InputError` naming the first subnormal entry of float array ``arr`` (NaN and
    infinities pass: other checks judge them)."""
    if arr.size == 0:
        return
    mag = np.abs(arr)
    bad = (mag < _TINY) & (mag > 0)
    if bad.any():
        idx = _first(bad) if arr.ndim else ()
        where = fmt_index(idx) if idx else ""
        raise InputError(f"{name}{where} is {float(arr[idx])!r}: {_SUBNORMAL_WHY}", argument=name,
                         index=idx or None)


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
    allow_bool: bool = False,
    allow_subnormal: bool = False,
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
        infinities are still rejected. ``None`` entries are missing too.
    allow_bool : bool
        The argument is a mask (documented as ``array_like of bool``): bools are read as 0/1.
        Everywhere else a bool is refused (see the module notes).
    allow_subnormal : bool
        Accept subnormal entries (only for arrays fairalloc computed itself, e.g. a policy's
        allocation inside the simulator; every user argument refuses them: module notes).

    Raises
    ------
    InputError
        Naming ``name`` and the first offending index.

    Examples
    --------
    >>> as_array([[1, 2], [0, 3]], "utility", ndim=2).shape
    (2, 2)
    """
    arr = as_real_array(value, name, allow_none=allow_nan, allow_bool=allow_bool,
                        allow_subnormal=allow_subnormal)
    ndims = (ndim,) if isinstance(ndim, int) else tuple(ndim)
    if arr.ndim not in ndims:
        want = " or ".join(str(d) for d in ndims)
        deep = max(ndims)
        if arr.ndim > deep and isinstance(value, list | tuple) and arr.size:
            # a regular nesting one level too deep: the first entry is a sequence
            idx = (0,) * deep
            entry = value
            for _ in idx:
                entry = entry[0]
            raise InputError(f"{name} must have {want} dimension(s), got shape {arr.shape}: "
                             f"{name}{fmt_index(idx)} is {_shown(entry)}, a sequence where a "
                             "number belongs", argument=name, index=idx or None)
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
    # (valid data pass whole-array checks; all finite: no NaN either, so allow_nan is moot)
    if _plainly_valid(arr, positive=positive, nonneg=nonneg, integer=integer):
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


def _problem(value: Any, allow_none: bool = False, allow_bool: bool = False) -> str | None:
    """Why ``value`` is not a real number (see the module notes), or ``None`` if it is one."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if allow_bool and isinstance(value, bool | np.bool_):
        return None
    if isinstance(value, _NOT_REAL_TYPES):
        if isinstance(value, complex | np.complexfloating):
            return "complex (not accepted, even with a zero imaginary part)"
        if isinstance(value, bool | np.bool_):
            return "a bool (True/False is not accepted as a number)"
        return f"a {type(value).__name__} (not a number)"
    if isinstance(value, _REAL_TYPES):
        try:
            float(value)
        except OverflowError:
            return "too large to be represented as a float"
        except (TypeError, ValueError):  # e.g. Decimal('sNaN')
            return "not a number"
        return None
    if value is None:
        return None if allow_none else "None (not a number)"
    if isinstance(value, str | bytes | np.str_ | np.bytes_):
        return "text (not a number)"
    if isinstance(value, np.ndarray | Sequence | set | dict):
        return f"a {type(value).__name__} where a number belongs (nested too deep, or ragged)"
    return f"of type {type(value).__name__} (not a number)"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "..."


#: characters of an offending value quoted in a message (display only)
_SHOWN_CHARS = 60
_SHOWN_BITS = 64  # ACCURACY (of a message): larger integers are reported by their size


def _first_problem(value: Any, allow_none: bool, allow_bool: bool = False
                   ) -> tuple[tuple[int, ...], Any, str] | None:
    """The first entry of array-like ``value`` that is not a real number: (index, entry, why).

    Entry by entry in Python: called only once an array is known to hold an offender (or holds
    objects of other types)."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "biufcSUaMmV":
        kind = value.dtype.kind
        if kind in "iuf":
            return None
        if value.size == 0:
            return None
        flat = value.reshape(-1)
        first = 0
        if kind == "c":  # every entry is complex: name the first with an imaginary part
            nz = np.flatnonzero(flat.imag != 0)
            first = int(nz[0]) if nz.size else 0
        idx = tuple(int(i) for i in np.unravel_index(first, value.shape))
        entry = flat[first]
        return idx, entry, _problem(entry, allow_none, allow_bool) or f"of dtype {value.dtype}"
    try:
        obj = np.array(value, dtype=object)
    except (TypeError, ValueError):
        return None
    for idx, entry in np.ndenumerate(obj):
        why = _problem(entry, allow_none, allow_bool)
        if why is not None:
            return tuple(int(i) for i in idx), entry, why
    return None


def _raise_entry(value: Any, name: str, allow_none: bool, allow_bool: bool = False) -> None:
    found = _first_problem(value, allow_none, allow_bool)
    if found is None:
        raise InputError(f"{name} must be an array of real numbers", argument=name)
    idx, entry, why = found
    where = fmt_index(idx) if idx else ""
    raise InputError(f"{name}{where} is {_shown(entry)}: {why}; every entry must be a real "
                     "number", argument=name, index=idx if idx else None)


def _shape_of(value: Any) -> tuple[int, ...] | None:
    try:
        return tuple(np.shape(value))
    except ValueError:  # ragged inside
        return None


def _ragged_index(value: Any, prefix: tuple[int, ...] = ()) -> tuple[int, ...] | None:
    """Index of the first entry of a nested sequence whose shape differs from its first
    sibling's (or that is ragged inside), or ``None``."""
    if not isinstance(value, list | tuple) or not value:
        return None
    first = _shape_of(value[0])
    for i, entry in enumerate(value):
        shape = _shape_of(entry)
        if shape is None:
            return _ragged_index(entry, (*prefix, i)) or (*prefix, i)
        if shape != first:
            return (*prefix, i)
    return None


def _leaves(value: Any, depth: int) -> Any:
    """The entries of a regular nested sequence ``depth`` levels deep, as an iterator (C-level
    iteration: no Python code runs per entry)."""
    items: Any = value
    for _ in range(depth - 1):
        items = itertools.chain.from_iterable(items)
    return items


def _hides_bools(value: Any, raw: np.ndarray) -> bool:
    """Whether the list ``value``, converted by numpy to the numeric ``raw``, held a bool or a
    0-d array (numpy reads a bool among numbers as 0 or 1): only an entry equal to 0 or 1 can
    be one, so only those are looked at when they are few (a bool costs a scan of the types)."""
    at = np.flatnonzero((raw == 0) | (raw == 1))
    if at.size == 0:
        return False
    if at.size * _GATHER_RATIO < raw.size:  # few candidates: gather them, check their types
        if raw.ndim == 2:  # (rows of a matrix: each candidate by its row and column)
            row, col = np.divmod(at, raw.shape[1])
            picked: Any = map(operator.getitem, map(value.__getitem__, row.tolist()),
                              col.tolist())
        else:
            flat = value if raw.ndim == 1 else list(_leaves(value, raw.ndim))
            picked = operator.itemgetter(*at.tolist())(flat) if at.size > 1 else (flat[at[0]],)
        types = set(map(type, picked))
    else:
        types = set(map(type, _leaves(value, raw.ndim)))
    return any(issubclass(t, bool | np.bool_ | np.ndarray) for t in types)


#: PERFORMANCE: below one candidate (an entry equal to 0 or 1) in this many entries, a list's
#: candidates are gathered and checked alone; above, every entry's type is scanned
_GATHER_RATIO = 4


def as_real_array(value: Any, name: str, *, allow_none: bool = False,
                  allow_bool: bool = False, allow_subnormal: bool = False) -> np.ndarray:
    """``value`` as a new float64 array (any shape; no range check), refusing every entry that
    is not a real number (see the module notes) with an `fairalloc.InputError`
    naming ``name`` and the entry's index.

    ``allow_none`` reads ``None`` entries as NaN (for arguments where NaN means missing),
    ``allow_bool`` bools as 0/1 (for masks). A subnormal entry is refused (see the module
    notes) unless ``allow_subnormal`` (only for arrays fairalloc computed itself, never for a
    user's argument).
    Python ints too large for int64 and ``Decimal``/``Fraction`` entries are converted entry
    by entry; numeric numpy arrays and lists of Python floats and ints are converted by numpy
    (a list is scanned for bools, which numpy would read as 0/1, only when an entry is 0 or 1).

    Examples
    --------
    >>> as_real_array([[1, 2.5]], "utility").tolist()
    [[1.0, 2.5]]
    >>> try:
    ...     as_real_array([1, 2 + 0j], "utility")
    ... except InputError as exc:
    ...     print(exc.argument, exc.index, str(exc)[:29])
    utility (1,) utility[1] is (2+0j): complex
    >>> try:
    ...     as_real_array([1.0, 5e-324], "supply")
    ... except InputError as exc:
    ...     print(exc.argument, exc.index, str(exc)[:30])
    supply (1,) supply[1] is 5e-324: subnormal
    """
    arr = _to_float_array(value, name, allow_none, allow_bool)
    if not allow_subnormal:
        _refuse_subnormal(arr, name)
    return arr


#: the entry types of a list converted straight to float64 (exactly these types: a bool is
#: an int subclass, and is refused)
_PLAIN_NUMBERS = frozenset({float, int})


def _to_float_array(value: Any, name: str, allow_none: bool, allow_bool: bool) -> np.ndarray:
    """`as_real_array` without the subnormal rule."""
    if type(value) is list and set(map(type, value)) <= _PLAIN_NUMBERS:
        # a flat list of Python floats and ints (a scheduler's per-job values): no bool or
        # text can hide among them, so numpy converts it straight to float64 (twice as fast
        # as letting it guess the dtype, then looking for bools, #28)
        try:
            return np.array(value, dtype=np.float64)
        except OverflowError:  # an int beyond a float: named below
            pass
    if isinstance(value, np.ndarray):
        raw = value
    elif isinstance(value, str | bytes):  # numpy would read the string "1" as the number 1
        raise InputError(f"{name} must be numeric, got text ({_shown(value)})", argument=name)
    else:
        try:
            raw = np.asarray(value)
        except (TypeError, ValueError, OverflowError) as exc:  # ragged nesting
            idx = _ragged_index(value)
            if idx is not None:
                raise InputError(f"{name}{fmt_index(idx)} has another shape than the entries "
                                 f"before it (ragged nesting): {name} must be a regular array "
                                 "of real numbers", argument=name, index=idx) from None
            raise InputError(f"{name} must be a numeric array ({exc})", argument=name) from None
    fresh = raw is not value and isinstance(value, list | tuple)  # numpy made a new array
    kind = raw.dtype.kind
    if allow_bool and kind == "b":
        return raw.astype(np.float64)
    if kind in "iuf":
        if fresh and raw.size and not allow_bool and _hides_bools(value, raw) and (
                _first_problem(value, allow_none) is not None):
            _raise_entry(value, name, allow_none)
        with np.errstate(over="ignore"):  # (a longdouble beyond float64: inf, refused later)
            return raw.astype(np.float64, copy=not fresh)
    given = value if fresh else raw  # (a list keeps its entries' own types: 1 beside 2j)
    if kind != "O":
        _raise_entry(given, name, allow_none, allow_bool)
    flat = raw.reshape(-1).tolist()
    types = set(map(type, flat))
    if not all(issubclass(t, _REAL_TYPES) and not issubclass(t, _NOT_REAL_TYPES)
               for t in types if not (allow_none and t is type(None))
               and not (allow_bool and issubclass(t, bool | np.bool_))):
        _raise_entry(given, name, allow_none, allow_bool)
    if type(None) in types:
        flat = [math.nan if v is None else v for v in flat]
    try:
        return np.array(flat, dtype=np.float64).reshape(raw.shape)
    except (TypeError, ValueError, OverflowError):  # an int beyond a float, Decimal('sNaN')
        _raise_entry(given, name, allow_none, allow_bool)
        raise  # pragma: no cover - _raise_entry raised


def _as_real(value: Any, name: str) -> float:
    """A real scalar (Python or numpy number, or a 0-d array); see the module notes."""
    if isinstance(value, np.ndarray) and value.ndim != 0:
        raise InputError(f"{name} must be a scalar, got an array of shape {value.shape}",
                         argument=name)
    why = _problem(value)
    if why is not None:
        raise InputError(f"{name} must be a real number, got {_shown(value)}: {why}",
                         argument=name)
    out = float(value)
    if 0 < abs(out) < _TINY:
        raise InputError(f"{name} is {out!r}: {_SUBNORMAL_WHY}", argument=name)
    return out


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


def as_positive_int(value: Any, name: str, *, allow_zero: bool = False,
                    maximum: int | None = None) -> int:
    """Validate a positive (or non-negative) integer, at most ``maximum`` when given.

    Examples
    --------
    >>> as_positive_int(3, "n"), as_positive_int(0, "seed", allow_zero=True)
    (3, 0)
    >>> as_positive_int(10**30, "num_jobs", maximum=10**7)
    Traceback (most recent call last):
    ...
    fairalloc.errors.InputError: num_jobs must be at most 10000000, got an integer of 100 bits
    """
    if isinstance(value, _NOT_REAL_TYPES) or not isinstance(value, int | np.integer):
        raise InputError(f"{name} must be an integer, got {value!r}", argument=name)
    out = int(value)
    if out < 0 or (out == 0 and not allow_zero):
        need = "non-negative" if allow_zero else "positive"
        raise InputError(f"{name} must be a {need} integer, got {value!r}", argument=name)
    if maximum is not None and out > maximum:
        # (str() of a huge int raises past 4,300 digits: show its size instead)
        shown = (str(out) if out.bit_length() <= _SHOWN_BITS
                 else f"an integer of {out.bit_length()} bits")
        raise InputError(f"{name} must be at most {maximum}, got {shown}", argument=name)
    return out


def check_keywords(fn: Any, options: Any, what: str, listed: Sequence[str] | None = None
                   ) -> None:
    """Raise `InputError` naming the first key of ``options`` that the callable ``fn`` takes no
    keyword argument for (a solve option a policy does not take), instead of Python's
    ``TypeError`` from the call; the message lists the keywords it takes (those in ``listed``
    if given).

    Examples
    --------
    >>> def solve(*, gap_tol=1e-6): ...
    >>> try:
    ...     check_keywords(solve, {"gap_tol": 1e-7, "max_levels": 3}, "max_min_fairness")
    ... except InputError as exc:
    ...     print(exc.argument, str(exc))
    max_levels max_min_fairness takes no 'max_levels' (options: gap_tol)
    """
    takes = _keywords(getattr(fn, "__func__", fn))
    bad = [key for key in options if key not in takes]
    if bad:
        shown = sorted(takes if listed is None else takes.intersection(listed))
        raise InputError(f"{what} takes no {bad[0]!r} (options: {', '.join(shown)})",
                         argument=str(bad[0]))


@functools.cache  # (a few solve methods of the library classes)
def _keywords(fn: Any) -> frozenset[str]:
    """The keyword arguments ``fn`` takes (cached: a signature costs more than a check)."""
    import inspect

    kinds = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return frozenset(name for name, p in inspect.signature(fn).parameters.items()
                     if p.kind in kinds and name != "self")


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


def check_knobs(tuning: Any) -> None:
    """Validate every field of a frozen ``Tuning`` dataclass by its annotated type: a ``bool``
    field must be a bool, an ``int`` field a non-negative int, a ``float`` field a finite
    non-negative number; the `InputError` names ``tuning.<field>`` (the one rule of
    `fairalloc.throughput.Tuning`, `fairalloc.markets.Tuning` and `fairalloc.auctions.Tuning`).

    Examples
    --------
    >>> from fairalloc.markets import Tuning
    >>> Tuning(ipm_max_iter=-1)
    Traceback (most recent call last):
    ...
    fairalloc.errors.InputError: tuning.ipm_max_iter must be a non-negative int, got -1
    """
    for f in dataclasses.fields(tuning):
        value = getattr(tuning, f.name)
        kind = f.type if isinstance(f.type, str) else f.type.__name__
        name = f"tuning.{f.name}"
        if kind == "bool":
            if not isinstance(value, bool):
                raise InputError(f"{name} must be a bool, got {value!r}", argument=name)
        elif kind == "int":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InputError(f"{name} must be a non-negative int, got {value!r}",
                                 argument=name)
        elif (isinstance(value, bool) or not isinstance(value, int | float)
              or not value >= 0.0 or value == float("inf")):
            raise InputError(f"{name} must be a finite non-negative number, got {value!r}",
                             argument=name)


def as_tuning_value(value: Any, kind: type, default: Any, public: str) -> Any:
    """``value`` as a ``kind`` tuning (``None``: ``default``); anything else is an `InputError`
    naming ``tuning`` and the public class ``public``.

    Examples
    --------
    >>> from fairalloc.markets import Tuning
    >>> as_tuning_value(None, Tuning, Tuning(), "fairalloc.markets.Tuning") == Tuning()
    True
    """
    if value is None:
        return default
    if not isinstance(value, kind):
        raise InputError(f"tuning must be a {public}, got {type(value).__name__}",
                         argument="tuning")
    return value
