"""FIFO (arrival order) with job pairs: the pruned pair columns and the greedy pass over pair
columns give the lexicographic optimum of the whole program (a reference solved here, stage by
stage, with every pair column)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize as so
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.throughput.instance import ColumnInstance
from fairalloc.throughput.ordering import forced_certificate, forced_prefix
from fairalloc.throughput.space_sharing import pair_rates, undominated_pairs
from fairalloc.tolerances import FEAS_TOL, GAP_TOL


def _reference(T, sf, cap, members, ptp):
    """Each job's normalised throughput ``v`` in the arrival-order (index order) lexicographic
    optimum over every single and pair column, by one HiGHS LP per job."""
    n, k = T.shape
    cols = []  # (members, rates, type, workers)
    for m in range(n):
        for j in range(k):
            if T[m, j] > 0 and sf[m] <= cap[j]:
                cols.append(((m,), (T[m, j],), j, sf[m]))
    for p, (a, b) in enumerate(members):
        for j in range(k):
            pw = max(sf[a], sf[b])
            if ptp[p, j].sum() > 0 and pw <= cap[j]:
                cols.append(((a, b), tuple(ptp[p, j]), j, pw))
    fastest = np.where((T > 0) & (sf[:, None] <= cap[None, :]), T, 0.0).max(axis=1)
    E = len(cols)
    V = np.zeros((n, E))
    time_ = np.zeros((n, E))
    W = np.zeros((k, E))
    for c, (mem, rates, j, w) in enumerate(cols):
        for m, r in zip(mem, rates):
            V[m, c] += r / fastest[m]
            time_[m, c] = 1.0
        W[j, c] = w
    A, b = np.vstack([time_, W]), np.r_[np.ones(n), cap]
    kept_A, kept_b, out = [], [], []
    for m in range(n):
        res = so.linprog(-V[m], A_ub=np.vstack([A] + kept_A) if kept_A else A,
                         b_ub=np.r_[b, kept_b], bounds=(0, None), method="highs")
        assert res.status == 0
        out.append(-res.fun)
        kept_A.append(-V[m][None, :])
        kept_b.append(res.fun + FEAS_TOL)  # v_m >= optimum (to the solver's tolerance)
    return np.array(out)


@st.composite
def _instances(draw):
    n = draw(st.integers(2, 6))
    k = draw(st.integers(1, 3))
    T = np.array(draw(st.lists(st.sampled_from([0.0, 1.0, 2.0, 3.0]), min_size=n * k,
                               max_size=n * k))).reshape(n, k)
    T[:, 0] = np.maximum(T[:, 0], 1.0)  # every job may run on type 0
    sf = np.array(draw(st.lists(st.sampled_from([1, 2]), min_size=n, max_size=n)))
    cap = np.array(draw(st.lists(st.sampled_from([1, 2, 3]), min_size=k, max_size=k)),
                   dtype=float)
    cap[0] = max(cap[0], 2.0)  # every gang fits on type 0
    everything = [(a, b) for a in range(n) for b in range(a + 1, n)]
    chosen = draw(st.lists(st.sampled_from(everything), unique=True, max_size=6))
    members = np.array(chosen or [(0, 1)])
    factors = np.array(draw(st.lists(st.sampled_from([0.0, 0.5, 0.8, 1.0, 1.25]),
                                     min_size=members.size * k, max_size=members.size * k)))
    ptp = (T[members].transpose(0, 2, 1) * factors.reshape(len(members), k, 2))
    return T, sf, cap, members, ptp


@settings(max_examples=40, deadline=None)
@given(_instances())
def test_property_fifo_pairs_equals_the_whole_lexicographic_program(inst):
    T, sf, cap, members, ptp = inst
    n = T.shape[0]
    jobs = fa.Jobs(T, scale_factor=sf)
    pairs = fa.JobPairs(members, ptp)
    r = fa.fifo(jobs, fa.Cluster({f"t{j}": int(c) for j, c in enumerate(cap)}),
                order=range(n), pairs=pairs)
    assert r.certificate.ok
    fastest = np.where((T > 0) & (sf[:, None] <= cap[None, :]), T, 0.0).max(axis=1)
    v = r.effective_throughput / fastest
    ref = _reference(T, sf, cap, members, ptp)
    # each stage is met to the certificates' accuracy (gap and feasibility tolerances), and an
    # error in one job's value moves later ones by as much: n jobs' worth at most
    tol = n * (GAP_TOL + FEAS_TOL) * 10
    assert np.allclose(v, ref, atol=tol), (v, ref)


def test_greedy_decides_every_stage_with_dominated_pairs():
    """Pairs worse than both members' single columns: every stage by the greedy pass, no LP
    (on main: ``fifo-greedy:0``, an LP per job)."""
    T = np.array([[4.0, 2.0], [4.0, 1.0], [3.0, 3.0], [2.0, 1.0]])
    members = np.array([[0, 1], [1, 2], [2, 3], [0, 3]])
    ptp = T[members].transpose(0, 2, 1) * 0.7
    r = fa.fifo(fa.Jobs(T), fa.Cluster({"a": 2, "b": 1}), order=range(4),
                pairs=fa.JobPairs(members, ptp))
    assert r.stats.path[:1] == ("fifo-greedy:4",)
    assert r.certificate.kind == "fifo-knapsack" and r.certificate.ok
    assert np.allclose(r.x, [[1, 0], [1, 0], [0, 1], [0, 0]])
    assert np.all(r.pair_x == 0)


def test_pairs_as_good_as_the_taken_type_stop_the_greedy_pass():
    """A pair that gives job 0 its single rate on the type it takes lets job 1 share job 0's
    worker at no cost to job 0: the LP stages decide (job 1 gets the pair's time)."""
    T = np.array([[2.0], [2.0]])
    pairs = fa.JobPairs([[0, 1]], [[[2.0, 1.0]]])
    r = fa.fifo(fa.Jobs(T), fa.Cluster({"a": 1}), order=[0, 1], pairs=pairs)
    assert r.stats.path[0] == "fifo-greedy:0"
    assert r.effective_throughput == pytest.approx([2.0, 1.0], abs=1e-6)
    assert r.certificate.ok


def test_undominated_pairs_keeps_what_an_optimum_may_use():
    jobs = fa.Jobs([[2.0, 1.0], [4.0, 1.0]])
    inst = ColumnInstance(jobs, fa.Cluster({"a": 1, "b": 1}),
                          fa.JobPairs([[1, 0]], [[[2.0, 1.0], [1.0, 1.0]]]))
    # order 0 then 1: job 0 (second member) is earlier; on "a" it gets 1 < 2, on "b" 1 == 1
    kept = undominated_pairs(inst, np.array([0, 1]))
    assert kept.throughput.tolist() == [[[0.0, 0.0], [1.0, 1.0]]]
    # order 1 then 0: job 1 gets 2 < 4 on "a" (dropped), 1 == 1 on "b" (kept)
    kept = undominated_pairs(inst, np.array([1, 0]))
    assert kept.throughput.tolist() == [[[0.0, 0.0], [1.0, 1.0]]]
    assert undominated_pairs(ColumnInstance(jobs, fa.Cluster({"a": 1, "b": 1})),
                             np.array([0, 1])) is None


def test_forced_certificate_fails_when_a_pair_beats_the_dual():
    """A pair column better than the job's single column violates the closed-form dual: the
    certificate reports it as a dual residual (and the greedy pass declines the job)."""
    A = np.array([[1.0, 0.5], [1.0, 0.5]])
    one = np.ones(2)
    order = np.array([0, 1])
    stop, x = forced_prefix(A, one, one, order)
    P = np.full((2, 2), -np.inf)
    P[0, 1] = 1.5  # job 0 with job 1 on type 1: 1.5 > mu + lambda = 1
    cert = forced_certificate(A, one, one, order, x, 0.0, GAP_TOL, FEAS_TOL, P).certificate
    assert cert.dual_residual == pytest.approx(0.5) and not cert.ok
    assert forced_prefix(A, one, one, order, P)[0] == 0
    P[0, 1] = 0.4  # no better than the single column: the same certificate holds
    assert forced_certificate(A, one, one, order, x, 0.0, GAP_TOL, FEAS_TOL, P).certificate.ok
    assert forced_prefix(A, one, one, order, P)[0] == 2


def test_pair_rates_only_counts_later_partners():
    inst = ColumnInstance(fa.Jobs([[2.0], [4.0]]), fa.Cluster({"a": 1}),
                          fa.JobPairs([[0, 1]], [[[1.0, 2.0]]]))
    assert pair_rates(inst, np.array([0, 1])).tolist() == [[0.5], [-np.inf]]
    assert pair_rates(inst, np.array([1, 0])).tolist() == [[-np.inf], [0.5]]
