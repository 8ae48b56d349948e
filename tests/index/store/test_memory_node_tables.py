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
