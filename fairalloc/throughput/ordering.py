"""Ordering policies: FIFO and shortest job first (Gavel §4.2).

FIFO in arrival order is a lexicographic sequence of stages (most decided in one greedy pass
and certified in closed form, the rest by LPs); shortest job first maximises the shortest
job's throughput, then serves the others in shortest-first order.

Path steps (``stats.path``): ``fifo-greedy:<jobs>`` (the arrival-order stages decided by the
greedy pass without an LP), ``exact-lp`` for every LP stage.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from .._sparse import scale_rows
from .._validation import as_option
from ..backends import Backend, LinearProgram
from ..certificates import lp_primal_residual
from ..data import Cluster, JobPairs, Jobs
from ..errors import InputError
from ..results import Certificate
from ..tolerances import FEAS_TOL, GAP_TOL
from .composed import reciprocal
from .efficiency import MaxTotalThroughput
from .instance import ColumnInstance
from .policy import (
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
from .space_sharing import pair_rates, undominated_pairs
from .stages import StageSolver
from .tuning import Tuning

__all__ = ["FIFO", "FIFO_SEMANTICS", "ShortestJobFirst", "fifo", "shortest_job_first"]

FIFO_GREEDY = "fifo-greedy"  # path step prefix: arrival-order stages decided without an LP
#: `Certificate.kind` of FIFO's forced stages: closed-form knapsack duals (`forced_certificate`)
FIFO_KNAPSACK = "fifo-knapsack"
#: ACCURACY: a job's normalised throughput within this of 1 is at its bound
_AT_BOUND = 1e-12


#: PERFORMANCE: `forced_prefix` decides runs of jobs with numpy from this many jobs left (below,
#: one by one in Python is faster: Gavel-drawn jobs, 100 jobs 0.43 vs 0.86 ms, 256 jobs 1.16
#: vs 1.07 ms, 2,048 jobs 10.8 vs 3.6 ms)
_RUN_MIN_JOBS = 256

#: the ``semantics=`` values of `fairalloc.FIFO`
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
    throughput; `forced_prefix`), certified without an LP by the knapsacks' closed-form duals
    (``certificate.kind == "fifo-knapsack"``, `forced_certificate`); then, from the first tie,
    by one LP per job over the forced jobs' columns held as placed, each keeping the face of
    the earlier stages' optimal sets that their certificates prove (columns held, rows tight:
    `StageSolver.keep_face`) and their values (skipping later jobs the same LP puts at their
    bound, stopping as soon as the allocation or an LP proves that no later job can get any
    time). ``objective`` is ``sum_m v_m``; ``certificate`` is the forced stages' or, after a
    tie, the last stage LP's (every stage's certificate is in ``stage_certificates``, the
    forced stages' first). With job ``pairs``, the pair columns whose earlier member gets less
    from them than from its own single column there are dropped (no arrival-order optimum uses
    them: `fairalloc.throughput.space_sharing.undominated_pairs`) and the greedy pass takes
    the rest into account (`forced_prefix`). See formulations/gavel_policies.md and
    proofs/fifo_arrival_order.md.

    ``semantics="objective"`` (the paper's formula): ``max sum_m (M - r_m) throughput(m, X) /
    throughput(m, X^fastest)``, one LP. It ignores gang size: a 4-GPU job counts as much as a
    1-GPU job per unit of its own time, so with 4 GPUs it runs three later 1-GPU jobs and
    gives the first a quarter of its time.

    ``r_m`` is the job's 0-based arrival rank (``order``; default: most ``elapsed`` first, ties
    by index), ``M`` the number of jobs (so every weight is positive: the paper's 1-based
    ``M - m`` gives the last job weight 0) and ``throughput(m, X^fastest)`` the job's
    throughput on its fastest usable type.

    Parameters
    ----------
    jobs : fairalloc.Jobs
        The jobs.
    cluster : fairalloc.Cluster
        The workers of each type.
    order : array_like, shape (n,), optional
        Arrival order (smaller first; ties by index); default: most ``jobs.elapsed`` first.
    semantics : {"arrival", "objective"}, default "arrival"
        The two semantics above.
    pairs, unconsolidated_throughput, consolidated_capacity
        As for `fairalloc.ThroughputPolicy`.

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
        if pairs is not None and self.semantics == "arrival":
            kept = undominated_pairs(self.inst, np.argsort(self.rank, kind="stable"))
            if kept is not None:  # (the same allocations, on fewer columns)
                self.inst = ColumnInstance(jobs, cluster, kept, unconsolidated_throughput,
                                           consolidated_capacity)

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

    def _forced(self) -> tuple[int, np.ndarray]:
        """The arrival-order stages that need no LP (`forced_prefix` on this instance):
        ``(stop, x)``, ``x`` of shape ``(n, k)``. Single-job and pair columns (the pairs
        checked against the single columns by `forced_prefix`); no placement columns (whose
        stages are not knapsacks): else no stage is forced."""
        inst = self.inst
        if inst.placement:
            return 0, np.zeros((inst.n, inst.k))
        order = np.argsort(self.rank, kind="stable")
        return forced_prefix(inst.T_allowed / inst.fastest_tp[:, None],
                             inst.jobs.scale_factor, inst.cap, order, pair_rates(inst, order))

    def _arrival_stages(self, solver: StageSolver) -> PolicyStages:
        inst = self.inst
        V = scale_rows(inst.Tm, 1.0 / inst.fastest_tp)  # rows v_m(x) <= 1
        order = np.argsort(self.rank, kind="stable")
        stop, x = self._forced()
        solver.step(f"{FIFO_GREEDY}:{stop}")
        xcol = self._columns(x)
        stage_certs: list[Certificate] = []
        forced: ForcedStages | None = None
        if stop:
            forced = self._forced_stages(solver, order[:stop], xcol)
            stage_certs.append(forced.certificate)
            # the forced jobs' columns are held at their (unique) stage optima in every later
            # program: the same set as keeping their values, without rows whose right-hand
            # side may be far below their coefficients
            # (every column a forced job is a member of: its pair columns, held at 0, too)
            cols = np.unique(inst.mem_col[np.isin(inst.mem_job, order[:stop])])
            solver.fixed_columns = (cols, xcol[cols])
        if stop == inst.n:
            # every stage decided and certified without an LP; the result's stage is the sum
            # of values (a work-conserving stage keeps it, every column held), priced by the
            # forced stages' capacity duals (`ForcedStages.prices`)
            assert forced is not None
            final = LinearStage(np.asarray(V.sum(axis=0)).ravel(), "fifo (total)", scale=1.0)
            rows = solver.layout(final)
            duals = np.zeros(rows.size)
            duals[rows.slice("capacity")] = -forced.prices
            cert = forced.certificate
            return PolicyStages(final, StageResult(solver.program(final),
                                                   solver.point(final, xcol), duals,
                                                   cert.primal_value, cert, 0, rows),
                                cert.primal_value, context=V)
        solver.anchor = xcol
        at_bound = 1.0 - _AT_BOUND  # jobs at their bound v = 1

        def keep(jobs_: np.ndarray) -> None:
            if jobs_.size:
                solver.fixed.append((V[jobs_], np.full(jobs_.size, at_bound)))

        def fix(st: LinearStage, res: StageResult) -> None:
            # later stages keep the stage's optimal set: the face its certificate proves
            # (columns held, rows tight) and, where the job's columns are not all held, its
            # value (no slack: a slack is room that later stages hand to jobs that cannot
            # run, whose values then become kept rows far below the solvers' tolerances)
            xs = solver.keep_face(res)
            solver.anchor = xs
            held = np.zeros(inst.E, dtype=bool)
            if solver.fixed_columns is not None:
                held[solver.fixed_columns[0]] = True
            if np.any((st.g > 0) & ~held):
                row = _kept_row(st.g, xs, solver.feas_tol)
                if row is not None:
                    solver.fixed.append(row)

        pos = stop
        n = inst.n
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
            # can any later job run at all? (their total time: a job on a type of ratio 1e-7
            # runs, though its value is below the certificate's accuracy)
            rest = order[pos:]
            if _later_can_run(solver, solver.anchor, rest):
                continue  # (a witness: no LP needed to know it)
            st = LinearStage(np.asarray(inst.M[rest].sum(axis=0)).ravel(), "fifo (later jobs)")
            res = _run_unit_scale(solver, st, "fifo (later jobs)")
            stage_certs.append(res.cert)
            if res.cert.dual_bound <= solver.feas_tol:
                # proven: no later job gets more than feas_tol of time (the resolution of a
                # time row) in any allocation keeping the earlier stages
                last = (st, res)
                break
        assert last is not None
        # every job has been maximised in arrival order: the last LP's optimum is the
        # lexicographic optimum (every earlier stage is one of its constraints)
        return PolicyStages(last[0], last[1], last[1].value, before=tuple(stage_certs),
                            context=V)

    def _forced_stages(self, solver: StageSolver, forced: np.ndarray, xcol: np.ndarray
                       ) -> ForcedStages:
        """`forced_certificate` of the stages of jobs ``forced`` (in arrival order) at the
        column allocation ``xcol``, its residual on the program's base rows."""
        inst = self.inst
        lp = LinearProgram.build(np.zeros(inst.E), solver.A, solver.lo, solver.up,
                                 np.zeros(inst.E), np.ones(inst.E))
        order = np.argsort(self.rank, kind="stable")
        # (pair columns of a forced job: 0 in ``xcol``, so the matrix is its single columns)
        return forced_certificate(inst.T_allowed / inst.fastest_tp[:, None],
                                  inst.jobs.scale_factor, inst.cap, forced,
                                  inst.to_matrix(xcol, (0,)), lp_primal_residual(lp, xcol),
                                  solver.gap_tol, solver.feas_tol, pair_rates(inst, order))

    def _columns(self, x: np.ndarray) -> np.ndarray:
        """The column allocation of an ``(n, k)`` allocation over single-job columns."""
        inst = self.inst
        xcol = np.zeros(inst.E)
        single = np.flatnonzero(inst.col_kind[inst.mem_col] == 0)
        own, col = inst.mem_job[single], inst.mem_col[single]
        xcol[col] = x[own, inst.col_type[col]]
        return xcol

    def _certify_final(self, solver: StageSolver, res: StageResult,
                       stage: LevelStage | LinearStage, xcol: np.ndarray) -> Certificate:
        if res.cert.kind == FIFO_KNAPSACK:
            # every stage forced: certified in closed form, at the final allocation
            order = np.argsort(self.rank, kind="stable")
            return self._forced_stages(solver, order, xcol).certificate
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


