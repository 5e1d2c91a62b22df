"""The fuzz harness: outcome classes, one guarded call, and the drivers (hypothesis-based).

A *target* (``tests/fuzz/targets.py``) is a hypothesis strategy that draws one case (a dict of
arguments), a call that runs a public fairalloc entry point on it, and an independent check of
the returned result. :func:`run_case` runs one case and classifies it:

``ok``           the call returned and the independent check accepted the result
``typed_error``  the call raised a :class:`fairalloc.FairallocError` (InputError, SolverError, ...)
                 on a case its strategy did not draw as valid, or an ``InputError`` on any case
``no_answer``    the case is *valid* (its strategy drew no corrupted data, no invalid option,
                 no time limit and no tolerance that may legitimately prevent an answer: see
                 :data:`~tests.fuzz.strategies.VALID`) and the call raised a
                 ``FairallocError`` other than ``InputError`` (``SolverError``,
                 ``CertificateError``, ``InfeasibleError``, ...): fairalloc gave no answer
                 where it owes one (issue #27)
``crash``        the call raised any other exception
``wrong``        the call returned a result that claims success (certificate ok / status
                 optimal, or a plain function's value) but the independent check rejects it
``mutated``      an input array, list or object changed during the call
``writable``     an ndarray reachable from the result is writable
``hang``         the call ran past the per-call budget

Independently of the class, an outcome's ``printed`` holds what the call wrote on stdout or
stderr and the numpy ``RuntimeWarning`` s it raised (solvers are silent unless ``verbose``).

Only ``ok`` and ``typed_error`` are acceptable. An ``InfeasibleError`` from a target whose
program always has a feasible point is ``wrong`` (valid case or not).

Whether a case is valid is decided by its strategy while it draws it (the case carries the
verdict under the key :data:`~tests.fuzz.strategies.VALID`, which :func:`run_case` removes
before the call); a case without that key is not known to be valid.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import signal
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

OUTCOMES = ("ok", "typed_error", "no_answer", "crash", "wrong", "mutated", "writable", "hang")
FAILURES = ("no_answer", "crash", "wrong", "mutated", "writable", "hang")


class Wrong(AssertionError):
    """Raised by an independent check that rejects a result."""


class Skip(Exception):  # noqa: N818 - a control signal, not an error
    """Raised by a check when the result makes no claim to check (e.g. a time-limited solve)."""


class _Hang(BaseException):
    """Raised by the timer inside a call; a BaseException so library ``except Exception`` blocks
    cannot swallow it."""


# --------------------------------------------------------------------------------------------
# targets and cases
# --------------------------------------------------------------------------------------------
@dataclass
class Target:
    """One fuzz target: an entry point (``name``), its strategy, call and independent check."""

    name: str                      # the entry point, e.g. "fisher_market", "FisherMarket.solve"
    family: str                    # e.g. "markets", "throughput", "queuing"
    strategy: Any                  # hypothesis strategy drawing a case (dict)
    call: Callable[[dict, Ctx], Any]
    check: Callable[[dict, Any], None] | None = None
    render: Callable[[dict], str] | None = None   # one-line reproducer
    slow: bool = False             # fewer examples in the quick profile
    always_feasible: bool = False  # the program always has a feasible point (x = 0): an
    #                                InfeasibleError is a wrong answer, not a typed error
    unused: tuple[str, ...] = ()   # case keys not passed to fairalloc, or where any value
    #                                may be valid (exempt from the invalid-scalar check)
    known: tuple[tuple[str, str], ...] = ()  # (outcome, regex on its detail): failures of
    #                                open library defects (each with its issue) that the quick
    #                                CI profile tolerates; the long profile reports them
    weight: float | None = None    # share of the long profile's examples (default: 1, or
    #                                benchmarks/fuzz.py's SLOW_WEIGHT for a slow target)

    def tolerated(self, o: Outcome) -> bool:
        """Whether the quick profile tolerates ``o``: a failure of a known, open defect."""
        return any(o.outcome == cls and re.search(rx, o.detail) for cls, rx in self.known)

    def reproducer(self, case: dict) -> str:
        if self.render is not None:
            try:
                return self.render(case)
            except Exception as exc:  # pragma: no cover - a rendering bug must not hide a finding
                return f"<render failed: {exc!r}> {short_repr(case)}"
        return f"{self.name}({', '.join(f'{k}={short_repr(v)}' for k, v in case.items())})"


@dataclass
class Ctx:
    """Per-call context: objects whose state must not change (``watch``)."""

    watched: list[tuple[str, Any, Any]] = field(default_factory=list)

    def watch(self, label: str, obj: Any) -> Any:
        self.watched.append((label, obj, fingerprint(obj)))
        return obj


@dataclass
class Outcome:
    target: str
    outcome: str
    detail: str
    reproducer: str
    seconds: float
    printed: str = ""   # its stdout/stderr and RuntimeWarnings (solvers must be silent)
    unnamed: bool = False  # an InputError that does not name its argument (``.argument``)
    valid: bool = False    # the strategy drew the case as valid (``strategies.VALID``)


# --------------------------------------------------------------------------------------------
# reprs, fingerprints and the writable walk
# --------------------------------------------------------------------------------------------
def short_repr(v: Any, limit: int = 400) -> str:
    """A Python expression for ``v`` (arrays as ``np.array([...])`` with exact floats)."""
    if isinstance(v, np.ndarray):
        body = re.sub(r"\binf\b", "np.inf", re.sub(r"\bnan\b", "np.nan", repr(v.tolist())))
        s = f"np.array({body})" if v.dtype.kind == "f" or v.dtype == object else \
            f"np.array({body}, dtype={str(v.dtype)!r})"
    elif isinstance(v, np.floating):
        s = f"np.{type(v).__name__}({_float_repr(float(v))})"
    elif isinstance(v, float):
        s = _float_repr(v)
    elif isinstance(v, (list, tuple)):
        inner = ", ".join(short_repr(x, limit) for x in v)
        s = f"[{inner}]" if isinstance(v, list) else f"({inner}{',' if len(v) == 1 else ''})"
    elif isinstance(v, dict):
        s = "{" + ", ".join(f"{short_repr(k)}: {short_repr(x, limit)}" for k, x in v.items()) + "}"
    else:
        s = repr(v)
    return s if len(s) <= limit else s[: limit - 3] + "..."


def _float_repr(v: float) -> str:
    if math.isnan(v):
        return "np.nan"
    if math.isinf(v):
        return "np.inf" if v > 0 else "-np.inf"
    return repr(v)


def fingerprint(obj: Any, depth: int = 0, seen: set[int] | None = None) -> Any:
    """A comparable snapshot of ``obj``'s data (arrays by bytes, so NaN == NaN)."""
    if seen is None:
        seen = set()
    if depth > 6:
        return "..."
    if isinstance(obj, np.ndarray):
        if obj.dtype == object:
            return ("nd-object", obj.shape, tuple(fingerprint(x, depth + 1, seen)
                                                  for x in obj.ravel().tolist()))
        # the flag too: freezing the caller's own array (instead of a view) changes it
        return ("nd", obj.dtype.str, obj.shape, np.ascontiguousarray(obj).tobytes(),
                bool(obj.flags.writeable))
    if isinstance(obj, float):
        return ("f", np.float64(obj).tobytes())
    if isinstance(obj, (int, str, bytes, bool, type(None), complex, np.generic)):
        return obj if not isinstance(obj, np.generic) else ("g", obj.tobytes())
    if id(obj) in seen:
        return "<cycle>"
    seen = seen | {id(obj)}
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, tuple(fingerprint(x, depth + 1, seen) for x in obj))
    if isinstance(obj, dict):
        return ("dict", tuple((repr(k), fingerprint(v, depth + 1, seen)) for k, v in obj.items()))
    if isinstance(obj, (set, frozenset)):
        return ("set", tuple(sorted(repr(x) for x in obj)))
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return (type(obj).__name__, tuple((f.name, fingerprint(getattr(obj, f.name, None),
                                                               depth + 1, seen))
                                          for f in dataclasses.fields(obj)))
    d = getattr(obj, "__dict__", None)
    if isinstance(d, dict) and type(obj).__module__.startswith("fairalloc"):
        return (type(obj).__name__, tuple((k, fingerprint(v, depth + 1, seen))
                                          for k, v in sorted(d.items())
                                          if not k.startswith("_cache")))
    return ("obj", type(obj).__name__)


