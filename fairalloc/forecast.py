"""Regime forecasts and Shockwave's long-term fairness and makespan estimators.

Shockwave (shockwave.txt §5, §6.2, App. F, App. G.2) plans a window of rounds from a forecast of
how each elastic training job will change its configuration (batch size) in the future:

* A **regime** is a tuple (configuration, fraction of epochs) (§5). Batch-size scaling rules
  fix the *order* of configurations -- Accordion alternates two batch sizes, GNS only doubles --
  so the only random quantities are the regimes' lengths. :class:`RegimeModel` holds that order.
* The lengths get the Dirichlet prior ``Dir(N/K, ..., N/K)`` and the **restatement** posterior
  (:func:`restatement_posterior`): after regimes ``1..k`` finish with ``m_1..m_k`` epochs the
  posterior is ``Dir(m_1, ..., m_k, S_k, ..., S_k)``, ``S_k = (N - sum m)/(K - k)``.
* :func:`forecast_regimes` turns what has been observed of one job -- the configuration and the
  measured seconds of every finished epoch, nothing else -- into a :class:`RegimeForecast`: the
  posterior-mean trajectory of the remaining regimes as ``(epoch_seconds, epochs)`` pairs (the
  format :class:`fairalloc.PlanJob` takes), the predicted total and remaining run time, and
  trajectories sampled from the posterior for the planner's scenario mode (App. F).
  ``method="bayesian"`` and ``method="greedy"`` are the two baselines of Figure 5;
  :func:`oracle_forecast` reads a job's whole future and exists only for comparison.
* The estimators of App. G.2 are vectorised over jobs: :func:`contention_factor`
  (``N_avg``), :func:`ftf_estimate` (Eq. 9), :func:`makespan_lower_bound` (Eq. 10, with gang
  sizes) and :func:`makespan_normalizer` (``Z0`` of Eq. 11).

The exact rules, the extrapolation of epoch durations to unseen configurations and the
deviations from the upstream code are in ``formulations/regime_forecast.md`` and
``formulations/shockwave_estimators.md``. This module needs only numpy and scipy.special.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from ._validation import (
    as_array,
    as_bool,
    as_gang_sizes,
    as_option,
    as_positive_float,
    as_positive_int,
    fmt_index,
)
from .errors import InputError
from .results import readonly, require_pandas

__all__ = [
    "RegimeForecast",
    "RegimeModel",
    "bayesian_posterior",
    "contention_factor",
    "forecast_regimes",
    "ftf_estimate",
    "makespan_lower_bound",
    "makespan_normalizer",
    "oracle_forecast",
    "restatement_posterior",
]

METHODS = ("restatement", "bayesian", "greedy")
_FORECAST_METHODS = (*METHODS, "oracle")
# the most regimes a model may have, and the most sampled entries (num_samples * K) per call
_MAX_REGIMES = 100_000
_MAX_SAMPLE_ENTRIES = 100_000_000
_KINDS = ("static", "accordion", "gns", "custom")
# relative slack when comparing sums of observed epochs with the declared total
_SUM_RTOL = 1e-9


def _readonly(arr: np.ndarray) -> np.ndarray:
    arr.flags.writeable = False
    return arr


def _num_regimes(value: Any, name: str = "num_regimes") -> int:
    k = as_positive_int(value, name)
    if k > _MAX_REGIMES:
        raise InputError(f"{name} = {k} exceeds the largest supported model "
                         f"({_MAX_REGIMES} regimes)", argument=name)
    return k


def _finite_result(out: Any, name: str, what: str) -> Any:
    """``out`` as a read-only array (or float), or InputError if it overflowed a float."""
    arr = np.asarray(out)
    if not np.isfinite(arr).all():
        raise InputError(f"{what} overflows a float for these {name} (express them in other "
                         "units)", argument=name)
    return float(arr) if arr.ndim == 0 else readonly(arr)


def _rng(rng: np.random.Generator | int) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, bool) or not isinstance(rng, int | np.integer):
        raise InputError(
            f"rng must be a numpy Generator or an integer seed, got {rng!r}", argument="rng"
        )
    return np.random.default_rng(int(rng))


# --------------------------------------------------------------------------------------------
# Dirichlet posteriors (§5)
# --------------------------------------------------------------------------------------------
def _check_total(observed: np.ndarray, total: float, name: str) -> float:
    s = float(observed.sum())
    if s > total * (1.0 + _SUM_RTOL):
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
    ``k-1`` ends -- and compares it with :func:`restatement_posterior` in Figure 5.

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


# --------------------------------------------------------------------------------------------
# regime models (§5 "Leveraging domain knowledge")
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, init=False, eq=False)
class RegimeModel:
    """The order of configurations a job's regimes can take (Shockwave §5).

    Batch-size scaling rules have deterministic configuration transitions; only how long each
    regime lasts is random. A model lists the configurations (batch sizes) of regimes
    ``1..K`` in the only order the rule allows; an observed job may skip regimes (a GNS job
    that doubles twice at one epoch boundary, or stops early), never reorder them.

    Parameters
    ----------
    configurations : array_like, shape (K,)
        Positive configuration (global batch size) of each possible regime, in order;
        consecutive entries must differ (a regime ends when the configuration changes).
    kind : {"static", "accordion", "gns", "custom"}
        Label only; the constructors below set it.

    Examples
    --------
    >>> RegimeModel.accordion(32, 64, num_regimes=4).configurations
    array([32., 64., 32., 64.])
    >>> RegimeModel.gns(32, max_batch_size=256).configurations
    array([ 32.,  64., 128., 256.])
    >>> RegimeModel.static(128).num_regimes
    1
    """

    kind: str
    configurations: np.ndarray

    def __init__(self, configurations: Any, *, kind: str = "custom") -> None:
        kind = as_option(kind, "kind", _KINDS)
        cfg = as_array(configurations, "configurations", ndim=1, positive=True)
        if cfg.shape[0] > _MAX_REGIMES:
            raise InputError(f"configurations has {cfg.shape[0]} regimes, more than "
                             f"{_MAX_REGIMES}", argument="configurations")
        same = np.flatnonzero(cfg[1:] == cfg[:-1])
        if same.size:
            i = int(same[0]) + 1
            raise InputError(
                f"configurations{fmt_index([i])} = {cfg[i]:g} repeats the previous regime's "
                "configuration; consecutive regimes must differ",
                argument="configurations",
                index=(i,),
            )
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "configurations", cfg)

    @classmethod
    def static(cls, batch_size: float) -> RegimeModel:
        """A job that never changes configuration: one regime."""
        return cls([as_positive_float(batch_size, "batch_size")], kind="static")

    @classmethod
    def accordion(cls, small: float, large: float, *, num_regimes: int) -> RegimeModel:
        """Accordion: alternates ``small, large, small, ...`` for at most ``num_regimes``.

        Accordion starts in a critical regime with the small batch, scales up when gradients
        change slowly and back down when they change fast (§5 (a)). Pass ``small`` and
        ``large`` swapped for a job that starts with its large batch.
        """
        small = as_positive_float(small, "small")
        large = as_positive_float(large, "large")
        if small == large:
            raise InputError("accordion needs two different configurations; small == large",
                             argument="large")
        k = _num_regimes(num_regimes)
        return cls(np.where(np.arange(k) % 2 == 0, small, large), kind="accordion")

    @classmethod
    def gns(
        cls,
        initial: float,
        *,
        max_batch_size: float | None = None,
        num_regimes: int | None = None,
        factor: float = 2.0,
    ) -> RegimeModel:
        """GNS: the batch size only grows, multiplied by ``factor`` (doubling) each time.

        Give exactly one of ``max_batch_size`` (the pre-specified limit, §5 (b); regimes
        ``initial * factor**i <= max_batch_size``) and ``num_regimes``.
        """
        initial = as_positive_float(initial, "initial")
        factor = as_positive_float(factor, "factor")
        if factor <= 1.0:
            raise InputError(f"factor must exceed 1 (GNS only scales up), got {factor:g}",
                             argument="factor")
        if (max_batch_size is None) == (num_regimes is None):
            raise InputError("give exactly one of max_batch_size and num_regimes",
                             argument="max_batch_size")
        if max_batch_size is not None:
            cap = as_positive_float(max_batch_size, "max_batch_size")
            if cap < initial:
                raise InputError(
                    f"max_batch_size = {cap:g} is below the initial batch size {initial:g}",
                    argument="max_batch_size",
                )
            steps = float(np.floor(np.log(cap / initial) / np.log(factor) + 1e-9))
            if not steps < _MAX_REGIMES:
                raise InputError(f"max_batch_size = {cap:g} allows more than {_MAX_REGIMES} "
                                 f"doublings of {initial:g} by factor {factor:g}",
                                 argument="max_batch_size")
            k = int(steps) + 1
            arg = "max_batch_size"
        else:
            k = _num_regimes(num_regimes)
            arg = "num_regimes"
        with np.errstate(over="ignore"):
            cfg = initial * factor ** np.arange(k)
        if not np.isfinite(cfg).all():
            raise InputError(f"initial * factor ** (num_regimes - 1) overflows a float "
                             f"({initial:g} * {factor:g} ** {k - 1})", argument=arg)
        return cls(cfg, kind="gns")

    @property
    def num_regimes(self) -> int:
        """``K``, the most regimes a job following this model can have."""
        return int(self.configurations.shape[0])

    def __repr__(self) -> str:
        cfg = ", ".join(f"{c:g}" for c in self.configurations)
        return f"RegimeModel(kind={self.kind!r}, configurations=[{cfg}])"


# --------------------------------------------------------------------------------------------
# the forecast
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, repr=False, eq=False)
class RegimeForecast:
    """A job's predicted regime trajectory and run time (Shockwave §5, App. G).

    Arrays have one entry per regime ``1..K`` of the job's :class:`RegimeModel` (for
    :func:`oracle_forecast`: per regime of the true trajectory). Regimes before ``current``
    have finished; ``current`` is running (possibly with no epoch done yet); later ones are
    in the future. Build it with :func:`forecast_regimes` or :func:`oracle_forecast`.

    Attributes
    ----------
    method : str
        ``"restatement"``, ``"bayesian"``, ``"greedy"`` or ``"oracle"``.
    configurations : ndarray, shape (K,)
        Configuration (batch size) of each regime.
    epochs : ndarray, shape (K,)
        Predicted length of every regime in epochs (the whole trajectory; sums to
        ``total_epochs``). For the restatement rule, finished regimes have their observed
        length; the standard Bayesian baseline predicts them from its posterior like the rest.
    observed_epochs : ndarray, shape (K,)
        Epochs finished so far in each regime.
    remaining_epochs : ndarray, shape (K,)
        Epochs still to run in each regime (zero before ``current``; sums to
        ``total_epochs - done_epochs``).
    epoch_seconds : ndarray, shape (K,)
        Seconds per epoch forecast for each regime's remaining epochs: the mean measured
        duration of its configuration when that was observed, else a profiled value, else the
        extrapolation of ``formulations/regime_forecast.md``.
    current : int
        Index of the ongoing regime.
    total_epochs : float
        ``N``.
    attained_seconds : float
        Measured seconds of the finished epochs (run time so far).
    posterior : ndarray of shape (K,) or None
        Dirichlet parameters (``None`` for greedy and oracle forecasts).
    censor : bool
        Whether the ongoing regime's posterior was conditioned on the epochs it has already
        run (restatement only; see :func:`forecast_regimes`).

    Examples
    --------
    A GNS job of 12 epochs ran 2 epochs at batch 32 (60 s each) and has just doubled to 64,
    profiled at 30 s per epoch; batch 128 is extrapolated (``A + C/b`` through both points):

    >>> model = RegimeModel.gns(32, num_regimes=3)
    >>> fc = forecast_regimes(model, 12, [32, 32], [60.0, 60.0], current_batch_size=64,
    ...                       profiled={64: 30.0})
    >>> fc.posterior
    array([2., 5., 5.])
    >>> fc.regimes
    [(30.0, 5.0), (15.0, 5.0)]
    >>> fc.remaining_seconds, fc.total_seconds
    (225.0, 345.0)
    """

    method: str
    configurations: np.ndarray
    epochs: np.ndarray
    observed_epochs: np.ndarray
    remaining_epochs: np.ndarray
    epoch_seconds: np.ndarray
    current: int
    total_epochs: float
    attained_seconds: float
    posterior: np.ndarray | None = None
    censor: bool = True

    def __post_init__(self) -> None:
        # a forecast built by hand (or by replace()) is validated field by field; the
        # functions of this module build theirs through _build_forecast (already valid)
        method = as_option(self.method, "method", _FORECAST_METHODS)
        cfg = as_array(self.configurations, "configurations", ndim=1, positive=True)
        k = cfg.shape[0]
        if k > _MAX_REGIMES:
            raise InputError(f"configurations has {k} regimes, more than {_MAX_REGIMES}",
                             argument="configurations")
        fields: dict[str, Any] = {"method": method, "configurations": cfg}
        for name, positive in (("epochs", False), ("observed_epochs", False),
                               ("remaining_epochs", False), ("epoch_seconds", True)):
            fields[name] = as_array(getattr(self, name), name, ndim=1, shape=(k,),
                                    positive=positive)
        fields["posterior"] = None if self.posterior is None else as_array(
            self.posterior, "posterior", ndim=1, shape=(k,))
        current = as_positive_int(self.current, "current", allow_zero=True)
        if current >= k:
            raise InputError(f"current = {current} is not a regime index (K = {k})",
                             argument="current")
        fields["current"] = current
        total = as_positive_float(self.total_epochs, "total_epochs")
        fields["total_epochs"] = total
        fields["attained_seconds"] = as_positive_float(self.attained_seconds,
                                                       "attained_seconds", allow_zero=True)
        fields["censor"] = as_bool(self.censor, "censor")
        done = float(fields["observed_epochs"].sum())
        if not done <= total * (1.0 + _SUM_RTOL):
            raise InputError(f"observed_epochs sum to {done:g}, more than total_epochs = "
                             f"{total:g}", argument="observed_epochs")
        left = float(fields["remaining_epochs"].sum())
        with np.errstate(over="ignore", invalid="ignore"):
            span = float(fields["remaining_epochs"] @ fields["epoch_seconds"])
        if not (np.isfinite(left) and np.isfinite(span)):
            raise InputError("remaining_epochs * epoch_seconds overflows a float",
                             argument="epoch_seconds")
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    # ---- summaries ---------------------------------------------------------------------
    @property
    def num_regimes(self) -> int:
        """Number of regimes ``K`` the arrays describe."""
        return int(self.configurations.shape[0])

    @property
    def done_epochs(self) -> float:
        """Epochs finished so far (``F_j`` of App. G.1)."""
        return float(self.observed_epochs.sum())

    @property
    def regimes(self) -> list[tuple[float, float]]:
        """Remaining regimes in order as ``(epoch_seconds, epochs)`` pairs.

        Starts with what is left of the ongoing regime and skips regimes forecast to have no
        epochs: exactly the ``regimes=`` argument of :class:`fairalloc.PlanJob`.
        """
        keep = np.flatnonzero(self.remaining_epochs > 0)
        return [(float(self.epoch_seconds[i]), float(self.remaining_epochs[i])) for i in keep]

    @property
    def remaining_seconds(self) -> float:
        """Predicted remaining run time ``R_hat`` in isolation (seconds)."""
        return float(self.remaining_epochs @ self.epoch_seconds)

    @property
    def total_seconds(self) -> float:
        """Predicted total run time ``P_hat = attained + R_hat`` in isolation (seconds)."""
        return self.attained_seconds + self.remaining_seconds

    def epochs_advanced(self, seconds: Any) -> np.ndarray:
        """Epochs the job completes in ``seconds`` more of isolated run time.

        Progress runs through the remaining regimes in order, each at its own epoch rate, and
        stops at ``total_epochs`` (the UTIL semantics of App. G.1 / DESIGN.md). Vectorised:
        ``seconds`` may be any array of non-negative numbers.

        Examples
        --------
        >>> fc = oracle_forecast([32, 32, 64, 64], [60.0, 60.0, 30.0, 30.0], done_epochs=1)
        >>> fc.epochs_advanced([0, 30, 60, 90, 1000])
        array([0. , 0.5, 1. , 2. , 3. ])
        """
        s = as_array(seconds, "seconds", ndim=(0, 1, 2, 3), allow_empty=True)
        keep = np.flatnonzero(self.remaining_epochs > 0)
        ep = self.remaining_epochs[keep]
        xp = np.concatenate([[0.0], np.cumsum(ep * self.epoch_seconds[keep])])
        fp = np.concatenate([[0.0], np.cumsum(ep)])
        out = np.interp(s, xp, fp)
        return readonly(out) if isinstance(out, np.ndarray) else out

    # ---- sampling (App. F) -------------------------------------------------------------
    def sample_epochs(self, num_samples: int, rng: np.random.Generator | int = 0) -> np.ndarray:
        """Remaining epochs per regime for trajectories drawn from the posterior (App. F).

        Configurations and epoch durations are deterministic; only regime lengths are random.
        For the restatement rule, the finished regimes are known, and by the Dirichlet's
        neutrality the unfinished regimes share the ``N - sum m`` epochs left as
        ``Dir(S_k, ..., S_k)``; with ``censor=True`` the ongoing regime's share is drawn from
        its Beta marginal truncated to the epochs it has already run. The standard Bayesian
        baseline draws the full Dirichlet and applies its mean rule to each draw; greedy and
        oracle forecasts are deterministic (every row equals ``remaining_epochs``).

        Parameters
        ----------
        num_samples : int
            Number of trajectories ``S``.
        rng : numpy.random.Generator or int, default 0
            Generator (or seed) for reproducible draws.

        Returns
        -------
        ndarray, shape (S, K)
            Each row sums to ``total_epochs - done_epochs`` and is zero before ``current``.

        Examples
        --------
        >>> fc = forecast_regimes(RegimeModel.gns(32, num_regimes=3), 90, [], [],
        ...                       profiled={32: 10.0})
        >>> draws = fc.sample_epochs(4000, rng=1)
        >>> bool(np.allclose(draws.sum(axis=1), 90)), bool(np.allclose(draws.mean(0), 30, atol=1))
        (True, True)
        """
        num = as_positive_int(num_samples, "num_samples")
        gen = _rng(rng)
        k = self.num_regimes
        if num * k > _MAX_SAMPLE_ENTRIES:
            raise InputError(f"num_samples = {num} trajectories of {k} regimes exceed "
                             f"{_MAX_SAMPLE_ENTRIES} entries", argument="num_samples")
        c = self.current
        left = self.total_epochs - self.done_epochs
        try:
            out = np.zeros((num, k))
            if self.method == "restatement" and self.posterior is not None and left > 0:
                e = float(self.observed_epochs[c])
                rest = float(self.total_epochs - self.observed_epochs[:c].sum())
                share = _sample_ongoing_share(
                    gen, num, float(self.posterior[c]), k - c, e / rest, self.censor
                )
                out[:, c] = share * rest - e
                if k - c > 1:
                    future = gen.dirichlet(np.full(k - c - 1, float(self.posterior[c])), size=num)
                    out[:, c + 1:] = (1.0 - share)[:, None] * rest * future
                np.maximum(out, 0.0, out=out)
            elif self.method == "bayesian" and self.posterior is not None and left > 0:
                pred = self.total_epochs * gen.dirichlet(self.posterior, size=num)
                out = _bayesian_remaining(pred, self.observed_epochs, c, self.total_epochs)
            else:
                out[:] = self.remaining_epochs
        except (ValueError, ZeroDivisionError, FloatingPointError) as exc:
            raise InputError(f"this forecast's posterior cannot be sampled ({exc})",
                             argument="posterior") from exc
        if not np.isfinite(out).all():
            raise InputError("this forecast's posterior cannot be sampled (a Dirichlet "
                             "parameter of an unfinished regime is zero)", argument="posterior")
        return _readonly(out)

    def sample_regimes(
        self, num_samples: int, rng: np.random.Generator | int = 0
    ) -> list[list[tuple[float, float]]]:
        """:meth:`sample_epochs` in the ``(epoch_seconds, epochs)`` format of ``PlanJob``."""
        draws = self.sample_epochs(num_samples, rng)
        sec = self.epoch_seconds
        return [[(float(sec[i]), float(row[i])) for i in np.flatnonzero(row > 0)]
                for row in draws]

    # ---- presentation ------------------------------------------------------------------
    def to_frame(self) -> Any:
        """One row per regime: configuration, state, epochs, observed, remaining, seconds."""
        pd = require_pandas()
        idx = np.arange(self.num_regimes)
        state = np.where(idx < self.current, "finished",
                         np.where(idx == self.current, "current", "future"))
        data = {
            "configuration": self.configurations,
            "state": state,
            "epochs": self.epochs,
            "observed_epochs": self.observed_epochs,
            "remaining_epochs": self.remaining_epochs,
            "epoch_seconds": self.epoch_seconds,
        }
        if self.posterior is not None:
            data["posterior"] = self.posterior
        return pd.DataFrame(data, index=pd.Index(idx, name="regime"))

    def __repr__(self) -> str:
        def arr(a: np.ndarray) -> str:
            return "[" + ", ".join(f"{x:.4g}" for x in a) + "]"

        return (
            f"RegimeForecast(method={self.method!r}, current={self.current}, "
            f"configurations={arr(self.configurations)}, epochs={arr(self.epochs)}, "
            f"remaining_epochs={arr(self.remaining_epochs)}, "
            f"epoch_seconds={arr(self.epoch_seconds)}, "
            f"remaining_seconds={self.remaining_seconds:.6g}, "
            f"total_seconds={self.total_seconds:.6g})"
        )

    def replace(self, **changes: Any) -> RegimeForecast:
        """A copy with some fields changed (the forecast itself is immutable)."""
        return dataclasses.replace(self, **changes)


def _build_forecast(**fields: Any) -> RegimeForecast:
    """A :class:`RegimeForecast` from fields this module computed (valid by construction):
    the arrays are copied read-only, nothing is re-validated (hot path of the forecasts)."""
    out = object.__new__(RegimeForecast)
    for name, value in fields.items():
        if isinstance(value, np.ndarray):
            value = _readonly(np.array(value, dtype=np.float64, copy=True))
        object.__setattr__(out, name, value)
    return out


# ---- restatement mean and sampling helpers ---------------------------------------------------
def _censored_share_mean(a: float, b: float, tau: float) -> float:
    """``E[g | g >= tau]`` for ``g ~ Beta(a, b)`` (upper-truncated Beta mean)."""
    if tau <= 0.0:
        return a / (a + b)
    if tau >= 1.0:
        return 1.0
    with np.errstate(all="ignore"):
        tail = special.betaincc(a, b, tau)
        upper = special.betaincc(a + 1.0, b, tau)
        value = a / (a + b) * upper / tail
    if not np.isfinite(value) or tail <= 1e-300:
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
        tail = float(special.betaincc(a, b, min(tau, 1.0)))
        if tail <= 1e-300:
            return np.full(num, min(tau, 1.0))
        g = special.betainccinv(a, b, gen.uniform(0.0, 1.0, size=num) * tail)
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


# ---- epoch durations ------------------------------------------------------------------------
def _fit_epoch_seconds(known_cfg: np.ndarray, known_sec: np.ndarray, cfg: np.ndarray) -> np.ndarray:
    """Extrapolate seconds per epoch to configurations never measured.

    Iteration time ``alpha + beta*b`` (fixed overhead plus per-sample work) gives epoch time
    ``A + C/b`` with ``A, C >= 0``; fitted by non-negative least squares over the known
    (distinct) configurations. With one known configuration the per-sample time is held
    (``C = 0``): an epoch takes as long as in the configuration measured.
    """
    x = 1.0 / known_cfg
    y = known_sec
    if known_cfg.size < 2:
        return np.full(cfg.shape, float(y[0]))
    # unconstrained least squares on [1, x]
    xm, ym = x.mean(), y.mean()
    sxx = float(((x - xm) ** 2).sum())
    c = float(((x - xm) * (y - ym)).sum()) / sxx
    a = ym - c * xm
    if a < 0.0 or c < 0.0:
        # the optimum lies on a face of the non-negative quadrant: best of the two faces
        a1, c1 = float(ym), 0.0
        a2, c2 = 0.0, float((x * y).sum() / (x * x).sum())
        r1 = float(((a1 + c1 * x - y) ** 2).sum())
        r2 = float(((a2 + c2 * x - y) ** 2).sum())
        a, c = (a1, c1) if r1 <= r2 else (a2, c2)
    return a + c / cfg


def _regime_seconds(
    configs: np.ndarray,
    observed: np.ndarray,
    observed_seconds: np.ndarray,
    profiled: Mapping[float, float] | None,
) -> np.ndarray:
    """Seconds per epoch of every regime: measured mean, else profiled, else extrapolated.

    ``observed``/``observed_seconds``: epochs and their summed seconds in each regime; a
    configuration's measured duration pools every regime that used it.
    """
    if profiled is not None and not isinstance(profiled, Mapping):
        raise InputError(
            f"profiled must be a mapping of configuration to seconds per epoch, got "
            f"{type(profiled).__name__}",
            argument="profiled",
        )
    if profiled:
        pairs = as_array(list(profiled.items()), "profiled", ndim=2, shape=(None, 2),
                         positive=True)
        p_cfg, p_sec = pairs[:, 0], pairs[:, 1]
    else:
        p_cfg = p_sec = np.zeros(0)
    same = configs[:, None] == configs[None, :]
    count = same @ observed
    measured = count > 0
    mean = np.divide(same @ observed_seconds, count, out=np.zeros_like(count), where=measured)
    first = np.argmax(same, axis=1) == np.arange(configs.size)
    in_prof = configs[:, None] == p_cfg[None, :]
    has_prof = in_prof.any(axis=1)
    prof_val = in_prof @ p_sec  # profiled keys are unique (mapping)
    extra = ~(p_cfg[:, None] == configs[measured][None, :]).any(axis=1)
    known_cfg = np.concatenate([configs[measured & first], p_cfg[extra]])
    known_sec = np.concatenate([mean[measured & first], p_sec[extra]])
    if known_cfg.size == 0:
        raise InputError(
            "no epoch duration has been measured or profiled for this job: pass the measured "
            "epoch_seconds or profiled={configuration: seconds per epoch}",
            argument="epoch_seconds",
        )
    out = np.where(measured, mean, np.where(has_prof, prof_val, np.nan))
    missing = np.isnan(out)
    if missing.any():
        out[missing] = _fit_epoch_seconds(known_cfg, known_sec, configs[missing])
    return out


# ---- observation parsing --------------------------------------------------------------------
def _match_regimes(
    model: RegimeModel,
    batch_sizes: np.ndarray,
    epoch_seconds: np.ndarray,
    current_batch_size: float | None,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Observed epochs and seconds per regime, and the index of the ongoing regime."""
    cfg = model.configurations
    k = cfg.shape[0]
    f = batch_sizes.shape[0]
    if f:
        starts = np.concatenate([[0], np.flatnonzero(batch_sizes[1:] != batch_sizes[:-1]) + 1])
        run_sec = [float(v) for v in np.add.reduceat(epoch_seconds, starts)]
    else:
        starts = np.zeros(0, dtype=np.int64)
        run_sec = []
    run_cfg = [float(v) for v in batch_sizes[starts]]
    run_len = [float(v) for v in np.diff(np.concatenate([starts, [f]]))]
    run_where: list[tuple[str, int | None]] = [("batch_sizes", int(s)) for s in starts]
    if current_batch_size is not None:
        cur = as_positive_float(current_batch_size, "current_batch_size")
        if not run_cfg or cur != run_cfg[-1]:
            run_cfg.append(cur)
            run_len.append(0.0)
            run_sec.append(0.0)
            run_where.append(("current_batch_size", None))
    elif not run_cfg:
        run_cfg.append(float(cfg[0]))
        run_len.append(0.0)
        run_sec.append(0.0)
        run_where.append(("current_batch_size", None))
    observed = np.zeros(k)
    seconds = np.zeros(k)
    idx = -1
    # a short loop over this job's runs (at most K): greedy subsequence match
    for value, length, total, (arg, at) in zip(run_cfg, run_len, run_sec, run_where,
                                               strict=True):
        cand = np.flatnonzero(cfg[idx + 1:] == value)
        if cand.size == 0:
            where = "" if at is None else fmt_index([at])
            raise InputError(
                f"{arg}{where} = {value:g} does not follow the regime model {model!r}: "
                f"no later regime has that configuration",
                argument=arg,
                index=None if at is None else (at,),
            )
        idx = idx + 1 + int(cand[0])
        observed[idx] = length
        seconds[idx] = total
    return observed, seconds, idx


