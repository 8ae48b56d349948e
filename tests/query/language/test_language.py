"""Part-A query text (SEMANTICS C) and the pattern objects it parses to (SEMANTICS A3)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uncertain_cep.durations import Duration, TimeUnit
from uncertain_cep.errors import QueryError, QueryParseError
from uncertain_cep.model.time_axis import TimeAxis
from uncertain_cep.query.language.parse import bind_query, parse_query
from uncertain_cep.query.language.patterns import (
    Between,
    Comparison,
    InSet,
    PatternItem,
    SequencePattern,
    Symbol,
)
from uncertain_cep.query.language.windows import window_instants

SEMANTICS_C_QUERY = """\
PATTERN SEQ(A, B, NOT C, D)
DEFINE A AS x BETWEEN 0 AND 2 AND y >= 8,
       B AS tag = 'Room 402',
       C AS tag IN ('Room 401', 'Room 403'),
       D AS x < 5
WITHIN 6
CONFIDENCE 0.05
"""

SEMANTICS_C_PATTERN = SequencePattern(
    items=(PatternItem("A"), PatternItem("B"), PatternItem("C", negated=True),
           PatternItem("D")),
    symbols=(
        Symbol("A", (Between("x", 0.0, 2.0), Comparison("y", ">=", 8.0))),
        Symbol("B", (InSet("tag", ("Room 402",)),)),
        Symbol("C", (InSet("tag", ("Room 401", "Room 403")),)),
        Symbol("D", (Comparison("x", "<", 5.0),)),
    ),
    within=6,
    confidence=0.05,
)


def parse_error(text: str) -> QueryParseError:
    with pytest.raises(QueryParseError) as info:
        parse_query(text)
    return info.value


# --- the documented example and the language's surface ---------------------------------------

def test_semantics_c_example_parses_to_the_expected_objects():
    pattern = parse_query(SEMANTICS_C_QUERY)
    assert pattern == SEMANTICS_C_PATTERN
    assert pattern.positive_items == (0, 1, 3)
    assert pattern.negations == ((1, 2, "C"),)


def test_keywords_are_case_insensitive_but_names_are_not():
    text = ("pattern Seq(A, b, not C, D) define A as x between 0 and 2 And y >= 8, "
            "b as tag = 'Room 402', C aS tag in ('Room 401', 'Room 403'), D AS x < 5 "
            "within 6 confidence 0.05")
    pattern = parse_query(text)
    assert [item.symbol for item in pattern.items] == ["A", "b", "C", "D"]
    assert pattern.symbol("b").predicates == (InSet("tag", ("Room 402",)),)
    assert pattern.within == 6 and pattern.confidence == 0.05


def test_define_within_and_confidence_are_optional():
    assert parse_query("PATTERN SEQ(A)") == SequencePattern((PatternItem("A"),))
    assert parse_query("PATTERN SEQ(A) WITHIN 0").within == 0
    assert parse_query("PATTERN SEQ(A) CONFIDENCE 1").confidence == 1.0
    only_define = parse_query("PATTERN SEQ(A, B) DEFINE B AS x > 1")
    assert only_define.within is None and only_define.confidence is None


def test_undefined_symbol_matches_every_event():
    pattern = parse_query("PATTERN SEQ(A, B) DEFINE A AS x > 1")
    assert pattern.symbol("B") == Symbol("B", ())
    with pytest.raises(KeyError):
        pattern.symbol("Z")


@pytest.mark.parametrize(("literal", "value"), [
    ("5", 5.0), ("-3", -3.0), ("+2.5", 2.5), ("0.125", 0.125), (".5", 0.5), ("7.", 7.0),
    ("1e3", 1000.0), ("-2.5E-2", -0.025), ("1e+2", 100.0),
])
def test_numbers_may_be_signed_decimal_or_exponent(literal, value):
    pattern = parse_query(f"PATTERN SEQ(A) DEFINE A AS x > {literal}")
    assert pattern.symbol("A").predicates == (Comparison("x", ">", value),)


def test_equality_is_numeric_for_numbers_and_categorical_for_strings():
    pattern = parse_query("PATTERN SEQ(A) DEFINE A AS x = 5 AND tag = 'v'")
    assert pattern.symbol("A").predicates == (Comparison("x", "=", 5.0), InSet("tag", ("v",)))


def test_strings_take_single_or_double_quotes_with_doubled_quote_escapes():
    pattern = parse_query('PATTERN SEQ(A) DEFINE A AS tag IN (\'it\'\'s\', "say ""hi""", \'\')')
    assert pattern.symbol("A").predicates == (InSet("tag", ("it's", 'say "hi"', "")),)


