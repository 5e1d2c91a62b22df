"""The warm max-min round's non-solve work (#28, `fairalloc.rounds.incremental`): the exact
classes found once per round (before anything per job), every quantity computed once per class,
and the reduced program (drained types, unrunnable jobs) classified on its own data.

The classes must be exactly `fairalloc._symmetry.exact_classes`'s; a warm round must agree with
the normal round on the same input (`fairalloc.solve_round` with ``method="highs"``: no kept
model, no classes) within the certificates' own bounds, whatever the scheduler did to its dicts
between rounds (fresh or mutated in place, reordered, a kept job's rates changed, a drained
node, a gang that fits nowhere); a bad value in a kept job's row is the cold round's very
`fairalloc.InputError`.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc._symmetry import exact_classes
from fairalloc.errors import InputError
from fairalloc.rounds.incremental import _classes
from fairalloc.tolerances import GAP_TOL

TYPES = ("v100", "p100", "k80")


@st.composite
def job_rows(draw):
    """Rows (T, s, w) with many duplicates, signed zeros, near-ties and huge values."""
    n = draw(st.integers(0, 40))
    k = draw(st.sampled_from([1, 2, 3, 9]))  # (9 types: wide rows)
    pool = [0.0, -0.0, 1.0, 1.0 + 2.0**-52, 2.5, 3.0, 1e300, 7.0]
    idx = draw(st.lists(st.integers(0, len(pool) - 1), min_size=n * k, max_size=n * k))
    T = np.array([pool[i] for i in idx], dtype=float).reshape(n, k)
    s = np.array(draw(st.lists(st.sampled_from([1.0, 2.0]), min_size=n, max_size=n)))
    w = np.array(draw(st.lists(st.sampled_from([1.0, 5.0, 1e300]), min_size=n, max_size=n)))
    return T.reshape(n, k), s.reshape(n), w.reshape(n)


@settings(max_examples=60, deadline=None)
@given(job_rows())
def test_property_classes_are_exact_classes(rows):
    T, s, w = rows
    data = np.column_stack([T, s, w]) + 0.0
    got = _classes(T, s, w)
    want = exact_classes(data)
    np.testing.assert_array_equal(got.inv, want.inverse)
    np.testing.assert_array_equal(got.rep, want.representative)
    np.testing.assert_array_equal(got.counts, want.counts)
    assert got.keys == [data[r].tobytes() for r in want.representative.tolist()]
    assert len(set(got.keys)) == len(got.keys)  # (one key per class: it names the slot)


@st.composite
def traces(draw):
    """5 rounds of 4-24 jobs from a few templates; between rounds jobs leave and arrive, the
    dicts are fresh, reordered or mutated in place, a kept job's rates change, a node drains
    or comes back, and a gang may fit on no type."""
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    n = draw(st.integers(4, 24))
    templates = [{t: float(rng.integers(1, 60)) for t in TYPES if rng.random() < 0.85} or
                 {"v100": 4.0} for _ in range(draw(st.integers(1, 5)))]
    events = draw(st.lists(st.sampled_from(["fresh", "reorder", "mutate", "rates", "drain",
                                            "big-gang"]), min_size=4, max_size=4))
    return rng, n, templates, events


def _agree(warm, cold):
    """Both certified; the level within both certificates' gaps (each certified level is within
    its gap of the optimum, up to the library's GAP_TOL)."""
    assert warm.certificate.ok and cold.certificate.ok
    assert warm.drained_types == cold.drained_types
    assert warm.unrunnable_jobs == cold.unrunnable_jobs
    slack = warm.certificate.gap + cold.certificate.gap + GAP_TOL * max(1.0, abs(cold.objective))
    assert abs(warm.objective - cold.objective) <= slack
    gone = [warm.job_ids.index(j) for j in warm.unrunnable_jobs]
    assert not warm.x[gone].any()
    dead = [warm.types.index(t) for t in warm.drained_types]
    assert not warm.x[:, dead].any()


