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
by the processes of the host.

When every shard of the index is put side by side (the local engine's whole-index
query; every Spark slice, where the host's cache can hold that copy:
:func:`~uncertain_cep.index.store.working_copy.holds_whole`), a shard whose own copy
the cache does not hold is expanded into a temporary folder, appended and deleted
before the next, the next ones expanded meanwhile in threads
(:func:`~uncertain_cep.index.store.working_copy.passing_copies`): the host's disk holds
the shards once, side by side, not twice. A Spark slice of an index too large for that
puts its few shards side by side and keeps their own copies, which the next slice
shares. The shards' R*-tree files (every chunk's) are linked into it, each shard's
searched on its own
(:class:`~uncertain_cep.index.shards.merge.ShardSearch`).

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

import contextlib
import hashlib
import os
import shutil
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from uncertain_cep.errors import IndexFormatError
from uncertain_cep.index.node_table import column_dtype, id_dtype
from uncertain_cep.index.shards.merge import OFFSET_COLUMNS, moved_column, node_table_sizes
from uncertain_cep.index.store.event_columns import SideBySideEvents
from uncertain_cep.index.store.layout import COLUMNS, EVENT_ARRAYS, RTREE
from uncertain_cep.index.store.node_columns import NODE_TABLE_COLUMNS, open_node_columns
from uncertain_cep.index.store.npy_files import NpyWriter
from uncertain_cep.index.store.working_copy import cached

__all__ = ["RTREES", "side_by_side_copy", "write_side_by_side"]

# The shards' R*-tree files, one folder each (00000, 00001, ... in the order given).
RTREES = "rtrees"


def side_by_side_copy(index_key: str, shards: Sequence[int],
                      parts: Callable[[], Iterable[Path]], *, n_nodes: int, n_rows: int
                      ) -> Path:
    """The working copy of the shards ``shards`` of the index ``index_key`` names (its
    manifest's digest), side by side, made now from their own working copies
    (``parts()``, one at a time) if the cache does not hold it; ``n_nodes`` and
    ``n_rows``: what the shards hold together."""
    name = hashlib.sha256(f"{index_key}:{','.join(map(str, shards))}".encode()).hexdigest()
    return cached(f"{name}-side-by-side", lambda into: write_side_by_side(
        parts(), into, n_nodes=n_nodes, n_rows=n_rows))


def write_side_by_side(parts: Iterable[Path], into: Path, *, n_nodes: int, n_rows: int
                       ) -> None:
    """Write the working copies ``parts`` (shards in time order) side by side into
    ``into``: node columns with their ids offset, event columns one after another, and
    each shard's R*-tree files (linked where the filesystem allows, else copied). A part
    is read once, whole, before the next is asked for (it may be a temporary expansion
    deleted then); one shard's column is in memory at a time. ``n_nodes`` and ``n_rows``,
    what the parts hold together, choose the columns' types."""
    ids = id_dtype(n_nodes, n_rows)
    (into / COLUMNS).mkdir(parents=True)
    moved = dict.fromkeys(("nodes", "trees", "rows", "groups", "children", "row_nodes"), 0)
    with contextlib.ExitStack() as stack:
        columns = {name: stack.enter_context(NpyWriter(into / COLUMNS / f"{name}.npy",
                                                       column_dtype(name, ids)))
                   for name in NODE_TABLE_COLUMNS}
        events = stack.enter_context(SideBySideEvents(into / EVENT_ARRAYS))
        for k, part in enumerate(parts):
            table = open_node_columns(part / COLUMNS)
            for name, out in columns.items():
                # A CSR offset column loses its last entry: the next part's first
                # stands for it, the total after the last part.
                out.append(moved_column(name, getattr(table, name), moved, last=False))
            for kind, (size,) in node_table_sizes([table]).items():
                moved[kind] += size
            del table
            events.append(part / EVENT_ARRAYS)
            _link_rtrees(part, into / RTREES / f"{k:05d}")
        for name in OFFSET_COLUMNS:
            columns[name].append(moved_column(name, np.zeros(1, np.int64), moved, last=True))
    if moved["nodes"] != n_nodes or moved["rows"] != n_rows:
        raise IndexFormatError(f"the shards' working copies hold {moved['nodes']} nodes "
                               f"and {moved['rows']} events, their manifests {n_nodes} and "
                               f"{n_rows}; rebuild the index")


def _link_rtrees(part: Path, folder: Path) -> None:
    folder.mkdir(parents=True)
    # Every chunk's files (layout.rtree_files).
    for path in sorted(part.glob(f"{RTREE}*")):
        if path.is_file():
            try:
                os.link(path, folder / path.name)
            except OSError:
                shutil.copyfile(path, folder / path.name)
