"""Optional Gurobi backend (``pip install ".[gurobi]"`` in the checkout): LP and MILP with duals.

Never chosen implicitly. Note that pip's gurobipy carries a size-limited licence (about 2,000
variables / constraints); larger models raise `fairalloc.SolverError` with
Gurobi's message.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np

from .base import LIMITED, USABLE, Backend, LinearProgram, LPSolution, SolveStatus

__all__ = ["GurobiBackend"]


class GurobiBackend(Backend):
    """Gurobi through gurobipy's matrix API (``addMVar`` / ``addMConstr``).

    Raises
    ------
    BackendUnavailableError
        On construction when gurobipy is not installed (or not licensed).

    Examples
    --------
    >>> GurobiBackend.name, sorted(GurobiBackend.capabilities)
    ('gurobi', ['cvxpy', 'duals', 'lp', 'milp'])
    """

    name: ClassVar[str] = "gurobi"
    module: ClassVar[str] = "gurobipy"
    extra: ClassVar[str] = "gurobi"
    capabilities: ClassVar[frozenset[str]] = frozenset({"lp", "milp", "duals", "cvxpy"})
    options: ClassVar[frozenset[str]] = frozenset({"time_limit", "mip_gap", "threads", "verbose",
                                                   "node_limit"})
    #: Gurobi's integer status codes (``str(model.Status)``) -> canonical.
    STATUS_MAP: ClassVar[dict[str, SolveStatus]] = {
        "2": SolveStatus.OPTIMAL,  # OPTIMAL
        "3": SolveStatus.INFEASIBLE,  # INFEASIBLE
        "4": SolveStatus.INFEASIBLE,  # INF_OR_UNBD
        "5": SolveStatus.UNBOUNDED,  # UNBOUNDED
        "7": SolveStatus.ITERATION_LIMIT,  # ITERATION_LIMIT
        "8": SolveStatus.ITERATION_LIMIT,  # NODE_LIMIT
        "9": SolveStatus.TIME_LIMIT,  # TIME_LIMIT
        "10": SolveStatus.ITERATION_LIMIT,  # SOLUTION_LIMIT
        "11": SolveStatus.TIME_LIMIT,  # INTERRUPTED
        "13": SolveStatus.INACCURATE,  # SUBOPTIMAL
    }

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
        node_limit: int | None = None,
    ) -> LPSolution:
        import gurobipy as gp
        from gurobipy import GRB

        from ..errors import SolverError

        t0 = time.perf_counter()
        m, n = lp.shape
        try:
            env = gp.Env(params={"OutputFlag": 0})
            model = gp.Model(env=env)
            if time_limit is not None:
                model.Params.TimeLimit = float(time_limit)
            if mip_gap is not None:
                model.Params.MIPGap = float(mip_gap)
            if threads is not None:
                model.Params.Threads = int(threads)
            if node_limit is not None and lp.is_mip:
                model.Params.NodeLimit = float(node_limit)
            vtype: Any = GRB.CONTINUOUS
            if lp.is_mip:
                assert lp.integrality is not None
                vtype = np.where(lp.integrality, GRB.INTEGER, GRB.CONTINUOUS)
            inf = GRB.INFINITY
            x = model.addMVar(
                n,
                lb=np.where(np.isfinite(lp.col_lower), lp.col_lower, -inf),
                ub=np.where(np.isfinite(lp.col_upper), lp.col_upper, inf),
                vtype=vtype,
            )
            if start is not None and lp.is_mip:
                x.setAttr("Start", np.asarray(start, dtype=float).ravel())
            model.setObjective(lp.c @ x + lp.offset, GRB.MINIMIZE)
            eq = np.isfinite(lp.row_lower) & (lp.row_lower == lp.row_upper)
            up = np.isfinite(lp.row_upper) & ~eq
            lo = np.isfinite(lp.row_lower) & ~eq
            cons = []  # a ranged row gets two constraints; its dual is their sum
            for mask, sense, rhs in (
                (eq, "=", lp.row_upper),
                (up, "<", lp.row_upper),
                (lo, ">", lp.row_lower),
            ):
                if mask.any():
                    cons.append((mask, model.addMConstr(lp.A[mask], x, sense, rhs[mask])))
            model.optimize()
        except gp.GurobiError as exc:
            raise SolverError(f"gurobi failed: {exc}", backend=self.name,
                              status=str(getattr(exc, "errno", ""))) from exc
        st = model.Status
        raw = str(st)
        has_sol = model.SolCount > 0
        status = self.canonical_status(raw)
        if status in LIMITED + (SolveStatus.INACCURATE,) and not has_sol:
            status = SolveStatus.ERROR
        xv = row_duals = col_duals = None
        obj: float = float("nan")
        bound: float = float("nan")
        if status in USABLE:
            xv = np.asarray(x.X, dtype=float)
            obj = float(model.ObjVal)
            if lp.is_mip:
                bound = float(model.ObjBound)
            else:
                row_duals = np.zeros(m)
                for mask, con in cons:
                    row_duals[mask] += np.asarray(con.Pi, dtype=float)
                col_duals = np.asarray(x.RC, dtype=float)
        iters = int(model.IterCount) if not lp.is_mip else int(model.NodeCount)
        model.dispose()
        env.dispose()
        return LPSolution(status, xv, obj, row_duals, col_duals, iters,
                          time.perf_counter() - t0, bound, raw, self.name)
