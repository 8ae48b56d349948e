"""Uncertain events: reading and validating an archive (SEMANTICS A1).

An archive is a table with one row per event:

* ``event_id`` (integers or strings, unique; kept as int64, or uint64 for unsigned ids
  past int64's largest value),
* the dependency-group column (``group`` unless ``group_by`` says otherwise),
* ``t_lo``/``t_hi``: the inclusive interval of integer instants the event happened in
  (a single column ``t`` is accepted for events whose time is certain),
* numeric attributes as ``<a>_lo``/``<a>_hi`` (uniform over the range, or a truncated
  normal when ``<a>_mu``/``<a>_sigma`` are given) or a single column ``<a>`` (certain),
* string columns as certain categorical attributes.

The table is a pandas DataFrame, any Arrow table or stream (``__arrow_c_stream__``:
pyarrow, polars, DuckDB) or a Parquet/CSV file. ``columns=`` maps the names above to the
input's own (:mod:`uncertain_cep.input_tables`); messages then name the input's columns.

Bad rows raise :class:`~uncertain_cep.errors.InputError` naming the event id and column;
nothing is dropped or clipped.

>>> import pandas as pd
>>> df = pd.DataFrame({"event_id": [1, 2], "group": ["g", "g"], "t_lo": [1, 2],
...                    "t_hi": [3, 3], "x_lo": [0.0, 1.0], "x_hi": [1.0, 1.0],
...                    "tag": ["a", "b"]})
>>> archive = read_archive(df)
>>> archive.n_events, archive.numeric_names, archive.categorical_names
(2, ('x',), ('tag',))
>>> read_archive(df.assign(t_lo=[4, 2]))
Traceback (most recent call last):
...
uncertain_cep.errors.InputError: event 1 (row 0): t_lo = 4 is greater than t_hi = 3; every event needs t_lo <= t_hi
>>> read_archive(df.rename(columns={"t_lo": "start"}).assign(start=[4, 2]),
...              columns={"t_lo": "start"})
Traceback (most recent call last):
...
uncertain_cep.errors.InputError: event 1 (row 0): start (t_lo) = 4 is greater than t_hi = 3; every event needs t_lo <= t_hi
"""

from __future__ import annotations

import math
import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd

from uncertain_cep.errors import InputError
from uncertain_cep.input_tables import (
    ACCEPTED_TABLES,
    ColumnLabels,
    arrow_to_pandas,
    check_column_mapping,
    is_arrow_stream,
    not_a_table,
    rename_columns,
)
from uncertain_cep.model.number_columns import as_numbers, is_plain_text, mostly_numbers
from uncertain_cep.model.time_axis import MAX_SPAN, TimeAxis, timezone_name

__all__ = ["Archive", "NumericAttribute", "canonical_order", "canonical_rank", "read_archive",
           "text_values"]

_RESERVED = {"event_id", "t_lo", "t_hi", "t"}


@dataclass(frozen=True, eq=False)
class NumericAttribute:
    """One numeric attribute of every event: a range with a pdf over it.

    ``mu``/``sigma`` are NaN where the row's pdf is uniform (or ``None`` for all rows).
    """

    name: str
    lo: np.ndarray
    hi: np.ndarray
    mu: np.ndarray | None = None
    sigma: np.ndarray | None = None

    @property
    def is_certain(self) -> bool:
        return bool(np.all(self.lo == self.hi))


