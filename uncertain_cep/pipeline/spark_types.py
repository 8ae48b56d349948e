"""Where pandas, Arrow and Spark meet: schemas, and timestamps that keep their instant.

Spark hands timestamps to Python as wall times (of the session's zone through Arrow, of
the worker's zone row by row) and reads naive datetimes handed back the same way, so a
session outside UTC would shift every instant. The jobs and SQL functions therefore send
timestamps to tasks as microseconds since the epoch computed in Spark
(:func:`timestamps_as_micros`), turn them into zone-aware UTC datetimes there
(:func:`instants_from_micros`), and hand zone-aware datetimes back (:func:`as_utc`,
:func:`utc_datetimes`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

__all__ = ["as_utc", "datetime_columns", "empty_frame", "instants_from_micros",
           "spark_schema", "task_frame", "timestamps_as_micros", "utc_datetimes"]


def as_utc(stamps: pd.Series) -> pd.Series:
    """Datetimes as zone-aware UTC (naive ones read as UTC): what a task hands back to
    Spark, since Arrow reads a naive datetime as a wall time of the session's zone.

    >>> as_utc(pd.Series(pd.to_datetime(["2024-01-01 09:00"]))).tolist()
    [Timestamp('2024-01-01 09:00:00+0000', tz='UTC')]
    """
    return stamps.dt.tz_localize("UTC") if stamps.dt.tz is None else stamps.dt.tz_convert("UTC")


def datetime_columns(frame: pd.DataFrame) -> list[str]:
    """The names of ``frame``'s datetime columns (naive or zone-aware)."""
    return [c for c in frame.columns if pd.api.types.is_datetime64_any_dtype(frame[c])]


def utc_datetimes(frame: pd.DataFrame) -> pd.DataFrame:
    """Every datetime column as zone-aware UTC (:func:`as_utc`)."""
    return frame.assign(**{c: as_utc(frame[c]) for c in datetime_columns(frame)})


def timestamps_as_micros(frame: DataFrame) -> tuple[DataFrame, tuple[str, ...]]:
    """Timestamp columns as microseconds since the epoch, computed in Spark, and their
    names (tasks turn them back with :func:`instants_from_micros`). ``timestamp_ntz``
    columns, wall times without a zone, stay as they are."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import TimestampType

    names = tuple(f.name for f in frame.schema.fields if isinstance(f.dataType, TimestampType))
    if not names:
        return frame, ()
    return frame.withColumns({n: F.unix_micros(F.col(f"`{n}`")) for n in names}), names


def instants_from_micros(frame: pd.DataFrame, micros: tuple[str, ...]) -> pd.DataFrame:
    """The ``micros`` columns (microseconds since the epoch) as zone-aware UTC datetimes.

    >>> instants_from_micros(pd.DataFrame({"t": [1_000_000]}), ("t",))["t"].tolist()
    [Timestamp('1970-01-01 00:00:01+0000', tz='UTC')]
    """
    return frame.assign(**{c: pd.to_datetime(frame[c], unit="us", utc=True) for c in micros})


def empty_frame(schema: StructType) -> pd.DataFrame:
    """The pandas frame of zero rows that ``mapInPandas`` tasks would get for ``schema``:
    the schema's Arrow form (``pyspark.sql.pandas.types``) on no rows, with timestamps as
    naive ``datetime64[ns]`` as PySpark hands them to pandas. No Spark job runs."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return task_frame(to_arrow_schema(schema, timezone="UTC").empty_table())


def task_frame(table: pa.Table) -> pd.DataFrame:
    """An Arrow table as the pandas frame ``mapInPandas`` would hand a task: Arrow's own
    conversion (ints with nulls as floats), timestamps as naive ``datetime64[ns]``."""
    frame = table.to_pandas()
    for name in frame.columns:
        col = frame[name]
        if pd.api.types.is_datetime64_any_dtype(col):
            if col.dt.tz is not None:
                col = col.dt.tz_localize(None)
            frame[name] = col.astype("datetime64[ns]")
    return frame


def spark_schema(frame: pd.DataFrame) -> StructType:
    """The Spark schema of a pandas frame's columns, through its Arrow schema; an object
    column of no rows (Arrow infers ``null``) is a string column."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import from_arrow_schema

    arrow = pa.Schema.from_pandas(frame, preserve_index=False)
    arrow = pa.schema([pa.field(f.name, pa.string()) if pa.types.is_null(f.type) else f
                       for f in arrow])
    return from_arrow_schema(arrow, prefer_timestamp_ntz=False)
