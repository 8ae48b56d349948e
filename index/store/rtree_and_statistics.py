"""The R*-tree file and the statistics of an index, from one pass over its events table.

:func:`write_rtree_and_statistics` streams the events table of a draft (so memory does not
grow with the archive beyond the boxes themselves): it bulk-loads the R*-tree over every
event's box (:mod:`uncertain_cep.index.rtree_boxes`), counts events per time bucket
(``stats/time.parquet``, what the time-sliced query engine sizes its work by) and gathers
the selectivity statistics (:mod:`uncertain_cep.index.statistics`). The time domain and the
attributes' extents come first from the Parquet footers.
"""

from __future__ import annotations

import math
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from rtree import index as rtree_index

from uncertain_cep.errors import IndexBuildError, IndexFormatError, InputError
from uncertain_cep.index.rtree_boxes import event_boxes, rtree_properties
from uncertain_cep.index.statistics import EventStatistics, StatisticsBuilder, StatisticsGrid
from uncertain_cep.index.store.drafts import write_durably
from uncertain_cep.index.store.layout import (
    CATEGORY_STATS,
    CELL_STATS,
    EVENT_COLUMNS,
    EVENTS,
    TIME_STATS,
    TIME_STATS_COLUMNS,
    TREES,
    group_keys,
    rtree_base,
    rtree_files,
    table_files,
)
from uncertain_cep.index.store.manifest_records import RTreeInfo, TimeDomain
from uncertain_cep.model.time_axis import MAX_SPAN

__all__ = ["RTREE_CHUNK_ENTRIES", "SharedExtents", "check_span", "rtree_chunks",
           "write_rtree_and_statistics"]

_TIME_BUCKETS = 1024
# Entries of one R*-tree file at most. libspatialindex's bulk load sorts up to 1,000,000
# entries in memory and the rest through files on disk, which costs more than twice as
# much per entry: 3,850,000 boxes of 5 dimensions bulk-loaded in 20.0 s as one tree and in
# 8.7 s as four trees of 962,500 (this 2-core machine; a shard of the 100M build holds
# 3.85M events). So an index of more events stores one tree per chunk of this many
# consecutive event rows, each searched in turn (rtree_files.RTreeChunks).
RTREE_CHUNK_ENTRIES = 990_000


class SharedExtents(NamedTuple):
    """The instants and attribute extents the statistics' grid and the time buckets are
    laid over: a sharded index's, the same for each of its shards (so that their counts
    add up), rather than one shard's own."""

    time: tuple[int, int] | None
    attributes: dict[str, tuple[float, float]]


def check_span(time: tuple[int, int] | None) -> None:
    """Refuse an archive spanning more instants than a query answers exactly (the
    in-process reader refuses it when it reads the archive: model/events.py)."""
    if time is not None and time[1] - time[0] > MAX_SPAN:
        t0, t1 = time
        raise InputError(f"the archive spans {t1 - t0} instants, from {t0} to {t1}, more "
                         f"than the {MAX_SPAN} (2**60) a query can answer exactly; build it "
                         "with a coarser time_unit (e.g. '1us' instead of '1ns'), or split "
                         "it in time")