def test_comments_run_to_the_end_of_the_line_but_not_inside_strings():
    text = """-- leading comment
    PATTERN SEQ(A)  -- the pattern
    DEFINE A AS tag = 'a -- b' -- not part of the string
    """
    assert parse_query(text).symbol("A").predicates == (InSet("tag", ("a -- b",)),)


def test_keywords_may_name_attributes_and_prefix_symbol_names():
    pattern = parse_query("PATTERN SEQ(NOTE, NOT INX, SEQ) DEFINE NOTE AS in > 1 AND and = 'x'")
    assert [str(item) for item in pattern.items] == ["NOTE", "NOT INX", "SEQ"]
    assert pattern.symbol("NOTE").attributes() == frozenset({"in", "and"})


# --- symbols ----------------------------------------------------------------------------------

def test_numeric_bounds_intersect_all_predicates_of_an_attribute():
    pattern = parse_query(
        "PATTERN SEQ(A) DEFINE A AS x > 3 AND x <= 5 AND x BETWEEN 0 AND 4 AND y >= 1")
    bounds = pattern.symbol("A").numeric_bounds()
    assert bounds == {"x": (3.0, 4.0, True, False), "y": (1.0, math.inf, False, True)}


def test_numeric_bounds_prefer_the_open_side_at_equal_values():
    symbol = Symbol("A", (Comparison("x", ">=", 1), Comparison("x", ">", 1),
                          Comparison("x", "<", 2), Between("x", 0, 2)))
    assert symbol.numeric_bounds() == {"x": (1.0, 2.0, True, True)}


def test_numeric_equality_bounds_are_a_closed_point():
    symbol = Symbol("A", (Comparison("x", "=", 2),))
    assert symbol.numeric_bounds() == {"x": (2.0, 2.0, False, False)}


def test_categorical_sets_intersect_per_attribute():
    symbol = Symbol("A", (InSet("tag", ("a", "b")), InSet("tag", ("b", "c")),
                          InSet("room", ("r1",)), Comparison("x", "<", 1)))
    assert symbol.categorical_sets() == {"tag": frozenset({"b"}), "room": frozenset({"r1"})}
    assert symbol.attributes() == frozenset({"tag", "room", "x"})


def test_empty_symbol_has_no_bounds_and_equals_no_definition():
    assert Symbol("A").numeric_bounds() == {} and Symbol("A").categorical_sets() == {}
    with_empty = SequencePattern((PatternItem("A"),), (Symbol("A", ()),))
    assert with_empty == SequencePattern((PatternItem("A"),))


# --- syntax errors: exact position and what was expected -------------------------------------

def test_missing_comma_reports_its_position_and_the_expected_tokens():
    error = parse_error("PATTERN SEQ(A B)")
    assert (error.line, error.column) == (1, 15)
    assert error.expected == ("')'", "','")
    assert "line 1, column 15" in str(error)
    assert "expected one of: ')', ','" in str(error)
    assert "    PATTERN SEQ(A B)\n                  ^" in str(error)


def test_unexpected_end_is_reported_just_after_the_last_token():
    error = parse_error("PATTERN SEQ(A,\n            B   -- trailing comment\n")
    assert (error.line, error.column) == (2, 14)
    assert "unexpected end of query" in str(error)
    assert error.expected == ("')'", "','")


