"""Policy families on instance families, each against the strongest plain reference, one run.

Every cell (one policy, one instance, one solver) runs in its own subprocess under a time
limit (``--timeout``; "> T s" when exceeded), so one slow cell cannot stall the table. Each
cell warms its solver up on a 64-job instance of the same family first, then times one call
(cvxpy's compilation included: Gavel pays it every round; drawing the instance and reading
off the compared values are not timed, for any solver). Per group the table prints each
solver's seconds, the ratio (reference seconds / fairalloc seconds: above 1 means fairalloc is
faster), the objective agreement (relative difference of the policy objective from
fairalloc's, flagged "!" above ``AGREE_TOL``) and fairalloc's certificate verdict (ok,
relative gap, primal residual; every stage for two-stage policies).

Instance families (``make_instance`` / ``make_market``; import them from other scripts with
``sys.path.insert(0, "benchmarks"); from families import make_instance``), Gavel/Shockwave
magnitudes (throughputs in steps/s, tens to hundreds of workers per type, independent of n):

* ``random``: log-normal speeds, every job different (3 types v100/p100/k80);
* ``identical``: every job has the same data (row, scale factor, weight, steps, elapsed);
* ``near-identical``: ``identical`` with every throughput entry times ``1 + 1e-9 N(0, 1)`` (rows
  equal up to a profiler's round-off: no two bit for bit);
* ``ties``: rows drawn from 20 model types (Zipf-like popularity) as in real traces, scale
  factors {1, 2, 4, 8} mostly 1, weights {1, 2}, steps a whole number of epochs of the model,
  elapsed 0 or whole 6-minute rounds -- so jobs of one model tie exactly;
* ``dominant``: one type has most of the workers and is every job's fastest;
* ``sparse``: each job runs on 1 or 2 of the 3 types;
* ``many-types-30`` / ``many-types-64`` / ``many-types-100``: log-normal speeds on 30 / 64 /
  100 types.

Markets (buyers x goods, utilities log-normal steps/s; Leontief: demands) use the families
random / identical / near-identical / ties / dominant (one good every buyer's favourite) /
sparse (1-2 goods).

Policies and references (every solver named; none chosen by cvxpy):

* ``max-min`` (first stage only) and ``max-min+wc`` (with the work-conserving stage): Gavel's
  vectorised cvxpy program (``Maximize(min(sum(multiply(coeff, x), axis=1)))``) with ECOS
  (Gavel's default) and with Clarabel; HiGHS (highspy) on the whole LP, interior point and
  simplex. The second stage (all references): maximise the total normalised throughput with
  the level kept to the same relative slack as fairalloc's.
* ``ftf`` and ``ftf+wc``: the vectorised cvxpy SOCP ``min max(t/D + steps/D * inv_pos(tp))``
  (Gavel's formulation without its per-job loop) with ECOS and Clarabel; the second stage is
  an LP (``tp >= steps / (R D - t)``). Not an LP: no HiGHS row.
* ``water-filling``: 3 entities (weights 1, 2, 3): the LP-sequence algorithm in cvxpy (per
  level, the level LP then capped bottleneck LPs) with Clarabel and with ECOS.
* ``fisher-linear`` / ``fisher-leontief``: the Eisenberg-Gale program handed to Clarabel
  directly (exponential cones, no cvxpy), sizes 4,096 x 100 and 16,384 x 20.
* Elastic fair queuing per event is measured by ``benchmarks/queuing.py``.

Run: ``python benchmarks/families.py [--quick] [--family F ...] [--policy P ...]
[--sizes N ...] [--timeout S] [--scaling]``. ``--scaling``: n x 4 from 4,096 to 1,048,576
jobs (max-min, FTF; random family with 0.75 n workers in all, as benchmarks/throughput.py's
n/4 per type, in the family's proportions: a cluster growing with the jobs) and 4,096 to
65,536 buyers x 20 goods (markets), with exponents fitted by log-log least squares over the
cells that finished (``--sizes`` and ``--policy`` narrow it).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
#: the checkout whose fairalloc a cell imports: this one, or ``--before DIR``'s (set in the
#: environment of the cell's subprocess)
ROOT = Path(os.environ.get("FAMILIES_FAIRALLOC_ROOT", HERE.parent))
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# --------------------------------------------------------------------------------------------
# constants
# --------------------------------------------------------------------------------------------
SEED = 2026
AGREE_TOL = 1e-4  # ACCURACY: relative objective difference above which a row is flagged "!"
DEFAULT_TIMEOUT = 120.0  # PERFORMANCE: seconds per cell
QUICK_TIMEOUT = 30.0  # PERFORMANCE: seconds per cell with --quick
WARM_N = 64  # PERFORMANCE: jobs (buyers) of the warm-up instance each cell solves first
SIZES = (4096, 16384)
MARKET_SIZES = ((4096, 100), (16384, 20))  # buyers x goods; other sizes: see market_goods
SCALING_SIZES = (4096, 16384, 65536, 262144, 1048576)
SCALING_MARKET_SIZES = ((4096, 20), (16384, 20), (65536, 20))
SCALING_WORKERS_PER_JOB = 0.75  # scaling table: 0.75 n workers (throughput.py: n/4 per type)
TYPES3 = ("v100", "p100", "k80")
WORKERS3 = (128, 192, 256)  # Gavel-like cluster: tens to hundreds of workers per type
TYPE_SPEED3 = (1.0, 0.6, 0.3)  # mean speed of p100 / k80 relative to v100
DOMINANT_WORKERS = (768, 48, 48)  # the dominant family: most workers on the fastest type
MANY_WORKERS = (8, 65)  # many-types: workers per type drawn from [8, 64]
SF_VALUES = (1, 2, 4, 8)
SF_P = (0.7, 0.1, 0.15, 0.05)  # Gavel's trace mix of gang sizes
TIES_MODELS = 20
TIES_EPOCHS = (10, 20, 50, 100)
ROUND_S = 360.0  # Gavel's round length (s)
BASE_SPEED = 10.0  # steps/s of a median job on the fastest type
STAGE_SLACK = 1e-9  # ACCURACY: = fairalloc's effective stage_tol (min(STAGE_TOL, GAP_TOL/10))
ENTITY_WEIGHTS = (1.0, 2.0, 3.0)

FAMILIES = ("random", "identical", "near-identical", "ties", "dominant", "sparse",
            "many-types-30", "many-types-64", "many-types-100")
MARKET_FAMILIES = ("random", "identical", "near-identical", "ties", "dominant", "sparse")
NEAR_NOISE = 1e-9  # the relative noise of ``near-identical`` rows (issue #28's cliff)
QUICK_FAMILIES = ("random", "identical", "ties")
THROUGHPUT_POLICIES = ("max-min", "max-min+wc", "ftf", "ftf+wc", "water-filling")
MARKET_POLICIES = ("fisher-linear", "fisher-leontief")
POLICIES = THROUGHPUT_POLICIES + MARKET_POLICIES
FAIRALLOC = "fairalloc"
REFERENCES = {
    "max-min": ("Gavel cvxpy+ECOS", "Gavel cvxpy+Clarabel", "HiGHS IPM", "HiGHS simplex"),
    "ftf": ("Gavel cvxpy+ECOS", "Gavel cvxpy+Clarabel"),
    "water-filling": ("LP sequence cvxpy+Clarabel", "LP sequence cvxpy+ECOS"),
    "fisher-linear": ("Clarabel direct",),
    "fisher-leontief": ("Clarabel direct",),
}
REFERENCES["max-min+wc"] = REFERENCES["max-min"]
REFERENCES["ftf+wc"] = REFERENCES["ftf"]
QUICK_SKIP = {"HiGHS simplex", "LP sequence cvxpy+ECOS"}  # --quick: the slower twin only


# --------------------------------------------------------------------------------------------
# instance families
# --------------------------------------------------------------------------------------------
def _types(family: str) -> int:
    return int(family.rsplit("-", 1)[1]) if family.startswith("many-types") else 3


def make_instance(family: str, n: int, seed: int = SEED, workers_per_job: float | None = None
                  ) -> tuple[Any, Any]:
    """``(fairalloc.Jobs, fairalloc.Cluster)`` of ``n`` jobs of one instance family.

    Workers per type are the family's fixed Gavel-like counts, or with ``workers_per_job``
    the same proportions scaled to ``workers_per_job * n`` workers in all (the scaling table:
    a cluster that grows with the jobs)."""
    import fairalloc as fa

    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; one of {FAMILIES}")
    rng = np.random.default_rng(seed)
    k = _types(family)
    if k == 3:
        names: tuple[str, ...] = TYPES3
        workers = np.array(DOMINANT_WORKERS if family == "dominant" else WORKERS3)
        speed = np.array(TYPE_SPEED3)
    else:
        names = tuple(f"t{j}" for j in range(k))
        workers = rng.integers(*MANY_WORKERS, k)
        speed = np.geomspace(1.0, 0.2, k)
    if workers_per_job is not None:
        workers = np.maximum(MANY_WORKERS[0],
                             np.round(workers / workers.sum() * workers_per_job * n)).astype(int)
    sf = rng.choice(SF_VALUES, n, p=SF_P)
    weight = np.ones(n)
    steps = rng.uniform(1e3, 1e5, n)
    elapsed = rng.uniform(0.0, 10 * ROUND_S, n)
    T = BASE_SPEED * rng.lognormal(0.0, 0.8, n)[:, None] * speed * rng.lognormal(0.0, 0.3,
                                                                                 (n, k))
    if family in ("identical", "near-identical"):
        T = np.tile(T[0], (n, 1))
        sf = np.ones(n, dtype=int)
        steps = np.full(n, steps[0])
        elapsed = np.zeros(n)
        if family == "near-identical":
            T = T * (1.0 + NEAR_NOISE * rng.standard_normal(T.shape))
    elif family == "ties":
        pop = 1.0 / np.arange(1, TIES_MODELS + 1)
        model = rng.choice(TIES_MODELS, n, p=pop / pop.sum())
        rows = BASE_SPEED * rng.lognormal(0.0, 0.8, TIES_MODELS)[:, None] * speed \
            * rng.lognormal(0.0, 0.3, (TIES_MODELS, k))
        per_epoch = np.round(rng.uniform(100, 2000, TIES_MODELS))
        T = rows[model]
        weight = rng.choice([1.0, 2.0], n, p=[0.8, 0.2])
        steps = per_epoch[model] * rng.choice(TIES_EPOCHS, n)
        elapsed = np.where(rng.random(n) < 0.5, 0.0, ROUND_S * rng.integers(1, 20, n))
    elif family == "dominant":
        T[:, 0] = T.max(axis=1) * rng.uniform(1.2, 2.0, n)
    elif family == "sparse":
        keep = np.zeros((n, k), dtype=bool)
        first = rng.integers(0, k, n)
        keep[np.arange(n), first] = True
        second = rng.integers(0, k, n)
        two = rng.random(n) < 0.5
        keep[np.arange(n)[two], second[two]] = True
        T = np.where(keep, T, 0.0)
    jobs = fa.Jobs(T, scale_factor=sf, weight=weight, steps_remaining=steps, elapsed=elapsed)
    return jobs, fa.Cluster(dict(zip(names, workers.tolist(), strict=True)))


def market_goods(n: int) -> int:
    """Goods of the market benchmarked at ``n`` buyers: 100 up to 4,096 buyers, else 20."""
    return MARKET_SIZES[0][1] if n <= MARKET_SIZES[0][0] else MARKET_SIZES[1][1]


def make_market(family: str, n: int, m: int, kind: str = "linear", seed: int = SEED
                ) -> tuple[np.ndarray, np.ndarray]:
    """``(utility or demand (n, m), budgets (n,))`` of a market family."""
    if family not in MARKET_FAMILIES:
        raise ValueError(f"unknown market family {family!r}; one of {MARKET_FAMILIES}")
    rng = np.random.default_rng(seed)
    U = BASE_SPEED * rng.lognormal(0.0, 1.0, (n, m))
    if kind == "leontief":  # demands: each buyer needs about a third of the goods
        U = np.where(rng.random((n, m)) < 0.3, U, 0.0)
        U[np.arange(n), rng.integers(0, m, n)] += BASE_SPEED
    B = rng.uniform(0.5, 2.0, n)
    if family in ("identical", "near-identical"):
        U = np.tile(U[0], (n, 1))
        B = np.ones(n)
        if family == "near-identical":
            U = U * (1.0 + NEAR_NOISE * rng.standard_normal(U.shape))
    elif family == "ties":
        pop = 1.0 / np.arange(1, TIES_MODELS + 1)
        U = U[rng.choice(TIES_MODELS, n, p=pop / pop.sum())]
        B = rng.choice([1.0, 2.0], n, p=[0.8, 0.2])
    elif family == "dominant":
        U[:, 0] = U.max(axis=1) * rng.uniform(1.5, 3.0, n)
    elif family == "sparse":
        keep = np.zeros((n, m), dtype=bool)
        keep[np.arange(n), rng.integers(0, m, n)] = True
        two = rng.random(n) < 0.5
        keep[np.arange(n)[two], rng.integers(0, m, n)[two]] = True
        U = np.where(keep, BASE_SPEED * rng.lognormal(0.0, 1.0, (n, m)), 0.0)
    return U, B


# --------------------------------------------------------------------------------------------
# plain data of the throughput programs (computed here from the definitions, not by fairalloc)
# --------------------------------------------------------------------------------------------
def _data(jobs: Any, cluster: Any) -> dict[str, np.ndarray]:
    T = np.asarray(jobs.throughput, dtype=float)
    s = np.asarray(jobs.scale_factor, dtype=float)
    w = np.asarray(jobs.weight, dtype=float)
    cap = np.asarray(cluster.capacity, dtype=float)
    allowed = (T > 0) & (s[:, None] <= cap[None, :])
    T = np.where(allowed, T, 0.0)
    equal_tp = T @ (cap / cap.sum())  # throughput under X^equal (Gavel §4.1)
    n = T.shape[0]
    iso = np.where(allowed, cap[None, :] / np.maximum(n * s, cap.sum())[:, None], 0.0)
    steps = np.asarray(jobs.steps_remaining, dtype=float)
    t = np.asarray(jobs.elapsed, dtype=float)
    D = t + steps / np.einsum("ij,ij->i", T, iso)  # isolated finish time (Themis)
    return {"T": T, "s": s, "w": w, "cap": cap, "equal_tp": equal_tp, "steps": steps, "t": t,
            "D": D, "coeff": T * (s / (w * equal_tp))[:, None], "norm": T / equal_tp[:, None]}


def _level(d: dict[str, np.ndarray], x: np.ndarray) -> float:
    return float(np.min(np.einsum("ij,ij->i", d["coeff"], x)))


def _total(d: dict[str, np.ndarray], x: np.ndarray) -> float:
    return float(np.einsum("ij,ij->", d["norm"], x))


def _max_rho(d: dict[str, np.ndarray], x: np.ndarray) -> float:
    tp = np.einsum("ij,ij->i", d["T"], x)
    return float(np.max((d["t"] + d["steps"] / tp) / d["D"]))


# --------------------------------------------------------------------------------------------
# references: cvxpy (Gavel's formulations), HiGHS on the whole LP, Clarabel directly
# --------------------------------------------------------------------------------------------
def _cvxpy_solver(name: str) -> str:
    import cvxpy as cp

    solver = {"ECOS": "ECOS", "Clarabel": "CLARABEL"}[name]
    if solver not in cp.installed_solvers():
        raise RuntimeError(f'{name.lower()} not installed (pip install ".[bench]" in the '
                           'checkout)')
    return solver


def _cvx_base(d: dict[str, np.ndarray]) -> tuple[Any, list[Any]]:
    import cvxpy as cp

    x = cp.Variable(d["T"].shape)
    sf_array = np.repeat(d["s"][:, None], d["T"].shape[1], axis=1)
    return x, [x >= 0, x <= 1, cp.sum(x, axis=1) <= 1,
               cp.sum(cp.multiply(sf_array, x), axis=0) <= d["cap"]]


def cvxpy_max_min(d: dict[str, np.ndarray], solver: str, wc: bool) -> list[float]:
    """Gavel's LAS program (vectorised cvxpy, as in its max_min_fairness policy); with ``wc``
    a second program maximises the total normalised throughput at the level."""
    import cvxpy as cp

    x, cons = _cvx_base(d)
    level = cp.min(cp.sum(cp.multiply(d["coeff"], x), axis=1))
    prob = cp.Problem(cp.Maximize(level), cons)
    prob.solve(solver=_cvxpy_solver(solver))
    L = float(prob.value)
    if not wc:
        return [L]
    rows = cp.sum(cp.multiply(d["coeff"], x), axis=1)
    prob2 = cp.Problem(cp.Maximize(cp.sum(cp.multiply(d["norm"], x))),
                       [*cons, rows >= L * (1.0 - STAGE_SLACK)])
    prob2.solve(solver=_cvxpy_solver(solver))
    return [L, float(prob2.value)]


def cvxpy_ftf(d: dict[str, np.ndarray], solver: str, wc: bool) -> list[float]:
    """Finish-time fairness as Gavel writes it, vectorised: ``min max(t/D + steps/D inv_pos(tp))``
    (an SOCP); with ``wc`` an LP then maximises the total normalised throughput at ``rho <= R``."""
    import cvxpy as cp

    x, cons = _cvx_base(d)
    tp = cp.sum(cp.multiply(d["T"], x), axis=1)
    rho = d["t"] / d["D"] + cp.multiply(d["steps"] / d["D"], cp.inv_pos(tp))
    prob = cp.Problem(cp.Minimize(cp.max(rho)), cons)
    prob.solve(solver=_cvxpy_solver(solver))
    R = float(prob.value)
    if not wc:
        return [R]
    room = R * (1.0 + STAGE_SLACK) * d["D"] - d["t"]
    prob2 = cp.Problem(cp.Maximize(cp.sum(cp.multiply(d["norm"], x))),
                       [*cons, tp >= d["steps"] / room])
    prob2.solve(solver=_cvxpy_solver(solver))
    return [R, float(prob2.value)]


def highs_solve(c: np.ndarray, A: Any, row_lo: np.ndarray, row_hi: np.ndarray,
                col_lo: np.ndarray, col_hi: np.ndarray, algorithm: str,
                options: dict[str, Any] | None = None) -> tuple[float, Any]:
    """``max c x`` s.t. ``row_lo <= A x <= row_hi``, ``col_lo <= x <= col_hi`` in highspy
    (plain highspy, no fairalloc: the whole-LP reference; ``options``: more HiGHS options)."""
    import highspy
    import scipy.sparse as sp

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("solver", algorithm)
    for key, value in (options or {}).items():
        h.setOptionValue(key, value)
    A = sp.csc_matrix(A)
    A.sort_indices()
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = A.shape[1], A.shape[0]
    lp.col_cost_ = -c
    lp.col_lower_, lp.col_upper_ = col_lo, col_hi
    inf = highspy.kHighsInf
    lp.row_lower_ = np.where(np.isfinite(row_lo), row_lo, -inf)
    lp.row_upper_ = np.where(np.isfinite(row_hi), row_hi, inf)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = A.shape[1], A.shape[0]
    lp.a_matrix_.start_ = A.indptr.astype(np.int32)
    lp.a_matrix_.index_ = A.indices.astype(np.int32)
    lp.a_matrix_.value_ = A.data.astype(float)
    h.passModel(lp)
    h.run()
    status = h.modelStatusToString(h.getModelStatus())
    if status != "Optimal":
        raise RuntimeError(f"HiGHS {algorithm}: {status}")
    return -float(h.getInfo().objective_function_value), np.asarray(h.getSolution().col_value)


def highs_max_min(d: dict[str, np.ndarray], algorithm: str, wc: bool) -> list[float]:
    """The whole max-min LP (and the work-conserving LP) as sparse matrices in highspy."""
    import scipy.sparse as sp

    T = d["T"]
    n, k = T.shape
    job, typ = np.nonzero(T > 0)  # one column per usable (job, type)
    E = job.size
    cols = np.arange(E)
    time_rows = sp.csr_matrix((np.ones(E), (job, cols)), shape=(n, E))
    cap_rows = sp.csr_matrix((d["s"][job], (typ, cols)), shape=(k, E))
    level_rows = sp.csr_matrix((d["coeff"][job, typ], (job, cols)), shape=(n, E))
    inf = np.inf
    # stage 1: max z  s.t.  time <= 1, capacity <= cap, z - coeff x <= 0
    A = sp.vstack([sp.hstack([time_rows, sp.csr_matrix((n, 1))]),
                   sp.hstack([cap_rows, sp.csr_matrix((k, 1))]),
                   sp.hstack([-level_rows, sp.csr_matrix(np.ones((n, 1)))])])
    c = np.r_[np.zeros(E), 1.0]
    lo = np.r_[np.full(n + k, -inf), np.full(n, -inf)]
    hi = np.r_[np.ones(n), d["cap"], np.zeros(n)]
    L, _ = highs_solve(c, A, lo, hi, np.zeros(E + 1), np.r_[np.ones(E), inf], algorithm)
    if not wc:
        return [L]
    A2 = sp.vstack([time_rows, cap_rows, level_rows])
    lo2 = np.r_[np.full(n + k, -inf), np.full(n, L * (1.0 - STAGE_SLACK))]
    hi2 = np.r_[np.ones(n), d["cap"], np.full(n, inf)]
    total, _ = highs_solve(d["norm"][job, typ], A2, lo2, hi2, np.zeros(E), np.ones(E),
                            algorithm)
    return [L, total]


def lp_sequence_water_filling(jobs: Any, cluster: Any, entities: np.ndarray, solver: str
                              ) -> list[float]:
    """Water-filling as a sequence of LPs in cvxpy (per level: the level LP, then capped
    bottleneck LPs until every rising job is decided); returns each job's final level."""
    import cvxpy as cp

    d = _data(jobs, cluster)
    slv = _cvxpy_solver(solver)
    n = d["T"].shape[0]
    ew = np.array(ENTITY_WEIGHTS)
    u_coef = d["T"] * (d["s"] / d["equal_tp"])[:, None]
    x, base = _cvx_base(d)
    u = cp.sum(cp.multiply(u_coef, x), axis=1)
    floors = np.zeros(n)
    frozen = np.zeros(n, dtype=bool)
    btol = 1e-6
    while not frozen.all():
        live = ~frozen
        tot = np.bincount(entities, weights=live * d["w"], minlength=ew.size)
        wt = np.where(live, ew[entities] * d["w"] / np.maximum(tot[entities], 1e-300), 0.0)
        theta = cp.Variable()
        cp.Problem(cp.Maximize(theta), [*base, u >= floors + wt * theta]).solve(solver=slv)
        floors = floors + wt * max(float(theta.value) * (1 - 1e-7), 0.0)
        cand = wt > 0
        while cand.any():
            idx = np.flatnonzero(cand)
            sigma = cp.Variable(idx.size, nonneg=True)
            caps = 1e-3 * np.maximum(1.0, floors[idx])
            cp.Problem(cp.Maximize(cp.sum(sigma)),
                       [*base, u >= floors, u[idx] - sigma >= floors[idx], sigma <= caps]
                       ).solve(solver=slv)
            rise = np.zeros(n, dtype=bool)
            rise[idx] = sigma.value > btol * np.maximum(1.0, floors[idx])
            if not rise.any():
                frozen |= cand
                break
            cand &= ~rise
    return floors.tolist()


