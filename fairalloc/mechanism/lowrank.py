"""The low-rank fits behind `fairalloc.complete_matrix`: alternating ridge least squares
(ALS-WR) and soft-impute on unit-scaled data, each with a deterministic work bound.

Each fit returns ``(model, iterations, stopped_by)``; ``stopped_by`` is ``"tolerance"`` (the
model's relative change fell below ``tol``), ``"stalled"`` (ALS only: the objective is flat to
``tol`` while the model drifts along a valley the data do not pin down) or ``"max_iter"``
(``min(max_iter, ITERATION_CAP)`` iterations ran).
"""

from __future__ import annotations

import numpy as np

__all__ = ["ITERATION_CAP", "STALL_PATIENCE", "fit"]

#: PERFORMANCE: hard-impute sweeps of the spectral start of ALS
_SPECTRAL_SWEEPS = 10
#: ACCURACY: floor of singular values and norms that are divided by or square-rooted (a zero
#: matrix gives a zero model instead of 0/0)
_TINY = 1e-12
#: value of the factor columns added when the data have fewer singular values than the rank
#: (a small non-zero start, so ALS can grow them)
_PAD_START = 1e-6
#: PERFORMANCE (a deterministic work bound): iterations of one ALS / soft-impute fit never
#: exceed this, whatever ``max_iter`` says (``max_iter`` is a cap, not a promise to run)
ITERATION_CAP = 10_000
#: PERFORMANCE: ALS iterations the fit runs on after the objective's relative gradient fell
#: below ``tol`` while the model kept moving by more than ``tol`` per iteration, before it
#: stops as stalled (a flat valley: the data do not determine the missing entries)
STALL_PATIENCE = 100


def _init_factors(R: np.ndarray, W: np.ndarray, rank: int, sweeps: int = _SPECTRAL_SWEEPS
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Spectral start: a few hard-impute sweeps (rank-``rank`` SVD, refill the missing
    entries), then the factors of the last truncated SVD."""
    Z = np.where(W, R, 0.0)
    for _ in range(sweeps):
        u, s, vt = np.linalg.svd(Z, full_matrices=False)
        Z = np.where(W, R, (u[:, :rank] * s[:rank]) @ vt[:rank])
    u, s, vt = np.linalg.svd(Z, full_matrices=False)
    s = s[:rank]
    root = np.sqrt(np.maximum(s, _TINY))
    U = u[:, :rank] * root
    V = vt[:rank].T * root
    if U.shape[1] < rank:  # fewer singular values than the rank asked for
        pad = rank - U.shape[1]
        U = np.hstack([U, np.full((U.shape[0], pad), _PAD_START)])
        V = np.hstack([V, np.full((V.shape[0], pad), _PAD_START)])
    return U, V


def _ridge_rows(R: np.ndarray, W: np.ndarray, F: np.ndarray, reg: float) -> np.ndarray:
    """For each row i: argmin_u sum_{j obs} (R_ij - u . F_j)^2 + reg * n_i |u|^2 (batched)."""
    rank = F.shape[1]
    Wf = W.astype(float)
    # A_i = sum_j W_ij F_j F_j^T for every row at once: one GEMM with the stacked outer products
    outer = (F[:, :, None] * F[:, None, :]).reshape(F.shape[0], rank * rank)
    A = (Wf @ outer).reshape(W.shape[0], rank, rank)
    n_i = Wf.sum(axis=1)
    A += (reg * np.maximum(n_i, 1.0))[:, None, None] * np.eye(rank)[None, :, :]
    b = (np.where(W, R, 0.0)) @ F
    try:
        return np.linalg.solve(A, b[:, :, None])[:, :, 0]
    except np.linalg.LinAlgError:  # reg = 0 and a row/column observed too rarely: least squares
        return (np.linalg.pinv(A) @ b[:, :, None])[:, :, 0]


def _als(R: np.ndarray, W: np.ndarray, rank: int, reg: float, max_iter: int, tol: float
         ) -> tuple[np.ndarray, int, str]:
    """Alternating ridge least squares on the unit-scaled data ``R``: ``(model, iterations,
    stopped_by)``. Stops when the model's relative change falls below ``tol``; or when the
    gradient of the objective (in ``U``; the ``V`` step zeroes the other one), relative to the
    data's and the factors' scale, has stayed below ``tol`` for `STALL_PATIENCE` iterations
    while the model still moves (sub-linear drift along a flat valley); or after
    ``min(max_iter, ITERATION_CAP)`` iterations."""
    U, V = _init_factors(R, W, rank)
    prev = U @ V.T
    Wf = W.astype(float)
    reg_rows = reg * np.maximum(Wf.sum(axis=1), 1.0)
    data = max(float(np.linalg.norm(R)), _TINY)  # R is zero off the mask
    flat = 0
    cap = min(max_iter, ITERATION_CAP)
    for it in range(1, cap + 1):
        U = _ridge_rows(R, W, V, reg)
        V = _ridge_rows(R.T, W.T, U, reg)
        cur = U @ V.T
        change = float(np.linalg.norm(cur - prev)) / max(float(np.linalg.norm(prev)), _TINY)
        prev = cur
        if change < tol:
            return cur, it, "tolerance"
        grad = (Wf * (cur - R)) @ V + reg_rows[:, None] * U
        flat = flat + 1 if (float(np.linalg.norm(grad))
                            <= tol * data * max(float(np.linalg.norm(V)), _TINY)) else 0
        if flat >= STALL_PATIENCE:
            return cur, it, "stalled"
    return prev, cap, "max_iter"


def _soft_impute(R: np.ndarray, W: np.ndarray, rank: int, reg: float, max_iter: int,
                 tol: float) -> tuple[np.ndarray, int, str]:
    Z0 = np.where(W, R, 0.0)
    lam = reg * (np.linalg.norm(Z0, 2) if Z0.size else 0.0)
    Z = np.zeros_like(R)
    cap = min(max_iter, ITERATION_CAP)
    for it in range(1, cap + 1):
        filled = np.where(W, R, Z)
        u, s, vt = np.linalg.svd(filled, full_matrices=False)
        s = np.maximum(s - lam, 0.0)[:rank]
        new = (u[:, :rank] * s) @ vt[:rank]
        change = float(np.linalg.norm(new - Z)) / max(float(np.linalg.norm(Z)), _TINY)
        Z = new
        if change < tol:
            return Z, it, "tolerance"
    return Z, cap, "max_iter"


def fit(M: np.ndarray, W: np.ndarray, rank: int, method: str, reg: float, max_iter: int,
         tol: float) -> tuple[np.ndarray, int, str]:
    R = np.where(W, M, 0.0)
    if method == "als":
        return _als(R, W, rank, reg, max_iter, tol)
    return _soft_impute(R, W, rank, reg, max_iter, tol)
