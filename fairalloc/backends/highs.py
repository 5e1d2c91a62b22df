"""HiGHS backend (highspy): LP and MILP with duals. The default for linear programs."""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from .._validation import as_bool, as_option, as_positive_int, as_time_limit
from ..errors import InputError
from .base import Backend, LinearProgram, LPSolution, SolveStatus, _wrap_foreign

__all__ = ["HighsBackend", "LPBasis", "new_highs"]

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


def _clip_inf(v: np.ndarray) -> np.ndarray:
    return np.clip(v, -np.inf, np.inf).astype(float)


@dataclass(frozen=True, eq=False)
class LPBasis:
    """A simplex basis HiGHS ended with (`HighsBackend.solve_warm`), for a warm start of an LP
    of the same ``shape`` (rows, columns): the status of every column and row, kept as HiGHS'
    own object (``raw``, never converted element by element). A basis says only which
    variables are basic or at which bound, so it stays meaningful when the LP's coefficients
    and bounds change (a Dinkelbach sequence) and when rows or columns are rescaled."""

    shape: tuple[int, int]
    raw: Any

    def with_columns(self, old: np.ndarray, new: np.ndarray) -> LPBasis:
        """This basis of an LP over the columns ``old`` (a boolean mask over some larger
        column set) extended to the columns ``new`` (a superset, same rows): the columns
        added are nonbasic at their lower bound, so a feasible basic point stays feasible
        and HiGHS' primal simplex goes on from it (column generation).

        Examples
        --------
        >>> import numpy as np
        >>> from fairalloc.backends import LinearProgram
        >>> lp = LinearProgram.build(np.array([-1.0]), np.array([[1.0]]), -np.inf,
        ...                          np.array([1.0]), 0.0, np.inf)
        >>> b = HighsBackend().solve_warm(lp).extra["basis"]
        >>> b.with_columns(np.array([True, False]), np.array([True, True])).shape
        (1, 2)
        """
        import highspy

        status = np.full(int(new.sum()), highspy.HighsBasisStatus.kLower, dtype=object)
        status[np.flatnonzero(old[new])] = np.asarray(self.raw.col_status, dtype=object)
        raw = highspy.HighsBasis()
        raw.valid = True
        raw.col_status = status.tolist()
        raw.row_status = self.raw.row_status
        return LPBasis((self.shape[0], int(new.sum())), raw)