def clarabel_market(U: np.ndarray, B: np.ndarray, kind: str) -> list[float]:
    """The Eisenberg-Gale program handed to Clarabel directly: ``max sum B_i t_i`` with
    ``(t_i, 1, u_i)`` in the exponential cone; linear: ``u_i = sum_j U_ij x_ij`` over the
    positive edges, ``sum_i x_ij <= 1``; Leontief: ``u_i = v_i``, ``sum_i a_ij v_i <= 1``.

    Scaled the way a careful user would (without it Clarabel stops on InsufficientProgress):
    each buyer's utility is measured in units of its equal share (1/n of every good), so
    utilities are O(1), and the allocation variables are multiplied by n. The objective is
    shifted back exactly (``sum B_i log(unit_i)``)."""
    import clarabel
    import scipy.sparse as sp

    n, m = U.shape
    if kind == "linear":
        rowsum = U.sum(axis=1)
        unit = rowsum / n  # utility of the equal share
        bi, gj = np.nonzero(U > 0)
        nv = bi.size  # one variable y = n x per edge, then t
        e = np.arange(nv)
        supply = sp.csr_matrix((np.ones(nv), (gj, e)), shape=(m, nv + n))
        util_rows = sp.csr_matrix((-(U[bi, gj] / rowsum[bi]), (bi, e)), shape=(n, nv + n))
    else:
        peak = U.max(axis=1)
        unit = 1.0 / (n * peak)  # level v_i of the equal share
        nv = n  # v' = v / unit, then t
        supply = sp.hstack([sp.csr_matrix((U / peak[:, None]).T), sp.csr_matrix((m, n))])
        util_rows = sp.hstack([-sp.identity(n), sp.csr_matrix((n, n))])
    nonneg = sp.hstack([-sp.identity(nv), sp.csr_matrix((nv, n))])
    t_rows = sp.hstack([sp.csr_matrix((n, nv)), -sp.identity(n)])
    one_rows = sp.csr_matrix((n, nv + n))
    # exponential cones (t_i, 1, u_i): interleave the three row blocks per buyer
    cone = sp.vstack([t_rows, one_rows, util_rows]).tocsr()
    order = np.arange(3 * n).reshape(3, n).T.ravel()
    A = sp.vstack([supply, nonneg, cone[order]]).tocsc()
    b = np.r_[np.full(m, float(n)), np.zeros(nv), np.tile([0.0, 1.0, 0.0], n)]
    q = np.r_[np.zeros(nv), -B]
    P = sp.csc_matrix((nv + n, nv + n))
    cones = [clarabel.NonnegativeConeT(m + nv)] + [clarabel.ExponentialConeT()] * n
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    sol = clarabel.DefaultSolver(P, q, A, b, cones, settings).solve()
    if "Solved" not in str(sol.status):
        raise RuntimeError(f"Clarabel: {sol.status}")
    return [-float(sol.obj_val) + float(B @ np.log(unit))]


