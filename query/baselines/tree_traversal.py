"""The tree-traversal baseline: the paper's method without codes or R*-tree (Zhou et al. 6.3).

Candidates are found by walking OI-tree paths: the first item's from every group's trees,
a later item's by walking, for each group already in the partial match, the expanded
subtree below its last node (child trees of virtual nodes entered, then what follows each
enclosing tree), and for every other group its trees from the roots. Walks stop where
instants pass the window, since instants grow along every path. Probabilities, pruning and
negations are the same exact ones as the index strategies use
(:mod:`uncertain_cep.query.evaluation.context`), so answers are identical; only the search differs.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from uncertain_cep.index.forests.forest import REAL, VIRTUAL, GroupForest
from uncertain_cep.query.evaluation.answer import Answer
from uncertain_cep.query.evaluation.chains import extension_factor
from uncertain_cep.query.evaluation.context import Entry, QueryContext, StepTimer

__all__ = ["tree_traversal"]


def tree_traversal(ctx: QueryContext) -> Answer:
    """Evaluate ``ctx.pattern`` by walking the OI-trees; see the module docstring."""
    index = ctx.index
    everything = (-np.inf, np.inf)
    timer = StepTimer(ctx)
    entries = []
    pr = ctx.pr(ctx.positive[0])
    for g, forest in enumerate(index.forests):
        for n in _walk_from_roots(forest, everything):
            row = int(index.members[g][forest.event[n]])
            if pr[row] > 0 and len(ctx.first_item_rows(np.array([row]))):
                entries.append(Entry((row,), (n,), float(forest.poi[n])))
    ctx.stats.entries_created += len(entries)
    entries = ctx.prune(entries)
    timer.done({ctx.label(0): 1}, None, len({e.events for e in entries}), len(entries))
    for j, symbol in enumerate(ctx.positive[1:], start=1):
        timer = StepTimer(ctx)
        tuples = len({e.events for e in entries})
        made = _extend(ctx, entries, symbol)
        entries = ctx.prune(made, ctx.closed_by([j]))
        timer.done({ctx.label(j): tuples}, None, len({e.events for e in made}), len(entries))
    return Answer.from_matches(ctx.finish(entries), len(ctx.positive))


def _extend(ctx: QueryContext, entries: list[Entry], symbol: str) -> list[Entry]:
    index = ctx.index
    pr = ctx.pr(symbol)
    out = []
    from_roots: dict[tuple[int, float, float], list[int]] = {}
    for entry in entries:
        groups = [int(index.event_group[r]) for r in entry.events]
        t_first = _instant(ctx, groups[0], entry.nodes[0])
        later = len(ctx.positive) - 1 - len(entry.events)
        window = (_instant(ctx, groups[-1], entry.nodes[-1]) + 1, t_first + ctx.window - later)
        if window[0] > window[1]:
            continue
        last = dict(zip(groups, entry.nodes))
        taken = set(entry.events)
        for g, forest in enumerate(index.forests):
            a = last.get(g)
            if a is None:
                key = (g, *window)
                nodes = from_roots.get(key)
                if nodes is None:
                    nodes = list(_walk_from_roots(forest, window))
                    from_roots[key] = nodes
            else:
                nodes = list(_walk_below(forest, a, window))
            for n in nodes:
                row = int(index.members[g][forest.event[n]])
                if pr[row] > 0 and row not in taken:
                    out.append(Entry(entry.events + (row,), entry.nodes + (n,),
                                     entry.prob * extension_factor(forest, a, n)))
    ctx.stats.entries_created += len(out)
    return out


def _instant(ctx: QueryContext, g: int, n: int) -> int:
    return int(ctx.index.forests[g].instant[n])


def _walk(forest: GroupForest, starts: list[int], window: tuple[float, float]) -> Iterator[int]:
    """Real nodes reachable from ``starts`` (inclusive) with an instant in ``window``."""
    stack = list(starts)
    while stack:
        x = stack.pop()
        if forest.kind[x] == REAL:
            t = forest.instant[x]
            if t > window[1]:
                continue  # everything below comes later still
            if t >= window[0]:
                yield x
        elif forest.kind[x] == VIRTUAL:
            sub = int(forest.child_tree[x])
            if forest.tree_lo[sub] > window[1]:
                continue
            if forest.tree_hi[sub] >= window[0]:
                # A child tree wholly before the window holds no candidate: skip it.
                stack.append(int(forest.tree_root[sub]))
        stack.extend(int(c) for c in forest.children(x))


def _walk_from_roots(forest: GroupForest, window: tuple[float, float]) -> Iterator[int]:
    return _walk(forest, [int(forest.tree_root[0])], window)


def _walk_below(forest: GroupForest, a: int, window: tuple[float, float]) -> Iterator[int]:
    """Real nodes an OI can reach after node ``a``, within ``window``."""
    starts = [int(c) for c in forest.children(a)]
    if forest.kind[a] == VIRTUAL:
        starts.append(int(forest.tree_root[int(forest.child_tree[a])]))
    t = int(forest.tree[a])
    while forest.tree_virtual[t] >= 0:
        v = int(forest.tree_virtual[t])
        starts.extend(int(c) for c in forest.children(v))
        t = int(forest.tree[v])
    return _walk(forest, starts, window)
