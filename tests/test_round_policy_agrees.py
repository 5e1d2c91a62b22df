"""`fairalloc.RoundPolicy` (warm, kept state) and `fairalloc.solve_round` agree on every input
(diff39): on good dict inputs over a few rounds with churn, the same certified answer (the
objective within both certificates' gap tolerances, the same rows, columns, drained types and
unrunnable jobs, an allocation feasible within the certificates' feasibility tolerance); on an
input with one corrupted entry, the same `fairalloc.InputError` (message, argument, index), and
neither mutates its inputs.

The discrepancies this module found in the per-job readers (rounds/readers.py) and
``_solve_arrays`` (D1-D3, D5, D7, D8) were fixed by dfix39: both paths read the per-job arguments
the policy reads (`fairalloc.rounds.readers.READS`), name a mapping's entry by job id, and
check them in an empty round too.
"""

from __future__ import annotations

import copy
import math
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import fairalloc as fa

# per policy: the per-job arguments it reads and its fixed settings
USES: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "max_min_fairness": (("scale_factor", "weight"), {}),
    "water_filling": (("scale_factor", "weight", "entities", "order"),
                      {"entity_weights": {"e0": 1.0, "e1": 2.0, "e2": 1.0}}),
    "finish_time_fairness": (("scale_factor", "steps_remaining", "elapsed"), {}),
    "min_makespan": (("scale_factor", "steps_remaining"), {}),
    "shortest_job_first": (("scale_factor", "steps_remaining"), {}),
    "max_total_throughput": (("scale_factor",), {}),
    "fifo": (("scale_factor", "order"), {}),
    "min_cost": (("scale_factor", "steps_remaining", "slo"),
                 {"cost": {"t0": 3.0, "t1": 2.0, "t2": 1.5, "t3": 1.0}}),
    "fisher_market": (("weight",), {}),
    "themis": (("scale_factor", "steps_remaining", "elapsed"), {}),
}
#: the policies whose rounds carry each job's isolated time (`fairalloc.rounds.state`)
FTF = ("finish_time_fairness", "themis")

RATES = st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.5, 7.0])


@st.composite
def rounds(draw: Any, policy: str, count: int) -> list[dict[str, Any]]:
    """``count`` rounds (keyword arguments of a round, ``workers`` included) of 2-12 jobs on
    1-4 types (some drained) with churn: jobs leave and arrive, their order changes, a type is
    drained or restored, a round repeats the previous one (reuse), steps go down and elapsed up.
    Job ids are str, int or tuple labels."""
    k = draw(st.integers(1, 4))
    workers = {f"t{i}": draw(st.integers(0, 3)) for i in range(k)}
    workers[f"t{draw(st.integers(0, k - 1))}"] = draw(st.integers(1, 3))  # one present type
    label = draw(st.sampled_from([lambda i: f"j{i}", lambda i: i, lambda i: ("job", i)]))
    uses = USES[policy][0]
    jobs: dict[Any, dict[str, Any]] = {}
    next_id = 0
    out: list[dict[str, Any]] = []
    for _ in range(count):
        if out and draw(st.integers(0, 4)) == 0:  # the same round again
            out.append(copy.deepcopy(out[-1]))
            continue
        for j in draw(st.lists(st.sampled_from(list(jobs)), unique=True)) if jobs else []:
            if len(jobs) > 2:
                del jobs[j]
        for _ in range(draw(st.integers(max(0, 2 - len(jobs)), max(1, 10 - len(jobs))))):
            j = label(next_id)
            next_id += 1
            jobs[j] = {"rates": {t: draw(RATES) for t in workers if draw(st.booleans())}
                       or {"t0": 1.0},
                       "scale_factor": draw(st.sampled_from([1, 1, 2])),
                       "weight": draw(st.sampled_from([0.5, 1.0, 2.0])),
                       "steps_remaining": float(draw(st.integers(10, 1000))),
                       "elapsed": float(draw(st.integers(0, 100))),
                       "order": float(next_id), "entities": f"e{next_id % 3}",
                       "slo": math.inf}
        if out and draw(st.booleans()):  # the scheduler lists the jobs in another order
            jobs = dict(reversed(list(jobs.items())))
        if out and draw(st.integers(0, 3)) == 0:  # a type drained or restored
            t = f"t{draw(st.integers(0, k - 1))}"
            workers = {**workers, t: 0 if workers[t] else 2}
        for spec in jobs.values():  # progress between rounds
            spec["steps_remaining"] = max(1.0, spec["steps_remaining"] - 5.0)
            spec["elapsed"] += 10.0
        kw = {name: {j: spec[name] for j, spec in jobs.items()} for name in uses}
        out.append({"throughput": {j: dict(spec["rates"]) for j, spec in jobs.items()},
                    "workers": dict(workers), **kw})
    return out


