"""Elastic fair queuing inputs: validation, α-capped maxima, speed tables, cluster power.

The pure functions the event engine, the offline schedule and the online queue share (Ares
§3.3, §3.5): a job's scaling curve (throughput at 1, 2, 4, ... GPUs, linearly interpolated)
gives its maximum GPU count under the α rule and its speed at every GPU count; a heterogeneous
cluster is expanded into per-GPU relative power, fastest first; the unknown-GPU-time pool is
shared by integer max-min fair water-filling.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from .._validation import as_array, as_positive_float, as_positive_int, fmt_index
from ..errors import InputError

#: ACCURACY: relative tolerance of the efficiency test ``e(g) >= alpha`` (round-off in profiled
#: curves)
_EFF_RTOL = 1e-12
#: ACCURACY: per-GPU throughput may rise by at most this relative amount between doublings
#: (measurement noise)
_MONO_RTOL = 1e-9
#: limit of the input: longest profiled curve accepted (2**30 GPUs)
_MAX_LEVELS = 31
#: ACCURACY: the smallest normal float: the fast path hands anything below it (a subnormal
#: rate) to the validator, which refuses it (fairalloc._validation's rule)
_TINY = float(np.finfo(np.float64).tiny)
#: the speed row of linear scaling for each table width (shared, never written to)
_LINEAR: dict[int, list[float]] = {}
#: the default scaling-control threshold alpha (a documented argument: Ares §3.3)
DEFAULT_ALPHA = 0.75
#: limit of the input: most GPUs of a queue's cluster (a heterogeneous cluster is expanded to
#: one power entry per GPU, 128 MiB at this bound; as the auctions' Topology)
MAX_GPUS = 1 << 24


def _validate_alpha(alpha: Any) -> float:
    a = as_positive_float(alpha, "alpha")
    if a > 1.0:
        raise InputError(f"alpha must be in (0, 1], got {alpha!r}", argument="alpha")
    return a


def _validate_scaling(scaling: Any, n: int, name: str = "scaling") -> np.ndarray | None:
    """Validate throughput curves at 1, 2, 4, ... GPUs; return an (n, K+1) array or ``None``."""
    if scaling is None:
        return None
    arr = as_array(scaling, name, ndim=(1, 2), positive=True)
    if arr.ndim == 2 and arr.shape[0] != n:
        raise InputError(
            f"{name} has shape {arr.shape}; axis 0 must have length {n} (one curve per job)",
            argument=name,
        )
    width = arr.shape[-1]
    if width > _MAX_LEVELS:
        raise InputError(
            f"{name} has {width} levels (1 to {2 ** (width - 1)} GPUs); at most {_MAX_LEVELS}",
            argument=name,
        )
    per_gpu = arr / np.exp2(np.arange(width))
    rising = per_gpu[..., 1:] > per_gpu[..., :-1] * (1.0 + _MONO_RTOL)
    if rising.any():
        idx = tuple(int(i) for i in np.argwhere(rising)[0])
        idx = idx[:-1] + (idx[-1] + 1,)
        prev = idx[:-1] + (idx[-1] - 1,)
        raise InputError(
            f"{name}{fmt_index(idx)} = {arr[idx]:g} at {2 ** idx[-1]} GPUs is more than twice "
            f"{name}{fmt_index(prev)} = {arr[prev]:g}: per-GPU throughput must not increase "
            "with the GPU count (Ares §3.3: diminishing returns)",
            argument=name,
            index=idx,
        )
    if arr.ndim == 1:
        arr = np.broadcast_to(arr, (n, width))
    return arr


def _validate_requested(
    requested: Any, n: int, num_gpus: int, scaling: np.ndarray | None, name: str = "requested"
) -> np.ndarray:
    if requested is None:
        return np.ones(n)
    req = as_array(requested, name, ndim=1, shape=(n,), positive=True, integer=True)
    over = req > num_gpus
    if over.any():
        i = int(np.flatnonzero(over)[0])
        raise InputError(
            f"{name}[{i}] = {req[i]:g} exceeds the {num_gpus} GPUs the queue schedules",
            argument=name,
            index=(i,),
        )
    if scaling is not None:
        top = 2.0 ** (scaling.shape[1] - 1)
        over = req > top
        if over.any():
            i = int(np.flatnonzero(over)[0])
            raise InputError(
                f"{name}[{i}] = {req[i]:g} is beyond the scaling curve, which is profiled up to "
                f"{top:g} GPUs",
                argument=name,
                index=(i,),
            )
    return req


def _interp_pow2(table: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Row-wise linear interpolation of values at 1, 2, 4, ... GPUs, at counts ``x`` (>= 1).

    ``table`` has shape (n, W); ``x`` shape (n,) or (n, m), with ``x <= 2**(W-1)``.
    """
    width = table.shape[1]
    expo = np.frexp(x)[1] - 1  # floor(log2 x), exact for floats
    frac = x / np.ldexp(1.0, expo) - 1.0
    hi = np.minimum(expo + 1, width - 1)
    rows = np.arange(table.shape[0])
    if x.ndim == 2:
        rows = rows[:, None]
    lo_v = table[rows, expo]
    return lo_v + (table[rows, hi] - lo_v) * frac


