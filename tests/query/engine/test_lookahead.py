"""The look-ahead windows never cut an instant some completion can use, and do cut what
no completion can reach (checked against a direct search for completions)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from uncertain_cep.query.engine.item_windows import windows_from_instants
from uncertain_cep.query.engine.kernels.instants import NO_TIME
from uncertain_cep.query.engine.lookahead import CandidateInstants

HORIZON = 14


def _completes(values: list[int | None], candidates: list[list[int]], window: float) -> bool:
    """Whether the unmatched items (None) can take candidate instants so that all items
    are strictly increasing and span at most ``window``: for each first instant, the
    earliest instant of each later item (greedy) gives the earliest end."""
    k = len(values)
    firsts = [values[0]] if values[0] is not None else candidates[0]
    for first in firsts:
        t, ok = first, True
        for j in range(1, k):
            if values[j] is not None:
                ok = values[j] > t
                t = values[j]
            else:
                later = [c for c in candidates[j] if c > t]
                ok = bool(later)
                t = min(later) if later else t
            if not ok:
                break
        if ok and t - first <= window:
            return True
    return False


@st.composite
def _cases(draw):
    k = draw(st.integers(3, 5))
    candidates = [sorted(draw(st.sets(st.integers(0, HORIZON), min_size=1, max_size=6)))
                  for _ in range(k)]
    item = draw(st.integers(0, k - 1))
    matched = {c: draw(st.integers(0, HORIZON)) for c in range(k)
               if c != item and draw(st.booleans())}
    window = draw(st.sampled_from([math.inf, 3, 5, 8, 12]))
    return k, candidates, item, matched, window


@settings(max_examples=100, deadline=None)
@given(_cases())
def test_every_instant_a_completion_uses_stays_in_the_window(case):
    k, candidates, item, matched, window = case
    instant = np.array(sorted(matched.values()) or [0], dtype=np.int64)
    nodes = np.full((1, k), -1, dtype=np.int64)
    for c, t in matched.items():
        nodes[0, c] = int(np.searchsorted(instant, t))
    lo, hi = CandidateInstants([np.array(c) for c in candidates]).tighten(
        nodes, instant, item, np.array([-100]), np.array([100]), float(window))
    for x in range(-2, HORIZON + 3):
        values = [matched.get(c) for c in range(k)]
        values[item] = x
        if _completes(values, candidates, window):
            assert lo[0] <= x <= hi[0], (x, int(lo[0]), int(hi[0]))


def test_a_prefix_whose_remaining_items_cannot_fit_in_the_window_gets_no_candidates():
    # Items 1 and 2 have candidates only at 10 and 20: after item 0 at 5, item 1 must
    # come before the last candidate of item 2 that the window (8) leaves: none.
    chains = CandidateInstants([np.array([5]), np.array([6, 10]), np.array([20])])
    nodes, instant = np.array([[0, -1, -1]]), np.array([5])
    lo, hi = chains.tighten(nodes, instant, 1, np.array([6]), np.array([13]), 8.0)
    assert lo[0] > hi[0]
    # Without a window item 1 may take anything from 6 up to just before 20.
    lo, hi = chains.tighten(nodes, instant, 1, np.array([6]), np.array([100]), math.inf)
    assert (int(lo[0]), int(hi[0])) == (6, 19)


@st.composite
def _tuple_cases(draw):
    # Partial tuples with a stretch of instants per matched column (earliest <= latest).
    k, candidates, item, _, window = draw(_cases())
    rows = draw(st.integers(1, 4))
    events = np.full((rows, k), -1, dtype=np.int64)
    earliest = np.full((rows, k), -NO_TIME, dtype=np.int64)
    latest = np.full((rows, k), NO_TIME, dtype=np.int64)
    for r in range(rows):
        for c in range(k):
            if c != item and draw(st.booleans()):
                lo = draw(st.integers(0, HORIZON))
                events[r, c] = c
                earliest[r, c], latest[r, c] = lo, lo + draw(st.integers(0, 3))
    return candidates, item, window, events, earliest, latest


@settings(max_examples=100, deadline=None)
@given(_tuple_cases())
def test_a_tuples_window_in_one_pass_equals_its_start_and_end_narrowed_apart(case):
    # tuple_window fuses the plain window of the earliest instants (its start) and of the
    # latest (its end) with tighten's chains from each: the same numbers.
    candidates, item, window, events, earliest, latest = case
    chains = CandidateInstants([np.array(c) for c in candidates])
    matched = events >= 0
    n, k = events.shape
    at = np.where(matched, np.arange(n * k).reshape(n, k), -1)
    lo = windows_from_instants(earliest, matched, item, float(window))[0]
    hi = windows_from_instants(latest, matched, item, float(window))[1]
    lo = chains.tighten(at, earliest.ravel(), item, lo, hi, float(window))[0]
    hi = chains.tighten(at, latest.ravel(), item, lo, hi, float(window))[1]
    got_lo, got_hi = chains.tuple_window(events, earliest, latest, item, float(window))
    assert got_lo.tolist() == lo.tolist()
    assert got_hi.tolist() == hi.tolist()
