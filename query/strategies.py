"""Evaluation strategies, one module each, behind one protocol (sqlglot's one rule per
module). Every strategy takes a :class:`~uncertain_cep.query.evaluation.QueryContext` and returns
the
answer rows; they differ only in how they search, never in the answer (SEMANTICS A4).

>>> sorted(s.value for s in StrategyName)
['possible_worlds', 'selectivity', 'sequential', 'tree_traversal']
>>> get_strategy("sequential").__name__
'sequential'
"""

from __future__ import annotations

from typing import Protocol

from uncertain_cep.errors import ParamEnum
from uncertain_cep.query.evaluation import Match, QueryContext
from uncertain_cep.query.selectivity import selectivity
from uncertain_cep.query.sequential import sequential
from uncertain_cep.query.tree_traversal import tree_traversal

__all__ = ["INDEX_STRATEGIES", "Strategy", "StrategyName", "get_strategy"]


class Strategy(Protocol):
    """An index-based evaluation strategy."""

    __name__: str

    def __call__(self, ctx: QueryContext) -> list[Match]: ...


class StrategyName(ParamEnum):
    """Valid values of ``strategy=``."""

    selectivity = "selectivity"
    sequential = "sequential"
    tree_traversal = "tree_traversal"
    possible_worlds = "possible_worlds"


INDEX_STRATEGIES: dict[str, Strategy] = {
    "selectivity": selectivity,
    "sequential": sequential,
    "tree_traversal": tree_traversal,
}


def get_strategy(name: str) -> Strategy:
    """The index strategy called ``name``; ``possible_worlds`` needs no index and is run by
    :func:`uncertain_cep.query.possible_worlds.possible_worlds` instead."""
    value = StrategyName.get_value(name)
    if value not in INDEX_STRATEGIES:
        raise KeyError(value)
    return INDEX_STRATEGIES[value]
