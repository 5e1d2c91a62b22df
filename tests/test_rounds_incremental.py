"""The incremental warm round of max-min fairness (#28 item 2, `fairalloc.rounds.incremental`).

`fairalloc.RoundPolicy("max_min_fairness")` keeps one HiGHS model per stage over the symmetry
classes of the jobs and changes it where classes arrived, left or changed size. Each
incremental round must agree with a cold `fairalloc.solve_round` on the same inputs within the
certificates' bounds and be certified on the original program; what it cannot reuse hands
over to the normal round through the plan (``stats.fallbacks``).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.errors import InputError
from fairalloc.results import Status
from fairalloc.tolerances import GAP_TOL

#: two certified optima each within GAP_TOL (relative) of the optimum differ by at most twice
AGREE = 2 * GAP_TOL
TYPES = ("v100", "p100", "k80")


def _equal_tp(T, sf, cap):
    """Each job's throughput under X^equal (the work-conserving stage's normaliser)."""
    return np.where((T > 0) & (sf[:, None] <= cap[None, :]), T, 0.0) @ (cap / cap.sum())


@st.composite
def traces(draw):
    """6 rounds of 3-40 jobs from 1-6 templates (classes form and change size) or all
    distinct, 1-3 types, 1-4 jobs leaving and arriving per round, weights 1 or 5."""
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    k = draw(st.integers(1, 3))
    n = draw(st.integers(3, 40))
    templates = draw(st.integers(0, 6))  # 0: every job its own rates
    cap = {t: int(rng.integers(1, max(2, n // 2))) * 2 for t in TYPES[:k]}
    rows = [{t: float(rng.uniform(1.0, 50.0)) for t in TYPES[:k]}
            for _ in range(max(templates, 1))]

    def job():
        tp = (dict(rows[int(rng.integers(templates))]) if templates else
              {t: float(rng.uniform(1.0, 50.0)) for t in TYPES[:k] if rng.random() < 0.8})
        return {"tp": tp or {TYPES[0]: 3.0}, "sf": int(rng.choice([1, 1, 2])),
                "w": float(rng.choice([1.0, 1.0, 5.0]))}

    active = {i: job() for i in range(n)}
    churn = draw(st.integers(1, 4))
    out, nxt = [], n
    for r in range(6):
        if r:
            for j in rng.choice(list(active), size=min(churn, len(active) - 1), replace=False):
                del active[j]
            for _ in range(churn):
                active[nxt] = job()
                nxt += 1
        out.append(dict(active))
    return out, cap


def _call(jobs):
    return ({j: v["tp"] for j, v in jobs.items()},
            {"scale_factor": {j: v["sf"] for j, v in jobs.items()},
             "weight": {j: v["w"] for j, v in jobs.items()}})


@settings(max_examples=6, deadline=None)
@given(traces())
def test_property_incremental_rounds_agree_with_cold(trace):
    rounds, cap = trace
    p = fa.RoundPolicy("max_min_fairness")
    c = np.array([float(v) for v in cap.values()])
    for i, jobs in enumerate(rounds):
        tp, per = _call(jobs)
        warm = p.allocate(tp, cap, **per)
        cold = fa.solve_round("max_min_fairness", tp, cap, **per)
        # every type present, every job runnable: every round is incremental, from the kept
        # model after the first
        assert warm.stats.method == ("incremental+warm" if i else "incremental"), warm.stats
        assert warm.warm == (i > 0) and not warm.stats.fallbacks
        assert warm.certificate.ok and warm.status == Status.OPTIMAL
        scale = max(abs(warm.objective), abs(cold.objective), 1e-12)
        assert abs(warm.objective - cold.objective) <= AGREE * scale, (i, warm.stats)
        # the work-conserving stage: the same total normalised throughput
        T = np.array([[tp[j].get(t, 0.0) for t in warm.types] for j in warm.job_ids])
        sf = np.array([float(jobs[j]["sf"]) for j in warm.job_ids])
        inv_eq = 1.0 / _equal_tp(T, sf, c)
        total_w, total_c = (T * warm.x).sum(axis=1) @ inv_eq, cold.effective_throughput @ inv_eq
        assert abs(total_w - total_c) <= AGREE * max(total_w, total_c)
        # feasible for every job of the original program: time, capacity, level
        x = warm.x
        assert np.all(x >= 0) and np.all(x.sum(axis=1) <= 1 + 1e-7)
        assert np.all(sf @ x <= c * (1 + 1e-7))
        assert not np.any(x[T == 0])
        np.testing.assert_allclose(warm.effective_throughput, (T * x).sum(axis=1))
        with pytest.raises(ValueError):
            warm.x[0, 0] = 1.0  # read-only


def _rounds(n=30, rounds=4, seed=3):
    rng = np.random.default_rng(seed)
    proto = [{t: float(rng.uniform(1, 50)) for t in TYPES} for _ in range(6)]
    active = {i: proto[i % 6] for i in range(n)}
    out, nxt = [], n
    for _ in range(rounds):
        out.append(dict(active))
        del active[next(iter(active))]
        active[nxt] = {t: float(rng.uniform(1, 50)) for t in TYPES}  # a new class
        nxt += 1
    return out


def _agrees_with_cold(r, jobs, up, **per):
    """``r`` certified, and the cold `fairalloc.solve_round`'s optimum of both stages (the
    level and the total normalised throughput) within the certificates' bounds."""
    cold = fa.solve_round("max_min_fairness", jobs, up, **per)
    assert r.certificate.ok and all(c.ok for c in r.reduced.stage_certificates)
    assert r.drained_types == cold.drained_types and r.unrunnable_jobs == cold.unrunnable_jobs
    assert abs(r.objective - cold.objective) <= AGREE * abs(cold.objective)
    c = np.array([float(v) for v in up.values()])
    T = np.array([[jobs[j].get(t, 0.0) for t in r.types] for j in r.job_ids])
    sf = np.ones(len(jobs)) if "scale_factor" not in per else np.array(
        [float(per["scale_factor"][j]) for j in r.job_ids])
    eq = _equal_tp(T, sf, c)
    run = eq > 0
    total_w = (T * r.x).sum(axis=1)[run] @ (1.0 / eq[run])
    total_c = cold.effective_throughput[run] @ (1.0 / eq[run])
    assert abs(total_w - total_c) <= AGREE * max(total_w, total_c)
    drained = np.array([t in r.drained_types for t in r.types])
    assert not r.x[:, drained].any() and not r.prices[drained].any()
    for j in r.unrunnable_jobs:
        assert not r.x[r.job_ids.index(j)].any()
    assert np.all(sf @ r.x <= c * (1 + 1e-7))


