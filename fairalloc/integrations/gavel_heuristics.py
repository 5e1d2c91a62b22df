"""Gavel's non-LP policies behind Gavel's interface: ``fifo``, ``gandiva``, ``allox``, ``isolated``.

These are heuristics (no program, so no certificate); they follow Gavel's
``scheduler/policies/{fifo,gandiva,allox,isolated}.py`` step by step, keep the same state across
rounds, and are deterministic: ``fifo`` and ``gandiva`` draw from ``random.Random(seed)`` (the
generator Gavel seeds; default ``seed=0``, where Gavel's default is unseeded), so the same seed
and the same inputs give the same allocations, and Gavel's draws when its inputs are the same.
``allox`` is deterministic (a min-cost matching, `allox_match`).

Examples
--------
>>> from fairalloc.integrations.gavel_heuristics import IsolatedPolicy
>>> IsolatedPolicy().get_allocation({0: {"v100": 1.0}, 1: {"v100": 1.0}}, {0: 1, 1: 1},
...                                 {"v100": 1})
{0: {'v100': 0.5}, 1: {'v100': 0.5}}
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Mapping
from typing import Any, NamedTuple

import numpy as np

from ..errors import InputError, SolverError
from .gavel_base import (
    by_job,
    check_cluster,
    check_rates,
    is_pair,
    members,
    pair_rates,
    require_mapping,
    throughput_matrix,
)

__all__ = ["AlloXMatch", "AlloXPolicy", "FIFOPolicy", "GandivaPolicy", "IsolatedPolicy",
           "allox_match"]

#: AlloX's processing-time matrix uses this rate where a job's throughput is 0 (Gavel's
#: ``1e-10``): such a pairing costs ~1e10 x its steps, so it is chosen last
#: (ACCURACY: the value Gavel uses, so assignments match Gavel's)
ALLOX_ZERO_RATE = 1e-10

#: ``allox_match(method="auto")`` solves the transportation program over (type, level)
#: slots when ``slots**2 <= this x jobs x columns``, else the assignment on the expanded
#: columns (PERFORMANCE: both give the optimum; measured on 2 CPUs, HiGHS' simplex takes
#: ~1.7e-6 s x jobs x slots**2 and scipy's assignment ~4e-10 s x jobs**2 x columns)
ALLOX_LP_WORK_RATIO = 2.5e-4

#: a transportation-program vertex is integral; entries within this of 1 are accepted as
#: an assignment (ACCURACY: HiGHS' primal feasibility tolerance is 1e-7)
ALLOX_INTEGRAL_TOL = 1e-6

#: Gandiva keeps a pair packed only while its normalised throughput (sum over types and
#: members of packed rate / isolated rate) is at least this (ACCURACY: Gavel's threshold)
GANDIVA_KEEP_PAIR = 1.0

#: the default seed of ``fifo`` and ``gandiva`` (PERFORMANCE: any fixed value makes them
#: deterministic; Gavel's default is an unseeded generator)
DEFAULT_SEED = 0


def _sorted(ids: Any) -> list[Any]:
    try:
        return sorted(ids)
    except TypeError:
        return list(ids)


def _zeros(keys: Any, cluster_spec: Mapping[str, int]) -> dict[Hashable, dict[str, float]]:
    return {k: dict.fromkeys(cluster_spec, 0.0) for k in keys}


def _split(rows: int, sf: np.ndarray, cluster_spec: Mapping[str, int]) -> np.ndarray:
    """Gavel's 1/m split: ``x[i, j] = c_j / (m s_i)``, rows scaled to sum at most 1."""
    c = check_cluster(cluster_spec)
    if rows == 0:
        return np.zeros((0, c.size))
    x = c[None, :] / (rows * sf[:, None])
    return x / np.maximum(x.sum(axis=1), 1.0)[:, None]


class IsolatedPolicy:
    """Gavel's isolated allocation (``isolated``): each job ``1/n`` of every type's workers,
    ``x[m, j] = c_j / max(n s_m, sum_j c_j)`` (fairalloc's
    `fairalloc.throughput.isolated_split`, on every listed type as Gavel
    does, including types where the job's rate is 0)."""

    def __init__(self, solver: str | None = None, seed: int | None = None) -> None:
        del solver, seed  # no draws

    @property
    def name(self) -> str:
        """Gavel's name."""
        return "Isolated"

    def get_allocation(self, unflattened_throughputs: Any, scale_factors: Any,
                       cluster_spec: Any) -> dict[Hashable, dict[str, float]]:
        """``{job_id: {worker_type: fraction}}`` for this round."""
        check_rates(unflattened_throughputs)
        jobs = list(unflattened_throughputs)
        if not jobs:
            return {}
        sf = by_job(scale_factors, "scale_factors", jobs, positive=True)
        x = _split(len(jobs), sf, cluster_spec)
        types = list(cluster_spec)
        return {j: dict(zip(types, row)) for j, row in zip(jobs, x.tolist())}


