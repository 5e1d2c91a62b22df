"""The static Leontief market solved on its dual: an interior-point method in the ``m`` prices.

A static Leontief market has one edge per buyer (its demand bundle ``a_i``), so the
Eisenberg-Gale dual (`fairalloc.markets.engine`)

    D(p) = s @ p + sum_i B_i (log B_i - 1 - log c_i(p)),   c = C^T p,   p >= 0,

is smooth and convex in the ``m`` prices alone, whatever the number of buyers. Its KKT
conditions are market clearing: with ``u_i = B_i / c_i`` (each buyer spends its budget on its
bundle) the slack ``lam = s - C u`` is non-negative and ``p lam = 0``. `solve_dual` runs a
primal-dual interior-point method (Mehrotra predictor-corrector) on these conditions: each
Newton step is one ``m x m`` system ``(C diag(B / c^2) C^T + diag(lam / p)) dp = r``, built
in ``O(n m^2)`` by BLAS ``syrk`` (or by sparse products, ``O(sum_i d_i^2)`` for buyers needing
``d_i`` goods) and solved by Cholesky in ``O(m^3)`` -- for 4,096 buyers and 100 goods a few
milliseconds per iteration, against an exponential-cone program with one cone per buyer.

Nothing it returns is trusted: the caller polishes the point with the engine's projected
Newton (`fairalloc.markets.engine.certify_general`) and certifies it by ``D(p) - P(z)`` on
the whole market; a run that does not converge returns ``None`` and the caller takes the exact
conic path (``stats.fallbacks`` says so).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.linalg.blas import dsyrk

from ..plan import Decline, Strategy
from .engine import DENSE_NEWTON_MAX_ENTRIES, EdgeForm
from .strategies import MarketContext, MarketPoint, point_certificate
from .tuning import DUAL_IPM_MAX_ITER

__all__ = ["DUAL", "dual_point", "solve_dual"]

DUAL_STEP = "dual"  # the plan step (``stats.path``)

DUAL_IPM_MU_TOL = 1e-13  # ACCURACY: complementarity p @ lam relative to s @ p at convergence
DUAL_IPM_RES_TOL = 1e-11  # ACCURACY: clearing residual relative to supply at convergence
DUAL_IPM_STEP_BACK = 0.99  # PERFORMANCE: fraction of the step to the boundary taken
DUAL_IPM_CENTRING_POWER = 3  # PERFORMANCE: Mehrotra's centring sigma = (mu_aff / mu)^3
# PERFORMANCE: a sparse product's pair of entries costs about this many dense syrk flops.
# Measured (4,096 x 100, one Newton matrix): dense syrk 1.4-1.6 ms at any density, sparse
# G G^T 0.6 / 1.1 / 2.1 / 4.9 / 7.9 ms at 2 / 5 / 10 / 20 / 30 % density, i.e. n k^2 / pairs
# = 1643 / 335 / 92 / 24 / 11: the break-even lies between 92 and 335. (It was 8, which took
# the sparse product at 30 % density: Leontief 4,096 x 100 dominant 0.128 s, now 0.067 s.)
SPARSE_SPEED = 128


def _step_to_boundary(x: np.ndarray, dx: np.ndarray) -> float:
    """Largest step ``t <= 1`` keeping ``x + t dx >= 0``."""
    neg = dx < 0
    if not neg.any():
        return 1.0
    return float(min(1.0, np.min(-x[neg] / dx[neg])))


def _direction(state: tuple[Any, np.ndarray, np.ndarray, np.ndarray], target: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """Newton step ``(dp, dlam)`` for ``p lam = target`` and the clearing residual ``r_d``,
    from the factored reduced system ``(C diag(B / c^2) C^T + diag(lam / p)) dp = rhs``."""
    factor, p, lam, r_d = state
    dp = cho_solve(factor, -r_d + target / p - lam)
    return dp, (target - p * lam - lam * dp) / p


def solve_dual(form: EdgeForm, *, max_iter: int = DUAL_IPM_MAX_ITER
               ) -> tuple[np.ndarray, np.ndarray, int] | None:
    """Equilibrium of a static Leontief market (one edge per buyer) by the dual interior point.

    Parameters
    ----------
    form : EdgeForm
        The market's normalised edge form; buyer ``i`` owns edge ``i``.
    max_iter : int
        Interior-point iterations before it gives up
        (`fairalloc.markets.Tuning.dual_max_iter`).

    Returns
    -------
    (z, p, iterations) or None
        Levels ``z_i = B_i / c_i(p)`` (not yet repaired) and prices, or ``None`` when the
        method did not converge or its linear algebra broke down.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from fairalloc.markets.engine import EdgeForm
    >>> C = sp.csc_matrix(np.array([[2.0, 1.0], [1.0, 2.0]]))
    >>> form = EdgeForm(np.arange(2), np.ones(2), C, np.ones(2), np.ones(2), np.arange(2))
    >>> z, p, _ = solve_dual(form)
    >>> np.round(p, 8).tolist(), np.round(z, 8).tolist()
    ([1.0, 1.0], [0.33333333, 0.33333333])
    """
    B, s = form.budget, form.supply
    R = s.size
    # goods nobody demands are free (price 0); the others are the dual's variables
    demanded = np.asarray(abs(form.C).sum(axis=1)).ravel() > 0
    goods = np.flatnonzero(demanded)
    Cd = form.C.tocsr()[goods]
    # dense BLAS costs n k^2 per Newton system, sparse products sum_i (goods of i)^2
    per_buyer = np.diff(form.C.indptr).astype(float)
    dense = (Cd.shape[0] * Cd.shape[1] <= DENSE_NEWTON_MAX_ENTRIES
             and SPARSE_SPEED * float(per_buyer @ per_buyer) >= B.size * goods.size**2)
    C: Any = Cd.toarray() if dense else Cd
    sd = s[goods]
    k = goods.size
    total = float(B.sum())
    # start: every good worth the same share of the budgets, slack at the supply
    p = np.full(k, total / max(float(sd.sum()), np.finfo(float).tiny))
    lam = np.maximum(sd, 1.0)
    scale_s = 1.0 + float(np.max(sd))
    with np.errstate(all="ignore"):
        for it in range(max_iter):
            c = C.T @ p
            if not np.all(c > 0):
                return None
            u = B / c
            r_d = sd - C @ u - lam  # dual residual (gradient of D minus the slack)
            mu = float(p @ lam) / k
            if (mu * k <= DUAL_IPM_MU_TOL * max(float(sd @ p), total)
                    and np.max(np.abs(r_d)) <= DUAL_IPM_RES_TOL * scale_s):
                price = np.zeros(R)
                price[goods] = p
                return u, price, it
            if isinstance(C, np.ndarray):
                # upper triangle of C diag(B / c^2) C^T by BLAS syrk (np.dot of the two
                # factors hit a path ten times slower here); Cholesky reads the upper triangle
                H = dsyrk(1.0, C * np.sqrt(u / c))
            else:
                G = C.multiply(np.sqrt(u / c)[None, :]).tocsr()
                H = np.asarray((G @ G.T).todense())
            H[np.diag_indices(k)] += lam / p
            try:
                factor = cho_factor(H, lower=False)
            except np.linalg.LinAlgError:
                return None
            state = (factor, p, lam, r_d)
            # predictor (affine scaling), then Mehrotra's centred corrector
            dp, dl = _direction(state, np.zeros(k))
            ta = min(_step_to_boundary(p, dp), _step_to_boundary(lam, dl))
            mu_aff = float((p + ta * dp) @ (lam + ta * dl)) / k
            sigma = (mu_aff / mu) ** DUAL_IPM_CENTRING_POWER if mu > 0 else 0.0
            dp, dl = _direction(state, sigma * mu - dp * dl)
            t = DUAL_IPM_STEP_BACK * min(_step_to_boundary(p, dp), _step_to_boundary(lam, dl))
            if not (np.all(np.isfinite(dp)) and np.all(np.isfinite(dl))) or t <= 0:
                return None
            p = p + t * dp
            lam = lam + t * dl
    return None


def dual_point(ctx: MarketContext) -> MarketPoint:
    """The ``dual`` step of a static Leontief market's plan (`DUAL`): `solve_dual`, polished
    and certified on the whole market by `fairalloc.markets.engine.certify_general` (no
    backend solve); raises `fairalloc.plan.Decline` when it did not converge.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from fairalloc.markets.engine import EngineLog
    >>> C = sp.csc_matrix(np.array([[2.0, 1.0], [1.0, 2.0]]))
    >>> form = EdgeForm(np.arange(2), np.ones(2), C, np.ones(2), np.ones(2), np.arange(2))
    >>> ctx = MarketContext(form, 1e-6, 1e-7, None, EngineLog(), [], linear=False)
    >>> pt = dual_point(ctx)
    >>> bool(pt.cert.ok), np.round(pt.prices, 8).tolist(), pt.solves
    (True, [1.0, 1.0], 0)
    """
    out = solve_dual(ctx.form, max_iter=ctx.tuning.dual_max_iter)
    if out is None:
        raise Decline("the dual interior point did not converge")
    z, p, iters = out
    return ctx.point(z, p, iters, 0, DUAL_STEP)


#: the plan step solving a static Leontief market on its dual (before the exact conic tail)
DUAL: Strategy[MarketContext, MarketPoint] = Strategy(DUAL_STEP, dual_point, point_certificate)
