"""Themis (§3.2-3.3): topologies, bid tables, auctions."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ...errors import InputError
from ._common import (
    Range,
    Size,
    as_count,
    reals,
    size_bounds,
    value_range,
)


# ============================================================================================
# Themis: topologies, bid tables, auctions (Themis §3.2-3.3)
# ============================================================================================
def topologies(*, machines: Size = (1, 4), gpus_per_machine: Size = (1, 4),
               racks: Size = (1, 2)) -> st.SearchStrategy[Any]:
    """`fairalloc.Topology`: machines of varying GPU counts in racks.

    Racks are consecutive blocks of machines and never empty (at most one per machine).
    """
    from ...auctions import Topology

    hlo, hhi = size_bounds(machines, "machines")
    glo, ghi = size_bounds(gpus_per_machine, "gpus_per_machine")
    rlo, rhi = size_bounds(racks, "racks")

    @st.composite
    def draw_topology(draw: st.DrawFn) -> Topology:
        h = draw(st.integers(hlo, hhi))
        per = draw(arrays(np.int64, h, elements=st.integers(glo, ghi)))
        r = draw(st.integers(min(rlo, h), min(rhi, h)))
        return Topology(np.repeat(np.arange(h), per), np.arange(h) * r // h)

    return draw_topology()


def bid_tables(*, max_gpus: int = 8, bids: Size = (0, 5), rho: Range = (0.1, 10.0),
               topology: Any = None) -> st.SearchStrategy[Any]:
    """Themis bid tables (`fairalloc.BidTable`).

    Each bid asks for ``1..max_gpus`` GPUs at placement level 0 (one machine), 1 (one rack)
    or 2 (anywhere) with a finish-time fairness ``rho`` drawn from ``rho``; the app's
    ``rho_empty`` is either infinite (it holds no GPU) or above every bid's ``rho`` (winning
    GPUs helps). With a ``topology`` the app may hold GPUs on a home machine (and its rack).
    """
    from ...auctions import BidTable

    top = as_count(max_gpus, "max_gpus")
    blo, bhi = size_bounds(bids, "bids", minimum=0)
    lo, hi = value_range(rho, "rho")
    if topology is not None:
        from ...auctions import Topology

        if not isinstance(topology, Topology):
            raise InputError(f"topology must be a Topology, got {type(topology).__name__}",
                             argument="topology")

    @st.composite
    def draw_table(draw: st.DrawFn) -> BidTable:
        b = draw(st.integers(blo, bhi))
        gpus = draw(arrays(np.int64, b, elements=st.integers(1, top)))
        level = draw(arrays(np.int64, b, elements=st.integers(0, 2)))
        r = draw(arrays(np.float64, b, elements=reals(lo, hi)))
        home_m = home_r = -1
        if topology is not None and draw(st.booleans()):
            home_m = draw(st.integers(0, topology.num_machines - 1))
            home_r = int(topology.rack[home_m])
        if home_m < 0 and draw(st.booleans()):
            empty = math.inf
        else:  # holds GPUs (or is waiting with a finite rho): winning must help
            worst = float(r.max()) if b else lo
            empty = worst * draw(reals(1.0, 4.0, exclude_min=True))
        return BidTable(gpus, level, r, rho_empty=empty, home_machine=home_m,
                        home_rack=home_r)

    return draw_table()


@dataclass(frozen=True, eq=False)
class AuctionInstance:
    """Inputs of `fairalloc.gpu_auction`: one bid table per
    app."""

    bids: tuple[Any, ...]
    topology: Any
    offer: np.ndarray

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``gpu_auction``."""
        return {"bids": list(self.bids), "topology": self.topology, "offer": self.offer}


def auction_instances(*, n: Size = (1, 3), bids: Size = (1, 4), rho: Range = (0.1, 10.0),
                      machines: Size = (1, 4), gpus_per_machine: Size = (1, 4),
                      racks: Size = (1, 2)) -> st.SearchStrategy[AuctionInstance]:
    """A topology (`fairalloc.testing.strategies.topologies`, with ``machines``,
    ``gpus_per_machine`` and ``racks``), a non-empty offer of its GPUs and ``n`` apps' bid tables
    for it."""
    nlo, nhi = size_bounds(n, "n")
    topo = topologies(machines=machines, gpus_per_machine=gpus_per_machine, racks=racks)

    @st.composite
    def draw_auction(draw: st.DrawFn) -> AuctionInstance:
        t = draw(topo)
        g = t.num_gpus
        mask = draw(arrays(np.bool_, g, elements=st.booleans()))
        mask[draw(st.integers(0, g - 1))] = True
        offer = np.flatnonzero(mask)
        k = draw(st.integers(nlo, nhi))
        tables = tuple(draw(bid_tables(max_gpus=int(offer.size), bids=bids, rho=rho,
                                       topology=t)) for _ in range(k))
        return AuctionInstance(tables, t, offer)

    return draw_auction()
