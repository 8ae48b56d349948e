"""The answer table (query/evaluation/answer.py): the same table whether the rows' tuples of ids
were made beforehand (as the batch engine does while its spare thread finishes) or by
the table itself, whatever the parts and the id type."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from uncertain_cep.query.evaluation.answer import Answer, answer_table, with_ids


@st.composite
def answers_in_parts(draw):
    n_events = draw(st.integers(1, 30))
    k = draw(st.integers(1, 4))
    sizes = draw(st.lists(st.integers(0, 12), min_size=1, max_size=4))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    parts = []
    for size in sizes:
        # Few distinct confidences: ties are ordered by the ids.
        parts.append(Answer(rng.integers(0, n_events, (size, k)),
                            rng.choice([0.25, 0.5, 1.0], size), rng.integers(0, 9, size),
                            rng.integers(9, 20, size)))
    ids = draw(st.sampled_from(["int", "str", "big"]))
    event_ids = {"int": np.arange(n_events, dtype=np.int64)[::-1].copy(),
                 "str": np.array([f"e{i:03d}" for i in range(n_events)], dtype=object),
                 "big": np.arange(n_events, dtype=np.uint64) * np.uint64(2**60)}[ids]
    made = draw(st.lists(st.booleans(), min_size=len(parts), max_size=len(parts)))
    return parts, event_ids, made


@settings(max_examples=30, deadline=None)
@given(case=answers_in_parts())
def test_the_table_is_the_same_with_the_rows_ids_made_beforehand(case):
    parts, event_ids, made = case
    k = parts[0].events.shape[1]
    plain = answer_table(Answer.concat(parts, k), event_ids)
    mixed = [with_ids(p, event_ids) if m else p for p, m in zip(parts, made)]
    ahead = Answer.concat(mixed, k)
    assert (ahead.ids is not None) == all(made)
    pd.testing.assert_frame_equal(answer_table(ahead, event_ids), plain)
    every = Answer.concat([with_ids(p, event_ids) for p in parts], k)
    pd.testing.assert_frame_equal(answer_table(every, event_ids), plain)
    assert all(type(v) is type(event_ids[0].item() if event_ids.dtype != object
                               else event_ids[0])
               for row in plain["events"] for v in row)


def test_uint64_ids_past_2_63_order_ties_as_numbers():
    # Their sort ranks are packed as offsets from the least id, taken in uint64.
    event_ids = np.array([2**63 + 5, 2**63, 2**63 + 1], dtype=np.uint64)
    answer = Answer(np.array([[0], [1], [2]]), np.full(3, 0.5), np.zeros(3, dtype=np.int64),
                    np.ones(3, dtype=np.int64))
    table = answer_table(answer, event_ids)
    assert [e[0] for e in table["events"]] == [2**63, 2**63 + 1, 2**63 + 5]


@st.composite
def answers_with_ties(draw):
    n_events = draw(st.integers(1, 40))
    k = draw(st.integers(1, 12))
    size = draw(st.integers(0, 40))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    # Few distinct confidences (ties ordered by the ids), some equal only up to noise.
    base = rng.choice([0.25, 0.5, 1.0, 1 / 3], size)
    conf = base * np.where(rng.random(size) < 0.3, 1 + 1e-15, 1.0)
    if draw(st.booleans()):
        conf = rng.random(size)
    ids = draw(st.sampled_from(["int", "str", "big"]))
    event_ids = {"int": rng.permutation(np.arange(n_events, dtype=np.int64) * 7 - 50),
                 "str": np.array([f"e{i:03d}" for i in rng.permutation(n_events)],
                                 dtype=object),
                 "big": rng.permutation(np.arange(n_events, dtype=np.uint64))
                 * np.uint64(2**59)}[ids]
    return Answer(rng.integers(0, n_events, (size, k)), conf, rng.integers(0, 9, size),
                  rng.integers(9, 20, size)), event_ids


@settings(max_examples=150, deadline=None)
@given(case=answers_with_ties())
def test_rows_are_sorted_by_confidence_descending_then_by_their_event_ids(case):
    answer, event_ids = case
    table = answer_table(answer, event_ids)
    # Python's own order of (-confidence to 12 digits, the tuple of ids), stable.
    ids = [tuple(event_ids[row].tolist()) for row in answer.events]
    conf = np.round(answer.confidence, 12)
    expected = sorted(range(len(answer)), key=lambda i: (-conf[i], ids[i]))
    assert list(table["events"]) == [ids[i] for i in expected]
    assert table["t_first"].tolist() == answer.t_first[expected].tolist()
