"""Situations: maximal runs of point events satisfying a symbol's condition (SEMANTICS B1).

TPStream section 4.3 (Definitions 6-8) and 5.1 (Algorithm 1), over a whole table at once:
per partition key, every maximal run of consecutive events satisfying the condition is
one situation, ``ts`` its first event's time, ``te`` the time of the first event after it;
a run still true at the partition's last event ends ``tick`` after that event and is
flagged ``open_end``. Duration bounds keep situations with ``te - ts`` in range.

Each symbol's table has the partition columns, ``ts``, ``te``, ``open_end`` and one column
per aggregate RETURN needs (:attr:`uncertain_cep.interval.patterns.ReturnItem.source_column`),
sorted by (partition, ts).

>>> import pandas as pd
>>> from uncertain_cep.interval.language import parse_temporal_query
>>> q = parse_temporal_query("PARTITION BY car DEFINE A AS v > 5 AT LEAST 2, B AS v < 0 "
...                          "PATTERN A meets B RETURN max(A.v) AS top")
>>> events = pd.DataFrame({"car": [1, 1, 1, 1, 1, 2, 2], "time": [0, 1, 3, 4, 6, 0, 5],
...                        "v": [1, 7, 9, -1, 6, 8, 9]})
>>> derive_situations(events, q)["A"]
   car  ts  te  open_end  max_v
0    1   1   4     False      9
1    2   0   6      True      9

Car 1's last run ``[6, 7)`` (open, ended one tick after its event) is one instant long
and fails ``AT LEAST 2``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd

from uncertain_cep.errors import InputError, QueryError
from uncertain_cep.interval.patterns import Aggregate, TemporalPattern
from uncertain_cep.interval.tables import is_lexsorted, plain_numbers

__all__ = ["SITUATION_COLUMNS", "derive_situations", "situations_from_intervals"]

#: Columns every situation table has after its partition columns.
SITUATION_COLUMNS = ("ts", "te", "open_end")


def derive_situations(events: pd.DataFrame, pattern: TemporalPattern, *,
                      time_column: str = "time", time_unit: float | str | None = None,
                      tick: float = 1) -> dict[str, pd.DataFrame]:
    """Every symbol's situations in point events ``events`` (SEMANTICS B1).

    Parameters
    ----------
    events : DataFrame
        One row per point event: ``time_column``, the PARTITION BY columns and every
        column the conditions and RETURN read. Rows may come in any order; they are
        sorted by (partition, time).
    pattern : TemporalPattern
        Its DEFINE clause is used (conditions, duration bounds) and RETURN's aggregates.
    time_unit : float or str, optional
        Seconds per unit of ``time_column`` (or text such as ``"1ms"``); needed only when
        the query writes durations with units.
    tick : number
        One time unit of the data: an open run ends ``tick`` after its last event.

    Raises
    ------
    InputError
        A missing time column, two events of one partition at the same time (their order
        would be undefined), a missing or non-finite time, a NaN partition key or a NaN in
        a column a condition reads; the message names the row (0-based position).
    QueryError
        A column named by the query that the data lacks, or an aggregate that cannot apply.
    """
    pattern = pattern.resolve_units(time_unit)
    tick = _check_tick(tick)
    _check_point_events(events, time_column, pattern)
    keys = list(pattern.partition_by)
    # Work on column arrays in (partition, time) order, never on a copy of the whole table:
    # conditions are evaluated on the table as given and their masks put in order.
    order = _sort_order(events, keys, time_column)

    def ordered(values: np.ndarray) -> np.ndarray:
        return values if order is None else values[order]

    times = ordered(events[time_column].to_numpy())
    first = _partition_starts(events, keys, order)
    _check_distinct_times(times, first, order, time_column)
    last = np.append(first[1:], True) if len(first) else first
    out = {}
    for definition in pattern.symbols:
        mask = ordered(definition.condition.evaluate(events))
        starts = mask & (first | ~np.r_[False, mask[:-1]])
        ends = mask & (last | ~np.r_[mask[1:], False])
        start_at, end_at = np.flatnonzero(starts), np.flatnonzero(ends)
        open_end = last[end_at]
        # The event after a closed run is in the same partition; clip only for open runs.
        after = np.minimum(end_at + 1, len(times) - 1)
        source = start_at if order is None else order[start_at]
        table = pd.DataFrame({key: events[key].iloc[source].reset_index(drop=True)
                              for key in keys})
        table["ts"] = times[start_at]
        table["te"] = np.where(open_end, times[end_at] + tick, times[after])
        table["open_end"] = open_end
        for aggregate, column in pattern.aggregates_of(definition.name):
            table[f"{aggregate.value}_{column}"] = _aggregate(
                events[column], ordered, start_at, end_at, aggregate, column)
        out[definition.name] = _within_bounds(table, pattern, definition.name)
    return out


def situations_from_intervals(intervals: pd.DataFrame, pattern: TemporalPattern, *,
                              symbol_column: str = "symbol",
                              time_unit: float | str | None = None) -> dict[str, pd.DataFrame]:
    """Situations given directly as interval events (SEMANTICS B1, last sentence).

    ``intervals`` has columns ``ts``, ``te`` (``ts < te``), ``symbol_column``, the
    PARTITION BY columns and optionally ``open_end``. Rows of symbols the pattern does not
    define are ignored; the definitions' conditions are not evaluated (the rows are the
    situations) but their duration bounds apply. An aggregate RETURN asks for is read from
    the column ``<aggregate>_<column>`` (e.g. ``avg_speed``) or, failing that, from
    ``<column>`` itself, taken as the situation's one value (``count`` is then 1).

    >>> import pandas as pd
    >>> from uncertain_cep.interval.language import parse_temporal_query
    >>> q = parse_temporal_query("DEFINE A AS x > 0, B AS x < 0 PATTERN A before B")
    >>> rows = pd.DataFrame({"ts": [5, 0], "te": [7, 2], "symbol": ["A", "A"]})
    >>> situations_from_intervals(rows, q)["A"]
       ts  te  open_end
    0   0   2     False
    1   5   7     False

    Raises
    ------
    InputError
        Missing columns, ``ts >= te`` or a NaN time, or two situations of one symbol and
        partition that overlap (SEMANTICS B1: they never do), naming the rows.
    """
    pattern = pattern.resolve_units(time_unit)
    keys = list(pattern.partition_by)
    _check_output_names(pattern)
    _require_columns(intervals, ["ts", "te", symbol_column, *keys], "interval events")
    frame = intervals.reset_index(drop=True)
    for name in ("ts", "te"):
        _check_times(frame, name)
    bad = np.flatnonzero(~(frame["ts"].to_numpy() < frame["te"].to_numpy()))
    if len(bad):
        raise InputError(f"row {bad[0]}: ts {frame['ts'].iloc[bad[0]]} is not before te "
                         f"{frame['te'].iloc[bad[0]]}", row=int(bad[0]))
    _check_keys(frame, keys)
    out = {}
    for name in pattern.symbol_names:
        rows = frame[frame[symbol_column] == name]
        order = _sort_order(rows, keys, "ts")
        rows = rows if order is None else rows.iloc[order]
        positions = rows.index.to_numpy()
        rows = rows.reset_index(drop=True)
        first = _partition_starts(rows, keys, None)
        ts, te = rows["ts"].to_numpy(), rows["te"].to_numpy()
        overlap = np.flatnonzero(~first[1:] & (ts[1:] < te[:-1]))
        if len(overlap):
            a, b = positions[overlap[0]], positions[overlap[0] + 1]
            raise InputError(f"rows {a} and {b}: two situations of {name} in one partition "
                             "overlap; situations of one symbol never do", row=int(b))
        table = rows[keys].copy()
        table["ts"], table["te"] = ts, te
        table["open_end"] = (rows["open_end"].to_numpy(dtype=bool) if "open_end" in rows
                             else np.zeros(len(rows), dtype=bool))
        for aggregate, column in pattern.aggregates_of(name):
            source = f"{aggregate.value}_{column}"
            if source in rows:
                table[source] = rows[source].to_numpy()
            elif column in rows:
                values = rows[column]
                table[source] = (values.notna().astype(int).to_numpy()
                                 if aggregate is Aggregate.count else values.to_numpy())
            else:
                raise InputError(f"{aggregate.value}({name}.{column}): the interval events "
                                 f"have neither a column {source!r} nor {column!r}")
        out[name] = _within_bounds(table, pattern, name)
    return out


def _check_tick(tick: object) -> int | float:
    if isinstance(tick, bool) or not isinstance(tick, (int, float, np.integer, np.floating)) \
            or not (math.isfinite(tick) and tick > 0):
        raise InputError(f"tick (one time unit of the data) must be a positive number, "
                         f"got {tick!r}")
    # An int stays an int, so integer times stay integers.
    return tick.item() if isinstance(tick, (np.integer, np.floating)) else tick


def _require_columns(frame: pd.DataFrame, columns: list[str], what: str) -> None:
    if not isinstance(frame, pd.DataFrame):
        raise InputError(f"{what} must be a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in dict.fromkeys(columns) if c not in frame.columns]
    if missing:
        raise InputError(f"the {what} lack column(s) {', '.join(map(repr, missing))}; "
                         f"columns: {', '.join(map(str, frame.columns))}")


def _check_point_events(events: pd.DataFrame, time_column: str,
                        pattern: TemporalPattern) -> None:
    _require_columns(events, [time_column], "point events")
    named = [*pattern.partition_by,
             *(c for s in pattern.symbols for c in sorted(s.condition.columns)),
             *(r.column for r in pattern.returns)]
    missing = [c for c in dict.fromkeys(named) if c not in events.columns]
    if missing:
        raise QueryError(f"the query reads column(s) {', '.join(map(repr, missing))} that the "
                         f"data lacks; columns: {', '.join(map(str, events.columns))}")
    _check_output_names(pattern)
    _check_times(events, time_column)
    _check_keys(events, list(pattern.partition_by))
    for column in dict.fromkeys(c for s in pattern.symbols for c in sorted(s.condition.columns)):
        nan = np.flatnonzero(events[column].isna().to_numpy())
        if len(nan):
            raise InputError(f"row {nan[0]}, column {column!r}: missing value (NaN) in a "
                             "column a condition reads", row=int(nan[0]))
    for item in pattern.returns:
        if item.aggregate in (Aggregate.avg, Aggregate.sum) and not \
                pd.api.types.is_numeric_dtype(events[item.column]):
            raise QueryError(f"{item}: column {item.column} is not numeric")


def _check_output_names(pattern: TemporalPattern) -> None:
    """A situation table's columns must not collide (say, a partition column ``ts``)."""
    names = [*pattern.partition_by, *SITUATION_COLUMNS,
             *dict.fromkeys(r.source_column for r in pattern.returns)]
    clash = sorted({n for n in names if names.count(n) > 1})
    if clash:
        raise QueryError(f"column name(s) {', '.join(clash)} would appear twice in a situation "
                         f"table (partition columns, {', '.join(SITUATION_COLUMNS)} and "
                         "<aggregate>_<column> per RETURN aggregate); rename the data's columns")


