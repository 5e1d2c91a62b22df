"""A solve plan as data, and the one driver that runs it.

A *plan* is an ordered tuple of `fairalloc.plan.Strategy` values, built by a pure
function of the instance's shape and a family's ``Tuning`` (e.g.
`fairalloc.throughput.plan.stage_plan`), before anything is solved -- the way cvxpy builds its
solving chain. Each strategy says whether it applies (``applies``), solves (``solve``: context
in, result out, no shared mutable state) and certifies its result on the ORIGINAL program
(``certify``). `fairalloc.plan.run_plan` tries them in order and records, in the
call's `fairalloc.solvelog.SolveLog`, each step that ran and each hand-over with its
reason:

* a strategy that sees it cannot win raises `fairalloc.plan.Decline` (a reason,
  no error): the next one runs;
* a `fairalloc.SolverError` (a backend's "Unknown", a failed factorisation) or a
  certificate that misses its tolerance hands over as well;
* an ``InfeasibleError`` is believed when two exact strategies agree (or the last one says so);
  a single backend's verdict on a thin feasible set is not proof;
* the first certified result is the answer (or the first result of a ``provisional``
  strategy: a point that only chooses a sequence's next iterate, never returned to a caller).

The last strategies of every plan are *exact* (``exact=True``): robust methods that answer any
feasible, bounded program. When every strategy failed, the driver raises one typed error with
each strategy's verdict (``exc.verdicts``): ``InfeasibleError`` if the exact strategies proved
infeasibility, else ``CertificateError`` (with the best certificate seen) or ``SolverError``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

from .errors import CertificateError, InfeasibleError, SolverError
from .results import Certificate
from .solvelog import SolveLog, SolveStatus

__all__ = ["Decline", "Found", "Strategy", "run_plan", "run_nested", "describe"]

C = TypeVar("C")  # the context a strategy reads
R = TypeVar("R")  # what a strategy's solve returns

#: how many exact strategies must report infeasibility before the driver believes it
#: (ACCURACY: one interior point's "infeasible" on a face met only to tolerance is not proof)
INFEASIBLE_VOTES = 2


class Decline(Exception):  # noqa: N818 - a control signal, not an error
    """Raised by a strategy's ``solve`` when it sees it cannot win on this instance; the
    driver records ``reason`` as the hand-over's reason and runs the next strategy.

    Parameters
    ----------
    reason : str
        Why the strategy declines (kept as ``reason``; recorded in ``stats.fallbacks``).

    Examples
    --------
    >>> from fairalloc.results import Certificate
    >>> from fairalloc.solvelog import SolveLog
    >>> def fast(ctx):
    ...     raise Decline("more than 64 types")
    >>> ok = Certificate("lp", 1.0, 1.0, 0.0, 0.0)
    >>> plan = (Strategy("fast", fast, lambda c, r: ok),
    ...         Strategy("exact", lambda c: 1.0, lambda c, r: ok, exact=True))
    >>> log = SolveLog()
    >>> _ = run_plan(plan, None, log, what="demo")
    >>> log.fallbacks
    ('fast->exact: more than 64 types',)
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _always(ctx: Any) -> bool:
    return True


@dataclass(frozen=True)
class Strategy(Generic[C, R]):
    """One way to solve a program: a named step of ``stats.path``.

    Parameters
    ----------
    name : str
        The path step (``"structured-level"``, ``"exact-lp"``, ...).
    solve : callable ``(ctx) -> R``
        Solves; raises `Decline` or a ``SolverError`` to hand over.
    certify : callable ``(ctx, R) -> Certificate``
        The certificate of the result on the original program (independent of the solver).
    applies : callable ``(ctx) -> bool``
        Whether the strategy is tried at all on this context (default: always).
    exact : bool
        A robust exact method (the plan's tail): its infeasibility verdict counts.
    ready : callable ``(ctx) -> bool``, optional
        Whether the strategy runs when its turn comes, evaluated after the strategies before it
        ran (so it may read what they recorded in the context, e.g. a refinement that needs an
        uncertified point): one that is not ready is skipped without a step or a hand-over,
        and the hand-over goes to the next ready one. Default: always ready.
    step : bool, default True
        Whether the driver records the strategy as a step of ``stats.path``; ``False`` for
        one whose ``solve`` runs a plan of its own (its steps are the path's; e.g. a policy's
        work-conserving stage). Its hand-overs are recorded under its name either way.
    provisional : bool, default False
        Its result is the answer without its certificate being checked (``Found.certificate``
        is the one ``certify`` gives, e.g. without a bound): a point that only chooses the
        next iterate of a sequence whose last result is certified (finish-time fairness's
        Dinkelbach stages, `fairalloc.throughput.duration.certified_stage_plan`). It may
        still decline or fail and hand over.

    Examples
    --------
    >>> from fairalloc.results import Certificate
    >>> s = Strategy("exact-lp", solve=lambda ctx: 2 * ctx,
    ...              certify=lambda ctx, r: Certificate("lp", r, r, 0.0, 0.0),
    ...              applies=lambda ctx: ctx > 0, exact=True)
    >>> s.applies(3), s.solve(3), s.certify(3, 6).ok, describe([s])
    (True, 6, True, ('exact-lp!',))
    """

    name: str
    solve: Callable[[C], R]
    certify: Callable[[C, R], Certificate]
    applies: Callable[[C], bool] = _always
    exact: bool = False
    ready: Callable[[C], bool] | None = None
    step: bool = True
    provisional: bool = False


