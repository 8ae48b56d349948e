"""The layout of an index directory: its files, tables and internal columns, by name.

An index on disk is a compact set of files (Parquet compressed with zstd), statistics and
a manifest, written atomically (:mod:`uncertain_cep.index.store.drafts`): each table once.
The in-process builder and the Spark job write the same layout.

Layout of an index directory::

    manifest.json       format version, schema, attributes, build settings, counts, time
                        domain, input fingerprint, and an xxh3_64 checksum of every other
                        file (:mod:`uncertain_cep.index.store.checksums`)
    events/part-*.parquet   the validated archive (time discretised), one row per event,
                        in time order, plus each event's group code, position in its
                        group, feasible instants and code range (columns prefixed ``_uc_``)
    packed/groups.parquet, packed/nodes.parquet, packed/trees.parquet
                        the node table, packed: what cannot be derived, in narrow
                        integers (:mod:`uncertain_cep.index.store.packed_nodes`)
    rtree.dat, rtree.idx
                        libspatialindex's R*-tree over every event's box, as it reads
                        it (a working copy links these files); entry ids are event rows
                        in the order of the events table; an index of more events than
                        a chunk holds (the manifest's ``rtree.chunk_entries``) has one
                        tree per chunk of consecutive rows, the next ones
                        ``rtree-1.dat``, ``rtree-1.idx``, ...
    stats/time.parquet      events per time bucket (by earliest instant) and the latest
                        instant of those events: what the time-sliced query engine
                        sizes its work by
    stats/cells.parquet, stats/categories.parquet   the selectivity statistics
                        (:mod:`uncertain_cep.index.statistics`; the grid is in the manifest)
    rejected_rows/, rejected_groups/   what a build set aside when asked to, with reasons

What a query maps is the index's *working copy* on the host
(:mod:`uncertain_cep.index.store.working_copy`, in a local cache): ``columns/*.npy`` (the
node table, :mod:`uncertain_cep.index.store.node_columns`), ``event_columns/`` (the events
table's numbers, :mod:`uncertain_cep.index.store.event_columns`) and ``rtree.dat``,
``rtree.idx`` (links to the stored files). A build makes it on the way (in ``_work/``,
never listed) and leaves it in the cache; the builders' ``nodes/`` and ``trees/`` part
files are read by the build's last step and deleted once the manifest is written.

A *sharded* index (:mod:`uncertain_cep.index.store.sharded`) holds, instead of the tables
and the packed files, one directory per shard, each of the layout above with its own
manifest (the group pieces whose clusters start in the shard's time range:
:mod:`uncertain_cep.index.shards`)::

    manifest.json       as above, plus the shards (path, time range, extent, counts); its
                        checksums are of the files below, shards' manifests included
    stats/              the shards' statistics added up (one grid for all shards)
    shards/00000/ ...   one index directory per shard, in time order

A write goes to a temporary sibling directory; every file is flushed to disk and the
manifest is written last; the directory is then renamed into place. An interrupted write
therefore never leaves a directory that the reader accepts, and a damaged or foreign one
is refused with :class:`~uncertain_cep.errors.IndexFormatError`.

:mod:`uncertain_cep.index.store.storage` writes the layout and
:mod:`uncertain_cep.index.store.reader` reads it; the manifest is a typed
:class:`~uncertain_cep.index.store.manifest.Manifest`. This module names the layout's
files, tables and internal columns; no module outside ``uncertain_cep.index`` names them:
:data:`FORMAT_NAMES` lists them, and ``tests/index/store/test_storage_boundary.py`` checks.

>>> sorted(FORMAT_NAMES.tables)
['_work', 'columns', 'event_columns', 'events', 'nodes', 'packed', 'rejected_groups',
 'rejected_rows', 'shards', 'stats', 'trees']
>>> "_uc_t_max" in FORMAT_NAMES.columns and "event_id" not in FORMAT_NAMES.columns
True
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from uncertain_cep.index.forests.tables import NODE_COLUMNS, TREE_COLUMNS

__all__ = ["CATEGORY_STATS", "CELL_STATS", "COLUMNS", "EVENTS", "EVENT_ARRAYS", "EVENT_COLUMNS",
           "EVENT_COLUMN_PREFIX", "FORMAT_NAMES", "MANIFEST", "NODES", "PACKED", "PART",
           "REJECTED_GROUPS", "REJECTED_GROUP_SCHEMA", "REJECTED_ROWS", "REJECTED_ROW_COLUMNS",
           "REJECTED_ROW_SCHEMA", "RTREE", "RTREE_FILES", "SHARD", "SHARDS", "STATS",
           "TIME_STATS", "TIME_STATS_COLUMNS", "TREES", "WORK", "FormatNames", "group_keys",
           "rtree_base", "rtree_files", "table_files"]

MANIFEST = "manifest.json"
EVENTS, NODES, TREES = "events", "nodes", "trees"
COLUMNS = "columns"                  # the node table, one .npy file per column
EVENT_ARRAYS = "event_columns"       # the events table's numbers, one .npy file per column
PACKED = "packed"                    # the node table and the R*-tree file, stored compact
WORK = "_work"                       # a build's working files (never listed, never kept)
REJECTED_ROWS, REJECTED_GROUPS = "rejected_rows", "rejected_groups"
STATS = "stats"
SHARDS = "shards"                    # a sharded index's shards, one directory each
SHARD = SHARDS + "/{:05d}"
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
    tables=(EVENTS, NODES, TREES, COLUMNS, EVENT_ARRAYS, PACKED, WORK, STATS, SHARDS,
            REJECTED_ROWS, REJECTED_GROUPS),
    columns=tuple(sorted({*EVENT_COLUMNS, *NODE_COLUMNS, *TREE_COLUMNS,
                          *TIME_STATS_COLUMNS, *_STATISTICS_COLUMNS,
                          *REJECTED_ROW_SCHEMA.names, *REJECTED_GROUP_SCHEMA.names}
                         - _SHARED_NAMES)))


def rtree_base(chunk: int) -> str:
    """libspatialindex's base name of the files of an R*-tree's chunk ``chunk`` (the
    first chunk's is :data:`RTREE`; see
    :func:`~uncertain_cep.index.store.rtree_and_statistics.rtree_chunks`).

    >>> rtree_base(0), rtree_base(2)
    ('rtree', 'rtree-2')
    """
    return RTREE if chunk == 0 else f"{RTREE}-{chunk}"


def rtree_files(chunks: int) -> tuple[str, ...]:
    """The files of an R*-tree of ``chunks`` chunks, chunk by chunk.

    >>> rtree_files(2)
    ('rtree.dat', 'rtree.idx', 'rtree-1.dat', 'rtree-1.idx')
    """
    return tuple(f"{rtree_base(k)}.{ext}" for k in range(max(chunks, 1))
                 for ext in ("dat", "idx"))


def table_files(root: Path, table: str) -> list[str]:
    """Relative paths of a table's Parquet files, in row order."""
    return sorted(p.relative_to(root).as_posix() for p in (root / table).glob("*.parquet"))


def group_keys(root: Path) -> pd.Index:
    """Every group key of an index (from its trees table), sorted: position = group code."""
    files = [str(root / f) for f in table_files(root, TREES)]
    keys = pq.ParquetDataset(files).read(columns=["group"]).column("group").unique()
    return pd.Index(keys.to_pandas()).sort_values()
