"""fairalloc.sim metrics, plots, sweeps and the simulate/sweep commands."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import fairalloc as fa
from fairalloc.cli import main
from fairalloc.sim import (
    Workload,
    compare,
    contention,
    finish_time_fairness,
    job_metrics,
    simulate,
    summarize,
    utilization,
)
from fairalloc.sim.sweep import run_sweep, sweep, sweep_tasks


@pytest.fixture(scope="module")
def fifo_run():
    # one GPU, jobs of 100, 200, 300 s arriving at 0 in that order; rounds of 100 s
    w = Workload.from_arrays([0.0, 0.0, 0.0], [[1.0]] * 3, [100.0, 200.0, 300.0])
    return simulate(w, fa.Cluster({"gpu": 1}), "fifo", round_duration=100.0)


def test_hand_computed_metrics(fifo_run) -> None:
    r = fifo_run
    assert r.finish.tolist() == [100.0, 300.0, 600.0]
    s = summarize(r)
    assert s["makespan"] == 600.0 and s["avg_jct"] == pytest.approx(1000.0 / 3)
    assert s["p99_jct"] == pytest.approx(300.0 + 0.98 * 300.0)  # numpy's linear percentile
    # static contention max(1, 3 jobs / 1 GPU) = 3: rho = jct / (3 * isolated)
    assert finish_time_fairness(r).tolist() == pytest.approx([1 / 3, 0.5, 2 / 3])
    assert s["worst_rho"] == pytest.approx(2 / 3) and s["unfair_fraction"] == 0.0
    assert s["utilization"] == 1.0 and s["preemptions"] == 0 and s["rounds"] == 6
    # dynamic: active jobs per round are 3, 2, 2, 1, 1, 1; job 1 saw (3+2+2)/3 over its life,
    # job 2 (3+2+2+1+1+1)/6
    assert contention(r, "dynamic").tolist() == pytest.approx([3.0, 7 / 3, 5 / 3])
    rho_dyn = finish_time_fairness(r, "dynamic")
    assert rho_dyn.tolist() == pytest.approx([1 / 3, 300 / (200 * 7 / 3), 600 / 500])
    assert summarize(r, contention_kind="dynamic", unfair_threshold=0.99)[
        "unfair_fraction"] == pytest.approx(1 / 3)


def test_job_metrics_frame_and_compare(fifo_run) -> None:
    df = job_metrics(fifo_run)
    assert list(df.index) == [0, 1, 2]
    assert df["queueing"].tolist() == [0.0, 100.0, 300.0]
    assert df["rho"].tolist() == pytest.approx([1 / 3, 0.5, 2 / 3])
    assert {"jct", "isolated", "contention", "preemptions", "gpu_seconds"} <= set(df.columns)
    assert fifo_run.to_frame().equals(df)
    table = compare({"a": fifo_run, "b": fifo_run})
    assert list(table.index) == ["a", "b"] and table.index.name == "policy"
    assert table.loc["a", "makespan"] == 600.0
    assert list(compare([fifo_run]).index) == ["fifo"]
    rounds = fifo_run.rounds_frame()
    assert rounds["utilization"].tolist() == pytest.approx([1.0] * 6)
    assert rounds["active_jobs"].tolist() == [3, 2, 2, 1, 1, 1]
    sched = fifo_run.schedule_frame()
    assert sched["job"].tolist() == [0, 1, 1, 2, 2, 2] and set(sched["type"]) == {"gpu"}


def test_metric_bad_inputs(fifo_run) -> None:
    with pytest.raises(fa.InputError, match="SimulationResult"):
        summarize("result")  # type: ignore[arg-type]
    with pytest.raises(fa.InputError, match="kind"):
        contention(fifo_run, "average")
    with pytest.raises(fa.InputError, match="unfair_threshold"):
        summarize(fifo_run, unfair_threshold=0)
    with pytest.raises(fa.InputError, match="empty"):
        compare([])
    assert utilization(fifo_run) == 1.0


def test_plots_draw_and_save(fifo_run, tmp_path) -> None:
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    from fairalloc.sim.plots import (
        plot_comparison,
        plot_gantt,
        plot_rho_cdf,
        plot_utilization,
        save_plots,
    )

    ax = plot_gantt(fifo_run)
    assert len(ax.patches) == 6  # one bar per (round, job)
    assert len(plot_utilization([fifo_run]).lines) == 1
    cdf = plot_rho_cdf({"x": fifo_run, "y": fifo_run})
    assert len(cdf.lines) == 3  # two CDFs and the rho = 1 line
    fig = plot_comparison([fifo_run], metrics=("makespan", "worst_rho"))
    assert len(fig.axes) == 2
    with pytest.raises(fa.InputError, match="metrics"):
        plot_comparison([fifo_run], metrics=("speed",))
    paths = save_plots({"fifo": fifo_run}, tmp_path)
    assert sorted(p.name for p in paths) == ["comparison.png", "gantt_fifo.png", "rho_cdf.png",
                                             "utilization.png"]
    assert all(p.stat().st_size > 1000 for p in paths)


# -- sweeps ----------------------------------------------------------------------------------
def test_sweep_grid_and_identical_results_local_and_parallel() -> None:
    tasks = sweep_tasks(["fifo", "las"], seeds=[0, 1], loads=[20.0],
                        params={"las": {"promote_knob": [2.0, 8.0]}}, num_jobs=5, gpus=4)
    assert len(tasks) == 2 + 4
    assert [t.index for t in tasks] == list(range(6))
    seq = run_sweep(tasks, workers=1)
    par = run_sweep(tasks, workers=2)
    cols = [c for c in seq.columns if c != "policy_seconds"]
    pd.testing.assert_frame_equal(seq[cols], par[cols])
    assert seq.loc[2, "param.promote_knob"] == 2.0 and seq.loc[2, "policy"] == "las"
    # another seed, another workload
    assert seq.loc[0, "avg_jct"] != seq.loc[1, "avg_jct"]


def test_sweep_on_ray_matches_local() -> None:
    ray = pytest.importorskip("ray",
                              reason='Ray is optional: pip install ".[ray]" in the checkout')
    tasks = sweep_tasks(["fifo"], seeds=[0, 1], loads=[20.0], num_jobs=4, gpus=2)
    local = run_sweep(tasks, workers=1)
    try:
        remote = run_sweep(tasks, ray_address="local")
    finally:
        ray.shutdown()
    cols = [c for c in local.columns if c != "policy_seconds"]
    pd.testing.assert_frame_equal(local[cols], remote[cols])


def test_sweep_bad_inputs() -> None:
    with pytest.raises(fa.InputError, match="policies"):
        sweep_tasks([])
    with pytest.raises(fa.InputError, match="unknown policy"):
        sweep_tasks(["nope"])
    with pytest.raises(fa.InputError, match="not swept"):
        sweep_tasks(["fifo"], params={"las": {"promote_knob": [1.0]}})
    with pytest.raises(fa.InputError, match="loads"):
        sweep_tasks(["fifo"], trace="x.tsv", loads=[3.0])
    with pytest.raises(fa.InputError, match="tasks"):
        run_sweep([])
    df = sweep(["fifo"], seeds=[3], num_jobs=3, gpus=2, workers=1)
    assert df["jobs"].tolist() == [3]


# -- the commands ----------------------------------------------------------------------------
def test_simulate_command_writes_csv_and_png(tmp_path, capsys) -> None:
    out = tmp_path / "out"
    code = main(["simulate", "--jobs", "6", "--gpus", "4", "--rate", "20", "--policy", "fifo",
                 "--policy", "las", "--param", "las.promote_knob=4", "--round-duration", "600",
                 "--out", str(out), "--no-progress"])
    assert code == 0
    text = capsys.readouterr().out
    assert "makespan" in text and "fifo" in text and "las" in text
    summary = pd.read_csv(out / "summary.csv", index_col=0)
    assert list(summary.index) == ["fifo", "las"]
    jobs = pd.read_csv(out / "jobs.csv")
    assert len(jobs) == 12 and "rho" in jobs.columns
    assert (out / "comparison.png").exists() and (out / "gantt_las.png").exists()


def test_simulate_command_reads_a_trace(tmp_path, capsys) -> None:
    line = "\t".join(["LM (batch size 10)", "cmd", "lm", "--steps", "1", "50000", "1", "gns",
                      "1", "-1", "600", "0"])
    trace = tmp_path / "t.tsv"
    trace.write_text(line + "\n" + line.replace("\t0\n", "\t30\n")[:-1] + "30\n")
    code = main(["simulate", "--trace", str(trace), "--gpus", "1", "--policy", "fifo",
                 "--no-plots", "--no-progress", "--out", str(tmp_path / "o")])
    assert code == 0 and "trace" in capsys.readouterr().out
    assert not (tmp_path / "o" / "comparison.png").exists()


def test_simulate_command_errors(tmp_path, capsys) -> None:
    assert main(["simulate", "--policy", "nope", "--jobs", "2", "--no-progress",
                 "--out", str(tmp_path)]) == 2
    assert main(["simulate", "--param", "fifo.x", "--jobs", "2", "--out", str(tmp_path)]) == 2
    assert main(["simulate", "--cluster", "v100", "--out", str(tmp_path)]) == 2
    assert "InputError" in capsys.readouterr().err
    assert main(["simulate", "--list-policies"]) == 0
    assert "shockwave" in capsys.readouterr().out


def test_sweep_command(tmp_path, capsys) -> None:
    code = main(["sweep", "--policy", "fifo", "--policy", "gandiva_fair", "--seeds", "0", "1",
                 "--load", "20", "--jobs", "4", "--gpus", "2", "--workers", "1",
                 "--out", str(tmp_path), "--no-progress"])
    assert code == 0
    df = pd.read_csv(tmp_path / "sweep.csv")
    assert len(df) == 4 and set(df["policy"]) == {"fifo", "gandiva_fair"}
    assert "gandiva_fair" in capsys.readouterr().out
    assert np.isfinite(df["makespan"]).all()
