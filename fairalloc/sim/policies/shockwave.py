"""Shockwave (§4-6, App. G-H) as a simulator policy.

Regime forecasts from each job's observed epochs
(`fairalloc.forecast_regimes`), FTF estimates (Eq. 9,
`fairalloc.ftf_estimate` with
`fairalloc.contention_factor`), a windowed plan
(`fairalloc.plan_schedule`) re-planned by
`fairalloc.ReplanPolicy`.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Hashable
from typing import Any

import numpy as np

from ..._deprecate import renamed_kwargs
from ..._validation import as_option, as_positive_float, as_positive_int
from ...data import Cluster
from ...errors import InfeasibleError, InputError, SolverError
from ..state import EPOCH_ROUNDOFF, JobView, RoundState, Schedule
from ..workload import Workload
from .base import BasePolicy, pack_by_priority
from .shockwave_options import (
    EPOCH_CALIBRATIONS,
    FORECASTS,
    FTF_FORECAST,
    HARD_FTF_DROPS,
    HARD_FTF_RHOMAX,
    HARD_FTF_WEIGHTS,
    IDLE_FILLS,
    LATENESS,
    LATENESS_SUBMIT,
    LATENESS_WORK,
    NEAR_COMPLETION,
    NEAR_COMPLETION_BOOST,
    PLAN_PROGRESS,
    PRESETS,
    REORDER_MODES,
    REPLAN_CLOCKS,
    WEIGHT_MODES,
    _flag,
    _given_options,
    hard_ftf_limits,
    plan_ftf,
)
from .shockwave_options import (
    MAX_LOG_FTF as MAX_LOG_FTF,  # re-exported (tests, callers)
)
from .shockwave_upstream import (
    UPSTREAM_PRESET,
    EqualShareLateness,
    calibration_factor,
    dirichlet_remaining,
    fill_window,
    reorder_window,
    upstream_config,
    whole_epochs,
)

__all__ = ["ShockwavePolicy", "hard_ftf_limits", "plan_ftf"]

#: default exponent k of the FTF weights (the paper's §6.1 uses 5; 3 won on the 120-job trace
#: with clipped weights, docs/how-to/reproduce-shockwave.md)
SHOCKWAVE_K = 3.0
#: default makespan regulariser coefficient lambda on the term lam max_j R_j / Z0
#: (makespan="longest"): 4 met the targets on both traces (120 jobs / 32 GPUs and 900 jobs /
#: 256 GPUs; 1 and 16 did about as well on makespan, 16 left 5.8 % unfair at 32 GPUs), one run
#: each (docs/how-to/reproduce-shockwave.md)
SHOCKWAVE_LAM = 4.0
#: default makespan term of the policy's plans (formulations/shockwave_options.md): upstream's
#: longest-remaining-time term with the paper's Z0 normalisation
SHOCKWAVE_MAKESPAN = "longest"
#: default rounds within which a late job counts as about to finish (near_completion="first")
NEAR_ROUNDS = 3
#: who runs every round regardless of the plan's counts (``critical=``): ``"drain"``, a job whose
#: forecast remaining time is at least the drain time ``sum_i w_i R_i / M`` of all active work
#: (it alone sets the makespan's lower bound, so each round it waits delays the makespan by a
#: round), or nobody (``"off"``)
CRITICAL_MODES = ("drain", "off")
#: default rounds per plan (Shockwave's window)
SHOCKWAVE_WINDOW = 20
#: default number of regimes K of an Accordion job's regime model
ACCORDION_REGIMES = 6
#: PERFORMANCE: default branch-and-bound nodes per MILP solve of a re-plan
#: (`fairalloc.plan_schedule`'s ``node_limit``): a plan not certified
#: within it runs with the best schedule found (``time_limited`` counts them). A work limit, so a
#: simulation gives the same schedules on any machine however loaded (the previous 10 s time
#: limit did not: issue #27). HiGHS explores about 50-400 nodes a second on the plans' MILPs
#: on a two-core machine, so a solve it stops has worked for seconds, as under the old limit;
#: the documented runs never reach it (the Shockwave traces' plans are solved at the root, the
#: 40-job generated workload's branch at most 348 nodes: docs/how-to/simulate-a-trace.md).
PLAN_NODE_LIMIT = 1000
#: floor of a job's remaining seconds and epochs in the plan (the planner needs positive ones)
MIN_REMAINING = 1e-6
#: plan_schedule options a ShockwavePolicy forwards when given (None: plan_schedule's default)
PLAN_OPTIONS = ("method", "gap_tol", "time_limit", "work_conservation", "restart_penalty",
                "expectation", "makespan", "regime_model", "z0", "util_floor", "warm_start",
                "threads", "backend", "welfare_norm", "node_limit", "log_breakpoints")


class ShockwavePolicy(BasePolicy):
    """Shockwave (§4-6, App. G-H) as a simulator policy.

    Before a round it decides with `fairalloc.ReplanPolicy` whether to
    re-plan (no plan, window used up, arrivals, completions, regime changes). Re-planning forecasts
    each active job's remaining regimes from its *observed* finished epochs
    (`fairalloc.forecast_regimes` with the job's
    `fairalloc.RegimeModel`: static, Accordion between its initial and
    largest batch sizes, or GNS doubling up to its largest), estimates its finish-time fairness (Eq.
    9; contention factor ``N_avg`` over its life) and solves the window plan
    (`fairalloc.plan_schedule`, Eq. 11). Each round runs the plan's
    column; idle GPUs left by gangs that do not fit a type go to the unscheduled jobs with the
    largest remaining time.

    Parameters
    ----------
    k : float, default 3.0
        Exponent of the FTF weights (§6.1: 5; the benchmark's ``shockwave-paper`` row).
    lam : float, default 4.0
        Makespan regulariser coefficient, on ``lam max_j R_j / Z0`` by default
        (``makespan="longest"``: upstream's longest-remaining-time term with the paper's
        normalisation, which pulls the same share of the cluster towards the longest jobs at
        32 and at 256 GPUs). The paper's form is ``makespan="paper"``; App. G.2 gives its
        ``lambda`` in [0.1, 10], §6.1 uses ``1e-3`` (the benchmark's ``shockwave-paper`` row).
    makespan : {"longest", "scale_free", "paper", "max_remaining"}, default "longest"
        The plan's makespan term (`fairalloc.plan_schedule`);
        ``formulations/shockwave_options.md`` compares them.
    window : int, default 20
        Rounds per plan.
    forecast : {"restatement", "bayesian", "greedy", "empirical", "oracle", "upstream_dirichlet"}
        ``"empirical"``: the restatement rule with regime-length priors and epoch-time ratios
        pooled from what every job has shown so far (`fairalloc.schedule.posteriors.RegimePool`;
        observed only, not the default: it halves the early-age forecast error on the 120-job
        trace but does not improve the schedules, ``benchmarks/forecast.py``). ``"oracle"``
        reads each job's true future schedule, ``"upstream_dirichlet"`` upstream's own forecast
        (`dirichlet_remaining`: it reads the future too); both for comparison only.
    ftf_forecast : one of ``forecast``'s methods, or None
        The forecast the fairness side reads -- FTF estimates (plan weights), near-completion
        and the ``hard_ftf`` limits (scaled into the plan's seconds, `hard_ftf_limits`) --
        while the plan's remaining times (welfare and makespan terms) read ``forecast``.
        Default ``"empirical"`` (`FTF_FORECAST`, observed only); ``None``: ``forecast``.
    replan : {"reactive", "lazy"}
    accordion_regimes : int, default 6
        ``K`` of an Accordion job's regime model (grown when a job shows more regimes).
    contention : {"jobs", "gpus"}
        Demand counted by the contention factor: active jobs (paper) or their GPUs.
    execution : {"counts", "columns"}
        How a plan is executed between re-plans. The plan's objective depends only on how
        many rounds each job gets in the window, not on which, so ``"counts"`` (default)
        runs, each round, first the jobs whose planned rounds fill the rest of the window
        (they must run now to get their count), then the jobs the plan finishes within the
        window (shortest remaining first), then the other jobs with planned rounds left
        (with ``keep_running``, those that ran in the previous round first) in decreasing
        order of their FTF estimate, and decrements their counts;
        ``"columns"`` runs the plan's next column as packed by the planner (least slack
        first), which -- re-planned at every arrival -- keeps pushing a pending job's few
        planned rounds to the end of the sliding window.
    keep_running : bool, default True
        With ``"counts"``: after the must-run jobs and the jobs finishing in the window,
        planned jobs that ran in the previous round go first (no restart).
    time_limit : float or None, default None
        Seconds per re-plan (`fairalloc.plan_schedule`'s
        ``time_limit``), an opt-in for interactive use: a plan not certified by then runs with
        the best schedule found (`time_limited` counts such plans) and the simulation's results
        then depend on the machine's speed and load. ``None``: no time limit.
    node_limit : int or None, default `PLAN_NODE_LIMIT`
        Branch-and-bound nodes per MILP solve of a re-plan
        (`fairalloc.plan_schedule`'s ``node_limit``): a plan not
        certified within it runs with the best schedule found (`time_limited` counts such
        plans); a work limit, so results are the same on any machine. ``None``: no limit (a
        re-plan may then run for a long time on a hard window).
    weights : {"clipped", "power"}
        ``"clipped"`` (default; upstream's code): a job's plan weight is ``rho^k`` only when its
        FTF estimate ``rho > 1``, else 1. ``"power"``: ``rho^k`` for every job (Eq. 11).
        See `plan_ftf` and ``formulations/shockwave_options.md``.
    near_completion : {"first", "weight", "off"}
        A late job (``rho > 1``) about to finish: ``"first"`` (default) runs it first in the
        next round when it is forecast to finish within ``near_rounds`` rounds; ``"weight"``
        weighs it by ``rho^boost`` in the plan when it is forecast to finish within one round
        (upstream's code); ``"off"``: no special treatment.
    boost : float, default 100.0
        The exponent of ``near_completion="weight"``.
    near_rounds : int, default 3
        With ``near_completion="first"``: "about to finish" means forecast to finish within
        this many rounds (upstream: one; three won on the 120-job trace).
    hard_ftf : bool, default True
        Upstream's hard-FTF-first step: each re-plan first asks for a plan in which every job's
        forecast finish time stays within ``rhomax`` times its fair finish time
        (``L + W + T D + R_after N_avg <= rhomax P N_avg``, ``plan_schedule(
        remaining_limit=)``) and plans without those constraints when none exists.
        `hard_ftf_plans` and `hard_ftf_dropped` count the two outcomes.
    rhomax : float, default 1.6
        The finish-time bound of ``hard_ftf``.
    hard_ftf_drop : {"unreachable", "all"}
        ``"unreachable"`` (default): the limits of jobs that cannot meet theirs even running
        every round of the window are dropped first (the others kept); all are dropped only when
        the rest is still infeasible. ``"all"`` (upstream): any infeasibility drops every limit.
    lateness : {"ftf", "upstream"}
        Who is late (plan weights, near-completion, the hard limits): ``"ftf"`` (default) the
        FTF estimate of Eq. 9; ``"upstream"`` the projected finish ``now + R / min(1, M/N)``
        over a momentum-averaged equal-share finish time re-estimated only on arrivals and
        completions (`EqualShareLateness`), late above ``rhomax``; the hard limits are then
        ``now + T D + R_after / min(1, M/N) <= rhomax * target``.
    hard_ftf_weights : {"weighted", "none"}
        The plan weights when the hard limits are met: ``weights=``'s (default) or none at all
        (upstream).
    log_breakpoints : sequence of float, optional
        `fairalloc.plan_schedule`'s piecewise-linear log (upstream:
        ``(0, 0.2, 0.4, 0.6, 0.8, 1)``); default the exact log.
    preset : {"upstream"}, optional
        ``"upstream"``: every option not given explicitly takes upstream's value
        (`UPSTREAM_PRESET`: the 6-point log, N*T welfare, raw-seconds makespan term, the
        equal-share lateness test, hard limits first with ``rhomax = 1`` and no weights when
        they hold, the reordering MILP, column execution, re-plans on rounds 8, 16, ... of
        the simulation and on arrivals and completions only, equal-share finish times from the
        admitting round, upstream's calibration of the profiled epoch times (with
        ``forecast="upstream_dirichlet"``), no work-conservation constraint in the program) and,
        when neither ``k`` nor ``lam`` is given, upstream's configuration for the cluster's
        size at each reset (`upstream_config`: ``lam = 1e-3``, ``k = 12`` at 32 GPUs). The
        forecast stays ``forecast=`` (observed only unless ``"upstream_dirichlet"``/``"oracle"``).
    plan_progress : {"forecast", "seen_mean"}
        The welfare's progress: along the forecast's regimes (default), or upstream's
        continuous epochs at the mean epoch time of the whole epochs done so far and the
        current one (`fairalloc.plan_schedule`'s ``progress_seconds``; `whole_epochs`).
    lateness_work : {"attained", "epochs"}
        ``lateness="upstream"``: the work done in the equal-share finish time, attained seconds
        (default; restart overhead included) or the measured seconds of the whole epochs done
        (upstream).
    planner : callable, optional
        Called instead of `fairalloc.plan_schedule` for each re-plan, with its arguments
        (``planner(jobs, num_gpus, rounds=..., **options)``; with ``hard_ftf`` the first call
        has ``remaining_limit=``); it returns the plan or raises as `fairalloc.plan_schedule`
        does. A caller's seam to record or vet plans (or to inject a failure): before each
        call `ftf_remaining` holds the fairness side's forecast. Default `plan_schedule`.
    welfare_norm : {"gpus", "rounds"}, optional
        Passed to `fairalloc.plan_schedule`: the welfare divided by
        ``N*M`` (paper) or ``N*T`` (upstream's code).
    replan_interval : int, optional
        Re-plan at least every this many rounds (upstream: 8); default the window.
    lateness_submit : {"arrival", "admitted"}
        ``lateness="upstream"``: the equal-share finish time counts from the job's arrival
        (default) or from the start of the round that admitted it (upstream).
    epoch_calibration : {"none", "upstream"}
        With ``forecast="upstream_dirichlet"``: ``"upstream"`` multiplies the profiled epoch
        times that forecast reads (and the seen-mean epoch time and the equal-share work) by
        upstream's calibration factor (`calibration_factor`, re-computed at each re-plan from
        the rounds the job ran). Other forecasts read no profile: no effect.
    replan_clock : {"plan", "simulation"}
        What ``replan_interval`` counts: rounds since the last re-plan, whatever caused it
        (default), or rounds of the simulation (upstream: re-plans on rounds ``r``, ``2r``,
        ... besides those on arrivals and completions).
    reorder : bool or "milp", default False
        With ``"counts"``: among the jobs with planned rounds left, those of larger plan weight
        run first. ``"milp"``: upstream's post-solve reordering, a second MILP that keeps each
        job's round count and moves high-priority jobs' rounds to the front of the window
        (`reorder_window`), applied to plans made without the hard limits (it orders the
        columns ``execution="columns"`` runs). Flags may be spelled ``true``/``false``/``1``/``0``.
    critical : {"drain", "off"}, default "drain"
        With ``"counts"``: a job whose forecast remaining time ``R_j`` (at the last re-plan)
        is at least the drain time ``sum_i w_i R_i / M`` of every active job's remaining work
        is on the makespan's critical path -- it alone sets the makespan's lower bound
        ``max(sum_i w_i R_i / M, max_i R_i)``, and each round it waits delays that bound by a
        round -- so it runs every round, after near-completion jobs and with the jobs that
        must run to get their planned count. ``"off"``:
        only the plan's counts and the makespan term decide (``preset="upstream"``'s value;
        ``execution="columns"`` ignores this option). `critical_rounds` counts the rounds
        such jobs ran beyond their planned count.
    idle_fill : {"longest", "shortest", "none", "at_solve"}
        Who gets GPUs the plan's jobs leave idle: the longest remaining, the shortest remaining,
        or nobody (`filled` counts the job-rounds it ran); ``"at_solve"`` (upstream): the longest
        forecast remaining, chosen at the re-plan for every round of the window (`fill_window`).
    method, gap_tol, work_conservation, restart_penalty, expectation, \
regime_model, z0, util_floor, warm_start, threads, backend : optional
        Passed to `fairalloc.plan_schedule` when given (`PLAN_OPTIONS`);
        ``None``: its default. ``mip_gap`` (deprecated) is ``gap_tol``.

    Examples
    --------
    Two jobs of 6 and 12 minutes arriving together on one GPU (rounds of 6 minutes):

    >>> import fairalloc as fa
    >>> from fairalloc.sim import Workload, simulate
    >>> w = Workload.from_arrays([0.0, 0.0], [[1.0], [1.0]], [360.0, 720.0])
    >>> r = simulate(w, fa.Cluster({"gpu": 1}), ShockwavePolicy())
    >>> r.policy, r.finish.tolist()
    ('shockwave', [360.0, 1080.0])
    """

    name = "shockwave"

    @renamed_kwargs(mip_gap="gap_tol")
    @_given_options
    def __init__(self, *, k: float = SHOCKWAVE_K, lam: float = SHOCKWAVE_LAM,
                 window: int = SHOCKWAVE_WINDOW, forecast: str = "restatement",
                 ftf_forecast: str | None = FTF_FORECAST,
                 replan: str = "reactive", accordion_regimes: int = ACCORDION_REGIMES,
                 contention: str = "jobs", execution: str = "counts",
                 keep_running: bool = True, method: str | None = None,
                 gap_tol: float | None = None, time_limit: float | None = None,
                 node_limit: int | None = PLAN_NODE_LIMIT,
                 work_conservation: str | None = None, restart_penalty: float | None = None,
                 expectation: str | None = None, makespan: str | None = SHOCKWAVE_MAKESPAN,
                 regime_model: str | None = None, z0: float | None = None,
                 util_floor: float | None = None, warm_start: bool | None = None,
                 threads: int | None = None, backend: Any = None,
                 weights: str = "clipped", boost: float = NEAR_COMPLETION_BOOST,
                 welfare_norm: str | None = None, replan_interval: int | None = None,
                 reorder: bool = False, idle_fill: str = "longest", critical: str = "drain",
                 near_completion: str = "first", near_rounds: int = NEAR_ROUNDS,
                 hard_ftf: bool = True, rhomax: float = HARD_FTF_RHOMAX,
                 hard_ftf_drop: str = "unreachable", lateness: str = "ftf",
                 hard_ftf_weights: str = "weighted", log_breakpoints: Any = None,
                 plan_progress: str = "forecast", lateness_work: str = "attained",
                 lateness_submit: str = "arrival", replan_clock: str = "plan",
                 epoch_calibration: str = "none",
                 preset: str | None = None,
                 planner: Any = None) -> None:
        opts = {n: v for n, v in locals().items()
                if n not in ("self", "preset", "planner", "__class__")}
        if planner is not None and not callable(planner):
            raise InputError(f"planner must be callable, got {type(planner).__name__}",
                             argument="planner")
        #: the callable each re-plan solves with (None: `fairalloc.plan_schedule`)
        self.planner = planner
        #: the fairness side's remaining seconds per job at the last re-plan (ftf_forecast)
        self.ftf_remaining: np.ndarray | None = None
        self.preset = None if preset is None else as_option(preset, "preset", PRESETS)
        self._per_cluster = False
        if self.preset == "upstream":
            given = getattr(self, "_given", frozenset(opts))
            opts.update({n: v for n, v in UPSTREAM_PRESET.items() if n not in given})
            if "critical" not in given:  # upstream has no critical-path rule
                opts["critical"] = "off"
            # neither k nor lam given: upstream's configuration for the cluster's size
            self._per_cluster = not given & {"k", "lam"}
        self._configure(**opts)

    def _configure(self, *, k: float, lam: float, window: int, forecast: str,
                   ftf_forecast: str | None, replan: str, accordion_regimes: int,
                   contention: str, execution: str, keep_running: Any, method: Any,
                   gap_tol: Any, time_limit: Any, node_limit: Any, work_conservation: Any,
                   restart_penalty: Any, expectation: Any, makespan: Any, regime_model: Any,
                   z0: Any, util_floor: Any, warm_start: Any, threads: Any, backend: Any,
                   weights: str, boost: float, welfare_norm: Any, replan_interval: Any,
                   reorder: Any, idle_fill: str, critical: str, near_completion: str,
                   near_rounds: int,
                   hard_ftf: Any, rhomax: float, hard_ftf_drop: str, lateness: str,
                   hard_ftf_weights: str, log_breakpoints: Any, plan_progress: str,
                   lateness_work: str, lateness_submit: str, replan_clock: str,
                   epoch_calibration: str) -> None:
        from ...schedule import PlanJob, ReplanPolicy, plan_schedule

        given = {"method": method, "gap_tol": gap_tol, "time_limit": time_limit,
                 "work_conservation": work_conservation, "restart_penalty": restart_penalty,
                 "expectation": expectation, "makespan": makespan,
                 "regime_model": regime_model, "z0": z0, "util_floor": util_floor,
                 "warm_start": warm_start, "threads": threads, "backend": backend,
                 "welfare_norm": welfare_norm, "node_limit": node_limit,
                 "log_breakpoints": log_breakpoints}
        plan_options = {name: given[name] for name in PLAN_OPTIONS if given[name] is not None}
        # a bad plan option (gap_tol=5, method="nope") fails here, not at the first re-plan:
        # a one-job, one-round plan with these options (milliseconds)
        plan_schedule([PlanJob(workers=1, total_epochs=1, done_epochs=0, ftf=1.0,
                               regimes=[(1.0, 1)])], 1, rounds=1, **plan_options)

        forecast = as_option(forecast, "forecast", FORECASTS)
        ftf_forecast = (forecast if ftf_forecast is None
                        else as_option(ftf_forecast, "ftf_forecast", FORECASTS))
        contention = as_option(contention, "contention", ("jobs", "gpus"))
        window = as_positive_int(window, "window")
        execution = as_option(execution, "execution", ("counts", "columns"))
        k = as_positive_float(k, "k", allow_zero=True)
        lam = as_positive_float(lam, "lam", allow_zero=True)
        keep_running = _flag(keep_running, "keep_running")
        weights = as_option(weights, "weights", WEIGHT_MODES)
        boost = as_positive_float(boost, "boost", allow_zero=True)
        interval = (window if replan_interval is None
                    else as_positive_int(replan_interval, "replan_interval"))
        reorder = _flag(reorder, "reorder", REORDER_MODES)
        replan_clock = as_option(replan_clock, "replan_clock", REPLAN_CLOCKS)
        lateness_submit = as_option(lateness_submit, "lateness_submit", LATENESS_SUBMIT)
        epoch_calibration = as_option(epoch_calibration, "epoch_calibration",
                                      EPOCH_CALIBRATIONS)
        idle_fill = as_option(idle_fill, "idle_fill", IDLE_FILLS)
        critical = as_option(critical, "critical", CRITICAL_MODES)
        near_completion = as_option(near_completion, "near_completion", NEAR_COMPLETION)
        near_rounds = as_positive_int(near_rounds, "near_rounds")
        hard_ftf = _flag(hard_ftf, "hard_ftf")
        lateness = as_option(lateness, "lateness", LATENESS)
        hard_ftf_weights = as_option(hard_ftf_weights, "hard_ftf_weights", HARD_FTF_WEIGHTS)
        plan_progress = as_option(plan_progress, "plan_progress", PLAN_PROGRESS)
        lateness_work = as_option(lateness_work, "lateness_work", LATENESS_WORK)
        rhomax = as_positive_float(rhomax, "rhomax")
        hard_ftf_drop = as_option(hard_ftf_drop, "hard_ftf_drop", HARD_FTF_DROPS)
        super().__init__({"k": k, "lam": lam, "window": window, "forecast": forecast,
                          "ftf_forecast": ftf_forecast,
                          "replan": replan, "accordion_regimes": accordion_regimes,
                          "contention": contention, "execution": execution,
                          "keep_running": keep_running, "weights": weights, "boost": boost,
                          "replan_interval": interval, "replan_clock": replan_clock,
                          "lateness_submit": lateness_submit,
                          "epoch_calibration": epoch_calibration,
                          "reorder": reorder,
                          "idle_fill": idle_fill, "critical": critical,
                          "near_completion": near_completion,
                          "near_rounds": near_rounds, "hard_ftf": hard_ftf,
                          "rhomax": rhomax, "hard_ftf_drop": hard_ftf_drop,
                          "lateness": lateness, "hard_ftf_weights": hard_ftf_weights,
                          "plan_progress": plan_progress, "lateness_work": lateness_work,
                          **({"preset": self.preset} if self.preset else {}),
                          **plan_options})
        self.lateness, self.hard_ftf_weights = lateness, hard_ftf_weights
        self.plan_progress, self.lateness_work = plan_progress, lateness_work
        self.hard_ftf, self.rhomax, self.hard_ftf_drop = hard_ftf, float(rhomax), hard_ftf_drop
        self.weights, self.boost, self.replan_interval = weights, float(boost), interval
        self.replan_clock, self.lateness_submit = replan_clock, lateness_submit
        # upstream's calibration applies to the one forecast that reads a profile
        self._calibrate = (epoch_calibration == "upstream"
                           and "upstream_dirichlet" in (forecast, ftf_forecast))
        self.reorder, self.idle_fill, self.critical = reorder, idle_fill, critical
        self._crit: dict[Hashable, bool] = {}
        self.near_completion, self.near_rounds = near_completion, near_rounds
        self._near: dict[Hashable, bool] = {}
        self.execution = execution
        self.keep_running = bool(keep_running)
        self.k, self.lam, self.window = float(k), float(lam), window
        self.forecast, self.contention = forecast, contention
        self.ftf_forecast = ftf_forecast
        self.accordion_regimes = as_positive_int(accordion_regimes, "accordion_regimes")
        self.replan_policy = ReplanPolicy(replan)
        self.plan_options = plan_options
        self._plan: dict[Hashable, np.ndarray] = {}
        self._left: dict[Hashable, int] = {}
        self._ftf: dict[Hashable, float] = {}
        self._prio: dict[Hashable, float] = {}
        self._planned = 0
        self._elapsed = 0
        self.plans = 0
        self.plan_seconds = 0.0
        #: re-plans stopped by ``node_limit`` (or ``time_limit``) before their gap was certified
        self.time_limited = 0
        #: job-rounds run by the idle fill (jobs with no planned round left)
        self.filled = 0
        #: job-rounds run because the job was on the makespan's critical path (``critical``)
        self.critical_rounds = 0
        #: re-plans whose MILP answer failed its check and were re-solved by the fast path
        self.solver_fallbacks = 0
        #: hard_ftf: re-plans that met every job's finish-time bound / that dropped the bounds
        self.hard_ftf_plans = 0
        self.hard_ftf_dropped = 0

    def reset(self, workload: Workload, cluster: Cluster, *, round_duration: float,
              seed: int) -> None:
        super().reset(workload, cluster, round_duration=round_duration, seed=seed)
        self._plan, self._planned, self._elapsed, self.plans = {}, 0, 0, 0
        self._left, self._ftf, self._prio, self._near = {}, {}, {}, {}
        self._crit = {}
        self.critical_rounds = 0
        from ...schedule.posteriors import RegimePool

        self._pool = RegimePool()  # forecast="empirical": what every job has shown
        self.plan_seconds = 0.0
        self.time_limited = 0
        self.filled = 0
        self.solver_fallbacks = 0
        self.hard_ftf_plans = self.hard_ftf_dropped = 0
        if self._per_cluster:  # preset="upstream": the configuration for this cluster size
            self.lam, self.k = upstream_config(int(round(cluster.total_workers)))
            self.params.update(k=self.k, lam=self.lam)
        self._late = EqualShareLateness(workload.n)
        self._admitted = np.full(workload.n, np.nan)  # start of the round that admitted a job
        self._runs: dict[int, list[tuple[int, float]]] = {}  # row -> (round count, epoch s)
        self._amp = np.ones(workload.n)  # epoch_calibration: the factor in force per job
        self._round, self._reestimate = 0, True
        self.reordered = 0

    def _model(self, v: JobView, i: int) -> Any:
        from ...schedule import RegimeModel

        b0, cap = float(v.initial_batch[i]), float(v.max_batch[i])
        mode = v.mode[i]
        if mode == "static" or cap <= b0:
            if v.regime[i] == 0:
                return RegimeModel.static(b0)
        if mode == "gns" and cap > b0:
            return RegimeModel.gns(b0, max_batch_size=cap)
        seen = int(v.regime[i]) + 1
        large = cap if cap > b0 else 2.0 * b0
        return RegimeModel.accordion(b0, large, num_regimes=max(self.accordion_regimes,
                                                                 seen + 1))

    def _observe(self, v: JobView) -> None:
        """forecast="empirical": record what every active job has shown so far."""
        if "empirical" in (self.forecast, self.ftf_forecast):
            for i in range(v.n):
                r = int(v.regime[i]) + 1
                self._pool.observe(int(v.index[i]), (v.model[i], v.mode[i]),
                                   float(v.total_epochs[i]), v.history_epochs[i, :r],
                                   configurations=v.history_batch[i, :r],
                                   epoch_seconds=v.history_seconds[i, :r],
                                   speed_family=(v.model[i], int(v.scale_factor[i])))

    def _profile(self, row: int) -> tuple[np.ndarray, np.ndarray]:
        """Batch size and seconds of every epoch of job ``row``'s schedule (its future)."""
        w = self.workload
        assert w is not None  # reset() stored the workload before the first round
        r = int(w.num_regimes[row])
        reps = np.ceil(w.regime_epochs[row, :r] - EPOCH_ROUNDOFF).astype(np.int64)
        return (np.repeat(w.regime_batch[row, :r], reps),
                np.repeat(w.regime_seconds[row, :r].min(axis=1), reps))

    def _calibrate_epochs(self, v: JobView) -> None:
        """epoch_calibration="upstream": update each job's factor from the rounds it ran."""
        for row in v.index.tolist():  # a per-job history of variable length
            runs = self._runs.get(row)
            if runs:
                keys, seconds = zip(*runs, strict=True)
                f = calibration_factor(keys, seconds, self._profile(row)[1],
                                       self.round_duration, previous=float(self._amp[row]))
                if not math.isnan(f):
                    self._amp[row] = f

    def _forecasts(self, v: JobView, method: str) -> list[Any]:
        from ...schedule import forecast_regimes, oracle_forecast

        out = []
        w = self.workload
        for i in range(v.n):  # one forecast per job: the library's per-job API
            if method in ("oracle", "upstream_dirichlet"):
                assert w is not None  # reset() stored the workload before the first round
                row = int(v.index[i])
                bs, sec = self._profile(row)
                if method == "upstream_dirichlet":  # epoch_calibration (1 when off)
                    sec = sec * self._amp[row]
                done = min(int(math.floor(v.epochs_done[i] + EPOCH_ROUNDOFF)), bs.size)
                if method == "upstream_dirichlet" and done < bs.size:
                    # upstream's forecast, as one flat regime over the epochs left
                    per = max(dirichlet_remaining(bs, sec, done),
                              MIN_REMAINING) / (bs.size - done)
                    bs, sec = np.full(bs.size, bs[done]), np.where(
                        np.arange(bs.size) < done, sec, per)
                out.append(oracle_forecast(bs, sec, done))
                continue
            bs, sec = v.observed_epochs(i)
            profiled = {float(v.batch_size[i]): float(np.min(v.epoch_seconds[i]))}
            model, prior = self._model(v, i), None
            if method == "empirical":  # other jobs' ratios and regime lengths
                profiled = self._pool.profile((v.model[i], int(v.scale_factor[i])),
                                              float(v.batch_size[i]),
                                              float(np.min(v.epoch_seconds[i])),
                                              model.configurations)
                prior = self._pool.prior((v.model[i], v.mode[i]), float(v.total_epochs[i]),
                                         model.num_regimes)
            out.append(forecast_regimes(model, float(v.total_epochs[i]), bs, sec,
                                        current_batch_size=float(v.batch_size[i]),
                                        profiled=profiled, method=method,
                                        prior_epochs=prior))
        return out

    def _replan(self, state: RoundState) -> None:
        from ...schedule import PlanJob, contention_factor, ftf_estimate, plan_schedule

        t0 = time.perf_counter()
        v = state.jobs
        M = state.cluster.num_gpus
        self._observe(v)
        if self._calibrate:
            self._calibrate_epochs(v)
        amp = self._amp[v.index] if self._calibrate else np.ones(v.n)
        fcs = self._forecasts(v, self.forecast)
        remaining = np.array([max(fc.remaining_seconds, MIN_REMAINING) for fc in fcs])
        # the fairness side's forecast (ftf_forecast; the plan's own by default)
        rem_f = remaining if self.ftf_forecast == self.forecast else np.array(
            [max(fc.remaining_seconds, MIN_REMAINING)
             for fc in self._forecasts(v, self.ftf_forecast)])
        demand = float(v.n if self.contention == "jobs" else v.scale_factor.sum())
        nav = contention_factor(v.arrival, state.cluster.time, M,
                                demand_seconds=v.contention_seconds
                                * (1.0 if self.contention == "jobs"
                                   else v.scale_factor.sum() / max(v.n, 1)),
                                demand=demand)
        D = state.cluster.round_duration
        if self.lateness == "upstream":
            # upstream: now + R / min(1, M/N) over the momentum-averaged equal-share finish
            # time, re-estimated only on arrivals and completions; late above rhomax
            if self._reestimate:
                work = (v.attained if self.lateness_work == "attained"
                        else whole_epochs(v)[1] * amp)
                submit = v.arrival if self.lateness_submit == "arrival" else self._admitted[v.index]
                self._late.record(v.index, self._round, submit, work, rem_f, num_gpus=M)
                self._reestimate = False
            target = self._late.target(v.index, self._round)
            share = min(1.0, M / max(v.n, 1))
            ftf = (state.cluster.time + rem_f / share) / target
            ftf = np.where(np.isfinite(ftf) & (ftf > 0), ftf, 1.0)
            ftf_w = np.where(ftf > self.rhomax, ftf, 1.0)
        else:
            ftf = ftf_estimate(v.attained, v.waiting, rem_f, nav)
            ftf = ftf_w = np.where(np.isfinite(ftf) & (ftf > 0), ftf, 1.0)
        weighed = plan_ftf(ftf_w, rem_f, D, k=self.k, weights=self.weights,
                           boost=self.boost if self.near_completion == "weight" else 0.0)
        near = ((ftf > 1.0) & (rem_f < self.near_rounds * D)
                & (self.near_completion == "first"))
        self._near = dict(zip(v.ids, near.tolist(), strict=True))
        # critical="drain": the jobs whose remaining time alone bounds the makespan
        drain = float(v.scale_factor @ remaining) / M
        crit = (remaining >= drain) & (self.critical == "drain")
        self._crit = dict(zip(v.ids, crit.tolist(), strict=True))
        self._ftf = dict(zip(v.ids, ftf.tolist(), strict=True))
        self._prio = dict(zip(v.ids, np.log(weighed).tolist(), strict=True))
        self.ftf_remaining = rem_f.copy()
        self.ftf_remaining.flags.writeable = False
        solve = plan_schedule if self.planner is None else self.planner
        jobs = []
        for i, fc in enumerate(fcs):
            ftf_i = float(weighed[i])
            regimes = fc.regimes
            left = float(v.total_epochs[i]) - fc.done_epochs
            if not regimes or left <= 0:
                regimes = [(float(np.min(v.epoch_seconds[i])), max(left, MIN_REMAINING))]
            jobs.append(PlanJob(workers=int(v.scale_factor[i]), total_epochs=fc.total_epochs,
                                done_epochs=fc.done_epochs, ftf=ftf_i, regimes=regimes,
                                running=bool(v.running[i])))
        extra: dict[str, Any] = {}
        if self.plan_progress == "seen_mean":  # upstream: mean of epoch_duration[:progress+1]
            done, seen = whole_epochs(v)
            extra["progress_seconds"] = ((seen + np.min(v.epoch_seconds, axis=1)) * amp
                                         / (done + 1.0))
        plan = None
        dropped = self.hard_ftf_dropped
        if self.hard_ftf:
            if self.lateness == "upstream":
                # upstream: now + T D + R_after / share <= rhomax * target (infeasible when
                # a job's right-hand side is below now + T D)
                limit = ((self.rhomax * target - state.cluster.time - self.window * D) * share
                         * remaining / rem_f)
            else:
                # upstream's hard-FTF-first: L + W + T D + R_after N_avg <= rhomax P N_avg
                limit = hard_ftf_limits(v.attained, v.waiting, rem_f, nav, rhomax=self.rhomax,
                                        window_seconds=self.window * D,
                                        plan_remaining=remaining, drop=self.hard_ftf_drop)
            plain = jobs
            if self.hard_ftf_weights == "none":  # upstream: unweighted when the limits hold
                plain = [dataclasses.replace(j, ftf=1.0) for j in jobs]
            try:
                if np.any(limit < 0):
                    raise InfeasibleError("a finish-time limit is already missed")
                opts = {**self.plan_options, "method": "auto", **extra}
                plan = solve(plain, M, rounds=self.window, round_duration=D, k=self.k,
                             lam=self.lam, remaining_limit=limit, **opts)
                self.hard_ftf_plans += 1
            except SolverError:  # InfeasibleError, or no schedule within the limits
                self.hard_ftf_dropped += 1
        try:
            if plan is None:
                plan = solve(jobs, M, rounds=self.window,
                             round_duration=state.cluster.round_duration, k=self.k,
                             lam=self.lam, **self.plan_options, **extra)
        except SolverError:
            # the full MILP's answer failed its independent check (e.g. its objective disagrees
            # with the recomputed one beyond the tolerance): plan with the fast path alone,
            # whose schedule is certified without the backend's objective
            opts = {**self.plan_options, "method": "fast", "warm_start": False, **extra}
            plan = solve(jobs, M, rounds=self.window,
                         round_duration=state.cluster.round_duration, k=self.k,
                         lam=self.lam, **opts)
            self.solver_fallbacks += 1
        self.time_limited += int(plan.status.value in ("time_limit", "iteration_limit"))
        sched = np.asarray(plan.schedule, dtype=bool)
        # reorder="milp": upstream's reordering, of the plan made without finish-time limits
        if self.reorder == "milp" and (not self.hard_ftf or self.hard_ftf_dropped > dropped):
            sched = reorder_window(sched, v.scale_factor, self.k * np.log(weighed), M)
            self.reordered += 1
        if self.idle_fill == "at_solve":  # upstream's construct_schedules
            sched = fill_window(sched, v.scale_factor, remaining, M)
        self._plan = dict(zip(v.ids, sched, strict=True))
        self._left = dict(zip(v.ids, sched.sum(axis=1).tolist(), strict=True))
        self._planned, self._elapsed = sched.shape[1], 0
        self.plans += 1
        self.plan_seconds += time.perf_counter() - t0

    def allocate(self, state: RoundState) -> Schedule:
        v = state.jobs
        if len(state.arrived) or len(state.finished):
            self._reestimate = True
        new = np.isnan(self._admitted[v.index])
        self._admitted[v.index[new]] = state.cluster.time
        # replan_clock="simulation": the interval's re-plans fall on a grid of the rounds
        on_grid = (self.replan_clock == "simulation" and self._round > 0
                   and self._round % self.replan_interval == 0)
        decision = self.replan_policy.decide(
            rounds_elapsed=self._elapsed,
            planned_rounds=(self._planned if self.replan_clock == "simulation"
                            else min(self._planned, self.replan_interval)),
            arrived=len(state.arrived), finished=len(state.finished),
            regime_changed=int(v.regime_changed.sum()))
        if decision or on_grid or any(i not in self._plan for i in v.ids):
            self._replan(state)
        col = self._elapsed
        self._elapsed += 1
        self._round += 1
        cluster = state.cluster.cluster
        rem = np.min(v.remaining_seconds, axis=1)
        fill = rem.max(initial=0.0) + 1.0
        near = np.array([self._near.get(i, False) for i in v.ids], dtype=bool)
        crit = np.zeros(v.n, dtype=bool)
        if self.execution == "columns":
            run = np.array([bool(self._plan[i][col]) for i in v.ids])
            # the column's jobs (longest remaining first), then idle GPUs to the others
            priority = np.where(run, -rem, 2.0 * fill - rem)
        else:
            left = np.array([self._left[i] for i in v.ids])
            run = left > 0
            ftf = np.array([self._ftf[i] for i in v.ids])
            prio = (np.array([self._prio[i] for i in v.ids]) if self.reorder
                    else np.zeros(v.n))
            # planned jobs most at risk first (shortest remaining among equals: finishing a
            # job early never costs a planned round); idle GPUs to the longest remaining
            keep = v.running if self.keep_running else np.zeros(v.n, dtype=bool)
            # a job whose planned rounds fill the rest of the window must run now; jobs the
            # plan finishes within the window go next (shortest first): finishing them early
            # costs no other job a planned round
            must = run & (left >= self._planned - col)
            # critical="drain": a job on the makespan's critical path runs every round
            crit = np.array([self._crit.get(i, False) for i in v.ids], dtype=bool)
            must |= crit
            finisher = run & (rem <= left * state.cluster.round_duration)
            # reorder: upstream's post-solve ranking -- planned jobs of larger plan weight
            # (late, near completion) first
            # near_completion="first": a late job forecast to finish within a round runs first
            order = np.lexsort((rem, -ftf, ~keep, ~finisher, -prio, ~must, ~near))
            rank = np.empty(v.n)
            rank[order] = np.arange(v.n)
            idle = {"longest": fill - rem, "shortest": rem}.get(self.idle_fill, rem)
            priority = np.where(run | near | crit, rank, v.n + idle)
        if self.execution == "columns":
            if self.idle_fill == "shortest":
                priority = np.where(run, priority, 2.0 * fill + rem)
            priority = np.where(near, -2.0 * fill, priority)
        limit = (run | near | crit) if self.idle_fill in ("none", "at_solve") else None
        sched = pack_by_priority(v, cluster, priority, limit=limit)
        ran = np.asarray(sched.gpus).sum(axis=1) > 0
        for i in np.flatnonzero(ran & run).tolist():
            self._left[v.ids[i]] -= 1
        if self._calibrate:  # upstream's throughput timeline: the round count after the round
            for i in np.flatnonzero(ran).tolist():
                self._runs.setdefault(int(v.index[i]), []).append(
                    (self._round, float(np.min(v.epoch_seconds[i]))))
        self.filled += int((ran & ~(run | near | crit)).sum())
        self.critical_rounds += int((ran & crit & ~run).sum())
        return sched
