"""The continuous relaxation of a plan (``0 <= x[j, t] <= 1``): `relax_plan` and
`RelaxedPlan`. With equal weights and ``lam = 0`` it is the volatile Fisher market over
the window (App. C-D, ``formulations/shockwave_plan.md``).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._validation import as_option, as_time_limit, as_tolerance
from ..backends import Backend, get_backend
from ..errors import FairallocError, InputError, SolverError
from ..results import Certificate, Result, Status, require_pandas
from ..tolerances import DUAL_RESIDUAL_FACTOR, FEAS_TOL, GAP_TOL
from .instance import (
    EPOCH_RTOL,
    EXPECTATIONS,
    REGIME_MODELS,
    UTIL_FLOOR,
    PlanJob,
    _build_plan_instance,
    _makespan,
    _PlanInstance,
    _pow2,
    _trajectory_tables,
)
from .plan import PLAN_MAKESPAN_KINDS, _longest_term

__all__ = ["RelaxedPlan", "relax_plan"]


@dataclass(frozen=True, repr=False)
class RelaxedPlan(Result):
    """The continuous relaxation of a plan (``0 <= x[j, t] <= 1``).

    Parameters
    ----------
    allocation : ndarray, shape (n, rounds)
        Fraction of round ``t`` job ``j`` runs on its gang (``w_j * x[j, t]`` GPUs); ``x`` is
        the same array (the name every result shares).
    prices : ndarray, shape (rounds,)
        Non-negative multipliers of the per-round capacity ``sum_j w_j x[j, t] <= M``: the
        objective gained per extra GPU in round ``t`` (``d OPT / d M_t``). With equal weights
        and ``lam = 0`` they are the volatile Fisher market's prices divided by ``N*M``.
    rounds_given : ndarray, shape (n,)
        ``n_j = sum_t x[j, t]``.
    utility : ndarray, shape (n,)
        ``UTIL_j(n_j)`` on the concave envelope (the exact progress when later regimes are
        not faster).
    makespan_bound : float
        ``H`` of the relaxed remaining times.
    objective : float
        The relaxation's objective (`fairalloc.relax_plan`).
    status : Status
        ``OPTIMAL`` only when ``certificate`` passed (`fairalloc.Result`).
    stats : SolveStats
        How it was computed (``stats.path``: the steps that ran).
    certificate : Certificate
        The independent optimality certificate of ``objective``.

    Examples
    --------
    >>> from fairalloc import PlanJob
    >>> jobs = [PlanJob(workers=1, total_epochs=100, done_epochs=10, ftf=1.0,
    ...                 regimes=[(60.0, 90)])] * 2
    >>> r = relax_plan(jobs, 1, rounds=2, lam=0.0)
    >>> r.rounds_given.round(3).tolist(), r.allocation.shape, r.certificate.ok
    ([1.0, 1.0], (2, 2), True)
    """

    allocation: np.ndarray
    prices: np.ndarray
    rounds_given: np.ndarray
    utility: np.ndarray
    makespan_bound: float

    @property
    def x(self) -> np.ndarray:
        """Alias of ``allocation`` (the name every result shares; the same object, not a
        copy)."""
        return self.allocation

    def to_frame(self) -> Any:
        """One row per job: rounds and utility, then the fraction of each round."""
        pd = require_pandas()
        base = pd.DataFrame({"rounds": self.rounds_given, "utility": self.utility})
        base.index.name = "job"
        alloc = pd.DataFrame(self.allocation, columns=[f"t{t}" for t in
                                                       range(self.allocation.shape[1])])
        return pd.concat([base, alloc], axis=1)


def _breakpoints(inst: _PlanInstance) -> tuple[np.ndarray, np.ndarray]:
    """Per job: the rounds at which its (expected) progress changes slope, and UTIL there.

    Progress along one trajectory is piecewise linear in the (real) number of rounds, with
    breaks where a regime ends and where the job finishes; the expectation over scenarios
    breaks at the union of its trajectories' breaks. Returns padded points (N, P) in
    ``[0, T]`` and the expected ``UTIL`` at them.
    """
    T, D = inst.T, inst.D
    owner = inst.traj_owner
    q, k = inst.traj_sec.shape
    cs = np.cumsum(inst.traj_sec * inst.traj_ep, axis=1) if k else np.zeros((q, 0))
    with np.errstate(over="ignore"):  # beyond the window either way
        own_pts = np.clip(np.concatenate([cs, inst.traj_finish[:, None]], axis=1) / D, 0.0, T)
    per = np.bincount(owner, minlength=inst.N) * own_pts.shape[1]
    width = int(per.max(initial=0)) + 2
    pts = np.full((inst.N, width), float(T))
    pts[:, 0] = 0.0
    flat = own_pts.ravel()
    rows = np.repeat(owner, own_pts.shape[1])
    start = np.cumsum(per) - per
    col = 1 + np.arange(flat.size) - start[rows]
    pts[rows, col] = flat
    query = pts[owner] * D
    left = inst.E[owner] - inst.F[owner]
    adv, _ = _trajectory_tables(inst.traj_sec, inst.traj_ep, left, query)
    done = query >= inst.traj_finish[:, None] * (1.0 - EPOCH_RTOL)  # relative: any units
    util_q = np.where(done, 1.0, np.minimum((inst.F[owner, None] + adv) / inst.E[owner, None],
                                            1.0))
    util = np.zeros((inst.N, width))
    np.add.at(util, owner, util_q)
    util /= np.bincount(owner, minlength=inst.N)[:, None]
    return pts, util


def relax_plan(
    jobs: Sequence[PlanJob],
    num_gpus: int,
    *,
    rounds: int = 20,
    round_duration: float = 120.0,
    k: float = 5.0,
    lam: float = 1e-3,
    expectation: str = "mean",
    makespan: str = "paper",
    regime_model: str = "forecast",
    z0: float | None = None,
    gap_tol: float = GAP_TOL,
    feas_tol: float = FEAS_TOL,
    time_limit: float | None = None,
    backend: str | Backend = "clarabel",
) -> RelaxedPlan:
    """Continuous relaxation of `fairalloc.plan_schedule` (``0 <= x[j, t] <= 1``),
    via Clarabel.

    Maximises ``(1/(N*M)) * sum_j rho_j^k log U_j - (lam/Z0) * H`` where ``U_j`` is
    ``UTIL_j`` of the real round count ``n_j = sum_t x[j, t]`` (progress through the regimes
    for ``n_j * D`` seconds; its concave envelope where a later regime is faster, which keeps
    the program convex), subject to ``sum_j w_j x[j, t] <= M``. No work conservation and no
    ``util_floor``: every job gets a positive share.

    With ``k = 0`` (or equal FTFs), ``lam = 0``, no finished epochs and one regime per job
    over the window, this is the volatile Fisher market of Shockwave App. C over the window:
    goods are the GPUs of each round (supply ``M``), buyer ``j`` values a GPU in round ``t`` at
    ``D / (d_j * w_j * E_j)`` (progress per GPU-second), budgets are equal, and
    ``x[j, t] <= 1`` caps each buyer's purchase at its gang size; the prices are the market's
    divided by ``N*M`` (``formulations/shockwave_plan.md``; ``tests/test_schedule.py``).

    Parameters
    ----------
    jobs, num_gpus, rounds, round_duration, k, lam, expectation, makespan, regime_model, z0
        As for `fairalloc.plan_schedule`.
    gap_tol, feas_tol : float
        Tolerances of the conic certificate (`fairalloc.tolerances`). The
        gap is judged against ``max(|objective|, |bound|, data scale)`` as in
        `fairalloc.plan_schedule`.
    time_limit : float, optional
        Seconds for the conic solve.
    backend : str or Backend, default "clarabel"
        The conic backend; composed programs are certified through Clarabel only
        (`fairalloc._cvxpy.solve_cvxpy`), any other backend is an InputError.

    Raises
    ------
    InputError
        Bad jobs or parameters, or a backend other than Clarabel.
    SolverError
        The conic solver failed (its own exceptions are chained as the cause).
    CertificateError
        No step of the plan certified the relaxation (``exc.verdicts``: each step's), or the
        returned allocation violates a constraint beyond ``feas_tol``.

    Returns
    -------
    RelaxedPlan
        ``stats.path`` names the steps of `fairalloc._cvxpy.solve_cvxpy`'s plan that ran:
        ``("cvxpy",)`` (one Clarabel solve), then ``"cvxpy-unit-scale"`` and ``"cvxpy-tight"``
        when the previous step did not certify (the hand-overs in ``stats.fallbacks``).

    Notes
    -----
    The program is solved in normalised units: the objective is multiplied by a power of two
    near the inverse of the sum of its coefficients and remaining times are expressed in a
    power of two near the longest one, so the solve does not depend on the units of the data.
    ``status`` is ``"optimal"`` only when the certificate is ok; a feasible solve whose gap
    was not proven is ``"time_limit"`` (its time limit ran out before a step certified).

    Examples
    --------
    Two identical jobs on one GPU each get one round's worth (2 epochs of 100):

    >>> jobs = [PlanJob(workers=1, total_epochs=100, done_epochs=10, ftf=1.0,
    ...                 regimes=[(60.0, 90)])] * 2
    >>> r = relax_plan(jobs, 1, rounds=2, lam=0.0)
    >>> r.rounds_given.round(3).tolist(), r.utility.round(4).tolist()
    ([1.0, 1.0], [0.12, 0.12])
    """
    t0 = time.perf_counter()
    expectation = as_option(expectation, "expectation", EXPECTATIONS)
    makespan = as_option(makespan, "makespan", PLAN_MAKESPAN_KINDS)
    regime_model = as_option(regime_model, "regime_model", REGIME_MODELS)
    gap_tol = as_tolerance(gap_tol, "gap_tol")
    feas_tol = as_tolerance(feas_tol, "feas_tol")
    limit = as_time_limit(time_limit)
    solver = get_backend(backend, need="cvxpy")
    if solver.name != "clarabel":
        raise InputError(f"relax_plan is certified through backend='clarabel' (got "
                         f"{solver.name!r})", argument="backend")
    inst = _build_plan_instance(jobs, num_gpus, rounds=rounds, round_duration=round_duration,
                                k=k, lam=lam, z0=z0, util_floor=UTIL_FLOOR,
                                expectation=expectation,
                                makespan="max_remaining" if makespan == "longest" else makespan,
                                regime_model=regime_model, restart_penalty=0.0)
    if makespan == "longest":  # lam max_j R_j / Z0, as plan_schedule builds it
        inst = _longest_term(inst, z0)
    try:
        return _relax(inst, gap_tol, feas_tol, limit, solver.name, t0)
    except FairallocError:
        raise
    except Exception as exc:  # cvxpy's and the solver's own exceptions
        raise SolverError(f"relax_plan: the conic solve failed ({type(exc).__name__}: {exc})",
                          backend=solver.name, raw_status="exception") from exc


def _relax(inst: _PlanInstance, gap_tol: float, feas_tol: float, limit: float | None,
           backend: str, t0: float) -> RelaxedPlan:
    import cvxpy as cp

    from .._cvxpy import solve_cvxpy

    N, T, M, D = inst.N, inst.T, inst.M, inst.D
    # remaining times in units of a power of two near the longest one (constants <= ~1)
    tau = _pow2(max(D, float(inst.traj_finish.max(initial=0.0))))
    # objective coefficients of order one: divide by a power of two (exact) near their sum
    mag = float(inst.weight.sum()) + inst.coef * tau
    sigma = _pow2(0.5 / mag) if mag > 0 else 1.0
    pts, vals = _breakpoints(inst)
    x = cp.Variable((N, T), nonneg=True, name="x")
    n = cp.sum(x, axis=1)
    mix = cp.Variable(pts.shape, nonneg=True, name="mix")
    util = cp.sum(cp.multiply(vals, mix), axis=1)
    capacity = cp.sum(cp.multiply(inst.w[:, None].astype(float), x), axis=0) <= M
    cons = [x <= (inst.cap > 0)[:, None].astype(float), capacity,
            cp.sum(mix, axis=1) == 1, cp.sum(cp.multiply(pts, mix), axis=1) == n]
    objective = cp.sum(cp.multiply(inst.weight * sigma, cp.log(util)))
    h_expr: Any = None
    if inst.coef > 0:
        owner = inst.traj_owner
        q = owner.size
        pick = sp.csr_matrix((np.ones(q), (np.arange(q), owner)), shape=(q, N))
        counts = np.bincount(owner, minlength=N)
        avg = sp.csr_matrix((1.0 / counts[owner], (owner, np.arange(q))), shape=(N, q))
        rem = avg @ cp.pos(inst.traj_finish / tau - (D / tau) * (pick @ n))
        h_expr = cp.max(rem)
        if inst.makespan == "paper":
            h_expr = cp.maximum(rem @ (inst.w / M), h_expr)
        objective = objective - (inst.coef * tau * sigma) * h_expr
    problem = cp.Problem(cp.Maximize(objective), cons)

    def report(raw: Certificate) -> Certificate:
        """The relaxation's certificate in the caller's objective units, its gap judged
        against the data scale (`_PlanInstance.gap_scale`): the verdict the plan acts on."""
        value, bound = raw.primal_value / sigma, raw.dual_bound / sigma
        return Certificate(kind="conic", primal_value=value, dual_bound=bound,
                           gap=raw.gap / sigma, primal_residual=raw.primal_residual,
                           dual_residual=raw.dual_residual, gap_tol=gap_tol, feas_tol=feas_tol,
                           scale=inst.gap_scale(value, bound))

    # the plan of `solve_cvxpy` (Clarabel as compiled, on a unit-scaled copy, then with tighter
    # tolerances): one Clarabel solve stopped short of the gap on data that a rescaling by 1e-12
    # solved (relative gap 4.3e-6, fuzz seed 707), so the verdict depended on the time unit
    stats, raw = solve_cvxpy(problem, gap_tol=gap_tol, feas_tol=feas_tol, time_limit=limit,
                             robust=True, report=report, what="relaxed plan")
    cert = report(raw)
    value = cert.primal_value
    if cert.ok:
        status = Status.OPTIMAL
    elif (cert.primal_residual <= feas_tol and math.isfinite(cert.gap)
          and cert.dual_residual <= max(feas_tol, FEAS_TOL * DUAL_RESIDUAL_FACTOR)):
        elapsed = time.perf_counter() - t0
        status = Status.TIME_LIMIT if limit is not None and elapsed >= limit else \
            Status.SUBOPTIMAL
    else:
        cert.check(backend=backend)
        status = Status.SUBOPTIMAL  # pragma: no cover - check raised
    alloc = np.clip(np.asarray(x.value, dtype=float), 0.0, 1.0)
    prices = np.maximum(np.asarray(capacity.dual_value, dtype=float).reshape(T), 0.0) / sigma
    given = alloc.sum(axis=1)
    u = np.asarray(util.value, dtype=float).reshape(N)
    h = float(h_expr.value) * tau if h_expr is not None else float(
        _makespan(inst, np.maximum(inst.rem[:, 0] - D * given, 0.0)))
    stats = dataclasses.replace(stats, seconds=time.perf_counter() - t0, backend=backend)
    return RelaxedPlan(objective=value, status=status, stats=stats, certificate=cert,
                       allocation=alloc, prices=prices, rounds_given=given, utility=u,
                       makespan_bound=h)


