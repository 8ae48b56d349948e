"""Selectivity order entry by entry: the engine the batch engine replaced (Zhou et al. 5.2).

One object per partial match (:class:`~uncertain_cep.query.evaluation.context.Entry`): the
first item is the positive item with the fewest expected candidates over the whole time
domain (:mod:`uncertain_cep.query.plan.estimates`); then, for every partial match, each
unmatched item's time window is narrowed by the matched items around it
(:meth:`QueryContext.item_window`), its expected candidates are re-estimated, and the
partial match is extended by the cheapest item, forward, backward or in the middle.
Partial matches of one tuple of events all take the same item (pruning sums a tuple's
entries); different tuples may take different items in the same step.

Where the new event's group already has events in the partial match, its node must lie on
an OI path from the group's last node before the item (``N+``) to its first node after it
(``N-``): the R*-tree is searched within the descendant code ranges of ``N+`` (Lemma 2), the
ancestor code ranges of ``N-`` (Lemma 3), or their intersection (section 5.2, condition 3),
and each node is checked against both exactly. Inserting node ``n`` between ``N+`` and
``N-`` multiplies the group's chain probability by
``ext(N+, n) * ext(n, N-) / ext(N+, N-)``
(:func:`~uncertain_cep.query.evaluation.chains.extension_factor`).

Kept as a baseline: bench/bench_batches.py reports the batch engine's speed as a ratio to
it, and tests/query/test_strategies_match_possible_worlds.py holds it to the oracle like
every strategy (``strategy="selectivity_entries"``).
"""

from __future__ import annotations

import math
from collections import defaultdict

from uncertain_cep.index.forests.codes import merge_ranges
from uncertain_cep.query.evaluation.answer import Answer
from uncertain_cep.query.evaluation.context import (
    Entry,
    Match,
    QueryContext,
    StepTimer,
    nodes_between,
)
from uncertain_cep.query.plan.estimates import ItemEstimates

__all__ = ["selectivity_entries", "selectivity_entry_matches"]

_Key = tuple[int, int, int]   # (group, node before or -1, node after or -1)


def selectivity_entries(ctx: QueryContext) -> Answer:
    """Evaluate ``ctx.pattern`` rarest item first, entry by entry; see the module
    docstring."""
    return Answer.from_matches(selectivity_entry_matches(ctx), len(ctx.positive))


def selectivity_entry_matches(ctx: QueryContext) -> list[Match]:
    """The entry-by-entry evaluation (one object per entry)."""
    n = len(ctx.positive)
    estimates = ItemEstimates(ctx)
    state = _State(ctx, estimates)
    unmatched = tuple([-1] * n)
    first = min(range(n), key=lambda i: (estimates.expected(i, -math.inf, math.inf), i))
    entries = [Entry(unmatched, unmatched, 1.0)]
    for _ in range(n):
        entries = state.step(entries, first)
        first = -1
        if not entries:
            break
    return ctx.finish(entries)