def _caps_and_speeds(
    requested: np.ndarray, scaling: np.ndarray | None, num_gpus: int, alpha: float
) -> tuple[np.ndarray, np.ndarray]:
    """Each job's α-capped maximum GPUs and its speed table (Ares §3.3).

    Returns ``cap`` (n,) int64 and ``speed`` (n, W) with ``W = ceil(log2 M) + 2``:
    ``speed[j, k]`` is the rate (GPU-time of job ``j`` per unit time, i.e. ``r T(2^k)/T(r)``) at
    ``2^k`` GPUs; counts in between are interpolated linearly.
    """
    n = requested.shape[0]
    kc = max(int(num_gpus - 1).bit_length(), 0)  # 2**kc >= num_gpus
    width = kc + 2
    if scaling is None:
        cap = np.full(n, num_gpus, dtype=np.int64)
        speed = np.broadcast_to(np.exp2(np.arange(width)), (n, width)).copy()
        return cap, speed
    levels = scaling.shape[1]
    top = 2.0 ** (levels - 1)
    t_req = _interp_pow2(scaling, requested)
    ladder = requested[:, None] * np.exp2(np.arange(levels))[None, :]
    valid = ladder <= top
    t_lad = _interp_pow2(scaling, np.minimum(ladder, top))
    eff = (t_lad / np.minimum(ladder, top)) / (t_req / requested)[:, None]
    ok = valid & (eff >= alpha * (1.0 - _EFF_RTOL))
    accepted = np.logical_and.accumulate(ok, axis=1).sum(axis=1) - 1  # >= 0: level 0 is r
    cap = np.minimum(requested * np.exp2(accepted), num_gpus).astype(np.int64)
    norm = scaling * (requested / t_req)[:, None]
    if levels >= width:
        speed = np.ascontiguousarray(norm[:, :width])
    else:
        speed = np.concatenate([norm, np.repeat(norm[:, -1:], width - levels, axis=1)], axis=1)
    return cap, speed


def _validate_one_curve(scaling: Any, name: str = "scaling") -> list[float] | None:
    """`_validate_scaling` for one job's curve, returned as a list of floats (online hot path).

    A list, tuple or 1-D float64 array of finite positive floats whose per-GPU throughput does
    not rise is accepted after a check level by level (at most ``_MAX_LEVELS`` levels, never a
    loop over jobs); anything else, and every curve that fails a check, goes through
    `_validate_scaling`, which converts it or raises the usual error.
    """
    if scaling is None:
        return None
    vals = scaling
    if type(scaling) is np.ndarray and scaling.ndim == 1 and scaling.dtype == np.float64:
        vals = scaling.tolist()
    if (type(vals) is list or type(vals) is tuple) and 0 < len(vals) <= _MAX_LEVELS:
        inf = math.inf
        up = 1.0 + _MONO_RTOL
        prev = inf
        half_k = 1.0  # 2 ** -k: exact, so v * half_k == v / 2 ** k
        for v in vals:
            if type(v) is not float or not _TINY <= v < inf:
                break
            per = v * half_k
            if per > prev * up:
                break
            prev = per
            half_k *= 0.5
        else:
            return vals if type(vals) is list else list(vals)
    arr = _validate_scaling(scaling, 1, name)
    assert arr is not None  # scaling is not None
    return arr[0].tolist()  # type: ignore[no-any-return]


def _one_cap_and_speed(
    requested: int, curve: Any, num_gpus: int, alpha: float, width: int
) -> tuple[int, list[float], float]:
    """`_caps_and_speeds` for one job in plain floats (the online queue's hot path).

    ``curve`` is one validated curve (a sequence of floats) or ``None`` (linear scaling).
    Loops over the curve's levels (at most 31), never over jobs. Returns ``(cap, speed row,
    T(r))``. ``tests/test_queuing.py::test_online_queue_matches_batch_simulation`` checks it
    against the vectorised version.
    """
    if curve is None:
        linear = _LINEAR.get(width)
        if linear is None:
            linear = _LINEAR[width] = [float(1 << k) for k in range(width)]
        return num_gpus, linear, float(requested)  # shared: callers never write to a row
    t = curve.tolist() if isinstance(curve, np.ndarray) else curve
    levels = len(t)
    r = float(requested)
    k = requested.bit_length() - 1
    if requested == 1 << k:  # a power of two: the ladder r, 2r, ... sits on profiled points
        t_req = t[k] if k < levels else t[levels - 1]
        bar = alpha * (t_req / r) * (1.0 - _EFF_RTOL)
        k += 1
        while k < levels and t[k] / (1 << k) >= bar:
            k += 1
        g = float(1 << (k - 1))
    else:

        def at(x: float) -> float:
            k = int(math.frexp(x)[1]) - 1
            if k >= levels - 1:
                return t[levels - 1]
            frac = x / (1 << k) - 1.0
            return t[k] + (t[k + 1] - t[k]) * frac

        t_req = at(r)
        bar = alpha * (t_req / r) * (1.0 - _EFF_RTOL)
        top = float(1 << (levels - 1))
        g = r
        while 2.0 * g <= top and at(2.0 * g) / (2.0 * g) >= bar:
            g *= 2.0
    scale = r / t_req
    row = list(map(scale.__mul__, t[:width] if levels > width else t))
    if levels < width:
        row.extend([row[-1]] * (width - levels))
    return int(min(g, num_gpus)), row, t_req


