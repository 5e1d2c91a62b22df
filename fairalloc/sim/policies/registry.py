"""The registry of simulator policies by name: `fairalloc.sim.register_policy`,
`fairalloc.sim.available_policies` and
`fairalloc.sim.make_policy` (used by
`fairalloc.sim.simulate`, the ``fairalloc simulate`` command and sweeps).

The Gavel programs are registered from
`fairalloc.sim.policies.gavel.gavel_policies` (which reads
`fairalloc.throughput.registry.GAVEL_POLICIES`); the
other policies below.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from ..._deprecate import renames_of, resolve_renamed
from ...errors import FairallocError, InputError
from .baselines import AlloXPolicy, FIFOPolicy, GandivaFairPolicy, TiresiasLAS
from .efq import EFQPolicy
from .gavel import GavelPolicy, gavel_policies
from .shockwave import ShockwavePolicy
from .themis import ThemisPolicy
from .upstream_baselines import AlloXUpstreamPolicy, GandivaFairUpstreamPolicy, OSSPUpstreamPolicy

__all__ = ["available_policies", "make_policy", "register_policy"]

_REGISTRY: dict[str, tuple[Callable[..., Any], str]] = {}


def register_policy(name: str, factory: Callable[..., Any], description: str = "") -> None:
    """Register a policy factory under ``name`` (``factory(**params)`` returns a policy).

    Parameters
    ----------
    name : str
        The name `make_policy`, `fairalloc.sim.sweep` and ``fairalloc simulate --policy``
        know it by; registering a taken name replaces that entry.
    factory : callable
        ``factory(**params)`` returns a policy (a class is the usual factory).
    description : str, optional
        One line `available_policies` shows.

    Examples
    --------
    >>> from fairalloc.sim import FIFOPolicy
    >>> register_policy("fifo", FIFOPolicy, available_policies()["fifo"])  # as built in
    >>> type(make_policy("fifo")).__name__
    'FIFOPolicy'
    """
    if not isinstance(name, str) or not name:
        raise InputError("name must be a non-empty string", argument="name")
    if not callable(factory):
        raise InputError("factory must be callable", argument="factory")
    _REGISTRY[name] = (factory, description)


def available_policies() -> dict[str, str]:
    """Registered policy names and what they are.

    Returns
    -------
    dict of str to str
        ``name -> one-line description``, sorted by name.

    Examples
    --------
    >>> available_policies()["fifo"]
    'first come first served with backfilling'
    """
    return {k: d for k, (_, d) in sorted(_REGISTRY.items())}


def make_policy(name: str, params: Mapping[str, Any] | None = None) -> Any:
    """Build a registered policy by name.

    Parameters
    ----------
    name : str
        A registered name (`fairalloc.sim.available_policies`).
    params : mapping, optional
        Keyword parameters of that policy's factory (each policy has its own, so they travel
        as one mapping; to have a type checker check them, construct the policy class
        directly). An unknown parameter is an `fairalloc.InputError` naming it.

    Returns
    -------
    policy
        A new instance from the factory registered under ``name`` (`register_policy`).

    Examples
    --------
    >>> make_policy("ossp").name, make_policy("las", dict(promote_knob=None)).params["promote_knob"]
    ('ossp', None)
    """
    if params is None:
        params = {}
    elif not isinstance(params, Mapping) or not all(isinstance(k, str) for k in params):
        raise InputError(f"params must be a mapping of parameter names to values; got "
                         f"{type(params).__name__}", argument="params")
    if name not in _REGISTRY:
        raise InputError(f"unknown policy {name!r}; available: {', '.join(sorted(_REGISTRY))}",
                         argument="policy")
    factory = _REGISTRY[name][0]
    target: Any = factory
    if isinstance(factory, type):
        target = factory.__dict__.get("__init__", factory)
    renames = renames_of(target)
    if renames.keys() & params.keys():  # an old spelling: warn at the caller, pass the new one
        params = resolve_renamed(dict(params), renames, name)
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        sig = None
    if sig is not None and not any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        names = [p.name for p in sig.parameters.values()
                 if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "self"]
        unknown = [k for k in params if k not in names]
        if unknown:
            raise InputError(f"policy {name!r} has no parameter {unknown[0]!r}; its parameters: "
                             f"{', '.join(names) or 'none'}", argument=unknown[0])
    try:
        policy = factory(**params)
    except FairallocError:
        raise
    except (TypeError, ValueError) as exc:
        raise InputError(f"policy {name!r}: {exc}", argument="params") from exc
    policy.name = name
    return policy


# the Gavel programs first: a baseline of the same name ("fifo") replaces Gavel's below
for _name, (_objective, _description) in gavel_policies().items():
    register_policy(_name, functools.partial(GavelPolicy, _objective), _description)
register_policy("fifo", FIFOPolicy, "first come first served with backfilling")
register_policy("las", TiresiasLAS, "Tiresias discretised 2D least attained service")
register_policy("tiresias", TiresiasLAS, "alias of las")
register_policy("allox", AlloXPolicy, "AlloX min-cost matching (min average JCT)")
register_policy("allox_upstream", AlloXUpstreamPolicy,
                "the Shockwave artifact's AlloX (placed 1-GPU jobs keep their GPU; time shares)")
register_policy("gandiva_fair", GandivaFairPolicy, "Gandiva-fair stride scheduling")
register_policy("ossp_upstream", OSSPUpstreamPolicy,
                "the Shockwave artifact's OSSP (bisection on the horizon, interior point)")
register_policy("gandiva_fair_upstream", GandivaFairUpstreamPolicy,
                "the Shockwave artifact's gandiva_fair (equal shares M/n, any gang)")
register_policy("shockwave", ShockwavePolicy, "Shockwave forecast + windowed plan")
register_policy("efq", EFQPolicy, "Ares elastic fair queuing")
register_policy("themis", ThemisPolicy, "Themis leases, filter and partial-allocation auction")
register_policy("ares", EFQPolicy, "alias of efq")