class _State:
    def __init__(self, ctx: QueryContext, estimates: ItemEstimates) -> None:
        self.ctx = ctx
        self.index = ctx.index
        self.estimates = estimates
        self.n = len(ctx.positive)
        self._choice: dict[tuple[object, ...], tuple[int, float]] = {}

    # ------------------------------------------------------------ one step
    def step(self, entries: list[Entry], forced: int) -> list[Entry]:
        """Extend every entry by the cheapest unmatched item of its tuple (``forced`` when
        >= 0)."""
        ctx = self.ctx
        timer = StepTimer(ctx)
        tuples: dict[tuple[int, ...], list[tuple[Entry, tuple[int | None, ...]]]] = (
            defaultdict(list))
        for entry in entries:
            tuples[entry.events].append((entry, self.instants(entry)))
        by_item: dict[int, list[tuple[Entry, tuple[int | None, ...], float, float]]] = (
            defaultdict(list))
        estimated = 0.0
        for members in tuples.values():
            item, guess = self.choose([inst for _, inst in members], forced)
            estimated += guess
            for entry, instants in members:
                lo, hi = ctx.item_window(instants, item)
                if lo <= hi:
                    by_item[item].append((entry, instants, lo, hi))
        out: list[Entry] = []
        matched = 0
        for item, plans in sorted(by_item.items()):
            made, found = self.extend(item, plans)
            out.extend(made)
            matched += found
        ctx.stats.entries_created += len(out)
        out = ctx.prune(self.merge(out), ctx.closed_by(by_item))
        timer.done({ctx.label(i): len({e.events for e, *_ in p})
                    for i, p in sorted(by_item.items())}, estimated, matched, len(out))
        return out

    def instants(self, entry: Entry) -> tuple[int | None, ...]:
        index = self.index
        return tuple(int(index.forests[int(index.event_group[r])].instant[m]) if r >= 0
                     else None for r, m in zip(entry.events, entry.nodes))

    def choose(self, members: list[tuple[int | None, ...]], forced: int
               ) -> tuple[int, float]:
        """The unmatched item of a partial tuple with the fewest expected candidates, and
        that estimate. One choice per tuple, never per entry: pruning sums a tuple's
        entries, which bounds its extensions only if they all extend it the same way.

        Each item's window is taken over the tuple's entries at once: the windows of the
        earliest and of the latest instants of every matched item bound all of theirs.
        """
        n = self.n
        if forced >= 0:
            return forced, self.estimates.expected(forced, -math.inf, math.inf)
        earliest = list(members[0])
        latest = list(members[0])
        for inst in members[1:]:
            for k, t in enumerate(inst):
                if t is not None:
                    earliest[k] = min(earliest[k], t)  # type: ignore[type-var]
                    latest[k] = max(latest[k], t)  # type: ignore[type-var]
        key = (tuple(earliest), tuple(latest))
        hit = self._choice.get(key)
        if hit is None:
            best: tuple[int, float] | None = None
            for i in range(n):
                if earliest[i] is not None:
                    continue
                lo = self.ctx.item_window(earliest, i)[0]
                hi = self.ctx.item_window(latest, i)[1]
                guess = self.estimates.expected(i, lo, hi) if lo <= hi else 0.0
                if best is None or guess < best[1]:
                    best = (i, guess)
            assert best is not None
            hit = self._choice[key] = best
        return hit

    # ------------------------------------------------------------ extension
    def extend(self, item: int, plans: list[tuple[Entry, tuple[int | None, ...], float, float]]
               ) -> tuple[list[Entry], int]:
        ctx, index = self.ctx, self.index
        symbol = ctx.positive[item]
        other: dict[tuple[float, float], int] = {}
        same: dict[_Key, list[float]] = {}
        per_plan = []
        for entry, _, lo, hi in plans:
            keys = self.group_keys(entry, item)
            other.setdefault((lo, hi), len(other))
            for key in keys:
                span = same.setdefault(key, [lo, hi])
                span[0], span[1] = min(span[0], lo), max(span[1], hi)
            per_plan.append(keys)
        queries: list[tuple[int | None, tuple[float, float], tuple[int, int] | None]] = [
            (None, window, None) for window in other]
        slots: dict[_Key, tuple[list[tuple[int, int]], range]] = {}
        for key, (lo, hi) in same.items():
            ranges = self.code_ranges(key, lo, hi)
            slots[key] = (ranges, range(len(queries), len(queries) + len(ranges)))
            queries.extend((key[0], (lo, hi), r) for r in ranges)
        found = ctx.search_many(symbol, queries)
        if item == 0:
            found = [ctx.first_item_rows(rows) for rows in found]
        below_of: dict[_Key, list[tuple[int, int, int, float]]] = {}
        out: list[Entry] = []
        pairs: set[tuple[tuple[int, ...], int]] = set()
        for (entry, _, lo, hi), keys in zip(plans, per_plan):
            taken = set(entry.events)
            groups = {k[0] for k in keys}
            for row in found[other[(lo, hi)]]:
                g = int(index.event_group[row])
                if g in groups or int(row) in taken:
                    continue
                forest = index.forests[g]
                for m in index.event_nodes[row]:
                    if lo <= forest.instant[m] <= hi:
                        out.append(self.extended(entry, item, int(row), int(m),
                                                 float(forest.poi[m])))
                        pairs.add((entry.events, int(row)))
            for key in keys:
                below = below_of.get(key)
                if below is None:
                    ranges, where = slots[key]
                    g, before, after = key
                    below = below_of[key] = nodes_between(
                        index, g, before if before >= 0 else None,
                        after if after >= 0 else None, same[key], ranges,
                        [found[i] for i in where])
                for row, m, t, factor in below:
                    if lo <= t <= hi and row not in taken:
                        out.append(self.extended(entry, item, row, m, factor))
                        pairs.add((entry.events, row))
        return out, len(pairs)

    def extended(self, entry: Entry, item: int, row: int, node: int, factor: float) -> Entry:
        events = list(entry.events)
        nodes = list(entry.nodes)
        events[item], nodes[item] = row, node
        return Entry(tuple(events), tuple(nodes), entry.prob * factor)

    def group_keys(self, entry: Entry, item: int) -> list[_Key]:
        """Per group of the entry: its last node before ``item`` and first node after."""
        index = self.index
        before: dict[int, int] = {}
        after: dict[int, int] = {}
        for k, (r, m) in enumerate(zip(entry.events, entry.nodes)):
            if r < 0:
                continue
            g = int(index.event_group[r])
            if k < item:
                before[g] = m
            elif g not in after:
                after[g] = m
        return [(g, before.get(g, -1), after.get(g, -1)) for g in sorted({*before, *after})]

    def code_ranges(self, key: _Key, since: float, until: float) -> list[tuple[int, int]]:
        """Codes of the nodes between ``N+`` and ``N-`` (section 5.2, condition 3), exact
        for nodes at instants from ``since`` to ``until``."""
        g, a, b = key
        forest = self.index.forests[g]
        scheme = self.index.scheme
        des = (scheme.descendant_code_ranges(forest, a, until=int(min(until, 2**62)))
               if a >= 0 else None)
        anc = (scheme.ancestor_code_ranges(forest, b, since=int(max(since, -2**62)))
               if b >= 0 else None)
        if des is None:
            return anc or []
        if anc is None:
            return des
        return _intersect(des, anc)

    # ------------------------------------------------------------ merging
    def merge(self, entries: list[Entry]) -> list[Entry]:
        """Add up entries whose futures coincide: same tuple, same instants where an
        unmatched item's window or the answer's first and last instants depend on them,
        and the same nodes where an unmatched item's code ranges and chain factors do (a
        group's nodes next to an unmatched position in its chain). Not with negation (its
        factor depends on every instant)."""
        if self.ctx.negations:
            return entries
        merged: dict[tuple[object, ...], float] = defaultdict(float)
        keep: dict[tuple[object, ...], Entry] = {}
        n = self.n
        groups = self.index.event_group
        for e in entries:
            open_before = [0] * (n + 1)
            for k, r in enumerate(e.events):
                open_before[k + 1] = open_before[k] + (r < 0)
            if open_before[n] == 0:
                key: tuple[object, ...] = (e.events, self._instant(e, 0),
                                           self._instant(e, n - 1))
            else:
                matched = [k for k in range(n) if e.events[k] >= 0]
                edge = {0, n - 1, matched[0], matched[-1]}
                edge.update(k for k in matched
                            if (k > 0 and e.events[k - 1] < 0)
                            or (k < n - 1 and e.events[k + 1] < 0))
                times = tuple((k, self._instant(e, k)) for k in sorted(edge)
                              if e.events[k] >= 0)
                # A node is on its group's frontier when an unmatched item lies between
                # it and the group's previous or next node (or the pattern's ends).
                last: dict[int, int] = {}
                frontier = set()
                for k in matched:
                    g = int(groups[e.events[k]])
                    prev = last.get(g, -1)
                    if open_before[k] - open_before[prev + 1] > 0:
                        frontier.add(k)
                        if prev >= 0:
                            frontier.add(prev)
                    last[g] = k
                for k in last.values():
                    if open_before[n] - open_before[k + 1] > 0:
                        frontier.add(k)
                key = (e.events, times, tuple((k, e.nodes[k]) for k in sorted(frontier)))
            merged[key] += e.prob
            keep.setdefault(key, e)
        return [Entry(keep[k].events, keep[k].nodes, p) for k, p in merged.items()]

    def _instant(self, e: Entry, k: int) -> int:
        index = self.index
        return int(index.forests[int(index.event_group[e.events[k]])].instant[e.nodes[k]])


def _intersect(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Intersection of two sorted, disjoint lists of closed integer ranges."""
    out = []
    i = j = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return merge_ranges(out)
