"""Finish-time fairness valuations, placement slowdown and topology (Themis §3.2, §4.3)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.auctions import (
    DEFAULT_SLOWDOWN,
    CurveStoppingApp,
    SingleJobApp,
    SuccessiveHalvingApp,
    Topology,
    curve_stopping_rho,
    placement_slowdown,
    single_job_rho,
    successive_halving_rho,
)

# the §4.3.3 end-to-end example: 16 GPUs, 4 apps, jobs of 80/100/100/120 s per iteration,
# 8/16/36 iterations per phase, budget 10,000 GPU-s, job_demand_max 8
EXAMPLE = dict(iter_time_serial=[80, 100, 100, 120], phase_iters=[8, 16, 36], budget=10_000,
               job_demand_max=8, cluster_gpus=16, contention=4)


# --------------------------------------------------------------------------------------------
# the paper's worked example (§4.3.3, Table 3)
# --------------------------------------------------------------------------------------------
def test_example_independent_finish_time_is_2500s():
    # rho grows by elapsed / T_id: one extra second of waiting adds 1/2500 to rho
    r0 = successive_halving_rho(2, **EXAMPLE)
    r1 = successive_halving_rho(2, elapsed=2500.0, **EXAMPLE)
    assert float(r1 - r0) == pytest.approx(1.0, abs=1e-12)  # T_id = 10000 * 4 / 16


def test_example_one_and_two_gpus():
    # 1 GPU: 8*(80+100+100+120) + 2*16*100 + 36*100 = 10,000 s -> rho = 4
    # 2 GPUs: 1600 + 1600 + 1800 = 5,000 s -> rho = 2 (the paper's text)
    rho = successive_halving_rho([1, 2], **EXAMPLE)
    assert rho.tolist() == pytest.approx([4.0, 2.0], abs=1e-12)
    assert successive_halving_rho([1, 2], schedule="static", **EXAMPLE).tolist() == \
        pytest.approx([4.0, 2.0], abs=1e-12)


def test_example_table3_balanced_schedule_matches_paper():
    # Table 3: 1, 2, 4, 8, 16 GPUs -> 4, 2, 1, 0.5, 0.34 (exact with malleable jobs)
    rho = successive_halving_rho([1, 2, 4, 8, 16], **EXAMPLE)
    assert rho.tolist() == pytest.approx([4.0, 2.0, 1.0, 0.5, 0.34], abs=1e-12)


def test_example_table3_static_schedule_hand_computed():
    # one whole number of GPUs per job for the phase:
    # 4 GPUs: 960 + 800 + 900 = 2660 -> 1.064; 8 GPUs: 480 + 400 + 450 -> 0.532;
    # 16 GPUs: phase 1 gives 3, 4, 4, 5 GPUs (max 640/3 s) + 200 + 450 -> 0.34533...
    rho = successive_halving_rho([4, 8, 16], schedule="static", **EXAMPLE)
    assert rho.tolist() == pytest.approx([1.064, 0.532, (640 / 3 + 650) / 2500], abs=1e-12)


def test_example_revised_bid_after_survivors_known():
    # survivors 120 s and 100 s: phase 2 on 2 GPUs, one job per GPU: 120*16 = 1920 s
    # (the paper prints 3200), phase 3 with the (upper) median 120 s: 120*36/2 = 2160 s
    kw = dict(EXAMPLE, iter_time_serial=[120, 100], phase=1, phase_jobs=[4, 2, 1])
    static = successive_halving_rho(2, schedule="static", **kw)
    assert float(static) * 2500 == pytest.approx(1920 + 2160, abs=1e-9)
    # malleable: the 100 s job finishes after 1600 s, then the 120 s job uses both GPUs
    balanced = successive_halving_rho(2, **kw)
    assert float(balanced) * 2500 == pytest.approx(max(3520 / 2, 1920 / 2) + 2160, abs=1e-9)


def test_example_slowdown_scales_shared_time():
    t = Topology.uniform(2, 8)
    rho = successive_halving_rho([2, 2], slowdown=[1.0, 1.1], **EXAMPLE)
    assert rho[1] / rho[0] == pytest.approx(1.1)  # S multiplies T_sh (elapsed = 0)
    assert placement_slowdown([0, 15], t) == 1.1


# --------------------------------------------------------------------------------------------
# Eq. 1 (single job), curve stopping
# --------------------------------------------------------------------------------------------
def test_single_job_eq1_hand_computed():
    # T_id = 3 * 600 * 2 / min(32, 4) = 900; T_sh(G) = 100 + 300 * 2 * S / min(G, 4)
    kw = dict(iter_total=600, iter_left=300, iter_time_serial=2.0, job_demand_max=4,
              cluster_gpus=32, contention=3, elapsed=100.0)
    rho = single_job_rho([0, 1, 2, 4, 8], **kw)
    assert rho[0] == math.inf
    assert rho[1:].tolist() == pytest.approx([700 / 900, 400 / 900, 250 / 900, 250 / 900])
    assert float(single_job_rho(2, slowdown=1.3, **kw)) == pytest.approx((100 + 390) / 900)


def test_single_job_finished_has_rho_of_elapsed_time():
    rho = single_job_rho([0, 3], iter_total=10, iter_left=0, iter_time_serial=1.0,
                         job_demand_max=1, cluster_gpus=1, elapsed=5.0)
    assert rho.tolist() == [0.5, 0.5]


def test_cluster_smaller_than_demand_caps_t_cluster():
    # T_cluster uses min(R_C, demand): 2-GPU cluster, demand 8 -> T_id = 100 * 1 / 2
    rho = single_job_rho(2, iter_total=100, iter_left=100, iter_time_serial=1.0,
                         job_demand_max=8, cluster_gpus=2)
    assert float(rho) == pytest.approx(1.0)


def test_curve_stopping_hand_computed():
    # jobs of 50 and 100 iterations left at 1 s, 1 GPU each at most: 2 GPUs -> 100 s;
    # T_id = (100 + 100) / min(2, 2) = 100
    rho = curve_stopping_rho([1, 2, 3], iter_time_serial=[1.0, 1.0], iter_left=[50, 100],
                             iter_total=[100, 100], job_demand_max=1, cluster_gpus=2)
    assert rho.tolist() == pytest.approx([1.5, 1.0, 1.0])


# --------------------------------------------------------------------------------------------
# topology and slowdown
# --------------------------------------------------------------------------------------------
def test_topology_levels_and_default_slowdown():
    t = Topology.uniform(4, 2, machines_per_rack=2)
    assert (t.num_gpus, t.num_machines, t.num_racks) == (8, 4, 2)
    masks = np.zeros((4, 8), dtype=bool)
    masks[1, [0, 1]] = True
    masks[2, [1, 2]] = True
    masks[3, [0, 7]] = True
    assert t.level(masks).tolist() == [0, 0, 1, 2]
    assert t.slowdown(masks).tolist() == [1.0, 1.0, 1.1, 1.3]
    assert tuple(DEFAULT_SLOWDOWN) == (1.0, 1.1, 1.3)


def test_profiled_slowdown_overrides_defaults():
    t = Topology(np.array([0, 0, 1, 1]), rack=[0, 1])
    assert placement_slowdown([0, 2], t, slowdown=[1.0, 1.2, 1.7]) == 1.7
    assert placement_slowdown([0, 1], t, slowdown=[1.05, 1.2, 1.7]) == 1.05


def test_topology_uniform_remainder_rack():
    t = Topology.uniform(5, 1, machines_per_rack=2)
    assert t.rack.tolist() == [0, 0, 1, 1, 2]


# --------------------------------------------------------------------------------------------
# properties
# --------------------------------------------------------------------------------------------
@st.composite
def single_jobs(draw):
    total = draw(st.integers(1, 10_000))
    return dict(iter_total=total, iter_left=draw(st.integers(0, total)),
                iter_time_serial=draw(st.floats(0.01, 100.0)),
                job_demand_max=draw(st.integers(1, 16)), cluster_gpus=draw(st.integers(1, 64)),
                contention=draw(st.floats(1.0, 10.0)), elapsed=draw(st.floats(0.0, 1e5,
                                                                              allow_subnormal=False)))


@given(single_jobs(), st.floats(1.0, 2.0), st.floats(1.0, 2.0))
def test_single_job_monotone_in_gpus_and_slowdown(job, s1, s2):
    g = np.arange(1, 40)
    rho = single_job_rho(g, slowdown=min(s1, s2), **job)
    assert np.all(np.diff(rho) <= 1e-12 * rho[:-1])  # more GPUs never hurt
    d = job["job_demand_max"]
    assert np.allclose(rho[g >= d], rho[d - 1])  # beyond the demand nothing changes
    assert np.all(single_job_rho(g, slowdown=max(s1, s2), **job) >= rho - 1e-12)


@given(single_jobs(), st.integers(1, 4), st.integers(1, 4))
def test_valuation_homogeneous_of_degree_one(job, g, mult):
    # Appendix (proof of Theorem 3.2): on the same machines, m times the GPUs gives m times
    # the valuation 1/rho (no elapsed time, within the job's demand)
    job = dict(job, elapsed=0.0, iter_left=max(job["iter_left"], 1),
               job_demand_max=max(job["job_demand_max"], g * mult))
    v1 = 1.0 / float(single_job_rho(g, slowdown=1.1, **job))
    vm = 1.0 / float(single_job_rho(g * mult, slowdown=1.1, **job))
    assert vm == pytest.approx(mult * v1, rel=1e-12)


@given(st.lists(st.floats(1.0, 200.0), min_size=1, max_size=6), st.integers(1, 3),
       st.integers(1, 8), st.integers(0, 40))
def test_static_schedule_never_beats_balanced(times, phases, d, g):
    kw = dict(iter_time_serial=times, phase_iters=[10.0] * phases, budget=1e4,
              job_demand_max=d, cluster_gpus=64)
    bal = successive_halving_rho(g, **kw)
    sta = successive_halving_rho(g, schedule="static", **kw)
    assert float(sta) >= float(bal) * (1 - 1e-12)
    if g >= len(times) * d:  # every job at full demand: the schedules agree
        assert float(sta) == pytest.approx(float(bal))


# --------------------------------------------------------------------------------------------
# app models
# --------------------------------------------------------------------------------------------
def test_single_job_app_progress_and_finish():
    app = SingleJobApp(iter_total=100, iter_time_serial=2.0, job_demand_max=2, arrival=10.0)
    assert app.time_to_finish(4, 1.0) == pytest.approx(100.0)  # 1 it/s with 2 GPUs
    assert app.time_to_finish(0, 1.0) == math.inf
    app.advance(2, 1.25, 50.0)  # rate 2 / (2 * 1.25) = 0.8 it/s
    assert app.iter_done == pytest.approx(40.0)
    rho = app.rho([2], [1.0], now=110.0, cluster_gpus=4, contention=2.0)
    # T_sh = 100 s elapsed + 60 it * 2 s / 2; T_id = 2 * 100 * 2 / 2
    assert rho.tolist() == pytest.approx([(100 + 60) / 200])
    app.advance(2, 1.0, 1e6)
    assert app.finished and app.demand_max == 0


def test_successive_halving_app_phases_are_reproducible():
    def run(seed):
        app = SuccessiveHalvingApp(**{k: EXAMPLE[k] for k in ("iter_time_serial", "phase_iters",
                                                             "budget", "job_demand_max")},
                                   seed=seed)
        survivors = []
        while not app.finished:
            app.advance(2, 1.0, app.time_to_finish(2, 1.0) / 3 + 1.0)
            survivors.append(tuple(app.times))
        return survivors

    a, b = run(3), run(3)
    assert a == b
    assert {len(s) for s in a} <= {4, 2, 1, 0}


def test_successive_halving_app_matches_function_and_finishes_on_time():
    app = SuccessiveHalvingApp(iter_time_serial=[80, 100, 100, 120], phase_iters=[8, 16, 36],
                               job_demand_max=8)
    assert app.budget == pytest.approx(10_000)  # the plan's work with the median job
    rho = app.rho([1, 2, 4, 8, 16], 1.0, now=0.0, cluster_gpus=16, contention=4)
    assert rho.tolist() == pytest.approx([4.0, 2.0, 1.0, 0.5, 0.34])
    first = app.time_to_finish(2, 1.0)
    assert first == pytest.approx(5000.0)
    app.advance(2, 1.0, 1600.0)  # exactly the first phase
    assert app.phase == 1 and app.times.size == 2


def test_curve_stopping_app():
    app = CurveStoppingApp(iter_time_serial=[1.0, 2.0], iter_total=[100, 50], job_demand_max=1)
    assert app.demand_max == 2
    assert app.time_to_finish(2, 1.0) == pytest.approx(100.0)
    app.advance(2, 1.0, 50.0)
    assert app.left.tolist() == pytest.approx([50.0, 25.0])
    app.advance(1, 1.0, 1e9)
    assert app.finished


# --------------------------------------------------------------------------------------------
# bad inputs
# --------------------------------------------------------------------------------------------
BASE = dict(iter_total=100, iter_left=50, iter_time_serial=1.0, job_demand_max=2,
            cluster_gpus=8)


@pytest.mark.parametrize("kw, arg", [
    (dict(BASE, iter_left=101), "iter_left"),
    (dict(BASE, iter_total=0), "iter_total"),
    (dict(BASE, iter_time_serial=-1.0), "iter_time_serial"),
    (dict(BASE, job_demand_max=0), "job_demand_max"),
    (dict(BASE, job_demand_max=1.5), "job_demand_max"),
    (dict(BASE, cluster_gpus=0), "cluster_gpus"),
    (dict(BASE, contention=0.5), "contention"),
    (dict(BASE, elapsed=-1.0), "elapsed"),
    (dict(BASE, elapsed=float("nan")), "elapsed"),
])
def test_single_job_bad_inputs(kw, arg):
    with pytest.raises(fa.InputError) as err:
        single_job_rho(1, **kw)
    assert err.value.argument == arg


@pytest.mark.parametrize("gpus, slowdown, arg", [
    ([1, -1], 1.0, "num_gpus"),
    ([1.5], 1.0, "num_gpus"),
    ([1, 2], [1.0, 0.9], "slowdown"),
    ([1, 2, 3], [1.0, 1.1], "slowdown"),
    ([np.nan], 1.0, "num_gpus"),
])
def test_gpu_and_slowdown_bad_inputs(gpus, slowdown, arg):
    with pytest.raises(fa.InputError) as err:
        single_job_rho(gpus, slowdown=slowdown, **BASE)
    assert err.value.argument == arg


@pytest.mark.parametrize("kw, arg", [
    (dict(EXAMPLE, phase=3), "phase"),
    (dict(EXAMPLE, phase=1), "phase_jobs"),
    (dict(EXAMPLE, phase_jobs=[3, 2, 1]), "phase_jobs"),
    (dict(EXAMPLE, iter_left=[1, 2, 3, 9]), "iter_left"),
    (dict(EXAMPLE, iter_left=[1, 2]), "iter_left"),
    (dict(EXAMPLE, schedule="greedy"), "schedule"),
    (dict(EXAMPLE, iter_time_serial=[]), "iter_time_serial"),
    (dict(EXAMPLE, budget=0), "budget"),
])
def test_successive_halving_bad_inputs(kw, arg):
    with pytest.raises(fa.InputError) as err:
        successive_halving_rho(2, **kw)
    assert err.value.argument == arg


def test_curve_stopping_bad_inputs():
    with pytest.raises(fa.InputError) as err:
        curve_stopping_rho(1, iter_time_serial=[1.0], iter_left=[5], iter_total=[4],
                           job_demand_max=1, cluster_gpus=1)
    assert err.value.argument == "iter_left" and err.value.index == (0,)


@pytest.mark.parametrize("make, arg", [
    (lambda: Topology([0, 2]), "machine"),
    (lambda: Topology([0, 1], rack=[0, 2]), "rack"),
    (lambda: Topology([0, 1], rack=[0]), "rack"),
    (lambda: Topology([-1, 0]), "machine"),
    (lambda: Topology.uniform(0, 2), "num_machines"),
    (lambda: Topology.uniform(2, 2).level([0, 9]), "gpus"),
    (lambda: Topology.uniform(2, 2).level([1, 1]), "gpus"),
    (lambda: Topology.uniform(2, 2).level(np.ones(3, dtype=bool)), "gpus"),
    (lambda: placement_slowdown([0], Topology.uniform(1, 1), slowdown=[1.2, 1.1, 1.3]),
     "slowdown"),
    (lambda: placement_slowdown([0], Topology.uniform(1, 1), slowdown=[0.9, 1.1, 1.3]),
     "slowdown"),
    (lambda: placement_slowdown([0], "not a topology"), "topology"),
])
def test_topology_bad_inputs(make, arg):
    with pytest.raises(fa.InputError) as err:
        make()
    assert err.value.argument == arg


def test_app_model_bad_inputs():
    with pytest.raises(fa.InputError):
        SingleJobApp(iter_total=10, iter_time_serial=1.0, job_demand_max=1, iter_done=11)
    with pytest.raises(fa.InputError):
        SuccessiveHalvingApp(iter_time_serial=[1.0], phase_iters=[0], job_demand_max=1)
    with pytest.raises(fa.InputError):
        CurveStoppingApp(iter_time_serial=[1.0, 1.0], iter_total=[1], job_demand_max=1)


def test_inputs_not_mutated():
    times = np.array([80.0, 100.0, 100.0, 120.0])
    gpus = np.array([1, 2])
    successive_halving_rho(gpus, **dict(EXAMPLE, iter_time_serial=times))
    assert times.tolist() == [80.0, 100.0, 100.0, 120.0] and gpus.tolist() == [1, 2]
