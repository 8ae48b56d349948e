"""Answers of any size (issue 48): written to a Parquet dataset as they are found, or
yielded as Arrow record batches, never held whole.

A streamed answer is a directory of Parquet parts (``answer-00000.parquet``, ...), each in
the format of :mod:`uncertain_cep.answer_files` (``events`` as a list of ids, one column
per positive item, ``confidence``, ``t_first``, ``t_last``; the query and items in the
file's metadata). Each part holds up to ``part_rows`` rows, in row groups of up to
:data:`ROW_GROUP_ROWS` rows, each in the answer's order (confidence descending, then
event ids); row groups follow one another in the order the search found them, so **rows
are not sorted across row groups or parts** (the metadata says so too: ``"order":
"within row groups"``). :func:`~uncertain_cep.answer_files.read_answer` reads the
directory back as the answer table, sorted, when it fits in memory; any Parquet reader
(Spark, DuckDB, pyarrow) reads it as one table.

The directory is written as a draft beside its target and moved into place only once the
search is done: an interrupted query (Ctrl-C, an error) leaves no directory, and an
older answer at the path stays whole until then.

>>> import tempfile, pathlib
>>> import pandas as pd
>>> import uncertain_cep as uc
>>> idx = uc.build_index(pd.DataFrame({"event_id": [1, 2, 3], "group": 0, "t_lo": 0,
...                                    "t_hi": 2}))
>>> out = pathlib.Path(tempfile.mkdtemp()) / "answer"
>>> summary = idx.query("PATTERN SEQ(A, B)", out=out, part_rows=4)
>>> summary.rows, summary.parts, sorted(p.name for p in out.iterdir())
(6, 2, ['answer-00000.parquet', 'answer-00001.parquet'])
>>> uc.read_answer(out).equals(pd.DataFrame(idx.query("PATTERN SEQ(A, B)")))
True
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from uncertain_cep.answer_files import METADATA_KEY, item_columns
from uncertain_cep.errors import InputError
from uncertain_cep.files import check_write_target, replace_directory, writing_to
from uncertain_cep.model.time_axis import TimeAxis
from uncertain_cep.query.evaluation import interrupts
from uncertain_cep.query.evaluation.answer import Answer, significant
from uncertain_cep.query.evaluation.stats import QueryStats

__all__ = ["DEFAULT_BATCH_ROWS", "DEFAULT_PART_ROWS", "ROW_GROUP_ROWS", "AnswerBatches",
           "AnswerParts", "StreamedAnswer",
           "answer_record_batch", "answer_schema", "is_answer_directory"]

# Rows per Parquet part (file) of a streamed answer: about 4 MB of file for 3-event
# tuples (bench/bench_answer_forms.py: 42M rows in 163 MB).
DEFAULT_PART_ROWS = 1_000_000
# Rows per row group, the unit a streamed answer is sorted in and holds in memory: about
# three of them at once (one filling, one waiting, one being written). With 250,000 a
# streamed answer peaked at 1.3x the memory of LIMIT 10, with 125,000 at 1.2x.
ROW_GROUP_ROWS = 100_000
# Rows per record batch of idx.iter_query.
DEFAULT_BATCH_ROWS = 100_000

_PART = "answer-{:05d}.parquet"


@dataclass(frozen=True)
class StreamedAnswer:
    """What ``idx.query(..., out=PATH)`` returns: where the answer went, never its rows.

    Attributes
    ----------
    path
        The answer's directory of Parquet parts.
    rows
        Answer rows written.
    parts
        Parquet files written.
    query
        The query text.
    stats
        The evaluation counters (``QueryStats``).
    """

    path: Path
    rows: int
    parts: int
    query: str
    stats: QueryStats = field(repr=False)

    def read(self) -> pd.DataFrame:
        """The whole answer as one sorted table (it must fit in memory):
        :func:`~uncertain_cep.answer_files.read_answer`."""
        from uncertain_cep.answer_files import read_answer

        return read_answer(self.path)


def answer_schema(event_ids: np.ndarray, items: Sequence[str], time_axis: TimeAxis | None,
                  query: str) -> pa.Schema:
    """The Arrow schema of an answer over an archive with ``event_ids`` (their type),
    positive items ``items`` and ``time_axis`` (datetimes give timestamps)."""
    ids = _id_type(event_ids)
    times: pa.DataType = pa.int64()
    if time_axis is not None and time_axis.is_datetime:
        times = pa.timestamp("ns", tz=time_axis.timezone)
    meta = {"query": query, "items": list(items), "order": "within row groups",
            "note": "rows are in the answer's order within each row group, not across row "
                    "groups or parts"}
    return pa.schema([("events", pa.list_(ids)),
                      *[(name, ids) for name in item_columns(items)],
                      ("confidence", pa.float64()), ("t_first", times), ("t_last", times)],
                     metadata={METADATA_KEY: json.dumps(meta).encode()})


def _id_type(event_ids: np.ndarray) -> pa.DataType:
    if event_ids.dtype.kind in "iuf":
        return pa.from_numpy_dtype(event_ids.dtype)
    if len(event_ids) and not isinstance(event_ids[0], str):
        return pa.array(event_ids[:1]).type
    return pa.string()


def answer_record_batch(answer: Answer, event_ids: np.ndarray, schema: pa.Schema,
                        time_axis: TimeAxis | None) -> pa.RecordBatch:
    """The rows of ``answer`` (archive rows) as a record batch of ``schema``: ids
    gathered once per row and item, confidences rounded as the answer table rounds them,
    instants as datetimes on a datetime axis."""
    n, k = answer.events.shape
    ids = schema.field("events").type.value_type
    values = pa.array(event_ids[answer.events.ravel()], type=ids)
    events = pa.ListArray.from_arrays(pa.array(np.arange(0, n * k + 1, k, dtype=np.int32)),
                                      values)
    columns = [values.take(pa.array(np.arange(c, n * k, k))) if k > 1 else values
               for c in range(k)]
    times = [pa.array(_times(t, time_axis), type=schema.field("t_first").type)
             for t in (answer.t_first, answer.t_last)]
    return pa.RecordBatch.from_arrays(
        [events, *columns, pa.array(significant(answer.confidence, 15)), *times],
        schema=schema)


def _times(instants: np.ndarray, axis: TimeAxis | None) -> Any:
    if axis is None or not axis.is_datetime:
        return instants.astype(np.int64)
    return axis.datetimes(instants.astype(np.int64))


class AnswerParts:
    """Parquet parts written into a draft directory beside ``target``, moved into place
    by :meth:`commit` (or dropped by :meth:`discard`).

    Rows come in chunks of at most a row group (:data:`ROW_GROUP_ROWS`); each is made
    into a record batch (``to_batch``: sorted, ids gathered; None: chunks come as
    record batches made already) and written as a row group
    of the part being filled (``part_rows`` rows a part) by a thread of its own while the
    search goes on. One chunk waits at most, so memory holds about three row groups,
    whatever the parts' size; a failed write is raised at the next :meth:`write` or at
    :meth:`commit`."""

    def __init__(self, target: str | os.PathLike[str], schema: pa.Schema,
                 to_batch: Callable[[Answer], pa.RecordBatch] | None, part_rows: int) -> None:
        self.target = Path(target)
        self.part_rows = part_rows
        check_write_target(self.target, "answer directory")
        if self.target.exists() and not is_answer_directory(self.target):
            raise InputError(f"{self.target} exists and is not an answer directory (only "
                             "Parquet parts of an earlier answer are replaced); choose a "
                             "new path for out=")
        self.schema = schema
        self.to_batch = to_batch
        with writing_to(self.target, "answer directory"):
            self.target.parent.mkdir(parents=True, exist_ok=True)
            self.draft = Path(tempfile.mkdtemp(prefix=f".{self.target.name}.draft-",
                                               dir=self.target.parent))
        self.parts = 0
        self.rows = 0
        self._queue: queue.Queue[Answer | pa.RecordBatch | None] = queue.Queue(maxsize=1)
        self._failed: BaseException | None = None
        self._writer = threading.Thread(target=self._write_parts, daemon=True,
                                        name="uncertain-cep-answer-parts")
        self._writer.start()

    def write(self, answer: Answer | pa.RecordBatch) -> None:
        """Queue rows (one row group's worth) for the writer, waiting while the previous
        ones wait."""
        self._raise_failure()
        while self._writer.is_alive():
            try:
                self._queue.put(answer, timeout=0.1)
                break
            except queue.Full:
                interrupts.check()      # Ctrl-C while the disk is slow
        self._raise_failure()
        self.rows += len(answer)

    def _write_parts(self) -> None:
        """The writer: each queued chunk sorted and written as a row group of the part
        being filled, a new part begun once one holds ``part_rows`` rows."""
        writer: pq.ParquetWriter | None = None
        held = 0
        try:
            while (answer := self._queue.get()) is not None:
                batch = _as_batch(answer, self.to_batch)
                start = 0
                while start < batch.num_rows:
                    if writer is None:
                        with writing_to(self.target, "answer directory"):
                            writer = pq.ParquetWriter(self.draft / _PART.format(self.parts),
                                                      self.schema)
                        self.parts += 1
                        held = 0
                    take = min(batch.num_rows - start, self.part_rows - held)
                    with writing_to(self.target, "answer directory"):
                        writer.write_batch(batch.slice(start, take), row_group_size=take)
                    start += take
                    held += take
                    if held >= self.part_rows:
                        writer.close()
                        writer = None
        except BaseException as e:
            self._failed = e
        finally:
            if writer is not None:
                with contextlib.suppress(Exception):
                    writer.close()

    def _raise_failure(self) -> None:
        if self._failed is not None:
            raise self._failed

    def _stop_writer(self) -> None:
        if self._writer.is_alive():
            self._queue.put(None)
            self._writer.join()

    def commit(self) -> None:
        """Wait for the parts, then move the finished directory into place (an answer
        without rows has one empty part, which holds the schema)."""
        self._stop_writer()
        self._raise_failure()
        with writing_to(self.target, "answer directory"):
            if self.parts == 0:
                pq.write_table(self.schema.empty_table(), self.draft / _PART.format(0))
                self.parts = 1
            replace_directory(self.draft, self.target,
                              old_prefix=f".{self.target.name}.old-")

    def discard(self) -> None:
        """Stop writing and drop the draft."""
        if self._writer.is_alive():
            with contextlib.suppress(queue.Empty):
                self._queue.get_nowait()     # a part not yet begun is not written
            self._stop_writer()
        shutil.rmtree(self.draft, ignore_errors=True)


def _as_batch(rows: Answer | pa.RecordBatch,
              to_batch: Callable[[Answer], pa.RecordBatch] | None) -> pa.RecordBatch:
    if isinstance(rows, Answer):
        if to_batch is None:
            raise TypeError("answer rows handed in where record batches were expected")
        return to_batch(rows)
    return rows


def is_answer_directory(path: Path) -> bool:
    """Whether ``path`` is a directory holding nothing but Parquet parts (of an answer
    streamed here, or a Spark answer's files): what writing an answer there may
    replace."""
    if not path.is_dir():
        return False
    return all(p.is_file() and (p.name.endswith((".parquet", ".crc")) or p.name == "_SUCCESS")
               for p in path.iterdir())


class AnswerBatches:
    """The record batches of a search run in a thread of its own (``search(deliver)``
    hands each part to ``deliver``: answer rows made into batches by ``to_batch``, or
    record batches made already where it is None), at most ``ahead`` parts ahead of the
    consumer: an iterator whose memory does not grow with the answer.

    Stopping early (``close()``, leaving a ``for`` loop, Ctrl-C while waiting) stops
    the search at its next check (:func:`~uncertain_cep.query.evaluation.interrupts.
    stopped_by`) and joins its thread.
    """

    def __init__(self, search: Callable[[Callable[[Any], None]], None],
                 to_batch: Callable[[Answer], pa.RecordBatch] | None, ahead: int = 2) -> None:
        self._queue: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=ahead)
        self._stop = threading.Event()
        self._to_batch = to_batch
        self._thread = threading.Thread(target=self._run, args=(search,), daemon=True,
                                        name="uncertain-cep-iter-query")
        self._thread.start()

    def _run(self, search: Callable[[Callable[[Any], None]], None]) -> None:
        try:
            with interrupts.stopped_by(self._stop):
                search(self._deliver)
            self._put(("end", None))
        except KeyboardInterrupt:
            pass        # stopped by the consumer
        except BaseException as e:
            self._put(("error", e))

    def _deliver(self, answer: Answer | pa.RecordBatch) -> None:
        self._put(("batch", _as_batch(answer, self._to_batch)))

    def _put(self, item: tuple[str, Any]) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return
            except queue.Full:
                continue
        raise KeyboardInterrupt("query stopped by its consumer")

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        try:
            while True:
                kind, value = self._queue.get()
                if kind == "batch":
                    yield value
                elif kind == "error":
                    raise value
                else:
                    return
        finally:
            self.close()

    def close(self) -> None:
        """Stop the search (if still going) and wait for its thread."""
        self._stop.set()
        self._thread.join()
