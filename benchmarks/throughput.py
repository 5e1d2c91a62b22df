"""Gavel effective-throughput policies: fairalloc against reference formulations, one run.

Instances (same for every row): 3 accelerator types (v100, p100, k80) with n/4 workers each,
scale factors in {1, 2, 4, 8} (70/10/15/5 %), log-normal base speeds with per-job
P100/V100 and K80/V100 ratios, weights 1.

Rows
----
* max-min fairness (LAS, Gavel §4.1) at 2048 and 8192 jobs: fairalloc's structured solver
  (first stage only, the same program as the reference; and with its work-conserving second
  stage) against the reference *vectorised cvxpy formulation written the way Gavel writes it*
  (``Maximize(min(sum(multiply(coeff, x), axis=1)))``), solved by Clarabel. Objective
  agreement is the relative difference of the max-min levels. Both sides: fastest of 3 runs
  (the reference's includes cvxpy's compilation, which Gavel pays every round).
* hierarchical water-filling (§4.3), 2048 jobs, 3 entities (weights 1, 2, 3, fairness inside)
  against a reference LP-sequence implementation in cvxpy + Clarabel (per level: the level LP,
  then capped bottleneck LPs until every rising job is decided -- the same exact algorithm
  without the dual/constructive classification or the structured solver). Agreement: the
  largest relative difference of the jobs' final levels.
* finish-time fairness (§4.1), 2048 jobs: fairalloc (Dinkelbach sequence of LPs) against the
  vectorised cvxpy SOCP (``t + steps * inv_pos(throughput) <= rho * D``) solved by Clarabel.
* space-sharing max-min fairness, 2048 jobs, every pair of jobs with equal scale factor
  (~1.1 M pairs x 3 types): fairalloc's column generation; no reference (Gavel's dense
  jobs x pairs x types tensor does not fit in memory); peak memory and certified gap reported.

Run: ``python benchmarks/throughput.py`` (add ``--quick`` for 512/2048 jobs only).

``--water-filling`` instead prints water-filling's scaling (`water_filling_scaling`): 3
entities at n = 1024 ... 8192 (``--wf-max``) and single-level with 10 types at n = 128 ... 512
(``--wf-types-max``), time, level LPs, LPs and the fitted exponent.

``--wf-saturating N [N ...]`` instead runs only issue #28's saturating case (10 types, 1.5 GPUs
per job, single level) at the given sizes, each solved once: thread CPU seconds, level LPs,
LPs, simplex iterations, iterations and CPU per level LP, status; a size where no strategy
answers prints its error instead of stopping the run (`saturating_rows`).

``--random N`` instead runs N random instances (1000-4000 jobs, 2-4 types, missing
throughputs on every other one, weights on two in three, gangs up to 8, capacities from n/50
to n per type) through max-min and finish-time fairness with their work-conserving stages:
the structured solvers (``method="auto"``) against HiGHS on the whole LPs
(``method="highs"``), with the number of stages the structured path handed to the full LP
and the largest objective difference.
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np

import fairalloc as fa
from fairalloc.data import JobPairs
from fairalloc.throughput import max_min_space_sharing


def instance(n: int, seed: int = 0) -> tuple[fa.Jobs, fa.Cluster]:
    rng = np.random.default_rng(seed)
    base = rng.lognormal(0.0, 0.8, n) * 10.0
    ratio = np.c_[np.ones(n), rng.uniform(0.45, 0.9, n), rng.uniform(0.1, 0.5, n)]
    T = base[:, None] * ratio
    s = rng.choice([1, 2, 4, 8], n, p=[0.7, 0.1, 0.15, 0.05])
    g = n // 4
    cluster = fa.Cluster({"v100": g, "p100": g, "k80": g})
    jobs = fa.Jobs(T, scale_factor=s, steps_remaining=rng.uniform(1e3, 1e5, n),
                   elapsed=rng.uniform(0.0, 3600.0, n))
    return jobs, cluster


def _normaliser(jobs: fa.Jobs, cluster: fa.Cluster) -> np.ndarray:
    cap = cluster.capacity
    return jobs.throughput @ (cap / cap.sum())


# --------------------------------------------------------------------------------------------
# references
# --------------------------------------------------------------------------------------------
def reference_max_min(jobs: fa.Jobs, cluster: fa.Cluster) -> float:
    """Gavel's LAS program, vectorised cvxpy (as in its max_min_fairness policy), Clarabel."""
    import cvxpy as cp

    T = jobs.throughput
    s = jobs.scale_factor
    coeff = T * (s / (jobs.weight * _normaliser(jobs, cluster)))[:, None]
    x = cp.Variable(T.shape)
    scale_factors_array = np.repeat(s[:, None], T.shape[1], axis=1)
    objective = cp.Maximize(cp.min(cp.sum(cp.multiply(coeff, x), axis=1)))
    constraints = [x >= 0, x <= 1, cp.sum(x, axis=1) <= 1,
                   cp.sum(cp.multiply(scale_factors_array, x), axis=0) <= cluster.capacity]
    prob = cp.Problem(objective, constraints)
    prob.solve(solver=cp.CLARABEL)
    return float(prob.value)


