"""Unit normalisation of a Fisher market: exact factors that bring its data to unit scale.

A market is solved in normalised units and mapped back (`MarketUnits`): budgets divided by
their mean, each good's supply by a power of two, each buyer's utility by a power of two and,
for Leontief utilities over rounds (volatile markets, Shockwave §4.1), each (buyer, round)
bundle by its own power of two. Powers of two are exact, so nothing is lost by the round trip.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from .engine import pow2_scale, unit_scale

__all__ = ["MIN_BUDGET_RATIO", "MarketUnits", "market_units"]

MIN_BUDGET_RATIO = 1e-300  # smallest representable budget relative to the largest


@dataclass(frozen=True)
class MarketUnits:
    """The normalisation of one market (see `market_units`).

    The equilibrium maps back as ``x = fs * x'`` (goods), ``U_i = ufac_i * U'_i``
    (utilities), ``p_r = fb * p'_r / fs_r`` (prices) and ``sum B log U = fb * (sum B' log U'
    + shift)``; a Leontief bundle level ``z'_it`` (buyer ``i``, round ``t``) is
    ``efac_it * z'_it`` units of utility.
    """

    fb: float  # budget unit (the mean budget)
    fs: np.ndarray  # (m T,) power-of-two unit of each good's supply
    ufac: np.ndarray  # (n,) power-of-two unit of each buyer's utility
    efac: np.ndarray | None  # (n, T) Leontief: utility per normalised bundle level
    u_norm: np.ndarray  # (n, m T) utilities (linear) or demands per bundle level (Leontief)
    b_norm: np.ndarray  # (n,) budgets / fb
    s_norm: np.ndarray  # (m T,) supplies / fs
    shift: float  # sum_i b_norm_i log ufac_i

    def bundle_weights(self) -> np.ndarray:
        """(Leontief) ``efac_it / ufac_i``: each bundle's utility per normalised level, in
        its buyer's normalised utility units (at most about 1)."""
        assert self.efac is not None
        return self.efac / self.ufac[:, None]


def market_units(utility: np.ndarray, budget: np.ndarray, supply: np.ndarray, kind: str
                 ) -> MarketUnits:
    """Factors that bring a market to unit scale.

    Budgets are divided by ``fb``, their mean (it becomes 1), so the normalised budgets are
    the same, to the last bit or two, in whatever unit the caller used (a power-of-two factor
    left a unit-dependent factor in [1/2, 2), and two such markets could certify different
    points within the gap tolerance). Each good's supply is divided by a power of two ``fs_r``
    (~1). Linear utilities, measured per normalised unit of goods, are divided per buyer by a
    power of two ``ufac_i`` (largest entry ~1). A Leontief bundle (buyer ``i``, round ``t``:
    goods per unit of utility) is divided by its own power of two ``g_it`` (largest demand
    ~1), so its level variable is at unit scale even when the buyer's demands in different
    rounds are 1e15 apart (a volatile market whose bundles were scaled per buyer left
    Clarabel at a relative gap of 0.83); the buyer's utility is then a weighted sum of its
    levels with weights ``g_min,i / g_it <= 1`` and ``ufac_i = 1 / g_min,i``. Quantities
    already near 1 keep factor 1 (the conic solver's iteration counts on such markets are
    unchanged); a static Leontief market (one bundle per buyer) has weights 1.

    Raises
    ------
    InputError
        When the budgets or ``utility x supply`` overflow a float, or a budget is below
        ``1e-300`` of the largest.

    Examples
    --------
    >>> import numpy as np
    >>> u = market_units(np.array([[[1e-12, 1.0]]]), np.array([3.0]), np.ones((1, 2)),
    ...                  "leontief")
    >>> u.fb, u.efac.tolist(), u.bundle_weights().tolist()
    (3.0, [[549755813888.0, 1.0]], [[1.0, 1.8189894035458565e-12]])
    """
    n = utility.shape[0]
    s = supply.reshape(-1)
    mT = s.size
    with np.errstate(all="ignore"):  # extreme data are checked explicitly below
        # mean budget ~1 (with a budget sum of 1 and many buyers the interior-point solver
        # needs more iterations)
        mean = float(np.mean(budget / np.max(budget))) * float(np.max(budget))
        fb = float(unit_scale(mean))
        fs = pow2_scale(s)
        efac = None
        if kind == "linear":
            per_unit = utility.reshape(n, mT) * fs  # per normalised unit
            ufac = pow2_scale(np.max(np.where(s > 0, per_unit, 0.0), axis=1))
            u_norm = per_unit / ufac[:, None]
        else:
            T = utility.shape[2] if utility.ndim == 3 else 1
            demand = (utility.reshape(n, mT) / fs).reshape(n, mT // T, T)  # goods per utility
            g = pow2_scale(np.max(demand, axis=1))  # (n, T): one factor per bundle
            valued = np.max(demand, axis=1) > 0
            gmin = np.min(np.where(valued, g, np.inf), axis=1)
            gmin = np.where(np.isfinite(gmin), gmin, 1.0)  # a buyer valuing nothing: error later
            # a bundle with no demand (a round in which the buyer needs nothing: its level is
            # fixed at 0, `FisherMarket._usable_rounds`) takes its buyer's unit, so its weight
            # is 1, not gmin (a weight of 2^51 on a variable fixed at 0 left an entry of
            # 2.3e15 in the conic program, on which Clarabel stopped 3.2 off the optimum)
            g = np.where(valued, g, gmin[:, None])
            ufac = 1.0 / gmin
            efac = 1.0 / g
            u_norm = (demand / g[:, None, :]).reshape(n, mT)
        b_norm = budget / fb
    if not np.isfinite(fb):
        raise InputError("the budgets exceed the float range", argument="budget")
    tiny = ~(budget >= MIN_BUDGET_RATIO * np.max(budget)) | ~(b_norm > 0)
    if tiny.any():
        i = int(np.flatnonzero(tiny)[0])
        raise InputError(f"budget[{i}] = {budget[i]:g} is too small next to the "
                         "largest budget to be represented (ratio below 1e-300)",
                         argument="budget", index=(i,))
    factors = ufac if efac is None else np.concatenate([ufac, efac.ravel()])
    if not (np.all(np.isfinite(u_norm)) and np.all(np.isfinite(factors))
            and np.all(factors > 0)):
        raise InputError("utility and supply are too far apart in scale to be represented "
                         "(utility x supply overflows a float)", argument="utility")
    return MarketUnits(fb=fb, fs=fs, ufac=ufac, efac=efac, u_norm=u_norm, b_norm=b_norm,
                       s_norm=s / fs, shift=float(b_norm @ np.log(ufac)))
