"""Answer tables as files: Parquet or CSV, written atomically, read back exactly.

An answer row's events are a tuple of event ids (SEMANTICS A4), and ids may hold any
character, so a file never joins them into text:

* Parquet: ``events`` is a list column of the archive's id type, followed by one column
  per positive item (named by its symbol; ``symbol@position`` when a symbol repeats),
  then ``confidence``, ``t_first``, ``t_last``. The query text and the items are kept in
  the file's metadata.
* CSV: one column per positive item, then ``confidence``, ``t_first``, ``t_last``.
  String ids are written quoted and integer ids bare, which is how :func:`read_answer`
  tells them apart (``"12"`` stays the string, ``12`` the number); ids are read as
  written, so an id such as ``"NULL"``, ``"nan"`` or ``""`` is never taken for a
  missing value.

``t_first``/``t_last`` are instants, or datetimes for an archive whose times were
datetimes: Parquet keeps them as timestamps with their time zone; CSV writes them in ISO
8601 with their UTC offset and has no place for the zone's name, so they come back naive
(naive answers) or in UTC (zoned answers): the same instants.

:func:`read_answer` reads either back into the answer table (``events`` as tuples).

>>> import tempfile, pathlib
>>> answer = pd.DataFrame({"events": [("a", "b c"), ("a b", "c")], "confidence": [0.5, 0.25],
...                        "t_first": [1, 2], "t_last": [3, 4]})
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> write_answer(answer, folder / "a.csv", items=("A", "B"))
>>> pd.read_csv(folder / "a.csv").columns.tolist()
['A', 'B', 'confidence', 't_first', 't_last']
>>> read_answer(folder / "a.csv")["events"].tolist()
[('a', 'b c'), ('a b', 'c')]
"""

from __future__ import annotations

import csv
import json
import mmap
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from uncertain_cep.errors import InputError
from uncertain_cep.files import atomic_write, check_table_path

__all__ = ["METADATA_KEY", "item_columns", "read_answer", "write_answer"]

_TAIL = ["confidence", "t_first", "t_last"]
METADATA_KEY = b"uncertain_cep.answer"


def item_columns(items: Sequence[str]) -> list[str]:
    """The column of each positive item: its symbol, or ``symbol@position`` (1-based)
    when a symbol repeats or would take a column of the table's own.

    >>> item_columns(["A", "B"]), item_columns(["A", "B", "A"])
    (['A', 'B'], ['A@1', 'B@2', 'A@3'])
    """
    plain = list(items)
    if len(set(plain)) == len(plain) and not set(plain) & {"events", *_TAIL}:
        return plain
    return [f"{s}@{i}" for i, s in enumerate(plain, start=1)]


