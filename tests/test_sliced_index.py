"""A sharded index whose working copy the cache cannot hold is queried in this process
slice by slice, shard after shard (uncertain_cep/sliced_index.py), and answers exactly
what the whole index answers: rows, order, limits, counts, streamed parts."""

from __future__ import annotations

import dataclasses
import os
from unittest.mock import patch

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from random_archives import archives, instant_weights, patterns

import uncertain_cep as uc
from uncertain_cep.errors import AnswerTooLargeError, InputError, PlanningError
from uncertain_cep.index.store.working_copy import LIMIT_ENV

# A cache of one byte holds no index whole: every sharded index is answered by slices.
_TINY = {LIMIT_ENV: "1"}


def _rows(frame):
    return [(tuple(e), c, t0, t1) for e, c, t0, t1 in
            zip(frame["events"], frame["confidence"], frame["t_first"], frame["t_last"])]


def _assert_same_table(got, want):
    """Row for row, ties broken alike, confidences equal to 1e-9."""
    got, want = _rows(got), _rows(want)
    assert [(e, t0, t1) for e, _, t0, t1 in got] == [(e, t0, t1) for e, _, t0, t1 in want]
    assert all(abs(a[1] - b[1]) <= 1e-9 for a, b in zip(got, want))


def _assert_same_rows(got, want):
    """The same rows in any order, confidences equal to 1e-9."""
    got, want = sorted(_rows(got)), sorted(_rows(want))
    assert [(e, t0, t1) for e, _, t0, t1 in got] == [(e, t0, t1) for e, _, t0, t1 in want]
    assert all(abs(a[1] - b[1]) <= 1e-9 for a, b in zip(got, want))


@settings(max_examples=20, deadline=None)
@given(data=st.data(), df=archives(max_groups=4, max_events=10),
       shard_events=st.integers(1, 4), window=st.integers(0, 10), weighted=st.booleans(),
       strategy=st.sampled_from(["selectivity", "sequential"]), k=st.integers(1, 4))
def test_an_index_queried_shard_by_shard_answers_as_the_possible_worlds(
        tmp_path_factory, data, df, shard_events, window, weighted, strategy, k):
    # Shard boundaries inside groups, negations across them and windows longer than a
    # shard all occur: 4 groups over about 15 instants, shards of 1-4 events.
    pattern = dataclasses.replace(data.draw(patterns(negation=None)), within=window)
    if weighted:
        df = data.draw(instant_weights(df))
    try:
        idx = uc.build_index(df)
    except InputError:
        return
    root = tmp_path_factory.mktemp("sliced") / "ix"
    idx.save(root, shard_events=shard_events)
    oracle = idx.query(pattern, strategy="possible_worlds")
    whole = idx.query(pattern, strategy=strategy)
    with patch.dict(os.environ, _TINY):
        opened = uc.open_index(root)
        sharded = opened._sliced is not None
        assert sharded == (len(df) > shard_events)
        got = opened.query(pattern, strategy=strategy)
        _assert_same_rows(got, oracle)
        _assert_same_table(got, whole)
        assert opened.count(pattern, strategy=strategy) == len(whole)
        top = opened.query(pattern, strategy=strategy, limit=k)
        _assert_same_table(top, whole.head(k))
    if sharded:
        # Every slice read the shards its span meets, and the answer says which.
        assert got.stats.shards == len(opened._sliced.reader.manifest.shards)
        assert got.stats.slices >= 1


@pytest.fixture(scope="module")
def spread(tmp_path_factory):
    """An archive of 2,000 events in 6 groups, saved as shards of about 500."""
    from uncertain_cep.datasets.synthetic import generate_synthetic

    idx = uc.build_index(generate_synthetic(2000, groups=6, seed=3))
    root = tmp_path_factory.mktemp("spread") / "ix"
    idx.save(root, shard_events=500)
    return idx, root


_QUERY = "PATTERN SEQ(A, NOT C, B) DEFINE A AS a0 > 0.7, B AS a0 < 0.3, C AS a1 > 0.95 WITHIN 12"


@pytest.fixture
def tiny_cache():
    with patch.dict(os.environ, _TINY):
        yield


def test_a_large_sharded_index_streams_counts_and_explains_as_the_whole(spread, tiny_cache,
                                                                     tmp_path):
    idx, root = spread
    whole = idx.query(_QUERY)
    opened = uc.open_index(root)
    assert "queried shard by shard" in repr(opened)
    assert opened.n_events == idx.n_events == 2000
    got = opened.query(_QUERY)
    assert len(got) > 100
    _assert_same_table(got, whole)
    assert got.stats.shards_read == list(range(got.stats.shards))
    assert got.event_times == whole.event_times
    assert opened.count(_QUERY) == len(whole)
    assert opened.count(_QUERY + " LIMIT 7") == 7

    batches = list(opened.iter_query(_QUERY, batch_rows=40))
    assert all(b.num_rows <= 40 for b in batches)
    streamed = pa.Table.from_batches(batches).to_pandas()
    assert len(streamed) == len(whole)
    assert sorted(map(tuple, streamed["events"])) == sorted(whole["events"])

    out = opened.query(_QUERY, out=tmp_path / "answer", part_rows=50)
    assert out.rows == len(whole) and out.parts >= len(whole) // 50
    _assert_same_table(uc.read_answer(tmp_path / "answer"), whole)
    best = opened.query(_QUERY, limit=9, out=tmp_path / "best")
    _assert_same_table(uc.read_answer(tmp_path / "best"), whole.head(9))
    assert best.rows == 9

    explained = opened.explain(_QUERY)
    assert explained.rows == len(whole)
    assert explained.stats.shards_read == list(range(explained.stats.shards))


def test_a_budget_counts_the_rows_of_every_slice(spread, tiny_cache):
    idx, root = spread
    rows = len(idx.query(_QUERY))
    opened = uc.open_index(root)
    with pytest.raises(AnswerTooLargeError, match="max_rows=") as caught:
        opened.query(_QUERY, max_rows=rows - 1)
    # Found so far: at least the budget, past it.
    assert caught.value.rows is not None and caught.value.rows >= rows
    assert len(opened.query(_QUERY, max_rows=rows)) == rows


def test_what_needs_the_whole_index_is_refused_naming_the_cache_limit(spread, tiny_cache):
    _, root = spread
    opened = uc.open_index(root)
    for use in (opened.describe, lambda: opened.archive,
                lambda: opened.query(_QUERY, strategy="possible_worlds")):
        with pytest.raises(PlanningError, match=LIMIT_ENV):
            use()


def test_a_query_without_a_window_is_refused_before_shards_are_put_side_by_side(
        spread, tiny_cache):
    from uncertain_cep.index.store.working_copy import cache_directory

    _, root = spread
    opened = uc.open_index(root)
    before = sorted(p.name for p in cache_directory().iterdir())
    with pytest.raises(PlanningError, match="no WITHIN"):
        opened.query(_QUERY.removesuffix(" WITHIN 12"))
    # Nothing was put side by side.
    assert not any(name.endswith("side-by-side")
                   for name in set(p.name for p in cache_directory().iterdir()) - set(before))
