"""Situations from point events and from interval events (SEMANTICS B1, TPStream 4.3)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from uncertain_cep.errors import InputError, QueryError
from uncertain_cep.interval import derive_situations, situations_from_intervals
from uncertain_cep.interval.language import parse_temporal_query

AGGREGATES = ("first", "last", "min", "max", "avg", "sum", "count")


def reference_situations(events: pd.DataFrame, condition, tick, low, high) -> list[dict]:
    """TPStream's Algorithm 1, one event at a time, per partition (in key order)."""
    out = []
    for key in sorted(events["part"].unique()):
        rows = events[events["part"] == key].sort_values("time").to_dict("records")
        run: list[dict] = []
        for row in [*rows, None]:
            if row is not None and condition(row):
                run.append(row)
                continue
            if run:
                open_end = row is None
                te = rows[-1]["time"] + tick if open_end else row["time"]
                values = [r["v"] for r in run]
                situation = {"part": key, "ts": run[0]["time"], "te": te, "open_end": open_end,
                             "first_v": values[0], "last_v": values[-1], "min_v": min(values),
                             "max_v": max(values), "avg_v": sum(values) / len(values),
                             "sum_v": sum(values), "count_v": len(values)}
                if (low is None or te - situation["ts"] >= low) and (
                        high is None or te - situation["ts"] <= high):
                    out.append(situation)
            run = []
    return out


@st.composite
def point_streams(draw):
    rows = []
    for part in range(draw(st.integers(1, 3))):
        times = draw(st.lists(st.integers(0, 40), min_size=0, max_size=25, unique=True))
        for t in times:
            rows.append({"part": part, "time": t, "v": draw(st.integers(-3, 3)),
                         "w": draw(st.sampled_from(["a", "b"]))})
    frame = pd.DataFrame(rows, columns=["part", "time", "v", "w"])
    # Input order is arbitrary: the derivation sorts by (partition, time).
    order = draw(st.permutations(range(len(frame))))
    return frame.iloc[list(order)].reset_index(drop=True).astype({"time": "int64", "v": "int64"})


@given(point_streams(), st.integers(-2, 2), st.sampled_from([None, 1, 3]),
       st.sampled_from([None, 2, 6]), st.sampled_from([1, 2]))
def test_situations_equal_a_per_event_loop(events, k, low, high, tick):
    bound = ""
    if low is not None and high is not None:
        low, high = min(low, high), max(low, high)
        bound = f" DURATION BETWEEN {low} AND {high}"
    elif low is not None:
        bound = f" AT LEAST {low}"
    elif high is not None:
        bound = f" AT MOST {high}"
    returns = ", ".join(f"{a}(A.v) AS {a}_out" for a in AGGREGATES)
    pattern = parse_temporal_query(
        f"PARTITION BY part DEFINE A AS v > {k} OR w = 'a' AND v = {k}{bound}, B AS v < {k} "
        f"PATTERN A before B RETURN {returns}")
    got = derive_situations(events, pattern, tick=tick)

    expected = reference_situations(
        events, lambda r: r["v"] > k or (r["w"] == "a" and r["v"] == k), tick, low, high)
    table = got["A"]
    assert list(table.columns) == ["part", "ts", "te", "open_end",
                                   *(f"{a}_v" for a in AGGREGATES)]
    records = table.to_dict("records")
    assert len(records) == len(expected)
    for row, want in zip(records, expected):
        assert row.keys() == want.keys()
        for column, value in want.items():
            assert math.isclose(row[column], value), (column, row, want)
    # B carries no aggregates; situations of a symbol never overlap within a partition.
    assert list(got["B"].columns) == ["part", "ts", "te", "open_end"]
    for _, part in got["B"].groupby("part"):
        assert (part["ts"].to_numpy()[1:] >= part["te"].to_numpy()[:-1]).all()


