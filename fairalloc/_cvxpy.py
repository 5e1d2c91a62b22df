"""Solving composed cvxpy programs with an explicitly named solver, and certifying them.

cvxpy is fairalloc's composition layer: builders expose cvxpy variables and constraints, a user
adds constraints or objective terms, and :func:`solve_cvxpy` solves the result. It never lets
cvxpy choose a solver, and it certifies the solution from the conic standard form itself:
cvxpy compiles the problem to ``min c@x  s.t.  A x + s = b, s in K`` (Clarabel's form); from the
solver's raw primal ``x`` and dual ``z`` we compute, without trusting the solver's status,

* the primal residual: distance of ``b - A x`` to the cone ``K``,
* the dual residual: ``||A^T z + c||`` and the distance of ``z`` to the dual cone ``K*``,
* the duality gap ``c@x + b@z``.

This is the KKT certificate used for programs with user-added pieces; builders whose dual has
a closed form (Eisenberg-Gale, LPs) use their exact certificates instead.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from .backends import get_backend
from .errors import InfeasibleError, InputError, SolverError
from .results import Certificate, SolveStats

__all__ = ["conic_certificate", "solve_cvxpy"]


def _exp_primal_violation(r: np.ndarray) -> np.ndarray:
    """Violation of ``r2 * exp(r1 / r2) <= r3, r2 > 0`` (rows of r are cone triples)."""
    r1, r2, r3 = r[:, 0], r[:, 1], r[:, 2]
    out = np.zeros(len(r))
    pos = r2 > 1e-12
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
    neg = u < -1e-12
    with np.errstate(over="ignore"):
        out[neg] = np.maximum(-u[neg] * np.exp(v[neg] / u[neg]) - np.e * w[neg], 0.0)
    out[~neg] = np.maximum.reduce([np.maximum(u[~neg], 0), np.maximum(-v[~neg], 0),
                                   np.maximum(-w[~neg], 0)])
    return out


def _cone_violation(vec: np.ndarray, dims: Any, *, dual: bool) -> float:
    """Largest violation of ``vec`` against the cone (or dual cone) described by ``dims``."""
    pos = 0
    worst = 0.0
    zero = int(dims.zero)
    if not dual:  # zero cone: primal slack must be 0; its dual cone is free
        worst = max(worst, float(np.max(np.abs(vec[:zero]), initial=0.0)))
    pos += zero
    nonneg = int(dims.nonneg)
    worst = max(worst, float(np.max(-vec[pos: pos + nonneg], initial=0.0)))
    pos += nonneg
    for size in dims.soc:  # self-dual
        t, v = vec[pos], vec[pos + 1: pos + size]
        worst = max(worst, float(np.linalg.norm(v) - t))
        pos += size
    n_exp = int(dims.exp)
    if n_exp:
        block = vec[pos: pos + 3 * n_exp].reshape(n_exp, 3)
        viol = _exp_dual_violation(block) if dual else _exp_primal_violation(block)
        worst = max(worst, float(viol.max(initial=0.0)))
        pos += 3 * n_exp
    if pos != vec.size:
        raise SolverError("conic certificate supports zero, non-negative, second-order and "
                          "exponential cones only", backend="clarabel")
    return worst


def conic_certificate(
    data: dict[str, Any], x: np.ndarray, z: np.ndarray, *, maximize: bool,
    offset: float = 0.0, gap_tol: float = 1e-6, feas_tol: float = 1e-7
) -> Certificate:
    """KKT certificate of a conic program ``min c@x, A x + s = b, s in K`` from ``x`` and ``z``."""
    A, b, c = data["A"], np.asarray(data["b"]), np.asarray(data["c"])
    dims = data["dims"]
    slack = b - A @ x
    primal_res = _cone_violation(slack, dims, dual=False) / (1.0 + float(np.max(np.abs(b))))
    dual_res = max(
        float(np.max(np.abs(A.T @ z + c), initial=0.0)),
        _cone_violation(z, dims, dual=True),
    ) / (1.0 + float(np.max(np.abs(c), initial=0.0)))
    primal = float(c @ x) + offset
    dual = -float(b @ z) + offset
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
    )


def solve_cvxpy(
    problem: Any,
    *,
    backend: str = "clarabel",
    gap_tol: float = 1e-6,
    feas_tol: float = 1e-7,
    time_limit: float | None = None,
    method: str = "cvxpy",
) -> tuple[SolveStats, Certificate]:
    """Solve a cvxpy problem with an explicitly named backend and certify it.

    Only Clarabel returns the raw conic vectors the certificate needs, so composed programs
    are certified through ``backend="clarabel"``.

    Raises
    ------
    InfeasibleError, SolverError, CertificateError
    """
    import cvxpy as cp

    inst = get_backend(backend, need="cvxpy")
    if inst.name != "clarabel":
        raise InputError(
            f"composed programs are certified through backend='clarabel' (got {inst.name!r})",
            argument="backend",
        )
    t0 = time.perf_counter()
    opts: dict[str, Any] = {"tol_gap_abs": 1e-9, "tol_gap_rel": 1e-9, "tol_feas": 1e-9}
    if time_limit is not None:
        opts["time_limit"] = float(time_limit)
    data, chain, inverse = problem.get_problem_data(cp.CLARABEL, solver_opts=opts)
    raw = chain.solve_via_data(problem, data, False, False, opts)
    status = str(raw.status)
    if "Infeasible" in status and "Dual" not in status:
        raise InfeasibleError(f"the program is infeasible (clarabel: {status})",
                              backend="clarabel", status=status)
    if status not in ("Solved", "AlmostSolved", "InsufficientProgress", "MaxIterations"):
        raise SolverError(f"clarabel failed: {status}", backend="clarabel", status=status)
    problem.unpack_results(raw, chain, inverse)
    x = np.asarray(raw.x, dtype=float)
    z = np.asarray(raw.z, dtype=float)
    maximize = isinstance(problem.objective, cp.Maximize)
    cert = conic_certificate(data, x, z, maximize=maximize, gap_tol=gap_tol, feas_tol=feas_tol)
    stats = SolveStats(backend="clarabel", method=method, seconds=time.perf_counter() - t0,
                       iterations=int(raw.iterations))
    return stats, cert
