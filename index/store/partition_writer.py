"""What one build task writes into a draft index: :class:`PartitionWriter`.

A task (a Spark executor's partition of groups) appends each group it indexes, and the
rows and groups it sets aside, to one Parquet file per table of the layout
(:mod:`uncertain_cep.index.store.layout`), under a temporary name until the task commits:
a retried task replaces its own output.
:func:`~uncertain_cep.index.store.storage.finish_index` then completes the draft.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from uncertain_cep.index.forests.tables import ForestRows, forests_tables, group_extents
from uncertain_cep.index.store.layout import (
    EVENT_COLUMNS,
    EVENTS,
    NODES,
    PART,
    REJECTED_GROUP_SCHEMA,
    REJECTED_GROUPS,
    REJECTED_ROW_SCHEMA,
    REJECTED_ROWS,
    TREES,
)
from uncertain_cep.model.events import Archive
from uncertain_cep.model.instant_weights import typed_weights

__all__ = ["PartitionWriter"]


class PartitionWriter:
    """What one build task writes into a draft: one Parquet file per table, under a
    temporary name until :meth:`commit` renames it into place, so a retried task replaces
    its own output.

    Parameters
    ----------
    draft
        The draft directory (:attr:`IndexDraft.path`).
    partition, attempt
        The task's partition (names its files) and attempt (names the temporary ones).
    """

    def __init__(self, draft: str | os.PathLike[str], partition: int, attempt: int) -> None:
        self.root = Path(draft)
        self.name = PART.format(partition)
        self.attempt = attempt
        self._writers: dict[str, tuple[pq.ParquetWriter, Path]] = {}
        # Groups are small (a thousand events); one row group each would make readers
        # pay a row group's overhead per group (10M events: 10,000 row groups, 5x slower
        # to read), so a table's groups are written together, _ROW_GROUP_ROWS at a time.
        self._pending: dict[str, list[pa.Table]] = {}
        self._pending_rows: dict[str, int] = {}
        self._pending_events: list[dict[str, np.ndarray]] = []
        self._pending_event_rows = 0
        # Forests too are made tables a flush at a time (a group cut into many shards
        # writes many small pieces).
        self._pending_forests: list[tuple[ForestRows, object]] = []
        self._pending_nodes = 0
        self._group_type: pa.DataType | None = None

    def add_group(self, archive: Archive, order: np.ndarray, forest: ForestRows,
                  label: object, group_by: str, codes: str) -> None:
        """Append one indexed group: ``archive`` holds its events, ``order`` their
        canonical order (row ``order[k]`` is the event at position ``k`` of ``forest``)."""
        events = {name: values[order] for name, values in archive.columns().items()}
        events[EVENT_COLUMNS[0]] = np.arange(len(order), dtype=np.int64)
        for column, values in zip(EVENT_COLUMNS[1:], group_extents(forest, codes)):
            events[column] = values
        # Made a table a flush at a time: Arrow's conversion costs milliseconds a call.
        self._pending_events.append(events)
        self._pending_event_rows += len(order)
        if self._pending_event_rows >= _ROW_GROUP_ROWS:
            self._flush_events()
        self._pending_forests.append((forest, label))
        self._pending_nodes += forest.n_nodes
        if self._pending_nodes >= _ROW_GROUP_ROWS:
            self._flush_forests()

    def _flush_forests(self) -> None:
        if self._pending_forests:
            nodes, trees = forests_tables([f for f, _ in self._pending_forests],
                                          [label for _, label in self._pending_forests],
                                          self._group_type)
            self._pending_forests, self._pending_nodes = [], 0
            self._group_type = nodes.schema.field("group").type
            self._append(NODES, nodes)
            self._append(TREES, trees)

    def _flush_events(self) -> None:
        if self._pending_events:
            frame = pd.DataFrame({name: np.concatenate([e[name] for e in self._pending_events])
                                  for name in self._pending_events[0]})
            self._pending_events, self._pending_event_rows = [], 0
            self._append(EVENTS, typed_weights(pa.Table.from_pandas(frame,
                                                                    preserve_index=False)))
            self._flush(EVENTS)

    def add_rejected_rows(self, event_ids: Sequence[str], group: str | None,
                          files: Sequence[str], rows: Sequence[int | None],
                          reasons: Sequence[str]) -> None:
        """Set rows of one group aside: per row its event id, input file, row in that file
        (``None`` when unknown, as for CSV) and reason."""
        self._append(REJECTED_ROWS, pa.table({
            "event_id": list(event_ids), "group": [group] * len(event_ids),
            "file": list(files), "row": pa.array(list(rows), pa.int64()),
            "reason": list(reasons)}, schema=REJECTED_ROW_SCHEMA))

    def add_rejected_group(self, event_ids: Sequence[str], group: str, reason: str) -> None:
        """Set a group that cannot be indexed aside: its events, with the reason."""
        self._append(REJECTED_GROUPS, pa.table({
            "event_id": list(event_ids), "group": [group] * len(event_ids),
            "reason": [reason] * len(event_ids)}, schema=REJECTED_GROUP_SCHEMA))

    def _append(self, table_name: str, table: pa.Table) -> None:
        self._pending.setdefault(table_name, []).append(table)
        rows = self._pending_rows[table_name] = (self._pending_rows.get(table_name, 0)
                                                 + table.num_rows)
        if rows >= _ROW_GROUP_ROWS:
            self._flush(table_name)

    def _flush(self, table_name: str) -> None:
        tables = self._pending.pop(table_name, [])
        self._pending_rows.pop(table_name, None)
        if not tables:
            return
        table = tables[0] if len(tables) == 1 else pa.concat_tables(
            [t if t.schema.equals(tables[0].schema) else t.cast(tables[0].schema)
             for t in tables])
        entry = self._writers.get(table_name)
        if entry is None:
            folder = self.root / table_name
            folder.mkdir(parents=True, exist_ok=True)
            tmp = folder / f".{self.name}.attempt-{self.attempt}"
            entry = (pq.ParquetWriter(tmp, table.schema), tmp)
            self._writers[table_name] = entry
        writer, _ = entry
        if not table.schema.equals(writer.schema):
            table = table.cast(writer.schema)
        writer.write_table(table, row_group_size=max(table.num_rows, 1))

    def commit(self) -> None:
        """Close, flush and rename this task's files into place."""
        self._flush_events()
        self._flush_forests()
        for table_name in list(self._pending):
            self._flush(table_name)
        for table_name, (writer, tmp) in list(self._writers.items()):
            writer.close()
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
            os.replace(tmp, self.root / table_name / self.name)
        self._writers.clear()

    def abort(self) -> None:
        """Drop whatever was not committed (a no-op after :meth:`commit`)."""
        self._pending_events, self._pending_event_rows = [], 0
        self._pending_forests, self._pending_nodes = [], 0
        self._pending.clear()
        self._pending_rows.clear()
        for writer, tmp in self._writers.values():
            writer.close()
            tmp.unlink(missing_ok=True)
        self._writers.clear()


# Rows per row group of a build task's tables (a few MB of events or nodes).
_ROW_GROUP_ROWS = 1 << 17
