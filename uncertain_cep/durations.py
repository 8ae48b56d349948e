"""Lengths of time as both query languages write them: ``5s``, ``30 SECONDS``, ``5 MINUTES``,
``2 HOURS`` (SEMANTICS C), kept with the unit the query wrote until the data's time unit
is known.

Part B converts with the seconds one unit of its time column lasts
(:meth:`Duration.in_data_units`); part A with the length of one instant of an index
built from datetimes (:meth:`Duration.nanoseconds`, exact, so that a window is either a
whole number of instants or refused). The grammar rule that reads them is
:data:`uncertain_cep.grammar.DURATION_GRAMMAR`.

>>> d = Duration(1.5, "min")
>>> str(d), d.nanoseconds(), Duration(5, "s").in_data_units(0.001)
('1.5 MINUTES', Fraction(90000000000, 1), 5000.0)
"""

from __future__ import annotations

import math
import numbers
import re
from dataclasses import dataclass
from fractions import Fraction

from uncertain_cep.errors import InvalidOptionError, ParamEnum, QueryError, QueryParseError

__all__ = ["UNIT_REGEX", "Duration", "TimeUnit", "seconds_per_unit"]


class TimeUnit(ParamEnum):
    """Units a duration or window may carry; their length is :attr:`seconds` (and,
    exactly, :attr:`nanoseconds`)."""

    MILLISECONDS = "MILLISECONDS"
    SECONDS = "SECONDS"
    MINUTES = "MINUTES"
    HOURS = "HOURS"
    DAYS = "DAYS"

    @property
    def seconds(self) -> float:
        return _UNIT_NANOSECONDS[self] / 1e9

    @property
    def nanoseconds(self) -> int:
        return _UNIT_NANOSECONDS[self]

    @classmethod
    def named(cls, word: str) -> TimeUnit:
        """The unit spelled ``word`` (``s``, ``sec``, ``second(s)``, ``min``, ``h``, ...).

        >>> TimeUnit.named("Mins"), TimeUnit.named("ms")
        (<TimeUnit.MINUTES: 'MINUTES'>, <TimeUnit.MILLISECONDS: 'MILLISECONDS'>)
        """
        unit = _UNIT_WORDS.get(word.lower()) if isinstance(word, str) else None
        if unit is None:
            raise InvalidOptionError(f"{word!r} is not a time unit; choose one of: "
                                     + ", ".join(sorted(_UNIT_WORDS)))
        return unit


_UNIT_NANOSECONDS = {TimeUnit.MILLISECONDS: 10**6, TimeUnit.SECONDS: 10**9,
                     TimeUnit.MINUTES: 60 * 10**9, TimeUnit.HOURS: 3600 * 10**9,
                     TimeUnit.DAYS: 86400 * 10**9}
_UNIT_WORDS = {
    **dict.fromkeys(("ms", "msec", "millisecond", "milliseconds"), TimeUnit.MILLISECONDS),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), TimeUnit.SECONDS),
    **dict.fromkeys(("min", "mins", "minute", "minutes"), TimeUnit.MINUTES),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), TimeUnit.HOURS),
    **dict.fromkeys(("d", "day", "days"), TimeUnit.DAYS),
}
#: Every spelling of a unit, longest first (a regex alternation takes the first that
#: matches, so ``days`` must come before ``d``); case is the caller's flag.
UNIT_REGEX = "|".join(sorted(_UNIT_WORDS, key=len, reverse=True))


def seconds_per_unit(time_unit: float | str) -> float:
    """How many seconds one unit of the data's time column lasts.

    ``time_unit`` is a positive number of seconds or text such as ``"1s"``, ``"100 ms"``,
    ``"min"``.

    >>> seconds_per_unit("100ms"), seconds_per_unit(60), seconds_per_unit("min")
    (0.1, 60.0, 60.0)
    """
    if isinstance(time_unit, str):
        match = re.fullmatch(rf"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)?\s*"
                             rf"({UNIT_REGEX})\s*", time_unit, flags=re.IGNORECASE)
        if match is None:
            raise InvalidOptionError(
                f"time_unit {time_unit!r} is not a duration such as '1s', '100ms' or '1 min'")
        value = float(match.group(1) or 1) * TimeUnit.named(match.group(2)).seconds
    elif isinstance(time_unit, numbers.Real) and not isinstance(time_unit, bool):
        value = float(time_unit)
    else:
        raise InvalidOptionError(f"time_unit must be seconds or text like '1s', got {time_unit!r}")
    if not (math.isfinite(value) and value > 0):
        raise InvalidOptionError(f"time_unit must be a positive duration, got {time_unit!r}")
    return value


@dataclass(frozen=True)
class Duration:
    """A non-negative length of time: ``value`` in ``unit``, or in the data's unit (None).

    The parsers keep the unit written in the query; :meth:`in_data_units` converts once
    the length of one data unit is known (SEMANTICS C: plain numbers are in the data's unit).

    >>> Duration(5, "s").in_data_units(0.001), str(Duration(1.5, "HOURS")), str(Duration(30))
    (5000.0, '1.5 HOURS', '30')
    """

    value: float
    unit: TimeUnit | None = None

    def __post_init__(self) -> None:
        if isinstance(self.value, bool) or not isinstance(self.value, numbers.Real):
            raise QueryParseError(f"a duration must be a number, got {self.value!r}")
        value = float(self.value)
        if not math.isfinite(value) or value < 0:
            raise QueryParseError(f"a duration must be a finite number >= 0, got {self.value!r}")
        object.__setattr__(self, "value", value)
        if self.unit is not None and not isinstance(self.unit, TimeUnit):
            object.__setattr__(self, "unit", TimeUnit.named(str(self.unit)))

    def in_data_units(self, time_unit: float | str | None) -> float:
        """The duration in units of the data's time column (``time_unit``: see
        :func:`seconds_per_unit`; needed only when the duration carries a unit)."""
        if self.unit is None:
            return self.value
        if time_unit is None:
            raise QueryError(f"the duration {self} has a time unit but the data's time unit is "
                             "unknown; pass time_unit= (seconds per data unit, or e.g. '1s')")
        return self.value * self.unit.seconds / seconds_per_unit(time_unit)

    def nanoseconds(self) -> Fraction:
        """The exact length in nanoseconds of a duration with a unit.

        The value is read as the decimal it was written as (``0.1`` is one tenth, not the
        double nearest to it), so that ``0.1s`` is exactly ``100ms``.

        >>> Duration(0.1, "s").nanoseconds() == Duration(100, "ms").nanoseconds()
        True
        """
        if self.unit is None:
            raise QueryError(f"the duration {self} has no time unit, so its length in "
                             "nanoseconds is unknown")
        return Fraction(repr(self.value)) * self.unit.nanoseconds

    def __str__(self) -> str:
        text = str(int(self.value)) if self.value.is_integer() else repr(self.value)
        return text if self.unit is None else f"{text} {self.unit.value}"