def forced_prefix(A: np.ndarray, scale_factor: np.ndarray, cap: np.ndarray,
                  order: np.ndarray, pair_rates: np.ndarray | None = None
                  ) -> tuple[int, np.ndarray]:
    """FIFO's arrival-order stages whose optimum is unique, in one pass without an LP.

    Given the earlier jobs' allocations fixed (each the only optimum of its stage), job
    ``m``'s stage is the fractional knapsack ``max sum_j a_j x_j`` s.t. ``0 <= x_j <= u_j``,
    ``sum_j x_j <= 1`` with ``a_j = A[m, j]`` (``v_m``'s coefficient, 0 where the job cannot
    run) and ``u_j = spare_j / scale_factor[m]``; filling its types in decreasing ``a_j``
    solves it exactly. Its optimum is unique unless two types of equal ``a_j`` could trade
    time (one holds some, the other has room); then job ``m``'s stage and every later one
    need the LP stages. Once no worker is spare, every later job is forced to 0.

    Job pairs (space sharing): ``pair_rates[m, j]`` is the largest ``v_m`` coefficient of a
    pair column of job ``m`` with a *later* job of ``order`` on type ``j`` (``-inf`` where it
    has none; `pair_rates`); pair columns with earlier jobs are held at 0 (each earlier stage
    decided its job's columns, its pairs at 0). A pair column uses the pair's gang (at least
    the job's own, so as many workers or more) and the same time of the job as its single
    column on that type, so where its coefficient is *below* the single column's (``a_p <
    a_j``), moving its time to the single column raises ``v_m`` and uses no more workers or
    time: no optimum of the stage uses it, and the stage is the same knapsack with the same
    unique optimum. Where ``a_p == a_j > 0`` the move keeps ``v_m``, so an optimum uses the
    pair exactly when the knapsack's own optimum takes type ``j`` (``x_mj > 0``): then the
    stage's optimum is not unique (the later job's stage decides the split) and the pass stops
    there, as at a tie. It stops too where ``a_p > a_j``, or ``a_p == a_j == 0`` (a pair column
    the job gains nothing from but may hold time in). Earlier jobs' pairs are at 0 and later
    jobs' stages see the same structure, so the decided stages are the lexicographic ones.

    Returns ``(stop, x)``: ``order[:stop]`` are decided (``stop == len(order)``: all of
    them), ``x`` (shape of ``A``) their allocation (0 elsewhere). A type the job's take uses
    up is set to exactly 0 spare workers (no rounding remainder). Each stage depends on every
    earlier one, but a job that takes all its time on one type uses none up: runs of such jobs
    are decided by cumulative sums, and only the at most ``k`` jobs that use up a type (and a
    tie) are solved one at a time: ``O(k n)`` numpy work.

    Examples
    --------
    >>> stop, x = forced_prefix(np.array([[1.0, 0.5], [1.0, 0.5]]), np.array([1.0, 1.0]),
    ...                         np.array([1.0, 1.0]), np.array([0, 1]))
    >>> stop, x.tolist()
    (2, [[1.0, 0.0], [0.0, 1.0]])
    >>> forced_prefix(np.array([[1.0, 1.0]]), np.array([1.0]), np.array([1.0, 1.0]),
    ...               np.array([0]))[0]  # two equal types, room on both: a tie
    0
    """
    n, k = A.shape
    x = np.zeros((n, k))
    if pair_rates is None:
        strict_bad = np.zeros(n, dtype=bool)
        same = np.zeros((n, k), dtype=bool)
    else:  # (pairs that cannot decide the job whatever it takes; pairs as good as a type)
        strict_bad = np.any((pair_rates > A) | ((pair_rates == A) & (A <= 0.0)), axis=1)
        same = (pair_rates == A) & (A > 0.0)
    bad_l, same_any = strict_bad.tolist(), same.any(axis=1).tolist()
    sf = np.asarray(scale_factor, dtype=float)
    sfl = sf.tolist()
    spare = cap.astype(float).tolist()
    order = np.asarray(order, dtype=int)
    ol = order.tolist()
    rows = A.tolist() if n < 2 * _RUN_MIN_JOBS else None  # (else few rows are read)
    pos = 0
    while pos < len(ol):
        if not any(w > 0.0 for w in spare):
            break  # no spare worker: every later job is forced to 0
        if len(ol) - pos >= _RUN_MIN_JOBS:
            # a run's jobs that take a type use at least their gang each and leave more than
            # it spare: their gangs sum to less than the spare workers, so the run ends within
            # the jobs whose gangs first reach that sum (beyond: the next run starts there)
            rest = order[pos:]
            window = int(np.searchsorted(np.cumsum(sf[rest]), sum(spare))) + 1
            ran, spare = _easy_run(A, sf, spare, rest[:window], x, strict_bad, same)
            pos += ran
            if pos == len(ol) or not any(w > 0.0 for w in spare):
                break
        # the next job uses up a type or ties (at most k such jobs after a run), or few jobs
        # are left: its knapsack in Python, types in decreasing rate
        m = ol[pos]
        a = rows[m] if rows is not None else A[m].tolist()
        use = sorted((j for j in range(k) if a[j] > 0.0 and spare[j] > 0.0),
                     key=lambda j: -a[j])
        left = 1.0
        take = [0.0] * len(use)
        room = [0.0] * len(use)
        for i, j in enumerate(use):
            u = spare[j] / sfl[m]
            if left <= 0.0:
                room[i] = u
                continue
            if u <= left:  # the type is used up (exactly: no rounding remainder)
                take[i], left, spare[j] = u, left - u, 0.0
            else:  # the job's time is used up
                take[i], left = left, 0.0
                room[i] = u - take[i]
                spare[j] = max(spare[j] - take[i] * sfl[m], 0.0)
        if len({a[j] for j in use}) < len(use) and _tied(use, take, room, a):
            return pos, x
        if bad_l[m] or (same_any[m] and any(t > 0.0 and bool(same[m, j])
                                            for j, t in zip(use, take))):
            return pos, x  # a pair column can hold the job's time: the LP stages decide
        for i, j in enumerate(use):
            x[m, j] = take[i]
        pos += 1
    return len(ol), x