def _check_times(frame: pd.DataFrame, column: str) -> None:
    values = frame[column]
    if pd.api.types.is_bool_dtype(values) or not pd.api.types.is_numeric_dtype(values):
        raise InputError(f"column {column!r} must hold numbers (instants in the data's unit), "
                         f"got dtype {values.dtype}")
    if pd.api.types.is_integer_dtype(values) and not values.hasnans:
        return  # integers are finite
    bad = np.flatnonzero(~np.isfinite(values.to_numpy(dtype=float, na_value=np.nan)))
    if len(bad):
        raise InputError(f"row {bad[0]}, column {column!r}: the time is missing or not "
                         "finite", row=int(bad[0]))


def _check_keys(frame: pd.DataFrame, keys: list[str]) -> None:
    for key in keys:
        nan = np.flatnonzero(frame[key].isna().to_numpy())
        if len(nan):
            raise InputError(f"row {nan[0]}, column {key!r}: missing partition key",
                             row=int(nan[0]))


def _sort_order(frame: pd.DataFrame, keys: list[str], time_column: str) -> np.ndarray | None:
    """Positions of ``frame``'s rows sorted by (keys, time), stable; ``None`` if they
    already are (an archive partitioned by key usually is: no copy then)."""
    columns = [frame[name] for name in [*keys, time_column]]
    if all(plain_numbers(c) for c in columns):
        arrays = [c.to_numpy() for c in columns]
        if is_lexsorted(arrays):
            return None
        return np.lexsort(arrays[::-1])
    # Strings, categoricals (sorted by their categories' order), nullable types: pandas.
    ordered = frame.reset_index(drop=True)[[*keys, time_column]].sort_values(
        [*keys, time_column], kind="stable")
    return ordered.index.to_numpy()


