"""HiGHS backend (highspy): LP and MILP with duals. The default for linear programs."""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from .._validation import as_bool, as_option
from .base import LIMITED, USABLE, Backend, LinearProgram, LPBasis, LPSolution, SolveStatus

__all__ = ["HighsBackend", "new_highs", "simplex_iteration_limit"]

_INF = 1e30  # anything at or beyond this is infinite to HiGHS (kHighsInf)
#: ACCURACY: HiGHS' interior point tolerances when it stops without crossover (defaults: 1e-8
#: relative gap, 1e-7 feasibility), so that its point is about as accurate as a basic
#: solution's; a few more interior-point iterations, far cheaper than crossover
_IPM_ONLY_GAP = 1e-10
_IPM_ONLY_FEAS = 1e-9
_BANNER_LOCK = threading.Lock()
_BANNER_DONE = False
#: PERFORMANCE: LPs with at most this many nonzeros are solved on one HiGHS instance per thread,
#: reused (options reset, model replaced): a new instance and its first run cost about 0.1 ms
#: more than a reused one (measured on a 23 x 31 master LP: 0.30 vs 0.20 ms CPU per solve), a
#: tenth of a warm 100-job scheduling round (issue #16). Larger models get a fresh instance so
#: that none stays in memory after its solve.
_REUSE_MAX_NNZ = 20_000
_LOCAL = threading.local()
#: ACCURACY (reproducibility): threads HiGHS runs on unless the caller asks for more. HiGHS'
#: automatic count follows the machine's cores, and its MIP search (sub-MIPs, heuristics) is
#: deterministic only for a fixed count, so an unset count would make a MILP's answer depend on
#: the machine. HiGHS starts one process-wide thread scheduler with the count of its first run
#: and refuses to run ("Not Set") when a later run asks for another count, fairalloc's or not;
#: `_run` restarts it then (one rule for a count changed by fairalloc or by another caller).
DEFAULT_THREADS = 1
#: PERFORMANCE (a work limit, so that every LP solve returns): HiGHS' simplex on an LP of
#: ``m`` rows and ``n`` columns stops after ``max(_SIMPLEX_MIN_ITERATIONS,
#: _SIMPLEX_ITERATIONS_PER_SIZE * (m + n))`` iterations (primal, dual and the clean-up
#: after crossover together). A simplex that needs more is cycling: a badly scaled level LP of
#: a 20-job water-filling (coefficients 3e-8..30) reached its optimum in 56 dual simplex
#: iterations, then HiGHS' clean-up of a 2e-7 primal infeasibility ran for millions of
#: iterations without end (fuzz seed 2727). Hitting the limit is a failed solve (status
#: ``iteration_limit``, no point unless a feasible one exists; the certificate judges any
#: point), so the stage plan hands over to its next exact strategy. MILPs keep HiGHS' default
#: (their work is bounded by ``node_limit``). Counted in iterations, never in time: an answer
#: must not depend on the machine's load.
_SIMPLEX_ITERATIONS_PER_SIZE = 50
_SIMPLEX_MIN_ITERATIONS = 10_000
_SCHEDULER_LOCK = threading.Lock()


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


#: HiGHS' codes in its flat-array ``passModel``: row-wise matrix, minimisation, and the
#: integrality of a column (``HighsVarType``)
_ROWWISE = 2
_MINIMIZE = 1
_CONTINUOUS = 0
_INTEGER = 1


def _as_float(v: np.ndarray) -> np.ndarray:
    """``v`` as a contiguous float array (no copy when it is one: HiGHS copies the model)."""
    return np.ascontiguousarray(v, dtype=float)


