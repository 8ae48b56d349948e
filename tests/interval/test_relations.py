"""Allen's relations, succession and the operator hierarchy as data (SEMANTICS B2)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from uncertain_cep.errors import InputError, InvalidOptionError
from uncertain_cep.interval.relations import (
    ALLEN_RELATIONS,
    AllenRelation,
    EndpointRestriction,
    HierarchyOperator,
    SuccessionRelation,
    allen_relation,
    classify,
    definition,
    holds,
    inverse,
    lookup_relation,
)

R = AllenRelation
H = HierarchyOperator

# SEMANTICS B2 written out again, independently of the module's tables.
SPELLED_OUT = {
    R.before: lambda a, b: a[1] < b[0],
    R.meets: lambda a, b: a[1] == b[0],
    R.overlaps: lambda a, b: a[0] < b[0] < a[1] < b[1],
    R.starts: lambda a, b: a[0] == b[0] and a[1] < b[1],
    R.during: lambda a, b: b[0] < a[0] and a[1] < b[1],
    R.finishes: lambda a, b: b[0] < a[0] and a[1] == b[1],
    R.equals: lambda a, b: a[0] == b[0] and a[1] == b[1],
    R.after: lambda a, b: b[1] < a[0],
    R.met_by: lambda a, b: b[1] == a[0],
    R.overlapped_by: lambda a, b: b[0] < a[0] < b[1] < a[1],
    R.started_by: lambda a, b: a[0] == b[0] and b[1] < a[1],
    R.contains: lambda a, b: a[0] < b[0] and b[1] < a[1],
    R.finished_by: lambda a, b: a[0] < b[0] and a[1] == b[1],
}

# Small integer endpoints make equal endpoints (meets, starts, ...) common.
interval = st.tuples(st.integers(0, 8), st.integers(1, 4)).map(lambda p: (p[0], p[0] + p[1]))
interval_arrays = st.lists(st.tuples(interval, interval), min_size=1, max_size=40)


def arrays(pairs: list) -> tuple[np.ndarray, ...]:
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    return a[:, 0], a[:, 1], b[:, 0], b[:, 1]


def any_of(relations, a_ts, a_te, b_ts, b_te) -> np.ndarray:
    out = np.zeros(np.shape(a_ts), dtype=bool)
    for relation in relations:
        out |= holds(relation, a_ts, a_te, b_ts, b_te)
    return out


def tlist(restrictions, a_ts, a_te, b_ts, b_te) -> np.ndarray:
    out = np.ones(np.shape(a_ts), dtype=bool)
    for restriction in restrictions:
        out &= restriction.evaluate({"A": (a_ts, a_te), "B": (b_ts, b_te)})
    return out


def where(text: str, a_ts, a_te, b_ts, b_te) -> np.ndarray:
    """``AND(A, B) WHERE text`` for a conjunction such as ``"A.te = B.te and A.ts > B.ts"``."""
    restrictions = []
    for part in text.split(" and "):
        left, op, right = part.split()
        (ls, le), (rs, re_) = left.split("."), right.split(".")
        restrictions.append(EndpointRestriction(ls, le, op, rs, re_))
    return tlist(restrictions, a_ts, a_te, b_ts, b_te)


@given(interval, interval)
def test_exactly_one_relation_holds_and_it_is_the_spelled_out_one(a, b):
    holding = [r for r in ALLEN_RELATIONS if holds(r, *a, *b)]
    assert len(holding) == 1
    assert [r for r in ALLEN_RELATIONS if SPELLED_OUT[r](a, b)] == holding
    assert allen_relation(*a, *b) is holding[0]


@given(interval_arrays)
def test_holds_and_classify_are_vectorised(pairs):
    a_ts, a_te, b_ts, b_te = arrays(pairs)
    codes = classify(a_ts, a_te, b_ts, b_te)
    for i, (a, b) in enumerate(pairs):
        assert ALLEN_RELATIONS[codes[i]] is allen_relation(*a, *b)
        for relation in ALLEN_RELATIONS:
            assert holds(relation, a_ts, a_te, b_ts, b_te)[i] == SPELLED_OUT[relation](a, b)


@given(interval, interval)
def test_the_inverse_swaps_the_arguments(a, b):
    for relation in ALLEN_RELATIONS:
        assert holds(relation, *a, *b) == holds(inverse(relation), *b, *a)
        assert inverse(inverse(relation)) is relation


def test_inverse_pairs_and_definitions():
    assert inverse(R.equals) is R.equals
    assert {inverse(r) for r in ALLEN_RELATIONS} == set(ALLEN_RELATIONS)
    assert [str(r) for r in definition(R.finishes)] == ["B.ts < A.ts", "A.te = B.te"]
    assert [str(r) for r in definition("met_by")] == ["B.te = A.ts"]


def test_invalid_intervals_are_refused():
    with pytest.raises(InputError, match="interval B at position"):
        classify([0, 0], [2, 2], [1, 3], [2, 3])


def test_hierarchy_sets_are_those_of_semantics_b2():
    seq = {R.before, R.meets, R.overlaps, R.starts, R.during}
    assert H.AND.relations == set(ALLEN_RELATIONS)
    assert H.SEQ.relations == seq
    assert H.ISEQ.relations == {inverse(r) for r in seq}
    assert H.CAND.relations == {R.finishes, R.equals, R.finished_by}
    assert H.BEFORE.relations == {R.before}
    assert H.OSEQ.relations == {R.meets, R.overlaps, R.starts, R.during}
    assert H.SOSEQ.relations == {R.meets, R.overlaps}
    assert H.WOSEQ.relations == {R.starts, R.during}
    assert H.ENDS.relations == {R.finishes}
    assert H.IENDS.relations == {R.finished_by}
    assert H.EQUALS.relations == {R.equals}


@given(interval_arrays)
def test_each_operator_is_its_allen_set_and_its_tlist(pairs):
    ends = arrays(pairs)
    for operator in HierarchyOperator:
        assert np.array_equal(any_of(operator.relations, *ends),
                              tlist(operator.restrictions, *ends)), operator


@given(interval_arrays)
def test_table_ii_equivalences(pairs):
    """Bhandari and Urban, Table II, with the start comparisons of rows 6 and 8 as Allen's
    finishes / finished_by have them (and Table III, rules 7-9): E ends F starts later."""
    e = arrays(pairs)

    def op(operator: HierarchyOperator) -> np.ndarray:
        return any_of(operator.relations, *e)

    assert np.array_equal(op(H.AND), op(H.SEQ) | op(H.CAND) | op(H.ISEQ))  # 1
    assert not (op(H.SEQ) & op(H.CAND)).any() and not (op(H.CAND) & op(H.ISEQ)).any()
    assert np.array_equal(op(H.SEQ), op(H.AND) & where("A.te < B.te", *e))  # 2
    assert np.array_equal(op(H.CAND), op(H.AND) & where("A.te = B.te", *e))  # 3
    assert np.array_equal(op(H.CAND), op(H.ENDS) | op(H.EQUALS) | op(H.IENDS))  # 4
    assert np.array_equal(op(H.ISEQ), op(H.AND) & where("A.te > B.te", *e))  # 5
    assert np.array_equal(op(H.ENDS), op(H.CAND) & where("A.ts > B.ts", *e))  # 6
    assert np.array_equal(op(H.EQUALS), op(H.CAND) & where("A.ts = B.ts", *e))  # 7
    assert np.array_equal(op(H.IENDS), op(H.CAND) & where("A.ts < B.ts", *e))  # 8


@given(interval_arrays)
def test_sequence_hierarchy_equivalences(pairs):
    """Section V-A/V-B2 and Table III (rules 35-39): the sequence subtree of Fig. 4."""
    e = arrays(pairs)

    def op(operator: HierarchyOperator) -> np.ndarray:
        return any_of(operator.relations, *e)

    overlaps = holds(R.overlaps, *e)
    assert np.array_equal(op(H.SEQ), op(H.BEFORE) | op(H.OSEQ))
    assert np.array_equal(op(H.OSEQ), op(H.SOSEQ) | op(H.WOSEQ))
    assert np.array_equal(op(H.BEFORE), op(H.SEQ) & where("A.te < B.ts", *e))
    assert np.array_equal(op(H.SOSEQ), op(H.OSEQ) & where("A.ts < B.ts", *e))
    assert np.array_equal(op(H.WOSEQ), op(H.OSEQ) & where("A.ts >= B.ts", *e))
    assert np.array_equal(overlaps, where("A.ts < B.ts and B.ts < A.te and A.te < B.te", *e))
    assert np.array_equal(overlaps, op(H.SEQ) & where("A.ts < B.ts and B.ts < A.te", *e))
    assert np.array_equal(overlaps, op(H.OSEQ) & where("A.ts < B.ts and B.ts < A.te", *e))
    assert np.array_equal(overlaps, op(H.SOSEQ) & where("B.ts < A.te", *e))
    # ISEQ is SEQ read backwards.
    b_first = (e[2], e[3], e[0], e[1])
    assert np.array_equal(op(H.ISEQ), any_of(H.SEQ.relations, *b_first))


@pytest.mark.parametrize(("name", "expected"), [
    ("overlapped_by", R.overlapped_by),
    ("overlapped-by", R.overlapped_by),
    ("Overlapped-BY", R.overlapped_by),
    ("MET_BY", R.met_by),
    ("before", R.before),
    ("BEFORE", R.before),
    ("equals", R.equals),
    ("seq", H.SEQ),
    ("SoSeq", H.SOSEQ),
    ("and", H.AND),
    ("followed-by", SuccessionRelation.followed_by),
    ("Follows", SuccessionRelation.follows),
])
def test_lookup_accepts_any_case_hyphens_and_underscores(name, expected):
    assert lookup_relation(name) is expected


def test_lookup_lists_the_valid_names():
    with pytest.raises(InvalidOptionError) as error:
        lookup_relation("overlapping")
    message = str(error.value)
    for name in ("before", "finished_by", "followed_by", "follows", "SEQ", "WOSEQ", "IENDS"):
        assert name in message


def test_succession_data():
    assert SuccessionRelation.followed_by.base is R.before
    assert SuccessionRelation.follows.base is R.after
    assert SuccessionRelation.follows.inverse is SuccessionRelation.followed_by


def test_endpoint_restriction_validates():
    with pytest.raises(InvalidOptionError, match="endpoint comparison"):
        EndpointRestriction("A", "ts", "!=", "B", "ts")
    with pytest.raises(InvalidOptionError, match="'tx' is not a valid endpoint"):
        EndpointRestriction("A", "tx", "<", "B", "ts")