def test_a_type_set_change_builds_a_new_model():
    # another type set: the round builds a new model (the kept one is the reduced
    # program's) and sets the old one aside; back to the old types, the old model is warm
    rounds = _rounds(rounds=5)
    ups = [{"v100": 4, "p100": 3, "k80": 5}, {"v100": 4, "p100": 3, "k80": 5},
           {"v100": 4, "p100": 3, "k80": 5, "a100": 2},   # a new type
           {"v100": 4, "p100": 3, "k80": 5, "a100": 2}, {"v100": 4, "p100": 3, "k80": 5}]
    p = fa.RoundPolicy("max_min_fairness")
    out = [p.allocate(jobs, up) for jobs, up in zip(rounds, ups)]
    assert [r.stats.method for r in out] == ["incremental", "incremental+warm", "incremental",
                                             "incremental+warm", "incremental+warm"]
    assert not any(r.stats.fallbacks for r in out)
    for r, jobs, up in zip(out, rounds, ups):
        _agrees_with_cold(r, jobs, up)


def test_worker_counts_and_drained_types_keep_the_incremental_round():
    rounds = _rounds(rounds=5)
    ups = [{"v100": 4, "p100": 3, "k80": 5}, {"v100": 4, "p100": 0, "k80": 5},
           {"v100": 4, "p100": 0, "k80": 5}, {"v100": 4, "p100": 3, "k80": 5},
           {"v100": 6, "p100": 3, "k80": 5}]
    p = fa.RoundPolicy("max_min_fairness")
    out = [p.allocate(jobs, up) for jobs, up in zip(rounds, ups)]
    # (the P100s back: the model set aside is warm; other V100 counts: a new model)
    assert [r.stats.method for r in out] == ["incremental", "incremental", "incremental+warm",
                                             "incremental+warm", "incremental"]
    assert not any(r.stats.fallbacks for r in out)
    assert [r.drained_types for r in out] == [(), ("p100",), ("p100",), (), ()]
    assert out[2].reduced.types == ("v100", "k80") and out[2].prices[1] == 0.0
    for r, jobs, up in zip(out, rounds, ups):
        _agrees_with_cold(r, jobs, up)