class HighsBackend(Backend):
    """HiGHS through highspy, fed the constraint matrix directly (row-wise, as the CSR matrix
    of the `LinearProgram`; HiGHS transposes it in C++).

    Solve options (of `fairalloc.backends.Backend.solve_lp`):
    ``time_limit``, ``node_limit`` (HiGHS' ``mip_max_nodes``) and ``mip_gap`` for MILPs.
    Runs on `DEFAULT_THREADS` thread unless ``threads`` is given (HiGHS' own default follows
    the machine's cores, and its MIP answers depend on the thread count). Every LP solve's
    simplex stops after `simplex_iteration_limit` iterations (a cycling simplex then fails
    with status ``iteration_limit``; no time limit unless the caller gives one).

    Parameters
    ----------
    solver : {"choose", "simplex", "ipm", "pdlp"}, default "choose"
        HiGHS' LP algorithm.
    crossover : bool, default True
        Whether HiGHS' interior point ends with crossover to a basic solution (``False``: the
        interior point's own primal-dual pair, much faster on large degenerate LPs;
        fairalloc's certificates decide whether it is accurate enough). Read only with
        ``solver="ipm"``.
    presolve : bool, default True
        Whether HiGHS presolves an LP (``False`` suits small, well-formed LPs such as the
        structured solvers' restricted masters: presolve finds nothing to remove there and
        costs about a third of the solve). MILPs are always presolved.

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
    capabilities: ClassVar[frozenset[str]] = frozenset({"lp", "milp", "duals", "cvxpy", "basis"})
    options: ClassVar[frozenset[str]] = frozenset(
        {"time_limit", "mip_gap", "threads", "start", "verbose", "node_limit"})
    #: HiGHS model statuses (``modelStatusToString``) -> canonical; a run stopped by its time
    #: limit or interrupted is TIME_LIMIT, one stopped by a work limit (iterations; HiGHS
    #: reports ``mip_max_nodes`` as a solution limit) ITERATION_LIMIT: usable only when a
    #: feasible point exists, checked at the call.
    STATUS_MAP: ClassVar[dict[str, SolveStatus]] = {
        "Optimal": SolveStatus.OPTIMAL,
        "Infeasible": SolveStatus.INFEASIBLE,
        "Primal infeasible or unbounded": SolveStatus.INFEASIBLE,
        "Unbounded": SolveStatus.UNBOUNDED,
        "Time limit reached": SolveStatus.TIME_LIMIT,
        "Iteration limit reached": SolveStatus.ITERATION_LIMIT,
        "Interrupted by user": SolveStatus.TIME_LIMIT,
        "Interrupted by HiGHS": SolveStatus.TIME_LIMIT,
        "Empty": SolveStatus.OPTIMAL,  # a model with no columns (checked at the call)
        "Solution limit reached": SolveStatus.ITERATION_LIMIT,
        "Unknown": SolveStatus.INACCURATE,
    }

    def __init__(self, solver: str = "choose", *, crossover: bool = True,
                 presolve: bool = True) -> None:
        super().__init__()

        self.solver = as_option(solver, "solver", ("choose", "simplex", "ipm", "pdlp"))
        #: whether HiGHS' interior point runs crossover (only read with ``solver="ipm"``)
        self.crossover = as_bool(crossover, "crossover")
        #: whether HiGHS presolves linear programs (MILPs are always presolved)
        self.presolve = as_bool(presolve, "presolve")

    def _solve_lp(
        self,
        lp: LinearProgram,
        *,
        time_limit: float | None,
        mip_gap: float | None,
        threads: int | None,
        start: np.ndarray | None,
        verbose: bool,
        basis: LPBasis | None = None,
        keep_basis: bool = False,
        node_limit: int | None = None,
    ) -> LPSolution:
        """Solve ``lp``; ``start`` (MILPs only) is a point HiGHS takes as its first incumbent
        when it is feasible (a MIP start); ``node_limit`` (MILPs only) is HiGHS'
        ``mip_max_nodes``. With ``basis`` (checked by `solve_lp`: this
        backend's, ``lp``'s shape) the solve is HiGHS' simplex started from it (on a
        Dinkelbach sequence of level LPs the previous optimal basis usually stays optimal: 0
        to a few iterations instead of a cold solve); with ``keep_basis`` the interior point
        ends with crossover so that a basis comes back (``extra["basis"]``)."""
        t0 = time.perf_counter()
        solver = "simplex" if basis is not None else self.solver
        crossover = self.crossover or keep_basis
        h = self._session(lp, time_limit=time_limit, mip_gap=mip_gap, threads=threads,
                          verbose=verbose, solver=solver, crossover=crossover,
                          presolve=self.presolve)
        if h is None:
            return _rejected(self.name, t0)
        if node_limit is not None and lp.is_mip:
            h.setOptionValue("mip_max_nodes", int(node_limit))
        if start is not None and lp.is_mip:
            import highspy

            n = lp.shape[1]
            value = np.asarray(start, dtype=np.float64).ravel()
            try:
                h.setSolution(n, np.arange(n, dtype=np.int32), value)
            except TypeError:  # highspy < 1.8 takes only a whole HighsSolution
                start_point = highspy.HighsSolution()
                start_point.col_value = value.tolist()
                h.setSolution(start_point)
        if basis is not None:
            h.setBasis(basis.raw)
        _run(h)
        sol = self._collect(h, lp, t0)
        if keep_basis or basis is not None:
            sol.extra["warm"] = basis is not None
        if keep_basis:
            raw = h.getBasis()
            if raw.valid and sol.usable:
                sol.extra["basis"] = LPBasis(lp.shape, raw, self.name, _extend_basis,
                                             _carry_basis)
        return sol

    def _status_basis(self, shape: tuple[int, int], col_status: np.ndarray,
                      row_status: np.ndarray) -> LPBasis | None:
        """A HiGHS basis from fairalloc's status codes (`fairalloc.backends.base.LOWER`, ...)."""
        import highspy

        st = highspy.HighsBasisStatus
        table = np.array([st.kLower, st.kBasic, st.kUpper], dtype=object)
        raw = highspy.HighsBasis()
        raw.valid = True
        raw.col_status = table[col_status].tolist()
        raw.row_status = table[row_status].tolist()
        return LPBasis(tuple(shape), raw, self.name, _extend_basis, _carry_basis)

    def _session(self, lp: LinearProgram, *, time_limit: float | None, mip_gap: float | None,
                 threads: int | None, verbose: bool, solver: str, crossover: bool,
                 presolve: bool = True) -> Any:
        """A HiGHS instance holding ``lp`` with the options set (``None``: HiGHS refused the
        model, e.g. coefficients beyond its infinity)."""
        import highspy

        h = _instance(verbose=verbose, reuse=not lp.is_mip and lp.A.nnz <= _REUSE_MAX_NNZ)
        count = DEFAULT_THREADS if threads is None else int(threads)
        h.setOptionValue("threads", count)
        if time_limit is not None:
            h.setOptionValue("time_limit", float(time_limit))
        if mip_gap is not None:
            h.setOptionValue("mip_rel_gap", float(mip_gap))
        m, n = lp.shape
        if not lp.is_mip:
            h.setOptionValue("simplex_iteration_limit", simplex_iteration_limit(m, n))
        if not lp.is_mip and not presolve:
            h.setOptionValue("presolve", "off")
        if not lp.is_mip and solver != "choose":
            h.setOptionValue("solver", solver)
            if solver == "ipm" and not crossover:
                h.setOptionValue("run_crossover", "off")
                h.setOptionValue("ipm_optimality_tolerance", _IPM_ONLY_GAP)
                h.setOptionValue("primal_feasibility_tolerance", _IPM_ONLY_FEAS)
                h.setOptionValue("dual_feasibility_tolerance", _IPM_ONLY_FEAS)
        # row-wise: the LP's own CSR arrays (no transpose in Python); HiGHS needs them without
        # duplicates, which a CSR matrix in canonical format guarantees
        A = lp.A if isinstance(lp.A, sp.csr_matrix) else sp.csr_matrix(lp.A)
        if not A.has_canonical_format:
            A = A.copy()
            A.sum_duplicates()
        # the model passed as flat arrays (HiGHS' C-style overload): building a HighsLp
        # property by property cost 33 us of a 56 us master LP of a 100-job round (5 us here)
        integrality = (np.zeros(n, dtype=np.int32) if lp.integrality is None
                       else np.where(lp.integrality, _INTEGER, _CONTINUOUS).astype(np.int32))
        status = h.passModel(n, m, int(A.nnz), _ROWWISE, _MINIMIZE, float(lp.offset),
                             np.ascontiguousarray(lp.c, dtype=float),
                             _as_float(lp.col_lower), _as_float(lp.col_upper),
                             _as_float(lp.row_lower), _as_float(lp.row_upper),
                             np.ascontiguousarray(A.indptr, dtype=np.int32),
                             np.ascontiguousarray(A.indices, dtype=np.int32),
                             np.ascontiguousarray(A.data, dtype=float), integrality)
        if status == highspy.HighsStatus.kError:
            return None
        return h

    def _collect(self, h: Any, lp: LinearProgram, t0: float) -> LPSolution:
        """The `LPSolution` of the HiGHS instance ``h`` after its run on ``lp``."""
        n = lp.shape[1]
        ms = h.getModelStatus()
        raw = h.modelStatusToString(ms)
        info = h.getInfo()
        iters = int(max(info.simplex_iteration_count, 0) + max(info.ipm_iteration_count, 0))
        has_sol = info.primal_solution_status == 2  # kSolutionStatusFeasible
        status = self.canonical_status(raw)
        if raw == "Empty" and n > 0:
            status = SolveStatus.ERROR
        if status in LIMITED + (SolveStatus.INACCURATE,) and not has_sol:
            status = SolveStatus.ERROR
        if status in USABLE:
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


