"""Eisenberg-Gale markets: linear and Leontief, static and over time (volatile).

* :mod:`fairalloc.markets.fisher` -- the composable builder :class:`FisherMarket`;
* :mod:`fairalloc.markets.functions` -- :func:`fisher_market` and
  :func:`volatile_fisher_market`;
* :mod:`fairalloc.markets.result` -- :class:`MarketResult`;
* :mod:`fairalloc.markets.engine` -- the one Eisenberg-Gale engine (edge form, dual
  certificate, conic solve, polishes), also used by partial allocation;
* :mod:`fairalloc.markets.ipm` -- the batched interior-point method for many small markets;
* :mod:`fairalloc.markets.warm` -- warm-started certified searches and batched
  leave-one-out markets (partial allocation).
"""

from .fisher import FisherMarket
from .functions import fisher_market, volatile_fisher_market
from .result import MarketResult

__all__ = ["FisherMarket", "MarketResult", "fisher_market", "volatile_fisher_market"]
