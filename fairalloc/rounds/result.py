"""`fairalloc.RoundResult`: one scheduling round's allocation, keyed by job id and worker type.

Returned by `fairalloc.solve_round` and `fairalloc.RoundPolicy.allocate`
(see `fairalloc.rounds.api` for how a round is solved).
"""

from __future__ import annotations

import functools
import itertools
import warnings
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..results import Result

__all__ = ["RoundResult"]


@dataclass(frozen=True, repr=False)
class RoundResult(Result):
    """One round's allocation over every job and worker type given, with the facts.

    Attributes
    ----------
    x : ndarray, shape (n, k)
        Fraction of time each job runs on each type (rows: `job_ids`, columns:
        `types`); 0 for unrunnable jobs and drained types. (Every result calls its
        allocation array ``x``; ``job_allocation`` is the same as a dict.)
    job_allocation : dict
        ``{job_id: {worker_type: fraction}}``: ``x`` keyed by job id and type (a property).
    prices : ndarray, shape (k,)
        Capacity prices of the reduced program (``d OPT / d workers``); 0 on drained types.
    effective_throughput : ndarray, shape (n,)
    job_ids, types : tuple
    drained_types : tuple of str
        Types with 0 workers this round.
    unrunnable_jobs : tuple
        Jobs that can run on no present type (zero throughput there, or a gang larger than
        every present type they could run on).
    policy : str
    reduced : fairalloc.Allocation or None
        The certified result of the reduced program (``None`` for an empty round).
    """

    x: np.ndarray
    prices: np.ndarray
    effective_throughput: np.ndarray
    job_ids: tuple[Hashable, ...]
    types: tuple[str, ...]
    drained_types: tuple[str, ...]
    unrunnable_jobs: tuple[Hashable, ...]
    policy: str
    reduced: Any = None

    def __post_init__(self) -> None:
        # labels are never arrays: skip them when the array fields are frozen (walking
        # thousands of labels would cost more than a round's solve)
        saved = {f: getattr(self, f) for f in ("job_ids", "types", "unrunnable_jobs",
                                               "reduced")}
        for f in saved:
            object.__setattr__(self, f, ())
        try:
            super().__post_init__()
        finally:
            for f, v in saved.items():
                object.__setattr__(self, f, v)

    @functools.cached_property
    def job_allocation(self) -> dict[Hashable, dict[str, float]]:
        """``{job_id: {worker_type: fraction}}`` (every job and type given, zeros included;
        built once, on first access)."""
        # one (type, fraction) pair list per type, zipped into each job's dict in C
        cols = (zip(itertools.repeat(t), col) for t, col in zip(self.types, self.x.T.tolist()))
        if not self.types:
            return {j: {} for j in self.job_ids}
        return dict(zip(self.job_ids, map(dict, zip(*cols))))

    @property
    def allocation(self) -> dict[Hashable, dict[str, float]]:
        """Deprecated: the dict `job_allocation` (every other result's ``allocation`` is its
        array, here `x`). Emits a ``DeprecationWarning``."""
        warnings.warn("RoundResult.allocation (a dict) is deprecated: use .job_allocation for "
                      "the dict or .x for the array", DeprecationWarning, stacklevel=2)
        return self.job_allocation

    @property
    def type_prices(self) -> dict[str, float]:
        """``{worker_type: price}``."""
        return dict(zip(self.types, self.prices.tolist()))

    @property
    def warm(self) -> bool:
        """Whether this round reused or was seeded by the previous one."""
        return self.stats.method in ("reused", "plan-reused") or self.stats.method.endswith(
            "+warm")

    def to_frame(self) -> Any:
        """One row per job (index: job ids), one column per type."""
        from ..results import require_pandas

        pd = require_pandas()
        return pd.DataFrame(self.x, index=pd.Index(list(self.job_ids), name="job"),
                            columns=list(self.types))

