"""What the Spark jobs read: an input resolved and checked before Spark starts.

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
input (:attr:`InputSpec.columns`):
:func:`~uncertain_cep.pipeline.spark_reader.rename_input` applies it once the schema is
known, and the file-level checks look the time columns up by the input's names. Spark
reads the input (:mod:`~uncertain_cep.pipeline.spark_reader`) in the session
:func:`session_for` gives the job.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from uncertain_cep.errors import InputError
from uncertain_cep.files import local_path
from uncertain_cep.input_tables import (
    ACCEPTED_TABLES,
    arrow_table,
    check_column_mapping,
    is_arrow_stream,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["InputSpec", "input_files", "resolve_input", "session_for"]

# A URI names its scheme (s3a://bucket/x, hdfs://nn/x, file:/x, file:///x); a Windows
# drive letter (C:\x) is not one.
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")
# A catalog name: table, db.table or catalog.db.table (backquoted parts allowed).
_TABLE = re.compile(r"^(`[^`]+`|[A-Za-z_]\w*)(\.(`[^`]+`|[A-Za-z_]\w*)){0,2}$")
_FORMATS = ("parquet", "csv")


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
    # Duration columns (the archive's ``t_sigma``) that arrive as integers, and their unit:
    # Parquet has no duration type (pandas' timedelta64 is a bare int64 to Spark), and a
    # Spark interval is cast to microseconds.
    duration_units: dict[str, str] = field(default_factory=dict)
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


def _from_pandas(frame: pd.DataFrame) -> Any:
    """A pandas frame as a pyarrow Table (its index left out, as the in-process reader
    leaves it)."""
    import pyarrow as pa

    try:
        return pa.Table.from_pandas(frame, preserve_index=False)
    except (pa.ArrowException, TypeError, ValueError) as e:
        raise InputError(f"the given pandas DataFrame cannot be handed to Spark: {e}; give "
                         "each column one type (numbers, strings or datetimes)") from e