# --------------------------------------------------------------------------------------------
# one cell: build the instance, warm up, time one call
# --------------------------------------------------------------------------------------------
def _cert(certs: Any) -> dict[str, Any]:
    certs = tuple(certs)
    return {"ok": bool(all(c.ok for c in certs)),
            "gap": float(max(c.relative_gap for c in certs)),
            "residual": float(max(c.primal_residual for c in certs))}


def _instance(policy: str, family: str, n: int, m: int, seed: int,
              workers_per_job: float | None = None) -> tuple[Any, ...]:
    """One cell's instance: ``(U, B)`` for markets, ``(jobs, cluster)`` otherwise."""
    if policy in MARKET_POLICIES:
        kind = "linear" if policy == "fisher-linear" else "leontief"
        return make_market(family, n, m, kind, seed)
    return make_instance(family, n, seed, workers_per_job)


def _solve(policy: str, solver: str, inst: tuple[Any, ...]
           ) -> Callable[[], tuple[list[float], dict[str, Any] | None]]:
    """Solve one cell's instance (the timed part); returns a function that reads off the
    values compared across solvers and fairalloc's certificate (not timed)."""
    import fairalloc as fa

    if policy in MARKET_POLICIES:
        kind = "linear" if policy == "fisher-linear" else "leontief"
        U, B = inst
        if solver == FAIRALLOC:
            r = fa.fisher_market(U, B, kind=kind)
            return lambda: ([float(r.objective)], _cert([r.certificate]))
        value = clarabel_market(U, B, kind)
        return lambda: (value, None)
    jobs, cluster = inst
    wc = policy.endswith("+wc")
    if policy == "water-filling":
        n = jobs.throughput.shape[0]
        ents = np.arange(n) % len(ENTITY_WEIGHTS)
        if solver == FAIRALLOC:
            a = fa.water_filling(jobs, cluster, entities=ents,
                                 entity_weights=dict(enumerate(ENTITY_WEIGHTS)))
            return lambda: (np.asarray(a.level_floors).tolist(), _cert(a.stage_certificates))
        value = lp_sequence_water_filling(jobs, cluster, ents, solver.rsplit("+", 1)[1])
        return lambda: (value, None)
    if solver == FAIRALLOC:
        fn = fa.max_min_fairness if policy.startswith("max-min") else fa.finish_time_fairness
        a = fn(jobs, cluster, work_conserving=wc)

        def read() -> tuple[list[float], dict[str, Any] | None]:
            d = _data(jobs, cluster)
            x = np.asarray(a.allocation)
            head = _level(d, x) if policy.startswith("max-min") else float(a.objective)
            return [head, _total(d, x)] if wc else [head], _cert(a.stage_certificates)
        return read
    d = _data(jobs, cluster)  # the reference's own data preparation is part of its time
    if solver.startswith("HiGHS"):
        value = highs_max_min(d, "ipm" if solver.endswith("IPM") else "simplex", wc)
    elif policy.startswith("max-min"):
        value = cvxpy_max_min(d, solver.rsplit("+", 1)[1], wc)
    else:
        value = cvxpy_ftf(d, solver.rsplit("+", 1)[1], wc)
    return lambda: (value, None)


