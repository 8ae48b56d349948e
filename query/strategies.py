"""Evaluation strategies, one module each, behind one protocol (sqlglot's one rule per
module), in one registry. Every strategy takes a
:class:`~uncertain_cep.query.evaluation.context.QueryContext` and returns the answer rows
(:class:`~uncertain_cep.query.evaluation.answer.Answer`); they
differ only in how they search, never in the answer (SEMANTICS A4).

* ``selectivity`` (Zhou et al. 5.2): the batch engine
  (:mod:`~uncertain_cep.query.engine.batch_engine`) matching the rarest item first, then
  the cheapest neighbour (:func:`~uncertain_cep.query.plan.choosers.cheapest_item`); the
  default.
* ``sequential`` (5.1): the batch engine matching items in pattern order
  (:func:`~uncertain_cep.query.plan.choosers.in_pattern_order`).
* ``selectivity_entries``, ``sequential_entries``
  (:mod:`~uncertain_cep.query.baselines.entry_selectivity`,
  :mod:`~uncertain_cep.query.baselines.entry_sequential`): the same orders entry by entry,
  the engine the batch engine replaced (bench/bench_batches.py's ratios).
* ``tree_traversal`` (:mod:`~uncertain_cep.query.baselines.tree_traversal`): the paper's baseline,
  walking the OI-trees.
* ``possible_worlds`` (:mod:`~uncertain_cep.query.baselines.possible_worlds`): the definition,
  enumerated; needs the whole archive, so it runs in this process only.

>>> sorted(s.value for s in StrategyName)  # doctest: +NORMALIZE_WHITESPACE
['possible_worlds', 'selectivity', 'selectivity_entries', 'sequential',
 'sequential_entries', 'tree_traversal']
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
from uncertain_cep.query.baselines.entry_selectivity import selectivity_entries
from uncertain_cep.query.baselines.entry_sequential import sequential_entries
from uncertain_cep.query.baselines.possible_worlds import possible_worlds
from uncertain_cep.query.baselines.tree_traversal import tree_traversal
from uncertain_cep.query.engine.batch_engine import BatchEngine
from uncertain_cep.query.evaluation.answer import Answer
from uncertain_cep.query.evaluation.certain_first import certain_rows_first
from uncertain_cep.query.evaluation.context import QueryContext
from uncertain_cep.query.plan.choosers import cheapest_item, in_pattern_order

__all__ = ["STRATEGIES", "Strategy", "StrategyName", "evaluate", "get_strategy",
           "selectivity", "sequential"]


class Strategy(Protocol):
    """An evaluation strategy: the answer rows of a query context, as columns."""

    __name__: str

    def __call__(self, ctx: QueryContext) -> Answer: ...


def selectivity(ctx: QueryContext) -> Answer:
    """Rarest item first (Zhou et al. 5.2) on the batch engine."""
    return BatchEngine(ctx).run(cheapest_item)


def sequential(ctx: QueryContext) -> Answer:
    """Items in pattern order (Zhou et al. 5.1) on the batch engine."""
    return BatchEngine(ctx).run(in_pattern_order)


class StrategyName(ParamEnum):
    """Valid values of ``strategy=``."""

    selectivity = "selectivity"
    sequential = "sequential"
    selectivity_entries = "selectivity_entries"
    sequential_entries = "sequential_entries"
    tree_traversal = "tree_traversal"
    possible_worlds = "possible_worlds"


STRATEGIES: dict[StrategyName, Strategy] = {
    StrategyName.selectivity: selectivity,
    StrategyName.sequential: sequential,
    StrategyName.selectivity_entries: selectivity_entries,
    StrategyName.sequential_entries: sequential_entries,
    StrategyName.tree_traversal: tree_traversal,
    StrategyName.possible_worlds: possible_worlds,
}


def evaluate(ctx: QueryContext, name: str | StrategyName) -> Answer:
    """The answer rows of ``ctx`` by the strategy ``name``, as its sink
    (:attr:`QueryContext.sink`) keeps them: every row, the best ``LIMIT`` rows, or none
    (a count: ``ctx.sink.rows``). The batch engine feeds the sink as it goes and prunes
    by its rising threshold, a top k first over the rows of confidence 1 alone
    (:mod:`~uncertain_cep.query.evaluation.certain_first`); the baselines answer whole,
    then feed it."""
    strategy = get_strategy(name)
    if strategy in (selectivity, sequential):      # the batch engine feeds the sink
        certain = certain_rows_first(ctx, strategy)
        return certain if certain is not None else strategy(ctx)
    answer = strategy(ctx)
    ctx.sink.add(answer)
    return ctx.sink.finish(len(ctx.positive))


def get_strategy(name: str | StrategyName) -> Strategy:
    """The strategy called ``name`` (an :class:`InvalidOptionError` lists the valid ones)."""
    return STRATEGIES[StrategyName(StrategyName.get_value(
        name.value if isinstance(name, StrategyName) else name))]