@dataclass(frozen=True, eq=False)
class Archive:
    """A validated archive of uncertain events, stored column-wise.

    Events keep their input order; ``group_of[i]`` is the dense code of event ``i``'s
    dependency group and ``group_labels[code]`` its original key. ``time_axis`` is the
    discretisation the times were read with (``None``: they were integer instants), and
    for datetimes their unit and time zone.
    """

    event_ids: np.ndarray
    group_by: str
    group_labels: np.ndarray
    group_of: np.ndarray
    t_lo: np.ndarray
    t_hi: np.ndarray
    numeric: dict[str, NumericAttribute] = field(default_factory=dict)
    categorical: dict[str, np.ndarray] = field(default_factory=dict)
    time_axis: TimeAxis | None = None

    @property
    def n_events(self) -> int:
        return len(self.event_ids)

    @property
    def n_groups(self) -> int:
        return len(self.group_labels)

    @property
    def numeric_names(self) -> tuple[str, ...]:
        return tuple(self.numeric)

    @property
    def categorical_names(self) -> tuple[str, ...]:
        return tuple(self.categorical)

    def group_members(self) -> list[np.ndarray]:
        """Event indices of every group in the group's canonical order (see
        :func:`canonical_order`): an event's position in its group does not depend on the
        order of the input rows, so every build of the same archive gives the same trees."""
        order = np.lexsort((canonical_rank(self.event_ids), self.t_hi, self.t_lo,
                            self.group_of))
        bounds = np.searchsorted(self.group_of[order], np.arange(self.n_groups + 1))
        return [order[bounds[g]:bounds[g + 1]] for g in range(self.n_groups)]

    def describe_event(self, i: int) -> str:
        return f"event {_eid(self.event_ids[i])}"

    def to_frame(self) -> pd.DataFrame:
        """The archive as a DataFrame in the input layout (time already discretised)."""
        cols: dict[str, Any] = {"event_id": self.event_ids,
                                self.group_by: self.group_labels[self.group_of],
                                "t_lo": self.t_lo, "t_hi": self.t_hi}
        for name, attr in self.numeric.items():
            cols[f"{name}_lo"] = attr.lo
            cols[f"{name}_hi"] = attr.hi
            if attr.mu is not None and attr.sigma is not None:
                cols[f"{name}_mu"] = attr.mu
                cols[f"{name}_sigma"] = attr.sigma
        for name, values in self.categorical.items():
            cols[name] = values
        return pd.DataFrame(cols)


def canonical_rank(event_ids: np.ndarray) -> np.ndarray:
    """Ranks of event ids (int64 or strings) in ascending order, as int64."""
    codes, _ = pd.factorize(pd.Series(event_ids), sort=True)
    return codes.astype(np.int64)


def canonical_order(t_lo: np.ndarray, t_hi: np.ndarray, event_ids: np.ndarray) -> np.ndarray:
    """The order of one group's events that defines their positions in its OI-trees: by
    ``t_lo``, then ``t_hi``, then event id.

    >>> canonical_order(np.array([2, 1, 1]), np.array([3, 4, 2]), np.array(["a", "b", "c"]))
    array([2, 1, 0])
    """
    return np.lexsort((canonical_rank(event_ids), t_hi, t_lo))


