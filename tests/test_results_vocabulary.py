"""One results vocabulary (issue #30): every result type answers ``x``, ``allocation``,
``prices``, ``objective``, ``certificate``, ``stats`` and ``to_frame()`` with the same meaning;
dict forms live under their own names (``RoundResult.job_allocation``), and the old spelling
``RoundResult.allocation`` (a dict) still works with a ``DeprecationWarning``."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.sparse

import fairalloc as fa
from fairalloc.auctions import BidTable, Topology


def _plan_jobs() -> list[fa.PlanJob]:
    return [fa.PlanJob(workers=1, total_epochs=100, done_epochs=10, ftf=2.0,
                       regimes=[(60.0, 90)]),
            fa.PlanJob(workers=1, total_epochs=100, done_epochs=50, ftf=1.0,
                       regimes=[(60.0, 50)])]


def _gpu_auction() -> Any:
    t = Topology.uniform(2, 2, machines_per_rack=1)
    bids = [BidTable([1, 2, 2], [0, 0, 2], [1.0, 0.5, 1.0]), BidTable([1, 2], [0, 2], [1.0, 0.5])]
    return fa.gpu_auction(bids, t, [0, 1, 2, 3])


TP = {"a": {"v100": 40.0, "k80": 10.0}, "b": {"v100": 12.0, "k80": 4.0}}
WORKERS = {"v100": 1, "k80": 1}

#: result type -> (a call that returns one, whether it has dual prices)
SOLVERS: dict[str, tuple[Callable[[], Any], bool]] = {
    "Allocation": (lambda: fa.max_min_fairness(fa.Jobs([[40.0, 10.0], [12.0, 4.0]]),
                                               fa.Cluster({"v100": 1, "k80": 1})), True),
    "MarketResult": (lambda: fa.fisher_market([[1.0, 2.0], [2.0, 1.0]]), True),
    "RoundResult": (lambda: fa.solve_round("max_min_fairness", TP, WORKERS), True),
    "PlanResult": (lambda: fa.plan_schedule(_plan_jobs(), 1, rounds=3), False),
    "RelaxedPlan": (lambda: fa.relax_plan(_plan_jobs(), 1, rounds=3, lam=0.0), True),
    "PartialAllocationResult": (lambda: fa.partial_allocation([[2.0, 1.0], [1.0, 1.0]]), True),
    "GPUAuctionResult": (_gpu_auction, False),
    "EFQResult": (lambda: fa.efq_schedule([0, 0, 0], [1.0, 2.0, 3.0], 1), False),
}


@pytest.fixture(scope="module", params=sorted(SOLVERS))
def result(request: pytest.FixtureRequest) -> tuple[str, Any, bool]:
    make, priced = SOLVERS[request.param]
    r = make()
    assert type(r).__name__ == request.param
    return request.param, r, priced


def _array(a: Any) -> np.ndarray:
    return a.toarray() if scipy.sparse.issparse(a) else np.asarray(a)


def test_every_result_type_is_covered() -> None:
    names = {n for n in fa.__all__ if n.endswith(("Result", "Plan")) or n == "Allocation"}
    assert names - {"Result"} == set(SOLVERS)  # (Result: their base class)


def test_x_and_allocation(result: tuple[str, Any, bool]) -> None:
    name, r, _ = result
    x = r.x
    assert x.ndim >= 2 and x.shape[0] == (3 if name == "EFQResult" else 2)  # one row per job
    if name == "RoundResult":  # the array is x; the dict has its own name
        assert isinstance(r.job_allocation, dict)
        assert list(r.job_allocation) == list(r.job_ids)
        np.testing.assert_array_equal(
            [[r.job_allocation[j][t] for t in r.types] for j in r.job_ids], x)
        return
    np.testing.assert_array_equal(_array(x), _array(r.allocation))
    if isinstance(x, np.ndarray):
        assert x is r.allocation and not x.flags.writeable


def test_prices_objective_certificate_stats(result: tuple[str, Any, bool]) -> None:
    name, r, priced = result
    if priced:
        p = np.asarray(r.prices, dtype=float)
        assert p.size and np.all(p >= 0) and not p.flags.writeable
    else:
        assert r.prices is None
    assert np.isfinite(float(r.objective))
    assert r.certificate.ok and isinstance(r.stats, fa.SolveStats)
    assert r.status in (fa.SolveStatus.OPTIMAL, fa.SolveStatus.REPLAYED)


def test_to_frame_has_one_row_per_allocation_row(result: tuple[str, Any, bool]) -> None:
    pytest.importorskip("pandas")
    name, r, _ = result
    frame = r.to_frame()
    assert len(frame) == _array(r.x).shape[0]


def test_round_result_allocation_dict_is_deprecated() -> None:
    r = fa.solve_round("max_min_fairness", TP, WORKERS)
    with pytest.warns(DeprecationWarning, match=r"job_allocation"):
        old = r.allocation
    assert old == r.job_allocation
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r.x, r.job_allocation, r.prices  # noqa: B018 - the new names do not warn
