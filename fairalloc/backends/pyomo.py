"""Optional Pyomo backend (``pip install ".[pyomo]"`` in the checkout).

Builds a Pyomo model from the matrix form and hands it to a Pyomo solver plug-in, by default
``appsi_highs`` (HiGHS through highspy, so no extra binary is needed). Useful to run fairalloc's
programs through any solver Pyomo knows (``PyomoBackend(solver="cbc")``). Pyomo builds models
row by row in Python, so this backend is meant for small and medium programs.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np

from .base import LIMITED, Backend, LinearProgram, LPSolution, SolveStatus

__all__ = ["PyomoBackend"]


class PyomoBackend(Backend):
    """Pyomo modelling layer over a named Pyomo solver (default ``appsi_highs``).

    Parameters
    ----------
    solver : str, default "appsi_highs"
        The Pyomo solver name (``pyomo.environ.SolverFactory``'s).

    Raises
    ------
    BackendUnavailableError
        When Pyomo is not installed.

    Examples
    --------
    >>> PyomoBackend.name, sorted(PyomoBackend.capabilities)
    ('pyomo', ['duals', 'lp', 'milp'])
    """

    name: ClassVar[str] = "pyomo"
    module: ClassVar[str] = "pyomo.environ"
    extra: ClassVar[str] = "pyomo"
    capabilities: ClassVar[frozenset[str]] = frozenset({"lp", "milp", "duals"})
    options: ClassVar[frozenset[str]] = frozenset({"time_limit", "mip_gap"})
    #: Pyomo's ``TerminationCondition`` names -> canonical.
    STATUS_MAP: ClassVar[dict[str, SolveStatus]] = {
        "optimal": SolveStatus.OPTIMAL,
        "infeasible": SolveStatus.INFEASIBLE,
        "infeasibleOrUnbounded": SolveStatus.INFEASIBLE,
        "unbounded": SolveStatus.UNBOUNDED,
        "maxTimeLimit": SolveStatus.TIME_LIMIT,
        "maxIterations": SolveStatus.ITERATION_LIMIT,
    }

    def __init__(self, solver: str = "appsi_highs") -> None:
        super().__init__()
        self.solver = solver

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
        import pyomo.environ as pyo

        t0 = time.perf_counter()
        m, n = lp.shape
        A = lp.A.tocsr()
        model = pyo.ConcreteModel()
        integ = lp.integrality if lp.is_mip else np.zeros(n, dtype=bool)

        def bounds(_model: object, j: int) -> tuple[float | None, float | None]:
            lo, hi = lp.col_lower[j], lp.col_upper[j]
            return (lo if np.isfinite(lo) else None, hi if np.isfinite(hi) else None)

        def domain(_model: object, j: int) -> object:
            return pyo.Integers if integ[j] else pyo.Reals  # type: ignore[index]

        model.x = pyo.Var(range(n), bounds=bounds, domain=domain)
        model.obj = pyo.Objective(
            expr=sum(float(lp.c[j]) * model.x[j] for j in np.flatnonzero(lp.c)) + lp.offset,
            sense=pyo.minimize,
        )

        def row(_model: object, i: int) -> object:
            lo, hi = A.indptr[i], A.indptr[i + 1]
            expr = sum(float(v) * model.x[int(j)] for j, v in zip(A.indices[lo:hi], A.data[lo:hi]))
            rl, ru = lp.row_lower[i], lp.row_upper[i]
            if lo == hi:
                return pyo.Constraint.Skip
            if np.isfinite(rl) and rl == ru:
                return expr == float(ru)
            return (float(rl) if np.isfinite(rl) else None, expr,
                    float(ru) if np.isfinite(ru) else None)

        model.rows = pyo.Constraint(range(m), rule=row)
        if not lp.is_mip:
            model.dual = pyo.Suffix(direction=pyo.Suffix.IMPORT)
        opt = pyo.SolverFactory(self.solver)
        if time_limit is not None:
            opt.config.time_limit = float(time_limit)
        if mip_gap is not None:
            opt.config.mip_gap = float(mip_gap)
        res = opt.solve(model, load_solutions=False)
        tc = res.solver.termination_condition
        raw = str(tc)
        status = self.canonical_status(raw)
        if status in LIMITED and not (lp.is_mip and len(res.solution) > 0):
            status = SolveStatus.ERROR
        if status not in (SolveStatus.OPTIMAL, *LIMITED):
            return LPSolution(status, None, float("nan"), seconds=time.perf_counter() - t0,
                              raw_status=raw, backend=self.name)
        model.solutions.load_from(res)
        x = _values(model.x, lp, integ)
        row_duals = col_duals = None
        bound = float("nan")
        if not lp.is_mip:
            row_duals = np.array(
                [model.dual.get(model.rows[i], 0.0) if i in model.rows else 0.0 for i in range(m)],
                dtype=float,
            )
            col_duals = lp.c - lp.A.T @ row_duals
        else:
            bound = float(res.problem.lower_bound)
        return LPSolution(status, x, float(lp.c @ x) + lp.offset, row_duals, col_duals, 0,
                          time.perf_counter() - t0, bound, raw, self.name)


def _values(var: Any, lp: LinearProgram, integ: np.ndarray) -> np.ndarray:
    """The solution's column values. A column in no row and not in the objective never reaches
    the solver, so Pyomo leaves it without a value: any point of its bounds is optimal, and it
    gets the one nearest 0 (an integer one for an integer column)."""
    n = lp.shape[1]
    x = np.array([var[j].value for j in range(n)], dtype=float)  # None -> nan
    unset = np.isnan(x)
    if unset.any():
        lo = np.where(integ, np.ceil(lp.col_lower), lp.col_lower)
        hi = np.where(integ, np.floor(lp.col_upper), lp.col_upper)
        x[unset] = np.clip(0.0, lo, hi)[unset]
    return x
