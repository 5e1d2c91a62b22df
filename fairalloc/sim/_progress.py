"""The progress display of ``fairalloc simulate`` and ``fairalloc sweep`` (`fairalloc.sim.cli`).

On a terminal, a `rich.progress` bar: rich redraws it from its own thread every `TTY_REFRESH`
seconds, so its elapsed time and ETA keep moving while the main thread waits on a MILP or on
the sweep's worker pool (tqdm redraws only when it is updated, so it would freeze there).
Anywhere else (a file, a pipe, a CI log) plain lines, as before: a simulation reports at most
every `PROGRESS_INTERVAL` seconds, and the commands print one line per finished simulation.
``--no-progress`` turns both off.
"""

from __future__ import annotations

import os
import sys
import time
import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["PROGRESS_INTERVAL", "TTY_REFRESH", "Progress"]

#: without a terminal, a running simulation reports at most every this many seconds
#: (PERFORMANCE: how chatty a log gets)
PROGRESS_INTERVAL = 5.0
#: on a terminal, rich redraws the bar every this many seconds (PERFORMANCE: a display knob)
TTY_REFRESH = 0.2


class Progress:
    """Progress on stderr: a rich bar on a terminal (or on ``console``), plain lines elsewhere.

    Use as a context manager around the work: the bar's refresh thread runs inside it and the
    bar is erased when it ends (an interrupt included), so the lines printed with `line` and
    the command's last line are all that stay on the screen.

    Parameters
    ----------
    enabled : bool
        ``False`` (``--no-progress``) prints nothing at all.
    console : rich.console.Console, optional
        Draw the bar on this console (a test's captured one) instead of deciding by whether
        stderr is a terminal.
    """

    def __init__(self, enabled: bool, console: Any = None) -> None:
        self.enabled = enabled
        self._bar: Any = None
        self._running = False
        if enabled and (console is not None or sys.stderr.isatty()):
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as Bar

            self._bar = Bar(TextColumn("{task.description}"), BarColumn(),
                            MofNCompleteColumn(), TextColumn("{task.fields[unit]}"),
                            TimeElapsedColumn(), TimeRemainingColumn(),
                            console=console if console is not None else Console(stderr=True),
                            refresh_per_second=1.0 / TTY_REFRESH, transient=True,
                            redirect_stdout=False, redirect_stderr=False)
            # a sweep forks its worker processes while the bar runs: pause the refresh thread
            # across each fork, so no child starts with a lock that thread held
            me = weakref.ref(self)
            os.register_at_fork(before=lambda: _call(me, "_pause"),
                                after_in_parent=lambda: _call(me, "_resume"))

    def __enter__(self) -> Progress:
        if self._bar is not None:
            self._bar.start()
            self._running = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._running = False
            self._bar.stop()

    def _pause(self) -> None:
        if self._running:
            self._bar.live.stop()

    def _resume(self) -> None:
        if self._running:
            self._bar.live.start(refresh=True)

    def line(self, text: str) -> None:
        """Print ``text`` as a line of its own (above the bar, on a terminal)."""
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.console.print(text, markup=False, highlight=False, soft_wrap=True)
        else:
            print(text, file=sys.stderr, flush=True)

    def task(self, label: str, unit: str = "jobs", *,
             lines: bool = True) -> Callable[[int, int], None]:
        """A new task's ``update(done, total)`` callback; the previous task's bar goes.

        Without a terminal, ``lines`` prints ``label: done/total unit finished, S s`` at most
        every `PROGRESS_INTERVAL` seconds while the task runs.
        """
        if self._bar is not None:
            for old in list(self._bar.task_ids):
                self._bar.remove_task(old)
            bar = self._bar
            task_id = bar.add_task(label, total=None, unit=unit)

            def redraw(done: int, total: int) -> None:
                bar.update(task_id, completed=done, total=total)
            return redraw
        t0 = time.perf_counter()
        last = [t0]

        def update(done: int, total: int) -> None:
            now = time.perf_counter()
            if not (self.enabled and lines) or done >= total or now - last[0] < PROGRESS_INTERVAL:
                return
            last[0] = now
            print(f"{label}: {done}/{total} {unit} finished, {now - t0:.0f} s", file=sys.stderr,
                  flush=True)
        return update


def _call(ref: weakref.ReferenceType[Progress], method: str) -> None:
    obj = ref()
    if obj is not None:
        getattr(obj, method)()