def simplex_iteration_limit(rows: int, cols: int) -> int:
    """The simplex iteration limit of every HiGHS LP solve of ``rows`` x ``cols``
    (`_SIMPLEX_ITERATIONS_PER_SIZE` per row and column, at least `_SIMPLEX_MIN_ITERATIONS`).

    Examples
    --------
    >>> simplex_iteration_limit(10, 20), simplex_iteration_limit(1000, 3000)
    (10000, 200000)
    """
    return max(_SIMPLEX_MIN_ITERATIONS, _SIMPLEX_ITERATIONS_PER_SIZE * (int(rows) + int(cols)))


def _instance(*, verbose: bool, reuse: bool) -> Any:
    """A HiGHS instance with default options (output off unless ``verbose``): this thread's
    reused one when ``reuse`` (its model is replaced by the caller's ``passModel``), else a new
    one."""
    if verbose or not reuse:
        return new_highs(verbose=verbose)
    h = getattr(_LOCAL, "highs", None)
    if h is None:
        h = _LOCAL.highs = new_highs()
    else:
        h.resetOptions()
        h.setOptionValue("output_flag", False)
    return h


def _run(h: Any) -> None:
    """``h.run()``; when HiGHS refuses to start (model status ``Not Set``: its process-wide
    scheduler was started with another thread count, by a fairalloc run with other
    ``threads`` or by a run fairalloc did not make, e.g. the caller's own highspy or cvxpy's
    ``HIGHS``), the scheduler is restarted and the run repeated once (with ``h``'s count)."""
    import highspy

    status = h.run()
    if (status == highspy.HighsStatus.kError
            and h.getModelStatus() == highspy.HighsModelStatus.kNotset):
        with _SCHEDULER_LOCK:
            highspy.Highs.resetGlobalScheduler(True)
        h.run()


