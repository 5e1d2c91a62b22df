"""The Shockwave artifact's AlloX, Gandiva-fair and OSSP, as its code runs them
(``scheduler/policies/allox.py``, ``gandiva_fair_proportional.py`` and
``min_total_duration.py`` in uw-mad-dash/shockwave), for reproducing the artifact's rows. All
three realise their allocation with upstream's round loop
(`fairalloc.sim.policies.upstream_rounds.UpstreamRounds`); `fairalloc.sim.OSSPUpstreamPolicy`
is described in its docstring.

`fairalloc.sim.GandivaFairUpstreamPolicy` is not stride scheduling
(`fairalloc.sim.GandivaFairPolicy`): upstream's ``GandivProportionalPolicy`` gives every
active job the same share ``min(1, workers / m)`` of each type, whatever its gang size
(gandiva_fair_proportional.py:26-41), so a gang asks for ``scale_factor`` times a 1-GPU job's
workers and the round loop serves jobs in order of share over time received.

`fairalloc.sim.AlloXUpstreamPolicy` differs from `fairalloc.sim.AlloXPolicy` (which re-matches
every job every round and packs whole gangs) in what upstream's code does:

* only the longest-waiting ``max(int(alpha * m), free workers)`` candidates are matched,
  with ``alpha = 0.2`` for upstream's policy named "allox" (utils.py:606-611,
  allox.py:102-105);
* a job whose previous allocation sums to exactly 1 keeps it and its worker (allox.py:47-59,
  67-76): a placed 1-GPU job is never preempted;
* every other job, including a gang already placed, is matched again, and a job that is not
  matched keeps the allocation it had (allox.py:172-174): a gang once placed keeps its share;
* each free worker is one column per position ``p = 1 .. m`` with cost
  ``p * remaining_steps / throughput`` (allox.py:110-128; the time-since-arrival term of
  allox.py:130-141 is the same in every column of a row and cannot change the matching);
* the first job of each worker gets ``1 / scale_factor`` of its type (allox.py:175-180): a
  gang is a time share of one worker, not a whole gang every round;
* the allocation is realised by upstream's round loop
  (`fairalloc.sim.policies.upstream_rounds.UpstreamRounds`): recomputed at most every
  ``min_interval`` seconds after an arrival, a completion or a batch-size change, jobs that
  arrived since then wait for the next recomputation.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._validation import as_positive_float
from ...data import Cluster
from ...errors import InputError, SolverError
from ..state import RoundState, Schedule
from ..workload import Workload
from .base import BasePolicy
from .upstream_rounds import UPSTREAM_MIN_INTERVAL, UpstreamRounds, as_min_interval

__all__ = ["AlloXUpstreamPolicy", "GandivaFairUpstreamPolicy", "OSSPUpstreamPolicy"]

#: ACCURACY: upstream's bisection of OSSP's horizon T (min_total_duration.py:104-130)
#: starts on [100, 1e6] seconds, stops when the bracket is within 5 %, and widens tenfold
#: while nothing is feasible; these are its numbers (part of what is reproduced)
OSSP_T_RANGE = (100.0, 1e6)
OSSP_BRACKET = 1.05
OSSP_WIDEN = 10.0
#: ACCURACY: a horizon this long is infeasible for any job with positive throughput: the
#: bisection stops there (upstream would widen forever) and raises `fairalloc.SolverError`
OSSP_MAX_T = 1e15
#: ACCURACY: upstream's alpha of the policy named "allox" (utils.py:607-609)
UPSTREAM_ALLOX_ALPHA = 0.2
#: ACCURACY: cost of a (job, worker) pair the job cannot use (upstream: throughput 1e-10)
FORBIDDEN_COST = 1e18


class AlloXUpstreamPolicy(BasePolicy):
    """The Shockwave artifact's AlloX (``allox.py``): matching of the jobs that are not
    already running whole on one worker, as fractional time shares.

    See the module docstring for each difference to `fairalloc.sim.AlloXPolicy`, with
    upstream's file and lines. Jobs are candidates in order of time since arrival (longest
    first); with ``alpha < 1`` only the first ``max(int(alpha * m), free workers)`` take part.

    Parameters
    ----------
    alpha : float, default 0.2
        Upstream's ``alpha`` in ``(0, 1]``: the share of the candidates (longest waiting
        first) that take part, at least as many as there are free workers (upstream's
        ``get_policy("allox")`` sets 0.2, utils.py:606-611).
    min_interval : float, default 1000.0
        Seconds between two recomputations of the allocation (upstream's scheduler: 1000).

    Examples
    --------
    One GPU; job 0 (10 rounds) starts alone, job 1 (2 rounds) arrives later. Upstream's
    variant keeps the placed 1-GPU job 0 on its GPU until it finishes, where
    `fairalloc.sim.AlloXPolicy` would switch to the shorter job 1:

    >>> import fairalloc as fa
    >>> from fairalloc.sim import Workload, simulate
    >>> w = Workload.from_arrays([0.0, 100.0], [[1.0], [1.0]], [1000.0, 200.0])
    >>> r = simulate(w, fa.Cluster({"gpu": 1}), AlloXUpstreamPolicy(), round_duration=100.0)
    >>> r.finish.round().tolist()
    [1000.0, 1200.0]
    >>> simulate(w, fa.Cluster({"gpu": 1}), "allox", round_duration=100.0).finish.round().tolist()
    [1200.0, 300.0]
    """

    name = "allox_upstream"

    def __init__(self, *, alpha: float = UPSTREAM_ALLOX_ALPHA,
                 min_interval: float = UPSTREAM_MIN_INTERVAL) -> None:
        a = as_positive_float(alpha, "alpha")
        if a > 1.0:
            raise InputError(f"alpha must be in (0, 1], got {alpha!r}", argument="alpha")
        gap = as_min_interval(min_interval)
        super().__init__({"alpha": a, "min_interval": gap})
        self.alpha, self.min_interval = a, gap
        self._alloc = np.zeros((0, 0))
        self._rounds = UpstreamRounds(gap)

    def reset(self, workload: Workload, cluster: Cluster, *, round_duration: float,
              seed: int) -> None:
        super().reset(workload, cluster, round_duration=round_duration, seed=seed)
        # per workload row and type: the allocation of the last recomputation (0: none)
        self._alloc = np.zeros((workload.n, workload.num_types))
        self._rounds.reset(workload.n)

    @property
    def recomputes(self) -> int:
        """Recomputations of the allocation in the current simulation."""
        return self._rounds.recomputes

    def allocate(self, state: RoundState) -> Schedule:
        v = state.jobs
        if not self._rounds.due(state):
            return self._rounds.realise(state)
        self._recompute(v, state.cluster.cluster)
        return self._rounds.realise(state, self._alloc[v.index])

    def _recompute(self, v: Any, cluster: Cluster) -> None:
        from scipy.optimize import linear_sum_assignment

        rows = np.asarray(v.index, dtype=np.int64)
        prev = self._alloc[rows]  # (n, k); zeros for jobs that arrived since
        cap = cluster.capacity.astype(np.int64)
        # allox.py:47-59, 67-76: a job whose allocation sums to 1 keeps it and its worker
        kept = prev.sum(axis=1) == 1.0
        free = np.maximum(cap - (prev[kept] == 1.0).sum(axis=0), 0)
        worker_type = np.repeat(np.arange(cap.size), free)
        n_workers = worker_type.size
        cand = np.flatnonzero(~kept)
        # allox.py:102-105: longest in the system first, then the alpha cut
        cand = cand[np.lexsort((rows[cand], -v.elapsed[cand]))]
        cand = cand[:max(int(self.alpha * cand.size), n_workers)]
        alloc = prev.copy()  # allox.py:172-174: unmatched jobs keep what they had
        m = cand.size
        if m and n_workers:
            usable = v.runnable & (v.scale_factor[:, None] <= cluster.capacity[None, :])
            q = np.where(usable, v.remaining_seconds, np.inf)[cand][:, worker_type]  # (m, W)
            q = np.where(np.isfinite(q), q, FORBIDDEN_COST)
            # allox.py:124-128: column block p (positions 1..m) is p * q; a worker needs
            # at most ceil(m / workers of its type) positions (identical workers of a type
            # share the jobs evenly in a minimum-cost matching)
            per_type = np.bincount(worker_type, minlength=cap.size)
            depth = np.ceil(m / np.maximum(per_type[worker_type], 1)).astype(np.int64)
            pos = np.arange(1, int(depth.max()) + 1)
            col_pos = np.repeat(pos, n_workers)
            col_worker = np.tile(np.arange(n_workers), pos.size)
            keep_col = col_pos <= depth[col_worker]
            col_pos, col_worker = col_pos[keep_col], col_worker[keep_col]
            cost = np.minimum(col_pos[None, :] * q[:, col_worker], FORBIDDEN_COST)
            r_idx, c_idx = linear_sum_assignment(cost)
            ok = cost[r_idx, c_idx] < FORBIDDEN_COST
            r_idx, c_idx = r_idx[ok], c_idx[ok]
            # allox.py:156-161, 175-180: the job of the highest position on each worker
            # runs first and gets 1 / scale_factor of the worker's type
            order = np.lexsort((-col_pos[c_idx], col_worker[c_idx]))
            workers, first = np.unique(col_worker[c_idx][order], return_index=True)
            jobs = cand[r_idx[order][first]]
            alloc[jobs, worker_type[workers]] = 1.0 / v.scale_factor[jobs]
        self._alloc[rows] = alloc


class GandivaFairUpstreamPolicy(BasePolicy):
    """The Shockwave artifact's "gandiva_fair" (``GandivProportionalPolicy``): every active job
    gets ``min(1, c_j / m)`` of each type ``j`` (``m`` active jobs; the row scaled down to
    sum to at most 1), whatever its gang, through upstream's round loop.

    Parameters
    ----------
    min_interval : float, default 1000.0
        Seconds between two recomputations of the allocation (upstream's scheduler: 1000).

    Examples
    --------
    Two GPUs, a 2-GPU job and a 1-GPU job: each gets a share of 1 (stride scheduling would
    weigh them by gang), more than the two GPUs hold at once, so the round loop runs them
    one after the other:

    >>> import fairalloc as fa
    >>> from fairalloc.sim import Workload, simulate
    >>> w = Workload.from_arrays([0.0, 0.0], [[1.0], [1.0]], [200.0, 100.0],
    ...                          scale_factor=[2, 1])
    >>> r = simulate(w, fa.Cluster({"gpu": 2}), GandivaFairUpstreamPolicy(),
    ...              round_duration=100.0)
    >>> r.finish.round().tolist()
    [300.0, 200.0]
    """

    name = "gandiva_fair_upstream"

    def __init__(self, *, min_interval: float = UPSTREAM_MIN_INTERVAL) -> None:
        gap = as_min_interval(min_interval)
        super().__init__({"min_interval": gap})
        self.min_interval = gap
        self._rounds = UpstreamRounds(gap)

    def reset(self, workload: Workload, cluster: Cluster, *, round_duration: float,
              seed: int) -> None:
        super().reset(workload, cluster, round_duration=round_duration, seed=seed)
        self._rounds.reset(workload.n)

    def allocate(self, state: RoundState) -> Schedule:
        if not self._rounds.due(state):
            return self._rounds.realise(state)
        n = state.jobs.n
        cap = state.cluster.cluster.capacity.astype(float)
        x = np.broadcast_to(cap[None, :] / max(n, 1), (n, cap.size))
        x = x / np.maximum(x.sum(axis=1), 1.0)[:, None]
        return self._rounds.realise(state, x)


class OSSPUpstreamPolicy(BasePolicy):
    """The Shockwave artifact's OSSP (``MinTotalDurationPolicyWithPerf``): a bisection on the
    horizon ``T`` of a feasibility program, through upstream's round loop.

    Each recomputation bisects ``T`` on ``[100, 1e6]`` s (widened tenfold while nothing is
    feasible) until the bracket is within 5 % (min_total_duration.py:104-130); at each ``T``
    it solves ``max 1`` subject to Gavel's constraints (``0 <= x <= 1``, rows at most 1,
    ``sum_i scale_factor_i x_ij <= c_j``) and ``throughput_i . x_i >= steps_i / T``
    (min_total_duration.py:55-71), and keeps the last feasible point the solver returned. The
    point is whatever the interior-point solver stops at, not a vertex: upstream used ECOS;
    the default here is Clarabel (``solver="ECOS"`` where ecos is installed). fairalloc's OSSP
    (``"min_makespan"``) solves the exact makespan program instead.

    Parameters
    ----------
    solver : str, default "CLARABEL"
        The cvxpy solver of the feasibility programs.
    min_interval : float, default 1000.0
        Seconds between two recomputations (upstream's scheduler: 1000).

    Examples
    --------
    Two 1-GPU jobs of 100 and 300 s on one GPU: the shortest horizon is 400 s, and the
    bisection's point shares the GPU so that both can end by then:

    >>> import fairalloc as fa
    >>> from fairalloc.sim import Workload, simulate
    >>> w = Workload.from_arrays([0.0, 0.0], [[1.0], [1.0]], [100.0, 300.0])
    >>> r = simulate(w, fa.Cluster({"gpu": 1}), OSSPUpstreamPolicy(), round_duration=100.0)
    >>> float(r.finish.max().round())
    400.0
    """

    name = "ossp_upstream"

    def __init__(self, *, solver: str = "CLARABEL",
                 min_interval: float = UPSTREAM_MIN_INTERVAL) -> None:
        if not isinstance(solver, str) or not solver:
            raise InputError(f"solver must be a cvxpy solver name, got {solver!r}",
                             argument="solver")
        gap = as_min_interval(min_interval)
        super().__init__({"solver": solver, "min_interval": gap})
        self.solver, self.min_interval = solver, gap
        self._rounds = UpstreamRounds(gap)
        self.solves = 0

    def reset(self, workload: Workload, cluster: Cluster, *, round_duration: float,
              seed: int) -> None:
        super().reset(workload, cluster, round_duration=round_duration, seed=seed)
        self._rounds.reset(workload.n)
        self.solves = 0

    def allocate(self, state: RoundState) -> Schedule:
        if not self._rounds.due(state):
            return self._rounds.realise(state)
        v = state.jobs
        jobs = v.to_jobs()
        tp = np.where(v.runnable, np.asarray(jobs.throughput, dtype=float), 0.0)
        steps = np.asarray(jobs.steps_remaining, dtype=float)
        cap = state.cluster.cluster.capacity.astype(float)
        lo, hi = OSSP_T_RANGE
        top, x = hi, None
        while x is None:
            while OSSP_BRACKET * lo < hi:
                t = (lo + hi) / 2.0
                point = self._feasible(tp, steps, v.scale_factor.astype(float), cap, t)
                if point is not None:
                    x, hi = point, t
                else:
                    lo = t
            if x is None and top >= OSSP_MAX_T:
                raise SolverError(f"OSSP: no horizon up to {top:g} s is feasible for the "
                                  f"{v.n} active jobs", backend=self.solver)
            lo, hi, top = top, top * OSSP_WIDEN, top * OSSP_WIDEN
        return self._rounds.realise(state, np.clip(x, 0.0, 1.0))

    def _feasible(self, tp: np.ndarray, steps: np.ndarray, sf: np.ndarray, cap: np.ndarray,
                  horizon: float) -> np.ndarray | None:
        """The solver's point of upstream's feasibility program at ``horizon``, or ``None``
        when its status is not ``"optimal"`` (upstream's test)."""
        import cvxpy as cp

        x = cp.Variable(tp.shape)
        cons = [x >= 0, x <= 1, cp.sum(x, axis=1) <= 1,
                cp.sum(cp.multiply(sf[:, None], x), axis=0) <= cap,
                cp.sum(cp.multiply(tp, x), axis=1) >= steps / horizon]
        prob = cp.Problem(cp.Maximize(1), cons)
        try:
            prob.solve(solver=self.solver)
        except cp.error.SolverError as exc:
            raise SolverError(f"OSSP feasibility program at T = {horizon:g} s: {exc}",
                              backend=self.solver) from exc
        self.solves += 1
        return np.asarray(x.value) if prob.status == "optimal" and x.value is not None else None
