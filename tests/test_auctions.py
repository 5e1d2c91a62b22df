"""Partial-allocation auctions (Themis §3.3; Cole-Gkatzelis-Goel) and multi-round auctions."""

from __future__ import annotations

import itertools
import math
from functools import partial

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.auctions import (
    BidTable,
    MultiRoundAuction,
    SingleJobApp,
    SuccessiveHalvingApp,
    Topology,
    bid_table,
    bundle_auction,
    gpu_auction,
    partial_allocation,
    single_job_rho,
)
from fairalloc.backends import LinearProgram, get_backend
from fairalloc.testing.strategies import auction_instances
from tests.fuzz.checks import brute_force_nash as brute_force
from tests.fuzz.strategies import bundle_instances

# ============================================================================================
# helpers
# ============================================================================================


def pareto_slack(U: np.ndarray, x: np.ndarray, s: np.ndarray) -> float:
    """max sum_i t_i s.t. u_i(y) >= u_i(x) + t_i, t >= 0, sum_i y_i <= s (0 iff x is PE)."""
    n, m = U.shape
    # variables: y (n*m), t (n); minimise -sum t
    c = np.r_[np.zeros(n * m), -np.ones(n)]
    rows_util = np.hstack([np.kron(np.eye(n), np.ones((1, m))) * np.tile(U.ravel(), (n, 1)),
                           -np.eye(n)])
    rows_sup = np.hstack([np.tile(np.eye(m), (1, n)), np.zeros((m, n))])
    A = np.vstack([rows_util, rows_sup])
    lower = np.r_[np.einsum("ij,ij->i", U, x), np.full(m, -np.inf)]
    upper = np.r_[np.full(n, np.inf), s]
    lp = LinearProgram.build(c, A, lower, upper, 0.0, None)
    sol = get_backend("highs").solve_lp(lp)
    assert sol.status == "optimal"
    return -sol.objective


@st.composite
def markets(draw, max_n: int = 5, max_m: int = 4, integer: bool | None = None):
    """Valid linear markets: every agent values some good with positive supply."""
    n = draw(st.integers(1, max_n))
    m = draw(st.integers(1, max_m))
    use_int = draw(st.booleans()) if integer is None else integer
    elem = (st.sampled_from([0.0, 1.0, 2.0, 3.0, 5.0]) if use_int
            else st.one_of(st.just(0.0), st.floats(0.01, 10.0)))
    U = np.array(draw(st.lists(st.lists(elem, min_size=m, max_size=m), min_size=n,
                               max_size=n)), dtype=float)
    fav = draw(st.lists(st.integers(0, m - 1), min_size=n, max_size=n))
    U[np.arange(n), fav] = np.maximum(U[np.arange(n), fav], 1.0)
    s = np.array(draw(st.lists(st.sampled_from([0.5, 1.0, 2.0]), min_size=m, max_size=m)))
    return U, s


# ============================================================================================
# divisible partial allocation: hand-checked examples
# ============================================================================================
def test_two_agents_hand_computed():
    # PF: agent 0 gets good 0 (utility 2), agent 1 good 1 (utility 1); prices (1, 1).
    # Without agent 0, agent 1 gets both (2): c_0 = 1/2. Without 1, agent 0 gets 3: c_1 = 2/3.
    r = partial_allocation([[2.0, 1.0], [1.0, 1.0]])
    np.testing.assert_allclose(r.pf_allocation, [[1, 0], [0, 1]], atol=1e-9)
    assert r.prices.tolist() == pytest.approx([1.0, 1.0], abs=1e-9)
    assert r.fraction.tolist() == pytest.approx([0.5, 2 / 3], abs=1e-9)
    np.testing.assert_allclose(r.allocation, [[0.5, 0], [0, 2 / 3]], atol=1e-9)
    assert r.leftover.tolist() == pytest.approx([0.5, 1 / 3], abs=1e-9)
    assert r.utility.tolist() == pytest.approx([1.0, 2 / 3], abs=1e-9)
    assert r.certificate.ok and r.certificate.kind == "eisenberg_gale"
    assert r.fraction_error.max() <= 1e-9


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_identical_agents_closed_form(n):
    # PF splits every good equally; without i the others get 1/(n-1) each:
    # c_i = ((1/n) / (1/(n-1)))^(n-1) = (1 - 1/n)^(n-1) -> 1/e from above
    U = np.tile([3.0, 1.0], (n, 1))
    r = partial_allocation(U, supply=[2.0, 1.0])
    assert r.fraction.tolist() == pytest.approx([(1 - 1 / n) ** (n - 1)] * n, rel=1e-8)
    assert np.all(r.fraction >= 1 / math.e)


