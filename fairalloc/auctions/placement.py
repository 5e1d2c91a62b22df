"""The placement-class MILP of `fairalloc.gpu_auction`
(`PlacementProgram`): machine types, bin-packing patterns, the program's named column layout
(`PlacementColumns`), its exact knapsack relaxation, the greedy placement and rounding
of a choice of bids, and the decoder from a solution to concrete GPUs."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from .bids import VALUE_REL_TOL, BidTable
from .nash import _LOG2, INTEGRAL_TOL, SetPackingColumns, _Form
from .valuations import Topology

#: PERFORMANCE knob: a machine type with more maximal bin-packing patterns than this gets
#: knapsack rows instead (its machines are split into types of their own).
MAX_PATTERNS = 4000
#: PERFORMANCE knob: the batched leave-one-out relaxation (`PlacementProgram.loo_relaxations`)
#: keeps (agents + 1) x (offered GPUs + 1) cells per table (about 48 bytes a cell in all); a
#: larger auction skips it and solves its markets one by one.
MAX_BATCH_CELLS = 4_000_000
#: Placement levels of a bid (BidTable.level): one machine, one rack, anywhere.
LEVEL_MACHINE, LEVEL_RACK, LEVEL_ANYWHERE = 0, 1, 2


def _useful_options(tables: Sequence[BidTable]) -> tuple[np.ndarray, np.ndarray]:
    """(agent, bid index) of every bid strictly better than winning nothing."""
    agent = np.concatenate([np.full(len(t), i) for i, t in enumerate(tables)]).astype(np.int64)
    bid = np.concatenate([np.arange(len(t)) for t in tables]).astype(np.int64)
    val = np.concatenate([t.value for t in tables]) if agent.size else np.zeros(0)
    empty = np.array([t.value_empty for t in tables])
    useful = val > empty[agent] * (1 + VALUE_REL_TOL)
    return agent[useful], bid[useful]


def _patterns(sizes: np.ndarray, capacity: int, limit: int = MAX_PATTERNS
              ) -> np.ndarray | None:
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


@dataclass(frozen=True)
class PlacementColumns:
    """Column layout of the placement-class MILP, in this order: level-0 choice columns
    ``a[o, tau]`` (bid ``o`` on a machine of type ``tau``), level-1 choice columns ``a[o, r]``
    (bid ``o`` in rack ``r``), level-2 choice columns ``y[o]``, then the pattern columns
    ``x[tau, p]`` of each patterned machine type (``pattern_counts``, in type order)."""

    num_machine: int
    num_rack: int
    num_anywhere: int
    pattern_counts: tuple[int, ...]

    @property
    def num_choices(self) -> int:
        """Number of choice columns (all three levels)."""
        return self.num_machine + self.num_rack + self.num_anywhere

    @property
    def machine(self) -> slice:
        """The level-0 (one machine) choice columns."""
        return slice(0, self.num_machine)

    @property
    def rack(self) -> slice:
        """The level-1 (one rack) choice columns."""
        return slice(self.num_machine, self.num_machine + self.num_rack)

    @property
    def anywhere(self) -> slice:
        """The level-2 (anywhere) choice columns."""
        return slice(self.num_machine + self.num_rack, self.num_choices)

    def patterns(self, q: int) -> slice:
        """The pattern columns of the ``q``-th patterned machine type."""
        start = self.num_choices + sum(self.pattern_counts[:q])
        return slice(start, start + self.pattern_counts[q])

    @property
    def packing(self) -> SetPackingColumns:
        """The same layout as the Nash-welfare MILP sees it: choices, then auxiliary columns."""
        return SetPackingColumns(self.num_choices, sum(self.pattern_counts))


class _SparseRows:
    """Rows of a sparse constraint matrix, appended block by block with their bounds."""

    def __init__(self) -> None:
        self.r: list[np.ndarray] = []
        self.c: list[np.ndarray] = []
        self.v: list[np.ndarray] = []
        self.lower: list[np.ndarray] = []
        self.upper: list[np.ndarray] = []
        self.count = 0

    def block(self, count: int, lo: Any, hi: Any) -> int:
        """Open ``count`` rows with bounds ``[lo, hi]``; returns the first row's index."""
        start = self.count
        self.lower.append(np.broadcast_to(np.asarray(lo, dtype=float), (count,)).copy())
        self.upper.append(np.broadcast_to(np.asarray(hi, dtype=float), (count,)).copy())
        self.count += count
        return start

    def add(self, r: np.ndarray, c: np.ndarray, v: Any) -> None:
        """Entries ``A[r, c] = v`` (``v`` broadcast to ``r``'s shape)."""
        self.r.append(np.asarray(r, dtype=np.int64))
        self.c.append(np.asarray(c, dtype=np.int64))
        self.v.append(np.broadcast_to(np.asarray(v, dtype=float), np.shape(r)).copy())

    def matrix(self, ncol: int) -> sp.csr_matrix:
        return sp.csr_matrix((np.concatenate(self.v), (np.concatenate(self.r),
                                                       np.concatenate(self.c))),
                             shape=(self.count, ncol))


