"""Solving composed cvxpy programs with an explicitly named solver, and certifying them.

cvxpy is fairalloc's composition layer: builders expose cvxpy variables and constraints, a user
adds constraints or objective terms, and `solve_cvxpy` solves the result. It never lets
cvxpy choose a solver, and it certifies the solution from the conic standard form itself:
cvxpy compiles the problem to ``min c@x  s.t.  A x + s = b, s in K`` (Clarabel's form); from the
solver's raw primal ``x`` and dual ``z`` we compute, without trusting the solver's status,

* the primal residual: distance of ``b - A x`` to the cone ``K``,
* the dual residual: ``||A^T z + c||`` on columns without a bound, and the distance of ``z``
  to the dual cone ``K*``,
* the dual bound: the Lagrangian bound at ``z`` moved into ``K*``, the reduced cost
  ``c + A^T z`` met at the worst of each column's bounds (``x >= 0``, ``x <= 1``, read from
  singleton rows) and charged ``|r_j x_j|`` on an unbounded column; the gap is the primal
  value ``c@x`` minus that bound.

Every quantity is judged relative to the data scale, so the verdict does not change when the
program's data are expressed in other units: the primal residual of each row relative to
that row's own magnitude ``max(|b_i|, sum_j |A_ij| max|x|)`` (a cone: its largest row), the
dual residual relative to ``max(|c|, |A^T z|)``, and the gap relative to
the magnitude of the terms it is computed from, ``max(sum_j |c_j x_j|, sum_i |b_i z_i|)``
(a caller whose objective has a natural scale, e.g. the total budget of an Eisenberg-Gale
program, passes it as ``scale``). The standard relative gap ``gap / max(|primal|, |dual|)``
would call an optimum near 0 (an objective with cancelling terms) unproven, and
``gap / max(1, |objective|)`` would accept anything when the objective is small in the
caller's units.

This is the KKT certificate of the solver's raw vectors. Builders certify the point they
*return* instead (`certify_point`, through ``solve_cvxpy(clean=...)``): the returned point
(time fractions clipped to ``[0, 1]``, negative round-off removed, auxiliary level variables
recomputed from the allocation) is written into the cvxpy variables, the objective is evaluated
there by cvxpy, and every constraint of the program -- the builder's and the user's -- is judged
at the magnitude of its own terms (`constraint_residual`): ``x[0, 0] <= cap`` against
``max(|x[0, 0]|, |cap|)``, whatever the scale of the rest of the program (the raw cone residual
above divides by the program's largest variable, which lets a cap of ``1e-9`` of a good's supply
be exceeded a hundredfold). The dual bound and dual residual are the conic ones. Builders whose
dual has a closed form (Eisenberg-Gale, LPs) use their exact certificates where no constraint
was added.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from ._validation import as_bool, as_time_limit, as_tolerance
from .backends import get_backend
from .errors import FairallocError, InfeasibleError, InputError, SolverError
from .results import Certificate, SolveStats
from .tolerances import CONE_EPS, FEAS_TOL, GAP_TOL, SOLVER_TOL

__all__ = ["certify_point", "conic_certificate", "constraint_residual", "restore_point",
           "snapshot_point", "solve_cvxpy"]

#: PERFORMANCE knob: re-solves of a composed program whose point violates a constraint at its
#: own scale, with the violated constraints restated at their own scale (each: one more solve)
RESTATE_ROUNDS = 2
RESTATED_STEP = "cvxpy-own-scale"  # path step: a re-solve with constraints at their own scale


def _exp_primal_violation(r: np.ndarray) -> np.ndarray:
    """Violation of ``r2 * exp(r1 / r2) <= r3, r2 > 0`` (rows of r are cone triples)."""
    r1, r2, r3 = r[:, 0], r[:, 1], r[:, 2]
    out = np.zeros(len(r))
    pos = r2 > CONE_EPS
    with np.errstate(over="ignore"):
        out[pos] = np.maximum(r2[pos] * np.exp(r1[pos] / r2[pos]) - r3[pos], 0.0)
    # closure at r2 = 0: r1 <= 0, r3 >= 0
    out[~pos] = np.maximum.reduce([np.maximum(r1[~pos], 0), np.maximum(-r3[~pos], 0),
                                   np.maximum(-r2[~pos], 0)])
    return out


def _exp_dual_violation(z: np.ndarray) -> np.ndarray:
    """Violation of the dual exponential cone ``-u exp(v/u) <= e w, u < 0``."""
    u, v, w = z[:, 0], z[:, 1], z[:, 2]
    out = np.zeros(len(z))
    neg = u < -CONE_EPS
    with np.errstate(over="ignore"):
        out[neg] = np.maximum(-u[neg] * np.exp(v[neg] / u[neg]) - np.e * w[neg], 0.0)
    out[~neg] = np.maximum.reduce([np.maximum(u[~neg], 0), np.maximum(-v[~neg], 0),
                                   np.maximum(-w[~neg], 0)])
    return out


def _cone_violation(vec: np.ndarray, dims: Any, *, dual: bool,
                    row_scale: np.ndarray | None = None) -> float:
    """Largest violation of ``vec`` against the cone (or dual cone) described by ``dims``.

    With ``row_scale`` each violation is divided by the magnitude of its own rows (each row
    for the zero and non-negative cones, the largest of its rows for a second-order or
    exponential cone), so a constraint written in small units is judged at its own scale.
    """
    pos = 0
    worst = 0.0
    tiny = np.finfo(float).tiny

    def rel(viol: np.ndarray, lo: int, hi: int, per_row: bool) -> float:
        viol = np.asarray(viol, dtype=float)
        if row_scale is None or viol.size == 0:
            return float(np.max(viol, initial=0.0))
        sc = row_scale[lo:hi]
        if not per_row:
            sc = np.max(sc.reshape(viol.size, -1), axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(viol > 0, viol / np.maximum(sc, tiny), 0.0)
        return float(np.max(out, initial=0.0))

    zero = int(dims.zero)
    if not dual:  # zero cone: primal slack must be 0; its dual cone is free
        worst = max(worst, rel(np.abs(vec[:zero]), 0, zero, True))
    pos += zero
    nonneg = int(dims.nonneg)
    worst = max(worst, rel(-vec[pos: pos + nonneg], pos, pos + nonneg, True))
    pos += nonneg
    for size in dims.soc:  # self-dual
        t, v = vec[pos], vec[pos + 1: pos + size]
        worst = max(worst, rel(np.array([np.linalg.norm(v) - t]), pos, pos + size, False))
        pos += size
    n_exp = int(dims.exp)
    if n_exp:
        block = vec[pos: pos + 3 * n_exp].reshape(n_exp, 3)
        viol = _exp_dual_violation(block) if dual else _exp_primal_violation(block)
        worst = max(worst, rel(viol, pos, pos + 3 * n_exp, False))
        pos += 3 * n_exp
    if pos != vec.size:
        raise SolverError("conic certificate supports zero, non-negative, second-order and "
                          "exponential cones only", backend="clarabel")
    return worst


def _ratio(num: float, den: float) -> float:
    """``num / den`` with ``0 / 0 = 0`` and ``x / 0 = inf`` (a violation of nothing)."""
    if num <= 0.0:
        return 0.0 if num == 0.0 or np.isfinite(num) else float("inf")
    if not np.isfinite(num):
        return float("inf")
    return num / den if den > 0.0 and np.isfinite(den) else float("inf")


def _column_bounds(A: Any, b: np.ndarray, zero: int, nonneg: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Bounds on the columns implied by singleton rows of the zero and non-negative cones
    (``b_i - a x_j = 0`` or ``>= 0``): a variable's sign attribute, ``x <= 1``, ``x == c``."""
    n = A.shape[1]
    lo, hi = np.full(n, -np.inf), np.full(n, np.inf)
    R = sp.csr_matrix(A[: zero + nonneg])
    R.eliminate_zeros()
    rows = np.flatnonzero(np.diff(R.indptr) == 1)
    if rows.size:
        cols, a = R.indices[R.indptr[rows]], R.data[R.indptr[rows]]
        with np.errstate(over="ignore"):
            val = b[rows] / a
        eq = rows < zero
        upper, lower = eq | (a > 0), eq | (a < 0)
        np.minimum.at(hi, cols[upper], val[upper])
        np.maximum.at(lo, cols[lower], val[lower])
    return lo, hi


