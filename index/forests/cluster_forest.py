"""A group's forest assembled from its clusters: lone events at array speed.

Events of one group whose intervals overlap no other event's are isolated from the rest
in every order instance (Zhou et al. 4.1.2): each is an OI-tree of its own, a root with
one child per instant, hung below the top tree's chain of virtual nodes. Archives with
sparse groups (the paper's generator, RFID readings spaced out in time) are mostly such
events, and planning them one Python object at a time dominates a build.

:func:`forest_of_clusters` cuts a group into *clusters* of events linked by overlapping
intervals (one sort-free pass over ``t_lo``-sorted events), writes every lone event's tree
straight into the forest's arrays, plans only the clusters of several events (with the
planner of :mod:`uncertain_cep.index.forests.oi_tree`, each as a group of its own), and splices
the pieces together with the node ids, tree ids, probabilities and both code schemes the
whole-group builder (:func:`~uncertain_cep.index.forests.forest_builder.build_forest`) gives: the
result is the same forest, array for array (tested).

Why clusters may be planned apart: without Condition 2, events of different clusters
never compete for an instant, so propagation (Lemma 1) and the split into isolated
subsequences never look across a cluster's bounds.

>>> from uncertain_cep.index.forests.forest_builder import build_forest
>>> from uncertain_cep.index.forests.oi_tree import plan_group
>>> t_lo, t_hi = [1, 2, 2, 3, 9, 12], [3, 3, 3, 7, 10, 12]
>>> fast = forest_of_clusters(t_lo, t_hi)
>>> slow = build_forest(plan_group(t_lo, t_hi))
>>> fast.n_trees, fast.n_order_instances == slow.n_order_instances
(6, True)
>>> fast.paper_code == slow.paper_code and bool((fast.compact_end == slow.compact_end).all())
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from uncertain_cep.index.forests.expansion import GroupInfeasible
from uncertain_cep.index.forests.forest import REAL, ROOT, VIRTUAL, GroupForest
from uncertain_cep.index.forests.forest_builder import build_forest
from uncertain_cep.index.forests.node_count import NodeBudgetExceeded, count_nodes
from uncertain_cep.index.forests.oi_tree import plan_parts
from uncertain_cep.index.forests.weights import GroupWeights
from uncertain_cep.model.instant_weights import slices

__all__ = ["forest_of_clusters", "isolated_clusters"]

# Paper codes from here on are kept as Python ints (the whole-group coder's type).
_INT64_CODES = 1 << 62


def isolated_clusters(t_lo: np.ndarray, t_hi: np.ndarray) -> np.ndarray:
    """Boundaries of the runs of ``t_lo``-sorted events linked by overlapping intervals:
    cluster ``i`` is ``bounds[i]:bounds[i+1]``.

    >>> isolated_clusters(np.array([1, 2, 5, 9]), np.array([3, 4, 6, 9])).tolist()
    [0, 2, 3, 4]
    """
    n = len(t_lo)
    if n == 0:
        return np.zeros(1, dtype=np.int64)
    reach = np.maximum.accumulate(t_hi)
    starts = np.flatnonzero(t_lo[1:] > reach[:-1]) + 1
    return np.concatenate([[0], starts, [n]]).astype(np.int64)


@dataclass(frozen=True)
class _Piece:
    """One child tree of the top chain (with the trees nested in it), as a forest."""

    forest: GroupForest
    offset: int          # position in the group of the piece's event 0


def forest_of_clusters(t_lo: Sequence[int], t_hi: Sequence[int],
                       node_budget: int | None = None,
                       weights: GroupWeights | None = None) -> GroupForest | None:
    """The multi-tree forest of a group without Condition 2, or None when the group is
    one cluster (the whole-group planner builds it then).

    Events must be in canonical order (``t_lo`` ascending). A group without an order
    instance gives None too, for the planner's own error. Raises
    :class:`~uncertain_cep.index.forests.node_count.NodeBudgetExceeded` like
    :func:`~uncertain_cep.index.forests.oi_tree.plan_group`. With instant ``weights``
    (SEMANTICS A6) each event is cut to its instants of positive weight first, and a lone
    event's leaves share its tree by weight.
    """
    lo = np.asarray(t_lo, dtype=np.int64)
    hi = np.asarray(t_hi, dtype=np.int64)
    if weights is not None:
        lo, hi = weights.support(lo, hi)
    if len(lo) < 2 or bool((np.diff(lo) < 0).any()):
        return None
    bounds = isolated_clusters(lo, hi)
    if len(bounds) <= 2:
        return None
    sizes = np.diff(bounds)
    lone = sizes == 1
    # Per child tree of the top chain: -1 for a lone event's tree, else its piece.
    piece_of: list[int] = []
    pieces: list[_Piece] = []
    lone_events: list[int] = []
    leaves = _Leaves.of(lo, hi, bounds[:-1][lone], weights)
    # Nodes so far: the top root, and per lone event its virtual node, root and leaves.
    nodes = 1 + 2 * int(lone.sum()) + len(leaves.instant)
    for c in np.flatnonzero(~lone).tolist():
        a, b = int(bounds[c]), int(bounds[c + 1])
        part = None if weights is None else weights.subset(slice(a, b))
        if node_budget is not None:
            count_nodes(lo[a:b].tolist(), hi[a:b].tolist(), None, True, node_budget, part)
        try:
            trees = plan_parts(lo[a:b].tolist(), hi[a:b].tolist(), part)
        except GroupInfeasible:
            # The whole-group planner names the events that cannot fit, as always.
            return None
        nodes += sum(t.root.size + 1 for t in trees)   # each with its virtual node
        if node_budget is not None and nodes > node_budget:
            raise NodeBudgetExceeded(node_budget, nodes)
        pieces.extend(_Piece(build_forest(t), a) for t in trees)
    if node_budget is not None and nodes > node_budget:
        raise NodeBudgetExceeded(node_budget, nodes)
    # The top chain in time order: lone events and pieces interleaved by their start.
    starts = [(int(lo[bounds[c]]), 0, int(bounds[c]), -1) for c in np.flatnonzero(lone)]
    starts += [(int(p.forest.tree_lo[0]), 1, p.offset, i) for i, p in enumerate(pieces)]
    starts.sort()
    for _, _, event, i in starts:
        piece_of.append(i)
        if i < 0:
            lone_events.append(event)
    chain_lone = np.array(lone_events, dtype=np.int64)
    if not np.array_equal(chain_lone, bounds[:-1][lone]):
        # Lone events keep their t_lo order in the chain; should ties ever reorder them,
        # their leaves follow.
        leaves = _Leaves.of(lo, hi, chain_lone, weights)
    return _splice(lo, np.array(piece_of, dtype=np.int64), chain_lone, pieces, leaves)


@dataclass(frozen=True)
class _Leaves:
    """The leaves of every lone event's tree, event after event (in ``t_lo`` order):
    each one's instant and share of its tree, its event (``owner``, a position in
    ``events``) and its place among that event's leaves (``j``); per event its number of
    leaves and its tree's count (instants, or their summed weights, SEMANTICS A6)."""

    instant: np.ndarray
    share: np.ndarray
    width: np.ndarray
    count: list[float]
    owner: np.ndarray
    j: np.ndarray


    @classmethod
    def of(cls, lo: np.ndarray, hi: np.ndarray, events: np.ndarray,
           weights: GroupWeights | None) -> _Leaves:
        width = hi[events] - lo[events] + 1
        if weights is None:
            _, owner, j = slices(width)
            return cls(lo[events][owner] + j, 1.0 / width[owner], width, width.tolist(),
                       owner, j)
        instant, share, sizes, counts = weights.leaves(lo, hi, events)
        return cls(instant, share, sizes, counts, *slices(sizes)[1:])