def test_single_agent_keeps_everything():
    r = partial_allocation([[1.0, 0.0, 2.0]], supply=[1.0, 3.0, 2.0])
    assert r.fraction.tolist() == [1.0]
    # goods it does not value are left over; it takes all of the others
    np.testing.assert_allclose(r.allocation, [[1.0, 0.0, 2.0]], atol=1e-9)
    assert r.leftover.tolist() == pytest.approx([0.0, 3.0, 0.0])


def test_zero_supply_good_is_ignored():
    r = partial_allocation([[1.0, 5.0], [1.0, 5.0]], supply=[1.0, 0.0])
    assert r.pf_allocation[:, 1].tolist() == [0.0, 0.0]
    assert r.fraction.tolist() == pytest.approx([0.5, 0.5])


def test_warm_and_cold_agree_and_pool_is_deterministic():
    rng = np.random.default_rng(7)
    U = rng.uniform(0.0, 1.0, (12, 4))
    warm = partial_allocation(U)
    cold = partial_allocation(U, method="cold")
    pooled = partial_allocation(U, workers=2)
    assert np.abs(warm.fraction / cold.fraction - 1).max() <= 1e-6
    assert np.array_equal(warm.fraction, pooled.fraction)
    assert warm.stats.method == "warm" and cold.stats.method == "cold"


def test_batched_and_per_market_paths_agree(monkeypatch):
    import scipy.sparse.linalg as sla

    rng = np.random.default_rng(11)
    U = rng.uniform(0.0, 1.0, (80, 5))
    batched = partial_allocation(U)
    assert "loo-batched-ipm" in batched.stats.path  # most markets certified in the batch

    def not_positive_definite(*args, **kwargs):
        raise np.linalg.LinAlgError("Matrix is not positive definite")

    def singular(*args, **kwargs):
        raise RuntimeError("Factor is exactly singular")

    # break the batch's linear algebra (Cholesky of the Schur complements, LU of the forest
    # polish): every leave-one-out market goes the per-market way
    monkeypatch.setattr(np.linalg, "cholesky", not_positive_definite)
    monkeypatch.setattr(sla, "splu", singular)
    per_market = partial_allocation(U)
    # the batch ran (the plan's first step) and certified none of the 80 markets
    assert per_market.stats.path[-2:] == ("loo-batched-ipm", "loo-warm")
    assert per_market.stats.fallbacks[0] == (
        "loo-batched-ipm->loo-warm: not certified in a batch (×80)")
    assert np.abs(batched.fraction / per_market.fraction - 1).max() <= 1e-7
    assert per_market.fraction_error.max() <= 1e-6


def test_result_is_read_only_and_tabular():
    r = partial_allocation([[2.0, 1.0], [1.0, 1.0]])
    with pytest.raises(ValueError):
        r.fraction[0] = 1.0
    df = r.to_frame()
    assert list(df.columns[:4]) == ["fraction", "pf_utility", "utility", "fraction_error"]
    assert "PartialAllocationResult(" in repr(r)


# ============================================================================================
# divisible partial allocation: properties (Theorem 3.2, the 1/e bound)
# ============================================================================================
@settings(max_examples=40)
@given(markets())
def test_partial_allocation_guarantees(market):
    U, s = market
    r = partial_allocation(U, supply=s)
    n = U.shape[0]
    # fractions in (0, 1], at least 1/e (Cole-Gkatzelis-Goel, Theorem 3.2 of their paper)
    assert np.all(r.fraction > 0) and np.all(r.fraction <= 1.0)
    assert np.all(r.fraction >= 1 / math.e - 1e-9)
    assert np.all(r.utility >= r.pf_utility / math.e - 1e-9)
    # allocation <= PF, leftover >= 0 and the books balance
    assert np.all(r.allocation <= r.pf_allocation + 1e-12)
    assert np.all(r.leftover >= 0)
    assert np.allclose(r.allocation.sum(0) + r.leftover, s, atol=1e-9)
    assert np.all(r.pf_allocation.sum(0) <= s + 1e-9)
    # the PF allocation is envy-free and Pareto efficient
    own = np.einsum("ij,ij->i", U, r.pf_allocation)
    cross = U @ r.pf_allocation.T  # cross[i, k] = u_i(x_k)
    assert np.all(own[:, None] >= cross - 1e-7 * (1 + cross))
    assert pareto_slack(U, r.pf_allocation, s) <= 1e-7 * (1 + own.sum())
    # every fraction is certified
    assert r.certificate.ok and np.all(r.fraction_error <= 1e-6)
    assert r.loo_gap.shape == (n,)


