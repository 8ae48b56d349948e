"""A sharded index on disk: shards written one directory each, then the index's own
manifest last.

Each shard is an index directory of the usual layout (:mod:`.layout`) over the group
pieces whose clusters start in its time range (:mod:`uncertain_cep.index.shards`), its
statistics counted over the whole index's grid (:class:`.rtree_and_statistics.SharedExtents`)
so that :func:`finish_sharded` adds them up. The index's manifest lists the shards and
checks their manifests, which check their files. Reading it back:
:mod:`.sharded_reads`.

>>> import tempfile
>>> import pandas as pd
>>> import uncertain_cep as uc
>>> from uncertain_cep.index.store.manifest_check import read_manifest
>>> df = pd.DataFrame({"event_id": [1, 2, 3, 4], "group": 0, "t_lo": [1, 1, 8, 8],
...                    "t_hi": [2, 2, 9, 9], "x": [0.0, 0.0, 1.0, 1.0]})
>>> with tempfile.TemporaryDirectory() as tmp:
...     uc.build_index(df).save(tmp + "/ix", shard_events=2)
...     m = read_manifest(tmp + "/ix")
...     reopened = uc.open_index(tmp + "/ix").query(
...         "PATTERN SEQ(A, B) DEFINE A AS x < 0.5, B AS x > 0.5 WITHIN 10")
>>> [(s.path, s.start, s.end, s.counts.events) for s in m.shards], m.counts.groups
([('shards/00000', None, 8, 2), ('shards/00001', 8, None, 2)], 2)
>>> len(reopened)
4
"""

from __future__ import annotations

import hashlib
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from uncertain_cep.index.event_index import EventIndex
from uncertain_cep.index.group_build import BuildSettings
from uncertain_cep.index.shards import find_clusters, index_shards, plan_cuts
from uncertain_cep.index.statistics import EventStatistics
from uncertain_cep.index.store.checksums import file_digest
from uncertain_cep.index.store.drafts import IndexDraft, swap_into_place, write_durably
from uncertain_cep.index.store.format_version import FORMAT_VERSION
from uncertain_cep.index.store.layout import (
    CATEGORY_STATS,
    CELL_STATS,
    MANIFEST,
    SHARD,
    SHARDS,
    TIME_STATS,
    TIME_STATS_COLUMNS,
)
from uncertain_cep.index.store.manifest import Manifest
from uncertain_cep.index.store.manifest_records import (
    AttributeNames,
    BuildRecord,
    IndexCounts,
    RejectedCounts,
    RTreeInfo,
    ShardRecord,
    StoredSettings,
    StoredStatistics,
    TimeDomain,
)
from uncertain_cep.index.store.rtree_and_statistics import SharedExtents
from uncertain_cep.index.store.storage import (
    finish_directory,
    remove_leftovers,
    write_index_tables,
    write_manifest,
)
from uncertain_cep.model.time_axis import TimeAxis

__all__ = ["finish_sharded", "save_sharded", "shared_extents"]


def save_sharded(index: EventIndex, path: str | os.PathLike[str], shard_events: int) -> None:
    """Write an in-process index as shards of about ``shard_events`` events each (clusters
    are never cut, so a shard may hold more), atomically (replacing an older index)."""
    archive = index.archive
    clusters = find_clusters(archive.group_of, archive.t_lo, archive.t_hi)
    cuts = plan_cuts(clusters.start, clusters.events,
                     max(1, math.ceil(archive.n_events / shard_events)))
    shared = shared_extents(index)
    attributes = AttributeNames(archive.numeric_names, archive.categorical_names)
    draft = IndexDraft(path)
    try:
        records: list[ShardRecord] = []
        manifests: list[Manifest] = []
        for k, part in index_shards(archive, index.settings, cuts):
            name = SHARD.format(len(records))
            written = finish_directory_of(part, draft.path / name, attributes, shared)
            manifests.append(written)
            records.append(ShardRecord(
                name, int(cuts[k - 1]) if k > 0 else None,
                int(cuts[k]) if k < len(cuts) else None, written.time.t_min,
                written.time.t_max, written.counts))
        finish_sharded(draft, records, manifests, group_by=archive.group_by,
                       attributes=attributes,
                       settings=index.settings, time_axis=archive.time_axis,
                       input_fingerprint=None)
    except BaseException:
        draft.discard()
        raise


