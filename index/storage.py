"""The on-disk index: Parquet tables, statistics, the R*-tree file and a manifest, written
atomically. The in-process builder and the Spark job write the same layout.

Layout of an index directory::

    manifest.json       format version, schema, attributes, build settings, counts, time
                        domain, input fingerprint, and a SHA-256 of every other file
    events/part-*.parquet   the validated archive (time discretised), one row per event,
                        plus each event's group code, position in its group, feasible
                        instants and code range (columns prefixed ``_uc_``)
    trees/part-*.parquet    one row per OI-tree (:data:`uncertain_cep.index.tables.TREE_COLUMNS`)
    nodes/part-*.parquet    one row per node (:data:`uncertain_cep.index.tables.NODE_COLUMNS`)
    stats/time.parquet      events per time bucket (by earliest instant) and the latest
                        instant of those events: what the time-sliced query engine
                        sizes its work by
    stats/cells.parquet, stats/categories.parquet   the selectivity statistics
                        (:mod:`uncertain_cep.index.statistics`; the grid is in the manifest)
    rtree.dat, rtree.idx    libspatialindex's R*-tree over every event's box; entry ids
                        are event rows in the order of the events table (files by name)
    rejected_rows/, rejected_groups/   what a build set aside when asked to, with reasons

A write goes to a temporary sibling directory; every file is flushed to disk and the
manifest is written last; the directory is then renamed into place. An interrupted write
therefore never leaves a directory that :func:`load_index` accepts, and a damaged or
foreign one is refused with :class:`~uncertain_cep.errors.IndexFormatError`.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import tempfile
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from rtree import index as rtree_index

from uncertain_cep.errors import IndexFormatError
from uncertain_cep.index.event_index import (
    BuildSettings,
    EventIndex,
    EventLayout,
    event_boxes,
    rtree_properties,
)
from uncertain_cep.index.forest import GroupForest
from uncertain_cep.index.statistics import EventStatistics, StatisticsBuilder, StatisticsGrid
from uncertain_cep.index.tables import forest_from_frames, forest_tables, node_schema, tree_schema
from uncertain_cep.model.events import Archive, read_archive
from uncertain_cep.model.feasibility import MaxSpeed, PairPredicate

__all__ = ["EVENT_COLUMNS", "FORMAT_VERSION", "IndexDraft", "finish_index", "load_index",
           "load_index_and_manifest", "read_manifest", "read_statistics", "save_index",
           "table_files"]

FORMAT_VERSION = 3
MANIFEST = "manifest.json"
# Internal per-event columns of the events table.
EVENT_COLUMNS = ("_uc_pos", "_uc_t_min", "_uc_t_max", "_uc_code_lo", "_uc_code_hi")
_TIME_BUCKETS = 1024


# ---------------------------------------------------------------- writing

class IndexDraft:
    """A temporary directory beside ``target`` that becomes the index when finished."""

    def __init__(self, target: str | os.PathLike[str]) -> None:
        target = Path(target)
        self.target = target
        if target.exists() and not (target / MANIFEST).exists() and any(target.iterdir()):
            raise IndexFormatError(f"{target} exists and is not an index; refusing to "
                                   "overwrite it (choose another --out or remove it)")
        target.parent.mkdir(parents=True, exist_ok=True)
        self.path = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
        # mkdtemp makes the directory private (0700); an index is as readable as any
        # directory made under the user's umask.
        os.chmod(self.path, 0o777 & ~_umask())

    def discard(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def save_index(index: EventIndex, path: str | os.PathLike[str], *,
               time_unit: object = None) -> None:
    """Write an in-process index to the directory ``path`` atomically (replacing an older
    index there)."""
    draft = IndexDraft(path)
    try:
        archive = index.archive
        events = archive.to_frame()
        lay = index.layout
        for name, values in zip(EVENT_COLUMNS, (lay.positions, lay.t_min, lay.t_max,
                                                lay.code_lo, lay.code_hi)):
            events[name] = values
        table = pa.Table.from_pandas(events, preserve_index=False)
        _write(table, draft.path / "events" / "part-00000.parquet")
        group_type = table.schema.field(archive.group_by).type
        pairs = [forest_tables(f, _plain(archive.group_labels[g]), group_type)
                 for g, f in enumerate(index.forests)]
        _write(pa.concat_tables([n for n, _ in pairs]) if pairs
               else node_schema(group_type).empty_table(),
               draft.path / "nodes" / "part-00000.parquet")
        _write(pa.concat_tables([t for _, t in pairs]) if pairs
               else tree_schema(group_type).empty_table(),
               draft.path / "trees" / "part-00000.parquet")
        finish_index(draft, group_by=archive.group_by,
                     attributes=(archive.numeric_names, archive.categorical_names),
                     settings=index.settings, time_unit=time_unit,
                     counts={"groups": archive.n_groups,
                             "trees": sum(f.n_trees for f in index.forests),
                             "nodes": sum(f.n_nodes for f in index.forests)},
                     input_fingerprint=None)
    except BaseException:
        draft.discard()
        raise


def finish_index(draft: IndexDraft, *, group_by: str,
                 attributes: tuple[tuple[str, ...], tuple[str, ...]],
                 settings: BuildSettings, time_unit: object, counts: dict[str, int],
                 input_fingerprint: str | None, extra: dict[str, Any] | None = None) -> None:
    """Complete a draft whose ``events``, ``nodes`` and ``trees`` tables are written: load
    the R*-tree file and the statistics from the events table (streamed, so memory does not
    grow with the archive), write the manifest, and move the draft into place."""
    root = draft.path
    numeric = attributes[0]
    n_events, time_domain, dimension, statistics = _write_rtree_and_stats(
        root, group_by, numeric, tuple(attributes[1]))
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    checksums = {name: _sha256(root / name) for name in files}
    manifest = {
        "format": "uncertain-cep index",
        "format_version": FORMAT_VERSION,
        "group_by": group_by,
        "attributes": {"numeric": list(numeric), "categorical": list(attributes[1])},
        "schema": {f.name: str(f.type) for f in pq.read_schema(
            root / table_files(root, "events")[0])} if n_events else {},
        "settings": _settings_to_json(settings),
        "time_unit": None if time_unit is None else str(time_unit),
        "counts": {"events": n_events, **counts},
        "time": time_domain,
        "rtree": {"dimension": dimension, "entries": n_events},
        "statistics": statistics.to_json(),
        # The archive as validated is what the index answers for; a build from files
        # also records the files it read (see the Spark job).
        "input_fingerprint": input_fingerprint or _fingerprint(root, "events"),
        "sha256": checksums,
        **(extra or {}),
    }
    with open(root / MANIFEST, "w") as fh:
        json.dump(manifest, fh, indent=2, default=str)
        fh.flush()
        os.fsync(fh.fileno())
    _fsync_dir(root)
    _swap_into_place(root, draft.target)


def table_files(root: Path, table: str) -> list[str]:
    """Relative paths of a table's Parquet files, in row order."""
    return sorted(p.relative_to(root).as_posix() for p in (root / table).glob("*.parquet"))