@dataclass(frozen=True)
class Found(Generic[R]):
    """What `run_plan` returns: the certified result, its certificate and the strategy.

    Parameters
    ----------
    result : object
        The result of the strategy that certified.
    certificate : Certificate
        Its certificate (``ok``).
    strategy : str
        The strategy's name.

    Examples
    --------
    >>> from fairalloc.results import Certificate
    >>> from fairalloc.solvelog import SolveLog
    >>> ok = Certificate("lp", 1.0, 1.0, 0.0, 0.0)
    >>> found = run_plan((Strategy("exact", lambda c: 42, lambda c, r: ok),), None,
    ...                  SolveLog(), what="demo")
    >>> found.result, found.strategy, found.certificate.ok
    (42, 'exact', True)
    """

    result: R
    certificate: Certificate
    strategy: str


def describe(plan: Sequence[Strategy[Any, Any]]) -> tuple[str, ...]:
    """The names of a plan's strategies, in order (exact ones marked ``"!"``).

    Parameters
    ----------
    plan : sequence of Strategy
        The plan.

    Returns
    -------
    tuple of str
        Each strategy's name, with ``"!"`` appended to the exact ones.

    Examples
    --------
    >>> s = Strategy("a", solve=lambda c: 1, certify=lambda c, r: None)
    >>> describe((s, Strategy("b", solve=s.solve, certify=s.certify, exact=True)))
    ('a', 'b!')
    """
    return tuple(s.name + ("!" if s.exact else "") for s in plan)


def _cert_verdict(cert: Certificate) -> str:
    return (f"did not certify (relative gap {cert.relative_gap:.2e}, residuals "
            f"{cert.primal_residual:.2e} / {cert.dual_residual:.2e})")


