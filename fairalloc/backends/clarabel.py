"""Clarabel backend: interior-point conic solver (LP, exponential cone) with duals.

The default for Eisenberg-Gale programs (through cvxpy, solver name ``CLARABEL``) and usable
directly on a `fairalloc.backends.LinearProgram`.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from ..tolerances import SOLVER_TOL
from .base import (
    USABLE,
    Backend,
    ConicProgram,
    ConicSolution,
    LinearProgram,
    LPSolution,
    SolveStatus,
)

__all__ = ["ClarabelBackend"]

#: Clarabel's ``tol_ktratio`` (an ACCURACY setting: how far the homogeneous embedding's
#: kappa/tau ratio may go before Clarabel reports infeasibility).
KTRATIO_TOL = 1e-7


def _settings(*, tol: float = SOLVER_TOL, time_limit: float | None = None,
              verbose: bool = False) -> object:
    """Clarabel settings (quiet unless ``verbose``) with the given feasibility / gap tolerances."""
    import clarabel

    s = clarabel.DefaultSettings()
    s.verbose = bool(verbose)
    s.tol_gap_abs = tol
    s.tol_gap_rel = tol
    s.tol_feas = tol
    s.tol_ktratio = KTRATIO_TOL
    if time_limit is not None:
        s.time_limit = float(time_limit)
    return s


class ClarabelBackend(Backend):
    """Clarabel, fed the conic standard form ``A x + s = b, s in K`` directly.

    Examples
    --------
    >>> import numpy as np
    >>> from fairalloc.backends import LinearProgram
    >>> lp = LinearProgram.build([1.0, 1.0], [[1.0, 1.0]], row_lower=1.0)
    >>> sol = ClarabelBackend().solve_lp(lp)
    >>> sol.status.value, round(sol.objective, 6)
    ('optimal', 1.0)
    """

    name: ClassVar[str] = "clarabel"
    module: ClassVar[str] = "clarabel"
    capabilities: ClassVar[frozenset[str]] = frozenset({"lp", "duals", "exp_cone", "cvxpy"})
    options: ClassVar[frozenset[str]] = frozenset({"time_limit", "verbose"})
    #: Clarabel's ``str(SolverStatus)`` -> canonical. ``AlmostSolved`` and the limits hand their
    #: point to the caller's certificate (the one acceptance rule); ``InsufficientProgress``
    #: too (Clarabel stops there near the optimum when it cannot gain more digits).
    STATUS_MAP: ClassVar[dict[str, SolveStatus]] = {
        "Solved": SolveStatus.OPTIMAL,
        "AlmostSolved": SolveStatus.INACCURATE,
        "InsufficientProgress": SolveStatus.INACCURATE,
        "MaxIterations": SolveStatus.ITERATION_LIMIT,
        "MaxTime": SolveStatus.TIME_LIMIT,
        "PrimalInfeasible": SolveStatus.INFEASIBLE,
        "AlmostPrimalInfeasible": SolveStatus.INFEASIBLE,
        "DualInfeasible": SolveStatus.UNBOUNDED,
        "AlmostDualInfeasible": SolveStatus.UNBOUNDED,
        "NumericalError": SolveStatus.ERROR,
        "Unsolved": SolveStatus.ERROR,
    }

    def _solve_conic(self, prog: ConicProgram, *, tol: float, time_limit: float | None,
                     verbose: bool, settings: dict[str, Any]) -> ConicSolution:
        import clarabel

        t0 = time.perf_counter()
        cones = []
        if prog.zero:
            cones.append(clarabel.ZeroConeT(prog.zero))
        if prog.nonneg:
            cones.append(clarabel.NonnegativeConeT(prog.nonneg))
        cones.extend([clarabel.ExponentialConeT()] * prog.exp)
        n = prog.c.size
        P = sp.csc_matrix((n, n))
        opts = _settings(tol=tol, time_limit=time_limit, verbose=verbose)
        for key, value in settings.items():
            if not hasattr(opts, key):
                from ..errors import InputError

                raise InputError(f"clarabel has no setting {key!r}", argument="settings")
            setattr(opts, key, value)
        sol = clarabel.DefaultSolver(P, np.asarray(prog.c, dtype=float), sp.csc_matrix(prog.A),
                                     np.asarray(prog.b, dtype=float), cones, opts).solve()
        raw = str(sol.status)
        status = self.canonical_status(raw)
        x = np.asarray(sol.x, dtype=float)
        have = status in USABLE and x.size == n and bool(np.all(np.isfinite(x)))
        if not have and status in USABLE:
            status = SolveStatus.ERROR
        return ConicSolution(
            status=status,
            x=x if have else None,
            s=np.asarray(sol.s, dtype=float) if have else None,
            z=np.asarray(sol.z, dtype=float) if have else None,
            objective=float(prog.c @ x) if have else float("nan"),
            iterations=int(sol.iterations),
            seconds=time.perf_counter() - t0,
            raw_status=raw,
            backend=self.name,
            extra={"raw": sol},
        )

    def _solve_lp(
        self,
        lp: LinearProgram,
        *,
        time_limit: float | None,
        mip_gap: float | None,
        threads: int | None,
        start: np.ndarray | None,
        verbose: bool,
        basis: Any = None,
        keep_basis: bool = False,
    ) -> LPSolution:
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
        conic = self._solve_conic(
            ConicProgram(c=lp.c, A=A, b=b, zero=n_eq, nonneg=A.shape[0] - n_eq),
            tol=SOLVER_TOL, time_limit=time_limit, verbose=verbose, settings={})
        if not conic.usable:
            return LPSolution(conic.status, None, float("nan"), iterations=conic.iterations,
                              seconds=time.perf_counter() - t0, raw_status=conic.raw_status,
                              backend=self.name)
        assert conic.x is not None and conic.z is not None
        x, z = conic.x, conic.z
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
            status=conic.status,
            x=x,
            objective=float(lp.c @ x) + lp.offset,
            row_duals=row_duals,
            col_duals=col_duals,
            iterations=conic.iterations,
            seconds=time.perf_counter() - t0,
            raw_status=conic.raw_status,
            backend=self.name,
        )