def _into_dual_cone(z: np.ndarray, dims: Any) -> np.ndarray:
    """A point of the dual cone near ``z``: the non-negative block and each second-order
    block projected (both are self-dual), each exponential block's ``w`` raised to
    ``-u exp(v/u) / e`` (``u < 0``; else ``u = 0`` and ``v, w`` clipped at 0). The zero cone's
    dual is free."""
    z = np.array(z, dtype=float, copy=True)
    pos = int(dims.zero)
    nonneg = int(dims.nonneg)
    z[pos: pos + nonneg] = np.maximum(z[pos: pos + nonneg], 0.0)
    pos += nonneg
    for size in dims.soc:
        t, v = z[pos], z[pos + 1: pos + size]
        nv = float(np.linalg.norm(v))
        if nv > t:
            if nv <= -t:
                z[pos: pos + size] = 0.0
            else:
                half = 0.5 * (t + nv)
                z[pos] = half
                z[pos + 1: pos + size] = v * (half / nv)
        pos += size
    n_exp = int(dims.exp)
    if n_exp:
        blk = z[pos: pos + 3 * n_exp].reshape(n_exp, 3)
        u, v, w = blk[:, 0], blk[:, 1], blk[:, 2]
        neg = u < -CONE_EPS
        with np.errstate(over="ignore"):
            need = np.where(neg, -u * np.exp(np.where(neg, v / np.where(neg, u, -1.0), 0.0))
                            / np.e, 0.0)
        blk[:, 2] = np.where(neg, np.maximum(w, need), np.maximum(w, 0.0))
        blk[:, 1] = np.where(neg, v, np.maximum(v, 0.0))
        blk[:, 0] = np.where(neg, u, 0.0)
        z[pos: pos + 3 * n_exp] = blk.ravel()
    return z


