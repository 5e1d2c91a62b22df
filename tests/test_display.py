"""Results in notebooks: one name for the allocation, ids everywhere, a short repr and an
HTML view (allocation with ids and type names, prices, certificate verdict)."""

from __future__ import annotations

import numpy as np
import pytest

import fairalloc as fa
from fairalloc._display import MAX_COLUMNS, MAX_ROWS, Table, View, to_html

N_JOBS = 200
TYPES = {"V100": 20, "P100": 30, "K80": 40}
REPR_MAX = 200  # a summary line, not one label per job


@pytest.fixture(scope="module")
def gavel() -> fa.Allocation:
    rng = np.random.default_rng(0)
    jobs = fa.Jobs(rng.uniform(1.0, 10.0, (N_JOBS, 3)),
                   ids=[f"job{i}" for i in range(N_JOBS)])
    return fa.max_min_fairness(jobs, fa.Cluster(TYPES))


@pytest.fixture(scope="module")
def market() -> fa.MarketResult:
    return fa.fisher_market([[2.0, 1.0], [1.0, 2.0], [1.0, 1.0]], ids=["a", "b", "<c>"],
                            goods=["V100", "K80"])


def test_repr_of_a_200_job_allocation_is_one_short_line(gavel):
    text = repr(gavel)
    assert "\n" not in text and len(text) <= REPR_MAX
    assert text.startswith("Allocation(jobs=200, types=3, policy=max_min_fairness")
    assert "status=optimal" in text and "certified" in text and "gap=" in text


def test_html_shows_ids_types_prices_verdict_and_truncates(gavel):
    page = gavel._repr_html_()
    assert "<th>job0</th>" in page and f"job{MAX_ROWS}" not in page
    assert f"{N_JOBS - MAX_ROWS} more rows" in page
    for t in TYPES:
        assert f"<th>{t}</th>" in page
    assert "prices" in page and "effective_throughput" in page
    assert "optimal" in page and "certified" in page and "relative gap" in page


def test_html_escapes_labels_and_truncates_columns(market):
    page = market._repr_html_()
    assert "&lt;c&gt;" in page and "<c>" not in page
    wide = Table("t", "row", [0], list(range(MAX_COLUMNS + 5)), np.zeros((1, MAX_COLUMNS + 5)))
    assert "5 more columns" in to_html(View("T", [], None, [wide]))


def test_allocation_is_one_name_on_every_result(gavel, market):
    assert gavel.allocation is gavel.x
    plan = fa.plan_schedule([fa.PlanJob(workers=1, total_epochs=10, done_epochs=0, ftf=1.0,
                                        regimes=[(60.0, 10)])], 1, rounds=3)
    assert plan.allocation is plan.schedule and "PlanResult(jobs=1, rounds=3" in repr(plan)
    assert "<th>t0</th>" in plan._repr_html_()
    assert market.allocation.shape == (3, 2)
    pa = fa.partial_allocation([[2.0, 1.0], [1.0, 1.0]])
    assert pa.allocation.shape == (2, 2) and "prices of the PF market" in pa._repr_html_()
    auction = fa.bundle_auction([[[0], [0, 1]], [[1]]], [[1.0, 2.0], [1.5]], num_goods=2)
    assert auction.allocation.shape == (2, 2) and "GPUAuctionResult(agents=2, gpus=2" in repr(
        auction)
    efq = fa.efq_schedule([0.0, 1.0, 2.0], [4.0, 2.0, 1.0], 2)
    dense = efq.allocation.toarray()
    for k, t in enumerate(efq.allocation_times):
        assert dense[:, k].tolist() == efq.allocation_at(t).tolist()
    assert "replay-checked" in repr(efq) and "efq_finish" in efq._repr_html_()


def test_market_ids_are_validated_and_carried(market):
    assert market.ids == ("a", "b", "<c>") and market.goods == ("V100", "K80")
    assert fa.fisher_market([[1.0]]).ids == (0,)
    vol = fa.volatile_fisher_market(np.ones((2, 1, 2)), ids=["x", "y"], goods=["gpu"])
    assert vol.ids == ("x", "y") and vol.goods == ("gpu",)
    u = [[2.0, 1.0], [1.0, 2.0]]
    for kw, arg in [({"ids": ["a", "a"]}, "ids"), ({"ids": ["a"]}, "ids"),
                    ({"goods": "ab"}, "goods"), ({"goods": [[1], [2]]}, "goods"),
                    ({"goods": ["g"]}, "goods")]:
        with pytest.raises(fa.InputError) as err:
            fa.fisher_market(u, **kw)
        assert err.value.argument == arg
    with pytest.raises(fa.InputError, match="ids"):
        fa.FisherMarket(u, ids=[1, 1])


def test_to_frame_uses_ids_and_names(gavel, market):
    pytest.importorskip("pandas")
    df = market.to_frame()
    assert df.index.tolist() == ["a", "b", "<c>"] and df.index.name == "buyer"
    assert ["x[V100]", "x[K80]"] == df.columns[-2:].tolist()
    vol = fa.volatile_fisher_market(np.ones((2, 1, 2)), ids=["x", "y"], goods=["gpu"])
    assert vol.to_frame().columns[-2:].tolist() == ["x[gpu,0]", "x[gpu,1]"]
    g = gavel.to_frame()
    assert g.index[0] == "job0" and "x[V100]" in g.columns
    efq = fa.efq_schedule([0.0, 1.0], [1.0, 1.0], 1).to_frame()
    assert efq.index.name == "job"


def test_auctions_take_ids_and_names():
    pytest.importorskip("pandas")
    pa = fa.partial_allocation([[2.0, 1.0], [1.0, 1.0]], ids=["a", "b"], goods=["g0", "g1"])
    df = pa.to_frame()
    assert df.index.tolist() == ["a", "b"] and df.columns[-2:].tolist() == ["x[g0]", "x[g1]"]
    assert "<th>g1</th>" in pa._repr_html_()
    auction = fa.bundle_auction([[[0, 1]], [[0, 1], [2]]], [[4.0], [4.0, 1.0]], ids=["x", "y"])
    assert auction.ids == ("x", "y") and auction.to_frame().index.tolist() == ["x", "y"]
    for call in (lambda: fa.partial_allocation([[1.0], [1.0]], ids=["a", "a"]),
                 lambda: fa.partial_allocation([[1.0], [1.0]], goods=["g", "h"]),
                 lambda: fa.bundle_auction([[[0]], [[0]]], [[1.0], [1.0]], ids=["x"])):
        with pytest.raises(fa.InputError):
            call()


def test_plans_and_efq_take_ids():
    pytest.importorskip("pandas")
    job = fa.PlanJob(workers=1, total_epochs=10, done_epochs=0, ftf=1.0, regimes=[(60.0, 10)])
    plan = fa.plan_schedule([job, job], 1, rounds=3, ids=["a", "b"])
    assert plan.ids == ("a", "b") and plan.to_frame().index.tolist() == ["a", "b"]
    assert fa.plan_schedule([job], 1, rounds=3).ids == (0,)
    efq = fa.efq_schedule([0.0, 1.0], [1.0, 1.0], 1, ids=["p", "q"])
    assert efq.to_frame().index.tolist() == ["p", "q"] and "<th>q</th>" in efq._repr_html_()
    with pytest.raises(fa.InputError):
        fa.plan_schedule([job, job], 1, rounds=3, ids=["a", "a"])
    with pytest.raises(fa.InputError):
        fa.efq_schedule([0.0, 1.0], [1.0, 1.0], 1, ids=["p"])
