"""The solve plan of one stage LP of the throughput policies (`stage_plan`), as data.

Every stage LP of every throughput policy (max-min fairness, finish-time fairness, makespan,
FIFO, total throughput, cost, water-filling's levels, the work-conserving stages) is solved by
`StageSolver.run`, which builds the stage's plan with `stage_plan` -- a pure function of the
stage's shape, the caller's ``backend`` choice and the `Tuning` -- and hands it to the one
driver (`fairalloc.plan.run_plan`). The plan, in order (each step only where its rule says it
applies):

============================ ======================================= ===========================
step                          applies when                            what it does
============================ ======================================= ===========================
``structured-level`` /        the policy offers it (``method="fast"``, the structured exact solvers
``structured-floor``          ``n >= structured_min_jobs``, ...)      (decline when they cannot
                                                                      win)
``restricted-columns``        many types and columns (``columns_*``,   column generation,
                              ``priced_*`` of `Tuning`)               certified on the whole LP
``pair-columns``              a level LP of a sequence (`warm_levels`) column generation over
                              with pairs and at least                 pair columns, certified
                              ``pair_columns_min_columns`` pair       on the whole LP
                              columns, fairalloc chose HiGHS          (`pair_columns`)
``exact-lp+warm``             a sequence of level LPs (`warm_levels`)  HiGHS' simplex from the
                              where fairalloc chose HiGHS, a basis of  previous level's basis
                              this shape in hand; or a stage of a     (or the previous round's,
                              `fairalloc.RoundPolicy` round           carried by job / class)
``exact-lp+from-level``       a linear stage after a whole level LP    HiGHS' simplex from that
                              of its shape whose basis was kept        level LP's basis
                              (``warm_start``, fairalloc chose HiGHS)
``exact-lp``                  always (exact)                          the whole LP: the backend
                                                                      (HiGHS' interior point
                                                                      without crossover when
                                                                      fairalloc chose it)
``exact-lp+crossover``        exact-lp's backend was not ``backend``   the caller's backend
``exact-lp+kept-margin``      kept rows and an anchor meeting them     kept rows raised by half
                                                                      the tolerance (a solver
                                                                      meeting them only to its
                                                                      own tolerance)
``exact-lp+kept-relaxed``     kept rows (exact)                       kept rows lowered by half
                                                                      the feasibility tolerance
                                                                      (a face the solver calls
                                                                      infeasible), the point
                                                                      moved back to them
``exact-structured``          the structure, not offered first        the structured level /
                                                                      floor solver, any size
                                                                      (closed-form duals)
``exact-lp+simplex``          fairalloc chose HiGHS (exact)           HiGHS' dual simplex, no
                                                                      presolve, every row scaled
``exact-lp+clarabel``         fairalloc chose HiGHS (exact)           Clarabel's interior point
                                                                      on the LP in its levels'
                                                                      units (`level_units`)
``exact-lp+rescaled``         the caller named the backend (exact)    that backend on the LP in
                                                                      its levels' units
============================ ======================================= ===========================

The steps marked exact are the tail: their infeasibility verdicts count (two must agree,
`fairalloc.plan`), and a relaxation (``kept-relaxed``) found infeasible proves the stage is.
Every step's point is certified on the **original** stage LP (`StageSolver.certificate`); the
first that certifies is the answer. A caller-named backend (``backend="clarabel"``, an
instance) is used as given: its plan is the structured step (if any), ``exact-lp``, the kept-
row steps and ``exact-lp+rescaled`` with that backend. The hand-over reasons are in
``stats.fallbacks``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from .._sparse import rmatvec, scale_rows
from ..backends import LinearProgram, get_backend
from ..plan import Decline, Strategy
from ..results import Certificate
from . import columns
from .pair_columns import PAIR_STRATEGY

if TYPE_CHECKING:  # (stages imports this module: `StageSolver.run` builds the plan here)
    from .programs import LevelStage, LinearStage, StageResult
    from .stages import StageSolver

__all__ = ["CLARABEL_LP", "CROSSOVER", "EXACT_LP", "FROM_LEVEL_LP", "KEPT_MARGIN", "KEPT_RELAXED",
           "RESCALED_LP", "SIMPLEX_LP", "STRUCTURED_EXACT", "StageContext", "WARM_LP",
           "level_units",
           "stage_plan"]

#: path step: the stage solved as the whole LP by the backend (the first exact strategy of
#: every stage plan)
EXACT_LP = "exact-lp"
#: path step: the whole LP by the caller's backend (HiGHS' interior point with crossover)
#: after the interior point without crossover did not certify
CROSSOVER = "exact-lp+crossover"
#: path step: the whole level LP by HiGHS' simplex from the previous level LP's basis
WARM_LP = "exact-lp+warm"
#: path step: a whole linear (work-conserving) LP by HiGHS' simplex from the basis of the
#: level LP it follows (same rows and columns: the level rows are now kept rows, theta's
#: column is held at 0 and the backend repairs its basic slot)
FROM_LEVEL_LP = "exact-lp+from-level"
#: path step: the kept rows raised by `KEPT_SHARE` of the feasibility tolerance (towards what
#: the anchor reaches), for a solver that meets them only to its own tolerance
KEPT_MARGIN = "exact-lp+kept-margin"
#: path step: the kept rows lowered by `KEPT_SHARE` of the feasibility tolerance, for a solver
#: that calls a thin face infeasible; the point is moved back to the kept rows
KEPT_RELAXED = "exact-lp+kept-relaxed"
#: path step: the structured level / floor solver as an exact method (closed-form duals)
STRUCTURED_EXACT = "exact-structured"
#: path step: HiGHS' dual simplex without presolve on a copy with every row scaled to unit
SIMPLEX_LP = "exact-lp+simplex"
#: path step: Clarabel's interior point on the LP with every row in its level's units
CLARABEL_LP = "exact-lp+clarabel"
#: path step: the caller's backend on the LP with every row in its level's units (a
#: caller-named backend's exact tail)
RESCALED_LP = "exact-lp+rescaled"
#: ACCURACY: a row rescaled to its level's units (`level_units`) is divided by at least this
#: share of its largest coefficient: a level of about 0 (a Dinkelbach root) would otherwise
#: blow its coefficients up past what a solver's own scaling handles
LEVEL_UNIT_FLOOR = 2.0 ** -40
#: `fairalloc.throughput.stages.scaled_solve`'s ``row_band`` that leaves every row as given
#: (the rows already rescaled here); 2**1023 is the largest power of two of a double
_AS_GIVEN = 1023
#: ACCURACY: the share of the certificate's feasibility tolerance by which the kept-row steps
#: move the kept rows (relative to each row's magnitude): the certificate still sees the
#: original rows met to within half its tolerance
KEPT_SHARE = 0.5


@dataclass
class StageContext:
    """What every strategy of a stage plan reads: the sequence (``solver``: instance,
    backends, kept rows, anchor, warm start, tuning, log), the stage and its name."""

    solver: StageSolver
    stage: LevelStage | LinearStage
    what: str
    _lp: LinearProgram | None = field(default=None, repr=False)

    @property
    def lp(self) -> LinearProgram:
        """The stage's whole LP (built once per stage)."""
        if self._lp is None:
            self._lp = self.solver.program(self.stage)
        return self._lp

    @property
    def level(self) -> bool:
        return self.stage.level

    @property
    def chosen(self) -> bool:
        """Whether fairalloc chose the backend (``backend="highs"``, the default)."""
        return bool(self.solver.backend_spec == "highs")