def _box_minimum(r: np.ndarray, lo: np.ndarray, hi: np.ndarray, x: np.ndarray
                 ) -> tuple[float, np.ndarray]:
    """``sum_j min_{lo_j <= v <= hi_j} r_j v``, where a column whose reduced cost pushes
    towards an infinite bound (an auxiliary variable of a cone, a free level) is charged
    ``-|r_j x_j|`` at the point's magnitude instead of ``-inf``; and those ``|r_j|``."""
    pos, neg = r > 0, r < 0
    low, high = pos & np.isfinite(lo), neg & np.isfinite(hi)
    free = (pos | neg) & ~low & ~high
    term = (float(np.sum(r[low] * lo[low])) + float(np.sum(r[high] * hi[high]))
            - float(np.sum(np.abs(r[free] * x[free]))))
    return term, np.abs(r[free])


def conic_certificate(
    data: dict[str, Any], x: np.ndarray, z: np.ndarray, *, maximize: bool,
    offset: float = 0.0, gap_tol: float = GAP_TOL, feas_tol: float = FEAS_TOL,
    scale: float | None = None,
) -> Certificate:
    """KKT certificate of a conic program ``min c@x, A x + s = b, s in K`` from ``x`` and ``z``.

    Residuals and gap are relative to the data scale (see the module docstring); ``scale``
    overrides the gap's scale (in the objective's units). The dual bound is the Lagrangian
    bound ``-b@z + sum_j min_{l_j <= x_j <= u_j} (c + A^T z)_j x_j`` with ``z`` moved into the
    dual cone (`_into_dual_cone`) and the column bounds ``l, u`` read from singleton rows, so
    it is a valid bound whatever reduced cost the solver left on bounded columns (a job worth
    ``1e-9`` of the objective, left at 0.8 of its time by a solver whose dual residual was
    ``7e-10``, is not certified optimal to ``7e-12``); a column unbounded in the direction
    its reduced cost pushes is charged ``|r_j x_j|`` at the returned point.
    """
    A, b, c = data["A"], np.asarray(data["b"], dtype=float), np.asarray(data["c"], dtype=float)
    dims = data["dims"]
    Ax = A @ x
    slack = b - Ax
    # each row judged at its own magnitude, max(|b_i|, sum_j |A_ij| * max|x|): a row written in
    # small units is judged in those units, while a row whose terms are ~0 at the solution
    # (x_j == 0 met to 1e-10) is still judged against the size of the variables
    xmax = float(np.max(np.abs(x), initial=0.0))
    row_scale = np.maximum(np.abs(b), np.asarray(abs(A).sum(axis=1)).ravel() * xmax)
    primal_res = _cone_violation(slack, dims, dual=False, row_scale=row_scale)
    # the bound: for any feasible x and z in K* (the solver's z moved into K*: a z outside a
    # second-order cone by 2e-13 against a slack of 1e3 put the bound 5e-10 above the
    # optimum), c@x >= (c + A^T z)@x - b@z, and the reduced cost r = c + A^T z meets each
    # column's bounds (singleton rows: x_j >= 0, x_j <= 1, ...)
    # at their worst, as an LP's Lagrangian bound does -- so the bound holds whatever r the
    # solver's tolerance left; r on an unbounded column (a cone's auxiliary variable, whose
    # value may be 1e4 where the objective is 0.5) is charged at the point's |r_j x_j| and
    # also counts as dual residual
    zero, nonneg = int(dims.zero), int(dims.nonneg)
    cone_res = _ratio(_cone_violation(z, dims, dual=True), float(np.max(np.abs(z), initial=0.0)))
    z = _into_dual_cone(np.asarray(z, dtype=float), dims)
    ATz = A.T @ z
    lo, hi = _column_bounds(A, b, zero, nonneg)
    box, free = _box_minimum(c + ATz, lo, hi, x)
    dual_res = max(
        _ratio(float(np.max(free, initial=0.0)), max(float(np.max(np.abs(c), initial=0.0)),
                                                     float(np.max(np.abs(ATz), initial=0.0)))),
        cone_res,
    )
    primal = float(c @ x) + offset
    dual = -float(b @ z) + box + offset
    if scale is None:
        scale = max(float(np.sum(np.abs(c * x))), float(np.sum(np.abs(b * z))), abs(offset))
    sign = -1.0 if maximize else 1.0
    return Certificate(
        kind="conic",
        primal_value=sign * primal,
        dual_bound=sign * dual,
        gap=abs(primal - dual),
        primal_residual=primal_res,
        dual_residual=dual_res,
        gap_tol=gap_tol,
        feas_tol=feas_tol,
        scale=scale,
    )


