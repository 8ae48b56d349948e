"""Handing back the pages a query touched in an index's memory-mapped columns.

A worker that keeps an index open across time slices (a Spark executor's Python worker,
:func:`~uncertain_cep.pipeline.time_slices.opened_index`) would otherwise keep every page
any of its slices gathered from mapped in its address space: at 100M events a host's copy
of the whole index is about 49 GB, and each worker's share of what its slices touched
counts in its proportional set size (PSS) for as long as it lives. After a slice, the
columns' mappings are told the pages are not needed (``madvise(MADV_DONTNEED)``): the
process drops them (its PSS falls back), the page cache keeps them, so the next slice
that needs one maps it again from memory, without reading the disk. The mappings are
copy-on-write and never written, so nothing is lost.

>>> import tempfile
>>> from pathlib import Path
>>> with tempfile.TemporaryDirectory() as tmp:
...     np.save(Path(tmp) / "a.npy", np.arange(10_000))
...     column = np.load(Path(tmp) / "a.npy", mmap_mode="c")
...     total = int(column.sum())
...     released = release_mapped_pages([column, column[5:], np.zeros(3)])
...     again = int(column.sum())
>>> released, total == again
(1, True)
"""

from __future__ import annotations

import dataclasses
import mmap
from collections.abc import Iterable
from typing import Any

import numpy as np

from uncertain_cep.index.event_index import EventIndex

__all__ = ["index_columns", "release_mapped_pages"]


def release_mapped_pages(arrays: Iterable[Any]) -> int:
    """Tell the kernel the pages of every memory-mapped array among ``arrays`` are not
    needed now (views of one mapping count once); how many mappings were released."""
    seen: set[int] = set()
    for array in arrays:
        mapping = getattr(array, "_mmap", None)
        if not isinstance(mapping, mmap.mmap) or id(mapping) in seen or mapping.closed:
            continue
        seen.add(id(mapping))
        mapping.madvise(mmap.MADV_DONTNEED)
    return len(seen)


def index_columns(index: EventIndex) -> list[np.ndarray]:
    """The per-row and per-node arrays of an open index (its archive, its layout and,
    once loaded, its node table): what :func:`release_mapped_pages` is given."""
    archive, layout = index.archive, index.layout
    arrays = [archive.event_ids, archive.group_of, archive.t_lo, archive.t_hi,
              layout.positions, layout.t_min, layout.t_max, layout.code_lo, layout.code_hi]
    for attribute in archive.numeric.values():
        arrays += [attribute.lo, attribute.hi]
    table = index.__dict__.get("node_table")
    if table is not None:
        arrays += [getattr(table, f.name) for f in dataclasses.fields(table)]
    return arrays
