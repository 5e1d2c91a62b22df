"""The work-conserving stage of the throughput policies as one plan, for both paths.

After a policy's own stages, the work-conserving stage maximises total normalised throughput
with the first stage's optimum kept (to ``stage_tol``). Its plan, `composed_wc_plan`, is the
same for the LP path (`lp_work_conserving`: the stage by its own stage plan) and the cvxpy
path of composed models (`fairalloc.throughput.composed.solve_composed`):
``work-conserving`` and, when it declines, ``first-stage allocation`` -- a documented
degradation, not another method: the certified first-stage point is kept, with a
``FairallocWarning``, and the stage's failed certificate is reported in
``stage_certificates``. Both are steps of ``stats.path``, run by `fairalloc.plan.run_plan`.
On the LP path, where the stage's own plan failed and a job's kept level row needs only a tiny
share of a type (below the solvers' absolute tolerance), ``work-conserving+reserved``
(`reserved_program`) solves it once more with those shares as column lower bounds before
degrading.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import warnings
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np

from ..errors import CertificateError, FairallocWarning, SolverError
from ..plan import Decline, Strategy, run_plan
from ..results import Certificate
from . import structured
from .programs import LinearStage, StageResult

__all__ = ["FIRST_STAGE", "RESERVED", "WORK_CONSERVING", "composed_wc_plan",
           "lp_work_conserving", "reserved_program"]

R = TypeVar("R")

#: path steps of the work-conserving stage and of its documented degradation
WORK_CONSERVING, FIRST_STAGE = "work-conserving", "first-stage allocation"
#: path step of the LP path: the work-conserving LP solved with each job whose kept level row
#: needs a tiny share of a type held at or above its share of the anchor (`reserved_program`)
RESERVED = "work-conserving+reserved"
#: ACCURACY: a job whose kept level row the anchor meets with less than this share of time
#: is reserved that time (10x HiGHS' absolute primal feasibility tolerance, 1e-7:
#: a row needing less is met by the solver at 0)
RESERVE_SHARE = 1e-6
#: the package's directory: a warning names the first frame outside it (the caller's line)
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def caller_stacklevel() -> int:
    """The ``stacklevel`` that makes a warning raised by this function's caller name the
    first frame outside fairalloc (however many plan and stage frames are in between)."""
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    return level


def _reported(ctx: Any, cert: Any) -> Certificate:
    return cast(Certificate, cert)


def composed_wc_plan(work_conserving: Callable[[None], R], first_stage: Callable[[None], R],
                     certify: Callable[[None, Any], Certificate] = _reported, *,
                     stage_step: bool = True) -> tuple[Strategy[None, R], ...]:
    """The plan of a policy's work-conserving stage: ``work-conserving`` (the stage) and, when
    it declines, ``first-stage allocation``: a documented degradation, not another method --
    the certified first-stage point is kept, with a ``FairallocWarning``.

    Parameters
    ----------
    work_conserving, first_stage : callable ``(None) -> R``
        The two strategies' ``solve`` (closures over the call's program: context in, result
        out).
    certify : callable ``(None, R) -> Certificate``, optional
        The certificate of a result (default: the result is the reported certificate, as on
        the cvxpy path; the LP path returns stage results and certifies by their own).
    stage_step : bool, default True
        Whether ``work-conserving`` is a step of ``stats.path`` (the cvxpy path); the LP path's
        stage runs a stage plan of its own, whose steps are the path's (``False``). A
        degradation is a step and a hand-over either way.

    Returns
    -------
    tuple of fairalloc.plan.Strategy

    Examples
    --------
    >>> from fairalloc.plan import describe
    >>> describe(composed_wc_plan(print, print))
    ('work-conserving', 'first-stage allocation!')
    """
    return (Strategy(WORK_CONSERVING, work_conserving, certify, step=stage_step),
            Strategy(FIRST_STAGE, first_stage, certify, exact=True))


def _stage_cert(ctx: None, res: StageResult) -> Certificate:
    return res.cert


def reserved_program(solver: Any, lp: Any) -> Any:
    """``lp`` (a work-conserving stage's program on ``solver``) with the columns of each job
    whose kept level row (`StageSolver.kept_level`) the anchor meets with less than
    `RESERVE_SHARE` of time (its allocation scaled to just meet the row) bounded below by
    that scaled allocation; ``None`` where no job is reserved.

    Such a row (a makespan job of 1e-6 steps at 1e8 steps/s needs 5e-12 of a type) is met by
    a solver only to its absolute tolerance, i.e. at 0, and a full type has no room left for
    it afterwards. The anchor meets the reservations and every row, so the program is
    feasible; a point of it is certified on ``lp`` itself, whose dual bound holds whatever the
    reservation (a reserved column's reduced cost costs at most its tiny share).
    """
    anchor = solver.anchor
    if anchor is None:
        return None
    lower = np.zeros(anchor.size)
    for B, low in solver.fixed:
        if not any(B is K for K in solver.kept_level):
            continue
        B = B.tocoo()
        with np.errstate(divide="ignore", invalid="ignore"):
            meets = B @ anchor
            factor = np.where((low > 0) & (meets > 0), np.minimum(1.0, low / meets), 0.0)
        share = factor[B.row] * anchor[B.col]  # the anchor's time, scaled to just meet the row
        time = np.bincount(B.row, weights=share, minlength=low.size)
        tiny = (time > 0) & (time < RESERVE_SHARE)
        np.maximum.at(lower, B.col, np.where(tiny[B.row], share, 0.0))
    if not np.any(lower > 0):
        return None
    col_lower = lp.col_lower.copy()
    E = anchor.size
    col_lower[:E] = np.minimum(np.maximum(col_lower[:E], lower), lp.col_upper[:E])
    return dataclasses.replace(lp, col_lower=col_lower)


def lp_work_conserving(policy: Any, solver: Any, method: str, res: StageResult,
                       xcol: np.ndarray) -> tuple[StageResult | None, Certificate]:
    """The LP path's work-conserving stage on ``solver`` (the first stage already kept by
    ``solver.fix``) through `composed_wc_plan`. Returns the certified stage result (``None``
    where the plan degraded to the first-stage allocation) and the stage's certificate for
    ``stage_certificates`` (its best failed one, or an unproven one, after a degradation)."""
    g = policy._wc_objective()
    if policy.inst.col_mult is not None:
        g = g * policy.inst.col_mult  # a class's column serves all of its members
    wstage = LinearStage(g, WORK_CONSERVING)
    failed: list[SolverError] = []

    def work_conserving(_: None) -> StageResult:
        worth = policy._structured_worth(solver)
        fast = (structured.floor_strategies(
            prior=res, any_size=worth and not solver.structured_worth())
                if method == "fast" and worth else ())
        try:
            return solver.run(wstage, WORK_CONSERVING, fast)
        except SolverError as exc:
            # no strategy of the stage's plan answered (e.g. a job whose level needs a 1e-9
            # share of a type, below every solver's absolute tolerance)
            failed.append(exc)
            raise Decline("its certificate failed") from exc

    programs: list[Any] = []

    def reserving(_: None) -> bool:
        # (built only after the stage's plan failed: no cost on a certified stage)
        if solver.kept_level:
            lp = solver.program(wstage)
            slp = reserved_program(solver, lp)
            if slp is not None:
                programs[:] = [lp, slp]
        return bool(programs)

    def reserved(_: None) -> StageResult:
        lp, slp = programs
        sol, v, cert = solver.run_once(lp, wstage, RESERVED, solver.exact_linear_backend,
                                       solve_lp=slp)
        return cast(StageResult, solver.result(lp, wstage, sol, v, cert))

    def first_stage(_: None) -> StageResult:
        exc = failed[-1] if failed else None
        warnings.warn(
            f"{policy.name}: the work-conserving stage could not be certified "
            f"({exc}); returning the certified first-stage allocation, which may leave "
            "capacity idle (stage_certificates[1].ok is False)",
            FairallocWarning, stacklevel=caller_stacklevel())
        return res

    wc, degrade = composed_wc_plan(work_conserving, first_stage, _stage_cert, stage_step=False)
    plan = (wc, Strategy(RESERVED, reserved, _stage_cert, ready=reserving), degrade)
    found = run_plan(plan, None, solver.log, what=f"{policy.name} work-conserving",
                     backend=solver.backend.name)
    if found.strategy in (WORK_CONSERVING, RESERVED):
        return found.result, found.result.cert
    cert = failed[-1].certificate if failed and isinstance(failed[-1], CertificateError) \
        else None
    if not isinstance(cert, Certificate):
        cert = Certificate(kind="lp", primal_value=float("nan"), dual_bound=float("nan"),
                           gap=float("inf"), primal_residual=float("inf"))
    return None, cert
