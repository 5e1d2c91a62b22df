"""Valid inputs emit no numpy RuntimeWarning (warn39).

Solvers are silent unless ``verbose=True``; under ``python -W error`` a numpy warning would
become an exception that is no fairalloc error. The structured floor solver divided by the
rate difference of a split between two columns of one rate (``_vertex_duals``): such a split
is degenerate and now has no closed-form duals. The property sweeps the cold policies over
wide-scale data (rates 1e0..1e12 with ties, steps 1e-6..1e6, elapsed 0..1e6, 1-3 types)
with RuntimeWarnings turned into errors; every answer must be certified.
"""

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fairalloc as fa

# (minc39) min_makespan: two jobs split between the two types at one rate
TIED_SPLIT_TP = np.array([
    [13.38314939461626, 26.76629878923252], [26.76629878923252, 13.38314939461626],
    [26.76629878923252, 26.76629878923252], [13.38314939461626, 13.38314939461626],
    [26.76629878923252, 13.38314939461626], [26.76629878923252, 26.76629878923252],
    [26.76629878923252, 13.38314939461626]])
TIED_SPLIT_STEPS = np.array([
    2.7404596614312809e+03, 4.5490502144616256e-06, 5.1395125982785326e-04,
    7.9620057174430312e+03, 2.4894329918527436e+01, 1.3864300325636882e+00,
    2.7170370786501207e-02])

POLICIES = {
    "min_makespan": fa.min_makespan,
    "finish_time_fairness": fa.finish_time_fairness,
    "max_min_fairness": fa.max_min_fairness,
    "shortest_job_first": fa.shortest_job_first,
}


def _solve_silently(policy, jobs, cluster):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        return POLICIES[policy](jobs, cluster)


def test_tied_split_floor_is_silent_and_unchanged():
    jobs = fa.Jobs(TIED_SPLIT_TP, steps_remaining=TIED_SPLIT_STEPS)
    cluster = fa.Cluster({"a": 3, "b": 2})
    res = _solve_silently("min_makespan", jobs, cluster)
    assert res.certificate.ok
    # the same certified optimum as without the warning filter
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = fa.min_makespan(jobs, cluster)
    assert res.certificate.ok and ref.certificate.ok
    tol = res.certificate.gap + ref.certificate.gap
    assert abs(res.objective - ref.objective) <= tol + fa.tolerances.GAP_TOL * abs(ref.objective)


@st.composite
def wide_instances(draw, max_jobs=7):
    k = draw(st.integers(1, 3))
    n = draw(st.integers(1, max_jobs))
    # a few distinct rates per draw (ties), each anywhere in 1e0..1e12
    pool = draw(st.lists(st.floats(0.0, 12.0), min_size=1, max_size=3))
    base = draw(st.sampled_from([1.0, 13.38314939461626]))
    rates = base * 10.0 ** np.array(pool)
    idx = draw(st.lists(st.integers(0, len(pool) - 1), min_size=n * k, max_size=n * k))
    tp = rates[np.array(idx)].reshape(n, k) * np.array(
        draw(st.lists(st.sampled_from([1.0, 2.0]), min_size=n * k, max_size=n * k))
    ).reshape(n, k)
    steps = 10.0 ** np.array(draw(st.lists(st.floats(-6.0, 6.0), min_size=n, max_size=n)))
    elapsed_value = st.one_of(st.just(0.0), st.floats(0.0, 1e6, allow_subnormal=False))
    elapsed = np.array(draw(st.lists(elapsed_value, min_size=n, max_size=n)))
    counts = draw(st.lists(st.integers(1, 4), min_size=k, max_size=k))
    cluster = fa.Cluster({f"t{i}": c for i, c in enumerate(counts)})
    return fa.Jobs(tp, steps_remaining=steps, elapsed=elapsed), cluster


@pytest.mark.parametrize("policy", sorted(POLICIES))
@given(case=wide_instances())
def test_wide_scale_inputs_emit_no_runtime_warning(policy, case):
    jobs, cluster = case
    res = _solve_silently(policy, jobs, cluster)
    assert res.certificate.ok, res.certificate
