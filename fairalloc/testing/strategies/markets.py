"""Markets (Eisenberg-Gale; Shockwave App. C-D): utilities, budgets, supplies, whole markets."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ..._validation import as_option
from ...errors import InputError
from ._common import (
    Range,
    Size,
    array_code,
    as_count,
    density_permille,
    fmt_array,
    plural,
    reals,
    size_bounds,
    sparse_positive,
    value_draws,
    value_range,
)


# ============================================================================================
# markets (Eisenberg-Gale; Shockwave App. C-D)
# ============================================================================================
def utilities(*, n: Size = (1, 6), m: Size = (1, 4), rounds: Size | None = None,
              values: Range = (0.1, 10.0), density: float = 0.6,
              integers: bool = False) -> st.SearchStrategy[np.ndarray]:
    """Non-negative utilities (or Leontief demands) where every buyer values something.

    Parameters
    ----------
    n, m : int or (int, int)
        Buyers and goods.
    rounds : int or (int, int), optional
        Rounds ``T`` of a market over time: the array is then (n, m, T) and every buyer values
        something in some round.
    values : (float, float)
        Range of the non-zero entries (positive; entries shrink towards ``1``).
    density : float
        Roughly the fraction of non-zero entries (each buyer always has one).
    integers : bool
        Draw integer-valued entries (easier to read in counterexamples).

    Returns
    -------
    SearchStrategy of ndarray
    """
    nlo, nhi = size_bounds(n, "n")
    mlo, mhi = size_bounds(m, "m")
    rr = None if rounds is None else size_bounds(rounds, "rounds")
    lo, hi = value_range(values, "values")
    zero = density_permille(density)
    vals = value_draws(lo, hi, bool(integers))

    @st.composite
    def draw_utilities(draw: st.DrawFn) -> np.ndarray:
        nn = draw(st.integers(nlo, nhi))
        mm = draw(st.integers(mlo, mhi))
        shape = (nn, mm) if rr is None else (nn, mm, draw(st.integers(*rr)))
        return sparse_positive(draw, shape, vals, zero)

    return draw_utilities()


def budgets(n: int, *, values: Range = (0.1, 10.0), equal: bool = False
            ) -> st.SearchStrategy[np.ndarray]:
    """Positive budgets (priority weights) for ``n`` buyers; ``equal=True`` gives ones.

    Budgets shrink towards ``1`` (equal budgets, the classic definitions).
    """
    nn = as_count(n, "n")
    if equal:
        return st.just(np.ones(nn))
    lo, hi = value_range(values, "values")
    return arrays(np.float64, nn, elements=reals(lo, hi))


def supplies(shape: int | tuple[int, ...], *, values: Range = (0.2, 5.0)
             ) -> st.SearchStrategy[np.ndarray]:
    """Positive supply of every good (and round): shape (m,) or (m, T); shrinks to ones."""
    shp = (shape,) if isinstance(shape, int | np.integer) else tuple(shape)
    if not shp or any(not isinstance(s, int | np.integer) or s < 1 for s in shp):
        raise InputError(f"shape must be positive ints, got {shape!r}", argument="shape")
    lo, hi = value_range(values, "values")
    return arrays(np.float64, tuple(int(s) for s in shp), elements=reals(lo, hi))


@dataclass(frozen=True, eq=False)
class MarketInstance:
    """A Fisher market: what a market policy ``policy(utility, budget, supply)`` is given.

    Attributes
    ----------
    utility : ndarray, shape (n, m) or (n, m, T)
        Linear utilities, or Leontief demands (``kind="leontief"``).
    budget : ndarray, shape (n,)
    supply : ndarray, shape (m,) or (m, T)
    kind : {"linear", "leontief"}
    """

    utility: np.ndarray
    budget: np.ndarray
    supply: np.ndarray
    kind: str = "linear"

    @property
    def n(self) -> int:
        """Number of buyers."""
        return int(self.utility.shape[0])

    def args(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Fresh copies of ``(utility, budget, supply)`` to call a policy with."""
        return self.utility.copy(), self.budget.copy(), self.supply.copy()

    def key(self) -> bytes:
        """Bytes that identify the instance (for caching policy outputs)."""
        return b"|".join([repr(self.utility.shape).encode(), self.utility.tobytes(),
                          self.budget.tobytes(), self.supply.tobytes(), self.kind.encode()])

    def with_row(self, agent: int, row: np.ndarray) -> MarketInstance:
        """The same market with buyer ``agent``'s utility row replaced (a misreport)."""
        u = self.utility.copy()
        u[agent] = row
        return MarketInstance(u, self.budget, self.supply, self.kind)

    def describe(self) -> str:
        """The instance, one array per line, as numpy prints it."""
        rounds = "" if self.utility.ndim == 2 else f" over {self.utility.shape[2]} rounds"
        pad = " " * 12
        return "\n".join([
            f"market ({self.kind} utilities{rounds}; {plural(self.n, 'buyer')}, "
            f"{plural(self.utility.shape[1], 'good')})",
            "  utility = " + fmt_array(self.utility).replace("\n", "\n" + pad),
            "  budget  = " + fmt_array(self.budget),
            "  supply  = " + fmt_array(self.supply).replace("\n", "\n" + pad),
        ])

    def as_code(self, name: str = "policy") -> str:
        """A Python call that reproduces the policy's input."""
        return (f"{name}({array_code(self.utility)}, {array_code(self.budget)}, "
                f"{array_code(self.supply)})")


