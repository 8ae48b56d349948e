"""What a Spark task does with its partition of the archive: validate, index, write.

The build job hash-partitions rows by dependency group and sorts each partition by group,
so a task sees every group whole and one after another. For each group it

1. validates the rows with the same code as the in-process reader
   (:func:`~uncertain_cep.model.events.read_archive`), setting bad rows aside with the
   reason, naming the input file and row;
2. builds the group's forest with the in-process builder
   (:func:`~uncertain_cep.index.group_build.build_group_forest`) in canonical event order;
3. appends the group's events (with their positions, feasible instants and code ranges),
   nodes and trees to this task's Parquet files in the draft index directory. When the
   build cuts the archive into shards (``GroupJob.cuts``), each shard's piece of the group
   (the clusters starting in its time range: :mod:`uncertain_cep.index.shards`) is
   indexed as a group of its own and written to that shard's directory; a group with a
   piece that cannot be indexed is set aside whole.

The index's own writer (:class:`~uncertain_cep.index.store.partition_writer.PartitionWriter`) writes
the files under a temporary name and renames them when the task completes, so a retried
task replaces its own output and a failed build leaves only a draft that the reader
(:mod:`uncertain_cep.index.store.reader`) never accepts. No Spark import here: the module is
plain Python and testable without a cluster.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from uncertain_cep.errors import IndexBuildError, InputError
from uncertain_cep.index.forests.tables import ForestRows
from uncertain_cep.index.forests.weights import group_weights
from uncertain_cep.index.group_build import BuildSettings, build_group_forest, piece_forests
from uncertain_cep.index.shards import shard_of_rows
from uncertain_cep.index.store.layout import SHARD
from uncertain_cep.index.store.partition_writer import PartitionWriter
from uncertain_cep.model.events import Archive, canonical_order, read_archive
from uncertain_cep.model.instant_weights import InstantWeights
from uncertain_cep.model.number_columns import OTHER_ROWS
from uncertain_cep.model.values import plain

__all__ = ["FILE_COLUMN", "ROW_COLUMN", "SUMMARY_COLUMNS", "GroupJob", "build_partition"]

FILE_COLUMN, ROW_COLUMN = "_uc_file", "_uc_row"
SUMMARY_COLUMNS = {"status": "string", "group": "string", "events": "bigint",
                   "nodes": "bigint", "trees": "bigint", "bad_rows": "bigint",
                   "reason": "string", "file": "string", "row": "bigint",
                   # What the shards' statistics are laid over, and the shards written.
                   "t_lo": "bigint", "t_hi": "bigint", "lows": "array<double>",
                   "highs": "array<double>", "shards": "array<bigint>"}


@dataclass(frozen=True)
class GroupJob:
    """Everything a task needs, shipped to executors with the function."""

    draft: str
    group_by: str
    time_unit: Any
    settings: BuildSettings
    reject_rows: bool        # set bad rows aside (True) or fail the build (False)
    # Timestamp columns that arrive as microseconds since the epoch (UTC), whatever the
    # session's time zone (spark_types.timestamps_as_micros).
    micros_columns: tuple[str, ...] = ()
    # Time columns that arrive as nanoseconds since the epoch: Parquet nanosecond
    # timestamps, which Spark reads only as longs (spark_reader.nanos_as_long).
    nanos_columns: tuple[str, ...] = ()
    # String columns read as numbers (build_input.numeric_text_columns decides, over the
    # whole input).
    numeric_text: tuple[str, ...] = ()
    # The build's columns= (the archive's names -> the input's), already applied in
    # Spark: messages name the input's columns.
    renamed: dict[str, str] = field(default_factory=dict)
    # Cut instants of a sharded build (shard k: clusters starting in [cuts[k-1],
    # cuts[k])); none: one index directory.
    cuts: tuple[int, ...] = ()
    # Whether the input has instant-weight columns (SEMANTICS A6): every events part
    # file then has them, null for the events without weights.
    weighted: bool = False
    # Duration columns that arrive as integers, and their unit (InputSpec.duration_units).
    duration_units: dict[str, str] = field(default_factory=dict)

    def shard_root(self, shard: int) -> str:
        """Where shard ``shard``'s tables go: the draft itself when there are no cuts."""
        return str(Path(self.draft) / SHARD.format(shard)) if self.cuts else self.draft


