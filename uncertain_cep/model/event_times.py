"""An archive's time bounds as integer instants, and the time axis they stand for.

:func:`~uncertain_cep.model.events.read_archive` hands this module the time columns
(``t_lo``/``t_hi``, or ``t`` for events whose time is certain). Integers are instants as
they are; other numbers need ``time_unit=`` (instants are ``floor(t / time_unit)``);
datetimes need a duration (instants are whole units since the Unix epoch in UTC), and
their time zone, which answers are given back in, is recorded in the
:class:`~uncertain_cep.model.time_axis.TimeAxis`. Bad values raise
:class:`~uncertain_cep.errors.InputError` naming the event, the row and the column.

>>> import pandas as pd
>>> from uncertain_cep.input_tables import ColumnLabels
>>> df = pd.DataFrame({"t_lo": [1.0, 4.5], "t_hi": [2.0, 5.0]})
>>> lo, hi, axis = time_columns(df, np.array([1, 2]), 0.5, ColumnLabels({}))
>>> lo.tolist(), hi.tolist(), axis.time_unit
([2, 9], [4, 10], '0.5')
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

import numpy as np
import pandas as pd

from uncertain_cep.errors import InputError
from uncertain_cep.input_tables import ColumnLabels
from uncertain_cep.model.time_axis import MAX_SPAN, TimeAxis, timezone_name
from uncertain_cep.model.values import as_written

__all__ = ["time_columns", "unit_step"]


def time_columns(df: pd.DataFrame, ids: np.ndarray, unit: float | str | pd.Timedelta | None,
                 labels: ColumnLabels) -> tuple[np.ndarray, np.ndarray, TimeAxis | None]:
    """``(t_lo, t_hi, time axis)`` of an archive's rows as int64 instants (``ids``: their
    event ids, ``labels``: the input's column names, for messages)."""
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
        raise InputError(f"event {as_written(ids[i])} (row {i}): {labels.plain('t_lo')} = "
                         f"{lo[i]} is greater than {labels.plain('t_hi')} = {hi[i]}; every "
                         "event needs t_lo <= t_hi", row=i)
    _check_span(lo, hi, ids, [labels.plain(n) for n in names])
    return lo, hi, axis


def _check_span(lo: np.ndarray, hi: np.ndarray, ids: np.ndarray, names: list[str]) -> None:
    """Refuse an archive whose instants span more than the query engine answers
    (:data:`~uncertain_cep.query.engine.kernels.instants.MAX_SPAN`, 2**60: 36.5 years of
    nanoseconds), naming its earliest and latest events."""
    if not len(lo):
        return
    first, last = int(np.argmin(lo)), int(np.argmax(hi))
    # In Python ints: the difference of two int64 instants may not fit in one.
    span = int(hi[last]) - int(lo[first])
    if span > MAX_SPAN:
        raise InputError(
            f"the archive spans {span} instants, from {names[0]} = {int(lo[first])} "
            f"(event {as_written(ids[first])}, row {first}) to {names[-1]} = {int(hi[last])} "
            f"(event {as_written(ids[last])}, row {last}), more than the {MAX_SPAN} (2**60) a "
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
    return TimeAxis(str(unit), unit_ns=unit_step(unit, labels.quoted(dated[0])).value,
                    timezone=zones[dated[0]])


def unit_step(unit: float | str | pd.Timedelta, column: str) -> pd.Timedelta:
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
        raise InputError(f"event {as_written(ids[i])} (row {i}): column {column} is missing "
                         "or NaN; every event needs both time bounds", row=i)
    if pd.api.types.is_datetime64_any_dtype(col):
        if unit is None:
            raise InputError(f"column {column} holds datetimes; pass time_unit= (e.g. '1s') to "
                             "discretise time into integer instants")
        step = unit_step(unit, column)
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
            raise InputError(f"event {as_written(ids[i])} (row {i}): column {column} = "
                             f"{as_written(col.iloc[i])} is not a finite time within the int64 "
                             "range of instants once divided by time_unit", row=i)
        return scaled.astype(np.int64)
    if pd.api.types.is_integer_dtype(col):
        return col.to_numpy(dtype=np.int64)
    values = col.to_numpy(dtype=float)
    bad = ~np.isfinite(values) | (values != np.round(values)) | (np.abs(values) >= 2.0**62)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"event {as_written(ids[i])} (row {i}): column {column} = "
                         f"{as_written(values[i])} is not an integer instant; pass "
                         "time_unit= to discretise time", row=i)
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
