"""The node table on disk: one ``.npy`` file per column, memory-mapped when read.

An index stores its OI-trees twice: as the Parquet ``nodes`` and ``trees`` tables (one row
per node and per tree, with group-local ids: what Spark, DuckDB and the time-sliced query
engine read) and as the :class:`~uncertain_cep.index.node_table.NodeTable` the batch engine
reads, with global ids, one flat typed array per column. Opening an index maps those
arrays (:func:`open_node_columns`) and reads nothing else of them: a query's pages are
read when it gathers them, so memory grows with what a query touches, not with the
archive.

:func:`write_node_columns` derives the columns from the Parquet tables after a build (the
in-process and the Spark builder alike), file by file into memory-mapped outputs, so a
build's memory grows with its largest part file, not with the index. Each part file holds
whole groups (every builder writes a group's rows from one task).

>>> import tempfile
>>> import pandas as pd
>>> import uncertain_cep as uc
>>> from uncertain_cep.index.store.reader import open_reader
>>> with tempfile.TemporaryDirectory() as tmp:
...     # Rows already in time order, which the stored archive keeps.
...     idx = uc.build_index(pd.DataFrame({"event_id": [1, 2, 3], "group": [0, 0, 1],
...                                        "t_lo": [1, 1, 3], "t_hi": [2, 2, 3]}))
...     idx.save(tmp + "/ix")
...     stored = open_reader(tmp + "/ix").load().node_table
...     same = all(np.array_equal(getattr(stored, c), getattr(idx._index.node_table, c))
...                for c in NODE_TABLE_COLUMNS)
...     mapped = isinstance(stored.poi, np.memmap)
>>> same, mapped
(True, True)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from uncertain_cep.errors import IndexFormatError
from uncertain_cep.index.forests.forest import REAL
from uncertain_cep.index.node_rows import (
    NODE_ROW_COLUMNS,
    TREE_ROW_COLUMNS,
    DenseIds,
    DenseRows,
    TableSizes,
    TreeColumns,
    add_depth_of_trees_above,
    fill_nodes,
    node_column_sizes,
    release_pages,
    starts,
)
from uncertain_cep.index.node_table import NodeTable, column_dtype, id_dtype

__all__ = ["NODE_TABLE_COLUMNS", "group_codes", "node_column_files", "open_node_columns",
           "write_node_columns"]

NODE_TABLE_COLUMNS = tuple(f.name for f in dataclasses.fields(NodeTable))
# Rows of the nodes table read at a time (then cut back to whole groups).
_PIECE_ROWS = 1 << 20


def open_node_columns(directory: Path,
                      opened: Mapping[str, BinaryIO] | None = None) -> NodeTable:
    """The node table stored in ``directory``, every column memory-mapped copy-on-write
    (``opened``: from files already open, by :func:`node_column_files` names).

    Copy-on-write (not read-only): the file is never written, and the kernels see the
    same writable array type as for an index built in memory, so numba compiles each
    kernel once, not once more for read-only arrays."""
    arrays: dict[str, np.ndarray] = {}
    for column in NODE_TABLE_COLUMNS:
        path = directory / f"{column}.npy"
        name = f"{directory.name}/{column}.npy"
        try:
            if opened is not None and name in opened:
                arrays[column] = _map_open_npy(opened[name])
            else:
                arrays[column] = np.load(path, mmap_mode="c", allow_pickle=False)
        except (OSError, ValueError, EOFError) as e:
            raise IndexFormatError(f"{path} is damaged: {e}; rebuild the index") from e
    ids = id_dtype(len(arrays["group"]), len(arrays["row_nodes_start"]) - 1)
    for column, values in arrays.items():
        if values.dtype != column_dtype(column, ids) or values.ndim != 1:
            raise IndexFormatError(f"{directory / column}.npy holds {values.dtype} "
                                   f"{values.shape}, not a column of "
                                   f"{column_dtype(column, ids)}; rebuild the index")
    return NodeTable(**arrays)


def node_column_files(directory: Path) -> list[str]:
    """The node table's files, relative to the index (``columns/poi.npy``, ...)."""
    return [f"{directory.name}/{column}.npy" for column in NODE_TABLE_COLUMNS]


def _map_open_npy(fh: BinaryIO) -> np.ndarray:
    """An open ``.npy`` file mapped copy-on-write, as ``np.load(..., mmap_mode="c")``
    maps a path (which it cannot do for an open file)."""
    fh.seek(0)
    version = np.lib.format.read_magic(fh)
    read_header = {(1, 0): np.lib.format.read_array_header_1_0,
                   (2, 0): np.lib.format.read_array_header_2_0}.get(version)
    if read_header is None:
        raise ValueError(f".npy format version {version}, which this version does not map")
    shape, fortran, dtype = read_header(fh)
    if dtype.hasobject:
        raise ValueError("a column of Python objects")
    return np.memmap(fh, dtype=dtype, mode="c", shape=shape,
                     order="F" if fortran else "C", offset=fh.tell())


