"""Part-B query text (SEMANTICS C) and the temporal patterns it parses to (SEMANTICS B)."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from interval_cases import AGGRESSIVE_DRIVERS

from uncertain_cep.errors import QueryError, QueryParseError
from uncertain_cep.interval.conditions import And, Column, Compare, Literal, Not, Or
from uncertain_cep.interval.language import parse_temporal_query
from uncertain_cep.interval.patterns import (
    Aggregate,
    Duration,
    FollowedBy,
    RelationConstraint,
    ReturnItem,
    SituationDefinition,
    TemporalPattern,
    TimeUnit,
)
from uncertain_cep.interval.relations import AllenRelation as R
from uncertain_cep.interval.relations import Endpoint, EndpointRestriction

SEMANTICS_C_QUERY = AGGRESSIVE_DRIVERS

S = TimeUnit.SECONDS
SEMANTICS_C_PATTERN = TemporalPattern(
    symbols=(
        SituationDefinition("A", Compare(Column("accel"), ">", Literal(8)),
                            min_duration=Duration(5, S)),
        SituationDefinition("B", Compare(Column("speed"), ">", Literal(70)),
                            min_duration=Duration(4, S), max_duration=Duration(30, S)),
        SituationDefinition("C", Compare(Column("accel"), "<", Literal(-9)),
                            max_duration=Duration(10, S)),
    ),
    constraints=(
        RelationConstraint("A", "B", frozenset({R.meets, R.overlaps, R.starts, R.during})),
        # "B finishes C" is "C finished_by B", and so on: the group is read from C to B.
        RelationConstraint("C", "B", frozenset({R.during, R.finished_by, R.overlapped_by,
                                                R.met_by})),
        RelationConstraint("A", "C", frozenset({R.before, R.meets, R.overlaps, R.starts,
                                                R.during})),
        EndpointRestriction("A", Endpoint.ts, "<", "C", Endpoint.ts),
    ),
    within=Duration(5, TimeUnit.MINUTES),
    source="CarSensors",
    partition_by=("car_id",),
    returns=(ReturnItem(Aggregate.first, "B", "car_id", "id"),
             ReturnItem(Aggregate.avg, "B", "speed", "avg_speed")),
)

# TPStream's Listing 1 as printed (source alias, qualified columns, lower-case keywords,
# BETWEEN without DURATION, no spaces after ';', a final ';'), minus its units on values.
TPSTREAM_LISTING_1 = """\
FROM CarSensors CS PARTITION BY CS.car_id DEFINE A AS CS.accel > 8 at least 5s,
B AS CS.speed > 70 between 4s AND 30s, C AS CS.accel < -9 at least 3s PATTERN A meets B;A overlaps B;A starts B;A during B
AND C during B;B finishes C;B overlaps C;B meets C AND A before C WITHIN 5 MINUTES RETURN first (B.car_id) AS id,
avg (B.speed) AS avg_speed;
"""  # noqa: E501


def definitions(text: str) -> str:
    return f"DEFINE A AS x > 1, B AS y < 2, C AS z = 'k' {text}"


def test_the_semantics_c_query_parses_to_its_pattern():
    pattern = parse_temporal_query(SEMANTICS_C_QUERY)
    assert pattern == SEMANTICS_C_PATTERN
    assert pattern.output_columns() == ("car_id", "A_ts", "A_te", "B_ts", "B_te", "C_ts",
                                        "C_te", "id", "avg_speed", "detected_at")


def test_tpstream_listing_1_parses():
    pattern = parse_temporal_query(TPSTREAM_LISTING_1)
    assert pattern.source == "CarSensors" and pattern.partition_by == ("car_id",)
    assert pattern.constraints[:2] == SEMANTICS_C_PATTERN.constraints[:2]
    assert pattern.constraints[2] == RelationConstraint("A", "C", frozenset({R.before}))
    assert pattern.symbol("C").min_duration == Duration(3, S)
    assert pattern.returns == SEMANTICS_C_PATTERN.returns


@pytest.mark.parametrize("text", [
    SEMANTICS_C_QUERY,
    TPSTREAM_LISTING_1,
    definitions("PATTERN A followed_by B AND C.te >= B.ts"),
    "DEFINE A AS NOT (x > 1 OR s = 'it''s') AND y != 3 OR z <= 0.5 PATTERN A AND B"
    .replace("PATTERN", ", B AS w < 1e-3 PATTERN"),
])
def test_text_round_trips(text):
    pattern = parse_temporal_query(text)
    assert parse_temporal_query(str(pattern)) == pattern


def test_shorthand_equals_the_long_form_and_either_order():
    long = parse_temporal_query(definitions("PATTERN A meets B; A overlaps B; A starts B"))
    short = parse_temporal_query(definitions("PATTERN A meets; overlaps; starts B"))
    backwards = parse_temporal_query(definitions("PATTERN B met_by A; A overlaps; starts B"))
    assert long == short
    assert long.constraints == (
        RelationConstraint("A", "B", frozenset({R.meets, R.overlaps, R.starts})),)
    # A group is read in the order of its first term; the other order is the inverse.
    assert backwards.constraints == (long.constraints[0].inverted(),)


def test_relation_names_take_any_case_and_hyphens():
    pattern = parse_temporal_query(definitions(
        "pattern A Overlapped-By; MET_BY; finished-by B and A Followed-By C and B sEq C"))
    assert pattern.constraints == (
        RelationConstraint("A", "B", frozenset({R.overlapped_by, R.met_by, R.finished_by})),
        FollowedBy("A", "C"),
        RelationConstraint("B", "C", frozenset({R.before, R.meets, R.overlaps, R.starts,
                                                R.during})),
    )


def test_hierarchy_operators_follows_and_restriction_chains():
    pattern = parse_temporal_query(definitions(
        "PATTERN A ISEQ B; A CAND B AND C follows A AND A.ts <= B.te = C.ts"))
    iseq_or_cand = {R.after, R.met_by, R.overlapped_by, R.started_by, R.contains,
                    R.finishes, R.equals, R.finished_by}
    assert pattern.constraints == (
        RelationConstraint("A", "B", frozenset(iseq_or_cand)),
        FollowedBy("A", "C"),
        EndpointRestriction("A", Endpoint.ts, "<=", "B", Endpoint.te),
        EndpointRestriction("B", Endpoint.te, "=", "C", Endpoint.ts),
    )


def test_keywords_are_case_insensitive():
    words = r"\b(FROM|PARTITION|BY|DEFINE|AS|AT|LEAST|MOST|DURATION|BETWEEN|AND|PATTERN|SEQ|" \
            r"WITHIN|MINUTES|RETURN|first|avg|meets|overlaps|starts|during|finishes)\b"
    lower = re.sub(words, lambda m: m.group(0).lower(), SEMANTICS_C_QUERY)
    mixed = re.sub(words, lambda m: m.group(0).capitalize(), SEMANTICS_C_QUERY)
    assert "partition by" in lower and "Partition By" in mixed
    assert parse_temporal_query(lower) == parse_temporal_query(mixed) == SEMANTICS_C_PATTERN


@pytest.mark.parametrize(("text", "expected"), [
    ("5s", Duration(5, TimeUnit.SECONDS)),
    ("5 s", Duration(5, TimeUnit.SECONDS)),
    ("30 SECONDS", Duration(30, TimeUnit.SECONDS)),
    ("1 second", Duration(1, TimeUnit.SECONDS)),
    ("5 MINUTES", Duration(5, TimeUnit.MINUTES)),
    ("5min", Duration(5, TimeUnit.MINUTES)),
    ("2 HOURS", Duration(2, TimeUnit.HOURS)),
    ("1.5h", Duration(1.5, TimeUnit.HOURS)),
    ("250ms", Duration(250, TimeUnit.MILLISECONDS)),
    ("3 days", Duration(3, TimeUnit.DAYS)),
    ("42", Duration(42)),
])
def test_time_units_on_windows_and_durations(text, expected):
    pattern = parse_temporal_query(definitions(f"PATTERN A meets B WITHIN {text}")
                                   .replace("x > 1", f"x > 1 AT MOST {text}"))
    assert pattern.within == expected
    assert pattern.symbol("A").max_duration == expected


def test_units_convert_with_the_data_time_unit():
    pattern = SEMANTICS_C_PATTERN
    in_ms = pattern.resolve_units("1ms")
    assert in_ms.within == Duration(300_000)
    assert in_ms.symbol("B").min_duration == Duration(4000)
    assert pattern.resolve_units(60).within == Duration(5)
    assert parse_temporal_query(definitions("PATTERN A meets B WITHIN 7")).resolve_units(
        None).within == Duration(7)
    with pytest.raises(QueryError, match="pass time_unit="):
        pattern.resolve_units(None)


def test_bounds_in_different_units_are_compared_once_converted():
    pattern = parse_temporal_query(definitions("PATTERN A meets B").replace(
        "x > 1", "x > 1 DURATION BETWEEN 1 MINUTES AND 90s"))
    assert pattern.resolve_units(1).symbol("A").max_duration == Duration(90)
    bad = parse_temporal_query(definitions("PATTERN A meets B").replace(
        "x > 1", "x > 1 BETWEEN 2 MINUTES AND 90s"))
    with pytest.raises(QueryError, match="minimum duration 2 MINUTES is above"):
        bad.resolve_units(1)


def test_condition_precedence_and_evaluation():
    pattern = parse_temporal_query(
        "DEFINE A AS NOT x > 1 AND y = 'a' OR (z >= 2 AND z < 3), B AS 5 < x PATTERN A AND B")
    x_le_1 = Not(Compare(Column("x"), ">", Literal(1)))
    assert pattern.symbol("A").condition == Or((
        And((x_le_1, Compare(Column("y"), "=", Literal("a")))),
        And((Compare(Column("z"), ">=", Literal(2)), Compare(Column("z"), "<", Literal(3)))),
    ))
    frame = pd.DataFrame({"x": [0, 0, 2, 9], "y": ["a", "b", "a", "a"], "z": [0, 2.5, 2, 9]})
    assert pattern.symbol("A").condition.evaluate(frame).tolist() == [True, True, True, False]
    assert pattern.symbol("B").condition.evaluate(frame).tolist() == [False, False, False, True]


def test_comparing_a_number_column_with_a_string_is_a_query_error():
    pattern = parse_temporal_query("DEFINE A AS x = 'a', B AS x > 0 PATTERN A meets B")
    with pytest.raises(QueryError, match="column x holds numbers, compared with a string"):
        pattern.symbol("A").condition.evaluate(pd.DataFrame({"x": [1.0]}))


@pytest.mark.parametrize(("text", "line", "column", "expected", "message"), [
    ("DEFINE A AS x > 1\nPATTERN A meets", 2, 16, ("';'", "a name"), "unexpected end"),
    ("DEFINE A AS x > 1, B AS y < 2\nPATTERN A overlapping B", 2, 11,
     ("'.'", "a temporal relation"), "unexpected 'overlapping'"),
    ("DEFINE A AS x >> 1", 1, 16, None, "unexpected"),
    ("PATTERN A meets B", 1, 1, ("'DEFINE'", "'FROM'", "'PARTITION'"), "unexpected 'PATTERN'"),
    ("DEFINE A AS x > 1, B AS y < 2 PATTERN A meets B WITHIN 5 weeks", 1, 58, None,
     "unexpected 'weeks'"),
    ("DEFINE A AS x > 1, B AS y < 2 PATTERN A meets B AND A.ts != B.ts", 1, 58, None,
     "unexpected '!='"),
    ("DEFINE A AS x > 'unterminated, B AS y < 2", 1, 17, None, "unterminated string"),
])
def test_syntax_errors_name_line_column_and_what_was_expected(text, line, column, expected,
                                                             message):
    with pytest.raises(QueryParseError) as error:
        parse_temporal_query(text)
    assert (error.value.line, error.value.column) == (line, column)
    assert f"line {line}, column {column}: {message}" in str(error.value)
    if expected is not None:
        assert set(expected) <= set(error.value.expected)
    assert "^" in str(error.value).splitlines()[-1]


@pytest.mark.parametrize(("text", "at", "message"), [
    (definitions("PATTERN A meets D"), "A meets D", "symbol D is not defined"),
    (definitions("PATTERN A meets B; A meets C"), "A meets C", "one disjunction relates one pair"),
    (definitions("PATTERN A.ts < A.te"), "A.ts", "relates A with itself"),
    (definitions("PATTERN A meets A"), "A meets A", "relates A with itself"),
    (definitions("PATTERN A meets B RETURN median(A.x)"), "median", "not a valid aggregate"),
    (definitions("PATTERN A meets B RETURN max(D.x)"), "max", "symbol D is not defined"),
    (definitions("PATTERN A meets B RETURN max(A.x) AS m, min(A.x) AS m"), "min",
     "alias m is already an output column"),
    (definitions("PATTERN A meets B RETURN max(A.x) AS A_ts"), "max", "already an output"),
    ("DEFINE A AS x > 1 AT LEAST -5s, B AS y < 2 PATTERN A meets B", "-5",
     "a duration must be a finite number >= 0"),
    ("DEFINE A AS x > 1 BETWEEN 5 AND 3, B AS y < 2 PATTERN A meets B", "BETWEEN",
     "minimum duration 5 is above the maximum 3"),
    ("DEFINE A AS x > 1,\n       A AS y < 2 PATTERN A meets B", "A AS y", "defined twice"),
    ("DEFINE A AS 1 > 2, B AS y < 2 PATTERN A meets B", "1 > 2", "compares two constants"),
    ("FROM S T DEFINE A AS U.x > 1, B AS y < 2 PATTERN A meets B", "U.x",
     "qualified only by the source's name or alias: S or T"),
])
def test_invalid_patterns_are_located(text, at, message):
    offset = text.index(at)
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    with pytest.raises(QueryParseError) as error:
        parse_temporal_query(text)
    assert (error.value.line, error.value.column) == (line, column), str(error.value)
    assert message in str(error.value)


def test_default_return_alias_and_type_errors():
    pattern = parse_temporal_query(definitions("PATTERN A meets B RETURN COUNT(A.x)"))
    assert pattern.returns == (ReturnItem(Aggregate.count, "A", "x", "count_A_x"),)
    with pytest.raises(TypeError):
        parse_temporal_query(None)  # type: ignore[arg-type]


@pytest.mark.parametrize(("text", "relations", "succession"), [
    ("A followed_by B; A meets B", {"meets"}, {"followed_by"}),
    ("A overlaps; followed_by B", {"overlaps"}, {"followed_by"}),
    ("B follows A; B meets A", {"met_by"}, {"followed_by"}),
    ("A follows; followed_by B", set(), {"follows", "followed_by"}),
    ("A SOSEQ B; B follows A", {"meets", "overlaps"}, {"followed_by"}),
])
def test_followed_by_and_follows_join_a_disjunction_like_any_relation(text, relations,
                                                                      succession):
    # SEMANTICS B2: both are relations, so a disjunction may hold them with others.
    (constraint,) = parse_temporal_query(definitions(f"PATTERN {text}")).constraints
    again = parse_temporal_query(definitions(f"PATTERN {constraint}")).constraints
    assert again == (constraint,)
    if constraint.symbols == ("B", "A"):
        constraint = constraint.inverted()
    assert {r.value for r in constraint.relations} == relations
    assert {r.value for r in constraint.succession} == succession


def test_a_succession_implied_by_before_in_its_disjunction_adds_nothing():
    (constraint,) = parse_temporal_query(
        definitions("PATTERN A before; followed_by B")).constraints
    assert constraint == RelationConstraint("A", "B", frozenset({R.before}))
