"""Issue #12 ("Trust") for the runtime modules: elastic fair queuing, the round-based mechanism,
throughput estimation, the simulator (workload readers, simulator, policies, metrics, sweep) and
the CLI.

Promises checked here: a simulation replay is a ``ReplayCheck`` with status ``REPLAYED`` whose
verdict comes from the independent verifier (never ``OPTIMAL``); every scalar, option and file
field is validated with an ``InputError`` naming the argument (and the file and line / JSON
path); only fairalloc errors escape; results and returned arrays are read-only; inputs are never
mutated; rescaling time units (arrival times, GPU-times, received time) by 10^k, k in -12..12,
gives the same answer scaled as the maths says; the simulator never hangs.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.cli import main as cli_main
from fairalloc.errors import CertificateError, FairallocError, InputError, SolverError
from fairalloc.mechanism import (
    RoundScheduler,
    ServerLayout,
    ThroughputEstimator,
    complete_matrix,
    place,
    schedule_round,
)
from fairalloc.queuing import EFQResult, ElasticFairQueue, ReplayCheck, efq_schedule
from fairalloc.queuing.replay import _verify_schedule
from fairalloc.results import Status
from fairalloc.sim import ThroughputTable, Workload, poisson_workload, read_trace, simulate
from fairalloc.sim.metrics import contention, finish_time_fairness
from fairalloc.sim.simulator import SimulationError, Simulator, TimeShares
from fairalloc.sim.sweep import sweep_tasks

FAST = settings(max_examples=30, deadline=None)
#: odd values for scalar arguments: every one must give an InputError (or be accepted)
ODD_SCALARS = [float("nan"), float("inf"), -float("inf"), -1.0, 0.0, "1", b"1", [1.0], (1,),
               None, True, np.array([1.0, 2.0]), {}, object(), 1e308, -0.0]


def _all_writable_arrays(obj: object) -> list[str]:
    """Names of the writable ndarray fields of a dataclass (nested tuples/lists/dicts too)."""
    out = []

    def walk(name: str, value: object) -> None:
        if isinstance(value, np.ndarray):
            if value.flags.writeable:
                out.append(name)
        elif isinstance(value, tuple | list):
            for i, v in enumerate(value):
                walk(f"{name}[{i}]", v)
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(f"{name}[{k!r}]", v)

    for f in dataclasses.fields(obj):  # type: ignore[arg-type]
        walk(f.name, getattr(obj, f.name))
    return out


# =============================================================================================
# elastic fair queuing: a replay, not an optimisation
# =============================================================================================


def test_efq_schedule_is_a_replay_with_its_own_type_and_status() -> None:
    # Ares §2.3 / DESIGN.md: L = 1, 2, 3 at 0 on one GPU -> EFQ 1, 3, 6; mean JCT 10/3.
    r = efq_schedule([0, 0, 0], [1.0, 2.0, 3.0], 1)
    assert isinstance(r, EFQResult) and not isinstance(r, fa.Result)
    assert r.status == Status.REPLAYED and r.status != Status.OPTIMAL
    assert isinstance(r.check, ReplayCheck) and r.check.kind == "efq_schedule"
    assert r.check.ok and r.check.capacity_violation == 0.0 and r.check.finish_residual == 0.0
    assert r.check.events == r.log_time.size > 0
    assert r.objective == pytest.approx(10 / 3)
    assert r.certificate is r.check  # the old name is an alias of the replay check
    assert "replayed" in repr(r) and "ReplayCheck(" in repr(r.check)


def test_replay_check_ok_is_computed_never_set() -> None:
    base = dict(kind="efq_schedule", events=3, capacity_violation=0.0, finish_residual=0.0,
                residuals={"work": 0.0})
    assert ReplayCheck(**base).ok
    assert not ReplayCheck(**{**base, "residuals": {"work": 1e-3}}).ok
    assert not ReplayCheck(**{**base, "residuals": {"work": float("nan")}}).ok
    assert not ReplayCheck(**{**base, "capacity_violation": float("inf")}).ok
    assert not ReplayCheck(**base, tol=float("inf")).ok  # no "ok by infinite tolerance"
    assert not ReplayCheck(**base, tol=0.0).ok
    with pytest.raises(CertificateError, match="replay check failed"):
        ReplayCheck(**{**base, "finish_residual": 1.0}).check()


def test_replay_verdict_comes_from_the_independent_verifier() -> None:
    r = efq_schedule([0.0, 0.0, 1.0], [2.0, 3.0, 1.0], 2)
    kw = dict(num_gpus=r.num_gpus, power=None, alpha=r.alpha, arrival=r.arrival,
              gpu_time=r.gpu_time, requested=np.ones(3), scaling=None,
              virtual_finish=r.virtual_finish, gps_finish=r.gps_finish,
              efq_finish=r.efq_finish, log_t=r.log_time, log_j=r.log_job,
              log_g=r.log_gpus.astype(float), log_p=r.log_power)
    check, _, _ = _verify_schedule(**kw)
    assert check.ok
    late = np.array(r.efq_finish)
    late[0] += 0.25  # a finish time the log does not support
    check, _, res = _verify_schedule(**{**kw, "efq_finish": late})
    assert not check.ok and check.finish_residual == max(res["release"], res["work"],
                                                         res["window"])
    g = r.log_gpus.astype(float).copy()
    g[0] += 5  # over capacity
    check, _, _ = _verify_schedule(**{**kw, "log_g": g, "log_p": g})
    assert not check.ok and check.capacity_violation > 0
    # a result cannot be built as OPTIMAL, nor with a failing check
    with pytest.raises(InputError, match="replayed"):
        dataclasses.replace(r, status=Status.OPTIMAL)
    with pytest.raises(CertificateError):
        dataclasses.replace(r, check=check)


@FAST
@given(st.lists(st.tuples(st.integers(0, 20), st.integers(1, 30), st.integers(1, 4)),
                min_size=1, max_size=8),
       st.integers(1, 6), st.integers(-12, 12))
def test_efq_rescaling_time_units(jobs: list[tuple[int, int, int]], m: int, k: int) -> None:
    a = np.array([j[0] for j in jobs], float)
    w = np.array([j[1] for j in jobs], float)
    req = np.minimum([j[2] for j in jobs], m)
    base = efq_schedule(a, w, m, requested=req)
    c = 10.0 ** k
    r = efq_schedule(a * c, w * c, m, requested=req)
    assert r.check.ok == base.check.ok is True and r.status == Status.REPLAYED
    np.testing.assert_allclose(np.sort(r.efq_finish / c), np.sort(base.efq_finish), rtol=1e-9)
    np.testing.assert_allclose(np.sort(r.gps_finish / c), np.sort(base.gps_finish), rtol=1e-9)
    assert r.objective / c == pytest.approx(base.objective, rel=1e-9)


@FAST
@given(st.lists(st.tuples(st.integers(0, 20), st.integers(1, 30)), min_size=1, max_size=7,
                unique_by=lambda j: j[0]),
       st.integers(1, 4), st.randoms(use_true_random=False))
def test_efq_permuting_jobs_permutes_the_answer(jobs: list[tuple[int, int]], m: int,
                                                rnd: object) -> None:
    a = np.array([j[0] for j in jobs], float)  # distinct arrivals: ties in F go by arrival
    w = np.array([j[1] for j in jobs], float)
    perm = np.arange(a.size)
    rnd.shuffle(perm)  # type: ignore[attr-defined]
    base = efq_schedule(a, w, m)
    r = efq_schedule(a[perm], w[perm], m)
    np.testing.assert_allclose(r.efq_finish, base.efq_finish[perm], rtol=1e-12)
    np.testing.assert_allclose(r.gps_finish, base.gps_finish[perm], rtol=1e-12)


def test_efq_results_and_returned_arrays_are_read_only_and_inputs_unchanged() -> None:
    a, w = np.array([0.0, 1.0, 1.0]), np.array([2.0, 1.0, 4.0])
    r = efq_schedule(a, w, 2, requested=np.array([1, 2, 1]))
    assert _all_writable_arrays(r) == []
    for arr in (r.delay, r.jct, r.allocation_at(1.5)):
        assert not arr.flags.writeable
    assert a.tolist() == [0.0, 1.0, 1.0] and w.tolist() == [2.0, 1.0, 4.0]
    efq, gps = fa.efq_finish_times(a, w, 2)
    assert not efq.flags.writeable and not gps.flags.writeable


@pytest.mark.parametrize("value", ODD_SCALARS)
def test_queue_constructor_scalars_are_validated(value: object) -> None:
    for name in ("start", "alpha", "num_gpus", "unknown_pool", "auto_finish", "record"):
        kw: dict[str, object] = {"num_gpus": 4, name: value}
        try:
            q = ElasticFairQueue(**kw)  # type: ignore[arg-type]
        except InputError as exc:
            assert exc.argument in (name, "gpu_power"), (name, value, exc)
            continue
        except FairallocError as exc:  # pragma: no cover - would be a wrong error class
            pytest.fail(f"{name}={value!r}: {type(exc).__name__}: {exc}")
        # accepted: it must be a sensible value of the right type
        assert isinstance(q.now, float) and math.isfinite(q.now)


def test_queue_start_is_checked_like_a_number() -> None:
    for bad in ("1.5", True, [1.0], None, float("nan")):
        with pytest.raises(InputError, match="start") as info:
            ElasticFairQueue(4, start=bad)
        assert info.value.argument == "start"
    assert ElasticFairQueue(4, start=np.float32(2.5)).now == 2.5


def test_queue_finish_cancel_errors_name_their_argument() -> None:
    q = ElasticFairQueue(4)
    q.submit("a", gpu_time=1.0)
    for call in (q.finish, q.cancel, q.job):
        for bad_id in ("nope", ["unhashable"]):
            with pytest.raises(InputError, match="job_id") as info:
                call(bad_id)
            assert info.value.argument == "job_id"
    for bad_at in ("2", True, float("inf"), [1.0], -1.0):
        with pytest.raises(InputError, match="at") as info:
            q.finish("a", at=bad_at)
        assert info.value.argument == "at"
    for bad_to in (None, "2", float("nan"), -5.0):
        with pytest.raises(InputError, match="to") as info:
            q.advance(bad_to)
        assert info.value.argument == "to"
    with pytest.raises(InputError, match="gpu_time"):
        q.submit("b", gpu_time=float("inf"))
    with pytest.raises(InputError, match="requested"):
        q.submit("b", gpu_time=1.0, requested=1.5)


@FAST
@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-3, 3),
                 st.none(), st.text(max_size=3), st.lists(st.floats(), max_size=3)),
       st.sampled_from(["arrival", "gpu_time", "alpha", "requested", "scaling"]))
def test_efq_schedule_odd_input_only_fairalloc_errors(value: object, name: str) -> None:
    kw: dict[str, object] = dict(arrival=[0.0, 1.0], gpu_time=[1.0, 2.0], num_gpus=2)
    kw[name] = value
    try:
        r = efq_schedule(**kw)  # type: ignore[arg-type]
    except InputError as exc:  # a length mismatch may name the other array
        assert exc.argument == name or (exc.argument in ("arrival", "gpu_time")
                                        and name in ("arrival", "gpu_time"))
    except FairallocError:
        pass
    else:
        assert r.check.ok and r.status == Status.REPLAYED


# =============================================================================================
# round-based mechanism and placement
# =============================================================================================

X3 = np.array([[5, 0], [5, 1], [1, 10]]) / 11


def test_round_assignment_and_placement_are_read_only() -> None:
    a = schedule_round(X3, [1, 1])
    assert _all_writable_arrays(a) == []
    for arr in (a.scheduled, a.idle, a.job_type):
        assert not arr.flags.writeable
    with pytest.raises(ValueError):
        a.type_index[0] = 1
    lay = ServerLayout.uniform(fa.Cluster({"v100": 8}), 4)
    p = place(schedule_round([[1.0], [0.5]], [8], scale_factor=[4, 2]), lay)
    assert _all_writable_arrays(p) == []
    assert not p.row_gpus(0).flags.writeable
    sched = RoundScheduler([[0.5], [0.5]], fa.Cluster({"v100": 2}), servers=ServerLayout.uniform(
        fa.Cluster({"v100": 2}), 2))
    step = sched.step()
    assert _all_writable_arrays(step) == [] and _all_writable_arrays(step.placement) == []


def test_mechanism_inputs_unchanged() -> None:
    X = X3.copy()
    t, e = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]), np.array([2.0, 2.0, 2.0])
    schedule_round(X, [1, 1], received=t, elapsed=e)
    assert np.array_equal(X, X3) and t.tolist() == [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]


@FAST
@given(st.integers(-12, 12), st.integers(0, 30))
def test_mechanism_rescaling_time_units(k: int, rounds: int) -> None:
    sched = RoundScheduler(X3, fa.Cluster({"a": 1, "b": 1}))
    sched.run(rounds)
    t, e = sched.received, sched.elapsed
    base = schedule_round(X3, [1, 1], received=t, elapsed=e)
    c = 2.0 ** (k * 10 // 3)  # powers of two: exact, so ties stay ties
    r = schedule_round(X3, [1, 1], received=t * c, elapsed=e * c)
    assert r.type_index.tolist() == base.type_index.tolist()
    c10 = 10.0 ** k  # decimal factors: the same number of workers used
    r10 = schedule_round(X3, [1, 1], received=t * c10, elapsed=e * c10)
    assert r10.workers.tolist() == base.workers.tolist()


@FAST
@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-3, 3),
                 st.none(), st.text(max_size=2), st.lists(st.floats(), max_size=4)),
       st.sampled_from(["received", "elapsed", "scale_factor", "runnable", "eligible",
                        "fraction", "target", "cluster"]))
def test_schedule_round_odd_input_only_fairalloc_errors(value: object, name: str) -> None:
    kw: dict[str, object] = dict(target=X3, cluster=[1, 1])
    kw[name] = value
    if name == "received":
        kw["elapsed"] = 1.0
    try:
        a = schedule_round(**kw)  # type: ignore[arg-type]
    except FairallocError:
        return
    assert _all_writable_arrays(a) == []


def test_place_and_scheduler_options_validated() -> None:
    a = schedule_round([[1.0], [0.5]], [8], scale_factor=[4, 2])
    lay = ServerLayout.uniform(fa.Cluster({"v100": 8}), 4)
    with pytest.raises(InputError) as info:
        place(a, lay, lease_renewal="yes")
    assert info.value.argument == "lease_renewal"
    with pytest.raises(InputError) as info:
        RoundScheduler(X3, [1, 1], lease_renewal=1)
    assert info.value.argument == "lease_renewal"
    with pytest.raises(InputError) as info:
        RoundScheduler(X3, [1, 1], round_duration=float("nan"))
    assert info.value.argument == "round_duration"
    with pytest.raises(InputError) as info:
        ServerLayout.uniform(fa.Cluster({"v100": 8, "k80": 2}), {"v100": 4})
    assert info.value.argument == "gpus_per_server"
    with pytest.raises(InputError) as info:
        place(a, lay).row_gpus(7)
    assert info.value.argument == "row"


# =============================================================================================
# throughput estimation
# =============================================================================================


def _low_rank(seed: int, m: int = 7, c: int = 5, hide: float = 0.3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    M = rng.random((m, 2)) @ rng.random((2, c)) + 0.1
    M[rng.random(M.shape) < hide] = np.nan
    M[0, 0] = 1.0  # every row and column observed
    return M


@FAST
@given(st.integers(0, 1000), st.integers(-12, 12))
def test_completion_rescaling_invariance(seed: int, k: int) -> None:
    H = _low_rank(seed)
    base = complete_matrix(H)
    c = 10.0 ** k
    r = complete_matrix(H * c)
    assert r.rank == base.rank and r.converged == base.converged
    np.testing.assert_allclose(r.matrix / c, base.matrix, rtol=1e-6, atol=1e-9)
    assert r.train_rmse / c == pytest.approx(base.train_rmse, rel=1e-6, abs=1e-12)


@FAST
@given(st.integers(0, 1000), st.randoms(use_true_random=False))
def test_completion_row_permutation(seed: int, rnd: object) -> None:
    H = _low_rank(seed)
    perm = np.arange(H.shape[0])
    rnd.shuffle(perm)  # type: ignore[attr-defined]
    base = complete_matrix(H, rank=2)
    r = complete_matrix(H[perm], rank=2)
    np.testing.assert_allclose(r.matrix, base.matrix[perm], rtol=1e-5, atol=1e-8)


def test_completion_read_only_inputs_unchanged_and_singular_ridge() -> None:
    H = _low_rank(3)
    keep = H.copy()
    c = complete_matrix(H, reg=0.0, rank=3)  # reg = 0: singular ridge systems fall back
    assert np.isfinite(c.matrix).all()
    assert _all_writable_arrays(c) == []
    np.testing.assert_array_equal(H, keep)
    est = ThroughputEstimator([[[0.5], [0.8]], [[0.6], [0.9]]], rank=1)
    out = est.pair_throughputs([0, 1], [[10.0], [20.0]], [[0, 1]])
    assert out.tolist() == [[[8.0, 12.0]]] and not out.flags.writeable
    assert _all_writable_arrays(est.match([[0.5], [0.8]])) == []


@pytest.mark.parametrize("value", ODD_SCALARS)
def test_estimation_scalars_validated(value: object) -> None:
    H = _low_rank(1)
    for name in ("reg", "tol", "max_iter", "seed", "rank", "max_rank", "method"):
        try:
            complete_matrix(H, **{name: value})  # type: ignore[arg-type]
        except InputError as exc:
            assert exc.argument == name
        except FairallocError as exc:  # pragma: no cover
            pytest.fail(f"{name}={value!r}: {type(exc).__name__}: {exc}")
    for name in ("clip", "labels", "types", "reg"):
        try:
            ThroughputEstimator([[[0.5], [0.8]], [[0.6], [0.9]]], rank=1,
                                **{name: value})  # type: ignore[arg-type]
        except InputError as exc:
            assert exc.argument == name
        except FairallocError as exc:  # pragma: no cover
            pytest.fail(f"{name}={value!r}: {type(exc).__name__}: {exc}")


# =============================================================================================
# trace and throughput files
# =============================================================================================

GOOD_LINE = ["LM (batch size 10)", "python3 main.py", "dir", "--steps", "1", "1000", "1",
             "static", "1", "-1.000000", "100", "0"]


def _trace(tmp_path: Path, rows: list[list[str]], name: str = "t.tsv") -> Path:
    p = tmp_path / name
    p.write_text("".join("\t".join(r) + "\n" for r in rows))
    return p


def _with(col: int, value: str) -> list[str]:
    row = list(GOOD_LINE)
    row[col] = value
    return row


@pytest.mark.parametrize(("col", "value", "match"), [
    (10, "inf", "duration"), (10, "nan", "duration"), (10, "-5", "duration"),
    (10, "1e400", "duration"), (10, "abc", "duration"), (5, "0", "total steps"),
    (5, "inf", "total steps"), (6, "1.5", "scale factor"), (6, "0", "scale factor"),
    (8, "nan", "priority weight"), (11, "-1", "arrival"), (11, "inf", "arrival"),
    (7, "elastic", "mode"),
])
def test_trace_fields_validated_naming_file_and_line(tmp_path: Path, col: int, value: str,
                                                     match: str) -> None:
    p = _trace(tmp_path, [GOOD_LINE, [], _with(col, value)])  # the bad job is on line 3
    with pytest.raises(InputError, match=rf"t\.tsv line 3: .*{match}") as info:
        read_trace(p, types=["v100"])
    assert info.value.argument == "path"
    # the good line alone reads
    assert read_trace(_trace(tmp_path, [GOOD_LINE], "ok.tsv"), types=["v100"]).n == 1


def test_trace_bad_bytes_short_lines_and_empty(tmp_path: Path) -> None:
    p = tmp_path / "bin.tsv"
    p.write_bytes(("\t".join(GOOD_LINE) + "\n").encode() + b"\xff\xfe\tbad\n")
    with pytest.raises(InputError, match=r"line 2: not UTF-8"):
        read_trace(p, types=["v100"])
    with pytest.raises(InputError, match=r"line 1: expected 12 tab-separated fields"):
        read_trace(_trace(tmp_path, [GOOD_LINE[:5]]), types=["v100"])
    with pytest.raises(InputError, match="has no jobs"):
        read_trace(_trace(tmp_path, [[""]]), types=["v100"])
    with pytest.raises(InputError, match="cannot read"):
        read_trace(tmp_path / "missing.tsv", types=["v100"])
    for bad in (None, 3, ""):
        with pytest.raises(InputError) as info:
            read_trace(bad)  # type: ignore[arg-type]
        assert info.value.argument == "path"
    for name, value in (("scaling", 2.0), ("limit", 0), ("types", "v100"),
                        ("reference_type", 3)):
        with pytest.raises(InputError) as info:
            read_trace(_trace(tmp_path, [GOOD_LINE]), **{name: value})
        assert info.value.argument == name


@FAST
@given(st.lists(st.lists(st.sampled_from(["1", "0", "-1", "inf", "nan", "x", "2.5", "",
                                          "static", "gns", "LM (batch size 10)", "1e308"]),
                         min_size=0, max_size=14), min_size=1, max_size=4))
def test_trace_fuzz_only_input_errors(tmp_path_factory: pytest.TempPathFactory,
                                      rows: list[list[str]]) -> None:
    p = _trace(tmp_path_factory.mktemp("fz"), rows)
    try:
        w = read_trace(p, types=["v100"])
    except InputError as exc:
        assert "t.tsv" in str(exc)
        return
    assert np.isfinite(w.arrival).all() and (w.regime_epochs >= 0).all()


JSON_GOOD = {"v100": {"('LM (batch size 10)', 1)": {
    "null": 95.0, "('LM (batch size 10)', 1)": [40.0, 40.0]}}}


@pytest.mark.parametrize(("data", "match"), [
    ([], r"at \$: a throughput file"),
    ({}, r"at \$"),
    ({"v100": []}, r'at \$\["v100"\]'),
    ({"v100": {"LM": {"null": 1.0}}}, r'at \$\["v100"\]\["LM"\]: a job key'),
    ({"v100": {"('LM (batch size 10)', 1)": 3}}, "isolated throughput"),
    ({"v100": {"('LM (batch size 10)', 1)": {"null": "95"}}}, r'\["null"\]: .*number'),
    ({"v100": {"('LM (batch size 10)', 1)": {"null": True}}}, r'\["null"\]: .*number'),
    ({"v100": {"('LM (batch size 10)', 1)": {"null": -1.0}}}, "non-negative"),
    ({"v100": {"('LM (batch size 10)', 1)": {"null": None}}}, "number"),
    ({"v100": {"('LM (batch size 10)', 0)": {"null": 1.0}}}, "scale factor"),
    ({"v100": {"('LM (batch size 10)', 1)": {"null": 1.0, "('LM (batch size 10)', 1)": [1]}}},
     "list of 2"),
    ({"v100": {"('LM (batch size 10)', 1)": {"null": 1.0, "x": [1.0, 1.0]}}}, "pair key"),
    ({"v100": {"('LM (batch size 10)', 1)": {"null": 1.0,
                                             "('LM (batch size 10)', 1)": [1.0, "a"]}}},
     r"\[1\]: a throughput must be a number"),
])
def test_throughput_json_validated_naming_the_path(tmp_path: Path, data: object,
                                                   match: str) -> None:
    p = tmp_path / "tp.json"
    p.write_text(json.dumps(data))
    with pytest.raises(InputError, match=match) as info:
        ThroughputTable.from_json(p)
    assert info.value.argument == "path" and "tp.json" in str(info.value)


def test_throughput_json_bad_text(tmp_path: Path) -> None:
    p = tmp_path / "tp.json"
    p.write_text(json.dumps(JSON_GOOD))
    assert ThroughputTable.from_json(p).rate("LM", 10, 1).tolist() == [95.0]
    p.write_bytes(b'{"v100":\n {\xff}}')
    with pytest.raises(InputError, match="line 2: not UTF-8"):
        ThroughputTable.from_json(p)
    p.write_text('{"v100": {"a": NaN}}')
    with pytest.raises(InputError):
        ThroughputTable.from_json(p)
    p.write_text('{"v100": ')
    with pytest.raises(InputError, match=r"not valid JSON \(line 1"):
        ThroughputTable.from_json(p)
    p.write_text("[" * 100_000)
    with pytest.raises(InputError, match="not valid JSON"):
        ThroughputTable.from_json(p)
    with pytest.raises(InputError) as info:
        ThroughputTable.from_json(p, types="v100")
    assert info.value.argument in ("path", "types")


def test_real_shockwave_files_read_when_present() -> None:
    root = Path(__file__).resolve().parents[2] / "shared" / "data" / "shockwave"
    if not root.exists():
        pytest.skip("../shared/data/shockwave not present")
    w = read_trace(root / "trace_120jobs.tsv")
    assert w.n == 120 and np.isfinite(w.isolated_seconds).all()
    w = read_trace(root / "trace_900jobs.tsv", throughputs=root / "wisr_throughputs.json")
    assert w.n == 900


# =============================================================================================
# generator, simulator, metrics, sweep
# =============================================================================================


@pytest.mark.parametrize(("name", "value"), [
    ("models", "LM"), ("models", ["NoSuchModel"]), ("models", [1]), ("models", []),
    ("seed", -1), ("seed", 1.5), ("seed", "0"), ("batch_start", 1), ("scaling", 2.0),
    ("scaling", float("nan")), ("types", "v100"), ("types", []), ("rate", float("inf")),
    ("reference_type", "k80"), ("throughputs", "table.json"),
    ("scale_factors", [(1.5, 1.0)]), ("mode_probs", [0, 0, 0]),
])
def test_poisson_workload_arguments_named(name: str, value: object) -> None:
    with pytest.raises(InputError) as info:
        poisson_workload(0)
    assert info.value.argument == "num_jobs"
    with pytest.raises(InputError) as info:
        poisson_workload(3, **{name: value})  # type: ignore[arg-type]
    assert info.value.argument == name, str(info.value)
    assert name in str(info.value)


def test_simulator_never_hangs() -> None:
    # epoch times of 1e301 s: the old simulator looped for ~1e298 rounds
    w = Workload.from_arrays([0.0], [[1e-300]], [10.0])
    with pytest.raises(InputError, match="MAX_ROUNDS") as info:
        simulate(w, fa.Cluster({"gpu": 1}), "fifo")
    assert info.value.argument == "workload"
    # an explicit round limit is a clean SimulationError
    slow = Workload.from_arrays([0.0], [[1e-3]], [10.0])
    with pytest.raises(SimulationError, match="after 3 rounds"):
        simulate(slow, fa.Cluster({"gpu": 1}), "fifo", max_rounds=3)
    sim = Simulator(slow, fa.Cluster({"gpu": 1}), fa.sim.make_policy("fifo"))
    assert sim.round_limit() >= math.ceil(1e4 / 360.0)
    assert simulate(slow, fa.Cluster({"gpu": 1}), "fifo").finish[0] == pytest.approx(1e4)


def test_simulation_result_read_only_and_metrics_arrays() -> None:
    w = Workload.from_arrays([0.0, 0.0], [[1.0], [1.0]], [360.0, 720.0])
    r = simulate(w, fa.Cluster({"gpu": 1}), "fifo")
    assert _all_writable_arrays(r) == []
    for arr in (r.jct, contention(r), contention(r, "dynamic"), finish_time_fairness(r)):
        assert not arr.flags.writeable
    with pytest.raises(ValueError):
        r.finish[0] = 0.0


class _Broken:
    name = "broken"
    params: dict = {}

    def reset(self, workload, cluster, *, round_duration, seed):  # noqa: ANN001, D102
        pass

    def allocate(self, state):  # noqa: ANN001, D102
        raise ZeroDivisionError("policy bug")


def test_policy_failures_become_solver_errors_with_the_cause() -> None:
    w = Workload.from_arrays([0.0], [[1.0]], [360.0])
    with pytest.raises(SolverError, match="broken") as info:
        Simulator(w, fa.Cluster({"gpu": 1}), _Broken()).run()
    assert isinstance(info.value.__cause__, ZeroDivisionError)


@pytest.mark.parametrize(("kw", "argument"), [
    (dict(record=1), "record"), (dict(mechanism_fraction="x"), "mechanism_fraction"),
    (dict(seed=-1), "seed"), (dict(max_rounds=0), "max_rounds"),
    (dict(round_duration=float("nan")), "round_duration"),
    (dict(restart_overhead=-1.0), "restart_overhead"),
])
def test_simulator_options_named(kw: dict, argument: str) -> None:
    w = Workload.from_arrays([0.0], [[1.0]], [360.0])
    with pytest.raises(InputError) as info:
        Simulator(w, fa.Cluster({"gpu": 1}), fa.sim.make_policy("fifo"), **kw)
    assert info.value.argument == argument


def test_make_policy_and_sweep_arguments_named() -> None:
    with pytest.raises(InputError, match="no parameter 'x'"):
        fa.sim.make_policy("fifo", dict(x=1))
    with pytest.raises(InputError) as info:
        fa.sim.make_policy("efq", dict(alpha=float("nan")))
    assert info.value.argument == "alpha"
    for kw, argument in ((dict(seeds=[-1]), "seeds"), (dict(seeds="0"), "seeds"),
                         (dict(loads=[float("nan")]), "loads"), (dict(gpus="8"), "gpus"),
                         (dict(restart_overhead=-1), "restart_overhead"),
                         (dict(contention_kind="x"), "contention_kind"),
                         (dict(unfair_threshold=float("inf")), "unfair_threshold"),
                         (dict(params={"fifo": {"prefer": "order"}}), "params"),
                         (dict(workload=3), "workload")):
        with pytest.raises(InputError) as info:
            sweep_tasks(["fifo"], **kw)
        assert info.value.argument == argument, kw


def test_time_shares_policy_realised_and_read_only() -> None:
    class Half:
        name = "half"
        params: dict = {}

        def reset(self, workload, cluster, *, round_duration, seed):  # noqa: ANN001
            pass

        def allocate(self, state):  # noqa: ANN001
            return TimeShares(np.full((state.jobs.n, 1), 0.5))

    w = Workload.from_arrays([0.0, 0.0], [[1.0], [1.0]], [720.0, 720.0])
    r = Simulator(w, fa.Cluster({"gpu": 1}), Half(), round_duration=360.0).run()
    assert sorted(r.finish.tolist()) == [1080.0, 1440.0] and _all_writable_arrays(r) == []


# =============================================================================================
# the CLI: user errors are one line with exit status 2
# =============================================================================================


@pytest.mark.parametrize("args", [
    ["simulate", "--trace", "{bad}", "--no-progress", "--no-plots"],
    ["simulate", "--trace", "{missing}", "--no-progress", "--no-plots"],
    ["simulate", "--jobs", "2", "--policy", "fifo", "--round-duration", "nan", "--no-progress",
     "--no-plots"],
    ["simulate", "--jobs", "2", "--policy", "fifo", "--param", "fifo.x=1", "--no-progress",
     "--no-plots"],
    ["simulate", "--jobs", "2", "--policy", "fifo", "--out", "{unwritable}", "--no-progress",
     "--no-plots"],
    ["sweep", "--policy", "fifo", "--jobs", "2", "--workers", "1", "--trace", "{bad}",
     "--no-progress", "--out", "{out}"],
    ["sweep", "--policy", "fifo", "--jobs", "2", "--workers", "1", "--seeds", "-1",
     "--no-progress", "--out", "{out}"],
])
def test_cli_user_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture,
                                      args: list[str]) -> None:
    bad = _trace(tmp_path, [_with(10, "inf")], "bad.tsv")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    subs = {"{bad}": str(bad), "{missing}": str(tmp_path / "none.tsv"),
            "{unwritable}": str(blocker / "sub"), "{out}": str(tmp_path / "o")}
    code = cli_main([subs.get(a, a) for a in args])
    err = capsys.readouterr().err
    assert code == 2
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"fairalloc {args[0]}: "), err


def test_more_sequence_arguments_named() -> None:
    with pytest.raises(InputError) as info:
        Workload.from_arrays([0.0], [[1.0]], [1.0], ids=5)
    assert info.value.argument == "ids"
    with pytest.raises(InputError) as info:
        Workload.from_arrays([0.0], [[1.0]], [1.0], types=5)
    assert info.value.argument == "types"
    with pytest.raises(InputError) as info:
        schedule_round([[0.5]], [1], ids=5)
    assert info.value.argument == "ids"
    from fairalloc.sim.plots import save_plots

    with pytest.raises(InputError) as info:
        save_plots(3, "/tmp/never-written")  # type: ignore[arg-type]
    assert info.value.argument == "results"