def _cluster_power(
    num_gpus: Any, gpu_power: Any, name: str = "num_gpus"
) -> tuple[int, np.ndarray | None, tuple[str, ...], np.ndarray, np.ndarray]:
    """Expand a cluster into per-GPU relative power sorted fastest first (mean 1).

    Returns ``(M, power or None, types, type_counts, type_power)``; ``power`` is ``None`` for a
    homogeneous cluster. Types are listed fastest first.
    """
    if isinstance(num_gpus, Mapping):
        if len(num_gpus) == 0:
            raise InputError(f"{name} is empty: the cluster needs at least one GPU type",
                             argument=name)
        types = tuple(str(t) for t in num_gpus)
        if len(set(types)) != len(types):
            raise InputError(f"{name} names a GPU type twice (type names are compared as "
                             "strings)", argument=name)
        counts = as_array(list(num_gpus.values()), name, ndim=1, positive=True, integer=True)
        if counts.sum() > MAX_GPUS:
            raise InputError(f"{name} counts {counts.sum():g} GPUs; a queue schedules at most "
                             f"{MAX_GPUS:,} (MAX_GPUS)", argument=name)
        if gpu_power is None:
            tpow = np.ones(len(types))
        else:
            if not isinstance(gpu_power, Mapping):
                raise InputError("gpu_power must be a mapping of GPU type to relative power "
                                 "when num_gpus is a mapping", argument="gpu_power")
            missing = [t for t in num_gpus if t not in gpu_power]
            if missing:
                raise InputError(f"gpu_power has no entry for GPU type {missing[0]!r}",
                                 argument="gpu_power")
            extra = [t for t in gpu_power if t not in num_gpus]
            if extra:
                raise InputError(f"gpu_power names GPU type {extra[0]!r}, which the cluster "
                                 "does not have", argument="gpu_power")
            tpow = as_array([gpu_power[t] for t in num_gpus], "gpu_power", ndim=1,
                            positive=True)
    else:
        if gpu_power is not None:
            raise InputError("gpu_power needs num_gpus as a mapping of GPU type to count",
                             argument="gpu_power")
        m = as_positive_int(num_gpus, name)
        if m > MAX_GPUS:
            raise InputError(f"{name} = {m}; a queue schedules at most {MAX_GPUS:,} GPUs "
                             "(MAX_GPUS)", argument=name)
        return m, None, ("gpu",), np.array([float(m)]), np.array([1.0])
    rank = np.argsort(-tpow, kind="stable")
    types = tuple(types[i] for i in rank)
    counts, tpow = counts[rank], tpow[rank]
    m = int(counts.sum())
    if np.all(tpow == tpow[0]):
        return m, None, types, counts, tpow
    power = np.repeat(tpow, counts.astype(np.int64))
    return m, power, types, counts, tpow


def _water_fill(caps: np.ndarray, capacity: int) -> np.ndarray:
    """Integer max-min fair shares under per-job caps; leftover units go first-come first.

    ``caps`` is in arrival order. Returns GPUs per job (sums to ``min(capacity, caps.sum())``).
    """
    caps = caps.astype(np.int64)
    n = caps.size
    if n == 0 or caps.sum() <= capacity:
        return caps.copy()
    sorted_caps = np.sort(caps)
    prefix = np.concatenate(([0], np.cumsum(sorted_caps)))
    used_at = prefix[:-1] + sorted_caps * (n - np.arange(n))  # sum of min(caps, sorted_caps[i])
    full = int(np.searchsorted(used_at, capacity, side="right"))  # caps met at the level
    level = (capacity - int(prefix[full])) // (n - full)
    alloc = np.minimum(caps, level)
    rest = capacity - int(alloc.sum())
    eligible = caps > level
    alloc += eligible & (np.cumsum(eligible) <= rest)
    return alloc
