"""Writing an index to disk: :func:`save_index` (an index built in this process) and
:func:`finish_index` (a draft whose tables are written, by either builder).

Finishing a draft puts its events table in time order
(:mod:`uncertain_cep.index.store.time_order`), derives the node and event columns
(:mod:`uncertain_cep.index.store.node_columns`,
:mod:`uncertain_cep.index.store.event_columns`), the R*-tree file and the statistics
(:mod:`uncertain_cep.index.store.rtree_and_statistics`) into working files, stores the
node table and the R*-tree compact (:mod:`uncertain_cep.index.store.packed_nodes`) in
place of the builders' nodes and trees tables, writes the manifest last with a checksum
of every other file, keeps the working files as the index's working copy on this host
(:mod:`uncertain_cep.index.store.working_copy`), and swaps the draft into place
(:mod:`uncertain_cep.index.store.drafts`). The files and their names are
:mod:`uncertain_cep.index.store.layout`; :mod:`uncertain_cep.index.store.reader` reads them.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from uncertain_cep.index.event_index import EventIndex
from uncertain_cep.index.forests.tables import forests_tables
from uncertain_cep.index.group_build import BuildSettings
from uncertain_cep.index.store.checksums import file_digest
from uncertain_cep.index.store.drafts import (
    IndexDraft,
    fsync_dir,
    fsync_file,
    fsync_files,
    swap_into_place,
    write_durably,
)
from uncertain_cep.index.store.event_columns import write_event_columns
from uncertain_cep.index.store.format_version import FORMAT_VERSION
from uncertain_cep.index.store.layout import (
    COLUMNS,
    EVENT_ARRAYS,
    EVENT_COLUMNS,
    EVENTS,
    MANIFEST,
    NODES,
    PACKED,
    PART,
    TREES,
    WORK,
    group_keys,
    rtree_files,
    table_files,
)
from uncertain_cep.index.store.manifest import SELF_CHECKSUM, Manifest, manifest_digest
from uncertain_cep.index.store.manifest_records import (
    AttributeNames,
    BuildRecord,
    IndexCounts,
    RejectedCounts,
    StoredSettings,
    StoredStatistics,
)
from uncertain_cep.index.store.node_columns import write_node_columns
from uncertain_cep.index.store.packed_nodes import pack_node_columns
from uncertain_cep.index.store.rtree_and_statistics import (
    SharedExtents,
    write_rtree_and_statistics,
)
from uncertain_cep.index.store.time_order import sort_table_by_time
from uncertain_cep.index.store.weighted_nodes import derive_probabilities
from uncertain_cep.index.store.working_copy import adopt, link_or_copy
from uncertain_cep.model.instant_weights import typed_weights
from uncertain_cep.model.time_axis import TimeAxis
from uncertain_cep.model.values import plain

__all__ = ["finish_directory", "finish_index", "remove_leftovers", "save_index",
           "sha256_file", "write_index_tables", "write_manifest"]


def save_index(index: EventIndex, path: str | os.PathLike[str]) -> None:
    """Write an in-process index to the directory ``path`` atomically (replacing an older
    index there). The manifest records the archive's time axis, as the Spark build does.
    (As shards: :func:`~uncertain_cep.index.store.sharded.save_sharded`.)"""
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
    table = typed_weights(pa.Table.from_pandas(events, preserve_index=False))
    write_durably(table, root / EVENTS / PART.format(0))
    group_type = table.schema.field(archive.group_by).type
    nodes, trees = forests_tables(index.forests, [plain(archive.group_labels[g])
                                                  for g in range(len(index.forests))],
                                  group_type)
    write_durably(nodes, root / NODES / PART.format(0))
    write_durably(trees, root / TREES / PART.format(0))


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
    manifest = finish_directory(
        draft.path, group_by=group_by, attributes=attributes, settings=settings,
        time_axis=time_axis, groups=groups, trees=trees, nodes=nodes,
        input_fingerprint=input_fingerprint, build=build, rejected=rejected)
    swap_into_place(draft.path, draft.target)
    return manifest


def finish_directory(root: Path, *, group_by: str, attributes: AttributeNames,
                     settings: BuildSettings, time_axis: TimeAxis | None,
                     groups: int | None, trees: int | None, nodes: int | None,
                     input_fingerprint: str | None, build: BuildRecord | None = None,
                     rejected: RejectedCounts | None = None,
                     shared: SharedExtents | None = None) -> Manifest:
    """:func:`finish_index` without the move: complete the index directory ``root`` in
    place, its manifest written last (a shard of a sharded index: ``shared`` are the
    extents its statistics are counted over; counts left ``None`` are read from the
    tables' footers)."""
    remove_leftovers(root)
    nodes_files, trees_files, events_files = ([root / f for f in table_files(root, t)]
                                              for t in (NODES, TREES, EVENTS))
    # Events in time order first: the archive's row order, which everything derived
    # below follows.
    sort_table_by_time(events_files, EVENT_COLUMNS[1])
    keys = group_keys(root) if trees_files else pd.Index([])
    groups = len(keys) if groups is None else groups
    trees = _rows(trees_files) if trees is None else trees
    nodes = _rows(nodes_files) if nodes is None else nodes
    # The working files (what a query maps) first, then their compact form, which is
    # what the index stores.
    work = root / WORK
    shutil.rmtree(work, ignore_errors=True)
    write_node_columns(work / COLUMNS, nodes_files, trees_files, events_files,
                       group_by=group_by, keys=keys)
    # A weighted index's probabilities follow from its weights: derived here as on
    # every host that expands it, and not stored.
    derived = derive_probabilities(work / COLUMNS, events_files)
    write_event_columns(work / EVENT_ARRAYS, events_files, group_by=group_by,
                        numeric=attributes.numeric, layout_columns=EVENT_COLUMNS, keys=keys)
    n_events, time_domain, rtree, statistics = write_rtree_and_statistics(
        root, group_by, attributes.numeric, attributes.categorical, shared, rtree_dir=work)
    group_type = (pq.read_schema(events_files[0]).field(group_by).type if events_files
                  else None)
    pack_node_columns(work / COLUMNS, root / PACKED,
                      pa.array(keys.to_numpy(), type=group_type) if len(keys) else None,
                      probabilities=not derived)
    # The R*-tree is stored as libspatialindex reads it, and the working copy links
    # the stored files: a host then holds it once (working_copy.expand_stored).
    for name in rtree_files(rtree.chunks):
        os.replace(work / name, root / name)
        link_or_copy(root / name, work / name)
        fsync_file(root / name)
    fsync_files(root / PACKED)
    # The builders' nodes and trees tables are deleted once the manifest is written (a
    # task killed before that and retried finds them again), and never listed.
    transient = tuple(f"{name}/" for name in (WORK, NODES, TREES))
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
                   if p.is_file() and not p.relative_to(root).as_posix().startswith(transient))
    manifest = Manifest(
        format_version=FORMAT_VERSION, group_by=group_by, attributes=attributes,
        schema=tuple((f.name, str(f.type)) for f in pq.read_schema(
            root / table_files(root, EVENTS)[0])) if n_events else (),
        settings=StoredSettings.of(settings),
        time_axis=time_axis,
        counts=IndexCounts(n_events, int(groups), int(trees), int(nodes)), time=time_domain,
        rtree=rtree, statistics=StoredStatistics.of(statistics),
        # The archive as validated is what the index answers for; a build from files
        # also records the files it read (see the Spark job).
        input_fingerprint=input_fingerprint or _fingerprint(root, EVENTS),
        checksums=tuple((name, file_digest(root / name)) for name in files),
        build=build, rejected=rejected)
    write_manifest(root, manifest)
    for table in (NODES, TREES):
        shutil.rmtree(root / table, ignore_errors=True)
    adopt(work, manifest)
    return manifest


def write_manifest(root: Path, manifest: Manifest) -> None:
    """Write ``manifest.json`` with its own checksum, durably (the last file of an index
    directory)."""
    data = manifest.to_json()
    # Never write a manifest the reader would refuse (a stray numpy scalar, say).
    Manifest.from_json(data)
    data[SELF_CHECKSUM] = manifest_digest(data)
    with open(root / MANIFEST, "w") as fh:
        json.dump(data, fh, indent=2)
        fh.flush()
        os.fsync(fh.fileno())
    fsync_dir(root)


def remove_leftovers(root: Path) -> None:
    """Delete what attempts of a task killed midway left (a build task's temporary part
    files, a sort's temporary copy): a retried task wrote its own, and they must not be
    listed in the manifest."""
    for path in root.rglob(".*"):
        if path.is_file() and (".attempt-" in path.name or path.name.endswith(".sorting")):
            path.unlink()


def _rows(files: list[Path]) -> int:
    return sum(pq.ParquetFile(f).metadata.num_rows for f in files)


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
