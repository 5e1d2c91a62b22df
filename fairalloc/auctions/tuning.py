"""`Tuning`: the performance knobs of the partial allocation mechanism's solve plans.

`fairalloc.partial_allocation` solves its PF market and its ``n`` leave-one-out markets through
plans (`fairalloc.auctions.pa_plan`, run by `fairalloc.plan.run_plan`). The plans are pure
functions of the method and a `Tuning`. No knob changes an answer -- every market is certified
on its whole program and every plan ends in an exact method -- only which strategy produces it
and how fast. A knob set to ``0`` makes its strategy decline at once: the next strategy of the
plan answers (that is how a benchmark or a test reaches each hand-over without patching
module constants).

Examples
--------
>>> import fairalloc as fa
>>> from fairalloc.auctions import Tuning
>>> r = fa.partial_allocation([[2.0, 1.0], [1.0, 1.0]], tuning=Tuning(loo_batch=0))
>>> r.stats.path, r.fraction.round(4).tolist()
(('pf-market', 'loo-batched-ipm', 'loo-warm'), [0.5, 0.6667])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._validation import as_tuning_value, check_knobs
from ..errors import InputError

__all__ = ["DEFAULT_TUNING", "Tuning", "as_tuning"]


@dataclass(frozen=True)
class Tuning:
    """Performance knobs of `fairalloc.partial_allocation`'s plans (none changes an answer).

    Parameters
    ----------
    pf_market_solves : int
        `fairalloc.fisher_market` solves the PF market's first strategy (``pf-market``) may
        spend: 1 (default) or 0 (it declines: fairalloc's own warm search from uniform prices,
        ``pf-warm-search``, answers).
    pf_polish_rounds : int
        Candidate rounds of the support polish after ``pf-market`` (2: the PF point is almost
        always exact after the first).
    loo_batch : int
        Leave-one-out markets per block-diagonal interior-point solve (``loo-batched-ipm``;
        32 keeps each batch's Schur complements small). 0: no batch, every market declines
        to ``loo-warm``.
    loo_warm_rounds : int
        Candidate rounds of a leave-one-out warm search (``loo-warm``) before it solves its
        whole reduced market (6, `fairalloc.markets.warm.WARM_ROUNDS`). 0: the warm search
        declines at once, ``loo-cold`` (`fairalloc.fisher_market`) answers.

    Examples
    --------
    >>> Tuning(loo_batch=0).loo_batch, Tuning().pf_polish_rounds
    (0, 2)
    >>> Tuning(loo_batch=-1)
    Traceback (most recent call last):
    ...
    fairalloc.errors.InputError: tuning.loo_batch must be a non-negative int, got -1
    """

    pf_market_solves: int = 1
    pf_polish_rounds: int = 2
    loo_batch: int = 32
    loo_warm_rounds: int = 6

    def __post_init__(self) -> None:
        check_knobs(self)
        if self.pf_market_solves > 1:
            raise InputError("tuning.pf_market_solves must be 0 or 1, got "
                             f"{self.pf_market_solves}", argument="tuning.pf_market_solves")

#: the defaults
DEFAULT_TUNING = Tuning()


def as_tuning(value: Any) -> Tuning:
    """``value`` as a `Tuning` (``None``: the defaults); anything else is an InputError.

    Examples
    --------
    >>> as_tuning(None) == DEFAULT_TUNING
    True
    """
    return as_tuning_value(value, Tuning, DEFAULT_TUNING,  # type: ignore[no-any-return]
                           "fairalloc.auctions.Tuning")
