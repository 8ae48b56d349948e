"""The join engine equals the reference matcher exactly (SEMANTICS B3; TPStream 5.2, 5.4)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, target
from hypothesis import strategies as st
from interval_cases import (
    AGGRESSIVE_DRIVERS,
    aggressive_cars,
    car,
    cases,
    definitions,
    interval_sets,
    pattern_parts,
    point_streams,
)

import uncertain_cep as uc
from uncertain_cep.errors import InputError, InvalidOptionError, QueryError, QueryParseError
from uncertain_cep.interval import (
    derive_situations,
    match_brute_force,
    match_join,
    situations_from_intervals,
)
from uncertain_cep.interval.join_plan import evaluation_order
from uncertain_cep.interval.language import parse_temporal_query

BATCH_SIZES = st.sampled_from([1, 3, 1 << 20])


def assert_same(situations, pattern, batch_size=1 << 20, order=None, **options):
    expected = match_brute_force(situations, pattern, **options)
    got = match_join(situations, pattern, batch_size=batch_size, order=order, **options)
    pd.testing.assert_frame_equal(got, expected)
    return expected


def table(*spans, **columns) -> pd.DataFrame:
    return pd.DataFrame({"ts": [s[0] for s in spans], "te": [s[1] for s in spans], **columns})


@given(st.data())
def test_join_equals_brute_force_on_interval_events(data):
    names, constraints, within = data.draw(pattern_parts())
    events = data.draw(interval_sets(names))
    pattern = parse_temporal_query(
        f"PARTITION BY p DEFINE {', '.join(f'{n} AS v > 0' for n in names)} "
        f"PATTERN {constraints} {within} RETURN max(A.v) AS top, count(B.v) AS n")
    situations = situations_from_intervals(events, pattern)
    found = assert_same(situations, pattern, data.draw(BATCH_SIZES))
    target(float(min(len(found), 20)))


@given(st.data())
def test_join_equals_brute_force_on_point_streams(data):
    names, constraints, within = data.draw(pattern_parts())
    events = data.draw(point_streams())
    pattern = parse_temporal_query(
        f"PARTITION BY k {data.draw(definitions(names))} PATTERN {constraints} {within} "
        "RETURN avg(B.x) AS mean_x, first(A.y) AS y0, last(A.time) AS t1")
    situations = derive_situations(events, pattern)
    found = assert_same(situations, pattern, data.draw(BATCH_SIZES))
    target(float(min(len(found), 20)))


@given(st.data())
def test_join_equals_brute_force_with_float_times_and_window_edges(data):
    """Times k/10 make ``max(te) - min(ts) <= w`` round either way at the window's edge."""
    names, constraints, _ = data.draw(pattern_parts(max_symbols=3))
    events = data.draw(interval_sets(names, partitions=("p0", "p1")))
    events[["ts", "te"]] = events[["ts", "te"]] * 0.1
    window = data.draw(st.sampled_from([0.3, 0.6, 0.7, 1.2, 2.5]))
    pattern = parse_temporal_query(
        f"PARTITION BY p DEFINE {', '.join(f'{n} AS v > 0' for n in names)} "
        f"PATTERN {constraints} WITHIN {window}")
    found = assert_same(situations_from_intervals(events, pattern), pattern,
                        data.draw(BATCH_SIZES))
    target(float(min(len(found), 20)))


@given(st.data())
def test_every_evaluation_order_gives_the_same_answer(data):
    """The ranges are right from either side of every constraint, whatever the cost model
    picks."""
    names, constraints, within = data.draw(pattern_parts())
    events = data.draw(interval_sets(names))
    pattern = parse_temporal_query(
        f"PARTITION BY p DEFINE {', '.join(f'{n} AS v > 0' for n in names)} "
        f"PATTERN {constraints} {within}")
    order = tuple(data.draw(st.permutations(names)))
    found = assert_same(situations_from_intervals(events, pattern), pattern,
                        data.draw(BATCH_SIZES), order)
    target(float(min(len(found), 20)))


