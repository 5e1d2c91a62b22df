"""Shockwave's planner: `fairalloc.plan_schedule` and
`fairalloc.PlanResult` (the paths of the `fairalloc.schedule`
docstring: the fast path, the full MILP, ``"auto"``'s hand-over).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .._deprecate import renamed_kwargs
from .._display import Table, labelled
from .._validation import (
    as_bool,
    as_labels,
    as_option,
    as_positive_float,
    as_positive_int,
    as_real_array,
    as_time_limit,
    as_tolerance,
)
from ..backends import Backend, LinearProgram
from ..certificates import milp_certificate
from ..errors import (
    CertificateError,
    FairallocError,
    InfeasibleError,
    InputError,
    SolverError,
)
from ..results import Certificate, Result, SolveStats, Status, fill_labels, require_pandas
from ..tolerances import FEAS_TOL
from .count_milp import _count_milp, _cover_cut
from .instance import (
    EPOCH_RTOL,
    EXPECTATIONS,
    MAKESPAN_KINDS,
    REGIME_MODELS,
    UTIL_FLOOR,
    WELFARE_NORMS,
    WORK_CONSERVATION,
    PlanJob,
    _build_plan_instance,
    _count_value,
    _data_scale,
    _evaluate,
    _PlanInstance,
    _schedule_residual,
)
from .lagrangian import (
    _bisect_price,
    _greedy_fill,
    _kappa_candidates,
    _LagrangianDual,
    _masked,
    _restart_lower,
)
from .milp import _MilpRunner, _schedule_milp
from .packing import _greedy_upstream, _realise

__all__ = ["PLAN_MAKESPAN_KINDS", "PLAN_METHODS", "PlanResult", "plan_schedule"]

PLAN_METHODS = ("auto", "fast", "milp")
#: the plan's makespan terms: the instance's kinds and ``"longest"`` (``lam max_j R_j / Z0``)
PLAN_MAKESPAN_KINDS = (*MAKESPAN_KINDS, "longest")
# ACCURACY: relative slack (of the objective's data scale) used when comparing objective values
REL_SLACK = 1e-12
# ACCURACY: reduced-cost fixing keeps a count whose Lagrangian slack is within this relative
# margin of bound - value (round-off must not fix away an optimal count)
FIXING_RTOL = 1e-9
# PERFORMANCE: the core count MILP is solved to this fraction of the requested mip_gap (the
# packing may lose a little of its objective)
CORE_GAP_FRACTION = 0.5
# PERFORMANCE: most core count MILP solves (each adds a cover cut for a gang packing that fails)
MAX_CORE_SOLVES = 20
# ACCURACY: the MILP's own objective may exceed the schedule's recomputed objective by at most
# this relative amount of the certificate's scale
OBJECTIVE_AGREEMENT_RTOL = 1e-6
# ACCURACY: the smallest magnitude a relative gap is divided by
MAGNITUDE_FLOOR = 1e-300
# the stats.path steps that are one backend solve each (not a number: vocabulary)
SOLVE_STEPS = ("core-count-milp", "hard-ftf-count-milp", "milp")


@dataclass(frozen=True, repr=False)
class PlanResult(Result):
    """A Shockwave plan over a window of rounds, with its certificate.

    Parameters
    ----------
    allocation : ndarray of bool, shape (n, rounds)
        ``allocation[j, t]``: job ``j`` runs on its gang in round ``t`` (rows: the jobs in the
        order given; columns: rounds). The name every result uses; ``x`` is the same array.
        ``prices`` is ``None``: the integer program has no dual prices.
    rounds_given : ndarray of int, shape (n,)
        Rounds each job gets in the window.
    utility : ndarray, shape (n,)
        ``UTIL_j`` after the window (expected over scenarios in scenario mode).
    remaining : ndarray, shape (n,)
        ``R_j``: remaining isolated run time after the window (seconds).
    regime : ndarray of int, shape (n, rounds)
        Index into the job's ``regimes`` of the regime it is in when round ``t`` starts, for
        scheduled rounds (``-1`` elsewhere): the regime decomposition ``Y_j[k, t]`` of App. G.
    welfare : float
        ``(1/(N*M)) * sum_j rho_j^k log UTIL_j`` (``N*T`` with ``welfare_norm="rounds"``).
    makespan_bound : float
        ``H`` after the window (seconds).
    z0 : float
        The normaliser ``Z0``.
    restarts : int
        Rounds in which a job starts that did not run in the round before.
    bound : float
        Certified upper bound on the optimal objective.
    method : str
        ``"fast"`` or ``"milp"`` (the path whose schedule was returned).
    objective : float
        ``welfare - (lam/Z0) * makespan_bound - restart_penalty * restarts``.
    log_scale : float
        ``0`` unless ``rho^k`` would overflow or underflow a float (``|k log rho| > 600``):
        then ``objective``, ``welfare``, ``bound`` and the certificate are the true values
        multiplied by ``exp(-log_scale)`` (the weights are computed in log space relative to
        the largest; the makespan and restart terms are scaled alike, so the plan is the
        argmax of the true objective).
    ids : tuple
        The jobs' ids (``plan_schedule(ids=)``; default ``0..n-1``), used by ``to_frame()``
        and the notebook view.
    status : Status
        ``OPTIMAL`` only when ``certificate`` passed (`fairalloc.Result`).
    stats : SolveStats
        How it was computed (``stats.path``: the steps that ran).
    certificate : Certificate
        The certificate of ``objective`` against ``bound``.

    Attributes
    ----------
    schedule : ndarray of bool, shape (n, rounds)
        Alias of ``allocation`` (the plan's own name): a read-only property returning the
        same array, kept for existing code.

    Notes
    -----
    A plan whose gap target was not proven has ``status="time_limit"`` (its time limit ran
    out) or ``status="iteration_limit"`` (a work limit: ``node_limit``, or the fast path's
    fixed work budget) and ``certificate.ok == False``; ``certificate.relative_gap`` is the gap over
    ``certificate.scale`` (``max(|objective|, |bound|, data scale)``).

    Examples
    --------
    >>> jobs = [PlanJob(workers=1, total_epochs=100, done_epochs=10, ftf=2.0,
    ...                 regimes=[(60.0, 90)]),
    ...         PlanJob(workers=1, total_epochs=100, done_epochs=50, ftf=1.0,
    ...                 regimes=[(60.0, 50)])]
    >>> plan = plan_schedule(jobs, 1, rounds=2)
    >>> plan.allocation.sum(axis=0).tolist(), plan.schedule is plan.allocation
    ([1, 1], True)
    >>> int(plan.rounds_given.sum()), plan.status.value, plan.certificate.ok
    (2, 'optimal', True)
    """

    allocation: np.ndarray
    rounds_given: np.ndarray
    utility: np.ndarray
    remaining: np.ndarray
    regime: np.ndarray
    welfare: float
    makespan_bound: float
    z0: float
    restarts: int
    bound: float
    method: str
    log_scale: float = 0.0
    ids: tuple[Hashable, ...] = ()

    LABEL_FIELDS: ClassVar[tuple[str, ...]] = ("ids",)

    def __post_init__(self) -> None:
        fill_labels(self, ids=self.allocation.shape[0])
        super().__post_init__()

    @property
    def x(self) -> np.ndarray:
        """Alias of ``allocation`` (the name every result shares; the same object, not a
        copy)."""
        return self.allocation

    @property
    def prices(self) -> None:
        """``None``: a mixed-integer plan has no convex dual, so no prices. Every result has
        ``prices``."""
        return None

    @property
    def relative_gap(self) -> float:
        """``gap / |objective|`` -- the MIP solvers' relative gap (0 when both are 0)."""
        if self.gap <= 0:
            return 0.0
        return self.gap / max(abs(self.objective), MAGNITUDE_FLOOR)

    @property
    def schedule(self) -> np.ndarray:
        """Alias of ``allocation`` (the same read-only array, not a copy)."""
        return self.allocation

    def _facts(self) -> list[tuple[str, str]]:
        n, rounds = self.schedule.shape
        return [("jobs", str(n)), ("rounds", str(rounds)), ("method", self.method),
                *super()._facts()]

    def _tables(self) -> list[Table]:
        rounds = self.allocation.shape[1]
        return [labelled("allocation (rounds each job runs)", "job", self.ids,
                         [f"t{t}" for t in range(rounds)], self.schedule,
                         extra=[("rounds", self.rounds_given), ("utility", self.utility)])]

    def jobs_in_round(self, t: int) -> np.ndarray:
        """Indices of the jobs scheduled in round ``t``."""
        t = as_positive_int(t, "t", allow_zero=True)
        if t >= self.schedule.shape[1]:
            raise InputError(f"t = {t} is outside the {self.schedule.shape[1]}-round window",
                             argument="t")
        return np.flatnonzero(self.schedule[:, t])

    def to_frame(self) -> Any:
        """One row per job (index: ``ids``): rounds, utility, remaining time, then one column
        per round."""
        pd = require_pandas()
        base = pd.DataFrame({"rounds": self.rounds_given, "utility": self.utility,
                             "remaining": self.remaining},
                            index=pd.Index(list(self.ids), name="job"))
        sched = pd.DataFrame(self.allocation, index=base.index,
                             columns=[f"t{t}" for t in range(self.allocation.shape[1])])
        return pd.concat([base, sched], axis=1)


def _regime_index(inst: _PlanInstance, x: np.ndarray) -> np.ndarray:
    before = (np.cumsum(x, axis=1) - x) * inst.D
    k = inst.reg_seconds.shape[1] - 1
    tol = EPOCH_RTOL * np.abs(inst.reg_seconds).max(axis=1, initial=0.0)[:, None, None]
    idx = (inst.reg_seconds[:, None, 1:] <= before[:, :, None] + tol).sum(axis=-1)
    idx = np.minimum(idx, max(k - 1, 0))
    return np.where(x, idx, -1)


@dataclass
class _PlanCandidate:
    """One path's schedule, its value and bound, and the steps it ran."""

    x: np.ndarray
    value: float
    bound: float
    method: str
    iterations: int = 0
    path: tuple[str, ...] = ()
    raw_status: str = ""  # the last backend solve's status ("" when none ran)
    lp: LinearProgram | None = None
    lp_x: np.ndarray | None = None
    lp_bound: float = math.nan



def _fast(inst: _PlanInstance, wc: str, *, mip_gap: float, deadline: float | None,
          solver: _MilpRunner) -> _PlanCandidate:
    """Lagrangian counts, reduced-cost fixing, core count MILP, packing (package docstring).

    Path steps: ``"lagrangian"``, then one ``"core-count-milp"`` per core solve (each later
    one with a cover cut added) when the packed counts are not certified.
    """
    gp = _restart_lower(inst)
    gpm = _masked(inst, gp)
    best_lag: _LagrangianDual | None = None
    n_inc: np.ndarray | None = None
    z_inc = -math.inf
    seen: list[np.ndarray] = []
    path = ["lagrangian"]
    raw = ""
    # makespan multipliers: first the a-priori split, then splits aimed at the incumbent's H
    for pass_ in range(2 if inst.coef > 0 else 1):
        for kappa in _kappa_candidates(inst, n_inc if pass_ else None):
            if any(np.array_equal(kappa, old) for old in seen):
                continue
            seen.append(kappa)
            lag, n_hi, n_lo = _bisect_price(inst, gpm, kappa)
            if best_lag is None or lag.value < best_lag.value:
                best_lag = lag
            n = _greedy_fill(inst, gp, n_hi, n_lo, kappa)
            z = _count_value(inst, n, gp)
            if z > z_inc:
                z_inc, n_inc = z, n
    assert best_lag is not None and n_inc is not None
    x, value = _realise(inst, n_inc, gp, best_lag.kappa, wc)
    bound = best_lag.value
    if not inst.certified(value, bound, mip_gap):
        # reduced-cost fixing against the realised schedule: a count whose Lagrangian slack
        # exceeds bound - value cannot be part of a better schedule
        phi = best_lag.phi
        slack = phi.max(axis=1, keepdims=True) - phi
        ok = slack <= (bound - value) * (1 + FIXING_RTOL) + REL_SLACK * inst.gap_scale(value,
                                                                                     bound)
        lo = np.minimum(np.argmax(ok, axis=1), n_inc)
        hi = np.maximum(inst.T - np.argmax(ok[:, ::-1], axis=1), n_inc)
        cuts: list[tuple[np.ndarray, int]] = []
        for _ in range(MAX_CORE_SOLVES):  # cover cuts for gang packings that fail
            left = None if deadline is None else deadline - time.perf_counter()
            n_core, core_bound, _, raw = _count_milp(inst, gp, lo, hi, time_limit=left,
                                                     mip_gap=mip_gap * CORE_GAP_FRACTION,
                                                     solver=solver, extra_cuts=cuts)
            path.append("core-count-milp")
            if n_core is None:
                break
            bound = min(bound, max(value, core_bound))
            x2, value2 = _realise(inst, n_core, gp, best_lag.kappa, wc)
            if value2 > value:
                x, value = x2, value2
            if inst.certified(value, bound, mip_gap):
                break
            cut = _cover_cut(inst, n_core)
            if cut is None or (deadline is not None and time.perf_counter() >= deadline):
                break
            cuts.append(cut)
    return _PlanCandidate(x=x, value=value, bound=max(bound, value), method="fast",
                          iterations=len(seen), path=tuple(path), raw_status=raw)


def _milp(inst: _PlanInstance, wc: str, *, mip_gap: float, deadline: float | None,
          solver: _MilpRunner, start_x: np.ndarray | None = None
          ) -> tuple[_PlanCandidate | None, str]:
    """The full MILP (path step ``"milp"``, one solve): its candidate (None when the backend
    returned no schedule) and the backend's status."""
    left = None if deadline is None else deadline - time.perf_counter()
    if wc == "greedy":
        start_x = None  # the greedy post-pass schedule need not be optimal for "none"
    x, bound, sol, lp = _schedule_milp(inst, "none" if wc == "greedy" else wc,
                                       time_limit=left, mip_gap=mip_gap, solver=solver,
                                       start_x=start_x)
    raw = str(sol.raw_status or sol.status)
    if x is None:
        return None, raw
    lp_x = sol.x
    if wc == "greedy":
        x = _greedy_upstream(inst, x)
    value = _evaluate(inst, x)["objective"]
    return _PlanCandidate(x=x, value=value, bound=max(bound, value), method="milp",
                          iterations=sol.iterations, path=("milp",), raw_status=raw, lp=lp,
                          lp_x=lp_x, lp_bound=bound), raw


@renamed_kwargs(mip_gap="gap_tol")
def plan_schedule(
    jobs: Sequence[PlanJob],
    num_gpus: int,
    *,
    rounds: int = 20,
    round_duration: float = 120.0,
    k: float = 5.0,
    lam: float = 1e-3,
    method: str = "auto",
    gap_tol: float = 1e-3,
    time_limit: float | None = None,
    work_conservation: str = "exact",
    restart_penalty: float = 0.0,
    expectation: str = "mean",
    makespan: str = "paper",
    regime_model: str = "forecast",
    z0: float | None = None,
    util_floor: float = UTIL_FLOOR,
    warm_start: bool = False,
    threads: int | None = None,
    backend: str | Backend = "highs",
    ids: Any = None,
    welfare_norm: str = "gpus",
    remaining_limit: Any = None,
    node_limit: int | None = None,
    log_breakpoints: Any = None,
    progress_seconds: Any = None,
) -> PlanResult:
    """Plan the next ``rounds`` rounds with Shockwave's program (Eq. 11, App. G.1-G.3, H).

    Maximises ``(1/(N*M)) * sum_j rho_j^k log UTIL_j - (lam/Z0) * H`` (minus
    ``restart_penalty`` per restart) over binary schedules with ``sum_j w_j x[j, t] <= M``
    in every round and work conservation; see `fairalloc.schedule` for the
    semantics.

    Parameters
    ----------
    jobs : sequence of PlanJob
        The active jobs.
    num_gpus : int
        ``M``, GPUs in the cluster.
    rounds : int, default 20
        ``T``, rounds in the window (§6.1).
    round_duration : float, default 120.0
        ``D``, seconds per round.
    k : float, default 5.0
        Exponent of the FTF weights ``rho_j^k`` (the paper's ``k``; upstream calls it
        ``lambda``).
    lam : float, default 1e-3
        Makespan regulariser coefficient (the paper's ``lambda``; upstream calls it ``k``).
    method : {"auto", "fast", "milp"}
        See `fairalloc.schedule`.
    gap_tol : float, default 1e-3
        Relative gap to certify (upstream's Gurobi ``MIPGap``; the deprecated spelling
        ``mip_gap`` still works with a ``DeprecationWarning``): ``bound - objective`` at most
        ``gap_tol * max(|objective|, |bound|, data scale)``, where the data scale is the sum of
        the FTF weights times each job's log range over the window plus the makespan term
        before it (``formulations/shockwave_plan.md``), so that an objective near zero is still
        judged against the size of what the window can change. In ``(0, 0.1]``.
    time_limit : float, optional
        Seconds for the whole call; the best certified schedule found is returned with
        ``status="time_limit"`` and ``certificate.ok == False`` if the gap target was not
        certified in time (``status="iteration_limit"`` when a work limit stopped it first:
        ``node_limit``, or with ``method="fast"`` the fast path's fixed work budget). A plan
        cut short by it depends on the machine's speed and load; ``node_limit`` bounds the
        work reproducibly.
    node_limit : int, optional
        Branch-and-bound nodes per MILP solve (HiGHS' ``mip_max_nodes``; the backend's node
        limit): a solve stopped by it contributes its best schedule and bound, and a plan whose
        gap target is then not certified has ``status="iteration_limit"`` and
        ``certificate.ok == False``. A work limit: the same call gives the same plan on any
        machine, however loaded. ``None``: no limit.
    work_conservation : {"exact", "greedy", "none"}
        ``"exact"`` (App. H): the constraint is part of the program. ``"greedy"``: upstream's
        post-pass filling idle GPUs with the jobs of largest remaining run time after solving
        without it. ``"none"``: no such constraint.
    restart_penalty : float, default 0.0
        Objective units charged per restart (a job running in a round but not in the one
        before, or not before the window unless ``PlanJob.running``).
    expectation : {"mean", "scenarios"}
        ``"mean"``: the posterior-mean trajectory (``PlanJob.regimes``; §5). ``"scenarios"``:
        ``log E[UTIL_j]`` over ``PlanJob.scenarios`` (App. F), and ``H`` of the expected
        remaining times; jobs without scenarios use their regimes.
    makespan : {"paper", "max_remaining", "scale_free", "longest"}
        ``"paper"``: Eq. 10 with gang sizes, normalised by ``Z0``. ``"max_remaining"``:
        upstream's regulariser, the largest remaining run time in raw seconds (no ``Z0``).
        ``"scale_free"``: Eq. 10 normalised by ``M * Z0`` (coefficient ``lam / (M Z0)``), so
        that the trade-off between one GPU-round of welfare and one GPU-round of makespan
        bound does not grow with the cluster (``formulations/makespan_regularizer.md``);
        not in the paper. ``"longest"``: ``lam * max_j R_j / Z0``, upstream's term (the
        longest remaining time, no area part) with the paper's normalisation: the share of the
        cluster it pulls towards the longest jobs does not depend on ``M`` or ``N``
        (``formulations/shockwave_options.md``); not in the paper.
    regime_model : {"forecast", "flat"}
        ``"flat"`` reproduces upstream's lack of regime decomposition: every job advances at
        one mean epoch duration (its forecast total is kept).
    z0 : float, optional
        ``Z0``; default ``sum_j P_j`` (`fairalloc.makespan_normalizer` of the remaining
        run times before the window).
    util_floor : float, default 1e-6
        ``log UTIL`` is evaluated at ``max(UTIL, util_floor)`` so that a job with no finished
        epoch that gets no round costs a finite amount (the value upstream's piecewise log
        takes at zero progress).
    log_breakpoints : sequence of float, optional
        Upstream's piecewise-linear log: ``log UTIL`` replaced by its linear interpolation
        between these progress fractions (increasing, from 0 to 1; ``log(util_floor)`` at 0).
        Upstream uses ``(0, 0.2, 0.4, 0.6, 0.8, 1)`` (``UPSTREAM_LOG_BREAKPOINTS``: slope about
        61 below 20 % progress). Default: the exact log.
    progress_seconds : array_like, shape (n,), optional
        Upstream's continuous epoch progress: the welfare counts ``n`` rounds of job ``j`` as
        ``min(n D / s_j, E_j - F_j)`` more epochs at this one epoch time ``s_j`` (upstream: the
        mean epoch time seen so far), and its remaining time is ``max(0, R_j - min(n D,
        (E_j - F_j) s_j))``. Default: both along the job's regimes.
    warm_start : bool, default False
        ``method="milp"`` only: run the fast path first and give its schedule to HiGHS as a
        MIP start (``"auto"`` always does so when it falls back to the MILP).
    threads : int, optional
        Solver threads.
    backend : str or Backend, default "highs"
        The MILP backend (`fairalloc.get_backend`; it must support
        ``"milp"``) that solves the fast path's core count MILP and the full MILP. ``stats.backend``
        names it when it ran (``"none"`` when the fast path needed no solve) and
        ``stats.raw_status`` is its last status.
    ids : sequence of hashable, optional
        The jobs' ids (unique, one per job); default ``0..n-1``. The plan carries them and
        labels ``to_frame()`` and its notebook view with them.
    welfare_norm : {"gpus", "rounds"}
        The welfare sum is divided by ``N*M`` (``"gpus"``: the paper's Eq. 11) or by ``N*T``
        (``"rounds"``: upstream's code). Only the ratio to the makespan term changes: with
        ``makespan="paper"``, ``"rounds"`` plans exactly like ``"gpus"`` with ``lam * T / M``.
    remaining_limit : array_like, shape (n,), optional
        Hard finish-time constraints (upstream's hard-FTF-first step): job ``j``'s remaining run
        time after the window must be at most ``remaining_limit[j]`` seconds (``inf``: no
        limit), i.e. it gets at least the fewest rounds whose forecast ``R_j`` meets it. The plan
        solves the count MILP with those lower bounds (then the full MILP if the counts do not
        pack or are not certified); ``stats.path`` starts with ``"hard-ftf-count-milp"``.
        Raises `InfeasibleError` when no schedule meets every limit (a job that cannot meet
        its limit even running every useful round, or more GPU-rounds than the window has, or
        the solver proves it); the caller then plans without them (``ShockwavePolicy(
        hard_ftf=True)`` does). Not with ``method="fast"``.

    Returns
    -------
    PlanResult
        ``stats.path`` names the steps that ran, in order: ``"lagrangian"`` (the fast path's
        Lagrangian counts and bound; no solver), ``"core-count-milp"`` (one backend solve of
        the fast path's count-level core MILP; repeated once per cover cut added for a gang
        packing that failed) and ``"milp"`` (one backend solve of the full MILP);
        ``stats.solves`` counts the last two. ``stats.fallbacks`` records ``"auto"``'s
        hand-over when the fast path could not certify ``gap_tol``, e.g.
        ``("lagrangian->milp: the fast path proved a relative gap of 0.02, above gap_tol =
        0.001",)`` (``method="milp"`` with ``warm_start`` runs the fast path first by request:
        no fallback).

    Raises
    ------
    InputError
        Bad jobs or parameters (e.g. a gang larger than the cluster), or a backend without
        MILP support.
    InfeasibleError
        ``remaining_limit`` cannot be met.
    SolverError
        ``method="milp"`` found no schedule within the time limit, or the backend failed.
    CertificateError
        The returned schedule violates a constraint or the gap exceeds its tolerance.

    Examples
    --------
    Three single-GPU jobs, two GPUs, four rounds; the job furthest behind (FTF 2) gets every
    round, the other two share the second GPU:

    >>> jobs = [PlanJob(workers=1, total_epochs=100, done_epochs=10, ftf=2.0,
    ...                 regimes=[(60.0, 90)]),
    ...         PlanJob(workers=1, total_epochs=100, done_epochs=50, ftf=1.0,
    ...                 regimes=[(60.0, 50)]),
    ...         PlanJob(workers=1, total_epochs=100, done_epochs=50, ftf=1.0,
    ...                 regimes=[(60.0, 50)])]
    >>> plan = plan_schedule(jobs, 2, rounds=4)
    >>> plan.schedule.sum(axis=1).tolist(), plan.status.value
    ([4, 2, 2], 'optimal')
    """
    t0 = time.perf_counter()
    method = as_option(method, "method", PLAN_METHODS)
    wc = as_option(work_conservation, "work_conservation", WORK_CONSERVATION)
    expectation = as_option(expectation, "expectation", EXPECTATIONS)
    makespan = as_option(makespan, "makespan", PLAN_MAKESPAN_KINDS)
    regime_model = as_option(regime_model, "regime_model", REGIME_MODELS)
    gap = as_tolerance(gap_tol, "gap_tol")
    limit = as_time_limit(time_limit)
    if threads is not None:
        threads = as_positive_int(threads, "threads")
    if node_limit is not None:
        node_limit = as_positive_int(node_limit, "node_limit")
    warm_start = as_bool(warm_start, "warm_start")
    solver = _MilpRunner.of(backend, threads, node_limit)
    inst = _build_plan_instance(jobs, num_gpus, rounds=rounds, round_duration=round_duration,
                                k=k, lam=lam, z0=z0, util_floor=util_floor,
                                expectation=expectation,
                                makespan="max_remaining" if makespan == "longest" else makespan,
                                regime_model=regime_model, restart_penalty=restart_penalty,
                                welfare_norm=as_option(welfare_norm, "welfare_norm",
                                                       WELFARE_NORMS),
                                log_breakpoints=log_breakpoints,
                                progress_seconds=progress_seconds)
    if makespan == "longest":
        inst = _longest_term(inst, z0)
    labels = as_labels(ids, "ids", inst.N, "jobs")
    min_count = None
    if remaining_limit is not None:
        if method == "fast":
            raise InputError("remaining_limit needs the count MILP or the full MILP: use "
                             "method='auto' or 'milp'", argument="method")
        min_count = _min_counts(inst, _as_limits(remaining_limit, inst.N))
    try:
        if min_count is not None:
            return _hard(inst, min_count, wc, gap, limit, solver, t0, labels if ids is not None
                         else None)
        plan = _plan(inst, method, wc, gap, limit, warm_start, solver, t0)
        return plan if ids is None else dataclasses.replace(plan, ids=labels)
    except FairallocError:
        raise
    except Exception as exc:  # numerical trouble must not escape as a foreign exception
        raise SolverError(f"plan_schedule failed: {type(exc).__name__}: {exc}",
                          backend=solver.name, status="exception") from exc


def _as_limits(value: Any, n: int) -> np.ndarray:
    """``remaining_limit`` as a float array of shape (n,): non-negative, ``inf`` allowed."""
    arr = as_real_array(value, "remaining_limit")
    if arr.shape != (n,):
        raise InputError(f"remaining_limit has shape {arr.shape}; expected ({n},)",
                         argument="remaining_limit")
    bad = np.flatnonzero(np.isnan(arr) | (arr < 0))
    if bad.size:
        i = int(bad[0])
        raise InputError(f"remaining_limit[{i}] = {arr[i]} (must be >= 0 or inf)",
                         argument="remaining_limit", index=(i,))
    return arr


def _min_counts(inst: _PlanInstance, limit: np.ndarray) -> np.ndarray:
    """The fewest rounds each job needs for its forecast remaining time after the window to be
    within ``limit`` (``remaining_limit``); `InfeasibleError` when no count up to its useful
    cap does, or when the counts need more GPU-rounds than the window has."""
    tol = EPOCH_RTOL * np.maximum(np.abs(limit), inst.rem[:, 0])
    ok = inst.rem <= (limit + tol)[:, None]
    ok &= np.arange(inst.T + 1)[None, :] <= inst.cap[:, None]
    bad = np.flatnonzero(~ok.any(axis=1))
    if bad.size:
        j = int(bad[0])
        raise InfeasibleError(
            f"remaining_limit[{j}] = {limit[j]:.6g} s cannot be met: job {j} has "
            f"{inst.rem[j, inst.cap[j]]:.6g} s left after its {int(inst.cap[j])} useful rounds "
            f"({bad.size} job(s) cannot meet their limit)", status="infeasible")
    n_min = np.argmax(ok, axis=1).astype(np.int64)
    need = int(inst.w @ n_min)
    if need > inst.capacity:
        raise InfeasibleError(f"remaining_limit needs {need} GPU-rounds; the window has "
                              f"{inst.capacity}", status="infeasible")
    return n_min


def _hard(inst: _PlanInstance, n_min: np.ndarray, wc: str, gap: float, limit: float | None,
          solver: _MilpRunner, t0: float, labels: Any) -> PlanResult:
    """The plan with at least ``n_min`` rounds per job: the count MILP on ``[n_min, cap]``
    packed into rounds, then the full MILP (with the packed schedule as its start when it
    honours ``n_min``) when the counts do not pack or the gap is not certified."""
    deadline = None if limit is None else t0 + limit
    gp = _restart_lower(inst)
    kappa = _kappa_candidates(inst, None)[0]
    path = ["hard-ftf-count-milp"]
    n, bound, _, raw = _count_milp(inst, gp, n_min, np.maximum(inst.cap, n_min),
                                   time_limit=limit, mip_gap=gap * CORE_GAP_FRACTION,
                                   solver=solver)
    best: _PlanCandidate | None = None
    if n is None:
        if "infeasible" in raw.lower():
            raise InfeasibleError(f"remaining_limit cannot be met (count MILP: {raw!r})",
                                  backend=solver.name, status=raw)
    else:
        x, value = _realise(inst, n, gp, kappa, wc)
        if np.all(x.sum(axis=1) >= n_min):
            best = _PlanCandidate(x=x, value=value, bound=max(bound, value), method="milp",
                                  path=tuple(path), raw_status=raw)
    if best is None or not inst.certified(best.value, best.bound, gap):
        left_ok = deadline is None or time.perf_counter() < deadline
        if left_ok or best is None:
            left = None if deadline is None else max(deadline - time.perf_counter(), 0.0)
            x0, mb, sol, lp = _schedule_milp(inst, "none" if wc == "greedy" else wc,
                                             time_limit=left, mip_gap=gap, solver=solver,
                                             start_x=None if best is None else best.x,
                                             min_count=n_min)
            path.append("milp")
            raw = str(sol.raw_status or sol.status)
            if x0 is None and best is None:
                cls = InfeasibleError if "infeasible" in raw.lower() else SolverError
                raise cls(f"no schedule meets remaining_limit (MILP status {raw!r})",
                          backend=solver.name, status=raw)
            if x0 is not None:
                if wc == "greedy":
                    x0 = _greedy_upstream(inst, x0)
                v0 = _evaluate(inst, x0)["objective"]
                cand = _PlanCandidate(x=x0, value=v0, bound=max(mb, v0), method="milp",
                                      path=tuple(path), raw_status=raw,
                                      lp=None if wc == "greedy" else lp,
                                      lp_x=sol.x, lp_bound=mb)
                b = min(mb, best.bound) if best is not None else mb
                if best is None or v0 > best.value:
                    best = cand
                best = dataclasses.replace(best, bound=max(b, best.value))
    assert best is not None
    plan = _result(inst, best, best.bound, wc, gap, t0, solver, iterations=0,
                   path=tuple(path), fallbacks=(), raw_status=raw, deadline=deadline,
                   min_count=n_min)
    return plan if labels is None else dataclasses.replace(plan, ids=labels)


def _longest_term(inst: _PlanInstance, z0: float | None) -> _PlanInstance:
    """``makespan="longest"``: the instance built with ``lam * max_j R_j`` (raw seconds) gets
    the coefficient ``lam / Z0`` instead, ``Z0`` the sum of the remaining times before the
    window (or ``z0``), and its data scale recomputed."""
    z = float(inst.rem[:, 0].sum()) if z0 is None else as_positive_float(z0, "z0")
    coef = inst.coef / z if z > 0 else 0.0
    inst = dataclasses.replace(inst, coef=coef, z0=z if z > 0 else 1.0)
    return dataclasses.replace(inst, data_scale=_data_scale(inst))


def _plan(inst: _PlanInstance, method: str, wc: str, gap: float, limit: float | None,
          warm_start: bool, solver: _MilpRunner, t0: float) -> PlanResult:
    deadline = None if limit is None else t0 + limit
    cands: list[_PlanCandidate] = []
    path: list[str] = []
    fallbacks: list[str] = []
    raw = ""
    if method in ("auto", "fast") or (method == "milp" and warm_start):
        fast = _fast(inst, wc, mip_gap=gap, deadline=deadline, solver=solver)
        cands.append(fast)
        path.extend(fast.path)
        raw = fast.raw_status or raw
    certified = bool(cands) and inst.certified(cands[0].value, cands[0].bound, gap)
    if method == "milp" or (method == "auto" and not certified and
                            (deadline is None or time.perf_counter() < deadline)):
        if method == "auto":
            c0 = cands[0]
            scale = inst.gap_scale(c0.value, c0.bound)
            proved = (c0.bound - c0.value) / scale if scale > 0 else math.inf
            fallbacks.append(f"{path[-1]}->milp: the fast path proved a relative gap of "
                             f"{proved:.3g}, above gap_tol = {gap:g}")
        start_x = cands[0].x if cands else None
        cand, raw = _milp(inst, wc, mip_gap=gap, deadline=deadline, solver=solver,
                          start_x=start_x)
        path.append("milp")
        if cand is None and method == "milp" and not cands:
            why = "within the time limit; raise time_limit or use method='fast'" if (
                deadline is not None and time.perf_counter() >= deadline) else \
                f"(its status: {raw!r}); try method='fast'"
            raise SolverError(f"backend {solver.name!r} returned no schedule {why}",
                              backend=solver.name, status=raw or "time_limit")
        if cand is not None:
            cands.append(cand)
    best = max(cands, key=lambda c: c.value)
    bound = min(c.bound for c in cands)
    bound = max(bound, best.value)
    return _result(inst, best, bound, wc, gap, t0, solver,
                   iterations=sum(c.iterations for c in cands), path=tuple(path),
                   fallbacks=tuple(fallbacks), raw_status=raw, deadline=deadline)


def _result(inst: _PlanInstance, cand: _PlanCandidate, bound: float, wc: str, gap: float,
            t0: float, solver: _MilpRunner, *, iterations: int, path: tuple[str, ...],
            fallbacks: tuple[str, ...], raw_status: str, deadline: float | None,
            min_count: np.ndarray | None = None) -> PlanResult:
    """Certify ``cand`` independently of the solver and wrap it with the call's statistics
    (``path``: every step that ran, in order; ``raw_status``: the last solve's status)."""
    x = cand.x
    ev = _evaluate(inst, x)
    value = ev["objective"]
    scale = inst.gap_scale(value, bound)
    # feasibility is checked exactly on the returned integer schedule
    residual = _schedule_residual(inst, x, wc)
    if min_count is not None:  # the hard finish-time constraints, in rounds of the window
        residual = max(residual, float(np.max(min_count - x.sum(axis=1), initial=0)) / inst.T)
    if cand.lp is not None and cand.lp_x is not None and wc != "greedy":
        # the MILP's own objective may not claim more than the independent recomputation: its
        # auxiliary variables (the piecewise-linear log's) only bound the schedule's terms
        # from below, and an incumbent within the MIP gap may leave them slack (HiGHS did, by
        # up to 9e-4 of the objective, depending on its search path), so claiming less is fine
        lp_cert = milp_certificate(cand.lp, cand.lp_x, -cand.lp_bound, maximize=True)
        if not lp_cert.primal_value - value <= OBJECTIVE_AGREEMENT_RTOL * scale:
            raise SolverError(
                f"the MILP's objective {lp_cert.primal_value:.12g} differs from the schedule's "
                f"recomputed objective {value:.12g}", backend=solver.name)
    abs_gap = max(bound - value, 0.0) + 0.0  # (+0.0 turns -0.0 into 0.0)
    cert = Certificate(kind="milp", primal_value=value, dual_bound=bound, gap=abs_gap,
                       primal_residual=residual, gap_tol=gap, feas_tol=FEAS_TOL, scale=scale)
    solves = sum(step in SOLVE_STEPS for step in path)
    backend = solver.name if solves else "none"
    if residual > FEAS_TOL or not math.isfinite(residual):
        raise CertificateError(f"the plan violates a constraint (relative residual "
                               f"{residual:.3g})", certificate=cert, backend=backend)
    # a gap target that was not proven: never OPTIMAL, and the certificate says so (ok is
    # False); TIME_LIMIT only when the call's time limit ran out, else a work limit stopped it
    # (node_limit, or the fast path's work budget): ITERATION_LIMIT, the same on any machine
    timed_out = deadline is not None and time.perf_counter() >= deadline
    status = Status.OPTIMAL if cert.ok else (
        Status.TIME_LIMIT if timed_out else Status.ITERATION_LIMIT)
    stats = SolveStats(backend=backend, method=cand.method, seconds=time.perf_counter() - t0,
                       iterations=iterations, solves=solves, raw_status=raw_status, path=path,
                       fallbacks=fallbacks)
    return PlanResult(objective=value, status=status, stats=stats, certificate=cert,
                      allocation=x, rounds_given=ev["counts"], utility=ev["util"],
                      remaining=ev["remaining"], regime=_regime_index(inst, x),
                      welfare=ev["welfare"], makespan_bound=ev["makespan"], z0=inst.z0,
                      restarts=ev["restarts"], bound=bound, method=cand.method,
                      log_scale=inst.log_shift)
