"""The index reader: a time slice with its halo holds exactly the rows the time-sliced
engine read before the reader existed; event times; the time buckets."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow.dataset as pads
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from random_archives import archives

import uncertain_cep as uc
from uncertain_cep.errors import InputError
from uncertain_cep.index.store.reader import load_index, open_reader


def _scan(root, table, condition):
    files = sorted(str(p) for p in (root / table).glob("*.parquet"))
    return pads.dataset(files, format="parquet").to_table(filter=condition).to_pandas()


def _old_slice_rows(root, group_by, lo, need_hi):
    """The rows ``evaluate_slice`` read itself before the reader (kept as the reference):
    events meeting ``[lo, need_hi]``, every tree row of their groups, and the node rows of
    the trees meeting their span."""
    bound = int(min(need_hi, np.iinfo(np.int64).max))
    events = _scan(root, "events", (pads.field("_uc_t_max") >= lo)
                   & (pads.field("_uc_t_min") <= bound))
    if events.empty:
        return None
    labels = list(pd.unique(events[group_by]))
    span = (int(events["_uc_t_min"].min()), int(events["_uc_t_max"].max()))
    trees = _scan(root, "trees", pads.field("group").isin(labels))
    nodes = _scan(root, "nodes", pads.field("group").isin(labels)
                  & (pads.field("tree_hi") >= span[0]) & (pads.field("tree_lo") <= span[1]))
    return events, trees, nodes


def _assert_same_rows(piece, old):
    events, trees, nodes = old
    archive = piece.archive
    assert archive.event_ids.tolist() == events["event_id"].tolist()
    np.testing.assert_array_equal(piece.layout.t_min, events["_uc_t_min"])
    np.testing.assert_array_equal(piece.layout.t_max, events["_uc_t_max"])
    np.testing.assert_array_equal(piece.layout.positions, events["_uc_pos"])
    assert sorted(archive.group_labels.tolist()) == sorted(set(events["group"]))
    for label, forest in zip(archive.group_labels, piece.forests):
        assert forest.n_trees == int((trees["group"] == label).sum())
        mine = nodes[nodes["group"] == label]
        assert forest.n_nodes == len(mine)
        np.testing.assert_array_equal(forest.instant, mine.sort_values("node")["instant"])


def _assert_slice_nodes_match_the_whole_index(root, piece):
    """Every node the slice holds has the whole index's values; its parent is its nearest
    ancestor the slice holds, and a virtual node's child root is held or -1."""
    whole = open_reader(root).load()
    wt, st = whole.node_table, piece.node_table
    span = (int(piece.layout.t_min.min()), int(piece.layout.t_max.max()))
    labels = list(piece.archive.group_labels)
    rows = _scan(root, "nodes", pads.field("group").isin(labels)
                 & (pads.field("node_hi") >= span[0]) & (pads.field("node_lo") <= span[1]))
    rows["code"] = pd.Index(labels).get_indexer(rows["group"])
    rows = rows.sort_values(["code", "node"])
    whole_code = {label: g for g, label in enumerate(whole.archive.group_labels)}
    to_whole = np.array([wt.group_start[whole_code[label]] + node
                         for label, node in zip(rows["group"], rows["node"])], dtype=np.int64)
    assert st.n_nodes == len(to_whole)
    held = {int(w): i for i, w in enumerate(to_whole)}
    for column in ("instant", "poi", "code", "code_end", "kind", "cond", "depth"):
        np.testing.assert_array_equal(getattr(st, column), getattr(wt, column)[to_whole],
                                      err_msg=column)
    ids = lambda index, r: None if r < 0 else index.archive.event_ids[r]  # noqa: E731
    for i, w in enumerate(to_whole):
        up = wt.parent[w]
        while up >= 0 and int(up) not in held:
            up = wt.parent[up]
        assert st.parent[i] == (held[int(up)] if up >= 0 else -1)
        if st.row[i] >= 0:
            assert ids(piece, st.row[i]) == ids(whole, wt.row[w])
        if wt.child_root[w] >= 0 and int(wt.child_root[w]) in held:
            assert st.child_root[i] == held[int(wt.child_root[w])]
        else:
            assert st.child_root[i] == -1
    kids = [sorted(st.child_list[st.child_start[i]:st.child_start[i + 1]].tolist())
            for i in range(st.n_nodes)]
    assert kids == [sorted(np.flatnonzero(st.parent == i).tolist()) for i in range(st.n_nodes)]
    # Each event's real nodes are all held (its tree meets the slice) and listed.
    for r in range(piece.archive.n_events):
        mine = st.row_nodes[st.row_nodes_start[r]:st.row_nodes_start[r + 1]]
        assert sorted(mine.tolist()) == np.flatnonzero(st.row == r).tolist()
        assert len(mine) > 0


