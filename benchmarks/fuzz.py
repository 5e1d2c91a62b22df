"""Long fuzz profile over every public entry point of fairalloc (issue #12, point 5).

    python benchmarks/fuzz.py --examples 10000 [--seed 0] [--targets market,plan]
                              [--per-call-timeout 20] [--rescale-instances 5] [--no-rescale]

Draws ``--examples`` hypothesis examples in total across the targets of ``tests/fuzz``
(``tests/fuzz/targets.py``), runs each call under a per-call time budget and classifies it:
ok, typed_error, no_answer, crash, wrong, mutated, writable, hang (``no_answer``: a case its
strategy drew as valid -- no corruption, valid options, no time limit, no tolerance that may
prevent an answer -- on which fairalloc raised SolverError / CertificateError /
InfeasibleError instead of answering; issue #27). Then runs the unit-rescaling checks
(``tests/fuzz/rescale.py``): each family x each factor 10^k, k in {-12, -9, -6, -3, 3, 6, 9, 12}.

Prints the counts per entry point x outcome class with a totals row, the rescaling table
(family x factor: checks, violations, failures), the distinct findings (grouped by entry point,
class and message) and the first failing examples of each class with a one-line reproducer.
Also permutes jobs / buyers / goods (``PERM_FAMILIES``) and checks the answer is permuted
alike. Exit status 1 if any crash / wrong / mutated / writable / hang / rescaling or
permutation violation or failure, no_answer included. Uses rich when it is installed, plain
text otherwise.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.fuzz.core import FAILURES, OUTCOMES, Outcome, drive  # noqa: E402
from tests.fuzz.rescale import (  # noqa: E402
    FACTORS,
    PERM_FAMILIES,
    RESCALE_FAMILIES,
    run_permutation,
    run_rescale,
)
from tests.fuzz.targets import TARGETS  # noqa: E402

SLOW_WEIGHT = 0.25


def _table(title: str, header: list[str], rows: list[list[str]], use_rich: bool) -> None:
    if use_rich:
        from rich.console import Console
        from rich.table import Table

        t = Table(title=title, show_lines=False)
        for i, h in enumerate(header):
            t.add_column(h, justify="left" if i == 0 else "right")
        for r in rows:
            t.add_row(*r)
        Console(width=200).print(t)
        return
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    print(f"\n{title}")
    line = "  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in
                     enumerate(zip(header, widths)))
    print(line)
    print("-" * len(line))
    for r in rows:
        print("  ".join(str(x).ljust(w) if i == 0 else str(x).rjust(w) for i, (x, w) in
                        enumerate(zip(r, widths))))


def _normalise(detail: str) -> str:
    """A message with its numbers, paths and reprs blurred, to group findings."""
    d = re.sub(r"'/tmp/[^']*'", "'<tmp>'", detail)
    d = re.sub(r"-?\d+(\.\d+)?(e[-+]?\d+)?", "#", d)
    return d[:140]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=int, default=10_000,
                    help="examples in total across the targets (default 10000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--targets", default="",
                    help="comma-separated substrings: only targets whose name contains one")
    ap.add_argument("--per-call-timeout", type=float, default=20.0)
    ap.add_argument("--rescale-instances", type=int, default=5,
                    help="instances per rescaling family (0: skip)")
    ap.add_argument("--no-rescale", action="store_true")
    ap.add_argument("--show", type=int, default=3, help="failing examples shown per class")
    ap.add_argument("--plain", action="store_true", help="plain text even if rich is installed")
    args = ap.parse_args(argv)

    try:
        import rich  # noqa: F401
        use_rich = not args.plain
    except ImportError:
        use_rich = False

    wanted = [w.strip() for w in args.targets.split(",") if w.strip()]
    targets = [t for n, t in sorted(TARGETS.items())
               if not wanted or any(w.lower() in n.lower() for w in wanted)]
    if not targets:
        print(f"no target matches {args.targets!r}; targets: {sorted(TARGETS)}")
        return 2
    weights = [t.weight if t.weight is not None else SLOW_WEIGHT if t.slow else 1.0
               for t in targets]
    unit = args.examples / sum(weights)

    t_start = time.perf_counter()
    all_outcomes: list[Outcome] = []
    seconds: dict[str, float] = {}
    harness_errors: list[str] = []
    for t, w in zip(targets, weights):
        n = max(1, round(unit * w))
        t0 = time.perf_counter()
        try:
            outs = drive(t, n, seed=args.seed, timeout=args.per_call_timeout)
        except Exception as exc:  # a bug in the harness's own strategy: say so, go on
            print(f"  {t.name}: HARNESS ERROR {type(exc).__name__}: {exc}", file=sys.stderr)
            harness_errors.append(f"{t.name}: {type(exc).__name__}: {exc}")
            outs = []
        seconds[t.name] = time.perf_counter() - t0
        all_outcomes += outs
        c = Counter(o.outcome for o in outs)
        bad = sum(c[k] for k in FAILURES)
        print(f"  {t.name:34s} {len(outs):6d} calls {seconds[t.name]:7.1f} s"
              f"{'  FAIL ' + str(bad) if bad else ''}", file=sys.stderr, flush=True)

    # --- per entry point x outcome -----------------------------------------------------------
    counts: dict[str, Counter] = defaultdict(Counter)
    nonin: Counter = Counter()
    printed: Counter = Counter()
    unnamed: Counter = Counter()
    valid: Counter = Counter()
    rejected: Counter = Counter()
    for o in all_outcomes:
        counts[o.target][o.outcome] += 1
        printed[o.target] += bool(o.printed)
        unnamed[o.target] += o.unnamed
        valid[o.target] += o.valid
        if o.outcome == "typed_error" and not o.detail.startswith("InputError"):
            nonin[o.target] += 1
        if o.valid and o.outcome == "typed_error":
            rejected[o.target] += 1
    header = ["entry point", "calls", "valid", *OUTCOMES, "typed≠Input", "valid→Input",
              "unnamed", "printed", "s"]
    rows = []
    total: Counter = Counter()
    for t in targets:
        c = counts[t.name]
        total.update(c)
        rows.append([t.name, str(sum(c.values())), str(valid[t.name]),
                     *(str(c[k]) for k in OUTCOMES), str(nonin[t.name]),
                     str(rejected[t.name]), str(unnamed[t.name]), str(printed[t.name]),
                     f"{seconds[t.name]:.1f}"])
    rows.append(["TOTAL", str(sum(total.values())), str(sum(valid.values())),
                 *(str(total[k]) for k in OUTCOMES), str(sum(nonin.values())),
                 str(sum(rejected.values())), str(sum(unnamed.values())),
                 str(sum(printed.values())),
                 f"{sum(seconds.values()):.1f}"])
    _table(f"fuzz: {sum(total.values())} calls over {len(targets)} targets "
           f"(seed {args.seed}, per-call budget {args.per_call_timeout:g} s)", header, rows,
           use_rich)
    print("valid: calls whose strategy drew the case as valid (no corruption, valid options, "
          "no time limit, no\n  tolerance that may prevent an answer).\n"
          "no_answer: a valid case on which fairalloc raised SolverError, CertificateError, "
          "InfeasibleError, ...\n  instead of answering (issue #27; a failure).\n"
          "typed≠Input: typed errors other than InputError on cases not drawn as valid -- "
          "acceptable.\n"
          "valid→Input: valid cases rejected with InputError (informational: a strategy's "
          "notion of valid\n  may be wider than the documented domain; listed below).\n"
          "unnamed: InputErrors whose .argument is None (issue #12: name the argument).\n"
          "printed: calls that wrote to stdout/stderr or raised a numpy RuntimeWarning "
          "(issue #12: solvers\n  silent unless verbose=True; informational, not in the exit "
          "status).")
    groups_r: dict[tuple[str, str], list[Outcome]] = defaultdict(list)
    for o in all_outcomes:
        if o.valid and o.outcome == "typed_error":
            groups_r[(o.target, _normalise(o.detail))].append(o)
    if groups_r:
        print("valid cases rejected with InputError (first per entry point and message):")
        for (tname, _), os_ in sorted(groups_r.items()):
            o = min(os_, key=lambda x: len(x.reproducer))
            print(f"- {tname} x{len(os_)}: {o.detail[:160]}\n    {o.reproducer[:300]}")
    groups_u: dict[tuple[str, str], list[Outcome]] = defaultdict(list)
    for o in all_outcomes:
        if o.unnamed:
            groups_u[(o.target, _normalise(o.detail))].append(o)
    if groups_u:
        print("InputErrors without .argument (first per entry point and message):")
        for (tname, _), os_ in sorted(groups_u.items()):
            o = min(os_, key=lambda x: len(x.reproducer))
            print(f"- {tname} x{len(os_)}: {o.detail[:160]}\n    {o.reproducer[:300]}")
    noisy = [o for o in all_outcomes if o.printed]
    if noisy:
        seen_t: set[str] = set()
        print("first output per entry point:")
        for o in noisy:
            if o.target not in seen_t:
                seen_t.add(o.target)
                print(f"- {o.target}: {o.printed[:160]!r}\n    {o.reproducer[:400]}")

    # --- rescaling -----------------------------------------------------------------------------
    rescale_bad = 0
    findings = []
    if not args.no_rescale and args.rescale_instances > 0:
        fams = [f for n, f in RESCALE_FAMILIES.items() if not wanted or any(
            w.lower() in n.lower() for w in wanted)] if wanted else list(RESCALE_FAMILIES.values())
        factors = (1.0, *FACTORS)
        header = ["family \\ factor", *(f"{f:g}" for f in factors), "total"]
        rows = []
        for fam in fams:
            t0 = time.perf_counter()
            table, fnd = run_rescale(fam, args.rescale_instances, seed=args.seed,
                                     timeout=args.per_call_timeout)
            findings += fnd
            cells = []
            tv = tf = tc = 0
            for f in factors:
                e = table[f]
                tv, tf, tc = tv + e["violations"], tf + e["failures"], tc + e["checks"]
                cells.append(f"{e['checks']}/{e['violations']}/{e['failures']}")
            rows.append([fam.name, *cells, f"{tc}/{tv}/{tf}"])
            rescale_bad += tv + tf
            print(f"  rescale {fam.name:36s} {time.perf_counter() - t0:6.1f} s"
                  f"{'  FAIL ' + str(tv + tf) if tv + tf else ''}", file=sys.stderr, flush=True)
        if rows:
            _table("rescaling: checks/violations/failures per family x factor (factor 1: the "
                   "base instance; a failure there is not a rescaling failure but is listed)",
                   header, rows, use_rich)

        # --- permutation of jobs / buyers / goods -------------------------------------------------
        pfams = [f for n, f in PERM_FAMILIES.items() if not wanted or any(
            w.lower() in n.lower() for w in wanted)]
        rows = []
        for pfam in pfams:
            counts_p, fnd = run_permutation(pfam, args.rescale_instances, seed=args.seed,
                                            timeout=args.per_call_timeout)
            findings += fnd
            rescale_bad += counts_p["violations"] + counts_p["failures"]
            rows.append([pfam.name, str(counts_p["checks"]), str(counts_p["violations"]),
                         str(counts_p["failures"])])
        if rows:
            _table("permutation: the answer is permuted alike", ["family", "checks",
                                                                 "violations", "failures"],
                   rows, use_rich)

    # --- findings ------------------------------------------------------------------------------
    failing = [o for o in all_outcomes if o.outcome in FAILURES]
    groups: dict[tuple[str, str, str], list[Outcome]] = defaultdict(list)
    for o in failing:
        groups[(o.target, o.outcome, _normalise(o.detail))].append(o)
    if groups:
        print(f"\ndistinct findings ({len(groups)} groups: entry point / class / message):")
        for (tname, cls, _), os_ in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            o = min(os_, key=lambda x: len(x.reproducer))
            print(f"- [{cls}] {tname} x{len(os_)}: {o.detail[:220]}\n    {o.reproducer[:3000]}")
    typed = defaultdict(list)
    for o in all_outcomes:
        if o.outcome == "typed_error" and not o.detail.startswith("InputError"):
            typed[(o.target, o.detail.split(":")[0], _normalise(o.detail))].append(o)
    if typed:
        print(f"\ntyped errors other than InputError on cases not drawn as valid ({len(typed)} "
              f"groups; acceptable outcomes -- on valid cases they are no_answer, above):")
        for (tname, etype, _), os_ in sorted(typed.items()):
            o = min(os_, key=lambda x: len(x.reproducer))
            print(f"- {tname} {etype} x{len(os_)}: {o.detail[:200]}\n    {o.reproducer[:500]}")
    for cls in FAILURES:
        shown = [o for o in failing if o.outcome == cls][: args.show]
        if shown:
            print(f"\nfirst {cls} examples:")
            for o in shown:
                print(f"  {o.target}: {o.detail[:220]}\n    {o.reproducer[:600]}")
    if findings:
        print("\nrescaling / permutation findings (first per family x kind):")
        seen = set()
        for fnd_ in findings:
            if (fnd_.family, fnd_.kind) in seen:
                continue
            seen.add((fnd_.family, fnd_.kind))
            print(f"- [{fnd_.kind}] {fnd_.family} x{fnd_.factor:g}: {fnd_.detail[:200]}\n"
                  f"    {fnd_.reproducer[:600]}")
    elapsed = time.perf_counter() - t_start
    n_fail = len(failing)
    print(f"\n{len(all_outcomes)} calls, {n_fail} failing, {rescale_bad} rescaling "
          f"violations/failures, {elapsed:.0f} s")
    for h in harness_errors:
        print(f"HARNESS ERROR (fix tests/fuzz): {h}")
    return 1 if n_fail or rescale_bad or harness_errors else 0


if __name__ == "__main__":
    sys.exit(main())
