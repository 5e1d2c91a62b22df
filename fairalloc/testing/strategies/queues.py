"""Ares (§3.2-3.3): scaling curves and arrival sequences."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

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
# Ares: scaling curves and arrival sequences (Ares §3.2-3.3)
# ============================================================================================
def scaling_curves(*, levels: Size = (1, 4), efficiency: Range = (0.3, 1.0),
                   base: Range = (0.5, 10.0)) -> st.SearchStrategy[np.ndarray]:
    """Throughput at 1, 2, 4, ..., ``2^K`` GPUs with per-GPU throughput that never rises.

    Each doubling keeps a fraction in ``efficiency`` (at most 1) of the per-GPU throughput,
    so the curves are exactly the diminishing-returns curves Ares §3.3 accepts.
    """
    llo, lhi = size_bounds(levels, "levels")
    elo, ehi = value_range(efficiency, "efficiency")
    if ehi > 1.0:
        raise InputError("efficiency must not exceed 1 (per-GPU throughput never rises)",
                         argument="efficiency")
    blo, bhi = value_range(base, "base")

    @st.composite
    def draw_curve(draw: st.DrawFn) -> np.ndarray:
        k = draw(st.integers(llo, lhi))
        keep = draw(arrays(np.float64, k, elements=reals(elo, ehi)))
        b = draw(reals(blo, bhi))
        per_gpu = b * np.concatenate([[1.0], np.cumprod(keep)])
        return per_gpu * np.exp2(np.arange(k + 1))

    return draw_curve()


@dataclass(frozen=True, eq=False)
class ArrivalSequence:
    """Inputs of `fairalloc.efq_schedule` /
    `fairalloc.efq_finish_times`."""

    arrival: np.ndarray
    gpu_time: np.ndarray
    num_gpus: int
    requested: np.ndarray
    scaling: np.ndarray | None
    alpha: float

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``efq_schedule``."""
        return {"arrival": self.arrival, "gpu_time": self.gpu_time, "num_gpus": self.num_gpus,
                "alpha": self.alpha, "requested": self.requested, "scaling": self.scaling}


def arrival_sequences(*, n: Size = (1, 8), num_gpus: Size = (1, 8), horizon: float = 10.0,
                      gpu_time: Range = (0.1, 10.0), max_request: int = 4,
                      scaling: bool = True, alpha: Range = (0.5, 1.0),
                      integer_times: bool = False) -> st.SearchStrategy[ArrivalSequence]:
    """Job arrivals for elastic fair queuing: times in ``[0, horizon]`` (ties included),
    GPU-times, GPU requests within the cluster (and within the scaling curves' range) and,
    with ``scaling=True``, one diminishing-returns curve per job (else linear scaling).
    ``integer_times`` draws whole arrival times (many ties)."""
    nlo, nhi = size_bounds(n, "n")
    glo, ghi = size_bounds(num_gpus, "num_gpus")
    hz = value_range((0.0, horizon), "horizon", allow_zero=True)[1]
    tlo, thi = value_range(gpu_time, "gpu_time")
    rmax = as_count(max_request, "max_request")
    alo, ahi = value_range(alpha, "alpha")
    if ahi > 1.0:
        raise InputError("alpha must be in (0, 1]", argument="alpha")

    @st.composite
    def draw_sequence(draw: st.DrawFn) -> ArrivalSequence:
        k = draw(st.integers(nlo, nhi))
        m = draw(st.integers(glo, ghi))
        times = (st.integers(0, int(hz)).map(float) if integer_times
                 else reals(0.0, hz))
        arr = draw(arrays(np.float64, k, elements=times))
        work = draw(arrays(np.float64, k, elements=reals(tlo, thi)))
        curves = None
        top = min(m, rmax)
        if scaling:
            levels = max(1, math.ceil(math.log2(max(top, 1))))
            curves = np.stack([draw(scaling_curves(levels=levels)) for _ in range(k)])
            top = min(top, 2 ** levels)
        req = draw(arrays(np.float64, k, elements=st.integers(1, top).map(float)))
        return ArrivalSequence(arr, work, m, req, curves, draw(reals(alo, ahi)))

    return draw_sequence()