def _true_value(U_true, U_report, s, i):
    r = partial_allocation(U_report, supply=s)
    return float(U_true[i] @ r.allocation[i])


@settings(max_examples=25)
@given(markets(max_n=4, max_m=3), st.data())
def test_misreporting_never_helps(market, data):
    # Theorem 3.2 (via Cole-Gkatzelis-Goel): agent i's true value of what it receives is
    # largest when it reports truthfully -- whatever it reports instead
    U, s = market
    n, m = U.shape
    i = data.draw(st.integers(0, n - 1))
    truthful = _true_value(U, U, s, i)
    scale = data.draw(st.sampled_from([0.25, 3.0]))
    perm = np.array(data.draw(st.permutations(list(range(m)))))
    # (a report whose entries span more than double precision is refused: drawn as 0)
    other = np.array(data.draw(st.lists(st.floats(0.0, 10.0, allow_subnormal=False).map(
        lambda v: v if v >= 1e-290 else 0.0), min_size=m, max_size=m)))
    other[data.draw(st.integers(0, m - 1))] += 1.0
    for row in (scale * U[i], U[i][perm], other):
        if not ((row > 0) & (s > 0)).any():
            continue  # not a valid report (the agent would value nothing)
        lie = U.copy()
        lie[i] = row
        assert _true_value(U, lie, s, i) <= truthful * (1 + 1e-7) + 1e-9
    # scaling a report changes nothing at all (valuations are scale-free in PF)
    lie = U.copy()
    lie[i] = scale * U[i]
    assert _true_value(U, lie, s, i) == pytest.approx(truthful, rel=1e-7, abs=1e-9)


# ============================================================================================
# divisible partial allocation: bad inputs
# ============================================================================================
@pytest.mark.parametrize("kwargs, arg", [
    (dict(utility=[[1.0, np.nan]]), "utility"),
    (dict(utility=[[1.0, -1.0]]), "utility"),
    (dict(utility=[1.0, 2.0]), "utility"),
    (dict(utility=[[1.0, 0.0], [0.0, 0.0]]), "utility"),
    (dict(utility=[[1.0, 0.0], [0.0, 1.0]], supply=[1.0, 0.0]), "supply"),
    (dict(utility=[[1.0, 1.0]], supply=[0.0, 0.0]), "supply"),
    (dict(utility=[[1.0, 1.0]], supply=[1.0]), "supply"),
    (dict(utility=[[1.0]], method="exact"), "method"),
    (dict(utility=[[1.0]], workers=0), "workers"),
    (dict(utility=[[1.0]], gap_tol=-1.0), "gap_tol"),
])
def test_partial_allocation_bad_inputs(kwargs, arg):
    with pytest.raises(fa.InputError) as err:
        partial_allocation(**kwargs)
    assert err.value.argument == arg


def test_bad_input_names_the_agent():
    with pytest.raises(fa.InputError) as err:
        partial_allocation([[1.0, 0.0], [0.0, 0.0], [1.0, 1.0]])
    assert err.value.index == (1,) and "agent 1" in str(err.value)


def test_inputs_not_mutated():
    U = np.array([[2.0, 1.0], [1.0, 1.0]])
    s = np.array([1.0, 2.0])
    partial_allocation(U, supply=s)
    assert U.tolist() == [[2.0, 1.0], [1.0, 1.0]] and s.tolist() == [1.0, 2.0]


