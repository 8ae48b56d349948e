"""Slices of a sharded index that follow its shards, and the seams between them indexed in
memory, answer what the whole index answers."""

from __future__ import annotations

from unittest.mock import patch

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from random_archives import archives, instant_weights, patterns

import uncertain_cep as uc
from uncertain_cep.errors import InputError
from uncertain_cep.index.shards.cuts import find_clusters
from uncertain_cep.index.store.reader import open_reader
from uncertain_cep.pipeline import seam_index as seams
from uncertain_cep.pipeline import time_slices
from uncertain_cep.pipeline.seam_index import whole_clusters_meeting
from uncertain_cep.pipeline.time_slices import evaluate_slice, in_task_order, plan_slices
from uncertain_cep.query.engine import inputs


def _rows(answer):
    return sorted((tuple(e), t0, t1, c) for e, c, t0, t1 in answer)


def _assert_same(got, want):
    got, want = _rows(got), _rows(want)
    assert [r[:3] for r in got] == [r[:3] for r in want]
    assert all(abs(a[3] - b[3]) <= 1e-9 for a, b in zip(got, want))


@settings(max_examples=60, deadline=None)
@given(groups=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 40), st.integers(0, 5)),
                       max_size=40), lo=st.integers(-5, 50), width=st.integers(0, 10))
def test_the_rows_found_are_whole_clusters_holding_every_row_that_meets_the_span(
        groups, lo, width):
    group_of = np.array([g for g, _, _ in groups], dtype=np.int64)
    t_lo = np.array([t for _, t, _ in groups], dtype=np.int64)
    t_hi = t_lo + np.array([w for _, _, w in groups], dtype=np.int64)
    hi = lo + width
    rows = whole_clusters_meeting(t_lo, t_hi, lo, hi)
    meeting = np.flatnonzero((t_hi >= lo) & (t_lo <= hi))
    assert set(meeting.tolist()) <= set(rows.tolist())
    assert rows.tolist() == sorted(set(rows.tolist()))
    if len(groups):
        clusters = find_clusters(group_of, t_lo, t_hi).of_row
        inside = np.isin(np.arange(len(groups)), rows)
        # Every cluster is inside whole or not at all.
        for c in np.unique(clusters):
            assert len(set(inside[clusters == c].tolist())) == 1


def _union_of_slices(reader, pattern, n_slices, strategy="selectivity"):
    window = pattern.within if pattern.within is not None else float("inf")
    plan = plan_slices(reader, window, n_slices)
    rows = []
    for piece in plan:
        rows += evaluate_slice(reader, piece, pattern, strategy)[0]
    return plan, rows


@settings(max_examples=15, deadline=None)
@given(data=st.data(), df=archives(max_groups=4, max_events=10), n_slices=st.integers(1, 6),
       shard_events=st.integers(1, 4), weighted=st.booleans(), in_memory=st.booleans(),
       groups_share=st.sampled_from([0.0, 1.0]))
def test_slices_following_the_shards_answer_as_the_possible_worlds(
        tmp_path_factory, data, df, n_slices, shard_events, weighted, in_memory,
        groups_share):
    # Shard boundaries inside groups, windows longer than a shard and negations across
    # a boundary all occur here: archives of 4 groups over about 15 instants, shards of
    # 1-4 events, windows of 0-10 instants. in_memory: each shard's node table expanded
    # in memory, as where the cache cannot keep the shards' copies, then of the groups
    # the query's candidates meet alone (groups_share 1.0) or whole (0.0).
    with patch.object(time_slices, "node_tables_thrash", lambda manifest: in_memory), \
            patch.object(inputs, "GROUPS_TABLE_SHARE", groups_share):
        _slices_answer_as_the_possible_worlds(tmp_path_factory, data, df, n_slices,
                                              shard_events, weighted)


