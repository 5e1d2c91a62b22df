"""Independent references for water-filling tests: per-job rise LPs in scipy (no fairalloc
code), used to prove that no frozen job can still rise."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

#: relative slack of the kept levels (the solver reaches them only to rounding)
LEVEL_SLACK = 1e-12


def level_program(jobs, cluster):
    """``(A, U)``: time and capacity rows ``A x <= [1, cap]`` over the ``n*k`` time fractions
    and each job's normalised level ``u_m(x) = U[m] @ x`` (Gavel §4.1 normalisation). A job
    runs only on types with at least its gang size of workers (its throughput elsewhere is 0)."""
    T, sf, cap = jobs.throughput, jobs.scale_factor, cluster.capacity
    T = np.where(sf[:, None] <= cap[None, :], T, 0.0)
    n, k = T.shape
    u = sf / (T @ (cap / cap.sum()))
    nk = n * k
    A_time = sp.kron(sp.eye(n), np.ones((1, k)))
    A_cap = sp.csr_matrix((np.repeat(sf, k), (np.tile(np.arange(k), n), np.arange(nk))),
                          shape=(k, nk))
    U = sp.csr_matrix((np.repeat(u, k) * T.ravel(), (np.repeat(np.arange(n), k),
                                                     np.arange(nk))), shape=(n, nk))
    return sp.vstack([A_time, A_cap]).tocsr(), U


def rises_alone(jobs, cluster, levels):
    """Each job's largest level with every other job kept at ``levels`` (less
    `LEVEL_SLACK` relative), minus its own level, relative to ``max(1, level)``: one LP each."""
    A0, U = level_program(jobs, cluster)
    n = U.shape[0]
    A = sp.vstack([A0, -U]).tocsr()
    b = np.r_[np.ones(n), cluster.capacity,
              -(levels - LEVEL_SLACK * np.maximum(levels, 1.0))]
    out = np.zeros(n)
    for m in range(n):
        rr = linprog(-U[m].toarray().ravel(), A_ub=A, b_ub=b, bounds=(0, 1), method="highs")
        assert rr.status == 0
        out[m] = (-rr.fun - levels[m]) / max(levels[m], 1.0)
    return out


def capped_rises(jobs, cluster, levels, cap=1e-3):
    """One LP: the largest total of per-job rises above ``levels``, each capped at
    ``cap * max(1, level)``, every job kept at its level; each job's rise relative to
    ``max(1, level)``."""
    A0, U = level_program(jobs, cluster)
    n, nk = U.shape
    A = sp.vstack([sp.hstack([A0, sp.csr_matrix((A0.shape[0], n))]),
                   sp.hstack([-U, sp.eye(n)])]).tocsr()
    scale = np.maximum(1.0, levels)
    b = np.r_[np.ones(n), cluster.capacity, -(levels - LEVEL_SLACK * scale)]
    bounds = [(0.0, 1.0)] * nk + [(0.0, c) for c in cap * scale]
    rr = linprog(np.r_[np.zeros(nk), -np.ones(n)], A_ub=A, b_ub=b, bounds=bounds,
                 method="highs")
    assert rr.status == 0
    return rr.x[nk:] / scale


_TIGHT = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}
#: what the reference changes, in turn, when HiGHS does not end optimal
_RETRIES = (("presolve", "off"), ("primal_feasibility_tolerance", 1e-9),
            ("primal_feasibility_tolerance", 1e-7), ("dual_feasibility_tolerance", 1e-7))


def _tight_lp(c, A, b, bounds):
    """``min c x`` s.t. ``A x <= b`` by HiGHS (highspy, called directly: no fairalloc code) at
    feasibility tolerances of 1e-10. Not scipy's `linprog`: the HiGHS an old scipy bundles
    (scipy 1.13, the declared minimum) ends the 320-job 10-type sequence with an unknown
    status at these tolerances, and highspy's version is pinned by fairalloc's own bound."""
    return _highspy_lp(c, A, b, bounds)


def _highspy_lp(c, A, b, bounds):
    """The same LP in highspy itself (a newer HiGHS than an old scipy bundles), at the same
    tolerances; returns an object with ``x`` and ``fun`` as `linprog` does."""
    import types

    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    for key, value in _TIGHT.items():
        h.setOptionValue(key, value)
    A = sp.csr_matrix(A)
    n = A.shape[1]
    lo = np.array([-highspy.kHighsInf if lb is None else lb for lb, _ in bounds], dtype=float)
    hi = np.array([highspy.kHighsInf if ub is None else ub for _, ub in bounds], dtype=float)
    status = h.passModel(n, A.shape[0], A.nnz, 2, 1, 0.0, np.asarray(c, dtype=float), lo, hi,
                         np.full(A.shape[0], -highspy.kHighsInf), np.asarray(b, dtype=float),
                         A.indptr.astype(np.int32), A.indices.astype(np.int32),
                         A.data.astype(float), np.zeros(n, dtype=np.int32))
    assert status != highspy.HighsStatus.kError
    h.run()
    model = h.modelStatusToString(h.getModelStatus())
    for key, value in _RETRIES:
        if model == "Optimal":
            break
        # HiGHS' presolve (or its tolerances, under some BLAS kernels: OPENBLAS_CORETYPE=
        # Sandybridge) calls a thin face of floors infeasible: solve it again as it is
        h.setOptionValue(key, value)
        h.clearSolver()
        h.run()
        model = h.modelStatusToString(h.getModelStatus())
    assert model == "Optimal", model
    x = np.asarray(h.getSolution().col_value)
    return types.SimpleNamespace(x=x, fun=float(np.dot(c, x)), status=0)


def leximin_levels(jobs, cluster, tol=1e-7, cap=1e-3):
    """Single-level weighted lexicographic max-min levels by an LP sequence in highspy (no
    fairalloc code). Each level maximises ``theta`` with ``u_m >= f_m + w_m theta`` for the
    live jobs and ``u_m >= f_m`` for the frozen ones; then capped bottleneck LPs (maximise the
    live jobs' rises ``sigma_m <= cap max(1, f_m)`` with every level at its floor) decide
    them: a job rising by more than ``tol max(1, f_m)`` stays live (it leaves the candidates
    and the LP is solved again), and when no candidate rises, every candidate is frozen.
    HiGHS runs at feasibility tolerances of 1e-10, so the vertices meet the floors far more
    closely than ``tol``."""
    A0, U = level_program(jobs, cluster)
    n, nk = U.shape
    b0 = np.r_[np.ones(n), cluster.capacity]
    zeros = sp.csr_matrix((A0.shape[0], 1))
    f, frozen = np.zeros(n), np.zeros(n, dtype=bool)
    while not frozen.all():
        w = np.where(frozen, 0.0, jobs.weight)
        A = sp.vstack([sp.hstack([A0, zeros]), sp.hstack([-U, sp.csr_matrix(w[:, None])])])
        rr = _tight_lp(np.r_[np.zeros(nk), -1.0], A.tocsr(), np.r_[b0, -f],
                       [(0, 1)] * nk + [(0, None)])
        f = f + w * max(-rr.fun, 0.0)
        cand = ~frozen
        while True:
            d = np.flatnonzero(cand)
            S = sp.csr_matrix((np.ones(d.size), (d, np.arange(d.size))), shape=(n, d.size))
            A = sp.vstack([sp.hstack([A0, sp.csr_matrix((A0.shape[0], d.size))]),
                           sp.hstack([-U, S])])
            caps = cap * np.maximum(1.0, f[d])
            rr = _tight_lp(np.r_[np.zeros(nk), -np.ones(d.size)], A.tocsr(), np.r_[b0, -f],
                           [(0, 1)] * nk + [(0, c) for c in caps])
            up = rr.x[nk:] > tol * np.maximum(1.0, f[d])
            if not up.any():
                frozen[d] = True
                break
            cand[d[up]] = False
    return f
