"""HiGHS backend (highspy): LP and MILP with duals. The default for linear programs."""

from __future__ import annotations

import time
from typing import ClassVar

import numpy as np
import scipy.sparse as sp

from .base import Backend, LinearProgram, LPSolution

__all__ = ["HighsBackend"]

_INF = 1e30  # anything at or beyond this is infinite to HiGHS (kHighsInf)


def _clip_inf(v: np.ndarray) -> np.ndarray:
    return np.clip(v, -np.inf, np.inf).astype(float)


class HighsBackend(Backend):
    """HiGHS through highspy, fed the constraint matrix directly (column-wise CSC).

    Options: ``solver`` (``"choose"``, ``"simplex"``, ``"ipm"``, ``"pdlp"``) for LPs;
    ``time_limit`` and ``mip_gap`` for MILPs. Runs single-threaded unless ``threads`` is given.
    """

    name: ClassVar[str] = "highs"
    module: ClassVar[str] = "highspy"
    capabilities: ClassVar[frozenset[str]] = frozenset({"lp", "milp", "duals", "cvxpy"})
    cvxpy_solver: ClassVar[str | None] = "HIGHS"

    def __init__(self, solver: str = "choose") -> None:
        super().__init__()
        self.solver = solver

    def solve_lp(
        self,
        lp: LinearProgram,
        *,
        time_limit: float | None = None,
        mip_gap: float | None = None,
        threads: int | None = None,
        start: np.ndarray | None = None,
    ) -> LPSolution:
        """Solve ``lp``; ``start`` (MILPs only) is a point HiGHS takes as its first incumbent
        when it is feasible (a MIP start)."""
        import highspy

        t0 = time.perf_counter()
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        if threads is not None:
            h.setOptionValue("threads", int(threads))
        if time_limit is not None:
            h.setOptionValue("time_limit", float(time_limit))
        if mip_gap is not None:
            h.setOptionValue("mip_rel_gap", float(mip_gap))
        if not lp.is_mip and self.solver != "choose":
            h.setOptionValue("solver", self.solver)
        m, n = lp.shape
        model = highspy.HighsLp()
        model.num_col_ = n
        model.num_row_ = m
        model.col_cost_ = lp.c
        model.offset_ = lp.offset
        model.col_lower_ = _clip_inf(lp.col_lower)
        model.col_upper_ = _clip_inf(lp.col_upper)
        model.row_lower_ = _clip_inf(lp.row_lower)
        model.row_upper_ = _clip_inf(lp.row_upper)
        A = sp.csc_matrix(lp.A)
        A.sort_indices()
        model.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        model.a_matrix_.num_col_ = n
        model.a_matrix_.num_row_ = m
        model.a_matrix_.start_ = A.indptr.astype(np.int32)
        model.a_matrix_.index_ = A.indices.astype(np.int32)
        model.a_matrix_.value_ = A.data.astype(float)
        if lp.is_mip:
            assert lp.integrality is not None
            model.integrality_ = [
                highspy.HighsVarType.kInteger if flag else highspy.HighsVarType.kContinuous
                for flag in lp.integrality
            ]
        h.passModel(model)
        if start is not None and lp.is_mip:
            value = np.asarray(start, dtype=np.float64).ravel()
            h.setSolution(n, np.arange(n, dtype=np.int32), value)
        h.run()
        ms = h.getModelStatus()
        raw = h.modelStatusToString(ms)
        info = h.getInfo()
        iters = int(max(info.simplex_iteration_count, 0) + max(info.ipm_iteration_count, 0))
        S = highspy.HighsModelStatus
        has_sol = info.primal_solution_status == 2  # kSolutionStatusFeasible
        if ms == S.kOptimal:
            status = "optimal"
        elif ms in (S.kTimeLimit, S.kIterationLimit, S.kInterrupt) and lp.is_mip and has_sol:
            status = "time_limit"
        elif ms == S.kInfeasible:
            status = "infeasible"
        elif ms in (S.kUnbounded, S.kUnboundedOrInfeasible):
            status = "unbounded" if ms == S.kUnbounded else "infeasible"
        else:
            status = "error"
        if status in ("optimal", "time_limit"):
            sol = h.getSolution()
            x: np.ndarray | None = np.asarray(sol.col_value, dtype=float)
            row_duals = col_duals = None
            if not lp.is_mip and sol.dual_valid:
                row_duals = np.asarray(sol.row_dual, dtype=float)
                col_duals = np.asarray(sol.col_dual, dtype=float)
            bound = float(info.mip_dual_bound) if lp.is_mip else float("nan")
            obj = float(info.objective_function_value)
        else:
            x = row_duals = col_duals = None
            bound, obj = float("nan"), float("nan")
        return LPSolution(
            status=status,
            x=x,
            objective=obj,
            row_duals=row_duals,
            col_duals=col_duals,
            iterations=iters if not lp.is_mip else int(max(info.mip_node_count, 0)),
            seconds=time.perf_counter() - t0,
            mip_dual_bound=bound,
            raw_status=raw,
            backend=self.name,
        )
