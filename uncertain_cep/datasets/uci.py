"""The paper's real data sets (Zhou et al. sections 6.1 and 6.3) as uncertain archives.

Each loader reads one original UCI file and builds an archive the way the paper did:

1. take the first ``n_events`` events of the file (the paper uses 5,000), after the
   loader's own handling (Dodgers skips missing values; ICU unwraps midnight);
2. put them in time order (a stable sort, so equal times keep their file order) and
   number them ``event_id = 0 .. n-1`` in that order;
3. normalise their timestamps linearly into ``[0, instants - 1]`` (the first event maps to
   0, the last to ``instants - 1``), rounded to the nearest integer instant;
4. assign each event to one of ``groups`` dependency groups uniformly at random;
5. make each group's true instants distinct: an instant that an earlier event of the
   group already has moves to the nearest free instant (the synthetic generator's rule),
   and the resulting instants are then handed out in time order, so the true order of a
   group's events is the order of the file's timestamps;
6. widen each true instant into an interval of ``f`` possible instants, ``f`` drawn per
   event uniformly from the inclusive range, with the true instant at a uniformly random
   position inside; positions that would put the interval outside ``[0, instants - 1]``
   are not drawn (so intervals never leave the time domain and never get narrower);
7. widen each attribute value ``v`` into the uniform range ``[v - h, v + h]``, ``h`` drawn
   uniformly from ``[0, value_width * std]``, ``std`` being the population standard
   deviation of that attribute over the selected events.

The archive has columns ``event_id``, ``group``, ``t_lo``, ``t_hi`` (int64) and then
``<attribute>_lo``/``<attribute>_hi`` (float64) for each attribute, ready for
:func:`uncertain_cep.read_archive` and :func:`uncertain_cep.build_index`. Every group has
an order instance (the true instants). ``df.attrs`` records ``source`` (the path),
``std`` (the standard deviation used for each attribute), ``moved_instants`` (how many
true instants step 5 moved away from their normalised instant) and loader-specific
counts. The same arguments always give the same archive.

Steps 2-7 are :func:`~uncertain_cep.datasets.uci_archive.uncertain_archive`, shared by
the loaders. Files are read only as far as needed: lines after the last event used are
not read. A missing file, a malformed line (the error names the file, the 1-based line
number and the expected form) or too few events raise
:class:`~uncertain_cep.errors.InputError`; nothing is dropped or clipped silently.

>>> import tempfile
>>> from pathlib import Path
>>> with tempfile.TemporaryDirectory() as tmp:
...     path = Path(tmp) / "Dodgers.data"
...     _ = path.write_text("4/10/2005 0:00,-1\\n4/10/2005 0:05,12\\n4/10/2005 0:10,9\\n"
...                         "4/10/2005 0:15,11\\n4/10/2005 0:20,-1")
...     df = load_dodgers(path, n_events=3, instants=100)
>>> list(df.columns)
['event_id', 'group', 't_lo', 't_hi', 'count_lo', 'count_hi']
>>> len(df), df.attrs["skipped_missing"]
(3, 1)
>>> bool(df.t_lo.min() >= 0 and df.t_hi.max() <= 99)
True
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from datetime import date

import numpy as np
import pandas as pd

from uncertain_cep.datasets.uci_archive import check_options, uncertain_archive
from uncertain_cep.errors import InputError

__all__ = ["load_dodgers", "load_icu", "load_localization"]

PathLike = str | os.PathLike[str]

_SECONDS_PER_DAY = 86_400
_INT = re.compile(r"[+-]?\d+", re.ASCII)
_FLOAT = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
_DODGERS_TIME = re.compile(r"(\d{1,2})/(\d{1,2})/(\d{4}) (\d{1,2}):(\d{2})", re.ASCII)
_TIME_OF_DAY = re.compile(r"(\d{1,2}):(\d{2}):(\d{2})", re.ASCII)
_LPA_HEADER = ["id", "sequence_name", "tag_indicator", "timestamp", "x_coordinate",
               "y_coordinate", "z_coordinate", "activity"]


# ---------------------------------------------------------------------------- loaders
def load_dodgers(path: PathLike, *, n_events: int = 5000, instants: int = 20000,
                 f: tuple[int, int] = (2, 6), groups: int = 1, value_width: float = 0.2,
                 seed: int = 0) -> pd.DataFrame:
    """The Dodgers Loop Sensor data (``Dodgers.data``) as an uncertain archive.

    Each line ``M/D/YYYY H:MM,count`` (no header) is one event with one attribute,
    ``count`` (cars in the previous five minutes); its time is the line's date and time,
    in minutes. **Lines whose count is -1 are missing values and are skipped**: the
    archive holds the first ``n_events`` lines with a real count, and
    ``df.attrs["skipped_missing"]`` is the number of -1 lines among the lines read (404
    for the default 5,000 events of the UCI file, whose first valid count is on line 380).

    Parameters
    ----------
    path
        The ``Dodgers.data`` file.
    n_events
        Number of events (valid lines) to use, from the start of the file.
    instants
        Size of the time domain: true instants are normalised into ``[0, instants - 1]``.
    f
        Inclusive range of the number of possible instants per event.
    groups
        Number of dependency groups (events assigned uniformly at random).
    value_width
        Largest half-width of an attribute range, in standard deviations of the attribute.
    seed
        Seed of every random choice.

    Returns
    -------
    pandas.DataFrame
        ``event_id, group, t_lo, t_hi, count_lo, count_hi``; see the module docstring.
    """
    check_options(n_events, instants, f, groups, value_width)
    expected = ("'M/D/YYYY H:MM,count' with a count >= 0, or -1 for a missing value "
                "(e.g. '4/10/2005 0:00,-1')")
    times: list[int] = []
    counts: list[int] = []
    skipped = 0
    for lineno, line in _lines(path, "Dodgers data"):
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 2:
            raise _malformed(path, lineno, expected, line)
        stamp, count_text = parts
        m = _DODGERS_TIME.fullmatch(stamp)
        if m is None or _INT.fullmatch(count_text) is None:
            raise _malformed(path, lineno, expected, line)
        month, day, year, hour, minute = (int(g) for g in m.groups())
        if hour > 23 or minute > 59:
            raise _malformed(path, lineno, expected, line, f"{hour}:{minute:02d} is not a time "
                                                           "of day")
        try:
            ordinal = date(year, month, day).toordinal()
        except ValueError as e:
            raise _malformed(path, lineno, expected, line, f"bad date: {e}") from None
        count = int(count_text)
        if count < -1:
            raise _malformed(path, lineno, expected, line,
                             f"count {count} is negative and not -1")
        if count == -1:
            skipped += 1
            continue
        times.append((ordinal * 24 + hour) * 60 + minute)
        counts.append(count)
        if len(counts) == n_events:
            break
    if len(counts) < n_events:
        raise InputError(f"{_name(path)} has only {len(counts)} valid rows ({skipped} rows with "
                         f"count -1 are missing values and are skipped); n_events={n_events} "
                         "asks for more")
    df = uncertain_archive(np.array(times, dtype=np.int64),
                           {"count": np.array(counts, dtype=float)}, {},
                           instants=instants, f=f, groups=groups, value_width=value_width,
                           seed=seed)
    df.attrs.update(source=_name(path), skipped_missing=skipped)
    return df


def load_localization(path: PathLike, *, n_events: int = 5000, instants: int = 20000,
                      f: tuple[int, int] = (2, 6), groups: int = 1, value_width: float = 0.2,
                      seed: int = 0, keep_labels: bool = False) -> pd.DataFrame:
    """The Localization Data for Person Activity (LPA) as an uncertain archive.

    Each row is one event with three attributes ``x``, ``y``, ``z`` (the tag's position);
    its time is the row's ``timestamp`` (.NET ticks of 100 ns). Two layouts are read:

    * the UCI original ``ConfLongDemo_JSI.txt``: no header, eight fields
      ``sequence,tag_id,timestamp,date,x,y,z,activity``;
    * the pandas re-export ``ConfLongDemo_JSI*.csv``: the header
      ``id, sequence_name, tag_indicator, timestamp, x_coordinate, y_coordinate,
      z_coordinate, activity`` and then ``id,sequence,tag,timestamp,x,y,z,activity``.

    The timestamps step backwards a few times (by about 5 ms, twice in the first 16,486
    rows, once in the first 5,000); the stable sort puts those events in time order, and
    ``df.attrs["backward_steps"]`` counts such steps among the rows read. The first 5,000
    rows all belong to sequence ``A01``; with more rows, the sequences (recorded one after
    another) are normalised together, gaps between them included.

    Parameters
    ----------
    path
        The ``ConfLongDemo_JSI`` file.
    n_events, instants, f, groups, value_width, seed
        As for :func:`load_dodgers`.
    keep_labels
        Also keep ``sequence``, ``tag`` and ``activity`` as string columns (the archive
        then has them as certain categorical attributes, besides x, y, z).

    Returns
    -------
    pandas.DataFrame
        ``event_id, group, t_lo, t_hi, x_lo, x_hi, y_lo, y_hi, z_lo, z_hi`` (then
        ``sequence, tag, activity`` with ``keep_labels``).
    """
    check_options(n_events, instants, f, groups, value_width)
    times: list[int] = []
    coords: list[tuple[float, float, float]] = []
    labels: list[tuple[str, str, str]] = []
    with_header: bool | None = None
    for lineno, line in _lines(path, "localization data"):
        fields = [p.strip() for p in line.split(",")]
        if with_header is None:
            with_header = fields == _LPA_HEADER
            if with_header:
                continue
        if with_header:
            expected = ("8 comma-separated fields 'id,sequence_name,tag_indicator,timestamp,"
                        "x,y,z,activity' with an integer id, integer ticks and numeric x, y, z")
            ok = len(fields) == 8 and _INT.fullmatch(fields[0]) is not None
            seq, tag, ticks, x, y, z, activity = fields[1:] if ok else [""] * 7
        else:
            expected = ("8 comma-separated fields 'sequence,tag_id,timestamp,date,x,y,z,"
                        "activity' with integer ticks and numeric x, y, z (or the header "
                        f"{', '.join(_LPA_HEADER)!r} on line 1)")
            ok = len(fields) == 8 and fields[3] != ""
            seq, tag, ticks, _, x, y, z, activity = fields if ok else [""] * 8
        if not (ok and seq and tag and activity and ticks.isascii() and ticks.isdigit()
                and all(_FLOAT.fullmatch(v) for v in (x, y, z))):
            raise _malformed(path, lineno, expected, line)
        times.append(int(ticks))
        coords.append((float(x), float(y), float(z)))
        labels.append((seq, tag, activity))
        if len(times) == n_events:
            break
    if len(times) < n_events:
        raise InputError(f"{_name(path)} has only {len(times)} rows of events; "
                         f"n_events={n_events} asks for more")
    xyz = np.array(coords, dtype=float).reshape(-1, 3)
    extra: dict[str, np.ndarray] = {}
    if keep_labels:
        text = np.array(labels, dtype=object).reshape(-1, 3)
        extra = {"sequence": text[:, 0], "tag": text[:, 1], "activity": text[:, 2]}
    raw = np.array(times, dtype=np.int64)
    df = uncertain_archive(raw, {"x": xyz[:, 0], "y": xyz[:, 1], "z": xyz[:, 2]}, extra,
                           instants=instants, f=f, groups=groups, value_width=value_width,
                           seed=seed)
    df.attrs.update(source=_name(path), backward_steps=int((np.diff(raw) < 0).sum()))
    return df


def load_icu(path: PathLike, *, n_events: int = 5000, instants: int = 20000,
             f: tuple[int, int] = (2, 6), groups: int = 1, value_width: float = 0.2,
             seed: int = 0) -> pd.DataFrame:
    """The ICU monitor data (AIM-94, ``Monitor-Data``) as an uncertain archive.

    Each line ``HH:MM:SS<TAB>code<TAB>value`` is one event with the paper's two
    attributes, ``code`` (the monitored parameter, see ``Monitor-Data-Codes``) and
    ``value`` (its reading), both numeric and both widened. The times are times of day
    only: each is placed within 12 hours of the line before it, so a step back from
    23:59:41 to 00:00:01 is a new day (``df.attrs["midnight_wraps"]`` counts these) while
    the file's small backward steps of 1-5 s stay backward steps
    (``df.attrs["backward_steps"]``) and the stable sort on the unwrapped time puts them
    in order. The archive holds the first ``n_events`` lines of the file, so sorted.

    The value 32000 appears three times (codes 19-21 at 05:57:04, lines 4035-4037), an
    undocumented out-of-range reading that is kept as recorded; it raises the standard
    deviation of ``value`` over the first 5,000 lines from about 42 to about 782, so the
    value ranges are widened accordingly (``df.attrs["std"]``).

    Parameters
    ----------
    path
        The ``Monitor-Data`` file.
    n_events, instants, f, groups, value_width, seed
        As for :func:`load_dodgers`.

    Returns
    -------
    pandas.DataFrame
        ``event_id, group, t_lo, t_hi, code_lo, code_hi, value_lo, value_hi``.
    """
    check_options(n_events, instants, f, groups, value_width)
    expected = ("'HH:MM:SS<TAB>code<TAB>value' with a time of day, an integer code >= 0 "
                "and a numeric value (e.g. '23:21:42\\t21\\t52')")
    seconds: list[int] = []
    codes: list[int] = []
    values: list[float] = []
    for lineno, line in _lines(path, "ICU monitor data"):
        parts = line.split()
        if len(parts) != 3:
            raise _malformed(path, lineno, expected, line)
        m = _TIME_OF_DAY.fullmatch(parts[0])
        if (m is None or not (parts[1].isascii() and parts[1].isdigit())
                or _FLOAT.fullmatch(parts[2]) is None):
            raise _malformed(path, lineno, expected, line)
        hour, minute, second = (int(g) for g in m.groups())
        if hour > 23 or minute > 59 or second > 59:
            raise _malformed(path, lineno, expected, line, f"{parts[0]} is not a time of day")
        seconds.append((hour * 60 + minute) * 60 + second)
        codes.append(int(parts[1]))
        values.append(float(parts[2]))
        if len(seconds) == n_events:
            break
    if len(seconds) < n_events:
        raise InputError(f"{_name(path)} has only {len(seconds)} records; n_events={n_events} "
                         "asks for more")
    tod = np.array(seconds, dtype=np.int64)
    step = np.diff(tod)
    # The signed step of least magnitude: within 12 h either way, across midnight if need be.
    unwrapped_step = (step + _SECONDS_PER_DAY // 2) % _SECONDS_PER_DAY - _SECONDS_PER_DAY // 2
    unwrapped = tod[0] + np.concatenate([[0], np.cumsum(unwrapped_step)])
    df = uncertain_archive(unwrapped, {"code": np.array(codes, dtype=float),
                                       "value": np.array(values, dtype=float)}, {},
                           instants=instants, f=f, groups=groups, value_width=value_width,
                           seed=seed)
    df.attrs.update(source=_name(path),
                    midnight_wraps=int((unwrapped_step > step).sum()),
                    backward_steps=int((unwrapped_step < 0).sum()))
    return df


# ------------------------------------------------------------------- reading the files
def _lines(path: PathLike, what: str) -> Iterator[tuple[int, str]]:
    """``(1-based line number, text without the line break)`` of every line of a file."""
    name = _name(path)
    if not os.path.exists(name):
        raise InputError(f"{what} file {name!r} does not exist")
    try:
        # Only opening and reading raise OSError here: the caller's errors stay outside.
        with open(name, "rb") as fh:
            for lineno, raw in enumerate(fh, start=1):
                try:
                    line = raw.rstrip(b"\r\n").decode("utf-8")
                except UnicodeDecodeError as e:
                    raise InputError(f"{name}, line {lineno}: not UTF-8 text ({e})") from None
                yield lineno, line
    except OSError as e:
        raise InputError(f"could not read {what} file {name!r}: {e}") from e


def _malformed(path: PathLike, lineno: int, expected: str, line: str,
               why: str | None = None) -> InputError:
    shown = line if len(line) <= 120 else line[:117] + "..."
    reason = f" ({why})" if why else ""
    return InputError(f"{_name(path)}, line {lineno}: expected {expected}, got {shown!r}{reason}")


def _name(path: PathLike) -> str:
    return os.fspath(path)
