"""The Eisenberg-Gale engine's own interior-point method, tested directly against Clarabel.

:func:`fairalloc.markets.ipm.ipm_batch` solves many small linear markets at once (partial
allocation's leave-one-out markets); a regression there would otherwise only show as a silent
fallback to the exact conic path. Here every market of a batch is also solved by Clarabel
through the engine's :func:`~fairalloc.markets.engine.solve_conic`, and the optima, the
certified gaps and the prices must agree; inputs the method cannot handle must be reported
unconverged (never trusted), and the callers' ``stats.path`` / ``stats.fallbacks`` must say
which path ran.
"""

from __future__ import annotations

import math
import os
import platform
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

import fairalloc as fa
from fairalloc.markets.engine import EdgeForm, EngineLog, edge_starts, solve_conic
from fairalloc.markets.ipm import ipm_batch, ipm_solve, polish_forest_edges
from fairalloc.markets.warm import reduced_solve, solve_warm
from fairalloc.tolerances import GAP_TOL

# Tolerances come from the certificate's contract (fairalloc.tolerances), not from one CPU's
# run: an interior-point point is accepted at a relative duality gap of GAP_TOL, and its
# prices are then known only to ~sqrt(gap) (the gap is second order in the errors:
# formulations/eisenberg_gale.md, "Polishes"). The interior point stops where its own
# criteria are met, which differs with the BLAS kernels (OPENBLAS_CORETYPE=Haswell: 17
# iterations and a gap of 1.8e-7 on the 3x3 market below, 16 and 1.5e-14 on others).
#: ACCURACY: relative price agreement of two points certified to GAP_TOL
PRICE_RTOL = math.sqrt(GAP_TOL)
#: ACCURACY: rounding of an objective value recomputed in double precision (relative)
ROUNDING = 1e-12


def _form(owner: np.ndarray, good: np.ndarray, w: np.ndarray, B: np.ndarray,
          s: np.ndarray) -> EdgeForm:
    C = sp.csc_matrix((np.ones(owner.size), (good, np.arange(owner.size))),
                      shape=(s.size, owner.size))
    return EdgeForm(owner, w, C, B, s, edge_starts(owner, B.size))


def _market(U: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, ...]:
    """Edge list of a dense linear market (edges sorted by buyer)."""
    owner, good = np.nonzero(U > 0)
    return owner, good, U[owner, good], B


def _stack(markets: list[tuple[np.ndarray, ...]], m: int
           ) -> tuple[np.ndarray, ...]:
    """Markets over ``m`` goods each, stacked block-diagonally as :func:`ipm_batch` wants."""
    owners, goods, ws, Bs, blocks = [], [], [], [], []
    nb = 0
    for t, (owner, good, w, B) in enumerate(markets):
        owners.append(owner + nb)
        goods.append(good + t * m)
        ws.append(w)
        Bs.append(B)
        blocks.append(np.full(owner.size, t))
        nb += B.size
    return (np.concatenate(owners), np.concatenate(goods), np.concatenate(ws),
            np.concatenate(Bs), np.concatenate(blocks))


def _random_markets(rng: np.random.Generator, T: int, m: int, *, tied: bool = False,
                    degenerate: bool = False) -> list[tuple[np.ndarray, np.ndarray]]:
    out = []
    for _ in range(T):
        n = int(rng.integers(2, 9))
        U = rng.uniform(0.05, 1.0, (n, m)) * (rng.random((n, m)) < 0.7)
        U[np.arange(n), rng.integers(0, m, n)] += 0.5  # every buyer values a good
        U[rng.integers(0, n, m), np.arange(m)] += 0.5  # every good is valued
        if tied:  # identical buyers: many optimal allocations, unique prices
            U = np.repeat(rng.uniform(0.05, 1.0, (1, m)), n, axis=0)
        if degenerate:  # every buyer indifferent between goods 0 and 1 (support with cycles)
            U[:, 1] = U[:, 0] = np.maximum(U[:, 0], 0.1)
        out.append((U, rng.uniform(0.5, 2.0, n)))
    return out


