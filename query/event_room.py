"""Room in events: whether a partial tuple's unmatched items can still each find an event
of their own, for pruning tuples no completion exists for.

SEMANTICS A4 matches a tuple of *distinct* events, at strictly increasing instants
within the window. The look-ahead (:mod:`~uncertain_cep.query.lookahead`) chains the
instants of candidate nodes, and an event with several nodes counts there once per
node; so a pattern of more items than there are events in its window can grow partial
tuples until the last items find nothing (on localization, 27 positive items in a window
of 87 instants that holds about 22 events: six million partial tuples, then none).

Here the unmatched items between two matched columns need that many distinct events,
none of the tuple's own, with an instant strictly between the earliest the earlier
column can take and the latest the later one can; the items before the first matched
column, after the last, and all unmatched items together likewise within the window
around the matched ones. An event is counted where its stretch of instants meets the
range (a superset of where it can lie), so a tuple that fails holds in no world of any
completion.

>>> room = EventRoom(np.array([10, 11, 12, 13]), np.array([2, 4, 6, 8]),
...                  np.array([3, 5, 7, 9]))
>>> events = np.array([[10, -1, -1, 13], [10, -1, -1, -1]])
>>> earliest, latest = np.array([[2, 0, 0, 8], [2, 0, 0, 0]]), np.array([[3, 0, 0, 9]] * 2)
>>> room.feasible(events, earliest, latest, np.inf).tolist()   # 11, 12 lie between
[True, True]
>>> room.feasible(events[:1], earliest[:1], latest[:1] - 4, np.inf).tolist()  # not here
[False]
"""

from __future__ import annotations

import numba
import numpy as np

from uncertain_cep.query.kernel_threads import KERNEL_LOCK

__all__ = ["EventRoom"]


class EventRoom:
    """The events some positive item may take (``rows``), each with its earliest and
    latest instant."""

    def __init__(self, rows: np.ndarray, first: np.ndarray, last: np.ndarray) -> None:
        order = np.argsort(rows, kind="stable")
        self.rows = np.asarray(rows, dtype=np.int64)[order]
        self.first = np.asarray(first, dtype=np.int64)[order]
        self.last = np.asarray(last, dtype=np.int64)[order]
        # Events meeting a range: those starting by its end less those ending before
        # its start (which start before its end too): two binary searches.
        self.starts, self.ends = np.sort(self.first), np.sort(self.last)

    def feasible(self, events: np.ndarray, earliest: np.ndarray, latest: np.ndarray,
                 window: float) -> np.ndarray:
        """Per partial tuple (rows of ``events``, -1 where unmatched, with each column's
        ``earliest`` and ``latest`` instant over the worlds it sums over, or wider):
        whether every run of unmatched items, and all of them together, find as many
        events of their own where they can lie."""
        bounded = window != np.inf
        with KERNEL_LOCK:
            return _feasible(np.ascontiguousarray(events, dtype=np.int64),
                             np.ascontiguousarray(earliest, dtype=np.int64),
                             np.ascontiguousarray(latest, dtype=np.int64), self.rows,
                             self.first, self.last, self.starts, self.ends,
                             int(window) if bounded else 0, bounded)


@numba.njit(cache=True, nogil=True)
def _events_in(a: int, b: int, own_first: np.ndarray, own_last: np.ndarray, n_own: int,
               starts: np.ndarray, ends: np.ndarray) -> int:
    """How many events, less the tuple's ``n_own`` own ones (their stretches), have a
    stretch meeting instants ``a`` .. ``b``."""
    if a > b:
        return 0
    count = int(np.searchsorted(starts, b, side="right")
                - np.searchsorted(ends, a, side="left"))
    for i in range(n_own):
        if own_first[i] <= b and own_last[i] >= a:
            count -= 1
    return count


@numba.njit(cache=True, nogil=True, parallel=True)
def _feasible(events: np.ndarray, earliest: np.ndarray, latest: np.ndarray,
              rows: np.ndarray, first: np.ndarray, last: np.ndarray, starts: np.ndarray,
              ends: np.ndarray, length: int, bounded: bool) -> np.ndarray:
    n, k = events.shape
    out = np.ones(n, dtype=np.bool_)
    for r in numba.prange(n):
        own = events[r]
        c1, cm, matched = -1, -1, 0
        for c in range(k):
            if own[c] >= 0:
                if c1 < 0:
                    c1 = c
                cm = c
                matched += 1
        if matched == 0 or matched == k:
            continue
        # The tuple's own events among those counted, with their stretches (looked up
        # once, not per range).
        own_first = np.empty(matched, dtype=np.int64)
        own_last = np.empty(matched, dtype=np.int64)
        n_own = 0
        for c in range(k):
            if own[c] < 0:
                continue
            i = np.searchsorted(rows, own[c])
            if i < len(rows) and rows[i] == own[c]:
                own_first[n_own], own_last[n_own] = first[i], last[i]
                n_own += 1
        ok = True
        # Runs between matched columns: strictly between the two.
        p = c1
        for q in range(c1 + 1, cm + 1):
            if own[q] < 0:
                continue
            if q - p > 1 and _events_in(earliest[r, p] + 1, latest[r, q] - 1, own_first,
                                        own_last, n_own, starts, ends) < q - p - 1:
                ok = False
                break
            p = q
        if ok and bounded:
            # Within the window around the matched columns: before the first, after the
            # last, and every unmatched item together.
            start, end = earliest[r, cm] - length, latest[r, c1] + length
            before = _events_in(start, latest[r, c1] - 1, own_first, own_last, n_own,
                                starts, ends)
            after = _events_in(earliest[r, cm] + 1, end, own_first, own_last, n_own,
                               starts, ends)
            around = _events_in(start, end, own_first, own_last, n_own, starts, ends)
            ok = before >= c1 and after >= k - 1 - cm and around >= k - matched
        out[r] = ok
    return out
