"""fairalloc measured where a scheduler calls it: Gavel's jobs, Gavel's dicts, one run (#28).

Jobs are drawn from Gavel's measured throughputs (``../shared/data/gavel/
simulation_throughputs.json``, or ``--data DIR``) the way Gavel's ``generate_job`` draws them:
scale factor 1/2/4/8 with probability .7/.1/.15/.05; model uniform over the 26 templates,
re-drawn until it supports the scale factor; priority 5 with probability .2, else 1; duration
``60 * 10**U(1.5, 3)`` s with probability .8, else ``60 * 10**U(3, 4)`` s; total steps =
duration x the V100 throughput. Worker types v100, p100, k80 (the ``*_unconsolidated``
throughputs are not read: no adapter policy is placement-sensitive); the cluster has N/4
workers of each type (at least 8, so every gang fits). A single call sees the jobs mid-run:
``times_since_start`` = 0-19 whole 6-minute rounds, ``num_steps_remaining`` = U(0.1, 1) of the
total. Water-filling: ``clip(N / 40, 5, 50)`` entities (Gavel's ``entity_to_job_mapping`` /
``entity_weights``, weights 1-3), jobs uniform over them. Packing: pair keys (Gavel's
``JobIdPair(a, b)``, rates ``[rate of a, rate of b]`` from the file's pair entries, which exist
for single-GPU jobs only) for every pair of single-GPU jobs that fits on some type, or a uniform
sample of ``--max-pairs`` of them (all pairs grow as N**2: 1 M at 2,048 jobs). Seeded; the
same ``--seed`` draws the same jobs.

**(a) one cold call through the Gavel adapter** (``fairalloc.integrations.gavel.policy(name)``,
a new object per call, dicts keyed by ``JobIdPair`` in and out; the timed call includes both
conversions) for every policy the adapter offers, side by side with, in the same process:

* **bare minimum**: the dicts read once into arrays, exact symmetry classes
  (``fairalloc._symmetry.exact_classes`` on what the program reads) and HiGHS (interior point)
  on the class-reduced LP of each stage fairalloc solves (max-min, makespan, FTF: level then
  work-conserving stage; FTF: the two LPs at the optimal rho, known in advance -- a floor, not
  an algorithm; water-filling: the LP sequence over classes; FIFO: the arrival-order greedy;
  packing: the whole LP once). ``fairalloc / bare`` is fairalloc's total over that floor.
* **cvxpy+ECOS / cvxpy+Clarabel**: Gavel-style vectorised cvxpy programs (``x`` an (n, 3)
  variable, ``cp.multiply`` rows; FTF the SOCP ``min max(t/D + steps/D inv_pos(tp))``;
  water-filling and FIFO the sequence of LPs those policies are) with the solver named.
* **HiGHS whole LP**: highspy (interior point) on the same stages job by job (FTF: a
  Dinkelbach sequence of LPs).
* **POP k=4 / k=16**: jobs split at random into k sub-problems with ``floor(workers / k)`` of each
  type, each solved by HiGHS, merged; the time is the sum (serial) and ``loss`` the merged
  allocation's objective against the exact optimum (inf: some job got nothing under FTF).

``rel. diff`` is the largest relative difference of the compared values (the policy objective
and, for two-stage policies, the total normalised throughput; FIFO: every job's normalised
throughput; water-filling: every job's level) from fairalloc's, flagged ``!`` above
``AGREE_TOL``. A reference over ``--ref-seconds`` is stopped (between its solver calls) and
skipped at larger sizes.

**(b) a trace through ``RoundPolicy``**: ``--rounds`` rounds (at most ``--trace-seconds`` per
policy and size), about 1 % of the jobs leaving and as many arriving each round, every job
6 minutes older and a quarter round of V100 steps further; each round solved cold
(``fa.solve_round``) and warm (one ``fa.RoundPolicy``); p50/p90 wall and CPU (thread) time per
round, and rounds whose certificate failed. Packing is not a ``RoundPolicy`` policy.

Run::

    python benchmarks/gavel_inputs.py                     # fast subset: 100 / 256 jobs
    python benchmarks/gavel_inputs.py --jobs 100 256 2048 --rounds 500
    python benchmarks/gavel_inputs.py --jobs 8192 --policy max-min ftf
    python benchmarks/gavel_inputs.py --jobs 100 256 2048 8192 32768 --rounds 500 \\
        --ref-seconds 600 --trace-seconds 600               # everything (hours)

ECOS: ``pip install "fairalloc[bench]"``; without it the ECOS rows say "not installed".

MEASURED: see the end of this docstring (filled in by the run it names).
"""

from __future__ import annotations