def test_misspelled_keyword_reports_the_keyword_expected():
    error = parse_error("\n  PATERN SEQ(A)")
    assert (error.line, error.column) == (2, 3)
    assert error.expected == ("'PATTERN'",)


def test_unknown_operator_lists_the_operators():
    error = parse_error("PATTERN SEQ(A)\nDEFINE A AS x != 3")
    assert (error.line, error.column) == (2, 15)
    assert error.expected == ("'<'", "'<='", "'='", "'>'", "'>='", "'BETWEEN'", "'IN'")


def test_unterminated_string_is_reported_at_its_opening_quote():
    error = parse_error("PATTERN SEQ(A)\nDEFINE A AS tag = 'Room 402")
    assert (error.line, error.column) == (2, 19)
    assert "unterminated string" in str(error)


def test_empty_sequence_expects_a_symbol():
    error = parse_error("PATTERN SEQ()")
    assert (error.line, error.column) == (1, 13)
    assert error.expected == ("'NOT'", "a name")


def test_clauses_out_of_order_are_rejected():
    error = parse_error("PATTERN SEQ(A) CONFIDENCE 0.5 WITHIN 3")
    assert (error.line, error.column) == (1, 31)
    assert error.expected == ("'LIMIT'", "end of query")
    error = parse_error("PATTERN SEQ(A) LIMIT 5 CONFIDENCE 0.5")
    assert (error.line, error.column) == (1, 24)
    assert error.expected == ("end of query",)


def test_limit_is_the_last_clause_and_round_trips():
    p = parse_query("PATTERN SEQ(A, B) WITHIN 3 CONFIDENCE 0.5 limit 7")
    assert p.limit == 7 and parse_query(str(p)) == p
    assert parse_query("PATTERN SEQ(A) LIMIT 1e3").limit == 1000
    for bad, column in (("0", 22), ("-2", 22), ("1.5", 22)):
        error = parse_error(f"PATTERN SEQ(A) LIMIT {bad}")
        assert (error.line, error.column) == (1, column) and "LIMIT" in str(error)


def test_decimal_window_is_rejected_at_its_position():
    error = parse_error("PATTERN SEQ(A, B)\nWITHIN 6.5")
    assert (error.line, error.column) == (2, 8)
    assert "WITHIN" in str(error) and "6.5" in str(error)


def test_negative_window_is_rejected_at_its_position():
    error = parse_error("PATTERN SEQ(A, B) WITHIN -1")
    assert (error.line, error.column) == (1, 26)


# --- windows with a time unit (as part B writes them) ----------------------------------------

@pytest.mark.parametrize(("text", "window"), [
    ("6s", Duration(6, TimeUnit.SECONDS)),
    ("6 SECONDS", Duration(6, TimeUnit.SECONDS)),
    ("1 second", Duration(1, TimeUnit.SECONDS)),
    ("5 MINUTES", Duration(5, TimeUnit.MINUTES)),
    ("5min", Duration(5, TimeUnit.MINUTES)),
    ("2 HOURS", Duration(2, TimeUnit.HOURS)),
    ("1.5h", Duration(1.5, TimeUnit.HOURS)),
    ("250ms", Duration(250, TimeUnit.MILLISECONDS)),
    ("3 days", Duration(3, TimeUnit.DAYS)),
    ("0s", Duration(0, TimeUnit.SECONDS)),
    ("6", 6),
])
def test_within_takes_a_duration_with_a_unit_and_keeps_it(text, window):
    pattern = parse_query(f"PATTERN SEQ(A, B) WITHIN {text} CONFIDENCE 0.5")
    assert pattern.within == window and pattern.confidence == 0.5
    assert parse_query(str(pattern)) == pattern


def test_a_window_with_a_unit_that_is_negative_or_misspelt_is_rejected_at_its_position():
    error = parse_error("PATTERN SEQ(A, B)\nWITHIN -6s")
    assert (error.line, error.column) == (2, 8) and "WITHIN" in str(error)
    error = parse_error("PATTERN SEQ(A, B) WITHIN 6 sets")
    assert (error.line, error.column) == (1, 28)
    assert "a time unit" in error.expected and "'CONFIDENCE'" in error.expected


