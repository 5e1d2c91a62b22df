"""Max-min fairness (Gavel §4.1) and hierarchical water-filling (§4.3).

`fairalloc.MaxMinFairness` is the heterogeneity-aware weighted max-min (LAS)
policy; with ``water_filling=True`` it is solved by the single-level water-filling below, which is
why both live in one module (the other policies never import water-filling).

Hierarchical max-min fairness by water-filling (§4.3):

Entities (teams) share the cluster by weighted fairness; inside an entity jobs share by
fairness (job weights) or FIFO. Each job's level is its scale-adjusted normalised throughput
``u_m(X) = scale_factor_m * throughput(m, X) / throughput(m, X^equal)`` (Gavel §4.1).

Water-filling raises every unfrozen job with a positive weight at its weight's rate until
some jobs cannot rise any further (they are *bottlenecked*); those are frozen, weights are
redistributed inside their entities (fairness: among the entity's unfrozen jobs in proportion
to job weight; FIFO: the whole entity weight to its first unfrozen job), and the procedure
repeats until every job is frozen. Iteration ``r`` (floors ``f`` from the previous one):

1. **level LP**: ``max theta`` s.t. ``u_m(X) >= f_m + w_m theta`` (jobs with ``w_m > 0``),
   ``u_m(X) >= f_m`` (all others), and the allocation constraints;
2. the floors become ``f_m + w_m theta*``;
3. **bottleneck LPs** (exact, no big-M MILP): with candidates ``C`` = the jobs with
   ``w_m > 0``, solve ``max sum_{m in C} u_m(X)`` s.t. ``u(X) >= f``. A candidate with
   ``u_m > f_m`` in the solution can rise (it is not bottlenecked) and leaves ``C``; if none
   can, the optimum shows that ``sum_{m in C} u_m`` cannot exceed ``sum_{m in C} f_m``, so
   every job left in ``C`` is bottlenecked. Otherwise repeat with the smaller ``C``.

A level that ends because jobs reach their largest possible level (saturation) is followed by
a jump over the whole saturation cascade: the trajectory between capacity events is known in
closed form (`fairalloc.throughput.water_path`) and the furthest feasible point on it is found
by a bisection of feasibility LPs, ``O(log n)`` LPs instead of one level per saturating job.

`WaterFilling.solve` is a plan (`fairalloc.plan.run_plan`) of this fast water-filling and, when
it cannot prove its result, the robust water-filling of `fairalloc.throughput.water_robust`
(the textbook algorithm, each freeze by a certified LP; up to `Tuning.water_robust_max_jobs`).

Gavel's code finds bottlenecks with a big-M MILP whose integrality tolerance absorbs its slack
(wrong on 10 K80-only jobs plus one V100 job on 4 V100 + 1 K80) and whose absolute slack makes
it infeasible for levels below 0.1; see formulations/water_filling.md.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from .._sparse import dot, scale_rows
from .._validation import as_bool, as_option, as_positive_float, as_positive_int, as_tolerance
from ..backends import Backend
from ..data import Cluster, JobPairs, Jobs
from ..errors import CertificateError, InfeasibleError, InputError, SolverError
from ..plan import Strategy, run_plan
from ..results import Certificate
from ..solvelog import SolveLog
from ..tolerances import FEAS_TOL, GAP_TOL
from . import structured, water_symmetry
from .composed import level_objective
from .policy import STAGE_TOL, Allocation, PolicyStages, ThroughputPolicy, _rank
from .programs import LevelStage
from .stages import StageSolver, capacity_prices
from .symmetry import solve_by_plan
from .tuning import Tuning, as_tuning
from .water_bounds import best_levels
from .water_path import (
    FLOORS_ANCHORED,
    PARETO_CHECK,  # noqa: F401 - the end check's path step, read as max_min.PARETO_CHECK
    Proof,
    StructuredLevels,
    amplified_violation,
    anchored_floors,
    bottleneck_lp,
    can_rise,
    level_lp,
    saturation_jump,
)
from .water_robust import (
    ROBUST,
    WaterContext,
    WaterParams,
    WaterRun,
    certify_run,
    end_check,
    level_prices,
    robust_applies,
    robust_water_filling,
)
from .water_symmetry import water_allocation

__all__ = ["MaxMinFairness", "WaterFilling", "max_min_fairness", "water_filling"]

ENTITY_POLICIES = ("fairness", "fifo")

#: ACCURACY: a level's job duals (weighted, summing to 1 at an optimum) at or below this
#: fraction of the largest are noise
_DUAL_NOISE = 1e-9
#: ACCURACY: relative rounding margin of a level's certified room D - theta (a few hundred ulps)
_ROUNDING = 1e-13
#: default ``bottleneck_tol`` of `fairalloc.throughput.WaterFilling.solve` (ACCURACY: a job
#: rising by more than this relative to max(1, floor) is not bottlenecked)
BOTTLENECK_TOL = 1e-7
WATER_FAST = "water-filling-fast"  # path step: the fast water-filling (its plan's first)
#: path step: the end check could not prove the result's levels Pareto-maximal (status
#: ``suboptimal``; its verdict in ``stats.fallbacks``)
PARETO_UNPROVEN = "pareto-unproven"
#: ACCURACY: rounds water-filling resumes after a failed end check before it raises
_END_RESUMES = 2


# --------------------------------------------------------------------------------------------
# max-min fairness (LAS), Gavel §4.1
# --------------------------------------------------------------------------------------------
class MaxMinFairness(ThroughputPolicy):
    """Heterogeneity-aware weighted max-min fairness / LAS (Gavel §4.1).

    ``maximise min_m (scale_factor_m / w_m) * throughput(m, X) / throughput(m, X^equal)``
    where ``X^equal`` splits a job's time across types in proportion to their worker counts
    (row sum 1). As an LP: ``max theta`` s.t. ``a_m . x_m >= theta`` with
    ``a_mj = s_m T_mj / (w_m throughput(m, X^equal))``, plus the allocation constraints.

    With ``water_filling=True`` the level is raised further for the jobs that are not
    bottlenecked (Gavel §4.3; `fairalloc.WaterFilling`), which makes the
    allocation Pareto efficient.

    Parameters
    ----------
    jobs : fairalloc.Jobs
        The jobs (``weight``: the priority weights ``w_m``).
    cluster : fairalloc.Cluster
        The workers of each type.
    water_filling : bool, default False
        Raise the level of the non-bottlenecked jobs (Gavel §4.3).
    warm_start : tuple of (numpy.ndarray, float), optional
        Capacity prices and level of a previous, similar round: they seed the structured
        solver's price estimate (passed by `fairalloc.RoundPolicy`; never changes the
        answer, which is certified as always; ignored with water-filling).
    pairs, unconsolidated_throughput, consolidated_capacity
        As for `fairalloc.ThroughputPolicy`.

    Examples
    --------
    >>> import fairalloc as fa
    >>> jobs = fa.Jobs([[40.0, 10.0], [12.0, 4.0], [100.0, 50.0]])
    >>> cluster = fa.Cluster({"v100": 1, "k80": 1})
    >>> b = MaxMinFairness(jobs, cluster)
    >>> r = b.solve()
    >>> (r.x * 11).round(6).tolist()
    [[5.0, 0.0], [5.0, 1.0], [1.0, 10.0]]
    """

    name = "max_min_fairness"
    _per_job = ("coef",)
    _job_fields = ("weight",)

    def __init__(self, jobs: Jobs, cluster: Cluster, *, water_filling: bool = False,
                 warm_start: tuple[np.ndarray, float] | None = None,
                 pairs: JobPairs | None = None, unconsolidated_throughput: ArrayLike | None = None,
                 consolidated_capacity: ArrayLike | None = None) -> None:
        super().__init__(jobs, cluster, pairs=pairs,
                         unconsolidated_throughput=unconsolidated_throughput,
                         consolidated_capacity=consolidated_capacity)
        self.water_filling = as_bool(water_filling, "water_filling")
        inst = self.inst
        self.coef = inst.jobs.scale_factor / (inst.jobs.weight * inst.equal_tp)
        #: (capacity prices, level) of a previous, similar round: seeds the structured
        #: solver's price estimate (passed by `fairalloc.RoundPolicy`;
        #: never changes
        #: the answer, which is certified as always; ignored with water-filling)
        self.warm_start = warm_start

    def level_stage(self) -> LevelStage:
        inst = self.inst
        C = scale_rows(inst.Tm, self.coef)
        return LevelStage(C, np.ones(inst.n), np.zeros(inst.n), "max-min level")

    def _metric(self, tp: np.ndarray) -> np.ndarray:
        return self.coef * tp

    def _first_stages(self, solver: StageSolver, method: str) -> PolicyStages:
        stage = self.level_stage()
        fast = ((structured.level_strategy(warm=self.warm_start),)
                if method == "fast" and self._structured_worth(solver) else ())
        res = solver.run(stage, stage.name if method == "fast" else "max-min fairness", fast)
        return PolicyStages(stage, res, res.value)

    def _cvx_objective(self, cvx: dict[str, Any]) -> tuple[Any, list[Any]]:
        return level_objective(cvx, self.level_stage())

    def _cvx_unit(self) -> float:
        return self.level_stage().units()[0]

    def _structured_worth(self, solver: StageSolver) -> bool:
        """Enough jobs for the structured solvers, or a warm start (the previous round's
        prices skip their Newton search: 100 jobs, warm rounds 3.2 ms structured against
        8.7 ms on the whole LP)."""
        return solver.structured_worth() or self.warm_start is not None

    def solve(self, *, method: str = "auto", backend: str | Backend | None = None,
              work_conserving: bool | None = None, gap_tol: float = GAP_TOL,
              feas_tol: float = FEAS_TOL, stage_tol: float = STAGE_TOL,
              symmetry: bool = True, tuning: Tuning | None = None) -> Allocation:
        """Solve the policy and certify the result (see
        `fairalloc.throughput.ThroughputPolicy.solve`).

        With ``water_filling=True`` the single-level water-filling of
        `fairalloc.WaterFilling` runs instead (``method`` in ``{"auto", "highs",
        "fast"}``; ``work_conserving`` is implied: water-filling always ends with every job
        bottlenecked).
        """
        if not self.water_filling:
            return super().solve(method=method, backend=backend,
                                 work_conserving=work_conserving, gap_tol=gap_tol,
                                 feas_tol=feas_tol, stage_tol=stage_tol, symmetry=symmetry,
                                 tuning=tuning)
        if self.composed or method == "cvxpy":
            raise InputError("water_filling=True cannot be combined with added constraints"
                             " or method='cvxpy'", argument="water_filling")
        inst = self.inst
        wf = WaterFilling(self.jobs, self.cluster, single_level=True, pairs=inst.pairs,
                          unconsolidated_throughput=(_unconsolidated(inst) if inst.placement
                                                     else None),
                          consolidated_capacity=inst.cons_cap if inst.placement else None)
        res = wf.solve(method=method, backend=backend, gap_tol=gap_tol, feas_tol=feas_tol,
                       stage_tol=stage_tol, tuning=tuning)
        metric = self.coef * res.effective_throughput
        metric.flags.writeable = False
        return dataclasses.replace(res, policy="max_min_fairness (water-filling)",
                                   metric=metric)


def max_min_fairness(jobs: Jobs, cluster: Cluster, *, water_filling: bool = False,
                     pairs: JobPairs | None = None,
                     unconsolidated_throughput: ArrayLike | None = None,
                     consolidated_capacity: ArrayLike | None = None, method: str = "auto",
                     backend: str | Backend | None = None, work_conserving: bool | None = None,
                     gap_tol: float = GAP_TOL, feas_tol: float = FEAS_TOL,
                     stage_tol: float = STAGE_TOL, symmetry: bool = True,
                     tuning: Tuning | None = None) -> Allocation:
    """Heterogeneity-aware weighted max-min fairness (LAS) (Gavel §4.1, §4.3).

    Maximises ``min_m (scale_factor_m / w_m) throughput(m, X) / throughput(m, X^equal)``
    (``X^equal``: time split across types in proportion to worker counts, row sum 1). By
    default a work-conserving second stage then maximises the total normalised throughput at
    that level; ``water_filling=True`` instead raises the level of non-bottlenecked jobs until
    every job is bottlenecked (Pareto efficient; `fairalloc.water_filling`).

    Parameters
    ----------
    jobs : fairalloc.Jobs
    cluster : fairalloc.Cluster
    water_filling : bool
        Single-level water-filling instead of the work-conserving stage (Gavel §4.3).
    pairs : fairalloc.JobPairs, optional
        Job pairs that may share a worker (space sharing, §3.1).
    unconsolidated_throughput : array_like (n, k), optional
        Throughput with the gang spread over servers (placement sensitivity, §3.1).
    consolidated_capacity : array_like (k,), optional
        Workers of each type that can host consolidated gangs (default: all).
    method : {"auto", "highs", "fast", "cvxpy"}
        See `fairalloc.throughput.ThroughputPolicy.solve`.
    backend : str or Backend, optional
        LP backend (default HiGHS).
    work_conserving : bool, optional
        Add the work-conserving second stage (default: on).
    gap_tol, feas_tol : float
        Certificate tolerances (relative gap, relative constraint violation).
    stage_tol : float
        Relative slack with which the level is kept in the second stage.
    symmetry : bool
        Solve over exact symmetry classes of repeated jobs (default ``True``; ``False``: job by
        job; water-filling never reduces); see
        `fairalloc.throughput.ThroughputPolicy.solve`.
    tuning : fairalloc.throughput.Tuning, optional
        Performance knobs of the solve plans (never changes an answer).

    Returns
    -------
    Allocation
        ``objective`` is the max-min level; ``metric`` each job's weighted normalised
        throughput.

    Examples
    --------
    The paper's example (§4.1): every job gets 12/11 of what 1/3 of each GPU would give it.

    >>> import fairalloc as fa
    >>> jobs = fa.Jobs([[40.0, 10.0], [12.0, 4.0], [100.0, 50.0]])
    >>> a = fa.max_min_fairness(jobs, fa.Cluster({"v100": 1, "k80": 1}))
    >>> (a.effective_throughput / (jobs.throughput @ [1/3, 1/3])).round(6).tolist()
    [1.090909, 1.090909, 1.090909]
    """
    b = MaxMinFairness(jobs, cluster, water_filling=water_filling, pairs=pairs,
                       unconsolidated_throughput=unconsolidated_throughput,
                       consolidated_capacity=consolidated_capacity)
    return b.solve(method=method, backend=backend, work_conserving=work_conserving,
                   gap_tol=gap_tol, feas_tol=feas_tol, stage_tol=stage_tol, symmetry=symmetry,
                   tuning=tuning)


# --------------------------------------------------------------------------------------------
# hierarchical water-filling, Gavel §4.3
# --------------------------------------------------------------------------------------------
class WaterFilling(ThroughputPolicy):
    """Hierarchical water-filling builder (Gavel §4.3).

    Parameters
    ----------
    jobs : fairalloc.Jobs
        ``jobs.weight`` are the job weights inside fairness entities.
    cluster : fairalloc.Cluster
    entities : sequence of hashable, shape (n,), optional
        The entity of each job. Default: a single entity (single-level weighted max-min
        fairness with water-filling, as ``max_min_fairness(..., water_filling=True)``).
    entity_weights : mapping entity -> weight, optional
        Default 1 for every entity.
    entity_policies : mapping entity -> {"fairness", "fifo"}, optional
        Default ``"fairness"``.
    order : array_like (n,), optional
        Arrival order for FIFO entities (smaller first); default: most ``elapsed`` first.
    single_level : bool, default False
        Ignore the entities: every live job has its own weight (the water-filling of
        ``max_min_fairness(..., water_filling=True)``).
    pairs, unconsolidated_throughput, consolidated_capacity
        As for `fairalloc.ThroughputPolicy`.

    Examples
    --------
    Gavel §4.3: four identical jobs with weights 3, 1, 1, 1 on four identical GPUs end on a
    full GPU each.

    >>> import fairalloc as fa
    >>> jobs = fa.Jobs([[1.0]] * 4, weight=[3, 1, 1, 1])
    >>> r = WaterFilling(jobs, fa.Cluster({"gpu": 4})).solve()
    >>> r.x.ravel().round(6).tolist(), r.levels
    ([1.0, 1.0, 1.0, 1.0], 2)
    """

    name = "water_filling"
    _work_conserving_default = False
    #: members of each job's symmetry class (``None``: one each; a reduced builder's, whose
    #: entity weight shares count every member: `fairalloc.throughput.water_symmetry`)
    multiplicity: np.ndarray | None = None

    def __init__(self, jobs: Jobs, cluster: Cluster, *, entities: Sequence[Hashable] | None = None,
                 entity_weights: Mapping[Hashable, float] | None = None,
                 entity_policies: Mapping[Hashable, str] | None = None,
                 order: ArrayLike | None = None, single_level: bool = False,
                 pairs: JobPairs | None = None, unconsolidated_throughput: ArrayLike | None = None,
                 consolidated_capacity: ArrayLike | None = None) -> None:
        super().__init__(jobs, cluster, pairs=pairs,
                         unconsolidated_throughput=unconsolidated_throughput,
                         consolidated_capacity=consolidated_capacity)
        n = jobs.n
        if entities is None:
            labels: list[Hashable] = [0] * n
        else:
            if isinstance(entities, str | bytes):
                raise InputError("entities must be a sequence of labels, got a string",
                                 argument="entities")
            try:
                labels = list(entities)
                names = list(dict.fromkeys(labels))
            except TypeError as exc:
                raise InputError(f"entities must be a sequence of hashable labels ({exc})",
                                 argument="entities") from None
            if len(labels) != n:
                raise InputError(f"entities has {len(labels)} entries for {n} jobs",
                                 argument="entities")
        names = list(dict.fromkeys(labels))
        self.entity_names = tuple(names)
        index = {e: i for i, e in enumerate(names)}
        self.entity = np.array([index[e] for e in labels], dtype=int)
        for arg, val in (("entity_weights", entity_weights),
                         ("entity_policies", entity_policies)):
            if val is not None and not isinstance(val, Mapping):
                raise InputError(f"{arg} must be a mapping entity -> value, got "
                                 f"{type(val).__name__}", argument=arg)
        ew = {} if entity_weights is None else dict(entity_weights)
        for e in ew:  # an entity with no jobs (all finished, or none runnable) is valid and
            if e not in index:  # has no effect; its weight must still be a weight
                as_positive_float(ew[e], f"entity_weights[{e!r}]")
        self.entity_weight = np.array([as_positive_float(ew.get(e, 1.0),
                                                         f"entity_weights[{e!r}]")
                                       for e in names])
        ep = {} if entity_policies is None else dict(entity_policies)
        for e in ep:  # (an entity with no jobs: checked, no effect)
            if e not in index:
                as_option(ep[e], f"entity_policies[{e!r}]", ENTITY_POLICIES)
        self.entity_fifo = np.array([as_option(ep.get(e, "fairness"),
                                               f"entity_policies[{e!r}]", ENTITY_POLICIES)
                                     == "fifo" for e in names])
        self.rank = (_rank(-jobs.elapsed, n, "elapsed") if order is None
                     else _rank(order, n, "order"))
        self.single_level = as_bool(single_level, "single_level")
        inst = self.inst
        self.unorm = jobs.scale_factor / inst.equal_tp  # u_m = unorm_m * throughput_m
        self._max_level = best_levels(inst, self.unorm)  # best column, pairs included

    def _cvx_objective(self, cvx: dict[str, Any]) -> tuple[Any, list[Any]]:
        raise InputError("water-filling is a sequence of LPs; it cannot be composed with "
                         "cvxpy constraints or terms", argument="constraint")

    def job_weights(self, frozen: np.ndarray) -> np.ndarray:
        """Weights of the unfrozen jobs under the entities' policies (0 for frozen jobs)."""
        jw = self.jobs.weight
        live = ~frozen
        if self.single_level:
            return np.where(live, jw, 0.0)
        E = self.entity_names.__len__()
        out = np.zeros(self.jobs.n)
        # fairness entities: w_s * w_m / sum of live job weights in the entity
        mult = 1.0 if self.multiplicity is None else self.multiplicity
        tot = np.bincount(self.entity, weights=np.where(live, jw * mult, 0.0), minlength=E)
        fair = live & ~self.entity_fifo[self.entity]
        out[fair] = (self.entity_weight[self.entity[fair]] * jw[fair]
                     / tot[self.entity[fair]])
        # FIFO entities: the first live job (smallest rank) gets the entity's weight
        fifo = live & self.entity_fifo[self.entity]
        if fifo.any():
            idx = np.flatnonzero(fifo)
            key = self.entity[idx] * (self.jobs.n + 1) + self.rank[idx]
            idx = idx[np.argsort(key, kind="stable")]
            first = np.r_[True, self.entity[idx][1:] != self.entity[idx][:-1]]
            heads = idx[first]
            out[heads] = self.entity_weight[self.entity[heads]]
        return out

    def _metric(self, tp: np.ndarray) -> np.ndarray:
        return self.unorm * tp

    def solve(self, *, method: str = "auto",
              backend: str | Backend | None = None, gap_tol: float = GAP_TOL,
              feas_tol: float = FEAS_TOL, stage_tol: float = STAGE_TOL,
              bottleneck_tol: float = BOTTLENECK_TOL, max_levels: int | None = None,
              work_conserving: bool | None = None, symmetry: bool = True,
              tuning: Tuning | None = None) -> Allocation:
        """Run water-filling and certify every LP it solves.

        Parameters
        ----------
        method : {"auto", "highs", "fast"}
            ``"fast"`` uses the structured level solver where it applies.
        backend : str or Backend, optional
            LP backend (default HiGHS).
        gap_tol, feas_tol : float
            Certificate tolerances of every LP (relative gap, relative violation).
        bottleneck_tol : float
            A job counts as able to rise when its level can exceed its floor by more than
            ``bottleneck_tol * max(1, floor)``. Status ``optimal`` claims that no job can rise
            above its final level by more than ``max(bottleneck_tol * max(1, level), gap_tol *
            umax)`` (``umax``: its best level) while every other job keeps its level.
        max_levels : int, optional
            Safety cap on the number of levels that freeze jobs (default ``n``; the robust
            strategy also stops after twice that many levels in all).
        stage_tol : float
            Not used: each level's floors are its certified optimum, exactly.
        work_conserving : bool, optional
            ``None`` or ``True`` (water-filling is always work-conserving); ``False`` raises.
        symmetry : bool
            Solve over classes of interchangeable jobs (same data, weight and entity; never
            two FIFO jobs), near-identical ones first: path ``near-symmetry:<c>``/``symmetry:<c>``,
            ``stats.classes``; certified on the original program, else handed over
            (`fairalloc.throughput.water_symmetry`). ``False``: job by job.

        The solve is a plan of two strategies: ``water-filling-fast`` (below) and, where it
        fails (``stats.fallbacks``: ``water-filling-fast->water-filling-robust: <why>``; up
        to ``tuning.water_robust_max_jobs`` jobs), ``water-filling-robust``
        (`fairalloc.throughput.water_robust`: path steps ``robust-level`` per level LP,
        ``robust-single-bottleneck`` per job decided by its own bottleneck LP,
        ``robust-dual-freeze``). When both fail, the `SolverError` lists each one's verdict
        (``exc.verdicts``).

        Path steps of the fast strategy: ``water-filling-level`` before each level LP (a level,
        or a saturation probe of the jump over a saturation cascade), then the level's own
        step (``structured-level`` or ``exact-lp``), ``bottleneck-lp`` for each bottleneck LP
        and ``bottleneck-floors-relaxed`` when one is solved again with slightly relaxed
        floors, ``level-floors-anchored`` when a level LP declared infeasible is solved again
        at the floors the last allocation reaches; ``stats.fallbacks`` lists levels the
        structured solver handed to the whole LP.

        Returns
        -------
        Allocation
            ``objective``: the first level (the max-min level); ``metric``: each job's
            normalised level ``u_m``; ``levels``: number of level LPs (levels and
            saturation probes);
            ``stage_certificates``: one per LP.
        """
        t0 = time.perf_counter()
        method = as_option(method, "method", ("auto", "highs", "fast"))
        as_bool(symmetry, "symmetry")
        if self.composed:
            raise InputError("water-filling cannot be composed with cvxpy constraints",
                             argument="method")
        if work_conserving is not None and not as_bool(work_conserving, "work_conserving"):
            raise InputError("work_conserving=False: water-filling always ends with every "
                             "job bottlenecked (work-conserving)", argument="work_conserving")
        gap_tol = as_tolerance(gap_tol, "gap_tol")
        feas_tol = as_tolerance(feas_tol, "feas_tol")
        stage_tol = as_tolerance(stage_tol, "stage_tol")
        btol = as_tolerance(bottleneck_tol, "bottleneck_tol")
        spec = "highs" if backend is None else backend
        tuning = as_tuning(tuning)
        max_levels = None if max_levels is None else as_positive_int(max_levels, "max_levels")
        params = WaterParams(spec, tuning, method, gap_tol, feas_tol, stage_tol, btol, max_levels)
        log = SolveLog()  # the symmetry plan's: a hand-over to job by job is in its stats
        cl = water_symmetry.water_classes(self) if as_bool(symmetry, "symmetry") else None
        near = (None if cl is None else
                water_symmetry.water_near_classes(self, cl, tuning.near_tie_share * gap_tol))
        return solve_by_plan(
            lambda: (water_symmetry.solve_water_reduced(self, cl, params, t0, prior=log)
                     if cl is not None else "not reducible"),
            lambda: self._solve_jobs(params, t0, log),
            reduces=cl is not None and cl.reduces, log=log, what=self.name,
            near=None if near is None else (lambda: water_symmetry.solve_water_reduced(
                self, near, params, t0, near=True, prior=log)))

    def run_water(self, params: WaterParams, log: SolveLog) -> Any:
        """Water-filling's plan on this builder's own instance (``water-filling-fast``, then
        ``water-filling-robust``), recorded in ``log``; returns the plan's `Found` (its
        result a `WaterRun`)."""
        inst = self.inst
        be = params.backend(inst.E)
        # (scipy's product, not `scale_rows`: with entries in another order a 10-type job
        # ended 1.2e-6 below its floor, level duals 1e8; known, issue #15)
        U = sp.csr_matrix(sp.diags(self.unorm) @ inst.Tm)  # rows u_m(x)
        ctx = WaterContext(self, U, be, params, log)
        plan = (Strategy(WATER_FAST, self._fast, certify_run, _fast_applies),
                Strategy(ROBUST, robust_water_filling, certify_run, robust_applies, exact=True))
        return run_plan(plan, ctx, log, what="water-filling", backend=be.name)

    def _solve_jobs(self, params: WaterParams, t0: float, log: SolveLog) -> Allocation:
        """Water-filling job by job (the symmetry plan's ``exact`` step)."""
        found = self.run_water(params, log)
        run, cert = found.result, found.certificate
        certs = run.certs
        certs[0] = cert
        if run.unproven is not None:  # the end check's verdict (the max-min level is proven)
            log.step(PARETO_UNPROVEN)
            log.hand_over(found.strategy, PARETO_UNPROVEN, run.unproven)
        return water_allocation(self, run.xcol, capacity_prices(run.first[1]), cert,
                                tuple(certs), log, params, t0, run.levels, run.floors,
                                run.unproven)

    def _fast(self, ctx: WaterContext) -> WaterRun:
        """The fast water-filling (module docstring: rule (a), saturation jumps, the end
        check); raises where it cannot prove its result (the plan's robust strategy runs)."""
        inst, U, be, cap_levels = self.inst, ctx.U, ctx.backend, ctx.max_levels
        btol = ctx.params.btol
        n = inst.n
        solver = ctx.solver()
        floors = np.zeros(n)
        frozen = np.zeros(n, dtype=bool)
        certs: list[Certificate] = []
        first: tuple[LevelStage, Any] | None = None
        xcol = np.zeros(inst.E)
        levels = rounds = 0
        thr_frz = btol * np.ones(n)  # each job's threshold when it was frozen
        use_fast = StructuredLevels(ctx.params.method in ("auto", "fast"))
        # each level changes only the rows of the jobs the last one froze: where fairalloc
        # chose HiGHS, a level LP starts HiGHS' simplex from the last level's basis (few
        # pivots, and an exact vertex: floors met to rounding, not to a tolerance)
        solver.warm_levels = True
        solver.infeasible_votes = 1  # (an infeasible level: its floors are anchored, below)
        resumes, bwarm = 0, list[Any]([None])  # bwarm: the last bottleneck LP's basis
        # the certified bounds of the LPs that froze jobs, kept to prove them at the end at
        # the levels the final allocation reaches (`water_path.Proof`)
        proofs: list[Proof] = []
        risky = False  # a decision whose proof the end check's LP must back (ill-conditioned)
        while True:
            if frozen.all():
                # end check: every job proven at the allocation's levels (standing, price proofs,
                # one LP over the rest: all with ``risky``), else risers unfrozen, resumed
                thr_end = np.maximum(thr_frz, btol * np.maximum(1.0, floors))
                chk = end_check(inst, solver, U, xcol, thr_end, self._max_level, proofs, bwarm,
                                every=risky, btol=btol, prices=level_prices(first, proofs))
                certs += chk.certs
                floors = chk.levels
                if chk.ok:
                    break
                if resumes == _END_RESUMES or not chk.risers.any():
                    raise CertificateError(
                        f"water-filling: {int((~chk.proven).sum())} frozen jobs can still rise "
                        f"(their rises are bounded only by {chk.bound:.3g} relative) after "
                        f"{resumes} resumed rounds", certificate=chk.certs[-1], backend=be.name)
                resumes += 1
                rounds = 0  # (the level cap counts each round: a resumed one refreezes jobs)
                frozen &= ~chk.risers
                xcol = chk.x
                floors = anchored_floors(floors, U, xcol)  # reached exactly by the LP's point
            if rounds >= cap_levels:
                raise SolverError(f"water-filling did not finish within {cap_levels} levels",
                                  backend=be.name, status="iteration_limit")
            rounds += 1
            levels += 1
            w = self.job_weights(frozen)
            stage = LevelStage(U, w, floors.copy(), f"water-filling level {levels}")
            try:
                res = level_lp(solver, stage, use_fast, xcol)
            except InfeasibleError:
                # HiGHS declared the thin face of floors met only to tolerance infeasible: anchor
                # them at the last (repaired, exactly feasible) allocation's levels, solve again
                solver.step(FLOORS_ANCHORED)
                floors = anchored_floors(floors, U, xcol)
                stage = LevelStage(U, w, floors.copy(), f"water-filling level {levels}")
                res = level_lp(solver, stage, use_fast, xcol)
            certs.append(res.cert)
            if first is None:
                first = (stage, res)
            theta = res.value
            # a rise below the certified accuracy is 0: floors raised by rounding noise
            # (1e-20 x a weight) would be floors no solver meets relative to their size
            c0 = res.cert
            acc = c0.gap_tol * (c0.scale if c0.scale is not None
                                else max(abs(c0.primal_value), abs(c0.dual_bound)))
            if levels > 1 and theta <= acc:
                theta = 0.0
            # a found point beyond the certified dual bound D meets the frozen floors only to
            # the solver's tolerance, amplified by large duals: rule (a) is not used below
            overshoot = res.cert.dual_bound < theta - acc
            # the new floors are the certified level itself (reached by the allocation): a
            # slack per job would let one job rise by the others' slack, hiding bottlenecks
            before = floors
            floors = floors + w * max(theta, 0.0)
            xcol = res.x[: inst.E]
            cand = w > 0
            # a rise below the level's certified accuracy (acc, in level units; w_m acc in job
            # m's floor units) is no evidence either way: the bottleneck threshold is at least
            # twice it, so a job whose only possible rise is rounding counts as bottlenecked
            thr = np.maximum(btol * np.maximum(1.0, floors), 2.0 * acc * w)
            thr_frz = np.where(frozen, thr_frz, thr)  # kept for the jobs this level freezes
            # (a') saturated jobs: a level never exceeds the job's best column run all the time
            sat = cand & (floors >= self._max_level - thr)
            if sat.any():
                # the level ended where jobs saturate: jump over every further saturation
                # event up to the next capacity event (a bisection of feasibility LPs on the
                # closed-form saturation trajectory) instead of one level per saturating job
                jump = saturation_jump(self, solver, U, before, frozen, sat, use_fast, btol, certs,
                                       xcol)
                levels += jump[2]
                if jump[0] is not None:
                    floors, xcol = jump[0], jump[1]
                    frozen |= ~frozen & (floors >= self._max_level
                                         - btol * np.maximum(1.0, floors))
                    continue
            # (a) certified bottlenecks: for any allocation keeping every level at its new
            # floor, sum_m lambda_m (u_m - floor_m) <= D - theta_floor (weak duality with the
            # level LP's duals, D = its certified dual bound), so a job with lambda_m > 0
            # can rise by at most (D - theta_floor) / lambda_m
            # Evidence is judged against scaled tolerances, never 0 (a dual of 5e-17 is noise,
            # a room of -2.6e-16 rounding): (a) needs a dual above the largest dual's noise
            # and room / lambda_m <= thr; a job whose dual is noise goes to the LPs of (c).
            lam = np.maximum(res.block("level"), 0.0)
            proof = Proof(floors.copy(), lam, res.cert.dual_bound - max(theta, 0.0),
                          prices=capacity_prices(res))
            # The bound holds at EXACT floors; the found point and later LPs meet them only to
            # a tolerance, which duals of 1e8 (10 types) amplify (then (a) froze jobs that can
            # rise 7x): the room adds the found point's amplified violations, and (a) is trusted
            # only when they and theta - D are within the level's accuracy (else (c) decides)
            amp = amplified_violation(lam, U, xcol, floors)
            trusted = not overshoot and amp <= acc
            # the floating-point evaluation needs a margin: rounding of the level's scale
            room = (max(res.cert.dual_bound - theta, 0.0) + amp
                    + _ROUNDING * acc / c0.gap_tol)
            lam_w = lam * np.where(w > 0, w, 0.0)  # sum_m w_m lambda_m = 1 at a level optimum
            noise = _DUAL_NOISE * max(float(lam_w.max(initial=0.0)), 1.0)
            firm = cand & (lam_w > noise) & trusted
            with np.errstate(divide="ignore"):
                bott = firm & (room / np.where(firm, lam, 1.0) <= thr)
            if not solver.tuning.water_dual_rule:  # every job frozen: the end check decides
                trusted = not overshoot
                bott = cand & trusted
            if theta <= 0.0:  # floors unchanged: the bound at exact floors, even if not trusted
                bott |= cand & (proof.bound(floors) <= thr)  # (bottleneck LPs at relaxed
                # floors see false risers); the end check proves it at the final levels
            if bott.any():
                proofs.append(proof)
            # the end check's LP covers every job (one whole LP: 4x the rest at 8,192 jobs)
            # when (a) was not trusted, or decided where the duals amplify feas_tol beyond the
            # level's accuracy; otherwise only the jobs no standing proof covers at the end
            risky |= (not trusted or (bool(bott.any()) and ctx.params.feas_tol * dot(
                lam, np.maximum(1.0, floors)) > solver.tuning.end_check_ratio * acc))
            bott |= sat
            if sat.any():
                # a level ended by saturation: the other jobs can usually still rise; they
                # are decided by the next level (whose LP ends at a capacity event) rather
                # than by bottleneck LPs here
                frozen |= bott
                continue
            if bott.any() and theta > 0.0:
                # the level rose and froze jobs: the next level decides the others (it rises,
                # or its duals freeze them): one level LP instead of bottleneck LPs here
                frozen |= bott
                continue
            # (b) constructive risers: spare time and a column on a type with spare workers
            rise = cand & ~bott & can_rise(self.inst, self.unorm, xcol, thr)
            undecided = cand & ~bott & ~rise
            if not bott.any() and not undecided.any():
                undecided = cand.copy()  # cannot happen at an optimum; decide by LP
            # (c) the rest by bottleneck LPs (exact, no big-M): maximise the capped rises of
            # the undecided jobs with every level at its floor; a job that rises is not
            # bottlenecked; if none can, the LP's optimum proves all are
            while undecided.any():
                sigma, x2, cert2 = bottleneck_lp(inst, floors, undecided, solver, U, thr, bwarm,
                                                 anchor=xcol, proofs=proofs)
                certs.append(cert2)
                up = undecided & (sigma > thr)
                if not up.any():
                    bott |= undecided
                    break
                xcol = x2
                undecided &= ~up
            if theta <= 0.0 and not bott.any():
                # the level did not rise, yet every candidate "rose" in a bottleneck LP: those
                # rises exist only at floors relaxed by _FLOOR_SLACKS, amplified by large duals
                # (with exact floors, a level that cannot rise has a bottlenecked candidate).
                # The level LP proves, to its accuracy, that they cannot rise together: freeze
                # them (the end check then proves or repairs the result) instead of cycling
                bott, risky = cand, True
            frozen |= bott
        assert first is not None
        return WaterRun(xcol, floors, levels, first, certs, solver, proofs=proofs)


