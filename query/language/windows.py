"""The WITHIN clause: a window checked as written, and bound to an index's instants.

A window is a whole number of instants or a :class:`~uncertain_cep.durations.Duration`
with a unit (``WITHIN 6s``); :func:`window_instants` converts the latter exactly with the
index's time axis (SEMANTICS A3: ``L`` is an integer), refusing what is not a whole number
of instants and naming both neighbours.
"""

from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING

from uncertain_cep.durations import Duration, TimeUnit
from uncertain_cep.errors import QueryError, QueryParseError
from uncertain_cep.query.language.text import format_number

if TYPE_CHECKING:
    from uncertain_cep.model.time_axis import TimeAxis

__all__ = ["check_within", "window_instants"]

# The largest window: instants are int64.
_INT64_MAX = 2**63 - 1


def check_within(within: object) -> int | Duration:
    if isinstance(within, Duration):
        if within.unit is not None:
            return within
        # A plain number is in the data's unit, the instant (SEMANTICS C).
        if within.value.is_integer():
            return int(within.value)
        within = within.value
    if isinstance(within, bool) or not isinstance(within, numbers.Integral) or within < 0:
        raise QueryParseError(
            f"WITHIN takes a whole number of instants >= 0 or a duration with a unit "
            f"(6s, 5 MINUTES), got {within!r}")
    _check_window_range(int(within), f"WITHIN {within}")
    return int(within)


def _check_window_range(instants: int, shown: str,
                        error: type[QueryError | QueryParseError] = QueryParseError) -> None:
    """Refuse a window of more instants than int64 holds (instants are int64)."""
    if instants > _INT64_MAX:
        raise error(
            f"{shown} is longer than the largest window, {_INT64_MAX} instants "
            "(int64); a window as long as the archive's span already admits every match: "
            "leave WITHIN out for no window")


def window_instants(window: Duration, time_axis: TimeAxis | None) -> int:
    """The instants of an index that ``WITHIN window`` spans, exactly.

    A window with a unit needs an index built from datetimes (its instants have a
    length). It must be a whole number of instants: SEMANTICS A3's ``L`` is an integer,
    and rounding would silently widen or narrow the window, so ``WITHIN 90s`` on an
    index of minutes is refused, naming both neighbours.

    >>> from uncertain_cep.model.time_axis import TimeAxis
    >>> minutes = TimeAxis("1min", unit_ns=60 * 10**9)
    >>> window_instants(Duration(2, "h"), minutes)
    120
    >>> window_instants(Duration(90, "s"), minutes)
    Traceback (most recent call last):
    ...
    uncertain_cep.errors.QueryError: WITHIN 90 SECONDS is 1.5 instants of this index (one
    instant lasts 1 MINUTES), and a window is a whole number of instants: write WITHIN 60
    SECONDS or WITHIN 120 SECONDS

    Raises
    ------
    QueryError
        For a window that is not a whole number of instants, and for an index whose times
        were numbers (their length in seconds is unknown).
    """
    if window.unit is None:
        return check_within(window)  # type: ignore[return-value]
    if time_axis is None or not time_axis.is_datetime:
        given = ("integer instants" if time_axis is None else
                 f"numbers discretised by time_unit={time_axis.time_unit}")
        raise QueryError(
            f"WITHIN {window} has a time unit, but this index's times were {given}, whose "
            f"length in seconds it does not know: give the window in instants (WITHIN "
            f"{format_number(window.value)}), or build the index from datetime t_lo/t_hi "
            "with time_unit= (e.g. '1s')")
    unit_ns = time_axis.unit_ns
    assert unit_ns is not None
    exact = window.nanoseconds() / unit_ns
    if exact.denominator != 1:
        below, above = (_duration_of(n * unit_ns, window.unit)
                        for n in (math.floor(exact), math.ceil(exact)))
        raise QueryError(
            f"WITHIN {window} is {float(exact):.6g} instants of this index (one instant lasts "
            f"{time_axis.unit_text}), and a window is a whole number of instants: write "
            f"WITHIN {below} or WITHIN {above}")
    _check_window_range(int(exact), f"WITHIN {window} ({int(exact)} instants)",
                        QueryError)
    return int(exact)


def _duration_of(nanoseconds: int, unit: TimeUnit) -> Duration:
    """``nanoseconds`` in ``unit`` when that is exact, else in the largest unit that is
    (nanoseconds that no unit measures exactly are shown in milliseconds)."""
    if nanoseconds % unit.nanoseconds == 0:
        return Duration(nanoseconds // unit.nanoseconds, unit)
    for larger in sorted(TimeUnit, key=lambda u: -u.nanoseconds):
        if nanoseconds % larger.nanoseconds == 0:
            return Duration(nanoseconds // larger.nanoseconds, larger)
    return Duration(nanoseconds / TimeUnit.MILLISECONDS.nanoseconds, TimeUnit.MILLISECONDS)
