"""Partial-allocation auctions of interchangeable workers, by count (Themis §3.3.1).

When every worker of a type is interchangeable (a scheduling round: a job asks for its gang
on one type, not for particular GPUs), the set-packing program over GPU bundles is the same
as a program over worker *counts*: bidder ``a`` either gets its gang of ``size[a]`` workers
on one type ``j`` or nothing. `fairalloc.auctions.counts.count_auction`
solves that program exactly with the lexicographic Nash-welfare MILP of
`fairalloc.auctions` (PF market and every leave-one-out market) and
returns the partial-allocation fractions ``c_a`` (the hidden payments are ``1 - c_a`` of the
won gang). It is the engine of the round API's Themis round
(`fairalloc.RoundPolicy` with ``"themis"``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..results import Certificate, SolveStats
from ._pool import _solve_stats, _used
from .gpu import _milp_solver
from .nash import SetPackingColumns, _Form, _log_unit, _partial_allocation_milp

__all__ = ["CountAuction", "count_auction"]


@dataclass(frozen=True)
class CountAuction:
    """The outcome of `fairalloc.auctions.counts.count_auction`.

    Attributes
    ----------
    choice : ndarray of int, shape (num_bidders,)
        Index ``o`` (into ``bidder``/``option_type``/``value``) of the option each bidder won,
        ``-1`` for none.
    fraction : ndarray, shape (num_bidders,)
        Partial-allocation fraction ``c_a`` of the won option (0 for none).
    sumlog : float
        Nash welfare ``sum log v`` of the PF allocation over the bidders with positive value.
    optimal : bool
        Whether the PF and every leave-one-out MILP were proven optimal.
    certificate : Certificate
        The PF MILP's certificate (kind ``"milp"``), or the weakest one that is not ok.
    stats : SolveStats
        Backends, solves and ``path``/``fallbacks`` of the MILPs.
    """

    choice: np.ndarray
    fraction: np.ndarray
    sumlog: float
    optimal: bool
    certificate: Certificate
    stats: SolveStats


def count_auction(bidder: np.ndarray, option_type: np.ndarray, value: np.ndarray,
                  size: np.ndarray, capacity: np.ndarray, *, backend: Any = "highs",
                  time_limit: float | None = None) -> CountAuction:
    """Exact partial-allocation auction of interchangeable workers, by count.

    Parameters
    ----------
    bidder, option_type, value : ndarray, shape (num_options,)
        Option ``o``: bidder ``bidder[o]`` runs its gang on worker type ``option_type[o]``,
        worth ``value[o] > 0`` to it (Themis: ``1 / rho``). Bidders are ``0..num_bidders-1``.
    size : ndarray, shape (num_bidders,)
        Each bidder's gang (workers it needs on the chosen type).
    capacity : ndarray, shape (num_types,)
        Workers of each type.
    backend : str or Backend, default "highs"
        MILP backend.
    time_limit : float, optional
        Seconds per MILP.

    Returns
    -------
    CountAuction

    Examples
    --------
    >>> import numpy as np
    >>> out = count_auction(np.array([0, 1]), np.array([0, 0]), np.array([1.0, 1.0]),
    ...                     np.array([1.0, 1.0]), np.array([1.0]))
    >>> int((out.choice >= 0).sum()), out.certificate.ok  # one worker: one winner
    (1, True)
    """
    t0 = time.perf_counter()
    bidder = np.asarray(bidder, dtype=int)
    option_type = np.asarray(option_type, dtype=int)
    value = np.asarray(value, dtype=float)
    size = np.asarray(size, dtype=float)
    capacity = np.asarray(capacity, dtype=float)
    n, k, ncol = size.size, capacity.size, bidder.size
    _, log_unit = _log_unit(value)
    cols = np.arange(ncol)
    A = sp.vstack([sp.csr_matrix((np.ones(ncol), (bidder, cols)), shape=(n, ncol)),
                   sp.csr_matrix((size[bidder], (option_type, cols)), shape=(k, ncol))],
                  format="csr")
    form = _Form(agent=bidder, logv=np.log(value) - log_unit, log_empty=np.full(n, -np.inf),
                 A=A, row_lower=np.full(n + k, -np.inf), row_upper=np.r_[np.ones(n), capacity],
                 col_upper=np.ones(ncol), integrality=np.ones(ncol, dtype=bool),
                 num_agents=n, option=cols, columns=SetPackingColumns(ncol))
    mark = _used().mark()
    try:
        out = _partial_allocation_milp(form, time_limit=time_limit,
                                       solver=_milp_solver(backend), workers=1,
                                       log_unit=log_unit)
        stats = _solve_stats(mark, method="auction", t0=t0, solves=out.solves)
    finally:
        _used().cut(mark)
    return CountAuction(choice=out.pf.choice, fraction=out.fraction, sumlog=float(out.pf.sumlog),
                        optimal=bool(out.optimal), certificate=out.certificate, stats=stats)
