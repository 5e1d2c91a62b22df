"""Certificates computed independently of the solver.

Each function takes the problem data and the *returned* primal point and dual prices, and
evaluates primal feasibility and a weak-duality bound itself. Nothing the solver says about its
own status is trusted.

* :func:`lp_certificate` -- any :class:`~fairalloc.backends.LinearProgram`: the Lagrangian dual
  function at the returned row duals (after projecting them onto their sign constraints) is a
  valid lower bound for a minimisation, so ``c @ x - bound`` is a proven gap.
* :func:`milp_certificate` -- primal and integrality residuals of the incumbent, gap to the
  solver's best bound (mixed-integer programs have no convex dual).
"""

from __future__ import annotations

import numpy as np

from .backends.base import LinearProgram
from .results import Certificate

__all__ = ["lp_certificate", "milp_certificate", "lp_primal_residual"]


def lp_primal_residual(lp: LinearProgram, x: np.ndarray) -> float:
    """Largest violation of a row or column bound, relative to ``1 + |bound|``."""
    ax = lp.A @ x
    res = 0.0
    for val, lo, hi in ((ax, lp.row_lower, lp.row_upper), (x, lp.col_lower, lp.col_upper)):
        if val.size == 0:
            continue
        with np.errstate(invalid="ignore"):
            lo_v = np.where(np.isfinite(lo), (lo - val) / (1.0 + np.abs(lo)), 0.0)
            hi_v = np.where(np.isfinite(hi), (val - hi) / (1.0 + np.abs(hi)), 0.0)
        res = max(res, float(np.max(lo_v, initial=0.0)), float(np.max(hi_v, initial=0.0)))
    return res


def _bound_term(d: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[float, float]:
    """``sum_j min_{lo_j <= v <= hi_j} d_j v`` and the mass of ``d`` that meets an infinite bound.

    The second value is the dual residual: a multiplier pushing towards an infinite bound makes
    the dual function ``-inf``; we drop such tiny entries (counting them as residual) so that
    round-off in a free variable's reduced cost does not void the certificate.
    """
    pos = d > 0
    neg = d < 0
    lo_fin = np.isfinite(lo)
    hi_fin = np.isfinite(hi)
    term = float(np.sum(d[pos & lo_fin] * lo[pos & lo_fin]))
    term += float(np.sum(d[neg & hi_fin] * hi[neg & hi_fin]))
    bad = np.concatenate([d[pos & ~lo_fin], -d[neg & ~hi_fin]])
    return term, float(np.max(bad, initial=0.0))


def lp_certificate(
    lp: LinearProgram,
    x: np.ndarray,
    row_duals: np.ndarray,
    *,
    maximize: bool = False,
    gap_tol: float = 1e-6,
    feas_tol: float = 1e-7,
) -> Certificate:
    """Independent LP certificate from a primal point and row duals.

    For ``min c@x`` s.t. ``rl <= Ax <= ru``, ``l <= x <= u`` and any ``y`` with ``y_i >= 0`` only
    where ``rl_i`` is finite and ``y_i <= 0`` only where ``ru_i`` is finite, the dual function
    ``g(y) = sum_i (y_i^+ rl_i - y_i^- ru_i) + sum_j min_{l_j<=v<=u_j} (c - A^T y)_j v`` is a lower
    bound on the optimum. ``y`` is first projected onto those sign constraints, so the bound is
    valid whatever the solver returned. If ``maximize`` is true the program is read as
    ``max -c@x`` (so pass the negated objective) and values are reported in the maximisation's
    sign.

    Examples
    --------
    >>> import numpy as np
    >>> from fairalloc.backends import LinearProgram
    >>> lp = LinearProgram.build(np.array([-1.0]), np.array([[1.0]]), row_upper=[2.0])
    >>> lp_certificate(lp, np.array([2.0]), np.array([-1.0])).gap
    0.0
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(row_duals, dtype=float).copy()
    y[(y > 0) & ~np.isfinite(lp.row_lower)] = 0.0
    y[(y < 0) & ~np.isfinite(lp.row_upper)] = 0.0
    ypos, yneg = np.maximum(y, 0.0), np.maximum(-y, 0.0)
    rows = float(
        np.sum(ypos[ypos > 0] * lp.row_lower[ypos > 0])
        - np.sum(yneg[yneg > 0] * lp.row_upper[yneg > 0])
    )
    d = lp.c - lp.A.T @ y
    cols, dual_res = _bound_term(d, lp.col_lower, lp.col_upper)
    dual_res /= 1.0 + float(np.max(np.abs(lp.c), initial=0.0))
    bound = rows + cols + lp.offset
    primal = float(lp.c @ x) + lp.offset
    gap = max(primal - bound, 0.0)
    sign = -1.0 if maximize else 1.0
    return Certificate(
        kind="lp",
        primal_value=sign * primal,
        dual_bound=sign * bound,
        gap=gap,
        primal_residual=lp_primal_residual(lp, x),
        dual_residual=dual_res,
        gap_tol=gap_tol,
        feas_tol=feas_tol,
    )


def milp_certificate(
    lp: LinearProgram,
    x: np.ndarray,
    best_bound: float,
    *,
    maximize: bool = False,
    gap_tol: float = 1e-4,
    feas_tol: float = 1e-7,
) -> Certificate:
    """Certificate of a MILP incumbent: primal/integrality residual, gap to the solver's bound.

    The objective is recomputed from ``x``; only the bound comes from the solver (no convex dual
    exists for a mixed-integer program).
    """
    x = np.asarray(x, dtype=float)
    res = lp_primal_residual(lp, x)
    if lp.integrality is not None:
        xi = x[lp.integrality]
        res = max(res, float(np.max(np.abs(xi - np.round(xi)), initial=0.0)))
    primal = float(lp.c @ x) + lp.offset
    gap = max(primal - float(best_bound), 0.0) if np.isfinite(best_bound) else float("inf")
    sign = -1.0 if maximize else 1.0
    return Certificate(
        kind="milp",
        primal_value=sign * primal,
        dual_bound=sign * float(best_bound),
        gap=gap,
        primal_residual=res,
        gap_tol=gap_tol,
        feas_tol=feas_tol,
    )