def _fast_applies(ctx: WaterContext) -> bool:
    return ctx.params.tuning.water_fast


def water_filling(jobs: Jobs, cluster: Cluster, *, entities: Sequence[Hashable] | None = None,
                  entity_weights: Mapping[Hashable, float] | None = None,
                  entity_policies: Mapping[Hashable, str] | None = None,
                  order: ArrayLike | None = None, pairs: JobPairs | None = None,
                  unconsolidated_throughput: ArrayLike | None = None,
                  consolidated_capacity: ArrayLike | None = None, method: str = "auto",
                  backend: str | Backend | None = None, gap_tol: float = GAP_TOL,
                  feas_tol: float = FEAS_TOL, stage_tol: float = STAGE_TOL,
                  bottleneck_tol: float = BOTTLENECK_TOL, max_levels: int | None = None,
                  work_conserving: bool | None = None, symmetry: bool = True,
                  tuning: Tuning | None = None) -> Allocation:
    """Hierarchical max-min fairness by water-filling (Gavel §4.3).

    The result is Pareto efficient: no job's level can rise without another's falling.

    Parameters
    ----------
    jobs : fairalloc.Jobs
    cluster : fairalloc.Cluster
    entities, entity_weights, entity_policies, order
        The hierarchy (see `fairalloc.WaterFilling`).
    pairs, unconsolidated_throughput, consolidated_capacity
        Space sharing and placement sensitivity (see
        `fairalloc.ThroughputPolicy`).
    method, backend, gap_tol, feas_tol, stage_tol, bottleneck_tol, max_levels, work_conserving
        See `fairalloc.throughput.WaterFilling.solve`.
    symmetry : bool
        Solve over symmetry classes of jobs (default ``True``; see `WaterFilling.solve`).
    tuning : fairalloc.throughput.Tuning, optional
        Performance knobs of the solve plans (never changes an answer).

    Returns
    -------
    Allocation

    Examples
    --------
    Two entities of weight 2 and 1; the second runs FIFO. On one GPU, entity 0's job gets
    2/3 and the FIFO entity's first job 1/3:

    >>> import fairalloc as fa
    >>> jobs = fa.Jobs([[1.0], [1.0], [1.0]])
    >>> a = fa.water_filling(jobs, fa.Cluster({"gpu": 1}), entities=["a", "b", "b"],
    ...                      entity_weights={"a": 2, "b": 1}, entity_policies={"b": "fifo"},
    ...                      order=[0, 1, 2])
    >>> a.x.ravel().round(6).tolist()
    [0.666667, 0.333333, 0.0]
    """
    b = WaterFilling(jobs, cluster, entities=entities, entity_weights=entity_weights,
                     entity_policies=entity_policies, order=order, pairs=pairs,
                     unconsolidated_throughput=unconsolidated_throughput,
                     consolidated_capacity=consolidated_capacity)
    return b.solve(method=method, backend=backend, gap_tol=gap_tol, feas_tol=feas_tol,
                   stage_tol=stage_tol, bottleneck_tol=bottleneck_tol, max_levels=max_levels,
                   work_conserving=work_conserving, symmetry=symmetry, tuning=tuning)


def _unconsolidated(inst: Any) -> np.ndarray:
    """The unconsolidated throughput table ``(n, k)`` of an instance with placement."""
    U = np.zeros((inst.n, inst.k))
    sel = inst.col_kind == 1
    cols = np.flatnonzero(sel)
    pos = np.isin(inst.mem_col, cols)
    U[inst.mem_job[pos], inst.col_type[inst.mem_col[pos]]] = inst.mem_tp[pos]
    return U

