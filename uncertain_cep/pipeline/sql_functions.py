"""Spark SQL's way in: the table functions ``uc_query`` and ``uc_match``.

After :func:`register` (or in a session whose configuration sets
``spark.uncertain_cep.sql.functions`` to ``true``, see :func:`register_if_configured`),
SQL reaches both engines::

    SELECT * FROM uc_query('path/to/index', 'PATTERN SEQ(A, B) DEFINE ... WITHIN 6')
    SELECT * FROM uc_match(TABLE(events), 'PARTITION BY car DEFINE ... PATTERN A meets B')
    SELECT * FROM uc_query('ix', 'PATTERN ...', strategy => 'sequential')
    SELECT * FROM uc_match(TABLE(SELECT * FROM cars WHERE day = 3), 'PARTITION BY car ...',
                           tick => '1s')

They are Spark 4 Python table functions (UDTFs) whose ``analyze`` step
gives each call its columns from its arguments, so they answer the rows and types of
:func:`~uncertain_cep.pipeline.query_job.query_spark` and
:func:`~uncertain_cep.pipeline.match_job.match_spark`, on classic Spark and on Spark
Connect. Their arguments are as for those functions: ``uc_query(index, query [, strategy
=> ..., verify => ...])`` and ``uc_match(TABLE(...), query [, engine => ...,
time_column => ..., time_unit => ..., tick => ..., symbol_column => ...])``; the index path
and the query text must be constants.

Where the work runs differs from the Python jobs:

* ``uc_query`` answers in one Python worker (the index opened and memory-mapped there,
  the engine's compiled kernels on that executor's threads), since a table function with
  no table argument is one task; ``uc.query_spark`` spreads a query over time slices.
  Rows come in the answer's order (confidence descending, then event ids).
* ``uc_match`` asks Spark to partition its table argument by a hash of the query's
  PARTITION BY columns (one partition without PARTITION BY), so buckets of whole keys are
  matched in parallel, as ``uc.match_spark`` matches them. Its rows reach the function
  one at a time (that is how a UDTF takes a table), which makes it slower than
  ``uc.match_spark`` on large tables. Timestamps are handed over as microseconds since
  the epoch, computed in Spark, so no session or worker time zone shifts an instant.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from uncertain_cep.errors import InputError, ParamEnum
from uncertain_cep.interval.api import match
from uncertain_cep.interval.language import parse_temporal_query
from uncertain_cep.pipeline.answer_forms import (
    answer_schema,
    checked_query,
    datetime_axis,
    match_options,
    match_probe,
    slice_frame,
)
from uncertain_cep.pipeline.spark_types import (
    as_utc,
    instants_from_micros,
    spark_schema,
    task_frame,
    utc_datetimes,
)
from uncertain_cep.pipeline.time_slices import evaluate_slice, plan_slices

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

try:  # the classes Spark hands to and expects from a table function's analyze step
    from pyspark.sql.udtf import (
        AnalyzeArgument,
        AnalyzeResult,
        PartitioningColumn,
        SelectedColumn,
    )
except ImportError:  # without the spark extra: nothing here runs, but the module imports
    AnalyzeArgument = Any  # type: ignore[misc,assignment]

    @dataclass
    class AnalyzeResult:  # type: ignore[no-redef]
        schema: Any

__all__ = ["CONFIG_KEY", "MatchFunction", "QueryFunction", "SqlFunction", "register",
           "register_if_configured"]

# The session setting that has uncertain-cep register its SQL functions in a session it
# is handed (its own sessions set it).
CONFIG_KEY = "spark.uncertain_cep.sql.functions"
# uc_match partitions its table by a hash of the PARTITION BY columns into this many
# buckets: each bucket is one instance of the function (one uc.match call on whole keys),
# and the buckets spread over the shuffle's tasks.
_BUCKETS = 256


class SqlFunction(ParamEnum):
    """The SQL table functions :func:`register` adds."""

    uc_query = "uc_query"
    uc_match = "uc_match"


_QUERY_OPTIONS = {"strategy": "selectivity", "verify": False}
_MATCH_OPTIONS = {"engine": "join", "time_column": "time", "time_unit": None, "tick": 1,
                  "symbol_column": "symbol"}


def register(spark: SparkSession) -> SparkSession:
    """Register ``uc_query`` and ``uc_match`` in ``spark`` (classic or Spark Connect) and
    return it.

    The executors' Python must import uncertain-cep, as for every Spark job of the
    project (``PYSPARK_PYTHON``).
    """
    from pyspark.sql.functions import udtf
    from pyspark.sql.udtf import UserDefinedTableFunction

    for name, cls in ((SqlFunction.uc_query, QueryFunction),
                      (SqlFunction.uc_match, MatchFunction)):
        # Rows pickled, not Arrow-optimised: Spark 4's Arrow path hands a table
        # argument's rows over one by one all the same, and took 3.5 times as long
        # (docs/benchmarks.md, "Spark SQL's table functions"). udtf(cls) is the function
        # itself (its other overload is the decorator's).
        spark.udtf.register(name.value, cast(UserDefinedTableFunction,
                                             udtf(cls, useArrow=False)))
    return spark


def register_if_configured(spark: SparkSession) -> None:
    """Register the SQL functions when the session's configuration sets
    :data:`CONFIG_KEY` to ``true``: the sessions uncertain-cep makes do, and a session
    of the user's that sets it gets them when uncertain-cep is first handed it (a job's
    ``spark=``, a DataFrame source, ``uc.register``)."""
    if str(spark.conf.get(CONFIG_KEY, "false")).strip().lower() == "true":
        register(spark)


# ---------------------------------------------------------------- uc_query

class QueryFunction:
    """``uc_query(index, query [, strategy => ..., verify => ...])``: the answer of a
    part-A query over a saved index, as :func:`uncertain_cep.query_spark` answers it."""

    @staticmethod
    def analyze(index: AnalyzeArgument, query: AnalyzeArgument,
                **options: AnalyzeArgument) -> AnalyzeResult:
        path = _constant(index, "uc_query", 1, "the index path")
        text = _constant(query, "uc_query", 2, "the query text")
        chosen = _options("uc_query", {k: v.value for k, v in options.items()},
                          _QUERY_OPTIONS)
        _, archive, _ = checked_query(path, text, chosen["strategy"], chosen["verify"])
        return AnalyzeResult(schema=answer_schema(archive))

    def eval(self, index: str, query: str, **options: Any) -> Iterator[tuple[Any, ...]]:
        chosen = _options("uc_query", options, _QUERY_OPTIONS)
        reader, archive, pattern = checked_query(index, query, chosen["strategy"],
                                                 chosen["verify"])
        rows: list[tuple[tuple[Any, ...], float, int, int]] = []
        # One slice over the whole time domain: this task is the query's only one.
        for piece in plan_slices(reader, pattern.window, 1):
            found, _ = evaluate_slice(reader, piece, pattern, chosen["strategy"])
            rows.extend(found)
        frame = _answer_order(slice_frame(rows))
        axis = datetime_axis(archive)
        times = [frame["t_first"], frame["t_last"]]
        if axis is not None:
            # Zone-aware UTC: a naive datetime would be read in the worker's zone.
            times = [as_utc(axis.datetimes(t.to_numpy())) for t in times]
        yield from zip(frame["events"], frame["confidence"].tolist(),
                       times[0].tolist(), times[1].tolist())


def _answer_order(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows as ``query_spark`` orders them: confidence (rounded to 12 decimals, so that
    rounding noise does not reorder) descending, then the event ids."""
    confidence = np.round(frame["confidence"].to_numpy(), 12)
    events = frame["events"].tolist()
    order = sorted(range(len(frame)), key=lambda i: (-confidence[i], events[i]))
    return frame.iloc[order].reset_index(drop=True)