def forecast_regimes(
    model: RegimeModel,
    total_epochs: float,
    batch_sizes: Sequence[float] | np.ndarray = (),
    epoch_seconds: Sequence[float] | np.ndarray = (),
    *,
    current_batch_size: float | None = None,
    profiled: Mapping[float, float] | None = None,
    method: str = "restatement",
    censor: bool = True,
) -> RegimeForecast:
    """Forecast a job's remaining regimes from what has been observed (Shockwave §5).

    The inputs are only the job's past: the configuration and measured duration of each
    finished epoch (plus, optionally, the configuration it switched to after the last one
    and profiled durations). Runs of equal configuration are matched, in order, to the
    regimes of ``model``; a run that ended is a finished regime, the last run is ongoing.

    ``method="restatement"`` (Shockwave): the posterior mean of
    :func:`restatement_posterior` over the finished regimes. With ``censor=True`` (default)
    the ongoing regime's share of the unfinished epochs, ``Beta(S_k, (K-k-1) S_k)`` by the
    Dirichlet's neutrality, is conditioned on the ``e`` epochs it has already run, so its
    forecast is ``E[g | g >= e/(N - sum m)]`` and never shorter than what was observed; with
    ``e = 0`` this is exactly the rule's mean ``S_k``. ``censor=False`` keeps the rule's mean
    and only lifts the ongoing regime to ``e`` when ``S_k < e`` (future regimes split the
    rest evenly).

    ``method="bayesian"`` (Figure 5 baseline): mean of :func:`bayesian_posterior`, the
    ongoing regime keeping what exceeds its observed epochs, rescaled to the epochs left.
    ``method="greedy"`` (Figure 5 baseline, the reactive schedulers' view): the job keeps
    its latest measured epoch duration until it ends.

    Parameters
    ----------
    model : RegimeModel
        Configuration order of the job's scaling rule.
    total_epochs : float
        ``N`` (positive); known from the job's specification.
    batch_sizes : array_like, shape (F,)
        Configuration of each finished epoch, in order (``F <= N``).
    epoch_seconds : array_like, shape (F,)
        Measured seconds of each finished epoch (positive).
    current_batch_size : float, optional
        Configuration the job runs now, when it changed after its last finished epoch (a
        scaling event); by default the last epoch's (or, with no epoch, the first regime's).
    profiled : mapping of float to float, optional
        Seconds per epoch of configurations profiled beforehand (e.g. from a throughput
        table); measured durations take precedence.
    method : {"restatement", "bayesian", "greedy"}
    censor : bool
        Restatement only: condition the ongoing regime on its observed epochs (see above).

    Returns
    -------
    RegimeForecast

    Raises
    ------
    InputError
        On invalid arrays, ``F > N``, observations that do not follow ``model``, or no
        measured or profiled duration at all.

    Examples
    --------
    Accordion job, 100 epochs, at most 4 regimes; 20 epochs at batch 32, then 40 (so far) at
    64. The rule's mean gives the ongoing regime ``S_1 = 80/3`` epochs, fewer than it has
    already run; the censored posterior lifts it just above the 40 observed:

    >>> model = RegimeModel.accordion(32, 64, num_regimes=4)
    >>> bs, sec = [32] * 20 + [64] * 40, [50.0] * 20 + [30.0] * 40
    >>> fc = forecast_regimes(model, 100, bs, sec)
    >>> fc.posterior.round(2), fc.epochs.round(2)
    (array([20.  , 26.67, 26.67, 26.67]), array([20.  , 41.27, 19.36, 19.36]))
    >>> fc.remaining_epochs.round(2), round(fc.remaining_seconds)
    (array([ 0.  ,  1.27, 19.36, 19.36]), 1587)
    >>> forecast_regimes(model, 100, bs, sec, censor=False).epochs
    array([20., 40., 20., 20.])
    """
    if not isinstance(model, RegimeModel):
        raise InputError(f"model must be a fairalloc.RegimeModel, got {type(model).__name__}",
                         argument="model")
    method = as_option(method, "method", METHODS)
    censor = as_bool(censor, "censor")
    n_total = as_positive_float(total_epochs, "total_epochs")
    bs = as_array(batch_sizes, "batch_sizes", ndim=1, positive=True, allow_empty=True)
    sec = as_array(epoch_seconds, "epoch_seconds", ndim=1, positive=True, allow_empty=True)
    if sec.shape != bs.shape:
        raise InputError(
            f"epoch_seconds has {sec.shape[0]} entries for {bs.shape[0]} batch_sizes",
            argument="epoch_seconds",
        )
    f = bs.shape[0]
    if f > n_total * (1.0 + _SUM_RTOL):
        raise InputError(f"batch_sizes lists {f} finished epochs, more than total_epochs = "
                         f"{n_total:g}", argument="batch_sizes")
    observed, observed_seconds, c = _match_regimes(model, bs, sec, current_batch_size)
    k = model.num_regimes
    seconds = _regime_seconds(model.configurations, observed, observed_seconds, profiled)
    done = float(f)
    left = max(n_total - done, 0.0)
    e = float(observed[c])
    posterior: np.ndarray | None = None

    if method == "restatement":
        posterior = _restatement_alpha(n_total, k, observed[:c])
        rest = n_total - float(observed[:c].sum())
        epochs = np.array(posterior, copy=True)
        unfinished = k - c
        if unfinished > 1 and rest > 0:
            s = float(posterior[c])
            if censor:
                share = _censored_share_mean(s, (unfinished - 1) * s, e / rest)
                ongoing = share * rest
            else:
                ongoing = max(s, e)
            epochs[c] = ongoing
            epochs[c + 1:] = (rest - ongoing) / (unfinished - 1)
        epochs[c] = max(epochs[c], e)
        remaining = np.zeros(k)
        remaining[c:] = epochs[c:]
        remaining[c] -= e
        np.maximum(remaining, 0.0, out=remaining)
        # exact bookkeeping: the remaining epochs are N - F
        tot = remaining.sum()
        if tot > 0:
            remaining *= left / tot
    elif method == "bayesian":
        posterior = np.full(k, n_total / k) + observed
        epochs = n_total * posterior / posterior.sum()
        remaining = _bayesian_remaining(epochs, observed, c, n_total)[0]
    else:  # greedy
        remaining = np.zeros(k)
        remaining[c] = left
        epochs = observed + remaining
        if f:
            seconds = np.array(seconds, copy=True)
            seconds[c] = sec[-1]

    return _build_forecast(
        method=method,
        configurations=model.configurations,
        epochs=epochs,
        observed_epochs=observed,
        remaining_epochs=remaining,
        epoch_seconds=seconds,
        current=c,
        total_epochs=n_total,
        attained_seconds=float(sec.sum()),
        posterior=posterior,
        censor=censor,
    )


