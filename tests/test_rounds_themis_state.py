"""Issue #29: the Themis round (`RoundPolicy("themis")`) carries each job's isolated time
across rounds with the finish-time fairness rounds' state (`fairalloc.rounds.state`), so its
bids (finish-time fairness ``rho``) use the time each job would have needed alone so far, not
its elapsed time."""

from __future__ import annotations

import numpy as np
import pytest

import fairalloc as fa
from fairalloc.rounds.state import isolated_throughput

SPEC = {"v100": 2, "k80": 2}
TYPES = tuple(SPEC)


def _rounds():
    """Three rounds of four jobs (gangs 1 and 2) that progress at different rates; job 4
    arrives in round 2."""
    tp = {1: {"v100": 10.0, "k80": 2.0}, 2: {"v100": 4.0, "k80": 3.0},
          3: {"v100": 20.0, "k80": 1.0}, 4: {"v100": 6.0, "k80": 5.0}}
    sf = {1: 1, 2: 2, 3: 1, 4: 1}
    yield ({j: tp[j] for j in (1, 2, 3)}, {j: sf[j] for j in (1, 2, 3)},
           {1: 4e4, 2: 2e4, 3: 8e4}, {1: 100.0, 2: 50.0, 3: 0.0})
    yield tp, sf, {1: 3.0e4, 2: 1.9e4, 3: 6.0e4, 4: 5e4}, {1: 460.0, 2: 410.0, 3: 360.0,
                                                            4: 30.0}
    yield tp, sf, {1: 2.5e4, 2: 1.5e4, 3: 5.0e4, 4: 4.4e4}, {1: 820.0, 2: 770.0, 3: 720.0,
                                                              4: 390.0}


def _iso_rate(tp, sf):
    ids = list(tp)
    T = np.array([[tp[j][t] for t in TYPES] for j in ids])
    cap = np.array([SPEC[t] for t in TYPES], dtype=float)
    return dict(zip(ids, isolated_throughput(T, cap, np.array([sf[j] for j in ids],
                                                               dtype=float)).tolist()))


def test_themis_round_policy_carries_isolated_time_like_ftf():
    """Each round's isolated times are the FTF rounds' rule (a new job starts at its elapsed
    time; then the steps done over the previous round's isolated throughput are added), and the
    round is the stateless Themis round given those times (on main the Themis round kept no
    state: ``isolated_elapsed`` stayed empty and each job's elapsed time stood in)."""
    p = fa.RoundPolicy("themis", fairness_knob=0.5)
    ftf = fa.RoundPolicy("finish_time_fairness")
    want: dict = {}
    prev = None
    moved = []
    for tp, sf, steps, t in _rounds():
        if prev is not None:
            ptp, psf, psteps = prev
            rate = _iso_rate(ptp, psf)
            want = {j: want[j] + (psteps[j] - steps[j]) / rate[j] for j in ptp}
        want = {j: want.get(j, t[j]) for j in tp}
        r = p.allocate(tp, SPEC, scale_factor=sf, steps_remaining=steps, elapsed=t)
        ftf.allocate(tp, SPEC, scale_factor=sf, steps_remaining=steps, elapsed=t)
        assert p.isolated_elapsed == pytest.approx(want, rel=1e-12)
        assert p.isolated_elapsed == pytest.approx(ftf.isolated_elapsed, rel=1e-12)
        ref = fa.solve_round("themis", tp, SPEC, scale_factor=sf, steps_remaining=steps,
                             elapsed=t, isolated_elapsed=want, fairness_knob=0.5)
        np.testing.assert_array_equal(r.x, ref.x)
        plain = fa.solve_round("themis", tp, SPEC, scale_factor=sf, steps_remaining=steps,
                               elapsed=t, fairness_knob=0.5)
        moved.append(float(np.abs(r.x - plain.x).max()))
        prev = (tp, sf, steps)
    # the state changes the auction: in round 2 another job wins than with elapsed time
    assert moved[0] == 0.0 and moved[1] == 1.0