def _slices_answer_as_the_possible_worlds(tmp_path_factory, data, df, n_slices,
                                          shard_events, weighted):
    pattern = data.draw(patterns(negation=None))
    if weighted:
        df = data.draw(instant_weights(df))
    try:
        idx = uc.build_index(df)
    except InputError:
        return
    root = tmp_path_factory.mktemp("seams") / "ix"
    idx.save(root, shard_events=shard_events)
    reader = open_reader(root)
    _, rows = _union_of_slices(reader, pattern, n_slices)
    full = idx.query(pattern, strategy="possible_worlds")
    _assert_same(rows, zip(full["events"], full["confidence"], full["t_first"],
                           full["t_last"]))


@pytest.fixture(scope="module")
def spread_index(tmp_path_factory):
    from uncertain_cep.datasets.synthetic import generate_synthetic

    df = generate_synthetic(3000, groups=6, seed=7)
    idx = uc.build_index(df)
    root = tmp_path_factory.mktemp("spread") / "ix"
    idx.save(root, shard_events=700)
    return idx, open_reader(root)


def test_most_slices_open_one_shard_and_the_seams_are_indexed_in_memory(spread_index,
                                                                          monkeypatch):
    idx, reader = spread_index
    n_shards = len(reader.manifest.shards)
    assert n_shards >= 4
    built = []

    def counted(*args, **kwargs):
        seam = seams.seam_index(*args, **kwargs)
        built.append(seam)
        return seam

    monkeypatch.setattr(time_slices, "seam_index", counted)
    query = ("PATTERN SEQ(A, NOT N, B) DEFINE A AS a0 < 0, N AS a1 > 1.5, B AS a0 > 0.5 "
             "WITHIN 40 CONFIDENCE 0.05")
    pattern = uc.parse_query(query)
    plan, rows = _union_of_slices(reader, pattern, n_shards)
    sets = [reader.shards_meeting(p.lo, p.need_hi) for p in plan]
    assert sum(len(s) == 1 for s in sets) >= n_shards
    seam_slices = [p for p, s in zip(plan, sets) if len(s) > 1]
    assert seam_slices and all(s is not None for s in built)
    assert len(built) == len(seam_slices)
    # A seam is about a window wide, and holds a few events of a shard's hundreds.
    assert all(len(s.archive.event_ids) < 200 for s in built)
    full = idx.query(query)
    _assert_same(rows, zip(full["events"], full["confidence"], full["t_first"],
                           full["t_last"]))
    # Every event is the anchor of exactly one slice.
    t_min = idx._index.event_t_min
    assert {sum(p.lo <= t < p.hi for p in plan) for t in t_min.tolist()} == {1}


def test_a_seam_larger_than_its_limit_puts_its_shards_side_by_side(spread_index,
                                                                     monkeypatch):
    idx, reader = spread_index
    monkeypatch.setattr(seams, "SEAM_EVENTS", 3)
    query = "PATTERN SEQ(A, B) DEFINE A AS a0 < 0, B AS a0 > 0.5 WITHIN 40"
    _, rows = _union_of_slices(reader, uc.parse_query(query), 4)
    full = idx.query(query)
    _assert_same(rows, zip(full["events"], full["confidence"], full["t_first"],
                           full["t_last"]))


def test_seams_are_handed_to_tasks_after_the_shards_they_read(spread_index):
    _, reader = spread_index
    plan = plan_slices(reader, 40, len(reader.manifest.shards))
    ordered = in_task_order(plan, reader, lag=2)
    assert sorted(ordered, key=lambda p: p.lo) == plan
    mains = [p for p in plan if len(reader.shards_meeting(p.lo, p.need_hi)) == 1]
    assert [p for p in ordered if p in mains] == mains
    for k, piece in enumerate(ordered):
        needs = reader.shards_meeting(piece.lo, piece.need_hi)
        if len(needs) > 1:
            before = [p for p in ordered[:k] if p in mains]
            # The main slices of its last shard, and two more where there are.
            last = max(i for i, p in enumerate(mains)
                       if reader.shards_meeting(p.lo, p.need_hi)[0] == max(needs))
            assert len(before) >= min(len(mains), last + 1 + 1)


