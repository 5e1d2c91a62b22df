"""State that `fairalloc.RoundPolicy` carries from one round to the next.

* **Reuse of an identical round**: `same_key` compares two rounds' fingerprints;
  `warm_seed` is the previous round's prices and level that seed max-min fairness;
  `RoundBases` carries each stage LP's final simplex basis to the next round.
* **Finish-time fairness (and the Themis round, whose bids are finish-time fairness): each
  job's isolated time** (Gavel's
  ``FinishTimeFairnessPolicyWithPerf._cumulative_isolated_time``, Themis' ``T_id`` so far): the
  time the job would have needed, running alone on ``1/n`` of the cluster, for the steps it
  has done in the rounds the policy saw. Between two rounds a job's steps done (the previous
  round's ``steps_remaining`` minus this round's) over its *previous* round's isolated
  throughput are added, so a job whose throughputs change is charged each round at the rate of
  that round. The isolated throughput is the one of the round's reduced program
  (`fairalloc.throughput.policy.isolated_split` over the runnable jobs on the present types:
  ``c_j / max(n s_m, sum c)``, Gavel's ``IsolatedPolicy`` when every job can run). A job seen
  for the first time starts at its ``elapsed`` (``isolated_start="elapsed"``, fairalloc's
  default when no history is known: ``0`` for a job that has just arrived) or at ``0``
  (``isolated_start="zero"``, Gavel's rule); a job that leaves is forgotten when it leaves; an
  empty round forgets the previous round's steps (as Gavel does), so the next round adds
  nothing. ``isolated_start="gavel"`` is Gavel's own state exactly (the Gavel adapter's
  finish-time fairness): start at 0, Gavel's isolated split (`gavel_isolated_split`: every job
  and type counted), and the jobs that left kept. A caller that passes ``isolated_elapsed=``
  overrides the state for that round, and the state continues from the values given.

Examples
--------
Two jobs alone on one 2-worker type (isolated split: one worker each, throughputs 2 and 4)
do 40 steps each between two rounds:

>>> import numpy as np
>>> s = IsolatedTime()
>>> T, cap = np.array([[2.0], [4.0]]), np.array([2])
>>> pending = s.prepare(("a", "b"), T, cap, {"steps_remaining": [100.0, 80.0]}, "zero")
>>> s.commit(pending)
>>> s.seconds
{'a': 0.0, 'b': 0.0}
>>> s.commit(s.prepare(("a", "b"), T, cap, {"steps_remaining": [60.0, 40.0]}, "zero"))
>>> s.seconds                                                   # 40 / 2, 40 / 4
{'a': 20.0, 'b': 10.0}
"""

from __future__ import annotations

import contextlib
import itertools
import operator
from collections.abc import Callable, Hashable, Iterator
from typing import Any

import numpy as np

from ..errors import InputError
from .keys import same_keys

__all__ = ["ISOLATED_STARTS", "ROUND_BASIS_MIN_PIVOTS", "WARM_MAX_JOBS", "IsolatedTime",
           "RoundBases", "gavel_isolated_split", "isolated_throughput", "same_key", "warm_seed"]

#: where a job seen for the first time starts its isolated time ("gavel": at 0, with Gavel's
#: isolated split (`gavel_isolated_split`) and the jobs that left kept, as Gavel's own state)
ISOLATED_STARTS = ("elapsed", "zero", "gavel")

#: the round policies whose rounds read finish-time fairness, so carry isolated time
_FTF_POLICIES = ("finish_time_fairness", "themis")

#: PERFORMANCE: max-min fairness is seeded by the previous round, and the stage LPs start from
#: its bases (`RoundBases`), up to this many jobs (above, a cold solve with its sampled Newton
#: phase was faster: see formulations/gavel_policies.md)
WARM_MAX_JOBS = 2048


