"""Instants anywhere in int64, windows up to int64's end, single-item patterns: every
strategy still equals the possible-worlds baseline (SEMANTICS A4; issue 44 items 2-4)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from answer_checks import assert_same_answer
from hypothesis import given, note
from hypothesis import strategies as st
from random_archives import archives, patterns

import uncertain_cep as uc
from uncertain_cep.query.language.patterns import SequencePattern

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INDEX_STRATEGIES = ("selectivity", "sequential", "tree_traversal")
STRATEGIES = (*INDEX_STRATEGIES, "possible_worlds")


def _answers(idx: uc.EventIndex, query: str | SequencePattern) -> dict[str, pd.DataFrame]:
    return {s: idx.query(query, strategy=s) for s in STRATEGIES}


# ------------------------------------------------------------------ item 2: large instants
def test_epoch_nanoseconds_after_2006_answer_in_every_strategy():
    # The reproducer: instants at 2**60 and beyond were "no bound" to the engine.
    t0 = pd.Timestamp("2024-05-01", tz="UTC")
    d = pd.DataFrame({"event_id": [1, 2, 3, 4], "group": ["g", "g", "h", "h"],
                      "t_lo": [t0 + pd.Timedelta(i, "ns") for i in range(4)],
                      "t_hi": [t0 + pd.Timedelta(i + 2, "ns") for i in range(4)],
                      "x": [1.0, 2.0, 3.0, 4.0]})
    idx = uc.build_index(d, time_unit="1ns")
    got = _answers(idx, "PATTERN SEQ(A, B) DEFINE A AS x < 5, B AS x >= 0 WITHIN 10")
    assert len(got["possible_worlds"]) == 9
    for strategy in INDEX_STRATEGIES:
        assert_same_answer(got[strategy], got["possible_worlds"])
    # ... and the instants come back as the input's datetimes.
    assert got["selectivity"]["t_first"].min() == t0


@pytest.mark.parametrize("lo", [INT64_MIN, -(2**62), 2**60 - 1, 2**62, INT64_MAX - 3])
def test_instants_at_int64_ends_answer_in_every_strategy(lo):
    d = pd.DataFrame({"event_id": [1, 2], "group": "g", "t_lo": [lo, lo + 1],
                      "t_hi": [lo + 2, lo + 3], "x": [1.0, 1.0]})
    idx = uc.build_index(d)
    for window in ("", " WITHIN 1", f" WITHIN {INT64_MAX}"):
        got = _answers(idx, f"PATTERN SEQ(A, B) DEFINE A AS x > 0, B AS x > 0{window}")
        for strategy in INDEX_STRATEGIES:
            assert_same_answer(got[strategy], got["possible_worlds"])


@st.composite
def shifted_cases(draw: st.DrawFn) -> tuple[pd.DataFrame, int, SequencePattern]:
    """A small archive moved by a base anywhere in int64 where it still fits, and a
    pattern of 1-3 items whose window may reach int64's end."""
    df = draw(archives(max_groups=3, max_events=8, max_per_group=4))
    low, high = int(df["t_lo"].min()), int(df["t_hi"].max())
    base = draw(st.one_of(st.integers(INT64_MIN - low, INT64_MAX - high),
                          st.sampled_from([INT64_MIN - low, INT64_MAX - high, 2**60, -(2**60),
                                           0])))
    attributes = ("x", "y") if "y_lo" in df.columns else ("x",)
    pattern = draw(patterns(attributes, min_items=1, max_items=3))
    window = draw(st.one_of(st.none(), st.integers(0, 12), st.integers(0, INT64_MAX),
                            st.sampled_from([INT64_MAX, INT64_MAX - 1, 2**60, 2**53 + 1])))
    return df, base, SequencePattern(pattern.items, pattern.symbols, window,
                                     pattern.confidence)