def test_an_index_built_under_condition2_keeps_its_shards_side_by_side(tmp_path):
    df = pd.DataFrame({"event_id": range(8), "group": [0, 0, 0, 0, 1, 1, 1, 1],
                       "t_lo": [0, 3, 10, 13, 1, 4, 11, 14],
                       "t_hi": [1, 4, 11, 14, 2, 5, 12, 15],
                       "x": [0.0, 1, 0, 1, 0, 1, 0, 1], "y": 0.0})
    idx = uc.build_index(df, max_speed=10.0)
    idx.save(tmp_path / "ix", shard_events=2)
    reader = open_reader(tmp_path / "ix")
    piece = plan_slices(reader, 5, 4)[0]
    assert seams.seam_index(reader, [0, 1], piece.lo, piece.hi, lambda k: None) is None
    query = uc.parse_query("PATTERN SEQ(A, B) DEFINE A AS x < 0.5, B AS x > 0.5 WITHIN 5")
    _, rows = _union_of_slices(reader, query, 4)
    full = idx.query(query)
    _assert_same(rows, zip(full["events"], full["confidence"], full["t_first"],
                           full["t_last"]))


# A negation whose gaps meet most slices of spread_index.
_SPREAD_NEGATION = ("PATTERN SEQ(A, NOT N, B) DEFINE A AS a0 < -1, "
                    "N AS a0 BETWEEN -0.2 AND 0.2, B AS a0 > 1 WITHIN 40")


@pytest.fixture
def small_cache(monkeypatch, tmp_path):
    """A cache (``tmp_path / "cache"``) that cannot keep any shard's copy, as a 100M-event
    index's 26 shard copies (about 1.9 GB each) against 20 GiB: each would be evicted
    before a query used it again. No index open before or after."""
    from uncertain_cep.index.store import working_copy

    monkeypatch.setenv(working_copy.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv(working_copy.LIMIT_ENV, "1000")
    time_slices._OPENED.clear()
    yield tmp_path / "cache"
    time_slices._OPENED.clear()


def test_where_the_cache_cannot_keep_the_shards_a_slice_expands_its_node_table_in_memory(
        spread_index, small_cache):
    idx, reader = spread_index
    pattern = _SPREAD_NEGATION
    _, rows = _union_of_slices(reader, uc.parse_query(pattern), 5)
    full = idx.query(pattern)
    assert len(full) > 5
    _assert_same(rows, zip(full["events"], full["confidence"], full["t_first"],
                           full["t_last"]))
    # The copies hold events and R*-trees only; a worker keeps one shard open.
    copies = [p for p in small_cache.iterdir() if not p.name.startswith(".")]
    assert copies and all(p.name.endswith("-events-w2") and not (p / "columns").exists()
                          for p in copies)
    assert len(time_slices._OPENED) == 1
    (index,) = time_slices._OPENED.values()
    assert not isinstance(index.node_table.poi, np.memmap)


def test_a_worker_frees_the_node_table_of_a_shard_it_lets_go_before_the_next(
        spread_index, small_cache):
    # An index held in a reference cycle is freed by the rarely running cycle collector
    # only: a worker held every shard's node table it had moved past (1.6 GB each at
    # 100M), and each expansion after the first took three times as long.
    import gc
    import weakref

    _, reader = spread_index
    pattern = uc.parse_query(_SPREAD_NEGATION)
    first, second = [piece for piece in plan_slices(reader, 40, 5)
                     if len(reader.shards_meeting(piece.lo, piece.need_hi)) == 1][:2]
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        assert evaluate_slice(reader, first, pattern)[0]
        (index,) = time_slices._OPENED.values()
        gone = [weakref.ref(index), weakref.ref(index.node_table)]
        del index
        evaluate_slice(reader, second, pattern)
        assert [ref() for ref in gone] == [None, None]
    finally:
        if was_enabled:
            gc.enable()
