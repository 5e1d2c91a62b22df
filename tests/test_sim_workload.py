"""fairalloc.sim models, workload, generator, trace: schedules, workloads, generator, traces."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.sim import (
    JobSpec,
    ThroughputTable,
    Workload,
    batch_size_schedule,
    poisson_workload,
    read_trace,
)
from fairalloc.sim.generator import MAX_JOBS


# -- batch-size schedules ------------------------------------------------------------------
def test_gns_doubles_after_e0_3e0_7e0_and_stops_at_the_cap() -> None:
    s = batch_size_schedule("gns", "LM", 5, 200, 40)  # e0 = 10: x2 at 10, x4 at 30, x8 at 70
    assert s[:10].tolist() == [5] * 10
    assert s[10:30].tolist() == [10] * 20 and s[30:70].tolist() == [20] * 40
    assert set(s[70:].tolist()) == {40}  # the 16x doubling at 150 is capped at 40


def test_accordion_small_in_critical_regimes_large_elsewhere() -> None:
    s = batch_size_schedule("accordion", "ResNet-18", 32, 300, 256)
    crit = np.zeros(300, dtype=bool)
    crit[np.arange(300) <= 90] = True  # first 30 % (and the 10-epoch head)
    crit[150:160] = crit[250:260] = True
    assert (s[crit] == 32).all() and (s[~crit] == 256).all()
    # ResNet-50's periodic critical regimes: e % 30 < 10 (after the first 30 %)
    r = batch_size_schedule("accordion", "ResNet-50", 16, 100, 128)
    assert r[30] == 16 and r[40] == 128 and r[60] == 16 and r[69] == 16 and r[70] == 128


@pytest.mark.parametrize("mode", ["static", "accordion", "gns"])
def test_models_without_a_rule_and_capped_jobs_stay_static(mode: str) -> None:
    assert set(batch_size_schedule(mode, "CycleGAN", 1, 50, 4).tolist()) == {1}
    assert set(batch_size_schedule(mode, "LM", 80, 50, 80).tolist()) == {80}
    assert set(batch_size_schedule(mode, "unknown-model", 7, 50, 64).tolist()) == {7}
    assert set(batch_size_schedule("accordion", "Transformer", 16, 50, 128).tolist()) == {16}


@given(st.sampled_from(["ResNet-18", "ResNet-50", "LM", "Recommendation", "Transformer"]),
       st.sampled_from([1, 2, 4]), st.integers(1, 400), st.integers(0, 4))
def test_gns_schedule_is_nondecreasing_powers_of_two(model: str, b0: int, n: int,
                                                     cap_doublings: int) -> None:
    s = batch_size_schedule("gns", model, b0, n, b0 * 2 ** cap_doublings)
    assert s.shape == (n,) and (np.diff(s) >= 0).all()
    ratio = s / b0
    assert np.allclose(2 ** np.round(np.log2(ratio)), ratio)
    assert s.max() <= b0 * 2 ** cap_doublings


def test_bad_schedule_arguments() -> None:
    with pytest.raises(fa.InputError, match="mode"):
        batch_size_schedule("elastic", "LM", 5, 10, 80)
    with pytest.raises(fa.InputError, match="initial"):
        batch_size_schedule("gns", "LM", 0, 10, 80)


# -- workloads -------------------------------------------------------------------------------
def test_from_jobs_packs_regimes_and_derives_isolated_times() -> None:
    jobs = [JobSpec(arrival=0.0, regimes=[(32, 2.0, [50.0, 100.0]), (64, 4.0, [25.0, 60.0])],
                    iterations_per_epoch=[10, 5], scale_factor=2, job_id="a", mode="gns"),
            JobSpec(arrival=5.0, regimes=[(8, 1.5, [np.inf, 10.0])], job_id="b")]
    w = Workload.from_jobs(jobs, ["v100", "k80"])
    assert w.n == 2 and w.ids == ("a", "b") and w.regime_epochs.shape == (2, 2)
    assert w.total_epochs.tolist() == [6.0, 1.5]
    assert w.seconds_on().tolist() == [[200.0, 440.0], [np.inf, 15.0]]
    assert w.isolated_seconds.tolist() == [200.0, 15.0]
    assert w.gpu_seconds.tolist() == [400.0, 15.0]
    assert w.runnable.tolist() == [[True, True], [False, True]]
    assert w.total_steps.tolist() == [40.0, 1.5]
    sub = w.subset([1])
    assert sub.ids == ("b",) and sub.index("b") == 0
    df = w.to_frame()
    assert list(df.index) == ["a", "b"] and df.loc["a", "regimes"] == 2


@pytest.mark.parametrize("bad, match", [
    (dict(regimes=[]), "regimes is empty"),
    (dict(regimes=[(32, -1.0, [1.0])]), "epochs must be positive"),
    (dict(regimes=[(32, 1.0, [0.0])]), "epoch seconds must be positive"),
    (dict(regimes=[(32, 1.0, [np.inf])]), "cannot run on any type"),
    (dict(regimes=[(32, 1.0, [1.0, 2.0])]), "one per type"),
    (dict(regimes=[(32, 1.0, [1.0])], mode="pollux"), "mode"),
    (dict(regimes=[(32, 1.0, [1.0])], scaling=1.5), "scaling"),
    (dict(regimes=[(32, 1.0, [1.0])], iterations_per_epoch=[1, 2]), "iterations_per_epoch"),
])
def test_from_jobs_rejects_bad_jobs_naming_them(bad: dict, match: str) -> None:
    good = JobSpec(arrival=0.0, regimes=[(1, 1.0, [1.0])])
    spec = {"arrival": 1.0, **bad}
    with pytest.raises(fa.InputError, match=match) as info:
        Workload.from_jobs([good, JobSpec(**spec)], ["gpu"])
    assert info.value.argument == "jobs" and info.value.index == (1,)


def test_from_arrays_and_cluster_checks() -> None:
    w = Workload.from_arrays([0, 10], [[4.0, 0.0], [1.0, 2.0]], [40, 20], scale_factor=[1, 2],
                             types=["a", "b"], ids=["x", "y"])
    assert w.regime_seconds[:, 0].tolist() == [[10.0, np.inf], [20.0, 10.0]]
    w.check_cluster(fa.Cluster({"a": 1, "b": 2}))
    with pytest.raises(fa.InputError, match="fits on no type"):
        w.check_cluster(fa.Cluster({"a": 1, "b": 1}))
    with pytest.raises(fa.InputError, match="differ"):
        w.check_cluster(fa.Cluster({"b": 2, "a": 1}))
    with pytest.raises(fa.InputError, match="all zero"):
        Workload.from_arrays([0], [[0.0]], [1])
    with pytest.raises(fa.InputError, match="steps"):
        Workload.from_arrays([0], [[1.0]], [0])


def test_poisson_workload_is_seeded_and_follows_the_rate() -> None:
    a = poisson_workload(400, rate=10.0, seed=7)
    b = poisson_workload(400, rate=10.0, seed=7)
    assert np.array_equal(a.arrival, b.arrival) and a.mode == b.mode
    assert np.array_equal(a.regime_seconds, b.regime_seconds)
    gaps = np.diff(a.arrival)
    assert abs(gaps.mean() - 360.0) < 0.15 * 360.0  # mean inter-arrival 1/rate hours
    assert not np.array_equal(poisson_workload(400, rate=10.0, seed=8).arrival, a.arrival)
    # durations: the isolated time at the initial batch size is within the classes' 0.2-5 h
    first = a.regime_seconds[:, 0, 0] * a.total_epochs
    assert first.min() >= 0.2 * 3600 * (1 - 1e-9) and first.max() <= 5 * 3600 * (1 + 1e-9)
    assert set(a.scale_factor.tolist()) <= {1, 2, 4, 8}
    capped = poisson_workload(50, seed=1, max_scale_factor=2)
    assert capped.scale_factor.max() <= 2
    assert (poisson_workload(5, seed=1, batch_start=True).arrival == 0).all()


def test_poisson_workload_bad_inputs() -> None:
    with pytest.raises(fa.InputError, match="num_jobs"):
        poisson_workload(0)
    with pytest.raises(fa.InputError, match="rate"):
        poisson_workload(3, rate=-1)
    with pytest.raises(fa.InputError, match="seed"):
        poisson_workload(3, seed=1.5)  # type: ignore[arg-type]
    with pytest.raises(fa.InputError, match="max_scale_factor"):
        poisson_workload(3, max_scale_factor=0)
    # fuzz seed 1919: a count numpy cannot allocate raised numpy's ValueError
    for huge in (10**400, MAX_JOBS + 1):
        with pytest.raises(fa.InputError, match="num_jobs must be at most") as info:
            poisson_workload(huge, types=("nope",))
        assert info.value.argument == "num_jobs"


# -- the trace reader ------------------------------------------------------------------------
def _write_trace(tmp_path, lines: list[str], table: dict | None = None):
    p = tmp_path / "trace_small.tsv"
    p.write_text("\n".join(lines) + "\n")
    if table is not None:
        (tmp_path / "tacc_throughputs.json").write_text(json.dumps(table))
    return p


TABLE = {  # iterations/s of LM (dataset 59,675 samples) on one v100 and one k80
    "v100": {"('LM (batch size 10)', 1)": {"null": 100.0},
             "('LM (batch size 20)', 1)": {"null": 80.0},
             "('LM (batch size 40)', 1)": {"null": 0.0}},
    "k80": {"('LM (batch size 10)', 1)": {"null": 25.0},
            "('LM (batch size 20)', 1)": {"null": 20.0}},
    "k80_unconsolidated": {"('LM (batch size 10)', 1)": {"null": 5.0}},
}


def _line(job_type: str, steps: int, sf: int, mode: str, duration: float, arrival: float,
          weight: float = 1.0) -> str:
    return "\t".join([job_type, "python3 main.py", "lm", "--steps", "1", str(steps), str(sf),
                      mode, str(weight), "-1.000000", str(duration), str(arrival)])


def test_read_trace_with_a_throughput_table_next_to_it(tmp_path) -> None:
    ipe10 = math.ceil(59_675 / 10)  # 5968 iterations per epoch at batch 10
    steps = 30 * ipe10  # 30 epochs
    p = _write_trace(tmp_path, [
        _line("LM (batch size 10)", steps, 1, "gns", steps / 100.0, 0),
        _line("LM (batch size 10)", steps, 1, "static", steps / 50.0, 60),  # half the table speed
    ], TABLE)
    w = read_trace(p)
    assert w.types == ("v100", "k80")  # the _unconsolidated variant is dropped
    assert w.arrival.tolist() == [0.0, 60.0] and w.mode == ("gns", "static")
    # GNS: 10 epochs at batch 10, then batch 20 (batch 40 cannot run: the cap is 20)
    assert w.num_regimes.tolist() == [2, 1]
    assert w.regime_batch[0, :2].tolist() == [10.0, 20.0]
    assert w.regime_epochs[0, :2].tolist() == [10.0, 20.0]
    ipe20 = math.ceil(59_675 / 20)
    assert w.regime_seconds[0, 0].tolist() == pytest.approx([ipe10 / 100.0, ipe10 / 25.0])
    assert w.regime_seconds[0, 1].tolist() == pytest.approx([ipe20 / 80.0, ipe20 / 20.0])
    # the second job's duration says it runs at half the table's speed, on every type
    assert w.regime_seconds[1, 0].tolist() == pytest.approx([ipe10 / 50.0, ipe10 / 12.5])
    assert w.max_batch.tolist() == [20.0, 20.0]


def test_read_trace_builtin_table_limit_and_types(tmp_path) -> None:
    p = _write_trace(tmp_path, [_line("ResNet-18 (batch size 32)", 10_000, 1, "accordion",
                                      500.0, 0),
                                _line("Transformer (batch size 16)", 2_000, 2, "static",
                                      300.0, 5)])
    w = read_trace(p, types=["v100"])
    assert w.types == ("v100",) and w.n == 2
    assert w.seconds_on()[1, 0] == pytest.approx(300.0)  # static: duration is preserved
    assert read_trace(p, limit=1).n == 1


@pytest.mark.parametrize("line, match", [
    ("LM (batch size 10)\tcmd\tdir", "12 tab-separated"),
    (_line("LM (batch size 10)", 100, 1, "pollux", 10, 0), "mode"),
    (_line("LM (batch size 10)", 100, 1, "static", -10, 0), "positive"),
    (_line("LM (batch size 10)", 100, 1, "static", "ten", 0), "line 1"),  # type: ignore[arg-type]
])
def test_read_trace_rejects_malformed_lines(tmp_path, line: str, match: str) -> None:
    with pytest.raises(fa.InputError, match=match):
        read_trace(_write_trace(tmp_path, [line]))


def test_read_trace_missing_file_and_table(tmp_path) -> None:
    with pytest.raises(fa.InputError, match="cannot read trace"):
        read_trace(tmp_path / "nope.tsv")
    with pytest.raises(fa.InputError, match="cannot read throughputs"):
        ThroughputTable.from_json(tmp_path / "nope.json")
    with pytest.raises(fa.InputError, match="not one of"):
        read_trace(_write_trace(tmp_path, [_line("LM (batch size 10)", 100, 1, "static", 10,
                                                 0)]), reference_type="tpu")


def test_throughput_tables() -> None:
    t = ThroughputTable.builtin()
    assert t.types == ("v100", "p100", "k80")
    r1, r2 = t.rate("ResNet-50", 32, 1), t.rate("ResNet-50", 32, 2)
    assert (r1 > 0).all() and r2[0] == pytest.approx(r1[0] * 2 ** 0.8)
    assert r1[0] > r1[1] > r1[2]
    assert t.batch_sizes("LM", 1) == [5, 10, 20, 40, 80]
    assert t.restrict(["k80"]).rate("LM", 5, 1).shape == (1,)
    with pytest.raises(fa.InputError, match="types"):
        t.restrict(["tpu"])
