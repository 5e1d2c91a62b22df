"""The ``fairalloc`` command: the demo, user errors (one line, exit 2, no traceback), shared
defaults, hyphenated policy names, MILP time limits, sweeps that stream and resume, progress."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from fairalloc.cli import main
from fairalloc.sim import Simulator, poisson_workload
from fairalloc.sim.cli import RUNS_FILE
from fairalloc.sim.policies import ShockwavePolicy, ThemisPolicy
from fairalloc.sim.policies.shockwave import PLAN_NODE_LIMIT
from fairalloc.sim.policies.themis import AUCTION_NODE_LIMIT
from fairalloc.sim.sweep import (
    DEFAULT_GPUS,
    DEFAULT_JOBS,
    DEFAULT_ROUND_DURATION,
    MILP_TIME_LIMIT,
    build_policy,
    read_log,
    run_sweep,
    sweep_tasks,
    task_key,
)


def test_demo_prints_allocation_prices_and_certificate(capsys: pytest.CaptureFixture) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "v100" in out and "price" in out and "certificate: duality gap" in out
    assert "FAILED" not in out


def test_demo_runs_as_a_console_script() -> None:
    proc = subprocess.run([sys.executable, "-m", "fairalloc.cli", "demo", "--method", "cvxpy"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "sharing_incentive ok" in proc.stdout


def test_unknown_command_is_an_error() -> None:
    with pytest.raises(SystemExit) as info:
        main(["nonsense"])
    assert info.value.code == 2


# -- user errors: exit 2, one line naming the option, no traceback (as a user runs it) -------
SIM = ["simulate", "--jobs", "2", "--no-plots", "--no-progress"]
SWEEP = ["sweep", "--jobs", "2", "--workers", "1", "--no-progress"]
USER_ERRORS = {
    "unknown parameter": (SIM + ["--policy", "fifo", "--param", "fifo.k=3"], "--param fifo.k=3"),
    "unknown parameter of a later policy": (
        SIM + ["--policy", "shockwave", "--policy", "fifo", "--param", "fifo.k=3"], "--param"),
    "bad parameter value": (SIM + ["--policy", "shockwave", "--param", "shockwave.k=abc"],
                            "--param shockwave.k=abc"),
    "bad plan option (not only at the first re-plan)": (
        SIM + ["--policy", "fifo", "--policy", "shockwave", "--param", "shockwave.gap_tol=5"],
        "--param shockwave.gap_tol=5"),
    "unknown sweep parameter": (SWEEP + ["--policy", "fifo", "--param", "fifo.k=1,2"],
                                "--param fifo.k=1,2"),
    "out is a file": (SIM + ["--policy", "fifo", "--out", "{file}"], "--out"),
    "out is unwritable": (SIM + ["--policy", "fifo", "--out", "{file}/sub"], "--out"),
    "sweep out is a file": (SWEEP + ["--policy", "fifo", "--out", "{file}"], "--out"),
    "negative gpus": (SIM + ["--policy", "fifo", "--gpus", "-3"], "--gpus"),
    "negative sweep gpus": (SWEEP + ["--policy", "fifo", "--gpus", "-3"], "--gpus"),
    "gpus not a number": (SIM + ["--gpus", "many"], "--gpus"),
    "unknown policy": (SIM + ["--policy", "nope"], "--policy nope"),
    "negative jobs": (SIM + ["--policy", "fifo", "--jobs", "-1"], "--jobs"),
    "negative time limit": (SIM + ["--policy", "fifo", "--time-limit", "-1"], "--time-limit"),
    "negative seeds": (SWEEP + ["--policy", "fifo", "--seeds", "-1"], "--seeds"),
    "zero workers": (SWEEP + ["--policy", "fifo", "--workers", "0"], "--workers"),
    "themis on two types": (SIM + ["--policy", "fifo", "--policy", "themis", "--cluster",
                                   "v100=2,k80=2"], "--policy themis"),
    "ray missing": (SWEEP + ["--policy", "fifo", "--ray", "local"], "--ray"),
    "check: syntax error": (["check", "{syntax}:policy"], "SyntaxError"),
    "check: import error": (["check", "{imports}:policy"], "fairalloc_no_such_module"),
    "check: no such module": (["check", "fairalloc_no_such_module:policy"], "policy"),
    "check: zero examples": (["check", "fairalloc.markets:fisher_market", "--max-examples",
                              "0"], "--max-examples"),
}


@pytest.mark.parametrize("case", list(USER_ERRORS))
def test_user_errors_exit_2_with_one_line_naming_the_option(tmp_path: Path, case: str) -> None:
    args, option = USER_ERRORS[case]
    if case == "ray missing" and importlib.util.find_spec("ray") is not None:
        pytest.skip("Ray is installed")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    (tmp_path / "syntax.py").write_text("def policy(:\n")
    (tmp_path / "imports.py").write_text("import fairalloc_no_such_module\n")
    subs = {"{file}": str(blocker), "{syntax}": str(tmp_path / "syntax.py"),
            "{imports}": str(tmp_path / "imports.py")}
    argv = []
    for a in args:
        for k, v in subs.items():
            a = a.replace(k, v)
        argv.append(a)
    if "--out" not in argv and argv[0] != "check":
        argv += ["--out", str(tmp_path / "out")]
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "fairalloc.cli", *argv], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(lines) == 1 and lines[0].startswith(f"fairalloc {argv[0]}: error: "), lines
    assert option in lines[0], lines[0]
    assert "workers[0]" not in lines[0]
    assert not (tmp_path / "out" / "summary.csv").exists()  # refused before simulating
    assert time.perf_counter() - t0 < 60


def test_policy_names_accept_hyphens(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["simulate", "--jobs", "3", "--gpus", "2", "--policy", "max-min-fairness",
                 "--policy", "themis-ftf", "--param", "max-min-fairness.method=None",
                 "--no-plots", "--no-progress", "--out", str(tmp_path / "s")]) == 0
    summary = pd.read_csv(tmp_path / "s" / "summary.csv", index_col=0)
    assert list(summary.index) == ["max_min_fairness", "themis_ftf"]
    assert main(["sweep", "--jobs", "3", "--gpus", "2", "--policy", "max-min-fairness",
                 "--workers", "1", "--no-progress", "--out", str(tmp_path / "w")]) == 0
    assert pd.read_csv(tmp_path / "w" / "sweep.csv")["policy"].tolist() == ["max_min_fairness"]


def test_simulate_and_sweep_share_documented_defaults(capsys: pytest.CaptureFixture) -> None:
    helps = {}
    for command in ("simulate", "sweep"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        helps[command] = " ".join(capsys.readouterr().out.split())
    for text in helps.values():
        assert f"default {DEFAULT_JOBS})" in text
        assert f"(default {DEFAULT_GPUS})" in text
        assert f"(default {DEFAULT_ROUND_DURATION:g}," in text
        assert "(default 0: no time limit)" in text  # no clock unless asked for
        assert f"shockwave {PLAN_NODE_LIMIT}, themis {AUCTION_NODE_LIMIT})" in text
        assert "output folder" in text
    assert "summary.csv" in helps["simulate"] and RUNS_FILE in helps["sweep"]


# -- MILP limits: work limits by default, a time limit only on request ----------------------
def test_every_milp_policy_has_a_work_limit_and_no_clock_by_default() -> None:
    assert MILP_TIME_LIMIT is None
    assert "time_limit" not in ShockwavePolicy().plan_options
    assert ShockwavePolicy().plan_options["node_limit"] == PLAN_NODE_LIMIT
    assert ThemisPolicy().time_limit is None
    assert ThemisPolicy().node_limit == AUCTION_NODE_LIMIT
    assert build_policy("shockwave", {}).plan_options["node_limit"] == PLAN_NODE_LIMIT
    assert "time_limit" not in build_policy("shockwave", {}).plan_options
    assert build_policy("shockwave", {}, 2.5).plan_options["time_limit"] == 2.5
    assert build_policy("themis", {}, None, 7).node_limit == 7
    assert build_policy("shockwave", {"node_limit": 3}, None, 7).plan_options["node_limit"] == 3
    assert build_policy("shockwave", {"time_limit": 1.0}, 2.5).plan_options["time_limit"] == 1.0
    assert not hasattr(build_policy("fifo", {}, 2.5, 7), "time_limit")
    task = sweep_tasks(["shockwave"], num_jobs=2, gpus=2, time_limit=3.0, node_limit=9)[0]
    assert task.time_limit == 3.0 and task.node_limit == 9


def test_the_time_limit_bounds_every_replan() -> None:
    """Shockwave re-plans through the full MILP (40 jobs, 16 GPUs: ~0.7 s a plan without a
    limit here) stay within a 0.05 s limit (plus the plan's own bookkeeping)."""
    limit, slack = 0.05, 0.25
    w = poisson_workload(40, rate=12.0, seed=0, types=["v100"], max_scale_factor=16)
    policy = build_policy("shockwave", {"k": 12.0, "method": "milp", "warm_start": True}, limit)
    import fairalloc as fa

    Simulator(w, fa.Cluster({"v100": 16}), policy, round_duration=360.0, seed=0).run()
    assert policy.plans > 0
    assert policy.plan_seconds <= policy.plans * (limit + slack), policy.plan_seconds


def test_time_limit_option_reaches_the_policy(tmp_path: Path) -> None:
    out = tmp_path / "w"
    assert main(["sweep", "--policy", "themis", "--jobs", "3", "--gpus", "2", "--workers", "1",
                 "--time-limit", "0", "--no-progress", "--out", str(out)]) == 0
    row = next(iter(read_log(out / RUNS_FILE).values()))
    assert row["milp_time_limited"] == 0 and row["policy"] == "themis"


# -- sweeps stream to disk and resume ---------------------------------------------------------
def _sweep_args(out: Path) -> list[str]:
    return ["sweep", "--policy", "fifo", "--policy", "las", "--seeds", "0", "1", "--load", "20",
            "--jobs", "4", "--gpus", "2", "--workers", "1", "--out", str(out)]


def test_sweep_streams_each_run_and_resumes_after_a_kill(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture) -> None:
    full, cut = tmp_path / "full", tmp_path / "cut"
    assert main(_sweep_args(full)) == 0
    err = capsys.readouterr().err
    assert sum(ln.startswith("[") for ln in err.splitlines()) == 4  # a line per simulation
    lines = (full / RUNS_FILE).read_text().splitlines()
    assert len(lines) == 4
    # a sweep killed after two runs, while writing the third line
    cut.mkdir()
    (cut / RUNS_FILE).write_text("\n".join(lines[:2]) + "\n" + lines[2][:25])
    assert main(_sweep_args(cut)) == 2  # no silent overwrite
    assert "--resume" in capsys.readouterr().err
    assert main([*_sweep_args(cut), "--resume"]) == 0
    captured = capsys.readouterr()
    assert "resumed: 2 simulations read" in captured.out
    assert sum(ln.startswith("[") for ln in captured.err.splitlines()) == 2  # only the rest
    assert len((cut / RUNS_FILE).read_text().splitlines()) == 4
    a, b = pd.read_csv(full / "sweep.csv"), pd.read_csv(cut / "sweep.csv")
    cols = [c for c in a.columns if c != "policy_seconds"]
    pd.testing.assert_frame_equal(a[cols], b[cols])
    for line in (cut / RUNS_FILE).read_text().splitlines():
        assert set(json.loads(line)) == {"key", "row"}


def test_run_sweep_log_keeps_finished_rows_when_a_task_fails(tmp_path: Path) -> None:
    tasks = sweep_tasks(["fifo"], seeds=[0, 1], num_jobs=3, gpus=2)
    log = tmp_path / "runs.jsonl"
    seen = []

    def boom(row: dict, reused: bool) -> None:
        seen.append(row["seed"])
        if len(seen) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(tasks, workers=1, log=log, on_result=boom)
    assert set(read_log(log)) == {task_key(tasks[0]), task_key(tasks[1])}
    df = run_sweep(tasks, workers=1, log=log, resume=True)
    assert df["seed"].tolist() == [0, 1]


def test_sweep_killed_with_sigterm_keeps_finished_runs(tmp_path: Path) -> None:
    out = tmp_path / "w"
    args = ["sweep", "--policy", "fifo", "--seeds", *map(str, range(40)), "--jobs", "6",
            "--gpus", "2", "--workers", "2", "--out", str(out)]
    proc = subprocess.Popen([sys.executable, "-m", "fairalloc.cli", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    log = out / RUNS_FILE
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None and (
            not log.exists() or len(log.read_text().splitlines()) < 2):
        time.sleep(0.1)
    proc.terminate()
    _, err = proc.communicate(timeout=60)
    assert "Traceback" not in err
    done = len(read_log(log))
    assert done >= 2
    if proc.returncode != 0:  # stopped before the end
        assert proc.returncode == 130 and "--resume" in err
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    again = subprocess.run([sys.executable, "-m", "fairalloc.cli", *args, "--resume"],
                           capture_output=True, text=True, timeout=300, env=env)
    assert again.returncode == 0, again.stderr
    assert len(pd.read_csv(out / "sweep.csv")) == 40


# -- progress and tables ----------------------------------------------------------------------
def test_simulate_reports_progress_output_folder_and_units(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture) -> None:
    assert main(["simulate", "--jobs", "3", "--gpus", "2", "--policy", "fifo", "--no-plots",
                 "--out", str(tmp_path / "s")]) == 0
    captured = capsys.readouterr()
    assert "[1/1] fifo: 3 jobs done" in captured.err
    assert f"output in {(tmp_path / 's').resolve()}" in captured.out
    header = next(ln for ln in captured.out.splitlines() if ln.startswith("policy"))
    for unit in ("makespan (h)", "avg JCT (h)", "unfair jobs (%)", "GPU util. (%)",
                 "policy time (s)"):
        assert unit in header
    row = next(ln for ln in captured.out.splitlines() if ln.startswith("fifo"))
    assert "e+" not in row


def test_check_reports_a_line_per_property(capsys: pytest.CaptureFixture) -> None:
    code = main(["check", "fairalloc.markets:fisher_market", "--property", "envy-free",
                 "--property", "feasible", "--max-examples", "5"])
    assert code == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("[1/2] envy_free: passed") and err[1].startswith("[2/2] feasible")


# -- issue #27: trace fields bounded by what the simulator represents; --cluster types once --
TRACE_LINE = ["LM (batch size 10)", "python3 main.py", "dir", "--steps", "1", "1000", "1",
              "static", "1", "-1.000000", "100", "0"]


def _trace_with(tmp_path: Path, col: int, value: str) -> Path:
    """A two-job trace whose second line has ``value`` in field ``col`` (0-based)."""
    bad = list(TRACE_LINE)
    bad[col] = value
    path = tmp_path / "t.tsv"
    path.write_text("\t".join(TRACE_LINE) + "\n" + "\t".join(bad) + "\n")
    return path


#: (field (0-based), value, the field's name in the message): each was read (a job of 1e300
#: steps: numpy's ValueError; of 1e15: MemoryError; a batch size of 0: ZeroDivisionError) or
#: accepted by read_trace on main
TRACE_BOUNDS = [
    (5, "1e300", "total steps"), (5, "1" + "0" * 300, "total steps"), (5, "1e15", "total steps"),
    (6, "1e7", "scale factor"), (8, "1e300", "priority weight"),
    (8, "1e-300", "priority weight"), (10, "1e12", "duration"), (10, "1e-300", "duration"),
    (11, "1e12", "arrival time"),
]


@pytest.mark.parametrize(("col", "value", "field"), TRACE_BOUNDS,
                         ids=[f"{f}={v[:8]}" for _, v, f in TRACE_BOUNDS])
def test_trace_fields_outside_what_the_simulator_represents_are_named(
        tmp_path: Path, col: int, value: str, field: str) -> None:
    from fairalloc.errors import InputError
    from fairalloc.sim import read_trace

    with pytest.raises(InputError, match=rf"t\.tsv line 2: field {col + 1} \({field}\) is .*"
                                         r"it must be in \[") as info:
        read_trace(_trace_with(tmp_path, col, value), types=["v100"])
    assert (info.value.argument, info.value.index) == ("path", (1,))


@pytest.mark.parametrize("job_type", ["LM (batch size 0)", "LM (batch size 1" + "0" * 30 + ")",
                                      "LM (batch size 1" + "0" * 400 + ")"])
def test_trace_batch_sizes_are_bounded(tmp_path: Path, job_type: str) -> None:
    """A batch size of 0 raised ZeroDivisionError, a huge one OverflowError."""
    from fairalloc.errors import InputError
    from fairalloc.sim import read_trace
    from fairalloc.sim.workload import MAX_BATCH_SIZE

    with pytest.raises(InputError, match=rf"t\.tsv line 2: batch size .* outside \[1, "
                                         rf"{MAX_BATCH_SIZE}\]") as info:
        read_trace(_trace_with(tmp_path, 0, job_type), types=["v100"])
    assert (info.value.argument, info.value.index) == ("path", (1,))


def test_too_many_epochs_for_the_schedule_are_named(tmp_path: Path) -> None:
    """Steps within MAX_STEPS can still be too many epochs (a batch-size schedule entry per
    epoch): LM at a batch of 10**9 has one step per epoch."""
    from fairalloc.errors import InputError
    from fairalloc.sim import read_trace

    path = _trace_with(tmp_path, 5, "1e9")
    path.write_text(path.read_text().replace("LM (batch size 10)", "LM (batch size 1000000000)"))
    with pytest.raises(InputError, match=r"t\.tsv line 2: .*MAX_EPOCHS") as info:
        read_trace(path, types=["v100"])
    assert (info.value.argument, info.value.index) == ("path", (1,))


def test_simulate_a_trace_with_a_huge_field_is_one_line(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture) -> None:
    """``fairalloc simulate --trace`` printed numpy's traceback for a job of 1e300 steps."""
    trace = _trace_with(tmp_path, 5, "1e300")
    code = main(["simulate", "--trace", str(trace), "--gpus", "4", "--policy", "fifo",
                 "--no-plots", "--no-progress", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and "Traceback" not in err
    assert len(lines) == 1 and lines[0].startswith("fairalloc simulate: error: --trace: t.tsv "
                                                   "line 2: field 6 (total steps)"), lines
    assert not (tmp_path / "out" / "summary.csv").exists()


@pytest.mark.parametrize("command", ["simulate", "sweep"])
@pytest.mark.parametrize(("cluster", "message"), [
    ("v100=4,v100=8", "type 'v100' is given twice"),
    ("v100=4, v100 =2", "type 'v100' is given twice"),
    ("v100=4,=2", "names no type"),
])
def test_cluster_names_each_type_once(tmp_path: Path, capsys: pytest.CaptureFixture,
                                      command: str, cluster: str, message: str) -> None:
    """A repeated type silently kept its last count (v100=8)."""
    args = [command, "--cluster", cluster, "--jobs", "2", "--policy", "fifo", "--no-progress",
            "--out", str(tmp_path / "out")]
    code = main(args + (["--no-plots"] if command == "simulate" else ["--workers", "1"]))
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert code == 2
    assert len(lines) == 1 and lines[0].startswith(f"fairalloc {command}: error: --cluster")
    assert message in lines[0]


def test_worker_counts_beyond_the_simulator_are_refused(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture) -> None:
    """10**19 GPUs overflowed the simulator's int64 counts: a SimulationError after 10,000
    idle rounds, naming no option."""
    from fairalloc.sim.cli import MAX_WORKERS

    for option in (["--gpus", str(10**19)], ["--cluster", f"v100=2,k80={MAX_WORKERS + 1}"]):
        code = main(["simulate", *option, "--jobs", "2", "--policy", "fifo", "--no-plots",
                     "--no-progress", "--out", str(tmp_path / "out")])
        err = capsys.readouterr().err
        assert code == 2 and f"error: {option[0]}" in err and "at most 2,147,483,647" in err
