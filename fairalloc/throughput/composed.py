"""The cvxpy path of the effective-throughput policies (``method="cvxpy"``, composed models).

A policy's cvxpy model (its variables, the allocation rows, the policy's own rows and objective,
and whatever the user added) is solved by Clarabel through `fairalloc._cvxpy.solve_cvxpy`,
and the allocation that is *returned* is certified, not the solver's raw vectors:

* the returned point is written into the model: time fractions clipped to ``[0, 1]`` and the
  policy's auxiliary variable (the level ``theta`` of max-min fairness and makespan, ``rho_max``
  of finish-time fairness) recomputed from the allocation, so the objective certified is the
  one the allocation achieves;
* every constraint is judged at its own scale (`fairalloc._cvxpy.constraint_residual`) and the
  objective evaluated at the point; the dual bound is the conic one of the first stage;
* the certificate is of the objective the result reports, in the caller's units: the makespan
  itself (not ``theta = 1 / makespan`` at unit scale), the shortest duration, the largest
  ``rho``; with objective terms added, the maximised composed objective;
* the work-conserving stage keeps the first stage's objective only to ``stage_tol``; its point
  is returned only if the first stage's certificate holds there *and* its own certificate is
  ok, else the certified first-stage point is returned with a `FairallocWarning` (as the LP
  path does).
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from typing import Any

import numpy as np

from .._cvxpy import certify_point, restore_point, snapshot_point, solve_cvxpy, value_at
from ..errors import CertificateError, FairallocWarning, SolverError
from ..plan import Decline, run_plan
from ..results import Certificate, SolveStats
from ..solvelog import SolveLog
from .programs import LevelStage
from .wc_stage import FIRST_STAGE, WORK_CONSERVING, caller_stacklevel, composed_wc_plan

__all__ = ["CVXPY_STEP", "finish_time_objective", "level_objective", "negated", "reciprocal",
           "solve_composed", "composed_wc_plan", "WORK_CONSERVING", "FIRST_STAGE"]

CVXPY_STEP = "cvxpy"  # path step: one conic solve of the cvxpy model


def level_objective(cvx: dict[str, Any], stage: LevelStage) -> tuple[Any, list[Any]]:
    """``max theta`` s.t. the level rows; ``theta = sigma theta'`` with a unit-scale variable
    ``theta'`` and the rows divided by ``rho`` (`LevelStage.units`). Registers the clean-up
    that sets ``theta'`` to the level the allocation reaches (``cvx["tighten"]``)."""
    import cvxpy as cp

    sigma, rho = stage.units()
    var = cp.Variable(name="level")
    theta = var if sigma == 1.0 else sigma * var
    cvx["level"] = theta
    C = stage.C if rho == 1.0 else stage.C / rho
    coef = stage.b * (sigma / rho)
    h = stage.h / rho
    xc = cvx["xc"]

    def tighten() -> None:
        pos = coef > 0
        if xc.value is None or not pos.any():
            return
        lev = (C @ np.asarray(xc.value, dtype=float) - h)[pos] / coef[pos]
        var.save_value(np.array(float(np.min(lev))))

    cvx.setdefault("tighten", []).append(tighten)
    return theta, [C @ xc - coef * var >= h]


