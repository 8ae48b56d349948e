"""A group's pieces' forests cut out of the group's own forest, all at once.

A group cut into shards is indexed piece by piece, each piece as a group of its own
(:mod:`uncertain_cep.index.shards.cuts`). Built one by one
(:func:`~uncertain_cep.index.forests.cluster_forest.forest_of_clusters` per piece), every
piece costs about 0.45 ms of fixed work whatever its size: a group of 1,000 events spread
over 25 shards spent 2.2 s of a 4.9 s task on 5,000 small forests. Yet a piece's forest is
a part of the group's: the group's top tree is a chain of virtual nodes, one per child
tree (a lone event's tree or a planned cluster's tree), in time order; a piece is a run
of whole clusters, so its child trees are a run of that chain, numbered, coded and placed
as the group's are, only shifted. :func:`split_group_forest` builds the group's forest
once and cuts each piece's rows out of it with a few array operations per piece: the
piece's top tree (a root and its own chain), then its child trees' nodes and trees with
their ids, trees, codes and events moved to the piece's. The rows equal what the piece's
own forest gives, row for row (tested on random groups and cuts).

Only the rows a build writes are made (:class:`PieceForest`: the node and tree columns of
:func:`~uncertain_cep.index.forests.tables.forests_tables` and what
:func:`~uncertain_cep.index.forests.tables.group_extents` reads), for compact codes. A
piece of one cluster is planned whole by the builder (its forest has no chain), so it is
left to the caller (``None``).

>>> from uncertain_cep.index.forests.cluster_forest import forest_of_clusters
>>> from uncertain_cep.index.forests.tables import forests_tables
>>> t_lo, t_hi = np.array([1, 2, 2, 5, 9, 12]), np.array([3, 3, 3, 7, 10, 12])
>>> shard = np.array([0, 0, 0, 0, 1, 1])           # cut between 5 and 9
>>> cut = split_group_forest(forest_of_clusters(t_lo, t_hi), t_lo, t_hi, shard)
>>> [(k, p.n_nodes) for k, p in cut]
[(0, 15), (1, 8)]
>>> own = forest_of_clusters(t_lo[4:], t_hi[4:])
>>> forests_tables([cut[1][1]], ["g"])[0].equals(forests_tables([own], ["g"])[0])
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from uncertain_cep.index.forests.cluster_forest import isolated_clusters
from uncertain_cep.index.forests.forest import ROOT, VIRTUAL, GroupForest

__all__ = ["PieceForest", "split_group_forest"]


class PieceForest(NamedTuple):
    """The columns of a piece's forest that a build writes (those of
    :class:`~uncertain_cep.index.forests.forest.GroupForest` of the same names)."""

    kind: np.ndarray
    event: np.ndarray
    instant: np.ndarray
    tree: np.ndarray
    parent: np.ndarray
    depth: np.ndarray
    child_tree: np.ndarray
    compact_code: np.ndarray
    compact_end: np.ndarray
    cond: np.ndarray
    poi: np.ndarray
    tree_parent: np.ndarray
    tree_virtual: np.ndarray
    tree_root: np.ndarray
    tree_compact_range: np.ndarray

    @property
    def n_nodes(self) -> int:
        return len(self.kind)

    @property
    def n_trees(self) -> int:
        return len(self.tree_parent)


class _Chain(NamedTuple):
    """The group forest's top chain: per child tree, its first node, first tree and
    first compact code, with one entry past the end."""

    node_at: np.ndarray
    tree_at: np.ndarray
    code_at: np.ndarray


def split_group_forest(forest: GroupForest, t_lo: Sequence[int] | np.ndarray,
                       t_hi: Sequence[int] | np.ndarray,
                       shard: np.ndarray) -> list[tuple[int, PieceForest | None]] | None:
    """Each piece's forest rows, cut from its group's ``forest`` (made by
    :func:`~uncertain_cep.index.forests.cluster_forest.forest_of_clusters` from the
    group's events in canonical order, ``t_lo`` and ``t_hi``); ``shard``: per event, its
    shard (whole clusters each, ascending). Pieces in shard order, ``None`` for a piece
    of one cluster (its forest is planned whole: build it on its own). ``None`` when the
    forest's chain does not follow the pieces (not a forest of clusters)."""
    shard = np.asarray(shard, dtype=np.int64)
    chain = _chain(forest)
    if chain is None or (np.diff(shard) < 0).any():
        return None
    m = len(chain.node_at) - 1
    # Each child tree's piece: that of its events (all in one cluster, so one shard).
    real = np.flatnonzero(forest.event >= 0)
    child_of_real = np.searchsorted(chain.node_at, real, side="right") - 1
    piece_of_real = shard[forest.event[real]]
    first = np.unique(child_of_real, return_index=True)[1]
    if len(first) != m:
        return None
    piece_of_child = piece_of_real[first]
    if (piece_of_real != piece_of_child[child_of_real]).any() or \
            (np.diff(piece_of_child) < 0).any():
        return None
    bounds = isolated_clusters(np.asarray(t_lo, dtype=np.int64),
                               np.asarray(t_hi, dtype=np.int64))
    clusters = np.bincount(shard[bounds[:-1]])
    pieces, child_start = np.unique(piece_of_child, return_index=True)
    child_end = np.r_[child_start[1:], m]
    event_start = np.searchsorted(shard, pieces)
    out: list[tuple[int, PieceForest | None]] = []
    for k, p0, p1, e0 in zip(pieces.tolist(), child_start.tolist(), child_end.tolist(),
                             event_start.tolist()):
        out.append((k, None if clusters[k] < 2 else _cut(forest, chain, p0, p1, e0)))
    return out


def _chain(forest: GroupForest) -> _Chain | None:
    """The top chain of a forest of clusters, or None for another forest."""
    m = int(forest.tree_height[0]) if forest.n_trees else 0
    if m < 1 or forest.kind[0] != ROOT or not (forest.kind[1:m + 1] == VIRTUAL).all():
        return None
    trees = forest.child_tree[1:m + 1]
    nodes = forest.tree_root[trees]
    if trees[0] != 1 or nodes[0] != m + 1 or (np.diff(trees) <= 0).any() or \
            (np.diff(nodes) <= 0).any():
        return None
    return _Chain(node_at=np.r_[nodes, forest.n_nodes],
                  tree_at=np.r_[trees, forest.n_trees],
                  code_at=np.r_[forest.compact_code[1:m + 1], forest.compact_end[0] + 1])


def _cut(f: GroupForest, chain: _Chain, p0: int, p1: int, e0: int) -> PieceForest:
    """The rows of the piece made of child trees ``p0:p1`` (first event ``e0``): its top
    tree (a root and a chain of ``p1 - p0`` virtual nodes), then those trees' rows, ids
    moved to the piece's."""
    m_k = p1 - p0
    a, b = int(chain.node_at[p0]), int(chain.node_at[p1])
    ta, tb = int(chain.tree_at[p0]), int(chain.tree_at[p1])
    node_shift = 1 + m_k - a
    tree_shift = 1 - ta
    code_shift = 1 - int(chain.code_at[p0])
    last_code = int(chain.code_at[p1]) - int(chain.code_at[p0])
    top = np.arange(m_k + 1, dtype=np.int64)
    minus = np.full(m_k + 1, -1, dtype=np.int64)
    kind = np.full(m_k + 1, VIRTUAL, dtype=f.kind.dtype)
    kind[0] = ROOT
    event = f.event[a:b]
    parent = f.parent[a:b]
    child_tree = f.child_tree[a:b]
    top_child_tree = _after(-1, chain.tree_at[p0:p1] + tree_shift)
    tree_parent = f.tree_parent[ta:tb]
    tree_virtual = f.tree_virtual[ta:tb]
    m = len(chain.node_at) - 1
    return PieceForest(
        kind=np.concatenate([kind, f.kind[a:b]]),
        event=np.concatenate([minus, np.where(event >= 0, event - e0, -1)]),
        instant=np.concatenate([minus, f.instant[a:b]]),
        tree=np.concatenate([np.zeros(m_k + 1, dtype=np.int64), f.tree[a:b] + tree_shift]),
        parent=np.concatenate([top - 1, np.where(parent >= 0, parent + node_shift, -1)]),
        depth=np.concatenate([top, f.depth[a:b]]),
        child_tree=np.concatenate([top_child_tree,
                                   np.where(child_tree >= 0, child_tree + tree_shift, -1)]),
        compact_code=np.concatenate([_after(0, f.compact_code[p0 + 1:p1 + 1] + code_shift),
                                     f.compact_code[a:b] + code_shift]),
        compact_end=np.concatenate([np.full(m_k + 1, last_code, dtype=np.int64),
                                    f.compact_end[a:b] + code_shift]),
        cond=np.concatenate([np.ones(m_k + 1), f.cond[a:b]]),
        poi=np.concatenate([np.ones(m_k + 1), f.poi[a:b]]),
        # A child tree of the chain hangs below tree 0 and a chain node (ids 1..m);
        # a tree nested in it, below a tree and a node of the same run.
        tree_parent=_after(-1, np.where(tree_parent == 0, 0, tree_parent + tree_shift)),
        tree_virtual=_after(-1, np.where(tree_virtual <= m, tree_virtual - p0,
                                         tree_virtual + node_shift)),
        tree_root=_after(0, f.tree_root[ta:tb] + node_shift),
        tree_compact_range=np.concatenate([[[0, last_code]],
                                           f.tree_compact_range[ta:tb] + code_shift]))


def _after(first: int, rest: np.ndarray) -> np.ndarray:
    """``first`` then ``rest`` (``np.r_`` costs several microseconds a call)."""
    out = np.empty(len(rest) + 1, dtype=rest.dtype)
    out[0] = first
    out[1:] = rest
    return out
