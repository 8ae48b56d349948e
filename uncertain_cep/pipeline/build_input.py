"""The Spark build's input made ready on the driver, before any task runs.

Steps 1 and 2 of :mod:`~uncertain_cep.pipeline.build_job`, after Spark has read the input
(:mod:`~uncertain_cep.pipeline.spark_reader`):

* every row learns where it comes from (its file and row, for the reasons of bad rows:
  :func:`with_origin`);
* decimals and dates with exact counterparts are cast, other types refused naming the
  column (:func:`supported_types`);
* the string columns that are numeric are decided over the whole input
  (:func:`numeric_text_columns`), and the in-process reader checks the schema on zero
  rows of it (:func:`check_schema`);
* the archive's time axis gets the zone its datetimes are answered in
  (:func:`zoned_time_axis`);
* repeated event ids fail the build, or their rows are set aside
  (:func:`drop_duplicates`).

The driver never collects rows of the archive: only schemas, counts and duplicate ids.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from uncertain_cep.errors import InputError
from uncertain_cep.index.store.layout import REJECTED_ROW_COLUMNS
from uncertain_cep.input_tables import ColumnLabels, arrow_to_pandas
from uncertain_cep.model.events import read_archive
from uncertain_cep.model.time_axis import TimeAxis, timezone_name
from uncertain_cep.pipeline.group_builder import FILE_COLUMN, ROW_COLUMN
from uncertain_cep.pipeline.sources import InputSpec
from uncertain_cep.pipeline.spark_errors import is_spark_error
from uncertain_cep.pipeline.spark_types import empty_frame

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["check_schema", "drop_duplicates", "has_instant_columns", "numeric_text_columns",
           "session_zone", "supported_types", "with_origin", "zoned_time_axis"]


class _NoFiles(Exception):
    """The input reads no files (an in-memory DataFrame or view)."""


def with_origin(frame: DataFrame, spec: InputSpec) -> DataFrame:
    """The input's rows with where each comes from, for the reasons of bad rows: the
    file and row index where Spark knows them (files, file-backed tables and DataFrames),
    else the input's name."""
    from pyspark.sql import functions as F

    label = F.lit(spec.label)
    row = (F.col("_metadata.row_index") if spec.fmt == "parquet"
           else F.lit(None).cast("bigint"))
    try:
        # A frame that reads no files has no _metadata column: asking for it would log
        # Spark's analysis error (an ERROR line with a JVM trace) before failing.
        if not frame.inputFiles():
            raise _NoFiles
        with_files = frame.select("*", F.col("_metadata.file_name").alias(FILE_COLUMN),
                                  row.alias(ROW_COLUMN))
        with_files.schema  # noqa: B018 -- resolve now (lazy on Spark Connect)
        return _csv_row_numbers(frame) if spec.fmt == "csv" else with_files
    except Exception as e:
        if not isinstance(e, _NoFiles) and not is_spark_error(e):
            raise
        # An in-memory DataFrame or view: rows have no file; CSV-like, no row index.
        return frame.select("*", label.alias(FILE_COLUMN),
                            F.lit(None).cast("bigint").alias(ROW_COLUMN))


