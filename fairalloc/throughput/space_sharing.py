"""Space sharing: job pairs that share a worker (Gavel §3.1).

With space sharing the allocation has a row for every job and for every viable pair of jobs;
a pair running on type ``j`` for a fraction of time gives each member its *pair throughput*
(Gavel Fig. 4: colocated models slow each other down). A job's effective throughput sums over
the combinations that contain it,

    throughput(m, X) = sum_j T[m, j] X[m, j] + sum_{pairs p containing m} sum_j T_p[j, m] X[p, j],

a job's time constraint sums over the same combinations, and a pair occupies the workers of
one gang (the larger scale factor of its members) on its type. fairalloc stores pairs as
sparse columns (two non-zeros per pair and type in the job rows, one in the capacity row),
never as a dense (jobs x pairs x types) tensor, so thousands of jobs and millions of pairs fit
in memory; `fairalloc.max_min_fairness` and every other policy accept
``pairs=``.

The input type `fairalloc.JobPairs` lives in `fairalloc.data`. For large pair
sets, `fairalloc.max_min_space_sharing` solves max-min fairness by column
generation: pairs enter the LP only when their reduced cost (computed for all pairs at once
from the duals) shows they can raise the level; the certificate bounds the full program.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import as_positive_int, as_tolerance
from ..backends import Backend, LinearProgram, get_backend
from ..certificates import lp_certificate
from ..data import Cluster, JobPairs, Jobs
from ..errors import CertificateError, InputError, SolverError
from ..plan import Decline, Strategy, run_plan
from ..results import Certificate, SolveStats
from ..solvelog import SolveLog
from ..tolerances import FEAS_TOL, GAP_TOL
from .max_min import MaxMinFairness
from .policy import STAGE_TOL, Allocation
from .stages import StageSolver, backend_for
from .tuning import DEFAULT_TUNING, Tuning, as_tuning

__all__ = ["SpaceSharingContext", "max_min_space_sharing", "space_sharing_plan"]

COLUMN_GENERATION = "column-generation"  # path step: one restricted LP of column generation
#: path step: the last restricted LP solved again by Clarabel, HiGHS' point having missed the
#: certificate with no column left to add
CLARABEL_MASTER = "clarabel-master"
#: path step: the whole program (every pair column) solved by the stage plan at the caller's
#: tolerances, its tail in its levels' units: the restricted masters having missed the
#: certificate with no column left to add
WHOLE_PROGRAM = "whole-program"
#: default ``max_rounds`` (PERFORMANCE knob: column-generation rounds before SolverError)
CG_MAX_ROUNDS = 50
#: PERFORMANCE knob: default columns added per round are max(_BATCH_PER_JOB n, _BATCH_MIN)
_BATCH_PER_JOB = 4
_BATCH_MIN = 1000
#: PERFORMANCE knob: above this many jobs HiGHS' interior point solves the restricted LPs
_IPM_MIN_JOBS = 500
#: ACCURACY: a pair column's reduced cost above this fraction of its scale is a violation
_REDUCED_COST_TOL = 1e-9
#: the restricted LPs are certified here by the full-program bound, not by their own gap:
#: their stage certificate is computed with this (non-binding) gap tolerance
_NO_GAP_CHECK = 1.0


def max_min_space_sharing(jobs: Jobs, cluster: Cluster, pairs: JobPairs, *,
                          gap_tol: float = GAP_TOL, feas_tol: float = FEAS_TOL,
                          max_rounds: int = CG_MAX_ROUNDS, batch: int | None = None,
                          backend: str | Backend | None = None,
                          tuning: Tuning | None = None) -> Allocation:
    """Max-min fairness with space sharing by column generation (Gavel §3.1, §4.1).

    Starts from the program without pairs; each round prices every (pair, type) column at
    once from the duals (``lambda_a a_aj + lambda_b a_bj - mu_a - mu_b - s_p p_j``), adds the
    ``batch`` most positive ones and re-solves, until no column has a positive reduced cost.
    The certificate is the LP dual bound of the *full* program (all pairs), evaluated from
    the duals without building it: ``gap = bound - level``. Each restricted LP is solved at
    unit scale (see `fairalloc.ThroughputPolicy`), so
    weights and throughputs in any units give the same allocation and verdict. The solve is
    a plan (`space_sharing_plan`) run by `fairalloc.plan.run_plan`.

    Parameters
    ----------
    jobs : Jobs
        The jobs: isolated throughputs, weights and gang sizes.
    cluster : Cluster
        The workers of each type.
    pairs : JobPairs
        The job pairs that may share a worker and each member's throughput when they do.
    gap_tol, feas_tol : float
        Certificate tolerances in ``(0, 0.1]``.
    max_rounds : int
        Column-generation rounds (the restricted masters of both column-generation steps
        together) before the plan hands over to the whole program.
    batch : int, optional
        Columns added per round (default ``max(4 n, 1000)``).
    backend : str or Backend, optional
        LP backend (default HiGHS: simplex, interior point above 500 jobs).
    tuning : fairalloc.throughput.Tuning, optional
        The knobs of the whole program's stage plan (none changes an answer).

    Returns
    -------
    fairalloc.Allocation
        As `fairalloc.max_min_fairness` with ``pair_x`` and the
        certified gap. No work-conserving stage (pass the active pairs to ``max_min_fairness`` for
        one). ``stats.path`` lists ``column-generation`` and ``exact-lp`` for every restricted LP,
        ``clarabel-master`` when the last one, solved by HiGHS (the default), missed the
        certificate and was solved again by Clarabel, and ``whole-program`` (then the steps of
        its stage plan) when that master still missed it or column generation failed (no
        convergence in ``max_rounds``, a backend failure): the whole LP with every pair column
        at ``gap_tol``, its exact tail in its levels' units.

    Examples
    --------
    Two jobs that each keep 80% of their speed when sharing one GPU: sharing beats taking
    turns (level 0.8 against 0.5).

    >>> import fairalloc as fa
    >>> jobs = fa.Jobs([[10.0], [10.0]])
    >>> pairs = JobPairs([[0, 1]], [[[8.0, 8.0]]])
    >>> r = max_min_space_sharing(jobs, fa.Cluster({"gpu": 1}), pairs)
    >>> round(r.objective, 6), r.pair_x.round(6).tolist()
    (0.8, [[1.0]])
    """
    t0 = time.perf_counter()
    gap_tol = as_tolerance(gap_tol, "gap_tol")
    feas_tol = as_tolerance(feas_tol, "feas_tol")
    max_rounds = as_positive_int(max_rounds, "max_rounds")
    if batch is not None:
        batch = as_positive_int(batch, "batch")
    tuning = as_tuning(tuning)
    if not isinstance(pairs, JobPairs):
        raise InputError(f"pairs must be a fairalloc.JobPairs, got {type(pairs).__name__}",
                         argument="pairs")
    base = MaxMinFairness(jobs, cluster)
    pairs.check(jobs, cluster)
    inst = base.inst
    n = inst.n
    s = jobs.scale_factor
    coef = base.coef
    a_, b_ = pairs.members[:, 0], pairs.members[:, 1]
    sp_w = np.maximum(s[a_], s[b_])
    ok = (pairs.throughput.sum(axis=2) > 0) & (sp_w[:, None] <= inst.cap[None, :])
    # normalised pair coefficients (P, k) for each member
    ca = coef[a_][:, None] * pairs.throughput[:, :, 0]
    cb = coef[b_][:, None] * pairs.throughput[:, :, 1]
    default = backend is None or backend == "highs"
    if default:
        master = get_backend("highs", need="lp",
                             solver="ipm" if n > _IPM_MIN_JOBS else "choose")
    else:
        master = get_backend(backend, need="lp")  # a backend the caller named is used as given
    ctx = SpaceSharingContext(
        jobs=jobs, cluster=cluster, pairs=pairs, tols=(gap_tol, feas_tol),
        max_rounds=max_rounds, batch=max(_BATCH_PER_JOB * n, _BATCH_MIN) if batch is None
        else int(batch), spec="highs" if backend is None else backend, master=master,
        tuning=tuning, log=SolveLog(), t0=t0, sp_w=sp_w, ok=ok, ca=ca, cb=cb,
        ca_max=ca.max(axis=1), cb_max=cb.max(axis=1),
        progress=_Progress(np.zeros(ok.shape, dtype=bool)))
    plan = space_sharing_plan(default, tuning)
    return run_plan(plan, ctx, ctx.log, what="space-sharing max-min",
                    backend=master.name).result


@dataclass(eq=False)
class _Progress:
    """What the column-generation steps leave for the next: the active pair columns, the
    rounds used and whether the last master missed its certificate with no column left."""

    active: np.ndarray
    rounds: int = 0
    priced_out: bool = False


@dataclass(frozen=True, eq=False)
class SpaceSharingContext:
    """The space-sharing program's context: the inputs, the tolerances ``(gap_tol,
    feas_tol)``, the column-generation knobs, the masters' backend (``master``), the whole
    program's backend spec and tuning, the call's log and start time, the pair columns'
    weights ``sp_w``, viability ``ok``, normalised member coefficients ``ca``/``cb`` (and
    their largest over types, ``ca_max``/``cb_max``), and
    the column-generation progress (the one record the steps share, context in, not state of
    a strategy)."""

    jobs: Jobs
    cluster: Cluster
    pairs: JobPairs
    tols: tuple[float, float]
    max_rounds: int
    batch: int
    spec: Any
    master: Backend
    tuning: Tuning
    log: SolveLog
    t0: float
    sp_w: np.ndarray
    ok: np.ndarray
    ca: np.ndarray
    cb: np.ndarray
    ca_max: np.ndarray
    cb_max: np.ndarray
    progress: _Progress


def space_sharing_plan(default_backend: bool, tuning: Tuning = DEFAULT_TUNING
                       ) -> tuple[Strategy[SpaceSharingContext, Allocation], ...]:
    """The plan of `max_min_space_sharing`: a pure function of the backend choice and the
    family's `fairalloc.throughput.Tuning` (its knobs reach the whole program's stage plan
    through the context; none changes which strategies the plan holds).

    * ``column-generation``: restricted masters on the caller's backend (HiGHS by default)
      until no pair column prices out; declines when the last master misses its certificate
      with no column left, fails after ``max_rounds`` rounds;
    * ``clarabel-master`` (the default backend only; ready only when the masters priced out
      uncertified): the last restricted master solved again by Clarabel, column generation
      going on from it (a job whose rows span 1e23 loses its level row to HiGHS' dropped
      tiny coefficients: fuzz seed 15);
    * ``whole-program`` (exact): every pair column, by the stage plan of the backend spec at
      the caller's tolerances (its exact tail in its levels' units).

    Parameters
    ----------
    default_backend : bool
        Whether fairalloc chooses the backend (``backend=None`` or ``"highs"``).
    tuning : fairalloc.throughput.Tuning
        The family's knobs.

    Returns
    -------
    tuple of fairalloc.plan.Strategy

    Examples
    --------
    >>> from fairalloc.plan import describe
    >>> describe(space_sharing_plan(True)), describe(space_sharing_plan(False))
    (('column-generation', 'clarabel-master', 'whole-program!'), ('column-generation', \
'whole-program!'))
    """
    cg = Strategy(COLUMN_GENERATION, _column_generation, _certificate)
    clarabel = Strategy(CLARABEL_MASTER, _clarabel_master, _certificate,
                        ready=_priced_out)
    whole = Strategy(WHOLE_PROGRAM, _whole_program, _certificate, exact=True)
    return (cg, clarabel, whole) if default_backend else (cg, whole)


@dataclass(frozen=True)
class _Missed:
    """The whole program's best certificate when its stage plan certified no point (the
    driver then raises ``CertificateError`` with it)."""

    certificate: Certificate


def _certificate(ctx: SpaceSharingContext, out: Allocation | _Missed) -> Certificate:
    return out.certificate


def _priced_out(ctx: SpaceSharingContext) -> bool:
    return ctx.progress.priced_out


def _clarabel_master(ctx: SpaceSharingContext) -> Allocation:
    """The last restricted master again by Clarabel, column generation going on from it."""
    return _column_generation(ctx, get_backend("clarabel", need="lp"), plan_step=False)


def _column_generation(ctx: SpaceSharingContext, be: Backend | None = None, *,
                       plan_step: bool = True) -> Allocation:
    """Column-generation rounds from ``ctx.progress`` on ``be`` (default: ``ctx.master``)
    until no column prices out: the certified allocation, or `fairalloc.plan.Decline` when
    the last master misses its certificate with no column left. ``plan_step``: the driver
    logged the first round's ``column-generation`` step (each later round logs its own)."""
    be = ctx.master if be is None else be
    jobs, cluster, pairs, log, prog = ctx.jobs, ctx.cluster, ctx.pairs, ctx.log, ctx.progress
    gap_tol, feas_tol = ctx.tols
    a_, b_ = pairs.members[:, 0], pairs.members[:, 1]
    ca, cb, ok, sp_w = ctx.ca, ctx.cb, ctx.ok, ctx.sp_w
    active = prog.active
    prog.priced_out = False
    first = True
    while prog.rounds < ctx.max_rounds:
        prog.rounds += 1
        rows = active.any(axis=1)
        sub = (JobPairs(pairs.members[rows],
                        np.where(active[:, :, None], pairs.throughput, 0.0)[rows])
               if rows.any() else None)
        policy = MaxMinFairness(jobs, cluster, pairs=sub)
        solver = StageSolver(policy.inst, be, stage_tol=STAGE_TOL, gap_tol=_NO_GAP_CHECK,
                             feas_tol=feas_tol, log=log)
        stage = policy.level_stage()
        if not (first and plan_step):
            log.step(COLUMN_GENERATION)
        first = False
        res = solver.run(stage, "space-sharing max-min")
        duals = res.duals
        mu = np.maximum(-res.block("time"), 0.0)
        p = np.maximum(-res.block("capacity"), 0.0)
        lam = np.maximum(res.block("level"), 0.0)
        red = (lam[a_][:, None] * ca + lam[b_][:, None] * cb - (mu[a_] + mu[b_])[:, None]
               - sp_w[:, None] * p[None, :])
        red = np.where(ok, red, -np.inf)
        # full-program dual bound (weak duality with every pair column present)
        theta = float(res.x[-1])
        bound = _dual_bound(res.lp, duals, red, ok & ~active)
        cert = Certificate(kind="lp", primal_value=theta, dual_bound=bound,
                           gap=max(bound - theta, 0.0),
                           primal_residual=res.cert.primal_residual,
                           dual_residual=res.cert.dual_residual, gap_tol=gap_tol,
                           feas_tol=feas_tol)
        if cert.ok:
            stats = SolveStats.from_log(log, method="column generation",
                                        seconds=time.perf_counter() - ctx.t0)
            out = policy._result(res.x[: policy.inst.E], p, theta, cert, (cert,), stats)
            full = np.zeros((pairs.num_pairs, ok.shape[1]))
            if out.pair_x is not None:
                full[np.flatnonzero(rows)] = out.pair_x
            full.flags.writeable = False
            return dataclasses.replace(out, pair_x=full)
        viol = _violations(red, lam, mu, p, ctx)
        viol &= ~active
        if not viol.any():
            prog.priced_out = True
            raise Decline(f"no column prices out, but the master's certificate misses "
                          f"(relative gap {cert.relative_gap:.2e})")
        flat = np.flatnonzero(viol.ravel())
        if flat.size > ctx.batch:
            top = np.argpartition(-red.ravel()[flat], ctx.batch)[:ctx.batch]
            flat = flat[top]
        active.ravel()[flat] = True
    raise SolverError("space sharing: column generation did not converge",
                      backend=be.name, status="iteration_limit")


