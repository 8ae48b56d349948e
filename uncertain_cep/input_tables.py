"""Tables users already hold: Arrow inputs, and archives whose columns have other names.

Every builder and :func:`uncertain_cep.match` take a pandas DataFrame or any object with
the Arrow PyCapsule interface (``__arrow_c_stream__`` or ``__arrow_c_array__``): a
``pyarrow.Table``, ``RecordBatch`` or ``RecordBatchReader``, a polars DataFrame, a DuckDB
relation. An Arrow input becomes the pandas frame that reading the same table from a
Parquet file would give (:func:`arrow_to_pandas`): timestamps keep their unit and time
zone, integers stay integers (uint64 ids past int64's largest value included), strings
are objects.

The archive's own column names (``event_id``, ``t_lo``, ``t_hi``, or ``t`` for certain
times; SEMANTICS A1) are fixed; ``columns=`` maps them to the input's names, keys ours,
values yours. :func:`check_column_mapping` refuses a mapping that cannot be meant (a
column the input lacks, one column for two names, a name the input already holds as
another column) and :func:`rename_columns` applies it without copying the data.
Messages about a renamed column name it as the input does (:class:`ColumnLabels`).

Parameters
----------
columns : mapping of str to str, optional
    Wherever a builder takes it: ``{"event_id": "reading_id", "t_lo": "start"}``.
    ``None`` or ``{}`` renames nothing; a name mapped to itself is allowed.

Examples
--------
>>> import pandas as pd
>>> import pyarrow as pa
>>> table = pa.table({"reading_id": [7, 8], "start": [1, 2], "end": [3, 3]})
>>> is_arrow_stream(table), is_arrow_stream(table.to_pandas())
(True, False)
>>> df = rename_columns(arrow_to_pandas(table), {"event_id": "reading_id",
...                                               "t_lo": "start", "t_hi": "end"})
>>> list(df.columns), df["event_id"].dtype
(['event_id', 't_lo', 't_hi'], dtype('int64'))
>>> rename_columns(df, {"t_lo": "begin"})
Traceback (most recent call last):
...
uncertain_cep.errors.InputError: columns={'t_lo': 'begin'}: the input has no column 'begin' ...
>>> ColumnLabels({"t_lo": "start"}).quoted("t_lo"), ColumnLabels({}).quoted("t_lo")
("'start' (t_lo)", "'t_lo'")
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyarrow as pa

from uncertain_cep.errors import InputError, InvalidOptionError, ParamEnum

__all__ = ["ACCEPTED_TABLES", "ArchiveColumn", "ColumnLabels", "arrow_table",
           "arrow_to_pandas", "check_column_mapping", "is_arrow_stream", "not_a_table",
           "rename_columns"]

# What the builders accept as a table, for messages refusing anything else.
ACCEPTED_TABLES = ("a pandas DataFrame, an Arrow table or stream (any object with "
                   "__arrow_c_stream__: a pyarrow Table or RecordBatchReader, a polars "
                   "DataFrame, a DuckDB relation)")


class ArchiveColumn(ParamEnum):
    """The archive's column names that ``columns=`` maps to the input's (SEMANTICS A1)."""

    event_id = "event_id"
    t_lo = "t_lo"
    t_hi = "t_hi"
    t = "t"      # one time column, for events whose time is certain


def is_arrow_stream(obj: object) -> bool:
    """Whether ``obj`` offers its rows through the Arrow PyCapsule interface.

    pandas frames (which have ``__arrow_c_stream__`` since pandas 2.2) and series are
    not: pandas input is read as it is. Nor are Spark DataFrames (which have it since
    Spark 4): reading one here would collect it to the driver, unasked; the Spark jobs
    take them as they are (:func:`not_a_table` says so).
    """
    if isinstance(obj, pd.DataFrame | pd.Series) or _is_spark(obj):
        return False
    kind = type(obj)
    return hasattr(kind, "__arrow_c_stream__") or hasattr(kind, "__arrow_c_array__")


def _is_spark(obj: object) -> bool:
    return type(obj).__module__.startswith("pyspark.")


def not_a_table(obj: object, what: str, accepted: str) -> InputError:
    """The error for ``obj`` given as ``what`` (``"the archive"``) where ``accepted`` is
    what is taken; for a Spark DataFrame, where to take it instead.

    >>> print(not_a_table([1], "the data", "a table"))
    the data must be a table; got list
    """
    message = f"{what} must be {accepted}; got {type(obj).__name__}"
    if _is_spark(obj):
        message += (" (a Spark DataFrame stays in Spark: pass it to uc.build_index_spark "
                    "or uc.match_spark, or collect it first with .toArrow() to work in "
                    "this process)")
    return InputError(message)


def arrow_table(obj: Any) -> pa.Table:
    """An Arrow-protocol object as a ``pyarrow.Table`` (a stream is read to its end).

    Raises
    ------
    InputError
        When the object's rows cannot be read as a table (its producer failed, or it is
        an array that is not a table).
    """
    if isinstance(obj, pa.Table):
        return obj
    try:
        return pa.table(obj)
    except (pa.ArrowException, TypeError) as e:
        raise InputError(f"could not read the {type(obj).__name__} as an Arrow table: {e}; "
                         "give a table, a record batch or a stream of record batches"
                         ) from e


def arrow_to_pandas(obj: Any) -> pd.DataFrame:
    """An Arrow-protocol object as the pandas frame ``pd.read_parquet`` would give for the
    same table: pyarrow's own conversion (timestamps keep unit and zone, integer columns
    without nulls stay integers of their width, strings become objects).

    >>> import pyarrow as pa
    >>> df = arrow_to_pandas(pa.table({"event_id": pa.array([2**63 + 1], pa.uint64())}))
    >>> df["event_id"].dtype, int(df["event_id"].iloc[0])
    (dtype('uint64'), 9223372036854775809)
    """
    table = arrow_table(obj)
    try:
        return table.to_pandas()
    except (pa.ArrowException, TypeError) as e:
        raise InputError(f"could not convert the {type(obj).__name__} to pandas: {e}") from e


def check_column_mapping(columns: Mapping[str, str] | None,
                         available: Iterable[object]) -> dict[str, str]:
    """The renames ``columns=`` asks for (archive name -> input column), checked against
    the input's column names; names mapped to themselves are left out.

    Raises
    ------
    InvalidOptionError
        A key that is not an archive column (the message lists the valid ones).
    InputError
        A value that is not one of the input's columns, one column mapped to two names, or
        a name the input already holds as another column (which of the two is meant?).

    >>> check_column_mapping({"event_id": "id", "t_lo": "t_lo"}, ["id", "t_lo", "t_hi"])
    {'event_id': 'id'}
    >>> check_column_mapping({"t_lo": "time", "t_hi": "time"}, ["time"])
    Traceback (most recent call last):
    ...
    uncertain_cep.errors.InputError: columns= maps both 't_lo' and 't_hi' to column 'time'; ...
    """
    if columns is None:
        return {}
    if not isinstance(columns, Mapping):
        raise InputError(f"columns= takes a mapping from the archive's names to yours, e.g. "
                         f"columns={{'event_id': 'reading_id'}}; got {type(columns).__name__}")
    names = list(available)
    shown = f"(its columns: {names})"
    mapping: dict[str, str] = {}
    owner: dict[str, str] = {}
    for key, value in columns.items():
        _check_key(key, value)
        if not isinstance(value, str):
            raise InputError(f"columns={{{key!r}: {value!r}}}: the value must be the name "
                             "of one of the input's columns, as a string")
        if value not in names:
            raise InputError(f"columns={{{key!r}: {value!r}}}: the input has no column "
                             f"{value!r} {shown}; map {key!r} to one of them")
        if value in owner:
            first = owner[value]
            hint = (" (for events whose time is certain, map 't' alone: "
                    f"columns={{'t': {value!r}}})" if {first, key} <= {"t_lo", "t_hi"}
                    else "")
            raise InputError(f"columns= maps both {first!r} and {key!r} to column "
                             f"{value!r}; a column can be renamed once{hint}")
        owner[value] = key
        if value != key:
            mapping[key] = value
    for key, value in mapping.items():
        if key in names and key not in owner:
            raise InputError(f"columns= renames {value!r} to {key!r}, but the input has a "
                             f"column {key!r} too {shown}: which one is meant? Drop or "
                             f"rename the input's {key!r} column, or leave {key!r} out of "
                             "columns=")
    after = (set(names) - set(mapping.values())) | set(mapping)
    if "t" in mapping and after & {"t_lo", "t_hi"}:
        raise InputError(f"columns= maps 't' (one time column, for certain times) to "
                         f"{mapping['t']!r}, but the input also has t_lo/t_hi, which would "
                         "be read instead; map t_lo and t_hi, or drop them")
    return mapping


def _check_key(key: object, value: object) -> None:
    try:
        ArchiveColumn.get_value(key)
    except InvalidOptionError as e:
        swapped = value in {m.value for m in ArchiveColumn}
        hint = (f"; the keys are the archive's names and the values yours: did you mean "
                f"{{{value!r}: {key!r}}}?" if swapped
                else "; the keys are the archive's names and the values yours")
        raise InvalidOptionError(f"columns= key {e}{hint}") from None


def rename_columns(frame: pd.DataFrame, columns: Mapping[str, str] | None) -> pd.DataFrame:
    """``frame`` with the input's columns renamed to the archive's names as ``columns=``
    asks (checked by :func:`check_column_mapping`); the same frame when nothing is
    renamed, else a shallow copy (no column's data is copied)."""
    mapping = check_column_mapping(columns, frame.columns)
    if not mapping:
        return frame
    new = {value: key for key, value in mapping.items()}
    out = frame.copy(deep=False)
    out.columns = pd.Index([new.get(c, c) for c in frame.columns], dtype=object)
    return out


@dataclass(frozen=True)
class ColumnLabels:
    """How messages name the archive's columns: a renamed one as the input names it, with
    the archive's name beside it (``'reading_id' (event_id)``), others as they are.

    ``renamed`` maps the archive's names to the input's (what
    :func:`check_column_mapping` returns).
    """

    renamed: Mapping[str, str] = field(default_factory=dict)

    def quoted(self, name: str) -> str:
        """``'reading_id' (event_id)``, or ``'event_id'`` when not renamed."""
        theirs = self.renamed.get(name)
        return f"{theirs!r} ({name})" if theirs is not None else repr(name)

    def plain(self, name: str) -> str:
        """``reading_id (event_id)``, or ``event_id`` when not renamed."""
        theirs = self.renamed.get(name)
        return f"{theirs} ({name})" if theirs is not None else name
