"""Elastic fair queuing (Ares §3): worked examples, Theorem 1, scheduling rule, API, bad input."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.queuing.replay import _verify_schedule

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True)


# ---------------------------------------------------------------------------------------------
# helpers (independent of the implementation)
# ---------------------------------------------------------------------------------------------


def brute_caps(requested, scaling, num_gpus, alpha):
    """The doubling rule of §3.3, one job at a time with np.interp."""
    requested = np.asarray(requested, float)
    if scaling is None:
        return np.full(requested.size, num_gpus)
    scaling = np.broadcast_to(np.asarray(scaling, float), (requested.size, np.shape(scaling)[-1]))
    grid = 2.0 ** np.arange(scaling.shape[1])
    caps = []
    for r, curve in zip(requested, scaling, strict=True):
        per_r = np.interp(r, grid, curve) / r
        g = r
        while 2 * g <= grid[-1] and np.interp(2 * g, grid, curve) / (2 * g) >= alpha * per_r * (
            1 - 1e-12
        ):
            g *= 2
        caps.append(min(g, num_gpus))
    return np.array(caps)


def breakpoints(r):
    bps = np.unique(np.concatenate([r.log_time, r.arrival, r.efq_finish]))
    return (bps[1:] + bps[:-1]) / 2, np.diff(bps)


def busy_period(r):
    """Longest interval with every GPU allocated, from allocation_at alone."""
    mids, lengths = breakpoints(r)
    best = cur = 0.0
    for t, dt in zip(mids, lengths, strict=True):
        if r.allocation_at(t).sum() == r.num_gpus:
            cur += dt
            best = max(best, cur)
        else:
            cur = 0.0
    return best


def theorem_hypothesis(r):
    """For each job j: (P_j saturated the cluster on (t0_j, f_j), t0_j) as in the proof.

    P_j = jobs served no later than j (priority <= j's); t0_j = start of the union of the
    P_j jobs' EFQ lifetimes [a_k, f_k) that contains a_j.
    """
    mids, _ = breakpoints(r)
    allocs = np.array([r.allocation_at(t) for t in mids])
    out = []
    for j in range(r.arrival.size):
        in_p = r.priority <= r.priority[j]
        t0 = r.arrival[j]
        changed = True
        while changed:  # extend the component backwards while some P job covers t0
            before = in_p & (r.arrival < t0) & (r.efq_finish >= t0)
            changed = bool(before.any())
            if changed:
                t0 = r.arrival[before].min()
        window = (mids > t0) & (mids < r.efq_finish[j])
        saturated = bool(np.all(allocs[window][:, in_p].sum(axis=1) == r.num_gpus))
        out.append((saturated, t0))
    return out


# strategies building only valid instances ------------------------------------------------


@st.composite
def arrivals(draw, max_jobs=10):
    n = draw(st.integers(1, max_jobs))
    gaps = draw(st.lists(st.integers(0, 12), min_size=n, max_size=n))
    arrival = np.cumsum(gaps) / 4.0  # quarter units: many simultaneous arrivals
    work = np.array(draw(st.lists(st.integers(1, 40), min_size=n, max_size=n))) / 4.0
    return arrival, work


@st.composite
def efficiency_curves(draw, n, levels, floor):
    """Throughput at 1, 2, ..., 2^(levels-1) GPUs with non-increasing per-GPU efficiency >= floor
    (relative to one GPU)."""
    steps = draw(st.lists(st.lists(st.floats(floor, 1.0,
                                             allow_subnormal=False), min_size=levels - 1,
                                   max_size=levels - 1), min_size=n, max_size=n))
    eff = np.minimum.accumulate(np.hstack([np.ones((n, 1)), np.array(steps).reshape(n, -1)]),
                                axis=1)
    return eff * 2.0 ** np.arange(levels)


@st.composite
def general_instance(draw):
    arrival, work = draw(arrivals())
    n = arrival.size
    m = draw(st.integers(1, 12))
    levels = draw(st.integers(1, 5))
    alpha = draw(st.sampled_from([0.5, 0.6, 0.75, 0.9, 1.0]))
    curves = draw(efficiency_curves(n, levels, 0.3))
    top = min(m, 2 ** (levels - 1))
    requested = np.array(draw(st.lists(st.integers(1, top), min_size=n, max_size=n)))
    return dict(arrival=arrival, gpu_time=work, num_gpus=m, alpha=alpha, requested=requested,
                scaling=curves)


@st.composite
def saturating_instance(draw):
    """Every job's doubling ladder reaches the whole cluster at efficiency >= alpha."""
    arrival, work = draw(arrivals())
    n = arrival.size
    m = draw(st.integers(1, 12))
    alpha = draw(st.sampled_from([0.5, 0.6, 0.75, 0.9]))
    levels = int(np.ceil(np.log2(m))) + 2
    curves = draw(efficiency_curves(n, levels, alpha))
    requested = np.array(draw(st.lists(st.sampled_from([1, 2, 4]), min_size=n, max_size=n)))
    requested = np.minimum(requested, m)
    hetero = draw(st.booleans())
    kwargs = dict(arrival=arrival, gpu_time=work, alpha=alpha, requested=requested,
                  scaling=curves)
    if hetero and m >= 2:
        fast = draw(st.integers(1, m - 1))
        kwargs["num_gpus"] = {"fast": fast, "slow": m - fast}
        kwargs["gpu_power"] = {"fast": draw(st.floats(1.0, 3.0)), "slow": 1.0}
    else:
        kwargs["num_gpus"] = m
    return kwargs


# ---------------------------------------------------------------------------------------------
# worked examples (hand-checked numbers)
# ---------------------------------------------------------------------------------------------


def test_three_jobs_one_gpu():
    # DESIGN.md / Ares §2.3: L = 1, 2, 3 GPU-hours at time 0 on one GPU, linear scaling.
    efq, gps = fa.efq_finish_times([0, 0, 0], [1.0, 2.0, 3.0], 1)
    np.testing.assert_allclose(gps, [3.0, 5.0, 6.0])
    np.testing.assert_allclose(efq, [1.0, 3.0, 6.0])
    r = fa.efq_schedule([0, 0, 0], [1.0, 2.0, 3.0], 1)
    assert r.objective == pytest.approx(10 / 3)
    assert r.virtual_finish.tolist() == [1.0, 2.0, 3.0]
    assert r.check.ok and r.status == "replayed"  # a replay, not an optimisation (#12)
    assert r.stats.path == ("gps_reference", "efq_events", "replay_check")
    assert r.stats.fallbacks == ()


def test_figure4_reconstruction():
    # Ares Fig. 4 on 6 GPUs: jobs 1 and 3 lose efficiency beyond 4 GPUs, job 2 does not.
    # Job 1 (12 GPU-h, 1 GPU requested) and job 2 (21 GPU-h, 2 requested) at 0, job 3
    # (12 GPU-h) at 2. V(2) = 2 * 6/2 = 6 so F = 12, 21, 18: order 1, 3, 2.
    sub = [1.0, 2.0, 4.0, 4.8]  # e(8) = 0.6 < 0.75
    r = fa.efq_schedule([0, 0, 2], [12.0, 21.0, 12.0], 6, requested=[1, 2, 1],
                        scaling=[sub, [1, 2, 4, 8], sub])
    assert r.max_gpus.tolist() == [4, 6, 4]
    np.testing.assert_allclose(r.virtual_finish, [12.0, 21.0, 18.0])
    assert r.priority.tolist() == [0, 2, 1]
    # job 1 on 4 GPUs until 3; job 2 on 2, preempted by job 3 at 2; at 3 job 3 gets 4 and
    # job 2 the other 2; job 3 done at 5.5 (2*1 + 4*2.5 = 12); job 2 then takes all 6.
    assert r.allocation_at(1.0).tolist() == [4, 2, 0]
    assert r.allocation_at(2.5).tolist() == [4, 0, 2]
    assert r.allocation_at(4.0).tolist() == [0, 2, 4]
    assert r.allocation_at(6.0).tolist() == [0, 6, 0]
    np.testing.assert_allclose(r.efq_finish, [3.0, 7.5, 5.5])
    # GPS: V reaches 12 at t=5, 18 at t=7, 21 at t=7.5: "no job is in fact delayed".
    np.testing.assert_allclose(r.gps_finish, [5.0, 7.5, 7.0])
    assert r.preemptions.tolist() == [0, 1, 0]
    assert np.all(r.delay <= 1e-12)


def test_virtual_time_with_mid_flight_arrivals():
    # 4 GPUs. a: 8 GPU-h at 0 (F=8). b: 2 GPU-h at 1, V(1)=4 -> F=6. c: 1 GPU-h at 1.2,
    # V(1.2) = 4 + 0.2*4/2 = 4.4 -> F=5.4. GPS: c leaves when V=5.4 at 1.2+1.0*3/4 = 1.95,
    # b when V=6 at 1.95+0.6/2 = 2.25, a when V=8 at 2.25+2/4 = 2.75.
    q = fa.ElasticFairQueue(4, record=True)
    assert q.submit("a", gpu_time=8.0) == 8.0
    assert q.submit("b", gpu_time=2.0, at=1.0) == pytest.approx(6.0)
    assert q.submit("c", gpu_time=1.0, at=1.2) == pytest.approx(5.4)
    assert q.virtual_time == pytest.approx(4.4)
    assert q.allocation() == {"c": 4, "b": 0, "a": 0}
    # EFQ: c on 4 GPUs until 1.45; b (0.8 done at 1.2) until 1.75; a (4 done at 1) until 2.75
    assert q.advance(3.0) == [("c", pytest.approx(1.45)), ("b", pytest.approx(1.75)),
                              ("a", pytest.approx(2.75))]
    assert q.virtual_time == pytest.approx(8.0)
    r = fa.efq_schedule([0, 1, 1.2], [8.0, 2.0, 1.0], 4)
    np.testing.assert_allclose(r.gps_finish, [2.75, 2.25, 1.95])
    np.testing.assert_allclose(r.efq_finish, [2.75, 1.75, 1.45])
    times, ids, gpus = q.history()
    assert list(zip(times.tolist(), ids, gpus.tolist(), strict=True))[:3] == [
        (0.0, "a", 4), (1.0, "a", 0), (1.0, "b", 4)]


def test_heterogeneous_first_in_line_takes_fastest():
    # fast GPU power 3, slow 1 -> relative to the mean: 1.5 and 0.5. Both jobs capped at 1 GPU.
    flat = [1.0, 1.0]  # e(2) = 0.5 < 0.75
    cluster = {"slow": 1, "fast": 1}
    power = {"slow": 1.0, "fast": 3.0}
    r = fa.efq_schedule([0, 0], [1.5, 3.0], cluster, gpu_power=power, scaling=flat)
    # A (F=1.5) runs on the fast GPU at rate 1.5 -> done at 1; B on the slow one at 0.5, then
    # the fast one: 0.5 done at 1, 2.5 left at 1.5 -> 1 + 5/3.
    np.testing.assert_allclose(r.efq_finish, [1.0, 1.0 + 5.0 / 3.0])
    np.testing.assert_allclose(r.log_power[r.log_gpus > 0][:2], [1.5, 0.5])
    q = fa.ElasticFairQueue(cluster, gpu_power=power)
    q.submit("A", gpu_time=1.5, scaling=flat)
    q.submit("B", gpu_time=3.0, scaling=flat)
    assert q.placement() == {"A": {"fast": 1}, "B": {"slow": 1}}
    q.advance(1.0)
    assert q.placement() == {"B": {"fast": 1}}
    # one linear job uses both GPUs: rate 2 (mean power), as under GPS
    efq, gps = fa.efq_finish_times([0], [2.0], cluster, gpu_power=power)
    np.testing.assert_allclose(efq, [1.0])
    np.testing.assert_allclose(gps, [1.0])


# ---------------------------------------------------------------------------------------------
# Theorem 1 (proofs/efq_delay_bound.md)
# ---------------------------------------------------------------------------------------------


@SETTINGS
@given(saturating_instance())
def test_theorem1_delay_bound(kw):
    """f_j - f~_j <= (1/alpha - 1) * L when every job can absorb the cluster at efficiency >=
    alpha (the proof's condition), with L the longest busy period; random arrivals and curves."""
    r = fa.efq_schedule(**kw)
    m = r.num_gpus
    assert np.all(r.max_gpus == m)
    assert all(sat for sat, _ in theorem_hypothesis(r))
    big_l = busy_period(r)
    assert big_l == pytest.approx(r.busy_period, rel=1e-9, abs=1e-9)
    bound = (1 / kw["alpha"] - 1) * big_l
    assert np.all(r.delay <= bound + 1e-9 * (1 + r.gps_finish)), (r.delay, bound)
    assert r.delay_bound == pytest.approx(bound, abs=1e-9)


@SETTINGS
@given(general_instance())
def test_theorem1_per_job_form(kw):
    """For any curves: wherever the jobs ahead of j saturate the cluster on (t0_j, f_j),
    f_j - f~_j <= (1/alpha - 1)(f~_j - t0_j) <= (1/alpha - 1) * L."""
    r = fa.efq_schedule(**kw)
    alpha = kw["alpha"]
    for j, (saturated, t0) in enumerate(theorem_hypothesis(r)):
        if saturated:
            slack = 1e-9 * (1 + r.gps_finish[j])
            assert r.delay[j] <= (1 / alpha - 1) * (r.gps_finish[j] - t0) + slack
            assert r.delay[j] <= r.delay_bound + slack


def test_theorem1_needs_saturation():
    """The literal statement fails when a capped job leaves GPUs to others (documented)."""
    # 2 GPUs; job j: 2 GPU-h, cannot use a 2nd GPU at alpha (e(2) = 0.6); job C arrives at 0.9.
    r = fa.efq_schedule([0.0, 0.9], [2.0, 1.2], 2, scaling=[1.0, 1.2])
    assert r.max_gpus.tolist() == [1, 1]
    np.testing.assert_allclose(r.efq_finish, [2.0, 2.1])
    np.testing.assert_allclose(r.gps_finish, [1.1, 1.6])
    assert r.busy_period == pytest.approx(1.1)  # both GPUs busy on [0.9, 2.0]
    assert r.delay[0] == pytest.approx(0.9)
    assert r.delay[0] > r.delay_bound  # 0.9 > (1/0.75 - 1) * 1.1
    saturated, _ = theorem_hypothesis(r)[0]
    assert not saturated


@SETTINGS
@given(arrivals(max_jobs=12), st.integers(1, 9), st.sampled_from([0.5, 0.75, 1.0]),
       st.booleans())
def test_linear_scaling_never_later_than_gps(arr, m, alpha, hetero):
    """Linear scaling: EFQ is preemptive EDF on a fluid cluster whose deadlines GPS meets."""
    arrival, work = arr
    kw = {"num_gpus": m}
    if hetero and m >= 2:
        kw = {"num_gpus": {"a": 1, "b": m - 1}, "gpu_power": {"a": 2.5, "b": 1.0}}
    requested = np.minimum(np.arange(arrival.size) % 3 + 1, m)
    r = fa.efq_schedule(arrival, work, alpha=alpha, requested=requested, **kw)
    assert np.all(r.delay <= 1e-9 * (1 + r.gps_finish))


# ---------------------------------------------------------------------------------------------
# scheduling rule, starvation, alpha = 1
# ---------------------------------------------------------------------------------------------


@SETTINGS
@given(general_instance())
def test_allocation_is_greedy_in_virtual_finish_order(kw):
    r = fa.efq_schedule(**kw)
    m = kw["num_gpus"]
    caps = brute_caps(kw["requested"], kw["scaling"], m, kw["alpha"])
    assert r.max_gpus.tolist() == caps.tolist()
    order = np.lexsort((np.arange(r.arrival.size), r.arrival, r.virtual_finish))
    assert np.all(np.isfinite(r.efq_finish))  # no starvation
    mids, _ = breakpoints(r)
    for t in mids:
        free = m
        want = np.zeros(r.arrival.size, dtype=int)
        for j in order:
            if r.arrival[j] <= t < r.efq_finish[j]:
                want[j] = min(caps[j], free)
                free -= want[j]
        assert r.allocation_at(t).tolist() == want.tolist(), t


def test_no_starvation_under_a_stream_of_short_jobs():
    # One GPU, a 5 GPU-h job at 0 and a 1 GPU-h job every hour from 0 to 299. Shortest-job
    # first always has a shorter job waiting until t = 300 and finishes the long job at 305.
    # Under EFQ the short jobs' virtual finish times V(a_k) + 1 overtake F = 5 as V grows, so
    # the long job runs long before the stream ends, no later than under GPS.
    arrival = np.concatenate([[0.0], np.arange(300.0)])
    work = np.concatenate([[5.0], np.ones(300)])
    r = fa.efq_schedule(arrival, work, 1)
    assert r.efq_finish[0] <= r.gps_finish[0] + 1e-9
    assert r.efq_finish[0] < 40.0 < r.gps_finish[0] + 10.0
    assert np.all(np.isfinite(r.efq_finish))
    assert np.all(r.delay <= 1e-9 * (1 + r.gps_finish))
    # later short jobs are served after the long job once their F exceeds its F
    after = (r.virtual_finish > r.virtual_finish[0]) & (np.arange(301) > 0)
    assert np.all(r.efq_finish[after] > r.efq_finish[0])


@SETTINGS
@given(arrivals(), st.integers(1, 12), st.data())
def test_alpha_one_never_over_allocates(arr, m, data):
    """With alpha = 1 no job holds a GPU count at which it loses per-GPU efficiency."""
    arrival, work = arr
    n = arrival.size
    # strictly sublinear beyond one GPU: any doubling loses efficiency
    curves = data.draw(efficiency_curves(n, 4, 0.3))
    curves[:, 1:] *= 0.99
    r = fa.efq_schedule(arrival, work, m, alpha=1.0, scaling=curves)
    assert np.all(r.max_gpus == 1)
    assert np.all(r.log_gpus <= 1)
    mids, _ = breakpoints(r)
    for t in mids:
        assert r.allocation_at(t).sum() <= m
    # a linear job may take everything; a job requesting 4 on a flat-then-linear curve stays <= 4
    lin = fa.efq_schedule([0.0], [8.0], 8, alpha=1.0, requested=[4],
                          scaling=[1.0, 2.0, 4.0, 7.0])
    assert lin.max_gpus.tolist() == [4]
    assert lin.efq_finish.tolist() == [2.0]


# ---------------------------------------------------------------------------------------------
# online queue
# ---------------------------------------------------------------------------------------------


@SETTINGS
@given(general_instance())
def test_online_queue_matches_batch_simulation(kw):
    r = fa.efq_schedule(**kw)
    q = fa.ElasticFairQueue(kw["num_gpus"], kw["alpha"])
    finish = {}
    order = np.argsort(kw["arrival"], kind="stable")
    for j in order.tolist():
        for jid, t in q.advance(kw["arrival"][j]):
            finish[jid] = t
        q.submit(j, gpu_time=kw["gpu_time"][j], requested=int(kw["requested"][j]),
                 scaling=kw["scaling"][j])
    for jid, t in q.advance(r.efq_finish.max() + 1.0):
        finish[jid] = t
    got = np.array([finish[j] for j in range(r.arrival.size)])
    np.testing.assert_allclose(got, r.efq_finish, rtol=1e-9, atol=1e-9)
    assert len(q) == 0


@SETTINGS
@given(general_instance())
def test_single_job_curve_path_matches_vectorised(kw):
    from fairalloc.queuing.curves import _caps_and_speeds, _one_cap_and_speed

    m, alpha = kw["num_gpus"], kw["alpha"]
    req = kw["requested"].astype(float)
    caps, speeds = _caps_and_speeds(req, kw["scaling"], m, alpha)
    for j in range(req.size):
        cap, speed, t_req = _one_cap_and_speed(int(req[j]), kw["scaling"][j], m, alpha,
                                               speeds.shape[1])
        assert cap == caps[j]
        np.testing.assert_allclose(speed, speeds[j], rtol=1e-12)
        np.testing.assert_allclose(t_req * speeds[j][0], req[j] * kw["scaling"][j][0],
                                   rtol=1e-12)


def test_tuple_job_ids():
    q = fa.ElasticFairQueue(4, record=True)
    q.submit(("train", 1), gpu_time=1.0)
    q.submit(("train", 2), gpu_time=2.0, scaling=[1.0, 1.9, 3.5])
    assert q.allocation() == {("train", 1): 4, ("train", 2): 0}
    # job 2 then takes 4 GPUs (e(4) = 0.875 >= 0.75) at rate T(4)/T(1) = 3.5
    assert q.advance(1.0) == [(("train", 1), 0.25), (("train", 2), pytest.approx(0.25 + 2 / 3.5))]
    assert q.history()[1] == [("train", 1), ("train", 1), ("train", 2), ("train", 2)]


def test_finish_cancel_and_manual_completion():
    q = fa.ElasticFairQueue(2, auto_finish=False)
    q.submit("x", gpu_time=2.0)
    q.submit("y", gpu_time=4.0)
    assert q.allocation() == {"x": 2, "y": 0}
    assert q.advance(5.0) == []  # manual mode: x keeps its GPUs past its estimate
    assert q.job("x").remaining == 0.0 and q.job("x").gpus == 2
    q.finish("x", at=5.0)
    assert q.allocation() == {"y": 2}
    # finish keeps y's twin in the GPS reference; cancel removes it
    a = fa.ElasticFairQueue(1)
    b = fa.ElasticFairQueue(1)
    for qq in (a, b):
        qq.submit("long", gpu_time=10.0)
        qq.submit("other", gpu_time=10.0)
    a.finish("other", at=1.0)
    b.cancel("other", at=1.0)
    a.advance(2.0)
    b.advance(2.0)
    assert a.virtual_time == pytest.approx(1.0)  # V' = 1/2 with both still in GPS
    assert b.virtual_time == pytest.approx(1.5)  # V' = 1 after the cancellation
    assert "other" not in a and "long" in a


def test_steps_and_job_state():
    q = fa.ElasticFairQueue(8)
    curve = [100.0, 190.0, 360.0, 640.0]  # steps per hour at 1, 2, 4, 8 GPUs
    f = q.submit("s", steps=720.0, requested=2, scaling=curve)
    # L = steps * r / T(r) = 720 * 2 / 190
    assert f == pytest.approx(720 * 2 / 190)
    info = q.job("s")
    assert info.pool == "efq" and info.gpu_time == pytest.approx(720 * 2 / 190)
    # e(4) = (360/4)/(190/2) = 0.947 >= 0.75; e(8) = 80/95 = 0.842 >= 0.75 -> 8 GPUs
    assert info.max_gpus == 8 and info.gpus == 8


def test_unknown_gpu_time_pool():
    q = fa.ElasticFairQueue(6, unknown_pool=3, record=True)
    assert q.submit("u1") is None
    assert q.submit("u2", requested=1) is None
    assert q.submit("k", gpu_time=1.0) == pytest.approx(1.0)
    alloc = q.allocation()
    assert alloc["k"] == 3  # EFQ schedules the other 3 GPUs
    assert sorted([alloc["u1"], alloc["u2"]]) == [1, 2] and alloc["u1"] == 2  # FIFO remainder
    assert q.job("u1").pool == "fair_share"
    q.submit("u3", at=0.1)
    assert [q.allocation()[u] for u in ("u1", "u2", "u3")] == [1, 1, 1]
    q.cancel("u2", at=0.2)
    assert [q.allocation()[u] for u in ("u1", "u3")] == [2, 1]
    placed = q.placement()
    assert sum(sum(v.values()) for v in placed.values()) == 6
    times, ids, gpus = q.history()
    u2 = [i for i, x in enumerate(ids) if x == "u2"]
    assert len(u2) == 2 and gpus[u2[0]] == 1 and gpus[u2[1]] == 0 and times[u2[1]] == 0.2


def test_rows_are_recycled():
    q = fa.ElasticFairQueue(2)
    for i in range(200):
        q.submit(i, gpu_time=1.0, at=float(i))
    q.advance(500.0)
    assert len(q) == 0
    assert q.storage_rows <= 4
    kept = fa.ElasticFairQueue(2, record=True)  # the history needs every row: none is reused
    for i in range(200):
        kept.submit(i, gpu_time=1.0, at=float(i))
    kept.advance(500.0)
    assert kept.storage_rows == 200


def test_water_fill_caps():
    from fairalloc.queuing.curves import _water_fill

    assert _water_fill(np.array([4, 1]), 3).tolist() == [2, 1]
    assert _water_fill(np.array([1, 1, 1]), 2).tolist() == [1, 1, 0]
    assert _water_fill(np.array([8, 2, 8]), 9).tolist() == [4, 2, 3]
    assert _water_fill(np.array([1, 2]), 10).tolist() == [1, 2]


# ---------------------------------------------------------------------------------------------
# certificate (the schedule check) and misc
# ---------------------------------------------------------------------------------------------


def _check_args(r, **over):
    kw = dict(num_gpus=r.num_gpus, power=None, alpha=r.alpha, arrival=r.arrival,
              gpu_time=r.gpu_time, requested=np.ones(r.arrival.size), scaling=None,
              virtual_finish=r.virtual_finish, gps_finish=r.gps_finish,
              efq_finish=r.efq_finish, log_t=r.log_time, log_j=r.log_job,
              log_g=r.log_gpus.astype(float), log_p=r.log_power)
    kw.update(over)
    return kw


def test_schedule_check_catches_tampering():
    r = fa.efq_schedule([0.0, 0.0, 1.0], [2.0, 3.0, 1.0], 2)
    cert, _, res = _verify_schedule(**_check_args(r))
    assert cert.ok and max(res.values()) < 1e-12
    # over capacity
    g = r.log_gpus.astype(float).copy()
    g[0] += 1
    _, _, res = _verify_schedule(**_check_args(r, log_g=g, log_p=g))
    assert res["capacity"] > 0 and res["work"] > 1e-3
    # a finish time inconsistent with the work done
    f = r.efq_finish.copy()
    f[1] += 0.5
    cert, _, res = _verify_schedule(**_check_args(r, efq_finish=f))
    assert not cert.ok and res["release"] == 1.0
    # a wrong GPS finish time
    gf = r.gps_finish.copy()
    gf[0] *= 1.1
    cert, _, res = _verify_schedule(**_check_args(r, gps_finish=gf))
    assert not cert.ok and res["gps_service"] > 1e-3
    # idle GPUs while a job is below its maximum (drop a job's allocation entirely)
    keep = r.log_job != 2
    cert, _, res = _verify_schedule(**_check_args(
        r, log_t=r.log_time[keep], log_j=r.log_job[keep],
        log_g=r.log_gpus[keep].astype(float), log_p=r.log_power[keep]))
    assert not cert.ok and res["work_conserving"] > 0
    # above the alpha-capped maximum
    cert, _, res = _verify_schedule(**_check_args(r, scaling=np.array([[1.0, 1.0]] * 3)))
    assert not cert.ok and res["max_gpus"] > 0


def test_no_cvxpy_import():
    code = ("import sys, fairalloc as fa; q = fa.ElasticFairQueue(4); q.submit(1, gpu_time=1.0);"
            "fa.efq_finish_times([0], [1.0], 2); assert 'cvxpy' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_result_frame_and_repr():
    r = fa.efq_schedule([0, 0, 0], [1.0, 2.0, 3.0], 1)
    df = r.to_frame()
    assert list(df["efq_finish"]) == [1.0, 3.0, 6.0]
    assert "EFQResult(" in repr(r) and "ElasticFairQueue(" in repr(fa.ElasticFairQueue(3))
    with pytest.raises(ValueError):
        r.efq_finish[0] = 0.0  # read-only


def test_inputs_not_mutated():
    a = np.array([0.0, 1.0])
    w = np.array([1.0, 2.0])
    s = np.array([[1.0, 1.8], [1.0, 2.0]])
    req = np.array([1, 2])
    fa.efq_schedule(a, w, 2, requested=req, scaling=s)
    assert a.tolist() == [0.0, 1.0] and w.tolist() == [1.0, 2.0]
    assert s.tolist() == [[1.0, 1.8], [1.0, 2.0]] and req.tolist() == [1, 2]


# ---------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "argument", "match"),
    [
        (dict(alpha=0.0), "alpha", "positive"),
        (dict(alpha=1.5), "alpha", r"\(0, 1\]"),
        (dict(alpha=float("nan")), "alpha", "finite"),
        (dict(num_gpus=0), "num_gpus", "positive"),
        (dict(num_gpus=2.5), "num_gpus", "integer"),
        (dict(num_gpus=True), "num_gpus", "integer"),
        (dict(arrival=[0.0, -1.0]), "arrival", r"arrival\[1\]"),
        (dict(arrival=[0.0, np.nan]), "arrival", r"arrival\[1\]"),
        (dict(arrival=[[0.0, 1.0]]), "arrival", "dimension"),
        (dict(arrival=[], gpu_time=[]), "arrival", "empty"),
        (dict(gpu_time=[1.0, 0.0]), "gpu_time", r"gpu_time\[1\]"),
        (dict(gpu_time=[1.0]), "gpu_time", "length 2"),
        (dict(requested=[1, 0]), "requested", r"requested\[1\]"),
        (dict(requested=[1, 1.5]), "requested", "integer"),
        (dict(requested=[1, 3]), "requested", "exceeds"),
        (dict(requested=[2, 1], scaling=[1.0]), "requested", "profiled"),
        (dict(scaling=[[1.0, 2.0], [1.0, -2.0]]), "scaling", r"scaling\[1, 1\]"),
        (dict(scaling=[1.0, 2.5]), "scaling", r"scaling\[1\].*per-GPU"),
        (dict(scaling=[[1.0, 2.0]] * 3), "scaling", "one curve per job"),
        (dict(scaling=np.ones(40)), "scaling", "at most"),
        (dict(num_gpus={"a": 1, "b": 1}, gpu_power={"a": 1.0}), "gpu_power", "'b'"),
        (dict(num_gpus={"a": 1}, gpu_power={"a": 1.0, "c": 2.0}), "gpu_power", "'c'"),
        (dict(num_gpus={"a": 1, "b": 1}, gpu_power={"a": 1.0, "b": 0.0}), "gpu_power",
         "positive"),
        (dict(num_gpus=2, gpu_power={"a": 1.0}), "gpu_power", "mapping"),
        (dict(num_gpus={}), "num_gpus", "empty"),
        (dict(num_gpus={"a": 0}), "num_gpus", "positive"),
    ],
)
def test_bad_input_schedule(kwargs, argument, match):
    base = dict(arrival=[0.0, 1.0], gpu_time=[1.0, 2.0], num_gpus=2)
    base.update(kwargs)
    with pytest.raises(fa.InputError, match=match) as info:
        fa.efq_schedule(**base)
    assert info.value.argument == argument


def test_bad_input_queue():
    with pytest.raises(fa.InputError, match="unknown_pool") as info:
        fa.ElasticFairQueue(4, unknown_pool=4)
    assert info.value.argument == "unknown_pool"
    with pytest.raises(fa.InputError, match="alpha"):
        fa.ElasticFairQueue(4, alpha=0)
    with pytest.raises(fa.InputError, match="start"):
        fa.ElasticFairQueue(4, start=float("inf"))
    q = fa.ElasticFairQueue(4)
    q.submit("a", gpu_time=1.0, at=2.0)
    cases = [
        (lambda: q.submit("a", gpu_time=1.0), "job_id", "already"),
        (lambda: q.submit(["x"], gpu_time=1.0), "job_id", "hashable"),
        (lambda: q.submit("b", gpu_time=1.0, at=1.0), "at", "earlier"),
        (lambda: q.submit("b", gpu_time=1.0, at=float("nan")), "at", "finite"),
        (lambda: q.submit("b", gpu_time=1.0, at="soon"), "at", "number"),
        (lambda: q.submit("b", gpu_time=1.0, steps=5.0), "steps", "not both"),
        (lambda: q.submit("b", steps=5.0), "scaling", "steps needs"),
        (lambda: q.submit("b"), "gpu_time", "unknown_pool"),
        (lambda: q.submit("b", gpu_time=-1.0), "gpu_time", "positive"),
        (lambda: q.submit("b", gpu_time=1.0, requested=5), "requested", "exceeds"),
        (lambda: q.submit("b", gpu_time=1.0, requested=0), "requested", "positive"),
        (lambda: q.submit("b", gpu_time=1.0, requested=4, scaling=[1.0, 2.0]), "requested",
         "profiled"),
        (lambda: q.submit("b", gpu_time=1.0, scaling=[1.0, 3.0]), "scaling", "per-GPU"),
        (lambda: q.finish("nope"), "job_id", "no job"),
        (lambda: q.cancel("nope"), "job_id", "no job"),
        (lambda: q.job("nope"), "job_id", "no job"),
        (lambda: q.history(), "record", "record=True"),
    ]
    for call, argument, match in cases:
        with pytest.raises(fa.InputError, match=match) as info:
            call()
        assert info.value.argument == argument, match
    q.advance(10.0)  # "a" finished automatically at 2.25
    with pytest.raises(fa.InputError, match="no job"):
        q.finish("a")