# ============================================================================================
# indivisible: explicit bundles (Table 2 bids) against brute force
# ============================================================================================
@settings(max_examples=30)
@given(bundle_instances())
def test_bundle_auction_matches_brute_force(inst):
    bundles, values, g, empty = inst
    n = len(bundles)
    r = bundle_auction(bundles, values, num_goods=g, empty_value=empty)
    best = brute_force(bundles, values, g, empty)
    assert r.objective == pytest.approx(best[1], abs=1e-9)
    # the PF bundles are disjoint and what the agents bid for
    assert np.all(r.pf_bundles.sum(0) <= 1)
    for i in range(n):
        if r.choice[i] >= 0:
            assert set(np.flatnonzero(r.pf_bundles[i])) == set(bundles[i][r.choice[i]])
            assert r.pf_value[i] == pytest.approx(values[i][r.choice[i]])
        else:
            assert not r.pf_bundles[i].any() and r.pf_value[i] == empty[i]
    # c_i from brute-force leave-one-out optima, for the PF allocation returned
    for i in range(n):
        rest = [j for j in range(n) if j != i]
        loo = brute_force([bundles[j] for j in rest], [values[j] for j in rest], g, empty[rest])
        num_cnt = sum(1 for j in rest if empty[j] == 0 and r.pf_value[j] > 0)
        num_log = sum(math.log(r.pf_value[j]) for j in rest if r.pf_value[j] > 0)
        c = 0.0 if loo[0] > num_cnt else math.exp(num_log - loo[1])
        assert r.fraction[i] == pytest.approx(c, abs=1e-9)
        assert r.loo_objective[i] == pytest.approx(loo[1], abs=1e-9)
    assert np.all((r.fraction >= 0) & (r.fraction <= 1))
    assert np.allclose(r.allocation, r.fraction[:, None] * r.pf_bundles)
    assert np.allclose(r.leftover + r.allocation.sum(0), 1.0)


def assignments(bundles, g):
    """Every feasible assignment: a tuple of chosen bundle indices (-1 = none)."""
    for combo in itertools.product(*[[-1, *range(len(b))] for b in bundles]):
        used = np.zeros(g, dtype=int)
        for i, c in enumerate(combo):
            if c >= 0:
                used[list(bundles[i][c])] += 1
        if not (used > 1).any():
            yield combo


@settings(max_examples=30)
@given(bundle_instances())
def test_bundle_pf_is_pareto_efficient(inst):
    # no feasible assignment makes an agent better off and nobody worse off (Theorem 3.2, PE)
    bundles, values, g, empty = inst
    r = bundle_auction(bundles, values, num_goods=g, empty_value=empty)
    for combo in assignments(bundles, g):
        vals = np.array([values[i][c] if c >= 0 else empty[i] for i, c in enumerate(combo)])
        assert not (np.all(vals >= r.pf_value - 1e-12) and np.any(vals > r.pf_value + 1e-9))


@settings(max_examples=30)
@given(bundle_instances(), st.data())
def test_bundle_misreporting_never_helps(inst, data):
    # agent i's true value of its share, c_i * v_i(bundle), is largest when it bids truthfully
    bundles, values, g, empty = inst
    n = len(bundles)
    i = data.draw(st.integers(0, n - 1))

    def true_value(report):
        vals = [list(v) for v in values]
        vals[i] = list(report)
        r = bundle_auction(bundles, vals, num_goods=g, empty_value=empty)
        won = values[i][r.choice[i]] if r.choice[i] >= 0 else empty[i]
        return r.fraction[i] * won

    truthful = true_value(values[i])
    b = len(values[i])
    perm = data.draw(st.permutations(list(range(b))))
    other = data.draw(st.lists(st.sampled_from([0.5, 1.0, 2.0, 4.0, 8.0]), min_size=b,
                               max_size=b))
    for report in (np.array(values[i])[perm], other, 3.0 * np.array(values[i])):
        assert true_value(report) <= truthful * (1 + 1e-9) + 1e-12


def test_table2_single_app_gets_both_gpus():
    # Table 2: [0,0] -> rho_old, [0,1] = [1,0] -> 1/2, [1,1] -> 1/4 (valuations 1/rho)
    r = bundle_auction([[[0], [1], [0, 1]]], [[2.0, 2.0, 4.0]], empty_value=[1.0])
    assert r.pf_bundles.tolist() == [[True, True]] and r.fraction.tolist() == [1.0]


def test_more_agents_than_goods_lexicographic():
    # three agents want one GPU each, two GPUs: two win. Removing a winner lets the third
    # agent win a positive valuation, so the winners' fractions are 0; the loser's is 1.
    r = bundle_auction([[[0], [1]]] * 3, [[1.0, 1.0]] * 3)
    won = r.pf_bundles.any(axis=1)
    assert won.sum() == 2
    assert r.fraction[won].tolist() == [0.0, 0.0] and r.fraction[~won].tolist() == [1.0]


def test_bundle_doc_example():
    r = bundle_auction([[[0, 1]], [[0, 1], [2]]], [[4.0], [4.0, 1.0]])
    assert r.pf_bundles.astype(int).tolist() == [[1, 1, 0], [0, 0, 1]]
    assert r.fraction.tolist() == pytest.approx([0.25, 1.0])
    assert r.choice.tolist() == [0, 1]


