"""Heterogeneity-aware effective-throughput policies (Gavel, gavel.txt §3-4, Table 1).

An allocation ``X`` (jobs x accelerator types) gives the fraction of wall-clock time each job
spends on each type (§3.1). A job's *effective throughput* is the time-weighted throughput
``throughput(m, X) = sum_j T[m, j] X[m, j]`` (plus, with space sharing, what it gets inside the
job pairs that contain it, §3.1). Every allocation satisfies

* ``0 <= X[m, j] <= 1`` and ``X[m, j] = 0`` where ``T[m, j] = 0`` or the job's gang does not fit;
* ``sum_j X[m, j] <= 1``                               (a job runs on one type at a time);
* ``sum_m X[m, j] * scale_factor[m] <= workers[j]``     (the *capacity rows*).

Every policy is an LP over the columns of ``X`` (only the allowed entries, stored as a sparse
column list; no loops per job), built with numpy/scipy.sparse and solved by HiGHS through
:mod:`fairalloc.backends`, and certified by :func:`fairalloc.certificates.lp_certificate` from
the returned allocation and row duals. Where a policy's optimum is not unique, a
*work-conserving* second stage keeps the policy objective at its optimum (to ``stage_tol``) and
maximises the total normalised throughput, so no capacity is left idle that a job could use.

Prices
------
``prices[j]`` is the non-negative multiplier of capacity row ``j`` in the policy's first-stage
*maximisation* LP (the minimisation policies are solved as maximisations: makespan as
``max 1/makespan``, finish-time fairness as the Dinkelbach level, cost as throughput per unit
cost), i.e. ``d OPT / d workers[j]``: zero on a type that is not fully used.

Policies (builders and one-call functions)
------------------------------------------
========================  ================================  =====================================
builder                   function                          Gavel
========================  ================================  =====================================
:class:`MaxMinFairness`   :func:`max_min_fairness`          §4.1 LAS, weighted, scale factors
:class:`FinishTimeFairness` :func:`finish_time_fairness`    §4.1 min max rho (Themis)
:class:`MinMakespan`      :func:`min_makespan`              §4.1 makespan (one LP, 1/T)
:class:`MaxTotalThroughput` :func:`max_total_throughput`    §3.1 / §4.2
:class:`FIFO`             :func:`fifo`                      §4.2 FIFO
:class:`ShortestJobFirst` :func:`shortest_job_first`        §4.2 SJF
:class:`MinCost`          :func:`min_cost`                  §4.2 min cost (and with SLOs)
========================  ================================  =====================================

Every builder accepts ``pairs`` (:class:`fairalloc.space_sharing.JobPairs`, space sharing) and
``unconsolidated_throughput`` (placement sensitivity, §3.1). Builders expose their program as
cvxpy objects (:attr:`ThroughputPolicy.x`, :attr:`~ThroughputPolicy.capacity_constraint`, ...)
so that constraints and objective terms can be added and the model re-solved with
``method="cvxpy"`` (certified by the conic KKT certificate of :func:`fairalloc._cvxpy.solve_cvxpy`).
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Self

import numpy as np
import scipy.sparse as sp

from ._compose import Composable
from ._validation import as_array, as_option, as_positive_float
from .backends import Backend, LinearProgram, LPSolution, get_backend
from .certificates import lp_certificate
from .data import Cluster, Jobs
from .errors import InfeasibleError, InputError, SolverError
from .results import Certificate, Result, SolveStats, Status, require_pandas

__all__ = [
    "FIFO",
    "Allocation",
    "FinishTimeFairness",
    "MaxMinFairness",
    "MaxTotalThroughput",
    "MinCost",
    "MinMakespan",
    "ShortestJobFirst",
    "ThroughputPolicy",
    "equal_split",
    "fifo",
    "finish_time_fairness",
    "isolated_split",
    "max_min_fairness",
    "max_total_throughput",
    "min_cost",
    "min_makespan",
    "shortest_job_first",
]

METHODS = ("auto", "highs", "fast", "cvxpy")
_IPM_MIN_COLUMNS = 3000  # larger LPs go to HiGHS' interior point (with crossover)


# --------------------------------------------------------------------------------------------
# the instance in column form
# --------------------------------------------------------------------------------------------
class _Instance:
    """Jobs on a cluster as a list of allocation *columns* (sparse; built without job loops).

    A column is something that can be given time on one accelerator type: a single job (one
    column per allowed (job, type), two with placement sensitivity: consolidated and
    unconsolidated) or a job pair (space sharing). Its members are the jobs it serves.

    * ``M``  (n x E): 1 where job m is a member of column e (time rows ``M x <= 1``);
    * ``Tm`` (n x E): throughput job m gets per unit time of column e;
    * ``W``  (k x E): workers of its type the column occupies (capacity rows ``W x <= cap``);
    * ``Wc`` (k x E): the same restricted to consolidated columns (placement sensitivity).
    """

    def __init__(self, jobs: Jobs, cluster: Cluster, pairs: Any = None,
                 unconsolidated_throughput: Any = None,
                 consolidated_capacity: Any = None) -> None:
        if not isinstance(jobs, Jobs):
            raise InputError(f"jobs must be a fairalloc.Jobs, got {type(jobs).__name__}",
                             argument="jobs")
        jobs.check_cluster(cluster)
        self.jobs, self.cluster = jobs, cluster
        n, k = jobs.n, cluster.num_types
        self.n, self.k = n, k
        T = jobs.throughput
        s = jobs.scale_factor
        cap = cluster.capacity
        self.cap = cap
        self.allowed = (T > 0) & (s[:, None] <= cap[None, :])
        self.T_allowed = np.where(self.allowed, T, 0.0)
        ei, ej = np.nonzero(self.allowed)
        mem_job = [ei]
        mem_col = [np.arange(ei.size)]
        mem_tp = [T[ei, ej]]
        col_type = [ej]
        col_workers = [s[ei]]
        col_kind = [np.zeros(ei.size, dtype=np.int8)]  # 0 single, 1 unconsolidated, 2 pair
        E = ei.size
        self.placement = unconsolidated_throughput is not None
        if self.placement:
            U = as_array(unconsolidated_throughput, "unconsolidated_throughput", ndim=2,
                         shape=(n, k))
            ui, uj = np.nonzero(self.allowed & (U > 0))
            mem_job.append(ui)
            mem_col.append(E + np.arange(ui.size))
            mem_tp.append(U[ui, uj])
            col_type.append(uj)
            col_workers.append(s[ui])
            col_kind.append(np.ones(ui.size, dtype=np.int8))
            E += ui.size
            if consolidated_capacity is None:
                self.cons_cap = cap.copy()
            else:
                self.cons_cap = as_array(consolidated_capacity, "consolidated_capacity", ndim=1,
                                         shape=(k,))
                over = self.cons_cap > cap
                if over.any():
                    j = int(np.flatnonzero(over)[0])
                    raise InputError(
                        f"consolidated_capacity[{j}] = {self.cons_cap[j]:g} exceeds the "
                        f"{cap[j]:g} workers of type {cluster.types[j]!r}",
                        argument="consolidated_capacity", index=(j,))
        elif consolidated_capacity is not None:
            raise InputError("consolidated_capacity needs unconsolidated_throughput",
                             argument="consolidated_capacity")
        self.pairs = None
        if pairs is not None:
            from .space_sharing import JobPairs

            if not isinstance(pairs, JobPairs):
                raise InputError(f"pairs must be a fairalloc.JobPairs, got "
                                 f"{type(pairs).__name__}", argument="pairs")
            pairs.check(jobs, cluster)
            self.pairs = pairs
            P = pairs.num_pairs
            a, b = pairs.members[:, 0], pairs.members[:, 1]
            pw = np.maximum(s[a], s[b])
            ok = (pairs.throughput.sum(axis=2) > 0) & (pw[:, None] <= cap[None, :])
            pi, pj = np.nonzero(ok)
            cols = E + np.arange(pi.size)
            mem_job += [a[pi], b[pi]]
            mem_col += [cols, cols]
            mem_tp += [pairs.throughput[pi, pj, 0], pairs.throughput[pi, pj, 1]]
            col_type.append(pj)
            col_workers.append(pw[pi])
            col_kind.append(np.full(pi.size, 2, dtype=np.int8))
            self.pair_index = pi
            self.pair_offset = E
            E += pi.size
            del P
        self.E = E
        self.mem_job = np.concatenate(mem_job)
        self.mem_col = np.concatenate(mem_col)
        self.mem_tp = np.concatenate(mem_tp)
        self.col_type = np.concatenate(col_type)
        self.col_workers = np.concatenate(col_workers).astype(float)
        self.col_kind = np.concatenate(col_kind)
        self.M = sp.csr_matrix((np.ones(self.mem_job.size), (self.mem_job, self.mem_col)),
                               shape=(n, E))
        self.Tm = sp.csr_matrix((self.mem_tp, (self.mem_job, self.mem_col)), shape=(n, E))
        self.W = sp.csr_matrix((self.col_workers, (self.col_type, np.arange(E))), shape=(k, E))
        if self.placement:
            cons = self.col_kind != 1
            self.Wc = sp.csr_matrix((self.col_workers[cons], (self.col_type[cons],
                                                               np.flatnonzero(cons))),
                                    shape=(k, E))
        # normalisers (gavel.txt §4.1): X^equal splits a job's time across types in proportion
        # to their worker counts (row sum 1); throughput(m, X^equal) over usable types.
        self.equal_tp = self.T_allowed @ (cap / cap.sum())
        self.fastest_tp = self.T_allowed.max(axis=1)

    # --- rows shared by every policy --------------------------------------------------------
    def base_rows(self) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray, slice]:
        """Time rows, capacity rows (and consolidated-capacity rows): ``A x <= ub``."""
        blocks = [self.M, self.W]
        ub = [np.ones(self.n), self.cap]
        if self.placement:
            blocks.append(self.Wc)
            ub.append(self.cons_cap)
        A = sp.vstack(blocks, format="csr")
        upper = np.concatenate(ub)
        return A, np.full(upper.size, -np.inf), upper, slice(self.n, self.n + self.k)

    def throughput(self, xcol: np.ndarray) -> np.ndarray:
        """Effective throughput of every job for column allocation ``xcol``."""
        return self.Tm @ xcol

    def to_matrix(self, xcol: np.ndarray, kinds: tuple[int, ...] = (0, 1, 2)) -> np.ndarray:
        """Time fraction of each job on each type, ``(n, k)``, over columns of ``kinds``."""
        sel = np.isin(self.col_kind[self.mem_col], kinds)
        idx = self.mem_job[sel] * self.k + self.col_type[self.mem_col[sel]]
        out = np.bincount(idx, weights=xcol[self.mem_col[sel]], minlength=self.n * self.k)
        return out.reshape(self.n, self.k)

    def repair(self, xcol: np.ndarray) -> np.ndarray:
        """Make a solver's column allocation exactly feasible (clip, scale down overused rows)."""
        x = np.clip(xcol, 0.0, 1.0)
        rows = self.M @ x
        job_ratio = np.where(rows > 1.0, 1.0 / np.maximum(rows, 1e-300), 1.0)
        load = self.W @ x
        type_ratio = np.where(load > self.cap, self.cap / np.maximum(load, 1e-300), 1.0)
        f = type_ratio[self.col_type]
        if self.placement:
            cload = self.Wc @ x
            cratio = np.where(cload > self.cons_cap, self.cons_cap / np.maximum(cload, 1e-300),
                              1.0)
            f = np.where(self.col_kind != 1, np.minimum(f, cratio[self.col_type]), f)
        per_member = job_ratio[self.mem_job]
        colmin = np.ones(self.E)
        np.minimum.at(colmin, self.mem_col, per_member)
        return x * np.minimum(f, colmin)


# --------------------------------------------------------------------------------------------
# stages: each is one LP over [x (E columns), theta]
# --------------------------------------------------------------------------------------------
@dataclass
class _Level:
    """``max theta`` s.t. ``C x - b theta >= h`` (rows of C per job); the max-min stage."""

    C: sp.csr_matrix
    b: np.ndarray
    h: np.ndarray
    name: str = "level"


@dataclass
class _Linear:
    """``max g @ x``."""

    g: np.ndarray
    name: str = "linear"


@dataclass
class _StageResult:
    lp: LinearProgram
    x: np.ndarray  # full LP vector (columns + theta)
    duals: np.ndarray
    value: float
    cert: Certificate
    iterations: int
    cap_rows: slice


def _backend_for(backend: Any, E: int) -> Backend:
    if isinstance(backend, Backend):
        return get_backend(backend, need="lp")
    if backend == "highs":
        return get_backend("highs", need="lp", solver="ipm" if E > _IPM_MIN_COLUMNS else "choose")
    return get_backend(backend, need="lp")


def _solve(lp: LinearProgram, backend: Backend, what: str) -> LPSolution:
    sol = backend.solve_lp(lp)
    if sol.status == "infeasible":
        raise InfeasibleError(f"the {what} program is infeasible ({backend.name}: "
                              f"{sol.raw_status})", backend=backend.name, status=sol.raw_status)
    if sol.status != "optimal" or sol.x is None or sol.row_duals is None:
        raise SolverError(f"{backend.name} failed on the {what} program: {sol.raw_status}",
                          backend=backend.name, status=sol.raw_status)
    return sol


