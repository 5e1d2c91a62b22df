"""CI: the smoke command of one optional extra, run in a fresh venv that has only ``.[EXTRA]``.

    python .ci/extra_smoke.py EXTRA

Each extra of pyproject.toml must have a smoke here (``.ci/extras`` fails on one that has
none): a short use of what the extra adds, so a dependency the extra forgot to declare, or a
module that imports one that is not declared, fails CI instead of a user's first run.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _tiny_round() -> tuple[object, object]:
    import fairalloc as fa

    return fa.Jobs([[40.0, 10.0], [12.0, 4.0]]), fa.Cluster({"v100": 1, "k80": 1})


def plot() -> None:
    """A simulation's figures rendered with Agg (matplotlib) and saved."""
    import matplotlib

    matplotlib.use("Agg")
    import fairalloc as fa
    from fairalloc.sim import poisson_workload, simulate
    from fairalloc.sim.plots import save_plots

    result = simulate(poisson_workload(4, rate=8.0, seed=0), fa.Cluster({"v100": 4}), "fifo")
    with tempfile.TemporaryDirectory() as tmp:
        paths = save_plots([result], tmp)
        sizes = [Path(p).stat().st_size for p in paths]
    assert paths and all(s > 0 for s in sizes), (paths, sizes)
    print(f"plot: {len(paths)} figures rendered")


def testing() -> None:
    """The pytest plugin on one tiny property check, and the ``fairalloc check`` command."""
    test = '''
import numpy as np
from fairalloc.testing import parametrize_with_property_checks


def equal_split(utility, budget, supply):
    return np.tile(supply / len(budget), (len(budget), 1))


@parametrize_with_property_checks(equal_split, ["feasible"], max_examples=5)
def test_equal_split(check):
    check()
'''
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "test_tiny.py").write_text(test, encoding="utf-8")
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               "test_tiny.py"], cwd=tmp, capture_output=True, text=True)
    assert proc.returncode == 0 and "1 passed" in proc.stdout, (proc.stdout, proc.stderr)
    subprocess.run([sys.executable, "-c", "from fairalloc.cli import main; main(['check', "
                    "'--help'])"], check=True, capture_output=True)
    print("testing: the pytest plugin ran one property check")


def docs() -> None:
    """The site's tools import (no build: the first CI pass builds the site)."""
    import material  # noqa: F401
    import mkdocs_jupyter  # noqa: F401
    import mkdocstrings_handlers.python  # noqa: F401

    subprocess.run([sys.executable, "-m", "mkdocs", "--version"], check=True)


def bench() -> None:
    """ECOS through cvxpy (the Gavel reference programs' solver) and a rich table."""
    import cvxpy as cp
    from rich.console import Console
    from rich.table import Table

    x = cp.Variable(2)
    prob = cp.Problem(cp.Maximize(cp.sum(cp.log(x))), [cp.sum(x) <= 2])
    prob.solve(solver=cp.ECOS)
    assert abs(prob.value) < 1e-6, prob.value
    table = Table("solver", "value")
    table.add_row("ECOS", f"{prob.value:.2e}")
    Console().print(table)


def pyomo() -> None:
    """A Gavel policy's LP through the Pyomo backend, certified."""
    import fairalloc as fa

    jobs, cluster = _tiny_round()
    r = fa.max_min_fairness(jobs, cluster, backend="pyomo", work_conserving=False)
    assert r.certificate.ok and r.stats.backend == "pyomo", (r.certificate, r.stats)
    print("pyomo:", r)


def gurobi() -> None:
    """A Gavel policy on Gurobi (within the pip licence's size limits), certified."""
    import fairalloc as fa

    jobs, cluster = _tiny_round()
    r = fa.max_min_fairness(jobs, cluster, backend="gurobi")
    assert r.certificate.ok and r.stats.backend == "gurobi", (r.certificate, r.stats)
    print("gurobi:", r)


def ray() -> None:
    """A two-task sweep on a local Ray runtime, equal to the local pool's."""
    import ray as ray_

    from fairalloc.sim.sweep import run_sweep, sweep_tasks

    tasks = sweep_tasks(["fifo"], seeds=[0, 1], loads=[20.0], num_jobs=4, gpus=2)
    try:
        remote = run_sweep(tasks, ray_address="local")
    finally:
        ray_.shutdown()
    local = run_sweep(tasks, workers=1)
    assert remote["avg_jct"].tolist() == local["avg_jct"].tolist(), (remote, local)
    print(f"ray: {len(remote)} sweep rows")


SMOKES = {"plot": plot, "testing": testing, "docs": docs, "bench": bench, "pyomo": pyomo,
          "gurobi": gurobi, "ray": ray}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in SMOKES:
        sys.exit(f"usage: python .ci/extra_smoke.py {{{','.join(SMOKES)}}} (an extra of "
                 "pyproject.toml without a smoke here: add one)")
    SMOKES[sys.argv[1]]()
