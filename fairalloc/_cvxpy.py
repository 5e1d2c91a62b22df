"""Solving composed cvxpy programs with an explicitly named solver, and certifying them.

cvxpy is fairalloc's composition layer: builders expose cvxpy variables and constraints, a user
adds constraints or objective terms, and `solve_cvxpy` solves the result. It never lets
cvxpy choose a solver, and it certifies the solution from the conic standard form itself:
cvxpy compiles the problem to ``min c@x  s.t.  A x + s = b, s in K`` (Clarabel's form); from the
solver's raw primal ``x`` and dual ``z`` we compute, without trusting the solver's status,

* the primal residual: distance of ``b - A x`` to the cone ``K``,
* the dual residual: ``||A^T z + c||`` and the distance of ``z`` to the dual cone ``K*``,
* the duality gap ``c@x + b@z``.

Every quantity is judged relative to the data scale, so the verdict does not change when the
program's data are expressed in other units: the primal residual of each row relative to
that row's own magnitude ``max(|b_i|, sum_j |A_ij| max|x|)`` (a cone: its largest row), the
dual residual relative to ``max(|c|, |A^T z|)``, and the gap relative to
the magnitude of the terms it is computed from, ``max(sum_j |c_j x_j|, sum_i |b_i z_i|)``
(a caller whose objective has a natural scale, e.g. the total budget of an Eisenberg-Gale
program, passes it as ``scale``). The standard relative gap ``gap / max(|primal|, |dual|)``
would call an optimum near 0 (an objective with cancelling terms) unproven, and
``gap / max(1, |objective|)`` would accept anything when the objective is small in the
caller's units.

This is the KKT certificate used for programs with user-added pieces; builders whose dual has
a closed form (Eisenberg-Gale, LPs) use their exact certificates instead.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np

from ._validation import as_bool, as_time_limit, as_tolerance
from .backends import get_backend
from .errors import FairallocError, InfeasibleError, InputError, SolverError
from .results import Certificate, SolveStats
from .tolerances import CONE_EPS, FEAS_TOL, GAP_TOL, SOLVER_TOL

__all__ = ["conic_certificate", "solve_cvxpy"]


def _exp_primal_violation(r: np.ndarray) -> np.ndarray:
    """Violation of ``r2 * exp(r1 / r2) <= r3, r2 > 0`` (rows of r are cone triples)."""
    r1, r2, r3 = r[:, 0], r[:, 1], r[:, 2]
    out = np.zeros(len(r))
    pos = r2 > CONE_EPS
    with np.errstate(over="ignore"):
        out[pos] = np.maximum(r2[pos] * np.exp(r1[pos] / r2[pos]) - r3[pos], 0.0)
    # closure at r2 = 0: r1 <= 0, r3 >= 0
    out[~pos] = np.maximum.reduce([np.maximum(r1[~pos], 0), np.maximum(-r3[~pos], 0),
                                   np.maximum(-r2[~pos], 0)])
    return out


def _exp_dual_violation(z: np.ndarray) -> np.ndarray:
    """Violation of the dual exponential cone ``-u exp(v/u) <= e w, u < 0``."""
    u, v, w = z[:, 0], z[:, 1], z[:, 2]
    out = np.zeros(len(z))
    neg = u < -CONE_EPS
    with np.errstate(over="ignore"):
        out[neg] = np.maximum(-u[neg] * np.exp(v[neg] / u[neg]) - np.e * w[neg], 0.0)
    out[~neg] = np.maximum.reduce([np.maximum(u[~neg], 0), np.maximum(-v[~neg], 0),
                                   np.maximum(-w[~neg], 0)])
    return out


def _cone_violation(vec: np.ndarray, dims: Any, *, dual: bool,
                    row_scale: np.ndarray | None = None) -> float:
    """Largest violation of ``vec`` against the cone (or dual cone) described by ``dims``.

    With ``row_scale`` each violation is divided by the magnitude of its own rows (each row
    for the zero and non-negative cones, the largest of its rows for a second-order or
    exponential cone), so a constraint written in small units is judged at its own scale.
    """
    pos = 0
    worst = 0.0
    tiny = np.finfo(float).tiny

    def rel(viol: np.ndarray, lo: int, hi: int, per_row: bool) -> float:
        viol = np.asarray(viol, dtype=float)
        if row_scale is None or viol.size == 0:
            return float(np.max(viol, initial=0.0))
        sc = row_scale[lo:hi]
        if not per_row:
            sc = np.max(sc.reshape(viol.size, -1), axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(viol > 0, viol / np.maximum(sc, tiny), 0.0)
        return float(np.max(out, initial=0.0))

    zero = int(dims.zero)
    if not dual:  # zero cone: primal slack must be 0; its dual cone is free
        worst = max(worst, rel(np.abs(vec[:zero]), 0, zero, True))
    pos += zero
    nonneg = int(dims.nonneg)
    worst = max(worst, rel(-vec[pos: pos + nonneg], pos, pos + nonneg, True))
    pos += nonneg
    for size in dims.soc:  # self-dual
        t, v = vec[pos], vec[pos + 1: pos + size]
        worst = max(worst, rel(np.array([np.linalg.norm(v) - t]), pos, pos + size, False))
        pos += size
    n_exp = int(dims.exp)
    if n_exp:
        block = vec[pos: pos + 3 * n_exp].reshape(n_exp, 3)
        viol = _exp_dual_violation(block) if dual else _exp_primal_violation(block)
        worst = max(worst, rel(viol, pos, pos + 3 * n_exp, False))
        pos += 3 * n_exp
    if pos != vec.size:
        raise SolverError("conic certificate supports zero, non-negative, second-order and "
                          "exponential cones only", backend="clarabel")
    return worst


def _ratio(num: float, den: float) -> float:
    """``num / den`` with ``0 / 0 = 0`` and ``x / 0 = inf`` (a violation of nothing)."""
    if num <= 0.0:
        return 0.0 if num == 0.0 or np.isfinite(num) else float("inf")
    if not np.isfinite(num):
        return float("inf")
    return num / den if den > 0.0 and np.isfinite(den) else float("inf")


def conic_certificate(
    data: dict[str, Any], x: np.ndarray, z: np.ndarray, *, maximize: bool,
    offset: float = 0.0, gap_tol: float = GAP_TOL, feas_tol: float = FEAS_TOL,
    scale: float | None = None,
) -> Certificate:
    """KKT certificate of a conic program ``min c@x, A x + s = b, s in K`` from ``x`` and ``z``.

    Residuals and gap are relative to the data scale (see the module docstring); ``scale``
    overrides the gap's scale (in the objective's units).
    """
    A, b, c = data["A"], np.asarray(data["b"], dtype=float), np.asarray(data["c"], dtype=float)
    dims = data["dims"]
    Ax = A @ x
    slack = b - Ax
    # each row judged at its own magnitude, max(|b_i|, sum_j |A_ij| * max|x|): a row written in
    # small units is judged in those units, while a row whose terms are ~0 at the solution
    # (x_j == 0 met to 1e-10) is still judged against the size of the variables
    xmax = float(np.max(np.abs(x), initial=0.0))
    row_scale = np.maximum(np.abs(b), np.asarray(abs(A).sum(axis=1)).ravel() * xmax)
    primal_res = _cone_violation(slack, dims, dual=False, row_scale=row_scale)
    ATz = A.T @ z
    dual_res = max(
        _ratio(float(np.max(np.abs(ATz + c), initial=0.0)),
               max(float(np.max(np.abs(c), initial=0.0)),
                   float(np.max(np.abs(ATz), initial=0.0)))),
        _ratio(_cone_violation(z, dims, dual=True), float(np.max(np.abs(z), initial=0.0))),
    )
    primal = float(c @ x) + offset
    dual = -float(b @ z) + offset
    if scale is None:
        scale = max(float(np.sum(np.abs(c * x))), float(np.sum(np.abs(b * z))), abs(offset))
    sign = -1.0 if maximize else 1.0
    return Certificate(
        kind="conic",
        primal_value=sign * primal,
        dual_bound=sign * dual,
        gap=abs(primal - dual),
        primal_residual=primal_res,
        dual_residual=dual_res,
        gap_tol=gap_tol,
        feas_tol=feas_tol,
        scale=scale,
    )


def solve_cvxpy(
    problem: Any,
    *,
    backend: Any = "clarabel",
    gap_tol: float = GAP_TOL,
    feas_tol: float = FEAS_TOL,
    time_limit: float | None = None,
    method: str = "cvxpy",
    scale: float | None = None,
    verbose: bool = False,
) -> tuple[SolveStats, Certificate]:
    """Solve a cvxpy problem with an explicitly named backend and certify it.

    Only Clarabel returns the raw conic vectors the certificate needs, so composed programs
    are certified through ``backend="clarabel"``. The solver's status is mapped by the
    backend's status map and accepted by the one rule of [`fairalloc.backends`][fairalloc.backends]
    (`USABLE`): a usable point goes to the certificate, which decides.
    ``scale`` is passed to `conic_certificate`.

    Raises
    ------
    InfeasibleError, SolverError, CertificateError
        Any exception cvxpy or the solver raises becomes [`SolverError`][fairalloc.SolverError]
        (cause chained).
    """
    import cvxpy as cp

    from .backends import USABLE, SolveStatus

    inst = get_backend(backend, need="cvxpy")
    if inst.name != "clarabel":
        raise InputError(
            f"composed programs are certified through backend='clarabel' (got {inst.name!r})",
            argument="backend",
        )
    time_limit = as_time_limit(time_limit)
    gap_tol = as_tolerance(gap_tol, "gap_tol")
    feas_tol = as_tolerance(feas_tol, "feas_tol")
    verbose = as_bool(verbose, "verbose")
    t0 = time.perf_counter()
    opts: dict[str, Any] = {"tol_gap_abs": SOLVER_TOL, "tol_gap_rel": SOLVER_TOL,
                            "tol_feas": SOLVER_TOL,
                            "verbose": verbose}
    if time_limit is not None:
        opts["time_limit"] = float(time_limit)
    try:
        data, chain, inverse = problem.get_problem_data(cp.CLARABEL, solver_opts=opts)
        raw = chain.solve_via_data(problem, data, False, verbose, opts)
    except FairallocError:
        raise
    except Exception as exc:  # cvxpy.error.SolverError, DCPError, numerical errors ...
        raise SolverError(f"cvxpy/clarabel raised {type(exc).__name__}: {exc}",
                          backend=inst.name, raw_status="exception") from exc
    status = str(getattr(raw, "status", ""))
    canonical = inst.canonical_status(status)
    if canonical == SolveStatus.INFEASIBLE:
        raise InfeasibleError(f"the program is infeasible (clarabel: {status})",
                              backend=inst.name, status=status)
    x = np.asarray(getattr(raw, "x", []), dtype=float)
    z = np.asarray(getattr(raw, "z", []), dtype=float)
    if (canonical not in USABLE or not np.all(np.isfinite(x)) or not np.all(np.isfinite(z))
            or x.size != data["A"].shape[1] or z.size != data["A"].shape[0]):
        raise SolverError(f"clarabel failed: {status}", backend=inst.name, status=status)
    try:
        with warnings.catch_warnings():  # "may be inaccurate": the certificate decides
            warnings.simplefilter("ignore")
            problem.unpack_results(raw, chain, inverse)
        maximize = isinstance(problem.objective, cp.Maximize)
        cert = conic_certificate(data, x, z, maximize=maximize, gap_tol=gap_tol,
                                 feas_tol=feas_tol, scale=scale)
    except FairallocError:
        raise
    except Exception as exc:
        raise SolverError(f"could not read the solution back: {type(exc).__name__}: {exc}",
                          backend=inst.name, status=status) from exc
    stats = SolveStats(backend=inst.name, method=method, seconds=time.perf_counter() - t0,
                       iterations=int(getattr(raw, "iterations", 0)), raw_status=status)
    return stats, cert
