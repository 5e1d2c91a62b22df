"""Regime forecasts (Shockwave §5, App. F): `RegimeForecast`,
`fairalloc.forecast_regimes` and `fairalloc.oracle_forecast`.

* A **regime** is a tuple (configuration, fraction of epochs) (§5). Batch-size scaling rules
  fix the *order* of configurations -- Accordion alternates two batch sizes, GNS only doubles --
  so the only random quantities are the regimes' lengths
  (`fairalloc.RegimeModel` holds that order).
* The lengths get the Dirichlet prior ``Dir(N/K, ..., N/K)`` and the **restatement** posterior
  (`fairalloc.restatement_posterior`): after regimes ``1..k`` finish
  with ``m_1..m_k`` epochs the posterior is ``Dir(m_1, ..., m_k, S_k, ..., S_k)``,
  ``S_k = (N - sum m)/(K - k)``.
* `fairalloc.forecast_regimes` turns what has been observed of one job -- the
  configuration and the measured seconds of every finished epoch, nothing else -- into a
  `RegimeForecast`: the posterior-mean trajectory of the remaining regimes as ``(epoch_seconds,
  epochs)`` pairs (the format `fairalloc.PlanJob` takes), the predicted total
  and remaining run time, and trajectories sampled from the posterior for the planner's scenario
  mode (App. F). ``method="bayesian"`` and ``method="greedy"`` are the two baselines of Figure 5;
  ``method="empirical"`` takes regime lengths other jobs were observed to take (``RegimePool``);
  `fairalloc.oracle_forecast` reads a job's future (comparison only).

The exact rules, the extrapolation of epoch durations to unseen configurations and the
deviations from the upstream code are in ``formulations/regime_forecast.md``. The forecasts
need only numpy and scipy.special.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import (
    as_array,
    as_bool,
    as_option,
    as_positive_float,
    as_positive_int,
    fmt_index,
)
from ..errors import InputError
from ..results import readonly, require_pandas
from .posteriors import (
    MAX_REGIMES,
    SUM_RTOL,
    _bayesian_remaining,
    _censored_share_mean,
    _empirical_lengths,
    _readonly,
    _restatement_alpha,
    _sample_ongoing_share,
)
from .regime_model import RegimeModel

__all__ = ["FORECAST_METHODS", "RegimeForecast", "forecast_regimes", "oracle_forecast"]

FORECAST_METHODS = ("restatement", "bayesian", "greedy", "empirical")
ALL_FORECAST_METHODS = (*FORECAST_METHODS, "oracle")
# PERFORMANCE (input limit): the most sampled entries (num_samples * K) per call
MAX_SAMPLE_ENTRIES = 100_000_000
# marks a field RegimeForecast.replace leaves as it is (None is a valid posterior)
_UNCHANGED: Any = object()


def _rng(rng: np.random.Generator | int) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, bool) or not isinstance(rng, int | np.integer):
        raise InputError(
            f"rng must be a numpy Generator or an integer seed, got {rng!r}", argument="rng"
        )
    return np.random.default_rng(int(rng))


@dataclass(frozen=True, repr=False, eq=False)
class RegimeForecast:
    """A job's predicted regime trajectory and run time (Shockwave §5, App. G).

    Arrays have one entry per regime ``1..K`` of the job's `fairalloc.RegimeModel`
    (for `fairalloc.oracle_forecast`: per regime of the true trajectory). Regimes
    before ``current`` have finished; ``current`` is running (possibly with no epoch done yet);
    later ones are in the future. Build it with `fairalloc.forecast_regimes` or
    `fairalloc.oracle_forecast`.

    Parameters
    ----------
    method : str
        ``"restatement"``, ``"bayesian"``, ``"greedy"``, ``"empirical"`` or ``"oracle"``.
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
        Dirichlet parameters (``None`` for greedy, empirical and oracle forecasts).
    censor : bool
        Whether the ongoing regime's posterior was conditioned on the epochs it has already
        run (restatement only; see `fairalloc.forecast_regimes`).

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
        method = as_option(self.method, "method", ALL_FORECAST_METHODS)
        cfg = as_array(self.configurations, "configurations", ndim=1, positive=True)
        k = cfg.shape[0]
        if k > MAX_REGIMES:
            raise InputError(f"configurations has {k} regimes, more than {MAX_REGIMES}",
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
        if not done <= total * (1.0 + SUM_RTOL):
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
        epochs: exactly the ``regimes=`` argument of `fairalloc.PlanJob`.
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
        stops at ``total_epochs`` (the UTIL semantics of Shockwave App. G.1). Vectorised:
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
        baseline draws the full Dirichlet and applies its mean rule to each draw; greedy,
        empirical and oracle forecasts are deterministic (every row equals
        ``remaining_epochs``).

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
        if num * k > MAX_SAMPLE_ENTRIES:
            raise InputError(f"num_samples = {num} trajectories of {k} regimes exceed "
                             f"{MAX_SAMPLE_ENTRIES} entries", argument="num_samples")
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
        """`sample_epochs` in the ``(epoch_seconds, epochs)`` format of ``PlanJob``."""
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

    def replace(
        self,
        *,
        method: Any = _UNCHANGED,
        configurations: Any = _UNCHANGED,
        epochs: Any = _UNCHANGED,
        observed_epochs: Any = _UNCHANGED,
        remaining_epochs: Any = _UNCHANGED,
        epoch_seconds: Any = _UNCHANGED,
        current: Any = _UNCHANGED,
        total_epochs: Any = _UNCHANGED,
        attained_seconds: Any = _UNCHANGED,
        posterior: Any = _UNCHANGED,
        censor: Any = _UNCHANGED,
    ) -> RegimeForecast:
        """A copy with the given fields changed, validated like the constructor (the forecast
        itself is immutable); a field not given keeps its value."""
        given = {"method": method, "configurations": configurations, "epochs": epochs,
                 "observed_epochs": observed_epochs, "remaining_epochs": remaining_epochs,
                 "epoch_seconds": epoch_seconds, "current": current,
                 "total_epochs": total_epochs, "attained_seconds": attained_seconds,
                 "posterior": posterior, "censor": censor}
        return dataclasses.replace(self, **{k: v for k, v in given.items()
                                            if v is not _UNCHANGED})


def _build_forecast(**fields: Any) -> RegimeForecast:
    """A `RegimeForecast` from fields this module computed (valid by construction):
    the arrays are copied read-only, nothing is re-validated (hot path of the forecasts)."""
    out = object.__new__(RegimeForecast)
    for name, value in fields.items():
        if isinstance(value, np.ndarray):
            value = _readonly(np.array(value, dtype=np.float64, copy=True))
        object.__setattr__(out, name, value)
    return out


# ---- epoch durations ------------------------------------------------------------------------
def _fit_epoch_seconds(known_cfg: np.ndarray, known_sec: np.ndarray, cfg: np.ndarray
                       ) -> np.ndarray:
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
    calibrate: bool = False,
) -> np.ndarray:
    """Seconds per epoch of every regime: measured mean, else profiled, else extrapolated.

    ``observed``/``observed_seconds``: epochs and their summed seconds in each regime; a
    configuration's measured duration pools every regime that used it. ``calibrate``: profiled
    values times the median measured/profiled ratio of configurations that are both.
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
    both = measured & first & has_prof
    if calibrate and both.any():
        ratio = float(np.median(mean[both] / prof_val[both]))
        p_sec, prof_val = p_sec * ratio, prof_val * ratio
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
    prior_epochs: Sequence[float] | np.ndarray | None = None,
    calibrate: bool = False,
    partial_epoch: float = 0.0,
) -> RegimeForecast:
    """Forecast a job's remaining regimes from what has been observed (Shockwave §5).

    The inputs are only the job's past: the configuration and measured duration of each
    finished epoch (plus, optionally, the configuration it switched to after the last one
    and profiled durations). Runs of equal configuration are matched, in order, to the
    regimes of ``model``; a run that ended is a finished regime, the last run is ongoing.

    ``method="restatement"`` (Shockwave): the posterior mean of
    `fairalloc.restatement_posterior` over the finished regimes. With
    ``censor=True`` (default) the ongoing regime's share of the unfinished epochs, ``Beta(S_k,
    (K-k-1) S_k)`` by the Dirichlet's neutrality, is conditioned on the ``e`` epochs it has already
    run, so its forecast is ``E[g | g >= e/(N - sum m)]`` and never shorter than what was observed;
    with ``e = 0`` this is exactly the rule's mean ``S_k``. ``censor=False`` keeps the rule's mean
    and only lifts the ongoing regime to ``e`` when ``S_k < e`` (future regimes split the
    rest evenly).

    ``method="bayesian"`` (Figure 5 baseline): mean of `bayesian_posterior`, the
    ongoing regime keeping what exceeds its observed epochs, rescaled to the epochs left.
    ``method="greedy"`` (Figure 5 baseline, the reactive schedulers' view): the job keeps
    its latest measured epoch duration until it ends.

    ``method="empirical"``: finished regimes as observed; every unfinished regime with a
    finite ``prior_epochs`` entry (the length other jobs of the family took, e.g. from
    `fairalloc.schedule.posteriors.regime_length_prior`) is forecast at that length -- the
    ongoing one only when its entry exceeds the epochs it has already run, else it keeps the
    censored restatement value above --, the other unfinished regimes split evenly what is
    left, and the trajectory is cut at ``N`` in regime order (the last regime takes any
    shortfall). Without ``prior_epochs`` it equals the restatement forecast. A point
    forecast: `RegimeForecast.sample_epochs` returns its mean.

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
    method : {"restatement", "bayesian", "greedy", "empirical"}
    censor : bool
        Restatement and empirical: condition the ongoing regime on its observed epochs.
    prior_epochs : array_like, shape (K,) or (2, K), optional
        Empirical only: expected epochs of each regime (``nan``: unknown) and, in a second
        row, lower bounds on them (an unknown regime's share, or the ongoing regime's
        restatement value, is raised to its bound).
    calibrate : bool, default False
        Multiply the ``profiled`` durations by the median measured/profiled ratio of the
        configurations both measured and profiled (a profiling table whose speeds are off by
        a constant factor for this job); unmeasured configurations then use the scaled values.
    partial_epoch : float, default 0
        Part of an epoch run since the last finished one (``0 <= p < 1``): counted as observed
        in the ongoing regime (its seconds at that regime's duration) and taken off the
        remaining epochs from the front.

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

    Other Accordion jobs of the family kept their large batch for 50 epochs: the ongoing
    regime is forecast to 50, the third regime (no prior) takes what the fourth (prior 5)
    leaves:

    >>> fc = forecast_regimes(model, 100, bs, sec, method="empirical",
    ...                       prior_epochs=[25, 50, np.nan, 5])
    >>> fc.epochs, fc.remaining_epochs
    (array([20., 50., 25.,  5.]), array([ 0., 10., 25.,  5.]))

    A table profiles batch 32 at 40 s, 64 at 20 s, 128 at 12 s; this job measured 60 s at 32,
    so ``calibrate=True`` scales the table by 1.5:

    >>> fc = forecast_regimes(RegimeModel.gns(32, num_regimes=3), 12, [32, 32], [60.0, 60.0],
    ...                       profiled={32: 40.0, 64: 20.0, 128: 12.0}, calibrate=True)
    >>> fc.epoch_seconds
    array([60., 30., 18.])
    """
    if not isinstance(model, RegimeModel):
        raise InputError(f"model must be a fairalloc.RegimeModel, got {type(model).__name__}",
                         argument="model")
    method = as_option(method, "method", FORECAST_METHODS)
    censor = as_bool(censor, "censor")
    calibrate = as_bool(calibrate, "calibrate")
    part = as_positive_float(partial_epoch, "partial_epoch", allow_zero=True)
    if part >= 1.0:
        raise InputError(f"partial_epoch = {part:g} is not below one epoch",
                         argument="partial_epoch")
    n_total = as_positive_float(total_epochs, "total_epochs")
    bs = as_array(batch_sizes, "batch_sizes", ndim=1, positive=True, allow_empty=True)
    sec = as_array(epoch_seconds, "epoch_seconds", ndim=1, positive=True, allow_empty=True)
    if sec.shape != bs.shape:
        raise InputError(
            f"epoch_seconds has {sec.shape[0]} entries for {bs.shape[0]} batch_sizes",
            argument="epoch_seconds",
        )
    f = bs.shape[0]
    if f > n_total * (1.0 + SUM_RTOL):
        raise InputError(f"batch_sizes lists {f} finished epochs, more than total_epochs = "
                         f"{n_total:g}", argument="batch_sizes")
    observed, observed_seconds, c = _match_regimes(model, bs, sec, current_batch_size)
    k = model.num_regimes
    seconds = _regime_seconds(model.configurations, observed, observed_seconds, profiled,
                              calibrate)
    prior = None
    if prior_epochs is not None:
        prior = as_array(prior_epochs, "prior_epochs", ndim=(1, 2), allow_nan=True)
        if prior.shape not in ((k,), (1, k), (2, k)):
            raise InputError(f"prior_epochs has shape {prior.shape}, not ({k},) or (2, {k})",
                             argument="prior_epochs")
        prior = np.vstack([prior.reshape(-1, k), np.zeros((1, k))])[:2]
        prior[1] = np.nan_to_num(prior[1])
    done = float(f)
    left = max(n_total - done, 0.0)
    e = float(observed[c])
    posterior: np.ndarray | None = None

    if method in ("restatement", "empirical"):
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
        if method == "empirical":
            posterior = None
            if prior is not None:
                epochs[c:] = _empirical_lengths(epochs[c:], prior[0, c:], prior[1, c:], e,
                                                rest)
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
    part = min(part, left)
    if part > 0:  # the epoch in progress: observed in the ongoing regime, off the front
        remaining = np.diff(np.maximum(np.concatenate([[0.0], np.cumsum(remaining)]) - part, 0))
        observed = np.array(observed, copy=True)
        observed[c] += part

    return _build_forecast(
        method=method,
        configurations=model.configurations,
        epochs=epochs,
        observed_epochs=observed,
        remaining_epochs=remaining,
        epoch_seconds=seconds,
        current=c,
        total_epochs=n_total,
        attained_seconds=float(sec.sum()) + part * float(seconds[c]),
        posterior=posterior,
        censor=censor,
    )


def oracle_forecast(
    batch_sizes: Sequence[float] | np.ndarray,
    epoch_seconds: Sequence[float] | np.ndarray,
    done_epochs: int,
) -> RegimeForecast:
    """The exact trajectory, read from the job's whole future (comparison only).

    This is what the upstream Shockwave predictor effectively uses: every future
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
