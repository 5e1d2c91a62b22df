"""`fairalloc.solve_round`, `fairalloc.RoundPolicy` and the Gavel adapter read and validate a
round's arrays once (#28: `Jobs` is built from the readers' validated arrays, its per-entry
checks not repeated): every invalid argument is refused with the same message, argument and
index as before (the expected errors were taken from main cee75ad), and the results are those
of the public `fairalloc.Jobs` path."""

from __future__ import annotations

import math

import numpy as np
import pytest

import fairalloc as fa
from fairalloc.integrations import gavel

TP = {"a": {"x": 2.0, "y": 1.0}, "b": {"x": 1.0, "y": 3.0}}
W = {"x": 1, "y": 2}
STEPS = {"a": 1.0, "b": 10.0}
TINY_RATE = {"a": {"x": 1e300, "y": 1.0}, "b": {"x": 1e-10, "y": 0.0}}
RATIO = "ratio below 1e-300"

#: (name, policy, throughput, keyword arguments)
CASES = [
    ("weight_neg", "max_min_fairness", TP, {"weight": {"a": 1.0, "b": -1.0}}),
    ("weight_nan", "max_min_fairness", TP, {"weight": {"a": math.nan, "b": 1.0}}),
    ("weight_sub", "max_min_fairness", TP, {"weight": {"a": 5e-324, "b": 1.0}}),
    ("sf_frac", "finish_time_fairness", TP,
     {"scale_factor": {"a": 1.5, "b": 1}, "steps_remaining": STEPS}),
    ("sf_zero", "finish_time_fairness", TP,
     {"scale_factor": {"a": 0, "b": 1}, "steps_remaining": STEPS}),
    ("steps_neg", "finish_time_fairness", TP, {"steps_remaining": {"a": -1.0, "b": 10.0}}),
    ("steps_inf", "finish_time_fairness", TP, {"steps_remaining": {"a": math.inf, "b": 1.0}}),
    ("elapsed_neg", "finish_time_fairness", TP,
     {"steps_remaining": STEPS, "elapsed": {"a": 0.0, "b": -3.0}}),
    ("elapsed_nan", "finish_time_fairness", TP,
     {"steps_remaining": STEPS, "elapsed": {"a": math.nan, "b": 3.0}}),
    ("iso_neg", "finish_time_fairness", TP,
     {"steps_remaining": STEPS, "isolated_elapsed": {"a": 0.0, "b": -3.0}}),
    ("steps_missing", "finish_time_fairness", TP, {}),
    ("weight_ratio", "finish_time_fairness", TP,
     {"steps_remaining": STEPS, "weight": {"a": 1e10, "b": 1e-291}}),
    ("rate_ratio", "finish_time_fairness", TINY_RATE, {"steps_remaining": STEPS}),
    ("rate_ratio_makespan", "min_makespan", TINY_RATE, {"steps_remaining": STEPS}),
    ("rate_ratio_unrunnable", "max_total_throughput",
     {**TINY_RATE, "c": {"z": 1.0}}, {}),
    ("weight_ratio_unrunnable", "max_total_throughput", {**TP, "c": {"z": 1.0}},
     {"weight": {"a": 1e10, "b": 1e-291, "c": 1.0}}),
]


def error(how: str, policy: str, tp: dict, kw: dict) -> tuple[str, str, tuple | None] | None:
    """(message, argument, index) of the InputError, or None when the round solves."""
    try:
        if how == "solve_round":
            fa.solve_round(policy, tp, W, **kw)
        else:
            fa.RoundPolicy(policy).allocate(tp, W, **kw)
    except fa.InputError as exc:
        return str(exc), exc.argument, exc.index
    return None


def _g(sf=None, t=None, steps=None, tp=None):
    return (tp or {0: {"v100": 1.0}, 1: {"v100": 2.0}}, sf or {0: 1, 1: 1}, {0: 1, 1: 1},
            t or {0: 0.0, 1: 0.0}, steps or {0: 1.0, 1: 1.0}, {"v100": 2})


GAVEL_CASES = {
    "sf": _g(sf={0: 1.5, 1: 1}),
    "steps": _g(steps={0: 1.0, 1: -1.0}),
    "t": _g(t={0: math.nan, 1: 0.0}),
    "ratio": _g(tp={0: {"v100": 1e300}, 1: {"v100": 1e-10}}),
}


def gavel_error(args: tuple) -> tuple[str, str, tuple | None] | None:
    try:
        gavel.policy("finish_time_fairness_perf").get_allocation(*args)
    except fa.InputError as exc:
        return str(exc), exc.argument, exc.index
    return None