def build_partition(job: GroupJob, partition: int, attempt: int,
                    batches: Iterator[pd.DataFrame]) -> pd.DataFrame:
    """Index every group of one partition; return one summary row per group."""
    out = _Writers(job, partition, attempt)
    summaries: list[dict[str, Any]] = []
    if job.micros_columns:
        batches = (_as_timestamps(b, job.micros_columns) for b in batches)
    if job.nanos_columns:
        batches = (_as_timestamps(b, job.nanos_columns, "ns") for b in batches)
    if job.duration_units:
        batches = (_as_durations(b, job.duration_units) for b in batches)
    try:
        for key, rows in _groups(batches, job.group_by):
            summaries.append(_build_group(job, key, rows, out))
        out.commit()
    finally:
        out.abort()
    return pd.DataFrame(summaries, columns=list(SUMMARY_COLUMNS))


def _as_timestamps(batch: pd.DataFrame, columns: tuple[str, ...],
                   unit: Literal["us", "ns"] = "us") -> pd.DataFrame:
    """Microseconds (or ``unit``) since the epoch back into (naive, UTC) timestamps."""
    return batch.assign(**{c: pd.to_datetime(batch[c], unit=unit) for c in columns})


def _as_durations(batch: pd.DataFrame, units: dict[str, str]) -> pd.DataFrame:
    """Integer durations (``units``: each column's unit) back into timedeltas."""
    return batch.assign(**{c: pd.to_timedelta(batch[c].to_numpy(), unit=u)  # type: ignore[call-overload]
                           for c, u in units.items() if c in batch})


def _groups(batches: Iterator[pd.DataFrame], group_by: str
            ) -> Iterator[tuple[object, pd.DataFrame]]:
    """Whole groups from batches sorted by group (a group may span batches)."""
    pending: list[pd.DataFrame] = []
    current: object = _NOTHING
    for batch in batches:
        if batch.empty:
            continue
        codes, uniques = pd.factorize(batch[group_by], use_na_sentinel=False)
        starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
        for a, b in zip(starts, np.r_[starts[1:], len(batch)]):
            key = uniques[codes[a]]
            if pending and not _same(key, current):
                yield current, pd.concat(pending, ignore_index=True)
                pending = []
            current = key
            pending.append(batch.iloc[a:b])
    if pending:
        yield current, pd.concat(pending, ignore_index=True)


_NOTHING = object()


def _same(a: object, b: object) -> bool:
    if b is _NOTHING:
        return False
    if _missing(a) and _missing(b):
        return True
    return bool(a == b)


def _missing(x: Any) -> bool:
    return bool(pd.isna(x))


def _where(rows: pd.DataFrame, i: int) -> str:
    file, row = rows[FILE_COLUMN].iloc[i], rows[ROW_COLUMN].iloc[i]
    return f"row {int(row)} of {file}" if pd.notna(row) else f"in {file}"


def _summary(status: str, key: object, **counts: Any) -> dict[str, Any]:
    base = {"status": status, "group": None if _missing(key) else str(key),
            "events": 0, "nodes": 0, "trees": 0, "bad_rows": 0, "reason": None,
            "file": None, "row": None, "t_lo": None, "t_hi": None, "lows": None,
            "highs": None, "shards": None}
    base.update(counts)
    return base


def _build_group(job: GroupJob, key: object, rows: pd.DataFrame,
                 out: _Writers) -> dict[str, Any]:
    data = rows.drop(columns=[FILE_COLUMN, ROW_COLUMN])
    if _missing(key):
        reasons = [f"event {_eid(data['event_id'].iloc[i])} ({_where(rows, i)}): column "
                   f"{job.group_by!r} is missing; every event needs a dependency group"
                   for i in range(len(rows))]
        bad = list(range(len(rows)))
        archive = None
    else:
        archive, bad, reasons = _validate(job, rows, data)
    if bad:
        out.top.add_rejected_rows(
            [str(data["event_id"].iloc[i]) for i in bad],
            None if _missing(key) else str(key),
            [str(rows[FILE_COLUMN].iloc[i]) for i in bad],
            [None if pd.isna(rows[ROW_COLUMN].iloc[i]) else int(rows[ROW_COLUMN].iloc[i])
             for i in bad],
            reasons)
        first = {"reason": reasons[0], "file": str(rows[FILE_COLUMN].iloc[bad[0]]),
                 "row": None if pd.isna(rows[ROW_COLUMN].iloc[bad[0]])
                 else int(rows[ROW_COLUMN].iloc[bad[0]])}
        if not job.reject_rows or archive is None:
            return _summary("bad_rows", key, bad_rows=len(bad), **first)
    if archive is None or archive.n_events == 0:
        return _summary("ok", key, bad_rows=len(bad))
    return _index_group(job, key, archive, out, bad_rows=len(bad))


