"""Tuples instead of entries: each tuple's programme (query/engine/kernels/tuples.py) against the
possible-worlds baseline, and the engine's answers when batches go on as tuples."""

from __future__ import annotations

import itertools
from dataclasses import replace
from unittest.mock import patch

import numpy as np
import pandas as pd
import pytest
from answer_checks import assert_same_answer, cases
from hypothesis import event, given, note, settings
from hypothesis import strategies as st
from random_archives import archives, patterns, symbols
from test_batch_engine import two_negations_in_one_gap

import uncertain_cep as uc
from uncertain_cep.datasets import generate_synthetic
from uncertain_cep.query.engine import batch_engine, tuple_steps
from uncertain_cep.query.engine.batch_engine import BatchEngine
from uncertain_cep.query.engine.completion import Completion
from uncertain_cep.query.engine.event_room import EventRoom
from uncertain_cep.query.engine.kernels.instants import NO_TIME
from uncertain_cep.query.engine.kernels.tuples import (
    NEGATED_ROOM,
    ROOM,
    TupleTable,
    negated_probabilities,
    tuple_probabilities,
)
from uncertain_cep.query.engine.negation_bounds import CertainWeighers
from uncertain_cep.query.evaluation.context import QueryContext
from uncertain_cep.query.language.patterns import PatternItem, SequencePattern

TOL = 1e-9


def _every_tuple(idx: uc.UncertainIndex, pattern: object
                 ) -> tuple[QueryContext, np.ndarray, dict[tuple[object, ...], tuple]]:
    """The query's context, every tuple of distinct events (one per positive item), and
    the possible-worlds answer of the pattern without threshold (every tuple of positive
    confidence) by event ids."""
    pattern = replace(pattern, confidence=None)
    want = idx.query(pattern, strategy="possible_worlds")
    ctx = QueryContext(idx.event_index, pattern)
    k = len(ctx.positive)
    tuples = np.array(list(itertools.permutations(range(idx.archive.n_events), k)),
                      dtype=np.int64).reshape(-1, k)
    return ctx, tuples, {tuple(e): (c, f, last) for e, c, f, last in zip(
        want["events"], want["confidence"], want["t_first"], want["t_last"])}


def _by_ids(idx: uc.UncertainIndex, ctx: QueryContext, tuples: np.ndarray,
            total: np.ndarray, first: np.ndarray, last: np.ndarray
            ) -> dict[tuple[object, ...], tuple]:
    attribute = np.ones(len(tuples))
    for c, symbol in enumerate(ctx.positive):
        attribute *= ctx.pr_rows(symbol, tuples[:, c])
    conf = total * attribute
    ids = idx.archive.event_ids
    return {tuple(ids[r] for r in row): (c, f, la)
            for row, c, f, la in zip(tuples, conf, first, last) if c > 0}


def _assert_same(got: dict, want: dict) -> None:
    assert set(got) == set(want)
    for key, (c, f, last) in want.items():
        assert abs(got[key][0] - c) <= TOL, (key, got[key], want[key])
        assert got[key][1:] == (f, last), (key, got[key], want[key])


@settings(deadline=None)
@given(df=archives(max_events=10), pattern=patterns(("x",), negation=False),
       condition2=st.booleans(), layout=st.sampled_from(["multi", "multi", "single"]),
       room=st.sampled_from([1, ROOM]))
def test_a_tuples_programme_gives_its_possible_worlds_confidence(df, pattern, condition2,
                                                                 layout, room):
    # (With room for one class per layer, nearly every tuple's programme runs out of
    # room and runs again with more: the same answer.)
    df = df.drop(columns=[c for c in df.columns if c.startswith("y")])
    try:
        idx = uc.build_index(df, max_speed=2.0 if condition2 else None,
                             coordinates=("x",), multi_tree=layout == "multi")
    except uc.InputError:
        return
    ctx, tuples, want = _every_tuple(idx, pattern)
    event(f"answer rows: {min(len(want), 5)}")
    total, first, last, *_ = tuple_probabilities(TupleTable(idx.event_index.node_table),
                                                 tuples, ctx.window, room=room)
    _assert_same(_by_ids(idx, ctx, tuples, total, first, last), want)


