"""The node table of an index: stored packed, memory-mapped from the working copy when
opened (the one the build left, or one expanded from the packed files), equal to the one
built from the forests."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from index_checks import assert_node_columns_match_forests
from random_archives import archives, single_groups

import uncertain_cep as uc
from uncertain_cep.errors import IndexFormatError
from uncertain_cep.index.store.packed_nodes import NODE_TABLE_COLUMNS
from uncertain_cep.index.store.reader import open_reader
from uncertain_cep.index.store.working_copy import SEAL, discard, working_copy


@st.composite
def nested_archives(draw: st.DrawFn) -> pd.DataFrame:
    """Groups whose overlapping intervals nest OI-trees (virtual nodes, child trees)."""
    frames = [draw(archives(max_groups=3, max_events=8))]
    for g in range(draw(st.integers(1, 2))):
        lo, hi = draw(single_groups(max_events=9, min_events=4))
        frames.append(pd.DataFrame({"event_id": [f"n{g}-{i}" for i in range(len(lo))],
                                    "group": f"nested{g}", "t_lo": lo, "t_hi": hi}))
    df = pd.concat(frames, ignore_index=True)
    df["event_id"] = df["event_id"].astype(str)
    # Rows in a random order: archive rows need not follow groups.
    order = draw(st.permutations(range(len(df))))
    return df.iloc[list(order)].reset_index(drop=True)


@settings(max_examples=20, deadline=None)
@given(df=nested_archives(), codes=st.sampled_from(["compact", "paper"]))
def test_stored_node_table_equals_the_one_built_from_the_forests(tmp_path_factory, df, codes):
    path = tmp_path_factory.mktemp("ix") / "index"
    idx = uc.build_index(df[[c for c in df.columns if not c.startswith(("x", "y", "tag"))]],
                         codes=codes)
    idx.save(path)
    reader = open_reader(path)
    left = reader.load().node_table       # the working copy the save left
    discard(working_copy(reader.root, reader.manifest, verified=True))
    opened = open_reader(path).load()     # expanded from the packed files
    for column in NODE_TABLE_COLUMNS:
        a, b = getattr(opened.node_table, column), getattr(left, column)
        assert a.dtype == b.dtype and np.array_equal(a, b), column
    assert isinstance(opened.node_table.poi, np.memmap)
    assert "forests" not in opened.__dict__      # opening read no tree
    assert_node_columns_match_forests(opened)
    # The stored archive is in time order: each event keeps the nodes it has in memory.
    built = idx._index.node_table
    built_row = pd.Index(idx._index.archive.event_ids).get_indexer(opened.archive.event_ids)
    assert (np.sort(built_row) == np.arange(idx.n_events)).all()
    for row, same in enumerate(built_row):
        stored = opened.node_table.row_nodes[opened.node_table.row_nodes_start[row]:
                                             opened.node_table.row_nodes_start[row + 1]]
        np.testing.assert_array_equal(stored, built.row_nodes[
            built.row_nodes_start[same]:built.row_nodes_start[same + 1]])


def test_an_empty_index_has_an_empty_node_table(tmp_path):
    empty = pd.DataFrame({"event_id": pd.Series([], dtype="int64"),
                          "group": pd.Series([], dtype="int64"),
                          "t_lo": pd.Series([], dtype="int64"),
                          "t_hi": pd.Series([], dtype="int64")})
    uc.build_index(empty).save(tmp_path / "ix")
    table = open_reader(tmp_path / "ix").load().node_table
    assert table.n_nodes == 0 and table.row_nodes_start.tolist() == [0]


def test_a_write_to_an_opened_node_table_never_reaches_the_file(tmp_path):
    uc.build_index(pd.DataFrame({"event_id": [1, 2], "group": 0, "t_lo": [1, 1],
                                 "t_hi": [2, 2]})).save(tmp_path / "ix")
    table = open_reader(tmp_path / "ix").load().node_table
    before = float(table.poi[0])
    table.poi[0] = before + 7.0
    table.poi.flush()   # a copy-on-write map writes nothing back, even when flushed
    assert float(open_reader(tmp_path / "ix").load().node_table.poi[0]) == before


def test_a_damaged_node_column_of_the_working_copy_is_made_again(tmp_path):
    uc.build_index(pd.DataFrame({"event_id": [1, 2], "group": 0, "t_lo": [1, 1],
                                 "t_hi": [2, 2]})).save(tmp_path / "ix")
    reader = open_reader(tmp_path / "ix")
    copy = working_copy(reader.root, reader.manifest, verified=True)
    poi = np.load(copy / "columns" / "poi.npy").tolist()
    np.save(copy / "columns" / "poi.npy", np.zeros(5, dtype=np.int32))
    index = reader.load()
    assert index.node_table.poi.tolist() == poi     # mapped (and checked) when first needed
    assert (copy / SEAL).is_file()


def test_a_node_column_of_the_wrong_type_is_refused_when_mapped(tmp_path):
    from uncertain_cep.index.store.node_columns import open_node_columns

    uc.build_index(pd.DataFrame({"event_id": [1, 2], "group": 0, "t_lo": [1, 1],
                                 "t_hi": [2, 2]})).save(tmp_path / "ix")
    reader = open_reader(tmp_path / "ix")
    copy = working_copy(reader.root, reader.manifest, verified=True)
    np.save(copy / "columns" / "poi.npy", np.zeros(5, dtype=np.int32))
    with pytest.raises(IndexFormatError, match=r"poi\.npy holds int32"):
        open_node_columns(copy / "columns")


@settings(max_examples=30, deadline=None)
@given(keys=st.lists(st.integers(0, 40), max_size=60), sorted_keys=st.booleans(),
       gap=st.integers(1, 3), wide=st.booleans())
def test_members_grouped_by_owner_are_a_stable_sort(keys, sorted_keys, gap, wide):
    # What the expansion makes the children and row lists with (a counting sort, or
    # none where the owners already ascend): the stable argsort's order, in both id types.
    from uncertain_cep.index.store.packed_nodes import _starts, grouped_by_owner

    dtype = np.dtype(np.int64 if wide else np.int32)
    keys = np.array(sorted(keys) if sorted_keys else keys, dtype=dtype)
    ids = np.arange(len(keys), dtype=dtype) * gap
    want = ids[np.argsort(keys, kind="stable")]
    got = grouped_by_owner(keys, ids, _starts(keys, 41, dtype))
    assert got.dtype == dtype and got.tolist() == want.tolist()
