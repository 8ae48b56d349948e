"""The OI-trees of one group as arrays: nodes, trees, probabilities and both code schemes.

A :class:`GroupForest` is built from a planned group (:mod:`uncertain_cep.index.forests.oi_tree`) by
:func:`~uncertain_cep.index.forests.forest_builder.build_forest`, which also codes it
(:mod:`uncertain_cep.index.forests.codes`). Trees are numbered as in the paper's running example
(the top tree 0, then child trees in the breadth-first order of their virtual nodes, recursively);
nodes tree by tree in breadth-first order. Per node it stores the event, the instant, the
tree, the parent, the probability that an order instance passes through it (within its
tree and overall), and its codes; per tree the time interval, fanout, height, parent
tree, the virtual node standing for it, the number of OIs and the code ranges.

>>> from uncertain_cep.index.forests.oi_tree import plan_group
>>> from uncertain_cep.index.forests.forest_builder import build_forest
>>> forest = build_forest(plan_group([1, 2, 2, 3, 4, 5, 6], [3, 3, 3, 7, 6, 6, 7]))
>>> forest.n_trees, forest.n_order_instances
(6, 10)
>>> [forest.tree_ti(t) for t in range(6)]
[(1, 7), (1, 1), (2, 3), (4, 7), (5, 6), (7, 7)]
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

__all__ = ["REAL", "ROOT", "VIRTUAL", "GroupForest"]

ROOT, REAL, VIRTUAL = 0, 1, 2


@dataclass(frozen=True, eq=False)
class GroupForest:
    """Every OI-tree of one dependency group, flattened into arrays.

    Node arrays are indexed by node id; tree arrays by tree id. ``paper_code`` and the
    tree ranges of the paper's scheme are Python ints (they grow like fanout**depth);
    the compact scheme's are int64.
    """

    kind: np.ndarray            # ROOT / REAL / VIRTUAL
    event: np.ndarray           # event position in the group, -1 for root/virtual
    instant: np.ndarray         # -1 for root/virtual
    tree: np.ndarray
    parent: np.ndarray          # parent node in the same tree, -1 for a root
    depth: np.ndarray           # depth within its tree (root 0)
    child_start: np.ndarray     # children of node n: child_list[child_start[n]:child_start[n+1]]
    child_list: np.ndarray
    child_tree: np.ndarray      # tree a virtual node stands for, else -1
    cond: np.ndarray            # P(an OI of the tree through the parent goes on to this node)
    poi_local: np.ndarray       # fraction of its tree's OIs through the node
    poi: np.ndarray             # fraction of the group's OIs through the node
    # The paper scheme's (Python ints).
    rel: Sequence[int]          # breadth-first position in the tree's complete f-tree
    paper_code: Sequence[int]
    compact_code: np.ndarray
    compact_end: np.ndarray     # last compact code in the node's subtree (child trees included)
    tree_parent: np.ndarray
    tree_virtual: np.ndarray    # virtual node standing for the tree in its parent, -1 for top
    tree_root: np.ndarray
    tree_lo: np.ndarray
    tree_hi: np.ndarray
    tree_fanout: np.ndarray
    tree_height: np.ndarray
    tree_count: list[float]     # number of OIs of each tree (an int); with instant
                                # weights (SEMANTICS A6) their summed weights instead
    tree_paper_range: Sequence[tuple[int, int]]
    tree_compact_range: np.ndarray  # (n_trees, 2)
    tree_virtuals: list[list[int]]  # virtual nodes of each tree, breadth-first

    @property
    def n_nodes(self) -> int:
        return len(self.kind)

    @property
    def n_trees(self) -> int:
        return len(self.tree_root)

    @cached_property
    def n_order_instances(self) -> int:
        """The group's number of OIs (counted from the trees' shapes when ``tree_count``
        holds weighted sums)."""
        if isinstance(self.tree_count[0], int):
            return self.tree_count[0]
        # Children and child trees are numbered after their parents: one backward pass.
        count = [1] * self.n_nodes
        for n in range(self.n_nodes - 1, -1, -1):
            children = self.child_list[self.child_start[n]:self.child_start[n + 1]]
            below = sum(count[c] for c in children.tolist()) if len(children) else 1
            sub = int(self.child_tree[n])
            count[n] = below * (count[int(self.tree_root[sub])] if sub >= 0 else 1)
        return count[int(self.tree_root[0])]

    def tree_ti(self, t: int) -> tuple[int, int]:
        return int(self.tree_lo[t]), int(self.tree_hi[t])

    @cached_property
    def global_depth(self) -> np.ndarray:
        """Depth counting the trees above: a child tree's root sits one level below the
        virtual node standing for it."""
        depths = np.zeros(self.n_nodes, dtype=np.int64)
        sizes = np.bincount(self.tree, minlength=self.n_trees)
        # Trees are numbered parents first, so one pass in tree order suffices.
        for t in range(self.n_trees):
            v = int(self.tree_virtual[t])
            base = 0 if v < 0 else int(depths[v]) + 1
            root = int(self.tree_root[t])
            depths[root:root + sizes[t]] = base + self.depth[root:root + sizes[t]]
        return depths

    @cached_property
    def virtual_rels(self) -> list[list[int]]:
        """Per tree, the relative values of its virtual nodes, ascending."""
        return [[self.rel[v] for v in vs] for vs in self.tree_virtuals]

    @cached_property
    def sorted_paper_codes(self) -> list[int]:
        """Paper codes of the real nodes, ascending."""
        return sorted(self.paper_code[int(n)] for n in np.flatnonzero(self.kind == REAL))

    @cached_property
    def _nodes_by_event(self) -> tuple[np.ndarray, np.ndarray]:
        real = np.flatnonzero(self.kind == REAL)
        order = np.argsort(self.event[real], kind="stable")
        return real[order], self.event[real][order]

    def nodes_of_event(self, e: int) -> np.ndarray:
        """Real nodes of the event at position ``e`` of the group."""
        nodes, events = self._nodes_by_event
        lo, hi = np.searchsorted(events, [e, e + 1])
        return nodes[lo:hi]

    def children(self, n: int) -> np.ndarray:
        return self.child_list[self.child_start[n]:self.child_start[n + 1]]

    def context(self, n: int) -> list[int]:
        """The node and the virtual nodes enclosing it, innermost first."""
        out = [n]
        t = int(self.tree[n])
        while self.tree_virtual[t] >= 0:
            v = int(self.tree_virtual[t])
            out.append(v)
            t = int(self.tree[v])
        return out

    def is_ancestor_in_tree(self, a: int, b: int) -> bool:
        """Whether ``a`` is a strict ancestor of ``b`` within one tree (parent pointers)."""
        if self.tree[a] != self.tree[b] or self.depth[b] <= self.depth[a]:
            return False
        while self.depth[b] > self.depth[a]:
            b = int(self.parent[b])
        return a == b

    def precedes(self, a: int, b: int) -> bool:
        """Whether ``b`` descends from ``a`` once every virtual node is expanded into its
        tree, i.e. some OI passes through ``a`` and later through ``b``. Walks the trees;
        the code schemes answer the same question from codes alone."""
        b_ctx = {int(self.tree[x]): x for x in self.context(b)}
        for x in self.context(a):
            y = b_ctx.get(int(self.tree[x]))
            if y is not None and y != x and self.is_ancestor_in_tree(x, y):
                return True
        return False

    def order_instances(self, tree: int = 0) -> Iterator[tuple[tuple[int, int], ...]]:
        """Every OI of a tree as ``((event, instant), ...)`` in time order."""
        def from_node(n: int) -> Iterator[tuple[tuple[int, int], ...]]:
            if self.kind[n] == VIRTUAL:
                heads = list(self.order_instances(int(self.child_tree[n])))
            elif self.kind[n] == REAL:
                heads = [((int(self.event[n]), int(self.instant[n])),)]
            else:
                heads = [()]
            kids = self.children(n)
            if len(kids) == 0:
                yield from heads
                return
            for head in heads:
                for k in kids:
                    for tail in from_node(int(k)):
                        yield head + tail
        yield from from_node(int(self.tree_root[tree]))
