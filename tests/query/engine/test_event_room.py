"""Room in events judged on new tuples without building them equals the judgement on
the built tuples."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from uncertain_cep.query.engine.event_room import EventRoom
from uncertain_cep.query.engine.kernels.instants import NO_TIME


@st.composite
def _rooms_and_children(draw):
    n_events = draw(st.integers(2, 9))
    first = np.array([draw(st.integers(0, 20)) for _ in range(n_events)], dtype=np.int64)
    last = first + np.array([draw(st.integers(0, 4)) for _ in range(n_events)])
    rows = np.arange(n_events, dtype=np.int64) * 3 + 1      # archive rows, not 0..n
    k = draw(st.integers(2, 6))
    parents = draw(st.integers(1, 3))
    events = np.full((parents, k), -1, dtype=np.int64)
    earliest = np.full((parents, k), -NO_TIME, dtype=np.int64)
    latest = np.full((parents, k), NO_TIME, dtype=np.int64)
    for p in range(parents):
        taken = draw(st.lists(st.integers(0, n_events - 1), unique=True, max_size=k - 1))
        columns = sorted(draw(st.permutations(range(k)))[:len(taken)])
        for c, e in zip(columns, taken, strict=True):
            events[p, c] = rows[e]
            # A column's instants lie in its event's stretch, or narrower.
            lo = draw(st.integers(int(first[e]), int(last[e])))
            earliest[p, c], latest[p, c] = lo, draw(st.integers(lo, int(last[e])))
    owner, column, new = [], [], []
    for p in range(parents):
        free = np.flatnonzero(events[p] < 0)
        fresh = [e for e in range(n_events) if rows[e] not in events[p]]
        for _ in range(draw(st.integers(0, 4)) if fresh else 0):
            owner.append(p)
            column.append(int(draw(st.sampled_from(free.tolist()))))
            new.append(int(draw(st.sampled_from(fresh))))
    window = draw(st.sampled_from([np.inf, 3.0, 8.0, 15.0]))
    return (EventRoom(rows, first, last), events, earliest, latest,
            np.array(owner, dtype=np.int64), np.array(column, dtype=np.int64),
            np.array(new, dtype=np.int64), first, last, rows, window)


@settings(max_examples=100, deadline=None)
@given(_rooms_and_children())
def test_new_tuples_judged_unbuilt_as_when_built(case):
    (room, events, earliest, latest, owner, column, new, first, last, rows,
     window) = case
    lo, hi = first[new], last[new]
    got = room.feasible_children(events, earliest, latest, *room.stretches(events), owner,
                                 column, lo, hi, window)
    built, built_lo, built_hi = events[owner], earliest[owner], latest[owner]
    at = np.arange(len(owner))
    built[at, column], built_lo[at, column], built_hi[at, column] = rows[new], lo, hi
    assert got.tolist() == room.feasible(built, built_lo, built_hi, window).tolist()
