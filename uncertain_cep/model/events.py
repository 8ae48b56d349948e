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
nothing is dropped or clipped. The time columns are read by
:mod:`~uncertain_cep.model.event_times`, the attributes by
:mod:`~uncertain_cep.model.attributes`; this module checks the ids and groups and puts the
:class:`Archive` together.

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

import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
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
from uncertain_cep.model.attributes import (
    RESERVED_COLUMNS,
    NumericAttribute,
    read_attributes,
    text_values,
)
from uncertain_cep.model.event_times import time_columns
from uncertain_cep.model.instant_weights import (
    WEIGHT_COLUMNS,
    InstantWeights,
    read_instant_weights,
)
from uncertain_cep.model.time_axis import TimeAxis
from uncertain_cep.model.values import as_written

__all__ = ["Archive", "canonical_order", "canonical_rank", "read_archive"]


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
    # Per event, a weight per instant (SEMANTICS A6); None: every instant of every
    # interval equally likely.
    instant_weights: InstantWeights | None = None

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

    def take_rows(self, rows: np.ndarray) -> Archive:
        """The archive of the given rows (in that order), its groups those the rows hold,
        coded by rank among them as :func:`read_archive` codes them; the time axis is
        kept, so instants mean what they meant here."""
        rows = np.asarray(rows, dtype=np.int64)
        present, group_of = np.unique(self.group_of[rows], return_inverse=True)
        numeric = {name: replace(attr, lo=attr.lo[rows], hi=attr.hi[rows],
                                 mu=None if attr.mu is None else attr.mu[rows],
                                 sigma=None if attr.sigma is None else attr.sigma[rows])
                   for name, attr in self.numeric.items()}
        return replace(self, event_ids=self.event_ids[rows],
                       group_labels=self.group_labels[present],
                       group_of=group_of.astype(self.group_of.dtype, copy=False),
                       t_lo=self.t_lo[rows], t_hi=self.t_hi[rows], numeric=numeric,
                       categorical={k: v[rows] for k, v in self.categorical.items()},
                       instant_weights=(None if self.instant_weights is None
                                        else self.instant_weights.take(rows)))

    def describe_event(self, i: int) -> str:
        return f"event {as_written(self.event_ids[i])}"

    def to_frame(self) -> pd.DataFrame:
        """The archive as a DataFrame in the input layout (time already discretised)."""
        return pd.DataFrame(self.columns())

    def columns(self) -> dict[str, np.ndarray]:
        """The columns of :meth:`to_frame`, by name, as arrays."""
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
        if self.instant_weights is not None:
            cols.update(self.instant_weights.stored_columns())
        return cols


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
                 renamed: Mapping[str, str] | None = None,
                 weighted: bool = False) -> Archive:
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
    weighted
        Read instant weights (``t_mu``/``t_sigma`` or ``t_weights``, SEMANTICS A6) into
        :attr:`Archive.instant_weights`, which the in-process index weighs its OIs by.
        Off (default; the Spark build's reader): an archive that gives them is refused
        once they are checked, since the Spark build does not weigh OIs yet.
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
    if group_by in RESERVED_COLUMNS:
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
        raise InputError(f"event {as_written(ids[i])} (row {i}): column {group_by!r} is missing; "
                         "every event needs a dependency group", row=i)
    labels, group_of = _dense_codes(groups)
    t_lo, t_hi, time_axis = time_columns(df, ids, time_unit, shown)
    weights = read_instant_weights(df, ids, t_lo, t_hi, time_unit, shown)
    if weights is not None and not weighted:
        # Checked (each error names its event and column), but the Spark build does not
        # weigh OIs yet: answering as if the instants were equally likely would be wrong.
        given = ", ".join(shown.quoted(c) for c in WEIGHT_COLUMNS if c in df.columns)
        raise InputError(f"the archive gives its instants weights ({given}; SEMANTICS "
                         "A6), which the Spark build cannot weigh possible worlds by yet: "
                         "build the index in process (uc.build_index, or --engine local "
                         "on the command line), or drop the "
                         "column(s) to answer with every instant of an interval equally "
                         "likely")
    numeric, categorical = read_attributes(df, ids, group_by, numeric_text)
    if weights is not None and not weights.weighted.any():
        weights = None          # null in every row: equal weights, as without the columns
    return Archive(event_ids=ids, group_by=group_by, group_labels=labels,
                   group_of=group_of, t_lo=t_lo, t_hi=t_hi, numeric=numeric,
                   categorical=categorical, time_axis=time_axis, instant_weights=weights)


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
            raise InputError(f"row {i}: {labels.plain('event_id')} {as_written(values[i])} is not an "
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
        raise InputError(f"{labels.plain('event_id')} {as_written(first)} appears {len(where)} times "
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
