"""Quick fuzz profile (issue #12, point 5): every public entry point, a few hypothesis examples
each (fixed seed, so CI is reproducible), and a quick unit-rescaling check.

Each call must end in ``ok`` (result accepted by an independent check in ``tests/fuzz``) or
``typed_error`` (a fairalloc error on a case not drawn as valid, or an InputError); never
``no_answer`` (a typed error other than InputError on a valid case), a crash, a wrong certified
answer, a mutated input, a writable result array or a hang. Failures a target lists as known,
open library defects (``Target.known``, issue #27) are tolerated here and reported by the long
profile, ``python benchmarks/fuzz.py``.
"""

from __future__ import annotations

import pytest

from tests.fuzz.core import FAILURES, drive
from tests.fuzz.rescale import (
    FACTORS,
    PERM_FAMILIES,
    RESCALE_FAMILIES,
    run_permutation,
    run_rescale,
)
from tests.fuzz.targets import TARGETS

#: examples per target (21, was 25: the 11 case classes of issue #27 below take the rest of
#: the same time budget, about 12 s of CPU on the CI machine)
QUICK_EXAMPLES = 21
QUICK_EXAMPLES_SLOW = 8
#: the case classes of issue #27 (family "wide": valid instances of up to 30 jobs, each checked
#: by reference LPs): a few each here, the long profile draws the rest
QUICK_EXAMPLES_WIDE = 3
PER_CALL_TIMEOUT = 20.0
SEED = 20261124


def _report(bad: list) -> str:
    lines = [f"{len(bad)} failing call(s):"]
    for o in bad[:5]:
        lines.append(f"  [{o.outcome}] {o.detail}\n      {o.reproducer}")
    return "\n".join(lines)


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_fuzz_target(name: str) -> None:
    target = TARGETS[name]
    n = QUICK_EXAMPLES_WIDE if target.family == "wide" else \
        QUICK_EXAMPLES_SLOW if target.slow else QUICK_EXAMPLES
    outcomes = drive(target, n, seed=SEED, timeout=PER_CALL_TIMEOUT, stop_on_failure=True,
                     tolerate_known=True)
    assert outcomes, "hypothesis drew no example"
    bad = [o for o in outcomes if o.outcome in FAILURES and not target.tolerated(o)]
    assert not bad, _report(bad)


@pytest.mark.parametrize("family", sorted(RESCALE_FAMILIES))
def test_rescaling_quick(family: str) -> None:
    table, findings = run_rescale(RESCALE_FAMILIES[family], 2, seed=SEED,
                                  factors=(FACTORS[0], FACTORS[3], FACTORS[-1]),
                                  timeout=PER_CALL_TIMEOUT)
    assert not findings, "\n".join(f"[{f.kind} x{f.factor:g}] {f.detail}\n    {f.reproducer}"
                                   for f in findings[:5])


@pytest.mark.parametrize("family", sorted(PERM_FAMILIES))
def test_permutation_quick(family: str) -> None:
    counts, findings = run_permutation(PERM_FAMILIES[family], 2, seed=SEED,
                                       timeout=PER_CALL_TIMEOUT)
    assert not findings, "\n".join(f"[{f.kind}] {f.detail}\n    {f.reproducer}"
                                   for f in findings[:5])


def test_registry_covers_the_public_api() -> None:
    """Every public name of fairalloc is exercised by some target (by name or by a call that
    constructs it): a new entry point must get a fuzz target."""
    import inspect

    import fairalloc as fa
    import tests.fuzz.targets as T

    source = inspect.getsource(T)
    exempt = {  # result containers and errors: reached through the entry points that return
        # them (the writable walk covers their arrays)
        "Allocation", "AuctionRound", "BidTable", "Certificate", "Completion", "EFQResult",
        "FingerprintMatch", "GPUAuctionResult", "MarketResult", "PartialAllocationResult",
        "PlanResult", "QueuedJob", "RegimeForecast", "RelaxedPlan", "ReplanDecision", "Result",
        "RoundAssignment", "RoundResult", "SolveStats", "Placement", "ThroughputPolicy",
        "ReplayCheck",
        "BackendUnavailableError", "CertificateError", "FairallocError", "FairallocWarning",
        "InfeasibleError", "InputError", "SolverError", "SolveStatus", "UnboundedError",
    }
    missing = [n for n in fa.__all__ if n not in exempt and n not in source]
    assert not missing, f"public names without a fuzz target: {missing}"