def reference_water_filling(jobs: fa.Jobs, cluster: fa.Cluster, entities: np.ndarray,
                            entity_weights: np.ndarray) -> np.ndarray:
    """LP-sequence water-filling in cvxpy + Clarabel; returns each job's final level."""
    import cvxpy as cp

    n, k = jobs.throughput.shape
    s = jobs.scale_factor
    u_coef = jobs.throughput * (s / _normaliser(jobs, cluster))[:, None]
    x = cp.Variable((n, k), nonneg=True)
    u = cp.sum(cp.multiply(u_coef, x), axis=1)
    base = [x <= 1, cp.sum(x, axis=1) <= 1, s @ x <= cluster.capacity]
    floors = np.zeros(n)
    frozen = np.zeros(n, dtype=bool)
    btol = 1e-6
    while not frozen.all():
        live = ~frozen
        tot = np.bincount(entities, weights=live * jobs.weight, minlength=entity_weights.size)
        w = np.where(live, entity_weights[entities] * jobs.weight / np.maximum(tot[entities],
                                                                              1e-300), 0.0)
        theta = cp.Variable()
        cp.Problem(cp.Maximize(theta), [*base, u >= floors + w * theta]).solve(
            solver=cp.CLARABEL)
        floors = floors + w * max(float(theta.value) * (1 - 1e-7), 0.0)
        cand = w > 0
        while cand.any():
            d = np.flatnonzero(cand)
            sigma = cp.Variable(d.size, nonneg=True)
            caps = 1e-3 * np.maximum(1.0, floors[d])
            rows = [u >= floors]
            rows.append(u[d] - sigma >= floors[d])
            cp.Problem(cp.Maximize(cp.sum(sigma)), [*base, *rows, sigma <= caps]).solve(
                solver=cp.CLARABEL)
            rise = np.zeros(n, dtype=bool)
            rise[d] = sigma.value > btol * np.maximum(1.0, floors[d])
            if not rise.any():
                frozen |= cand
                break
            cand &= ~rise
    return floors


def reference_ftf(jobs: fa.Jobs, cluster: fa.Cluster) -> float:
    """Vectorised cvxpy SOCP for min max rho (fairalloc's builder, method='cvxpy')."""
    return fa.FinishTimeFairness(jobs, cluster).solve(method="cvxpy",
                                                      work_conserving=False).objective


# --------------------------------------------------------------------------------------------
def timed(fn, repeat: int = 1):
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def all_equal_scale_pairs(jobs: fa.Jobs, seed: int = 5) -> JobPairs:
    rng = np.random.default_rng(seed)
    s = jobs.scale_factor
    T = jobs.throughput
    members = []
    for v in np.unique(s):
        idx = np.flatnonzero(s == v)
        a, b = np.triu_indices(idx.size, 1)
        members.append(np.c_[idx[a], idx[b]])
    mem = np.concatenate(members)
    f = rng.uniform(0.3, 0.95, (mem.shape[0], T.shape[1], 2))
    tp = np.stack([T[mem[:, 0]] * f[:, :, 0], T[mem[:, 1]] * f[:, :, 1]], axis=2)
    return JobPairs(mem, tp)


