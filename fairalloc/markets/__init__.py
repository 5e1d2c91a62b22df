"""Eisenberg-Gale markets: linear and Leontief, static and over time (volatile).

* `fairalloc.markets.fisher` -- the composable builder `fairalloc.FisherMarket`;
* `fairalloc.markets.functions` -- `fairalloc.fisher_market` and
  `fairalloc.volatile_fisher_market`;
* `fairalloc.markets.result` -- `fairalloc.MarketResult`;
* `fairalloc.markets.engine` -- the one Eisenberg-Gale engine (edge form, dual
  certificate, conic solve, polishes), also used by partial allocation;
* `fairalloc.markets.ipm` -- the batched interior-point method for many small markets;
* `fairalloc.markets.tuning` -- `fairalloc.markets.Tuning`, the solve plans' knobs;
* `fairalloc.markets.warm` -- warm-started certified searches and batched
  leave-one-out markets (partial allocation).
"""

from .fisher import FisherMarket
from .functions import fisher_market, volatile_fisher_market
from .result import MarketResult
from .tuning import Tuning

__all__ = ["FisherMarket", "MarketResult", "Tuning", "fisher_market", "volatile_fisher_market"]
