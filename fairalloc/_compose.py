"""Composition shared by every builder: user-added cvxpy constraints and objective terms.

A builder keeps its own variables and structure; this mixin only holds what the user added and
validates it, so every builder composes the same way (and the solve paths can ask
:attr:`Composable.composed` to decide whether a structure-exploiting fast path still applies).
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
        if not getattr(constraint, "is_dcp", lambda: False)():
            raise InputError("constraint must be a DCP cvxpy constraint", argument="constraint")
        self._constraints.append(constraint)
        return self

    def add_objective_term(self, term: Any) -> Self:
        """Add a concave cvxpy expression to the maximised objective; returns ``self``."""
        if getattr(term, "is_concave", lambda: False)() is False:
            raise InputError("term must be a concave cvxpy expression (it is maximised)",
                             argument="term")
        self._terms.append(term)
        return self
