"""Space sharing (job pairs) and placement sensitivity (gavel.txt §3.1, §4.4)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.data import JobPairs
from fairalloc.throughput import max_min_space_sharing


def _all_pairs(T, rng, frac=(0.4, 0.9)):
    n, k = T.shape
    a, b = np.triu_indices(n, 1)
    f = rng.uniform(*frac, size=(a.size, k, 2))
    tp = np.stack([T[a] * f[:, :, 0], T[b] * f[:, :, 1]], axis=2)
    return JobPairs(np.c_[a, b], tp)


def test_paper_pair_example_effective_throughput():
    """gavel.txt §3.1: T has a row (20.0, 7.5) for jobs (0, 1) colocated on a V100."""
    T = np.array([[40.0, 20.0, 10.0], [15.0, 10.0, 5.0]])
    pairs = JobPairs([[0, 1]], [[[20.0, 7.5], [0.0, 0.0], [0.0, 0.0]]])
    jobs = fa.Jobs(T)
    cl = fa.Cluster({"v100": 1, "p100": 1, "k80": 1})
    a = fa.max_total_throughput(jobs, cl, pairs=pairs)
    # the pair column counts towards both jobs' effective throughput and time rows
    tp = (T * (a.x - np.r_[a.pair_x, a.pair_x] * [[1, 0, 0]])).sum(axis=1)
    tp += a.pair_x[0, 0] * np.array([20.0, 7.5])
    np.testing.assert_allclose(a.effective_throughput, tp, atol=1e-7)
    assert (a.x.sum(axis=1) <= 1 + 1e-9).all()


def test_sharing_helps_when_pairs_keep_most_speed():
    jobs = fa.Jobs([[10.0], [10.0]])
    pairs = JobPairs([[0, 1]], [[[8.0, 8.0]]])
    cl = fa.Cluster({"gpu": 1})
    plain = fa.max_min_fairness(jobs, cl)
    shared = fa.max_min_fairness(jobs, cl, pairs=pairs)
    assert plain.objective == pytest.approx(0.5)
    assert shared.objective == pytest.approx(0.8)
    np.testing.assert_allclose(shared.pair_x, [[1.0]], atol=1e-7)
    cg = max_min_space_sharing(jobs, cl, pairs)
    assert cg.objective == pytest.approx(0.8)


@settings(max_examples=10, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10_000), n=st.integers(3, 9), k=st.integers(1, 3))
def test_column_generation_equals_full_program_and_colocation_helps(seed, n, k):
    rng = np.random.default_rng(seed)
    T = rng.uniform(1.0, 10.0, (n, k))
    jobs = fa.Jobs(T, scale_factor=rng.integers(1, 3, n))
    cl = fa.Cluster({f"t{j}": int(rng.integers(2, 5)) for j in range(k)})
    pairs = _all_pairs(T, rng, frac=(0.2, 0.8))
    full = fa.max_min_fairness(jobs, cl, pairs=pairs, work_conserving=False)
    cg = max_min_space_sharing(jobs, cl, pairs)
    assert cg.objective == pytest.approx(full.objective, rel=1e-6, abs=1e-9)
    assert cg.certificate.ok
    # §4.4 colocation: never worse than without pairs
    plain = fa.max_min_fairness(jobs, cl, work_conserving=False)
    assert full.objective >= plain.objective - 1e-9
    # capacity: pairs occupy one gang's workers of their type
    for r in (full, cg):
        s_pair = np.maximum(jobs.scale_factor[pairs.members[:, 0]],
                            jobs.scale_factor[pairs.members[:, 1]])
        single = r.x.copy()
        # subtract pair time from each member's row before counting workers
        np.add.at(single, pairs.members[:, 0], -r.pair_x)
        np.add.at(single, pairs.members[:, 1], -r.pair_x)
        load = jobs.scale_factor @ single + s_pair @ r.pair_x
        assert (load <= cl.capacity + 1e-6).all()
        assert (r.x.sum(axis=1) <= 1 + 1e-7).all()


def test_space_sharing_scales_without_dense_tensor():
    rng = np.random.default_rng(0)
    n, k = 300, 3
    T = rng.uniform(1.0, 10.0, (n, k))
    jobs = fa.Jobs(T)
    cl = fa.Cluster({"a": 40, "b": 40, "c": 40})
    pairs = _all_pairs(T, rng)
    assert pairs.num_pairs == n * (n - 1) // 2
    r = max_min_space_sharing(jobs, cl, pairs)
    assert r.certificate.ok and r.gap <= 1e-6 * max(1, r.objective)
    assert r.objective > fa.max_min_fairness(jobs, cl, work_conserving=False).objective


# --------------------------------------------------------------------------------------------
# placement sensitivity
# --------------------------------------------------------------------------------------------
def test_placement_consolidated_capacity():
    # two 4-GPU jobs; consolidated they run at 10, spread at 6; only 4 workers consolidate
    jobs = fa.Jobs([[10.0], [10.0]], scale_factor=[4, 4])
    cl = fa.Cluster({"v100": 8})
    r = fa.max_min_fairness(jobs, cl, unconsolidated_throughput=[[6.0], [6.0]],
                            consolidated_capacity=[4])
    # both jobs run all the time; consolidated time shared: each 1/2 consolidated
    np.testing.assert_allclose(r.x.ravel(), 1.0, atol=1e-7)
    np.testing.assert_allclose(r.consolidated_x.ravel(), 0.5, atol=1e-7)
    np.testing.assert_allclose(r.effective_throughput, 8.0, rtol=1e-7)
    free = fa.max_min_fairness(jobs, cl, unconsolidated_throughput=[[6.0], [6.0]])
    np.testing.assert_allclose(free.effective_throughput, 10.0, rtol=1e-7)
    assert free.certificate.ok


def test_placement_with_water_filling_and_other_policies():
    jobs = fa.Jobs([[10.0, 4.0], [8.0, 6.0], [5.0, 5.0]], scale_factor=[2, 2, 1],
                   steps_remaining=[100.0, 200.0, 50.0])
    cl = fa.Cluster({"v100": 4, "k80": 2})
    U = np.array([[7.0, 3.0], [5.0, 5.0], [5.0, 5.0]])
    for fn in (lambda: fa.max_min_fairness(jobs, cl, unconsolidated_throughput=U,
                                           consolidated_capacity=[2, 2], water_filling=True),
               lambda: fa.min_makespan(jobs, cl, unconsolidated_throughput=U,
                                       consolidated_capacity=[2, 2])):
        r = fn()
        assert r.certificate.ok
        assert (r.consolidated_x <= r.x + 1e-9).all()
        load = jobs.scale_factor @ r.consolidated_x
        assert (load <= np.array([2, 2]) + 1e-7).all()


def test_bad_pairs_and_placement():
    jobs = fa.Jobs([[1.0], [1.0]])
    cl = fa.Cluster({"gpu": 1})
    with pytest.raises(fa.InputError, match="members"):
        JobPairs([[0, 0]], [[[1.0, 1.0]]])
    with pytest.raises(fa.InputError, match="members"):
        JobPairs([[0, 1, 2]], [[[1.0, 1.0]]])
    with pytest.raises(fa.InputError, match="throughput"):
        JobPairs([[0, 1]], [[[1.0, -1.0]]])
    with pytest.raises(fa.InputError, match="pairs"):
        fa.max_min_fairness(jobs, cl, pairs=JobPairs([[0, 5]], [[[1.0, 1.0]]]))
    with pytest.raises(fa.InputError, match="types"):
        fa.max_min_fairness(jobs, cl, pairs=JobPairs([[0, 1]], [[[1.0, 1.0], [1.0, 1.0]]]))
    with pytest.raises(fa.InputError, match="pairs"):
        fa.max_min_fairness(jobs, cl, pairs=[[0, 1]])
    with pytest.raises(fa.InputError, match="consolidated_capacity"):
        fa.max_min_fairness(jobs, cl, consolidated_capacity=[1])
    with pytest.raises(fa.InputError, match="consolidated_capacity"):
        fa.max_min_fairness(jobs, cl, unconsolidated_throughput=[[1.0], [1.0]],
                            consolidated_capacity=[2])


def test_job_rows_spanning_1e23_are_certified_by_the_clarabel_retry():
    # fuzz (seed 15): job 1 runs at 1e-20 steps/s alone and at 1e2 in its pair, so its level
    # row spans 1e23 and HiGHS dropped its tiny coefficients: its point missed the bound by
    # 1.6 % (CertificateError). The last restricted LP is solved again by Clarabel.
    jobs = fa.Jobs(np.array([[0.0, 608.5731125658065, 127.21688545929815],
                             [3.764728204273962e-20, 2.9749372630608634e-21, 0.0]]))
    cl = fa.Cluster({"t0": 2, "t1": 1, "t2": 5})
    pairs = JobPairs([[0, 1]], np.array([[[453.0121913083443, 602.6702486906012],
                                          [605.6680053415027, 316.0007943496397],
                                          [142.13937732263426, 251.38716833609934]]]))
    r = max_min_space_sharing(jobs, cl, pairs, gap_tol=1e-6)
    assert r.certificate.ok and r.certificate.relative_gap <= 1e-6
    assert "clarabel-master" in r.stats.path and r.stats.backend == "highs+clarabel"
    assert r.objective == pytest.approx(3.9115859138666567, rel=1e-8)
    # a backend the caller names is used as given: HiGHS alone cannot certify it
    with pytest.raises(fa.CertificateError):
        max_min_space_sharing(jobs, cl, pairs, backend=fa.get_backend("highs", need="lp"))
