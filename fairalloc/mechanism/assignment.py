"""The values of round realisation: `fairalloc.RoundAssignment` (what a round
decides), `fairalloc.ServerLayout` (the physical servers) and
`fairalloc.Placement` (which GPUs each job of a round holds).

They live apart from the algorithms that produce them (`fairalloc.mechanism.rounds`,
`fairalloc.mechanism.placement`) because an assignment carries its placement and placing
needs the assignment: one module of plain values keeps the import graph acyclic.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import as_array
from ..data import Cluster
from ..errors import InputError, only_fairalloc_errors
from ..results import readonly, require_pandas


def _freeze(obj: Any, names: tuple[str, ...]) -> None:
    """Make the named array fields of a frozen dataclass read-only views (O(fields), unlike a
    walk over every field and tuple element: the label tuples hold one entry per job)."""
    for name in names:
        value = getattr(obj, name)
        if isinstance(value, np.ndarray) and value.flags.writeable:
            view = value.view()
            view.flags.writeable = False
            object.__setattr__(obj, name, view)



@dataclass(frozen=True, repr=False)
class RoundAssignment:
    """Which job (or combination) runs on which accelerator type in the next round (§5).

    Parameters
    ----------
    type_index : ndarray of int, shape (rows,)
        Accelerator type each row runs on this round, ``-1`` when it does not run.
    priority : ndarray, shape (rows, k)
        The priorities ``target / received fraction`` the round was decided with.
    workers : ndarray, shape (k,)
        Workers of each type in use this round.
    capacity : ndarray, shape (k,)
        Workers of each type.
    scale_factor : ndarray, shape (rows,)
        Workers each row occupies (a combination: the largest gang of its jobs).
    selection : ndarray of int
        The scheduled rows in the order Algorithm 1 took them.
    row_labels : tuple
        Label of each row: the job id, or the tuple of job ids of a combination.
    job_ids : tuple
        Job labels.
    types : tuple of str
        Accelerator type names.
    combinations : tuple of tuple of int, or None
        Job indices of each row when rows are combinations (space sharing).
    members : ndarray of int, shape (rows, s)
        Job indices of each row, padded with the number of jobs.
    placement : Placement or None
        GPUs of each row, when the round was placed (`fairalloc.RoundScheduler`
        with servers).

    Examples
    --------
    >>> from fairalloc.mechanism import schedule_round
    >>> a = schedule_round([[0.5, 0.0], [0.5, 0.5], [0.0, 0.5]], [1, 1])
    >>> a.type_index.tolist(), a.workers.tolist()
    ([0, 1, -1], [1.0, 1.0])
    """

    type_index: np.ndarray
    priority: np.ndarray
    workers: np.ndarray
    capacity: np.ndarray
    scale_factor: np.ndarray
    selection: np.ndarray
    row_labels: tuple[Hashable, ...]
    job_ids: tuple[Hashable, ...]
    types: tuple[str, ...]
    combinations: tuple[tuple[int, ...], ...] | None = None
    members: np.ndarray | None = None
    placement: Placement | None = None

    def __post_init__(self) -> None:
        _freeze(self, ("type_index", "priority", "workers", "capacity", "scale_factor",
                       "selection", "members"))

    @property
    def scheduled(self) -> np.ndarray:
        """Boolean mask of the rows that run this round."""
        return readonly(self.type_index >= 0)

    @property
    def idle(self) -> np.ndarray:
        """Workers of each type left idle this round."""
        return readonly(self.capacity - self.workers)

    @property
    def job_type(self) -> np.ndarray:
        """Accelerator type each *job* runs on this round (``-1``: it does not run)."""
        n = len(self.job_ids)
        if self.combinations is None:
            return self.type_index
        out = np.full(n + 1, -1, dtype=np.int64)
        mem = _members(self)
        rows = np.flatnonzero(self.scheduled)
        out[mem[rows].ravel()] = np.repeat(self.type_index[rows], mem.shape[1])
        return readonly(out[:n])

    def assignment(self) -> dict[str, list[Hashable]]:
        """Accelerator type name -> labels of the rows that run on it, in selection order."""
        out: dict[str, list[Hashable]] = {t: [] for t in self.types}
        for r in self.selection.tolist():
            out[self.types[self.type_index[r]]].append(self.row_labels[r])
        return out

    def to_frame(self) -> Any:
        """One row per scheduled job/combination: type, workers and its priority there."""
        pd = require_pandas()
        rows = self.selection
        ti = self.type_index[rows]
        df = pd.DataFrame(
            {
                "type": [self.types[j] for j in ti.tolist()],
                "workers": self.scale_factor[rows],
                "priority": self.priority[rows, ti],
            },
            index=pd.Index([self.row_labels[r] for r in rows.tolist()], name="row"),
        )
        return df

    def __repr__(self) -> str:
        used = ", ".join(f"{t}: {int(u)}/{int(c)}" for t, u, c in
                         zip(self.types, self.workers, self.capacity))
        return (f"RoundAssignment(rows={self.type_index.shape[0]}, "
                f"scheduled={int(self.scheduled.sum())}, workers={{{used}}})")


@dataclass(frozen=True, init=False, eq=False)
class ServerLayout:
    """Physical servers of each accelerator type and global GPU ids.

    GPUs are numbered ``0..G-1`` type by type (in the cluster's type order), server by server.

    Parameters
    ----------
    servers : mapping of str to sequence of int
        Accelerator type -> GPUs of each of its servers.

    Attributes
    ----------
    types : tuple of str
    capacity : ndarray, shape (k,)
        GPUs of each type.
    server_type, server_size, server_start : ndarray of int, shape (S,)
        Type, GPU count and first GPU id of each server.
    gpu_type, gpu_server : ndarray of int, shape (G,)

    Examples
    --------
    >>> lay = ServerLayout.uniform(Cluster({"v100": 8, "k80": 6}), 4)
    >>> lay.server_size.tolist(), lay.gpu_server[:6].tolist()
    ([4, 4, 4, 2], [0, 0, 0, 0, 1, 1])
    """

    types: tuple[str, ...]
    capacity: np.ndarray
    server_type: np.ndarray
    server_size: np.ndarray
    server_start: np.ndarray
    gpu_type: np.ndarray
    gpu_server: np.ndarray

    @only_fairalloc_errors
    def __init__(self, servers: Mapping[str, Sequence[int]]) -> None:
        if not isinstance(servers, Mapping) or not servers:
            raise InputError("servers must be a non-empty mapping of accelerator type to the "
                             "GPU counts of its servers", argument="servers")
        types = tuple(str(t) for t in servers)
        sizes, stype = [], []
        for j, (name, sv) in enumerate(servers.items()):
            arr = as_array(sv, f"servers[{name!r}]", ndim=1, positive=True, integer=True)
            sizes.append(arr.astype(np.int64))
            stype.append(np.full(arr.shape[0], j, dtype=np.int64))
        size = np.concatenate(sizes)
        stype_arr = np.concatenate(stype)
        start = np.concatenate([[0], np.cumsum(size)[:-1]]).astype(np.int64)
        cap = np.bincount(stype_arr, weights=size, minlength=len(types)).astype(float)
        gpu_server = np.repeat(np.arange(size.shape[0]), size)
        for name, val in (("types", types), ("capacity", cap), ("server_type", stype_arr),
                          ("server_size", size), ("server_start", start),
                          ("gpu_type", stype_arr[gpu_server]), ("gpu_server", gpu_server)):
            if isinstance(val, np.ndarray):
                val.flags.writeable = False
            object.__setattr__(self, name, val)

    @classmethod
    @only_fairalloc_errors
    def uniform(cls, cluster: Cluster, gpus_per_server: int | Mapping[str, int]) -> ServerLayout:
        """Servers of ``gpus_per_server`` GPUs (per type, or one count for all types); a type
        whose GPU count is not a multiple gets a last, smaller server."""
        if not isinstance(cluster, Cluster):
            raise InputError("cluster must be a fairalloc.Cluster", argument="cluster")
        per: dict[str, list[int]] = {}
        for name, cap in zip(cluster.types, cluster.capacity.astype(int).tolist()):
            if isinstance(gpus_per_server, Mapping) and name not in gpus_per_server:
                raise InputError(f"gpus_per_server has no entry for type {name!r}",
                                 argument="gpus_per_server")
            g = gpus_per_server[name] if isinstance(gpus_per_server, Mapping) else gpus_per_server
            if isinstance(g, bool) or not isinstance(g, int | np.integer) or g <= 0:
                raise InputError(f"gpus_per_server for {name!r} must be a positive integer, "
                                 f"got {g!r}", argument="gpus_per_server")
            q, r = divmod(cap, int(g))
            per[name] = [int(g)] * q + ([r] if r else [])
        return cls(per)

    @property
    def num_gpus(self) -> int:
        """Total number of GPUs ``G``."""
        return int(self.gpu_type.shape[0])

    @property
    def num_servers(self) -> int:
        """Total number of servers ``S``."""
        return int(self.server_size.shape[0])

    def __repr__(self) -> str:
        body = ", ".join(f"{t!r}: {int((self.server_type == j).sum())} servers/"
                         f"{int(self.capacity[j])} GPUs" for j, t in enumerate(self.types))
        return f"ServerLayout({body})"


@dataclass(frozen=True, repr=False, eq=False)
class Placement:
    """GPUs of every job of a round (§5 placement, §6 lease renewals).

    Parameters
    ----------
    gpu_row : ndarray of int, shape (G,)
        Row (job or combination) running on each GPU, ``-1`` when idle.
    row_ptr : ndarray of int, shape (rows + 1,)
        ``gpu_ids[row_ptr[r]:row_ptr[r + 1]]`` are the GPUs of row ``r`` (sorted).
    gpu_ids : ndarray of int
    row_type : ndarray of int, shape (rows,)
        Type of each row (``-1``: not running).
    servers_spanned : ndarray of int, shape (rows,)
        Servers each running row spans (1 = consolidated).
    renewed : ndarray of bool, shape (rows,)
        Rows that kept GPUs a member held last round (lease renewal).
    job_row : ndarray of int, shape (jobs,)
        Row each job runs in (``-1``: not running).
    job_restarted : ndarray of bool, shape (jobs,)
        Running jobs that must (re)load a checkpoint: they did not run last round on exactly
        these GPUs.
    job_preempted : ndarray of bool, shape (jobs,)
        Jobs that ran last round and do not run this round.
    row_labels, job_ids : tuple
    layout : ServerLayout

    Examples
    --------
    >>> from fairalloc.mechanism import place, schedule_round
    >>> lay = ServerLayout.uniform(Cluster({"v100": 8}), 4)
    >>> a = schedule_round([[1.0], [0.5]], [8], scale_factor=[4, 2])
    >>> p = place(a, lay)
    >>> p.gpus(0), p.gpus(1), p.restarts
    ((0, 1, 2, 3), (4, 5), 2)
    """

    gpu_row: np.ndarray
    row_ptr: np.ndarray
    gpu_ids: np.ndarray
    row_type: np.ndarray
    servers_spanned: np.ndarray
    renewed: np.ndarray
    job_row: np.ndarray
    job_restarted: np.ndarray
    job_preempted: np.ndarray
    row_labels: tuple[Hashable, ...]
    job_ids: tuple[Hashable, ...]
    layout: ServerLayout

    def __post_init__(self) -> None:
        _freeze(self, ("gpu_row", "row_ptr", "gpu_ids", "row_type", "servers_spanned",
                       "renewed", "job_row", "job_restarted", "job_preempted"))

    @property
    def restarts(self) -> int:
        """Jobs that (re)load a checkpoint this round (run, but not on last round's GPUs)."""
        return int(self.job_restarted.sum())

    @property
    def renewals(self) -> int:
        """Jobs that keep last round's GPUs (no restart)."""
        return int(((self.job_row >= 0) & ~self.job_restarted).sum())

    @property
    def preemptions(self) -> int:
        """Jobs that ran last round and are paused this round."""
        return int(self.job_preempted.sum())

    def row_gpus(self, row: int) -> np.ndarray:
        """GPU ids of row ``row`` (empty when it does not run)."""
        if isinstance(row, bool) or not isinstance(row, int | np.integer) or not (
                -self.row_type.shape[0] <= row < self.row_type.shape[0]):
            raise InputError(f"row must be a row index in 0..{self.row_type.shape[0] - 1}, "
                             f"got {row!r}", argument="row")
        row = int(row) % self.row_type.shape[0]
        return self.gpu_ids[self.row_ptr[row]:self.row_ptr[row + 1]]

    def gpus(self, label: Hashable) -> tuple[int, ...]:
        """GPU ids of the row labelled ``label`` (a job id, or a tuple of job ids)."""
        try:
            r = self.row_labels.index(label)
        except ValueError:
            raise InputError(f"no row labelled {label!r}", argument="label") from None
        return tuple(int(g) for g in self.row_gpus(r))

    def job_gpus(self, job: Hashable) -> tuple[int, ...]:
        """GPU ids the job labelled ``job`` runs on (empty when it does not run)."""
        try:
            i = self.job_ids.index(job)
        except ValueError:
            raise InputError(f"no job labelled {job!r}", argument="job") from None
        r = int(self.job_row[i])
        return () if r < 0 else tuple(int(g) for g in self.row_gpus(r))

    def to_frame(self) -> Any:
        """One row per running job/combination: type, GPUs, servers spanned, renewed."""
        pd = require_pandas()
        rows = np.flatnonzero(self.row_type >= 0)
        return pd.DataFrame(
            {
                "type": [self.layout.types[j] for j in self.row_type[rows].tolist()],
                "gpus": [tuple(int(g) for g in self.row_gpus(r)) for r in rows.tolist()],
                "servers": self.servers_spanned[rows],
                "renewed": self.renewed[rows],
            },
            index=pd.Index([self.row_labels[r] for r in rows.tolist()], name="row"),
        )

    def _for_jobs(self, job_ids: tuple[Hashable, ...]) -> Placement:
        """The same placement with its per-job arrays re-indexed to ``job_ids``."""
        index = {label: i for i, label in enumerate(self.job_ids)}
        old = np.array([index.get(label, -1) for label in job_ids], dtype=np.int64)
        ok = old >= 0
        job_row = np.full(len(job_ids), -1, dtype=np.int64)
        job_row[ok] = self.job_row[old[ok]]
        zeros = np.zeros(len(job_ids), dtype=bool)
        return dataclasses.replace(self, job_row=job_row, job_restarted=zeros,
                                   job_preempted=zeros.copy(), job_ids=job_ids)

    def __repr__(self) -> str:
        running = int((self.row_type >= 0).sum())
        busy = int((self.gpu_row >= 0).sum())
        return (f"Placement(rows_running={running}, gpus_busy={busy}/{self.layout.num_gpus}, "
                f"restarts={self.restarts}, renewals={self.renewals}, "
                f"preemptions={self.preemptions})")


def _members(a: RoundAssignment) -> np.ndarray:
    if a.members is not None:
        return a.members
    if a.combinations is None:
        return np.arange(a.type_index.shape[0], dtype=np.int64)[:, None]
    n_jobs = len(a.job_ids)
    width = max(len(c) for c in a.combinations)
    out = np.full((len(a.combinations), width), n_jobs, dtype=np.int64)
    for r, c in enumerate(a.combinations):
        out[r, :len(c)] = c
    return out
