"""The index's Parquet tables in time order, so that a time slice reads only its row groups.

A build writes each table group after group (one part file per build task). Every group
spans the whole time domain, so a row group of that layout holds all of time and a scan
for one time range prunes nothing. :func:`sort_table_by_time` rewrites each part file in
the order of its time column (the events' earliest instant, the trees' first instant),
cut into small row groups: their min/max statistics then bound the time of their rows,
and a scan with a time filter (:mod:`uncertain_cep.index.store.slice_reads`) skips the row
groups outside its range. A few files are sorted side by side, each in pieces of
bounded size, so memory does not grow with the archive.

>>> import tempfile
>>> from pathlib import Path
>>> with tempfile.TemporaryDirectory() as tmp:
...     part = Path(tmp) / "part-00000.parquet"
...     pq.write_table(pa.table({"t": [5, 1, 9, 1, 3], "g": ["b", "a", "a", "b", "a"]}), part)
...     sort_table_by_time([part], "t", row_group_rows=2, piece_rows=3)
...     stored = pq.read_table(part)
...     groups = pq.ParquetFile(part).metadata.num_row_groups
>>> stored.column("t").to_pylist(), stored.column("g").to_pylist(), groups
([1, 1, 3, 5, 9], ['a', 'b', 'a', 'b', 'a'], 3)

Rows of equal time keep their order (``1, 'a'`` was written before ``1, 'b'``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["SLICE_ROW_GROUP_ROWS", "sort_table_by_time"]

# Rows per row group of a time-ordered table: small enough that a slice's scan reads
# little beyond its range, large enough that a 10M-event index has about a thousand.
SLICE_ROW_GROUP_ROWS = 1 << 16
# Rows sorted in memory at a time (a few hundred MB of node rows), by each of at most
# _THREADS threads.
_PIECE_ROWS = 1 << 21
_THREADS = 4


def sort_table_by_time(files: Sequence[Path], time: str, *,
                       row_group_rows: int | None = None,
                       piece_rows: int = _PIECE_ROWS) -> None:
    """Rewrite every Parquet file in ``files`` sorted by its column ``time``, rows of
    equal time in the order they were (a stable sort: group after group, as written), in
    row groups of ``row_group_rows`` (default :data:`SLICE_ROW_GROUP_ROWS`); each file is
    replaced atomically.

    A file larger than ``piece_rows`` is split by quantiles of the time column into
    pieces written to scratch files beside it, each then sorted in memory: an external
    bucket sort whose memory is one piece (rows keep their order within a piece)."""
    # Files are sorted side by side (Arrow's reads, sorts and writes release the GIL),
    # a few at a time so that memory stays a few pieces.
    threads = max(1, min(len(files), os.cpu_count() or 1, _THREADS))
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda path: _sort_file(Path(path), time, row_group_rows
                                              or SLICE_ROW_GROUP_ROWS, piece_rows), files))


def _sort_file(path: Path, time: str, row_group_rows: int, piece_rows: int) -> None:
    source = pq.ParquetFile(path)
    schema, n_rows = source.schema_arrow, source.metadata.num_rows
    order = [(time, "ascending")]
    tmp = path.with_name(f".{path.name}.sorting")
    scratch = Path(tempfile.mkdtemp(prefix=f".{path.name}.pieces-", dir=path.parent))
    try:
        with pq.ParquetWriter(tmp, schema, compression="zstd") as out:
            for piece in _pieces(source, time, n_rows, piece_rows, scratch):
                out.write_table(piece.sort_by(order), row_group_size=row_group_rows)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
        shutil.rmtree(scratch, ignore_errors=True)


def _pieces(source: pq.ParquetFile, time: str, n_rows: int, piece_rows: int,
            scratch: Path) -> Iterator[pa.Table]:
    """The file's rows in pieces of consecutive time ranges, each about ``piece_rows``."""
    if n_rows <= piece_rows:
        yield source.read()
        return
    column = source.read(columns=[time]).column(0).to_numpy()
    n_pieces = -(-n_rows // piece_rows)
    edges = np.unique(np.quantile(column, np.linspace(0, 1, n_pieces + 1)[1:-1],
                                  method="lower"))
    del column
    writers: dict[int, pq.ParquetWriter] = {}
    try:
        for batch in source.iter_batches(batch_size=1 << 18):
            piece = np.searchsorted(edges, batch.column(time).to_numpy(), side="right")
            for k in np.unique(piece).tolist():
                if k not in writers:
                    # Read back once, right after: not worth compressing.
                    writers[k] = pq.ParquetWriter(scratch / f"{k:05d}.parquet",
                                                  source.schema_arrow, compression="none")
                writers[k].write_batch(batch.filter(pa.array(piece == k)))
    finally:
        for writer in writers.values():
            writer.close()
    for k in sorted(writers):
        yield pq.read_table(scratch / f"{k:05d}.parquet")
