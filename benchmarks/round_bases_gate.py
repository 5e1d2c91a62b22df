"""Max-min and finish-time fairness normal rounds with and without carried bases (#28).

`fairalloc.RoundPolicy` starts a stage LP from the previous round's basis
(`fairalloc.rounds.state.RoundBases`) only where its last cold solve took at least
`fairalloc.rounds.state.ROUND_BASIS_MIN_PIVOTS` simplex iterations. This script times a
policy's *normal* round (an option the incremental round refuses, e.g. ``method="highs"`` or
``"fast"``: `fairalloc.rounds.incremental.refusal`) over a trace of rounds (``--churn`` of the
jobs leave and as many arrive per round, the others progress) in three modes, interleaved
round by round in one process (one `RoundPolicy` per mode, the order rotated): ``carry``
(every stage LP starts from the previous round's basis, as main did for these two
policies), ``gated`` (the `ROUND_BASIS_MIN_PIVOTS` rule) and ``cold`` (no basis carried).
Rates: ``random`` (distinct log-normal) or ``gavel`` (drawn from Gavel's throughput file the
way its ``generate_job`` does: few distinct rows). Per mode: the median thread CPU per round
(rounds after the first two), the share of rounds that started warm, and the median simplex
iterations per LP solve (``stats.iterations / stats.solves``).

Run: ``PYTHONPATH=$PWD python benchmarks/round_bases_gate.py --policy max_min_fairness
--method highs --rates random --jobs 50 300 1000 --rounds 12``.
The mode is switched through ``fairalloc.rounds.state.ROUND_BASIS_MIN_PIVOTS`` (0: always
carried; a checkout that has the private ``_ALWAYS_CARRY`` gets it emptied meanwhile).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import gavel_inputs as gi  # noqa: E402

import fairalloc as fa  # noqa: E402
from fairalloc.rounds import state  # noqa: E402

TYPES = ("v100", "p100", "k80")
SKIP = 2  # rounds not timed (the first is cold, the second the first warm one)
NEVER = 10**12  # mode "cold": a gate no stage LP reaches (no basis carried)
MODES = ("carry", "gated", "cold")


def trace(rates: str, n: int, rounds: int, churn: float, seed: int) -> list[dict[str, Any]]:
    """Rounds as per-job arrays: ids, T, sf, steps, elapsed."""
    rng = np.random.default_rng(seed)
    table = gi.load_table(gi.DEFAULT_DATA / gi.DATA_FILE) if rates == "gavel" else None

    def draw(k: int, first: int) -> dict[str, np.ndarray]:
        if table is not None:
            d = gi.draw(table, k, rng, first)
            return {"ids": d["ids"], "T": d["T"], "sf": d["sf"], "steps": d["total"],
                    "elapsed": np.zeros(k)}
        return {"ids": np.arange(first, first + k),
                "T": rng.lognormal(0.0, 0.5, (k, 3)) * np.array([3.0, 2.0, 1.0]),
                "sf": rng.choice([1.0, 1.0, 2.0], k), "steps": rng.uniform(1e3, 1e5, k),
                "elapsed": np.zeros(k)}

    cur = draw(n, 0)
    nxt = n
    out = []
    k = max(1, int(round(churn * n)))
    for r in range(rounds):
        if r:
            keep = np.ones(n, dtype=bool)
            keep[rng.choice(n, k, replace=False)] = False
            new = draw(k, nxt)
            nxt += k
            cur = {key: np.concatenate([cur[key][keep], new[key]]) for key in cur}
            cur["steps"] = cur["steps"] * 0.97
            cur["elapsed"] = cur["elapsed"] + 360.0
        out.append({key: v.copy() for key, v in cur.items()})
    return out


def args_of(policy: str, rnd: dict[str, np.ndarray]) -> tuple[dict[Any, Any], dict[str, Any]]:
    ids = rnd["ids"].tolist()
    tp = {j: dict(zip(TYPES, row)) for j, row in zip(ids, rnd["T"].tolist())}
    per: dict[str, Any] = {"scale_factor": dict(zip(ids, rnd["sf"].tolist()))}
    if policy == "finish_time_fairness":
        per["steps_remaining"] = dict(zip(ids, rnd["steps"].tolist()))
        per["elapsed"] = dict(zip(ids, rnd["elapsed"].tolist()))
    return tp, per


def run(policy: str, method: str, rounds: list[dict[str, Any]], cap: dict[str, int],
        repeats: int) -> dict[str, tuple[float, float, float]]:
    """Per mode: (median thread CPU ms per round, share of warm rounds, median pivots per
    stage LP). The modes run interleaved: each round is allocated by one `RoundPolicy` per
    mode, in an order rotated round by round (a load that drifts hits every mode alike)."""
    saved = getattr(state, "_ALWAYS_CARRY", None)  # (main: max-min and FTF always carried)
    gate = state.ROUND_BASIS_MIN_PIVOTS
    gates = {"carry": 0, "gated": gate, "cold": NEVER}
    times: dict[str, list[float]] = {m: [] for m in MODES}
    warm: dict[str, list[bool]] = {m: [] for m in MODES}
    pivots: dict[str, list[float]] = {m: [] for m in MODES}
    if saved is not None:
        state._ALWAYS_CARRY = ()
    try:
        for rep in range(repeats):
            ps = {m: fa.RoundPolicy(policy, method=method) for m in MODES}
            for i, rnd in enumerate(rounds):
                tp, per = args_of(policy, rnd)
                k = (i + rep) % len(MODES)
                for mode in MODES[k:] + MODES[:k]:
                    state.ROUND_BASIS_MIN_PIVOTS = gates[mode]
                    t0 = time.thread_time()
                    r = ps[mode].allocate(tp, cap, **per)
                    dt = time.thread_time() - t0
                    assert r.certificate.ok, r.stats
                    if i >= SKIP:
                        times[mode].append(dt)
                        warm[mode].append(r.warm)
                        pivots[mode].append(r.stats.iterations / max(r.stats.solves, 1))
    finally:
        if saved is not None:
            state._ALWAYS_CARRY = saved
        state.ROUND_BASIS_MIN_PIVOTS = gate
    return {m: (1e3 * statistics.median(times[m]), float(np.mean(warm[m])),
                statistics.median(pivots[m])) for m in MODES}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policy", default="max_min_fairness",
                    choices=("max_min_fairness", "finish_time_fairness"))
    ap.add_argument("--method", default="highs")
    ap.add_argument("--rates", default="random", choices=("random", "gavel"))
    ap.add_argument("--jobs", type=int, nargs="+", default=[50, 300, 1000])
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--churn", type=float, default=0.01)
    ap.add_argument("--repeats", type=int, default=2, help="passes over the trace")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    print(f"{a.policy} method={a.method} rates={a.rates} churn={a.churn} rounds={a.rounds}")
    print(f"{'jobs':>6} {'carry ms':>9} {'gated ms':>9} {'cold ms':>8} {'carry/cold':>10} "
          f"{'warm% c/g':>10} {'piv/LP carry/cold':>18}")
    for n in a.jobs:
        rounds = trace(a.rates, n, a.rounds, a.churn, a.seed)
        cap = {t: max(n // 4, 8) for t in TYPES}
        got = run(a.policy, a.method, rounds, cap, a.repeats)
        c, g, o = (got[m] for m in MODES)
        print(f"{n:>6} {c[0]:>9.2f} {g[0]:>9.2f} {o[0]:>8.2f} {c[0] / o[0]:>10.2f} "
              f"{100 * c[1]:>4.0f}/{100 * g[1]:<4.0f} {c[2]:>8.0f}/{o[2]:<8.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
