"""`Tuning`: the performance knobs of the market family's solve plans, as one value.

A market's plan (`fairalloc.markets.strategies`) is a pure function of the market's shape and
a `Tuning`: which strategies it holds (restricted markets, the interior point on the prices, the
Leontief dual interior point) and how long each tries before it declines. No knob changes an
answer -- every point is certified on the whole market and every plan ends in the exact conic
solve -- only which strategy produces it and how fast. A caller, a benchmark or a test passes
another value through ``solve(..., tuning=Tuning(...))`` (or ``fisher_market(...,
tuning=...)``) instead of patching module constants.

Examples
--------
>>> import fairalloc as fa
>>> from fairalloc.markets import Tuning
>>> r = fa.fisher_market([[2.0, 1.0], [1.0, 2.0]], kind="leontief", method="dual",
...                      tuning=Tuning(dual_max_iter=0))
>>> r.stats.path[:2], r.stats.fallbacks, r.certificate.ok
(('dual', 'conic'), ('dual->conic: the dual interior point did not converge',), True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._validation import as_tuning_value, check_knobs
from .ipm import IPM_MAX_ITER

__all__ = ["DEFAULT_TUNING", "DUAL_IPM_MAX_ITER", "Tuning", "as_tuning"]

#: PERFORMANCE: the Leontief dual interior point's iterations before the conic fallback
DUAL_IPM_MAX_ITER = 80


@dataclass(frozen=True)
class Tuning:
    """Performance knobs of the market solve plans (none changes an answer).

    Parameters
    ----------
    ipm_max_iter : int
        Iterations of the interior point on a linear market's prices (the ``ipm`` step and the
        restricted markets' ``restricted-ipm``; `fairalloc.markets.ipm`) before it gives up
        and the plan hands over to the conic backend (``0``: it hands over at once; tests
        drive the hand-over with it).
    dual_max_iter : int
        Iterations of a static Leontief market's dual interior point (the ``dual`` step,
        `fairalloc.markets.leontief`) before the plan hands over to the conic backend
        (``0``: it hands over at once).
    restricted : bool
        A linear market's fast path first tries the restricted markets of each buyer's
        cheapest edges (column generation) when they keep at most half of the edges;
        ``False``: the whole market by the interior point (where it fits) or the conic
        backend.
    near_tie_share : float
        Buyers whose utility (or demand) rows agree within this share of ``gap_tol``
        (relative, entry by entry: ``1e-8`` at the default ``gap_tol``) are solved as one
        near class first (``near-symmetry:<classes>``, `fairalloc.markets.symmetry`), kept
        only if the expansion certifies on the original market; the same rule as
        `fairalloc.throughput.Tuning.near_tie_share`. ``0`` turns near classes off.

    Examples
    --------
    >>> import fairalloc as fa
    >>> r = fa.fisher_market([[1.0, 2.0], [2.0, 1.0]], method="fast",
    ...                      tuning=Tuning(ipm_max_iter=0, restricted=False))
    >>> "conic" in r.stats.path, r.stats.fallbacks[0], r.certificate.ok
    (True, 'ipm->conic: the interior-point method did not converge', True)
    """

    ipm_max_iter: int = IPM_MAX_ITER
    dual_max_iter: int = DUAL_IPM_MAX_ITER
    restricted: bool = True
    near_tie_share: float = 0.01

    def __post_init__(self) -> None:
        check_knobs(self)


#: the defaults
DEFAULT_TUNING = Tuning()


def as_tuning(value: Any) -> Tuning:
    """``value`` as a market `Tuning` (``None``: the defaults); anything else is an InputError.

    Examples
    --------
    >>> as_tuning(None) is DEFAULT_TUNING
    True
    """
    return as_tuning_value(value, Tuning, DEFAULT_TUNING, "fairalloc.markets.Tuning")  # type: ignore[no-any-return]
