"""Shards side by side as one working copy: a query over several shards maps them as it
maps one index.

Shards share no node, tree or event (:mod:`uncertain_cep.index.shards`), so several of
them are one index whose ids are offset shard by shard
(:func:`~uncertain_cep.index.shards.merge.moved_column`). Concatenating their columns in
each process that opens them would hold a copy of every column in its memory (1.8 GB at 1M
events in 4 shards, against 0.7 GB for one directory mapped). Instead the shards' working
copies (:mod:`uncertain_cep.index.store.working_copy`) are concatenated once per host into
a working copy of their own, in the same cache (named by the index and the shards), which
every process then memory-maps: its pages are read where a query gathers them and shared
by the processes of the host. The shards' R*-tree files (every chunk's) are linked into
it, each shard's searched on its own (:class:`~uncertain_cep.index.shards.merge.ShardSearch`).

>>> import os, tempfile
>>> import numpy as np
>>> import pandas as pd
>>> import uncertain_cep as uc
>>> from uncertain_cep.index.store.reader import open_reader
>>> with tempfile.TemporaryDirectory() as tmp:
...     uc.build_index(pd.DataFrame({"event_id": [1, 2, 3], "group": 0, "t_lo": [1, 1, 5],
...                                  "t_hi": [2, 2, 6]})).save(tmp + "/ix", shard_events=2)
...     index = open_reader(tmp + "/ix").load()
...     mapped = isinstance(index.node_table.poi, np.memmap)
>>> mapped, index.archive.event_ids.tolist()
(True, [1, 2, 3])
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

from uncertain_cep.index.node_rows import column_dtype
from uncertain_cep.index.shards.merge import OFFSET_COLUMNS, moved_column, node_table_sizes
from uncertain_cep.index.store.event_columns import concatenate_event_columns
from uncertain_cep.index.store.layout import COLUMNS, EVENT_ARRAYS, RTREE
from uncertain_cep.index.store.node_columns import NODE_TABLE_COLUMNS, open_node_columns
from uncertain_cep.index.store.npy_files import write_npy
from uncertain_cep.index.store.working_copy import cached

__all__ = ["RTREES", "side_by_side_copy", "write_side_by_side"]

# The shards' R*-tree files, one folder each (00000, 00001, ... in the order given).
RTREES = "rtrees"


def side_by_side_copy(index_key: str, shards: Sequence[int],
                      parts: Callable[[], list[Path]]) -> Path:
    """The working copy of the shards ``shards`` of the index ``index_key`` names (its
    manifest's digest), side by side, made now from their own working copies
    (``parts()``) if the cache does not hold it."""
    name = hashlib.sha256(f"{index_key}:{','.join(map(str, shards))}".encode()).hexdigest()
    return cached(f"{name}-side-by-side", lambda into: write_side_by_side(parts(), into))


def write_side_by_side(parts: list[Path], into: Path) -> None:
    """Write the working copies ``parts`` (shards in time order) side by side into
    ``into``: node columns with their ids offset, event columns one after another, and
    each shard's R*-tree files (linked where the filesystem allows, else copied). One
    shard's column is in memory at a time."""
    tables = [open_node_columns(p / COLUMNS) for p in parts]
    sizes = node_table_sizes(tables)
    bases = [{k: int(sum(v[:i])) for k, v in sizes.items()} for i in range(len(parts))]
    (into / COLUMNS).mkdir(parents=True)
    last = len(parts) - 1
    for name in NODE_TABLE_COLUMNS:
        length = sum(len(getattr(t, name)) for t in tables) - (
            last if name in OFFSET_COLUMNS else 0)
        write_npy(into / COLUMNS / f"{name}.npy", column_dtype(name), length,
                  (moved_column(name, getattr(t, name), b, i == last)
                   for i, (t, b) in enumerate(zip(tables, bases))))
    concatenate_event_columns([p / EVENT_ARRAYS for p in parts], into / EVENT_ARRAYS)
    for k, part in enumerate(parts):
        folder = into / RTREES / f"{k:05d}"
        folder.mkdir(parents=True)
        # Every chunk's files (layout.rtree_files).
        for path in sorted(part.glob(f"{RTREE}*")):
            if path.is_file():
                try:
                    os.link(path, folder / path.name)
                except OSError:
                    shutil.copyfile(path, folder / path.name)
