"""A step's batch cut into pieces of bounded size and extended piece by piece: at most
``limit`` (entry, candidate) pairs at a time, cut between tuples, a tuple with more in
passes over its candidates, one event with more in chunks of the tuple's entries (merged
together before pruning, which must see whole new tuples). With a threshold, extension
screens new tuples by the bound they will have (docs/design.md, The batch engine).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np

from uncertain_cep.query.engine.batches import (
    Batch,
    CandidateNodes,
    Screen,
    candidate_passes,
    extend,
    merge,
    split_by_tuples,
    weight_cuts,
    window_bounds,
)
from uncertain_cep.query.engine.inputs import QueryInputs
from uncertain_cep.query.engine.item_windows import item_windows
from uncertain_cep.query.evaluation import interrupts
from uncertain_cep.query.evaluation.context import TOLERANCE

__all__ = ["BatchPieces"]

# Screening adds up a new tuple's entries in another order than pruning will after
# merging them: it keeps tuples whose bound falls short of the threshold by rounding.
_SUM_ORDER_MARGIN = 1e-12


class BatchPieces:
    """Extension of a query's batches in bounded pieces (see the module docstring);
    ``by_code`` counts the entries that took candidates by code range."""

    def __init__(self, inputs: QueryInputs, limit: int) -> None:
        self.inputs = inputs
        self.limit = limit
        self.by_code = 0

    def grown(self, batch: Batch, item: int, depth: int, start: np.ndarray,
               stop: np.ndarray, candidates: CandidateNodes
               ) -> Iterator[tuple[Batch, np.ndarray | None, int]]:
        """The batch extended by ``item``, in pieces of bounded size, each with the
        boundaries of its tuples' extensions
        (:func:`~uncertain_cep.query.engine.batches.extend`; None from nothing, or for
        one tuple's pieces put together) and the entries created."""
        table = self.inputs.table
        if depth == 0:
            # From nothing: one entry per candidate node, cut between events.
            nodes = candidates.nodes[np.argsort(table.row[candidates.nodes], kind="stable")]
            rows = table.row[nodes][:, None]
            for piece in split_by_tuples(rows, np.ones(len(nodes), np.int64), self.limit):
                grown = self._from_nodes(nodes[piece], item)
                yield grown, None, len(grown)
            return
        for units in self.pieces(batch, item, start, stop, candidates):
            if len(units) == 1:
                part, some, lo, hi = units[0]
                grown, segments, made, by_code = extend(table, part, item, some, lo, hi,
                                                        self._screen(item))
                self.by_code += by_code
                yield grown, segments, made
                continue
            # Chunks of one tuple's entries, extended by one event: merged chunk by chunk
            # (merging is associative), then together by the caller before pruning (no
            # chunk holds a new tuple whole, so none can be screened alone).
            parts, made = [], 0
            for part, some, lo, hi in units:
                grown, segments, valid, by_code = extend(table, part, item, some, lo, hi)
                self.by_code += by_code
                made += valid
                parts.append(merge(table, grown, segments, item, self.inputs.gaps,
                                   self.inputs.classes))
            yield Batch.concat(parts), None, made

    def _screen(self, item: int) -> Screen | None:
        """What extending by ``item`` screens new tuples by: the pruning bound they will
        have once merged (:func:`~uncertain_cep.query.engine.batches.extend`), with a margin for
        adding up their entries in another order; None without a threshold."""
        ctx = self.inputs.ctx
        if ctx.theta <= TOLERANCE:
            return None
        symbol = ctx.positive[item]
        return Screen(self.inputs.attribute,
                      lambda found: ctx.pr_rows(symbol, self.inputs.table.row[found.nodes]),
                      ctx.theta - TOLERANCE - _SUM_ORDER_MARGIN)

    def pieces(self, batch: Batch, item: int, start: np.ndarray, stop: np.ndarray,
                candidates: CandidateNodes
                ) -> Iterator[list[tuple[Batch, CandidateNodes, np.ndarray, np.ndarray]]]:
        """The batch cut between tuples into pieces of at most ``limit`` (entry,
        candidate) pairs, each with its candidates and windows. A tuple with more pairs
        than that comes in passes over its candidates by event
        (:func:`~uncertain_cep.query.engine.batches.candidate_passes`), and one event
        with more pairs than that in chunks of the tuple's entries: such chunks come
        together in one list, since only together do they hold whole new tuples
        (pruning must see them all)."""
        table = self.inputs.table
        weights = np.maximum(stop - start, 0)
        for piece in split_by_tuples(batch.events, weights, self.limit):
            interrupts.check()
            part = batch.take(piece)
            if int(weights[piece].sum()) <= self.limit:
                yield [(part, candidates, start[piece], stop[piece])]
                continue
            windows = item_windows(table, part, item, self.inputs.ctx.window)
            for some in candidate_passes(table, candidates, start[piece], stop[piece],
                                         self.limit):
                lo, hi = window_bounds(some, *windows)
                pairs = np.maximum(hi - lo, 0)
                if int(pairs.sum()) <= self.limit:
                    yield [(part, some, lo, hi)]
                    continue
                cuts = weight_cuts(pairs, self.limit).tolist()
                yield [(part.take(slice(a, b)), some, lo[a:b], hi[a:b])
                       for a, b in itertools.pairwise(cuts)]

    def _from_nodes(self, nodes: np.ndarray, item: int) -> Batch:
        table = self.inputs.table
        events = np.full((len(nodes), self.inputs.k), -1, dtype=np.int64)
        chosen = np.full((len(nodes), self.inputs.k), -1, dtype=np.int64)
        events[:, item] = table.row[nodes]
        chosen[:, item] = nodes
        return Batch(events, chosen, table.poi[nodes].copy())
