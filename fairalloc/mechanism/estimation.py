"""Throughput estimation for co-located jobs: fingerprints and matrix completion (Gavel §3.3, §6).

Space sharing needs the throughput of every pair of jobs that may share a worker (§3.1), but a
new job's pairs were never profiled. Gavel (§3.3, §6, Figure 8; after Quasar) keeps a set of
*reference jobs* whose pair throughputs were all measured offline, profiles the new job against
only a few of them (a partial row: its *fingerprint*), completes the fingerprint by low-rank
matrix completion against the reference matrix, matches the new job to the closest reference job
and uses that reference's pair throughputs as its estimate.

Data layout
-----------
``reference[a, b, j]`` is the *normalised* throughput of reference job ``a`` when co-located with
reference job ``b`` on accelerator type ``j``: its pair throughput divided by its throughput alone
on ``j`` (``0``: the two cannot share a worker, e.g. memory; ``nan``: not profiled). A job's
fingerprint is its row ``reference[a]`` flattened type-major (column ``j * r + b``, the layout of
Gavel's estimator), so the fingerprint matrix is ``(r, k * r)``.

Matrix completion
-----------------
`fairalloc.complete_matrix` fits ``M ~ U V^T`` of rank ``q`` on the observed
entries (no centring: an exactly rank-``q`` matrix stays rank ``q``; the first factor carries the
mean). The default is **alternating least squares** with weighted ridge regularisation (ALS-WR: a
row's or column's penalty is ``reg`` times its number of observed entries): both half-steps are
batched ``q x q`` ridge solves (``numpy.linalg.solve`` on a stack), so an iteration costs
``O(|obs| q^2 + (m + c) q^3)`` with no Python loop over rows. ALS was chosen over nuclear-norm
minimisation (an SDP; what Gavel's offline study used) because the reference rows are fully
observed: they pin the column factors, ALS converges in a few iterations and recovers an exactly
low-rank matrix exactly (up to ``reg``), while the nuclear norm shrinks every singular value.
``method="soft_impute"`` (Mazumder, Hastie and Tibshirani 2010: iterate
``Z <- SVT_lambda(P_obs(M) + P_missing(Z))``) is the convex alternative. ``rank="auto"`` picks
the smallest rank whose 3-fold hold-out error on the observed entries is within 1 % of the best
rank's (or 0.1 % of the data's scale, whichever is looser).

Fold-in
-------
New jobs are completed against the reference fingerprints ``F`` (completed once where some
reference pairs were not profiled): the column factor is the rank-``q`` SVD of ``F``, and each
new job's partial row is a ridge least-squares fit on its measured entries (Quasar's approach,
and what ALS converges to on the stacked matrix when the reference rows are complete, up to the
new row's own pull on the factor). It is exact for exactly low-rank data whose measured columns
determine the row, costs one batched ``q x q`` solve for any number of new jobs, and has no
iteration to converge.

Matching
--------
The completed fingerprint is compared with every reference fingerprint by cosine distance
(``1 - <a, b> / (|a| |b|)``, Gavel's choice; ``metric="euclidean"`` is also available), and the
nearest reference's pair throughputs become the estimate: the new job's throughput next to
reference ``b`` is ``reference[ref, b]``, and ``b``'s next to the new job is ``reference[b, ref]``.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import (
    as_array,
    as_bool,
    as_finite_float,
    as_option,
    as_positive_float,
    as_positive_int,
    as_real_array,
    fmt_index,
)
from ..errors import InputError, only_fairalloc_errors
from ..results import FrozenArrays, readonly, require_pandas
from .lowrank import fit as _lowrank_fit

#: limit of the input: largest ridge weight / threshold accepted (the data are fitted at unit
#: scale: beyond this the model is identically zero and the normal equations overflow)
_MAX_REG = 1e6
#: the default ridge weight / threshold ``reg`` (a documented argument)
DEFAULT_REG = 1e-2
#: the default upper end of the ranks ``rank="auto"`` tries (a documented argument's default)
DEFAULT_MAX_RANK = 10
#: PERFORMANCE: iteration cap of each hold-out fit of ``rank="auto"``
_VALIDATION_MAX_ITER = 100
#: PERFORMANCE: loosest stopping tolerance used for the hold-out fits of ``rank="auto"``
_VALIDATION_TOL = 1e-6
#: heuristic (parsimony): a smaller rank is chosen when its hold-out error is within this
#: fraction of the best one ...
_RANK_SLACK_REL = 0.01
#: ... or within this fraction of the data's root mean square
_RANK_SLACK_SCALE = 1e-3
#: ACCURACY: diagonal jitter of the fold-in normal equations (keeps them non-singular)
_FOLD_IN_JITTER = 1e-14
#: display: arrays up to this size are printed in a repr
_REPR_MAX_ITEMS = 8

__all__ = [
    "Completion",
    "FingerprintMatch",
    "ThroughputEstimator",
    "complete_matrix",
]

_COMPLETION_METHODS = ("als", "soft_impute")
_MATCH_METRICS = ("cosine", "euclidean")


# --------------------------------------------------------------------------------------------
# matrix completion
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class Completion(FrozenArrays):
    """A completed matrix and how it was obtained.

    Parameters
    ----------
    matrix : ndarray, shape (m, c)
        The observed entries as given, the missing ones estimated.
    estimate : ndarray, shape (m, c)
        The low-rank model ``U V^T`` everywhere (also at observed entries).
    mask : ndarray of bool, shape (m, c)
        Observed entries.
    rank : int
        Rank of the model (``"auto"``: the one chosen by validation).
    method : str
    iterations : int
    converged : bool
        Whether the relative change of the iterates fell below ``tol`` (``stopped_by ==
        "tolerance"``).
    train_rmse : float
        Root mean square error of the model on the observed entries.
    validation_rmse : ndarray or None
        ``rank="auto"``: hold-out RMSE of each candidate rank ``1..len``.
    stopped_by : {"tolerance", "stalled", "max_iter"}
        Why the fit stopped: the iterates settled (``converged``); ALS ``"stalled"``: the
        objective was flat to ``tol`` (relative gradient) for
        `fairalloc.mechanism.lowrank.STALL_PATIENCE` iterations while the model still
        drifted (the observed entries do not pin the missing ones at this ``reg``: raise
        it); ``"max_iter"``: ``min(max_iter, fairalloc.mechanism.lowrank.ITERATION_CAP)``
        iterations ran.

    Examples
    --------
    >>> M = np.outer([1.0, 2.0, 3.0, 4.0], [1.0, 0.5, 2.0])
    >>> holes = M.copy(); holes[0, 2] = holes[3, 0] = np.nan
    >>> c = complete_matrix(holes, rank=1, reg=1e-9)
    >>> c.rank, c.method, int(c.mask.sum()), c.converged, c.train_rmse < 1e-6, c.stopped_by
    (1, 'als', 10, True, True, 'tolerance')
    >>> round(float(c.matrix[0, 2]), 6), c.validation_rmse is None
    (2.0, True)
    """

    matrix: np.ndarray
    estimate: np.ndarray
    mask: np.ndarray
    rank: int
    method: str
    iterations: int
    converged: bool
    train_rmse: float
    validation_rmse: np.ndarray | None = None
    stopped_by: str = "tolerance"

    def __repr__(self) -> str:
        return (f"Completion(shape={self.matrix.shape}, observed={int(self.mask.sum())}, "
                f"rank={self.rank}, method={self.method!r}, iterations={self.iterations}, "
                f"stopped_by={self.stopped_by!r}, train_rmse={self.train_rmse:.3g})")


def _validate_matrix(values: Any, mask: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    if mask is None:
        raw = as_array(values, name, ndim=2, nonneg=False, allow_nan=True)
        W = ~np.isnan(raw)
    else:  # entries outside the mask may hold anything, even inf
        raw = as_real_array(values, name)
        if raw.ndim != 2 or raw.size == 0:
            raise InputError(f"{name} must be a non-empty 2-D array, got shape {raw.shape}",
                             argument=name)
        W = np.asarray(as_array(mask, "mask", ndim=2, shape=raw.shape, allow_bool=True)) != 0
        bad = W & ~np.isfinite(raw)
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            raise InputError(f"{name}{fmt_index(idx)} is {raw[idx]}; observed entries must be "
                             "finite", argument=name, index=idx)
    if not W.any():
        raise InputError(f"{name} has no observed entry", argument=name)
    return np.where(W, raw, 0.0), W


def _choose_rank(M: np.ndarray, W: np.ndarray, max_rank: int, method: str, reg: float,
                 max_iter: int, tol: float, seed: int) -> tuple[int, np.ndarray]:
    """Rank with the least 3-fold hold-out RMSE on the observed entries (ties: smaller)."""
    rng = np.random.default_rng(seed)
    obs = np.flatnonzero(W.ravel())
    perm = rng.permutation(obs)
    fold = np.arange(perm.size) % 3
    sq = np.zeros(max_rank)
    count = 0
    for f in range(3):
        held = perm[fold == f]
        if held.size == 0:
            continue
        keep = W.ravel().copy()
        keep[held] = False
        Wt = keep.reshape(W.shape)
        for rk in range(1, max_rank + 1):
            est, _, _ = _lowrank_fit(M, Wt, rk, method, reg, min(max_iter, _VALIDATION_MAX_ITER),
                              max(tol, _VALIDATION_TOL))
            sq[rk - 1] += float(np.sum((est.ravel()[held] - M.ravel()[held]) ** 2))
        count += held.size
    rmse = np.sqrt(sq / max(count, 1))
    scale = float(np.sqrt(np.mean(M[W] ** 2))) if W.any() else 1.0
    return _parsimonious(rmse, scale), rmse


def _parsimonious(rmse: np.ndarray, scale: float) -> int:
    """Smallest rank whose hold-out error is within 1 % of the best one, or within 0.1 % of
    the data's scale of it (whichever is looser)."""
    finite = np.isfinite(rmse)
    if not finite.any():  # no candidate could be validated (e.g. every fit degenerate)
        return 1
    best = float(np.min(rmse[finite]))
    slack = (max(_RANK_SLACK_REL * best, _RANK_SLACK_SCALE * scale) if math.isfinite(scale)
             else _RANK_SLACK_REL * best)
    return int(np.flatnonzero(finite & (rmse <= best + slack))[0]) + 1


