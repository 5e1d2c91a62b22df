"""Themis (§3.3) as a simulator policy: leases, the filter of the jobs furthest
from finish-time fairness and a partial-allocation auction of the offered GPUs
(`fairalloc.gpu_auction`).
"""

from __future__ import annotations

import math

import numpy as np

from ..._validation import (
    as_finite_float,
    as_positive_float,
    as_positive_int,
    as_time_limit,
)
from ...data import Cluster
from ...errors import InputError
from ..state import RoundState, Schedule
from ..workload import Workload
from .base import BasePolicy, greedy_pack

__all__ = ["ThemisPolicy"]

#: Themis's default fairness knob f (the paper's default)
THEMIS_FAIRNESS_KNOB = 0.8
#: default lease length in seconds (10 minutes, Themis §6.4)
THEMIS_LEASE = 600.0
#: default GPUs per server of the cluster's topology
THEMIS_GPUS_PER_SERVER = 4
#: a lease ending within this many seconds of the round's start has expired
LEASE_SLACK = 1e-9
#: PERFORMANCE: default branch-and-bound nodes per auction MILP
#: (`fairalloc.gpu_auction`'s ``node_limit``): a work limit, so a
#: simulation's auctions do not depend on the machine's speed or load. The policy's auctions
#: (one gang size per bidder) are decided by the batched exact knapsack relaxation of the PF
#: and leave-one-out markets without a MILP (all 207 / 233 auctions of the 120 / 900-job
#: Shockwave traces); the limit only bounds a pathological one.
AUCTION_NODE_LIMIT = 10_000
#: round-off margin when flooring the GPUs a bidder keeps (c_i times its bundle)
KEEP_ROUNDOFF = 1e-12

