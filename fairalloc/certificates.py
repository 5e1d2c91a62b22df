"""Certificates computed independently of the solver.

Each function takes the problem data and the *returned* primal point and dual prices, and
evaluates primal feasibility and a weak-duality bound itself. Nothing the solver says about its
own status is trusted.

* `lp_certificate` -- any `fairalloc.backends.LinearProgram`: the Lagrangian dual
  function at the returned row duals (after projecting them onto their sign constraints) is a
  valid lower bound for a minimisation, so ``c @ x - bound`` is a proven gap.
* `milp_certificate` -- primal and integrality residuals of the incumbent, gap to the
  solver's best bound (mixed-integer programs have no convex dual).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._sparse import abs_matvec, dot, matvec, rmatvec
from .backends.base import LinearProgram
from .results import Certificate
from .tolerances import FEAS_TOL, GAP_TOL, MILP_GAP_TOL

__all__ = ["lp_certificate", "milp_certificate", "lp_primal_residual"]


def lp_primal_residual(lp: LinearProgram, x: np.ndarray) -> float:
    """Largest violation of a row or column bound, relative to that constraint's own scale.

    A row ``rl <= a @ x <= ru`` is judged against ``max(|bound|, sum_j |a_j x_j|)`` (the size of
    the numbers the row adds up) and a column bound against ``max(|bound|, max_j |x_j|)``, so the
    residual is unchanged when the program is expressed in other units (rows, bounds or the
    whole point rescaled). ``0`` means exactly feasible.

    Parameters
    ----------
    lp : fairalloc.backends.LinearProgram
        The program whose rows and column bounds are checked.
    x : numpy.ndarray, shape (n,)
        The point.

    Returns
    -------
    float
        The largest relative violation (``0.0`` when ``x`` satisfies every bound).

    Examples
    --------
    >>> import numpy as np
    >>> from fairalloc.backends import LinearProgram
    >>> lp = LinearProgram.build(np.zeros(1), np.array([[1e-9]]), row_upper=[1e-9])
    >>> round(lp_primal_residual(lp, np.array([1.5])), 4)
    0.3333
    """
    return _primal_residual(lp, _csr(lp), np.asarray(x, dtype=float))


def _primal_residual(lp: LinearProgram, A: sp.csr_matrix, x: np.ndarray) -> float:
    """`lp_primal_residual` with the LP's CSR matrix ``A``."""
    ax = matvec(A, x)
    row_mag: np.ndarray | None = None  # |A| |x|, computed only when a row is violated
    x_mag = float(np.max(np.abs(x), initial=0.0))
    res = 0.0
    with np.errstate(invalid="ignore", divide="ignore"):
        for val, lo, hi in ((ax, lp.row_lower, lp.row_upper), (x, lp.col_lower, lp.col_upper)):
            if val.size == 0:
                continue
            for bound, excess in ((lo, lo - val), (hi, val - hi)):
                # (an infinite bound's excess is -inf or, for a bound of the wrong sign, inf:
                # the finite test below drops it; a NaN excess is no violation)
                fin = excess > 0
                if not fin.any():
                    continue
                fin &= np.isfinite(bound)
                if not fin.any():
                    continue
                if val is ax:
                    if row_mag is None:
                        row_mag = abs_matvec(A, x)
                    mag = row_mag[fin]
                else:
                    mag = x_mag
                scale = np.maximum(np.abs(bound[fin]), mag)
                rel = np.where(scale > 0, excess[fin] / np.where(scale > 0, scale, 1.0), np.inf)
                res = max(res, float(np.max(rel)))
    if not np.all(np.isfinite(x)):
        return float("inf")
    return res


def _csr(lp: LinearProgram) -> sp.csr_matrix:
    """The LP's constraint matrix as CSR (it is one when built by `LinearProgram.build`)."""
    return lp.A if isinstance(lp.A, sp.csr_matrix) else sp.csr_matrix(lp.A)


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
    at_lo = pos & lo_fin
    at_hi = neg & hi_fin
    term = float(np.add.reduce(d[at_lo] * lo[at_lo]))
    term += float(np.add.reduce(d[at_hi] * hi[at_hi]))
    bad = np.concatenate([d[pos & ~lo_fin], -d[neg & ~hi_fin]])
    return term, float(np.max(bad, initial=0.0))