# --- the harness itself: each failure class is detected ----------------------------------------
def _fake(call, check=None):
    from hypothesis import strategies as st

    from tests.fuzz.core import Target
    return Target("fake", "harness", st.fixed_dictionaries({"a": st.just([1.0, 2.0])}), call,
                  check)


def test_harness_classifies_every_outcome() -> None:
    import time

    import numpy as np

    import fairalloc as fa
    from tests.fuzz.core import Wrong, run_case

    def outcome(call, check=None, timeout=20.0):
        return run_case(_fake(call, check), {"a": [1.0, 2.0]}, timeout=timeout).outcome

    assert outcome(lambda c, ctx: 1) == "ok"
    assert outcome(lambda c, ctx: (_ for _ in ()).throw(fa.InputError("x"))) == "typed_error"
    assert outcome(lambda c, ctx: 1 / 0) == "crash"

    def mutate(c, ctx):
        c["a"][0] = 5.0
    assert outcome(mutate) == "mutated"

    def mutate_watched(c, ctx):
        arr = ctx.watch("arr", np.ones(2))
        arr[0] = 3.0
    assert outcome(mutate_watched) == "mutated"
    def freeze_watched(c, ctx):
        ctx.watch("arr", np.ones(2)).flags.writeable = False
    assert outcome(freeze_watched) == "mutated"  # freezing the caller's array changes it
    assert outcome(lambda c, ctx: {"x": (np.ones(2),)}) == "writable"
    ro = np.ones(2)
    ro.flags.writeable = False
    assert outcome(lambda c, ctx: {"x": (ro,)}) == "ok"

    def reject(c, r):
        raise Wrong("no")
    assert outcome(lambda c, ctx: 1, reject) == "wrong"
    assert outcome(lambda c, ctx: time.sleep(5), timeout=0.2) == "hang"

    import os
    printed = run_case(_fake(lambda c, ctx: os.write(1, b"banner\n")), {"a": [1.0, 2.0]})
    assert printed.outcome == "ok" and printed.printed == "banner"


def test_harness_counts_a_runtime_warning_as_printed() -> None:
    """warn39: a numpy RuntimeWarning is noise like a print (under ``python -W error`` it is an
    exception that is no fairalloc error): ``run_case`` records it in ``printed``, once per
    distinct message and line, and leaves the outcome's class alone; other warnings stay ignored."""
    import warnings

    import numpy as np

    from tests.fuzz.core import run_case

    def divide(c, ctx):
        for _ in range(2):  # one line, twice: recorded once
            np.ones(2) / np.zeros(2)
        warnings.warn("documented", UserWarning, stacklevel=2)
        return 1
    o = run_case(_fake(divide), {"a": [1.0, 2.0]})
    assert o.outcome == "ok"
    assert o.printed.count("RuntimeWarning: divide by zero") == 1, o.printed
    assert "documented" not in o.printed
    assert run_case(_fake(lambda c, ctx: 1), {"a": [1.0, 2.0]}).printed == ""


def test_harness_flags_an_accepted_subnormal_as_wrong() -> None:
    """Issue #27 (seeds 707/808): fairalloc refuses subnormal numbers everywhere, so a call
    that returns on a subnormal scalar or array entry accepted garbage (``wrong``); a normal
    tiny value and 0 are not flagged."""
    import numpy as np

    from tests.fuzz.core import run_case

    def outcome(value):
        return run_case(_fake(lambda c, ctx: 1), {"a": value}).outcome
    assert outcome(5e-324) == "wrong"
    assert outcome(np.array([[1.0, -2e-310]])) == "wrong"
    assert outcome(np.float64(1e-310)) == "wrong"
    assert outcome(np.array([0.0, np.finfo(float).tiny, 1e308])) == "ok"
    assert outcome(0.0) == "ok"


