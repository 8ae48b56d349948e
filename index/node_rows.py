"""Node-table columns derived from rows of an index's Parquet ``nodes`` and ``trees``
tables, with array operations only (no Python object per node).

:func:`~uncertain_cep.index.store.node_columns.write_node_columns` fills the whole index's
columns, piece of whole groups by piece, into memory-mapped files (a group's nodes are
numbered from its first).

Global node ids follow ``(group, stored id)`` order and tree ids ``(group, stored tree
id)``; children are listed in id order, which is sibling order (ids are breadth-first per
tree); depth counts the trees above a node (a child tree's root sits one level below the
virtual node standing for it).
"""

from __future__ import annotations

import dataclasses
import mmap
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from uncertain_cep.index.forests.forest import REAL, VIRTUAL
from uncertain_cep.index.forests.tables import NODE_COLUMNS, TREE_COLUMNS

__all__ = ["NODE_ROW_COLUMNS", "TREE_ROW_COLUMNS", "DenseIds", "DenseRows", "TableSizes",
           "TreeColumns", "add_depth_of_trees_above", "fill_nodes",
           "node_column_sizes", "release_pages", "starts"]

# Rows per chunk when a whole column is updated in place (bounded memory).
_CHUNK = 1 << 22


# Columns of the builders' rows the derivation reads: all of them.
NODE_ROW_COLUMNS, TREE_ROW_COLUMNS = NODE_COLUMNS, TREE_COLUMNS


def fill_nodes(out: Mapping[str, np.ndarray], nodes: Mapping[str, Any], g: np.ndarray,
                at: np.ndarray, parent: np.ndarray, tree_ids: DenseIds,
                rows: DenseRows, sizes: TableSizes, trees: TreeColumns) -> None:
    """Write the rows of whole groups (``g`` their group codes, ``at`` and ``parent``
    their and their parents' global ids) into the node columns ``out``."""
    kind = np.asarray(nodes["kind"], dtype=np.int8)
    out["group"][at] = g
    out["kind"][at] = kind
    for column, source in (("instant", "instant"), ("code", "compact_code"),
                           ("code_end", "compact_end")):
        out[column][at] = np.asarray(nodes[source], dtype=np.int64)
    out["poi"][at] = np.asarray(nodes["poi"], dtype=np.float64)
    out["cond"][at] = np.asarray(nodes["cond"], dtype=np.float64)
    out["tree"][at] = tree_ids(g, np.asarray(nodes["tree"], dtype=np.int64))
    out["parent"][at] = parent
    real = kind == REAL
    row = np.full(len(at), -1, dtype=np.int64)
    row[real] = rows(g[real], np.asarray(nodes["event"], dtype=np.int64)[real])
    out["row"][at] = row
    child_tree = np.asarray(nodes["child_tree"], dtype=np.int64)
    virtual = (kind == VIRTUAL) & (child_tree >= 0)
    child_root = np.full(len(at), -1, dtype=np.int64)
    below = tree_ids(g[virtual], child_tree[virtual])
    child_root[virtual] = np.where(below >= 0, trees.tree_root[np.maximum(below, 0)], -1)
    out["child_root"][at] = child_root
    # Depth within the tree for now; the trees above are added later.
    out["depth"][at] = np.asarray(nodes["depth"], dtype=np.int64)
    # Children in sibling order, which is id order (ids are breadth-first per tree):
    # sorted by (parent, child), a group's children fill its stretch of child_list.
    has_parent = parent >= 0
    kids, parents = at[has_parent], parent[has_parent]
    order = np.lexsort((kids, parents))
    kids, parents = kids[order], parents[order]
    kid_group = g[has_parent][order]
    out["child_list"][sizes.child_offset[kid_group] + _rank_in_runs(kid_group)] = kids
    # child_start of each node: its group's offset plus the children of the group's
    # nodes before it.
    by_id = np.argsort(at)
    sorted_at, sorted_g = at[by_id], g[by_id]
    per_node = np.bincount(np.searchsorted(sorted_at, parents), minlength=len(at))
    before = np.cumsum(per_node) - per_node
    first = _run_starts(sorted_g)
    before -= np.repeat(before[first], np.diff(np.r_[first, len(sorted_g)]))
    out["child_start"][sorted_at] = sizes.child_offset[sorted_g] + before
    # Each archive row's real nodes, in id order (a slice's other events have none).
    held = row >= 0
    real_at, real_row = at[held], row[held]
    order = np.lexsort((real_at, real_row))
    real_at, real_row = real_at[order], real_row[order]
    out["row_nodes"][sizes.row_nodes_start[real_row] + _rank_in_runs(real_row)] = real_at


def add_depth_of_trees_above(out: Mapping[str, np.ndarray], trees: TreeColumns,
                              n_nodes: int) -> None:
    """Depth counting the trees above: a child tree's root sits one level below the
    virtual node standing for it. Parents come first in level order; a tree whose nodes
    are not held adds nothing."""
    level, virtual = trees.tree_level, trees.tree_virtual
    base = np.zeros(len(level), dtype=np.int64)
    for depth in range(1, int(level.max()) + 1 if len(level) else 1):
        at = np.flatnonzero((level == depth) & (virtual >= 0))
        v = virtual[at]
        # The depth column is still within-tree; the virtual node's tree is a level up,
        # so its base is final.
        base[at] = np.asarray(out["depth"][v]) + base[np.asarray(out["tree"][v])] + 1
    for lo in range(0, n_nodes, _CHUNK):
        hi = min(lo + _CHUNK, n_nodes)
        out["depth"][lo:hi] += base[np.asarray(out["tree"][lo:hi])]
        mapped = [a for a in (out["depth"], out["tree"]) if isinstance(a, np.memmap)]
        release_pages(mapped)


