"""benchmarks/gavel_inputs.py on a tiny synthetic stand-in for Gavel's throughput file: every
adapter policy is in the tables, every fairalloc result is certified and agrees with HiGHS on
the whole LP; without the data file the script skips with one line. Needs no ../shared."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))
import gavel_inputs as gi  # noqa: E402  (a script of benchmarks/, not a package)

TYPES = ("v100", "p100", "k80")
SPEED = {"v100": 1.0, "p100": 0.6, "k80": 0.3}
# (model, scale factors it supports, steps/s alone on a V100): one model runs every gang size,
# so Gavel's draw (re-drawn until the model supports the scale factor) always ends
MODELS = (("ResNet-18 (batch size 64)", (1, 2, 4, 8), 30.0),
          ("Transformer (batch size 32)", (1, 2), 12.0),
          ("A3C", (1,), 5.0))


def _stand_in(folder: Path) -> Path:
    """simulation_throughputs.json's shape: {type: {str((model, sf)): {"null": rate,
    str((other, sf)): [rate, other's rate]}}} (pairs for single-GPU keys only)."""
    ones = [(m, 1) for m, _, _ in MODELS]
    data: dict[str, dict[str, dict[str, object]]] = {}
    for t in (*TYPES, *(f"{t}_unconsolidated" for t in TYPES)):
        speed = SPEED[t.split("_")[0]] * (0.8 if "_" in t else 1.0)
        data[t] = {}
        for m, sfs, rate in MODELS:
            for sf in sfs:
                entry: dict[str, object] = {"null": rate * speed * sf ** 0.9}
                if sf == 1:
                    for other in ones:
                        mine = rate * speed * 0.7
                        theirs = dict((mm, rr) for mm, _, rr in MODELS)[other[0]] * speed * 0.6
                        entry[str(other)] = [mine, theirs]
                data[t][str((m, sf))] = entry
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / gi.DATA_FILE
    path.write_text(json.dumps(data))
    return folder


def _rows(out: str, header: str) -> list[list[str]]:
    """The markdown rows of the table whose header line starts with ``header``."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("| "):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


def test_smallest_configuration_has_every_policy_and_is_certified(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture
                                                                  ) -> None:
    data = _stand_in(tmp_path / "gavel")
    assert gi.main(["--data", str(data), "--jobs", "24", "--rounds", "2", "--plain"]) == 0
    out = capsys.readouterr().out
    summary = _rows(out, "| policy | jobs | fa s")
    assert [r[0] for r in summary] == list(gi.POLICIES)
    for r in summary:
        assert r[-1] == "ok", r  # fairalloc's certificate, every policy
    solvers = _rows(out, "| policy | solver |")
    by = {(r[0], r[1]): r for r in solvers}
    for policy in gi.POLICIES:
        assert by[(policy, "fairalloc (adapter, cold)")][5].startswith("ok, gap")
        highs = by[(policy, "HiGHS whole LP")]
        assert float(highs[4].rstrip(" !")) <= gi.AGREE_TOL, highs  # one optimum
        bare = by[(policy, "bare minimum")]
        assert float(bare[4].rstrip(" !")) <= gi.AGREE_TOL, bare
    trace = _rows(out, "| policy | jobs | rounds |")
    assert {r[0] for r in trace} == {p for p, (_, rp) in gi.POLICIES.items() if rp}
    assert all(r[-1] == "0" for r in trace) and all(r[2] == "2" for r in trace)
    names = _rows(out, "| Gavel name |")  # (c): every Gavel name, #29
    from fairalloc.integrations import gavel
    assert [r[0] for r in names] == list(gavel.GAVEL_POLICY_NAMES)
    assert all(r[-1].startswith(("ok, gap", "heuristic")) for r in names), names
    assert "NOT OK" not in out
    assert out.rstrip().endswith("uncertified results: 0")


def test_absent_data_skips_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture
                                         ) -> None:
    assert gi.main(["--data", str(tmp_path / "nowhere")]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "skipped" in out[0] and gi.DATA_FILE in out[0]


def test_jobs_are_drawn_as_gavel_draws_them(tmp_path: Path) -> None:
    table = gi.load_table(_stand_in(tmp_path / "gavel") / gi.DATA_FILE)
    a, b = gi.job_set(table, 400, 7), gi.job_set(table, 400, 7)
    assert np.array_equal(a.T, b.T) and np.array_equal(a.steps, b.steps)  # seeded
    keys = [table.keys[k] for k in a.key]
    assert all(sf == s for (_, sf), s in zip(keys, a.sf))  # the model supports its gang
    assert set(a.sf) <= {1.0, 2.0, 4.0, 8.0} and set(a.w) <= {1.0, 5.0}
    duration = a.total / a.T[:, 0]
    assert (duration >= 60 * 10 ** 1.5 * (1 - 1e-12)).all()
    assert (duration <= 60 * 10 ** 4 * (1 + 1e-12)).all()
    assert (a.cap == max(400 // 4, gi.MIN_WORKERS)).all()
    # Gavel's dicts: JobIdPair keys, pair keys equal to the pair of singles
    pairs = gi.pairs_of(table, a, 50, 7)
    g = gi.gavel_args(a, pairs)
    pair_keys = [k for k in g["tp"] if k.is_pair()]
    assert len(pair_keys) == 50
    first = pair_keys[0].singletons()
    assert all(s in g["tp"] and not s.is_pair() for s in first)
    assert sorted(g["ids"]) == g["ids"]  # ids increase with arrival (FIFO's order)