def _certificate(ctx: StageContext, res: StageResult) -> Certificate:
    return res.cert  # (computed by the strategy on the whole stage LP)


def _whole(ctx: StageContext, backend: Any, *, solve_lp: LinearProgram | None = None,
           keep_basis: bool = False, basis: Any = None, row_band: int | None = None
           ) -> StageResult:
    s = ctx.solver
    extra = {} if row_band is None else {"row_band": row_band}
    sol, v, cert = s.run_once(ctx.lp, ctx.stage, ctx.what, backend, solve_lp=solve_lp,
                              keep_basis=keep_basis, basis=basis, **extra)
    return s.result(ctx.lp, ctx.stage, sol, v, cert)


# --- restricted columns ----------------------------------------------------------------------
def _single(s: StageSolver) -> bool:
    return s.inst.pairs is None and not s.inst.placement


def _priced(ctx: StageContext) -> bool:
    s = ctx.solver
    return (ctx.level and not s.fixed
            and columns.applies(s.inst.k, s.inst.E, _single(s), s.tuning, priced=True))


def _restricted_applies(ctx: StageContext) -> bool:
    s = ctx.solver
    return _priced(ctx) or columns.applies(s.inst.k, s.inst.E, _single(s), s.tuning)


def _restricted(ctx: StageContext) -> StageResult:
    s = ctx.solver
    first = s.exact_backend if ctx.level else s.exact_linear_backend
    price = None
    if _priced(ctx):
        price = columns.sampled_prices(s, ctx.lp)
        if price is None and not columns.applies(s.inst.k, s.inst.E, True, s.tuning):
            raise Decline("the sampled LP gave no capacity prices")
    stage = ctx.stage
    coef = rmatvec(stage.C, np.ones(s.inst.n)) if stage.level else stage.g
    return columns.solve_restricted(s, ctx.lp, stage, coef, ctx.what, first, price)


