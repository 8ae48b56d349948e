"""The automata engine equals the join engine and the reference exactly (SEMANTICS B;
Chen et al. 3.2-3.3)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, target
from hypothesis import strategies as st
from interval_cases import (
    AGGRESSIVE_DRIVERS,
    car,
    cases,
    definitions,
    interval_sets,
    pattern_parts,
    point_streams,
    spans,
)

import uncertain_cep as uc
from uncertain_cep.errors import InvalidOptionError
from uncertain_cep.interval import (
    derive_situations,
    match_automata,
    match_brute_force,
    match_join,
    situations_from_intervals,
)
from uncertain_cep.interval.automata import AUTOMATA, LETTERS, encode, pair_automaton
from uncertain_cep.interval.language import parse_temporal_query
from uncertain_cep.interval.relations import (
    ALLEN_RELATIONS,
    AllenRelation,
    HierarchyOperator,
    SuccessionRelation,
    allen_relation,
    inverse,
)


def assert_same(situations, pattern, **options):
    expected = match_brute_force(situations, pattern, **options)
    pd.testing.assert_frame_equal(match_automata(situations, pattern, **options), expected)
    pd.testing.assert_frame_equal(match_join(situations, pattern, **options), expected)
    return expected


def table(*spans, **columns) -> pd.DataFrame:
    return pd.DataFrame({"ts": [s[0] for s in spans], "te": [s[1] for s in spans], **columns})


# ---------------------------------------------------------------- the automata themselves

@given(st.lists(st.sampled_from(range(4)), max_size=30))
def test_the_table_lookup_is_the_letter_by_letter_run(letters):
    """Without repeated letters the vectorised trigger equals Algorithm 1's run, and a
    letter repeated (the point stream's runs) changes no state."""
    compressed = np.array([x for i, x in enumerate([0, *letters])
                           if i == 0 or x != [0, *letters][i - 1]], dtype=np.int64)
    repeated = np.repeat(compressed, 2)
    for automaton in AUTOMATA.values():
        expected = automaton.triggers_sequential(compressed)
        np.testing.assert_array_equal(automaton.triggers(compressed), expected)
        np.testing.assert_array_equal(automaton.run(repeated)[1::2], automaton.run(compressed))


def test_the_expressions_and_completion_conditions_of_table_1():
    """Chen et al. 3.2: completion on {O, Z} when B ends last, on {O, I} when A does."""
    described = {str(r): (str(a), a.completion) for r, a in AUTOMATA.items()}
    assert described["overlaps"] == ("overlaps: Z+ E+ I+", "OZ")
    assert described["contains"] == ("contains: Z+ E+ Z+", "OI")
    assert described["equals"] == ("equals: O+ E+ O+", "")
    assert described["followed_by"] == ("followed_by: (Z|E)+ O+ (I|E)+", "OZ")
    assert set(AUTOMATA) == ({r for r in ALLEN_RELATIONS}
                             - {AllenRelation.before, AllenRelation.after}
                             | {SuccessionRelation.followed_by})
    with pytest.raises(InvalidOptionError, match="idempotent"):
        pair_automaton("two runs of one letter", ("Z", "Z"))


# One hand example per relation: A and B on a small time line, the letters between their
# endpoints, and the relation's trigger time (= t3).
HAND = [
    ("before", (0, 2), (4, 6), None, 4),
    ("meets", (0, 2), (2, 5), "OZIO", 2),
    ("overlaps", (0, 3), (2, 5), "OZEIO", 3),
    ("starts", (1, 3), (1, 5), "OEIO", 3),
    ("during", (2, 3), (1, 5), "OIEIO", 3),
    ("finishes", (3, 5), (1, 5), "OIEO", 5),
    ("equals", (1, 5), (1, 5), "OEO", 5),
    ("after", (6, 8), (0, 2), None, 6),
    ("met_by", (2, 5), (0, 2), "OIZO", 2),
    ("overlapped_by", (2, 5), (0, 3), "OIEZO", 3),
    ("started_by", (1, 5), (1, 3), "OEZO", 3),
    ("contains", (1, 5), (2, 3), "OZEZO", 3),
    ("finished_by", (1, 5), (3, 5), "OZEO", 5),
]


@pytest.mark.parametrize(("relation", "a", "b", "letters", "trigger"), HAND)
def test_a_hand_example_per_allen_relation(relation, a, b, letters, trigger):
    assert str(allen_relation(*a, *b)) == relation
    if letters is not None:
        automaton = AUTOMATA[AllenRelation(relation)]
        fired = automaton.triggers(encode(letters))
        assert fired.sum() == 1
        # No other automaton fires on this pair: exactly one relation holds.
        assert [str(r) for r, x in AUTOMATA.items()
                if r is not SuccessionRelation.followed_by
                and x.triggers(encode(letters)).any()] == [relation]
    pattern = parse_temporal_query(f"DEFINE A AS x > 0, B AS x < 0 PATTERN A {relation} B")
    got = assert_same({"A": table(a), "B": table(b)}, pattern)
    assert got.values.tolist() == [[*a, *b, trigger]]
    for other in ALLEN_RELATIONS:
        if str(other) != relation:
            pattern = parse_temporal_query(f"DEFINE A AS x > 0, B AS x < 0 PATTERN A {other} B")
            assert match_automata({"A": table(a), "B": table(b)}, pattern).empty


def test_touching_situations_of_one_symbol_are_told_apart():
    """[0, 2) and [2, 4) of A read as one run of phi; split by parity, A1 meets B is found
    and so is A2 starts B."""
    tables = {"A": table((0, 2), (2, 4), (4, 5)), "B": table((2, 6))}
    for text, pairs in [("A meets B", [[0, 2]]), ("A starts B", [[2, 2]]),
                        ("A during B", [[4, 2]]), ("A AND B", [[0, 2], [2, 2], [4, 2]]),
                        ("A followed_by B", [])]:
        pattern = parse_temporal_query(f"DEFINE A AS x > 0, B AS x < 0 PATTERN {text}")
        assert assert_same(tables, pattern)[["A_ts", "B_ts"]].values.tolist() == pairs


def test_followed_by_does_not_cross_partitions():
    pattern = parse_temporal_query("PARTITION BY p DEFINE A AS x > 0, B AS x < 0 "
                                   "PATTERN A followed_by B")
    tables = {"A": table((0, 2), (0, 1), p=[1, 2]), "B": table((5, 6), p=[2])}
    assert assert_same(tables, pattern)[["p", "A_ts"]].values.tolist() == [[2, 0]]


# ---------------------------------------------------------------- equal to the others

@given(st.data())
def test_automata_equal_join_and_brute_force_on_point_streams(data):
    names, constraints, within = data.draw(pattern_parts())
    events = data.draw(point_streams())
    pattern = parse_temporal_query(
        f"PARTITION BY k {data.draw(definitions(names))} PATTERN {constraints} {within} "
        "RETURN avg(B.x) AS mean_x, first(A.y) AS y0, last(A.time) AS t1")
    found = assert_same(derive_situations(events, pattern), pattern)
    pd.testing.assert_frame_equal(uc.match(events, pattern, engine="automata"), found)
    target(float(min(len(found), 20)))


@given(st.data())
def test_automata_equal_join_and_brute_force_on_interval_events(data):
    names, constraints, within = data.draw(pattern_parts())
    events = data.draw(interval_sets(names))
    pattern = parse_temporal_query(
        f"PARTITION BY p DEFINE {', '.join(f'{n} AS v > 0' for n in names)} "
        f"PATTERN {constraints} {within} RETURN max(A.v) AS top, count(B.v) AS n")
    found = assert_same(situations_from_intervals(events, pattern), pattern)
    target(float(min(len(found), 20)))


@given(st.data())
def test_automata_with_float_times_at_the_window_edge(data):
    names, constraints, _ = data.draw(pattern_parts(max_symbols=3))
    events = data.draw(interval_sets(names, partitions=("p0", "p1")))
    events[["ts", "te"]] = events[["ts", "te"]] * 0.1
    window = data.draw(st.sampled_from([0.3, 0.6, 0.7, 1.2, 2.5]))
    pattern = parse_temporal_query(
        f"PARTITION BY p DEFINE {', '.join(f'{n} AS v > 0' for n in names)} "
        f"PATTERN {constraints} WITHIN {window}")
    target(float(min(len(assert_same(situations_from_intervals(events, pattern), pattern)),
                     20)))


@given(cases())
def test_automata_equal_brute_force_on_the_reference_cases(case):
    tables, chosen, within = case
    pattern = parse_temporal_query(
        f"PARTITION BY p DEFINE A AS x > 0, B AS x > 1, C AS x > 2 "
        f"PATTERN {' AND '.join(chosen)} {within}")
    target(float(len(assert_same(tables, pattern))))


@st.composite
def two_symbols(draw):
    return {name: table(*spans(draw, draw(st.integers(0, 5)), horizon=20)) for name in "AB"}


@given(two_symbols(), st.sampled_from(list(HierarchyOperator)))
def test_each_operator_is_its_relations_and_its_tlist_through_the_automata(tables, op):
    """Bhandari and Urban's hierarchy (SEMANTICS B2): an operator, the disjunction of its
    Allen relations and its endpoint-restriction list give the same matches."""
    def run(constraint):
        pattern = parse_temporal_query(f"DEFINE A AS x > 0, B AS x < 0 PATTERN {constraint}")
        return match_automata(tables, pattern)[["A_ts", "A_te", "B_ts", "B_te"]]

    by_name = run(f"A {op.value} B")
    relations = sorted(op.relations, key=ALLEN_RELATIONS.index)
    pd.testing.assert_frame_equal(by_name, run(f"A {'; '.join(map(str, relations))} B"))
    tlist = " AND ".join(str(r) for r in op.restrictions) or "A.ts = A.ts"
    if op is not HierarchyOperator.AND:
        pd.testing.assert_frame_equal(by_name, run(tlist))
    # The inverse relations read from B: the same pairs.
    inverted = sorted({inverse(r) for r in relations}, key=ALLEN_RELATIONS.index)
    pd.testing.assert_frame_equal(by_name, run(f"B {'; '.join(map(str, inverted))} A"))


def test_subsumption_down_the_hierarchy():
    """A lower operator's matches are a subset of the one above it (SEQ > OSEQ > SOSEQ)."""
    tables = {"A": table((0, 2), (3, 6), (8, 9), (10, 12)),
              "B": table((2, 4), (5, 7), (8, 11), (13, 14))}
    found = {}
    for op in ("AND", "SEQ", "OSEQ", "SOSEQ", "WOSEQ", "BEFORE"):
        pattern = parse_temporal_query(f"DEFINE A AS x > 0, B AS x < 0 PATTERN A {op} B")
        found[op] = {tuple(r) for r in assert_same(tables, pattern).values.tolist()}
    for high, low in itertools.pairwise(["AND", "SEQ", "OSEQ", "SOSEQ"]):
        assert found[low] <= found[high]
    assert found["WOSEQ"] <= found["OSEQ"] and found["BEFORE"] <= found["SEQ"]
    assert found["SOSEQ"] and found["BEFORE"]


def test_the_aggressive_drivers_query_through_every_engine():
    speeding = {t: 80.0 + (t - 3) for t in range(3, 15)}
    accelerating = {t: 10.0 for t in range(1, 7)}
    events = pd.concat([
        car(1, {**accelerating, 10: -10.0, 11: -10.0}, speeding),
        car(3, {**accelerating, 10: -10.0, 13: -10.0,
                **{t: -10.0 for t in range(16, 21)}}, speeding),
    ]).sample(frac=1.0, random_state=5)
    got = uc.match(events, AGGRESSIVE_DRIVERS, engine="automata", time_unit="1s")
    pd.testing.assert_frame_equal(got, uc.match(events, AGGRESSIVE_DRIVERS, time_unit="1s"))
    assert got.values.tolist() == [
        [1, 1, 7, 3, 15, 10, 12, 1, 85.5, 12],
        [3, 1, 7, 3, 15, 10, 11, 3, 85.5, 11],
        [3, 1, 7, 3, 15, 13, 14, 3, 85.5, 14],
    ]


def test_empty_answers_keep_the_dtypes_and_unconstrained_symbols_cross():
    pattern = parse_temporal_query("PARTITION BY p DEFINE A AS x > 0, B AS x < 0 "
                                   "PATTERN A meets B RETURN sum(A.x) AS s")
    a = table((0, 1), (4, 6), p=np.array([1, 2], dtype="int32"), sum_x=[1.5, 2.5])
    for b in (table((1, 2), p=np.array([1], dtype="int32")),
              table((2, 3), p=np.array([3], dtype="int32")),
              table(p=np.array([], dtype="int32"))):
        got = assert_same({"A": a, "B": b}, pattern)
        assert got["p"].dtype == np.int32
    pattern = parse_temporal_query("PARTITION BY p DEFINE A AS x > 0, B AS x < 0, C AS y > 0 "
                                   "PATTERN A before B WITHIN 8")
    tables = {"A": table((0, 1), (2, 3), (0, 4), p=["x", "x", None]),
              "B": table((5, 6), (2, 8), (0, 1), p=["x", None, "y"]),
              "C": table((6, 9), (1, 2), (3, 4), p=["x", "x", "x"])}
    assert assert_same(tables, pattern)[["A_ts", "B_ts", "C_ts"]].values.tolist() == [
        [0, 5, 1], [0, 5, 3], [2, 5, 1], [2, 5, 3], [2, 5, 6]]
    only_restriction = parse_temporal_query("DEFINE A AS x > 0, B AS x < 0 PATTERN A.te <= B.ts")
    assert len(assert_same({"A": table((0, 2), (3, 4)), "B": table((2, 3), (5, 6))},
                           only_restriction)) == 3
    assert LETTERS == "OIZE"