@given(cases())
def test_join_equals_brute_force_on_the_reference_cases(case):
    tables, chosen, within = case
    pattern = parse_temporal_query(
        f"PARTITION BY p DEFINE A AS x > 0, B AS x > 1, C AS x > 2 "
        f"PATTERN {' AND '.join(chosen)} {within}")
    target(float(len(assert_same(tables, pattern))))


@pytest.mark.parametrize(("a", "b", "pairs"), [
    ([(0, 2), (3, 4)], [(6, 8)], [[3, 6]]),
    ([(0, 2)], [(1, 4), (6, 8)], []),
    ([(2, 3)], [(0, 2), (6, 8)], [[2, 6]]),
    ([(0, 2)], [(2, 4)], []),
    ([(0, 2), (5, 6)], [(3, 4), (7, 9), (10, 11)], [[0, 3], [5, 7]]),
])
@pytest.mark.parametrize("text", ["A followed_by B", "B follows A"])
@pytest.mark.parametrize("order", [("A", "B"), ("B", "A")])
def test_followed_by_from_either_side(a, b, pairs, text, order):
    pattern = parse_temporal_query(f"DEFINE A AS x > 0, B AS x < 0 PATTERN {text}")
    got = assert_same({"A": table(*a), "B": table(*b)}, pattern, order=order)
    assert got[["A_ts", "B_ts"]].values.tolist() == pairs


def test_the_aggressive_drivers_query_of_semantics_c():
    events = aggressive_cars().sample(frac=1.0, random_state=3)
    got = uc.match(events, AGGRESSIVE_DRIVERS, time_unit="1s")
    expected = match_brute_force(derive_situations(events, parse_temporal_query(
        AGGRESSIVE_DRIVERS), time_unit="1s"), parse_temporal_query(AGGRESSIVE_DRIVERS),
        time_unit="1s")
    pd.testing.assert_frame_equal(got, expected)
    pd.testing.assert_frame_equal(
        uc.match(events, AGGRESSIVE_DRIVERS, "brute_force", time_unit=1.0), expected)
    assert got.values.tolist() == [
        [1, 1, 7, 3, 15, 10, 12, 1, 85.5, 12],
        [3, 1, 7, 3, 15, 10, 11, 3, 85.5, 11],
        [3, 1, 7, 3, 15, 13, 14, 3, 85.5, 14],
    ]


def test_match_reads_interval_events_and_a_parsed_pattern():
    intervals = pd.DataFrame({"symbol": ["A", "B", "A", "B", "C"], "ts": [0, 2, 0, 1, 0],
                              "te": [2, 5, 3, 4, 9], "car": [1, 1, 2, 2, 2]})
    pattern = parse_temporal_query("PARTITION BY car DEFINE A AS x > 0, B AS x < 0 "
                                   "PATTERN A meets; overlaps B")
    got = uc.match(intervals, pattern)
    assert got.values.tolist() == [[1, 0, 2, 2, 5, 2], [2, 0, 3, 1, 4, 3]]
    pd.testing.assert_frame_equal(got, uc.match(intervals, pattern, engine="brute_force"))
    renamed = intervals.rename(columns={"symbol": "kind"})
    pd.testing.assert_frame_equal(uc.match(renamed, pattern, symbol_column="kind"), got)


