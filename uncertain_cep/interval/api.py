"""``uc.match``: temporal pattern queries over point or interval events (SEMANTICS B, C).

One call turns a table into situations and matches a part-B query on them with an
engine: ``join`` (TPStream 5.2 and 5.4: range joins on sorted endpoints, the default),
``automata`` (Chen et al. 3.2-3.3: one automaton per related pair, pair results joined)
or ``brute_force`` (every combination; the reference, for small inputs). All three give
the same answer.

The kind of input is read from its columns:

* **point events** if it has ``time_column`` (default ``time``): each symbol's situations
  are the maximal runs of events satisfying its DEFINE condition (SEMANTICS B1);
* **interval events** otherwise, if it has ``ts``, ``te`` and ``symbol_column`` (default
  ``symbol``): each row is a situation of the symbol it names (DEFINE's conditions are not
  evaluated, its duration bounds apply), as
  :func:`~uncertain_cep.interval.situations.situations_from_intervals` reads them.

FROM is optional and ignored (the table is the source); PARTITION BY names the columns
that split the data into independent partitions (none: one partition).

>>> import pandas as pd
>>> events = pd.DataFrame({"time": range(8), "x": [1, 1, 0, 0, 1, 0, 0, 0]})
>>> match(events, "DEFINE A AS x = 1, B AS x = 0 PATTERN A meets B")
   A_ts  A_te  B_ts  B_te  detected_at
0     0     2     2     4            2
1     4     5     5     8            5
>>> match(events, "DEFINE A AS x = 1, B AS x = 0 PATTERN A meets B", engine="automaton")
Traceback (most recent call last):
...
uncertain_cep.errors.InvalidOptionError: 'automaton' is not a valid match engine; ...
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any, Protocol

import numpy as np
import pandas as pd

from uncertain_cep.errors import InputError, ParamEnum, QueryError
from uncertain_cep.grammar import located
from uncertain_cep.input_tables import (
    ACCEPTED_TABLES,
    arrow_to_pandas,
    is_arrow_stream,
    not_a_table,
)
from uncertain_cep.interval.automata_join import match_automata
from uncertain_cep.interval.brute_force import match_brute_force
from uncertain_cep.interval.join import match_join
from uncertain_cep.interval.language import parse_temporal_query, plain_duration_positions
from uncertain_cep.interval.patterns import TemporalPattern, seconds_per_unit
from uncertain_cep.interval.situations import derive_situations, situations_from_intervals

__all__ = ["ENGINES", "Engine", "MatchEngine", "match"]


class MatchEngine(ParamEnum):
    """Valid values of ``engine=``: how :func:`match` finds the matches; every engine gives
    the same answer."""

    join = "join"
    automata = "automata"
    brute_force = "brute_force"


class Engine(Protocol):
    """A matcher: every match of a pattern among situations (SEMANTICS B3)."""

    __name__: str

    def __call__(self, situations: Mapping[str, pd.DataFrame], pattern: TemporalPattern, *,
                 time_unit: float | str | None = None) -> pd.DataFrame: ...


ENGINES: dict[MatchEngine, Engine] = {
    MatchEngine.join: match_join,
    MatchEngine.automata: match_automata,
    MatchEngine.brute_force: match_brute_force,
}


def match(data: pd.DataFrame | Any, query: str | TemporalPattern, engine: str = "join", *,
          time_column: str = "time", time_unit: float | str | None = None, tick: float = 1,
          symbol_column: str = "symbol") -> pd.DataFrame:
    """Every match of a temporal pattern in ``data`` (SEMANTICS B3).

    Parameters
    ----------
    data : DataFrame or Arrow table
        Point events (a ``time_column``) or interval events (``ts``, ``te``,
        ``symbol_column``); see the module's description. Plus the PARTITION BY columns
        and the columns the query reads. A pandas DataFrame, or any object with the Arrow
        PyCapsule interface (``__arrow_c_stream__``: a pyarrow Table, a polars DataFrame,
        a DuckDB relation), read as ``pd.read_parquet`` reads the same table.
    query : str or TemporalPattern
        Part-B query text (SEMANTICS C) or a parsed pattern.
    engine : {"join", "automata", "brute_force"}
        ``join`` and ``automata`` scale; ``brute_force`` is the reference, refusing a
        partition with more than two million combinations.
    time_column : str
        The point events' time column: numbers in the data's unit, or datetimes (then
        durations and windows need units, which need no ``time_unit``, and the answer's
        instants are datetimes in the same time zone).
    time_unit : float or str, optional
        Seconds per data time unit (or text such as ``"1s"``, ``"100ms"``); needed when
        the query writes durations or the window with units (``5s``, ``5 MINUTES``).
    tick : number, or a duration for datetimes
        One time unit of point events: a run still true at a partition's last event ends
        ``tick`` after it. For a datetime time column a ``pd.Timedelta`` or text such as
        ``"1s"`` (a number counts nanoseconds).
    symbol_column : str
        The interval events' column naming each row's symbol.

    Returns
    -------
    DataFrame
        The PARTITION BY columns, ``<S>_ts`` and ``<S>_te`` per symbol in DEFINE order,
        one column per RETURN alias and ``detected_at``; sorted by partition and ``ts``.

    Raises
    ------
    InvalidOptionError
        An unknown engine (the message lists the valid ones).
    QueryParseError
        Malformed query text (line, column, what was expected), before data is read.
    InputError
        Data that is neither kind of input, or invalid (missing columns, bad times).
    QueryError
        A query that cannot run on the data: a column it reads is missing, or a duration
        or window written as a plain number (other than 0) on datetime times, which have
        no unit a number could count (the message names its place and suggests units).
    """
    chosen = MatchEngine(MatchEngine.get_value(engine))
    pattern = _pattern(query)
    if is_arrow_stream(data):
        data = arrow_to_pandas(data)
    if not isinstance(data, pd.DataFrame):
        raise not_a_table(data, "the data", ACCEPTED_TABLES)
    data, clock = _as_nanoseconds(data, time_column, symbol_column)
    if clock is not None:
        _refuse_plain_numbers(pattern, query if isinstance(query, str) else None)
        time_unit, tick = _datetime_options(time_unit, tick)
    situations = _situations(data, pattern, time_column=time_column, time_unit=time_unit,
                             tick=tick, symbol_column=symbol_column)
    answer = ENGINES[chosen](situations, pattern, time_unit=time_unit)
    return answer if clock is None else _as_datetimes(answer, pattern, clock)


class _Clock:
    """How datetimes were turned into nanoseconds: their time zone, if any."""

    def __init__(self, tz: Any) -> None:
        self.tz = tz


def _as_nanoseconds(data: pd.DataFrame, time_column: str,
                    symbol_column: str) -> tuple[pd.DataFrame, _Clock | None]:
    """Datetime time columns as int64 nanoseconds (UTC), so every engine works on numbers."""
    columns = ([time_column] if time_column in data.columns
               else [c for c in ("ts", "te") if c in data.columns])
    dated = [c for c in columns if pd.api.types.is_datetime64_any_dtype(data[c])]
    if not dated:
        return data, None
    if len(dated) != len(columns):
        raise InputError(f"columns {', '.join(columns)} must all hold datetimes or all "
                         f"numbers; only {', '.join(dated)} hold datetimes")
    zones = {str(getattr(data[c].dtype, "tz", None)) for c in dated}
    if len(zones) > 1:
        raise InputError(f"columns {', '.join(dated)} have different time zones: "
                         f"{', '.join(sorted(zones))}")
    converted = {}
    for column in dated:
        values = data[column]
        missing = np.flatnonzero(values.isna().to_numpy())
        if len(missing):
            raise InputError(f"row {missing[0]}, column {column!r}: the time is missing",
                             row=int(missing[0]))
        utc = values.dt.tz_convert("UTC").dt.tz_localize(None) if values.dt.tz else values
        converted[column] = utc.to_numpy(dtype="datetime64[ns]").view(np.int64)
    return data.assign(**converted), _Clock(getattr(data[dated[0]].dtype, "tz", None))


def _refuse_plain_numbers(pattern: TemporalPattern, text: str | None) -> None:
    """On datetime times a plain number would count nanoseconds: refuse it, pointing at
    it in the query text when there is one."""
    plain = pattern.plain_durations()
    if not plain:
        return
    where, keyword, duration = plain[0]
    message = (f"{where} {duration} on a datetime time column: give a unit, e.g. "
               f"{keyword} {duration}s or {keyword} {duration} MINUTES (a plain number "
               "has no unit to count on datetimes)")
    if text is not None:
        message = located(text, *plain_duration_positions(text)[0], message)
    raise QueryError(message)


def _datetime_options(time_unit: float | str | None,
                      tick: object) -> tuple[float, int | float]:
    """For datetime data: the unit is the nanosecond; the tick may be a duration."""
    if time_unit is not None and seconds_per_unit(time_unit) != 1e-9:
        raise InputError(f"the time column holds datetimes, whose unit is known; "
                         f"drop time_unit={time_unit!r}")
    if isinstance(tick, str):
        tick = pd.Timedelta(tick)
    if isinstance(tick, (pd.Timedelta, timedelta, np.timedelta64)):
        tick = int(pd.Timedelta(tick).value)
    return 1e-9, tick  # type: ignore[return-value]


def _as_datetimes(answer: pd.DataFrame, pattern: TemporalPattern,
                  clock: _Clock) -> pd.DataFrame:
    """The answer's instants back as datetimes, in the input's time zone."""
    columns = [f"{n}_{end}" for n in pattern.symbol_names for end in ("ts", "te")]
    for column in [*columns, "detected_at"]:
        values = pd.Series(answer[column].to_numpy(dtype=np.int64).view("datetime64[ns]"),
                           index=answer.index)
        if clock.tz is not None:
            values = values.dt.tz_localize("UTC").dt.tz_convert(clock.tz)
        answer[column] = values
    return answer


def _pattern(query: object) -> TemporalPattern:
    if isinstance(query, TemporalPattern):
        return query
    if isinstance(query, str):
        return parse_temporal_query(query)
    raise QueryError(f"the query must be query text or a TemporalPattern, "
                     f"got {type(query).__name__}")


def _situations(data: pd.DataFrame, pattern: TemporalPattern, *, time_column: str,
                time_unit: float | str | None, tick: float,
                symbol_column: str) -> Mapping[str, pd.DataFrame]:
    """Situations per symbol from point events or interval events, told apart by columns."""
    if time_column in data.columns:
        return derive_situations(data, pattern, time_column=time_column, time_unit=time_unit,
                                 tick=tick)
    if {"ts", "te", symbol_column} <= set(data.columns):
        return situations_from_intervals(data, pattern, symbol_column=symbol_column,
                                         time_unit=time_unit)
    raise InputError(f"the data has neither a time column {time_column!r} (point events) nor "
                     f"columns 'ts', 'te' and {symbol_column!r} (interval events); columns: "
                     f"{', '.join(map(str, data.columns))}")