class ThemisPolicy(BasePolicy):
    """Themis's finish-time fair auction (Themis §3.3.2, Pseudocode 1) as a simulator policy.

    GPUs are leased for ``lease`` seconds. At every round the GPUs of finished jobs and of
    expired leases are offered; every active job's finish-time fairness if it ran now,
    ``rho = (elapsed + remaining) / (isolated * max(1, N w / M))`` (Themis Eq. 1: ``T_sh /
    T_id`` with ``T_id`` the run time in a ``1/N`` share of the ``M`` GPUs), ranks the jobs that
    hold no GPUs; the ``max(1, ceil((1 - f) N))`` with the largest ``rho`` bid, each for its
    gang (valuation ``1/rho``, nothing without it), in a partial-allocation auction of the
    offered GPUs (`fairalloc.gpu_auction`: proportionally fair
    bundles and the leave-one-out fractions ``c_i``). A job keeps ``c_i`` of its PF bundle, rounded
    to whole GPUs by a seeded draw; since a gang runs only with all its workers, it runs when it
    keeps the whole bundle and returns the GPUs otherwise. The leftover GPUs (hidden payments and
    GPUs nobody won) go, in a seeded random order, to the jobs that did not bid (then to the
    bidders) whose gang fits.

    Homogeneous clusters only (one accelerator type), laid out as servers of
    ``gpus_per_server`` GPUs.

    Parameters
    ----------
    fairness_knob : float, default 0.8
        ``f`` in ``[0, 1)`` (the paper's default).
    lease : float, default 600.0
        Lease length in seconds (10 minutes, §6.4).
    gpus_per_server : int, default 4
    time_limit : float or None, default None
        Seconds per auction MILP, an opt-in for interactive use: an auction stopped by it uses
        the best allocation found (`time_limited` counts them) and the simulation's results
        then depend on the machine's speed and load. ``None``: no time limit.
    node_limit : int or None, default `AUCTION_NODE_LIMIT`
        Branch-and-bound nodes per auction MILP (a work limit: an auction stopped by it uses
        the best allocation found, counted by `time_limited`, and gives the same result on any
        machine). ``None``: no limit.

    Examples
    --------
    Two jobs of 6 and 12 minutes arriving together on one GPU (rounds of 6 minutes):

    >>> import fairalloc as fa
    >>> from fairalloc.sim import Workload, simulate
    >>> w = Workload.from_arrays([0.0, 0.0], [[1.0], [1.0]], [360.0, 720.0])
    >>> r = simulate(w, fa.Cluster({"gpu": 1}), ThemisPolicy())
    >>> r.policy, r.finish.tolist()
    ('themis', [360.0, 1080.0])
    """

    name = "themis"

    def __init__(self, *, fairness_knob: float = THEMIS_FAIRNESS_KNOB,
                 lease: float = THEMIS_LEASE,
                 gpus_per_server: int = THEMIS_GPUS_PER_SERVER,
                 time_limit: float | None = None,
                 node_limit: int | None = AUCTION_NODE_LIMIT) -> None:
        f = as_finite_float(fairness_knob, "fairness_knob", lo=0.0, hi=1.0)
        if not 0.0 <= f < 1.0:
            raise InputError(f"fairness_knob must be in [0, 1), got {fairness_knob!r}",
                             argument="fairness_knob")
        lease = as_positive_float(lease, "lease")
        gps = as_positive_int(gpus_per_server, "gpus_per_server")
        time_limit = as_time_limit(time_limit)
        node_limit = None if node_limit is None else as_positive_int(node_limit, "node_limit")
        super().__init__({"fairness_knob": f, "lease": lease, "gpus_per_server": gps,
                          "time_limit": time_limit, "node_limit": node_limit})
        self.fairness_knob, self.lease, self.gpus_per_server = f, lease, gps
        self.time_limit, self.node_limit = time_limit, node_limit
        self.auctions = 0
        #: auctions whose MILP stopped at ``node_limit`` or ``time_limit`` before its proof
        self.time_limited = 0

    def reset(self, workload: Workload, cluster: Cluster, *, round_duration: float,
              seed: int) -> None:
        from ...auctions import Topology

        super().reset(workload, cluster, round_duration=round_duration, seed=seed)
        if cluster.num_types != 1:
            raise InputError("the Themis policy needs a homogeneous cluster (one GPU type)",
                             argument="cluster")
        M = int(cluster.capacity[0])
        per = self.gpus_per_server if M % self.gpus_per_server == 0 else 1
        self._topology = Topology.uniform(M // per, per)
        self._owner = np.full(M, -1, dtype=np.int64)
        self._lease_end = np.zeros(M)
        self._rng = np.random.default_rng(seed)
        self.auctions = 0
        self.time_limited = 0

    def allocate(self, state: RoundState) -> Schedule:
        from ...auctions import BidTable, gpu_auction

        v = state.jobs
        t = state.cluster.time
        M = self._owner.shape[0]
        owner = self._owner
        gone = (owner >= 0) & ~np.isin(owner, v.index)
        owner[gone | ((owner >= 0) & (self._lease_end <= t + LEASE_SLACK))] = -1
        assert self.workload is not None  # reset() set it (and _owner, read just above)
        row = np.full(int(self.workload.n), -1, dtype=np.int64)
        row[v.index] = np.arange(v.n)
        held = np.bincount(row[owner[owner >= 0]], minlength=v.n)
        w = v.scale_factor.astype(np.int64)
        offer = owner < 0
        if offer.any():
            fastest = np.min(v.epoch_seconds, axis=1)
            t_id = v.total_epochs * fastest * np.maximum(1.0, v.n * w / M)
            rho = (v.elapsed + v.epochs_remaining * fastest) / t_id
            want = np.flatnonzero((held == 0) & (w <= offer.sum()))
            n_bid = min(want.size, max(1, math.ceil((1.0 - self.fairness_knob) * v.n)))
            bidders = want[np.lexsort((v.arrival[want], -rho[want]))[:n_bid]]
            level = 1 if self._topology.num_racks == 1 else 2
            if bidders.size:
                bids = [BidTable([int(w[i])], [level], [float(rho[i])]) for i in bidders]
                res = gpu_auction(bids, self._topology, np.flatnonzero(offer),
                                  time_limit=self.time_limit, node_limit=self.node_limit,
                                  workers=1)
                self.auctions += 1
                self.time_limited += int(res.status.value in ("time_limit", "iteration_limit"))
                for a, i in enumerate(bidders.tolist()):
                    gpus = np.flatnonzero(res.pf_bundles[a])
                    if gpus.size < w[i]:
                        continue
                    keep = res.fraction[a] * gpus.size
                    kept = int(math.floor(keep + KEEP_ROUNDOFF))
                    kept += int(self._rng.random() < keep - kept)
                    if kept >= w[i]:  # a gang runs only with all its workers
                        owner[gpus[:w[i]]] = v.index[i]
                        self._lease_end[gpus[:w[i]]] = t + self.lease
                held = np.bincount(row[owner[owner >= 0]], minlength=v.n)
            # leftover GPUs: non-bidders first (seeded random order), then bidders
            free = np.flatnonzero(owner < 0)
            if free.size:
                can = np.flatnonzero((held == 0) & (w <= free.size))
                order = self._rng.permutation(can)
                order = order[np.argsort(np.isin(order, bidders), kind="stable")]
                got = greedy_pack(np.arange(order.size), np.zeros(order.size, dtype=np.int64),
                                  w[order], [free.size], order.size)
                take = order[got >= 0]
                ids = free[:int(w[take].sum())]
                owner[ids] = np.repeat(v.index[take], w[take])
                self._lease_end[ids] = t + self.lease
        gpus = np.bincount(row[owner[owner >= 0]], minlength=v.n)
        return Schedule(gpus[:, None].astype(np.int64))