def run_cell(spec: dict[str, Any]) -> dict[str, Any]:
    """Run one cell in this process: warm up on a small instance, then time one solve.

    ``spec``: ``policy``, ``solver``, ``family``, ``n``, ``m`` (goods, markets), ``seed``,
    ``warm`` (bool), ``workers_per_job`` (see `make_instance`). Returns ``{"seconds",
    "value", "cert"}`` (``cert`` for fairalloc only).
    """
    policy, solver, family = spec["policy"], spec["solver"], spec["family"]
    m = int(spec.get("m", 0))
    seed = int(spec.get("seed", SEED))
    wpj = spec.get("workers_per_job")
    if spec.get("warm", True):
        _solve(policy, solver, _instance(policy, family, min(WARM_N, int(spec["n"])), m,
                                         seed + 1, wpj))()
    inst = _instance(policy, family, int(spec["n"]), m, seed, wpj)  # not timed
    t0 = time.perf_counter()
    read = _solve(policy, solver, inst)
    seconds = time.perf_counter() - t0
    value, cert = read()
    return {"seconds": seconds, "value": value, "cert": cert}


def run_cell_subprocess(spec: dict[str, Any], timeout: float, root: str | None = None
                        ) -> dict[str, Any]:
    """``run_cell`` in a fresh interpreter, killed after ``timeout`` seconds; ``root``: the
    checkout whose fairalloc it imports (default: this one)."""
    env = None if root is None else {**os.environ, "FAMILIES_FAIRALLOC_ROOT": root}
    try:
        proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--cell",
                               json.dumps(spec)], capture_output=True, text=True,
                              timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"timeout": timeout}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("CELL "):
            return dict(json.loads(line[len("CELL "):]))
    err = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": err[:120]}


