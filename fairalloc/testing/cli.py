"""``fairalloc check``: property-check a policy from a shell (usable in any CI).

``fairalloc check package.module:policy --property envy-free --property sharing-incentive``
imports the policy, runs [`fairalloc.testing.check_policy`][fairalloc.testing.check_policy] and
prints a pass/fail table and the shrunk counterexamples. The exit code is 0 when every property
passed, 1 when one failed, and 2 for a usage error (a policy that cannot be imported, an unknown
property). The policy may also be given as ``path/to/file.py:function``.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

from ..errors import InputError
from .defaults import DEFAULT_MAX_EXAMPLES, DEFAULT_PROPERTIES, DEFAULT_TOL, DOMAIN_NAMES

__all__ = ["COMMANDS", "DOMAIN_CHOICES", "load_policy"]

#: the ``--domain`` choices (the names of [`fairalloc.testing.DOMAINS`][fairalloc.testing.DOMAINS],
#: read without
#: loading hypothesis)
DOMAIN_CHOICES = DOMAIN_NAMES


def load_policy(spec: str) -> Any:
    """The object named by ``module.path:attribute`` or ``file.py:attribute``.

    The attribute may be dotted (``module:Class.method``). Raises
    [`InputError`][fairalloc.InputError] naming ``policy`` when the module cannot be imported or has
    no such attribute.

    Examples
    --------
    >>> load_policy("fairalloc.markets:fisher_market").__name__
    'fisher_market'
    """
    if not isinstance(spec, str) or spec.count(":") != 1:
        raise InputError(f"policy must look like package.module:function, got {spec!r}",
                         argument="policy")
    where, attr = spec.split(":")
    if not where or not attr:
        raise InputError(f"policy must look like package.module:function, got {spec!r}",
                         argument="policy")
    if where.endswith(".py"):
        path = Path(where)
        if not path.is_file():
            raise InputError(f"policy: no file {where}", argument="policy")
        mod_spec = importlib.util.spec_from_file_location(f"_fairalloc_check_{path.stem}", path)
        if mod_spec is None or mod_spec.loader is None:
            raise InputError(f"policy: cannot load {where}", argument="policy")
        module = importlib.util.module_from_spec(mod_spec)
        sys.modules[mod_spec.name] = module
        mod_spec.loader.exec_module(module)
    else:
        if "" not in sys.path and str(Path.cwd()) not in sys.path:
            sys.path.insert(0, "")  # like `python -m`: modules of the working directory
        try:
            module = importlib.import_module(where)
        except ModuleNotFoundError as exc:
            raise InputError(f"policy: cannot import module {where!r} ({exc})",
                             argument="policy") from None
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise InputError(f"policy: {where} has no attribute {attr!r}",
                             argument="policy") from None
    if not callable(obj):
        raise InputError(f"policy: {spec} is not callable", argument="policy")
    return obj


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("policy", help="the policy: package.module:function or file.py:function")
    p.add_argument("--property", "-p", action="append", dest="properties", metavar="NAME",
                   help="a property to check, repeatable (envy-free, sharing-incentive, "
                        "pareto-optimal, proportionality, feasible, market-clearing, "
                        "budget-clearing, strategy-proof, or all); default: "
                        "sharing-incentive, envy-free, pareto-optimal")
    p.add_argument("--domain", default="market", choices=DOMAIN_CHOICES,
                   help="what the policy is given: policy(utility, budget, supply) for the "
                        "market domains, policy(jobs, cluster) for cluster (default: market)")
    p.add_argument("--max-examples", type=int, default=DEFAULT_MAX_EXAMPLES, metavar="N",
                   help=f"instances per property (default {DEFAULT_MAX_EXAMPLES})")
    p.add_argument("--seed", type=int, default=0, help="search seed (default 0)")
    p.add_argument("--tol", type=float, default=DEFAULT_TOL,
                   help=f"relative tolerance (default {DEFAULT_TOL:g})")
    p.add_argument("--no-shrink", action="store_true",
                   help="report the first failing instance without shrinking it")


def _run(args: argparse.Namespace) -> int:
    try:
        from .checks import check_policy
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] == "hypothesis":
            print('fairalloc check: needs hypothesis; pip install "fairalloc[testing]"',
                  file=sys.stderr)
            return 2
        raise
    policy = load_policy(args.policy)
    props = args.properties or list(DEFAULT_PROPERTIES)
    report = check_policy(policy, props if len(props) != 1 else props[0], args.max_examples,
                          args.seed, domain=args.domain, tol=args.tol,
                          shrink=not args.no_shrink)
    print(report)
    return 0 if report.passed else 1


#: the subcommand of this module: (name, help, configure(parser), run(args) -> exit code)
COMMANDS = (
    ("check", "property-check an allocation policy on generated instances (fairalloc.testing)",
     _configure, _run),
)