def write_node_columns(directory: Path, node_files: list[Path], tree_files: list[Path],
                       event_files: list[Path], group_by: str, keys: pd.Index) -> None:
    """Derive the node table from an index's Parquet tables into ``directory``.

    Parameters
    ----------
    node_files, tree_files, event_files
        The part files of the nodes, trees and events tables; events in archive row order.
    group_by
        The events table's group column.
    keys
        Every group key, sorted: position = group code.
    """
    directory.mkdir(parents=True, exist_ok=True)
    n_groups = len(keys)
    # Pass 0: sizes per group and per archive row, and each event's archive row.
    node_count = np.zeros(n_groups, dtype=np.int64)
    child_count = np.zeros(n_groups, dtype=np.int64)
    tree_count = np.zeros(n_groups, dtype=np.int64)
    event_group, event_pos = [], []
    for batch in _batches(event_files, [group_by, "_uc_pos"]):
        event_group.append(group_codes(keys, batch[group_by]))
        event_pos.append(batch["_uc_pos"].to_numpy(dtype=np.int64))
    rows = DenseRows(_cat(event_group), _cat(event_pos), n_groups)
    nodes_per_row = np.zeros(rows.n_rows, dtype=np.int64)
    for batch in _batches(node_files, ["group", "parent", "kind", "event"]):
        g = group_codes(keys, batch["group"])
        node_count += np.bincount(g, minlength=n_groups)
        child_count += np.bincount(g[batch["parent"].to_numpy() >= 0], minlength=n_groups)
        real = batch["kind"].to_numpy() == REAL
        nodes_per_row += np.bincount(rows(g[real], batch["event"].to_numpy()[real]),
                                     minlength=rows.n_rows)
    for batch in _batches(tree_files, ["group"]):
        tree_count += np.bincount(group_codes(keys, batch["group"]), minlength=n_groups)
    sizes = TableSizes(group_start=starts(node_count), tree_start=starts(tree_count),
                   child_offset=starts(child_count), row_nodes_start=starts(nodes_per_row))
    ids, tree_ids = DenseIds(sizes.group_start), DenseIds(sizes.tree_start)
    trees = TreeColumns.of(((group_codes(keys, b["group"]), _as_columns(b))
                             for b in _batches(tree_files, list(TREE_ROW_COLUMNS))),
                            tree_ids, ids, int(sizes.tree_start[-1]))

    n_nodes = int(sizes.group_start[-1])
    width = id_dtype(n_nodes, rows.n_rows)
    out = {c: _create(directory, c, n, column_dtype(c, width))
           for c, n in node_column_sizes(sizes)}
    for name, values in (*sizes.arrays(), *trees.arrays()):
        np.save(directory / f"{name}.npy", values.astype(column_dtype(name, width)))
    # Pass 1, part file by part file (each holds whole groups).
    for nodes in _whole_groups(node_files, list(NODE_ROW_COLUMNS)):
        g = group_codes(keys, nodes["group"])
        fill_nodes(out, _as_columns(nodes), g, ids(g, nodes["node"].to_numpy(dtype=np.int64)),
                    ids(g, nodes["parent"].to_numpy(dtype=np.int64)), tree_ids, rows,
                    sizes, trees)
        release_pages(out.values())
    out["child_start"][n_nodes] = sizes.child_offset[-1]
    add_depth_of_trees_above(out, trees, n_nodes)
    for array in out.values():
        array.flush()


def _as_columns(frame: pd.DataFrame) -> dict[str, np.ndarray]:
    return {c: frame[c].to_numpy() for c in frame.columns}


def _whole_groups(files: list[Path], columns: list[str]) -> Iterator[pd.DataFrame]:
    """The rows of the part files in pieces of whole groups (about a million rows each;
    one group's rows are contiguous in its part file), so that memory stays bounded by
    a piece, not a part file."""
    for name in files:
        carry: pd.DataFrame | None = None
        for batch in pq.ParquetFile(name).iter_batches(batch_size=_PIECE_ROWS,
                                                        columns=columns):
            rows = batch.to_pandas()
            if carry is not None:
                rows = pd.concat([carry, rows], ignore_index=True)
            group = rows["group"].to_numpy()
            # The last group may go on in the next batch: hold it back.
            changes = np.flatnonzero(group[1:] != group[:-1])
            last = int(changes[-1]) + 1 if len(changes) else 0
            carry = rows.iloc[last:]
            if last:
                yield rows.iloc[:last]
        if carry is not None and len(carry):
            yield carry


def _batches(files: list[Path], columns: list[str]) -> Iterator[pd.DataFrame]:
    for name in files:
        for batch in pq.ParquetFile(name).iter_batches(batch_size=1 << 20, columns=columns):
            yield batch.to_pandas()


def group_codes(keys: pd.Index, values: object) -> np.ndarray:
    """Group codes of group keys (every key must be known)."""
    codes = keys.get_indexer(pd.Index(np.asarray(values)))
    if (codes < 0).any():
        raise IndexFormatError("the nodes or events table names a group the trees table "
                               "does not hold; rebuild the index")
    return codes.astype(np.int64)


def _cat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)


def _create(directory: Path, column: str, n: int, dtype: np.dtype) -> np.memmap:
    return np.lib.format.open_memmap(directory / f"{column}.npy", mode="w+", dtype=dtype,
                                     shape=(n,))