# --------------------------------------------------------------------------------------------
# agreement and table
# --------------------------------------------------------------------------------------------
def agreement(policy: str, ours: list[float], ref: list[float],
              budget: float | None = None) -> float:
    """Largest relative difference between fairalloc's objective values and a reference's.

    Throughput policies: ``|a - b| / |b|`` per value (level, total, rho; water-filling: every
    job's level, relative to ``max(b, 1e-9)``). Markets: ``|a - b| / sum(budgets)`` (the
    objective ``sum B log U`` can be near 0; its gap is judged against the total budget).
    """
    a, b = np.asarray(ours, dtype=float), np.asarray(ref, dtype=float)
    if a.shape != b.shape:
        return math.inf
    if policy in MARKET_POLICIES:
        return float(np.max(np.abs(a - b)) / (budget if budget else 1.0))
    scale = np.maximum(np.abs(b), 1e-9)
    return float(np.max(np.abs(a - b) / scale))


def flagged(rel: float) -> bool:
    """Whether an objective difference is too large for two exact solvers of one program."""
    return not rel <= AGREE_TOL


def _fmt_time(r: dict[str, Any]) -> str:
    if "timeout" in r:
        return f"> {r['timeout']:.0f} s"
    if "error" in r:
        return "error"
    return f"{r['seconds']:.3f} s"