# ============================================================================================
# indivisible: placement classes (gpu_auction) against explicit enumeration
# ============================================================================================
def admissible(topo, subset, table, b):
    """Whether GPU subset meets bid b of the table (size, placement level, home)."""
    if len(subset) != table.gpus[b]:
        return False
    mach = set(topo.machine[list(subset)].tolist())
    racks = set(topo.gpu_rack[list(subset)].tolist())
    lev = table.level[b]
    if lev == 0:
        return len(mach) == 1 and (table.home_machine < 0 or mach == {table.home_machine})
    if lev == 1:
        return len(racks) == 1 and (table.home_rack < 0 or racks == {table.home_rack})
    return True


@settings(max_examples=25)
@given(auction_instances(n=(1, 3), bids=(1, 4), machines=(1, 3), gpus_per_machine=(1, 3),
                         racks=(1, 2)))
def test_gpu_auction_matches_enumeration(inst):
    topo, offer, tables = inst.topology, inst.offer, inst.bids
    r = gpu_auction(list(tables), topo, offer)
    # every subset of the offer, valued by the best bid it meets
    bundles, values = [], []
    for t in tables:
        bl, vl = [], []
        for k in range(1, offer.size + 1):
            for sub in itertools.combinations(offer.tolist(), k):
                v = max((t.value[b] for b in range(len(t)) if admissible(topo, sub, t, b)),
                        default=0.0)
                if v > 0:
                    bl.append(list(sub))
                    vl.append(v)
        bundles.append(bl)
        values.append(vl)
    ref = bundle_auction(bundles, values, num_goods=topo.num_gpus,
                         empty_value=[t.value_empty for t in tables])
    # optimal values are unique (allocations may tie)
    assert r.objective == pytest.approx(ref.objective, abs=1e-9)
    assert r.loo_objective.tolist() == pytest.approx(ref.loo_objective.tolist(), abs=1e-9)
    # the returned bundles are disjoint, offered, and meet the winning bid
    assert np.all(r.pf_bundles.sum(0) <= 1) and not (r.pf_bundles[:, ~np.isin(
        np.arange(topo.num_gpus), offer)]).any()
    for i, t in enumerate(tables):
        if r.choice[i] >= 0:
            sub = tuple(np.flatnonzero(r.pf_bundles[i]))
            assert admissible(topo, sub, t, r.choice[i])
            assert r.pf_value[i] == pytest.approx(t.value[r.choice[i]])
        else:
            assert not r.pf_bundles[i].any()
    assert np.all((r.fraction >= 0) & (r.fraction <= 1)) and r.status == "optimal"


@settings(max_examples=15)
@given(auction_instances(n=(2, 4), bids=(1, 4), machines=(2, 4), gpus_per_machine=(1, 4),
                         racks=(1, 2)))
def test_gpu_auction_milp_fallback_agrees(inst):
    # without the knapsack relaxation and the greedy rounding (method="lp": the LP /
    # fix-and-solve / full MILP path), and with the full MILP alone (method="milp"), the
    # slower exact paths must certify the same optimal values
    fast = gpu_auction(list(inst.bids), inst.topology, inst.offer)
    for method in ("lp", "milp"):
        slow = gpu_auction(list(inst.bids), inst.topology, inst.offer, method=method)
        assert not {"knapsack-relaxation", "greedy-rounding"} & set(slow.stats.path)
        if method == "milp":
            # (market / count-target: the Nash plan's steps around the set-packing solves)
            assert set(slow.stats.path) <= {"market", "count-target", "milp", "count-milp"}
        assert slow.objective == pytest.approx(fast.objective, abs=1e-9)
        assert slow.loo_objective.tolist() == pytest.approx(fast.loo_objective.tolist(),
                                                            abs=1e-9)
        assert slow.status == "optimal"