def _basis(F: np.ndarray, rank: int) -> np.ndarray:
    """Column factor of the rank-``rank`` SVD of complete fingerprints, scaled so that the
    reference rows' coefficients have unit root-mean-square per component."""
    r = F.shape[0]
    _, sv, vt = np.linalg.svd(F, full_matrices=False)
    return vt[:rank].T * (sv[:rank] / np.sqrt(r))


def _fold_in(B: np.ndarray, X: np.ndarray, W: np.ndarray, reg: float) -> np.ndarray:
    """Each row's ridge least-squares fit on its measured entries: ``B a_i`` with
    ``a_i = argmin sum_{j obs} (X_ij - B_j a)^2 + reg * n_i |a|^2`` (batched solves)."""
    q = B.shape[1]
    Wf = W.astype(float)
    A = (Wf @ (B[:, :, None] * B[:, None, :]).reshape(B.shape[0], q * q)).reshape(-1, q, q)
    A += (reg * np.maximum(Wf.sum(axis=1), 1.0))[:, None, None] * np.eye(q)[None, :, :]
    b = np.where(W, X, 0.0) @ B
    a = np.linalg.solve(A + _FOLD_IN_JITTER * np.eye(q)[None, :, :], b[:, :, None])[:, :, 0]
    return a @ B.T