# --- the whole LP ----------------------------------------------------------------------------
def _sequence(ctx: StageContext) -> bool:
    """A level LP of a sequence whose LPs keep their basis for the next one."""
    s = ctx.solver
    return (ctx.level and s.warm_levels and s.warm_backend() and not _restricted_applies(ctx))


def _round(ctx: StageContext) -> bool:
    """A stage LP of a `fairalloc.RoundPolicy` round (`StageSolver.bases`) solved whole by
    HiGHS' own choice of method (not its interior point: a large LP, where a simplex from a
    basis is slower): it keeps its basis for the next round."""
    s = ctx.solver
    return (s.bases is not None and s.warm_backend() and s.exact_backend is s.backend
            and not _restricted_applies(ctx))


def _warm_basis(ctx: StageContext) -> Any:
    """The basis the stage LP starts from: the previous level's of a sequence, else the
    previous round's stage of the same name (`fairalloc.rounds.state.RoundBases`)."""
    s = ctx.solver
    if _sequence(ctx) and s.basis is not None and s.basis.shape == ctx.lp.shape:
        return s.basis
    if _round(ctx) and s.bases.kept and s.bases.has(ctx.what, s.inst,
                                                      layout := s.layout(ctx.stage)):
        return s.bases.start(ctx.what, s.inst, layout, ctx.lp.shape)  # (LP built if kept)
    return None


def _warm_applies(ctx: StageContext) -> bool:
    return _warm_basis(ctx) is not None


def _warm(ctx: StageContext) -> StageResult:
    s = ctx.solver
    basis = _warm_basis(ctx)
    res = _whole(ctx, s.backend, basis=basis, keep_basis=True)
    if basis is not s.basis and res.cert.ok:
        s.warm_used = True  # (stats "+warm": the answer started from the previous round)
    return res


def _exact_backend(ctx: StageContext) -> Any:
    s = ctx.solver
    if _sequence(ctx) or _round(ctx):
        return s.backend  # ends with a basis for the next level or round (crossover)
    return s.exact_backend if ctx.level else s.exact_linear_backend


def _simplex_backend(backend: Any) -> bool:
    """Whether ``backend`` is HiGHS solving by the simplex (its own choice for an LP), so that
    keeping the final basis costs no crossover."""
    return getattr(backend, "solver", None) in ("choose", "simplex")


def _keeps_basis(ctx: StageContext) -> bool:
    """Whether the whole LP keeps its final basis: a level LP of a sequence, or a level LP
    solved by the simplex (for the linear stage that follows, `_from_level`)."""
    return _sequence(ctx) or (ctx.level and ctx.chosen and ctx.solver.warm_backend()
                              and _simplex_backend(_exact_backend(ctx)))


def _exact(ctx: StageContext) -> StageResult:
    return _whole(ctx, _exact_backend(ctx), keep_basis=_keeps_basis(ctx) or _round(ctx))


def _from_level_applies(ctx: StageContext) -> bool:
    s = ctx.solver
    basis = s.level_basis
    return (not ctx.level and ctx.chosen and basis is not None and s.warm_backend()
            and basis.shape == ctx.lp.shape
            and ctx.lp.shape[1] >= s.tuning.from_level_min_columns  # (smaller: cold pays)
            and _simplex_backend(_exact_backend(ctx)) and not _restricted_applies(ctx))


def _from_level(ctx: StageContext) -> StageResult:
    return _whole(ctx, _exact_backend(ctx), basis=ctx.solver.level_basis)


def _crossover_applies(ctx: StageContext) -> bool:
    return _exact_backend(ctx) is not ctx.solver.backend


