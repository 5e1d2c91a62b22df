"""Solving composed cvxpy programs with explicitly named solvers, and certifying them.

cvxpy is fairalloc's composition layer: builders expose cvxpy variables and constraints, a user
adds constraints or objective terms, and `solve_cvxpy` solves the result. It never lets cvxpy
choose a solver: the program is compiled for a named solver (``cp.CLARABEL``, ``cp.HIGHS``) to
its standard form ``min c@x  s.t.  A x + s = b, s in K`` and certified from that data itself
(`fairalloc._conic.conic_certificate`; an LP solved by HiGHS by
`fairalloc.certificates.lp_certificate`), never from the solver's status.

That is the certificate of the solver's raw vectors. Builders certify the point they *return*
instead (`certify_point`, through ``solve_cvxpy(clean=...)``): the returned point (time
fractions clipped to ``[0, 1]``, negative round-off removed, auxiliary level variables
recomputed from the allocation) is written into the cvxpy variables, the objective is evaluated
there by cvxpy, and every constraint of the program -- the builder's and the user's -- is judged
at the magnitude of its own terms (`constraint_residual`): ``x[0, 0] <= cap`` against
``max(|x[0, 0]|, |cap|)``, whatever the scale of the rest of the program (the raw cone residual
divides by the program's largest variable, which lets a cap of ``1e-9`` of a good's supply be
exceeded a hundredfold). The dual bound and dual residual are the raw ones. Builders whose
dual has a closed form (Eisenberg-Gale, LPs) use their exact certificates where no constraint
was added.

A composed program is solved by a plan (`fairalloc.plan`, ``solve_cvxpy(robust=True)``) whose
strategies are, in order (each a step of ``stats.path``; every point certified on the
ORIGINAL program):

===================== ======================================================================
step                   what it does
===================== ======================================================================
``cvxpy``              Clarabel on the program as compiled (solver tolerances `SOLVER_TOL`)
``cvxpy-unit-scale``   Clarabel on an exact copy at unit scale (`fairalloc._conic.unit_scaling`:
                       every variable and row by powers of two, read from the bounds in the
                       data and the previous step's point -- the iterate a failed solve
                       stopped at too; unbalanced second-order blocks rotated), mapped back
``cvxpy-tight``        the same copy with tolerances `TIGHT_TOL` and `TIGHT_MAX_ITER` iterations
``cvxpy-highs``        a linear program only (zero and non-negative cones): HiGHS through
                       cvxpy (``solver="HIGHS"``), its vertex and row duals certified by the LP
                       certificate
===================== ======================================================================

The first certified point is the answer; an infeasibility verdict is believed when two steps
agree. When none certifies, the error (``CertificateError`` / ``SolverError``) says that no
solver resolved the program to the certificate's tolerance and lists every step's verdict
(``exc.verdicts``); a point is never returned uncertified, except after a solve stopped at the
caller's ``time_limit`` (the best point seen is returned with its failing certificate, for the
caller to report as a time-limited result).
"""

from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np
import scipy.sparse as sp

from ._conic import column_bounds, conic_certificate, is_linear, unit_scaling
from ._validation import as_bool, as_time_limit, as_tolerance
from .backends import USABLE, HighsBackend, LinearProgram, SolveStatus, get_backend
from .certificates import lp_certificate
from .errors import CertificateError, FairallocError, InfeasibleError, InputError, SolverError
from .plan import Decline, Strategy, run_plan
from .results import Certificate, SolveStats
from .solvelog import SolveLog, compress
from .tolerances import FEAS_TOL, GAP_TOL, SOLVER_TOL

__all__ = ["CVXPY_STEP", "HIGHS_STEP", "TIGHT_STEP", "UNIT_SCALE_STEP", "certify_point",
           "conic_certificate", "constraint_residual", "restore_point", "snapshot_point",
           "solve_cvxpy", "value_at"]

CVXPY_STEP = "cvxpy"  # path step: Clarabel on the program as compiled
UNIT_SCALE_STEP = "cvxpy-unit-scale"  # path step: Clarabel on the exact unit-scaled copy
TIGHT_STEP = "cvxpy-tight"  # path step: the unit-scaled copy with tighter solver tolerances
HIGHS_STEP = "cvxpy-highs"  # path step: HiGHS on a linear program, the LP certificate
HIGHS = "highs"  # the LP backend of ``cvxpy-highs`` (on cvxpy's compilation for HiGHS)
#: PERFORMANCE knob: the gap and feasibility tolerances asked of Clarabel by ``cvxpy-tight``
#: (what is certified is unchanged: `GAP_TOL`, `FEAS_TOL`)
TIGHT_TOL = 1e-12
#: PERFORMANCE knob: Clarabel's iteration limit in ``cvxpy-tight`` (its default is 200)
TIGHT_MAX_ITER = 400

