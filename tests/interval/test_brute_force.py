"""The reference matcher on hand examples with known answers (SEMANTICS B2, B3)."""

from __future__ import annotations

import itertools

import pandas as pd
import pytest
from hypothesis import given, target
from interval_cases import AGGRESSIVE_DRIVERS, car, cases

from uncertain_cep.errors import InputError, PlanningError
from uncertain_cep.interval import derive_situations, match_brute_force
from uncertain_cep.interval.language import parse_temporal_query
from uncertain_cep.interval.relations import allen_relation, lookup_relation


def table(*spans, **columns) -> pd.DataFrame:
    return pd.DataFrame({"ts": [s[0] for s in spans], "te": [s[1] for s in spans], **columns})


def test_aggressive_drivers_on_a_tiny_car_stream():
    speeding = {t: 80.0 + (t - 3) for t in range(3, 15)}  # B = [3, 15), avg 85.5
    accelerating = {t: 10.0 for t in range(1, 7)}  # A = [1, 7), 6 s
    events = pd.concat([
        # Car 1: A overlaps B, C = [10, 12) during B, A before C.
        car(1, {**accelerating, 10: -10.0, 11: -10.0}, speeding),
        # Car 2: the acceleration [1, 5) lasts 4 s < 5 s, so no A and no match.
        car(2, {1: 10.0, 2: 10.0, 3: 10.0, 4: 10.0, 10: -10.0}, speeding),
        # Car 3: two braking phases during B, both match; the braking [16, 21) (open) is
        # not during B nor met by it.
        car(3, {**accelerating, 10: -10.0, 13: -10.0,
                **{t: -10.0 for t in range(16, 21)}}, speeding),
    ]).sample(frac=1.0, random_state=7)
    pattern = parse_temporal_query(AGGRESSIVE_DRIVERS)
    situations = derive_situations(events, pattern, time_unit="1s")
    assert situations["A"][["car_id", "ts", "te"]].values.tolist() == [[1, 1, 7], [3, 1, 7]]
    assert situations["C"][["car_id", "ts", "te", "open_end"]].values.tolist() == [
        [1, 10, 12, False], [2, 10, 11, False], [3, 10, 11, False], [3, 13, 14, False],
        [3, 16, 21, True]]
    got = match_brute_force(situations, pattern, time_unit="1s")
    assert list(got.columns) == ["car_id", "A_ts", "A_te", "B_ts", "B_te", "C_ts", "C_te",
                                 "id", "avg_speed", "detected_at"]
    # detected_at: car 1 = max(ts 10; t3 of (A,B) 7, (C,B) 12, (A,C) 10; A.ts, C.ts 10).
    assert got.values.tolist() == [
        [1, 1, 7, 3, 15, 10, 12, 1, 85.5, 12],
        [3, 1, 7, 3, 15, 10, 11, 3, 85.5, 11],
        [3, 1, 7, 3, 15, 13, 14, 3, 85.5, 14],
    ]


def test_followed_by_is_the_immediate_successor():
    """Chen et al., Fig. 1: (c1, d1) is followed_by and before; (c1, d2) only before."""
    situations = {"C": table((0, 2)), "D": table((4, 6), (8, 9))}
    before = parse_temporal_query("DEFINE C AS x > 0, D AS x < 0 PATTERN C before D")
    followed = parse_temporal_query("DEFINE C AS x > 0, D AS x < 0 PATTERN C followed_by D")
    follows = parse_temporal_query("DEFINE C AS x > 0, D AS x < 0 PATTERN D follows C")
    assert match_brute_force(situations, before)[["C_ts", "D_ts"]].values.tolist() == [
        [0, 4], [0, 8]]
    # detected_at = t3 of before = D.ts.
    assert match_brute_force(situations, followed).values.tolist() == [[0, 2, 4, 6, 4]]
    assert match_brute_force(situations, follows).equals(match_brute_force(situations, followed))


@pytest.mark.parametrize(("a", "b", "pairs"), [
    # Another A in the gap: only the later A is followed by B.
    ([(0, 2), (3, 4)], [(6, 8)], [[3, 6]]),
    # A B that starts before A ends and reaches into the gap blocks the later B.
    ([(0, 2)], [(1, 4), (6, 8)], []),
    # A B that ends exactly where the gap begins does not meet it (half-open intervals).
    ([(2, 3)], [(0, 2), (6, 8)], [[2, 6]]),
    # A meets B: no gap, so not before, so not followed_by.
    ([(0, 2)], [(2, 4)], []),
])
def test_followed_by_gap_rule(a, b, pairs):
    pattern = parse_temporal_query("DEFINE A AS x > 0, B AS x < 0 PATTERN A followed-by B")
    got = match_brute_force({"A": table(*a), "B": table(*b)}, pattern)
    assert got[["A_ts", "B_ts"]].values.tolist() == pairs


