"""Composition shared by every builder: user-added cvxpy constraints and objective terms.

A builder keeps its own variables and structure; this mixin only holds what the user added and
validates it, so every builder composes the same way (and the solve paths can ask
`Composable.composed` to decide whether a structure-exploiting fast path still applies).
"""

from __future__ import annotations

from typing import Any, Self

from .errors import InputError

__all__ = ["Composable"]


class Composable:
    """Mixin: ``add_constraint`` / ``add_objective_term`` and the lists they fill."""

    _constraints: list[Any]
    _terms: list[Any]

    def _init_composition(self) -> None:
        self._constraints = []
        self._terms = []

    @property
    def composed(self) -> bool:
        """Whether constraints or objective terms were added (only ``method="cvxpy"`` applies)."""
        return bool(self._constraints or self._terms)

    def add_constraint(self, constraint: Any) -> Self:
        """Add a cvxpy constraint on the builder's variables; returns ``self``."""
        if not _ask(constraint, "is_dcp"):
            raise InputError("constraint must be a DCP cvxpy constraint", argument="constraint")
        self._constraints.append(constraint)
        return self

    def add_objective_term(self, term: Any) -> Self:
        """Add a concave scalar cvxpy expression to the maximised objective; returns ``self``."""
        if not _ask(term, "is_concave"):
            raise InputError("term must be a concave cvxpy expression (it is maximised)",
                             argument="term")
        if not _ask(term, "is_scalar"):
            raise InputError(f"term must be a scalar cvxpy expression, got shape "
                             f"{getattr(term, 'shape', '?')} (sum it first)", argument="term")
        self._terms.append(term)
        return self


def _ask(obj: Any, predicate: str) -> bool:
    """``obj.predicate()`` for a cvxpy object; False for anything else (or if it raises)."""
    method = getattr(obj, predicate, None)
    if not callable(method):
        return False
    try:
        return bool(method())
    except Exception:  # not a cvxpy object after all
        return False
