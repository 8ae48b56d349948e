"""Reading an on-disk index: the one door to its files (written by
:mod:`uncertain_cep.index.store.storage`).

:func:`open_reader` checks an index directory (its manifest, format version and the
files' checksums: see :func:`~uncertain_cep.index.store.manifest_check.read_manifest`)
and returns an :class:`IndexReader`: the typed
:class:`~uncertain_cep.index.store.manifest.Manifest` and the reads the rest of the package
needs, each with its filter pushed into the Parquet scan, so only the rows asked for are
read:

* :meth:`IndexReader.load`: the whole index (of a sharded one, the shards asked for), its
  columns mapped from the index's working copy on this host
  (:mod:`uncertain_cep.index.store.working_copy`, made on first use);
* :meth:`IndexReader.shards_meeting`: the shards a time span meets (what a Spark
  executor's time slice opens);
* :meth:`IndexReader.time_buckets`: events per bucket of earliest instants (what time
  slices are cut by);
* :meth:`IndexReader.event_times`: ``(t_lo, t_hi)`` of given events;
* :meth:`IndexReader.empty_archive`: the archive's columns, without rows.

A reader holds only the directory and the manifest, so it pickles cheaply: the Spark
query engine checks the index once on the driver and ships the reader to executors.

>>> import tempfile
>>> import pandas as pd
>>> import uncertain_cep as uc
>>> with tempfile.TemporaryDirectory() as tmp:
...     uc.build_index(pd.DataFrame({"event_id": ["a", "b", "c"], "group": [0, 0, 1],
...         "t_lo": [1, 1, 7], "t_hi": [2, 2, 8]})).save(tmp + "/ix")
...     reader = open_reader(tmp + "/ix")
...     times = reader.event_times({"a", "c"})
...     ids = reader.load().archive.event_ids.tolist()
>>> reader.manifest.counts.events, sorted(times.items())
(3, [('a', (1, 2)), ('c', (7, 8))])
>>> ids
['a', 'b', 'c']
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
from rtree import index as rtree_index

from uncertain_cep.errors import IndexFormatError
from uncertain_cep.index.event_index import EventIndex, build_forests
from uncertain_cep.index.forests.forest import GroupForest
from uncertain_cep.index.group_build import BuildSettings
from uncertain_cep.index.node_table import NodeTable
from uncertain_cep.index.rtree_boxes import EventLayout
from uncertain_cep.index.shards import ShardSearch
from uncertain_cep.index.statistics import EventStatistics
from uncertain_cep.index.store.checksums import verify_files
from uncertain_cep.index.store.column_checks import check_node_table
from uncertain_cep.index.store.event_columns import open_event_columns
from uncertain_cep.index.store.host_checks import checked_before, record_checked
from uncertain_cep.index.store.layout import (
    CATEGORY_STATS,
    CELL_STATS,
    COLUMNS,
    EVENT_ARRAYS,
    EVENT_COLUMN_PREFIX,
    EVENT_COLUMNS,
    EVENTS,
    MANIFEST,
    PACKED,
    RTREE,
    SHARDS,
    TIME_STATS,
    table_files,
)
from uncertain_cep.index.store.manifest import SELF_CHECKSUM, Manifest, manifest_digest
from uncertain_cep.index.store.manifest_check import read_manifest
from uncertain_cep.index.store.manifest_records import IndexCounts
from uncertain_cep.index.store.node_columns import node_column_files, open_node_columns
from uncertain_cep.index.store.rebuilds import (
    OPEN_ATTEMPTS,
    OPEN_PAUSE,
    being_replaced,
    directory_identity,
)
from uncertain_cep.index.store.remote import (
    RemoteIndex,
    fetch_shard,
    fetch_top,
    is_remote,
    open_remote,
)
from uncertain_cep.index.store.rtree_files import RTreeChunks, SharedRTree, open_rtree
from uncertain_cep.index.store.side_by_side import RTREES, side_by_side_copy
from uncertain_cep.index.store.working_copy import (
    copies_in_use,
    discard,
    node_table_in_memory,
    passing_copies,
    sealed_checksums,
    sealed_here,
    verified_copy,
    working_copy,
)
from uncertain_cep.model.events import Archive, read_archive
from uncertain_cep.model.feasibility import PairPredicate
from uncertain_cep.model.values import plain

__all__ = ["IndexReader", "TimeBuckets", "load_index", "load_index_and_manifest",
           "open_reader", "read_event_times"]


def open_reader(path: str | os.PathLike[str], *, verify_all: bool = True) -> IndexReader:
    """Check the index directory ``path``
    (:func:`~uncertain_cep.index.store.manifest_check.read_manifest`) and return its reader.

    An index being rebuilt at that path meanwhile (the build swaps the new directory in)
    is read again, new, rather than reported damaged. A remote index (``s3://...``, any
    filesystem pyarrow knows) is read from this host's mirror of its current version
    (:mod:`~uncertain_cep.index.store.remote`)."""
    if is_remote(path):
        mirror, remote = open_remote(str(path))
        return dataclasses.replace(open_reader(mirror, verify_all=verify_all), remote=remote)
    root = Path(path)
    for attempt in range(OPEN_ATTEMPTS):
        before = directory_identity(root)
        try:
            manifest = read_manifest(root, verify_all=verify_all)
        except (IndexFormatError, OSError):
            if attempt + 1 < OPEN_ATTEMPTS and being_replaced(root, before):
                time.sleep(OPEN_PAUSE * (attempt + 1))
                continue
            raise
        if directory_identity(root) == before:
            return IndexReader(root, manifest, before, verified_all=verify_all)
    raise IndexFormatError(f"{root} was replaced {OPEN_ATTEMPTS} times while being opened; "
                           "open it once its rebuilds are done")


def load_index(path: str | os.PathLike[str],
               pair_predicate: PairPredicate | None = None, *,
               verify_all: bool = True) -> EventIndex:
    """Open an index directory written by :func:`~uncertain_cep.index.store.storage.save_index`
    or the Spark build (``verify_all``: see
    :func:`~uncertain_cep.index.store.manifest_check.read_manifest`)."""
    return load_index_and_manifest(path, pair_predicate, verify_all=verify_all)[0]


def load_index_and_manifest(path: str | os.PathLike[str],
                            pair_predicate: PairPredicate | None = None, *,
                            verify_all: bool = True, reader: IndexReader | None = None
                            ) -> tuple[EventIndex, Manifest]:
    """:func:`load_index`, and the checked manifest it was read by (its build records);
    ``reader``: the index's reader if already opened (else it is opened now)."""
    for attempt in range(OPEN_ATTEMPTS):
        if reader is None:
            reader = open_reader(path, verify_all=verify_all)
        try:
            index = reader.load(pair_predicate)
        except Exception:
            # Files read half from the old directory, half from the new one fail in any
            # way; only a replaced directory is read again.
            if attempt + 1 < OPEN_ATTEMPTS and reader.was_replaced():
                time.sleep(OPEN_PAUSE * attempt)
                reader = None
                continue
            raise
        if not reader.was_replaced():
            return index, reader.manifest
        time.sleep(OPEN_PAUSE * attempt)
        reader = None
    raise IndexFormatError(f"{path} was replaced {OPEN_ATTEMPTS} times while being opened; "
                           "open it once its rebuilds are done")


