"""The OI-trees of one group as arrays: nodes, trees, probabilities and both code schemes.

:func:`build_forest` turns a planned group (:mod:`index.oi_tree`) into a
:class:`GroupForest`. Trees are numbered as in the paper's running example (the top tree
0, then child trees in the breadth-first order of their virtual nodes, recursively);
nodes tree by tree in breadth-first order. Per node it stores the event, the instant, the
tree, the parent, the probability that an order instance passes through it (within its
tree and overall), and its codes; per tree the time interval, fanout, height, parent
tree, the virtual node standing for it, the number of OIs and the code ranges.

>>> from index.oi_tree import plan_group
>>> forest = build_forest(plan_group([1, 2, 2, 3, 4, 5, 6], [3, 3, 3, 7, 6, 6, 7]))
>>> forest.n_trees, forest.n_order_instances
(6, 10)
>>> [forest.tree_ti(t) for t in range(6)]
[(1, 7), (1, 1), (2, 3), (4, 7), (5, 6), (7, 7)]
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from index.codes import compact_codes, paper_codes
from index.oi_tree import PlanNode, PlanTree

__all__ = ["REAL", "ROOT", "VIRTUAL", "GroupForest", "build_forest"]

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
    rel: list[int]              # breadth-first position in the tree's complete f-tree
    paper_code: list[int]
    compact_code: np.ndarray
    compact_end: np.ndarray     # last compact code in the node's subtree (child trees included)
    tree_parent: np.ndarray
    tree_virtual: np.ndarray    # virtual node standing for the tree in its parent, -1 for top
    tree_root: np.ndarray
    tree_lo: np.ndarray
    tree_hi: np.ndarray
    tree_fanout: np.ndarray
    tree_height: np.ndarray
    tree_count: list[int]       # number of OIs of each tree
    tree_paper_range: list[tuple[int, int]]
    tree_compact_range: np.ndarray  # (n_trees, 2)
    tree_virtuals: list[list[int]]  # virtual nodes of each tree, breadth-first

    @property
    def n_nodes(self) -> int:
        return len(self.kind)

    @property
    def n_trees(self) -> int:
        return len(self.tree_root)

    @property
    def n_order_instances(self) -> int:
        return self.tree_count[0]

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
        return sorted(self.paper_code[n] for n in np.flatnonzero(self.kind == REAL))

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


def build_forest(plan: PlanTree) -> GroupForest:
    """Instantiate a planned group: ids, probabilities, and both code schemes."""
    b = _Builder()
    b.add_tree(plan, parent_tree=-1, virtual=-1, poi_above=1.0)
    return b.finish()


class _Builder:
    def __init__(self) -> None:
        self.kind: list[int] = []
        self.event: list[int] = []
        self.instant: list[int] = []
        self.tree: list[int] = []
        self.parent: list[int] = []
        self.depth: list[int] = []
        self.children: list[list[int]] = []
        self.child_tree: list[int] = []
        self.cond: list[float] = []
        self.poi_local: list[float] = []
        self.poi: list[float] = []
        self.rel: list[int] = []
        self.t_parent: list[int] = []
        self.t_virtual: list[int] = []
        self.t_root: list[int] = []
        self.t_ti: list[tuple[int, int]] = []
        self.t_fanout: list[int] = []
        self.t_height: list[int] = []
        self.t_count: list[int] = []
        self.t_virtuals: list[list[int]] = []

    def add_tree(self, plan: PlanTree, parent_tree: int, virtual: int, poi_above: float) -> int:
        t = len(self.t_root)
        self.t_parent.append(parent_tree)
        self.t_virtual.append(virtual)
        self.t_ti.append(plan.ti)
        self.t_count.append(plan.count)
        self.t_virtuals.append([])
        total = plan.count
        # Breadth-first over the plan; `through` = OIs of this tree through the node.
        queue: deque[tuple[PlanNode, int, int, int, float]] = deque(
            [(plan.root, -1, 0, plan.count, 1.0)])
        self.t_root.append(len(self.kind))
        fanout, height = 0, 0
        pending: list[tuple[int, PlanTree]] = []
        while queue:
            pnode, parent, depth, through, cond = queue.popleft()
            n = len(self.kind)
            kind = ROOT if parent < 0 else (VIRTUAL if pnode.child_tree is not None else REAL)
            self.kind.append(kind)
            self.event.append(pnode.event)
            self.instant.append(pnode.instant)
            self.tree.append(t)
            self.parent.append(parent)
            self.depth.append(depth)
            self.children.append([])
            self.child_tree.append(-1)
            self.cond.append(cond)
            local = through / total
            self.poi_local.append(local)
            self.poi.append(local * poi_above)
            self.rel.append(0)
            if parent >= 0:
                self.children[parent].append(n)
            if pnode.child_tree is not None:
                self.t_virtuals[t].append(n)
                pending.append((n, pnode.child_tree))
            fanout = max(fanout, len(pnode.children))
            height = max(height, depth)
            if pnode.children:
                # OIs through n = (virtual ancestors' counts) * inner * below: each child
                # takes its own share of `below`, exactly.
                below = sum(c.count for c in pnode.children)
                for c in pnode.children:
                    # OIs through c = OIs through this node, shared by the children's counts.
                    queue.append((c, n, depth + 1, through // below * c.count,
                                  c.count / below))
        self.t_fanout.append(fanout)
        self.t_height.append(height)
        self._assign_rel(t, fanout)
        for v, child in pending:
            sub = self.add_tree(child, t, v, self.poi[v])
            self.child_tree[v] = sub
        return t

    def _assign_rel(self, t: int, f: int) -> None:
        """Breadth-first positions in the complete f-tree: child j of v is f*v + 1 + j."""
        root = self.t_root[t]
        stack = [root]
        while stack:
            n = stack.pop()
            for j, c in enumerate(self.children[n]):
                self.rel[c] = f * self.rel[n] + 1 + j
                stack.append(c)

    def finish(self) -> GroupForest:
        n = len(self.kind)
        starts = np.zeros(n + 1, dtype=np.int64)
        starts[1:] = np.cumsum([len(c) for c in self.children])
        flat = np.array([c for cs in self.children for c in cs], dtype=np.int64)
        draft = GroupForest(
            kind=np.array(self.kind, dtype=np.int8),
            event=np.array(self.event, dtype=np.int64),
            instant=np.array(self.instant, dtype=np.int64),
            tree=np.array(self.tree, dtype=np.int64),
            parent=np.array(self.parent, dtype=np.int64),
            depth=np.array(self.depth, dtype=np.int64),
            child_start=starts, child_list=flat,
            child_tree=np.array(self.child_tree, dtype=np.int64),
            cond=np.array(self.cond), poi_local=np.array(self.poi_local), poi=np.array(self.poi),
            rel=self.rel, tree_parent=np.array(self.t_parent, dtype=np.int64),
            tree_virtual=np.array(self.t_virtual, dtype=np.int64),
            tree_root=np.array(self.t_root, dtype=np.int64),
            tree_lo=np.array([a for a, _ in self.t_ti], dtype=np.int64),
            tree_hi=np.array([b for _, b in self.t_ti], dtype=np.int64),
            tree_fanout=np.array(self.t_fanout, dtype=np.int64),
            tree_height=np.array(self.t_height, dtype=np.int64),
            tree_count=self.t_count, tree_virtuals=self.t_virtuals,
            paper_code=[], tree_paper_range=[], compact_code=np.zeros(0, dtype=np.int64),
            compact_end=np.zeros(0, dtype=np.int64),
            tree_compact_range=np.zeros((0, 2), dtype=np.int64))
        paper, paper_ranges = paper_codes(draft)
        compact, compact_end, compact_ranges = compact_codes(draft)
        return replace(draft, paper_code=paper, tree_paper_range=paper_ranges,
                       compact_code=compact, compact_end=compact_end,
                       tree_compact_range=compact_ranges)
