"""The best-response demand of a floor (work-conserving) stage and its capacity prices, for
the structured floor solver (`fairalloc.throughput.structured.floor`): `FloorDemand` (each
job's best vertex at type prices, vectorised over jobs), `floor_newton_prices` (prices at
which that demand meets capacity, by Newton's method) and `FloorDemand.priced_out` (type
prices that prove the floors cannot all be met: a Lagrangian bound, O(n k^2) once)."""

from __future__ import annotations

import numpy as np

from ...plan import Decline
from .common import (
    BAND0,
    NEWTON_EVALS,
    NEWTON_MAX_ERROR,
    NEWTON_TOL,
    SAT_ROUNDING,
    Demand,
    Vertices,
    band,
    newton,
    price_spread,
)

__all__ = ["FLOORS_PRICED_OUT", "FloorDemand", "floor_newton_prices"]

#: decline reason: type prices prove that no allocation meets every floor (the stage has no
#: point: `FloorDemand.priced_out`)
FLOORS_PRICED_OUT = "floors priced out"
#: PERFORMANCE knob (a gate of which strategy runs, never of an answer): relative margin by
#: which the floors' least cost at type prices must exceed the capacity's value before
#: `FloorDemand.priced_out` calls the floors infeasible (rounding only: at a stage's optimum
#: the two are equal; families "ties", 4,096 jobs, at R_lb: 1.049 at Newton's start)
PRICED_OUT_ROOM = 1e-6
#: PERFORMANCE knob: `FloorDemand.priced_out` only with this many types or fewer (its
#: candidates are the ``k (k + 1) / 2`` floor mixes; families "many-types-30", 4,096 jobs:
#: 465 of them, 10 ms an evaluation and 60-90 ms of set-up in a 0.7 s solve, no proof)
PRICED_OUT_MAX_TYPES = 8