def _write(table: pa.Table, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())


def _event_batches(root: Path, columns: list[str]) -> Iterator[pa.RecordBatch]:
    for name in table_files(root, "events"):
        yield from pq.ParquetFile(root / name).iter_batches(batch_size=65536, columns=columns)


def group_keys(root: Path) -> pd.Index:
    """Every group key of an index (from its trees table), sorted: position = group code."""
    files = [str(root / f) for f in table_files(root, "trees")]
    keys = pq.ParquetDataset(files).read(columns=["group"]).column("group").unique()
    return pd.Index(keys.to_pandas()).sort_values()


def _write_rtree_and_stats(root: Path, group_by: str, numeric: tuple[str, ...],
                           categorical: tuple[str, ...]
                           ) -> tuple[int, dict[str, int | None], int, EventStatistics]:
    lo_hi = [c for a in numeric for c in (f"{a}_lo", f"{a}_hi")]
    columns = [group_by, *EVENT_COLUMNS[1:], *lo_hi, *categorical]
    keys = group_keys(root) if table_files(root, "trees") else pd.Index([])
    n_rows, t0, t1 = _footer_summary(root)
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

    def boxes() -> Iterator[tuple[int, tuple[float, ...], None]]:
        nonlocal seen, max_width
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
            mins, maxs = event_boxes(group, t_min, t_max, code_lo, code_hi, ranges)
            # interleaved=False: (min, max) of each axis in turn.
            coords = np.empty((len(mins), 2 * mins.shape[1]))
            coords[:, 0::2], coords[:, 1::2] = mins, maxs
            for k, c in enumerate(coords.tolist()):
                yield seen + k, tuple(c), None
            seen += len(coords)

    props = rtree_properties(len(numeric))
    props.overwrite = True
    # A bulk load needs at least one entry.
    source = (boxes(),) if n_rows else ()
    tree = rtree_index.Index(str(root / "rtree"), *source, properties=props, interleaved=False)
    tree.close()
    for name in ("rtree.dat", "rtree.idx"):
        with open(root / name, "rb+") as fh:
            os.fsync(fh.fileno())
    stats = pa.table({"bucket": np.arange(n_buckets, dtype=np.int64),
                      "t_lo": t0 + width * np.arange(n_buckets, dtype=np.int64)
                      if t0 is not None else np.zeros(0, dtype=np.int64),
                      "events": counts, "latest": latest})
    _write(stats, root / "stats" / "time.parquet")
    finished = statistics.finish()
    cells, cats = finished.to_frames()
    _write(pa.Table.from_pandas(cells, preserve_index=False), root / "stats" / "cells.parquet")
    _write(pa.Table.from_pandas(cats, preserve_index=False),
           root / "stats" / "categories.parquet")
    domain = {"t_min": t0, "t_max": t1, "bucket_width": width, "max_interval": max_width}
    return seen, domain, 3 + len(numeric), finished