def _fmt_cert(c: dict[str, Any] | None) -> str:
    if not c:
        return ""
    return (f"{'ok' if c['ok'] else 'NOT OK'}, gap {c['gap']:.1e}, "
            f"residual {c['residual']:.1e}")


def group_rows(policy: str, ours: dict[str, Any], refs: dict[str, dict[str, Any]],
               budget: float | None = None) -> tuple[list[tuple[str, ...]], dict[str, Any]]:
    """Table rows of one (policy, instance) group and its summary.

    Rows: (solver, seconds, ratio = reference s / fairalloc s, agreement, certificate);
    summary: the strongest reference that finished (or the timeouts' lower bound), the ratio
    and the largest agreement."""
    rows = [(FAIRALLOC, _fmt_time(ours), "", "", _fmt_cert(ours.get("cert")))]
    best: tuple[float, str] | None = None
    worst_rel: float | None = None  # None: no reference value to compare with
    t_ours = ours.get("seconds")
    for name, r in refs.items():
        ratio = rel_s = ""
        if "seconds" in r:
            if best is None or r["seconds"] < best[0]:
                best = (r["seconds"], name)
            if t_ours is not None:
                ratio = f"{r['seconds'] / t_ours:.2f}x"
            if "value" in ours:
                rel = agreement(policy, ours["value"], r["value"], budget)
                worst_rel = rel if worst_rel is None else max(worst_rel, rel)
                rel_s = f"{rel:.1e}" + (" !" if flagged(rel) else "")
        elif "timeout" in r and t_ours is not None:
            ratio = f"> {r['timeout'] / t_ours:.2f}x"
        elif "error" in r:
            rel_s = r["error"]
        rows.append((name, _fmt_time(r), ratio, rel_s, ""))
    summary: dict[str, Any] = {"ours": _fmt_time(ours), "rel": worst_rel,
                               "cert": _fmt_cert(ours.get("cert")) or ours.get("error", "")}
    if best is not None:
        summary["best"] = f"{best[1]} {best[0]:.3f} s"
        summary["best_seconds"] = best[0]
        summary["ratio"] = (f"{best[0] / t_ours:.2f}x" if t_ours is not None
                            else f"< {best[0] / ours['timeout']:.2f}x" if "timeout" in ours
                            else "")
    else:
        timeouts = [r["timeout"] for r in refs.values() if "timeout" in r]
        summary["best"] = f"all > {max(timeouts):.0f} s" if timeouts else "none finished"
        summary["ratio"] = (f"> {min(timeouts) / t_ours:.2f}x"
                            if timeouts and t_ours is not None else "")
    return rows, summary