class FloorDemand(Demand):
    """Capacity each job uses at its best response in a floor stage, vectorised over jobs.

    A job with floor ``f`` and value ``omega`` per unit of level chooses, at prices ``p``, the
    vertex of ``{a . x >= f, sum x <= 1, x >= 0}`` maximising ``omega a.x - s p.x``: a mix at
    the floor (the candidates of `Demand` at ``L = f``: part time on one type, or two
    types sharing all the time), all its time on one type (valid when ``a_j >= f``), or
    nothing at all (valid when ``f <= 0``).
    """

    def __init__(self, A: np.ndarray, s: np.ndarray, f: np.ndarray, omega: np.ndarray) -> None:
        super().__init__(A, s, np.zeros(f.size), f)
        W = (f[:, None] - self.alo) * self.inv
        ok = (W >= 0.0) & (W <= 1.0) & (f > 0)[:, None]
        self.W = np.where(ok, W, np.nan)  # nan: not a floor vertex
        self.A, self.omega = A, omega
        self.full_ok = (A > 0) & (A >= f[:, None])
        self.rest = f <= 0
        # every candidate (floor mixes, all the time on each type, nothing) as time ``x_lo``
        # on type ``lo_all`` and ``x_hi`` on ``hi_all`` (``k``: no type), made once: Newton
        # prices the candidates a few dozen times (#28: 8,192 jobs, 1 ms a demand evaluation)
        n, k = A.shape
        self.lo_all = np.r_[self.lo, np.arange(k), k]
        self.hi_all = np.r_[self.hi, np.full(k, k), k]
        self.x_lo = np.c_[np.where(ok, 1.0 - W, 0.0), np.ones((n, k + 1))]
        self.x_hi = np.c_[np.where(ok, W, 0.0), np.zeros((n, k + 1))]
        self._s_lo = s[:, None] * self.x_lo
        self._s_hi = s[:, None] * self.x_hi
        # the floor mixes' workers on ``lo`` and ``hi``, by candidate (``inf``: not a floor mix
        # of the job), contiguous per candidate for `priced_out` (4x faster than by job)
        self._mix: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        if k <= PRICED_OUT_MAX_TYPES:
            K = ok.shape[1]
            self._mix = (np.ascontiguousarray(self._s_lo[:, :K].T),
                         np.ascontiguousarray(self._s_hi[:, :K].T), np.where(ok.T, 0.0, np.inf))
        # each candidate's value at prices 0 (``-inf``: invalid)
        self._value0 = np.c_[np.where(ok, (omega * f)[:, None], -np.inf),
                             np.where(self.full_ok, omega[:, None] * A, -np.inf),
                             np.where(self.rest, 0.0, -np.inf)]

    def _values(self, r: np.ndarray) -> np.ndarray:
        """Each candidate's value ``omega a.x - s p.x`` (``-inf``: invalid); columns: the
        floor mixes, all the time on each type, nothing."""
        rext = np.append(r, 0.0)
        V = self._s_lo * rext[self.lo_all]
        V += self._s_hi * rext[self.hi_all]
        return np.subtract(self._value0, V, out=V)

    def vertices(self, col: np.ndarray, r: np.ndarray, theta: float = 0.0, *, band: float
                 ) -> Vertices:
        """Every job's best vertex as master columns. Kinds: ``e2 == -1``: floor on ``e1``;
        ``e2 == -2``: all the time on ``e1``; ``e2 >= 0``: time split between ``e1`` and
        ``e2`` at the floor; ``e1 == -1``: nothing. ``ambiguous``: a second vertex within
        ``band`` of the best value (relative to the size of the job's values), or none."""
        k, K = self.k, self.lo.size
        V = self._values(r)
        rows = np.arange(V.shape[0])
        best = V.argmax(axis=1)
        top = V[rows, best]
        # relative price errors of ``band`` move the value difference of a candidate ``c``
        # and the best ``b`` by at most ``band s sum_t p_t |x_ct - x_bt|`` (`price_spread`;
        # omega, a and the floors are exact); ``band |best value|`` more covers prices Newton
        # set to 0 (a type with slack). Candidates that differ on a cheap type alone (one
        # dominant type) then stay apart
        rext = np.append(r, 0.0)
        spread = price_spread(rext, self.lo_all, self.hi_all, self.x_lo, self.x_hi, best)
        scale = self.omega * self.A.max(axis=1) + self.s * r.max(initial=0.0)
        gap = (band * (self.s[:, None] * spread + np.abs(top)[:, None])
               + (SAT_ROUNDING * scale)[:, None])
        close = np.isfinite(V) & (V >= top[:, None] - gap)
        close[rows, best] = False
        near = close.any(axis=1)
        fl = best < K
        b = np.where(fl, best, 0)
        lo_t, hi_t = self.lo[b], self.hi[b]
        two = fl & (lo_t < k)
        colx = np.c_[col, np.full(rows.size, -1)]
        full_t = np.clip(best - K, 0, k)
        e1 = np.where(fl, np.where(two, colx[rows, lo_t], colx[rows, hi_t]), colx[rows, full_t])
        e2 = np.where(two, colx[rows, hi_t], np.where(fl, -1, -2))
        nothing = best == K + k
        e1 = np.where(nothing, -1, e1)
        e2 = np.where(nothing, -1, e2)
        return Vertices(e1, e2, np.zeros(rows.size), np.zeros(rows.size),
                         near | ~np.isfinite(top))

    def tie_bands(self, r: np.ndarray) -> np.ndarray:
        """Each job's smallest ``band`` at which `vertices` calls its vertex ambiguous at
        prices ``r`` (``inf``: a single valid vertex)."""
        V = self._values(r)
        rows = np.arange(V.shape[0])
        best = V.argmax(axis=1)
        top = V[rows, best]
        spread = price_spread(np.append(r, 0.0), self.lo_all, self.hi_all, self.x_lo,
                              self.x_hi, best)
        with np.errstate(invalid="ignore", divide="ignore"):
            m = (top[:, None] - V) / (self.s[:, None] * spread + np.abs(top)[:, None])
        m[rows, best] = np.inf
        return np.where(np.isfinite(V) & ~np.isnan(m), m, np.inf).min(axis=1)

    def priced_out(self, r: np.ndarray, cap: np.ndarray) -> bool:
        """Whether the type prices ``r >= 0`` prove that no allocation meets every floor
        within ``cap``: at any point each job pays ``s_m r . x_m`` at least its cheapest vertex
        that meets its floor (the candidates of `vertices`, priced, are those vertices), and
        all of them together at most ``r . cap``; a sum of cheapest costs above that (by
        `PRICED_OUT_ROOM`) is a Lagrangian certificate that the stage has no point. ``False``
        means "not proved", never "feasible"; with more than `PRICED_OUT_MAX_TYPES` types it
        is not tried. One evaluation, O(n k^2).

        Examples
        --------
        Two jobs that each need a throughput of 2 from a fast (3) and a slow (1) type, priced
        as their throughput: 3.5 in all from one fast and half a slow worker is too little:

        >>> import numpy as np
        >>> A = np.array([[3.0, 1.0], [3.0, 1.0]])
        >>> dem = FloorDemand(A, np.ones(2), np.array([2.0, 2.0]), np.ones(2))
        >>> dem.priced_out(np.array([3.0, 1.0]), np.array([1.0, 0.5]))
        True
        >>> dem.priced_out(np.array([3.0, 1.0]), np.array([2.0, 1.0]))
        False
        """
        # (a job with a floor pays least at a floor mix: all its time on a type that beats
        # the floor costs more than the floor alone there; a job without one pays nothing)
        if self._mix is None:
            return False  # (more than PRICED_OUT_MAX_TYPES types: not tried)
        mix_lo, mix_hi, no_mix = self._mix
        rext = np.append(r, 0.0)
        cost = mix_lo * rext[self.lo][:, None]
        cost += mix_hi * rext[self.hi][:, None]
        cost += no_mix
        least = np.where(self.rest, 0.0, cost.min(axis=0))
        return float(least.sum()) > float(r @ cap) * (1.0 + PRICED_OUT_ROOM)

    def __call__(self, r: np.ndarray, theta: float) -> tuple[np.ndarray, np.ndarray]:
        """Capacity used per type at prices ``r`` (``theta`` is ignored; zero derivative)."""
        k = self.k
        best = self._values(r).argmax(axis=1)
        rows = np.arange(best.size)
        use = (np.bincount(self.lo_all[best], self._s_lo[rows, best], k + 1)
               + np.bincount(self.hi_all[best], self._s_hi[rows, best], k + 1))[:k]
        return use, np.zeros(k)