@given(case=shifted_cases())
def test_strategies_equal_possible_worlds_anywhere_in_int64(case):
    df, base, pattern = case
    note(f"base {base}, {pattern}")
    shifted = df.assign(t_lo=_moved(df["t_lo"], base), t_hi=_moved(df["t_hi"], base))
    idx = uc.build_index(shifted)
    got = _answers(idx, pattern)
    for strategy in INDEX_STRATEGIES:
        assert_same_answer(got[strategy], got["possible_worlds"])
    # Moving every instant moves every answer's instants and changes nothing else.
    near_zero = uc.build_index(df).query(pattern, strategy="selectivity")
    assert_same_answer(got["selectivity"],
                       near_zero.assign(t_first=_moved(near_zero["t_first"], base),
                                        t_last=_moved(near_zero["t_last"], base)))


def _moved(instants: pd.Series, base: int) -> np.ndarray:
    """``instants + base`` in Python ints (the base alone may not fit in int64)."""
    return np.array([int(t) + base for t in instants], dtype=np.int64)


# ------------------------------------------------------------------ item 3: windows
@pytest.mark.parametrize("window", [INT64_MAX - 1, INT64_MAX, 2**60])
def test_window_near_int64_limit_is_no_window(window):
    # The reproducer: 0.857 became 0.714, then 0.429 with (2, 1) dropped.
    d = pd.DataFrame({"event_id": [1, 2], "group": "g", "t_lo": [0, 1], "t_hi": [2, 3],
                      "x": [1.0, 1.0]})
    idx = uc.build_index(d)
    query = "PATTERN SEQ(A, B) DEFINE A AS x > 0, B AS x > 0"
    want = idx.query(query, strategy="possible_worlds")
    assert want["confidence"].round(3).tolist() == [0.857, 0.143]
    for strategy in STRATEGIES:
        assert_same_answer(idx.query(f"{query} WITHIN {window}", strategy=strategy), want)


@pytest.mark.parametrize("window", ["99999999999999999999999", str(INT64_MAX + 1)])
def test_window_past_int64_is_a_parse_error_at_its_position(window):
    d = pd.DataFrame({"event_id": [1, 2], "group": "g", "t_lo": [0, 1], "t_hi": [2, 3],
                      "x": [1.0, 1.0]})
    idx = uc.build_index(d)
    with pytest.raises(uc.QueryParseError, match=r"line 2, column 8: WITHIN \d+ is longer "
                                                 r"than the largest window"):
        idx.query(f"PATTERN SEQ(A, B) DEFINE A AS x > 0, B AS x > 0\nWITHIN {window}")


def test_unit_window_past_int64_instants_is_a_query_error_at_its_position():
    t0 = pd.Timestamp("2024-05-01", tz="UTC")
    d = pd.DataFrame({"event_id": [1, 2], "group": "g", "t_lo": [t0, t0],
                      "t_hi": [t0 + pd.Timedelta(1, "ns")] * 2, "x": [1.0, 1.0]})
    idx = uc.build_index(d, time_unit="1ns")
    query = "PATTERN SEQ(A, B) DEFINE A AS x > 0, B AS x > 0\nWITHIN {}"
    # 9223372036 s is 9.2e18 ns, within int64; one more second is not.
    assert len(idx.query(query.format("9223372036 s"))) == 2
    with pytest.raises(uc.QueryError, match=r"line 2, column 8: WITHIN 9223372037 SECONDS "
                                            r"\(9223372037000000000 instants\) is longer"):
        idx.query(query.format("9223372037 s"))


# ------------------------------------------------------------------ item 4: one item
def test_single_item_pattern_reports_the_earliest_and_latest_instant():
    idx = uc.build_index(pd.DataFrame({"event_id": [1], "group": "g", "t_lo": [0],
                                       "t_hi": [5], "x": [1.0]}))
    for strategy, got in _answers(idx, "PATTERN SEQ(A) DEFINE A AS x > 0").items():
        assert got[["t_first", "t_last"]].values.tolist() == [[0, 5]], strategy
