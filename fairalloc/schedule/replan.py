"""When to re-plan (Shockwave §6.1): `fairalloc.ReplanPolicy` and
`ReplanDecision`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import as_option, as_positive_int
from ..errors import InputError

__all__ = ["REPLAN_MODES", "ReplanDecision", "ReplanPolicy"]

REPLAN_MODES = ("reactive", "lazy")


@dataclass(frozen=True)
class ReplanDecision:
    """Whether to re-plan now, and why.

    Parameters
    ----------
    replan : bool
        Re-plan before the next round.
    reasons : tuple of str
        The triggers that fired: ``"no_plan"``, ``"window_elapsed"``, ``"arrival"``,
        ``"completion"``, ``"regime_change"``.
    deferred : tuple of str
        Triggers seen but deliberately ignored (a regime change in lazy mode).

    Examples
    --------
    >>> d = ReplanPolicy("lazy").decide(rounds_elapsed=3, planned_rounds=20, regime_changed=[7])
    >>> d.replan, d.reasons, d.deferred, bool(d)
    (False, (), ('regime_change',), False)
    """

    replan: bool
    reasons: tuple[str, ...]
    deferred: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return self.replan


def _event_count(value: Any, name: str) -> int:
    if isinstance(value, bool | np.bool_):
        return int(value)
    if isinstance(value, int | np.integer):
        return as_positive_int(value, name, allow_zero=True)
    if isinstance(value, Sequence | np.ndarray) and not isinstance(value, str):
        return len(value)
    raise InputError(f"{name} must be a count, a bool or a sequence of job ids, got "
                     f"{value!r}", argument=name)


@dataclass(frozen=True)
class ReplanPolicy:
    """When to recompute a plan (Shockwave §6.1, App. G).

    The plan is recomputed when its planned rounds have elapsed and when jobs arrive or
    finish (the paper). In ``"reactive"`` mode (default) it is also recomputed as soon as a
    job changes regime (its batch size changed, so the forecast behind the plan moved); in
    ``"lazy"`` mode a regime change waits for the next of those events.

    Parameters
    ----------
    mode : {"reactive", "lazy"}

    Examples
    --------
    >>> policy = ReplanPolicy()
    >>> bool(policy.decide(rounds_elapsed=3, planned_rounds=20, regime_changed=[7]))
    True
    >>> d = ReplanPolicy("lazy").decide(rounds_elapsed=3, planned_rounds=20, regime_changed=[7])
    >>> d.replan, d.deferred
    (False, ('regime_change',))
    >>> ReplanPolicy("lazy").decide(rounds_elapsed=20, planned_rounds=20).reasons
    ('window_elapsed',)
    """

    mode: str = "reactive"

    def __post_init__(self) -> None:
        as_option(self.mode, "mode", REPLAN_MODES)

    def decide(self, *, rounds_elapsed: int, planned_rounds: int, arrived: Any = 0,
               finished: Any = 0, regime_changed: Any = 0) -> ReplanDecision:
        """Decide before a round whether the current plan must be recomputed.

        Parameters
        ----------
        rounds_elapsed : int
            Rounds of the current plan already executed.
        planned_rounds : int
            Rounds the current plan covers (``0``: there is no plan yet).
        arrived, finished, regime_changed : int, bool or sequence of job ids
            Jobs that arrived, finished, or changed regime since the plan was made.
        """
        done = as_positive_int(rounds_elapsed, "rounds_elapsed", allow_zero=True)
        planned = as_positive_int(planned_rounds, "planned_rounds", allow_zero=True)
        if planned and done > planned:
            raise InputError(f"rounds_elapsed = {done} exceeds planned_rounds = {planned}",
                             argument="rounds_elapsed")
        reasons: list[str] = []
        deferred: list[str] = []
        if planned == 0:
            reasons.append("no_plan")
        elif done >= planned:
            reasons.append("window_elapsed")
        if _event_count(arrived, "arrived"):
            reasons.append("arrival")
        if _event_count(finished, "finished"):
            reasons.append("completion")
        if _event_count(regime_changed, "regime_changed"):
            (reasons if self.mode == "reactive" else deferred).append("regime_change")
        return ReplanDecision(replan=bool(reasons), reasons=tuple(reasons),
                              deferred=tuple(deferred) if not reasons else ())
