"""fairalloc.testing: strategies build valid inputs, check_policy has teeth, pytest and CLI work."""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import fairalloc as fa
from fairalloc.cli import main
from fairalloc.testing import (
    ClusterDomain,
    MarketDomain,
    PropertyCheckError,
    check_policy,
    parametrize_with_property_checks,
    property_names,
)
from fairalloc.testing import strategies as fst
from fairalloc.testing.checks import PropertySearch
from fairalloc.testing.defaults import MAX_EXAMPLES_ENV, PROFILE_ENV
from fairalloc.throughput import isolated_split

ROOT = Path(__file__).resolve().parents[1]
FEW = settings(max_examples=15, deadline=None, database=None, derandomize=True,
               suppress_health_check=list(HealthCheck))


# --- policies with known properties ---------------------------------------------------------
def dictator(utility, budget, supply):  # type: ignore[no-untyped-def]
    """Everything to buyer 0: feasible and strategy-proof, nothing else."""
    x = np.zeros_like(utility)
    x[0] = supply
    return x


def budget_share(utility, budget, supply):  # type: ignore[no-untyped-def]
    """Budget share of every good: envy-free, sharing incentive, strategy-proof; wasteful."""
    return np.multiply.outer(budget / budget.sum(), supply)


def _subprocess_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop(PROFILE_ENV, None)
    env.pop(MAX_EXAMPLES_ENV, None)
    return env


# ============================================================================================
# strategies: every draw is accepted by the library as it is
# ============================================================================================
@FEW
@given(fst.utilities(n=(1, 3), m=(1, 3), rounds=(1, 2), values=(0.5, 2.0), density=0.3))
def test_utilities_are_valid_and_in_range(u: np.ndarray) -> None:
    assert u.ndim == 3 and 1 <= u.shape[0] <= 3 and 1 <= u.shape[2] <= 2
    assert (u.reshape(u.shape[0], -1).max(axis=1) > 0).all()
    nz = u[u > 0]
    assert ((nz >= 0.5) & (nz <= 2.0)).all()


def test_utilities_shrink_to_sparse_round_numbers() -> None:
    # the minimal 2x3 instance: one favourite good per buyer, value 1, every other entry zero
    u = fst.minimal(fst.utilities(n=2, m=3))
    assert sorted(u.ravel().tolist()) == [0.0, 0.0, 0.0, 0.0, 1.0, 1.0]
    ints = fst.minimal(fst.utilities(n=2, m=2, integers=True, values=(2, 9)))
    assert set(ints.ravel().tolist()) == {0.0, 2.0}
    jobs = fst.minimal(fst.cluster_instances(weighted=True), lambda c: c.n == 2).jobs
    np.testing.assert_array_equal(jobs.throughput, [[1.0], [1.0]])
    np.testing.assert_array_equal(jobs.weight, [1.0, 1.0])


@FEW
@given(fst.market_instances(kind="leontief", integers=True))
def test_market_instances_solve(inst: fst.MarketInstance) -> None:
    r = fa.fisher_market(*inst.args(), kind=inst.kind)
    assert r.allocation.shape == inst.utility.shape
    assert inst.budget.shape == (inst.n,) and inst.supply.shape == inst.utility.shape[1:]


@FEW
@given(fst.volatile_markets(equal_budgets=True))
def test_volatile_markets_have_rounds_and_equal_budgets(inst: fst.MarketInstance) -> None:
    assert inst.utility.ndim == 3 and inst.supply.shape == inst.utility.shape[1:]
    assert (inst.budget == 1.0).all()
    fa.volatile_fisher_market(*inst.args())


@FEW
@given(fst.cluster_instances(max_scale_factor=4, weighted=True, elapsed=(0.0, 100.0),
                             workers=(1, 6)))
def test_cluster_instances_are_schedulable(inst: fst.ClusterInstance) -> None:
    jobs, cluster = inst.args()
    jobs.check_cluster(cluster)  # every gang fits a type its job can run on
    assert (jobs.scale_factor <= cluster.capacity.max()).all()
    assert cluster.types == fst.ACCELERATOR_TYPES[: cluster.num_types]
    fa.max_min_fairness(jobs, cluster)


def test_throughputs_contain_cannot_run_zeros_and_respect_runnable() -> None:
    tp = fst.minimal(fst.throughputs(3, 3, density=0.5), lambda t: (t == 0).any())
    assert (tp.max(axis=1) > 0).all()
    fit = np.array([[False, True], [True, False]])

    @FEW
    @given(fst.throughputs(2, 2, runnable=fit, density=0.0))
    def only_runnable(t: np.ndarray) -> None:
        np.testing.assert_array_equal(t > 0, fit)

    only_runnable()


