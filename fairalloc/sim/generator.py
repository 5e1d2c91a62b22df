"""The workload generator of the papers' evaluations:
`fairalloc.sim.poisson_workload` (Gavel §7.1, Shockwave §8.1): Poisson arrivals,
durations and gang sizes drawn from their mixes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._validation import as_array, as_bool, as_finite_float, as_positive_float, as_positive_int
from ..errors import InputError
from ._files import as_names
from .models import MODELS, MODES, ThroughputTable
from .workload import Workload, job_from_config

__all__ = ["ARRIVAL_RATE", "DURATION_CLASSES", "MAX_JOBS", "MODE_PROBS", "SCALE_FACTORS",
           "poisson_workload"]

#: Default duration mix of `fairalloc.sim.poisson_workload`: (low hours, high
#: hours, probability) of the
#: isolated run time, within Shockwave §8.1's "0.2 to 5 hours", skewed to short jobs.
#: ACCURACY (a validity limit): the most jobs a generated workload holds (every job is built
#: in memory; Gavel's and Shockwave's traces have at most about 10^5)
MAX_JOBS = 10**7
DURATION_CLASSES = ((0.2, 1.0, 0.6), (1.0, 2.0, 0.3), (2.0, 4.0, 0.09), (4.0, 5.0, 0.01))
#: Gang sizes of Gavel's "continuous-multiple" trace (§7.1): 70 % one worker, 25 % two or four,
#: 5 % eight.
SCALE_FACTORS = ((1, 0.70), (2, 0.125), (4, 0.125), (8, 0.05))
#: Default probabilities of the static, Accordion and GNS modes (Shockwave §8.1's mix)
MODE_PROBS = (0.2, 0.4, 0.4)
#: Default arrival rate of `fairalloc.sim.poisson_workload` (jobs per hour)
ARRIVAL_RATE = 6.0
#: seconds per hour (rates are per hour, durations in hours)
SECONDS_PER_HOUR = 3600.0


def poisson_workload(
    num_jobs: int,
    *,
    rate: float = ARRIVAL_RATE,
    seed: int = 0,
    types: Sequence[str] = ("v100",),
    throughputs: ThroughputTable | None = None,
    models: Sequence[str] | None = None,
    mode_probs: Sequence[float] = MODE_PROBS,
    duration_classes: Sequence[tuple[float, float, float]] = DURATION_CLASSES,
    scale_factors: Sequence[tuple[int, float]] = SCALE_FACTORS,
    max_scale_factor: int | None = None,
    reference_type: str | None = None,
    scaling: float = 0.9,
    batch_start: bool = False,
) -> Workload:
    """Generate a workload like the papers' (Gavel §7.1, Shockwave §8.1): Poisson arrivals.

    Job ``i`` arrives after exponential inter-arrival times of mean ``1/rate`` hours (the first
    at time 0; ``batch_start=True`` makes all arrive at 0, Gavel's static trace). Its model and
    initial batch size are drawn uniformly from the table, its gang from ``scale_factors``, its
    mode from ``mode_probs`` (static, accordion, gns), and its isolated run time on the
    reference type at the initial batch size from ``duration_classes`` (hours, uniform within a
    class); the step count follows from the table's throughput.

    Parameters
    ----------
    num_jobs : int
        At most `MAX_JOBS` (10^7).
    rate : float
        Arrivals per hour (``lambda``).
    seed : int
        Seed of every random draw: the same seed gives the same workload.
    types : sequence of str
        Accelerator types of the cluster (default a homogeneous V100 cluster).
    throughputs : ThroughputTable, optional
        Default `fairalloc.sim.models.ThroughputTable.builtin`.
    models : sequence of str, optional
        Model families to draw from (default: all the table has with a known batch size).
    mode_probs : (float, float, float)
    duration_classes : sequence of (low, high, probability)
    scale_factors : sequence of (int, probability)
    max_scale_factor : int, optional
        Cap on gang sizes (e.g. the cluster's smallest type).
    reference_type : str, optional
        Type the durations refer to (default the first).
    scaling : float
        `JobSpec.scaling` (per-GPU efficiency kept per doubling) for elastic policies.
    batch_start : bool

    Returns
    -------
    Workload
        ``num_jobs`` jobs sorted by arrival (the first at time 0); the same for the same
        arguments and ``seed``.

    Examples
    --------
    >>> w = poisson_workload(5, rate=4.0, seed=1)
    >>> w.n, float(w.arrival[0]), bool((np.diff(w.arrival) >= 0).all())
    (5, 0.0, True)
    >>> bool((poisson_workload(5, rate=4.0, seed=1).arrival == w.arrival).all())
    True
    """
    n = as_positive_int(num_jobs, "num_jobs", maximum=MAX_JOBS)
    lam = as_positive_float(rate, "rate")
    seed = as_positive_int(seed, "seed", allow_zero=True)
    types = as_names(types, "types")
    if throughputs is not None and not isinstance(throughputs, ThroughputTable):
        raise InputError(f"throughputs must be a ThroughputTable, got "
                         f"{type(throughputs).__name__}", argument="throughputs")
    table = (throughputs or ThroughputTable.builtin(types)).restrict(types)
    if reference_type is not None and (not isinstance(reference_type, str)
                                       or reference_type not in table.types):
        raise InputError(f"reference_type {reference_type!r} not in {table.types}",
                         argument="reference_type")
    ref = table.types.index(reference_type) if reference_type else 0
    if models is not None:
        models = as_names(models, "models")
        known = sorted({m for (m, b, _s) in table.keys() if b is not None and m in MODELS})
        unknown = [m for m in models if m not in known]
        if unknown:
            raise InputError(f"models: {unknown[0]!r} is not a model the throughput table has "
                             f"with a batch size (known: {', '.join(known)})",
                             argument="models")
    batch_start = as_bool(batch_start, "batch_start")
    mp = as_array(mode_probs, "mode_probs", ndim=1, shape=(3,))
    if mp.sum() <= 0:
        raise InputError("mode_probs sums to 0", argument="mode_probs")
    dc = as_array(duration_classes, "duration_classes", ndim=2, shape=(None, 3), positive=True)
    if (dc[:, 1] < dc[:, 0]).any():
        i = int(np.flatnonzero(dc[:, 1] < dc[:, 0])[0])
        raise InputError(f"duration_classes[{i}]: high < low", argument="duration_classes",
                         index=(i,))
    if dc[:, 2].sum() <= 0:  # pragma: no cover - positive entries
        raise InputError("duration_classes probabilities sum to 0", argument="duration_classes")
    sfp = as_array(scale_factors, "scale_factors", ndim=2, shape=(None, 2), positive=True)
    if (sfp[:, 0] != np.round(sfp[:, 0])).any():
        i = int(np.flatnonzero(sfp[:, 0] != np.round(sfp[:, 0]))[0])
        raise InputError(f"scale_factors[{i}, 0] = {sfp[i, 0]:g} is not an integer gang size",
                         argument="scale_factors", index=(i, 0))
    sizes = sfp[:, 0].astype(np.int64)
    if max_scale_factor is not None:
        keep = sizes <= as_positive_int(max_scale_factor, "max_scale_factor")
        if not keep.any():
            raise InputError("max_scale_factor excludes every gang size",
                             argument="max_scale_factor")
        sfp, sizes = sfp[keep], sizes[keep]
    eff = as_finite_float(scaling, "scaling", lo=0.0, hi=1.0, lo_open=True)
    # configurations available per gang size
    configs: dict[int, list[tuple[str, int]]] = {}
    for (m, b, s) in table.keys():
        if b is None or m not in MODELS or (models is not None and m not in models):
            continue
        rate_ref = table.rate(m, b, s)
        if rate_ref is not None and rate_ref[ref] > 0:
            configs.setdefault(int(s), []).append((m, b))
    missing = [int(s) for s in sizes if int(s) not in configs]
    if missing:
        which = "models" if models is not None else "scale_factors"
        raise InputError(f"{which}: the throughput table has no job"
                         f"{' of these models' if models is not None else ''} with scale "
                         f"factor {missing[0]} runnable on {table.types[ref]!r}",
                         argument=which)
    rng = np.random.default_rng(int(seed))
    gaps = rng.exponential(SECONDS_PER_HOUR / lam, size=n)
    arrival = np.zeros(n) if batch_start else np.concatenate([[0.0], np.cumsum(gaps[1:])])
    sf = rng.choice(sizes, size=n, p=sfp[:, 1] / sfp[:, 1].sum())
    mode_idx = rng.choice(3, size=n, p=mp / mp.sum())
    cls_idx = rng.choice(dc.shape[0], size=n, p=dc[:, 2] / dc[:, 2].sum())
    hours = rng.uniform(dc[cls_idx, 0], dc[cls_idx, 1])
    pick = rng.random(size=n)
    specs, caps = [], []
    for i in range(n):  # workload construction only (not a simulation hot path)
        options = sorted(configs[int(sf[i])])
        models_i = sorted({m for m, _ in options})
        m = models_i[int(pick[i] * len(models_i))]
        batches = [b for mm, b in options if mm == m]
        b = batches[int((pick[i] * len(models_i) % 1.0) * len(batches))]
        r = table.rate(m, b, int(sf[i]))
        assert r is not None  # configs holds only (m, b) the table has at this gang size
        steps = float(hours[i] * SECONDS_PER_HOUR * r[ref])
        spec, cap = job_from_config(table, model=m, batch=b, sf=int(sf[i]),
                                     mode=MODES[int(mode_idx[i])], steps=steps,
                                     arrival=float(arrival[i]), weight=1.0, reference=ref,
                                     duration=None, job_id=i, scaling=eff, where=f"job {i}")
        specs.append(spec)
        caps.append(cap)
    return Workload.from_jobs(specs, table.types, max_batch=caps)