@settings(max_examples=12, deadline=None)
@given(traces())
def test_property_warm_rounds_agree_with_the_normal_round(trace):
    rng, n, templates, events = trace
    p = fa.RoundPolicy("max_min_fairness")
    jobs = {i: dict(templates[int(rng.integers(len(templates)))]) for i in range(n)}
    sf = {i: int(rng.choice([1, 1, 2])) for i in range(n)}
    w = {i: float(rng.choice([1.0, 1.0, 3.0])) for i in range(n)}
    cap = {"v100": 4, "p100": 4, "k80": 4}
    nxt = n
    methods = []
    for r in range(5):
        if r:
            event = events[r - 1]
            for j in list(jobs)[:: max(2, n // 3)][:2]:  # two jobs leave, two arrive
                del jobs[j], sf[j], w[j]
            for _ in range(2):
                jobs[nxt] = dict(templates[int(rng.integers(len(templates)))])
                sf[nxt], w[nxt] = 1, 1.0
                nxt += 1
            if event == "fresh":
                jobs = {j: dict(row) for j, row in jobs.items()}
            elif event == "reorder":
                order = rng.permutation(list(jobs)).tolist()
                jobs = {j: jobs[j] for j in order}
            elif event == "mutate":  # the same inner dict, changed in place
                row = next(iter(jobs.values()))
                row["v100"] = row.get("v100", 1.0) + 7.0
            elif event == "rates":
                j = list(jobs)[len(jobs) // 2]
                jobs[j] = {t: v * 1.5 for t, v in jobs[j].items()}
            elif event == "drain":
                cap = dict(cap, p100=0 if cap["p100"] else 4)
            else:  # a gang no type can host
                sf[next(iter(jobs))] = 8
        warm = p.allocate(jobs, cap, scale_factor=sf, weight=w)
        cold = fa.solve_round("max_min_fairness", jobs, cap, scale_factor=sf, weight=w,
                              method="highs")
        _agree(warm, cold)
        methods.append(warm.stats.method)
    assert "incremental+warm" in methods  # (the kept model answered rounds)


@pytest.mark.parametrize("bad", [True, 1 + 0j, -1.0, float("nan"), np.array([4.0]), "4"])
def test_bad_value_in_a_kept_jobs_row_is_the_cold_rounds_error(bad):
    jobs = {"a": {"v100": 4.0, "k80": 1.0}, "b": {"v100": 2.0}, "c": {"k80": 3.0}}
    p = fa.RoundPolicy("max_min_fairness")
    p.allocate(jobs, {"v100": 2, "k80": 1})
    jobs["b"]["v100"] = bad  # a kept job's row changed in place
    with pytest.raises(InputError) as cold:
        fa.solve_round("max_min_fairness", jobs, {"v100": 2, "k80": 1})
    with pytest.raises(InputError) as warm:
        p.allocate(jobs, {"v100": 2, "k80": 1})
    assert (str(warm.value), warm.value.argument, warm.value.index) == (
        str(cold.value), cold.value.argument, cold.value.index)
    assert "throughput['b']['v100']" in str(warm.value)


def test_jobs_that_differ_on_a_drained_type_only_are_one_class():
    # a and b differ on the drained p100 only: one class of the reduced program; c its own
    jobs = {"a": {"v100": 2.0, "p100": 1.0}, "b": {"v100": 2.0, "p100": 5.0},
            "c": {"v100": 3.0}, "d": {"p100": 9.0}}
    p = fa.RoundPolicy("max_min_fairness")
    r = p.allocate(jobs, {"v100": 2, "p100": 0})
    assert r.stats.classes == 2 and r.drained_types == ("p100",)
    assert r.unrunnable_jobs == ("d",)  # (it runs on p100 only)
    assert r.certificate.ok
    np.testing.assert_allclose(r.x[:2, 0], r.x[0, 0])  # a and b: one class, one share


def test_a_freed_slot_taken_by_a_class_of_another_or_the_same_gang_size():
    # a leaves (gang 2), b takes its slot (gang 1: the capacity coefficients change), b leaves,
    # c takes it (gang 1: they stay); each warm round agrees with the normal round
    cap = {"v100": 4, "k80": 2}
    rounds = [({"a": {"v100": 9.0, "k80": 2.0}, "x": {"v100": 1.0, "k80": 1.0}},
               {"a": 2, "x": 1}),
              ({"b": {"v100": 3.0, "k80": 6.0}, "x": {"v100": 1.0, "k80": 1.0}},
               {"b": 1, "x": 1}),
              ({"c": {"v100": 5.0, "k80": 0.5}, "x": {"v100": 1.0, "k80": 1.0}},
               {"c": 1, "x": 1}),
              ({"d": {"v100": 2.0, "k80": 7.0}, "x": {"v100": 1.0, "k80": 1.0}},
               {"d": 2, "x": 1})]
    p = fa.RoundPolicy("max_min_fairness")
    for i, (jobs, sf) in enumerate(rounds):
        warm = p.allocate(jobs, cap, scale_factor=sf)
        cold = fa.solve_round("max_min_fairness", jobs, cap, scale_factor=sf, method="highs")
        _agree(warm, cold)
        assert warm.stats.method == ("incremental+warm" if i else "incremental")
        used = (np.array([sf[j] for j in jobs])[:, None] * warm.x).sum(axis=0)
        assert np.all(used <= np.array([4.0, 2.0]) * (1 + warm.certificate.feas_tol))