@FEW
@given(fst.scale_factors(6, max_scale_factor=8, powers_of_two=True), fst.weights(6))
def test_scale_factors_are_powers_of_two_and_weights_positive(sf: np.ndarray,
                                                              w: np.ndarray) -> None:
    assert set(sf.tolist()) <= {1.0, 2.0, 4.0, 8.0}
    assert (w > 0).all()


@FEW
@given(fst.auction_instances())
def test_auction_instances_run_through_the_gpu_auction(inst: fst.AuctionInstance) -> None:
    from fairalloc.auctions import gpu_auction

    r = gpu_auction(**inst.kwargs())
    assert r.allocation.shape == (len(inst.bids), inst.topology.num_gpus)
    for table in inst.bids:
        assert (table.rho < table.rho_empty).all()
        assert table.home_machine < inst.topology.num_machines


@FEW
@given(fst.regime_forecasts())
def test_regime_forecasts_cover_the_epochs_left(fc: fa.RegimeForecast) -> None:
    left = fc.total_epochs - fc.done_epochs
    assert left >= 1
    assert abs(fc.remaining_epochs.sum() - left) <= 1e-9 * fc.total_epochs
    fa.PlanJob(workers=1, total_epochs=fc.total_epochs, done_epochs=fc.done_epochs, ftf=1.0,
               regimes=fc.regimes)


@FEW
@given(fst.restatement_inputs())
def test_restatement_inputs_are_accepted(args: tuple[float, int, np.ndarray]) -> None:
    alpha = fa.restatement_posterior(*args)
    assert alpha.shape == (args[1],) and (alpha >= 0).all()


@FEW
@given(fst.plan_instances())
def test_plan_instances_plan(inst: fst.PlanInstance) -> None:
    assert all(job.workers <= inst.num_gpus for job in inst.jobs)
    plan = fa.plan_schedule(list(inst.jobs), inst.num_gpus, rounds=3)
    assert plan.schedule.shape == (len(inst.jobs), 3)


@FEW
@given(fst.scaling_curves(levels=(1, 5)))
def test_scaling_curves_have_diminishing_returns(curve: np.ndarray) -> None:
    per_gpu = curve / np.exp2(np.arange(curve.size))
    assert (np.diff(per_gpu) <= 1e-12 * per_gpu[:-1]).all()


@FEW
@given(fst.arrival_sequences(integer_times=True))
def test_arrival_sequences_run_under_efq(seq: fst.ArrivalSequence) -> None:
    assert (seq.requested <= seq.num_gpus).all()
    efq, gps = fa.efq_finish_times(**seq.kwargs())
    assert (efq >= seq.arrival).all() and (gps >= seq.arrival).all()


