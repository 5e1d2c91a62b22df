"""The column form of an effective-throughput instance (Gavel §3.1).

`ColumnInstance` lists the allowed (job, type) columns of a throughput program (and,
with space sharing or placement sensitivity, the job-pair and unconsolidated columns) as sparse
matrices built without loops per job. Every stage LP of `fairalloc.throughput.stages`
and every policy builds its rows from these tables.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from .._sparse import csr_from_triplets, matvec, stack_rows
from .._validation import as_array
from ..data import Cluster, JobPairs, Jobs
from ..errors import InputError
from .rows import RowLayout

__all__ = ["TINY", "ColumnInstance"]

#: smallest positive divisor used where a ratio is taken of a row that may be 0 (the result
#: is then discarded by the surrounding ``where``); not a tolerance
TINY = 1e-300

class ColumnInstance:
    """Jobs on a cluster as a list of allocation *columns* (sparse; built without job loops).

    A column is something that can be given time on one accelerator type: a single job (one
    column per allowed (job, type), two with placement sensitivity: consolidated and
    unconsolidated) or a job pair (space sharing). Its members are the jobs it serves.

    * ``M``  (n x E): 1 where job m is a member of column e (time rows ``M x <= 1``);
    * ``Tm`` (n x E): throughput job m gets per unit time of column e;
    * ``W``  (k x E): workers of its type the column occupies (capacity rows ``W x <= cap``);
    * ``Wc`` (k x E): the same restricted to consolidated columns (placement sensitivity).

    ``multiplicity`` (optional, shape ``(n,)``): each row stands for that many identical jobs
    (an exact symmetry class, `fairalloc.throughput.symmetry`). Capacity rows then weigh a row
    by ``scale_factor * multiplicity`` (`cap_weight`); time rows, level rows and which types a
    job may use (its gang ``scale_factor`` fits) are per row as for one job.
    """

    def __init__(self, jobs: Jobs, cluster: Cluster, pairs: Any = None,
                 unconsolidated_throughput: Any = None,
                 consolidated_capacity: Any = None,
                 multiplicity: np.ndarray | None = None) -> None:
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
        #: jobs each row stands for (a symmetry class's members; ``None``: one each)
        self.multiplicity = None if multiplicity is None else np.asarray(multiplicity,
                                                                         dtype=float)
        #: workers a job's row occupies per unit of its time in the capacity rows:
        #: ``scale_factor * multiplicity`` (a class of ``c`` identical jobs uses ``c`` gangs)
        self.cap_weight = s if self.multiplicity is None else s * self.multiplicity
        cw = self.cap_weight
        self.allowed = (T > 0) & (s[:, None] <= cap[None, :])  # a gang fits: s alone
        self.T_allowed = np.where(self.allowed, T, 0.0)
        ei, ej = np.nonzero(self.allowed)
        mem_job = [ei]
        mem_col = [np.arange(ei.size)]
        mem_tp = [T[ei, ej]]
        col_type = [ej]
        col_workers = [cw[ei]]
        col_kind = [np.zeros(ei.size, dtype=np.int8)]  # 0 single, 1 unconsolidated, 2 pair
        E = ei.size
        self.placement = unconsolidated_throughput is not None
        #: the unconsolidated throughput table ``(n, k)`` (placement sensitivity) or ``None``
        self.unconsolidated: np.ndarray | None = None
        if self.placement:
            U = as_array(unconsolidated_throughput, "unconsolidated_throughput", ndim=2,
                         shape=(n, k))
            self.unconsolidated = U
            ui, uj = np.nonzero(self.allowed & (U > 0))
            mem_job.append(ui)
            mem_col.append(E + np.arange(ui.size))
            mem_tp.append(U[ui, uj])
            col_type.append(uj)
            col_workers.append(cw[ui])
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
            if multiplicity is not None:
                raise InputError("job pairs cannot be combined with class multiplicities",
                                 argument="pairs")
            if not isinstance(pairs, JobPairs):
                raise InputError(f"pairs must be a fairalloc.JobPairs, got "
                                 f"{type(pairs).__name__}", argument="pairs")
            pairs.check(jobs, cluster)
            self.pairs = pairs
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
            E += pi.size
        self.E = E
        self.mem_job = np.concatenate(mem_job)
        self.mem_col = np.concatenate(mem_col)
        self.mem_tp = np.concatenate(mem_tp)
        self.col_type = np.concatenate(col_type)
        self.col_workers = np.concatenate(col_workers).astype(float)
        self.col_kind = np.concatenate(col_kind)
        #: members of each column's job (``None`` without multiplicities; no pair columns then)
        self.col_mult: np.ndarray | None = None
        if self.multiplicity is not None:
            self.col_mult = np.empty(E)
            self.col_mult[self.mem_col] = self.multiplicity[self.mem_job]
        self.M = csr_from_triplets(self.mem_job, self.mem_col, np.ones(self.mem_job.size),
                                   (n, E))
        self.Tm = csr_from_triplets(self.mem_job, self.mem_col, self.mem_tp, (n, E))
        self.W = csr_from_triplets(self.col_type, np.arange(E), self.col_workers, (k, E))
        if self.placement:
            cons = self.col_kind != 1
            self.Wc = csr_from_triplets(self.col_type[cons], np.flatnonzero(cons),
                                        self.col_workers[cons], (k, E))
        # normalisers (Gavel §4.1): X^equal splits a job's time across types in proportion
        # to their worker counts (row sum 1); throughput(m, X^equal) over usable types.
        self.equal_tp = self.T_allowed @ (cap / cap.sum())
        self.fastest_tp = self.T_allowed.max(axis=1)

    # --- rows shared by every policy --------------------------------------------------------
    def base_rows(self) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray, RowLayout]:
        """Time rows, capacity rows (and consolidated-capacity rows): ``A x <= ub``, with
        their `RowLayout` (blocks ``time``, ``capacity``
        and, with placement sensitivity, ``consolidated``)."""
        blocks = [self.M, self.W]
        ub = [np.ones(self.n), self.cap]
        layout = RowLayout().extended("time", self.n).extended("capacity", self.k)
        if self.placement:
            blocks.append(self.Wc)
            ub.append(self.cons_cap)
            layout = layout.extended("consolidated", self.k)
        A = stack_rows(blocks, self.E)
        upper = np.concatenate(ub)
        return A, np.full(upper.size, -np.inf), upper, layout

    def throughput(self, xcol: np.ndarray) -> np.ndarray:
        """Effective throughput of every job for column allocation ``xcol``."""
        return matvec(self.Tm, xcol)

    def to_matrix(self, xcol: np.ndarray, kinds: tuple[int, ...] = (0, 1, 2)) -> np.ndarray:
        """Time fraction of each job on each type, ``(n, k)``, over columns of ``kinds``."""
        sel = np.isin(self.col_kind[self.mem_col], kinds)
        idx = self.mem_job[sel] * self.k + self.col_type[self.mem_col[sel]]
        out = np.bincount(idx, weights=xcol[self.mem_col[sel]], minlength=self.n * self.k)
        return out.reshape(self.n, self.k)

    def repair(self, xcol: np.ndarray) -> np.ndarray:
        """Make a solver's column allocation exactly feasible (clip, scale down overused rows)."""
        x = np.clip(xcol, 0.0, 1.0)
        rows = matvec(self.M, x)
        job_ratio = np.where(rows > 1.0, 1.0 / np.maximum(rows, TINY), 1.0)
        load = matvec(self.W, x)
        type_ratio = np.where(load > self.cap, self.cap / np.maximum(load, TINY), 1.0)
        f = type_ratio[self.col_type]
        if self.placement:
            cload = self.Wc @ x
            cratio = np.where(cload > self.cons_cap, self.cons_cap / np.maximum(cload, TINY),
                              1.0)
            f = np.where(self.col_kind != 1, np.minimum(f, cratio[self.col_type]), f)
        per_member = job_ratio[self.mem_job]
        colmin = np.ones(self.E)
        np.minimum.at(colmin, self.mem_col, per_member)
        return x * np.minimum(f, colmin)
