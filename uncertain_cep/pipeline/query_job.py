"""The Spark query engine: evaluate a query over an index by time slices in executors.

The driver checks the index (format, checksums) and the query, and cuts the time domain
into slices of about equal event counts
(:func:`~uncertain_cep.pipeline.time_slices.plan_slices`). The slices are a DataFrame of
one row per slice (``spark.range`` with one partition per slice, so each slice is its
own task); ``mapInPandas`` sends each to an executor, whose Python worker opens the
index directory once (a shared filesystem on a cluster; node columns memory-mapped) and
answers for the tuples anchored in the slice. The union of the slices' rows is the
answer.

:func:`query_spark` returns that answer as a lazy DataFrame: no row reaches the driver,
and nothing runs until an action (``.write.parquet``, ``.count()``, ``.toPandas()``).
:func:`query_spark_rows` is the driver-side helper behind
``uc.query_index(..., engine="spark")`` and the command line: it runs the same tasks,
which also return their evaluation counters (pickled
:class:`~uncertain_cep.query.evaluation.stats.QueryStats`, one row per slice) and their errors as
rows, and collects everything in one job.
"""

from __future__ import annotations

import pickle
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pandas as pd

from uncertain_cep.errors import InputError, PlanningError, UncertainCepError
from uncertain_cep.files import replace_directory
from uncertain_cep.index.store.reader import IndexReader
from uncertain_cep.kernel_cache import load_in_background
from uncertain_cep.model.events import Archive
from uncertain_cep.model.time_axis import TimeAxis
from uncertain_cep.pipeline.answer_forms import (
    DRIVER_KERNELS,
    ERROR_COLUMN,
    KIND_COLUMN,
    STATS_COLUMN,
    answer_schema,
    checked_query,
    datetime_axis,
    detailed_frame,
    detailed_schema,
    first_rows,
    slice_frame,
    slice_numbers,
)
from uncertain_cep.pipeline.session import task_slots
from uncertain_cep.pipeline.spark_errors import is_spark_error, spark_failure
from uncertain_cep.pipeline.spark_types import as_utc
from uncertain_cep.pipeline.sql_functions import register_if_configured
from uncertain_cep.pipeline.time_slices import (
    TimeSlice,
    evaluate_slice,
    in_task_order,
    plan_slices,
)
from uncertain_cep.pipeline.warm_up import wait_for_warm_up
from uncertain_cep.query.evaluation.stats import QueryStats
from uncertain_cep.query.language.patterns import SequencePattern

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["CollectedAnswer", "query_spark", "query_spark_collected", "query_spark_rows",
           "write_answer_directory"]


class CollectedAnswer(NamedTuple):
    """A query's answer on Spark collected on the driver (:func:`query_spark_collected`)."""

    rows: list[tuple[tuple[Any, ...], float, int, int]]
    stats: QueryStats
    archive: Archive            # the index's columns, no rows: id type and time axis
    pattern: SequencePattern    # the query, parsed and bound once


def query_spark(index: str | Path, query: str, strategy: str = "selectivity", *,
                spark: SparkSession | None = None, master: str | None = None,
                slices: int | None = None, verify: bool = False,
                limit: int | None = None) -> DataFrame:
    """The answer of ``query`` over the index at ``index``, as a lazy Spark DataFrame.

    Parameters
    ----------
    index
        An index directory (written by :func:`uncertain_cep.build_index_spark` or
        ``UncertainIndex.save``) on a filesystem the executors share with the driver.
    query
        Query text (SEMANTICS C, part A); checked against the index here.
    strategy
        ``"selectivity"`` (default) or ``"sequential"``; the other strategies need whole
        groups in one process (``uc.open_index(path).query``).
    spark, master
        A running session (classic or Spark Connect) or a master URL for one made here.
    slices
        Number of time slices (default: two per task slot, and at least one per shard).
        Each executor process opens what its slices' spans meet (of a sharded index, those
        shards) once and answers its slices from it.
    verify
        Hash every file of the index first, as ``uc.open_index(path, verify=True)``
        (default: the files opening reads, as ``uc.open_index``).
    limit
        Only the answer's first ``limit`` rows (``LIMIT k`` in the text says the same):
        each slice keeps its own best ``k`` (pruning by its rising threshold), and
        Spark keeps the best ``k`` of those.

    Returns
    -------
    pyspark.sql.DataFrame
        Columns ``events`` (array of the archive's id type, in pattern order),
        ``confidence`` (double), ``t_first``, ``t_last`` (long instants, or timestamps
        for an archive of datetimes), sorted as
        ``UncertainIndex.query`` sorts (confidence descending, then event ids). Nothing
        has run yet; write it from the executors with ``.write.parquet(...)``. A slice
        that fails makes the action fail with the slice's message. The evaluation
        counters come with :func:`uncertain_cep.query_index` (``engine="spark"``),
        whose ``.stats`` sums them over the slices.
    """
    from pyspark.sql import functions as F

    job = _prepare(index, query, strategy, spark, master, slices, verify, limit)
    schema = answer_schema(job.archive)
    if not job.plan:
        return job.spark.createDataFrame([], schema)
    answer = slice_numbers(job.spark, len(job.plan)).mapInPandas(
        _task(job, strategy, axis=datetime_axis(job.archive)), schema)
    # In-process answers sort by confidence rounded to 12 decimals (rounding noise must
    # not reorder rows), then by event ids; arrays compare element by element as tuples.
    ordered = answer.orderBy(F.round("confidence", 12).desc(), F.col("events").asc())
    return ordered if job.pattern.limit is None else ordered.limit(job.pattern.limit)


