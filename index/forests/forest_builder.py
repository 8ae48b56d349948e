"""Building a group's forest: a planned group (:mod:`uncertain_cep.index.forests.oi_tree`, Zhou et
al. 4.1) instantiated as a :class:`~uncertain_cep.index.forests.forest.GroupForest` with node and
tree ids, order-instance probabilities, and both code schemes (4.2,
:mod:`uncertain_cep.index.forests.codes`).

>>> from uncertain_cep.index.forests.oi_tree import plan_group
>>> forest = build_forest(plan_group([1, 2, 2, 3, 4, 5, 6], [3, 3, 3, 7, 6, 6, 7]))
>>> forest.n_trees, forest.n_order_instances, forest.tree_paper_range[:3]
(6, 10, [(0, 60), (1, 2), (4, 10)])
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace

import numpy as np

from uncertain_cep.index.forests.codes import compact_codes, paper_codes
from uncertain_cep.index.forests.forest import REAL, ROOT, VIRTUAL, GroupForest
from uncertain_cep.index.forests.oi_tree import PlanNode, PlanTree

__all__ = ["build_forest"]


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
        self.t_count: list[float] = []
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
        queue: deque[tuple[PlanNode, int, int, float, float]] = deque(
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
                    # OIs through c = OIs through this node, shared by the children's counts
                    # (weighted sums of OIs with instant weights, A6: floats).
                    share = (through // below * c.count
                             if isinstance(through, int) and isinstance(below, int)
                             else through * c.count / below)
                    queue.append((c, n, depth + 1, share, c.count / below))
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