import argparse
import ast
import json
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for _p in (ROOT, Path(__file__).resolve().parent):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from gavel_references import cvxpy_policy as cvxpy_program  # noqa: E402
from gavel_references import (  # noqa: E402  (next to this file)
    derive,
    fifo_greedy,
    fifo_lps,
    lp_policy,
    packing_lp,
    rel_diff,
    take,
    values,
    water_filling_lps,
)

# --------------------------------------------------------------------------------------------
# constants
# --------------------------------------------------------------------------------------------
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "gavel"
DATA_FILE = "simulation_throughputs.json"
SEED = 2028
TYPES = ("v100", "p100", "k80")
SF_VALUES = (1, 2, 4, 8)
SF_P = (0.7, 0.1, 0.15, 0.05)  # Gavel's generate_job
PRIORITY_HIGH, PRIORITY_P = 5.0, 0.2  # priority 5 w.p. 0.2, else 1
SHORT_P = 0.8  # duration 60 * 10**U(1.5, 3) s w.p. 0.8, else 60 * 10**U(3, 4) s
SHORT_EXP, LONG_EXP = (1.5, 3.0), (3.0, 4.0)
ROUND_S = 360.0  # Gavel's round (s)
MIDRUN_ROUNDS = 20  # a single call's jobs have run 0-19 rounds
MIDRUN_LEFT = (0.1, 1.0)  # ... and have this fraction of their steps left
PROGRESS = 0.25  # trace: a job advances PROGRESS * ROUND_S seconds of V100 steps per round
MIN_LEFT = 0.01  # trace: steps left never fall below this fraction of the total
CHURN = 0.01  # trace: fraction of the jobs leaving (and arriving) per round
MIN_WORKERS = 8  # workers per type at least the largest gang
JOBS_PER_ENTITY, MIN_ENTITIES, MAX_ENTITIES = 40, 5, 50
ENTITY_WEIGHTS = (1.0, 2.0, 3.0)
MAX_PAIRS = 10_000  # packing: pair keys at most (a uniform sample of all fitting pairs)
POP_K = (4, 16)
AGREE_TOL = 1e-4  # ACCURACY: relative difference flagged "!" (two exact solvers, one program)
#: PERFORMANCE: the bare minimum solves up to this many classes by HiGHS's default (simplex),
#: more by its interior point (8,192 unreduced FTF rows: simplex 4.4 s, interior point 1.4 s)
BARE_SIMPLEX_MAX = 1000
REPEAT_BELOW = 1.0  # PERFORMANCE: a solver faster than this (s) is timed 3x (median)
REPEATS = 3
DEFAULT_JOBS = (100, 256)
DEFAULT_ROUNDS = 100
DEFAULT_REF_SECONDS = 60.0  # PERFORMANCE: per reference and size
DEFAULT_TRACE_SECONDS = 30.0  # PERFORMANCE: per policy, size and mode (cold / warm)
WARM_N = 32  # every solver's first (untimed) call
POLICIES = {  # our label -> (Gavel adapter name, RoundPolicy name or None)
    "max-min": ("max_min_fairness_perf", "max_min_fairness"),
    "ftf": ("finish_time_fairness_perf", "finish_time_fairness"),
    "makespan": ("min_total_duration_perf", "min_makespan"),
    "max-throughput": ("max_sum_throughput_perf", "max_total_throughput"),
    "fifo": ("fifo_perf", "fifo"),
    "water-filling": ("max_min_fairness_water_filling_perf", "water_filling"),
    "packing": ("max_min_fairness_packing", None),
}
MINIMISE = ("ftf", "makespan")
CVXPY = {"cvxpy+ECOS": "ECOS", "cvxpy+Clarabel": "CLARABEL"}


class JobIdPair:
    """A job id as Gavel keys its dicts: one job (``b is None``) or a space-sharing pair."""

    __slots__ = ("_a", "_b")

    def __init__(self, a: int, b: int | None = None) -> None:
        self._a, self._b = a, b

    def __hash__(self) -> int:
        return hash((self._a, self._b))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JobIdPair) and (self._a, self._b) == (other._a, other._b)

    def __lt__(self, other: JobIdPair) -> bool:  # arrival order (Gavel's ids increase)
        return (self._a, -1 if self._b is None else self._b) < (
            other._a, -1 if other._b is None else other._b)

    def is_pair(self) -> bool:
        return self._b is not None

    def singletons(self) -> tuple[JobIdPair, JobIdPair]:
        assert self._b is not None
        return JobIdPair(self._a), JobIdPair(self._b)

    def __repr__(self) -> str:
        return f"{self._a}" if self._b is None else f"({self._a}, {self._b})"


# --------------------------------------------------------------------------------------------
# Gavel's jobs
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Table:
    """The throughput file as arrays: ``keys`` (model, sf); ``T`` (K, 3) alone; ``pair``
    (K1, K1, 3, 2) for the single-GPU keys (``single[key]``: its row there, or -1)."""

    keys: tuple[tuple[str, int], ...]
    T: np.ndarray
    single: np.ndarray
    pair: np.ndarray
    models: tuple[str, ...]


