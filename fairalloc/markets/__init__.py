"""Eisenberg-Gale markets: linear and Leontief, static and over time (volatile).

* :mod:`fairalloc.markets.fisher` -- the public builder and functions (:class:`FisherMarket`,
  :func:`fisher_market`, :func:`volatile_fisher_market`, :class:`MarketResult`);
* :mod:`fairalloc.markets.engine` -- the one Eisenberg-Gale engine (edge form, dual
  certificate, conic solve, polishes), also used by partial allocation;
* :mod:`fairalloc.markets.ipm` -- the batched interior-point method for many small markets;
* :mod:`fairalloc.markets.warm` -- warm-started certified searches and batched
  leave-one-out markets (partial allocation).
"""

from .fisher import FisherMarket, MarketResult, fisher_market, volatile_fisher_market

__all__ = ["FisherMarket", "MarketResult", "fisher_market", "volatile_fisher_market"]
