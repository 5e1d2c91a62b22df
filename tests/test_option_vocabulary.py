"""One option vocabulary (#30): ``gap_tol``, ``time_limit``, ``node_limit`` everywhere; each old
spelling (``mip_gap``, ``milp_time_limit``, ``milp_node_limit``, ``--milp-time-limit``,
``--milp-node-limit``) still works with a ``DeprecationWarning`` and gives the same result;
passing both spellings is an `InputError` naming the old one."""

from __future__ import annotations

import inspect
import warnings
from pathlib import Path

import numpy as np
import pytest

import fairalloc as fa
from fairalloc.backends import LinearProgram, get_backend
from fairalloc.cli import main
from fairalloc.sim import make_policy
from fairalloc.sim.policies import ShockwavePolicy
from fairalloc.sim.sweep import SweepTask, build_policy, sweep_tasks, task_key


def _jobs() -> list:
    return [fa.PlanJob(workers=1, total_epochs=10, done_epochs=2, ftf=1.2,
                       regimes=[(5.0, 10)]),
            fa.PlanJob(workers=2, total_epochs=8, done_epochs=0, ftf=0.9, regimes=[(3.0, 8)])]


def _knapsack() -> LinearProgram:
    A = np.array([[3.0, 4.0, 5.0, 2.0]])
    return LinearProgram.build(-np.array([4.0, 5.0, 6.0, 3.0]), A, -np.inf, np.array([7.0]),
                               0.0, 1.0, integrality=np.ones(4, dtype=bool))