def load_table(path: Path) -> Table:
    raw = json.loads(path.read_text())
    keys = tuple(sorted(ast.literal_eval(k) for k in raw["v100"]))
    T = np.array([[raw[t].get(str(key), {}).get("null", 0.0) for t in TYPES] for key in keys])
    ones = [key for key in keys if key[1] == 1]
    single = np.array([ones.index(key) if key in ones else -1 for key in keys])
    pair = np.zeros((len(ones), len(ones), len(TYPES), 2))
    for a, ka in enumerate(ones):
        for ti, t in enumerate(TYPES):
            row = raw[t].get(str(ka), {})
            for b, kb in enumerate(ones):
                v = row.get(str(kb))
                if isinstance(v, list) and len(v) == 2:
                    pair[a, b, ti] = v
    return Table(keys, T, single, pair, tuple(sorted({m for m, _ in keys})))


@dataclass(frozen=True)
class JobSet:
    """Active jobs (arrays in job order) and the cluster."""

    ids: np.ndarray
    key: np.ndarray  # row of Table.keys
    T: np.ndarray
    sf: np.ndarray
    w: np.ndarray
    total: np.ndarray  # total steps
    steps: np.ndarray  # steps remaining
    elapsed: np.ndarray
    entity: np.ndarray
    cap: np.ndarray
    entity_w: np.ndarray


def draw(table: Table, n: int, rng: np.random.Generator, first_id: int = 0,
         num_entities: int = MIN_ENTITIES) -> dict[str, np.ndarray]:
    """``n`` fresh jobs as Gavel's generate_job draws them."""
    index = {key: i for i, key in enumerate(table.keys)}
    sf = rng.choice(SF_VALUES, n, p=SF_P)
    model = rng.integers(0, len(table.models), n)
    ok = np.array([(table.models[m], s) in index for m, s in zip(model, sf)], dtype=bool)
    while not ok.all():  # re-drawn until the template supports the scale factor
        bad = np.flatnonzero(~ok)
        model[bad] = rng.integers(0, len(table.models), bad.size)
        ok[bad] = [(table.models[m], s) in index for m, s in zip(model[bad], sf[bad])]
    key = np.array([index[(table.models[m], s)] for m, s in zip(model, sf)], dtype=int)
    w = np.where(rng.random(n) < PRIORITY_P, PRIORITY_HIGH, 1.0)
    lo, hi = np.where(rng.random(n) < SHORT_P, SHORT_EXP[0], LONG_EXP[0]), None
    hi = np.where(lo == SHORT_EXP[0], SHORT_EXP[1], LONG_EXP[1])
    duration = 60.0 * 10.0 ** rng.uniform(lo, hi)
    T = table.T[key]
    return {"ids": np.arange(first_id, first_id + n), "key": key, "T": T,
            "sf": sf.astype(float), "w": w, "total": duration * T[:, 0],
            "entity": rng.integers(0, num_entities, n)}


