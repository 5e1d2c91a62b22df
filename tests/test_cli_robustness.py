"""The simulate / sweep commands never leave a mess (issue #30, Build 1): an interrupt (Ctrl-C at
a terminal, which reaches every process of the group, or a SIGTERM) gives one line and no
traceback from any process, and no half-written file; a bad option writes nothing, so the
corrected command runs; re-running into an output folder follows one explicit rule, the same
for both commands (refused, unless ``--overwrite`` replaces or, for a sweep, ``--resume``
continues)."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from fairalloc.cli import main
from fairalloc.errors import InputError
from fairalloc.sim.cli import RUNS_FILE, SIMULATE_FILES
from fairalloc.sim.sweep import SweepTask, read_log, run_sweep, sweep_tasks

#: seconds a test waits for a command to get going, or to end after a signal
WAIT = 120.0
#: seconds the stopped command's worker processes get to be gone
GONE = 20.0
TRACE_LINE = ["LM (batch size 10)", "python3 main.py", "dir", "--steps", "1", "1000", "1",
              "static", "1", "-1.000000", "100", "0"]


def _cli(*argv: str) -> list[str]:
    return [sys.executable, "-c", "import sys; from fairalloc.cli import main; "
            "sys.exit(main())", *argv]


def _env() -> dict[str, str]:
    root = str(Path(__file__).resolve().parents[1])
    return {**os.environ, "PYTHONPATH": root, "PYTHONWARNINGS": "ignore"}


def _as_from_a_shell() -> None:
    """The command starts as a shell starts it: SIGINT and SIGTERM at their defaults and not
    blocked, whatever the test process's own state (an ignored or blocked signal is inherited
    across fork and exec, and Python installs its KeyboardInterrupt handler only over a
    default SIGINT; the serial suite's run saw the stop tests' commands run to their end)."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.strip()]


def _group_gone(pgid: int) -> bool:
    deadline = time.monotonic() + GONE
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


# -- interrupts -------------------------------------------------------------------------------
#: (signal, sent to the whole process group as a terminal does, or to the command only)
STOPS = [(signal.SIGINT, True), (signal.SIGTERM, True), (signal.SIGTERM, False)]


@pytest.mark.parametrize(("signum", "group"), STOPS,
                         ids=["ctrl-c", "sigterm-to-group", "sigterm-to-command"])
def test_stopping_a_parallel_sweep_prints_one_line_and_no_traceback(
        tmp_path: Path, signum: int, group: bool) -> None:
    """On main, a Ctrl-C made each forked worker print a KeyboardInterrupt traceback (they
    inherited the command's handlers) and the command printed two lines."""
    out = tmp_path / "w"
    args = ["sweep", "--policy", "fifo", "--seeds", *map(str, range(60)), "--jobs", "6",
            "--gpus", "2", "--workers", "2", "--no-progress", "--out", str(out)]
    proc = subprocess.Popen(_cli(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=_env(), start_new_session=True,
                            preexec_fn=_as_from_a_shell)
    log = out / RUNS_FILE
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline and proc.poll() is None and (
            not log.exists() or len(log.read_text().splitlines()) < 2):
        time.sleep(0.05)
    assert proc.poll() is None, "the sweep ended before it could be stopped"
    if group:
        os.killpg(proc.pid, signum)
    else:
        os.kill(proc.pid, signum)
    _, err = proc.communicate(timeout=WAIT)
    assert "Traceback" not in err, err
    assert proc.returncode == 130, err
    lines = _lines(err)
    assert len(lines) == 1 and lines[0].startswith("fairalloc sweep: stopped; "), lines
    assert "--resume" in lines[0]
    assert _group_gone(proc.pid), "worker processes outlived the stopped sweep"
    assert sorted(p.name for p in out.iterdir()) == [RUNS_FILE]  # no sweep.csv, no temp file
    done = read_log(log)
    assert len(done) >= 2
    assert len(done) >= len(log.read_text().splitlines()) - 1  # at most a cut-off last line


def _interrupted(tmp_path: Path, args: list[str], started: str) -> tuple[int, str, int]:
    """Run the CLI with ``args`` in its own session, send the group SIGINT once its stdout
    shows ``started``, and return its exit status, standard error and process group."""
    stdout = tmp_path / "stdout.txt"
    with stdout.open("w") as fh:
        proc = subprocess.Popen(_cli(*args), stdout=fh, stderr=subprocess.PIPE, text=True,
                                env=_env(), start_new_session=True,
                                preexec_fn=_as_from_a_shell)
        deadline = time.monotonic() + WAIT
        while (time.monotonic() < deadline and proc.poll() is None
               and started not in stdout.read_text()):
            time.sleep(0.05)
        assert proc.poll() is None, "the command ended before it could be stopped"
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=WAIT)
    return proc.returncode, err, proc.pid