def test_runs_open_ends_and_units():
    events = pd.DataFrame({"time": [0, 1000, 2000, 3000, 4000, 5000],
                           "accel": [9, 9, 1, 9, 9, 9]})
    pattern = parse_temporal_query(
        "DEFINE A AS accel > 8 AT LEAST 2s, B AS accel < 2 PATTERN A meets B")
    got = derive_situations(events, pattern, time_unit="1ms")
    # [0, 2000) is exactly 2 s; [3000, 5001) is open, ended one tick after its last event.
    assert got["A"][["ts", "te", "open_end"]].values.tolist() == [[0, 2000, False],
                                                                  [3000, 5001, True]]
    assert got["B"][["ts", "te"]].values.tolist() == [[2000, 3000]]
    with pytest.raises(QueryError, match="pass time_unit="):
        derive_situations(events, pattern)


def test_empty_input_gives_empty_tables():
    pattern = parse_temporal_query("PARTITION BY p DEFINE A AS x > 0, B AS x < 0 "
                                   "PATTERN A meets B RETURN avg(A.x) AS m")
    empty = pd.DataFrame({"p": pd.Series(dtype="int64"), "time": pd.Series(dtype="int64"),
                          "x": pd.Series(dtype="float64")})
    got = derive_situations(empty, pattern)
    assert got["A"].empty and list(got["A"].columns) == ["p", "ts", "te", "open_end", "avg_x"]


@pytest.mark.parametrize(("events", "error", "message"), [
    (pd.DataFrame({"p": [1, 1, 2], "t": [0, 5, 5], "x": [1, 1, 1]}), None, None),
    (pd.DataFrame({"p": [1, 2, 1], "t": [0, 5, 0], "x": [1, 1, 1]}), InputError,
     "rows 0 and 2: two events of one partition at t 0"),
    (pd.DataFrame({"p": [1, 1], "t": [0, 1], "x": [1, np.nan]}), InputError,
     "row 1, column 'x': missing value"),
    (pd.DataFrame({"p": [1, 1], "t": [0, np.nan], "x": [1, 2]}), InputError,
     "row 1, column 't': the time is missing"),
    (pd.DataFrame({"p": [1, None], "t": [0, 1], "x": [1, 2]}), InputError,
     "row 1, column 'p': missing partition key"),
    (pd.DataFrame({"p": [1], "x": [1]}), InputError, "lack column(s) 't'"),
    (pd.DataFrame({"p": [1], "t": [0]}), QueryError, "reads column(s) 'x'"),
    (pd.DataFrame({"p": [1], "t": ["0"], "x": [1]}), InputError, "must hold numbers"),
])
def test_bad_point_events_name_the_row(events, error, message):
    pattern = parse_temporal_query("PARTITION BY p DEFINE A AS x > 0, B AS x < 0 "
                                   "PATTERN A meets B")
    if error is None:
        assert len(derive_situations(events, pattern, time_column="t")["A"]) == 2
        return
    with pytest.raises(error) as caught:
        derive_situations(events, pattern, time_column="t")
    assert message in str(caught.value)


def test_bad_tick_and_clashing_names():
    pattern = parse_temporal_query("PARTITION BY ts DEFINE A AS x > 0, B AS x < 0 "
                                   "PATTERN A meets B")
    events = pd.DataFrame({"ts": [1], "time": [0], "x": [1]})
    with pytest.raises(QueryError, match="ts would appear twice"):
        derive_situations(events, pattern)
    with pytest.raises(InputError, match="tick"):
        derive_situations(events.rename(columns={"ts": "p"}), parse_temporal_query(
            "DEFINE A AS x > 0, B AS x < 0 PATTERN A meets B"), tick=0)


def test_interval_events_given_directly():
    pattern = parse_temporal_query(
        "PARTITION BY car DEFINE A AS x > 0 AT MOST 5, B AS x < 0 PATTERN A meets B "
        "RETURN avg(A.speed) AS s, count(A.speed) AS n, max(B.speed) AS top")
    rows = pd.DataFrame({"car": [2, 1, 1, 1, 1], "ts": [0, 10, 0, 3, 20],
                         "te": [4, 12, 3, 9, 30], "symbol": ["A", "A", "A", "B", "Z"],
                         "speed": [1.0, 2.0, 3.0, 4.0, 5.0], "avg_speed": [7.0] * 5})
    got = situations_from_intervals(rows, pattern)
    assert got["A"].values.tolist() == [[1, 0, 3, False, 7.0, 1], [1, 10, 12, False, 7.0, 1],
                                        [2, 0, 4, False, 7.0, 1]]
    assert got["B"].values.tolist() == [[1, 3, 9, False, 4.0]]