def _validate(job: GroupJob, rows: pd.DataFrame, data: pd.DataFrame
              ) -> tuple[Archive | None, list[int], list[str]]:
    """Validate a group's rows, setting aside each row the reader rejects, one at a time
    (bad rows are rare; each pass costs one vectorised read)."""
    keep = np.arange(len(data))
    bad: list[int] = []
    reasons: list[str] = []
    while len(keep):
        try:
            archive = read_archive(data.iloc[keep].reset_index(drop=True),
                                   group_by=job.group_by, time_unit=job.time_unit,
                                   numeric_text=job.numeric_text, renamed=job.renamed,
                                   weighted=True)
            if job.weighted and archive.instant_weights is None:
                archive = replace(archive, instant_weights=InstantWeights.none(len(keep)))
            return archive, bad, reasons
        except InputError as e:
            if e.row is None:
                raise
            i = int(keep[e.row])
            where = _where(rows, i)
            # Other rows a message lists are positions in this group: each gets its own.
            reasons.append(OTHER_ROWS.sub("", str(e)).replace(f"(row {e.row})", f"({where})")
                           .replace(f"row {e.row}:", f"{where}:"))
            bad.append(i)
            keep = np.delete(keep, e.row)
    return None, bad, reasons


def _index_group(job: GroupJob, key: object, archive: Archive, out: _Writers,
                 bad_rows: int) -> dict[str, Any]:
    c2 = job.settings.condition2
    label = plain(key)
    shard = (shard_of_rows(archive, np.asarray(job.cuts, dtype=np.int64), c2) if job.cuts
             else np.zeros(archive.n_events, dtype=np.int64))
    # The group's canonical order once: a piece's is the group's restricted to its
    # events (an archive cut into many shards has many small pieces per group).
    in_order = canonical_order(archive.t_lo, archive.t_hi, archive.event_ids)
    order: Any      # ndarray indexes as the Sequence build_group_forest takes
    shards = np.unique(shard).tolist()
    in_shard = shard[in_order]      # each event's shard, in canonical order
    pieces = []
    try:
        # A group in several shards: its pieces' forests cut from its own at once, where
        # they can be (a piece costs far less than building its forest).
        cut = (piece_forests(archive.t_lo[in_order], archive.t_hi[in_order], in_shard,
                             job.settings, group_weights(archive.instant_weights, in_order,
                                                         archive.t_lo[in_order]))
               if job.cuts and len(shards) > 1 else None) or {}
        for k in shards:
            if job.cuts:
                piece = archive.take_rows(in_order[in_shard == k])
                order = np.arange(piece.n_events)
            else:
                piece, order = archive, in_order
            forest: ForestRows | None = cut.get(k)
            if forest is None:
                check = c2.for_group(piece, order) if c2 is not None else None
                forest = build_group_forest(label, piece.event_ids[order], piece.t_lo[order],
                                            piece.t_hi[order], check, job.settings,
                                            group_weights(piece.instant_weights, order,
                                                          piece.t_lo[order]))
            pieces.append((k, piece, order, forest))
    except (InputError, IndexBuildError) as e:
        status = "infeasible" if isinstance(e, InputError) else "too_large"
        out.top.add_rejected_group([str(x) for x in archive.event_ids], str(label), str(e))
        return _summary(status, key, events=archive.n_events, bad_rows=bad_rows,
                        reason=str(e))
    for k, piece, order, forest in pieces:
        out.shard(k).add_group(piece, order, forest, label, job.group_by,
                               job.settings.codes)
    numeric = [archive.numeric[a] for a in archive.numeric_names]
    return _summary("ok", key, events=archive.n_events, bad_rows=bad_rows,
                    nodes=sum(f.n_nodes for *_, f in pieces),
                    trees=sum(f.n_trees for *_, f in pieces),
                    t_lo=int(archive.t_lo.min()), t_hi=int(archive.t_hi.max()),
                    lows=[float(a.lo.min()) for a in numeric],
                    highs=[float(a.hi.max()) for a in numeric],
                    shards=[k for k, *_ in pieces])


class _Writers:
    """A task's writers: the draft's own (rejected rows and groups, and the tables of an
    index in one directory) and one per shard it writes groups to."""

    def __init__(self, job: GroupJob, partition: int, attempt: int) -> None:
        self.job, self.partition, self.attempt = job, partition, attempt
        self.top = PartitionWriter(job.draft, partition, attempt)
        self._shards: dict[int, PartitionWriter] = {}

    def shard(self, k: int) -> PartitionWriter:
        if not self.job.cuts:
            return self.top
        if k not in self._shards:
            self._shards[k] = PartitionWriter(self.job.shard_root(k), self.partition,
                                              self.attempt)
        return self._shards[k]

    def commit(self) -> None:
        for writer in (self.top, *self._shards.values()):
            writer.commit()

    def abort(self) -> None:
        for writer in (self.top, *self._shards.values()):
            writer.abort()



def _eid(x: object) -> str:
    return repr(plain(x))