def test_a_drained_type_and_unrunnable_jobs_get_the_warm_round():
    # (#28 item 3) a cluster with a drained node: the rounds are incremental, warm after the
    # first, on the present types; a job that could only run on the drained type, or whose
    # gang fits no present type, gets nothing and is reported, as by solve_round
    rounds = _rounds(rounds=4)
    up = {"v100": 4, "p100": 0, "k80": 2}
    p = fa.RoundPolicy("max_min_fairness")
    for i, jobs in enumerate(rounds):
        jobs = dict(jobs)
        jobs["only-p100"] = {"p100": 30.0}
        jobs[f"gang-{i}"] = {"v100": 20.0, "k80": 9.0}   # its gang (8) fits no present type
        sf = dict.fromkeys(jobs, 1) | {f"gang-{i}": 8, "two": 2}
        jobs["two"] = {"k80": 7.0, "p100": 12.0}
        sf = {j: sf.get(j, 1) for j in jobs}
        r = p.allocate(jobs, up, scale_factor=sf)
        assert r.stats.method == ("incremental+warm" if i else "incremental"), r.stats
        assert not r.stats.fallbacks and r.warm == (i > 0)
        assert r.drained_types == ("p100",)
        assert r.unrunnable_jobs == ("only-p100", f"gang-{i}")
        assert r.job_allocation["only-p100"] == {"v100": 0.0, "p100": 0.0, "k80": 0.0}
        assert r.x[r.job_ids.index("two")].sum() > 0
        _agrees_with_cold(r, jobs, up, scale_factor=sf)


@settings(max_examples=6, deadline=None)
@given(traces(), st.lists(st.integers(0, 3), min_size=6, max_size=6))
def test_property_rounds_with_drained_types_agree_with_cold(trace, drain):
    # a type drained in some rounds (drain[i] < k: that type has 0 workers in round i): every
    # round is incremental and agrees with a cold solve_round on the reduced program
    rounds, cap = trace
    p = fa.RoundPolicy("max_min_fairness")
    types = list(cap)
    for i, jobs in enumerate(rounds):
        up = {t: (0 if drain[i] == n else c) for n, (t, c) in enumerate(cap.items())}
        tp, per = _call(jobs)
        r = p.allocate(tp, up, **per)
        assert r.drained_types == tuple(t for t in types if up[t] == 0)
        if len(r.unrunnable_jobs) == len(jobs):  # no job can run: the normal round's answer
            assert r.stats.fallbacks and not r.x.any()
            continue
        assert r.stats.method.startswith("incremental") and not r.stats.fallbacks
        _agrees_with_cold(r, tp, up, **per)


