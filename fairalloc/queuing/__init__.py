"""Elastic fair queuing (Ares §3): GPS virtual time, virtual-finish priority, α-capped doubling.

Ares (Liu et al., TOCS 2025) serves deep-learning jobs in the order in which they would finish
under *Generalized Processor Sharing* (GPS, instantaneous fair sharing of the ``M`` GPUs), and lets
the job at the head of that order use more GPUs than it asked for, as long as its per-GPU
efficiency stays at least ``alpha`` (endo-elastic training: the global batch size is fixed, so a
job's total work does not change with its GPU count).

* **Virtual time** (§3.2, Eq. 2): ``V(0) = 0`` and ``dV/dt = M / N_t`` where ``N_t`` is the number
  of jobs active in the GPS reference system; ``V`` is frozen while the reference is empty.
* **Virtual finish time** (Eq. 3): ``F_j = V(a_j) + L_j``, fixed at arrival; ``L_j`` is the job's
  GPU-time with its requested GPUs. Jobs leave the reference in increasing ``F``, at the instant
  ``V`` reaches their ``F``. The reference is maintained exactly, event by event, with a heap
  (``O(log n)`` per arrival or departure), including jobs that arrive while others are mid-flight.
* **Service** (§3.2-3.3, Fig. 4): active jobs are served preemptively in increasing ``F`` (ties by
  arrival). Each job's *maximum* is found once, at arrival: start from its requested GPU count
  ``r`` and double (``r, 2r, 4r, ...``) while the per-GPU efficiency
  ``e(g) = (T(g)/g) / (T(r)/r)`` of its scaling curve ``T`` stays ``>= alpha``; the maximum is
  the last accepted count, clipped to the cluster. Walking the jobs in priority order, each gets
  ``min(max, free GPUs)`` (possibly fewer than it requested: endo-elastic jobs shrink, §4).
* **Scaling curves** (§3.3, §4 "Throughput Profiling"): throughput profiled at 1, 2, 4, ...,
  ``2^K`` GPUs, linearly interpolated in between; ``None`` is linear scaling. Per-GPU throughput
  must not increase with the GPU count (diminishing returns), so every count up to a job's
  maximum runs at efficiency ``>= alpha``.
* **Heterogeneous GPUs** (§3.5): GPU-time is counted in *average* GPUs of the cluster (the virtual
  time uses the GPU count), and the job at the head of the queue picks the fastest free GPUs; a
  job's speed scales with the mean relative power of the GPUs it holds (the global batch is split
  in proportion to GPU power).
* **Unknown GPU-time** (§3.5): jobs submitted without a GPU-time estimate go to a dedicated pool
  of GPUs shared by instantaneous (max-min) fair sharing, without prioritising or delaying them.

There is no optimisation program here, so a schedule carries no optimality certificate: it
carries a `fairalloc.ReplayCheck`, an independent replay of the schedule itself, and
its status is `REPLAYED` (`fairalloc.efq_schedule` raises
`fairalloc.CertificateError` when the replay check fails): capacity is never
exceeded, no job exceeds its α-capped maximum, no GPU idles while an active job is below its maximum
(work conservation), the work each job received integrates to its GPU-time exactly when it
finishes, and the GPS finish times are the fixed point of the fair-sharing equations.
This package never imports cvxpy.

The package, one job per file: `curves` (validation, α-capped maxima,
speed tables, cluster power), `engine` (the GPS reference and the EFQ
event engine), `replay` (`fairalloc.ReplayCheck`, the independent schedule
check), `offline` (`fairalloc.efq_schedule`,
`fairalloc.efq_finish_times`, `fairalloc.EFQResult`) and `online`
(`fairalloc.ElasticFairQueue`, `fairalloc.QueuedJob`).
"""

from __future__ import annotations

from .offline import EFQResult, efq_finish_times, efq_schedule
from .online import ElasticFairQueue, QueuedJob
from .replay import ReplayCheck

__all__ = ["EFQResult", "ElasticFairQueue", "QueuedJob", "ReplayCheck", "efq_finish_times",
           "efq_schedule"]
