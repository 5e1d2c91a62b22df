"""Restricted columns chosen by capacity prices from a sampled LP, with warm-started rounds
(`fairalloc.throughput.columns.sampled_program`, `columns.solve_restricted`, issue #15):
the same certified optimum as the whole LP, the warm rounds, the hand-overs, and the
choices by hand."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.backends import LinearProgram
from fairalloc.backends.highs import HighsBackend
from fairalloc.errors import SolverError
from fairalloc.throughput import columns, stages
from tests.columns_helpers import priced_everywhere, priced_instance, whole_lp

_instance = priced_instance
_priced_everywhere = priced_everywhere


@pytest.fixture
def priced(monkeypatch: pytest.MonkeyPatch) -> None:
    _priced_everywhere(monkeypatch)


_whole = whole_lp


def test_later_rounds_start_from_the_last_rounds_basis(priced, monkeypatch):
    # one first column per job: the loop must add columns, and each later round is HiGHS'
    # simplex from the extended basis of the round before
    monkeypatch.setattr(columns, "FIRST_PER_JOB", 1)
    seen: list[bool] = []
    real = HighsBackend.solve_warm

    def spy(self, lp, basis=None, **kw):  # type: ignore[no-untyped-def]
        sol = real(self, lp, basis, **kw)
        seen.append(bool(sol.extra.get("warm")))
        return sol

    monkeypatch.setattr(HighsBackend, "solve_warm", spy)
    jobs, cl = _instance(120, 20, seed=5)
    r = fa.max_min_fairness(jobs, cl)
    rounds = r.stats.path.count(columns.RESTRICTED_LP)
    assert rounds >= 2 and r.certificate.ok
    assert seen[:rounds] == [False] + [True] * (rounds - 1)


def test_a_failed_sampled_lp_keeps_the_whole_lp(priced, monkeypatch):
    real = stages.scaled_solve

    def failing(lp, backend, what, **kw):  # type: ignore[no-untyped-def]
        if what == "the sampled LP":
            raise SolverError("sampled LP failed", backend="highs", status="Unknown")
        return real(lp, backend, what, **kw)

    monkeypatch.setattr(stages, "scaled_solve", failing)
    jobs, cl = _instance(120, 20, seed=5)
    r = fa.max_min_fairness(jobs, cl)
    ref = _whole(monkeypatch, lambda: fa.max_min_fairness(jobs, cl))
    assert columns.SAMPLED_PRICES in r.stats.path
    assert columns.RESTRICTED_LP not in r.stats.path
    assert r.certificate.ok and r.objective == pytest.approx(ref.objective, rel=1e-9)


def test_too_few_jobs_to_sample_keep_the_whole_lp(priced, monkeypatch):
    monkeypatch.setattr(columns, "SAMPLE_JOBS", 100)  # needs 200 jobs
    jobs, cl = _instance(120, 20, seed=5)
    r = fa.max_min_fairness(jobs, cl)
    assert columns.SAMPLED_PRICES not in r.stats.path
    assert columns.RESTRICTED_LP not in r.stats.path and r.certificate.ok


def test_priced_path_applies_between_the_gate_and_the_unpriced_path():
    assert columns.applies(columns.PRICED_MIN_TYPES, columns.MIN_COLUMNS, True, priced=True)
    assert not columns.applies(columns.PRICED_MIN_TYPES - 1, 10**6, True, priced=True)
    assert columns.applies(columns.PRICED_MAX_TYPES, 10**6, True, priced=True)
    assert not columns.applies(columns.PRICED_MAX_TYPES + 1, 10**6, True, priced=True)
    assert not columns.applies(30, columns.MIN_COLUMNS - 1, True, priced=True)
    assert not columns.applies(30, 10**6, False, priced=True)


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
    n, k = 2 * columns.SAMPLE_JOBS, 2
    rng = np.random.default_rng(0)
    E = n * k
    job = np.repeat(np.arange(n), k)
    typ = np.tile(np.arange(k), n)
    a = rng.uniform(1.0, 2.0, E)
    import scipy.sparse as sp
    time_rows = sp.csr_matrix((np.ones(E), (job, np.arange(E))), shape=(n, E + 1))
    cap_rows = sp.csr_matrix((np.ones(E), (typ, np.arange(E))), shape=(k, E + 1))
    level = sp.csr_matrix((np.r_[a, -np.ones(n)], (np.r_[job, np.arange(n)],
                                                    np.r_[np.arange(E), np.full(n, E)])),
                          shape=(n, E + 1))
    A = sp.vstack([time_rows, cap_rows, level]).tocsr()
    lp = LinearProgram.build(np.r_[np.zeros(E), -1.0], A,
                             np.r_[np.full(n + k, -np.inf), np.zeros(n)],
                             np.r_[np.ones(n), [300.0, 500.0], np.full(n, np.inf)], 0.0, np.inf)
    out = columns.sampled_program(lp, job, n, k)
    assert out is not None
    sub, caps = out
    S = columns.SAMPLE_JOBS
    assert sub.shape == (2 * S + k, S * k + 1)
    np.testing.assert_allclose(sub.row_upper[caps], [150.0, 250.0])
    # every kept column belongs to a kept job: each time row has k entries, each level row
    # k entries and theta
    A_sub = sub.A.tocsr()
    assert (np.diff(A_sub.indptr)[:S] == k).all() and (np.diff(A_sub.indptr)[S + k:] == k + 1).all()
    assert columns.sampled_program(lp, job, n - 1, k) is None  # rows do not match


def test_basis_with_columns_warm_starts_the_extended_lp():
    rng = np.random.default_rng(1)
    A = rng.uniform(0.5, 2.0, (6, 12))
    b = np.full(6, 10.0)
    c = -rng.uniform(1.0, 2.0, 12)
    be = HighsBackend(solver="simplex")
    old = np.zeros(12, dtype=bool)
    old[:6] = True
    first = be.solve_warm(LinearProgram.build(c[old], A[:, old], -np.inf, b, 0.0, np.inf))
    basis = first.extra["basis"]
    new = np.ones(12, dtype=bool)
    ext = basis.with_columns(old, new)
    lp = LinearProgram.build(c, A, -np.inf, b, 0.0, np.inf)
    warm = be.solve_warm(lp, ext)
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
    with pytest.MonkeyPatch.context() as m:
        _priced_everywhere(m)
        r = fa.max_min_fairness(jobs, cl, work_conserving=True)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(columns, "PRICED_MIN_TYPES", 10**9)
        ref = fa.max_min_fairness(jobs, cl, work_conserving=True)
    assert r.certificate.ok and all(c.ok for c in r.stage_certificates)
    assert r.objective == pytest.approx(ref.objective, rel=1e-7, abs=1e-12)


def test_loose_simplex_duals_get_one_interior_point_retry(priced, monkeypatch):
    # every column in the first restricted LP (so it is optimal for the whole LP), but the
    # warm-startable solve returns duals perturbed by 0.1 %: no column prices out, the bound
    # is loose, and one cold solve of the same restricted LP by the interior point certifies
    monkeypatch.setattr(columns, "FIRST_PER_JOB", 10**6)
    monkeypatch.setattr(columns, "MAX_SHARE", 1.0)
    real = HighsBackend.solve_warm

    def loose(self, lp, basis=None, **kw):  # type: ignore[no-untyped-def]
        sol = real(self, lp, basis, **kw)
        return dataclasses.replace(sol, row_duals=sol.row_duals * 1.001)

    monkeypatch.setattr(HighsBackend, "solve_warm", loose)
    jobs, cl = _instance(120, 20, seed=5)
    r = fa.max_min_fairness(jobs, cl)
    ref = _whole(monkeypatch, lambda: fa.max_min_fairness(jobs, cl))
    assert r.stats.path.count(columns.RESTRICTED_LP) == 2  # warm, then the cold retry
    assert not any(columns.RESTRICTED_LP in f for f in r.stats.fallbacks)
    assert r.certificate.ok and r.objective == pytest.approx(ref.objective, rel=1e-7)


def test_a_retry_that_does_not_certify_hands_over(priced, monkeypatch):
    # one first column per job (not optimal) and no column ever added: the warm round, one
    # cold retry, then the whole LP
    monkeypatch.setattr(columns, "FIRST_PER_JOB", 1)
    monkeypatch.setattr(columns, "priced_columns",
                        lambda job, rc, active, tol, per_job=None: np.zeros_like(active))
    jobs, cl = _instance(120, 20, seed=5)
    r = fa.max_min_fairness(jobs, cl)
    assert r.stats.path.count(columns.RESTRICTED_LP) == 2
    assert any(f.startswith(f"{columns.RESTRICTED_LP}->exact-lp: no improving column left")
               for f in r.stats.fallbacks)
    assert r.stats.path[-1] == "exact-lp" and r.certificate.ok
