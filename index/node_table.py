"""Every OI-tree node of an index as flat arrays: the columnar view the batch engine reads.

Node ids are global: group ``g``'s nodes are ``group_start[g]`` to ``group_start[g+1]-1``
in its forest's own order, trees likewise (``tree_start``). Per node: its group, archive
row (-1 for roots, virtual nodes and events outside a time slice), instant, tree,
``poi`` (the fraction of the group's OIs through it, Zhou et al. 4.1) and its compact
code and subtree end (4.2); per tree: its parent tree, nesting level, the virtual node
standing for it and the last compact code inside it.

That is all a chain of nodes needs (:mod:`uncertain_cep.query.evaluation.chains` as arrays):

* ``b`` descends from ``a`` (an OI passes ``a`` and later ``b``) iff ``b``'s code lies in
  ``a``'s subtree ``(code[a], code_end[a]]``, or, for a tree ``T`` enclosing ``a``, after
  ``T`` inside its virtual node ``v``: ``(tree_last_code[T], code_end[v]]``;
* extending a chain ending at ``a`` by ``b`` multiplies its probability by
  ``poi[b] / poi[x]``, ``x`` being ``a``'s context node (``a`` or a virtual node enclosing
  it) in the deepest tree that encloses both ``a`` and ``b``: the trees they share count
  once.

>>> import pandas as pd
>>> from uncertain_cep.index.event_index import EventIndex
>>> from uncertain_cep.index.group_build import BuildSettings
>>> from uncertain_cep.model.events import read_archive
>>> archive = read_archive(pd.DataFrame({"event_id": [1, 2, 3], "group": [0, 0, 1],
...                                      "t_lo": [1, 1, 0], "t_hi": [2, 2, 0]}))
>>> table = EventIndex(archive, BuildSettings()).node_table
>>> table.n_nodes, table.group_start.tolist(), table.row[table.row >= 0].tolist()
(7, [0, 5, 7], [0, 1, 1, 0, 2])
>>> table.poi[table.row == 0].tolist()
[0.5, 0.5]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np

from uncertain_cep.errors import IndexFormatError
from uncertain_cep.index.forests.forest import REAL, GroupForest

__all__ = ["ID_LIMIT", "NodeArrays", "NodeTable", "column_dtype", "id_dtype", "node_table"]

# Ids, codes and offsets are int32 while every one of them stays below this (every kernel
# is compiled for that width); a larger table keeps int64 and its kernels compile on use.
ID_LIMIT = 2**31 - 1
_WIDE = frozenset({"instant"})      # instants are the archive's, not counted by the table
_NARROW = frozenset({"kind"})
_FLOAT = frozenset({"poi", "cond"})


def id_dtype(n_nodes: int, n_rows: int) -> np.dtype:
    """The integer type of a table's ids, codes and offsets (:func:`column_dtype`): int32
    while nodes and archive rows both stay below :data:`ID_LIMIT` (compact codes, child
    slots and row-node slots are bounded by the nodes), else int64.

    >>> id_dtype(5_500_000, 1_000_000), id_dtype(3_000_000_000, 10)
    (dtype('int32'), dtype('int64'))
    """
    return np.dtype(np.int32 if max(n_nodes, n_rows) < ID_LIMIT else np.int64)


def column_dtype(column: str, ids: np.dtype) -> np.dtype:
    """The type of a node-table column, ``ids`` the table's :func:`id_dtype`: ``poi`` and
    ``cond`` 8-byte floats (answers exact to 1e-9), ``instant`` int64, ``kind`` int8,
    every other column ``ids``.

    >>> column_dtype("child_list", id_dtype(10, 4)), column_dtype("instant", np.int32)
    (dtype('int32'), dtype('int64'))
    """
    if column in _FLOAT:
        return np.dtype(np.float64)
    if column in _NARROW:
        return np.dtype(np.int8)
    return np.dtype(np.int64) if column in _WIDE else np.dtype(ids)


class NodeArrays(NamedTuple):
    """A :class:`NodeTable`'s arrays as one record, the form every compiled kernel
    takes them in (:attr:`NodeTable.arrays`; numba passes a NamedTuple as a tuple, so a
    kernel reads ``nodes.poi`` at no cost). The columns are the table's, plus each
    group's root, derived once per table from the per-group and per-tree arrays alone
    (nothing is derived from the per-node columns here: a memory-mapped table's pages
    are read only where a query reads them)."""

    # per node
    group: np.ndarray
    row: np.ndarray
    instant: np.ndarray
    tree: np.ndarray
    poi: np.ndarray
    code: np.ndarray
    code_end: np.ndarray
    kind: np.ndarray
    parent: np.ndarray
    cond: np.ndarray
    depth: np.ndarray
    child_start: np.ndarray
    child_list: np.ndarray
    child_root: np.ndarray
    # per tree
    tree_parent: np.ndarray
    tree_level: np.ndarray
    tree_virtual: np.ndarray
    tree_last_code: np.ndarray
    tree_root: np.ndarray
    # per group
    group_root: np.ndarray      # the root of the group's top tree, -1 without trees
    # per archive row
    row_nodes_start: np.ndarray
    row_nodes: np.ndarray


@dataclass(frozen=True, eq=False)
class NodeTable:
    """Flat node and tree arrays of a whole index (see the module docstring)."""

    group_start: np.ndarray     # (groups + 1,) first global node id of each group
    tree_start: np.ndarray      # (groups + 1,) first global tree id of each group
    group: np.ndarray           # per node
    row: np.ndarray             # per node: archive row, -1 if none
    instant: np.ndarray         # per node: -1 for roots and virtual nodes
    tree: np.ndarray            # per node: global tree id
    poi: np.ndarray             # per node: fraction of the group's OIs through it
    code: np.ndarray            # per node: compact code (local to the group)
    code_end: np.ndarray        # per node: last compact code in its subtree
    tree_parent: np.ndarray     # per tree: global parent tree, -1 for a group's top tree
    tree_level: np.ndarray      # per tree: nesting depth (a group's top tree is 0)
    tree_virtual: np.ndarray    # per tree: global virtual node standing for it, -1 at top
    tree_last_code: np.ndarray  # per tree: last compact code inside it
    row_nodes_start: np.ndarray  # (rows + 1,) CSR of each archive row's real nodes
    row_nodes: np.ndarray
    # What the weighted sum over OIs (negation, query/engine/kernels/negation.py) walks:
    kind: np.ndarray            # per node: ROOT / REAL / VIRTUAL
    parent: np.ndarray          # per node: global parent in its tree, -1 for a root
    cond: np.ndarray            # per node: P(an OI through its parent goes on to it)
    depth: np.ndarray           # per node: depth counting the trees above it
    child_start: np.ndarray     # (nodes + 1,) CSR of each node's children
    child_list: np.ndarray
    child_root: np.ndarray      # per node: root of the tree a virtual node stands for, else -1
    tree_root: np.ndarray       # per tree: global root node

    def __post_init__(self) -> None:
        # One type per column for every table, built or mapped: the kernels compile once.
        ids = self.ids
        for name, values in vars(self).items():
            want = column_dtype(name, ids)
            if isinstance(values, np.ndarray) and values.dtype != want:
                object.__setattr__(self, name, _cast(name, values, want))

    @property
    def n_nodes(self) -> int:
        return len(self.group)

    @property
    def ids(self) -> np.dtype:
        """The type of the table's ids, codes and offsets (:func:`id_dtype`)."""
        return id_dtype(len(self.group), len(self.row_nodes_start) - 1)

    @cached_property
    def nests_trees(self) -> np.ndarray:
        """Per tree, whether another tree hangs below one of its nodes."""
        nests = np.zeros(len(self.tree_parent), dtype=np.bool_)
        parents = np.asarray(self.tree_parent)
        nests[parents[parents >= 0]] = True
        return nests

    @cached_property
    def arrays(self) -> NodeArrays:
        """The table as the kernels take it (:class:`NodeArrays`), built once."""
        has_trees = self.tree_start[1:] > self.tree_start[:-1]
        top = np.minimum(self.tree_start[:-1], max(len(self.tree_root) - 1, 0))
        group_root = (np.where(has_trees, self.tree_root[top], -1) if len(self.tree_root)
                      else np.full(len(has_trees), -1, dtype=np.int64))
        return NodeArrays(
            group=self.group, row=self.row, instant=self.instant, tree=self.tree,
            poi=self.poi, code=self.code, code_end=self.code_end, kind=self.kind,
            parent=self.parent, cond=self.cond, depth=self.depth,
            child_start=self.child_start, child_list=self.child_list,
            child_root=self.child_root, tree_parent=self.tree_parent,
            tree_level=self.tree_level, tree_virtual=self.tree_virtual,
            tree_last_code=self.tree_last_code, tree_root=self.tree_root,
            group_root=group_root.astype(self.ids), row_nodes_start=self.row_nodes_start,
            row_nodes=self.row_nodes)

    def nodes_of_rows(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The real nodes of ``rows``: ``(which row of rows, node)`` pairs, rows in order."""
        starts = self.row_nodes_start[rows]
        counts = self.row_nodes_start[rows + 1] - starts
        owner = np.repeat(np.arange(len(rows)), counts)
        offsets = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
        return owner, self.row_nodes[np.repeat(starts, counts) + offsets]


def _cast(name: str, values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``values`` as ``dtype``, refused where a value would not survive the cast."""
    out = values.astype(dtype)
    if len(values) and np.issubdtype(dtype, np.integer) and not np.array_equal(out, values):
        raise IndexFormatError(f"the node table's column {name!r} holds values outside "
                               f"{dtype}; rebuild the index")
    return out


def node_table(forests: Sequence[GroupForest], members: Sequence[np.ndarray],
               n_rows: int) -> NodeTable:
    """The :class:`NodeTable` of an index's forests (``members[g]``: the archive row of
    each event position of group ``g``, -1 where absent), offset and concatenated."""
    sizes = np.array([f.n_nodes for f in forests], dtype=np.int64)
    trees = np.array([f.n_trees for f in forests], dtype=np.int64)
    group_start = np.concatenate([[0], np.cumsum(sizes)])
    tree_start = np.concatenate([[0], np.cumsum(trees)])
    ids = id_dtype(int(group_start[-1]), n_rows)

    def cat(parts: list[np.ndarray], dtype: np.dtype | type) -> np.ndarray:
        return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype=dtype)

    row, tree, tparent, tvirtual, parent, child_root, tree_root = [], [], [], [], [], [], []
    for g, f in enumerate(forests):
        real = f.kind == REAL
        r = np.full(f.n_nodes, -1, dtype=np.int64)
        r[real] = members[g][f.event[real]]
        row.append(r)
        tree.append(f.tree + tree_start[g])
        tparent.append(np.where(f.tree_parent >= 0, f.tree_parent + tree_start[g], -1))
        tvirtual.append(np.where(f.tree_virtual >= 0, f.tree_virtual + group_start[g], -1))
        parent.append(np.where(f.parent >= 0, f.parent + group_start[g], -1))
        # A time slice keeps only some trees of a group: a tree it left out has no root
        # (-1), and a virtual node standing for it has no child root.
        roots = np.where(f.tree_root >= 0, f.tree_root + group_start[g], -1)
        child_root.append(np.where(f.child_tree >= 0, roots[np.maximum(f.child_tree, 0)], -1))
        tree_root.append(roots)
    tree_parent = cat(tparent, ids)
    # Nesting levels, one gather per level of nesting (it is shallow).
    level = np.zeros(len(tree_parent), dtype=ids)
    up = tree_parent.copy()
    while (inner := up >= 0).any():
        level[inner] += 1
        up[inner] = tree_parent[up[inner]]
    rows = cat(row, ids)
    real_nodes = np.flatnonzero(rows >= 0)
    order = real_nodes[np.argsort(rows[real_nodes], kind="stable")]
    counts = np.bincount(rows[order], minlength=n_rows)
    return NodeTable(
        group_start=group_start, tree_start=tree_start,
        group=np.repeat(np.arange(len(forests), dtype=ids), sizes),
        row=rows,
        instant=cat([f.instant for f in forests], np.int64),
        tree=cat(tree, ids),
        poi=cat([f.poi for f in forests], np.float64),
        code=cat([f.compact_code for f in forests], ids),
        code_end=cat([f.compact_end for f in forests], ids),
        tree_parent=tree_parent,
        tree_level=level,
        tree_virtual=cat(tvirtual, ids),
        tree_last_code=cat([f.tree_compact_range[:, 1] for f in forests], ids),
        row_nodes_start=np.concatenate([[0], np.cumsum(counts)]).astype(ids),
        row_nodes=order.astype(ids),
        kind=cat([f.kind for f in forests], np.int8),
        parent=cat(parent, ids),
        cond=cat([f.cond for f in forests], np.float64),
        depth=cat([f.global_depth for f in forests], ids),
        child_start=np.concatenate([[0], np.cumsum(cat(
            [np.diff(f.child_start) for f in forests], np.int64))]).astype(ids),
        child_list=cat([f.child_list + group_start[g] for g, f in enumerate(forests)], ids),
        child_root=cat(child_root, ids),
        tree_root=cat(tree_root, ids))