def _choose_rank_rows(F: np.ndarray, W: np.ndarray, max_rank: int, method: str, reg: float,
                      seed: int, hide: float = 0.5) -> tuple[int, np.ndarray]:
    """Rank for fingerprint completion, validated the way it is used: 3 groups of reference rows
    in turn play new jobs with a fraction ``hide`` of their entries hidden, folded into the
    basis of the other reference rows."""
    rng = np.random.default_rng(seed)
    r = F.shape[0]
    group = rng.permutation(r) % 3
    hidden = (rng.random(F.shape) < hide) & W
    sq = np.zeros(max_rank)
    count = 0
    for rk in range(1, max_rank + 1):
        Fc = F if W.all() else np.array(
            _complete_abs(F, W, rk, method, reg).matrix)
        for g in range(3):
            rows = group == g
            held = hidden[rows]
            if not held.any() or rk > int((~rows).sum()):
                if held.any():
                    sq[rk - 1] = np.inf
                continue
            est = _fold_in(_basis(Fc[~rows], rk), F[rows], W[rows] & ~held, reg)
            sq[rk - 1] += float(np.sum((est[held] - F[rows][held]) ** 2))
            if rk == 1:
                count += int(held.sum())
    rmse = np.sqrt(sq / max(count, 1))
    scale = float(np.sqrt(np.mean(F[W] ** 2))) if W.any() else 1.0
    return _parsimonious(rmse, scale), rmse