def write_answer(frame: pd.DataFrame, path: str | os.PathLike[str], *,
                 items: Sequence[str] | None = None, query: str | None = None,
                 id_dtype: np.dtype[Any] | None = None) -> None:
    """Write an answer table (``events`` tuples, ``confidence``, ``t_first``,
    ``t_last``) to ``.parquet`` or ``.csv``, atomically.

    ``items``: the positive items' symbols, naming the per-item columns (default
    ``item_1``...); ``id_dtype``: the archive's event-id type, which an empty answer's
    list column takes. A table without ``events`` (a part-B answer) is written as it is.
    """
    import pyarrow as pa

    target = Path(path)
    check_table_path(target, "answer file")
    if "events" not in frame.columns:
        out = pd.DataFrame(frame)
        out.attrs = {}
        _write_frame(out, target)
        return
    k = (len(items) if items is not None
         else max((len(e) for e in frame["events"]), default=0))
    names = item_columns(items) if items is not None else [f"item_{i}" for i in range(1, k + 1)]
    rows = list(frame["events"])
    if any(len(e) != k for e in rows):
        raise InputError(f"an answer row has {min(map(len, rows))} to {max(map(len, rows))} "
                         f"events, but the query has {k} positive items")
    ids = [pd.Series([e[c] for e in rows], dtype=_column_dtype(rows, c, id_dtype))
           for c in range(k)]
    # As Series: to_numpy() would turn zoned datetimes into objects.
    tail = {c: frame[c].reset_index(drop=True) for c in _TAIL}
    if target.suffix == ".csv":
        table = pd.DataFrame({**dict(zip(names, ids)), **tail}, columns=[*names, *_TAIL])
        # Quoted text, bare numbers: the quotes on the first id record that ids are text.
        atomic_write(target, lambda tmp: table.to_csv(tmp, index=False,
                                                      quoting=csv.QUOTE_NONNUMERIC))
        return
    columns = {name: pa.array(col) for name, col in zip(names, ids)}
    id_type = (next(iter(columns.values())).type if columns
               else pa.from_numpy_dtype(id_dtype) if id_dtype is not None and
               id_dtype.kind in "iuf" else pa.string())
    table = pd.DataFrame({"events": pd.Series([list(e) for e in rows], dtype=object),
                          **dict(zip(names, ids)), **tail},
                         columns=["events", *names, *_TAIL])
    # The schema fixes the id type even when there are no rows to infer it from.
    schema = pa.schema([("events", pa.list_(id_type)),
                        *[(name, id_type) for name in names],
                        ("confidence", pa.float64()),
                        *[(c, _time_type(frame[c])) for c in _TAIL[1:]]],
                       metadata={METADATA_KEY: json.dumps(
                           {"query": query,
                            "items": list(items) if items is not None else None}).encode()})
    atomic_write(target, lambda tmp: table.to_parquet(tmp, index=False, schema=schema))


def read_answer(path: str | os.PathLike[str]) -> pd.DataFrame:
    """An answer file written by :func:`write_answer` (or the CLI's ``--out``/``--table``)
    as the answer table: ``events`` tuples, ``confidence``, ``t_first``, ``t_last``.
    Ids come back as they went in: Parquet keeps the archive's type; CSV gives text ids
    (quoted in the file) as strings, whatever they spell, and bare ones as Python ints.
    CSV datetimes come back naive or in UTC (Parquet keeps their zone).

    A directory of Parquet parts (an answer streamed by ``idx.query(..., out=PATH)``,
    or written by Spark executors) is read whole and sorted into the answer's order
    (confidence descending, then event ids), which its parts keep only within each row
    group.
    """
    target = Path(path)
    if target.is_dir():
        return _read_answer_directory(target)
    check_table_path(target, "answer file")
    if not target.is_file():
        raise InputError(f"answer file {target} does not exist")
    if target.suffix == ".csv":
        raw, names = _read_csv(target)
        events = list(zip(*(raw[n].tolist() for n in names))) if names \
            else [() for _ in range(len(raw))]
        for c in _TAIL[1:]:
            raw[c] = _csv_times(raw[c], target)
    else:
        raw = pd.read_parquet(target)
        if "events" not in raw.columns:
            raise InputError(f"{target} is not an answer file: it has no column 'events'")
        events = [tuple(e.tolist()) if isinstance(e, np.ndarray) else tuple(e)
                  for e in raw["events"]]
    return pd.DataFrame({"events": pd.Series(events, dtype=object),
                         **{c: raw[c].reset_index(drop=True) for c in _TAIL}})


def _read_answer_directory(target: Path) -> pd.DataFrame:
    """A directory of Parquet answer parts as one sorted answer table."""
    from uncertain_cep.query.evaluation.answer import table_from_rows

    if not any(p.name.endswith(".parquet") for p in target.iterdir()):
        raise InputError(f"{target} is a directory without Parquet parts, not an answer")
    raw = pd.read_parquet(target, columns=["events", *_TAIL])
    times = {c: raw[c] for c in _TAIL[1:]}
    zoned = {c: pd.api.types.is_datetime64_any_dtype(v) for c, v in times.items()}
    instants = {c: (v.dt.tz_convert("UTC").dt.tz_localize(None) if zoned[c] and v.dt.tz
                    else v).astype("datetime64[ns]").astype(np.int64).tolist()
                if zoned[c] else v.astype(np.int64).tolist()
                for c, v in times.items()}
    rows = list(zip((tuple(e.tolist()) if isinstance(e, np.ndarray) else tuple(e)
                     for e in raw["events"]), raw["confidence"].tolist(),
                    instants["t_first"], instants["t_last"]))
    frame = table_from_rows(rows)
    for c in _TAIL[1:]:
        if zoned[c]:
            zone = times[c].dt.tz
            stamps = pd.to_datetime(frame[c].to_numpy(dtype=np.int64), unit="ns", utc=True)
            frame[c] = stamps.tz_convert(zone) if zone is not None else stamps.tz_localize(None)
    return frame


