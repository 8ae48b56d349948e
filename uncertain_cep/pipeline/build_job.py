"""The Spark batch job: archive files in, index directory out (Zhou et al. 4, at scale).

1. Read the input through Spark's own reader (a DataFrame, a table, a local path or any
   URI Spark reads, or a pandas or Arrow table of this process;
   :mod:`~uncertain_cep.pipeline.sources`, :mod:`~uncertain_cep.pipeline.spark_reader`),
   rename its columns as ``columns=`` asks (refusing a mapping its schema contradicts),
   cast decimals and dates that have exact counterparts, and check the schema with the
   in-process reader on zero rows of it, before any work is distributed
   (:mod:`~uncertain_cep.pipeline.build_input`).
2. Find duplicate event ids (an aggregation; only the duplicates reach the driver).
3. Count the rows and, for an archive of more than ``shard_events`` events (by default,
   also one of 250,000 events or more per task slot), choose cut
   instants from the quantiles of its earliest times
   (:func:`~uncertain_cep.pipeline.shard_job.plan_cuts_spark`).
4. Hash-partition the rows by dependency group, sort each partition by group, and let
   every task validate, index and write its groups, each group's piece per shard into
   that shard's directory (:func:`~uncertain_cep.pipeline.group_builder.build_partition`).
5. Aggregate the per-group summaries: bad rows and groups that cannot be indexed fail the
   build with the first reasons, or, when asked to, are kept in ``rejected_rows`` /
   ``rejected_groups`` tables of the index.
6. Finish every shard in a task of its own: node and event columns, R*-tree file,
   statistics, time order, checksums, its manifest
   (:func:`uncertain_cep.index.store.storage.finish_directory`); then write the index's
   manifest (for shards, :func:`uncertain_cep.index.store.sharded.finish_sharded`) and
   rename the draft into place. On object storage, the tasks upload what they write and
   the driver publishes a new version (:mod:`~uncertain_cep.pipeline.remote_draft`).

The driver never collects rows of the archive and never reads the index's tables: only
schemas, counts, quantiles, duplicate ids, a few example reasons and the shards'
manifests.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from uncertain_cep.errors import IndexBuildError, InputError, ParamEnum, UncertainCepError
from uncertain_cep.files import index_path
from uncertain_cep.index.event_index import EventIndex
from uncertain_cep.index.group_build import BuildSettings
from uncertain_cep.index.store.drafts import IndexDraft, check_replaceable, swap_into_place
from uncertain_cep.index.store.layout import SHARD
from uncertain_cep.index.store.manifest import Manifest
from uncertain_cep.index.store.manifest_records import (
    AttributeNames,
    BuildRecord,
    RejectedCounts,
)
from uncertain_cep.index.store.remote import VersionUpload, is_remote
from uncertain_cep.index.store.rtree_and_statistics import SharedExtents, check_span
from uncertain_cep.index.store.sharded import finish_sharded
from uncertain_cep.index.store.storage import finish_directory, write_index_tables
from uncertain_cep.input_tables import ColumnLabels
from uncertain_cep.model.feasibility import MaxSpeed, PairConstraint, PairPredicate
from uncertain_cep.model.instant_weights import WEIGHT_COLUMNS
from uncertain_cep.model.time_axis import TimeAxis
from uncertain_cep.pipeline.build_input import (
    check_schema,
    drop_duplicates,
    has_instant_columns,
    numeric_text_columns,
    session_zone,
    supported_types,
    with_origin,
    zoned_time_axis,
)
from uncertain_cep.pipeline.group_builder import (
    FILE_COLUMN,
    ROW_COLUMN,
    SUMMARY_COLUMNS,
    GroupJob,
    build_partition,
)
from uncertain_cep.pipeline.remote_draft import (
    build_and_upload,
    finish_folder,
    publish_sharded,
    upload_empty,
    upload_rejected_rows,
)
from uncertain_cep.pipeline.session import master_of, task_slots
from uncertain_cep.pipeline.shard_job import (
    DEFAULT_SHARD_EVENTS,
    finish_in_tasks,
    plan_cuts_spark,
    shard_records,
    shared_extents_of,
    written_shards,
)
from uncertain_cep.pipeline.sources import InputSpec, input_files, resolve_input, session_for
from uncertain_cep.pipeline.spark_errors import is_spark_error, spark_failure
from uncertain_cep.pipeline.spark_reader import (
    NanosTimestampsError,
    has_nanos_timestamps,
    nanos_as_long,
    parquet_duration_units,
    read_input,
    rename_input,
)
from uncertain_cep.pipeline.spark_types import timestamps_as_micros
from uncertain_cep.pipeline.warm_up import start_warm_up

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["BadInputPolicy", "BuildSummary", "build_index_spark", "input_files"]

_log = logging.getLogger(__name__)


class BadInputPolicy(ParamEnum):
    """What a build does with bad rows or groups that cannot be indexed."""

    error = "error"      # fail the build, naming the first ones
    report = "report"    # index the rest; keep them in rejected_* tables with reasons


@dataclass(frozen=True)
class BuildSummary:
    """What a Spark build wrote."""

    path: str
    events: int
    groups: int
    trees: int
    nodes: int
    rejected_rows: int
    rejected_groups: int
    seconds: float
    phases: dict[str, float]
    shards: int = 1

    def __str__(self) -> str:
        rejected = (f"; set aside {self.rejected_rows} bad rows and {self.rejected_groups} "
                    "groups (see rejected_rows/, rejected_groups/)"
                    if self.rejected_rows or self.rejected_groups else "")
        shards = f" ({self.shards} shards)" if self.shards > 1 else ""
        return (f"indexed {self.events} events of {self.groups} groups into {self.trees} "
                f"OI-trees, {self.nodes} nodes{shards} in {self.seconds:.1f} s{rejected}")


def build_index_spark(source: DataFrame | pd.DataFrame | Any | str | os.PathLike[str],
                      out: str | os.PathLike[str], *,
                      group_by: str = "group", time_unit: float | str | None = None,
                      max_speed: float | None = None, coordinates: Sequence[str] = ("x", "y"),
                      pair_predicate: Callable[..., bool] | None = None,
                      multi_tree: bool = True, codes: str = "compact",
                      node_budget: int | None = 2_000_000, on_bad_rows: str = "error",
                      on_bad_groups: str = "error", master: str | None = None,
                      spark: SparkSession | None = None, partitions: int | None = None,
                      input_format: str | None = None,
                      columns: Mapping[str, str] | None = None,
                      shard_events: int | None = None,
                      log: Callable[[str], None] | None = None) -> BuildSummary:
    """Build the index of an archive with Spark and write it to ``out`` atomically.

    Parameters
    ----------
    source
        The archive: a ``pyspark.sql.DataFrame`` (classic or Spark Connect); a table or
        view name of the session's catalog; a local Parquet or CSV file or directory of
        them (partition folders included); or any URI Spark's reader understands
        (``s3a://``, ``hdfs://``, ``abfss://``, ``file:``), read by Spark itself; or a
        table of this process: a pandas DataFrame or any object with the Arrow PyCapsule
        interface (``__arrow_c_stream__``: a pyarrow Table, a polars DataFrame, a DuckDB
        relation), handed to Spark as a pyarrow Table. Its timestamps keep their instants
        and its time zone is the one answers are given in (naive ones stay naive).
    out
        Where the index goes, replaced atomically if it holds an index: a local path, or
        ``file:`` URI, on a filesystem the executors share with the driver; or a URI of
        object storage (``s3://``, ``s3a://``, ``gs://``, ``abfs://``, ``hdfs://``), to
        which the executors upload their pieces and shards themselves, as a new version
        the driver publishes last (:mod:`~uncertain_cep.pipeline.remote_draft`; every
        executor needs credentials for it).
    group_by, time_unit, max_speed, coordinates, pair_predicate, multi_tree, codes, node_budget
        As for :func:`uncertain_cep.build_index`.
    on_bad_rows, on_bad_groups
        ``"error"`` (default): fail, naming the first bad rows / groups; ``"report"``: index
        the rest and keep them, with reasons, in the ``rejected_rows`` / ``rejected_groups``
        tables of the index.
    master, spark
        Spark master URL (default local mode) or a running session (classic or Spark
        Connect; a DataFrame source brings its own).
    partitions
        Number of build tasks (default: four per task slot of the session).
    input_format
        ``"parquet"`` or ``"csv"`` for a URI or table-less path whose name does not say
        (default: a local input's file suffixes; for a URI, CSV if it ends in ``.csv``).
    columns
        The input's names for the archive's columns (keys ``event_id``, ``t_lo``,
        ``t_hi``, ``t``), as for :func:`uncertain_cep.build_index`: applied to the Spark
        DataFrame once its schema is read, and checked against that schema before any job
        runs. Messages name the input's columns.
    shard_events
        Events per shard (default :data:`~uncertain_cep.pipeline.shard_job.DEFAULT_SHARD_EVENTS`):
        a larger archive is cut by time into shards of about that many events, each
        finished by a task of its own and read side by side (exact:
        :mod:`uncertain_cep.index.shards`). Left out, an archive of fewer events is
        still cut into one shard per task slot of the session where each holds at least
        :data:`~uncertain_cep.pipeline.shard_job.MIN_SLOT_SHARD_EVENTS` events (every
        slot then finishes a shard).
    log
        Receives progress messages (default: the ``uncertain_cep`` logger).

    Notes
    -----
    The manifest's ``input_fingerprint`` identifies the input: for a local path, a
    SHA-256 over its files' names, sizes and modification times; for a DataFrame (Spark's,
    pandas' or an Arrow table), a table or a URI (whose files this process may not see),
    the SHA-256 of the index's own events table, which is what was indexed.
    """
    started = time.perf_counter()
    phases: dict[str, float] = {}
    say = log or _log.info
    reject_rows = BadInputPolicy.get_value(on_bad_rows) == "report"
    report_groups = BadInputPolicy.get_value(on_bad_groups) == "report"
    settings = BuildSettings(condition2=_condition2(max_speed, coordinates, pair_predicate),
                             multi_tree=multi_tree, codes=codes, node_budget=node_budget)
    if shard_events is not None and (isinstance(shard_events, bool)
                                     or not isinstance(shard_events, int) or shard_events < 1):
        raise InputError(f"shard_events must be a positive int, got {shard_events!r}")
    spec = resolve_input(source, input_format, columns)
    # Before Spark starts: an --out that is not an index (the input itself, say) is
    # refused at once, and nothing is ever deleted.
    if is_remote(out):
        target: Path | VersionUpload = VersionUpload.begin(str(out))
    else:
        target = index_path(out)
        check_replaceable(target)
    spark = session_for(spec, spark, master)
    what = (f"{len(spec.files)} {spec.fmt} file(s) from {spec.label}" if spec.kind == "path"
            else spec.label)
    say(f"reading {what}")
    with ExitStack() as scope:
        try:
            if has_nanos_timestamps(spec):
                # Known from the files' own schemas: Spark never tries (and fails, with
                # an ERROR and a JVM trace in the executor's log) to read them as times.
                raise NanosTimestampsError(spec.label)
            frame = read_input(spark, spec)
        except NanosTimestampsError:
            # Pandas writes datetime64[ns] as Parquet nanosecond timestamps, which Spark
            # reads only as longs, and only with a session option: set for this build
            # (which runs to its end here), then put back.
            scope.enter_context(nanos_as_long(spark))
            frame = read_input(spark, spec, nanos=True)
        spec.duration_units.update(parquet_duration_units(spec))
        try:
            summary = _build(spark, spec, frame, target, group_by=group_by,
                             time_unit=time_unit, settings=settings,
                             reject_rows=reject_rows, shard_events=shard_events,
                             report_groups=report_groups, partitions=partitions, say=say,
                             warn=log or _log.warning, started=started, phases=phases)
        except UncertainCepError:
            raise
        except Exception as e:
            if not is_spark_error(e):
                raise
            raise spark_failure(e, f"the build of {spec.label}") from e
    # The session's next job is likely a query: its plan is run once ahead, while the
    # session idles (pipeline/warm_up.py).
    start_warm_up(spark)
    return summary


def _build(spark: SparkSession, spec: InputSpec, frame: DataFrame,
           target: Path | VersionUpload, *,
           group_by: str, time_unit: float | str | None, settings: BuildSettings,
           reject_rows: bool, report_groups: bool, shard_events: int | None,
           partitions: int | None,
           say: Callable[[str], None], warn: Callable[[str], None], started: float,
           phases: dict[str, float]) -> BuildSummary:
    mark = time.perf_counter()
    frame = with_origin(frame, spec)
    frame = rename_input(frame, spec, keep=(FILE_COLUMN, ROW_COLUMN))
    frame = supported_types(frame, spec)
    numeric_text = numeric_text_columns(frame, group_by)
    probe = check_schema(frame, group_by, time_unit, spec, numeric_text)
    time_axis = zoned_time_axis(probe.time_axis, spec, has_instant_columns(frame),
                                session_zone(spark))
    # Writing to object storage, the driver's draft holds only what the index's own
    # manifest is made of (pipeline/remote_draft.py).
    upload = target if isinstance(target, VersionUpload) else None
    scope = tempfile.TemporaryDirectory(prefix="uncertain-cep-build-")
    draft = IndexDraft(target if isinstance(target, Path) else Path(scope.name) / "index")
    try:
        frame, duplicate_rows = drop_duplicates(
            frame, group_by, reject_rows, _set_aside(draft, upload), say,
            ColumnLabels(spec.columns))
        phases["read_and_check_duplicates"] = time.perf_counter() - mark
        mark = time.perf_counter()
        frame, micros = timestamps_as_micros(frame)
        cuts = plan_cuts_spark(frame, shard_events=shard_events or DEFAULT_SHARD_EVENTS,
                               time_unit=time_unit, micros=micros, nanos=spec.nanos_columns,
                               slots=task_slots(spark), fill_slots=shard_events is None)
        phases["count_and_cut"] = time.perf_counter() - mark
        mark = time.perf_counter()
        say("validating and indexing groups"
            + (f" into {len(cuts) + 1} shards" if cuts else ""))
        job = GroupJob(draft=str(draft.path), group_by=group_by, time_unit=time_unit,
                       settings=settings, reject_rows=reject_rows, micros_columns=micros,
                       numeric_text=numeric_text,
                       nanos_columns=spec.nanos_columns, renamed=spec.columns, cuts=cuts,
                       weighted=any(c in frame.columns for c in WEIGHT_COLUMNS),
                       duration_units=dict(spec.duration_units))
        n_parts = partitions or 4 * task_slots(spark)
        summary = (frame.repartition(n_parts, group_by).sortWithinPartitions(group_by)
                   .mapInPandas(_task(job, upload), _summary_schema()))
        # Materialise once: the tasks write files as they go.
        summary = summary.localCheckpoint(eager=True)
        totals = _totals(summary)
        totals["bad_rows"] += duplicate_rows
        totals["rows_total"] += duplicate_rows
        _raise_on_bad(summary, totals, reject_rows, report_groups)
        if totals["events"] == 0 and totals["rows_total"]:
            raise InputError(f"nothing to index in {spec.label}: every row or group was "
                             "rejected")
        if totals["rows_total"] == 0:
            # As uc.build_index does: an empty archive is an empty index, which answers
            # every query with no rows.
            warn(f"warning: {spec.label} has no rows; the index is empty")
            if upload:
                upload_empty(EventIndex(probe, settings), upload)
            else:
                write_index_tables(EventIndex(probe, settings), draft.path)
        phases["validate_index_write_groups"] = time.perf_counter() - mark
        mark = time.perf_counter()
        say("writing the R*-tree files and statistics")
        finish = _Finish(
            job=job, upload=upload, group_by=group_by,
            attributes=AttributeNames(probe.numeric_names, probe.categorical_names),
            settings=settings, time_axis=time_axis,
            input_fingerprint=(_fingerprint(spec.files) if spec.kind == "path" else None),
            build=BuildRecord(engine="spark", master=master_of(spark), tasks=n_parts,
                              inputs=spec.inputs),
            rejected=RejectedCounts(rows=totals["bad_rows"], groups=totals["bad_groups"]))
        shards = written_shards(summary) if cuts and totals["events"] else []
        shared = shared_extents_of(summary, probe.numeric_names)
        check_span(shared.time)
        if shards:
            manifests = finish_in_tasks(spark, shards, lambda k: finish.shard(k, shared))
            records = shard_records(shards, manifests, cuts, _shard_path)
            complete = dict(group_by=group_by, attributes=finish.attributes,
                            settings=settings, time_axis=time_axis,
                            input_fingerprint=finish.input_fingerprint, build=finish.build,
                            rejected=finish.rejected)
            if upload:
                publish_sharded(upload, draft, records, manifests, **complete)
            else:
                finish_sharded(draft, records, manifests, **complete)  # type: ignore[arg-type]
        else:
            # One directory, finished in a task all the same (the driver reads no table).
            counts = (totals["groups"], totals["trees"], totals["nodes"])
            finish_in_tasks(spark, [0], lambda _: finish.whole(counts))
            if upload:
                upload.publish()
            else:
                swap_into_place(draft.path, draft.target)
        phases["rtree_stats_manifest"] = time.perf_counter() - mark
    except BaseException:
        draft.discard()
        if upload:
            upload.discard()
        raise
    finally:
        scope.cleanup()
    return BuildSummary(path=upload.uri if upload else str(target), events=totals["events"],
                        groups=totals["groups"],
                        trees=totals["trees"], nodes=totals["nodes"], shards=len(shards) or 1,
                        rejected_rows=totals["bad_rows"], rejected_groups=totals["bad_groups"],
                        seconds=time.perf_counter() - started, phases=phases)


@dataclass(frozen=True)
class _Finish:
    """What a task needs to finish one shard, or the one directory, of a build's draft
    (shipped to executors with the function)."""

    job: GroupJob
    upload: VersionUpload | None
    group_by: str
    attributes: AttributeNames
    settings: BuildSettings
    time_axis: TimeAxis | None
    input_fingerprint: str | None
    build: BuildRecord
    rejected: RejectedCounts

    def shard(self, k: int, shared: SharedExtents) -> Manifest:
        return self._in(SHARD.format(k), lambda root: finish_directory(
            root, group_by=self.group_by, attributes=self.attributes,
            settings=self.settings, time_axis=self.time_axis, groups=None, trees=None,
            nodes=None, input_fingerprint=None, shared=shared))

    def whole(self, counts: tuple[int, int, int]) -> Manifest:
        groups, trees, nodes = counts
        return self._in("", lambda root: finish_directory(
            root, group_by=self.group_by, attributes=self.attributes,
            settings=self.settings, time_axis=self.time_axis, groups=groups, trees=trees,
            nodes=nodes, input_fingerprint=self.input_fingerprint, build=self.build,
            rejected=self.rejected))

    def _in(self, folder: str, finish: Callable[[Path], Manifest]) -> Manifest:
        """``finish`` run on ``folder`` of the draft (shared, or uploaded)."""
        if self.upload is not None:
            return finish_folder(self.upload, folder, finish)
        return finish(Path(self.job.draft) / folder)


def _shard_path(k: int) -> str:
    return SHARD.format(k)


def _condition2(max_speed: float | None, coordinates: Sequence[str],
                pair_predicate: Callable[..., bool] | None) -> PairConstraint | None:
    if max_speed is not None and pair_predicate is not None:
        raise InputError("give either max_speed or pair_predicate for Condition 2, not both")
    if max_speed is not None:
        return MaxSpeed(max_speed, tuple(coordinates))
    if pair_predicate is not None:
        return PairPredicate(pair_predicate)
    return None


# ---------------------------------------------------------------- the tasks

def _summary_schema() -> str:
    return ", ".join(f"{k} {v}" for k, v in SUMMARY_COLUMNS.items())


def _task(job: GroupJob, upload: VersionUpload | None
          ) -> Callable[[Iterator[pd.DataFrame]], Iterator[pd.DataFrame]]:
    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        partition = ctx.partitionId() if ctx else 0
        attempt = ctx.attemptNumber() if ctx else 0
        if upload is not None:
            yield build_and_upload(job, upload, partition, attempt, batches)
        else:
            yield build_partition(job, partition, attempt, batches)
    return run


def _set_aside(draft: IndexDraft, upload: VersionUpload | None
               ) -> Callable[[DataFrame], None]:
    """How rows set aside by the driver's checks (repeated ids) reach the draft."""
    if upload is not None:
        return lambda rows: upload_rejected_rows(rows, upload, "duplicates")

    def write(rows: DataFrame) -> None:
        staging = draft.staging("duplicates")
        rows.coalesce(1).write.parquet(str(staging))
        draft.adopt_rejected_rows(staging, "duplicates")
    return write


def _totals(summary: DataFrame) -> dict[str, int]:
    from pyspark.sql import functions as F

    ok = F.col("status") == "ok"
    row = summary.agg(
        F.sum(F.when(ok, F.col("events")).otherwise(0)).alias("events"),
        F.sum(F.when(ok & (F.col("events") > 0), 1).otherwise(0)).alias("groups"),
        F.sum("trees").alias("trees"), F.sum("nodes").alias("nodes"),
        F.sum("bad_rows").alias("bad_rows"),
        F.sum(F.when(F.col("status").isin("infeasible", "too_large"), 1).otherwise(0))
        .alias("bad_groups"),
        F.sum(F.col("events") + F.col("bad_rows")).alias("rows_total")).first()
    return {k: int(v or 0) for k, v in row.asDict().items()}  # type: ignore[union-attr]


def _raise_on_bad(summary: DataFrame, totals: dict[str, int], reject_rows: bool,
                  report_groups: bool) -> None:
    from pyspark.sql import functions as F

    if totals["bad_rows"] and not reject_rows:
        first = (summary.where(F.col("status") == "bad_rows").orderBy("file", "row")
                 .select("reason").limit(3).collect())
        more = totals["bad_rows"] - len(first)
        raise InputError("; ".join(r[0] for r in first)
                         + (f" (and {more} more bad rows)" if more > 0 else "")
                         + ". Fix the input, or pass --on-bad-rows report (on_bad_rows="
                         "'report') to index the rest and list them in rejected_rows/")
    if totals["bad_groups"] and not report_groups:
        first = (summary.where(F.col("status").isin("infeasible", "too_large"))
                 .orderBy("group").select("status", "reason").limit(3).collect())
        more = totals["bad_groups"] - len(first)
        message = ("; ".join(r[1] for r in first)
                   + (f" (and {more} more groups)" if more > 0 else "")
                   + ". Or pass --on-bad-groups report (on_bad_groups='report') to index "
                   "the other groups and list these in rejected_groups/")
        if first[0][0] == "too_large":
            raise IndexBuildError(message)
        raise InputError(message)


def _fingerprint(files: list[Path]) -> str:
    """SHA-256 over the input files' names, sizes and modification times."""
    h = hashlib.sha256()
    for f in files:
        st = f.stat()
        h.update(f"{f.resolve()}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()