class FIFOPolicy:
    """Gavel's heterogeneity-agnostic FIFO (``fifo``; ``FIFOPolicy(mode='base')``).

    Jobs keep their worker type until they finish. Each round, a finished job's type goes to
    the head of the queue (sorted job ids) if its gang fits there; then queued jobs, in order,
    each get a type drawn uniformly (``random.Random(seed)``) among the types with room for
    their gang (the round stops at the first job with none); a job whose rate on the drawn type
    is 0 waits for the next round (as in Gavel). Returns 1.0 on the job's type, 0 elsewhere.
    """

    def __init__(self, solver: str | None = None, seed: int | None = DEFAULT_SEED) -> None:
        del solver
        self._rng = random.Random(seed)
        self._allocation: dict[Hashable, str] = {}

    @property
    def name(self) -> str:
        """Gavel's name."""
        return "FIFO"

    def get_allocation(self, throughputs: Any, scale_factors: Any, cluster_spec: Any
                       ) -> dict[Hashable, dict[str, float]]:
        """``{job_id: {worker_type: 0.0 or 1.0}}`` for this round."""
        check_rates(throughputs)
        require_mapping(scale_factors, "scale_factors")
        free = dict(zip(cluster_spec, check_cluster(cluster_spec).astype(int).tolist()))
        by_job(scale_factors, "scale_factors", [j for j in throughputs if not is_pair(j)],
               positive=True, integer=True)
        queue = [j for j in _sorted(throughputs)
                 if j not in self._allocation and not is_pair(j)]
        for job in _sorted(self._allocation):
            wtype = self._allocation[job]
            if job in throughputs:
                free[wtype] = free.get(wtype, 0) - int(scale_factors[job])
                continue
            head = queue[0] if queue else None
            if (head is not None and scale_factors[head] <= free.get(wtype, 0)
                    and float(throughputs[head].get(wtype, 0.0)) > 0.0):
                queue.pop(0)
                self._allocation[head] = wtype
                free[wtype] -= int(scale_factors[head])
            del self._allocation[job]
        open_types = sorted(t for t in free if free[t] > 0)
        while queue and open_types:
            job = queue.pop(0)
            s = int(scale_factors[job])
            fits = [t for t in open_types if free[t] >= s]
            if not fits:
                break
            wtype = fits[self._rng.randrange(len(fits))]
            if float(throughputs[job].get(wtype, 0.0)) > 0.0:
                self._allocation[job] = wtype
                free[wtype] -= s
                if free[wtype] == 0:
                    open_types.remove(wtype)
        out = _zeros(throughputs, cluster_spec)
        for job, wtype in self._allocation.items():
            out[job][wtype] = 1.0
        return out


