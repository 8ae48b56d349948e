"""What the Spark engines answer with: the columns and forms every path shares.

``uc.query_spark``, ``uc.query_index(..., engine="spark")`` and SQL's ``uc_query`` check
an index and a query the same way (:func:`checked_query`) and answer in one schema
(:func:`answer_schema`); ``uc.match_spark`` and SQL's ``uc_match`` derive theirs by
matching zero rows of the input's schema (:func:`match_probe`). Nothing here starts or
needs a session.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from uncertain_cep.errors import PlanningError
from uncertain_cep.files import index_location
from uncertain_cep.index.store.reader import IndexReader, open_reader
from uncertain_cep.interval.api import MatchEngine, match
from uncertain_cep.model.events import Archive
from uncertain_cep.model.time_axis import TimeAxis
from uncertain_cep.pipeline.spark_types import empty_frame
from uncertain_cep.pipeline.time_slices import SLICE_STRATEGIES
from uncertain_cep.query.evaluation.answer import significant
from uncertain_cep.query.language.parse import bind_query
from uncertain_cep.query.language.patterns import SequencePattern, with_limit
from uncertain_cep.query.language.symbols import check_symbols

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = ["ANSWER_COLUMNS", "DRIVER_KERNELS", "ERROR_COLUMN", "KIND_COLUMN", "STATS_COLUMN",
           "answer_schema", "answer_struct", "checked_query", "datetime_axis",
           "detailed_frame", "detailed_schema", "first_rows", "match_options",
           "match_probe", "slice_frame", "slice_numbers"]

ANSWER_COLUMNS = ("events", "confidence", "t_first", "t_last")
# The modules whose kernels the driver-side helper runs on the collected rows (the
# answer's order).
DRIVER_KERNELS = ("uncertain_cep.query.evaluation.answer",)
# The driver-side helper's extra columns (``query_spark_collected``): what a row is
# ("row", "stats" or "error"), a slice's counters (pickled), its error.
KIND_COLUMN, STATS_COLUMN, ERROR_COLUMN = "_uc_kind", "_uc_stats", "_uc_error"


# ---------------------------------------------------------------- part A

def checked_query(index: str | Path, query: str, strategy: str, verify: bool = False,
                  limit: int | None = None
                  ) -> tuple[IndexReader, Archive, SequencePattern]:
    """The index checked (format, checksums), its archive's columns (no rows), and the
    query checked against them, with its window in instants (``WITHIN 6s`` on an index of
    seconds is 6: the slices' halo) and ``limit`` (its ``LIMIT``, if given)."""
    if strategy not in SLICE_STRATEGIES:
        raise PlanningError(f"strategy {strategy!r} needs the whole index in one process; "
                            "use --engine local, or with the Spark engine one of: "
                            f"{', '.join(map(repr, SLICE_STRATEGIES))}")
    location = index_location(os.fspath(index))
    reader = open_reader(location.resolve() if isinstance(location, Path) else location,
                         verify_all=verify)
    archive = reader.empty_archive()
    pattern = with_limit(bind_query(query, archive.time_axis), limit)
    check_symbols(archive, pattern)
    return reader, archive, pattern


def answer_schema(archive: Archive, *, datetimes: bool = True) -> StructType:
    """The columns of a part-A answer on Spark (``query_spark``, ``uc_query``)."""
    from pyspark.sql.types import DoubleType, LongType, StringType, TimestampType

    kind = archive.event_ids.dtype.kind
    if archive.event_ids.dtype == np.uint64:
        # Spark's integers are signed 64-bit: these ids would wrap into negative numbers.
        raise PlanningError("the index's event ids go past 2**63 - 1 (uint64), which Spark "
                            "cannot hold; query it with engine='local' (uc.open_index), or "
                            "rebuild it with ids within the int64 range or as strings")
    ids = LongType() if kind in "iu" else DoubleType() if kind == "f" else StringType()
    # Instants of an archive of datetimes are answered as timestamps, as in process
    # (``datetimes=False``: as instants, for the driver-side helper to convert).
    times = (TimestampType() if datetimes and datetime_axis(archive) is not None
             else LongType())
    return answer_struct(ids, times)


def answer_struct(ids: Any = None, times: Any = None) -> StructType:
    """The answer's columns with events of the Spark type ``ids`` and instants of
    ``times`` (default both ``LongType``: integer ids, instants)."""
    from pyspark.sql.types import ArrayType, DoubleType, LongType, StructField, StructType

    ids = LongType() if ids is None else ids
    times = LongType() if times is None else times
    return StructType([StructField("events", ArrayType(ids, False), False),
                       StructField("confidence", DoubleType(), False),
                       StructField("t_first", times, False),
                       StructField("t_last", times, False)])


def datetime_axis(archive: Archive) -> TimeAxis | None:
    """The archive's time axis when its times are datetimes (else None)."""
    axis = archive.time_axis
    return axis if axis is not None and axis.is_datetime else None


def slice_frame(rows: list[tuple[tuple[Any, ...], float, int, int]]) -> pd.DataFrame:
    """A slice's rows as the answer's columns; confidences rounded as the in-process
    answer rounds them (:func:`~uncertain_cep.query.evaluation.answer.significant`)."""
    return pd.DataFrame({
        "events": pd.Series([list(r[0]) for r in rows], dtype=object),
        "confidence": significant(np.array([r[1] for r in rows], dtype=np.float64), 15),
        "t_first": np.array([r[2] for r in rows], dtype=np.int64),
        "t_last": np.array([r[3] for r in rows], dtype=np.int64)})


def slice_numbers(spark: SparkSession, n: int) -> DataFrame:
    """One row per slice (its number, column ``id``), each in its own partition: one task
    per slice."""
    return spark.range(0, n, 1, n)


def detailed_schema(answer: StructType) -> StructType:
    """The answer's columns, nullable, between the row's kind and its slice's counters
    and error: what the driver-side helper collects."""
    from pyspark.sql.types import BinaryType, StringType, StructField, StructType

    fields = [StructField(f.name, f.dataType, True) for f in answer.fields]
    return StructType([StructField(KIND_COLUMN, StringType(), False), *fields,
                       StructField(STATS_COLUMN, BinaryType(), True),
                       StructField(ERROR_COLUMN, StringType(), True)])


def detailed_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Every column of :func:`detailed_schema`, in its order (nulls where a row has
    none)."""
    names = [KIND_COLUMN, *ANSWER_COLUMNS, STATS_COLUMN, ERROR_COLUMN]
    return frame.assign(**{c: pd.Series([None] * len(frame), dtype=object)
                           for c in names if c not in frame.columns})[names]


def first_rows(rows: list[tuple[tuple[Any, ...], float, int, int]], k: int
                ) -> list[tuple[tuple[Any, ...], float, int, int]]:
    """The first ``k`` rows in the answer's order (confidence rounded as the answer
    table rounds it, descending, then event ids): the best of the slices' best."""
    confidence = np.round(significant(np.array([r[1] for r in rows], dtype=np.float64)), 12)
    order = sorted(range(len(rows)), key=lambda i: (-confidence[i], rows[i][0]))
    return [rows[i] for i in order[:k]]


# ---------------------------------------------------------------- part B

def match_options(**options: Any) -> dict[str, Any]:
    """The keyword arguments of :func:`uncertain_cep.match` a task passes on, the engine
    checked (the rest are checked by the probe)."""
    return {**options, "engine": MatchEngine.get_value(options["engine"])}


def match_probe(schema: StructType, micros: tuple[str, ...], query: str,
                options: dict[str, Any]) -> pd.DataFrame:
    """The answer's empty form: ``query`` matched on zero rows of ``schema`` (whose
    ``micros`` columns hold timestamps as microseconds), so that a query that cannot run
    on the data fails before any task runs."""
    empty = empty_frame(schema).astype({c: "datetime64[ns, UTC]" for c in micros})
    # The text, not the parsed pattern: an error about the query then points into it.
    return match(empty, query, **options)