def _crossover(ctx: StageContext) -> StageResult:
    return _whole(ctx, ctx.solver.backend, keep_basis=_sequence(ctx) or _round(ctx))


def _kept_rows(ctx: StageContext) -> slice:
    return ctx.solver.layout(ctx.stage).slice("kept")


def _has_kept(ctx: StageContext) -> bool:
    return bool(ctx.solver.fixed)


def _kept_relaxed(ctx: StageContext) -> StageResult:
    s, lp = ctx.solver, ctx.lp
    kept = _kept_rows(ctx)
    lo = lp.row_lower.copy()
    lo[kept] -= KEPT_SHARE * s.feas_tol * np.maximum(1.0, np.abs(lo[kept]))
    return _whole(ctx, s.backend, solve_lp=dataclasses.replace(lp, row_lower=lo))


def _margin_applies(ctx: StageContext) -> bool:
    return _has_kept(ctx) and ctx.solver.anchor is not None


def _kept_margin(ctx: StageContext) -> StageResult:
    s, lp = ctx.solver, ctx.lp
    assert s.anchor is not None
    kept = _kept_rows(ctx)
    lo = lp.row_lower.copy()
    reach = (lp.A @ s.point(ctx.stage, s.anchor))[kept]
    lo[kept] = np.minimum(lo[kept] + KEPT_SHARE * s.feas_tol * np.maximum(1.0, np.abs(lo[kept])),
                          np.maximum(reach, lo[kept]))
    return _whole(ctx, s.backend, solve_lp=dataclasses.replace(lp, row_lower=lo))


def _chosen(ctx: StageContext) -> bool:
    return ctx.chosen


def _structure(ctx: StageContext) -> bool:
    """The stage has the structured solvers' structure (any number of jobs)."""
    from .structured.common import structured_applies

    return structured_applies(ctx.solver, kept=0 if ctx.level else 1, any_size=True)


def _structured_exact(ctx: StageContext) -> StageResult:
    from . import structured

    if ctx.level:
        return structured.fast_level(ctx.solver, ctx.stage, any_size=True)  # type: ignore[arg-type]
    return structured.fast_floor(ctx.solver, ctx.stage, any_size=True)  # type: ignore[arg-type]


def level_units(ctx: StageContext) -> np.ndarray:
    """Per-row powers of two that put every row of the stage's whole LP in the units of the
    level it must reach: ``max(|bound|, |theta's coefficient|)`` (theta at its unit scale
    ``sigma``; a level row ``C x - b theta >= h`` is divided by about ``max(|h|, b sigma)``, a
    kept row by its kept value), else by its largest coefficient; never by less than
    `LEVEL_UNIT_FLOOR` of that coefficient.

    An interior point meets each row to an absolute tolerance of its scaled copy. Divided by
    its largest coefficient (`fairalloc.throughput.stages.scaled_solve`'s rule), the level
    row of a job that needs a 3e-8 share of a type to reach the level (steps ~1e-4, throughput
    ~1e8, the type full) is met only to about 1e-9 / 3e-8 of its level, and the makespan of the
    point missed the certificate by 2e-4 (fuzz seed 808); in its level's units the same solve
    certifies to 1e-14."""
    lp = ctx.lp
    A = lp.A if isinstance(lp.A, sp.csr_matrix) else sp.csr_matrix(lp.A)
    E = ctx.solver.inst.E
    absA = abs(A)
    rowmax = np.zeros(A.shape[0])
    if A.nnz:
        full = np.diff(A.indptr) > 0
        rowmax[full] = np.maximum.reduceat(absA.data, A.indptr[:-1][full])
    sigma = ctx.stage.units()[0] if ctx.level else 1.0  # type: ignore[union-attr]
    theta = np.asarray(absA[:, E].todense()).ravel() * sigma
    with np.errstate(invalid="ignore"):
        bound = np.maximum(np.where(np.isfinite(lp.row_lower), np.abs(lp.row_lower), 0.0),
                           np.where(np.isfinite(lp.row_upper), np.abs(lp.row_upper), 0.0))
    level = np.maximum(bound, theta)
    unit = np.where(level > 0, np.maximum(level, LEVEL_UNIT_FLOOR * rowmax), rowmax)
    unit = np.where(unit > 0, unit, 1.0)
    m, e = np.frexp(unit)
    return np.ldexp(1.0, e - (m < np.sqrt(0.5)))