def _feasible(r: Any, workers: dict[str, int], sf: dict[str, int] | None) -> None:
    """``r.x`` within the certificate's feasibility tolerance: non-negative, each job's time at
    most 1, each type's workers not exceeded; zero on drained types and unrunnable jobs."""
    tol = r.certificate.feas_tol
    x = r.x
    assert np.all(x >= -tol)
    if r.policy == "fisher_market":  # amounts bought: supply per type
        assert np.all(x.sum(axis=0) <= np.array(list(workers.values())) * (1 + tol) + tol)
        return
    assert np.all(x.sum(axis=1) <= 1 + tol)
    s = np.array([1.0 if sf is None else sf[j] for j in r.job_ids])
    cap = np.array([workers.get(t, 0) for t in r.types], dtype=float)
    assert np.all((s[:, None] * x).sum(axis=0) <= cap * (1 + tol) + tol)
    for t in r.drained_types:
        assert np.all(x[:, r.types.index(t)] == 0)
    for j in r.unrunnable_jobs:
        assert np.all(x[r.job_ids.index(j)] == 0)


def _agree(r: Any, ref: Any, workers: dict[str, int], kw: dict[str, Any]) -> None:
    assert (r.job_ids, r.types) == (ref.job_ids, ref.types)
    assert (r.drained_types, r.unrunnable_jobs) == (ref.drained_types, ref.unrunnable_jobs)
    assert r.status == ref.status
    assert r.certificate.ok and ref.certificate.ok
    scale = max(1.0, abs(r.objective), abs(ref.objective))
    tol = (r.certificate.gap_tol + ref.certificate.gap_tol) * scale
    assert abs(r.objective - ref.objective) <= tol, (r.objective, ref.objective)
    for res in (r, ref):
        _feasible(res, workers, kw.get("scale_factor"))


@pytest.mark.parametrize("policy", sorted(USES))
def test_round_policy_equals_solve_round_on_good_rounds(policy):
    @settings(max_examples=6)
    @given(rounds(policy, 3))
    def check(rs):
        settings_ = USES[policy][1]
        pol = fa.RoundPolicy(policy, **settings_)
        for kw in rs:
            before = repr(kw)
            r = pol.allocate(**kw)
            ref_kw = dict(kw)
            if policy in FTF:  # the isolated time the policy charged this round
                ref_kw["isolated_elapsed"] = dict(pol.isolated_elapsed)
            ref = fa.solve_round(policy, **settings_, **ref_kw)
            assert repr(kw) == before  # neither mutated its inputs
            _agree(r, ref, kw["workers"], kw)

    check()


@pytest.mark.parametrize("policy", ["max_min_fairness", "finish_time_fairness", "themis",
                                    "min_makespan", "fisher_market"])
def test_a_refused_round_leaves_no_trace(policy):
    # a round that raises InputError between two good rounds changes nothing a later round
    # reads: the kept models, bases and isolated times answer as a policy that never saw it
    uses, settings_ = USES[policy]

    @settings(max_examples=4)
    @given(rounds(policy, 3), st.sampled_from(uses), st.sampled_from([-5.0, "x", None]))
    def check(rs, arg, value):
        r1, r2, r3 = rs[:3]
        assume(not _empty(policy, r2["workers"], r2))  # (an empty round reads no values: D5)
        bad = {**r2, arg: dict(r2[arg])}
        job = next(iter(bad[arg]))
        if value is None:
            del bad[arg][job]
        else:
            bad[arg][job] = value
        pol, clean = fa.RoundPolicy(policy, **settings_), fa.RoundPolicy(policy, **settings_)
        pol.allocate(**r1)
        clean.allocate(**r1)
        with pytest.raises(fa.InputError):
            pol.allocate(**bad)
        for kw in (r2, r3):
            r, ref = pol.allocate(**kw), clean.allocate(**kw)
            assert pol.isolated_elapsed == clean.isolated_elapsed
            _agree(r, ref, kw["workers"], kw)

    check()


