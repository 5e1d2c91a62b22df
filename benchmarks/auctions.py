"""Partial allocation and Themis multi-round auctions: side-by-side timings in one run.

Part 1 -- divisible partial allocation (Cole-Gkatzelis-Goel; Themis §3.3.1), ``n`` buyers x
``m`` goods with uniform random utilities:

* **naive**: ``n + 1`` cold, sequential, exact solves with the public
  :func:`fairalloc.fisher_market` (the PF market and every leave-one-out market from scratch),
  ``c_i = exp(sum_{j != i} log u_j(PF) - OPT_{-i})``;
* **fairalloc**: :func:`fairalloc.partial_allocation` (leave-one-out markets warm-started from
  the PF prices on a reduced market, polished to an exact equilibrium on their support, each
  certified by its own duality gap; ``--workers`` processes).

Both are certified; every ``c_i`` must agree to ``1e-6`` relative. With ``--naive-subset K``
only ``K`` leave-one-out markets (evenly spaced) are solved the naive way and the naive time
is extrapolated linearly to all ``n`` (printed as such).

Part 2 -- one round of :class:`fairalloc.MultiRoundAuction` for 256 apps (single-job,
successive-halving and curve-stopping apps, demands 1-8 GPUs, profiled slowdowns) on a
256-GPU cluster of 32 eight-GPU machines in 4 racks: the first round (every GPU offered) and
a later round (the GPUs of expiring leases and finished apps offered, apps holding GPUs).

Run: ``python benchmarks/auctions.py`` (``--help`` for sizes).
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np

import fairalloc as fa
from fairalloc.auctions import CurveStoppingApp, SingleJobApp, SuccessiveHalvingApp, Topology


def naive_partial_allocation(U: np.ndarray, subset: np.ndarray | None, gap_tol: float
                             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, float]:
    """``n + 1`` cold sequential solves; returns (indices, c, certified gaps, secs, pf secs)."""
    n = U.shape[0]
    t0 = time.perf_counter()
    pf = fa.fisher_market(U, gap_tol=gap_tol)
    t_pf = time.perf_counter() - t0
    log_u = np.log(pf.utility)
    numer = log_u.sum() - log_u
    idx = np.arange(n) if subset is None else subset
    c = np.empty(idx.size)
    gaps = np.empty(idx.size)
    for r, i in enumerate(idx):
        loo = fa.fisher_market(np.delete(U, i, axis=0), gap_tol=gap_tol)
        c[r] = math.exp(min(numer[i] - loo.objective, 0.0))
        gaps[r] = loo.gap + pf.gap
    return idx, c, gaps, time.perf_counter() - t0, t_pf


def part1(n: int, m: int, seed: int, workers: int, naive_subset: int, gap_tol: float) -> None:
    rng = np.random.default_rng(seed)
    U = rng.uniform(0.0, 1.0, (n, m))
    print(f"\n== Part 1: divisible partial allocation, {n} buyers x {m} goods "
          f"(seed {seed}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}) ==")

    def run_fast(w: int) -> tuple[fa.PartialAllocationResult, float]:
        t0 = time.perf_counter()
        res = fa.partial_allocation(U, workers=w, gap_tol=gap_tol)
        return res, time.perf_counter() - t0

    # the machine is shared: time the fast path before and after the naive one
    fast, t_before = run_fast(workers)
    subset = None
    if naive_subset and naive_subset < n:
        subset = np.unique(np.linspace(0, n - 1, naive_subset).round().astype(int))
    idx, c_naive, naive_gap, t_naive, t_pf = naive_partial_allocation(U, subset, gap_tol)
    fast_after, t_after = run_fast(workers)
    fast_one, t_one = run_fast(1)
    assert np.array_equal(fast.fraction, fast_after.fraction)
    assert np.array_equal(fast.fraction, fast_one.fraction)
    per_loo = (t_naive - t_pf) / idx.size
    t_naive_all = t_pf + per_loo * n
    rel = np.abs(fast.fraction[idx] / c_naive - 1.0)
    worst_naive_cert = float(np.expm1(naive_gap).max())
    print(f"{'method':<44}{'LOO markets':>12}{'seconds':>10}{'speed-up':>10}")
    label = "naive: n+1 cold sequential fisher_market"
    if subset is not None:
        print(f"{label + ' (subset)':<44}{idx.size:>12}{t_naive:>10.2f}")
        print(f"{label + ' (extrapolated)':<44}{n:>12}{t_naive_all:>10.2f}{1.0:>10.1f}"
              f"   <- {t_pf:.2f} s PF + {per_loo * 1e3:.1f} ms x {n} (linear extrapolation)")
    else:
        print(f"{label:<44}{n:>12}{t_naive_all:>10.2f}{1.0:>10.1f}")
    for name, t in ((f"fairalloc, {workers} workers (before naive)", t_before),
                    (f"fairalloc, {workers} workers (after naive)", t_after),
                    ("fairalloc, 1 worker", t_one)):
        print(f"{name:<44}{n:>12}{t:>10.2f}{t_naive_all / t:>10.1f}")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    print(f"agreement on {idx.size} fractions: max |c_fast / c_naive - 1| = {rel.max():.2e} "
          f"({'OK' if rel.max() <= 1e-6 else 'FAILED'} at 1e-6); identical fractions in all "
          "three fast runs")
    print(f"certified: fast max fraction error {fast.fraction_error.max():.1e}, max LOO gap "
          f"{fast.loo_gap.max():.1e}, PF gap {fast.gap:.1e}; naive max fraction error "
          f"{worst_naive_cert:.1e}")
    print(f"fractions: min {fast.fraction.min():.4f} (>= 1/e = {1 / math.e:.4f}), "
          f"mean {fast.fraction.mean():.4f}, leftover {fast.leftover.sum():.3f} of {m} units; "
          f"{fast.stats.solves - 1} reduced solves for {n} LOO markets")


def make_apps(num: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    apps = []
    for i in range(num):
        kind = i % 3
        slow = (1.0, 1.0 + rng.uniform(0.0, 0.3), 1.0 + rng.uniform(0.3, 0.8))
        if kind == 0:
            apps.append(SingleJobApp(iter_total=int(rng.integers(2_000, 40_000)),
                                     iter_time_serial=float(rng.uniform(0.1, 2.0)),
                                     job_demand_max=int(rng.choice([1, 2, 4, 8])),
                                     slowdown=slow))
        elif kind == 1:
            J = int(rng.choice([2, 4, 8]))
            apps.append(SuccessiveHalvingApp(
                iter_time_serial=rng.uniform(50, 150, J),
                phase_iters=np.array([8, 16, 36, 72])[:int(np.log2(J)) + 1],
                job_demand_max=int(rng.choice([1, 2])), slowdown=slow,
                seed=i))
        else:
            J = int(rng.integers(1, 4))
            apps.append(CurveStoppingApp(iter_time_serial=rng.uniform(0.5, 2.0, J),
                                         iter_total=rng.integers(1_000, 8_000, J),
                                         job_demand_max=int(rng.choice([1, 2])),
                                         slowdown=slow))
    return apps


def part2(seed: int, workers: int) -> None:
    print("\n== Part 2: one multi-round auction round, 256 apps, 256 GPUs = 32 machines x 8, "
          "4 racks (f = 0.8, lease 600 s) ==")
    print(f"{'round':<30}{'workers':>8}{'offered':>8}{'bidders':>8}{'MILPs':>7}"
          f"{'seconds':>9}{'status':>10}{'max c err':>10}")
    for w in sorted({1, workers}):
        topo = Topology.uniform(32, 8, machines_per_rack=8)
        auction = fa.MultiRoundAuction(topo, make_apps(256, seed), fairness_knob=0.8,
                                       lease=600.0, seed=seed, workers=w)
        first = auction.step()
        # later round: every lease granted in the first round expires at 600 s; advance to
        # the middle of the lease, let a third of the leases expire early (as if granted at
        # different times), and re-auction what is free
        auction.advance(300.0)
        busy = np.flatnonzero(auction.owner >= 0)
        early = np.random.default_rng(seed).choice(busy, size=busy.size // 3, replace=False)
        auction.lease_end[early] = auction.now
        later = auction.step()
        for name, rnd in (("first (all GPUs free)", first), ("later (expiring leases)", later)):
            res = rnd.auction
            milps = res.stats.solves if res is not None else 0
            status = str(res.status) if res is not None else "-"
            err = float(res.fraction_error.max()) if res is not None else 0.0
            print(f"{name:<30}{w:>8}{rnd.offered.size:>8}{rnd.participants.size:>8}"
                  f"{milps:>7}{rnd.seconds:>9.2f}{status:>10}{err:>10.1e}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1000, help="buyers (default 1000)")
    ap.add_argument("--m", type=int, default=50, help="goods (default 50)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2, help="processes for the fast path")
    ap.add_argument("--naive-subset", type=int, default=0,
                    help="solve only this many naive leave-one-out markets and extrapolate "
                         "(0: all)")
    ap.add_argument("--gap-tol", type=float, default=1e-9,
                    help="relative gap tolerance of every certified solve")
    ap.add_argument("--skip-part1", action="store_true")
    ap.add_argument("--skip-part2", action="store_true")
    args = ap.parse_args()
    if not args.skip_part1:
        part1(args.n, args.m, args.seed, args.workers, args.naive_subset, args.gap_tol)
    if not args.skip_part2:
        part2(args.seed, args.workers)


if __name__ == "__main__":
    main()
