"""Probabilities of chains of OI-tree nodes within one group.

A *chain* is a list of nodes of one group, each descending from the previous one once
virtual nodes are expanded (:meth:`~index.forest.GroupForest.precedes`): the nodes an
order instance must pass through. Its probability is the fraction of the group's OIs that
pass through all of them.

Why it factorises: a virtual node's child tree is independent of the rest of its parent
tree, and inside one tree the path from the root to a node is unique. So the probability
is the product, over every tree the chain touches, of ``poi_local`` of the deepest node it
requires there. Extending a chain ending at ``a`` by a node ``b`` below it multiplies by
``poi(b)`` divided by the ``poi_local`` of ``a``'s nodes in the trees both share
(:func:`extension_factor`).

With negation the OIs are weighted: an event ``x`` standing in a negation gap contributes
``1 - Pr(C | x)``. :func:`weighted_chain_probability` sums the weights of the OIs through a
chain by a dynamic programme over the trees, visiting only subtrees whose time span meets
a weighted instant.

>>> from index.oi_tree import plan_group
>>> from index.forest import build_forest
>>> f = build_forest(plan_group([1, 2, 2, 3, 4, 5, 6], [3, 3, 3, 7, 6, 6, 7]))
>>> at = lambda e, t: [n for n in range(f.n_nodes) if f.event[n] == e and f.instant[n] == t][0]
>>> round(chain_probability(f, [at(2, 2)]), 12)
0.5
>>> round(chain_probability(f, [at(2, 2), at(3, 4)]), 12)
0.2
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from index.forest import REAL, ROOT, VIRTUAL, GroupForest

__all__ = ["Weights", "chain_probability", "extension_factor", "weighted_chain_probability"]

# Per event position in the group: (first instant, last instant, factor) of each weight.
Weights = Mapping[int, Sequence[tuple[int, int, float]]]


def extension_factor(forest: GroupForest, last: int | None, node: int) -> float:
    """P(chain + node) / P(chain) for a chain ending at ``last`` (None: empty chain),
    ``node`` descending from ``last``."""
    if last is None:
        return float(forest.poi[node])
    node_trees = {int(forest.tree[x]) for x in forest.context(node)}
    shared = 1.0
    for x in forest.context(last):
        if int(forest.tree[x]) in node_trees:
            shared *= float(forest.poi_local[x])
    return float(forest.poi[node]) / shared


def chain_probability(forest: GroupForest, chain: Sequence[int]) -> float:
    """Fraction of the group's OIs passing through every node of a chain."""
    p = 1.0
    last = None
    for n in chain:
        p *= extension_factor(forest, last, n)
        last = n
    return p


def weighted_chain_probability(forest: GroupForest, chain: Sequence[int],
                               weights: Weights) -> float:
    """Sum over the group's OIs through ``chain`` of P(OI) times the product of the weights
    of the (event, instant) pairs the OI uses. Events of the chain must carry no weight."""
    return _WeightedDP(forest, weights).chain(chain)


class _WeightedDP:
    def __init__(self, forest: GroupForest, weights: Weights) -> None:
        self.f = forest
        self.weights = weights
        spans = [(a, b) for ws in weights.values() for a, b, _ in ws]
        self.lo = min((a for a, _ in spans), default=1)
        self.hi = max((b for _, b in spans), default=0)
        self.memo: dict[int, float] = {}

    def chain(self, chain: Sequence[int]) -> float:
        f = self.f
        deepest: dict[int, int] = {}
        for n in chain:
            for x in f.context(n):
                t = int(f.tree[x])
                if t not in deepest or f.depth[x] > f.depth[deepest[t]]:
                    deepest[t] = x
        return self.tree_value(0, deepest)

    def tree_value(self, t: int, deepest: dict[int, int]) -> float:
        f = self.f
        d = deepest.get(t)
        if d is None:
            return self.expect(int(f.tree_root[t]))
        path = []
        x = d
        while x >= 0:
            path.append(x)
            x = int(f.parent[x])
        value = 1.0
        for x in reversed(path):
            if f.kind[x] == ROOT:
                continue
            value *= float(f.cond[x])
            if f.kind[x] == VIRTUAL:
                value *= self.tree_value(int(f.child_tree[x]), deepest)
            else:
                value *= self.own_weight(x)
        return value * self.children_value(d)

    def own_weight(self, n: int) -> float:
        ws = self.weights.get(int(self.f.event[n]))
        if not ws:
            return 1.0
        t = int(self.f.instant[n])
        w = 1.0
        for a, b, factor in ws:
            if a <= t <= b:
                w *= factor
        return w

    def children_value(self, n: int) -> float:
        kids = self.f.children(n)
        if len(kids) == 0:
            return 1.0
        return sum(float(self.f.cond[c]) * self.expect(int(c)) for c in kids)

    def _quiet(self, n: int) -> bool:
        """Whether no node at or below ``n`` can carry a weight (its span misses them)."""
        f = self.f
        t = int(f.tree[n])
        if f.kind[n] == REAL:
            start = int(f.instant[n])
        elif f.kind[n] == VIRTUAL:
            start = int(f.tree_lo[int(f.child_tree[n])])
        else:
            start = int(f.tree_lo[t])
        return start > self.hi or self._span_end(t) < self.lo

    def _span_end(self, t: int) -> int:
        # Below any node of tree t come only instants of t itself.
        return int(self.f.tree_hi[t])

    def expect(self, n: int) -> float:
        """Expected weight of the OI continuations from node ``n`` (its own weight included),
        computed bottom-up without recursion: trees can be thousands of nodes deep."""
        if n in self.memo:
            return self.memo[n]
        f = self.f
        order: list[int] = []
        stack = [n]
        while stack:
            x = stack.pop()
            if x in self.memo:
                continue
            if self._quiet(x):
                self.memo[x] = 1.0
                continue
            order.append(x)
            stack.extend(int(c) for c in f.children(x))
            if f.kind[x] == VIRTUAL:
                stack.append(int(f.tree_root[int(f.child_tree[x])]))
        for x in reversed(order):
            if x in self.memo:
                continue
            below = self.children_value(x)
            if f.kind[x] == VIRTUAL:
                own = self.memo[int(f.tree_root[int(f.child_tree[x])])]
            elif f.kind[x] == REAL:
                own = self.own_weight(x)
            else:
                own = 1.0
            self.memo[x] = own * below
        return self.memo[n]