EXPECTED = [
    ('weight_neg',
    'solve_round',
    ("weight['b'] is -1; every entry must be positive", 'weight', (1,))),
    ('weight_neg',
    'RoundPolicy',
    ("weight['b'] is -1; every entry must be positive", 'weight', (1,))),
    ('weight_nan',
    'solve_round',
    ("weight['a'] is nan; every entry must be finite", 'weight', (0,))),
    ('weight_nan',
    'RoundPolicy',
    ("weight['a'] is nan; every entry must be finite", 'weight', (0,))),
    ('weight_sub',
    'solve_round',
    ("weight['a'] is 5e-324: subnormal (a nonzero magnitude below np.finfo(float).tiny = "
    '2.2e-308 loses its precision and solvers read it as 0): pass 0 or a normal number',
    'weight',
    (0,))),
    ('weight_sub',
    'RoundPolicy',
    ("weight['a'] is 5e-324: subnormal (a nonzero magnitude below np.finfo(float).tiny = "
    '2.2e-308 loses its precision and solvers read it as 0): pass 0 or a normal number',
    'weight',
    (0,))),
    ('sf_frac',
    'solve_round',
    ("scale_factor['a'] is 1.5; every entry must be an integer", 'scale_factor', (0,))),
    ('sf_frac',
    'RoundPolicy',
    ("scale_factor['a'] is 1.5; every entry must be an integer", 'scale_factor', (0,))),
    ('sf_zero',
    'solve_round',
    ("scale_factor['a'] is 0; every entry must be positive", 'scale_factor', (0,))),
    ('sf_zero',
    'RoundPolicy',
    ("scale_factor['a'] is 0; every entry must be positive", 'scale_factor', (0,))),
    ('steps_neg',
    'solve_round',
    ("steps_remaining['a'] is -1; every entry must be non-negative", 'steps_remaining', (0,))),
    ('steps_neg',
    'RoundPolicy',
    ("steps_remaining['a'] is -1; every entry must be non-negative", 'steps_remaining', (0,))),
    ('steps_inf',
    'solve_round',
    ("steps_remaining['a'] is inf; every entry must be finite", 'steps_remaining', (0,))),
    ('steps_inf',
    'RoundPolicy',
    ("steps_remaining['a'] is inf; every entry must be finite", 'steps_remaining', (0,))),
    ('elapsed_neg',
    'solve_round',
    ("elapsed['b'] is -3; every entry must be non-negative", 'elapsed', (1,))),
    ('elapsed_neg',
    'RoundPolicy',
    ("elapsed['b'] is -3; every entry must be non-negative", 'elapsed', (1,))),
    ('elapsed_nan',
    'solve_round',
    ("elapsed['a'] is nan; every entry must be finite", 'elapsed', (0,))),
    ('elapsed_nan',
    'RoundPolicy',
    ("elapsed['a'] is nan; every entry must be finite", 'elapsed', (0,))),
    ('iso_neg',
    'solve_round',
    ("isolated_elapsed['b'] is -3; every entry must be non-negative",
    'isolated_elapsed',
    (1,))),
    ('iso_neg',
    'RoundPolicy',
    ("isolated_elapsed['b'] is -3; every entry must be non-negative",
    'isolated_elapsed',
    (1,))),
    ('steps_missing',
    'solve_round',
    ('finish_time_fairness needs jobs.steps_remaining', 'steps_remaining', None)),
    ('steps_missing',
    'RoundPolicy',
    ('finish_time_fairness needs jobs.steps_remaining', 'steps_remaining', None)),
    ('weight_ratio',
    'solve_round',
    ("weight['b'] = 1e-291 is too small next to the largest weight to be represented (ratio "
    'below 1e-300)',
    'weight',
    (1,))),
    ('weight_ratio',
    'RoundPolicy',
    ("weight['b'] = 1e-291 is too small next to the largest weight to be represented (ratio "
    'below 1e-300)',
    'weight',
    (1,))),
    ('rate_ratio',
    'solve_round',
    ('throughput[1, 0] = 1e-10 is too small next to the largest throughput 1e+300 to be '
    'represented (ratio below 1e-300); use 0 where a job cannot run, or other units',
    'throughput',
    (1, 0))),
    ('rate_ratio',
    'RoundPolicy',
    ('throughput[1, 0] = 1e-10 is too small next to the largest throughput 1e+300 to be '
    'represented (ratio below 1e-300); use 0 where a job cannot run, or other units',
    'throughput',
    (1, 0))),
    ('rate_ratio_makespan',
    'solve_round',
    ('throughput[1, 0] = 1e-10 is too small next to the largest throughput 1e+300 to be '
    'represented (ratio below 1e-300); use 0 where a job cannot run, or other units',
    'throughput',
    (1, 0))),
    ('rate_ratio_makespan',
    'RoundPolicy',
    ('throughput[1, 0] = 1e-10 is too small next to the largest throughput 1e+300 to be '
    'represented (ratio below 1e-300); use 0 where a job cannot run, or other units',
    'throughput',
    (1, 0))),
    ('rate_ratio_unrunnable',
    'solve_round',
    ('throughput[1, 0] = 1e-10 is too small next to the largest throughput 1e+300 to be '
    'represented (ratio below 1e-300); use 0 where a job cannot run, or other units',
    'throughput',
    (1, 0))),
    ('rate_ratio_unrunnable',
    'RoundPolicy',
    ('throughput[1, 0] = 1e-10 is too small next to the largest throughput 1e+300 to be '
    'represented (ratio below 1e-300); use 0 where a job cannot run, or other units',
    'throughput',
    (1, 0))),
    ('weight_ratio_unrunnable',
    'solve_round',
    ("weight['b'] = 1e-291 is too small next to the largest weight to be represented (ratio "
    'below 1e-300)',
    'weight',
    (1,))),
    ('weight_ratio_unrunnable',
    'RoundPolicy',
    ("weight['b'] = 1e-291 is too small next to the largest weight to be represented (ratio "
    'below 1e-300)',
    'weight',
    (1,))),
    ('sf',
    'gavel',
    ('scale_factors[0] is 1.5; every entry must be an integer', 'scale_factors', (0,))),
    ('steps',
    'gavel',
    ('num_steps_remaining[1] is -1; every entry must be non-negative',
    'num_steps_remaining',
    (1,))),
    ('t',
    'gavel',
    ('times_since_start[0] is nan; every entry must be finite', 'times_since_start', (0,))),
    ('ratio',
    'gavel',
    ('unflattened_throughputs[1, 0] = 1e-10 is too small next to the largest throughput 1e+300 '
    'to be represented (ratio below 1e-300); use 0 where a job cannot run, or other units',
    'unflattened_throughputs',
    (1, 0))),
]


