"""The one table of Gavel effective-throughput policies: name -> builder, function, description.

Adding a policy to `fairalloc.throughput` means adding its builder class and
one-call function to their module and one `fairalloc.throughput.GavelPolicySpec`
row here; the simulator (`fairalloc.sim.policies`) and any other consumer read this table instead of
keeping their own.

The table:

- ``GAVEL_POLICIES``: a ``dict[str, GavelPolicySpec]`` in a fixed order, keyed by the policy's
  name (the one-call function's name, also ``Allocation.policy`` of its results).
- ``GavelPolicySpec``: a frozen record with
    - ``name`` (str): the key;
    - ``builder`` (type): the `fairalloc.ThroughputPolicy` subclass;
    - ``function`` (callable): the one-call function ``function(jobs, cluster, **options)``
      (its keyword arguments are spelled out in its signature);
    - ``description`` (str): one line for listings (``fairalloc`` CLI, simulator);
    - ``needs`` (tuple of str): the ``Jobs`` fields or arguments the policy requires beyond
      throughputs (``"steps_remaining"``, ``"cost"``);
    - ``reference`` (str): the section of the Gavel paper.
- ``gavel_policy(name)``: the spec of ``name``; `fairalloc.InputError`
  (``argument="policy"``) naming the known policies otherwise.

Examples
--------
>>> from fairalloc.throughput.registry import GAVEL_POLICIES, gavel_policy
>>> list(GAVEL_POLICIES)[:3]
['max_min_fairness', 'water_filling', 'finish_time_fairness']
>>> gavel_policy("min_makespan").builder.__name__
'MinMakespan'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from .duration import FinishTimeFairness, MinMakespan, finish_time_fairness, min_makespan
from .efficiency import MaxTotalThroughput, MinCost, max_total_throughput, min_cost
from .max_min import MaxMinFairness, WaterFilling, max_min_fairness, water_filling
from .ordering import FIFO, ShortestJobFirst, fifo, shortest_job_first
from .policy import ThroughputPolicy

__all__ = ["GAVEL_POLICIES", "GavelPolicySpec", "gavel_policy"]


@dataclass(frozen=True)
class GavelPolicySpec:
    """One Gavel policy: its builder class, one-call function and a one-line description.

    Parameters
    ----------
    name : str
        The policy's name: the one-call function's name, the key in ``GAVEL_POLICIES`` and
        ``Allocation.policy`` of its results.
    builder : type
        The `fairalloc.ThroughputPolicy` subclass that builds and solves the program.
    function : callable
        The one-call function ``function(jobs, cluster, **options)``.
    description : str
        One line for listings (``fairalloc`` CLI, simulator).
    needs : tuple of str, default ()
        The ``Jobs`` fields or arguments required beyond throughputs (``"steps_remaining"``,
        ``"cost"``).
    reference : str, default ""
        The section of the Gavel paper.

    Examples
    --------
    >>> spec = GAVEL_POLICIES["min_cost"]
    >>> spec.builder.__name__, spec.needs, spec.reference
    ('MinCost', ('cost',), 'Gavel §4.2')
    """

    name: str
    builder: type[ThroughputPolicy]
    function: Callable[..., Any]
    description: str
    needs: tuple[str, ...] = ()
    reference: str = ""


GAVEL_POLICIES: dict[str, GavelPolicySpec] = {
    spec.name: spec
    for spec in (
        GavelPolicySpec("max_min_fairness", MaxMinFairness, max_min_fairness,
                        "heterogeneity-aware weighted max-min fairness (LAS)",
                        reference="Gavel §4.1"),
        GavelPolicySpec("water_filling", WaterFilling, water_filling,
                        "hierarchical max-min fairness by water-filling",
                        reference="Gavel §4.3"),
        GavelPolicySpec("finish_time_fairness", FinishTimeFairness, finish_time_fairness,
                        "finish-time fairness: minimise the largest rho (Themis)",
                        needs=("steps_remaining",), reference="Gavel §4.1"),
        GavelPolicySpec("min_makespan", MinMakespan, min_makespan,
                        "minimum makespan (one LP)", needs=("steps_remaining",),
                        reference="Gavel §4.1"),
        GavelPolicySpec("max_total_throughput", MaxTotalThroughput, max_total_throughput,
                        "maximum total (optionally normalised) throughput",
                        reference="Gavel §3.1, §4.2"),
        GavelPolicySpec("fifo", FIFO, fifo, "first in, first out (arrival order)",
                        reference="Gavel §4.2"),
        GavelPolicySpec("shortest_job_first", ShortestJobFirst, shortest_job_first,
                        "shortest job first", needs=("steps_remaining",),
                        reference="Gavel §4.2"),
        GavelPolicySpec("min_cost", MinCost, min_cost,
                        "minimum cost (throughput per unit cost), optionally with SLOs",
                        needs=("cost",), reference="Gavel §4.2"),
    )
}


def gavel_policy(name: str) -> GavelPolicySpec:
    """The registry entry of policy ``name`` (`fairalloc.InputError` if
    unknown).

    Parameters
    ----------
    name : str
        A key of ``GAVEL_POLICIES`` (e.g. ``"max_min_fairness"``).

    Returns
    -------
    GavelPolicySpec
        Its registry row.

    Raises
    ------
    InputError
        ``argument="policy"``, naming the known policies, when ``name`` is not one.

    Examples
    --------
    >>> gavel_policy("fifo").description
    'first in, first out (arrival order)'
    """
    try:
        return GAVEL_POLICIES[name]
    except (KeyError, TypeError):
        raise InputError(f"unknown Gavel policy {name!r}; known: "
                         f"{', '.join(GAVEL_POLICIES)}", argument="policy") from None