def read_archive(source: pd.DataFrame | Any | str | os.PathLike[str], group_by: str = "group",
                 time_unit: float | str | pd.Timedelta | None = None, *,
                 columns: Mapping[str, str] | None = None,
                 check_unique_ids: bool = True,
                 numeric_text: Collection[str] | None = None,
                 renamed: Mapping[str, str] | None = None) -> Archive:
    """Validate a table (or a Parquet/CSV file) of uncertain events into an :class:`Archive`.

    Parameters
    ----------
    source
        A pandas DataFrame; any object with the Arrow PyCapsule interface
        (``__arrow_c_stream__``: a pyarrow Table or RecordBatchReader, a polars
        DataFrame, a DuckDB relation), read as ``pd.read_parquet`` would read the same
        table; or the path of a Parquet or CSV file.
    group_by
        The dependency-group column.
    time_unit
        Needed when the time columns are not integers: a number (instants are
        ``floor(t / time_unit)``) or, for datetime columns, a duration such as ``"1s"``
        or a ``pd.Timedelta`` (instants are whole units since the Unix epoch in UTC). The
        archive keeps it as its :class:`~uncertain_cep.model.time_axis.TimeAxis`, with
        the datetimes' time zone (``t_lo`` and ``t_hi`` must share it).
    columns
        The input's names for the archive's columns, e.g. ``{"event_id": "reading_id",
        "t_lo": "start", "t_hi": "end"}`` (keys ``event_id``, ``t_lo``, ``t_hi``, ``t``;
        see :func:`~uncertain_cep.input_tables.check_column_mapping` for what is refused).
        Applied before validation; messages name the input's columns.
    check_unique_ids
        Refuse repeated event ids (default). An index's own events table was checked
        when it was built (and its checksum vouches for it since), so opening one skips
        this check: a tenth of the opening time at 10M events.
    numeric_text
        The plain text columns to read as numeric attributes (each value that is not a
        number a bad row); ``None`` (default): those where most values are numbers
        (:mod:`uncertain_cep.model.number_columns`). A build that sees the archive in
        parts (Spark's tasks) passes the decision it made over the whole input.
    renamed
        A ``columns=`` mapping the caller has already applied to ``source`` (the Spark
        build renames in Spark): nothing is renamed, but messages name those columns as
        the input does.
    """
    df = _load_frame(source)
    mapping = check_column_mapping(columns, df.columns)
    df = rename_columns(df, mapping)
    shown = ColumnLabels({**(renamed or {}), **mapping})
    if group_by in _RESERVED:
        raise InputError(f"group_by={group_by!r} names a reserved column; pick the column "
                         "that holds the dependency-group key")
    if "event_id" not in df.columns:
        raise InputError(f"the archive has no 'event_id' column (columns: {list(df.columns)}); "
                         "every event needs a unique event_id: if the input calls it "
                         "otherwise, pass columns={'event_id': '<its name>'}")
    if group_by not in df.columns:
        raise InputError(f"the archive has no {group_by!r} column (columns: "
                         f"{list(df.columns)}); pass group_by= to name the dependency-group "
                         "column")
    ids = _event_ids(df, shown, check_unique_ids)
    groups = df[group_by]
    missing_group = groups.isna().to_numpy()
    if missing_group.any():
        i = int(np.flatnonzero(missing_group)[0])
        raise InputError(f"event {_eid(ids[i])} (row {i}): column {group_by!r} is missing; "
                         "every event needs a dependency group", row=i)
    labels, group_of = _dense_codes(groups)
    t_lo, t_hi, time_axis = _time_columns(df, ids, time_unit, shown)
    numeric, categorical = _attributes(df, ids, group_by, numeric_text)
    return Archive(event_ids=ids, group_by=group_by, group_labels=labels,
                   group_of=group_of, t_lo=t_lo, t_hi=t_hi, numeric=numeric,
                   categorical=categorical, time_axis=time_axis)


