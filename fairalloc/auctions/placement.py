"""The placement-class MILP of :func:`fairalloc.auctions.gpu_auction`: machine types,
bin-packing patterns, its exact knapsack relaxation, greedy placement and the decoder to
concrete GPUs."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from .bids import BidTable
from .nash import _LOG2, _Form
from .valuations import Topology


def _useful_options(tables: Sequence[BidTable]) -> tuple[np.ndarray, np.ndarray]:
    """(agent, bid index) of every bid strictly better than winning nothing."""
    agent = np.concatenate([np.full(len(t), i) for i, t in enumerate(tables)]).astype(np.int64)
    bid = np.concatenate([np.arange(len(t)) for t in tables]).astype(np.int64)
    val = np.concatenate([t.value for t in tables]) if agent.size else np.zeros(0)
    empty = np.array([t.value_empty for t in tables])
    useful = val > empty[agent] * (1 + 1e-12)
    return agent[useful], bid[useful]


def _option_index(tables: Sequence[BidTable]) -> np.ndarray:
    return _useful_options(tables)[1]


def _patterns(sizes: np.ndarray, capacity: int, limit: int = 4000) -> np.ndarray | None:
    """Maximal multisets of ``sizes`` fitting in ``capacity``: rows = patterns, columns = counts.

    ``None`` when there would be more than ``limit`` of them.
    """
    sizes = np.sort(np.unique(sizes))[::-1].astype(int)
    smallest = int(sizes.min())
    out: list[list[int]] = []
    counts = [0] * sizes.size

    def rec(idx: int, left: int) -> bool:
        if len(out) > limit:
            return False
        if idx == sizes.size:
            if left < smallest:  # maximal: nothing else fits
                out.append(list(counts))
            return True
        for c in range(left // int(sizes[idx]), -1, -1):
            counts[idx] = c
            if not rec(idx + 1, left - c * int(sizes[idx])):
                return False
        counts[idx] = 0
        return True

    if not rec(0, int(capacity)):
        return None
    pats = np.array(out, dtype=float).reshape(-1, sizes.size)
    order = np.argsort(sizes)  # columns in increasing size order
    return pats[:, order]


def _placement_form(tables: Sequence[BidTable], topology: Topology, offer: np.ndarray,
                    e: int = 0) -> tuple[_Form, Callable[[np.ndarray], np.ndarray], np.ndarray]:
    """The placement-class MILP of :func:`gpu_auction`, a decoder, and column -> option.

    Machines with offered GPUs are grouped into *types* (same rack, same number of offered
    GPUs); a machine that is some bidder's home is a type of its own. Choice columns:

    * level 0 (one machine): ``a[o, tau]`` -- bid ``o`` is met on a machine of type ``tau``;
      a type of ``c`` machines packs its level-0 bids by bin-packing *patterns* (maximal
      multisets of bid sizes fitting one machine): ``x[tau, p]`` machines use pattern ``p``,
      ``sum_p x[tau, p] <= c`` and, for every size ``k``, the level-0 bids of size ``k`` on
      ``tau`` are at most the pattern slots of size ``k``. Patterns are used for single
      machines too: their LP relaxation is the convex hull of the machine's packings, far
      tighter than a knapsack row (used only if a machine's patterns would explode);
    * level 1 (one rack): ``a[o, r]`` -- bid ``o`` is met in rack ``r``; per rack, level-0
      and level-1 GPUs fit the rack's offered GPUs (level-1 GPUs are interchangeable within
      the rack);
    * level 2 (anywhere): ``y[o]``; all bids together fit the offer.

    Each bidder wins at most one column. Identical machines are never told apart, so the
    program has no symmetric copies of a solution.
    """
    n = len(tables)
    H, R = topology.num_machines, topology.num_racks
    free = np.bincount(topology.machine[offer], minlength=H)
    rack_free = np.bincount(topology.rack, weights=free, minlength=R)
    agent, bid = _useful_options(tables)
    K = agent.size
    k_opt = np.array([tables[a].gpus[b] for a, b in zip(agent, bid)], dtype=np.int64) if K \
        else np.zeros(0, dtype=np.int64)
    l_opt = np.array([tables[a].level[b] for a, b in zip(agent, bid)], dtype=np.int64) if K \
        else np.zeros(0, dtype=np.int64)
    v_opt = np.array([tables[a].value[b] for a, b in zip(agent, bid)]) if K else np.zeros(0)
    home_m = np.array([t.home_machine for t in tables], dtype=np.int64)
    home_r = np.array([t.home_rack for t in tables], dtype=np.int64)
    # ---- machine types ---------------------------------------------------------------------
    machines = np.flatnonzero(free > 0)
    homes = np.unique(home_m[(home_m >= 0) & (np.bincount(agent[l_opt == 0], minlength=n) > 0)])
    single = np.isin(machines, homes)
    roaming = k_opt[(l_opt == 0) & (home_m[agent] < 0)]  # level-0 sizes of bidders without home
    for _ in range(2):
        key = np.where(single, -1 - machines, topology.rack[machines] * (topology.num_gpus + 1)
                       + free[machines])
        _, type_of = np.unique(key, return_inverse=True)  # type of each machine with free GPUs
        # a type whose patterns would explode is split into single machines (knapsacks)
        explode = np.zeros(machines.size, dtype=bool)
        for t in np.unique(type_of[~single]):
            cap = int(free[machines[type_of == t][0]])
            sizes = roaming[roaming <= cap]
            if sizes.size and _patterns(sizes, cap) is None:
                explode |= type_of == t
        if not explode.any():
            break
        single |= explode
    T = int(type_of.max()) + 1 if machines.size else 0
    t_count = np.bincount(type_of, minlength=T)
    first_machine = machines[np.unique(type_of, return_index=True)[1]] if T else machines
    t_cap = free[first_machine]
    t_rack = topology.rack[first_machine]
    # ---- choice columns --------------------------------------------------------------------
    o0 = np.flatnonzero(l_opt == 0)
    ok0 = (k_opt[o0][:, None] <= t_cap[None, :]) & (
        (home_m[agent[o0]][:, None] < 0)
        | (first_machine[None, :] == home_m[agent[o0]][:, None]) & (t_count[None, :] == 1))
    c0_o, c0_t = np.nonzero(ok0)
    c0_o = o0[c0_o]
    o1 = np.flatnonzero(l_opt == 1)
    ok1 = (k_opt[o1][:, None] <= rack_free[None, :]) & (
        (home_r[agent[o1]][:, None] < 0) | (np.arange(R)[None, :] == home_r[agent[o1]][:, None]))
    c1_o, c1_r = np.nonzero(ok1)
    c1_o = o1[c1_o]
    c2_o = np.flatnonzero(l_opt == 2)
    col_option = np.concatenate([c0_o, c1_o, c2_o]).astype(np.int64)
    n0, n1, n2 = c0_o.size, c1_o.size, c2_o.size
    nc = n0 + n1 + n2
    col_k = k_opt[col_option].astype(float)
    col_agent = agent[col_option]
    # ---- patterns per machine type (their LP is the convex hull of one machine's packings;
    # a single machine whose patterns would explode gets a knapsack row instead) ------------
    pat_type: list[int] = []
    pat_rows: list[np.ndarray] = []  # counts per size of each pattern
    pat_sizes: list[np.ndarray] = []
    knap_types: list[int] = []
    for t in range(T):
        sizes = np.unique(k_opt[c0_o[c0_t == t]])
        if sizes.size == 0:
            continue
        pats = _patterns(sizes, int(t_cap[t]))
        if pats is None:  # only single machines (exploding multi-machine types were split)
            knap_types.append(t)
            continue
        pat_type.append(t)
        pat_rows.append(pats)
        pat_sizes.append(sizes)
    npat = int(sum(p.shape[0] for p in pat_rows))
    ncol = nc + npat
    rows_r: list[np.ndarray] = []
    rows_c: list[np.ndarray] = []
    rows_v: list[np.ndarray] = []
    lower: list[np.ndarray] = []
    upper: list[np.ndarray] = []
    nrow = 0

    def add(r: np.ndarray, c: np.ndarray, v: Any) -> None:
        rows_r.append(np.asarray(r, dtype=np.int64))
        rows_c.append(np.asarray(c, dtype=np.int64))
        rows_v.append(np.broadcast_to(np.asarray(v, dtype=float), np.shape(r)).copy())

    def rows(count: int, lo: Any, hi: Any) -> int:
        nonlocal nrow
        start = nrow
        lower.append(np.broadcast_to(np.asarray(lo, dtype=float), (count,)).copy())
        upper.append(np.broadcast_to(np.asarray(hi, dtype=float), (count,)).copy())
        nrow += count
        return start

    # (1) one column per bidder
    r0 = rows(n, -np.inf, 1.0)
    add(r0 + col_agent, np.arange(nc), 1.0)
    # (2) everything fits the offer
    r0 = rows(1, -np.inf, float(free.sum()))
    add(np.full(nc, r0), np.arange(nc), col_k)
    # (3) per rack: level-0 and level-1 GPUs fit the rack
    r0 = rows(R, -np.inf, rack_free)
    add(r0 + t_rack[c0_t], np.arange(n0), col_k[:n0])
    add(r0 + c1_r, n0 + np.arange(n1), col_k[n0:n0 + n1])
    # (4) single machines without patterns: knapsack on the machine's offered GPUs
    knap = np.array(knap_types, dtype=np.int64)
    if knap.size:
        r0 = rows(knap.size, -np.inf, t_cap[knap])
        pos = np.full(T, -1)
        pos[knap] = np.arange(knap.size)
        sel = np.flatnonzero(pos[c0_t] >= 0)
        add(r0 + pos[c0_t[sel]], sel, col_k[sel])
    # (5) patterns: sum_p x <= count; bids of size k <= slots of size k
    col = nc
    for t, pats, sizes in zip(pat_type, pat_rows, pat_sizes):
        P = pats.shape[0]
        r0 = rows(1, -np.inf, float(t_count[t]))
        add(np.full(P, r0), col + np.arange(P), 1.0)
        r0 = rows(sizes.size, -np.inf, 0.0)
        sel = np.flatnonzero(c0_t == t)
        add(r0 + np.searchsorted(sizes, col_k[sel]), sel, 1.0)
        pi, si = np.nonzero(pats)
        add(r0 + si, col + pi, -pats[pi, si])
        col += P
    A = sp.csr_matrix((np.concatenate(rows_v), (np.concatenate(rows_r), np.concatenate(rows_c))),
                      shape=(nrow, ncol))
    pat_upper = np.concatenate([np.full(p.shape[0], float(t_count[t]))
                                for t, p in zip(pat_type, pat_rows)]) if npat else np.zeros(0)
    log_empty = np.array([math.log(t.value_empty) - e * _LOG2 if t.value_empty > 0
                          else -math.inf for t in tables])  # valuations in units of 2^e
    pat_index = {t: {tuple(row.astype(int)): q for q, row in enumerate(pats)}
                 for t, pats in zip(pat_type, pat_rows)}
    pat_offset = dict(zip(pat_type, nc + np.cumsum([0] + [p.shape[0] for p in pat_rows])[:-1]))
    sizes_of = dict(zip(pat_type, pat_sizes))
    col_of0 = {(int(o), int(t)): q for q, (o, t) in enumerate(zip(c0_o, c0_t))}
    col_of1 = {(int(o), int(r)): n0 + q for q, (o, r) in enumerate(zip(c1_o, c1_r))}
    col_of2 = {int(o): n0 + n1 + q for q, o in enumerate(c2_o)}
    m_free = free.astype(np.int64)

    def rounder(x: np.ndarray, col_upper: np.ndarray) -> np.ndarray | None:
        """Each agent's bid of largest LP mass, placed by :func:`place`."""
        mass = np.bincount(col_option, weights=x[:nc] * (col_upper[:nc] > 0), minlength=K)
        best = np.full(n, -1)
        order = np.lexsort((mass, agent))  # by agent, then mass: each agent's last is its top
        last = np.r_[agent[order][1:] != agent[order][:-1], True] if K else np.zeros(0, bool)
        best[agent[order][last]] = order[last]
        total = np.bincount(agent, weights=mass, minlength=n)
        chosen = np.flatnonzero((best >= 0) & (total >= 0.5 - 1e-9))
        return place(chosen, best[chosen])

    def relaxation(w_col: np.ndarray, act_col: np.ndarray, must: np.ndarray
                   ) -> tuple[float, np.ndarray | None] | None:
        """Exact optimum without machine and rack constraints, and its placement if any.

        Dropping them leaves a multiple-choice knapsack: each agent wins at most one bid
        (exactly one if ``must``), and all bids fit the offered GPUs. A dynamic program over
        the number of GPUs used solves it exactly; its value bounds the MILP from above.
        """
        w_opt = np.full(K, -np.inf)
        w_opt[col_option] = w_col
        act_o = np.zeros(K, dtype=bool)
        act_o[col_option[act_col]] = True
        C = int(free.sum())
        V = np.zeros(C + 1)
        steps: list[tuple[int, np.ndarray, np.ndarray]] = []
        for i in np.flatnonzero((np.bincount(agent[act_o], minlength=n) > 0) | must):
            opts = np.flatnonzero(act_o & (agent == i))
            if opts.size == 0:
                return None  # an agent that must win has nothing to win
            cand = np.full((opts.size + 1, C + 1), -np.inf)
            if not must[i]:
                cand[0] = V
            for r, o in enumerate(opts, start=1):  # each bid of this agent
                k = int(k_opt[o])
                if k <= C:
                    cand[r, k:] = V[:C + 1 - k] + w_opt[o]
            arg = cand.argmax(axis=0)
            V = cand[arg, np.arange(C + 1)]
            steps.append((int(i), opts, arg))
        if not np.isfinite(V[C]):
            return None
        c = C
        win_a: list[int] = []
        win_o: list[int] = []
        for i, opts, arg in reversed(steps):
            a = int(arg[c])
            if a > 0:
                win_a.append(i)
                win_o.append(int(opts[a - 1]))
                c -= int(k_opt[opts[a - 1]])
        return float(V[C]), place(np.array(win_a, dtype=np.int64), np.array(win_o,
                                                                            dtype=np.int64))

    def place(chosen: np.ndarray, opt: np.ndarray) -> np.ndarray | None:
        """Columns of the form for bids ``opt`` of agents ``chosen``; ``None`` if they do not fit.

        Two greedy orders are tried: rack-level bids first (to the home rack, else the rack
        with most room), then machine-level bids largest first into the fullest machine that
        fits them and whose rack still has room; or machine-level bids first. Level-2 bids
        need only total room. Pattern counts are read off the machines' contents.
        """
        if float(k_opt[opt].sum()) > float(free.sum()) + 1e-9:
            return None
        for racks_first in (True, False):
            xr = _place_greedy(chosen, opt, racks_first)
            if xr is not None:
                return xr
        return None

    def _place_greedy(chosen: np.ndarray, opt: np.ndarray, racks_first: bool
                      ) -> np.ndarray | None:
        cap = m_free.copy()
        rack_cap = rack_free.copy()
        xr = np.zeros(ncol)
        contents: dict[int, list[int]] = {}
        lv = l_opt[opt]
        lv0 = np.flatnonzero(lv == 0)[np.argsort(-k_opt[opt[lv == 0]], kind="stable")]
        lv1 = np.flatnonzero(lv == 1)[np.argsort(-k_opt[opt[lv == 1]], kind="stable")]

        def racks() -> bool:
            for idx in lv1:
                o, i = int(opt[idx]), int(chosen[idx])
                k = int(k_opt[o])
                cands = np.array([home_r[i]]) if home_r[i] >= 0 else np.arange(R)
                fits = cands[rack_cap[cands] >= k]
                if fits.size == 0:
                    return False
                r = int(fits[np.argmax(rack_cap[fits])])
                rack_cap[r] -= k
                q = col_of1.get((o, r))
                if q is None:
                    return False
                xr[q] = 1.0
            return True

        def machines_() -> bool:
            for idx in lv0:
                o, i = int(opt[idx]), int(chosen[idx])
                k = int(k_opt[o])
                cands = np.array([home_m[i]]) if home_m[i] >= 0 else machines
                fits = cands[(cap[cands] >= k) & (rack_cap[topology.rack[cands]] >= k)]
                if fits.size == 0:
                    return False
                h = int(fits[np.lexsort((rack_cap[topology.rack[fits]], cap[fits]))[0]])
                cap[h] -= k
                rack_cap[topology.rack[h]] -= k
                contents.setdefault(h, []).append(k)
                q = col_of0.get((o, int(type_of[np.searchsorted(machines, h)])))
                if q is None:
                    return False
                xr[q] = 1.0
            return True

        steps = (racks, machines_) if racks_first else (machines_, racks)
        if not all(step() for step in steps):
            return None
        for o in opt[lv == 2]:
            xr[col_of2[int(o)]] = 1.0
        for h, ks in contents.items():  # pattern of every machine of a multi-machine type
            t = int(type_of[np.searchsorted(machines, h)])
            if t not in pat_index:
                continue
            sizes = sizes_of[t]
            cnt = np.zeros(sizes.size, dtype=int)
            for k in ks:
                cnt[int(np.searchsorted(sizes, k))] += 1
            left = int(t_cap[t]) - int(np.dot(cnt, sizes))
            for si in range(sizes.size - 1, -1, -1):  # extend to a maximal pattern
                add_n = left // int(sizes[si])
                cnt[si] += add_n
                left -= add_n * int(sizes[si])
            q = pat_index[t].get(tuple(cnt))
            if q is None:
                return None
            xr[pat_offset[t] + q] += 1.0
        return xr

    form = _Form(agent=col_agent, logv=np.log(v_opt[col_option]) - e * _LOG2 if nc
                 else np.zeros(0),
                 log_empty=log_empty, A=A, row_lower=np.concatenate(lower),
                 row_upper=np.concatenate(upper), col_upper=np.r_[np.ones(nc), pat_upper],
                 integrality=np.ones(ncol, dtype=bool), num_agents=n, option=col_option,
                 rounder=rounder, relaxation=relaxation)

    def decode(x: np.ndarray) -> np.ndarray:
        """Concrete GPUs for a solution: level 0 by pattern slots, then level 1, then 2."""
        won = np.flatnonzero(x[:nc] > 0.5)
        bundles = np.zeros((n, topology.num_gpus), dtype=bool)
        avail = offer.copy()

        def take(i: int, k: int, among: np.ndarray) -> None:
            """Give agent i k available GPUs of ``among``, densest machines first."""
            cand = among[avail[among]]
            mach = topology.machine[cand]
            dens = np.bincount(mach, minlength=H)[mach]
            pick = cand[np.lexsort((cand, -dens))][:k]
            bundles[i, pick] = True
            avail[pick] = False

        gpus_of = [np.flatnonzero(offer & (topology.machine == h)) for h in range(H)]
        lv0 = won[won < n0]
        col = nc
        pat_x = {}
        for t, pats in zip(pat_type, pat_rows):
            pat_x[t] = (pats, np.rint(x[col:col + pats.shape[0]]).astype(int))
            col += pats.shape[0]
        for t in np.unique(c0_t[lv0]) if lv0.size else []:  # one pass per machine type
            items = lv0[c0_t[lv0] == t]
            members = machines[type_of == t]
            if t in pat_x:
                pats, cnt = pat_x[t]
                sizes = np.unique(k_opt[c0_o[c0_t == t]])
                bins = np.repeat(np.arange(pats.shape[0]), cnt)  # one pattern per machine
                slots = [(members[b], int(sizes[s])) for b, p in enumerate(bins)
                         for s in range(sizes.size) for _ in range(int(pats[p, s]))]
                for c in items[np.argsort(-col_k[items], kind="stable")]:
                    k = int(col_k[c])
                    j = next(idx for idx, (_, sz) in enumerate(slots) if sz == k)
                    h, _ = slots.pop(j)
                    take(int(col_agent[c]), k, gpus_of[h])
            else:
                for c in items:
                    take(int(col_agent[c]), int(col_k[c]), gpus_of[int(members[0])])
        for c in won[(won >= n0) & (won < n0 + n1)]:
            r = int(c1_r[c - n0])
            take(int(col_agent[c]), int(col_k[c]), np.flatnonzero(offer & (topology.gpu_rack
                                                                            == r)))
        for c in won[won >= n0 + n1]:
            take(int(col_agent[c]), int(col_k[c]), np.flatnonzero(offer))
        return bundles

    return form, decode, col_option