def test_market_rescaling_compares_utilities_within_the_certified_gap() -> None:
    """Issue #27 (seed 808, "volatile market leontief: supply x a x1e+09: utility differs by
    1.07e-05"): both answers were certified (relative gaps 0 and 6.5e-10), and an objective gap
    g lets a buyer's utility move by sqrt(2 g / B_i) (the log's curvature), 6.7e-5 here: not a
    violation. Utilities moved further than the certificates allow still are."""
    from types import SimpleNamespace

    import numpy as np

    from tests.fuzz.rescale import RESCALE_FAMILIES, RTOL, _rel_diff, compare

    fam = RESCALE_FAMILIES["volatile market leontief: supply x a"]
    case = {"utility": np.array([[[0.5132261675215631, 0.5132261675215631]],
                                 [[1.1639867181112218, 1.1639867181112218]]]),
            "budget": np.array([1.8983775922751482, 0.7654091078969891]),
            "supply": np.array([[0.7749141032569722, 3.984393073659506]]), "kind": "leontief"}
    a = 1e9
    base, r = fam.call(case, 1.0), fam.call(case, a)
    assert base.certificate.ok and r.certificate.ok
    base_map, got = fam.mapped(base, 1.0, case), fam.mapped(r, a, case)
    allowed = fam.tolerance(base, r, a, case)["utility"]
    assert compare(fam, base, base_map, r, got, a, case) == []
    assert _rel_diff(got["utility"], base_map["utility"]) <= allowed
    # beyond the certified bound (and RTOL): flagged
    worse = SimpleNamespace(allocation=np.asarray(r.allocation) * (1 + 3 * max(allowed, RTOL)),
                            certificate=r.certificate)
    bad = compare(fam, base, base_map, worse, fam.mapped(worse, a, case), a, case)
    assert bad and "utility differs" in bad[0]


def test_estimator_check_follows_the_documented_leading_axes() -> None:
    """Issue #27 (seed 808): ``makespan_lower_bound`` of a (1, n) ``remaining`` returns shape
    (1,) (vectorised over leading axes, as documented); the fuzz check converted it with
    ``float`` and raised TypeError. It now compares the whole array, and a wrong bound is
    still rejected."""
    import numpy as np

    from tests.fuzz.core import Ctx, Wrong

    t = TARGETS["forecast estimators"]
    case = {"fn": "makespan_lower_bound", "a": None, "b": None,
            "c": np.array([[9.600354666059496e-11, 2.8681876620390392e-11]]), "d": 8.0,
            "workers": None}
    r = t.call(case, Ctx())
    assert np.shape(r) == (1,)
    t.check(case, r)  # raised TypeError before
    with pytest.raises(Wrong):
        t.check(case, np.asarray(r) * 1.5)
    with pytest.raises(Wrong):  # a scalar where the documented answer has shape (1,)
        t.check(case, float(np.asarray(r)[0]))
    flat = dict(case, c=np.array([100.0, 50.0, 50.0]), d=2.0, workers=np.array([1, 2, 2]))
    t.check(flat, t.call(flat, Ctx()))  # 150.0 (the docstring example)
    with pytest.raises(Wrong):
        t.check(flat, 149.0)


def test_harness_no_answer_on_valid_cases_only() -> None:
    """issue #27: a SolverError / CertificateError / InfeasibleError on a case its strategy drew
    as valid is the failure no_answer; on a case not drawn as valid (or without a verdict) it
    stays an acceptable typed error; an InputError is never no_answer; an InfeasibleError from
    an always-feasible program stays wrong."""
    import dataclasses

    import fairalloc as fa
    from tests.fuzz.core import FAILURES, run_case
    from tests.fuzz.strategies import VALID

    def raising(exc):
        def call(c, ctx):
            assert VALID not in c  # the verdict is the harness's, not an argument
            raise exc
        return _fake(call)

    def outcome(exc, verdict, **target):
        case = {"a": [1.0, 2.0]} if verdict is None else {"a": [1.0, 2.0], VALID: verdict}
        t = dataclasses.replace(raising(exc), **target)
        return run_case(t, case)

    for exc in (fa.SolverError("highs: Unknown"), fa.CertificateError("gap 0.4"),
                fa.InfeasibleError("infeasible")):
        o = outcome(exc, True)
        assert o.outcome == "no_answer" and o.valid and "no_answer" in FAILURES
        assert outcome(exc, False).outcome == "typed_error"
        assert outcome(exc, None).outcome == "typed_error"
    assert outcome(fa.InputError("x", argument="a"), True).outcome == "typed_error"
    assert outcome(fa.InfeasibleError("x"), True, always_feasible=True).outcome == "wrong"
    assert outcome(fa.InfeasibleError("x"), False, always_feasible=True).outcome == "wrong"
    # a known, open defect is tolerated by the quick profile, by class and message only
    t = dataclasses.replace(raising(fa.SolverError("highs: Unknown")),
                            known=(("no_answer", r"^SolverError: highs"),))
    o = run_case(t, {"a": [1.0, 2.0], VALID: True})
    assert t.tolerated(o)
    assert not t.tolerated(dataclasses.replace(o, detail="CertificateError: gap 0.4"))
    assert not t.tolerated(dataclasses.replace(o, outcome="wrong"))


