"""Partial-allocation auctions and Themis's multi-round finish-time fair policy (Themis §3.3).

The partial allocation (PA) mechanism of Cole, Gkatzelis and Goel (Themis ref. [5]; Themis
§3.3.1, Pseudocode 1 lines 5-12) allocates goods among agents who report valuations ``v_i``:

1. compute the proportionally fair (PF) allocation ``x* = argmax prod_i v_i(x_i)``;
2. for each agent ``i`` compute the PF allocation of the market *without* ``i``,
   ``x*_{-i} = argmax prod_{j != i} v_j(x_j)``, and the fraction
   ``c_i = prod_{j != i} v_j(x*) / prod_{j != i} v_j(x*_{-i})`` (in ``(0, 1]``);
3. give agent ``i`` the fraction ``c_i`` of its PF bundle, ``c_i * x*_i``; the rest of the
   goods, ``L = supply - sum_i c_i x*_i``, is the *leftover* (the hidden payments).

With valuations homogeneous of degree one (linear ones, or Themis's ``1/rho``, Appendix proof
of Theorem 3.2) PA is truthful and the PF allocation is Pareto efficient; with divisible goods
the PF allocation is also envy-free and every agent keeps at least ``1/e`` of its PF valuation
(``proofs/partial_allocation_truthfulness.md``, ``proofs/partial_allocation_one_over_e.md``).

One job per module:

* ``partial.py`` -- `fairalloc.partial_allocation`: divisible goods with
  linear valuations; the PF allocation is the Eisenberg-Gale equilibrium with equal budgets
  (`fairalloc.fisher_market`). The ``n`` leave-one-out markets are
  reduced markets warm-started from the PF prices, solved in batches by one block-diagonal
  interior-point run, polished to exact equilibria on their support and each certified by its own
  duality gap (the closed-form dual ``D(p)``), over ``workers`` processes.
* ``gpu.py`` -- `fairalloc.gpu_auction` (GPUs bid for by placement class,
  `fairalloc.BidTable`) and `fairalloc.bundle_auction` (explicit GPU
  subsets, as in Themis Table 2): indivisible GPUs; PF and every leave-one-out are exact set-packing
  MILPs maximising ``sum_i log v_i`` (``nash.py``: the lexicographic Nash-welfare MILP;
  ``placement.py``: the placement-class program of `fairalloc.gpu_auction`).
* ``bids.py`` -- `fairalloc.BidTable` and `fairalloc.bid_table` (bids by
  placement class).
* ``multiround.py`` -- `fairalloc.MultiRoundAuction`, Themis's round-by-round
  policy (§3.3.2, Pseudocode 1 lines 13-23): leases, filtering of the apps farthest from finish-time
  fairness, a PA auction among them, leftover GPUs to the apps that did not bid, valuations
  refreshed every round.
* ``valuations.py`` -- finish-time fairness ``rho`` (Themis §3.2), placement slowdown and the
  cluster `fairalloc.Topology`; ``apps.py`` -- the app models whose progress the
  multi-round auction simulates (`fairalloc.SingleJobApp`,
  `fairalloc.SuccessiveHalvingApp`,
  `fairalloc.CurveStoppingApp`).
* ``_pool.py`` -- the process pool of the leave-one-out solves and the log behind ``stats``
  (backends that ran, ``stats.path``, ``stats.fallbacks``).

See ``formulations/partial_allocation.md`` for the exact programs.
"""

from __future__ import annotations

from .apps import CurveStoppingApp, SingleJobApp, SuccessiveHalvingApp
from .bids import BidTable, bid_table
from .gpu import BundleAuctionResult, GPUAuctionResult, bundle_auction, gpu_auction
from .multiround import AuctionRound, MultiRoundAuction
from .partial import PartialAllocationResult, partial_allocation
from .tuning import Tuning
from .valuations import (
    DEFAULT_SLOWDOWN,
    LEVELS,
    Topology,
    curve_stopping_rho,
    placement_slowdown,
    single_job_rho,
    successive_halving_rho,
)

__all__ = [
    "DEFAULT_SLOWDOWN",
    "LEVELS",
    "AuctionRound",
    "BidTable",
    "BundleAuctionResult",
    "CurveStoppingApp",
    "GPUAuctionResult",
    "MultiRoundAuction",
    "PartialAllocationResult",
    "SingleJobApp",
    "SuccessiveHalvingApp",
    "Topology",
    "Tuning",
    "bid_table",
    "bundle_auction",
    "curve_stopping_rho",
    "gpu_auction",
    "partial_allocation",
    "placement_slowdown",
    "single_job_rho",
    "successive_halving_rho",
]