def market_instances(*, kind: str = "linear", n: Size = (1, 5), m: Size = (1, 4),
                     rounds: Size | None = None, values: Range = (0.1, 10.0),
                     density: float = 0.6, integers: bool = False,
                     budget_values: Range = (0.1, 10.0), equal_budgets: bool = False,
                     supply_values: Range = (0.2, 5.0)) -> st.SearchStrategy[MarketInstance]:
    """Whole markets: utilities (or Leontief demands), budgets and supplies.

    ``kind`` is ``"linear"`` or ``"leontief"`` (the utilities are then the demands
    ``a_ij``); ``rounds`` makes a market over time (Shockwave's volatile market). The other
    arguments are those of `fairalloc.testing.strategies.utilities`,
    `fairalloc.testing.strategies.budgets` and
    `fairalloc.testing.strategies.supplies`.

    Examples
    --------
    >>> from fairalloc.testing.strategies import minimal
    >>> inst = minimal(market_instances(n=2, m=2))
    >>> inst.utility.shape, inst.budget.tolist(), inst.supply.tolist()
    ((2, 2), [1.0, 1.0], [1.0, 1.0])
    """
    kind = as_option(kind, "kind", ("linear", "leontief"))
    util = utilities(n=n, m=m, rounds=rounds, values=values, density=density,
                     integers=integers)
    if not equal_budgets:
        value_range(budget_values, "budget_values")
    value_range(supply_values, "supply_values")

    @st.composite
    def draw_market(draw: st.DrawFn) -> MarketInstance:
        u = draw(util)
        b = draw(budgets(u.shape[0], values=budget_values, equal=equal_budgets))
        s = draw(supplies(u.shape[1:], values=supply_values))
        return MarketInstance(u, b, s, kind)

    return draw_market()


def leontief_markets(*, n: Size = (1, 5), m: Size = (1, 4), rounds: Size | None = None,
                     values: Range = (0.1, 10.0), density: float = 0.6, integers: bool = False,
                     budget_values: Range = (0.1, 10.0), equal_budgets: bool = False,
                     supply_values: Range = (0.2, 5.0)) -> st.SearchStrategy[MarketInstance]:
    """`fairalloc.testing.strategies.market_instances` with ``kind="leontief"``:
    utility rows are demand vectors (the other arguments as there)."""
    return market_instances(kind="leontief", n=n, m=m, rounds=rounds, values=values,
                            density=density, integers=integers, budget_values=budget_values,
                            equal_budgets=equal_budgets, supply_values=supply_values)


def volatile_markets(*, rounds: Size = (2, 3), n: Size = (1, 4), m: Size = (1, 3),
                     kind: str = "linear", values: Range = (0.1, 10.0), density: float = 0.6,
                     integers: bool = False, budget_values: Range = (0.1, 10.0),
                     equal_budgets: bool = False, supply_values: Range = (0.2, 5.0)
                     ) -> st.SearchStrategy[MarketInstance]:
    """Markets over time (Shockwave App. D): utility (n, m, T), supply (m, T) (the other
    arguments as for `fairalloc.testing.strategies.market_instances`)."""
    return market_instances(kind=kind, rounds=rounds, n=n, m=m, values=values,
                            density=density, integers=integers, budget_values=budget_values,
                            equal_budgets=equal_budgets, supply_values=supply_values)
