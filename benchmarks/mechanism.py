"""Round-based mechanism, placement and throughput estimation (Gavel §3.3, §5, §6): timings and
accuracy, measured side by side in one run.

    python benchmarks/mechanism.py [--quick]

``--quick`` takes about a minute (table 4 dominates). BLAS runs single-threaded unless
``OPENBLAS_NUM_THREADS`` / ``OMP_NUM_THREADS`` say otherwise (see the note at the imports).

Tables
------
1. Time per round of :func:`fairalloc.schedule_round` (priorities, ``lexsort``, vectorised
   Algorithm 1 walk) against the same algorithm written the way Gavel's scheduler writes it
   (dicts keyed by job, a Python loop computing priorities, ``list.sort``, a Python walk); both
   must return the same assignment.
2. Placement at 8192 GPUs (8-GPU servers): :func:`fairalloc.place` with and without lease
   renewals against a pure-Python best-fit-decreasing placement with the same rules (same GPU
   ids expected); restarts per round and consolidation.
3. Convergence of the received fractions to the target (``max |f - X|``) against the number of
   rounds, for single-GPU jobs and for gangs.
4. Throughput estimation: matrix completion error against the hidden fraction (synthetic
   low-rank matrices), and leave-one-out estimation on Gavel's measured pair throughputs
   (../shared/data/shockwave/tacc_throughputs.json, when present).
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import os
import sys
import time
from pathlib import Path

# Single-threaded BLAS (unless the caller set it): table 4 makes ~230,000 LAPACK calls on
# matrices of 60 x 80 or smaller (SVDs, batched 4 x 4 solves), where a multi-threaded BLAS only
# adds thread hand-offs; on a busy 2-core machine they made one 60 x 80 SVD 45 ms instead of
# 1 ms and ``--quick`` did not finish in 10 minutes (21 s for table 4 with one thread).
# Must be set before numpy loads its BLAS.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import fairalloc as fa  # noqa: E402
from fairalloc.mechanism import RoundScheduler, ServerLayout, place, schedule_round  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "shockwave" / "tacc_throughputs.json"
SF_MIX = ([1, 2, 4, 8], [0.7, 0.15, 0.1, 0.05])


def instance(n: int, k: int, cap_each: int, seed: int, gangs: bool = True):
    rng = np.random.default_rng(seed)
    sf = rng.choice(SF_MIX[0], size=n, p=SF_MIX[1]) if gangs else np.ones(n, dtype=int)
    cap = np.full(k, float(cap_each))
    X = rng.random((n, k)) * (rng.random((n, k)) < 0.7)
    X[X.sum(axis=1) == 0, 0] = 1.0
    X /= X.sum(axis=1, keepdims=True)
    load = (X * sf[:, None]).sum(axis=0)
    X /= max(1.0, (load / cap).max())
    return X, cap, sf


# --------------------------------------------------------------------------------------------
# reference implementations, written the way Gavel's scheduler writes them
# --------------------------------------------------------------------------------------------


def gavel_style_round(allocation, time_so_far, elapsed, num_workers, scale_factor, types):
    """Priorities, sort and walk over dicts keyed by job id (Algorithm 1, pure Python)."""
    entries = []
    for ti, wt in enumerate(types):
        for job, alloc in allocation.items():
            x = alloc[wt]
            t = time_so_far[job][wt]
            f = t / elapsed if elapsed > 0 else 0.0
            pr = 0.0 if x <= 0 else (math.inf if f <= 0 else x / f)
            deficit = x * elapsed - t
            entries.append((-pr, -deficit, -x, -scale_factor[job], job, ti, wt))
    entries.sort()
    remaining = dict(num_workers)
    scheduled = {}
    for *_, job, _ti, wt in entries:
        if job in scheduled:
            continue
        sf = scale_factor[job]
        if sf > remaining[wt]:
            continue
        remaining[wt] -= sf
        scheduled[job] = wt
    return scheduled


def python_place(type_index, sf, server_sizes, server_type, prev_job_gpus, renew):
    """Best-fit-decreasing placement with lease renewals, one job and one server at a time."""
    starts = np.concatenate([[0], np.cumsum(server_sizes)[:-1]]).tolist()
    free = [list(range(s, s + z)) for s, z in zip(starts, server_sizes)]
    gpu_server = {}
    for si, (s, z) in enumerate(zip(starts, server_sizes)):
        for g in range(s, s + z):
            gpu_server[g] = si
    jobs = [j for j in range(len(type_index)) if type_index[j] >= 0]
    jobs.sort(key=lambda j: (-sf[j], j))
    out = {}
    taken = set()
    if renew:
        for j in jobs:
            prev = prev_job_gpus.get(j)
            if prev and len(prev) == sf[j] and server_type[gpu_server[prev[0]]] == type_index[j]:
                out[j] = prev
                taken.update(prev)
        for si in range(len(free)):
            free[si] = [g for g in free[si] if g not in taken]
    for j in jobs:
        if j in out:
            continue
        need = sf[j]
        got = []
        servers = [si for si in range(len(free)) if server_type[si] == type_index[j]]
        while need > 0:
            fit = [si for si in servers if len(free[si]) >= need]
            if fit:
                si = min(fit, key=lambda s: (len(free[s]), s))
                take = need
            else:
                si = max(servers, key=lambda s: (len(free[s]), -s))
                take = len(free[si])
            got += free[si][:take]
            free[si] = free[si][take:]
            need -= take
        out[j] = sorted(got)
    return out


# --------------------------------------------------------------------------------------------
# tables
# --------------------------------------------------------------------------------------------


def table_rounds(sizes, rounds, warm):
    print("\n1. Time per round (3 types, n/4 workers per type, gangs 1/2/4/8 at 70/15/10/5 %)")
    print(f"{'jobs':>6} {'pairs':>7} {'schedule_round ms':>18} {'RoundScheduler ms':>18} "
          f"{'Gavel-style ms':>15} {'speed-up':>9} {'same assignment':>16}")
    types = ("v100", "p100", "k80")
    for n in sizes:
        X, cap, sf = instance(n, 3, n // 4, seed=n)
        sched = RoundScheduler(X, cap, scale_factor=sf)
        sched.run(warm)
        t, e = sched.received.copy(), sched.elapsed.copy()  # read-only views: own copies
        same = True
        ours, cached, ref = [], [], []
        for _ in range(rounds):
            t0 = time.perf_counter()
            b = sched.next_round()  # validated structure cached, history inside
            cached.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            a = schedule_round(X, cap, scale_factor=sf, received=t, elapsed=e)
            ours.append(time.perf_counter() - t0)
            alloc = {j: dict(zip(types, X[j].tolist())) for j in range(n)}
            tsf = {j: dict(zip(types, t[j].tolist())) for j in range(n)}
            sfd = dict(enumerate(sf.tolist()))
            t0 = time.perf_counter()
            g = gavel_style_round(alloc, tsf, float(e[0]), dict(zip(types, cap.tolist())), sfd,
                                  types)
            ref.append(time.perf_counter() - t0)
            got = {int(r): types[int(a.type_index[r])] for r in a.selection}
            same &= got == g and np.array_equal(a.type_index, b.type_index)
            rows = a.selection
            t[rows, a.type_index[rows]] += 1.0
            e = e + 1.0
            sched.step()
        o, c, r = 1e3 * np.median(ours), 1e3 * np.median(cached), 1e3 * np.median(ref)
        print(f"{n:>6} {3 * n:>7} {o:>18.2f} {c:>18.2f} {r:>15.2f} {r / c:>8.1f}x "
              f"{str(same):>16}")


def table_placement(rounds):
    print("\n2. Placement at 8192 GPUs (v100 4096, p100 2048, k80 2048; 8-GPU servers), "
          f"{rounds} rounds; gang demand 1.25 x the GPUs, targets Dirichlet(0.3) over types")
    cluster = fa.Cluster({"v100": 4096, "p100": 2048, "k80": 2048})
    lay = ServerLayout.uniform(cluster, 8)
    rng = np.random.default_rng(7)
    sf = rng.choice(SF_MIX[0], size=20000, p=SF_MIX[1])
    n = int(np.searchsorted(np.cumsum(sf), 1.25 * lay.num_gpus))
    sf = sf[:n]
    X = rng.dirichlet([0.3, 0.3, 0.3], size=n)
    load = (X * sf[:, None]).sum(axis=0)
    X = X / max(1.0, (load / cluster.capacity).max())
    sched = RoundScheduler(X, cluster, scale_factor=sf)
    assignments = [sched.step() for _ in range(rounds)]
    busy = np.mean([a.workers.sum() for a in assignments])
    running = np.mean([a.scheduled.sum() for a in assignments])
    print(f"   jobs {n}, mean running {running:.0f}, mean busy GPUs {busy:.0f} of "
          f"{lay.num_gpus}")
    print(f"{'placement':>28} {'ms/round':>9} {'restarts/round':>15} {'renewals/round':>15} "
          f"{'gangs consolidated':>19} {'same GPUs as Python':>20}")
    sizes = lay.server_size.tolist()
    stype = lay.server_type.tolist()
    for renew in (True, False):
        prev = None
        times, restarts, renewals, cons = [], [], [], []
        placements = []
        for a in assignments:
            t0 = time.perf_counter()
            p = place(a, lay, previous=prev, lease_renewal=renew)
            times.append(time.perf_counter() - t0)
            prev = p
            placements.append(p)
            restarts.append(p.restarts)
            renewals.append(p.renewals)
            run = a.scheduled & (a.scale_factor > 1)
            need = np.ceil(a.scale_factor[run] / 8)
            cons.append(float(np.mean(p.servers_spanned[run] == need)) if run.any() else 1.0)
        # the pure-Python reference on the same rounds
        ptimes, same = [], True
        prev_gpus: dict[int, list[int]] = {}
        for a, p in zip(assignments, placements):
            t0 = time.perf_counter()
            ref = python_place(a.type_index.tolist(), a.scale_factor.astype(int).tolist(),
                               sizes, stype, prev_gpus, renew)
            ptimes.append(time.perf_counter() - t0)
            same &= all(ref[r] == p.row_gpus(r).tolist() for r in ref)
            prev_gpus = ref
        label = "fairalloc, lease renewal" if renew else "fairalloc, no renewal"
        print(f"{label:>28} {1e3 * np.median(times):>9.1f} {np.mean(restarts[1:]):>15.0f} "
              f"{np.mean(renewals[1:]):>15.0f} {100 * np.mean(cons):>18.1f}% {str(same):>20}")
        label = "Python, lease renewal" if renew else "Python, no renewal"
        print(f"{label:>28} {1e3 * np.median(ptimes):>9.1f} {'':>15} {'':>15} {'':>19} {'':>20}")


def table_convergence(checkpoints):
    print("\n3. Convergence: max |received fraction - target| after R rounds "
          "(512 jobs, 3 types, 128 workers each; R * error in brackets)")
    header = "".join(f"{'R=' + str(r):>18}" for r in checkpoints)
    print(f"{'case':>34}{header}")
    cases = [
        ("single-GPU jobs, eligible=behind", False, "behind"),
        ("single-GPU jobs, eligible=all", False, "all"),
        ("gangs 1-8, eligible=behind", True, "behind"),
    ]
    for label, gangs, eligible in cases:
        X, cap, sf = instance(512, 3, 128, seed=3, gangs=gangs)
        sched = RoundScheduler(X, cap, scale_factor=sf, eligible=eligible)
        done, cells = 0, []
        for r in checkpoints:
            sched.run(r - done)
            done = r
            err = sched.error if eligible == "behind" else sched.shortfall
            cells.append(f"{err:.2e} ({err * r:5.1f})")
        print(f"{label:>34}" + "".join(f"{c:>18}" for c in cells))
    print("   (eligible=all: shortfall max (X - f)^+, since work conservation gives slack "
          "capacity away)")


def load_reference():
    raw = json.loads(DATA.read_text())
    types = ["k80", "p100", "v100"]
    keys = [key for key in raw["v100"] if ast.literal_eval(key)[1] == 1]
    r = len(keys)
    ref = np.full((r, r, 3), np.nan)
    for t, name in enumerate(types):
        for a, ka in enumerate(keys):
            entry = raw[name][ka]
            if entry["null"] <= 0:
                continue
            for b, kb in enumerate(keys):
                if kb in entry:
                    ref[a, b, t] = entry[kb][0] / entry["null"]
    return ref


def table_estimation():
    print("\n4a. Matrix completion of 60 x 80 rank-4 matrices (+0.1 % noise), hidden entries: "
          "relative RMSE (median of 5)")
    print(f"{'hidden':>7} {'ALS rank 4':>11} {'ALS auto':>9} {'(rank)':>7} "
          f"{'soft-impute':>12} {'ms ALS':>7}")
    for hidden in (0.2, 0.4, 0.6, 0.8):
        e_als, e_auto, e_si, ranks, ms = [], [], [], [], []
        for seed in range(5):
            rng = np.random.default_rng(seed)
            M = rng.random((60, 4)) @ rng.random((4, 80))
            M += 1e-3 * M.std() * rng.standard_normal(M.shape)
            W = rng.random(M.shape) >= hidden
            holes = np.where(W, M, np.nan)
            scale = np.sqrt(np.mean(M ** 2))

            def err(c, M=M, W=W, scale=scale):
                return np.sqrt(np.mean((c.matrix[~W] - M[~W]) ** 2)) / scale

            t0 = time.perf_counter()
            c = fa.complete_matrix(holes, rank=4, reg=1e-4, tol=1e-8, max_iter=2000)
            ms.append(1e3 * (time.perf_counter() - t0))
            e_als.append(err(c))
            c = fa.complete_matrix(holes, rank="auto", reg=1e-4, max_rank=8)
            e_auto.append(err(c))
            ranks.append(c.rank)
            c = fa.complete_matrix(holes, rank=4, method="soft_impute", reg=1e-3, tol=1e-8,
                                   max_iter=2000)
            e_si.append(err(c))
        print(f"{hidden:>7.0%} {np.median(e_als):>11.2e} {np.median(e_auto):>9.2e} "
              f"{int(np.median(ranks)):>7} {np.median(e_si):>12.2e} {np.median(ms):>7.1f}")

    if not DATA.exists():
        print("\n4b. real pair throughputs: data not present, skipped")
        return
    print("\n4b. Gavel's measured pair throughputs (26 single-GPU job types x 3 GPU types), leave "
          "one out: the new job is profiled against a fraction of the 25 references; RMSE of "
          "normalised throughput, mean of 3 seeds")
    print(f"{'profiled':>9} {'matched ref (Gavel)':>20} {'completed row':>14} "
          f"{'column means':>13} {'best ref (oracle)':>18} {'match = oracle':>15} {'rank':>5}")
    ref = load_reference()
    r = ref.shape[0]
    for frac in (0.1, 0.25, 0.5, 0.75):
        rows = {"own": [], "fp": [], "mean": [], "best": [], "hit": [], "rank": []}
        for seed in range(3):
            rng = np.random.default_rng(seed)
            for i in range(r):
                others = np.array([j for j in range(r) if j != i])
                sub = ref[np.ix_(others, others)]
                truth = ref[i][others]
                measured = np.where(rng.random(truth.shape) < frac, truth, np.nan)
                if np.isnan(measured).all():
                    measured.flat[np.flatnonzero(~np.isnan(truth))[0]] = truth[~np.isnan(truth)][0]
                est = fa.ThroughputEstimator(sub, rank=2)
                m = est.match(measured)
                ok = ~np.isnan(truth)
                errs = [np.sqrt(np.mean((est.reference[j][ok] - truth[ok]) ** 2))
                        for j in range(r - 1)]
                rows["own"].append(np.sqrt(np.mean((m.own[0][ok] - truth[ok]) ** 2)))
                rows["fp"].append(np.sqrt(np.mean((m.fingerprint[0][ok] - truth[ok]) ** 2)))
                rows["mean"].append(np.sqrt(np.mean(
                    (est.reference.mean(axis=0)[ok] - truth[ok]) ** 2)))
                rows["best"].append(min(errs))
                rows["hit"].append(int(np.argmin(errs)) == int(m.reference[0]))
                rows["rank"].append(m.rank)
        print(f"{frac:>9.0%} {np.mean(rows['own']):>20.3f} {np.mean(rows['fp']):>14.3f} "
              f"{np.mean(rows['mean']):>13.3f} {np.mean(rows['best']):>18.3f} "
              f"{100 * np.mean(rows['hit']):>14.0f}% {int(np.median(rows['rank'])):>5}")
    auto = fa.ThroughputEstimator(ref, rank="auto")
    print(f"   rank='auto' on all 26 references picks rank {auto.rank} "
          f"(hold-out RMSE by rank: {np.round(auto.validation_rmse, 3).tolist()})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer rounds")
    args = parser.parse_args()
    print(f"fairalloc mechanism benchmark (numpy {np.__version__}, python "
          f"{sys.version.split()[0]})")
    if args.quick:
        table_rounds([512, 2048], rounds=5, warm=5)
        table_placement(rounds=4)
        table_convergence([10, 100])
    else:
        table_rounds([512, 2048, 8192], rounds=15, warm=20)
        table_placement(rounds=12)
        table_convergence([10, 100, 1000])
    table_estimation()


if __name__ == "__main__":
    main()