def warm_seed(policy: str, prev: Any, tnames: tuple[str, ...], cap: np.ndarray, n: int
              ) -> tuple[np.ndarray, float] | None:
    """The warm start of a max-min fairness (up to `WARM_MAX_JOBS` jobs) or Fisher-market
    round from the previous round's result ``prev``: its prices matched to this round's
    present types by name, and its objective. A max-min round gets none unless every present
    type had a positive price (a type without one, or priced 0, seeds nothing, and a seed
    would send a small round to the structured solver, to start it cold); the market checks
    its prices itself."""
    market = policy == "fisher_market"
    if (policy != "max_min_fairness" and not market) or prev.reduced is None or (
            not market and n > WARM_MAX_JOBS):
        return None
    last = dict(zip(prev.types, prev.prices.tolist()))
    wp = np.array([last.get(t, 0.0) for t, c in zip(tnames, cap) if c > 0])
    return (wp, prev.objective) if market or (wp.size and np.all(wp > 0)) else None


def same_key(a: Any, b: Any) -> bool:
    """Whether two rounds' keys (`fairalloc.RoundPolicy`'s reuse of an identical round) are
    equal; job ids that cannot be compared (a numpy integer against a tuple: numpy broadcasts,
    and the truth value of the array raises) are not."""
    try:
        return bool(a == b)
    except (ValueError, TypeError):
        return False


