"""The lexicographic stage LPs of the effective-throughput policies, with a named row layout.

Shared by every policy of `fairalloc.throughput` (and water-filling, space
sharing): a *stage* is one LP over ``[x, theta]`` on the columns of a
`ColumnInstance` (`LevelStage`: ``max theta``
s.t. ``C x - b theta >= h``; `LinearStage`: ``max g @ x``); `StageSolver`
solves stages in sequence, fixing each optimum (to ``stage_tol``) before the next, and
certifies each with `fairalloc.certificates.lp_certificate`. Every stage program carries
its `RowLayout` (`StageResult.rows`), so prices and
job duals are read by block name (``capacity``, ``time``, ``level``), never by offset.
`StageSolver` also records the named steps that ran and every hand-over to the exact
LP (`StageSolver.path`, `StageSolver.fallbacks`: ``SolveStats.path`` and
``SolveStats.fallbacks``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._sparse import abs_matvec, matvec, stack_rows
from .._sparse import csr as fast_csr
from ..backends import Backend, LinearProgram, LPBasis, LPSolution, get_backend
from ..certificates import lp_certificate
from ..errors import InfeasibleError, SolverError, UnboundedError
from ..plan import INFEASIBLE_VOTES, Strategy, run_plan
from ..results import Certificate
from ..solvelog import SolveLog, SolveStatus
from .instance import ColumnInstance
from .programs import LevelStage, LinearStage, StageResult, _row_absmax, pow2
from .rows import RowLayout
from .strategies import EXACT_LP, StageContext, stage_plan
from .tuning import DEFAULT_TUNING, Tuning

__all__ = ["EXACT_LP", "ROUND_BASES", "StageSolver", "backend_for", "capacity_prices",
           "exact_backend_for", "scaled_solve", "top_up_rows"]

#: the previous round's stage bases (`fairalloc.rounds.state.RoundBases`), set by
#: `fairalloc.RoundPolicy` around a policy's solve (``None``: no round in progress); the
#: policy hands it to its stage solver (`StageSolver.bases`)
ROUND_BASES: ContextVar[Any] = ContextVar("fairalloc_round_bases", default=None)

#: ACCURACY: relative margin by which a kept row is pulled towards the anchor beyond the
#: computed step (rounding of the convex combination)
_ANCHOR_MARGIN = 1e-12
#: ACCURACY: a kept row short by more than this fraction of feas_tol (relative to its
#: magnitude, as the certificate measures it) is moved towards the anchor: half, so the
#: certificate keeps a margin of 2, while a row left short by a solver's tolerance-sized
#: excess (a column at -2e-8, scaled off its job's full time) is not (at 0.1 the move
#: towards the anchor undid most of min_makespan's work-conserving gain: gap 0.53, mkwc39)
_ANCHOR_SHORT = 0.5
#: ACCURACY: relative shortfall of a row below which top_up_rows leaves it (rounding of the
#: solver's point, far inside the certificate's feas_tol)
_TOP_UP_SHORT = 1e-9
#: ACCURACY: a reduced cost or dual below this fraction of a stage's largest ``|c|`` or
#: ``|A^T y|`` is rounding: `StageSolver.keep_face` never holds a column or tightens a row by it
FACE_NOISE = 1e-12
#: weight of a column that does not fit a type's spare room in top_up_rows' ordering (such
#: columns come last; not a tolerance)
_NO_FIT_WEIGHT = 1e-300


# --------------------------------------------------------------------------------------------
# stages: each is one LP over [x (E columns), theta]
# --------------------------------------------------------------------------------------------
def _with_last_column(C: sp.csr_matrix, rows: np.ndarray, values: np.ndarray,
                      col: int) -> sp.csr_matrix:
    """``C`` with ``values`` added at ``(rows, col)``, ``col`` beyond every column of ``C``
    (a level row's ``-b theta``; ``rows`` sorted, without repeats): each entry goes at the
    end of its row, so sorted rows stay sorted."""
    C = C if isinstance(C, sp.csr_matrix) else sp.csr_matrix(C)
    if not C.has_canonical_format:  # sorted rows without duplicates (a copy: C is shared)
        C = C.copy()
        C.sum_duplicates()
    rows = np.asarray(rows, dtype=np.int64)
    nnz = int(C.indptr[-1])
    # (np.insert's work without its dispatch) the k-th new entry ends row rows[k]: it lands
    # after the row's own entries and the k entries added to the rows before it
    at = C.indptr[1:][rows] + np.arange(rows.size)
    old = np.ones(nnz + rows.size, dtype=bool)
    old[at] = False
    data = np.empty(nnz + rows.size)
    data[old] = C.data[:nnz]
    data[at] = values
    indices = np.empty(nnz + rows.size, dtype=C.indices.dtype)
    indices[old] = C.indices[:nnz]
    indices[at] = col
    count = np.zeros(C.shape[0] + 1, dtype=C.indptr.dtype)
    count[rows + 1] = 1
    return fast_csr(data, indices, C.indptr + np.cumsum(count, dtype=count.dtype),
                    (C.shape[0], col + 1))


def _scaled_rows(C: sp.csr_matrix, factor: float) -> sp.csr_matrix:
    """``factor * C`` on ``C``'s own index arrays (as ``sp.csr_matrix(C * factor)`` gives it,
    without scipy's copies and checks)."""
    C = C if isinstance(C, sp.csr_matrix) else sp.csr_matrix(C)
    return fast_csr(C.data * factor, C.indices, C.indptr, C.shape)


def _level_at_zero(stage: LevelStage, lo: np.ndarray, up: np.ndarray) -> float:
    """A lower bound on a level stage's optimum to put on ``theta``'s column: the level of
    the allocation ``x = 0`` when it meets every other row (``lo``, ``up``: the bounds of the
    base, policy and kept rows, which need ``lo <= 0 <= up``; level rows with ``b = 0``:
    ``h <= 0``), else ``-inf`` (``theta`` free).

    The bound leaves the optimum and the certificate's meaning unchanged (the optimum is at
    least the level of any feasible allocation), but HiGHS' interior point handles a free
    ``theta`` by splitting it: the whole max-min LP of 4,096 jobs x 30 types took 4.7 s free,
    3.2 s bounded (45 / 43 iterations, the same optimum)."""
    pos = stage.b > 0
    if (not pos.any() or np.any(lo > 0.0) or np.any(up < 0.0)
            or np.any(stage.h[~pos] > 0.0)):
        return -np.inf
    return float(np.min(-stage.h[pos] / stage.b[pos]))


_ROW_BAND = 10  # rows whose largest coefficient is within 2**+-10 of 1 are left as given


def _row_units(A: sp.spmatrix, band: int = _ROW_BAND) -> np.ndarray:
    """Per-row powers of two nearest each row's largest coefficient, for rows outside
    ``2**+-band`` (the solver's own scaling handles the rest; no copy of a large LP is
    made for data already near unit scale)."""
    rm = _row_absmax(A)
    out = np.ones(rm.size)
    far = (rm > 0) & ((rm > 2.0 ** band) | (rm < 2.0 ** -band))
    if far.any():
        m, e = np.frexp(rm[far])
        e = e - (m < np.sqrt(0.5))
        out[far] = np.ldexp(1.0, e)
    return out


def scaled_solve(lp: LinearProgram, backend: Backend, what: str, *,
                  col_unit: np.ndarray | None = None, obj_unit: float | None = None,
                  basis: LPBasis | None = None, keep_basis: bool = False,
                  row_band: int = _ROW_BAND) -> LPSolution:
    """Solve ``lp`` through a unit-scale copy and map the answer back (exactly).

    Columns are ``x = col_unit * x'``; every row is divided by the power of two nearest its
    largest coefficient (after the column scaling); the objective is divided by ``obj_unit``
    (default: the power of two nearest its largest coefficient). All factors are powers of
    two, so the copy is the same program and its solution maps back without rounding:
    ``x = D_c x'``, row duals ``y = obj_unit D_r y'``. The certificate is then computed on
    the caller's ``lp`` by the caller. Data already within ``2**+-4`` of unit scale are left
    as given (rows within ``2**+-row_band``; ``row_band=0`` scales every row).

    ``basis`` / ``keep_basis`` (a backend with the ``basis`` capability): start the simplex
    from ``basis``; return the final basis in ``extra["basis"]`` (a basis names basic
    variables only, so the scaling does not change it).

    Raises
    ------
    InfeasibleError, UnboundedError
        When the backend proved it.
    SolverError
        When no usable point (with duals) came back.
    """
    A = lp.A if isinstance(lp.A, sp.csr_matrix) else sp.csr_matrix(lp.A)
    c = lp.c
    cl, cu = lp.col_lower, lp.col_upper
    # scaled copies share the sparsity structure (only the values are copied)
    if col_unit is not None and (col_unit != 1.0).any():
        A = fast_csr(A.data * col_unit[A.indices], A.indices, A.indptr, A.shape)
        c = c * col_unit
        cl, cu = cl / col_unit, cu / col_unit
    r = _row_units(A, row_band)
    rows_scaled = bool((r != 1.0).any())
    if rows_scaled:
        per_entry = np.repeat(1.0 / r, np.diff(A.indptr))
        A = fast_csr(A.data * per_entry, A.indices, A.indptr, A.shape)
    if obj_unit is None:
        obj_unit = pow2(float(np.max(np.abs(c), initial=0.0)))
    if not rows_scaled and obj_unit == 1.0 and (col_unit is None or (col_unit == 1.0).all()):
        return _solve(lp, backend, what, basis, keep_basis)
    slp = LinearProgram(c=c / obj_unit, A=A, row_lower=lp.row_lower / r,
                        row_upper=lp.row_upper / r, col_lower=cl, col_upper=cu,
                        integrality=lp.integrality, offset=lp.offset / obj_unit)
    sol = _solve(slp, backend, what, basis, keep_basis)
    x = sol.x if col_unit is None else sol.x * col_unit  # type: ignore[operator]
    y = sol.row_duals * (obj_unit / r)  # type: ignore[operator]
    # a column far from unit scale (min cost's hopeless type: unit 2**-996) may have a reduced
    # cost beyond floats in the caller's units: +-inf is its value (a dual row met by far)
    with np.errstate(over="ignore"):
        col_duals = None if sol.col_duals is None else (
            sol.col_duals * obj_unit / (1.0 if col_unit is None else col_unit))
    return dataclasses.replace(sol, x=x, row_duals=y, objective=sol.objective * obj_unit,
                               col_duals=col_duals)


def backend_for(backend: Any, E: int, tuning: Tuning = DEFAULT_TUNING) -> Backend:
    """The backend of a stage solver: ``"highs"`` (fairalloc chooses) is HiGHS' interior point
    (with crossover) above ``tuning.ipm_min_columns`` columns, HiGHS' own choice below
    (presolved from ``tuning.presolve_min_columns`` columns); a backend instance or another
    name is used as given.

    Examples
    --------
    >>> backend_for("highs", 10).solver, backend_for("highs", 10**5).solver
    ('choose', 'ipm')
    >>> backend_for("highs", 10).presolve, backend_for("highs", 10**5).presolve
    (False, True)
    """
    if isinstance(backend, Backend):
        return get_backend(backend, need="lp")
    if backend == "highs":
        if E > tuning.ipm_min_columns:
            return get_backend("highs", need="lp", solver="ipm")
        return get_backend("highs", need="lp", solver="choose",
                           presolve=E >= tuning.presolve_min_columns)
    return get_backend(backend, need="lp")


def exact_backend_for(backend: Backend, spec: Any, *, linear: bool = False) -> Backend:
    """The backend of a whole stage LP (`StageSolver.run`) where fairalloc chose HiGHS'
    interior point (``spec == "highs"``, a large LP): for a level stage the interior point
    without crossover, for a linear stage (work-conserving: the earlier optima kept) HiGHS'
    dual simplex; otherwise ``backend`` itself.

    Measured (2 cores, HiGHS 1.16, same run per shape). Level stages: 16,384 jobs, one
    dominant type: interior point 3.1 s + crossover 8.5 s, simplex 25 s; 4,096 x 30 types:
    interior point 6.7 s, simplex 53 s. Work-conserving stages (the level kept): 16,384 jobs,
    one dominant type: simplex 4.0 s, interior point with crossover 7.5 s; 4,096 x 30: simplex
    3.1 s, interior point 6.9 s (6.3 s without crossover); 4,096 x 100: simplex 10.8 s,
    interior point with crossover 52 s. Every point is certified (`lp_certificate`), and
    `StageSolver.run` solves again with ``backend`` when it does not certify.

    Examples
    --------
    >>> ipm = backend_for("highs", 10**5)
    >>> exact_backend_for(ipm, "highs").crossover
    False
    >>> exact_backend_for(ipm, "highs", linear=True).solver
    'simplex'
    """
    if (spec == "highs" and getattr(backend, "solver", None) == "ipm"
            and getattr(backend, "crossover", False)):
        if linear:
            return get_backend("highs", need="lp", solver="simplex")
        return get_backend("highs", need="lp", solver="ipm", crossover=False)
    return backend


def _solve(lp: LinearProgram, backend: Backend, what: str, basis: LPBasis | None = None,
           keep_basis: bool = False) -> LPSolution:
    sol = backend.solve_lp(lp, basis=basis, keep_basis=keep_basis)
    if sol.status == SolveStatus.INFEASIBLE:
        raise InfeasibleError(f"the {what} program is infeasible ({backend.name}: "
                              f"{sol.raw_status})", backend=backend.name,
                              raw_status=sol.raw_status)
    if sol.status == SolveStatus.UNBOUNDED:
        raise UnboundedError(f"the {what} program is unbounded ({backend.name}: "
                             f"{sol.raw_status})", backend=backend.name,
                             raw_status=sol.raw_status)
    # one acceptance rule: a usable point (with duals) goes to the caller's certificate
    if not sol.usable or sol.x is None or sol.row_duals is None:
        status = sol.status if sol.status != SolveStatus.OPTIMAL else SolveStatus.ERROR
        raise SolverError(f"{backend.name} failed on the {what} program: {sol.raw_status}",
                          backend=backend.name, status=status, raw_status=sol.raw_status)
    return sol


class StageSolver:
    """Solves a sequence of stages, fixing each optimum before the next (lexicographic)."""

    def __init__(self, inst: ColumnInstance, backend: Backend, *, stage_tol: float,
                 gap_tol: float, feas_tol: float, extra_rows: tuple | None = None,
                 backend_spec: Any = None,
                 meet_extra_rows: Callable[[np.ndarray], np.ndarray] | None = None,
                 tuning: Tuning = DEFAULT_TUNING, log: SolveLog | None = None) -> None:
        self.inst = inst
        #: the performance knobs of the stage plans (`fairalloc.throughput.Tuning`)
        self.tuning = tuning
        #: the call's solve log (steps, hand-overs, backend solves: ``SolveStats``)
        self.log = SolveLog() if log is None else log
        #: the policy's own repair of a point that leaves its extra rows short within the
        #: solver's absolute tolerance (min cost: SLO rows topped up, see top_up_rows)
        self.meet_extra_rows = meet_extra_rows
        self.backend = backend
        #: the backend of whole stage LPs (`run`): HiGHS' interior point without crossover
        #: where fairalloc chose the interior point (`exact_backend_for`), else ``backend``
        self.exact_backend = exact_backend_for(backend, backend_spec)
        #: the backend of whole linear (work-conserving) stage LPs: HiGHS' simplex where
        #: fairalloc chose the interior point (`exact_backend_for`), else ``backend``
        self.exact_linear_backend = exact_backend_for(backend, backend_spec, linear=True)
        #: what the caller passed as ``backend=`` (``"highs"``: fairalloc may pick HiGHS'
        #: simplex or interior point per sub-problem; an instance or other name: used as is)
        self.backend_spec = backend_spec
        self.stage_tol = stage_tol
        self.gap_tol = gap_tol
        self.feas_tol = feas_tol
        A, lo, up, layout = inst.base_rows()
        if extra_rows is not None:  # policy rows every stage keeps: B x >= lower
            B, lower = extra_rows
            A = sp.vstack([A, B], format="csr")
            lo = np.concatenate([lo, lower])
            up = np.concatenate([up, np.full(lower.size, np.inf)])
            layout = layout.extended("policy", lower.size)
        #: the rows every stage program starts with (time, capacity, ... and policy rows)
        self.A, self.lo, self.up, self.base_layout = A, lo, up, layout
        #: the kept rows ``B x >= low`` of earlier stages' optima (`fix`): the sequence
        self.fixed: list[tuple[sp.csr_matrix, np.ndarray]] = []
        #: the kept blocks of `fixed` that are a level stage's rows, one per job in job order
        #: (`fix`): a linear stage tops them up (`top_up_kept`); held by identity, so a block
        #: a caller put in `fixed` itself is never taken for one
        self.kept_level: list[sp.csr_matrix] = []
        #: columns held at given values in every stage program (``(columns, values)``:
        #: ``col_lower = col_upper = value``; ``None``: none). Where earlier stages' optima
        #: are unique it keeps them exactly, without a kept row whose right-hand side may be
        #: far below its coefficients (FIFO's forced jobs, `fairalloc.throughput.ordering`)
        self.fixed_columns: tuple[np.ndarray, np.ndarray] | None = None
        #: whether a structured solve started from a caller's warm start (stats: "+warm")
        self.warm_used = False
        #: set by a caller that solves a sequence of level stages with the same rows and
        #: columns (finish-time fairness' Dinkelbach sequence, water-filling's levels): where
        #: fairalloc chose HiGHS, each level LP keeps its basis and the next starts from it
        #: (strategy ``exact-lp+warm``, `fairalloc.throughput.strategies`)
        self.warm_levels = False
        #: the basis of the last level LP solved with `warm_levels` (``None``: none yet)
        self.basis: LPBasis | None = None
        #: the previous round's bases of this program's stages (`ROUND_BASES`, labelled by
        #: ``program``): each stage LP starts from its stage's (strategy ``exact-lp+warm``)
        #: and its final basis is kept for the next round (``None``: no round)
        self.bases: Any = None
        #: the simplex basis of the last whole level LP (``None``: none kept), from which a
        #: whole linear (work-conserving) LP of the same shape starts (``exact-lp+from-level``)
        self.level_basis: LPBasis | None = None
        #: an allocation meeting every kept row (the last fixed stage's optimum), towards
        #: which a later stage's point is moved if the solver left a kept row violated
        self.anchor: np.ndarray | None = None
        #: the columns of the last stage solved over restricted columns (`columns`), with
        #: which the next one starts (``None``: none yet)
        self.columns_used: np.ndarray | None = None
        #: exact strategies whose infeasibility verdicts the driver needs before it believes
        #: one (`fairalloc.plan.INFEASIBLE_VOTES`); water-filling sets 1: its levels' floors
        #: are met only to the solvers' tolerance, and it answers an infeasible verdict itself
        #: by anchoring them (a tail method's point meeting them to its tolerance would let the
        #: floors drift up, amplified by duals of up to 1e8)
        self.infeasible_votes = INFEASIBLE_VOTES

    def step(self, name: str) -> None:
        """Record that the named step ran (``SolveStats.path``; `SolveLog.step`)."""
        self.log.step(name)

    def toward_anchor(self, xcol: np.ndarray) -> np.ndarray:
        """Move ``xcol`` the least distance towards `anchor` that meets every kept row.

        Solvers meet rows to an absolute tolerance; a kept row that is a difference of
        nearly equal terms (a ratio kept at its optimum) can then be violated by more than
        ``feas_tol`` relative to its magnitude. The anchor meets every kept row and every
        base row, so the convex combination does too."""
        if self.anchor is None or not self.fixed:
            return xcol
        t = 0.0
        for B, low in self.fixed:
            # (scipy's kernels directly: `abs(B)` built a checked copy of B on every call)
            bx = matvec(B, xcol)
            mag = np.maximum(np.abs(low), abs_matvec(B, xcol))
            short = (low - bx) > _ANCHOR_SHORT * self.feas_tol * mag  # what a certificate would see
            if short.any():
                ba = matvec(B, self.anchor)
                gain = ba[short] - bx[short]
                need = np.where(gain > 0, (low[short] - bx[short]) / np.where(gain > 0, gain,
                                                                              1.0), 1.0)
                t = max(t, float(need.max()))
        if t <= 0.0:
            return xcol
        t = min(1.0, t * (1.0 + _ANCHOR_MARGIN))
        return (1.0 - t) * xcol + t * self.anchor

    def used(self, sol: LPSolution, name: str | None = None) -> None:
        """Record a backend solve in the log (`SolveLog.solved`)."""
        self.log.solved(name or sol.backend or self.backend.name, sol.raw_status,
                        sol.iterations, status=sol.status)

    def layout(self, stage: LevelStage | LinearStage) -> RowLayout:
        """The named row blocks of `program` for ``stage``: the base blocks, ``kept``
        (earlier stages' optima) and, for a level stage, ``level``."""
        layout = self.base_layout.extended("kept", sum(low.size for _, low in self.fixed))
        if isinstance(stage, LevelStage):
            layout = layout.extended("level", stage.h.size)
        return layout

    def program(self, stage: LevelStage | LinearStage) -> LinearProgram:
        """The whole LP of ``stage`` over ``[x, theta]`` (rows in `layout` order; the columns
        of `fixed_columns` held at their values)."""
        E = self.inst.E
        blocks = [self.A] + [B for B, _ in self.fixed]
        lo = [self.lo] + [low for _, low in self.fixed]
        up = [self.up] + [np.full(low.size, np.inf) for _, low in self.fixed]
        if isinstance(stage, LevelStage):
            # the level rows [C, -b] (theta's column is the last)
            nzb = np.flatnonzero(stage.b)
            blocks.append(_with_last_column(stage.C, nzb, -stage.b[nzb], E))
        A = stack_rows(blocks, E + 1)
        if isinstance(stage, LevelStage):
            lo.append(stage.h)
            up.append(np.full(stage.h.size, np.inf))
            c = np.zeros(E + 1)
            c[E] = -1.0
            col_lo = np.zeros(E + 1)
            col_lo[E] = _level_at_zero(stage, np.concatenate(lo[:-1]), np.concatenate(up[:-1]))
            col_up = np.ones(E + 1)
            col_up[E] = np.inf
        else:
            c = np.append(-stage.g, 0.0).astype(float, copy=False)
            col_lo = np.zeros(E + 1)
            col_up = np.ones(E + 1)
            col_up[E] = 0.0
        if self.fixed_columns is not None:
            cols, vals = self.fixed_columns
            col_lo[cols] = vals
            col_up[cols] = vals
        # (every array here is new and float, the matrix a float CSR one: `LinearProgram.build`
        # would only copy them again)
        return LinearProgram(c=c, A=A, row_lower=np.concatenate(lo).astype(float, copy=False),
                             row_upper=np.concatenate(up).astype(float, copy=False),
                             col_lower=col_lo, col_upper=col_up)

    def structured_worth(self) -> bool:
        """Whether the instance has enough jobs (``tuning.structured_min_jobs``) for the
        structured solvers to pay; below, the whole LP is as fast."""
        return self.inst.n >= self.tuning.structured_min_jobs

    def point(self, stage: LevelStage | LinearStage, xcol: np.ndarray) -> np.ndarray:
        """The LP vector of ``stage`` at column allocation ``xcol`` (theta recomputed)."""
        if isinstance(stage, LevelStage):
            act = stage.b > 0
            lev = (matvec(stage.C, xcol) - stage.h)[act] / stage.b[act]
            theta = float(lev.min()) if lev.size else 0.0
            return np.append(xcol, theta)
        return np.append(xcol, 0.0)

    def top_up(self, stage: LevelStage, xcol: np.ndarray, theta: float) -> np.ndarray:
        """Give jobs whose level row falls short of the solver's ``theta`` the missing time on
        their best single-job column (where time and workers are free).

        A job that needs only a tiny fraction of time (a 1e-10 share of a fast type) can be
        left at 0 by a solver whose feasibility tolerance is absolute; the certified level is
        then 0. The top-up is clipped to the job's spare time and each type's spare workers
        (scaled down together), so the allocation stays feasible; the certificate decides."""
        pos = stage.b > 0
        if not (np.isfinite(theta) and pos.any()):
            return xcol
        need = np.where(pos, stage.h + stage.b * theta - stage.C @ xcol, 0.0)
        scale = np.abs(stage.h) + stage.b * abs(theta)
        # without kept rows a full type may give up to a quarter of the gap tolerance: a job
        # needing 7.6e-8 of a type another job filled (the solver's tolerance) got nothing,
        # and the certified makespan level was 0 (fuzz seed 22); kept rows keep TOP_UP_SHRINK
        shrink = (TOP_UP_SHRINK if self.fixed
                  else max(TOP_UP_SHRINK, TOP_UP_GAP_SHARE * self.gap_tol))
        return top_up_rows(self.inst, stage.C, need, scale, xcol, shrink)

    def top_up_kept(self, xcol: np.ndarray) -> np.ndarray:
        """Give jobs whose kept level row (an earlier level stage's, `kept_level`) falls
        short the missing time on their best single-job column, as `top_up` does for a level
        stage's own rows (a full type gives at most ``TOP_UP_SHRINK``).

        A kept row whose job needs a tiny share of a type (a makespan job of 1e-6 steps at
        1e8 steps/s: 5e-12 of a type) is met by the solver only to its absolute tolerance,
        i.e. not at all; moving the point towards the anchor (`toward_anchor`) would then
        undo nearly all of a work-conserving stage's gain."""
        for B, low in self.fixed:
            if any(B is K for K in self.kept_level):
                xcol = top_up_rows(self.inst, B, low - matvec(B, xcol), np.abs(low), xcol)
        return xcol

    def certificate(self, lp: LinearProgram, stage: LevelStage | LinearStage, v: np.ndarray,
                    duals: np.ndarray) -> Certificate:
        """The stage LP's certificate at LP vector ``v``; a level stage's gap is judged against
        ``max(|theta|, |bound|, its data scale)`` (`LevelStage.data_scale`), so a level that
        is legitimately about 0 (a Dinkelbach root) is certified relative to its data."""
        cert = lp_certificate(lp, v, duals, maximize=True, gap_tol=self.gap_tol,
                              feas_tol=self.feas_tol)
        ds = stage.data_scale() if isinstance(stage, LevelStage) else stage.scale
        if ds is not None:
            vals = [abs(t) for t in (cert.primal_value, cert.dual_bound) if np.isfinite(t)]
            if ds > max(vals, default=0.0):
                cert = dataclasses.replace(cert, scale=ds)
        return cert

    def certify(self, res: StageResult, stage: LevelStage | LinearStage, xcol: np.ndarray
                ) -> Certificate:
        """Certificate of ``stage`` (with the duals found for it) at allocation ``xcol``."""
        return self.certificate(res.lp, stage, self.point(stage, xcol), res.duals)

    def run(self, stage: LevelStage | LinearStage, what: str,
            fast: tuple[Strategy[Any, StageResult], ...] = ()) -> StageResult:
        """Solve ``stage`` by its plan (`fairalloc.throughput.strategies.stage_plan`: the
        structured strategies ``fast`` the policy offers, restricted columns, a warm simplex,
        then the exact whole-LP tail) through the one driver (`fairalloc.plan.run_plan`), which
        records every step and hand-over in `log`. The result is certified on the whole
        stage LP. Its basis and restricted columns become the next stage's warm start.

        Raises
        ------
        InfeasibleError, UnboundedError, CertificateError, SolverError
            When every strategy failed (each one's verdict in ``exc.verdicts``).
        """
        ctx = StageContext(self, stage, what)
        found = run_plan(stage_plan(ctx, fast), ctx, self.log, what=what,
                         backend=self.backend.name, infeasible_votes=self.infeasible_votes)
        res = found.result
        if isinstance(stage, LevelStage):
            self.level_basis = res.basis
            if self.warm_levels and res.basis is not None:
                self.basis = res.basis  # (a structured level keeps the last whole LP's basis)
        if self.bases is not None and res.basis is not None:
            self.bases.end(what, self.inst, self.layout(stage), res.basis, res.iterations)
        if res.columns is not None:
            self.columns_used = res.columns
        return res

    def solve_sub(self, lp: LinearProgram, what: str) -> LPSolution:
        """Solve an auxiliary LP (a sampled stage LP) by the exact backend at unit scale,
        recorded in the log."""
        try:
            sol = scaled_solve(lp, self.exact_backend, what)
        except SolverError as exc:
            self.log.solved(self.exact_backend.name, exc.raw_status, status=exc.status)
            raise
        self.used(sol)
        return sol

    def warm_backend(self) -> bool:
        """Whether LPs of a sequence may be warm-started: ``tuning.warm_start`` and the
        backend has the ``basis`` capability (HiGHS; a basis starts its own simplex)."""
        return self.tuning.warm_start and self.backend.supports("basis")

    def run_once(self, lp: LinearProgram, stage: LevelStage | LinearStage, what: str,
                  backend: Backend, *, basis: LPBasis | None = None, keep_basis: bool = False,
                  cols: tuple[np.ndarray, sp.csc_matrix] | None = None,
                  solve_lp: LinearProgram | None = None, row_band: int = _ROW_BAND
                  ) -> tuple[LPSolution, np.ndarray, Certificate]:
        """One solve of the whole LP ``lp`` of ``stage`` by ``backend``: the solution, the
        repaired LP vector and its (unchecked) certificate on ``lp`` (``basis``,
        ``keep_basis``, ``row_band``: see `scaled_solve`). ``cols`` (a column mask and ``lp``'s
        matrix as CSC): solve the LP restricted to those columns, the others at 0 (the row
        duals are ``lp``'s). ``solve_lp``: solve this program (``lp`` with other row bounds)
        instead, and certify the point on ``lp``."""
        E = self.inst.E
        col_unit = None
        obj_unit = None
        if isinstance(stage, LevelStage):
            sigma, _ = stage.units()
            col_unit = np.ones(E + 1)
            col_unit[E] = sigma
            obj_unit = sigma
        target = lp if solve_lp is None else solve_lp
        if cols is not None:
            keep, A = cols
            target = LinearProgram(c=lp.c[keep], A=A[:, keep].tocsr(),
                                   row_lower=target.row_lower, row_upper=target.row_upper,
                                   col_lower=lp.col_lower[keep], col_upper=lp.col_upper[keep],
                                   integrality=None, offset=lp.offset)
            col_unit = None if col_unit is None else col_unit[keep]
        try:
            sol = scaled_solve(target, backend, what, col_unit=col_unit, obj_unit=obj_unit,
                               basis=basis, keep_basis=keep_basis, row_band=row_band)
        except SolverError as exc:
            self.log.solved(backend.name, exc.raw_status, status=exc.status)
            raise
        if cols is not None:
            assert sol.x is not None
            x = np.zeros(E + 1)
            x[cols[0]] = sol.x
            sol = dataclasses.replace(sol, x=x, col_duals=None)
        self.used(sol)
        assert sol.x is not None and sol.row_duals is not None
        xcol = self.inst.repair(sol.x[:E])
        if isinstance(stage, LinearStage) and self.kept_level:
            xcol = self.top_up_kept(xcol)
        xcol = self.toward_anchor(xcol)
        if isinstance(stage, LevelStage):
            xcol = self.top_up(stage, xcol, float(sol.x[E]))
        if self.meet_extra_rows is not None:
            xcol = self.meet_extra_rows(xcol)
        v = self.point(stage, xcol)
        return sol, v, self.certificate(lp, stage, v, sol.row_duals)

    def result(self, lp: LinearProgram, stage: LevelStage | LinearStage, sol: LPSolution,
               v: np.ndarray, cert: Certificate) -> StageResult:
        """The `StageResult` of a whole-LP solve (`run_once`), with its basis if one was
        kept."""
        assert sol.row_duals is not None
        basis = sol.extra.get("basis")
        return StageResult(lp, v, sol.row_duals, cert.primal_value, cert, sol.iterations,
                           self.layout(stage),
                           basis=basis if isinstance(basis, LPBasis) else None)

    def keep_face(self, res: StageResult) -> np.ndarray:
        """Restrict every later stage to the face of ``res``'s optimal set that its certificate
        proves, by complementary slackness: with the stage's row duals ``y`` (projected as in
        `fairalloc.certificates.lp_certificate`) and reduced costs ``d = c - A^T y``, every
        allocation at least as good as ``res``'s point has ``sum_e |d_e| dist_e + sum_i |y_i|
        slack_i <= gap`` (``dist_e``: column ``e``'s distance from the bound ``d_e`` pushes it
        to; ``slack_i``: base row ``i``'s slack). So the columns with ``|d_e| * feas_tol >
        gap`` are held at that bound (`fixed_columns`) and the base rows with ``|y_i| *
        feas_tol > gap`` made tight (`lo` / `up`): together these move no such allocation by
        more than ``feas_tol`` (of time, of a row's magnitude), and no face is cut by a
        rounding-sized ``d_e`` or ``y_i`` (below `FACE_NOISE` of the stage's largest ``|c|``
        or ``|A^T y|``). Unlike a kept objective row, the face is stated in the allocation's
        own units: a job whose value is 3e-7 (its only type 3e-7 of its best) keeps its
        time, where a row ``v >= 3e-7`` is met only to a solver's absolute tolerance.

        Returns ``res``'s allocation with the held columns exactly at their bounds (the
        anchor of the next stage).
        """
        lp, E = res.lp, self.inst.E
        y = np.asarray(res.duals, dtype=float).copy()
        y[(y > 0) & ~np.isfinite(lp.row_lower)] = 0.0
        y[(y < 0) & ~np.isfinite(lp.row_upper)] = 0.0
        aty = lp.A.T @ y
        d = (lp.c - aty)[:E]
        scale = max(float(np.max(np.abs(lp.c), initial=0.0)),
                    float(np.max(np.abs(aty), initial=0.0)))
        tau = max(max(res.cert.gap, 0.0) / self.feas_tol, FACE_NOISE * scale)
        lo, up = lp.col_lower[:E], lp.col_upper[:E]
        free = lo < up
        at_lo, at_up = free & (d > tau), free & (d < -tau)
        x = res.x[:E].copy()
        x[at_lo] = lo[at_lo]
        x[at_up] = up[at_up]
        new = np.flatnonzero(at_lo | at_up)
        if new.size:
            old = self.fixed_columns
            self.fixed_columns = (new, x[new]) if old is None else (
                np.concatenate([old[0], new]), np.concatenate([old[1], x[new]]))
        yb = y[: self.lo.size]
        upper, lower = (yb < -tau) & np.isfinite(self.up), (yb > tau) & np.isfinite(self.lo)
        if upper.any() or lower.any():
            self.lo, self.up = self.lo.copy(), self.up.copy()  # (shared with no one else)
            self.lo[upper] = self.up[upper]
            self.up[lower] = self.lo[lower]
        return x

    def fix(self, stage: LevelStage | LinearStage, value: float, at: np.ndarray | None = None
            ) -> None:
        """Keep ``stage``'s objective within ``stage_tol`` of ``value`` in later stages.

        The slack is relative to the stage's own scale (``|value|``, or a level's data scale),
        and the kept rows are stored at unit scale (divided by a power of two), so the
        later stages do not depend on the caller's units. ``at``: the stage's optimal
        allocation (the `anchor` of later stages)."""
        if at is not None:
            self.anchor = np.asarray(at, dtype=float)
        if isinstance(stage, LevelStage):
            # each row keeps its own level h_m + b_m theta to stage_tol of its magnitude (a
            # slack common to all rows would free a row whose offset h_m is much smaller)
            low = stage.h + stage.b * value
            low = low - self.stage_tol * (np.abs(stage.h) + stage.b * abs(value))
            _, rho = stage.units()
            # (rho a power of two: the rows divided exactly, on C's own structure)
            C = stage.C if rho == 1.0 else _scaled_rows(stage.C, 1.0 / rho)
            self.fixed.append((C, low / rho))
            if C.shape[0] == self.inst.n:
                self.kept_level.append(C)
        else:
            slack = self.stage_tol * abs(value)
            gam = pow2(float(np.max(np.abs(stage.g), initial=0.0)))
            self.fixed.append((sp.csr_matrix(stage.g[None, :] / gam),
                               np.array([(value - slack) / gam])))


def capacity_prices(res: StageResult) -> np.ndarray:
    """Non-negative capacity prices ``d OPT / d workers`` of a maximisation stage."""
    return np.maximum(-res.block("capacity"), 0.0)


#: The largest fraction by which `top_up_rows` scales a full type's columns down to make
#: room for a job the solver left short (a performance-neutral accuracy knob: 100x below the
#: default relative gap tolerance, so the shrink never decides a certificate).
TOP_UP_SHRINK = 1e-8
#: ACCURACY: share of the gap tolerance a full type may give up to a job left short, in a
#: level stage without kept rows (`StageSolver.top_up`)
TOP_UP_GAP_SHARE = 0.25


def top_up_rows(inst: ColumnInstance, C: sp.csr_matrix, need: np.ndarray, scale: np.ndarray,
                xcol: np.ndarray, max_shrink: float = TOP_UP_SHRINK) -> np.ndarray:
    """Give each job ``m`` whose row ``C[m] @ x >= ...`` falls short by ``need[m]`` (more than
    ``_TOP_UP_SHORT * scale[m]``) the missing amount on its best single-job column, clipped to
    the job's spare time and each type's spare workers (scaled down together, a full type's
    columns first by at most ``max_shrink``); the allocation stays feasible and the caller's
    certificate decides. Used for level rows and SLO rows, which a
    solver with an absolute feasibility tolerance can leave at 0 when they need a tiny share.
    """
    short = need > _TOP_UP_SHORT * scale
    if not short.any():
        return xcol
    single = inst.col_kind[inst.mem_col] != 2
    own, cols = inst.mem_job[single], inst.mem_col[single]
    coef = np.asarray(C[own, cols]).ravel()
    spare = np.maximum(inst.cap - inst.W @ xcol, 0.0)
    # columns on a type with room for the missing time (else any column of the job)
    room = coef > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        fits = room & (spare[inst.col_type[cols]]
                       >= inst.col_workers[cols] * need[own] / np.where(room, coef, 1.0))
    ok = short[own] & room
    if not ok.any():
        return xcol
    coef = np.where(fits, coef, coef * _NO_FIT_WEIGHT)  # prefer columns that fit, best first
    own, cols, coef = own[ok], cols[ok], coef[ok]
    order = np.lexsort((-coef, own))  # per job, its best column first
    own, cols, coef = own[order], cols[order], coef[order]
    first = np.concatenate(([True], own[1:] != own[:-1]))
    own, cols = own[first], cols[first]
    coef = np.asarray(C[own, cols]).ravel()
    add = np.minimum(need[own] / coef, np.maximum(1.0 - (inst.M @ xcol)[own], 0.0))
    use = np.bincount(inst.col_type[cols], weights=inst.col_workers[cols] * add,
                      minlength=inst.k)
    out = xcol.copy()
    # a type the solver filled to its tolerance has no spare room: free it by scaling that
    # type's columns down by at most TOP_UP_SHRINK (every other row loses at most that
    # fraction, well inside the certificate's gap), else the top-up is clipped to the room.
    # The room freed is not recomputed as ``cap - W @ out``: that difference cancels (a share
    # 1e-22 of a full type rounds to no room at all, fuzz seed 2525), so a shrunk type takes
    # the whole top-up and `repair` scales off the few ulps of rounding left over
    used = inst.W @ xcol
    with np.errstate(divide="ignore", invalid="ignore"):
        shrink = (inst.cap - use) / used
    freed = (use > spare) & (used > 0) & (shrink >= 1.0 - max_shrink)
    shrink = np.where(freed & (shrink < 1.0), shrink, 1.0)
    if np.any(shrink < 1.0):
        out = out * shrink[inst.col_type]
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where((use > spare) & ~freed, spare / np.where(use > 0, use, 1.0), 1.0)
    out[cols] += add * frac[inst.col_type[cols]]
    return inst.repair(out)