# --------------------------------------------------------------------------------------------
# the returned point, judged constraint by constraint at its own scale
# --------------------------------------------------------------------------------------------
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
        val = expr.value
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
        lv, rv = lhs.value, rhs.value
        ml, mr = _magnitude(lhs), _magnitude(rhs)
        if lv is None or rv is None or ml is None or mr is None:
            return None
        diff = np.asarray(_dense(lv), dtype=float) - np.asarray(_dense(rv), dtype=float)
        viol = np.maximum(diff, 0.0) if isinstance(con, Inequality) else np.abs(diff)
        return viol, np.maximum(ml, mr)
    if isinstance(con, (NonNeg, NonPos, Zero)):
        val, mag = con.args[0].value, _magnitude(con.args[0])
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
    with np.errstate(all="ignore"):  # log 0 = -inf at the point: not certified, no warning
        try:
            value = problem.objective.value
            value = float("nan") if value is None else float(np.asarray(value, dtype=float))
        except Exception:  # an objective that cannot be evaluated at the point
            value = float("nan")
        residual = constraint_residual(problem.constraints, problem.variables())
    dual = float(bound.dual_bound)
    gap = abs(dual - value) if np.isfinite(value) and np.isfinite(dual) else float("inf")
    return Certificate(kind="conic", primal_value=value, dual_bound=dual, gap=gap,
                       primal_residual=residual,
                       dual_residual=bound.dual_residual, gap_tol=bound.gap_tol,
                       feas_tol=bound.feas_tol, scale=bound.scale)