def test_stopping_simulate_leaves_one_line_and_no_output(tmp_path: Path) -> None:
    out = tmp_path / "s"
    args = ["simulate", "--policy", "fifo", "--policy", "las", "--jobs", "200", "--gpus", "2",
            "--no-plots", "--out", str(out)]
    code, err, _ = _interrupted(tmp_path, args, "fairalloc simulate:")
    assert "Traceback" not in err and code == 130, err
    assert _lines(err) == ["fairalloc simulate: interrupted"]
    assert not out.exists()  # the tables are written at the end, whole; the folder it made goes


def test_stopping_a_sweep_before_any_simulation_finishes_leaves_nothing(tmp_path: Path) -> None:
    """On main the stopped sweep left an empty runs.jsonl, which refused the same command."""
    out = tmp_path / "w"
    args = ["sweep", "--policy", "shockwave", "--seeds", "0", "1", "--jobs", "30", "--gpus",
            "8", "--workers", "2", "--no-progress", "--out", str(out)]
    code, err, group = _interrupted(tmp_path, args, "fairalloc sweep:")
    assert "Traceback" not in err and code == 130, err
    if (out / RUNS_FILE).exists():  # pragma: no cover - a simulation beat the signal
        pytest.skip("a simulation finished before the signal arrived")
    assert _lines(err) == ["fairalloc sweep: stopped before any simulation finished; nothing "
                           "was written"]
    assert not out.exists()
    assert _group_gone(group)


# -- a bad option writes nothing --------------------------------------------------------------
def _trace(tmp_path: Path) -> Path:
    path = tmp_path / "t.tsv"
    path.write_text("\t".join(TRACE_LINE) + "\n" + "\t".join(TRACE_LINE) + "\n")
    return path


def test_a_bad_sweep_trace_writes_nothing_and_the_corrected_command_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """On main the trace was first read by the first simulation: the sweep had already left an
    empty runs.jsonl, and the corrected command was refused ("holds a sweep")."""
    out = tmp_path / "out"
    base = ["sweep", "--policy", "fifo", "--gpus", "2", "--workers", "1", "--no-progress",
            "--out", str(out)]
    assert main([*base, "--trace", str(tmp_path / "missing.tsv")]) == 2
    err = _lines(capsys.readouterr().err)
    assert len(err) == 1 and err[0].startswith("fairalloc sweep: error: --trace: "), err
    assert "missing.tsv" in err[0]
    assert not out.exists()
    assert main([*base, "--trace", str(_trace(tmp_path))]) == 0
    assert len(pd.read_csv(out / "sweep.csv")) == 1


def test_a_bad_throughputs_file_is_named_as_such(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture) -> None:
    """On main a bad --throughputs JSON was reported as a --trace error."""
    bad = tmp_path / "tp.json"
    bad.write_text("{not json")
    out = tmp_path / "out"
    assert main(["simulate", "--policy", "fifo", "--gpus", "2", "--no-progress", "--no-plots",
                 "--trace", str(_trace(tmp_path)), "--throughputs", str(bad),
                 "--out", str(out)]) == 2
    err = _lines(capsys.readouterr().err)
    assert len(err) == 1 and err[0].startswith("fairalloc simulate: error: --throughputs: ")
    assert "--trace" not in err[0] and "tp.json" in err[0]
    assert not out.exists()


def test_sweep_tasks_reads_the_trace_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="missing.tsv"):
        sweep_tasks(["fifo"], trace=str(tmp_path / "missing.tsv"), gpus=2)


def test_a_sweep_that_fails_before_any_simulation_leaves_no_log(tmp_path: Path) -> None:
    """On main the log file was created before the first simulation, so a failed start left an
    empty log that refused the next run."""
    good = sweep_tasks(["fifo"], seeds=[0], num_jobs=3, gpus=2)[0]
    workload = dict(good.workload)
    workload.update(kind="trace", path=str(tmp_path / "missing.tsv"))
    workload.pop("num_jobs")
    workload.pop("max_scale_factor")
    bad = SweepTask(policy="fifo", params=(), seed=0, load=None,
                    workload=tuple(workload.items()), cluster=good.cluster)
    log = tmp_path / "runs.jsonl"
    with pytest.raises(InputError, match="missing.tsv"):
        run_sweep([bad], workers=1, log=log)
    assert not log.exists()
    assert run_sweep([good], workers=1, log=log)["seed"].tolist() == [0]


# -- re-running into an output folder: one rule -----------------------------------------------
RERUN = {
    "simulate": ["simulate", "--policy", "fifo", "--jobs", "3", "--gpus", "2", "--no-progress",
                 "--no-plots"],
    "sweep": ["sweep", "--policy", "fifo", "--seeds", "0", "1", "--jobs", "3", "--gpus", "2",
              "--workers", "1", "--no-progress"],
}
OUTPUT = {"simulate": "summary.csv", "sweep": "sweep.csv"}


