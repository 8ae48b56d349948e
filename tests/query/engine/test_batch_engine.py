"""The batch engine: answers independent of how batches are cut, exact grouping, the
node table against the forests, and EXPLAIN's access paths."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from unittest.mock import patch

import numpy as np
import pandas as pd
import pytest
from answer_checks import assert_same_answer
from hypothesis import given, settings
from hypothesis import strategies as st
from random_archives import archives, patterns, symbols

import uncertain_cep as uc
from uncertain_cep.index import event_index
from uncertain_cep.query.engine import batch_engine
from uncertain_cep.query.engine.item_windows import every_item_window, windows_from_instants
from uncertain_cep.query.engine.kernels import extension as extension_kernels
from uncertain_cep.query.engine.kernels.chains import insertion_factors
from uncertain_cep.query.engine.kernels.grouping import (
    group_rows,
    group_rows_in_segments,
    order_by_group,
)
from uncertain_cep.query.evaluation.chains import extension_factor
from uncertain_cep.query.language.patterns import PatternItem, SequencePattern

QUERY = "PATTERN SEQ(A, B, C) DEFINE A AS x < 5, B AS x >= 1, C AS tag = 'a' WITHIN 6"


@pytest.mark.parametrize("strategy", ["selectivity", "sequential"])
@settings(max_examples=15, deadline=None)
@given(df=archives(), pattern=patterns(("x",)), limit=st.integers(1, 4))
def test_answers_do_not_depend_on_where_batches_are_cut(strategy, df, pattern, limit):
    df = df.drop(columns=[c for c in df.columns if c.startswith("y")])
    idx = uc.build_index(df)
    want = idx.query(pattern, strategy="possible_worlds")
    # Entries only (tests/query/engine/test_tuple_batches.py cuts batches of tuples).
    with (patch.object(batch_engine, "BATCH_LIMIT", limit),
          patch.object(batch_engine, "TUPLE_RATIO", 1 << 40)):
        got = idx.query(pattern, strategy=strategy)
    assert_same_answer(got, want)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.integers(-3, 3), min_size=3, max_size=3), max_size=40))
def test_group_rows_numbers_distinct_rows_like_a_sort(rows):
    matrix = np.array(rows, dtype=np.int64).reshape(-1, 3)
    ids, first = group_rows(matrix)
    distinct = {tuple(r) for r in matrix.tolist()}
    assert len(first) == len(distinct)
    for i, row in enumerate(matrix.tolist()):
        assert matrix[first[ids[i]]].tolist() == row
    order = order_by_group(ids, len(first))
    assert sorted(order.tolist()) == list(range(len(matrix)))
    assert list(ids[order]) == sorted(ids.tolist())


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.lists(st.integers(-2, 2), min_size=2, max_size=2), max_size=40),
                max_size=6), st.data())
def test_grouping_within_segments_sums_equal_rows_in_key_order(segments, data):
    # Rows of different segments never count as equal: each segment gets its own column.
    rows = [[s, *r] for s, seg in enumerate(segments) for r in seg]
    matrix = np.array(rows, dtype=np.int64).reshape(-1, 3)
    weights = np.array(data.draw(st.lists(st.floats(0, 1), min_size=len(rows),
                                          max_size=len(rows))), dtype=np.float64)
    bounds = np.cumsum([0] + [len(seg) for seg in segments])
    first, total, group = group_rows_in_segments(matrix, matrix[:, 1], weights, bounds)
    # Each row's group is the one whose first row equals it.
    assert [matrix[first[g]].tolist() for g in group] == matrix.tolist()
    expected = []
    for s in range(len(segments)):
        seen: dict[tuple[int, ...], list[int]] = {}
        for i in range(bounds[s], bounds[s + 1]):
            seen.setdefault(tuple(matrix[i]), []).append(i)
        groups = sorted(seen.values(), key=lambda g: matrix[g[0], 1])   # stable
        expected += [(g[0], sum(weights[g])) for g in groups]
    assert first.tolist() == [f for f, _ in expected]
    np.testing.assert_allclose(total, [w for _, w in expected], rtol=0, atol=1e-12)


def test_node_table_factors_equal_the_forest_walk():
    rng = np.random.default_rng(4)
    t = np.sort(rng.integers(0, 40, 30))
    df = pd.DataFrame({"event_id": range(30), "group": np.arange(30) % 2, "t_lo": t,
                       "t_hi": t + rng.integers(0, 3, 30)})
    idx = uc.build_index(df)
    ei = idx.event_index
    table = ei.node_table
    pairs = before_after = 0
    for g, forest in enumerate(ei.forests):
        base = int(table.group_start[g])
        for a in range(forest.n_nodes):
            for b in range(forest.n_nodes):
                if forest.instant[a] < 0 or forest.instant[b] < 0:
                    continue
                ok, factor = insertion_factors(table, np.array([base + a]),
                                               np.array([base + b]), np.array([-1]))
                assert bool(ok[0]) == forest.precedes(a, b)
                if ok[0]:
                    assert factor[0] == pytest.approx(extension_factor(forest, a, b),
                                                      rel=1e-12)
                    pairs += 1
                before_after += 1
    assert pairs > 50 and before_after > pairs


# Event a may happen at 0..3, alone in its group (its nodes stand for its tree); b at 4,
# c at 7, d in 8..9: WITHIN 5 a tuple holds only when a happens at 2 or 3. Events e and
# f, far later, make B and C look common, so selectivity order matches the ends first
# (D, then A), then the middle.
_ENDS = pd.DataFrame({"event_id": list("abcdef"), "group": ["g0", "g1", "g2", "g3", "g4", "g5"],
                      "t_lo": [0, 4, 7, 8, 40, 41], "t_hi": [3, 4, 7, 9, 40, 41],
                      "x_lo": [0, 0, 0, 5, 0, 0], "x_hi": [0, 0, 0, 5, 0, 0],
                      "tag": ["rare", "b", "c", "rare", "b", "c"]})


@pytest.mark.parametrize("strategy", ["selectivity", "sequential"])
@pytest.mark.parametrize("query", [
    "PATTERN SEQ(A, B, C) DEFINE A AS tag = 'rare', B AS tag = 'b', C AS tag = 'c' "
    "WITHIN 5",
    "PATTERN SEQ(A, B, C, D) DEFINE A AS tag = 'rare', B AS tag = 'b', C AS tag = 'c', "
    "D AS x > 1 WITHIN 6",
])
def test_merged_entries_keep_the_window_and_the_earliest_first_instant(strategy, query):
    # Entries that differ only in a's instant may merge once a is no longer next to an
    # unmatched item, but not while a later item's window reads that instant; once both
    # ends are matched they merge and t_first is still the earliest instant a holds at.
    idx = uc.build_index(_ENDS)
    want = idx.query(query, strategy="possible_worlds")
    assert len(want) == 1 and want["t_first"][0] == 2
    assert_same_answer(idx.query(query, strategy=strategy), want)


def test_explain_names_the_access_path_of_each_step():
    idx = uc.build_index(pd.DataFrame({
        "event_id": range(6), "group": [0, 0, 1, 1, 2, 2], "t_lo": [0, 2, 1, 3, 0, 4],
        "t_hi": [1, 3, 2, 4, 1, 5], "x": [0.0, 2.0, 1.0, 3.0, 4.0, 6.0],
        "tag": ["a", "b", "a", "b", "a", "a"]}))
    ex = idx.explain(QUERY)
    assert len(ex.steps) == 3
    # The items' boxes span every group and code and all of the time: a column scan.
    assert all("column scan of the 6 events' boxes" in s.access and "by instant" in s.access
               for s in ex.steps)
    assert "access path" in str(ex)
    with patch.object(event_index, "SCAN_SPAN_FRACTION", 2.0):
        ex = idx.explain(QUERY)
    assert all("R*-tree" in s.access and "by instant" in s.access for s in ex.steps)


def test_explain_names_the_code_ranges_a_crowded_window_takes_its_nodes_from():
    # One group of five events that may come in any order: every window holds more
    # nodes than instants, so (at one candidate per block) the second item's nodes come
    # from the code ranges below the first item's node.
    idx = uc.build_index(pd.DataFrame({
        "event_id": range(5), "group": 0, "t_lo": 0, "t_hi": 4, "x": 1.0}))
    query = "PATTERN SEQ(A, B) DEFINE A AS x > 0, B AS x > 0 WITHIN 10"
    with (patch.object(extension_kernels, "BLOCK_COST", 1),
          patch.object(batch_engine, "TUPLE_RATIO", 1 << 40)):
        ex = idx.explain(query, strategy="sequential")
        got = idx.query(query, strategy="sequential")
    assert "by code range" in ex.steps[1].access and "by code range" in str(ex)
    assert "by code range" not in ex.steps[0].access
    assert_same_answer(got, idx.query(query, strategy="possible_worlds"))


@st.composite
def two_negations_in_one_gap(draw: st.DrawFn) -> SequencePattern:
    """SEQ(S0, NOT S1, NOT S2, S3): two NOT items sharing the gap between S0 and S3."""
    names = ["S0", "S1", "S2", "S3"]
    if draw(st.booleans()):
        names[2] = "S1"   # the same symbol negated twice
    items = tuple(PatternItem(n, n2 in (1, 2)) for n2, n in enumerate(names))
    defined = tuple(draw(symbols(n, ("x",))) for n in dict.fromkeys(names))
    return SequencePattern(items, defined, draw(st.one_of(st.none(), st.integers(0, 10))),
                           draw(st.sampled_from([None, 0.01, 0.1, 0.3])))


@pytest.mark.parametrize("strategy", ["selectivity", "sequential"])
@settings(max_examples=30, deadline=None)
@given(df=archives(max_groups=3), pattern=two_negations_in_one_gap())
def test_several_negations_in_one_gap_equal_possible_worlds(strategy, df, pattern):
    df = df.drop(columns=[c for c in df.columns if c.startswith("y")])
    idx = uc.build_index(df)
    assert_same_answer(idx.query(pattern, strategy=strategy),
                       idx.query(pattern, strategy="possible_worlds"))


@pytest.mark.parametrize("strategy", ["selectivity", "sequential"])
def test_a_groups_nearest_node_before_a_gap_keeps_its_identity_with_classes(strategy):
    # Found by the property test below: without Condition 2, the nearest node before
    # the gap stood for its class, and merging gave tuple (2, 3, 8, 6) 0.333, not 0.238.
    rows = [(0, "g0", 0, 0), (1, "g0", 1, 1), (2, "g1", 4, 5), (3, "g1", 5, 7),
            (4, "g1", 7, 9), (5, "g1", 11, 11), (6, "g1", 9, 10), (7, "g2", 0, 0),
            (8, "g2", 5, 8), (9, "g2", 1, 1)]
    df = pd.DataFrame([{"event_id": e, "group": g, "t_lo": lo, "t_hi": hi, "x_lo": 0.0,
                        "x_hi": 0.0, "tag": "a"} for e, g, lo, hi in rows])
    pattern = ("PATTERN SEQ(A, B, NOT C, D, E) DEFINE A AS x >= 0, B AS x >= 0, "
               "C AS x >= 0, D AS x >= 0, E AS x >= 0 WITHIN 5")
    idx = uc.build_index(df)
    assert_same_answer(idx.query(pattern, strategy=strategy),
                       idx.query(pattern, strategy="possible_worlds"))


@pytest.mark.parametrize("strategy", ["selectivity", "sequential"])
@settings(max_examples=30, deadline=None)
@given(df=archives(max_groups=3, max_events=10, max_per_group=5),
       pattern=patterns(("x",), negation=True, min_items=5, max_items=6))
def test_entries_merged_under_negation_in_several_gaps_equal_possible_worlds(
        strategy, df, pattern):
    # Five or six items with NOT items in one or more gaps: entries of one tuple that
    # differ only in nodes no gap reads are added up before their negation factors.
    df = df.drop(columns=[c for c in df.columns if c.startswith("y")])
    idx = uc.build_index(df)
    assert_same_answer(idx.query(pattern, strategy=strategy),
                       idx.query(pattern, strategy="possible_worlds"))


def test_a_process_that_queried_can_still_fork():
    # Compiled kernels must not leave a runtime behind that kills forked children (as
    # numba's OpenMP threading layer does). The fork happens in a fresh interpreter: forking
    # this test process would copy its Spark gateway threads into the child.
    script = textwrap.dedent("""
        import multiprocessing as mp
        import pandas as pd
        import uncertain_cep as uc

        df = pd.DataFrame({"event_id": range(6), "group": [0, 1] * 3, "t_lo": range(6),
                           "t_hi": [t + 1 for t in range(6)], "x": [1.0] * 6})
        idx = uc.build_index(df)
        query = "PATTERN SEQ(A, B) DEFINE A AS x > 0, B AS x > 0 WITHIN 4 CONFIDENCE 0.1"
        idx.query(query)
        child = mp.get_context("fork").Process(target=idx.query, args=(query,), daemon=True)
        child.start()
        child.join(120)
        if child.exitcode is None:
            child.kill()
        raise SystemExit(0 if child.exitcode == 0 else 1)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr


