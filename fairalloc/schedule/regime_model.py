"""The order of configurations a job's regimes can take (Shockwave §5 "Leveraging domain
knowledge"): `fairalloc.RegimeModel` (static, Accordion, GNS, custom).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import as_array, as_option, as_positive_float, fmt_index
from ..errors import InputError
from .posteriors import MAX_REGIMES, _num_regimes

__all__ = ["MODEL_KINDS", "RegimeModel"]

MODEL_KINDS = ("static", "accordion", "gns", "custom")
# ACCURACY: GNS doublings that reach max_batch_size within this (relative, in log units) count
# (``initial * factor**i`` is rounded)
DOUBLING_SLACK = 1e-9


@dataclass(frozen=True, init=False, eq=False)
class RegimeModel:
    """The order of configurations a job's regimes can take (Shockwave §5).

    Batch-size scaling rules have deterministic configuration transitions; only how long each
    regime lasts is random. A model lists the configurations (batch sizes) of regimes
    ``1..K`` in the only order the rule allows; an observed job may skip regimes (a GNS job
    that doubles twice at one epoch boundary, or stops early), never reorder them.

    Parameters
    ----------
    configurations : array_like, shape (K,)
        Positive configuration (global batch size) of each possible regime, in order;
        consecutive entries must differ (a regime ends when the configuration changes).
    kind : {"static", "accordion", "gns", "custom"}
        Label only; the constructors below set it.

    Examples
    --------
    >>> RegimeModel.accordion(32, 64, num_regimes=4).configurations
    array([32., 64., 32., 64.])
    >>> RegimeModel.gns(32, max_batch_size=256).configurations
    array([ 32.,  64., 128., 256.])
    >>> RegimeModel.static(128).num_regimes
    1
    """

    kind: str
    configurations: np.ndarray

    def __init__(self, configurations: Any, *, kind: str = "custom") -> None:
        kind = as_option(kind, "kind", MODEL_KINDS)
        cfg = as_array(configurations, "configurations", ndim=1, positive=True)
        if cfg.shape[0] > MAX_REGIMES:
            raise InputError(f"configurations has {cfg.shape[0]} regimes, more than "
                             f"{MAX_REGIMES}", argument="configurations")
        same = np.flatnonzero(cfg[1:] == cfg[:-1])
        if same.size:
            i = int(same[0]) + 1
            raise InputError(
                f"configurations{fmt_index([i])} = {cfg[i]:g} repeats the previous regime's "
                "configuration; consecutive regimes must differ",
                argument="configurations",
                index=(i,),
            )
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "configurations", cfg)

    @classmethod
    def static(cls, batch_size: float) -> RegimeModel:
        """A job that never changes configuration: one regime."""
        return cls([as_positive_float(batch_size, "batch_size")], kind="static")

    @classmethod
    def accordion(cls, small: float, large: float, *, num_regimes: int) -> RegimeModel:
        """Accordion: alternates ``small, large, small, ...`` for at most ``num_regimes``.

        Accordion starts in a critical regime with the small batch, scales up when gradients
        change slowly and back down when they change fast (§5 (a)). Pass ``small`` and
        ``large`` swapped for a job that starts with its large batch.
        """
        small = as_positive_float(small, "small")
        large = as_positive_float(large, "large")
        if small == large:
            raise InputError("accordion needs two different configurations; small == large",
                             argument="large")
        k = _num_regimes(num_regimes)
        return cls(np.where(np.arange(k) % 2 == 0, small, large), kind="accordion")

    @classmethod
    def gns(
        cls,
        initial: float,
        *,
        max_batch_size: float | None = None,
        num_regimes: int | None = None,
        factor: float = 2.0,
    ) -> RegimeModel:
        """GNS: the batch size only grows, multiplied by ``factor`` (doubling) each time.

        Give exactly one of ``max_batch_size`` (the pre-specified limit, §5 (b); regimes
        ``initial * factor**i <= max_batch_size``) and ``num_regimes``.
        """
        initial = as_positive_float(initial, "initial")
        factor = as_positive_float(factor, "factor")
        if factor <= 1.0:
            raise InputError(f"factor must exceed 1 (GNS only scales up), got {factor:g}",
                             argument="factor")
        if (max_batch_size is None) == (num_regimes is None):
            raise InputError("give exactly one of max_batch_size and num_regimes",
                             argument="max_batch_size")
        if max_batch_size is not None:
            cap = as_positive_float(max_batch_size, "max_batch_size")
            if cap < initial:
                raise InputError(
                    f"max_batch_size = {cap:g} is below the initial batch size {initial:g}",
                    argument="max_batch_size",
                )
            steps = float(np.floor(np.log(cap / initial) / np.log(factor) + DOUBLING_SLACK))
            if not steps < MAX_REGIMES:
                raise InputError(f"max_batch_size = {cap:g} allows more than {MAX_REGIMES} "
                                 f"doublings of {initial:g} by factor {factor:g}",
                                 argument="max_batch_size")
            k = int(steps) + 1
            arg = "max_batch_size"
        else:
            k = _num_regimes(num_regimes)
            arg = "num_regimes"
        with np.errstate(over="ignore"):
            cfg = initial * factor ** np.arange(k)
        if not np.isfinite(cfg).all():
            raise InputError(f"initial * factor ** (num_regimes - 1) overflows a float "
                             f"({initial:g} * {factor:g} ** {k - 1})", argument=arg)
        return cls(cfg, kind="gns")

    @property
    def num_regimes(self) -> int:
        """``K``, the most regimes a job following this model can have."""
        return int(self.configurations.shape[0])

    def __repr__(self) -> str:
        cfg = ", ".join(f"{c:g}" for c in self.configurations)
        return f"RegimeModel(kind={self.kind!r}, configurations=[{cfg}])"