@settings(max_examples=40)
@given(df=archives(max_groups=4, max_events=12), codes=st.sampled_from(["compact", "paper"]),
       t_from=st.integers(-2, 16), length=st.integers(0, 8),
       halo=st.sampled_from([0, 1, 3, 2.5, math.inf]))
def test_a_slice_with_its_halo_reads_the_rows_the_old_engine_read(tmp_path_factory, df, codes,
                                                                  t_from, length, halo):
    try:
        idx = uc.build_index(df, codes=codes)
    except InputError:
        return
    root = tmp_path_factory.mktemp("reader") / "ix"
    idx.save(root)
    reader = open_reader(root)
    piece = reader.read_slice(t_from, t_from + length, halo)
    old = _old_slice_rows(root, "group", t_from, t_from + length + halo)
    assert (piece is None) == (old is None)
    if piece is not None:
        _assert_same_rows(piece, old)
        _assert_slice_nodes_match_the_whole_index(root, piece)


def test_a_narrow_slice_reads_only_part_of_the_index(tmp_path):
    from uncertain_cep.datasets.synthetic import generate_synthetic

    idx = uc.build_index(generate_synthetic(400, groups=3, seed=4))
    idx.save(tmp_path / "ix")
    reader = open_reader(tmp_path / "ix")
    t0, t1 = reader.manifest.time.t_min, reader.manifest.time.t_max
    lo = (t0 + t1) // 2
    piece = reader.read_slice(lo, lo + 5, 5)
    assert piece is not None
    _assert_same_rows(piece, _old_slice_rows(tmp_path / "ix", "group", lo, lo + 10))
    assert 0 < piece.archive.n_events < idx.n_events
    assert sum(f.n_nodes for f in piece.forests) < idx.n_nodes
    whole = reader.read_slice(t0, t1, math.inf)
    assert whole is not None and whole.archive.n_events == idx.n_events
    assert sum(f.n_nodes for f in whole.forests) == idx.n_nodes