class _Restated:
    """``problem`` with the constraints violated beyond ``feas_tol`` at the current point
    divided, entry by entry, by the magnitude of their own terms there (the same feasible
    set: a solver's absolute tolerance then applies to each such constraint in its own
    units). `copy_duals` maps the dual values back to the original constraints."""

    def __init__(self, problem: Any, feas_tol: float) -> None:
        import cvxpy as cp
        from cvxpy.constraints import Equality, Inequality

        self.pairs: list[tuple[Any, Any, np.ndarray]] = []
        constraints = []
        for con in problem.constraints:
            out = None
            if isinstance(con, (Inequality, Equality)):
                try:
                    with np.errstate(all="ignore"):
                        out = _constraint_violation(con)
                except Exception:  # not evaluable: kept as it is
                    out = None
            if out is None or _relative(*out) <= feas_tol:
                constraints.append(con)
                continue
            mag = np.broadcast_to(np.asarray(out[1], dtype=float), con.shape)
            top = float(np.max(mag, initial=0.0))
            s = np.where(mag > 0, mag, top if top > 0 else 1.0)
            expr = cp.multiply(1.0 / s, con.expr) if con.shape else con.expr * (1.0 / float(s))
            new = expr == 0 if isinstance(con, Equality) else expr <= 0
            self.pairs.append((con, new, s))
            constraints.append(new)
        self.problem = cp.Problem(problem.objective, constraints) if self.pairs else None

    def copy_duals(self) -> None:
        for con, new, s in self.pairs:
            dv = new.dual_value
            con.save_dual_value(None if dv is None else np.asarray(dv, dtype=float) / s)


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


def _better(new: Certificate, old: Certificate) -> bool:
    if new.ok != old.ok:
        return new.ok
    return bool(new.primal_residual < old.primal_residual)


def solve_cvxpy(
    problem: Any,
    *,
    backend: Any = "clarabel",
    gap_tol: float = GAP_TOL,
    feas_tol: float = FEAS_TOL,
    time_limit: float | None = None,
    method: str = "cvxpy",
    scale: float | None = None,
    verbose: bool = False,
    clean: Callable[[], None] | None = None,
) -> tuple[SolveStats, Certificate]:
    """Solve a cvxpy problem with an explicitly named backend and certify it.

    Only Clarabel returns the raw conic vectors the certificate needs, so composed programs
    are certified through ``backend="clarabel"``. The solver's status is mapped by the
    backend's status map and accepted by the one rule of [`fairalloc.backends`][fairalloc.backends]
    (`USABLE`): a usable point goes to the certificate, which decides.
    ``scale`` is passed to `conic_certificate`.

    Without ``clean`` the certificate is `conic_certificate` of the solver's raw vectors. With
    ``clean`` -- a callable that writes the point the caller will return into the problem's
    variables (time fractions clipped to ``[0, 1]``, a level variable set from the
    allocation, ...) -- it is `certify_point` of that point: the objective evaluated there and
    every constraint judged at its own scale (`constraint_residual`), with the conic dual
    bound. A point that violates a constraint beyond ``feas_tol`` (a cap of ``1e-9`` of a
    good's supply met only to the solver's absolute tolerance) is solved again with those
    constraints restated at their own scale (at most `RESTATE_ROUNDS` times; ``stats.path``
    gains ``"cvxpy-own-scale"`` for each), and the better point is kept.

    Raises
    ------
    InfeasibleError, SolverError, CertificateError
        Any exception cvxpy or the solver raises becomes [`SolverError`][fairalloc.SolverError]
        (cause chained).
    """
    inst = get_backend(backend, need="cvxpy")
    if inst.name != "clarabel":
        raise InputError(
            f"composed programs are certified through backend='clarabel' (got {inst.name!r})",
            argument="backend",
        )
    time_limit = as_time_limit(time_limit)
    gap_tol = as_tolerance(gap_tol, "gap_tol")
    feas_tol = as_tolerance(feas_tol, "feas_tol")
    verbose = as_bool(verbose, "verbose")
    t0 = time.perf_counter()
    tols = (gap_tol, feas_tol)
    iters, status, cert = _solve_once(problem, inst.name, tols, time_limit, scale, verbose)
    path = [method]
    if clean is not None:
        clean()
        cert = certify_point(problem, cert)
        for _ in range(RESTATE_ROUNDS):
            if cert.primal_residual <= feas_tol:
                break
            twin = _Restated(problem, feas_tol)
            if twin.problem is None:
                break
            kept = snapshot_point(problem)
            try:
                more, status2, conic = _solve_once(twin.problem, inst.name, tols, time_limit,
                                                   scale, verbose)
            except SolverError:  # the restated program failed: keep the first point
                restore_point(kept)
                break
            twin.copy_duals()
            clean()
            iters += more
            path.append(RESTATED_STEP)
            new = certify_point(problem, conic)
            if not _better(new, cert):
                restore_point(kept)
                break
            cert, status = new, status2
    stats = SolveStats(backend=inst.name, method=method, seconds=time.perf_counter() - t0,
                       iterations=iters, solves=len(path), raw_status=status, path=tuple(path))
    return stats, cert