def gavel_isolated_split(T: np.ndarray, cap: np.ndarray, sf: np.ndarray | None) -> np.ndarray:
    """Each job's throughput under Gavel's isolated allocation (``IsolatedPolicy``, the
    formula of Gavel's finish-time fairness state): ``1/n`` of every type's workers for each of
    the ``n`` jobs, ``x[m, j] = c_j / max(n s_m, sum_j c_j)``, ``tp_m = sum_j T[m, j] x[m, j]``
    (every job and type counted, gangs not checked)."""
    s = np.ones(T.shape[0]) if sf is None else np.asarray(sf, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        x = cap[None, :] / np.maximum(T.shape[0] * s, cap.sum())[:, None]
        return np.asarray((T * x).sum(axis=1))


def isolated_throughput(T: np.ndarray, cap: np.ndarray, sf: np.ndarray | None) -> np.ndarray:
    """Each job's throughput under the isolated split of the round's reduced program (runnable
    jobs, present types; 0 for a job that cannot run): ``sum_j T[m, j] c_j / max(n s_m,
    sum c)`` over the types where its gang fits, ``n`` the runnable jobs."""
    n = T.shape[0]
    s = np.ones(n) if sf is None else np.asarray(sf, dtype=float)
    with np.errstate(invalid="ignore"):
        allowed = (T > 0) & (s[:, None] <= cap[None, :]) & (cap > 0)[None, :]
    runnable = int(allowed.any(axis=1).sum())
    if runnable == 0:
        return np.zeros(n)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        x = cap[None, :] / np.maximum(runnable * s, cap.sum())[:, None]
        return np.where(allowed, T * x, 0.0).sum(axis=1)


class IsolatedTime:
    """Finish-time fairness's per-job isolated time, carried across rounds (module docstring).

    ``seconds`` (``{job_id: isolated time}``, the values the last solved round used; with
    ``start="gavel"`` also the jobs that left) is public: a scheduler may seed it (jobs that
    ran before the policy was created), edit it in place or clear it. The previous round is
    kept as arrays in job order, read by position when this round's job ids are the very
    objects of the previous round in the same order (no job id is hashed); ``seconds`` is
    built when asked for.
    """

    def __init__(self) -> None:
        self._ids: tuple[Hashable, ...] = ()
        self._cum = np.zeros(0)              # seconds of the last solved round, in _ids order
        self._steps: np.ndarray | None = None  # its steps (None: an empty round forgot them)
        self._rate = np.zeros(0)             # its isolated throughputs
        self._gone: dict[Hashable, float] = {}  # start="gavel": the jobs that left
        self._dict: dict[Hashable, float] | None = None  # `seconds`, once built or given

    @property
    def seconds(self) -> dict[Hashable, float]:
        """``{job_id: seconds}`` (the class docstring); edits in place count next round."""
        if self._dict is None:
            self._dict = {**self._gone, **dict(zip(self._ids, self._cum.tolist()))}
        return self._dict

    @seconds.setter
    def seconds(self, value: dict[Hashable, float]) -> None:
        if not isinstance(value, dict):
            raise InputError(f"isolated times must be a dict job_id -> seconds, got "
                             f"{type(value).__name__}", argument="seconds")
        self._dict = value

    def _same(self, ids: tuple[Hashable, ...]) -> bool:
        """Whether ``ids`` are the previous round's job objects, in its order."""
        return len(self._ids) == len(ids) and all(map(operator.is_, self._ids, ids))

    def round(self, policy: str, ids: tuple[Hashable, ...], T: np.ndarray, cap: np.ndarray,
              per_job: dict[str, Any], start: str) -> tuple[Any, ...] | None:
        """A finish-time fairness or Themis round (its bids are finish-time fairness) with
        steps: `prepare` it and put its isolated times into ``per_job`` (returned for
        `commit`); other rounds: ``None`` (an empty round forgets the previous round's steps,
        not the isolated times)."""
        if not ids:
            self.forget_round()
            return None
        if policy in _FTF_POLICIES and per_job["steps_remaining"] is not None:
            pending = self.prepare(ids, T, cap, per_job, start)
            per_job["isolated_elapsed"] = pending[2]
            return pending
        return None

    def prepare(self, ids: tuple[Hashable, ...], T: np.ndarray, cap: np.ndarray,
                per_job: dict[str, Any], start: str) -> tuple[Any, ...]:
        """``(ids, steps, isolated times, isolated throughputs, start, matching)`` of this
        round, in job order (``matching``: how its jobs matched the previous round's, for
        `commit`, or ``None``): the caller's ``isolated_elapsed`` when given, else the state
        advanced by the steps done since the previous round. Nothing is stored until
        `commit`."""
        steps = np.asarray(per_job["steps_remaining"], dtype=float)
        given = per_job.get("isolated_elapsed")
        sf = per_job.get("scale_factor")
        iso_tp = (gavel_isolated_split(T, cap, sf) if start == "gavel"
                  else isolated_throughput(T, cap, sf))
        if given is not None:
            return ids, steps, np.asarray(given, dtype=float), iso_tp, start, None
        n = len(ids)
        elapsed = per_job.get("elapsed")
        first = np.zeros(n) if (start != "elapsed" or elapsed is None) else np.asarray(
            elapsed, dtype=float)
        same = self._same(ids)
        at = moved = None
        if same and self._dict is None:
            cum = self._cum
        elif self._dict is None and self._ids:  # (the state as the last round left it: its
            # jobs found by identity, the rest by equality, with no job id hashed twice)
            at, revived = self._positions(ids)
            cum = np.where(at >= 0, self._cum[at], np.nan)
            for i, j in revived:
                cum[i] = self._gone[j]
            cum = np.where(np.isnan(cum), first, cum)
            moved = (self._ids, at, revived)
        else:  # (read by job id; nothing to read from an empty state)
            known = self.seconds if (self._dict is not None or self._ids or self._gone) else {}
            if known and same_keys(known, ids):  # (its keys are the round's job objects, in
                # order, as when a scheduler seeds it from its own dicts: read by position)
                cum = np.fromiter(known.values(), dtype=float, count=n)
            else:
                cum = (np.fromiter(map(known.get, ids, itertools.repeat(np.nan)), dtype=float,
                                   count=n) if known else np.full(n, np.nan))
            cum = np.where(np.isnan(cum), first, cum)
        if self._steps is None or not self._ids:
            return ids, steps, np.maximum(cum, 0.0), iso_tp, start, moved
        if same:
            before, rate = self._steps, self._rate
        else:
            if at is None:
                pos = {j: i for i, j in enumerate(self._ids)}
                at = np.fromiter(map(pos.get, ids, itertools.repeat(-1)), dtype=np.intp,
                                 count=n)
            seen = at >= 0
            before = np.where(seen, self._steps[at], np.nan)
            rate = np.where(seen, self._rate[at], 0.0)
        ok = np.isfinite(before) & (rate > 0)
        with np.errstate(invalid="ignore", over="ignore"):
            done = np.where(ok, (before - steps) / np.where(ok, rate, 1.0), 0.0)
            return ids, steps, np.maximum(cum + done, 0.0), iso_tp, start, moved

    def _positions(self, ids: tuple[Hashable, ...]
                   ) -> tuple[np.ndarray, list[tuple[int, Hashable]]]:
        """Each job's position in the previous round (``-1``: not there), and ``(position,
        key)`` of the jobs found among those that left before (``start="gavel"``). A job id is
        matched by identity (no hashing: a scheduler keeps its job objects across rounds),
        then, only for the jobs not matched, by equality against the previous jobs not
        matched and the jobs that left (the ids of a round are unique, so an id equal to a
        matched job's would be that job)."""
        n, prev = len(ids), self._ids
        at = _match(np.fromiter(map(id, prev), dtype=np.int64, count=len(prev)),
                    np.fromiter(map(id, ids), dtype=np.int64, count=n))
        revived: list[tuple[int, Hashable]] = []
        miss = np.flatnonzero(at < 0).tolist()
        if miss:
            free = np.ones(len(prev), dtype=bool)
            free[at[at >= 0]] = False
            pos = {prev[i]: i for i in np.flatnonzero(free).tolist()}
            for i in miss:
                j = ids[i]
                at[i] = pos.get(j, -1)
                if at[i] < 0 and j in self._gone:
                    revived.append((i, j))
        return at, revived

    def commit(self, pending: tuple[Any, ...]) -> None:
        """Record a solved round (`prepare`'s value): the isolated times it used, its steps and
        isolated throughputs; jobs not in this round are forgotten (``start="gavel"``: kept in
        ``seconds``, as Gavel keeps them)."""
        ids, steps, used, iso_tp, start, moved = pending
        if start != "gavel":
            self._gone = {}
        elif moved is not None and moved[0] is self._ids and self._dict is None:
            # (matched in `prepare`: the previous jobs not in this round join those that left
            # before, less the ones back; dict copies keep their stored hashes)
            _, at, revived = moved
            hit = np.zeros(len(self._ids), dtype=bool)
            hit[at[at >= 0]] = True
            gone = dict(self._gone)
            for _, j in revived:
                del gone[j]
            if not hit.all():
                gone.update((j, v) for j, v, h in zip(self._ids, self._cum.tolist(),
                                                      hit.tolist()) if not h)
            self._gone = gone
        elif not (self._same(ids) and self._dict is None) and (
                self._dict is not None or self._ids or self._gone):
            known = self.seconds
            # the jobs that left: none when its keys are the round's job objects (no key
            # hashed), else found by set difference (the dict's stored hashes; each job id
            # hashed once), then kept in the dict's order
            left = () if same_keys(known, ids) else known.keys() - set(ids)
            self._gone = {j: v for j, v in known.items() if j in left} if left else {}
        self._ids, self._steps, self._cum, self._rate = tuple(ids), steps, used, iso_tp
        self._dict = None

    def forget_round(self) -> None:
        """An empty round: the next round adds no steps (Gavel clears its previous round)."""
        self._steps = None

    def __repr__(self) -> str:
        return f"IsolatedTime({self.seconds!r})"


#: row blocks of a stage LP with one row per job (or class) of the program, matched across
#: rounds by the job's label; the other blocks (capacity, ...) are matched by position
_PER_JOB_BLOCKS = ("time", "level", "kept")
#: the block names in a fixed order (a block's code in a row label)
_BLOCK_CODES = ("time", "capacity", "consolidated", "policy", "kept", "level")
#: a label's stride: a column's label is ``owner * _MIX + kind * k + type``, a per-job row's
#: ``owner * _MIX + _ROW_CODE + block code`` (int64 arithmetic, wrapping: labels are hints)
_MIX = 1 << 20
_ROW_CODE = 1 << 16
#: PERFORMANCE: when fewer than this share of a round's job ids are the previous round's very
#: objects, jobs are matched across rounds by equality (each id hashed once per round) from
#: the next round on, instead of by identity (no hashing: Gavel's ids hash in Python)
_SAME_OBJECTS = 0.5
#: PERFORMANCE: a stage LP of a round starts from the previous round's basis (`RoundBases`)
#: only where its last solve without one took at least this many simplex iterations (HiGHS'
#: count; none known yet: carried): carrying costs about as much as ~200 pivots (highspy
#: hands basis statuses over one Python object at a time, ~0.6 us per row and column, and a
#: solve from a basis skips the presolve), so it pays only where the cold solve pivots more.
#: Measured (2 cores, HiGHS 1.16, thread CPU per round, basis carried / not; cold pivots per
#: LP): Gavel's trace, max total throughput 100 / 1,000 jobs (190-250 columns, 30-35 pivots)
#: 2.65 / 2.43 and 3.87 / 3.58 ms; min makespan 100 / 200 / 300 jobs (89 / 182 / 222-311
#: pivots) 4.83 / 4.31, 6.05 / 5.78, 8.16 / 7.98 ms; random rates, max total throughput
#: 300 / 700 / 850 jobs (150 / 335 / 384 pivots) 3.55 / 3.42, 6.50 / 7.32, 7.74 / 9.29 ms;
#: shortest job first 700 jobs: its first stage LP 1 pivot cold, 266 from the carried basis
#: (4.3 against 0.8 ms), its other two 360 / 466 pivots cold, 57 / 130 carried. Finish-time
#: fairness' normal round too (benchmarks/round_bases_gate.py, method="highs", modes
#: interleaved round by round, always carried / gated; pivots per LP cold): random rates
#: 50 / 100 jobs (57 / 110) 3.10 / 2.78, 3.62 / 3.52 ms; Gavel-drawn 50 jobs (56) 3.09 / 2.86,
#: 100 jobs (162) 3.75 / 3.91 ms
ROUND_BASIS_MIN_PIVOTS = 200
#: the policies whose stage LPs are always started from the previous round's bases (no
#: `ROUND_BASIS_MIN_PIVOTS` gate): max-min fairness, whose normal round (the kept-model
#: round's fallback, `method="highs"`) gains from a basis well below the gate
#: (benchmarks/round_bases_gate.py, method="highs", always carried / cold, pivots per LP
#: cold): Gavel-drawn 100 / 300 / 1,000 jobs (76 / 100 / 152) 4.44 /
#: 4.75, 5.03 / 5.53, 6.08 / 6.80 ms; random rates 50 jobs (116) 3.75 / 4.00 ms
_ALWAYS_CARRY = ("max_min_fairness",)


class RoundBases:
    """The previous round's final simplex bases of its stage LPs, carried to this round's.

    `fairalloc.RoundPolicy` sets it (`round`: `fairalloc.throughput.stages.ROUND_BASES`) around a
    throughput policy's solve. The policy's stage solver asks `program` for the labels of its
    program's rows (a symmetry class by its data, else the job by its id); each stage LP
    then starts HiGHS' simplex from the previous round's basis of the stage of the same name,
    carried over by label (`start`): a column or row of a job (or class) seen last round keeps
    its status, a new one starts nonbasic at 0 (a column) or basic (a row's slack). A basis
    only says where the simplex starts: every answer is certified as always, and a round
    whose basis does not fit (other types, other blocks) is solved cold. `end` keeps each
    stage's final basis for the next round.

    A basis is carried only where it pays: a stage whose last solve without one took fewer
    than `ROUND_BASIS_MIN_PIVOTS` simplex iterations keeps no basis and is solved cold next
    round (its stats' path says ``exact-lp``, not ``exact-lp+warm``), except for max-min
    fairness' normal round (always carried: it pays there from a few dozen pivots). The rows
    are labelled only when a basis is kept or carried.

    Examples
    --------
    >>> import fairalloc as fa
    >>> p = fa.RoundPolicy("max_min_fairness")
    >>> r1 = p.allocate({"a": {"x": 1.0, "y": 2.0}, "b": {"x": 3.0, "y": 1.0}}, {"x": 1, "y": 1})
    >>> r2 = p.allocate({"a": {"x": 1.0, "y": 2.0}, "c": {"x": 2.0, "y": 2.0}}, {"x": 1, "y": 1})
    >>> r2.warm, r2.certificate.ok
    (True, True)
    """

    def __init__(self) -> None:
        # stage name -> (column labels, row labels, final LPBasis, present types, label mode,
        # the labelled job objects)
        self._kept: dict[tuple[Any, ...], tuple[Any, ...]] = {}  # by `_stage`
        self._ended: dict[tuple[Any, ...], tuple[Any, ...]] = {}  # this round's, for the next
        self._mode = "class"  # how rows are labelled: "class" (data), "id" (object), "hash"
        self._objs: list[Hashable] = []  # the job objects labelled by id() or hash
        self._last: tuple[np.ndarray, list[Hashable], int] | None = None  # last id() labels
        self._count = 0  # rounds begun (the round of `_last`)
        self._by_hash = False  # the scheduler passes new id objects: label by equality
        self._ids: tuple[Hashable, ...] = ()
        self._runnable: np.ndarray | tuple[Any, ...] | None = None  # (T, cap, sf) until read
        self._types: tuple[str, ...] = ()
        self._rows: np.ndarray | None = None  # labels of the program's rows (per job/class)
        self._program: tuple[Any, bool] | None = None  # (keys or their callable, reduced)
        self._started: dict[tuple[str, tuple[int, int]], Any] = {}  # this program's starts
        # `_stage` -> (pivots, rows) of its last solve without a carried basis
        self._pivots: dict[tuple[Any, ...], tuple[int, int]] = {}
        self._gated = True  # `ROUND_BASIS_MIN_PIVOTS` applies (not `_ALWAYS_CARRY`)

    def begin(self, ids: tuple[Hashable, ...], T: np.ndarray, cap: np.ndarray,
              sf: np.ndarray | None, types: tuple[str, ...], policy: str | None = None) -> None:
        """A round of jobs ``ids`` (their throughputs ``T``, gangs ``sf``) on workers ``cap``
        of ``types``: the program's jobs are the runnable ones on the present types
        (``policy``: the round's; `ROUND_BASIS_MIN_PIVOTS` applies unless it always carries)."""
        self._gated = policy not in _ALWAYS_CARRY
        self._count += 1
        present = cap > 0
        self._ids, self._runnable = ids, (T, cap, sf)  # (the runnable jobs: when labelled)
        self._kept.update(self._ended)  # (the last round's final bases, none of this round's)
        self._ended = {}
        self._types = tuple(t for t, p in zip(types, present.tolist()) if p)

    @contextlib.contextmanager
    def round(self, on: bool, ids: tuple[Hashable, ...], T: np.ndarray, cap: np.ndarray,
              sf: np.ndarray | None, types: tuple[str, ...], policy: str | None = None
              ) -> Iterator[None]:
        """The round's solve (of ``policy``), its stage LPs started from the previous round's
        bases (``on`` and at most `WARM_MAX_JOBS` jobs: `begin`, then
        `fairalloc.throughput.stages.ROUND_BASES` set while it runs)."""
        if not on or len(ids) > WARM_MAX_JOBS:
            yield
            return
        from ..throughput.stages import ROUND_BASES

        self.begin(ids, T, cap, sf, types, policy)
        token = ROUND_BASES.set(self)
        try:
            yield
        finally:
            ROUND_BASES.reset(token)

    def clear(self) -> None:
        """Forget every kept basis (`fairalloc.RoundPolicy.reset`)."""
        self._kept, self._ended = {}, {}
        self._last = None
        self._pivots = {}

    def program(self, keys: tuple[np.ndarray, ...] | Callable[[], tuple[np.ndarray, ...]],
                reduced: bool) -> RoundBases:
        """Label the rows of the program about to be solved: a class of a reduced program by
        its data ``keys`` (arrays, one row per class), else a job by its id object (the
        runnable jobs of `begin`, in order): by identity while the scheduler passes the same
        id objects round after round (no job id is hashed), by equality (each id hashed once)
        from the round after one where most were new objects; by its data when the jobs do
        not match. The labels (and ``keys``, when a callable returning them) are computed when
        first read (`_row_labels`: a round that keeps and carries no basis labels nothing).
        Returns ``self``."""
        self._started = {}
        self._rows = None
        self._program = (keys, reduced)
        return self

    def _row_labels(self) -> np.ndarray | None:
        """The labels of the rows of the program of `program` (``None``: an empty program)."""
        if self._program is None:
            return self._rows
        keys, reduced = self._program
        self._program = None
        if callable(keys):
            keys = keys()
        n = int(np.shape(keys[0])[0]) if keys else 0
        if n == 0:
            return None
        run = self._runnable = _runnable(self._runnable)
        if not reduced and run is not None and int(run.sum()) == n:
            ids = list(self._ids) if bool(run.all()) else [
                j for j, r in zip(self._ids, run.tolist()) if r]
            self._objs = ids  # (kept alive with the labels: an id() is not reused meanwhile)
            if self._by_hash:
                self._mode = "hash"
                self._rows = np.fromiter(map(hash, ids), dtype=np.int64, count=n)
                return self._rows
            rows = np.fromiter(map(id, ids), dtype=np.int64, count=n)
            last, self._last = self._last, (rows, ids, self._count)
            if (last is not None and last[2] == self._count - 1  # (labelled last round)
                    and np.isin(rows, last[0]).mean() < _SAME_OBJECTS):
                self._by_hash = True  # new id objects every round: equal ids from now on
                self._mode = "hash"
                self._rows = np.fromiter(map(hash, ids), dtype=np.int64, count=n)
                return self._rows
            self._mode, self._rows = "id", rows
            return self._rows
        data = np.column_stack([np.asarray(a, dtype=float).reshape(n, -1) for a in keys])
        self._mode, self._objs = "class", []
        self._rows = np.fromiter(map(hash, map(bytes, data)), dtype=np.int64, count=n)
        return self._rows

    def _labels(self, inst: Any, layout: Any, ncols: int) -> tuple[np.ndarray, np.ndarray]:
        """Labels of the columns and rows of a stage LP of ``inst`` with row ``layout``."""
        rows = self._row_labels()
        assert rows is not None
        owner = np.zeros(inst.E, dtype=np.int64)
        owner[inst.mem_col] = rows[inst.mem_job]  # (a pair column: one member; a hint)
        cols = np.concatenate([owner * _MIX + inst.col_kind.astype(np.int64) * inst.k
                               + inst.col_type, -1 - np.arange(ncols - inst.E)])
        parts = []
        for name, size in layout.blocks():
            code = (_BLOCK_CODES.index(name) if name in _BLOCK_CODES else len(_BLOCK_CODES))
            if name in _PER_JOB_BLOCKS and size == inst.n:
                parts.append(rows * _MIX + (_ROW_CODE + code))
            else:
                parts.append(-(code + 1) * _MIX - 1 - np.arange(size, dtype=np.int64))
        return cols, np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    @property
    def kept(self) -> bool:
        """Whether any stage's basis is kept for this round (`has` tells which)."""
        return bool(self._kept)

    @staticmethod
    def _stage(what: str, inst: Any, layout: Any) -> tuple[str, tuple[tuple[str, int], ...]]:
        """A stage LP's key across rounds: its name and row blocks, a per-job block's size
        left out (two LPs of one name, e.g. shortest job first's stages with 0 and 1 kept
        rows, keep a basis each)."""
        return what, tuple((name, -1 if name in _PER_JOB_BLOCKS and size == inst.n else size)
                           for name, size in layout.blocks())

    def has(self, what: str, inst: Any, layout: Any) -> bool:
        """Whether a basis of stage ``what`` (row ``layout``) on this round's types is kept
        (`start` may carry it; a caller asks first, before building the stage LP whose shape
        `start` reads)."""
        kept = self._kept.get(self._stage(what, inst, layout)) if self._kept else None
        return kept is not None and kept[3] == self._types

    def start(self, what: str, inst: Any, layout: Any, shape: tuple[int, int]) -> Any:
        """The previous round's basis of stage ``what`` carried to this LP (shape ``shape``):
        an `fairalloc.backends.LPBasis`, or ``None`` (no basis of that stage, other types)."""
        if (what, shape) in self._started:
            return self._started[what, shape]
        basis = self._start(what, inst, layout, shape)
        self._started[what, shape] = basis
        return basis

    def _start(self, what: str, inst: Any, layout: Any, shape: tuple[int, int]) -> Any:
        kept = self._kept.get(self._stage(what, inst, layout))
        if kept is None or kept[3] != self._types or self._row_labels() is None or (
                kept[4] != self._mode):
            return None
        cols, rows = self._labels(inst, layout, shape[1])
        if cols.size != shape[1] or rows.size != shape[0]:
            return None
        at = _match(kept[0], cols)
        if not (at[: inst.E] >= 0).any():  # no job (or class) seen last round: cold
            return None
        return kept[2].carried(at, _match(kept[1], rows))

    def end(self, what: str, inst: Any, layout: Any, basis: Any,
            iterations: int | None = None) -> None:
        """Keep stage ``what``'s final basis (an `fairalloc.backends.LPBasis`) for the next
        round (a backend that cannot carry a basis keeps none). ``iterations``: the solve's
        (a solve not started from this round's carried basis records them for stage
        ``what``, with its rows); a stage whose solve without a basis took fewer than
        `ROUND_BASIS_MIN_PIVOTS`, scaled by its rows now over its rows then (a program that
        shrank pivots less cold), keeps none (`_ALWAYS_CARRY` policies: always kept)."""
        carried = self._started.pop((what, basis.shape), None) is not None
        key = self._stage(what, inst, layout)
        if iterations is not None and not carried:
            self._pivots[key] = (int(iterations), basis.shape[0])
        pivots, rows = self._pivots.get(key, (ROUND_BASIS_MIN_PIVOTS, basis.shape[0]))
        if basis.carry is None or (self._gated and pivots * basis.shape[0]
                                   < ROUND_BASIS_MIN_PIVOTS * rows) or (
                self._row_labels() is None):
            self._ended.pop(key, None)
            self._kept.pop(key, None)  # (an older round's basis of the stage neither)
            return
        cols, rows = self._labels(inst, layout, basis.shape[1])
        self._ended[key] = (cols, rows, basis, self._types, self._mode, self._objs)


def _runnable(run: Any) -> np.ndarray | None:
    """Which jobs of a round can run (``run``: the round's ``(T, cap, sf)``, or already the
    mask): a type where the job is positive and its gang fits."""
    if not isinstance(run, tuple):
        return run  # type: ignore[no-any-return]
    T, cap, sf = run
    s = np.ones(T.shape[0]) if sf is None else np.asarray(sf, dtype=float)
    with np.errstate(invalid="ignore"):
        allowed = (T > 0) & (s[:, None] <= cap[None, :]) & (cap > 0)[None, :]
    return np.asarray(allowed.any(axis=1))


def _match(old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """For each label of ``new``, its position in ``old`` (``-1``: not there; vectorised: one
    sort, one search)."""
    if old.size == 0:
        return np.full(new.size, -1, dtype=np.intp)
    order = np.argsort(old, kind="stable")
    srt = old[order]
    pos = np.minimum(np.searchsorted(srt, new), srt.size - 1)
    return np.where(srt[pos] == new, order[pos], -1)
