"""Several shards' indexes as one: what a query spanning shards reads.

Each shard indexes its groups' *pieces* (the clusters it holds: :mod:`.cuts`) as groups of
their own, so shards share no node, tree or event. Side by side they are one index whose
groups are the pieces: node, tree, row and group ids are offset shard by shard, and the
R*-tree searches ask each shard's own tree (:class:`ShardSearch`). Nothing else changes:
a piece's codes, ``poi`` and chains are its own, and two pieces of one group are
independent as two groups are (the cut is exact).

>>> import pandas as pd
>>> from uncertain_cep.index.group_build import BuildSettings
>>> from uncertain_cep.index.shards.pieces import index_shards
>>> from uncertain_cep.model.events import read_archive
>>> archive = read_archive(pd.DataFrame({"event_id": [1, 2, 3], "group": [0, 0, 0],
...                                      "t_lo": [1, 1, 5], "t_hi": [2, 2, 6]}))
>>> parts = [p for _, p in index_shards(archive, BuildSettings(), cuts=np.array([5]))]
>>> merged = merge_indexes(parts)
>>> [p.archive.n_events for p in parts], merged.archive.group_labels.tolist()
([2, 1], [0, 0])
>>> merged.node_table.poi[merged.node_table.row >= 0].tolist()
[0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields, replace
from typing import Any

import numpy as np

from uncertain_cep.index.event_index import EventIndex
from uncertain_cep.index.forests.forest import GroupForest
from uncertain_cep.index.node_table import NodeTable
from uncertain_cep.index.rtree_boxes import EventLayout, merged_by_box
from uncertain_cep.index.statistics import EventStatistics
from uncertain_cep.model.attributes import NumericAttribute
from uncertain_cep.model.events import Archive
from uncertain_cep.model.instant_weights import concatenated_weights

__all__ = ["OFFSET_COLUMNS", "ShardSearch", "merge_archives", "merge_indexes",
           "merge_node_tables", "moved_column", "node_table_sizes"]

# How each node-table column moves when shards are put side by side: by the nodes, trees,
# rows or groups before it (-1 stays -1), as a CSR offset column (its last entry dropped
# for all shards but the last), or not at all.
_NODE_IDS = ("parent", "child_list", "child_root", "tree_virtual", "tree_root", "row_nodes")
_TREE_IDS = ("tree", "tree_parent")
_ROW_IDS = ("row",)
_GROUP_IDS = ("group",)
_OFFSETS = {"group_start": "nodes", "tree_start": "trees", "child_start": "children",
            "row_nodes_start": "row_nodes"}
# The CSR offset columns: side by side, every shard's but the last loses its last entry.
OFFSET_COLUMNS = frozenset(_OFFSETS)
_MOVES = {**dict.fromkeys(_NODE_IDS, "nodes"), **dict.fromkeys(_TREE_IDS, "trees"),
          **dict.fromkeys(_ROW_IDS, "rows"), **dict.fromkeys(_GROUP_IDS, "groups")}


def merge_indexes(parts: Sequence[EventIndex],
                  statistics: EventStatistics | None = None) -> EventIndex:
    """The shards ``parts`` (in time order) as one index, its groups their pieces;
    ``statistics``: theirs added up, if known (else counted when first needed)."""
    parts = [p for p in parts if p.archive.n_events] or list(parts[:1])
    if len(parts) == 1 and statistics is None:
        return parts[0]
    first = parts[0]
    archive = merge_archives([p.archive for p in parts])
    layout = EventLayout(*(np.concatenate([getattr(p.layout, f.name) for p in parts])
                           for f in fields(EventLayout)))
    forests_loaded = all("forests" in p.__dict__ for p in parts)

    def forests() -> list[GroupForest]:
        return [f for p in parts for f in p.forests]

    return EventIndex(
        archive, first.settings, forests=forests() if forests_loaded else None,
        layout=layout, rtree=ShardSearch.of(parts), statistics=statistics,
        load_node_table=lambda: merge_node_tables([p.node_table for p in parts]),
        load_forests=None if forests_loaded else forests,
        built_with_condition2=first.built_with_condition2)


def merge_archives(archives: Sequence[Archive]) -> Archive:
    """Archives side by side, each group of each its own (labels may repeat)."""
    first = archives[0]
    group_base = np.cumsum([0] + [a.n_groups for a in archives[:-1]])
    numeric = {}
    for name in first.numeric:
        parts = [a.numeric[name] for a in archives]
        numeric[name] = NumericAttribute(
            name, np.concatenate([p.lo for p in parts]), np.concatenate([p.hi for p in parts]),
            *(_optional([getattr(p, k) for p in parts], [a.n_events for a in archives])
              for k in ("mu", "sigma")))
    return replace(
        first, event_ids=np.concatenate([a.event_ids for a in archives]),
        group_labels=np.concatenate([a.group_labels for a in archives]),
        group_of=np.concatenate([a.group_of + base for a, base in zip(archives, group_base)]),
        t_lo=np.concatenate([a.t_lo for a in archives]),
        t_hi=np.concatenate([a.t_hi for a in archives]), numeric=numeric,
        categorical={k: np.concatenate([a.categorical[k] for a in archives])
                     for k in first.categorical},
        instant_weights=concatenated_weights([a.instant_weights for a in archives],
                                             [a.n_events for a in archives]))


def _optional(columns: list[np.ndarray | None], lengths: list[int]) -> np.ndarray | None:
    """A pdf column of several shards: ``None`` where every shard is uniform, else NaN
    (uniform) for the rows of the shards without it."""
    if all(c is None for c in columns):
        return None
    return np.concatenate([c if c is not None else np.full(n, np.nan)
                           for c, n in zip(columns, lengths)])


def node_table_sizes(tables: Sequence[NodeTable]) -> dict[str, list[int]]:
    """Per shard, what each kind of id counts (nodes, trees, rows, groups, child-list
    and row-node slots): what the ids of the shards after it are offset by."""
    return {"nodes": [len(t.group) for t in tables],
            "trees": [len(t.tree_parent) for t in tables],
            "rows": [len(t.row_nodes_start) - 1 for t in tables],
            "groups": [len(t.group_start) - 1 for t in tables],
            "children": [len(t.child_list) for t in tables],
            "row_nodes": [len(t.row_nodes) for t in tables]}


def moved_column(name: str, values: np.ndarray, base: dict[str, int], last: bool
                 ) -> np.ndarray:
    """One shard's node-table column ``name`` as it stands side by side: ids moved by
    ``base`` (what the shards before it count, by kind: :func:`node_table_sizes`), -1
    kept; a CSR offset column loses its last entry but in the ``last`` shard."""
    values = np.asarray(values)
    if name in _OFFSETS:
        kept = values if last else values[:-1]
        return kept.astype(np.int64) + base[_OFFSETS[name]]
    if name in _MOVES:
        # In int64: the shards side by side may count past what one shard's ids hold.
        wide = values.astype(np.int64)
        return np.where(wide >= 0, wide + base[_MOVES[name]], wide)
    return values


def merge_node_tables(tables: Sequence[NodeTable]) -> NodeTable:
    """Node tables side by side (see the module docstring); ids offset shard by shard."""
    sizes = node_table_sizes(tables)
    bases = [{k: int(sum(v[:i])) for k, v in sizes.items()} for i in range(len(tables))]
    return NodeTable(**{f.name: np.concatenate(
        [moved_column(f.name, getattr(t, f.name), b, i == len(tables) - 1)
         for i, (t, b) in enumerate(zip(tables, bases))]) for f in fields(NodeTable)})


class ShardSearch:
    """The R*-tree searches of shards side by side: each query box is asked of every
    shard's own tree, its group axis moved to the shard's group codes, and the rows found
    are moved to the merged rows; per query box, shard by shard."""

    def __init__(self, trees: Sequence[Any], events: Sequence[int], groups: Sequence[int]
                 ) -> None:
        """``trees``: each shard's R*-tree (or box search), ``events`` and ``groups``: how
        many each shard holds."""
        self._trees = list(trees)
        inner = {getattr(t, "access", "R*-tree search") for t in self._trees}
        self.access = f"{' / '.join(sorted(inner))}, in each of {len(self._trees)} shards"
        self._rows = np.cumsum([0, *events[:-1]])
        self._groups = np.cumsum([0, *groups[:-1]])

    @classmethod
    def of(cls, parts: Sequence[EventIndex]) -> ShardSearch:
        """The searches of indexes side by side."""
        return cls([p.rtree for p in parts], [p.archive.n_events for p in parts],
                   [p.archive.n_groups for p in parts])

    def intersection_v(self, mins: np.ndarray, maxs: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
        found = []
        for tree, rows, groups in zip(self._trees, self._rows, self._groups):
            lo, hi = mins.copy(), maxs.copy()
            lo[:, 0] -= groups
            hi[:, 0] -= groups
            ids, counts = tree.intersection_v(lo, hi)
            found.append((np.asarray(ids, dtype=np.int64) + rows, counts))
        return merged_by_box(found, len(mins))
