"""One status vocabulary and one solve log for every solve fairalloc runs.

`fairalloc.SolveStatus` is the only status vocabulary of the library: a backend
maps its own status strings onto it (`fairalloc.backends`), a result carries one
(``result.status``), and every `fairalloc.SolverError` carries one
(``exc.status``, with the backend's own string in ``exc.raw_status``).

`fairalloc.solvelog.SolveLog` records what one public call ran: the named steps
(``stats.path``), every hand-over from one strategy to the next with its reason
(``stats.fallbacks``), and the backend solves (``stats.backend``, ``stats.solves``,
``stats.iterations``, ``stats.raw_status``). Every formulation family writes to it through the
same three methods -- `SolveLog.step`, `SolveLog.hand_over` and `SolveLog.solved` -- so a
path reads the same whichever family produced it. A path stays short: consecutive repeats of a
step are written once, and a path that would still name more than `PATH_LIMIT` entries lists
each step once, in the order steps first ran; how many times each step ran is in
``stats.step_counts`` (``stats.count(name)``).

This module imports nothing from fairalloc: it is the bottom of the layer table
(``docs/architecture.md``).
"""

from __future__ import annotations

import enum
from collections import Counter

__all__ = ["LIMITED", "PATH_LIMIT", "SolveLog", "SolveStatus", "count_step"]

#: Most entries a compressed ``stats.path`` lists before repeated steps are merged across the
#: whole path (a readability knob, not a tolerance)
PATH_LIMIT = 8
#: marks a repeated hand-over's count in ``fallbacks`` (``"... (×3)"``)
_TIMES = "×"


class SolveStatus(enum.StrEnum):
    """The status of a solve: of one backend call, of a result, or inside a SolverError.

    ``OPTIMAL``: converged (a backend's claim) / certified optimal (a result: its certificate
    passed). ``INACCURATE``: a backend stopped close to, but not within, its tolerances (a
    point is in hand). ``TIME_LIMIT`` / ``ITERATION_LIMIT``: a time or work limit stopped it
    (a point may be in hand; a result with this status is certified feasible, its gap not
    proven). ``SUBOPTIMAL``: a certified-feasible point whose gap target was missed for another
    reason (a MIP gap limit). ``REPLAYED``: a simulation checked by an independent replay
    (elastic fair queuing). ``INFEASIBLE`` / ``UNBOUNDED``: proven. ``CERTIFICATE_FAILED``: a
    point came back but its independent certificate missed the tolerance. ``ERROR``: anything
    else (no point; a solver or linear-algebra exception).

    Parameters
    ----------
    value : str
        The status string (``SolveStatus("optimal")``); `SolveStatus.of` maps any other
        string to ``ERROR`` instead of raising.
    names, module, qualname, type, start, boundary
        `enum.Enum`'s functional API (creating a new enumeration); not used by fairalloc.

    Examples
    --------
    >>> SolveStatus.OPTIMAL == "optimal", SolveStatus("time_limit").name
    (True, 'TIME_LIMIT')
    """

    OPTIMAL = "optimal"
    INACCURATE = "inaccurate"
    TIME_LIMIT = "time_limit"
    ITERATION_LIMIT = "iteration_limit"
    SUBOPTIMAL = "suboptimal"
    REPLAYED = "replayed"
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    CERTIFICATE_FAILED = "certificate_failed"
    ERROR = "error"

    @classmethod
    def of(cls, value: object) -> SolveStatus:
        """``value`` as a status: a member, its string, or ``ERROR`` for anything else
        (a backend's own string belongs in ``raw_status``)."""
        if isinstance(value, cls):
            return value
        try:
            return cls(str(value))
        except ValueError:
            return cls.ERROR


#: The statuses of a solve stopped by a limit: its time limit, or a work limit (iterations,
#: branch-and-bound nodes; deterministic, unlike a time limit).
LIMITED: tuple[SolveStatus, ...] = (SolveStatus.TIME_LIMIT, SolveStatus.ITERATION_LIMIT)


def count_step(counts: tuple[tuple[str, int], ...], name: str) -> int:
    """How many times step ``name`` ran, from ``step_counts`` pairs.

    Parameters
    ----------
    counts : tuple of (str, int)
        ``(step, times)`` pairs, as in `fairalloc.SolveStats.step_counts`.
    name : str
        The step.

    Returns
    -------
    int
        The sum of its counts (0 when it never ran).

    Examples
    --------
    >>> count_step((("structured-level", 1), ("exact-lp", 3)), "exact-lp")
    3
    """
    return sum(c for step, c in counts if step == name)


