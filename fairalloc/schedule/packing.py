"""Packing round counts into a schedule, and making it work conserving (App. H).

The fast path decides how many rounds each job gets; `_realise` places them round by
round (`_pack`, two job orders with gangs) and then applies the work-conservation rule
(`_work_conserve`, exact; `_greedy_upstream`, upstream's post-pass), keeping the
better schedule by the recomputed objective.
"""

from __future__ import annotations

import numpy as np

from .instance import _evaluate, _PlanInstance

# PERFORMANCE: most first-fit passes over the candidates of one round
MAX_FIT_PASSES = 64


def _fit_in_order(order: np.ndarray, w: np.ndarray, room: int) -> np.ndarray:
    """Jobs of ``order`` accepted first-fit into ``room`` GPUs (vectorised passes)."""
    taken = []
    cand = order
    for _ in range(MAX_FIT_PASSES):
        cand = cand[w[cand] <= room]
        if cand.size == 0:
            break
        acc = np.cumsum(w[cand]) <= room
        take = cand[acc]
        taken.append(take)
        room -= int(w[take].sum())
        cand = cand[~acc]
    return np.concatenate(taken) if taken else np.zeros(0, dtype=np.int64)


def _pack(inst: _PlanInstance, n: np.ndarray, *, gangs_first: bool = False) -> np.ndarray:
    """Place ``n_j`` rounds per job, round by round.

    Jobs with no slack left (they need every remaining round) go first, then running jobs
    (contiguity), then least slack, then larger gangs; ``gangs_first`` puts larger gangs
    before running jobs. For unit gangs this never fails when ``sum_j n_j <= M*T`` and
    ``n_j <= T`` (every round is filled as far as the jobs with rounds left allow, and no job
    is left with more rounds than remain).
    """
    N, T = inst.N, inst.T
    w = inst.w
    x = np.zeros((N, T), dtype=bool)
    left = n.astype(np.int64).copy()
    prev = inst.running.copy()
    for t in range(T):
        live = np.flatnonzero(left > 0)
        if live.size == 0:
            break
        slack = (T - t) - left[live]
        # mandatory jobs (no slack left) first, then running ones (contiguity), then least
        # slack, then larger gangs (harder to place later)
        if gangs_first:
            key = np.lexsort((slack, ~prev[live], -w[live], slack > 0))
        else:
            key = np.lexsort((-w[live], slack, ~prev[live], slack > 0))
        take = _fit_in_order(live[key], w, inst.M)
        x[take, t] = True
        left[take] -= 1
        prev = x[:, t]
    return x


def _work_conserve(inst: _PlanInstance, x: np.ndarray, gp: np.ndarray, kappa: np.ndarray
                   ) -> np.ndarray:
    """Make ``x`` work conserving round by round; never lowers the count objective.

    In round ``t``, an idle job that is unfinished and fits gets the round: a job short of
    its useful rounds gains one (best marginal value per GPU first); a job that already has
    them all (so it has a later round) moves its last round forward.
    """
    x = x.copy()
    w = inst.w
    N, T = inst.N, inst.T
    for t in range(T):
        for _ in range(N + 1):
            idle = inst.M - int(w @ x[:, t])
            if idle <= 0:
                break
            before = x[:, :t].sum(axis=1)
            n = x.sum(axis=1)
            cand = np.flatnonzero(~x[:, t] & (before < inst.finish) & (w <= idle))
            if cand.size == 0:
                break
            add = cand[n[cand] < inst.cap[cand]]
            move = cand[n[cand] >= inst.cap[cand]]
            gain = (gp[add, n[add] + 1] - gp[add, n[add]]) + kappa[add] * (
                inst.rem[add, n[add]] - inst.rem[add, n[add] + 1])
            order = np.concatenate([add[np.argsort(-gain / w[add], kind="stable")],
                                    move[np.argsort(-w[move], kind="stable")]])
            take = _fit_in_order(order, w, idle)
            mv = take[n[take] >= inst.cap[take]]
            if mv.size:
                last = T - 1 - np.argmax(x[mv, ::-1], axis=1)
                x[mv, last] = False
            x[take, t] = True
    return x


def _greedy_upstream(inst: _PlanInstance, x: np.ndarray) -> np.ndarray:
    """Upstream's post-pass: fill idle GPUs with the jobs of largest remaining run time."""
    x = x.copy()
    w = inst.w
    r = np.arange(inst.N)
    for t in range(inst.T):
        idle = inst.M - int(w @ x[:, t])
        if idle <= 0:
            continue
        before = x[:, :t].sum(axis=1)
        n = x.sum(axis=1)
        cand = np.flatnonzero(~x[:, t] & (before < inst.finish) & (n < inst.cap) & (w <= idle))
        if cand.size == 0:
            continue
        rem_now = inst.rem[r[cand], n[cand]]
        order = cand[np.argsort(-rem_now, kind="stable")]
        take = _fit_in_order(order, w, idle)
        x[take, t] = True
    return x



def _realise(inst: _PlanInstance, n: np.ndarray, gp: np.ndarray, kappa: np.ndarray, wc: str
             ) -> tuple[np.ndarray, float]:
    """Pack counts into rounds (two orders), apply the work-conservation rule, keep the best."""
    best: tuple[np.ndarray, float] | None = None
    orders = (False, True) if int(inst.w.max()) > 1 else (False,)
    for gangs_first in orders:
        x = _pack(inst, n, gangs_first=gangs_first)
        if wc == "exact":
            x = _work_conserve(inst, x, gp, kappa)
        elif wc == "greedy":
            x = _greedy_upstream(inst, x)
        value = _evaluate(inst, x)["objective"]
        if best is None or value > best[1]:
            best = (x, value)
    assert best is not None
    return best

