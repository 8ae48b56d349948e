"""Evaluating by time slices (what Spark executors do) equals evaluating the whole index."""

from __future__ import annotations

from itertools import pairwise
from unittest.mock import patch

import pandas as pd
import pytest
from answer_checks import cases
from hypothesis import example, given, settings
from hypothesis import strategies as st
from random_archives import archives, patterns
from top_rows import assert_a_top_k_of, assert_first_rows_of

import uncertain_cep as uc
from uncertain_cep.api import answer_frame
from uncertain_cep.errors import InputError, PlanningError
from uncertain_cep.index.store.reader import open_reader
from uncertain_cep.pipeline import time_slices
from uncertain_cep.pipeline.answer_forms import first_rows
from uncertain_cep.pipeline.time_slices import evaluate_slice, plan_slices
from uncertain_cep.query.language.patterns import with_limit


def _assert_same_answers(got, want):
    """The same tuples with the same instants, confidences equal to 1e-12 (rounding both
    to 12 decimals would split values that straddle a rounding boundary)."""
    got = sorted((tuple(ev), t0, t1, conf) for ev, conf, t0, t1 in got)
    want = sorted((tuple(ev), t0, t1, conf) for ev, conf, t0, t1 in want)
    assert [r[:3] for r in got] == [r[:3] for r in want]
    assert all(abs(a[3] - b[3]) <= 1e-12 for a, b in zip(got, want))


@settings(max_examples=15)
@given(df=archives(max_groups=4, max_events=12), pattern=patterns(),
       n_slices=st.integers(1, 8), codes=st.sampled_from(["compact", "paper"]),
       shard_events=st.none() | st.integers(1, 6), whole=st.booleans())
def test_union_of_time_slices_equals_the_whole_index(tmp_path_factory, df, pattern,
                                                     n_slices, codes, shard_events, whole):
    # Sharded indexes too: a slice reads the shards whose events meet it, from the whole
    # index's working copy where the cache can hold it (whole), else from those shards
    # side by side.
    with patch.object(time_slices, "holds_whole", lambda manifest: whole):
        _slices_equal_the_whole_index(tmp_path_factory, df, pattern, n_slices, codes,
                                      shard_events)


def _slices_equal_the_whole_index(tmp_path_factory, df, pattern, n_slices, codes,
                                  shard_events):
    try:
        idx = uc.build_index(df, codes=codes)
    except InputError:
        return
    root = tmp_path_factory.mktemp("slices") / "ix"
    idx.save(root, shard_events=shard_events)
    reader = open_reader(root)
    window = pattern.within if pattern.within is not None else float("inf")
    plan = plan_slices(reader, window, n_slices)
    assert plan == sorted(plan, key=lambda s: s.lo)
    assert all(a.hi <= b.lo for a, b in pairwise(plan))
    rows = []
    for piece in plan:
        got, stats = evaluate_slice(reader, piece, pattern)
        rows += got
        # Each slice opens the shards its span meets, and says which.
        assert stats.shards == (len(reader.manifest.shards) if reader.manifest.is_sharded
                                else None)
        assert stats.shards_read == (reader.shards_meeting(piece.lo, piece.need_hi)
                                     if reader.manifest.is_sharded else [])
    full = idx.query(pattern)
    expected = list(zip(full["events"], full["confidence"], full["t_first"], full["t_last"]))
    _assert_same_answers(rows, expected)


