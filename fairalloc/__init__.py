"""fairalloc: certified fair allocation of shared accelerator clusters.

Formulation builders (Eisenberg-Gale markets, Gavel's effective-throughput policies, Themis
partial allocation, Shockwave plans, Ares elastic fair queuing) that return allocations, dual
prices and an independently computed certificate of optimality.

Public names are loaded lazily: ``import fairalloc`` is cheap, and a scheduler that only uses
`fairalloc.ElasticFairQueue` never imports cvxpy.

Examples
--------
>>> import fairalloc as fa
>>> r = fa.fisher_market([[1.0, 2.0], [2.0, 1.0]])
>>> r.prices.round(3)
array([1., 1.])
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_exports
from .errors import (
    BackendUnavailableError,
    CertificateError,
    FairallocError,
    FairallocWarning,
    InfeasibleError,
    InputError,
    SolverError,
    UnboundedError,
)
from .solvelog import SolveStatus

__version__ = "0.1.0"

# public name -> submodule that defines it. Each submodule owns one block; keep them sorted.
_LAZY: dict[str, str] = {
    # results and certificates
    "Certificate": "results",
    "SolveStats": "results",
    "Result": "results",
    # input data
    "Cluster": "data",
    "Jobs": "data",
    # solver backends
    "available_backends": "backends",
    "get_backend": "backends",
    # Eisenberg-Gale markets (Shockwave App. C-D)
    "FisherMarket": "markets",
    "MarketResult": "markets",
    "fisher_market": "markets",
    "volatile_fisher_market": "markets",
    # effective-throughput policies (Gavel)
    "FIFO": "throughput",
    "Allocation": "throughput",
    "FinishTimeFairness": "throughput",
    "JobPairs": "data",
    "MaxMinFairness": "throughput",
    "MaxTotalThroughput": "throughput",
    "MinCost": "throughput",
    "MinMakespan": "throughput",
    "ShortestJobFirst": "throughput",
    "ThroughputPolicy": "throughput",
    "WaterFilling": "throughput",
    "fifo": "throughput",
    "finish_time_fairness": "throughput",
    "max_min_fairness": "throughput",
    "max_min_space_sharing": "throughput",
    "max_total_throughput": "throughput",
    "min_cost": "throughput",
    "min_makespan": "throughput",
    "shortest_job_first": "throughput",
    "water_filling": "throughput",
    # round-by-round policy API for schedulers (issue #16)
    "RoundPolicy": "rounds",
    "RoundResult": "rounds",
    "solve_round": "rounds",
    # round-based mechanism, placement, throughput estimation (Gavel §3.3, §5, §6)
    "Completion": "mechanism",
    "FingerprintMatch": "mechanism",
    "Placement": "mechanism",
    "RoundAssignment": "mechanism",
    "RoundScheduler": "mechanism",
    "ServerLayout": "mechanism",
    "ThroughputEstimator": "mechanism",
    "complete_matrix": "mechanism",
    "place": "mechanism",
    "schedule_round": "mechanism",
    # partial allocation (Themis)
    "AuctionRound": "auctions",
    "BidTable": "auctions",
    "GPUAuctionResult": "auctions",
    "MultiRoundAuction": "auctions",
    "PartialAllocationResult": "auctions",
    "bid_table": "auctions",
    "bundle_auction": "auctions",
    "gpu_auction": "auctions",
    "partial_allocation": "auctions",
    "CurveStoppingApp": "auctions",
    "SingleJobApp": "auctions",
    "SuccessiveHalvingApp": "auctions",
    "Topology": "auctions",
    "curve_stopping_rho": "auctions",
    "placement_slowdown": "auctions",
    "single_job_rho": "auctions",
    "successive_halving_rho": "auctions",
    # regime forecasts and plans (Shockwave)
    "RegimeForecast": "schedule",
    "RegimeModel": "schedule",
    "bayesian_posterior": "schedule",
    "contention_factor": "schedule",
    "forecast_regimes": "schedule",
    "ftf_estimate": "schedule",
    "makespan_lower_bound": "schedule",
    "makespan_normalizer": "schedule",
    "oracle_forecast": "schedule",
    "restatement_posterior": "schedule",
    "PlanJob": "schedule",
    "PlanResult": "schedule",
    "RelaxedPlan": "schedule",
    "ReplanDecision": "schedule",
    "ReplanPolicy": "schedule",
    "plan_schedule": "schedule",
    "relax_plan": "schedule",
    "makespan_regularizer": "schedule",
    # elastic fair queuing (Ares)
    "EFQResult": "queuing",
    "ElasticFairQueue": "queuing",
    "QueuedJob": "queuing",
    "ReplayCheck": "queuing",
    "efq_finish_times": "queuing",
    "efq_schedule": "queuing",
}

__all__ = [
    "BackendUnavailableError",
    "CertificateError",
    "FairallocError",
    "FairallocWarning",
    "InfeasibleError",
    "InputError",
    "SolveStatus",
    "SolverError",
    "UnboundedError",
    *sorted(_LAZY),
]


#: public submodules, each imported on first access (``fa.throughput``, like ``np.linalg``)
_SUBMODULES = ("auctions", "backends", "certificates", "cli", "data", "errors", "integrations",
               "markets", "mechanism", "plan", "properties", "queuing", "results", "rounds",
               "schedule", "sim", "solvelog", "testing", "throughput", "tolerances")

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals(), _SUBMODULES)


if TYPE_CHECKING:  # static type checkers see every lazily exported name
    from .auctions import (
        AuctionRound as AuctionRound,
        BidTable as BidTable,
        CurveStoppingApp as CurveStoppingApp,
        GPUAuctionResult as GPUAuctionResult,
        MultiRoundAuction as MultiRoundAuction,
        PartialAllocationResult as PartialAllocationResult,
        SingleJobApp as SingleJobApp,
        SuccessiveHalvingApp as SuccessiveHalvingApp,
        Topology as Topology,
        bid_table as bid_table,
        bundle_auction as bundle_auction,
        curve_stopping_rho as curve_stopping_rho,
        gpu_auction as gpu_auction,
        partial_allocation as partial_allocation,
        placement_slowdown as placement_slowdown,
        single_job_rho as single_job_rho,
        successive_halving_rho as successive_halving_rho,
    )
    from .backends import available_backends as available_backends, get_backend as get_backend
    from .data import Cluster as Cluster, JobPairs as JobPairs, Jobs as Jobs
    from .markets import (
        FisherMarket as FisherMarket,
        MarketResult as MarketResult,
        fisher_market as fisher_market,
        volatile_fisher_market as volatile_fisher_market,
    )
    from .mechanism import (
        Completion as Completion,
        FingerprintMatch as FingerprintMatch,
        Placement as Placement,
        RoundAssignment as RoundAssignment,
        RoundScheduler as RoundScheduler,
        ServerLayout as ServerLayout,
        ThroughputEstimator as ThroughputEstimator,
        complete_matrix as complete_matrix,
        place as place,
        schedule_round as schedule_round,
    )
    from .queuing import (
        EFQResult as EFQResult,
        ElasticFairQueue as ElasticFairQueue,
        QueuedJob as QueuedJob,
        ReplayCheck as ReplayCheck,
        efq_finish_times as efq_finish_times,
        efq_schedule as efq_schedule,
    )
    from .results import Certificate as Certificate, Result as Result, SolveStats as SolveStats
    from .rounds import (
        RoundPolicy as RoundPolicy,
        RoundResult as RoundResult,
        solve_round as solve_round,
    )
    from .schedule import (
        PlanJob as PlanJob,
        PlanResult as PlanResult,
        RegimeForecast as RegimeForecast,
        RegimeModel as RegimeModel,
        RelaxedPlan as RelaxedPlan,
        ReplanDecision as ReplanDecision,
        ReplanPolicy as ReplanPolicy,
        bayesian_posterior as bayesian_posterior,
        contention_factor as contention_factor,
        forecast_regimes as forecast_regimes,
        ftf_estimate as ftf_estimate,
        makespan_lower_bound as makespan_lower_bound,
        makespan_normalizer as makespan_normalizer,
        makespan_regularizer as makespan_regularizer,
        oracle_forecast as oracle_forecast,
        plan_schedule as plan_schedule,
        relax_plan as relax_plan,
        restatement_posterior as restatement_posterior,
    )
    from .throughput import (
        FIFO as FIFO,
        Allocation as Allocation,
        FinishTimeFairness as FinishTimeFairness,
        MaxMinFairness as MaxMinFairness,
        MaxTotalThroughput as MaxTotalThroughput,
        MinCost as MinCost,
        MinMakespan as MinMakespan,
        ShortestJobFirst as ShortestJobFirst,
        ThroughputPolicy as ThroughputPolicy,
        WaterFilling as WaterFilling,
        fifo as fifo,
        finish_time_fairness as finish_time_fairness,
        max_min_fairness as max_min_fairness,
        max_min_space_sharing as max_min_space_sharing,
        max_total_throughput as max_total_throughput,
        min_cost as min_cost,
        min_makespan as min_makespan,
        shortest_job_first as shortest_job_first,
        water_filling as water_filling,
    )

del annotations, TYPE_CHECKING  # (names of the import machinery, not of the library)