def _draw(strategy, seed: int, n: int = 40) -> list:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    cases: list = []

    @hseed(seed)
    @settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def body(case):
        cases.append(case)

    body()
    return cases


def test_strategies_decide_validity_when_they_draw() -> None:
    """The verdict comes from the strategy: corrupted data, an invalid option, a time limit or a
    tiny tolerance make a case not valid, and the verdict of a case drawn inside another
    strategy's case (FisherMarket.solve draws a market) is kept."""
    import numpy as np

    from tests.fuzz.strategies import TINY_TOL, VALID

    cases = _draw(TARGETS["fisher_market"].strategy, SEED, 40)
    assert all(VALID in c for c in cases)
    for c in cases:
        clean = (c["method"] in ("auto", "fast", "conic", "cvxpy")
                 and c["kind"] in ("linear", "leontief") and c["time_limit"] is None
                 and isinstance(c["gap_tol"], float) and TINY_TOL <= c["gap_tol"] <= 1e-3
                 and all(v is None or (isinstance(v, np.ndarray) and np.all(np.isfinite(v))
                                       and np.all(v >= 0)) for v in
                         (c["utility"], c["budget"], c["supply"])))
        if c[VALID]:
            assert clean, c
    assert any(c[VALID] for c in cases) and not all(c[VALID] for c in cases)
    built = _draw(TARGETS["FisherMarket.solve"].strategy, SEED, 40)
    for c in built:
        if c[VALID]:
            assert c["solve"]["method"] != "nope" and c["solve"]["time_limit"] is None
            assert c["solve"]["backend"] in ("clarabel", None)
            assert np.all(np.isfinite(np.asarray(c["utility"], float)))
    assert any(not c[VALID] for c in built) and any(c[VALID] for c in built)
    # the case classes of issue #27 draw valid cases only
    for name in ("fifo (wide range)", "water_filling (entities)", "gavel adapter"):
        assert all(c[VALID] for c in _draw(TARGETS[name].strategy, SEED, 3)), name


# --- the independent checks accept right answers and reject wrong ones ----------------------------
def _claiming(result, **changes):
    """A stand-in for ``result`` with some fields replaced, still claiming a certified optimum."""
    import types

    fields = {k: getattr(result, k) for k in ("allocation", "prices", "certificate", "status",
                                              "x", "objective", "effective_throughput")
              if hasattr(result, k)}
    fields.update(changes)
    return types.SimpleNamespace(**fields)


@pytest.mark.parametrize("kind", ["linear", "leontief"])
def test_market_check_rejects_a_perturbed_equilibrium(kind: str) -> None:
    import numpy as np

    import fairalloc as fa
    from tests.fuzz.checks import check_market
    from tests.fuzz.core import Wrong

    U = np.array([[1.0, 2.0, 0.5], [2.0, 1.0, 1.0], [0.3, 0.4, 3.0]])
    B, S = np.array([1.0, 2.0, 1.5]), np.array([1.0, 2.0, 0.5])
    r = fa.fisher_market(U, B, S, kind=kind)
    assert r.certificate.ok
    check_market(U, B, S, kind, r)                      # the true equilibrium passes
    X = np.array(r.allocation)
    shifted = X.copy()
    shifted[0] *= 0.8                                   # buyer 0 loses 20 %, others gain
    shifted[1:] += X[0] * 0.2 / 2
    with pytest.raises(Wrong):
        check_market(U, B, S, kind, _claiming(r, allocation=shifted))
    with pytest.raises(Wrong):                          # infeasible
        check_market(U, B, S, kind, _claiming(r, allocation=X * 1.01))