def floor_newton_prices(dem: FloorDemand, cap: np.ndarray,
                         rough: list[np.ndarray] | None = None
                         ) -> tuple[np.ndarray, float] | None:
    """Approximate capacity prices (and band of near-ties) of a floor stage: best-response
    demand = capacity.

    `newton` with every price free (``ref = -1``), from prices at which each type
    alone would be just filled by the jobs valuing it most: ``p_j`` is the value per worker
    ``omega a_j / s`` above which the jobs' workers add up to ``cap_j``. ``None``: no
    estimate (``rough``: a list to which Newton's unbalanced end point is then appended).
    Raises `fairalloc.plan.Decline` (`FLOORS_PRICED_OUT`) where the starting prices or
    Newton's end point prove that the floors have no point (`FloorDemand.priced_out`): the
    master rounds that would follow cannot find one.
    """
    A, s, f, omega = dem.A, dem.s, dem.h, dem.omega
    if not (np.isfinite(f).all() and (omega > 0).any()):
        return None
    v = np.where(A > 0, (omega / s)[:, None] * A, 0.0)
    order = np.argsort(-v, axis=0)
    filled = np.cumsum(s[order], axis=0) >= cap[None, :]
    first = np.where(filled.any(axis=0), filled.argmax(axis=0), v.shape[0] - 1)
    p0 = v[order[first, np.arange(cap.size)], np.arange(cap.size)]
    low = v[v > 0].min() if (v > 0).any() else 0.0
    p0 = np.maximum(p0, 0.5 * low)
    if not (np.isfinite(p0).all() and (p0 > 0).all()):
        return None
    if (dem(np.zeros(cap.size), 0.0)[0] <= cap).all():
        return np.zeros(cap.size), BAND0  # capacity binds nowhere
    _priced_out(dem, cap, p0)  # (#28: FTF's closed form at an R_lb not attained)
    out = newton(dem, cap, -1, 0.0, np.log(p0), None, np.inf, tol=NEWTON_TOL,
                  max_evals=NEWTON_EVALS)
    if out is not None:
        _priced_out(dem, cap, np.exp(out[1]))
    if out is None or out[3] > NEWTON_MAX_ERROR:
        if out is not None and rough is not None:
            rough.append(np.exp(out[1]))  # Newton's unbalanced end point (see newton_prices)
        return None
    return np.exp(out[1]), band(out[3])


def _priced_out(dem: FloorDemand, cap: np.ndarray, r: np.ndarray) -> None:
    """Raise `fairalloc.plan.Decline` (`FLOORS_PRICED_OUT`) where the prices ``r`` prove the
    floors infeasible (`FloorDemand.priced_out`)."""
    if dem.priced_out(r, cap):
        raise Decline(f"{FLOORS_PRICED_OUT} (at type prices, every job's cheapest share that "
                      "meets its floor costs more in all than the workers: no point)")