# ---------------------------------------------------------------- uc_match

@dataclass
class _MatchAnalysis(AnalyzeResult):
    """What analyze tells every instance of ``uc_match``: the columns it receives and
    which of them hold timestamps as microseconds since the epoch."""

    arrow_schema: Any = None
    micros: tuple[str, ...] = ()


class MatchFunction:
    """``uc_match(TABLE(...), query [, engine => ..., time_column => ..., ...])``: every
    match of a part-B query over the table, as :func:`uncertain_cep.match_spark` finds
    them."""

    @staticmethod
    def analyze(events: AnalyzeArgument, query: AnalyzeArgument,
                **options: AnalyzeArgument) -> AnalyzeResult:
        from pyspark.sql.pandas.types import to_arrow_schema
        from pyspark.sql.types import LongType, StructField, StructType, TimestampType

        if not events.isTable:
            raise InputError("uc_match's argument 1 is the events table: TABLE(events) or "
                             "TABLE(SELECT ...)")
        text = _constant(query, "uc_match", 2, "the query text")
        chosen = match_options(**_options(
            "uc_match", {k: v.value for k, v in options.items()}, _MATCH_OPTIONS))
        schema = events.dataType
        assert isinstance(schema, StructType)
        micros = tuple(f.name for f in schema.fields if isinstance(f.dataType, TimestampType))
        # Timestamps cross over as microseconds computed in Spark: a Python worker hands
        # a timestamp to the function as a wall time of its own zone.
        select = [SelectedColumn(f"unix_micros({_quoted(f.name)})" if f.name in micros
                                 else _quoted(f.name), alias=f.name) for f in schema.fields]
        received = StructType([StructField(f.name, LongType(), f.nullable)
                               if f.name in micros else f for f in schema.fields])
        probe = match_probe(received, micros, text, chosen)
        keys = parse_temporal_query(text).partition_by
        partition = ([PartitioningColumn(f"pmod(hash({', '.join(map(_quoted, keys))}), "
                                         f"{_BUCKETS})")] if keys else [])
        return _MatchAnalysis(schema=spark_schema(utc_datetimes(probe)),
                              withSinglePartition=not keys, partitionBy=partition,
                              select=select,
                              arrow_schema=to_arrow_schema(received, timezone="UTC"),
                              micros=micros)

    def __init__(self, analyze_result: _MatchAnalysis) -> None:
        self._analysis = analyze_result
        self._rows: list[tuple[Any, ...]] = []
        self._query = ""
        self._options: dict[str, Any] = {}

    def eval(self, row: Any, query: str, **options: Any) -> None:
        self._rows.append(tuple(row))
        self._query, self._options = query, options

    def terminate(self) -> Iterator[tuple[Any, ...]]:
        import pyarrow as pa

        if not self._rows:
            return
        analysis = self._analysis
        columns = list(zip(*self._rows))
        self._rows = []
        # Through Arrow, as mapInPandas hands a task its rows: the same dtypes.
        table = pa.table([pa.array(c, type=f.type) for c, f in
                          zip(columns, analysis.arrow_schema)], schema=analysis.arrow_schema)
        data = instants_from_micros(task_frame(table), analysis.micros)
        options = match_options(**_options("uc_match", self._options, _MATCH_OPTIONS))
        found = utc_datetimes(match(data, self._query, **options))
        # Python values, missing ones as None (not NaN or NaT).
        plain = found.astype(object)
        plain = plain.where(found.notna().to_numpy(), other=None)  # type: ignore[call-overload]
        yield from plain.itertuples(index=False, name=None)


# ---------------------------------------------------------------- arguments

def _constant(arg: AnalyzeArgument, function: str, position: int, what: str) -> str:
    if arg.isTable or not isinstance(arg.value, str) or not arg.value:
        raise InputError(f"{function}'s argument {position} is {what}, a constant string "
                         "(a literal or a constant expression)")
    return arg.value


def _options(function: str, given: Mapping[str, Any], defaults: Mapping[str, Any]
             ) -> dict[str, Any]:
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise InputError(f"{function} has no argument {unknown[0]!r}; its named arguments "
                         f"are {', '.join(defaults)}")
    return {**defaults, **{k: v for k, v in given.items() if v is not None}}


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
