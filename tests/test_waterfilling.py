"""Hierarchical water-filling (gavel.txt §4.3) and its Pareto efficiency (§4.4)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

import fairalloc as fa
from fairalloc.backends import HighsBackend
from fairalloc.throughput import WaterFilling
from tests.water_reference import rises_alone


def test_paper_example_hierarchical_builder():
    jobs = fa.Jobs([[1.0]] * 4, weight=[3, 1, 1, 1])
    r = WaterFilling(jobs, fa.Cluster({"gpu": 4}), single_level=True).solve()
    np.testing.assert_allclose(r.x.ravel(), 1.0, atol=1e-7)
    np.testing.assert_allclose(r.level_floors, 1.0, atol=1e-7)
    assert r.levels == 2
    # one level LP, then one saturation probe reaching every job's maximum (no bottleneck LP)
    assert len(r.stage_certificates) == 2 and all(c.ok for c in r.stage_certificates)


@pytest.mark.parametrize("gpus, expected", [(2, [0.5, 0.5, 1.0, 0.0]),
                                            (3, [0.75, 0.75, 1.0, 0.5])])
def test_fairness_and_fifo_entities(gpus, expected):
    """Entity A (fairness: a1, a2) and entity B (FIFO: b1 then b2), equal entity weights."""
    jobs = fa.Jobs([[1.0]] * 4)
    r = fa.water_filling(jobs, fa.Cluster({"gpu": gpus}), entities=["A", "A", "B", "B"],
                         entity_policies={"B": "fifo"}, order=[0, 1, 2, 3])
    np.testing.assert_allclose(r.x.ravel(), expected, atol=1e-7)


def test_entity_weights_split_capacity():
    jobs = fa.Jobs([[1.0]] * 6)
    r = fa.water_filling(jobs, fa.Cluster({"gpu": 3}), entities=[0, 0, 0, 1, 1, 2],
                         entity_weights={0: 1.0, 1: 1.0, 2: 1.0})
    # each entity gets 1 GPU: entity 0 splits it in three, entity 1 in two
    np.testing.assert_allclose(r.x.ravel(), [1 / 3] * 3 + [0.5, 0.5, 1.0], atol=1e-7)


def test_anchor_case_and_low_levels():
    T = np.array([[0.0, 1.0]] * 10 + [[1.0, 0.1]])
    r = fa.water_filling(fa.Jobs(T), fa.Cluster({"v100": 4, "k80": 1}))
    assert r.metric[10] == pytest.approx(1 / 0.82, rel=1e-7)  # Gavel's code: 0.633
    # levels far below 0.1 (Gavel's absolute slack freezes everything there)
    jobs = fa.Jobs(np.ones((200, 1)))
    r = fa.water_filling(jobs, fa.Cluster({"gpu": 1}))
    np.testing.assert_allclose(r.x.ravel(), 1 / 200, rtol=1e-6)


@pytest.mark.parametrize("method", ["highs", "fast"])
def test_water_filling_first_level_is_max_min(method):
    rng = np.random.default_rng(7)
    n = 80
    T = rng.uniform(1, 10, (n, 3)) * [3, 2, 1]
    jobs = fa.Jobs(T, scale_factor=rng.choice([1, 2, 4], n), weight=rng.uniform(0.5, 2, n))
    cl = fa.Cluster({"v100": 20, "p100": 20, "k80": 20})
    mm = fa.max_min_fairness(jobs, cl, work_conserving=False)
    wf = fa.max_min_fairness(jobs, cl, water_filling=True, method=method)
    assert wf.objective == pytest.approx(mm.objective, rel=1e-7)
    assert wf.metric.min() >= mm.objective * (1 - 1e-7)
    assert _pareto_gain(jobs, cl, wf) <= 1e-6 * n


@pytest.mark.parametrize("entities", [None, 3])
def test_water_filling_at_scale_is_pareto_with_few_lps(entities):
    """300 Gavel-like jobs: a handful of LPs per level (a slack on the floors once let every
    job rise by the others' slack, and each bottleneck LP then freed one job: 674 LPs for 128
    jobs), Pareto efficient, and the same levels as the full-LP path."""
    rng = np.random.default_rng(11)
    n = 300
    T = rng.lognormal(0, 0.8, n)[:, None] * np.c_[np.ones(n), rng.uniform(0.1, 0.9, (n, 2))]
    jobs = fa.Jobs(T, scale_factor=rng.choice([1, 2, 4, 8], n, p=[0.7, 0.1, 0.15, 0.05]))
    cl = fa.Cluster({"v100": 75, "p100": 75, "k80": 75})
    kw = {} if entities is None else {"entities": np.arange(n) % entities,
                                      "entity_weights": {0: 1.0, 1: 2.0, 2: 3.0}}
    fast = fa.water_filling(jobs, cl, **kw)
    full = fa.water_filling(jobs, cl, method="highs", **kw)
    assert fast.stats.solves <= 4 * fast.levels + 4
    np.testing.assert_allclose(fast.level_floors, full.level_floors, rtol=1e-6, atol=1e-8)
    assert _pareto_gain(jobs, cl, fast) <= 1e-6 * fast.metric.sum()


def _pareto_gain(jobs, cluster, r):
    """max sum_m u_m(X') - sum_m u_m(X) over X' with u(X') >= u(X) (0 iff Pareto efficient)."""
    n, k = jobs.throughput.shape
    cap = cluster.capacity
    s = jobs.scale_factor
    allowed = (jobs.throughput > 0) & (s[:, None] <= cap[None, :])
    ei, ej = np.nonzero(allowed)
    E = ei.size
    e_eq = np.where(allowed, jobs.throughput, 0) @ (cap / cap.sum())
    u_coef = s[ei] * jobs.throughput[ei, ej] / e_eq[ei]
    U = sp.csr_matrix((u_coef, (ei, np.arange(E))), shape=(n, E))
    u_now = U @ r.x[ei, ej]
    A = sp.vstack([sp.csr_matrix((np.ones(E), (ei, np.arange(E))), shape=(n, E)),
                   sp.csr_matrix((s[ei], (ej, np.arange(E))), shape=(k, E)), -U])
    b = np.r_[np.ones(n), cap, -u_now * (1 - 1e-9)]
    res = linprog(-np.asarray(U.sum(axis=0)).ravel(), A_ub=A, b_ub=b, bounds=(0, 1),
                  method="highs")
    assert res.status == 0
    return -res.fun - u_now.sum()


@st.composite
def hierarchies(draw):
    n = draw(st.integers(2, 8))
    k = draw(st.integers(1, 3))
    T = np.array(draw(st.lists(st.lists(st.sampled_from([0.0, 1.0, 2.0, 5.0, 9.0]),
                                        min_size=k, max_size=k), min_size=n, max_size=n)))
    T[:, -1] = np.maximum(T[:, -1], 1.0)
    caps = draw(st.lists(st.integers(1, 3), min_size=k, max_size=k))
    ents = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    pol = {e: draw(st.sampled_from(["fairness", "fifo"])) for e in set(ents)}
    ew = {e: draw(st.sampled_from([0.5, 1.0, 3.0])) for e in set(ents)}
    w = np.array(draw(st.lists(st.sampled_from([1.0, 2.0]), min_size=n, max_size=n)))
    jobs = fa.Jobs(T, weight=w)
    return jobs, fa.Cluster({f"t{j}": caps[j] for j in range(k)}), ents, pol, ew


@settings(max_examples=25, deadline=None, derandomize=True)
@given(h=hierarchies())
def test_water_filling_is_pareto_efficient(h):
    """§4.4: no job's level can rise without another's falling (checked by an LP)."""
    jobs, cl, ents, pol, ew = h
    r = fa.water_filling(jobs, cl, entities=ents, entity_policies=pol, entity_weights=ew)
    assert _pareto_gain(jobs, cl, r) <= 1e-6 * max(1.0, r.metric.sum())
    assert (jobs.scale_factor @ r.x <= cl.capacity + 1e-7).all()
    assert (r.x.sum(axis=1) <= 1 + 1e-7).all()
    np.testing.assert_allclose(r.metric, r.level_floors, rtol=1e-6, atol=1e-7)


@st.composite
def large_hierarchies(draw):
    """64-120 jobs (the structured level solver's range), 1-3 types, 1-4 entities."""
    n = draw(st.integers(64, 120))
    k = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    T = rng.lognormal(0.0, 0.8, n)[:, None] * np.c_[np.ones(n), rng.uniform(0.1, 1.2, (n, k - 1))]
    T[rng.random((n, k)) < 0.2] = 0.0
    T[:, -1] = np.maximum(T[:, -1], 0.5)
    caps = rng.integers(4, n // 2, k)
    ents = [int(e) for e in rng.integers(0, 4, n)]
    pol = {e: draw(st.sampled_from(["fairness", "fifo"])) for e in sorted(set(ents))}
    ew = {e: draw(st.sampled_from([0.5, 1.0, 3.0])) for e in sorted(set(ents))}
    jobs = fa.Jobs(T, weight=rng.choice([1.0, 2.0], n))
    return jobs, fa.Cluster({f"t{j}": int(caps[j]) for j in range(k)}), ents, pol, ew


@settings(max_examples=10, deadline=None, derandomize=True)
@given(h=large_hierarchies())
def test_fast_and_full_water_filling_agree(h):
    """64+ jobs: every level goes through the structured level solver (certified, or handed to
    the full LP with the reason in stats.fallbacks) and the levels equal the full LPs'."""
    jobs, cl, ents, pol, ew = h
    a = fa.water_filling(jobs, cl, entities=ents, entity_policies=pol, entity_weights=ew,
                         method="highs")
    b = fa.water_filling(jobs, cl, entities=ents, entity_policies=pol, entity_weights=ew,
                         method="fast")
    levels = b.stats.count("water-filling-level")
    assert levels == b.levels
    # the level plan's hand-overs; the others are the bottleneck LP plan's (the end check's LP
    # at the allocation's exact levels: a thin face, retried at relaxed floors; a warm
    # bottleneck LP whose point did not certify, solved again cold)
    level_fb = [f for f in b.stats.fallbacks
                if not f.startswith(("bottleneck-lp->", "bottleneck-lp+warm->"))]
    handed = sum(int(f.rsplit("(×", 1)[1][:-1]) if f.endswith(")") and "(×" in f else 1
                 for f in level_fb)  # (a repeated hand-over is written once, counted)
    # every level tried the structured solver first (until it is dropped after hand-overs),
    # and each of its hand-overs went to a whole-LP step of the level's plan
    tried = b.stats.count("structured-level")
    assert handed <= tried <= levels
    assert all(f.startswith("structured-level->exact-lp") for f in level_fb)
    whole = sum(b.stats.count(s) for s in ("exact-lp", "exact-lp+warm"))
    assert whole >= handed + (levels - tried)
    assert "structured-level" not in a.stats.path
    np.testing.assert_allclose(a.level_floors, b.level_floors, rtol=1e-6, atol=1e-7)


def test_bad_inputs():
    jobs = fa.Jobs([[1.0]] * 3)
    cl = fa.Cluster({"gpu": 1})
    with pytest.raises(fa.InputError, match="entities"):
        fa.water_filling(jobs, cl, entities=[0, 1])
    # an entity without jobs may be named (its jobs finished: Gavel passes it), not misvalued
    with pytest.raises(fa.InputError, match="entity_weights"):
        fa.water_filling(jobs, cl, entities=[0, 0, 1], entity_weights={2: 0.0})
    with pytest.raises(fa.InputError, match="entity_weights"):
        fa.water_filling(jobs, cl, entities=[0, 0, 1], entity_weights={1: -1.0})
    with pytest.raises(fa.InputError, match="entity_policies"):
        fa.water_filling(jobs, cl, entities=[0, 0, 1], entity_policies={1: "lottery"})
    with pytest.raises(fa.InputError, match="entity_policies"):
        fa.water_filling(jobs, cl, entities=[0, 0, 1], entity_policies={5: "lifo"})
    with pytest.raises(fa.InputError, match="work_conserving"):
        fa.water_filling(jobs, cl, work_conserving=False)
    with pytest.raises(fa.InputError, match="method"):
        fa.water_filling(jobs, cl, method="cvxpy")
    with pytest.raises(fa.InputError, match="order"):
        fa.water_filling(jobs, cl, order=[0])
    b = fa.MaxMinFairness(jobs, cl, water_filling=True)
    b.add_constraint(b.x[0, 0] <= 0.1)
    with pytest.raises(fa.InputError, match="water_filling"):
        b.solve()


# --------------------------------------------------------------------------------------------
# issue #16: decisions robust to dual noise on a Gavel-style hierarchical instance
# --------------------------------------------------------------------------------------------
def _gavel_hierarchy(seed=2, n=300):
    """10 entities with weights 1-5 and a random fifo / fairness policy each, n jobs with
    random throughputs, scale factors and priorities, 64 GPUs of each of 3 types."""
    rng = np.random.default_rng(seed)
    T = rng.uniform(0.5, 10, (n, 3)) * np.array([1, 0.6, 0.3])
    sf = rng.choice([1, 2, 4, 8], n, p=[.5, .25, .15, .1])
    w = rng.integers(1, 4, n).astype(float)
    ents = rng.integers(0, 10, n)
    ew = {e: float(rng.integers(1, 6)) for e in range(10)}
    ep = {e: str(rng.choice(["fifo", "fairness"])) for e in range(10)}
    jobs = fa.Jobs(T, scale_factor=sf, weight=w)
    kw = dict(entities=list(ents), entity_weights=ew, entity_policies=ep,
              order=rng.permutation(n))
    return jobs, fa.Cluster({"v100": 64, "p100": 64, "k80": 64}), kw


def _risers(r, jobs, cluster):
    """Jobs whose level can rise alone (every other level kept), by independent LPs."""
    cap = cluster.capacity
    lev = jobs.scale_factor / (jobs.throughput @ (cap / cap.sum())) * (r.x * jobs.throughput
                                                                        ).sum(axis=1)
    return np.flatnonzero(rises_alone(jobs, cluster, lev) > 1e-6).tolist()


def test_gavel_hierarchy_no_frozen_job_can_rise_alone():
    jobs, cl, kw = _gavel_hierarchy()
    r = fa.water_filling(jobs, cl, **kw)
    assert r.certificate.ok
    assert _risers(r, jobs, cl) == []


class _NoisyDualsHighs(HighsBackend):
    """HiGHS with floating-point noise injected at the public backend boundary: zero duals on
    ``>=`` rows (the level rows) come back as 5e-17, and every dual is off by a relative
    1e-12 (within a solver's accuracy), so a level's dual bound falls just below its value (a
    room D - theta below 0: rounding, not a proof)."""

    def _solve_lp(self, lp, **kw):
        import dataclasses

        sol = super()._solve_lp(lp, **kw)
        if sol.row_duals is None:
            return sol
        y = sol.row_duals * (1.0 - 1e-12)
        lower_only = np.isfinite(lp.row_lower) & ~np.isfinite(lp.row_upper)
        y[lower_only & (y == 0.0)] = 5e-17
        return dataclasses.replace(sol, row_duals=y)


@pytest.mark.parametrize("method", ["highs", "fast"])
def test_water_filling_decisions_robust_to_dual_noise(method):
    # levels whose zero job duals come back as 5e-17 (noise) next to a rise bound that is
    # rounding: the old rule (a) froze every such job although each could still rise
    jobs, _, kw = _gavel_hierarchy(n=60)
    cl = fa.Cluster({"v100": 12, "p100": 12, "k80": 12})
    clean = fa.water_filling(jobs, cl, **kw)
    r = fa.water_filling(jobs, cl, backend=_NoisyDualsHighs(), method=method, **kw)
    assert r.certificate.ok
    # the water-filling levels are unique: the same as without the noise
    np.testing.assert_allclose(r.metric, clean.metric, rtol=1e-5, atol=1e-7)
    assert _risers(r, jobs, cl) == []


def test_water_filling_finishes_when_the_only_rises_are_below_the_level_accuracy() -> None:
    # throughputs across 18 decades: after level 2 the bottleneck LP let one job rise by 3e-7
    # of its floor (below the level's certified accuracy, so the next level was 0) and no job
    # was ever frozen: SolverError "did not finish within 5 levels". Rises below twice the
    # level accuracy are no evidence, and every level freezes a job.
    T = np.array([[0.346, 753.57, 1.77e-4, 0.0], [0.0, 0.0, 0.239, 8.62e6],
                  [2.76e5, 3.73e-11, 9.76e-12, 3.24e-4], [1497.7, 0.0791, 0.0, 0.0],
                  [1.64e-4, 586.25, 6.86e-6, 1.16e-6]])
    r = fa.max_min_fairness(fa.Jobs(T), fa.Cluster({"t0": 5, "t1": 5, "t2": 4, "t3": 2}),
                            water_filling=True)
    assert r.certificate.ok
    assert r.stats.solves <= 5 * 3
    assert np.all(r.metric >= r.metric.min() * (1 - 1e-6))
    assert r.metric.max() > r.metric.min() * 2  # the job that can rise did rise


def test_an_entity_with_no_jobs_is_accepted_and_changes_nothing():
    """Gavel's entity_to_job_mapping may hold an entity whose jobs all finished ({'b': []}):
    its weight and policy are checked but change nothing (issues #27, #29)."""
    jobs = fa.Jobs([[1.0], [1.0], [1.0]])
    cl = fa.Cluster({"gpu": 1})
    kw = dict(entities=["a", "c", "c"], entity_policies={"c": "fifo"}, order=[0, 1, 2])
    plain = fa.water_filling(jobs, cl, entity_weights={"a": 2, "c": 1}, **kw)
    with_empty = fa.water_filling(jobs, cl, entity_weights={"a": 2, "c": 1, "b": 5.0},
                                  **{**kw, "entity_policies": {"c": "fifo", "b": "fifo"}})
    np.testing.assert_array_equal(plain.x, with_empty.x)
    assert with_empty.certificate.ok
    with pytest.raises(fa.InputError, match=r"entity_weights\['b'\]"):
        fa.water_filling(jobs, cl, entity_weights={"a": 2, "b": -1.0}, **kw)
    with pytest.raises(fa.InputError, match=r"entity_policies\['b'\]"):
        fa.water_filling(jobs, cl, entity_policies={"c": "fifo", "b": "lottery"},
                         entities=kw["entities"], order=kw["order"])