@settings(deadline=None)
@given(df=archives(max_events=10),
       pattern=st.one_of(patterns(("x",), negation=True, min_items=3, max_items=5),
                         two_negations_in_one_gap()),
       condition2=st.booleans(), layout=st.sampled_from(["multi", "multi", "single"]),
       room=st.sampled_from([1, ROOM, NEGATED_ROOM]))
def test_a_tuples_programme_with_its_negation_folded_in_gives_its_confidence(
        df, pattern, condition2, layout, room):
    # Exact nodes where a unit may hold a weighed node (or two nodes of a chain share
    # it), canonical ones elsewhere, gap bounds snapped to the instants of the nodes
    # they may weigh; each segment's factor folded in as soon as what it reads is
    # known, the outside groups' last.
    _assert_negated_programme_matches(df, pattern, condition2, layout, room)


def _assert_negated_programme_matches(df: pd.DataFrame, pattern: SequencePattern,
                                      condition2: bool, layout: str, room: int = ROOM
                                      ) -> None:
    """The negation programme on every tuple of ``df``'s index (with Condition 2 or
    not, one tree or many) gives the possible-worlds confidence and instants."""
    df = df.drop(columns=[c for c in df.columns if c.startswith("y")])
    try:
        idx = uc.build_index(df, max_speed=2.0 if condition2 else None,
                             coordinates=("x",), multi_tree=layout == "multi")
    except uc.InputError:
        return
    ctx, tuples, want = _every_tuple(idx, pattern)
    event(f"answer rows: {min(len(want), 5)}")
    total, first, last, _ = negated_probabilities(
        TupleTable(idx.event_index.node_table, classes=not condition2), tuples, ctx.window,
        BatchEngine(ctx).gaps, BatchEngine(ctx).negated, room=room)
    _assert_same(_by_ids(idx, ctx, tuples, total, first, last), want)


@st.composite
def negations_in_two_gaps(draw: st.DrawFn) -> SequencePattern:
    """SEQ(S0, NOT N0, S1, NOT N1, S2) or with a fourth positive item somewhere: NOT
    items in two different gaps, so that a group with columns around both has a segment
    per gap (and a group with none between them one segment holding both)."""
    names = ["S0", "N0", "S1", "N1", "S2"]
    if draw(st.booleans()):
        names.insert(draw(st.sampled_from([1, 3, 5])), "S3")
    if draw(st.booleans()):
        names[names.index("N1")] = "N0"   # the same symbol negated in both gaps
    items = tuple(PatternItem(n, n.startswith("N")) for n in names)
    defined = tuple(draw(symbols(n, ("x",))) for n in dict.fromkeys(names))
    return SequencePattern(items, defined, draw(st.one_of(st.none(), st.integers(0, 12))),
                           None)


@settings(deadline=None, max_examples=30)
@given(df=archives(max_groups=3, max_events=9), pattern=negations_in_two_gaps(),
       condition2=st.booleans(), layout=st.sampled_from(["multi", "multi", "single"]))
def test_negations_in_two_gaps_fold_per_segment_to_the_possible_worlds_confidence(
        df, pattern, condition2, layout):
    # A group's factor is the product of its segments' (each weighs only its own
    # gaps), and a node past its segment's fold stands for its class without
    # Condition 2: both must give the possible-worlds confidence.
    _assert_negated_programme_matches(df, pattern, condition2, layout)


@settings(deadline=None)
@given(df=archives(max_events=10), pattern=patterns(("x",), negation=False, min_items=3),
       data=st.data())
