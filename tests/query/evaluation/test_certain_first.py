"""A top-k query looks first at the rows of confidence 1 alone
(query/evaluation/certain_first.py): where it finds k of them they are the full answer's
first k rows, ties by ids and all; where it finds fewer the search starts again and still
answers the first k rows; on random archives of mostly point-like events, against the
full answer and the possible-worlds baseline."""

from __future__ import annotations

from contextlib import contextmanager

import pandas as pd
import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st
from random_archives import patterns
from top_rows import assert_a_top_k_of, assert_first_rows_of

import uncertain_cep as uc
from uncertain_cep.query.engine import batch_engine


@st.composite
def point_archives(draw: st.DrawFn) -> pd.DataFrame:
    """Groups of events at distinct instants (certain), a few of them widened to an
    interval (doubt), attributes exact or ranges."""
    rows = []
    for g in range(draw(st.integers(1, 3))):
        instants = draw(st.lists(st.integers(0, 14), min_size=2, max_size=5, unique=True))
        for t in sorted(instants):
            wide = draw(st.integers(0, 4)) == 0
            x0 = float(draw(st.integers(0, 8)))
            rows.append({"event_id": f"e{draw(st.integers(0, 99)):02d}-{len(rows)}",
                         "group": f"g{g}", "t_lo": t, "t_hi": t + (2 if wide else 0),
                         "x_lo": x0, "x_hi": x0 + draw(st.sampled_from([0, 0, 0, 2])),
                         "tag": draw(st.sampled_from(["a", "b"]))})
    return pd.DataFrame(rows)


@contextmanager
def _small_tuple_batches(on: bool):
    """Batches of a few rows, every one as tuples, completed at once (no spare thread,
    whose pace on a loaded machine decides when the sink holds k rows): answers come
    batch by batch and tuple steps meet a held top k (where ids prune:
    TopRows.outranked)."""
    saved = batch_engine.BATCH_LIMIT, batch_engine.TUPLE_RATIO, batch_engine.spare_threads
    if on:
        batch_engine.BATCH_LIMIT, batch_engine.TUPLE_RATIO = 4, 0
        batch_engine.spare_threads = lambda: 0
    try:
        yield
    finally:
        (batch_engine.BATCH_LIMIT, batch_engine.TUPLE_RATIO,
         batch_engine.spare_threads) = saved


@pytest.mark.parametrize("small", [False, True], ids=["batches", "small-tuple-batches"])
@pytest.mark.parametrize("strategy", ["selectivity", "sequential"])
@settings(max_examples=12)
@given(df=point_archives(), pattern=patterns(("x",)), k=st.integers(1, 5))
def test_top_k_from_the_certain_rows_or_again_is_the_first_k_rows(strategy, small, df,
                                                                  pattern, k):
    note(str(pattern))
    try:
        idx = uc.build_index(df)
    except uc.UncertainCepError:
        return      # a group whose widened events leave no order (infeasible)
    full = idx.query(pattern, strategy=strategy)
    with _small_tuple_batches(small):
        ex = idx.explain(pattern, strategy=strategy, limit=k)
        top = idx.query(pattern, strategy=strategy, limit=k)
    if ex.stats.certain_pass is not None:
        found, _, enough = ex.stats.certain_pass
        event(f"certain pass enough: {enough}")
        assert enough == (found >= k and (full["confidence"].head(k) >= 1 - 1e-9).all())
    assert_first_rows_of(top, full, k)
    assert_a_top_k_of(top, idx.query(pattern, strategy="possible_worlds"), k)


def _points(n: int) -> pd.DataFrame:
    # Every reading at an instant of its own: every matching tuple is certain.
    return pd.DataFrame({"event_id": [f"r{(7 * i) % n:03d}" for i in range(n)],
                         "group": [i % 3 for i in range(n)], "t_lo": range(n),
                         "t_hi": range(n), "x": [float(i % 5) for i in range(n)]})


QUERY = "PATTERN SEQ(A, B) DEFINE A AS x < 2, B AS x >= 3 WITHIN 4"


def test_a_top_k_of_certain_rows_is_found_by_the_first_pass_and_explained():
    idx = uc.build_index(_points(60))
    full = idx.query(QUERY)
    assert len(full) > 10 and (full["confidence"] == 1).all()
    ex = idx.explain(QUERY + " LIMIT 5")
    found, entries, enough = ex.stats.certain_pass
    assert enough and found >= 5 and entries > 0
    assert "First pass, rows of confidence 1 only: " in str(ex) and "enough" in str(ex)
    assert_first_rows_of(idx.query(QUERY, limit=5), full, 5)


def test_too_few_certain_rows_search_again_from_the_query_threshold():
    df = _points(60)
    df.loc[df.index % 3 == 0, "t_hi"] += 1          # doubt: many rows below 1
    idx = uc.build_index(df)
    full = idx.query(QUERY)
    k = int((full["confidence"] >= 1 - 1e-12).sum()) + 2
    assert k < len(full)
    ex = idx.explain(QUERY, limit=k)
    assert ex.stats.certain_pass[2] is False
    assert "too few: searched again" in str(ex)
    assert_first_rows_of(idx.query(QUERY, limit=k), full, k)


def test_a_query_at_confidence_1_needs_no_first_pass():
    idx = uc.build_index(_points(30))
    assert idx.explain(QUERY + " CONFIDENCE 1 LIMIT 2").stats.certain_pass is None
    assert idx.explain(QUERY).stats.certain_pass is None


def test_tuples_tied_at_the_top_are_pruned_by_their_ids_once_k_rows_are_held():
    # Every tuple certain: nothing falls below the threshold, so whatever is pruned was
    # ranked after the held k-th by its ids alone.
    idx = uc.build_index(_points(90))
    query = "PATTERN SEQ(A, B, C) DEFINE A AS x < 2, B AS x >= 2, C AS x >= 3 WITHIN 6"
    full = idx.query(query)
    assert (full["confidence"] == 1).all() and len(full) > 20
    with _small_tuple_batches(True):
        ex = idx.explain(query, limit=3)
        top = idx.query(query, limit=3)
    assert ex.stats.certain_pass[2] and ex.stats.tuples_pruned > 0
    assert_first_rows_of(top, full, 3)
