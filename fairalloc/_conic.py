"""Conic programs in cvxpy's standard form: the KKT certificate, and exact unit scaling.

cvxpy compiles a program to ``min c@x  s.t.  A x + s = b, s in K`` (Clarabel's form, with
``K`` a product of zero, non-negative, second-order and exponential cones). This module works
on that data alone (no cvxpy objects):

`conic_certificate` -- from a solver's raw primal ``x`` and dual ``z`` it computes, without
trusting the solver's status,

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

`unit_scaling` -- a copy of the program on which every variable and every row is at unit
scale: ``x = D x'`` (``D`` diagonal, powers of two), the slacks mapped by ``s' = M s`` with
``M`` an automorphism of ``K`` (a power of two per non-negative or zero row and per cone block;
on a three-dimensional second-order block whose two halves ``p = (t + u) / 2`` and
``q = (t - u) / 2`` differ by orders of magnitude at the reference point -- ``inv_pos``,
``geo_mean`` and ``power`` are written as ``p q >= w^2`` -- also the hyperbolic rotation
``p -> g p``, ``q -> q / g`` that balances them), and the objective divided by a power of two.
A solution ``(x', z')`` of the copy maps back to ``x = D x'``, ``z = M^T z' / sigma``
(`UnitScaling.unscale`), a primal-dual pair of the original program. The copy's raw
certificate (`UnitScaling.certificate`: its Lagrangian bound, in the original objective's
units) is computed on the copy's data, where the dual vector is not the cancelling
difference of huge entries; the power-of-two factors are exact and a rotation's ``ch, sh``
are exact, so the copy's data differ from the exact image of the original only by the
rounding of the rotated rows' products (relative ``2^-53`` of each rotated row's largest
entry). The point a caller returns is certified on the original program
(`fairalloc._cvxpy.certify_point`: its objective and every constraint evaluated there).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from .errors import SolverError
from .results import Certificate
from .tolerances import CONE_EPS, FEAS_TOL, GAP_TOL

__all__ = ["UnitScaling", "column_bounds", "conic_certificate", "is_linear", "unit_scaling"]


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
            val = b[rows] / a + 0.0  # (+ 0.0: a bound of -0.0 is 0)
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
# exact unit scaling of the conic data
# --------------------------------------------------------------------------------------------
#: PERFORMANCE knob (what is certified does not change): a variable without a bound read from
#: the data is scaled to its magnitude at the reference point, but to no less than this share
#: of the point's largest entry (an interior point's 1e-12 for a variable at 0 is no scale)
SCALE_FLOOR = 1e-6
#: PERFORMANCE knob: a cone block is balanced by an automorphism of its cone (`_rotations`)
#: when its parts differ by more than this factor at the reference point
BOOST_RATIO = 16.0
#: ACCURACY: the largest power ``k`` of a rotation's ``g = 2^k`` (``ch = (g + 1/g) / 2`` is
#: exact in double precision up to ``k = 26``)
MAX_ROTATION = 26


def _pow2(v: np.ndarray) -> np.ndarray:
    """The power of two just above each positive entry (1 for zero, negative or non-finite
    entries): dividing by it is exact."""
    v = np.asarray(v, dtype=float)
    ok = (v > 0) & np.isfinite(v)
    _, e = np.frexp(np.where(ok, v, 1.0))
    return np.where(ok, np.ldexp(1.0, e), 1.0)


def column_bounds(data: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """``(lower, upper)`` bounds on the columns of conic ``data`` implied by its singleton rows
    of the zero and non-negative cones (a variable's sign attribute, ``x <= 1``, a cap).

    Examples
    --------
    >>> import cvxpy as cp
    >>> x = cp.Variable(nonneg=True)
    >>> data = cp.Problem(cp.Maximize(x), [x <= 2.0]).get_problem_data(cp.CLARABEL)[0]
    >>> [float(v[0]) for v in column_bounds(data)]
    [0.0, 2.0]
    """
    dims = data["dims"]
    return _column_bounds(data["A"], np.asarray(data["b"], dtype=float), int(dims.zero),
                          int(dims.nonneg))


def is_linear(data: dict[str, Any]) -> bool:
    """Whether compiled conic data are a linear program (zero and non-negative cones only, no
    quadratic objective).

    Examples
    --------
    >>> import cvxpy as cp
    >>> x = cp.Variable(2, nonneg=True)
    >>> lp = cp.Problem(cp.Maximize(cp.sum(x)), [x <= 1])
    >>> is_linear(lp.get_problem_data(cp.CLARABEL)[0])
    True
    >>> is_linear(cp.Problem(cp.Maximize(cp.sum(cp.log(x))), [x <= 1])
    ...           .get_problem_data(cp.CLARABEL)[0])
    False
    """
    dims = data["dims"]
    P = data.get("P")
    return (not list(dims.soc) and not int(dims.exp) and not list(getattr(dims, "psd", []))
            and not list(getattr(dims, "p3d", [])) and (P is None or P.count_nonzero() == 0))


@dataclass(frozen=True)
class UnitScaling:
    """An exact rescaling of conic data: ``x = col * x'``, slacks ``s' = rows @ s`` (an
    automorphism of the cone), objective times ``sigma`` (see `unit_scaling`)."""

    col: np.ndarray
    rows: sp.csr_matrix
    sigma: float

    def apply(self, data: dict[str, Any]) -> dict[str, Any]:
        """A copy of ``data`` with ``A, b, c`` of the scaled program (other keys shared)."""
        out = dict(data)
        out["A"] = sp.csc_matrix(self.rows @ sp.csr_matrix(data["A"])
                                 @ sp.diags(self.col))
        out["b"] = self.rows @ np.asarray(data["b"], dtype=float)
        out["c"] = self.sigma * self.col * np.asarray(data["c"], dtype=float)
        return out

    def certificate(self, scaled: dict[str, Any], x: np.ndarray, z: np.ndarray, *,
                    maximize: bool, offset: float = 0.0, gap_tol: float = GAP_TOL,
                    feas_tol: float = FEAS_TOL, scale: float | None = None) -> Certificate:
        """`conic_certificate` of the scaled program ``scaled`` (`apply`) at its solution
        ``(x, z)``, in the original program's units (values divided by ``sigma``; ``offset``
        and ``scale`` given in them). The scaled program is the original one mapped by an
        automorphism of its cone: the same feasible set, optimum and bounds, in coordinates
        where a dual vector is not the cancelling difference of huge entries (a hyperbolic
        cone ``a u >= 1`` at ``a = 7e5``, ``u = 2.7e-6`` has dual entries of ``4e10`` in the
        original rows: moving them into the cone there costs ``ulp(4e10) = 7.6e-6`` of a
        reduced cost)."""
        cert = conic_certificate(scaled, x, z, maximize=maximize, offset=self.sigma * offset,
                                 gap_tol=gap_tol, feas_tol=feas_tol,
                                 scale=None if scale is None else self.sigma * scale)
        unit = 1.0 / self.sigma
        return dataclasses.replace(
            cert, primal_value=cert.primal_value * unit, dual_bound=cert.dual_bound * unit,
            gap=cert.gap * unit, scale=None if cert.scale is None else cert.scale * unit)

    def unscale(self, x: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The original program's primal ``x`` and dual ``z`` from the scaled one's."""
        return (self.col * np.asarray(x, dtype=float),
                (self.rows.T @ np.asarray(z, dtype=float)) / self.sigma)


