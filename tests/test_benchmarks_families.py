"""benchmarks/families.py: instance generators, one tiny cell of every policy family, the
agreement and certificate columns, and that a wrong reference value is flagged."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))
families = pytest.importorskip("families")

TINY_N = 24  # jobs (buyers) of the in-process cells
TINY_M = 5  # goods of the tiny markets
# the cheapest reference of each policy family (no ECOS needed)
CHEAP_REFERENCE = {
    "max-min": "HiGHS IPM",
    "max-min+wc": "HiGHS simplex",
    "ftf": "Gavel cvxpy+Clarabel",
    "ftf+wc": "Gavel cvxpy+Clarabel",
    "water-filling": "LP sequence cvxpy+Clarabel",
    "fisher-linear": "Clarabel direct",
    "fisher-leontief": "Clarabel direct",
}


def _spec(policy: str, solver: str) -> dict[str, object]:
    market = policy in families.MARKET_POLICIES
    return {"policy": policy, "solver": solver, "family": "random" if market else "ties",
            "n": TINY_N, "m": TINY_M if market else 0, "warm": False}


@pytest.mark.parametrize("policy", families.POLICIES)
def test_tiny_cell_agrees_and_is_certified(policy: str) -> None:
    assert set(CHEAP_REFERENCE) == set(families.POLICIES)
    ours = families.run_cell(_spec(policy, families.FAIRALLOC))
    ref = families.run_cell(_spec(policy, CHEAP_REFERENCE[policy]))
    assert ours["seconds"] > 0 and ref["seconds"] > 0
    assert ours["cert"]["ok"] and ref["cert"] is None
    budget = families._budget(policy, "random", TINY_N, TINY_M)
    rows, summary = families.group_rows(policy, ours, {CHEAP_REFERENCE[policy]: ref}, budget)
    solver, seconds, ratio, rel, cert = rows[1]
    assert solver == CHEAP_REFERENCE[policy] and seconds.endswith(" s")
    assert ratio.endswith("x") and float(ratio[:-1]) > 0
    assert not rel.endswith("!") and float(rel) <= families.AGREE_TOL
    assert rows[0][4].startswith("ok, gap ")
    assert summary["best"].startswith(CHEAP_REFERENCE[policy])

    # the same reference with its objective off by 1 % of the scale is flagged
    wrong = dict(ref)
    shift = 0.01 * (budget or 1.0)
    wrong["value"] = [v * 1.01 if budget is None else v + shift for v in ref["value"]]
    rows, summary = families.group_rows(policy, ours, {"wrong": wrong}, budget)
    assert rows[1][3].endswith("!")
    assert families.flagged(summary["rel"])


def test_agreement_hand_checked() -> None:
    assert families.agreement("max-min", [1.0], [1.25]) == pytest.approx(0.2)
    assert families.agreement("max-min+wc", [2.0, 10.0], [2.0, 8.0]) == pytest.approx(0.25)
    # markets: absolute difference over the total budget
    assert families.agreement("fisher-linear", [-3.0], [-5.0], budget=4.0) == pytest.approx(0.5)
    assert families.agreement("ftf", [1.0], [1.0, 2.0]) == np.inf
    assert not families.flagged(families.AGREE_TOL)
    assert families.flagged(2 * families.AGREE_TOL) and families.flagged(float("nan"))


def test_timeouts_and_errors_are_reported() -> None:
    ours = {"seconds": 2.0, "value": [1.0], "cert": {"ok": True, "gap": 0.0, "residual": 0.0}}
    rows, summary = families.group_rows("max-min", ours, {"slow": {"timeout": 10.0},
                                                          "broken": {"error": "boom"}})
    assert rows[1][1:3] == ("> 10 s", "> 5.00x")
    assert rows[2][1] == "error" and rows[2][3] == "boom"
    assert summary["best"] == "all > 10 s" and summary["ratio"] == "> 5.00x"
    assert summary["rel"] is None  # nothing to compare with: no agreement figure
    rows, summary = families.group_rows("max-min", {"timeout": 4.0}, {"r": {"seconds": 1.0,
                                                                              "value": [1.0]}})
    assert rows[0][1] == "> 4 s" and summary["ratio"] == "< 0.25x"
    # a cell past its time limit is killed and reported as such
    assert families.run_cell_subprocess(_spec("max-min", families.FAIRALLOC), 0.01) == {
        "timeout": 0.01}


def test_fitted_exponent() -> None:
    ns = [4096.0, 16384.0, 65536.0]
    assert families.fitted_exponent(ns, [3e-6 * n ** 1.5 for n in ns]) == pytest.approx(1.5)
    assert np.isnan(families.fitted_exponent(ns[:1], [1.0]))


def test_instance_families_have_their_structure() -> None:
    n = 256
    for family in families.FAMILIES:
        jobs, cluster = families.make_instance(family, n)
        T = jobs.throughput
        types = int(family.rsplit("-", 1)[1]) if family.startswith("many-types") else 3
        assert T.shape == (n, types)
        assert (T.max(axis=1) > 0).all() and cluster.capacity.min() >= 8
        if family == "identical":
            assert (T == T[0]).all() and (jobs.steps_remaining == jobs.steps_remaining[0]).all()
        if family == "ties":
            assert len(np.unique(T, axis=0)) <= families.TIES_MODELS
            assert set(np.unique(jobs.weight)) <= {1.0, 2.0}
        if family == "dominant":
            assert (T[:, 0] == T.max(axis=1)).all()
            assert cluster.capacity[0] > cluster.capacity[1:].sum()
        if family == "sparse":
            assert set(np.unique((T > 0).sum(axis=1))) <= {1, 2}
    for family in families.MARKET_FAMILIES:
        for kind in ("linear", "leontief"):
            U, B = families.make_market(family, n, 20, kind)
            assert U.shape == (n, 20) and B.shape == (n,) and (U.max(axis=1) > 0).all()
            if family == "identical":
                assert (U == U[0]).all()
    # the same seed gives the same instance (every cell rebuilds it in its own process)
    a, _ = families.make_instance("random", 64)
    b, _ = families.make_instance("random", 64)
    assert np.array_equal(a.throughput, b.throughput)
    with pytest.raises(ValueError, match="unknown family"):
        families.make_instance("bogus", 8)


def test_water_filling_on_tied_rows_keeps_the_structured_level():
    """4,096 jobs of the `ties` family, 3 entities: the structured level has about 1,500 jobs
    near a tie. Handing it to the whole LP (the degenerate-prices rule of max-min) left floors
    met only to the interior point's tolerance, and the whole-program bottleneck LP that then
    decided the jobs took over 60 s at 8,192 jobs; water-filling keeps the structured level."""
    import fairalloc as fa

    jobs, cluster = families.make_instance("ties", 4096)
    plain = fa.max_min_fairness(jobs, cluster, symmetry=False, work_conserving=False)
    # max-min itself no longer hands these stages over: the row classes (one model's jobs)
    # are aggregated in its master (#15, rowclass.py)
    assert plain.certificate.ok and not any("degenerate" in f for f in plain.stats.fallbacks)
    ents = np.arange(4096) % len(families.ENTITY_WEIGHTS)
    w = fa.water_filling(jobs, cluster, entities=ents,
                         entity_weights=dict(enumerate(families.ENTITY_WEIGHTS)))
    assert "structured-level" in w.stats.path and "exact-lp" not in w.stats.path
    assert not any("degenerate" in f for f in w.stats.fallbacks)
    assert w.certificate.ok and all(c.ok for c in w.stage_certificates)