# One instant of an index built from datetimes with time_unit="1s", "1min", "250ms".
SECONDS = TimeAxis("1s", unit_ns=10**9, timezone="UTC")
MINUTES = TimeAxis("1min", unit_ns=60 * 10**9)
QUARTERS = TimeAxis("250ms", unit_ns=250 * 10**6, timezone="Europe/Berlin")


@pytest.mark.parametrize(("window", "axis", "instants"), [
    (Duration(6, "s"), SECONDS, 6),
    (Duration(5, "min"), SECONDS, 300),
    (Duration(2, "h"), MINUTES, 120),
    (Duration(1.5, "min"), SECONDS, 90),
    (Duration(0.1, "s"), TimeAxis("100ms", unit_ns=10**8), 1),   # exact: 0.1 is a tenth
    (Duration(3, "s"), QUARTERS, 12),
    (Duration(0, "s"), MINUTES, 0),
    (Duration(1, "d"), MINUTES, 1440),
])
def test_a_window_with_a_unit_is_the_exact_number_of_the_index_instants(window, axis,
                                                                         instants):
    assert window_instants(window, axis) == instants
    pattern = SequencePattern((PatternItem("A"), PatternItem("B")), within=window)
    assert pattern.in_instants(axis).within == instants
    assert pattern.in_instants(axis).window == instants


def test_a_window_that_is_not_a_whole_number_of_instants_is_refused_naming_both_neighbours():
    with pytest.raises(QueryError, match=r"WITHIN 90 SECONDS is 1\.5 instants .* lasts 1 "
                                         r"MINUTES.* WITHIN 60 SECONDS or WITHIN 120 SECONDS"):
        window_instants(Duration(90, "s"), MINUTES)
    with pytest.raises(QueryError, match=r"0\.4 instants .* WITHIN 0 MILLISECONDS or "
                                         r"WITHIN 250 MILLISECONDS"):
        window_instants(Duration(100, "ms"), QUARTERS)


@pytest.mark.parametrize("axis", [None, TimeAxis("0.5")])
def test_a_window_with_a_unit_on_an_index_of_plain_numbers_says_what_to_do(axis):
    with pytest.raises(QueryError, match=r"WITHIN 6 SECONDS has a time unit.*WITHIN 6\b.*"
                                         r"datetime t_lo/t_hi with time_unit="):
        window_instants(Duration(6, "s"), axis)


@pytest.mark.parametrize("axis", [None, TimeAxis("0.5"), SECONDS, MINUTES])
def test_a_plain_window_counts_instants_on_every_index(axis):
    # SEMANTICS C: plain numbers are in the data's unit; an index's unit is its instant.
    assert bind_query("PATTERN SEQ(A, B) WITHIN 7", axis).within == 7


def test_binding_query_text_blames_the_within_clause():
    text = "PATTERN SEQ(A, B)\n  DEFINE A AS x > 1\n  WITHIN 90 s CONFIDENCE 0.5"
    with pytest.raises(QueryError) as info:
        bind_query(text, MINUTES)
    message = str(info.value)
    assert message.startswith("line 3, column 10: WITHIN 90 SECONDS is 1.5 instants")
    assert message.endswith("  WITHIN 90 s CONFIDENCE 0.5\n             ^")
    # A pattern object has no text to point into: the message alone.
    with pytest.raises(QueryError, match=r"^WITHIN 90 SECONDS"):
        bind_query(parse_query(text), MINUTES)


def test_a_window_with_a_unit_must_be_bound_before_it_counts_instants():
    pattern = parse_query("PATTERN SEQ(A, B) WITHIN 5 MINUTES")
    with pytest.raises(QueryError, match="bind the pattern"):
        pattern.window  # noqa: B018
    assert parse_query("PATTERN SEQ(A, B)").window == math.inf


def test_a_duration_without_a_unit_is_a_number_of_instants():
    items = (PatternItem("A"),)
    assert SequencePattern(items, within=Duration(6)).within == 6
    with pytest.raises(QueryParseError, match="whole number of instants"):
        SequencePattern(items, within=Duration(6.5))