def _csv_row_numbers(frame: DataFrame) -> DataFrame:
    """CSV rows with their file and row number (0-based, after the header, as Parquet's
    ``row_index``), which Spark's CSV reader does not give.

    A file is read in blocks, each in order within its task: a row's number is the rows
    of its file's earlier blocks plus its place in its block, told by
    ``monotonically_increasing_id`` (increasing within a task). One small aggregate over
    the blocks (a row per block) gives the blocks' first numbers."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    path, block, seq = "_uc_path", "_uc_block", "_uc_seq"
    marked = frame.select("*", F.col("_metadata.file_name").alias(FILE_COLUMN),
                          F.col("_metadata.file_path").alias(path),
                          F.col("_metadata.file_block_start").alias(block),
                          F.monotonically_increasing_id().alias(seq))
    earlier = Window.partitionBy(path).orderBy(block)
    blocks = (marked.groupBy(path, block)
              .agg(F.count("*").alias("_uc_n"), F.min(seq).alias("_uc_first"))
              .withColumn("_uc_before", F.sum("_uc_n").over(earlier) - F.col("_uc_n")))
    number = F.col(seq) - F.col("_uc_first") + F.col("_uc_before")
    return (marked.join(F.broadcast(blocks), [path, block])
            .select(*(F.col(f"`{c}`") for c in frame.columns), F.col(FILE_COLUMN),
                    number.cast("bigint").alias(ROW_COLUMN)))


def zoned_time_axis(probe: TimeAxis | None, spec: InputSpec, instant_columns: bool,
               session_zone: str | None) -> TimeAxis | None:
    """The archive's time axis as the in-process reader records it, with the zone its
    datetimes are answered in.

    Spark's timestamps are instants without a zone of their own (their values never
    depend on the session's zone: the tasks receive them as microseconds since the
    epoch). The zone answers are shown in is the input's where the input records one:
    the Parquet files' own schemas (local files, or ``file:`` URIs), which must agree.
    CSV holds no zone, so its datetimes are naive (read as UTC, whatever the session's
    zone). Inputs without files this process can read (a DataFrame, a table, another
    URI) answer in the session's zone (``spark.sql.session.timeZone``), the zone Spark
    itself shows their timestamps in; ``timestamp_ntz`` columns stay naive. A table of
    this process (pandas, Arrow) records its zone as the files do.
    """
    if probe is None or not probe.is_datetime or spec.fmt == "csv":
        return probe
    if (spec.fmt == "parquet" and spec.files) or spec.kind == "memory":
        zones: dict[str | None, str] = {}
        for dtype, name, where in _time_column_dtypes(spec):
            if dtype is not None and pd.api.types.is_datetime64_any_dtype(dtype):
                zones.setdefault(timezone_name(dtype, name), f"column {name!r} of {where}")
        if len(zones) > 1:
            shown = "; ".join(f"{where} is {zone or 'naive'}"
                              for zone, where in zones.items())
            raise InputError(f"the time columns must be datetimes in one time zone (or all "
                             f"naive), since answers are given in it: {shown}; rewrite the "
                             "files with one zone")
        return dataclasses.replace(probe, timezone=next(iter(zones), None))
    return dataclasses.replace(probe, timezone=session_zone if instant_columns else None)


def _time_column_dtypes(spec: InputSpec) -> Iterator[tuple[Any, str, str]]:
    """``(pandas dtype or None, the input's column name, where)`` of each time column of
    each file of a Parquet input, or of a table of this process (its schema, no rows)."""
    names = [spec.source_name(n) for n in ("t_lo", "t_hi", "t")]
    if spec.kind == "memory":
        empty = arrow_to_pandas(spec.value.schema.empty_table())
        for name in names:
            yield (empty[name].dtype if name in empty.columns else None), name, spec.label
        return
    for f in spec.files:
        for name in names:
            yield _parquet_dtype(f, name), name, str(f)


def has_instant_columns(frame: DataFrame) -> bool:
    """Whether the archive's time columns are Spark timestamps (instants), not
    ``timestamp_ntz`` wall times."""
    from pyspark.sql.types import TimestampType

    return any(isinstance(f.dataType, TimestampType) for f in frame.schema.fields
               if f.name in ("t_lo", "t_hi", "t"))


def session_zone(spark: SparkSession) -> str | None:
    """The session's time zone (Spark's default is the JVM's own zone)."""
    zone = spark.conf.get("spark.sql.session.timeZone", None)
    return zone or None


def _parquet_dtype(path: Path, column: str) -> Any:
    """The pandas dtype of a Parquet file's column (None if it has none), from its schema:
    a filter no row passes reads no values (pandas, as the archive's readers do)."""
    try:
        return pd.read_parquet(path, columns=[column],
                               filters=[(column, "in", [])])[column].dtype
    except (KeyError, ValueError):
        return None


# Spark types whose values pandas and the in-process reader take as they are.
_PLAIN_TYPES = {"byte", "short", "integer", "long", "float", "double", "boolean", "string",
                "timestamp", "timestamp_ntz"}
_NUMBER_TYPES = {"byte", "short", "integer", "long", "float", "double", "decimal"}


def supported_types(frame: DataFrame, spec: InputSpec) -> DataFrame:
    """Cast what has an exact counterpart, refuse the rest naming the column.

    Decimals: whole numbers of up to 18 digits become longs and decimals of up to 15
    significant digits doubles (every such value is the double nearest to it and prints
    back unchanged, as a CSV number would); wider ones are refused with the cast to make.
    Dates become timestamps without time zone (midnight), as pandas reads them.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, DateType, DayTimeIntervalType, DecimalType

    casts = {}
    for fld in frame.schema.fields:
        if fld.name in (FILE_COLUMN, ROW_COLUMN):
            continue
        kind = fld.dataType
        if isinstance(kind, DecimalType):
            if kind.scale == 0 and kind.precision <= 18:
                casts[fld.name] = F.col(f"`{fld.name}`").cast("bigint")
            elif kind.precision <= 15:
                casts[fld.name] = F.col(f"`{fld.name}`").cast("double")
            else:
                raise InputError(
                    f"column {fld.name!r} of {spec.label} is {kind.simpleString()}, wider "
                    "than a double holds exactly; cast it before building, e.g. "
                    f"df.withColumn({fld.name!r}, F.col({fld.name!r}).cast('double')) (or "
                    "'bigint' for whole numbers)")
        elif isinstance(kind, DateType):
            casts[fld.name] = F.col(f"`{fld.name}`").cast("timestamp_ntz")
        elif fld.name == "t_weights" and isinstance(kind, ArrayType):
            # Instant weights (SEMANTICS A6), a list per event: read as doubles (the
            # reader checks every value in the tasks).
            if kind.elementType.typeName() not in _NUMBER_TYPES:
                raise InputError(f"column {fld.name!r} of {spec.label} is "
                                 f"{kind.simpleString()}; instant weights (SEMANTICS A6) "
                                 "are lists of numbers")
            casts[fld.name] = F.col(f"`{fld.name}`").cast("array<double>")
        elif fld.name == "t_sigma" and isinstance(kind, DayTimeIntervalType):
            # A duration (SEMANTICS A6 with datetime t_mu): microseconds, exactly (a
            # day-time interval is a count of microseconds added to an instant).
            casts[fld.name] = F.unix_micros(F.timestamp_micros(F.lit(0)) + F.col("`t_sigma`"))
            spec.duration_units["t_sigma"] = "us"
        elif kind.typeName() not in _PLAIN_TYPES:
            raise InputError(f"column {fld.name!r} of {spec.label} has Spark type "
                             f"{kind.simpleString()}; archive columns must be numbers, "
                             "strings or timestamps")
    return frame.withColumns(casts) if casts else frame


def numeric_text_columns(frame: DataFrame, group_by: str) -> tuple[str, ...]:
    """The string attribute columns that are numeric, decided over the whole input by
    the rule of :mod:`uncertain_cep.model.number_columns` (more than half of the
    non-empty values are numbers, not all): each task sees only its groups' rows, and
    must read such a column as numbers (its other values bad rows) even where its rows
    happen to be all numbers or all words."""
    from pyspark.sql import functions as F

    skip = {"event_id", group_by, "t_lo", "t_hi", "t", FILE_COLUMN, ROW_COLUMN}
    names = [f.name for f in frame.schema.fields
             if f.dataType.typeName() == "string" and f.name not in skip]
    if not names:
        return ()
    counts = []
    for name in names:
        value = F.col(f"`{name}`")
        present = F.trim(value) != ""
        # try_cast: a word is null, not an error, under ANSI mode too.
        number = F.expr(f"try_cast(`{name}` AS double)").isNotNull()
        counts += [F.count(F.when(present, 1)), F.count(F.when(present & number, 1))]
    row = frame.agg(*counts).first()
    assert row is not None
    return tuple(name for k, name in enumerate(names)
                 if 2 * row[2 * k + 1] > row[2 * k] > row[2 * k + 1])


def check_schema(frame: DataFrame, group_by: str, time_unit: float | str | None,
                  spec: InputSpec, numeric_text: tuple[str, ...]) -> Any:
    """Run the in-process reader on an empty frame of the input's types (as the tasks
    will see them): missing or mistyped columns fail here, before the job starts."""
    probe = empty_frame(frame.drop(FILE_COLUMN, ROW_COLUMN).schema)
    for name in spec.nanos_columns:
        probe[name] = probe[name].astype("datetime64[ns]")
    for name in spec.duration_units:
        if name in probe.columns:
            probe[name] = probe[name].astype("timedelta64[ns]")
    return read_archive(probe, group_by=group_by, time_unit=time_unit,
                        numeric_text=numeric_text, renamed=spec.columns, weighted=True)


def drop_duplicates(frame: DataFrame, group_by: str, reject: bool,
                     set_aside: Callable[[DataFrame], None],
                     say: Callable[[str], None], labels: ColumnLabels
                     ) -> tuple[DataFrame, int]:
    """Fail on repeated event ids, or set their rows aside (``set_aside`` writes them,
    as columns of the rejected-rows table, into the draft); returns the rest and how
    many rows were set aside."""
    from pyspark.sql import functions as F

    dups = (frame.where(F.col("event_id").isNotNull()).groupBy("event_id")
            .agg(F.count("*").alias("n")).where("n > 1"))
    counted = dups.agg(F.count("*"), F.sum("n")).first()
    n_dups, n_rows = int(counted[0]), int(counted[1] or 0)  # type: ignore[index]
    if n_dups == 0:
        return frame, 0
    if not reject:
        eid, n = dups.orderBy("event_id").first()  # type: ignore[misc]
        where = frame.where(F.col("event_id") == eid).select(FILE_COLUMN, ROW_COLUMN).limit(5)
        places = ", ".join(f"row {r[1]} of {r[0]}" if r[1] is not None else f"in {r[0]}"
                           for r in where.collect())
        raise InputError(f"{labels.plain('event_id')} {eid!r} appears {n} times ({places}); "
                         f"event ids must be unique in the archive ({n_dups} ids are "
                         "repeated). Fix the input, "
                         "or pass --on-bad-rows report to set them aside")
    say(f"setting aside the rows of {n_dups} repeated event ids")
    bad = frame.join(dups, "event_id")
    # The rejected-rows table's columns, in its order: event id, group, file, row, reason.
    values = (F.col("event_id").cast("string"), F.col(group_by).cast("string"),
              F.col(FILE_COLUMN), F.col(ROW_COLUMN),
              F.concat(F.lit("event_id "), F.col("event_id").cast("string"),
                       F.lit(" appears "), F.col("n").cast("string"),
                       F.lit(" times; event ids must be unique")))
    set_aside(bad.select(*(v.alias(name) for v, name in zip(values, REJECTED_ROW_COLUMNS))))
    return frame.join(dups, "event_id", "left_anti"), n_rows