def _rounded_apart():
    """An archive whose best tuples a slice weighs as 0.9999999999999999 and the whole
    index as 0.999999999999999 (found by this test): equal to 1e-9, ranked alike."""
    rows = [(0, "g0", 0, 0, 0), (1, "g0", 7, 7, 0), (2, "g0", 9, 9, 0), (3, "g0", 3, 6, 7),
            (4, "g0", 1, 4, 0), (5, "g0", 11, 11, 0), (6, "g1", -1, 0, 0), (7, "g1", -1, 2, 0),
            (8, "g2", 0, 0, 0), (9, "g2", 3, 3, 0), (10, "g2", 7, 9, 0), (11, "g2", 8, 8, 0)]
    df = pd.DataFrame(rows, columns=["event_id", "group", "t_lo", "t_hi", "x_lo"])
    df["x_hi"] = df["x_lo"] = df["x_lo"].astype(float)
    df["y_lo"] = df["y_hi"] = 0.0
    pattern = uc.parse_query(
        "PATTERN SEQ(S0, NOT S1, S2, S0) DEFINE S0 AS x < 1 AND y < 5, "
        "S1 AS x >= 0 AND y >= 1, S2 AS x BETWEEN 2 AND 7 AND y < 1 WITHIN 8")
    return df, pattern, None, "compact", "multi"


@settings(max_examples=10)
@given(case=cases(condition2=False), n_slices=st.integers(1, 6),
       shard_events=st.none() | st.integers(1, 6), k=st.integers(1, 5))
@example(case=_rounded_apart(), n_slices=1, shard_events=None, k=4)
def test_the_best_of_each_slices_best_k_rows_is_the_first_k_rows_of_the_answer(
        tmp_path_factory, case, n_slices, shard_events, k):
    # What a Spark top-k query does: each slice keeps its k best, the driver their best.
    df, pattern, _, codes, layout = case
    idx = uc.build_index(df, codes=codes, multi_tree=layout == "multi")
    root = tmp_path_factory.mktemp("top") / "ix"
    idx.save(root, shard_events=shard_events)
    reader = open_reader(root)
    limited = with_limit(pattern, k)
    rows = []
    for piece in plan_slices(reader, limited.window, n_slices):
        got, _ = evaluate_slice(reader, piece, limited)
        assert len(got) <= k
        rows += got
    top = answer_frame(first_rows(rows, k))
    # Row for row against the same index's full answer: a sharded index holds each
    # piece's own trees, whose sums may round apart from the whole group's in the last
    # bit (1.0 against 0.999999999999999), so ties fall differently from the unsharded
    # index's; against the oracle, to 1e-9.
    assert_first_rows_of(top, uc.open_index(root).query(pattern), k)
    assert_a_top_k_of(top, idx.query(pattern, strategy="possible_worlds"), k)


def test_every_event_is_the_anchor_of_exactly_one_slice(tmp_path):
    from uncertain_cep.datasets.synthetic import generate_synthetic

    df = generate_synthetic(400, groups=3, seed=4)
    idx = uc.build_index(df)
    idx.save(tmp_path / "ix")
    plan = plan_slices(open_reader(tmp_path / "ix"), 10, 6)
    t_min = idx._index.event_t_min
    owners = [sum(p.lo <= t < p.hi for p in plan) for t in t_min]
    assert set(owners) == {1}
    assert 4 <= len(plan) <= 7


def test_strategies_that_need_whole_groups_are_refused_per_slice(tmp_path):
    from uncertain_cep.datasets.synthetic import generate_synthetic

    uc.build_index(generate_synthetic(50, seed=1)).save(tmp_path / "ix")
    reader = open_reader(tmp_path / "ix")
    piece = plan_slices(reader, 5, 1)[0]
    with pytest.raises(PlanningError, match="needs the whole index"):
        evaluate_slice(reader, piece, uc.parse_query("PATTERN SEQ(A, B) DEFINE A AS a0 > 0, "
                                                     "B AS a0 > 0"), strategy="tree_traversal")


