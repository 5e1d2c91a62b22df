"""The cluster domain reaches drained types and space sharing (issue #32, item 3 of its
build list): ``ClusterDomain(drained=, pairs=)`` generates them, every property accounts for
them, and the suite finds the defects they expose in policies written here."""

from __future__ import annotations

import numpy as np
import pytest

import fairalloc as fa
from fairalloc.cli import main
from fairalloc.testing import ClusterDomain, check_policy
from fairalloc.testing.strategies import ClusterInstance, ClusterState, cluster_instances

pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402

#: few examples, no shrinking: each test looks for a defect every (or the first) instance shows
EXAMPLES = 5


# ============================================================================================
# policies written here (not in fairalloc)
# ============================================================================================
def equal_split_everywhere(jobs, cluster, **_):  # type: ignore[no-untyped-def]
    """Every job spends 1/(n k) of its time on every listed type -- drained ones included."""
    n, k = jobs.throughput.shape
    return np.full((n, k), 1.0 / (n * k))


def normalised_by_capacity(jobs, cluster, **_):  # type: ignore[no-untyped-def]
    """Divides by every type's capacity (as X^equal does) without looking for zeros."""
    n, k = jobs.throughput.shape
    with np.errstate(divide="ignore", invalid="ignore"):
        per_worker = jobs.throughput / np.asarray(cluster.capacity, dtype=float)[None, :]
    return np.full((n, k), 1.0 / (n * k)) * (per_worker > 0)


def via_solve_round(jobs, cluster, **_):  # type: ignore[no-untyped-def]
    """fairalloc's max-min fairness through the rounds API, which takes drained types."""
    return fa.solve_round("max_min_fairness", jobs.throughput, cluster.workers,
                          scale_factor=jobs.scale_factor, weight=jobs.weight).x


def pairs_twice(jobs, cluster, pairs=None):  # type: ignore[no-untyped-def]
    """Max-min fairness alone, then every pair also runs all of its time on its fastest type:
    a job's time in its pairs is not counted against its own."""
    x = np.asarray(fa.max_min_fairness(jobs, cluster).x)
    P = 0 if pairs is None else pairs.num_pairs
    extra = np.zeros((P, x.shape[1]))
    if P:
        extra[np.arange(P), np.argmax(pairs.throughput.sum(axis=2), axis=1)] = 1.0
    return np.vstack([x, extra])


def ignores_pairs(jobs, cluster, pairs=None):  # type: ignore[no-untyped-def]
    """Max-min fairness that never space-shares (zero rows for the pairs)."""
    x = np.asarray(fa.max_min_fairness(jobs, cluster).x)
    P = 0 if pairs is None else pairs.num_pairs
    return np.vstack([x, np.zeros((P, x.shape[1]))])


# ============================================================================================
# generation
# ============================================================================================
#: generated instances per generation property (deterministic)
DRAWS = settings(max_examples=10, derandomize=True, deadline=None, database=None)


@DRAWS
@given(cluster_instances(drained=1, types=2, n=(1, 3)))
def test_drained_types_have_no_workers_and_every_job_still_runs_somewhere(inst) -> None:  # type: ignore[no-untyped-def]
    c = inst.cluster
    assert isinstance(c, ClusterState)
    assert c.num_types == 3 and len(c.drained_types) == 1
    assert c.present.num_types == 2
    T = inst.jobs.throughput
    assert T.shape == (inst.n, 3)
    present = c.capacity > 0
    assert np.all((T[:, present] > 0).any(axis=1))
    assert "fa.testing.strategies.ClusterState(" in inst.as_code()


@DRAWS
@given(cluster_instances(drained=(0, 1), n=1, types=1))
def test_a_drained_range_always_gives_a_cluster_state(inst) -> None:  # type: ignore[no-untyped-def]
    assert isinstance(inst.cluster, ClusterState)
    assert len(inst.cluster.drained_types) <= 1