def _footer_extreme(root: Path, column: str, pick: Any) -> float | None:
    """The smallest (``pick=min``) or largest (``max``) value of a numeric column of the
    events table, from the Parquet footers where they have statistics."""
    found: list[float] = []
    for name in table_files(root, "events"):
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


def read_statistics(root: Path, manifest: dict[str, Any]) -> EventStatistics:
    """The selectivity statistics stored with an index."""
    return EventStatistics.from_frames(
        manifest["statistics"],
        pq.read_table(root / "stats" / "cells.parquet").to_pandas(),
        pq.read_table(root / "stats" / "categories.parquet").to_pandas())


def _footer_summary(root: Path) -> tuple[int, int | None, int | None]:
    """Number of events, smallest ``_uc_t_min`` and largest ``_uc_t_max``, from the
    Parquet footers of the events table."""
    n_rows = 0
    t0: int | None = None
    t1: int | None = None
    for name in table_files(root, "events"):
        meta = pq.ParquetFile(root / name).metadata
        n_rows += meta.num_rows
        schema = meta.schema.to_arrow_schema()
        i0, i1 = schema.get_field_index("_uc_t_min"), schema.get_field_index("_uc_t_max")
        for rg in range(meta.num_row_groups):
            if meta.row_group(rg).num_rows == 0:
                continue
            s0 = meta.row_group(rg).column(i0).statistics
            s1 = meta.row_group(rg).column(i1).statistics
            if s0 is None or s1 is None or not (s0.has_min_max and s1.has_min_max):
                col = pq.read_table(root / name, columns=["_uc_t_min", "_uc_t_max"])
                lo, hi = int(pa.compute.min(col[0]).as_py()), int(pa.compute.max(col[1]).as_py())
            else:
                lo, hi = int(s0.min), int(s1.max)
            t0 = lo if t0 is None else min(t0, lo)
            t1 = hi if t1 is None else max(t1, hi)
    return n_rows, t0, t1


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _fingerprint(root: Path, table: str) -> str:
    h = hashlib.sha256()
    for name in table_files(root, table):
        h.update(_sha256(root / name).encode())
    return h.hexdigest()


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _swap_into_place(tmp: Path, target: Path) -> None:
    if not target.exists():
        os.replace(tmp, target)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
    old.rmdir()
    os.replace(target, old)
    os.replace(tmp, target)
    shutil.rmtree(old, ignore_errors=True)


