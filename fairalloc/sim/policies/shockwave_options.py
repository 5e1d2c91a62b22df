"""Shockwave's options: their modes, defaults and the two option functions.

The option values `ShockwavePolicy` accepts (``weights``, ``idle_fill``, ``lateness``...), the
defaults of its fairness side (``rhomax``, ``ftf_forecast``), the flag parser of the command
line, and the two pure functions the plan's weights and hard finish-time limits come from
(`plan_ftf`, `hard_ftf_limits`; both re-exported by ``fairalloc.sim.policies.shockwave``).
``formulations/shockwave_options.md`` documents every option.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..._validation import as_bool
from ...errors import InputError

__all__ = ["hard_ftf_limits", "plan_ftf"]

#: exponent of the near-completion boost (upstream's ``priority_M``): a late job (rho > 1)
#: forecast to finish within one round weighs rho**NEAR_COMPLETION_BOOST
NEAR_COMPLETION_BOOST = 100.0
# ACCURACY: the largest log of a plan FTF value (exp of it stays a finite float)
MAX_LOG_FTF = 700.0
#: how the FTF estimates become plan weights
WEIGHT_MODES = ("clipped", "power")
#: who gets the GPUs the plan leaves idle in a round
IDLE_FILLS = ("longest", "shortest", "none", "at_solve")
#: how a late job forecast to finish within one round is favoured
NEAR_COMPLETION = ("first", "weight", "off")
#: default ``rhomax`` of ``hard_ftf``: every job's forecast finish time must stay within this
#: multiple of its fair finish time (upstream's ``rhomax``). With 1.0 almost every re-plan of the
#: 120-job trace had a job that could not meet it. 1.6 with ``ftf_forecast="empirical"``: the
#: only setting of the lever table (1.5, 1.6, 1.65, 1.75, 2) that met every 900-job target and
#: the 120-job trace's (docs/how-to/reproduce-shockwave.md)
HARD_FTF_RHOMAX = 1.6
#: default ``ftf_forecast``: the fairness side reads the empirical forecast (observed only). The
#: restatement rule holds a job's only batch size seen so far: a job whose batch grows later
#: (job 613 of the 900-job trace, GNS) is forecast 3.3x its true remaining time, never looks
#: late, waits 9,501 s and ends at rho 1.41 (docs/how-to/reproduce-shockwave.md)
FTF_FORECAST = "empirical"
#: which finish-time limits ``hard_ftf`` drops: first those a job cannot meet even running every
#: round of the window (default), or all of them when any is infeasible (upstream)
HARD_FTF_DROPS = ("unreachable", "all")
#: the forecast methods of ``forecast`` and ``ftf_forecast``
FORECASTS = ("restatement", "bayesian", "greedy", "empirical", "oracle", "upstream_dirichlet")
#: who is late: the FTF estimate of Eq. 9 (``"ftf"``) or upstream's projected finish over its
#: momentum-averaged equal-share finish time (``"upstream"``, `EqualShareLateness`)
LATENESS = ("ftf", "upstream")
#: the plan weights when the hard finish-time limits are met: ``weights=``'s (``"weighted"``)
#: or none at all (``"none"``, upstream)
HARD_FTF_WEIGHTS = ("weighted", "none")
#: the welfare's progress: along the forecast's regimes, or upstream's continuous epochs at the
#: mean epoch time seen so far (``plan_schedule(progress_seconds=)``)
PLAN_PROGRESS = ("forecast", "seen_mean")
#: the work in upstream's equal-share finish time: attained seconds (restarts included) or
#: the measured seconds of the epochs done (upstream's ``sum(epoch_duration[:progress])``)
LATENESS_WORK = ("attained", "epochs")
#: the submit time of upstream's equal-share finish time: the job's arrival, or the start of
#: the round that admitted it (upstream: ``JobMetaData.register_job_submit`` with the
#: simulator's clock when ``add_job`` runs, i.e. the round's start, up to a round after arrival)
LATENESS_SUBMIT = ("arrival", "admitted")
#: upstream's calibration of the profiled epoch times its forecast reads (``"upstream"``,
#: `calibration_factor`; only ``forecast="upstream_dirichlet"`` reads a profile) or none
EPOCH_CALIBRATIONS = ("none", "upstream")
#: what ``replan_interval`` counts: rounds since the last re-plan, whatever caused it (``"plan"``),
#: or rounds of the simulation (``"simulation"``, upstream: ``scheduler.py``'s ``_iround_reopt``
#: is reset only by its own every-``REOPT_ROUNDS`` re-solve, so re-plans fall on rounds 8, 16,
#: 24, ... whatever arrivals and completions re-planned in between)
REPLAN_CLOCKS = ("plan", "simulation")
#: ``reorder``'s modes besides True/False: upstream's reordering MILP (`reorder_window`)
REORDER_MODES = ("milp",)
#: the configurations ``preset`` names (`UPSTREAM_PRESET`)
PRESETS = ("upstream",)
#: spellings of a flag accepted from the command line (``--param shockwave.reorder=true``)
FLAG_WORDS = {"true": True, "false": False, "1": True, "0": False}


def _flag(value: Any, name: str, modes: tuple[str, ...] = ()) -> bool | str:
    """A flag given as a bool, 1/0 or the words true/false/1/0 (any case); or one of ``modes``."""
    if isinstance(value, str):
        word = value.strip().lower()
        if word in FLAG_WORDS:
            return FLAG_WORDS[word]
        if word in modes:
            return word
    elif isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_) \
            and int(value) in (0, 1):
        return bool(value)
    if modes and not isinstance(value, bool | np.bool_):
        raise InputError(f"{name} must be True, False or one of {list(modes)}, got {value!r}",
                         argument=name)
    return as_bool(value, name)


def _given_options(init: Any) -> Any:
    """Record the names of the options a caller gave (``preset=`` fills only the others)."""
    @functools.wraps(init)
    def wrapper(self: Any, **options: Any) -> None:
        self._given = frozenset(options)
        init(self, **options)
    return wrapper


def hard_ftf_limits(attained: Any, waiting: Any, remaining: Any, nav: Any, *, rhomax: float,
                    window_seconds: float, plan_remaining: Any = None,
                    drop: str = "unreachable") -> np.ndarray:
    """Upstream's hard finish-time limits: the most forecast remaining seconds each job may
    have after the window (``plan_schedule(remaining_limit=)``).

    A job's forecast finish, ``L + W + T D + R_after N_avg``, must stay within
    ``rhomax P N_avg`` (``P = L + R``, its fair finish time), so
    ``R_after <= (rhomax P N_avg - L - W - T D) / N_avg`` (at least 0). ``remaining`` (``R``)
    is the forecast the FTF estimates read; when the plan reads another one
    (``plan_remaining``, e.g. ``ShockwavePolicy(ftf_forecast=)``), the limit is scaled by
    ``plan_remaining / remaining`` into the plan's seconds (the same fraction of the job left).
    ``drop="unreachable"``: a limit the job cannot meet even running the whole window
    (``limit < plan_remaining - T D``) becomes ``inf``; ``"all"`` keeps every limit.

    Parameters
    ----------
    attained, waiting, remaining, nav : array_like, shape (n,)
        ``L``, ``W``, ``R`` (seconds) and the contention factor ``N_avg`` of each job.
    rhomax : float
    window_seconds : float
        ``T D``.
    plan_remaining : array_like, shape (n,), optional
        The plan's forecast remaining seconds (default ``remaining``).
    drop : {"unreachable", "all"}

    Returns
    -------
    ndarray, shape (n,)

    Examples
    --------
    >>> hard_ftf_limits([0.0, 0.0], [1000.0, 3000.0], [1000.0, 1000.0], [2.0, 2.0],
    ...                 rhomax=1.5, window_seconds=240.0).tolist()
    [880.0, inf]
    >>> hard_ftf_limits([0.0], [500.0], [1000.0], [2.0], rhomax=1.5, window_seconds=240.0,
    ...                 plan_remaining=[3000.0]).tolist()
    [3390.0]
    """
    att, wait = np.asarray(attained, dtype=float), np.asarray(waiting, dtype=float)
    rem, nav = np.asarray(remaining, dtype=float), np.asarray(nav, dtype=float)
    plan_rem = rem if plan_remaining is None else np.asarray(plan_remaining, dtype=float)
    limit = (rhomax * (att + rem) * nav - att - wait - window_seconds) / nav
    limit = np.maximum(limit, 0.0) * (plan_rem / rem)
    if drop == "unreachable":
        # R_j after n rounds is R_j - n D (isolated seconds), at best R_j - T D
        limit = np.where(limit < np.maximum(plan_rem - window_seconds, 0.0), np.inf, limit)
    return limit


def plan_ftf(ftf: Any, remaining: Any, round_duration: float, *, k: float,
             weights: str = "clipped", boost: float = NEAR_COMPLETION_BOOST) -> np.ndarray:
    """The FTF values a Shockwave plan weighs the jobs by (its weight is ``value ** k``).

    ``weights="power"`` is the paper's Eq. 11: every job weighs ``rho ** k``.
    ``weights="clipped"`` is upstream's code: ``rho ** k`` only for a late job
    (``rho > 1``), ``1`` otherwise (a job served on time keeps the weight of a fair one
    instead of collapsing towards 0). With ``boost > 0`` (upstream's code, 100) a late job
    forecast to finish within one round (``remaining < round_duration``) weighs
    ``rho ** boost`` instead (returned as ``rho ** (boost / k)``, capped at ``exp(700)``;
    no boost when ``k = 0``).

    Parameters
    ----------
    ftf : array_like, shape (n,)
        FTF estimates (positive).
    remaining : array_like, shape (n,)
        Forecast remaining isolated run time (seconds).
    round_duration : float
        Seconds per round.
    k : float
        The plan's FTF exponent.
    weights : {"clipped", "power"}
    boost : float, default 100.0
        Exponent of the near-completion boost (``0``: none).

    Returns
    -------
    ndarray, shape (n,)

    Examples
    --------
    >>> plan_ftf([0.5, 2.0, 2.0], [1e4, 1e4, 60.0], 120.0, k=5.0).tolist()
    [1.0, 2.0, 1048576.0]
    >>> plan_ftf([0.5, 2.0], [1e4, 60.0], 120.0, k=5.0, weights="power", boost=0).tolist()
    [0.5, 2.0]
    """
    rho = np.asarray(ftf, dtype=float)
    rem = np.asarray(remaining, dtype=float)
    late = rho > 1.0
    out = np.where(late | (weights == "power"), rho, 1.0)
    if boost > 0 and k > 0:
        near = late & (rem < round_duration)
        log_boosted = np.minimum(boost / k * np.log(np.where(near, rho, 1.0)), MAX_LOG_FTF)
        out = np.where(near, np.exp(log_boosted), out)
    return out
