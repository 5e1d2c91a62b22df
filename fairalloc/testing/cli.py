"""``fairalloc check``: property-check a policy from a shell (usable in any CI).

``fairalloc check package.module:policy --property envy-free --property sharing-incentive``
imports the policy, runs `fairalloc.testing.check_policy` and
prints a pass/fail table and the shrunk counterexamples. The exit code is 0 when every property
passed, 1 when one failed, and 2 for a usage error (a policy that cannot be imported -- no such
module or file, or one that fails to import: a syntax error, a missing dependency --, an unknown
property). The policy may also be given as ``path/to/file.py:function``. A line per checked
property goes to stderr as the check runs (``--no-progress`` silences it).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
import time
from pathlib import Path
from typing import Any

from ..errors import InputError
from .defaults import DEFAULT_MAX_EXAMPLES, DEFAULT_PROPERTIES, DEFAULT_TOL, DOMAIN_NAMES
from .tolerance import parse_tolerance_option

__all__ = ["COMMANDS", "DOMAIN_CHOICES", "load_policy"]

#: the ``--domain`` choices (the names of `fairalloc.testing.DOMAINS`,
#: read without
#: loading hypothesis)
DOMAIN_CHOICES = DOMAIN_NAMES


def load_policy(spec: str) -> Any:
    """The object named by ``module.path:attribute`` or ``file.py:attribute``.

    The attribute may be dotted (``module:Class.method``). Raises
    `fairalloc.InputError` naming ``policy`` when the module cannot be imported or has
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
        try:
            mod_spec.loader.exec_module(module)
        except Exception as exc:  # the user's file: any failure is a usage error
            sys.modules.pop(mod_spec.name, None)
            raise InputError(f"policy: {where} fails to import: {_failure(exc)}",
                             argument="policy") from None
    else:
        if "" not in sys.path and str(Path.cwd()) not in sys.path:
            sys.path.insert(0, "")  # like `python -m`: modules of the working directory
        try:
            module = importlib.import_module(where)
        except ModuleNotFoundError as exc:
            if exc.name is not None and where.startswith(exc.name):
                raise InputError(f"policy: cannot import module {where!r} ({exc})",
                                 argument="policy") from None
            raise InputError(f"policy: module {where!r} fails to import: {_failure(exc)}",
                             argument="policy") from None
        except Exception as exc:  # the user's module: any failure is a usage error
            raise InputError(f"policy: module {where!r} fails to import: {_failure(exc)}",
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


def _failure(exc: BaseException) -> str:
    """``exc`` in one line, with the file and line of a syntax error."""
    if isinstance(exc, SyntaxError):
        return f"SyntaxError: {exc.msg} ({Path(exc.filename or '?').name}, line {exc.lineno})"
    return " ".join(f"{type(exc).__name__}: {exc}".split())


def _domain_name(text: str) -> str:
    if ":" in text or text.strip().lower() in DOMAIN_CHOICES:
        return text
    raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from "
                                     f"{', '.join(DOMAIN_CHOICES)} or module:DOMAIN)")


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("policy", help="the policy: package.module:function or file.py:function")
    p.add_argument("--property", "-p", action="append", dest="properties", metavar="NAME",
                   help="a property to check, repeatable (envy-free, sharing-incentive, "
                        "pareto-optimal, proportionality, feasible, market-clearing, "
                        "budget-clearing, strategy-proof, or all); default: "
                        "sharing-incentive, envy-free, pareto-optimal")
    p.add_argument("--domain", default="market", type=_domain_name, metavar="DOMAIN",
                   help="what the policy is given: policy(utility, budget, supply) for the "
                        "market domains, policy(jobs, cluster) for cluster (default: market); "
                        f"one of {', '.join(DOMAIN_CHOICES)} or module:DOMAIN (a domain object)")
    p.add_argument("--max-examples", type=int, default=DEFAULT_MAX_EXAMPLES, metavar="N",
                   help=f"instances per property (default {DEFAULT_MAX_EXAMPLES})")
    p.add_argument("--seed", type=int, default=0, help="search seed (default 0)")
    p.add_argument("--tol", action="append", default=[], metavar="[PROP=]RTOL[,ATOL]",
                   help=f"tolerance, repeatable: RTOL for every property (default "
                        f"{DEFAULT_TOL:g}), or PROP=RTOL[,ATOL] for one (e.g. "
                        "envy-free=1e-4,1e-9): RTOL relative to the property's own reference, "
                        "ATOL a fraction of the instance's value scale")
    p.add_argument("--no-shrink", action="store_true",
                   help="report the first failing instance without shrinking it")
    p.add_argument("--no-progress", action="store_true",
                   help="no line per checked property on stderr")
    p.add_argument("--domain-option", action="append", default=[], metavar="NAME=VALUE",
                   help="a domain option, repeatable (e.g. density=1, entities=1,3, "
                        "max_scale_factor=4, weighted=true); see ClusterDomain / MarketDomain")
    p.add_argument("--expect-failure", action="append", default=[], metavar="NAME=REASON",
                   help="a property known to fail, with the reason (xfail; strict: an "
                        "unexpected pass fails the check), repeatable")
    p.add_argument("--isolate", action="store_true",
                   help="run each policy call in a child process with a per-call deadline "
                        "(a crash or hang is reported as a failure of 'runs')")
    p.add_argument("--deadline", type=float, default=None, metavar="SECONDS",
                   help="seconds one isolated call may take (default 60)")