def oracle_forecast(
    batch_sizes: Sequence[float] | np.ndarray,
    epoch_seconds: Sequence[float] | np.ndarray,
    done_epochs: int,
) -> RegimeForecast:
    """The exact trajectory, read from the job's whole future (comparison only).

    This is what the upstream Shockwave predictor effectively uses (ANCHORS.md): every future
    batch size and epoch duration. A scheduler cannot know them; use it to measure how far
    a real forecast is from the truth (``benchmarks/forecast.py``) or to reproduce upstream.

    Parameters
    ----------
    batch_sizes : array_like, shape (N,)
        Configuration of every epoch of the job, past and future.
    epoch_seconds : array_like, shape (N,)
        Duration of every epoch.
    done_epochs : int
        ``F``, epochs finished so far (``0 <= F <= N``).

    Returns
    -------
    RegimeForecast
        With one regime per run of equal configuration; ``epoch_seconds`` of the ongoing
        regime is the mean over its *remaining* epochs, so ``remaining_seconds`` is exact.

    Examples
    --------
    >>> fc = oracle_forecast([32, 32, 64, 64, 64], [60, 60, 30, 30, 30], done_epochs=1)
    >>> fc.regimes, fc.remaining_seconds
    ([(60.0, 1.0), (30.0, 3.0)], 150.0)
    """
    bs = as_array(batch_sizes, "batch_sizes", ndim=1, positive=True)
    sec = as_array(epoch_seconds, "epoch_seconds", ndim=1, positive=True, shape=bs.shape)
    n = bs.shape[0]
    done = as_positive_int(done_epochs, "done_epochs", allow_zero=True)
    if done > n:
        raise InputError(f"done_epochs = {done} exceeds the {n} epochs given",
                         argument="done_epochs")
    starts = np.concatenate([[0], np.flatnonzero(bs[1:] != bs[:-1]) + 1])
    ends = np.concatenate([starts[1:], [n]])
    lengths = (ends - starts).astype(float)
    csum = np.concatenate([[0.0], np.cumsum(sec)])
    observed = np.clip(done - starts, 0, lengths)
    remaining = lengths - observed
    c = int(np.searchsorted(starts, done, side="right") - 1) if done < n else starts.size - 1
    mean_all = (csum[ends] - csum[starts]) / lengths
    rem_mean = np.where(remaining > 0,
                        (csum[ends] - csum[np.minimum(starts + observed.astype(int), n)])
                        / np.maximum(remaining, 1.0),
                        mean_all)
    return _build_forecast(
        method="oracle",
        configurations=bs[starts],
        epochs=lengths,
        observed_epochs=observed,
        remaining_epochs=remaining,
        epoch_seconds=rem_mean,
        current=c,
        total_epochs=float(n),
        attained_seconds=float(csum[done]),
        posterior=None,
        censor=False,
    )