def test_one_buyer_tiny_budget_partial_share_is_wrong() -> None:
    """issue #12: a one-buyer market certified while the buyer gets 20-80 % of its goods."""
    import numpy as np

    import fairalloc as fa
    from tests.fuzz.checks import check_market
    from tests.fuzz.core import Wrong

    U, B, S = np.array([[1.0, 2.0]]), np.array([1e-12]), np.array([1.0, 1.0])
    r = fa.fisher_market(np.array([[1.0, 2.0]]), [1.0], S)
    with pytest.raises(Wrong):
        check_market(U, B, S, "linear", _claiming(r, allocation=np.array([[0.5, 0.3]]),
                                                  prices=np.array(r.prices) * 1e-12))


@pytest.mark.parametrize("policy", ["max_min_fairness", "max_total_throughput",
                                    "min_makespan"])
def test_lp_check_against_linprog(policy: str) -> None:
    import numpy as np

    import fairalloc as fa
    from tests.fuzz.checks import Gavel, check_allocation
    from tests.fuzz.core import Wrong

    T = np.array([[40.0, 10.0], [12.0, 4.0], [100.0, 50.0]])
    steps = np.array([1e4, 2e3, 5e4])
    jobs, cl = fa.Jobs(T, steps_remaining=steps), fa.Cluster({"v100": 1, "k80": 1})
    r = getattr(fa, policy)(jobs, cl)
    g = Gavel(T, None, None, [1, 1], steps)
    check_allocation(g, r, policy)
    if policy == "max_min_fairness":   # Gavel §4.1: every job gets 12/11 of its 1/3 share
        np.testing.assert_allclose(r.x, [[5 / 11, 0], [5 / 11, 1 / 11], [1 / 11, 10 / 11]],
                                   atol=1e-6)
    worse = np.array(r.x) * 0.9
    with pytest.raises(Wrong):
        check_allocation(g, _claiming(r, x=worse, effective_throughput=None,
                                      objective=float(r.objective) *
                                      (0.9 if policy != "min_makespan" else 1 / 0.9)), policy)


def test_efq_reference_design_example() -> None:
    """DESIGN.md: L = 1, 2, 3 on one GPU, all at 0: GPS 3, 5, 6; EFQ 1, 3, 6."""
    import numpy as np

    from tests.fuzz.checks import gps_finish
    from tests.fuzz.targets import _efq_single, _virtual_finish

    a, L = np.zeros(3), np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(gps_finish(a, L, 1.0), [3, 5, 6])
    np.testing.assert_allclose(_efq_single(a, L, _virtual_finish(a, L)), [1, 3, 6])


def test_water_filling_check_against_the_paper_example() -> None:
    """Gavel §4.3: four identical jobs with weights 3, 1, 1, 1 on four GPUs each end on a full
    GPU. The check accepts that and rejects an allocation that leaves a job able to rise (an
    idle GPU), and one whose first level is below the level LP's optimum."""
    import numpy as np

    import fairalloc as fa
    from tests.fuzz.checks import Gavel, check_water_filling
    from tests.fuzz.core import Wrong

    T, w = np.ones((4, 1)), np.array([3.0, 1.0, 1.0, 1.0])
    r = fa.water_filling(fa.Jobs(T, weight=w), fa.Cluster({"gpu": 4}))
    g = Gavel(T, None, w, [4])
    check_water_filling(g, r)
    idle = np.array([[1.0], [1.0], [1.0], [0.5]])
    with pytest.raises(Wrong, match="can rise"):
        check_water_filling(g, _claiming(r, x=idle, objective=r.objective))
    # FIFO entity: its first job in arrival order holds the entity's weight at the first level
    ent, pol = ["a", "a", "b", "b"], {"a": "fifo"}
    r = fa.water_filling(fa.Jobs(T, weight=w, elapsed=[0.0, 5.0, 0.0, 0.0]),
                         fa.Cluster({"gpu": 4}), entities=ent, entity_policies=pol)
    g = Gavel(T, None, w, [4], elapsed=[0.0, 5.0, 0.0, 0.0])
    check_water_filling(g, r, entities=ent, entity_policies=pol)
    with pytest.raises(Wrong, match="first level|objective"):
        check_water_filling(g, _claiming(r, objective=float(r.objective) * 0.5),
                            entities=ent, entity_policies=pol)


