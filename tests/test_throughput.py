"""Gavel's effective-throughput policies (gavel.txt §3-4): paper examples, single-type
reductions, properties (hypothesis), composition and bad inputs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.throughput import MaxMinFairness, Tuning, equal_split, isolated_split

T3 = [[40.0, 10.0], [12.0, 4.0], [100.0, 50.0]]
C2 = {"v100": 1, "k80": 1}


# --------------------------------------------------------------------------------------------
# paper examples
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["highs", "fast", "cvxpy"])
def test_paper_three_job_example(method):
    jobs = fa.Jobs(T3)
    a = fa.max_min_fairness(jobs, fa.Cluster(C2), method=method)
    np.testing.assert_allclose(a.x, np.array([[5, 0], [5, 1], [1, 10]]) / 11, atol=1e-6)
    # every job gets 12/11 of what 1/3 of each GPU would give it (gavel.txt §4.1)
    iso = jobs.throughput @ np.array([1 / 3, 1 / 3])
    np.testing.assert_allclose(a.effective_throughput / iso, 12 / 11, rtol=1e-6)
    # objective: level against X^equal = [0.5, 0.5] (DESIGN), i.e. 12/11 * 2/3
    assert a.objective == pytest.approx(8 / 11, rel=1e-6)
    assert a.certificate.ok and a.gap <= 1e-6
    assert (a.prices > 0).all()  # both GPUs are saturated
    df = a.to_frame()
    assert list(df.columns[:2]) == ["x[v100]", "x[k80]"]


def test_equal_and_isolated_splits():
    jobs = fa.Jobs(T3)
    np.testing.assert_allclose(equal_split(jobs, fa.Cluster(C2)), 0.5)
    np.testing.assert_allclose(isolated_split(jobs, fa.Cluster(C2)), 1 / 3)
    # a gang of 2 on a 4+1 cluster with 3 jobs: 1/3 of 4 workers = 4/6 of its time ...
    j2 = fa.Jobs([[1.0, 1.0]] * 3, scale_factor=[2, 1, 1])
    x = isolated_split(j2, fa.Cluster({"a": 4, "b": 1}))
    np.testing.assert_allclose(x[0], [4 / 6, 0.0])  # gang of 2 does not fit on "b"
    np.testing.assert_allclose(x[1], [4 / 5, 1 / 5])  # capped at full time


@pytest.mark.parametrize("method", ["highs", "fast"])
def test_water_filling_paper_example(method):
    jobs = fa.Jobs([[1.0]] * 4, weight=[3, 1, 1, 1])
    a = fa.max_min_fairness(jobs, fa.Cluster({"gpu": 4}), water_filling=True, method=method)
    np.testing.assert_allclose(a.x.ravel(), 1.0, atol=1e-7)
    assert a.objective == pytest.approx(1 / 3, rel=1e-7)  # the first level
    assert a.levels == 2
    # without water-filling the level is the same, the work-conserving stage fills GPUs too
    b = fa.max_min_fairness(jobs, fa.Cluster({"gpu": 4}), work_conserving=False)
    assert b.objective == pytest.approx(1 / 3, rel=1e-7)
    assert b.x.sum() < 4 - 1e-6 or b.x.sum() == pytest.approx(4)


def test_water_filling_where_gavel_is_wrong():
    """ANCHORS.md: 10 K80-only jobs + one V100 job on 4 V100 + 1 K80 -> level 1.2195."""
    T = np.array([[0.0, 1.0]] * 10 + [[1.0, 0.1]])
    jobs = fa.Jobs(T)
    cl = fa.Cluster({"v100": 4, "k80": 1})
    a = fa.max_min_fairness(jobs, cl, water_filling=True)
    assert a.metric[10] == pytest.approx(1 / 0.82, rel=1e-7)  # 1.2195...
    np.testing.assert_allclose(a.metric[:10], 0.5, rtol=1e-7)
    assert a.x[10, 0] == pytest.approx(1.0)


# --------------------------------------------------------------------------------------------
# single accelerator type: classic homogeneous policies
# --------------------------------------------------------------------------------------------
def test_single_type_las_is_weighted_share():
    w = np.array([1.0, 2.0, 1.5, 0.5])
    s = np.array([1, 2, 1, 1])
    jobs = fa.Jobs(np.array([[5.0], [7.0], [3.0], [2.0]]), scale_factor=s, weight=w)
    a = fa.max_min_fairness(jobs, fa.Cluster({"gpu": 2}))
    # LAS: equal GPU-time per unit weight: s x / w = 2 / sum(w)
    np.testing.assert_allclose(s * a.x.ravel() / w, 2 / w.sum(), rtol=1e-6)


def test_single_type_makespan_and_fifo_and_sjf():
    T = np.array([[10.0], [20.0], [5.0]])
    steps = np.array([100.0, 400.0, 50.0])
    jobs = fa.Jobs(T, steps_remaining=steps, elapsed=[3.0, 2.0, 1.0])
    cl = fa.Cluster({"gpu": 2})
    m = fa.min_makespan(jobs, cl)
    # all finish together at sum(steps / T) / 2 = (10 + 20 + 10) / 2 = 20 s
    assert m.objective == pytest.approx(20.0, rel=1e-6)
    np.testing.assert_allclose(steps / m.effective_throughput, 20.0, rtol=1e-6)
    f = fa.fifo(jobs, cl)  # most elapsed first: jobs 0 and 1 get the two GPUs
    np.testing.assert_allclose(f.x.ravel(), [1, 1, 0], atol=1e-7)
    s = fa.shortest_job_first(jobs, cl)  # durations 10, 20, 10: job 0 first, then job 2
    np.testing.assert_allclose(s.x.ravel(), [1, 0, 1], atol=1e-7)
    assert s.objective == pytest.approx(10.0)


def test_makespan_matches_dense_reference():
    rng = np.random.default_rng(3)
    T = rng.uniform(1, 10, (12, 3))
    jobs = fa.Jobs(T, steps_remaining=rng.uniform(100, 1000, 12))
    cl = fa.Cluster({"a": 2, "b": 3, "c": 1})
    a = fa.min_makespan(jobs, cl)
    b = fa.MinMakespan(jobs, cl).solve(method="cvxpy")
    assert a.objective == pytest.approx(b.objective, rel=1e-5)  # both the makespan (issue #12)


def test_finish_time_fairness_matches_conic():
    rng = np.random.default_rng(4)
    n = 10
    T = rng.uniform(1, 10, (n, 2))
    jobs = fa.Jobs(T, steps_remaining=rng.uniform(100, 1000, n),
                   elapsed=rng.uniform(0, 50, n), isolated_elapsed=rng.uniform(0, 80, n))
    cl = fa.Cluster({"v100": 3, "k80": 2})
    a = fa.finish_time_fairness(jobs, cl)
    b = fa.FinishTimeFairness(jobs, cl).solve(method="cvxpy", work_conserving=False)
    assert a.objective == pytest.approx(b.objective, rel=1e-5)
    assert a.metric.max() == pytest.approx(a.objective, rel=1e-9)
    assert a.certificate.ok


def test_single_type_finish_time_fairness():
    jobs = fa.Jobs([[10.0], [10.0]], steps_remaining=[100, 300])
    a = fa.finish_time_fairness(jobs, fa.Cluster({"gpu": 1}))
    np.testing.assert_allclose(a.metric, 1.0, rtol=1e-6)  # both as if isolated
    np.testing.assert_allclose(a.x.ravel(), [0.5, 0.5], atol=1e-6)


def test_min_cost_charnes_cooper_and_slos():
    jobs = fa.Jobs([[40.0, 10.0], [30.0, 12.0]], steps_remaining=[4000.0, 3000.0])
    cl = fa.Cluster({"v100": 1, "k80": 1})
    cost = {"v100": 3.0, "k80": 1.0}
    a = fa.min_cost(jobs, cl, cost)
    # best ratio: job 0 on the V100 gives 40 / 3 steps per unit cost
    assert a.objective == pytest.approx(40 / 3, rel=1e-6)
    # an SLO of 15 steps/s for job 1 (> its 12 on the K80) forces it onto the V100 too
    b = fa.min_cost(jobs, cl, cost, slo=[np.inf, 200.0])
    assert b.effective_throughput[1] >= 15.0 - 1e-6
    # brute force over a grid of allocations: nothing feasible beats the LP's ratio
    g = np.linspace(0, 1, 21)
    x00, x01, x10, x11 = (v.ravel() for v in np.meshgrid(g, g, g, g, indexing="ij"))
    ok = (x00 + x01 <= 1) & (x10 + x11 <= 1) & (x00 + x10 <= 1) & (x01 + x11 <= 1)
    tp0 = 40 * x00 + 10 * x01
    tp1 = 30 * x10 + 12 * x11
    costs = 3 * (x00 + x10) + (x01 + x11)
    ok &= (tp1 >= 15.0) & (costs > 0)
    best = np.max((tp0 + tp1)[ok] / costs[ok])
    assert b.objective >= best - 1e-6
    assert b.objective <= a.objective + 1e-9
    with pytest.raises(fa.InfeasibleError):
        fa.min_cost(jobs, cl, cost, slo=[50.0, np.inf])  # needs 80 steps/s, max is 40
    with pytest.raises(fa.InfeasibleError):  # each alone is fine, together they need 2 V100
        fa.min_cost(jobs, cl, cost, slo=[101.0, 101.0])


def test_max_total_throughput():
    a = fa.max_total_throughput(fa.Jobs(T3), fa.Cluster(C2))
    assert a.objective == pytest.approx(110.0)  # job 2 on the V100 (100), job 0 on the K80
    np.testing.assert_allclose(a.utilization, 1.0)


# --------------------------------------------------------------------------------------------
# composition through cvxpy
# --------------------------------------------------------------------------------------------
def test_compose_constraint_and_term():
    jobs = fa.Jobs(T3)
    b = MaxMinFairness(jobs, fa.Cluster(C2))
    b.add_constraint(b.x[2, 1] <= 0.5)
    r = b.solve()
    assert r.stats.method == "cvxpy" and r.certificate.kind == "conic"
    assert r.x[2, 1] <= 0.5 + 1e-7
    base = fa.max_min_fairness(jobs, fa.Cluster(C2))
    assert r.objective < base.objective - 1e-4
    # an objective term (e.g. a regulariser): reward job 0's throughput a little
    b2 = MaxMinFairness(jobs, fa.Cluster(C2))
    b2.add_objective_term(1e-3 * b2.effective_throughput[0])
    r2 = b2.solve(work_conserving=False)
    assert r2.effective_throughput[0] >= base.effective_throughput[0] - 1e-6
    with pytest.raises(fa.InputError):
        b2.solve(method="highs")
    with pytest.raises(fa.InputError):
        b2.add_objective_term(-(b2.x[0, 0] ** 2) * -1)  # convex, not concave


# --------------------------------------------------------------------------------------------
# properties
# --------------------------------------------------------------------------------------------
@st.composite
def instances(draw, unit_weights=False, unit_scale=False):
    n = draw(st.integers(2, 9))
    k = draw(st.integers(1, 3))
    caps = draw(st.lists(st.integers(1, 4), min_size=k, max_size=k))
    T = np.array(draw(st.lists(st.lists(st.sampled_from([0.0, 1.0, 2.5, 4.0, 7.0, 10.0]),
                                        min_size=k, max_size=k), min_size=n, max_size=n)))
    T[:, 0] = np.maximum(T[:, 0], 1.0)  # every job can run on type 0
    s = (np.ones(n) if unit_scale else
         np.array(draw(st.lists(st.integers(1, 2), min_size=n, max_size=n))))
    s = np.minimum(s, caps[0])
    w = (np.ones(n) if unit_weights else
         np.array(draw(st.lists(st.sampled_from([0.5, 1.0, 2.0]), min_size=n, max_size=n))))
    steps = np.array(draw(st.lists(st.integers(10, 1000), min_size=n, max_size=n)), float)
    jobs = fa.Jobs(T, scale_factor=s, weight=w, steps_remaining=steps)
    return jobs, fa.Cluster({f"t{j}": caps[j] for j in range(k)})


def _feasible(a, jobs, cluster):
    assert (a.x >= -1e-9).all()
    assert (a.x.sum(axis=1) <= 1 + 1e-7).all()
    load = jobs.scale_factor @ a.x
    assert (load <= cluster.capacity * (1 + 1e-7)).all()
    # prices are zero on types that are not saturated (complementary slackness)
    unsat = load < cluster.capacity * (1 - 1e-6)
    assert np.all(a.prices[unsat] <= 1e-7)
    assert a.certificate.ok


POLICIES = {
    "max_min": lambda j, c: fa.max_min_fairness(j, c),
    "water": lambda j, c: fa.max_min_fairness(j, c, water_filling=True),
    "makespan": lambda j, c: fa.min_makespan(j, c),
    "ftf": lambda j, c: fa.finish_time_fairness(j, c),
    "total": lambda j, c: fa.max_total_throughput(j, c),
    "fifo": lambda j, c: fa.fifo(j, c),
    "sjf": lambda j, c: fa.shortest_job_first(j, c),
    "cost": lambda j, c: fa.min_cost(j, c, np.arange(1.0, c.num_types + 1)),
}


@pytest.mark.parametrize("name", sorted(POLICIES))
@settings(max_examples=8, deadline=None, derandomize=True)
@given(inst=instances())
def test_capacity_never_exceeded_and_prices(name, inst):
    jobs, cluster = inst
    _feasible(POLICIES[name](jobs, cluster), jobs, cluster)


@st.composite
def mid_instances(draw):
    """64-200 jobs (the structured solvers' range), 1-4 types, missing entries, weights."""
    n = draw(st.integers(64, 200))
    k = draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    T = rng.lognormal(0.0, 0.8, n)[:, None] * np.c_[np.ones(n), rng.uniform(0.1, 1.2, (n, k - 1))]
    if draw(st.booleans()):
        T[rng.random((n, k)) < 0.2] = 0.0
        T[:, 0] = np.maximum(T[:, 0], 0.5)
    caps = np.array(draw(st.lists(st.integers(2, n), min_size=k, max_size=k)))
    s = np.minimum(rng.choice([1, 1, 1, 2, 4], n), caps.min())
    w = rng.choice([0.5, 1.0, 2.0], n) if draw(st.booleans()) else np.ones(n)
    jobs = fa.Jobs(T, scale_factor=s, weight=w, steps_remaining=rng.uniform(1e3, 1e5, n),
                   elapsed=rng.uniform(0.0, 3600.0, n))
    return jobs, fa.Cluster({f"t{j}": int(caps[j]) for j in range(k)})


@settings(max_examples=15, deadline=None, derandomize=True)
@given(inst=instances())
def test_fast_path_below_its_range_is_the_full_lp(inst):
    """Below the structured solver's range (64 jobs) method="fast" solves the whole LP."""
    jobs, cluster = inst
    a = MaxMinFairness(jobs, cluster)
    # symmetry=False: the solvers themselves (repeated jobs would be solved per class)
    fast = a.solve(method="fast", work_conserving=False, symmetry=False)
    full = a.solve(method="highs", work_conserving=False, symmetry=False)
    assert fast.stats.path == full.stats.path == ("exact-lp",)
    assert fast.stats.fallbacks == ()
    assert fast.objective == pytest.approx(full.objective, rel=1e-7, abs=1e-9)


@settings(max_examples=15, deadline=None, derandomize=True)
@given(inst=mid_instances())
def test_fast_path_matches_full_lp(inst):
    """The structured level solver (64+ jobs) equals the full LP; where it hands the stage
    over, stats.fallbacks says why."""
    jobs, cluster = inst
    a = MaxMinFairness(jobs, cluster)
    # symmetry=False: the solvers themselves (repeated jobs would be solved per class)
    fast = a.solve(method="fast", work_conserving=False, symmetry=False,
                   tuning=Tuning(structured_min_jobs=64))
    full = a.solve(method="highs", work_conserving=False, symmetry=False)
    assert full.stats.path == ("exact-lp",)
    if fast.stats.fallbacks:
        assert fast.stats.path[0] == "structured-level" and fast.stats.path[-1] == "exact-lp"
        assert all(f.startswith("structured-level->exact-lp: ") for f in fast.stats.fallbacks)
    else:
        assert fast.stats.path[0] == "structured-level" and "exact-lp" not in fast.stats.path
    assert fast.objective == pytest.approx(full.objective, rel=1e-7, abs=1e-9)


def _large(n, seed=0, k=3):
    """Gavel-like instance: log-normal speeds, slower types at per-job ratios, gangs of 1-8."""
    rng = np.random.default_rng(seed)
    ratio = np.c_[np.ones(n), rng.uniform(0.1, 0.9, (n, k - 1))]
    T = rng.lognormal(0.0, 0.8, n)[:, None] * 10.0 * ratio
    s = rng.choice([1, 2, 4, 8], n, p=[0.7, 0.1, 0.15, 0.05])
    return T, s


def test_newton_prices_match_the_lp_prices():
    """The Newton estimate (sampled phase, then all jobs) is close enough to the exact LP
    optimum that one small master LP (rarely two or three) around it is certified: no hand-over
    to the full LP, and the certified prices equal the full LP's."""
    n = 2500  # > 2 x the sample: both phases run
    T, s = _large(n)
    cl = fa.Cluster({"a": n // 4, "b": n // 4, "c": n // 4})
    jobs = fa.Jobs(T, scale_factor=s)
    exact = fa.max_min_fairness(jobs, cl, method="highs", work_conserving=False)
    fast = fa.max_min_fairness(jobs, cl, work_conserving=False)
    assert fast.stats.path[0] == "structured-level" and "exact-lp" not in fast.stats.path
    assert fast.stats.fallbacks == ()
    assert fast.stats.solves <= 3
    assert fast.objective == pytest.approx(exact.objective, rel=1e-9)
    np.testing.assert_allclose(fast.prices / fast.prices[0], exact.prices / exact.prices[0],
                               rtol=5e-3)


def _clusters_and_jobs():
    n = 600
    T, s = _large(n, seed=3)
    rng = np.random.default_rng(4)
    g = n // 4
    cl = fa.Cluster({"a": g, "b": g, "c": g})
    zeros = T.copy()
    zeros[rng.random(T.shape) < 0.2] = 0.0
    zeros[:, 0] = np.maximum(zeros[:, 0], 1.0)
    four = np.c_[T, T[:, 2] * rng.uniform(0.5, 1.5, n)]
    return {
        "saturated": (fa.Jobs(T, scale_factor=s), cl),
        "weights (one job bottleneck)": (fa.Jobs(T, scale_factor=s,
                                                  weight=rng.choice([0.5, 1, 2, 4], n)), cl),
        "one type unpriced": (fa.Jobs(T, scale_factor=s),
                              fa.Cluster({"a": g, "b": g, "c": 100 * n})),
        "fastest type unpriced": (fa.Jobs(T, scale_factor=s),
                                  fa.Cluster({"a": 100 * n, "b": g, "c": g})),
        "missing throughputs": (fa.Jobs(zeros, scale_factor=s), cl),
        "four types": (fa.Jobs(four, scale_factor=s),
                       fa.Cluster({"a": g, "b": g, "c": g, "d": g // 2})),
        "one type": (fa.Jobs(T[:, :1], scale_factor=s), fa.Cluster({"a": g})),
        "scarce": (fa.Jobs(T, scale_factor=s), fa.Cluster({"a": 8, "b": 8, "c": 8})),
        "identical jobs": (fa.Jobs(np.repeat(T[:1], n, axis=0)), cl),
    }


@pytest.mark.parametrize("case", sorted(_clusters_and_jobs()))
def test_fast_level_matches_full_lp_at_scale(case):
    """The structured level solver equals the full LP, through Newton's estimate where one
    exists (identical jobs give demand one big jump: the full LP answers)."""
    jobs, cl = _clusters_and_jobs()[case]
    fast = fa.max_min_fairness(jobs, cl, work_conserving=False)
    full = fa.max_min_fairness(jobs, cl, method="highs", work_conserving=False)
    assert fast.certificate.ok and fast.certificate.relative_gap <= 1e-9
    assert fast.objective == pytest.approx(full.objective, rel=1e-9)
    _feasible(fast, jobs, cl)
    if case == "identical jobs":  # one symmetry class: its one-row LP is solved exactly
        assert fast.stats.path == ("symmetry:1", "exact-lp") and fast.stats.classes == 1
        assert fast.stats.fallbacks == ()
        # job by job: identical jobs give demand one big jump (Newton finds no balance);
        # they form one row class, aggregated in the master from Newton's last point (#15)
        plain = MaxMinFairness(jobs, cl).solve(work_conserving=False, symmetry=False)
        assert plain.stats.path == ("structured-level",) and plain.stats.fallbacks == ()
        assert plain.objective == pytest.approx(full.objective, rel=1e-9)
    else:
        assert fast.stats.path == ("structured-level",) and fast.stats.fallbacks == ()
        assert fast.stats.solves <= 3  # one small master LP, rarely two or three


def _structured_only(stats) -> bool:
    """No step of the whole-LP plan ran, and every hand-over was between structured steps
    (``floor-from-level`` declining to ``structured-floor``)."""
    return (not any(step.startswith("exact-lp") for step in stats.path)
            and all(f.startswith("floor-from-level->structured-floor") for f in stats.fallbacks))


@pytest.mark.parametrize("case", sorted(set(_clusters_and_jobs()) - {"identical jobs"}))
def test_work_conserving_stage_structured(case):
    """The work-conserving stage's structured solver (level duals scaled, or Newton prices, a
    small master and the k-price dual LP) equals the full LP's second stage, without solving
    the full LP; where the level allocation is already optimal no LP is solved at all."""
    jobs, cl = _clusters_and_jobs()[case]
    full = fa.max_min_fairness(jobs, cl, method="highs")
    fast = fa.max_min_fairness(jobs, cl)
    assert _structured_only(fast.stats)
    assert fast.stats.path[0] == "structured-level"
    assert fast.stats.path[1] in ("floor-from-level", "structured-floor")
    wc_fast, wc_full = fast.stage_certificates[1], full.stage_certificates[1]
    assert wc_fast.ok and wc_fast.relative_gap <= 1e-6
    assert wc_fast.primal_value == pytest.approx(wc_full.primal_value, rel=1e-6)
    # the full LP's second stage may give up stage_tol (1e-9) of the level
    assert fast.objective == pytest.approx(full.objective, rel=3e-9, abs=2e-9)
    _feasible(fast, jobs, cl)
    if case == "saturated":
        assert fast.stats.solves == 1
        assert fast.stats.path == ("structured-level", "floor-from-level")


@pytest.mark.parametrize("case", ["one type unpriced", "four types"])
def test_floor_duals_find_the_jobs_to_free(case):
    """Where the band of near-ties misses jobs that a complementary price vector needs free,
    the elastic dual LP names those constants in the way (``floor-freed:<jobs>`` in the path);
    the next round reaches the full LP's optimum without solving it."""
    jobs, cl = _clusters_and_jobs()[case]
    full = fa.max_min_fairness(jobs, cl, method="highs")
    fast = fa.max_min_fairness(jobs, cl)
    assert _structured_only(fast.stats)
    freed = [step for step in fast.stats.path if step.startswith("floor-freed:")]
    if case == "one type unpriced":
        # the near-tie test relative to the price spread (#15) keeps the jobs that need to be
        # free out of the first master; that master overloads a type with its constants, so
        # the constants nearest a tie on it are freed once (``floor-freed``, before any band
        # widening) and the next master certifies (3 solves; 4 before that rule)
        assert fast.stats.path[:3] == ("structured-level", "floor-from-level",
                                       "structured-floor")
        assert freed == list(fast.stats.path[3:]) and len(freed) == 1
        assert fast.stats.solves <= 3
    else:
        assert freed and all(int(step.split(":")[1]) > 0 for step in freed)
    assert "structured-floor" in fast.stats.path
    assert fast.stage_certificates[1].primal_value == pytest.approx(
        full.stage_certificates[1].primal_value, rel=1e-6)


def test_work_conserving_stage_when_level_duals_do_not_certify():
    """Finish-time fairness has one bottleneck job: the second stage moves the others, the
    level duals do not certify, and the Newton-priced floor solver still equals the full
    LP."""
    T, s = _large(600, seed=5)
    rng = np.random.default_rng(6)
    jobs = fa.Jobs(T, scale_factor=s, steps_remaining=rng.uniform(1e3, 1e5, 600),
                   elapsed=rng.uniform(0, 3600, 600))
    cl = fa.Cluster({"a": 150, "b": 150, "c": 150})
    # (the Dinkelbach sequence: the default's closed-form optimum has no level duals)
    sequence = fa.throughput.Tuning(ftf_closed_form=False)
    fast = fa.finish_time_fairness(jobs, cl, tuning=sequence)
    full = fa.finish_time_fairness(jobs, cl, method="highs", tuning=sequence)
    assert fast.stats.solves > 1
    # Dinkelbach levels by the structured solver, then the Newton-priced floor solver
    assert "structured-floor" in fast.stats.path and _structured_only(fast.stats)
    assert fast.stats.count("dinkelbach") >= 1
    assert fast.stage_certificates[1].primal_value == pytest.approx(
        full.stage_certificates[1].primal_value, rel=1e-6)


@pytest.mark.parametrize("policy", ["max_min", "ftf"])
@settings(max_examples=12, deadline=None, derandomize=True)
@given(inst=mid_instances())
def test_structured_solvers_match_full_lp(policy, inst):
    """Both stages of the structured solvers (Newton prices, masters, closed-form and k-price
    duals) agree with HiGHS on the whole LP, and every certificate holds."""
    jobs, cl = inst
    solve = fa.max_min_fairness if policy == "max_min" else fa.finish_time_fairness
    fast, full = solve(jobs, cl), solve(jobs, cl, method="highs")
    assert all(c.ok for c in fast.stage_certificates)
    assert fast.objective == pytest.approx(full.objective, rel=1e-6, abs=1e-8)
    assert fast.stage_certificates[1].primal_value == pytest.approx(
        full.stage_certificates[1].primal_value, rel=1e-6, abs=1e-8)
    _feasible(fast, jobs, cl)


@settings(max_examples=15, deadline=None, derandomize=True)
@given(inst=instances())
def test_sharing_incentive_objective(inst):
    """§4.4: the policy objective is at least its value at the isolated (1/n) split."""
    jobs, cluster = inst
    iso = isolated_split(jobs, cluster)
    tp_iso = (jobs.throughput * iso).sum(axis=1)
    mm = fa.max_min_fairness(jobs, cluster)
    level_iso = np.min(mm.metric / mm.effective_throughput * tp_iso)
    assert mm.objective >= level_iso - 1e-7
    mk = fa.min_makespan(jobs, cluster)
    assert mk.objective <= np.max(jobs.steps_remaining / tp_iso) * (1 + 1e-7)
    ftf = fa.finish_time_fairness(jobs, cluster)
    assert ftf.objective <= 1.0 + 1e-6  # rho = 1 at the isolated split


@settings(max_examples=15, deadline=None, derandomize=True)
@given(inst=instances(unit_weights=True, unit_scale=True))
def test_sharing_incentive_every_job(inst):
    """Equal weights and gangs of one: every job does at least as well as with 1/n."""
    jobs, cluster = inst
    iso = isolated_split(jobs, cluster)
    tp_iso = (jobs.throughput * iso).sum(axis=1)
    for wf in (False, True):
        a = fa.max_min_fairness(jobs, cluster, water_filling=wf)
        assert np.all(a.effective_throughput >= tp_iso * (1 - 1e-6) - 1e-9)


def test_work_conserving_stage_fills_idle_capacity():
    # 2 jobs, 3 GPUs: max-min alone is satisfied with any level-optimal split; the second
    # stage gives the idle GPU time to the job that can use it.
    jobs = fa.Jobs([[1.0, 0.0], [1.0, 1.0]])
    cl = fa.Cluster({"a": 1, "b": 2})
    a = fa.max_min_fairness(jobs, cl)
    assert a.x[0, 0] == pytest.approx(1.0)
    assert a.x[1].sum() == pytest.approx(1.0)
    assert len(a.stage_certificates) == 2


# --------------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------------
def test_bad_inputs():
    jobs = fa.Jobs(T3)
    with pytest.raises(fa.InputError, match="cluster"):
        fa.max_min_fairness(jobs, {"v100": 1})
    with pytest.raises(fa.InputError, match="columns"):
        fa.max_min_fairness(jobs, fa.Cluster({"v100": 1}))
    with pytest.raises(fa.InputError, match="scale_factor"):
        fa.max_min_fairness(fa.Jobs([[1.0, 0.0]], scale_factor=[4]), fa.Cluster(C2))
    with pytest.raises(fa.InputError, match="steps_remaining"):
        fa.min_makespan(jobs, fa.Cluster(C2))
    with pytest.raises(fa.InputError, match="steps_remaining"):
        fa.finish_time_fairness(fa.Jobs(T3, steps_remaining=[1, 0, 2]), fa.Cluster(C2))
    with pytest.raises(fa.InputError, match="method"):
        fa.max_min_fairness(jobs, fa.Cluster(C2), method="simplex")
    with pytest.raises(fa.InputError, match="cost"):
        fa.min_cost(jobs, fa.Cluster(C2), [1.0])
    with pytest.raises(fa.InputError, match="cost"):
        fa.min_cost(jobs, fa.Cluster(C2), [1.0, -1.0])
    with pytest.raises(fa.InputError, match="cost"):
        fa.min_cost(jobs, fa.Cluster(C2), {"v100": 1.0})
    js = fa.Jobs(T3, steps_remaining=[1, 1, 1])
    with pytest.raises(fa.InputError, match=r"slo\[1\]"):
        fa.min_cost(js, fa.Cluster(C2), [1.0, 1.0], slo=[1.0, -2.0, 1.0])
    with pytest.raises(fa.InputError, match="slo"):
        fa.min_cost(js, fa.Cluster(C2), [1.0, 1.0], slo=[1.0, 2.0])
    with pytest.raises(fa.InputError, match="order"):
        fa.fifo(jobs, fa.Cluster(C2), order=[1, 2])
    with pytest.raises(fa.InputError, match="unconsolidated_throughput"):
        fa.max_min_fairness(jobs, fa.Cluster(C2), unconsolidated_throughput=[[1.0]])
    with pytest.raises(fa.InputError, match="gap_tol"):
        fa.max_min_fairness(jobs, fa.Cluster(C2), gap_tol=-1)


def test_inputs_not_mutated():
    T = np.array(T3)
    before = T.copy()
    fa.max_min_fairness(fa.Jobs(T), fa.Cluster(C2))
    np.testing.assert_array_equal(T, before)


def test_fifo_arrival_semantics_serves_the_first_gang_job():
    # issue #16: 4 GPUs, a first-arrived 4-GPU job and four later 1-GPU jobs: job 0 runs
    jobs = fa.Jobs([[1.0]] * 5, scale_factor=[4, 1, 1, 1, 1])
    gpu = fa.Cluster({"gpu": 4})
    a = fa.fifo(jobs, gpu, order=range(5))
    np.testing.assert_allclose(a.x.ravel(), [1, 0, 0, 0, 0], atol=1e-6)
    assert a.certificate.ok
    # the paper's weighted-sum objective stays available by name, and differs
    o = fa.fifo(jobs, gpu, order=range(5), semantics="objective")
    assert o.x[0, 0] < 0.5 and o.certificate.ok
    with pytest.raises(fa.InputError, match="semantics"):
        fa.fifo(jobs, gpu, semantics="paper")


@pytest.mark.parametrize("seed,ties", [(3, False), (4, False), (5, True), (6, True), (7, True)])
def test_fifo_arrival_is_lexicographic_against_independent_lps(seed, ties):
    # without ties every stage is decided by the one-pass greedy (one certification LP);
    # with tied throughputs across types the LP stages take over
    from scipy.optimize import linprog

    rng = np.random.default_rng(seed)
    n, k = 12, 2
    T = (rng.choice([1.0, 2.5, 4.0], (n, k)) if ties else rng.uniform(1.0, 10.0, (n, k)))
    sf = rng.choice([1, 2, 4], n)
    cap = np.array([4.0, 6.0])
    a = fa.fifo(fa.Jobs(T, scale_factor=sf), fa.Cluster({"a": 4, "b": 6}), order=range(n))
    assert a.certificate.ok
    v = (a.x * T).sum(axis=1) / T.max(axis=1)
    # each job in arrival order: its v is the max keeping every earlier job at its v
    A_cap = np.zeros((k, n * k))
    A_time = np.zeros((n, n * k))
    for m in range(n):
        A_time[m, m * k:(m + 1) * k] = 1
        for j in range(k):
            A_cap[j, m * k + j] = sf[m]
    V = np.zeros((n, n * k))
    for m in range(n):
        V[m, m * k:(m + 1) * k] = T[m] / T[m].max()
    for m in range(n):
        A = np.vstack([A_cap, A_time, -V[:m]])
        b = np.r_[cap, np.ones(n), -(v[:m] - 1e-9)]
        r = linprog(-V[m], A_ub=A, b_ub=b, bounds=(0, 1), method="highs")
        assert r.status == 0
        assert v[m] >= -r.fun - 1e-5, m


def test_policy_registry_is_the_one_table():
    """Every Gavel policy is listed once: its builder, its one-call function (exported from
    fairalloc) and a description; the function's result names the policy."""
    from fairalloc.throughput import GAVEL_POLICIES, ThroughputPolicy, gavel_policy

    assert list(GAVEL_POLICIES) == ["max_min_fairness", "water_filling", "finish_time_fairness",
                                    "min_makespan", "max_total_throughput", "fifo",
                                    "shortest_job_first", "min_cost"]
    jobs = fa.Jobs([[40.0, 10.0], [12.0, 4.0]], steps_remaining=[100.0, 200.0])
    cl = fa.Cluster({"v100": 1, "k80": 1})
    for name, spec in GAVEL_POLICIES.items():
        assert spec.name == name and spec.description
        assert issubclass(spec.builder, ThroughputPolicy)
        assert getattr(fa, name) is spec.function
        assert getattr(fa, spec.builder.__name__) is spec.builder
        kw = {"cost": [3.0, 1.0]} if "cost" in spec.needs else {}
        r = spec.function(jobs, cl, **kw)
        assert r.certificate.ok and r.policy.startswith(name)
    with pytest.raises(fa.InputError, match="unknown Gavel policy") as e:
        gavel_policy("lottery")
    assert e.value.argument == "policy"


@pytest.mark.parametrize("method", ["highs", "fast", "cvxpy"])
def test_solve_writes_no_builder_state(method):
    """A builder's attributes are the same before and after solve() (every policy), so one
    builder can be solved again, with other options, and give the same answer."""
    jobs = fa.Jobs([[40.0, 10.0], [12.0, 4.0], [100.0, 50.0]], steps_remaining=[10, 20, 30])
    cl = fa.Cluster({"v100": 1, "k80": 1})
    builders = [fa.MaxMinFairness(jobs, cl), fa.FinishTimeFairness(jobs, cl),
                fa.MinMakespan(jobs, cl), fa.MaxTotalThroughput(jobs, cl),
                fa.FIFO(jobs, cl, semantics="objective" if method == "cvxpy" else "arrival"),
                fa.ShortestJobFirst(jobs, cl)]
    if method != "cvxpy":
        builders += [fa.MinCost(jobs, cl, cost=[3.0, 1.0]), fa.WaterFilling(jobs, cl)]
    for b in builders:
        before = dict(vars(b))
        first = b.solve(method=method)
        assert dict(vars(b)).keys() == before.keys(), type(b).__name__
        assert all(vars(b)[key] is value for key, value in before.items()), type(b).__name__
        again = b.solve(method=method)
        np.testing.assert_allclose(again.x, first.x, atol=1e-6)
        assert again.stats.path == first.stats.path
