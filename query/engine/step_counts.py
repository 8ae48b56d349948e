"""EXPLAIN's line per depth of the search: the items each step matched, its estimated
and actual candidates, the entries created and kept, its range queries, seconds and
access path (the batch engine counts, this module keeps the lines).
"""

from __future__ import annotations

import time

from uncertain_cep.query.evaluation.context import QueryContext
from uncertain_cep.query.evaluation.stats import StepStats

__all__ = ["ACCESS_PATH", "AS_TUPLES", "BY_CODE", "StepCounter"]

# A step's access path, with the symbols whose candidates it searched.
ACCESS_PATH = "{search} of the box of {symbols}, then nodes by instant"
# ... and where a window held many candidates, a group's nodes below (or above) the
# entry's matched node by code range (query/engine/kernels/pairs.py).
BY_CODE = " (around the group's matched node by code range: {entries:,} entries)"
# ... and where tuples held many entries each, their events in the window, one programme
# per new tuple (query/engine/kernels/tuples.py).
AS_TUPLES = " (as tuples, events by instant: {tuples:,} tuples)"


class StepCounter:
    """Per depth of the search, its :class:`StepStats`, the symbols its steps searched,
    the entries that took candidates by code range and the tuples extended as tuples."""

    def __init__(self, ctx: QueryContext) -> None:
        self.ctx = ctx
        self._steps: dict[int, StepStats] = {}
        self._symbols: dict[int, list[str]] = {}
        self._code_entries: dict[int, int] = {}
        self._tuple_entries: dict[int, int] = {}

    def step(self, depth: int) -> StepStats:
        """Depth ``depth``'s line, made empty the first time."""
        step = self._steps.get(depth)
        if step is None:
            step = self._steps[depth] = StepStats(depth + 1, {}, None, 0, 0, 0, 0, 0.0)
        return step

    def in_order(self) -> list[StepStats]:
        """The lines, by depth."""
        return [self._steps[d] for d in sorted(self._steps)]

    def count(self, items: dict[int, int], depth: int, estimated: float | None,
              created: int, found: int, kept: int, started: float, queries_before: int,
              by_code: int, as_tuples: int = 0) -> None:
        """A step's counters (``items``: the tuples extended by each item; ``by_code``:
        its entries that took candidates by code range; ``as_tuples``: how many of its
        tuples went as tuples), added to its depth's line."""
        ctx = self.ctx
        step = self.step(depth)
        for item, tuples in items.items():
            label = ctx.label(item)
            step.items[label] = step.items.get(label, 0) + tuples
        if estimated is not None:
            step.estimated = round((step.estimated or 0.0) + estimated, 3)
        step.candidates += found
        step.created += created
        step.kept += kept
        step.range_queries += ctx.stats.range_queries - queries_before
        step.seconds += time.perf_counter() - started
        symbols = self._symbols.setdefault(depth, [])
        for item in items:
            if ctx.positive[item] not in symbols:
                symbols.append(ctx.positive[item])
        coded = self._code_entries[depth] = self._code_entries.get(depth, 0) + by_code
        tupled = self._tuple_entries[depth] = (self._tuple_entries.get(depth, 0)
                                               + as_tuples)
        # An index scans its events' box columns for a span it mostly covers, else
        # searches its R*-tree (a sharded one opened side by side, each shard's:
        # index/shards/merge.py).
        search = ctx.index.search_access(ctx.span)
        step.access = ACCESS_PATH.format(search=search, symbols=", ".join(symbols))
        if coded:
            step.access += BY_CODE.format(entries=coded)
        if tupled:
            step.access += AS_TUPLES.format(tuples=tupled)
