"""Property-check your own allocation policy in CI: ``pytest examples/test_my_policy.py``."""
import numpy as np

from fairalloc.testing import parametrize_with_property_checks


def budget_share(utility, budget, supply):
    """My policy: every buyer gets its budget share of every good."""
    return np.outer(budget / budget.sum(), supply)


@parametrize_with_property_checks(budget_share, ["feasible", "envy_free", "sharing_incentive",
                                                 "strategy_proof"], max_examples=50)
def test_budget_share(check):
    check()
