"""Pattern order entry by entry: the engine the batch engine replaced (Zhou et al. 5.1).

Algorithm 2 of the paper with three corrections (SEMANTICS A4):

* candidates of groups not yet in a partial match come from one R*-tree search over all
  groups, not one search per group; groups already in it are searched per group within
  the descendant code ranges of their last node (Lemma 2);
* partial matches are grouped by event tuple and a tuple is pruned only when its summed
  probability, an upper bound of any extension's confidence, is below the threshold;
* negations are applied exactly once an entry is complete.

Entries with the same tuple, first instant, last node and last node per group have the
same future, so without negation they are merged (their probabilities add up).

Kept as a baseline: bench/bench_batches.py reports the batch engine's speed as a ratio to
it, and tests/query/test_strategies_match_possible_worlds.py holds it to the oracle like
every strategy (``strategy="sequential_entries"``).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from uncertain_cep.query.evaluation.answer import Answer
from uncertain_cep.query.evaluation.context import (
    Entry,
    Match,
    QueryContext,
    StepTimer,
    nodes_between,
)
from uncertain_cep.query.plan.estimates import ItemEstimates

__all__ = ["sequential_entries", "sequential_entry_matches"]


def sequential_entries(ctx: QueryContext) -> Answer:
    """Evaluate ``ctx.pattern`` in pattern order, entry by entry; see the module
    docstring."""
    return Answer.from_matches(sequential_entry_matches(ctx), len(ctx.positive))


def sequential_entry_matches(ctx: QueryContext) -> list[Match]:
    """The entry-by-entry evaluation (one object per entry)."""
    index = ctx.index
    estimates = ItemEstimates(ctx) if ctx.explain else None
    timer = StepTimer(ctx)
    entries = []
    rows = ctx.first_item_rows(ctx.search(ctx.positive[0], None, (-np.inf, np.inf)))
    for row in rows:
        forest = index.forests[int(index.event_group[row])]
        for n in index.event_nodes[row]:
            entries.append(Entry((int(row),), (int(n),), float(forest.poi[n])))
    ctx.stats.entries_created += len(entries)
    entries = ctx.prune(_merge(ctx, entries))
    timer.done({ctx.label(0): 1},
               estimates.expected(0, -np.inf, np.inf) if estimates else None,
               len(rows), len(entries))
    for j, symbol in enumerate(ctx.positive[1:], start=1):
        timer = StepTimer(ctx)
        tuples = len({e.events for e in entries})
        guess = _estimate(ctx, estimates, entries, j) if estimates else None
        made, pairs = _extend(ctx, entries, symbol)
        entries = ctx.prune(_merge(ctx, made), ctx.closed_by([j]))
        timer.done({ctx.label(j): tuples}, guess, pairs, len(entries))
    return ctx.finish(entries)


def _estimate(ctx: QueryContext, estimates: ItemEstimates, entries: list[Entry],
              item: int) -> float:
    """Expected candidates of ``item`` summed over the partial tuples (for EXPLAIN)."""
    spans: dict[tuple[int, ...], list[float]] = {}
    n = len(ctx.positive)
    for e in entries:
        instants = [_instant(ctx, e, k) for k in range(len(e.events))]
        lo, hi = ctx.item_window(instants + [None] * (n - len(instants)), item)
        span = spans.setdefault(e.events, [lo, hi])
        span[0], span[1] = min(span[0], lo), max(span[1], hi)
    return sum(estimates.expected(item, lo, hi) for lo, hi in spans.values() if lo <= hi)


def _extend(ctx: QueryContext, entries: list[Entry], symbol: str
            ) -> tuple[list[Entry], int]:
    """Extend every entry by one item; also count the distinct (partial tuple, event)
    pairs found.

    An entry's window is ``[t_last + 1, t_first + L - r]`` with ``r`` items still to come
    after this one (:meth:`QueryContext.item_window`). Entries sharing a last node share
    the window's start, so their searches are planned once with the latest end among them
    and filtered per entry; all searches of the step then run in one bulk R*-tree call.
    """
    index = ctx.index
    plans = []
    other_end: dict[int, int] = {}                    # window start -> latest end
    same_end: dict[tuple[int, int, int], int] = {}    # (group, last node, start) -> end
    for entry in entries:
        lo = _instant(ctx, entry, -1) + 1
        later = len(ctx.positive) - 1 - len(entry.events)
        hi = int(min(_instant(ctx, entry, 0) + ctx.window - later, np.iinfo(np.int64).max))
        if lo > hi:
            continue
        last: dict[int, int] = {}
        for r, n in zip(entry.events, entry.nodes):
            last[int(index.event_group[r])] = n
        other_end[lo] = max(other_end.get(lo, hi), hi)
        for g, a in last.items():
            key = (g, a, lo)
            same_end[key] = max(same_end.get(key, hi), hi)
        plans.append((entry, (lo, hi), last))
    queries: list[tuple[int | None, tuple[float, float], tuple[int, int] | None]] = []
    other_slot = {}
    for lo, hi in other_end.items():
        other_slot[lo] = len(queries)
        queries.append((None, (lo, hi), None))
    same_slots = {}
    for (g, a, lo), hi in same_end.items():
        ranges = index.scheme.descendant_code_ranges(index.forests[g], a, until=hi)
        same_slots[(g, a, lo)] = (ranges, range(len(queries), len(queries) + len(ranges)))
        queries.extend((g, (lo, hi), r) for r in ranges)
    found = ctx.search_many(symbol, queries)
    descendants: dict[tuple[int, int, int], list[tuple[int, int, int, float]]] = {}
    out: list[Entry] = []
    pairs: set[tuple[tuple[int, ...], int]] = set()
    for entry, (lo, hi), last in plans:
        taken = set(entry.events)
        for row in found[other_slot[lo]]:
            g = int(index.event_group[row])
            if g in last or int(row) in taken:
                continue
            forest = index.forests[g]
            for n in index.event_nodes[row]:
                if lo <= forest.instant[n] <= hi:
                    out.append(Entry(entry.events + (int(row),), entry.nodes + (int(n),),
                                     entry.prob * float(forest.poi[n])))
                    pairs.add((entry.events, int(row)))
        for g, a in last.items():
            key = (g, a, lo)
            below = descendants.get(key)
            if below is None:
                ranges, slots = same_slots[key]
                below = nodes_between(index, g, a, None, (lo, same_end[key]), ranges,
                                      [found[i] for i in slots])
                descendants[key] = below
            for row, n, t, factor in below:
                if t <= hi and row not in taken:
                    out.append(Entry(entry.events + (row,), entry.nodes + (n,),
                                     entry.prob * factor))
                    pairs.add((entry.events, row))
    ctx.stats.entries_created += len(out)
    return out, len(pairs)


def _instant(ctx: QueryContext, entry: Entry, k: int) -> int:
    index = ctx.index
    return int(index.forests[int(index.event_group[entry.events[k]])].instant[entry.nodes[k]])


def _merge(ctx: QueryContext, entries: list[Entry]) -> list[Entry]:
    """Add up entries whose futures coincide (only when the pattern has no negation: the
    negation factor depends on every node's instant)."""
    if ctx.negations:
        return entries
    index = ctx.index
    merged: dict[tuple[object, ...], float] = defaultdict(float)
    keep: dict[tuple[object, ...], Entry] = {}
    for e in entries:
        last: dict[int, int] = {}
        for r, n in zip(e.events, e.nodes):
            last[int(index.event_group[r])] = n
        key = (e.events, _instant(ctx, e, 0), e.nodes[-1], tuple(sorted(last.items())))
        merged[key] += e.prob
        keep.setdefault(key, e)
    return [Entry(keep[k].events, keep[k].nodes, p) for k, p in merged.items()]
