"""Hypothesis strategies that build only valid fairalloc inputs.

Every strategy here draws inputs that the library's constructors and solvers accept as they
are: there is no ``assume()`` filtering anywhere, so no draw is thrown away and hypothesis can
shrink a failing example all the way down (fewer agents, fewer goods, zeros, round numbers)
to a counterexample a person can read. Validity is *built in* instead of filtered for: every
buyer gets one good it surely values, every job one accelerator type its gang surely fits on,
every scaling curve is built from per-GPU efficiencies that never rise, and so on.

Sizes and value ranges are controlled by arguments: a size is an ``int`` (exact) or an
inclusive ``(low, high)`` pair; a value range is a ``(low, high)`` pair of positive numbers.
Bad arguments raise `fairalloc.InputError` when the strategy is *built*, not
when it draws.

The strategies and what each draws:

* `fairalloc.testing.strategies.utilities`: linear utilities / Leontief demands, (n, m)
  or (n, m, T);
* `fairalloc.testing.strategies.budgets`,
  `fairalloc.testing.strategies.supplies`: positive budgets (n,) and supplies;
* `fairalloc.testing.strategies.market_instances`: a whole market
  (`fairalloc.testing.strategies.MarketInstance`): linear, Leontief,
  static or over time (`fairalloc.testing.strategies.leontief_markets`,
  `fairalloc.testing.strategies.volatile_markets`);
* `clusters`: `fairalloc.Cluster` with accelerator types + capacities;
* `fairalloc.testing.strategies.throughputs`: throughput matrices with zeros for
  "cannot run";
* `fairalloc.testing.strategies.scale_factors`,
  `fairalloc.testing.strategies.weights`: gang sizes and priority weights;
* `fairalloc.testing.strategies.job_sets`: `fairalloc.Jobs`
  schedulable on a given cluster;
* `fairalloc.testing.strategies.cluster_instances`: a cluster and a job set
  (`fairalloc.testing.strategies.ClusterInstance`);
* `fairalloc.testing.strategies.topologies`:
  `fairalloc.Topology` (GPUs, machines,
  racks);
* `fairalloc.testing.strategies.bid_tables`: Themis bid tables
  (`fairalloc.BidTable`);
* `fairalloc.testing.strategies.auction_instances`: bid tables, a topology and
  an offer
  (`fairalloc.testing.strategies.AuctionInstance`);
* `fairalloc.testing.strategies.regime_models`:
  `fairalloc.RegimeModel` (static, accordion,
  GNS, custom);
* `fairalloc.testing.strategies.job_histories`: a job's observed epochs that follow
  its regime model;
* `fairalloc.testing.strategies.regime_forecasts`: `fairalloc.RegimeForecast`
  from such a history;
* `fairalloc.testing.strategies.restatement_inputs`: arguments of
  `fairalloc.restatement_posterior`;
* `fairalloc.testing.strategies.plan_jobs`,
  `fairalloc.testing.strategies.plan_instances`:
  `fairalloc.PlanJob` and job
  sets for `fairalloc.plan_schedule`;
* `fairalloc.testing.strategies.scaling_curves`: Ares throughput curves at 1, 2,
  4, ... GPUs (diminishing);
* `fairalloc.testing.strategies.arrival_sequences`: arrivals, GPU-times,
  requests and curves for
  `fairalloc.efq_schedule`
  (`fairalloc.testing.strategies.ArrivalSequence`);
* `fairalloc.testing.strategies.minimal`: the simplest draw of a strategy (where
  shrinking ends).

Examples
--------
>>> from hypothesis import given, settings
>>> from fairalloc.testing import strategies as fst
>>> @settings(max_examples=5, database=None, derandomize=True)
... @given(fst.utilities(n=2, m=3))
... def test_every_buyer_values_something(u):
...     assert u.shape == (2, 3) and (u.max(axis=1) > 0).all()
>>> test_every_buyer_values_something()
"""

from __future__ import annotations

from ._common import ACCELERATOR_TYPES, minimal
from .auctions import AuctionInstance, auction_instances, bid_tables, topologies
from .clusters import (
    ClusterInstance,
    ClusterState,
    cluster_instances,
    clusters,
    job_sets,
    scale_factors,
    throughputs,
    weights,
)
from .markets import (
    MarketInstance,
    budgets,
    leontief_markets,
    market_instances,
    supplies,
    utilities,
    volatile_markets,
)
from .queues import ArrivalSequence, arrival_sequences, scaling_curves
from .schedules import (
    JobHistory,
    PlanInstance,
    job_histories,
    plan_instances,
    plan_jobs,
    regime_forecasts,
    regime_models,
    restatement_inputs,
)

__all__ = [
    "ACCELERATOR_TYPES",
    "ArrivalSequence",
    "AuctionInstance",
    "ClusterInstance",
    "ClusterState",
    "JobHistory",
    "MarketInstance",
    "PlanInstance",
    "arrival_sequences",
    "auction_instances",
    "bid_tables",
    "budgets",
    "cluster_instances",
    "clusters",
    "job_histories",
    "job_sets",
    "leontief_markets",
    "minimal",
    "market_instances",
    "plan_instances",
    "plan_jobs",
    "regime_forecasts",
    "regime_models",
    "restatement_inputs",
    "scale_factors",
    "scaling_curves",
    "supplies",
    "throughputs",
    "topologies",
    "utilities",
    "volatile_markets",
    "weights",
]