def _plan_job(i: int, gang: int = 1) -> fa.PlanJob:
    return fa.PlanJob(workers=gang, total_epochs=20 + 5 * i, done_epochs=i, ftf=1.0 + 0.2 * i,
                      regimes=[(60.0, 50)])


SHOCKWAVE = {"plan_options": {"rounds": 4}}  # (replan_every=1: every round a fresh plan)


def test_shockwave_round_policy_equals_solve_round():
    workers = {"gpu": 2, "k80": 0}
    pol = fa.RoundPolicy("shockwave", **SHOCKWAVE)
    for ids in (["a", "b", "c"], ["b", "c", "d"], ["c", "d", "e", "f"], ["c", "d", "e", "f"]):
        kw = {"throughput": {j: {"gpu": 1.0 + k % 2} for k, j in enumerate(ids)},
              "plan_jobs": {j: _plan_job(k, 1 + (k == 2)) for k, j in enumerate(ids)}}
        r = pol.allocate(workers=workers, **kw)
        ref = fa.solve_round("shockwave", workers=workers, **SHOCKWAVE, **kw)
        _agree(r, ref, workers, {"scale_factor": {j: p.workers for j, p in
                                                  kw["plan_jobs"].items()}})


@pytest.mark.parametrize("how", ["missing", "not a PlanJob", "extra", "rate nan", "rate str",
                                 "rate nested"])
def test_shockwave_corrupted_entry_gives_the_same_error(how):
    workers = {"gpu": 2, "k80": 0}
    kw = {"throughput": {j: {"gpu": 1.0} for j in "abc"},
          "plan_jobs": {j: _plan_job(k) for k, j in enumerate("abc")}}
    if how == "missing":
        del kw["plan_jobs"]["b"]
    elif how == "not a PlanJob":
        kw["plan_jobs"]["b"] = "x"
    elif how == "extra":
        kw["plan_jobs"]["z"] = _plan_job(3)
    else:
        kw["throughput"]["b"]["gpu"] = {"rate nan": math.nan, "rate str": "x",
                                        "rate nested": [1.0, 2.0]}[how]
    before = repr(kw)
    a = _outcome(lambda: fa.RoundPolicy("shockwave", **SHOCKWAVE).allocate(workers=workers, **kw))
    b = _outcome(lambda: fa.solve_round("shockwave", workers=workers, **SHOCKWAVE, **kw))
    assert repr(kw) == before
    _assert_same(a, b)


# --------------------------------------------------------------------------------------------
# one corrupted entry
# --------------------------------------------------------------------------------------------
def _outcome(call: Any) -> tuple[str, Any]:
    try:
        r = call()
    except fa.InputError as exc:
        return "error", (str(exc), exc.argument, exc.index)
    return "ok", r


BASE_WORKERS = {"t0": 2, "t1": 1, "t2": 0}


def _base(uses: tuple[str, ...]) -> dict[str, Any]:
    tp = {f"j{i}": {"t0": 1.0 + i, "t1": 2.0 + (i % 2), "t2": 1.0} for i in range(4)}
    tp["j1"].pop("t1")
    per = {"scale_factor": {j: 1 for j in tp}, "weight": {j: 1.0 + i for i, j in enumerate(tp)},
           "steps_remaining": {j: 100.0 * (i + 1) for i, j in enumerate(tp)},
           "elapsed": {j: 10.0 * i for i, j in enumerate(tp)},
           "order": {j: float(i) for i, j in enumerate(tp)},
           "entities": {j: f"e{i % 2}" for i, j in enumerate(tp)},
           "slo": {j: math.inf for j in tp}}
    return {"throughput": tp, **{name: per[name] for name in uses}}


