"""What an archive's integer instants stand for (SEMANTICS A1: time is discretised by a
user-given time unit before anything else).

An archive read with ``time_unit=`` remembers it as a :class:`TimeAxis`. When its times
were datetimes the axis also knows how long one instant lasts and the input's time zone:
instant ``k`` is the unit of time that starts ``k`` units after the Unix epoch (UTC), and
:meth:`TimeAxis.datetimes` gives that start back as a datetime in the input's zone (naive
input stays naive). Times given as numbers have no length in seconds the archive could
know, so their axis has none.

>>> axis = TimeAxis("1min", unit_ns=60 * 10**9, timezone="Europe/Berlin")
>>> axis.datetimes(np.array([0, 1])).astype(str).tolist()
['1970-01-01 01:00:00+01:00', '1970-01-01 01:01:00+01:00']
>>> axis.unit_text, TimeAxis("0.5").is_datetime
('1 MINUTES', False)
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from uncertain_cep.durations import Duration, TimeUnit
from uncertain_cep.errors import InputError

__all__ = ["MAX_SPAN", "TimeAxis", "timezone_name"]

# The widest archive (max t_hi - min t_lo, in instants) the build accepts and the query
# engine answers exactly (query/engine/kernels/instants.py: the engine's instants and
# windows stay far from int64's ends); 2**60 nanoseconds are about 36.5 years.
MAX_SPAN = 1 << 60

_INT64 = np.iinfo(np.int64)


@dataclass(frozen=True)
class TimeAxis:
    """The discretisation an archive was read with.

    Attributes
    ----------
    time_unit
        The ``time_unit`` given to :func:`~uncertain_cep.model.events.read_archive`, as
        text (``"1s"``, ``"0.5"``).
    unit_ns
        For datetime times: the length of one instant in nanoseconds; ``None`` when the
        times were numbers (whose length in seconds is unknown).
    timezone
        For datetime times: the input's time zone as Arrow names it (``"UTC"``,
        ``"Europe/Berlin"``, ``"+01:00"``); ``None`` for naive datetimes and numbers.
    """

    time_unit: str
    unit_ns: int | None = None
    timezone: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.time_unit, str):
            raise InputError(f"a time axis's time_unit is text, got {self.time_unit!r}")
        if self.unit_ns is None:
            if self.timezone is not None:
                raise InputError("a time zone needs datetime times (a unit_ns)")
            return
        if (isinstance(self.unit_ns, bool) or not isinstance(self.unit_ns, numbers.Integral)
                or self.unit_ns <= 0):
            raise InputError(f"time_unit={self.time_unit!r} must be a positive duration; one "
                             f"instant would last {self.unit_ns!r} ns")
        object.__setattr__(self, "unit_ns", int(self.unit_ns))
        if self.timezone is not None and not isinstance(self.timezone, str):
            raise InputError(f"a time zone is named by text, got {self.timezone!r}")

    @property
    def is_datetime(self) -> bool:
        """Whether the archive's times were datetimes (its instants have a length)."""
        return self.unit_ns is not None

    @property
    def unit_text(self) -> str:
        """One instant's length in the largest unit that measures it exactly (``"1
        MINUTES"``, ``"250 MILLISECONDS"``), as query text writes durations; else in
        nanoseconds."""
        if self.unit_ns is None:
            return self.time_unit
        for unit in sorted(TimeUnit, key=lambda u: -u.nanoseconds):
            if self.unit_ns % unit.nanoseconds == 0:
                return str(Duration(self.unit_ns // unit.nanoseconds, unit))
        return f"{self.unit_ns} ns"

    def datetimes(self, instants: np.ndarray) -> pd.Series:
        """The start of each instant as a datetime in the input's time zone (naive input:
        naive datetimes, read as UTC), ``datetime64[ns]``.

        Raises
        ------
        InputError
            For an archive whose times were numbers, and for an instant whose start lies
            outside the datetimes pandas can hold (years 1677 to 2262).
        """
        import pyarrow as pa

        if self.unit_ns is None:
            raise InputError(f"the archive's times were numbers (time_unit={self.time_unit!r}"
                             "), not datetimes: its instants have no date")
        values = np.asarray(instants, dtype=np.int64)
        # Multiplying int64 wraps around silently; starts beyond the datetime range are
        # refused instead (only the first instant of a floor-divided 1677 date can be).
        bound = _INT64.max // self.unit_ns
        if len(values) and (values.max() > bound or values.min() < -bound):
            raise InputError(f"an instant of {self.unit_text} starts outside the datetimes "
                             "pandas can hold (years 1677 to 2262)")
        stamps = pa.array(values * self.unit_ns, type=pa.timestamp("ns", tz=self.timezone))
        out: pd.Series = stamps.to_pandas()
        return out


def timezone_name(dtype: Any, column: str) -> str | None:
    """The time zone of a pandas datetime dtype as Arrow names it (what Parquet keeps),
    ``None`` for naive datetimes.

    >>> timezone_name(pd.DatetimeTZDtype(tz="Europe/Berlin"), "t_lo"), timezone_name(
    ...     np.dtype("datetime64[ns]"), "t_lo")
    ('Europe/Berlin', None)
    """
    import pyarrow as pa

    if getattr(dtype, "tz", None) is None:
        return None
    try:
        return str(pa.array(pd.Series([], dtype=dtype)).type.tz)
    except (pa.ArrowException, TypeError, ValueError) as e:
        raise InputError(f"column {column!r} is in the time zone {dtype.tz!r}, which cannot "
                         "be named for the index; convert it with .dt.tz_convert('UTC') or "
                         "to a named zone such as 'Europe/Berlin'") from e
