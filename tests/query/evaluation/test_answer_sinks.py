"""Top-k, counted and budgeted answers equal the full answer's first rows, its length and
its rows, on random archives against the possible-worlds baseline (issue 48)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from answer_checks import TOL, cases
from hypothesis import event, given, note, settings
from hypothesis import strategies as st
from top_rows import assert_a_top_k_of, assert_first_rows_of

import uncertain_cep as uc
from uncertain_cep.errors import AnswerTooLargeError
from uncertain_cep.query.engine import batch_engine
from uncertain_cep.query.evaluation.answer import Answer, best_rows, ranked
from uncertain_cep.query.evaluation.answer_sinks import AllRows, TopRows


def _index(df: pd.DataFrame, codes: str, layout: str) -> uc.UncertainIndex:
    return uc.build_index(df, codes=codes, multi_tree=layout == "multi")


@pytest.mark.parametrize("strategy", ["selectivity", "sequential"])
@settings(max_examples=12)
@given(case=cases(condition2=False), k=st.integers(1, 6))
def test_top_k_is_the_first_k_rows_of_the_full_answer(strategy, case, k):
    df, pattern, _, codes, layout = case
    note(str(pattern))
    idx = _index(df, codes, layout)
    full = idx.query(pattern, strategy=strategy)
    top = idx.query(pattern, strategy=strategy, limit=k)
    event(f"rows beyond k: {len(full) > k}")
    event(f"negation: {bool(pattern.negations)}")
    assert_first_rows_of(top, full, k)
    assert_a_top_k_of(top, idx.query(pattern, strategy="possible_worlds"), k)
    # LIMIT in the text is limit=.
    assert_first_rows_of(idx.query(f"{pattern}\nLIMIT {k}", strategy=strategy), full, k)


@given(case=cases(condition2=False))
def test_count_is_the_number_of_rows_of_the_full_answer(case):
    df, pattern, _, codes, layout = case
    idx = _index(df, codes, layout)
    oracle = idx.query(pattern, strategy="possible_worlds")
    for strategy in ("selectivity", "sequential", "tree_traversal"):
        assert idx.count(pattern, strategy=strategy) == len(oracle)


def _many_rows() -> uc.UncertainIndex:
    n = 40
    return uc.build_index(pd.DataFrame({"event_id": range(n), "group": [i % 4 for i in range(n)],
                                        "t_lo": range(n), "t_hi": [i + 2 for i in range(n)],
                                        "x": [float(i % 7) for i in range(n)]}))


QUERY = "PATTERN SEQ(A, B) DEFINE A AS x < 4, B AS x >= 2 WITHIN 6"


def test_a_query_beyond_max_rows_stops_saying_what_it_found_and_what_to_ask_instead():
    idx = _many_rows()
    n = len(idx.query(QUERY))
    assert n > 20 and len(idx.query(QUERY, max_rows=n)) == n
    with pytest.raises(AnswerTooLargeError, match=r"max_rows=20 rows \(\d+ found so far") as e:
        idx.query(QUERY, max_rows=20)
    assert 20 < e.value.rows <= n
    for form in ("LIMIT k", "idx.count", "out=PATH"):
        assert form in str(e.value)
    assert isinstance(e.value, MemoryError)


def test_limit_is_checked_and_given_once():
    idx = _many_rows()
    for bad in (0, -1, 2.5, True, "3"):
        with pytest.raises(uc.InputError, match="limit"):
            idx.query(QUERY, limit=bad)
    with pytest.raises(uc.QueryParseError, match="line 2, column 7"):
        idx.query(QUERY + "\nLIMIT 0")
    with pytest.raises(uc.InputError, match=r"LIMIT 3 .* limit=4"):
        idx.query(QUERY + " LIMIT 3", limit=4)
    assert_first_rows_of(idx.query(QUERY + " LIMIT 3", limit=3), idx.query(QUERY), 3)


def test_the_threshold_rises_as_a_top_k_query_finds_better_rows(monkeypatch):
    # Small batches: answers come batch by batch, as on a large archive; completed at
    # once, so that how far the threshold has risen does not hang on a spare thread's pace.
    monkeypatch.setattr(batch_engine, "BATCH_LIMIT", 8)
    monkeypatch.setattr(batch_engine, "spare_threads", lambda: 0)
    idx = _many_rows()
    full = idx.query(QUERY)
    # More rows than the certain ones: the first pass (rows of confidence 1 alone) does
    # not suffice, and the search proper prunes by its rising k-th confidence.
    k = int((full["confidence"] >= 1 - TOL).sum()) + 2
    assert full["confidence"].iloc[k - 1] < 1
    ex = idx.explain(QUERY + f" LIMIT {k}")
    assert ex.stats.certain_pass is not None and not ex.stats.certain_pass[2]
    rises = ex.stats.threshold_rises
    assert rises and all(b[1] >= a[1] for a, b in itertools.pairwise(rises))
    assert rises[-1][1] == pytest.approx(full["confidence"].iloc[k - 1], abs=TOL)
    assert "threshold rose (LIMIT): " in str(ex)
    # It prunes: fewer tuples weighed than for the whole answer.
    assert ex.stats.tuples_pruned > idx.explain(QUERY).stats.tuples_pruned


def _answer(events: list[list[int]], confidence: list[float]) -> Answer:
    n = len(events)
    return Answer(np.array(events, dtype=np.int64).reshape(n, -1), np.array(confidence),
                  np.zeros(n, np.int64), np.ones(n, np.int64))


def test_top_rows_break_ties_by_event_ids_whatever_batches_the_rows_come_in():
    ids = np.array([50, 10, 40, 20, 30])
    rows = [[0, 1], [2, 3], [1, 4], [3, 4], [0, 4]]
    conf = [0.5, 0.5, 0.5, 0.25, 0.5]
    one = TopRows(3, ids)
    one.add(_answer(rows, conf))
    for cut in range(1, 5):
        split = TopRows(3, ids)
        split.add(_answer(rows[:cut], conf[:cut]))
        split.add(_answer(rows[cut:], conf[cut:]))
        assert split.finish(2).events.tolist() == one.finish(2).events.tolist()
    # Ties by ids (10, 30) < (40, 20) < (50, 10) < (50, 30): rows 2, 1, 0.
    assert sorted(one.finish(2).events.tolist()) == sorted([[1, 4], [2, 3], [0, 1]])
    assert one.floor == 0.5


def test_all_rows_without_a_budget_keeps_every_row():
    sink = AllRows(None)
    for _ in range(3):
        sink.add(_answer([[0, 1]] * 10, [0.5] * 10))
    assert sink.rows == 30 and len(sink.finish(2)) == 30


@given(data=st.data(), n=st.integers(1, 40), k=st.integers(1, 12))
def test_best_rows_are_the_first_k_of_the_answer_order_ties_and_all(data, n, k):
    # Few distinct confidences and ids: most rows tie somewhere.
    width = data.draw(st.integers(1, 3))
    events = np.array(data.draw(st.lists(st.lists(st.integers(0, 5), min_size=width,
                                                  max_size=width),
                                         min_size=n, max_size=n)), dtype=np.int64)
    conf = np.array(data.draw(st.lists(st.sampled_from([1.0, 0.5, 0.25, 0.5 + 1e-14]),
                                       min_size=n, max_size=n)))
    ids = np.array(data.draw(st.permutations(["f", "a", "d", "b", "e", "c"])), dtype=object)
    answer = Answer(events, conf, np.zeros(n, np.int64), np.zeros(n, np.int64))
    want = ranked(answer, ids)[:k]
    got = best_rows(answer, ids, k)
    assert sorted(got.tolist()) == sorted(want.tolist()) or (
        # Equal rows (same events, same rounded confidence) may stand in for each other.
        sorted(map(tuple, answer.take(got).events.tolist())) ==
        sorted(map(tuple, answer.take(want).events.tolist())))


@given(data=st.data(), n=st.integers(1, 40), k=st.integers(1, 8))
def test_top_rows_fed_in_any_batches_keep_the_first_k_rows_of_the_whole(data, n, k):
    # Confidences tied exactly, within the order's rounding, and apart.
    width = data.draw(st.integers(1, 3))
    events = np.array(data.draw(st.lists(st.lists(st.integers(0, 5), min_size=width,
                                                  max_size=width),
                                         min_size=n, max_size=n, unique_by=tuple)),
                      dtype=np.int64).reshape(-1, width)
    n = len(events)
    conf = np.array(data.draw(st.lists(st.sampled_from([1.0, 0.5, 0.5 - 4e-13, 0.5 + 6e-12,
                                                         0.25, 1.0 - 3e-13]),
                                       min_size=n, max_size=n)))
    ids = np.array(data.draw(st.permutations([50, 10, 40, 20, 30, 60])), dtype=np.int64)
    whole = Answer(events, conf, np.zeros(n, np.int64), np.zeros(n, np.int64))
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=4)))
    sink = TopRows(k, ids)
    for a, b in itertools.pairwise([0, *cuts, n]):
        sink.add(whole.take(np.arange(a, b)))
    got = sink.finish(width)
    want = whole.take(ranked(whole, ids)[:k])
    assert got.events[ranked(got, ids)].tolist() == want.events.tolist()


def test_a_row_just_above_the_kept_kth_by_more_than_rounding_enters_whatever_its_ids():
    # 0.5 + 6e-12 orders above 0.5 (12 decimals), so its larger id does not matter; and
    # 0.5 + 4e-13 ties with 0.5, so its larger id keeps it out.
    ids = np.array([10, 20, 30, 40])
    for late, wins in ((0.5 + 6e-12, True), (0.5 + 4e-13, False)):
        sink = TopRows(1, ids)
        sink.add(_answer([[0]], [0.5]))
        sink.add(_answer([[3]], [late]))
        assert sink.finish(1).events.tolist() == ([[3]] if wins else [[0]])
