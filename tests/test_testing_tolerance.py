"""Per-property tolerances of fairalloc.testing (issue #32 item 4): each property judged relative
to the instance's own scale, one tolerance per property, the same verdict on a rescaled
instance."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.cli import main as cli_main
from fairalloc.testing import ClusterDomain, MarketDomain, Tolerance, check_policy
from fairalloc.testing import strategies as fst
from fairalloc.testing.checks import PropertySearch

#: the relative shortfall the flawed policy below leaves buyer 0 (a property violation whose
#: size is known exactly: sharing incentive fails by this fraction of buyer 0's share)
SHORTFALL = 0.05


def short_split(utility: np.ndarray, budget: np.ndarray, supply: np.ndarray) -> np.ndarray:
    """The budget-share split, with buyer 0 given ``1 - SHORTFALL`` of its share."""
    x = np.outer(budget / budget.sum(), supply)
    x[0] *= 1.0 - SHORTFALL
    return x


def test_violation_below_a_property_rtol_passes_above_fails() -> None:
    loose = check_policy(short_split, ["sharing_incentive"], max_examples=20,
                         tol={"sharing_incentive": 2 * SHORTFALL})
    strict = check_policy(short_split, ["sharing_incentive"], max_examples=20,
                          tol={"sharing-incentive": (SHORTFALL / 2, 0.0)})
    assert loose.passed
    assert not strict.passed
    cx = strict.counterexample
    assert cx.property == "sharing_incentive" and cx.agent == 0
    # the violation is the known shortfall of buyer 0's share (the property's reference)
    U, B, s = cx.instance.utility, cx.instance.budget, cx.instance.supply
    share = B[0] / B.sum() * float(U[0] @ s)
    assert cx.violation == pytest.approx(SHORTFALL * share, rel=1e-9)


def test_a_tolerance_of_one_property_leaves_the_others_alone() -> None:
    # envy-freeness keeps the default tolerance: buyer 0 envies the others and it fails
    rep = check_policy(short_split, ["sharing_incentive", "envy_free"], max_examples=20,
                       tol={"sharing_incentive": Tolerance(2 * SHORTFALL)})
    assert rep["sharing_incentive"].status == "passed"
    assert rep["envy_free"].status == "failed"
    # ... unless it is loosened too, with the "default" key
    rep = check_policy(short_split, ["sharing_incentive", "envy_free"], max_examples=20,
                       tol={"default": 2 * SHORTFALL})
    assert rep.passed


def test_atol_is_a_fraction_of_the_instance_scale() -> None:
    # a floor of a fraction 1 / 2 of the largest utility times supply absorbs the 5 % shortfall
    # (a buyer's share is at most its whole value, at most the scale)
    rep = check_policy(short_split, ["sharing_incentive"], max_examples=20,
                       tol={"sharing_incentive": (1e-6, 0.5)})
    assert rep.passed


@pytest.mark.parametrize("bad", [
    -1e-3, 0.0, 0.5, 1.5, "1e-6", True, float("nan"), {"envy_free": 2.0},
    {"envy_free": (1e-6, -1.0)}, {"envy_free": (1e-6, 0.0, 1.0)}, {"no_such": 1e-3},
    {3: 1e-3},
])
def test_a_bad_tolerance_is_an_input_error_naming_tol(bad: object) -> None:
    with pytest.raises(fa.InputError) as err:
        check_policy(short_split, ["envy_free"], max_examples=1, tol=bad)
    assert err.value.argument == "tol"
    if isinstance(bad, dict):
        assert err.value.index == (next(iter(bad)),)  # the offending property
        assert repr(next(iter(bad))) in str(err.value) or str(next(iter(bad))) in str(err.value)


def test_tolerance_value_validates() -> None:
    with pytest.raises(fa.InputError, match="rtol") as err:
        Tolerance(rtol=2.0)
    assert err.value.argument == "tol"
    with pytest.raises(fa.InputError, match="atol"):
        Tolerance(atol=-1.0)


def test_cli_tol_per_property(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    mod = tmp_path / "short_policy.py"
    mod.write_text("import numpy as np\n"
                   "def short_split(utility, budget, supply):\n"
                   "    x = np.outer(budget / budget.sum(), supply)\n"
                   f"    x[0] *= 1.0 - {SHORTFALL}\n"
                   "    return x\n")
    base = [f"{mod}:short_split", "-p", "sharing-incentive", "--max-examples", "20",
            "--no-progress"]
    assert cli_main(["check", *base, "--tol", f"sharing-incentive={2 * SHORTFALL},0"]) == 0
    assert cli_main(["check", *base, "--tol", f"sharing-incentive={SHORTFALL / 2}"]) == 1
    assert cli_main(["check", *base, "--tol", f"{2 * SHORTFALL}"]) == 0
    capsys.readouterr()
    assert cli_main(["check", *base, "--tol", "sharing-incentive=lots"]) == 2
    assert "--tol must look like" in capsys.readouterr().err
    assert cli_main(["check", *base, "--tol", "no-such=1e-3"]) == 2
    assert "'no-such'" in capsys.readouterr().err


def test_plugin_checks_the_tolerance_when_the_mark_is_made() -> None:
    from fairalloc.testing import parametrize_with_property_checks

    with pytest.raises(fa.InputError) as err:
        parametrize_with_property_checks(short_split, ["envy_free"],
                                         tol={"envy_free": (1e-3, 5.0)})
    assert err.value.argument == "tol"
    mark = parametrize_with_property_checks(short_split, ["sharing_incentive"],
                                            max_examples=20,
                                            tol={"sharing_incentive": 2 * SHORTFALL})
    (param,) = mark.args[1]
    param.values[0]()  # passes: within the property's tolerance


# ------------------------------------------------------------------------------------------
# the same verdict on a rescaled instance
# ------------------------------------------------------------------------------------------
def by_utility(utility: np.ndarray, budget: np.ndarray, supply: np.ndarray) -> np.ndarray:
    """Each good split in proportion to the buyers' utilities for it (not envy-free, not
    sharing-incentive in general; exactly homogeneous in the utilities)."""
    tot = utility.sum(axis=0)
    w = np.divide(utility, tot, out=np.full_like(utility, 1.0 / len(utility)), where=tot > 0)
    return w * supply


def spread(jobs: fa.Jobs, cluster: fa.Cluster) -> np.ndarray:
    """Each job's time spread over the types it can use in proportion to its throughputs,
    each type's column scaled into its workers (homogeneous in the throughputs)."""
    tp = np.where(jobs.scale_factor[:, None] <= cluster.capacity[None], jobs.throughput, 0.0)
    tot = tp.sum(axis=1, keepdims=True)
    x = np.divide(tp, tot, out=np.zeros_like(tp), where=tot > 0)
    used = jobs.scale_factor @ x
    return x * np.minimum(1.0, np.divide(cluster.capacity, used, out=np.ones_like(used),
                                         where=used > 0))[None]


