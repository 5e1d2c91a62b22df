"""Validated, immutable inputs and the error hierarchy."""

from __future__ import annotations

import numpy as np
import pytest

import fairalloc as fa


def test_error_hierarchy() -> None:
    assert issubclass(fa.InputError, ValueError) and issubclass(fa.InputError, fa.FairallocError)
    assert issubclass(fa.InfeasibleError, fa.SolverError)
    assert issubclass(fa.CertificateError, fa.SolverError)
    assert issubclass(fa.SolverError, fa.FairallocError)


def test_cluster() -> None:
    c = fa.Cluster({"v100": 2, "k80": 3})
    assert c.types == ("v100", "k80") and c.total_workers == 5.0
    with pytest.raises(ValueError):
        c.capacity[0] = 7
    for bad, match in (({}, "empty"), ({"a": 0}, r"workers\[0\] is 0"),
                       ({"a": 1.5}, "integer"), ([1, 2], "mapping")):
        with pytest.raises(fa.InputError, match=match):
            fa.Cluster(bad)  # type: ignore[arg-type]


def test_zero_worker_type_is_refused_by_cluster_and_accepted_by_the_round_api() -> None:
    # issue #16: a drained type is a normal cluster state. A Cluster lists the capacity the
    # formulations divide by, so it refuses 0 and names the entry points that accept it
    with pytest.raises(fa.InputError, match=r"workers\[1\] is 0 \(type 'k80'.*solve_round"):
        fa.Cluster({"v100": 2, "k80": 0})
    r = fa.solve_round("max_min_fairness", {"a": {"v100": 1.0, "k80": 1.0}},
                       {"v100": 2, "k80": 0})
    assert r.drained_types == ("k80",) and r.certificate.ok
    assert r.job_allocation == {"a": {"v100": 1.0, "k80": 0.0}}


def test_jobs_defaults_and_labels() -> None:
    tp = np.array([[40.0, 10.0], [12.0, 4.0]])
    jobs = fa.Jobs(tp, ids=["a", "b"])
    assert jobs.n == 2 and jobs.index("b") == 1
    np.testing.assert_array_equal(jobs.scale_factor, [1, 1])
    np.testing.assert_array_equal(jobs.weight, [1, 1])
    tp[0, 0] = 99.0  # the caller's array is copied, not shared
    assert jobs.throughput[0, 0] == 40.0
    with pytest.raises(ValueError):
        jobs.throughput[0, 0] = 1.0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"throughput": [[1.0, np.inf]]}, r"throughput\[0, 1\] is inf"),
        ({"throughput": [[1.0, 0.0], [0.0, 0.0]]}, r"throughput\[1\] is all zero"),
        ({"throughput": [[1.0]], "scale_factor": [0]}, r"scale_factor\[0\] is 0"),
        ({"throughput": [[1.0]], "scale_factor": [1.5]}, "integer"),
        ({"throughput": [[1.0]], "weight": [-2.0]}, r"weight\[0\] is -2"),
        ({"throughput": [[1.0], [1.0]], "ids": ["a", "a"]}, r"ids\[1\] = 'a' repeats"),
        ({"throughput": [[1.0]], "ids": ["a", "b"]}, "ids has 2 entries"),
        ({"throughput": [[1.0]], "steps_remaining": [1.0, 2.0]}, "steps_remaining has shape"),
        ({"throughput": np.zeros((0, 2))}, "throughput is empty"),
        # fuzz (seeds 16, 18): HiGHS rejected the LPs ("model rejected by passModel"); a
        # subnormal is refused as such (issue #27), a normal tiny one by the ratio rule
        ({"throughput": [[1.0], [1.0]], "weight": [5e-324, 1348.0]},
         r"weight\[0\] is 5e-324: subnormal"),
        ({"throughput": [[1.0], [1.0]], "weight": [1e-305, 1348.0]},
         r"weight\[0\] = 1e-305 is too small next to the largest"),
        ({"throughput": [[1.4e-9, 7.9e-6], [1.2e-9, 1e308]]},
         r"throughput\[0, 0\] = 1.4e-09 is too small next to the largest"),
    ],
)
def test_jobs_bad_input(kwargs: dict, match: str) -> None:
    with pytest.raises(fa.InputError, match=match):
        fa.Jobs(**kwargs)


def test_jobs_must_fit_cluster() -> None:
    cluster = fa.Cluster({"v100": 4, "k80": 2})
    fa.Jobs([[1.0, 1.0]], scale_factor=[4]).check_cluster(cluster)
    with pytest.raises(fa.InputError, match="2 accelerator types"):
        fa.Jobs([[1.0]]).check_cluster(cluster)
    with pytest.raises(fa.InputError, match=r"scale_factor\[0\] = 4 exceeds"):
        fa.Jobs([[0.0, 1.0]], scale_factor=[4]).check_cluster(cluster)
    with pytest.raises(fa.InputError, match="job_id"):
        fa.Jobs([[1.0, 1.0]]).index("missing")


def test_lazy_public_names() -> None:
    assert "fisher_market" in dir(fa)
    with pytest.raises(AttributeError):
        fa.not_a_name  # noqa: B018
