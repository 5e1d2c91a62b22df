"""The stateful round-based mechanism: `fairalloc.RoundScheduler` runs round after
round (§5).

It keeps each row's received and elapsed time, decides every round with Algorithm 1
(`fairalloc.mechanism.rounds`), optionally places it (`fairalloc.mechanism.placement`)
with lease renewals, and carries the history across target updates by row label.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from .._validation import as_bool, as_option, as_positive_float
from ..data import Jobs
from ..errors import InputError, only_fairalloc_errors
from ..results import readonly
from .assignment import Placement, RoundAssignment, ServerLayout
from .placement import place
from .rounds import ELIGIBLE, FRACTION, _assignment, _build_rows


class RoundScheduler:
    """Run the round-based mechanism over many rounds, accumulating the history (§5).

    Parameters
    ----------
    target, cluster, jobs, scale_factor, combinations, runnable, ids, eligible, fraction
        As in `fairalloc.schedule_round`.
    servers : ServerLayout, optional
        When given, every round is also placed (`fairalloc.place`), with lease renewals
        across rounds; the placement is attached to the returned assignment.
    round_duration : float
        Length of a round (the unit of `fairalloc.mechanism.RoundScheduler.received` and
        `fairalloc.mechanism.RoundScheduler.elapsed`); default 1.
    lease_renewal : bool
        Passed to `fairalloc.place`.

    Attributes
    ----------
    received : ndarray, shape (rows, k)
        Time each row has received on each type.
    elapsed : ndarray, shape (rows,)
        Time since each row entered.
    rounds : int
        Rounds run.

    Examples
    --------
    >>> from fairalloc import Cluster
    >>> sched = RoundScheduler([[0.5, 0.0], [0.25, 0.5], [0.25, 0.5]], Cluster({"a": 1, "b": 1}))
    >>> errors = sched.run(400)
    >>> bool(errors[-1] <= 1 / 400), float(sched.received_fraction[1, 1])
    (True, 0.5)
    """

    @only_fairalloc_errors
    def __init__(
        self,
        target: Any,
        cluster: Any,
        jobs: Jobs | None = None,
        *,
        scale_factor: Any = None,
        combinations: Sequence[Sequence[int]] | None = None,
        runnable: Any = None,
        ids: Sequence[Hashable] | None = None,
        servers: ServerLayout | None = None,
        round_duration: float = 1.0,
        eligible: str = "all",
        fraction: str = "elapsed",
        lease_renewal: bool = True,
    ) -> None:
        self._eligible = as_option(eligible, "eligible", ELIGIBLE)
        self._fraction = as_option(fraction, "fraction", FRACTION)
        self._duration = as_positive_float(round_duration, "round_duration")
        if servers is not None and not isinstance(servers, ServerLayout):
            raise InputError("servers must be a ServerLayout", argument="servers")
        self._cluster = cluster
        self._layout = servers
        self._lease_renewal = as_bool(lease_renewal, "lease_renewal")
        self._rows = _build_rows(target, cluster, jobs, scale_factor=scale_factor,
                                 combinations=combinations, runnable=runnable, ids=ids)
        if servers is not None and not np.array_equal(servers.capacity, self._rows.capacity):
            raise InputError("servers do not match the cluster's GPU counts", argument="servers")
        self._t = np.zeros((self._rows.n_rows, self._rows.k))
        self._e = np.zeros(self._rows.n_rows)
        self._rounds = 0
        self._placement: Placement | None = None
        self._restarts = 0

    # -- state -------------------------------------------------------------------------------
    @property
    def target(self) -> np.ndarray:
        """The target allocation being realised (read-only)."""
        return self._rows.target

    @property
    def received(self) -> np.ndarray:
        """Time each row has received on each type (a read-only copy)."""
        return readonly(self._t.copy())

    @property
    def elapsed(self) -> np.ndarray:
        """Time since each row entered (a read-only copy)."""
        return readonly(self._e.copy())

    @property
    def rounds(self) -> int:
        """Number of rounds run."""
        return self._rounds

    @property
    def row_labels(self) -> tuple[Hashable, ...]:
        """Labels of the rows (job ids, or tuples of job ids for combinations)."""
        return self._rows.row_labels

    @property
    def received_fraction(self) -> np.ndarray:
        """``received / elapsed`` per row and type (0 for rows with no elapsed time)."""
        e = self._e[:, None]
        return readonly(np.where(e > 0, self._t / np.where(e > 0, e, 1.0), 0.0))

    @property
    def error(self) -> float:
        """``max |received_fraction - target|`` over rows and types."""
        return float(np.abs(self.received_fraction - self._rows.target).max())

    @property
    def shortfall(self) -> float:
        """``max (target - received_fraction)^+``: how far the worst row is behind."""
        return float(np.maximum(self._rows.target - self.received_fraction, 0.0).max())

    @property
    def placement(self) -> Placement | None:
        """Placement of the last round (with ``servers``)."""
        return self._placement

    @property
    def total_restarts(self) -> int:
        """Checkpoint (re)loads over all rounds placed so far."""
        return self._restarts

    # -- rounds ------------------------------------------------------------------------------
    @only_fairalloc_errors
    def next_round(self) -> RoundAssignment:
        """The assignment the next round would get, without running it."""
        return _assignment(self._rows, self._t, self._e, self._eligible, self._fraction)

    @only_fairalloc_errors
    def step(self) -> RoundAssignment:
        """Decide, place (with ``servers``) and run one round; return its assignment."""
        a = self.next_round()
        if self._layout is not None:
            p = place(a, self._layout, previous=self._placement,
                      lease_renewal=self._lease_renewal)
            self._placement = p
            self._restarts += p.restarts
            a = dataclasses.replace(a, placement=p)
        rows = a.selection
        self._t[rows, a.type_index[rows]] += self._duration
        self._e += self._duration
        self._rounds += 1
        return a

    @only_fairalloc_errors
    def run(self, rounds: int) -> np.ndarray:
        """Run ``rounds`` rounds; return `fairalloc.mechanism.RoundScheduler.error` after
        each of them."""
        if isinstance(rounds, bool) or not isinstance(rounds, int | np.integer) or rounds < 0:
            raise InputError(f"rounds must be a non-negative integer, got {rounds!r}",
                             argument="rounds")
        try:  # (fuzz seed 15: a 400-digit count raised numpy's ValueError)
            out = np.empty(int(rounds))
        except (ValueError, OverflowError, MemoryError):
            raise InputError(f"rounds = {rounds} is too many to record one error per round "
                             "in memory", argument="rounds") from None
        for i in range(int(rounds)):
            self.step()
            out[i] = self.error
        return readonly(out)

    @only_fairalloc_errors
    def update(
        self,
        target: Any,
        jobs: Jobs | None = None,
        *,
        scale_factor: Any = None,
        combinations: Sequence[Sequence[int]] | None = None,
        runnable: Any = None,
        ids: Sequence[Hashable] | None = None,
        reset: bool = False,
    ) -> None:
        """Change the target (a recomputed allocation) and possibly the set of jobs.

        Rows are matched by label (job id, or tuple of job ids): rows that persist keep their
        received and elapsed time, new rows start from zero, rows that left are dropped. With
        ``reset=True`` the history of every row restarts from zero (Gavel resets it when the
        allocation is recomputed). Leases of persisting jobs are kept.
        """
        rows = _build_rows(target, self._cluster, jobs, scale_factor=scale_factor,
                           combinations=combinations, runnable=runnable, ids=ids)
        t = np.zeros((rows.n_rows, rows.k))
        e = np.zeros(rows.n_rows)
        if not reset:
            old = {label: i for i, label in enumerate(self._rows.row_labels)}
            idx = np.array([old.get(label, -1) for label in rows.row_labels], dtype=np.int64)
            ok = idx >= 0
            t[ok] = self._t[idx[ok]]
            e[ok] = self._e[idx[ok]]
        if self._placement is not None:
            self._placement = self._placement._for_jobs(rows.job_ids)
        self._rows, self._t, self._e = rows, t, e

    def __repr__(self) -> str:
        return (f"RoundScheduler(rows={self._rows.n_rows}, types={self._rows.types}, "
                f"rounds={self._rounds}, error={self.error:.3g})")
