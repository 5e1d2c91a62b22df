"""Cost and reach of ``fairalloc.testing.check_policy`` on the project's own policies.

For each policy, every property of its domain is checked with ``max_examples`` examples (seed
0, deterministic profile) twice in one run, side by side:

* **shared** -- the default: the properties are searched with the same seed, so they draw the
  same instances, and one cache of policy answers serves all of them (and the shrink phases);
* **separate** -- the policy is called afresh for every example of every property, as separate
  ``@given`` tests per property would do.

Printed per policy: the properties that failed (each with the examples hypothesis needed before
the first failure and the shrink steps after it), the number of policy calls and the seconds of
both modes. The two modes must find the same failures on the same shrunk instances (checked).

Run:  python benchmarks/property_checks.py [--examples 50]
"""

from __future__ import annotations

import argparse
import functools
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import fairalloc as fa
from fairalloc.testing import check_policy, checks


def dictator(utility: np.ndarray, budget: np.ndarray, supply: np.ndarray) -> np.ndarray:
    """Everything to buyer 0."""
    x = np.zeros_like(utility)
    x[0] = supply
    return x


def budget_share(utility: np.ndarray, budget: np.ndarray, supply: np.ndarray) -> np.ndarray:
    """Each buyer's budget share of every good."""
    return np.multiply.outer(budget / budget.sum(), supply)


POLICIES: list[tuple[str, Callable[..., Any], str]] = [
    ("fisher_market", fa.fisher_market, "market"),
    ("fisher_market leontief", functools.partial(fa.fisher_market, kind="leontief"),
     "leontief"),
    ("budget_share", budget_share, "market"),
    ("dictator", dictator, "market"),
    ("max_total_throughput", fa.max_total_throughput, "cluster"),
    ("fifo", fa.fifo, "cluster"),
    ("max_min_fairness", fa.max_min_fairness, "cluster"),
    ("max_min water_filling", functools.partial(fa.max_min_fairness, water_filling=True),
     "cluster"),
]


class _Counted:
    def __init__(self, policy: Callable[..., Any]) -> None:
        self.policy, self.calls = policy, 0
        functools.update_wrapper(self, policy)

    def __call__(self, *args: Any) -> Any:
        self.calls += 1
        return self.policy(*args)


def _uncached(self: Any, inst: Any) -> Any:
    return self.domain.call(self.policy, inst)


def run(policy: Callable[..., Any], domain: str, examples: int, shared: bool
        ) -> tuple[Any, int, float]:
    counted = _Counted(policy)
    original = checks.PropertySearch.outcome
    if not shared:
        checks.PropertySearch.outcome = _uncached  # type: ignore[method-assign]
    try:
        t0 = time.perf_counter()
        report = check_policy(counted, "all", max_examples=examples, domain=domain)
        seconds = time.perf_counter() - t0
    finally:
        checks.PropertySearch.outcome = original  # type: ignore[method-assign]
    return report, counted.calls, seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=int, default=50)
    args = ap.parse_args()
    header = ("policy", "domain", "failed (examples+shrinks)", "calls shared",
              "calls separate", "s shared", "s separate")
    rows = []
    for name, policy, domain in POLICIES:
        shared, calls_s, sec_s = run(policy, domain, args.examples, True)
        separate, calls_p, sec_p = run(policy, domain, args.examples, False)
        for a, b in zip(shared.results, separate.results):
            assert a.status == b.status, (name, a.name)
            if a.counterexample is not None and b.counterexample is not None:
                assert a.counterexample.instance.key() == b.counterexample.instance.key()
        failed = ", ".join(f"{r.name} ({r.examples}+{r.shrink_steps})"
                           for r in shared.failures) or "-"
        rows.append((name, domain, failed, str(calls_s), str(calls_p), f"{sec_s:.1f}",
                     f"{sec_p:.1f}"))
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print(f"check_policy(policy, 'all', max_examples={args.examples}, seed=0): every "
          "property of the domain")
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))


if __name__ == "__main__":
    main()
