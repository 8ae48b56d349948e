"""Evaluation strategies, one module each, behind one protocol (sqlglot's one rule per
module), in one registry. Every strategy takes a
:class:`~uncertain_cep.query.evaluation.QueryContext` and returns the answer rows
(:class:`~uncertain_cep.query.answer.Answer`); they
differ only in how they search, never in the answer (SEMANTICS A4).

* ``selectivity`` (:mod:`~uncertain_cep.query.selectivity`, Zhou et al. 5.2): the rarest
  item first, then the cheapest neighbour; the default.
* ``sequential`` (:mod:`~uncertain_cep.query.sequential`, 5.1): items in pattern order.
* ``tree_traversal`` (:mod:`~uncertain_cep.query.tree_traversal`): the paper's baseline,
  walking the OI-trees.
* ``possible_worlds`` (:mod:`~uncertain_cep.query.possible_worlds`): the definition,
  enumerated; needs the whole archive, so it runs in this process only.

>>> sorted(s.value for s in StrategyName)
['possible_worlds', 'selectivity', 'sequential', 'tree_traversal']
>>> get_strategy("sequential").__name__
'sequential'
>>> get_strategy("fastest")
Traceback (most recent call last):
...
uncertain_cep.errors.InvalidOptionError: 'fastest' is not a valid strategy name; ...
"""

from __future__ import annotations

from typing import Protocol

from uncertain_cep.errors import ParamEnum
from uncertain_cep.query.answer import Answer
from uncertain_cep.query.evaluation import QueryContext
from uncertain_cep.query.possible_worlds import possible_worlds
from uncertain_cep.query.selectivity import selectivity
from uncertain_cep.query.sequential import sequential
from uncertain_cep.query.tree_traversal import tree_traversal

__all__ = ["STRATEGIES", "Strategy", "StrategyName", "get_strategy"]


class Strategy(Protocol):
    """An evaluation strategy: the answer rows of a query context, as columns."""

    __name__: str

    def __call__(self, ctx: QueryContext) -> Answer: ...


class StrategyName(ParamEnum):
    """Valid values of ``strategy=``."""

    selectivity = "selectivity"
    sequential = "sequential"
    tree_traversal = "tree_traversal"
    possible_worlds = "possible_worlds"


STRATEGIES: dict[StrategyName, Strategy] = {
    StrategyName.selectivity: selectivity,
    StrategyName.sequential: sequential,
    StrategyName.tree_traversal: tree_traversal,
    StrategyName.possible_worlds: possible_worlds,
}


def get_strategy(name: str | StrategyName) -> Strategy:
    """The strategy called ``name`` (an :class:`InvalidOptionError` lists the valid ones)."""
    return STRATEGIES[StrategyName(StrategyName.get_value(
        name.value if isinstance(name, StrategyName) else name))]
