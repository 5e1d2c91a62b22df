"""Issue #29 item 2: `RoundPolicy("finish_time_fairness")` carries each job's isolated time
across rounds (arrivals, departures, throughputs that change), as Gavel and the Gavel
adapter's policy object do."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.integrations import gavel

#: the library's documented default duality-gap tolerance (relative): the certificates' bound
GAP = 1e-6
SPEC = {"v100": 4, "p100": 3, "k80": 5}


def _iso_tp(tp: dict, sf: dict, spec: dict) -> dict:
    """Gavel's isolated throughput (``c_j / max(n s, sum c)`` of every type), by hand."""
    c = sum(spec.values())
    return {j: sum(tp[j].get(t, 0.0) * spec[t] / max(len(tp) * sf[j], c) for t in spec)
            for j in tp}


def _rounds():
    """Four rounds: job 3 arrives in round 2, job 0 leaves in round 3, job 1's throughputs
    double in round 3; every job progresses; every gang fits every type."""
    tp = {0: {"v100": 10.0, "p100": 6.0, "k80": 2.0}, 1: {"v100": 4.0, "p100": 3.0, "k80": 2.0},
          2: {"v100": 20.0, "p100": 8.0, "k80": 1.0}}
    sf = {0: 1, 1: 2, 2: 1}
    steps = {0: 4e4, 1: 2e4, 2: 8e4}
    t = {0: 0.0, 1: 0.0, 2: 0.0}
    yield dict(tp), dict(sf), dict(steps), dict(t)
    steps = {0: 3.5e4, 1: 1.8e4, 2: 7.0e4, 3: 5e4}
    t = {0: 360.0, 1: 360.0, 2: 360.0, 3: 0.0}
    tp[3] = {"v100": 7.0, "p100": 5.0, "k80": 3.0}
    sf[3] = 1
    yield dict(tp), dict(sf), dict(steps), dict(t)
    del tp[0], sf[0], steps[0], t[0]
    tp[1] = {k: 2 * v for k, v in tp[1].items()}
    steps = {1: 1.5e4, 2: 6.1e4, 3: 4.6e4}
    t = {j: v + 360.0 for j, v in t.items()}
    yield dict(tp), dict(sf), dict(steps), dict(t)
    steps = {1: 1.0e4, 2: 5.5e4, 3: 4.0e4}
    t = {j: v + 360.0 for j, v in t.items()}
    yield dict(tp), dict(sf), dict(steps), dict(t)


def test_round_policy_ftf_matches_the_gavel_adapter_round_by_round():
    """Same state and same optimum as the adapter in every round (on main RoundPolicy took
    each job's elapsed time as its isolated time, and the optima differed from round 2 on)."""
    rp = fa.RoundPolicy("finish_time_fairness")
    ad = gavel.policy("finish_time_fairness_perf")
    for tp, sf, steps, t in _rounds():
        r = rp.allocate(tp, SPEC, scale_factor=sf, steps_remaining=steps, elapsed=t)
        ad.get_allocation(tp, sf, {j: 1.0 for j in tp}, t, steps, SPEC)
        assert r.certificate.ok
        assert r.objective == pytest.approx(ad.last_result.objective, rel=GAP)
        assert rp.isolated_elapsed == pytest.approx(
            {j: ad.cumulative_isolated_time[j] for j in tp}, rel=1e-12)


def test_isolated_time_is_charged_at_each_rounds_own_isolated_rate():
    rp = fa.RoundPolicy("finish_time_fairness", isolated_start="zero")
    want: dict = {}
    prev = None
    for tp, sf, steps, t in _rounds():
        if prev is not None:
            ptp, psf, psteps = prev
            iso = _iso_tp(ptp, psf, SPEC)   # the previous round's jobs and throughputs
            want = {j: want.get(j, 0.0) + (psteps[j] - steps[j]) / iso[j] if j in psteps
                    else 0.0 for j in tp}
        else:
            want = {j: 0.0 for j in tp}
        rp.allocate(tp, SPEC, scale_factor=sf, steps_remaining=steps, elapsed=t)
        assert rp.isolated_elapsed == pytest.approx(want, rel=1e-12)
        prev = (tp, sf, steps)
    assert 0 not in rp.isolated_elapsed          # the job that left is forgotten