def _both(policy: str, kw: dict[str, Any], warm: bool) -> tuple[Any, Any]:
    """(RoundPolicy's outcome, solve_round's) on ``kw``; RoundPolicy after one good round when
    ``warm``; asserts that neither mutated ``kw``."""
    uses, settings_ = USES[policy]
    before = repr(kw)
    pol = fa.RoundPolicy(policy, **settings_)
    if warm:
        pol.allocate(workers=BASE_WORKERS, **_base(uses))
    a = _outcome(lambda: pol.allocate(workers=BASE_WORKERS, **kw))
    b = _outcome(lambda: fa.solve_round(policy, workers=BASE_WORKERS, **settings_, **kw))
    assert repr(kw) == before
    return a, b


def _assert_same(a: Any, b: Any) -> None:
    assert a[0] == b[0], (a, b)
    if a[0] == "error":
        assert a[1] == b[1]


# corruptions of any kind (the value errors: D1, D2 below)
AGREED = {"str": "x", "bool": True, "nested": [1.0, 2.0], "missing": None, "extra": None}
RATE_BAD = {"neg": -5.0, "nan": math.nan, "inf": math.inf, "bool": True, "str": "x",
            "nested": [1.0, 2.0], "missing": None, "wrong type name": None}


def _empty(policy: str, workers: dict[str, int], kw: dict[str, Any]) -> bool:
    """Whether no job can run on a present type (where its gang fits): an empty round."""
    sf = {} if policy == "fisher_market" else kw.get("scale_factor", {})
    return not any(rate > 0 and workers.get(t, 0) >= sf.get(j, 1)
                   for j, row in kw["throughput"].items() for t, rate in row.items())


def _corrupt(kw: dict[str, Any], arg: str, how: str, value: Any, job: str) -> None:
    if arg == "throughput":
        if how == "missing":
            kw["throughput"][job] = {}
        elif how == "wrong type name":
            kw["throughput"][job]["a100"] = 3.0
        else:
            kw["throughput"][job]["t0"] = value
    elif how == "missing":
        del kw[arg][job]
    elif how == "extra":
        kw[arg]["zz"] = next(iter(kw[arg].values()))
    else:
        kw[arg][job] = value


@pytest.mark.parametrize("policy", sorted(USES))
def test_one_corrupted_entry_gives_the_same_error(policy):
    uses = USES[policy][0]
    bad = [(a, h, v) for a in uses for h, v in AGREED.items()
           if not (a == "entities" and h in ("str", "bool"))]  # (any label is an entity)
    bad += [("throughput", h, v) for h, v in RATE_BAD.items()]

    @settings(max_examples=10)
    @given(rounds(policy, 2), st.sampled_from(bad), st.integers(0, 11), st.booleans())
    def check(rs, corruption, pos, warm):
        first, kw = rs
        assume(not _empty(policy, kw["workers"], kw))  # (an empty round: D5 below)
        arg, how, value = corruption
        kw = copy.deepcopy(kw)
        ids = list(kw["throughput"])
        _corrupt(kw, arg, how, value, ids[pos % len(ids)])
        before = repr(kw)
        pol = fa.RoundPolicy(policy, **USES[policy][1])
        if warm:  # the warm path: a good round first (jobs leave and arrive in between)
            pol.allocate(**first)
        a = _outcome(lambda: pol.allocate(**kw))
        b = _outcome(lambda: fa.solve_round(policy, **USES[policy][1], **kw))
        assert repr(kw) == before
        _assert_same(a, b)

    check()


@pytest.mark.parametrize("warm", [False, True])
def test_ftf_warm_round_refuses_weights_too_far_apart_as_solve_round(warm):
    # diff39 D4: weights 1e308 and 1 (ratio below Jobs' 1e-300) raised InputError from
    # solve_round and a cold RoundPolicy round, but the kept finish-time fairness model
    # (rounds/incremental_ftf.py) answered the warm round: it now declines to the normal round
    workers = {"t0": 2}
    kw = {"throughput": {"a": {"t0": 1.0}, "b": {"t0": 2.0}},
          "steps_remaining": {"a": 100.0, "b": 50.0}, "elapsed": {"a": 0.0, "b": 0.0}}
    pol = fa.RoundPolicy("finish_time_fairness")
    if warm:  # a first round; the kept model answers the next one (main: it did, with these)
        pol.allocate(workers=workers, **kw)
    kw["weight"] = {"a": 1e308, "b": 1.0}
    a = _outcome(lambda: pol.allocate(workers=workers, **kw))
    b = _outcome(lambda: fa.solve_round("finish_time_fairness", workers=workers, **kw))
    assert b[0] == "error" and b[1][1] == "weight"
    _assert_same(a, b)