class SolveLog:
    """What one public call ran, recorded by every strategy and driver of the call.

    Examples
    --------
    >>> log = SolveLog()
    >>> log.step("structured-level"); log.hand_over("structured-level", "exact-lp", "no price")
    >>> log.step("exact-lp"); log.step("exact-lp"); log.solved("highs", "Optimal", 12)
    >>> log.path, log.fallbacks, log.backend, log.solves, log.iterations
    (('structured-level', 'exact-lp'), ('structured-level->exact-lp: no price',), 'highs', 1, 12)
    >>> log.step_counts
    (('structured-level', 1), ('exact-lp', 2))
    """

    __slots__ = ("_events", "_handovers", "_records", "iterations", "limit", "raw_status")

    def __init__(self) -> None:
        self._events: list[str] = []
        self._handovers: list[str] = []
        #: one ``(backend, raw status, counted)`` per backend solve (`solved`)
        self._records: list[tuple[str, str, bool]] = []
        #: the last backend solve's own status string
        self.raw_status = ""
        self.iterations = 0
        #: the limit that stopped a backend solve (``TIME_LIMIT`` if any time limit did, else
        #: ``ITERATION_LIMIT``: a work limit), None when none did
        self.limit: SolveStatus | None = None

    @property
    def hit_limit(self) -> bool:
        """Whether a backend solve stopped at a time or work limit (`limit`)."""
        return self.limit is not None

    def stopped(self, status: SolveStatus) -> None:
        """Record that a solve stopped at ``status`` (one of `LIMITED`; a time limit is
        kept over a work limit: the result then depends on the machine)."""
        if self.limit is not SolveStatus.TIME_LIMIT:
            self.limit = status

    # --- the three ways to write ---------------------------------------------------------
    def step(self, name: str) -> None:
        """Record that the named step ran (``stats.path``)."""
        self._events.append(name)

    def hand_over(self, source: str, target: str, reason: str) -> None:
        """Record a hand-over from step ``source`` to ``target`` and why
        (``stats.fallbacks``, as ``"source->target: reason"``)."""
        self._handovers.append(f"{source}->{target}: {reason}")

    def solved(self, backend: str, raw_status: str | None = "", iterations: int = 0, *,
               status: SolveStatus | None = None, count: bool = True) -> None:
        """Record one backend solve (``count=False``: a solve counted by the caller, only its
        backend and status are noted; ``raw_status=None``: leave the last status as it is)."""
        if raw_status is not None:
            self.raw_status = str(raw_status)
        self._records.append((backend, self.raw_status, bool(count)))
        self.iterations += int(iterations)
        if status in LIMITED:
            self.stopped(status)

    def replay(self, path: tuple[str, ...], fallbacks: tuple[str, ...]) -> None:
        """Append a finished sub-call's ``stats.path`` and ``stats.fallbacks``."""
        self._events.extend(path)
        self._handovers.extend(fallbacks)

    def absorb(self, other: SolveLog) -> None:
        """Append everything ``other`` recorded (a sub-solve's or a worker's log)."""
        self._events.extend(other._events)
        self._handovers.extend(other._handovers)
        self._records.extend(other._records)
        if other._records:
            self.raw_status = other.raw_status
        self.iterations += other.iterations
        if other.limit is not None:
            self.stopped(other.limit)

    def mark(self) -> tuple[int, int, int]:
        """A position in the log (see `since`, `cut`)."""
        return len(self._events), len(self._handovers), len(self._records)

    def cut(self, mark: tuple[int, int, int]) -> SolveLog:
        """Remove what was recorded after ``mark`` and return it as a log of its own."""
        sub = SolveLog()
        sub._events = self._events[mark[0]:]
        sub._handovers = self._handovers[mark[1]:]
        sub._records = self._records[mark[2]:]
        if sub._records:
            sub.raw_status = sub._records[-1][1]
        del self._events[mark[0]:], self._handovers[mark[1]:], self._records[mark[2]:]
        return sub

    # --- reading --------------------------------------------------------------------------
    @property
    def steps(self) -> tuple[str, ...]:
        """Every step in the order it ran (uncompressed)."""
        return tuple(self._events)

    @property
    def path(self) -> tuple[str, ...]:
        """The steps, compressed (module docstring)."""
        return compress(self._events)

    @property
    def step_counts(self) -> tuple[tuple[str, int], ...]:
        """``(step, times it ran)`` for each step, in the order steps first ran."""
        return tuple(Counter(self._events).items())

    @property
    def fallbacks(self) -> tuple[str, ...]:
        """Every distinct hand-over, in the order it first happened (a repeat is counted:
        ``"... (×3)"``)."""
        seen = Counter(self._handovers)
        out = []
        for text in dict.fromkeys(self._handovers):
            out.append(text if seen[text] == 1 else f"{text} ({_TIMES}{seen[text]})")
        return tuple(out)

    @property
    def hand_overs(self) -> tuple[str, ...]:
        """Every hand-over in the order it happened (uncompressed)."""
        return tuple(self._handovers)

    @property
    def backends(self) -> list[str]:
        """The backends that ran, in the order they first ran."""
        return list(dict.fromkeys(b for b, _, _ in self._records if b))

    @property
    def solves(self) -> int:
        """How many backend solves were recorded (and counted)."""
        return sum(1 for _, _, counted in self._records if counted)

    @property
    def backend(self) -> str:
        """The backends that ran, joined by ``+`` (``"none"`` when none did)."""
        names = self.backends
        return "+".join(names) if names else "none"

    def since(self, mark: tuple[int, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``(steps, fallbacks)`` recorded after ``mark`` (steps uncompressed)."""
        sub = SolveLog()
        sub._handovers = self._handovers[mark[1]:]
        return tuple(self._events[mark[0]:]), sub.fallbacks

    def __repr__(self) -> str:
        return (f"SolveLog(path={self.path!r}, fallbacks={len(self._handovers)}, "
                f"solves={self.solves}, backend={self.backend!r})")


def compress(events: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Consecutive repeats written once; beyond `PATH_LIMIT` entries, each step once, in
    first-run order.

    Examples
    --------
    >>> compress(["a", "b", "b", "a"])
    ('a', 'b', 'a')
    >>> compress(["l", "b"] * 5)
    ('l', 'b')
    """
    runs = [name for i, name in enumerate(events) if i == 0 or events[i - 1] != name]
    if len(runs) > PATH_LIMIT:
        runs = list(dict.fromkeys(events))
    return tuple(runs)
