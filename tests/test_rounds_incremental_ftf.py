"""The incremental warm round of finish-time fairness (#28, `fairalloc.rounds.incremental_ftf`).

`fairalloc.RoundPolicy("finish_time_fairness")` keeps one HiGHS model per stage (a slot per
job) and runs Newton's method on the Dinkelbach level from the previous round's ratio. Each
round must agree with a cold `fairalloc.solve_round` on the same inputs within the
certificates' bounds and be certified on the original program; what it cannot answer hands
over to the normal round through the plan (``stats.fallbacks``).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.backends.kept import KeptLP
from fairalloc.results import Status
from fairalloc.tolerances import FEAS_TOL, GAP_TOL
from tests.ftf_traces import ROUND_S, TYPES, allocate_args, job_trace, warm_and_cold

#: two certified optima of max rho, each within GAP_TOL of R* relative to R (the level
#: certificate's scale), differ by at most twice that
AGREE = 2 * GAP_TOL


@st.composite
def traces(draw):
    """5 rounds of 3-30 jobs on 1-3 types (2-12 workers each): 1-3 jobs leave and arrive per
    round, every job advances (its steps shrink by its throughput on the first type for a
    share of the round, its elapsed time grows by the round), gangs of 1 or 2."""
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    k = draw(st.integers(1, 3))
    n = draw(st.integers(3, 30))
    cap = {t: int(rng.integers(1, 7)) * 2 for t in TYPES[:k]}
    progress = draw(st.sampled_from([0.0, 0.1, 0.5]))

    churn = draw(st.integers(1, 3))
    return job_trace(rng, n, k, churn, 5, progress), cap



def _jobs_cluster(jobs, cap, order):
    k = len(cap)
    T = np.array([[jobs[i]["tp"].get(t, 0.0) for t in cap] for i in order])
    return (fa.Jobs(T, scale_factor=[jobs[i]["sf"] for i in order],
                    steps_remaining=[jobs[i]["steps"] for i in order],
                    elapsed=[jobs[i]["t"] for i in order]), fa.Cluster(dict(cap))) if k else None


def _check_sound(warm, cold):
    """The certificate's gap (in rho, relative to R) bounds how far the allocation's max rho
    is above R* <= the cold round's (up to the cold allocation's feasibility tolerance)."""
    if warm.stats.method.startswith("incremental"):
        excess = warm.objective - cold.objective
        assert excess <= (warm.certificate.relative_gap + FEAS_TOL) * warm.objective, (
            excess, warm.certificate)


def _check_feasible(res, jobs, cap):
    x = res.x
    sf = np.array([jobs[i]["sf"] for i in res.job_ids], dtype=float)
    workers = np.array([cap[t] for t in res.types], dtype=float)
    assert np.all(x >= 0)
    assert np.all(x.sum(axis=1) <= 1 + FEAS_TOL)
    assert np.all(sf @ x <= workers * (1 + FEAS_TOL))


@settings(max_examples=10, deadline=None, derandomize=True)
@given(traces())
def test_incremental_ftf_rounds_agree_with_cold_rounds(trace):
    rounds, cap = trace
    methods = []
    for jobs, warm, cold in warm_and_cold(rounds, cap):
        methods.append(warm.stats.method)
        assert warm.status == Status.OPTIMAL and warm.certificate.ok
        assert all(c.ok for c in warm.reduced.stage_certificates)
        assert abs(warm.objective - cold.objective) <= AGREE * abs(cold.objective)
        _check_sound(warm, cold)
        _check_feasible(warm, jobs, cap)
        # the objective is the allocation's own max rho, the cold round's definition
        assert warm.reduced.metric.max() == warm.objective
        assert np.allclose(fa.FinishTimeFairness(*_jobs_cluster(jobs, cap, warm.job_ids))
                           .rho(warm.effective_throughput), warm.reduced.metric, rtol=1e-12)
    # every job here can run and every type has workers: after the first (the normal round)
    # the kept models answer every round (a new model where free slots outnumbered the jobs)
    # (a new model starts from the last round's allocation: warm too)
    assert not methods[0].startswith("incremental"), methods
    assert methods[1:] == ["incremental+warm"] * (len(rounds) - 1), methods


def _gavel_like(n, seed):
    rng = np.random.default_rng(seed)
    T = rng.uniform(1.0, 10.0, (n, 3)) * np.array([3.0, 2.0, 1.0])
    jobs = {i: {"tp": dict(zip(TYPES, T[i].tolist())), "sf": 1,
                "steps": float(rng.uniform(1e3, 1e4)), "t": float(rng.integers(0, 5) * ROUND_S)}
            for i in range(n)}
    return jobs, {"v100": 4, "p100": 4, "k80": 4}


def test_a_failed_level_certificate_hands_over_to_the_normal_round(monkeypatch):
    jobs, cap = _gavel_like(12, 1)
    cap = dict.fromkeys(cap, 1)  # (contended: R* above R_lb, the Newton path's level LP)
    tp, per = allocate_args(jobs)
    p = fa.RoundPolicy("finish_time_fairness")
    p.allocate(tp, cap, **per)  # (the first round is the normal round)
    per["elapsed"] = {i: t + ROUND_S for i, t in per["elapsed"].items()}
    assert p.allocate(tp, cap, **per).stats.method == "incremental+warm"
    solve = KeptLP.solve

    def halved_duals(self, what):  # a wrong dual: the level certificate cannot pass
        x, y, it = solve(self, what)
        return x, (0.5 * y if "level" in what else y), it

    monkeypatch.setattr(KeptLP, "solve", halved_duals)
    per["steps_remaining"] = {i: 0.9 * s for i, s in per["steps_remaining"].items()}
    res = p.allocate(tp, cap, **per)
    assert res.stats.method != "incremental+warm" and res.certificate.ok
    assert res.stats.fallbacks[0].startswith("incremental->round: the Dinkelbach level did not "
                                             "certify"), res.stats.fallbacks
    cold = fa.solve_round("finish_time_fairness", tp, cap, **per)
    assert abs(res.objective - cold.objective) <= AGREE * cold.objective
    monkeypatch.setattr(KeptLP, "solve", solve)
    again = p.allocate(tp, cap, **{**per, "elapsed": {i: t + 1 for i, t in per["elapsed"].items()}})
    # (a model that failed is not kept: a new one from the last allocation)
    assert again.stats.path[-1] == "incremental-lp+crossover", again.stats.path


def test_a_failed_work_conserving_certificate_hands_over(monkeypatch):
    jobs, cap = _gavel_like(10, 2)
    tp, per = allocate_args(jobs)
    p = fa.RoundPolicy("finish_time_fairness")
    solve = KeptLP.solve

    def wrong_wc(self, what):
        x, y, it = solve(self, what)
        return x, (0.0 * y if "work-conserving" in what else y), it

    p.allocate(tp, cap, **per)  # (the first round is the normal round)
    monkeypatch.setattr(KeptLP, "solve", wrong_wc)
    per["elapsed"] = {i: t + ROUND_S for i, t in per["elapsed"].items()}
    res = p.allocate(tp, cap, **per)
    assert res.certificate.ok and res.stats.method != "incremental"
    assert res.stats.fallbacks[0].startswith("incremental->round: the certificate failed")


def test_rounds_it_cannot_answer_go_to_the_normal_round():
    jobs, cap = _gavel_like(8, 3)
    tp, per = allocate_args(jobs)
    p = fa.RoundPolicy("finish_time_fairness")
    first = p.allocate(tp, cap, **per)
    assert not first.stats.method.startswith("incremental") and not first.stats.fallbacks
    per["elapsed"] = {i: t + ROUND_S for i, t in per["elapsed"].items()}
    assert p.allocate(tp, cap, **per).stats.method == "incremental+warm"
    drained = p.allocate(tp, {**cap, "k80": 0}, **per)  # a drained type
    assert drained.stats.fallbacks[0] == ("incremental->round: an empty round or a drained "
                                          "type"), drained.stats.fallbacks
    assert drained.drained_types == ("k80",) and drained.certificate.ok
    moved = p.allocate(tp, {**cap, "k80": 6}, **per)  # other worker counts: the models go
    assert moved.stats.fallbacks[0] == ("incremental->round: the worker types or counts "
                                        "changed"), moved.stats.fallbacks
    per["elapsed"] = {i: t + ROUND_S for i, t in per["elapsed"].items()}
    assert p.allocate(tp, {**cap, "k80": 6}, **per).stats.path[-1] == "incremental-lp+crossover"
    # solve options besides tolerances: the normal round (the plan's applies)
    fast = fa.RoundPolicy("finish_time_fairness", method="fast").allocate(tp, cap, **per)
    assert not fast.stats.method.startswith("incremental")
    # identical jobs: the normal round's symmetry reduction
    same = {i: dict(jobs[0]) for i in range(8)}
    tp2, per2 = allocate_args(same)
    p2 = fa.RoundPolicy("finish_time_fairness")
    p2.allocate(tp2, cap, **per2)
    per2["steps_remaining"] = {i: 0.5 * v for i, v in per2["steps_remaining"].items()}
    twin = p2.allocate(tp2, cap, **per2)
    assert twin.stats.fallbacks[0].startswith("incremental->round: many identical jobs")
    # invalid input is still the normal round's InputError
    with pytest.raises(fa.InputError):
        p.allocate(tp, cap, **{**per, "steps_remaining": {i: -1.0 for i in jobs}})


@pytest.mark.parametrize("rate", [1e-9, 1.0, 1e4])
def test_rates_far_from_unit_scale_stay_incremental(rate):
    # the throughput rows are kept at unit scale (HiGHS' tolerances are absolute: at rates
    # of 1e-9 its second round was no proof and handed over)
    rng = np.random.default_rng(5)
    cap = {"v100": 4, "p100": 6, "k80": 8}

    def job(t):
        return {"tp": dict(zip(TYPES, (rng.uniform(1, 10, 3) * rate).tolist())), "sf": 1,
                "steps": float(rng.uniform(1e3, 1e4)), "t": t}

    jobs = {i: job(float(rng.integers(0, 20)) * ROUND_S) for i in range(40)}
    p = fa.RoundPolicy("finish_time_fairness")
    for r in range(3):
        if r:
            del jobs[min(jobs)]
            for j in jobs.values():
                j["steps"] *= 0.97
                j["t"] += ROUND_S
            jobs[max(jobs) + 1] = job(0.0)
        tp, per = allocate_args(jobs)
        warm = p.allocate(tp, cap, **per)
        cold = fa.solve_round("finish_time_fairness", tp, cap, **per)
        assert warm.stats.method == ("incremental+warm" if r else cold.stats.method), \
            warm.stats.fallbacks
        assert warm.certificate.ok
        assert abs(warm.objective - cold.objective) <= AGREE * cold.objective


@pytest.mark.parametrize("cut", [0.1, 10.0])
def test_a_round_far_from_the_last_ratio_is_certified_in_units_of_rho(cut):
    # the level rows' theta coefficients are set near the last ratio; when the optimum moves
    # far (every job's remaining steps cut or grown 10x) they are off, and the certificate's
    # gap must still be in units of rho (divided by min slope / c): a gap left in theta
    # units "certified" allocations above the optimum by more than the tolerance
    jobs, cap = _gavel_like(30, 6)
    p = fa.RoundPolicy("finish_time_fairness")
    for r in range(4):
        tp, per = allocate_args(jobs)
        warm = p.allocate(tp, cap, **per)
        cold = fa.solve_round("finish_time_fairness", tp, cap, **per)
        assert warm.certificate.ok
        assert abs(warm.objective - cold.objective) <= AGREE * cold.objective
        _check_sound(warm, cold)
        if r:
            assert warm.stats.method == "incremental+warm", warm.stats.fallbacks
        for i, j in jobs.items():
            j["steps"] *= cut if r == 1 and i % 2 else 1.0
            j["t"] += ROUND_S



class _Key:
    """A job id like Gavel's ``JobIdPair``: Python ``__hash__``/``__eq__``, a new object
    for the same job every round."""

    def __init__(self, a: int) -> None:
        self.a = a

    def __hash__(self) -> int:
        return hash(self.a)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Key) and self.a == other.a


def test_warm_rounds_with_re_created_and_reordered_keys_equal_int_keys():
    """A `RoundPolicy` trace keyed by re-created key objects (every round new objects; one
    round reversed, one round's order shuffled) gives the warm rounds of the same trace keyed
    by ints: the same slots, hence the same allocations (HiGHS is deterministic)."""
    rng = np.random.default_rng(11)
    trace = job_trace(rng, 30, 3, 2, 6, 0.05)
    cap = {"v100": 4, "p100": 4, "k80": 4}
    by_int = fa.RoundPolicy("finish_time_fairness")
    by_key = fa.RoundPolicy("finish_time_fairness")
    for r, jobs in enumerate(trace):
        order = list(jobs)
        if r == 3:
            order.reverse()
        elif r == 4:
            order = [order[i] for i in rng.permutation(len(order))]
        tp, per = allocate_args({i: jobs[i] for i in order})
        a = by_int.allocate(tp, cap, **per)
        keyed = {name: {_Key(i): v for i, v in d.items()} for name, d in per.items()}
        b = by_key.allocate({_Key(i): v for i, v in tp.items()}, cap, **keyed)
        assert a.stats.method == b.stats.method
        assert r == 0 or b.stats.method == "incremental+warm"
        np.testing.assert_array_equal(a.x, b.x)
        assert [k.a for k in b.job_ids] == list(a.job_ids)
