"""The work-conserving stage of the throughput policies as one plan, for both paths.

After a policy's own stages, the work-conserving stage maximises total normalised throughput
with the first stage's optimum kept (to ``stage_tol``). Its plan, `composed_wc_plan`, is the
same for the LP path (`lp_work_conserving`: the stage by its own stage plan) and the cvxpy
path of composed models (`fairalloc.throughput.composed.solve_composed`):
``work-conserving`` and, when it declines, ``first-stage allocation`` -- a documented
degradation, not another method: the certified first-stage point is kept, with a
``FairallocWarning``, and the stage's failed certificate is reported in
``stage_certificates``. Both are steps of ``stats.path``, run by `fairalloc.plan.run_plan`.
"""

from __future__ import annotations

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

__all__ = ["FIRST_STAGE", "WORK_CONSERVING", "composed_wc_plan", "lp_work_conserving"]

R = TypeVar("R")

#: path steps of the work-conserving stage and of its documented degradation
WORK_CONSERVING, FIRST_STAGE = "work-conserving", "first-stage allocation"
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

    def first_stage(_: None) -> StageResult:
        exc = failed[-1] if failed else None
        warnings.warn(
            f"{policy.name}: the work-conserving stage could not be certified "
            f"({exc}); returning the certified first-stage allocation, which may leave "
            "capacity idle (stage_certificates[1].ok is False)",
            FairallocWarning, stacklevel=caller_stacklevel())
        return res

    found = run_plan(composed_wc_plan(work_conserving, first_stage, _stage_cert,
                                      stage_step=False), None,
                     solver.log, what=f"{policy.name} work-conserving",
                     backend=solver.backend.name)
    if found.strategy == WORK_CONSERVING:
        return found.result, found.result.cert
    cert = failed[-1].certificate if failed and isinstance(failed[-1], CertificateError) \
        else None
    if not isinstance(cert, Certificate):
        cert = Certificate(kind="lp", primal_value=float("nan"), dual_bound=float("nan"),
                           gap=float("inf"), primal_residual=float("inf"))
    return None, cert