class PlacementProgram:
    """The placement-class MILP of `fairalloc.gpu_auction` and its exact
    combinatorial routes.

    Machines with offered GPUs are grouped into *types* (same rack, same number of offered
    GPUs); a machine that is some bidder's home is a type of its own. Choice columns
    (`PlacementColumns`):

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
    program has no symmetric copies of a solution. ``e`` is the power of two valuations are
    divided by (``log v`` in units of ``2^e``).

    Attributes set once here and never changed: `form` (the program, with this object
    as its `CombinatorialRoutes`), `columns` and
    `bid_of_column` (the index of the bid, in its agent's table, each choice column
    meets). Methods: `relaxation` (exact knapsack bound), `rounder` (LP point to
    a placement), `place` (greedy placement of chosen bids), `decode` (solution to
    concrete GPUs).
    """

    def __init__(self, tables: Sequence[BidTable], topology: Topology, offer: np.ndarray,
                 e: int = 0) -> None:
        n = len(tables)
        self.num_agents = n
        self.topology = topology
        self.offer = offer
        H, R = topology.num_machines, topology.num_racks
        free = np.bincount(topology.machine[offer], minlength=H)
        self.free = free
        self.rack_free = np.bincount(topology.rack, weights=free, minlength=R)
        agent, bid = _useful_options(tables)
        self.agent = agent
        K = agent.size
        self.k_opt = np.array([tables[a].gpus[b] for a, b in zip(agent, bid)],
                              dtype=np.int64) if K else np.zeros(0, dtype=np.int64)
        self.l_opt = np.array([tables[a].level[b] for a, b in zip(agent, bid)],
                              dtype=np.int64) if K else np.zeros(0, dtype=np.int64)
        v_opt = np.array([tables[a].value[b] for a, b in zip(agent, bid)]) if K \
            else np.zeros(0)
        self.home_m = np.array([t.home_machine for t in tables], dtype=np.int64)
        self.home_r = np.array([t.home_rack for t in tables], dtype=np.int64)
        (self.machines, self.type_of, self.t_count, self.first_machine, self.t_cap,
         self.t_rack) = self._machine_types()
        self.num_types = int(self.t_count.size)
        self.c0_o, self.c0_t, self.c1_o, self.c1_r, self.c2_o = self._choice_columns()
        self.col_option = np.concatenate([self.c0_o, self.c1_o, self.c2_o]).astype(np.int64)
        self.col_k = self.k_opt[self.col_option].astype(float)
        self.col_agent = agent[self.col_option]
        self.pat_type, self.pat_rows, self.pat_sizes, self.knap_types = self._pattern_types()
        self.columns = PlacementColumns(
            num_machine=self.c0_o.size, num_rack=self.c1_o.size, num_anywhere=self.c2_o.size,
            pattern_counts=tuple(int(p.shape[0]) for p in self.pat_rows))
        cols = self.columns
        nc = cols.num_choices
        A, row_lower, row_upper = self._rows()
        pat_upper = np.concatenate([np.full(p.shape[0], float(self.t_count[t]))
                                    for t, p in zip(self.pat_type, self.pat_rows)]) \
            if cols.packing.num_aux else np.zeros(0)
        log_empty = np.array([math.log(t.value_empty) - e * _LOG2 if t.value_empty > 0
                              else -math.inf for t in tables])  # valuations in units of 2^e
        self.pat_index = {t: {tuple(row.astype(int)): q for q, row in enumerate(pats)}
                          for t, pats in zip(self.pat_type, self.pat_rows)}
        self.pat_slice = {t: cols.patterns(q) for q, t in enumerate(self.pat_type)}
        self.sizes_of = dict(zip(self.pat_type, self.pat_sizes))
        self.col_of0 = {(int(o), int(t)): q for q, (o, t) in enumerate(zip(self.c0_o,
                                                                            self.c0_t))}
        self.col_of1 = {(int(o), int(r)): cols.rack.start + q
                        for q, (o, r) in enumerate(zip(self.c1_o, self.c1_r))}
        self.col_of2 = {int(o): cols.anywhere.start + q for q, o in enumerate(self.c2_o)}
        self.bid_of_column = bid[self.col_option]
        ncol = cols.packing.total
        self.form = _Form(
            agent=self.col_agent,
            logv=np.log(v_opt[self.col_option]) - e * _LOG2 if nc else np.zeros(0),
            log_empty=log_empty, A=A, row_lower=row_lower, row_upper=row_upper,
            col_upper=np.r_[np.ones(nc), pat_upper], integrality=np.ones(ncol, dtype=bool),
            num_agents=n, option=self.col_option, columns=cols.packing, routes=self)

    # ---- construction (called once, from __init__; each returns what it built) ------------
    def _machine_types(self) -> tuple[np.ndarray, ...]:
        """Group the machines with offered GPUs into types: ``(machines, type_of, t_count,
        first_machine, t_cap, t_rack)`` -- the machines with offered GPUs, the type of each,
        and per type its number of machines, first machine, offered GPUs per machine, rack."""
        topology, free, agent, n = self.topology, self.free, self.agent, self.num_agents
        k_opt, l_opt, home_m = self.k_opt, self.l_opt, self.home_m
        machines = np.flatnonzero(free > 0)
        homes = np.unique(home_m[(home_m >= 0) & (np.bincount(
            agent[l_opt == LEVEL_MACHINE], minlength=n) > 0)])
        single = np.isin(machines, homes)
        # level-0 sizes of bidders without a home machine
        roaming = k_opt[(l_opt == LEVEL_MACHINE) & (home_m[agent] < 0)]
        for _ in range(2):
            key = np.where(single, -1 - machines,
                           topology.rack[machines] * (topology.num_gpus + 1) + free[machines])
            _, type_of = np.unique(key, return_inverse=True)  # type of each machine
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
        num_types = int(type_of.max()) + 1 if machines.size else 0
        t_count = np.bincount(type_of, minlength=num_types)
        first_machine = machines[np.unique(type_of, return_index=True)[1]] if num_types \
            else machines
        return (machines, type_of, t_count, first_machine, free[first_machine],
                topology.rack[first_machine])

    def _choice_columns(self) -> tuple[np.ndarray, ...]:
        """The choice columns of every level: ``(c0_o, c0_t, c1_o, c1_r, c2_o)`` -- the bid
        and machine type of each level-0 column, the bid and rack of each level-1 column,
        the bid of each level-2 column."""
        agent, k_opt, l_opt = self.agent, self.k_opt, self.l_opt
        home_m, home_r = self.home_m, self.home_r
        o0 = np.flatnonzero(l_opt == LEVEL_MACHINE)
        ok0 = (k_opt[o0][:, None] <= self.t_cap[None, :]) & (
            (home_m[agent[o0]][:, None] < 0)
            | (self.first_machine[None, :] == home_m[agent[o0]][:, None])
            & (self.t_count[None, :] == 1))
        c0_o, c0_t = np.nonzero(ok0)
        o1 = np.flatnonzero(l_opt == LEVEL_RACK)
        R = self.topology.num_racks
        ok1 = (k_opt[o1][:, None] <= self.rack_free[None, :]) & (
            (home_r[agent[o1]][:, None] < 0)
            | (np.arange(R)[None, :] == home_r[agent[o1]][:, None]))
        c1_o, c1_r = np.nonzero(ok1)
        return o0[c0_o], c0_t, o1[c1_o], c1_r, np.flatnonzero(l_opt == LEVEL_ANYWHERE)

    def _pattern_types(self) -> tuple[list[int], list[np.ndarray], list[np.ndarray],
                                      np.ndarray]:
        """Patterns per machine type (their LP is the convex hull of one machine's packings);
        a single machine whose patterns would explode gets a knapsack row instead. Returns
        ``(pat_type, pat_rows, pat_sizes, knap_types)``: the patterned types, the counts per
        size of each of their patterns, their sizes, and the types with a knapsack row."""
        pat_type: list[int] = []
        pat_rows: list[np.ndarray] = []  # counts per size of each pattern
        pat_sizes: list[np.ndarray] = []
        knap_types: list[int] = []
        for t in range(self.num_types):
            sizes = np.unique(self.k_opt[self.c0_o[self.c0_t == t]])
            if sizes.size == 0:
                continue
            pats = _patterns(sizes, int(self.t_cap[t]))
            if pats is None:  # only single machines (exploding multi-machine types were split)
                knap_types.append(t)
                continue
            pat_type.append(t)
            pat_rows.append(pats)
            pat_sizes.append(sizes)
        return pat_type, pat_rows, pat_sizes, np.array(knap_types, dtype=np.int64)

    def _rows(self) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
        """The constraint matrix and its row bounds."""
        cols, n = self.columns, self.num_agents
        nc = cols.num_choices
        col_k, c0_t = self.col_k, self.c0_t
        rows = _SparseRows()
        # (1) one column per bidder
        r0 = rows.block(n, -np.inf, 1.0)
        rows.add(r0 + self.col_agent, np.arange(nc), 1.0)
        # (2) everything fits the offer
        r0 = rows.block(1, -np.inf, float(self.free.sum()))
        rows.add(np.full(nc, r0), np.arange(nc), col_k)
        # (3) per rack: level-0 and level-1 GPUs fit the rack
        r0 = rows.block(self.topology.num_racks, -np.inf, self.rack_free)
        machine_cols = np.arange(nc)[cols.machine]
        rack_cols = np.arange(nc)[cols.rack]
        rows.add(r0 + self.t_rack[c0_t], machine_cols, col_k[cols.machine])
        rows.add(r0 + self.c1_r, rack_cols, col_k[cols.rack])
        # (4) single machines without patterns: knapsack on the machine's offered GPUs
        knap = self.knap_types
        if knap.size:
            r0 = rows.block(knap.size, -np.inf, self.t_cap[knap])
            pos = np.full(self.num_types, -1)
            pos[knap] = np.arange(knap.size)
            sel = np.flatnonzero(pos[c0_t] >= 0)
            rows.add(r0 + pos[c0_t[sel]], sel, col_k[sel])
        # (5) patterns: sum_p x <= count; bids of size k <= slots of size k
        for q, (t, pats, sizes) in enumerate(zip(self.pat_type, self.pat_rows,
                                                 self.pat_sizes)):
            pcols = np.arange(cols.patterns(q).start, cols.patterns(q).stop)
            r0 = rows.block(1, -np.inf, float(self.t_count[t]))
            rows.add(np.full(pcols.size, r0), pcols, 1.0)
            r0 = rows.block(sizes.size, -np.inf, 0.0)
            sel = np.flatnonzero(c0_t == t)
            rows.add(r0 + np.searchsorted(sizes, col_k[sel]), sel, 1.0)
            pi, si = np.nonzero(pats)
            rows.add(r0 + si, pcols[pi], -pats[pi, si])
        return (rows.matrix(cols.packing.total), np.concatenate(rows.lower),
                np.concatenate(rows.upper))

    # ---- the exact combinatorial routes (CombinatorialRoutes) -----------------------------
    def rounder(self, x: np.ndarray, col_upper: np.ndarray) -> np.ndarray | None:
        """Each agent's bid of largest LP mass in ``x`` (open columns only), placed by
        `place`; ``None`` if they do not fit."""
        n, agent, K = self.num_agents, self.agent, self.agent.size
        ch = self.columns.packing.choice
        mass = np.bincount(self.col_option, weights=x[ch] * (col_upper[ch] > 0), minlength=K)
        best = np.full(n, -1)
        order = np.lexsort((mass, agent))  # by agent, then mass: each agent's last is its top
        last = np.r_[agent[order][1:] != agent[order][:-1], True] if K else np.zeros(0, bool)
        best[agent[order][last]] = order[last]
        total = np.bincount(agent, weights=mass, minlength=n)
        chosen = np.flatnonzero((best >= 0) & (total >= 0.5 - INTEGRAL_TOL))
        return self.place(chosen, best[chosen])

    def relaxation(self, w_col: np.ndarray, act_col: np.ndarray, must: np.ndarray,
                   count: tuple[np.ndarray, float] | None = None
                   ) -> tuple[float, np.ndarray | None] | None:
        """Exact optimum without machine and rack constraints, and its placement if any.

        Dropping them leaves a multiple-choice knapsack: each agent wins at most one bid
        (exactly one if ``must``), and all bids fit the offered GPUs. A dynamic program over
        the number of GPUs used solves it exactly; its value bounds the MILP from above.
        ``w_col`` and ``act_col`` are the weights and the open flags of the choice columns.
        ``count = (counted, lower)``: the program's count row, at least ``lower`` of the
        ``counted`` choice columns won. The program is then solved lexicographically (most
        counted winners, then the weight): at exactly ``lower`` winners that is the row's
        optimum; with fewer the relaxation is infeasible; with more the row is dropped (the
        weight alone still bounds the MILP). ``None`` if the relaxation is infeasible.
        """
        n, agent, k_opt, K = self.num_agents, self.agent, self.k_opt, self.agent.size
        w_opt = np.full(K, -np.inf)
        w_opt[self.col_option] = w_col
        c_opt = np.zeros(K, dtype=np.int64)
        if count is not None:
            c_opt[self.col_option] = np.asarray(count[0], dtype=bool)
        act_o = np.zeros(K, dtype=bool)
        act_o[self.col_option[act_col]] = True
        C = int(self.free.sum())
        V = np.zeros(C + 1)
        N = np.zeros(C + 1, dtype=np.int64)  # counted winners of V's optimum
        steps: list[tuple[int, np.ndarray, np.ndarray]] = []
        for i in np.flatnonzero((np.bincount(agent[act_o], minlength=n) > 0) | must):
            opts = np.flatnonzero(act_o & (agent == i))
            if opts.size == 0:
                return None  # an agent that must win has nothing to win
            cand = np.full((opts.size + 1, C + 1), -np.inf)
            cn = np.full((opts.size + 1, C + 1), -1, dtype=np.int64)  # -1: unreachable
            if not must[i]:
                cand[0], cn[0] = V, N
            for r, o in enumerate(opts, start=1):  # each bid of this agent
                k = int(k_opt[o])
                if k <= C:
                    cand[r, k:] = V[:C + 1 - k] + w_opt[o]
                    cn[r, k:] = N[:C + 1 - k] + c_opt[o]
            arg = np.where(cn == cn.max(axis=0), cand, -np.inf).argmax(axis=0)
            V, N = cand[arg, np.arange(C + 1)], cn[arg, np.arange(C + 1)]
            steps.append((int(i), opts, arg))
        if not np.isfinite(V[C]):
            return None
        if count is not None:
            if N[C] < count[1] - INTEGRAL_TOL:
                return None  # not even the relaxation meets the count row
            if N[C] > count[1] + INTEGRAL_TOL:
                return self.relaxation(w_col, act_col, must)
        c = C
        win_a: list[int] = []
        win_o: list[int] = []
        for i, opts, arg in reversed(steps):
            a = int(arg[c])
            if a > 0:
                win_a.append(i)
                win_o.append(int(opts[a - 1]))
                c -= int(k_opt[opts[a - 1]])
        return float(V[C]), self.place(np.array(win_a, dtype=np.int64),
                                       np.array(win_o, dtype=np.int64))

    def loo_relaxations(self, w_col: np.ndarray, counted_col: np.ndarray
                        ) -> list[tuple[int, float, np.ndarray | None]] | None:
        """The exact lexicographic knapsack relaxation of the PF market and of every
        leave-one-out market at once.

        Each market's relaxation (machine and rack constraints dropped, as in `relaxation`)
        is solved lexicographically: most winners among the counted columns' agents first,
        then the largest ``w_col`` sum at that count -- the lexicographic order of the
        Nash-welfare solves (`fairalloc.auctions.nash`). One dynamic program runs forward over
        the agents and one backward; leave-one-out market ``i`` joins the forward table
        before ``i`` with the backward table after it (budgets split between them), so all
        ``n + 1`` markets cost two passes instead of ``n + 1``.

        Returns ``[(count, weight, point), ...]``: the PF market first, then the market
        without agent ``0..n-1``; ``point`` is its optimum placed by `place` (``None`` if the
        greedy placement fails). ``count`` and ``weight`` bound the market's program from
        above, lexicographically. ``None`` (no batch) when the tables would exceed
        `MAX_BATCH_CELLS`.
        """
        n, agent, k_opt, K = self.num_agents, self.agent, self.k_opt, self.agent.size
        w_opt = np.zeros(K)
        w_opt[self.col_option] = w_col
        c_opt = np.zeros(K, dtype=np.int64)
        c_opt[self.col_option] = np.asarray(counted_col, dtype=bool)
        has = np.zeros(K, dtype=bool)
        has[self.col_option] = True  # options with a column (placeable somewhere)
        C = int(self.free.sum())
        order = np.flatnonzero(np.bincount(agent[has], minlength=n) > 0)
        L = order.size
        if (L + 1) * (C + 1) > MAX_BATCH_CELLS:
            return None
        opts = [np.flatnonzero(has & (agent == i)) for i in order.tolist()]

        def sweep(seq: range) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
            cnt = np.zeros((L + 1, C + 1), dtype=np.int64)
            wt = np.zeros((L + 1, C + 1))
            args: list[np.ndarray] = [np.zeros(0, dtype=np.int64)] * L
            forward = seq.step > 0
            for m in seq:
                src, dst = (m, m + 1) if forward else (m + 1, m)
                o = opts[m]
                cc = np.full((o.size + 1, C + 1), -1, dtype=np.int64)  # -1: unreachable
                cw = np.full((o.size + 1, C + 1), -np.inf)
                cc[0], cw[0] = cnt[src], wt[src]
                for r, q in enumerate(o.tolist(), start=1):
                    k = int(k_opt[q])
                    if k <= C:
                        cc[r, k:] = cnt[src, :C + 1 - k] + c_opt[q]
                        cw[r, k:] = wt[src, :C + 1 - k] + w_opt[q]
                top = cc.max(axis=0)
                arg = np.where(cc == top, cw, -np.inf).argmax(axis=0)
                cnt[dst], wt[dst] = cc[arg, np.arange(C + 1)], cw[arg, np.arange(C + 1)]
                args[m] = arg
            return cnt, wt, args

        f_cnt, f_wt, f_arg = sweep(range(L))
        b_cnt, b_wt, b_arg = sweep(range(L - 1, -1, -1))

        def point(skip: int, split: int) -> np.ndarray | None:
            """Place the optimum without position ``skip``: forward budget ``split``."""
            win_a: list[int] = []
            win_o: list[int] = []
            c = split
            for m in range(skip - 1, -1, -1):
                a = int(f_arg[m][c])
                if a > 0:
                    q = int(opts[m][a - 1])
                    win_a.append(int(order[m]))
                    win_o.append(q)
                    c -= int(k_opt[q])
            c = C - split
            for m in range(skip + 1, L):
                a = int(b_arg[m][c])
                if a > 0:
                    q = int(opts[m][a - 1])
                    win_a.append(int(order[m]))
                    win_o.append(q)
                    c -= int(k_opt[q])
            return self.place(np.array(win_a, dtype=np.int64), np.array(win_o, dtype=np.int64))

        pf = (int(f_cnt[L, C]), float(f_wt[L, C]), point(L, C))
        out = [pf] * (n + 1)
        if L:
            tot_c = f_cnt[:L] + b_cnt[1:, ::-1]  # position m: agents before m + after m
            tot_w = f_wt[:L] + b_wt[1:, ::-1]
            best = np.where(tot_c == tot_c.max(axis=1, keepdims=True), tot_w,
                            -np.inf).argmax(axis=1)
            for m, c in enumerate(best.tolist()):
                out[int(order[m]) + 1] = (int(tot_c[m, c]), float(tot_w[m, c]), point(m, c))
        return out

    def place(self, chosen: np.ndarray, opt: np.ndarray) -> np.ndarray | None:
        """Columns of the form for bids ``opt`` of agents ``chosen``; ``None`` if they do not fit.

        Two greedy orders are tried: rack-level bids first (to the home rack, else the rack
        with most room), then machine-level bids largest first into the fullest machine that
        fits them and whose rack still has room; or machine-level bids first. Level-2 bids
        need only total room. Pattern counts are read off the machines' contents.
        """
        if float(self.k_opt[opt].sum()) > float(self.free.sum()) + INTEGRAL_TOL:
            return None
        for racks_first in (True, False):
            xr = self._place_greedy(chosen, opt, racks_first)
            if xr is not None:
                return xr
        return None

    def _place_greedy(self, chosen: np.ndarray, opt: np.ndarray, racks_first: bool
                      ) -> np.ndarray | None:
        """One greedy order of `place` (racks first or machines first)."""
        topology, k_opt = self.topology, self.k_opt
        home_m, home_r = self.home_m, self.home_r
        machines, type_of = self.machines, self.type_of
        R = topology.num_racks
        cap = self.free.astype(np.int64)
        rack_cap = self.rack_free.copy()
        xr = np.zeros(self.columns.packing.total)
        contents: dict[int, list[int]] = {}
        lv = self.l_opt[opt]
        lv0 = np.flatnonzero(lv == LEVEL_MACHINE)[
            np.argsort(-k_opt[opt[lv == LEVEL_MACHINE]], kind="stable")]
        lv1 = np.flatnonzero(lv == LEVEL_RACK)[
            np.argsort(-k_opt[opt[lv == LEVEL_RACK]], kind="stable")]

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
                q = self.col_of1.get((o, r))
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
                q = self.col_of0.get((o, int(type_of[np.searchsorted(machines, h)])))
                if q is None:
                    return False
                xr[q] = 1.0
            return True

        steps = (racks, machines_) if racks_first else (machines_, racks)
        if not all(step() for step in steps):
            return None
        for o in opt[lv == LEVEL_ANYWHERE]:
            xr[self.col_of2[int(o)]] = 1.0
        for h, ks in contents.items():  # pattern of every machine of a multi-machine type
            t = int(type_of[np.searchsorted(machines, h)])
            if t not in self.pat_index:
                continue
            sizes = self.sizes_of[t]
            cnt = np.zeros(sizes.size, dtype=int)
            for k in ks:
                cnt[int(np.searchsorted(sizes, k))] += 1
            left = int(self.t_cap[t]) - int(np.dot(cnt, sizes))
            for si in range(sizes.size - 1, -1, -1):  # extend to a maximal pattern
                add_n = left // int(sizes[si])
                cnt[si] += add_n
                left -= add_n * int(sizes[si])
            q = self.pat_index[t].get(tuple(cnt))
            if q is None:
                return None
            xr[self.pat_slice[t].start + q] += 1.0
        return xr

    # ---- from a solution to GPUs -----------------------------------------------------------
    def decode(self, x: np.ndarray) -> np.ndarray:
        """Concrete GPUs for a solution ``x`` of `form`, shape (agents, GPUs) bool:
        level 0 by pattern slots, then level 1, then level 2."""
        topology, offer, cols = self.topology, self.offer, self.columns
        n, H = self.num_agents, topology.num_machines
        col_k, col_agent, c0_t = self.col_k, self.col_agent, self.c0_t
        won = np.flatnonzero(x[cols.packing.choice] > 0.5)
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
        lv0 = won[won < cols.machine.stop]
        pat_x = {t: (pats, np.rint(x[self.pat_slice[t]]).astype(int))
                 for t, pats in zip(self.pat_type, self.pat_rows)}
        for t in np.unique(c0_t[lv0]) if lv0.size else []:  # one pass per machine type
            items = lv0[c0_t[lv0] == t]
            members = self.machines[self.type_of == t]
            if t in pat_x:
                pats, cnt = pat_x[t]
                sizes = np.unique(self.k_opt[self.c0_o[c0_t == t]])
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
        for c in won[(won >= cols.rack.start) & (won < cols.rack.stop)]:
            r = int(self.c1_r[c - cols.rack.start])
            take(int(col_agent[c]), int(col_k[c]),
                 np.flatnonzero(offer & (topology.gpu_rack == r)))
        for c in won[won >= cols.anywhere.start]:
            take(int(col_agent[c]), int(col_k[c]), np.flatnonzero(offer))
        return bundles