@pytest.mark.parametrize("theta", ["0", "1.5", "-0.1"])
def test_confidence_outside_zero_one_is_rejected_at_its_position(theta):
    error = parse_error(f"PATTERN SEQ(A)\n  CONFIDENCE {theta}")
    assert (error.line, error.column) == (2, 14)
    assert "CONFIDENCE" in str(error)


def test_overflowing_number_is_rejected_at_its_position():
    error = parse_error("PATTERN SEQ(A) DEFINE A AS x < 1e999")
    assert (error.line, error.column) == (1, 32)


# --- semantic errors: the offending token's position -----------------------------------------

def test_negated_first_item_is_rejected_with_its_position():
    error = parse_error("PATTERN SEQ(NOT C, A)")
    assert (error.line, error.column) == (1, 13)
    assert ("negated item NOT C at position 1 cannot be first; "
            "a negation must stand between two positive items") in str(error)


def test_negated_last_item_is_rejected_with_its_position():
    error = parse_error("PATTERN SEQ(A,\n            NOT C)")
    assert (error.line, error.column) == (2, 13)
    assert "NOT C at position 2 cannot be last" in str(error)


def test_defined_but_unused_symbol_is_rejected_at_its_definition():
    error = parse_error("PATTERN SEQ(A)\nDEFINE A AS x < 3,\n       B AS y > 2")
    assert (error.line, error.column) == (3, 8)
    assert "symbol B is defined but not used" in str(error)


def test_duplicate_definition_is_rejected_at_the_second_one():
    error = parse_error("PATTERN SEQ(A)\nDEFINE A AS x < 3,\n       A AS y > 2")
    assert (error.line, error.column) == (3, 8)
    assert "defined twice" in str(error)


def test_reversed_between_bounds_are_rejected_at_the_lower_bound():
    error = parse_error("PATTERN SEQ(A) DEFINE A AS x BETWEEN 5 AND 2")
    assert (error.line, error.column) == (1, 38)


def test_attribute_used_as_number_and_category_is_rejected_at_the_second_use():
    error = parse_error("PATTERN SEQ(A) DEFINE A AS x > 3 AND x = 'a'")
    assert (error.line, error.column) == (1, 38)


def test_non_string_query_is_a_type_error():
    with pytest.raises(TypeError):
        parse_query(b"PATTERN SEQ(A)")  # type: ignore[arg-type]


# --- validation of objects built from Python --------------------------------------------------

@pytest.mark.parametrize("build", [
    lambda: Comparison("x", "!=", 1),
    lambda: Comparison("x", "<", math.nan),
    lambda: Comparison("x", "<", math.inf),
    lambda: Comparison("x", "<", "1"),
    lambda: Comparison("x", "<", True),
    lambda: Comparison("1x", "<", 1),
    lambda: Between("x", 2, 1),
    lambda: InSet("tag", ()),
    lambda: InSet("tag", "ab"),
    lambda: InSet("tag", (1,)),
    lambda: Symbol("A B"),
    lambda: Symbol("A", (Comparison("x", "<", 1), InSet("x", ("a",)))),
    lambda: Symbol("A", ("x < 1",)),
    lambda: PatternItem("not"),
    lambda: PatternItem("A", negated=1),
    lambda: SequencePattern(()),
    lambda: SequencePattern((PatternItem("A", True), PatternItem("B"))),
    lambda: SequencePattern((PatternItem("A"), PatternItem("B", True))),
    lambda: SequencePattern((PatternItem("A"),), (Symbol("B", (Comparison("x", "<", 1),)),)),
    lambda: SequencePattern((PatternItem("A"),), (Symbol("A"), Symbol("A"))),
    lambda: SequencePattern((PatternItem("A"),), within=-1),
    lambda: SequencePattern((PatternItem("A"),), within=True),
    lambda: SequencePattern((PatternItem("A"),), within=2.0),
    lambda: SequencePattern((PatternItem("A"),), confidence=0),
    lambda: SequencePattern((PatternItem("A"),), confidence=1.01),
    lambda: SequencePattern(("A",)),
])
def test_invalid_objects_built_from_python_are_rejected_without_a_position(build):
    with pytest.raises(QueryParseError) as info:
        build()
    assert (info.value.line, info.value.column) == (None, None)