def _partition_starts(frame: pd.DataFrame, keys: list[str],
                      order: np.ndarray | None) -> np.ndarray:
    """Whether each row, in sorted order, is its partition's first."""
    first = np.ones(len(frame), dtype=bool)
    if not len(frame):
        return first
    first[1:] = False
    for key in keys:
        column = frame[key]
        # Equal values have equal factorize codes, whatever the dtype.
        values = column.to_numpy() if plain_numbers(column) else pd.factorize(column)[0]
        values = values if order is None else values[order]
        first[1:] |= values[1:] != values[:-1]
    return first


def _check_distinct_times(times: np.ndarray, first: np.ndarray, order: np.ndarray | None,
                          time_column: str) -> None:
    same = np.flatnonzero(~first[1:] & (times[1:] == times[:-1]))
    if len(same):
        at = (same[0], same[0] + 1) if order is None else (order[same[0]], order[same[0] + 1])
        a, b = sorted(map(int, at))
        raise InputError(f"rows {a} and {b}: two events of one partition at {time_column} "
                         f"{times[same[0]]}; events of a partition need distinct times "
                         "(their order defines the runs)", row=b)


def _aggregate(values: pd.Series, ordered: Callable[[np.ndarray], np.ndarray],
               start_at: np.ndarray, end_at: np.ndarray, aggregate: Aggregate,
               column: str) -> np.ndarray:
    """``aggregate`` of ``values`` over each run's events (TPStream Definition 6).

    Runs are contiguous in sorted order, so every aggregate is one ``reduceat`` over the
    run boundaries. Missing values are skipped, as in SQL (and pandas): a run of only
    missing values has count 0, sum 0 and NaN for the others.
    """
    if aggregate in (Aggregate.first, Aggregate.last):
        array = values.to_numpy()
        at = start_at if aggregate is Aggregate.first else end_at
        return ordered(array)[at] if len(at) else array[:0]
    if not plain_numbers(values):
        return _aggregate_by_pandas(ordered(values.to_numpy()), start_at, end_at,
                                    aggregate, column)
    array = ordered(values.to_numpy())
    if not len(start_at):
        kind = {Aggregate.count: np.int64, Aggregate.avg: np.float64}.get(aggregate)
        return np.zeros(0, dtype=kind or array.dtype)
    # reduceat over [start, end + 1) pairs; the pairs' second halves are discarded.
    bounds = np.ravel(np.column_stack([start_at, end_at + 1]))
    if bounds[-1] == len(array):
        bounds = bounds[:-1]
    present = ~np.isnan(array) if array.dtype.kind == "f" else None

    def per_run(ufunc: np.ufunc, data: np.ndarray) -> np.ndarray:
        return ufunc.reduceat(data, bounds)[::2]

    count = (per_run(np.add, present.astype(np.int64)) if present is not None
             else end_at - start_at + 1)
    if aggregate is Aggregate.count:
        return np.asarray(count, dtype=np.int64)
    if aggregate is Aggregate.min:
        return per_run(np.fmin, array)
    if aggregate is Aggregate.max:
        return per_run(np.fmax, array)
    total = per_run(np.add, array if present is None else np.where(present, array, 0))
    if aggregate is Aggregate.sum:
        return total
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def _aggregate_by_pandas(array: np.ndarray, start_at: np.ndarray, end_at: np.ndarray,
                         aggregate: Aggregate, column: str) -> np.ndarray:
    """Aggregates of strings, nullable or other non-float columns, by pandas' groupby."""
    run = np.repeat(np.arange(len(start_at)), end_at - start_at + 1)
    picked = np.concatenate([np.arange(s, e + 1) for s, e in zip(start_at, end_at)]) \
        if len(start_at) else np.zeros(0, dtype=np.intp)
    grouped = pd.Series(array[picked]).groupby(run, sort=True)
    function = {Aggregate.min: "min", Aggregate.max: "max", Aggregate.avg: "mean",
                Aggregate.sum: "sum", Aggregate.count: "count"}[aggregate]
    try:
        result = grouped.agg(function)
    except TypeError as error:
        raise QueryError(f"{aggregate.value}(...{column}): {error}") from None
    return result.reindex(np.arange(len(start_at))).to_numpy()


def _within_bounds(table: pd.DataFrame, pattern: TemporalPattern, name: str) -> pd.DataFrame:
    definition = pattern.symbol(name)
    duration = table["te"].to_numpy() - table["ts"].to_numpy()
    keep = np.ones(len(table), dtype=bool)
    if definition.min_duration is not None:
        keep &= duration >= definition.min_duration.value
    if definition.max_duration is not None:
        keep &= duration <= definition.max_duration.value
    return table[keep].reset_index(drop=True)