def test_match_errors():
    events = pd.DataFrame({"time": [0, 1], "x": [1, 0]})
    query = "DEFINE A AS x = 1, B AS x = 0 PATTERN A meets B"
    with pytest.raises(InvalidOptionError, match="'automaton' is not a valid match engine; "
                                                 "choose one of: 'join', 'automata', "
                                                 "'brute_force'"):
        uc.match(events, query, engine="automaton")
    with pytest.raises(InputError, match=r"neither a time column 'time'.*'ts', 'te' and "
                                         r"'symbol'"):
        uc.match(events.rename(columns={"time": "t"}), query)
    with pytest.raises(QueryError, match=r"reads column.*'x'"):
        uc.match(events.drop(columns="x"), query)
    with pytest.raises(InputError, match=r"lack column.*'car'"):
        uc.match(pd.DataFrame({"ts": [0], "te": [1], "symbol": ["A"]}),
                 "PARTITION BY car " + query)
    with pytest.raises(QueryParseError):
        uc.match(events, "DEFINE A AS x = 1 PATTERN A meets")
    with pytest.raises(QueryError, match="query text or a TemporalPattern"):
        uc.match(events, 42)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="DataFrame"):
        uc.match({"time": [0]}, query)  # type: ignore[arg-type]
    pattern = parse_temporal_query(query)
    with pytest.raises(InvalidOptionError, match="order must name every symbol"):
        match_join({"A": table((0, 1)), "B": table((1, 2))}, pattern, order=("A",))
    with pytest.raises(InputError, match="overlap"):
        match_join({"A": table((0, 2), (1, 3)), "B": table((1, 2))}, pattern)


def test_empty_answers_and_key_dtypes_match_the_reference():
    pattern = parse_temporal_query("PARTITION BY p DEFINE A AS x > 0, B AS x < 0 "
                                   "PATTERN A meets B RETURN sum(A.x) AS s")
    a = table((0, 1), (4, 6), p=np.array([1, 2], dtype="int32"), sum_x=[1.5, 2.5])
    for b in (table((1, 2), p=np.array([1], dtype="int32")),  # one match
              table((2, 3), p=np.array([1], dtype="int32")),  # a shared partition, no match
              table((2, 3), p=np.array([3], dtype="int32")),  # no shared partition
              table(p=np.array([], dtype="int32"))):  # no situation at all
        got = assert_same({"A": a, "B": b}, pattern)
        assert got["p"].dtype == np.int32 and got["s"].dtype == np.float64


def test_string_keys_missing_keys_and_unconstrained_symbols():
    pattern = parse_temporal_query("PARTITION BY p DEFINE A AS x > 0, B AS x < 0, C AS y > 0 "
                                   "PATTERN A before B WITHIN 8")
    tables = {"A": table((0, 1), (2, 3), (0, 4), p=["x", "x", None]),
              "B": table((5, 6), (2, 8), (0, 1), p=["x", None, "y"]),
              "C": table((6, 9), (1, 2), (3, 4), p=["x", "x", "x"])}
    got = assert_same(tables, pattern)
    assert got[["A_ts", "B_ts", "C_ts"]].values.tolist() == [
        [0, 5, 1], [0, 5, 3], [2, 5, 1], [2, 5, 3], [2, 5, 6]]


def test_the_cost_model_keeps_partial_matches_few_and_follows_restrictive_constraints():
    pattern = parse_temporal_query("DEFINE A AS x > 0, B AS x < 0, C AS y > 0, D AS y < 0 "
                                   "PATTERN A before B AND B meets C AND C during D")
    # From A: 5 + 5 * 50 (B after A: half of B) + 250 + 250 = 755 partial matches; from
    # B: 100 + 100 (C) + 100 (D) + 100 * 2.5 (A before B) = 550, though A is smallest.
    assert evaluation_order(pattern, {"A": 5, "B": 100, "C": 100, "D": 100}) == (
        "B", "C", "D", "A")
    assert evaluation_order(pattern, {"A": 1, "B": 100, "C": 100, "D": 100})[0] == "A"
    # C is smallest; B meets C and D contains C leave one partner each (the smaller B
    # wins the tie); A before B leaves half of A.
    assert evaluation_order(pattern, {"A": 90, "B": 100, "C": 3, "D": 1000}) == (
        "C", "B", "D", "A")


