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

    Returned by `fairalloc.solve_round` and `fairalloc.RoundPolicy.allocate`; rarely built by
    hand (a scheduler adapter may, for a round it answers itself).

    Parameters
    ----------
    objective : float
        The objective of the reduced program (see each policy); ``certificate`` certifies it.
        0 for an empty round.
    status : Status
        ``OPTIMAL`` only when ``certificate`` passed (`fairalloc.Result`).
    stats : SolveStats
        How the round was computed (``stats.method``: ``"reused"`` when the previous round's
        result was reused, ``"...+warm"`` when it seeded the solve).
    certificate : Certificate
        The reduced program's certificate (an empty round: value 0, bound 0).
    x : ndarray, shape (n, k)
        Fraction of time each job runs on each type (rows: `job_ids`, columns:
        `types`); 0 for unrunnable jobs and drained types. (Every result calls its
        allocation array ``x``; ``job_allocation`` is the same as a dict.)
    prices : ndarray, shape (k,)
        Capacity prices of the reduced program (``d OPT / d workers``); 0 on drained types.
    effective_throughput : ndarray, shape (n,)
        Each job's throughput under ``x`` (steps/s; for a Fisher market, its utility).
    job_ids, types : tuple
        Row and column labels, in the order given.
    drained_types : tuple of str
        Types with 0 workers this round.
    unrunnable_jobs : tuple
        Jobs that can run on no present type (zero throughput there, or a gang larger than
        every present type they could run on).
    policy : str
        The policy's name (one of `fairalloc.rounds.api.POLICIES`).
    reduced : fairalloc.Allocation or None
        The certified result of the reduced program (``None`` for an empty round).

    Attributes
    ----------
    job_allocation : dict
        ``{job_id: {worker_type: fraction}}``: ``x`` keyed by job id and type (a property).
    type_prices : dict
        ``{worker_type: price}``.

    Examples
    --------
    >>> import fairalloc as fa
    >>> r = fa.solve_round("max_min_fairness", {"a": {"v100": 40.0, "k80": 10.0},
    ...                                         "b": {"k80": 4.0}}, {"v100": 1, "k80": 0})
    >>> r.job_ids, r.types, r.drained_types, r.unrunnable_jobs
    (('a', 'b'), ('v100', 'k80'), ('k80',), ('b',))
    >>> r.x.tolist(), r.job_allocation["a"], r.certificate.ok
    ([[1.0, 0.0], [0.0, 0.0]], {'v100': 1.0, 'k80': 0.0}, True)
    >>> r.to_frame().shape
    (2, 2)
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

