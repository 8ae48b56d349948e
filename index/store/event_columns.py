"""The archive on disk as flat typed columns, memory-mapped when an index is opened.

The events table (Parquet, one row per event) is what Spark, DuckDB and the time-sliced
reader read. The query engine reads the same numbers from one ``.npy`` file per numeric
column: the event ids when they are integers, each event's group code, its instants
``t_lo``/``t_hi``, every numeric attribute's bounds (and truncated-normal parameters), and
the layout the build computed (position in the group's forest, feasible instants, code
range). Opening an index maps these files and reads none of them, so it costs the same for
a thousand events as for ten million, and the pages a query gathers are shared by every
process that opens the index (a Spark executor's Python workers and the driver). Only text
columns, string event ids and categorical attributes, are read from the events table when
an index is opened; the group labels are a small Parquet file of their own.

:func:`write_event_columns` derives the files from the events table after a build (both
builders), a record batch at a time, so memory does not grow with the archive.

>>> import tempfile
>>> import pandas as pd
>>> import uncertain_cep as uc
>>> from uncertain_cep.index.store.reader import open_reader
>>> with tempfile.TemporaryDirectory() as tmp:
...     idx = uc.build_index(pd.DataFrame({"event_id": [1, 2, 3], "group": ["b", "b", "a"],
...                                        "t_lo": [1, 1, 0], "t_hi": [2, 2, 0],
...                                        "x": [0.5, 1.5, 2.5]}))
...     idx.save(tmp + "/ix")
...     archive = open_reader(tmp + "/ix").load().archive
...     mapped = isinstance(archive.t_lo, np.memmap)
...     groups = archive.group_labels[archive.group_of].tolist()
>>> mapped, groups          # rows in time order (index/store/time_order.py)
(True, ['a', 'b', 'b'])
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from contextlib import ExitStack
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from uncertain_cep.errors import IndexFormatError
from uncertain_cep.index.rtree_boxes import EventLayout
from uncertain_cep.index.store.column_checks import check_event_columns
from uncertain_cep.index.store.manifest import Manifest
from uncertain_cep.index.store.node_columns import group_codes
from uncertain_cep.index.store.npy_files import NpyWriter
from uncertain_cep.model.attributes import NumericAttribute, text_values
from uncertain_cep.model.events import Archive
from uncertain_cep.model.instant_weights import WEIGHT_COLUMNS, stored_instant_weights

__all__ = ["SideBySideEvents", "open_event_columns", "text_columns",
           "write_event_columns"]

# Files of the directory (besides the layout's columns, named as in the events table).
_IDS, _GROUP_CODES, _LABELS = "event_id.npy", "group_code.npy", "group_labels.parquet"
_TIMES = ("t_lo", "t_hi")
_BOUNDS = ("lo", "hi", "mu", "sigma")
# The layout's columns (layout.EVENT_COLUMNS, in that order) are typed as EventLayout's.
_LAYOUT_TYPES = (np.int64, np.int64, np.int64, np.float64, np.float64)
# Rows of the events table converted at a time.
_BATCH_ROWS = 1 << 18


def _attribute_file(position: int, bound: str) -> str:
    # Attribute names are the user's column names: files are named by position instead.
    return f"numeric-{position}-{bound}.npy"


def _bounds(columns: Collection[str], name: str) -> tuple[str, ...]:
    """The bounds stored for numeric attribute ``name``: a truncated normal's too when the
    events table has its ``_mu`` column."""
    return _BOUNDS if f"{name}_mu" in columns else _BOUNDS[:2]


def _integer_ids(manifest: Manifest) -> bool:
    return dict(manifest.schema).get("event_id", "").startswith(("int", "uint"))


def _id_type(stored: str) -> type:
    """The ``.npy`` type of integer ids: uint64 where the archive kept ids past int64's
    largest value (:func:`uncertain_cep.model.events.read_archive`), else int64."""
    return np.uint64 if stored == "uint64" else np.int64


def text_columns(manifest: Manifest) -> list[str]:
    """The events table's columns that opening an index reads (the rest is mapped): string
    event ids and categorical attributes."""
    return ([] if _integer_ids(manifest) else ["event_id"]) + list(
        manifest.attributes.categorical)


def write_event_columns(directory: Path, event_files: list[Path], *, group_by: str,
                        numeric: tuple[str, ...], layout_columns: tuple[str, ...],
                        keys: pd.Index) -> None:
    """Write the numeric columns of an events table (``event_files``, in row order) into
    ``directory``, one ``.npy`` file each; ``keys``: every group key, sorted (position =
    group code), which ``group_labels.parquet`` keeps."""
    directory.mkdir(parents=True, exist_ok=True)
    schema = pq.read_schema(event_files[0]) if event_files else None
    n_rows = sum(pq.ParquetFile(f).metadata.num_rows for f in event_files)
    files: dict[str, tuple[str, type]] = {}
    if schema is not None:
        if pa.types.is_integer(schema.field("event_id").type):
            files[_IDS] = ("event_id", _id_type(str(schema.field("event_id").type)))
        for t in _TIMES:
            files[f"{t}.npy"] = (t, np.int64)
        for i, name in enumerate(numeric):
            for bound in _bounds(schema.names, name):
                files[_attribute_file(i, bound)] = (f"{name}_{bound}", np.float64)
        for column, dtype in zip(layout_columns, _LAYOUT_TYPES, strict=True):
            files[f"{column}.npy"] = (column, dtype)
    # Each file written batch after batch at its end, not through a map of it: a page
    # written through a map of a new file is first read, zero-filled, from its hole
    # (a third of a Spark slice's time at 100M with two workers; npy_files.py).
    with ExitStack() as stack:
        codes = stack.enter_context(NpyWriter(directory / _GROUP_CODES, np.int64))
        outputs = [(column, stack.enter_context(NpyWriter(directory / file, dtype)))
                   for file, (column, dtype) in files.items()]
        for batch in _batches(event_files, [group_by, *{c for c, _ in files.values()}]):
            frame = batch.to_pandas()
            codes.append(group_codes(keys, frame[group_by]))
            for column, out in outputs:
                out.append(frame[column].to_numpy(dtype=out.dtype))
    if codes.length != n_rows:
        raise IndexFormatError(f"{directory}: {codes.length} event rows read where the "
                               f"files' footers count {n_rows}; rebuild the index")
    group_type = schema.field(group_by).type if schema is not None else None
    pq.write_table(pa.table({group_by: pa.array(keys.to_numpy(), type=group_type)}),
                   directory / _LABELS)


class SideBySideEvents:
    """The event columns of several indexes written side by side into ``into``, one
    index's ``event_columns`` directory at a time (:meth:`append`; alike, in order):
    rows after rows, group codes moved past the groups before, the group labels one
    after another (they may repeat). A context manager: leaving it writes the labels and
    closes the files."""

    def __init__(self, into: Path) -> None:
        into.mkdir(parents=True, exist_ok=True)
        self._into = into
        self._columns: dict[str, NpyWriter] = {}
        self._labels: list[pa.Table] = []
        self._groups = 0

    def append(self, part: Path) -> None:
        """Write the event columns in ``part`` after those appended before."""
        files = sorted(f.name for f in part.glob("*.npy"))
        if self._labels and files != sorted(self._columns):
            raise IndexFormatError(f"{part} holds the event columns {files}, the shards "
                                   f"before it {sorted(self._columns)}; rebuild the index")
        labels = pq.read_table(part / _LABELS)
        for file in files:
            column = np.load(part / file, mmap_mode="r")
            if file not in self._columns:
                self._columns[file] = NpyWriter(self._into / file, column.dtype)
            self._columns[file].append(column + self._groups if file == _GROUP_CODES
                                       else column)
        self._groups += labels.num_rows
        self._labels.append(labels)

    def close(self) -> None:
        for column in self._columns.values():
            column.close()
        if self._labels:
            pq.write_table(pa.concat_tables(self._labels), self._into / _LABELS)

    def __enter__(self) -> SideBySideEvents:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _batches(files: list[Path], columns: list[str]) -> Iterator[pa.RecordBatch]:
    for path in files:
        yield from pq.ParquetFile(path).iter_batches(batch_size=_BATCH_ROWS, columns=columns)


def open_event_columns(directory: Path, manifest: Manifest,
                       read_text: Callable[[list[str]], pd.DataFrame],
                       layout_columns: tuple[str, ...], *, check: bool = True
                       ) -> tuple[Archive, EventLayout]:
    """The archive and layout of an index, numeric columns memory-mapped
    copy-on-write (the files are never written; see :func:`open_node_columns`);
    ``read_text(columns)`` reads the events table's text columns (:func:`text_columns`).
    ``check``: check the numbers that index other arrays (``False``: this host checked
    these very files before, :mod:`~uncertain_cep.index.store.host_checks`)."""
    n = manifest.counts.events

    def mapped(file: str, dtype: type) -> np.ndarray:
        path = directory / file
        try:
            array = np.load(path, mmap_mode="c", allow_pickle=False)
        except (OSError, ValueError, EOFError) as e:
            raise IndexFormatError(f"{path} is damaged: {e}; rebuild the index") from e
        if array.dtype != dtype or array.shape != (n,):
            raise IndexFormatError(f"{path} holds {array.dtype} {array.shape}, not the "
                                   f"{n} {np.dtype(dtype)} values of its column; rebuild "
                                   "the index")
        return array

    text = read_text(text_columns(manifest))
    stored = dict(manifest.schema)
    ids = (mapped(_IDS, _id_type(stored["event_id"]))
           if "event_id" not in text else text_values(text["event_id"]))
    numeric = {}
    for i, name in enumerate(manifest.attributes.numeric):
        bounds = [mapped(_attribute_file(i, b), np.float64) for b in _bounds(stored, name)]
        numeric[name] = NumericAttribute(name, *bounds)
    try:
        labels = pq.read_table(directory / _LABELS).column(0).to_pandas()
    except (OSError, pa.ArrowException) as e:
        raise IndexFormatError(f"{directory / _LABELS} is damaged: {e}; rebuild the "
                               "index") from e
    t_lo, t_hi = mapped("t_lo.npy", np.int64), mapped("t_hi.npy", np.int64)
    weight_columns = [c for c in WEIGHT_COLUMNS if c in stored]
    weights = (stored_instant_weights(read_text(weight_columns), t_lo, t_hi)
               if weight_columns else None)
    archive = Archive(event_ids=ids, group_by=manifest.group_by,
                      group_labels=np.asarray(labels, dtype=object),
                      group_of=mapped(_GROUP_CODES, np.int64),
                      t_lo=t_lo, t_hi=t_hi,
                      numeric=numeric,
                      categorical={c: text_values(text[c])
                                   for c in manifest.attributes.categorical},
                      time_axis=manifest.time_axis, instant_weights=weights)
    pos, t_min, t_max, code_lo, code_hi = (
        mapped(f"{c}.npy", dtype) for c, dtype in zip(layout_columns, _LAYOUT_TYPES, strict=True))
    layout = EventLayout(positions=pos, t_min=t_min, t_max=t_max, code_lo=code_lo,
                         code_hi=code_hi)
    if check:
        check_event_columns(archive.group_of, layout, directory, n_groups=len(labels),
                            group_file=_GROUP_CODES, position_file=f"{layout_columns[0]}.npy")
    return archive, layout
