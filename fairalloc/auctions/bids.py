"""Themis bid tables: an app's bids for an offer of GPUs, by placement class (§3.2, §4.3.3)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import as_array, as_positive_int
from ..errors import FairallocError, InputError
from ..results import readonly, require_pandas
from .valuations import LEVELS, Topology, _slowdown_levels

__all__ = ["BidTable", "bid_table"]

#: ACCURACY contract: a bid counts as better than another bid (or than winning nothing) only
#: when its valuation is higher by more than this relative margin (rounding of ``1/rho``).
VALUE_REL_TOL = 1e-12


# ============================================================================================
# bid tables over placement classes
# ============================================================================================
@dataclass(frozen=True, init=False)
class BidTable:
    """An app's bids for GPUs of one offer, by placement class (Themis §3.2, Table 2).

    Bid ``b`` asks for ``gpus[b]`` of the offered GPUs placed so that, together with the GPUs
    the app already holds, they lie on one machine (``level 0``), one rack (``1``) or anywhere
    (``2``); the app's finish-time fairness would then be ``rho[b]`` (valuation ``1/rho``).
    ``rho_empty`` is ``rho_old``: its fairness if it wins nothing (``inf`` when it holds no
    GPU and has work left, i.e. valuation 0).

    Parameters
    ----------
    gpus : array_like of int, shape (b,)
        GPUs asked for (>= 1).
    level : array_like of int, shape (b,)
        Placement level of each bid (0, 1 or 2).
    rho : array_like, shape (b,)
        Finish-time fairness of each bid (positive, finite).
    rho_empty : float
        Finish-time fairness with no new GPUs (positive, or ``inf``).
    home_machine, home_rack : int
        Machine / rack the app's held GPUs are on (``-1``: none held, or spread over several).
        A level-0 bid must then be met on ``home_machine``, a level-1 bid in ``home_rack``.

    Examples
    --------
    Table 2 of the paper, as placement classes: one GPU for rho 1/2, two on one machine for
    rho 1/4.

    >>> t = BidTable([1, 2], [0, 0], [0.5, 0.25], rho_empty=1.0)
    >>> t.value.tolist(), t.value_empty
    ([2.0, 4.0], 1.0)
    """

    gpus: np.ndarray
    level: np.ndarray
    rho: np.ndarray
    rho_empty: float
    home_machine: int
    home_rack: int

    def __init__(self, gpus: Any, level: Any, rho: Any, *, rho_empty: float = math.inf,
                 home_machine: int = -1, home_rack: int = -1) -> None:
        g = as_array(gpus, "gpus", ndim=1, positive=True, integer=True, allow_empty=True)
        b = g.size
        lev = as_array(level, "level", ndim=1, shape=(b,), integer=True, allow_empty=True)
        if np.any(lev > 2):
            j = int(np.flatnonzero(lev > 2)[0])
            raise InputError(f"level[{j}] is {lev[j]:g}; levels are 0 (machine), 1 (rack), "
                             "2 (anywhere)", argument="level", index=(j,))
        r = as_array(rho, "rho", ndim=1, shape=(b,), positive=True, allow_empty=True)
        re = _rho_empty(rho_empty)
        for name, v in (("home_machine", home_machine), ("home_rack", home_rack)):
            if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < -1:
                raise InputError(f"{name} must be an integer >= -1, got {v!r}", argument=name)
        gi = g.astype(np.int64)
        li = lev.astype(np.int64)
        for arr in (gi, li):
            arr.flags.writeable = False
        object.__setattr__(self, "gpus", gi)
        object.__setattr__(self, "level", li)
        object.__setattr__(self, "rho", r)
        object.__setattr__(self, "rho_empty", re)
        object.__setattr__(self, "home_machine", int(home_machine))
        object.__setattr__(self, "home_rack", int(home_rack))

    @property
    def value(self) -> np.ndarray:
        """Valuation ``1 / rho`` of each bid (read-only)."""
        return readonly(1.0 / self.rho)

    @property
    def value_empty(self) -> float:
        """Valuation of winning nothing (0 when ``rho_empty`` is infinite)."""
        return 0.0 if math.isinf(self.rho_empty) else 1.0 / self.rho_empty

    def __len__(self) -> int:
        return int(self.gpus.size)

    def to_frame(self) -> Any:
        """The table as a DataFrame: gpus, placement, rho, value."""
        pd = require_pandas()
        return pd.DataFrame({"gpus": self.gpus, "placement": [LEVELS[k] for k in self.level],
                             "rho": self.rho, "value": self.value})

    def __repr__(self) -> str:
        return (f"BidTable({len(self)} bids, rho_empty={self.rho_empty:.4g}, "
                f"home_machine={self.home_machine}, home_rack={self.home_rack})")


def _rho_empty(value: Any) -> float:
    """``rho_empty``: a positive number or ``inf`` (no GPU and work left)."""
    if isinstance(value, bool | np.bool_ | str | bytes) or (
            isinstance(value, np.ndarray) and value.ndim != 0):
        raise InputError(f"rho_empty must be a number, got {value!r}", argument="rho_empty")
    try:
        re = float(value)
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"rho_empty must be a number, got {value!r}",
                         argument="rho_empty") from None
    if not re > 0 or math.isnan(re):
        raise InputError(f"rho_empty must be positive (or inf), got {value!r}",
                         argument="rho_empty")
    return re


def _call_rho(rho: Callable[..., Any], k: np.ndarray, s: np.ndarray) -> np.ndarray:
    """The caller's ``rho(k, s)`` as a float array of ``k``'s shape: positive (``inf``
    allowed), never NaN. Whatever goes wrong is an InputError naming ``rho``."""
    try:
        out = rho(k, s)
        r = np.array(out, dtype=float).reshape(k.shape) if np.size(out) == k.size else None
    except FairallocError:
        raise
    except Exception as exc:
        raise InputError(f"rho(num_gpus, slowdown) raised {type(exc).__name__}: {exc}",
                         argument="rho") from exc
    if r is None:
        raise InputError(f"rho(num_gpus, slowdown) must return one value per allocation "
                         f"({k.size}), got {np.size(out)}", argument="rho")
    bad = np.isnan(r) | (r <= 0)
    if bad.any():
        j = int(np.flatnonzero(bad.ravel())[0])
        raise InputError(f"rho(num_gpus={int(k.ravel()[j])}, slowdown={s.ravel()[j]:g}) is "
                         f"{r.ravel()[j]!r}; finish-time fairness must be positive (or inf)",
                         argument="rho")
    return r


def bid_table(
    rho: Callable[[np.ndarray, np.ndarray], Any],
    topology: Topology,
    offer: Any,
    *,
    held: Any = None,
    max_gpus: int | None = None,
    slowdown: Any = None,
) -> BidTable:
    """Enumerate an app's bids for an offer by placement class (Themis §3.2, §4.3.3).

    Instead of all ``2^g`` subsets of the offered GPUs, the app bids once per *class*: ``k``
    GPUs that, with the GPUs it holds, lie on one machine, one rack or anywhere. Its
    valuation depends only on the class (``rho(held + k, S(level))``, with the placement
    slowdown ``S`` of the level), so the class table is exact. Classes that cannot be met by
    the offer, and classes dominated by another (fewer GPUs, looser placement, at least the
    same value) or not better than winning nothing, are left out.

    Parameters
    ----------
    rho : callable
        ``rho(num_gpus, slowdown)`` -> finish-time fairness, vectorised over arrays of total
        GPU counts and slowdowns (e.g. ``functools.partial`` of
        `fairalloc.single_job_rho`, or an app model's ``rho``).
    topology : Topology
    offer : array_like
        The offered GPUs (boolean mask (g,) or list of GPU ids).
    held : array_like, optional
        GPUs the app already holds (disjoint from ``offer``).
    max_gpus : int, optional
        Most new GPUs worth bidding for (e.g. the app's remaining demand); default: the offer.
    slowdown : array_like, shape (3,), optional
        The app's slowdown on one machine / one rack / across racks; default ``(1, 1.1, 1.3)``.

    Returns
    -------
    BidTable

    Examples
    --------
    >>> from functools import partial
    >>> from fairalloc.auctions import Topology, single_job_rho
    >>> t = Topology.uniform(2, 4)                       # two 4-GPU machines, one rack
    >>> f = partial(single_job_rho, iter_total=100, iter_left=100, iter_time_serial=4.0,
    ...             job_demand_max=4, cluster_gpus=8, contention=2)
    >>> bids = bid_table(lambda g, s: f(g, slowdown=s), t, list(range(8)))
    >>> list(zip(bids.gpus.tolist(), bids.level.tolist(), bids.rho.round(3).tolist()))
    [(1, 0, 2.0), (2, 0, 1.0), (2, 1, 1.1), (3, 0, 0.667), (3, 1, 0.733), (4, 0, 0.5), (4, 1, 0.55)]
    """
    if not isinstance(topology, Topology):
        raise InputError(f"topology must be a Topology, got {type(topology).__name__}",
                         argument="topology")
    if not callable(rho):
        raise InputError("rho must be a callable rho(num_gpus, slowdown)", argument="rho")
    S = _slowdown_levels(slowdown)
    off = topology.mask(offer, "offer")
    if off.ndim != 1:
        raise InputError("offer must be one GPU set", argument="offer")
    hold = np.zeros_like(off) if held is None else topology.mask(held, "held")
    if hold.ndim != 1:
        raise InputError("held must be one GPU set", argument="held")
    if np.any(off & hold):
        j = int(np.flatnonzero(off & hold)[0])
        raise InputError(f"GPU {j} is both offered and held", argument="held", index=(j,))
    n_off = int(off.sum())
    kmax = n_off if max_gpus is None else min(n_off, as_positive_int(max_gpus, "max_gpus",
                                                                       allow_zero=True))
    H = topology.num_machines
    free_m = np.bincount(topology.machine[off], minlength=H)
    free_r = np.bincount(topology.rack, weights=free_m, minlength=topology.num_racks)
    n_held = int(hold.sum())
    held_machines = np.unique(topology.machine[hold])
    held_racks = np.unique(topology.gpu_rack[hold])
    home_m = int(held_machines[0]) if held_machines.size == 1 else -1
    home_r = int(held_racks[0]) if held_racks.size == 1 else -1
    held_level = topology.level(hold) if n_held else 0
    # largest k each level can take: level 0 on the home machine (any machine if none held)
    cap0 = (free_m[home_m] if home_m >= 0 else free_m.max(initial=0)) if held_machines.size <= 1 \
        else 0
    cap1 = (free_r[home_r] if home_r >= 0 else free_r.max(initial=0)) if held_racks.size <= 1 \
        else 0
    caps = np.array([cap0, cap1, n_off])
    rho_empty = float(_call_rho(rho, np.array([n_held]), np.array([S[held_level]]))[0])
    if kmax == 0:
        return BidTable([], [], [], rho_empty=rho_empty, home_machine=home_m, home_rack=home_r)
    k = np.arange(1, kmax + 1)
    K, L = np.meshgrid(k, np.arange(3), indexing="ij")  # (kmax, 3)
    feasible = (K <= caps[None, :]) & (L >= held_level)
    if n_held == 0:
        feasible[0, 1:] = False  # one GPU is always on one machine
    if topology.num_racks == 1:
        feasible[:, 2] = False  # "anywhere" is "one rack"
    if topology.num_machines == topology.num_racks:
        feasible[:, 1] &= ~feasible[:, 0]  # one machine per rack: rack-level = machine-level
    r = _call_rho(rho, n_held + K.ravel(), S[L.ravel()]).reshape(K.shape)
    with np.errstate(divide="ignore"):
        v = np.where(feasible, 1.0 / r, -np.inf)
    # dominance: (k', l') with k' <= k, l' >= l and value >= v(k, l) (strictly smaller k or l)
    looser = np.maximum.accumulate(v[:, ::-1], axis=1)[:, ::-1]  # max over l' >= l, same k
    prev = np.vstack([np.full((1, 3), -np.inf), np.maximum.accumulate(looser, axis=0)[:-1]])
    same_k = np.c_[looser[:, 1:], np.full(kmax, -np.inf)]  # l' > l, same k
    dominated = np.maximum(prev, same_k) >= v * (1 - VALUE_REL_TOL)
    empty_v = 0.0 if math.isinf(rho_empty) else 1.0 / rho_empty
    keep = feasible & ~dominated & (v > empty_v * (1 + VALUE_REL_TOL)) & np.isfinite(r)
    kk, ll = np.nonzero(keep)
    return BidTable(k[kk], ll, r[kk, ll], rho_empty=rho_empty, home_machine=home_m,
                    home_rack=home_r)

