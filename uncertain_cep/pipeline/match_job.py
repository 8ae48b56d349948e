"""The Spark match job: a part-B temporal pattern over a table too large for one process.

PARTITION BY splits the data into independent partitions (SEMANTICS B3: a match lies
within one partition key), so the job

1. reads the input through Spark's reader (a DataFrame, a table, a path or a URI;
   :mod:`~uncertain_cep.pipeline.sources`, :mod:`~uncertain_cep.pipeline.spark_reader`)
   and runs :func:`uncertain_cep.match` on a pandas frame of zero rows of its schema
   (no Spark job): a query that cannot run on the data fails here, and the empty answer
   gives the output's columns and types (through ``pyspark.sql.pandas.types``);
2. hash-partitions the rows by the PARTITION BY columns (no PARTITION BY: one task gets
   every row) and lets every task run :func:`uncertain_cep.match` on its rows with
   ``mapInPandas``; a task holds whole partition keys, and partitions are independent,
   so the union of the tasks' answers is the answer on the whole table;
3. :func:`match_spark` returns that lazy DataFrame (nothing collected; a task's own
   error fails the action with its message); :func:`match_spark_pandas`, for notebooks
   and the command line, collects the rows and orders them as :func:`uncertain_cep.match`
   does (by the partition columns, then each symbol's ts), with a task's own error (bad
   rows, a missing column) returned as a row and raised as our message, not a JVM stack
   trace.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pandas as pd

from uncertain_cep.errors import PlanningError, UncertainCepError
from uncertain_cep.interval.api import match
from uncertain_cep.interval.language import parse_temporal_query
from uncertain_cep.interval.patterns import TemporalPattern
from uncertain_cep.pipeline.answer_forms import match_options, match_probe
from uncertain_cep.pipeline.session import task_slots
from uncertain_cep.pipeline.sources import InputSpec, resolve_input, session_for
from uncertain_cep.pipeline.spark_errors import is_spark_error, spark_failure
from uncertain_cep.pipeline.spark_reader import read_input
from uncertain_cep.pipeline.spark_types import (
    datetime_columns,
    instants_from_micros,
    spark_schema,
    timestamps_as_micros,
    utc_datetimes,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["match_spark", "match_spark_pandas"]

_log = logging.getLogger(__name__)

_ERROR = "_uc_error"


def match_spark(source: DataFrame | pd.DataFrame | Any | str | os.PathLike[str], query: str, *,
                engine: str = "join", time_column: str = "time",
                time_unit: float | str | None = None, tick: float = 1,
                symbol_column: str = "symbol", master: str | None = None,
                spark: SparkSession | None = None, partitions: int | None = None,
                input_format: str | None = None) -> DataFrame:
    """Every match of a part-B query over ``source``, as a lazy Spark DataFrame.

    Parameters
    ----------
    source
        Point events or interval events (as :func:`uncertain_cep.match` reads them): a
        ``pyspark.sql.DataFrame``, a table or view name, a local Parquet or CSV file or
        directory, any URI Spark's reader understands (``s3a://``, ``hdfs://``, ...), or
        a table of this process: a pandas DataFrame or any object with the Arrow
        PyCapsule interface (``__arrow_c_stream__``: a pyarrow Table, a polars DataFrame,
        a DuckDB relation), handed to Spark as a pyarrow Table.
    query
        Part-B query text (SEMANTICS C); parsed before Spark starts.
    engine, time_column, time_unit, tick, symbol_column
        As for :func:`uncertain_cep.match`.
    master, spark
        Spark master URL (default local mode) or a running session (classic or Spark
        Connect; a DataFrame source brings its own).
    partitions
        Number of tasks when the query has PARTITION BY (default: four per task slot).
    input_format
        ``"parquet"`` or ``"csv"`` when a path or URI does not say.

    Returns
    -------
    pyspark.sql.DataFrame
        The columns and types of :func:`uncertain_cep.match`'s answer (derived from
        matching zero rows of the input's schema, without running a job), in no
        particular order (``.orderBy`` the partition columns and ``<symbol>_ts`` for
        uc.match's order). Nothing has run yet; a task whose rows the query cannot run on
        makes the action fail with its message.

    Raises
    ------
    QueryParseError
        Malformed query text, before Spark starts.
    InputError, QueryError
        Input that is missing or unreadable, or that the query cannot run on.
    """
    frame, pattern, options, probe, micros = _prepare(source, query, engine, time_column,
                                                      time_unit, tick, symbol_column, master,
                                                      spark, input_format)
    grouped, _ = _grouped(frame, pattern, partitions)
    return grouped.mapInPandas(_task(query, options, probe, micros, detailed=False),
                               spark_schema(utc_datetimes(probe)))


def match_spark_pandas(source: DataFrame | pd.DataFrame | Any | str | os.PathLike[str],
                       query: str, *,
                       engine: str = "join", time_column: str = "time",
                       time_unit: float | str | None = None, tick: float = 1,
                       symbol_column: str = "symbol", master: str | None = None,
                       spark: SparkSession | None = None, partitions: int | None = None,
                       input_format: str | None = None,
                       log: Callable[[str], None] | None = None) -> pd.DataFrame:
    """:func:`match_spark`, collected on the driver as a pandas table: exactly
    :func:`uncertain_cep.match` of the whole input (rows, order, dtypes). For notebooks
    and the command line; ``log`` receives progress messages."""
    started = time.perf_counter()
    say = log or _log.info
    frame, pattern, options, probe, micros = _prepare(source, query, engine, time_column,
                                                      time_unit, tick, symbol_column, master,
                                                      spark, input_format)
    keys = list(pattern.partition_by)
    grouped, n_tasks = _grouped(frame, pattern, partitions)
    label = os.fspath(source) if isinstance(source, str | os.PathLike) else "the DataFrame"
    say(f"matching {label} in {n_tasks} task(s)")
    # Datetimes come back as microseconds since the epoch: a timestamp column would reach
    # the driver as wall times of the session's zone.
    schema = spark_schema(_as_micros(probe).assign(**{_ERROR: pd.Series([], dtype=object)}))
    try:
        answer = grouped.mapInPandas(_task(query, options, probe, micros, detailed=True),
                                     schema).toPandas()
    except Exception as e:
        if not is_spark_error(e):
            raise
        raise spark_failure(e, "the match job") from e
    errors = answer[_ERROR].dropna()
    if len(errors):
        raise PlanningError(f"a match task failed: {errors.iloc[0]}")
    answer = _from_micros(answer.drop(columns=_ERROR), probe).astype(probe.dtypes.to_dict())
    order = keys + [f"{name}_ts" for name in pattern.symbol_names]
    answer = answer.sort_values(order, kind="stable").reset_index(drop=True)
    say(f"{len(answer)} matches in {time.perf_counter() - started:.1f} s")
    return answer


def _prepare(source: Any, query: str, engine: str, time_column: str,
             time_unit: float | str | None, tick: float, symbol_column: str,
             master: str | None, spark: SparkSession | None, input_format: str | None
             ) -> tuple[DataFrame, TemporalPattern, dict[str, Any], pd.DataFrame,
                        tuple[str, ...]]:
    """The input read, the query parsed, and the answer's empty form (the query run on
    zero rows of the input's schema: a query that cannot run on the data fails here)."""
    pattern = parse_temporal_query(query)
    options = match_options(engine=engine, time_column=time_column, time_unit=time_unit,
                            tick=tick, symbol_column=symbol_column)
    spec = resolve_input(source, input_format)
    spark = session_for(spec, spark, master)
    # The tasks see Spark's timestamps (``micros``, the columns sent as microseconds) as
    # the instants they are: zone-aware, in UTC.
    frame, micros = timestamps_as_micros(_read(spark, spec))
    return frame, pattern, options, match_probe(frame.schema, micros, query, options), micros


def _as_micros(frame: pd.DataFrame) -> pd.DataFrame:
    """Datetime columns as int64 microseconds since the epoch (naive ones read as UTC)."""
    utc = utc_datetimes(frame)
    return frame.assign(**{c: utc[c].dt.tz_convert(None).astype("datetime64[us]")
                           .astype("int64") for c in datetime_columns(frame)})


def _from_micros(answer: pd.DataFrame, probe: pd.DataFrame) -> pd.DataFrame:
    """:func:`_as_micros` undone, in the zone (or none) of the probe's columns."""
    out = {}
    for c in datetime_columns(probe):
        stamps = pd.to_datetime(answer[c].astype("int64"), unit="us", utc=True)
        zone = probe[c].dt.tz
        out[c] = stamps.dt.tz_convert(None) if zone is None else stamps.dt.tz_convert(zone)
    return answer.assign(**out)


def _grouped(frame: DataFrame, pattern: TemporalPattern, partitions: int | None
             ) -> tuple[DataFrame, int]:
    """Rows hash-partitioned by the PARTITION BY columns, and how many tasks: a task
    holds whole keys, and keys are independent (SEMANTICS B3). Without PARTITION BY one
    task gets every row."""
    keys = list(pattern.partition_by)
    if not keys:
        return frame.repartition(1), 1
    n = partitions or 4 * task_slots(frame.sparkSession)
    return frame.repartition(n, *keys), n


def _read(spark: SparkSession, spec: InputSpec) -> DataFrame:
    from pyspark.sql import functions as F
    from pyspark.sql.types import ByteType, DecimalType, FloatType, IntegerType, ShortType

    frame = read_input(spark, spec)
    if spec.fmt != "csv":
        return frame
    # pandas reads CSV numbers as int64/float64; Spark infers int and may infer float.
    casts: dict[type, str] = {IntegerType: "bigint", ShortType: "bigint", ByteType: "bigint",
             FloatType: "double", DecimalType: "double"}
    return frame.select([F.col(f"`{f.name}`").cast(casts[type(f.dataType)]).alias(f.name)
                         if type(f.dataType) in casts else F.col(f"`{f.name}`")
                         for f in frame.schema.fields])


def _task(query: str, options: dict[str, Any], probe: pd.DataFrame, micros: tuple[str, ...],
          *, detailed: bool) -> Callable[[Iterator[pd.DataFrame]], Iterator[pd.DataFrame]]:
    """A task's matches (``detailed``: with the error column, errors as rows;
    ``micros``: columns that arrive as microseconds since the epoch)."""
    columns = list(probe.columns)

    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        parts = list(batches)
        if not sum(len(p) for p in parts):
            return
        data = instants_from_micros(pd.concat(parts, ignore_index=True), micros)
        try:
            found = match(data, query, **options)
        except UncertainCepError as e:
            if not detailed:
                raise
            # One row of nulls carrying the message (the schema is fixed).
            yield pd.DataFrame({**{c: [None] for c in columns},
                                _ERROR: [f"{type(e).__name__}: {e}"]})
            return
        if detailed:
            found = _as_micros(found)
            found[_ERROR] = None
        yield utc_datetimes(found)
    return run
