"""One time slice of an on-disk index, read from its row groups into a columnar index.

A slice with its halo needs the events meeting ``[t_from, t_to + halo]``, and of their
groups the trees whose interval meets those events' span (a parent tree's interval
contains its children's, so these are closed under parent trees) and the nodes whose
interval meets it (:func:`~uncertain_cep.index.forests.tables.node_intervals`: a tree's nodes
whole, except that of a top tree that is a chain of virtual nodes only the root and the
virtual nodes standing for trees the slice keeps).
Each of the three scans pushes its filter into the Parquet reader, which skips the row
groups whose statistics rule them out; the tables are in time order
(:mod:`uncertain_cep.index.store.time_order`), so a slice reads about its share of the index.
:class:`ScanCount` records, per table, the row groups read of those stored: what EXPLAIN
shows for the Spark engine.

The slice becomes an :class:`~uncertain_cep.index.event_index.EventIndex` without a
Python object per event, node or tree: the archive from the events' columns, the node
table derived from the node and tree rows
(:func:`~uncertain_cep.index.node_rows.node_table_of_rows`), and, for candidate
searches, a scan of the slice's event boxes (:class:`BoxScan`), which costs less than
loading an R*-tree for the few searches one query makes. The forests (what only the
baselines walk) are rebuilt from the same rows on first use.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from uncertain_cep.errors import IndexFormatError
from uncertain_cep.index.event_index import EventIndex
from uncertain_cep.index.forests.forest import GroupForest
from uncertain_cep.index.forests.tables import forests_from_frames
from uncertain_cep.index.node_rows import (
    NODE_ROW_COLUMNS,
    TREE_ROW_COLUMNS,
    node_table_of_rows,
)
from uncertain_cep.index.rtree_boxes import EventLayout, event_boxes
from uncertain_cep.index.statistics import EventStatistics
from uncertain_cep.index.store.layout import EVENT_COLUMNS, EVENTS, NODES, TREES, table_files
from uncertain_cep.index.store.manifest import Manifest
from uncertain_cep.model.events import Archive, read_archive
from uncertain_cep.model.values import plain

__all__ = ["BoxScan", "ScanCount", "SliceRead", "archive_from_events", "read_time_slice"]

# What EXPLAIN calls a slice's candidate search.
SLICE_SEARCH = "scan of the time slice's event boxes"


@dataclass(frozen=True)
class ScanCount:
    """One table's scan: its filter, the row groups read of those stored, rows kept."""

    table: str
    condition: str
    row_groups_read: int
    row_groups: int
    rows: int


@dataclass(frozen=True)
class SliceRead:
    """A slice's index (``None`` when no event meets it) and its scans."""

    index: EventIndex | None
    scans: tuple[ScanCount, ...]