def _rescaled_with(ctx: StageContext, backend: Any) -> StageResult:
    """The whole LP solved by ``backend`` with every row in its level's units
    (`level_units`), the point and the duals certified on the original LP."""
    s, lp = ctx.solver, ctx.lp
    r = level_units(ctx)
    slp = dataclasses.replace(lp, A=scale_rows(lp.A, 1.0 / r), row_lower=lp.row_lower / r,
                              row_upper=lp.row_upper / r)
    sol, v, _ = s.run_once(lp, ctx.stage, ctx.what, backend, solve_lp=slp, row_band=_AS_GIVEN)
    assert sol.row_duals is not None
    sol = dataclasses.replace(sol, row_duals=sol.row_duals / r)
    return s.result(lp, ctx.stage, sol, v, s.certificate(lp, ctx.stage, v, sol.row_duals))


def _rescaled(ctx: StageContext) -> StageResult:
    return _rescaled_with(ctx, _exact_backend(ctx))


def _named(ctx: StageContext) -> bool:
    return not ctx.chosen


def _simplex(ctx: StageContext) -> StageResult:
    return _whole(ctx, get_backend("highs", need="lp", solver="simplex"), row_band=0)


def _clarabel(ctx: StageContext) -> StageResult:
    return _rescaled_with(ctx, get_backend("clarabel", need="lp"))


RESTRICTED = Strategy(columns.RESTRICTED_LP, _restricted, _certificate, _restricted_applies)
WARM = Strategy(WARM_LP, _warm, _certificate, _warm_applies, exact=True)
FROM_LEVEL = Strategy(FROM_LEVEL_LP, _from_level, _certificate, _from_level_applies,
                      exact=True)
EXACT = Strategy(EXACT_LP, _exact, _certificate, exact=True)
# (the same interior point as exact-lp: its infeasibility verdict is no second opinion)
CROSSOVER_STEP = Strategy(CROSSOVER, _crossover, _certificate, _crossover_applies)
MARGIN = Strategy(KEPT_MARGIN, _kept_margin, _certificate, _margin_applies)
RELAXED = Strategy(KEPT_RELAXED, _kept_relaxed, _certificate, _has_kept, exact=True)
#: the structured solvers as an exact method of the tail (any number of jobs): their
#: closed-form duals certify levels whose rows span many orders of magnitude (one type, a
#: gang filling it, speeds 1e12 apart: every LP solver's point missed the gap by 3.6e-6)
STRUCTURED = Strategy(STRUCTURED_EXACT, _structured_exact, _certificate, _structure)
SIMPLEX = Strategy(SIMPLEX_LP, _simplex, _certificate, _chosen, exact=True)
CLARABEL = Strategy(CLARABEL_LP, _clarabel, _certificate, _chosen, exact=True)
#: the tail of a caller-named backend (which is used as given): the same backend on the LP in
#: its levels' units
RESCALED = Strategy(RESCALED_LP, _rescaled, _certificate, _named, exact=True)

#: the plan after the structured strategy, in order (each filtered by its ``applies``)
WHOLE_LP_PLAN = (RESTRICTED, PAIR_STRATEGY, WARM, FROM_LEVEL, EXACT, CROSSOVER_STEP, MARGIN,
                 RELAXED, SIMPLEX, CLARABEL, RESCALED)
#: ... with the structured solvers in the tail (for a policy that did not offer them first)
TAIL_PLAN = (RESTRICTED, PAIR_STRATEGY, WARM, FROM_LEVEL, EXACT, CROSSOVER_STEP, MARGIN, RELAXED,
             STRUCTURED, SIMPLEX, CLARABEL, RESCALED)


def stage_plan(ctx: StageContext, fast: tuple[Strategy[Any, StageResult], ...] = ()
               ) -> tuple[Strategy[Any, StageResult], ...]:
    """The ordered strategies for ``ctx``'s stage: ``fast`` (the structured solvers the policy
    offers) first, then `WHOLE_LP_PLAN` (the driver skips a step whose rule does not apply).

    Examples
    --------
    >>> [s.name for s in stage_plan(None)][-4:]  # (the context is only read by the driver)
    ['exact-structured', 'exact-lp+simplex', 'exact-lp+clarabel', 'exact-lp+rescaled']
    """
    return (*fast, *WHOLE_LP_PLAN) if fast else TAIL_PLAN