def test_negated_first_item_built_from_python_names_item_and_position():
    with pytest.raises(QueryParseError, match="negated item NOT C at position 1 cannot be first"):
        SequencePattern((PatternItem("C", negated=True), PatternItem("A")))


def test_python_values_are_normalised_to_tuples_and_floats():
    pattern = SequencePattern([PatternItem("A")], [Symbol("A", [Between("x", 0, 1)])])
    assert pattern.items == (PatternItem("A"),)
    assert pattern.symbols[0].predicates == (Between("x", 0.0, 1.0),)
    assert isinstance(pattern.symbols[0].predicates[0].low, float)


def test_consecutive_negations_both_stand_between_the_same_positives():
    pattern = parse_query("PATTERN SEQ(A, NOT B, NOT C, A, D)")
    assert pattern.positive_items == (0, 3, 4)
    assert pattern.negations == ((0, 1, "B"), (0, 2, "C"))


# --- round trip -------------------------------------------------------------------------------

KEYWORD_NAMES = ["pattern", "SEQ", "Define", "as", "AND", "between", "In", "within",
                 "confidence", "NOTE"]
identifiers = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True)
attribute_names = identifiers | st.sampled_from([*KEYWORD_NAMES, "not", "NOT"])
symbol_names = (identifiers | st.sampled_from(KEYWORD_NAMES)).filter(lambda n: n.upper() != "NOT")
finite = st.floats(allow_nan=False, allow_infinity=False)


@st.composite
def numeric_predicates(draw, attribute):
    kind = draw(st.sampled_from(["<", "<=", ">", ">=", "=", "between"]))
    if kind != "between":
        return Comparison(attribute, kind, draw(finite))
    low, high = sorted(draw(st.tuples(finite, finite)))
    return Between(attribute, low, high)


@st.composite
def symbols(draw, name):
    predicates = []
    for attribute in draw(st.lists(attribute_names, max_size=3, unique=True)):
        if draw(st.booleans()):
            predicates += draw(st.lists(numeric_predicates(attribute), min_size=1, max_size=2))
        else:
            values = st.lists(st.text(max_size=6), min_size=1, max_size=3).map(tuple)
            value_sets = draw(st.lists(values, min_size=1, max_size=2))
            predicates += [InSet(attribute, v) for v in value_sets]
    order = draw(st.permutations(range(len(predicates))))
    return Symbol(name, tuple(predicates[i] for i in order))


@st.composite
def sequence_patterns(draw):
    names = draw(st.lists(symbol_names, min_size=1, max_size=4, unique=True))
    length = draw(st.integers(1, 6))
    items = [PatternItem(draw(st.sampled_from(names)),
                         negated=0 < i < length - 1 and draw(st.booleans()))
             for i in range(length)]
    used = list(dict.fromkeys(item.symbol for item in items))
    defined = draw(st.lists(st.sampled_from(used), unique=True))
    return SequencePattern(
        tuple(items),
        tuple(draw(symbols(name)) for name in defined),
        within=draw(st.none() | st.integers(0, 10**12) | st.builds(
            Duration, st.integers(0, 10**6) | st.floats(0, 1e6, allow_nan=False),
            st.sampled_from(TimeUnit))),
        confidence=draw(st.none() | st.floats(0, 1, exclude_min=True)),
    )


@settings(max_examples=300)
@given(sequence_patterns())
def test_rendered_pattern_parses_back_to_an_equal_pattern(pattern):
    assert parse_query(str(pattern)) == pattern


def test_semantics_c_example_renders_as_query_text():
    assert str(SEMANTICS_C_PATTERN) + "\n" == SEMANTICS_C_QUERY