def lp_certificate(
    lp: LinearProgram,
    x: np.ndarray,
    row_duals: np.ndarray,
    *,
    maximize: bool = False,
    gap_tol: float = GAP_TOL,
    feas_tol: float = FEAS_TOL,
    scale: float | None = None,
) -> Certificate:
    """Independent LP certificate from a primal point and row duals.

    For ``min c@x`` s.t. ``rl <= Ax <= ru``, ``l <= x <= u`` and any ``y`` with ``y_i >= 0`` only
    where ``rl_i`` is finite and ``y_i <= 0`` only where ``ru_i`` is finite, the dual function
    ``g(y) = sum_i (y_i^+ rl_i - y_i^- ru_i) + sum_j min_{l_j<=v<=u_j} (c - A^T y)_j v`` is a lower
    bound on the optimum. ``y`` is first projected onto those sign constraints, so the bound is
    valid whatever the solver returned. If ``maximize`` is true the program is read as
    ``max -c@x`` (so pass the negated objective) and values are reported in the maximisation's
    sign. ``scale`` is the objective's data scale (see
    `fairalloc.Certificate`); by default the gap is judged relative to
    ``max(|primal|, |bound|)``.

    Parameters
    ----------
    lp : fairalloc.backends.LinearProgram
        The program, a minimisation (see ``maximize``).
    x : numpy.ndarray, shape (n,)
        Primal point; its objective and residuals are recomputed here.
    row_duals : numpy.ndarray, shape (m,)
        The solver's row duals (projected onto the valid signs before use; not mutated).
    maximize : bool, default False
        Report values in the sign of ``max -c@x``.
    gap_tol : float, default 1e-6 (``GAP_TOL``)
        Relative gap the certificate must meet to be ``ok``.
    feas_tol : float, default 1e-7 (``FEAS_TOL``)
        Relative primal and dual residual it must meet.
    scale : float, optional
        The objective's data scale the gap is judged against.

    Returns
    -------
    Certificate
        ``kind="lp"``, with the primal value, the dual bound, their gap and both residuals.

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
    up, down = y > 0, y < 0  # (the entries of y^+ and y^- that are not 0)
    # (np.add.reduce: np.sum's own reduction without its dispatch)
    rows = float(np.add.reduce(y[up] * lp.row_lower[up])
                 - np.add.reduce(-y[down] * lp.row_upper[down]))
    A = _csr(lp)
    d = lp.c - rmatvec(A, y)
    cols, dual_res = _bound_term(d, lp.col_lower, lp.col_upper)
    c_mag = float(np.max(np.abs(lp.c), initial=0.0))
    dual_res = dual_res / c_mag if c_mag > 0 else (0.0 if dual_res == 0 else float("inf"))
    bound = rows + cols + lp.offset
    primal = dot(lp.c, x) + lp.offset  # (not BLAS: `fairalloc._sparse.dot`)
    gap = max(primal - bound, 0.0)
    sign = -1.0 if maximize else 1.0
    return Certificate(
        kind="lp",
        primal_value=sign * primal,
        dual_bound=sign * bound,
        gap=gap,
        primal_residual=_primal_residual(lp, A, x),
        dual_residual=dual_res,
        gap_tol=gap_tol,
        feas_tol=feas_tol,
        scale=scale,
    )


def milp_certificate(
    lp: LinearProgram,
    x: np.ndarray,
    best_bound: float,
    *,
    maximize: bool = False,
    gap_tol: float = MILP_GAP_TOL,
    feas_tol: float = FEAS_TOL,
    scale: float | None = None,
) -> Certificate:
    """Certificate of a MILP incumbent: primal/integrality residual, gap to the solver's bound.

    The objective is recomputed from ``x``; only the bound comes from the solver (no convex dual
    exists for a mixed-integer program). A missing (non-finite) bound gives an infinite gap, so
    the certificate is not ``ok``.

    Parameters
    ----------
    lp : fairalloc.backends.LinearProgram
        The program, a minimisation (see ``maximize``), with its ``integrality``.
    x : numpy.ndarray, shape (n,)
        The incumbent; its residual includes the distance of each integer column to the
        nearest integer.
    best_bound : float
        The solver's proved lower bound on the minimum.
    maximize : bool, default False
        Report values in the sign of ``max -c@x``.
    gap_tol : float, default 1e-4 (``MILP_GAP_TOL``)
        Relative gap the certificate must meet to be ``ok``.
    feas_tol : float, default 1e-7 (``FEAS_TOL``)
        Relative primal (and integrality) residual it must meet.
    scale : float, optional
        The objective's data scale the gap is judged against.

    Returns
    -------
    Certificate
        ``kind="milp"``, with the primal value, the bound, their gap and the residual.

    Examples
    --------
    >>> import numpy as np
    >>> from fairalloc.backends import LinearProgram
    >>> lp = LinearProgram.build(np.array([-1.0]), np.array([[1.0]]), row_upper=[2.5],
    ...                          integrality=np.array([True]))
    >>> cert = milp_certificate(lp, np.array([2.0]), -2.0)
    >>> cert.gap, cert.primal_residual, bool(cert.ok)
    (0.0, 0.0, True)
    """
    x = np.asarray(x, dtype=float)
    res = lp_primal_residual(lp, x)
    if lp.integrality is not None:
        xi = x[lp.integrality]
        res = max(res, float(np.max(np.abs(xi - np.round(xi)), initial=0.0)))
    primal = dot(lp.c, x) + lp.offset  # (not BLAS: `fairalloc._sparse.dot`)
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
        scale=scale,
    )
