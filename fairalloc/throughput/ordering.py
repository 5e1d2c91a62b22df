"""Ordering policies: FIFO and shortest job first (Gavel §4.2).

FIFO in arrival order is a lexicographic sequence of stages (most decided in one greedy pass,
the rest by LPs); shortest job first maximises the shortest job's throughput, then serves the
others in shortest-first order.

Path steps (``stats.path``): ``fifo-greedy:<jobs>`` (the arrival-order stages decided by the
greedy pass without an LP), ``exact-lp`` for every LP stage.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from .._sparse import scale_rows
from .._validation import as_option
from ..backends import Backend
from ..data import Cluster, JobPairs, Jobs
from ..errors import InputError
from ..results import Certificate
from ..tolerances import FEAS_TOL, GAP_TOL
from .composed import reciprocal
from .efficiency import MaxTotalThroughput
from .policy import (
    STAGE_SHARE_OF_GAP,
    STAGE_TOL,
    TINY,
    Allocation,
    PolicyStages,
    ThroughputPolicy,
    _check_rates,
    _rank,
    _steps,
)
from .programs import LevelStage, LinearStage, StageResult, pow2
from .stages import StageSolver
from .tuning import Tuning

__all__ = ["FIFO", "FIFO_SEMANTICS", "ShortestJobFirst", "fifo", "shortest_job_first"]

FIFO_GREEDY = "fifo-greedy"  # path step prefix: arrival-order stages decided without an LP
#: ACCURACY: a job's normalised throughput within this of 1 is at its bound
_AT_BOUND = 1e-12
#: ACCURACY: spare workers at or below this fraction of a type's capacity are none (rounding)
_SPARE_ROUNDING = 1e-12


#: the ``semantics=`` values of [`FIFO`][fairalloc.FIFO]
FIFO_SEMANTICS = ("arrival", "objective")


class FIFO(ThroughputPolicy):
    """First in, first out (Gavel §4.2), in two named semantics.

    ``semantics="arrival"`` (default; what schedulers, and Gavel's own ``FIFOPolicy``, mean):
    jobs are served strictly in arrival order. It is the *lexicographic* program over the
    normalised throughputs ``v_m = throughput(m, X) / throughput(m, X^fastest)`` in arrival
    order: maximise ``v`` of the first job, then of the second keeping the first at its
    optimum, and so on. A gang job that fits is therefore never starved by later, smaller
    jobs (4 GPUs, a first-arrived 4-GPU job and four later 1-GPU jobs: the first job runs).
    Solved in one pass in arrival order while each job's stage optimum is unique (a
    fractional knapsack over its types given the earlier jobs, filled in decreasing
    throughput; see formulations/gavel_policies.md), then, from the first tie, by one LP per
    job (skipping later jobs the same LP puts at their bound, stopping as soon as one LP
    proves that no later job can run). ``objective`` is ``sum_m v_m``; ``certificate`` is that
    of the LP ``max sum_m v_m`` keeping every job's value (proving that no job left at 0 can
    run), or after a tie the last stage LP's (every stage's certificate is in
    ``stage_certificates``).

    ``semantics="objective"`` (the paper's formula): ``max sum_m (M - r_m) throughput(m, X) /
    throughput(m, X^fastest)``, one LP. It ignores gang size: a 4-GPU job counts as much as a
    1-GPU job per unit of its own time, so with 4 GPUs it runs three later 1-GPU jobs and
    gives the first a quarter of its time.

    ``r_m`` is the job's 0-based arrival rank (``order``; default: most ``elapsed`` first, ties
    by index), ``M`` the number of jobs (so every weight is positive: the paper's 1-based
    ``M - m`` gives the last job weight 0) and ``throughput(m, X^fastest)`` the job's
    throughput on its fastest usable type.

    Examples
    --------
    >>> import fairalloc as fa
    >>> jobs = fa.Jobs([[1.0]] * 5, scale_factor=[4, 1, 1, 1, 1])
    >>> FIFO(jobs, fa.Cluster({"gpu": 4}), order=range(5)).solve().x.ravel().round(6).tolist()
    [1.0, 0.0, 0.0, 0.0, 0.0]
    >>> r = FIFO(jobs, fa.Cluster({"gpu": 4}), order=range(5), semantics="objective").solve()
    >>> r.x.ravel().round(6).tolist()
    [0.25, 1.0, 1.0, 1.0, 0.0]
    """

    name = "fifo"
    _symmetric = False  # arrival ranks differ per job: no two jobs are interchangeable
    _work_conserving_default = False

    def __init__(self, jobs: Jobs, cluster: Cluster, *, order: ArrayLike | None = None,
                 semantics: str = "arrival", pairs: JobPairs | None = None,
                 unconsolidated_throughput: ArrayLike | None = None,
                 consolidated_capacity: ArrayLike | None = None) -> None:
        super().__init__(jobs, cluster, pairs=pairs,
                         unconsolidated_throughput=unconsolidated_throughput,
                         consolidated_capacity=consolidated_capacity)
        n = jobs.n
        self.rank = (_rank(-jobs.elapsed, n, "elapsed") if order is None
                     else _rank(order, n, "order"))
        self.semantics = as_option(semantics, "semantics", FIFO_SEMANTICS)

    def weights(self) -> np.ndarray:
        return (self.inst.n - self.rank) / self.inst.fastest_tp

    def stage(self) -> LinearStage:
        return LinearStage(np.asarray(self.inst.Tm.T @ self.weights()).ravel(), "fifo")

    def _metric(self, tp: np.ndarray) -> np.ndarray:
        return tp / self.inst.fastest_tp

    def _first_stages(self, solver: StageSolver, method: str) -> PolicyStages:
        if self.semantics == "objective":
            return MaxTotalThroughput._first_stages(self, solver, method)  # type: ignore[arg-type]
        return self._arrival_stages(solver)

    def _greedy_forced(self) -> tuple[int, np.ndarray, np.ndarray]:
        """The arrival-order stages that need no LP, in one pass (no LP, O(k) per job).

        Given the earlier jobs' allocations *forced* (the only ones attaining their stage
        optima), job ``m``'s stage is the fractional knapsack ``max sum_j a_j x_j`` s.t.
        ``0 <= x_j <= spare_j / s_m``, ``sum_j x_j <= 1`` (``a_j = T_mj / T_m,fastest``),
        solved exactly by filling its types in decreasing ``a_j``. With distinct ``a_j`` on
        the types with spare workers its optimum is unique, so job ``m`` is forced too. Returns
        ``(stop, xcol, v)``: ``order[:stop]`` are decided (``stop == n``: all of them; once no
        worker is spare every later job is forced to 0), ``xcol`` their allocation, ``v``
        their values; ``stop < n`` where a tie makes a stage's optimum not unique (the LP
        stages take over from there)."""
        inst = self.inst
        n, k = inst.n, inst.k
        order = np.argsort(self.rank, kind="stable")
        A = (inst.T_allowed / inst.fastest_tp[:, None]).tolist()
        sf = inst.jobs.scale_factor.tolist()
        cap = inst.cap.tolist()
        spare = list(cap)
        x = np.zeros((n, k))
        v = np.zeros(n)
        stop = n
        for pos, m in enumerate(order.tolist()):
            live = [j for j in range(k) if spare[j] > _SPARE_ROUNDING * cap[j]]
            if not live:
                break  # no spare worker: every later job is forced to 0
            a = A[m]
            use = sorted((j for j in live if a[j] > 0), key=lambda j: -a[j])
            if len({a[j] for j in use}) != len(use):
                stop = pos  # tied types: the stage optimum is not unique
                break
            left, val = 1.0, 0.0
            for j in use:
                take = min(left, spare[j] / sf[m])
                if take <= 0.0:
                    continue
                x[m, j] = take
                spare[j] = max(spare[j] - take * sf[m], 0.0)
                left -= take
                val += a[j] * take
                if left <= 0.0:
                    break
            v[m] = val
        xcol = np.zeros(inst.E)
        single = np.flatnonzero(inst.col_kind[inst.mem_col] == 0)
        own, col = inst.mem_job[single], inst.mem_col[single]
        xcol[col] = x[own, inst.col_type[col]]
        return stop, xcol, v

    def _arrival_stages(self, solver: StageSolver) -> PolicyStages:
        inst = self.inst
        V = scale_rows(inst.Tm, 1.0 / inst.fastest_tp)  # rows v_m(x) <= 1
        order = np.argsort(self.rank, kind="stable")
        stop, xcol, vals = self._greedy_forced()
        prefix = order[:stop]
        solver.step(f"{FIFO_GREEDY}:{stop}")
        # each stage is kept to a tenth of gap_tol of one job's worth (v <= 1): tighter kept
        # rows pile up into programs the solver's absolute tolerances call infeasible
        slack = max(solver.stage_tol, STAGE_SHARE_OF_GAP * solver.gap_tol)
        at_bound = 1.0 - _AT_BOUND  # jobs at their bound v = 1

        def keep(jobs_: np.ndarray, low: np.ndarray | None = None) -> None:
            if low is not None:  # forced jobs at their greedy values (those above 0), no
                # slack: a relative slack per row adds up over hundreds of rows into room that
                # the final LP hands to jobs that cannot run (1e-9 x 437 rows: 3e-3)
                pos_ = low > 0
                jobs_ = jobs_[pos_]
                low = np.minimum(low[pos_], V[jobs_] @ xcol)  # met by the greedy point
            if jobs_.size:
                solver.fixed.append((V[jobs_], np.full(jobs_.size, at_bound) if low is None
                                     else low))

        def fix(st: LinearStage, res: StageResult) -> None:
            solver.anchor = res.x[: inst.E]
            if res.value <= solver.gap_tol:
                return  # 0 to the certificate's accuracy: nothing to keep
            solver.fixed.append((sp.csr_matrix(st.g[None, :]),
                                 np.array([res.value - slack * max(1.0, abs(res.value))])))

        keep(prefix, vals[prefix])
        solver.anchor = xcol
        pos = prefix.size
        n = inst.n
        stage_certs: list[Certificate] = []
        last: tuple[LinearStage, StageResult] | None = None
        while pos < n:
            m = order[pos]
            st = LinearStage(np.asarray(V[m].todense()).ravel(), f"fifo job {inst.jobs.ids[m]!r}")
            res = _run_unit_scale(solver, st, "fifo (arrival order)")
            stage_certs.append(res.cert)
            fix(st, res)
            last = (st, res)
            pos += 1
            # later jobs that this optimum already puts at their bound v = 1 are optimal too
            v = V @ res.x[: inst.E]
            nxt = order[pos:]
            run = np.flatnonzero(v[nxt] < at_bound)
            step = int(run[0]) if run.size else nxt.size
            keep(nxt[:step])
            pos += step
            if pos >= n:
                break
            rest = order[pos:]
            st = LinearStage(np.asarray(V[rest].sum(axis=0)).ravel(), "fifo (later jobs)")
            res = _run_unit_scale(solver, st, "fifo (later jobs)")
            stage_certs.append(res.cert)
            if res.value <= solver.gap_tol:
                # no later job can run at all: every later stage's optimum is 0
                last = (st, res)
                break
        if last is not None:
            # every job has been maximised in arrival order: the last LP's optimum is the
            # lexicographic optimum (every earlier stage is one of its constraints)
            return PolicyStages(last[0], last[1], last[1].value, before=tuple(stage_certs),
                                context=V)
        # every stage was decided without an LP (each job forced, in arrival order): certify
        # the allocation against the LP max sum_m v_m keeping every job's value, whose duals
        # also prove that no job left at 0 can get anything while the others keep theirs
        final = LinearStage(np.asarray(V.sum(axis=0)).ravel(), "fifo (total)", scale=1.0)
        res = _run_unit_scale(solver, final, "fifo (total)")
        v = solver.point(final, xcol)
        cert = solver.certificate(res.lp, final, v, res.duals)
        cert.check(backend=solver.backend.name)
        return PolicyStages(final, StageResult(res.lp, v, res.duals, cert.primal_value, cert,
                                               res.iterations, res.rows),
                            cert.primal_value, before=tuple(stage_certs), context=V)

    def _certify_final(self, solver: StageSolver, res: StageResult,
                       stage: LevelStage | LinearStage, xcol: np.ndarray) -> Certificate:
        cert = solver.certify(res, stage, xcol)
        if self.semantics == "objective":
            return cert
        # sums of normalised throughputs (each at most 1): judged against one job's worth
        return dataclasses.replace(cert, scale=max(1.0, abs(cert.primal_value),
                                                   abs(cert.dual_bound)))

    def _objective_value(self, cert: Certificate, xcol: np.ndarray,
                         stages: PolicyStages) -> float:
        if self.semantics == "objective":
            return cert.primal_value
        return float(np.sum(stages.context @ xcol))  # sum of normalised throughputs

    def _check_method(self, method: str) -> None:
        if self.semantics == "arrival" and (self.composed or method == "cvxpy"):
            raise InputError("semantics='arrival' is a sequence of LPs; composed models and "
                             "method='cvxpy' need semantics='objective'", argument="semantics")

    _cvx_objective = MaxTotalThroughput._cvx_objective
    _cvx_unit = MaxTotalThroughput._cvx_unit


def _run_unit_scale(solver: StageSolver, st: LinearStage, what: str) -> StageResult:
    """``solver.run(st)`` for a stage whose objective ``sum v_m`` (normalised throughputs, each
    at most 1) is legitimately 0: its gap is judged against one job's worth (scale 1). The
    kept rows drift down by the solver's own tolerance stage after stage (five tied jobs: a
    kept value 1 - 1e-7 met at 1 - 3e-7; fuzz seed 25): the plan's ``exact-lp+kept-margin``
    step (`fairalloc.throughput.strategies`) solves such a stage with the kept rows raised."""
    return solver.run(dataclasses.replace(st, scale=1.0), what)


def fifo(
        jobs: Jobs, cluster: Cluster, *, order: ArrayLike | None = None,
        semantics: str = "arrival",
        pairs: JobPairs | None = None, unconsolidated_throughput: ArrayLike | None = None,
        consolidated_capacity: ArrayLike | None = None, method: str = "auto",
        backend: str | Backend | None = None, work_conserving: bool | None = None,
        gap_tol: float = GAP_TOL, feas_tol: float = FEAS_TOL,
        stage_tol: float = STAGE_TOL, tuning: Tuning | None = None) -> Allocation:
    """FIFO allocation (Gavel §4.2); ``order`` ranks jobs by arrival (smaller first).

    Parameters
    ----------
    jobs : fairalloc.Jobs
    cluster : fairalloc.Cluster
    order : array_like (n,), optional
        Arrival rank of each job (smaller first; default: most ``elapsed`` first).
    semantics : {"arrival", "objective"}
        ``"arrival"`` (default): strict arrival order, lexicographic (Gavel's FIFO);
        ``"objective"``: the paper's weighted-sum objective (see [`FIFO`][fairalloc.FIFO]).
    pairs, unconsolidated_throughput, consolidated_capacity
        Space sharing and placement sensitivity (see
        [`ThroughputPolicy`][fairalloc.ThroughputPolicy]).
    method, backend, work_conserving, gap_tol, feas_tol, stage_tol
        See [`ThroughputPolicy.solve`][fairalloc.throughput.ThroughputPolicy.solve].

    tuning : fairalloc.throughput.Tuning, optional
        Performance knobs of the solve plans (never changes an answer).

    Returns
    -------
    Allocation
        ``objective``: the sum of normalised throughputs (``"arrival"``) or the weighted sum.

    Examples
    --------
    The first job gets the fast GPU:

    >>> import fairalloc as fa
    >>> a = fa.fifo(fa.Jobs([[40.0, 10.0], [40.0, 10.0]]), fa.Cluster({"v100": 1, "k80": 1}),
    ...             order=[0, 1])
    >>> a.x.round(6).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    return FIFO(
        jobs, cluster, order=order, semantics=semantics,
        pairs=pairs, unconsolidated_throughput=unconsolidated_throughput,
        consolidated_capacity=consolidated_capacity).solve(
        method=method, backend=backend, work_conserving=work_conserving, gap_tol=gap_tol,
        feas_tol=feas_tol, stage_tol=stage_tol, tuning=tuning)


class ShortestJobFirst(ThroughputPolicy):
    """Shortest job first (Gavel §4.2): ``min_X min_m steps_m / throughput(m, X)``.

    The paper's objective is attained by giving the job with the smallest possible duration
    ``steps_m / max_j T[m, j]`` its fastest usable type for all of its time; the first stage
    is the LP maximising that job's throughput (its value is the bound every allocation obeys).
    Then the remaining capacity goes to the other jobs in shortest-first order (the FIFO
    objective with rank by isolated duration) and a work-conserving stage follows.
    ``objective`` is the shortest duration in seconds.
    """

    name = "shortest_job_first"
    _symmetric = False  # duration ranks (ties by index) make every job distinct

    def __init__(self, jobs: Jobs, cluster: Cluster, *, pairs: JobPairs | None = None,
                 unconsolidated_throughput: ArrayLike | None = None,
                 consolidated_capacity: ArrayLike | None = None) -> None:
        super().__init__(jobs, cluster, pairs=pairs,
                         unconsolidated_throughput=unconsolidated_throughput,
                         consolidated_capacity=consolidated_capacity)
        self.steps = _steps(jobs, "shortest_job_first")
        self.duration = self.steps / self.inst.fastest_tp
        self.rank = _rank(self.duration, jobs.n, "steps_remaining")
        self.first = int(np.flatnonzero(self.rank == 0)[0])

    def _metric(self, tp: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", over="ignore"):
            return np.where(tp > 0, self.steps / np.maximum(tp, TINY), np.inf)

    def _first_stages(self, solver: StageSolver, method: str) -> PolicyStages:
        inst = self.inst
        with np.errstate(over="ignore"):
            g = np.asarray(inst.Tm[self.first].todense()).ravel() / self.steps[self.first]
        _check_rates(g)
        st = LinearStage(g, "shortest job")
        res = solver.run(st, self.name)
        solver.fix(st, res.value, at=res.x[: inst.E])
        w = (inst.n - self.rank) / inst.fastest_tp
        st2 = LinearStage(np.asarray(inst.Tm.T @ w).ravel(), "shortest-first order")
        res2 = solver.run(st2, self.name)
        solver.fix(st2, res2.value, at=res2.x[: inst.E])
        return PolicyStages(st, StageResult(res.lp, np.r_[res2.x[: inst.E], 0.0], res.duals,
                                            res.value, res.cert, res.iterations, res.rows),
                            res.value, after_first=(res2.cert,))

    def _shortest(self, xcol: np.ndarray) -> float:
        """The shortest job's duration ``steps / throughput`` under the allocation."""
        m = self.first
        with np.errstate(over="ignore", divide="ignore"):
            dur = float(self.steps[m] / float(self.inst.throughput(xcol)[m]))
        if not np.isfinite(dur):
            raise InputError("the shortest duration exceeds the floating-point range "
                             "(steps_remaining / throughput overflows)",
                             argument="steps_remaining")
        return dur

    def _objective_value(self, cert: Certificate, xcol: np.ndarray,
                         stages: PolicyStages) -> float:
        return self._shortest(xcol)

    def _cvx_report(self, cert: Certificate, xcol: np.ndarray) -> Certificate:
        """The shortest duration's certificate (without objective terms): the duration of
        the allocation against ``1 / rate_bound``."""
        if self._terms:
            return cert
        return reciprocal(cert, self._shortest(xcol) if cert.primal_value > 0 else float("inf"))

    def _cvx_objective(self, cvx: dict[str, Any]) -> tuple[Any, list[Any]]:
        return cvx["tp"][self.first] / self.steps[self.first], []

    def _cvx_unit(self) -> float:
        g = np.asarray(self.inst.Tm[self.first].todense()).ravel() / self.steps[self.first]
        return pow2(float(np.max(g, initial=0.0)))


def shortest_job_first(
        jobs: Jobs, cluster: Cluster, *,
        pairs: JobPairs | None = None, unconsolidated_throughput: ArrayLike | None = None,
        consolidated_capacity: ArrayLike | None = None, method: str = "auto",
        backend: str | Backend | None = None, work_conserving: bool | None = None,
        gap_tol: float = GAP_TOL, feas_tol: float = FEAS_TOL,
        stage_tol: float = STAGE_TOL, tuning: Tuning | None = None) -> Allocation:
    """Shortest job first (Gavel §4.2); see [`ShortestJobFirst`][fairalloc.ShortestJobFirst].

    Parameters
    ----------
    jobs : fairalloc.Jobs
    cluster : fairalloc.Cluster
    pairs, unconsolidated_throughput, consolidated_capacity
        Space sharing and placement sensitivity (see
        [`ThroughputPolicy`][fairalloc.ThroughputPolicy]).
    method, backend, work_conserving, gap_tol, feas_tol, stage_tol
        See [`ThroughputPolicy.solve`][fairalloc.throughput.ThroughputPolicy.solve].

    tuning : fairalloc.throughput.Tuning, optional
        Performance knobs of the solve plans (never changes an answer).

    Returns
    -------
    Allocation
        ``objective``: the shortest job's duration in seconds.

    Examples
    --------
    >>> import fairalloc as fa
    >>> jobs = fa.Jobs([[10.0, 5.0], [10.0, 5.0]], steps_remaining=[500, 100])
    >>> a = fa.shortest_job_first(jobs, fa.Cluster({"v100": 1, "k80": 1}))
    >>> a.x.tolist(), round(a.objective, 6)
    ([[0.0, 1.0], [1.0, 0.0]], 10.0)
    """
    return ShortestJobFirst(
        jobs, cluster,
        pairs=pairs, unconsolidated_throughput=unconsolidated_throughput,
        consolidated_capacity=consolidated_capacity).solve(
        method=method, backend=backend, work_conserving=work_conserving, gap_tol=gap_tol,
        feas_tol=feas_tol, stage_tol=stage_tol, tuning=tuning)
