"""What one query's search reads, built lazily and once: the node table (its instants
relative to a base), each item's candidate nodes, the NOT items' nodes, the tuples'
tables, the look-ahead and the bounds' helpers (the batch engine's inputs; the engine
itself, :mod:`~uncertain_cep.query.engine.batch_engine`, is the search over them).
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from uncertain_cep.index.node_table import NodeTable
from uncertain_cep.query.engine.batches import Batch, CandidateNodes, tuple_starts
from uncertain_cep.query.engine.completion import Completion
from uncertain_cep.query.engine.event_room import EventRoom
from uncertain_cep.query.engine.item_windows import every_item_window
from uncertain_cep.query.engine.kernels.instants import NO_TIME, engine_base, relative_table
from uncertain_cep.query.engine.kernels.negation import NegatedNodes
from uncertain_cep.query.engine.kernels.tuples import TupleTable
from uncertain_cep.query.engine.lookahead import CandidateInstants
from uncertain_cep.query.engine.negation_bounds import CertainWeighers
from uncertain_cep.query.engine.reachable_groups import groups_met
from uncertain_cep.query.engine.tuple_batches import (
    TupleBatch,
    event_instants,
    every_tuple_window,
)
from uncertain_cep.query.evaluation.context import QueryContext
from uncertain_cep.query.plan.choosers import ItemWindows
from uncertain_cep.query.plan.estimates import ItemEstimates

__all__ = ["GROUPS_TABLE_SHARE", "QueryInputs", "tuple_item_windows"]

# A query whose candidates meet more of an index's groups than this share reads its whole
# node table (expanding 30% of a shard's groups took 2.2 s, the whole 4.2: about where a
# table kept for the next query starts to pay).
GROUPS_TABLE_SHARE = 0.5


class QueryInputs:
    """One query's inputs to the search (see the module docstring), each built the first
    time a step asks for it."""

    def __init__(self, ctx: QueryContext) -> None:
        self.ctx = ctx
        self.k = len(ctx.positive)
        self._candidates: dict[int, CandidateNodes] = {}
        self._item_rows: dict[int, np.ndarray] = {}
        self._negated_rows: dict[int, np.ndarray] = {}
        # Without Condition 2 every OI of a group is equally likely, so nodes with alike
        # futures may stand for one another when entries are merged.
        self.classes = not ctx.index.built_with_condition2

    @cached_property
    def base(self) -> int:
        """What the engine's instants are relative to (:mod:`~uncertain_cep.query.
        instants`): 0 for most indexes, the earliest instant of one near int64's ends."""
        return engine_base(*self.ctx.time_extent)

    @cached_property
    def table(self) -> NodeTable:
        """The index's node table, its instants relative to :attr:`base`: of the groups
        the query's candidates meet alone where the index reads less for them
        (:mod:`~uncertain_cep.query.engine.reachable_groups`), and they are at most
        :data:`GROUPS_TABLE_SHARE` of its groups (else the whole table, which the index
        keeps for the next query)."""
        index = self.ctx.index
        if not index.tables_by_groups:
            return relative_table(index.node_table, self.base)
        ctx = self.ctx
        groups = groups_met([self.item_rows(j) for j in range(self.k)],
                            [self.negated_rows(j) for j in range(len(ctx.negations))],
                            index.event_group, index.event_t_min, index.event_t_max,
                            ctx.window)
        if len(groups) > GROUPS_TABLE_SHARE * len(index.archive.group_labels):
            return relative_table(index.node_table, self.base)
        return relative_table(index.node_table_of(groups), self.base)

    def item_rows(self, item: int) -> np.ndarray:
        """The archive rows positive item ``item`` may take (one R*-tree search)."""
        found = self._item_rows.get(item)
        if found is None:
            ctx = self.ctx
            found = ctx.search(ctx.positive[item], None, ctx.span)
            if item == 0:
                found = ctx.first_item_rows(found)
            self._item_rows[item] = found
        return found

    def negated_rows(self, j: int) -> np.ndarray:
        """The archive rows NOT item ``j`` (of the negations) may take."""
        found = self._negated_rows.get(j)
        if found is None:
            ctx = self.ctx
            found = self._negated_rows[j] = ctx.search(ctx.negations[j][2], None, ctx.span)
        return found

    @cached_property
    def tuple_table(self) -> TupleTable:
        # (Classes of nodes with alike futures serve only the negation programme.)
        return TupleTable(self.table, self.classes and bool(self.ctx.negations))

    @cached_property
    def negated(self) -> NegatedNodes:
        """Per NOT item, the nodes that may weigh its gap (one R*-tree search each)."""
        ctx, table = self.ctx, self.table
        columns, nodes, instants, weights = [], [], [], []
        for j, (k, _, symbol) in enumerate(ctx.negations):
            found = CandidateNodes.of_rows(table, self.negated_rows(j))
            columns.append(k)
            nodes.append(found.nodes)
            instants.append(found.instants)
            weights.append(1.0 - ctx.pr_rows(symbol, table.row[found.nodes]))
        return NegatedNodes(columns, nodes, instants, weights)

    @cached_property
    def completion(self) -> Completion:
        """What completing tuples needs (:mod:`~uncertain_cep.query.engine.completion`)."""
        ctx = self.ctx
        if not ctx.negations:
            return Completion(self.tuple_table, ctx.window, ctx.theta)
        return Completion(self.tuple_table, ctx.window, ctx.theta, self.certain, self.gaps,
                          self.negated)

    @cached_property
    def room(self) -> EventRoom:
        """The events some positive item may take, for the room its unmatched items
        need (:mod:`~uncertain_cep.query.engine.event_room`)."""
        table = self.table
        rows = np.unique(np.concatenate([table.row[self.candidates(j).nodes]
                                         for j in range(self.k)]))
        return EventRoom(rows, *event_instants(table, rows))

    @cached_property
    def certain(self) -> CertainWeighers | None:
        """Per NOT item, the events that may weigh it, for the bound from the events
        certainly inside its gap (:mod:`~uncertain_cep.query.engine.negation_bounds`)."""
        if not self.ctx.negations:
            return None
        return CertainWeighers.of(self.table, self.negated)

    @cached_property
    def gaps(self) -> np.ndarray:
        """Per NOT item, the positive item before its gap (what merging must respect)."""
        return np.unique(np.array([k for k, _, _ in self.ctx.negations], dtype=np.int64))

    @cached_property
    def estimates(self) -> ItemEstimates:
        return ItemEstimates(self.ctx)

    def candidates(self, item: int) -> CandidateNodes:
        """The nodes item ``item`` may take, sorted by instant (one R*-tree search)."""
        found = self._candidates.get(item)
        if found is None:
            found = self._candidates[item] = CandidateNodes.of_rows(self.table,
                                                                    self.item_rows(item))
        return found

    @cached_property
    def lookahead(self) -> CandidateInstants | None:
        """Every item's candidate instants, which narrow each step's windows to what a
        completion can reach (:mod:`~uncertain_cep.query.engine.lookahead`); only patterns of
        three or more items have items between a step and its neighbours to look at."""
        if self.k < 3:
            return None
        return CandidateInstants([self.candidates(j).instants for j in range(self.k)])

    def attribute(self, events: np.ndarray) -> np.ndarray:
        """Per row of an events matrix, the product of its matched events' Pr(S | e)."""
        out = np.ones(len(events))
        for c, symbol in enumerate(self.ctx.positive):
            matched = events[:, c] >= 0
            out[matched] *= self.ctx.pr_rows(symbol, events[matched, c])
        return out


def tuple_item_windows(engine: QueryInputs, batch: Batch | TupleBatch) -> ItemWindows:
    """Per tuple of a batch in tuple order (or of tuples): its first entry, whether each
    item is matched, and each item's window over all the tuple's entries (from the
    earliest instants of its matched items to the latest), with infinities for "no
    bound"."""
    if isinstance(batch, TupleBatch):
        starts = np.arange(len(batch), dtype=np.int64)
        matched, a, b = every_tuple_window(batch, engine.ctx.window)
    else:
        table = engine.table
        starts = tuple_starts(batch.events)
        matched = batch.nodes[starts] >= 0
        instants = np.where(batch.nodes >= 0, table.instant[np.maximum(batch.nodes, 0)], 0)
        earliest = np.minimum.reduceat(instants, starts, axis=0)
        latest = np.maximum.reduceat(instants, starts, axis=0)
        a, b = every_item_window(earliest, latest, matched, engine.ctx.window)
    # In the index's instants, as the estimates' statistics are.
    lo = np.where(a <= -NO_TIME, -np.inf, a + float(engine.base))
    hi = np.where(b >= NO_TIME, np.inf, b + float(engine.base))
    return ItemWindows(starts, matched, lo, hi)
