"""A group's forest as the rows a build writes, and the per-event extents the R*-tree
boxes need.

Both builders share this module: the in-process one
(:mod:`uncertain_cep.index.store.storage`) and the Spark job's group tasks
(:mod:`uncertain_cep.index.store.partition_writer`). The rows carry what the build's last
step reads to lay out the node table (:mod:`uncertain_cep.index.store.node_columns`),
nothing more: they are deleted once the index is written, and forests are rebuilt from
the archive when a baseline walks them (:func:`uncertain_cep.index.event_index.build_forests`).

>>> from uncertain_cep.index.forests.oi_tree import plan_group
>>> from uncertain_cep.index.forests.forest_builder import build_forest
>>> f = build_forest(plan_group([1, 2, 2, 3, 4, 5, 6], [3, 3, 3, 7, 6, 6, 7]))
>>> nodes, trees = forests_tables([f, f], groups=['S_k', 'S_j'])
>>> nodes.num_rows == 2 * f.n_nodes and trees.num_rows == 2 * f.n_trees
True
>>> nodes["node"].to_pylist() == 2 * list(range(f.n_nodes))
True
>>> nodes.column_names == list(NODE_COLUMNS)
True
>>> t_min, t_max, lo, hi = group_extents(f, "compact")
>>> t_min.tolist(), t_max.tolist()
([1, 2, 2, 4, 4, 5, 6], [1, 3, 3, 7, 6, 6, 7])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from uncertain_cep.index.forests.forest import REAL, GroupForest
from uncertain_cep.index.forests.piece_forests import PieceForest
from uncertain_cep.index.forests.rounding import float_down, float_up

__all__ = [
    "NODE_COLUMNS",
    "TREE_COLUMNS",
    "ForestRows",
    "forests_tables",
    "group_extents",
    "node_schema",
    "tree_schema",
]

_NODE_INT = ("tree", "parent", "kind", "event", "instant", "depth", "child_tree",
             "compact_code", "compact_end")
_NODE_FLOAT = ("cond", "poi")
NODE_COLUMNS = ("group", "node", *_NODE_INT, *_NODE_FLOAT)
_TREE_INT = ("parent", "virtual", "root", "compact_hi")
TREE_COLUMNS = ("group", "tree", *_TREE_INT)

# What the tables are made of: a whole forest, or a piece's rows cut from its group's.
ForestRows = GroupForest | PieceForest


def node_schema(group_type: pa.DataType) -> pa.Schema:
    """Schema of the nodes rows; ``group`` holds the group's key as in the archive."""
    return pa.schema([("group", group_type), ("node", pa.int64())]
                     + [(k, pa.int64()) for k in _NODE_INT]
                     + [(k, pa.float64()) for k in _NODE_FLOAT])


def tree_schema(group_type: pa.DataType) -> pa.Schema:
    """Schema of the trees rows; ``group`` holds the group's key as in the archive."""
    return pa.schema([("group", group_type), ("tree", pa.int64())]
                     + [(k, pa.int64()) for k in _TREE_INT])


def forests_tables(forests: Sequence[ForestRows], groups: Sequence[object],
                   group_type: pa.DataType | None = None) -> tuple[pa.Table, pa.Table]:
    """The nodes and trees of several groups' forests as two Arrow tables; ``groups[k]``
    is the key of ``forests[k]``'s group (stored in each of its rows, typed
    ``group_type`` or as Arrow infers it).

    One table for many forests: Arrow's conversion costs tens of microseconds a call,
    which a build of many small groups (or of groups cut into many shards' pieces) would
    otherwise pay per forest.
    """
    keys = pa.array(list(groups), type=group_type)
    group_type = keys.type
    n_nodes = np.fromiter((f.n_nodes for f in forests), dtype=np.int64, count=len(forests))
    n_trees = np.fromiter((f.n_trees for f in forests), dtype=np.int64, count=len(forests))
    nodes = [keys.take(np.repeat(np.arange(len(forests)), n_nodes)), _positions(n_nodes)]
    nodes += [_joined([getattr(f, k) for f in forests], np.int64) for k in _NODE_INT]
    nodes += [_joined([getattr(f, k) for f in forests], np.float64) for k in _NODE_FLOAT]
    trees = [keys.take(np.repeat(np.arange(len(forests)), n_trees)), _positions(n_trees),
             *(_joined(arrays, np.int64) for arrays in (
                 [f.tree_parent for f in forests], [f.tree_virtual for f in forests],
                 [f.tree_root for f in forests],
                 [f.tree_compact_range[:, 1] for f in forests]))]
    return (pa.table(nodes, schema=node_schema(group_type)),
            pa.table(trees, schema=tree_schema(group_type)))


def _joined(arrays: list, dtype: type) -> np.ndarray:
    return (np.concatenate([np.asarray(a, dtype=dtype) for a in arrays]) if arrays
            else np.empty(0, dtype=dtype))


def _positions(counts: np.ndarray) -> np.ndarray:
    """0, 1, ..., counts[0] - 1, 0, 1, ..., counts[1] - 1, ...: rows' positions in their
    groups."""
    starts = np.cumsum(counts) - counts
    return np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(starts, counts)


def group_extents(forest: ForestRows, codes: str
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per event position of the group: earliest and latest instant over its nodes, and
    its code range as doubles rounded outward (the R*-tree box; Zhou et al. 4.3)."""
    real = np.flatnonzero(forest.kind == REAL)
    events = forest.event[real]
    n = int(events.max()) + 1 if len(events) else 0
    instants = forest.instant[real]
    t_min = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    t_max = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
    np.minimum.at(t_min, events, instants)
    np.maximum.at(t_max, events, instants)
    if codes == "compact":
        c = forest.compact_code[real]
        lo = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
        hi = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
        np.minimum.at(lo, events, c)
        np.maximum.at(hi, events, c)
        # int64 codes below 2**53 are exact doubles; beyond, round outward.
        exact = (np.abs(lo) < 2**53) & (np.abs(hi) < 2**53)
        if exact.all():
            return t_min, t_max, lo.astype(np.float64), hi.astype(np.float64)
        return (t_min, t_max, np.array([float_down(int(x)) for x in lo]),
                np.array([float_up(int(x)) for x in hi]))
    # Paper codes: only whole forests carry them (pieces are cut for compact codes).
    assert isinstance(forest, GroupForest)
    lo_i: list[int | None] = [None] * n
    hi_i: list[int | None] = [None] * n
    for node, e in zip(real, events):
        code = forest.paper_code[int(node)]
        e = int(e)
        if lo_i[e] is None or code < lo_i[e]:  # type: ignore[operator]
            lo_i[e] = code
        if hi_i[e] is None or code > hi_i[e]:  # type: ignore[operator]
            hi_i[e] = code
    return (t_min, t_max, np.array([float_down(x) for x in lo_i], dtype=np.float64),  # type: ignore[arg-type]
            np.array([float_up(x) for x in hi_i], dtype=np.float64))  # type: ignore[arg-type]