@pytest.mark.parametrize("zone", [None, "Europe/Berlin"])
def test_datetime_times_give_the_numeric_answer_as_datetimes(zone):
    speeding = {t: 80.0 + (t - 3) for t in range(3, 15)}
    events = pd.concat([car(1, {**{t: 10.0 for t in range(1, 7)}, 10: -10.0, 11: -10.0},
                            speeding),
                        car(2, {1: 10.0, 2: 10.0, 3: 10.0, 4: 10.0, 10: -10.0}, speeding)])
    numeric = uc.match(events, AGGRESSIVE_DRIVERS, time_unit="1s")
    assert len(numeric) == 1
    start = pd.Timestamp("2026-11-22 08:00", tz=zone)
    dated = events.assign(time=start + pd.to_timedelta(events["time"], unit="s"))
    got = uc.match(dated, AGGRESSIVE_DRIVERS, tick="1s")
    instants = [c for c in got.columns if c.endswith(("_ts", "_te")) or c == "detected_at"]
    expected = numeric.copy()
    for column in instants:
        expected[column] = start + pd.to_timedelta(numeric[column], unit="s")
        assert str(got[column].dtype) == str(expected[column].dtype)
    pd.testing.assert_frame_equal(got, expected, check_dtype=False)
    pd.testing.assert_frame_equal(
        uc.match(dated, AGGRESSIVE_DRIVERS, engine="automata", tick=pd.Timedelta(1, "s")),
        got)
    # Interval events with datetime ts/te, and the errors.
    intervals = pd.DataFrame({"symbol": ["A", "B"], "ts": [start, start + pd.Timedelta("2s")],
                              "te": [start + pd.Timedelta("2s"), start + pd.Timedelta("5s")]})
    met = uc.match(intervals, "DEFINE A AS x > 0, B AS x > 0 PATTERN A meets B WITHIN 5s")
    assert met["B_ts"].tolist() == [start + pd.Timedelta("2s")]
    with pytest.raises(InputError, match="drop time_unit"):
        uc.match(dated, AGGRESSIVE_DRIVERS, time_unit="1s")
    with pytest.raises(InputError, match="all hold datetimes or all numbers"):
        uc.match(intervals.assign(te=[2, 5]), "DEFINE A AS x > 0, B AS x > 0 "
                                              "PATTERN A meets B")


@pytest.mark.parametrize(("changed", "position", "words"), [
    ("WITHIN 5 MINUTES", (10, 8), "WITHIN 5 on a datetime time column: give a unit, e.g. "
                                  "WITHIN 5s or WITHIN 5 MINUTES"),
    ("AT LEAST 5s", (3, 32), "symbol A: AT LEAST 5 on a datetime time column: give a unit, "
                             "e.g. AT LEAST 5s or AT LEAST 5 MINUTES"),
    ("AND 30s", (4, 48), "symbol B: DURATION BETWEEN 4 SECONDS AND 30 on a datetime time "
                         "column: give a unit, e.g. AND 30s or AND 30 MINUTES"),
])
def test_a_plain_number_on_datetime_times_is_refused_naming_its_place(changed, position,
                                                                       words):
    # On datetimes a plain number would count nanoseconds: WITHIN 5 found nothing, silently.
    start = pd.Timestamp("2026-11-22 08:00", tz="Europe/Berlin")
    events = aggressive_cars()
    dated = events.assign(time=start + pd.to_timedelta(events["time"], unit="s"))
    query = AGGRESSIVE_DRIVERS.replace(changed, changed.rstrip("s").replace(" MINUTES", ""))
    assert query != AGGRESSIVE_DRIVERS
    for engine in ("join", "automata", "brute_force"):
        with pytest.raises(QueryError) as info:
            uc.match(dated, query, engine=engine, tick="1s")
        line, column = position
        assert str(info.value).startswith(f"line {line}, column {column}: {words}")
    with pytest.raises(QueryError, match=r"^symbol A: AT LEAST 5 on a datetime"):
        uc.match(dated, parse_temporal_query(AGGRESSIVE_DRIVERS.replace("5s,", "5,")),
                 tick="1s")
    # Numbers keep their meaning on numeric times (with or without a time_unit) ...
    numeric = uc.match(events, query.replace("WITHIN 5\n", "WITHIN 300\n"), time_unit="1s")
    assert len(numeric) == len(uc.match(events, AGGRESSIVE_DRIVERS, time_unit="1s"))
    # ... and 0 is the same in every unit.
    zero = ("PARTITION BY car_id DEFINE A AS accel > 8 AT LEAST 0, B AS speed > 70 "
            "PATTERN A overlaps B WITHIN {}")
    assert len(uc.match(dated, zero.format("1 MINUTES"), tick="1s")) == len(
        uc.match(events, zero.format(60))) > 0
    assert uc.match(dated, zero.format(0), tick="1s").empty