def _clarabel(U: np.ndarray, B: np.ndarray, s: np.ndarray
              ) -> tuple[float, float, np.ndarray]:
    """Clarabel on the whole market (the engine's exact conic path): its certified bounds
    ``P <= OPT <= D`` and the equilibrium prices after the engine's support polish (raw
    interior-point duals are only accurate to ~sqrt of the solver's tolerance)."""
    owner, good, w, _ = _market(U, B)
    form = _form(owner, good, w, B, s)
    z, p, _ = solve_conic(form, tol=1e-10)
    primal, dual = form.primal_value(form.repair(z)), form.dual_value(np.maximum(p, 0.0))
    ref = fa.fisher_market(U, B, s, method="conic", symmetry=False)  # the whole market
    assert ref.stats.path[0] == "conic"
    return primal, dual, ref.prices


def _agrees(primal: float, dual: float, prices: np.ndarray, ref: tuple[float, float, np.ndarray],
            scale: float) -> None:
    """A point certified on its own (``dual - primal`` within the certificate's gap) whose
    optimum lies in Clarabel's bounds and whose prices are the equilibrium prices (to the
    accuracy a certified gap implies)."""
    lo, hi, p_ref = ref
    assert dual - primal <= GAP_TOL * scale
    assert primal <= hi + ROUNDING * scale and dual >= lo - ROUNDING * scale  # the same optimum
    assert hi - lo <= GAP_TOL * scale  # (and Clarabel's bounds are certified too)
    np.testing.assert_allclose(prices, p_ref, rtol=PRICE_RTOL, atol=0)


@pytest.mark.parametrize("kind", ["random", "tied", "degenerate"])
def test_batched_ipm_agrees_with_clarabel(kind: str) -> None:
    rng = np.random.default_rng({"random": 0, "tied": 1, "degenerate": 2}[kind])
    m, T = 4, 12
    dense = _random_markets(rng, T, m, tied=kind == "tied", degenerate=kind == "degenerate")
    supply = [rng.uniform(0.5, 2.0, m) for _ in range(T)]
    owner, good, w, B, eblock = _stack([_market(U, b) for U, b in dense], m)
    s = np.concatenate(supply)
    x, p, ok, _ = ipm_batch(owner, good, w, B, s, np.ones(T * m), eblock, T)
    assert ok.all()  # every market converged
    start = 0
    for t, ((U, b), st) in enumerate(zip(dense, supply)):
        sel = eblock == t
        o, g = owner[sel] - start, good[sel] - t * m
        start += b.size
        form = _form(o, g, w[sel], b, st)
        xt, pt = form.repair(x[sel]), p[t * m:(t + 1) * m]
        _agrees(form.primal_value(xt), form.dual_value(pt), pt, _clarabel(U, b, st),
                float(b.sum()))


def test_forest_polish_makes_the_batch_exact() -> None:
    rng = np.random.default_rng(3)
    m, T = 3, 6
    dense = _random_markets(rng, T, m)
    owner, good, w, B, eblock = _stack([_market(U, b) for U, b in dense], m)
    s = np.ones(T * m)
    x, p, ok, _ = ipm_batch(owner, good, w, B, s, np.ones(T * m), eblock, T)
    xq, pq, good_ok = polish_forest_edges(owner, good, w, B, s, x, p)
    form = _form(owner, good, w, B, s)
    for t in range(T):
        if not good_ok[t * m:(t + 1) * m].all():
            continue  # a component that is not a tree: the caller keeps the IPM point
        sel = eblock == t
        o = owner[sel] - owner[sel].min()
        sub = _form(o, good[sel] - t * m, w[sel], B[np.unique(owner[sel])], s[t * m:(t + 1) * m])
        xs = sub.repair(xq[sel])
        assert sub.dual_value(pq[t * m:(t + 1) * m]) - sub.primal_value(xs) <= \
            ROUNDING * B.sum()  # exact square systems: rounding only
    assert good_ok.any() and form.residual(form.repair(xq)) <= ROUNDING


def test_single_market_matches_clarabel_and_reports_breakdown(
        monkeypatch: pytest.MonkeyPatch) -> None:
    U = np.array([[2.0, 1.0, 0.5], [1.0, 1.0, 1.0], [0.2, 3.0, 1.0]])
    B, s = np.ones(3), np.ones(3)
    owner, good, w, _ = _market(U, B)
    out = ipm_solve(owner, good, w, B, s, np.ones(3))
    assert out is not None
    form = _form(owner, good, w, B, s)
    _agrees(form.primal_value(form.repair(out[0])), form.dual_value(out[1]), out[1],
            _clarabel(U, B, s), 3.0)

    def singular(*args: object, **kwargs: object) -> None:
        raise np.linalg.LinAlgError("Singular matrix")

    monkeypatch.setattr(np.linalg, "solve", singular)
    assert ipm_solve(owner, good, w, B, s, np.ones(3)) is None  # never a wrong point