def _splice(lo: np.ndarray, piece_of: np.ndarray, lone_events: np.ndarray,
            pieces: list[_Piece], leaves: _Leaves) -> GroupForest:
    """The group's forest: the top tree (a root and one virtual node per child tree),
    then each child tree's nodes in chain order, as the whole-group builder numbers
    them (trees depth first, nodes breadth first within a tree)."""
    m = len(piece_of)
    is_lone = piece_of < 0
    lone_at = np.flatnonzero(is_lone)
    width = np.zeros(m, dtype=np.int64)
    width[lone_at] = leaves.width
    # Per child tree: nodes, trees, compact codes it advances, its paper code range's top.
    n_nodes = np.where(is_lone, width + 1, 0)
    n_trees = np.ones(m, dtype=np.int64)
    advance = np.where(is_lone, width + 1, 0)
    paper_top: list[int] = width.tolist()
    for p in np.flatnonzero(~is_lone).tolist():
        f = pieces[piece_of[p]].forest
        n_nodes[p] = f.n_nodes
        n_trees[p] = f.n_trees
        advance[p] = int((f.kind != VIRTUAL).sum())
        paper_top[p] = f.tree_paper_range[0][1]
    node_at = 1 + m + _exclusive_sum(n_nodes)
    tree_at = 1 + _exclusive_sum(n_trees)
    compact_at = 1 + _exclusive_sum(advance)
    total = 1 + int(advance.sum())
    # Paper codes grow like fanout ** depth inside a planned piece: Python ints where
    # they outgrow int64, as the whole-group coder keeps them.
    paper_list, base = [], 0
    for p in range(m):
        paper_list.append(base + p + 1)            # the virtual node's base + its rel
        base = paper_list[-1] + paper_top[p]        # the child tree's largest code
    big = base >= _INT64_CODES
    paper_at = np.array(paper_list, dtype=object if big else np.int64)
    n, t = int(node_at[-1] + n_nodes[-1]), 1 + int(n_trees.sum())

    out = _Arrays(n, t, object if big else np.int64)
    # The top tree: a root, then a chain of virtual nodes (node p + 1 stands for child
    # tree p), every OI through each of them.
    top = np.arange(m + 1)
    out.kind[top] = VIRTUAL
    out.kind[0] = ROOT
    out.parent[top] = top - 1
    out.depth[top] = top
    out.rel[top] = top
    out.child_count[top] = 1
    out.child_count[m] = 0
    out.child_tree[1:m + 1] = tree_at
    out.paper[0], out.paper[1:m + 1] = 0, paper_at
    out.compact[0], out.compact[1:m + 1] = 0, compact_at
    out.compact_end[top] = total - 1
    out.tree_parent[0], out.tree_virtual[0], out.tree_root[0] = -1, -1, 0
    out.tree_fanout[0], out.tree_height[0] = 1, m
    out.tree_paper[0] = (0, base)
    out.tree_compact[0] = (0, total - 1)
    # Lone events' trees: a root with one leaf per instant, each 1/width of the OIs.
    _lone_trees(out, lone_events, leaves, node_at[lone_at], tree_at[lone_at],
                lone_at + 1, paper_at[lone_at], compact_at[lone_at])
    counts: list[float] = [0] * t
    virtuals: list[list[int]] = [[] for _ in range(t)]
    virtuals[0] = list(range(1, m + 1))
    for w, at in zip(leaves.count, tree_at[lone_at].tolist()):
        counts[at] = w
    for p in np.flatnonzero(~is_lone).tolist():
        _copy_piece(out, pieces[piece_of[p]], int(node_at[p]), int(tree_at[p]), p + 1,
                    paper_list[p], int(compact_at[p]), counts, virtuals)
    counts[0] = math.prod(counts[a] for a in tree_at.tolist())
    # The top tree spans its child trees.
    out.tree_lo[0], out.tree_hi[0] = out.tree_lo[1:].min(), out.tree_hi[1:].max()
    return out.forest(counts, virtuals)