def test_options_it_cannot_honour_use_the_normal_round():
    rounds = _rounds()
    cap = {"v100": 4, "p100": 3, "k80": 5}
    for kw in ({"method": "highs"}, {"method": "fast"}, {"backend": "clarabel"}):
        p = fa.RoundPolicy("max_min_fairness", **kw)
        for jobs in rounds:
            r = p.allocate(jobs, cap)
            assert not r.stats.method.startswith("incremental") and not r.stats.fallbacks
    # the defaults spelled out and the one-stage program are honoured (#28)
    for kw in ({"work_conserving": False}, {"work_conserving": True}, {"backend": "highs"},
               {"method": "auto"}):
        p = fa.RoundPolicy("max_min_fairness", **kw)
        out = [p.allocate(jobs, cap) for jobs in rounds]
        assert out[-1].stats.method == "incremental+warm", kw
        assert out[-1].stats.solves == (1 if kw.get("work_conserving") is False else 2), kw
    with pytest.raises(InputError, match="gap_tol"):  # and checked, as by the normal round
        fa.RoundPolicy("max_min_fairness", gap_tol=2.0).allocate(rounds[0], cap)
    p = fa.RoundPolicy("max_min_fairness", gap_tol=1e-5)  # a tolerance is honoured
    out = [p.allocate(jobs, cap) for jobs in rounds]
    assert out[-1].stats.method == "incremental+warm"
    assert out[-1].certificate.gap_tol == 1e-5


def test_an_invalid_round_raises_and_the_next_one_is_incremental_again():
    rounds = _rounds()
    cap = {"v100": 4, "p100": 3, "k80": 5}
    p = fa.RoundPolicy("max_min_fairness")
    p.allocate(rounds[0], cap)
    bad = dict.fromkeys(rounds[1], 1.0)
    bad[next(iter(bad))] = -1.0
    with pytest.raises(InputError, match="weight"):
        p.allocate(rounds[1], cap, weight=bad)
    r = p.allocate(rounds[1], cap)
    assert r.stats.method == "incremental+warm" and r.certificate.ok
    p.reset()
    assert p.allocate(rounds[2], cap).stats.method == "incremental"  # reset: a new model


def test_a_copied_policy_builds_its_own_model_and_unread_data_is_still_checked():
    import copy
    import pickle

    rounds = _rounds()
    cap = {"v100": 4, "p100": 3, "k80": 5}
    p = fa.RoundPolicy("max_min_fairness")
    p.allocate(rounds[0], cap)
    for q in (copy.deepcopy(p), pickle.loads(pickle.dumps(p))):  # (HiGHS is not copied)
        r = q.allocate(rounds[1], cap)
        assert r.stats.method == "incremental" and r.certificate.ok
    assert p.allocate(rounds[1], cap).stats.method == "incremental+warm"
    # steps_remaining is not read by max-min fairness but checked as on main
    steps = dict.fromkeys(rounds[2], 10.0)
    steps[next(iter(steps))] = -1.0
    with pytest.raises(InputError, match="steps_remaining"):
        p.allocate(rounds[2], cap, steps_remaining=steps)
    r = p.allocate(rounds[2], cap, steps_remaining=dict.fromkeys(rounds[2], 10.0))
    assert r.stats.fallbacks == ("incremental->round: steps_remaining given (the normal "
                                 "round checks it)",) and r.certificate.ok


def test_a_failed_kept_solve_hands_over_and_the_model_is_rebuilt(monkeypatch):
    from fairalloc.backends.kept import KeptLP
    from fairalloc.errors import SolverError

    rounds = _rounds(rounds=4)
    cap = {"v100": 4, "p100": 3, "k80": 5}
    p = fa.RoundPolicy("max_min_fairness")
    p.allocate(rounds[0], cap)
    solve = KeptLP.solve

    def fails(self, what):
        raise SolverError(f"the kept {what} LP ended Unknown", backend="highs")

    monkeypatch.setattr(KeptLP, "solve", fails)  # (a public seam: HiGHS giving up)
    r = p.allocate(rounds[1], cap)
    assert r.stats.fallbacks[0].startswith("incremental->round: ") and r.certificate.ok
    assert "Unknown" in r.stats.fallbacks[0]
    monkeypatch.setattr(KeptLP, "solve", solve)
    assert p.allocate(rounds[2], cap).stats.method == "incremental"  # a new model
    assert p.allocate(rounds[3], cap).stats.method == "incremental+warm"


