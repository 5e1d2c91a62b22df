"""The column form of an effective-throughput instance and its lexicographic stage LPs.

Shared by every policy of :mod:`fairalloc.throughput` (and water-filling, space sharing):
:class:`_Instance` lists the allowed (job, type) columns (and job-pair or placement columns)
as sparse matrices built without loops per job; a *stage* is one LP over ``[x, theta]``
(:class:`_Level`: ``max theta`` s.t. ``C x - b theta >= h``; :class:`_Linear`: ``max g @ x``);
:class:`_StageSolver` solves stages in sequence, fixing each optimum (to ``stage_tol``) before
the next, and certifies each with :func:`fairalloc.certificates.lp_certificate`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
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
    #: the objective's data scale in ``theta`` units when the policy knows it (e.g. ``R``
    #: for a Dinkelbach stage, whose ``theta`` is in units of ``rho``); default from ``h``
    scale: float | None = None

    def units(self) -> tuple[float, float]:
        """``(sigma, rho)``: powers of two with ``theta = sigma theta'`` and level rows
        divided by ``rho`` giving a unit-scale program (:func:`_pow2`): ``rho`` from the
        rows' typical largest coefficient, ``sigma`` from the smallest saturation level
        ``max_e C_me / b_m`` (an upper bound on theta)."""
        cached = self.__dict__.get("_units")
        if cached is not None:
            return cached
        rowmax = _row_absmax(self.C)
        pos = (self.b > 0) & (rowmax > 0)
        nz = rowmax[rowmax > 0]
        rho = _pow2(float(np.median(nz))) if nz.size else 1.0
        # theta never exceeds min_m max_e C_me / b_m (no job's row can do better): theta' =
        # theta / sigma is at most about 1, and about 1 / (jobs per worker) at least
        sigma = _pow2(float(np.min(rowmax[pos] / self.b[pos]))) if pos.any() else 1.0
        self.__dict__["_units"] = (sigma, rho)
        return sigma, rho

    def data_scale(self) -> float:
        """The level's own data scale in ``theta`` units: ``max_m |h_m| / max_m b_m`` (the
        rise of the fastest-rising row that matches the largest offset; 0 when every offset
        is 0). The gap of a stage whose optimum is legitimately about 0 (a Dinkelbach stage at
        its root, a late water-filling level) is judged against it."""
        if self.scale is not None:
            return float(self.scale)
        bmax = float(np.max(self.b, initial=0.0))
        if not bmax > 0:
            return 0.0
        return float(np.max(np.abs(self.h), initial=0.0)) / bmax


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


_UNIT_BAND = 4  # data within 2**+-4 of unit scale is left as given


def _pow2(v: float) -> float:
    """The power of two nearest ``v`` (> 0, finite), or 1 when ``v`` is already within
    ``2**+-_UNIT_BAND`` of 1 (or not a positive finite number). Scaling by it is exact."""
    if not (np.isfinite(v) and v > 0):
        return 1.0
    m, e = np.frexp(v)
    e = int(e) - (1 if m < np.sqrt(0.5) else 0)
    return 1.0 if abs(e) <= _UNIT_BAND else float(np.ldexp(1.0, e))


def _row_absmax(A: sp.spmatrix) -> np.ndarray:
    """Largest absolute entry of each row of a sparse matrix (0 for empty rows)."""
    A = sp.csr_matrix(A)
    out = np.zeros(A.shape[0])
    if A.nnz == 0:
        return out
    ptr = A.indptr
    full = ptr[1:] > ptr[:-1]
    out[full] = np.maximum.reduceat(np.abs(A.data), ptr[:-1][full])
    return out


_ROW_BAND = 10  # rows whose largest coefficient is within 2**+-10 of 1 are left as given


def _row_units(A: sp.spmatrix) -> np.ndarray:
    """Per-row powers of two nearest each row's largest coefficient, for rows outside
    ``2**+-_ROW_BAND`` (the solver's own scaling handles the rest; no copy of a large LP is
    made for data already near unit scale)."""
    rm = _row_absmax(A)
    out = np.ones(rm.size)
    far = (rm > 0) & ((rm > 2.0 ** _ROW_BAND) | (rm < 2.0 ** -_ROW_BAND))
    if far.any():
        m, e = np.frexp(rm[far])
        e = e - (m < np.sqrt(0.5))
        out[far] = np.ldexp(1.0, e)
    return out


def _scaled_solve(lp: LinearProgram, backend: Backend, what: str, *,
                  col_unit: np.ndarray | None = None, obj_unit: float | None = None
                  ) -> LPSolution:
    """Solve ``lp`` through a unit-scale copy and map the answer back (exactly).

    Columns are ``x = col_unit * x'``; every row is divided by the power of two nearest its
    largest coefficient (after the column scaling); the objective is divided by ``obj_unit``
    (default: the power of two nearest its largest coefficient). All factors are powers of
    two, so the copy is the same program and its solution maps back without rounding:
    ``x = D_c x'``, row duals ``y = obj_unit D_r y'``. The certificate is then computed on
    the caller's ``lp`` by the caller. Data already within ``2**+-4`` of unit scale are left
    as given.
    """
    A = sp.csr_matrix(lp.A)
    c = lp.c
    cl, cu = lp.col_lower, lp.col_upper
    # scaled copies share the sparsity structure (only the values are copied)
    if col_unit is not None and (col_unit != 1.0).any():
        A = sp.csr_matrix((A.data * col_unit[A.indices], A.indices, A.indptr), shape=A.shape)
        c = c * col_unit
        cl, cu = cl / col_unit, cu / col_unit
    r = _row_units(A)
    rows_scaled = bool((r != 1.0).any())
    if rows_scaled:
        per_entry = np.repeat(1.0 / r, np.diff(A.indptr))
        A = sp.csr_matrix((A.data * per_entry, A.indices, A.indptr), shape=A.shape)
    if obj_unit is None:
        obj_unit = _pow2(float(np.max(np.abs(c), initial=0.0)))
    if not rows_scaled and obj_unit == 1.0 and (col_unit is None or (col_unit == 1.0).all()):
        return _solve(lp, backend, what)
    slp = LinearProgram(c=c / obj_unit, A=A, row_lower=lp.row_lower / r,
                        row_upper=lp.row_upper / r, col_lower=cl, col_upper=cu,
                        integrality=lp.integrality, offset=lp.offset / obj_unit)
    sol = _solve(slp, backend, what)
    x = sol.x if col_unit is None else sol.x * col_unit  # type: ignore[operator]
    y = sol.row_duals * (obj_unit / r)  # type: ignore[operator]
    return dataclasses.replace(sol, x=x, row_duals=y, objective=sol.objective * obj_unit,
                               col_duals=None if sol.col_duals is None else
                               sol.col_duals * obj_unit / (1.0 if col_unit is None else
                                                           col_unit))


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
    # one acceptance rule: a usable point (with duals) goes to the caller's certificate
    if not sol.usable or sol.x is None or sol.row_duals is None:
        raise SolverError(f"{backend.name} failed on the {what} program: {sol.raw_status}",
                          backend=backend.name, status=sol.raw_status)
    return sol


class _StageSolver:
    """Solves a sequence of stages, fixing each optimum before the next (lexicographic)."""

    def __init__(self, inst: _Instance, backend: Backend, *, stage_tol: float,
                 gap_tol: float, feas_tol: float, extra_rows: tuple | None = None,
                 backend_spec: Any = None,
                 meet_extra_rows: Callable[[np.ndarray], np.ndarray] | None = None) -> None:
        self.inst = inst
        #: the policy's own repair of a point that leaves its extra rows short within the
        #: solver's absolute tolerance (min cost: SLO rows topped up, see top_up_rows)
        self.meet_extra_rows = meet_extra_rows
        self.backend = backend
        #: what the caller passed as ``backend=`` (``"highs"``: fairalloc may pick HiGHS'
        #: simplex or interior point per sub-problem; an instance or other name: used as is)
        self.backend_spec = backend_spec
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
        self.raw_status = ""
        self.backends: list[str] = []
        #: whether a structured solve started from a caller's warm start (stats: "+warm")
        self.warm_used = False
        #: an allocation meeting every kept row (the last fixed stage's optimum), towards
        #: which a later stage's point is moved if the solver left a kept row violated
        self.anchor: np.ndarray | None = None

    def toward_anchor(self, xcol: np.ndarray) -> np.ndarray:
        """Move ``xcol`` the least distance towards :attr:`anchor` that meets every kept row.

        Solvers meet rows to an absolute tolerance; a kept row that is a difference of
        nearly equal terms (a ratio kept at its optimum) can then be violated by more than
        ``feas_tol`` relative to its magnitude. The anchor meets every kept row and every
        base row, so the convex combination does too."""
        if self.anchor is None or not self.fixed:
            return xcol
        t = 0.0
        for B, low in self.fixed:
            bx = B @ xcol
            mag = np.maximum(np.abs(low), abs(B) @ np.abs(xcol))
            short = (low - bx) > 0.1 * self.feas_tol * mag  # what a certificate would see
            if short.any():
                ba = B @ self.anchor
                gain = ba[short] - bx[short]
                need = np.where(gain > 0, (low[short] - bx[short]) / np.where(gain > 0, gain,
                                                                              1.0), 1.0)
                t = max(t, float(need.max()))
        if t <= 0.0:
            return xcol
        t = min(1.0, t * (1.0 + 1e-12))
        return (1.0 - t) * xcol + t * self.anchor

    def used(self, sol: LPSolution, name: str | None = None) -> None:
        """Record a solve: iterations, count, raw status and the backend that ran."""
        self.iterations += sol.iterations
        self.solves += 1
        self.raw_status = sol.raw_status
        name = name or sol.backend or self.backend.name
        if name not in self.backends:
            self.backends.append(name)

    @property
    def backend_names(self) -> str:
        """The backends that really ran, joined by ``+`` (``"none"`` if none did)."""
        return "+".join(self.backends) if self.backends else "none"

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

    def top_up(self, stage: _Level, xcol: np.ndarray, theta: float) -> np.ndarray:
        """Give jobs whose level row falls short of the solver's ``theta`` the missing time on
        their best single-job column (where time and workers are free).

        A job that needs only a tiny fraction of time (a 1e-10 share of a fast type) can be
        left at 0 by a solver whose feasibility tolerance is absolute; the certified level is
        then 0. The top-up is clipped to the job's spare time and each type's spare workers
        (scaled down together), so the allocation stays feasible; the certificate decides."""
        pos = stage.b > 0
        if not (np.isfinite(theta) and pos.any()):
            return xcol
        need = np.where(pos, stage.h + stage.b * theta - stage.C @ xcol, 0.0)
        scale = np.abs(stage.h) + stage.b * abs(theta)
        return top_up_rows(self.inst, stage.C, need, scale, xcol)

    def certificate(self, lp: LinearProgram, stage: _Level | _Linear, v: np.ndarray,
                    duals: np.ndarray) -> Certificate:
        """The stage LP's certificate at LP vector ``v``; a level stage's gap is judged against
        ``max(|theta|, |bound|, its data scale)`` (:meth:`_Level.data_scale`), so a level that
        is legitimately about 0 (a Dinkelbach root) is certified relative to its data."""
        cert = lp_certificate(lp, v, duals, maximize=True, gap_tol=self.gap_tol,
                              feas_tol=self.feas_tol)
        if isinstance(stage, _Level):
            ds = stage.data_scale()
            vals = [abs(t) for t in (cert.primal_value, cert.dual_bound) if np.isfinite(t)]
            if ds > max(vals, default=0.0):
                cert = dataclasses.replace(cert, scale=ds)
        return cert

    def certify(self, res: _StageResult, stage: _Level | _Linear, xcol: np.ndarray
                ) -> Certificate:
        """Certificate of ``stage`` (with the duals found for it) at allocation ``xcol``."""
        return self.certificate(res.lp, stage, self.point(stage, xcol), res.duals)

    def run(self, stage: _Level | _Linear, what: str) -> _StageResult:
        lp = self._program(stage)
        E = self.inst.E
        if isinstance(stage, _Level):
            sigma, _ = stage.units()
            col_unit = np.ones(E + 1)
            col_unit[E] = sigma
            sol = _scaled_solve(lp, self.backend, what, col_unit=col_unit, obj_unit=sigma)
        else:
            sol = _scaled_solve(lp, self.backend, what)
        self.used(sol)
        assert sol.x is not None and sol.row_duals is not None
        xcol = self.toward_anchor(self.inst.repair(sol.x[:E]))
        if isinstance(stage, _Level):
            xcol = self.top_up(stage, xcol, float(sol.x[E]))
        if self.meet_extra_rows is not None:
            xcol = self.meet_extra_rows(xcol)
        v = self.point(stage, xcol)
        cert = self.certificate(lp, stage, v, sol.row_duals)
        cert.check(backend=self.backend.name)
        return _StageResult(lp, v, sol.row_duals, cert.primal_value, cert, sol.iterations,
                            self.cap_rows)

    def fix(self, stage: _Level | _Linear, value: float, at: np.ndarray | None = None
            ) -> None:
        """Keep ``stage``'s objective within ``stage_tol`` of ``value`` in later stages.

        The slack is relative to the stage's own scale (``|value|``, or a level's data scale),
        and the kept rows are stored at unit scale (divided by a power of two), so the
        later stages do not depend on the caller's units. ``at``: the stage's optimal
        allocation (the :attr:`anchor` of later stages)."""
        if at is not None:
            self.anchor = np.asarray(at, dtype=float)
        if isinstance(stage, _Level):
            # each row keeps its own level h_m + b_m theta to stage_tol of its magnitude (a
            # slack common to all rows would free a row whose offset h_m is much smaller)
            low = stage.h + stage.b * value
            low = low - self.stage_tol * (np.abs(stage.h) + stage.b * abs(value))
            _, rho = stage.units()
            C = stage.C if rho == 1.0 else sp.csr_matrix(stage.C / rho)
            self.fixed.append((C, low / rho))
        else:
            slack = self.stage_tol * abs(value)
            gam = _pow2(float(np.max(np.abs(stage.g), initial=0.0)))
            self.fixed.append((sp.csr_matrix(stage.g[None, :] / gam),
                               np.array([(value - slack) / gam])))


def _prices(res: _StageResult) -> np.ndarray:
    """Non-negative capacity prices ``d OPT / d workers`` of a maximisation stage."""
    return np.maximum(-res.duals[res.cap_rows], 0.0)


#: The largest fraction by which :func:`top_up_rows` scales a full type's columns down to make
#: room for a job the solver left short (a performance-neutral accuracy knob: 100x below the
#: default relative gap tolerance, so the shrink never decides a certificate).
TOP_UP_SHRINK = 1e-8


def top_up_rows(inst: Any, C: sp.csr_matrix, need: np.ndarray, scale: np.ndarray,
                xcol: np.ndarray) -> np.ndarray:
    """Give each job ``m`` whose row ``C[m] @ x >= ...`` falls short by ``need[m]`` (more than
    ``1e-9 * scale[m]``) the missing amount on its best single-job column, clipped to the job's
    spare time and each type's spare workers (scaled down together); the allocation stays
    feasible and the caller's certificate decides. Used for level rows and SLO rows, which a
    solver with an absolute feasibility tolerance can leave at 0 when they need a tiny share.
    """
    short = need > 1e-9 * scale
    if not short.any():
        return xcol
    single = inst.col_kind[inst.mem_col] != 2
    own, cols = inst.mem_job[single], inst.mem_col[single]
    coef = np.asarray(C[own, cols]).ravel()
    spare = np.maximum(inst.cap - inst.W @ xcol, 0.0)
    # columns on a type with room for the missing time (else any column of the job)
    room = coef > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        fits = room & (spare[inst.col_type[cols]]
                       >= inst.col_workers[cols] * need[own] / np.where(room, coef, 1.0))
    ok = short[own] & room
    if not ok.any():
        return xcol
    coef = np.where(fits, coef, coef * 1e-300)  # prefer columns that fit, best first
    own, cols, coef = own[ok], cols[ok], coef[ok]
    order = np.lexsort((-coef, own))  # per job, its best column first
    own, cols, coef = own[order], cols[order], coef[order]
    first = np.r_[True, own[1:] != own[:-1]]
    own, cols = own[first], cols[first]
    coef = np.asarray(C[own, cols]).ravel()
    add = np.minimum(need[own] / coef, np.maximum(1.0 - (inst.M @ xcol)[own], 0.0))
    use = np.bincount(inst.col_type[cols], weights=inst.col_workers[cols] * add,
                      minlength=inst.k)
    out = xcol.copy()
    # a type the solver filled to its tolerance has no spare room: free it by scaling that
    # type's columns down by at most TOP_UP_SHRINK (every other row loses at most that
    # fraction, well inside the certificate's gap), else the top-up is clipped to the room
    used = inst.W @ xcol
    with np.errstate(divide="ignore", invalid="ignore"):
        shrink = (inst.cap - use) / used
    shrink = np.where((use > spare) & (used > 0) & (shrink >= 1.0 - TOP_UP_SHRINK)
                      & (shrink < 1.0), shrink, 1.0)
    if np.any(shrink < 1.0):
        out = out * shrink[inst.col_type]
        spare = np.maximum(inst.cap - inst.W @ out, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(use > spare, spare / np.where(use > 0, use, 1.0), 1.0)
    out[cols] += add * frac[inst.col_type[cols]]
    return inst.repair(out)