def finish_time_objective(cvx: dict[str, Any], t: np.ndarray, D: np.ndarray,
                          steps: np.ndarray, equal_tp: np.ndarray) -> tuple[Any, list[Any]]:
    """``max -R`` s.t. ``rho_m = t_m / D_m + steps_m / (D_m tp_m) <= R`` (finish-time
    fairness), each job's throughput at its own unit scale: ``tp_m = tau_m tp'_m`` with
    ``tau_m`` the power of two of its equal-share throughput, so that each job's ``inv_pos``
    (a hyperbolic cone ``a_m tp'_m >= 1``) is at unit scale where the job is bound, whatever
    the spread of the jobs' throughputs (one shared scale left jobs 1e11 apart: Clarabel's
    points missed the certificate by up to a relative 1). Registers the clean-up that sets
    ``R`` to the largest ``rho`` of the allocation (``cvx["tighten"]``).

    Examples
    --------
    >>> import cvxpy as cp
    >>> cvx = {"tp": cp.Variable(2, nonneg=True)}
    >>> rates = np.array([1e-6, 1e6])  # two jobs 1e12 apart, each rho = 1 at its rate
    >>> obj, cons = finish_time_objective(cvx, np.zeros(2), np.ones(2), rates, rates)
    >>> prob = cp.Problem(cp.Maximize(obj), [*cons, cvx["tp"] <= rates])
    >>> _ = prob.solve(solver=cp.CLARABEL)
    >>> round(float(cvx["level"].value), 6)
    1.0
    """
    import cvxpy as cp

    R = cp.Variable(name="rho_max")
    cvx["level"] = R
    t, D, steps = (np.asarray(v, dtype=float) for v in (t, D, steps))
    tau = _pow2(np.asarray(equal_tp, dtype=float))
    unit = cp.multiply(1.0 / tau, cvx["tp"])  # tp / tau
    rho = t / D + cp.multiply(steps / (D * tau), cp.inv_pos(unit))

    def tighten() -> None:  # rho_max of the returned allocation (inf: a job gets nothing)
        value = value_at(rho)
        if value is not None:
            R.save_value(np.array(float(np.max(value))))

    cvx.setdefault("tighten", []).append(tighten)
    return -R, [rho <= R]


def _pow2(v: np.ndarray) -> np.ndarray:
    """The power of two just above each positive finite entry (1 elsewhere): exact scales."""
    ok = (v > 0) & np.isfinite(v)
    return np.where(ok, np.ldexp(1.0, np.frexp(np.where(ok, v, 1.0))[1]), 1.0)


def reciprocal(cert: Certificate, value: float) -> Certificate:
    """The certificate of ``1 / objective`` (a duration) from that of a maximised rate
    ``theta``: the duration ``value`` of the returned allocation (its ``1 / theta``) against
    the lower bound ``1 / theta_bound``; the gap is judged relative to the duration.

    Examples
    --------
    >>> from fairalloc.results import Certificate
    >>> rate = Certificate("conic", primal_value=0.04, dual_bound=0.05, gap=0.01,
    ...                    primal_residual=0.0)
    >>> span = reciprocal(rate, 25.0)
    >>> span.dual_bound, round(span.relative_gap, 6)
    (20.0, 0.2)
    """
    bound = 1.0 / cert.dual_bound if np.isfinite(cert.dual_bound) and cert.dual_bound > 0 \
        else float("inf")
    gap = abs(value - bound) if np.isfinite(value) and np.isfinite(bound) else float("inf")
    return dataclasses.replace(cert, primal_value=float(value), dual_bound=bound, gap=gap,
                               scale=None)


def negated(cert: Certificate, value: float) -> Certificate:
    """The certificate of a minimised ``value`` (``rho_max``) solved as ``max -value``.

    Examples
    --------
    >>> from fairalloc.results import Certificate
    >>> c = Certificate("conic", primal_value=-1.5, dual_bound=-1.4, gap=0.1,
    ...                 primal_residual=0.0)
    >>> r = negated(c, 1.5)
    >>> r.primal_value, r.dual_bound, round(r.gap, 12)
    (1.5, 1.4, 0.1)
    """
    bound = -cert.dual_bound
    gap = abs(value - bound) if np.isfinite(value) and np.isfinite(bound) else float("inf")
    return dataclasses.replace(cert, primal_value=float(value), dual_bound=bound, gap=gap,
                               scale=None)


def _in_units(cert: Certificate, unit: float) -> Certificate:
    """``cert`` of a program whose objective was divided by ``unit`` (a power of two), in the
    caller's units (exact; the relative gap and residuals are unchanged)."""
    if unit == 1.0:
        return cert
    return dataclasses.replace(
        cert, primal_value=cert.primal_value * unit, dual_bound=cert.dual_bound * unit,
        gap=cert.gap * unit, scale=None if cert.scale is None else cert.scale * unit)


def _clean(cvx: dict[str, Any]) -> None:
    """Write the allocation the result returns into the model: time fractions clipped to
    ``[0, 1]``, auxiliary level variables recomputed from them."""
    xc = cvx["xc"]
    if xc.value is None:
        return
    xc.save_value(np.clip(np.asarray(xc.value, dtype=float), 0.0, 1.0))
    for tighten in cvx.get("tighten", ()):
        tighten()


