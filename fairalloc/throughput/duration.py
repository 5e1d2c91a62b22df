"""Duration-based policies: minimum makespan and finish-time fairness (Gavel §4.1).

Both are level programs over ``steps / throughput``: makespan as one LP through
``theta = 1 / makespan``, finish-time fairness (Themis) as a Dinkelbach sequence of level
LPs (each solved by the structured level solver with ``method="fast"``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from .._sparse import scale_rows
from .._validation import as_positive_int
from ..backends import Backend
from ..data import Cluster, JobPairs, Jobs
from ..errors import InputError, SolverError
from ..plan import Decline, Strategy, run_nested, run_plan
from ..results import Certificate
from ..tolerances import FEAS_TOL, GAP_TOL
from . import structured as _structured
from .composed import finish_time_objective, level_objective, negated, reciprocal
from .policy import (
    STAGE_TOL,
    TINY,
    Allocation,
    PolicyStages,
    ThroughputPolicy,
    _check_rates,
    _steps,
    isolated_split,
)
from .programs import LevelStage, LinearStage, StageResult
from .stages import EXACT_LP, StageSolver
from .strategies import StageContext
from .structured import STRUCTURED_LEVEL, fast_level, level_strategy
from .structured.common import (
    DEGENERATE,
    MANY_TYPES,
    NO_ESTIMATE,
    PROVISIONAL,
    NewtonSeed,
)
from .structured.common import structured_applies as _structured_applies
from .tuning import Tuning
from .wc_stage import WORK_CONSERVING

__all__ = ["FinishTimeFairness", "MinMakespan", "certified_stage_plan", "finish_time_fairness",
           "lower_bound_duals", "min_makespan", "provisional_stage_plan"]

#: default ``max_iterations`` of finish-time fairness (PERFORMANCE knob: Dinkelbach steps
#: before SolverError; the sequence converges superlinearly, in a handful)
DINKELBACH_MAX_ITERATIONS = 50
#: ACCURACY: the Dinkelbach sequence stops when F(R) <= DINKELBACH_STOP * |R|
DINKELBACH_STOP = 1e-9
#: PERFORMANCE knob: on the structured path the first stage jumps to R_lb (1 + this), not to
#: R_lb itself: there every job sits exactly at R_lb (level 0), and the work-conserving stage
#: kept at the last stage's allocation then found degenerate prices (Gavel-drawn 2,048 jobs:
#: 1,411 jobs blocking, the whole LP, 3x slower). Measured on Gavel-drawn rounds: 1e-6 takes
#: three stages at 2,048 jobs (five before) and keeps the work-conserving stage's single
#: master at 8,192; 1e-5 and 3e-5 gave it two masters there (+25 %), 1e-4 a fourth stage.
STRUCTURED_JUMP_ABOVE = 1e-6
FTF = "finish-time fairness"  # the program's name in the log and in errors
DINKELBACH = "dinkelbach"  # path step: one Dinkelbach iteration (its level stage follows)
# (whether each stage's Newton search starts from the previous one's end point, and whether
# intermediate stages skip the whole LP's certificate: ``tuning.dinkelbach_seed``,
# ``tuning.dinkelbach_provisional``)
#: PERFORMANCE knob: consecutive Dinkelbach stages handed to the whole LP by the structured
#: solver after which the rest of the sequence goes there directly. Not 1: the first stage
#: (at the isolated split, far from the optimum) often has no Newton estimate while the later
#: ones do (measured: 4,096 jobs x 30 types, iteration 1 handed over, 2 and 3 structured)
DINKELBACH_HAND_OVERS = 2
#: path step: the optimum taken as the closed-form lower bound ``R_lb`` and proved by the
#: work-conserving stage at it (`FinishTimeFairness.closed_form_plan`)
CLOSED_FORM = "ftf-closed-form"
#: path step of the plan's other strategy: the Dinkelbach sequence, then the work-conserving
#: stage (not a step itself: its steps are the path's)
DINKELBACH_SEQUENCE = "dinkelbach-sequence"
#: PERFORMANCE knob: relative room by which the floors at R_lb may exceed the workers in
#: `FinishTimeFairness.closed_form_fits` (a gate of which strategy runs first, never of an
#: answer): rounding only; a job alone at R_lb needs exactly its fastest column
CLOSED_FORM_ROOM = 1e-9


def _stage_cert(ctx: None, res: StageResult) -> Certificate:
    return res.cert


def provisional_stage_plan(provisional: Callable[[None], StageResult],
                           whole_lp: Callable[[None], StageResult]
                           ) -> tuple[Strategy[None, StageResult], ...]:
    """The plan of an intermediate Dinkelbach stage with ``tuning.dinkelbach_provisional``:
    ``structured-level-provisional`` (the structured level solver's master point without a
    certificate: a `Strategy` with ``provisional=True``; it only chooses the next point, and
    the sequence's last stage is certified by `certified_stage_plan`), then ``exact-lp`` (the
    stage's whole-LP plan, not a step itself: its steps are the path's).

    Examples
    --------
    >>> from fairalloc.plan import describe
    >>> describe(provisional_stage_plan(print, print))
    ('structured-level-provisional', 'exact-lp!')
    """
    return (Strategy(STRUCTURED_LEVEL + PROVISIONAL, provisional, _stage_cert,
                     provisional=True),
            Strategy(EXACT_LP, whole_lp, _stage_cert, exact=True, step=False))


def certified_stage_plan(own_point: Callable[[None], StageResult],
                         again: Callable[[None], StageResult]
                         ) -> tuple[Strategy[None, StageResult], ...]:
    """The plan that certifies the last stage of a Dinkelbach sequence solved provisionally:
    ``structured-level-provisional`` (the provisional result at its own point and duals,
    recorded as the step ``structured-level`` when the whole LP's certificate passes there),
    then ``structured-level`` (the stage solved again by its stage plan, with its
    certificate). Neither is a step itself: the second runs a stage plan of its own.

    Examples
    --------
    >>> from fairalloc.plan import describe
    >>> describe(certified_stage_plan(print, print))
    ('structured-level-provisional', 'structured-level!')
    """
    return (Strategy(STRUCTURED_LEVEL + PROVISIONAL, own_point, _stage_cert, step=False),
            Strategy(STRUCTURED_LEVEL, again, _stage_cert, exact=True, step=False))


def _first_cert(ctx: None, out: tuple[Any, ...]) -> Certificate:
    return out[0].result.cert  # (the policy stage's: a degraded work-conserving stage is
    # a documented outcome of either strategy, reported in stage_certificates)


def closed_form_plan(closed_form: Callable[[None], Any], sequence: Callable[[None], Any],
                     fits: Callable[[None], bool] | None = None
                     ) -> tuple[Strategy[None, Any], ...]:
    """The plan of finish-time fairness with its work-conserving stage: ``ftf-closed-form``
    (the optimum taken as the closed-form lower bound ``R_lb = max_m rho_m(the job's fastest
    column all the time)`` and the work-conserving stage solved with every ``rho_m <= R_lb``:
    a feasible point proves ``R* <= R_lb``, so ``R* = R_lb``; the lower bound's certificate is
    one level row and its job's time row, in closed form; it declines where ``R_lb`` is not
    attained), then ``dinkelbach-sequence`` (the Dinkelbach sequence and the work-conserving
    stage; not a step itself: its steps are the path's). ``fits``: whether the closed form is
    tried at all (`FinishTimeFairness.closed_form_fits`; default always).

    Examples
    --------
    >>> from fairalloc.plan import describe
    >>> describe(closed_form_plan(print, print))
    ('ftf-closed-form', 'dinkelbach-sequence!')
    """
    first = Strategy(CLOSED_FORM, closed_form, _first_cert)
    return ((first if fits is None else dataclasses.replace(first, applies=fits)),
            Strategy(DINKELBACH_SEQUENCE, sequence, _first_cert, exact=True, step=False))


def lower_bound_duals(coef: np.ndarray) -> tuple[float, float]:
    """The certificate of ``R* >= R_lb`` (``ftf-closed-form``): the duals of the Dinkelbach
    level row and the time row of the job ``m*`` that sets ``R_lb``, whose level row has the
    coefficients ``coef`` (in any positive normalisation of that row): 1 on the level row and
    minus its largest coefficient on the time row, every other dual 0 (``m*`` cannot beat its
    fastest column: the dual bound is ``b_m* / q_m* - max coef = 0`` at ``R_lb``).

    Examples
    --------
    >>> lower_bound_duals(np.array([2.0, 0.5, 0.0]))
    (1.0, -2.0)
    """
    return 1.0, -float(np.max(coef, initial=0.0))


def structured_level_applies(solver: StageSolver) -> bool:
    """Whether the level stages of ``solver`` have the structure of the structured solvers
    (no kept rows, only time and capacity rows besides the level)."""
    return _structured_applies(solver, kept=0)


def _gave_up(fallbacks: tuple[str, ...]) -> bool:
    """Whether the structured level solver handed its stage to the whole LP (one of the
    hand-overs ``fallbacks`` recorded during its call)."""
    return any(f.startswith((f"{STRUCTURED_LEVEL}->", f"{STRUCTURED_LEVEL}{PROVISIONAL}->"))
               for f in fallbacks)


# --------------------------------------------------------------------------------------------
# minimum makespan, Gavel §4.1
# --------------------------------------------------------------------------------------------
class MinMakespan(ThroughputPolicy):
    """Minimum makespan (Gavel §4.1): ``min_X max_m steps_m / throughput(m, X)``.

    Exact as one LP through the substitution ``theta = 1 / makespan``:
    ``max theta`` s.t. ``throughput(m, X) / steps_m >= theta`` (no bisection). ``objective``
    is the makespan in seconds; ``prices`` are ``d theta / d workers``. The LP has the
    structure of a max-min level (rows ``T_m / steps_m``): from `Tuning.structured_min_jobs`
    jobs it is solved by the structured level solver (path step ``structured-level``:
    capacity prices, each job's best column in closed form), certified on the whole LP, which
    stays the plan's exact tail (``exact-lp``).

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
    >>> r = MinMakespan(jobs, cluster).solve()
    >>> round(r.objective, 6), r.certificate.ok
    (154.545455, True)
    """

    name = "min_makespan"
    _per_job = ("steps",)
    _job_fields = ("steps_remaining",)

    def __init__(self, jobs: Jobs, cluster: Cluster, *, pairs: JobPairs | None = None,
                 unconsolidated_throughput: ArrayLike | None = None,
                 consolidated_capacity: ArrayLike | None = None) -> None:
        super().__init__(jobs, cluster, pairs=pairs,
                         unconsolidated_throughput=unconsolidated_throughput,
                         consolidated_capacity=consolidated_capacity)
        self.steps = _steps(jobs, "min_makespan")
        best = np.max(jobs.throughput, axis=1, initial=0.0)
        with np.errstate(over="ignore", divide="ignore"):
            over = (best > 0) & ~np.isfinite(self.steps / best)
        if over.any():  # (even alone on its fastest type the makespan is no float)
            i = int(np.flatnonzero(over)[0])
            raise InputError(f"steps_remaining[{i}] is {self.steps[i]:g}: its time at its best "
                             f"throughput {best[i]:g} overflows a float",
                             argument="steps_remaining", index=(i,))

    def level_stage(self) -> LevelStage:
        inst = self.inst
        C = sp.csr_matrix(inst.Tm, copy=True)  # rows T / steps (not T * (1 / steps))
        rows = np.repeat(np.arange(inst.n), np.diff(C.indptr))
        with np.errstate(over="ignore"):
            C.data = C.data / self.steps[rows]
        _check_rates(C.data)
        return LevelStage(C, np.ones(inst.n), np.zeros(inst.n), "makespan")

    def _metric(self, tp: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", over="ignore"):
            return np.where(tp > 0, self.steps / np.maximum(tp, TINY), np.inf)

    def _first_stages(self, solver: StageSolver, method: str) -> PolicyStages:
        stage = self.level_stage()
        fast = ((level_strategy(),)
                if method == "fast" and self._structured_worth(solver) else ())
        res = solver.run(stage, "makespan", fast)
        # the work-conserving LP is solved cold, not from this level's basis
        # (``exact-lp+from-level``): the makespan level leaves most jobs above theta, and
        # its optimal basis is a poor start (#28; measured, thread CPU, cold / from the level
        # basis: Gavel-drawn 160 / 256 / 310 jobs 5.7-6.5 / 7.1-7.6, 7.7-8.6 / 10.6-11.6,
        # 8.7-9.5 / 12.6-13.0 ms; 1,000 random jobs with method="highs" 24 / 48 ms)
        solver.level_basis = None
        return PolicyStages(stage, res, res.value)

    def _makespan(self, xcol: np.ndarray) -> float:
        """``max_m steps_m / throughput(m, X)`` of the allocation (never ``1 / theta``, which
        underflows: theta is solved at unit scale and the makespan computed from ``X``)."""
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            span = float(np.max(self._metric(self.inst.throughput(xcol))))
        if not np.isfinite(span):
            raise InputError("the makespan exceeds the floating-point range (steps_remaining "
                             "/ throughput overflows)", argument="steps_remaining")
        return span

    def _objective_value(self, cert: Certificate, xcol: np.ndarray,
                         stages: PolicyStages) -> float:
        return self._makespan(xcol)

    def _cvx_report(self, cert: Certificate, xcol: np.ndarray) -> Certificate:
        """The makespan's certificate (without objective terms): the makespan of the allocation
        against ``1 / theta_bound`` (a job left without throughput: not certified)."""
        if self._terms:
            return cert
        span = self._makespan(xcol) if cert.primal_value > 0 else float("inf")
        return reciprocal(cert, span)

    def _cvx_objective(self, cvx: dict[str, Any]) -> tuple[Any, list[Any]]:
        return level_objective(cvx, self.level_stage())

    def _cvx_unit(self) -> float:
        return self.level_stage().units()[0]


def min_makespan(
        jobs: Jobs, cluster: Cluster, *,
        pairs: JobPairs | None = None, unconsolidated_throughput: ArrayLike | None = None,
        consolidated_capacity: ArrayLike | None = None, method: str = "auto",
        backend: str | Backend | None = None, work_conserving: bool | None = None,
        gap_tol: float = GAP_TOL, feas_tol: float = FEAS_TOL,
        stage_tol: float = STAGE_TOL, symmetry: bool = True,
        tuning: Tuning | None = None) -> Allocation:
    """Minimum makespan allocation (Gavel §4.1), exact as one LP.

    Parameters
    ----------
    jobs : fairalloc.Jobs
    cluster : fairalloc.Cluster
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
        ``objective`` is the makespan ``max_m steps_m / throughput(m, X)`` in seconds.

    Examples
    --------
    Two jobs of 100 steps at 10 steps/s on one GPU: the GPU is split, both finish at 20 s.

    >>> import fairalloc as fa
    >>> a = fa.min_makespan(fa.Jobs([[10.0], [10.0]], steps_remaining=[100, 100]),
    ...                     fa.Cluster({"gpu": 1}))
    >>> round(a.objective, 6), a.x.ravel().round(6).tolist()
    (20.0, [0.5, 0.5])
    """
    return MinMakespan(
        jobs, cluster,
        pairs=pairs, unconsolidated_throughput=unconsolidated_throughput,
        consolidated_capacity=consolidated_capacity).solve(
        method=method, backend=backend, work_conserving=work_conserving, gap_tol=gap_tol,
        feas_tol=feas_tol, stage_tol=stage_tol, symmetry=symmetry, tuning=tuning)


# --------------------------------------------------------------------------------------------
# finish-time fairness, Gavel §4.1 (Themis)
# --------------------------------------------------------------------------------------------
class FinishTimeFairness(ThroughputPolicy):
    """Finish-time fairness (Gavel §4.1, Themis): ``min_X max_m rho(m, X)``,

    ``rho(m, X) = (t_m + steps_m / throughput(m, X)) / (t_m^iso + steps_m /
    throughput(m, X^isolated))`` with ``t_m`` = ``jobs.elapsed``, ``t_m^iso`` =
    ``jobs.isolated_elapsed`` (default: ``elapsed``) and ``X^isolated`` =
    `isolated_split` (1/n of every type).

    ``rho`` is a ratio of affine functions of ``X`` (``(t tp + steps) / (D tp)``), so the
    program is a generalised linear-fractional program. It is solved exactly by the
    Dinkelbach-type method of Crouzeix, Ferland and Schaible: at ``R`` solve the LP
    ``F(R) = max theta`` s.t. ``(R D_m tp_m - t_m tp_m - steps_m) / q_m >= theta``
    (``q_m`` = the current denominator); set ``R`` to the largest ``rho`` of its solution and
    stop when ``F(R) = 0``: the certificate of that last LP proves that no allocation has every
    ``rho_m < R`` (``certificate`` certifies ``F(R) = 0``; ``objective`` is ``R``).

    Parameters
    ----------
    jobs : fairalloc.Jobs
        The jobs (``steps_remaining`` required; ``elapsed`` and ``isolated_elapsed`` used).
    cluster : fairalloc.Cluster
        The workers of each type.
    max_iterations : int, default 50
        Dinkelbach iterations before `fairalloc.SolverError` (``DINKELBACH_MAX_ITERATIONS``).
    pairs, unconsolidated_throughput, consolidated_capacity
        As for `fairalloc.ThroughputPolicy`.

    Examples
    --------
    >>> import fairalloc as fa
    >>> jobs = fa.Jobs([[40.0, 10.0], [12.0, 4.0]], steps_remaining=[4000.0, 1200.0])
    >>> cluster = fa.Cluster({"v100": 1, "k80": 1})
    >>> r = FinishTimeFairness(jobs, cluster).solve()
    >>> round(r.objective, 6), r.x.round(6).tolist()
    (1.0, [[0.5, 0.5], [0.5, 0.5]])
    """

    name = "finish_time_fairness"
    _per_job = ("steps", "iso", "iso_tp", "dur_iso", "D", "t", "t_iso")
    _job_fields = ("steps_remaining", "elapsed", "isolated_elapsed")

    def __init__(self, jobs: Jobs, cluster: Cluster, *,
                 max_iterations: int = DINKELBACH_MAX_ITERATIONS, pairs: JobPairs | None = None,
                 unconsolidated_throughput: ArrayLike | None = None,
                 consolidated_capacity: ArrayLike | None = None) -> None:
        super().__init__(jobs, cluster, pairs=pairs,
                         unconsolidated_throughput=unconsolidated_throughput,
                         consolidated_capacity=consolidated_capacity)
        self.steps = _steps(jobs, "finish_time_fairness")
        self.max_iterations = as_positive_int(max_iterations, "max_iterations")
        iso = isolated_split(jobs, cluster)
        #: ``X^isolated`` (1/n of every type, n: all jobs), the first Dinkelbach point
        self.iso = iso
        self.iso_tp = np.einsum("ij,ij->i", self.inst.T_allowed, iso)
        t_iso = jobs.elapsed if jobs.isolated_elapsed is None else jobs.isolated_elapsed
        with np.errstate(over="ignore"):
            self.dur_iso = self.steps / self.iso_tp
        self.D = t_iso + self.dur_iso  # isolated finish time (denominator of rho)
        self.t = jobs.elapsed
        self.t_iso = t_iso
        if not (np.isfinite(self.dur_iso).all() and np.isfinite(self.D).all()):
            raise InputError("steps_remaining / throughput overflows: the isolated finish "
                             "times are beyond the floating-point range",
                             argument="steps_remaining")

    def excess(self, tp: np.ndarray) -> np.ndarray:
        """``rho(m, X) - 1`` computed without cancellation: ``((t - t_iso) + (steps / tp -
        steps / tp_iso)) / D`` (``rho`` rounds to 1 when elapsed times dwarf durations)."""
        with np.errstate(divide="ignore", over="ignore"):
            dur = np.where(tp > 0, self.steps / np.maximum(tp, TINY), np.inf)
            return ((self.t - self.t_iso) + (dur - self.dur_iso)) / self.D

    def rho(self, tp: np.ndarray) -> np.ndarray:
        """``rho(m, X)`` for effective throughputs ``tp``."""
        with np.errstate(divide="ignore"):
            dur = np.where(tp > 0, self.steps / np.maximum(tp, TINY), np.inf)
        return (self.t + dur) / self.D

    def _metric(self, tp: np.ndarray) -> np.ndarray:
        return self.rho(tp)

    def dinkelbach_stage(self, R: float, tp_prev: np.ndarray, r: float | None = None
                         ) -> LevelStage:
        """Level stage of ``F(R)``: rows ``((R D - t) tp - steps) / q >= theta``.

        ``R D - t`` is computed as ``(R - 1) D + (t_iso - t) + steps / tp_iso`` (``r``:
        ``R - 1`` when known exactly), without the cancellation of ``R D - t`` when elapsed
        times dwarf the remaining durations."""
        inst = self.inst
        q = self.D * tp_prev
        r = R - 1.0 if r is None else r
        coef = (r * self.D + (self.t_iso - self.t) + self.dur_iso) / q
        C = scale_rows(inst.Tm, coef)
        # theta is in units of rho (rows ~ (R - rho_m) tp_m / tp_prev_m): its gap is judged
        # against R, the level being certified
        return LevelStage(C, np.ones(inst.n), self.steps / q, "finish-time fairness", scale=abs(R))

    def _first_stages(self, solver: StageSolver, method: str) -> PolicyStages:
        inst = self.inst
        iso = self.iso
        x_prev = np.zeros(inst.E)  # X^isolated in column form (single-job columns)
        single = np.flatnonzero(inst.col_kind[inst.mem_col] == 0)
        x_prev[inst.mem_col[single]] = iso[inst.mem_job[single],
                                           inst.col_type[inst.mem_col[single]]]
        tp = inst.throughput(x_prev)
        r = float(self.excess(tp).max())  # R - 1, tracked without cancellation
        # each job's best throughput (its fastest column all the time) bounds its rho below:
        # R* >= R_lb, the largest such bound, and the first stage tries R_lb (often attained:
        # the job that is slowest even at full speed sets the optimum)
        best = np.zeros(inst.n)
        np.maximum.at(best, inst.mem_job, inst.mem_tp)
        r_lb = float(self.excess(best).max())
        # the level LPs of the sequence share their rows and columns (only the level rows'
        # coefficients and offsets change): each whole LP starts from the previous basis
        solver.warm_levels = True
        try:
            return self._dinkelbach(solver, tp, r, x_prev,
                                    method == "fast" and solver.structured_worth()
                                    and structured_level_applies(solver), r_lb)
        finally:
            solver.warm_levels = False

    def _run_stages(self, solver: StageSolver, method: str, wc: bool
                    ) -> tuple[PolicyStages, np.ndarray, list[Certificate], StageResult | None]:
        """With the work-conserving stage: `closed_form_plan` (the closed-form optimum proved
        by the work-conserving stage, else the Dinkelbach sequence and that stage)."""
        if not (wc and solver.tuning.ftf_closed_form):
            return super()._run_stages(solver, method, wc)

        def sequence(_: None) -> Any:
            return super(FinishTimeFairness, self)._run_stages(solver, method, wc)

        lower = self._lower_bound()  # (of this solve's program: read by the gate and the form)
        return run_nested(closed_form_plan(lambda _: self._closed_form(solver, method, lower),
                                           sequence, lambda _: self.closed_form_fits(lower)),
                          None, solver.log, what=FTF, backend=solver.backend.name).result

    def _lower_bound(self) -> tuple[np.ndarray, int, float]:
        """Each job's best throughput (its fastest column all the time), the job ``m*`` whose
        rho there is largest and ``R_lb - 1`` (that rho minus 1), of the program solved now."""
        best = np.zeros(self.inst.n)
        np.maximum.at(best, self.inst.mem_job, self.inst.mem_tp)
        lower = self.excess(best)
        top = int(np.argmax(lower))
        return best, top, float(lower[top])

    def closed_form_fits(self, lower: tuple[np.ndarray, int, float] | None = None) -> bool:
        """Whether the floors ``rho_m <= R_lb`` pass two necessary conditions of the
        work-conserving stage at ``R_lb`` having a point (``ftf-closed-form`` is tried only
        then): the least time each job needs on each type (its other types at their fastest
        the rest of the time) fits the type's workers, and the least time at each job's
        fastest rate fits all the workers. Cheap (O(n k)); the stage decides the rest. Not
        with job pairs (the sequence's level LPs price pair columns in). ``lower``: this
        program's `_lower_bound` when already computed.

        Examples
        --------
        Two jobs that each need the only GPU all the time to reach ``R_lb``:

        >>> import fairalloc as fa
        >>> jobs = fa.Jobs([[1.0], [1.0]], steps_remaining=[100.0, 100.0])
        >>> FinishTimeFairness(jobs, fa.Cluster({"gpu": 1})).closed_form_fits()
        False
        >>> FinishTimeFairness(jobs, fa.Cluster({"gpu": 2})).closed_form_fits()
        True
        """
        inst = self.inst
        if inst.pairs is not None:
            return False  # (job pairs: the sequence, whose level LPs price pair columns in)
        best, _, r_lb = self._lower_bound() if lower is None else lower
        if not (np.isfinite(r_lb) and (best > 0).all()):
            return False  # (a job without throughput: the sequence reports it)
        with np.errstate(divide="ignore", over="ignore"):
            need = self.steps / (r_lb * self.D + (self.t_iso - self.t) + self.dur_iso)
        A = inst.T_allowed if inst.unconsolidated is None else np.zeros((inst.n, inst.k))
        if inst.unconsolidated is not None:  # (else single-job columns: the allowed rates)
            np.maximum.at(A, (inst.mem_job, inst.col_type[inst.mem_col]), inst.mem_tp)
        rates = np.sort(A, axis=1)
        first = rates[:, -1:]
        other = (np.where(A == first, rates[:, -2:-1], first) if inst.k > 1
                 else np.zeros_like(A))
        gain = A - other
        with np.errstate(divide="ignore", invalid="ignore"):
            forced = np.where((need[:, None] > other) & (gain > 0),
                              (need[:, None] - other) / np.where(gain > 0, gain, 1.0), 0.0)
        use = inst.cap_weight @ np.minimum(forced, 1.0)
        least = float(inst.cap_weight @ (need / best))
        room = 1.0 + CLOSED_FORM_ROOM
        return bool((use <= inst.cap * room).all() and least <= inst.cap.sum() * room)

    def _closed_form(self, solver: StageSolver, method: str, lower: tuple[np.ndarray, int, float]
                     ) -> tuple[PolicyStages, np.ndarray, list[Certificate], StageResult]:
        """``ftf-closed-form``: the work-conserving stage with every ``rho_m <= R_lb`` kept
        (the Dinkelbach stage at ``R_lb``, normalised by each job's best throughput, kept at
        ``theta = 0``). Its certificate at the final allocation uses the lower bound's duals:
        1 on the row of the job ``m*`` that sets ``R_lb`` and minus that row's largest
        coefficient on its time row (bound 0: ``m*`` cannot beat its fastest column). Declines
        (leaving ``solver`` as it found it) when the stage is infeasible (``R_lb`` not
        attained) or a certificate fails."""
        inst = self.inst
        best, top, r_lb = lower
        stage = self.dinkelbach_stage(1.0 + r_lb, best, r_lb)
        lp, layout = solver.program(stage), solver.layout(stage)
        duals = np.zeros(layout.size)
        coef = stage.C.data[stage.C.indptr[top]:stage.C.indptr[top + 1]]
        (duals[layout.slice("level").start + top],
         duals[layout.slice("time").start + top]) = lower_bound_duals(coef)
        g = self._wc_objective()
        if inst.col_mult is not None:
            g = g * inst.col_mult  # a class's column serves all of its members
        wstage = LinearStage(g, WORK_CONSERVING)
        structured = method == "fast" and self._structured_worth(solver)
        kept, anchor, votes = len(solver.fixed), solver.anchor, solver.infeasible_votes
        solver.fix(stage, 0.0)
        # one infeasible verdict is enough here: the Dinkelbach sequence follows, not an error
        solver.infeasible_votes = 1
        try:
            wres = (self._structured_floor(solver, wstage) if structured else None)
            if wres is None:
                wres = solver.run(wstage, WORK_CONSERVING)
            xcol = wres.x[: inst.E]
            v = solver.point(stage, xcol)
            cert = solver.certificate(lp, stage, v, duals)
            if not cert.ok:
                raise Decline("the lower bound's certificate failed at the work-conserving "
                              f"allocation (relative gap {cert.relative_gap:.3g})")
        except (SolverError, Decline) as exc:
            del solver.fixed[kept:]
            solver.anchor = anchor
            if isinstance(exc, Decline):
                raise
            why = "; ".join(exc.verdicts) or str(exc.status)
            raise Decline(f"no certified point with every rho <= R_lb ({why})") from exc
        finally:
            solver.infeasible_votes = votes
        res = StageResult(lp, v, duals, cert.primal_value, cert, 0, layout)
        value = 1.0 + float(self.excess(inst.throughput(xcol)).max())
        return PolicyStages(stage, res, value), xcol, [cert, wres.cert], wres

    @staticmethod
    def _structured_floor(solver: StageSolver, stage: LinearStage) -> StageResult | None:
        """The closed form's work-conserving stage by the structured floor solver alone.

        Where it declines on prices it cannot settle (no Newton balance, degenerate prices,
        many types) the stage after the Dinkelbach sequence, whose floors are the same, would
        decline the same way and go to the whole LP: ``None`` (the whole LP at ``R_lb``).
        Where it finds no certified point within its rounds (``R_lb`` not attained, as a rule:
        Gavel-like 2,048 jobs) it raises: the whole LP at ``R_lb`` would cost more than the
        sequence it saves."""
        try:
            res = run_plan(_structured.floor_strategies(),
                           StageContext(solver, stage, WORK_CONSERVING), solver.log,
                           what=f"{FTF} {WORK_CONSERVING}", backend=solver.backend.name).result
        except SolverError as exc:
            prices = (NO_ESTIMATE, DEGENERATE, MANY_TYPES)
            if exc.verdicts and all(any(w in v for w in prices) for v in exc.verdicts):
                return None
            raise
        if solver.bases is not None and res.basis is not None:  # (as `StageSolver.run`)
            solver.bases.end(WORK_CONSERVING, solver.inst, solver.layout(stage), res.basis,
                             res.iterations)
        return res

    def _dinkelbach(self, solver: StageSolver, tp: np.ndarray, r: float, x_prev: np.ndarray,
                    structured: bool, r_lb: float | None = None) -> PolicyStages:
        """The Dinkelbach iterations from ``R = 1 + r`` at the allocation ``x_prev``
        (throughputs ``tp``); ``structured``: level stages go to the structured solver.

        ``r_lb``: ``R_lb - 1`` for a lower bound ``R_lb <= R*``. The first stage is then
        solved at ``R_lb`` (on the structured path just above it: `STRUCTURED_JUMP_ABOVE`),
        normalised by ``tp``, and the sequence goes on from the better of ``x_prev`` and its
        allocation. Where the job slowest even at full speed sets the optimum (Gavel-drawn
        rounds) that allocation is at or next to ``R*``: two whole-LP stages at 256 jobs
        (three before), three structured ones at 2,048 (five before)."""
        inst = self.inst
        R = 1.0 + r
        handed_over = 0  # consecutive Dinkelbach stages the structured solver handed over
        # Newton's end point in one stage starts the next (same rows, another level)
        seed = NewtonSeed() if solver.tuning.dinkelbach_seed else None
        # the first stage's level: R_lb (structured path: just above), if below R
        lower = None
        if r_lb is not None:
            lower = r_lb + STRUCTURED_JUMP_ABOVE * (1.0 + r_lb) if structured else r_lb
            if not lower < r - self.gap_stop(R):
                lower = None
        for it in range(self.max_iterations):
            if lower is not None:
                stage = self.dinkelbach_stage(1.0 + lower, tp, lower)
            else:
                stage = self.dinkelbach_stage(R, tp, r)
            solver.step(DINKELBACH)
            if structured:
                mark = solver.log.mark()
                res = self._structured_stage(solver, stage, seed)
                handed_over = handed_over + 1 if _gave_up(solver.log.since(mark)[1]) else 0
                if handed_over >= DINKELBACH_HAND_OVERS:
                    # the stages of one sequence share their rows' structure: once the
                    # structured solver handed them over twice in a row, the later ones go
                    # to the whole LP directly (no further Newton search that cannot win)
                    structured = False
                    solver.log.hand_over(
                        DINKELBACH, EXACT_LP, f"iterations {it + 2 - handed_over}-{it + 1} "
                        "went to the whole LP; the later iterations solve it directly")
            else:
                res = solver.run(stage, "finish-time fairness")
            xcol = res.x[: inst.E]
            tp_new = inst.throughput(xcol)
            r_new = float(self.excess(tp_new).max())
            if lower is not None:
                # a jump, not an answer: the next stage, at the allocation's own R and
                # normalised by its throughputs, decides (F(R) <= gap_stop when R_lb is
                # attained; its certificate is the ordinary last stage's)
                lower = None
                if r_new < r:
                    R, r, tp, x_prev = 1.0 + r_new, r_new, tp_new, xcol
                continue
            if res.provisional and (r_new >= r or res.value <= self.gap_stop(R)):
                # the sequence would end here: its last stage must be certified
                res = self._certified_stage(solver, stage, res, seed)
                xcol = res.x[: inst.E]
                tp_new = inst.throughput(xcol)
                r_new = float(self.excess(tp_new).max())
            R_new = 1.0 + r_new
            # F(R) <= 0 always (the previous allocation is feasible with theta <= 0); F is
            # in units of rho (its rows are (R - rho_m) tp_m / tp_prev_m)
            if r_new >= r:
                # no progress (F(R) ~ 0 to rounding): the previous allocation attains R and
                # the stage's duals certify it (its theta is 0 there)
                v = solver.point(stage, x_prev)
                cert = solver.certify(res, stage, x_prev).check(backend=solver.backend.name)
                return PolicyStages(stage, StageResult(res.lp, v, res.duals, cert.primal_value,
                                                       cert, res.iterations, res.rows), R)
            if res.value <= self.gap_stop(R):
                return PolicyStages(stage, res, R_new)
            R, r, tp, x_prev = R_new, r_new, tp_new, xcol
        raise SolverError("finish-time fairness: Dinkelbach iterations did not converge",
                          backend=solver.backend.name, status="iteration_limit")

    @staticmethod
    def _structured_stage(solver: StageSolver, stage: LevelStage, seed: NewtonSeed | None
                          ) -> StageResult:
        """One Dinkelbach stage by the structured level solver: provisional (path step
        ``structured-level-provisional``, no certificate: it only chooses the next point)
        with ``tuning.dinkelbach_provisional``, else its stage plan; a provisional solve that
        declines hands the stage to the whole-LP plan (`provisional_stage_plan`)."""
        if not solver.tuning.dinkelbach_provisional:
            return solver.run(stage, FTF, fast=(level_strategy(seed=seed),))

        def provisional(_: None) -> StageResult:
            return fast_level(solver, stage, seed=seed, provisional=True)

        def whole_lp(_: None) -> StageResult:
            return solver.run(stage, FTF)

        return run_nested(provisional_stage_plan(provisional, whole_lp), None, solver.log,
                          what=FTF, backend=solver.backend.name).result

    @staticmethod
    def _certified_stage(solver: StageSolver, stage: LevelStage, res: StageResult,
                         seed: NewtonSeed | None) -> StageResult:
        """A provisional stage result certified, by `certified_stage_plan`: its own point and
        duals when the whole LP's certificate passes there (path step `STRUCTURED_LEVEL`),
        else the stage's plan (the structured level solver with its certificate, then the
        whole LP)."""
        def own_point(_: None) -> StageResult:
            cert = solver.certify(res, stage, res.x[: solver.inst.E])
            if not cert.ok:
                raise Decline("the last stage's master did not certify; solved again with "
                              "its certificate")
            solver.step(STRUCTURED_LEVEL)  # a structured level certified at its own point
            return dataclasses.replace(res, value=cert.primal_value, cert=cert,
                                       provisional=False)

        def again(_: None) -> StageResult:
            return solver.run(stage, FTF, fast=(level_strategy(seed=seed),))

        return run_nested(certified_stage_plan(own_point, again), None, solver.log,
                          what=FTF, backend=solver.backend.name).result

    def gap_stop(self, R: float) -> float:
        """The value of ``F(R)`` at or below which the Dinkelbach sequence stops."""
        return DINKELBACH_STOP * abs(R)

    def _objective_value(self, cert: Certificate, xcol: np.ndarray,
                         stages: PolicyStages) -> float:
        return float(self.rho(self.inst.throughput(xcol)).max())

    def _cvx_objective(self, cvx: dict[str, Any]) -> tuple[Any, list[Any]]:
        return finish_time_objective(cvx, self.t, self.D, self.steps, self.inst.equal_tp)

    def _cvx_report(self, cert: Certificate, xcol: np.ndarray) -> Certificate:
        """The certificate of ``max rho`` of the allocation (without objective terms)."""
        if self._terms:
            return cert
        return negated(cert, float(self.rho(self.inst.throughput(xcol)).max()))


def finish_time_fairness(
        jobs: Jobs, cluster: Cluster, *, max_iterations: int = DINKELBACH_MAX_ITERATIONS,
        pairs: JobPairs | None = None, unconsolidated_throughput: ArrayLike | None = None,
        consolidated_capacity: ArrayLike | None = None, method: str = "auto",
        backend: str | Backend | None = None, work_conserving: bool | None = None,
        gap_tol: float = GAP_TOL, feas_tol: float = FEAS_TOL,
        stage_tol: float = STAGE_TOL, symmetry: bool = True,
        tuning: Tuning | None = None) -> Allocation:
    """Finish-time fairness (Gavel §4.1; Themis): minimise ``max_m rho(m, X)``.

    Needs ``jobs.steps_remaining``; uses ``jobs.elapsed`` and ``jobs.isolated_elapsed``
    (default: ``elapsed``). Solved exactly by a Dinkelbach sequence of LPs (see
    `fairalloc.FinishTimeFairness`), then a work-conserving stage keeps every
    ``rho <= R*``. With that stage, the closed-form lower bound ``R_lb`` (each job's rho on
    its fastest column all the time) is tried first: where the work-conserving stage has a
    certified point with every ``rho <= R_lb``, that is the answer and no Dinkelbach stage
    runs (`closed_form_plan`; ``Tuning(ftf_closed_form=False)``: the sequence only).

    Parameters
    ----------
    jobs : fairalloc.Jobs
    cluster : fairalloc.Cluster
    max_iterations : int
        Dinkelbach iterations before `fairalloc.SolverError`.
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
        ``objective`` is ``max_m rho``; ``metric`` each job's ``rho``.

    Examples
    --------
    >>> import fairalloc as fa
    >>> jobs = fa.Jobs([[10.0], [10.0]], steps_remaining=[100, 300])
    >>> a = fa.finish_time_fairness(jobs, fa.Cluster({"gpu": 1}))
    >>> round(a.objective, 6)
    1.0
    """
    return FinishTimeFairness(
        jobs, cluster, max_iterations=max_iterations,
        pairs=pairs, unconsolidated_throughput=unconsolidated_throughput,
        consolidated_capacity=consolidated_capacity).solve(
        method=method, backend=backend, work_conserving=work_conserving, gap_tol=gap_tol,
        feas_tol=feas_tol, stage_tol=stage_tol, symmetry=symmetry, tuning=tuning)
