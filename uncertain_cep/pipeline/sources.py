"""What the Spark jobs read, and how Spark's own failures become the project's errors.

A job's input is one of

* a ``pyspark.sql.DataFrame`` (classic or Spark Connect), used as it is;
* a table in this process: a pandas DataFrame or any object with the Arrow PyCapsule
  interface (a pyarrow Table, a polars DataFrame, a DuckDB relation), handed to Spark as
  a pyarrow Table (``spark.createDataFrame``): aware timestamps stay the same instants,
  naive ones become ``timestamp_ntz`` wall times (read as UTC, as the in-process reader
  reads them), unsigned integers become longs when they fit;
* a path or URI: a local path (a file, or a directory of Parquet or CSV files, with
  partition folders if any), or any URI Spark's reader understands (``s3a://``,
  ``hdfs://``, ``abfss://``, ``file:``); local paths are checked here before Spark
  starts, URIs go straight to Spark's reader;
* a table or view name of the session's catalog (``spark.table``), when no local file
  or directory has that name.

A build's ``columns=`` (the input's names for the archive's columns) travels with the
input (:attr:`InputSpec.columns`): :func:`rename_input` applies it once the schema is
known, and the file-level checks here look the time columns up by the input's names.

Everything here works through DataFrame operations and the SQL configuration, never
through ``sparkContext``, so the same jobs run on classic Spark and on Spark Connect.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from uncertain_cep.errors import InputError, UncertainCepError
from uncertain_cep.files import local_path
from uncertain_cep.input_tables import (
    ACCEPTED_TABLES,
    arrow_table,
    check_column_mapping,
    is_arrow_stream,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["NANOS_AS_LONG", "InputSpec", "NanosTimestampsError", "has_nanos_timestamps",
           "input_files", "is_connect", "is_nanos_failure", "is_spark_error", "master_of",
           "nanos_as_long", "read_input", "rename_input", "resolve_input", "session_for",
           "spark_failure", "spark_input_error", "task_slots", "worker_exception"]

# A URI names its scheme (s3a://bucket/x, hdfs://nn/x, file:/x, file:///x); a Windows
# drive letter (C:\x) is not one.
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")
# A catalog name: table, db.table or catalog.db.table (backquoted parts allowed).
_TABLE = re.compile(r"^(`[^`]+`|[A-Za-z_]\w*)(\.(`[^`]+`|[A-Za-z_]\w*)){0,2}$")
_FORMATS = ("parquet", "csv")
# Pandas writes datetime64[ns] columns as Parquet TIMESTAMP(NANOS), which Spark's reader
# refuses unless this (session-level) option reads them as nanoseconds since the epoch.
NANOS_AS_LONG = "spark.sql.legacy.parquet.nanosAsLong"
# The archive's time columns (SEMANTICS A1), the only columns read as nanosecond times.
_TIME_COLUMNS = ("t_lo", "t_hi", "t")


class NanosTimestampsError(InputError):
    """The input holds Parquet nanosecond timestamps, which Spark reads only as longs
    (the build job retries with :func:`nanos_as_long`)."""


@dataclass
class InputSpec:
    """An input resolved as far as possible without Spark.

    ``kind`` is ``"dataframe"``, ``"memory"`` (a table in this process, as a pyarrow
    Table), ``"path"`` (local, checked), ``"uri"`` or ``"table"``; ``files`` lists a local
    input's files (for the build's fingerprint and messages); ``columns`` maps the
    archive's column names to the input's (a build's ``columns=``).
    """

    kind: str
    value: Any
    fmt: str
    label: str
    files: list[Path] = field(default_factory=list)
    # Filled in when read: time columns that arrived as nanoseconds since the epoch.
    nanos_columns: tuple[str, ...] = ()
    columns: dict[str, str] = field(default_factory=dict)

    def source_name(self, name: str) -> str:
        """The input's own name for the archive's column ``name``."""
        return self.columns.get(name, name)

    @property
    def inputs(self) -> tuple[str, ...]:
        """What the build record names as its inputs."""
        if self.kind == "path":
            return tuple(str(f) for f in self.files)
        return (self.label,)


def resolve_input(source: Any, input_format: str | None = None,
                  columns: Mapping[str, str] | None = None) -> InputSpec:
    """Classify ``source`` and check what can be checked before Spark starts (of
    ``columns``, its keys and values; the input's columns once Spark reads its schema)."""
    spec = _resolve(source, _format(input_format))
    if columns is not None:
        if spec.kind == "memory":
            check_column_mapping(columns, spec.value.schema.names)
        elif isinstance(columns, Mapping):
            check_column_mapping(columns, list(columns.values()))
        else:
            check_column_mapping(columns, ())      # refuses what is not a mapping
        spec.columns = dict(columns)
    return spec


def _resolve(source: Any, fmt: str | None) -> InputSpec:
    if not isinstance(source, str | os.PathLike):
        if _is_dataframe(source):
            return InputSpec("dataframe", source, fmt or "dataframe", "the given DataFrame")
        if isinstance(source, pd.DataFrame):
            return InputSpec("memory", _from_pandas(source), "memory",
                             "the given pandas DataFrame")
        if is_arrow_stream(source):
            return InputSpec("memory", arrow_table(source), "memory",
                             f"the given {type(source).__name__}")
        raise InputError(f"an input is a pyspark DataFrame, {ACCEPTED_TABLES}, a table "
                         f"name, or a path or URI Spark can read; got {type(source).__name__}")
    text = os.fspath(source)
    if _URI.match(text) and not re.match(r"^[A-Za-z]:[\\/]", text):
        # Spark's reader decides what the URI holds; a directory URI is Parquet unless
        # it ends in .csv or input_format says otherwise.
        spec = InputSpec("uri", text, fmt or ("csv" if text.rstrip("/").endswith(".csv")
                                              else "parquet"), text)
        local = local_path(text)
        if local is not None and local.exists():
            # This process sees a file: URI's files: their schemas name the time zone.
            found_fmt, spec.files = input_files(local)
            if found_fmt != spec.fmt:
                raise InputError(f"input {text} holds {found_fmt} files, not {spec.fmt}")
        return spec
    path = Path(text)
    if path.exists():
        found_fmt, files = input_files(path)
        if fmt is not None and fmt != found_fmt:
            raise InputError(f"input {path} holds {found_fmt} files, not {fmt}")
        return InputSpec("path", path, found_fmt, str(path), files)
    if _TABLE.match(text) and path.suffix not in (".parquet", ".csv"):
        return InputSpec("table", text, "table", f"table {text}")
    raise InputError(f"input {path} does not exist")


def session_for(spec: InputSpec, spark: SparkSession | None, master: str | None
                ) -> SparkSession:
    """The session a job runs in: the one given, else the given DataFrame's own, else one
    the project makes (local mode by default, or ``master``)."""
    from uncertain_cep.pipeline.sql_functions import register_if_configured

    if spark is None and spec.kind == "dataframe":
        spark = spec.value.sparkSession
    if spark is None:
        from uncertain_cep.pipeline.session import spark_session

        return spark_session(master)
    register_if_configured(spark)
    return spark


def _format(input_format: str | None) -> str | None:
    if input_format is None:
        return None
    if input_format not in _FORMATS:
        raise InputError(f"input_format {input_format!r} is not one of: "
                         f"{', '.join(map(repr, _FORMATS))}")
    return input_format


def _is_dataframe(x: Any) -> bool:
    try:
        from pyspark.sql import DataFrame
    except ImportError:
        return False
    # Spark Connect's DataFrame subclasses this one in PySpark 4.
    return isinstance(x, DataFrame)


def input_files(source: str | os.PathLike[str]) -> tuple[str, list[Path]]:
    """The format and files of a local input path (a file, or a directory of one format)."""
    path = Path(source)
    if not path.exists():
        raise InputError(f"input {path} does not exist")
    found = [path] if path.is_file() else sorted(
        p for p in path.rglob("*") if p.is_file() and p.suffix in (".parquet", ".csv")
        and not any(part.startswith((".", "_")) for part in p.relative_to(path).parts))
    kinds = {p.suffix for p in found}
    if not found:
        raise InputError(f"input directory {path} holds no .parquet or .csv files")
    if len(kinds) > 1:
        raise InputError(f"input directory {path} mixes Parquet and CSV files; give one kind")
    kind = kinds.pop()
    if kind not in (".parquet", ".csv"):
        raise InputError(f"input {path} is neither .parquet nor .csv")
    return kind[1:], found


# ---------------------------------------------------------------- reading

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


def _from_pandas(frame: pd.DataFrame) -> Any:
    """A pandas frame as a pyarrow Table (its index left out, as the in-process reader
    leaves it)."""
    import pyarrow as pa

    try:
        return pa.Table.from_pandas(frame, preserve_index=False)
    except (pa.ArrowException, TypeError, ValueError) as e:
        raise InputError(f"the given pandas DataFrame cannot be handed to Spark: {e}; give "
                         "each column one type (numbers, strings or datetimes)") from e


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
                     f"{_first_line(e)[:300]}") from None


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


def is_nanos_failure(e: BaseException) -> bool:
    """Whether Spark refused a Parquet file for its nanosecond timestamps."""
    return "TIMESTAMP(NANOS" in str(e)


def has_nanos_timestamps(spec: InputSpec) -> bool:
    """Whether a local Parquet input's time columns are nanosecond timestamps (as pandas
    writes ``datetime64[ns]``), from the files' schemas: pandas reads no row (a filter
    none passes) and keeps Arrow's types. No Spark job runs."""
    if spec.fmt != "parquet" or not spec.files:
        return False
    import pyarrow as pa

    for path in spec.files:
        for name in map(spec.source_name, _TIME_COLUMNS):
            try:
                column = pd.read_parquet(path, columns=[name], filters=[(name, "in", [])],
                                         dtype_backend="pyarrow")[name]
            except (KeyError, ValueError, OSError, pa.ArrowException):
                continue     # no such column, or a file Spark's reader will name
            kind = getattr(column.dtype, "pyarrow_dtype", None)
            if kind is not None and pa.types.is_timestamp(kind) and kind.unit == "ns":
                return True
    return False


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


# ---------------------------------------------------------------- errors

def is_spark_error(e: BaseException) -> bool:
    """Whether ``e`` is Spark's (a PySparkException, a captured JVM error, or py4j's)."""
    return type(e).__module__.startswith(("pyspark.", "py4j.")) or any(
        c.__module__.startswith(("pyspark.errors", "py4j.")) for c in type(e).__mro__)


def _first_line(e: BaseException) -> str:
    """The meaningful first line of a Spark error: no py4j preamble, no JVM frames."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    for ln in lines:
        if ln.startswith("An error occurred while calling"):
            continue
        ln = ln.lstrip(": ").strip()
        # "org.apache.hadoop.fs.UnsupportedFileSystemException: No FileSystem for ..."
        ln = re.sub(r"^([a-z]\w*\.)+[A-Z]\w*(Exception|Error): ", "", ln)
        return re.sub(r"\s*SQLSTATE: \w+\.?$", "", ln)
    return type(e).__name__


def spark_input_error(e: BaseException, spec: InputSpec) -> InputError:
    """Spark's failure to read ``spec`` as an InputError saying what to do."""
    reason = _first_line(e)
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


# The last line of a Python traceback: the exception's (dotted) name and its message.
_RAISED = re.compile(r"^((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Warning)): ?(.*)$")


def worker_exception(e: BaseException) -> tuple[str, str] | None:
    r"""The exception a Python worker raised, as ``(name, message)``, from the traceback
    Spark passes on in ``e``'s text (or its causes'); None if there is none.

    >>> class Fake(Exception): pass
    >>> worker_exception(Fake("An exception was thrown from the Python worker:\n"
    ...     "Traceback (most recent call last):\n  File \"w.py\", line 1, in f\n"
    ...     "ModuleNotFoundError: No module named 'uncertain_cep'"))
    ('ModuleNotFoundError', "No module named 'uncertain_cep'")
    """
    seen: set[int] = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        lines = str(e).splitlines()
        if any(ln.startswith("Traceback (most recent call last)") for ln in lines):
            raised = [m for m in (_RAISED.match(ln.lstrip()) for ln in lines) if m]
            if raised:
                return raised[-1].group(1), raised[-1].group(2).strip()
        e = e.__cause__ or e.__context__  # type: ignore[assignment]
    return None


def spark_failure(e: BaseException, what: str) -> UncertainCepError:
    """A Spark job's failure, as one line naming the job (no JVM or py4j traceback) and,
    when a Python worker failed, that worker's own exception and what to do about it."""
    reason = _first_line(e)
    raised = worker_exception(e)
    if raised is not None:
        name, message = raised
        if name.startswith("uncertain_cep.errors."):
            # A task's own error message says what is wrong with the data or query.
            reason = f"{name.removeprefix('uncertain_cep.errors.')}: {message}"
        else:
            reason = f"a Python worker raised {name}: {message}"
            if name.endswith(("ModuleNotFoundError", "ImportError")):
                reason += ("; the executors' Python cannot import what the job needs: "
                           "install uncertain-cep (pip install 'uncertain-cep[spark]') "
                           "where the executors run, or point PYSPARK_PYTHON at an "
                           f"interpreter that has it (this one: {sys.executable})")
    if "AnalysisException" in type(e).__name__ or "UNRESOLVED_COLUMN" in reason:
        return InputError(f"{what}: {reason}")
    return UncertainCepError(f"{what} failed in Spark: {reason}")


# ---------------------------------------------------------------- sessions

def is_connect(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect session (no ``sparkContext`` there)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def master_of(spark: SparkSession) -> str | None:
    """The session's master URL, as its configuration says (on Connect, the server's)."""
    try:
        return spark.conf.get("spark.master", None)
    except Exception as e:  # a Connect server may refuse to show it
        if is_spark_error(e):
            return None
        raise


def task_slots(spark: SparkSession) -> int:
    """How many tasks the session runs at once, from its configuration (what classic
    Spark's ``defaultParallelism`` would say): ``spark.default.parallelism`` if set, the
    ``N`` of a ``local[N]`` master, the cores of ``local[*]``, else a quarter of
    ``spark.sql.shuffle.partitions`` (the session's own choice of shuffle width)."""
    conf = spark.conf
    explicit = conf.get("spark.default.parallelism", None)
    if explicit:
        return max(1, int(explicit))
    master = master_of(spark) or ""
    local = re.fullmatch(r"local(?:\[(\*|\d+)(?:,\s*\d+)?\])?", master)
    if local:
        n = local.group(1)
        if n is None:
            return 1                      # "local": one thread
        return max(1, os.cpu_count() or 1) if n == "*" else max(1, int(n))
    return max(1, int(conf.get("spark.sql.shuffle.partitions", "200") or 200) // 4)