@dataclass(frozen=True)
class TimeBuckets:
    """The events of an index per bucket of earliest feasible instants: the buckets holding
    events, in time order.

    Attributes
    ----------
    width
        Instants per bucket.
    starts
        First instant of each bucket.
    events
        Events whose earliest instant is in the bucket.
    latest
        The latest feasible instant of those events.
    """

    width: int
    starts: np.ndarray
    events: np.ndarray
    latest: np.ndarray


@dataclass(frozen=True)
class IndexReader:
    """Reads of one checked index directory (build one with :func:`open_reader`).

    Attributes
    ----------
    root
        The index directory.
    manifest
        Its manifest, as checked when the reader was opened.
    """

    root: Path
    manifest: Manifest
    identity: tuple[int, int] | None = None
    verified_all: bool = True
    remote: RemoteIndex | None = None

    def was_replaced(self) -> bool:
        """Whether another directory (a rebuild) took the reader's path since it opened."""
        return self.identity is not None and directory_identity(self.root) != self.identity

    def holds_its_manifest(self) -> bool:
        """Whether the directory's manifest is still the one this reader checked,
        compared by content: unlike :meth:`was_replaced` (the directory's inode), this
        holds on every host of a shared filesystem, where a Spark executor checks a
        reader the driver opened."""
        try:
            stored = json.loads((self.root / MANIFEST).read_text()).get(SELF_CHECKSUM)
        except (OSError, ValueError, AttributeError):
            return False
        return stored == manifest_digest(self.manifest.to_json())

    def load(self, pair_predicate: PairPredicate | None = None,
             shards: Sequence[int] | None = None,
             statistics: EventStatistics | None = None, *,
             node_table_in_memory: bool = False) -> EventIndex:
        """The index, its columns memory-mapped from its working copy on this host
        (:mod:`~uncertain_cep.index.store.working_copy`), its R*-tree file opened in
        place, once per process (:mod:`~uncertain_cep.index.store.rtree_files`).

        ``pair_predicate`` is Condition 2 when the index was built with a user's predicate
        (code is not stored; only walking the trees needs it again). A sharded index is
        its shards (all, or those numbered ``shards``) side by side, from one working copy
        of them (:mod:`~uncertain_cep.index.store.side_by_side`); its statistics are the
        whole index's, which is what plans use (``statistics``: given by the index a
        shard belongs to). With ``node_table_in_memory`` an index in one directory (or
        one shard) is opened from a working copy of its events and R*-tree only, its node
        table expanded in memory when a query first needs it
        (:func:`~uncertain_cep.index.store.working_copy.node_table_in_memory`: where the
        cache cannot keep the copies, writing them is the expansion's largest cost)."""
        if self.manifest.is_sharded:
            # A span no shard meets still gets an index (of the first shard) to answer
            # from: with nothing in its span, it answers nothing.
            wanted = (list(range(len(self.manifest.shards))) if shards is None
                      else sorted(set(shards)) or [0])
            readers = [r for r in self.shards(wanted) if r.manifest.counts.events] or \
                self.shards(wanted[:1])
            if len(readers) == 1:
                return readers[0].load(pair_predicate, statistics=self.statistics(),
                                       node_table_in_memory=node_table_in_memory)
            return self._side_by_side(readers, wanted, pair_predicate)
        return self._open(lambda: working_copy(self.root, self.manifest,
                                               verified=self.verified_all,
                                               node_columns=not node_table_in_memory),
                          self.manifest, self._open_copy, pair_predicate, statistics,
                          in_memory=node_table_in_memory)

    def _open(self, get: Callable[[], Path], manifest: Manifest,
              check: Callable[[Path], tuple[Archive, EventLayout, Any]],
              pair_predicate: PairPredicate | None,
              statistics: EventStatistics | None, *, in_memory: bool = False
              ) -> EventIndex:
        """The index in the working copy ``get()`` gives, ``manifest`` its counts;
        ``check(copy)`` opens its archive, layout and R*-tree; ``in_memory``: the copy
        holds no node table, which is expanded from the stored files instead."""
        try:
            settings = self.manifest.settings.build_settings(pair_predicate)
            # The copies are locked against eviction until their files are open.
            with copies_in_use():
                copy, (archive, layout, rtree) = verified_copy(get, check)
                # The node table's files are opened now and hashed, mapped and checked
                # when a query first needs them (the index's largest part: opening stays
                # cheap), from these very files even if the copy is evicted meanwhile.
                opened = {} if in_memory else _open_node_files(copy)
            # Making the copy decoded the stored tables: Arrow's pool keeps those buffers
            # for reuse (jemalloc: about 0.4 GB more peak PSS at 10M events, measured).
            _release_decoding_buffers()
            statistics = self.statistics() if statistics is None else statistics
        except (OSError, KeyError, IndexError, ValueError, pa.ArrowException,
                rtree_index.RTreeError) as e:
            raise IndexFormatError(f"{self.root} is damaged: {e}; rebuild the index") from e
        nodes = manifest.counts.nodes

        def load_node_table() -> NodeTable:
            if in_memory:
                return self._memory_node_table(archive, nodes)
            return self._node_table(copy, opened, archive, get, nodes)

        def load_groups_table(groups: np.ndarray) -> NodeTable:
            return self._memory_node_table(archive, nodes, groups)

        return EventIndex(archive, settings, layout=layout, rtree=rtree,
                          statistics=statistics, time_extent=_time_extent(manifest),
                          load_node_table=load_node_table,
                          load_groups_table=load_groups_table if in_memory else None,
                          built_with_condition2=self.manifest.settings.condition2 is not None,
                          load_forests=lambda: self._forests(archive, settings, nodes))

    def _open_copy(self, copy: Path
                   ) -> tuple[Archive, EventLayout, SharedRTree | RTreeChunks | None]:
        """The archive, layout and R*-tree of a working copy, their files checked first
        (they are mapped now)."""
        archive, layout = _mapped_archive(copy, self.manifest, self.read_columns,
                                          (f"{EVENT_ARRAYS}/", RTREE))
        rtree = (open_rtree(copy, len(archive.numeric_names), self.manifest.rtree.chunks)
                 if archive.n_events else None)
        return archive, layout, rtree

    def _side_by_side(self, readers: list[IndexReader], wanted: list[int],
                      pair_predicate: PairPredicate | None) -> EventIndex:
        """The shards ``readers`` (numbered ``wanted``) side by side."""
        counts = IndexCounts(*(sum(getattr(r.manifest.counts, k) for r in readers)
                               for k in ("events", "groups", "trees", "nodes")))
        extents = [e for r in readers if (e := _time_extent(r.manifest)) is not None]
        view = dataclasses.replace(self.manifest, counts=counts, time=dataclasses.replace(
            self.manifest.time, t_min=min((lo for lo, _ in extents), default=None),
            t_max=max((hi for _, hi in extents), default=None)))

        # Every shard side by side (the local engine's whole-index query): no other
        # open needs a shard's own copy, so each is expanded for the moment and deleted.
        # Some of them (a Spark slice and its halo, which the next slice shares): each
        # shard's copy is kept for the next open that needs it.
        passing = len(wanted) == len(self.manifest.shards)

        def parts() -> Iterator[Path]:
            if passing:
                yield from passing_copies([(r.root, r.manifest, r.verified_all)
                                           for r in readers])
                return
            for r in readers:
                yield working_copy(r.root, r.manifest, verified=r.verified_all)

        def get() -> Path:
            return side_by_side_copy(manifest_digest(self.manifest.to_json()), wanted,
                                     parts, n_nodes=counts.nodes, n_rows=counts.events)

        def read_text(columns: list[str]) -> pd.DataFrame:
            if not columns:
                return pd.DataFrame()
            return pd.concat([r.read_columns(columns) for r in readers], ignore_index=True)

        def check(copy: Path) -> tuple[Archive, EventLayout, ShardSearch]:
            archive, layout = _mapped_archive(copy, view, read_text,
                                              (f"{EVENT_ARRAYS}/", f"{RTREES}/"))
            trees = [open_rtree(copy / RTREES / f"{k:05d}", len(archive.numeric_names),
                                r.manifest.rtree.chunks) for k, r in enumerate(readers)]
            return archive, layout, ShardSearch(
                trees, [r.manifest.counts.events for r in readers],
                [r.manifest.counts.groups for r in readers])

        return self._open(get, view, check, pair_predicate, None)

    def shards_meeting(self, lo: float, hi: float) -> list[int]:
        """The shards whose events' instants meet ``[lo, hi]`` (all of a one-directory
        index: ``[0]``)."""
        if not self.manifest.is_sharded:
            return [0]
        return [k for k, s in enumerate(self.manifest.shards)
                if s.t_min is not None and s.t_max is not None
                and s.t_max >= lo and s.t_min <= hi]

    def shards(self, which: Sequence[int] | None = None) -> list[IndexReader]:
        """A sharded index's shards (all, or those numbered ``which``), each checked as an
        index of its own when opened (one reader, this one, for an index in one
        directory)."""
        if not self.manifest.is_sharded:
            return [self]
        chosen = range(len(self.manifest.shards)) if which is None else which
        return [open_reader(self._shard_root(k), verify_all=self.verified_all)
                for k in chosen]

    def _shard_root(self, k: int) -> Path:
        """Shard ``k``'s directory (of a remote index, fetched into the mirror first)."""
        path = self.manifest.shards[k].path
        if self.remote is not None:
            fetch_shard(self.remote, path)
        return self.root / path

    def _node_table(self, copy: Path, opened: Mapping[str, BinaryIO], archive: Archive,
                    get: Callable[[], Path], n_nodes: int) -> NodeTable:
        """The node table from the working copy's open files: hashed, mapped, and its
        numbers checked once, since the kernels index with them unchecked. A damaged copy
        is made again (``get()``), once."""
        try:
            return self._mapped_node_table(copy, opened, archive, n_nodes)
        except IndexFormatError:
            discard(copy)
        with copies_in_use():
            copy = get()
            opened = _open_node_files(copy)
        return self._mapped_node_table(copy, opened, archive, n_nodes)

    def _memory_node_table(self, archive: Archive, n_nodes: int,
                           groups: np.ndarray | None = None) -> NodeTable:
        """The node table expanded in memory from the stored files (of the ``groups``
        alone, with them), its numbers checked (the kernels index with them
        unchecked)."""
        try:
            table = NodeTable(**node_table_in_memory(self.root, self.manifest,
                                                     verified=self.verified_all,
                                                     groups=groups))
        except (OSError, KeyError, ValueError, pa.ArrowException) as e:
            raise IndexFormatError(f"{self.root} is damaged: {e}; rebuild the index") from e
        finally:
            _release_decoding_buffers()
        if groups is None and table.n_nodes != n_nodes:
            raise IndexFormatError(f"{self.root} is damaged: its node table does not match "
                                   "its manifest; rebuild the index")
        check_node_table(table, self.root / PACKED, n_rows=archive.n_events,
                         n_groups=len(archive.group_labels))
        return table

    def _mapped_node_table(self, copy: Path, opened: Mapping[str, BinaryIO],
                           archive: Archive, n_nodes: int) -> NodeTable:
        # Hashed and their numbers checked by an earlier process of this host (the files
        # unchanged since): not again. Only this check records the node files.
        checked = checked_before(copy, opened)
        try:
            if not checked:
                sealed = sealed_checksums(copy)
                verify_files(copy, {name: sealed.get(name, "") for name in opened}, opened)
            table = open_node_columns(copy / COLUMNS, opened)
        finally:
            for fh in opened.values():
                fh.close()      # the maps keep what they need
        if table.n_nodes != n_nodes:
            raise IndexFormatError(f"{self.root} is damaged: its node table does not match "
                                   "its manifest; rebuild the index")
        if not checked:
            check_node_table(table, copy / COLUMNS, n_rows=archive.n_events,
                             n_groups=len(archive.group_labels))
            record_checked(copy, opened)
        return table

    def _forests(self, archive: Archive, settings: BuildSettings, n_nodes: int
                 ) -> list[GroupForest]:
        """Every group's forest (what the baselines walk), built again from the archive:
        the same trees, since a group's events are in canonical order
        (:func:`~uncertain_cep.index.event_index.build_forests`; of shards side by side,
        each piece's)."""
        if self.manifest.settings.condition2 is not None and settings.condition2 is None:
            raise IndexFormatError(
                f"{self.root} was built with Condition 2 by a pair predicate, which is not "
                "stored: walking its OI-trees (a baseline, a forest) builds them again and "
                "needs it; open the index with pair_predicate= the predicate it was built "
                "with")
        forests = build_forests(archive, settings)
        if sum(f.n_nodes for f in forests) != n_nodes:
            raise IndexFormatError(f"{self.root} is damaged: its archive gives other OI-trees "
                                   "than its manifest counts; rebuild the index")
        return forests

    def statistics(self) -> EventStatistics:
        """The selectivity statistics stored with the index."""
        return EventStatistics.from_frames(
            self.manifest.statistics.to_json(),
            pq.read_table(self.root / CELL_STATS).to_pandas(),
            pq.read_table(self.root / CATEGORY_STATS).to_pandas())

    def empty_archive(self) -> Archive:
        """The archive's columns and types, without rows (to check a query's symbols
        before any work); reads one Parquet footer (of a remote sharded index, its
        first shard is fetched for it)."""
        root = self._shard_root(0) if self.manifest.is_sharded else self.root
        schema = pq.read_schema(root / table_files(root, EVENTS)[0])
        empty = schema.empty_table().to_pandas().drop(
            columns=[c for c in schema.names if c.startswith(EVENT_COLUMN_PREFIX)])
        archive = read_archive(pd.DataFrame(empty), group_by=self.manifest.group_by,
                               weighted=True)
        return dataclasses.replace(archive, time_axis=self.manifest.time_axis)

    def time_buckets(self) -> TimeBuckets:
        """Events and latest instant per bucket of earliest instants, for the buckets that
        hold events (the time statistics written with the index)."""
        stats = pq.read_table(self.root / TIME_STATS).to_pandas()
        stats = stats[stats["events"] > 0]
        return TimeBuckets(width=self.manifest.time.bucket_width,
                           starts=stats["t_lo"].to_numpy(dtype=np.int64),
                           events=stats["events"].to_numpy(dtype=np.int64),
                           latest=stats["latest"].to_numpy(dtype=np.int64))

    def event_times(self, ids: Collection[Any]) -> dict[Any, tuple[int, int]]:
        """``(t_lo, t_hi)`` of the events ``ids`` (:func:`read_event_times`; of a sharded
        index, shard by shard)."""
        roots = ([self._shard_root(k) for k in range(len(self.manifest.shards))]
                 if self.manifest.is_sharded else [self.root])
        return {k: v for root in roots for k, v in read_event_times(root, ids).items()}

    def on_this_host(self) -> IndexReader:
        """This reader where it is used (a Spark executor's host): of a remote index, read
        from this host's mirror, fetched if need be; else itself."""
        if self.remote is None:
            return self
        fetch_top(self.remote)
        return dataclasses.replace(self, root=self.remote.mirror())

    def _read_table(self, table: str, columns: list[str] | None = None) -> pd.DataFrame:
        files = table_files(self.root, table)
        if not files:
            raise IndexFormatError(f"{self.root} is damaged: the {table} table has no files")
        frame = pq.ParquetDataset([str(self.root / f) for f in files]).read(
            columns=columns).to_pandas(split_blocks=True, self_destruct=True)
        _release_decoding_buffers()
        return frame

    def read_columns(self, columns: list[str]) -> pd.DataFrame:
        """Columns of the events table (nothing is read for none)."""
        return self._read_table(EVENTS, columns) if columns else pd.DataFrame()


