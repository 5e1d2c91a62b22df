"""Clarabel backend: interior-point conic solver (LP, exponential cone) with duals.

The default for Eisenberg-Gale programs (through cvxpy, solver name ``CLARABEL``) and usable
directly on a :class:`LinearProgram`.
"""

from __future__ import annotations

import time
from typing import ClassVar

import numpy as np
import scipy.sparse as sp

from .base import Backend, LinearProgram, LPSolution

__all__ = ["ClarabelBackend", "clarabel_settings"]


def clarabel_settings(*, tol: float = 1e-9, time_limit: float | None = None) -> object:
    """Quiet Clarabel settings with the given feasibility / gap tolerances."""
    import clarabel

    s = clarabel.DefaultSettings()
    s.verbose = False
    s.tol_gap_abs = tol
    s.tol_gap_rel = tol
    s.tol_feas = tol
    s.tol_ktratio = 1e-7
    if time_limit is not None:
        s.time_limit = float(time_limit)
    return s


class ClarabelBackend(Backend):
    """Clarabel, fed the conic standard form ``A x + s = b, s in K`` directly."""

    name: ClassVar[str] = "clarabel"
    module: ClassVar[str] = "clarabel"
    capabilities: ClassVar[frozenset[str]] = frozenset({"lp", "duals", "exp_cone", "cvxpy"})
    cvxpy_solver: ClassVar[str | None] = "CLARABEL"

    def solve_lp(
        self,
        lp: LinearProgram,
        *,
        time_limit: float | None = None,
        mip_gap: float | None = None,
        threads: int | None = None,
        start: np.ndarray | None = None,
    ) -> LPSolution:
        import clarabel

        if lp.is_mip:
            raise NotImplementedError("clarabel does not solve mixed-integer programs")
        t0 = time.perf_counter()
        m, n = lp.shape
        eye = sp.identity(n, format="csr")
        blocks, rhs, kinds = [], [], []  # kinds: (slice role, index array)
        eq = np.isfinite(lp.row_lower) & (lp.row_lower == lp.row_upper)
        up = np.isfinite(lp.row_upper) & ~eq
        lo = np.isfinite(lp.row_lower) & ~eq
        cu = np.isfinite(lp.col_upper)
        cl = np.isfinite(lp.col_lower)
        # zero cone first, then the non-negative cone
        blocks.append(lp.A[eq])
        rhs.append(lp.row_upper[eq])
        for mat, sign, bnd, mask in (
            (lp.A, 1.0, lp.row_upper, up),
            (lp.A, -1.0, lp.row_lower, lo),
            (eye, 1.0, lp.col_upper, cu),
            (eye, -1.0, lp.col_lower, cl),
        ):
            blocks.append(sign * mat[mask])
            rhs.append(sign * bnd[mask])
            kinds.append(mask)
        A = sp.vstack(blocks, format="csc")
        b = np.concatenate(rhs)
        n_eq = int(eq.sum())
        cones = []
        if n_eq:
            cones.append(clarabel.ZeroConeT(n_eq))
        if A.shape[0] - n_eq:
            cones.append(clarabel.NonnegativeConeT(A.shape[0] - n_eq))
        P = sp.csc_matrix((n, n))
        solver = clarabel.DefaultSolver(
            P, lp.c, A, b, cones, clarabel_settings(time_limit=time_limit)
        )
        sol = solver.solve()
        raw = str(sol.status)
        ok = raw in ("Solved", "AlmostSolved")
        if not ok:
            status = (
                "infeasible" if "PrimalInfeasible" in raw else
                "unbounded" if "DualInfeasible" in raw else "error"
            )
            return LPSolution(status, None, float("nan"), iterations=int(sol.iterations),
                              seconds=time.perf_counter() - t0, raw_status=raw, backend=self.name)
        x = np.asarray(sol.x)
        z = np.asarray(sol.z)
        row_duals = np.zeros(m)
        pos = n_eq
        row_duals[eq] = -z[:n_eq]
        z_up = z[pos: pos + up.sum()]
        pos += up.sum()
        z_lo = z[pos: pos + lo.sum()]
        pos += lo.sum()
        row_duals[up] -= z_up
        row_duals[lo] += z_lo
        col_duals = lp.c - lp.A.T @ row_duals
        return LPSolution(
            status="optimal",
            x=x,
            objective=float(lp.c @ x) + lp.offset,
            row_duals=row_duals,
            col_duals=col_duals,
            iterations=int(sol.iterations),
            seconds=time.perf_counter() - t0,
            raw_status=raw,
            backend=self.name,
        )
