"""The node table's column types (index/node_table.py): ids, codes and offsets in int32
while they fit, whichever way a table is made (built in memory, mapped from the working
copy a build left, expanded from the packed files, shards side by side), so the kernels
compile once; a value a table's ids cannot hold is refused, never wrapped."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from random_archives import archives

import uncertain_cep as uc
from uncertain_cep.errors import IndexFormatError
from uncertain_cep.index.node_table import ID_LIMIT, NodeTable, column_dtype, id_dtype
from uncertain_cep.index.shards.merge import merge_node_tables, moved_column
from uncertain_cep.index.store.reader import open_reader
from uncertain_cep.index.store.working_copy import discard, working_copy

_COLUMNS = [f.name for f in dataclasses.fields(NodeTable)]


def _assert_narrow(table: NodeTable) -> None:
    for name in _COLUMNS:
        assert getattr(table, name).dtype == column_dtype(name, np.dtype(np.int32)), name
    for name, values in table.arrays._asdict().items():
        assert values.dtype in (np.int8, np.int32, np.int64, np.float64), name
        if name not in ("instant", "poi", "cond", "kind"):
            assert values.dtype == np.int32, name


# Each example saves an index three ways and opens it (about 0.5 s).
@settings(max_examples=15, deadline=None)
@given(df=archives(max_groups=4, max_events=8))
def test_every_way_of_making_a_node_table_gives_the_same_narrow_columns(tmp_path_factory,
                                                                        df) -> None:
    built = uc.build_index(df)
    table = built._index.node_table
    _assert_narrow(table)
    root = tmp_path_factory.mktemp("ix")
    built.save(root / "one")
    built.save(root / "shards", shard_events=2)
    left = open_reader(root / "one").load().node_table       # the copy the save left
    reader = open_reader(root / "one")
    discard(working_copy(reader.root, reader.manifest, verified=True))
    expanded = open_reader(root / "one").load().node_table   # from the packed files
    side_by_side = open_reader(root / "shards").load().node_table
    for other in (left, expanded, side_by_side):
        _assert_narrow(other)
    # (The stored rows are in time order, and shards cut groups into pieces: the values
    # themselves are held to the forests in tests/index/store/test_node_columns.py and
    # test_sharded_index.py.)
    for name in _COLUMNS:
        assert np.array_equal(getattr(left, name), getattr(expanded, name)), name
    assert isinstance(expanded.code, np.memmap) and isinstance(side_by_side.code, np.memmap)


def test_ids_widen_to_int64_where_nodes_or_rows_reach_the_limit() -> None:
    assert id_dtype(ID_LIMIT - 1, ID_LIMIT - 1) == np.int32
    assert id_dtype(ID_LIMIT, 0) == np.int64
    assert id_dtype(0, ID_LIMIT) == np.int64
    assert column_dtype("instant", np.dtype(np.int32)) == np.int64
    assert column_dtype("poi", np.dtype(np.int32)) == np.float64


def test_a_value_the_table_ids_cannot_hold_is_refused_not_wrapped() -> None:
    table = uc.build_index(pd.DataFrame({"event_id": [1, 2], "group": 0, "t_lo": [1, 1],
                                         "t_hi": [2, 2]}))._index.node_table
    columns = {name: getattr(table, name) for name in _COLUMNS}
    columns["code_end"] = columns["code_end"].astype(np.int64) + 2**40
    with pytest.raises(IndexFormatError, match=r"'code_end'.*int32"):
        NodeTable(**columns)


def test_shards_moved_past_what_one_shard_counts_keep_their_ids() -> None:
    # A shard's ids are int32; side by side they move by what the shards before count,
    # which may pass 2**31: the moved ids stay exact (int64), -1 stays -1.
    ids = np.array([0, 5, -1], dtype=np.int32)
    moved = moved_column("parent", ids, {"nodes": 2**31 + 10}, last=True)
    assert moved.tolist() == [2**31 + 10, 2**31 + 15, -1]
    starts = np.array([0, 3], dtype=np.int32)
    assert moved_column("group_start", starts, {"nodes": 2**31}, last=True).tolist() == \
        [2**31, 2**31 + 3]


def test_tables_merged_side_by_side_stay_narrow_and_offset() -> None:
    a = uc.build_index(pd.DataFrame({"event_id": [1, 2], "group": 0, "t_lo": [1, 1],
                                     "t_hi": [2, 2]}))._index.node_table
    merged = merge_node_tables([a, a])
    _assert_narrow(merged)
    assert merged.group_start.tolist() == [0, a.n_nodes, 2 * a.n_nodes]
    assert (merged.parent[a.n_nodes:][a.parent >= 0] == a.parent[a.parent >= 0] + a.n_nodes
            ).all()
