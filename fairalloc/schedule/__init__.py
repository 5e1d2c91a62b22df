"""Shockwave (§4.3, §5-6, App. F-H): regime forecasts, estimators, the windowed
schedule planner and the makespan regulariser.

The planner
-----------

A plan is a binary matrix ``x[j, t]``: job ``j`` runs on its gang of ``w_j`` GPUs in round
``t`` of a window of ``T`` rounds of ``D`` seconds. Job ``j`` has ``E_j`` epochs in total,
``F_j`` finished, an FTF estimate ``rho_j`` (App. G.2) and its *remaining regimes in order*,
each ``(seconds per epoch, epochs)`` (§5; `fairalloc.PlanJob`). Scheduling it for ``n``
rounds advances it by ``n*D`` seconds of work through its regimes in order -- the epoch rate changes
when a regime's epochs are used up -- capped at ``E_j`` (the regime decomposition of App. G),
so its utility depends only on how many rounds it gets:

    UTIL_j(n) = (F_j + epochs advanced by n*D seconds) / E_j,
    R_j(n)    = max(P_j - n*D, 0)         (remaining run time after the window; P_j before it).

The plan maximises Eq. 11,

    (1/(N*M)) * sum_j rho_j^k * log UTIL_j(n_j)  -  (lam/Z0) * H,
    H  = max(sum_j w_j R_j(n_j) / M, max_j R_j(n_j)),      Z0 = sum_j P_j,

subject to ``sum_j w_j x[j, t] <= M`` in every round, the regime order (built into
``UTIL_j``), and work conservation (App. H): no round leaves idle GPUs that an unscheduled,
unfinished job would fit in. An optional restart penalty (objective units per restart)
prefers contiguous rounds.

Two exact methods (``method=``), both certified against an upper bound:

* ``"milp"`` -- the whole plan as one MILP for HiGHS: binary ``x``, the round count ``n_j``,
  ``log UTIL_j`` through *unary increments* (``y[j, s] = [n_j >= s]``; continuous where
  ``log UTIL_j`` is concave in ``n``, binary with an order chain where a faster regime makes it
  convex -- exact at every integer point, no SOS2), the makespan through epigraph variables,
  work conservation through finish indicators. The gap is HiGHS's best bound.
* ``"fast"`` -- exploits that utility depends only on counts: a Lagrangian relaxation of the
  aggregate capacity ``sum_j w_j n_j <= M*T`` and of the makespan epigraph, solved by
  bisection over the capacity price on the ``(jobs, T+1)`` table of per-count values, gives
  counts and an upper bound; reduced-cost fixing shrinks every job's count range to the counts
  that could beat the incumbent, and a small count-level MILP on that core closes the gap.
  The counts are then packed into rounds (least slack first, running jobs kept contiguous),
  and the schedule is made work conserving (which never lowers the objective). With unit
  gangs the packing always succeeds, so the fast path is exact; with gangs the certificate
  reports any loss against the count relaxation's bound.
* ``"auto"`` (default) -- the fast path, then the MILP with the time left if the fast path
  could not certify ``gap_tol``; the better schedule and the better bound are kept.

``expectation="scenarios"`` plans against each job's sampled trajectories (App. F): the
objective uses ``log E[UTIL_j]`` over the job's scenarios (and the expected remaining times
in ``H``). `relax_plan` is the continuous relaxation, which with equal weights and
``lam = 0`` is the volatile Fisher market over the window (``formulations/shockwave_plan.md``).
`fairalloc.ReplanPolicy` says when to re-plan (§6.1).

Forecasts and estimators
------------------------
`fairalloc.forecast_regimes` turns a job's observed epochs into a
`RegimeForecast` (the posterior-mean remaining regimes under a
`fairalloc.RegimeModel`, from the restatement posterior of §5, plus posterior samples
for the scenario mode); `fairalloc.ftf_estimate`,
`fairalloc.contention_factor`,
`fairalloc.makespan_lower_bound` and `makespan_normalizer` are the
estimators of App. G.2; `makespan_regularizer` is the makespan term as a cvxpy expression for other
programs.

Modules (one job each)
----------------------
``instance.py`` (`fairalloc.PlanJob`, the per-count tables, the independent evaluation),
``lagrangian.py`` (the fast path's Lagrangian over counts), ``count_milp.py`` (its core
count MILP and gang cuts), ``milp.py`` (named column layouts, the backend runner, the full
MILP), ``packing.py`` (counts into rounds, work conservation), ``plan.py``
(`fairalloc.plan_schedule`), ``relax.py`` (`relax_plan`), ``replan.py``
(`fairalloc.ReplanPolicy`), ``regime_model.py``, ``posteriors.py``, ``forecast.py``,
``estimators.py`` and ``regularizers.py``.
"""

from __future__ import annotations

from .estimators import (
    contention_factor,
    ftf_estimate,
    makespan_lower_bound,
    makespan_normalizer,
)
from .forecast import FORECAST_METHODS, RegimeForecast, forecast_regimes, oracle_forecast
from .instance import PlanJob
from .plan import PLAN_METHODS, PlanResult, plan_schedule
from .posteriors import RegimePool, bayesian_posterior, restatement_posterior
from .regime_model import RegimeModel
from .regularizers import makespan_regularizer
from .relax import RelaxedPlan, relax_plan
from .replan import ReplanDecision, ReplanPolicy

__all__ = [
    "FORECAST_METHODS",
    "PLAN_METHODS",
    "PlanJob",
    "PlanResult",
    "RegimeForecast",
    "RegimeModel",
    "RegimePool",
    "RelaxedPlan",
    "ReplanDecision",
    "ReplanPolicy",
    "bayesian_posterior",
    "contention_factor",
    "forecast_regimes",
    "ftf_estimate",
    "makespan_lower_bound",
    "makespan_normalizer",
    "makespan_regularizer",
    "oracle_forecast",
    "plan_schedule",
    "relax_plan",
    "restatement_posterior",
]
