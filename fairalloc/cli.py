"""The ``fairalloc`` command.

``fairalloc demo`` solves a built-in example -- six training jobs buying time on three GPU types
in a Fisher market -- and prints the allocation, the prices, the certificate and the fairness
checks. It needs no data files and no network.

The other subcommands live with their packages: every module of `COMMAND_MODULES`
exports ``COMMANDS``, a tuple of ``(name, help, configure(parser), run(args) -> exit code)``,
which `main` reads (the command modules import nothing from this module, so the
registration is acyclic). `register` adds a subcommand from elsewhere.

Exit codes: 0 success, 1 a check failed (``demo``'s certificate, ``check``'s properties),
2 a user error -- reported as one line on stderr, ``fairalloc COMMAND: error: MESSAGE``, the
message naming the option at fault, never a traceback -- and 130 an interrupt.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ._tables import format_table

__all__ = ["COMMAND_MODULES", "main", "register"]

#: modules whose ``COMMANDS`` table adds subcommands (skipped when not installed)
COMMAND_MODULES = ("fairalloc.testing.cli", "fairalloc.sim.cli")
#: milliseconds per second (the demo prints the solve time in ms)
MS_PER_SECOND = 1e3
#: exit status of a user error (argparse's too)
USAGE_ERROR = 2
#: exit status after Ctrl-C (128 + SIGINT)
INTERRUPTED = 130


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``fairalloc simulate: error: argument --gpus: ...``."""

    def error(self, message: str) -> Any:  # argparse's signature: NoReturn
        self.exit(USAGE_ERROR, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

# subcommand name -> (help, configure(parser), run(args) -> exit code); other modules register
_COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None],
                           Callable[[argparse.Namespace], int]]] = {}


def register(name: str, help: str, configure: Callable[[argparse.ArgumentParser], None],
             run: Callable[[argparse.Namespace], int]) -> None:
    """Register a subcommand (the modules of `COMMAND_MODULES` export a ``COMMANDS``
    table instead).

    Parameters
    ----------
    name : str
        The subcommand (``fairalloc NAME ...``); registering a name again replaces it.
    help : str
        Its one-line help, shown by ``fairalloc --help`` and as its description.
    configure : callable
        ``configure(parser)`` adds the subcommand's arguments to its `argparse.ArgumentParser`.
    run : callable
        ``run(args) -> int`` runs it on the parsed `argparse.Namespace`; the exit status.

    Examples
    --------
    >>> def configure(parser):
    ...     parser.add_argument("who")
    >>> def run(args):
    ...     print(f"hello {args.who}")
    ...     return 0
    >>> register("hello", "Say hello.", configure, run)
    >>> main(["hello", "world"])
    hello world
    0
    >>> del _COMMANDS["hello"]
    """
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


def _demo(args: argparse.Namespace) -> int:
    from .markets import fisher_market
    from .properties import check_market

    r = fisher_market(DEMO_THROUGHPUT, DEMO_BUDGET, DEMO_SUPPLY, method=args.method)
    print("fairalloc demo: 6 jobs buy GPU time on 3 accelerator types (Fisher market,")
    print("Eisenberg-Gale program; utilities are throughputs, budgets are priorities)\n")
    header = ["job", "budget", *(f"{t} GPUs" for t in DEMO_TYPES), "steps/s", "spent"]
    rows = [[DEMO_JOBS[i], f"{DEMO_BUDGET[i]:g}", *(f"{x:.3f}" for x in r.allocation[i]),
             f"{r.utility[i]:.3f}", f"{r.spending[i]:.3f}"] for i in range(len(DEMO_JOBS))]
    print(format_table(header, rows))
    print()
    print(format_table(["type", "supply", "price", "sold"],
                 [[t, f"{DEMO_SUPPLY[j]:g}", f"{r.prices[j]:.4f}",
                   f"{r.allocation[:, j].sum():.3f}"] for j, t in enumerate(DEMO_TYPES)]))
    c = r.certificate
    print(f"\ncertificate: duality gap {c.gap:.2e} (relative {c.relative_gap:.1e}), "
          f"primal residual {c.primal_residual:.1e}; method {r.stats.method}, "
          f"{r.stats.seconds * MS_PER_SECOND:.0f} ms")
    checks = check_market(r, DEMO_THROUGHPUT, supply=DEMO_SUPPLY)
    print("checks: " + ", ".join(f"{k} {'ok' if v else 'FAILED'}" for k, v in checks.items()))
    return 0 if all(checks.values()) and c.ok else 1


def _configure_demo(p: argparse.ArgumentParser) -> None:
    p.add_argument("--method", default="auto", choices=("auto", "fast", "conic", "cvxpy"),
                   help="market solution method (default: auto)")


register("demo", "solve a built-in example market and print allocation, prices, certificate",
         _configure_demo, _demo)


def _load_plugins() -> None:
    """Add the subcommands of `COMMAND_MODULES`, where those modules exist."""
    import importlib

    for module in COMMAND_MODULES:
        try:
            commands = importlib.import_module(module).COMMANDS
        except ModuleNotFoundError as exc:
            if exc.name is None or not module.startswith(exc.name):
                raise
            continue
        for name, help_text, configure, run in commands:
            register(name, help_text, configure, run)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fairalloc`` command; returns the exit code.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after the program name (default ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status: the subcommand's own, `USAGE_ERROR` (2) after a fairalloc or OS
        error (reported in one line on stderr), `INTERRUPTED` after Ctrl-C or SIGTERM.
        ``--help`` and argument errors exit through `SystemExit` as argparse does.

    Examples
    --------
    >>> main(["--version"]) == 0  # doctest: +ELLIPSIS
    fairalloc ...
    True
    """
    if list(sys.argv[1:] if argv is None else argv) == ["--version"]:
        from . import __version__  # at once: no subcommand (and no solver) is imported

        print(f"fairalloc {__version__}")
        return 0
    _load_plugins()
    # (the docstring's first line, without its reST literal quotes: help is plain text)
    parser = _Parser(prog="fairalloc", description=__doc__.split("\n\n")[0].replace("``", ""))
    from . import __version__

    parser.add_argument("--version", action="version", version=f"fairalloc {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (help_text, configure, _run) in _COMMANDS.items():
        configure(sub.add_parser(name, help=help_text, description=help_text))
    args = parser.parse_args(argv)
    from .errors import FairallocError

    handlers = _stop_on_sigterm()
    try:
        return _COMMANDS[args.command][2](args)
    except (FairallocError, OSError) as exc:  # user errors: one line, exit status 2
        message = " ".join(str(exc).split())
        print(f"fairalloc {args.command}: error: {message} ({type(exc).__name__})",
              file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: one line, no traceback
        if handlers is not None:  # a second one must not cut the report short
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        said = " ".join(str(exc).split()) or "interrupted"
        start = "\n" if sys.stderr.isatty() else ""  # past the ^C on a terminal
        print(f"{start}fairalloc {args.command}: {said}", file=sys.stderr)
        return INTERRUPTED
    finally:
        if handlers is not None:
            signal.signal(signal.SIGINT, handlers[0])
            signal.signal(signal.SIGTERM, handlers[1])


def _stop_on_sigterm() -> tuple[Any, Any] | None:
    """Make a SIGTERM stop the command like Ctrl-C (a `KeyboardInterrupt`, which every command
    cleans up after); return the SIGINT and SIGTERM handlers to restore (``None`` off the main
    thread, where Python cannot set handlers)."""
    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    try:
        term = signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main thread
        return None
    return signal.getsignal(signal.SIGINT), term


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