def run_plan(plan: Sequence[Strategy[C, R]], ctx: C, log: SolveLog, *, what: str,
             backend: str | None = None, infeasible_votes: int = INFEASIBLE_VOTES
             ) -> Found[R]:
    """Run ``plan`` on ``ctx``: the first strategy whose result certifies is the answer.

    Every strategy that applies is recorded in ``log`` (`SolveLog.step`), and every hand-over
    with its reason (`SolveLog.hand_over`). ``what`` names the program in errors;
    ``infeasible_votes``: exact strategies that must agree before infeasibility is believed.

    Parameters
    ----------
    plan : sequence of Strategy
        The strategies, cheapest first; those whose ``applies(ctx)`` is false are skipped.
    ctx : object
        The program's context, passed to each strategy's ``solve`` and ``certify``.
    log : SolveLog
        Records the steps and hand-overs.
    what : str
        The program's name in error messages.
    backend : str, optional
        The backend named in the errors raised.
    infeasible_votes : int, default 2
        How many exact strategies must report infeasibility before `InfeasibleError` is
        raised (the last strategy's report is believed alone).

    Returns
    -------
    Found
        The first certified result, the strategy that produced it and its certificate.

    Raises
    ------
    InfeasibleError
        When ``infeasible_votes`` exact strategies (or the last one) proved infeasibility and
        none answered.
    CertificateError
        When points came back but none certified (``exc.verdicts``: every strategy's verdict;
        ``exc.certificate``: the best one seen).
    SolverError
        When no strategy produced a point.

    Examples
    --------
    >>> from fairalloc.results import Certificate
    >>> good = Certificate("lp", 1.0, 1.0, 0.0, 0.0)
    >>> def fast(ctx): raise Decline("too many types")
    >>> plan = (Strategy("fast", fast, lambda c, r: good),
    ...         Strategy("exact", lambda c: 42, lambda c, r: good, exact=True))
    >>> log = SolveLog()
    >>> run_plan(plan, None, log, what="demo").result, log.path, log.fallbacks
    (42, ('fast', 'exact'), ('fast->exact: too many types',))
    """
    live = [s for s in plan if s.applies(ctx)]
    if not live:
        raise SolverError(f"no strategy of the plan applies to the {what} program",
                          backend=backend, status=SolveStatus.ERROR)
    verdicts: list[str] = []
    infeasible: list[InfeasibleError] = []
    best: Certificate | None = None

    def next_ready(start: int) -> int | None:
        """The first strategy from ``start`` that is ready now (after those before it ran)."""
        return next((j for j in range(start, len(live))
                     if live[j].ready is None or live[j].ready(ctx)), None)

    i = next_ready(0)
    if i is None:
        raise SolverError(f"no strategy of the plan is ready for the {what} program",
                          backend=backend, status=SolveStatus.ERROR)
    while i is not None:
        strategy = live[i]
        if strategy.step:
            log.step(strategy.name)
        try:
            out = strategy.solve(ctx)
        except Decline as exc:
            verdict = exc.reason
        except InfeasibleError as exc:
            if strategy.exact:
                infeasible.append(exc)
                if len(infeasible) >= infeasible_votes or next_ready(i + 1) is None:
                    raise InfeasibleError(
                        f"the {what} program is infeasible ({exc}; "
                        f"{len(infeasible)} exact method(s) agree)", backend=exc.backend,
                        raw_status=exc.raw_status,
                        verdicts=(*verdicts, f"{strategy.name}: infeasible")) from exc
            verdict = f"infeasible ({exc.raw_status or exc.status})"
        except SolverError as exc:
            verdict = f"failed ({exc.status}: {exc.raw_status or exc.reason})"
        else:
            cert = strategy.certify(ctx, out)
            if cert.ok or strategy.provisional:
                return Found(out, cert, strategy.name)
            if best is None or _rank(cert) < _rank(best):
                best = cert
            verdict = _cert_verdict(cert)
        verdicts.append(f"{strategy.name}: {verdict}")
        after = next_ready(i + 1)
        if after is not None:
            log.hand_over(strategy.name, live[after].name, verdict)
        i = after
    text = "; ".join(verdicts)
    if infeasible and best is None:
        raise InfeasibleError(f"the {what} program is infeasible ({text})",
                              backend=backend, verdicts=tuple(verdicts))
    if best is not None:
        raise CertificateError(f"no strategy certified the {what} program ({text})",
                               certificate=best, backend=backend, verdicts=tuple(verdicts))
    raise SolverError(f"no strategy solved the {what} program ({text})", backend=backend,
                      verdicts=tuple(verdicts))


def run_nested(plan: Sequence[Strategy[C, R]], ctx: C, log: SolveLog, *, what: str,
               backend: str | None = None) -> Found[R]:
    """`run_plan` for a plan whose exact strategies each run plans of their own (a stage
    solved by its stage plan, a policy solved job by job): when no strategy answers, the last
    exact strategy's own typed error is raised as it is -- it carries its plans' verdicts --
    rather than wrapped in the driver's.

    Parameters
    ----------
    plan, ctx, log, what, backend
        As for `run_plan`.

    Returns
    -------
    Found

    Examples
    --------
    >>> from fairalloc.results import Certificate
    >>> def inner(ctx): raise InfeasibleError("no point", backend="demo")
    >>> plan = (Strategy("fast", inner, lambda c, r: None),
    ...         Strategy("exact", inner, lambda c, r: None, exact=True))
    >>> try:
    ...     run_nested(plan, None, SolveLog(), what="demo")
    ... except InfeasibleError as exc:
    ...     print(exc)
    no point
    """
    raised: list[SolverError] = []

    def own(strategy: Strategy[C, R]) -> Strategy[C, R]:
        def solve(c: C) -> R:
            try:
                return strategy.solve(c)
            except SolverError as exc:
                raised.append(exc)
                raise
        return replace(strategy, solve=solve)

    try:
        return run_plan([own(s) if s.exact else s for s in plan], ctx, log, what=what,
                        backend=backend)
    except SolverError:
        if raised:
            raise raised[-1] from None
        raise


def _rank(cert: Certificate) -> float:
    """How far a certificate is from passing (smaller is better)."""
    gap = cert.relative_gap / cert.gap_tol if cert.gap_tol > 0 else cert.relative_gap
    res = cert.primal_residual / cert.feas_tol if cert.feas_tol > 0 else cert.primal_residual
    return max(gap, res, 0.0)