def job_set(table: Table, n: int, seed: int) -> JobSet:
    """``n`` jobs mid-run on a cluster of N/4 workers of each type."""
    rng = np.random.default_rng(seed)
    ne = int(np.clip(n // JOBS_PER_ENTITY, MIN_ENTITIES, MAX_ENTITIES))
    d = draw(table, n, rng, 0, ne)
    steps = d["total"] * rng.uniform(*MIDRUN_LEFT, n)
    elapsed = ROUND_S * rng.integers(0, MIDRUN_ROUNDS, n)
    cap = np.full(len(TYPES), float(max(n // 4, MIN_WORKERS)))
    ew = rng.choice(ENTITY_WEIGHTS, ne)
    return JobSet(steps=steps, elapsed=elapsed.astype(float), cap=cap, entity_w=ew, **d)


def pairs_of(table: Table, js: JobSet, max_pairs: int, seed: int
             ) -> tuple[np.ndarray, np.ndarray]:
    """(members (P, 2), rates (P, 3, 2)) of single-GPU job pairs that fit on some type."""
    rng = np.random.default_rng(seed + 1)
    one = np.flatnonzero(table.single[js.key] >= 0)
    a, b = np.triu_indices(one.size, 1)
    m = np.stack([one[a], one[b]], axis=1)
    rates = table.pair[table.single[js.key[m[:, 0]]], table.single[js.key[m[:, 1]]]]
    fits = (rates > 0).all(axis=2).any(axis=1)
    m, rates = m[fits], rates[fits]
    if m.shape[0] > max_pairs:
        pick = np.sort(rng.choice(m.shape[0], max_pairs, replace=False))
        m, rates = m[pick], rates[pick]
    return m, rates


def gavel_args(js: JobSet, pairs: tuple[np.ndarray, np.ndarray] | None = None
               ) -> dict[str, Any]:
    """Gavel's get_allocation arguments (dicts keyed by JobIdPair) for these jobs."""
    ids = [JobIdPair(int(i)) for i in js.ids]
    tp: dict[Any, Any] = {j: dict(zip(TYPES, row)) for j, row in zip(ids, js.T.tolist())}
    if pairs is not None:
        mem, rates = pairs
        for (a, b), r in zip(mem.tolist(), rates.tolist()):
            tp[JobIdPair(int(js.ids[a]), int(js.ids[b]))] = dict(zip(TYPES, r))
    ents: dict[str, list[Any]] = {f"entity{e}": [] for e in range(js.entity_w.size)}
    for j, e in zip(ids, js.entity.tolist()):
        ents[f"entity{e}"].append(j)
    return {"ids": ids, "tp": tp, "sf": dict(zip(ids, js.sf.tolist())),
            "w": dict(zip(ids, js.w.tolist())), "t": dict(zip(ids, js.elapsed.tolist())),
            "steps": dict(zip(ids, js.steps.tolist())),
            "spec": dict(zip(TYPES, js.cap.astype(int).tolist())),
            "ew": {f"entity{e}": float(v) for e, v in enumerate(js.entity_w)},
            "e2j": {e: js_ for e, js_ in ents.items() if js_}}


def reference(policy: str, name: str, js: JobSet, pairs: Any) -> dict[str, Any]:
    """One reference's solution (the reference's own data preparation included)."""
    d = derive(js.T, js.sf, js.w, js.steps, js.elapsed, js.cap)
    solver = "highs" if name == "HiGHS whole LP" else CVXPY.get(name, "")
    if name == "Gavel greedy":
        return fifo_greedy(d)
    if policy == "fifo":  # (vertex solutions: the kept values are met exactly)
        return fifo_lps(d, "highs-strict" if solver == "highs" else solver)
    if policy == "water-filling":
        return water_filling_lps(d, js.entity, js.entity_w, None, solver)
    if solver == "highs":
        return packing_lp(d, pairs) if policy == "packing" else lp_policy(policy, d)
    return cvxpy_program(policy, d, solver, pairs)


def pop(policy: str, js: JobSet, pairs: Any, k: int, seed: int) -> dict[str, Any]:
    """POP: jobs split at random into ``k`` sub-problems with floor(workers / k) each."""
    rng = np.random.default_rng(seed + k)
    n = js.T.shape[0]
    group = np.empty(n, dtype=int)
    group[rng.permutation(n)] = np.arange(n) % k
    cap = np.floor(js.cap / k)
    x = np.zeros_like(js.T)
    px = None if pairs is None else np.zeros((pairs[0].shape[0], len(TYPES)))
    for g in range(k if cap.any() else 0):  # (no worker in a sub-cluster: nobody runs)
        rows = np.flatnonzero(group == g)
        sub = derive(js.T[rows], js.sf[rows], js.w[rows], js.steps[rows], js.elapsed[rows],
                     cap)
        ok = sub["allowed"].any(axis=1)  # jobs whose gang fits the sub-cluster
        if not ok.any():
            continue
        sub = take(sub, np.flatnonzero(ok))
        rows = rows[ok]
        if policy == "packing":
            pos = np.full(n, -1)
            pos[rows] = np.arange(rows.size)
            keep = (pos[pairs[0]] >= 0).all(axis=1)
            sol = packing_lp(sub, (pos[pairs[0][keep]], pairs[1][keep]))
            px[keep] = sol["px"]
        else:
            sol = lp_policy(policy, sub)
        x[rows] = sol["x"]
    return {"x": x, "px": px}


# --------------------------------------------------------------------------------------------
# fairalloc: one cold adapter call; the bare minimum
# --------------------------------------------------------------------------------------------
def _cert_text(r: Any) -> tuple[str, bool]:
    certs = tuple(getattr(getattr(r, "reduced", None), "stage_certificates", ())) or (
        r.certificate,)
    ok = all(c.ok for c in certs)
    return (f"{'ok' if ok else 'NOT OK'}, gap {max(c.relative_gap for c in certs):.0e}, "
            f"res {max(c.primal_residual for c in certs):.0e}"), ok


def adapter_call(policy: str, g: dict[str, Any]) -> tuple[Callable[[], Any], Any]:
    """(the timed call, the policy object) of one cold Gavel-adapter call."""
    from fairalloc.integrations import gavel

    p = gavel.policy(POLICIES[policy][0])
    tp = g["tp_pairs"] if policy == "packing" else g["tp"]
    calls: dict[str, Callable[[], Any]] = {
        "max-min": lambda: p.get_allocation(tp, g["sf"], g["w"], g["spec"]),
        "ftf": lambda: p.get_allocation(tp, g["sf"], g["w"], g["t"], g["steps"], g["spec"]),
        "makespan": lambda: p.get_allocation(tp, g["sf"], g["steps"], g["spec"]),
        "max-throughput": lambda: p.get_allocation(tp, g["sf"], g["spec"]),
        "fifo": lambda: p.get_allocation(tp, g["sf"], g["spec"]),
        "water-filling": lambda: p.get_allocation(
            tp, g["sf"], g["w"], g["spec"], entity_weights=g["ew"],
            entity_to_job_mapping=g["e2j"]),
        "packing": lambda: p.get_allocation(tp, g["sf"], g["w"], g["spec"]),
    }
    return calls[policy], p


def fairalloc_solution(policy: str, out: Any, p: Any, g: dict[str, Any], pairs: Any
                       ) -> tuple[dict[str, Any], str, bool]:
    """(solution arrays, certificate text, ok) read off an adapter call's output."""
    x = np.array([[out[j][t] for t in TYPES] for j in g["ids"]])
    sol: dict[str, Any] = {"x": x}
    text, ok = _cert_text(p.last_result)
    if policy == "water-filling":
        sol["floors"] = np.asarray(p.last_result.reduced.level_floors)
    if policy == "packing" and pairs is not None and hasattr(p, "packing_result"):
        keys = [k for k in out if k.is_pair()]
        sol["px"] = np.array([[out[k][t] for t in TYPES] for k in keys]).reshape(-1, len(TYPES))
        c = p.packing_result.certificate
        ok = ok and c.ok
        text = (f"{'ok' if ok else 'NOT OK'}, gap {c.relative_gap:.0e}, "
                f"res {c.primal_residual:.0e} (+ pairs)")
    return sol, text, ok


def bare(policy: str, g: dict[str, Any], js: JobSet, pairs: Any) -> dict[str, Any]:
    """The dicts read once into arrays, exact classes, HiGHS on the reduced stage LPs."""
    from fairalloc._symmetry import exact_classes

    ids = g["ids"]
    rows = list(map(g["tp"].__getitem__, ids))
    n = len(ids)
    T = np.fromiter((r[t] for r in rows for t in TYPES), float, n * len(TYPES)).reshape(n, -1)
    get = lambda name: np.fromiter(map(g[name].__getitem__, ids), float, n)  # noqa: E731
    sf, w, steps, t = get("sf"), get("w"), get("steps"), get("t")
    cap = np.fromiter(g["spec"].values(), float, len(TYPES))
    d = derive(T, sf, w, steps, t, cap)
    if policy == "fifo":
        return fifo_greedy(d)
    if policy == "packing":
        return packing_lp(d, pairs)
    if policy == "water-filling":
        e_of = {j: e for e, members in g["e2j"].items() for j in members}
        ent_names = list(g["ew"])
        pos = {e: i for i, e in enumerate(ent_names)}
        entity = np.fromiter((pos[e_of[j]] for j in ids), int, n)
        ew = np.fromiter(g["ew"].values(), float, len(ent_names))
        cl = exact_classes(T, sf, w, entity)
        method = "highs-choose" if cl.num_classes <= BARE_SIMPLEX_MAX else "highs"
        sol = water_filling_lps(take(d, cl.representative), entity[cl.representative], ew,
                                cl.counts, method)
        return {"floors": cl.expand(sol["floors"])}
    key = {"max-min": (T, sf, w), "makespan": (T, sf, steps), "max-throughput": (T, sf),
           "ftf": (T, sf, steps, t)}[policy]
    cl = exact_classes(*key)
    method = "highs-choose" if cl.num_classes <= BARE_SIMPLEX_MAX else "highs"
    sol = lp_policy(policy, take(d, cl.representative), cl.counts, method, R_known=g.get("R"))
    return {"x": cl.expand(sol["x"])}


# --------------------------------------------------------------------------------------------
# timing
# --------------------------------------------------------------------------------------------
class Budget(Exception):
    """A reference ran past its time budget."""


@contextmanager
def time_budget(seconds: float) -> Iterator[None]:
    """Raise `Budget` after ``seconds`` (checked between the solver's calls: a single C call
    is not interrupted)."""
    def stop(signum: int, frame: Any) -> None:
        raise Budget

    if not hasattr(signal, "SIGALRM"):
        yield
        return
    old = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def timed(fn: Callable[[], Any], budget: float | None = None) -> tuple[Any, float, float]:
    """(result, wall s, CPU s): median of REPEATS when a call is under REPEAT_BELOW s."""
    runs = []
    out = None
    for _ in range(REPEATS):
        t0, c0 = time.perf_counter(), time.process_time()
        if budget is None:
            out = fn()
        else:
            with time_budget(budget):
                out = fn()
        runs.append((time.perf_counter() - t0, time.process_time() - c0))
        if runs[0][0] >= REPEAT_BELOW:
            break
    wall, cpu = sorted(runs)[len(runs) // 2]
    return out, wall, cpu


# --------------------------------------------------------------------------------------------
# (a) one size: fairalloc, the bare minimum and the references side by side
# --------------------------------------------------------------------------------------------
BARE_NOTE = {"ftf": " (at the known optimal rho)", "water-filling": " (LP sequence)",
             "packing": " (whole LP)", "fifo": " (greedy)"}


def references_for(policy: str) -> tuple[str, ...]:
    if policy == "fifo":
        return ("Gavel greedy", "HiGHS whole LP", "cvxpy+Clarabel", "cvxpy+ECOS")
    refs = ("cvxpy+ECOS", "cvxpy+Clarabel", "HiGHS whole LP")
    return refs if policy == "water-filling" else (*refs, *(f"POP k={k}" for k in POP_K))


def _fmt(wall: float, cpu: float) -> str:
    return f"{wall:.3f} ({cpu:.3f})"


@dataclass
class Context:
    table: Table
    seed: int
    max_pairs: int
    ref_seconds: float
    over: dict[tuple[str, str], str]  # (policy, reference) -> why it is skipped from now on
    ecos: bool


def instance(ctx: Context, n: int) -> tuple[JobSet, Any, dict[str, Any], dict[str, Any]]:
    js = job_set(ctx.table, n, ctx.seed)
    pairs = pairs_of(ctx.table, js, ctx.max_pairs, ctx.seed)
    g = gavel_args(js)
    g["tp_pairs"] = gavel_args(js, pairs)["tp"]
    return js, pairs, g, derive(js.T, js.sf, js.w, js.steps, js.elapsed, js.cap)


def run_size(ctx: Context, n: int, policies: tuple[str, ...], warm_up: bool = False
             ) -> tuple[list[list[str]], list[list[str]], int]:
    """Rows of the per-solver table, of the summary table, and the uncertified count."""
    js, pairs, g, d = instance(ctx, n)
    rows: list[list[str]] = []
    summary: list[list[str]] = []
    bad = 0
    for policy in policies:
        pp = pairs if policy == "packing" else None

        def call(policy: str = policy) -> tuple[Any, Any]:
            fn, p = adapter_call(policy, g)
            return fn(), p

        (out, p), wall, cpu = timed(call)
        sol, cert, ok = fairalloc_solution(policy, out, p, g, pp)
        bad += not ok
        ours = values(policy, d, sol, pp)
        g["R"] = float(p.last_result.objective) if policy == "ftf" else None
        vec = policy in ("fifo", "water-filling")
        rows.append([policy, "fairalloc (Gavel adapter, cold)", _fmt(wall, cpu), "", "", cert])
        try:
            b, bwall, bcpu = timed(lambda policy=policy, pp=pp: bare(policy, g, js, pp),
                                   ctx.ref_seconds)
        except (Budget, Exception) as exc:  # (past the budget, or HiGHS failed: say so)
            bwall = bcpu = float("nan")
            btext = f"> {ctx.ref_seconds:.0f}" if isinstance(exc, Budget) else "error"
            rows.append([policy, "bare minimum", btext, "", "", "stopped" if isinstance(
                exc, Budget) else str(exc).splitlines()[0][:60]])
        else:
            brel = rel_diff(ours, values(policy, d, b, pp), vec)
            rows.append([policy, "bare minimum", _fmt(bwall, bcpu), f"{bwall / wall:.2f}x",
                         f"{brel:.0e}" + (" !" if not brel <= AGREE_TOL else ""),
                         f"fairalloc / bare = {wall / bwall:.1f}x" + BARE_NOTE.get(policy, "")])
        best: tuple[float, str] | None = None
        worst: float | None = None
        exact = None
        for name in references_for(policy):
            if warm_up and name.startswith("POP"):
                continue
            why = ctx.over.get((policy, name))
            if name == "cvxpy+ECOS" and not ctx.ecos:
                why = "not installed (pip install 'fairalloc[bench]')"
            if why:
                rows.append([policy, name, "-", "", "", why])
                continue
            try:
                if name.startswith("POP"):
                    k = int(name.split("=")[1])
                    ref, rw, rc = timed(lambda k=k, policy=policy, pp=pp: pop(
                        policy, js, pp, k, ctx.seed), ctx.ref_seconds)
                else:
                    ref, rw, rc = timed(lambda name=name, policy=policy, pp=pp: reference(
                        policy, name, js, pp), ctx.ref_seconds)
            except Budget:
                ctx.over[(policy, name)] = f"> {ctx.ref_seconds:.0f} s at {n:,} jobs"
                rows.append([policy, name, f"> {ctx.ref_seconds:.0f}",
                             f"> {ctx.ref_seconds / wall:.0f}x", "", "stopped"])
                continue
            except Exception as exc:  # a reference's solver failed: say so, go on
                rows.append([policy, name, "error", "", "", str(exc).splitlines()[0][:60]])
                continue
            got = values(policy, d, ref, pp)
            ratio = f"{rw / wall:.2f}x"
            if name.startswith("POP"):
                opt = exact if exact is not None else ours
                loss = ((got[0] - opt[0]) if policy in MINIMISE else (opt[0] - got[0])) / abs(
                    opt[0])
                note = f"loss {loss:.1%}" if np.isfinite(loss) else "loss inf (a job got 0)"
                rows.append([policy, name, _fmt(rw, rc), ratio, "", note])
                continue
            rel = rel_diff(ours, got, vec)
            worst = rel if worst is None else max(worst, rel)
            if name == "HiGHS whole LP":
                exact = got
            if best is None or rw < best[0]:
                best = (rw, name)
            rows.append([policy, name, _fmt(rw, rc), ratio,
                         f"{rel:.0e}" + (" !" if not rel <= AGREE_TOL else ""), ""])
        summary.append([policy, f"{n:,}", f"{wall:.3f}",
                        f"{bwall:.3f}" if bwall == bwall else btext,
                        f"{wall / bwall:.1f}x" if bwall == bwall else "",
                        "-" if best is None else f"{best[1]} {best[0]:.3f}",
                        "-" if best is None else f"{best[0] / wall:.2f}x",
                        "-" if worst is None else f"{worst:.0e}" + (
                            " !" if not worst <= AGREE_TOL else ""), cert])
    return rows, summary, bad


# --------------------------------------------------------------------------------------------
# (b) a trace through RoundPolicy, warm and cold
# --------------------------------------------------------------------------------------------
def trace(ctx: Context, policy: str, n: int, rounds: int, budget: float) -> list[str]:
    import fairalloc as fa

    name = POLICIES[policy][1]
    assert name is not None
    rng = np.random.default_rng(ctx.seed + 7)
    js = job_set(ctx.table, n, ctx.seed)
    ne = js.entity_w.size
    st = {f: getattr(js, f) for f in ("ids", "key", "T", "sf", "w", "total", "steps",
                                      "elapsed", "entity")}
    settings: dict[str, Any] = {}
    if policy == "water-filling":
        settings["entity_weights"] = {f"entity{e}": float(v) for e, v in enumerate(js.entity_w)}
    warm = fa.RoundPolicy(name, **settings)
    spec = dict(zip(TYPES, js.cap.astype(int).tolist()))
    churn = max(1, round(n * CHURN))
    nxt = n
    times: dict[str, list[tuple[float, float]]] = {"cold": [], "warm": []}
    bad = 0
    for r in range(rounds):
        if r:
            keep = np.ones(st["ids"].size, dtype=bool)
            keep[rng.choice(keep.size, churn, replace=False)] = False
            new = draw(ctx.table, churn, rng, nxt, ne)
            new["steps"], new["elapsed"] = new["total"].copy(), np.zeros(churn)
            st = {f: np.concatenate([v[keep], new[f]]) for f, v in st.items()}
            nxt += churn
        ids = [JobIdPair(int(i)) for i in st["ids"]]
        tp = {j: dict(zip(TYPES, row)) for j, row in zip(ids, st["T"].tolist())}
        per = {"scale_factor": dict(zip(ids, st["sf"].tolist()))}
        if policy in ("max-min", "water-filling"):
            per["weight"] = dict(zip(ids, st["w"].tolist()))
        if policy in ("ftf", "makespan"):
            per["steps_remaining"] = dict(zip(ids, st["steps"].tolist()))
        if policy == "ftf":
            per["elapsed"] = dict(zip(ids, st["elapsed"].tolist()))
        if policy == "fifo":
            per["order"] = dict(zip(ids, st["ids"].astype(float).tolist()))
        if policy == "water-filling":
            per["entities"] = {j: f"entity{e}" for j, e in zip(ids, st["entity"].tolist())}
        t0, c0 = time.perf_counter(), time.thread_time()
        rc = fa.solve_round(name, tp, spec, **per, **settings)
        t1, c1 = time.perf_counter(), time.thread_time()
        rw = warm.allocate(tp, spec, **per)
        t2, c2 = time.perf_counter(), time.thread_time()
        times["cold"].append((t1 - t0, c1 - c0))
        times["warm"].append((t2 - t1, c2 - c1))
        bad += (not _cert_text(rc)[1]) + (not _cert_text(rw)[1])
        st["elapsed"] = st["elapsed"] + ROUND_S
        st["steps"] = np.maximum(st["steps"] - PROGRESS * ROUND_S * st["T"][:, 0],
                                 MIN_LEFT * st["total"])
        if max(sum(t for t, _ in v) for v in times.values()) > budget:
            break
    cells = []
    for mode in ("warm", "cold"):
        a = np.array(times[mode]) * 1e3
        cells += [f"{np.percentile(a[:, i], q):.1f}" for i in (0, 1) for q in (50, 90)]
    return [policy, f"{n:,}", str(len(times["cold"])), *cells, str(bad)]


# --------------------------------------------------------------------------------------------
# output
# --------------------------------------------------------------------------------------------
def print_table(title: str, header: list[str], rows: list[list[str]], plain: bool) -> None:
    if not plain:
        try:
            from rich.console import Console
            from rich.table import Table as RichTable
        except ImportError:
            plain = True
    if not plain:
        t = RichTable(title=title)
        for i, h in enumerate(header):
            t.add_column(h, justify="left" if i < 2 else "right")
        for r in rows:
            t.add_row(*r)
        Console(width=220).print(t)
        return
    print(f"\n{title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        print("| " + " | ".join(r) + " |", flush=True)


SOLVE_HEADER = ["policy", "solver", "wall s (cpu s)", "ref / fairalloc", "rel. diff",
                "certificate / note"]
SUMMARY_HEADER = ["policy", "jobs", "fairalloc s", "bare s", "fairalloc / bare",
                  "fastest exact reference (s)", "ref / fairalloc", "max rel. diff",
                  "fairalloc certificate"]
TRACE_HEADER = ["policy", "jobs", "rounds", "warm p50", "warm p90", "warm cpu p50",
                "warm cpu p90", "cold p50", "cold p90", "cold cpu p50", "cold cpu p90",
                "uncertified"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA,
                    help=f"folder of Gavel's {DATA_FILE} (default ../shared/data/gavel)")
    ap.add_argument("--jobs", type=int, nargs="+", default=list(DEFAULT_JOBS))
    ap.add_argument("--policy", nargs="+", choices=list(POLICIES), default=list(POLICIES))
    ap.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS, help="trace rounds")
    ap.add_argument("--trace-seconds", type=float, default=DEFAULT_TRACE_SECONDS,
                    help="per policy, size and mode: the trace stops after this")
    ap.add_argument("--ref-seconds", type=float, default=DEFAULT_REF_SECONDS,
                    help="per reference and size: stopped (and skipped above) after this")
    ap.add_argument("--max-pairs", type=int, default=MAX_PAIRS)
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--no-trace", action="store_true")
    ap.add_argument("--plain", action="store_true", help="markdown tables even with rich")
    args = ap.parse_args(argv)
    path = args.data / DATA_FILE
    if not path.is_file():
        print(f"gavel_inputs: skipped: {path} not found (Gavel's measured throughputs; "
              "--data DIR names the folder)")
        return 0
    import cvxpy as cp
    import highspy  # noqa: F401  (its import is not timed)

    import fairalloc as fa

    ctx = Context(load_table(path), args.seed, args.max_pairs, args.ref_seconds, {},
                  "ECOS" in cp.installed_solvers())
    policies = tuple(args.policy)
    import os

    print(f"gavel_inputs: fairalloc {fa.__version__}, numpy {np.__version__}, cvxpy "
          f"{cp.__version__}, {os.cpu_count()} CPUs, ECOS "
          f"{'installed' if ctx.ecos else 'not installed'}; {path}; seed {args.seed}",
          flush=True)
    run_size(replace(ctx, over={}), WARM_N, policies, warm_up=True)  # imports, first solves
    summary: list[list[str]] = []
    bad = 0
    for n in args.jobs:
        t0 = time.perf_counter()
        rows, summ, b = run_size(ctx, n, policies)
        bad += b
        summary += summ
        print_table(f"(a) {n:,} jobs, one cold call per solver ({time.perf_counter() - t0:.0f} "
                    "s for this size)", SOLVE_HEADER, rows, args.plain)
    print_table("summary (ref / fairalloc > 1: fairalloc faster)", SUMMARY_HEADER, summary,
                args.plain)
    trows = []
    if not args.no_trace:
        for n in args.jobs:
            for policy in policies:
                if POLICIES[policy][1] is None:
                    continue
                trows.append(trace(ctx, policy, n, args.rounds, args.trace_seconds))
                bad += int(trows[-1][-1])
        print_table(f"(b) RoundPolicy trace: ms per round (<= {args.rounds} rounds, "
                    f"<= {args.trace_seconds:.0f} s per mode); packing: adapter only",
                    TRACE_HEADER, trows, args.plain)
    print(f"\nuncertified results: {bad}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
