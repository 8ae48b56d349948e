"""A node table expanded in memory (where the cache cannot keep the shards' working
copies: working_copy.node_tables_thrash) is the table a working copy maps, and damaged
stored files are refused as they are for a copy."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from index_checks import rewrite_packed_node_column
from random_archives import archives, instant_weights

import uncertain_cep as uc
from uncertain_cep.errors import IndexFormatError, InputError
from uncertain_cep.index.store.packed_nodes import NODE_TABLE_COLUMNS
from uncertain_cep.index.store.reader import open_reader


@settings(max_examples=15, deadline=None)
@given(data=st.data(), df=archives(max_groups=4, max_events=10),
       shard_events=st.none() | st.integers(1, 4), weighted=st.booleans())
def test_a_node_table_in_memory_is_the_mapped_one_column_for_column(
        tmp_path_factory, data, df, shard_events, weighted):
    if weighted:
        df = data.draw(instant_weights(df))
    try:
        idx = uc.build_index(df)
    except InputError:
        return
    root = tmp_path_factory.mktemp("memory") / "ix"
    idx.save(root, shard_events=shard_events)
    reader = open_reader(root)
    for k in range(max(len(reader.manifest.shards), 1)):
        shards = [k] if reader.manifest.is_sharded else None
        mapped = reader.load(shards=shards).node_table
        memory = reader.load(shards=shards, node_table_in_memory=True).node_table
        for column in NODE_TABLE_COLUMNS:
            want, got = getattr(mapped, column), getattr(memory, column)
            assert got.dtype == want.dtype and np.array_equal(got, want), column
            assert not isinstance(got, np.memmap)


@settings(max_examples=15, deadline=None)
@given(data=st.data(), df=archives(max_groups=5, max_events=12),
       shard_events=st.none() | st.integers(1, 4), weighted=st.booleans())
def test_a_table_of_some_groups_holds_their_nodes_as_the_whole_table_does(
        tmp_path_factory, data, df, shard_events, weighted):
    # Every column of the groups kept, their ids renumbered in order; the other groups
    # hold no node, no tree, and their events no node.
    if weighted:
        df = data.draw(instant_weights(df))
    try:
        idx = uc.build_index(df)
    except InputError:
        return
    root = tmp_path_factory.mktemp("groups") / "ix"
    idx.save(root, shard_events=shard_events)
    reader = open_reader(root)
    for k in range(max(len(reader.manifest.shards), 1)):
        shards = [k] if reader.manifest.is_sharded else None
        whole = reader.load(shards=shards).node_table
        n_groups = len(whole.group_start) - 1
        groups = np.array(sorted(data.draw(st.sets(st.integers(0, n_groups - 1)))),
                          dtype=np.int64)
        index = reader.load(shards=shards, node_table_in_memory=True)
        assert index.tables_by_groups
        part = index.node_table_of(groups)
        assert index.tables_by_groups      # the whole table was not read
        _assert_groups_of(whole, part, groups)


def _assert_groups_of(whole, part, groups):
    kept = np.zeros(len(whole.group_start) - 1, dtype=bool)
    kept[groups] = True
    nodes, trees = np.diff(whole.group_start), np.diff(whole.tree_start)
    assert np.array_equal(np.diff(part.group_start), np.where(kept, nodes, 0))
    assert np.array_equal(np.diff(part.tree_start), np.where(kept, trees, 0))
    old_nodes = np.concatenate([np.arange(whole.group_start[g], whole.group_start[g + 1])
                                for g in groups] or [np.zeros(0, dtype=np.int64)])
    old_trees = np.concatenate([np.arange(whole.tree_start[g], whole.tree_start[g + 1])
                                for g in groups] or [np.zeros(0, dtype=np.int64)])
    node_id = np.full(whole.n_nodes, -1)
    node_id[old_nodes] = np.arange(len(old_nodes))
    tree_id = np.full(len(whole.tree_parent), -1)
    tree_id[old_trees] = np.arange(len(old_trees))

    def renamed(ids, new):
        ids = np.asarray(ids, dtype=np.int64)
        return np.where(ids >= 0, new[np.maximum(ids, 0)], -1)

    for column in NODE_TABLE_COLUMNS:
        assert getattr(part, column).dtype == getattr(whole, column).dtype, column
    for column in ("group", "row", "instant", "poi", "code", "code_end", "kind", "cond",
                   "depth"):
        assert np.array_equal(getattr(part, column), getattr(whole, column)[old_nodes]), \
            column
    for column in ("parent", "child_root"):
        assert np.array_equal(getattr(part, column),
                              renamed(getattr(whole, column)[old_nodes], node_id)), column
    assert np.array_equal(part.tree, renamed(whole.tree[old_nodes], tree_id))
    for column in ("tree_virtual", "tree_root"):
        assert np.array_equal(getattr(part, column),
                              renamed(getattr(whole, column)[old_trees], node_id)), column
    assert np.array_equal(part.tree_parent, renamed(whole.tree_parent[old_trees], tree_id))
    assert np.array_equal(part.tree_level, whole.tree_level[old_trees])
    assert np.array_equal(part.tree_last_code, whole.tree_last_code[old_trees])
    for n in old_nodes:
        a = whole.child_list[whole.child_start[n]:whole.child_start[n + 1]]
        b = part.child_list[part.child_start[node_id[n]]:part.child_start[node_id[n] + 1]]
        assert np.array_equal(node_id[a], b)
    group_of_row = np.full(len(whole.row_nodes_start) - 1, -1)
    real = whole.row >= 0
    group_of_row[whole.row[real]] = whole.group[real]
    for r in range(len(group_of_row)):
        a = whole.row_nodes[whole.row_nodes_start[r]:whole.row_nodes_start[r + 1]]
        b = part.row_nodes[part.row_nodes_start[r]:part.row_nodes_start[r + 1]]
        assert np.array_equal(node_id[a] if kept[group_of_row[r]] else a[:0], b)


@pytest.fixture
def saved(tmp_path):
    from uncertain_cep.datasets.synthetic import generate_synthetic

    root = tmp_path / "ix"
    uc.build_index(generate_synthetic(300, groups=3, seed=2)).save(root)
    return root


def test_a_damaged_packed_file_is_refused_naming_it(saved):
    nodes = saved / "packed" / "nodes.parquet"
    data = bytearray(nodes.read_bytes())
    data[len(data) // 2] ^= 0xFF
    nodes.write_bytes(bytes(data))
    # Refused at the open (its events' copy is made then) or at the first query.
    with pytest.raises(IndexFormatError, match=r"packed/nodes\.parquet"):
        _ = open_reader(saved, verify_all=False).load(node_table_in_memory=True).node_table


def test_foreign_numbers_with_valid_checksums_are_refused_before_any_kernel(saved, tmp_path):
    root = tmp_path / "foreign"
    shutil.copytree(saved, root)

    def past_every_tree(column):
        column = column.astype(np.int32)
        column[0] = 10**9
        return column

    rewrite_packed_node_column(root, "tree", past_every_tree)
    index = open_reader(root, verify_all=False).load(node_table_in_memory=True)
    with pytest.raises(IndexFormatError, match="tree"):
        _ = index.node_table
