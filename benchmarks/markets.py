"""Markets benchmark: the linear fast path against the full conic program, in one run.

Prints, for the same random instances:
* linear Fisher markets at 1000x50 and 5000x100: fairalloc's fast path (``method="fast"``)
  vs the full Eisenberg-Gale program through cvxpy + Clarabel (``method="cvxpy"``, the way a
  user would write it) -- seconds, ratio, and each one's certified duality gap (computed by
  fairalloc's closed-form dual, not reported by the solver);
* a Leontief market at 2000x20 and a volatile market at 500 buyers x 8 resources x 30 rounds.

Run: ``python benchmarks/markets.py [--repeat 1]``; ``--families`` prints the instance
families of #15 instead (random, identical, ties, dominant, sparse; linear and Leontief at
4,096 x 100 and 16,384 x 20) against Clarabel called directly, e.g.
``python benchmarks/markets.py --families --kinds leontief --sizes 4096x100``. The reference
is plain cvxpy (no fairalloc solver code); its gap is evaluated with fairalloc's dual function
at cvxpy's duals.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import fairalloc as fa


def timed(fn, repeat: int):  # type: ignore[no-untyped-def]
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def cvxpy_reference(u: np.ndarray, b: np.ndarray | None = None, *, kind: str = "linear"
                    ) -> tuple[float, float, float, float]:
    """The full program as a user writes it in cvxpy, solved by Clarabel, no fairalloc solver.

    Returns (objective, certified gap, supply residual, seconds); the gap is evaluated by
    fairalloc's closed-form dual D(p) at cvxpy's duals, against the objective of cvxpy's
    allocation made feasible (so it is a valid bound); ``seconds`` times the model's
    construction and solve only (not fairalloc's evaluation of the gap).
    """
    import cvxpy as cp

    t0 = time.perf_counter()
    n = u.shape[0]
    flat = u.reshape(n, -1)
    b = np.ones(n) if b is None else b
    if kind == "linear":
        x = cp.Variable(flat.shape, nonneg=True)
        util = cp.sum(cp.multiply(flat, x), axis=1)
        supply = cp.sum(x, axis=0) <= 1
    else:
        v = cp.Variable(n, nonneg=True)
        util = v
        supply = flat.T @ v <= 1
    cp.Problem(cp.Maximize(b @ cp.log(util)), [supply]).solve(solver=cp.CLARABEL)
    seconds = time.perf_counter() - t0
    market = fa.FisherMarket(u, b, kind=kind)
    prices = np.maximum(np.asarray(supply.dual_value), 0).reshape(market.supply.shape)
    if kind == "linear":
        alloc = np.maximum(x.value, 0)
        load = alloc.sum(axis=0)
        alloc = alloc / np.maximum(load, 1.0)  # feasible
        utils = np.einsum("ij,ij->i", flat, alloc)
    else:
        lev = np.maximum(v.value, 0)
        load = flat.T @ lev
        utils = lev / max(1.0, float(load.max()))
    residual = float(max(load.max() - 1.0, 0.0))
    primal = float(b @ np.log(utils))
    return primal, market.dual_value(prices) - primal, residual, seconds


FAMILIES = ("random", "identical", "ties", "dominant", "sparse")
TIE_TYPES = 20  # rows drawn from ~20 model types, as in real traces
SPARSE_DENSITY = 0.1  # share of valued goods in the sparse family
DOMINANT_BOOST = 2.0  # the dominant good's extra utility (linear) / demand (Leontief)
WARMUP_SIZE = 8  # buyers and goods of the untimed warm-up market


def family_instance(kind: str, family: str, n: int, m: int, rng: np.random.Generator
                    ) -> tuple[np.ndarray, np.ndarray]:
    """``(utility, budget)`` of an instance family (#15): ``random`` (every buyer different),
    ``identical`` (one row for all), ``ties`` (rows drawn from 20 types), ``dominant`` (good 0
    valued -- or, Leontief, needed -- most by everyone), ``sparse`` (10 % of goods valued)."""
    b = rng.uniform(0.5, 2.0, n)
    if family == "random":
        u = rng.random((n, m))
    elif family == "identical":
        u = np.tile(rng.random(m), (n, 1))
    elif family == "ties":
        u = rng.random((TIE_TYPES, m))[rng.integers(TIE_TYPES, size=n)]
    elif family == "dominant":
        u = rng.random((n, m))
        u[:, 0] += DOMINANT_BOOST
    elif family == "sparse":
        u = rng.random((n, m)) * (rng.random((n, m)) < SPARSE_DENSITY)
        u[np.arange(n), rng.integers(m, size=n)] += 0.5  # every buyer values a good
    else:
        raise ValueError(f"unknown family {family!r}")
    return u, b


def families(kinds: list[str], names: list[str], sizes: list[tuple[int, int]], ref: bool,
             seed: int) -> None:
    """The instance families of #15 (`family_instance`): fairalloc's default call against
    Clarabel called directly (the EG program in cvxpy, ``solver=CLARABEL``), one row each."""
    head = (f"{'kind':<9}{'family':<10}{'size':>11}{'fairalloc s':>12}{'Clarabel s':>11}"
            f"{'ratio':>8}{'|dObj|':>9}{'rel.gap':>9}  {'ok':<4}{'classes':>8}  path")
    for kind in kinds:  # warm-up: imports and first-call costs stay out of the table
        u, b = family_instance(kind, "random", WARMUP_SIZE, WARMUP_SIZE, np.random.default_rng(0))
        fa.fisher_market(u, b, kind=kind)
        if ref:
            cvxpy_reference(u, b, kind=kind)
    print(head)
    print("-" * len(head))
    for kind in kinds:
        for n, m in sizes:
            for name in names:
                u, b = family_instance(kind, name, n, m, np.random.default_rng(seed))
                t0 = time.perf_counter()
                r = fa.fisher_market(u, b, kind=kind)
                t1 = time.perf_counter() - t0
                cells = ["", "", ""]
                if ref:
                    obj, _, _, t2 = cvxpy_reference(u, b, kind=kind)
                    cells = [f"{t2:.2f}", f"{t2 / t1:.1f}x", f"{abs(obj - r.objective):.1e}"]
                classes = getattr(r.stats, "classes", None)
                print(f"{kind:<9}{name:<10}{f'{n}x{m}':>11}{t1:>12.2f}{cells[0]:>11}"
                      f"{cells[1]:>8}{cells[2]:>9}{r.certificate.relative_gap:>9.1e}  "
                      f"{str(r.certificate.ok):<4}{str(classes):>8}  {'>'.join(r.stats.path)}",
                      flush=True)
    print("\nratio = Clarabel seconds / fairalloc seconds (same run); |dObj|: objectives of the "
          "two; rel.gap: fairalloc's certified gap / total budget on the original market")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--families", action="store_true",
                    help="the instance families of #15 instead of the default table")
    ap.add_argument("--kinds", default="linear,leontief")
    ap.add_argument("--family", default=",".join(FAMILIES))
    ap.add_argument("--sizes", default="4096x100,16384x20")
    ap.add_argument("--no-ref", action="store_true", help="skip the Clarabel reference")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    if args.families:
        sizes = [(int(a), int(b)) for a, b in (x.split("x") for x in args.sizes.split(","))]
        families(args.kinds.split(","), args.family.split(","), sizes, not args.no_ref,
                 args.seed)
        return
    rng = np.random.default_rng(2026)
    rows = []
    for n, m in ((1000, 50), (5000, 100)):
        u = rng.random((n, m))
        b = rng.uniform(0.5, 2.0, n)
        t_fast, fast = timed(lambda u=u, b=b: fa.fisher_market(u, b, method="fast"), args.repeat)
        t_ref, ref = timed(lambda u=u, b=b: cvxpy_reference(u, b), args.repeat)
        rows.append((f"linear {n}x{m}", "fast", t_fast, fast.gap, "cvxpy+Clarabel", t_ref,
                     ref[1], t_ref / t_fast, abs(fast.objective - ref[0])))
    a = rng.random((2000, 20))
    a[a < 0.3] = 0.0
    a[:, 0] += 0.01
    t_l, leo = timed(lambda: fa.fisher_market(a, kind="leontief", method="conic"), args.repeat)
    t_lr, leo_ref = timed(lambda: cvxpy_reference(a, kind="leontief"), args.repeat)
    rows.append(("leontief 2000x20", "conic", t_l, leo.gap, "cvxpy+Clarabel", t_lr, leo_ref[1],
                 t_lr / t_l, abs(leo.objective - leo_ref[0])))
    v = rng.random((500, 8, 30))
    v[v < 0.2] = 0.0
    t_v, vol = timed(lambda: fa.volatile_fisher_market(v, method="fast"), args.repeat)
    t_vr, vol_ref = timed(lambda: cvxpy_reference(v), args.repeat)
    rows.append(("volatile 500x8x30", "fast", t_v, vol.gap, "cvxpy+Clarabel", t_vr, vol_ref[1],
                 t_vr / t_v, abs(vol.objective - vol_ref[0])))

    head = (f"{'instance':<20}{'method':<8}{'seconds':>9}{'cert. gap':>11}   "
            f"{'reference':<16}{'seconds':>9}{'cert. gap':>11}{'speed-up':>10}{'|dObj|':>10}")
    print(head)
    print("-" * len(head))
    for name, m1, t1, g1, m2, t2, g2, ratio, agree in rows:
        print(f"{name:<20}{m1:<8}{t1:>9.2f}{g1:>11.1e}   {m2:<16}{t2:>9.2f}{g2:>11.1e}"
              f"{ratio:>9.1f}x{agree:>10.1e}")
    print("\ncert. gap: absolute duality gap D(p) - P(x) from fairalloc's closed-form dual "
          "(objective = sum_i B_i log U_i)")


if __name__ == "__main__":
    main()