def _solve_once(problem: Any, backend: str, tols: tuple[float, float],
                time_limit: float | None, scale: float | None, verbose: bool
                ) -> tuple[int, str, Certificate]:
    """One Clarabel solve of ``problem`` (results unpacked into its variables and
    constraints): ``(iterations, raw status, conic certificate of the raw vectors)``."""
    import cvxpy as cp

    from .backends import USABLE, SolveStatus

    inst = get_backend(backend, need="cvxpy")
    # accept_unknown: cvxpy reads back the point of an "InsufficientProgress" stop too (it
    # would raise instead); like every usable point it goes to the certificate, which decides
    opts: dict[str, Any] = {"tol_gap_abs": SOLVER_TOL, "tol_gap_rel": SOLVER_TOL,
                            "tol_feas": SOLVER_TOL, "accept_unknown": True,
                            "verbose": verbose}
    if time_limit is not None:
        opts["time_limit"] = float(time_limit)
    try:
        data, chain, inverse = problem.get_problem_data(cp.CLARABEL, solver_opts=opts)
        raw = chain.solve_via_data(problem, data, False, verbose, opts)
    except FairallocError:
        raise
    except Exception as exc:  # cvxpy.error.SolverError, DCPError, numerical errors ...
        raise SolverError(f"cvxpy/clarabel raised {type(exc).__name__}: {exc}",
                          backend=inst.name, raw_status="exception") from exc
    status = str(getattr(raw, "status", ""))
    canonical = inst.canonical_status(status)
    if canonical == SolveStatus.INFEASIBLE:
        raise InfeasibleError(f"the program is infeasible (clarabel: {status})",
                              backend=inst.name, status=status)
    x = np.asarray(getattr(raw, "x", []), dtype=float)
    z = np.asarray(getattr(raw, "z", []), dtype=float)
    if (canonical not in USABLE or not np.all(np.isfinite(x)) or not np.all(np.isfinite(z))
            or x.size != data["A"].shape[1] or z.size != data["A"].shape[0]):
        raise SolverError(f"clarabel failed: {status}", backend=inst.name, status=status)
    gap_tol, feas_tol = tols
    try:
        with warnings.catch_warnings():  # "may be inaccurate": the certificate decides
            warnings.simplefilter("ignore")
            problem.unpack_results(raw, chain, inverse)
        maximize = isinstance(problem.objective, cp.Maximize)
        cert = conic_certificate(data, x, z, maximize=maximize, offset=_offset(data),
                                 gap_tol=gap_tol, feas_tol=feas_tol, scale=scale)
    except FairallocError:
        raise
    except Exception as exc:
        raise SolverError(f"could not read the solution back: {type(exc).__name__}: {exc}",
                          backend=inst.name, status=status) from exc
    return int(getattr(raw, "iterations", 0)), status, cert


def _offset(data: dict[str, Any]) -> float:
    """The constant term of the compiled objective (``min c@x + d``), which the conic data
    ``c`` leaves out: without it the certificate's values (not its gap) would miss the
    objective's constant terms."""
    prog = data.get("param_prob")
    if prog is None:
        return 0.0
    return float(np.asarray(prog.apply_parameters()[1], dtype=float))
