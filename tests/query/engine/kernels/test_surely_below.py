"""A tuple is not run through its programme where its events' extreme instants alone show
that its sum falls below the floor (query/engine/kernels/tuples.py, ``surely_below``):
on random archives, weighted or not, every tuple so skipped has a programme sum below
its floor, and the skipped tuples come back as the programme returns them."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from hypothesis import event, given, settings
from hypothesis import strategies as st
from random_archives import archives, instant_weights, patterns

import uncertain_cep as uc
from uncertain_cep.query.engine.batch_engine import BatchEngine
from uncertain_cep.query.engine.kernels.instants import NO_TIME
from uncertain_cep.query.engine.kernels.tuples import (
    TupleTable,
    negated_probabilities,
    surely_below,
    tuple_probabilities,
)
from uncertain_cep.query.evaluation.context import QueryContext

FLOORS = st.sampled_from([0.05, 0.3, 0.6, 0.9, 1 - 1e-9, 1.0, 1.5])


def _tuples(n_events: int, k: int, hidden: np.ndarray) -> np.ndarray:
    tuples = np.array(list(itertools.permutations(range(n_events), k)),
                      dtype=np.int64).reshape(-1, k)
    return np.where(hidden, -1, tuples)


@settings(deadline=None, max_examples=80)
@given(df=archives(max_events=9), data=st.data())
def test_a_tuple_told_below_its_floor_has_a_programme_sum_below_it(df, data):
    df = df.drop(columns=[c for c in df.columns if c.startswith("y")])
    if data.draw(st.booleans()):
        df = data.draw(instant_weights(df))
    try:
        idx = uc.build_index(df, coordinates=("x",),
                             max_speed=2.0 if data.draw(st.booleans()) else None)
    except uc.InputError:
        return
    k = data.draw(st.integers(2, min(4, idx.archive.n_events)))
    hidden = np.array(data.draw(st.lists(st.booleans(), min_size=k, max_size=k)))
    hidden[data.draw(st.integers(0, k - 1))] = False
    tuples = _tuples(idx.archive.n_events, k, hidden)
    window = data.draw(st.sampled_from([np.inf, 2.0, 4.0, 8.0, 16.0]))
    table = TupleTable(idx.event_index.node_table)
    exact = tuple_probabilities(table, tuples, window)[0]
    floors = np.array(data.draw(st.lists(FLOORS, min_size=len(tuples),
                                         max_size=len(tuples))))
    length = int(window) if window != np.inf else 0
    told = np.array([surely_below(row, k, length, window != np.inf, table.arrays, f)
                     for row, f in zip(tuples, floors)], dtype=bool)
    event(f"told below: {'some' if told.any() else 'none'}")
    assert (exact[told] < floors[told] - 1e-12).all(), (tuples[told], exact[told])
    # With the floors, the programme is skipped where told, and answers as before.
    total, first, last, _, lo, hi = tuple_probabilities(table, tuples, window, floors)
    kept = exact >= floors + 1e-12      # (a sum within rounding of its floor may go either way)
    np.testing.assert_allclose(total[kept], exact[kept], rtol=0, atol=1e-12)
    assert (total[told] == 0).all() and (first[told] == NO_TIME).all()
    assert (last[told] == -NO_TIME).all()
    assert (lo[told] == -NO_TIME).all() and (hi[told] == NO_TIME).all()


@settings(deadline=None, max_examples=20)
@given(df=archives(max_events=8), pattern=patterns(("x",), negation=True, min_items=3,
                                                   max_items=4), data=st.data())
def test_with_negation_a_tuple_told_below_its_floor_comes_back_as_below_it(df, pattern,
                                                                          data):
    df = df.drop(columns=[c for c in df.columns if c.startswith("y")])
    try:
        idx = uc.build_index(df, coordinates=("x",))
    except uc.InputError:
        return
    ctx = QueryContext(idx.event_index, pattern)
    k = len(ctx.positive)
    if not ctx.negations or k > idx.archive.n_events:
        return
    tuples = _tuples(idx.archive.n_events, k, np.zeros(k, dtype=bool))
    engine = BatchEngine(ctx)
    table = TupleTable(idx.event_index.node_table)
    exact = negated_probabilities(table, tuples, ctx.window, engine.gaps, engine.negated)[0]
    floors = np.array(data.draw(st.lists(FLOORS, min_size=len(tuples),
                                         max_size=len(tuples))))
    total, first, last, _ = negated_probabilities(table, tuples, ctx.window, engine.gaps,
                                                  engine.negated, floors)
    window = ctx.window
    length = int(window) if window != np.inf else 0
    told = np.array([surely_below(row, k, length, window != np.inf, table.arrays, f)
                     for row, f in zip(tuples, floors)], dtype=bool)
    event(f"told below: {'some' if told.any() else 'none'}")
    assert (exact[told] < floors[told] - 1e-12).all()
    kept = exact >= floors + 1e-12
    np.testing.assert_allclose(total[kept], exact[kept], rtol=0, atol=1e-12)
    assert (total[told] == 0).all() and (first[told] == NO_TIME).all()
    assert (last[told] == -NO_TIME).all()


def test_tuples_of_two_groups_out_of_order_are_told_below_a_high_floor():
    # g's event lies at 0..4, h's at 3..6: h's may come first (mass 1/5 * 1/4 at least).
    df = pd.DataFrame({"event_id": [1, 2], "group": ["g", "h"], "t_lo": [0, 3],
                       "t_hi": [4, 6], "x": [1.0, 2.0]})
    table = TupleTable(uc.build_index(df).event_index.node_table)
    pair = np.array([0, 1])
    exact = tuple_probabilities(table, pair[None, :], np.inf)[0][0]
    assert exact < 1
    assert surely_below(pair, 2, 0, False, table.arrays, 0.99)
    assert not surely_below(pair, 2, 0, False, table.arrays, exact)
    # The same events in one group: no independence to argue from, so not told.
    one = TupleTable(uc.build_index(df.assign(group="g")).event_index.node_table)
    assert not surely_below(pair, 2, 0, False, one.arrays, 0.99)
    # The window: 0..4 then 10..12 within 9 instants fails where g's lies at 0 and h's at
    # 12 (mass 1/5 * 1/3): not told below 0.9, told below 0.95.
    far = pd.DataFrame({"event_id": [1, 2], "group": ["g", "h"], "t_lo": [0, 10],
                        "t_hi": [4, 12], "x": [1.0, 2.0]})
    table = TupleTable(uc.build_index(far).event_index.node_table)
    assert tuple_probabilities(table, pair[None, :], np.inf)[0][0] > 1 - 1e-12
    assert not surely_below(pair, 2, 9, True, table.arrays, 0.9)
    assert surely_below(pair, 2, 9, True, table.arrays, 0.95)
    assert not surely_below(pair, 2, 0, False, table.arrays, 0.95)
