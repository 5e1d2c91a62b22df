"""The column form of an effective-throughput instance and its lexicographic stage LPs.

Shared by every policy of :mod:`fairalloc.throughput` (and water-filling, space sharing):
:class:`_Instance` lists the allowed (job, type) columns (and job-pair or placement columns)
as sparse matrices built without loops per job; a *stage* is one LP over ``[x, theta]``
(:class:`_Level`: ``max theta`` s.t. ``C x - b theta >= h``; :class:`_Linear`: ``max g @ x``);
:class:`_StageSolver` solves stages in sequence, fixing each optimum (to ``stage_tol``) before
the next, and certifies each with :func:`fairalloc.certificates.lp_certificate`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ._validation import as_array
from .backends import Backend, LinearProgram, LPSolution, get_backend
from .certificates import lp_certificate
from .data import Cluster, Jobs
from .errors import InfeasibleError, InputError, SolverError
from .results import Certificate

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