def _budget(policy: str, family: str, n: int, m: int) -> float | None:
    if policy not in MARKET_POLICIES:
        return None
    kind = "linear" if policy == "fisher-linear" else "leontief"
    return float(make_market(family, n, m, kind)[1].sum())


def run_table(cells: list[tuple[str, str, int, int]], refs_for: dict[str, tuple[str, ...]],
              timeout: float, before: str | None = None) -> list[tuple[Any, ...]]:
    """Run and print every (policy, family, n, m) group; returns the summary rows.

    ``before``: another checkout (an earlier commit); its fairalloc solves the same cell too,
    printed as ``fairalloc (before)`` with the ratio before s / now s."""
    summaries = []
    head = f"{'solver':<28}{'seconds':>11}{'ratio':>11}   {'rel. diff':<11}certificate"
    for policy, family, n, m in cells:
        size = f"{n:,} x {m}" if m else f"{n:,} jobs"
        print(f"\n{policy} | {family} | {size}", flush=True)
        print(head)
        spec = {"policy": policy, "family": family, "n": n, "m": m, "seed": SEED}
        ours = run_cell_subprocess({**spec, "solver": FAIRALLOC}, timeout)
        print(f"{FAIRALLOC:<28}{_fmt_time(ours):>11}{'':>11}   {'':<11}"
              f"{_fmt_cert(ours.get('cert'))}{ours.get('error', '')}", flush=True)
        if before is not None:
            old = run_cell_subprocess({**spec, "solver": FAIRALLOC}, timeout, before)
            ours["before"] = old
            ratio = (f"{old['seconds'] / ours['seconds']:.2f}x"
                     if "seconds" in old and "seconds" in ours
                     else f"> {old['timeout'] / ours['seconds']:.2f}x"
                     if "timeout" in old and "seconds" in ours else "")
            print(f"{FAIRALLOC + ' (before)':<28}{_fmt_time(old):>11}{ratio:>11}   "
                  f"{'':<11}{_fmt_cert(old.get('cert'))}{old.get('error', '')}", flush=True)
        refs = {}
        for name in refs_for[policy]:
            refs[name] = run_cell_subprocess({**spec, "solver": name}, timeout)
        rows, summary = group_rows(policy, ours, refs, _budget(policy, family, n, m))
        for row in rows[1:]:
            print(f"{row[0]:<28}{row[1]:>11}{row[2]:>11}   {row[3]:<11}", flush=True)
        summaries.append((policy, family, size, summary, ours))
    return summaries


def print_summary(summaries: list[tuple[Any, ...]]) -> None:
    """The summary table; with ``--before``, the earlier checkout's time and its ratio to the
    same strongest reference too."""
    show_before = any("before" in ours for *_, ours in summaries)
    print("\nSummary: fairalloc against the strongest plain reference that finished "
          "(ratio > 1: fairalloc faster)")
    extra = f"{'before':>11}{'ratio':>9}  " if show_before else ""
    print(f"{'policy':<16}{'family':<16}{'size':>14}{'fairalloc':>11}  "
          f"{'strongest reference':<36}{'ratio':>9}  {extra}{'max rel. diff':<14}certificate")
    for policy, family, size, s, ours in summaries:
        rel = "-" if s["rel"] is None else f"{s['rel']:.1e}" + (" !" if flagged(s["rel"]) else "")
        extra = ""
        if show_before:
            old = ours.get("before", {})
            best = s.get("best_seconds")
            ratio = (f"{best / old['seconds']:.2f}x" if best is not None and "seconds" in old
                     else f"< {best / old['timeout']:.2f}x"
                     if best is not None and "timeout" in old else "")
            extra = f"{_fmt_time(old):>11}{ratio:>9}  "
        print(f"{policy:<16}{family:<16}{size:>14}{s['ours']:>11}  {s['best']:<36}"
              f"{s['ratio']:>9}  {extra}{rel:<14}{s['cert']}")