@dataclasses.dataclass(frozen=True)
class TableSizes:
    """CSR offsets: per group its first node, tree and child-list slot; per row its
    first real node."""

    group_start: np.ndarray
    tree_start: np.ndarray
    child_offset: np.ndarray
    row_nodes_start: np.ndarray

    def arrays(self) -> tuple[tuple[str, np.ndarray], ...]:
        return (("group_start", self.group_start), ("tree_start", self.tree_start),
                ("row_nodes_start", self.row_nodes_start))


@dataclasses.dataclass(frozen=True)
class TreeColumns:
    """The per-tree columns (small enough to hold: one row per tree)."""

    tree_parent: np.ndarray
    tree_level: np.ndarray
    tree_virtual: np.ndarray
    tree_last_code: np.ndarray
    tree_root: np.ndarray

    @classmethod
    def of(cls, pieces: Iterable[tuple[np.ndarray, Mapping[str, Any]]],
           tree_ids: DenseIds, ids: DenseIds, n_trees: int
           ) -> TreeColumns:
        """The columns from ``(group codes, tree rows)`` pieces."""
        parent, virtual, root = (np.full(n_trees, -1, dtype=np.int64) for _ in range(3))
        last_code = np.zeros(n_trees, dtype=np.int64)
        for g, batch in pieces:
            at = tree_ids(g, np.asarray(batch["tree"], dtype=np.int64))
            parent[at] = tree_ids(g, batch["parent"])
            virtual[at] = ids(g, batch["virtual"])
            root[at] = ids(g, batch["root"])
            last_code[at] = np.asarray(batch["compact_hi"], dtype=np.int64)
        level = np.zeros(n_trees, dtype=np.int64)
        up = parent.copy()
        while (inner := up >= 0).any():   # one gather per level of nesting (it is shallow)
            level[inner] += 1
            up[inner] = parent[up[inner]]
        return cls(parent, level, virtual, last_code, root)

    def arrays(self) -> tuple[tuple[str, np.ndarray], ...]:
        return tuple((f.name, getattr(self, f.name)) for f in dataclasses.fields(self))


def node_column_sizes(sizes: TableSizes) -> tuple[tuple[str, int], ...]:
    n_nodes = int(sizes.group_start[-1])
    return (*((c, n_nodes) for c in ("group", "row", "instant", "tree", "poi", "code",
                                      "code_end", "kind", "parent", "cond", "depth",
                                      "child_root")),
            ("child_start", n_nodes + 1), ("child_list", int(sizes.child_offset[-1])),
            ("row_nodes", int(sizes.row_nodes_start[-1])))


class DenseIds:
    """Global node ids of a whole index: a group's nodes are numbered from its start."""

    def __init__(self, group_start: np.ndarray) -> None:
        self.group_start = group_start

    def __call__(self, g: np.ndarray, local: object) -> np.ndarray:
        return _offset(local, self.group_start[g])


class DenseRows:
    """Archive row of ``(group, position)`` for every event of the index."""

    def __init__(self, group_of_row: np.ndarray, pos_of_row: np.ndarray, n_groups: int
                 ) -> None:
        self.n_rows = len(group_of_row)
        self.event_start = starts(np.bincount(group_of_row, minlength=n_groups))
        self.row_of_event = np.full(self.n_rows, -1, dtype=np.int64)
        self.row_of_event[self.event_start[group_of_row] + pos_of_row] = np.arange(self.n_rows)

    def __call__(self, g: np.ndarray, pos: np.ndarray) -> np.ndarray:
        return self.row_of_event[self.event_start[g] + pos]


def release_pages(arrays: Iterable[np.memmap]) -> None:
    """Write the mapped columns' dirty pages back and drop them from this process: a
    large build's mapped outputs would otherwise stay resident (counted in its memory)
    until it ends."""
    for array in arrays:
        array.flush()
        mapped = getattr(array, "_mmap", None)   # numpy keeps the mmap object here
        if mapped is not None and hasattr(mmap, "MADV_DONTNEED"):
            mapped.madvise(mmap.MADV_DONTNEED)


def starts(counts: np.ndarray) -> np.ndarray:
    """Exclusive prefix sums with the total appended: CSR offsets of ``counts``."""
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


def _offset(ids: object, base: np.ndarray) -> np.ndarray:
    """Group-local ids made global (``-1`` stays ``-1``)."""
    local = np.asarray(ids, dtype=np.int64)
    return np.where(local >= 0, local + base, -1)


def _run_starts(values: np.ndarray) -> np.ndarray:
    """Where each run of equal values starts."""
    return np.r_[0, np.flatnonzero(np.diff(values)) + 1].astype(np.int64) if len(values) \
        else np.zeros(0, dtype=np.int64)


def _rank_in_runs(values: np.ndarray) -> np.ndarray:
    """Position of each element within its run of equal values."""
    first = _run_starts(values)
    return np.arange(len(values)) - np.repeat(first, np.diff(np.r_[first, len(values)]))


