"""The benchmark's baselines (DuckDB SQL, nested loop) equal the join engine exactly.

The join engine equals the reference (tests/interval/test_join.py), so these equal it too.
The random inputs are the ones the engines are tested on (tests/interval_cases.py).
"""

from __future__ import annotations

import doctest

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, target
from hypothesis import strategies as st
from interval_cases import (
    AGGRESSIVE_DRIVERS,
    aggressive_cars,
    cases,
    definitions,
    interval_sets,
    pattern_parts,
    point_streams,
)

import bench.interval_baselines as baselines
from bench.interval_baselines import duckdb_sql, match_duckdb, match_nested_loop
from uncertain_cep.errors import InputError, InvalidOptionError
from uncertain_cep.interval import derive_situations, match_join, situations_from_intervals
from uncertain_cep.interval.language import parse_temporal_query

# Modest example counts: every example runs three matchers and a DuckDB query.
FEW = settings(max_examples=50)


@pytest.fixture(scope="module")
def con():
    # One thread: the tests may run next to a benchmark on a small machine.
    connection = duckdb.connect(config={"threads": 1})
    yield connection
    connection.close()


def assert_same(situations, pattern, con, window_pairs="related", **options) -> pd.DataFrame:
    """Both baselines give exactly match_join's frame: rows, order, columns, dtypes."""
    expected = match_join(situations, pattern, **options)
    pd.testing.assert_frame_equal(match_nested_loop(situations, pattern, **options), expected)
    pd.testing.assert_frame_equal(
        match_duckdb(situations, pattern, connection=con, window_pairs=window_pairs,
                     **options), expected)
    return expected


WINDOW_PAIRS = st.sampled_from(["related", "all"])


def table(*spans, **columns) -> pd.DataFrame:
    return pd.DataFrame({"ts": [s[0] for s in spans], "te": [s[1] for s in spans], **columns})


def symbols_defined(names) -> str:
    return ", ".join(f"{n} AS v > 0" for n in names)


@FEW
@given(st.data())
def test_baselines_equal_join_on_interval_events(con, data):
    names, constraints, within = data.draw(pattern_parts())
    events = data.draw(interval_sets(names))
    pattern = parse_temporal_query(
        f"PARTITION BY p DEFINE {symbols_defined(names)} PATTERN {constraints} {within} "
        "RETURN max(A.v) AS top, count(B.v) AS n")
    found = assert_same(situations_from_intervals(events, pattern), pattern, con,
                        data.draw(WINDOW_PAIRS))
    target(float(min(len(found), 20)))


@FEW
@given(st.data())
def test_baselines_equal_join_with_no_one_or_two_partition_columns(con, data):
    names, constraints, within = data.draw(pattern_parts(max_symbols=3))
    events = data.draw(interval_sets(names))
    # A second key splits each p into two: situations of one symbol still never overlap.
    events["q"] = np.where(events["ts"].to_numpy() % 3 == 0, "x", "y")
    partition = data.draw(st.sampled_from(["", "PARTITION BY p", "PARTITION BY q, p"]))
    if not partition:
        # One partition: keep one p's rows, so one symbol's situations do not overlap.
        events = events[events["p"] == "p0"]
    pattern = parse_temporal_query(
        f"{partition} DEFINE {symbols_defined(names)} PATTERN {constraints} {within} "
        "RETURN sum(A.v) AS total")
    found = assert_same(situations_from_intervals(events, pattern), pattern, con,
                        data.draw(WINDOW_PAIRS))
    target(float(min(len(found), 20)))


@FEW
@given(st.data())
def test_baselines_equal_join_on_point_streams(con, data):
    names, constraints, within = data.draw(pattern_parts())
    events = data.draw(point_streams())
    pattern = parse_temporal_query(
        f"PARTITION BY k {data.draw(definitions(names))} PATTERN {constraints} {within} "
        "RETURN avg(B.x) AS mean_x, first(A.y) AS y0, last(A.time) AS t1")
    found = assert_same(derive_situations(events, pattern), pattern, con,
                        data.draw(WINDOW_PAIRS))
    target(float(min(len(found), 20)))


@FEW
@given(st.data())
def test_baselines_equal_join_with_float_times_at_the_window_edge(con, data):
    """Times k/10: ``A.ts + w`` rounds differently from ``max(te) - min(ts) <= w``, so the
    implied pairwise bounds of the SQL need their slack."""
    names, constraints, _ = data.draw(pattern_parts(max_symbols=3))
    events = data.draw(interval_sets(names, partitions=("p0", "p1")))
    events[["ts", "te"]] = events[["ts", "te"]] * 0.1
    window = data.draw(st.sampled_from([0.3, 0.6, 0.7, 1.2, 2.5]))
    pattern = parse_temporal_query(
        f"PARTITION BY p DEFINE {symbols_defined(names)} PATTERN {constraints} "
        f"WITHIN {window}")
    found = assert_same(situations_from_intervals(events, pattern), pattern, con,
                        data.draw(WINDOW_PAIRS))
    target(float(min(len(found), 20)))