def _violations(red: np.ndarray, lam: np.ndarray, mu: np.ndarray, p: np.ndarray,
                ctx: SpaceSharingContext) -> np.ndarray:
    """The (pair, type) columns whose reduced cost exceeds `_REDUCED_COST_TOL` of their scale:
    unit free (weights and throughputs in any units give the same columns), from each pair's
    largest coefficient over types, a (P,) vector built in place (no second (P, k) array)."""
    a_, b_ = ctx.pairs.members[:, 0], ctx.pairs.members[:, 1]
    tscale = np.multiply(lam[a_], ctx.ca_max)
    tscale += lam[b_] * ctx.cb_max
    tscale += mu[a_]
    tscale += mu[b_]
    tscale += ctx.sp_w * float(p.max(initial=0.0))
    tscale *= _REDUCED_COST_TOL
    return red > tscale[:, None]


def _whole_program(ctx: SpaceSharingContext) -> Allocation | _Missed:
    """Max-min fairness over every pair column, by the stage plan of ``ctx.spec`` at the
    caller's tolerances (its exact tail: HiGHS' simplex, Clarabel on the LP in its levels'
    units, or a caller-named backend on it; `fairalloc.throughput.strategies`).

    The plan's exact tail: a restricted master solved with its own gap unchecked may hand
    back a point far from its optimum (weights ~1e-12, speeds 1e-3 .. 1e7: HiGHS' level 0 and
    Clarabel's at 0.53 of the bound, fuzz seed 1414), and the duals then price no column out
    although the full-program bound is not met. When its stage plan certifies no point, its
    best certificate (`_Missed`): the driver's ``CertificateError`` carries it."""
    gap_tol, feas_tol = ctx.tols
    log = ctx.log
    policy = MaxMinFairness(ctx.jobs, ctx.cluster, pairs=ctx.pairs)
    be = backend_for(ctx.spec, policy.inst.E, ctx.tuning)
    solver = StageSolver(policy.inst, be, stage_tol=STAGE_TOL, gap_tol=gap_tol,
                         feas_tol=feas_tol, backend_spec=ctx.spec, tuning=ctx.tuning,
                         log=log)
    try:
        res = solver.run(policy.level_stage(), "space-sharing max-min")
    except CertificateError as exc:
        if exc.certificate is None:
            raise
        return _Missed(exc.certificate)
    cert = res.cert
    prices = np.maximum(-res.block("capacity"), 0.0)
    stats = SolveStats.from_log(log, method="column generation",
                                seconds=time.perf_counter() - ctx.t0)
    return policy._result(res.x[: policy.inst.E], prices, float(res.x[-1]), cert, (cert,),
                          stats)