def solve_composed(policy: Any, wc: bool, tols: tuple[float, float, float], backend: Any,
                   t0: float) -> tuple[np.ndarray, np.ndarray, Certificate,
                                       tuple[Certificate, ...], SolveStats]:
    """Solve ``policy``'s cvxpy model (and its work-conserving stage) and certify the
    returned allocation. Returns the column allocation, the prices, the certificate of the
    reported objective (`policy._cvx_report`), every stage's certificate and the stats."""
    import cvxpy as cp

    gap_tol, feas_tol, stage_tol = tols
    # the composed model if there is one, else a fresh one (solve keeps no state)
    cvx = policy._cvx if policy._cvx is not None else policy._new_cvxpy_model()
    prob = policy._problem(cvx)
    unit = policy._cvx_unit()

    def clean() -> None:
        _clean(cvx)

    def report(cert: Certificate) -> Certificate:
        xcol = np.asarray(cvx["xc"].value, dtype=float)
        return policy._cvx_report(_in_units(cert, unit), xcol)

    log = SolveLog()
    stats, first = solve_cvxpy(prob, backend=backend, gap_tol=gap_tol, feas_tol=feas_tol,
                               clean=clean, report=report, robust=True, log=log,
                               what=f"composed {policy.name}")
    prices = unit * np.maximum(np.asarray(cvx["capacity"].dual_value, dtype=float), 0.0)
    final = report(first)
    certs: list[Certificate] = [final]
    if wc:
        kept = snapshot_point(prob)
        value = first.primal_value  # the objective the returned first-stage point reaches
        slack = stage_tol * max(abs(value), float(first.scale or 0.0))
        obj = prob.objective.args[0]
        p2 = cp.Problem(cp.Maximize(policy._wc_objective() @ cvx["xc"]),
                        [*prob.constraints, obj >= value - slack])
        tried: list[Certificate] = []  # the work-conserving stage's certificates
        whys: list[str] = []

        def decline(why: str) -> Decline:
            whys.append(why)
            return Decline(why)

        def work_conserving(_: None) -> Certificate:
            """The stage; the reported certificate of the first stage at its point."""
            try:
                _, second = solve_cvxpy(p2, backend=backend, gap_tol=gap_tol,
                                        feas_tol=feas_tol, clean=clean, robust=True, log=log,
                                        what=f"{policy.name} work-conserving")
            except CertificateError as exc:  # points, none certified
                if isinstance(exc.certificate, Certificate):
                    tried.append(exc.certificate)
                raise decline("its own certificate failed") from exc
            except SolverError as exc:  # no point (no certificate)
                raise decline(f"its solve failed ({exc})") from exc
            there = report(certify_point(prob, first))  # the first stage at the second's point
            if not there.ok:  # reported as the stage's certificate (why it was not used)
                tried.append(there)
                raise decline(f"the first stage's certificate fails at its point ({there!r})")
            tried.append(second)
            return there

        def first_stage(_: None) -> Certificate:
            """The documented degradation: the certified first-stage point, announced."""
            restore_point(kept)
            warnings.warn(
                f"{policy.name}: the work-conserving stage could not be certified "
                f"({whys[-1] if whys else 'no point'}); returning the certified first-stage "
                "allocation, which may leave capacity idle",
                FairallocWarning, stacklevel=caller_stacklevel())
            return final

        found = run_plan(composed_wc_plan(work_conserving, first_stage), None, log,
                         what=f"{policy.name} work-conserving")
        final = certs[0] = found.result
        certs.extend(tried)
    xcol = np.asarray(cvx["xc"].value, dtype=float)
    stats = SolveStats(backend="+".join(log.backends) or stats.backend, method="cvxpy",
                       seconds=time.perf_counter() - t0, iterations=log.iterations,
                       solves=log.solves, raw_status=log.raw_status, path=log.path,
                       fallbacks=log.fallbacks)
    final.check(backend=stats.backend)
    return xcol, prices, final, tuple(certs), stats