def _read_csv(target: Path) -> tuple[pd.DataFrame, list[str]]:
    """A CSV answer file and its id columns, ids exactly as written: text where the
    writer quoted them (or, in a file of another writer, where any is not an integer),
    else integers."""
    header = pd.read_csv(target, nrows=0).columns.tolist()
    missing = [c for c in _TAIL if c not in header]
    if missing:
        raise InputError(f"{target} is not an answer file: it has no column {missing[0]!r}")
    names = header[:header.index("confidence")]
    # No NA spellings for ids: "NULL", "nan" and "" are ids like any other.
    raw = pd.read_csv(target, float_precision="round_trip", keep_default_na=False,
                      dtype={n: str for n in names})
    if names and _holds_nul(target):
        # pandas' C parser ends a field at a NUL byte, and an id may hold any character:
        # the ids again through the Python engine, which keeps it.
        ids = pd.read_csv(target, engine="python", keep_default_na=False, dtype=str,
                          usecols=names)
        for n in names:
            raw[n] = ids[n]
    if names and len(raw) and not _quoted_ids(target) and all(
            raw[n].str.fullmatch(r"[+-]?\d+").all() for n in names):
        for n in names:
            raw[n] = pd.Series([int(v) for v in raw[n]], dtype=object)
    return raw, names


def _holds_nul(target: Path) -> bool:
    """Whether the file holds a NUL byte (one scan of its mapped pages)."""
    with open(target, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return False
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as pages:
            return pages.find(b"\x00") >= 0


def _quoted_ids(target: Path) -> bool:
    """Whether the first id of a CSV answer is quoted (the writer quotes text ids; its
    header, of symbols and fixed names, is one line)."""
    with open(target, newline="") as f:
        f.readline()
        return f.read(1) == '"'


def _time_type(column: pd.Series) -> Any:
    """The Arrow type of ``t_first``/``t_last``: int64 instants, or timestamps with the
    column's time zone."""
    import pyarrow as pa

    if pd.api.types.is_datetime64_any_dtype(column):
        return pa.array(column.iloc[:0]).type
    return pa.int64()


def _csv_times(column: pd.Series, target: Path) -> pd.Series:
    """``t_first``/``t_last`` of a CSV answer: instants as read, or the ISO 8601 text of
    datetimes (with a UTC offset when they had a zone) as datetimes."""
    if column.dtype != object or not len(column):
        return column
    zoned = column.astype(str).str.contains(r"(?:[+-]\d\d:?\d\d|Z)$", regex=True)
    try:
        # Offsets differ across a summer-time change; UTC holds every one of them.
        return pd.to_datetime(column, format="ISO8601", utc=bool(zoned.any()))
    except (ValueError, TypeError) as e:
        raise InputError(f"{target} is not an answer file: column {column.name!r} holds "
                         f"neither instants nor datetimes ({e})") from e


def _column_dtype(rows: list[tuple[Any, ...]], c: int, id_dtype: np.dtype[Any] | None
                  ) -> Any:
    if id_dtype is not None and id_dtype.kind in "iuf":
        return id_dtype
    if rows and all(isinstance(e[c], int | np.integer) for e in rows):
        return np.int64
    return object


def _write_frame(frame: pd.DataFrame, target: Path) -> None:
    if target.suffix == ".csv":
        atomic_write(target, lambda tmp: frame.to_csv(tmp, index=False))
    else:
        atomic_write(target, lambda tmp: frame.to_parquet(tmp, index=False))