def _eid(value: Any) -> str:
    """An event id as the user wrote it (numpy scalars shown as plain Python values)."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def _load_frame(source: pd.DataFrame | Any | str | os.PathLike[str]) -> pd.DataFrame:
    if is_arrow_stream(source):
        source = arrow_to_pandas(source)
    if isinstance(source, pd.DataFrame):
        if source.index.equals(pd.RangeIndex(len(source))):
            return source    # read only; reset_index would copy every column
        return source.reset_index(drop=True)
    if not isinstance(source, str | os.PathLike):
        raise not_a_table(source, "the archive",
                          f"{ACCEPTED_TABLES}, or the path of a Parquet or CSV file")
    path = os.fspath(source)
    if not os.path.exists(path):
        raise InputError(f"archive file {path!r} does not exist")
    try:
        if path.endswith(".csv"):
            return pd.read_csv(path)
        return pd.read_parquet(path)
    except (OSError, ValueError) as e:
        raise InputError(f"could not read archive {path!r}: {e}") from e


def _event_ids(df: pd.DataFrame, labels: ColumnLabels, check_unique: bool = True
               ) -> np.ndarray:
    col = df["event_id"]
    name = labels.quoted("event_id")
    missing = col.isna().to_numpy()
    if missing.any():
        i = int(np.flatnonzero(missing)[0])
        raise InputError(f"row {i}: column {name} is missing; every event needs a unique id",
                         row=i)
    if pd.api.types.is_bool_dtype(col):
        raise InputError(f"column {name} holds booleans; use int64 or string ids")
    if pd.api.types.is_integer_dtype(col):
        ids = _integer_ids(col)
    elif pd.api.types.is_float_dtype(col):
        values = col.to_numpy(dtype=float)
        # 2**63 as a float is the first value past int64: the cast would wrap it.
        bad = (values != np.round(values)) | (np.abs(values) >= 2.0**63)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"row {i}: {labels.plain('event_id')} {_eid(values[i])} is not an "
                             "integer within the int64 range; use integer or string ids",
                             row=i)
        ids = values.astype(np.int64)
    else:
        ids = text_values(col)
    if not check_unique:
        return ids
    dup = pd.Series(ids).duplicated(keep=False).to_numpy()
    if dup.any():
        rows = np.flatnonzero(dup)
        first = ids[rows[0]]
        where = [int(r) for r in rows if ids[r] == first]
        raise InputError(f"{labels.plain('event_id')} {_eid(first)} appears {len(where)} times "
                         f"(rows {where}); event ids must be unique in the archive")
    return ids


def _integer_ids(col: pd.Series) -> np.ndarray:
    """Integer ids as int64, or as uint64 when an unsigned column holds ids past int64's
    largest value (an int64 cast would wrap them into negative numbers): either way every
    id keeps its value, so answers give back the ids that went in."""
    if pd.api.types.is_unsigned_integer_dtype(col):
        values = col.to_numpy(dtype=np.uint64)
        if len(values) and values.max() > np.iinfo(np.int64).max:
            return values
        return values.astype(np.int64)
    return col.to_numpy(dtype=np.int64)


def _dense_codes(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    codes, uniques = pd.factorize(values, sort=True)
    labels = np.asarray(uniques, dtype=object)
    return labels, codes.astype(np.int64)


def _time_columns(df: pd.DataFrame, ids: np.ndarray, unit: float | str | pd.Timedelta | None,
                  labels: ColumnLabels) -> tuple[np.ndarray, np.ndarray, TimeAxis | None]:
    if "t_lo" in df.columns or "t_hi" in df.columns:
        for col, other in (("t_lo", "t_hi"), ("t_hi", "t_lo")):
            if col not in df.columns:
                raise InputError(f"the archive has t_lo/t_hi only in part: column {col!r} is "
                                 f"missing (its pair is column {labels.quoted(other)}); if "
                                 f"the input calls it otherwise, pass columns={{{col!r}: "
                                 "'<its name>'}")
        names = ["t_lo", "t_hi"]
    elif "t" in df.columns:
        names = ["t"]
    else:
        raise InputError(f"the archive has no time columns (columns: {list(df.columns)}): "
                         "give t_lo and t_hi (or t for certain times); if the input calls "
                         "them otherwise, pass columns={'t_lo': '<its name>', 't_hi': "
                         "'<its name>'}")
    for name in names:
        zones = _zones_of_datetimes(df[name])
        if len(zones) > 1:
            shown = labels.renamed.get(name, name)
            raise InputError(f"column {labels.quoted(name)} holds datetimes in several time "
                             f"zones ({', '.join(sorted(zones))}), so it has no one zone to "
                             f"answer in; convert it to one, e.g. pd.to_datetime(df[{shown!r}], "
                             "utc=True).dt.tz_convert('Europe/Paris')")
    axis = _time_axis(df, names, unit, labels)
    lo = _instants(df[names[0]], names[0], ids, unit, labels)
    hi = _instants(df[names[-1]], names[-1], ids, unit, labels) if len(names) == 2 else lo
    bad = lo > hi
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"event {_eid(ids[i])} (row {i}): {labels.plain('t_lo')} = {lo[i]} is "
                         f"greater than {labels.plain('t_hi')} = {hi[i]}; every event needs "
                         "t_lo <= t_hi", row=i)
    _check_span(lo, hi, ids, [labels.plain(n) for n in names])
    return lo, hi, axis


def _check_span(lo: np.ndarray, hi: np.ndarray, ids: np.ndarray, names: list[str]) -> None:
    """Refuse an archive whose instants span more than the query engine answers
    (:data:`~uncertain_cep.query.engine.kernels.instants.MAX_SPAN`, 2**60: 36.5 years of nanoseconds),
    naming its earliest and latest events."""
    if not len(lo):
        return
    first, last = int(np.argmin(lo)), int(np.argmax(hi))
    # In Python ints: the difference of two int64 instants may not fit in one.
    span = int(hi[last]) - int(lo[first])
    if span > MAX_SPAN:
        raise InputError(
            f"the archive spans {span} instants, from {names[0]} = {int(lo[first])} "
            f"(event {_eid(ids[first])}, row {first}) to {names[-1]} = {int(hi[last])} "
            f"(event {_eid(ids[last])}, row {last}), more than the {MAX_SPAN} (2**60) a "
            "query can answer exactly; pass a coarser time_unit= (e.g. '1us' instead of "
            "'1ns') or split the archive", row=last)


def _time_axis(df: pd.DataFrame, names: list[str], unit: float | str | pd.Timedelta | None,
               labels: ColumnLabels) -> TimeAxis | None:
    """What the instants will stand for: the unit, and for datetimes its length and the
    columns' time zone, which answers are given back in (so the columns must share it)."""
    if unit is None:
        return None
    dated = [n for n in names if pd.api.types.is_datetime64_any_dtype(df[n])]
    if not dated:
        return TimeAxis(str(unit))
    zones = {n: timezone_name(df[n].dtype, n) for n in dated}
    if len(dated) != len(names) or len(set(zones.values())) > 1:
        shown = ", ".join(f"{labels.plain(n)} is in {zones[n]}" if zones.get(n) else
                          f"{labels.plain(n)} is naive" if n in zones
                          else f"{labels.plain(n)} is not datetimes" for n in names)
        raise InputError(f"the time columns must be datetimes in one time zone (or all naive), "
                         f"since answers are given in it: {shown}; convert them with "
                         ".dt.tz_convert(...) or .dt.tz_localize(...)")
    return TimeAxis(str(unit), unit_ns=_step(unit, labels.quoted(dated[0])).value,
                    timezone=zones[dated[0]])


