"""Sequential evaluation: match the positive items in pattern order (Zhou et al. 5.1).

Algorithm 2 of the paper with three corrections (SEMANTICS A4):

* candidates of groups not yet in a partial match come from one R*-tree search over all
  groups, not one search per group; groups already in it are searched per group within
  the descendant code ranges of their last node (Lemma 2);
* partial matches are grouped by event tuple and a tuple is pruned only when its summed
  probability, an upper bound of any extension's confidence, is below the threshold;
* negations are applied exactly once an entry is complete.

Entries with the same tuple, first instant, last node and last node per group have the
same future, so without negation they are merged (their probabilities add up).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from index.codes import in_ranges
from query.chains import extension_factor
from query.evaluation import Entry, Match, QueryContext

__all__ = ["sequential"]


def sequential(ctx: QueryContext) -> list[Match]:
    """Evaluate ``ctx.pattern`` on ``ctx.index`` item by item; see the module docstring."""
    index = ctx.index
    first_symbol = ctx.positive[0]
    entries = []
    for row in ctx.search(first_symbol, None, (-np.inf, np.inf)):
        forest = index.forests[int(index.event_group[row])]
        for n in index.event_nodes[row]:
            entries.append(Entry((int(row),), (int(n),), float(forest.poi[n])))
    ctx.stats.entries_created += len(entries)
    entries = ctx.prune(_merge(ctx, entries))
    for symbol in ctx.positive[1:]:
        entries = ctx.prune(_merge(ctx, _extend(ctx, entries, symbol)))
    return ctx.finish(entries)


def _extend(ctx: QueryContext, entries: list[Entry], symbol: str) -> list[Entry]:
    index = ctx.index
    out: list[Entry] = []
    other_groups: dict[tuple[int, int], np.ndarray] = {}
    same_group: dict[tuple[int, int, int, int], list[tuple[int, int, float]]] = {}
    for entry in entries:
        t_first = _instant(ctx, entry, 0)
        lo = _instant(ctx, entry, -1) + 1
        hi = t_first + ctx.window
        if lo > hi:
            continue
        last: dict[int, int] = {}
        for r, n in zip(entry.events, entry.nodes):
            last[int(index.event_group[r])] = n
        window = (lo, int(min(hi, np.iinfo(np.int64).max)))
        rows = other_groups.get(window)
        if rows is None:
            rows = ctx.search(symbol, None, window)
            other_groups[window] = rows
        taken = set(entry.events)
        for row in rows:
            g = int(index.event_group[row])
            if g in last or int(row) in taken:
                continue
            forest = index.forests[g]
            for n in index.event_nodes[row]:
                if window[0] <= forest.instant[n] <= window[1]:
                    out.append(Entry(entry.events + (int(row),), entry.nodes + (int(n),),
                                     entry.prob * float(forest.poi[n])))
        for g, a in last.items():
            key = (g, a, window[0], window[1])
            found = same_group.get(key)
            if found is None:
                found = _descendants_in_window(ctx, symbol, g, a, window)
                same_group[key] = found
            for row, n, factor in found:
                if row not in taken:
                    out.append(Entry(entry.events + (row,), entry.nodes + (n,),
                                     entry.prob * factor))
    ctx.stats.entries_created += len(out)
    return out


def _descendants_in_window(ctx: QueryContext, symbol: str, g: int, a: int,
                           window: tuple[int, int]) -> list[tuple[int, int, float]]:
    """Nodes of group ``g`` matching ``symbol`` in ``window`` that descend from node ``a``,
    with the factor each multiplies a chain ending at ``a`` by."""
    index = ctx.index
    forest = index.forests[g]
    ranges = index.scheme.descendant_code_ranges(forest, a, until=window[1])
    found = []
    seen: set[int] = set()
    for code_range in ranges:
        for row in ctx.search(symbol, g, window, code_range):
            if int(row) in seen:
                continue
            seen.add(int(row))
            for n in index.event_nodes[row]:
                if (window[0] <= forest.instant[n] <= window[1]
                        and in_ranges(index.scheme.code(forest, int(n)), ranges)):
                    found.append((int(row), int(n), extension_factor(forest, a, int(n))))
    return found


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