def test_auction_milps_get_the_node_limit_and_keep_their_answer():
    # issue #27: the simulator's Themis auctions stop their MILPs at a node limit (a work
    # limit), not at a clock; the limit reaches every MILP solve, LP solves are untouched
    from fairalloc.backends import HighsBackend

    seen = []

    class Recording(HighsBackend):
        def solve_lp(self, lp, **options):  # type: ignore[override]
            seen.append((lp.is_mip, options.get("node_limit")))
            return super().solve_lp(lp, **options)

    t = Topology.uniform(2, 2, machines_per_rack=1)
    bids = [BidTable([1, 2, 2], [0, 0, 2], [1.0, 0.5, 1.0]), BidTable([1, 2], [0, 2], [1.0, 0.5])]
    ref = gpu_auction(bids, t, [0, 1, 2, 3], method="milp")
    r = gpu_auction(bids, t, [0, 1, 2, 3], method="milp", backend=Recording(), node_limit=7)
    assert seen and {limit for mip, limit in seen if mip} == {7}
    assert {limit for mip, limit in seen if not mip} <= {None}
    assert r.status == "optimal" and r.objective == ref.objective
    assert r.pf_bundles.tolist() == ref.pf_bundles.tolist()
    with pytest.raises(fa.InputError) as info:
        gpu_auction(bids, t, [0, 1, 2, 3], node_limit=0)
    assert info.value.argument == "node_limit"


def test_gpu_auction_doc_example_placement_sensitive():
    t = Topology.uniform(2, 2, machines_per_rack=1)
    a = BidTable([1, 2, 2], [0, 0, 2], [1.0, 0.5, 1.0])   # wants 2 GPUs on one machine
    b = BidTable([1, 2], [0, 2], [1.0, 0.5])              # indifferent to placement
    r = gpu_auction([a, b], t, [0, 1, 2, 3])
    assert r.pf_value.tolist() == [2.0, 2.0]
    assert t.level(r.pf_bundles[0]) == 0  # agent 0 got one machine


def test_gpu_auction_home_machine_is_respected():
    t = Topology.uniform(2, 2)
    a = BidTable([1], [0], [0.5], rho_empty=1.0, home_machine=1, home_rack=0)
    r = gpu_auction([a], t, [0, 1, 2])  # GPU 3 (machine 1) is held, GPU 2 is offered there
    assert np.flatnonzero(r.pf_bundles[0]).tolist() == [2]


def test_gpu_auction_scales_to_many_identical_machines():
    # 24 apps, 16 identical 8-GPU machines: the aggregated (pattern) MILP has no symmetric
    # copies and the knapsack relaxation usually certifies it at once
    topo = Topology.uniform(16, 8, machines_per_rack=4)
    tables = []
    for i in range(24):
        f = partial(single_job_rho, iter_total=1000 + 37 * i, iter_left=1000 + 37 * i,
                    iter_time_serial=1.0, job_demand_max=1 + i % 8, cluster_gpus=128,
                    contention=24)
        tables.append(bid_table(lambda k, s, f=f: f(k, slowdown=s), topo, np.arange(128),
                                max_gpus=1 + i % 8))
    r = gpu_auction(tables, topo, np.arange(128))
    assert r.status == "optimal" and r.fraction_error.max() <= 1e-6
    assert np.all(r.pf_bundles.sum(0) <= 1)
    assert r.stats.seconds < 30


# ============================================================================================
# bid tables
# ============================================================================================
def rho_fn(total=100, d=4, cluster=8, contention=2):
    f = partial(single_job_rho, iter_total=total, iter_left=total, iter_time_serial=4.0,
                job_demand_max=d, cluster_gpus=cluster, contention=contention)
    return lambda k, s: f(k, slowdown=s)


def test_bid_table_doc_example_and_pruning():
    t = Topology.uniform(2, 4)  # one rack: "anywhere" is "one rack"
    bids = bid_table(rho_fn(), t, list(range(8)))
    assert list(zip(bids.gpus.tolist(), bids.level.tolist())) == [
        (1, 0), (2, 0), (2, 1), (3, 0), (3, 1), (4, 0), (4, 1)]
    # rho = 2 S / min(k, 4): beyond 4 GPUs nothing improves, so no bid asks for more
    assert bids.rho.tolist() == pytest.approx([2.0, 1.0, 1.1, 2 / 3, 2.2 / 3, 0.5, 0.55])
    assert bids.rho_empty == math.inf and bids.value_empty == 0.0
    assert bids.to_frame()["placement"].tolist()[:3] == ["machine", "machine", "rack"]


