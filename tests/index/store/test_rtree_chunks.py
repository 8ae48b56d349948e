"""An index's R*-tree stored as chunks of consecutive event rows, one tree each (format
11; index/store/rtree_and_statistics.py): saved with chunks of a few events, in one
directory or in shards, reopened and queried, it answers as the possible-worlds baseline
does on the whole archive; its files and manifest say how it is cut."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from answer_checks import assert_same_answer, cases
from hypothesis import event, given, settings
from hypothesis import strategies as st

import uncertain_cep as uc
from uncertain_cep.index import event_index
from uncertain_cep.index.store import rtree_and_statistics
from uncertain_cep.index.store.layout import rtree_files
from uncertain_cep.index.store.rtree_files import RTreeChunks


# Each example saves and reopens an index (about 0.4 s).
@settings(max_examples=20)
@given(case=cases(condition2=False), chunk_entries=st.integers(1, 5),
       shard_events=st.none() | st.integers(2, 6))
def test_an_index_of_chunked_r_trees_answers_as_the_whole_archive(case, chunk_entries,
                                                                  shard_events) -> None:
    df, pattern, _, codes, layout = case
    whole = uc.build_index(df, codes=codes, multi_tree=layout == "multi")
    event(f"chunks: {min(-(-len(df) // chunk_entries), 4)}, sharded: {bool(shard_events)}")
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as patch:
        patch.setattr(rtree_and_statistics, "RTREE_CHUNK_ENTRIES", chunk_entries)
        # Every search in the trees, the items' too (else a column scan: test_column_scan).
        patch.setattr(event_index, "SCAN_SPAN_FRACTION", 2.0)
        whole.save(Path(tmp) / "ix", shard_events=shard_events)
        reopened = uc.open_index(Path(tmp) / "ix")
        assert_same_answer(reopened.query(pattern),
                           whole.query(pattern, strategy="possible_worlds"))


def _events(n: int) -> pd.DataFrame:
    return pd.DataFrame({"event_id": range(n), "group": np.arange(n) % 3,
                         "t_lo": np.arange(n) * 2, "t_hi": np.arange(n) * 2 + 3,
                         "x": np.arange(n, dtype=float)})


def test_each_chunk_is_its_own_pair_of_files_and_the_manifest_says_how_many_rows_each_holds(
        tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(rtree_and_statistics, "RTREE_CHUNK_ENTRIES", 4)
    monkeypatch.setattr(event_index, "SCAN_SPAN_FRACTION", 2.0)
    uc.build_index(_events(10)).save(tmp_path / "ix")
    manifest = json.loads((tmp_path / "ix" / "manifest.json").read_text())
    assert manifest["rtree"] == {"dimension": 4, "entries": 10, "chunk_entries": 4}
    stored = sorted(p.name for p in (tmp_path / "ix").glob("rtree*"))
    assert stored == sorted(rtree_files(3))
    # Every event is found once, by its row, in the chunk holding its row.
    index = uc.open_index(tmp_path / "ix")
    assert "in each of its 3 chunks" in str(index.explain(
        "PATTERN SEQ(A) DEFINE A AS x >= 0 WITHIN 5"))
    ids, counts = index.event_index.rtree.intersection_v(
        np.full((1, 4), -1e18), np.full((1, 4), 1e18))
    assert sorted(ids.tolist()) == list(range(10)) and counts.tolist() == [10]


def test_chunks_are_searched_box_by_box(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(rtree_and_statistics, "RTREE_CHUNK_ENTRIES", 3)
    uc.build_index(_events(7)).save(tmp_path / "ix")
    tree = uc.open_index(tmp_path / "ix").event_index.rtree
    assert isinstance(tree, RTreeChunks)
    # Event i may happen at 2i to 2i + 3. Two boxes: instants 0-4 (rows 0-2, the first
    # chunk) and 6-12 (rows 2-6, all three chunks), their rows box by box.
    lo = np.array([[-1e18, 0, -1e18, -1e18], [-1e18, 6, -1e18, -1e18]])
    hi = np.array([[1e18, 4, 1e18, 1e18], [1e18, 12, 1e18, 1e18]])
    ids, counts = tree.intersection_v(lo, hi)
    assert counts.tolist() == [3, 5]
    assert sorted(ids[:3].tolist()) == [0, 1, 2]
    assert sorted(ids[3:].tolist()) == [2, 3, 4, 5, 6]