def test_queries_from_several_threads_at_once_give_the_same_answer():
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(3)
    n = 400
    t = np.arange(n)     # group i % 5: one event every 5 instants, each 1-3 wide
    df = pd.DataFrame({"event_id": range(n), "group": t % 5, "t_lo": t,
                       "t_hi": t + rng.integers(0, 3, n), "x": rng.normal(size=n)})
    idx = uc.build_index(df)
    query = "PATTERN SEQ(A, B, C) DEFINE A AS x > 0, B AS x > 0, C AS x > 0 WITHIN 6 " \
            "CONFIDENCE 0.05"
    want = idx.query(query)
    with ThreadPoolExecutor(4) as pool:
        for got in pool.map(lambda _: idx.query(query), range(8)):
            pd.testing.assert_frame_equal(pd.DataFrame(got), pd.DataFrame(want))


def test_nodes_stand_for_their_class_only_without_condition2(tmp_path):
    # Classes of nodes rely on every OI of a group being equally likely (SEMANTICS A2),
    # which Condition 2 breaks; an index opened without the user's predicate it was
    # built with still knows it had one.
    from uncertain_cep.query.evaluation.context import QueryContext
    from uncertain_cep.query.language.parse import parse_query

    df = pd.DataFrame({"event_id": [1, 2, 3], "group": 0, "t_lo": [1, 2, 3],
                       "t_hi": [4, 5, 6], "x": [0.0, 1.0, 2.0], "y": [0.0, 0.0, 0.0]})
    query = parse_query("PATTERN SEQ(A, B) DEFINE A AS x < 5, B AS x >= 0 WITHIN 9 "
                        "CONFIDENCE 0.1")
    plain = uc.build_index(df)
    by_speed = uc.build_index(df, max_speed=5.0)
    by_predicate = uc.build_index(df, pair_predicate=lambda a, b, ta, tb: True)
    by_predicate.save(tmp_path / "ix")
    reopened = uc.open_index(tmp_path / "ix")
    engines = [batch_engine.BatchEngine(QueryContext(i.event_index, query))
               for i in (plain, by_speed, by_predicate, reopened)]
    assert [e.classes for e in engines] == [True, False, False, False]
    assert reopened.event_index.settings.condition2 is None