class HighsBackend(Backend):
    """HiGHS through highspy, fed the constraint matrix directly (row-wise, as the CSR matrix
    of the `LinearProgram`; HiGHS transposes it in C++).

    Options: ``solver`` (``"choose"``, ``"simplex"``, ``"ipm"``, ``"pdlp"``) for LPs;
    ``crossover`` (``True``: default) whether HiGHS' interior point ends with crossover to a
    basic solution (``False``: the interior point's own primal-dual pair, much faster on large
    degenerate LPs; fairalloc's certificates decide whether it is accurate enough);
    ``presolve`` (``True``: default) whether HiGHS presolves an LP (``False`` suits small,
    well-formed LPs such as the structured solvers' restricted masters: presolve finds nothing
    to remove there and costs about a third of the solve);
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
    ) -> LPSolution:
        """Solve ``lp``; ``start`` (MILPs only) is a point HiGHS takes as its first incumbent
        when it is feasible (a MIP start)."""
        t0 = time.perf_counter()
        h = self._session(lp, time_limit=time_limit, mip_gap=mip_gap, threads=threads,
                          verbose=verbose, solver=self.solver, crossover=self.crossover,
                          presolve=self.presolve)
        if h is None:
            return _rejected(self.name, t0)
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
        h.run()
        return self._collect(h, lp, t0)

    def solve_warm(self, lp: LinearProgram, basis: LPBasis | None = None, *,
                   time_limit: float | None = None, threads: int | None = None,
                   verbose: bool = False) -> LPSolution:
        """Solve the LP ``lp`` and return the basis HiGHS ended with, for the next LP of a
        sequence with the same rows and columns (changed coefficients and bounds).

        With a ``basis`` of ``lp``'s shape the solve is HiGHS' simplex started from it (on a
        Dinkelbach sequence of level LPs the previous optimal basis usually stays optimal:
        0 to a few iterations instead of a cold solve). Without one (or with one of another
        shape: ignored) the LP is solved as `solve_lp` would, except that HiGHS' interior
        point always ends with crossover, so that a basis comes back. The solution's
        ``extra["basis"]`` is the final `LPBasis` (absent when HiGHS has no valid
        basis), ``extra["warm"]`` whether ``basis`` was used. The caller
        certifies the point as for any solve.

        Raises
        ------
        InputError
            For a mixed-integer ``lp`` or a ``basis`` that is not an ``LPBasis``;
            [`fairalloc.SolverError`][fairalloc.SolverError] if highspy raises.

        Examples
        --------
        >>> from fairalloc.backends import LinearProgram
        >>> import numpy as np
        >>> be = HighsBackend()
        >>> A = np.array([[1.0, 2.0], [3.0, 1.0]])
        >>> lp = LinearProgram.build(np.array([-1.0, -1.0]), A, -np.inf, np.array([4.0, 6.0]),
        ...                          0.0, np.inf)
        >>> first = be.solve_warm(lp)
        >>> lp2 = LinearProgram.build(np.array([-1.0, -1.0]), A, -np.inf,
        ...                           np.array([4.0, 7.0]), 0.0, np.inf)
        >>> again = be.solve_warm(lp2, first.extra["basis"])
        >>> again.extra["warm"], round(again.objective, 6)
        (True, -3.0)
        """
        if lp.is_mip:
            raise InputError("solve_warm solves linear programs only (a basis of a MILP "
                             "means nothing to its branch and bound)", argument="lp")
        if basis is not None and not isinstance(basis, LPBasis):
            raise InputError(f"basis must be an LPBasis from solve_warm, not "
                             f"{type(basis).__name__}", argument="basis")
        time_limit = as_time_limit(time_limit)
        threads = None if threads is None else as_positive_int(threads, "threads")
        verbose = as_bool(verbose, "verbose")
        use = basis is not None and basis.shape == lp.shape

        def call() -> LPSolution:
            t0 = time.perf_counter()
            h = self._session(lp, time_limit=time_limit, mip_gap=None, threads=threads,
                              verbose=verbose, solver="simplex" if use else self.solver,
                              crossover=True, presolve=self.presolve)
            if h is None:
                return _rejected(self.name, t0)
            if use:
                assert basis is not None
                h.setBasis(basis.raw)
            h.run()
            sol = self._collect(h, lp, t0)
            raw = h.getBasis()
            if raw.valid and sol.usable:
                sol.extra["basis"] = LPBasis(lp.shape, raw)
            sol.extra["warm"] = use
            return sol

        return _wrap_foreign(self.name, call)

    def _session(self, lp: LinearProgram, *, time_limit: float | None, mip_gap: float | None,
                 threads: int | None, verbose: bool, solver: str, crossover: bool,
                 presolve: bool = True) -> Any:
        """A HiGHS instance holding ``lp`` with the options set (``None``: HiGHS refused the
        model, e.g. coefficients beyond its infinity)."""
        import highspy

        h = _instance(verbose=verbose, reuse=not lp.is_mip and lp.A.nnz <= _REUSE_MAX_NNZ)
        if threads is not None:
            h.setOptionValue("threads", int(threads))
        if time_limit is not None:
            h.setOptionValue("time_limit", float(time_limit))
        if mip_gap is not None:
            h.setOptionValue("mip_rel_gap", float(mip_gap))
        if not lp.is_mip and not presolve:
            h.setOptionValue("presolve", "off")
        if not lp.is_mip and solver != "choose":
            h.setOptionValue("solver", solver)
            if solver == "ipm" and not crossover:
                h.setOptionValue("run_crossover", "off")
                h.setOptionValue("ipm_optimality_tolerance", _IPM_ONLY_GAP)
                h.setOptionValue("primal_feasibility_tolerance", _IPM_ONLY_FEAS)
                h.setOptionValue("dual_feasibility_tolerance", _IPM_ONLY_FEAS)
        m, n = lp.shape
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
                             _clip_inf(lp.col_lower), _clip_inf(lp.col_upper),
                             _clip_inf(lp.row_lower), _clip_inf(lp.row_upper),
                             A.indptr.astype(np.int32), A.indices.astype(np.int32),
                             A.data.astype(float), integrality)
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


def _rejected(name: str, t0: float) -> LPSolution:
    """The solution of a model HiGHS refused in ``passModel``: no point."""
    return LPSolution(SolveStatus.ERROR, None, float("nan"), seconds=time.perf_counter() - t0,
                      raw_status="model rejected by passModel", backend=name)