def test_a_slice_reads_only_the_row_groups_of_its_time_range(tmp_path, monkeypatch):
    from uncertain_cep.datasets.synthetic import generate_synthetic
    from uncertain_cep.index.store import time_order

    # Small row groups, so that a small index has enough of them to skip.
    monkeypatch.setattr(time_order, "SLICE_ROW_GROUP_ROWS", 40)
    idx = uc.build_index(generate_synthetic(1200, groups=4, seed=5))
    idx.save(tmp_path / "ix")
    reader = open_reader(tmp_path / "ix")
    t0, t1 = reader.manifest.time.t_min, reader.manifest.time.t_max
    lo = t0 + (t1 - t0) // 3
    read = reader.scan_slice(lo, lo + (t1 - t0) // 10, 3)
    scans = {s.table: s for s in read.scans}
    assert read.index is not None and read.index.archive.n_events < idx.n_events // 5
    for table in ("events", "nodes"):
        assert scans[table].row_groups > 20
        assert scans[table].row_groups_read < scans[table].row_groups / 3, scans[table]
    assert scans["events"].rows == read.index.archive.n_events
    assert scans["nodes"].rows == read.index.node_table.n_nodes
    _assert_same_rows(read.index, _old_slice_rows(tmp_path / "ix", "group", lo,
                                                  lo + (t1 - t0) // 10 + 3))
    _assert_slice_nodes_match_the_whole_index(tmp_path / "ix", read.index)


def test_time_buckets_count_every_event_once(tmp_path):
    from uncertain_cep.datasets.synthetic import generate_synthetic

    idx = uc.build_index(generate_synthetic(300, groups=2, seed=1))
    idx.save(tmp_path / "ix")
    buckets = open_reader(tmp_path / "ix").time_buckets()
    assert int(buckets.events.sum()) == idx.n_events
    assert (buckets.events > 0).all() and (np.diff(buckets.starts) > 0).all()
    t_min, t_max = idx.event_index.event_t_min, idx.event_index.event_t_max
    for start, latest in zip(buckets.starts, buckets.latest):
        inside = (t_min >= start) & (t_min < start + buckets.width)
        assert int(t_max[inside].max()) == latest


def test_event_times_and_the_empty_archive(tmp_path):
    df = pd.DataFrame({"event_id": [10, 11, 12], "group": ["p", "p", "q"], "t_lo": [1, 2, 5],
                       "t_hi": [3, 2, 6], "x": [1.0, 2.0, 3.0], "tag": ["a", "b", "a"]})
    uc.build_index(df).save(tmp_path / "ix")
    reader = open_reader(tmp_path / "ix")
    assert reader.event_times({10, 12, 99}) == {10: (1, 3), 12: (5, 6)}
    assert reader.event_times(set()) == {}
    empty = reader.empty_archive()
    assert empty.n_events == 0
    assert empty.numeric_names == ("x",) and empty.categorical_names == ("tag",)


def test_load_index_equals_the_reader_load(tmp_path):
    df = pd.DataFrame({"event_id": [1, 2, 3], "group": [0, 0, 1], "t_lo": [1, 1, 4],
                       "t_hi": [2, 2, 4]})
    idx = uc.build_index(df)
    idx.save(tmp_path / "ix")
    a, b = load_index(tmp_path / "ix"), open_reader(tmp_path / "ix").load()
    assert [f.n_nodes for f in a.forests] == [f.n_nodes for f in b.forests] == \
        [f.n_nodes for f in idx.event_index.forests]


def test_a_reader_pickles_without_its_files(tmp_path):
    # The Spark engine ships the reader to executors.
    import pickle

    df = pd.DataFrame({"event_id": [1, 2], "group": 0, "t_lo": [1, 1], "t_hi": [2, 2]})
    uc.build_index(df).save(tmp_path / "ix")
    reader = open_reader(tmp_path / "ix")
    again = pickle.loads(pickle.dumps(reader))
    assert again == reader
    piece = again.read_slice(0, 5)
    assert piece is not None and piece.archive.n_events == 2


@pytest.mark.parametrize("halo", [0, math.inf])
def test_a_slice_before_or_after_every_event_is_empty(tmp_path, halo):
    df = pd.DataFrame({"event_id": [1, 2], "group": 0, "t_lo": [5, 6], "t_hi": [6, 7]})
    uc.build_index(df).save(tmp_path / "ix")
    reader = open_reader(tmp_path / "ix")
    assert reader.read_slice(8, 20, halo) is None
    assert (reader.read_slice(0, 3, halo) is None) == (halo == 0)


def test_an_opened_index_leaves_no_copy_of_its_rtree_on_disk(tmp_path, monkeypatch):
    # Spark kills its Python workers, so a copy removed "at exit" was left behind per
    # worker; the copy is unlinked as soon as libspatialindex holds it open.
    df = pd.DataFrame({"event_id": [1, 2, 3], "group": [0, 0, 1], "t_lo": [1, 2, 4],
                       "t_hi": [2, 3, 4], "x": [1.0, 2.0, 3.0]})
    uc.build_index(df).save(tmp_path / "ix")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(scratch))
    idx = uc.open_index(tmp_path / "ix")
    answer = idx.query("PATTERN SEQ(A, B) DEFINE A AS x < 1.5, B AS x > 1.5 WITHIN 5 "
                       "CONFIDENCE 0.01")
    assert list(scratch.iterdir()) == []
    assert len(answer) == 2