@pytest.mark.parametrize(("rows", "message"), [
    ({"ts": [0, 2], "te": [3, 5], "symbol": ["A", "A"]}, "rows 0 and 1: two situations of A"),
    ({"ts": [0, 4], "te": [3, 4], "symbol": ["A", "B"]}, "row 1: ts 4 is not before te 4"),
    ({"ts": [0], "symbol": ["A"]}, "lack column(s) 'te'"),
])
def test_bad_interval_events_name_the_rows(rows, message):
    pattern = parse_temporal_query("DEFINE A AS x > 0, B AS x < 0 PATTERN A meets B")
    with pytest.raises(InputError) as caught:
        situations_from_intervals(pd.DataFrame(rows), pattern)
    assert message in str(caught.value)


@st.composite
def streams_with_missing_values(draw):
    """Float payloads with missing values, string partition keys, rows in any order."""
    rows = []
    for part in draw(st.lists(st.sampled_from(["north", "south", "east"]), unique=True,
                              min_size=1)):
        for t in draw(st.lists(st.integers(0, 30), max_size=20, unique=True)):
            rows.append({"part": part, "time": t, "x": draw(st.integers(0, 2)),
                         "v": draw(st.one_of(st.none(), st.floats(-5, 5, width=16)))})
    frame = pd.DataFrame(rows, columns=["part", "time", "x", "v"]).astype(
        {"v": "float64", "time": "int64", "x": "int64"})
    order = draw(st.permutations(range(len(frame))))
    return frame.iloc[list(order)].reset_index(drop=True)


@given(streams_with_missing_values())
def test_aggregates_skip_missing_values_as_sql_does(events):
    returns = ", ".join(f"{a}(A.v) AS {a}_out" for a in AGGREGATES)
    pattern = parse_temporal_query(f"PARTITION BY part DEFINE A AS x > 0, B AS x = 0 "
                                   f"PATTERN A before B RETURN {returns}")
    table = derive_situations(events, pattern)["A"]
    expected = []
    for part in sorted(events["part"].unique()):
        rows = events[events["part"] == part].sort_values("time")
        run_id = (rows["x"].to_numpy() <= 0).cumsum()
        for _, run in rows[rows["x"].to_numpy() > 0].groupby(run_id[rows["x"].to_numpy() > 0]):
            values = run["v"].dropna()
            expected.append([part, run["time"].iloc[0], run["v"].iloc[0], run["v"].iloc[-1],
                             values.min() if len(values) else np.nan,
                             values.max() if len(values) else np.nan,
                             values.mean() if len(values) else np.nan,
                             values.sum(), len(values)])
    got = table[["part", "ts", *(f"{a}_v" for a in AGGREGATES)]].values.tolist()
    assert len(got) == len(expected)
    for row, want in zip(got, expected):
        assert row[:2] == want[:2]
        for value, wanted in zip(row[2:], want[2:]):
            assert (math.isnan(value) and math.isnan(wanted)) or math.isclose(
                value, wanted, abs_tol=1e-9), (row, want)


def test_sorted_input_is_not_copied_and_gives_the_same_situations():
    events = pd.DataFrame({"car": np.repeat([3, 7], 6), "time": np.tile(np.arange(6), 2),
                           "x": [1, 1, 0, 1, 0, 0, 0, 1, 1, 1, 0, 1]})
    pattern = parse_temporal_query("PARTITION BY car DEFINE A AS x = 1, B AS x = 0 "
                                   "PATTERN A meets B RETURN count(A.x) AS n")
    shuffled = events.sample(frac=1, random_state=4)
    for name in ("A", "B"):
        pd.testing.assert_frame_equal(derive_situations(events, pattern)[name],
                                      derive_situations(shuffled, pattern)[name])
    assert derive_situations(events, pattern)["A"][["car", "ts", "te", "count_x"]].values \
        .tolist() == [[3, 0, 2, 2], [3, 3, 4, 1], [7, 1, 4, 3], [7, 5, 6, 1]]
