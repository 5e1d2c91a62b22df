"""Policy calls in a child process with a per-call deadline (``check_policy(isolate=True)``).

A policy that aborts the process (a C extension calling ``abort()``, a segfault) or never
returns would otherwise end the whole check without a report. With isolation each call runs in
a long-lived worker process (``multiprocessing``'s ``forkserver`` context where the platform
has it, else ``spawn``; never a plain ``fork`` of the caller); the worker is replaced after it
dies or overruns the deadline. The call's outcome is then one of

* the policy's answer (or the exception it raised, sent back pickled);
* ``crash``: the worker died (the message names the exit code or signal, e.g. ``SIGABRT``);
* ``timeout``: no answer within ``deadline`` seconds (the worker is killed).

The deadline is a guard against hangs, not a measurement: give it ample room (the default is
`DEFAULT_DEADLINE`), since a policy that needs longer than it on a loaded machine is reported as
hanging. The policy is sent to the worker once, by ``cloudpickle`` when it is installed (so
lambdas and closures work) and by ``pickle`` otherwise (module-level functions and objects).
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import multiprocessing as mp
import pickle
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import InputError

__all__ = ["DEFAULT_DEADLINE", "IsolatedPolicy", "Lost"]

#: seconds one isolated policy call may take before it is reported as hanging (a PERFORMANCE
#: knob: a guard against hangs, documented as ``check_policy(deadline=)``)
DEFAULT_DEADLINE = 60.0
#: seconds a fresh worker may take to start and load the policy (a PERFORMANCE knob)
STARTUP_DEADLINE = 120.0
#: modules the fork server loads once for every worker (a PERFORMANCE knob)
PRELOAD = ("numpy", "scipy.sparse", "fairalloc.testing.checks")
#: seconds to wait for a killed worker to go (a PERFORMANCE knob)
REAP_SECONDS = 5.0


@dataclass(frozen=True)
class Lost:
    """A call that gave no answer: ``kind`` is ``"crash"`` or ``"timeout"``."""

    kind: str
    message: str


def _dumps(obj: Any) -> bytes:
    try:
        import cloudpickle
    except ImportError:  # pragma: no cover - cloudpickle is optional
        return pickle.dumps(obj)
    name = getattr(obj, "__module__", None) or getattr(type(obj), "__module__", None)
    module = sys.modules.get(name or "")
    by_value = False
    if module is not None and name not in ("__main__", "builtins"):
        try:  # a module loaded from a file path (fairalloc check file.py:policy)
            top = (name or "").partition(".")[0]
            by_value = "." not in (name or "") and \
                importlib.machinery.PathFinder.find_spec(top) is None
        except (ImportError, ValueError):
            by_value = True
    if by_value:
        cloudpickle.register_pickle_by_value(module)
    try:
        return bytes(cloudpickle.dumps(obj))
    finally:
        if by_value:
            cloudpickle.unregister_pickle_by_value(module)


def _worker(conn: Any, blob: bytes) -> None:  # pragma: no cover - runs in the child
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # an abort leaves no core file
    except (ImportError, ValueError, OSError):
        pass
    try:
        policy = pickle.loads(blob)
    except Exception as exc:  # e.g. the policy's module cannot be imported in the child
        conn.send(("broken", f"{type(exc).__name__}: {exc}"))
        return
    conn.send(("ready", None))
    while True:
        try:
            args, kwargs = conn.recv()
        except EOFError:
            return
        try:
            answer = ("ok", policy(*args, **kwargs))
        except Exception as exc:  # the policy's failure is sent back as a finding
            answer = ("raised", exc)
        try:
            conn.send(answer)
        except Exception as exc:  # an answer that does not pickle
            conn.send(("raised", TypeError(f"the policy's answer cannot be sent back from "
                                           f"the child process: {exc}")))


@contextlib.contextmanager
def _without_main() -> Iterator[None]:
    """Hide the caller's ``__main__`` while a worker starts.

    ``spawn`` and ``forkserver`` children re-import the parent's main script (or module) so
    that pickles naming ``__main__`` resolve; the policy travels by value, so the worker needs
    neither, and re-running a caller's script (``python script.py``, ``python -c``, a
    notebook, stdin) in the child would be wrong or impossible.
    """
    main = sys.modules.get("__main__")
    saved = {k: getattr(main, k) for k in ("__file__", "__spec__") if hasattr(main, k)}
    try:
        for k in saved:
            if k == "__spec__":
                main.__spec__ = None  # type: ignore[union-attr]
            else:
                delattr(main, k)
        yield
    finally:
        for k, v in saved.items():
            setattr(main, k, v)


def _context() -> Any:
    methods = mp.get_all_start_methods()
    if "forkserver" not in methods:  # pragma: no cover - Windows
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")
    # the fork server loads these once, so a replacement worker starts in milliseconds (a
    # no-op when the server already runs)
    ctx.set_forkserver_preload(list(PRELOAD))
    return ctx


def _death(code: int | None) -> str:
    if code is None:
        return "the policy's process died"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"the policy's process was killed by {name}"
    return f"the policy's process exited with code {code}"


class IsolatedPolicy:
    """A policy run in a worker process: ``call(args)`` returns ``("ok", answer)``,
    ``("raised", exception)`` or a `fairalloc.testing.isolation.Lost` outcome.

    Examples
    --------
    >>> runner = IsolatedPolicy(abs, deadline=30.0)
    >>> runner.call((-2,))
    ('ok', 2)
    >>> runner.close()
    """

    def __init__(self, policy: Any, deadline: float = DEFAULT_DEADLINE) -> None:
        try:
            self._blob = _dumps(policy)
        except Exception as exc:
            raise InputError(f"policy cannot be sent to a child process (isolate=True): "
                             f"{exc}; define it at module level or install cloudpickle",
                             argument="policy") from None
        self.deadline = float(deadline)
        self._proc: Any = None
        self._conn: Any = None

    def _start(self) -> Lost | None:
        ctx = _context()
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_worker, args=(child, self._blob), daemon=True)
        with _without_main():
            proc.start()
        child.close()
        self._proc, self._conn = proc, parent
        if not parent.poll(STARTUP_DEADLINE):
            self._kill()
            return Lost("timeout", "the policy's process did not start")
        try:
            kind, why = parent.recv()
        except (EOFError, OSError):
            code = self._reap()
            return Lost("crash", _death(code) + " while loading the policy")
        if kind == "broken":
            self._reap()
            return Lost("crash", f"the policy cannot be loaded in a child process ({why}); "
                                 "define it in an importable module")
        return None

    def _reap(self) -> int | None:
        proc = self._proc
        self._proc = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if proc is None:
            return None
        proc.join(REAP_SECONDS)
        return proc.exitcode

    def _kill(self) -> None:
        if self._proc is not None and self._proc.is_alive():
            self._proc.kill()
        self._reap()

    def call(self, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None
             ) -> tuple[str, Any] | Lost:
        if self._proc is None:
            lost = self._start()
            if lost is not None:
                return lost
        conn = self._conn
        try:
            conn.send((args, kwargs or {}))
            if not conn.poll(self.deadline):
                self._kill()
                return Lost("timeout", f"the policy did not answer within the deadline of "
                                       f"{self.deadline:g} s (it was stopped)")
            return tuple(conn.recv())  # type: ignore[return-value]
        except (EOFError, OSError, BrokenPipeError):
            return Lost("crash", _death(self._reap()))

    def close(self) -> None:
        """Stop the worker (it is restarted by the next call)."""
        self._kill()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass
