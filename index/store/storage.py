"""The on-disk index: Parquet tables, statistics, the R*-tree file and a manifest, written
atomically. The in-process builder and the Spark job write the same layout.

Layout of an index directory::

    manifest.json       format version, schema, attributes, build settings, counts, time
                        domain, input fingerprint, and an xxh3_64 checksum of every other
                        file (:mod:`uncertain_cep.index.store.checksums`)
    events/part-*.parquet   the validated archive (time discretised), one row per event,
                        plus each event's group code, position in its group, feasible
                        instants and code range (columns prefixed ``_uc_``)
    trees/part-*.parquet    one row per OI-tree
                            (:data:`uncertain_cep.index.forests.tables.TREE_COLUMNS`)
    nodes/part-*.parquet    one row per node
                            (:data:`uncertain_cep.index.forests.tables.NODE_COLUMNS`)
                        (these three tables: each file in time order, in small row
                        groups, so a time slice's scan skips the others:
                        :mod:`uncertain_cep.index.store.time_order`)
    stats/time.parquet      events per time bucket (by earliest instant) and the latest
                        instant of those events: what the time-sliced query engine
                        sizes its work by
    stats/cells.parquet, stats/categories.parquet   the selectivity statistics
                        (:mod:`uncertain_cep.index.statistics`; the grid is in the manifest)
    columns/*.npy       the node table (:mod:`uncertain_cep.index.store.node_columns`): the
                        trees again, with global ids, one flat array per column, which
                        the query engine memory-maps
    event_columns/      the events table's numbers again, one ``.npy`` file per column,
                        and the sorted group labels
                        (:mod:`uncertain_cep.index.store.event_columns`),
                        which opening an index memory-maps
    rtree.dat, rtree.idx    libspatialindex's R*-tree over every event's box; entry ids
                        are event rows in the order of the events table (files by name)
    rejected_rows/, rejected_groups/   what a build set aside when asked to, with reasons

A write goes to a temporary sibling directory; every file is flushed to disk and the
manifest is written last; the directory is then renamed into place. An interrupted write
therefore never leaves a directory that the reader accepts, and a damaged or foreign one
is refused with :class:`~uncertain_cep.errors.IndexFormatError`.

This module writes the layout and :mod:`uncertain_cep.index.store.reader` reads it; the manifest
is a typed :class:`~uncertain_cep.index.store.manifest.Manifest`. No module outside
``uncertain_cep.index`` names a file or an internal column of the layout:
:data:`FORMAT_NAMES` lists them, and ``tests/index/store/test_storage_boundary.py`` checks.

>>> sorted(FORMAT_NAMES.tables)
['columns', 'event_columns', 'events', 'nodes', 'rejected_groups', 'rejected_rows',
 'stats', 'trees']
>>> "_uc_t_max" in FORMAT_NAMES.columns and "event_id" not in FORMAT_NAMES.columns
True
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from rtree import index as rtree_index

from uncertain_cep.errors import IndexBuildError, IndexFormatError, InputError
from uncertain_cep.files import (
    check_write_target,
    current_umask,
    process_alive,
    replace_directory,
    writing_to,
)
from uncertain_cep.index.event_index import EventIndex
from uncertain_cep.index.forests.forest import GroupForest
from uncertain_cep.index.forests.tables import (
    NODE_COLUMNS,
    TREE_COLUMNS,
    forest_tables,
    group_extents,
    node_schema,
    tree_schema,
)
from uncertain_cep.index.group_build import BuildSettings
from uncertain_cep.index.rtree_boxes import event_boxes, rtree_properties
from uncertain_cep.index.statistics import EventStatistics, StatisticsBuilder, StatisticsGrid
from uncertain_cep.index.store.checksums import CHECKSUM, file_digest
from uncertain_cep.index.store.event_columns import write_event_columns
from uncertain_cep.index.store.format_version import FORMAT_VERSION
from uncertain_cep.index.store.manifest import SELF_CHECKSUM, Manifest, manifest_digest
from uncertain_cep.index.store.manifest_records import (
    AttributeNames,
    BuildRecord,
    IndexCounts,
    RejectedCounts,
    RTreeInfo,
    StoredSettings,
    StoredStatistics,
    TimeDomain,
)
from uncertain_cep.index.store.node_columns import write_node_columns
from uncertain_cep.index.store.time_order import sort_table_by_time
from uncertain_cep.model.time_axis import MAX_SPAN, TimeAxis
from uncertain_cep.model.values import plain

__all__ = ["EVENT_COLUMNS", "FORMAT_NAMES", "FORMAT_VERSION", "REJECTED_ROW_COLUMNS",
           "FormatNames", "IndexDraft", "PartitionWriter", "check_replaceable", "finish_index",
           "remove_abandoned_drafts", "save_index"]

# ---------------------------------------------------------------- the layout's names
# Public for the modules of index/ (the reader); nothing outside index/ uses them.

MANIFEST = "manifest.json"
EVENTS, NODES, TREES = "events", "nodes", "trees"
COLUMNS = "columns"                  # the node table, one .npy file per column
EVENT_ARRAYS = "event_columns"       # the events table's numbers, one .npy file per column
REJECTED_ROWS, REJECTED_GROUPS = "rejected_rows", "rejected_groups"
STATS = "stats"
TIME_STATS = f"{STATS}/time.parquet"
CELL_STATS = f"{STATS}/cells.parquet"
CATEGORY_STATS = f"{STATS}/categories.parquet"
RTREE = "rtree"                      # libspatialindex's base name of its two files
RTREE_FILES = (f"{RTREE}.dat", f"{RTREE}.idx")
PART = "part-{:05d}.parquet"         # one file per writer (a build task) and table
# Internal per-event columns of the events table (the archive's own columns beside them).
EVENT_COLUMN_PREFIX = "_uc_"
EVENT_COLUMNS = ("_uc_pos", "_uc_t_min", "_uc_t_max", "_uc_code_lo", "_uc_code_hi")
# stats/time.parquet: per bucket of earliest instants, its first instant, its events and
# the latest instant of those events.
TIME_STATS_COLUMNS = ("bucket", "t_lo", "events", "latest")
# Columns of stats/cells.parquet and stats/categories.parquet
# (EventStatistics.to_frames writes them).
_STATISTICS_COLUMNS = ("interval", "cell", "events", "attribute", "value")
REJECTED_ROW_SCHEMA = pa.schema([("event_id", pa.string()), ("group", pa.string()),
                                 ("file", pa.string()), ("row", pa.int64()),
                                 ("reason", pa.string())])
REJECTED_GROUP_SCHEMA = pa.schema([("event_id", pa.string()), ("group", pa.string()),
                                   ("reason", pa.string())])
# The rejected-rows table's columns, for a writer outside this module (the Spark job writes
# the rows of repeated event ids with Spark, into IndexDraft.staging).
REJECTED_ROW_COLUMNS: tuple[str, ...] = tuple(REJECTED_ROW_SCHEMA.names)
_TIME_BUCKETS = 1024


@dataclass(frozen=True)
class FormatNames:
    """The names only the on-disk format uses.

    Attributes
    ----------
    files
        File names (and the prefix of the tables' part files).
    tables
        Table directories.
    columns
        Internal columns of the tables. Columns the format shares with the archive (event
        id, group, ``t_lo``/``t_hi``) and words of the answers and the Spark job's own rows
        (``events``, ``value``, ``file``, ``row``, ``reason``) are left out: a module naming
        those means the archive or its answers. So is the prefix ``_uc_`` of the internal
        event columns: the archive reader reserves it for the whole package
        (:mod:`uncertain_cep.model.events`), whose Spark jobs use it for their own columns.
    """

    files: tuple[str, ...]
    tables: tuple[str, ...]
    columns: tuple[str, ...]


_SHARED_NAMES = frozenset({"event_id", "group", "t_lo", "t_hi", "events", "value", "file",
                           "row", "reason"})
FORMAT_NAMES = FormatNames(
    files=(MANIFEST, *RTREE_FILES, *(p.rpartition("/")[2] for p in
                                     (TIME_STATS, CELL_STATS, CATEGORY_STATS)),
           PART.partition("{")[0]),
    tables=(EVENTS, NODES, TREES, COLUMNS, EVENT_ARRAYS, STATS, REJECTED_ROWS,
            REJECTED_GROUPS),
    columns=tuple(sorted({*EVENT_COLUMNS, *NODE_COLUMNS, *TREE_COLUMNS,
                          *TIME_STATS_COLUMNS, *_STATISTICS_COLUMNS,
                          *REJECTED_ROW_SCHEMA.names, *REJECTED_GROUP_SCHEMA.names}
                         - _SHARED_NAMES)))


# ---------------------------------------------------------------- writing

class IndexDraft:
    """A temporary directory beside ``target`` that becomes the index when finished."""

    def __init__(self, target: str | os.PathLike[str]) -> None:
        target = Path(target)
        # A link to an index directory: the directory is replaced, the link stays.
        if target.is_symlink():
            target = Path(os.path.realpath(target))
        self.target = target
        check_write_target(target, "index")
        check_replaceable(target)
        with writing_to(target, "index"):
            target.parent.mkdir(parents=True, exist_ok=True)
            remove_abandoned_drafts(target)
            self.path = Path(tempfile.mkdtemp(prefix=_draft_prefix(target, "tmp"),
                                              dir=target.parent))
        # mkdtemp makes the directory private (0700); an index is as readable as any
        # directory made under the user's umask.
        os.chmod(self.path, 0o777 & ~current_umask())

    def discard(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    def staging(self, name: str) -> Path:
        """A scratch directory in the draft (not yet created) for another writer's files,
        such as Spark's; :meth:`adopt_rejected_rows` moves them into place."""
        # A leading underscore: readers of Parquet directories skip such paths.
        return self.path / f"_{name}"

    def adopt_rejected_rows(self, staging: Path, name: str) -> None:
        """Move the Parquet part files a writer left in ``staging`` (columns
        :data:`REJECTED_ROW_COLUMNS`) into the rejected-rows table as ``name-NNNNN``, and
        remove ``staging``."""
        target = self.path / REJECTED_ROWS
        target.mkdir(exist_ok=True)
        for k, part in enumerate(sorted(staging.glob("part-*.parquet"))):
            os.replace(part, target / f"{name}-{k:05d}.parquet")
        shutil.rmtree(staging)


class PartitionWriter:
    """What one build task writes into a draft: one Parquet file per table, under a
    temporary name until :meth:`commit` renames it into place, so a retried task replaces
    its own output.

    Parameters
    ----------
    draft
        The draft directory (:attr:`IndexDraft.path`).
    partition, attempt
        The task's partition (names its files) and attempt (names the temporary ones).
    """

    def __init__(self, draft: str | os.PathLike[str], partition: int, attempt: int) -> None:
        self.root = Path(draft)
        self.name = PART.format(partition)
        self.attempt = attempt
        self._writers: dict[str, tuple[pq.ParquetWriter, Path]] = {}
        # Groups are small (a thousand events); one row group each would make readers
        # pay a row group's overhead per group (10M events: 10,000 row groups, 5x slower
        # to read), so a table's groups are written together, _ROW_GROUP_ROWS at a time.
        self._pending: dict[str, list[pa.Table]] = {}
        self._pending_rows: dict[str, int] = {}

    def add_group(self, events: pd.DataFrame, forest: GroupForest, label: object,
                  group_by: str, codes: str) -> None:
        """Append one indexed group: ``events`` are its archive rows
        (:meth:`~uncertain_cep.model.events.Archive.to_frame`) in canonical order, so row
        ``k`` is the event at position ``k`` of ``forest``."""
        events = events.reset_index(drop=True)
        events[EVENT_COLUMNS[0]] = np.arange(len(events), dtype=np.int64)
        for column, values in zip(EVENT_COLUMNS[1:], group_extents(forest, codes)):
            events[column] = values
        table = pa.Table.from_pandas(events, preserve_index=False)
        self._append(EVENTS, table)
        nodes, trees = forest_tables(forest, label, table.schema.field(group_by).type)
        self._append(NODES, nodes)
        self._append(TREES, trees)

    def add_rejected_rows(self, event_ids: Sequence[str], group: str | None,
                          files: Sequence[str], rows: Sequence[int | None],
                          reasons: Sequence[str]) -> None:
        """Set rows of one group aside: per row its event id, input file, row in that file
        (``None`` when unknown, as for CSV) and reason."""
        self._append(REJECTED_ROWS, pa.table({
            "event_id": list(event_ids), "group": [group] * len(event_ids),
            "file": list(files), "row": pa.array(list(rows), pa.int64()),
            "reason": list(reasons)}, schema=REJECTED_ROW_SCHEMA))

    def add_rejected_group(self, event_ids: Sequence[str], group: str, reason: str) -> None:
        """Set a group that cannot be indexed aside: its events, with the reason."""
        self._append(REJECTED_GROUPS, pa.table({
            "event_id": list(event_ids), "group": [group] * len(event_ids),
            "reason": [reason] * len(event_ids)}, schema=REJECTED_GROUP_SCHEMA))

    def _append(self, table_name: str, table: pa.Table) -> None:
        self._pending.setdefault(table_name, []).append(table)
        rows = self._pending_rows[table_name] = (self._pending_rows.get(table_name, 0)
                                                 + table.num_rows)
        if rows >= _ROW_GROUP_ROWS:
            self._flush(table_name)

    def _flush(self, table_name: str) -> None:
        tables = self._pending.pop(table_name, [])
        self._pending_rows.pop(table_name, None)
        if not tables:
            return
        table = tables[0] if len(tables) == 1 else pa.concat_tables(
            [t if t.schema.equals(tables[0].schema) else t.cast(tables[0].schema)
             for t in tables])
        entry = self._writers.get(table_name)
        if entry is None:
            folder = self.root / table_name
            folder.mkdir(parents=True, exist_ok=True)
            tmp = folder / f".{self.name}.attempt-{self.attempt}"
            entry = (pq.ParquetWriter(tmp, table.schema), tmp)
            self._writers[table_name] = entry
        writer, _ = entry
        if not table.schema.equals(writer.schema):
            table = table.cast(writer.schema)
        writer.write_table(table, row_group_size=max(table.num_rows, 1))

    def commit(self) -> None:
        """Close, flush and rename this task's files into place."""
        for table_name in list(self._pending):
            self._flush(table_name)
        for table_name, (writer, tmp) in list(self._writers.items()):
            writer.close()
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
            os.replace(tmp, self.root / table_name / self.name)
        self._writers.clear()

    def abort(self) -> None:
        """Drop whatever was not committed (a no-op after :meth:`commit`)."""
        self._pending.clear()
        self._pending_rows.clear()
        for writer, tmp in self._writers.values():
            writer.close()
            tmp.unlink(missing_ok=True)
        self._writers.clear()


# Rows per row group of a build task's tables (a few MB of events or nodes).
_ROW_GROUP_ROWS = 1 << 17


def save_index(index: EventIndex, path: str | os.PathLike[str]) -> None:
    """Write an in-process index to the directory ``path`` atomically (replacing an older
    index there). The manifest records the archive's time axis, as the Spark build does."""
    draft = IndexDraft(path)
    try:
        archive = index.archive
        write_index_tables(index, draft.path)
        finish_index(draft, group_by=archive.group_by,
                     attributes=AttributeNames(archive.numeric_names,
                                               archive.categorical_names),
                     settings=index.settings, time_axis=archive.time_axis,
                     groups=archive.n_groups, trees=index.n_trees,
                     nodes=index.n_nodes, input_fingerprint=None)
    except BaseException:
        draft.discard()
        raise


def write_index_tables(index: EventIndex, root: Path) -> None:
    """The ``events``, ``nodes`` and ``trees`` tables of an in-process index, one part
    file each, under ``root`` (a draft: :func:`finish_index` completes it)."""
    archive = index.archive
    events = archive.to_frame()
    lay = index.layout
    for name, values in zip(EVENT_COLUMNS, (lay.positions, lay.t_min, lay.t_max,
                                            lay.code_lo, lay.code_hi)):
        events[name] = values
    table = pa.Table.from_pandas(events, preserve_index=False)
    _write(table, root / EVENTS / PART.format(0))
    group_type = table.schema.field(archive.group_by).type
    pairs = [forest_tables(f, plain(archive.group_labels[g]), group_type)
             for g, f in enumerate(index.forests)]
    _write(pa.concat_tables([n for n, _ in pairs]) if pairs
           else node_schema(group_type).empty_table(), root / NODES / PART.format(0))
    _write(pa.concat_tables([t for _, t in pairs]) if pairs
           else tree_schema(group_type).empty_table(), root / TREES / PART.format(0))


def finish_index(draft: IndexDraft, *, group_by: str, attributes: AttributeNames,
                 settings: BuildSettings, time_axis: TimeAxis | None, groups: int,
                 trees: int, nodes: int, input_fingerprint: str | None,
                 build: BuildRecord | None = None, rejected: RejectedCounts | None = None
                 ) -> Manifest:
    """Complete a draft whose ``events``, ``nodes`` and ``trees`` tables are written: load
    the R*-tree file and the statistics from the events table (streamed, so memory does not
    grow with the archive), write the manifest, and move the draft into place.
    ``time_axis`` is the archive's (what its instants stand for; see
    :class:`~uncertain_cep.model.time_axis.TimeAxis`).

    Returns
    -------
    Manifest
        What was written to ``manifest.json``.
    """
    root = draft.path
    nodes_files, trees_files, events_files = ([root / f for f in table_files(root, t)]
                                              for t in (NODES, TREES, EVENTS))
    # Events in time order first: the archive's row order, which everything derived
    # below follows (the nodes must keep whole groups together until their columns are
    # derived, and are put in time order after).
    sort_table_by_time(events_files, EVENT_COLUMNS[1])
    keys = _group_keys(root) if trees_files else pd.Index([])
    write_node_columns(root / COLUMNS, nodes_files, trees_files, events_files,
                       group_by=group_by, keys=keys)
    _fsync_files(root / COLUMNS)
    write_event_columns(root / EVENT_ARRAYS, events_files, group_by=group_by,
                        numeric=attributes.numeric, layout_columns=EVENT_COLUMNS, keys=keys)
    _fsync_files(root / EVENT_ARRAYS)
    n_events, time_domain, dimension, statistics = _write_rtree_and_stats(
        root, group_by, attributes.numeric, attributes.categorical)
    sort_table_by_time(nodes_files, "node_lo")
    sort_table_by_time(trees_files, "t_lo")
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    manifest = Manifest(
        format_version=FORMAT_VERSION, group_by=group_by, attributes=attributes,
        schema=tuple((f.name, str(f.type)) for f in pq.read_schema(
            root / table_files(root, EVENTS)[0])) if n_events else (),
        settings=StoredSettings.of(settings),
        time_axis=time_axis,
        counts=IndexCounts(n_events, int(groups), int(trees), int(nodes)), time=time_domain,
        rtree=RTreeInfo(dimension, n_events), statistics=StoredStatistics.of(statistics),
        # The archive as validated is what the index answers for; a build from files
        # also records the files it read (see the Spark job).
        input_fingerprint=input_fingerprint or _fingerprint(root, EVENTS),
        checksums=tuple((name, file_digest(root / name)) for name in files),
        build=build, rejected=rejected)
    data = manifest.to_json()
    # Never write a manifest the reader would refuse (a stray numpy scalar, say).
    Manifest.from_json(data)
    data[SELF_CHECKSUM] = manifest_digest(data)
    with open(root / MANIFEST, "w") as fh:
        json.dump(data, fh, indent=2)
        fh.flush()
        os.fsync(fh.fileno())
    _fsync_dir(root)
    _swap_into_place(root, draft.target)
    return manifest


def table_files(root: Path, table: str) -> list[str]:
    """Relative paths of a table's Parquet files, in row order."""
    return sorted(p.relative_to(root).as_posix() for p in (root / table).glob("*.parquet"))


def _write(table: pa.Table, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())


def _event_batches(root: Path, columns: list[str]) -> Iterator[pa.RecordBatch]:
    for name in table_files(root, EVENTS):
        yield from pq.ParquetFile(root / name).iter_batches(batch_size=65536, columns=columns)


def _group_keys(root: Path) -> pd.Index:
    """Every group key of an index (from its trees table), sorted: position = group code."""
    files = [str(root / f) for f in table_files(root, TREES)]
    keys = pq.ParquetDataset(files).read(columns=["group"]).column("group").unique()
    return pd.Index(keys.to_pandas()).sort_values()


def _write_rtree_and_stats(root: Path, group_by: str, numeric: tuple[str, ...],
                           categorical: tuple[str, ...]
                           ) -> tuple[int, TimeDomain, int, EventStatistics]:
    lo_hi = [c for a in numeric for c in (f"{a}_lo", f"{a}_hi")]
    columns = [group_by, *EVENT_COLUMNS[1:], *lo_hi, *categorical]
    keys = _group_keys(root) if table_files(root, TREES) else pd.Index([])
    n_rows, t0, t1 = _footer_summary(root)
    if t0 is not None and t1 is not None and t1 - t0 > MAX_SPAN:
        # The groups were read one by one (the Spark build): refused here, as the
        # in-process reader refuses it (model/events.py), before anything is written.
        raise InputError(f"the archive spans {t1 - t0} instants, from {t0} to {t1}, more "
                         f"than the {MAX_SPAN} (2**60) a query can answer exactly; build it "
                         "with a coarser time_unit (e.g. '1us' instead of '1ns'), or split "
                         "it in time")
    extents = {a: (_footer_extreme(root, f"{a}_lo", min), _footer_extreme(root, f"{a}_hi", max))
               for a in numeric}
    grid = StatisticsGrid.for_domain(
        (t0, t1) if t0 is not None and t1 is not None else None,
        {a: (lo if lo is not None else 0.0, hi if hi is not None else 0.0)
         for a, (lo, hi) in extents.items()})
    statistics = StatisticsBuilder(grid, categorical)
    width = (max(1, math.ceil((t1 - t0 + 1) / _TIME_BUCKETS))
             if t0 is not None and t1 is not None else 1)
    n_buckets = (t1 - t0) // width + 1 if t0 is not None and t1 is not None else 0
    counts = np.zeros(n_buckets, dtype=np.int64)
    latest = np.full(n_buckets, np.iinfo(np.int64).min, dtype=np.int64)
    max_width = 0
    seen = 0

    dimension = 3 + len(numeric)
    # Before reading the events: the bulk load at the end needs its disk space.
    _check_room_for_rtree(root, n_rows, dimension)
    # Every box in two arrays, filled batch by batch, then one bulk load through rtree's
    # array interface (a Python tuple per event took most of a large build's last phase).
    mins = np.empty((n_rows, dimension))
    maxs = np.empty((n_rows, dimension))
    for batch in _event_batches(root, columns):
        cols = [batch.column(c).to_numpy(zero_copy_only=False) for c in columns]
        group = keys.get_indexer(cols[0])
        if (group < 0).any():
            raise IndexFormatError(f"events of group {cols[0][group < 0][0]!r} have no "
                                   "OI-trees in the trees table")
        t_min, t_max, code_lo, code_hi = cols[1:5]
        bucket = (t_min - t0) // width
        np.add.at(counts, bucket, 1)
        np.maximum.at(latest, bucket, t_max)
        max_width = max(max_width, int((t_max - t_min).max()))
        ranges = list(zip(cols[5:5 + 2 * len(numeric):2], cols[6:6 + 2 * len(numeric):2]))
        statistics.add(t_min, t_max, dict(zip(numeric, ranges)),
                       dict(zip(categorical, cols[5 + 2 * len(numeric):])))
        if seen + len(t_min) > n_rows:
            raise IndexFormatError("the events table holds more rows than its Parquet "
                                   "footers say")
        mins[seen:seen + len(t_min)], maxs[seen:seen + len(t_min)] = event_boxes(
            group, t_min, t_max, code_lo, code_hi, ranges)
        seen += len(t_min)
    if seen != n_rows:
        raise IndexFormatError(f"the events table holds {seen} rows, its Parquet footers "
                               f"say {n_rows}")
    props = rtree_properties(len(numeric))
    props.overwrite = True
    # A bulk load needs at least one entry.
    source = ((np.arange(n_rows, dtype=np.int64), mins, maxs),) if n_rows else ()
    tree = rtree_index.Index(str(root / RTREE), *source, properties=props, interleaved=False)
    tree.close()
    for name in RTREE_FILES:
        with open(root / name, "rb+") as fh:
            os.fsync(fh.fileno())
    starts = (t0 + width * np.arange(n_buckets, dtype=np.int64) if t0 is not None
              else np.zeros(0, dtype=np.int64))
    stats = pa.table(dict(zip(TIME_STATS_COLUMNS, (np.arange(n_buckets, dtype=np.int64),
                                                   starts, counts, latest))))
    _write(stats, root / TIME_STATS)
    finished = statistics.finish()
    cells, cats = finished.to_frames()
    _write(pa.Table.from_pandas(cells, preserve_index=False), root / CELL_STATS)
    _write(pa.Table.from_pandas(cats, preserve_index=False), root / CATEGORY_STATS)
    domain = TimeDomain(t_min=t0, t_max=t1, bucket_width=int(width), max_interval=max_width)
    return seen, domain, dimension, finished


def _check_room_for_rtree(root: Path, n_rows: int, dimension: int) -> None:
    """Refuse to start the R*-tree bulk load without the disk space it needs (its pages and
    its sort's runs, two boxes' worth per event): libspatialindex fails on a full disk with
    a bare "iostream error", or worse, a crash."""
    needed = 2 * n_rows * dimension * 16 + (1 << 20)
    free = shutil.disk_usage(root).free
    if free < needed:
        raise IndexBuildError(
            f"not enough disk space to write the R*-tree of {n_rows:,} events in {root}: "
            f"{free / 2**20:,.0f} MB free, about {needed / 2**20:,.0f} MB needed; free some "
            "space there or build the index on another disk")


def _footer_extreme(root: Path, column: str, pick: Any) -> float | None:
    """The smallest (``pick=min``) or largest (``max``) value of a numeric column of the
    events table, from the Parquet footers where they have statistics."""
    found: list[float] = []
    for name in table_files(root, EVENTS):
        meta = pq.ParquetFile(root / name).metadata
        i = meta.schema.to_arrow_schema().get_field_index(column)
        for rg in range(meta.num_row_groups):
            if meta.row_group(rg).num_rows == 0:
                continue
            s = meta.row_group(rg).column(i).statistics
            if s is not None and s.has_min_max:
                found.append(float(s.min if pick is min else s.max))
            else:
                col = pq.read_table(root / name, columns=[column])[column]
                found.append(float((pa.compute.min if pick is min else pa.compute.max)(col)
                                   .as_py()))
                break
    return pick(found) if found else None


def _footer_summary(root: Path) -> tuple[int, int | None, int | None]:
    """Number of events, smallest earliest instant and largest latest instant, from the
    Parquet footers of the events table."""
    n_rows = 0
    t0: int | None = None
    t1: int | None = None
    t_min, t_max = EVENT_COLUMNS[1:3]
    for name in table_files(root, EVENTS):
        meta = pq.ParquetFile(root / name).metadata
        n_rows += meta.num_rows
        schema = meta.schema.to_arrow_schema()
        i0, i1 = schema.get_field_index(t_min), schema.get_field_index(t_max)
        for rg in range(meta.num_row_groups):
            if meta.row_group(rg).num_rows == 0:
                continue
            s0 = meta.row_group(rg).column(i0).statistics
            s1 = meta.row_group(rg).column(i1).statistics
            if s0 is None or s1 is None or not (s0.has_min_max and s1.has_min_max):
                col = pq.read_table(root / name, columns=[t_min, t_max])
                lo, hi = int(pa.compute.min(col[0]).as_py()), int(pa.compute.max(col[1]).as_py())
            else:
                lo, hi = int(s0.min), int(s1.max)
            t0 = lo if t0 is None else min(t0, lo)
            t1 = hi if t1 is None else max(t1, hi)
    return n_rows, t0, t1


def sha256_file(path: Path) -> str:
    """The SHA-256 of a file (what the input fingerprint is made of)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _fingerprint(root: Path, table: str) -> str:
    h = hashlib.sha256()
    for name in table_files(root, table):
        h.update(sha256_file(root / name).encode())
    return h.hexdigest()


def _fsync_files(directory: Path) -> None:
    for path in directory.iterdir():
        with open(path, "rb+") as fh:
            os.fsync(fh.fileno())
    _fsync_dir(directory)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)



def _host() -> str:
    return "".join(c if c.isalnum() else "_" for c in socket.gethostname())[:40] or "host"


def _draft_prefix(target: Path, kind: str) -> str:
    """``.NAME.tmp-HOST-PID-`` (or ``old``): whose draft it is, so that a later build can
    tell one abandoned by a killed process from one still being written."""
    return f".{target.name}.{kind}-{_host()}-{os.getpid()}-"


def remove_abandoned_drafts(target: Path) -> list[Path]:
    """Remove the drafts (and half-swapped old indexes) of ``target`` left by processes of
    this host that no longer run (a build killed by SIGKILL cannot clean up after itself).
    Drafts of running processes and of other hosts are left alone. Returns what was
    removed."""
    removed = []
    host = _host()
    for kind in ("tmp", "old"):
        for path in target.parent.glob(f".{target.name}.{kind}-{host}-*"):
            pid_text = path.name[len(f".{target.name}.{kind}-{host}-"):].split("-")[0]
            if not pid_text.isdigit() or process_alive(int(pid_text)):
                continue
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed



def check_replaceable(target: Path) -> None:
    """Refuse to write an index to ``target`` unless it is absent, empty, or an index this
    project wrote holding nothing but its own files: replacing it must never delete
    anything else (a web site with a ``manifest.json``, the input archive itself).

    Raises
    ------
    IndexFormatError
        Naming what is there and what to do.
    """
    if not target.exists():
        return
    if not target.is_dir():
        raise IndexFormatError(f"{target} exists and is a file, not an index directory; "
                               "choose another --out")
    where = f"{target} exists and is not an uncertain-cep index"
    advice = "choose another --out, or move its contents away first"
    if not (target / MANIFEST).is_file():
        # Stop at the first file: the directory may be a whole file system.
        first = next((p for p in target.rglob("*") if p.is_file() or p.is_symlink()), None)
        if first is None:
            return
        raise IndexFormatError(f"{where} (it holds files, e.g. "
                               f"{first.relative_to(target).as_posix()}); refusing to "
                               f"replace it: {advice}")
    files = {p.relative_to(target).as_posix() for p in target.rglob("*")
             if p.is_file() or p.is_symlink()}
    # Read leniently: an index of an older format version is still ours to replace (up to
    # version 7 its files were listed with their SHA-256).
    try:
        data = json.loads((target / MANIFEST).read_text())
        listed = data[CHECKSUM] if CHECKSUM in data else data["sha256"]
        if not (isinstance(data.get("format_version"), int) and isinstance(listed, dict)
                and all(isinstance(k, str) for k in listed)):
            raise ValueError(f"no format_version and {CHECKSUM} list")
    except (ValueError, KeyError, TypeError, OSError) as e:
        raise IndexFormatError(f"{where}: its manifest.json is not an index manifest "
                               f"({e}); refusing to replace it: {advice}") from e
    known = set(listed) | {MANIFEST}
    foreign = sorted(files - known)
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more"
                                          if len(foreign) > 3 else "")
        raise IndexFormatError(f"{target} is an index but also holds files that are not "
                               f"part of it ({shown}); refusing to replace it and delete "
                               f"them: {advice}")


def _swap_into_place(tmp: Path, target: Path) -> None:
    # Files may have appeared in the target while the index was being written.
    check_replaceable(target)
    # One atomic exchange where the system has it: the path never goes missing for a
    # process opening it meanwhile (which then reads the old index or the new one).
    replace_directory(tmp, target, old_prefix=_draft_prefix(target, "old"))