def test_a_negation_weighing_a_group_whose_early_trees_a_slice_left_out(tmp_path):
    # Found by hypothesis: the slice holding t >= 2 keeps no trees for g0's first events;
    # a virtual node standing for a left-out tree has no child root, and the negation's
    # weighted sum must count that subtree as 1, not read some other node.
    rows = [(0, "g0", 0, 0), (1, "g0", 1, 1), (2, "g0", 2, 2), (3, "g0", 3, 3),
            (4, "g0", 7, 7), (5, "g0", 5, 6), (6, "g1", 0, 0), (7, "g1", 2, 5),
            (8, "g1", 4, 6), (9, "g2", 0, 0), (10, "g2", 1, 1), (11, "g3", 0, 0)]
    df = pd.DataFrame(rows, columns=["event_id", "group", "t_lo", "t_hi"]).assign(x=0.0)
    query = ("PATTERN SEQ(S0, NOT S1, S2) DEFINE S0 AS x >= 0, S1 AS x BETWEEN 0 AND 2, "
             "S2 AS x BETWEEN 0 AND 2")
    idx = uc.build_index(df)
    idx.save(tmp_path / "ix")
    reader = open_reader(tmp_path / "ix")
    for strategy in ("selectivity", "sequential"):
        rows_got = []
        for piece in plan_slices(reader, float("inf"), 2):
            rows_got += evaluate_slice(reader, piece, uc.parse_query(query), strategy)[0]
        full = idx.query(query, strategy=strategy)
        assert ((7, 4), 0.05) in [(tuple(e), round(c, 9)) for e, c, _, _ in rows_got]
        _assert_same_answers(rows_got, zip(full["events"], full["confidence"],
                                           full["t_first"], full["t_last"]))


def test_a_reader_from_another_host_answers_and_a_rebuild_is_refused(tmp_path):
    import dataclasses

    from uncertain_cep.datasets.synthetic import generate_synthetic
    from uncertain_cep.errors import IndexFormatError

    query = uc.parse_query("PATTERN SEQ(A, B) DEFINE A AS a0 > 0, B AS a0 > 0 WITHIN 20")
    uc.build_index(generate_synthetic(60, seed=2)).save(tmp_path / "ix")
    reader = open_reader(tmp_path / "ix")
    # On an executor the directory's device and inode differ from the driver's (another
    # mount of a shared filesystem); the manifest's content is what tells a rebuild.
    elsewhere = dataclasses.replace(reader, identity=(-1, -1))
    piece = plan_slices(reader, 20, 1)[0]
    assert evaluate_slice(elsewhere, piece, query)[0] == evaluate_slice(reader, piece,
                                                                        query)[0]
    uc.build_index(generate_synthetic(70, seed=3)).save(tmp_path / "ix")
    for stale in (reader, elsewhere):
        with pytest.raises(IndexFormatError, match="rebuilt while the query ran"):
            evaluate_slice(stale, piece, query)


@pytest.mark.parametrize(("base", "window"), [(2**62, " WITHIN 3"),
                                              (2**63 - 40, f" WITHIN {2**63 - 1}"),
                                              (-(2**63), f" WITHIN {2**63 - 2}")])
def test_slices_answer_instants_and_windows_near_int64s_ends(tmp_path, base, window):
    # Issue 44 items 2-3 through the Spark engine's slices (evaluated in-process here).
    df = pd.DataFrame({"event_id": range(6), "group": ["g", "g", "g", "h", "h", "h"],
                       "t_lo": [0, 1, 5, 0, 3, 8], "t_hi": [2, 3, 7, 1, 4, 9],
                       "x": [1.0, 2.0, 3.0, 1.0, 2.0, 3.0]})
    df[["t_lo", "t_hi"]] = df[["t_lo", "t_hi"]].map(lambda t: t + base).astype("int64")
    idx = uc.build_index(df)
    idx.save(tmp_path / "ix")
    reader = open_reader(tmp_path / "ix")
    query = f"PATTERN SEQ(A, B) DEFINE A AS x < 3, B AS x >= 2{window}"
    pattern = uc.parse_query(query)
    rows = []
    for piece in plan_slices(reader, pattern.window, 3):
        rows += evaluate_slice(reader, piece, pattern)[0]
    full = idx.query(query, strategy="possible_worlds")
    assert len(full) > 0
    _assert_same_answers(rows, list(zip(full["events"], full["confidence"], full["t_first"],
                                        full["t_last"])))