# --------------------------------------------------------------------------------------------
# estimators (§6.2, App. G.2)
# --------------------------------------------------------------------------------------------
def contention_factor(
    arrival: Any,
    now: float,
    num_gpus: float,
    *,
    times: Any = None,
    demand: Any = None,
    demand_seconds: Any = None,
    floor: float = 1.0,
) -> np.ndarray:
    """Each job's contention factor ``N_avg(j)`` over the time it was queued or running.

    Shockwave App. G.2: the contention factor is the number of jobs requesting GPUs divided
    by the number of GPUs ``M``, and job ``j``'s ``N_avg(j)`` averages it over
    ``[arrival_j, now]``:

        N_avg(j) = max(floor, (1/(now - a_j)) * integral_{a_j}^{now} demand(t) dt / M).

    Give the demand either as an **event history** (``times`` and ``demand``: a step function
    equal to ``demand[e]`` on ``[times[e], times[e+1])`` and to ``demand[-1]`` until ``now``)
    or as **running sums** (``demand_seconds[j]`` = the integral since job ``j`` arrived,
    accumulated by the scheduler, with ``demand`` the current scalar demand). A job that
    arrives at ``now`` gets the current demand. ``demand`` counts jobs requesting GPUs (the
    paper); pass GPUs requested to weigh gangs instead. ``floor=1`` (default) keeps a job's
    predicted shared run time from undercutting its isolated one when the cluster is not
    contended (as the upstream evaluation's ``max(1, N/M)``); ``floor=0`` is the literal ratio.

    Parameters
    ----------
    arrival : array_like, shape (n,)
        Arrival time of each job (``<= now``).
    now : float
        Current time.
    num_gpus : float
        ``M`` (positive).
    times, demand : array_like, shape (E,), optional
        Event history: non-decreasing segment start times (``times[0] <= min(arrival)``,
        ``times[-1] <= now``) and the demand on each segment (non-negative).
    demand_seconds : array_like, shape (n,), optional
        Running sums of demand x seconds since each job's arrival (then ``demand`` is a
        non-negative scalar, the current demand).
    floor : float, default 1.0
        Lower bound applied to the average (non-negative).

    Returns
    -------
    ndarray, shape (n,)

    Examples
    --------
    Four GPUs; 2 jobs requesting GPUs during [0, 10), then 8 until now = 20:

    >>> contention_factor([0.0, 10.0, 20.0], 20.0, 4, times=[0, 10], demand=[2, 8], floor=0)
    array([1.25, 2.  , 2.  ])
    >>> contention_factor([0.0, 10.0], 20.0, 4, demand_seconds=[100.0, 80.0], demand=8)
    array([1.25, 2.  ])
    """
    a = as_array(arrival, "arrival", ndim=1, nonneg=False)
    t_now = float(as_array(now, "now", ndim=0, nonneg=False))
    m = as_positive_float(num_gpus, "num_gpus")
    lo = as_positive_float(floor, "floor", allow_zero=True)
    late = np.flatnonzero(a > t_now)
    if late.size:
        i = int(late[0])
        raise InputError(f"arrival[{i}] = {a[i]:g} is after now = {t_now:g}",
                         argument="arrival", index=(i,))
    elapsed = t_now - a
    if (times is None) == (demand_seconds is None):
        raise InputError("give either an event history (times, demand) or running sums "
                         "(demand_seconds, demand)", argument="times")
    if times is not None:
        t = as_array(times, "times", ndim=1, nonneg=False)
        d = as_array(demand, "demand", ndim=1, shape=t.shape)
        back = np.flatnonzero(np.diff(t) < 0)
        if back.size:
            i = int(back[0]) + 1
            raise InputError(f"times[{i}] = {t[i]:g} is before times[{i - 1}]; times must be "
                             "non-decreasing", argument="times", index=(i,))
        if t[-1] > t_now:
            raise InputError(f"times[{t.size - 1}] = {t[-1]:g} is after now = {t_now:g}",
                             argument="times", index=(t.size - 1,))
        early = np.flatnonzero(a < t[0])
        if early.size:
            i = int(early[0])
            raise InputError(f"arrival[{i}] = {a[i]:g} is before the history starts "
                             f"(times[0] = {t[0]:g})", argument="arrival", index=(i,))
        xp = np.concatenate([t, [t_now]])
        with np.errstate(over="ignore", invalid="ignore"):  # overflow: InputError below
            cp = np.concatenate([[0.0], np.cumsum(d * np.diff(xp))])  # integral up to xp[e]
            seg = np.searchsorted(t, a, side="right") - 1  # the segment of each arrival
            # whole segments after the arrival, plus the part of its own (no cancellation
            # for jobs that arrived in the last segment)
            integral = (cp[-1] - cp[seg + 1]) + d[seg] * (xp[seg + 1] - a)
        current = float(d[np.searchsorted(t, t_now, side="right") - 1])
    else:
        integral = as_array(demand_seconds, "demand_seconds", ndim=1, shape=a.shape)
        if demand is None:
            if (elapsed <= 0).any():
                raise InputError("a job arrived at now: pass the current demand (scalar) "
                                 "to use for it", argument="demand")
            current = 0.0
        else:
            current = float(as_array(demand, "demand", ndim=0))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        avg = np.where(elapsed > 0, integral / np.where(elapsed > 0, elapsed, 1.0), current)
        out = np.maximum(avg / m, lo)
    return _finite_result(out, "demand", "the average demand")


