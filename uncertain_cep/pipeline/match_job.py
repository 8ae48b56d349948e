"""The Spark match job: a part-B temporal pattern over a table too large for one process.

PARTITION BY splits the data into independent partitions (SEMANTICS B3: a match lies
within one partition key), so the job

1. reads the input (a Parquet or CSV file, or a directory of them) and runs
   :func:`uncertain_cep.match` on zero rows of its schema: a query that cannot run on
   the data fails here, and the empty answer gives the output's columns and types;
2. hash-partitions the rows by the PARTITION BY columns (no PARTITION BY: one task gets
   every row) and lets every task run :func:`uncertain_cep.match` on its rows with
   ``mapInPandas``; a task holds whole partition keys, and partitions are independent,
   so the union of the tasks' answers is the answer on the whole table;
3. collects the answer rows (only they reach the driver) and orders them as
   :func:`uncertain_cep.match` does (by the partition columns, then each symbol's ts).

A task's own error (bad rows, a missing column) comes back as a message, not a JVM stack
trace, and fails the job with it.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pandas as pd

from uncertain_cep.errors import InputError, PlanningError, UncertainCepError
from uncertain_cep.interval.api import MatchEngine, match
from uncertain_cep.interval.language import parse_temporal_query
from uncertain_cep.pipeline.build_job import input_files, read_parquet_files

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["match_spark"]

_log = logging.getLogger(__name__)

_ERROR = "_uc_error"

# pandas dtype kind and size -> Spark SQL type of an answer column.
_SPARK_TYPES = {"i8": "bigint", "i4": "int", "i2": "smallint", "i1": "tinyint",
                "f8": "double", "f4": "float", "b1": "boolean", "O": "string",
                "M8": "timestamp"}


def match_spark(source: str | os.PathLike[str], query: str, *, engine: str = "join",
                time_column: str = "time", time_unit: float | str | None = None,
                tick: float = 1, symbol_column: str = "symbol", master: str | None = None,
                spark: SparkSession | None = None, partitions: int | None = None,
                log: Callable[[str], None] | None = None) -> pd.DataFrame:
    """Every match of a part-B query in the table at ``source``, computed on Spark.

    Parameters
    ----------
    source
        A Parquet or CSV file, or a directory of Parquet (or CSV) files, of point events
        or interval events (as :func:`uncertain_cep.match` reads them).
    query
        Part-B query text (SEMANTICS C); parsed before Spark starts.
    engine, time_column, time_unit, tick, symbol_column
        As for :func:`uncertain_cep.match`.
    master, spark
        Spark master URL (default local mode) or a running session.
    partitions
        Number of tasks when the query has PARTITION BY (default: four per core).
    log
        Progress messages (default: none).

    Returns
    -------
    DataFrame
        Exactly :func:`uncertain_cep.match` of the whole table (rows, order, dtypes).

    Raises
    ------
    QueryParseError
        Malformed query text, before Spark starts.
    InputError, QueryError
        Input that is missing or unreadable, or that the query cannot run on.
    """
    started = time.perf_counter()
    say = log or _log.info
    pattern = parse_temporal_query(query)
    engine = MatchEngine.get_value(engine)
    fmt, files = input_files(source)
    if spark is None:
        from uncertain_cep.pipeline.session import spark_session

        spark = spark_session(master)
    options: dict[str, Any] = {"engine": engine, "time_column": time_column,
                               "time_unit": time_unit, "tick": tick,
                               "symbol_column": symbol_column}
    frame = _read(spark, fmt, [str(f) for f in files])
    # The text, not the parsed pattern: an error about the query then points into it.
    probe = match(frame.limit(0).toPandas(), query, **options)
    schema = _schema(probe)
    keys = list(pattern.partition_by)
    n_tasks = partitions or 4 * spark.sparkContext.defaultParallelism
    grouped = frame.repartition(n_tasks, *keys) if keys else frame.repartition(1)
    say(f"matching {len(files)} {fmt} file(s) from {source} in "
        f"{n_tasks if keys else 1} task(s)")
    answer = grouped.mapInPandas(_task(query, options, probe), schema).toPandas()
    errors = answer[_ERROR].dropna()
    if len(errors):
        raise PlanningError(f"a match task failed: {errors.iloc[0]}")
    answer = answer.drop(columns=_ERROR).astype(probe.dtypes.to_dict())
    order = keys + [f"{name}_ts" for name in pattern.symbol_names]
    answer = answer.sort_values(order, kind="stable").reset_index(drop=True)
    say(f"{len(answer)} matches in {time.perf_counter() - started:.1f} s")
    return answer


def _read(spark: SparkSession, fmt: str, files: list[str]) -> DataFrame:
    from pyspark.sql import functions as F

    if fmt == "parquet":
        return read_parquet_files(spark, files)
    frame = spark.read.option("header", True).option("inferSchema", True).csv(files)
    # pandas reads CSV numbers as int64/float64; Spark infers int and may infer float.
    casts = {"IntegerType": "bigint", "ShortType": "bigint", "ByteType": "bigint",
             "FloatType": "double", "DecimalType": "double"}
    return frame.select([F.col(f"`{f.name}`").cast(casts[type(f.dataType).__name__])
                         .alias(f.name) if type(f.dataType).__name__ in casts
                         else F.col(f"`{f.name}`") for f in frame.schema.fields])


def _schema(probe: pd.DataFrame) -> str:
    """The Spark schema of the answer (plus the error column) from its empty form."""
    fields = []
    for column, dtype in probe.dtypes.items():
        code = dtype.kind + ("" if dtype.kind in "OM" else str(dtype.itemsize))
        spark_type = _SPARK_TYPES.get("M8" if code == "M" else code)
        if spark_type is None:
            raise InputError(f"answer column {column!r} has dtype {dtype}, which the Spark "
                             "match job cannot return; cast the input column to a number "
                             "or a string")
        fields.append(f"`{column}` {spark_type}")
    return ", ".join([*fields, f"`{_ERROR}` string"])


def _task(query: str, options: dict[str, Any],
          probe: pd.DataFrame) -> Callable[[Iterator[pd.DataFrame]], Iterator[pd.DataFrame]]:
    columns = list(probe.columns)

    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        parts = list(batches)
        if not sum(len(p) for p in parts):
            return
        data = pd.concat(parts, ignore_index=True)
        try:
            found = match(data, query, **options)
        except UncertainCepError as e:
            # One row of nulls carrying the message (the schema is fixed).
            yield pd.DataFrame({**{c: [None] for c in columns},
                                _ERROR: [f"{type(e).__name__}: {e}"]})
            return
        found[_ERROR] = None
        yield found
    return run