def _exclusive_sum(x: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(x)[:-1]]).astype(np.int64)


class _Arrays:
    """The forest's columns while they are filled."""

    def __init__(self, n: int, t: int, paper_type: type) -> None:
        self.kind = np.full(n, REAL, dtype=np.int8)
        self.event = np.full(n, -1, dtype=np.int64)
        self.instant = np.full(n, -1, dtype=np.int64)
        self.tree = np.zeros(n, dtype=np.int64)
        self.parent = np.full(n, -1, dtype=np.int64)
        self.depth = np.zeros(n, dtype=np.int64)
        self.child_count = np.zeros(n, dtype=np.int64)
        self.child_tree = np.full(n, -1, dtype=np.int64)
        self.cond = np.ones(n)
        self.poi_local = np.ones(n)
        self.poi = np.ones(n)
        self.rel = np.zeros(n, dtype=np.int64)
        self.paper: np.ndarray = np.zeros(n, dtype=paper_type)
        self.compact = np.zeros(n, dtype=np.int64)
        self.compact_end = np.zeros(n, dtype=np.int64)
        self.tree_parent = np.zeros(t, dtype=np.int64)
        self.tree_virtual = np.zeros(t, dtype=np.int64)
        self.tree_root = np.zeros(t, dtype=np.int64)
        self.tree_lo = np.zeros(t, dtype=np.int64)
        self.tree_hi = np.zeros(t, dtype=np.int64)
        self.tree_fanout = np.zeros(t, dtype=np.int64)
        self.tree_height = np.zeros(t, dtype=np.int64)
        self.tree_paper: np.ndarray = np.zeros((t, 2), dtype=paper_type)
        self.tree_compact = np.zeros((t, 2), dtype=np.int64)

    def forest(self, counts: list[float], virtuals: list[list[int]]) -> GroupForest:
        # Children are listed node by node: a node's children are the nodes whose parent
        # it is, in id order (breadth-first numbering keeps siblings contiguous).
        has_parent = np.flatnonzero(self.parent >= 0)
        order = has_parent[np.argsort(self.parent[has_parent], kind="stable")]
        child_start = np.concatenate([[0], np.cumsum(self.child_count)]).astype(np.int64)
        return GroupForest(
            kind=self.kind, event=self.event, instant=self.instant, tree=self.tree,
            parent=self.parent, depth=self.depth, child_start=child_start,
            child_list=order.astype(np.int64), child_tree=self.child_tree,
            cond=self.cond, poi_local=self.poi_local, poi=self.poi,
            rel=self.rel.tolist(), paper_code=_ints(self.paper),
            compact_code=self.compact, compact_end=self.compact_end,
            tree_parent=self.tree_parent, tree_virtual=self.tree_virtual,
            tree_root=self.tree_root, tree_lo=self.tree_lo, tree_hi=self.tree_hi,
            tree_fanout=self.tree_fanout, tree_height=self.tree_height,
            tree_count=counts,
            tree_paper_range=list(map(tuple, _ints(self.tree_paper))),
            tree_compact_range=self.tree_compact, tree_virtuals=virtuals)


