"""Composable objective terms for cvxpy-built policies.

`makespan_regularizer` is Shockwave's long-term efficiency estimator (Shockwave
§6.2, App. G.2, Eq. 10-11) as a standalone concave cvxpy expression: add it to any program
whose allocation determines how much work each job gets done -- the volatile Fisher market
(`fairalloc.markets.FisherMarket.add_objective_term`),
an effective-throughput program, or the continuous relaxation of a plan -- and the program trades
fairness against the makespan lower bound exactly as the Shockwave plan does
(``formulations/makespan_regularizer.md``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._validation import as_array, as_gang_sizes, as_option, as_positive_float, as_real_array
from ..errors import InputError
from .instance import MAKESPAN_KINDS

__all__ = ["makespan_regularizer"]

#: the regulariser's forms: the plan's (``instance.MAKESPAN_KINDS``) and ``"longest"``
REGULARIZER_KINDS = (*MAKESPAN_KINDS, "longest")


def makespan_regularizer(
    work: Any,
    remaining: Any,
    num_gpus: float,
    *,
    workers: Any = None,
    lam: float = 1e-3,
    z0: float | None = None,
    kind: str = "paper",
) -> Any:
    """``-(lam/Z0) * H``: Shockwave's makespan regulariser as a concave cvxpy term.

    With ``R_j = max(remaining_j - work_j, 0)`` the remaining run time after the allocation,

        H = max( sum_j w_j R_j / M , max_j R_j )        (Eq. 10, gang sizes w_j)

    is a lower bound on the time to finish every job; the term penalises it, normalised by
    ``Z0 = sum_j remaining_j`` (Eq. 11). ``H`` is convex in ``work`` (a maximum of sums of
    ``pos`` of affine functions), so the term is concave whenever ``work`` is concave (e.g.
    affine) in the program's variables, and it can be maximised alongside a Nash welfare.

    Parameters
    ----------
    work : cvxpy.Expression, shape (n,)
        Seconds of isolated run time each job gets done under the allocation (affine or
        concave in the variables). For a volatile market whose utilities are epoch progress,
        ``work = cp.multiply(seconds_per_unit_utility, market.utility_expr)``.
    remaining : array_like, shape (n,)
        Each job's remaining isolated run time before the allocation (seconds, >= 0).
    num_gpus : float
        ``M`` (positive).
    workers : array_like of int, shape (n,), optional
        Gang sizes ``w_j`` (default 1; each at most ``M``).
    lam : float, default 1e-3
        ``lambda`` (non-negative): the weight of the term.
    z0 : float, optional
        ``Z0``; default ``sum_j remaining_j`` (`fairalloc.makespan_normalizer`).
    kind : {"paper", "max_remaining", "scale_free", "longest"}
        ``"scale_free"`` divides the paper's term by ``M`` too: ``-(lam/(M Z0)) * H``.
        ``"longest"`` is ``-(lam/Z0) * max_j R_j``: upstream's term with the paper's
        normalisation (``plan_schedule(makespan="longest")``, the Shockwave policy's default).
        ``"max_remaining"`` is upstream Shockwave's regulariser: ``lam * max_j R_j`` in raw
        seconds, without the ``sum_j w_j R_j / M`` term and without ``Z0`` (the expression is
        built in units of a power of two near ``sum_j remaining_j``, which is exact).

    Returns
    -------
    cvxpy.Expression
        A concave scalar expression (``-(lam/Z0) * H``).

    Raises
    ------
    InputError
        ``work`` is not a cvxpy expression of shape ``(n,)`` or is not concave, bad
        ``remaining``/``workers``/``lam``/``num_gpus``/``z0``/``kind`` (named), a gang larger
        than ``M``, ``Z0 = 0``, or a ``lam`` so large that the term overflows a float.

    Examples
    --------
    Two single-GPU jobs with 100 s and 300 s left; the allocation gets 50 s of work done on
    each, so ``R = (50, 250)`` and ``H = max(300/1, 250) = 300``:

    >>> import cvxpy as cp
    >>> work = cp.Constant([50.0, 50.0])
    >>> term = makespan_regularizer(work, [100.0, 300.0], 1, lam=1.0)
    >>> round(float(term.value), 6)   # -(1/400) * 300
    -0.75
    >>> term = makespan_regularizer(work, [100.0, 300.0], 1, lam=1.0, kind="longest")
    >>> round(float(term.value), 6)   # -(1/400) * max(50, 250)
    -0.625
    """
    import cvxpy as cp

    kind = as_option(kind, "kind", REGULARIZER_KINDS)
    P = as_array(remaining, "remaining", ndim=1)
    n = P.shape[0]
    with np.errstate(over="ignore", invalid="ignore"):
        total = float(P.sum())
    if not math.isfinite(total):
        raise InputError("remaining sums to more than a float can hold (use larger units)",
                         argument="remaining")
    M = as_positive_float(num_gpus, "num_gpus")
    lam_v = as_positive_float(lam, "lam", allow_zero=True)
    w = as_gang_sizes(workers, n, M)
    if not isinstance(work, cp.Expression):
        raise InputError("work must be a cvxpy expression (wrap numbers in cp.Constant)",
                         argument="work")
    if work.is_constant() and work.value is not None:
        # a constant's entries follow the rules of every numeric argument (subnormals refused)
        if not np.all(np.isfinite(as_real_array(work.value, "work"))):
            raise InputError("work is a constant with a NaN or infinite entry", argument="work")
    if tuple(work.shape) != (n,):
        raise InputError(f"work has shape {tuple(work.shape)}; remaining has {n} jobs",
                         argument="work")
    if not work.is_concave():
        raise InputError("work must be affine or concave in the variables (the term would "
                         "not be concave)", argument="work")
    if kind in ("paper", "scale_free", "longest"):
        if z0 is None:
            z = total
            if z <= 0:
                raise InputError("every remaining time is zero: Z0 = 0 leaves the "
                                 "regulariser undefined; pass z0", argument="remaining")
        else:
            z = as_positive_float(z0, "z0")
        coef, scale = (lam_v if kind == "paper" else lam_v / M), z
    else:
        # a power of two near sum_j remaining_j: exact, and free of the units of the times
        scale = math.ldexp(1.0, round(math.log2(total))) if 0 < total < math.inf else 1.0
        coef = lam_v * scale
    if not math.isfinite(coef * max(float(P.max(initial=0.0)) / scale, 1.0)):
        raise InputError(f"lam = {lam_v:g} with these remaining times (and z0) makes the term "
                         "overflow a float", argument="z0" if z0 is not None else "lam")
    # work in units of `scale` seconds keeps the conic data well scaled (P ~ 1e5 s)
    rem = cp.pos(P / scale - work / scale)
    h: Any = cp.max(rem)
    if kind not in ("max_remaining", "longest"):
        h = cp.maximum(rem @ (w / M), h)
    return -coef * h