def shaved_share(jobs: fa.Jobs, cluster: fa.Cluster) -> np.ndarray:
    """The isolated share (each job ``1 / n`` of every type's workers, at most all of its
    time), with job 0 given 0.1 % less: sharing incentive fails by a small relative amount."""
    n, cap = jobs.n, cluster.capacity
    f = 1.0 / n
    x = np.repeat((cap * f / max(1.0, f * cap.sum()))[None], n, axis=0)
    x[0] *= 1.0 - 1e-3
    return x


def _verdict(search: PropertySearch, name: str, inst: object) -> bool:
    return search.evaluate(name, inst) is None


def _rescaled_cluster(inst: fst.ClusterInstance, f: float) -> fst.ClusterInstance:
    j = inst.jobs
    return fst.ClusterInstance(fa.Jobs(j.throughput * f, scale_factor=j.scale_factor,
                                       weight=j.weight), inst.cluster)


SCALES = st.sampled_from([1e6, 1e-6])
CHECKED = ("envy_free", "sharing_incentive", "proportionality", "pareto_optimal")


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(ClusterDomain(density=1.0).instances(), SCALES, st.sampled_from(CHECKED),
       st.sampled_from([spread, shaved_share]))
def test_cluster_verdict_does_not_depend_on_the_throughput_unit(
        inst: fst.ClusterInstance, f: float, name: str, policy: object) -> None:
    search = PropertySearch(policy, ClusterDomain(), 1e-6)
    assert _verdict(search, name, inst) == _verdict(search, name, _rescaled_cluster(inst, f))


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(MarketDomain().instances(), SCALES, st.sampled_from(CHECKED))
def test_market_verdict_does_not_depend_on_the_utility_unit(
        inst: fst.MarketInstance, f: float, name: str) -> None:
    search = PropertySearch(by_utility, MarketDomain(), 1e-6)
    scaled = fst.MarketInstance(inst.utility * f, inst.budget, inst.supply)
    assert _verdict(search, name, inst) == _verdict(search, name, scaled)


def test_a_small_unit_does_not_hide_a_failure() -> None:
    # the same failing policy on throughputs in micro-steps per second: still a failure (before:
    # every violation was below the absolute floor 1e-6, or within the band 1e-5 of a scale of
    # at least 1, and the check passed)
    inst = fst.ClusterInstance(fa.Jobs([[4.0, 1.0], [1.0, 4.0]]),
                               fa.Cluster({"v100": 1, "k80": 1}))
    search = PropertySearch(lambda j, c: np.array([[0.2, 0.8], [0.8, 0.2]]), ClusterDomain(),
                            1e-6)
    for f in (1.0, 1e-6, 1e6):
        cx = search.evaluate("envy_free", _rescaled_cluster(inst, f))
        assert cx is not None and cx.violation == pytest.approx(1.8 * f)
