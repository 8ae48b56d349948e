"""Item searches by column scan (index/column_scan.py): on random event boxes and random
query boxes, the scan finds exactly the rows libspatialindex's R*-tree over the same boxes
finds, whether the rows are in time order (only a range of them read) or not, with
instants past 2**53 and boxes inverted or unbounded on any axis; the index scans only the
boxes over every group and code that cover much of its time."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import event, given, settings
from hypothesis import strategies as st
from rtree import index as rtree_index

import uncertain_cep as uc
from uncertain_cep.index import event_index
from uncertain_cep.index.column_scan import ColumnScan
from uncertain_cep.index.rtree_boxes import event_boxes, rtree_properties

_INSTANT_BASES = [0, -1_000, 2**53 - 20, 2**60, -(2**61)]


@st.composite
def boxes_and_queries(draw: st.DrawFn) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    n = draw(st.integers(1, 40))
    n_attributes = draw(st.integers(0, 2))
    base = draw(st.sampled_from(_INSTANT_BASES))
    t_min = base + np.array(draw(st.lists(st.integers(0, 60), min_size=n, max_size=n)))
    t_max = t_min + np.array(draw(st.lists(st.integers(0, 12), min_size=n, max_size=n)))
    if draw(st.booleans()):     # rows in time order, as a stored index keeps them
        order = np.argsort(t_min, kind="stable")
        t_min, t_max = t_min[order], t_max[order]
    group = np.array(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)))
    code_lo = np.array(draw(st.lists(st.integers(0, 30), min_size=n, max_size=n)), float)
    code_hi = code_lo + np.array(draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)))
    columns = [group, t_min, t_max, code_lo, code_hi]
    values = st.floats(-5, 5, allow_nan=False, allow_infinity=False)
    for _ in range(n_attributes):
        lo = np.array(draw(st.lists(values, min_size=n, max_size=n)))
        columns += [lo, lo + np.array(draw(st.lists(st.floats(0, 2), min_size=n, max_size=n)))]
    dims = 3 + n_attributes
    low, high = np.full(dims, -math.inf), np.full(dims, math.inf)
    for axis in range(dims):
        if draw(st.booleans()):
            continue                # unbounded on this axis
        if axis == 1:
            a = float(base + draw(st.integers(-20, 80)))
            b = float(base + draw(st.integers(-20, 80)))
        else:
            a, b = draw(values), draw(values)
        low[axis], high[axis] = (a, b) if draw(st.integers(0, 4)) else (b, a)  # some inverted
    return columns, low, high


@settings(max_examples=200, deadline=None)
@given(case=boxes_and_queries())
def test_the_scan_finds_exactly_the_rows_the_r_tree_finds(case) -> None:
    columns, low, high = case
    group, t_min, t_max, code_lo, code_hi, *attrs = columns
    pairs = list(zip(attrs[0::2], attrs[1::2]))
    mins, maxs = event_boxes(group, t_min, t_max, code_lo, code_hi, pairs)
    tree = rtree_index.Index((np.arange(len(t_min), dtype=np.int64), mins, maxs),
                             properties=rtree_properties(len(pairs)), interleaved=False)
    ids, _ = tree.intersection_v(low[None], high[None])
    scan = ColumnScan(group, t_min, t_max, code_lo, code_hi, pairs)
    event(f"rows in time order: {bool((t_min[1:] >= t_min[:-1]).all())}")
    found = scan.rows(low, high)
    assert found.tolist() == sorted(ids.tolist())
    start, stop = scan.row_range(float(low[1]), float(high[1]))
    assert set(found.tolist()) <= set(range(start, stop))


def test_a_time_ordered_scan_reads_only_the_rows_a_narrow_span_may_meet() -> None:
    t_min = np.arange(0, 1000, 10)
    scan = ColumnScan(np.zeros(100), t_min, t_min + 25, np.zeros(100), np.zeros(100), [])
    start, stop = scan.row_range(500.0, 520.0)
    assert (start, stop) == (48, 53)      # t_min 480 (470 + 25 ends before 500) to 520
    assert scan.rows(np.array([-math.inf, 500.0, -math.inf]),
                     np.array([math.inf, 520.0, math.inf])).tolist() == [48, 49, 50, 51, 52]


def _index(n: int = 200) -> uc.UncertainIndex:
    return uc.build_index(pd.DataFrame({"event_id": range(n), "group": [i % 4 for i in range(n)],
                                        "t_lo": [5 * i for i in range(n)],
                                        "t_hi": [5 * i + 2 for i in range(n)],
                                        "x": [float(i % 17) for i in range(n)]}))


def test_boxes_over_most_of_the_time_are_scanned_and_narrow_ones_searched_in_the_tree(
        monkeypatch) -> None:
    ei = _index().event_index
    calls = []
    monkeypatch.setattr(ColumnScan, "rows", lambda self, lo, hi: calls.append(1) or
                        np.zeros(0, np.int64))
    ei.search(None, (-math.inf, math.inf), None, {"x": (3.0, 4.0)})
    assert calls == [1]
    assert "column scan" in ei.search_access((-math.inf, math.inf))
    ei.search(None, (100, 140), None, {"x": (3.0, 4.0)})       # a gap: 4% of the time
    ei.search(0, (-math.inf, math.inf), None, {})                # one group
    assert calls == [1] and "R*-tree" in ei.search_access((100, 140))


def test_explain_names_the_scan_and_the_answers_equal_the_r_tree_s(monkeypatch) -> None:
    idx = _index()
    query = "PATTERN SEQ(A, NOT N, B) DEFINE A AS x < 3, N AS x = 5, B AS x = 4 WITHIN 40"
    assert "column scan of the 200 events' boxes" in str(idx.explain(query))
    scanned = idx.query(query)
    monkeypatch.setattr(event_index, "SCAN_SPAN_FRACTION", 2.0)
    assert "column scan" not in str(idx.explain(query))
    searched = idx.query(query)
    key = list(scanned.columns)
    assert scanned.sort_values(key).reset_index(drop=True).equals(
        searched.sort_values(key).reset_index(drop=True))
    assert len(scanned)
