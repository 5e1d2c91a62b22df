"""The cluster domain of the property checks (`fairalloc.testing.ClusterDomain`): jobs on a
heterogeneous cluster, ``policy(jobs, cluster) -> x`` (Gavel §3-4); what each property means
there is documented in `fairalloc.testing.domains`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
from hypothesis import strategies as st

from .. import properties as props
from ..errors import InfeasibleError
from . import strategies as fst
from .domain_base import (
    CLUSTER_DENSITY,
    CLUSTER_ENTITY_WEIGHTS,
    CLUSTER_JOBS,
    CLUSTER_PAIR_SLOWDOWN,
    CLUSTER_STEPS,
    CLUSTER_THROUGHPUTS,
    CLUSTER_TYPES,
    CLUSTER_WORKERS,
    Domain,
    Outcome,
    property_result,
)

__all__ = ["ClusterDomain"]


def _pow2(x: Any) -> np.ndarray:
    """Power of two at or below ``x`` (exact scaling factors); 1 where ``x <= 0``."""
    x = np.asarray(x, dtype=float)
    _, e = np.frexp(np.where(x > 0, x, 1.0))
    return np.ldexp(1.0, e - 1)


class ClusterDomain(Domain):
    """Jobs on a heterogeneous cluster: ``policy(jobs, cluster) -> x`` (Gavel §3-4).

    Parameters
    ----------
    n, types, workers, names
        Jobs, accelerator types, workers per type, type names
        (`fairalloc.testing.strategies.cluster_instances`).
    max_scale_factor, weighted, values, density, integers, steps, elapsed, isolated
        As in `fairalloc.testing.strategies.job_sets`:
        ``max_scale_factor=4`` draws gangs, ``density=1.0`` makes every job runnable on every
        type (no "cannot run" zeros), ``elapsed=(0, 3600)`` and ``isolated=(0, 3600)`` give
        multi-round state (time since start, isolated time so far).
    entities, entity_weight_values, entity_policies
        Hierarchical instances (Gavel §4.2): ``entities=(1, 3)`` groups the jobs into entities
        with weights and per-entity policies, passed as ``entities=``, ``entity_weights=``,
        ``entity_policies=`` (``fa.water_filling`` takes them as they are). Envy, sharing
        incentive and proportionality then use each job's hierarchical weight ``w_e w_i /
        sum_{j in e} w_j`` (the entity's share split among its jobs by job weight).
    drained
        Drained types (a count or range, e.g. ``(0, 1)``): types with 0 workers among the
        others (with ``isolated=`` state: capacity removed mid-trace). The policy is then given
        a `fairalloc.testing.strategies.ClusterState` (``types``, ``capacity`` with zeros,
        ``workers``, ``present``) instead of a `fairalloc.Cluster`, which lists only types with
        workers: wrap a fairalloc policy with `fairalloc.solve_round`, which takes drained
        types. A drained type takes no time (``x = 0`` there).
    pairs, pair_slowdown
        Space sharing (Gavel §3.1): ``pairs=(0, 2)`` draws that many job pairs that may share a
        worker, each member running at a ``pair_slowdown`` fraction of its own throughput,
        passed as ``pairs=`` (`fairalloc.JobPairs`; every fairalloc throughput policy takes
        it). The allocation has ``n + P`` rows: each job's own time, then the pairs' (a result
        object with ``x`` and ``pair_x``, where ``x`` sums own and pair time as fairalloc's
        results do, is read as such). A job's
        throughput and time sum over its own row and its pairs' rows; a pair uses the larger
        gang of its members; for envy a pair's worker-time counts half for each member.

    Notes
    -----
    Every option is reachable from ``fairalloc check --domain cluster --domain-option
    NAME=VALUE`` (e.g. ``--domain-option density=1 --domain-option entities=1,3``).

    Examples
    --------
    >>> dom = ClusterDomain(entities=(1, 3), density=1.0)
    >>> dom.label, dom.properties[:2]
    ('cluster', ('runs', 'feasible'))
    """

    label = "cluster"
    agent_word = "job"
    instance_type = fst.ClusterInstance
    properties = ("runs", "feasible", "market_clearing", "envy_free", "sharing_incentive",
                  "proportionality", "pareto_optimal", "strategy_proof")
    attrs = ("x", "allocation")

    def __init__(self, *, n: Any = CLUSTER_JOBS, types: Any = CLUSTER_TYPES,
                 workers: Any = CLUSTER_WORKERS, names: Sequence[str] = fst.ACCELERATOR_TYPES,
                 max_scale_factor: int = 1, weighted: bool = False,
                 values: Any = CLUSTER_THROUGHPUTS, density: float = CLUSTER_DENSITY,
                 integers: bool = False, steps: Any = CLUSTER_STEPS,
                 elapsed: Any = None, isolated: Any = None, entities: Any = None,
                 entity_weight_values: Any = CLUSTER_ENTITY_WEIGHTS,
                 entity_policies: Sequence[str] = ("fairness",), drained: Any = None,
                 pairs: Any = None, pair_slowdown: Any = CLUSTER_PAIR_SLOWDOWN) -> None:
        self._kw = {"n": n, "types": types, "workers": workers, "max_scale_factor":
                    max_scale_factor, "weighted": weighted, "values": values,
                    "density": density, "integers": integers, "steps": steps,
                    "elapsed": elapsed, "isolated": isolated, "entities": entities,
                    "entity_weight_values": entity_weight_values,
                    "entity_policies": tuple(entity_policies), "drained": drained,
                    "pairs": pairs, "pair_slowdown": pair_slowdown}
        self._strategy = fst.cluster_instances(names=names, **self._kw)

    def __repr__(self) -> str:
        return "ClusterDomain(" + ", ".join(f"{k}={v!r}" for k, v in self._kw.items()) + ")"

    def weights(self, inst: fst.ClusterInstance) -> np.ndarray:
        """Each job's weight: ``jobs.weight``, or with entities the hierarchical weight
        ``w_e w_i / sum_{j in e} w_j``."""
        w = inst.jobs.weight
        if inst.entities is None:
            return w
        lab = np.asarray(inst.entities)
        ew = np.array([inst.entity_weights[int(e)] for e in lab]) if inst.entity_weights \
            else np.ones(lab.size)
        total = np.bincount(lab, weights=w)[lab]
        return ew * w / total

    def instances(self) -> st.SearchStrategy[fst.ClusterInstance]:
        return self._strategy

    @staticmethod
    def _fits(inst: fst.ClusterInstance) -> np.ndarray:
        j, c = inst.jobs, inst.cluster
        return j.scale_factor[:, None] <= c.capacity[None, :]

    @staticmethod
    def _allowed(inst: fst.ClusterInstance) -> np.ndarray:
        return (inst.jobs.throughput > 0) & ClusterDomain._fits(inst)

    @staticmethod
    def _pair_allowed(inst: fst.ClusterInstance) -> np.ndarray:
        """(P, k): where each pair can run (both members can, its gang fits)."""
        pp = inst.pairs
        if pp is None:
            return np.zeros((0, inst.cluster.capacity.size), dtype=bool)
        gang = ClusterDomain._gang(inst)
        return (pp.throughput.sum(axis=2) > 0) & (gang[:, None] <= inst.cluster.capacity[None])

    @staticmethod
    def _gang(inst: fst.ClusterInstance) -> np.ndarray:
        """(P,): workers a pair occupies (the larger gang of its members)."""
        pp = inst.pairs
        if pp is None:
            return np.zeros(0)
        sf = inst.jobs.scale_factor
        return np.maximum(sf[pp.members[:, 0]], sf[pp.members[:, 1]])

    @staticmethod
    def _per_job(inst: fst.ClusterInstance, per_pair: np.ndarray) -> np.ndarray:
        """(n, ...): the sum, for each job, of ``per_pair[p, ..., m]`` over the pairs ``p``
        it is member ``m`` of."""
        out = np.zeros((inst.n, *per_pair.shape[1:-1]))
        if inst.pairs is not None:
            for m in (0, 1):  # the two member slots (vectorised over pairs)
                np.add.at(out, inst.pairs.members[:, m], per_pair[..., m])
        return out

    def parse(self, raw: Any, inst: fst.ClusterInstance) -> Outcome:
        """As `fairalloc.testing.domains.parse_outcome`; a result object with a ``pair_x``
        (fairalloc's convention: ``x`` sums each job's own and pair time) becomes the domain's
        ``n + P`` rows (each job's own time, then the pairs')."""
        out = super().parse(raw, inst)
        pair_x = getattr(raw, "pair_x", None)
        if pair_x is None or not out.answered or inst.pairs is None:
            return out
        x = out.allocation
        assert x is not None
        try:
            pair_x = np.array(pair_x, dtype=np.float64, copy=True)
            solo = x - self._per_job(inst, np.repeat(pair_x[:, :, None], 2, axis=2))
            alloc = np.vstack([solo, pair_x])
        except (TypeError, ValueError) as exc:
            return Outcome(x, out.prices, problem=f"the policy's x and pair_x do not fit "
                                                   f"together ({exc})")
        return Outcome(alloc, out.prices)

    def _solo(self, inst: fst.ClusterInstance, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(solo rows (n, k), pair rows (P, k)) of an allocation."""
        return x[:inst.n], x[inst.n:]

    def true_row(self, inst: fst.ClusterInstance, agent: int) -> np.ndarray:
        return np.array(inst.jobs.throughput[agent], copy=True)

    def valid_row(self, inst: fst.ClusterInstance, agent: int, row: np.ndarray) -> bool:
        return bool(np.all(row >= 0) and np.any((row > 0) & self._fits(inst)[agent]))

    def feasible(self, inst: fst.ClusterInstance, x: np.ndarray, tol: float
                 ) -> props.PropertyResult:
        jobs, cap = inst.jobs, inst.cluster.capacity
        P = 0 if inst.pairs is None else inst.pairs.num_pairs
        shape = (jobs.n + P, cap.size)
        if x.shape != shape:
            return property_result("feasible", False, np.inf, message=(
                f"the allocation has shape {x.shape}; expected {shape} (jobs "
                f"{'+ pairs ' if P else ''}x types)"))
        if not np.all(np.isfinite(x)):
            i, j = (int(v) for v in np.argwhere(~np.isfinite(x))[0])
            return property_result("feasible", False, np.inf, i,
                                   message=f"x[{i}, {j}] is {x[i, j]}")
        types = inst.cluster.types
        allowed = np.vstack([self._allowed(inst), self._pair_allowed(inst)])
        # worst offence of each kind, in time-fraction units (workers for capacity rows)
        bad = np.where(allowed, np.maximum(-x, x - 1.0), np.abs(x))
        i, j = (int(v) for v in np.unravel_index(int(np.argmax(bad)), shape))
        if bad[i, j] > tol and i >= jobs.n:
            a, b = (int(v) for v in inst.pairs.members[i - jobs.n])
            why = ("a time fraction must lie in [0, 1]" if allowed[i, j] else
                   f"the pair cannot run there (a member cannot, or its gang does not fit "
                   f"in {cap[j]:g} workers)")
            return property_result("feasible", False, float(bad[i, j]), a, message=(
                f"pair {i - jobs.n} (jobs {a}, {b}) gets x = {x[i, j]:.6g} on {types[j]}: "
                f"{why}"))
        if bad[i, j] > tol:
            why = ("a time fraction must lie in [0, 1]" if allowed[i, j] else
                   "the job cannot run there" if jobs.throughput[i, j] <= 0 else
                   f"its gang of {jobs.scale_factor[i]:g} does not fit in "
                   f"{cap[j]:g} workers")
            return property_result("feasible", False, float(bad[i, j]), int(i), message=(
                f"job {i} gets x = {x[i, j]:.6g} on {types[j]}: {why}"))
        solo, pair = self._solo(inst, x)
        time_ = solo.sum(axis=1) + self._per_job(inst, np.repeat(
            pair.sum(axis=1)[:, None], 2, axis=1))
        busy = time_ - 1.0
        i = int(np.argmax(busy))
        if busy[i] > tol:
            return property_result("feasible", False, float(busy[i]), i, message=(
                f"job {i} runs {time_[i]:.6g} of its time (more than all of it"
                f"{', its pairs included' if inst.pairs is not None else ''})"))
        used = self._used(inst, x)
        over = used - cap
        j = int(np.argmax(over))
        if over[j] > tol * max(1.0, float(cap[j])):
            return property_result("feasible", False, float(over[j]), message=(
                f"type {types[j]} has {cap[j]:g} workers but the jobs use {used[j]:.6g}"))
        return property_result("feasible", True, 0.0, message="the allocation is feasible")

    def _used(self, inst: fst.ClusterInstance, x: np.ndarray) -> np.ndarray:
        """(k,): workers of each type an allocation uses (pairs use their larger gang)."""
        solo, pair = self._solo(inst, np.maximum(x, 0.0))
        return inst.jobs.scale_factor @ solo + self._gang(inst) @ pair

    def _clipped(self, inst: fst.ClusterInstance, x: np.ndarray) -> np.ndarray:
        allowed = np.vstack([self._allowed(inst), self._pair_allowed(inst)])
        x = np.where(allowed, np.clip(x, 0.0, 1.0), 0.0)
        solo, pair = self._solo(inst, x)
        busy = np.maximum(solo.sum(axis=1) + self._per_job(inst, np.repeat(
            pair.sum(axis=1)[:, None], 2, axis=1)), 1.0)
        # every row containing a job shrinks by at least that job's excess
        row_busy = busy if inst.pairs is None else np.r_[
            busy, np.maximum(busy[inst.pairs.members[:, 0]], busy[inst.pairs.members[:, 1]])]
        x = x / row_busy[:, None]
        used = self._used(inst, x)
        cap = inst.cluster.capacity
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(used > cap, cap / used, 1.0)
        return x * scale[None, :]

    def throughput(self, inst: fst.ClusterInstance, x: np.ndarray) -> np.ndarray:
        """Effective throughput ``sum_j T[i, j] x[i, j]`` of every job (Gavel §3.1), plus
        what it gets from its pairs' rows (space sharing)."""
        solo, pair = self._solo(inst, x)
        own = np.einsum("ij,ij->i", np.where(self._allowed(inst), inst.jobs.throughput, 0.0),
                        solo)
        if inst.pairs is None:
            return own
        Tp = np.where(self._pair_allowed(inst)[:, :, None], inst.pairs.throughput, 0.0)
        return own + self._per_job(inst, np.einsum("pjm,pj->pm", Tp, pair))

    def share_weights(self, inst: fst.ClusterInstance) -> np.ndarray:
        """The weights sharing incentive promises shares by: `weights`, except that in a FIFO
        entity the whole entity weight goes to its first job (Gavel §4.3: the first job in the
        queue receives the entire weight; later ones are promised nothing)."""
        w = self.weights(inst)
        if inst.entities is None or not inst.entity_policies:
            return w
        lab = np.asarray(inst.entities)
        fifo = np.array([inst.entity_policies.get(int(e)) == "fifo" for e in lab])
        if not fifo.any():
            return w
        first = np.zeros(lab.size, dtype=bool)
        first[np.unique(lab, return_index=True)[1]] = True
        ew = np.array([(inst.entity_weights or {}).get(int(e), 1.0) for e in lab])
        return np.where(fifo, np.where(first, ew, 0.0), w)

    def share(self, inst: fst.ClusterInstance) -> np.ndarray:
        """The weight-share allocation: job ``i`` gets ``f_i = w_i / sum w`` of every type's
        workers, running ``c_j f_i / max(s_i, f_i sum_j c_j)`` of its time on type ``j`` where
        it can run (Gavel §4.1's ``X^isolated``; rows capped at all of its time); ``w`` is
        `share_weights`."""
        jobs, cap = inst.jobs, inst.cluster.capacity
        w = self.share_weights(inst)
        f = w / w.sum()
        x = cap[None, :] * f[:, None] / np.maximum(jobs.scale_factor, f * cap.sum())[:, None]
        x = np.where(self._allowed(inst), x, 0.0)
        P = 0 if inst.pairs is None else inst.pairs.num_pairs
        return np.vstack([x, np.zeros((P, cap.size))])

    def share_guarantee(self, inst: fst.ClusterInstance) -> np.ndarray:
        """What sharing incentive promises each job: ``(min_k d_k / d_i) throughput(i, X^w)``
        with ``X^w`` = `share` and ``d_i`` the part of its nominal share ``X^w`` delivers
        (proofs/weighted_sharing_incentive.md): ``d_i = r_i q_i``, ``r_i = min(1, s_i / (f_i
        sum_j c_j))`` the part of its weight share job ``i`` can use in its time and ``q_i``
        the part of ``sum_j T_ij c_j`` on the types its gang fits.

        With no share capped and every gang fitting everywhere (``d = 1``) this is the weight
        share itself; with equal weights and gangs of one, the isolated split (Gavel §4.1). A
        capped share lowers what weighted max-min fairness can promise the others, in
        proportion.
        """
        jobs, cap = inst.jobs, inst.cluster.capacity
        w = self.share_weights(inst)
        f = w / w.sum()
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(f > 0, np.minimum(1.0, jobs.scale_factor / (f * cap.sum())), 1.0)
            T = np.maximum(jobs.throughput, 0.0) * cap[None, :]
            nominal = T.sum(axis=1)
            q = np.where(nominal > 0, np.where(self._allowed(inst), T, 0.0).sum(axis=1)
                         / nominal, 1.0)
        d = r * q
        live = (f > 0) & (d > 0)
        if not live.any():
            return np.zeros(inst.n)
        return np.where(live, float(d[live].min()) / np.where(live, d, 1.0), 0.0) \
            * self.throughput(inst, self.share(inst))

    def bundle_values(self, inst: fst.ClusterInstance, x: np.ndarray) -> np.ndarray:
        """``V[i, k]``: throughput job ``i`` gets from job ``k``'s worker-time, scaled by the
        weight ratio ``w_i / w_k`` (so ``V[i, i]`` is ``i``'s own throughput).

        Job ``k`` holds ``x[k, j] * s_k`` worker-time of type ``j`` (plus half of the
        worker-time of each pair it is in); job ``i`` (gang ``s_i``)
        can turn ``w_i / w_k`` times it into time fractions on the types it can run on, at
        most 1 in total: a fractional knapsack filled from its fastest type down. Scaling the
        bundle (rather than dividing values by weights) keeps the comparison right for jobs
        whose time is capped.
        """
        jobs = inst.jobs
        T = np.where(self._allowed(inst), jobs.throughput, 0.0)
        order = np.argsort(-T, axis=1, kind="stable")  # (n, k): i's types, fastest first
        rate = np.take_along_axis(T, order, axis=1)  # (n, k)
        solo, pair = self._solo(inst, np.maximum(x, 0.0))
        work = solo * jobs.scale_factor[:, None]  # (n, k) worker-time of k
        if inst.pairs is not None:  # half of each pair's worker-time for each member
            half = 0.5 * pair * self._gang(inst)[:, None]
            work = work + self._per_job(inst, np.repeat(half[:, :, None], 2, axis=2))
        avail = work[:, order].transpose(1, 0, 2)  # avail[i, k, j] = work[k, order[i, j]]
        w = self.weights(inst)
        avail = avail * (w[:, None] / w[None, :] / jobs.scale_factor[:, None])[:, :, None]
        avail = np.where(rate[:, None, :] > 0, avail, 0.0)
        filled = np.minimum(np.cumsum(avail, axis=2), 1.0)
        time_ = np.diff(filled, axis=2, prepend=0.0)
        return np.einsum("ikj,ij->ik", time_, rate)

    def explain(self, name: str, inst: fst.ClusterInstance, out: Outcome, tol: float
                ) -> dict[str, Any]:
        """Extra fields of a failing property's counterexample: the improving allocation of
        ``pareto_optimal``."""
        if name != "pareto_optimal" or out.allocation is None:
            return {}
        found = self.pareto_improvement(inst, self._clipped(inst, out.allocation))
        return {} if found is None else {"improvement": found}

    def check(self, name: str, inst: fst.ClusterInstance, out: Outcome, tol: float
              ) -> props.PropertyResult:
        jobs, cap, types = inst.jobs, inst.cluster.capacity, inst.cluster.types
        x = out.allocation
        assert x is not None
        w = self.weights(inst)
        tp = self.throughput(inst, x)
        if name == "market_clearing":
            p = out.prices
            assert p is not None
            if p.shape != cap.shape or not np.all(np.isfinite(p)) or np.any(p < 0):
                return property_result(name, False, np.inf, message=(
                    f"the policy's prices {p.tolist()} are not {cap.size} finite, "
                    "non-negative numbers"))
            solo, pair = self._solo(inst, x)
            workers = np.vstack([solo * jobs.scale_factor[:, None],
                                 pair * self._gang(inst)[:, None]])
            r = props.market_clearing(workers, p, cap, tol=tol)
            if r.passed or r.agent is None:
                return r
            j = r.agent
            used = float(self._used(inst, x)[j])
            return property_result(name, False, r.violation, None, None, (
                f"type {types[j]} has price {p[j]:.4g} but only {used:.6g} of its {cap[j]:g} "
                "workers are used"))
        if name == "envy_free":
            V = self.bundle_values(inst, x)
            own = np.diag(V)
            envy = V - own[:, None]
            np.fill_diagonal(envy, 0.0)
            # relative to the larger of the two values (unit free: no absolute floor here);
            # of the pairs beyond it, the largest envy is reported
            over = envy > tol * np.maximum(np.abs(own)[:, None], np.abs(V))
            ok = not bool(over.any())
            worst = np.where(over, envy, -np.inf) if not ok else envy
            i, k = (int(v) for v in np.unravel_index(int(np.argmax(worst)), envy.shape))
            ratio = "" if w[i] == w[k] else f" scaled by its weight ratio {w[i] / w[k]:.4g}"
            return property_result(name, ok, float(envy[i, k]), int(i), int(k),
                           "no job prefers another's allocation" if ok else
                           f"job {i} would get throughput {V[i, k]:.6g} from job {k}'s "
                           f"allocation{ratio} but gets {own[i]:.6g} from its own "
                           f"(envy {envy[i, k]:.4g})")
        if name in ("sharing_incentive", "proportionality"):
            if name == "sharing_incentive":
                fair = self.share_guarantee(inst)
                plain = self.throughput(inst, self.share(inst))
                what = "its weight share of every type"
                if np.any(fair < plain):
                    what += (" (times d_min / d_i: a share that cannot all be used lowers what "
                             "weighted max-min can promise)")
            else:
                best = np.where(self._allowed(inst), jobs.throughput, 0.0).max(axis=1)
                fair = w / w.sum() * best
                what = "its weight share of running alone on its fastest type"
            short = fair - tp
            over = short > tol * fair  # relative to the share
            ok = not bool(over.any())
            i = int(np.argmax(np.where(over, short, -np.inf) if not ok else short))
            return property_result(name, ok, float(short[i]), i, None,
                           f"every job is at least as well off as with {what}" if ok else
                           f"job {i} gets throughput {tp[i]:.6g} < {fair[i]:.6g} from {what} "
                           f"(short by {short[i]:.4g})")
        if name == "pareto_optimal":
            return self._pareto(inst, self._clipped(inst, x), tol)
        raise AssertionError(name)  # pragma: no cover

    def _pareto_lp(self, inst: fst.ClusterInstance
                   ) -> tuple[sp.csr_matrix, sp.csr_matrix, np.ndarray, np.ndarray, np.ndarray]:
        """(utility rows, feasibility rows, their bounds, edge rows, edge columns) of the
        allocations of ``inst`` over its usable (job, type) edges."""
        jobs, cap = inst.jobs, inst.cluster.capacity
        n, k = jobs.throughput.shape
        allowed = np.vstack([self._allowed(inst), self._pair_allowed(inst)])
        rows, cols = np.nonzero(allowed)  # edge = (allocation row, type)
        E = rows.size
        e = np.arange(E)
        solo = rows < n
        if inst.pairs is None:
            member, mem_tp = rows[:, None], jobs.throughput[rows, cols][:, None]
            workers = jobs.scale_factor[rows]
        else:  # a pair edge serves both members, with their pair throughputs
            pr = np.where(solo, 0, rows - n)
            mem = inst.pairs.members[pr]
            member = np.where(solo[:, None], np.stack([rows, rows], axis=1), mem)
            tp_pair = inst.pairs.throughput[pr, cols]  # (E, 2)
            tp_solo = jobs.throughput[np.minimum(rows, n - 1), cols]
            mem_tp = np.where(solo[:, None], np.stack([tp_solo, np.zeros(E)], axis=1), tp_pair)
            workers = np.where(solo, jobs.scale_factor[np.minimum(rows, n - 1)],
                               self._gang(inst)[pr])
        slots = member.shape[1]
        ee = np.repeat(e, slots)
        # the second slot of a solo edge repeats its job: count its time once
        once = np.ones((E, slots))
        if slots == 2:
            once[:, 1] = np.where(solo, 0.0, 1.0)
        time_rows = sp.csr_matrix((once.ravel(), (member.ravel(), ee)), shape=(n, E))
        cap_rows = sp.csr_matrix((workers, (cols, e)), shape=(k, E))
        util_rows = sp.csr_matrix((mem_tp.ravel(), (member.ravel(), ee)), shape=(n, E))
        return (util_rows, sp.vstack([time_rows, cap_rows]).tocsr(), np.r_[np.ones(n), cap],
                rows, cols)

    def _pareto(self, inst: fst.ClusterInstance, x: np.ndarray, tol: float
                ) -> props.PropertyResult:
        """``max sum t`` over feasible ``y`` with ``T_i . y_i >= T_i . x_i + t_i``, ``t >= 0``."""
        own = self.throughput(inst, x)
        util, feas, upper, rows, _ = self._pareto_lp(inst)
        # each job's row at unit scale (HiGHS's tolerances are absolute): throughputs divided
        # by a power of two near the job's best one, so the verdict is unit free
        best = self._best(util)
        unit = _pow2(best)
        try:
            gain = props.pareto_gain(sp.diags(1.0 / unit) @ util, own / unit, feas, upper,
                                     np.ones(rows.size)) * unit
        except InfeasibleError:
            # x is feasible within tol but its throughputs lie (by solver accuracy) just
            # beyond the feasible set: nothing can improve on it
            return property_result("pareto_optimal", True, 0.0,
                                   message="no Pareto improvement exists (x is on the edge "
                                           "of the feasible set, within tol)")
        # relative to each job's best level: its throughput alone on its fastest usable type;
        # of the jobs beyond it, the one that gains the most is reported
        over = gain > tol * np.maximum(best, own)
        ok = not bool(over.any())
        i = int(np.argmax(np.where(over, gain, -np.inf))) if not ok else int(np.argmax(gain))
        return property_result("pareto_optimal", ok, float(gain[i]), i, None,
                       "no Pareto improvement exists" if ok else
                       f"job {i} can gain {gain[i]:.4g} throughput (from {own[i]:.6g}) with "
                       "no job worse off")

    @staticmethod
    def _best(util: sp.csr_matrix) -> np.ndarray:
        """Each job's best throughput over its usable edges (1 where it has none)."""
        best = np.asarray(util.max(axis=1).todense()).reshape(-1)
        return np.where(best > 0, best, 1.0)

    def scale(self, inst: fst.ClusterInstance) -> float:
        """The instance's value scale: its largest throughput (1 when all are zero)."""
        top = float(inst.jobs.throughput.max())
        return top if top > 0 and np.isfinite(top) else 1.0

    def pareto_improvement(self, inst: fst.ClusterInstance, x: np.ndarray
                           ) -> np.ndarray | None:
        """A feasible allocation ``y`` that gives every job at least its throughput under
        ``x`` and maximises the total gain (HiGHS through ``scipy.optimize.linprog``);
        ``None`` when the LP has no solution."""
        from scipy.optimize import linprog

        n, k = inst.jobs.throughput.shape
        own = self.throughput(inst, x)
        util, feas, upper, rows, cols = self._pareto_lp(inst)
        unit = _pow2(self._best(util))  # each job's row at unit scale, as in _pareto
        util, own = sp.diags(1.0 / unit) @ util, own / unit
        E = rows.size
        A = sp.vstack([sp.hstack([-util, sp.identity(n, format="csr")]),
                       sp.hstack([feas, sp.csr_matrix((feas.shape[0], n))])]).tocsr()
        res = linprog(np.r_[np.zeros(E), -np.ones(n)], A_ub=A, b_ub=np.r_[-own, upper],
                      bounds=[(0.0, 1.0)] * E + [(0.0, None)] * n, method="highs")
        if res.status != 0 or res.x is None:
            return None
        P = 0 if inst.pairs is None else inst.pairs.num_pairs
        y = np.zeros((n + P, k))
        y[rows, cols] = res.x[:E]
        return y

    def own_value(self, inst: fst.ClusterInstance, agent: int, x: np.ndarray) -> float:
        return float(self.throughput(inst, x)[agent])