def _data_unit(M: np.ndarray, W: np.ndarray) -> float:
    """Root mean square of the observed entries (computed without overflow); 1 if all zero."""
    top = float(np.max(np.abs(M[W]), initial=0.0))
    return top * float(np.sqrt(np.mean((M[W] / top) ** 2))) if top > 0.0 else 1.0


def _complete_abs(F: np.ndarray, W: np.ndarray, rank: int, method: str, reg: float
                  ) -> Completion:
    """`fairalloc.complete_matrix` with ``reg`` in the data's own units (the
    estimator's normalised throughputs): fitting ``F / s`` with ``reg / s`` is the same ALS problem
    as fitting ``F`` with ``reg``. Soft-impute's threshold is relative to the largest singular value
    already."""
    if method == "als":
        reg = min(reg / _data_unit(F, W), _MAX_REG)
    return complete_matrix(F, W, rank=rank, method=method, reg=reg)


@only_fairalloc_errors
def complete_matrix(
    values: Any,
    mask: Any = None,
    *,
    rank: int | str = "auto",
    method: str = "als",
    reg: float = DEFAULT_REG,
    max_iter: int = 500,
    tol: float = 1e-6,
    max_rank: int | None = None,
    seed: int = 0,
) -> Completion:
    """Complete a partially observed matrix with a low-rank model (Gavel §6, Quasar).

    Parameters
    ----------
    values : array_like, shape (m, c)
        The matrix; missing entries are ``nan`` (or marked by ``mask``).
    mask : array_like of bool, shape (m, c), optional
        Observed entries (default: the non-``nan`` ones).
    rank : int or "auto"
        Rank of the model ``U V^T``; ``"auto"`` chooses it in ``1..max_rank`` by 3-fold
        hold-out validation on the observed entries.
    method : {"als", "soft_impute"}
        Alternating ridge least squares (default) or soft-impute (iterative singular value
        thresholding, capped at ``rank``).
    reg : float
        ALS: ridge weight per observed entry of a row/column, for the matrix divided by the
        root mean square of its observed entries (so the completion does not depend on the
        data's unit).
        Soft-impute: threshold as a fraction of the largest singular value
        of the zero-filled matrix.
    max_iter : int
        Iteration limit: a cap, not a promise to run. No fit runs more than
        ``min(max_iter, ITERATION_CAP)`` (10,000) iterations, and ALS also stops when it
        stalls on a flat valley (``Completion.stopped_by``).
    tol : float
        Stop when the relative change of the model is below ``tol`` (``converged``). ALS
        judges a stall by the same ``tol``: the objective's gradient relative to the data's
        scale.
    max_rank : int, optional
        Largest rank tried by ``"auto"`` (default ``min(10, m - 1, c - 1)``, at least 1).
    seed : int
        Seed of the validation split (``"auto"``); the result is deterministic.

    Returns
    -------
    Completion

    Examples
    --------
    >>> import numpy as np
    >>> M = np.outer([1.0, 2.0, 3.0, 4.0], [1.0, 0.5, 2.0])
    >>> holes = M.copy(); holes[0, 2] = holes[3, 0] = np.nan
    >>> c = complete_matrix(holes, rank=1, reg=1e-9)
    >>> np.round(c.matrix, 6).tolist()
    [[1.0, 0.5, 2.0], [2.0, 1.0, 4.0], [3.0, 1.5, 6.0], [4.0, 2.0, 8.0]]
    """
    M, W = _validate_matrix(values, mask, "values")
    method = as_option(method, "method", _COMPLETION_METHODS)
    reg = as_finite_float(reg, "reg", lo=0.0, hi=_MAX_REG)
    max_iter = as_positive_int(max_iter, "max_iter")
    tol = as_positive_float(tol, "tol")
    m, c = M.shape
    limit = max(1, min(m, c))
    if max_rank is None:
        max_rank = max(1, min(DEFAULT_MAX_RANK, m - 1, c - 1))
    else:
        max_rank = min(as_positive_int(max_rank, "max_rank"), limit)
    seed = as_positive_int(seed, "seed", allow_zero=True)
    val = None
    if not isinstance(rank, str):
        rank = as_positive_int(rank, "rank")
        if rank > limit:
            raise InputError(f"rank {rank} exceeds min(m, c) = {limit}", argument="rank")
    elif rank != "auto":
        raise InputError(f"rank must be a positive integer or 'auto', got {rank!r}",
                         argument="rank")
    # unit scale: fit the matrix divided by the root mean square of its observed entries, so
    # that ``reg`` and the stopping rule are relative to the data and rescaling the matrix
    # rescales the answer (the RMS is taken after dividing by the largest magnitude: no
    # overflow)
    unit = _data_unit(M, W)
    Mn = M / unit
    if isinstance(rank, str):
        rank, val = _choose_rank(Mn, W, max_rank, method, reg, max_iter, tol, int(seed))
        val = val * unit
    est, it, stopped_by = _lowrank_fit(Mn, W, int(rank), method, reg, max_iter, tol)
    train = float(np.sqrt(np.mean((est[W] - Mn[W]) ** 2))) * unit
    est = est * unit
    out = np.where(W, M, est)
    for arr in (out, est, W):
        arr.flags.writeable = False
    return Completion(out, est, W, int(rank), method, it, stopped_by == "tolerance", train, val,
                      stopped_by)