@pytest.mark.parametrize(
    ("build", "argument"),
    [
        (lambda: fst.utilities(n=(3, 1)), "n"),
        (lambda: fst.utilities(m=0), "m"),
        (lambda: fst.utilities(values=(0.0, 1.0)), "values"),
        (lambda: fst.utilities(density=1.5), "density"),
        (lambda: fst.utilities(integers=True, values=(0.2, 0.8)), "values"),
        (lambda: fst.budgets(0), "n"),
        (lambda: fst.supplies((2, 0)), "shape"),
        (lambda: fst.market_instances(kind="cobb-douglas"), "kind"),
        (lambda: fst.clusters(names=("a", "a")), "names"),
        (lambda: fst.job_sets({"v100": 1}), "cluster"),
        (lambda: fst.throughputs(2, 2, runnable=np.zeros((2, 2), bool)), "runnable"),
        (lambda: fst.bid_tables(topology="rack"), "topology"),
        (lambda: fst.regime_models(batch_sizes=(32,)), "batch_sizes"),
        (lambda: fst.regime_forecasts(methods=("magic",)), "methods"),
        (lambda: fst.scaling_curves(efficiency=(0.5, 1.5)), "efficiency"),
        (lambda: fst.arrival_sequences(alpha=(0.5, 2.0)), "alpha"),
    ],
)
def test_bad_strategy_arguments_raise_input_error(build, argument: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(fa.InputError) as info:
        build()
    assert info.value.argument == argument


# ============================================================================================
# check_policy has teeth
# ============================================================================================
def test_dictator_breaks_every_fairness_property_but_is_feasible_and_strategy_proof() -> None:
    report = check_policy(dictator, "all", max_examples=25)
    status = {r.name: r.status for r in report.results}
    assert status == {"runs": "passed", "feasible": "passed", "market_clearing": "skipped",
                      "budget_clearing": "skipped", "envy_free": "failed",
                      "sharing_incentive": "failed", "proportionality": "failed",
                      "pareto_optimal": "failed", "strategy_proof": "passed"}
    assert not report.passed and len(report.failures) == 4
    # shrunk to the minimal instance: two buyers who both want the one good
    cx = report["envy_free"].counterexample
    assert cx is not None and report.counterexample is cx
    np.testing.assert_array_equal(cx.instance.utility, [[1.0], [1.0]])
    np.testing.assert_array_equal(cx.instance.budget, [1.0, 1.0])
    assert (cx.agent, cx.other, cx.violation) == (1, 0, 1.0)
    si = report["sharing_incentive"].counterexample
    assert si is not None and si.agent == 1 and si.violation == pytest.approx(0.5)
    # Pareto: buyer 0 gets a good it does not value that buyer 1 does
    po = report["pareto_optimal"].counterexample
    assert po is not None and po.violation > 0
    j = int(np.flatnonzero(po.instance.utility[0] == 0)[0])
    assert po.instance.utility[po.agent, j] > 0 and po.allocation[0, j] > 0


def test_counterexample_is_readable_and_reproducible() -> None:
    report = check_policy(dictator, ["sharing_incentive"], max_examples=20)
    text = str(report)
    for piece in ("sharing_incentive", "FAILED", "buyer 1 gets utility 0 < 0.5",
                  "utility = [[1.],", "allocation = [[1.],", "reproduce: policy(np.array("):
        assert piece in text, text
    cx = report.counterexample
    assert cx is not None
    call = cx.instance.as_code("dictator")
    x = eval(call, {"np": np, "dictator": dictator})  # noqa: S307 - our own generated code
    np.testing.assert_array_equal(x, cx.allocation)
    with pytest.raises(PropertyCheckError, match="reproduce") as info:
        report.assert_passed()
    assert isinstance(info.value, AssertionError) and info.value.report is report


def test_max_total_throughput_breaks_sharing_incentive() -> None:
    report = check_policy(fa.max_total_throughput, ["feasible", "sharing_incentive"],
                          max_examples=25, domain="cluster")
    assert report["feasible"].passed and not report["sharing_incentive"].passed
    cx = report.counterexample
    assert cx is not None and cx.property == "sharing_incentive"
    tp = cx.instance.jobs.throughput
    got = np.einsum("ij,ij->i", tp, cx.allocation)
    share = np.einsum("ij,ij->i", tp, isolated_split(*cx.instance.args()))
    assert got[cx.agent] == pytest.approx(share[cx.agent] - cx.violation)
    assert cx.violation > 0 and cx.instance.n == 2
    assert f"job {cx.agent} gets throughput" in cx.message


def test_fifo_breaks_envy_freeness_between_identical_jobs() -> None:
    report = check_policy(fa.fifo, ["envy_free"], max_examples=25, domain="cluster")
    cx = report.counterexample
    assert cx is not None and cx.instance.n == 2
    # the later job envies the first: it would run as fast with the first job's time
    np.testing.assert_array_equal(cx.instance.jobs.throughput, [[1.0], [1.0]])
    assert (cx.agent, cx.other) == (1, 0)
    np.testing.assert_allclose(cx.allocation, [[1.0], [0.0]], atol=1e-9)


def test_the_project_equilibria_pass_every_property() -> None:
    linear = check_policy(fa.fisher_market, ["feasible", "market_clearing", "budget_clearing",
                                             "envy_free", "sharing_incentive",
                                             "proportionality", "pareto_optimal"],
                          max_examples=20)
    leontief = check_policy(functools.partial(fa.fisher_market, kind="leontief"),
                            ["feasible", "market_clearing", "envy_free", "sharing_incentive",
                             "pareto_optimal"], max_examples=15, domain="leontief")
    volatile = check_policy(fa.volatile_fisher_market,
                            ["feasible", "market_clearing", "envy_free", "pareto_optimal"],
                            max_examples=10, domain="volatile")
    for report in (linear, leontief, volatile):
        assert report.passed, str(report)
        assert all(r.examples == report.max_examples for r in report.results)


def test_fisher_market_is_manipulable_by_a_buyer_misreporting() -> None:
    # the Eisenberg-Gale equilibrium is not strategy-proof (Themis uses partial allocation
    # for that); the probe finds a lie that pays (seed 2: after 8 examples; the search is
    # deterministic, whatever else the session imports) and shrinks it to the hand example of
    # proofs/property_checks.md §5
    report = check_policy(fa.fisher_market, ["strategy_proof"], max_examples=60, seed=2)
    cx = report.counterexample
    assert cx is not None and cx.misreport is not None and cx.violation > 1e-6
    inst = cx.instance
    truth = inst.utility[cx.agent]
    lied = fa.fisher_market(*inst.with_row(cx.agent, cx.misreport).args()).allocation
    honest = fa.fisher_market(*inst.args()).allocation
    gain = truth @ lied[cx.agent] - truth @ honest[cx.agent]
    assert gain == pytest.approx(cx.violation, rel=1e-6)
    assert "by misreporting its row" in cx.message and "misreport of buyer" in str(cx)
    np.testing.assert_array_equal(inst.utility, [[1.0, 1.0], [1.0, 0.0]])
    np.testing.assert_array_equal(cx.misreport, [1.0, 0.05])
    assert cx.violation == pytest.approx(0.475, rel=1e-6)


def test_fisher_market_manipulation_hand_example() -> None:
    # proofs/property_checks.md §5: buyer 0 shades good 1 to 5 % and gets 1.475 instead of 1
    inst = fst.MarketInstance(np.array([[1.0, 1.0], [1.0, 0.0]]), np.ones(2), np.ones(2))
    dom = MarketDomain()
    scale = np.array([3.0, 0.5])  # the whole row scaled entry by entry: [3, 0.5]
    lies = dom.lies(inst, 0, scale, 0.05)
    assert [lie.tolist() for lie in lies] == [[3.0, 0.5], [0.05, 1.0], [1.0, 0.05]]
    assert len(dom.lies(inst, 0, np.ones(2), 0.0)) == 2  # the truth itself is not a lie
    cx = PropertySearch(fa.fisher_market, dom, 1e-6).evaluate("strategy_proof",
                                                              (inst, 0, scale, 0.05))
    assert cx is not None and cx.agent == 0
    assert cx.violation == pytest.approx(0.475, rel=1e-6)
    np.testing.assert_array_equal(cx.misreport, [1.0, 0.05])
    np.testing.assert_allclose(cx.misreport_allocation[0], [0.475, 1.0], rtol=1e-6)
    np.testing.assert_allclose(cx.allocation, [[0.0, 1.0], [1.0, 0.0]], atol=1e-7)


def test_partial_allocation_survives_misreport_probes_but_pays_in_sharing_incentive() -> None:
    # Themis §3.3.1: partial allocation is truthful for linear valuations; the price is the
    # hidden payment, so an agent can fall below its 1/n share (two agents, one good: 1/4 each)
    from fairalloc.auctions import partial_allocation

    def themis(utility, budget, supply):  # type: ignore[no-untyped-def]
        return partial_allocation(utility, supply)

    report = check_policy(themis, ["strategy_proof", "sharing_incentive"], max_examples=12,
                          domain=MarketDomain(equal_budgets=True))
    assert report["strategy_proof"].passed and report["strategy_proof"].examples == 12
    cx = report["sharing_incentive"].counterexample
    assert cx is not None
    np.testing.assert_array_equal(cx.instance.utility, [[1.0], [1.0]])
    np.testing.assert_allclose(cx.allocation, [[0.25], [0.25]], rtol=1e-6)
    assert cx.violation == pytest.approx(0.25, rel=1e-6)


def test_max_min_fairness_keeps_sharing_incentive_and_pareto_optimality() -> None:
    # unit gangs and equal weights: X^isolated is feasible at the level every job is compared
    # with, so max-min gives every job at least its isolated throughput; water filling adds
    # Pareto optimality (Gavel §4.1, §4.3)
    report = check_policy(functools.partial(fa.max_min_fairness, water_filling=True),
                          ["feasible", "market_clearing", "sharing_incentive",
                           "pareto_optimal"], max_examples=15, domain="cluster")
    assert report.passed, str(report)


def test_cluster_envy_compares_weight_scaled_bundles() -> None:
    # job 1 has twice job 0's weight but both already run all of their time: no envy once
    # job 0's bundle is scaled by the weight ratio (a capped job cannot use more)
    inst = fst.ClusterInstance(fa.Jobs([[1.0], [1.0]], weight=[1.0, 2.0]),
                               fa.Cluster({"v100": 2}))
    dom = ClusterDomain()
    x = np.ones((2, 1))
    # job 0 would get half of job 1's worker-time (weight ratio 1/2): throughput 0.5
    np.testing.assert_allclose(dom.bundle_values(inst, x), [[1.0, 0.5], [1.0, 1.0]])
    out = dom.call(lambda j, c: x, inst)
    assert dom.check("envy_free", inst, out, 1e-6).passed
    # with one worker job 1 would take 2x job 0's half: value min(1, 2 * 0.5) = 1 > 0.5
    inst1 = fst.ClusterInstance(inst.jobs, fa.Cluster({"v100": 1}))
    half = np.full((2, 1), 0.5)
    V = dom.bundle_values(inst1, half)
    np.testing.assert_allclose(V, [[0.5, 0.25], [1.0, 0.5]])
    r = dom.check("envy_free", inst1, dom.call(lambda j, c: half, inst1), 1e-6)
    assert not r.passed and (r.agent, r.other) == (1, 0) and r.violation == pytest.approx(0.5)


def test_cluster_share_is_gavels_isolated_allocation_with_equal_weights() -> None:
    dom = ClusterDomain(max_scale_factor=3, workers=(1, 6))

    @FEW
    @given(dom.instances())
    def same(inst: fst.ClusterInstance) -> None:
        np.testing.assert_allclose(dom.share(inst), isolated_split(*inst.args()))

    same()


def test_cluster_knapsack_values_another_jobs_time_on_usable_types_only() -> None:
    # job 0 runs only on v100 (10 steps/s); job 1 holds 0.5 of v100 and 0.5 of k80
    jobs = fa.Jobs([[10.0, 0.0], [4.0, 2.0]])
    inst = fst.ClusterInstance(jobs, fa.Cluster({"v100": 1, "k80": 1}))
    x = np.array([[0.5, 0.0], [0.5, 0.5]])
    V = ClusterDomain().bundle_values(inst, x)
    np.testing.assert_allclose(V, [[5.0, 5.0], [2.0, 3.0]])


def test_cluster_pareto_lp_finds_idle_capacity() -> None:
    inst = fst.ClusterInstance(fa.Jobs([[1.0, 2.0], [3.0, 1.0]]),
                               fa.Cluster({"v100": 1, "k80": 1}))
    dom = ClusterDomain()
    idle = np.array([[0.0, 0.5], [0.5, 0.0]])
    r = dom.check("pareto_optimal", inst, dom.call(lambda j, c: idle, inst), 1e-6)
    assert not r.passed and r.violation == pytest.approx(1.5)  # job 1 can take all of v100
    full = np.array([[0.0, 1.0], [1.0, 0.0]])
    assert dom.check("pareto_optimal", inst, dom.call(lambda j, c: full, inst), 1e-6).passed


# ============================================================================================
# protocol: what a policy may return, and broken policies
# ============================================================================================
class _Answer:
    def __init__(self, allocation: np.ndarray, prices: np.ndarray) -> None:
        self.allocation, self.prices = allocation, prices


@pytest.mark.parametrize("wrap", [
    lambda x, p: (x, p),
    lambda x, p: {"allocation": x, "prices": p},
    _Answer,
], ids=["pair", "mapping", "attributes"])
def test_prices_can_come_as_pair_mapping_or_attributes(wrap) -> None:  # type: ignore[no-untyped-def]
    def policy(u, b, s):  # type: ignore[no-untyped-def]
        r = fa.fisher_market(u, b, s)
        return wrap(r.allocation, r.prices)

    report = check_policy(policy, ["market_clearing", "budget_clearing"], max_examples=8)
    assert report.passed and all(r.status == "passed" for r in report.results)


def test_wrong_prices_fail_market_clearing() -> None:
    def overpriced(u, b, s):  # type: ignore[no-untyped-def]
        x = budget_share(u, b, s) * 0.5  # half of everything unsold
        return x, np.ones_like(s)

    cx = check_policy(overpriced, ["market_clearing"], max_examples=10).counterexample
    assert cx is not None and cx.violation == pytest.approx(0.5)
    assert "unsold" in cx.message and "prices     = [1.]" in str(cx)


def test_market_clearing_of_a_policy_without_prices() -> None:
    with pytest.raises(fa.InputError, match="needs prices") as info:
        check_policy(budget_share, ["market_clearing"], max_examples=3)
    assert info.value.argument == "properties"
    report = check_policy(budget_share, "all", max_examples=4)
    assert report["market_clearing"].status == "skipped" and "no prices" in str(report)
    assert report["budget_clearing"].status == "skipped" and report["feasible"].passed


@pytest.mark.parametrize(("policy", "match", "parsed"), [
    (lambda u, b, s: np.ones(u.shape[0]), r"the allocation has shape \(1,\); expected", True),
    (lambda u, b, s: np.full(u.shape, np.nan), r"allocation\[0, 0\] is nan", True),
    (lambda u, b, s: np.full(u.shape, -1.0), "gets a negative amount", True),
    (lambda u, b, s: np.repeat(s[None], u.shape[0], axis=0) * 2, "good 0 is allocated 2 but",
     True),
    (lambda u, b, s: "everything", "not an allocation array", False),
    (lambda u, b, s: {"x": u}, "without an 'allocation' key", False),
])
def test_malformed_or_infeasible_answers_fail_their_gate_once(policy, match: str,  # type: ignore[no-untyped-def]
                                                              parsed: bool) -> None:
    # an infeasible answer fails "feasible", an unusable one "runs"; envy-freeness is not
    # judged on them (issue #32: one failure no longer reported as the failure of everything)
    report = check_policy(policy, ["feasible", "envy_free"], max_examples=5)
    gate = "feasible" if parsed else "runs"
    status = {r.name: r.status for r in report.results}
    assert status[gate] == "failed" and status["envy_free"] == "skipped", status
    assert list(status) == (["feasible", "envy_free"] if parsed
                            else ["runs", "feasible", "envy_free"])
    cx = report[gate].counterexample
    assert cx is not None and report.counterexample is cx
    assert cx.instance.n == 1  # shrunk to one buyer
    assert cx.violation > 0
    assert re.search(match, cx.message), cx.message
    assert "no feasible answer" in report["envy_free"].note


def test_a_policy_that_raises_is_a_counterexample() -> None:
    def picky(u, b, s):  # type: ignore[no-untyped-def]
        if u.shape[1] > 1:
            raise fa.SolverError("cannot handle two goods")
        return budget_share(u, b, s)

    report = check_policy(picky, ["envy_free"], max_examples=20)
    cx = report.counterexample
    assert cx is not None and isinstance(cx.error, fa.SolverError)
    assert cx.instance.utility.shape == (1, 2)  # shrunk: one buyer, two goods
    assert "the policy raised SolverError: cannot handle two goods" in str(cx)


def test_policies_get_copies_of_the_instance() -> None:
    def vandal(u, b, s):  # type: ignore[no-untyped-def]
        x = budget_share(u, b, s)
        u[:] = -1.0
        b[:] = 0.0
        return x

    report = check_policy(vandal, ["envy_free", "sharing_incentive"], max_examples=10)
    assert report.passed


def test_cluster_feasibility_catches_every_kind_of_violation() -> None:
    jobs = fa.Jobs([[1.0, 0.0], [1.0, 1.0], [1.0, 1.0]], scale_factor=[1, 2, 1])
    inst = fst.ClusterInstance(jobs, fa.Cluster({"v100": 2, "k80": 1}))
    dom = ClusterDomain()
    cases = {
        "job 0 gets x = 0.5 on k80: the job cannot run there": [[0.5, 0.5], [0, 0], [0, 0]],
        "job 1 gets x = 0.5 on k80: its gang of 2 does not fit in 1 workers":
            [[0, 0], [0, 0.5], [0, 0]],
        "job 2 runs 1.6 of its time": [[0, 0], [0, 0], [0.8, 0.8]],
        "job 0 gets x = 1.2 on v100: a time fraction must lie in [0, 1]":
            [[1.2, 0], [0, 0], [0, 0]],
        "job 2 gets x = -0.1 on v100": [[0, 0], [0, 0], [-0.1, 0]],
        "type v100 has 2 workers but the jobs use 2.5": [[0.5, 0], [1.0, 0], [0, 0]],
    }
    for why, x in cases.items():
        r = dom.feasible(inst, np.array(x, dtype=float), 1e-9)
        assert not r.passed and why in r.message, (why, r.message)
    assert dom.feasible(inst, np.array([[0.5, 0], [0.75, 0], [0, 1.0]]), 1e-9).passed
    r = dom.feasible(inst, np.ones((2, 2)), 1e-9)
    assert not r.passed and "expected (3, 2)" in r.message


# ============================================================================================
# arguments, profiles, reproducibility
# ============================================================================================
def test_same_seed_same_counterexample_and_the_seed_is_recorded() -> None:
    a = check_policy(dictator, ["envy_free"], max_examples=15, seed=3)
    b = check_policy(dictator, ["envy_free"], max_examples=15, seed=3)
    assert a.seed == b.seed == 3
    assert a.counterexample is not None and b.counterexample is not None
    np.testing.assert_array_equal(a.counterexample.instance.utility,
                                  b.counterexample.instance.utility)


def test_same_seed_same_instances_whatever_else_is_imported(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    # hypothesis mixes literals of the local modules loaded so far into its draws; the
    # deterministic profile must not depend on which modules a session happens to import
    def run() -> list[bytes]:
        seen: list[bytes] = []

        def spy(u, b, s):  # type: ignore[no-untyped-def]
            seen.append(fst.MarketInstance(u, b, s).key())
            return budget_share(u, b, s)

        check_policy(spy, ["envy_free"], max_examples=60, seed=5)
        return seen

    before = run()
    literals = ", ".join(repr(float(v)) for v in np.linspace(0.1, 10.0, 400).round(6))
    (tmp_path / "lots_of_literals.py").write_text(f"VALUES = [{literals}]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import lots_of_literals  # noqa: F401

    assert run() == before


def test_nondeterministic_profile_draws_and_records_a_seed(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    monkeypatch.setenv(PROFILE_ENV, "nondeterministic")
    seeds = {check_policy(budget_share, ["envy_free"], max_examples=2).seed for _ in range(3)}
    assert len(seeds) > 1
    report = check_policy(budget_share, ["envy_free"], max_examples=2)
    assert report.profile == "nondeterministic" and "nondeterministic profile" in str(report)
    monkeypatch.setenv(PROFILE_ENV, "sometimes")
    with pytest.raises(fa.InputError) as info:
        check_policy(budget_share, ["envy_free"], max_examples=2)
    assert info.value.argument == PROFILE_ENV


def test_max_examples_environment_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MAX_EXAMPLES_ENV, "4")
    report = check_policy(budget_share, ["envy_free"], max_examples=50)
    assert report.max_examples == 4 and report["envy_free"].examples == 4
    monkeypatch.setenv(MAX_EXAMPLES_ENV, "many")
    with pytest.raises(fa.InputError, match=MAX_EXAMPLES_ENV):
        check_policy(budget_share, ["envy_free"])


def test_property_names_are_normalised() -> None:
    assert property_names(["Envy-Free", "sharing incentive", "pareto", "truthful"]) == (
        "envy_free", "sharing_incentive", "pareto_optimal", "strategy_proof")
    assert property_names("all", "cluster") == ClusterDomain.properties
    assert "budget_clearing" not in ClusterDomain.properties


@pytest.mark.parametrize(("kwargs", "argument"), [
    ({"policy": "fisher_market"}, "policy"),
    ({"properties": ["envy_free", "fairness"]}, "properties"),
    ({"properties": ["budget_clearing"], "domain": "cluster"}, "properties"),
    ({"properties": []}, "properties"),
    ({"properties": [3]}, "properties"),
    ({"domain": "auction"}, "domain"),
    ({"max_examples": 0}, "max_examples"),
    ({"max_examples": 2.5}, "max_examples"),
    ({"seed": -1}, "seed"),
    ({"tol": "small"}, "tol"),
    ({"tol": 2.0}, "tol"),
])
def test_bad_arguments_raise_input_error(kwargs: dict, argument: str) -> None:  # type: ignore[type-arg]
    call = {"policy": budget_share, **kwargs}
    with pytest.raises(fa.InputError) as info:
        check_policy(**call)
    assert info.value.argument == argument


def test_domain_objects_control_sizes() -> None:
    dom = MarketDomain(n=3, m=2, equal_budgets=True, integers=True)
    report = check_policy(budget_share, ["feasible"], max_examples=5, domain=dom)
    assert report.passed and report.domain == "market"
    seen: list[tuple[int, ...]] = []

    def spy(u, b, s):  # type: ignore[no-untyped-def]
        seen.append(u.shape)
        assert (b == 1).all() and (u == np.round(u)).all()
        return budget_share(u, b, s)

    check_policy(spy, ["feasible"], max_examples=5, domain=dom)
    assert set(seen) == {(3, 2)}
    with pytest.raises(fa.InputError):
        MarketDomain(kind="cobb-douglas")


# ============================================================================================
# pytest integration and the example
# ============================================================================================
def test_plugin_is_registered(request: pytest.FixtureRequest) -> None:
    assert request.config.pluginmanager.hasplugin("fairalloc")
    assert any("fairalloc_property" in line for line in request.config.getini("markers"))


def test_parametrize_makes_one_test_per_property_and_policy() -> None:
    mark = parametrize_with_property_checks(dictator, ["feasibility", "envy-free"],
                                            max_examples=10).mark
    assert mark.args[0] == "check"
    assert [p.id for p in mark.args[1]] == ["feasible", "envy_free"]
    assert all(m.name == "fairalloc_property" for p in mark.args[1] for m in p.marks)
    check = mark.args[1][0].values[0]
    assert check().passed
    with pytest.raises(PropertyCheckError, match="envy_free fails"):
        mark.args[1][1].values[0]()
    two = parametrize_with_property_checks([budget_share, dictator], "envy_free").mark
    assert [p.id for p in two.args[1]] == [f"{__name__}.budget_share-envy_free",
                                           f"{__name__}.dictator-envy_free"]


def test_the_example_and_a_failing_user_test_run_under_pytest(tmp_path: Path) -> None:
    user = tmp_path / "test_user_policy.py"
    user.write_text(textwrap.dedent("""
        import numpy as np
        from fairalloc.testing import parametrize_with_property_checks

        def first_come(utility, budget, supply):
            x = np.zeros_like(utility)
            x[0] = supply
            return x

        @parametrize_with_property_checks(first_come, ["feasible", "envy-free"],
                                          max_examples=10)
        def test_first_come(check):
            check()
    """))
    example = ROOT / "examples" / "test_my_policy.py"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", str(example), str(user), "-p", "no:cacheprovider",
         "-o", "addopts=", "--rootdir", str(tmp_path), "--fairalloc-profile", "deterministic",
         "-rA"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env=_subprocess_env())
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert "fairalloc.testing: hypothesis profile 'deterministic'" in out
    assert "PASSED" in out and "test_budget_share[strategy_proof]" in out
    assert "1 failed, 5 passed" in out, out
    assert "FAILED" in out and "test_first_come[envy_free]" in out
    for piece in ("envy_free fails: buyer 1 values buyer 0's bundle", "reproduce: policy("):
        assert piece in out, out


# ============================================================================================
# the `fairalloc check` command
# ============================================================================================
def test_cli_passes_the_equilibrium(capsys: pytest.CaptureFixture) -> None:
    code = main(["check", "fairalloc.markets:fisher_market", "--property", "envy-free",
                 "--property", "sharing-incentive", "--max-examples", "10"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "envy_free          passed" in out and "sharing_incentive  passed" in out


def test_cli_fails_with_counterexamples(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    mod = tmp_path / "my_policies.py"
    mod.write_text("import numpy as np\n\ndef dictator(utility, budget, supply):\n"
                   "    x = np.zeros_like(utility)\n    x[0] = supply\n    return x\n")
    code = main(["check", f"{mod}:dictator", "-p", "envy-free", "-p", "feasible",
                 "--max-examples", "10"])
    out = capsys.readouterr().out
    assert code == 1
    assert "envy_free  FAILED" in out and "feasible   passed" in out
    assert "counterexample for envy_free" in out and "reproduce:" in out
    code = main(["check", "fairalloc.throughput:max_total_throughput", "--domain", "cluster",
                 "-p", "sharing-incentive", "--max-examples", "15", "--no-shrink"])
    out = capsys.readouterr().out
    assert code == 1 and "sharing_incentive  FAILED" in out and "fa.Cluster(" in out


@pytest.mark.parametrize(("argv", "match"), [
    (["check", "no_such_module_xyz:policy"], "cannot import module"),
    (["check", "fairalloc.markets:no_such_policy"], "has no attribute"),
    (["check", "fairalloc.markets"], "package.module:function"),
    (["check", "fairalloc.markets:fisher_market", "-p", "kindness"], "not a property"),
    (["check", "fairalloc:__version__"], "not callable"),
])
def test_cli_usage_errors_exit_2(argv: list[str], match: str,
                                 capsys: pytest.CaptureFixture) -> None:
    assert main(argv) == 2
    assert match in capsys.readouterr().err


def test_cli_domains_match_check_policy() -> None:
    from fairalloc.testing import DOMAINS
    from fairalloc.testing.cli import DOMAIN_CHOICES

    assert DOMAIN_CHOICES == DOMAINS


def test_cli_as_a_module_and_without_hypothesis(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "fairalloc.cli", "check", "fairalloc.markets:fisher_market",
         "-p", "envy-free", "--max-examples", "3"],
        capture_output=True, text=True, timeout=300, env=_subprocess_env())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "envy_free" in proc.stdout
    # without hypothesis: the command and the plugin still load; checking asks to install it
    script = textwrap.dedent("""
        import sys
        sys.modules["hypothesis"] = None
        import fairalloc.testing.pytest_plugin
        from fairalloc.cli import main
        assert main(["check", "fairalloc.markets:fisher_market"]) == 2
        try:
            from fairalloc.testing import check_policy
        except ImportError as exc:
            assert 'pip install ".[testing]"' in str(exc)
        else:
            raise SystemExit("check_policy imported without hypothesis")
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, env=_subprocess_env())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "needs hypothesis" in proc.stderr


@FEW
@given(fst.job_sets(fa.Cluster({"v100": 2, "k80": 1}), n=4, elapsed=(0.0, 1e-300),
                    isolated=(0.0, 1e-300)))
def test_drawn_jobs_are_never_subnormal(jobs: fa.Jobs) -> None:
    # ranges reaching below the smallest normal number: the library refuses subnormal inputs,
    # so a draw of one would be a false failure (seen on `elapsed` as 2.2e-311)
    tiny = np.finfo(float).tiny
    for v in (jobs.elapsed, jobs.isolated_elapsed):
        assert not ((v != 0) & (np.abs(v) < tiny)).any()


@pytest.mark.parametrize("n", [10**300, 1_000_001])
def test_an_unbounded_search_budget_is_refused_before_any_work(n: int) -> None:
    # fuzz seed 1717: max_examples=10**300 ran until stopped; the bound is documented
    from fairalloc.testing import check_policy

    with pytest.raises(fa.InputError) as err:
        check_policy(lambda u, b, s: u, ["envy_free"], max_examples=n)
    assert err.value.argument == "max_examples" and "1,000,000" in str(err.value)
