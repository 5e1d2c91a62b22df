"""Regime-forecast accuracy study in the style of Shockwave Figure 5.

For 200 elastic jobs (Accordion and GNS) with random true batch-size trajectories, forecast
each job at 10 %, 20 %, ..., 90 % of its epochs from what has been observed so far, and print
side by side, per predictor:

* the regime interpolation error: mean over the model's regimes of |predicted - true epochs|
  divided by the job's epochs (the quantity of Figure 5, top);
* the run-time error: |predicted total run time - true total run time| / true total
  (Figure 5, bottom; the paper reports accuracy = 1 - error);
* the time per forecast.

Predictors: the restatement rule (censored, the default; and ``censor=False``, the plain
rule), the standard Bayesian update and the greedy latest-throughput forecast (the two
baselines of Figure 5), and the oracle (reads the true future; a sanity row that must be 0).
Two information settings: "measured" (only the job's submitted batch size is profiled; other
batch sizes are measured when reached or extrapolated) and "table" (every batch size's epoch
time is known from a profiling table, so only regime lengths are forecast).

Jobs come from ../shared/data/shockwave (trace_900jobs.tsv: model, batch size, gang, mode,
duration; tacc_throughputs.json: iterations/s per batch size) when that folder exists, and
from a synthetic generator otherwise. True trajectories are random (the public data has no
per-epoch batch-size schedules): Accordion starts with a short critical regime at its small
batch, then alternates; GNS doubles at random epochs and may stop before its limit.

Run:  python benchmarks/forecast.py [--jobs 200] [--seed 0]
"""

from __future__ import annotations

import argparse
import ast
import csv
import json
import math
import re
import time
from pathlib import Path

import numpy as np

from fairalloc.schedule import RegimeModel, forecast_regimes, oracle_forecast

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "shockwave"
# samples per epoch used by the upstream simulator for each model's dataset
DATASET = {"ResNet-18": 50000, "ResNet-50": 100000, "Transformer": 10000, "LM": 59675,
           "Recommendation": 117907}
PROGRESS = np.round(np.arange(0.1, 1.0, 0.1), 1)
K_ACCORDION = 4


def _load_trace(rng: np.random.Generator, num_jobs: int) -> tuple[list[dict], str]:
    """Job specs: model, initial batch size, batch-size ladder, epoch seconds per size."""
    thr = json.loads((DATA / "tacc_throughputs.json").read_text())["v100"]
    table: dict[tuple[str, int], dict[int, float]] = {}
    for key, entry in thr.items():
        name, sf = ast.literal_eval(key)
        m = re.match(r"(.*) \(batch size (\d+)\)", name)
        if m is None or m.group(1) not in DATASET or not entry.get("null"):
            continue
        table.setdefault((m.group(1), int(sf)), {})[int(m.group(2))] = float(entry["null"])
    jobs = []
    with open(DATA / "trace_900jobs.tsv") as fh:
        rows = [r for r in csv.reader(fh, delimiter="\t") if r[7] in ("accordion", "gns")]
    for i in rng.permutation(len(rows)):
        r = rows[i]
        m = re.match(r"(.*) \(batch size (\d+)\)", r[0])
        if m is None or m.group(1) not in DATASET:
            continue
        model, b0, sf = m.group(1), int(m.group(2)), int(r[6])
        ladder_thr = table.get((model, sf))
        if not ladder_thr or b0 not in ladder_thr:
            continue
        sizes = sorted(ladder_thr)
        sec = {b: math.ceil(DATASET[model] / b) / ladder_thr[b] for b in sizes}
        spec = _spec(rng, r[7], b0, sizes, sec, float(r[10]))
        if spec is not None:
            jobs.append(spec)
        if len(jobs) == num_jobs:
            break
    return jobs, f"{DATA.name}: trace_900jobs.tsv + tacc_throughputs.json (v100)"


def _synthetic(rng: np.random.Generator, num_jobs: int) -> tuple[list[dict], str]:
    jobs: list[dict] = []
    while len(jobs) < num_jobs:
        b0 = int(rng.choice([16, 32, 64]))
        sizes = [b0 * 2**i for i in range(int(rng.integers(2, 6)))]
        overhead, per_sample = rng.uniform(0.02, 0.2), rng.uniform(1e-4, 1e-3)
        sec = {b: 50000 / b * (overhead + per_sample * b) for b in sizes}
        spec = _spec(rng, str(rng.choice(["accordion", "gns"])), b0, sizes, sec,
                     float(rng.uniform(720, 20000)))
        if spec is not None:
            jobs.append(spec)
    return jobs, "synthetic (data folder not found)"


def _split(rng: np.random.Generator, n: int, fractions: np.ndarray) -> np.ndarray:
    """Integer regime lengths >= 1 summing to n, close to n * fractions."""
    r = fractions.size
    lengths = np.ones(r, dtype=int) + rng.multinomial(n - r, fractions)
    return lengths