def _step(unit: float | str | pd.Timedelta, column: str) -> pd.Timedelta:
    """The length of one instant of a datetime column (``column``: as messages name it)."""
    # pandas reads a bare number as nanoseconds: time_unit=2 would silently mean 2 ns.
    if not isinstance(unit, (str, timedelta, np.timedelta64)):
        raise InputError(f"time_unit={unit!r} is a number but column {column} holds "
                         "datetimes; give a duration such as '1s', '100ms' or '1min'")
    try:
        step = pd.Timedelta(unit)
    except ValueError as e:
        raise InputError(f"time_unit={unit!r} is not a duration such as '1s', '100ms' or "
                         f"'1min': {e}") from e
    if step.value <= 0:
        raise InputError(f"time_unit must be a positive duration, got {unit!r}")
    return step


def _instants(col: pd.Series, name: str, ids: np.ndarray,
              unit: float | str | pd.Timedelta | None, labels: ColumnLabels) -> np.ndarray:
    column = labels.quoted(name)
    missing = col.isna().to_numpy()
    if missing.any():
        i = int(np.flatnonzero(missing)[0])
        raise InputError(f"event {_eid(ids[i])} (row {i}): column {column} is missing or NaN; "
                         "every event needs both time bounds", row=i)
    if pd.api.types.is_datetime64_any_dtype(col):
        if unit is None:
            raise InputError(f"column {column} holds datetimes; pass time_unit= (e.g. '1s') to "
                             "discretise time into integer instants")
        step = _step(unit, column)
        # Aware timestamps count from the epoch in UTC, not in their local wall clock.
        since = col.dt.tz_convert(None) if col.dt.tz is not None else col
        ns = (since - pd.Timestamp(0)).to_numpy(dtype="timedelta64[ns]").astype(np.int64)
        return np.floor_divide(ns, step.value)
    if pd.api.types.is_bool_dtype(col) or not pd.api.types.is_numeric_dtype(col):
        raise InputError(f"column {column} has type {col.dtype}; time bounds must be integer "
                         "instants, numbers with time_unit=, or datetimes with time_unit=")
    if unit is not None:
        if isinstance(unit, (str, pd.Timedelta)):
            raise InputError(f"time_unit={unit!r} is a duration but column {column} is numeric; "
                             "give a number")
        if not 0 < unit < math.inf:
            raise InputError(f"time_unit must be a positive finite number, got {unit!r}: "
                             "instants are floor(t / time_unit)")
        scaled = np.floor(col.to_numpy(dtype=float) / float(unit))
        bad = ~np.isfinite(scaled) | (np.abs(scaled) >= 2.0**62)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"event {_eid(ids[i])} (row {i}): column {column} = "
                             f"{_eid(col.iloc[i])} is not a finite time within the int64 "
                             "range of instants once divided by time_unit", row=i)
        return scaled.astype(np.int64)
    if pd.api.types.is_integer_dtype(col):
        return col.to_numpy(dtype=np.int64)
    values = col.to_numpy(dtype=float)
    bad = ~np.isfinite(values) | (values != np.round(values)) | (np.abs(values) >= 2.0**62)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"event {_eid(ids[i])} (row {i}): column {column} = {_eid(values[i])} is "
                         "not an integer instant; pass time_unit= to discretise time", row=i)
    return values.astype(np.int64)