class _StageSolver:
    """Solves a sequence of stages, fixing each optimum before the next (lexicographic)."""

    def __init__(self, inst: _Instance, backend: Backend, *, stage_tol: float,
                 gap_tol: float, feas_tol: float, extra_rows: tuple | None = None) -> None:
        self.inst = inst
        self.backend = backend
        self.stage_tol = stage_tol
        self.gap_tol = gap_tol
        self.feas_tol = feas_tol
        A, lo, up, cap_rows = inst.base_rows()
        if extra_rows is not None:  # policy rows every stage keeps: B x >= lower
            B, lower = extra_rows
            A = sp.vstack([A, B], format="csr")
            lo = np.concatenate([lo, lower])
            up = np.concatenate([up, np.full(lower.size, np.inf)])
        self.A, self.lo, self.up, self.cap_rows = A, lo, up, cap_rows
        self.fixed: list[tuple[sp.csr_matrix, np.ndarray]] = []
        self.iterations = 0
        self.solves = 0

    def _program(self, stage: _Level | _Linear) -> LinearProgram:
        E = self.inst.E
        blocks = [self.A] + [B for B, _ in self.fixed]
        lo = [self.lo] + [low for _, low in self.fixed]
        up = [self.up] + [np.full(low.size, np.inf) for _, low in self.fixed]
        A = sp.vstack(blocks, format="csr")
        A = sp.hstack([A, sp.csr_matrix((A.shape[0], 1))], format="csr")
        if isinstance(stage, _Level):
            L = sp.hstack([stage.C, sp.csr_matrix(-stage.b[:, None])], format="csr")
            A = sp.vstack([A, L], format="csr")
            lo.append(stage.h)
            up.append(np.full(stage.h.size, np.inf))
            c = np.zeros(E + 1)
            c[E] = -1.0
            col_lo = np.r_[np.zeros(E), -np.inf]
            col_up = np.r_[np.ones(E), np.inf]
        else:
            c = np.r_[-stage.g, 0.0]
            col_lo = np.zeros(E + 1)
            col_up = np.r_[np.ones(E), 0.0]
        return LinearProgram.build(c, A, np.concatenate(lo), np.concatenate(up), col_lo, col_up)

    def point(self, stage: _Level | _Linear, xcol: np.ndarray) -> np.ndarray:
        """The LP vector of ``stage`` at column allocation ``xcol`` (theta recomputed)."""
        if isinstance(stage, _Level):
            act = stage.b > 0
            lev = (stage.C @ xcol - stage.h)[act] / stage.b[act]
            theta = float(lev.min()) if lev.size else 0.0
            return np.r_[xcol, theta]
        return np.r_[xcol, 0.0]

    def certify(self, res: _StageResult, stage: _Level | _Linear, xcol: np.ndarray
                ) -> Certificate:
        """Certificate of ``stage`` (with the duals found for it) at allocation ``xcol``."""
        return lp_certificate(res.lp, self.point(stage, xcol), res.duals, maximize=True,
                              gap_tol=self.gap_tol, feas_tol=self.feas_tol)

    def run(self, stage: _Level | _Linear, what: str) -> _StageResult:
        lp = self._program(stage)
        sol = _solve(lp, self.backend, what)
        self.iterations += sol.iterations
        self.solves += 1
        assert sol.x is not None and sol.row_duals is not None
        xcol = self.inst.repair(sol.x[: self.inst.E])
        v = self.point(stage, xcol)
        cert = lp_certificate(lp, v, sol.row_duals, maximize=True, gap_tol=self.gap_tol,
                              feas_tol=self.feas_tol)
        cert.check(backend=self.backend.name)
        return _StageResult(lp, v, sol.row_duals, cert.primal_value, cert, sol.iterations,
                            self.cap_rows)

    def fix(self, stage: _Level | _Linear, value: float) -> None:
        """Keep ``stage``'s objective within ``stage_tol`` of ``value`` in later stages."""
        slack = self.stage_tol * max(1.0, abs(value))
        if isinstance(stage, _Level):
            self.fixed.append((stage.C, stage.h + stage.b * (value - slack)))
        else:
            self.fixed.append((sp.csr_matrix(stage.g[None, :]), np.array([value - slack])))


def _prices(res: _StageResult) -> np.ndarray:
    """Non-negative capacity prices ``d OPT / d workers`` of a maximisation stage."""
    return np.maximum(-res.duals[res.cap_rows], 0.0)


# --------------------------------------------------------------------------------------------
# result
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, repr=False)
class Allocation(Result):
    """An effective-throughput allocation (Gavel §3.1) with prices and certificate.

    Attributes
    ----------
    x : ndarray, shape (n, k)
        ``x[m, j]``: fraction of time job ``m`` runs on type ``j`` (alone or in a pair, in any
        placement).
    prices : ndarray, shape (k,)
        Non-negative capacity prices: multipliers of the capacity rows of the policy's
        (first-stage, maximisation) LP, ``d OPT / d workers[j]``; zero on unsaturated types.
    effective_throughput : ndarray, shape (n,)
        ``throughput(m, X)`` (steps/s).
    metric : ndarray, shape (n,)
        The per-job quantity the policy's objective is taken over: the weighted normalised
        throughput for max-min fairness, ``rho`` for finish-time fairness, the duration
        ``steps / throughput`` for makespan and shortest job first, the normalised throughput
        otherwise.
    objective : float
        The policy objective (see each policy); ``certificate`` certifies it.
    policy : str
    job_ids, types : tuple
        Row and column labels.
    pair_x : ndarray of shape (P, k) or None
        Time fraction of each job pair on each type (space sharing).
    consolidated_x : ndarray of shape (n, k) or None
        Part of ``x`` spent in consolidated placement (placement sensitivity).
    utilization : ndarray, shape (k,)
        Fraction of each type's workers in use.
    stage_certificates : tuple of Certificate
        The certificate of every stage solved (first stage first).
    levels : int
        Water-filling levels (1 for the other policies).
    level_floors : ndarray of shape (n,) or None
        Water-filling: the level ``u_m`` at which each job was frozen.
    """

    x: np.ndarray
    prices: np.ndarray
    effective_throughput: np.ndarray
    metric: np.ndarray
    policy: str
    job_ids: tuple[Hashable, ...]
    types: tuple[str, ...]
    pair_x: np.ndarray | None
    consolidated_x: np.ndarray | None
    utilization: np.ndarray
    stage_certificates: tuple[Certificate, ...]
    levels: int = 1
    level_floors: np.ndarray | None = None

    def to_frame(self) -> Any:
        """One row per job (index: job ids): ``x[type]``, effective throughput and metric."""
        pd = require_pandas()
        df = pd.DataFrame(self.x, index=pd.Index(list(self.job_ids), name="job"),
                          columns=[f"x[{t}]" for t in self.types])
        df["effective_throughput"] = self.effective_throughput
        df["metric"] = self.metric
        return df


# --------------------------------------------------------------------------------------------
# builders
# --------------------------------------------------------------------------------------------
class ThroughputPolicy(Composable):
    """Base class of the effective-throughput policy builders (Gavel §3.1, §4).

    Parameters
    ----------
    jobs : fairalloc.Jobs
    cluster : fairalloc.Cluster
    pairs : fairalloc.JobPairs, optional
        Job pairs that may share a worker, with their pair throughputs (space sharing, §3.1).
    unconsolidated_throughput : array_like, shape (n, k), optional
        Throughput of each job when its workers are on different servers (placement
        sensitivity, §3.1); ``jobs.throughput`` is then the consolidated throughput. Each
        (job, type) gets a consolidated and an unconsolidated column sharing the capacity row.
    consolidated_capacity : array_like, shape (k,), optional
        Workers of each type that can host consolidated gangs (default: all of them).

    Attributes (cvxpy, built on first use)
    --------------------------------------
    x : cvxpy Expression (n, k)
        Time fractions (sums columns of pairs and placements).
    x_columns : cvxpy Variable (E,)
        One entry per allocation column (see :attr:`column_labels`).
    effective_throughput : cvxpy Expression (n,)
    capacity_constraint : cvxpy Constraint
        ``sum_m scale_factor_m x[m, j] <= workers[j]``; its duals are the prices.
    time_constraint : cvxpy Constraint
        ``sum_j x[m, j] <= 1``.
    """

    name = "policy"
    _work_conserving_default = True

    def __init__(self, jobs: Jobs, cluster: Cluster, *, pairs: Any = None,
                 unconsolidated_throughput: Any = None,
                 consolidated_capacity: Any = None) -> None:
        self.inst = _Instance(jobs, cluster, pairs, unconsolidated_throughput,
                              consolidated_capacity)
        self.jobs, self.cluster = jobs, cluster
        self._init_composition()
        self._cvx: dict[str, Any] | None = None

    # --- policy definition (subclasses) -----------------------------------------------------
    def _extra_rows(self) -> tuple[sp.csr_matrix, np.ndarray] | None:
        """Rows ``B x >= lower`` every stage keeps (e.g. SLOs)."""
        return None

    def _first_stages(self, solver: _StageSolver) -> tuple[_Level | _Linear, _StageResult,
                                                            float]:
        """Solve the policy's own stages; return (certified stage, its result, objective)."""
        raise NotImplementedError

    def _metric(self, tp: np.ndarray) -> np.ndarray:
        return tp / self.inst.equal_tp

    def _cvx_objective(self, cvx: dict[str, Any]) -> tuple[Any, list[Any]]:
        """(maximised cvxpy expression, extra constraints) of the policy."""
        raise NotImplementedError

    # --- cvxpy composition ------------------------------------------------------------------
    def _build_cvxpy(self) -> dict[str, Any]:
        if self._cvx is not None:
            return self._cvx
        import cvxpy as cp

        inst = self.inst
        xc = cp.Variable(inst.E, nonneg=True, name="x_columns")
        sel = np.isin(inst.col_kind[inst.mem_col], (0, 1, 2))
        S = sp.csr_matrix((np.ones(int(sel.sum())),
                           (inst.mem_job[sel] * inst.k + inst.col_type[inst.mem_col[sel]],
                            inst.mem_col[sel])), shape=(inst.n * inst.k, inst.E))
        x = cp.reshape(S @ xc, (inst.n, inst.k), order="C")
        tp = inst.Tm @ xc
        cvx: dict[str, Any] = {"xc": xc, "x": x, "tp": tp}
        cvx["capacity"] = inst.W @ xc <= inst.cap
        cvx["time"] = inst.M @ xc <= 1
        base = [cvx["capacity"], cvx["time"], xc <= 1]
        if inst.placement:
            cvx["consolidated"] = inst.Wc @ xc <= inst.cons_cap
            base.append(cvx["consolidated"])
        extra = self._extra_rows()
        if extra is not None:
            base.append(extra[0] @ xc >= extra[1])
        cvx["base"] = base
        self._cvx = cvx
        objective, cons = self._cvx_objective(cvx)
        cvx["objective"] = objective
        cvx["policy"] = cons
        return cvx

    @property
    def x(self) -> Any:
        """cvxpy expression ``(n, k)`` of time fractions."""
        return self._build_cvxpy()["x"]

    @property
    def x_columns(self) -> Any:
        """cvxpy variable over the allocation columns."""
        return self._build_cvxpy()["xc"]

    @property
    def effective_throughput(self) -> Any:
        """cvxpy expression ``(n,)``: ``throughput(m, X)``."""
        return self._build_cvxpy()["tp"]

    @property
    def capacity_constraint(self) -> Any:
        """cvxpy constraint ``W x <= workers`` (its duals are the prices)."""
        return self._build_cvxpy()["capacity"]

    @property
    def time_constraint(self) -> Any:
        """cvxpy constraint ``sum_j x[m, j] <= 1``."""
        return self._build_cvxpy()["time"]

    @property
    def objective(self) -> Any:
        """cvxpy expression of the (maximised) policy objective."""
        return self._build_cvxpy()["objective"]

    def add_constraint(self, constraint: Any) -> Self:
        """Add a cvxpy constraint (on :attr:`x`, :attr:`effective_throughput`, ...)."""
        self._build_cvxpy()  # builders that cannot compose (min cost) raise here
        return super().add_constraint(constraint)

    def add_objective_term(self, term: Any) -> Self:
        """Add a concave cvxpy expression to the maximised objective; returns ``self``."""
        self._build_cvxpy()
        return super().add_objective_term(term)

    def problem(self) -> Any:
        """The cvxpy problem ``max objective + terms`` s.t. all constraints."""
        import cvxpy as cp

        cvx = self._build_cvxpy()
        obj = cvx["objective"]
        for term in self._terms:
            obj = obj + term
        return cp.Problem(cp.Maximize(obj), [*cvx["base"], *cvx["policy"], *self._constraints])

    # --- solve ------------------------------------------------------------------------------
    def solve(self, *, method: str = "auto", backend: Any = "highs",
              work_conserving: bool | None = None, gap_tol: float = 1e-6,
              feas_tol: float = 1e-7, stage_tol: float = 1e-9) -> Allocation:
        """Solve the policy and certify the result.

        Parameters
        ----------
        method : {"auto", "highs", "fast", "cvxpy"}
            ``"highs"``: the LPs as sparse matrices through ``backend``; ``"fast"``: the
            structured path where a policy has one (max-min fairness; else as ``"highs"``);
            ``"cvxpy"``: the cvxpy model with added constraints/terms (Clarabel, conic KKT
            certificate). ``"auto"``: ``"cvxpy"`` for composed models, else ``"fast"``.
        backend : str or Backend
            LP backend (default HiGHS; interior point with crossover for large LPs).
        work_conserving : bool, optional
            Add the second stage (default: on where the policy's optimum is not unique).
        gap_tol, feas_tol : float
            Certificate tolerances (relative gap, relative constraint violation).
        stage_tol : float
            Relative slack with which a stage's optimum is kept in later stages.

        Raises
        ------
        InfeasibleError, SolverError, CertificateError
        """
        t0 = time.perf_counter()
        method = as_option(method, "method", METHODS)
        gap_tol = as_positive_float(gap_tol, "gap_tol")
        feas_tol = as_positive_float(feas_tol, "feas_tol")
        stage_tol = as_positive_float(stage_tol, "stage_tol")
        wc = self._work_conserving_default if work_conserving is None else bool(work_conserving)
        if method == "auto":
            method = "cvxpy" if self.composed else "fast"
        if self.composed and method != "cvxpy":
            raise InputError(f"method={method!r} cannot solve a model with added constraints "
                             "or terms; use method='cvxpy'", argument="method")
        if method == "cvxpy":
            return self._solve_cvxpy(wc, gap_tol, feas_tol, stage_tol, t0)
        be = _backend_for(backend, self.inst.E)
        solver = _StageSolver(self.inst, be, stage_tol=stage_tol, gap_tol=gap_tol,
                              feas_tol=feas_tol, extra_rows=self._extra_rows())
        self._method = method
        stage, res, objective = self._first_stages(solver)
        certs = [res.cert]
        xcol = res.x[: self.inst.E]
        if wc:
            solver.fix(stage, res.value)
            wstage = _Linear(self._wc_objective(), "work-conserving")
            wres = (_fast_floor(solver, wstage, prior=res) if method == "fast"
                    else solver.run(wstage, "work-conserving"))
            certs.append(wres.cert)
            xcol = wres.x[: self.inst.E]
        cert = solver.certify(res, stage, xcol)
        cert.check(backend=be.name)
        certs[0] = cert
        stats = SolveStats(backend=be.name, method=method, seconds=time.perf_counter() - t0,
                           iterations=solver.iterations, solves=solver.solves)
        return self._result(xcol, self._stage_prices(res), self._objective_value(cert, xcol),
                            cert, tuple(certs), stats)

    def _stage_prices(self, res: _StageResult) -> np.ndarray:
        return _prices(res)

    def _objective_value(self, cert: Certificate, xcol: np.ndarray) -> float:
        return cert.primal_value

    def _wc_objective(self) -> np.ndarray:
        """Work-conserving objective: total normalised throughput, per column."""
        inst = self.inst
        return np.asarray(inst.Tm.T @ (1.0 / inst.equal_tp)).ravel()

    def _result(self, xcol: np.ndarray, prices: np.ndarray, objective: float, cert: Certificate,
                certs: tuple[Certificate, ...], stats: SolveStats) -> Allocation:
        inst = self.inst
        tp = inst.throughput(xcol)
        x = inst.to_matrix(xcol)
        pair_x = None
        if inst.pairs is not None:
            sel = inst.col_kind == 2
            flat = np.zeros((inst.pairs.num_pairs, inst.k))
            flat[inst.pair_index, inst.col_type[sel]] = xcol[sel]
            pair_x = flat
        cons_x = inst.to_matrix(xcol, (0,)) if inst.placement else None
        util = (inst.W @ xcol) / inst.cap
        arrays = [x, prices, tp, pair_x, cons_x, util]
        for arr in arrays:
            if arr is not None:
                arr.flags.writeable = False
        metric = self._metric(tp)
        metric.flags.writeable = False
        return Allocation(objective=float(objective), status=Status.OPTIMAL, stats=stats,
                          certificate=cert, x=x, prices=prices, effective_throughput=tp,
                          metric=metric, policy=self.name, job_ids=self.jobs.ids,
                          types=self.cluster.types, pair_x=pair_x, consolidated_x=cons_x,
                          utilization=util, stage_certificates=certs)

    def _solve_cvxpy(self, wc: bool, gap_tol: float, feas_tol: float, stage_tol: float,
                     t0: float) -> Allocation:
        import cvxpy as cp

        from ._cvxpy import solve_cvxpy

        prob = self.problem()
        stats, cert = solve_cvxpy(prob, gap_tol=gap_tol, feas_tol=feas_tol)
        cvx = self._build_cvxpy()
        prices = np.maximum(np.asarray(cvx["capacity"].dual_value, dtype=float), 0.0)
        value = float(prob.value)
        certs = [cert]
        iters, solves = stats.iterations, 1
        if wc:
            slack = stage_tol * max(1.0, abs(value))
            obj = prob.objective.args[0]
            g = self._wc_objective()
            p2 = cp.Problem(cp.Maximize(g @ cvx["xc"]), [*prob.constraints, obj >= value - slack])
            stats2, cert2 = solve_cvxpy(p2, gap_tol=gap_tol, feas_tol=feas_tol)
            certs.append(cert2)
            iters += stats2.iterations
            solves += 1
        xcol = np.clip(np.asarray(cvx["xc"].value, dtype=float), 0.0, 1.0)
        st = SolveStats(backend="clarabel", method="cvxpy", seconds=time.perf_counter() - t0,
                        iterations=iters, solves=solves)
        return self._result(xcol, prices, value, cert, tuple(certs), st)

    def __repr__(self) -> str:
        extra = (f", {len(self._constraints)} constraints, {len(self._terms)} terms"
                 if self.composed else "")
        return (f"{type(self).__name__}(jobs={self.inst.n}, types={self.inst.k}, "
                f"columns={self.inst.E}{extra})")