@DRAWS
@given(cluster_instances(pairs=2, types=2, n=(2, 3)))
def test_pairs_slow_both_members_down_and_run_only_where_both_can(inst) -> None:  # type: ignore[no-untyped-def]
    pp = inst.pairs
    assert isinstance(pp, fa.JobPairs) and inst.kwargs()["pairs"] is pp
    P = pp.num_pairs
    assert P == min(2, inst.n * (inst.n - 1) // 2)
    a, b = pp.members[:, 0], pp.members[:, 1]
    assert np.all(a < b) and len({tuple(m) for m in pp.members.tolist()}) == P
    solo = np.stack([inst.jobs.throughput[a], inst.jobs.throughput[b]], axis=2)
    assert np.all(pp.throughput <= solo)
    both = (solo > 0).all(axis=2)
    assert np.all((pp.throughput > 0).all(axis=2) == both)
    assert "pairs=fa.JobPairs(" in inst.as_code()


@pytest.mark.parametrize("bad", [{"drained": -1}, {"pairs": (2, 1)},
                                 {"pairs": 1, "pair_slowdown": (0.5, 2.0)}])
def test_bad_drained_and_pair_options_raise_input_error(bad) -> None:  # type: ignore[no-untyped-def]
    name = next(iter(bad)) if "pair_slowdown" not in bad else "pair_slowdown"
    with pytest.raises(fa.InputError) as err:
        ClusterDomain(**bad)
    assert err.value.argument == name


# ============================================================================================
# what the domain finds
# ============================================================================================
def test_time_on_a_drained_type_is_infeasible() -> None:
    rep = check_policy(equal_split_everywhere, ["feasible"], EXAMPLES, shrink=False,
                       domain=ClusterDomain(drained=1, density=1.0))
    r = rep["feasible"]
    assert r.status == "failed"
    assert "does not fit in 0 workers" in r.counterexample.message


def test_dividing_by_a_drained_capacity_is_caught() -> None:
    rep = check_policy(normalised_by_capacity, ["feasible"], EXAMPLES, shrink=False,
                       domain=ClusterDomain(drained=1, density=1.0))
    assert rep["feasible"].status == "failed"


def test_fairalloc_refuses_a_drained_cluster_and_the_rounds_api_passes() -> None:
    dom = ClusterDomain(drained=(0, 1), max_scale_factor=2)
    refused = check_policy(fa.max_min_fairness, ["runs"], EXAMPLES, domain=dom, shrink=False)
    assert refused["runs"].status == "failed"
    assert "ClusterState" in refused["runs"].counterexample.message
    ok = check_policy(via_solve_round, ["sharing_incentive", "pareto_optimal"], 3, domain=dom)
    assert ok.passed, ok


def test_pair_time_not_counted_against_its_members_is_infeasible() -> None:
    rep = check_policy(pairs_twice, ["feasible"], EXAMPLES, shrink=False,
                       domain=ClusterDomain(pairs=1, density=1.0))
    r = rep["feasible"]
    assert r.status == "failed"
    assert "its pairs included" in r.counterexample.message


def test_max_min_with_pairs_passes_and_not_space_sharing_is_not_pareto_optimal() -> None:
    dom = ClusterDomain(pairs=(1, 2), density=1.0)
    good = check_policy(fa.max_min_fairness, ["sharing_incentive", "pareto_optimal",
                                               "market_clearing"], 3, domain=dom)
    assert good.passed, good
    # two jobs on one V100 run at 1 alone and at 0.9 each together: time-sharing gives 0.5 each
    inst = ClusterInstance(fa.Jobs([[1.0], [1.0]]), fa.Cluster({"v100": 1}),
                           pairs=fa.JobPairs([[0, 1]], [[[0.9, 0.9]]]))
    bad = check_policy(ignores_pairs, ["pareto_optimal"], 1, domain=dom, examples=[inst])
    r = bad["pareto_optimal"]
    assert r.status == "failed"
    np.testing.assert_allclose(r.counterexample.improvement, [[0.0], [0.0], [1.0]], atol=1e-9)


def test_cli_reaches_drained_and_pairs(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", "tests.test_testing_domains:equal_split_everywhere",
                 "--domain", "cluster", "--domain-option", "drained=1",
                 "--domain-option", "pairs=0,1", "--domain-option", "density=1",
                 "-p", "feasible", "--max-examples", str(EXAMPLES), "--no-progress",
                 "--no-shrink"])
    out = capsys.readouterr().out
    assert code == 1
    assert "ClusterState(" in out and "does not fit in 0 workers" in out


# ============================================================================================
# weighted sharing incentive (proofs/weighted_sharing_incentive.md)
# ============================================================================================
def _hier(T, weight, entities, entity_weights, policies=None, sf=None):  # type: ignore[no-untyped-def]
    n, k = np.shape(T)
    jobs = fa.Jobs(T, weight=weight, scale_factor=sf)
    cl = fa.Cluster({t: 1 for t in ("v100", "p100", "k80")[:k]})
    ent = tuple(entities)
    return ClusterInstance(jobs, cl, ent, dict(entity_weights),
                           policies or dict.fromkeys(entity_weights, "fairness"))