def ftf_estimate(attained: Any, waiting: Any, remaining: Any, contention: Any) -> np.ndarray:
    """Finish-time-fairness estimate ``rho_hat`` of each job (Shockwave Eq. 9, App. G.2).

        rho_hat_j = (L_j + W_j + R_hat_j * N_avg(j)) / (P_hat_j * N_avg(j)),
        P_hat_j = L_j + R_hat_j

    The numerator predicts the job completion time under contention: attained service time
    ``L_j``, waiting time ``W_j``, and the predicted remaining isolated run time ``R_hat_j``
    (:attr:`RegimeForecast.remaining_seconds`) stretched by the contention factor. The
    denominator is the predicted total isolated run time ``P_hat_j`` (``R_hat = P_hat - L``)
    stretched the same way: the job's run time in its ``1/N_avg`` share. ``rho_hat > 1``
    predicts a violation of finish-time fairness.

    Parameters
    ----------
    attained : array_like, shape (n,)
        ``L_j``: seconds the job has run (non-negative).
    waiting : array_like, shape (n,)
        ``W_j``: seconds it has waited in the queue since arrival (non-negative).
    remaining : array_like, shape (n,)
        ``R_hat_j``: predicted remaining isolated run time (non-negative).
    contention : float or array_like, shape (n,)
        ``N_avg(j)`` (positive), e.g. from :func:`contention_factor`.

    Returns
    -------
    ndarray, shape (n,)

    Examples
    --------
    >>> ftf_estimate([100.0, 0.0], [300.0, 50.0], [100.0, 200.0], [2.0, 1.0])
    array([1.5 , 1.25])
    """
    L = as_array(attained, "attained", ndim=1)
    n = L.shape[0]
    W = as_array(waiting, "waiting", ndim=1, shape=(n,))
    R = as_array(remaining, "remaining", ndim=1, shape=(n,))
    N = as_array(contention, "contention", ndim=(0, 1), positive=True)
    if N.ndim == 1 and N.shape[0] != n:
        raise InputError(f"contention has {N.shape[0]} entries for {n} jobs",
                         argument="contention")
    P = L + R
    bad = np.flatnonzero(P <= 0)
    if bad.size:
        i = int(bad[0])
        raise InputError(f"remaining[{i}] = 0 and attained[{i}] = 0: job {i} has no predicted "
                         "run time", argument="remaining", index=(i,))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        out = (L + W + R * N) / (P * N)
    return _finite_result(out, "contention", "the FTF estimate")


