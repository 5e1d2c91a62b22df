"""Dirichlet posteriors over regime lengths (Shockwave §5): the restatement rule, the
standard Bayesian baseline of Figure 5, and the Beta / Dirichlet helpers the forecasts use for
their means and samples (``formulations/regime_forecast.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import special

from .._validation import as_array, as_positive_float, as_positive_int
from ..errors import InputError

__all__ = ["bayesian_posterior", "restatement_posterior"]

# PERFORMANCE (input limit): the most regimes a model may have
MAX_REGIMES = 100_000
# ACCURACY: relative slack when comparing sums of observed epochs with the declared total
SUM_RTOL = 1e-9
# ACCURACY: a Beta tail probability at or below this is zero (all the remaining mass sits at
# the truncation point)
TAIL_FLOOR = 1e-300


def _betaincc(a: float, b: float, x: Any) -> Any:
    """Upper regularized incomplete Beta ``1 - I_x(a, b)``; SciPy < 1.12 has no ``betaincc``,
    where the symmetry ``1 - I_x(a, b) = I_{1-x}(b, a)`` gives it without cancellation."""
    if hasattr(special, "betaincc"):
        return special.betaincc(a, b, x)
    return special.betainc(b, a, 1.0 - np.asarray(x, dtype=float))


def _betainccinv(a: float, b: float, y: Any) -> Any:
    """Inverse of `_betaincc` in ``x`` (SciPy < 1.12: by the same symmetry)."""
    if hasattr(special, "betainccinv"):
        return special.betainccinv(a, b, y)
    return 1.0 - special.betaincinv(b, a, y)


def _readonly(arr: np.ndarray) -> np.ndarray:
    arr.flags.writeable = False
    return arr


def _num_regimes(value: Any, name: str = "num_regimes") -> int:
    k = as_positive_int(value, name)
    if k > MAX_REGIMES:
        raise InputError(f"{name} = {k} exceeds the largest supported model "
                         f"({MAX_REGIMES} regimes)", argument=name)
    return k


def _check_total(observed: np.ndarray, total: float, name: str) -> float:
    s = float(observed.sum())
    if s > total * (1.0 + SUM_RTOL):
        raise InputError(
            f"{name} sum to {s:g} epochs, more than total_epochs = {total:g}", argument=name
        )
    return min(s, total)


def restatement_posterior(
    total_epochs: float, num_regimes: int, observed_epochs: Sequence[float] | np.ndarray
) -> np.ndarray:
    """Dirichlet parameters of the restatement posterior over regime lengths (Shockwave §5).

    With ``K = num_regimes`` possible regimes and ``N = total_epochs`` epochs the prior is
    ``Dir(N/K, ..., N/K)``. After regimes ``1..k`` have finished with ``m_1..m_k`` epochs
    (``observed_epochs``), the posterior is ``Dir(m_1, ..., m_k, S_k, ..., S_k)`` with
    ``S_k = (N - sum m)/(K - k)``: the ongoing and future regimes evenly split what is left.
    Whenever ``k < K`` the parameters sum to ``N``, so the posterior mean number of epochs of
    regime ``i`` is the parameter itself.

    Parameters
    ----------
    total_epochs : float
        ``N``, the job's total number of epochs (positive).
    num_regimes : int
        ``K``, the most regimes the job's scaling rule can produce (positive).
    observed_epochs : sequence of float, length k <= K
        Epochs of each *finished* regime, in order (non-negative; ``0`` for a regime that was
        skipped). Empty before the first regime change: the posterior is then the prior.

    Returns
    -------
    ndarray, shape (K,)
        Read-only Dirichlet parameters (non-negative). Zeros appear only for finished regimes
        with no epochs and, when ``sum m = N``, for regimes left with nothing (a point mass).
        With ``k = K`` every regime has finished and the parameters are ``m`` itself.

    Raises
    ------
    InputError
        If ``total_epochs`` or ``num_regimes`` is not positive, ``observed_epochs`` has more
        than ``K`` entries, a negative or non-finite entry, sums to more than ``N``, or (with
        ``k = K``) sums to zero.

    Examples
    --------
    >>> restatement_posterior(100, 4, [])
    array([25., 25., 25., 25.])
    >>> restatement_posterior(100, 4, [10, 30])
    array([10., 30., 30., 30.])
    """
    n_total = as_positive_float(total_epochs, "total_epochs")
    k_max = _num_regimes(num_regimes)
    m = as_array(observed_epochs, "observed_epochs", ndim=1, allow_empty=True)
    k = m.shape[0]
    if k > k_max:
        raise InputError(
            f"observed_epochs has {k} finished regimes but num_regimes = {k_max}",
            argument="observed_epochs",
        )
    s = _check_total(m, n_total, "observed_epochs")
    if k == k_max and s <= 0:
        raise InputError(
            "observed_epochs are all zero: every regime finished without an epoch",
            argument="observed_epochs",
        )
    return _readonly(_restatement_alpha(n_total, k_max, m))


def _restatement_alpha(n_total: float, k_max: int, m: np.ndarray) -> np.ndarray:
    """The restatement rule on validated inputs (``sum m <= N``, ``len(m) <= K``)."""
    k = m.shape[0]
    if k == k_max:
        return np.array(m, dtype=np.float64, copy=True)
    rest = max(n_total - float(m.sum()), 0.0) / (k_max - k)
    return np.concatenate([m, np.full(k_max - k, rest)])


def bayesian_posterior(
    total_epochs: float, num_regimes: int, epochs_per_regime: Sequence[float] | np.ndarray
) -> np.ndarray:
    """Dirichlet parameters of the *standard* Bayesian update (baseline of Shockwave Figure 5).

    The standard conjugate update treats every observed epoch as an independent categorical
    draw of its regime: from the prior ``Dir(N/K, ..., N/K)``, ``c_i`` epochs seen in regime
    ``i`` (finished or ongoing) give ``Dir(N/K + c_1, ..., N/K + c_K)``. Shockwave §5 explains
    why this is wrong for regimes -- epochs of regime ``k`` can only appear after regime
    ``k-1`` ends -- and compares it with [`restatement_posterior`][fairalloc.restatement_posterior]
    in Figure 5.

    Parameters
    ----------
    total_epochs : float
        ``N`` (positive).
    num_regimes : int
        ``K`` (positive).
    epochs_per_regime : sequence of float, length <= K
        Epochs observed so far in regimes ``1, 2, ...``; missing trailing regimes count 0.

    Returns
    -------
    ndarray, shape (K,)
        Read-only Dirichlet parameters (all positive).

    Examples
    --------
    >>> bayesian_posterior(100, 4, [10, 30])
    array([35., 55., 25., 25.])
    """
    n_total = as_positive_float(total_epochs, "total_epochs")
    k_max = _num_regimes(num_regimes)
    c = as_array(epochs_per_regime, "epochs_per_regime", ndim=1, allow_empty=True)
    if c.shape[0] > k_max:
        raise InputError(
            f"epochs_per_regime has {c.shape[0]} regimes but num_regimes = {k_max}",
            argument="epochs_per_regime",
        )
    _check_total(c, n_total, "epochs_per_regime")
    alpha = np.full(k_max, n_total / k_max)
    alpha[: c.shape[0]] += c
    return _readonly(alpha)



def _censored_share_mean(a: float, b: float, tau: float) -> float:
    """``E[g | g >= tau]`` for ``g ~ Beta(a, b)`` (upper-truncated Beta mean)."""
    if tau <= 0.0:
        return a / (a + b)
    if tau >= 1.0:
        return 1.0
    with np.errstate(all="ignore"):
        tail = _betaincc(a, b, tau)
        upper = _betaincc(a + 1.0, b, tau)
        value = a / (a + b) * upper / tail
    if not np.isfinite(value) or tail <= TAIL_FLOOR:
        # all the remaining mass sits at the truncation point
        return tau
    return float(min(max(value, tau), 1.0))


def _sample_ongoing_share(
    gen: np.random.Generator, num: int, s: float, unfinished: int, tau: float, censor: bool
) -> np.ndarray:
    """Draws of the ongoing regime's share ``g`` of the epochs not in finished regimes."""
    if unfinished == 1:
        return np.ones(num)
    a, b = s, (unfinished - 1) * s
    if censor and tau > 0.0:
        tail = float(_betaincc(a, b, min(tau, 1.0)))
        if tail <= TAIL_FLOOR:
            return np.full(num, min(tau, 1.0))
        g = _betainccinv(a, b, gen.uniform(0.0, 1.0, size=num) * tail)
    else:
        g = gen.beta(a, b, size=num)
    return np.clip(g, min(tau, 1.0), 1.0)


def _bayesian_remaining(
    pred: np.ndarray, observed: np.ndarray, current: int, total: float
) -> np.ndarray:
    """Remaining epochs of the standard-Bayesian baseline from predicted regime lengths.

    Regimes before ``current`` are done; the ongoing one keeps ``max(pred - observed, 0)``;
    future regimes keep their prediction; the result is rescaled to the epochs actually left
    (``N - F`` is known), as the upstream predictor rescales its estimate.
    """
    pred = np.atleast_2d(pred)
    out = np.array(pred, dtype=np.float64, copy=True)
    out[:, :current] = 0.0
    out[:, current] = np.maximum(out[:, current] - observed[current], 0.0)
    left = max(total - float(observed.sum()), 0.0)
    tot = out.sum(axis=1)
    pos = tot > 0
    out[pos] *= (left / tot[pos])[:, None]
    out[~pos, current] = left
    return out