def test_a_partial_tuples_bound_is_at_least_every_completions_probability(df, pattern,
                                                                          data):
    df = df.drop(columns=[c for c in df.columns if c.startswith("y")])
    idx = uc.build_index(df)
    ctx = QueryContext(idx.event_index, pattern)
    k = len(ctx.positive)
    tuples = np.array(list(itertools.permutations(range(idx.archive.n_events), k)),
                      dtype=np.int64).reshape(-1, k)
    table = TupleTable(idx.event_index.node_table)
    total, *_ = tuple_probabilities(table, tuples, ctx.window)
    hidden = np.array(data.draw(st.lists(st.booleans(), min_size=k, max_size=k)))
    if hidden.all():
        hidden[0] = False
    partial = np.where(hidden, -1, tuples)
    bound, *_, lo, hi = tuple_probabilities(table, partial, ctx.window)
    assert (bound >= total - TOL).all()
    # Each matched column's reachable instants hold its instant in every world counted.
    _, first, last, *_ = tuple_probabilities(table, tuples, ctx.window)
    shown = total > 0
    if not hidden[0]:
        assert (lo[shown, 0] <= first[shown]).all()
    if not hidden[-1]:
        assert (hi[shown, -1] >= last[shown]).all()


@pytest.mark.parametrize("strategy", ["selectivity", "sequential"])
@given(case=cases(condition2=False))
def test_answers_as_tuples_equal_possible_worlds(strategy, case):
    df, pattern, _, codes, layout = case
    note(str(pattern))
    idx = uc.build_index(df, coordinates=("x", "y") if "y_lo" in df.columns else ("x",),
                         codes=codes, multi_tree=layout == "multi")
    with patch.object(batch_engine, "TUPLE_RATIO", 0):
        got = idx.query(pattern, strategy=strategy)
    assert_same_answer(got, idx.query(pattern, strategy="possible_worlds"))


@pytest.mark.parametrize("strategy", ["selectivity", "sequential"])
@settings(deadline=None)
@given(case=cases(condition2=True))
def test_answers_as_tuples_under_condition_2_equal_possible_worlds(strategy, case):
    df, pattern, max_speed, codes, layout = case
    coords = ("x", "y") if "y_lo" in df.columns else ("x",)
    try:
        idx = uc.build_index(df, max_speed=max_speed, coordinates=coords, codes=codes,
                             multi_tree=layout == "multi")
    except uc.InputError:
        return
    with patch.object(batch_engine, "TUPLE_RATIO", 0):
        got = idx.query(pattern, strategy=strategy)
    assert_same_answer(got, idx.query(pattern, strategy="possible_worlds"))


@pytest.mark.parametrize("strategy", ["selectivity", "sequential"])
@settings(deadline=None)
@given(df=archives(max_groups=3), pattern=two_negations_in_one_gap(),
       limit=st.integers(1, 6), ratio=st.sampled_from([0, 2]))
def test_several_negations_in_one_gap_as_tuples_in_small_batches(strategy, df, pattern,
                                                                 limit, ratio):
    # Batches of a few tuples (or pairs), some going on as tuples midway.
    df = df.drop(columns=[c for c in df.columns if c.startswith("y")])
    idx = uc.build_index(df)
    with (patch.object(batch_engine, "TUPLE_RATIO", ratio),
          patch.object(batch_engine, "BATCH_LIMIT", limit)):
        got = idx.query(pattern, strategy=strategy)
    assert_same_answer(got, idx.query(pattern, strategy="possible_worlds"))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(20, 40), groups=st.integers(1, 4),
       data=st.data())
