"""Dirichlet posteriors over regime lengths (Shockwave §5): the restatement rule, the
standard Bayesian baseline of Figure 5, and the Beta / Dirichlet helpers the forecasts use for
their means and samples (``formulations/regime_forecast.md``).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
from scipy import special

from .._validation import as_array, as_positive_float, as_positive_int
from ..errors import InputError

__all__ = ["RegimePool", "bayesian_posterior", "regime_length_prior", "restatement_posterior"]

# PERFORMANCE (input limit): the most regimes a model may have
MAX_REGIMES = 100_000
# ACCURACY: relative slack when comparing sums of observed epochs with the declared total
SUM_RTOL = 1e-9
# ACCURACY: the Kaplan-Meier median is where the survival curve first falls to one half
KM_MEDIAN = 0.5
# ACCURACY: a regime's length is compared in absolute epochs or as a fraction of the job's
# epochs only when at least this many examples ended it (a spread needs two values)
MIN_ENDED_FOR_SCALE = 2
# ACCURACY: floor of a mean length when computing a coefficient of variation (epochs, or a
# fraction of N): keeps an all-zero column from dividing by zero
CV_FLOOR = 1e-12
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
    ``k-1`` ends -- and compares it with `fairalloc.restatement_posterior`
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




# ---- empirical regime-length priors from other jobs (observed) ----------------------------
def _empirical_lengths(base: np.ndarray, prior: np.ndarray, floor: np.ndarray, e: float,
                       rest: float) -> np.ndarray:
    """Lengths of the unfinished regimes (ongoing first) of ``method="empirical"``.

    ``base``: the restatement forecast of those regimes; ``prior``: their prior lengths
    (``nan`` unknown); ``floor``: lower bounds on them; ``e``: epochs the ongoing regime has
    run; ``rest``: epochs of all unfinished regimes together.
    """
    seg = np.array(base, dtype=np.float64, copy=True)
    known = np.isfinite(prior)
    known[0] = known[0] and prior[0] > e
    seg[known] = prior[known]
    if not known[0]:  # the ongoing regime keeps its restatement value, raised to its bound
        seg[0] = max(seg[0], floor[0])
    free = ~known
    free[0] = False
    if free.any():
        seg[free] = np.maximum(max(rest - float(seg[~free].sum()), 0.0) / int(free.sum()),
                               floor[free])
    cum = np.cumsum(seg)
    out = np.diff(np.concatenate([[0.0], np.minimum(cum, rest)]))
    out[-1] += max(rest - float(cum[-1]), 0.0)
    out[0] = max(out[0], e)
    return out


def _km_median(lengths: np.ndarray, ended: np.ndarray) -> np.ndarray:
    """Kaplan-Meier median of every column (one column per regime index).

    ``lengths`` (m, R): epochs each example spent in the regime; ``ended`` (m, R): the regime
    ended (the example moved on), else the length is a lower bound (censored; examples that
    never reached the regime are masked out by the caller with ``nan``). Ties: an end counts
    before a censored length. NaN where the survival curve never falls to one half.
    """
    if lengths.shape[0] == 0:
        return np.full(lengths.shape[1], np.nan)
    m, r = lengths.shape
    seen = np.isfinite(lengths)
    t = np.where(seen, lengths, np.inf)
    # sort each column by (length, censored after ended at ties); unseen rows go last
    order = np.lexsort((~ended, t), axis=0)
    ts = np.take_along_axis(t, order, axis=0)
    ev = np.take_along_axis(ended & seen, order, axis=0)
    at_risk = seen.sum(axis=0)[None, :] - np.arange(m)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(ev, 1.0 - 1.0 / np.maximum(at_risk, 1), 1.0)
    surv = np.cumprod(factor, axis=0)
    hit = surv <= KM_MEDIAN
    first = np.argmax(hit, axis=0)
    out = ts[first, np.arange(r)]
    return np.where(hit.any(axis=0), out, np.nan)


def regime_length_prior(
    total_epochs: Any, regime_epochs: Any, ended: Any, target_epochs: float
) -> np.ndarray:
    """Expected length of each regime of a job from the observed regimes of similar jobs.

    An empirical prior for `fairalloc.forecast_regimes`
    (``method="empirical"``): jobs of one family (model and scaling rule) go through the same
    regimes, and how long the jobs seen so far stayed in regime ``i`` predicts how long the
    next one will. Per regime index the length is the Kaplan-Meier median over the examples
    -- a regime that an example left is an observed length, one it is still in (or finished
    the job in) a lower bound -- measured in absolute epochs or as a fraction of each example's
    ``N``, whichever the examples that left the regime spread less over (coefficient of
    variation; absolute epochs with fewer than two such examples). GNS doublings at fixed
    epochs are absolute; Accordion's critical regime, a share of the job, is a fraction.

    Parameters
    ----------
    total_epochs : array_like, shape (m,)
        ``N`` of each example job (positive).
    regime_epochs : array_like, shape (m, R)
        Epochs each example spent in each regime index; ``nan`` where it never reached it.
    ended : array_like of bool, shape (m, R)
        Whether the example left that regime for a later one (else its length is censored).
    target_epochs : float
        ``N`` of the job to forecast (scales the fraction-of-``N`` medians).

    Returns
    -------
    ndarray, shape (2, R)
        Row 0: expected epochs of each regime index; ``nan`` where the examples do not
        determine the median (no example reached the regime, or too few left it). Row 1: a
        lower bound on the regime's length, the smaller of the longest length observed in
        epochs and the longest fraction observed times ``target_epochs`` (0 where no example
        reached the regime) -- what every example shows the regime lasts at least.

    Raises
    ------
    InputError
        On shapes that disagree, negative lengths or non-positive ``N``.

    Examples
    --------
    Three GNS jobs doubled after 10 epochs; two doubled again after 20 more and one is still
    in its second regime after 15 (censored). Absolute epochs spread less than fractions:

    >>> import numpy as np
    >>> nan = np.nan
    >>> regime_length_prior([100, 60, 200], [[10, 20, 70], [10, 15, nan], [10, 20, 5]],
    ...                     [[True, True, False], [True, False, False],
    ...                      [True, True, False]], target_epochs=80)
    array([[10., 20., nan],
           [10., 20., 56.]])
    """
    n = as_array(total_epochs, "total_epochs", ndim=1, positive=True)
    lengths = as_array(regime_epochs, "regime_epochs", ndim=2, shape=(n.shape[0], None),
                       allow_nan=True, allow_empty=True)
    try:
        done = np.array(ended, dtype=bool)
    except (TypeError, ValueError) as exc:
        raise InputError(f"ended must be an array of bools ({exc})", argument="ended") from exc
    if done.shape != lengths.shape:
        raise InputError(f"ended has shape {done.shape}, regime_epochs {lengths.shape}",
                         argument="ended")
    target = as_positive_float(target_epochs, "target_epochs")
    return _readonly(_length_prior(n, lengths, done, target))


def _length_prior(n: np.ndarray, lengths: np.ndarray, ended: np.ndarray,
                  target: float) -> np.ndarray:
    """`regime_length_prior` on validated arrays."""
    if lengths.size == 0:
        return np.stack([np.full(lengths.shape[1], np.nan), np.zeros(lengths.shape[1])])
    ended = ended & np.isfinite(lengths)
    frac = lengths / n[:, None]
    med_abs = _km_median(lengths, ended)
    med_frac = _km_median(frac, ended)
    count = ended.sum(axis=0)

    def cv(x: np.ndarray) -> np.ndarray:
        x = np.where(ended, x, np.nan)
        with np.errstate(invalid="ignore"):
            mean = np.nanmean(np.where(count > 0, x, 0.0), axis=0)
            std = np.nanstd(np.where(count > 0, x, 0.0), axis=0)
        return std / np.maximum(mean, CV_FLOOR)

    use_frac = (count >= MIN_ENDED_FOR_SCALE) & (cv(frac) < cv(lengths))
    seen = np.isfinite(lengths)
    floor = np.minimum(np.where(seen, lengths, 0.0).max(axis=0),
                       np.where(seen, frac, 0.0).max(axis=0) * target)
    return np.stack([np.where(use_frac, med_frac * target, med_abs), floor])


class RegimePool:
    """What has been observed of many jobs' regimes, pooled per family: empirical priors.

    A scheduler records, every time it forecasts, what each job has shown so far
    (`observe`); `prior` then gives a job the expected regime lengths of its family
    (``fairalloc.schedule.posteriors.regime_length_prior``) and `profile`
    its epoch durations at configurations it has not run yet, from the ratios other jobs of
    its speed family measured between configurations. Only observed quantities enter: a
    job's finished regimes and its measured epoch times; a finished job keeps its last record
    (its last regime censored). Results are cached per family until it is observed again.

    Examples
    --------
    >>> pool = RegimePool()
    >>> pool.observe("a", "LM/gns", 100, [10, 20, 5], configurations=[10, 20, 40],
    ...              epoch_seconds=[60.0, 40.0, 30.0])
    >>> pool.observe("b", "LM/gns", 50, [10, 3], configurations=[10, 20],
    ...              epoch_seconds=[66.0, 44.0])
    >>> pool.prior("LM/gns", 80, 4)
    array([[10., 20., nan, nan],
           [10., 16.,  4.,  0.]])
    >>> pool.profile("LM/gns", 10, 63.0, [10, 20, 40, 80])
    {10.0: 63.0, 20.0: 42.0, 40.0: 31.5}
    """

    def __init__(self) -> None:
        self._jobs: dict[Hashable, dict[Hashable, tuple[float, np.ndarray]]] = {}
        self._speed: dict[Hashable, dict[Hashable, dict[float, float]]] = {}
        self._cache: dict[Hashable, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._ratios: dict[Hashable, dict[tuple[float, float], float | None]] = {}

    def observe(self, job: Hashable, family: Hashable, total_epochs: float,
                regime_epochs: Any, *, configurations: Any = None, epoch_seconds: Any = None,
                speed_family: Hashable | None = None) -> None:
        """Record what job ``job`` has shown so far (replaces its previous record).

        Parameters
        ----------
        job : hashable
            The job's label.
        family : hashable
            Jobs whose regimes follow the same rule (e.g. ``(model, mode)``).
        total_epochs : float
            The job's ``N``.
        regime_epochs : array_like, shape (r,)
            Epochs spent in each regime seen so far, in order; every regime but the last has
            ended, the last is ongoing (or ended the job): censored.
        configurations, epoch_seconds : array_like, shape (r,), optional
            Configuration and mean measured seconds per epoch of those regimes, for `profile`.
        speed_family : hashable, optional
            Jobs whose epoch times scale alike between configurations (e.g. ``(model, gang
            size)``); default ``family``.
        """
        n = as_positive_float(total_epochs, "total_epochs")
        lengths = as_array(regime_epochs, "regime_epochs", ndim=1, allow_empty=True)
        self._jobs.setdefault(family, {})[job] = (n, lengths)
        self._cache.pop(family, None)
        if configurations is None or epoch_seconds is None:
            return
        cfg = as_array(configurations, "configurations", ndim=1, positive=True,
                       shape=lengths.shape, allow_empty=True)
        sec = as_array(epoch_seconds, "epoch_seconds", ndim=1, positive=True,
                       shape=lengths.shape, allow_empty=True)
        key = family if speed_family is None else speed_family
        self._speed.setdefault(key, {})[job] = dict(zip(cfg.tolist(), sec.tolist(),
                                                        strict=True))
        self._ratios.pop(key, None)

    def forget(self, job: Hashable) -> None:
        """Drop everything recorded of ``job`` (e.g. to leave it out of its own prior)."""
        for family, jobs in self._jobs.items():
            if jobs.pop(job, None) is not None:
                self._cache.pop(family, None)
        for key, speed in self._speed.items():
            if speed.pop(job, None) is not None:
                self._ratios.pop(key, None)

    def _table(self, family: Hashable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        hit = self._cache.get(family)
        if hit is not None:
            return hit
        jobs = list(self._jobs.get(family, {}).values())
        r = max((len(x[1]) for x in jobs), default=0)
        n = np.array([x[0] for x in jobs], dtype=float)
        lengths = np.full((len(jobs), r), np.nan)
        ended = np.zeros((len(jobs), r), dtype=bool)
        sizes = np.array([len(x[1]) for x in jobs], dtype=np.int64)
        if jobs and r:
            mask = np.arange(r)[None, :] < sizes[:, None]
            lengths[mask] = np.concatenate([x[1] for x in jobs])
            ended = np.arange(r)[None, :] < (sizes - 1)[:, None]
        out = (n, lengths, ended)
        self._cache[family] = out
        return out

    def prior(self, family: Hashable, total_epochs: float, num_regimes: int) -> np.ndarray:
        """Shape ``(2, num_regimes)``: expected length of each regime for a job of ``family``
        with ``total_epochs`` epochs (``nan``: not determined by what was observed) and a
        lower bound on it (0: none), as `regime_length_prior` returns them."""
        k = _num_regimes(num_regimes)
        target = as_positive_float(total_epochs, "total_epochs")
        n, lengths, ended = self._table(family)
        out = np.stack([np.full(k, np.nan), np.zeros(k)])
        if n.size and lengths.shape[1]:
            med = _length_prior(n, lengths, ended, target)
            r = min(k, med.shape[1])
            out[:, :r] = med[:, :r]
        return _readonly(out)

    def profile(self, speed_family: Hashable, configuration: float, seconds: float,
                configurations: Any) -> dict[float, float]:
        """Seconds per epoch at each of ``configurations`` for a job that measured
        ``seconds`` at ``configuration``: ``seconds`` times the median ratio other jobs of
        ``speed_family`` measured between the two (only configurations some job measured
        together with ``configuration`` appear)."""
        b = as_positive_float(configuration, "configuration")
        s = as_positive_float(seconds, "seconds")
        cfg = as_array(configurations, "configurations", ndim=1, positive=True,
                       allow_empty=True)
        out = {b: s}
        cache = self._ratios.setdefault(speed_family, {})
        for c in cfg.tolist():  # a short loop over the job's configurations
            if c == b:
                continue
            if (b, c) not in cache:
                ratios = [d[c] / d[b] for d in self._speed.get(speed_family, {}).values()
                          if b in d and c in d]
                cache[(b, c)] = float(np.median(ratios)) if ratios else None
            ratio = cache[(b, c)]
            if ratio is not None:
                out[float(c)] = s * ratio
        return out