def _deprecated(call, old: str):
    """Run ``call``; assert exactly one DeprecationWarning naming ``old`` at this file."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = call()
    dep = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    assert len(dep) == 1, [str(w.message) for w in caught]
    assert old in str(dep[0].message)
    assert dep[0].filename == __file__  # points at the caller's line, not the shim
    return out


def test_plan_schedule_mip_gap_is_gap_tol() -> None:
    new = fa.plan_schedule(_jobs(), 2, rounds=3, gap_tol=1e-4)
    old = _deprecated(lambda: fa.plan_schedule(_jobs(), 2, rounds=3, mip_gap=1e-4), "mip_gap")
    np.testing.assert_array_equal(old.x, new.x)
    assert old.objective == new.objective
    with pytest.raises(fa.InputError) as exc:
        fa.plan_schedule(_jobs(), 2, rounds=3, mip_gap=1e-4, gap_tol=1e-4)
    assert exc.value.argument == "mip_gap"
    assert "gap_tol" in inspect.signature(fa.plan_schedule).parameters
    assert "mip_gap" not in inspect.signature(fa.plan_schedule).parameters


def test_shockwave_policy_mip_gap_is_gap_tol() -> None:
    new = ShockwavePolicy(gap_tol=0.01)
    old = _deprecated(lambda: ShockwavePolicy(mip_gap=0.01), "mip_gap")
    assert old.plan_options == new.plan_options and new.plan_options["gap_tol"] == 0.01
    with pytest.raises(fa.InputError, match="mip_gap"):
        ShockwavePolicy(mip_gap=0.01, gap_tol=0.01)
    # by name, as --param shockwave.mip_gap= and sweeps build it (the registry checks names
    # against the signature, which shows only gap_tol)
    named = _deprecated(lambda: make_policy("shockwave", {"mip_gap": 0.01}), "mip_gap")
    assert named.plan_options == new.plan_options
    with pytest.raises(fa.InputError, match="mip_gap"):
        make_policy("shockwave", {"mip_gap": 0.01, "gap_tol": 0.01})


def test_backend_solve_lp_mip_gap_is_gap_tol() -> None:
    be = get_backend("highs")
    new = be.solve_lp(_knapsack(), gap_tol=0.0)
    old = _deprecated(lambda: be.solve_lp(_knapsack(), mip_gap=0.0), "mip_gap")
    assert new.status == old.status == "optimal"
    np.testing.assert_array_equal(old.x, new.x)
    with pytest.raises(fa.InputError, match="mip_gap"):
        be.solve_lp(_knapsack(), mip_gap=0.0, gap_tol=0.0)
    with pytest.raises(fa.InputError, match="gap_tol"):
        be.solve_lp(_knapsack(), gap_tol=-1.0)


def test_build_policy_milp_limits_are_time_and_node_limit() -> None:
    old = _deprecated(lambda: build_policy("themis", milp_node_limit=7), "milp_node_limit")
    assert old.node_limit == build_policy("themis", node_limit=7).node_limit == 7
    old = _deprecated(lambda: build_policy("shockwave", milp_time_limit=2.5), "milp_time_limit")
    assert old.plan_options["time_limit"] == 2.5
    with pytest.raises(fa.InputError, match="milp_node_limit"):
        build_policy("themis", milp_node_limit=7, node_limit=7)


def test_sweep_tasks_and_task_milp_limits() -> None:
    kw = {"num_jobs": 2, "gpus": 2}
    new = sweep_tasks(["shockwave"], time_limit=3.0, node_limit=9, **kw)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = sweep_tasks(["shockwave"], milp_time_limit=3.0, milp_node_limit=9, **kw)
    assert sorted(str(w.message).split(":")[1].split()[0] for w in caught
                  if issubclass(w.category, DeprecationWarning)) == ["milp_node_limit",
                                                                     "milp_time_limit"]
    assert old == new and [task_key(t) for t in old] == [task_key(t) for t in new]
    assert new[0].time_limit == 3.0 and new[0].node_limit == 9
    assert _deprecated(lambda: new[0].milp_node_limit, "milp_node_limit") == 9
    assert _deprecated(lambda: new[0].milp_time_limit, "milp_time_limit") == 3.0
    task = _deprecated(lambda: SweepTask(policy="fifo", params=(), seed=0, load=None,
                                         workload=(("kind", "poisson"),), cluster=(),
                                         milp_node_limit=4), "milp_node_limit")
    assert task.node_limit == 4
    with pytest.raises(fa.InputError, match="milp_time_limit"):
        sweep_tasks(["fifo"], milp_time_limit=1.0, time_limit=1.0, **kw)


#: task_key of the task below on main before the rename (its fields then named milp_*)
KEY_BEFORE_RENAME = "98f3c729ae43ed6b"


def test_task_key_unchanged_by_the_rename() -> None:
    """A ``runs.jsonl`` written before the rename still resumes: the key is the one the
    fields ``milp_time_limit``/``milp_node_limit`` gave (computed on the code before it)."""
    task = sweep_tasks(["fifo"], seeds=[3], num_jobs=4, gpus=2, node_limit=9)[0]
    assert task_key(task) == KEY_BEFORE_RENAME



CLI = ["simulate", "--jobs", "2", "--gpus", "2", "--no-plots", "--no-progress",
       "--policy", "themis"]


def test_cli_old_limit_options(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main([*CLI, "--time-limit", "0", "--node-limit", "50",
                 "--out", str(tmp_path / "new")]) == 0
    capsys.readouterr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main([*CLI, "--milp-time-limit", "0", "--milp-node-limit", "50",
                     "--out", str(tmp_path / "old")]) == 0
    old_out = capsys.readouterr()
    assert {str(w.message).split()[0] for w in caught
            if issubclass(w.category, DeprecationWarning)} == {"--milp-time-limit",
                                                               "--milp-node-limit"}
    assert "--milp-node-limit is deprecated, use --node-limit" in old_out.err
    assert ((tmp_path / "old" / "summary.csv").read_text()
            == (tmp_path / "new" / "summary.csv").read_text())
    assert main([*CLI, "--milp-node-limit", "5", "--node-limit", "5",
                 "--out", str(tmp_path / "both")]) == 2
    err = capsys.readouterr().err
    assert "--milp-node-limit" in err and "not both" in err
    assert not (tmp_path / "both").exists()