def _run(args: argparse.Namespace) -> int:
    try:
        from .checks import check_policy
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] == "hypothesis":
            print('fairalloc check: needs hypothesis; pip install ".[testing]" in the checkout',
                  file=sys.stderr)
            return 2
        raise
    from .checks import policy_name
    from .domains import property_names
    from .report import PolicyReport, PropertyReport

    if args.max_examples < 1:
        raise InputError(f"--max-examples must be a positive integer, got {args.max_examples}",
                         argument="--max-examples")
    policy = load_policy(args.policy)
    domain = _domain(args.domain, args.domain_option)
    expected = _pairs(args.expect_failure, "--expect-failure")
    tol = parse_tolerance_option(args.tol) if args.tol else DEFAULT_TOL
    extra: dict[str, Any] = {"expected_failures": expected or None,
                             "isolate": True if args.isolate else None}
    if args.deadline is not None:
        extra["deadline"] = args.deadline
    props = args.properties or list(DEFAULT_PROPERTIES)
    names = property_names(props, domain)
    named = [p for p in props if p.strip().lower() != "all"]
    explicit = set(property_names(named, domain)) if named else set()
    results: list[PropertyReport] = []
    report: PolicyReport | None = None
    t0 = time.perf_counter()
    # one property at a time (the same instances as one call: each property's search is
    # seeded alike), so that a line per property reports progress
    for i, name in enumerate(names, start=1):
        try:
            report = check_policy(policy, [name], args.max_examples, args.seed,
                                  domain=domain, tol=tol, shrink=not args.no_shrink,
                                  **extra)
            results.extend(report.results)
        except InputError as exc:
            if name in explicit or exc.argument != "properties":
                raise
            results.append(PropertyReport(name, "skipped", 0, 0, 0.0, None,
                                          "the policy returns no prices; return (allocation, "
                                          "prices) or an object with .prices to check it"))
        if not args.no_progress:
            r = results[-1]
            print(f"[{i}/{len(names)}] {name}: {r.status} ({r.examples} examples, "
                  f"{r.seconds:.1f} s; {time.perf_counter() - t0:.0f} s elapsed)",
                  file=sys.stderr, flush=True)
    full = PolicyReport(policy_name(policy) if report is None else report.policy,
                        str(args.domain) if report is None else report.domain, tuple(results),
                        args.max_examples if report is None else report.max_examples,
                        args.seed if report is None else report.seed,
                        "" if report is None else report.profile)
    print(full)
    return 0 if full.passed else 1


def _pairs(items: list[str], flag: str) -> dict[str, str]:
    out = {}
    for i, item in enumerate(items):
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise InputError(f"{flag} must look like NAME=VALUE, got {item!r}", argument=flag,
                             index=(i,))
        out[name.strip()] = value.strip()
    return out


def _value(text: str) -> Any:
    """``1`` -> 1, ``0.5`` -> 0.5, ``true`` -> True, ``none`` -> None, ``1,3`` -> (1, 3)."""
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low == "none":
        return None
    if "," in text:
        return tuple(_value(t) for t in text.split(","))
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _domain(name: str, options: list[str]) -> Any:
    """The domain ``--domain`` names, or ``module:DOMAIN`` (a domain object), with the
    ``--domain-option`` values applied."""
    from .domains import ClusterDomain, MarketDomain, resolve_domain

    kw = {k: _value(v) for k, v in _pairs(options, "--domain-option").items()}
    if ":" in name:
        obj = _load_object(name)
        if kw:
            raise InputError("--domain-option applies to a named domain, not to "
                             f"{name}", argument="--domain-option")
        return resolve_domain(obj)
    if not kw:
        return name
    key = name.strip().lower()
    base = {"leontief": {"kind": "leontief"},
            "volatile": {"rounds": (2, 3), "n": (1, 3), "m": (1, 2)},
            "volatile-leontief": {"kind": "leontief", "rounds": (2, 3), "n": (1, 3),
                                  "m": (1, 2)}}.get(key, {})
    cls = ClusterDomain if key == "cluster" else MarketDomain
    try:
        return cls(**{**base, **kw})
    except TypeError as exc:
        raise InputError(f"--domain-option: {exc}", argument="--domain-option") from None


def _load_object(spec: str) -> Any:
    where, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(where)
    except ImportError as exc:
        raise InputError(f"--domain: cannot import module {where!r} ({exc})",
                         argument="--domain") from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise InputError(f"--domain: {where} has no attribute {attr!r}",
                         argument="--domain") from None


#: the subcommand of this module: (name, help, configure(parser), run(args) -> exit code)
COMMANDS = (
    ("check", "property-check an allocation policy on generated instances (fairalloc.testing)",
     _configure, _run),
)
