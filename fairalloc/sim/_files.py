"""Input checks shared by the simulator's file readers and workload builders.

Every field is checked; errors are `fairalloc.InputError` naming the file and the line
or JSON path. (A private module: its functions are not part of the public API.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError

__all__ = ["as_names", "as_path", "describe_value", "json_rate", "read_text"]


def as_path(path: Any, name: str) -> Path:
    if not isinstance(path, str | Path) or (isinstance(path, str) and not path):
        raise InputError(f"{name} must be a file path (str or Path), got {path!r}",
                         argument=name)
    return Path(path)


def read_text(p: Path, what: str) -> str:
    """The whole file as UTF-8 text; InputError naming the file (and line) otherwise."""
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise InputError(f"path: cannot read {what} from {str(p)!r}: {exc}",
                         argument="path") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise InputError(f"path: {str(p)!r} line {line}: not UTF-8 text ({exc.reason} at byte "
                         f"{exc.start})", argument="path") from None


def describe_value(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    return f"{type(value).__name__} {value!r}"[:80]


def json_rate(value: Any, p: Path, at: str) -> float:
    """A throughput from a JSON file: a finite non-negative number (not a bool or string)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"path: {str(p)!r} at {at}: a throughput must be a number, got "
                         f"{describe_value(value)}", argument="path")
    out = float(value)
    if not math.isfinite(out) or out < 0:
        raise InputError(f"path: {str(p)!r} at {at}: a throughput must be finite and "
                         f"non-negative, got {value!r}", argument="path")
    return out


def as_names(value: Any, name: str) -> list[str]:
    """A non-empty sequence of distinct strings (type or model names)."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence | tuple | list):
        raise InputError(f"{name} must be a sequence of names, got {value!r}", argument=name)
    out = list(value)
    if not out:
        raise InputError(f"{name} is empty", argument=name)
    for i, v in enumerate(out):
        if not isinstance(v, str):
            raise InputError(f"{name}[{i}] must be a string, got {v!r}", argument=name,
                             index=(i,))
    if len(set(out)) != len(out):
        dup = next(v for i, v in enumerate(out) if v in out[:i])
        raise InputError(f"{name} repeats {dup!r}", argument=name)
    return out


# --------------------------------------------------------------------------------------------