def finish_directory_of(part: EventIndex, root: Path, attributes: AttributeNames,
                        shared: SharedExtents) -> Manifest:
    """One shard of an in-process index written to ``root``; its manifest."""
    write_index_tables(part, root)
    return finish_directory(root, group_by=part.archive.group_by, attributes=attributes,
                            settings=part.settings, time_axis=part.archive.time_axis,
                            groups=part.archive.n_groups, trees=part.n_trees,
                            nodes=part.n_nodes, input_fingerprint=None, shared=shared)


def shared_extents(index: EventIndex) -> SharedExtents:
    """The instants and attribute extents of an in-process index: what each of its
    shards' statistics are counted over."""
    archive, layout = index.archive, index.layout
    if not archive.n_events:
        return SharedExtents(None, {a: (0.0, 0.0) for a in archive.numeric_names})
    return SharedExtents((int(layout.t_min.min()), int(layout.t_max.max())),
                         {a: (float(archive.numeric[a].lo.min()),
                              float(archive.numeric[a].hi.max()))
                          for a in archive.numeric_names})


def finish_sharded(draft: IndexDraft, shards: list[ShardRecord], manifests: list[Manifest],
                   *, group_by: str,
                   attributes: AttributeNames, settings: BuildSettings,
                   time_axis: TimeAxis | None, input_fingerprint: str | None,
                   build: BuildRecord | None = None, rejected: RejectedCounts | None = None
                   ) -> Manifest:
    """Complete a draft whose shards are written (``manifests``: what each shard's
    manifest says): add up their statistics, write the index's manifest last and move
    the draft into place."""
    root = draft.path
    remove_leftovers(root)
    statistics = _added_statistics(root, shards, manifests)
    with_events = [m for m in manifests if m.counts.events]
    times = [m.time for m in with_events]
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
                   if p.is_file() and not _inside_a_shard(p.relative_to(root)))
    fingerprint = input_fingerprint or hashlib.sha256(
        "".join(m.input_fingerprint for m in manifests).encode()).hexdigest()
    manifest = Manifest(
        format_version=FORMAT_VERSION, group_by=group_by, attributes=attributes,
        schema=with_events[0].schema if with_events else (),
        settings=StoredSettings.of(settings), time_axis=time_axis,
        counts=IndexCounts(*(sum(getattr(m.counts, k) for m in manifests)
                             for k in ("events", "groups", "trees", "nodes"))),
        time=TimeDomain(min((t.t_min for t in times if t.t_min is not None), default=None),
                        max((t.t_max for t in times if t.t_max is not None), default=None),
                        manifests[0].time.bucket_width,
                        max((t.max_interval for t in times), default=0)),
        rtree=RTreeInfo(manifests[0].rtree.dimension, sum(m.rtree.entries for m in manifests),
                        manifests[0].rtree.chunk_entries),
        statistics=StoredStatistics.of(statistics), input_fingerprint=fingerprint,
        checksums=tuple((name, file_digest(root / name)) for name in files),
        build=build, rejected=rejected, shards=tuple(shards))
    write_manifest(root, manifest)
    swap_into_place(root, draft.target)
    return manifest


def _inside_a_shard(name: Path) -> bool:
    """A file a shard's own manifest checks (all of a shard's but that manifest)."""
    return name.parts[0] == SHARDS and name.name != MANIFEST


def _added_statistics(root: Path, shards: list[ShardRecord], manifests: list[Manifest]
                      ) -> EventStatistics:
    """The shards' statistics and time buckets added up, written to the index's ``stats``
    (every shard counted them over the same grid and buckets)."""
    parts = [EventStatistics.from_frames(m.statistics.to_json(),
                                         pq.read_table(root / s.path / CELL_STATS).to_pandas(),
                                         pq.read_table(root / s.path / CATEGORY_STATS).to_pandas())
             for s, m in zip(shards, manifests)]
    statistics = EventStatistics.combined(parts)
    cells, cats = statistics.to_frames()
    write_durably(pa.Table.from_pandas(cells, preserve_index=False), root / CELL_STATS)
    write_durably(pa.Table.from_pandas(cats, preserve_index=False), root / CATEGORY_STATS)
    bucket, start, events, latest = TIME_STATS_COLUMNS
    buckets = pd.concat([pq.read_table(root / s.path / TIME_STATS).to_pandas()
                         for s in shards]).groupby(bucket, sort=True).agg(
        {start: "first", events: "sum", latest: "max"}).reset_index()
    write_durably(pa.table({c: buckets[c].to_numpy(dtype=np.int64)
                            for c in TIME_STATS_COLUMNS}), root / TIME_STATS)
    return statistics
