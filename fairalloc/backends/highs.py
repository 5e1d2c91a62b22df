"""HiGHS backend (highspy): LP and MILP with duals. The default for linear programs."""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from .base import Backend, LinearProgram, LPSolution, SolveStatus

__all__ = ["HighsBackend", "new_highs"]

_INF = 1e30  # anything at or beyond this is infinite to HiGHS (kHighsInf)
#: ACCURACY: HiGHS' interior point tolerances when it stops without crossover (defaults: 1e-8
#: relative gap, 1e-7 feasibility), so that its point is about as accurate as a basic
#: solution's; a few more interior-point iterations, far cheaper than crossover
_IPM_ONLY_GAP = 1e-10
_IPM_ONLY_FEAS = 1e-9
_BANNER_LOCK = threading.Lock()
_BANNER_DONE = False


def new_highs(*, verbose: bool = False) -> Any:
    """A ``highspy.Highs`` instance that prints nothing unless ``verbose``.

    HiGHS prints its copyright banner on standard output when the first instance of a process is
    constructed, before any option can be set; that one construction runs with file descriptor 1
    pointed at ``/dev/null``.
    """
    import highspy

    global _BANNER_DONE
    if _BANNER_DONE or verbose:
        h = highspy.Highs()
    else:
        with _BANNER_LOCK:
            sys.stdout.flush()
            saved = os.dup(1)
            try:
                with open(os.devnull, "w") as null:
                    os.dup2(null.fileno(), 1)
                    h = highspy.Highs()
            finally:
                os.dup2(saved, 1)
                os.close(saved)
            _BANNER_DONE = True
    h.setOptionValue("output_flag", bool(verbose))
    return h


def _clip_inf(v: np.ndarray) -> np.ndarray:
    return np.clip(v, -np.inf, np.inf).astype(float)


class HighsBackend(Backend):
    """HiGHS through highspy, fed the constraint matrix directly (column-wise CSC).

    Options: ``solver`` (``"choose"``, ``"simplex"``, ``"ipm"``, ``"pdlp"``) for LPs;
    ``crossover`` (``True``: default) whether HiGHS' interior point ends with crossover to a
    basic solution (``False``: the interior point's own primal-dual pair, much faster on large
    degenerate LPs; fairalloc's certificates decide whether it is accurate enough);
    ``time_limit`` and ``mip_gap`` for MILPs. Runs single-threaded unless ``threads`` is given.

    Examples
    --------
    >>> from fairalloc.backends import LinearProgram
    >>> import numpy as np
    >>> lp = LinearProgram.build(np.array([-1.0, -1.0]), np.array([[1.0, 2.0]]), -np.inf,
    ...                          np.array([4.0]), 0.0, np.inf)
    >>> sol = HighsBackend(solver="ipm", crossover=False).solve_lp(lp)
    >>> sol.status.value, round(sol.objective, 6)
    ('optimal', -4.0)
    """

    name: ClassVar[str] = "highs"
    module: ClassVar[str] = "highspy"
    capabilities: ClassVar[frozenset[str]] = frozenset({"lp", "milp", "duals", "cvxpy"})
    options: ClassVar[frozenset[str]] = frozenset(
        {"time_limit", "mip_gap", "threads", "start", "verbose"})
    #: HiGHS model statuses (``modelStatusToString``) -> canonical; an interrupted or limited run
    #: is TIME_LIMIT (usable only when a feasible point exists, checked at the call).
    STATUS_MAP: ClassVar[dict[str, SolveStatus]] = {
        "Optimal": SolveStatus.OPTIMAL,
        "Infeasible": SolveStatus.INFEASIBLE,
        "Primal infeasible or unbounded": SolveStatus.INFEASIBLE,
        "Unbounded": SolveStatus.UNBOUNDED,
        "Time limit reached": SolveStatus.TIME_LIMIT,
        "Iteration limit reached": SolveStatus.TIME_LIMIT,
        "Interrupted by user": SolveStatus.TIME_LIMIT,
        "Interrupted by HiGHS": SolveStatus.TIME_LIMIT,
        "Empty": SolveStatus.OPTIMAL,  # a model with no columns (checked at the call)
        "Solution limit reached": SolveStatus.TIME_LIMIT,
        "Unknown": SolveStatus.INACCURATE,
    }

    def __init__(self, solver: str = "choose", *, crossover: bool = True) -> None:
        super().__init__()
        from .._validation import as_bool, as_option

        self.solver = as_option(solver, "solver", ("choose", "simplex", "ipm", "pdlp"))
        #: whether HiGHS' interior point runs crossover (only read with ``solver="ipm"``)
        self.crossover = as_bool(crossover, "crossover")

    def _solve_lp(
        self,
        lp: LinearProgram,
        *,
        time_limit: float | None,
        mip_gap: float | None,
        threads: int | None,
        start: np.ndarray | None,
        verbose: bool,
    ) -> LPSolution:
        """Solve ``lp``; ``start`` (MILPs only) is a point HiGHS takes as its first incumbent
        when it is feasible (a MIP start)."""
        import highspy

        t0 = time.perf_counter()
        h = new_highs(verbose=verbose)
        if threads is not None:
            h.setOptionValue("threads", int(threads))
        if time_limit is not None:
            h.setOptionValue("time_limit", float(time_limit))
        if mip_gap is not None:
            h.setOptionValue("mip_rel_gap", float(mip_gap))
        if not lp.is_mip and self.solver != "choose":
            h.setOptionValue("solver", self.solver)
            if self.solver == "ipm" and not self.crossover:
                h.setOptionValue("run_crossover", "off")
                h.setOptionValue("ipm_optimality_tolerance", _IPM_ONLY_GAP)
                h.setOptionValue("primal_feasibility_tolerance", _IPM_ONLY_FEAS)
                h.setOptionValue("dual_feasibility_tolerance", _IPM_ONLY_FEAS)
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
        if h.passModel(model) == highspy.HighsStatus.kError:
            # HiGHS refuses the model (e.g. coefficients beyond its infinity): no point
            return LPSolution(SolveStatus.ERROR, None, float("nan"),
                              seconds=time.perf_counter() - t0,
                              raw_status="model rejected by passModel", backend=self.name)
        if start is not None and lp.is_mip:
            value = np.asarray(start, dtype=np.float64).ravel()
            try:
                h.setSolution(n, np.arange(n, dtype=np.int32), value)
            except TypeError:  # highspy < 1.8 takes only a whole HighsSolution
                start_point = highspy.HighsSolution()
                start_point.col_value = value.tolist()
                h.setSolution(start_point)
        h.run()
        ms = h.getModelStatus()
        raw = h.modelStatusToString(ms)
        info = h.getInfo()
        iters = int(max(info.simplex_iteration_count, 0) + max(info.ipm_iteration_count, 0))
        has_sol = info.primal_solution_status == 2  # kSolutionStatusFeasible
        status = self.canonical_status(raw)
        if raw == "Empty" and n > 0:
            status = SolveStatus.ERROR
        if status in (SolveStatus.TIME_LIMIT, SolveStatus.INACCURATE) and not has_sol:
            status = SolveStatus.ERROR
        if status in (SolveStatus.OPTIMAL, SolveStatus.TIME_LIMIT, SolveStatus.INACCURATE):
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