def _ints(codes: np.ndarray) -> list:
    """Paper codes as Python ints (nested lists for a 2-d array). An int64 array's
    ``tolist`` gives them already; an object array (codes past int64) may hold numpy
    integers its arithmetic made, which are converted."""
    if codes.dtype != object:
        return codes.tolist()
    if codes.ndim == 1:
        return [int(c) for c in codes.tolist()]
    return [[int(c) for c in row] for row in codes.tolist()]


def _lone_trees(out: _Arrays, events: np.ndarray, leaves: _Leaves,
                node_at: np.ndarray, tree_at: np.ndarray, virtual: np.ndarray,
                paper_at: np.ndarray, compact_at: np.ndarray) -> None:
    """Fill every lone event's tree at once: root ``node_at``, leaves ``node_at + 1 + j``
    placing the event at its ``j``-th instant (of positive weight)."""
    width = leaves.width
    out.kind[node_at] = ROOT
    out.tree[node_at] = tree_at
    out.child_count[node_at] = width
    out.paper[node_at] = paper_at
    out.compact[node_at] = compact_at
    out.compact_end[node_at] = compact_at + width
    owner, j = leaves.owner, leaves.j
    leaf = node_at[owner] + 1 + j
    out.event[leaf] = events[owner]
    out.instant[leaf] = leaves.instant
    out.tree[leaf] = tree_at[owner]
    out.parent[leaf] = node_at[owner]
    out.depth[leaf] = 1
    out.cond[leaf] = leaves.share
    out.poi_local[leaf] = leaves.share
    out.poi[leaf] = leaves.share
    out.rel[leaf] = j + 1
    out.paper[leaf] = paper_at[owner] + j + 1
    out.compact[leaf] = compact_at[owner] + j + 1
    out.compact_end[leaf] = out.compact[leaf]
    out.tree_parent[tree_at] = 0
    out.tree_virtual[tree_at] = virtual
    out.tree_root[tree_at] = node_at
    last = np.cumsum(width) - 1
    out.tree_lo[tree_at] = leaves.instant[last - width + 1]
    out.tree_hi[tree_at] = leaves.instant[last]
    out.tree_fanout[tree_at] = width
    out.tree_height[tree_at] = 1
    out.tree_paper[tree_at, 0] = paper_at
    out.tree_paper[tree_at, 1] = paper_at + width
    out.tree_compact[tree_at, 0] = compact_at
    out.tree_compact[tree_at, 1] = compact_at + width