@pytest.mark.parametrize(("constraint", "detected_at"), [
    ("A during B", 5),  # endpoints 0 < 2 < 5 < 10: t3 = A.te
    ("B contains A", 5),
    ("A WOSEQ B", 5),
    ("A during B AND A.te < B.te", 10),  # the restriction names B.te
    ("A during B AND B.ts < A.ts", 5),  # latest named endpoint is A.ts = 2
    ("A.ts > B.ts", 2),  # no pair: the latest ts
])
def test_detected_at(constraint, detected_at):
    pattern = parse_temporal_query(f"DEFINE A AS x > 0, B AS x < 0 PATTERN {constraint}")
    got = match_brute_force({"A": table((2, 5)), "B": table((0, 10))}, pattern)
    assert got["detected_at"].tolist() == [detected_at]


def test_window_partitions_and_return_aliases():
    pattern = parse_temporal_query(
        "PARTITION BY p DEFINE A AS x > 0, B AS x < 0 PATTERN A before B WITHIN 10 "
        "RETURN max(A.x) AS top, count(B.x) AS n")
    situations = {
        "A": table((0, 2), (5, 6), (0, 1), p=[1, 1, 2], max_x=[3.0, 4.0, 5.0]),
        "B": table((9, 10), (11, 12), (3, 4), p=[1, 1, 2], count_x=[2, 1, 7]),
    }
    got = match_brute_force(situations, pattern)
    # (0,2)-(11,12) spans 12 > 10; partition 2 is separate from partition 1.
    assert got.values.tolist() == [[1, 0, 2, 9, 10, 3.0, 2, 9],
                                   [1, 5, 6, 9, 10, 4.0, 2, 9],
                                   [1, 5, 6, 11, 12, 4.0, 1, 11],
                                   [2, 0, 1, 3, 4, 5.0, 7, 3]]
    assert not got.duplicated().any()


def test_no_match_gives_the_columns_and_bad_tables_are_refused():
    pattern = parse_temporal_query("PARTITION BY p DEFINE A AS x > 0, B AS x < 0 "
                                   "PATTERN A after B RETURN sum(A.x) AS s")
    situations = {"A": table((0, 1), p=[1], sum_x=[1]), "B": table((5, 6), p=[1])}
    empty = match_brute_force(situations, pattern)
    assert empty.empty and list(empty.columns) == ["p", "A_ts", "A_te", "B_ts", "B_te", "s",
                                                   "detected_at"]
    with pytest.raises(InputError, match="no situations given for symbol B"):
        match_brute_force({"A": situations["A"]}, pattern)
    with pytest.raises(InputError, match="lack column"):
        match_brute_force({**situations, "A": table((0, 1), p=[1])}, pattern)
    with pytest.raises(InputError, match="overlap"):
        match_brute_force({**situations, "B": table((5, 7), (6, 8), p=[1, 1])}, pattern)
    with pytest.raises(PlanningError, match="max_combinations"):
        match_brute_force(situations, pattern, max_combinations=0)


# A second reference, one combination at a time through the scalar classifier.


def loop_holds(text: str, pick: dict, tables: dict, p: int) -> bool:
    words = text.replace(";", " ").split()
    if "." in words[0]:
        (ls, le), op, (rs, re_) = words[0].split("."), words[1], words[2].split(".")
        x, y = pick[ls][le == "te"], pick[rs][re_ == "te"]
        return {"<": x < y, "<=": x <= y, "=": x == y, ">=": x >= y, ">": x > y}[op]
    left, right, names = words[0], words[-1], words[1:-1]
    a, b = pick[left], pick[right]
    if names == ["followed_by"]:
        if not a[1] < b[0]:
            return False
        others = [row for name in (left, right) for row in tables[name].itertuples()
                  if row.p == p]
        return not any(o.ts < b[0] and a[1] < o.te for o in others)
    relation = allen_relation(*a, *b)
    allowed = set()
    for name in names:
        found = lookup_relation(name)
        allowed |= getattr(found, "relations", {found})
    return relation in allowed


@given(cases())
def test_brute_force_equals_a_loop_over_combinations(case):
    tables, chosen, within = case
    pattern = parse_temporal_query(
        f"PARTITION BY p DEFINE A AS x > 0, B AS x > 1, C AS x > 2 "
        f"PATTERN {' AND '.join(chosen)} {within}")
    expected = []
    for p in (0, 1):
        per_symbol = [[(r.ts, r.te) for r in tables[s].itertuples() if r.p == p] for s in "ABC"]
        for combo in itertools.product(*per_symbol):
            pick = dict(zip("ABC", combo))
            ok = all(loop_holds(c, pick, tables, p) for c in chosen)
            if within:
                ok &= max(s[1] for s in combo) - min(s[0] for s in combo) <= int(within.split()[1])
            if ok:
                expected.append([p, *itertools.chain(*combo)])
    got = match_brute_force(tables, pattern)
    target(float(len(got)))  # steer towards cases with matches
    assert got.drop(columns="detected_at").values.tolist() == sorted(expected)