def _zones_of_datetimes(col: pd.Series) -> set[str]:
    """The time zones of a column of datetime objects (pandas keeps one that mixes zones
    as objects), ``"naive"`` for those without; empty for any other column."""
    if not pd.api.types.is_object_dtype(col):
        return set()
    values = col.dropna()
    if not len(values) or not all(isinstance(v, datetime) for v in values):
        return set()
    return {str(v.tzinfo) if v.tzinfo is not None else "naive" for v in values}


def _attributes(df: pd.DataFrame, ids: np.ndarray, group_by: str,
                numeric_text: Collection[str] | None = None
                ) -> tuple[dict[str, NumericAttribute], dict[str, np.ndarray]]:
    columns = [c for c in df.columns if c not in _RESERVED and c != group_by]
    for c in columns:
        if not isinstance(c, str):
            raise InputError(f"column name {c!r} is not a string")
        if c.startswith("_uc_"):
            raise InputError(f"column {c!r} uses the prefix '_uc_', which the index reserves "
                             "for its own columns; rename it")
    taken: set[str] = set()
    numeric: dict[str, NumericAttribute] = {}
    categorical: dict[str, np.ndarray] = {}
    for c in columns:
        if c.endswith("_lo"):
            base = c[:-3]
            if f"{base}_hi" not in df.columns:
                raise InputError(f"column {c!r} has no matching {base}_hi column; give both "
                                 "bounds of the attribute range")
            numeric[base] = _numeric_range(df, ids, base)
            taken.update(f"{base}{s}" for s in ("_lo", "_hi", "_mu", "_sigma"))
    for c in columns:
        if c in taken:
            continue
        if c in numeric:
            raise InputError(f"attribute {c!r} is given twice: as column {c!r} and as the "
                             f"range {c}_lo/{c}_hi; keep one of them (a point value x is the "
                             "range x_lo = x_hi = x)")
        for suffix in ("_hi", "_mu", "_sigma"):
            if c.endswith(suffix) and f"{c[:-len(suffix)]}_lo" not in df.columns:
                raise InputError(f"column {c!r} has no matching {c[:-len(suffix)]}_lo column")
        col = df[c]
        if pd.api.types.is_bool_dtype(col) or not (pd.api.types.is_numeric_dtype(col)
                                                   or _is_text(col)):
            raise InputError(f"column {c!r} has type {col.dtype}; attributes must be numeric "
                             "or strings")
        if pd.api.types.is_numeric_dtype(col) or (
                mostly_numbers(col) if numeric_text is None else c in numeric_text):
            values = _finite(col, c, ids)
            numeric[c] = NumericAttribute(c, values, values.copy())
        else:
            missing = col.isna().to_numpy()
            if missing.any():
                i = int(np.flatnonzero(missing)[0])
                raise InputError(f"event {_eid(ids[i])} (row {i}): column {c!r} is missing", row=i)
            categorical[c] = text_values(col)
    clash = set(numeric) & set(categorical)
    if clash:
        raise InputError(f"attribute {sorted(clash)[0]!r} is given both as a range and as a "
                         "single column")
    return numeric, categorical


