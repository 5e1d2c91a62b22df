"""Reference programs of ``benchmarks/gavel_inputs.py``: the Gavel policies written from their
definitions (Gavel §4.1, §4.3; Themis), independently of fairalloc.

* the programs' data (``derive``) and the values compared across solvers (``values``);
* ``solve_lp``: one LP by highspy (interior point, or HiGHS's default choice) or by cvxpy with a
  named solver; ``Columns``: the column form over (job or symmetry class, type);
* ``lp_policy`` (max-min, makespan, max throughput, FTF by Dinkelbach; each stage fairalloc
  solves), ``water_filling_lps``, ``fifo_greedy`` / ``fifo_lps``, ``packing_lp``;
* ``cvxpy_policy``: Gavel-style vectorised cvxpy programs (``x`` an (n, 3) variable).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

STAGE_SLACK = 1e-9  # ACCURACY: kept stage's relative slack (fairalloc's stage_tol)
WF_SHRINK = 1e-7  # ACCURACY: water-filling reference: level kept at (1 - WF_SHRINK) theta
WF_RISE = 1e-6  # ACCURACY: a job rises if its sigma exceeds WF_RISE * max(1, level)
WF_CAP = 1e-3  # PERFORMANCE: cap of each sigma (bounded bottleneck LPs) relative to its level
DINKELBACH_STOP = 1e-9  # ACCURACY: FTF reference stops when F(R) <= this * R
DINKELBACH_MAX = 50  # PERFORMANCE: Dinkelbach iterations of the FTF reference
FIFO_KEEP = 1e-9  # ACCURACY: FIFO LP sequence: earlier values v (in [0, 1]) kept to this
SIMPLEX_FEAS = 1e-10  # ACCURACY: FIFO's LP sequence: HiGHS feasibility tolerance (< FIFO_KEEP)
SPARE_EPS = 1e-9  # ACCURACY: greedy FIFO: spare workers below this (relative) are none
TWO_STAGE = ("max-min", "ftf", "makespan")  # fairalloc's default adds the work-conserving LP


# --------------------------------------------------------------------------------------------
# the programs' data and objectives, from their definitions (Gavel §4.1, §4.3; Themis)
# --------------------------------------------------------------------------------------------
def derive(T: np.ndarray, sf: np.ndarray, w: np.ndarray, steps: np.ndarray,
           elapsed: np.ndarray, cap: np.ndarray) -> dict[str, np.ndarray]:
    n = T.shape[0]
    allowed = (T > 0) & (sf[:, None] <= cap[None, :])
    Ta = np.where(allowed, T, 0.0)
    eq = Ta @ (cap / cap.sum())  # throughput under X^equal
    iso = np.where(allowed, cap[None, :] / np.maximum(n * sf, cap.sum())[:, None], 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        D = elapsed + steps / np.einsum("ij,ij->i", Ta, iso)
        return {"T": Ta, "allowed": allowed, "s": sf, "w": w, "steps": steps, "t": elapsed,
                "cap": cap, "eq": eq, "D": D, "cs": sf / (w * eq), "norm": Ta / eq[:, None],
                "fastest": Ta.max(axis=1)}


def take(d: dict[str, np.ndarray], rows: np.ndarray) -> dict[str, np.ndarray]:
    return {k: (v if k == "cap" else v[rows]) for k, v in d.items()}


def throughputs(d: dict[str, np.ndarray], x: np.ndarray, pairs: Any = None,
                px: np.ndarray | None = None) -> np.ndarray:
    tp = np.einsum("ij,ij->i", d["T"], x)
    if pairs is not None and px is not None and px.size:
        mem, rates = pairs
        np.add.at(tp, mem[:, 0], np.einsum("pj,pj->p", rates[:, :, 0], px))
        np.add.at(tp, mem[:, 1], np.einsum("pj,pj->p", rates[:, :, 1], px))
    return tp


def values(policy: str, d: dict[str, np.ndarray], sol: dict[str, Any], pairs: Any = None
           ) -> list[float]:
    """The values compared across solvers (see the module docstring)."""
    if policy == "water-filling":
        return list(map(float, sol["floors"]))
    x = sol["x"]
    tp = throughputs(d, x, pairs, sol.get("px"))
    total = float(np.einsum("ij,ij->", d["norm"], x))
    with np.errstate(divide="ignore"):
        if policy in ("max-min", "packing"):
            head = float(np.min(d["cs"] * tp))
        elif policy == "ftf":
            head = float(np.max((d["t"] + np.where(tp > 0, d["steps"] / np.maximum(tp, 1e-300),
                                                   np.inf)) / d["D"]))
        elif policy == "makespan":
            head = float(np.max(np.where(tp > 0, d["steps"] / np.maximum(tp, 1e-300), np.inf)))
        elif policy == "max-throughput":
            head = float(tp.sum())
        else:  # fifo: every job's throughput over its fastest
            return (tp / d["fastest"]).tolist()
    return [head, total] if policy in TWO_STAGE else [head]


def rel_diff(ours: list[float], ref: list[float], per_job: bool = False) -> float:
    """Largest ``|a - b| / |b|``; ``per_job`` (a value per job): relative to the largest
    ``|b|`` (a job at 0 in one and at 1e-12 in the other agrees)."""
    a, b = np.asarray(ours, dtype=float), np.asarray(ref, dtype=float)
    if a.shape != b.shape:
        return float("inf")
    scale = np.abs(b).max(initial=0.0) if per_job else np.abs(b)
    with np.errstate(invalid="ignore"):
        r = np.abs(a - b) / np.maximum(scale, 1e-300)
    return float(np.nan_to_num(r, nan=np.inf).max()) if r.size else 0.0


# --------------------------------------------------------------------------------------------
# LPs: column form over (job or class, type); HiGHS (highspy) and cvxpy on the same matrices
# --------------------------------------------------------------------------------------------
def _csr(vals: np.ndarray, rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int]) -> Any:
    import scipy.sparse as sp

    return sp.csr_matrix((vals, (rows, cols)), shape=shape)


def solve_lp(c: np.ndarray, A: Any, lo: np.ndarray, hi: np.ndarray, ub: np.ndarray,
             solver: str = "highs") -> np.ndarray:
    """argmax ``c x`` s.t. ``lo <= A x <= hi``, ``0 <= x <= ub`` by HiGHS or cvxpy+solver."""
    import scipy.sparse as sp

    if not solver.startswith("highs"):
        import cvxpy as cp

        x = cp.Variable(c.size)
        A = sp.csr_matrix(A)
        up, dn = np.isfinite(hi), np.isfinite(lo)
        cons = [x >= 0, x <= ub, A[up] @ x <= hi[up]]
        if dn.any():
            cons.append(A[dn] @ x >= lo[dn])
        prob = cp.Problem(cp.Maximize(c @ x), cons)
        with warnings.catch_warnings():  # (an inaccurate solve shows in the rel. diff column)
            warnings.simplefilter("ignore")
            prob.solve(solver=solver)
        if x.value is None:
            raise RuntimeError(f"{solver}: {prob.status}")
        return np.asarray(x.value)
    from families import highs_solve  # (next to this file: one plain-highspy LP reference)

    strict = {"primal_feasibility_tolerance": SIMPLEX_FEAS} if solver == "highs-strict" else None
    _, x = highs_solve(c, A, lo, hi, np.zeros(c.size), ub, "ipm" if solver == "highs" else
                       "choose", strict)
    return np.asarray(x)


class Columns:
    """Columns (row, type) of the usable entries of ``d`` with ``counts`` members per row
    (1: job by job; a class's size: the symmetry-reduced program)."""

    def __init__(self, d: dict[str, np.ndarray], counts: np.ndarray | None = None) -> None:
        self.d = d
        n, k = d["T"].shape
        self.n, self.k = n, k
        self.c = np.ones(n) if counts is None else counts.astype(float)
        self.job, self.typ = np.nonzero(d["allowed"])
        self.E = self.job.size
        e = np.arange(self.E)
        self.time = _csr(np.ones(self.E), self.job, e, (n, self.E))
        self.capr = _csr(self.c[self.job] * d["s"][self.job], self.typ, e, (k, self.E))

    def rows(self, per_col: np.ndarray, sel: np.ndarray | None = None) -> Any:
        """Per-job rows ``sum_j per_col x`` (only the rows ``sel``)."""
        m = _csr(per_col, self.job, np.arange(self.E), (self.n, self.E))
        return m if sel is None else m[sel]

    def x(self, col: np.ndarray) -> np.ndarray:
        out = np.zeros((self.n, self.k))
        out[self.job, self.typ] = np.clip(col[: self.E], 0.0, None)
        return out

    def base(self) -> tuple[list[Any], list[np.ndarray], list[np.ndarray]]:
        n, k = self.n, self.k
        return ([self.time, self.capr], [np.full(n, -np.inf), np.full(k, -np.inf)],
                [np.ones(n), self.d["cap"]])

    def level(self, coef: np.ndarray, offset: np.ndarray, solver: str) -> tuple[float, Any]:
        """``max z`` s.t. ``coef x - z >= offset`` per row, time and capacity."""
        import scipy.sparse as sp

        A, lo, hi = self.base()
        z = sp.csr_matrix(np.ones((self.n, 1)))
        A = sp.vstack([sp.hstack([a, sp.csr_matrix((a.shape[0], 1))]) for a in A]
                      + [sp.hstack([self.rows(coef), -z])]).tocsr()
        col = solve_lp(np.r_[np.zeros(self.E), 1.0], A, np.r_[*lo, offset],
                       np.r_[*hi, np.full(self.n, np.inf)], np.r_[np.ones(self.E), np.inf],
                       solver)
        return float(col[-1]), col[: self.E]

    def linear(self, gain: np.ndarray, keep: tuple[np.ndarray, np.ndarray] | None,
               solver: str) -> np.ndarray:
        """``max gain x`` s.t. time, capacity and ``keep[0] x >= keep[1]`` per row."""
        import scipy.sparse as sp

        A, lo, hi = self.base()
        if keep is not None:
            A, lo, hi = A + [self.rows(keep[0])], lo + [keep[1]], hi + [np.full(self.n, np.inf)]
        return solve_lp(gain, sp.vstack(A).tocsr(), np.concatenate(lo), np.concatenate(hi),
                        np.ones(self.E), solver)


def lp_policy(policy: str, d: dict[str, np.ndarray], counts: np.ndarray | None = None,
              solver: str = "highs", R_known: float | None = None) -> dict[str, Any]:
    """The policy's stages as LPs (``counts``: over symmetry classes). FTF: a Dinkelbach
    sequence (``R_known``: only the last LP, at the known optimum)."""
    cols = Columns(d, counts)
    j, t = cols.job, cols.typ
    c = cols.c[j]
    T = d["T"][j, t]
    wc_gain = c * d["norm"][j, t]
    if policy == "max-throughput":
        return {"x": cols.x(cols.linear(c * T, None, solver))}
    if policy in ("max-min", "makespan"):
        coef = T * (d["cs"][j] if policy == "max-min" else 1.0 / d["steps"][j])
        z, _ = cols.level(coef, np.zeros(cols.n), solver)
        keep = (coef, np.full(cols.n, z * (1.0 - STAGE_SLACK)))
        return {"x": cols.x(cols.linear(wc_gain, keep, solver))}
    # finish-time fairness: rows ((R D - t) tp - steps) / q >= theta, then the kept stage
    tp = d["steps"] / (d["D"] - d["t"])  # at X^isolated (D: its finish time)
    rho = lambda tp: (d["t"] + d["steps"] / np.maximum(tp, 1e-300)) / d["D"]  # noqa: E731
    R = float(rho(tp).max()) if R_known is None else R_known
    for _ in range(1 if R_known is not None else DINKELBACH_MAX):
        q = d["D"] * tp
        F, col = cols.level(T * ((R * d["D"] - d["t"]) / q)[j], d["steps"] / q, solver)
        tp = np.einsum("ij,ij->i", d["T"], cols.x(col))
        R_new = float(rho(tp).max())
        if F <= DINKELBACH_STOP * R or R_new >= R:
            break
        R = R_new
    room = R * (1.0 + STAGE_SLACK) * d["D"] - d["t"]
    return {"x": cols.x(cols.linear(wc_gain, (T, d["steps"] / room), solver)), "R": R}


def water_filling_lps(d: dict[str, np.ndarray], entity: np.ndarray, ew: np.ndarray,
                      counts: np.ndarray | None = None, solver: str = "highs"
                      ) -> dict[str, Any]:
    """Hierarchical water-filling as a sequence of LPs (per level: the level LP, then capped
    bottleneck LPs until every rising job is decided)."""
    import scipy.sparse as sp

    cols = Columns(d, counts)
    n, E = cols.n, cols.E
    U = cols.rows(d["T"][cols.job, cols.typ] * (d["s"] / d["eq"])[cols.job])
    A0, lo0, hi0 = cols.base()
    floors, frozen = np.zeros(n), np.zeros(n, dtype=bool)
    while not frozen.all():
        live = ~frozen
        tot = np.bincount(entity, weights=live * d["w"] * cols.c, minlength=ew.size)
        wt = np.where(live, ew[entity] * d["w"] / np.maximum(tot[entity], 1e-300), 0.0)
        A = sp.vstack([sp.hstack([a, sp.csr_matrix((a.shape[0], 1))]) for a in A0]
                      + [sp.hstack([U, sp.csr_matrix(-wt[:, None])])]).tocsr()
        col = solve_lp(np.r_[np.zeros(E), 1.0], A, np.r_[*lo0, floors],
                       np.r_[*hi0, np.full(n, np.inf)], np.r_[np.ones(E), np.inf], solver)
        floors = floors + wt * max(float(col[-1]) * (1 - WF_SHRINK), 0.0)
        cand = wt > 0
        while cand.any():
            idx = np.flatnonzero(cand)
            m = idx.size
            sig = sp.csr_matrix((-np.ones(m), (np.arange(m), np.arange(m))), shape=(m, m))
            A = sp.vstack([sp.hstack([a, sp.csr_matrix((a.shape[0], m))]) for a in A0]
                          + [sp.hstack([U, sp.csr_matrix((n, m))]),
                             sp.hstack([U[idx], sig])]).tocsr()
            col = solve_lp(np.r_[np.zeros(E), np.ones(m)], A,
                           np.r_[*lo0, floors, floors[idx]],
                           np.r_[*hi0, np.full(n + m, np.inf)],
                           np.r_[np.ones(E), WF_CAP * np.maximum(1.0, floors[idx])], solver)
            rise = np.zeros(n, dtype=bool)
            rise[idx] = col[E:] > WF_RISE * np.maximum(1.0, floors[idx])
            if not rise.any():
                frozen |= cand
                break
            cand &= ~rise
    return {"floors": floors}


def fifo_greedy(d: dict[str, np.ndarray]) -> dict[str, Any]:
    """Arrival order (rows in order): each job fills its fastest types first with what the
    earlier jobs left (Gavel's FIFO; exact while no job has two types of equal speed)."""
    n, k = d["T"].shape
    x = np.zeros((n, k))
    spare = d["cap"].astype(float).copy()
    order = np.argsort(-d["T"], axis=1, kind="stable")
    for m in range(n):
        left, s = 1.0, d["s"][m]
        for j in order[m]:
            if not d["allowed"][m, j] or spare[j] <= SPARE_EPS * d["cap"][j] or left <= 0:
                continue
            give = min(left, spare[j] / s)
            x[m, j] = give
            spare[j] -= give * s
            left -= give
        if (spare <= SPARE_EPS * d["cap"]).all():
            break
    return {"x": x}


def fifo_lps(d: dict[str, np.ndarray], solver: str) -> dict[str, Any]:
    """FIFO's lexicographic program as one LP per job in arrival order (each keeps the earlier
    jobs' values), stopping when no later gang fits in the spare workers."""
    cols = Columns(d)
    v = d["T"][cols.job, cols.typ] / d["fastest"][cols.job]
    V = cols.rows(v)
    got = np.zeros(cols.n)
    x = np.zeros(cols.E)
    for m in range(cols.n):
        gain = np.where(cols.job == m, v, 0.0)
        keep = np.where(np.arange(cols.n) < m, got - FIFO_KEEP, -np.inf)
        x = np.where(cols.job <= m, cols.linear(gain, (v, keep), solver), 0.0)  # later: free
        got = V @ x
        if (cols.capr @ x >= d["cap"] * (1 - SPARE_EPS)).all():  # no worker left
            break
    return {"x": cols.x(x)}


def packing_lp(d: dict[str, np.ndarray], pairs: tuple[np.ndarray, np.ndarray],
               solver: str = "highs") -> dict[str, Any]:
    """Max-min fairness with space sharing: single columns and (pair, type) columns."""
    import scipy.sparse as sp

    cols = Columns(d)
    mem, rates = pairs
    pq, pt = np.nonzero((rates > 0).all(axis=2))
    P = pq.size
    n, E = cols.n, cols.E
    e = E + np.arange(P)
    a, b = mem[pq, 0], mem[pq, 1]
    time = sp.hstack([cols.time, _csr(np.ones(2 * P), np.r_[a, b], np.r_[e, e] - E, (n, P))])
    capr = sp.hstack([cols.capr, _csr(np.ones(P), pt, e - E, (cols.k, P))])
    cs = d["cs"]
    lev = sp.hstack([cols.rows(d["T"][cols.job, cols.typ] * cs[cols.job]),
                     _csr(np.r_[rates[pq, pt, 0] * cs[a], rates[pq, pt, 1] * cs[b]],
                          np.r_[a, b], np.r_[e, e] - E, (n, P))])
    A = sp.vstack([sp.hstack([time, sp.csr_matrix((n, 1))]),
                   sp.hstack([capr, sp.csr_matrix((cols.k, 1))]),
                   sp.hstack([lev, sp.csr_matrix(-np.ones((n, 1)))])]).tocsr()
    col = solve_lp(np.r_[np.zeros(E + P), 1.0], A, np.r_[np.full(n + cols.k, -np.inf),
                                                         np.zeros(n)],
                   np.r_[np.ones(n), d["cap"], np.full(n, np.inf)],
                   np.r_[np.ones(E + P), np.inf], solver)
    px = np.zeros((mem.shape[0], cols.k))
    px[pq, pt] = np.clip(col[E:E + P], 0.0, None)
    return {"x": cols.x(col), "px": px}


# --------------------------------------------------------------------------------------------
# Gavel-style cvxpy programs (x an (n, 3) variable; the solver named)
# --------------------------------------------------------------------------------------------
def _cvx_base(d: dict[str, np.ndarray]) -> tuple[Any, list[Any]]:
    import cvxpy as cp

    x = cp.Variable(d["T"].shape)
    sf = np.repeat(d["s"][:, None], d["T"].shape[1], axis=1)
    return x, [x >= 0, x <= d["allowed"].astype(float), cp.sum(x, axis=1) <= 1,
               cp.sum(cp.multiply(sf, x), axis=0) <= d["cap"]]


def _solved(prob: Any, solver: str) -> float:
    with warnings.catch_warnings():  # (an inaccurate solve shows in the rel. diff column)
        warnings.simplefilter("ignore")
        prob.solve(solver=solver)
    if prob.value is None or not np.isfinite(prob.value):
        raise RuntimeError(f"{solver}: {prob.status}")
    return float(prob.value)


def cvxpy_policy(policy: str, d: dict[str, np.ndarray], solver: str,
                 pairs: Any = None) -> dict[str, Any]:
    import cvxpy as cp

    if policy == "water-filling" or policy == "fifo":
        raise AssertionError("LP sequences: see water_filling_lps / fifo_lps")
    x, cons = _cvx_base(d)
    tp = cp.sum(cp.multiply(d["T"], x), axis=1)
    if policy == "max-throughput":
        _solved(cp.Problem(cp.Maximize(cp.sum(tp)), cons), solver)
        return {"x": np.clip(x.value, 0, None)}
    if policy == "packing":
        import scipy.sparse as sp

        mem, rates = pairs
        P = mem.shape[0]
        px = cp.Variable((P, d["T"].shape[1]))
        n = d["T"].shape[0]
        ia = sp.csr_matrix((np.ones(P), (mem[:, 0], np.arange(P))), shape=(n, P))
        ib = sp.csr_matrix((np.ones(P), (mem[:, 1], np.arange(P))), shape=(n, P))
        fits = ((rates > 0).all(axis=2)).astype(float)
        tp_all = (tp + ia @ cp.sum(cp.multiply(rates[:, :, 0], px), axis=1)
                  + ib @ cp.sum(cp.multiply(rates[:, :, 1], px), axis=1))
        cons = [x >= 0, x <= d["allowed"].astype(float), px >= 0, px <= fits,
                cp.sum(x, axis=1) + (ia + ib) @ cp.sum(px, axis=1) <= 1,
                cp.sum(cp.multiply(np.repeat(d["s"][:, None], x.shape[1], axis=1), x), axis=0)
                + cp.sum(px, axis=0) <= d["cap"]]
        _solved(cp.Problem(cp.Maximize(cp.min(cp.multiply(d["cs"], tp_all))), cons), solver)
        return {"x": np.clip(x.value, 0, None), "px": np.clip(px.value, 0, None)}
    if policy == "ftf":  # Gavel's: min max rho, rho = t/D + steps/D inv_pos(tp) (an SOCP)
        rho = d["t"] / d["D"] + cp.multiply(d["steps"] / d["D"], cp.inv_pos(tp))
        R = _solved(cp.Problem(cp.Minimize(cp.max(rho)), cons), solver)
        keep = [tp >= d["steps"] / (R * (1.0 + STAGE_SLACK) * d["D"] - d["t"])]
    else:
        coef = d["T"] * (d["cs"][:, None] if policy == "max-min" else 1.0 / d["steps"][:, None])
        rows = cp.sum(cp.multiply(coef, x), axis=1)
        L = _solved(cp.Problem(cp.Maximize(cp.min(rows)), cons), solver)
        keep = [rows >= L * (1.0 - STAGE_SLACK)]
    _solved(cp.Problem(cp.Maximize(cp.sum(cp.multiply(d["norm"], x))), cons + keep), solver)
    return {"x": np.clip(x.value, 0, None)}
