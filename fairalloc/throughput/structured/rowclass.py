"""Row-class aggregation in the restricted masters of level stages (#15, tied rows).

Jobs whose rows of a level stage are proportional (``a_m = c_m d_R``: one model, different
steps, weights or elapsed times) form a *row class* ``R``. At prices where the class is
indifferent between two types (``p_t / d_Rt = p_t' / d_Rt'``: degenerate prices, the usual
optimum on tied rows) every job of the class is near a tie, and the structured level solver
would keep all of them explicit. A job ``m`` of the class whose normalised level
``l_m = (h_m + b_m theta) / c_m`` is at most the rate ``d_Rt`` of every type it may use has
time to spare whatever the mix, so the class needs only one variable ``U_Rt >= 0`` per type
(``sum_m s_m`` times the job's throughput on ``t`` in units of ``d_R``) and one row
``sum_t U_Rt >= sum_m s_m l_m`` (affine in ``theta``); the capacity row of type ``t`` gets
``U_Rt / d_Rt``. Any class total splits among the jobs in proportion to their levels
(`disaggregate`), and the duals follow in closed form: ``lambda_m = s_m nu_R / c_m``,
``mu_m = 0`` (``nu_R``: the class row's dual). The proof is in
``proofs/row_class_aggregation.md``; the full LP's certificate decides every stage.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..._symmetry import exact_classes
from ..tuning import DEFAULT_TUNING, Tuning

#: PERFORMANCE knob: smallest row class that is aggregated (a class of one is an explicit job)
MIN_CLASS_SIZE = 2
#: ACCURACY: row directions (rows divided by their largest entry) that agree to this many
#: decimals form one class; the per-job level is met exactly by `disaggregate` (rows that
#: differ in the last bits leave residuals far below FEAS_TOL)
CLASS_DECIMALS = 12
#: PERFORMANCE knob: types whose price per unit of a class's throughput is within this
#: relative margin of the cheapest count as tied when choosing which jobs to aggregate
TIE_BAND = 0.05
#: PERFORMANCE knob: a job is aggregated only with its normalised level this far (relative)
#: below the slowest tied type's rate (the master's level may rise a little)
EDGE_MARGIN = 0.02
#: ACCURACY: relative rounding of a disaggregated job's time at which it counts as within 1
TIME_ROUNDING = 1e-9
# When row classes are looked for is decided by ``tuning.class_min_candidates`` and
# ``class_min_candidate_share`` (`fairalloc.throughput.Tuning`). Measured (families.py, 4,096
# and 16,384 jobs): random, dominant and sparse rows leave at most 89 jobs near a tie per
# master (one case of 961), tied rows 190 to 3,041 of 3,041; finding the classes costs 1 to
# 6 ms per stage at 3,000 to 16,000 jobs; rows all different at a million jobs leave
# thousands near a tie, a small share, and have no classes to find.
#: PERFORMANCE knob: when Newton found no balance, the stage still goes to a master from its
#: last point if at least this share of the jobs belongs to row classes (their switching
#: together is then the likely reason, and their aggregation the remedy)
ROUGH_MIN_SHARE = 0.5


@dataclass
class RowClasses:
    """Row classes of a level stage: ``cls`` (class per job, ``-1``: none), ``D``
    (directions, ``classes x k``, largest entry 1) and ``c`` (each job's row maximum)."""

    cls: np.ndarray
    D: np.ndarray
    c: np.ndarray


def row_classes(A: np.ndarray, need: np.ndarray) -> RowClasses | None:
    """The row classes of the dense stage rows ``A`` (``n x k``) among the jobs ``need``
    (``None``: no class of `MIN_CLASS_SIZE` jobs or more)."""
    n = A.shape[0]
    c = A.max(axis=1)
    ok = need & (c > 0)
    idx = np.flatnonzero(ok)
    if idx.size < MIN_CLASS_SIZE:
        return None
    Dn = A[idx] / c[idx, None]
    cl = exact_classes(np.round(Dn, CLASS_DECIMALS))  # the library's one class finder
    big = cl.counts >= MIN_CLASS_SIZE
    if not big.any():
        return None
    renum = np.full(cl.num_classes, -1)
    renum[big] = np.arange(int(big.sum()))
    cls = np.full(n, -1)
    cls[idx] = renum[cl.inverse]
    return RowClasses(cls, Dn[cl.representative[big]], c)


def _unit_prices(rc: RowClasses, p: np.ndarray) -> np.ndarray:
    """Each class's price per unit of its throughput on every type (``inf``: a type the class
    cannot use), ``classes x k``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(rc.D > 0, np.maximum(p, 0.0)[None, :] / rc.D, np.inf)


def eligible(rc: RowClasses, cand: np.ndarray, p: np.ndarray, theta: float, b: np.ndarray,
             h: np.ndarray, excluded: np.ndarray) -> np.ndarray:
    """Jobs of ``cand`` (not ``excluded``) that a master may aggregate in their row class at
    prices ``p`` and level ``theta``: a normalised level positive and at least
    `EDGE_MARGIN` below the rate of every type tied (within `TIE_BAND`) for the class's
    cheapest."""
    ratio = _unit_prices(rc, p)
    best = ratio.min(axis=1, keepdims=True)
    tied = ratio <= best * (1.0 + TIE_BAND) + np.finfo(float).tiny
    dmin = np.where(tied, rc.D, np.inf).min(axis=1)
    in_cls = cand & ~excluded & (rc.cls >= 0)
    j = np.flatnonzero(in_cls)
    ell = (h[j] + b[j] * theta) / rc.c[j]
    ok = (ell > 0) & (ell <= (1.0 - EDGE_MARGIN) * dmin[rc.cls[j]])
    out = np.zeros(cand.size, dtype=bool)
    out[j[ok]] = True
    return out


def floor_eligible(rc: RowClasses, cand: np.ndarray, p: np.ndarray, f: np.ndarray,
                   omega: np.ndarray, s: np.ndarray, excluded: np.ndarray) -> np.ndarray:
    """Jobs of ``cand`` (not ``excluded``) that a floor-stage master (``max sum omega_m a_m .
    x_m`` s.t. ``a_m . x_m >= f_m``) may hold at their floors, aggregated by row class, at
    prices ``p``: a normalised floor as in `eligible`, and a value per worker ``omega_m c_m
    / s_m`` at least `TIE_BAND` below the class's cheapest price per unit of throughput (a
    job that values more throughput above its price is no job to keep at its floor)."""
    best = _unit_prices(rc, p).min(axis=1)
    j = np.flatnonzero(cand & ~excluded & (rc.cls >= 0))
    value = omega[j] * rc.c[j] / s[j]
    ok = (eligible(rc, cand, p, 0.0, np.zeros(cand.size), f, excluded)[j]
          & (value <= (1.0 - TIE_BAND) * best[rc.cls[j]]))
    out = np.zeros(cand.size, dtype=bool)
    out[j[ok]] = True
    return out


@dataclass
class Groups:
    """The aggregated jobs of one master: ``jobs``, their group ``gid`` (``0..G-1``), the
    groups' directions ``D`` and the columns ``(ug, ut)`` (group, type) of the variables
    ``U``."""

    jobs: np.ndarray
    gid: np.ndarray
    D: np.ndarray
    ug: np.ndarray
    ut: np.ndarray


def groups(rc: RowClasses, mask: np.ndarray) -> Groups | None:
    """The groups of the jobs ``mask`` (``None``: none)."""
    jobs = np.flatnonzero(mask)
    if jobs.size == 0:
        return None
    used, gid = np.unique(rc.cls[jobs], return_inverse=True)
    D = rc.D[used]
    ug, ut = np.nonzero(D > 0)
    return Groups(jobs, gid.ravel(), D, ug, ut)


def master_block(g: Groups, c: np.ndarray, s: np.ndarray, b: np.ndarray, h: np.ndarray,
                 row0: int, theta_col: int | None, col0: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Triplets ``(rows, cols, values)`` of the groups' variables and rows in a master
    (capacity rows ``0..k-1``, group rows from ``row0``, ``theta`` in column ``theta_col``
    (``None``: a master without theta, a floor stage), the ``U`` columns from ``col0``) and
    the group rows' lower bounds."""
    G = g.D.shape[0]
    j = g.jobs
    w = s[j] / c[j]
    alpha = np.bincount(g.gid, weights=w * h[j], minlength=G)
    u = col0 + np.arange(g.ug.size)
    rows = np.concatenate((g.ut, row0 + g.ug))
    cols = np.concatenate((u, u))
    vals = np.concatenate((1.0 / g.D[g.ug, g.ut], np.ones(g.ug.size)))
    if theta_col is not None:
        beta = np.bincount(g.gid, weights=w * b[j], minlength=G)
        rows = np.concatenate((rows, row0 + np.arange(G)))
        cols = np.concatenate((cols, np.full(G, theta_col)))
        vals = np.concatenate((vals, -beta))
    return rows, cols, vals, alpha