def _level_objective(cvx: dict[str, Any], C: sp.csr_matrix, b: np.ndarray, h: np.ndarray
                     ) -> tuple[Any, list[Any]]:
    import cvxpy as cp

    theta = cp.Variable(name="level")
    cvx["level"] = theta
    return theta, [C @ cvx["xc"] - b * theta >= h]


# --------------------------------------------------------------------------------------------
# max-min fairness (LAS), gavel.txt §4.1
# --------------------------------------------------------------------------------------------
class MaxMinFairness(ThroughputPolicy):
    """Heterogeneity-aware weighted max-min fairness / LAS (gavel.txt §4.1).

    ``maximise min_m (scale_factor_m / w_m) * throughput(m, X) / throughput(m, X^equal)``
    where ``X^equal`` splits a job's time across types in proportion to their worker counts
    (row sum 1). As an LP: ``max theta`` s.t. ``a_m . x_m >= theta`` with
    ``a_mj = s_m T_mj / (w_m throughput(m, X^equal))``, plus the allocation constraints.

    With ``water_filling=True`` the level is raised further for the jobs that are not
    bottlenecked (gavel.txt §4.3; :mod:`fairalloc.waterfilling`), which makes the allocation
    Pareto efficient.

    Examples
    --------
    >>> import fairalloc as fa
    >>> jobs = fa.Jobs([[40.0, 10.0], [12.0, 4.0], [100.0, 50.0]])
    >>> cluster = fa.Cluster({"v100": 1, "k80": 1})
    >>> b = MaxMinFairness(jobs, cluster)
    >>> r = b.solve()
    >>> (r.x * 11).round(6).tolist()
    [[5.0, 0.0], [5.0, 1.0], [1.0, 10.0]]
    """

    name = "max_min_fairness"

    def __init__(self, jobs: Jobs, cluster: Cluster, *, water_filling: bool = False,
                 **kw: Any) -> None:
        super().__init__(jobs, cluster, **kw)
        self.water_filling = bool(water_filling)
        inst = self.inst
        self.coef = inst.jobs.scale_factor / (inst.jobs.weight * inst.equal_tp)

    def level_stage(self) -> _Level:
        inst = self.inst
        C = sp.diags(self.coef) @ inst.Tm
        return _Level(sp.csr_matrix(C), np.ones(inst.n), np.zeros(inst.n), "max-min level")

    def _metric(self, tp: np.ndarray) -> np.ndarray:
        return self.coef * tp

    def _first_stages(self, solver: _StageSolver) -> tuple[_Level | _Linear, _StageResult,
                                                            float]:
        stage = self.level_stage()
        if self._method == "fast":
            res = _fast_level(solver, stage)
        else:
            res = solver.run(stage, "max-min fairness")
        return stage, res, res.value

    def _cvx_objective(self, cvx: dict[str, Any]) -> tuple[Any, list[Any]]:
        st = self.level_stage()
        return _level_objective(cvx, st.C, st.b, st.h)

    def solve(self, **kw: Any) -> Allocation:  # noqa: D102 - documented on the base class
        if self.water_filling:
            if self.composed or kw.get("method") == "cvxpy":
                raise InputError("water_filling=True cannot be combined with added constraints"
                                 " or method='cvxpy'", argument="water_filling")
            from .waterfilling import _water_fill_policy

            return _water_fill_policy(self, **kw)
        return super().solve(**kw)


def max_min_fairness(jobs: Jobs, cluster: Cluster, *, water_filling: bool = False,
                     pairs: Any = None, unconsolidated_throughput: Any = None,
                     consolidated_capacity: Any = None, method: str = "auto",
                     backend: Any = "highs", work_conserving: bool | None = None,
                     gap_tol: float = 1e-6, feas_tol: float = 1e-7) -> Allocation:
    """Heterogeneity-aware weighted max-min fairness (LAS) (gavel.txt §4.1, §4.3).

    Maximises ``min_m (scale_factor_m / w_m) throughput(m, X) / throughput(m, X^equal)``
    (``X^equal``: time split across types in proportion to worker counts, row sum 1). By
    default a work-conserving second stage then maximises the total normalised throughput at
    that level; ``water_filling=True`` instead raises the level of non-bottlenecked jobs until
    every job is bottlenecked (Pareto efficient; :func:`fairalloc.waterfilling.water_filling`).

    Parameters
    ----------
    jobs : fairalloc.Jobs
    cluster : fairalloc.Cluster
    water_filling : bool
    pairs, unconsolidated_throughput, consolidated_capacity
        Space sharing and placement sensitivity (see :class:`ThroughputPolicy`).
    method, backend, work_conserving, gap_tol, feas_tol
        See :meth:`ThroughputPolicy.solve`.

    Returns
    -------
    Allocation
        ``objective`` is the max-min level; ``metric`` each job's weighted normalised
        throughput.

    Examples
    --------
    The paper's example (§4.1): every job gets 12/11 of what 1/3 of each GPU would give it.

    >>> import fairalloc as fa
    >>> jobs = fa.Jobs([[40.0, 10.0], [12.0, 4.0], [100.0, 50.0]])
    >>> a = fa.max_min_fairness(jobs, fa.Cluster({"v100": 1, "k80": 1}))
    >>> (a.effective_throughput / (jobs.throughput @ [1/3, 1/3])).round(6).tolist()
    [1.090909, 1.090909, 1.090909]
    """
    b = MaxMinFairness(jobs, cluster, water_filling=water_filling, pairs=pairs,
                       unconsolidated_throughput=unconsolidated_throughput,
                       consolidated_capacity=consolidated_capacity)
    return b.solve(method=method, backend=backend, work_conserving=work_conserving,
                   gap_tol=gap_tol, feas_tol=feas_tol)


# --------------------------------------------------------------------------------------------
# helpers shared by the duration-based policies
# --------------------------------------------------------------------------------------------
def _steps(jobs: Jobs, policy: str) -> np.ndarray:
    if jobs.steps_remaining is None:
        raise InputError(f"{policy} needs jobs.steps_remaining", argument="steps_remaining")
    bad = jobs.steps_remaining <= 0
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"steps_remaining[{i}] is {jobs.steps_remaining[i]:g}; every job "
                         f"must have steps left", argument="steps_remaining", index=(i,))
    return jobs.steps_remaining


def isolated_split(jobs: Jobs, cluster: Cluster) -> np.ndarray:
    """The isolated allocation ``X^isolated``: each job gets ``1/n`` of every type (§4.1).

    A job with gang size ``s`` and ``1/n`` of the ``c_j`` workers of type ``j`` runs
    ``c_j / (n s)`` of the time there; rows are capped at 1 (a job cannot use more than all of
    its time): ``X[m, j] = c_j / max(n s_m, sum_j c_j)`` on usable types. This allocation is
    always feasible.

    Examples
    --------
    >>> import fairalloc as fa
    >>> isolated_split(fa.Jobs([[1.0, 1.0]] * 3), fa.Cluster({"a": 1, "b": 1})).round(4)
    array([[0.3333, 0.3333],
           [0.3333, 0.3333],
           [0.3333, 0.3333]])
    """
    jobs.check_cluster(cluster)
    cap = cluster.capacity
    s = jobs.scale_factor
    allowed = (jobs.throughput > 0) & (s[:, None] <= cap[None, :])
    x = cap[None, :] / np.maximum(jobs.n * s, cap.sum())[:, None]
    return np.where(allowed, x, 0.0)


def equal_split(jobs: Jobs, cluster: Cluster) -> np.ndarray:
    """``X^equal``: each job's time split across types in proportion to worker counts (§4.1).

    Row sum 1 (the normaliser of max-min fairness, not itself a feasible allocation).

    Examples
    --------
    >>> import fairalloc as fa
    >>> equal_split(fa.Jobs([[40.0, 10.0]]), fa.Cluster({"v100": 1, "k80": 1}))
    array([[0.5, 0.5]])
    """
    jobs.check_cluster(cluster)
    cap = cluster.capacity
    return np.tile(cap / cap.sum(), (jobs.n, 1))