# --------------------------------------------------------------------------------------------
# the returned point, judged constraint by constraint at its own scale
# --------------------------------------------------------------------------------------------
def value_at(expr: Any) -> Any:
    """``expr.value`` at its variables' current values (``None`` when a variable has none),
    evaluated without numpy floating-point warnings.

    An expression that is infinite at a boundary of its domain has that value there: a job
    that gets nothing has ``rho = inv_pos(0) = inf``, ``log(0) = -inf``; a ``0 * inf`` is
    ``nan``. Those are values the callers judge (a certificate with a non-finite value or
    residual fails), not events to print: a solver is silent on a valid input. The one place
    fairalloc reads the value of a cvxpy expression that may be evaluated at such a point.

    Examples
    --------
    >>> import cvxpy as cp
    >>> x = cp.Variable(2)
    >>> x.value = [0.0, 2.0]
    >>> value_at(cp.inv_pos(x))
    array([inf, 0.5])
    """
    with np.errstate(all="ignore"):  # +-inf / nan at a boundary are the values, judged later
        return expr.value


def _magnitude(expr: Any) -> np.ndarray | None:
    """Elementwise magnitude of the terms ``expr`` adds up at its variables' current values.

    For an affine expression ``sum_j a_j v_j + c`` it is ``sum_j |a_j| |v_j| + |c|`` (every
    coefficient, constant and variable replaced by its absolute value), so a sum whose terms
    cancel (a level row ``C x - theta`` at its optimum) is still measured by its terms; a
    non-affine atom (``log``, ``inv_pos``, ``max``, ...) counts as one term, its value. ``None``
    when a variable has no value.
    """
    from cvxpy.atoms.affine.unary_operators import NegExpression
    from cvxpy.expressions.leaf import Leaf

    if isinstance(expr, Leaf) or not expr.is_affine() or not expr.args:
        val = value_at(expr)
        return None if val is None else np.abs(np.asarray(_dense(val), dtype=float))
    if isinstance(expr, NegExpression):
        return _magnitude(expr.args[0])
    mags = []
    for arg in expr.args:
        if arg.is_constant():  # a coefficient: its absolute value (sparse stays sparse)
            val = arg.value
            mags.append(abs(val) if sp.issparse(val) else np.abs(np.asarray(val, dtype=float)))
            continue
        mag = _magnitude(arg)
        if mag is None:
            return None
        mags.append(mag)
    # an affine atom is linear in its non-constant arguments with its constants as
    # coefficients: applied to magnitudes it gives sum |coefficient| |term|
    return np.abs(np.asarray(_dense(expr.numeric(mags)), dtype=float))


def _dense(val: Any) -> Any:
    return val.toarray() if sp.issparse(val) else val


def _relative(viol: np.ndarray, mag: np.ndarray) -> float:
    """Largest ``viol / mag`` over the entries with a violation (``inf`` for a violation of
    nothing, which cannot happen for a violation bounded by its own terms)."""
    viol = np.asarray(viol, dtype=float)
    if not np.all(np.isfinite(viol)):
        return float("inf")
    mag = np.broadcast_to(np.asarray(mag, dtype=float), viol.shape)
    bad = viol > 0
    if not bad.any():
        return 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(mag[bad] > 0, viol[bad] / mag[bad], np.inf)
    return float(np.max(rel))