def disaggregate(g: Groups, U: np.ndarray, nu: np.ndarray, theta: float, A: np.ndarray,
                 col: np.ndarray, c: np.ndarray, s: np.ndarray, b: np.ndarray, h: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each aggregated job's share of its group's ``U`` (in proportion to its level) and its
    duals. Returns ``(columns, values, lambda, bound)``: the jobs' column values, their level
    duals (``mu = 0``) and the jobs whose share does not fit in their time (or whose level
    is negative at ``theta``): they need their own variables."""
    G, k = g.D.shape
    j = g.jobs
    Ug = np.zeros((G, k))
    Ug[g.ug, g.ut] = np.maximum(U, 0.0)
    tot = Ug.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        mix = np.where(tot > 0, Ug / np.where(tot > 0, tot, 1.0), 0.0)  # share of each type
        per = np.where(g.D > 0, mix / np.where(g.D > 0, g.D, 1.0), 0.0)  # time per unit level
    L = h[j] + b[j] * theta
    X = np.maximum(L / c[j], 0.0)[:, None] * per[g.gid]
    X = np.where(A[j] > 0, X, 0.0)
    got = np.einsum("ij,ij->i", A[j], X)
    X *= np.where(got > 0, np.maximum(L, 0.0) / np.where(got > 0, got, 1.0), 1.0)[:, None]
    bound = (L < 0) | (X.sum(axis=1) > 1.0 + TIME_ROUNDING)
    nz = X > 0
    r, t = np.nonzero(nz)
    lam = s[j] * nu[g.gid] / c[j]
    return col[j[r], t], X[r, t], lam, bound


class Aggregator:
    """Which jobs of a level stage's masters are aggregated by row class.

    The classes are found only once a master would keep more than
    ``tuning.class_min_candidates`` jobs and ``class_min_candidate_share`` of them explicit
    (below that a master is small anyway); a job whose share did not fit its time leaves its
    class for good (`leave`)."""

    def __init__(self, A: np.ndarray, need: np.ndarray, b: np.ndarray, h: np.ndarray,
                 tuning: Tuning = DEFAULT_TUNING) -> None:
        self.A, self.need, self.b, self.h = A, need, b, h
        self.tuning = tuning
        self.alone = np.zeros(need.size, dtype=bool)
        self._rc: RowClasses | None = None
        self._found = False

    def _worth(self, cand: np.ndarray) -> bool:
        """Whether a master with the jobs ``cand`` near a tie is worth aggregating (more than
        ``tuning.class_min_candidates`` and ``class_min_candidate_share`` of the jobs)."""
        m = int(cand.sum())
        t = self.tuning
        return m > t.class_min_candidates and m > t.class_min_candidate_share * cand.size

    def classes(self) -> RowClasses | None:
        """The row classes (found on first use; ``None``: none)."""
        if not self._found:
            self._found = True
            self._rc = row_classes(self.A, self.need)
        return self._rc

    def classed_share(self) -> float:
        """The share of the jobs that need a level and belong to a row class."""
        rc = self.classes()
        m = int(self.need.sum())
        return 0.0 if rc is None or m == 0 else float((rc.cls[self.need] >= 0).sum()) / m

    def _classes_for(self, cand: np.ndarray) -> RowClasses | None:
        """The row classes when a master with the jobs ``cand`` near a tie is worth
        aggregating (`_worth`), else ``None``."""
        return self.classes() if self._worth(cand) else None

    def grouped(self, cand: np.ndarray, p: np.ndarray, theta: float) -> np.ndarray:
        """The jobs of ``cand`` a master at prices ``p`` and level ``theta`` aggregates."""
        rc = self._classes_for(cand)
        if rc is None:
            return np.zeros(cand.size, dtype=bool)
        return eligible(rc, cand, p, theta, self.b, self.h, self.alone)

    def floor_grouped(self, cand: np.ndarray, p: np.ndarray, omega: np.ndarray,
                      s: np.ndarray) -> np.ndarray:
        """The jobs of ``cand`` a floor-stage master at prices ``p`` holds at their floors
        (``h``: the floors), aggregated (`floor_eligible`)."""
        rc = self._classes_for(cand)
        if rc is None:
            return np.zeros(cand.size, dtype=bool)
        return floor_eligible(rc, cand, p, self.h, omega, s, self.alone)

    def master_groups(self, mask: np.ndarray
                      ) -> tuple[Groups, np.ndarray, np.ndarray] | None:
        """``(groups, row maxima, dense rows)`` of the aggregated jobs ``mask``."""
        rc = self._rc
        if rc is None or not mask.any():
            return None
        g = groups(rc, mask)
        return None if g is None else (g, rc.c, self.A)

    def leave(self, jobs: np.ndarray) -> None:
        """The aggregated ``jobs`` (mask) whose share did not fit: their own variables from
        now on."""
        self.alone |= jobs