class GandivaPolicy:
    """Gavel's Gandiva (``gandiva``): random packing of same-gang pairs when the cluster is
    oversubscribed.

    When the jobs ask for no more workers than the cluster has, every job gets the ``1/n`` split
    (pairs 0). Otherwise unpaired jobs are paired at random (``random.Random(seed)``, one try
    per unpaired job, pairs of equal scale factor whose pair key is in the input), the rest run
    alone, and every scheduled combination gets the ``1/m`` split. A pair is kept across rounds
    while both members remain and its normalised throughput is at least 1.
    """

    def __init__(self, solver: str | None = None, seed: int | None = DEFAULT_SEED) -> None:
        del solver
        self._rng = random.Random(seed)
        self._assigned: dict[Hashable, tuple[Hashable, Hashable | None]] = {}

    @property
    def name(self) -> str:
        """Gavel's name."""
        return "Gandiva_Packing"

    @staticmethod
    def _packed_gains(keys: list[Any], tp: Mapping[Hashable, Any], types: list[Any]
                      ) -> dict[Any, float]:
        """Each pair key's normalised throughput (sum over types and members of packed rate /
        isolated rate; 0 when a packed rate is 0) from the validated rates (`pair_rates`)."""
        if not keys:
            return {}
        packed = pair_rates(tp, keys, types)                          # (pairs, types, 2)
        a, b = zip(*map(members, keys))
        alone = throughput_matrix(tp, [*a, *b], types).reshape(2, len(keys), len(types))
        with np.errstate(divide="ignore", invalid="ignore"):
            gain = (packed / np.moveaxis(alone, 0, 2)).sum(axis=(1, 2))
        runs = (packed > 0.0).all(axis=(1, 2))
        return dict(zip(keys, np.where(runs, gain, 0.0).tolist()))

    def get_allocation(self, unflattened_throughputs: Any, scale_factors: Any,
                       cluster_spec: Any) -> dict[Hashable, dict[str, float]]:
        """``{key: {worker_type: fraction}}`` for single and pair keys."""
        tp = unflattened_throughputs
        check_rates(tp)
        require_mapping(scale_factors, "scale_factors")
        check_cluster(cluster_spec)
        if not tp:
            return {}
        types = list(cluster_spec)
        singles = _sorted(j for j in tp if not is_pair(j))
        by_job(scale_factors, "scale_factors", singles, positive=True, integer=True)
        pair_of = {frozenset(members(p)): p for p in tp if is_pair(p)}
        drop: set[Any] = set()
        staying = {combo: None for job, (combo, other) in self._assigned.items()
                   if other is not None and job in tp and other in tp and combo in tp}
        gains = self._packed_gains(list(staying), tp, types)  # (a single alone gains 0)
        for job, (combo, other) in self._assigned.items():
            if gains.get(combo, 0.0) < GANDIVA_KEEP_PAIR:
                drop.update((job, other))
        for job in drop:
            self._assigned.pop(job, None)
        requested = sum(int(scale_factors[j]) for j in singles)
        if requested <= sum(int(cluster_spec[t]) for t in types):
            scheduled = singles
        else:
            free = [j for j in singles if j not in self._assigned]
            for _ in range(len(free)):
                if len(free) <= 1:
                    break
                a, b = self._rng.sample(free, 2)
                key = pair_of.get(frozenset((a, b)))
                if scale_factors[a] != scale_factors[b] or key is None:
                    continue
                free.remove(a)
                free.remove(b)
                self._assigned[a] = (key, b)
                self._assigned[b] = (key, a)
            for job in free:
                self._assigned[job] = (job, None)
            scheduled = list({combo: None for combo, _ in self._assigned.values()})
        sf = np.array([float(scale_factors[members(k)[0] if is_pair(k) else k])
                       for k in scheduled])
        x = _split(len(scheduled), sf, cluster_spec)
        out = _zeros(tp, cluster_spec)
        for key, row in zip(scheduled, x.tolist()):
            out[key] = dict(zip(types, row))
        return out


class AlloXMatch(NamedTuple):
    """AlloX's min-cost matching of waiting jobs to (worker type, position level) slots.

    ``job_type[i]`` and ``level[i]`` are job ``i``'s worker type (an index) and position
    (1 = runs last on its worker); ``running`` lists, ascending, the jobs that run now (the top
    of each worker's stack); ``cost`` is the matching's total cost and ``columns`` the number of
    columns of the cost matrix that was solved (at most ``m x types + workers``).
    """

    job_type: np.ndarray
    level: np.ndarray
    running: np.ndarray
    cost: float
    columns: int