def _easy_run(A: np.ndarray, sf: np.ndarray, spare: list[float], rest: np.ndarray,
              x: np.ndarray, strict_bad: np.ndarray, same: np.ndarray
              ) -> tuple[int, list[float]]:
    """`forced_prefix`'s run of "easy" jobs from the start of ``rest``, vectorised: each
    takes all its time on its fastest type with spare (the first such type on equal rates, as
    the stable sort there), which keeps more than the job's gang spare (``u > 1``: no type is
    used up, so the usable types do not change during the run) and has no other usable type
    of equal rate (no tie), and no pair column stops it (`forced_prefix`: ``strict_bad``, or
    ``same`` on the type it takes). Writes their ``x``; returns how many and the spare workers
    after.
    Gangs are whole numbers and an integer subtracted from a larger float below ``2**53`` is
    exact, so the cumulative sums equal the one-by-one pass bit for bit."""
    k = A.shape[1]
    free = np.array(spare)
    a = A[rest]
    s = sf[rest]
    rows = np.arange(rest.size)
    usable = (a > 0.0) & (free > 0.0)[None, :]
    am = np.where(usable, a, -np.inf)
    top = np.argmax(am, axis=1)
    has = usable.any(axis=1)
    tie = np.count_nonzero(am == am[rows, top][:, None], axis=1) > 1
    need = np.zeros((rest.size, k))
    need[rows[has], top[has]] = s[has]
    before = free[None, :] - (np.cumsum(need, axis=0) - need)  # spare when a job starts
    with np.errstate(divide="ignore", invalid="ignore"):
        easy = ~has | (~tie & (before[rows, top] / s > 1.0))
    easy &= ~strict_bad[rest] & ~(has & same[rest, top])
    ran = int(np.argmin(easy)) if not easy.all() else rest.size
    took = np.flatnonzero(has[:ran])
    x[rest[took], top[took]] = 1.0
    return ran, (free - need[:ran].sum(axis=0)).tolist()