def test_tuples_and_entries_agree_on_larger_archives(seed, n, groups, data):
    # Deep trees (time squeezed), beyond the possible-worlds baseline's reach.
    df = generate_synthetic(n, groups=groups, d=1, seed=seed)
    df = df.assign(t_lo=df.t_lo // 2, t_hi=df.t_lo // 2 + (df.t_hi - df.t_lo))
    df = df.rename(columns={"a0_lo": "x_lo", "a0_hi": "x_hi"})
    df["x_lo"] = (df["x_lo"] + 3) * 1.5
    df["x_hi"] = (df["x_hi"] + 3) * 1.5
    df["tag"] = ["a" if i % 3 else "b" for i in range(len(df))]
    try:
        idx = uc.build_index(df, node_budget=20_000)
    except (uc.InputError, uc.IndexBuildError):
        return
    pattern = replace(data.draw(patterns(("x",), max_items=5)),
                      within=data.draw(st.integers(3, 10)),
                      confidence=data.draw(st.sampled_from([0.01, 0.05, 0.2])))
    with patch.object(batch_engine, "TUPLE_RATIO", 1 << 40):
        want = idx.query(pattern)
    event(f"answer rows: {min(len(want), 3)}")
    with patch.object(batch_engine, "TUPLE_RATIO", 0):
        assert_same_answer(idx.query(pattern), want)
        assert_same_answer(idx.query(pattern, strategy="sequential"), want)


def test_explain_names_the_steps_taken_as_tuples():
    rng = np.random.default_rng(5)
    n = 120
    t = np.arange(n) // 3
    df = pd.DataFrame({"event_id": range(n), "group": np.arange(n) % 3, "t_lo": t,
                       "t_hi": t + rng.integers(0, 3, n), "x": rng.normal(size=n)})
    idx = uc.build_index(df)
    query = ("PATTERN SEQ(A, B, NOT N, C) DEFINE A AS x > -1, B AS x > -1, N AS x > 2, "
             "C AS x > -1 WITHIN 6 CONFIDENCE 0.01")
    with patch.object(batch_engine, "TUPLE_RATIO", 0):
        ex = idx.explain(query)
        got = idx.query(query)
    assert "as tuples" not in ex.steps[0].access
    assert all("as tuples" in s.access for s in ex.steps[1:]), str(ex)
    with patch.object(batch_engine, "TUPLE_RATIO", 1 << 40):
        want = idx.query(query)
        assert "as tuples" not in str(idx.explain(query))
    assert len(want) > 10
    assert_same_answer(got, want)


@st.composite
def _spread_archives(draw: st.DrawFn) -> pd.DataFrame:
    """Archives with time stretched threefold: many new events sit apart from their
    tuple's others (placed in every world), and gaps certainly hold whole events."""
    df = draw(archives(max_groups=3, max_events=10))
    df = df.drop(columns=[c for c in df.columns if c.startswith("y")])
    width = df.t_hi - df.t_lo
    return df.assign(t_lo=df.t_lo * 3, t_hi=df.t_lo * 3 + width)


@pytest.mark.parametrize("strategy", ["selectivity", "sequential"])
@settings(max_examples=30, deadline=None)
@given(df=_spread_archives(), pattern=patterns(("x",), negation=True, min_items=3, max_items=5),
       within=st.one_of(st.none(), st.integers(2, 30)))
def test_placed_events_and_certain_gaps_as_tuples_equal_possible_worlds(strategy, df,
                                                                        pattern, within):
    pattern = replace(pattern, within=within)
    idx = uc.build_index(df)
    placed, certain, settled, both = [0], [0], [0], [0]
    real_placed, real_factors = tuple_steps.placed_events, CertainWeighers.factors
    real_settled = CertainWeighers.settled
    last_settled = [np.zeros(0, dtype=bool)]

    def counting_placed(*args, **kwargs):
        out = real_placed(*args, **kwargs)
        placed[0] += int(out.sum())
        # Complete tuples are settled just before they are placed: those both take the
        # cheap programme for their first and last instants.
        if len(last_settled[0]) == len(out):
            both[0] += int((out & last_settled[0]).sum())
        return out

    def counting_factors(self, *args, **kwargs):
        out = real_factors(self, *args, **kwargs)
        certain[0] += int((out < 1).sum())
        return out

    def counting_settled(self, *args, **kwargs):
        out = real_settled(self, *args, **kwargs)
        settled[0] += int(out[1].sum())
        last_settled[0] = out[1]
        return out

    with (patch.object(batch_engine, "TUPLE_RATIO", 0),
          patch.object(tuple_steps, "placed_events", counting_placed),
          patch.object(CertainWeighers, "factors", counting_factors),
          patch.object(CertainWeighers, "settled", counting_settled)):
        got = idx.query(pattern, strategy=strategy)
    event(f"placed: {min(placed[0], 1)}, certainly weighed: {min(certain[0], 1)}, "
          f"settled: {min(settled[0], 1)}, placed and settled: {min(both[0], 1)}")
    assert_same_answer(got, idx.query(pattern, strategy="possible_worlds"))


def test_a_gap_that_certainly_holds_a_negated_event_weighs_its_tuples_zero():
    # A, B and C are point events; N (certainly x > 5) lies between A and B in every
    # world, so every tuple holding both weighs 0 as soon as both are matched (with
    # the planner's order here, A and C first: at the last item).
    rows = [(0, "g0", 0, 1, 1.0), (1, "g1", 3, 4, 9.0), (2, "g0", 6, 7, 1.0),
            (3, "g1", 9, 9, 2.0), (4, "g0", 10, 10, 3.0), (5, "g1", 12, 13, 2.0)]
    df = pd.DataFrame(rows, columns=["event_id", "group", "t_lo", "t_hi", "x"])
    idx = uc.build_index(df)
    query = ("PATTERN SEQ(A, NOT N, B, C) DEFINE A AS x < 2, N AS x > 5, B AS x < 2.5, "
             "C AS x BETWEEN 1.5 AND 2.5 WITHIN 20 CONFIDENCE 0.5")
    weighed = []
    real_factors, real_settled = CertainWeighers.factors, CertainWeighers.settled

    def recording(self, *args, **kwargs):
        out = real_factors(self, *args, **kwargs)
        weighed.extend(out.tolist())
        return out

    def recording_settled(self, *args, **kwargs):
        # (Complete tuples take their factors with whether they are settled.)
        out = real_settled(self, *args, **kwargs)
        weighed.extend(out[0].tolist())
        return out

    with (patch.object(batch_engine, "TUPLE_RATIO", 0),
          patch.object(CertainWeighers, "factors", recording),
          patch.object(CertainWeighers, "settled", recording_settled)):
        got = idx.query(query)
    assert 0.0 in weighed
    assert_same_answer(got, idx.query(query, strategy="possible_worlds"))


@pytest.mark.parametrize("strategy", ["selectivity", "sequential"])
@settings(max_examples=30, deadline=None)
@given(df=archives(max_groups=3, max_events=8),
       pattern=patterns(("x",), min_items=4, max_items=6),
       within=st.one_of(st.none(), st.integers(3, 8)))
def test_tuples_without_room_for_their_unmatched_items_lose_no_answer(strategy, df,
                                                                      pattern, within):
    # Patterns of up to 6 items over up to 8 events, in narrow windows: many partial
    # tuples cannot find distinct events for the items they lack.
    df = df.drop(columns=[c for c in df.columns if c.startswith("y")])
    pattern = replace(pattern, within=within)
    idx = uc.build_index(df)
    cut = [0]
    real = EventRoom.feasible_children

    def counting(self, *args, **kwargs):
        out = real(self, *args, **kwargs)
        cut[0] += int((~out).sum())
        return out

    with (patch.object(batch_engine, "TUPLE_RATIO", 0),
          patch.object(EventRoom, "feasible_children", counting)):
        got = idx.query(pattern, strategy=strategy)
    event(f"tuples without room: {min(cut[0], 1)}")
    assert_same_answer(got, idx.query(pattern, strategy="possible_worlds"))


@pytest.mark.parametrize("strategy", ["selectivity", "sequential"])
@settings(max_examples=30, deadline=None)
@given(df=_spread_archives(), pattern=patterns(("x",), negation=True, min_items=3, max_items=5),
       within=st.one_of(st.none(), st.integers(2, 30)),
       confidence=st.sampled_from([0.05, 0.3, 0.6]))
def test_an_event_that_may_lie_in_a_gap_bounds_every_completion(strategy, df, pattern,
                                                               within, confidence):
    # The bound less Pr(C | x) times the tuple's probability with x inside a closed gap,
    # on partial and complete tuples: at least the confidence of every completion, and
    # the answers those bounds prune leave the same answer.
    pattern = replace(pattern, within=within, confidence=confidence)
    idx = uc.build_index(df)
    seen: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    real = Completion.likeliest_outside

    def recording(self, events, earliest, latest, total, floor, threads=None, chosen=None):
        bound, held = real(self, events, earliest, latest, total, floor, threads, chosen)
        seen.append((events.copy(), bound.copy(), total.copy()))
        return bound, held

    with (patch.object(batch_engine, "TUPLE_RATIO", 0),
          patch.object(Completion, "likeliest_outside", recording)):
        got = idx.query(pattern, strategy=strategy)
    assert_same_answer(got, idx.query(pattern, strategy="possible_worlds"))
    every = idx.query(replace(pattern, confidence=None), strategy="possible_worlds")
    ids = idx.archive.event_ids
    lowered = 0
    for events, bound, total in seen:
        for row, b, t in zip(events, bound, total, strict=True):
            matched = np.flatnonzero(row >= 0)
            best = max((c for e, c in zip(every["events"], every["confidence"])
                        if all(e[j] == ids[row[j]] for j in matched)), default=0.0)
            assert b >= best - TOL, (row, b, best)
            lowered += int(b < t - TOL)
    event(f"bounded by an event in a gap: {min(lowered, 1)}")


@settings(max_examples=30, deadline=None)
@given(df=_spread_archives(), items=st.integers(4, 6), within=st.integers(6, 40),
       negation=st.booleans(), confidence=st.sampled_from([0.05, 0.3, 0.6]))
def test_first_and_last_instants_kept_from_the_parent_equal_possible_worlds(
        df, items, within, negation, confidence):
    # A new event placed in every world of its parent, strictly between the parent's
    # first and last columns, keeps the parent's first and last instants: complete
    # tuples answer with them (and their parent's probability) without a programme.
    # Symbols every event meets give many tuples, so many such events.
    names = [f"S{i}" for i in range(items)]
    if negation:
        names.insert(2, "NOT N")
    defs = ", ".join([f"S{i} AS x > -1000" for i in range(items)]
                     + (["N AS x > 2"] if negation else []))
    query = (f"PATTERN SEQ({', '.join(names)}) DEFINE {defs} WITHIN {within} "
             f"CONFIDENCE {confidence}")
    idx = uc.build_index(df)
    inherited = [0]
    real = tuple_steps.inherited_ends

    def counting(*args, **kwargs):
        first, last = real(*args, **kwargs)
        inherited[0] += int((first != NO_TIME).sum())
        return first, last

    with (patch.object(batch_engine, "TUPLE_RATIO", 0),
          patch.object(tuple_steps, "inherited_ends", counting)):
        got = idx.query(query)
    event(f"first and last inherited: {min(inherited[0], 1)}, negation: {negation}")
    assert_same_answer(got, idx.query(query, strategy="possible_worlds"))


@settings(max_examples=20, deadline=None)
@given(df=archives(max_events=8),
       pattern=patterns(("x",), negation=True, min_items=3, max_items=4), data=st.data())
def test_the_likeliest_event_and_certain_factors_are_sought_for_live_tuples_only(df, pattern, data):
    # The engine asks on every new tuple and passes which are live: a pruned tuple's
    # instants may hold anything (its programme stopped), and it gets no event; nor
    # a factor for the events certainly inside a gap (1).
    df = df.drop(columns=[c for c in df.columns if c.startswith("y")])
    idx = uc.build_index(df, coordinates=("x",))
    ctx, tuples, _ = _every_tuple(idx, pattern)
    certain = BatchEngine(ctx).certain
    if certain is None or len(tuples) == 0:
        return
    _, _, _, _, lo, hi = tuple_probabilities(TupleTable(idx.event_index.node_table), tuples,
                                             ctx.window)
    live = np.array(data.draw(st.lists(st.booleans(), min_size=len(tuples),
                                       max_size=len(tuples))), dtype=np.bool_)
    gap, row, pr = certain.likeliest(tuples, lo, hi)
    factors = certain.factors(tuples, lo, hi)
    # (Unbounded, as a pruned programme leaves them, or the other way round.)
    lo[~live], hi[~live] = data.draw(st.sampled_from([(-NO_TIME, NO_TIME),
                                                      (NO_TIME, -NO_TIME)]))
    gap_live, row_live, pr_live = certain.likeliest(tuples, lo, hi, live)
    factors_live = certain.factors(tuples, lo, hi, live)
    assert np.array_equal(factors_live[live], factors[live])
    assert (factors_live[~live] == 1.0).all()
    event(f"some live tuple has an event in a gap: {bool((gap[live] >= 0).any())}")
    assert (gap_live[~live] == -1).all() and (pr_live[~live] == 0).all()
    assert (gap_live[live] == gap[live]).all() and (row_live[live] == row[live]).all()
    assert np.array_equal(pr_live[live], pr[live])