def test_bid_table_with_held_gpus_uses_home():
    t = Topology.uniform(4, 2, machines_per_rack=2)
    offer = np.array([1, 2, 3, 4, 5, 6, 7])
    bids = bid_table(rho_fn(), t, offer, held=[0])
    assert (bids.home_machine, bids.home_rack) == (0, 0)
    # one more GPU on machine 0 (GPU 1), or in rack 0, or anywhere
    assert 0 in bids.level and bids.gpus[bids.level == 0].max() == 1
    assert bids.rho_empty == pytest.approx(2.0)  # with the one held GPU
    # held across racks: only "anywhere" bids remain
    spread = bid_table(rho_fn(), t, [1, 2, 3, 5, 6, 7], held=[0, 4])
    assert set(spread.level.tolist()) == {2} and spread.home_machine == -1


def test_bid_table_respects_max_gpus_and_empty_offer():
    t = Topology.uniform(2, 4)
    assert bid_table(rho_fn(), t, list(range(8)), max_gpus=2).gpus.max() == 2
    empty = bid_table(rho_fn(), t, [], max_gpus=2)
    assert len(empty) == 0


def test_bid_table_bad_inputs():
    t = Topology.uniform(2, 2)
    with pytest.raises(fa.InputError) as err:
        bid_table(rho_fn(), t, [0, 1], held=[1])
    assert err.value.argument == "held"
    with pytest.raises(fa.InputError):
        bid_table("rho", t, [0])
    with pytest.raises(fa.InputError):
        bid_table(rho_fn(), "t", [0])
    with pytest.raises(fa.InputError):
        bid_table(rho_fn(), t, [0, 7])


@pytest.mark.parametrize("make, arg", [
    (lambda: BidTable([0], [0], [1.0]), "gpus"),
    (lambda: BidTable([1], [3], [1.0]), "level"),
    (lambda: BidTable([1], [0], [0.0]), "rho"),
    (lambda: BidTable([1, 2], [0], [1.0, 1.0]), "level"),
    (lambda: BidTable([1], [0], [1.0], rho_empty=0.0), "rho_empty"),
    (lambda: BidTable([1], [0], [1.0], rho_empty="x"), "rho_empty"),
    (lambda: BidTable([1], [0], [1.0], home_machine=-2), "home_machine"),
])
def test_bid_table_class_bad_inputs(make, arg):
    with pytest.raises(fa.InputError) as err:
        make()
    assert err.value.argument == arg


@pytest.mark.parametrize("make, arg", [
    (lambda: bundle_auction([], []), "bundles"),
    (lambda: bundle_auction([[[0]]], [[1.0], [2.0]]), "values"),
    (lambda: bundle_auction([[[0]]], [[1.0, 2.0]]), "values"),
    (lambda: bundle_auction([[[0]]], [[-1.0]]), "values[0]"),
    (lambda: bundle_auction([[[]]], [[1.0]]), "bundles"),
    (lambda: bundle_auction([[[0, 0]]], [[1.0]]), "bundles"),
    (lambda: bundle_auction([[[3]]], [[1.0]], num_goods=2), "num_goods"),
    (lambda: bundle_auction([[[0]]], [[1.0]], empty_value=[1.0, 2.0]), "empty_value"),
    (lambda: gpu_auction([], Topology.uniform(1, 1), [0]), "bids"),
    (lambda: gpu_auction(["x"], Topology.uniform(1, 1), [0]), "bids"),
    (lambda: gpu_auction([BidTable([1], [0], [1.0], home_machine=5)], Topology.uniform(1, 1),
                         [0]), "bids"),
    (lambda: gpu_auction([BidTable([1], [0], [1.0])], "t", [0]), "topology"),
    (lambda: gpu_auction([BidTable([1], [0], [1.0])], Topology.uniform(1, 1), [0],
                         time_limit=0), "time_limit"),
])
def test_auction_bad_inputs(make, arg):
    with pytest.raises(fa.InputError) as err:
        make()
    assert err.value.argument == arg


# ============================================================================================
# multi-round auctions (§3.3.2, Pseudocode 1)
# ============================================================================================
def make_apps(n, seed=0):
    rng = np.random.default_rng(seed)
    apps = []
    for i in range(n):
        if i % 3 == 2:
            apps.append(SuccessiveHalvingApp(iter_time_serial=rng.uniform(5, 15, 4),
                                             phase_iters=[4, 8, 16], job_demand_max=2,
                                             seed=i))
        else:
            apps.append(SingleJobApp(iter_total=int(rng.integers(200, 2000)),
                                     iter_time_serial=float(rng.uniform(0.5, 2.0)),
                                     job_demand_max=int(rng.integers(1, 5)),
                                     slowdown=(1.0, 1.0 + rng.uniform(0, 0.2), 1.4)))
    return apps