@dataclass(frozen=True)
class ForcedStages:
    """FIFO's forced stages certified in closed form (`forced_certificate`).

    Attributes
    ----------
    certificate : Certificate
        ``kind="fifo-knapsack"``: ``primal_value = sum_m v_m`` and ``dual_bound = sum_m
        D_m`` over the forced stages (``D_m`` the closed-form dual bound of job ``m``'s
        knapsack), ``gap = sum_m max(D_m - v_m, 0)`` (so every stage's gap is at most it),
        judged against one job's worth (``scale = 1``); ``primal_residual`` of the whole
        allocation on the time and capacity rows.
    bounds : ndarray
        ``D_m`` of each forced stage, in arrival order.
    prices : ndarray, shape (k,)
        Each type's capacity dual (per worker) in the earliest forced stage that its
        capacity limits (``lambda_mj / s_m > 0``); 0 where no stage is limited by it.
    """

    certificate: Certificate
    bounds: np.ndarray
    prices: np.ndarray


def forced_certificate(A: np.ndarray, scale_factor: np.ndarray, cap: np.ndarray,
                       order: np.ndarray, x: np.ndarray, residual: float, gap_tol: float,
                       feas_tol: float, pair_rates: np.ndarray | None = None
                       ) -> ForcedStages:
    """Certify FIFO's forced stages ``order`` (in arrival order) at allocation ``x`` without an
    LP: each stage's knapsack (`forced_prefix`) has the closed-form optimal dual ``mu`` (the
    ratio ``a_j`` of the type where the job's cumulative room ``sum u_j``, types in decreasing
    ``a_j``, reaches 1; 0 if it never does) and ``lambda_j = max(a_j - mu, 0)``, whose value
    ``D_m = mu + sum_j u_j lambda_j`` bounds the stage's optimum (weak duality, for any
    ``mu >= 0``). ``u_j`` is recomputed from the data: the workers ``cap`` less those the
    earlier jobs of ``order`` use in ``x``, over the job's ``scale_factor``. ``residual``: the
    allocation's primal residual (computed by the caller on the program's rows). Vectorised
    over the stages.

    With job pairs, ``pair_rates`` (`forced_prefix`; pair columns with earlier jobs are held
    at 0, so not variables of the stage) adds each stage's pair columns to its dual: a pair
    column of job ``m`` on type ``j`` uses ``m``'s time and at least ``scale_factor[m]``
    workers, so the same ``(mu, lambda)`` (other jobs' time duals 0) is feasible for it when
    ``a_p <= mu + lambda_j``; ``dual_residual`` is the largest excess over the forced stages
    (0 when every pair column is no better than the job's single column there).

    Examples
    --------
    >>> A = np.array([[1.0, 0.5], [1.0, 0.5]])
    >>> f = forced_certificate(A, np.ones(2), np.ones(2), np.array([0, 1]),
    ...                        np.array([[1.0, 0.0], [0.0, 1.0]]), 0.0, 1e-6, 1e-7)
    >>> f.certificate.kind, f.bounds.tolist(), f.certificate.gap, f.prices.tolist()
    ('fifo-knapsack', [1.0, 0.5], 0.0, [0.5, 0.0])
    """
    a = A[order]
    xo = x[order]
    s = scale_factor[order].astype(float)
    used = s[:, None] * xo
    before = np.cumsum(used, axis=0) - used  # workers the earlier jobs use
    room = np.where(a > 0, np.maximum(cap[None, :] - before, 0.0) / s[:, None], 0.0)
    idx = np.argsort(-a, axis=1, kind="stable")
    a_sorted = np.take_along_axis(a, idx, axis=1)
    reach = np.cumsum(np.take_along_axis(room, idx, axis=1), axis=1) >= 1.0
    full = reach.any(axis=1)
    first = np.argmax(reach, axis=1)
    mu = np.where(full, a_sorted[np.arange(a.shape[0]), first], 0.0)
    lam = np.maximum(a - mu[:, None], 0.0)
    bounds = mu + np.sum(room * lam, axis=1)
    values = np.sum(a * xo, axis=1)
    gap = float(np.sum(np.maximum(bounds - values, 0.0)))
    dual_res = 0.0
    if pair_rates is not None and a.size:
        excess = pair_rates[order] - np.maximum(a, mu[:, None])  # a_p - (mu + lambda_j)
        dual_res = float(np.max(np.where(np.isfinite(excess), excess, 0.0), initial=0.0))
    # earliest stage limited by each type (lambda > 0): its capacity dual per worker
    dual = lam / s[:, None]
    limited = dual > 0
    prices = np.where(limited.any(axis=0),
                      dual[np.argmax(limited, axis=0), np.arange(a.shape[1])], 0.0)
    cert = Certificate(kind=FIFO_KNAPSACK, primal_value=float(values.sum()),
                       dual_bound=float(bounds.sum()), gap=gap, primal_residual=residual,
                       dual_residual=max(dual_res, 0.0), gap_tol=gap_tol, feas_tol=feas_tol,
                       scale=1.0)
    return ForcedStages(cert, bounds, prices)


