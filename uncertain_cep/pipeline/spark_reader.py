"""Reading a Spark job's input through Spark's own reader, and its failures as InputErrors.

:func:`read_input` turns an :class:`~uncertain_cep.pipeline.sources.InputSpec` into a
DataFrame whose schema is resolved at once, so a missing path or table, an unreadable
file or an unknown scheme fails before any job runs, as an
:class:`~uncertain_cep.errors.InputError` naming the input (:func:`spark_input_error`).
A table of this process reaches Spark as a pyarrow Table with its timestamps kept;
Parquet files are read with merged schemas, so files that disagree on a column's type
are named. :func:`rename_input` applies a build's ``columns=`` once the schema is known.

Pandas writes ``datetime64[ns]`` as Parquet nanosecond timestamps, which Spark reads
only as longs and only with a session option (:data:`NANOS_AS_LONG`):
:func:`has_nanos_timestamps` finds them from the files' own schemas and
:func:`nanos_as_long` sets the option for one job.

Everything here works through DataFrame operations and the SQL configuration, never
through ``sparkContext``, so the same jobs run on classic Spark and on Spark Connect.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import pandas as pd

from uncertain_cep.errors import InputError, UncertainCepError
from uncertain_cep.input_tables import check_column_mapping
from uncertain_cep.pipeline.sources import InputSpec
from uncertain_cep.pipeline.spark_errors import first_line, is_spark_error

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "NANOS_AS_LONG",
    "NanosTimestampsError",
    "has_nanos_timestamps",
    "is_nanos_failure",
    "nanos_as_long",
    "parquet_duration_units",
    "read_input",
    "rename_input",
    "spark_input_error",
]

# Pandas writes datetime64[ns] columns as Parquet TIMESTAMP(NANOS), which Spark's reader
# refuses unless this (session-level) option reads them as nanoseconds since the epoch.
NANOS_AS_LONG = "spark.sql.legacy.parquet.nanosAsLong"
# The archive's time columns (SEMANTICS A1), the only columns read as nanosecond times.
_TIME_COLUMNS = ("t_lo", "t_hi", "t", "t_mu")


class NanosTimestampsError(InputError):
    """The input holds Parquet nanosecond timestamps, which Spark reads only as longs
    (the build job retries with :func:`nanos_as_long`)."""


def read_input(spark: SparkSession, spec: InputSpec, *, nanos: bool = False) -> DataFrame:
    """The input as a DataFrame, read through Spark's own reader; its schema is resolved
    here, so a missing path or table, an unreadable file or an unknown scheme fails now
    as an :class:`~uncertain_cep.errors.InputError` naming the input.

    ``nanos``: the caller has set :data:`NANOS_AS_LONG` (see :func:`nanos_as_long`), so
    nanosecond timestamps arrive as longs; their time columns are recorded in
    ``spec.nanos_columns``.
    """
    if spec.kind == "dataframe":
        frame = spec.value
    elif spec.kind == "memory":
        frame = _resolved(lambda: _from_arrow(spark, spec.value, spec), spec)
    elif spec.kind == "table":
        frame = _resolved(lambda: spark.table(spec.value), spec)
    else:
        location = str(spec.value)
        frame = _resolved(lambda: _read_location(spark, spec.fmt, location, spec), spec)
    if nanos:
        # Named as the archive names them (the frame is renamed later: rename_input).
        ours = {spec.source_name(n): n for n in _TIME_COLUMNS}
        spec.nanos_columns = tuple(ours[f.name] for f in frame.schema.fields
                                   if f.name in ours and f.dataType.typeName() == "long")
    return frame


def rename_input(frame: DataFrame, spec: InputSpec, keep: tuple[str, ...] = ()) -> DataFrame:
    """``frame`` with ``spec.columns`` applied (one projection, no job), checked against
    its schema first (:func:`~uncertain_cep.input_tables.check_column_mapping`; ``keep``:
    the columns the job added, which are not the input's). ``spec.columns`` keeps the
    renames made, for messages."""
    from pyspark.sql import functions as F

    spec.columns = check_column_mapping(spec.columns,
                                        [c for c in frame.columns if c not in keep])
    if not spec.columns:
        return frame
    ours = {theirs: name for name, theirs in spec.columns.items()}
    return frame.select(*(F.col(f"`{c}`").alias(ours.get(c, c)) for c in frame.columns))


def _from_arrow(spark: SparkSession, table: Any, spec: InputSpec) -> DataFrame:
    """A pyarrow Table as a Spark DataFrame whose timestamps are the table's: aware ones
    the same instants, naive ones wall times (``timestamp_ntz``, which the tasks read as
    UTC, as the in-process reader does), never shifted by the session's zone; unsigned
    integers as longs (Spark has no unsigned type), dictionary columns as their values."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import from_arrow_schema

    fields = []
    for fld in table.schema:
        kind = fld.type
        if pa.types.is_dictionary(kind):
            kind = kind.value_type
        if pa.types.is_unsigned_integer(kind):
            kind = pa.int64()
        fields.append(pa.field(fld.name, kind))
    for i, (fld, want) in enumerate(zip(table.schema, fields)):
        if fld.type != want.type:
            try:
                table = table.set_column(i, want, table.column(i).cast(want.type))
            except pa.ArrowInvalid as e:
                raise InputError(f"column {fld.name!r} of {spec.label} holds {fld.type} "
                                 f"values that Spark has no type for ({e}); build it in this "
                                 "process (uc.build_index, --engine local), or give such ids "
                                 "as strings") from e
    return spark.createDataFrame(table, schema=from_arrow_schema(table.schema,
                                                                 prefer_timestamp_ntz=True))


def _read_location(spark: SparkSession, fmt: str, location: str, spec: InputSpec
                   ) -> DataFrame:
    if fmt == "csv":
        # CSV holds no time zone: its datetimes without an offset are read as UTC, as
        # the in-process reader reads them, whatever the session's zone.
        return (spark.read.option("header", True).option("inferSchema", True)
                .option("timeZone", "UTC").csv(location))
    try:
        # Spark reads every file with the schema of one of them unless asked to merge, so
        # a folder where one file has int64 times and another timestamps would come back
        # as raw integers; merging makes the disagreement an error, named below.
        frame = spark.read.option("mergeSchema", "true").parquet(location)
        frame.schema  # noqa: B018 -- Spark Connect analyses lazily; fail here, not later
        return frame
    except Exception as e:
        if "CANNOT_MERGE_SCHEMAS" not in str(e) and "merge incompatible" not in str(e):
            raise
        _explain_merge_failure(spark, spec, e)
        raise


def _explain_merge_failure(spark: SparkSession, spec: InputSpec, e: Exception) -> None:
    """Name the column and the two files whose types disagree (local inputs), else pass
    Spark's own reason on."""
    names = [str(f) for f in spec.files]
    if len(names) > 1:
        first = {f.name: f.dataType for f in spark.read.parquet(names[0]).schema.fields}
        for name in names[1:]:
            for fld in spark.read.parquet(name).schema.fields:
                theirs = first.get(fld.name)
                if theirs is not None and theirs != fld.dataType:
                    raise InputError(
                        f"column {fld.name!r} is {theirs.simpleString()} in {names[0]} "
                        f"but {fld.dataType.simpleString()} in {name}: the files of one "
                        "input must agree on every column's type; rewrite them with one "
                        "type (for times: all numbers or all timestamps)") from None
    raise InputError(f"the Parquet files of {spec.label} do not share one schema: "
                     f"{first_line(e)[:300]}") from None


def _resolved(make: Any, spec: InputSpec) -> DataFrame:
    try:
        frame = make()
        frame.schema  # noqa: B018 -- resolve now (lazy on Spark Connect)
        return frame
    except UncertainCepError:
        raise
    except Exception as e:
        if not is_spark_error(e):
            raise
        raise spark_input_error(e, spec) from None


def spark_input_error(e: BaseException, spec: InputSpec) -> InputError:
    """Spark's failure to read ``spec`` as an InputError saying what to do."""
    reason = first_line(e)
    if "PATH_NOT_FOUND" in reason or "does not exist" in reason.lower():
        return InputError(f"input {spec.label} does not exist ({reason})")
    if "TABLE_OR_VIEW_NOT_FOUND" in reason:
        return InputError(f"input {spec.value} is neither an existing file or directory nor "
                          "a table or view of the Spark session's catalog; give a path, a "
                          "URI, a table name or a DataFrame")
    if "No FileSystem for scheme" in reason or "ClassNotFoundException" in reason:
        return InputError(f"Spark cannot read {spec.label}: {reason}. The URI's scheme "
                          "needs its filesystem connector on the Spark classpath (for "
                          "s3a://, hadoop-aws; for abfss://, hadoop-azure), or check the "
                          "scheme's spelling")
    if is_nanos_failure(e):
        return NanosTimestampsError(f"{spec.label} holds nanosecond timestamps (Parquet "
                          "TIMESTAMP(NANOS)), which Spark cannot read: rewrite it with "
                          "microsecond timestamps (pandas: df.to_parquet(path, "
                          "coerce_timestamps='us', allow_truncated_timestamps=True)); "
                          "uc.build_index_spark reads such files itself")
    return InputError(f"Spark cannot read {spec.label}: {reason}")


# ---------------------------------------------------------------- nanosecond timestamps

def is_nanos_failure(e: BaseException) -> bool:
    """Whether Spark refused a Parquet file for its nanosecond timestamps."""
    return "TIMESTAMP(NANOS" in str(e)


def parquet_duration_units(spec: InputSpec) -> dict[str, str]:
    """The unit of a local Parquet input's ``t_sigma`` when the files hold durations
    (pandas writes ``timedelta64`` as an int64 whose unit only pyarrow's schema records;
    Spark reads it as a bare long). No Spark job runs.

    >>> import tempfile, pandas as pd
    >>> from uncertain_cep.pipeline.sources import resolve_input
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     pd.DataFrame({"t_sigma": pd.to_timedelta([1], unit="s")}).to_parquet(tmp + "/a.parquet")
    ...     units = parquet_duration_units(resolve_input(tmp + "/a.parquet"))
    >>> units
    {'t_sigma': 'ns'}
    """
    import pyarrow as pa

    for kind in _arrow_types(spec, spec.source_name("t_sigma")):
        if pa.types.is_duration(kind):
            return {"t_sigma": kind.unit}
    return {}


def _arrow_types(spec: InputSpec, name: str) -> Iterator[Any]:
    """The Arrow type of column ``name`` in each file of a local Parquet input that has
    it: pandas reads no row (a filter none passes) and keeps Arrow's types."""
    if spec.fmt != "parquet" or not spec.files:
        return
    import pyarrow as pa

    for path in spec.files:
        try:
            column = pd.read_parquet(path, columns=[name], filters=[(name, "in", [])],
                                     dtype_backend="pyarrow")[name]
        except (KeyError, ValueError, OSError, pa.ArrowException):
            continue     # no such column, or a file Spark's reader will name
        kind = getattr(column.dtype, "pyarrow_dtype", None)
        if kind is not None:
            yield kind


def has_nanos_timestamps(spec: InputSpec) -> bool:
    """Whether a local Parquet input's time columns are nanosecond timestamps (as pandas
    writes ``datetime64[ns]``), from the files' schemas. No Spark job runs."""
    import pyarrow as pa

    return any(pa.types.is_timestamp(kind) and kind.unit == "ns"
               for name in map(spec.source_name, _TIME_COLUMNS)
               for kind in _arrow_types(spec, name))


@contextmanager
def nanos_as_long(spark: SparkSession) -> Iterator[None]:
    """Read Parquet nanosecond timestamps as longs for the duration of a (synchronous)
    job, then put the session's own setting back."""
    before = spark.conf.get(NANOS_AS_LONG, None)
    spark.conf.set(NANOS_AS_LONG, "true")
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(NANOS_AS_LONG)
        else:
            spark.conf.set(NANOS_AS_LONG, before)
