"""What the compiled kernels need of an index's stored numbers, checked once when its
columns are mapped: every id within the array it indexes, every offset array
monotone from 0 to the length of the array it cuts, every parent numbered before its
child (so walking up ends).

The kernels index with these numbers without checking them (a check per access would
cost every query); the checksums (:mod:`uncertain_cep.index.store.checksums`) find damage, and
these checks make sure that even numbers that pass them (an index written by another
program, or a builder's bug) never make a kernel read outside an array: such an index is
refused with an :class:`~uncertain_cep.errors.IndexFormatError` naming the file.

>>> import pandas as pd
>>> from uncertain_cep.index.event_index import EventIndex
>>> from uncertain_cep.index.group_build import BuildSettings
>>> from uncertain_cep.model.events import read_archive
>>> from pathlib import Path
>>> index = EventIndex(read_archive(pd.DataFrame({"event_id": [1, 2], "group": 0,
...                                               "t_lo": [1, 1], "t_hi": [2, 2]})),
...                    BuildSettings())
>>> table = index.node_table
>>> check_node_table(table, Path("columns"), n_rows=2, n_groups=1)
>>> table.parent[1] = 7
>>> check_node_table(table, Path("columns"), n_rows=2, n_groups=1)
Traceback (most recent call last):
...
uncertain_cep.errors.IndexFormatError: columns/parent.npy holds a value outside [-1, 5) at ...
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from uncertain_cep.errors import IndexFormatError
from uncertain_cep.index.node_table import NodeTable
from uncertain_cep.index.rtree_boxes import EventLayout

__all__ = ["check_event_columns", "check_node_table"]


# Values checked at a time: the checks' temporaries stay small, and each piece's pages
# are dropped from this process after (see _pieces).
_PIECE = 1 << 20


def _pieces(values: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """``(start, piece)`` of an array; a memory-mapped array's pages are let go after each
    piece, so checking a column does not leave it resident (the queries read only parts)."""
    mapped = getattr(values, "_mmap", None)
    for start in range(0, len(values), _PIECE):
        yield start, np.asarray(values[start:start + _PIECE])
    if mapped is not None and hasattr(mmap, "MADV_DONTNEED"):
        mapped.madvise(mmap.MADV_DONTNEED)      # clean pages: read again when used


def _first_outside(values: np.ndarray, lo: int, hi: int) -> int:
    """The position of the first value outside ``[lo, hi)``, or -1."""
    for start, piece in _pieces(values):
        if piece.min() < lo or piece.max() >= hi:
            return start + int(np.flatnonzero((piece < lo) | (piece >= hi))[0])
    return -1


def _first_not_before_own_position(values: np.ndarray) -> int:
    """The position of the first value not below its own position (a parent after its
    child), or -1."""
    for start, piece in _pieces(values):
        late = piece >= np.arange(start, start + len(piece))
        if late.any():
            return start + int(np.flatnonzero(late)[0])
    return -1


def _first_fall(values: np.ndarray) -> int:
    """The position of the first value below the one before it, or -1."""
    previous = None
    for start, piece in _pieces(values):
        if previous is not None and piece[0] < previous:
            return start
        falls = np.flatnonzero(piece[1:] < piece[:-1])
        if len(falls):
            return start + int(falls[0]) + 1
        previous = piece[-1]
    return -1


class _Checks:
    """The checks of one directory's columns; each failure names the column's file."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def fail(self, column: str, what: str) -> IndexFormatError:
        return IndexFormatError(f"{self.directory / column}.npy {what}; the index is damaged "
                                "or was not written by uncertain-cep: rebuild it")

    def length(self, column: str, values: np.ndarray, n: int) -> None:
        if len(values) != n:
            raise self.fail(column, f"holds {len(values)} values where the index has {n}")

    def ids(self, column: str, values: np.ndarray, lo: int, hi: int, *,
            before_own_position: bool = False) -> None:
        """Every value in ``[lo, hi)`` (and, for parents, below its own position)."""
        if (at := _first_outside(values, lo, hi)) >= 0:
            raise self.fail(column, f"holds a value outside [{lo}, {hi}) at position {at} "
                                    f"({int(values[at])})")
        if before_own_position and (at := _first_not_before_own_position(values)) >= 0:
            raise self.fail(column, f"holds at position {at} a parent ({int(values[at])}) "
                                    "numbered after its child")

    def offsets(self, column: str, values: np.ndarray, n_parts: int, end: int) -> None:
        """A CSR offset array: ``n_parts + 1`` values, from 0 to ``end``, never falling."""
        self.length(column, values, n_parts + 1)
        if values[0] != 0 or values[-1] != end:
            raise self.fail(column, f"runs from {int(values[0])} to {int(values[-1])}, "
                                    f"not from 0 to {end}")
        if (at := _first_fall(values)) >= 0:
            raise self.fail(column, f"falls at position {at}: offsets never fall")


def check_node_table(table: NodeTable, directory: Path, *, n_rows: int, n_groups: int) -> None:
    """Check the mapped node table of an index (``directory``: its ``columns`` folder)
    against itself and the archive's ``n_rows`` events in ``n_groups`` groups.

    Raises
    ------
    IndexFormatError
        Naming the first file whose numbers a kernel could not use safely.
    """
    c = _Checks(directory)
    n = len(table.group)
    n_trees = len(table.tree_parent)
    for column in ("row", "instant", "tree", "poi", "code", "code_end", "kind", "parent",
                   "cond", "depth", "child_root"):
        c.length(column, getattr(table, column), n)
    for column in ("tree_level", "tree_virtual", "tree_last_code", "tree_root"):
        c.length(column, getattr(table, column), n_trees)
    c.offsets("group_start", table.group_start, n_groups, n)
    c.offsets("tree_start", table.tree_start, n_groups, n_trees)
    c.offsets("row_nodes_start", table.row_nodes_start, n_rows, len(table.row_nodes))
    c.offsets("child_start", table.child_start, n, len(table.child_list))
    c.ids("group", table.group, 0, n_groups)
    c.ids("row", table.row, -1, n_rows)
    c.ids("tree", table.tree, 0, n_trees)
    c.ids("kind", table.kind, 0, 3)
    c.ids("parent", table.parent, -1, n, before_own_position=True)
    c.ids("depth", table.depth, 0, max(n, 1))
    c.ids("child_list", table.child_list, 0, n)
    c.ids("child_root", table.child_root, -1, n)
    c.ids("row_nodes", table.row_nodes, 0, n)
    c.ids("tree_parent", table.tree_parent, -1, n_trees, before_own_position=True)
    c.ids("tree_level", table.tree_level, 0, max(n_trees, 1))
    c.ids("tree_virtual", table.tree_virtual, -1, n)
    c.ids("tree_root", table.tree_root, -1, n)


def check_event_columns(group_of: np.ndarray, layout: EventLayout, directory: Path, *,
                        n_groups: int, group_file: str, position_file: str) -> None:
    """Check the mapped event columns that index other arrays: each event's group code
    (``group_file``) and its position in its group's forest (``position_file``)."""
    c = _Checks(directory)
    c.ids(group_file.removesuffix(".npy"), group_of, 0, n_groups)
    c.ids(position_file.removesuffix(".npy"), layout.positions, 0, max(len(group_of), 1))
