"""Restricted columns chosen by capacity prices from a sampled LP, with warm-started rounds
(`fairalloc.throughput.columns.sampled_program`, `columns.solve_restricted`, issue #15):
the same certified optimum as the whole LP, the warm rounds, the hand-overs, and the
choices by hand. Paths are forced by `Tuning` values and faults injected through a
caller-named backend (`tests.columns_helpers.SpyHighs`), never by patching fairalloc."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.backends import HighsBackend, LinearProgram
from fairalloc.throughput import Tuning, columns
from tests.columns_helpers import PRICED_EVERYWHERE, WHOLE_LP, SpyHighs, priced_instance, tuned

_instance = priced_instance
ROUND, WARM_ROUND = columns.RESTRICTED_ROUND, columns.RESTRICTED_ROUND + "+warm"


def test_later_rounds_start_from_the_last_rounds_basis():
    # one first column per job: the loop must add columns, and each later round is HiGHS'
    # simplex from the extended basis of the round before
    jobs, cl = _instance(120, 20, seed=5)
    spy = SpyHighs()
    r = fa.max_min_fairness(jobs, cl, backend=spy,
                            tuning=tuned(PRICED_EVERYWHERE, columns_first_per_job=1))
    assert r.stats.count(ROUND) == 1 and r.stats.count(WARM_ROUND) >= 1 and r.certificate.ok
    # the sampled LP and the first round cold, then the warm rounds
    rounds = r.stats.count(ROUND) + r.stats.count(WARM_ROUND)
    assert spy.warm[1:1 + rounds] == [False] + [True] * (rounds - 1)


def test_a_failed_sampled_lp_keeps_the_whole_lp():
    jobs, cl = _instance(120, 20, seed=5)
    r = fa.max_min_fairness(jobs, cl, backend=SpyHighs(fail=1), tuning=PRICED_EVERYWHERE)
    ref = fa.max_min_fairness(jobs, cl, tuning=WHOLE_LP)
    assert columns.SAMPLED_PRICES in r.stats.path and ROUND not in r.stats.path
    assert (f"{columns.RESTRICTED_LP}->exact-lp: the sampled LP gave no capacity prices"
            in r.stats.fallbacks)
    assert r.certificate.ok and r.objective == pytest.approx(ref.objective, rel=1e-9)


def test_too_few_jobs_to_sample_keep_the_whole_lp():
    jobs, cl = _instance(120, 20, seed=5)
    r = fa.max_min_fairness(jobs, cl, tuning=tuned(PRICED_EVERYWHERE, sample_jobs=100))
    assert columns.SAMPLED_PRICES not in r.stats.path
    assert ROUND not in r.stats.path and r.certificate.ok


def test_priced_path_applies_between_the_gate_and_the_unpriced_path():
    t = Tuning()
    lo, hi, cols = t.priced_min_types, t.priced_max_types, t.columns_min_columns
    assert columns.applies(lo, cols, True, t, priced=True)
    assert not columns.applies(lo - 1, 10**6, True, t, priced=True)
    assert columns.applies(hi, 10**6, True, t, priced=True)
    assert not columns.applies(hi + 1, 10**6, True, t, priced=True)
    assert not columns.applies(30, cols - 1, True, t, priced=True)
    assert not columns.applies(30, 10**6, False, t, priced=True)


def test_first_columns_by_price_by_hand():
    job = np.array([0, 0, 0, 1, 1, 1])
    coef = np.array([4.0, 3.0, 1.0, 1.0, 6.0, 2.0])
    workers = np.ones(6)
    # prices 1, 4, 0.1 per type: coef / price = 4, 0.75, 10 | 1, 1.5, 20
    price = np.tile([1.0, 4.0, 0.1], 2)
    first = columns.first_columns(job, coef, workers, None, per_job=1, price=price)
    assert first.tolist() == [False, False, True, False, False, True]
    # a zero price (free capacity) ranks first
    price0 = np.tile([1.0, 0.0, 0.1], 2)
    first0 = columns.first_columns(job, coef, workers, None, per_job=1, price=price0)
    assert first0.tolist() == [False, True, False, False, True, False]


def test_sampled_program_keeps_the_sampled_jobs_rows_and_scales_capacity():
    S = Tuning().sample_jobs
    n, k = 2 * S, 2
    rng = np.random.default_rng(0)
    E = n * k
    job = np.repeat(np.arange(n), k)
    typ = np.tile(np.arange(k), n)
    a = rng.uniform(1.0, 2.0, E)
    time_rows = sp.csr_matrix((np.ones(E), (job, np.arange(E))), shape=(n, E + 1))
    cap_rows = sp.csr_matrix((np.ones(E), (typ, np.arange(E))), shape=(k, E + 1))
    level = sp.csr_matrix((np.r_[a, -np.ones(n)], (np.r_[job, np.arange(n)],
                                                    np.r_[np.arange(E), np.full(n, E)])),
                          shape=(n, E + 1))
    A = sp.vstack([time_rows, cap_rows, level]).tocsr()
    lp = LinearProgram.build(np.r_[np.zeros(E), -1.0], A,
                             np.r_[np.full(n + k, -np.inf), np.zeros(n)],
                             np.r_[np.ones(n), [300.0, 500.0], np.full(n, np.inf)], 0.0, np.inf)
    out = columns.sampled_program(lp, job, n, k, S)
    assert out is not None
    sub, caps = out
    assert sub.shape == (2 * S + k, S * k + 1)
    np.testing.assert_allclose(sub.row_upper[caps], [150.0, 250.0])
    # every kept column belongs to a kept job: each time row has k entries, each level row
    # k entries and theta
    A_sub = sub.A.tocsr()
    assert (np.diff(A_sub.indptr)[:S] == k).all() and (np.diff(A_sub.indptr)[S + k:] == k + 1).all()
    assert columns.sampled_program(lp, job, n - 1, k, S) is None  # rows do not match


def test_basis_with_columns_warm_starts_the_extended_lp():
    rng = np.random.default_rng(1)
    A = rng.uniform(0.5, 2.0, (6, 12))
    b = np.full(6, 10.0)
    c = -rng.uniform(1.0, 2.0, 12)
    be = HighsBackend(solver="simplex")
    old = np.zeros(12, dtype=bool)
    old[:6] = True
    first = be.solve_lp(LinearProgram.build(c[old], A[:, old], -np.inf, b, 0.0, np.inf),
                        keep_basis=True)
    basis = first.extra["basis"]
    new = np.ones(12, dtype=bool)
    ext = basis.with_columns(old, new)
    lp = LinearProgram.build(c, A, -np.inf, b, 0.0, np.inf)
    warm = be.solve_lp(lp, basis=ext, keep_basis=True)
    cold = be.solve_lp(lp)
    assert warm.extra["warm"] and warm.objective == pytest.approx(cold.objective, rel=1e-12)
    assert warm.objective <= first.objective + 1e-12  # more columns: no worse


@settings(max_examples=10, deadline=None)
@given(n=st.integers(20, 60), k=st.integers(4, 12), seed=st.integers(0, 10**6),
       gangs=st.booleans(), unit=st.sampled_from([1e-6, 1.0, 1e6]))
def test_priced_and_whole_agree_on_random_instances(n, k, seed, gangs, unit):
    jobs, cl = _instance(n, k, seed, gangs)
    jobs = fa.Jobs(np.asarray(jobs.throughput) * unit, scale_factor=jobs.scale_factor,
                   steps_remaining=np.asarray(jobs.steps_remaining) * unit)
    r = fa.max_min_fairness(jobs, cl, work_conserving=True, tuning=PRICED_EVERYWHERE)
    ref = fa.max_min_fairness(jobs, cl, work_conserving=True, tuning=WHOLE_LP)
    assert r.certificate.ok and all(c.ok for c in r.stage_certificates)
    # both certified: they agree to the certificates' accuracy
    assert r.objective == pytest.approx(ref.objective, rel=2 * r.certificate.gap_tol,
                                        abs=1e-12)


def test_loose_simplex_duals_get_one_interior_point_retry():
    # every column in the first restricted LP (so it is optimal for the whole LP), but the
    # warm-startable solve returns duals perturbed by 0.1 %: no column prices out, the bound
    # is loose, and one cold solve of the same restricted LP certifies
    jobs, cl = _instance(120, 20, seed=5)
    r = fa.max_min_fairness(jobs, cl, backend=SpyHighs(dual_scale=1.001),
                            tuning=tuned(PRICED_EVERYWHERE, columns_first_per_job=10**6,
                                         columns_max_share=1.0))
    ref = fa.max_min_fairness(jobs, cl, tuning=WHOLE_LP)
    assert r.stats.count(ROUND) == 2  # the warm-startable round, then the cold retry
    assert not any(f.startswith(columns.RESTRICTED_LP + "->") for f in r.stats.fallbacks)
    assert r.certificate.ok
    assert r.objective == pytest.approx(ref.objective, rel=2 * r.certificate.gap_tol)


def test_a_retry_that_does_not_certify_hands_over():
    # one first column per job (not optimal) and no column ever added: the warm-startable
    # round, one cold retry, then the whole LP
    jobs, cl = _instance(120, 20, seed=5)
    r = fa.max_min_fairness(jobs, cl, tuning=tuned(PRICED_EVERYWHERE, columns_first_per_job=1,
                                                   columns_add_per_job=0))
    assert r.stats.count(ROUND) == 2
    assert any(f.startswith(f"{columns.RESTRICTED_LP}->exact-lp: no improving column left")
               for f in r.stats.fallbacks)
    assert r.stats.path[-1].startswith("exact-lp") and r.certificate.ok