def test_first_sight_given_values_empty_round_and_reset():
    tp = {"a": {"g": 2.0}, "b": {"g": 4.0}}
    rp = fa.RoundPolicy("finish_time_fairness")
    rp.allocate(tp, {"g": 2}, steps_remaining={"a": 100.0, "b": 80.0},
                elapsed={"a": 50.0, "b": 0.0})
    assert rp.isolated_elapsed == {"a": 50.0, "b": 0.0}   # default start: elapsed
    # isolated split: one worker each, throughputs 2 and 4; 40 steps each
    rp.allocate(tp, {"g": 2}, steps_remaining={"a": 60.0, "b": 40.0},
                elapsed={"a": 70.0, "b": 20.0})
    assert rp.isolated_elapsed == pytest.approx({"a": 70.0, "b": 10.0})
    # a caller's isolated_elapsed wins, and the state continues from it
    r = rp.allocate(tp, {"g": 2}, steps_remaining={"a": 40.0, "b": 40.0},
                    elapsed={"a": 80.0, "b": 30.0}, isolated_elapsed={"a": 1.0, "b": 2.0})
    ref = fa.finish_time_fairness(fa.Jobs([[2.0], [4.0]], steps_remaining=[40.0, 40.0],
                                          elapsed=[80.0, 30.0], isolated_elapsed=[1.0, 2.0]),
                                  fa.Cluster({"g": 2}))
    assert r.objective == pytest.approx(ref.objective, rel=GAP)
    assert rp.isolated_elapsed == {"a": 1.0, "b": 2.0}
    rp.reset()                                   # reset forgets warm starts, not the state
    rp.allocate(tp, {"g": 2}, steps_remaining={"a": 20.0, "b": 40.0},
                elapsed={"a": 90.0, "b": 40.0})
    assert rp.isolated_elapsed == pytest.approx({"a": 11.0, "b": 2.0})
    assert rp.allocate({}, {"g": 2}).stats.method == "empty"   # forgets the steps
    rp.allocate(tp, {"g": 2}, steps_remaining={"a": 10.0, "b": 10.0},
                elapsed={"a": 99.0, "b": 49.0})
    assert rp.isolated_elapsed == pytest.approx({"a": 11.0, "b": 2.0})


def test_isolated_start_is_validated():
    with pytest.raises(fa.InputError) as exc:
        fa.RoundPolicy("finish_time_fairness", isolated_start="first")
    assert exc.value.argument == "isolated_start"


@settings(max_examples=15)
@given(st.integers(1, 5), st.integers(1, 3), st.data())
def test_property_round_policy_state_equals_the_adapters(n, k, data):
    """Random Gavel-shaped rounds with progress, one arrival and one departure per round:
    RoundPolicy (Gavel's start at 0) and the adapter carry the same state and optimum."""
    types = ["k80", "p100", "v100"][:k]
    spec = {t: data.draw(st.integers(2, 5)) for t in types}
    rate = st.floats(0.5, 20.0)
    tp = {i: {t: data.draw(rate) for t in types} for i in range(n)}
    sf = {i: data.draw(st.sampled_from([1, 2])) for i in range(n)}
    steps = {i: 1e4 for i in range(n)}
    t = {i: 0.0 for i in range(n)}
    rp = fa.RoundPolicy("finish_time_fairness", isolated_start="zero")
    ad = gavel.policy("finish_time_fairness_perf")
    for rnd in range(3):
        r = rp.allocate(tp, spec, scale_factor=sf, steps_remaining=steps, elapsed=t)
        ad.get_allocation(tp, sf, {j: 1.0 for j in tp}, t, steps, spec)
        assert r.certificate.ok
        assert r.objective == pytest.approx(ad.last_result.objective, rel=GAP)
        assert rp.isolated_elapsed == pytest.approx(
            {j: ad.cumulative_isolated_time[j] for j in tp}, rel=1e-12)
        frac = data.draw(st.floats(0.0, 0.3))
        steps = {j: s * (1 - frac) for j, s in steps.items()}
        t = {j: v + 360.0 for j, v in t.items()}
        new = n + rnd
        tp[new] = {ty: data.draw(rate) for ty in types}
        sf[new], steps[new], t[new] = 1, 5e3, 0.0
        old = min(tp)
        if len(tp) > 2:
            for d in (tp, sf, steps, t):
                del d[old]
