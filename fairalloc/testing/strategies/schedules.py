"""Shockwave (§5-6, App. G): regime models, job histories, forecasts, plans."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ..._validation import as_option
from ...errors import InputError
from ._common import (
    Range,
    Size,
    as_count,
    reals,
    size_bounds,
    value_range,
)


# ============================================================================================
# Shockwave: regime models, job histories, forecasts, plans (Shockwave §5-6, App. G)
# ============================================================================================
def regime_models(*, max_regimes: int = 4, batch_sizes: Sequence[float] = (16, 32, 64, 128,
                                                                              256)
                  ) -> st.SearchStrategy[Any]:
    """`fairalloc.RegimeModel`: static, accordion, GNS or custom
    configuration orders.

    Custom orders draw configurations from ``batch_sizes`` with consecutive ones different.
    """
    from ...schedule import RegimeModel

    kmax = as_count(max_regimes, "max_regimes")
    pool = sorted({float(b) for b in batch_sizes})
    if len(pool) < 2 or pool[0] <= 0:
        raise InputError("batch_sizes needs two different positive sizes",
                         argument="batch_sizes")
    sizes = st.sampled_from(pool)

    @st.composite
    def draw_model(draw: st.DrawFn) -> RegimeModel:
        kind = draw(st.sampled_from(("static", "accordion", "gns", "custom")))
        if kind == "static":
            return RegimeModel.static(draw(sizes))
        k = draw(st.integers(1, kmax))
        if kind == "accordion":
            small, large = draw(st.lists(sizes, min_size=2, max_size=2, unique=True))
            return RegimeModel.accordion(small, large, num_regimes=k)
        if kind == "gns":
            return RegimeModel.gns(draw(sizes), num_regimes=k)
        # custom: each step moves to a different size (offset 1..len-1 around the pool)
        first = draw(st.integers(0, len(pool) - 1))
        steps = draw(arrays(np.int64, k - 1, elements=st.integers(1, len(pool) - 1)))
        idx = (first + np.concatenate([[0], np.cumsum(steps)])) % len(pool)
        return RegimeModel(np.asarray(pool)[idx])

    return draw_model()


@dataclass(frozen=True, eq=False)
class JobHistory:
    """What a scheduler observed of one job: the arguments of
    `fairalloc.forecast_regimes` (``model, total_epochs, batch_sizes,
    epoch_seconds, profiled=...``)."""

    model: Any
    total_epochs: float
    batch_sizes: np.ndarray
    epoch_seconds: np.ndarray
    profiled: dict[float, float]

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``forecast_regimes``."""
        return {"model": self.model, "total_epochs": self.total_epochs,
                "batch_sizes": self.batch_sizes, "epoch_seconds": self.epoch_seconds,
                "profiled": self.profiled}


def job_histories(*, max_regimes: int = 4, max_epochs_per_regime: int = 10,
                  extra_epochs: Size = (1, 40), seconds: Range = (1.0, 120.0)
                  ) -> st.SearchStrategy[JobHistory]:
    """A job's finished epochs that follow its regime model, and its total epochs.

    The job has run the first ``r`` regimes of its model in order (``r >= 1``; the last is
    ongoing), each for ``1..max_epochs_per_regime`` epochs with measured durations near a
    per-configuration mean, and has ``extra_epochs`` epochs left. A job with no finished
    epoch yet has profiled durations for its configurations instead.
    """
    mmax = as_count(max_epochs_per_regime, "max_epochs_per_regime")
    elo, ehi = size_bounds(extra_epochs, "extra_epochs")
    slo, shi = value_range(seconds, "seconds")
    models = regime_models(max_regimes=max_regimes)

    @st.composite
    def draw_history(draw: st.DrawFn) -> JobHistory:
        model = draw(models)
        cfg = model.configurations
        k = cfg.size
        mean = draw(arrays(np.float64, k, elements=reals(slo, shi)))
        started = draw(st.booleans())
        if started:
            r = draw(st.integers(1, k))
            runs = draw(arrays(np.int64, r, elements=st.integers(1, mmax)))
            regime = np.repeat(np.arange(r), runs)
            jitter = draw(arrays(np.float64, regime.size, elements=reals(0.9, 1.1)))
            bs, sec = cfg[regime], mean[regime] * jitter
        else:
            bs, sec = np.zeros(0), np.zeros(0)
        profiled = {float(c): float(s) for c, s in zip(cfg, mean)} if not started else {}
        total = float(bs.size + draw(st.integers(elo, ehi)))
        return JobHistory(model, total, bs, sec, profiled)

    return draw_history()


