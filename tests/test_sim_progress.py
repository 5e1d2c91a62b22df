"""The progress display of ``fairalloc simulate`` / ``sweep`` (issue #30: the hand-written line
froze while the main thread waited on a MILP or on the worker pool; rich's bar redraws from its
own thread)."""

from __future__ import annotations

import io
import multiprocessing
import time

import pytest

from fairalloc.sim._progress import PROGRESS_INTERVAL, TTY_REFRESH, Progress

rich_console = pytest.importorskip("rich.console")

#: the label of the test's task, counted in the captured output (one per redraw)
LABEL = "[1/1] fifo"
#: seconds the main thread blocks: over one second, so the elapsed column must reach 0:00:01
BLOCKED = 1.2


def _console() -> tuple[object, io.StringIO]:
    buf = io.StringIO()
    return rich_console.Console(file=buf, force_terminal=True, width=100,
                                color_system=None), buf


def test_the_bar_keeps_redrawing_its_elapsed_time_while_the_main_thread_blocks() -> None:
    console, buf = _console()
    with Progress(True, console=console) as bar:
        update = bar.task(LABEL)
        update(1, 10)
        drawn = buf.getvalue().count(LABEL)
        time.sleep(BLOCKED)  # a MILP, or the wait on the worker pool: no update at all
        later = buf.getvalue()
    assert later.count(LABEL) - drawn >= 2, later  # redrawn while blocked
    assert "0:00:01" in later  # ... with its elapsed time moving
    assert BLOCKED / TTY_REFRESH >= 2  # the refresh period allows two redraws


def test_lines_stay_whole_and_the_bar_goes_when_it_ends() -> None:
    console, buf = _console()
    done = f"{LABEL}: 3 jobs done in 0.1 s"
    with Progress(True, console=console) as bar:
        bar.task(LABEL)(1, 3)
        bar.line(done)
    out = buf.getvalue()
    assert done in out  # printed above the bar, no markup or highlighting eaten
    assert out.endswith("\x1b[2K")  # the bar's last drawing erased: only the lines stay


def test_the_bar_keeps_redrawing_after_a_fork() -> None:
    """A sweep forks its workers while the bar runs: the refresh pauses across the fork."""
    if "fork" not in multiprocessing.get_all_start_methods():  # pragma: no cover - Windows
        pytest.skip("no fork on this platform")
    console, buf = _console()
    with Progress(True, console=console) as bar:
        bar.task(LABEL)(1, 10)
        child = multiprocessing.get_context("fork").Process(target=print, args=("child",))
        child.start()
        child.join(timeout=10)
        assert child.exitcode == 0
        drawn = buf.getvalue().count(LABEL)
        time.sleep(3 * TTY_REFRESH)
        assert buf.getvalue().count(LABEL) > drawn


def test_without_a_terminal_only_plain_lines(capsys: pytest.CaptureFixture) -> None:
    with Progress(True) as bar:  # capsys's stderr is no terminal
        update = bar.task(LABEL)
        update(1, 10)  # sooner than PROGRESS_INTERVAL after the start: quiet
        bar.line("done")
    err = capsys.readouterr().err
    assert err == "done\n" and PROGRESS_INTERVAL > 0
    with Progress(False) as bar:
        bar.task(LABEL)(1, 10)
        bar.line("done")
    assert capsys.readouterr().err == ""
