"""Pr(S | e) (SEMANTICS A3): the product over attributes of pdf masses, and symbol checks.

Chosen reading, documented here and in ``uncertain_cep.query.language.symbols``: several
predicates on one attribute constrain the same random value, so they are intersected first.
``x >= 1 AND x <= 3`` is ``P(1 <= x <= 3)``, not ``P(x >= 1) * P(x <= 3)``.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from uncertain_cep.errors import QueryError
from uncertain_cep.model.events import Archive, read_archive
from uncertain_cep.model.probability import interval_mass
from uncertain_cep.query.language.parse import parse_query
from uncertain_cep.query.language.symbols import check_symbols, symbol_probability

# Uniform ranges, points (rows 1 and 4) and truncated normals (rows 2 and 5).
ARCHIVE = read_archive(pd.DataFrame({
    "event_id": [1, 2, 3, 4, 5, 6],
    "group": [0, 0, 0, 1, 1, 1],
    "t_lo": [0, 1, 2, 0, 1, 2], "t_hi": [0, 1, 2, 0, 1, 2],
    "x_lo": [0.0, 5.0, -2.0, 1.0, 3.0, 0.0], "x_hi": [4.0, 5.0, 6.0, 3.0, 3.0, 10.0],
    "x_mu": [np.nan, np.nan, 1.0, np.nan, np.nan, 8.0],
    "x_sigma": [np.nan, np.nan, 2.0, np.nan, np.nan, 0.5],
    "y_lo": [0.0, 2.0, 1.0, -5.0, 0.0, 4.0], "y_hi": [10.0, 2.0, 3.0, 5.0, 0.5, 4.0],
    "speed": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
    "tag": ["a", "b", "c", "a", "b", "a"],
}))
ALL = np.arange(ARCHIVE.n_events)
INF = np.inf


def prob(definition: str, archive: Archive = ARCHIVE) -> np.ndarray:
    """Pr(A | e) for every event, A defined by ``definition``."""
    pattern = parse_query(f"PATTERN SEQ(A) DEFINE A AS {definition}")
    check_symbols(archive, pattern)
    return symbol_probability(archive, pattern.symbol("A"))


def mass(attr: str, low: float, high: float, low_open: bool = False,
         high_open: bool = False) -> np.ndarray:
    return interval_mass(ARCHIVE.numeric[attr], ALL, low, high, low_open, high_open)


numbers = st.floats(-12, 12, allow_nan=False).map(lambda v: round(v, 3))
OPS = {">=": (False, None), ">": (True, None), "<=": (None, False), "<": (None, True)}


def one_sided(attr: str, op: str, c: float) -> np.ndarray:
    low_open, high_open = OPS[op]
    if low_open is None:
        return mass(attr, -INF, c, True, high_open)
    return mass(attr, c, INF, low_open, True)


# --- products over attributes ---------------------------------------------------------------


@given(numbers, numbers, st.sampled_from(sorted(OPS)), numbers)
def test_probability_is_product_of_per_attribute_masses(a: float, b: float, op: str,
                                                        c: float) -> None:
    lo, hi = min(a, b), max(a, b)
    got = prob(f"x BETWEEN {lo!r} AND {hi!r} AND y {op} {c!r}")
    expected = mass("x", lo, hi) * one_sided("y", op, c)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


def test_probability_examples() -> None:
    got = prob("x BETWEEN 1 AND 2 AND y <= 5")
    # uniform [0,4] x uniform [0,10]; point 5 x point 2; ...
    assert got[0] == pytest.approx(0.25 * 0.5)
    assert got[1] == 0.0 and got[4] == 0.0  # points x = 5 and x = 3 are outside [1, 2]
    assert got[3] == pytest.approx(0.5 * 1.0)
    assert prob("speed >= 4").tolist() == [0, 0, 0, 1, 1, 1]


def test_undefined_symbol_matches_every_event() -> None:
    pattern = parse_query("PATTERN SEQ(A, B) DEFINE A AS x >= 0")
    assert symbol_probability(ARCHIVE, pattern.symbol("B")).tolist() == [1.0] * 6


def test_rows_argument_selects_and_orders_events() -> None:
    pattern = parse_query("PATTERN SEQ(A) DEFINE A AS x > 2 AND tag IN ('a', 'c')")
    full = symbol_probability(ARCHIVE, pattern.symbol("A"))
    rows = np.array([5, 0, 2])
    np.testing.assert_array_equal(symbol_probability(ARCHIVE, pattern.symbol("A"), rows),
                                  full[rows])


# --- several predicates on one attribute are intersected ------------------------------------


def test_two_bounds_on_one_attribute_give_the_mass_of_their_intersection() -> None:
    got = prob("x >= 1 AND x <= 3")
    np.testing.assert_allclose(got, mass("x", 1, 3), atol=1e-12)
    np.testing.assert_allclose(got, prob("x BETWEEN 1 AND 3"), atol=1e-12)
    # Not the product of the separate masses: for uniform [0, 4] that would be 0.75 * 0.75.
    assert got[0] == pytest.approx(0.5)


@given(st.sampled_from(sorted(OPS)), numbers, st.sampled_from(sorted(OPS)), numbers)
def test_any_two_comparisons_on_one_attribute_are_intersected(op1: str, c1: float, op2: str,
                                                              c2: float) -> None:
    low, high, low_open, high_open = -INF, INF, True, True
    for op, c in ((op1, c1), (op2, c2)):
        lo_flag, hi_flag = OPS[op]
        if lo_flag is not None and (c > low or (c == low and lo_flag)):
            low, low_open = c, lo_flag
        if hi_flag is not None and (c < high or (c == high and hi_flag)):
            high, high_open = c, hi_flag
    got = prob(f"x {op1} {c1!r} AND x {op2} {c2!r}")
    if low > high or (low == high and (low_open or high_open)):
        assert got.tolist() == [0.0] * 6
    else:
        np.testing.assert_allclose(got, mass("x", low, high, low_open, high_open), atol=1e-12)


@pytest.mark.parametrize("definition, point_x5", [
    ("x > 5", 0.0), ("x >= 5", 1.0), ("x < 5", 0.0), ("x <= 5", 1.0), ("x = 5", 1.0),
    ("x >= 5 AND x <= 5", 1.0), ("x > 5 AND x <= 5", 0.0), ("x BETWEEN 5 AND 5", 1.0),
    ("x > 6 AND x < 4", 0.0),
])
def test_open_and_closed_bounds_on_a_point_value(definition: str, point_x5: float) -> None:
    got = prob(definition)
    assert got[1] == point_x5  # event 2 has the certain value x = 5


def test_contradictory_bounds_give_zero_for_every_event() -> None:
    assert prob("x > 6 AND x < 4 AND tag = 'a'").tolist() == [0.0] * 6


# --- categorical predicates -----------------------------------------------------------------


def test_categorical_equality_and_in_set_are_indicators() -> None:
    assert prob("tag = 'a'").tolist() == [1, 0, 0, 1, 0, 1]
    assert prob("tag IN ('b', 'c')").tolist() == [0, 1, 1, 0, 1, 0]
    assert prob("tag IN ('a', 'b') AND tag IN ('b', 'c')").tolist() == [0, 1, 0, 0, 1, 0]
    assert prob("tag = 'a' AND tag = 'b'").tolist() == [0.0] * 6
    assert prob("tag = 'zzz'").tolist() == [0.0] * 6


def test_categorical_and_numeric_predicates_multiply() -> None:
    got = prob("tag = 'a' AND x BETWEEN 1 AND 2")
    np.testing.assert_allclose(got, mass("x", 1, 2) * np.array([1, 0, 0, 1, 0, 1]),
                               atol=1e-12)


# --- check_symbols --------------------------------------------------------------------------


def names(*parts: str) -> str:
    return "(?s)" + "".join(f"(?=.*{re.escape(p)})" for p in parts)


@pytest.mark.parametrize("query, symbol, attribute", [
    ("PATTERN SEQ(A) DEFINE A AS z > 1", "A", "'z'"),
    ("PATTERN SEQ(A) DEFINE A AS colour = 'red'", "A", "'colour'"),
    ("PATTERN SEQ(A, NOT C, B) DEFINE A AS x > 1, C AS w BETWEEN 0 AND 1", "C", "'w'"),
])
def test_unknown_attribute_is_a_query_error_naming_symbol_and_attribute(
        query: str, symbol: str, attribute: str) -> None:
    with pytest.raises(QueryError, match=names(f"symbol {symbol}", attribute, "no such")):
        check_symbols(ARCHIVE, parse_query(query))


@pytest.mark.parametrize("definition", ["tag > 3", "tag BETWEEN 0 AND 1", "tag = 2"])
def test_numeric_comparison_on_string_attribute_is_a_query_error(definition: str) -> None:
    query = f"PATTERN SEQ(B, A) DEFINE A AS {definition}"
    with pytest.raises(QueryError, match=names("symbol A", "'tag'", "string")):
        check_symbols(ARCHIVE, parse_query(query))


@pytest.mark.parametrize("definition", ["x = 'a'", "speed IN ('1', '2')"])
def test_string_comparison_on_numeric_attribute_is_a_query_error(definition: str) -> None:
    attribute = definition.split()[0]
    with pytest.raises(QueryError, match=names("symbol A", f"'{attribute}'", "numeric")):
        check_symbols(ARCHIVE, parse_query(f"PATTERN SEQ(A) DEFINE A AS {definition}"))


def test_valid_symbols_pass_the_check() -> None:
    pattern = parse_query("PATTERN SEQ(A, NOT C, B) DEFINE A AS x > 1 AND tag = 'a', "
                          "B AS speed <= 3 AND y BETWEEN 0 AND 1, C AS tag IN ('b')")
    check_symbols(ARCHIVE, pattern)