def random_instance(seed: int) -> tuple[fa.Jobs, fa.Cluster]:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1000, 4000))
    k = int(rng.integers(2, 5))
    T = rng.lognormal(0.0, 0.8, n)[:, None] * np.c_[np.ones(n), rng.uniform(0.1, 1.2, (n, k - 1))]
    if seed % 2:
        T[rng.random((n, k)) < 0.2] = 0.0
        T[:, 0] = np.maximum(T[:, 0], 0.5)
    caps = rng.integers(max(8, n // 50), n, k)
    s = np.minimum(rng.choice([1, 1, 1, 2, 4, 8], n), caps.min())
    w = rng.choice([0.5, 1.0, 2.0], n) if seed % 3 else np.ones(n)
    jobs = fa.Jobs(T, scale_factor=s, weight=w, steps_remaining=rng.uniform(1e3, 1e5, n),
                   elapsed=rng.uniform(0.0, 3600.0, n))
    return jobs, fa.Cluster({f"t{j}": int(caps[j]) for j in range(k)})


def types_instance(n: int, k: int = 10, seed: int = 0,
                   gpus_per_job: float | None = None) -> tuple[fa.Jobs, fa.Cluster]:
    """``k`` types: log-normal base speeds times uniform(0.1, 1) ratios, ``max(8, n/k)``
    workers of each type (``gpus_per_job * n / k`` when given: a saturating cluster, issue
    #28), scale factors {1, 2, 4, 8} (70/10/15/5 %)."""
    rng = np.random.default_rng(seed)
    T = (rng.lognormal(0.0, 0.8, n) * 10.0)[:, None] * np.c_[np.ones(n),
                                                          rng.uniform(0.1, 1.0, (n, k - 1))]
    s = rng.choice([1, 2, 4, 8], n, p=[0.7, 0.1, 0.15, 0.05])
    g = max(8, n // k) if gpus_per_job is None else max(1, round(gpus_per_job * n / k))
    return fa.Jobs(T, scale_factor=s), fa.Cluster({f"t{j}": g for j in range(k)})


def water_filling_scaling(max_n: int, types_max_n: int) -> None:
    """``--water-filling``: water-filling time, level LPs and LPs as n doubles (#15 item 3).

    * 3 entities (weights 1, 2, 3, fairness inside) on the benchmark's instance, n = 1024 ...
      ``max_n``;
    * single-level (``max_min_fairness(water_filling=True)``) with 10 types
      (`types_instance`), n = 128 ... ``types_max_n``: with every type full, jobs keep
      trading time and each capacity event may freeze one job (one level LP each), so this
      case grows with n (default up to 512 jobs);
    * the same with 1.5 GPUs per job (issue #28's saturating case: most jobs reach their best
      column), n = 128 ... ``types_max_n``.

    Prints one row per size and the fitted exponent of time against n (log-log slope).
    """
    cases = [("3 entities", [n for n in (1024, 2048, 4096, 8192, 16384, 32768) if n <= max_n]),
             ("10 types, single level", [n for n in (128, 256, 512, 1024, 2048, 4096, 8192)
                                         if n <= types_max_n]),
             ("10 types, 1.5 GPUs/job", [n for n in (128, 256, 512, 1024, 2048, 4096, 8192)
                                         if n <= types_max_n])]
    print(f"{'water-filling':<24} {'jobs':>6} {'seconds':>8} {'level LPs':>9} {'LPs':>5}  "
          "certified")
    for name, sizes in cases:
        times = []
        for n in sizes:
            if name == "3 entities":
                jobs, cl = instance(n)
                t, r = timed(lambda j=jobs, c=cl, m=n: fa.water_filling(
                    j, c, entities=np.arange(m) % 3, entity_weights={0: 1.0, 1: 2.0, 2: 3.0}))
            else:
                jobs, cl = types_instance(n, gpus_per_job=1.5 if "GPUs" in name else None)
                t, r = timed(lambda j=jobs, c=cl: fa.max_min_fairness(j, c, water_filling=True))
            times.append(t)
            print(f"{name:<24} {n:>6} {t:8.3f} {r.levels:>9} {r.stats.solves:>5}  "
                  f"{r.certificate.ok and all(c.ok for c in r.stage_certificates)}")
        if len(sizes) > 1:
            slope = np.polyfit(np.log(sizes), np.log(times), 1)[0]
            print(f"{name:<24} time ~ n^{slope:.2f}")


def saturating_rows(sizes: list[int]) -> None:
    """``--wf-saturating``: issue #28's saturating single-level water-filling (10 types, 1.5
    GPUs per job) at ``sizes``, one solve each in this process, thread CPU time (a loaded
    machine inflates wall-clock time, not this)."""
    print(f"{'jobs':>6} {'CPU s':>8} {'levels':>7} {'LPs':>5} {'iterations':>10} "
          f"{'it/level':>8} {'ms/level':>8}  status")
    for n in sizes:
        jobs, cl = types_instance(n, gpus_per_job=1.5)
        t0 = time.thread_time()
        try:
            r = fa.max_min_fairness(jobs, cl, water_filling=True)
        except fa.SolverError as exc:  # a size without an answer is a result, not a crash
            print(f"{n:>6} {time.thread_time() - t0:8.2f}  no answer: "
                  f"{type(exc).__name__}: {str(exc)[:160]}")
            continue
        t = time.thread_time() - t0
        ok = r.certificate.ok and all(c.ok for c in r.stage_certificates)
        print(f"{n:>6} {t:8.2f} {r.levels:>7} {r.stats.solves:>5} {r.stats.iterations:>10} "
              f"{r.stats.iterations / max(r.levels, 1):8.0f} {1e3 * t / max(r.levels, 1):8.1f}  "
              f"{r.status.value}{'' if ok else ' (uncertified LP)'}", flush=True)


def random_study(count: int) -> None:
    rows = []
    for name, solve in (("max-min fairness", fa.max_min_fairness),
                        ("finish-time fairness", fa.finish_time_fairness)):
        t_fast = t_full = 0.0
        worst = 0.0
        handed = 0  # stages the structured path handed to the full LP (stats.fallbacks)
        for seed in range(count):
            jobs, cl = random_instance(seed)
            t, a = timed(lambda f=solve, j=jobs, c=cl: f(j, c))
            handed += sum("->exact-lp" in f for f in a.stats.fallbacks)
            t_fast += t
            t, b = timed(lambda f=solve, j=jobs, c=cl: f(j, c, method="highs"))
            t_full += t
            for ca, cb in zip(a.stage_certificates[-1:] + (a.certificate,),
                              b.stage_certificates[-1:] + (b.certificate,)):
                worst = max(worst, abs(ca.primal_value - cb.primal_value)
                            / max(1.0, abs(cb.primal_value)))
        rows.append((name, t_full, t_fast, handed, worst))
    print(f"{count} random instances (both stages)   full LP s  structured s  speed-up  "
          f"stages handed to the full LP  max rel. objective diff")
    for name, tr, tf, h, d in rows:
        print(f"{name:<35} {tr:9.2f}  {tf:12.2f}  {tr / tf:7.1f}x  {h:>28d}  {d:.1e}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="512 and 2048 jobs only")
    ap.add_argument("--random", type=int, default=0, metavar="N",
                    help="N random instances, structured solvers against the full LPs")
    ap.add_argument("--water-filling", action="store_true",
                    help="water-filling scaling only (3 entities; 10 types, single level)")
    ap.add_argument("--wf-max", type=int, default=8192, metavar="N",
                    help="largest n of the 3-entity water-filling rows (default 8192)")
    ap.add_argument("--wf-types-max", type=int, default=512, metavar="N",
                    help="largest n of the 10-type water-filling rows (default 512)")
    ap.add_argument("--wf-saturating", type=int, nargs="+", metavar="N",
                    help="only the saturating 10-type case (1.5 GPUs/job) at these sizes")
    args = ap.parse_args()
    if args.wf_saturating:
        saturating_rows(args.wf_saturating)
        return
    if args.water_filling:
        water_filling_scaling(args.wf_max, args.wf_types_max)
        return
    if args.random:
        random_study(args.random)
        return
    sizes = (512, 2048) if args.quick else (2048, 8192)
    rows = []
    fa.max_min_fairness(*instance(64))  # warm up imports (both sides)
    reference_max_min(*instance(64))
    for n in sizes:
        jobs, cl = instance(n)
        t_ref, ref = timed(lambda j=jobs, c=cl: reference_max_min(j, c), 3)
        t1, a1 = timed(lambda j=jobs, c=cl: fa.max_min_fairness(j, c, work_conserving=False), 3)
        t2, a2 = timed(lambda j=jobs, c=cl: fa.max_min_fairness(j, c), 3)
        agree = abs(a1.objective - ref) / abs(ref)
        rows.append((f"max-min fairness, {n} jobs", t_ref, t1,
                     f"rel. diff {agree:.1e}; gap {a1.certificate.relative_gap:.1e}; "
                     f"+work-conserving stage {t2:.3f} s"))
    n = 2048 if not args.quick else 512
    jobs, cl = instance(n)
    ents = np.arange(n) % 3
    ew = np.array([1.0, 2.0, 3.0])
    t_ref, ref_levels = timed(lambda: reference_water_filling(jobs, cl, ents, ew))
    t1, wf = timed(lambda: fa.water_filling(jobs, cl, entities=ents,
                                            entity_weights={0: 1.0, 1: 2.0, 2: 3.0}))
    diff = np.max(np.abs(wf.level_floors - ref_levels) / np.maximum(1e-9, ref_levels))
    rows.append((f"water-filling, {n} jobs, 3 entities", t_ref, t1,
                 f"max rel. level diff {diff:.1e}; {wf.levels} levels, {wf.stats.solves} LPs"))
    t_ref, ref = timed(lambda: reference_ftf(jobs, cl))
    t1, ftf = timed(lambda: fa.finish_time_fairness(jobs, cl, work_conserving=False), 3)
    t2, _ = timed(lambda: fa.finish_time_fairness(jobs, cl), 1)
    rows.append((f"finish-time fairness, {n} jobs", t_ref, t1,
                 f"rel. diff {abs(ftf.objective - ref) / ref:.1e}; {ftf.stats.solves} LPs; "
                 f"+work-conserving {t2:.3f} s"))
    pairs = all_equal_scale_pairs(jobs)
    before = rss_mib()
    t1, ss = timed(lambda: max_min_space_sharing(jobs, cl, pairs))
    plain = fa.max_min_fairness(jobs, cl, work_conserving=False).objective
    rows.append((f"space-sharing max-min, {n} jobs, {pairs.num_pairs:,} pairs", float("nan"),
                 t1, f"certified gap {ss.certificate.relative_gap:.1e}; level {ss.objective:.4f}"
                     f" vs {plain:.4f} alone; peak RSS {rss_mib():.0f} MiB "
                     f"(before {before:.0f}); {ss.stats.solves} LPs"))
    w = max(len(r[0]) for r in rows)
    print(f"{'benchmark':<{w}}  {'reference s':>11}  {'fairalloc s':>11}  {'speed-up':>8}  notes")
    for name, tr, tf, note in rows:
        sp_ = tr / tf if np.isfinite(tr) else float("nan")
        ref_s = f"{tr:11.3f}" if np.isfinite(tr) else f"{'n/a':>11}"
        sp_s = f"{sp_:7.1f}x" if np.isfinite(sp_) else f"{'-':>8}"
        print(f"{name:<{w}}  {ref_s}  {tf:11.3f}  {sp_s}  {note}")


if __name__ == "__main__":
    main()
