"""Restricted columns (column generation) for stage LPs on many types
(`fairalloc.throughput.columns`, issue #15): the same certified optimum as the whole LP, the
hand-overs, and the column choices by hand."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.throughput import Tuning, columns
from tests.columns_helpers import (
    PRICED_EVERYWHERE,
    RESTRICTED_EVERYWHERE,
    WHOLE_LP,
    many_type_instance,
    priced_instance,
    tuned,
)


def _instance(n: int, k: int, seed: int, gangs: bool = True) -> tuple[fa.Jobs, fa.Cluster]:
    """Few workers per type (capacity binds)."""
    return many_type_instance(n, k, seed, gangs)


ROUND = columns.RESTRICTED_ROUND


@pytest.mark.parametrize("priced", [False, True])
@pytest.mark.parametrize("policy", ["max_min_fairness", "finish_time_fairness"])
@pytest.mark.parametrize("wc", [False, True])
def test_restricted_columns_reach_the_whole_lps_optimum(priced, policy, wc):
    # unpriced: every instance, method="highs"; priced (17-48 types in production): first
    # columns by sampled capacity prices, warm rounds (fairalloc chooses HiGHS)
    if priced:
        tuning = PRICED_EVERYWHERE
        jobs, cl = priced_instance(120, 20, seed=5)
        kw: dict[str, str] = {}
    else:
        tuning = RESTRICTED_EVERYWHERE
        jobs, cl = _instance(80, 12, seed=3)
        kw = {"method": "highs"}
    f = getattr(fa, policy)
    # (finish-time fairness: its Dinkelbach stages, whose level LPs the restricted columns
    # solve; the closed-form optimum goes to the work-conserving stage directly)
    tuning = dataclasses.replace(tuning, ftf_closed_form=False)
    r = f(jobs, cl, work_conserving=wc, tuning=tuning, **kw)
    ref = f(jobs, cl, work_conserving=wc, tuning=WHOLE_LP, **kw)
    assert ROUND in r.stats.path or ROUND + "+warm" in r.stats.path
    assert (columns.SAMPLED_PRICES in r.stats.path) == priced
    assert columns.RESTRICTED_LP not in ref.stats.path
    assert r.certificate.ok and all(c.ok for c in r.stage_certificates)
    assert r.objective == pytest.approx(ref.objective, rel=1e-7)
    # certified on the whole program: x has every column, the unused ones at 0
    assert r.x.shape == np.asarray(jobs.throughput).shape
    if wc:
        assert r.effective_throughput.sum() == pytest.approx(
            ref.effective_throughput.sum(), rel=1e-6)


def test_the_first_restricted_lp_is_not_optimal_here():
    # per job its single best column: capacity binds, so the loop must add columns (a test
    # that passed with the first restricted LP alone would not exercise the pricing)
    jobs, cl = _instance(80, 12, seed=3)
    r = fa.max_min_fairness(jobs, cl, method="highs",
                            tuning=tuned(RESTRICTED_EVERYWHERE, columns_first_per_job=1))
    assert r.stats.count(ROUND) >= 2
    assert r.certificate.ok
    assert not r.stats.fallbacks or all(columns.RESTRICTED_LP not in f
                                        for f in r.stats.fallbacks)


def test_a_loop_that_does_not_certify_hands_over_to_the_whole_lp():
    jobs, cl = _instance(80, 12, seed=3)
    r = fa.max_min_fairness(jobs, cl, method="highs",
                            tuning=tuned(RESTRICTED_EVERYWHERE, columns_first_per_job=1,
                                         columns_max_rounds=1))
    ref = fa.max_min_fairness(jobs, cl, method="highs", tuning=WHOLE_LP)
    assert any(f.startswith(f"{columns.RESTRICTED_LP}->exact-lp: not certified within 1")
               for f in r.stats.fallbacks)
    assert r.stats.path[-1].startswith("exact-lp")
    assert r.certificate.ok
    assert r.objective == pytest.approx(ref.objective, rel=2 * r.certificate.gap_tol)


def test_a_restricted_set_beyond_the_share_cap_hands_over():
    jobs, cl = _instance(40, 6, seed=1)
    r = fa.max_min_fairness(jobs, cl, method="highs",
                            tuning=tuned(RESTRICTED_EVERYWHERE, columns_max_share=0.0))
    assert any("more than 0% of the columns" in f for f in r.stats.fallbacks)
    assert ROUND not in r.stats.path and r.certificate.ok


def test_pairs_and_few_types_keep_the_whole_lp():
    t = Tuning()
    assert not columns.applies(100, 10**6, False, t)  # job pairs / placement columns
    assert not columns.applies(t.columns_min_types - 1, 10**6, True, t)
    assert not columns.applies(100, t.columns_min_columns - 1, True, t)
    assert columns.applies(t.columns_min_types, t.columns_min_columns, True, t)


@settings(max_examples=15, deadline=None)
@given(n=st.integers(2, 40), k=st.integers(2, 9), seed=st.integers(0, 10**6),
       gangs=st.booleans())
def test_restricted_and_whole_agree_on_random_instances(n, k, seed, gangs):
    jobs, cl = _instance(n, k, seed, gangs)
    r = fa.max_min_fairness(jobs, cl, method="highs", work_conserving=True,
                            tuning=RESTRICTED_EVERYWHERE)
    ref = fa.max_min_fairness(jobs, cl, method="highs", work_conserving=True)
    assert r.certificate.ok and all(c.ok for c in r.stage_certificates)
    assert r.objective == pytest.approx(ref.objective, rel=2 * r.certificate.gap_tol, abs=1e-12)


def test_column_choices_by_hand():
    job = np.array([0, 0, 0, 1, 1, 1])
    coef = np.array([4.0, 3.0, 1.0, 1.0, 6.0, 2.0])
    workers = np.array([4.0, 1.0, 1.0, 1.0, 2.0, 1.0])  # per worker: 1, 3, 1 | 1, 3, 2
    first = columns.first_columns(job, coef, workers, None, per_job=2)
    # job 0: 3 then a tie of 1 and 1 (the lower index); job 1: 3 then 2
    assert first.tolist() == [True, True, False, False, True, True]
    anchored = columns.first_columns(job, coef, workers, np.array([0, 0, 0.5, 0, 0, 0]),
                                     per_job=1)
    assert anchored.tolist() == [False, True, True, False, True, False]
    rc = np.array([-1.0, -5.0, -2.0, 1e-13, -3.0, -1e-14])
    add = columns.priced_columns(job, rc, first, 1e-12, per_job=1)
    # job 0's outside column 2 (-2); job 1 has none below -1e-12 outside its set
    assert add.tolist() == [False, False, True, False, False, False]


@pytest.mark.parametrize("unit", [1e-9, 1e9])
def test_restricted_columns_are_unit_free(unit):
    # throughputs and steps in other units: the same classes of columns, the same optima,
    # certified (the pricing threshold is relative to the duals' own scale)
    jobs, cl = _instance(80, 12, seed=3)
    scaled = fa.Jobs(np.asarray(jobs.throughput) * unit, scale_factor=jobs.scale_factor,
                     steps_remaining=np.asarray(jobs.steps_remaining) * unit)
    for f in (fa.max_min_fairness, fa.finish_time_fairness):
        r = f(scaled, cl, work_conserving=True, method="highs", tuning=RESTRICTED_EVERYWHERE)
        ref = f(jobs, cl, work_conserving=True, method="highs", tuning=RESTRICTED_EVERYWHERE)
        assert ROUND in r.stats.path
        assert r.certificate.ok and all(c.ok for c in r.stage_certificates)
        assert r.objective == pytest.approx(ref.objective, rel=1e-9)