def test_a_model_of_mostly_free_slots_is_rebuilt_compact():
    rng = np.random.default_rng(4)
    cap = {"v100": 8, "p100": 8, "k80": 8}
    many = {i: {t: float(rng.uniform(1, 50)) for t in TYPES} for i in range(30)}
    few = {i: many[i] for i in range(3)}
    p = fa.RoundPolicy("max_min_fairness")
    out = [p.allocate(jobs, cap) for jobs in (many, few, few | {99: many[5]})]
    assert [r.stats.method for r in out] == ["incremental", "incremental+warm", "incremental"]
    assert all(r.certificate.ok for r in out)


def _two_models(costs):
    """Two KeptLPs of one shape (``max c . x`` s.t. ``x_0 + x_1 + x_2 <= 4``, ``x_0 - x_1 <= 1``,
    ``0 <= x <= 3``), costs ``costs[0]`` and ``costs[1]``."""
    from fairalloc.backends.kept import KeptLP

    out = []
    for c in costs:
        lp = KeptLP()
        lp.add_cols(np.asarray(c, dtype=float), np.zeros(3), np.full(3, 3.0),
                    np.zeros(3, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0))
        lp.add_rows(np.array([-np.inf, -np.inf]), np.array([4.0, 1.0]),
                    np.array([0, 3], dtype=np.int32), np.array([0, 1, 2, 0, 1], dtype=np.int32),
                    np.array([1.0, 1.0, 1.0, 1.0, -1.0]))
        out.append(lp)
    return out


def test_a_model_started_from_anothers_optimal_basis():
    # (#28 item 2: the first round's work-conserving model starts from the level model's
    # optimum by the primal simplex.) The same costs: that basis is optimal, no step is made
    a, b = _two_models([(1.0, 2.0, 0.5), (1.0, 2.0, 0.5)])
    xa, ya, _ = a.solve("a")
    b.take_basis(a)
    xb, yb, steps = b.solve("b")
    assert steps == 0 and np.allclose(xb, xa) and np.allclose(yb, ya)
    # other costs: the answer is the optimum of b's own costs (= a cold solve of them)
    a, b = _two_models([(1.0, 2.0, 0.5), (3.0, 1.0, 2.0)])
    a.solve("a")
    b.take_basis(a)
    cold = _two_models([(3.0, 1.0, 2.0)])[0].solve("cold")
    got = b.solve("b")
    assert np.isclose(np.dot((3.0, 1.0, 2.0), got[0]), np.dot((3.0, 1.0, 2.0), cold[0]))
    assert np.allclose(got[1], cold[1])  # (a unique dual: both rows bind, x_2 at 3)


