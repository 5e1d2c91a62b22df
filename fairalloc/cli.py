"""The ``fairalloc`` command.

``fairalloc demo`` solves a built-in example -- six training jobs buying time on three GPU types
in a Fisher market -- and prints the allocation, the prices, the certificate and the fairness
checks. It needs no data files and no network.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["main", "register"]

# subcommand name -> (help, configure(parser), run(args) -> exit code); other modules register
_COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None],
                           Callable[[argparse.Namespace], int]]] = {}


def register(name: str, help: str, configure: Callable[[argparse.ArgumentParser], None],
             run: Callable[[argparse.Namespace], int]) -> None:
    """Register a subcommand (used by :mod:`fairalloc.testing` and the simulator)."""
    _COMMANDS[name] = (help, configure, run)


# steps/s of six jobs on (v100, p100, k80), after Gavel's Figure 1 shape: some jobs gain a lot
# from a V100, others hardly; budgets are priority weights.
DEMO_JOBS = ("resnet50", "transformer", "lm", "recommend", "a3c", "cyclegan")
DEMO_TYPES = ("v100", "p100", "k80")
DEMO_THROUGHPUT = np.array([
    [10.2, 5.7, 1.6],
    [8.1, 4.4, 1.2],
    [5.0, 3.9, 2.6],
    [3.1, 2.9, 2.4],
    [2.2, 1.9, 1.6],
    [7.4, 3.3, 0.9],
])
DEMO_BUDGET = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 2.0])
DEMO_SUPPLY = np.array([2.0, 2.0, 4.0])  # GPUs per type


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    line = "  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(header,
                                                                                     widths)))
    out = [line, "-" * len(line)]
    for r in rows:
        out.append("  ".join(c.rjust(w) if i else c.ljust(w)
                             for i, (c, w) in enumerate(zip(r, widths))))
    return "\n".join(out)


def _demo(args: argparse.Namespace) -> int:
    from .markets import fisher_market
    from .properties import check_market

    r = fisher_market(DEMO_THROUGHPUT, DEMO_BUDGET, DEMO_SUPPLY, method=args.method)
    print("fairalloc demo: 6 jobs buy GPU time on 3 accelerator types (Fisher market,")
    print("Eisenberg-Gale program; utilities are throughputs, budgets are priorities)\n")
    header = ["job", "budget", *(f"{t} GPUs" for t in DEMO_TYPES), "steps/s", "spent"]
    rows = [[DEMO_JOBS[i], f"{DEMO_BUDGET[i]:g}", *(f"{x:.3f}" for x in r.allocation[i]),
             f"{r.utility[i]:.3f}", f"{r.spending[i]:.3f}"] for i in range(len(DEMO_JOBS))]
    print(_table(header, rows))
    print()
    print(_table(["type", "supply", "price", "sold"],
                 [[t, f"{DEMO_SUPPLY[j]:g}", f"{r.prices[j]:.4f}",
                   f"{r.allocation[:, j].sum():.3f}"] for j, t in enumerate(DEMO_TYPES)]))
    c = r.certificate
    print(f"\ncertificate: duality gap {c.gap:.2e} (relative {c.relative_gap:.1e}), "
          f"primal residual {c.primal_residual:.1e}; method {r.stats.method}, "
          f"{r.stats.seconds * 1e3:.0f} ms")
    checks = check_market(r, DEMO_THROUGHPUT, supply=DEMO_SUPPLY)
    print("checks: " + ", ".join(f"{k} {'ok' if v else 'FAILED'}" for k, v in checks.items()))
    return 0 if all(checks.values()) and c.ok else 1


def _configure_demo(p: argparse.ArgumentParser) -> None:
    p.add_argument("--method", default="auto", choices=("auto", "fast", "conic", "cvxpy"),
                   help="market solution method (default: auto)")


register("demo", "solve a built-in example market and print allocation, prices, certificate",
         _configure_demo, _demo)


def _load_plugins() -> None:
    """Import the modules that register further subcommands, where they exist."""
    import importlib

    for module in ("fairalloc.testing.cli", "fairalloc.sim.cli"):
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name is None or not module.startswith(exc.name):
                raise


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fairalloc`` command; returns the exit code."""
    _load_plugins()
    parser = argparse.ArgumentParser(prog="fairalloc", description=__doc__.split("\n\n")[0])
    from . import __version__

    parser.add_argument("--version", action="version", version=f"fairalloc {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (help_text, configure, _run) in _COMMANDS.items():
        configure(sub.add_parser(name, help=help_text, description=help_text))
    args = parser.parse_args(argv)
    from .errors import FairallocError

    try:
        return _COMMANDS[args.command][2](args)
    except (FairallocError, OSError) as exc:  # user errors: one line, exit status 2
        message = " ".join(str(exc).split())
        print(f"fairalloc {args.command}: {type(exc).__name__}: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