def _constraint_violation(con: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """``(violation, magnitude)`` of one cvxpy constraint at the current values, elementwise
    where the constraint is elementwise (one entry for a cone); ``None`` if not evaluable."""
    from cvxpy.constraints import Equality, Inequality, NonNeg, NonPos, Zero

    if isinstance(con, (Inequality, Equality)):
        lhs, rhs = con.args
        lv, rv = value_at(lhs), value_at(rhs)
        ml, mr = _magnitude(lhs), _magnitude(rhs)
        if lv is None or rv is None or ml is None or mr is None:
            return None
        diff = np.asarray(_dense(lv), dtype=float) - np.asarray(_dense(rv), dtype=float)
        viol = np.maximum(diff, 0.0) if isinstance(con, Inequality) else np.abs(diff)
        return viol, np.maximum(ml, mr)
    if isinstance(con, (NonNeg, NonPos, Zero)):
        val, mag = value_at(con.args[0]), _magnitude(con.args[0])
        if val is None or mag is None:
            return None
        val = np.asarray(_dense(val), dtype=float)
        viol = (np.maximum(-val, 0.0) if isinstance(con, NonNeg)
                else np.maximum(val, 0.0) if isinstance(con, NonPos) else np.abs(val))
        return viol, mag
    # a cone (second-order, exponential, ...): cvxpy's own residual against the largest term
    mags = [_magnitude(a) for a in con.args]
    if any(m is None for m in mags):
        return None
    viol = np.atleast_1d(np.asarray(con.violation(), dtype=float))
    return viol, np.full(viol.shape, max(float(np.max(m, initial=0.0)) for m in mags))


def _bound_violation(var: Any) -> float:
    """Sign attributes of a variable (``nonneg``, ``pos``, ``nonpos``, ``neg``): violation
    relative to the variable's largest entry, as a linear program's column bounds are judged
    (`fairalloc.certificates.lp_primal_residual`)."""
    attrs = var.attributes
    val = var.value
    if val is None:
        return float("inf")
    val = np.asarray(_dense(val), dtype=float)
    if not np.all(np.isfinite(val)):
        return float("inf")
    low = attrs.get("nonneg") or attrs.get("pos")
    high = attrs.get("nonpos") or attrs.get("neg")
    viol = np.zeros(val.shape)
    if low:
        viol = np.maximum(viol, -val)
    if high:
        viol = np.maximum(viol, val)
    return _relative(viol, np.full(val.shape, float(np.max(np.abs(val), initial=0.0))))


def constraint_residual(constraints: Any, variables: Any = ()) -> float:
    """Largest violation of cvxpy ``constraints`` at their variables' current values, each
    entry relative to the magnitude of its own terms (`_magnitude`), and of the sign
    attributes of ``variables`` relative to each variable's largest entry.

    ``x <= cap`` is judged against ``max(|x|, |cap|)``, whatever the size of the rest of the
    program; ``inf`` when a constraint cannot be evaluated (a variable without a value).
    Nothing the solver reports enters it.

    Examples
    --------
    >>> import cvxpy as cp
    >>> x = cp.Variable(2)
    >>> x.value = [2e-9, 1.0]
    >>> round(constraint_residual([x[0] <= 1e-9, x[1] <= 2.0]), 6)
    0.5
    """
    worst = 0.0
    for con in constraints:
        try:
            with np.errstate(all="ignore"):  # inf / nan terms are judged below
                out = _constraint_violation(con)
        except Exception:  # an atom that cannot be evaluated numerically
            out = None
        if out is None:
            return float("inf")
        worst = max(worst, _relative(*out))
    for var in variables:
        worst = max(worst, _bound_violation(var))
    return worst


def certify_point(problem: Any, bound: Certificate) -> Certificate:
    """The certificate of the point held by ``problem``'s variables.

    ``primal_value`` is ``problem``'s objective evaluated by cvxpy at the variables' values
    (the point the caller returns, after any clean-up), ``primal_residual`` the residual of
    `constraint_residual`; the dual bound, dual residual, scale and tolerances are ``bound``'s
    (a `conic_certificate` of a solve of the same program, or of one with the same feasible
    set and objective). The gap is ``|dual_bound - primal_value|``: a point better than the
    bound can only be infeasible or the bound wrong, and neither is certified.

    Examples
    --------
    >>> import cvxpy as cp
    >>> x = cp.Variable(nonneg=True)
    >>> prob = cp.Problem(cp.Maximize(x), [x <= 2.0])
    >>> x.value = 2.0
    >>> bound = Certificate("conic", primal_value=2.0, dual_bound=2.0, gap=0.0,
    ...                     primal_residual=0.0)
    >>> certify_point(prob, bound).ok
    True
    >>> x.value = 2.5  # beyond the constraint at its own scale: 0.5 / 2.5
    >>> round(certify_point(prob, bound).primal_residual, 6)
    0.2
    """
    try:  # log 0 = -inf at the point: a value, not certified below
        value = value_at(problem.objective)
        value = float("nan") if value is None else float(np.asarray(value, dtype=float))
    except Exception:  # an objective that cannot be evaluated at the point
        value = float("nan")
    residual = constraint_residual(problem.constraints, problem.variables())
    dual = float(bound.dual_bound)
    gap = abs(dual - value) if np.isfinite(value) and np.isfinite(dual) else float("inf")
    return Certificate(kind=bound.kind, primal_value=value, dual_bound=dual, gap=gap,
                       primal_residual=residual,
                       dual_residual=bound.dual_residual, gap_tol=bound.gap_tol,
                       feas_tol=bound.feas_tol, scale=bound.scale)


def snapshot_point(problem: Any) -> list[tuple[Any, Any]]:
    """The values of ``problem``'s variables and dual variables (`restore_point` puts them
    back: a caller that tries a second point keeps the first).

    Examples
    --------
    >>> import cvxpy as cp
    >>> x = cp.Variable()
    >>> prob = cp.Problem(cp.Minimize(x), [x >= 1])
    >>> x.value = 1.0
    >>> kept = snapshot_point(prob)
    >>> x.value = 3.0
    >>> restore_point(kept)
    >>> float(x.value)
    1.0
    """
    leaves = [*problem.variables(), *(dv for c in problem.constraints for dv in c.dual_variables)]
    return [(leaf, None if leaf.value is None else np.array(leaf.value, copy=True))
            for leaf in leaves]


def restore_point(snapshot: list[tuple[Any, Any]]) -> None:
    """Write the values saved by `snapshot_point` back (bypassing cvxpy's value checks: they
    are the values a solve wrote)."""
    for leaf, value in snapshot:
        leaf.save_value(value)


# --------------------------------------------------------------------------------------------
# the solve plan
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Point:
    """One strategy's point (the variables' and dual variables' values it left) and the
    certificate of its raw vectors (the dual bound `certify_point` uses)."""

    snapshot: list[tuple[Any, Any]]
    bound: Certificate


@dataclass
class _Context:
    """What every strategy reads: the problem and the caller's options; the log; the compiled
    data (once per solver); the last primal point a solve returned (``reference``: the unit
    scaling reads the magnitudes of the variables that have no bound from it) and the best
    certificate seen with its point (returned only when a solve ran out of ``time_limit``)."""

    problem: Any
    clean: Callable[[], None] | None
    report: Callable[[Certificate], Certificate] | None
    backend: str
    gap_tol: float
    feas_tol: float
    time_limit: float | None
    scale: float | None
    verbose: bool
    log: SolveLog
    highs: bool
    reference: np.ndarray | None = None
    out_of_time: bool = False
    backends: list[str] = field(default_factory=list)
    latest: Certificate | None = None
    cause: BaseException | None = None  # the last exception a solver or cvxpy raised
    best: tuple[Certificate, Certificate, list[tuple[Any, Any]]] | None = None
    _compiled: dict[str, tuple[Any, Any, Any]] = field(default_factory=dict)
    _bounds: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    def compiled(self, solver: str) -> tuple[dict[str, Any], Any, Any]:
        """``(data, chain, inverse)`` of the problem compiled for ``solver`` (once)."""
        if solver not in self._compiled:
            # quadratic terms as cones (the certificates read no quadratic objective); an
            # "InsufficientProgress" point read back (accept_unknown) for the certificate
            opts: dict[str, Any] = {"use_quad_obj": False}
            if solver == "CLARABEL":
                opts.update(_accept_unknown())
            try:
                self._compiled[solver] = self.problem.get_problem_data(solver, solver_opts=opts)
            except FairallocError:
                raise
            except Exception as exc:
                self.cause = exc
                raise SolverError(f"cvxpy could not compile the program for {solver}: "
                                  f"{type(exc).__name__}: {exc}", backend=self.backend,
                                  raw_status="exception") from exc
        return self._compiled[solver]

    def bounds(self, solver: str) -> tuple[np.ndarray, np.ndarray]:
        """The column bounds of the compiled data (`fairalloc._conic.column_bounds`)."""
        key = f"bounds:{solver}"
        if key not in self._bounds:
            self._bounds[key] = column_bounds(self.compiled(solver)[0])
        return self._bounds[key]

    def ran(self, backend: str, status: str, iterations: int, canonical: SolveStatus,
            started: float) -> None:
        self.log.solved(backend, status, iterations, status=canonical)
        if backend not in self.backends:
            self.backends.append(backend)
        limited = canonical in (SolveStatus.TIME_LIMIT, SolveStatus.ITERATION_LIMIT)
        if (limited and self.time_limit is not None
                and time.perf_counter() - started >= self.time_limit):
            self.out_of_time = True

    def linear(self) -> bool:
        import cvxpy as cp

        return self.highs and is_linear(self.compiled(cp.CLARABEL)[0])


@functools.cache
def _accept_unknown() -> dict[str, bool]:
    """``{"accept_unknown": True}`` where cvxpy's Clarabel interface reads back the point of an
    "InsufficientProgress" stop (cvxpy >= 1.8); older versions hand every option to Clarabel's
    settings, which refuse it (such a stop then fails the step, and the plan goes on)."""
    from cvxpy.reductions.solvers.conic_solvers.clarabel_conif import CLARABEL

    return {"accept_unknown": True} if hasattr(CLARABEL, "ACCEPT_UNKNOWN") else {}


def _live(ctx: _Context) -> None:
    if ctx.out_of_time:
        raise Decline(f"the time limit ({ctx.time_limit:g} s) was reached")


def _clarabel(ctx: _Context, *, scaled: bool, tight: bool) -> _Point:
    """One Clarabel solve of the compiled program (``scaled``: of its unit-scaled copy,
    `fairalloc._conic.unit_scaling`, mapped back), read back into the problem."""
    import cvxpy as cp

    _live(ctx)
    data, chain, inverse = ctx.compiled(cp.CLARABEL)
    tol = TIGHT_TOL if tight else SOLVER_TOL
    # accept_unknown: cvxpy reads back the point of an "InsufficientProgress" stop too (it
    # would raise instead); like every usable point it goes to the certificate, which decides
    opts: dict[str, Any] = {"tol_gap_abs": tol, "tol_gap_rel": tol, "tol_feas": tol,
                            "use_quad_obj": False, **_accept_unknown()}
    if tight:
        opts["max_iter"] = TIGHT_MAX_ITER
    if ctx.time_limit is not None:
        opts["time_limit"] = float(ctx.time_limit)
    scaling = unit_scaling(data, ctx.reference) if scaled else None
    solve_data = data if scaling is None else scaling.apply(data)
    started = time.perf_counter()
    try:
        raw = chain.solve_via_data(ctx.problem, solve_data, False, ctx.verbose, opts)
    except FairallocError:
        raise
    except Exception as exc:  # cvxpy.error.SolverError, numerical errors ...
        ctx.cause = exc
        ctx.ran(ctx.backend, "exception", 0, SolveStatus.ERROR, started)
        raise SolverError(f"cvxpy/clarabel raised {type(exc).__name__}: {exc}",
                          backend=ctx.backend, raw_status="exception") from exc
    status = str(getattr(raw, "status", ""))
    canonical = get_backend(ctx.backend, need="cvxpy").canonical_status(status)
    ctx.ran(ctx.backend, status, int(getattr(raw, "iterations", 0)), canonical, started)
    if canonical == SolveStatus.INFEASIBLE:
        raise InfeasibleError(f"the program is infeasible (clarabel: {status})",
                              backend=ctx.backend, status=status)
    xs = np.asarray(getattr(raw, "x", []), dtype=float)
    zs = np.asarray(getattr(raw, "z", []), dtype=float)
    A = data["A"]
    if (canonical not in USABLE or xs.size != A.shape[1] or zs.size != A.shape[0]
            or not np.all(np.isfinite(xs)) or not np.all(np.isfinite(zs))):
        if xs.size == A.shape[1] and np.all(np.isfinite(xs)) and np.any(xs):
            # no answer, but the iterate it stopped at is the next step's reference for the
            # unit scaling (its magnitudes, its unbalanced cone blocks: a binding cap leaves a
            # hyperbolic cone 1e12 out of balance, on which every unscaled solve fails)
            ctx.reference = xs if scaling is None else scaling.col * xs
        raise SolverError(f"clarabel failed: {status}", backend=ctx.backend, status=status)
    x, z = (xs, zs) if scaling is None else scaling.unscale(xs, zs)
    # the point on its columns' bounds (singleton rows: a cap of 0 met at 0, not at 1e-12)
    lo, hi = ctx.bounds(cp.CLARABEL)
    x = np.minimum(np.maximum(x, lo), hi)
    ctx.reference = x
    c = np.asarray(data["c"], dtype=float)
    back = SimpleNamespace(status=status, x=x, z=z, s=np.asarray(data["b"]) - A @ x,
                           iterations=getattr(raw, "iterations", 0),
                           solve_time=getattr(raw, "solve_time", 0.0), obj_val=float(c @ x))
    kw = {"maximize": _maximize(ctx.problem), "offset": _offset(data), "gap_tol": ctx.gap_tol,
          "feas_tol": ctx.feas_tol, "scale": ctx.scale}
    # the raw certificate; of a scaled solve in its balanced coordinates (`UnitScaling`)
    cert = _read_back(ctx, chain, inverse, back, (lambda: conic_certificate(data, x, z, **kw))
                      if scaling is None else
                      (lambda: scaling.certificate(solve_data, xs, zs, **kw)))
    return _Point(snapshot_point(ctx.problem), cert)


def _highs(ctx: _Context) -> _Point:
    """A linear program compiled by cvxpy for HiGHS (``cp.HIGHS``: rows, column bounds),
    solved by fairalloc's HiGHS backend (its thread count, silence and status map: cvxpy's
    own call would start HiGHS' process-wide scheduler on every core, which then refuses
    fairalloc's single-thread runs, and print HiGHS' banner) without presolve (which called
    a kept-objective row met to 2.5e-12 "Infeasible"), read back through cvxpy's HiGHS
    interface and certified by the LP certificate of the column values and row duals."""
    import cvxpy as cp

    _live(ctx)
    if not hasattr(cp, "HIGHS"):  # (cvxpy's HiGHS interface is newer than its lower bound)
        raise Decline(f"cvxpy {cp.__version__} compiles no program for HiGHS")
    data, chain, inverse = ctx.compiled(cp.HIGHS)
    lp = _linear_program(data)
    started = time.perf_counter()
    sol = HighsBackend(presolve=False).solve_lp(lp, time_limit=ctx.time_limit,
                                                verbose=ctx.verbose)
    status = sol.raw_status or str(sol.status)
    ctx.ran(HIGHS, status, sol.iterations, sol.status, started)
    if sol.status == SolveStatus.INFEASIBLE:
        raise InfeasibleError(f"the program is infeasible (highs: {status})", backend=HIGHS,
                              status=status)
    x = None if sol.x is None else np.asarray(sol.x, dtype=float)
    y = None if sol.row_duals is None else np.asarray(sol.row_duals, dtype=float)
    if (not sol.usable or x is None or y is None or y.size != lp.shape[0]
            or not np.all(np.isfinite(x)) or not np.all(np.isfinite(y))):
        raise SolverError(f"highs failed: {status}", backend=HIGHS, status=status)
    # the results cvxpy's HiGHS interface reads back (`HIGHS.invert`)
    back = {"model_status": "kOptimal", "run_time": sol.seconds,
            "solution": SimpleNamespace(col_value=x, row_dual=y),
            "info": SimpleNamespace(objective_function_value=float(lp.c @ x),
                                    ipm_iteration_count=sol.iterations,
                                    crossover_iteration_count=0, pdlp_iteration_count=0,
                                    qp_iteration_count=0, simplex_iteration_count=0)}
    cert = _read_back(ctx, chain, inverse, back, lambda: lp_certificate(
        lp, x, y, maximize=_maximize(ctx.problem), gap_tol=ctx.gap_tol, feas_tol=ctx.feas_tol,
        scale=ctx.scale if ctx.scale is not None else _lp_scale(lp, x, y)))
    return _Point(snapshot_point(ctx.problem), cert)


def _read_back(ctx: _Context, chain: Any, inverse: Any, raw: Any,
               certify: Callable[[], Certificate]) -> Certificate:
    """Write a solve's point into the problem's variables and certify its raw vectors."""
    try:
        with warnings.catch_warnings():  # "may be inaccurate": the certificate decides
            warnings.simplefilter("ignore")
            ctx.problem.unpack_results(raw, chain, inverse)
        return certify()
    except FairallocError:
        raise
    except Exception as exc:
        ctx.cause = exc
        raise SolverError(f"could not read the solution back: {type(exc).__name__}: {exc}",
                          backend=ctx.backend) from exc


def _maximize(problem: Any) -> bool:
    import cvxpy as cp

    return isinstance(problem.objective, cp.Maximize)


def _linear_program(data: dict[str, Any]) -> LinearProgram:
    """The compiled LP ``min c@x  s.t.  A x + s = b``, ``s`` in zero then non-negative cones,
    with the column bounds cvxpy passes HiGHS, as a `LinearProgram`."""
    b = np.asarray(data["b"], dtype=float)
    zero = int(data["dims"].zero)
    lower = np.concatenate([b[:zero], np.full(b.size - zero, -np.inf)])
    lb, ub = data.get("lower_bounds"), data.get("upper_bounds")
    return LinearProgram.build(np.asarray(data["c"], dtype=float), sp.csr_matrix(data["A"]),
                               row_lower=lower, row_upper=b,
                               col_lower=-np.inf if lb is None else lb,
                               col_upper=np.inf if ub is None else ub, offset=_offset(data))


def _lp_scale(lp: LinearProgram, x: np.ndarray, y: np.ndarray) -> float:
    """The LP certificate's gap scale, as the conic certificate's: the magnitude of the terms
    the primal value and the bound add up."""
    rows = np.where(y > 0, lp.row_lower, np.where(y < 0, lp.row_upper, 0.0))
    with np.errstate(invalid="ignore"):
        terms = np.where(np.isfinite(rows), np.abs(y * rows), 0.0)
    return max(float(np.sum(np.abs(lp.c * x))), float(np.sum(terms)), abs(lp.offset))


def _certify(ctx: _Context, point: _Point) -> Certificate:
    """The certificate of a strategy's point on the original program: the point written back
    into the variables, cleaned by the caller (``clean``) and judged by `certify_point` (the
    raw-vector certificate without ``clean``), then read as the caller reports it
    (``report``; that is the verdict the plan acts on). ``ctx.latest`` keeps the
    certificate before ``report``."""
    restore_point(point.snapshot)
    if ctx.clean is None:
        cert = point.bound
    else:
        ctx.clean()
        cert = certify_point(ctx.problem, point.bound)
    judged = cert if ctx.report is None else ctx.report(cert)
    ctx.latest = cert
    if ctx.best is None or _distance(judged) < _distance(ctx.best[0]):
        ctx.best = (judged, cert, snapshot_point(ctx.problem))
    return judged


def _distance(cert: Certificate) -> float:
    """How far a certificate is from passing, in units of its tolerances (0: it passes)."""
    if cert.ok:
        return 0.0
    gap = cert.relative_gap / cert.gap_tol if cert.gap_tol > 0 else cert.relative_gap
    res = cert.primal_residual / cert.feas_tol if cert.feas_tol > 0 else cert.primal_residual
    out = max(gap, res, cert.dual_residual / cert.feas_tol if cert.feas_tol > 0 else 0.0)
    return out if np.isfinite(out) else float("inf")


PLAN: tuple[Strategy[_Context, _Point], ...] = (
    Strategy(CVXPY_STEP, lambda c: _clarabel(c, scaled=False, tight=False), _certify,
             exact=True),
    Strategy(UNIT_SCALE_STEP, lambda c: _clarabel(c, scaled=True, tight=False), _certify,
             exact=True),
    Strategy(TIGHT_STEP, lambda c: _clarabel(c, scaled=True, tight=True), _certify,
             exact=True),
    Strategy(HIGHS_STEP, _highs, _certify, applies=_Context.linear, exact=True),
)


def solve_cvxpy(
    problem: Any,
    *,
    backend: Any = "clarabel",
    gap_tol: float = GAP_TOL,
    feas_tol: float = FEAS_TOL,
    time_limit: float | None = None,
    method: str = CVXPY_STEP,
    scale: float | None = None,
    verbose: bool = False,
    clean: Callable[[], None] | None = None,
    report: Callable[[Certificate], Certificate] | None = None,
    robust: bool = False,
    highs: bool = True,
    log: SolveLog | None = None,
    what: str = "composed",
) -> tuple[SolveStats, Certificate]:
    """Solve a cvxpy problem with explicitly named solvers and certify it.

    ``backend`` is the conic solver (only Clarabel returns the raw conic vectors the
    certificate needs). Without ``clean`` the certificate is `conic_certificate` of the
    solver's raw vectors; with ``clean`` -- a callable that writes the point the caller will
    return into the problem's variables (time fractions clipped to ``[0, 1]``, a level
    variable set from the allocation, ...) -- it is `certify_point` of that point: the
    objective evaluated there and every constraint judged at its own scale
    (`constraint_residual`), with the raw dual bound. ``report`` maps that certificate to
    the one the caller reports (a makespan's from that of the rate maximised); the plan
    judges points by it, and the certificate returned is the one before ``report``.

    ``robust=False``: one Clarabel solve (step ``method``); its certificate is returned
    whatever its verdict, for the caller to judge. ``robust=True``: the plan of the module
    docstring (``highs=False`` leaves out its HiGHS step); the certificate returned is ok,
    or a solve stopped at ``time_limit`` and it is the best one seen. Steps, hand-overs and
    backend solves are recorded in ``log`` (a fresh `SolveLog` by default); ``what`` names
    the program in errors; ``scale`` is passed to the certificates.

    Raises
    ------
    InfeasibleError
        Clarabel proved infeasibility (``robust``: two steps agree).
    CertificateError
        ``robust``: points came back, none certified; the message says no solver resolved
        the program to the certificate's tolerance, ``exc.verdicts`` lists each step's.
    SolverError
        No point came back. Any exception cvxpy or a solver raises becomes
        `fairalloc.SolverError` (cause chained).
    """
    inst = get_backend(backend, need="cvxpy")
    if inst.name != "clarabel":
        raise InputError(
            f"composed programs are certified through backend='clarabel' (got {inst.name!r})",
            argument="backend",
        )
    ctx = _Context(problem=problem, clean=clean, report=report, backend=inst.name,
                   gap_tol=as_tolerance(gap_tol, "gap_tol"),
                   feas_tol=as_tolerance(feas_tol, "feas_tol"),
                   time_limit=as_time_limit(time_limit), scale=scale,
                   verbose=as_bool(verbose, "verbose"), log=SolveLog() if log is None else log,
                   highs=as_bool(highs, "highs"))
    t0 = time.perf_counter()
    mark, iterations, solves = ctx.log.mark(), ctx.log.iterations, ctx.log.solves
    if not robust:
        ctx.log.step(method)
        _certify(ctx, _clarabel(ctx, scaled=False, tight=False))
        assert ctx.latest is not None
        cert = ctx.latest
    else:
        cert = _run(ctx, what)
    steps, fallbacks = ctx.log.since(mark)
    stats = SolveStats(backend="+".join(ctx.backends) or inst.name, method=method,
                       seconds=time.perf_counter() - t0,
                       iterations=ctx.log.iterations - iterations,
                       solves=ctx.log.solves - solves, raw_status=ctx.log.raw_status,
                       path=compress(steps), fallbacks=fallbacks)
    return stats, cert


def _run(ctx: _Context, what: str) -> Certificate:
    """The plan on ``ctx``: the first certified point (left in the variables) and its
    certificate; the best point seen when a solve ran out of time; else the typed error."""
    try:
        run_plan(PLAN, ctx, ctx.log, what=what, backend=ctx.backend)
    except InfeasibleError:
        raise
    except SolverError as exc:
        if ctx.out_of_time and ctx.best is not None:
            _, cert, snapshot = ctx.best
            restore_point(snapshot)
            return cert
        msg = (f"no solver resolved the {what} program to the certificate's tolerance "
               f"(relative gap {ctx.gap_tol:g}, relative feasibility {ctx.feas_tol:g}); "
               f"verdicts: {'; '.join(exc.verdicts)}")
        if isinstance(exc, CertificateError):
            raise CertificateError(msg, certificate=exc.certificate, backend=exc.backend,
                                   verdicts=exc.verdicts) from exc
        # chained to what a solver or cvxpy raised, if anything (else to the plan's error)
        raise SolverError(msg, backend=exc.backend, status=exc.status,
                          raw_status=exc.raw_status, verdicts=exc.verdicts
                          ) from (ctx.cause if ctx.cause is not None else exc)
    assert ctx.latest is not None  # (the found point was certified last)
    return ctx.latest


def _offset(data: dict[str, Any]) -> float:
    """The constant term of the compiled objective (``min c@x + d``), which the conic data
    ``c`` leaves out: without it the certificate's values (not its gap) would miss the
    objective's constant terms."""
    prog = data.get("param_prob")
    if prog is None:
        return 0.0
    return float(np.asarray(prog.apply_parameters()[1], dtype=float))