def writable_arrays(obj: Any, path: str = "result", depth: int = 0,
                    seen: set[int] | None = None) -> list[str]:
    """Paths of writable ndarrays reachable from ``obj`` through dataclass fields, tuples,
    lists and dicts."""
    if seen is None:
        seen = set()
    if depth > 5 or id(obj) in seen:
        return []
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        return [f"{path} {obj.dtype}{list(obj.shape)}"] if obj.flags.writeable else []
    out: list[str] = []
    if isinstance(obj, (list, tuple)):
        for i, x in enumerate(obj[:50]):
            out += writable_arrays(x, f"{path}[{i}]", depth + 1, seen)
    elif isinstance(obj, dict):
        for k, x in list(obj.items())[:50]:
            out += writable_arrays(x, f"{path}[{k!r}]", depth + 1, seen)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            out += writable_arrays(getattr(obj, f.name, None), f"{path}.{f.name}", depth + 1,
                                   seen)
    return out


# --------------------------------------------------------------------------------------------
# one guarded call
# --------------------------------------------------------------------------------------------
class _Silence:
    """Capture what a call writes to file descriptors 1 and 2 (C solvers print there)."""

    def __enter__(self) -> _Silence:
        import sys
        import tempfile

        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # pragma: no cover
                pass
        self.tmp = tempfile.TemporaryFile()
        self.saved = [os.dup(1), os.dup(2)]
        os.dup2(self.tmp.fileno(), 1)
        os.dup2(self.tmp.fileno(), 2)
        self.text = ""
        return self

    def __exit__(self, *exc: Any) -> None:
        import sys

        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # pragma: no cover
                pass
        os.dup2(self.saved[0], 1)
        os.dup2(self.saved[1], 2)
        for fd in self.saved:
            os.close(fd)
        self.tmp.seek(0)
        self.text = self.tmp.read(2000).decode("utf-8", "replace")
        self.tmp.close()