def text_values(col: pd.Series) -> np.ndarray:
    """A text column (event ids, a categorical attribute) as an object array of str.

    >>> text_values(pd.Series(["a", "b"])).tolist()
    ['a', 'b']
    """
    return col.astype(str).to_numpy(dtype=object)


def _is_text(col: pd.Series) -> bool:
    return bool(pd.api.types.is_string_dtype(col) or pd.api.types.is_object_dtype(col)
                or isinstance(col.dtype, pd.CategoricalDtype))


def _finite(col: pd.Series, name: str, ids: np.ndarray) -> np.ndarray:
    if is_plain_text(col):
        # Numbers read as text (one bad value in a CSV column): each other value is a bad row.
        col = as_numbers(col, name, ids, required=name.endswith(("_lo", "_hi")))
    if not pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
        raise InputError(f"column {name!r} has type {col.dtype}; it must be numeric")
    values = col.to_numpy(dtype=float)
    bad = ~np.isfinite(values)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"event {_eid(ids[i])} (row {i}): column {name!r} is missing, NaN or "
                         "infinite", row=i)
    return values


def _numeric_range(df: pd.DataFrame, ids: np.ndarray, base: str) -> NumericAttribute:
    lo = _finite(df[f"{base}_lo"], f"{base}_lo", ids)
    hi = _finite(df[f"{base}_hi"], f"{base}_hi", ids)
    bad = lo > hi
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"event {_eid(ids[i])} (row {i}): {base}_lo = {lo[i]} is greater than "
                         f"{base}_hi = {hi[i]}; a range needs lo <= hi", row=i)
    has_mu, has_sigma = f"{base}_mu" in df.columns, f"{base}_sigma" in df.columns
    if has_mu != has_sigma:
        present, absent = ((f"{base}_mu", f"{base}_sigma") if has_mu
                           else (f"{base}_sigma", f"{base}_mu"))
        raise InputError(f"column {present!r} needs a {absent!r} column too (truncated normal)")
    if not has_mu:
        return NumericAttribute(base, lo, hi)
    mu = df[f"{base}_mu"].to_numpy(dtype=float)
    sigma = df[f"{base}_sigma"].to_numpy(dtype=float)
    for name, values, other in ((f"{base}_mu", mu, sigma), (f"{base}_sigma", sigma, mu)):
        half = np.isnan(values) & ~np.isnan(other)
        if half.any():
            i = int(np.flatnonzero(half)[0])
            raise InputError(f"event {_eid(ids[i])} (row {i}): column {name!r} is NaN while its "
                             "pair is set; give both (normal) or neither (uniform)", row=i)
        inf = np.isinf(values)
        if inf.any():
            i = int(np.flatnonzero(inf)[0])
            raise InputError(f"event {_eid(ids[i])} (row {i}): column {name!r} is infinite", row=i)
    bad_sigma = ~np.isnan(sigma) & (sigma <= 0)
    if bad_sigma.any():
        i = int(np.flatnonzero(bad_sigma)[0])
        raise InputError(f"event {_eid(ids[i])} (row {i}): {base}_sigma = {sigma[i]} must be > 0", row=i)
    return NumericAttribute(base, lo, hi, mu, sigma)