def _copy_piece(out: _Arrays, piece: _Piece, node_at: int, tree_at: int, virtual: int,
                paper_at: int, compact_at: int, counts: list[float],
                virtuals: list[list[int]]) -> None:
    """A planned piece's forest, renumbered into the group's (its tree 0 hangs below
    ``virtual``; its codes start at that virtual node's)."""
    f = piece.forest
    s = slice(node_at, node_at + f.n_nodes)
    ts = slice(tree_at, tree_at + f.n_trees)
    out.kind[s] = f.kind
    out.event[s] = np.where(f.event >= 0, f.event + piece.offset, -1)
    out.instant[s] = f.instant
    out.tree[s] = f.tree + tree_at
    out.parent[s] = np.where(f.parent >= 0, f.parent + node_at, -1)
    out.depth[s] = f.depth
    out.child_count[s] = np.diff(f.child_start)
    out.child_tree[s] = np.where(f.child_tree >= 0, f.child_tree + tree_at, -1)
    out.cond[s] = f.cond
    out.poi_local[s] = f.poi_local
    out.poi[s] = f.poi
    out.rel[s] = f.rel
    out.paper[s] = np.asarray(f.paper_code, dtype=out.paper.dtype) + paper_at
    out.compact[s] = f.compact_code + compact_at
    out.compact_end[s] = f.compact_end + compact_at
    out.tree_parent[ts] = np.where(f.tree_parent >= 0, f.tree_parent + tree_at, 0)
    out.tree_virtual[ts] = np.where(f.tree_virtual >= 0, f.tree_virtual + node_at, virtual)
    out.tree_root[ts] = f.tree_root + node_at
    out.tree_lo[ts] = f.tree_lo
    out.tree_hi[ts] = f.tree_hi
    out.tree_fanout[ts] = f.tree_fanout
    out.tree_height[ts] = f.tree_height
    out.tree_paper[ts] = np.asarray(f.tree_paper_range, dtype=out.paper.dtype) + paper_at
    out.tree_compact[ts] = f.tree_compact_range + compact_at
    counts[ts] = f.tree_count
    virtuals[ts] = [[v + node_at for v in vs] for vs in f.tree_virtuals]
