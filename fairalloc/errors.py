"""The one exception hierarchy of fairalloc.

Every error the library raises on purpose derives from `fairalloc.FairallocError`:

* `fairalloc.InputError` (also a `ValueError`) -- an argument is invalid. The message
  names the argument and, for arrays, the offending index, e.g. ``utility[3, 1] is nan``.
* `fairalloc.SolverError` (also a `RuntimeError`) -- a backend failed; carries the
  backend name and its raw status.
* `fairalloc.InfeasibleError` -- the program has no feasible point (a
  `fairalloc.SolverError`).
* `fairalloc.UnboundedError` -- the objective is unbounded (a
  `fairalloc.SolverError`).
* `fairalloc.CertificateError` -- a solve finished but its independently
  computed certificate misses the tolerance (a `fairalloc.SolverError`): the result
  is never returned as a success.
* `fairalloc.BackendUnavailableError` -- an optional backend is not
  installed (an `ImportError`, so ``pytest.importorskip``-style handling works).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from .solvelog import SolveStatus

_P = ParamSpec("_P")
_R = TypeVar("_R")

__all__ = [
    "BackendUnavailableError",
    "CertificateError",
    "FairallocError",
    "FairallocWarning",
    "InfeasibleError",
    "InputError",
    "SolverError",
    "UnboundedError",
]


class FairallocError(Exception):
    """Base class of every exception fairalloc raises on purpose.

    Examples
    --------
    >>> import fairalloc as fa
    >>> try:
    ...     fa.Cluster({"gpu": -1})
    ... except fa.FairallocError as exc:
    ...     print(type(exc).__name__)
    InputError
    """


class InputError(FairallocError, ValueError):
    """An argument is invalid; the message names the argument (and index, for arrays).

    Parameters
    ----------
    message : str
        What is wrong, naming the argument.
    argument : str, optional
        Name of the offending argument.
    index : tuple of int, optional
        Index of the first offending entry, for array arguments.

    Attributes
    ----------
    argument : str or None
        Name of the offending argument.
    index : tuple of int or None
        Index of the first offending entry, for array arguments.

    Examples
    --------
    >>> import fairalloc as fa
    >>> try:
    ...     fa.Jobs([[1.0, -2.0]])
    ... except fa.InputError as exc:
    ...     print(exc.argument, exc.index)
    throughput (0, 1)
    """

    def __init__(
        self, message: str, *, argument: str | None = None, index: tuple[int, ...] | None = None
    ) -> None:
        super().__init__(message)
        self.argument = argument
        self.index = index


class SolverError(FairallocError, RuntimeError):
    """No certified answer could be produced: a backend failed, or every strategy of the
    solve plan did (`fairalloc.plan`).

    Parameters
    ----------
    message : str
        What failed and why (kept as ``reason``).
    backend : str, optional
        Name of the backend that failed.
    status : SolveStatus or str, optional
        The status (default: the class's, ``ERROR`` here); a string that is not a status is
        kept as ``raw_status``.
    raw_status : str, optional
        The backend's own status string.
    verdicts : tuple of str, default ()
        Each strategy's verdict when a whole solve plan failed.

    Attributes
    ----------
    backend : str or None
        Name of the backend that failed.
    status : SolveStatus
        Why, in the one status vocabulary (`fairalloc.SolveStatus`).
        A string that is not a status given as ``status`` is kept as ``raw_status`` and the
        status is ``ERROR``.
    raw_status : str
        The backend's own status string (``""`` when none).
    reason : str
        The message: what failed and why.
    verdicts : tuple of str
        Each strategy's verdict when a whole solve plan failed (``()`` otherwise).

    Examples
    --------
    >>> exc = SolverError("HiGHS stopped", backend="highs", status="Time limit reached")
    >>> exc.status is SolveStatus.ERROR, exc.raw_status
    (True, 'Time limit reached')
    """

    default_status = SolveStatus.ERROR

    def __init__(self, message: str, *, backend: str | None = None,
                 status: SolveStatus | str | None = None, raw_status: str | None = None,
                 verdicts: tuple[str, ...] = ()):
        super().__init__(message)
        self.backend = backend
        canonical = self.default_status if status is None else SolveStatus.of(status)
        if status is not None and canonical is SolveStatus.ERROR and status != "error":
            # a backend's own string: kept as raw_status, the class's status stands
            raw_status = str(status) if raw_status is None else raw_status
            canonical = self.default_status
        self.status: SolveStatus = canonical
        self.raw_status = "" if raw_status is None else str(raw_status)
        self.reason = message
        self.verdicts = tuple(verdicts)


class InfeasibleError(SolverError):
    """The program has no feasible point (reported by the backend or detected on input).

    Parameters
    ----------
    message, backend, status, raw_status, verdicts
        As for `fairalloc.SolverError`; ``status`` defaults to ``INFEASIBLE``.

    Examples
    --------
    >>> InfeasibleError("no point", backend="highs").status is SolveStatus.INFEASIBLE
    True
    """

    default_status = SolveStatus.INFEASIBLE


class UnboundedError(SolverError):
    """The program's objective is unbounded (no optimum exists).

    Parameters
    ----------
    message, backend, status, raw_status, verdicts
        As for `fairalloc.SolverError`; ``status`` defaults to ``UNBOUNDED``.

    Examples
    --------
    >>> UnboundedError("ray found").status is SolveStatus.UNBOUNDED
    True
    """

    default_status = SolveStatus.UNBOUNDED


class CertificateError(SolverError):
    """The certificate of a finished solve misses its tolerance.

    Parameters
    ----------
    message : str
        What missed which tolerance.
    certificate : Certificate, optional
        The failing certificate.
    backend : str, optional
        Name of the backend whose answer failed.
    verdicts : tuple of str, default ()
        Each strategy's verdict when a whole solve plan failed.

    Attributes
    ----------
    certificate : object
        The failing `fairalloc.Certificate`, for inspection.

    Examples
    --------
    >>> exc = CertificateError("gap 1e-3 > 1e-6", backend="highs")
    >>> exc.status is SolveStatus.CERTIFICATE_FAILED, exc.certificate is None
    (True, True)
    """

    default_status = SolveStatus.CERTIFICATE_FAILED

    def __init__(self, message: str, *, certificate: object = None, backend: str | None = None,
                 verdicts: tuple[str, ...] = ()):
        super().__init__(message, backend=backend, verdicts=verdicts)
        self.certificate = certificate


class BackendUnavailableError(FairallocError, ImportError):
    """An optional solver backend (gurobi, pyomo) is not installed.

    Examples
    --------
    >>> issubclass(BackendUnavailableError, ImportError)
    True
    """


class FairallocWarning(UserWarning):
    """A warning fairalloc issues on purpose (e.g. a backend ignores a requested option).

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warnings.warn("option ignored", FairallocWarning)
    >>> caught[0].category.__name__
    'FairallocWarning'
    """


def foreign_error(exc: BaseException, what: str, *, backend: str | None = None) -> SolverError:
    """The `fairalloc.SolverError` that stands for a foreign exception ``exc`` raised
    by ``what`` (a solver package, linear algebra, or a bug); raise it ``from exc`` to chain the
    cause."""
    return SolverError(f"{what} raised {type(exc).__name__}: {exc}", backend=backend,
                       status=SolveStatus.ERROR, raw_status=type(exc).__name__)


def only_fairalloc_errors(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Decorate a public entry point so that only fairalloc errors escape it.

    A `fairalloc.FairallocError` passes through; any other exception becomes
    `fairalloc.SolverError` (see `fairalloc.errors.foreign_error`)
    with the original chained as its cause.
    """

    @functools.wraps(fn)
    def guarded(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return fn(*args, **kwargs)
        except FairallocError:
            raise
        except Exception as exc:
            raise foreign_error(exc, fn.__qualname__, backend="none") from exc

    return guarded