def allox_match(steps: Any, rates: Any, elapsed: Any, workers: Any,
                method: str = "auto") -> AlloXMatch:
    """AlloX's matching (Gavel's ``allox.py``) of ``m`` jobs to ``workers[t]`` identical
    workers of each type ``t``, solved exactly on a reduced cost matrix.

    Upstream puts job ``j`` at position ``k`` of worker ``w`` at cost
    ``k x steps[j] / rate[j, type(w)] + elapsed[j]`` and solves the dense ``m x (m x n)``
    assignment. Workers of one type have identical columns, and an optimal matching fills a
    type's positions level by level (moving a job to an empty lower position of the same type
    never raises its cost), so type ``t`` needs only ``ceil(m / workers[t])`` levels, each
    ``workers[t]`` identical columns (at most ``m x types + n`` in all). ``method`` picks the
    solve: ``"transport"``, the transportation program over (type, level) slots by HiGHS'
    simplex (`scipy.optimize.linprog`; its vertices are assignments), fast with few slots
    (many workers per type); ``"assignment"``, `scipy.optimize.linear_sum_assignment` on the
    expanded columns; ``"auto"`` (default) the cheaper by ``ALLOX_LP_WORK_RATIO``. Both give
    the dense matrix's optimal cost (equal-cost ties may be broken differently).

    Per-worker stacks (tie rule): at each level of a type, the jobs there are ordered by
    index (callers pass the longest-waiting first) and the ``i``-th of ``c`` takes worker
    ``c - 1 - i``; each worker runs the job at its highest level. So at a level, the
    longest-waiting jobs are the ones that run now.

    Parameters
    ----------
    steps : array_like, shape (m,)
        Steps each job has left (>= 0).
    rates : array_like, shape (m, K)
        Job throughputs on each worker type; 0 is replaced by ``ALLOX_ZERO_RATE`` (as Gavel).
    elapsed : array_like, shape (m,)
        Each job's time since start.
    workers : array_like of int, shape (K,)
        Free workers of each type.
    method : {"auto", "transport", "assignment"}, optional
        The solve (same optimum).

    Returns
    -------
    AlloXMatch

    Examples
    --------
    >>> m = allox_match([100.0, 10.0], [[1.0], [1.0]], [0.0, 0.0], [1])
    >>> m.level.tolist(), m.running.tolist(), m.cost
    ([1, 2], [1], 120.0)
    """
    from scipy.optimize import linear_sum_assignment

    if method not in ("auto", "transport", "assignment"):
        raise InputError(f"method = {method!r}: one of 'auto', 'transport', 'assignment'",
                         argument="method")
    steps = np.asarray(steps, dtype=float)
    rate = np.asarray(rates, dtype=float)
    rate = np.where(rate == 0.0, ALLOX_ZERO_RATE, rate)
    elapsed = np.asarray(elapsed, dtype=float)
    W = np.asarray(workers, dtype=np.int64)
    m = steps.shape[0]
    base = steps[:, None] / rate                                      # (m, K)
    L = np.where(W > 0, -(-m // np.maximum(W, 1)), 0)                 # levels per type
    lt = np.repeat(np.arange(W.size), L)                              # (type, level) pairs
    lv = np.arange(lt.size) - np.repeat(np.cumsum(L) - L, L) + 1
    ct, cl = np.repeat(lt, W[lt]), np.repeat(lv, W[lt])               # columns
    if method == "auto":
        method = ("transport" if lt.size ** 2 <= ALLOX_LP_WORK_RATIO * m * cl.size
                  else "assignment")
    if method == "transport":
        job_type, level, cost = _allox_transport(base, elapsed, lt, lv, W[lt])
    else:
        q = base[:, ct] * cl + elapsed[:, None]
        rows, cols = linear_sum_assignment(q)
        job_type = np.empty(m, dtype=np.int64)
        level = np.empty(m, dtype=np.int64)
        job_type[rows], level[rows] = ct[cols], cl[cols]
        cost = float(q[rows, cols].sum())
    # stacks: the i-th of the c jobs at a (type, level) (ascending index) takes worker c - 1 - i
    by = np.lexsort((np.arange(m), level, job_type))
    start = np.r_[True, (job_type[by][1:] != job_type[by][:-1])
                  | (level[by][1:] != level[by][:-1])]
    group = np.cumsum(start) - 1
    first = np.flatnonzero(start)
    count = np.diff(np.r_[first, m])
    worker = count[group] - 1 - (np.arange(m) - first[group])
    # each worker runs the job at its highest level
    top = np.lexsort((level[by], worker, job_type[by]))
    t2, w2 = job_type[by][top], worker[top]
    last = np.r_[(t2[1:] != t2[:-1]) | (w2[1:] != w2[:-1]), True]
    running = np.sort(by[top][last])
    return AlloXMatch(job_type, level, running, cost, int(cl.size))


def _allox_transport(base: np.ndarray, elapsed: np.ndarray, lt: np.ndarray, lv: np.ndarray,
                     cap: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """AlloX's matching as the transportation program: each job to one (type, level) slot of
    capacity ``cap``; its constraint matrix is totally unimodular, so HiGHS' simplex vertex is
    an assignment."""
    import scipy.sparse as sp
    from scipy.optimize import linprog

    m, S = base.shape[0], lt.size
    c = (base[:, lt] * lv + elapsed[:, None]).ravel()
    var = np.arange(m * S)
    one = np.ones(m * S)
    a_eq = sp.csr_array((one, (var // S, var)), shape=(m, m * S))
    a_ub = sp.csr_array((one, (var % S, var)), shape=(S, m * S))
    res = linprog(c, A_ub=a_ub, b_ub=cap, A_eq=a_eq, b_eq=np.ones(m), bounds=(0, None),
                  method="highs-ds")
    if res.status != 0 or res.x is None:
        raise SolverError(f"AlloX's {m} x {S} transportation program: {res.message}",
                          backend="highs")
    x = res.x.reshape(m, S)
    slot = np.argmax(x, axis=1)
    if (x[np.arange(m), slot] < 1.0 - ALLOX_INTEGRAL_TOL).any():
        raise SolverError(f"AlloX's {m} x {S} transportation program: HiGHS returned a "
                          "fractional vertex", backend="highs")
    return lt[slot], lv[slot], float(c.reshape(m, S)[np.arange(m), slot].sum())


class AlloXPolicy:
    """Gavel's AlloX (``allox``; ``alpha=1``): single-worker jobs matched to workers by a
    min-cost assignment of ``times_since_start + position x steps / rate``.

    Jobs holding a whole worker from the previous call keep it; the others (at most
    ``max(alpha x their number, free workers)``, longest-waiting first) are assigned to the
    free workers by AlloX's min-cost matching over (job, worker, position) costs, each worker
    running the job it would run first; `allox_match` solves it exactly on a reduced matrix
    (identical workers of a type share columns). Every scale factor must be 1 (as Gavel
    asserts).
    """

    def __init__(self, solver: str | None = None, alpha: float = 1.0,
                 seed: int | None = None) -> None:
        del solver, seed  # deterministic: no draws
        self.alpha = float(alpha)
        self._prev: dict[Hashable, dict[str, float]] = {}

    @property
    def name(self) -> str:
        """Gavel's name."""
        return "AlloX_Perf"

    def get_allocation(self, unflattened_throughputs: Any, scale_factors: Any,
                       times_since_start: Any, num_steps_remaining: Any, cluster_spec: Any
                       ) -> dict[Hashable, dict[str, float]]:
        """``{job_id: {worker_type: 0.0 or 1.0}}`` for this round."""
        tp = unflattened_throughputs
        require_mapping(tp, "unflattened_throughputs")
        jobs = _sorted(tp)
        if not jobs:
            return {}
        check_cluster(cluster_spec)
        types = sorted(str(t) for t in cluster_spec)  # Gavel numbers workers type by type
        sf = by_job(scale_factors, "scale_factors", jobs, positive=True)
        wide = np.flatnonzero(sf != 1)
        if wide.size:
            raise InputError(f"scale_factors[{jobs[int(wide[0])]!r}] = {sf[wide[0]]:g}: AlloX "
                             "schedules single-worker jobs only (Gavel asserts scale factor 1)",
                             argument="scale_factors", index=(int(wide[0]),))
        held = {j for j in jobs if j in self._prev
                and sum(self._prev[j].get(t, 0.0) for t in types) == 1.0}
        waiting = [j for j in tp if j not in held]
        used = {t: sum(1 for j in held if self._prev[j].get(t, 0.0) == 1.0) for t in types}
        worker_type = [t for t in types for _ in range(max(int(cluster_spec[t]) - used[t], 0))]
        n = len(worker_type)
        elapsed = by_job(times_since_start, "times_since_start", waiting, nonneg=True)
        order = np.argsort(-elapsed, kind="stable")
        keep = order[:max(int(self.alpha * len(waiting)), n)]
        waiting = [waiting[i] for i in keep]
        out = _zeros(jobs, cluster_spec)
        for j in jobs:
            if j in self._prev:
                out[j] = {t: float(self._prev[j].get(t, 0.0)) for t in cluster_spec}
        m = len(waiting)
        if m and n:
            steps = by_job(num_steps_remaining, "num_steps_remaining", waiting, nonneg=True)
            T = throughput_matrix(tp, waiting, types)
            free = np.array([worker_type.count(t) for t in types], dtype=np.int64)
            match = allox_match(steps, T, elapsed[keep], free)
            for r, t in zip(match.running.tolist(), match.job_type[match.running].tolist()):
                out[waiting[r]][types[t]] = 1.0
        self._prev = {j: dict(row) for j, row in out.items()}
        return out