# --------------------------------------------------------------------------------------------
# fingerprints and reference matching
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class FingerprintMatch(FrozenArrays):
    """New jobs matched to reference jobs by their completed fingerprints (Gavel §3.3, §6).

    Parameters
    ----------
    reference : ndarray of int, shape (q,)
        Index of the closest reference job of each new job.
    labels : tuple
        Label of that reference job.
    distance : ndarray, shape (q, r)
        Distance of each completed fingerprint to each reference fingerprint.
    fingerprint : ndarray, shape (q, r, k)
        Completed fingerprints (measured entries as given).
    own : ndarray, shape (q, r, k)
        Estimated normalised throughput of each new job next to each reference job (the
        matched reference's row).
    partner : ndarray, shape (q, r, k)
        Estimated normalised throughput of each reference job next to the new job (the
        matched reference's column).
    fit_rmse : ndarray, shape (q,)
        Root-mean-square error of the low-rank model on each job's measured entries.
    rank : int
        Rank of the completion.

    Examples
    --------
    >>> ref = np.array([[[0.9], [0.5], [0.3]],
    ...                 [[0.8], [0.6], [0.4]],
    ...                 [[0.4], [0.3], [0.9]]])
    >>> est = ThroughputEstimator(ref, labels=["resnet", "lstm", "a3c"], rank=2, reg=1e-9)
    >>> m = est.match([[0.85], [np.nan], [0.35]])   # measured next to references 0 and 2 only
    >>> m.reference.tolist(), m.labels, m.rank, m.distance.shape
    ([0], ('resnet',), 2, (1, 3))
    """

    reference: np.ndarray
    labels: tuple[Hashable, ...]
    distance: np.ndarray
    fingerprint: np.ndarray
    own: np.ndarray
    partner: np.ndarray
    fit_rmse: np.ndarray
    rank: int

    def to_frame(self) -> Any:
        """One row per new job: matched reference, its label and distance."""
        pd = require_pandas()
        q = self.reference.shape[0]
        return pd.DataFrame({
            "reference": self.reference,
            "label": list(self.labels),
            "distance": self.distance[np.arange(q), self.reference],
        })

    def __repr__(self) -> str:
        shown = self.reference.tolist() if self.reference.size <= _REPR_MAX_ITEMS else "..."
        return (f"FingerprintMatch(jobs={self.reference.shape[0]}, reference={shown}, "
                f"rank={self.rank})")


