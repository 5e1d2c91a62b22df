"""Indivisible goods: the lexicographic Nash-welfare set-packing MILP (PF and every
leave-one-out market) and the fractions ``c_i`` of the partial-allocation mechanism.

`_partial_allocation_milp` is shared by
`fairalloc.bundle_auction` and
`fairalloc.gpu_auction`; a `_Form` is the program each builds, its
columns laid out by `SetPackingColumns`.

Every set-packing solve (`_milp`) runs a plan (`packing_plan`, run by the one driver
`fairalloc.plan.run_plan`) of exact routes from the cheapest, ending in the best incumbent
(``"incumbent"``, with its honest certificate), and logs each step it ran (``stats.path``) and
each hand-over to a slower one (``stats.fallbacks``):

``"knapsack-relaxation"``
    the form's own exact combinatorial relaxation (`fairalloc.gpu_auction`: a
    multiple-choice knapsack solved by dynamic programming) and the greedy placement of its
    optimum. With ``method="auto"`` it first runs once for the PF market and every
    leave-one-out market together (a forward and a backward dynamic program, lexicographic in
    the count of agents valuing nothing at 0, then ``sum log v``): a market whose placed
    optimum reaches those bounds on its own program is solved with no count target, count
    MILP or LP (otherwise ``"knapsack-relaxation->market: bound not met"``, or
    ``"->count-target"`` when some agent values nothing at 0, and the market takes the routes
    below: `nash_plan`);
``"lp-relaxation"``
    the LP relaxation (its bound certified independently), then, on its point,
``"integral-vertex"``, ``"greedy-rounding"``, ``"fix-and-solve"``
    an integral LP vertex taken as is, the form's greedy rounding (each agent's bid of
    largest LP mass, placed greedily), and the agents the LP decides fixed with the rest
    solved as a MILP;
``"milp"``
    the whole MILP;
``"count-milp"``
    maximising how many agents valuing nothing at 0 get a positive value, when making all
    of them positive is infeasible (or its solve stopped at the time limit without a point).

Fallbacks read ``"knapsack-relaxation->lp-relaxation: bound not met"``,
``"lp-relaxation->milp: no exact rounding"`` (or ``": LP stopped (time_limit)"``),
``"milp->incumbent: time_limit"`` (the MILP stopped before proving its optimum: the best
incumbent is returned with its honest certificate) and
``"count-target->count-milp: infeasible"`` (or ``": time limit"``).

``method`` (of `fairalloc.bundle_auction` /
`fairalloc.gpu_auction`) selects the routes: ``"auto"`` all of them, ``"lp"`` no
combinatorial route (no knapsack relaxation, no greedy rounding), ``"milp"`` the whole MILP only.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import scipy.sparse as sp

from ..errors import CertificateError, InfeasibleError, SolverError
from ..plan import Decline, Strategy, run_plan
from ..results import Certificate
from ..tolerances import FEAS_TOL, MILP_GAP_TOL
from ._pool import _parallel_map, _record, _step, _used

_LOG2 = math.log(2.0)
#: ACCURACY contract: an LP value within this of an integer counts as that integer (an
#: integral vertex, a bid the LP decides, an integer count).
INTEGRAL_TOL = 1e-9
#: ACCURACY contract: a candidate whose certified gap is at most this per agent in the sum is
#: optimal up to rounding (it reaches its bound; no further route is tried).
EXACT_GAP_REL = 1e-9
#: ACCURACY contract: relative MIP gap asked of the backend's MILP solves (far tighter than
#: MILP_GAP_TOL, so the independent certificate has room to pass).
MILP_SOLVER_GAP = 1e-9
#: The routes a set-packing solve may take (``method`` of the indivisible auctions).
SET_PACKING_METHODS = ("auto", "lp", "milp")

# names of the steps in stats.path (the module docstring explains each)
RELAXATION = "knapsack-relaxation"
LP_RELAXATION = "lp-relaxation"
INTEGRAL_VERTEX = "integral-vertex"
GREEDY_ROUNDING = "greedy-rounding"
FIX_AND_SOLVE = "fix-and-solve"
WHOLE_MILP = "milp"
COUNT_MILP = "count-milp"
INCUMBENT = "incumbent"
MARKET = "market"
COUNT_TARGET = "count-target"


# ============================================================================================
# the program: columns, rows and the optional combinatorial routes
# ============================================================================================
@dataclass(frozen=True)
class SetPackingColumns:
    """Column layout of a set-packing MILP: the ``num_choices`` choice columns (one per bid,
    or per placement of a bid) first, then ``num_aux`` auxiliary columns (placement
    patterns). Every vector over the columns is sliced through these names."""

    num_choices: int
    num_aux: int = 0

    @property
    def total(self) -> int:
        """Number of columns."""
        return self.num_choices + self.num_aux

    @property
    def choice(self) -> slice:
        """The choice columns."""
        return slice(0, self.num_choices)

    @property
    def aux(self) -> slice:
        """The auxiliary columns."""
        return slice(self.num_choices, self.total)

    def full(self, choice_values: np.ndarray) -> np.ndarray:
        """A vector over all columns: ``choice_values`` on the choice columns, 0 elsewhere."""
        out = np.zeros(self.total)
        out[self.choice] = choice_values
        return out


class CombinatorialRoutes(Protocol):
    """Exact shortcuts a form may offer besides its LP relaxation (``method="auto"``)."""

    def relaxation(self, w_col: np.ndarray, act_col: np.ndarray, must: np.ndarray,
                   count: tuple[np.ndarray, float] | None = None
                   ) -> tuple[float, np.ndarray | None] | None:
        """``(upper bound, a point of the form meeting it or None)`` of ``max w_col @ y`` over
        the active choice columns (agents in ``must`` win a bid; at least ``count[1]`` of the
        choice columns ``count[0]`` won), or ``None`` if infeasible."""
        ...

    def rounder(self, x: np.ndarray, col_upper: np.ndarray) -> np.ndarray | None:
        """A feasible integral point near the LP point ``x`` (``None`` if none is found)."""
        ...

    # optional: ``loo_relaxations(w_col, counted_col) -> list[Relaxed] | None``, the
    # lexicographic relaxation of the PF market and every leave-one-out market at once
    # (`fairalloc.auctions.placement.PlacementProgram.loo_relaxations`)


#: ``(count, weight, point)`` of one market's lexicographic relaxation: the most counted
#: winners, the largest weight at that count (both upper bounds of the market's program) and
#: a point of the form reaching them (``None`` if none was found).
Relaxed = tuple[int, float, "np.ndarray | None"]


@dataclass(frozen=True)
class _Form:
    """A set-packing MILP: choice columns then auxiliary ones (``columns``).

    Choice column ``o`` belongs to agent ``agent[o]`` and is worth ``logv[o]`` (``log`` of
    its valuation); ``log_empty[i]`` is the agent's log valuation of getting nothing
    (``-inf`` for zero). ``A``, row bounds, column bounds and integrality hold every
    constraint except the objective and the optional count row; each agent's choice columns
    are in a ``<= 1`` row. ``routes`` are the form's exact combinatorial shortcuts, if any.
    """

    agent: np.ndarray
    logv: np.ndarray
    log_empty: np.ndarray
    A: sp.csr_matrix
    row_lower: np.ndarray
    row_upper: np.ndarray
    col_upper: np.ndarray
    integrality: np.ndarray
    num_agents: int
    option: np.ndarray  # (K,) the bid each choice column meets (several columns: placements)
    columns: SetPackingColumns
    routes: CombinatorialRoutes | None = None

    @property
    def num_options(self) -> int:
        return self.columns.num_choices


@dataclass(frozen=True)
class _NashSolve:
    choice: np.ndarray  # (n,) chosen option per agent, -1 for none
    x: np.ndarray  # all columns
    count: int  # zero-empty agents made positive
    sumlog: float  # sum over positive agents of log valuation (incumbent)
    bound: float  # upper bound on sumlog (given the count; inf when the count is not proven)
    optimal: bool
    solves: int
    scale: float = 1.0  # data scale of the sum-log objective: the number of agents in it


@dataclass(frozen=True)
class _NodeLimited:
    """A MILP backend whose MILP solves stop after ``node_limit`` branch-and-bound nodes (a
    work limit: the auction's outcome does not depend on the machine's speed); LP solves are
    passed through unchanged. Picklable for the leave-one-out process pool."""

    backend: Any
    node_limit: int

    @property
    def name(self) -> str:
        return str(self.backend.name)

    def solve_lp(self, lp: Any, **options: Any) -> Any:
        if lp.is_mip:
            options["node_limit"] = self.node_limit
        return self.backend.solve_lp(lp, **options)


def _limited(time_limit: float | None, solver: Any) -> bool:
    """Whether the solves may stop at a limit (time or nodes) before their proof."""
    return time_limit is not None or isinstance(solver, _NodeLimited)


def _exact(gap: float, scale: float) -> bool:
    """Whether a gap is zero up to rounding (a relaxation's point reaches its bound)."""
    return gap <= EXACT_GAP_REL * scale


def _program(form: _Form, c: np.ndarray, active_opt: np.ndarray,
             count_row: tuple[np.ndarray, float] | None) -> tuple[Any, np.ndarray]:
    """``(lp, col_upper)``: the MILP ``min -c@x`` over the form (choice columns of inactive
    agents closed), with the count row ``coef @ x >= lower`` when given."""
    from ..backends import LinearProgram

    cols = form.columns
    col_upper = form.col_upper.copy()
    col_upper[cols.choice] = np.where(active_opt, col_upper[cols.choice], 0.0)
    A, rl, ru = form.A, form.row_lower, form.row_upper
    if count_row is not None:
        coef, lower = count_row
        row = sp.csr_matrix(cols.full(coef[cols.choice])[None, :])
        A = sp.vstack([A, row], format="csr")
        rl = np.r_[rl, float(lower)]  # an integer count: exact, no slack in the bound
        ru = np.r_[ru, np.inf]
    lp = LinearProgram.build(-c, A, rl, ru, 0.0, col_upper, integrality=form.integrality)
    return lp, col_upper


def _relaxed_point(form: _Form, c: np.ndarray, active_opt: np.ndarray,
                   count_row: tuple[np.ndarray, float] | None, scale: float,
                   relaxed: Relaxed) -> tuple[np.ndarray, Any] | None:
    """The batched relaxation's placed optimum
    (`fairalloc.auctions.placement.PlacementProgram.loo_relaxations`) certified on the
    market's own program, or ``None`` when it is missing, infeasible or short of its bound."""
    from ..certificates import milp_certificate

    _, weight, x = relaxed
    if x is None or not math.isfinite(weight):
        return None
    lp, _ = _program(form, c, active_opt, count_row)
    cert = milp_certificate(lp, x, -weight, maximize=True, gap_tol=MILP_GAP_TOL,
                            feas_tol=FEAS_TOL, scale=scale)
    if cert.primal_residual > FEAS_TOL or not _exact(cert.gap, scale):
        return None
    return x, cert


@dataclass(frozen=True, eq=False)
class _PackingContext:
    """One set-packing program ``max c@x`` over the form (`_milp`) and what its strategies
    found on the way: every proven lower bound of ``min -c@x`` (``bounds``) and every feasible
    point (``incumbents``), kept so that the plan's tail certifies the best point against the
    best bound (written by the strategies that found them, read by the later ones)."""

    form: _Form
    c: np.ndarray
    active_opt: np.ndarray
    count_row: tuple[np.ndarray, float] | None
    time_limit: float | None
    solver: Any
    scale: float
    lp: Any
    col_upper: np.ndarray
    routes: Any
    bounds: list[float] = dataclasses.field(default_factory=list)
    incumbents: list[np.ndarray] = dataclasses.field(default_factory=list)

    def certify(self, x: np.ndarray, lower_bound: float | None = None) -> Any:
        """The MILP certificate of ``x`` against ``lower_bound`` (default: the best bound)."""
        from ..certificates import milp_certificate

        bound = max(self.bounds, default=-math.inf) if lower_bound is None else lower_bound
        return milp_certificate(self.lp, x, bound, maximize=True, gap_tol=MILP_GAP_TOL,
                                feas_tol=FEAS_TOL, scale=self.scale)

    def feasible(self, x: np.ndarray | None) -> bool:
        return x is not None and self.certify(x, -math.inf).primal_residual <= FEAS_TOL

    def exact(self, x: np.ndarray | None) -> tuple[np.ndarray, Any] | None:
        """``(x, certificate)`` when the feasible ``x`` reaches the best bound (it is then
        optimal up to rounding); else ``x`` is kept as an incumbent and None returned."""
        if not self.feasible(x):
            return None
        assert x is not None
        cert = self.certify(x)
        if _exact(cert.gap, self.scale):
            return x, cert
        self.incumbents.append(x)
        return None

    def best(self) -> tuple[np.ndarray, Any]:
        """The best incumbent (else the empty assignment, when feasible) with the best
        bound's certificate, possibly not ok."""
        points = list(self.incumbents)
        if not points:
            zero = np.zeros(self.lp.A.shape[1])
            if not self.feasible(zero):
                limit = ", stopped at its limit" if _limited(self.time_limit,
                                                             self.solver) else ""
                raise SolverError(f"{self.solver.name} found no feasible set packing{limit}",
                                  backend=self.solver.name)
            points.append(zero)
        x = min(points, key=lambda v: float(self.lp.c @ v))
        return x, self.certify(x)


def _packing_certificate(ctx: _PackingContext, result: tuple[np.ndarray, Any]) -> Any:
    return result[1]


def _knapsack_strategy(ctx: _PackingContext) -> tuple[np.ndarray, Any]:
    """The form's own exact relaxation (a multiple-choice knapsack) and its placed optimum."""
    form, cols, count_row = ctx.form, ctx.form.columns, ctx.count_row
    must = np.zeros(form.num_agents, dtype=bool)
    if count_row is not None:
        zero = count_row[0][cols.choice] > 0
        if count_row[1] >= np.unique(form.agent[zero]).size - INTEGRAL_TOL:
            must[form.agent[zero]] = True  # every such agent must win a bid
    res = ctx.routes.relaxation(ctx.c[cols.choice], ctx.active_opt, must, None
                                if count_row is None else (zero, count_row[1]))
    if res is None:  # an exact relaxation without a point: neither has the program
        raise InfeasibleError("the set-packing program has no feasible point (its exact "
                              "knapsack relaxation has none)", backend="numpy",
                              raw_status="knapsack relaxation infeasible")
    if not math.isfinite(res[0]):
        raise Decline("no bound")
    ctx.bounds.append(-res[0])
    found = ctx.exact(res[1])
    if found is None:
        raise Decline("bound not met")
    return found


def _lp_strategy(ctx: _PackingContext) -> tuple[np.ndarray, Any]:
    """The LP relaxation (its bound certified independently), then on its point an integral
    vertex, the form's greedy rounding, and fix-and-solve."""
    from ..backends import LinearProgram
    from ..certificates import lp_certificate

    lp, solver = ctx.lp, ctx.solver
    relax = LinearProgram.build(lp.c, lp.A, lp.row_lower, lp.row_upper, lp.col_lower,
                                lp.col_upper)
    rs = solver.solve_lp(relax, time_limit=ctx.time_limit)
    _record(solver.name, rs.raw_status)
    if rs.status == "infeasible":
        raise InfeasibleError("the set-packing program has no feasible point",
                              backend=solver.name, status=rs.status, raw_status=rs.raw_status)
    if not (rs.status == "optimal" and rs.x is not None and rs.row_duals is not None):
        raise Decline(f"LP stopped ({rs.status})")
    lp_bound = lp_certificate(relax, rs.x, rs.row_duals).dual_bound  # min form
    if math.isfinite(lp_bound):
        ctx.bounds.append(lp_bound)
    x = np.array(rs.x)
    tries: list[tuple[str, Any]] = []
    if np.abs(x - np.round(x)).max(initial=0.0) <= INTEGRAL_TOL:
        tries.append((INTEGRAL_VERTEX, lambda: np.round(x)))
    if ctx.routes is not None:
        tries.append((GREEDY_ROUNDING, lambda: ctx.routes.rounder(x, ctx.col_upper)))
    tries.append((FIX_AND_SOLVE, lambda: _fix_and_solve(
        lp, x, ctx.form.agent, ctx.form.option, ctx.form.columns, solver, ctx.time_limit)))
    for name, attempt in tries:
        _step(name)
        found = ctx.exact(attempt())
        if found is not None:
            return found
    raise Decline("no exact rounding")


def _whole_milp_strategy(ctx: _PackingContext) -> tuple[np.ndarray, Any]:
    """The whole MILP; declines (to the incumbent) when it stopped before its proof."""
    lp, solver = ctx.lp, ctx.solver
    sol = solver.solve_lp(lp, time_limit=ctx.time_limit, gap_tol=MILP_SOLVER_GAP)
    _record(solver.name, sol.raw_status)
    if sol.status == "infeasible":
        raise InfeasibleError("the set-packing program has no feasible point",
                              backend=solver.name, status=sol.status, raw_status=sol.raw_status)
    if sol.usable and sol.x is not None:
        if math.isfinite(sol.mip_dual_bound):
            ctx.bounds.append(float(sol.mip_dual_bound))
        xm = np.round(np.array(sol.x))  # every column is integral
        if ctx.feasible(xm):
            ctx.incumbents.append(xm)
    if sol.status != "optimal":
        raise Decline(str(sol.status))
    if sol.x is not None and not math.isfinite(sol.mip_dual_bound):
        ctx.bounds.append(float(lp.c @ np.round(np.array(sol.x))))
    return ctx.best()


def _incumbent_strategy(ctx: _PackingContext) -> tuple[np.ndarray, Any]:
    """The best point found with the best bound: an honest certificate, possibly not ok."""
    return ctx.best()


def packing_plan(method: str, routes: bool) -> tuple[Strategy[_PackingContext, Any], ...]:
    """The plan of one set-packing solve (``method``: `SET_PACKING_METHODS`; ``routes``: the
    form has its own combinatorial relaxation). Each strategy answers only with a point that
    reaches the best bound found so far (optimal up to rounding); the relaxations' and the
    MILP's infeasibility verdicts are proofs (``exact``); the tail returns the best point
    found with its honest certificate.

    Examples
    --------
    >>> from fairalloc.plan import describe
    >>> describe(packing_plan("auto", True))
    ('knapsack-relaxation!', 'lp-relaxation!', 'milp!', 'incumbent!')
    >>> describe(packing_plan("milp", True))
    ('milp!', 'incumbent!')
    """
    plan: list[Strategy[_PackingContext, Any]] = []
    if method == "auto" and routes:
        plan.append(Strategy(RELAXATION, _knapsack_strategy, _packing_certificate, exact=True))
    if method != "milp":
        plan.append(Strategy(LP_RELAXATION, _lp_strategy, _packing_certificate, exact=True))
    return (*plan, Strategy(WHOLE_MILP, _whole_milp_strategy, _packing_certificate, exact=True),
            Strategy(INCUMBENT, _incumbent_strategy, _packing_certificate, exact=True))


def _milp(form: _Form, c: np.ndarray, active_opt: np.ndarray,
          count_row: tuple[np.ndarray, float] | None, time_limit: float | None,
          solver: Any, scale: float, incumbent: np.ndarray | None = None,
          method: str = "auto") -> tuple[Any, Any]:
    """Solve ``max c@x`` over the form (options of inactive agents fixed at 0), certified.

    Set packing over placement classes is nearly integral, so cheap exact routes come first
    (`packing_plan`, run by `fairalloc.plan.run_plan`): the form's own relaxation (a
    multiple-choice knapsack solved by dynamic programming), then the LP relaxation (its bound
    certified independently: the Lagrangian dual of `fairalloc.certificates.lp_certificate`
    at its row duals) with an integral vertex, a rounding, or the agents it decides fixed and
    the rest solved exactly. A point that reaches a valid bound is optimal. Otherwise the
    whole MILP is solved. Every bound met on the way is kept: the certificate compares the
    best feasible point found with the best bound (``scale``: the objective's data scale, the
    number of agents in it), so a time-limited solve returns its incumbent with an honest,
    possibly not-ok, certificate. ``incumbent`` is a known feasible point (kept if nothing
    better is found). Steps and hand-overs are logged (module docstring).
    """
    lp, col_upper = _program(form, c, active_opt, count_row)
    ctx = _PackingContext(form, c, active_opt, count_row, time_limit, solver, scale, lp,
                          col_upper, form.routes if method == "auto" else None)
    if lp.A.shape[1] == 0:  # nothing to choose (no useful bid): the empty assignment
        return np.zeros(0), ctx.certify(np.zeros(0), 0.0)
    if incumbent is not None and ctx.feasible(incumbent):
        ctx.incumbents.append(np.asarray(incumbent, dtype=float))
    try:
        return run_plan(packing_plan(method, ctx.routes is not None), ctx, _used(),
                        what="set-packing", backend=solver.name, infeasible_votes=1).result
    except CertificateError:  # the tail's best point, its certificate not ok
        return ctx.best()


def _fix_and_solve(lp: Any, x: np.ndarray, agent: np.ndarray, option: np.ndarray,
                   cols: SetPackingColumns, solver: Any, time_limit: float | None
                   ) -> np.ndarray | None:
    """Fix the bid of every agent the LP relaxation decides; find placements for all exactly.

    An agent is decided when its LP mass sits on one bid (possibly split over placements of
    it) or on nothing. Its other bids are fixed at 0; where to place the decided bids, and
    what the undecided agents win, is left to an exact MILP.
    """
    from ..backends import LinearProgram

    y = x[cols.choice]
    n = int(agent.max()) + 1 if cols.num_choices else 0
    total = np.bincount(agent, weights=y, minlength=n)
    _, opt_id = np.unique(option, return_inverse=True)
    mass = np.bincount(opt_id, weights=y)
    top = np.zeros(n)
    np.maximum.at(top, agent, mass[opt_id])
    decided = (top >= 1 - INTEGRAL_TOL) | (total <= INTEGRAL_TOL)
    keep = mass[opt_id] >= 1 - INTEGRAL_TOL  # the decided bid's columns stay free
    lower, upper = lp.col_lower.copy(), lp.col_upper.copy()
    shut = decided[agent] & ~keep
    upper[cols.choice] = np.where(shut, 0.0, upper[cols.choice])
    sub = LinearProgram.build(lp.c, lp.A, lp.row_lower, lp.row_upper, lower, upper,
                              integrality=lp.integrality)
    sol = solver.solve_lp(sub, time_limit=time_limit, gap_tol=MILP_SOLVER_GAP)
    _record(solver.name, sol.raw_status)
    if not sol.usable or sol.x is None:
        return None
    return np.round(np.array(sol.x))


@dataclass(frozen=True)
class _Packed:
    """A strategy's point of the lexicographic Nash program: ``x``, its certificate and
    whether its count of positive agents is proven."""

    x: np.ndarray
    cert: Any
    count_proven: bool = True


@dataclass(frozen=True, eq=False)
class _NashContext:
    """The lexicographic Nash program over the active options (`_nash`); ``spent`` counts
    the solves of the strategies that ran and ``tried`` keeps their points (reported only)."""

    form: _Form
    act_opt: np.ndarray
    zero_opt: np.ndarray
    c: np.ndarray
    scale: float
    time_limit: float | None
    solver: Any
    method: str
    relaxed: Relaxed | None
    spent: list[int] = dataclasses.field(default_factory=list)
    tried: list[_Packed] = dataclasses.field(default_factory=list)

    def count_row(self) -> np.ndarray:
        return self.form.columns.full(self.zero_opt.astype(float))

    def solve(self, count_row: tuple[np.ndarray, float] | None, solves: int = 1,
              incumbent: np.ndarray | None = None) -> _Packed:
        """``max c@x`` (`_milp`) with the count row, recorded."""
        self.spent.append(solves)
        x, cert = _milp(self.form, self.c, self.act_opt, count_row, self.time_limit,
                        self.solver, self.scale, incumbent=incumbent, method=self.method)
        out = _Packed(x, cert)
        self.tried.append(out)
        return out


def _nash_relaxed(ctx: _NashContext) -> _Packed:
    """The batched relaxation's placed optimum, when it reaches its bounds on this market."""
    row = (ctx.count_row(), float(ctx.relaxed[0])) if (ctx.relaxed is not None
                                                       and ctx.zero_opt.any()) else None
    assert ctx.relaxed is not None
    fast = _relaxed_point(ctx.form, ctx.c, ctx.act_opt, row, ctx.scale, ctx.relaxed)
    if fast is None:
        raise Decline("bound not met")
    ctx.spent.append(1)
    return _Packed(*fast)


def _nash_market(ctx: _NashContext) -> _Packed:
    """No agent values nothing at 0: ``max sum log v`` alone."""
    return ctx.solve(None)


def _nash_count_target(ctx: _NashContext) -> _Packed:
    """Every agent valuing nothing at 0 made positive (the usual case)."""
    target = np.unique(ctx.form.agent[ctx.zero_opt]).size
    try:
        return ctx.solve((ctx.count_row(), float(target)))
    except InfeasibleError as exc:
        raise Decline("infeasible") from exc
    except SolverError as exc:
        if _limited(ctx.time_limit, ctx.solver):  # a limit left no incumbent
            raise Decline("time limit") from exc
        raise


def _nash_count_milp(ctx: _NashContext) -> _Packed:
    """The count of positive agents maximised first (nothing is always feasible there), then
    ``sum log v`` at that count."""
    cols, zero_opt = ctx.form.columns, ctx.zero_opt
    target = np.unique(ctx.form.agent[zero_opt]).size
    count = ctx.count_row()
    ctx.spent.append(1)
    x1, cert1 = _milp(ctx.form, count, ctx.act_opt, None, ctx.time_limit, ctx.solver,
                      float(max(1, target)), method=ctx.method)
    got = int(round(float(x1[cols.choice][zero_opt].sum())))  # the incumbent's count
    out = ctx.solve((count, float(got)), incumbent=x1)
    out = dataclasses.replace(out, count_proven=bool(cert1.ok))
    ctx.tried[-1] = out
    return out


def _packed_certificate(ctx: _NashContext, out: _Packed) -> Any:
    return out.cert


def nash_plan() -> tuple[Strategy[_NashContext, _Packed], ...]:
    """The plan of one lexicographic Nash program (`_nash`): the batched relaxation's point
    (``knapsack-relaxation``, when the form has one), then ``market`` (no agent values nothing
    at 0) or ``count-target`` and ``count-milp`` (exact: it always has a point). Each set-packing
    solve runs its own `packing_plan`.

    Examples
    --------
    >>> from fairalloc.plan import describe
    >>> describe(nash_plan())
    ('knapsack-relaxation', 'market!', 'count-target', 'count-milp!')
    """
    return (Strategy(RELAXATION, _nash_relaxed, _packed_certificate,
                     applies=lambda ctx: ctx.relaxed is not None),
            Strategy(MARKET, _nash_market, _packed_certificate, exact=True,
                     applies=lambda ctx: not ctx.zero_opt.any()),
            Strategy(COUNT_TARGET, _nash_count_target, _packed_certificate,
                     applies=lambda ctx: bool(ctx.zero_opt.any())),
            Strategy(COUNT_MILP, _nash_count_milp, _packed_certificate, exact=True,
                     applies=lambda ctx: bool(ctx.zero_opt.any())))


def _nash(form: _Form, active: np.ndarray, time_limit: float | None, solver: Any,
          method: str = "auto", relaxed: Relaxed | None = None) -> _NashSolve:
    """Lexicographic Nash welfare over the active agents: most agents with positive value
    first (agents valuing the empty bundle at 0 count), then ``max sum_i log v_i``.

    ``bound`` is a proven upper bound on ``sum log v`` at the proven-best count; when the
    count itself is not proven (a time-limited count MILP), no bound is: ``inf``.
    ``relaxed`` is this market's lexicographic relaxation (`Relaxed`, from the form's
    ``loo_relaxations``): when its point reaches its bounds on the market's own program,
    that point is the optimum (its count is the relaxation's, hence the most possible) and
    no count target, count MILP or LP runs.
    """
    cols = form.columns
    act_opt = active[form.agent]
    finite_empty = np.isfinite(form.log_empty)
    zero_opt = act_opt & ~finite_empty[form.agent]
    base = np.where(finite_empty, form.log_empty, 0.0)
    weight = np.where(act_opt, form.logv - base[form.agent], 0.0)
    c = cols.full(weight)
    scale = float(max(1, int(active.sum())))
    ctx = _NashContext(form, act_opt, zero_opt, c, scale, time_limit, solver, method, relaxed)
    try:
        found = run_plan(nash_plan(), ctx, _used(), what="Nash welfare", backend=solver.name,
                         infeasible_votes=1).result
    except CertificateError:  # the last strategy's point, its certificate not ok
        if not ctx.tried:
            raise
        found = ctx.tried[-1]
    x, cert, count_proven, solves = found.x, found.cert, found.count_proven, sum(ctx.spent)
    y = x[cols.choice] > 0.5
    choice = np.full(form.num_agents, -1)
    choice[form.agent[y]] = np.flatnonzero(y)
    const = float(base[active & finite_empty].sum())
    sumlog = float(weight[y].sum()) + const
    bound = (cert.dual_bound + const) if (count_proven and math.isfinite(cert.dual_bound)) \
        else math.inf
    won = int(np.count_nonzero(y & zero_opt))
    return _NashSolve(choice, x, won, sumlog, max(bound, sumlog),
                      bool(count_proven and cert.ok), solves, scale)


def _loo_nash(ctx: tuple[_Form, float | None, Any, str, list[Relaxed] | None], i: int
              ) -> tuple[int, float, float, bool, int, float]:
    form, time_limit, solver, method, relaxed = ctx
    active = np.ones(form.num_agents, dtype=bool)
    active[i] = False
    if not active.any():
        return 0, 0.0, 0.0, True, 0, 1.0
    r = _nash(form, active, time_limit, solver, method,
              None if relaxed is None else relaxed[i + 1])
    return r.count, r.sumlog, r.bound, r.optimal, r.solves, r.scale


@dataclass(frozen=True)
class _PAOutcome:
    pf: _NashSolve
    value: np.ndarray
    fraction: np.ndarray
    fraction_error: np.ndarray
    loo_sumlog: np.ndarray
    loo_bound: np.ndarray
    optimal: bool
    solves: int
    certificate: Certificate  # the PF certificate, or the weakest one that is not ok


def _nash_certificate(primal: float, bound: float, scale: float) -> Certificate:
    """Certificate of a lexicographic Nash-welfare MILP (``sum log v``; gap over ``scale``)."""
    gap = max(bound - primal, 0.0) if math.isfinite(bound) else math.inf
    return Certificate(kind="milp", primal_value=float(primal), dual_bound=float(bound),
                       gap=gap, primal_residual=0.0, gap_tol=MILP_GAP_TOL, feas_tol=FEAS_TOL,
                       scale=float(scale))


def _log_unit(values: np.ndarray) -> tuple[int, float]:
    """Power-of-two unit of a set of valuations: ``(e, e log 2)`` with ``max v / 2^e`` in
    [0.5, 1). Dividing every valuation by ``2^e`` is exact and shifts ``sum log v`` over the
    positive agents by a constant per agent: the lexicographic optimum does not move."""
    pos = values[values > 0]
    if pos.size == 0:
        return 0, 0.0
    e = int(np.frexp(pos.max())[1])
    return e, e * _LOG2


def _partial_allocation_milp(form: _Form, *, time_limit: float | None, solver: Any,
                             workers: int, log_unit: float = 0.0, method: str = "auto"
                             ) -> _PAOutcome:
    """PF and ``n`` leave-one-out MILPs, and the fractions ``c_i`` (lexicographic form).

    ``form`` holds valuations divided by ``exp(log_unit)`` (see `_log_unit`); fractions
    are computed in those units and objectives and bounds are reported in the caller's.
    ``method`` selects the routes of every solve (`SET_PACKING_METHODS`, module docstring).
    """
    n = form.num_agents
    batch = getattr(form.routes, "loo_relaxations", None) if method == "auto" else None
    relaxed: list[Relaxed] | None = None
    if batch is not None:
        finite = np.isfinite(form.log_empty)
        weight = form.logv - np.where(finite, form.log_empty, 0.0)[form.agent]
        relaxed = batch(weight, ~finite[form.agent])
    pf = _nash(form, np.ones(n, dtype=bool), time_limit, solver, method,
               None if relaxed is None else relaxed[0])
    logv = np.r_[form.logv, 0.0]  # (a sentinel for agents without a winning option)
    value_log = np.where(pf.choice >= 0, logv[np.maximum(pf.choice, 0)], form.log_empty)
    positive = np.isfinite(value_log)
    zero_empty = ~np.isfinite(form.log_empty)
    loo = _parallel_map(_loo_nash, (form, time_limit, solver, method, relaxed), np.arange(n),
                        workers)
    cnt = np.array([r[0] for r in loo])
    lo = np.array([r[1] for r in loo], dtype=float)
    hi = np.array([r[2] for r in loo], dtype=float)
    ok = np.array([r[3] for r in loo], dtype=bool)
    loo_scale = np.array([r[5] for r in loo], dtype=float)
    solves = pf.solves + int(sum(r[4] for r in loo))
    # numerator: the others' valuations at the PF allocation
    num_cnt = pf.count - (positive & zero_empty).astype(int)
    num_log = pf.sumlog - np.where(positive, value_log, 0.0)
    more = cnt > num_cnt  # removing i lets another agent get a positive value: c_i = 0
    with np.errstate(over="ignore", invalid="ignore"):
        frac = np.where(more, 0.0, np.exp(np.minimum(num_log - np.maximum(lo, num_log), 0.0)))
        err = np.where(more, 0.0, np.expm1(np.maximum(hi - np.maximum(lo, num_log), 0.0)))
    # back to the caller's units: each positive agent's log valuation shifts by log_unit
    finite_empty = np.isfinite(form.log_empty)
    pf_shift = float(np.count_nonzero(positive)) * log_unit
    loo_shift = ((np.count_nonzero(finite_empty) - finite_empty) + cnt) * log_unit
    pf = dataclasses.replace(pf, sumlog=pf.sumlog + pf_shift, bound=pf.bound + pf_shift)
    lo, hi = lo + loo_shift, hi + loo_shift
    cert = _nash_certificate(pf.sumlog, pf.bound, pf.scale)
    certs = [cert] + [_nash_certificate(lo[i], hi[i], loo_scale[i]) for i in range(n)]
    flags = [pf.optimal] + ok.tolist()
    optimal = all(f and c.ok for f, c in zip(flags, certs))
    if not optimal:  # report the first certificate that does not prove its solve
        cert = next(c for f, c in zip(flags, certs) if not (f and c.ok))
        if cert.ok:  # proven gap but an unproven count: no valid bound
            cert = _nash_certificate(cert.primal_value, math.inf, cert.scale or 1.0)
    return _PAOutcome(pf, np.exp(value_log), frac, err, lo, hi, optimal, solves, cert)

