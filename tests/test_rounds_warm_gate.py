"""A warm round is never a slower path than a cold one (#28; `fairalloc.rounds.state`).

`fairalloc.RoundPolicy` hands a stage LP the previous round's basis
(`fairalloc.rounds.state.RoundBases`) only where that stage's last solve without one took at
least `fairalloc.rounds.state.ROUND_BASIS_MIN_PIVOTS` simplex iterations: below, carrying the
basis cost more than the pivots it saved (makespan, max total throughput and FIFO on Gavel's
trace were 4-12 % slower warm). The decision is visible in the round's stats (``exact-lp``
against ``exact-lp+warm``, ``method`` ending in ``+warm``, ``RoundResult.warm``), and a warm
round's answer agrees with a cold `fairalloc.solve_round` within the certificates' bounds.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.rounds.state import ROUND_BASIS_MIN_PIVOTS
from fairalloc.tolerances import GAP_TOL

TYPES = ("v100", "p100", "k80")
#: two certified optima each within GAP_TOL (relative) of the optimum differ by at most twice
AGREE = 2 * GAP_TOL
#: policies whose rounds carry a basis only where it pays (finish-time fairness' normal round
#: too, below; max-min fairness' normal round always carries: tests/test_rounds_warm_bases.py)
GATED = ("min_makespan", "max_total_throughput", "shortest_job_first", "fifo",
         "water_filling")


def _round_args(policy, ids, T, sf, steps):
    tp = {j: dict(zip(TYPES, row)) for j, row in zip(ids, T.tolist())}
    per = {"scale_factor": dict(zip(ids, sf.tolist()))}
    if policy in ("min_makespan", "shortest_job_first", "finish_time_fairness"):
        per["steps_remaining"] = dict(zip(ids, steps.tolist()))
    if policy == "fifo":
        per["order"] = {j: float(j) for j in ids}
    if policy == "finish_time_fairness":  # (given: RoundPolicy and solve_round, one program)
        per["elapsed"] = per["isolated_elapsed"] = {j: 360.0 for j in ids}
    return tp, per


def _trace(seed, n, rounds, churn):
    """Rounds of ``n`` jobs with distinct random rates; ``churn`` leave and arrive each round,
    the others progress."""
    rng = np.random.default_rng(seed)

    def draw(k):
        return (rng.lognormal(0.0, 0.5, (k, 3)) * np.array([3.0, 2.0, 1.0]),
                rng.choice([1.0, 1.0, 2.0], k), rng.uniform(1e3, 1e5, k))

    ids = list(range(n))
    T, sf, steps = draw(n)
    out = []
    for r in range(rounds):
        if r:
            keep = np.ones(len(ids), dtype=bool)
            keep[rng.choice(len(ids), churn, replace=False)] = False
            T2, sf2, st2 = draw(churn)
            ids = [j for j, k in zip(ids, keep.tolist()) if k] + list(range(n + (r - 1) * churn,
                                                                           n + r * churn))
            T, sf = np.vstack([T[keep], T2]), np.concatenate([sf[keep], sf2])
            steps = np.concatenate([steps[keep] * 0.9, st2])
        out.append((list(ids), T.copy(), sf.copy(), steps.copy()))
    return out


@settings(max_examples=8, deadline=None)
@given(st.sampled_from(GATED), st.integers(0, 2**31 - 1), st.integers(4, 40),
       st.integers(1, 3))
def test_property_warm_rounds_agree_with_cold_and_say_which_path_ran(policy, seed, n, churn):
    cap = {"v100": max(1, n // 6), "p100": max(1, n // 5), "k80": max(1, n // 4)}
    p = fa.RoundPolicy(policy)
    for i, (ids, T, sf, steps) in enumerate(_trace(seed, n, 4, min(churn, n - 1))):
        tp, per = _round_args(policy, ids, T, sf, steps)
        warm = p.allocate(tp, cap, **per)
        cold = fa.solve_round(policy, tp, cap, **per)
        assert warm.certificate.ok and cold.certificate.ok
        scale = max(abs(warm.objective), abs(cold.objective), 1e-12)
        assert abs(warm.objective - cold.objective) <= AGREE * scale, (i, warm.stats)
        # honest stats: warm exactly when a stage started from the previous round's basis
        assert warm.warm == warm.stats.method.endswith("+warm")
        assert warm.warm == any(s.endswith("+warm") and s.startswith("exact-lp")
                                for s in warm.stats.path) or policy == "water_filling"
        if i == 0:
            assert not warm.warm


@pytest.mark.parametrize("policy", ["min_makespan", "max_total_throughput",
                                    "shortest_job_first"])
def test_small_stage_lps_are_not_started_from_the_last_basis(policy):
    # main: every round after the first started its stage LPs from the previous round's basis
    # ("exact-lp+warm"), though their cold solves took a few dozen pivots: carrying the basis
    # cost more than it saved (Gavel's trace: max total throughput 100 jobs 2.65 against
    # 2.43 ms)
    cap = {"v100": 4, "p100": 3, "k80": 5}
    p = fa.RoundPolicy(policy)
    for i, (ids, T, sf, steps) in enumerate(_trace(1, 24, 4, 2)):
        tp, per = _round_args(policy, ids, T, sf, steps)
        r = p.allocate(tp, cap, **per)
        assert r.certificate.ok
        assert r.stats.iterations < ROUND_BASIS_MIN_PIVOTS * len(r.stats.path)  # (small)
        assert not r.warm and "exact-lp+warm" not in r.stats.path, (i, r.stats)
        assert "exact-lp" in r.stats.path


@pytest.mark.parametrize("n", [24, 60])
def test_small_ftf_normal_rounds_are_not_started_from_the_last_basis(n):
    # finish-time fairness' normal round (method="highs": the kept-model round refuses it;
    # also the kept-model round's fallback) follows the same rule as the other policies'
    # (main: always started from the previous round's bases, "highs+warm", however few pivots
    # the cold solve took; random rates, 50 jobs: 3.10 against 2.78 ms a round,
    # benchmarks/round_bases_gate.py)
    policy = "finish_time_fairness"
    cap = {t: max(2, n // 6) for t in TYPES}
    p = fa.RoundPolicy(policy, method="highs")
    for i, (ids, T, sf, steps) in enumerate(_trace(2, n, 4, 2)):
        tp, per = _round_args(policy, ids, T, sf, steps)
        r = p.allocate(tp, cap, **per)
        cold = fa.solve_round(policy, tp, cap, method="highs", **per)
        assert r.certificate.ok
        assert abs(r.objective - cold.objective) <= AGREE * max(abs(cold.objective), 1e-12)
        assert r.stats.iterations < ROUND_BASIS_MIN_PIVOTS * r.stats.solves  # (small LPs)
        assert not r.warm and r.stats.method == "highs", (i, r.stats)


def test_small_max_min_normal_rounds_still_start_from_the_last_basis():
    # max-min fairness' normal round keeps carrying its bases below ROUND_BASIS_MIN_PIVOTS:
    # there the basis pays from a few dozen pivots (benchmarks/round_bases_gate.py)
    cap = {t: 4 for t in TYPES}
    p = fa.RoundPolicy("max_min_fairness", method="highs")
    for i, (ids, T, sf, steps) in enumerate(_trace(2, 24, 4, 2)):
        tp, per = _round_args("max_min_fairness", ids, T, sf, steps)
        r = p.allocate(tp, cap, **per)
        assert r.certificate.ok
        assert r.warm == (i > 0) and ("exact-lp+warm" in r.stats.path) == (i > 0), r.stats


def test_a_stage_lp_that_pivots_enough_starts_from_the_last_basis():
    # max total throughput has one stage LP: its round's iterations are that LP's; the next
    # round carries the basis exactly when the last cold solve took ROUND_BASIS_MIN_PIVOTS
    # or more (600 jobs with distinct rates: a few hundred pivots cold, far fewer warm)
    cap = {"v100": 150, "p100": 150, "k80": 150}
    p = fa.RoundPolicy("max_total_throughput")
    out = []
    for ids, T, sf, steps in _trace(3, 600, 3, 6):
        tp, per = _round_args("max_total_throughput", ids, T, sf, steps)
        out.append((p.allocate(tp, cap, **per),
                    fa.solve_round("max_total_throughput", tp, cap, **per)))
    (first, _), (second, cold2), (third, cold3) = out
    assert first.stats.path == ("exact-lp",) and not first.warm
    assert first.stats.iterations >= ROUND_BASIS_MIN_PIVOTS  # (the instance is large enough)
    for warm, cold in ((second, cold2), (third, cold3)):
        assert warm.warm and warm.stats.path == ("exact-lp+warm",), warm.stats
        assert warm.stats.iterations < cold.stats.iterations
        assert warm.certificate.ok
        assert abs(warm.objective - cold.objective) <= AGREE * abs(cold.objective)
    p.reset()  # forgets the bases and the pivots: the next round is cold again
    tp, per = _round_args("max_total_throughput", *_trace(3, 600, 3, 6)[-1])
    assert not p.allocate(tp, cap, **per).warm


def test_two_stage_lps_of_one_name_each_start_from_their_own_basis():
    # shortest job first solves two stage LPs named "shortest_job_first" (0 and 1 kept rows):
    # main kept one basis per name, the second's, and started the first stage from it (346
    # pivots where a cold solve takes 1); each now keeps its own: one job's rates change, the
    # round is a few pivots
    n = 700
    rng = np.random.default_rng(1)
    T = rng.lognormal(0.0, 0.5, (n, 3)) * np.array([3.0, 2.0, 1.0])
    cap = {"v100": 170, "p100": 170, "k80": 170}
    steps = {j: 1e3 + j for j in range(n)}
    p = fa.RoundPolicy("shortest_job_first")
    for r in range(3):
        T[r] *= 1.1
        tp = {j: dict(zip(TYPES, row)) for j, row in enumerate(T.tolist())}
        warm = p.allocate(tp, cap, steps_remaining=steps)
    cold = fa.solve_round("shortest_job_first", tp, cap, steps_remaining=steps)
    assert warm.warm and warm.certificate.ok, warm.stats
    assert abs(warm.objective - cold.objective) <= AGREE * abs(cold.objective)
    assert warm.stats.iterations * 10 < cold.stats.iterations, (warm.stats, cold.stats)


def test_a_program_that_shrinks_stops_carrying_its_basis():
    # the cold pivots were counted at 600 jobs on 450 workers; the cluster shrinks to 200 jobs
    # on 150 workers: at a third of the rows the stage is expected to pivot a third as much
    # cold (below ROUND_BASIS_MIN_PIVOTS here), so the shrunk round (still started from the
    # kept basis) keeps none and the next one is solved cold, counting its pivots again
    cap = {"v100": 150, "p100": 150, "k80": 150}
    p = fa.RoundPolicy("max_total_throughput")
    trace = _trace(3, 600, 2, 6)
    for ids, T, sf, steps in trace:
        tp, per = _round_args("max_total_throughput", ids, T, sf, steps)
        last = p.allocate(tp, cap, **per)
    assert last.warm
    ids, T, sf, steps = trace[-1]
    keep = slice(0, 200)
    tp, per = _round_args("max_total_throughput", ids[keep], T[keep], sf[keep], steps[keep])
    assert p.allocate(tp, {t: 50 for t in cap}, **per).warm
    again = p.allocate(tp, {t: 51 for t in cap}, **per)  # (not the same round: not reused)
    assert not again.warm and again.stats.path == ("exact-lp",), again.stats
    assert again.stats.iterations < ROUND_BASIS_MIN_PIVOTS  # (the estimate was right)