@settings(deadline=None)
@given(data=st.data(), k=st.integers(1, 8), window=st.sampled_from([np.inf, 5, 12, 40]))
def test_every_items_window_at_once_equals_each_items_window(data, k, window):
    # every_item_window takes running maxima and minima over the columns instead of a
    # pass per item; windows_from_instants is the per-item form the tuple steps read.
    n = data.draw(st.integers(1, 6))
    matched = np.array(data.draw(st.lists(st.lists(st.booleans(), min_size=k, max_size=k),
                                          min_size=n, max_size=n)))
    earliest = np.array(data.draw(st.lists(st.lists(st.integers(0, 60), min_size=k,
                                                    max_size=k), min_size=n, max_size=n)))
    latest = earliest + np.array(data.draw(st.lists(
        st.lists(st.integers(0, 6), min_size=k, max_size=k), min_size=n, max_size=n)))
    lo, hi = every_item_window(earliest, latest, matched, window)
    for item in range(k):
        assert lo[:, item].tolist() == windows_from_instants(
            earliest, matched, item, window)[0].tolist()
        assert hi[:, item].tolist() == windows_from_instants(
            latest, matched, item, window)[1].tolist()


@pytest.mark.parametrize("strategy", ["selectivity", "sequential"])
@pytest.mark.parametrize("query", [
    "PATTERN SEQ(A, B) DEFINE A AS a0 < -1, B AS a0 > 1 WITHIN 20",
    "PATTERN SEQ(A, NOT N, B) DEFINE A AS a0 < -1, N AS a1 > 0, B AS a0 > 1 WITHIN 20"])
def test_a_finished_query_leaves_no_cycle_holding_its_index(strategy, query):
    # A Spark worker lets a shard's index go when it moves to the next shard: a cycle
    # through the engine kept it (and a node table of 1.6 GB at 100M events) until the
    # cycle collector ran, which it rarely does.
    import gc
    import weakref

    from uncertain_cep.datasets.synthetic import generate_synthetic
    from uncertain_cep.query.evaluation.context import QueryContext
    from uncertain_cep.query.strategies import evaluate

    index = uc.build_index(generate_synthetic(400, groups=3, seed=2)).event_index
    pattern = uc.parse_query(query)
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        ctx = QueryContext(index, pattern)
        answer = evaluate(ctx, strategy)
        assert len(answer.confidence)
        held = [weakref.ref(index), weakref.ref(ctx)]
        del index, ctx, answer
        assert [ref() for ref in held] == [None, None]
    finally:
        if was_enabled:
            gc.enable()