class _Timer:
    """A per-call time budget: SIGALRM in the main thread, else a watchdog that only records."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.main = threading.current_thread() is threading.main_thread() and \
            hasattr(signal, "setitimer")
        self.old: Any = None

    def __enter__(self) -> _Timer:
        if self.main and self.seconds > 0:
            def handler(signum: int, frame: Any) -> None:
                raise _Hang()
            self.old = signal.signal(signal.SIGALRM, handler)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.main and self.seconds > 0:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.old)


def run_case(target: Target, case: dict, *, timeout: float = 20.0) -> Outcome:
    """Run one case of ``target`` and classify it (see the module docstring)."""
    import fairalloc as fa

    from .strategies import VALID

    valid = bool(case.get(VALID, False))
    case = {k: v for k, v in case.items() if k != VALID}
    ctx = Ctx()
    snapshot = fingerprint(case)
    t0 = time.perf_counter()
    result: Any = None
    outcome, detail = "ok", ""
    unnamed = False
    silence = _Silence()
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            # other warnings are the entry points' documented messages; a RuntimeWarning
            # (numpy's divide by zero, invalid value, overflow) is noise a silent solver owes
            # nobody: under ``python -W error`` it is an exception that is no fairalloc error
            warnings.simplefilter("ignore")
            warnings.simplefilter("always", RuntimeWarning)
            with silence, _Timer(timeout):
                result = target.call(case, ctx)
    except _Hang:
        outcome, detail = "hang", f"exceeded {timeout:g} s"
    except fa.InfeasibleError as exc:
        outcome, detail = "typed_error", f"{type(exc).__name__}: {_first_line(exc)}"
        if target.always_feasible:
            outcome, detail = "wrong", f"InfeasibleError on a program that is always " \
                                       f"feasible: {_first_line(exc)}"
    except fa.FairallocError as exc:
        outcome, detail = "typed_error", f"{type(exc).__name__}: {_first_line(exc)}"
        unnamed = isinstance(exc, fa.InputError) and not getattr(exc, "argument", None)
    except Exception as exc:
        outcome, detail = "crash", f"{type(exc).__module__}.{type(exc).__name__}: " \
                                   f"{_first_line(exc)}"
    seconds = time.perf_counter() - t0
    if outcome == "typed_error" and valid and not detail.startswith("InputError"):
        outcome = "no_answer"  # a valid case, and fairalloc raised instead of answering
    if outcome == "ok" and target.check is not None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with _Timer(timeout):
                    target.check(case, result)
        except Skip:
            pass
        except Wrong as exc:
            outcome, detail = "wrong", _first_line(exc)
        except _Hang:
            outcome, detail = "hang", f"independent check exceeded {timeout:g} s"
        except Exception as exc:  # the result did not even have the promised shape/fields
            outcome, detail = "wrong", f"check raised {type(exc).__name__}: {_first_line(exc)}"
    if outcome in ("ok", "typed_error", "no_answer", "wrong"):
        changed = [] if fingerprint(case) == snapshot else ["arguments"]
        changed += [label for label, obj, fp in ctx.watched if fingerprint(obj) != fp]
        if changed:
            detail = f"changed: {', '.join(changed)}" + (f" ({detail})" if detail else "")
            outcome = "mutated" if outcome not in ("wrong", "no_answer") else outcome
    if outcome == "ok":
        accepted = accepted_invalid({k: v for k, v in case.items() if k not in target.unused})
        if accepted:
            outcome, detail = "wrong", f"accepted invalid scalar argument(s): {accepted}"
        elif (ran := backend_not_honoured(case, result)):
            outcome, detail = "wrong", ran
    if outcome in ("ok", "wrong") and result is not None:
        paths = writable_arrays(result)
        if paths and outcome == "ok":
            outcome, detail = "writable", ", ".join(paths[:4])
    printed = "\n".join([silence.text.strip(), *_runtime_warnings(caught)]).strip()
    return Outcome(target.name, outcome, detail, target.reproducer(case), seconds,
                   printed, unnamed and outcome == "typed_error", valid)


def _runtime_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    """The distinct RuntimeWarnings a call raised, as ``RuntimeWarning: message (file:line)``."""
    lines = [f"{w.category.__name__}: {w.message} ({os.path.basename(w.filename)}:{w.lineno})"
             for w in caught if issubclass(w.category, RuntimeWarning)]
    return list(dict.fromkeys(lines))


def accepted_invalid(case: dict) -> str:
    """Arguments of ``case`` (top level, or in its ``kw`` / ``solve`` option dicts) that hold one
    of the values invalid for every scalar (NaN, a string, a list, a complex number) or a
    subnormal number (a scalar, or an entry of a float array)."""
    from .strategies import CERTAINLY_BAD

    found = []
    scopes = [("", case)] + [(f"{k}.", case[k]) for k in ("kw", "solve")
                             if isinstance(case.get(k), dict)]
    for prefix, scope in scopes:
        for k, v in scope.items():
            if any(v is bad for bad in CERTAINLY_BAD) or _subnormal(v):
                found.append(f"{prefix}{k}={short_repr(v)}")
    return ", ".join(found)


def _subnormal(v: Any) -> bool:
    """Whether ``v`` is a subnormal float, or a float array holding one: fairalloc refuses
    those everywhere (``fairalloc._validation``), so a call that returns accepted garbage."""
    if isinstance(v, float | np.floating):
        return 0 < abs(float(v)) < np.finfo(np.float64).tiny
    if isinstance(v, np.ndarray) and v.dtype.kind == "f" and v.size:
        mag = np.abs(v)
        return bool(((mag > 0) & (mag < np.finfo(np.float64).tiny)).any())
    return False


def backend_not_honoured(case: dict, result: Any) -> str:
    """issue #12: ``backend=`` is honoured and ``stats.backend`` names what ran. A message if
    the case asked for ``highs`` or ``clarabel`` and the result says another backend ran."""
    asked = None
    for scope in (case, case.get("kw"), case.get("solve")):
        if isinstance(scope, dict) and scope.get("backend") in ("highs", "clarabel"):
            asked = scope["backend"]
    stats = getattr(result, "stats", None)
    if asked is None or stats is None:
        return ""
    ran = set(str(stats.backend).split("+")) - {"none", "numpy", ""}
    # the asked backend must be among those that ran; an exact auxiliary LP (a market's
    # polish on HiGHS, documented in formulations/eisenberg_gale.md) may run beside it, or
    # alone when the market needed no conic solve (method="fast": fairalloc's own interior
    # point, seed 25)
    if type(result).__name__ == "MarketResult" and asked == "clarabel":
        ran -= {"highs"}
    if ran and asked not in ran:
        return f"backend={asked!r} asked, but stats.backend = {stats.backend!r}"
    return ""


def _first_line(exc: BaseException) -> str:
    s = str(exc).strip().splitlines()
    return (s[0] if s else "")[:300]


# --------------------------------------------------------------------------------------------
# drivers
# --------------------------------------------------------------------------------------------
def drive(target: Target, examples: int, *, seed: int = 0, timeout: float = 20.0,
          on_outcome: Callable[[Outcome], None] | None = None,
          stop_on_failure: bool = False, tolerate_known: bool = False) -> list[Outcome]:
    """Draw ``examples`` cases of ``target`` with hypothesis (fixed seed, no shrinking, no
    database) and run each; returns the outcomes. ``stop_on_failure``: run no more calls
    after the first failing one (the quick profile only needs one); with
    ``tolerate_known``, failures the target lists as known defects (``Target.known``) do not
    count as failing there."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    outcomes: list[Outcome] = []

    @hseed(seed)
    @settings(max_examples=max(1, examples), deadline=None, database=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck),
              derandomize=False)
    @given(target.strategy)
    def body(case: dict) -> None:
        if stop_on_failure and any(o.outcome in FAILURES and not (
                tolerate_known and target.tolerated(o)) for o in outcomes):
            return
        o = run_case(target, case, timeout=timeout)
        outcomes.append(o)
        if on_outcome is not None:
            on_outcome(o)

    body()
    return outcomes


def tally(outcomes: list[Outcome]) -> dict[str, Counter]:
    table: dict[str, Counter] = {}
    for o in outcomes:
        table.setdefault(o.target, Counter())[o.outcome] += 1
    return table
