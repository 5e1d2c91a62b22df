"""Real and invalid inputs at the point of use in the Gavel adapter's own readers (edge38)."""

from __future__ import annotations

import numpy as np
import pytest

from fairalloc import InputError
from fairalloc.integrations.gavel_base import gavel_isolated_throughputs


@pytest.mark.parametrize("bad", ["1.5", True, np.bool_(False), [1.0], b"2"])
def test_isolated_throughputs_refuse_non_numbers_naming_job_and_type(bad):
    # numpy's float conversion read "1.5" as 1.5 and True as 1.0 before the checks (rnd38)
    tp = {3: {"v100": 2.0, "k80": 1.0}, 7: {"v100": bad, "k80": 1.0}}
    with pytest.raises(InputError) as info:
        gavel_isolated_throughputs(tp, {3: 1, 7: 1}, {"v100": 1, "k80": 1})
    assert info.value.argument == "unflattened_throughputs"
    assert info.value.index == (1, 0)
    assert str(info.value).startswith("unflattened_throughputs[7]['v100']")


def test_isolated_throughputs_name_job_and_type_of_a_negative_rate():
    tp = {"a": {"v100": 2.0}, "b": {"k80": -1.0}}
    with pytest.raises(InputError, match=r"unflattened_throughputs\['b'\]\['k80'\]") as info:
        gavel_isolated_throughputs(tp, {"a": 1, "b": 1}, {"v100": 1, "k80": 1})
    assert info.value.index == (1, 1)


def test_isolated_throughputs_take_numpy_scalars_as_numbers():
    tp = {0: {"v100": np.float32(4.0), "k80": np.int64(1)}, 1: {"v100": 2, "k80": 2.0}}
    out = gavel_isolated_throughputs(tp, {0: 1, 1: 1}, {"v100": 1, "k80": 1})
    assert out.tolist() == [2.5, 2.0]