def _blocks(dims: Any) -> list[tuple[int, int, str]]:
    """``(start, size, kind)`` of every cone block after the zero and non-negative rows."""
    pos = int(dims.zero) + int(dims.nonneg)
    out = []
    for size in dims.soc:
        out.append((pos, int(size), "soc"))
        pos += int(size)
    for _ in range(int(dims.exp)):
        out.append((pos, 3, "exp"))
        pos += 3
    return out


def _rotations(blocks: list[tuple[int, int, str]], slack: np.ndarray | None
               ) -> tuple[list[int], list[int], list[float], list[int]]:
    """Entries of the cone automorphisms that balance each cone block at ``slack`` where its
    parts differ by more than `BOOST_RATIO` (``(rows, cols, values, rows mapped)``; every
    other row is mapped by the identity):

    * a second-order block ``(t, u, ...)`` (``u`` its largest entry) with halves
      ``p = (t + u) / 2``, ``q = (t - u) / 2``: the hyperbolic rotation
      ``(t, u) -> (ch t + sh u, sh t + ch u)``, ``ch, sh = (g +- 1/g) / 2`` with ``g`` the
      power of two nearest ``sqrt(q / p)``, which maps them to ``g p`` and ``q / g`` (it keeps
      ``t^2 - u^2``; ``ch``, ``sh`` and ``ch - sh = 1/g`` are exact);
    * an exponential block ``(r1, r2, r3)`` (``r2 exp(r1 / r2) <= r3``) with ``r2, r3 > 0``:
      the shear ``(r1 + k ln2 r2, r2, 2^k r3)``, ``2^k`` near ``r2 / r3`` (it keeps the cone:
      ``r2 exp((r1 + b r2) / r2) = e^b r2 exp(r1 / r2)``), which brings ``r3`` to ``r2``'s
      scale (``log(x)`` of a variable at ``1e-9``).
    """
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    mapped: list[int] = []
    if slack is None:
        return rows, cols, vals, mapped
    for start, size, kind in blocks:
        if kind == "exp":
            r2, r3 = float(slack[start + 1]), float(slack[start + 2])
            if not (r2 > 0 and r3 > 0 and np.isfinite(r2) and np.isfinite(r3)):
                continue
            if max(r2 / r3, r3 / r2) <= BOOST_RATIO:
                continue
            k = int(np.round(np.log2(r2 / r3)))
            rows += [start, start, start + 2]
            cols += [start, start + 1, start + 2]
            vals += [1.0, k * float(np.log(2.0)), float(np.ldexp(1.0, k))]
            mapped += [start, start + 2]
            continue
        if size < 2:
            continue
        tail = slack[start + 1: start + size]
        j = start + 1 + int(np.argmax(np.abs(tail)))
        t, u = float(slack[start]), float(slack[j])
        p, q = 0.5 * (t + u), 0.5 * (t - u)
        if not (p > 0 and q > 0 and np.isfinite(p) and np.isfinite(q)):
            continue
        if max(p / q, q / p) <= BOOST_RATIO:
            continue
        k = int(np.clip(np.round(0.5 * np.log2(q / p)), -MAX_ROTATION, MAX_ROTATION))
        g = float(np.ldexp(1.0, k))
        ch, sh = 0.5 * (g + 1.0 / g), 0.5 * (g - 1.0 / g)
        rows += [start, start, j, j]
        cols += [start, j, start, j]
        vals += [ch, sh, sh, ch]
        mapped += [start, j]
    return rows, cols, vals, mapped