def _dual_bound(lp: LinearProgram, duals: np.ndarray, pair_red: np.ndarray,
                ok: np.ndarray) -> float:
    """LP dual bound of the full program: the restricted bound plus every pair column's gain.

    For ``max theta`` the Lagrangian bound at the duals is ``sum of row terms + sum over
    columns of max(0, reduced gain) * upper bound``; pair columns (upper bound 1) not in the
    restricted program add ``max(0, gain)``.
    """
    base = lp_certificate(lp, np.zeros(lp.c.size), duals, maximize=True,
                          gap_tol=_NO_GAP_CHECK, feas_tol=_NO_GAP_CHECK)
    extra = float(np.sum(np.maximum(pair_red[ok], 0.0)))
    return base.dual_bound + extra


# --- FIFO (arrival order) with job pairs: `fairalloc.throughput.ordering` ---------------
def undominated_pairs(inst: Any, order: np.ndarray) -> JobPairs | None:
    """The job pairs with the rates of the pair columns that no lexicographic FIFO optimum
    uses set to 0 (so `fairalloc.throughput.instance.ColumnInstance` builds no such column),
    or ``None`` when there are none.

    A pair column ``p`` on type ``j`` whose *earlier* member ``a`` (in ``order``) gets a lower
    rate from it than from its own single column there (``a`` may run alone on ``j``) is 0 in
    every arrival-order optimum: from an allocation with ``x_p > 0``, moving that time to
    ``a``'s single column on ``j`` keeps ``a``'s time, uses no more workers (the pair's gang is
    at least ``a``'s), changes no column of a job before ``a`` (so no earlier ``v``) and raises
    ``v_a``; so that allocation is not lexicographically optimal. Every optimum of the whole
    program is therefore feasible without the column, and the program without it has the same
    stage values and the same optimal set.

    Examples
    --------
    >>> import fairalloc as fa
    >>> from fairalloc.throughput.instance import ColumnInstance
    >>> inst = ColumnInstance(fa.Jobs([[2.0, 1.0], [4.0, 1.0]]), fa.Cluster({"a": 1, "b": 1}),
    ...                       fa.JobPairs([[0, 1]], [[[1.0, 2.0], [1.0, 1.0]]]))
    >>> undominated_pairs(inst, np.array([0, 1])).throughput.tolist()  # type a: 1 < 2
    [[[0.0, 0.0], [1.0, 1.0]]]
    """
    if inst.pairs is None:
        return None
    pairs = inst.pairs
    n = inst.n
    rank = np.empty(n, dtype=int)
    rank[np.asarray(order, dtype=int)] = np.arange(n)
    mem = pairs.members
    first = np.where(rank[mem[:, 0]] < rank[mem[:, 1]], 0, 1)  # the earlier member
    early = mem[np.arange(mem.shape[0]), first]
    rate = np.take_along_axis(pairs.throughput, first[:, None, None], axis=2)[:, :, 0]
    single = inst.T_allowed[early]  # (0 where the job may not run alone there)
    drop = (single > 0.0) & (rate < single)
    if not drop.any():
        return None
    tp = np.where(drop[:, :, None], 0.0, pairs.throughput)
    return JobPairs(mem, tp)


