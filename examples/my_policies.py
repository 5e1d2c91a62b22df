"""Two small allocation policies of the market domain, for ``fairalloc check``.

``docs/how-to/test-your-own-policy.md`` checks them from a shell::

    fairalloc check examples/my_policies.py:first_come -p envy-free -p sharing-incentive

Run: ``python examples/my_policies.py`` (prints what each gives on a small market).
"""

import numpy as np


def first_come(utility, budget, supply):
    """Everything to the first buyer: feasible, neither envy-free nor sharing-incentive."""
    x = np.zeros(np.shape(utility))
    x[0] = supply
    return x


def budget_share(utility, budget, supply):
    """Every buyer gets its budget share of every good: envy-free, not Pareto optimal."""
    budget = np.asarray(budget, dtype=float)
    return np.outer(budget / budget.sum(), supply)


if __name__ == "__main__":
    utility = np.array([[1.0, 2.0], [3.0, 1.0]])
    budget, supply = np.array([1.0, 1.0]), np.array([1.0, 2.0])
    for policy in (first_come, budget_share):
        print(policy.__name__, policy(utility, budget, supply).tolist())