def test_round_filters_the_apps_farthest_from_fairness():
    topo = Topology.uniform(4, 4, machines_per_rack=2)
    apps = make_apps(10)
    auction = MultiRoundAuction(topo, apps, fairness_knob=0.8, lease=300.0, seed=1)
    first = auction.step()
    assert first.participants.size == math.ceil(0.2 * 10)  # every app at rho = inf: ties
    auction.advance(120.0)
    rho = auction.current_rho()
    held = auction.held()
    demand = np.array([a.demand_max for a in apps])
    auction.lease_end[:] = auction.now  # every lease expires now
    rnd = auction.step()
    eligible = np.flatnonzero(demand > 0)  # after the release every app can use GPUs
    k = rnd.participants.size
    assert k == math.ceil(0.2 * eligible.size)
    # the bidders are the k largest rho values
    chosen = np.sort(rho[rnd.participants])
    assert chosen[0] >= np.sort(rho[eligible])[-k] - 1e-12
    del held


def test_round_invariants_and_leftover_goes_to_non_bidders():
    topo = Topology.uniform(4, 4, machines_per_rack=2)
    apps = make_apps(9, seed=3)
    auction = MultiRoundAuction(topo, apps, fairness_knob=0.6, lease=200.0, seed=5)
    rnd = auction.step()
    held = auction.held()
    demand = np.array([a.demand_max for a in apps])
    assert np.all(held <= demand)  # nobody gets more than it can use
    bidders = np.zeros(len(apps), dtype=bool)
    bidders[rnd.participants] = True
    # leftover GPUs go to non-bidders while any of them has unmet demand
    got_left = rnd.leftover_to[rnd.leftover_to >= 0]
    if (~bidders & (held < demand)).any():
        assert not bidders[got_left].any()
    # the round says what it did: an auction, then leftovers to whom
    assert rnd.path[0] == "auction"
    assert ("leftovers-to-non-bidders" in rnd.path) == (~bidders[got_left]).any()
    assert ("leftovers-to-bidders" in rnd.path) == bidders[got_left].any()
    assert bool(rnd.fallbacks) == ("leftovers-to-bidders" in rnd.path)
    # participants keep at most their PF bundle; fractions are the auction's
    assert np.allclose(rnd.fraction, rnd.auction.fraction)
    assert np.all(rnd.won <= rnd.auction.pf_bundles.sum(1))
    # work conservation: a GPU is idle only if no active app could use it
    if (auction.owner < 0).any():
        assert np.all(held >= demand)
    assert np.all(auction.lease_end[auction.owner >= 0] == pytest.approx(200.0))


def test_runs_are_reproducible():
    def history(seed):
        topo = Topology.uniform(2, 4)
        auction = MultiRoundAuction(topo, make_apps(6, seed=2), seed=seed, lease=100.0)
        auction.run(400.0)
        return [(r.participants.tolist(), r.leftover_to.tolist(), r.won.tolist())
                for r in auction.history], auction.owner.tolist()

    assert history(4) == history(4)


def test_small_cluster_finishes_every_app():
    topo = Topology.uniform(2, 2)
    apps = [SingleJobApp(iter_total=100, iter_time_serial=1.0, job_demand_max=2)
            for _ in range(4)]
    auction = MultiRoundAuction(topo, apps, fairness_knob=0.5, lease=30.0, seed=0)
    auction.run(10_000.0)
    assert all(a.finished for a in apps)
    # the cluster did 400 GPU-seconds of work in about 100 s on 4 GPUs (work conserving)
    assert auction.now <= 130.0


def test_multi_round_bad_inputs():
    topo = Topology.uniform(1, 1)
    app = SingleJobApp(iter_total=1, iter_time_serial=1.0, job_demand_max=1)
    for kw, arg in [(dict(fairness_knob=1.0), "fairness_knob"),
                    (dict(fairness_knob=-0.1), "fairness_knob"),
                    (dict(lease=0.0), "lease"), (dict(seed=1.5), "seed"),
                    (dict(workers=0), "workers")]:
        with pytest.raises(fa.InputError) as err:
            MultiRoundAuction(topo, [app], **kw)
        assert err.value.argument == arg
    with pytest.raises(fa.InputError):
        MultiRoundAuction(topo, [])
    with pytest.raises(fa.InputError):
        MultiRoundAuction(topo, ["app"])
    with pytest.raises(fa.InputError):
        MultiRoundAuction("topology", [app])