def _rejected(name: str, t0: float) -> LPSolution:
    """The solution of a model HiGHS refused in ``passModel``: no point."""
    return LPSolution(SolveStatus.ERROR, None, float("nan"), seconds=time.perf_counter() - t0,
                      raw_status="model rejected by passModel", backend=name)


def _extend_basis(basis: LPBasis, old: np.ndarray, new: np.ndarray) -> LPBasis:
    """`LPBasis.with_columns` for a HiGHS basis: the added columns nonbasic at their lower
    bound."""
    import highspy

    status = np.full(int(new.sum()), highspy.HighsBasisStatus.kLower, dtype=object)
    status[np.flatnonzero(old[new])] = np.asarray(basis.raw.col_status, dtype=object)
    raw = highspy.HighsBasis()
    raw.valid = True
    raw.col_status = status.tolist()
    raw.row_status = basis.raw.row_status
    return LPBasis((basis.shape[0], int(new.sum())), raw, basis.backend, basis.extend,
                   basis.carry)


def _carry_basis(basis: LPBasis, cols: np.ndarray, rows: np.ndarray, repair: bool = True
                 ) -> LPBasis | None:
    """`LPBasis.carried` for a HiGHS basis (statuses as integer codes, taken by index)."""
    import highspy

    st = highspy.HighsBasisStatus
    every = (st.kLower, st.kBasic, st.kUpper, st.kZero, st.kNonbasic)
    table = np.empty(max(int(v.value) for v in every) + 1, dtype=object)
    for v in every:
        table[int(v.value)] = v
    lower, basic = int(st.kLower.value), int(st.kBasic.value)

    def take(old: list[Any], at: np.ndarray, new: int) -> np.ndarray:
        codes = np.fromiter((v.value for v in old), dtype=np.int8, count=len(old))
        out = np.full(at.size, new, dtype=np.int8)
        hit = at >= 0
        out[hit] = codes[at[hit]]
        return out

    c = take(basis.raw.col_status, cols, lower)
    r = take(basis.raw.row_status, rows, basic)
    short = rows.size - int((c == basic).sum() + (r == basic).sum())
    if short and not repair:
        return None
    if short > 0:  # (variables that left were basic: slacks take their place)
        r[np.flatnonzero(r != basic)[:short]] = basic
    elif short < 0:
        c[np.flatnonzero(c == basic)[:-short]] = lower
    raw = highspy.HighsBasis()
    raw.valid = True
    raw.col_status = table[c].tolist()
    raw.row_status = table[r].tolist()
    return LPBasis((rows.size, cols.size), raw, basis.backend, basis.extend, basis.carry)