class BoxScan:
    """Candidate search over a slice's event boxes, answering ``intersection_v`` as the
    R*-tree does (boxes meeting the query box, bounds included) by comparing every box:
    linear in the slice, and no load."""

    access = SLICE_SEARCH

    def __init__(self, mins: np.ndarray, maxs: np.ndarray) -> None:
        self.mins, self.maxs = mins, maxs

    def intersection_v(self, mins: np.ndarray, maxs: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
        found = [np.flatnonzero(((self.mins <= hi) & (self.maxs >= lo)).all(axis=1))
                 for lo, hi in zip(mins, maxs)]
        return (np.concatenate(found) if found else np.zeros(0, dtype=np.int64),
                np.array([len(f) for f in found], dtype=np.int64))


def read_time_slice(root: Path, manifest: Manifest, statistics: EventStatistics,
                    t_from: int, t_to: float, halo: float = 0.0) -> SliceRead:
    """The rows of ``[t_from, t_to]`` with ``halo`` instants after it (see the module
    docstring); ``halo`` may be infinite."""
    t_min, t_max = EVENT_COLUMNS[1:3]
    hi = _bound(t_to + halo)
    events, scans = _scan(root, EVENTS, (pads.field(t_max) >= t_from)
                          & (pads.field(t_min) <= hi),
                          f"{t_max} >= {t_from} and {t_min} <= {hi}")
    if not events.num_rows:
        return SliceRead(None, (scans,))
    archive, layout = archive_from_events(events.to_pandas(), manifest)
    labels = [plain(x) for x in archive.group_labels]
    span = (int(layout.t_min.min()), int(layout.t_max.max()))
    in_groups = pads.field("group").isin(labels)
    trees, tree_scan = _scan(root, TREES, in_groups & (pads.field("t_hi") >= span[0])
                             & (pads.field("t_lo") <= span[1]),
                             f"t_hi >= {span[0]} and t_lo <= {span[1]} and group in the "
                             f"slice's {len(labels)} groups", list(TREE_ROW_COLUMNS))
    nodes, node_scan = _scan(root, NODES, in_groups & (pads.field("node_hi") >= span[0])
                             & (pads.field("node_lo") <= span[1]),
                             f"node_hi >= {span[0]} and node_lo <= {span[1]} and group in "
                             "the slice's groups", list(NODE_ROW_COLUMNS))
    keys = pd.Index(archive.group_labels)
    group_of = np.asarray(archive.group_of, dtype=np.int64)
    table = node_table_of_rows(_columns(nodes), _group_codes(nodes, keys), _columns(trees),
                               _group_codes(trees, keys), group_of, layout.positions,
                               len(keys))
    del nodes, trees
    settings = manifest.settings.build_settings(None)
    paper_codes = settings.codes == "paper"

    def forests() -> list[GroupForest]:
        # Only the baselines and inspection walk forests: every tree row of the slice's
        # groups and the nodes of the trees meeting its span, whole.
        every_tree = _scan(root, TREES, in_groups, "")[0].to_pandas()
        every_node = _scan(root, NODES, in_groups & (pads.field("tree_hi") >= span[0])
                           & (pads.field("tree_lo") <= span[1]), "")[0].to_pandas()
        return forests_from_frames(every_tree, every_node, archive.group_labels,
                                   paper_codes)

    attrs = [(archive.numeric[a].lo, archive.numeric[a].hi) for a in archive.numeric_names]
    mins, maxs = event_boxes(group_of, layout.t_min, layout.t_max, layout.code_lo,
                             layout.code_hi, attrs)
    index = EventIndex(archive, settings, layout=layout, rtree=BoxScan(mins, maxs),
                       statistics=statistics, node_table=table, load_forests=forests,
                       built_with_condition2=manifest.settings.condition2 is not None)
    return SliceRead(index, (scans, tree_scan, node_scan))


def archive_from_events(events: pd.DataFrame, manifest: Manifest
                        ) -> tuple[Archive, EventLayout]:
    """The archive and layout stored in an events table (whole, or a slice of it). The
    table holds instants; what they stand for is the manifest's time axis."""
    internal = {c: events[c].to_numpy() for c in EVENT_COLUMNS}
    # Columns side by side without copying them (drop() would copy the whole table).
    archive = read_archive(pd.DataFrame({c: events[c] for c in events.columns
                                         if c not in EVENT_COLUMNS}, copy=False),
                           group_by=manifest.group_by, check_unique_ids=False)
    archive = dataclasses.replace(archive, time_axis=manifest.time_axis)
    pos, t_min, t_max, code_lo, code_hi = (internal[c] for c in EVENT_COLUMNS)
    # np.asarray: the stored columns already have these types (no copies).
    layout = EventLayout(positions=np.asarray(pos, np.int64),
                         t_min=np.asarray(t_min, np.int64), t_max=np.asarray(t_max, np.int64),
                         code_lo=np.asarray(code_lo, np.float64),
                         code_hi=np.asarray(code_hi, np.float64))
    return archive, layout


def _scan(root: Path, table: str, condition: pads.Expression, text: str,
          columns: Sequence[str] | None = None) -> tuple[pa.Table, ScanCount]:
    """The rows of ``table`` meeting ``condition``, reading only the row groups whose
    statistics allow it."""
    dataset = pads.dataset([str(root / f) for f in table_files(root, table)],
                           format="parquet")
    stored, kept = 0, []
    for fragment in dataset.get_fragments():
        stored += fragment.metadata.num_row_groups
        kept.extend(fragment.split_by_row_group(filter=condition, schema=dataset.schema))
    names = list(columns) if columns is not None else dataset.schema.names
    parts = [f.to_table(filter=condition, columns=names, schema=dataset.schema)
             for f in kept]
    rows = (pa.concat_tables(parts) if parts
            else dataset.schema.empty_table().select(names))
    pa.default_memory_pool().release_unused()
    return rows, ScanCount(table, text, len(kept), stored, rows.num_rows)


def _columns(table: pa.Table) -> dict[str, np.ndarray]:
    """A table's columns but the group as numpy arrays."""
    return {name: table.column(name).to_numpy() for name in table.column_names
            if name != "group"}


def _group_codes(table: pa.Table, keys: pd.Index) -> np.ndarray:
    """Each row's group code (position in ``keys``), looked up once per distinct key."""
    encoded = pc.dictionary_encode(table.column("group").combine_chunks())
    codes = keys.get_indexer(pd.Index(encoded.dictionary.to_pandas()))
    if (codes < 0).any():
        raise IndexFormatError("the nodes or trees table names a group the events table "
                               "does not hold; rebuild the index")
    return codes.astype(np.int64)[encoded.indices.to_numpy(zero_copy_only=False)]


def _bound(x: float) -> int:
    # An infinite halo (a query without WITHIN) bounds nothing.
    return int(min(x, np.iinfo(np.int64).max))
