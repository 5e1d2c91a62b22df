"""Per-job dicts read by position (#28): a scheduler builds its per-job dicts over one list of
job objects, in one order; when a dict's keys are those very objects in that order, its values
are read without hashing a key (Gavel's ``JobIdPair`` hashes in Python, so a lookup per job and
per argument cost more than a round's solve)."""

from __future__ import annotations

import operator
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

__all__ = ["same_keys"]


def same_keys(value: Mapping[Hashable, Any], ids: Sequence[Hashable]) -> bool:
    """Whether ``value``'s keys are the very objects ``ids`` (identity, not equality), in
    that order: then its values are read by position, without hashing a key (a scheduler's
    dicts are built over one list of job objects, whose ``__hash__`` may be Python code).

    Examples
    --------
    >>> jobs = [object(), object()]
    >>> same_keys({jobs[0]: 1, jobs[1]: 2}, jobs), same_keys({jobs[1]: 2, jobs[0]: 1}, jobs)
    (True, False)
    """
    return (type(value) is dict and len(value) == len(ids)
            and all(map(operator.is_, value, ids)))
