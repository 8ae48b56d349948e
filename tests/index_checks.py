"""Checks of an index's stored structures shared by several test modules."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from uncertain_cep.index.event_index import EventIndex
from uncertain_cep.index.node_table import node_table
from uncertain_cep.index.store.checksums import CHECKSUM, file_digest
from uncertain_cep.index.store.manifest import SELF_CHECKSUM, manifest_digest
from uncertain_cep.index.store.node_columns import NODE_TABLE_COLUMNS
from uncertain_cep.index.store.packed_nodes import read_packed

__all__ = ["assert_node_columns_match_forests", "rewrite_packed_node_column"]


def assert_node_columns_match_forests(index: EventIndex) -> None:
    """The node table an index holds (memory-mapped from disk, derived from the Parquet
    tables) equals the one built from its forests, column by column and dtype by dtype."""
    stored = index.node_table
    built = node_table(index.forests, index.members, index.archive.n_events)
    for column in NODE_TABLE_COLUMNS:
        a, b = getattr(stored, column), getattr(built, column)
        assert a.dtype == b.dtype, column
        np.testing.assert_array_equal(a, b, err_msg=column)


def stored_tables(root: Path) -> dict[str, pd.DataFrame]:
    """The tables an index directory stores, comparable between two builds of one archive:
    the events by id, the packed groups, nodes and trees, each node's archive row as its
    event's id (two builds may store events of equal times in other orders)."""
    files = sorted((root / "events").glob("*.parquet"))
    events = pd.concat([pq.read_table(f).to_pandas() for f in files], ignore_index=True)
    ids = events["event_id"].tolist()
    nodes = read_packed(root / "packed" / "nodes.parquet")
    nodes["row"] = [None if r < 0 else ids[r] for r in nodes["row"]]
    return {"events": events.sort_values("event_id").reset_index(drop=True),
            "nodes": nodes, "trees": read_packed(root / "packed" / "trees.parquet"),
            "groups": read_packed(root / "packed" / "groups.parquet")}


def rewrite_packed_node_column(root: Path, name: str,
                               edit: Callable[[np.ndarray], np.ndarray]) -> None:
    """Replace column ``name`` of the index ``root``'s packed node table by ``edit`` of it,
    and its manifest's checksums by those of the files as they now are (as a program
    writing its own index would): damage no checksum can catch."""
    path = root / "packed" / "nodes.parquet"
    nodes = pq.read_table(path)
    column = edit(nodes.column(name).to_numpy())
    pq.write_table(nodes.set_column(nodes.schema.get_field_index(name), name,
                                    pa.array(column)), path)
    manifest = root / "manifest.json"
    record = json.loads(manifest.read_text())
    record.pop(SELF_CHECKSUM)
    record[CHECKSUM] = {f: file_digest(root / f) for f in record[CHECKSUM]}
    record[SELF_CHECKSUM] = manifest_digest(record)
    manifest.write_text(json.dumps(record))
