"""Efficiency objectives: maximum total throughput and minimum cost (Gavel §3.1, §4.2).

Both are linear (total throughput) or linear-fractional (throughput per unit cost, solved
exactly by the Charnes-Cooper transformation) programs over the allocation columns.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from .._validation import as_array, as_bool, as_option, as_tolerance
from ..backends import Backend, LinearProgram, get_backend
from ..certificates import lp_certificate
from ..data import _MIN_RATIO, Cluster, JobPairs, Jobs
from ..errors import CertificateError, InfeasibleError, InputError, SolverError
from ..plan import Strategy, run_plan
from ..results import Certificate, SolveStats
from ..tolerances import FEAS_TOL, GAP_TOL
from .policy import (
    STAGE_SHARE_OF_GAP,
    STAGE_TOL,
    THROUGHPUT_METHODS,
    Allocation,
    PolicyStages,
    ThroughputPolicy,
    _steps,
)
from .programs import LevelStage, LinearStage, StageResult, pow2
from .rows import RowLayout
from .stages import (
    TOP_UP_GAP_SHARE,
    TOP_UP_SHRINK,
    StageSolver,
    backend_for,
    scaled_solve,
    top_up_rows,
)
from .symmetry import ClassMap
from .tuning import Tuning, as_tuning

__all__ = ["MaxTotalThroughput", "MinCost", "max_total_throughput", "min_cost"]

CHARNES_COOPER = "charnes-cooper"  # path step: the Charnes-Cooper LP of min cost
#: ACCURACY: relative rounding margin above a job's fastest rate at which an SLO is infeasible
_SLO_ROUNDING = 1e-12
#: ACCURACY: relative margin below the largest scale of the work-conserving anchor
#: (`MinCost._widest`) that its rows allow (rounding of the product ``s * x``)
_WIDEST_ROUNDING = 1e-12
#: ACCURACY: a (job, type) column whose throughput per unit cost is below this share of the best
#: column's is never used by a min-cost optimum without SLOs and left out (`_without_hopeless`)
#: (within it, the Charnes-Cooper LP and kept ratio row stay within HiGHS' matrix range)
_HOPELESS_SHARE = 1e-6


# --------------------------------------------------------------------------------------------
# maximum total throughput, Gavel §3.1
# --------------------------------------------------------------------------------------------
class MaxTotalThroughput(ThroughputPolicy):
    """Maximum total effective throughput (Gavel §3.1): ``max sum_m throughput(m, X)``.

    ``normalized=True`` sums ``throughput(m, X) / throughput(m, X^equal)`` instead (comparable
    across models). All coefficients are positive, so the optimum is work-conserving.

    Parameters
    ----------
    jobs : fairalloc.Jobs
        The jobs.
    cluster : fairalloc.Cluster
        The workers of each type.
    normalized : bool, default False
        Sum the throughputs normalised by ``throughput(m, X^equal)``.
    pairs, unconsolidated_throughput, consolidated_capacity
        As for `fairalloc.ThroughputPolicy`.

    Examples
    --------
    >>> import fairalloc as fa
    >>> jobs = fa.Jobs([[40.0, 10.0], [12.0, 4.0]], steps_remaining=[4000.0, 1200.0])
    >>> cluster = fa.Cluster({"v100": 1, "k80": 1})
    >>> r = MaxTotalThroughput(jobs, cluster).solve()
    >>> r.objective, r.x.round(6).tolist()
    (44.0, [[1.0, 0.0], [0.0, 1.0]])
    """

    name = "max_total_throughput"
    _work_conserving_default = False

    def __init__(self, jobs: Jobs, cluster: Cluster, *, normalized: bool = False,
                 pairs: JobPairs | None = None,
                 unconsolidated_throughput: ArrayLike | None = None,
                 consolidated_capacity: ArrayLike | None = None) -> None:
        super().__init__(jobs, cluster, pairs=pairs,
                         unconsolidated_throughput=unconsolidated_throughput,
                         consolidated_capacity=consolidated_capacity)
        self.normalized = as_bool(normalized, "normalized")

    def weights(self) -> np.ndarray:
        """Per-job weight of the objective (1, or ``1 / throughput(m, X^equal)``)."""
        return 1.0 / self.inst.equal_tp if self.normalized else np.ones(self.inst.n)

    def stage(self) -> LinearStage:
        """The policy's LP objective as a linear stage (a symmetry class's row counts once
        per member)."""
        w = self.weights()
        if self.inst.multiplicity is not None:
            w = w * self.inst.multiplicity
        return LinearStage(np.asarray(self.inst.Tm.T @ w).ravel(), "total throughput")

    def _original_stage(self, stage: LevelStage | LinearStage, cmap: ClassMap
                        ) -> LevelStage | LinearStage:
        return self.stage()

    def _first_stages(self, solver: StageSolver, method: str) -> PolicyStages:
        st = self.stage()
        res = solver.run(st, self.name)
        return PolicyStages(st, res, res.value)

    def _cvx_unit(self) -> float:
        return pow2(float(np.max(np.abs(self.stage().g), initial=0.0)))

    def _cvx_objective(self, cvx: dict[str, Any]) -> tuple[Any, list[Any]]:
        return self.weights() @ cvx["tp"], []


def max_total_throughput(
        jobs: Jobs, cluster: Cluster, *, normalized: bool = False,
        pairs: JobPairs | None = None, unconsolidated_throughput: ArrayLike | None = None,
        consolidated_capacity: ArrayLike | None = None, method: str = "auto",
        backend: str | Backend | None = None, work_conserving: bool | None = None,
        gap_tol: float = GAP_TOL, feas_tol: float = FEAS_TOL,
        stage_tol: float = STAGE_TOL, symmetry: bool = True,
        tuning: Tuning | None = None) -> Allocation:
    """Maximise total effective throughput (Gavel §3.1, §4.2).

    Parameters
    ----------
    jobs : fairalloc.Jobs
    cluster : fairalloc.Cluster
    normalized : bool
        Sum ``throughput(m, X) / throughput(m, X^equal)`` instead of raw throughputs.
    pairs, unconsolidated_throughput, consolidated_capacity
        Space sharing and placement sensitivity (see
        `fairalloc.ThroughputPolicy`).
    method, backend, work_conserving, gap_tol, feas_tol, stage_tol
        See `fairalloc.throughput.ThroughputPolicy.solve`.
    symmetry : bool
        Solve over exact symmetry classes of repeated jobs (default ``True``; ``False``: job
        by job); see `fairalloc.throughput.ThroughputPolicy.solve`.

    tuning : fairalloc.throughput.Tuning, optional
        Performance knobs of the solve plans (never changes an answer).

    Returns
    -------
    Allocation
        ``objective``: the (normalised) total throughput.

    Examples
    --------
    >>> import fairalloc as fa
    >>> a = fa.max_total_throughput(fa.Jobs([[40.0, 10.0], [12.0, 4.0]]),
    ...                             fa.Cluster({"v100": 1, "k80": 1}))
    >>> a.x.tolist(), a.objective
    ([[1.0, 0.0], [0.0, 1.0]], 44.0)
    """
    return MaxTotalThroughput(
        jobs, cluster, normalized=normalized,
        pairs=pairs, unconsolidated_throughput=unconsolidated_throughput,
        consolidated_capacity=consolidated_capacity).solve(
        method=method, backend=backend, work_conserving=work_conserving, gap_tol=gap_tol,
        feas_tol=feas_tol, stage_tol=stage_tol, symmetry=symmetry, tuning=tuning)


# --------------------------------------------------------------------------------------------
# minimum cost (and subject to SLOs), Gavel §4.2: linear-fractional, Charnes-Cooper
# --------------------------------------------------------------------------------------------
class MinCost(ThroughputPolicy):
    """Minimum cost, optionally subject to SLOs (Gavel §4.2).

    ``maximise sum_m throughput(m, X) / sum_{m, j} cost_j scale_factor_m X[m, j]`` (throughput
    per unit cost; the cost of a pair column is counted once), subject to the allocation
    constraints and ``throughput(m, X) >= steps_m / slo_m`` for jobs with an SLO.

    Linear-fractional, solved exactly by the Charnes-Cooper transformation ``y = z X``,
    ``z = 1 / cost(X)``: ``max sum_m throughput(m, y)`` s.t. ``cost(y) = 1``, ``M y <= z``,
    ``W y <= workers z``, ``throughput(m, y) >= (steps_m / slo_m) z``, ``y, z >= 0``; then
    ``X = y / z``. The ratio optimum is kept while a second stage maximises total normalised
    throughput (without it, any scaled-down optimum would do). ``prices[j] = p_j z*`` is
    ``d ratio / d workers[j]`` (``p``: the capacity duals of the transformed LP).

    Path steps (``stats.path``): ``charnes-cooper`` (the transformed LP; where it does not
    certify, ``charnes-cooper+simplex`` and ``charnes-cooper+clarabel``, `charnes_cooper_plan`),
    then ``exact-lp`` for the work-conserving stage; a work-conserving stage re-solved with a
    looser kept-ratio slack is listed in ``stats.fallbacks``. SLO rows a solver leaves short
    by its (absolute) tolerance are topped up before the certificate judges the point.

    Parameters
    ----------
    jobs : fairalloc.Jobs
        The jobs (``steps_remaining`` required with ``slo``).
    cluster : fairalloc.Cluster
        The workers of each type.
    cost : array_like, shape (k,), or mapping type -> float
        Positive cost per worker of each type (per unit time).
    slo : array_like, shape (n,), optional
        Each job's SLO in seconds (``inf``: none): its throughput must reach
        ``steps_m / slo_m``.
    pairs, unconsolidated_throughput, consolidated_capacity
        As for `fairalloc.ThroughputPolicy`.

    Examples
    --------
    >>> import fairalloc as fa
    >>> jobs = fa.Jobs([[40.0, 10.0], [12.0, 4.0]], steps_remaining=[4000.0, 1200.0])
    >>> cluster = fa.Cluster({"v100": 1, "k80": 1})
    >>> r = MinCost(jobs, cluster, cost={"v100": 3.0, "k80": 1.0}).solve()
    >>> round(r.objective, 6)                 # steps per unit cost: job 0 on the V100
    13.333333
    """

    name = "min_cost"
    _symmetric = False  # its own Charnes-Cooper solve (not reduced by symmetry)

    def __init__(self, jobs: Jobs, cluster: Cluster, cost: ArrayLike | Mapping[str, float], *,
                 slo: ArrayLike | None = None, pairs: JobPairs | None = None,
                 unconsolidated_throughput: ArrayLike | None = None,
                 consolidated_capacity: ArrayLike | None = None) -> None:
        if isinstance(cost, Mapping):
            missing = [t for t in cluster.types if t not in cost]
            if missing:
                raise InputError(f"cost has no entry for type {missing[0]!r}", argument="cost")
            cost = [cost[t] for t in cluster.types]
        self.cost = as_array(cost, "cost", ndim=1, shape=(len(cluster.types),), positive=True)
        super().__init__(jobs, cluster, pairs=pairs,
                         unconsolidated_throughput=unconsolidated_throughput,
                         consolidated_capacity=consolidated_capacity)
        self.col_cost = self._column_costs()
        if slo is None and pairs is None and unconsolidated_throughput is None \
                and consolidated_capacity is None:
            lean = _without_hopeless(self, jobs)
            if lean is not jobs:
                full = self.inst
                super().__init__(lean, cluster)
                # the normalisers (metric, work-conserving objective) are the jobs' own
                self.inst.equal_tp, self.inst.fastest_tp = full.equal_tp, full.fastest_tp
                self.col_cost = self._column_costs()
        inst = self.inst
        _check_spread(self.cost, inst.col_type)
        self.slo_rate = np.zeros(inst.n)
        if slo is not None:
            steps = _steps(jobs, "min_cost with slo")
            try:
                slo_arr = np.array(slo, dtype=float, copy=True)
            except (TypeError, ValueError, OverflowError) as exc:
                raise InputError(f"slo must be a numeric array of seconds ({exc})",
                                 argument="slo") from None
            if slo_arr.shape != (inst.n,):
                raise InputError(f"slo must have shape ({inst.n},), got {slo_arr.shape}",
                                 argument="slo")
            bad = np.isnan(slo_arr) | (slo_arr <= 0)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise InputError(f"slo[{i}] is {slo_arr[i]}; SLOs must be positive seconds "
                                 "(inf: none)", argument="slo", index=(i,))
            with np.errstate(over="ignore"):
                self.slo_rate = np.where(np.isinf(slo_arr), 0.0, steps / slo_arr)
            if not np.isfinite(self.slo_rate).all():
                i = int(np.flatnonzero(~np.isfinite(self.slo_rate))[0])
                raise InputError(f"slo[{i}] = {slo_arr[i]:g} s is too short to represent the "
                                 f"rate steps / slo", argument="slo", index=(i,))
            short = self.slo_rate > inst.fastest_tp * (1 + _SLO_ROUNDING)
            if short.any():
                i = int(np.flatnonzero(short)[0])
                raise InfeasibleError(
                    f"slo[{i}] is infeasible: job {jobs.ids[i]!r} needs {self.slo_rate[i]:g} "
                    f"steps/s but runs at most {inst.fastest_tp[i]:g} steps/s",
                    status="infeasible")
        self.has_slo = bool((self.slo_rate > 0).any())

    def _extra_rows(self) -> tuple[sp.csr_matrix, np.ndarray] | None:
        if not self.has_slo:
            return None
        rows = np.flatnonzero(self.slo_rate > 0)
        return sp.csr_matrix(self.inst.Tm[rows]), self.slo_rate[rows]

    def _cvx_objective(self, cvx: dict[str, Any]) -> tuple[Any, list[Any]]:
        raise InputError("min_cost is linear-fractional; it cannot be composed with cvxpy "
                         "constraints or terms (use slo= or method='highs')",
                         argument="constraint")

    def ratio(self, xcol: np.ndarray) -> float:
        """Throughput per unit cost of column allocation ``xcol``."""
        cost = float(self.col_cost @ xcol)
        return float(self.inst.throughput(xcol).sum()) / cost if cost > 0 else 0.0

    def _hopeless(self) -> np.ndarray:
        """The columns left in the LP (a job's best) whose throughput per unit cost is below
        ``_HOPELESS_SHARE`` of the best column's, without SLOs (otherwise none): no ratio
        optimum uses them (`_without_hopeless`: its proof needs only packing rows)."""
        if self.has_slo or self.inst.E == 0:
            return np.zeros(0, dtype=int)
        rho = np.asarray(self.inst.Tm.sum(axis=0)).ravel() / self.col_cost
        return np.flatnonzero(rho < _HOPELESS_SHARE * float(np.max(rho)))

    def _column_costs(self) -> np.ndarray:
        inst = self.inst
        with np.errstate(over="ignore"):
            col_cost = self.cost[inst.col_type] * inst.col_workers
            total = float(np.sum(col_cost))
        if not np.isfinite(total):
            i = int(np.argmax(self.cost))
            raise InputError(f"cost[{i}] = {self.cost[i]:g} is too large to be represented: the "
                             "cost of the columns overflows (use other units)",
                             argument="cost", index=(i,))
        return col_cost

    def cc_units(self) -> np.ndarray:
        """The column units of the Charnes-Cooper LP (``y = unit * y'``, powers of two).

        Without SLOs, each column ``j`` at ``1 / cost_j``, so that the cost row ``cost(y) = 1``
        is at unit scale whatever the spread of the costs, and ``z`` at ``1 / cost`` of the
        column with the most throughput per unit cost (``z = 1 / cost(x)`` at an optimum,
        which uses only such columns). One unit for every column (the median cost) put a type
        ``1e10`` times dearer at ``1e10`` in the cost row: scaling that row to unit pushed the
        other columns' costs below HiGHS' ``small_matrix_value`` (1e-9), which dropped them,
        and the LP was "unbounded" (fuzz seed 2626). With a unit per column, a dear column's
        entries elsewhere are the small ones (``1 / cost_j``); where HiGHS drops one, the
        column is still held by the cost row, and the certificate on the original LP judges.

        With SLOs, every column at ``1 / pow2(median cost)``: there the SLO rows (``tp_j /
        cost_j`` per column) and the time rows span the costs' spread, and per-column units
        certified fewer points (a seeded sweep of costs 1e-6..1e1: 149 of 150 against 150).
        """
        cost = self.col_cost
        if self.has_slo:
            return np.full(self.inst.E + 1, 1.0 / pow2(float(np.median(cost))))
        tp = np.asarray(self.inst.Tm.sum(axis=0)).ravel()
        best = float(cost[int(np.argmax(tp / cost))])
        return 1.0 / np.array([pow2(float(v)) for v in np.r_[cost, best]])

    def _cc_program(self) -> tuple[LinearProgram, RowLayout]:
        inst = self.inst
        A, lo, up, layout = inst.base_rows()
        rhs = up  # rows A y - rhs z <= 0
        A = sp.hstack([A, sp.csr_matrix(-rhs[:, None])], format="csr")
        blocks = [A, sp.csr_matrix(np.r_[self.col_cost, 0.0][None, :])]
        lows = [np.full(A.shape[0], -np.inf), np.array([1.0])]
        ups = [np.zeros(A.shape[0]), np.array([1.0])]
        layout = layout.extended("cost", 1)
        if self.has_slo:
            B, rate = self._extra_rows()  # type: ignore[misc]
            blocks.append(sp.hstack([B, sp.csr_matrix(-rate[:, None])], format="csr"))
            lows.append(np.zeros(rate.size))
            ups.append(np.full(rate.size, np.inf))
            layout = layout.extended("policy", rate.size)
        c = -np.r_[np.asarray(inst.Tm.sum(axis=0)).ravel(), 0.0]
        lp = LinearProgram.build(c, sp.vstack(blocks, format="csr"), np.concatenate(lows),
                                 np.concatenate(ups), 0.0, np.inf)
        return lp, layout

    def _first_stages(self, solver: StageSolver, method: str) -> PolicyStages:
        inst = self.inst
        lp, layout = self._cc_program()
        found = run_plan(charnes_cooper_plan(), _CCProgram(self, solver, lp, layout),
                         solver.log, what="minimum-cost (Charnes-Cooper)",
                         backend=solver.backend.name)
        pt = found.result
        assert isinstance(pt, _CCPoint)
        xcol, cc = pt.xcol, pt.cc
        r = self.ratio(xcol)
        st = LinearStage(np.asarray(inst.Tm.sum(axis=0)).ravel() - r * self.col_cost,
                         "cost ratio")
        res = StageResult(lp, np.r_[xcol, 0.0], cc.duals, 0.0, found.certificate,
                          pt.iterations, layout)
        return PolicyStages(st, res, r, context=cc)

    def _widest(self, xcol: np.ndarray) -> np.ndarray:
        """The ratio-optimal ``xcol`` scaled up by the largest factor its time and capacity
        rows allow: the work-conserving stage's anchor. The ratio is scale-invariant, so the
        Charnes-Cooper point is optimal at any scale and its own is arbitrary (0.78 of a job's
        time where 1 is free); kept rows a solver meets only to its tolerance are repaired by
        moving its point towards the anchor (`StageSolver.toward_anchor`), which must not drag
        it back to that arbitrary scale. Scaling up keeps the ratio, the kept row
        (``s (tp - r cost) >= s * (-slack)``) and the SLO rows (rates grow with ``s``)."""
        A, _, up, _ = self.inst.base_rows()
        ax = A @ xcol
        used = ax > 0
        if not used.any():
            return xcol
        s = max(1.0, float(np.min(up[used] / ax[used])) * (1.0 - _WIDEST_ROUNDING))
        wide = xcol * s
        return wide if np.all(A @ wide <= up) and np.all(wide <= 1.0) else xcol

    def _meet_slos(self, xcol: np.ndarray, gap_tol: float = GAP_TOL) -> np.ndarray:
        """Top up jobs whose SLO row the solver left short within its absolute tolerance (a
        rate 1e-11 of the job's throughput is 'met' by x = 0): the missing time goes on the
        job's best column where time and workers are free; the certificate decides.

        A full type (the work-conserving stage fills every type) gives up to
        ``TOP_UP_GAP_SHARE * gap_tol`` of its columns' time, as a level stage without kept
        rows does (`StageSolver.top_up`): a job needing 3.9e-8 of a type (its SLO row's
        right-hand side below the solver's tolerance at unit scale) got nothing where the
        shrink stopped at ``TOP_UP_SHRINK`` (1e-8), and no strategy certified the stage. Every
        objective of min cost has non-negative coefficients, so the shrink costs at most that
        share of the value; the ratio row loses nothing on the ratio-optimal columns."""
        if not self.has_slo:
            return xcol
        need = np.where(self.slo_rate > 0, self.slo_rate - self.inst.throughput(xcol), 0.0)
        shrink = max(TOP_UP_SHRINK, TOP_UP_GAP_SHARE * gap_tol)
        return top_up_rows(self.inst, self.inst.Tm, need, self.slo_rate, xcol, shrink)

    def _certify(self, xcol: np.ndarray, solver: StageSolver, cc: _CharnesCooper
                 ) -> Certificate:
        z = 1.0 / float(self.col_cost @ xcol)
        return lp_certificate(cc.lp, np.r_[xcol * z, z], cc.duals, maximize=True,
                              gap_tol=solver.gap_tol, feas_tol=solver.feas_tol)

    def solve(self, *, method: str = "auto", backend: str | Backend | None = None,
              work_conserving: bool | None = None, gap_tol: float = GAP_TOL,
              feas_tol: float = FEAS_TOL, stage_tol: float = STAGE_TOL,
              symmetry: bool = True, tuning: Tuning | None = None) -> Allocation:
        """Solve the Charnes-Cooper LP (and the work-conserving stage) and certify the ratio.

        Parameters as for `fairalloc.throughput.ThroughputPolicy.solve`,
        except that ``method`` may not be ``"cvxpy"`` (the program is linear-fractional; ``"auto"``
        and ``"fast"`` mean ``"highs"``) and ``work_conserving`` defaults to on.
        Min cost is never reduced by symmetry (``symmetry`` is validated only).
        """
        if self.composed or method == "cvxpy":
            raise InputError("min_cost is linear-fractional; it cannot be composed in cvxpy "
                             "(use method='highs')", argument="method")
        t0 = time.perf_counter()
        wc = True if work_conserving is None else as_bool(work_conserving, "work_conserving")
        as_bool(symmetry, "symmetry")
        gap_tol = as_tolerance(gap_tol, "gap_tol")
        feas_tol = as_tolerance(feas_tol, "feas_tol")
        stage_tol = min(as_tolerance(stage_tol, "stage_tol"), STAGE_SHARE_OF_GAP * gap_tol)
        as_option(method, "method", THROUGHPUT_METHODS)
        spec = "highs" if backend is None else backend
        tuning = as_tuning(tuning)
        be = backend_for(spec, self.inst.E, tuning)
        solver = StageSolver(self.inst, be, stage_tol=stage_tol, gap_tol=gap_tol,
                             feas_tol=feas_tol, extra_rows=self._extra_rows(),
                             backend_spec=spec,
                             meet_extra_rows=lambda x: self._meet_slos(x, gap_tol),
                             tuning=tuning)
        stages = self._first_stages(solver, "highs")
        st, res, cc = stages.stage, stages.result, stages.context
        certs = [res.cert]
        xcol = res.x[: self.inst.E]
        if wc:
            assert isinstance(st, LinearStage)  # min cost's first stage is linear (C-C)
            # keep the ratio: tp(x) - r cost(x) >= -slack (linear in x); the slack is
            # relative to the throughput of the anchor (the optimum at its widest scale, units
            # of steps/s), the row at unit scale (the plan: `kept_ratio_plan`). At the
            # Charnes-Cooper point's own scale (1e-9 of a job's time where its SLO is all it
            # needs) the slack fell below the rounding of ``g`` (tp - r cost of a ratio-optimal
            # column: an ulp of tp), and the anchor itself broke the row
            solver.anchor = self._widest(xcol)
            tp_opt = float(self.inst.throughput(solver.anchor).sum())
            g = st.g
            hopeless = self._hopeless()
            if hopeless.size:  # held at 0 (never in a ratio optimum; `_without_hopeless`):
                # their ``-r cost_j`` (1e19 beside 1e3) put the others below HiGHS' range
                solver.fixed_columns = (hopeless, np.zeros(hopeless.size))
                g = g.copy()
                g[hopeless] = 0.0
            gam = pow2(float(np.max(np.abs(g), initial=0.0)))
            row = sp.csr_matrix(g[None, :] / gam)
            ctx = KeptRatio(solver, LinearStage(self._wc_objective()), row,
                            tp_opt / gam, stage_tol, STAGE_SHARE_OF_GAP * gap_tol)
            wres = run_plan(kept_ratio_plan(), ctx, solver.log, what="min-cost work-conserving",
                            backend=be.name).result
            assert isinstance(wres, StageResult)
            certs.append(wres.cert)
            xcol = wres.x[: self.inst.E]
        cert = self._certify(xcol, solver, cc).check(backend=be.name)
        certs[0] = cert
        prices = np.maximum(-cc.rows.take(cc.duals, "capacity"), 0.0) * cc.z
        stats = SolveStats.from_log(solver.log, method="highs",
                                    seconds=time.perf_counter() - t0)
        return self._result(xcol, prices, self.ratio(xcol), cert, tuple(certs), stats)


def _check_spread(cost: np.ndarray, col_type: np.ndarray) -> None:
    """`fairalloc.InputError` naming the first type with columns whose cost is more than
    ``1 / _MIN_RATIO`` times the cheapest such type's (as `fairalloc.Jobs` bounds
    throughputs): the Charnes-Cooper LP's reduced costs (``r* cost_j``) overflow. Types whose
    columns are all left out as hopeless (`_without_hopeless`) are not in any LP."""
    used = np.zeros(cost.size, dtype=bool)
    used[col_type] = True
    low = float(np.min(cost[used], initial=np.inf))
    dear = used & (cost * _MIN_RATIO > low)
    if dear.any():
        i = int(np.flatnonzero(dear)[0])
        raise InputError(f"cost[{i}] = {cost[i]:g} is too large next to the cheapest cost "
                         f"{low:g} to be represented (ratio above {1 / _MIN_RATIO:g}); use "
                         "other units", argument="cost", index=(i,))


def _without_hopeless(pol: MinCost, jobs: Jobs) -> Jobs:
    """``jobs`` without the (job, type) columns whose throughput per unit cost is below
    ``_HOPELESS_SHARE`` of the best column's (each job keeps its own best column); ``jobs``
    itself where there is none. Only without SLOs and space sharing (one member per column).

    Proof that the optimum is unchanged. Let ``rho_j = tp_j / cost_j`` and ``rho* = max_j
    rho_j``. Any one column alone at a small scale is feasible, so the optimal ratio is
    ``r* >= rho*``; and a ratio of sums is at most the largest ratio (the mediant), so
    ``r* = rho*``. At an optimum ``x``, ``sum_j (tp_j - r* cost_j) x_j = 0`` with every term
    ``<= 0``: only columns with ``rho_j = r*`` are used. A column with ``rho_j < rho*`` is
    never used, and dropping it leaves the feasible set's optimal points (the constraints are
    packing rows: ``x_j = 0`` stays feasible). Its dual row holds with any certificate's
    duals: ``tp_j - r* cost_j - A_j^T p < 0`` for capacity duals ``p >= 0``. The work-conserving
    stage keeps the ratio within a slack ``s`` (relative to the optimum's throughput); such a
    column could carry at most ``s tp / (r* cost_j - tp_j)``, below ``s / (1 / _HOPELESS_SHARE
    - 1)`` of it, so the stage's answer moves by less than its own tolerance.

    Such columns made the Charnes-Cooper LP and the kept ratio row span more than floats (a
    type 1e10 dearer put ``r* cost_j`` 1e19 beside entries of 1e3; fuzz seed 2626)."""
    inst = pol.inst
    if inst.E == 0:
        return jobs
    rho = np.asarray(inst.Tm.sum(axis=0)).ravel() / pol.col_cost
    job_of = np.zeros(inst.E, dtype=int)
    job_of[inst.mem_col] = inst.mem_job
    best = np.zeros(inst.n)
    np.maximum.at(best, job_of, rho)
    hopeless = (rho < _HOPELESS_SHARE * float(np.max(rho))) & (rho < best[job_of])
    if not hopeless.any():
        return jobs
    tp = np.array(jobs.throughput, dtype=float, copy=True)
    tp[job_of[hopeless], inst.col_type[hopeless]] = 0.0
    return Jobs(tp, scale_factor=jobs.scale_factor, weight=jobs.weight, ids=jobs.ids,
                steps_remaining=jobs.steps_remaining, elapsed=jobs.elapsed,
                isolated_elapsed=jobs.isolated_elapsed)


#: path step: the work-conserving stage of min cost with the kept ratio row at ``stage_tol``
WORK_CONSERVING = "work-conserving"
#: path step: ... again with the row's slack at the solver's tolerance (``FEAS_TOL``, at most
#: a tenth of ``gap_tol``, so the ratio stays certified)
RATIO_SLACK = "work-conserving+ratio-slack"


@dataclass(frozen=True, eq=False)
class KeptRatio:
    """The context of min cost's work-conserving stage: its stage solver (the first stage's
    anchor set), the stage, the kept ratio row ``g x / gam`` (``tp(x) - r cost(x)``, unit
    scale), ``scale`` (the optimum's throughput over ``gam``: the row's slack is ``keep *
    scale``), ``stage_tol`` and ``share`` (the largest slack that keeps the ratio certified,
    a share of ``gap_tol``)."""

    solver: StageSolver
    stage: LinearStage
    row: sp.csr_matrix
    scale: float
    stage_tol: float
    share: float


@dataclass(frozen=True)
class _Missed:
    """A stage whose plan certified no point: its best certificate (the driver hands over on
    it, and raises ``CertificateError`` with it when no strategy is left)."""

    cert: Certificate


def _keep_at(slack: Any) -> Any:
    """A strategy's ``solve``: the work-conserving stage with the ratio row's slack
    ``slack(ctx)``."""

    def solve(ctx: KeptRatio) -> StageResult | _Missed:
        ctx.solver.fixed = [(ctx.row, np.array([-slack(ctx) * ctx.scale]))]
        try:
            return ctx.solver.run(ctx.stage, "work-conserving")
        except CertificateError as exc:
            if not isinstance(exc.certificate, Certificate):
                raise
            return _Missed(exc.certificate)

    return solve


def _loose_slack(ctx: KeptRatio) -> float:
    return min(ctx.share, max(ctx.stage_tol, FEAS_TOL))


def _loosens(ctx: KeptRatio) -> bool:
    """Whether a slack at the solver's tolerance is looser than ``stage_tol`` and still
    within the certified share."""
    return ctx.stage_tol < ctx.share and ctx.stage_tol < FEAS_TOL


def _stage_cert(ctx: KeptRatio, out: StageResult | _Missed) -> Certificate:
    return out.cert


def kept_ratio_plan() -> tuple[Strategy[KeptRatio, Any], ...]:
    """The plan of min cost's work-conserving stage (the ratio kept by one linear row).

    The row is a difference of nearly equal terms at the optimum, so a solver may violate it
    by its own (absolute) tolerance by more than the certificate at ``stage_tol`` allows:
    ``work-conserving`` (slack ``stage_tol``) hands over to ``work-conserving+ratio-slack``
    (slack at the solver's tolerance, at most a tenth of ``gap_tol``), which applies when that
    slack is looser. Each ends in the stage plan's exact tail.

    Returns
    -------
    tuple of fairalloc.plan.Strategy

    Examples
    --------
    >>> from fairalloc.plan import describe
    >>> describe(kept_ratio_plan())
    ('work-conserving!', 'work-conserving+ratio-slack!')
    """
    return (Strategy(WORK_CONSERVING, _keep_at(lambda ctx: ctx.stage_tol), _stage_cert,
                     exact=True),
            Strategy(RATIO_SLACK, _keep_at(_loose_slack), _stage_cert, applies=_loosens,
                     exact=True))


@dataclass(frozen=True)
class _CharnesCooper:
    """The Charnes-Cooper LP of one min-cost solve and its solution (passed, never stored)."""

    lp: LinearProgram
    duals: np.ndarray
    z: float
    rows: RowLayout


#: path step: the Charnes-Cooper LP again by HiGHS' dual simplex without presolve, every row
#: scaled to unit (where fairalloc chose HiGHS): HiGHS may end a degenerate optimum with a
#: row dual of the wrong sign by its tolerance in its own units, e.g. -3e-6 on an SLO row met
#: with equality by a job as good as the chosen ones, which the certificate's dual residual
#: rightly refuses
CC_SIMPLEX = "charnes-cooper+simplex"
#: path step: ... by Clarabel's interior point (where fairalloc chose HiGHS)
CC_CLARABEL = "charnes-cooper+clarabel"


@dataclass(frozen=True, eq=False)
class _CCProgram:
    """The context of min cost's Charnes-Cooper plan: the policy, its stage solver, the LP and
    its row layout."""

    policy: MinCost
    solver: StageSolver
    lp: LinearProgram
    layout: RowLayout


@dataclass(frozen=True, eq=False)
class _CCPoint:
    """One strategy's answer: the allocation (SLO rows topped up), the LP's solution and the
    certificate on the original Charnes-Cooper LP."""

    xcol: np.ndarray
    cc: _CharnesCooper
    iterations: int
    cert: Certificate


def _cc_solve(backend: Any, **scaling: Any) -> Any:
    """A strategy's ``solve``: the Charnes-Cooper LP by ``backend(ctx)``, the point mapped
    back to ``x = y / z``, its SLO rows topped up (`MinCost._meet_slos`) and certified."""

    def solve(ctx: _CCProgram) -> _CCPoint:
        pol, be = ctx.policy, backend(ctx)
        sol = scaled_solve(ctx.lp, be, "minimum-cost (Charnes-Cooper)",
                           col_unit=pol.cc_units(), **scaling)
        ctx.solver.used(sol)
        assert sol.x is not None and sol.row_duals is not None
        z = float(sol.x[-1])
        if not z > 0:
            raise SolverError("minimum cost: Charnes-Cooper scale z = 0",
                              backend=be.name, raw_status="degenerate")
        cc = _CharnesCooper(ctx.lp, sol.row_duals, z, ctx.layout)
        xcol = pol._meet_slos(pol.inst.repair(sol.x[: pol.inst.E] / z), ctx.solver.gap_tol)
        return _CCPoint(xcol, cc, sol.iterations, pol._certify(xcol, ctx.solver, cc))

    return solve


def _cc_chosen(ctx: _CCProgram) -> bool:
    return bool(ctx.solver.backend_spec == "highs")


def charnes_cooper_plan() -> tuple[Strategy[Any, Any], ...]:
    """The plan of min cost's Charnes-Cooper LP (its first stage).

    ``charnes-cooper`` (the stage solver's backend) hands over, where fairalloc chose HiGHS,
    to ``charnes-cooper+simplex`` (HiGHS' dual simplex, no presolve, every row at unit scale)
    and ``charnes-cooper+clarabel`` (Clarabel's interior point). Every point is certified on
    the original LP; two exact strategies must agree that it is infeasible.

    Returns
    -------
    tuple of fairalloc.plan.Strategy

    Examples
    --------
    >>> from fairalloc.plan import describe
    >>> describe(charnes_cooper_plan())
    ('charnes-cooper!', 'charnes-cooper+simplex!', 'charnes-cooper+clarabel!')
    """
    def cert(ctx: _CCProgram, pt: _CCPoint) -> Certificate:
        return pt.cert

    return (Strategy(CHARNES_COOPER, _cc_solve(lambda ctx: ctx.solver.backend), cert,
                     exact=True),
            Strategy(CC_SIMPLEX, _cc_solve(
                lambda ctx: get_backend("highs", need="lp", solver="simplex", presolve=False),
                row_band=0), cert, applies=_cc_chosen, exact=True),
            Strategy(CC_CLARABEL, _cc_solve(lambda ctx: get_backend("clarabel", need="lp")),
                     cert, applies=_cc_chosen, exact=True))


def min_cost(
        jobs: Jobs, cluster: Cluster, cost: ArrayLike | Mapping[str, float], *,
        slo: ArrayLike | None = None,
        pairs: JobPairs | None = None, unconsolidated_throughput: ArrayLike | None = None,
        consolidated_capacity: ArrayLike | None = None, method: str = "auto",
        backend: str | Backend | None = None, work_conserving: bool | None = None,
        gap_tol: float = GAP_TOL, feas_tol: float = FEAS_TOL,
        stage_tol: float = STAGE_TOL, tuning: Tuning | None = None) -> Allocation:
    """Minimum cost (throughput per unit cost), optionally subject to SLOs (Gavel §4.2).

    Parameters
    ----------
    jobs : fairalloc.Jobs
    cluster : fairalloc.Cluster
    cost : array_like (k,) or mapping type -> cost
        Cost per worker per unit time of each type (positive).
    slo : array_like (n,), optional
        Seconds within which each job must finish (``inf``: no SLO); needs
        ``jobs.steps_remaining``. Infeasible SLOs raise
        `fairalloc.InfeasibleError`.
    pairs, unconsolidated_throughput, consolidated_capacity
        Space sharing and placement sensitivity (see
        `fairalloc.ThroughputPolicy`).
    method, backend, work_conserving, gap_tol, feas_tol, stage_tol
        See `fairalloc.throughput.MinCost.solve`.

    tuning : fairalloc.throughput.Tuning, optional
        Performance knobs of the solve plans (never changes an answer).

    Returns
    -------
    Allocation
        ``objective``: total throughput per unit cost.

    Examples
    --------
    The K80 gives more steps per dollar:

    >>> import fairalloc as fa
    >>> a = fa.min_cost(fa.Jobs([[40.0, 10.0]]), fa.Cluster({"v100": 1, "k80": 1}),
    ...                 cost={"v100": 3.0, "k80": 0.5})
    >>> a.x.round(6).tolist(), round(a.objective, 6)
    ([[0.0, 1.0]], 20.0)
    """
    return MinCost(
        jobs, cluster, cost, slo=slo,
        pairs=pairs, unconsolidated_throughput=unconsolidated_throughput,
        consolidated_capacity=consolidated_capacity).solve(
        method=method, backend=backend, work_conserving=work_conserving, gap_tol=gap_tol,
        feas_tol=feas_tol, stage_tol=stage_tol, tuning=tuning)
