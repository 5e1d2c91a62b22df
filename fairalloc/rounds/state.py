"""State that `fairalloc.RoundPolicy` carries from one round to the next.

* **Reuse of an identical round**: `same_key` compares two rounds' fingerprints;
  `warm_seed` is the previous round's prices and level that seed max-min fairness.
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

import itertools
import operator
from collections.abc import Hashable
from typing import Any

import numpy as np

from ..errors import InputError

__all__ = ["ISOLATED_STARTS", "WARM_MAX_JOBS", "IsolatedTime", "gavel_isolated_split",
           "isolated_throughput", "same_key", "warm_seed"]

#: where a job seen for the first time starts its isolated time ("gavel": at 0, with Gavel's
#: isolated split (`gavel_isolated_split`) and the jobs that left kept, as Gavel's own state)
ISOLATED_STARTS = ("elapsed", "zero", "gavel")

#: the round policies whose rounds read finish-time fairness, so carry isolated time
_FTF_POLICIES = ("finish_time_fairness", "themis")

#: PERFORMANCE: max-min fairness is seeded by the previous round up to this many jobs
#: (above, a cold solve with its sampled Newton phase was faster: see
#: formulations/gavel_policies.md)
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
        """``(ids, steps, isolated times, isolated throughputs, start)`` of this round, in job
        order: the caller's ``isolated_elapsed`` when given, else the state advanced by the
        steps done since the previous round. Nothing is stored until `commit`."""
        steps = np.asarray(per_job["steps_remaining"], dtype=float)
        given = per_job.get("isolated_elapsed")
        sf = per_job.get("scale_factor")
        iso_tp = (gavel_isolated_split(T, cap, sf) if start == "gavel"
                  else isolated_throughput(T, cap, sf))
        if given is not None:
            return ids, steps, np.asarray(given, dtype=float), iso_tp, start
        n = len(ids)
        elapsed = per_job.get("elapsed")
        first = np.zeros(n) if (start != "elapsed" or elapsed is None) else np.asarray(
            elapsed, dtype=float)
        same = self._same(ids)
        if same and self._dict is None:
            cum = self._cum
        else:  # (read by job id; nothing to read from an empty state)
            known = self.seconds if (self._dict is not None or self._ids or self._gone) else {}
            cum = (np.fromiter(map(known.get, ids, itertools.repeat(np.nan)), dtype=float,
                               count=n) if known else np.full(n, np.nan))
            cum = np.where(np.isnan(cum), first, cum)
        if self._steps is None or not self._ids:
            return ids, steps, np.maximum(cum, 0.0), iso_tp, start
        if same:
            before, rate = self._steps, self._rate
        else:
            pos = {j: i for i, j in enumerate(self._ids)}
            at = np.fromiter(map(pos.get, ids, itertools.repeat(-1)), dtype=np.intp, count=n)
            seen = at >= 0
            before = np.where(seen, self._steps[at], np.nan)
            rate = np.where(seen, self._rate[at], 0.0)
        ok = np.isfinite(before) & (rate > 0)
        with np.errstate(invalid="ignore", over="ignore"):
            done = np.where(ok, (before - steps) / np.where(ok, rate, 1.0), 0.0)
            return ids, steps, np.maximum(cum + done, 0.0), iso_tp, start

    def commit(self, pending: tuple[Any, ...]) -> None:
        """Record a solved round (`prepare`'s value): the isolated times it used, its steps and
        isolated throughputs; jobs not in this round are forgotten (``start="gavel"``: kept in
        ``seconds``, as Gavel keeps them)."""
        ids, steps, used, iso_tp, start = pending
        if start != "gavel":
            self._gone = {}
        elif not (self._same(ids) and self._dict is None) and (
                self._dict is not None or self._ids or self._gone):
            now = set(ids)
            self._gone = {j: v for j, v in self.seconds.items() if j not in now}
        self._ids, self._steps, self._cum, self._rate = tuple(ids), steps, used, iso_tp
        self._dict = None

    def forget_round(self) -> None:
        """An empty round: the next round adds no steps (Gavel clears its previous round)."""
        self._steps = None

    def __repr__(self) -> str:
        return f"IsolatedTime({self.seconds!r})"
