"""The cluster domain reaches drained types and space sharing (issue #32, item 3 of its
build list): ``ClusterDomain(drained=, pairs=)`` generates them, every property accounts for
them, and the suite finds the defects they expose in policies written here."""

from __future__ import annotations

import numpy as np
import pytest

import fairalloc as fa
from fairalloc.cli import main
from fairalloc.testing import ClusterDomain, check_policy
from fairalloc.testing.strategies import ClusterState, cluster_instances, minimal

pytest.importorskip("hypothesis")

#: few examples: each test looks for one defect that the smallest instances already show
EXAMPLES = 15


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
def test_drained_types_have_no_workers_and_every_job_still_runs_somewhere() -> None:
    inst = minimal(cluster_instances(drained=1, types=2, n=2))
    c = inst.cluster
    assert isinstance(c, ClusterState)
    assert c.num_types == 3 and len(c.drained_types) == 1
    assert c.present.num_types == 2
    T = inst.jobs.throughput
    assert T.shape == (inst.n, 3)
    present = c.capacity > 0
    assert np.all((T[:, present] > 0).any(axis=1))
    # with a range including 0 the policy still always gets a ClusterState
    none = minimal(cluster_instances(drained=(0, 1), n=1, types=1))
    assert isinstance(none.cluster, ClusterState) and none.cluster.drained_types == ()
    assert "fa.testing.strategies.ClusterState(" in inst.as_code()


def test_pairs_slow_both_members_down_and_run_only_where_both_can() -> None:
    inst = minimal(cluster_instances(pairs=2, types=2, n=3),
                   lambda i: i.pairs is not None and i.pairs.num_pairs == 2)
    pp = inst.pairs
    assert isinstance(pp, fa.JobPairs) and inst.kwargs()["pairs"] is pp
    a, b = pp.members[:, 0], pp.members[:, 1]
    assert np.all(a < b) and len({tuple(m) for m in pp.members.tolist()}) == 2
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
    rep = check_policy(equal_split_everywhere, ["feasible"], EXAMPLES,
                       domain=ClusterDomain(drained=1, density=1.0))
    r = rep["feasible"]
    assert r.status == "failed"
    assert "does not fit in 0 workers" in r.counterexample.message


def test_dividing_by_a_drained_capacity_is_caught() -> None:
    rep = check_policy(normalised_by_capacity, ["feasible"], EXAMPLES,
                       domain=ClusterDomain(drained=1, density=1.0))
    assert rep["feasible"].status == "failed"


def test_fairalloc_refuses_a_drained_cluster_and_the_rounds_api_passes() -> None:
    dom = ClusterDomain(drained=(0, 1), max_scale_factor=2)
    refused = check_policy(fa.max_min_fairness, ["runs"], EXAMPLES, domain=dom)
    assert refused["runs"].status == "failed"
    assert "ClusterState" in refused["runs"].counterexample.message
    ok = check_policy(via_solve_round, ["feasible", "sharing_incentive", "pareto_optimal"],
                      EXAMPLES, domain=dom)
    assert ok.passed, ok


def test_pair_time_not_counted_against_its_members_is_infeasible() -> None:
    rep = check_policy(pairs_twice, ["feasible"], EXAMPLES,
                       domain=ClusterDomain(pairs=1, density=1.0))
    r = rep["feasible"]
    assert r.status == "failed"
    assert "its pairs included" in r.counterexample.message


def test_max_min_with_pairs_passes_and_not_space_sharing_is_not_pareto_optimal() -> None:
    dom = ClusterDomain(pairs=(1, 2), density=1.0)
    good = check_policy(fa.max_min_fairness, ["feasible", "sharing_incentive",
                                               "pareto_optimal", "market_clearing"],
                        EXAMPLES, domain=dom)
    assert good.passed, good
    bad = check_policy(ignores_pairs, ["pareto_optimal"], EXAMPLES,
                       domain=ClusterDomain(pairs=1, density=1.0, pair_slowdown=(0.9, 1.0)))
    r = bad["pareto_optimal"]
    assert r.status == "failed"
    y = r.counterexample.improvement  # the improving allocation uses the pair's row
    inst = r.counterexample.instance
    assert y.shape == (inst.n + 1, inst.cluster.num_types) and y[inst.n:].sum() > 0


def test_cli_reaches_drained_and_pairs(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", "tests.test_testing_domains:equal_split_everywhere",
                 "--domain", "cluster", "--domain-option", "drained=1",
                 "--domain-option", "pairs=0,1", "--domain-option", "density=1",
                 "-p", "feasible", "--max-examples", str(EXAMPLES), "--no-progress"])
    out = capsys.readouterr().out
    assert code == 1
    assert "ClusterState(" in out and "does not fit in 0 workers" in out


# ============================================================================================
# weighted sharing incentive (proofs/weighted_sharing_incentive.md)
# ============================================================================================
def _hier(T, weight, entities, entity_weights, policies=None, sf=None):  # type: ignore[no-untyped-def]
    from fairalloc.testing.strategies import ClusterInstance

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