def test_the_first_rounds_work_conserving_stage_starts_from_the_level_basis():
    # (#28 item 2) a new model: the level stage's basis seeds the work-conserving one; the
    # round agrees with a cold solve_round and is certified (the trace property covers more)
    from fairalloc.backends.kept import KeptLP

    jobs = _rounds(rounds=1)[0]
    cap = {"v100": 4, "p100": 3, "k80": 5}
    taken = []
    original = KeptLP.take_basis

    def spy(self, other):
        taken.append(other)
        original(self, other)

    pol = fa.RoundPolicy("max_min_fairness")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(KeptLP, "take_basis", spy)  # (a public seam, observed, not replaced)
        r = pol.allocate(jobs, cap)
        r2 = pol.allocate(_rounds(rounds=2)[1], cap)
    cold = fa.solve_round("max_min_fairness", jobs, cap)
    assert r.stats.method == "incremental" and len(taken) == 1  # warm rounds: own bases
    assert r2.stats.method == "incremental+warm"
    assert r.certificate.ok and all(c.ok for c in r.reduced.stage_certificates)
    assert abs(r.objective - cold.objective) <= AGREE * abs(cold.objective)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_the_certificate_per_class_is_the_job_by_job_one(seed):
    # the incremental round evaluates its certificates once per exact class, weighted by the
    # class sizes; on the jobs themselves (each member with its class's data, allocation and
    # duals) every value is the same up to the order of summation (<= 28 terms: ~1e-14)
    from fairalloc.rounds.incremental import _certificates

    rng = np.random.default_rng(seed)
    c, k = int(rng.integers(1, 8)), int(rng.integers(1, 4))
    m = rng.integers(1, 5, c).astype(float)
    Ta = np.where(rng.random((c, k)) < 0.8, rng.uniform(1, 50, (c, k)), 0.0)
    Ta[:, 0] = np.maximum(Ta[:, 0], 1.0)
    s, cap = rng.choice([1.0, 2.0], c), rng.integers(1, 6, k).astype(float)
    eq = Ta @ (cap / cap.sum())
    coef = s / (rng.choice([1.0, 5.0], c) * eq)
    x = np.where(Ta > 0, rng.uniform(0, 1.0 / k, (c, k)), 0.0)
    y1 = (-rng.random(k), -rng.random(c), rng.random(c))
    y2 = (-rng.random(k), -rng.random(c), rng.random(c))
    low = 0.9 * float((coef * (Ta * x).sum(axis=1)).min())
    classes = _certificates(Ta, s, coef, eq, m, cap, x, y1, y2, low, GAP_TOL, 1e-7)
    inv = np.repeat(np.arange(c), m.astype(int))
    jobs = _certificates(Ta[inv], s[inv], coef[inv], eq[inv], np.ones(inv.size), cap, x[inv],
                         tuple(v if i == 0 else v[inv] for i, v in enumerate(y1)),
                         tuple(v if i == 0 else v[inv] for i, v in enumerate(y2)), low,
                         GAP_TOL, 1e-7)
    for a, b in zip(classes, jobs):
        for f in ("primal_value", "dual_bound", "gap", "primal_residual", "dual_residual"):
            assert getattr(a, f) == pytest.approx(getattr(b, f), rel=1e-12, abs=1e-12), f


@settings(max_examples=6, deadline=None)
@given(traces(), st.lists(st.integers(0, 3), min_size=6, max_size=6))
def test_property_one_stage_rounds_agree_with_the_normal_one_stage_round(trace, drain):
    # work_conserving=False (Gavel's one-stage program, #28): one kept model, warm after the
    # first round (or after a change of the present types), certified on its one stage, with
    # the level of the normal round's one stage (the whole LP)
    rounds, cap = trace
    p = fa.RoundPolicy("max_min_fairness", work_conserving=False)
    for i, jobs in enumerate(rounds):
        up = {t: (0 if drain[i] == n else c) for n, (t, c) in enumerate(cap.items())}
        tp, per = _call(jobs)
        r = p.allocate(tp, up, **per)
        ref = fa.solve_round("max_min_fairness", tp, up, method="highs", work_conserving=False,
                             **per)
        assert r.drained_types == ref.drained_types and r.unrunnable_jobs == ref.unrunnable_jobs
        if len(r.unrunnable_jobs) == len(jobs):  # no job can run: the normal round's answer
            assert not r.x.any()
            continue
        assert r.stats.method.startswith("incremental") and not r.stats.fallbacks
        assert r.stats.solves == 1 and len(r.reduced.stage_certificates) == 1
        assert r.certificate.ok and ref.certificate.ok
        scale = max(abs(r.objective), abs(ref.objective), 1e-12)
        assert abs(r.objective - ref.objective) <= AGREE * scale, (i, r.stats)
        c = np.array([float(v) for v in up.values()])
        sf = np.array([float(jobs[j]["sf"]) for j in r.job_ids])
        assert np.all(r.x >= 0) and np.all(r.x.sum(axis=1) <= 1 + 1e-7)
        assert np.all(sf @ r.x <= c * (1 + 1e-7))