#: instances where a per-job weight share cannot be promised by weighted max-min: a capped
#: share (job 0's 2/3 of 2 workers exceeds its gang of 1), unequal job weights inside an
#: entity, and a FIFO entity (its second job is promised nothing)
WEIGHTED = [
    _hier([[1.0, 2.0], [0.0, 1.0]], [1.0, 1.0], [0, 1], {0: 2.0, 1: 1.0}),
    _hier([[4.0, 3.0], [3.0, 1.0]], [2.0, 1.0], [0, 0], {0: 1.0}),
    _hier([[1.0], [1.0]], [1.0, 1.0], [0, 0], {0: 1.0}, {0: "fifo"}),
]


def test_the_weighted_share_guarantee_scales_by_the_capped_share() -> None:
    dom = ClusterDomain(entities=(1, 3), weighted=True)
    g = dom.share_guarantee(WEIGHTED[0])
    # X^w: job 0 runs 1/2 on each type (capped, r_0 = 3/4), job 1 1/3 on p100 (r_1 = 1)
    np.testing.assert_allclose(g, [1.5, 0.75 * (1.0 / 3.0)], rtol=1e-12)
    # FIFO entity: the first job is promised the entity's whole share, the second nothing
    np.testing.assert_allclose(dom.share_guarantee(WEIGHTED[2]), [1.0, 0.0], rtol=1e-12)


def test_water_filling_has_weighted_sharing_incentive_on_hierarchical_instances() -> None:
    dom = ClusterDomain(entities=(1, 3), weighted=True, max_scale_factor=2,
                        entity_policies=("fairness", "fifo"))
    rep = check_policy(fa.water_filling, ["sharing_incentive"], EXAMPLES, domain=dom,
                       examples=WEIGHTED)
    assert rep.passed, rep


def test_weighted_sharing_incentive_still_catches_a_policy_ignoring_weights() -> None:
    def equal_max_min(jobs, cluster, **_):  # type: ignore[no-untyped-def]
        return fa.max_min_fairness(fa.Jobs(jobs.throughput), cluster).x

    inst = _hier([[1.0], [1.0]], [1.0, 1.0], [0, 1], {0: 3.0, 1: 1.0})  # promised 3/4, 1/4
    rep = check_policy(equal_max_min, ["sharing_incentive"], 1, domain=ClusterDomain(
        entities=(1, 3)), examples=[inst])
    r = rep["sharing_incentive"]
    assert r.status == "failed" and r.counterexample.agent == 0


class ArrivalOrder:
    """A Gavel-style policy (Gavel's FIFO reads its job ids this way): ids are Gavel's
    ``JobIdPair``s -- ``is_pair()``, sorted in arrival order -- and the first job gets it all."""

    def get_allocation(self, throughputs, scale_factors, cluster_spec):  # type: ignore[no-untyped-def]
        first = sorted(j for j in throughputs if not j.is_pair())[0]
        best = max(cluster_spec, key=lambda t: throughputs[first][t])
        return {j: {t: float(j == first and t == best) for t in cluster_spec}
                for j in throughputs}


def test_a_gavel_object_gets_gavel_job_ids_in_arrival_order() -> None:
    rep = check_policy(ArrivalOrder(), ["runs", "feasible", "envy_free"], EXAMPLES, shrink=False,
                       domain=ClusterDomain(density=1.0),
                       expected_failures={"envy_free": "FIFO by design"})
    assert rep["runs"].status == "passed" and rep["feasible"].status == "passed"
    assert rep["envy_free"].status == "xfailed"
    assert rep.passed


class NeedsSolver(ArrivalOrder):
    def __init__(self, solver):  # type: ignore[no-untyped-def]
        self.solver = solver


def test_a_gavel_policy_class_is_instantiated_or_explained() -> None:
    rep = check_policy(ArrivalOrder, ["runs"], 3, domain="cluster", shrink=False)
    assert rep["runs"].status == "passed"
    with pytest.raises(fa.InputError, match=r"NeedsSolver\(solver='ECOS'\)") as err:
        check_policy(NeedsSolver, ["runs"], 3, domain="cluster")
    assert err.value.argument == "policy"