@given(st.data())
def test_shuffled_situation_tables_give_the_sorted_answer(data):
    """The engines skip sorting tables that arrive sorted; any order gives the same."""
    names, constraints, within = data.draw(pattern_parts())
    events = data.draw(point_streams())
    pattern = parse_temporal_query(
        f"PARTITION BY k {data.draw(definitions(names))} PATTERN {constraints} {within}")
    situations = derive_situations(events, pattern)
    shuffled = {n: t.sample(frac=1.0, random_state=data.draw(st.integers(0, 99)))
                for n, t in situations.items()}
    pd.testing.assert_frame_equal(match_join(shuffled, pattern), match_join(situations, pattern))


def test_the_package_carries_semantics_c_listing_1_verbatim():
    from uncertain_cep.datasets.connected_car import AGGRESSIVE_DRIVERS as packaged

    assert packaged == AGGRESSIVE_DRIVERS


INT64_MAX = 2**63 - 1


@given(st.data())
def test_join_equals_brute_force_with_windows_up_to_int64s_end(data):
    """A window near int64's end, on times moved towards either end: the join's window
    bounds saturate instead of overflowing (issue 44 item 3)."""
    names, constraints, _ = data.draw(pattern_parts(max_symbols=3))
    events = data.draw(interval_sets(names, partitions=("p0", "p1")))
    shift = data.draw(st.sampled_from([0, 2**62, -(2**62), INT64_MAX - 100, -INT64_MAX]))
    events[["ts", "te"]] = events[["ts", "te"]].astype(np.int64) + np.int64(shift)
    window = data.draw(st.one_of(st.integers(0, INT64_MAX),
                                 st.sampled_from([INT64_MAX, INT64_MAX - 1, 2**62])))
    pattern = parse_temporal_query(
        f"PARTITION BY p DEFINE {', '.join(f'{n} AS v > 0' for n in names)} "
        f"PATTERN {constraints} WITHIN {window}")
    assert_same(situations_from_intervals(events, pattern), pattern, data.draw(BATCH_SIZES))


@pytest.mark.parametrize("engine", ["join", "automata", "brute_force"])
def test_window_at_int64s_end_answers_and_past_it_is_a_parse_error(engine):
    points = pd.DataFrame({"key": 1, "t": [0, 1, 2, 3, 4, 5], "x": [1, 1, 0, 2, 2, 0]})
    query = "FROM S PARTITION BY key DEFINE A AS x = 1, B AS x = 2 PATTERN A before B{}"
    unbounded = uc.match(points, query.format(""), engine=engine, time_column="t")
    at_end = uc.match(points, query.format(f" WITHIN {INT64_MAX}"), engine=engine,
                      time_column="t")
    pd.testing.assert_frame_equal(at_end, unbounded)
    with pytest.raises(QueryParseError, match=r"column 81: WITHIN 99999999999999999999999 "
                                              r"is longer than the largest window"):
        uc.match(points, query.format(" WITHIN 99999999999999999999999"), engine=engine,
                 time_column="t")