def _tied(use: list[int], take: list[float], room: list[float], a: list[float]) -> bool:
    """Whether two of the types ``use`` with equal ``a`` can trade time: one holds some
    (``take > 0``), another has room (``room > 0``)."""
    groups: dict[float, list[int]] = {}
    for i, j in enumerate(use):
        groups.setdefault(a[j], []).append(i)
    for members in groups.values():
        if len(members) < 2:
            continue
        holders = [i for i in members if take[i] > 0.0]
        roomy = [i for i in members if room[i] > 0.0]
        if holders and roomy and (len(holders) > 1 or len(roomy) > 1
                                  or holders[0] != roomy[0]):
            return True
    return False


def _later_can_run(solver: StageSolver, xcol: np.ndarray, later: np.ndarray) -> bool:
    """Whether the allocation ``xcol`` (meeting every kept stage) proves that some job of
    ``later`` can get more than ``feas_tol`` of time: one already has it, or a type has that
    much room for one of its gangs on a column no stage holds. Single-job columns only (no
    job pairs or placement): else ``False`` (the LP decides)."""
    inst, res = solver.inst, solver.feas_tol
    if inst.pairs is not None or inst.placement:
        return False
    if np.any(inst.M[later] @ xcol > res):
        return True
    room = inst.cap - inst.W @ xcol
    mine = np.isin(inst.mem_job[: inst.E], later)
    if solver.fixed_columns is not None:
        mine[solver.fixed_columns[0]] = False
    cols = np.flatnonzero(mine)
    return bool(np.any(room[inst.col_type[cols]] > inst.col_workers[cols] * res))