def _settings_to_json(settings: BuildSettings) -> dict[str, Any]:
    c2 = settings.condition2
    if isinstance(c2, MaxSpeed):
        cond: dict[str, Any] | None = {"kind": "max_speed", "v_max": c2.v_max,
                                       "coordinates": list(c2.coordinates)}
    elif c2 is not None:
        cond = {"kind": "user_predicate"}
    else:
        cond = None
    return {"condition2": cond, "multi_tree": settings.multi_tree, "codes": settings.codes,
            "node_budget": settings.node_budget}


# ---------------------------------------------------------------- reading

def read_manifest(root: Path) -> dict[str, Any]:
    """The manifest of an index directory, after checking its format version and every
    file's checksum."""
    if not root.is_dir():
        raise IndexFormatError(f"{root} is not an index directory (it does not exist)")
    try:
        with open(root / MANIFEST) as fh:
            manifest = json.load(fh)
    except FileNotFoundError:
        raise IndexFormatError(f"{root} has no manifest.json: not an index, or its write was "
                               "interrupted; rebuild it") from None
    except (OSError, ValueError) as e:
        raise IndexFormatError(f"{root}/manifest.json is damaged: {e}") from e
    if not isinstance(manifest, dict) or manifest.get("format") != "uncertain-cep index":
        raise IndexFormatError(f"{root}/manifest.json does not describe an uncertain-cep index")
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        raise IndexFormatError(f"{root} has index format version {version!r}; this version of "
                               f"uncertain-cep reads version {FORMAT_VERSION}; rebuild the index")
    checksums = manifest.get("sha256")
    if not isinstance(checksums, dict) or not checksums:
        raise IndexFormatError(f"{root}/manifest.json lists no files; rebuild the index")
    for name in ("events", "nodes", "trees"):
        if not any(k.startswith(f"{name}/") for k in checksums):
            raise IndexFormatError(f"{root}/manifest.json lists no {name} table")
    for name, digest in checksums.items():
        if not (root / name).is_file():
            raise IndexFormatError(f"{root} is damaged: {name} is missing; rebuild the index")
        if _sha256(root / name) != digest:
            raise IndexFormatError(f"{root} is damaged: {name} does not match its checksum in "
                                   "manifest.json; rebuild the index")
    return manifest


def load_index(path: str | os.PathLike[str],
               pair_predicate: PairPredicate | None = None) -> EventIndex:
    """Open an index directory written by :func:`save_index` or the Spark build."""
    return load_index_and_manifest(path, pair_predicate)[0]