def test_fifo_checks_follow_the_given_order_and_semantics() -> None:
    """FIFO's docstring example (a 4-GPU gang that arrived first, four 1-GPU jobs, 4 GPUs):
    arrival semantics run the gang alone, the paper's objective gives it a quarter; each check
    accepts its own answer and rejects the other's."""
    import numpy as np

    import fairalloc as fa
    from tests.fuzz.checks import Gavel, check_allocation
    from tests.fuzz.core import Wrong

    jobs = fa.Jobs([[1.0]] * 5, scale_factor=[4, 1, 1, 1, 1])
    g = Gavel(np.ones((5, 1)), [4, 1, 1, 1, 1], None, [4])
    order = np.arange(5.0)
    arrival = fa.fifo(jobs, fa.Cluster({"gpu": 4}), order=order)
    paper = fa.fifo(jobs, fa.Cluster({"gpu": 4}), order=order, semantics="objective")
    check_allocation(g, arrival, "fifo", order=order)
    check_allocation(g, paper, "fifo_objective", order=order)
    with pytest.raises(Wrong):
        check_allocation(g, _claiming(arrival, x=paper.x), "fifo", order=order)
    with pytest.raises(Wrong):
        check_allocation(g, _claiming(paper, x=arrival.x, objective=arrival.objective),
                         "fifo_objective", order=order)
    # the reversed order makes the gang last: the arrival answer is then wrong
    with pytest.raises(Wrong):
        check_allocation(g, arrival, "fifo", order=order[::-1].copy())


def test_fifo_check_keeps_earlier_jobs_at_the_allocations_values() -> None:
    """Fuzz seed 303 ('fifo (wide range)', 30 jobs x 5 types, throughputs 1e2..1e10): the
    answer is the lexicographic optimum (tests/test_fifo_exact.py), but the check kept each
    earlier job at its reference LP's value, and that LP put job 14 (worth 5.0e-6, its only
    type with room 5e-6 of its best) at -2.8e-6, inside the comparison's tolerance; the kept
    row then freed job 14's type, and job 17 (arrival rank 26) was 'achievable' at 1.0. The
    check accepts the answer, and still rejects one that hands an earlier job's type to a
    later job."""
    import json
    from pathlib import Path

    import numpy as np

    import fairalloc as fa
    from tests.fuzz.checks import Gavel, check_allocation
    from tests.fuzz.core import Wrong

    case = json.loads(Path(__file__).with_name("fifo_exact_cases.json").read_text())["fuzz"][0]
    T, sf, cap, el = (np.array(case[k]) for k in ("throughput", "scale_factor", "workers",
                                                  "elapsed"))
    r = fa.fifo(fa.Jobs(T, scale_factor=sf, elapsed=el),
                fa.Cluster({f"t{j}": int(w) for j, w in enumerate(cap)}))
    g = Gavel(T, sf, None, cap, elapsed=el)
    check_allocation(g, r, "fifo")
    # job 29 (arrival rank 11, alone at full speed on t1) gives t1 to job 17 (rank 26)
    x = np.array(r.x)
    assert x[29, 1] == 1.0 and x[17].sum() == 0.0
    x[17, 1], x[29, 1] = 1.0, 0.0
    with pytest.raises(Wrong, match=r"job 29 \(arrival rank 11\)"):
        check_allocation(g, _claiming(r, x=x, effective_throughput=None), "fifo")


def _fuzz_fifo_cases() -> list[dict]:
    import json
    from pathlib import Path

    return json.loads(Path(__file__).with_name("fifo_exact_cases.json").read_text())["fuzz"]


@pytest.mark.parametrize("case", _fuzz_fifo_cases()[1:],
                         ids=[c["name"] for c in _fuzz_fifo_cases()[1:]])