# --------------------------------------------------------------------------------------------
# minimum makespan, gavel.txt §4.1
# --------------------------------------------------------------------------------------------
class MinMakespan(ThroughputPolicy):
    """Minimum makespan (gavel.txt §4.1): ``min_X max_m steps_m / throughput(m, X)``.

    Exact as one LP through the substitution ``theta = 1 / makespan``:
    ``max theta`` s.t. ``throughput(m, X) / steps_m >= theta`` (no bisection). ``objective``
    is the makespan in seconds; ``prices`` are ``d theta / d workers``.
    """

    name = "min_makespan"

    def __init__(self, jobs: Jobs, cluster: Cluster, **kw: Any) -> None:
        super().__init__(jobs, cluster, **kw)
        self.steps = _steps(jobs, "min_makespan")

    def level_stage(self) -> _Level:
        inst = self.inst
        C = sp.csr_matrix(sp.diags(1.0 / self.steps) @ inst.Tm)
        return _Level(C, np.ones(inst.n), np.zeros(inst.n), "makespan")

    def _metric(self, tp: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.where(tp > 0, self.steps / np.maximum(tp, 1e-300), np.inf)

    def _first_stages(self, solver: _StageSolver) -> tuple[_Level | _Linear, _StageResult,
                                                            float]:
        stage = self.level_stage()
        res = solver.run(stage, "makespan")
        return stage, res, res.value

    def _objective_value(self, cert: Certificate, xcol: np.ndarray) -> float:
        return 1.0 / cert.primal_value

    def _cvx_objective(self, cvx: dict[str, Any]) -> tuple[Any, list[Any]]:
        st = self.level_stage()
        return _level_objective(cvx, st.C, st.b, st.h)


def min_makespan(jobs: Jobs, cluster: Cluster, **kw: Any) -> Allocation:
    """Minimum makespan allocation (gavel.txt §4.1), exact as one LP.

    ``objective`` is the makespan ``max_m steps_m / throughput(m, X)`` in seconds; keyword
    arguments as for :func:`max_min_fairness` (``pairs``, ``method``, ...).

    Examples
    --------
    Two jobs of 100 steps at 10 steps/s on one GPU: the GPU is split, both finish at 20 s.

    >>> import fairalloc as fa
    >>> a = fa.min_makespan(fa.Jobs([[10.0], [10.0]], steps_remaining=[100, 100]),
    ...                     fa.Cluster({"gpu": 1}))
    >>> round(a.objective, 6), a.x.ravel().round(6).tolist()
    (20.0, [0.5, 0.5])
    """
    return MinMakespan(jobs, cluster, **_builder_kw(kw)).solve(**kw)


def _builder_kw(kw: dict[str, Any]) -> dict[str, Any]:
    """Pop the builder's keyword arguments out of a one-call function's ``kw``."""
    keys = ("pairs", "unconsolidated_throughput", "consolidated_capacity")
    return {key: kw.pop(key) for key in keys if key in kw}


# --------------------------------------------------------------------------------------------
# finish-time fairness, gavel.txt §4.1 (Themis)
# --------------------------------------------------------------------------------------------
class FinishTimeFairness(ThroughputPolicy):
    """Finish-time fairness (gavel.txt §4.1, Themis): ``min_X max_m rho(m, X)``,

    ``rho(m, X) = (t_m + steps_m / throughput(m, X)) / (t_m^iso + steps_m /
    throughput(m, X^isolated))`` with ``t_m`` = ``jobs.elapsed``, ``t_m^iso`` =
    ``jobs.isolated_elapsed`` (default: ``elapsed``) and ``X^isolated`` =
    :func:`isolated_split` (1/n of every type).

    ``rho`` is a ratio of affine functions of ``X`` (``(t tp + steps) / (D tp)``), so the
    program is a generalised linear-fractional program. It is solved exactly by the
    Dinkelbach-type method of Crouzeix, Ferland and Schaible: at ``R`` solve the LP
    ``F(R) = max theta`` s.t. ``(R D_m tp_m - t_m tp_m - steps_m) / q_m >= theta``
    (``q_m`` = the current denominator); set ``R`` to the largest ``rho`` of its solution and
    stop when ``F(R) = 0``: the certificate of that last LP proves that no allocation has every
    ``rho_m < R`` (``certificate`` certifies ``F(R) = 0``; ``objective`` is ``R``).
    """

    name = "finish_time_fairness"

    def __init__(self, jobs: Jobs, cluster: Cluster, *, max_iterations: int = 50,
                 **kw: Any) -> None:
        super().__init__(jobs, cluster, **kw)
        self.steps = _steps(jobs, "finish_time_fairness")
        self.max_iterations = max_iterations
        iso = isolated_split(jobs, cluster)
        self.iso_tp = np.einsum("ij,ij->i", self.inst.T_allowed, iso)
        t_iso = jobs.elapsed if jobs.isolated_elapsed is None else jobs.isolated_elapsed
        self.D = t_iso + self.steps / self.iso_tp  # isolated finish time (denominator / tp)
        self.t = jobs.elapsed

    def rho(self, tp: np.ndarray) -> np.ndarray:
        """``rho(m, X)`` for effective throughputs ``tp``."""
        with np.errstate(divide="ignore"):
            dur = np.where(tp > 0, self.steps / np.maximum(tp, 1e-300), np.inf)
        return (self.t + dur) / self.D

    def _metric(self, tp: np.ndarray) -> np.ndarray:
        return self.rho(tp)

    def dinkelbach_stage(self, R: float, tp_prev: np.ndarray) -> _Level:
        """Level stage of ``F(R)``: rows ``((R D - t) tp - steps) / q >= theta``."""
        inst = self.inst
        q = self.D * tp_prev
        coef = (R * self.D - self.t) / q
        C = sp.csr_matrix(sp.diags(coef) @ inst.Tm)
        return _Level(C, np.ones(inst.n), self.steps / q, "finish-time fairness")

    def _first_stages(self, solver: _StageSolver) -> tuple[_Level | _Linear, _StageResult,
                                                            float]:
        inst = self.inst
        iso = isolated_split(self.jobs, self.cluster)
        tp = np.einsum("ij,ij->i", inst.T_allowed, iso)
        R = float(self.rho(tp).max())
        for _ in range(self.max_iterations):
            stage = self.dinkelbach_stage(R, tp)
            res = (_fast_level(solver, stage) if self._method == "fast"
                   else solver.run(stage, "finish-time fairness"))
            xcol = res.x[: inst.E]
            tp_new = inst.throughput(xcol)
            R_new = float(self.rho(tp_new).max())
            # F(R) <= 0 always (the previous allocation is feasible with theta <= 0)
            if res.value <= self.gap_stop(R) or R_new >= R:
                return stage, res, R
            R, tp = R_new, tp_new
        raise SolverError("finish-time fairness: Dinkelbach iterations did not converge",
                          backend=solver.backend.name, status="iteration_limit")

    def gap_stop(self, R: float) -> float:
        return 1e-9 * max(1.0, R)

    def _objective_value(self, cert: Certificate, xcol: np.ndarray) -> float:
        return float(self.rho(self.inst.throughput(xcol)).max())

    def _cvx_objective(self, cvx: dict[str, Any]) -> tuple[Any, list[Any]]:
        import cvxpy as cp

        R = cp.Variable(name="rho_max")
        cvx["level"] = R
        tp = cvx["tp"]
        con = [self.t + cp.multiply(self.steps, cp.inv_pos(tp)) <= cp.multiply(self.D, R)]
        return -R, con

    def _solve_cvxpy(self, wc: bool, gap_tol: float, feas_tol: float, stage_tol: float,
                     t0: float) -> Allocation:
        res = super()._solve_cvxpy(wc, gap_tol, feas_tol, stage_tol, t0)
        return _replace(res, objective=float(self.rho(res.effective_throughput).max()))


def _replace(res: Allocation, **changes: Any) -> Allocation:
    import dataclasses

    return dataclasses.replace(res, **changes)


def finish_time_fairness(jobs: Jobs, cluster: Cluster, **kw: Any) -> Allocation:
    """Finish-time fairness (gavel.txt §4.1; Themis): minimise ``max_m rho(m, X)``.

    Needs ``jobs.steps_remaining``; uses ``jobs.elapsed`` and ``jobs.isolated_elapsed``
    (default: ``elapsed``). Solved exactly by a Dinkelbach sequence of LPs (see
    :class:`FinishTimeFairness`), then a work-conserving stage keeps every ``rho <= R*``.
    ``objective`` is ``max_m rho``; ``metric`` each job's ``rho``.

    Examples
    --------
    >>> import fairalloc as fa
    >>> jobs = fa.Jobs([[10.0], [10.0]], steps_remaining=[100, 300])
    >>> a = fa.finish_time_fairness(jobs, fa.Cluster({"gpu": 1}))
    >>> round(a.objective, 6)
    1.0
    """
    return FinishTimeFairness(jobs, cluster, **_builder_kw(kw)).solve(**kw)


# --------------------------------------------------------------------------------------------
# linear objectives: total throughput, FIFO, shortest job first
# --------------------------------------------------------------------------------------------
class MaxTotalThroughput(ThroughputPolicy):
    """Maximum total effective throughput (gavel.txt §3.1): ``max sum_m throughput(m, X)``.

    ``normalized=True`` sums ``throughput(m, X) / throughput(m, X^equal)`` instead (comparable
    across models). All coefficients are positive, so the optimum is work-conserving.
    """

    name = "max_total_throughput"
    _work_conserving_default = False

    def __init__(self, jobs: Jobs, cluster: Cluster, *, normalized: bool = False,
                 **kw: Any) -> None:
        super().__init__(jobs, cluster, **kw)
        self.normalized = bool(normalized)

    def weights(self) -> np.ndarray:
        return 1.0 / self.inst.equal_tp if self.normalized else np.ones(self.inst.n)

    def stage(self) -> _Linear:
        return _Linear(np.asarray(self.inst.Tm.T @ self.weights()).ravel(), "total throughput")

    def _first_stages(self, solver: _StageSolver) -> tuple[_Level | _Linear, _StageResult,
                                                            float]:
        st = self.stage()
        res = solver.run(st, self.name)
        return st, res, res.value

    def _cvx_objective(self, cvx: dict[str, Any]) -> tuple[Any, list[Any]]:
        return self.weights() @ cvx["tp"], []


def max_total_throughput(jobs: Jobs, cluster: Cluster, *, normalized: bool = False,
                         **kw: Any) -> Allocation:
    """Maximise total effective throughput (gavel.txt §3.1, §4.2).

    Examples
    --------
    >>> import fairalloc as fa
    >>> a = fa.max_total_throughput(fa.Jobs([[40.0, 10.0], [12.0, 4.0]]),
    ...                             fa.Cluster({"v100": 1, "k80": 1}))
    >>> a.x.tolist(), a.objective
    ([[1.0, 0.0], [0.0, 1.0]], 44.0)
    """
    return MaxTotalThroughput(jobs, cluster, normalized=normalized, **_builder_kw(kw)).solve(**kw)


def _rank(order: Any, n: int, name: str) -> np.ndarray:
    arr = as_array(order, name, ndim=1, shape=(n,), nonneg=False)
    return np.argsort(np.argsort(arr, kind="stable"), kind="stable")


class FIFO(ThroughputPolicy):
    """First in, first out (gavel.txt §4.2):
    ``max sum_m (M - r_m) throughput(m, X) / throughput(m, X^fastest)``.

    ``r_m`` is the job's 0-based arrival rank (``order``; default: most ``elapsed`` first, ties
    by index), ``M`` the number of jobs (so every weight is positive: the paper's 1-based
    ``M - m`` gives the last job weight 0) and ``throughput(m, X^fastest)`` the job's
    throughput on its fastest usable type.
    """

    name = "fifo"
    _work_conserving_default = False

    def __init__(self, jobs: Jobs, cluster: Cluster, *, order: Any = None, **kw: Any) -> None:
        super().__init__(jobs, cluster, **kw)
        n = jobs.n
        self.rank = (_rank(-jobs.elapsed, n, "elapsed") if order is None
                     else _rank(order, n, "order"))

    def weights(self) -> np.ndarray:
        return (self.inst.n - self.rank) / self.inst.fastest_tp

    def stage(self) -> _Linear:
        return _Linear(np.asarray(self.inst.Tm.T @ self.weights()).ravel(), "fifo")

    def _metric(self, tp: np.ndarray) -> np.ndarray:
        return tp / self.inst.fastest_tp

    _first_stages = MaxTotalThroughput._first_stages
    _cvx_objective = MaxTotalThroughput._cvx_objective


def fifo(jobs: Jobs, cluster: Cluster, *, order: Any = None, **kw: Any) -> Allocation:
    """FIFO allocation (gavel.txt §4.2); ``order`` ranks jobs by arrival (smaller first).

    Examples
    --------
    The first job gets the fast GPU:

    >>> import fairalloc as fa
    >>> a = fa.fifo(fa.Jobs([[40.0, 10.0], [40.0, 10.0]]), fa.Cluster({"v100": 1, "k80": 1}),
    ...             order=[0, 1])
    >>> a.x.tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    return FIFO(jobs, cluster, order=order, **_builder_kw(kw)).solve(**kw)


class ShortestJobFirst(ThroughputPolicy):
    """Shortest job first (gavel.txt §4.2): ``min_X min_m steps_m / throughput(m, X)``.

    The paper's objective is attained by giving the job with the smallest possible duration
    ``steps_m / max_j T[m, j]`` its fastest usable type for all of its time; the first stage
    is the LP maximising that job's throughput (its value is the bound every allocation obeys).
    Then the remaining capacity goes to the other jobs in shortest-first order (the FIFO
    objective with rank by isolated duration) and a work-conserving stage follows.
    ``objective`` is the shortest duration in seconds.
    """

    name = "shortest_job_first"

    def __init__(self, jobs: Jobs, cluster: Cluster, **kw: Any) -> None:
        super().__init__(jobs, cluster, **kw)
        self.steps = _steps(jobs, "shortest_job_first")
        self.duration = self.steps / self.inst.fastest_tp
        self.rank = _rank(self.duration, jobs.n, "steps_remaining")
        self.first = int(np.flatnonzero(self.rank == 0)[0])

    def _metric(self, tp: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.where(tp > 0, self.steps / np.maximum(tp, 1e-300), np.inf)

    def _first_stages(self, solver: _StageSolver) -> tuple[_Level | _Linear, _StageResult,
                                                            float]:
        inst = self.inst
        g = np.asarray(inst.Tm[self.first].todense()).ravel() / self.steps[self.first]
        st = _Linear(g, "shortest job")
        res = solver.run(st, self.name)
        self._first_cert = res
        solver.fix(st, res.value)
        w = (inst.n - self.rank) / inst.fastest_tp
        st2 = _Linear(np.asarray(inst.Tm.T @ w).ravel(), "shortest-first order")
        res2 = solver.run(st2, self.name)
        solver.fix(st2, res2.value)
        self._second = res2
        return st, _StageResult(res.lp, np.r_[res2.x[: inst.E], 0.0], res.duals, res.value,
                                res.cert, res.iterations, res.cap_rows), res.value

    def solve(self, **kw: Any) -> Allocation:  # noqa: D102
        res = super().solve(**kw)
        if self.composed or kw.get("method") == "cvxpy":
            return res
        certs = (res.stage_certificates[0], self._second.cert, *res.stage_certificates[1:])
        return _replace(res, objective=1.0 / res.certificate.primal_value,
                        stage_certificates=certs)

    def _cvx_objective(self, cvx: dict[str, Any]) -> tuple[Any, list[Any]]:
        return cvx["tp"][self.first] / self.steps[self.first], []


def shortest_job_first(jobs: Jobs, cluster: Cluster, **kw: Any) -> Allocation:
    """Shortest job first (gavel.txt §4.2); see :class:`ShortestJobFirst`.

    Examples
    --------
    >>> import fairalloc as fa
    >>> jobs = fa.Jobs([[10.0, 5.0], [10.0, 5.0]], steps_remaining=[500, 100])
    >>> a = fa.shortest_job_first(jobs, fa.Cluster({"v100": 1, "k80": 1}))
    >>> a.x.tolist(), round(a.objective, 6)
    ([[0.0, 1.0], [1.0, 0.0]], 10.0)
    """
    return ShortestJobFirst(jobs, cluster, **_builder_kw(kw)).solve(**kw)


# --------------------------------------------------------------------------------------------
# minimum cost (and subject to SLOs), gavel.txt §4.2: linear-fractional, Charnes-Cooper
# --------------------------------------------------------------------------------------------
class MinCost(ThroughputPolicy):
    """Minimum cost, optionally subject to SLOs (gavel.txt §4.2).

    ``maximise sum_m throughput(m, X) / sum_{m, j} cost_j scale_factor_m X[m, j]`` (throughput
    per unit cost; the cost of a pair column is counted once), subject to the allocation
    constraints and ``throughput(m, X) >= steps_m / slo_m`` for jobs with an SLO.

    Linear-fractional, solved exactly by the Charnes-Cooper transformation ``y = z X``,
    ``z = 1 / cost(X)``: ``max sum_m throughput(m, y)`` s.t. ``cost(y) = 1``, ``M y <= z``,
    ``W y <= workers z``, ``throughput(m, y) >= (steps_m / slo_m) z``, ``y, z >= 0``; then
    ``X = y / z``. The ratio optimum is kept while a second stage maximises total normalised
    throughput (without it, any scaled-down optimum would do). ``prices[j] = p_j z*`` is
    ``d ratio / d workers[j]`` (``p``: the capacity duals of the transformed LP).
    """

    name = "min_cost"

    def __init__(self, jobs: Jobs, cluster: Cluster, cost: Any, *, slo: Any = None,
                 **kw: Any) -> None:
        super().__init__(jobs, cluster, **kw)
        inst = self.inst
        if isinstance(cost, Mapping):
            missing = [t for t in cluster.types if t not in cost]
            if missing:
                raise InputError(f"cost has no entry for type {missing[0]!r}", argument="cost")
            cost = [cost[t] for t in cluster.types]
        self.cost = as_array(cost, "cost", ndim=1, shape=(inst.k,), positive=True)
        self.col_cost = self.cost[inst.col_type] * inst.col_workers
        self.slo_rate = np.zeros(inst.n)
        if slo is not None:
            steps = _steps(jobs, "min_cost with slo")
            slo_arr = np.array(slo, dtype=float, copy=True)
            if slo_arr.shape != (inst.n,):
                raise InputError(f"slo must have shape ({inst.n},), got {slo_arr.shape}",
                                 argument="slo")
            bad = np.isnan(slo_arr) | (slo_arr <= 0)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise InputError(f"slo[{i}] is {slo_arr[i]}; SLOs must be positive seconds "
                                 "(inf: none)", argument="slo", index=(i,))
            self.slo_rate = np.where(np.isinf(slo_arr), 0.0, steps / slo_arr)
            short = self.slo_rate > inst.fastest_tp * (1 + 1e-12)
            if short.any():
                i = int(np.flatnonzero(short)[0])
                raise InfeasibleError(
                    f"slo[{i}] is infeasible: job {jobs.ids[i]!r} needs {self.slo_rate[i]:g} "
                    f"steps/s but runs at most {inst.fastest_tp[i]:g} steps/s",
                    status="infeasible")
        self.has_slo = bool((self.slo_rate > 0).any())

    def _extra_rows(self) -> tuple[sp.csr_matrix, np.ndarray] | None:
        if not self.has_slo:
            return None
        rows = np.flatnonzero(self.slo_rate > 0)
        return sp.csr_matrix(self.inst.Tm[rows]), self.slo_rate[rows]

    def ratio(self, xcol: np.ndarray) -> float:
        """Throughput per unit cost of column allocation ``xcol``."""
        cost = float(self.col_cost @ xcol)
        return float(self.inst.throughput(xcol).sum()) / cost if cost > 0 else 0.0

    def _cc_program(self) -> tuple[LinearProgram, slice]:
        inst = self.inst
        A, lo, up, cap_rows = inst.base_rows()
        rhs = up  # rows A y - rhs z <= 0
        A = sp.hstack([A, sp.csr_matrix(-rhs[:, None])], format="csr")
        blocks = [A, sp.csr_matrix(np.r_[self.col_cost, 0.0][None, :])]
        lows = [np.full(A.shape[0], -np.inf), np.array([1.0])]
        ups = [np.zeros(A.shape[0]), np.array([1.0])]
        if self.has_slo:
            B, rate = self._extra_rows()  # type: ignore[misc]
            blocks.append(sp.hstack([B, sp.csr_matrix(-rate[:, None])], format="csr"))
            lows.append(np.zeros(rate.size))
            ups.append(np.full(rate.size, np.inf))
        c = -np.r_[np.asarray(inst.Tm.sum(axis=0)).ravel(), 0.0]
        lp = LinearProgram.build(c, sp.vstack(blocks, format="csr"), np.concatenate(lows),
                                 np.concatenate(ups), 0.0, np.inf)
        return lp, cap_rows

    def _first_stages(self, solver: _StageSolver) -> tuple[_Level | _Linear, _StageResult,
                                                            float]:
        inst = self.inst
        lp, cap_rows = self._cc_program()
        sol = _solve(lp, solver.backend, "minimum-cost (Charnes-Cooper)")
        solver.iterations += sol.iterations
        solver.solves += 1
        assert sol.x is not None and sol.row_duals is not None
        z = float(sol.x[-1])
        if z <= 0:
            raise SolverError("minimum cost: Charnes-Cooper scale z = 0", backend="highs",
                              status="degenerate")
        xcol = inst.repair(sol.x[: inst.E] / z)
        self._cc = (lp, sol.row_duals, z, cap_rows)
        r = self.ratio(xcol)
        st = _Linear(np.asarray(inst.Tm.sum(axis=0)).ravel() - r * self.col_cost, "cost ratio")
        cert = self._certify(xcol, solver)
        cert.check(backend=solver.backend.name)
        res = _StageResult(lp, np.r_[xcol, 0.0], sol.row_duals, 0.0, cert, sol.iterations,
                           cap_rows)
        return st, res, r

    def _certify(self, xcol: np.ndarray, solver: _StageSolver) -> Certificate:
        lp, duals, _, _ = self._cc
        z = 1.0 / float(self.col_cost @ xcol)
        return lp_certificate(lp, np.r_[xcol * z, z], duals, maximize=True,
                              gap_tol=solver.gap_tol, feas_tol=solver.feas_tol)

    def solve(self, **kw: Any) -> Allocation:  # noqa: D102
        if self.composed or kw.get("method") == "cvxpy":
            raise InputError("min_cost is linear-fractional; it cannot be composed in cvxpy "
                             "(use method='highs')", argument="method")
        t0 = time.perf_counter()
        kw.setdefault("method", "highs")
        wc = kw.pop("work_conserving", None)
        gap_tol = as_positive_float(kw.pop("gap_tol", 1e-6), "gap_tol")
        feas_tol = as_positive_float(kw.pop("feas_tol", 1e-7), "feas_tol")
        stage_tol = as_positive_float(kw.pop("stage_tol", 1e-9), "stage_tol")
        as_option(kw.pop("method"), "method", METHODS)
        be = _backend_for(kw.pop("backend", "highs"), self.inst.E)
        if kw:
            raise InputError(f"unexpected argument {next(iter(kw))!r}", argument=next(iter(kw)))
        solver = _StageSolver(self.inst, be, stage_tol=stage_tol, gap_tol=gap_tol,
                              feas_tol=feas_tol, extra_rows=self._extra_rows())
        st, res, r = self._first_stages(solver)
        certs = [res.cert]
        xcol = res.x[: self.inst.E]
        if wc is None or wc:
            assert isinstance(st, _Linear)  # min cost's first stage is linear (Charnes-Cooper)
            # keep the ratio: tp(x) - r cost(x) >= -slack (linear in x)
            solver.fixed.append((sp.csr_matrix(st.g[None, :]),
                                 np.array([-stage_tol * max(1.0, r)])))
            wres = solver.run(_Linear(self._wc_objective()), "work-conserving")
            certs.append(wres.cert)
            xcol = wres.x[: self.inst.E]
        cert = self._certify(xcol, solver).check(backend=be.name)
        certs[0] = cert
        _, duals, z, cap_rows = self._cc
        prices = np.maximum(-duals[cap_rows], 0.0) * z
        stats = SolveStats(backend=be.name, method="highs", seconds=time.perf_counter() - t0,
                           iterations=solver.iterations, solves=solver.solves)
        return self._result(xcol, prices, self.ratio(xcol), cert, tuple(certs), stats)


def min_cost(jobs: Jobs, cluster: Cluster, cost: Any, *, slo: Any = None,
             **kw: Any) -> Allocation:
    """Minimum cost (throughput per unit cost), optionally subject to SLOs (gavel.txt §4.2).

    Parameters
    ----------
    cost : array_like (k,) or mapping type -> cost
        Cost per worker per unit time of each type (positive).
    slo : array_like (n,), optional
        Seconds within which each job must finish (``inf``: no SLO); needs
        ``jobs.steps_remaining``. Infeasible SLOs raise :class:`fairalloc.InfeasibleError`.

    Returns
    -------
    Allocation
        ``objective``: total throughput per unit cost.

    Examples
    --------
    The K80 gives more steps per dollar:

    >>> import fairalloc as fa
    >>> a = fa.min_cost(fa.Jobs([[40.0, 10.0]]), fa.Cluster({"v100": 1, "k80": 1}),
    ...                 cost={"v100": 3.0, "k80": 0.5})
    >>> a.x.round(6).tolist(), round(a.objective, 6)
    ([[0.0, 1.0]], 20.0)
    """
    return MinCost(jobs, cluster, cost, slo=slo, **_builder_kw(kw)).solve(**kw)


# --------------------------------------------------------------------------------------------
# structured exact solver for level (max-min) stages: aggregation + column generation
# --------------------------------------------------------------------------------------------
_FAST_MIN_JOBS = 64  # below this the full LP is as fast
_BAND0 = 0.001  # relative price error assumed for the Newton prices


def _fast_level(solver: _StageSolver, stage: _Level, *, max_rounds: int = 30) -> _StageResult:
    """Exact solve of a level stage ``max theta: C x - b theta >= h`` exploiting its structure.

    Only the ``k`` capacity rows and ``theta`` couple the jobs. At given capacity prices each
    job's cheapest way to reach its level ``L_m = h_m + b_m theta`` is a vertex of its own
    small polytope ``{a_m . x_m = L_m, sum x_m <= 1, x_m >= 0}``: one column at
    ``x_e = L_m / a_e``, or two columns splitting its whole time. Either way its capacity use
    is *affine in theta*, so a job whose vertex is clear folds into the ``k`` capacity rows;
    only jobs near a tie keep their own variables and rows. The restricted master LP is solved
    by HiGHS, every job's duals follow in closed form (one column:
    ``lambda = s p_j / a_e``; a split: ``lambda = s (p_j' - p_j) / (a_e' - a_e)``,
    ``mu = lambda a_e - s p_j``), every column of the full LP is priced, jobs with positive
    reduced costs get their own variables, and the loop ends when the full LP's independent
    certificate (:func:`lp_certificate` on the complete program with the assembled duals)
    passes. Initial prices and level come from :func:`_newton_prices` (the ``k`` equations
    *demand = capacity* solved by Newton in ``k`` unknowns, a few milliseconds for thousands
    of jobs); jobs within ``_BAND0`` of a tie at those prices keep their own variables, so a
    single small master LP usually finishes. Falls back to the full LP when Newton finds no
    estimate (for instance many identical jobs: demand jumps instead of a fine staircase) or
    the loop cannot finish.
    """
    inst = solver.inst
    n, k, E = inst.n, inst.k, inst.E
    if (inst.pairs is not None or inst.placement or solver.fixed or solver.A.shape[0] != n + k
            or n < _FAST_MIN_JOBS):
        return solver.run(stage, stage.name)
    owner = inst.mem_job  # single-member columns: one entry per column, sorted by owner
    typ = inst.col_type
    s_e = inst.col_workers
    a = np.asarray(stage.C[owner, np.arange(E)]).ravel()
    b, h = stage.b, stage.h
    need = (b > 0) | (h > 0)
    col = np.full((n, k), -1)
    col[owner, typ] = np.arange(E)
    A = np.zeros((n, k))
    A[owner, typ] = a
    s = inst.jobs.scale_factor
    amax = A.max(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        sat = np.where(b > 0, (amax - h) / np.where(b > 0, b, 1.0), np.inf)
    m0 = int(np.argmin(sat))
    sat_theta = float(sat[m0])
    est = _newton_prices(A, s, b, h, inst.cap)
    if est is None:
        return solver.run(stage, stage.name)
    p, theta, band = est
    vert = _choose_vertices(A, col, s, p, h + b * theta, band=band)
    explicit = need & vert.ambiguous
    iterations = solves = 0
    refined = False
    for _ in range(max_rounds):
        agg = need & ~explicit
        out = _solve_master(inst, stage, a, agg, vert, explicit)
        if out is None:
            # the folded vertices do not fit together (the Newton prices or level were off):
            # widen the band of jobs that keep their own variables and try again
            band *= 3.0
            if band > 0.5:
                break
            vert = _choose_vertices(A, col, s, p, h + b * theta, band=band)
            explicit |= need & vert.ambiguous
            continue
        xcol, theta, lam, mu, p, it, bound_jobs = out
        iterations += it
        solves += 1
        if theta >= sat_theta - 1e-12 * max(1.0, abs(sat_theta)):
            # theta reached the level at which job m0 runs its best column all the time:
            # no allocation does better, and the dual lambda_m0 = 1 / b_m0,
            # mu_m0 = lambda_m0 max_e a_e (all other multipliers 0) proves it
            lam0 = np.zeros(n)
            mu0 = np.zeros(n)
            lam0[m0] = 1.0 / b[m0]
            mu0[m0] = lam0[m0] * amax[m0]
            done = _certified(solver, stage, inst.repair(xcol), np.concatenate(
                [-mu0, np.zeros(k), lam0]), iterations, solves)
            if done is not None:
                return done
        red = lam[owner] * a - mu[owner] - s_e * p[typ]
        # explicit jobs have all their columns in the master: a positive reduced cost there
        # is solver tolerance, judged by the certificate below
        viol = (red > 1e-9 * (1.0 + lam[owner] * a)) & ~explicit[owner]
        if not viol.any() and not bound_jobs.any():
            done = _certified(solver, stage, inst.repair(xcol),
                              np.concatenate([-mu, -p, lam]), iterations, solves)
            if done is not None:
                return done
            break
        grown = explicit.copy()
        grown[owner[viol]] = True
        grown |= bound_jobs
        if not refined:
            # the master's prices are usually close to optimal: choose the vertices again
            # around them with a tight band, unless that keeps more jobs explicit than just
            # adding the violators (degenerate prices); later rounds only add jobs
            refined = True
            new = _choose_vertices(A, col, s, p, h + b * theta, band=2 * _BAND0)
            fresh = need & (new.ambiguous | (mu > 0) & explicit)
            fresh[owner[viol]] = True
            fresh |= bound_jobs
            if fresh.sum() < grown.sum():
                vert, grown = new, fresh
        explicit = grown
    solver.iterations += iterations
    solver.solves += solves
    return solver.run(stage, stage.name)


def _certified(solver: _StageSolver, stage: _Level | _Linear, xcol: np.ndarray,
               duals: np.ndarray, iterations: int, solves: int) -> _StageResult | None:
    """The stage result if the full LP's certificate at ``xcol`` and ``duals`` passes
    (counting the structured solver's LPs into ``solver``), else ``None``."""
    lp = solver._program(stage)
    v = solver.point(stage, xcol)
    cert = lp_certificate(lp, v, duals, maximize=True, gap_tol=solver.gap_tol,
                          feas_tol=solver.feas_tol)
    if not cert.ok:
        return None
    solver.iterations += iterations
    solver.solves += solves
    return _StageResult(lp, v, duals, cert.primal_value, cert, iterations, solver.cap_rows)


@dataclass
class _Vertices:
    """Each job's chosen vertex: columns ``e1, e2`` (``e2 = -1``: one column) and flags."""

    e1: np.ndarray
    e2: np.ndarray
    lo: np.ndarray  # level range in which the vertex is valid
    hi: np.ndarray
    ambiguous: np.ndarray


def _choose_vertices(A: np.ndarray, col: np.ndarray, s: np.ndarray, p: np.ndarray,
                     L: np.ndarray, *, band: float) -> _Vertices:
    """Cheapest vertex of every job's polytope at prices ``p`` and level ``L`` (vectorised).

    ``ambiguous`` marks jobs with a second vertex within ``band`` of the cheapest cost, a level
    within ``band`` of the vertex's validity range, or no valid vertex at all.
    """
    n, k = A.shape
    c = s[:, None] * p[None, :]  # cost of one unit of time on each type
    ok = col >= 0
    cands_cost, cands = [], []
    with np.errstate(divide="ignore", invalid="ignore"):
        for j in range(k):  # one column at x = L / a (valid while L <= a)
            valid = ok[:, j] & (A[:, j] >= L) & (A[:, j] > 0)
            cands_cost.append(np.where(valid, c[:, j] * L / A[:, j], np.inf))
            cands.append((j, -1))
        for j in range(k):  # two columns sharing the whole time (a_j < L < a_j')
            for jp in range(k):
                if jp == j:
                    continue
                valid = ok[:, j] & ok[:, jp] & (A[:, j] < L) & (L < A[:, jp])
                d = A[:, jp] - A[:, j]
                cost = (c[:, j] * (A[:, jp] - L) + c[:, jp] * (L - A[:, j])) / d
                cands_cost.append(np.where(valid, cost, np.inf))
                cands.append((j, jp))
    C = np.stack(cands_cost, axis=1)
    # ties: prefer the vertex with the most slack in its validity range
    best = np.argmin(C, axis=1)
    low = C[np.arange(n), best]
    near = (C <= low[:, None] * (1 + band) + 1e-300).sum(axis=1) > 1
    pj = np.array([q[0] for q in cands])[best]
    pjp = np.array([q[1] for q in cands])[best]
    rows = np.arange(n)
    e1 = col[rows, pj]
    two = pjp >= 0
    e2 = np.where(two, col[rows, np.maximum(pjp, 0)], -1)
    a1 = A[rows, pj]
    a2 = np.where(two, A[rows, np.maximum(pjp, 0)], np.inf)
    lo = np.where(two, a1, 0.0)
    hi = np.where(two, a2, a1)
    edge = (L >= hi * (1 - band)) | (two & (L <= lo * (1 + band)))
    none = ~np.isfinite(low)
    e1 = np.where(none, -1, e1)
    return _Vertices(e1, e2, lo, hi, near | edge | none)


class _Demand:
    """Capacity each job uses at its cheapest vertex, vectorised over jobs (``k`` small).

    A job needing throughput ``L`` from its polytope ``{a . x >= L, sum x <= 1, x >= 0}``
    pays (per unit of its scale factor) the lower convex envelope of the points ``(0, 0)``
    (idle) and ``(a_j, r_j)`` at ``L``. Its candidate vertices mix two points, ``lo`` (a type,
    or idle) and ``hi``: ``w = (L - a_lo) / (a_hi - a_lo)`` of the time on ``hi``, valid while
    ``0 <= w <= 1``, at cost ``r_lo + w (r_hi - r_lo)``. A candidate's ``(lo, hi)`` pair is
    the same for every job, so pricing them is a handful of ``(jobs, candidates)`` array
    operations with no gather.
    """

    def __init__(self, A: np.ndarray, s: np.ndarray, b: np.ndarray, h: np.ndarray) -> None:
        n, k = A.shape
        lo = [k] * k + [j for j in range(k) for _ in range(j + 1, k)]
        hi = list(range(k)) + [jp for j in range(k) for jp in range(j + 1, k)]
        self.lo, self.hi = np.array(lo), np.array(hi)
        Aext = np.c_[A, np.zeros(n)]
        self.alo = Aext[:, self.lo]
        span = Aext[:, self.hi] - self.alo
        ok = (Aext[:, self.hi] > 0) & ((self.lo == k) | (self.alo > 0)) & (span != 0)
        with np.errstate(divide="ignore"):
            self.inv = np.where(ok, 1.0 / span, np.nan)  # nan: never a vertex of this job
        self.s, self.b, self.h, self.k = s, b, h, k

    def __call__(self, r: np.ndarray, theta: float) -> tuple[np.ndarray, np.ndarray] | None:
        """Capacity used per type and its derivative in ``theta`` (``None``: a level unmet)."""
        k = self.k
        L = self.h + self.b * theta
        idle = L < 0.0  # a job whose level is below 0 needs nothing
        L = np.where(idle, 0.0, L)
        W = (L[:, None] - self.alo) * self.inv
        rext = np.r_[r, 0.0]
        rlo = rext[self.lo]
        cost = np.where((W >= 0.0) & (W <= 1.0), rlo + W * (rext[self.hi] - rlo), np.inf)
        best = cost.argmin(axis=1)
        rows = np.arange(best.size)
        if not np.isfinite(cost[rows, best]).all():
            return None
        w = W[rows, best]
        g = np.where(idle, 0.0, self.s * self.b * self.inv[rows, best])
        lo, hi = self.lo[best], self.hi[best]
        use = np.bincount(hi, self.s * w, k + 1) + np.bincount(lo, self.s * (1.0 - w), k + 1)
        d = np.bincount(hi, g, k + 1) - np.bincount(lo, g, k + 1)
        return use[:k], d[:k]


def _newton(dem: _Demand, cap: np.ndarray, ref: int, theta: float, lr: np.ndarray,
            J: np.ndarray | None, sat: float, *, tol: float, max_evals: int
            ) -> tuple[float, np.ndarray, np.ndarray | None, float] | None:
    """Damped Newton on the capacity equations ``demand(prices, theta) = cap``.

    Unknowns: ``theta`` and the log prices ``lr`` of the priced types other than ``ref``
    (price 1). With ``ref = -1`` every price is free and ``theta`` stays put (floor stages,
    whose demand does not depend on it and whose prices have a scale of their own: ``dem``
    returns a zero derivative). ``d demand / d theta`` is exact; the price columns of ``J``
    (``k x (k + 1)``: column 0 for theta, ``1 + j`` for type ``j``) are forward differences
    when ``J`` is ``None``, then kept up to date by Broyden updates. Steps are damped (at most
    ``e`` in any price; backtracking on the largest relative capacity error).

    Two boundary cases of the optimality conditions are followed as well:

    * a type with slack whose price Newton wants to cut by more than ``e**2`` relative to the
      others is priced 0 and its equation becomes ``demand <= cap`` (complementary slackness);
      if it was ``ref``, the most expensive remaining type becomes ``ref``;
    * ``theta`` never exceeds ``sat`` (where the first job reaches its full speed). Once it
      sits there the unknown ``theta`` is replaced by a common utilisation ``u``
      (``demand = u cap``): a solution with ``u <= 1`` proves ``sat`` optimal; one with
      ``u > 1`` means the level lies just below ``sat`` and ``u - 1`` counts as error.

    Returns ``(theta, lr, J, error)``; ``error`` is the largest relative capacity violation
    (or gap on a priced type); 0 when ``sat`` is proved optimal.
    """
    k = cap.size
    types = np.arange(k)

    def at(th: float, lp: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        with np.errstate(over="ignore"):
            return dem(np.exp(lp), th)

    def merit(use: np.ndarray, zero: np.ndarray, u: float) -> float:
        rel = use / cap - u
        return float(np.max(np.where(zero, np.maximum(rel, 0.0), np.abs(rel))))

    top = sat - 1e-12 * max(1.0, abs(sat))  # theta at sat, up to rounding
    first = at(theta, lr)
    if first is None:
        return None
    out = first
    evals, delta, fresh, restores, cut_tries = 1, 0.05, False, 0, 0
    zero = np.isneginf(lr)
    saved = np.zeros(k)  # log prices (relative to ref) of types priced 0, to restore
    at_sat = False
    u = 1.0
    err = merit(out[0], zero, u)
    while evals < max_evals:
        use, d = out
        if theta >= top and (use <= cap * (1.0 + tol)).all():
            return theta, lr, J, 0.0
        if err <= tol and not at_sat:
            break
        back = zero & (use > cap * (1.0 + tol))
        if back.any() and restores < 3:  # a type priced 0 is overloaded again: price it
            restores += 1
            lr = lr.copy()
            lr[back] = saved[back] + (lr[ref] if ref >= 0 else 0.0)
            zero = np.isneginf(lr)
            o = at(theta, lr)
            evals += 1
            if o is None:
                return None
            out, err, J = o, merit(o[0], zero, u), None
            continue
        act = ~zero
        fr = act & (types != ref)
        cols = np.r_[0, 1 + types[fr]]
        if J is None:
            J = np.zeros((k, k + 1))
            for j in types[fr]:
                # difference towards balance (an underused type gets cheaper); on a plateau
                # of the staircase, widen the step until demand moves
                h = -delta if use[j] < cap[j] else delta
                for _ in range(4):
                    lp = lr.copy()
                    lp[j] += h
                    o = at(theta, lp)
                    evals += 1
                    if o is None:
                        return None
                    J[:, 1 + j] = (o[0] - use) / h
                    if np.abs(o[0] - use).max() > 1e-12 * cap.max():
                        break
                    h *= 4.0
            fresh = True
        J[:, 0] = -cap if at_sat else d
        Js = J[np.ix_(act, cols)] / cap[act, None]
        step = np.linalg.lstsq(Js, u - use[act] / cap[act], rcond=None)[0]
        if not at_sat and theta >= top and step[0] > 0:
            at_sat, u = True, float(np.max(use[act] / cap[act]))  # theta stays at sat
            J[:, 0] = -cap
            err = merit(use, zero, u)
            continue
        full = np.zeros(k)
        full[fr] = step[1:]
        drop = full - full[act].max() if ref >= 0 else full  # floor stages: absolute prices
        # candidates for price 0: slack types Newton wants much cheaper, or far below capacity
        cut = act & (use < cap * 0.99) & ((drop < -2.0) | (use < cap * 0.5))
        if ref < 0 and cut.any():  # floor stages: the most underused type first
            cut = types == np.argmin(np.where(cut, use / cap, np.inf))
        rest = act & ~cut
        # level stages: only once the other types balance (a low theta leaves all slack)
        near = ref < 0 or bool(np.all(np.abs(use[rest] / cap[rest] - u) < 0.1))
        if cut.any() and near and (ref < 0 or rest.any()) and cut_tries < 4:
            cut_tries += 1
            lp2 = lr.copy()
            lp2[cut] = -np.inf
            z2 = np.isneginf(lp2)
            ref2 = ref
            if ref >= 0 and z2[ref]:
                ref2 = int(np.argmax(np.where(z2, -np.inf, lr + full)))
                lp2 = lp2 - lp2[ref2]
            o = at(theta, lp2)
            evals += 1
            # price 0 is right for a type still within capacity at price 0; keep the cut if
            # it also helps
            if (o is not None and (o[0][cut] <= cap[cut] * (1.0 + tol)).all()
                    and merit(o[0], z2, u) < err):
                saved[cut] = lr[cut] - (lr[ref2] if ref2 >= 0 else 0.0)
                lr, zero, ref, out = lp2, z2, ref2, o
                err, J = merit(o[0], zero, u), None
                continue
        big = float(np.abs(step[1:]).max(initial=0.0))
        if big > 1.0:
            step /= big
        moved = False
        for t in (1.0, 0.5, 0.25, 0.125):
            u2, th2 = (u + t * step[0], theta) if at_sat else (u, min(theta + t * step[0], sat))
            lp2 = lr.copy()
            lp2[fr] += t * step[1:]
            o = at(th2, lp2)
            evals += 1
            if o is not None and th2 >= top and (o[0] <= cap * (1 + tol)).all():
                return th2, lp2, J, 0.0
            e2 = merit(o[0], zero, u2) if o is not None else np.inf
            if e2 < err:
                moved = True
                break
        if not moved:
            if fresh:
                break  # no progress even with a fresh Jacobian: the staircase's resolution
            J = None
            continue
        assert o is not None  # moved: the accepted point has a demand
        dz = np.r_[(u2 - u) if at_sat else (th2 - theta), lp2[fr] - lr[fr]]
        if dz[1:] @ dz[1:] > 0:  # Broyden update of the price columns
            resid = o[0] - use - J[:, cols] @ dz
            J[:, cols[1:]] += np.outer(resid, dz[1:]) / (dz[1:] @ dz[1:])
        fresh = False
        delta = min(0.05, max(4.0 * float(np.abs(dz[1:]).max(initial=0.0)), 0.01))
        theta, u, lr, out, err = th2, u2, lp2, o, e2
    if at_sat:  # demand at sat exceeds capacity by the factor u: the level lies just below
        err = max(err, u - 1.0)
    return theta, lr, J, err


_NEWTON_SAMPLE = 1024  # jobs in the first (sampled) Newton phase
_NEWTON_MAX_ERROR = 0.25  # larger capacity errors: no estimate (the full LP answers)


def _band(err: float) -> float:
    """Band of near-ties given Newton's capacity error: coarse staircases (few, large jobs
    per type) leave errors of several percent, and the jobs on their steps must stay free."""
    return float(np.clip(err / 4.0, _BAND0, 0.05))


def _newton_prices(A: np.ndarray, s: np.ndarray, b: np.ndarray, h: np.ndarray,
                   cap: np.ndarray) -> tuple[np.ndarray, float, float] | None:
    """Approximate prices, level and band of near-ties of a level stage (``None``: none).

    Solves the ``k`` equations *demand = capacity* for ``theta`` and the ``k - 1`` free price
    ratios, where demand is every job's capacity use at its cheapest vertex (:class:`_Demand`)
    at level ``h + b theta`` (:func:`_newton`). These are the stage's optimality conditions;
    with ``n`` jobs demand is a fine staircase in the prices, so Newton converges to the prices
    up to about the staircase's steps. It runs first on a sample of jobs (with the capacity
    scaled alike), then on all of them starting from the sample's solution and Jacobian. The
    estimate only decides which jobs get their own variables in the master LP; the exact
    solution and its certificate come from there.
    """
    need = (b > 0) | (h > 0)
    idx = np.flatnonzero(need)
    if idx.size == 0 or not (b[idx] > 0).any():
        return None
    A, s, b, h = A[idx], s[idx], b[idx], h[idx]
    pos = b > 0
    sat = float(np.min((A[pos].max(axis=1) - h[pos]) / b[pos]))
    low = float(np.max(-h[pos] / b[pos]))  # below this level some job needs nothing
    ref = int(np.argmax(np.median(A, axis=0)))
    both = (A > 0) & (A[:, [ref]] > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        r0 = np.nanmedian(np.where(both, A / A[:, [ref]], np.nan), axis=0)
    if not (np.isfinite(sat) and sat > low and np.isfinite(r0).all() and (r0 > 0).all()):
        return None
    theta, lr, J = 0.5 * (low + sat), np.log(r0), None
    m = idx.size
    if m > 2 * _NEWTON_SAMPLE:
        sub = np.random.default_rng(0).choice(m, size=_NEWTON_SAMPLE, replace=False)
        frac = _NEWTON_SAMPLE / m
        out = _newton(_Demand(A[sub], s[sub], b[sub], h[sub]), cap * frac, ref, theta, lr, None,
                      sat, tol=1e-2, max_evals=40)
        if out is not None and out[3] <= 0.05:
            theta, lr, J, _ = out
            J = None if J is None else J / frac
    out = _newton(_Demand(A, s, b, h), cap, ref, theta, lr, J, sat, tol=1e-3, max_evals=30)
    if out is None or out[3] > _NEWTON_MAX_ERROR:
        return None
    return np.exp(out[1]), float(out[0]), _band(out[3])


def _solve_master(inst: _Instance, stage: _Level, a: np.ndarray, agg: np.ndarray,
                  vert: _Vertices, explicit: np.ndarray) -> tuple | None:
    """Solve the restricted master.

    Returns ``(xcol, theta, lambda, mu, prices, iterations, bound_jobs)``; ``bound_jobs``
    marks aggregated jobs whose vertex range stopped theta (they need their own variables).
    """
    n, k, E = inst.n, inst.k, inst.E
    b, h = stage.b, stage.h
    s = inst.jobs.scale_factor
    typ = inst.col_type
    ag = np.flatnonzero(agg)
    e1, e2 = vert.e1[ag], vert.e2[ag]
    if (e1 < 0).any():
        return None
    two = e2 >= 0
    a1 = a[e1]
    a2 = np.where(two, a[np.maximum(e2, 0)], 1.0)
    d = np.where(two, a2 - a1, 1.0)
    # x_e1 = al1 + be1 theta, x_e2 = al2 + be2 theta (affine in theta)
    al1 = np.where(two, (a2 - h[ag]) / d, h[ag] / a1)
    be1 = np.where(two, -b[ag] / d, b[ag] / a1)
    al2 = np.where(two, (h[ag] - a1) / d, 0.0)
    be2 = np.where(two, b[ag] / d, 0.0)
    t1 = typ[e1]
    t2 = np.where(two, typ[np.maximum(e2, 0)], 0)
    const = (np.bincount(t1, weights=s[ag] * al1, minlength=k)
             + np.bincount(t2, weights=s[ag] * al2 * two, minlength=k))
    coef_theta = (np.bincount(t1, weights=s[ag] * be1, minlength=k)
                  + np.bincount(t2, weights=s[ag] * be2 * two, minlength=k))
    # validity range of each aggregated vertex: lo <= h + b theta <= hi
    pos = b[ag] > 0
    lo_v, hi_v = vert.lo[ag], vert.hi[ag]
    with np.errstate(divide="ignore", invalid="ignore"):
        th_up = np.where(pos, (hi_v - h[ag]) / np.where(pos, b[ag], 1.0), np.inf)
        th_dn = np.where(pos, (lo_v - h[ag]) / np.where(pos, b[ag], 1.0), -np.inf)
    fixed_bad = ~pos & ((h[ag] > hi_v * (1 + 1e-12)) | (h[ag] < lo_v * (1 - 1e-12)))
    if fixed_bad.any():
        return None
    # the ranges are not imposed on theta (a wrong guess would make the master infeasible):
    # jobs whose vertex is invalid at the master's theta get their own variables next round
    ex = np.flatnonzero(explicit)
    cols = np.flatnonzero(explicit[inst.mem_job])
    nx = cols.size
    remap = np.full(n, -1)
    remap[ex] = np.arange(ex.size)
    own = remap[inst.mem_job[cols]]
    r = ex.size
    M = sp.vstack([
        sp.csr_matrix((np.r_[inst.col_workers[cols], coef_theta],
                       (np.r_[typ[cols], np.arange(k)], np.r_[np.arange(nx), np.full(k, nx)])),
                      shape=(k, nx + 1)),
        sp.csr_matrix((np.ones(nx), (own, np.arange(nx))), shape=(r, nx + 1)),
        sp.csr_matrix((np.r_[a[cols], -b[ex]], (np.r_[own, np.arange(r)],
                                                 np.r_[np.arange(nx), np.full(r, nx)])),
                      shape=(r, nx + 1)),
    ], format="csr")
    lo = np.r_[np.full(k + r, -np.inf), h[ex]]
    up = np.r_[inst.cap - const, np.ones(r), np.full(r, np.inf)]
    # the objective is scaled by n so that the duals (which sum to 1 over the jobs) are of
    # order one against the solver's absolute dual tolerance
    scale = float(n)
    c = np.zeros(nx + 1)
    c[-1] = -scale
    # no column upper bounds (implied by the time rows): the duals stay on the rows
    lp = LinearProgram.build(c, M, lo, up, np.r_[np.zeros(nx), -np.inf],
                             np.r_[np.full(nx, np.inf), np.inf])
    sol = get_backend("highs", solver="ipm" if r > 400 else "choose").solve_lp(lp)
    if sol.status != "optimal" or sol.x is None or sol.row_duals is None:
        return None
    theta = float(sol.x[-1])
    y = sol.row_duals / scale
    p = np.maximum(-y[:k], 0.0)
    mu = np.zeros(n)
    lam = np.zeros(n)
    mu[ex] = np.maximum(-y[k: k + r], 0.0)
    lam[ex] = np.maximum(y[k + r:], 0.0)
    c1 = s[ag] * p[t1]
    c2 = s[ag] * p[t2]
    lam[ag] = np.where(two, (c2 - c1) / d, c1 / a1)
    mu[ag] = np.where(two, lam[ag] * a1 - c1, 0.0)
    bound_jobs = np.zeros(n, dtype=bool)
    tol = 1e-9 * max(1.0, abs(theta))
    bound_jobs[ag] = pos & ((th_up < theta - tol) | (th_dn > theta + tol))
    if (lam[ag] < -1e-12).any() or (mu[ag] < -1e-12).any():
        bad = (lam[ag] < -1e-12) | (mu[ag] < -1e-12)
        bound_jobs[ag[bad]] = True
    lam = np.maximum(lam, 0.0)
    mu = np.maximum(mu, 0.0)
    xcol = np.zeros(E)
    xcol[cols] = sol.x[:nx]
    xcol[e1] = al1 + be1 * theta
    xcol[np.maximum(e2, 0)[two]] = (al2 + be2 * theta)[two]
    return xcol, theta, lam, mu, p, sol.iterations, bound_jobs


def _fast_floor(solver: _StageSolver, stage: _Linear, *, prior: _StageResult | None = None,
                max_rounds: int = 4) -> _StageResult:
    """Exact solve of a *floor* stage ``max g @ x`` s.t. ``C x >= f`` (one fixed level block).

    Used for the work-conserving stage, where the objective of each job is a multiple
    ``omega_m`` of its level row (``g_e = omega_m a_e``; true whenever both are per-job
    multiples of its throughput). At prices ``p`` each job's best response is a vertex of
    ``{a . x >= f, sum x <= 1, x >= 0}`` (its floor on one column, all its time on one
    column, or its time split between two columns at the floor) whose capacity use is a
    constant. Prices come from :func:`_floor_newton_prices` (best-response demand =
    capacity); jobs whose best vertex is clear at them are constants, the others keep their
    variables in a restricted master LP; :func:`_floor_duals` then finds the full LP's duals
    complementary to the master's allocation (an LP in the ``k`` prices), and the certificate
    of the full LP decides. If it fails, the band of jobs with their own variables widens;
    after ``max_rounds`` the full LP is solved.

    ``prior``: the result of the level stage whose optimum the floors fix. When its allocation
    is already optimal here (the level's optimum is unique up to ``stage_tol``, the common
    case: every job sits at its floor), :func:`_floor_from_level` certifies that with scaled
    level duals and no LP at all.
    """
    inst = solver.inst
    n, k, E = inst.n, inst.k, inst.E
    if (inst.pairs is not None or inst.placement or len(solver.fixed) != 1
            or solver.A.shape[0] != n + k or n < _FAST_MIN_JOBS):
        return solver.run(stage, stage.name)
    C, f = solver.fixed[0]
    owner = inst.mem_job
    a = np.asarray(C[owner, np.arange(E)]).ravel()
    if C.shape[0] != n or (a <= 0).any():
        return solver.run(stage, stage.name)
    omega_e = stage.g / a
    starts = np.searchsorted(owner, np.arange(n))
    omega = omega_e[starts]
    if not np.allclose(omega_e, omega[owner], rtol=1e-12, atol=0.0) or (omega < 0).any():
        return solver.run(stage, stage.name)
    if prior is not None:
        done = _floor_from_level(solver, stage, prior, a, omega)
        if done is not None:
            return done
    col = np.full((n, k), -1)
    col[owner, inst.col_type] = np.arange(E)
    A = np.zeros((n, k))
    A[owner, inst.col_type] = a
    s = inst.jobs.scale_factor
    est = _floor_newton_prices(A, s, f, omega, inst.cap)
    if est is None:
        return solver.run(stage, stage.name)
    p, band = est
    explicit = np.zeros(n, dtype=bool)
    iterations = solves = 0
    for _ in range(max_rounds):
        vert = _floor_vertices(A, col, s, p, f, omega, band=band)
        explicit |= vert.ambiguous
        out = _solve_floor_master(inst, a, f, omega, vert, explicit)
        if out is None:
            band *= 4.0
            continue
        xcol, it = out
        iterations += it
        solves += 1
        xcol = inst.repair(xcol)
        duals, blocking = _floor_duals(inst, A, col, a, f, omega, xcol, explicit)
        done = None if duals is None else _certified(solver, stage, xcol, duals, iterations,
                                                     solves)
        if done is not None:
            return done
        if (blocking & ~explicit).any():
            explicit |= blocking  # exactly the constants in the way get their variables
        else:
            band *= 4.0
    solver.iterations += iterations
    solver.solves += solves
    return solver.run(stage, stage.name)


class _FloorDemand(_Demand):
    """Capacity each job uses at its best response in a floor stage, vectorised over jobs.

    A job with floor ``f`` and value ``omega`` per unit of level chooses, at prices ``p``, the
    vertex of ``{a . x >= f, sum x <= 1, x >= 0}`` maximising ``omega a.x - s p.x``: a mix at
    the floor (the candidates of :class:`_Demand` at ``L = f``: part time on one type, or two
    types sharing all the time) or all its time on one type (valid when ``a_j >= f``).
    """

    def __init__(self, A: np.ndarray, s: np.ndarray, f: np.ndarray, omega: np.ndarray) -> None:
        super().__init__(A, s, np.zeros(f.size), f)
        W = (f[:, None] - self.alo) * self.inv
        self.W = np.where((W >= 0.0) & (W <= 1.0), W, np.nan)  # nan: not a floor vertex
        self.A, self.omega = A, omega
        self.full_ok = (A > 0) & (A >= f[:, None])

    def __call__(self, r: np.ndarray, theta: float) -> tuple[np.ndarray, np.ndarray]:
        """Capacity used per type at prices ``r`` (``theta`` is ignored; zero derivative)."""
        k, s = self.k, self.s
        rext = np.r_[r, 0.0]
        rlo = rext[self.lo]
        at_floor = (self.omega * self.h)[:, None] - s[:, None] * (rlo + self.W * (rext[self.hi]
                                                                               - rlo))
        full = np.where(self.full_ok, self.omega[:, None] * self.A - s[:, None] * r, -np.inf)
        V = np.c_[np.where(np.isnan(at_floor), -np.inf, at_floor), full]
        best = V.argmax(axis=1)
        K = self.lo.size
        fl = best < K
        b = np.where(fl, best, 0)
        w = self.W[np.arange(best.size), b]
        use = (np.bincount(self.hi[b[fl]], s[fl] * w[fl], k + 1)
               + np.bincount(self.lo[b[fl]], s[fl] * (1.0 - w[fl]), k + 1))[:k]
        use = use + np.bincount(best[~fl] - K, s[~fl], k)
        return use, np.zeros(k)


def _floor_newton_prices(A: np.ndarray, s: np.ndarray, f: np.ndarray, omega: np.ndarray,
                         cap: np.ndarray) -> tuple[np.ndarray, float] | None:
    """Approximate capacity prices (and band of near-ties) of a floor stage: best-response
    demand = capacity.

    :func:`_newton` with every price free (``ref = -1``), from prices at which each type
    alone would be just filled by the jobs valuing it most: ``p_j`` is the value per worker
    ``omega a_j / s`` above which the jobs' workers add up to ``cap_j``. ``None``: no
    estimate.
    """
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
    dem = _FloorDemand(A, s, f, omega)
    if (dem(np.zeros(cap.size), 0.0)[0] <= cap).all():
        return np.zeros(cap.size), _BAND0  # capacity binds nowhere
    out = _newton(dem, cap, -1, 0.0, np.log(p0), None, np.inf, tol=1e-3, max_evals=40)
    if out is None or out[3] > _NEWTON_MAX_ERROR:
        return None
    return np.exp(out[1]), _band(out[3])


def _floor_duals(inst: _Instance, A: np.ndarray, col: np.ndarray, a: np.ndarray,
                 f: np.ndarray, omega: np.ndarray, xcol: np.ndarray, free: np.ndarray
                 ) -> tuple[np.ndarray | None, np.ndarray]:
    """Duals of the full floor LP complementary to ``xcol``, or the jobs in the way.

    The floor LP ``max sum_m omega_m a_m . x_m`` s.t. ``a_m . x_m >= f_m`` (``lambda_m``),
    ``sum x_m <= 1`` (``mu_m``), capacity (``p``) has reduced costs
    ``(omega + lambda) a_e - mu - s p_e``. For a job at a vertex of its polytope
    (:func:`_vertices_from_x`), complementary slackness fixes ``lambda`` and ``mu`` as affine
    functions of ``p`` (floor on ``e``: ``lambda = s p_e / a_e - omega``, ``mu = 0``; all time
    on ``e``: ``lambda = 0``, ``mu = omega a_e - s p_e``; a split ``e1, e2``:
    ``omega + lambda = s (p_e2 - p_e1) / (a_e2 - a_e1)``, ``mu = (omega + lambda) a_e1 -
    s p_e1``); what remains is ``lambda, mu >= 0`` and every other column's reduced cost
    ``<= 0``: linear inequalities in the ``k`` prices. Jobs elsewhere (the few a basic
    solution couples) keep ``lambda_m, mu_m`` as variables, with reduced cost 0 on the columns
    they use. Types with slack are priced 0. The rows of each job that was a constant in
    the master (not ``free``) get an elastic slack ``sigma_m >= 0`` and HiGHS minimises
    ``sum sigma`` (``k`` + a few + ``n`` columns, about ``n (k + 1)`` rows; the master's own
    duals are feasible, so it always solves): at 0 the duals are complementary to ``xcol``,
    so their objective is ``xcol``'s value and ``xcol`` is optimal; otherwise the constants
    with ``sigma_m > 0`` conflict with every complementary price vector and must get their
    own variables.

    Returns ``(duals, blocking)``: ``duals`` (``None`` if there are none) in the LP's row
    order ``[-mu, -p, lambda]`` and the mask of blocking jobs.
    """
    n, k = A.shape
    s = inst.jobs.scale_factor.astype(float)
    vert, general = _vertices_from_x(inst, A, col, a, f, xcol)
    X = np.zeros((n, k))
    X[inst.mem_job, inst.col_type] = xcol
    tot = X.sum(axis=1)
    e1, e2 = vert.e1, vert.e2
    # one column at the floor *and* all the time: lambda and mu share one equation
    general = general | ((e1 >= 0) & (e2 == -1) & (tot >= 1.0 - 1e-9))
    typ_of = np.full(inst.E + 1, 0)
    typ_of[:-1] = inst.col_type
    t1 = typ_of[np.where(e1 >= 0, e1, inst.E)]
    t2 = typ_of[np.where(e2 >= 0, e2, inst.E)]
    a1 = np.where(e1 >= 0, a[np.maximum(e1, 0)], 1.0)
    a2 = np.where(e2 >= 0, a[np.maximum(e2, 0)], 1.0)
    floor1 = ~general & (e1 >= 0) & (e2 == -1)
    full = ~general & (e1 >= 0) & (e2 == -2)
    split = ~general & (e2 >= 0)
    onehot = np.eye(k)
    # lambda = alpha . p + alpha0, mu = beta . p + beta0 (zero for general jobs and no-ops)
    alpha = np.zeros((n, k))
    alpha0 = np.zeros(n)
    beta = np.zeros((n, k))
    beta0 = np.zeros(n)
    alpha[floor1] = (s / a1)[floor1, None] * onehot[t1[floor1]]
    alpha0[floor1 | split] = -omega[floor1 | split]
    beta[full] = -s[full, None] * onehot[t1[full]]
    beta0[full] = (omega * a1)[full]
    d = np.where(split, a2 - a1, 1.0)
    alpha[split] = (s / d)[split, None] * (onehot[t2[split]] - onehot[t1[split]])
    beta[split] = a1[split, None] * alpha[split] - s[split, None] * onehot[t1[split]]
    # rows G p <= g: lambda >= 0, mu >= 0, reduced cost <= 0 on every unused column
    Gs, gs = [-alpha[floor1 | split], -beta[full | split]], [alpha0[floor1 | split],
                                                              beta0[full | split]]
    owners = [np.flatnonzero(floor1 | split), np.flatnonzero(full | split)]
    rec = ~general
    used = np.zeros(inst.E, dtype=bool)
    used[xcol > 1e-12] = True
    ce = np.flatnonzero(rec[inst.mem_job] & ~used)
    m = inst.mem_job[ce]
    ae = a[ce]
    Gs.append(ae[:, None] * alpha[m] - beta[m] - s[m, None] * onehot[inst.col_type[ce]])
    gs.append(beta0[m] - (omega[m] + alpha0[m]) * ae)
    owners.append(m)
    G = np.concatenate(Gs)
    g = np.concatenate(gs)
    row_job = np.concatenate(owners)
    # general jobs: variables (lambda_m, mu_m); reduced cost = 0 on used columns, <= 0 others
    gen = np.flatnonzero(general)
    q = gen.size
    cg = np.flatnonzero(general[inst.mem_job])
    mg = np.searchsorted(gen, inst.mem_job[cg])
    ncol = k + 2 * q + n
    P = sp.hstack([sp.csr_matrix(G), sp.csr_matrix((g.size, 2 * q)),
                   sp.csr_matrix((-np.ones(g.size), (np.arange(g.size), row_job)),
                                 shape=(g.size, n))], format="csr")
    Q = sp.hstack([sp.csr_matrix(-s[inst.mem_job[cg], None] * onehot[inst.col_type[cg]]),
                   sp.csr_matrix((a[cg], (np.arange(cg.size), mg)), shape=(cg.size, q)),
                   sp.csr_matrix((-np.ones(cg.size), (np.arange(cg.size), mg)),
                                 shape=(cg.size, q))], format="csr")
    M = sp.vstack([P, sp.hstack([Q, sp.csr_matrix((Q.shape[0], n))])], format="csr")
    up = np.r_[g, -omega[inst.mem_job[cg]] * a[cg]]
    lo = np.r_[np.full(g.size, -np.inf), np.where(used[cg], up[g.size:], -np.inf)]
    slack_t = inst.W @ xcol < inst.cap * (1.0 - 1e-9)
    lev = (X * A).sum(axis=1)
    floor_slack = lev[gen] > f[gen] + 1e-9 * np.maximum(1.0, np.abs(f[gen]))
    time_slack = tot[gen] < 1.0 - 1e-9
    hi = np.r_[np.where(slack_t, 0.0, np.inf), np.where(floor_slack, 0.0, np.inf),
               np.where(time_slack, 0.0, np.inf), np.where(general | free, 0.0, np.inf)]
    c = np.r_[np.zeros(k + 2 * q), np.ones(n)]
    lp = LinearProgram.build(c, M, lo, up, np.zeros(ncol), hi)
    sol = get_backend("highs").solve_lp(lp)
    if sol.status != "optimal" or sol.x is None:
        return None, np.zeros(n, dtype=bool)
    sigma = sol.x[k + 2 * q:]
    blocking = sigma > 1e-9 * (1.0 + omega * A.max(axis=1))
    if blocking.any():
        return None, blocking
    pr = np.maximum(sol.x[:k], 0.0)
    lam = np.maximum(alpha @ pr + alpha0, 0.0)
    mu = np.maximum(beta @ pr + beta0, 0.0)
    lam[gen] = np.maximum(sol.x[k: k + q], 0.0)
    mu[gen] = np.maximum(sol.x[k + q: k + 2 * q], 0.0)
    return np.concatenate([-mu, -pr, lam]), blocking


def _floor_from_level(solver: _StageSolver, stage: _Linear, prior: _StageResult,
                      a: np.ndarray, omega: np.ndarray) -> _StageResult | None:
    """Certify the level stage's allocation as the floor stage's optimum, if it is one.

    With level duals ``(lambda, mu, p)`` (reduced costs ``lambda_m a_e - mu_m - s p_e <= 0``,
    zero on used columns), the scaled duals ``p' = t p``, ``mu' = t mu``,
    ``lambda' = max(t lambda - omega, 0)`` are feasible for the floor stage
    ``max sum_m omega_m a_m . x_m`` s.t. ``a_m . x_m >= f_m`` as soon as every column's reduced
    cost ``omega a_e + lambda' a_e - mu' - s p'_e`` is ``<= 0``: for a job with
    ``t lambda_m >= omega_m`` it is ``t`` times the level one; otherwise it needs
    ``t >= omega a_e / (mu + s p_e)``. The smallest such ``t`` is taken, and
    :func:`lp_certificate` on the full floor LP at the level's allocation decides (its gap is
    the complementary slackness left: ``stage_tol`` on the floors, plus whatever a job above
    its floor could still gain). ``None`` when it does not pass.
    """
    inst = solver.inst
    n, k = inst.n, inst.k
    d = prior.duals
    if d.size != 2 * n + k or not isinstance(prior.lp, LinearProgram):
        return None
    mu = np.maximum(-d[:n], 0.0)
    p = np.maximum(-d[n: n + k], 0.0)
    lam = np.maximum(d[n + k:], 0.0)
    owner = inst.mem_job
    unit = mu[owner] + inst.col_workers * p[inst.col_type]  # level cost of a column's time
    want = omega[owner] * a
    with np.errstate(divide="ignore", invalid="ignore"):
        per_col = np.where(want > 0, want / unit, 0.0)
        by_lam = np.where(lam > 0, omega / lam, np.inf)
    by_cols = np.zeros(n)
    np.maximum.at(by_cols, owner, per_col)
    t = float(np.max(np.minimum(by_lam, by_cols), initial=0.0))
    if not np.isfinite(t) or t <= 0.0:
        return None
    duals = np.concatenate([-t * mu, -t * p, np.maximum(t * lam - omega, 0.0)])
    return _certified(solver, stage, prior.x[: inst.E], duals, 0, 0)


def _floor_vertices(A: np.ndarray, col: np.ndarray, s: np.ndarray, p: np.ndarray,
                    L: np.ndarray, omega: np.ndarray, *, band: float) -> _Vertices:
    """Best vertex of each job's floor polytope for ``max omega a.x - s p.x`` (vectorised).

    Kinds: ``e2 == -1``: floor on ``e1``; ``e2 == -2``: all time on ``e1``; ``e2 >= 0``:
    time split between ``e1`` and ``e2`` at the floor; ``e1 == -1``: nothing (floor <= 0).
    """
    n, k = A.shape
    c = s[:, None] * p[None, :]
    ok = (col >= 0) & (A > 0)
    vals, kinds = [], []
    with np.errstate(divide="ignore", invalid="ignore"):
        pos = L > 0
        vals.append(np.where(~pos, 0.0, -np.inf))
        kinds.append((-1, -3))
        for j in range(k):
            fits = ok[:, j] & (A[:, j] >= L)
            vals.append(np.where(fits & pos, omega * L - c[:, j] * L / A[:, j], -np.inf))
            kinds.append((j, -1))
            vals.append(np.where(fits, omega * A[:, j] - c[:, j], -np.inf))
            kinds.append((j, -2))
        for j in range(k):
            for jp in range(k):
                if jp == j:
                    continue
                valid = ok[:, j] & ok[:, jp] & (A[:, j] < L) & (L < A[:, jp])
                d = A[:, jp] - A[:, j]
                cost = (c[:, j] * (A[:, jp] - L) + c[:, jp] * (L - A[:, j])) / d
                vals.append(np.where(valid, omega * L - cost, -np.inf))
                kinds.append((j, jp))
    V = np.stack(vals, axis=1)
    best = np.argmax(V, axis=1)
    top = V[np.arange(n), best]
    # a price error of ``band`` moves a value by about band * (its price term), which is
    # of the order of omega * a even when the job's net value is close to 0
    gap = band * np.maximum(np.abs(top), omega * A.max(axis=1) + c.max(axis=1) + 1e-12)
    near = (V >= (top - gap)[:, None]).sum(axis=1) > 1
    kj = np.array([q[0] for q in kinds])[best]
    kk = np.array([q[1] for q in kinds])[best]
    rows = np.arange(n)
    e1 = np.where(kj >= 0, col[rows, np.maximum(kj, 0)], -1)
    e2 = np.where(kk >= 0, col[rows, np.maximum(kk, 0)], np.where(kk == -3, -1, kk))
    none = ~np.isfinite(top)
    return _Vertices(e1, e2, np.zeros(n), np.zeros(n), near | none)


def _solve_floor_master(inst: _Instance, a: np.ndarray, f: np.ndarray, omega: np.ndarray,
                        vert: _Vertices, explicit: np.ndarray) -> tuple | None:
    """Restricted master of a floor stage: ``(xcol, iterations)`` (``None``: no fit)."""
    n, k, E = inst.n, inst.k, inst.E
    typ = inst.col_type
    ag = np.flatnonzero(~explicit)
    e1, e2 = vert.e1[ag], vert.e2[ag]
    L = f[ag]
    xcol = np.zeros(E)
    has1 = e1 >= 0
    split = e2 >= 0
    full = e2 == -2
    floor1 = has1 & (e2 == -1)
    e1s = np.maximum(e1, 0)
    e2s = np.maximum(e2, 0)
    a1 = a[e1s]
    a2 = np.where(split, a[e2s], 1.0)
    d = np.where(split, a2 - a1, 1.0)
    x1 = np.where(floor1, L / np.where(has1, a1, 1.0),
                  np.where(full, 1.0, np.where(split, (a2 - L) / d, 0.0)))
    x2 = np.where(split, (L - a1) / d, 0.0)
    xcol[e1s[has1]] = x1[has1]
    xcol[e2s[split]] = x2[split]
    load = inst.W @ xcol
    ex = np.flatnonzero(explicit)
    cols = np.flatnonzero(explicit[inst.mem_job])
    nx = cols.size
    remap = np.full(n, -1)
    remap[ex] = np.arange(ex.size)
    own = remap[inst.mem_job[cols]]
    r = ex.size
    M = sp.vstack([
        sp.csr_matrix((inst.col_workers[cols], (typ[cols], np.arange(nx))), shape=(k, nx)),
        sp.csr_matrix((np.ones(nx), (own, np.arange(nx))), shape=(r, nx)),
        sp.csr_matrix((a[cols], (own, np.arange(nx))), shape=(r, nx)),
    ], format="csr")
    lo = np.r_[np.full(k + r, -np.inf), f[ex]]
    up = np.r_[inst.cap - load, np.ones(r), np.full(r, np.inf)]
    if (up[:k] < -1e-9 * (1 + inst.cap)).any():
        return None
    up[:k] = np.maximum(up[:k], 0.0)
    lp = LinearProgram.build(-omega[inst.mem_job[cols]] * a[cols], M, lo, up, 0.0, np.inf)
    sol = get_backend("highs", solver="ipm" if r > 400 else "choose").solve_lp(lp)
    if sol.status != "optimal" or sol.x is None or sol.row_duals is None:
        return None
    xcol[cols] = sol.x
    return xcol, sol.iterations


def _vertices_from_x(inst: _Instance, A: np.ndarray, col: np.ndarray, a: np.ndarray,
                     L: np.ndarray, xcol: np.ndarray) -> tuple[_Vertices, np.ndarray]:
    """Read each job's vertex (floor / full / split) off an allocation; others: explicit."""
    n, k = A.shape
    X = np.zeros((n, k))
    X[inst.mem_job, inst.col_type] = xcol
    used = X > 1e-12
    cnt = used.sum(axis=1)
    order = np.argsort(~used, axis=1, kind="stable")  # used types first
    rows = np.arange(n)
    j1, j2 = order[:, 0], order[:, min(1, k - 1)]
    lev = (X * A).sum(axis=1)
    tot = X.sum(axis=1)
    at_floor = np.abs(lev - L) <= 1e-7 * np.maximum(1.0, np.abs(L))
    e1 = np.where(cnt >= 1, col[rows, j1], -1)
    full = (cnt == 1) & (np.abs(tot - 1.0) <= 1e-12) & ~at_floor
    floor1 = (cnt == 1) & at_floor
    split = (cnt == 2) & at_floor & (np.abs(tot - 1.0) <= 1e-9)
    e2 = np.where(split, col[rows, j2], np.where(full, -2, -1))
    # order a split's columns: slower first
    swap = split & (A[rows, j1] > A[rows, j2])
    e1, e2 = np.where(swap, e2, e1), np.where(swap, e1, e2)
    nothing = (cnt == 0) & (L <= 0)
    explicit = ~(full | floor1 | split | nothing)
    z = np.zeros(n)
    return _Vertices(e1, e2, z, z, explicit), explicit