def rtree_chunks(entries: int, chunk_entries: int) -> list[tuple[int, int]]:
    """The event rows ``[start, stop)`` of each chunk of an R*-tree of ``entries``
    entries, ``chunk_entries`` a chunk (one chunk, maybe empty, at least).

    >>> rtree_chunks(5, 2), rtree_chunks(0, 2)
    ([(0, 2), (2, 4), (4, 5)], [(0, 0)])
    """
    n = max(1, -(-entries // chunk_entries))
    return [(k * chunk_entries, min(entries, (k + 1) * chunk_entries)) for k in range(n)]


def write_rtree_and_statistics(root: Path, group_by: str, numeric: tuple[str, ...],
                               categorical: tuple[str, ...],
                               shared: SharedExtents | None = None,
                               rtree_dir: Path | None = None
                               ) -> tuple[int, TimeDomain, RTreeInfo, EventStatistics]:
    """Write the R*-tree files (into ``rtree_dir``, default ``root``: one tree per chunk
    of :data:`RTREE_CHUNK_ENTRIES` event rows, :func:`rtree_chunks`) and the statistics
    of the draft ``root`` from its events table. Returns the number of events, the time
    domain (the events' own instants, the buckets' width over ``shared`` when given), the
    R*-tree's dimension, entries and chunks, and the statistics (over ``shared``'s grid
    when given).

    Raises
    ------
    InputError
        When the archive spans more instants than a query can answer exactly.
    IndexBuildError
        When the disk has no room for the R*-tree's bulk load.
    IndexFormatError
        When the events table disagrees with its footers or its trees table.
    """
    lo_hi = [c for a in numeric for c in (f"{a}_lo", f"{a}_hi")]
    columns = [group_by, *EVENT_COLUMNS[1:], *lo_hi, *categorical]
    keys = group_keys(root) if table_files(root, TREES) else pd.Index([])
    n_rows, t0, t1 = _footer_summary(root)
    # The groups were read one by one (the Spark build): refused here, as the in-process
    # reader refuses it (model/events.py), before anything is written.
    check_span((t0, t1) if t0 is not None and t1 is not None else None)
    if shared is not None:
        check_span(shared.time)
    own = (t0, t1) if t0 is not None and t1 is not None else None
    if shared is None:
        extents = {a: (_footer_extreme(root, f"{a}_lo", min),
                       _footer_extreme(root, f"{a}_hi", max)) for a in numeric}
        shared = SharedExtents(own, {a: (lo if lo is not None else 0.0,
                                          hi if hi is not None else 0.0)
                                     for a, (lo, hi) in extents.items()})
    grid = StatisticsGrid.for_domain(shared.time, shared.attributes)
    statistics = StatisticsBuilder(grid, categorical)
    b0, b1 = shared.time if shared.time is not None else (0, -1)
    width = max(1, math.ceil((b1 - b0 + 1) / _TIME_BUCKETS)) if shared.time else 1
    n_buckets = (b1 - b0) // width + 1 if shared.time else 0
    counts = np.zeros(n_buckets, dtype=np.int64)
    latest = np.full(n_buckets, np.iinfo(np.int64).min, dtype=np.int64)
    max_width = 0
    seen = 0

    dimension = 3 + len(numeric)
    # Before reading the events: the bulk load at the end needs its disk space.
    rtree_dir = root if rtree_dir is None else rtree_dir
    rtree_dir.mkdir(parents=True, exist_ok=True)
    _check_room_for_rtree(rtree_dir, n_rows, dimension)
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
        bucket = (t_min - b0) // width
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
    chunks = rtree_chunks(n_rows, RTREE_CHUNK_ENTRIES)
    for k, (start, stop) in enumerate(chunks):
        props = rtree_properties(len(numeric))
        props.overwrite = True
        # A bulk load needs at least one entry. Ids are the events' rows in the table.
        source = ((np.arange(start, stop, dtype=np.int64), mins[start:stop],
                   maxs[start:stop]),) if stop > start else ()
        tree = rtree_index.Index(str(rtree_dir / rtree_base(k)), *source, properties=props,
                                 interleaved=False)
        tree.close()
    for name in rtree_files(len(chunks)):
        with open(rtree_dir / name, "rb+") as fh:
            os.fsync(fh.fileno())
    starts = b0 + width * np.arange(n_buckets, dtype=np.int64)
    stats = pa.table(dict(zip(TIME_STATS_COLUMNS, (np.arange(n_buckets, dtype=np.int64),
                                                   starts, counts, latest))))
    write_durably(stats, root / TIME_STATS)
    finished = statistics.finish()
    cells, cats = finished.to_frames()
    write_durably(pa.Table.from_pandas(cells, preserve_index=False), root / CELL_STATS)
    write_durably(pa.Table.from_pandas(cats, preserve_index=False), root / CATEGORY_STATS)
    domain = TimeDomain(t_min=t0, t_max=t1, bucket_width=int(width), max_interval=max_width)
    return seen, domain, RTreeInfo(dimension, seen, RTREE_CHUNK_ENTRIES), finished


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


def _event_batches(root: Path, columns: list[str]) -> Iterator[pa.RecordBatch]:
    for name in table_files(root, EVENTS):
        yield from pq.ParquetFile(root / name).iter_batches(batch_size=65536, columns=columns)