@FEW
@given(cases())
def test_baselines_equal_join_on_the_reference_cases(con, case):
    tables, chosen, within = case
    pattern = parse_temporal_query(
        f"PARTITION BY p DEFINE A AS x > 0, B AS x > 1, C AS x > 2 "
        f"PATTERN {' AND '.join(chosen)} {within}")
    target(float(len(assert_same(tables, pattern, con))))


def test_float_times_where_a_plus_w_rounds_below(con):
    """2 * 0.1 + 0.7 rounds below 9 * 0.1, though 9 * 0.1 - 2 * 0.1 <= 0.7: without its
    slack the SQL's pairwise bound would drop the match the exact window keeps."""
    a_ts, b_te = 2 * 0.1, 9 * 0.1
    assert b_te - a_ts <= 0.7 and not b_te <= a_ts + 0.7
    pattern = parse_temporal_query("DEFINE A AS x > 0, B AS x < 0 PATTERN A before B "
                                   "WITHIN 0.7")
    for window_pairs in ("related", "all"):
        found = assert_same({"A": table((a_ts, 3 * 0.1)), "B": table((8 * 0.1, b_te))},
                            pattern, con, window_pairs)
        assert len(found) == 1


def test_a_hand_checked_example(con):
    """Car 1: A0 overlaps B0, B0 overlaps C0 and C0 starts after A0 ends, span 7;
    A1 meets B1, B1 meets C1, span 5. (A0, B0, C1) spans 13 > 10; B1 ends after C0;
    car 2's B ends after its C."""
    pattern = parse_temporal_query(
        "PARTITION BY car DEFINE A AS x > 0, B AS x < 0, C AS y > 0 "
        "PATTERN A meets; overlaps B AND B SEQ C AND C.ts >= A.te WITHIN 10 "
        "RETURN avg(B.speed) AS s")
    situations = {
        "A": table((8, 9), (0, 2), (0, 3), car=[1, 2, 1]),
        "B": table((2, 4), (9, 12), (2, 5), car=[2, 1, 1], avg_speed=[90.0, 80.0, 70.0]),
        "C": table((12, 13), (1, 3), (4, 7), car=[1, 2, 1]),
    }
    expected = pd.DataFrame(
        [[1, 0, 3, 2, 5, 4, 7, 70.0, 5],  # detected: B-C's third endpoint, 5
         [1, 8, 9, 9, 12, 12, 13, 80.0, 12]],  # detected: C.ts, 12
        columns=["car", "A_ts", "A_te", "B_ts", "B_te", "C_ts", "C_te", "s", "detected_at"])
    pd.testing.assert_frame_equal(match_nested_loop(situations, pattern), expected)
    pd.testing.assert_frame_equal(match_duckdb(situations, pattern, connection=con), expected)
    pd.testing.assert_frame_equal(match_join(situations, pattern), expected)


def test_the_aggressive_drivers_query_of_semantics_c(con):
    events = aggressive_cars()
    pattern = parse_temporal_query(AGGRESSIVE_DRIVERS)
    found = assert_same(derive_situations(events, pattern, time_unit="1s"), pattern, con,
                        time_unit="1s")
    assert found.values.tolist() == [
        [1, 1, 7, 3, 15, 10, 12, 1, 85.5, 12],
        [3, 1, 7, 3, 15, 10, 11, 3, 85.5, 11],
        [3, 1, 7, 3, 15, 13, 14, 3, 85.5, 14],
    ]


@pytest.mark.parametrize(("a", "b", "pairs"), [
    ([(0, 2), (3, 4)], [(6, 8)], [[3, 6]]),
    ([(0, 2)], [(1, 4), (6, 8)], []),
    ([(2, 3)], [(0, 2), (6, 8)], [[2, 6]]),
    ([(0, 2), (5, 6)], [(3, 4), (7, 9), (10, 11)], [[0, 3], [5, 7]]),
])
@pytest.mark.parametrize("text", ["A followed_by B", "B follows A"])
def test_followed_by(con, a, b, pairs, text):
    pattern = parse_temporal_query(f"DEFINE A AS x > 0, B AS x < 0 PATTERN {text}")
    found = assert_same({"A": table(*a), "B": table(*b)}, pattern, con)
    assert found[["A_ts", "B_ts"]].values.tolist() == pairs


def test_empty_answers_and_key_dtypes(con):
    pattern = parse_temporal_query("PARTITION BY p DEFINE A AS x > 0, B AS x < 0 "
                                   "PATTERN A meets B RETURN sum(A.x) AS s")
    a = table((0, 1), (4, 6), p=np.array([1, 2], dtype="int32"), sum_x=[1.5, 2.5])
    for b in (table((1, 2), p=np.array([1], dtype="int32")),  # one match
              table((2, 3), p=np.array([1], dtype="int32")),  # a shared partition, no match
              table((2, 3), p=np.array([3], dtype="int32")),  # no shared partition
              table(p=np.array([], dtype="int32"))):  # no situation at all
        found = assert_same({"A": a, "B": b}, pattern, con)
        assert found["p"].dtype == np.int32 and found["s"].dtype == np.float64