@pytest.mark.parametrize("arg", ["steps_remaining", "elapsed", "isolated_elapsed"])
def test_ftf_warm_round_on_extreme_data_warns_as_solve_round(arg):
    # diff39 D6: a value of 1e300 made the kept finish-time fairness model (warm rounds) emit
    # numpy RuntimeWarnings (overflow, divide by zero) before it declined to the normal round;
    # solve_round's round emits none (under -W error: a RuntimeWarning raised from RoundPolicy)
    workers = {"t0": 1, "t1": 2}
    kw = {"throughput": {j: {"t0": 1.0 + i, "t1": 2.0} for i, j in enumerate("abc")},
          "steps_remaining": dict.fromkeys("abc", 100.0), "elapsed": dict.fromkeys("abc", 10.0)}
    pol = fa.RoundPolicy("finish_time_fairness")
    pol.allocate(workers=workers, **kw)
    kw[arg] = {**kw.get(arg, dict.fromkeys("abc", 10.0)), "b": 1e300}
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        ref = fa.solve_round("finish_time_fairness", workers=workers, **kw)
        r = pol.allocate(workers=workers, **kw)
    ref = fa.solve_round("finish_time_fairness", workers=workers,
                         **{**kw, "isolated_elapsed": dict(pol.isolated_elapsed)})
    _agree(r, ref, workers, kw)


@pytest.mark.parametrize(("policy", "bad"), [
    ("min_cost", {"cost": {"t0": 1.0}}), ("min_cost", {"cost": {"t0": -1.0, "t1": 1, "t2": 1}}),
    ("water_filling", {"entity_weights": {"e0": -1.0, "e1": 1.0}}),
    ("water_filling", {"entity_policies": {"e0": "bogus"}}), ("themis", {"fairness_knob": 1.5}),
    ("fisher_market", {"kind": "bogus"}), ("fifo", {"semantics": "bogus"}),
    ("max_min_fairness", {"gap_tol": math.nan}), ("finish_time_fairness", {"gap_tol": 2.0}),
    ("min_makespan", {"method": "bogus"}), ("max_total_throughput", {"normalized": "yes"}),
    ("fisher_market", {"stage_tol": 1e-6}), ("max_min_fairness", {"max_levels": 3})])
def test_a_bad_setting_gives_the_same_error(policy, bad):
    uses, settings_ = USES[policy]
    kw, s = _base(uses), {**settings_, **bad}
    a = _outcome(lambda: fa.RoundPolicy(policy, **s).allocate(workers=BASE_WORKERS, **kw))
    b = _outcome(lambda: fa.solve_round(policy, workers=BASE_WORKERS, **s, **kw))
    assert b[0] == "error"
    _assert_same(a, b)


# --------------------------------------------------------------------------------------------
# discrepancies in the per-job readers / _solve_arrays' opt (fixed by dfix39)
# --------------------------------------------------------------------------------------------
# D1 (diff39, fixed by dfix39)
@pytest.mark.parametrize(("policy", "arg", "value"), [
    ("max_min_fairness", "elapsed", -5.0), ("max_min_fairness", "weight", 0.0),
    ("finish_time_fairness", "elapsed", -5.0), ("themis", "steps_remaining", math.nan),
    ("fifo", "order", math.nan), ("min_makespan", "scale_factor", -5.0),
    ("fisher_market", "weight", -5.0), ("water_filling", "weight", math.nan)])
def test_value_error_names_the_job_in_both(policy, arg, value):
    kw = _base(USES[policy][0])
    kw[arg] = {j: (value if j == "j2" else 1.0) for j in kw["throughput"]}
    a, b = _both(policy, kw, warm=False)
    _assert_same(a, b)