def _time_extent(manifest: Manifest) -> tuple[int, int] | None:
    """The earliest and latest feasible instants of the events ``manifest`` counts."""
    t = manifest.time
    return (t.t_min, t.t_max) if t.t_min is not None and t.t_max is not None else None


def _open_node_files(copy: Path) -> dict[str, BinaryIO]:
    """The node table's files of a working copy, open (hashed, mapped and closed when a
    query first needs them, from these very files even if the copy is evicted
    meanwhile)."""
    return {name: open(copy / name, "rb")
            for name in node_column_files(copy / COLUMNS)}


def _mapped_archive(copy: Path, manifest: Manifest,
                    read_text: Callable[[list[str]], pd.DataFrame],
                    checked: tuple[str, ...]) -> tuple[Archive, EventLayout]:
    """The archive and layout of a working copy, mapped once the files it maps now (those
    whose names start with ``checked``) match their sealed checksums."""
    sealed = sealed_checksums(copy)
    mapped = {name: digest for name, digest in sealed.items() if name.startswith(checked)}
    # Hashed and their numbers checked by an earlier process of this host (the files
    # unchanged since): not again.
    before = checked_before(copy, mapped)
    # A copy this process has just made was hashed as it sealed it: its numbers are
    # still checked (below), its bytes not hashed again.
    if not before and not sealed_here(copy, mapped):
        verify_files(copy, mapped)
    opened = open_event_columns(copy / EVENT_ARRAYS, manifest, read_text, EVENT_COLUMNS,
                                check=not before)
    if not before:
        record_checked(copy, mapped)
    return opened


def _release_decoding_buffers() -> None:
    """Hand Arrow's freed decoding buffers back to the system: its allocator keeps them
    for reuse, so reading a table left the process holding about twice the table (1.2 GB
    more per process at 10M events; each Spark worker opens the index)."""
    pa.default_memory_pool().release_unused()


def read_event_times(root: str | os.PathLike[str], ids: Collection[Any]
                     ) -> dict[Any, tuple[int, int]]:
    """``(t_lo, t_hi)`` of the events ``ids`` of the index at ``root`` (ids it does not
    hold are left out). Reads only those events' rows (the filter is pushed into the scan)
    and does not check the index: for a caller that already has (a query engine's answer
    rows, say)."""
    if not ids:
        return {}
    shards = sorted((Path(root) / SHARDS).glob("*/"))
    if shards:
        return {k: v for shard in shards for k, v in read_event_times(shard, ids).items()}
    frame = pads.dataset(Path(root) / EVENTS, format="parquet").to_table(
        columns=["event_id", "t_lo", "t_hi"], filter=pads.field("event_id").isin(list(ids))
    ).to_pandas()
    return {plain(e): (int(lo), int(hi))
            for e, lo, hi in zip(frame["event_id"], frame["t_lo"], frame["t_hi"])}