def pair_rates(inst: Any, order: np.ndarray) -> np.ndarray | None:
    """``(n, k)``: the largest ``v_m`` coefficient (rate over the job's fastest single rate) of
    a pair column of job ``m`` with a job later in ``order`` on each type; ``-inf`` where it
    has none. ``None`` without pairs (`fairalloc.throughput.ordering.forced_prefix` and
    ``forced_certificate``).

    Examples
    --------
    >>> import fairalloc as fa
    >>> from fairalloc.throughput.instance import ColumnInstance
    >>> jobs = fa.Jobs([[2.0], [4.0]])
    >>> inst = ColumnInstance(jobs, fa.Cluster({"a": 1}), fa.JobPairs([[0, 1]], [[[1.0, 2.0]]]))
    >>> pair_rates(inst, np.array([0, 1])).tolist()  # job 1's partner is earlier
    [[0.5], [-inf]]
    """
    if inst.pairs is None:
        return None
    n = inst.n
    rank = np.empty(n, dtype=int)
    rank[np.asarray(order, dtype=int)] = np.arange(n)
    pc = np.flatnonzero(inst.col_kind == 2)
    sel = np.flatnonzero(np.isin(inst.mem_col, pc))
    col, job = inst.mem_col[sel], inst.mem_job[sel]
    other = np.zeros(inst.E, dtype=int)  # the rank of each pair column's later member
    np.maximum.at(other, col, rank[job])
    later = rank[job] < other[col]
    out = np.full((n, inst.k), -np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        coef = inst.mem_tp[sel] / inst.fastest_tp[job]
    np.maximum.at(out, (job[later], inst.col_type[col[later]]), coef[later])
    return out


def singles_dominated_pairs(jobs: Jobs, cluster: Cluster, pairs: JobPairs) -> JobPairs:
    """``pairs`` with the rates of the pair columns that the members' single columns match set
    to 0 (so no such column is built): the same throughputs at no more time or workers.

    A pair column on type ``j`` with member rates ``r_a, r_b`` (``r >= 0``) and ``T_aj,
    T_bj`` the members' single rates there is replaced, time ``x`` for time ``x``, by ``a``
    alone for ``x r_a / T_aj`` and ``b`` alone for ``x r_b / T_bj`` (``x r / T = 0`` where
    ``r = 0``): the same throughput for both, no more of either's time, and, where ``r_a /
    T_aj + r_b / T_bj <= 1``, no more workers (``s_a x_a + s_b x_b <= max(s_a, s_b)(x_a +
    x_b)``, the pair's gang being the larger). So every throughput vector, at no more workers,
    is reachable without the column: the optimal values of a policy whose stages depend on the
    jobs' throughputs alone (max-min and water-filling levels, total throughput) are the same.
    (``cluster``: the types the rates are listed for; a gang that does not fit builds no
    column either way.)

    Examples
    --------
    >>> import fairalloc as fa
    >>> p = singles_dominated_pairs(fa.Jobs([[2.0, 2.0], [2.0, 2.0]]),
    ...                             fa.Cluster({"a": 1, "b": 1}),
    ...                             fa.JobPairs([[0, 1]], [[[1.0, 1.0], [1.5, 1.5]]]))
    >>> p.throughput.tolist()  # on "a", 1/2 + 1/2 <= 1: the singles do as well
    [[[0.0, 0.0], [1.5, 1.5]]]
    """
    pairs.check(jobs, cluster)
    T = jobs.throughput
    r = pairs.throughput  # (P, k, 2)
    single = T[pairs.members].transpose(0, 2, 1)  # (P, k, 2): each member's single rate
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(r == 0.0, 0.0, r / single)
    ok = (r >= 0.0) & ((r == 0.0) | (single > 0.0))
    drop = ok.all(axis=2) & (share.sum(axis=2) <= 1.0) & (r.sum(axis=2) > 0.0)
    if not drop.any():
        return pairs
    return JobPairs(pairs.members, np.where(drop[:, :, None], 0.0, r))