def regime_forecasts(*, methods: Sequence[str] = ("restatement", "bayesian", "greedy"),
                     max_regimes: int = 4, max_epochs_per_regime: int = 10,
                     extra_epochs: Size = (1, 40), seconds: Range = (1.0, 120.0)
                     ) -> st.SearchStrategy[Any]:
    """`fairalloc.RegimeForecast` built by
    `fairalloc.forecast_regimes` from a
    `fairalloc.testing.strategies.job_histories` draw (its arguments as there),
    with a method from ``methods``."""
    from ...schedule import FORECAST_METHODS as METHODS
    from ...schedule import forecast_regimes

    chosen = tuple(as_option(m, "methods", METHODS) for m in methods)
    if not chosen:
        raise InputError("methods is empty", argument="methods")
    hist = job_histories(max_regimes=max_regimes, max_epochs_per_regime=max_epochs_per_regime,
                         extra_epochs=extra_epochs, seconds=seconds)

    @st.composite
    def draw_forecast(draw: st.DrawFn) -> Any:
        h = draw(hist)
        return forecast_regimes(**h.kwargs(), method=draw(st.sampled_from(chosen)))

    return draw_forecast()


def restatement_inputs(*, max_regimes: int = 5, total_epochs: Range = (1.0, 500.0)
                       ) -> st.SearchStrategy[tuple[float, int, np.ndarray]]:
    """``(total_epochs, num_regimes, observed_epochs)`` for
    `fairalloc.restatement_posterior`: at most ``K`` finished
    regimes whose epochs sum to at most ``N`` (and to more than zero when all ``K`` have
    finished)."""
    kmax = as_count(max_regimes, "max_regimes")
    lo, hi = value_range(total_epochs, "total_epochs")

    @st.composite
    def draw_inputs(draw: st.DrawFn) -> tuple[float, int, np.ndarray]:
        n = draw(reals(lo, hi))
        k = draw(st.integers(1, kmax))
        done = draw(st.integers(0, k))
        share = draw(arrays(np.float64, done, elements=reals(0.0, 1.0,
                                                                 allow_subnormal=False)))
        used = draw(reals(0.0, 1.0))
        if done == k:  # every regime finished: the epochs cannot all be zero
            share[draw(st.integers(0, k - 1))] = 1.0
            used = max(used, 0.5)
        total = share.sum()
        observed = share / total * used * n if total > 0 else share
        return n, k, observed

    return draw_inputs()


def plan_jobs(*, max_workers: int = 4, epochs: Size = (1, 60), regimes: Size = (1, 3),
              seconds: Range = (5.0, 300.0), ftf: Range = (0.25, 4.0)
              ) -> st.SearchStrategy[Any]:
    """`fairalloc.PlanJob`: a gang size, integer epochs with some left, an FTF
    estimate and remaining regimes that cover exactly the epochs left."""
    from ...schedule import PlanJob

    wmax = as_count(max_workers, "max_workers")
    elo, ehi = size_bounds(epochs, "epochs")
    rlo, rhi = size_bounds(regimes, "regimes")
    slo, shi = value_range(seconds, "seconds")
    flo, fhi = value_range(ftf, "ftf")

    @st.composite
    def draw_job(draw: st.DrawFn) -> PlanJob:
        total = draw(st.integers(elo, ehi))
        done = draw(st.integers(0, total - 1))
        left = total - done
        r = min(draw(st.integers(rlo, rhi)), left)
        # r positive parts of `left`: r - 1 distinct cut points in 1..left-1
        cuts = sorted(draw(st.lists(st.integers(1, max(left - 1, 1)), min_size=r - 1,
                                    max_size=r - 1, unique=True))) if r > 1 else []
        parts = np.diff(np.concatenate([[0], cuts, [left]]))
        sec = draw(arrays(np.float64, parts.size, elements=reals(slo, shi)))
        return PlanJob(workers=draw(st.integers(1, wmax)), total_epochs=float(total),
                       done_epochs=float(done), ftf=draw(reals(flo, fhi)),
                       regimes=[(float(s), float(e)) for s, e in zip(sec, parts)],
                       running=draw(st.booleans()))

    return draw_job()


@dataclass(frozen=True, eq=False)
class PlanInstance:
    """Inputs of `fairalloc.plan_schedule`: jobs and the GPUs they
    share."""

    jobs: tuple[Any, ...]
    num_gpus: int


def plan_instances(*, n: Size = (1, 5), num_gpus: Size = (1, 8), max_workers: int = 4,
                   epochs: Size = (1, 60), regimes: Size = (1, 3),
                   seconds: Range = (5.0, 300.0), ftf: Range = (0.25, 4.0)
                   ) -> st.SearchStrategy[PlanInstance]:
    """``n`` `fairalloc.testing.strategies.plan_jobs` (their arguments as there) whose
    gangs all fit in ``num_gpus`` GPUs."""
    nlo, nhi = size_bounds(n, "n")
    glo, ghi = size_bounds(num_gpus, "num_gpus")
    wmax = max_workers
    as_count(wmax, "max_workers")

    @st.composite
    def draw_plan(draw: st.DrawFn) -> PlanInstance:
        m = draw(st.integers(glo, ghi))
        k = draw(st.integers(nlo, nhi))
        job = plan_jobs(max_workers=min(int(wmax), m), epochs=epochs, regimes=regimes,
                        seconds=seconds, ftf=ftf)
        return PlanInstance(tuple(draw(job) for _ in range(k)), m)

    return draw_plan()
