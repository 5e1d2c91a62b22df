"""Near-identical water-filling proven in O(nnz) on the original program (issue #28).

The near-symmetry step's expansion is proven Pareto-maximal by Lagrangian proofs at the reduced
levels' capacity prices (`water_symmetry.price_proof`; ``proofs/symmetry_reduction.md``,
"Near-ties") before the end check's LP over all original jobs: near-identical jobs no longer
cost one whole LP. The proof is sound for any prices and any feasible allocation (checked
against the LP it bounds), and a near merge that is not Pareto-maximal still hands over.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

import fairalloc as fa
from fairalloc.throughput import Tuning
from fairalloc.throughput.instance import ColumnInstance
from fairalloc.throughput.max_min import BOTTLENECK_TOL
from fairalloc.throughput.water_robust import claimed_rise
from fairalloc.throughput.water_symmetry import price_proof
from fairalloc.tolerances import GAP_TOL
from tests.water_reference import leximin_levels


def _near_jobs(n: int, noise: float, seed: int = 0) -> fa.Jobs:
    rng = np.random.default_rng(seed)
    row = np.array([4.0, 2.0, 1.0])
    return fa.Jobs(row * (1.0 + noise * rng.standard_normal((n, 3))))


def test_near_identical_jobs_are_proven_without_the_end_check_lp():
    """Regression (fails on main with `SolverError`: the end check's LP over the 512 original
    jobs bounds only the sum of their rises, which does not prove each one, so the near step
    handed over to job by job, whose fast water-filling cannot prove them either and whose
    robust tail stops at 256 jobs: "512 frozen jobs can still rise"). Each job's own price
    proof proves it, with no LP over the original jobs (path step ``pareto-check``)."""
    jobs = _near_jobs(512, 3e-9)
    r = fa.water_filling(jobs, fa.Cluster({"v100": 16, "p100": 24, "k80": 32}))
    assert r.stats.path[0] == "near-symmetry:4" and r.stats.fallbacks == ()
    assert "pareto-check" not in r.stats.path
    assert r.status == "optimal" and r.certificate.ok
    assert all(c.ok for c in r.stage_certificates)


def test_the_job_by_job_solve_proves_near_identical_jobs_by_price_proofs():
    """Regression (fails on main with `SolverError`, "512 frozen jobs can still rise": the
    end check's LP bounds only the sum of the rises). The job-by-job end check tries price
    proofs at the levels' capacity prices before its LP."""
    jobs = _near_jobs(512, 3e-9)
    r = fa.water_filling(jobs, fa.Cluster({"v100": 16, "p100": 24, "k80": 32}),
                         symmetry=False)
    assert r.status == "optimal" and r.certificate.ok
    assert all(c.ok for c in r.stage_certificates)


def test_a_near_merge_that_is_not_pareto_maximal_hands_over():
    """Rows ``[1 + d, 1 - d]`` and ``[1 - d, 1 + d]`` (``d = 1e-7``) merge at a near tolerance
    of ``1e-6``; the merged split meets the max-min level within a few ``d`` (certified), but
    one job can take the time every other job saves by moving to its better type (a rise of
    about ``2 cap d``, 2e-6, above its claimed 1e-6): no proof may accept it, the plan hands
    over to the exact classes."""
    d, n = 1e-7, 100
    s = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    jobs = fa.Jobs(np.stack([1.0 + d * s, 1.0 - d * s], axis=1))
    cluster = fa.Cluster({"a": 10, "b": 10})
    r = fa.water_filling(jobs, cluster, tuning=Tuning(near_tie_share=1.0))
    assert r.stats.fallbacks[0].startswith("near-symmetry->symmetry: ")
    assert "not proven bottlenecked" in r.stats.fallbacks[0]
    assert r.stats.path[0] == "symmetry:2" and r.stats.classes == 2
    assert r.status == "optimal" and r.certificate.ok


@settings(max_examples=30, deadline=None, derandomize=True, database=None)
@given(n=st.integers(2, 5), k=st.integers(1, 3), seed=st.integers(0, 2**16),
       sf=st.booleans())
def test_the_price_proof_bounds_every_rise(n, k, seed, sf):
    """For any prices and any feasible allocation, no job rises above its level by more than
    the proof's bound while every other job keeps its level (the LP it bounds, by HiGHS)."""
    rng = np.random.default_rng(seed)
    T = rng.uniform(0.1, 5.0, (n, k)) * (rng.random((n, k)) < 0.8)
    T[np.arange(n), rng.integers(0, k, n)] += 1.0  # every job has a column
    jobs = fa.Jobs(T, scale_factor=rng.choice([1, 2], n) if sf else None)
    cluster = fa.Cluster({f"t{j}": int(rng.integers(2, 5)) for j in range(k)})
    inst = ColumnInstance(jobs, cluster)
    U = sp.csr_matrix(sp.diags(rng.uniform(0.5, 2.0, n)) @ inst.Tm)
    A, _, ub, _ = inst.base_rows()
    x = rng.random(inst.E)
    x *= min(1.0, float(np.min(ub / np.maximum(A @ x, 1e-300))))  # feasible
    prices = rng.uniform(0.0, 2.0, inst.k) * (rng.random(inst.k) < 0.9)
    proof = price_proof(inst, U, x, prices)
    ell = U @ x
    bound = proof.bound(ell)
    for m in range(n):
        others = np.arange(n) != m
        lp = linprog(-U[m].toarray().ravel(), A_ub=sp.vstack([A, -U[others]]),
                     b_ub=np.r_[ub, -ell[others]], bounds=(0.0, 1.0), method="highs")
        assert lp.status == 0
        rise = -lp.fun - ell[m]
        assert rise <= bound[m] + 1e-9 * max(1.0, ell[m]), (m, rise, bound[m])


@settings(max_examples=12, deadline=None, derandomize=True, database=None)
@given(copies=st.tuples(st.integers(6, 24), st.integers(6, 24)),
       noise=st.sampled_from([3e-10, 1e-9, 3e-9]), seed=st.integers(0, 2**16))
def test_near_classes_agree_with_the_job_by_job_solve(copies, noise, seed):
    """Many near-identical members per class (the price proofs decide): levels agree with the
    job-by-job solve within both results' claimed rises, both certified and optimal."""
    rows = np.array([[4.0, 2.0, 1.0], [3.0, 3.0, 0.5]])
    kind = np.repeat(np.arange(2), copies)
    rng = np.random.default_rng(seed)
    jobs = fa.Jobs(rows[kind] * (1.0 + noise * rng.standard_normal((kind.size, 3))))
    cluster = fa.Cluster({"v100": 2, "p100": 3, "k80": 4})
    r = fa.water_filling(jobs, cluster)
    p = fa.water_filling(jobs, cluster, symmetry=False)
    for a in (r, p):
        assert a.status == "optimal" and a.certificate.ok
        assert all(c.ok for c in a.stage_certificates)
    fr, fp = np.asarray(r.level_floors), np.asarray(p.level_floors)
    umax = np.asarray(r.metric) / np.asarray(r.effective_throughput) * jobs.throughput.max(1)
    tol = 2.0 * claimed_rise(np.maximum(fr, fp), umax, BOTTLENECK_TOL, GAP_TOL)
    assert np.all(np.abs(fr - fp) <= tol), (fr, fp, tol)


@pytest.mark.parametrize("n,seed", [(56, 0), (64, 1)])
def test_saturating_ten_types_equal_an_independent_leximin(n, seed):
    """Issue #28's saturating case (10 types, 1.5 GPUs per job, one level LP per distinct
    level): the floors equal an independent highspy LP sequence (`leximin_levels`) to the
    certificates' gap tolerance, every LP certified, status optimal."""
    rng = np.random.default_rng(seed)
    T = rng.lognormal(0.0, 0.8, n)[:, None] * 10.0 * np.c_[np.ones(n),
                                                            rng.uniform(0.1, 1.0, (n, 9))]
    jobs = fa.Jobs(T, scale_factor=rng.choice([1, 2, 4, 8], n, p=[0.7, 0.1, 0.15, 0.05]))
    cluster = fa.Cluster({f"t{j}": max(1, round(1.5 * n / 10)) for j in range(10)})
    r = fa.max_min_fairness(jobs, cluster, water_filling=True)
    assert r.status == "optimal" and r.certificate.ok
    assert all(c.ok for c in r.stage_certificates)
    np.testing.assert_allclose(r.level_floors, leximin_levels(jobs, cluster),
                               rtol=r.certificate.gap_tol)