@pytest.mark.parametrize("keys", [
    pd.Categorical(["a", "b"], categories=["b", "a", "z"]), pd.array([1, 2], dtype="Int64"),
    pd.array(["a", "b"], dtype="string"), np.array([True, False]),
    np.array([1, 2], dtype="uint8")], ids=["category", "Int64", "string", "bool", "uint8"])
def test_dtypes_duckdb_maps_its_own_way_come_back_as_join_gives_them(con, keys):
    pattern = parse_temporal_query(
        "PARTITION BY p DEFINE A AS x > 0, B AS x < 0 PATTERN A before B "
        "RETURN first(A.s) AS s, max(B.f) AS f, count(A.x) AS n")
    a = table((0, 1), (0, 1), p=keys, first_s=pd.array(["u", "v"], dtype="string"),
              count_x=[1, 2]).astype({"ts": "int32", "te": "int32"})
    b = table((2.0, 4.0), (3.0, 5.0), p=keys, max_f=np.array([1.5, 2.5], dtype="float32"))
    assert len(assert_same({"A": a, "B": b}, pattern, con)) == 2


def test_string_keys_missing_keys_and_unconstrained_symbols(con):
    pattern = parse_temporal_query("PARTITION BY p DEFINE A AS x > 0, B AS x < 0, C AS y > 0 "
                                   "PATTERN A before B WITHIN 8")
    tables = {"A": table((0, 1), (2, 3), (0, 4), p=["x", "x", None]),
              "B": table((5, 6), (2, 8), (0, 1), p=["x", None, "y"]),
              "C": table((6, 9), (1, 2), (3, 4), p=["x", "x", "x"])}
    found = assert_same(tables, pattern, con)
    assert found[["A_ts", "B_ts", "C_ts"]].values.tolist() == [
        [0, 5, 1], [0, 5, 3], [2, 5, 1], [2, 5, 3], [2, 5, 6]]


def test_symbol_names_differing_in_case_and_keyword_columns(con):
    """DuckDB's identifiers ignore case: the tables are then named s0, s1; a partition
    column named like a keyword is quoted."""
    pattern = parse_temporal_query("PARTITION BY order DEFINE a AS x > 0, A AS x < 0 "
                                   "PATTERN a overlaps; meets A")
    tables = {"a": table((0, 2), (5, 6), order=[1, 1]), "A": table((1, 3), (6, 7), order=[1, 1])}
    sql = duckdb_sql(pattern)
    assert "FROM s0\nJOIN s1 ON" in sql and 's0."order"' in sql
    assert assert_same(tables, pattern, con)[["a_ts", "A_ts"]].values.tolist() == [[0, 1],
                                                                                  [5, 6]]


def test_a_given_connection_stays_open_and_clean(con):
    pattern = parse_temporal_query("DEFINE A AS x > 0, B AS x < 0 PATTERN A before B")
    tables = {"A": table((0, 1)), "B": table((2, 3))}
    before = con.sql("SELECT count(*) FROM duckdb_views() WHERE NOT internal").fetchall()
    assert len(match_duckdb(tables, pattern, connection=con)) == 1
    assert con.sql("SELECT count(*) FROM duckdb_views() WHERE NOT internal").fetchall() == before
    assert len(match_duckdb(tables, pattern)) == 1  # its own connection


def test_missing_tables_and_columns():
    pattern = parse_temporal_query("PARTITION BY p DEFINE A AS x > 0, B AS x < 0 "
                                   "PATTERN A before B")
    for matcher in (match_duckdb, match_nested_loop):
        with pytest.raises(InputError, match="no situations given for symbol B"):
            matcher({"A": table((0, 1), p=[1])}, pattern)
        with pytest.raises(InputError, match=r"lack column.*'p'"):
            matcher({"A": table((0, 1), p=[1]), "B": table((2, 3))}, pattern)


def test_window_pairs():
    pattern = parse_temporal_query("DEFINE A AS x > 0, B AS x < 0, C AS y > 0, D AS y < 0 "
                                   "PATTERN A before B AND B meets C WITHIN 9")
    bounds = [line.strip() for line in duckdb_sql(pattern).splitlines() if "-- WITHIN" in line]
    # A-C are related through B only; D through nothing: it joins with C by the window.
    assert bounds == ["-- WITHIN 9, for A and B", "-- WITHIN 9, for B and C",
                      "-- WITHIN 9, for C and D"]
    every = duckdb_sql(pattern, window_pairs="all")
    assert every.count("-- WITHIN 9, for") == 6 and "B.te <= A.ts + 9 AND A.te <= B.ts + 9" in every
    with pytest.raises(InvalidOptionError, match="window_pairs must be 'related' or 'all'"):
        duckdb_sql(pattern, window_pairs="some")


def test_the_module_examples():
    assert doctest.testmod(baselines, optionflags=doctest.NORMALIZE_WHITESPACE).failed == 0