def _distances(A: np.ndarray, B: np.ndarray, metric: str) -> np.ndarray:
    if metric == "euclidean":
        d2 = (A ** 2).sum(1)[:, None] + (B ** 2).sum(1)[None, :] - 2 * A @ B.T
        return np.sqrt(np.maximum(d2, 0.0))
    na = np.linalg.norm(A, axis=1)[:, None]
    nb = np.linalg.norm(B, axis=1)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        cos = (A @ B.T) / (na * nb)
    return np.where((na > 0) & (nb > 0), 1.0 - cos, 1.0)


class ThroughputEstimator:
    """Estimate a new job's co-location throughputs from a few measurements (Gavel §3.3, §6).

    Parameters
    ----------
    reference : array_like, shape (r, r, k) or (r, r)
        Normalised pair throughputs of the reference jobs: ``reference[a, b, j]`` = throughput
        of ``a`` next to ``b`` on type ``j`` divided by ``a``'s throughput alone on ``j``
        (``0``: cannot share; ``nan``: not profiled, completed from the others).
    labels : sequence of hashable, optional
        Names of the reference jobs (default ``0..r-1``).
    types : sequence of str, optional
        Accelerator type names (default ``"0".."k-1"``).
    rank : int or "auto"
        Rank of the completion (``"auto"``: chosen by validation on the reference fingerprints).
    method : {"als", "soft_impute"}
    metric : {"cosine", "euclidean"}
        Fingerprint distance (Gavel: cosine).
    reg : float
        Regularisation (see `fairalloc.complete_matrix`).
    clip : bool
        Clip *estimated* normalised throughputs to ``[0, 1]`` (a job does not run faster next
        to another job than alone; Gavel clips too). Measured and profiled entries are kept.

    Attributes
    ----------
    reference : ndarray, shape (r, r, k)
        The reference pair throughputs, unprofiled entries completed.
    rank : int
        Rank of the completion.
    validation_rmse : ndarray or None
        ``rank="auto"``: hold-out error of each rank ``1..`` (reference rows playing new jobs
        with half their entries hidden).

    Examples
    --------
    >>> import numpy as np
    >>> ref = np.array([[[0.9], [0.5], [0.3]],
    ...                 [[0.8], [0.6], [0.4]],
    ...                 [[0.4], [0.3], [0.9]]])
    >>> est = ThroughputEstimator(ref, labels=["resnet", "lstm", "a3c"], rank=2, reg=1e-9)
    >>> m = est.match([[0.85], [np.nan], [0.35]])   # measured next to references 0 and 2 only
    >>> m.labels, m.own[0, :, 0].tolist()
    (('resnet',), [0.9, 0.5, 0.3])
    """

    @only_fairalloc_errors
    def __init__(
        self,
        reference: Any,
        *,
        labels: Sequence[Hashable] | None = None,
        types: Sequence[str] | None = None,
        rank: int | str = "auto",
        method: str = "als",
        metric: str = "cosine",
        reg: float = DEFAULT_REG,
        clip: bool = True,
    ) -> None:
        # nan: a pair that was never profiled
        raw = np.array(as_array(reference, "reference", ndim=(2, 3), allow_nan=True))
        if raw.ndim == 2:
            raw = raw[:, :, None]
        if raw.ndim != 3 or raw.shape[0] != raw.shape[1] or raw.shape[0] < 2:
            raise InputError(
                f"reference must have shape (r, r, k) or (r, r) with r >= 2, got {raw.shape}",
                argument="reference",
            )
        r, _, k = raw.shape
        if labels is None:
            labels = tuple(range(r))
        if isinstance(labels, str | bytes) or not hasattr(labels, "__iter__"):
            raise InputError(f"labels must be a sequence of {r} labels, got {labels!r}",
                             argument="labels")
        labels = tuple(labels)
        if len(labels) != r:
            raise InputError(f"labels has {len(labels)} entries for {r} reference jobs",
                             argument="labels")
        if types is None:
            types = tuple(str(j) for j in range(k))
        if isinstance(types, str | bytes) or not hasattr(types, "__iter__"):
            raise InputError(f"types must be a sequence of {k} type names, got {types!r}",
                             argument="types")
        types = tuple(str(t) for t in types)
        if len(types) != k:
            raise InputError(f"types has {len(types)} entries for {k} accelerator types",
                             argument="types")
        self._method = as_option(method, "method", _COMPLETION_METHODS)
        self._metric = as_option(metric, "metric", _MATCH_METRICS)
        self._reg = as_finite_float(reg, "reg", lo=0.0, hi=_MAX_REG)
        self._clip = as_bool(clip, "clip")
        self.labels: tuple[Hashable, ...] = labels
        self.types: tuple[str, ...] = types
        F = self._flat(raw)
        W = ~np.isnan(F)
        if not W.any(axis=1).all():
            i = int(np.flatnonzero(~W.any(axis=1))[0])
            raise InputError(f"reference job {i} has no profiled pair", argument="reference",
                             index=(i,))
        max_rank = max(1, min(DEFAULT_MAX_RANK, r - 1))
        self.validation_rmse: np.ndarray | None = None
        if isinstance(rank, str):
            if rank != "auto":
                raise InputError(f"rank must be a positive integer or 'auto', got {rank!r}",
                                 argument="rank")
            rank, self.validation_rmse = _choose_rank_rows(np.where(W, F, 0.0), W, max_rank,
                                                           self._method, self._reg, 0)
        else:
            rank = as_positive_int(rank, "rank")
            if rank > r:
                raise InputError(f"rank {rank} exceeds the {r} reference jobs", argument="rank")
        self.rank: int = int(rank)
        if W.all():
            full = F
        else:
            done = _complete_abs(F, W, self.rank, self._method, self._reg)
            full = np.where(W, F, self._clipped(np.array(done.estimate)))
        self._F = full  # (r, k*r) completed reference fingerprints
        self._B = _basis(full, self.rank)  # (k*r, rank) column factor
        ref = full.reshape(r, k, r).transpose(0, 2, 1).copy()
        ref.flags.writeable = False
        self.reference: np.ndarray = ref

    # -- helpers ------------------------------------------------------------------------------
    @staticmethod
    def _flat(cube: np.ndarray) -> np.ndarray:
        """(q, r, k) -> (q, k*r), type-major columns (Gavel's fingerprint layout)."""
        q, r, k = cube.shape
        return cube.transpose(0, 2, 1).reshape(q, k * r)

    def _clipped(self, A: np.ndarray) -> np.ndarray:
        return np.clip(A, 0.0, 1.0) if self._clip else A

    @property
    def num_references(self) -> int:
        """Number of reference jobs ``r``."""
        return int(self.reference.shape[0])

    @property
    def num_types(self) -> int:
        """Number of accelerator types ``k``."""
        return int(self.reference.shape[2])

    # -- matching -----------------------------------------------------------------------------
    @only_fairalloc_errors
    def match(self, measured: Any) -> FingerprintMatch:
        """Complete the fingerprints of new jobs and match each to its closest reference job.

        Parameters
        ----------
        measured : array_like, shape (r, k), (r,) for one type, or (q, r, k) for q jobs
            Normalised throughput of the new job next to each reference job on each type;
            ``nan`` where not measured. At least one entry per job must be measured.

        Returns
        -------
        FingerprintMatch
        """
        r, k = self.num_references, self.num_types
        # nan: a pair that was not measured
        raw = np.array(as_array(measured, "measured", ndim=(1, 2, 3), allow_nan=True))
        if raw.ndim == 1 and k == 1:
            raw = raw[:, None]
        if raw.ndim == 2:
            raw = raw[None]
        if raw.ndim != 3 or raw.shape[1:] != (r, k):
            raise InputError(
                f"measured must have shape ({r}, {k}) or (q, {r}, {k}), got "
                f"{np.shape(measured)}", argument="measured",
            )
        obs = ~np.isnan(raw)
        none = ~obs.reshape(obs.shape[0], -1).any(axis=1)
        if none.any():
            i = int(np.flatnonzero(none)[0])
            raise InputError(f"measured job {i} has no measured entry: its fingerprint is empty",
                             argument="measured", index=(i,))
        q = raw.shape[0]
        new = self._flat(raw)
        Wn = ~np.isnan(new)
        est = _fold_in(self._B, new, Wn, self._reg)
        fit = np.sqrt(np.where(Wn, (est - np.where(Wn, new, 0.0)) ** 2, 0.0).sum(axis=1)
                      / Wn.sum(axis=1))
        fp_flat = np.where(Wn, new, self._clipped(est))
        dist = _distances(fp_flat, self._F, self._metric)
        best = np.argmin(dist, axis=1)
        fp = fp_flat.reshape(q, k, r).transpose(0, 2, 1)
        own = self.reference[best]  # (q, r, k)
        partner = self.reference[:, best, :].transpose(1, 0, 2)  # (q, r, k)
        for arr in (best, dist, fp, own, partner, fit):
            arr.flags.writeable = False
        return FingerprintMatch(best, tuple(self.labels[i] for i in best.tolist()), dist, fp,
                                own, partner, fit, self.rank)

    @only_fairalloc_errors
    def pair_throughputs(self, references: Any, isolated: Any, pairs: Any) -> np.ndarray:
        """Estimated pair throughputs (steps/s) of jobs matched to reference jobs.

        Parameters
        ----------
        references : array_like of int, shape (n,)
            Reference job each of ``n`` jobs was matched to (e.g. `FingerprintMatch.
            reference`, or a pre-profiled job's own index).
        isolated : array_like, shape (n, k)
            Each job's throughput alone on each type (measured online, §3.3).
        pairs : array_like of int, shape (P, 2)
            Job pairs (indices into the ``n`` jobs).

        Returns
        -------
        ndarray, shape (P, k, 2)
            ``out[p, j, s]``: throughput of member ``s`` of pair ``p`` on type ``j`` while
            sharing a worker with the other member: ``isolated[a, j] * reference[ref_a,
            ref_b, j]`` (the layout of space-sharing pair throughputs).

        Examples
        --------
        >>> est = ThroughputEstimator([[[0.5], [0.8]], [[0.6], [0.9]]], rank=1)
        >>> est.pair_throughputs([0, 1], [[10.0], [20.0]], [[0, 1]]).tolist()
        [[[8.0, 12.0]]]
        """
        r, k = self.num_references, self.num_types
        refs = as_array(references, "references", ndim=1, integer=True)
        bad = refs >= r
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"references[{i}] = {refs[i]:g} is not a reference job index "
                             f"(0..{r - 1})", argument="references", index=(i,))
        refs_i = refs.astype(np.int64)
        n = refs_i.shape[0]
        iso = as_array(isolated, "isolated", ndim=2, shape=(n, k))
        pr = as_array(pairs, "pairs", ndim=2, shape=(None, 2), integer=True, allow_empty=True)
        pr_i = pr.astype(np.int64)
        bad = pr_i >= n
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            raise InputError(f"pairs{fmt_index(idx)} = {pr_i[idx]} is not a job index "
                             f"(0..{n - 1})", argument="pairs", index=idx)
        a, b = pr_i[:, 0], pr_i[:, 1]
        ra, rb = refs_i[a], refs_i[b]
        out = np.empty((pr_i.shape[0], k, 2))
        out[:, :, 0] = iso[a] * self.reference[ra, rb, :]
        out[:, :, 1] = iso[b] * self.reference[rb, ra, :]
        return readonly(out)

    def __repr__(self) -> str:
        return (f"ThroughputEstimator(references={self.num_references}, types={self.types}, "
                f"rank={self.rank}, method={self._method!r}, metric={self._metric!r})")
