"""The warm-start claims of docs/how-to/use-inside-a-scheduler.md, on many instances (#29 item 5,
#28 item 2): a round identical to the previous one is ``"reused"``; max-min fairness is seeded
by the previous round's prices and level (``"fast+warm"``) when the previous round priced
every type, and otherwise starts its stage LPs from the previous round's bases (also
``"fast+warm"``); a warm round has the cold round's optimum and a passing certificate."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa

#: the library's documented default duality-gap tolerance (relative): the certificates' bound
GAP = 1e-6
TYPES = ("v100", "p100", "k80")


@st.composite
def traces(draw):
    """A scheduler's rounds: 10-80 jobs on 1-3 types, every round one or two jobs leave and
    as many arrive (rates 1-50 steps/s; a job misses a type with probability 0.1)."""
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    k = draw(st.integers(1, 3))
    n = draw(st.integers(10, 80))
    types = TYPES[:k]
    cap = {t: int(rng.integers(1, max(2, n // 2))) for t in types}

    def job():
        row = {t: float(rng.uniform(1.0, 50.0)) for t in types if rng.random() < 0.9}
        return row or {types[0]: 1.0}

    active = {i: job() for i in range(n)}
    churn = draw(st.integers(1, 2))
    rounds, nxt = [], n
    for _ in range(3):
        for j in list(active)[:churn]:
            del active[j]
        for _ in range(churn):
            active[nxt] = job()
            nxt += 1
        rounds.append(dict(active))
    return rounds, cap


@settings(max_examples=6, deadline=None)
@given(traces())
def test_property_warm_rounds_are_seeded_exact_and_reused(trace):
    rounds, cap = trace
    # method="fast": the normal round's seeds and bases (the default incremental round is
    # tested in tests/test_rounds_incremental.py)
    p = fa.RoundPolicy("max_min_fairness", method="fast")
    prev = None
    for tp in rounds:
        r = p.allocate(tp, cap)
        cold = fa.solve_round("max_min_fairness", tp, cap)
        assert r.certificate.ok and cold.certificate.ok
        assert r.objective == pytest.approx(cold.objective, rel=GAP)
        if prev is not None and np.all(prev.prices > 0):
            assert r.stats.method == "fast+warm" and r.warm
        elif prev is not None:
            # a type priced 0 seeds no prices (main sent such rounds to the structured solver
            # whatever their size, started cold): the stage LPs start from the previous
            # round's bases instead (fairalloc.rounds.state.RoundBases)
            assert "exact-lp+warm" in r.stats.path and r.warm, r.stats
        prev = r
    again = p.allocate(rounds[-1], cap)                # the same round again
    assert again.stats.method == "reused" and again.warm
    np.testing.assert_array_equal(again.x, prev.x)