def query_spark_rows(index: str | Path, query: str, strategy: str = "selectivity", *,
                     master: str | None = None, spark: SparkSession | None = None,
                     slices: int | None = None, verify: bool = False,
                     limit: int | None = None
                     ) -> tuple[list[tuple[tuple[Any, ...], float, int, int]], QueryStats]:
    """Answer rows and counters of ``query`` over the index, computed on Spark and
    collected on the driver (for ``uc.query_index(..., engine="spark")`` and the command
    line; :func:`query_spark` keeps them in Spark)."""
    collected = query_spark_collected(index, query, strategy, master=master, spark=spark,
                                      slices=slices, verify=verify, limit=limit)
    return collected.rows, collected.stats


def query_spark_collected(index: str | Path, query: str, strategy: str = "selectivity", *,
                          master: str | None = None, spark: SparkSession | None = None,
                          slices: int | None = None, verify: bool = False,
                          limit: int | None = None) -> CollectedAnswer:
    """:func:`query_spark_rows`, with the archive's columns (no rows) the index was
    checked by (its id type and time axis, for the driver's answer table) and the bound
    pattern. With a limit, the slices' best rows merged: the first ``limit`` of them in
    the answer's order."""
    started = time.perf_counter()
    job = _prepare(index, query, strategy, spark, master, slices, verify, limit)
    if not job.plan:
        return CollectedAnswer([], QueryStats(strategy=strategy, engine="spark", slices=0),
                               job.archive, job.pattern)
    schema = detailed_schema(answer_schema(job.archive, datetimes=False))
    # The driver's own kernels (the answer table's order) load while the executors work.
    loading = load_in_background(DRIVER_KERNELS)
    try:
        out = slice_numbers(job.spark, len(job.plan)).mapInPandas(
            _task(job, strategy, detailed=True), schema).toPandas()
    except Exception as e:
        if not is_spark_error(e):
            raise
        raise spark_failure(e, f"the query over {index}") from e
    finally:
        loading.join()
    errors = out.loc[out[KIND_COLUMN] == "error", ERROR_COLUMN]
    if len(errors):
        raise PlanningError(f"a time slice failed: {errors.iloc[0]}")
    found = out[out[KIND_COLUMN] == "row"]
    rows = [(tuple(np.asarray(ev).tolist()), float(c), int(a), int(b))
            for ev, c, a, b in zip(found["events"], found["confidence"], found["t_first"],
                                   found["t_last"])]
    if job.pattern.limit is not None:
        rows = first_rows(rows, job.pattern.limit)
    parts = [pickle.loads(bytes(b))
             for b in out.loc[out[KIND_COLUMN] == "stats", STATS_COLUMN]]
    stats = QueryStats.merged(parts, engine="spark", seconds=time.perf_counter() - started)
    return CollectedAnswer(rows, stats, job.archive, job.pattern)


def write_answer_directory(answer: DataFrame, out: str | Path) -> int:
    """Write a Spark answer (:func:`query_spark`) as a Parquet directory from the
    executors, atomically: into a draft directory beside ``out``, then swapped into place
    (``out`` must be on a filesystem this process and the executors share). An existing
    ``out`` is replaced only when it holds nothing but an earlier Spark output. Returns
    the rows written.
    """
    out = Path(out)
    if out.exists() and not _replaceable_output(out):
        raise InputError(f"{out} exists and holds files that are not a Spark answer; "
                         "choose a new directory for --out")
    out.parent.mkdir(parents=True, exist_ok=True)
    draft = Path(tempfile.mkdtemp(prefix=f".{out.name}.draft-", dir=out.parent))
    try:
        try:
            answer.write.mode("overwrite").parquet(str(draft))
        except Exception as e:
            if not is_spark_error(e):
                raise
            raise spark_failure(e, f"writing the answer to {out}") from e
        rows = answer.sparkSession.read.parquet(str(draft)).count()
        replace_directory(draft, out)
    finally:
        shutil.rmtree(draft, ignore_errors=True)
    return int(rows)


