"""Reports of the property checks: `fairalloc.testing.Counterexample`,
`fairalloc.testing.PropertyReport`,
`fairalloc.testing.PolicyReport` and
`fairalloc.testing.PropertyCheckError`.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Counterexample", "PolicyReport", "PropertyCheckError", "PropertyReport"]

#: significant digits of the arrays a counterexample prints
PRINT_PRECISION = 6

# ============================================================================================
# reports
# ============================================================================================
def _fmt(arr: np.ndarray | None) -> str:
    if arr is None:
        return "None"
    return np.array2string(np.asarray(arr), precision=PRINT_PRECISION, separator=", ",
                           floatmode="maxprec")


def _indent(text: str, pad: str) -> str:
    return text.replace("\n", "\n" + pad)


@dataclass(frozen=True, eq=False)
class Counterexample:
    """A (shrunk) instance on which a property fails, in readable form.

    Parameters
    ----------
    property : str
    domain : str
    instance : MarketInstance or ClusterInstance
        The policy's input (``instance.describe()``, ``instance.as_code()``).
    allocation : ndarray or None
        What the policy returned (``None`` when it raised).
    prices : ndarray or None
    violation : float
        Size of the violation in the property's own units (utility, throughput, money, goods):
        how much ``agent`` is hurt (envy, shortfall, Pareto gain, gain from lying).
    agent : int or None
        The agent hurt most (the liar, for ``strategy_proof``).
    other : int or None
        The envied agent (``envy_free``).
    message : str
        One sentence: who is hurt, by how much, compared with what.
    error : BaseException or None
        The exception the policy raised, if it did.
    misreport : ndarray or None
        ``strategy_proof``: the reported row that pays off.
    misreport_allocation : ndarray or None
        ``strategy_proof``: the policy's allocation for the misreport.
    outcome : str
        ``runs``: how the call failed -- ``"raised"``, ``"crash"``, ``"timeout"`` or
        ``"unusable"`` (an answer that is not an allocation); ``""`` otherwise.
    improvement : ndarray or None
        ``pareto_optimal``: a feasible allocation that makes someone better off and nobody
        worse off.

    Examples
    --------
    >>> import numpy as np
    >>> from fairalloc.testing import check_policy
    >>> def dictator(utility, budget, supply):   # everything to buyer 0
    ...     x = np.zeros_like(utility)
    ...     x[0] = supply
    ...     return x
    >>> report = check_policy(dictator, ["envy_free", "feasible"], max_examples=20)
    >>> cx = report.counterexample
    >>> cx.property, cx.domain, cx.agent, cx.other, cx.violation
    ('envy_free', 'market', 1, 0, 1.0)
    >>> cx.message
    "buyer 1 values buyer 0's bundle at 1 (budget 1) above its own 0 (budget 1)"
    """

    property: str
    domain: str
    instance: Any
    allocation: np.ndarray | None
    prices: np.ndarray | None
    violation: float
    agent: int | None
    other: int | None
    message: str
    error: BaseException | None = None
    misreport: np.ndarray | None = None
    misreport_allocation: np.ndarray | None = None
    outcome: str = ""
    improvement: np.ndarray | None = None

    def __str__(self) -> str:
        lines = [f"{self.property} fails: {self.message}"]
        if self.error is None and np.isfinite(self.violation):
            who = "" if self.agent is None else f" ({self.domain_agent()} {self.agent})"
            lines.append(f"  violation: {self.violation:.6g}{who}")
        lines.append("instance: " + _indent(self.instance.describe(), "  "))
        if self.error is not None:
            lines.append(f"the policy raised {type(self.error).__name__}: {self.error}")
        else:
            head = "allocation = "
            lines.append(head + _indent(_fmt(self.allocation), " " * len(head)))
            if self.prices is not None:
                lines.append("prices     = " + _fmt(self.prices))
        if self.misreport is not None:
            lines.append(f"misreport of {self.domain_agent()} {self.agent} = "
                         + _fmt(self.misreport))
            head = "allocation for the misreport = "
            lines.append(head + _indent(_fmt(self.misreport_allocation), " " * len(head)))
        if self.improvement is not None:
            head = "improving allocation = "
            lines.append(head + _indent(_fmt(self.improvement), " " * len(head)))
        lines.append("reproduce: " + self.instance.as_code())
        return "\n".join(lines)

    def domain_agent(self) -> str:
        """``"job"`` in the cluster domain, else ``"buyer"``."""
        return "job" if self.domain == "cluster" else "buyer"


@dataclass(frozen=True, eq=False)
class PropertyReport:
    """Outcome of one property over the examples hypothesis tried.

    Parameters
    ----------
    name : str
    status : {"passed", "failed", "skipped", "xfailed", "xpassed"}
        ``xfailed``: failed as declared in ``expected_failures`` (not a failure);
        ``xpassed``: declared but passed (a failure: strict); ``skipped``: not applicable
        (no prices) or never checkable (the policy gave no feasible answer).
    examples : int
        Instances checked before the first failure (all of them when it passed).
    shrink_steps : int
        Further instances tried while shrinking the counterexample.
    seconds : float
    counterexample : Counterexample or None
    note : str
        Why a property was skipped, or that the policy looked nondeterministic.

    Examples
    --------
    >>> import numpy as np
    >>> from fairalloc.testing import check_policy
    >>> def dictator(utility, budget, supply):   # everything to buyer 0
    ...     x = np.zeros_like(utility)
    ...     x[0] = supply
    ...     return x
    >>> report = check_policy(dictator, ["envy_free", "feasible"], max_examples=20)
    >>> [(r.name, r.status, r.passed) for r in report.results]
    [('envy_free', 'failed', False), ('feasible', 'passed', True)]
    >>> report.results[1].counterexample is None, report.results[1].examples > 0
    (True, True)
    """

    name: str
    status: str
    examples: int
    shrink_steps: int
    seconds: float
    counterexample: Counterexample | None = None
    note: str = ""

    @property
    def passed(self) -> bool:
        """Whether the property did not fail (skipped and xfailed count as not failed;
        xpassed, an expected failure that passed, fails)."""
        return self.status not in ("failed", "xpassed")


@dataclass(frozen=True, eq=False)
class PolicyReport:
    """What `fairalloc.testing.check_policy` found.

    Parameters
    ----------
    policy : str
        The policy's name.
    domain : str
    results : tuple of PropertyReport
        One per property, in the order asked.
    max_examples, seed : int
        Examples per property and the seed used (replay with ``check_policy(..., seed=)``).
    profile : str
        The hypothesis profile (``FAIRALLOC_HYPOTHESIS_PROFILE``).

    Examples
    --------
    >>> import numpy as np
    >>> from fairalloc.testing import check_policy
    >>> def dictator(utility, budget, supply):   # everything to buyer 0
    ...     x = np.zeros_like(utility)
    ...     x[0] = supply
    ...     return x
    >>> report = check_policy(dictator, ["envy_free", "feasible"], max_examples=20)
    >>> report.policy.endswith("dictator"), report.domain, report.passed, report.seed
    (True, 'market', False, 0)
    """

    policy: str
    domain: str
    results: tuple[PropertyReport, ...]
    max_examples: int
    seed: int
    profile: str

    @property
    def passed(self) -> bool:
        """True when no property failed."""
        return all(r.passed for r in self.results)

    @property
    def failures(self) -> tuple[PropertyReport, ...]:
        """The properties that failed."""
        return tuple(r for r in self.results if not r.passed)

    @property
    def counterexample(self) -> Counterexample | None:
        """The shrunk counterexample of the first failing property (``None`` if all pass)."""
        return next((r.counterexample for r in self.failures), None)

    def __bool__(self) -> bool:
        return self.passed

    def __getitem__(self, name: str) -> PropertyReport:
        for r in self.results:
            if r.name == name:
                return r
        raise KeyError(name)

    def table(self) -> str:
        """The pass/fail table, one row per property."""
        header = ("property", "result", "examples", "violation", "seconds")
        rows = []
        for r in self.results:
            cx = r.counterexample
            viol = "-" if cx is None else (cx.outcome or f"{cx.violation:.4g}")
            rows.append((r.name, r.status if r.passed else r.status.upper(),
                         str(r.examples), viol, f"{r.seconds:.2f}"))
        widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]

        def line(cells: Sequence[str]) -> str:
            return "  ".join(c.ljust(w) if i < 2 else c.rjust(w)
                             for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

        return "\n".join([line(header), line(["-" * w for w in widths])]
                         + [line(row) for row in rows])

    def __str__(self) -> str:
        head = (f"fairalloc property checks of {self.policy} ({self.domain} domain; "
                f"{self.max_examples} examples per property, seed {self.seed}, "
                f"{self.profile} profile)")
        parts = [head, "", self.table()]
        notes = [f"  {r.name}: {r.note}" for r in self.results if r.note]
        if notes:
            parts += ["", "notes:", *notes]
        setup = self.setup()
        if setup and any(r.counterexample is not None for r in self.results):
            parts += ["", "to reproduce a counterexample, run first:", "    " + setup]
        for r in self.results:
            if r.counterexample is not None:
                tag = "" if r.status == "failed" else f", {r.status}"
                parts += ["", f"--- counterexample for {r.name} (shrunk{tag}) ---",
                          str(r.counterexample)]
        verdict = "passed" if self.passed else (
            f"FAILED: {', '.join(r.name for r in self.failures)}")
        parts += ["", verdict]
        return "\n".join(parts)

    def setup(self) -> str:
        """The imports that make each ``reproduce:`` line paste-ready (``policy`` bound to
        the checked policy when it is importable by name; ``""`` otherwise)."""
        module, _, name = self.policy.rpartition(".")
        if not module or not name.isidentifier() or "<" in self.policy or \
                module.startswith("_fairalloc_check_"):
            return ""
        try:
            if importlib.util.find_spec(module) is None:
                return ""
        except (ImportError, ValueError):  # e.g. "pkg.mod.Class": not a module
            return ""
        return (f"import numpy as np; import fairalloc as fa; from {module} import {name} "
                "as policy")

    def __repr__(self) -> str:
        status = "passed" if self.passed else f"failed={[r.name for r in self.failures]}"
        return f"PolicyReport({self.policy}, {self.domain}, {status})"

    def _repr_html_(self) -> str:
        """The notebook view: the verdict, the pass/fail table (one row per property), then
        each failure's shrunk counterexample."""
        import html

        from .._display import Table, Verdict, View, to_html

        rows = [r.name for r in self.results]
        viol = ["" if r.counterexample is None else ("error" if r.counterexample.error
                                                     is not None else r.counterexample.violation)
                for r in self.results]
        table = Table("properties", "property", rows,
                      ["result", "examples", "violation", "seconds", "note"], None,
                      [[r.status.upper() if r.status == "failed" else r.status
                        for r in self.results], [r.examples for r in self.results], viol,
                       [r.seconds for r in self.results], [r.note for r in self.results]])
        failed = ", ".join(r.name for r in self.failures)
        verdict = Verdict(self.passed, "passed" if self.passed else "failed",
                          f"{len(self.results)} properties, {self.max_examples} examples each, "
                          f"seed {self.seed}, {self.profile} profile",
                          word="all properties hold" if self.passed else f"FAILED: {failed}")
        page = to_html(View("PolicyReport", [("policy", self.policy), ("domain", self.domain)],
                            verdict, [table]), max_rows=len(rows))
        examples = "".join(
            f"<details open><summary>counterexample for {html.escape(r.name)} (shrunk)"
            f"</summary><pre>{html.escape(str(r.counterexample))}</pre></details>"
            for r in self.failures)
        return page.removesuffix("</div>") + examples + "</div>"

    def assert_passed(self) -> None:
        """Raise `fairalloc.testing.PropertyCheckError` (an
        ``AssertionError``) unless every property passed; the message is the whole report with its
        counterexamples."""
        if not self.passed:
            raise PropertyCheckError(self)

    def to_frame(self) -> Any:
        """One row per property: status, examples, violation, agent, seconds."""
        from ..results import require_pandas

        pd = require_pandas()
        rows = []
        for r in self.results:
            cx = r.counterexample
            rows.append({"property": r.name, "status": r.status, "examples": r.examples,
                         "violation": None if cx is None else cx.violation,
                         "outcome": None if cx is None else (cx.outcome or None),
                         "agent": None if cx is None else cx.agent,
                         "seconds": r.seconds})
        return pd.DataFrame(rows).set_index("property")


class PropertyCheckError(AssertionError):
    """A policy failed a property check; ``report`` holds the
    `fairalloc.testing.PolicyReport`.

    Parameters
    ----------
    report : PolicyReport
        The failing report; the message is its text (with the shrunk counterexample).

    Examples
    --------
    >>> import numpy as np
    >>> from fairalloc.testing import check_policy
    >>> def dictator(utility, budget, supply):   # everything to buyer 0
    ...     x = np.zeros_like(utility)
    ...     x[0] = supply
    ...     return x
    >>> report = check_policy(dictator, ["envy_free", "feasible"], max_examples=20)
    >>> try:
    ...     report.assert_passed()
    ... except PropertyCheckError as exc:
    ...     print(exc.report is report, isinstance(exc, AssertionError))
    True True
    """

    def __init__(self, report: PolicyReport) -> None:
        super().__init__(str(report))
        self.report = report
