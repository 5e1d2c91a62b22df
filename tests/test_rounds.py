"""Issue #16: the round-by-round policy API (fairalloc.rounds) and the scheduler how-to."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import fairalloc as fa
from fairalloc.rounds import POLICIES

ROOT = Path(__file__).resolve().parents[1]

# three types, one drained; job "x" runs only on the drained type, job "g" has a gang larger
# than every present type it can run on
TP = {
    "a": {"v100": 40.0, "p100": 20.0, "k80": 10.0},
    "b": {"v100": 12.0, "p100": 8.0, "k80": 4.0},
    "c": {"v100": 100.0, "k80": 50.0},
    "x": {"p100": 5.0},
    "g": {"v100": 30.0, "p100": 3.0},
}
WORKERS = {"v100": 2, "p100": 0, "k80": 2}
PER_JOB = dict(scale_factor={"a": 1, "b": 2, "c": 1, "x": 1, "g": 4},
               weight={"a": 1.0, "b": 2.0, "c": 1.0, "x": 1.0, "g": 1.0},
               steps_remaining={"a": 1e4, "b": 5e3, "c": 2e4, "x": 100.0, "g": 1e3},
               elapsed={"a": 30.0, "b": 20.0, "c": 10.0, "x": 5.0, "g": 0.0},
               order={"a": 0, "b": 1, "c": 2, "x": 3, "g": 4})
SETTINGS = {"min_cost": dict(cost={"v100": 3.0, "p100": 2.0, "k80": 1.0}),
            "water_filling": dict(entity_weights={0: 1.0, 1: 2.0}),
            "shockwave": dict(plan_jobs={"a": fa.PlanJob(workers=1, total_epochs=10,
                                                         done_epochs=0, ftf=1.0,
                                                         regimes=[(60.0, 10)])})}
ENTITIES = {"a": 0, "b": 1, "c": 1, "x": 0, "g": 0}


def _feasible(r, workers, sf):
    cap = np.array(list(workers.values()), float)
    s = np.array([sf[j] for j in r.job_ids], float)
    assert (r.x >= 0).all() and (r.x.sum(axis=1) <= 1 + 1e-9).all()
    assert (s @ r.x <= cap + 1e-9 * np.maximum(cap, 1)).all()


GAVEL = tuple(p for p in POLICIES if p not in ("fisher_market", "themis", "shockwave"))


@pytest.mark.parametrize("policy", GAVEL)
def test_drained_type_and_unrunnable_jobs_give_a_certified_allocation(policy):
    p = fa.RoundPolicy(policy, **SETTINGS.get(policy, {}))
    r = p.allocate(TP, WORKERS, **PER_JOB,
                   entities=ENTITIES if policy == "water_filling" else None)
    assert r.status == fa.results.Status.OPTIMAL and r.certificate.ok
    assert r.drained_types == ("p100",)
    assert r.unrunnable_jobs == ("x", "g")
    assert r.job_ids == tuple(TP) and r.types == ("v100", "p100", "k80")
    alloc = r.job_allocation
    assert set(alloc) == set(TP) and all(set(row) == set(WORKERS) for row in alloc.values())
    assert all(v == 0.0 for v in alloc["x"].values()) and all(v == 0.0
                                                              for v in alloc["g"].values())
    assert all(alloc[j]["p100"] == 0.0 for j in TP)
    assert r.prices[1] == 0.0 and r.type_prices["p100"] == 0.0
    _feasible(r, WORKERS, PER_JOB["scale_factor"])
    # the reduced program is certified and its allocation is exactly the expanded one
    assert r.reduced is not None and r.reduced.certificate.ok
    np.testing.assert_array_equal(r.x[:3][:, [0, 2]], r.reduced.x)
    assert r.x.flags.writeable is False


def test_reduced_program_equals_a_direct_solve_on_the_present_cluster():
    r = fa.solve_round("max_min_fairness", TP, WORKERS, **PER_JOB)
    T = np.array([[40.0, 10.0], [12.0, 4.0], [100.0, 50.0]])
    d = fa.max_min_fairness(fa.Jobs(T, scale_factor=[1, 2, 1], weight=[1, 2, 1]),
                            fa.Cluster({"v100": 2, "k80": 2}))
    np.testing.assert_allclose(r.x[:3][:, [0, 2]], d.x, atol=1e-9)
    assert r.objective == pytest.approx(d.objective)


@pytest.mark.parametrize("policy", POLICIES)
def test_empty_round_and_all_drained(policy):
    kw = SETTINGS.get(policy, {})
    r = fa.solve_round(policy, {}, {"v100": 2}, **kw)
    assert r.job_allocation == {} and r.certificate.ok and r.stats.method == "empty"
    assert r.x.shape == (0, 1)
    r = fa.solve_round(policy, {"a": {"v100": 1.0}}, {"v100": 0}, **kw,
                       **{k: {"a": v["a"]} for k, v in PER_JOB.items()})
    assert r.job_allocation == {"a": {"v100": 0.0}} and r.certificate.ok
    assert r.drained_types == ("v100",) and r.unrunnable_jobs == ("a",)
    # an empty round still validates its solve options (fuzz seed 24 accepted 1+1j)
    for bad in ({"gap_tol": 1 + 1j}, {"feas_tol": -1.0}):
        with pytest.raises(fa.InputError) as err:
            fa.solve_round(policy, {}, {"v100": 2}, **{**kw, **bad})
        assert err.value.argument == next(iter(bad))


def test_dicts_numpy_and_pandas_agree():
    pd = pytest.importorskip("pandas")
    r1 = fa.solve_round("max_min_fairness", TP, WORKERS, **PER_JOB)
    T = np.array([[TP[j].get(t, 0.0) for t in WORKERS] for j in TP])
    arr = {k: np.array([v[j] for j in TP], float) for k, v in PER_JOB.items()}
    r2 = fa.solve_round("max_min_fairness", T, np.array([2, 0, 2]), job_ids=list(TP),
                        types=list(WORKERS), **arr)
    r3 = fa.solve_round("max_min_fairness", pd.DataFrame(T, index=list(TP),
                                                          columns=list(WORKERS)),
                        WORKERS, **PER_JOB)
    for r in (r2, r3):
        np.testing.assert_allclose(r.x, r1.x, atol=1e-12)
        assert r.job_ids == r1.job_ids and r.drained_types == r1.drained_types
    assert r1.to_frame().shape == (5, 3)


def test_a_type_named_only_by_jobs_counts_as_drained():
    r = fa.solve_round("max_min_fairness", {"a": {"v100": 1.0, "tpu": 9.0}}, {"v100": 1})
    assert r.types == ("v100", "tpu") and r.drained_types == ("tpu",)
    assert r.job_allocation["a"] == {"v100": 1.0, "tpu": 0.0}


def test_fifo_round_serves_the_first_gang_job():
    tp = {j: {"gpu": 1.0} for j in range(5)}
    r = fa.solve_round("fifo", tp, {"gpu": 4}, scale_factor={0: 4, 1: 1, 2: 1, 3: 1, 4: 1},
                       order={j: float(j) for j in range(5)})
    assert r.job_allocation[0]["gpu"] == pytest.approx(1.0, abs=1e-6)
    assert sum(r.job_allocation[j]["gpu"] for j in range(1, 5)) == pytest.approx(0.0, abs=1e-6)


def test_rounds_with_arrivals_departures_and_node_failures():
    rng = np.random.default_rng(0)
    p = fa.RoundPolicy("max_min_fairness")
    active = {f"j{i}": {"v100": float(rng.uniform(5, 50)), "k80": float(rng.uniform(1, 10))}
              for i in range(80)}
    workers = {"v100": 20, "k80": 20}
    nxt = 80
    methods = []
    for rnd in range(12):
        for j in list(active)[:3]:          # departures
            del active[j]
        for _ in range(3):                  # arrivals
            active[f"j{nxt}"] = {"v100": float(rng.uniform(5, 50)),
                                 "k80": float(rng.uniform(1, 10))}
            nxt += 1
        w = dict(workers, k80=0) if rnd in (5, 6) else workers   # K80 nodes fail, come back
        r = p.allocate(active, w)
        assert r.certificate.ok and set(r.job_allocation) == set(active)
        assert r.drained_types == (("k80",) if rnd in (5, 6) else ())
        _feasible(r, w, {j: 1 for j in active})
        methods.append(r.stats.method)
    assert any(m.endswith("+warm") for m in methods), methods
    again = p.allocate(active, workers)
    assert again.stats.method == "reused" and again.warm and again.certificate.ok
    p.reset()
    assert not p.allocate(active, workers).warm


def test_warm_and_cold_rounds_agree():
    rng = np.random.default_rng(1)
    tp = {i: {"a": float(rng.uniform(1, 9)), "b": float(rng.uniform(1, 9)),
              "c": float(rng.uniform(1, 9))} for i in range(300)}
    cl = {"a": 60, "b": 60, "c": 60}
    p = fa.RoundPolicy("max_min_fairness")
    p.allocate(tp, cl)
    del tp[0], tp[1]
    tp[300] = {"a": 3.0, "b": 2.0, "c": 1.0}
    warm = p.allocate(tp, cl)
    cold = fa.solve_round("max_min_fairness", tp, cl)
    assert warm.stats.method == "incremental+warm" and warm.warm  # (the kept model)
    assert warm.objective == pytest.approx(cold.objective, rel=1e-7)


@pytest.mark.parametrize("method", [None, "fast"])
def test_warm_equals_cold_over_a_trace_with_arrivals_and_departures(method):
    # a short random trace (gangs of 1-4 workers, 3 types): every warm round is certified on
    # its own, reaches the cold solve's level and total, and reports the warm path it took
    # (default: the incremental round; method="fast": the normal round, seeded)
    rng = np.random.default_rng(7)

    def job():
        base = float(rng.lognormal(0.0, 0.8)) * 10.0
        r = rng.uniform(0.1, 0.9, 2)
        return {"v100": base, "p100": base * float(max(r)), "k80": base * float(min(r))}

    active = {i: job() for i in range(70)}
    sf = {i: int(rng.choice([1, 1, 2, 4])) for i in range(70)}
    workers = {"v100": 17, "p100": 17, "k80": 17}
    p = fa.RoundPolicy("max_min_fairness", method=method)
    nxt, paths = 70, []
    for _ in range(8):
        for j in list(active)[:2]:
            del active[j], sf[j]
        for _ in range(2):
            active[nxt], sf[nxt] = job(), int(rng.choice([1, 1, 2, 4]))
            nxt += 1
        warm = p.allocate(active, workers, scale_factor=sf)
        # (the normal round as the cold reference: solve_round's default for max-min is now
        # RoundPolicy's own first, incremental, round)
        cold = fa.solve_round("max_min_fairness", active, workers, scale_factor=sf,
                              method="fast")
        assert warm.certificate.ok and cold.certificate.ok
        assert not cold.warm and cold.stats.method == "fast"
        assert warm.objective == pytest.approx(cold.objective, rel=1e-7)
        # the work-conserving stage: the same total normalised throughput
        assert float(warm.reduced.metric.sum()) == pytest.approx(
            float(cold.reduced.metric.sum()), rel=1e-6)
        _feasible(warm, workers, sf)
        paths.append((warm.stats.method, warm.stats.path))
    assert p.rounds == 8
    if method is None:  # the kept model, from the second round on
        assert [m for m, _ in paths] == ["incremental"] + ["incremental+warm"] * 7, paths
        return
    # the first round is cold (70 jobs: the whole LP, below Tuning.structured_min_jobs), every
    # later one starts the structured solver from the previous prices and level
    assert paths[0][0] == "fast" and all(m == "fast+warm" for m, _ in paths[1:]), paths
    # (the work-conserving LP cold: below Tuning.from_level_min_columns)
    assert paths[0][1] == ("exact-lp",), paths
    assert all(path and path[0] == "structured-level" for _, path in paths[1:]), paths


def test_stage_program_rows_built_in_one_construction_equal_the_stacked_blocks():
    # StageSolver.program stacks its row blocks from their index arrays (round latency), the
    # level rows [C, -b] with theta's entries appended at the row ends; it must equal the chain
    # of scipy stacks it replaced: [A; B] | 0 column, then [C, -b]
    import scipy.sparse as sp

    from fairalloc._sparse import stack_rows
    from fairalloc.throughput.stages import _with_last_column

    rng = np.random.default_rng(3)
    A = sp.random(4, 5, density=0.5, random_state=1, format="csr")
    B = sp.random(2, 5, density=0.5, random_state=2, format="csr")
    C = sp.random(3, 5, density=0.5, random_state=3, format="csr")
    b = np.array([1.5, 0.0, 2.0])
    nz = np.flatnonzero(b)
    got = stack_rows([A, B, _with_last_column(C, nz, -b[nz], 5)], 6)
    want = sp.vstack([sp.hstack([sp.vstack([A, B]), sp.csr_matrix((6, 1))]),
                      sp.hstack([C, sp.csr_matrix(-b[:, None])])])
    assert got.shape == (9, 6) and np.array_equal(got.toarray(), want.toarray())
    assert got.nnz == want.nnz          # no explicit zeros (b[1] = 0 adds no entry)
    assert got.has_canonical_format     # sorted rows, no duplicates (HiGHS takes them as is)
    dense = rng.uniform(size=(2, 6))    # a dense block is accepted too
    assert np.array_equal(stack_rows([sp.csr_matrix((1, 6)), dense], 6).toarray()[1:], dense)
    # an unsorted C (scipy's product) is copied to canonical form, the caller's left as it was
    U = sp.csr_matrix(sp.diags([2.0, 3.0, 4.0]) @ C)
    before = U.indices.copy()
    out = _with_last_column(U, nz, -b[nz], 5)
    assert np.array_equal(out.toarray()[:, :5], U.toarray()) and out.has_canonical_format
    assert np.array_equal(U.indices, before)


def test_bad_round_inputs_are_input_errors():
    with pytest.raises(fa.InputError, match="policy"):
        fa.RoundPolicy("lottery")
    with pytest.raises(fa.InputError, match="workers"):
        fa.solve_round("max_min_fairness", TP, {"v100": -1})
    with pytest.raises(fa.InputError, match="scale_factor"):
        fa.solve_round("max_min_fairness", TP, WORKERS, scale_factor={"a": 1})
    with pytest.raises(fa.InputError, match="types"):
        fa.solve_round("max_min_fairness", np.ones((2, 2)), np.array([1, 1]))
    with pytest.raises(fa.InputError, match="cost"):
        fa.solve_round("min_cost", TP, WORKERS)
    # an unknown setting or option is a TypeError naming it (explicit signatures)
    with pytest.raises(TypeError, match="bogus"):
        fa.RoundPolicy("fifo", bogus=1)
    with pytest.raises(TypeError, match="bogus"):
        fa.solve_round("max_min_fairness", TP, WORKERS, bogus=1)


# --------------------------------------------------------------------------------------------
# the how-to runs as written
# --------------------------------------------------------------------------------------------
def test_use_inside_a_scheduler_howto_runs():
    text = (ROOT / "docs" / "how-to" / "use-inside-a-scheduler.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 3
    ns: dict = {}
    for block in blocks:
        exec(compile(block, "use-inside-a-scheduler.md", "exec"), ns)  # noqa: S102


def test_fisher_market_rounds_with_a_drained_good():
    rng = np.random.default_rng(0)
    tp = {i: {"a": float(rng.uniform(1, 5)), "b": float(rng.uniform(1, 5)),
              "c": float(rng.uniform(1, 5))} for i in range(30)}
    tp["only_b"] = {"b": 2.0}
    p = fa.RoundPolicy("fisher_market")
    r = p.allocate(tp, {"a": 10, "b": 0, "c": 5}, weight={j: 1.0 for j in tp})
    assert r.certificate.ok and r.drained_types == ("b",) and r.unrunnable_jobs == ("only_b",)
    np.testing.assert_allclose(r.x.sum(axis=0), [10, 0, 5], rtol=1e-6)
    d = fa.fisher_market(np.array([[tp[i]["a"], tp[i]["c"]] for i in range(30)]),
                         None, [10, 5])
    np.testing.assert_allclose(r.prices[[0, 2]], d.prices, rtol=1e-5)
    # Leontief: a buyer that needs a drained good gets nothing
    r = fa.solve_round("fisher_market", {"x": {"a": 1.0, "b": 2.0}, "y": {"a": 1.0}},
                       {"a": 1, "b": 0}, kind="leontief")
    assert r.unrunnable_jobs == ("x",) and r.job_allocation["x"] == {"a": 0.0, "b": 0.0}
    assert r.job_allocation["y"]["a"] == pytest.approx(1.0, rel=1e-6)


def test_min_cost_round_with_slos():
    tp = {"a": {"g": 1.0}, "b": {"g": 2.0}, "c": {"h": 1.0}}
    kw = dict(cost={"g": 1.0, "h": 2.0}, steps_remaining={"a": 10.0, "b": 10.0, "c": 1.0},
              slo={"a": float("inf"), "b": 100.0, "c": 5.0})
    for r in (fa.RoundPolicy("min_cost", cost=kw["cost"]).allocate(
                  tp, {"g": 2, "h": 0}, steps_remaining=kw["steps_remaining"], slo=kw["slo"]),
              fa.solve_round("min_cost", tp, {"g": 2, "h": 0}, **kw)):
        assert r.certificate.ok and r.unrunnable_jobs == ("c",)
        assert r.effective_throughput[1] >= 10.0 / 100.0 * (1 - 1e-9)   # b meets its SLO
    with pytest.raises(fa.InputError, match="slo"):
        fa.RoundPolicy("min_cost", cost=kw["cost"]).allocate(tp, {"g": 2, "h": 0},
                                                           slo={"a": 1.0})
    with pytest.raises(fa.InputError, match="slo"):
        fa.solve_round("min_cost", tp, {"g": 2, "h": 0}, cost=kw["cost"], slo=["x"] * 3)
    with pytest.raises(fa.InputError, match="slo has no entry for job 'b'"):
        fa.solve_round("min_cost", tp, {"g": 2, "h": 0}, cost=kw["cost"], slo={"a": 1.0})
    with pytest.raises(fa.InputError, match="weight has no entry for job 'c'") as err:
        fa.solve_round("max_min_fairness", tp, {"g": 2, "h": 1}, weight={"a": 1, "b": 2})
    assert err.value.argument == "weight"


# --------------------------------------------------------------------------------------------
# the Themis auction round and the Shockwave re-plan
# --------------------------------------------------------------------------------------------
THEMIS_TP = {"p": {"a": 3.0, "b": 1.0}, "q": {"a": 2.0, "b": 1.0}, "r": {"a": 10.0, "b": 1.0},
             "z": {"c": 1.0}}


def test_themis_round_by_hand():
    # elapsed 0: rho_ij = iso_i / T_ij, iso_i = (T_ia + T_ib) / 3 (1/3 of each type), so the
    # jobs' rho on their fastest type are p 4/9, q 1/2, r 11/30; f = 0.5 -> ceil(1.5) = 2
    # bidders, p and q. Valuations 1/rho: p (3, 1)/(4/3), q (2, 1)/1: the PF auction gives p
    # type a and q type b (product 9/4 * 1 > 3/4 * 2, the swap); without p, q would take a
    # (value 2 instead of 1): c_p = 1/2; without q, p keeps a: c_q = 1. Leftover: half of
    # type a, to r (the non-bidder).
    p = fa.RoundPolicy("themis", fairness_knob=0.5)
    r = p.allocate(THEMIS_TP, {"a": 1, "b": 1, "c": 0},
                   steps_remaining={"p": 100.0, "q": 100.0, "r": 100.0, "z": 5.0})
    assert r.certificate.ok and r.status == fa.results.Status.OPTIMAL
    assert r.drained_types == ("c",) and r.unrunnable_jobs == ("z",)
    got = {j: {t: round(v, 9) for t, v in row.items()} for j, row in r.job_allocation.items()}
    assert got == {"p": {"a": 0.5, "b": 0.0, "c": 0.0}, "q": {"a": 0.0, "b": 1.0, "c": 0.0},
                   "r": {"a": 0.5, "b": 0.0, "c": 0.0}, "z": {"a": 0.0, "b": 0.0, "c": 0.0}}
    assert r.type_prices == pytest.approx({"a": 0.5, "b": 0.0, "c": 0.0})  # hidden payments
    assert r.reduced.bidders == (0, 1) and r.reduced.fraction.tolist() == pytest.approx([.5, 1])
    assert r.stats.path[:2] == ("auction", "leftovers-to-non-bidders")
    # every job bids (f = 0): nobody is left to take the payment but the bidders themselves
    r0 = fa.solve_round("themis", THEMIS_TP, {"a": 1, "b": 1, "c": 0}, fairness_knob=0.0,
                        steps_remaining={"p": 100.0, "q": 100.0, "r": 100.0, "z": 5.0})
    assert r0.certificate.ok and "leftovers-to-bidders" in r0.stats.path
    _feasible(r0, {"a": 1, "b": 1, "c": 0}, dict.fromkeys(THEMIS_TP, 1))


def test_themis_round_gangs_and_errors():
    tp = {i: {"gpu": float(i + 1)} for i in range(5)}
    sf = {0: 4, 1: 2, 2: 2, 3: 1, 4: 8}  # job 4's gang fits nowhere
    r = fa.solve_round("themis", tp, {"gpu": 4}, scale_factor=sf, fairness_knob=0.0,
                       steps_remaining=dict.fromkeys(tp, 50.0),
                       elapsed={0: 100.0, 1: 0.0, 2: 10.0, 3: 5.0, 4: 0.0})
    assert r.certificate.ok and r.unrunnable_jobs == (4,)
    _feasible(r, {"gpu": 4}, sf)
    assert fa.solve_round("themis", {}, {"gpu": 4}).stats.method == "empty"
    with pytest.raises(fa.InputError, match="steps_remaining"):
        fa.solve_round("themis", tp, {"gpu": 4})
    with pytest.raises(fa.InputError, match="fairness_knob"):
        fa.solve_round("themis", tp, {"gpu": 4}, steps_remaining=dict.fromkeys(tp, 1.0),
                       fairness_knob=1.0)


def _plan_jobs():
    from fairalloc import PlanJob

    return {"a": PlanJob(workers=1, total_epochs=100, done_epochs=10, ftf=2.0,
                         regimes=[(60.0, 90)]),
            "b": PlanJob(workers=1, total_epochs=100, done_epochs=50, ftf=1.0,
                         regimes=[(60.0, 50)]),
            "c": PlanJob(workers=1, total_epochs=100, done_epochs=50, ftf=1.0,
                         regimes=[(60.0, 50)])}


def test_shockwave_replan_and_plan_reuse():
    # plan_schedule's own example: over 4 rounds on 2 GPUs, the job furthest behind (FTF 2)
    # gets every round and the other two 2 rounds each
    pj = _plan_jobs()
    tp = {j: {"gpu": 1.0} for j in pj}
    p = fa.RoundPolicy("shockwave", plan_options={"rounds": 4}, replan_every=4)
    runs = {j: 0.0 for j in pj}
    methods = []
    for _ in range(4):
        r = p.allocate(tp, {"gpu": 2, "k80": 0}, plan_jobs=pj)
        assert r.certificate.ok and r.drained_types == ("k80",)
        _feasible(r, {"gpu": 2, "k80": 0}, dict.fromkeys(pj, 1))
        methods.append((r.stats.method, r.stats.path, r.warm))
        for j in pj:
            runs[j] += r.job_allocation[j]["gpu"]
    assert runs == {"a": 4.0, "b": 2.0, "c": 2.0}
    assert methods[0][0] == "plan" and not methods[0][2]
    assert methods[1:] == [("plan-reused", ("reuse-plan",), True)] * 3
    # the window is used up: re-plan; a departure re-plans too
    assert p.allocate(tp, {"gpu": 2}, plan_jobs=pj).stats.method == "plan"
    assert p.allocate(tp, {"gpu": 2}, plan_jobs=pj).stats.method == "plan-reused"
    del tp["c"]
    r = p.allocate(tp, {"gpu": 2}, plan_jobs=pj)
    assert r.stats.method == "plan" and r.job_allocation == {"a": {"gpu": 1.0}, "b": {"gpu": 1.0}}
    # replan_every=1 (default): every round is a fresh plan
    q = fa.RoundPolicy("shockwave", plan_options={"rounds": 4})
    assert {q.allocate(tp, {"gpu": 2}, plan_jobs=pj).stats.method for _ in range(3)} == {"plan"}


def test_shockwave_round_states_and_errors():
    pj = _plan_jobs()
    tp = {"a": {"gpu": 1.0}, "b": {"gpu": 1.0}, "c": {"k80": 1.0}}  # c runs on no present type
    r = fa.solve_round("shockwave", tp, {"gpu": 1, "k80": 0}, plan_jobs=pj,
                       plan_options={"rounds": 3})
    assert r.certificate.ok and r.unrunnable_jobs == ("c",) and r.drained_types == ("k80",)
    assert r.job_allocation["a"] == {"gpu": 1.0, "k80": 0.0} and r.prices.tolist() == [0.0, 0.0]
    assert fa.solve_round("shockwave", {}, {"gpu": 1}, plan_jobs={}).stats.method == "empty"
    with pytest.raises(fa.InputError, match="plan_jobs"):
        fa.solve_round("shockwave", tp, {"gpu": 1})
    with pytest.raises(fa.InputError, match="one worker type"):
        fa.solve_round("shockwave", {"a": {"gpu": 1.0, "k80": 1.0}}, {"gpu": 1, "k80": 1},
                       plan_jobs=pj)


def test_job_ids_of_types_numpy_cannot_compare_are_accepted_across_rounds() -> None:
    """A round whose job ids mix a numpy integer and a tuple, then another round: comparing
    the two rounds' ids made numpy broadcast and the truth value raise ValueError (fuzz,
    issue #27); they are simply different rounds."""
    import numpy as np

    p = fa.RoundPolicy("max_min_fairness")
    first = p.allocate({np.int64(1): {"a": 1.0}, ("j", 2): {"a": 1.0}}, {"a": 1})
    assert first.certificate.ok
    again = p.allocate({("j", 2): {"a": 1.0}}, {"a": 1})
    assert again.job_allocation == {("j", 2): {"a": 1.0}} and again.certificate.ok


def test_a_solve_option_the_policy_does_not_take_is_an_input_error_naming_it():
    # bottleneck_tol / max_levels are water-filling's: every other policy raised Python's
    # TypeError from its solve (not an InputError naming the argument)
    tp = {"a": {"x": 1.0}, "b": {"x": 2.0}}
    for policy, extra in (("max_min_fairness", {}), ("max_total_throughput", {}),
                          ("fifo", {}), ("min_cost", {"cost": {"x": 1.0}})):
        for option in ({"bottleneck_tol": 1e-6}, {"max_levels": 3}):
            with pytest.raises(fa.InputError, match="takes no") as exc:
                fa.solve_round(policy, tp, {"x": 1}, **option, **extra)
            assert exc.value.argument == next(iter(option)), (policy, option)
    with pytest.raises(fa.InputError) as exc:
        fa.RoundPolicy("max_min_fairness", max_levels=3).allocate(tp, {"x": 1})
    assert exc.value.argument == "max_levels"
    # water-filling takes them
    r = fa.solve_round("water_filling", tp, {"x": 1}, bottleneck_tol=1e-6, max_levels=3)
    assert r.certificate.ok
