"""Issue #29 item 4: FIFO through the Gavel adapter by the greedy fill, straight from the
dicts (`fairalloc.integrations.gavel_fifo`), is the exact path's answer (RoundPolicy's FIFO in
arrival order) with the same certificate, and hands anything else to the exact path."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairalloc as fa
from fairalloc.integrations import gavel
from fairalloc.integrations.gavel_fifo import fifo_round

#: the library's documented feasibility tolerance (time fractions): how far two certified
#: FIFO allocations of the same program may differ per entry
FEAS = 1e-7
TYPES = ("v100", "p100", "k80")


def _exact(tp, sf, spec):
    ranked = sorted(tp)
    order = {j: float(i) for i, j in enumerate(ranked)}
    return fa.RoundPolicy("fifo").allocate(tp, spec, scale_factor=sf, order=order)


@st.composite
def rounds(draw):
    """Gavel-shaped FIFO rounds: integer job ids in any dict order, gangs 1-4, 0-6 workers
    per type (0: drained), rates that may be 0 or repeat (ties), sometimes a type the spec
    does not list."""
    n = draw(st.integers(1, 12))
    k = draw(st.integers(1, 3))
    types = TYPES[:k]
    spec = {t: draw(st.integers(0, 6)) for t in types}
    rate = st.sampled_from([0.0, 1.0, 2.0, 2.5, 4.0, 7.0]) if draw(st.booleans()) else \
        st.floats(0.0, 10.0).map(lambda v: round(v, 3))
    ids = draw(st.permutations(list(range(n))))
    tp = {j: {t: draw(rate) for t in types} for j in ids}
    if draw(st.integers(0, 4)) == 0:
        tp[ids[0]]["a100"] = 3.0   # a type the spec does not list: drained
    sf = {j: draw(st.sampled_from([1, 1, 2, 4])) for j in ids}
    return tp, sf, spec


@settings(max_examples=60, deadline=None)
@given(rounds())
def test_property_greedy_round_is_the_exact_round(case):
    tp, sf, spec = case
    exact = _exact(tp, sf, spec)
    fast = fifo_round(tp, sf, spec, {})
    adapter = gavel.policy("fifo_perf")
    got = adapter.get_allocation(tp, sf, spec)
    if fast is None:   # handed to the exact path: the adapter's answer is RoundPolicy's
        assert got == exact.job_allocation
        return
    assert fast.certificate.ok and fast.certificate.kind == exact.certificate.kind
    assert fast.job_ids == exact.job_ids and fast.types == exact.types
    np.testing.assert_allclose(fast.x, exact.x, rtol=0, atol=FEAS)
    np.testing.assert_allclose(fast.prices, exact.prices, rtol=1e-12, atol=0)
    np.testing.assert_allclose(fast.effective_throughput, exact.effective_throughput,
                               rtol=1e-12, atol=0)
    assert fast.objective == pytest.approx(exact.objective, rel=1e-12)
    assert fast.stats.path == exact.stats.path
    assert (fast.drained_types, fast.unrunnable_jobs) == (exact.drained_types,
                                                          exact.unrunnable_jobs)
    assert adapter.last_result.stats.path == fast.stats.path
    assert got == fast.job_allocation


def test_greedy_path_is_taken_without_ties_and_left_with_one():
    tp = {0: {"v100": 3.0, "k80": 1.0}, 1: {"v100": 2.0, "k80": 1.0}, 2: {"v100": 5.0}}
    sf = {0: 1, 1: 2, 2: 1}
    spec = {"v100": 2, "k80": 2}
    r = fifo_round(tp, sf, spec, {})
    assert r is not None and r.certificate.ok and r.stats.path == ("fifo-greedy:3",)
    assert r.job_allocation == {0: {"v100": 1.0, "k80": 0.0}, 1: {"v100": 0.5, "k80": 0.5},
                                2: {"v100": 0.0, "k80": 0.0}}
    tie = {0: {"v100": 1.0, "k80": 1.0}}   # two equally fast types with room: the LPs decide
    assert fifo_round(tie, {0: 1}, spec, {}) is None
    assert fifo_round(tp, sf, spec, {"method": "highs"}) is None   # not a tolerance


@pytest.mark.parametrize("tp, sf, arg", [
    ({0: {"v100": -1.0}}, {0: 1}, "unflattened_throughputs"),
    ({0: {"v100": "1.0"}}, {0: 1}, "unflattened_throughputs"),
    ({0: {"v100": True}}, {0: 1}, "unflattened_throughputs"),
    ({0: {"v100": 1.0}}, {}, "scale_factors"),
    ({0: {"v100": 1.0}}, {0: 1.5}, "scale_factors"),
])
def test_bad_inputs_get_the_exact_paths_errors(tp, sf, arg):
    assert fifo_round(tp, sf, {"v100": 2}, {}) is None
    with pytest.raises(fa.InputError) as exc:
        gavel.policy("fifo_perf").get_allocation(tp, sf, {"v100": 2})
    assert exc.value.argument == arg


def _one_by_one(A, sf, cap, order):
    """The textbook pass: every job in arrival order fills its types in decreasing rate
    (stable on equal rates) with what the earlier jobs left; a job whose equally fast types
    could trade time (one holds some, another has room) stops the pass."""
    n, k = A.shape
    x = np.zeros((n, k))
    spare = [float(c) for c in cap]
    for pos, m in enumerate(order):
        if not any(w > 0 for w in spare):
            break
        use = sorted((j for j in range(k) if A[m, j] > 0 and spare[j] > 0),
                     key=lambda j: -A[m, j])
        left, take, room = 1.0, {}, {}
        for j in use:
            u = spare[j] / sf[m]
            if left <= 0:
                room[j] = u
            elif u <= left:
                take[j], left, spare[j] = u, left - u, 0.0
            else:
                take[j], room[j], left = left, u - left, 0.0
                spare[j] = max(spare[j] - take[j] * sf[m], 0.0)
        for j in use:
            if take.get(j, 0) > 0 and any(A[m, i] == A[m, j] and room.get(i, 0) > 0
                                          and i != j for i in use):
                return pos, x
        for j, v in take.items():
            x[m, j] = v
    return len(order), x


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 30) | st.integers(256, 400), st.integers(1, 4), st.booleans(),
       st.integers(0, 2**32 - 1))
def test_property_forced_prefix_runs_equal_the_one_by_one_pass(n, k, coarse, seed):
    """`forced_prefix` (vectorised runs from its run threshold of jobs on, so sizes on both
    sides of it) gives the one-by-one pass's stop and allocation bit for bit (gangs and
    workers whole numbers, partial takes, coarse rates that tie)."""
    from fairalloc.throughput.ordering import forced_prefix

    rng = np.random.default_rng(seed)
    A = (rng.choice([0.0, 0.25, 0.5, 1.0], size=(n, k)) if coarse
         else rng.uniform(0.0, 1.0, size=(n, k)) * (rng.random((n, k)) < 0.9))
    sf = rng.choice([1.0, 1.0, 2.0, 3.0, 8.0], size=n)
    cap = rng.integers(0, 3 * n + 1, size=k).astype(float)
    order = rng.permutation(n)
    stop, x = forced_prefix(A, sf, cap, order)
    want_stop, want = _one_by_one(A, sf, cap, order.tolist())
    assert stop == want_stop
    np.testing.assert_array_equal(x, want)


def test_certificate_read_to_the_last_running_job_is_the_whole_certificate():
    """The certificate reads the stages up to the last job that runs when every worker is
    then in use; its bounds, sums and prices are those of every stage (here v100's price
    comes from a stage after it: job 0 fills v100 exactly, so its own stage is not limited
    by v100)."""
    from fairalloc.throughput.ordering import forced_certificate

    tp = {0: {"v100": 2.0}, 1: {"v100": 3.0}, 2: {"v100": 1.0}}
    sf = {0: 1, 1: 1, 2: 2}
    spec = {"v100": 1}
    fast = fifo_round(tp, sf, spec, {})
    exact = _exact(tp, sf, spec)
    A = np.ones((3, 1))
    whole = forced_certificate(A, np.array([1.0, 1.0, 2.0]), np.ones(1), np.arange(3),
                               np.array(fast.x), 0.0, 1e-6, 1e-7)
    assert fast.prices.tolist() == whole.prices.tolist() == [1.0]
    np.testing.assert_array_equal(fast.prices, exact.prices)
    assert (fast.certificate.primal_value, fast.certificate.dual_bound, fast.certificate.gap) \
        == (whole.certificate.primal_value, whole.certificate.dual_bound, 0.0)
    assert fast.job_allocation == {0: {"v100": 1.0}, 1: {"v100": 0.0}, 2: {"v100": 0.0}}


class _Key:
    """A Gavel ``JobIdPair``-like key: equal and hashing alike by value, a new object each
    time it is built."""

    def __init__(self, i):
        self.i = i

    def __hash__(self):
        return hash((self.i, None))

    def __eq__(self, other):
        return isinstance(other, _Key) and other.i == self.i

    def __lt__(self, other):
        return self.i < other.i


def test_scale_factors_by_equal_keys_in_another_order_are_read_by_key():
    """Scale factors keyed by equal (not the same) key objects, in another order, are looked
    up by key: the round equals the one with the same key objects."""
    tp = {_Key(i): {"v100": float(1 + i), "k80": 0.5} for i in range(6)}
    sf = {k: 1 + k.i % 3 for k in tp}
    spec = {"v100": 4, "k80": 2}
    same = fifo_round(tp, sf, spec, {})
    other = fifo_round(tp, {_Key(k.i): v for k, v in reversed(sf.items())}, spec, {})
    assert same is not None and other is not None
    np.testing.assert_array_equal(same.x, other.x)
    assert same.x[:, 0].tolist() == [1.0, 1.0, 1 / 3, 0.0, 0.0, 0.0]


def test_adapter_builds_its_round_result_only_when_read_and_it_is_the_certified_one():
    """The adapter returns Gavel's dict from the fill; ``last_result`` is the same certified
    round as `fifo_round` (built on first read, from the inputs as they were at the call),
    and a later exact-path round replaces it."""
    tp = {j: {"v100": 3.0 + j % 2, "k80": 1.0} for j in range(8)}
    sf = {j: 1 + j % 2 for j in range(8)}
    spec = {"v100": 3, "k80": 2}
    adapter = gavel.policy("fifo_perf")
    got = adapter.get_allocation(tp, sf, spec)
    ref = fifo_round(tp, sf, spec, {})
    assert ref is not None and got == ref.job_allocation
    tp[0]["v100"], sf[1], spec["k80"] = 50.0, 4, 9   # the caller's dicts change after the call
    got[0]["v100"] = -1.0                            # and so does the dict returned
    last = adapter.last_result
    assert last is adapter.last_result   # built once
    assert last.certificate.ok and last.certificate == ref.certificate
    np.testing.assert_array_equal(last.x, ref.x)
    np.testing.assert_array_equal(last.prices, ref.prices)
    tie = {0: {"v100": 1.0, "k80": 1.0}}
    adapter.get_allocation(tie, {0: 1}, spec)   # a tie: the exact path
    assert adapter.last_result.stats.path != ref.stats.path


@pytest.mark.parametrize("tp, sf, spec, expect", [
    # the job's fastest types tie: one is full, two have room: a tie (the LP stages)
    ({0: {"a": 9.0, "b": 1.0, "c": 1.0}, 1: {"a": 5.0, "b": 5.0, "c": 5.0}},
     {0: 1, 1: 1}, {"a": 1, "b": 3, "c": 3}, None),
    # the fastest type is full, then one slower type with room: the job's whole time there
    ({0: {"a": 9.0, "b": 5.0, "c": 4.0}, 1: {"a": 9.0, "b": 5.0, "c": 4.0}},
     {0: 1, 1: 1}, {"a": 1, "b": 3, "c": 3}, {"a": 0.0, "b": 1.0, "c": 0.0}),
])
def test_greedy_round_after_a_full_type_is_the_exact_one(tp, sf, spec, expect):
    fast = fifo_round(tp, sf, spec, {})
    if expect is None:
        assert fast is None
        return
    exact = _exact(tp, sf, spec)
    assert fast.job_allocation[1] == expect and fast.certificate.ok
    np.testing.assert_allclose(fast.x, exact.x, rtol=0, atol=FEAS)
    np.testing.assert_allclose(fast.prices, exact.prices, rtol=1e-12, atol=0)


@st.composite
def gavel_rounds(draw):
    """Larger Gavel-like rounds: 10-40 jobs in arrival order, gangs 1-8, 0-16 workers per
    type, distinct rates (few ties): the greedy's one-type steps, types used up along the
    way and full clusters whose later jobs only price the types."""
    n = draw(st.integers(10, 40))
    spec = {t: draw(st.integers(0, 16)) for t in TYPES}
    ids = list(range(n))
    if draw(st.booleans()):
        ids = draw(st.permutations(ids))
    rate = st.floats(0.0, 10.0).map(lambda v: round(v, 4))
    tp = {j: {t: draw(rate) for t in TYPES} for j in ids}
    sf = {j: draw(st.sampled_from([1, 1, 1, 2, 4, 8])) for j in ids}
    return tp, sf, spec


@settings(max_examples=40, deadline=None)
@given(gavel_rounds())
def test_property_larger_greedy_rounds_are_the_exact_rounds(case):
    tp, sf, spec = case
    fast = fifo_round(tp, sf, spec, {})
    if fast is None:
        return   # (a tie: the exact path's own; the test above checks the adapter's answer)
    exact = _exact(tp, sf, spec)
    assert fast.certificate.ok and exact.certificate.kind == fast.certificate.kind
    np.testing.assert_allclose(fast.x, exact.x, rtol=0, atol=FEAS)
    np.testing.assert_allclose(fast.prices, exact.prices, rtol=1e-12, atol=0)
    assert fast.objective == pytest.approx(exact.objective, rel=1e-12)
    assert fast.certificate.dual_bound == pytest.approx(exact.certificate.dual_bound,
                                                        rel=1e-12)
    assert fast.stats.path == exact.stats.path
    assert fast.unrunnable_jobs == exact.unrunnable_jobs
