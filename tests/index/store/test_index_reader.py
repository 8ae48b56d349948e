"""The index reader: the forests an opened index builds again are those it was built with;
event times; the time buckets."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st
from random_archives import archives

import uncertain_cep as uc
from uncertain_cep.errors import InputError
from uncertain_cep.index.store.reader import load_index, open_reader

_FOREST_ARRAYS = ("kind", "event", "instant", "tree", "parent", "depth", "child_start",
                  "child_list", "child_tree", "cond", "poi_local", "poi", "compact_code",
                  "compact_end", "tree_parent", "tree_virtual", "tree_root", "tree_lo",
                  "tree_hi", "tree_compact_range")


@settings(max_examples=30, deadline=None)
@given(df=archives(max_groups=4, max_events=12), codes=st.sampled_from(["compact", "paper"]))
def test_the_forests_of_an_opened_index_are_those_it_was_built_with(tmp_path_factory, df,
                                                                     codes):
    # An index stores no forest: the baselines' trees are built again from its archive.
    try:
        idx = uc.build_index(df, codes=codes)
    except InputError:
        return
    root = tmp_path_factory.mktemp("reader") / "ix"
    idx.save(root)
    opened = open_reader(root).load()
    built = {label: f for label, f in zip(idx.event_index.archive.group_labels,
                                          idx.event_index.forests)}
    assert len(opened.forests) == len(built)
    for label, forest in zip(opened.archive.group_labels, opened.forests):
        for name in _FOREST_ARRAYS:
            np.testing.assert_array_equal(getattr(forest, name), getattr(built[label], name),
                                          err_msg=name)
        assert list(forest.paper_code) == list(built[label].paper_code)
        assert forest.tree_count == built[label].tree_count


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
    assert again.load().archive.n_events == 2


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