def _spec(rng, mode, b0, sizes, sec, duration) -> dict | None:
    n = int(np.clip(round(duration / sec[b0]), 8, 400))
    if mode == "accordion":
        if 2 * b0 not in sec:
            return None
        model = RegimeModel.accordion(b0, 2 * b0, num_regimes=K_ACCORDION)
        used = int(rng.integers(2, K_ACCORDION + 1))
        first = rng.uniform(0.05, 0.25)
        rest = rng.dirichlet(np.full(used - 1, 2.0)) * (1 - first)
        fractions = np.concatenate([[first], rest])
    else:
        ladder = [b for b in sizes if b >= b0]
        if len(ladder) < 2:
            return None
        model = RegimeModel(ladder, kind="gns")
        used = int(rng.integers(2, len(ladder) + 1))
        fractions = rng.dirichlet(np.ones(used))
    if n < used:
        return None
    lengths = _split(rng, n, fractions)
    bs = np.repeat(model.configurations[:used], lengths)
    noise = rng.lognormal(0.0, 0.03, size=n)
    epoch_seconds = np.array([sec[b] for b in bs]) * noise
    truth = np.zeros(model.num_regimes)
    truth[:used] = lengths
    return {"model": model, "bs": bs, "sec": epoch_seconds, "truth": truth,
            "profile_first": {float(b0): sec[b0]},
            "profile_all": {float(b): s for b, s in sec.items()}}


PREDICTORS = {
    "restatement (censored)": dict(method="restatement", censor=True),
    "restatement (plain)": dict(method="restatement", censor=False),
    "standard Bayesian": dict(method="bayesian"),
    "greedy latest throughput": dict(method="greedy"),
}


def study(jobs: list[dict], setting: str) -> dict[str, dict[str, np.ndarray]]:
    profile_key = "profile_first" if setting == "measured" else "profile_all"
    names = [*PREDICTORS, "oracle (reads the future)"]
    regime = {p: np.zeros((len(jobs), PROGRESS.size)) for p in names}
    runtime = {p: np.zeros((len(jobs), PROGRESS.size)) for p in names}
    seconds = dict.fromkeys(names, 0.0)
    calls = 0
    for j, job in enumerate(jobs):
        n = job["bs"].size
        true_total = float(job["sec"].sum())
        for c, p in enumerate(PROGRESS):
            f = int(p * n)
            calls += 1
            for name, kw in PREDICTORS.items():
                t0 = time.perf_counter()
                fc = forecast_regimes(job["model"], n, job["bs"][:f], job["sec"][:f],
                                      profiled=job[profile_key], **kw)
                seconds[name] += time.perf_counter() - t0
                regime[name][j, c] = np.abs(fc.epochs - job["truth"]).mean() / n
                runtime[name][j, c] = abs(fc.total_seconds - true_total) / true_total
            t0 = time.perf_counter()
            oc = oracle_forecast(job["bs"], job["sec"], f)
            seconds["oracle (reads the future)"] += time.perf_counter() - t0
            # the oracle's regimes are the true runs; compare them with the truth's runs
            runs = job["truth"][job["truth"] > 0]
            regime["oracle (reads the future)"][j, c] = (
                np.abs(oc.epochs - runs).mean() / n if oc.epochs.size == runs.size else np.nan)
            runtime["oracle (reads the future)"][j, c] = (
                abs(oc.total_seconds - true_total) / true_total)
    us = {name: 1e6 * s / calls for name, s in seconds.items()}
    return {"regime": regime, "runtime": runtime, "us": us}  # type: ignore[dict-item]


def _table(title: str, values: dict[str, np.ndarray], us: dict[str, float] | None) -> None:
    head = "| predictor | " + " | ".join(f"{int(p * 100)}%" for p in PROGRESS) + " | mean |"
    if us is not None:
        head += " µs/forecast |"
    print(f"\n{title}\n")
    print(head)
    print("|" + "---|" * (PROGRESS.size + 2 + (us is not None)))
    for name, arr in values.items():
        col = np.nanmean(arr, axis=0) * 100
        row = f"| {name} | " + " | ".join(f"{v:.1f}" for v in col) + f" | {col.mean():.1f} |"
        if us is not None:
            row += f" {us[name]:.0f} |"
        print(row)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    if DATA.exists():
        jobs, source = _load_trace(rng, args.jobs)
    else:
        jobs, source = _synthetic(rng, args.jobs)
    kinds = [j["model"].kind for j in jobs]
    print(f"jobs: {len(jobs)} ({kinds.count('accordion')} Accordion, {kinds.count('gns')} GNS)"
          f" from {source}; seed {args.seed}")
    print("columns: fraction of the job's epochs observed when forecasting; errors in %")
    measured = study(jobs, "measured")
    table = study(jobs, "table")
    _table("Regime interpolation error, mean |predicted - true epochs| / N per regime "
           "(% of N)", measured["regime"], None)
    _table("Run-time error |P_hat - P| / P (%), measured epoch times only",
           measured["runtime"], measured["us"])
    _table("Run-time error |P_hat - P| / P (%), every batch size profiled", table["runtime"],
           None)
    for kind in ("accordion", "gns"):
        mask = np.array([k == kind for k in kinds])
        sub = {name: arr[mask] for name, arr in measured["regime"].items()}
        _table(f"Regime interpolation error (% of N), {kind} jobs only", sub, None)


if __name__ == "__main__":
    main()