@pytest.mark.parametrize("command", list(RERUN))
def test_rerunning_into_an_output_folder_needs_an_explicit_flag(
        tmp_path: Path, capsys: pytest.CaptureFixture, command: str) -> None:
    """On main ``simulate`` silently replaced an earlier run's files while ``sweep`` refused."""
    out = tmp_path / "out"
    argv = [*RERUN[command], "--out", str(out)]
    assert main(argv) == 0
    table = out / OUTPUT[command]
    before = table.read_bytes()
    table.write_bytes(before + b"# the user's note\n")
    capsys.readouterr()
    assert main(argv) == 2
    err = _lines(capsys.readouterr().err)
    assert len(err) == 1 and err[0].startswith(f"fairalloc {command}: error: --out "), err
    assert "--overwrite" in err[0] and ("--resume" in err[0]) == (command == "sweep")
    assert table.read_bytes().endswith(b"# the user's note\n")  # refused: nothing touched
    assert main([*argv, "--overwrite"]) == 0
    assert not table.read_bytes().endswith(b"# the user's note\n")  # replaced, whole
    again = pd.read_csv(table).drop(columns="policy_seconds", errors="ignore")
    first = pd.read_csv(io.BytesIO(before)).drop(columns="policy_seconds", errors="ignore")
    pd.testing.assert_frame_equal(again, first)
    if command == "sweep":
        assert main([*argv, "--resume"]) == 0
        assert "resumed: 2 simulations read" in capsys.readouterr().out
        assert len((out / RUNS_FILE).read_text().splitlines()) == 2
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temp file left


def test_overwrite_replaces_the_earlier_plots(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "out"
    base = ["simulate", "--jobs", "3", "--gpus", "2", "--no-progress", "--out", str(out)]
    assert main([*base, "--policy", "fifo", "--policy", "las"]) == 0
    assert (out / "gantt_las.png").exists()
    assert main([*base, "--policy", "fifo", "--overwrite"]) == 0
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert "gantt_las.png" not in pngs and "gantt_fifo.png" in pngs
    summary = pd.read_csv(out / "summary.csv", index_col=0)
    assert list(summary.index) == ["fifo"]
    assert set(SIMULATE_FILES) <= {p.name for p in out.iterdir()}


def test_resume_and_overwrite_together_are_refused(tmp_path: Path) -> None:
    proc = subprocess.run(_cli(*RERUN["sweep"], "--resume", "--overwrite", "--out",
                               str(tmp_path / "o")),
                          capture_output=True, text=True, env=_env(), timeout=WAIT)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = _lines(proc.stderr)
    assert len(lines) == 1 and "--overwrite" in lines[0] and "--resume" in lines[0]
    assert not (tmp_path / "o").exists()


def test_sweep_log_lines_stay_whole_after_a_resume(tmp_path: Path) -> None:
    out = tmp_path / "out"
    argv = [*RERUN["sweep"], "--out", str(out)]
    assert main(argv) == 0
    log = out / RUNS_FILE
    lines = log.read_text().splitlines()
    log.write_text(lines[0] + "\n" + lines[1][:20])  # killed while writing the second
    assert main([*argv, "--resume"]) == 0
    assert [set(json.loads(ln)) for ln in log.read_text().splitlines()] == [{"key", "row"}] * 2


#: bad options of either command: (argv, the option the one-line error names)
BAD = {
    "sweep: missing trace": (["sweep", "--policy", "fifo", "--trace", "{tmp}/nope.tsv"],
                             "--trace: "),
    "sweep: malformed trace": (["sweep", "--policy", "fifo", "--trace", "{tmp}/bad.tsv"],
                               "--trace: "),
    "simulate: malformed trace": (["simulate", "--policy", "fifo", "--trace", "{tmp}/bad.tsv"],
                                  "--trace: "),
    "simulate: throughputs without a trace": (
        ["simulate", "--policy", "fifo", "--throughputs", "{tmp}/bad.json"], "--throughputs: "),
    "sweep: unknown parameter": (["sweep", "--policy", "fifo", "--param", "fifo.k=1,2"],
                                 "--param fifo.k=1,2"),
    "simulate: unknown policy": (["simulate", "--policy", "nope"], "--policy nope"),
    "sweep: load with a trace": (["sweep", "--policy", "fifo", "--trace", "{tmp}/bad.tsv",
                                  "--load", "3"], "--load"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_option_is_one_line_naming_it_and_writes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture, case: str) -> None:
    (tmp_path / "bad.tsv").write_text("1\t2\n")
    (tmp_path / "bad.json").write_text("{x")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in BAD[case][0]]
    out = tmp_path / "out"
    extra = ["--workers", "1"] if argv[0] == "sweep" else ["--no-plots"]
    assert main([*argv, *extra, "--no-progress", "--out", str(out)]) == 2
    err = _lines(capsys.readouterr().err)
    assert len(err) == 1 and err[0].startswith(f"fairalloc {argv[0]}: error: {BAD[case][1]}")
    assert not out.exists()


def test_version_imports_no_solver() -> None:
    """On main ``fairalloc --version`` loaded every subcommand, scipy.sparse and cvxpy with it."""
    code = ("import sys; from fairalloc.cli import main; assert main(['--version']) == 0; "
            "print(sorted(m for m in ('scipy', 'cvxpy', 'pandas', 'highspy') "
            "if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=_env(), timeout=WAIT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [f"fairalloc {__import__('fairalloc').__version__}", "[]"]
