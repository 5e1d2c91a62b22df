"""Themis's multi-round finish-time fair policy (§3.3.2, Pseudocode 1 lines 13-23)."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validation import as_finite_float, as_positive_float, as_positive_int, as_time_limit
from ..errors import InputError
from ..results import FrozenArrays, readonly
from ._pool import _workers
from .apps import _check_apps
from .bids import bid_table
from .gpu import GPUAuctionResult, _milp_solver, gpu_auction
from .valuations import Topology

__all__ = ["AuctionRound", "MultiRoundAuction"]

#: ACCURACY contract: a lease ending within this many seconds of ``now`` has expired (the
#: clock is a sum of floating-point steps).
LEASE_TIME_TOL = 1e-9
#: ACCURACY contract: a participant's ``c_i * |bundle_i|`` within this of an integer counts
#: as that integer before the random rounding.
ROUNDING_TOL = 1e-9

# names of the steps in AuctionRound.path
AUCTION = "auction"
TO_NON_BIDDERS = "leftovers-to-non-bidders"
TO_BIDDERS = "leftovers-to-bidders"


# ============================================================================================
# multi-round auctions (Themis §3.3.2, Pseudocode 1 lines 13-23)
# ============================================================================================
@dataclass(frozen=True)
class AuctionRound(FrozenArrays):
    """What one round of `fairalloc.MultiRoundAuction` did (every array
    read-only).

    Parameters
    ----------
    time : float
        When the round ran.
    offered : ndarray of int
        The GPUs auctioned (freed by expired leases or finished apps).
    participants : ndarray of int
        Apps that bid: the ``ceil((1 - f) * active)`` apps farthest from fairness.
    rho_before : ndarray, shape (num_apps,)
        Every app's current ``rho`` when the round began (``nan`` for inactive apps).
    fraction : ndarray, shape (len(participants),)
        ``c_i`` of each participant.
    won : ndarray of int, shape (len(participants),)
        GPUs each participant kept from its PF bundle (``c_i * |bundle|``, rounded).
    leftover_to : ndarray of int
        App that received each leftover GPU (``-1``: left idle, nobody could use it).
    leftover_gpus : ndarray of int
        The leftover GPUs, in the order of ``leftover_to``.
    auction : GPUAuctionResult or None
        The partial-allocation auction of the round (``None`` if nothing was auctioned); its
        ``stats.path`` says which exact routes solved it.
    seconds : float
        Wall-clock seconds of the round.
    path : tuple of str
        The steps of the round that ran, in order: ``"auction"`` (participants bid for the
        offered GPUs), ``"leftovers-to-non-bidders"`` and ``"leftovers-to-bidders"`` (some
        leftover GPUs went to apps that did not bid / to participants).
    fallbacks : tuple of str
        ``"leftovers-to-non-bidders->leftovers-to-bidders: ..."`` when leftover GPUs went to
        participants because the apps that did not bid could not use them all.

    Examples
    --------
    >>> from fairalloc.auctions import SingleJobApp, Topology
    >>> apps = [SingleJobApp(iter_total=1000, iter_time_serial=1.0, job_demand_max=2)
    ...         for _ in range(3)]
    >>> r = MultiRoundAuction(Topology.uniform(2, 2), apps, fairness_knob=0.5).step()
    >>> r.time, r.offered.tolist(), r.participants.tolist(), r.won.tolist(), r.path
    (0.0, [0, 1, 2, 3], [1, 2], [2, 2], ('auction',))
    """

    time: float
    offered: np.ndarray
    participants: np.ndarray
    rho_before: np.ndarray
    fraction: np.ndarray
    won: np.ndarray
    leftover_to: np.ndarray
    leftover_gpus: np.ndarray
    auction: GPUAuctionResult | None
    seconds: float
    path: tuple[str, ...] = ()
    fallbacks: tuple[str, ...] = ()


@dataclass(eq=False)
class MultiRoundAuction:
    """Themis's round-by-round finish-time fair policy (§3.3.2, Pseudocode 1).

    Each round (a *resource available event*: leases expiring, apps finishing or arriving):

    1. GPUs whose lease expired or whose app finished are offered;
    2. every active app reports its current ``rho`` (with the GPUs it ran on until now);
    3. the ``max(1, ceil((1 - f) * N_active))`` apps with the largest ``rho`` that can still
       use GPUs are filtered in (ties broken by a seeded random order). The paper's
       pseudocode says "top 1 - f fraction" and its text "filter the 1 - f fraction ... with
       the greatest rho"; both are read as *the apps that bid are that fraction*, which is
       what §6.4 describes (``f = 1``: a single app bids);
    4. the participants bid by placement class (`fairalloc.bid_table`, valuations
      refreshed) and a
       partial-allocation auction (`fairalloc.gpu_auction`) runs; participant ``i``
       keeps ``c_i * |bundle_i|`` GPUs of its PF bundle, rounded to a whole number by a seeded
       random draw (``floor`` plus one with probability equal to the fractional part), taking
       the GPUs on the machines where the bundle is densest;
    5. the leftover GPUs (hidden payments and GPUs no participant won) go at random (seeded)
       to apps that did not bid and can use more GPUs, one GPU per unit of unmet demand; only
       if none can, to participants with unmet demand;
    6. every GPU given out in the round is leased until ``now + lease``.

    Parameters
    ----------
    topology : Topology
    apps : sequence of app models
        `fairalloc.SingleJobApp`,
        `fairalloc.SuccessiveHalvingApp` or
        `fairalloc.CurveStoppingApp`; the auction advances them as they run.
    fairness_knob : float
        ``f`` in ``[0, 1)``; default 0.8 (the paper's choice, §6.4).
    lease : float
        Lease duration in seconds; default 600 (10 minutes, §6.4).
    seed : int
        Seed of every random choice (ties, rounding, leftovers): runs are reproducible.
    time_limit : float, optional
        Seconds per MILP of the auction.
    workers : int or None
        Processes for the leave-one-out MILPs.
    now : float
        The time (seconds) of the next round, `step`'s; default 0. The caller advances it
        between rounds (apps arrive when ``arrival <= now``).
    backend : str or Backend
        MILP backend of the auctions (default ``"highs"``).

    Examples
    --------
    >>> from fairalloc.auctions import SingleJobApp, Topology
    >>> apps = [SingleJobApp(iter_total=1000, iter_time_serial=1.0, job_demand_max=2)
    ...         for _ in range(3)]
    >>> auction = MultiRoundAuction(Topology.uniform(2, 2), apps, fairness_knob=0.5)
    >>> r = auction.step()
    >>> r.participants.size, int((auction.owner >= 0).sum())
    (2, 4)
    """

    topology: Topology
    apps: Sequence[Any]
    fairness_knob: float = 0.8
    lease: float = 600.0
    seed: int = 0
    time_limit: float | None = None
    workers: int | None = 1
    now: float = 0.0
    backend: Any = "highs"
    owner: np.ndarray = field(init=False)
    lease_end: np.ndarray = field(init=False)
    history: list[AuctionRound] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        if not isinstance(self.topology, Topology):
            raise InputError(f"topology must be a Topology, got {type(self.topology).__name__}",
                             argument="topology")
        self.apps = _check_apps(self.apps)
        if len({id(a) for a in self.apps}) != len(self.apps):
            raise InputError("apps lists the same app object twice (each app model holds "
                             "its own progress)", argument="apps")
        f = as_finite_float(self.fairness_knob, "fairness_knob", lo=0.0, hi=1.0)
        if f >= 1.0:
            raise InputError(f"fairness_knob must be in [0, 1), got {self.fairness_knob!r}",
                             argument="fairness_knob")
        self.fairness_knob = f
        self.lease = as_positive_float(self.lease, "lease")
        self.seed = as_positive_int(self.seed, "seed", allow_zero=True)
        self.time_limit = as_time_limit(self.time_limit)
        self.workers = _workers(self.workers)
        self.now = as_positive_float(self.now, "now", allow_zero=True)
        self._solver = _milp_solver(self.backend)
        g = self.topology.num_gpus
        self.owner = np.full(g, -1, dtype=np.int64)
        self.lease_end = np.zeros(g)
        self._rng = np.random.default_rng(self.seed)
        n = len(self.apps)
        self._active_time = np.zeros(n)  # integral of N_active over each app's lifetime
        self._lifetime = np.zeros(n)
        self.history = []

    # ---- state --------------------------------------------------------------------------
    def active(self) -> np.ndarray:
        """Apps that have arrived and not finished, shape (num_apps,) bool."""
        return readonly(np.array([a.arrival <= self.now and not a.finished for a in self.apps],
                                 dtype=bool))

    def held(self) -> np.ndarray:
        """GPUs each app holds now, shape (num_apps,)."""
        return readonly(np.bincount(self.owner[self.owner >= 0], minlength=len(self.apps)))

    def contention(self) -> np.ndarray:
        """``N_avg`` of each app: time-averaged number of active apps since it arrived."""
        act = self.active()
        cur = float(act.sum())
        with np.errstate(divide="ignore", invalid="ignore"):
            avg = np.where(self._lifetime > 0, self._active_time / self._lifetime, cur)
        return readonly(np.maximum(avg, 1.0))

    def _slowdowns(self) -> np.ndarray:
        """Current placement slowdown of every app's held GPUs."""
        n = len(self.apps)
        masks = np.zeros((n, self.topology.num_gpus), dtype=bool)
        has = self.owner >= 0
        masks[self.owner[has], np.flatnonzero(has)] = True
        levels = self.topology.level(masks)
        return np.array([a.slowdown_levels[lv] for a, lv in zip(self.apps, levels)])

    def current_rho(self) -> np.ndarray:
        """Every active app's ``rho`` with the GPUs it holds now (``nan`` if inactive)."""
        act = self.active()
        held = self.held()
        S = self._slowdowns()
        N = self.contention()
        g = self.topology.num_gpus
        out = np.full(len(self.apps), np.nan)
        for i in np.flatnonzero(act).tolist():  # one app-model call per app (its own state)
            out[i] = float(np.asarray(self.apps[i].rho(np.array([held[i]]), np.array([S[i]]),
                                                       now=self.now, cluster_gpus=g,
                                                       contention=N[i])).ravel()[0])
        return readonly(out)

    # ---- one round ----------------------------------------------------------------------
    def step(self) -> AuctionRound:
        """Run one auction round at `now` (Pseudocode 1, lines 15-21)."""
        t0 = time.perf_counter()
        topo = self.topology
        g = topo.num_gpus
        act = self.active()
        # rho_current: each app's fairness with the allocation it ran with until now
        rho_now = self.current_rho()
        # release expired leases and GPUs of finished apps
        done = np.array([a.finished for a in self.apps])
        release = (self.owner >= 0) & ((self.lease_end <= self.now + LEASE_TIME_TOL) |
                                       done[np.maximum(self.owner, 0)])
        self.owner[release] = -1
        offer = self.owner < 0
        held = self.held()
        demand = np.array([a.demand_max for a in self.apps])
        spare = np.where(act, np.maximum(demand - held, 0), 0)
        n_active = int(act.sum())
        n_part = max(1, math.ceil((1.0 - self.fairness_knob) * n_active)) if n_active else 0
        eligible = np.flatnonzero(spare > 0)
        tie = self._rng.permutation(len(self.apps))
        order = eligible[np.lexsort((tie[eligible], -np.nan_to_num(rho_now[eligible],
                                                                    nan=-np.inf,
                                                                    posinf=np.inf)))]
        participants = np.sort(order[:n_part])
        offered = np.flatnonzero(offer)
        fractions = np.zeros(participants.size)
        won = np.zeros(participants.size, dtype=np.int64)
        result = None
        given = np.zeros(g, dtype=bool)
        path: list[str] = []
        if participants.size and offered.size:
            N = self.contention()
            tables = []
            for i in participants:  # one bid table per bidding app (its own valuation)
                app = self.apps[i]
                hold = self.owner == i

                def rho_i(k: np.ndarray, s: np.ndarray, app: Any = app, Ni: float = N[i]
                          ) -> np.ndarray:
                    return app.rho(k, s, now=self.now, cluster_gpus=g, contention=Ni)

                tables.append(bid_table(rho_i, topo, offer, held=hold, max_gpus=int(spare[i]),
                                        slowdown=app.slowdown_levels))
            path.append(AUCTION)
            result = gpu_auction(tables, topo, offer, time_limit=self.time_limit,
                                 workers=self.workers, backend=self._solver)
            fractions = np.array(result.fraction)
            sizes = result.pf_bundles.sum(axis=1)
            exact = fractions * sizes
            won = np.floor(exact + ROUNDING_TOL).astype(np.int64)
            won += (self._rng.random(participants.size) < (exact - won)).astype(np.int64)
            won = np.minimum(won, sizes)
            for r_idx, app_idx in enumerate(participants):  # keep GPUs where bundle is densest
                if won[r_idx] == 0:
                    continue
                gpus = np.flatnonzero(result.pf_bundles[r_idx])
                mach = topo.machine[gpus]
                dens = np.bincount(mach, minlength=topo.num_machines)[mach]
                keep = gpus[np.lexsort((mach, -dens))][:won[r_idx]]
                self.owner[keep] = app_idx
                given[keep] = True
        # leftover GPUs: at random to the apps that did not bid (then to bidders) with demand
        left = np.flatnonzero((self.owner < 0) & offer)
        held = self.held()
        spare = np.where(act, np.maximum(demand - held, 0), 0)
        bidders = np.zeros(len(self.apps), dtype=bool)
        bidders[participants] = True
        to = np.full(left.size, -1, dtype=np.int64)
        perm_gpus = self._rng.permutation(left)
        filled = 0
        for group, step in ((~bidders, TO_NON_BIDDERS), (bidders, TO_BIDDERS)):
            slots = np.repeat(np.flatnonzero(group & (spare > 0)), spare[group & (spare > 0)])
            if filled >= perm_gpus.size or slots.size == 0:
                continue
            slots = self._rng.permutation(slots)[:perm_gpus.size - filled]
            to[filled:filled + slots.size] = slots
            filled += slots.size
            path.append(step)
        fallbacks = (f"{TO_NON_BIDDERS}->{TO_BIDDERS}: the apps that did not bid cannot use "
                     "every leftover GPU",) if TO_BIDDERS in path else ()
        assigned = to >= 0
        self.owner[perm_gpus[assigned]] = to[assigned]
        given[perm_gpus[assigned]] = True
        self.lease_end[given] = self.now + self.lease
        rnd = AuctionRound(time=self.now, offered=offered, participants=participants,
                           rho_before=rho_now, fraction=fractions, won=won, leftover_to=to,
                           leftover_gpus=perm_gpus, auction=result,
                           seconds=time.perf_counter() - t0, path=tuple(path),
                           fallbacks=fallbacks)
        self.history.append(rnd)
        return rnd

    # ---- time ---------------------------------------------------------------------------
    def advance(self, dt: float) -> None:
        """Let ``dt`` seconds pass: every app runs on the GPUs it holds."""
        dt = as_positive_float(dt, "dt", allow_zero=True)
        act = self.active()
        held = self.held()
        S = self._slowdowns()
        for i in np.flatnonzero(act).tolist():  # each app model advances its own state
            self.apps[i].advance(int(held[i]), float(S[i]), dt)
        self._active_time[act] += dt * act.sum()
        self._lifetime[act] += dt
        self.now += dt

    def next_event(self) -> float:
        """Time of the next resource-available event (lease expiry, app finish or arrival)."""
        held = self.held()
        S = self._slowdowns()
        times = [math.inf]
        busy = self.owner >= 0
        if busy.any():
            times.append(float(self.lease_end[busy].min()))
        act = self.active()
        for i in np.flatnonzero(act & (held > 0)).tolist():
            times.append(self.now + self.apps[i].time_to_finish(int(held[i]), float(S[i])))
        arrivals = [a.arrival for a in self.apps if a.arrival > self.now]
        times.extend(arrivals)
        return max(min(times), self.now)

    def run(self, until: float, *, max_rounds: int = 10_000) -> list[AuctionRound]:
        """Alternate rounds and progress until time ``until`` or every app finished."""
        try:
            ok = (isinstance(until, float | int | np.floating | np.integer)
                  and not isinstance(until, bool) and not math.isnan(float(until))
                  and float(until) >= 0)
        except OverflowError:  # an int beyond double precision: as good as inf
            ok, until = until > 0, math.inf
        if not ok:
            raise InputError(f"until must be a non-negative number (inf: until every app "
                             f"finished or max_rounds), got {until!r:.40}", argument="until")
        until = float(until)
        rounds: list[AuctionRound] = []
        for _ in range(as_positive_int(max_rounds, "max_rounds")):
            if self.now >= until or all(a.finished for a in self.apps):
                break
            rounds.append(self.step())
            nxt = min(self.next_event(), until)
            if nxt <= self.now:  # nothing will happen: jump to the next arrival or stop
                nxt = min([a.arrival for a in self.apps if a.arrival > self.now] + [until])
            if not math.isfinite(nxt):  # nothing will ever happen again
                break
            self.advance(nxt - self.now)
        return rounds
