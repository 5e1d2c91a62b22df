"""Warm rounds from the previous round's simplex bases (#28 item 2, #29 item 5).

`fairalloc.RoundPolicy` starts each stage LP of a throughput policy from the previous round's
final basis of the same stage, carried over by job (or symmetry class)
(`fairalloc.rounds.state.RoundBases`). Each warm round must be certified on its own program
and agree with a cold `fairalloc.solve_round` on the same inputs within the certificates'
bounds, whatever jobs arrived and left; ``stats`` / ``RoundResult.warm`` say when a round
started warm, for every throughput policy (finish-time fairness included).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.backends import HighsBackend, LinearProgram
from fairalloc.errors import InputError
from fairalloc.rounds.state import ROUND_BASIS_MIN_PIVOTS
from fairalloc.tolerances import GAP_TOL

TYPES = ("v100", "p100", "k80")
#: two certified optima each within GAP_TOL (relative) of the optimum differ by at most twice
AGREE = 2 * GAP_TOL
POLICIES = ("max_min_fairness", "finish_time_fairness", "min_makespan",
            "max_total_throughput", "shortest_job_first")


@st.composite
def traces(draw):
    """Rounds of a scheduler: 4-30 jobs drawn from a few templates (so that symmetry classes
    form, sometimes) or all distinct, 1-3 types, 1-3 jobs leaving and arriving per round."""
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    k = draw(st.integers(1, 3))
    n = draw(st.integers(4, 30))
    templates = draw(st.sampled_from([3, 8, 0]))  # 0: every job its own rates
    types = TYPES[:k]
    cap = {t: int(rng.integers(2, max(3, n // 2))) for t in types}
    rows = [{t: float(rng.uniform(1.0, 50.0)) for t in types} for _ in range(max(templates, 1))]

    def job():
        row = dict(rows[int(rng.integers(templates))]) if templates else {
            t: float(rng.uniform(1.0, 50.0)) for t in types if rng.random() < 0.9}
        return {"tp": row or {types[0]: 1.0}, "sf": int(rng.choice([1, 1, 2])),
                "w": float(rng.choice([1.0, 2.0])),
                "steps": float(rng.uniform(100.0, 1e4)), "elapsed": float(rng.uniform(0, 1e3))}

    active = {i: job() for i in range(n)}
    churn = draw(st.integers(1, 3))
    rounds, nxt = [], n
    for r in range(4):
        if r:
            for j in list(rng.choice(list(active), size=min(churn, len(active) - 1),
                                      replace=False)):
                del active[j]
            for _ in range(churn):
                active[nxt] = job()
                nxt += 1
            for v in active.values():  # jobs progress: the FTF and makespan data change
                v["steps"] *= 0.9
                v["elapsed"] += 360.0
        rounds.append({j: dict(v) for j, v in active.items()})
    return rounds, cap, draw(st.sampled_from(POLICIES))


def _args(policy, jobs):
    tp = {j: v["tp"] for j, v in jobs.items()}
    per = {"scale_factor": {j: v["sf"] for j, v in jobs.items()}}
    if policy == "max_min_fairness":
        per["weight"] = {j: v["w"] for j, v in jobs.items()}
    if policy in ("finish_time_fairness", "min_makespan", "shortest_job_first"):
        per["steps_remaining"] = {j: v["steps"] for j, v in jobs.items()}
    if policy == "finish_time_fairness":  # (given: warm and cold solve the same program)
        per["elapsed"] = {j: v["elapsed"] for j, v in jobs.items()}
        per["isolated_elapsed"] = per["elapsed"]
    return tp, per


@settings(max_examples=6, deadline=None)
@given(traces())
def test_property_warm_round_is_certified_and_agrees_with_cold(trace):
    rounds, cap, policy = trace
    p = fa.RoundPolicy(policy)
    incremental = 0
    for i, jobs in enumerate(rounds):
        tp, per = _args(policy, jobs)
        warm = p.allocate(tp, cap, **per)
        cold = fa.solve_round(policy, tp, cap, **per)
        assert warm.certificate.ok and cold.certificate.ok
        assert not cold.warm
        scale = max(abs(warm.objective), abs(cold.objective), 1e-12)
        assert abs(warm.objective - cold.objective) <= AGREE * scale, (i, warm.stats)
        # honest: warm exactly when the answer started from the previous round
        assert warm.warm == warm.stats.method.endswith("+warm")
        if i == 0:
            assert not warm.warm
        if warm.warm:
            assert ("exact-lp+warm" in warm.stats.path or "incremental-lp+warm"
                    in warm.stats.path or "structured" in " ".join(warm.stats.path))
        incremental += warm.stats.method.startswith("incremental")
        if warm.stats.method.startswith("incremental"):  # its own certificate's second stage
            total = (np.array([[jobs[j]["tp"].get(t, 0.0) for t in warm.types]
                               for j in warm.job_ids]) * warm.x).sum(axis=1)
            assert total @ (1.0 / _equal(warm, jobs, cap)) >= (1 - AGREE) * (
                cold.effective_throughput @ (1.0 / _equal(cold, jobs, cap)))
        # feasible on the original cluster: time and capacity
        x = warm.x
        assert np.all(x >= -1e-9) and np.all(x.sum(axis=1) <= 1 + 1e-7)
        sf = np.array([jobs[j]["sf"] for j in warm.job_ids], dtype=float)
        used = sf @ x
        assert np.all(used <= np.array([cap[t] for t in warm.types]) * (1 + 1e-7) + 1e-9)
    if policy == "max_min_fairness":  # every type present, every job runnable: incremental
        assert incremental == len(rounds), incremental


def _equal(r, jobs, cap):
    """Each job's throughput under X^equal (the work-conserving stage's normaliser)."""
    c = np.array([float(cap[t]) for t in r.types])
    sf = np.array([float(jobs[j]["sf"]) for j in r.job_ids])
    T = np.array([[jobs[j]["tp"].get(t, 0.0) for t in r.types] for j in r.job_ids])
    return np.where((T > 0) & (sf[:, None] <= c[None, :]), T, 0.0) @ (c / c.sum())


def _trace_rounds(n=24, rounds=4, seed=5):
    rng = np.random.default_rng(seed)
    proto = [{t: float(rng.uniform(1, 50)) for t in TYPES} for _ in range(5)]
    active = {i: proto[i % 5] for i in range(n)}
    out, nxt = [], n
    for _ in range(rounds):
        out.append(dict(active))
        del active[next(iter(active))]
        active[nxt] = proto[nxt % 5]
        nxt += 1
    return out


@pytest.mark.parametrize("policy", ["max_min_fairness", "finish_time_fairness"])
def test_rounds_after_the_first_start_warm(policy):
    # the kept-model rounds of max-min and finish-time fairness (main: FTF and max-min rounds
    # whose previous round priced a type at 0 were always solved cold, method "fast"); FTF's
    # normal round, like the other policies', carries a basis only where its stage LPs pivot
    # enough (tests/test_rounds_warm_gate.py), max-min's always
    cap = {"v100": 4, "p100": 3, "k80": 5}
    p = fa.RoundPolicy(policy)
    methods = []
    for jobs in _trace_rounds():
        per = {}
        if policy in ("finish_time_fairness", "min_makespan", "shortest_job_first"):
            per["steps_remaining"] = {j: 1e3 + 10.0 * j for j in jobs}
        r = p.allocate(jobs, cap, **per)
        assert r.certificate.ok
        methods.append((r.stats.method, r.warm))
    assert methods[0][1] is False
    assert all(w for _, w in methods[1:]), methods


def _distinct_rounds(n, rounds, seed=7):
    """Rounds of ``n`` jobs with distinct random rates, one leaving and one arriving per round
    (a program with a row per job: its stage LPs pivot a few hundred times cold)."""
    rng = np.random.default_rng(seed)

    def job():
        return dict(zip(TYPES, (rng.lognormal(0.0, 0.5, 3) * [3.0, 2.0, 1.0]).tolist()))

    active = {i: job() for i in range(n)}
    out, nxt = [], n
    for _ in range(rounds):
        out.append(dict(active))
        del active[next(iter(active))]
        active[nxt] = job()
        nxt += 1
    return out


@pytest.mark.parametrize(("policy", "n"), [("max_min_fairness", 60),
                                           ("finish_time_fairness", 200)])
def test_warm_round_needs_fewer_simplex_iterations(policy, n):
    # the normal round (method="highs": the kept-model round refuses it) on an instance above
    # ROUND_BASIS_MIN_PIVOTS: workers to spare, so every capacity price is 0 (as on Gavel's
    # trace) and no price seeds the round; the carried basis is (nearly) optimal after one
    # arrival and one departure
    cap = {t: n // 3 for t in TYPES}
    p = fa.RoundPolicy(policy, method="highs")
    rounds = _distinct_rounds(n, 3)

    def per(jobs):
        return ({"steps_remaining": {j: 1e3 + 10.0 * j for j in jobs}}
                if policy == "finish_time_fairness" else {})

    prev = p.allocate(rounds[0], cap, **per(rounds[0]))
    assert prev.stats.iterations >= ROUND_BASIS_MIN_PIVOTS and not prev.warm
    for jobs in rounds[1:]:
        assert not np.any(prev.prices > 0)
        prev = warm = p.allocate(jobs, cap, **per(jobs))
        cold = fa.solve_round(policy, jobs, cap, method="highs", **per(jobs))
        assert warm.warm and "exact-lp+warm" in warm.stats.path, warm.stats
        assert warm.stats.iterations < cold.stats.iterations
        assert warm.certificate.ok
        assert abs(warm.objective - cold.objective) <= AGREE * abs(cold.objective)


def test_reset_and_warm_start_off_solve_cold():
    cap = {"v100": 4, "p100": 3, "k80": 5}
    rounds = _trace_rounds()
    p = fa.RoundPolicy("max_min_fairness")
    p.allocate(rounds[0], cap)
    p.reset()
    assert not p.allocate(rounds[1], cap).warm
    q = fa.RoundPolicy("max_min_fairness", warm_start=False)
    assert not any(q.allocate(jobs, cap).warm for jobs in rounds)


def test_a_basis_of_other_present_types_is_not_carried():
    # a drained type changes the LP's types: its round does not start from the last basis
    # (it may still be seeded by the previous prices); back to the same types it does again
    rounds = _trace_rounds(rounds=4)
    p = fa.RoundPolicy("max_min_fairness", method="fast")  # (the normal round's bases)
    ups = [{"v100": 4, "p100": 3, "k80": 5}, {"v100": 4, "p100": 0, "k80": 5},
           {"v100": 4, "p100": 0, "k80": 5}, {"v100": 4, "p100": 3, "k80": 5}]
    out = [p.allocate(jobs, up) for jobs, up in zip(rounds, ups)]
    assert all(r.certificate.ok for r in out)
    assert "exact-lp+warm" not in out[1].stats.path
    assert "exact-lp+warm" in out[3].stats.path and out[3].warm


def test_basis_carried_by_index():
    lp = LinearProgram.build([-1.0, -2.0], [[1.0, 1.0]], row_upper=1.0)
    b = HighsBackend().solve_lp(lp, keep_basis=True).extra["basis"]
    # the same LP with its columns swapped and a new column and row: 0 iterations needed
    lp2 = LinearProgram.build([-2.0, -1.0, 0.0], [[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
                              row_upper=[1.0, 1.0])
    carried = b.carried(np.array([1, 0, -1]), np.array([0, -1]))
    assert carried.shape == (2, 3)
    sol = HighsBackend().solve_lp(lp2, basis=carried)
    assert sol.objective == pytest.approx(-2.0) and sol.iterations == 0
    plain = fa.backends.LPBasis((1, 2), None, "other")
    with pytest.raises(InputError, match="carried"):
        plain.carried(np.array([0]), np.array([0]))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_howto_warm_claims_on_several_instances(seed):
    # docs/how-to/use-inside-a-scheduler.md's loop (100 jobs, 2 leave and 2 arrive per round,
    # the K80s drained in rounds 4 and 5) on several instances: the first round builds the
    # kept model, later rounds are incremental from it ("incremental+warm"); the first drained
    # round builds the model of the present types (#28 item 3), and when the K80s are back
    # the model set aside is warm again; every round is certified and has the cold round's
    # optimum
    rng = np.random.default_rng(seed)

    def new_job():
        if rng.random() < 0.1:
            return {"k80": float(rng.uniform(1, 10))}
        return {"v100": float(rng.uniform(5, 50)), "k80": float(rng.uniform(1, 10))}

    active = {f"job{i}": new_job() for i in range(100)}
    workers = {"v100": 25, "k80": 25}
    policy = fa.RoundPolicy("max_min_fairness")
    nxt = 100
    for round_no in range(10):
        for job in list(active)[:2]:
            del active[job]
        for _ in range(2):
            active[f"job{nxt}"] = new_job()
            nxt += 1
        up = dict(workers, k80=0) if round_no in (4, 5) else workers
        r = policy.allocate(active, up)
        cold = fa.solve_round("max_min_fairness", active, up)
        assert r.certificate.ok and cold.certificate.ok
        assert abs(r.objective - cold.objective) <= AGREE * max(abs(cold.objective), 1e-12)
        assert not r.stats.fallbacks, r.stats
        if round_no in (0, 4):
            assert r.stats.method == "incremental" and not r.warm
        else:
            assert r.stats.method == "incremental+warm" and r.warm, (round_no, r.stats)
        assert r.drained_types == (("k80",) if round_no in (4, 5) else ())
    assert r.stats.method == "incremental+warm"