def fitted_exponent(ns: list[float], seconds: list[float]) -> float:
    """Slope of log(seconds) against log(n) by least squares (nan with fewer than 2 points)."""
    if len(ns) < 2:
        return math.nan
    return float(np.polyfit(np.log(ns), np.log(seconds), 1)[0])


def run_scaling(timeout: float, policies: tuple[str, ...], sizes: tuple[int, ...] | None
                ) -> None:
    """The scaling table: n x 4 (``sizes`` when given), exponents fitted per solver."""
    print(f"\nScaling (random family, {SCALING_WORKERS_PER_JOB:g} n workers in all; fairalloc "
          f"and the strongest references; a cell > {timeout:.0f} s stops its row)")
    job_sizes = sizes or SCALING_SIZES
    buyer_sizes = sizes or tuple(n for n, _ in SCALING_MARKET_SIZES)
    plan = [(p, job_sizes, 0, REFERENCES[p][:3]) for p in ("max-min", "ftf") if p in policies]
    plan += [(p, buyer_sizes, SCALING_MARKET_SIZES[0][1], REFERENCES[p])
             for p in MARKET_POLICIES if p in policies]
    for policy, sizes, m, refs in plan:
        print(f"\n{policy} ({'buyers x ' + str(m) + ' goods' if m else 'jobs x 3 types'})")
        print(f"{'solver':<24}" + "".join(f"{n:>12,}" for n in sizes) + f"{'exponent':>10}")
        for solver in (FAIRALLOC, *refs):
            cells, ns, ts = [], [], []
            for n in sizes:
                if cells and cells[-1].startswith(">"):
                    cells.append("-")
                    continue
                r = run_cell_subprocess({"policy": policy, "solver": solver,
                                         "family": "random", "n": n, "m": m, "seed": SEED,
                                         "workers_per_job": SCALING_WORKERS_PER_JOB}, timeout)
                cells.append(_fmt_time(r) if "error" not in r else "error")
                if "seconds" in r:
                    ns.append(n)
                    ts.append(r["seconds"])
            print(f"{solver:<24}" + "".join(f"{c:>12}" for c in cells)
                  + f"{fitted_exponent(ns, ts):>10.2f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help=f"4,096 jobs, families {', '.join(QUICK_FAMILIES)}, one solver of "
                         f"each twin, {QUICK_TIMEOUT:.0f} s per cell")
    ap.add_argument("--family", nargs="+", choices=FAMILIES, help="instance families")
    ap.add_argument("--policy", nargs="+", choices=POLICIES, help="policy families")
    ap.add_argument("--sizes", nargs="+", type=int,
                    help="jobs (throughput policies) and buyers (markets; goods: 100 at "
                         "4,096 or fewer buyers, else 20; with --scaling: 20)")
    ap.add_argument("--timeout", type=float, help="seconds per cell")
    ap.add_argument("--scaling", action="store_true", help="the scaling table only")
    ap.add_argument("--before", metavar="DIR",
                    help="another checkout (e.g. a git worktree of an earlier commit): its "
                         "fairalloc solves every cell too, printed next to this one's")
    ap.add_argument("--cell", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.cell:
        print("CELL " + json.dumps(run_cell(json.loads(args.cell))), flush=True)
        return
    timeout = args.timeout or (QUICK_TIMEOUT if args.quick else DEFAULT_TIMEOUT)
    policies = tuple(args.policy or POLICIES)
    import cvxpy as cp

    have = set(cp.installed_solvers())
    print(f"fairalloc families benchmark: numpy {np.__version__}, cvxpy {cp.__version__}, "
          f"timeout {timeout:.0f} s per cell; each cell in its own process")
    if "ECOS" not in have:
        print("ecos not installed: the Gavel cvxpy+ECOS rows report the error "
              '(pip install ".[bench]" in the checkout)')
    if args.scaling:
        run_scaling(timeout, tuple(args.policy or ("max-min", "ftf", *MARKET_POLICIES)),
                    tuple(args.sizes) if args.sizes else None)
        return
    families = tuple(args.family or (QUICK_FAMILIES if args.quick else FAMILIES))
    sizes = tuple(args.sizes or ((SIZES[0],) if args.quick else SIZES))
    refs_for = {p: tuple(r for r in REFERENCES[p] if not (args.quick and r in QUICK_SKIP))
                for p in POLICIES}
    cells: list[tuple[str, str, int, int]] = []
    for policy in policies:
        market = policy in MARKET_POLICIES
        cells += [(policy, family, n, market_goods(n) if market else 0)
                  for family in families if not market or family in MARKET_FAMILIES
                  for n in sizes]
    t0 = time.perf_counter()
    summaries = run_table(cells, refs_for, timeout, args.before)
    print_summary(summaries)
    print(f"\n{len(cells)} groups in {time.perf_counter() - t0:.0f} s; EFQ per event: "
          "benchmarks/queuing.py")


if __name__ == "__main__":
    main()
