"""The groups a query's candidates meet hold every event of every tuple it answers, and
the reaches of candidates near int64's ends or of very long windows are exact."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from random_archives import archives, patterns

import uncertain_cep as uc
from uncertain_cep.errors import InputError
from uncertain_cep.query.engine.inputs import QueryInputs
from uncertain_cep.query.engine.reachable_groups import groups_met, meeting, reaches
from uncertain_cep.query.evaluation.context import QueryContext
from uncertain_cep.query.language.parse import bind_query


@settings(max_examples=30, deadline=None)
@given(df=archives(max_groups=5, max_events=10), pattern=patterns())
def test_every_event_of_an_answered_tuple_is_in_a_group_the_candidates_meet(df, pattern):
    try:
        idx = uc.build_index(df)
    except InputError:
        return
    index = idx.event_index
    pattern = bind_query(pattern, index.archive.time_axis)
    inputs = QueryInputs(QueryContext(index, pattern))
    ctx = inputs.ctx
    groups = set(groups_met([inputs.item_rows(j) for j in range(inputs.k)],
                            [inputs.negated_rows(j) for j in range(len(ctx.negations))],
                            index.event_group, index.event_t_min, index.event_t_max,
                            ctx.window).tolist())
    answer = idx.query(pattern, strategy="possible_worlds")
    row_of = {e: r for r, e in enumerate(index.archive.event_ids.tolist())}
    for events in answer["events"]:
        assert {int(index.event_group[row_of[e]]) for e in events} <= groups


def test_reaches_saturate_at_int64s_ends_and_merge_touching_intervals():
    top, bottom = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    starts, ends = reaches(np.array([top - 1, bottom + 1, 10, 16]),
                           np.array([top, bottom + 2, 12, 17]), 3.5)
    assert starts.tolist() == [bottom, 7, top - 4]
    assert ends.tolist() == [bottom + 5, 20, top]
    assert meeting(starts, ends, np.array([6, 21, top - 4]),
                   np.array([6, 30, top - 4])).tolist() == [False, False, True]


def test_a_window_too_long_to_count_in_instants_reaches_every_candidate():
    rows = np.array([0, 1])
    got = groups_met([rows[:1], rows[1:]], [], np.array([0, 1]), np.array([0, 2**62]),
                     np.array([0, 2**62]), 2.0**60)
    assert got.tolist() == [0, 1]