def unit_scaling(data: dict[str, Any], reference: np.ndarray | None = None) -> UnitScaling:
    """Exact scaling of conic ``data`` that puts every variable and every row at unit scale.

    Columns: a variable boxed by singleton rows (``0 <= x <= cap``) is scaled by the power of
    two of its range, or of its magnitude at ``reference`` where that is smaller (a loose box),
    any other by that of its magnitude at ``reference`` (a primal point of the same data, e.g.
    a failed solve's; without one, 1), floored at `SCALE_FLOOR` of the point's largest
    entry. Rows: cone blocks whose parts are unbalanced
    at ``reference`` are mapped by an automorphism of their cone that balances them
    (`_rotations`); then each non-negative or zero row,
    and each cone block as a whole, is divided by the power of two of its largest coefficient
    or right-hand side. The objective is divided by the power of two of its largest scaled
    coefficient. Every factor but the rotations is a power of two.

    Examples
    --------
    >>> import cvxpy as cp
    >>> x = cp.Variable(nonneg=True)
    >>> prob = cp.Problem(cp.Maximize(cp.log(x)), [3e-9 * x <= 6e-22])
    >>> data = prob.get_problem_data(cp.CLARABEL)[0]
    >>> s = unit_scaling(data)
    >>> float(np.max(np.abs(s.apply(data)["A"]))) <= 2.0
    True
    """
    A = sp.csr_matrix(data["A"])
    b = np.asarray(data["b"], dtype=float)
    c = np.asarray(data["c"], dtype=float)
    dims = data["dims"]
    m, n = A.shape
    zero, nonneg = int(dims.zero), int(dims.nonneg)
    lo, hi = _column_bounds(A, b, zero, nonneg)
    boxed = np.isfinite(lo) & np.isfinite(hi)
    bound = np.where(boxed, np.fmax(np.abs(np.where(boxed, lo, 0.0)),
                                    np.abs(np.where(boxed, hi, 0.0))), 0.0)
    ref = None
    if reference is not None:
        r = np.asarray(reference, dtype=float).ravel()
        if r.size == n and np.all(np.isfinite(r)):
            ref = r
    mag = np.zeros(n) if ref is None else np.abs(ref)
    top = float(np.max(mag, initial=0.0))
    mag = np.maximum(mag, SCALE_FLOOR * top)
    # a boxed variable at its range, or at its magnitude at the reference where that is
    # smaller: a loose box (``4e-14 x <= 1e-7``) of a variable at 2 would scale it by 4e6,
    # and its rows with it, so that the solver's tolerance is 4e6 times too coarse there
    boxed_mag = bound if ref is None else np.minimum(bound, mag)
    col = np.where(bound > 0, _pow2(boxed_mag), _pow2(mag))
    blocks = _blocks(dims)
    slack = None if ref is None else b - A @ ref
    br, bc, bv, mapped = _rotations(blocks, slack)
    keep = np.ones(m, dtype=bool)
    keep[mapped] = False
    same = np.flatnonzero(keep)
    boost = sp.csr_matrix((np.concatenate([np.ones(same.size), bv]),
                           (np.concatenate([same, br]), np.concatenate([same, bc]))),
                          shape=(m, m))
    R = sp.csr_matrix(boost @ A @ sp.diags(col))
    rb = boost @ b
    R.data = np.abs(R.data)
    row_mag = np.maximum(np.abs(rb), R.max(axis=1).toarray().ravel())
    for start, size, _ in blocks:  # a cone block is scaled as a whole
        row_mag[start: start + size] = np.max(row_mag[start: start + size])
    rows = sp.csr_matrix(sp.diags(1.0 / _pow2(row_mag)) @ boost)
    top_c = float(np.max(np.abs(col * c), initial=0.0))
    sigma = 1.0 / float(_pow2(np.array(top_c)))
    return UnitScaling(col=col, rows=rows, sigma=sigma)
