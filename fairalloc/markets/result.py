"""The result of an Eisenberg-Gale market solve (:class:`MarketResult`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..results import Result, require_pandas

__all__ = ["MarketResult"]


@dataclass(frozen=True, repr=False)
class MarketResult(Result):
    """Equilibrium of an Eisenberg-Gale market.

    Attributes
    ----------
    allocation : ndarray, shape (n, m) or (n, m, T)
        ``allocation[i, j(, t)]``: amount of good ``j`` (in round ``t``) bought by buyer ``i``.
    prices : ndarray, shape (m,) or (m, T)
        Equilibrium prices: non-negative multipliers of the supply constraints
        (``d OPT / d supply``); zero exactly on goods that are not sold out.
    utility : ndarray, shape (n,)
        Each buyer's utility ``U_i`` (summed over rounds in a volatile market).
    budget : ndarray, shape (n,)
        The budgets the market was solved with.
    spending : ndarray, shape (n,)
        ``sum_j prices_j * allocation_ij``: what each buyer pays (equals its budget at
        equilibrium, up to the certified gap).
    objective : float
        ``sum_i B_i log U_i``.
    """

    allocation: np.ndarray
    prices: np.ndarray
    utility: np.ndarray
    budget: np.ndarray
    spending: np.ndarray

    def to_frame(self) -> Any:
        """One row per buyer: budget, utility, spending and the allocation of each good.

        For a volatile market the allocation columns are ``(good, round)`` pairs.
        """
        pd = require_pandas()
        base = pd.DataFrame({"budget": self.budget, "utility": self.utility,
                             "spending": self.spending})
        base.index.name = "buyer"
        n = self.allocation.shape[0]
        if self.allocation.ndim == 2:
            cols = [f"x[{j}]" for j in range(self.allocation.shape[1])]
        else:
            m, T = self.allocation.shape[1:]
            cols = [f"x[{j},{t}]" for j in range(m) for t in range(T)]
        alloc = pd.DataFrame(self.allocation.reshape(n, -1), columns=cols)
        return pd.concat([base, alloc], axis=1)
