"""Issues #29/#28: finish-time fairness's per-job isolated time has one implementation,
`fairalloc.rounds.state.IsolatedTime`: `RoundPolicy(isolated_start="gavel")` is Gavel's state
exactly and the Gavel adapter's FTF policies carry theirs there (no second copy)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.integrations import gavel

SPEC = {"v100": 2, "k80": 3}


def _gavel_iso(tp: dict, sf: dict, spec: dict) -> dict:
    """Gavel's isolated throughput (``c_j / max(n s, sum c)`` of every type, every job counted,
    gangs not checked), by hand."""
    c = sum(spec.values())
    return {j: sum(tp[j].get(t, 0.0) * spec[t] / max(len(tp) * sf[j], c) for t in spec)
            for j in tp}


def test_gavel_start_is_gavels_state_with_a_gang_that_fits_nowhere_and_a_departure():
    """Job 2's gang (4 workers) fits no type: Gavel still counts it in ``n`` and charges it at
    its formula's rate; job 0 leaves and is kept. On main ``isolated_start="gavel"`` was
    refused and the adapter kept a copy of this state."""
    tp = {0: {"v100": 4.0, "k80": 1.0}, 1: {"v100": 2.0, "k80": 2.0},
          2: {"v100": 8.0, "k80": 3.0}}
    sf = {0: 1, 1: 1, 2: 4}
    steps1 = {0: 100.0, 1: 100.0, 2: 100.0}
    steps2 = {0: 60.0, 1: 70.0, 2: 90.0}
    rp = fa.RoundPolicy("finish_time_fairness", isolated_start="gavel")
    ad = gavel.policy("finish_time_fairness_perf")
    iso = _gavel_iso(tp, sf, SPEC)
    for steps in (steps1, steps2):
        t = dict.fromkeys(tp, 0.0)
        r = rp.allocate(tp, SPEC, scale_factor=sf, steps_remaining=steps, elapsed=t)
        ad.get_allocation(tp, sf, dict.fromkeys(tp, 1.0), t, steps, SPEC)
        assert r.certificate.ok and r.unrunnable_jobs == (2,)
    want = {j: (steps1[j] - steps2[j]) / iso[j] for j in tp}
    assert rp.isolated_elapsed == pytest.approx(want, rel=1e-12)
    assert ad.cumulative_isolated_time == pytest.approx(want, rel=1e-12)
    rest = {j: tp[j] for j in (1, 2)}
    rp.allocate(rest, SPEC, scale_factor=sf, steps_remaining={1: 50.0, 2: 90.0},
                elapsed={1: 1.0, 2: 1.0})
    assert rp.isolated_elapsed[0] == pytest.approx(want[0], rel=1e-12)   # kept, as Gavel


def test_a_failed_round_charges_nothing():
    """On main the adapter added a round's steps before solving it: a call that raised, then
    the same round retried, charged the steps twice."""
    tp = {0: {"v100": 2.0}, 1: {"v100": 4.0}}
    p = gavel.policy("finish_time_fairness_perf")
    p.get_allocation(tp, {0: 1, 1: 1}, {0: 1.0, 1: 1.0}, {0: 0.0, 1: 0.0},
                     {0: 100.0, 1: 100.0}, {"v100": 2})
    with pytest.raises(fa.InputError):
        p.get_allocation(tp, {0: 1, 1: 1}, {0: 1.0, 1: 1.0}, {0: 1.0, 1: -1.0},
                         {0: 60.0, 1: 60.0}, {"v100": 2})
    p.get_allocation(tp, {0: 1, 1: 1}, {0: 1.0, 1: 1.0}, {0: 1.0, 1: 1.0},
                     {0: 60.0, 1: 60.0}, {"v100": 2})
    # isolated split: one worker each, throughputs 2 and 4; 40 steps each, charged once
    assert p.cumulative_isolated_time == pytest.approx({0: 20.0, 1: 10.0}, rel=1e-12)


def test_seeding_the_adapters_state_in_place_or_by_assignment_counts():
    tp = {0: {"v100": 2.0}, 1: {"v100": 4.0}}
    args = ({0: 1, 1: 1}, {0: 1.0, 1: 1.0}, {0: 0.0, 1: 0.0})
    for how in ("in place", "assigned"):
        p = gavel.policy("finish_time_fairness_perf")
        p.get_allocation(tp, *args, {0: 100.0, 1: 100.0}, {"v100": 2})
        if how == "in place":
            p.cumulative_isolated_time[0] = 5.0
        else:
            p.cumulative_isolated_time = {0: 5.0, 1: 0.0}
        p.get_allocation(tp, *args, {0: 60.0, 1: 60.0}, {"v100": 2})  # same job objects
        assert p.cumulative_isolated_time == pytest.approx({0: 25.0, 1: 10.0}, rel=1e-12)


@settings(max_examples=15, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.sampled_from(["same", "reordered", "fresh"]),
                          st.floats(0.0, 0.5), st.booleans()), min_size=1, max_size=4))
def test_reading_by_position_equals_reading_by_job_id(rounds):
    """The state read by position (the same job objects in the same order) equals the state
    read by job id (reordered or new but equal ids), round by round, with in-place edits."""
    tp = {i: {"v100": 1.0 + i, "k80": 0.5 + 0.25 * i} for i in range(4)}
    sf = dict.fromkeys(tp, 1)
    fast = fa.RoundPolicy("finish_time_fairness", isolated_start="gavel")
    slow = fa.RoundPolicy("finish_time_fairness", isolated_start="gavel")
    steps = dict.fromkeys(tp, 1e3)
    for how, frac, edit in rounds:
        order = list(tp)[::-1] if how == "reordered" else list(tp)
        ids = [float(j) for j in order] if how == "fresh" else order  # equal, new objects
        kw = {"scale_factor": sf, "elapsed": dict.fromkeys(tp, 0.0), "steps_remaining": steps}
        fast.allocate(tp, SPEC, **kw)
        slow.allocate({i: tp[j] for i, j in zip(ids, order)}, SPEC,
                      **{k: {i: v[j] for i, j in zip(ids, order)} for k, v in kw.items()})
        assert fast.isolated_elapsed == pytest.approx(slow.isolated_elapsed, rel=1e-12)
        if edit:
            fast.isolated_elapsed[1] = slow.isolated_elapsed[1] = 7.0
        steps = {j: s * (1 - frac) for j, s in steps.items()}
