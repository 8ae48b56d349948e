"""What every index-based strategy shares: the query context, pruning, and final answers.

Strategies build *entries*: a tuple of events (archive rows, one per positive item matched
so far) with one OI-tree node each, and the probability that the groups' OIs pass through
those nodes. The confidence of a tuple is the sum over its entries (SEMANTICS A4): one row
per tuple, never one per timestamp assignment.

Pruning is exact: a partial tuple is dropped only when the sum over all its entries,
times the product of its events' Pr(S | e), is below the threshold. That sum bounds the
confidence of every full tuple extending it (the full match implies the partial one).

Negations are applied when an entry is complete, exactly: every event ``x`` outside the
tuple with a possible instant strictly inside a negation's gap weights the OIs of its
group by ``1 - Pr(C | x)`` where it stands in the gap
(:mod:`uncertain_cep.query.evaluation.chains`).
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from uncertain_cep.durations import Duration
from uncertain_cep.errors import QueryError
from uncertain_cep.index.event_index import EventIndex
from uncertain_cep.index.forests.codes import in_ranges
from uncertain_cep.kernel_cache import compile_seconds
from uncertain_cep.query.engine.kernels.instants import effective_window
from uncertain_cep.query.evaluation.answer import Match
from uncertain_cep.query.evaluation.answer_sinks import AllRows, AnswerSink, TopRows
from uncertain_cep.query.evaluation.chains import (
    chain_probability,
    extension_factor,
    weighted_chain_probability,
)
from uncertain_cep.query.evaluation.stats import QueryStats, StepStats
from uncertain_cep.query.language.patterns import SequencePattern
from uncertain_cep.query.language.symbols import check_symbols, symbol_box, symbol_probability

__all__ = ["TOLERANCE", "Entry", "QueryContext", "StepTimer", "nodes_between",
           "raise_threshold"]

TOLERANCE = 1e-9


@dataclass(frozen=True)
class Entry:
    """A partial or complete match: events (rows) in pattern order, their nodes, and the
    probability that the OIs pass through those nodes. A strategy matching items out of
    order marks the items not yet matched by ``-1`` in ``events`` and ``nodes``."""

    events: tuple[int, ...]
    nodes: tuple[int, ...]
    prob: float


class StepTimer:
    """Records one step of a strategy in :attr:`QueryStats.steps`: the items matched (and
    by how many partial tuples), estimated and actual candidates (distinct pairs of a
    partial tuple and an event matching its item in its window), entries kept after
    pruning, range queries issued and seconds."""

    def __init__(self, ctx: QueryContext) -> None:
        self.ctx = ctx
        self.started = time.perf_counter()
        self.queries = ctx.stats.range_queries
        self.created = ctx.stats.entries_created

    def done(self, items: dict[str, int], estimated: float | None, candidates: int,
             kept: int) -> None:
        stats = self.ctx.stats
        stats.steps.append(StepStats(
            step=len(stats.steps) + 1, items=items,
            estimated=None if estimated is None else round(estimated, 3),
            candidates=candidates, created=stats.entries_created - self.created,
            kept=kept, range_queries=stats.range_queries - self.queries,
            seconds=round(time.perf_counter() - self.started, 6)))


class QueryContext:
    """A pattern bound to an index: thresholds, symbol probabilities and search boxes."""

    def __init__(self, index: EventIndex, pattern: SequencePattern,
                 explain: bool = False) -> None:
        if isinstance(pattern.within, Duration):
            # Bound once where the text is at hand, so that an error can point at WITHIN.
            raise QueryError(f"WITHIN {pattern.within} has a time unit: bind the pattern to "
                             "the index first (uncertain_cep.query.language.parse.bind_query)")
        check_symbols(index.archive, pattern)
        # Strategies that do not need estimates compute them only for EXPLAIN.
        self.explain = explain
        self.index = index
        self.pattern = pattern
        self.theta = pattern.confidence if pattern.confidence is not None else 0.0
        # The index's earliest and latest feasible instants (Python ints: no overflow).
        layout = index.layout
        self.time_extent = ((int(layout.t_min.min()), int(layout.t_max.max()))
                            if len(layout.t_min) else (0, 0))
        # A window of at least the archive's span constrains nothing: infinite, so every
        # finite window the engines add to instants is below the span
        # (query/engine/kernels/instants.py).
        self.window = effective_window(pattern.window,
                                       self.time_extent[1] - self.time_extent[0])
        self.positive = [pattern.items[i].symbol for i in pattern.positive_items]
        self.negations = pattern.negations
        self.stats = QueryStats(weighted=index.archive.instant_weights is not None)
        # The archive's event ids where the caller makes an answer table of the answer:
        # the engine may make the rows' tuples of ids while it waits (answer.with_ids).
        self.table_ids: np.ndarray | None = None
        # Where the answer rows go as they are found (query/evaluation/answer_sinks.py):
        # the best LIMIT rows, else every row; a caller may give another before the
        # search (a budget, a count).
        self.sink: AnswerSink = (TopRows(pattern.limit, index.archive.event_ids)
                                 if pattern.limit is not None else AllRows(None))
        self._started = time.perf_counter()
        self._compiling_before = compile_seconds()
        self._prob: dict[str, np.ndarray] = {}
        self._prob_rows: dict[str, np.ndarray] = {}
        self._negation_cache: dict[tuple[object, ...], float] = {}
        self._gap_rows: dict[tuple[str, int, int], np.ndarray] = {}
        self.boxes = {name: symbol_box(index.archive, pattern.symbol(name))
                      for name in {it.symbol for it in pattern.items}}
        # A time slice of the Spark engine answers only for the tuples whose first event
        # has its earliest feasible instant in ``anchors`` ([lo, hi); None: any), and
        # every event such a tuple meets (matched or in a negation's gap) has an
        # instant in ``span``, where candidates are searched.
        self.anchors: tuple[int, int] | None = None
        self.span: tuple[float, float] = (-math.inf, math.inf)

    def label(self, item: int) -> str:
        """How EXPLAIN names positive item ``item``: its symbol and 1-based position."""
        return f"{self.positive[item]}@{self.pattern.positive_items[item] + 1}"

    def first_item_rows(self, rows: np.ndarray) -> np.ndarray:
        """The ``rows`` the first positive item may take: those anchored in
        :attr:`anchors` (all without)."""
        if self.anchors is None:
            return rows
        t_min = self.index.layout.t_min[rows]
        return rows[(t_min >= self.anchors[0]) & (t_min < self.anchors[1])]

    def closed_by(self, items: Iterable[int]) -> list[int]:
        """Negations (indices into :attr:`negations`) next to one of the positive
        ``items``: the ones a step matching those items may close."""
        near = set(items)
        return [j for j, (k, _, _) in enumerate(self.negations) if k in near or k + 1 in near]

    def pr(self, symbol: str) -> np.ndarray:
        """Pr(symbol | e) for every row, computed once per query."""
        p = self._prob.get(symbol)
        if p is None:
            p = symbol_probability(self.index.archive, self.pattern.symbol(symbol))
            self._prob[symbol] = p
        return p

    def pr_rows(self, symbol: str, rows: np.ndarray) -> np.ndarray:
        """Pr(symbol | e) for the given rows, computed only for rows not asked before (a
        selective query on a large archive touches few rows)."""
        full = self._prob.get(symbol)
        if full is not None:
            return full[rows]
        known = self._prob_rows.get(symbol)
        if known is None:
            known = self._prob_rows[symbol] = np.full(self.index.archive.n_events, np.nan)
        values = known[rows]
        missing = np.isnan(values)
        if missing.any():
            fresh = symbol_probability(self.index.archive, self.pattern.symbol(symbol),
                                       rows[missing])
            known[rows[missing]] = fresh
            values[missing] = fresh
        return values

    def search(self, symbol: str, group: int | None, time: tuple[float, float],
               codes: tuple[int, int] | None = None) -> np.ndarray:
        """Rows of the R*-tree box search whose Pr(symbol | e) is positive."""
        return self.search_many(symbol, [(group, time, codes)])[0]

    def search_many(self, symbol: str, queries: Sequence[tuple[int | None,
                                                               tuple[float, float],
                                                               tuple[int, int] | None]]
                    ) -> list[np.ndarray]:
        """:meth:`search` for many boxes at once (one bulk R*-tree call)."""
        self.stats.range_queries += len(queries)
        out = []
        for rows in self.index.search_many(queries, self.boxes[symbol]):
            rows = rows[self.pr_rows(symbol, rows) > 0]
            self.stats.candidates += len(rows)
            out.append(rows)
        return out

    def attribute_probability(self, events: Sequence[int]) -> float:
        p = 1.0
        for row, sym in zip(events, self.positive):
            if row >= 0:
                p *= float(self.pr(sym)[row])
        return p

    def item_window(self, instants: Sequence[int | None], i: int) -> tuple[float, float]:
        """The instants positive item ``i`` can take given the matched items' ``instants``
        (None: not matched): strictly between its matched neighbours with room for the
        items between, and within the window of the matched items with room for the items
        before and after (SEMANTICS A4 conditions 1 and 2).

        >>> ctx = QueryContext.__new__(QueryContext); ctx.window = 10
        >>> ctx.item_window([3, None, None, 9], 1), ctx.item_window([None, 5, None], 0)
        ((4, 7), (-4, 4))
        """
        n = len(instants)
        lo, hi = -math.inf, math.inf
        matched = [k for k, t in enumerate(instants) if t is not None]
        for k in matched:
            t = instants[k]
            assert t is not None
            if k < i:
                lo = max(lo, t + (i - k))
            elif k > i:
                hi = min(hi, t - (k - i))
        if self.window != math.inf and matched:
            first, last = instants[matched[0]], instants[matched[-1]]
            assert first is not None and last is not None
            lo = max(lo, last + (n - 1 - matched[-1]) - self.window + i)
            hi = min(hi, first - matched[0] + self.window - (n - 1 - i))
        return lo, hi

    def passes(self, value: float) -> bool:
        return value >= self.theta - TOLERANCE and value > 0

    def prune(self, entries: list[Entry], closed: Sequence[int] = ()) -> list[Entry]:
        """Keep the entries whose tuple's summed bound reaches the threshold.

        ``closed`` lists the negations (indices into :attr:`negations`) whose two neighbours
        were matched by the step that made ``entries``: their exact factor is applied to
        the bound now (any later node only lowers the weighted sum, so this stays an upper
        bound of every extension's confidence).
        """
        if self.theta <= TOLERANCE:
            return entries
        total: dict[tuple[int, ...], float] = defaultdict(float)
        for e in entries:
            total[e.events] += e.prob * (self.negation_factor(e, closed) if closed else 1.0)
        keep = {ev for ev, p in total.items()
                if p * self.attribute_probability(ev) >= self.theta - TOLERANCE}
        self.stats.tuples_pruned += len(total) - len(keep)
        return [e for e in entries if e.events in keep]

    def finish(self, entries: Iterable[Entry]) -> list[Match]:
        """Aggregate complete entries into answer rows (negations applied exactly)."""
        index = self.index
        by_tuple: dict[tuple[int, ...], list[float]] = {}
        for e in entries:
            p = e.prob * self.negation_factor(e) if self.negations else e.prob
            if p <= 0:
                continue
            forest0 = index.forests[int(index.event_group[e.events[0]])]
            forest1 = index.forests[int(index.event_group[e.events[-1]])]
            t0 = int(forest0.instant[e.nodes[0]])
            t1 = int(forest1.instant[e.nodes[-1]])
            acc = by_tuple.get(e.events)
            if acc is None:
                by_tuple[e.events] = [p, t0, t1]
            else:
                acc[0] += p
                acc[1] = min(acc[1], t0)
                acc[2] = max(acc[2], t1)
        out = []
        for events, (total, first, last) in by_tuple.items():
            conf = total * self.attribute_probability(events)
            if self.passes(conf):
                out.append(Match(events, min(conf, 1.0), int(first), int(last)))
        self.record_time()
        return out

    def record_time(self) -> None:
        """Record in the counters the seconds since this context was made (the query's
        time, as EXPLAIN and ``res.stats`` report it), less those spent compiling kernels
        meanwhile (their first use on a machine: :mod:`uncertain_cep.kernel_cache`), which
        are recorded apart."""
        compiling = compile_seconds() - self._compiling_before
        self.stats.compile_seconds = compiling
        self.stats.seconds = max(0.0, time.perf_counter() - self._started - compiling)

    def negation_factor(self, entry: Entry, gaps: Sequence[int] | None = None) -> float:
        """P(no negated event in its gap | the entry's nodes), from the weighted DP, over
        the negations ``gaps`` (indices into :attr:`negations`; default all). A negation
        whose neighbours are not both matched is skipped.

        Results are cached per group on the weights clipped to each event's own instants,
        so entries whose gaps differ only where no weighted event can be share the work.
        """
        index = self.index
        instants = [int(index.forests[int(index.event_group[r])].instant[n]) if r >= 0
                    else None for r, n in zip(entry.events, entry.nodes)]
        in_tuple = set(entry.events)
        weights: dict[int, dict[int, list[tuple[int, int, float]]]] = defaultdict(
            lambda: defaultdict(list))
        chosen = self.negations if gaps is None else [self.negations[j] for j in gaps]
        for k, _, symbol in chosen:
            if k + 1 >= len(instants):
                continue  # a prefix that ends at k
            t0, t1 = instants[k], instants[k + 1]
            if t0 is None or t1 is None:
                continue
            a, b = t0 + 1, t1 - 1
            if a > b:
                continue
            q = self.pr(symbol)
            found = self._gap_rows.get((symbol, a, b))
            if found is None:
                found = self._gap_rows[(symbol, a, b)] = self.search(symbol, None, (a, b))
            for x in found:
                if int(x) in in_tuple:
                    continue
                lo, hi = index.event_time_range(int(x))
                clipped = (max(a, lo), min(b, hi))
                if clipped[0] <= clipped[1]:
                    g = int(index.event_group[x])
                    weights[g][int(index.event_pos[x])].append((*clipped, 1.0 - float(q[x])))
        if not weights:
            return 1.0
        chains: dict[int, list[int]] = defaultdict(list)
        for r, n in zip(entry.events, entry.nodes):
            if r >= 0:
                chains[int(index.event_group[r])].append(int(n))
        factor = 1.0
        for g, w in weights.items():
            chain = tuple(chains.get(g, ()))
            key = (g, chain, tuple(sorted((e, tuple(ws)) for e, ws in w.items())))
            ratio = self._negation_cache.get(key)
            if ratio is None:
                forest = index.forests[g]
                ratio = weighted_chain_probability(forest, chain, w)
                if chain:
                    ratio /= chain_probability(forest, chain)
                self._negation_cache[key] = ratio
            factor *= ratio
        return factor


def nodes_between(index: EventIndex, g: int, before: int | None, after: int | None,
                  window: Sequence[float], ranges: list[tuple[int, int]],
                  hits: Iterable[np.ndarray]) -> list[tuple[int, int, int, float]]:
    """Nodes of group ``g`` among the rows of R*-tree searches ``hits`` that an OI passes
    between node ``before`` and node ``after`` (None: no bound on that side), within
    ``window``: ``(row, node, instant, factor)``, the factor being what inserting the node
    between the two multiplies the group's chain probability by
    (``ext(before, n) * ext(n, after) / ext(before, after)``). ``ranges`` are those nodes'
    code ranges, exact for instants in the window; each node is checked against them."""
    forest = index.forests[g]
    scheme = index.scheme
    base = extension_factor(forest, before, after) if after is not None else 1.0
    out = []
    seen: set[int] = set()
    for rows in hits:
        for row in rows:
            if int(row) in seen:
                continue
            seen.add(int(row))
            for m in index.event_nodes[row]:
                m = int(m)
                t = int(forest.instant[m])
                if not (window[0] <= t <= window[1]
                        and in_ranges(scheme.code(forest, m), ranges)):
                    continue
                factor = extension_factor(forest, before, m)
                if after is not None:
                    factor *= extension_factor(forest, m, after) / base
                out.append((int(row), m, t, factor))
    return out


def raise_threshold(ctx: QueryContext) -> None:
    """Raise the context's pruning threshold to what its sink now needs (a top-k sink's
    k-th confidence), recording the rise for EXPLAIN: rows below it can no longer be
    answers, so the search prunes them as it prunes rows below CONFIDENCE."""
    floor = ctx.sink.floor
    if floor > ctx.theta:
        ctx.theta = floor
        ctx.stats.threshold_rises.append((ctx.stats.entries_created, floor))