@pytest.mark.parametrize("name, how, expected", EXPECTED,
                         ids=[f"{e[0]}-{e[1]}" for e in EXPECTED])
def test_same_error_as_before(name: str, how: str, expected: tuple | None) -> None:
    if how == "gavel":
        got = gavel_error(GAVEL_CASES[name])
    else:
        case = next(c for c in CASES if c[0] == name)
        got = error(how, *case[1:])
    assert got == expected


@pytest.mark.parametrize("policy, builder", [
    ("finish_time_fairness", "FinishTimeFairness"), ("min_makespan", "MinMakespan"),
    ("max_min_fairness", "MaxMinFairness"), ("max_total_throughput", "MaxTotalThroughput")])
def test_round_solves_the_public_jobs_program(policy: str, builder: str) -> None:
    """A round with an unrunnable job and a drained type solves the program of the public
    `fairalloc.Jobs` over its runnable jobs and present types, exactly (same data, same
    program)."""
    tp = {"a": {"x": 2.0, "y": 1.0, "z": 4.0}, "b": {"x": 1.0, "y": 3.0},
          "c": {"x": 0.5, "y": 0.25}, "d": {"w": 1.0}}
    workers = {"x": 2, "y": 1, "z": 0}
    kw = {"scale_factor": {"a": 1, "b": 1, "c": 2, "d": 1},
          "steps_remaining": {"a": 50.0, "b": 20.0, "c": 30.0, "d": 5.0},
          "elapsed": {"a": 10.0, "b": 0.0, "c": 5.0, "d": 1.0}}
    if policy == "max_min_fairness":
        kw = {"scale_factor": kw["scale_factor"], "weight": {"a": 1.0, "b": 2.0, "c": 1.0,
                                                            "d": 1.0}}
    elif policy == "max_total_throughput":
        kw = {"scale_factor": kw["scale_factor"]}
    r = fa.solve_round(policy, tp, workers, work_conserving=False, **kw)
    assert r.unrunnable_jobs == ("d",) and r.drained_types == ("z", "w")
    run, types = ["a", "b", "c"], ["x", "y"]
    T = np.array([[tp[j].get(t, 0.0) for t in types] for j in run])
    fields = {"steps_remaining": "steps_remaining", "elapsed": "elapsed", "weight": "weight"}
    jobs = fa.Jobs(T, scale_factor=[kw["scale_factor"][j] for j in run],
                   **{f: [kw[k][j] for j in run] for f, k in fields.items() if k in kw})
    ref = getattr(fa.throughput, builder)(jobs, fa.Cluster({"x": 2, "y": 1}))
    want = ref.solve(work_conserving=False)
    assert np.array_equal(r.x[:3, :2], want.x) and not r.x[3].any() and not r.x[:, 2].any()
    assert r.certificate.ok