def _kept_row(g: np.ndarray, xcol: np.ndarray, resolution: float
              ) -> tuple[sp.csr_matrix, np.ndarray] | None:
    """The kept row ``g @ x >= g @ xcol`` of a stage objective ``g`` (non-negative, at most 1)
    with optimum ``xcol``, without slack. Columns holding at most ``resolution`` of time
    (slivers a solver leaves) do not count towards the right-hand side. ``None`` when no
    column holds more: the stage's optimum is 0 at the certificate's resolution of time (a
    time row is met to ``feas_tol``).

    Examples
    --------
    >>> B, low = _kept_row(np.array([1.0, 3e-7]), np.array([1e-12, 1.0]), 1e-7)
    >>> B.toarray().tolist(), low.tolist()
    ([[1.0, 3e-07]], [3e-07])
    >>> _kept_row(np.array([1.0, 3e-7]), np.array([1e-9, 0.0]), 1e-7) is None
    True
    """
    used = (xcol > resolution) & (g > 0)
    if not used.any():
        return None
    return sp.csr_matrix(g[None, :]), np.array([float(g[used] @ xcol[used])])


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
        ``"objective"``: the paper's weighted-sum objective (see `fairalloc.FIFO`).
    pairs, unconsolidated_throughput, consolidated_capacity
        Space sharing and placement sensitivity (see
        `fairalloc.ThroughputPolicy`).
    method, backend, work_conserving, gap_tol, feas_tol, stage_tol
        See `fairalloc.throughput.ThroughputPolicy.solve`.

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

    Parameters
    ----------
    jobs : fairalloc.Jobs
        The jobs (``steps_remaining`` required).
    cluster : fairalloc.Cluster
        The workers of each type.
    pairs, unconsolidated_throughput, consolidated_capacity
        As for `fairalloc.ThroughputPolicy`.

    Examples
    --------
    >>> import fairalloc as fa
    >>> jobs = fa.Jobs([[40.0, 10.0], [12.0, 4.0]], steps_remaining=[4000.0, 1200.0])
    >>> cluster = fa.Cluster({"v100": 1, "k80": 1})
    >>> r = ShortestJobFirst(jobs, cluster).solve()
    >>> r.objective, r.x.round(6).tolist()
    (100.0, [[1.0, 0.0], [0.0, 1.0]])
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
    """Shortest job first (Gavel §4.2); see `fairalloc.ShortestJobFirst`.

    Parameters
    ----------
    jobs : fairalloc.Jobs
    cluster : fairalloc.Cluster
    pairs, unconsolidated_throughput, consolidated_capacity
        Space sharing and placement sensitivity (see
        `fairalloc.ThroughputPolicy`).
    method, backend, work_conserving, gap_tol, feas_tol, stage_tol
        See `fairalloc.throughput.ThroughputPolicy.solve`.

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