def makespan_lower_bound(remaining: Any, num_gpus: float, workers: Any = None) -> Any:
    """Makespan lower bound ``H`` (Shockwave Eq. 10, App. G.2, with gang sizes).

        H = max( sum_j w_j R_j / M , max_j R_j )

    ``R_j`` is job ``j``'s remaining run time (in isolation, on its gang of ``w_j`` GPUs):
    no schedule finishes before the longest job, nor before the cluster's ``M`` GPUs have
    delivered the ``sum_j w_j R_j`` GPU-seconds still owed (the paper writes
    ``sum_j R_j / M`` for single-GPU jobs). Vectorised over leading axes: pass
    ``remaining`` of shape ``(..., n)`` (e.g. one row per scenario or per candidate
    schedule) to get ``H`` of shape ``(...)``.

    Parameters
    ----------
    remaining : array_like, shape (..., n)
        Remaining run times (non-negative seconds).
    num_gpus : float
        ``M`` (positive).
    workers : array_like of int, shape (n,), optional
        Gang sizes ``w_j`` (default 1); each must fit in ``M``.

    Returns
    -------
    float or ndarray

    Examples
    --------
    >>> makespan_lower_bound([100.0, 50.0, 50.0], 2, workers=[1, 2, 2])
    150.0
    >>> makespan_lower_bound([[100.0, 50.0], [10.0, 10.0]], 4)
    array([100.,  10.])
    """
    R = as_array(remaining, "remaining", ndim=(1, 2, 3))
    n = R.shape[-1]
    m = as_positive_float(num_gpus, "num_gpus")
    w = as_gang_sizes(workers, n, m)
    with np.errstate(over="ignore", invalid="ignore"):
        h = np.maximum(R @ w / m, R.max(axis=-1))
    return _finite_result(h, "remaining", "the makespan bound")


def makespan_normalizer(remaining: Any) -> Any:
    """``Z0`` of Shockwave Eq. 11: the sum of the jobs' remaining run times before the window.

    It makes the regulariser ``(lambda/Z0) * H`` insensitive to the scale of ``H``
    (``remaining`` as in :func:`makespan_lower_bound`, predicted before planning). Vectorised
    over leading axes like :func:`makespan_lower_bound`.

    Raises
    ------
    InputError
        If every remaining time is zero (``Z0 = 0`` leaves the regulariser undefined).

    Examples
    --------
    >>> makespan_normalizer([100.0, 50.0, 50.0])
    200.0
    """
    R = as_array(remaining, "remaining", ndim=(1, 2, 3))
    with np.errstate(over="ignore", invalid="ignore"):
        z = R.sum(axis=-1)
    z = _finite_result(z, "remaining", "Z0")
    zero = np.argwhere(np.atleast_1d(z) <= 0)
    if zero.size:
        raise InputError("remaining sums to 0: Z0 must be positive (no job has run time left)",
                         argument="remaining", index=tuple(int(i) for i in zero[0]))
    return z