def _replaceable_output(path: Path) -> bool:
    """Whether ``path`` is an empty directory or one Spark's Parquet writer finished (its
    ``_SUCCESS`` marker, Parquet files and their checksums): what replacing it may
    delete."""
    if not path.is_dir():
        return False
    files = list(path.iterdir())
    return not files or ((path / "_SUCCESS").is_file() and all(
        f.is_file() and (f.name.endswith((".parquet", ".crc")) or f.name == "_SUCCESS")
        for f in files))


class _Job(NamedTuple):
    """A query checked and cut into slices, and the session it runs in."""

    spark: SparkSession
    reader: IndexReader         # the index's directory and manifest (executors open it)
    archive: Archive            # its columns, no rows
    pattern: SequencePattern    # bound: the window in instants
    plan: list[TimeSlice]


def _prepare(index: str | Path, query: str, strategy: str, spark: SparkSession | None,
             master: str | None, slices: int | None, verify: bool,
             limit: int | None = None) -> _Job:
    """The session, the checked index, its archive's columns (no rows), the bound
    pattern (``limit``: its LIMIT) and the slices."""
    # Checked and parsed once here; executors get the reader and the bound pattern.
    reader, archive, pattern = checked_query(index, query, strategy, verify, limit)
    if spark is None:
        from uncertain_cep.pipeline.session import spark_session

        spark = spark_session(master)
    else:
        register_if_configured(spark)
    # A warm-up of this plan still running on the session (pipeline/warm_up.py) ends
    # first: the two would compete for the same task slots.
    wait_for_warm_up(spark)
    plan = plan_slices(reader, pattern.window, slices or _default_slices(reader, spark))
    # Seams after the slices whose shards' working copies they read (one task each).
    plan = in_task_order(plan, reader, lag=task_slots(spark))
    return _Job(spark, reader, archive, pattern, plan)


def _default_slices(reader: IndexReader, spark: SparkSession) -> int:
    """Two slices per task slot (they even out the slots' loads), and at least one slice
    per shard of a sharded index: slices of about equal events then follow the shards
    (cut by equal events too), and each task opens about one shard and the neighbours its
    halo reaches, not a growing share of the index."""
    return max(2 * task_slots(spark), len(reader.manifest.shards))


def _task(job: _Job, strategy: str, *,
          detailed: bool = False, axis: TimeAxis | None = None
          ) -> Callable[[Iterator[pd.DataFrame]], Iterator[pd.DataFrame]]:
    """What a task does with its slice numbers: answer rows (``detailed``: also one row
    of counters per slice, and errors as rows instead of exceptions; ``axis``: a
    datetime axis to answer instants as timestamps on)."""

    # What the closure ships to the executors: not the session.
    reader, plan, pattern = job.reader, job.plan, job.pattern

    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for batch in batches:
            for i in batch["id"].tolist():
                try:
                    rows, stats = evaluate_slice(reader, plan[i], pattern, strategy)
                except UncertainCepError as e:
                    if not detailed:
                        raise PlanningError(f"time slice {i} failed: {type(e).__name__}: "
                                            f"{e}") from e
                    # Surface our own message, not a JVM stack trace.
                    error = f"{type(e).__name__}: {e}"
                    yield detailed_frame(pd.DataFrame({KIND_COLUMN: ["error"],
                                                       ERROR_COLUMN: [error]}))
                    continue
                frame = slice_frame(rows)
                if axis is not None:
                    frame["t_first"] = _instants(axis, frame["t_first"])
                    frame["t_last"] = _instants(axis, frame["t_last"])
                if detailed:
                    frame.insert(0, KIND_COLUMN, "row")
                    yield detailed_frame(frame)
                    frame = detailed_frame(pd.DataFrame({KIND_COLUMN: ["stats"],
                                                         STATS_COLUMN: [pickle.dumps(stats)]}))
                yield frame
    return run


def _instants(axis: TimeAxis, instants: pd.Series) -> pd.Series:
    """Instants as zone-aware UTC datetimes: Arrow reads naive datetimes coming back
    from a task as wall times of the session's zone, which would shift every answer by
    the zone's offset; an aware one is the same instant in any session."""
    return as_utc(axis.datetimes(instants.to_numpy()))