def test_fifo_check_does_not_amplify_its_lp_tolerance(case: dict) -> None:
    """Fuzz seeds 606 / 707 ('fifo (wide range)', ``--examples 20000``): nine answers, every
    stage forced, each equal to the textbook sequence (tests/test_fifo_exact.py), that the
    check called wrong. Its kept rows ``v_j(y) >= v_j(x)`` are met to linprog's tolerance,
    and the throughput ratios amplify that along a chain of trades (seed 606, job 27 at
    'achievable' 1.0: job 20 gives up 2e-9 of t4, worth 1 to job 13, which frees 6.3e-5 of
    t5, worth 1.6e4 times its t2 to job 19, which frees all of t2). The check now confirms a
    gain by the face-keeping sequence; it still rejects an answer that drops the first job."""
    import numpy as np

    import fairalloc as fa
    from tests.fuzz.checks import Gavel, arrival_order, check_allocation
    from tests.fuzz.core import Skip, Wrong

    T, sf, cap = (np.array(case[k]) for k in ("throughput", "scale_factor", "workers"))
    order = case.get("order")
    el = None if order is not None else np.array(case["elapsed"])
    r = fa.fifo(fa.Jobs(T, scale_factor=sf, **({} if el is None else {"elapsed": el})),
                fa.Cluster({f"t{j}": int(w) for j, w in enumerate(cap)}),
                **({} if order is None else {"order": order}), **case["kw"])
    g = Gavel(T, sf, None, cap, elapsed=el)
    try:
        check_allocation(g, r, "fifo", order=order)
    except Skip:  # (scipy 1.13, the declared minimum: its linprog fails a reference LP here)
        pytest.skip("the check's reference LP failed with this scipy: it decides nothing")
    # the first arrival that runs loses its time: the check names it
    x = np.array(r.x)
    arrival = arrival_order(g, order)
    rank = int(np.flatnonzero(x[arrival].sum(axis=1) > 0)[0])
    x[arrival[rank]] = 0.0
    with pytest.raises(Wrong, match=rf"job {int(arrival[rank])} \(arrival rank {rank}\)"):
        check_allocation(g, _claiming(r, x=x, effective_throughput=None), "fifo", order=order)


@pytest.mark.parametrize("kind", ["linear", "leontief"])
def test_capped_market_check_rejects_a_buyer_held_below_its_cap(kind: str) -> None:
    """A composed market whose cap binds: the right answer passes; a point that exceeds the
    cap, or that leaves the capped buyer short of it while nobody else wants the good, fails
    (the class of FisherMarket results issue #27 found certified)."""
    import numpy as np

    import fairalloc as fa
    from tests.fuzz.checks import check_capped_market
    from tests.fuzz.core import Wrong

    U, B, S = np.array([[1.0, 2.0], [2.0, 0.0]]), np.array([1.0, 2.0]), np.array([1.0, 3.0])
    caps = [(0, 1, 1e-3)]
    m = fa.FisherMarket(U, B, S, kind=kind)
    m.add_constraint(m.x[0, 1] <= 1e-3)
    r = m.solve()
    check_capped_market(U, B, S, kind, caps, r)
    X = np.array(r.allocation)
    over = X.copy()
    over[0, 1] = 2e-3
    with pytest.raises(Wrong, match="added constraint"):
        check_capped_market(U, B, S, kind, caps, _claiming(r, allocation=over))
    short = X.copy()
    short[0] *= 0.5  # buyer 0 gets half of what it can have; nobody else takes it
    with pytest.raises(Wrong, match="capped market"):
        check_capped_market(U, B, S, kind, caps, _claiming(r, allocation=short))


def test_gavel_job_ids_behave_like_gavels() -> None:
    from tests.fuzz.wide import JobIdPair

    a, b = JobIdPair(3), JobIdPair(3, None)
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert not a.is_pair() and JobIdPair(3, 4).is_pair()
    assert JobIdPair(3, 4).singletons() == (JobIdPair(3), JobIdPair(4))
    assert sorted([JobIdPair(5), JobIdPair(2)]) == [JobIdPair(2), JobIdPair(5)]
    assert a != 3
    with pytest.raises(TypeError):  # no order against other types: the FIFO adapter then
        sorted([JobIdPair(5), 2])    # keeps the given order