@pytest.mark.parametrize("bad", ["nan_weight", "nan_start"])
def test_invalid_input_is_reported_unconverged(bad: str) -> None:
    U = np.array([[2.0, 1.0], [1.0, 2.0]])
    B, s = np.ones(2), np.ones(2)
    owner, good, w, _ = _market(U, B)
    p0 = np.ones(2)
    if bad == "nan_weight":
        w = w.copy()
        w[0] = np.nan
    else:
        p0[1] = np.nan
    with np.errstate(all="ignore"):
        assert ipm_solve(owner, good, w, B, s, p0) is None


def test_reduced_solve_falls_back_to_the_conic_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    U = np.array([[2.0, 1.0, 0.5], [1.0, 1.0, 1.0], [0.2, 3.0, 1.0]])
    B, s = np.ones(3), np.ones(3)
    log = EngineLog(on_solve=None)
    x_ipm, p_ipm = reduced_solve(U, B, s, U > 0, np.ones(3), log)
    assert log.fallbacks == () and log.backends == []  # the interior-point method: no backend

    def singular(*args: object, **kwargs: object) -> None:
        raise np.linalg.LinAlgError("Singular matrix")

    monkeypatch.setattr(np.linalg, "solve", singular)
    seen: list[tuple[str, str]] = []
    log = EngineLog(on_solve=lambda name, status: seen.append((name, status)))
    x_conic, p_conic = reduced_solve(U, B, s, U > 0, np.ones(3), log)
    assert log.fallbacks == ("ipm->conic: the interior-point method did not converge",)
    assert log.backends == ["clarabel"] and seen and seen[0][0] == "clarabel"
    # the same market: raw interior-point duals (Clarabel's, the IPM's) are accurate to ~sqrt
    # of the gap they are certified to
    np.testing.assert_allclose(p_conic, p_ipm, rtol=PRICE_RTOL)
    np.testing.assert_allclose(x_conic, x_ipm, atol=PRICE_RTOL)  # unit budgets and supply


def test_warm_search_certifies_against_clarabel() -> None:
    rng = np.random.default_rng(7)
    U = rng.uniform(0.0, 1.0, (30, 5))
    B, s = np.ones(30), np.ones(5)
    log = EngineLog()
    pt = solve_warm(U, B, s, np.full(5, 6.0), tol=1e-10, accept=1e-9, log=log)
    assert pt.gap <= 1e-10 and log.fallbacks == ()
    _agrees(pt.primal, pt.dual, pt.prices, _clarabel(U, B, s), 30.0)


def test_paths_say_which_engine_path_ran() -> None:
    rng = np.random.default_rng(0)
    r = fa.fisher_market(rng.random((600, 30)))
    assert r.stats.path[:3] == ("fast", "proportional-response", "restricted-ipm")
    assert r.stats.fallbacks == ()
    r = fa.fisher_market([[2.0, 1.0], [1.0, 2.0]], method="conic")
    assert r.stats.path == ("conic", "forest-polish")
    r = fa.fisher_market([[2.0, 1.0], [1.0, 2.0]], kind="leontief")
    assert r.stats.path == ("conic", "newton-polish")
    r = fa.volatile_fisher_market(rng.random((5, 2, 3)), kind="leontief")
    assert r.stats.path == ("conic", "support-newton-polish")
    r = fa.partial_allocation(rng.uniform(0.0, 1.0, (80, 5)))
    assert r.stats.path[:2] == ("pf-market", "loo-batched-ipm")


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="OpenBLAS kernel names are x86 ones")
def test_agreement_does_not_depend_on_the_blas_kernel() -> None:
    """issue #27 point 5: on an AMD EPYC machine the interior point stopped at 17 iterations
    with a certified gap of 1.8e-7, and the test asserted 3e-8 (one CPU's run). OpenBLAS'
    oldest x86-64 kernel (Prescott: SSE3, runs on every x86-64 CPU) reproduces that stop; the
    test's tolerances come from the certificate's contract and pass under it."""
    env = dict(os.environ, OPENBLAS_CORETYPE="Prescott", OPENBLAS_NUM_THREADS="1")
    name = "test_single_market_matches_clarabel_and_reports_breakdown"
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          f"{__file__}::{name}"], env=env, capture_output=True, text=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