# D2 (diff39, fixed by dfix39)
@pytest.mark.parametrize(("policy", "arg"), [
    ("min_makespan", "scale_factor"), ("fifo", "order"),
    ("finish_time_fairness", "steps_remaining"), ("fisher_market", "weight")])
def test_inf_entry_reads_the_same(policy, arg):
    kw = _base(USES[policy][0])
    kw[arg] = {j: (math.inf if j == "j2" else 1.0) for j in kw["throughput"]}
    a, b = _both(policy, kw, warm=False)
    _assert_same(a, b)


# D3 (diff39, fixed by dfix39)
@pytest.mark.parametrize(("policy", "arg", "value"), [
    ("max_min_fairness", "order", "x"), ("max_min_fairness", "slo", "x"),
    ("min_makespan", "entities", None), ("fisher_market", "elapsed", "x"),
    ("themis", "weight", None)])
def test_unused_argument_is_ignored_by_both(policy, arg, value):
    kw = _base(USES[policy][0])
    kw[arg] = {j: 1.0 for j in kw["throughput"]}
    if value is None:  # a job missing
        del kw[arg]["j2"]
    else:
        kw[arg]["j2"] = value
    a, b = _both(policy, kw, warm=False)
    _assert_same(a, b)


# D5 (diff39, fixed by dfix39)
@pytest.mark.parametrize(("policy", "arg"), [
    ("water_filling", "weight"), ("finish_time_fairness", "steps_remaining"),
    ("shortest_job_first", "steps_remaining"), ("themis", "steps_remaining")])
def test_empty_round_reads_the_arguments_in_both(policy, arg):
    kw = _base(USES[policy][0])
    kw[arg]["j0"] = "x"
    workers = {"t0": 0, "t1": 0, "t2": 0}  # every type drained: an empty round
    a = _outcome(lambda: fa.RoundPolicy(policy, **USES[policy][1]).allocate(workers=workers, **kw))
    b = _outcome(lambda: fa.solve_round(policy, workers=workers, **USES[policy][1], **kw))
    _assert_same(a, b)


# --------------------------------------------------------------------------------------------
# found on the way: both paths agreed, on the wrong job (fixed by dfix39)
# --------------------------------------------------------------------------------------------
# D7 (diff39, fixed by dfix39)
def test_weight_ratio_error_names_the_job():
    tp = {"u": {"k80": 1.0}, "a": {"t0": 1.0}, "b": {"t0": 2.0}}  # u: only on the drained k80
    weight = {"u": 1.0, "a": 1e308, "b": 1.0}
    with pytest.raises(fa.InputError) as exc:
        fa.solve_round("max_min_fairness", tp, {"t0": 2, "k80": 0}, weight=weight)
    assert exc.value.index == (2,) and "weight['b']" in str(exc.value)


# D8 (diff39, fixed by dfix39)
def test_slo_error_names_the_job():
    tp = {"a": {"t0": 1.0}, "b": {"t0": 2.0}}
    with pytest.raises(fa.InputError) as exc:
        fa.solve_round("min_cost", tp, {"t0": 2}, cost={"t0": 1.0},
                       steps_remaining={"a": 10.0, "b": 10.0}, slo={"a": math.inf, "b": "x"})
    assert exc.value.index == (1,) and "slo['b']" in str(exc.value)


@pytest.mark.parametrize("mapping", [True, False])
def test_value_error_in_an_empty_round_names_the_entry_as_given(mapping):
    # dfix39 (D1 + D5): a bad value (not only a bad type) in an empty round is an error from
    # both paths, named by job id when given as a mapping and by position when an array
    kw = _base(USES["max_min_fairness"][0])
    weight = {"j0": 1.0, "j1": 1.0, "j2": 0.0, "j3": 1.0}
    kw["weight"] = weight if mapping else list(weight.values())
    workers = {"t0": 0, "t1": 0, "t2": 0}
    a = _outcome(lambda: fa.RoundPolicy("max_min_fairness").allocate(workers=workers, **kw))
    b = _outcome(lambda: fa.solve_round("max_min_fairness", workers=workers, **kw))
    assert b[0] == "error" and b[1][1:] == ("weight", (2,))
    assert ("weight['j2']" if mapping else "weight[2]") in b[1][0]
    _assert_same(a, b)