def load_index_and_manifest(path: str | os.PathLike[str],
                            pair_predicate: PairPredicate | None = None
                            ) -> tuple[EventIndex, dict[str, Any]]:
    """:func:`load_index`, and the checked manifest it was read by (its build records)."""
    root = Path(path)
    manifest = read_manifest(root)
    try:
        events = _read_table(root, "events")
        settings = settings_from_json(manifest["settings"], pair_predicate)
        archive, layout = archive_from_events(events, manifest["group_by"])
        forests = forests_from_tables(_read_table(root, "trees"), _read_table(root, "nodes"),
                                      archive.group_labels, settings.codes == "paper")
        rtree = (_open_rtree(root, len(archive.numeric_names)) if archive.n_events
                 else None)
        statistics = read_statistics(root, manifest)
    except (OSError, KeyError, ValueError, pa.ArrowException, rtree_index.RTreeError) as e:
        raise IndexFormatError(f"{root} is damaged: {e}; rebuild the index") from e
    return EventIndex(archive, settings, forests, layout=layout, rtree=rtree,
                      statistics=statistics), manifest


def _read_table(root: Path, table: str, **kwargs: Any) -> pd.DataFrame:
    files = table_files(root, table)
    if not files:
        raise IndexFormatError(f"{root} is damaged: the {table} table has no files")
    return pq.ParquetDataset([str(root / f) for f in files], **kwargs).read().to_pandas()


def _open_rtree(root: Path, n_attributes: int) -> rtree_index.Index:
    """Open a private copy of the R*-tree file: libspatialindex rewrites header pages of a
    file it has opened, which would break the index's checksums (and race with other
    readers); the copy is removed when the R*-tree is garbage-collected."""
    private = Path(tempfile.mkdtemp(prefix="uncertain-cep-rtree-"))
    try:
        for name in ("rtree.dat", "rtree.idx"):
            shutil.copyfile(root / name, private / name)
        props = rtree_properties(n_attributes)
        props.overwrite = False
        tree = rtree_index.Index(str(private / "rtree"), properties=props, interleaved=False)
    except BaseException:
        shutil.rmtree(private, ignore_errors=True)
        raise
    weakref.finalize(tree, shutil.rmtree, private, True)
    return tree


def archive_from_events(events: pd.DataFrame, group_by: str) -> tuple[Archive, EventLayout]:
    """The archive and layout stored in an events table (whole, or a slice of it)."""
    internal = {c: events[c].to_numpy() for c in EVENT_COLUMNS}
    archive = read_archive(events.drop(columns=list(EVENT_COLUMNS)), group_by=group_by)
    layout = EventLayout(positions=internal["_uc_pos"].astype(np.int64),
                         t_min=internal["_uc_t_min"].astype(np.int64),
                         t_max=internal["_uc_t_max"].astype(np.int64),
                         code_lo=internal["_uc_code_lo"].astype(np.float64),
                         code_hi=internal["_uc_code_hi"].astype(np.float64))
    return archive, layout


def forests_from_tables(trees: pd.DataFrame, nodes: pd.DataFrame, labels: np.ndarray,
                        paper_codes: bool) -> list[GroupForest]:
    """The forests of the groups ``labels`` (in that order) from their table rows."""
    tree_groups = dict(iter(trees.groupby("group", sort=False)))
    node_groups = dict(iter(nodes.groupby("group", sort=False)))
    out = []
    for label in labels:
        if label not in tree_groups or label not in node_groups:
            raise IndexFormatError(f"group {_plain(label)!r} has events but no OI-trees")
        out.append(forest_from_frames(tree_groups[label], node_groups[label], paper_codes))
    return out


def _plain(x: Any) -> Any:
    return x.item() if isinstance(x, np.generic) else x


def settings_from_json(data: dict[str, Any], pair_predicate: PairPredicate | None
                       ) -> BuildSettings:
    cond = data.get("condition2")
    condition2: MaxSpeed | PairPredicate | None = None
    if cond is not None and cond["kind"] == "max_speed":
        condition2 = MaxSpeed(cond["v_max"], tuple(cond["coordinates"]))
    elif cond is not None:
        # A user's function is not stored; the trees were built with it, and only the
        # possible-worlds baseline needs it again.
        condition2 = pair_predicate
    return BuildSettings(condition2=condition2, multi_tree=data["multi_tree"],
                         codes=data["codes"], node_budget=data["node_budget"])
