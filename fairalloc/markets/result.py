"""The result of an Eisenberg-Gale market solve (`fairalloc.MarketResult`)."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .._display import Table, labelled, price_table
from ..results import Result, fill_labels, require_pandas

__all__ = ["MarketResult"]


@dataclass(frozen=True, repr=False)
class MarketResult(Result):
    """Equilibrium of an Eisenberg-Gale market.

    Parameters
    ----------
    allocation : ndarray, shape (n, m) or (n, m, T)
        ``allocation[i, j(, t)]``: amount of good ``j`` (in round ``t``) bought by buyer ``i``.
        ``x`` is the same array (the name every result shares).
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
    ids : tuple
        The buyers' ids (rows of ``allocation``): the market's ``ids=``, default ``0..n-1``.
    goods : tuple
        The goods' names (columns of ``allocation`` and ``prices``): the market's ``goods=``,
        default ``0..m-1``.
    status : Status
        ``OPTIMAL`` only when ``certificate`` passed (`fairalloc.Result`).
    stats : SolveStats
        How it was computed (``stats.path``: the steps that ran).
    certificate : Certificate
        The independent optimality certificate of ``objective``.

    Notes
    -----
    ``to_frame()`` and the notebook view label rows by ``ids`` and columns by ``goods``.

    Examples
    --------
    >>> import fairalloc as fa
    >>> r = fa.fisher_market([[2.0, 1.0], [1.0, 2.0]], [1.0, 1.0], [1.0, 1.0])
    >>> r.allocation.round(6).tolist(), r.prices.round(6).tolist()
    ([[1.0, 0.0], [0.0, 1.0]], [1.0, 1.0])
    >>> r.spending.round(6).tolist(), r.certificate.ok
    ([1.0, 1.0], True)
    """

    allocation: np.ndarray
    prices: np.ndarray
    utility: np.ndarray
    budget: np.ndarray
    spending: np.ndarray
    ids: tuple[Hashable, ...] = ()
    goods: tuple[Hashable, ...] = ()

    LABEL_FIELDS: ClassVar[tuple[str, ...]] = ("ids", "goods")

    def __post_init__(self) -> None:
        n, m = self.allocation.shape[:2]
        fill_labels(self, ids=n, goods=m)
        super().__post_init__()

    @property
    def x(self) -> np.ndarray:
        """Alias of ``allocation`` (the name every result shares; the same object, not a
        copy)."""
        return self.allocation

    def _facts(self) -> list[tuple[str, str]]:
        shape = self.allocation.shape
        sizes = [("buyers", str(shape[0])), ("goods", str(shape[1]))]
        if len(shape) == 3:
            sizes.append(("rounds", str(shape[2])))
        return [*sizes, *super()._facts()]

    def _tables(self) -> list[Table]:
        return [labelled("allocation (amount of each good)", "buyer", self.ids, self.goods,
                         self.allocation, extra=[("budget", self.budget),
                                                 ("utility", self.utility)]),
                price_table(self.prices, self.goods)]

    def to_frame(self) -> Any:
        """One row per buyer (index: ``ids``): budget, utility, spending, then ``x[good]``.

        For a volatile market the allocation columns are ``x[good,round]``.
        """
        pd = require_pandas()
        base = pd.DataFrame({"budget": self.budget, "utility": self.utility,
                             "spending": self.spending},
                            index=pd.Index(list(self.ids), name="buyer"))
        n = self.allocation.shape[0]
        if self.allocation.ndim == 2:
            cols = [f"x[{g}]" for g in self.goods]
        else:
            T = self.allocation.shape[2]
            cols = [f"x[{g},{t}]" for g in self.goods for t in range(T)]
        alloc = pd.DataFrame(self.allocation.reshape(n, -1), columns=cols, index=base.index)
        return pd.concat([base, alloc], axis=1)
