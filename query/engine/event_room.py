"""Room in events: whether a partial tuple's unmatched items can still each find an event
of their own, for pruning tuples no completion exists for.

SEMANTICS A4 matches a tuple of *distinct* events, at strictly increasing instants
within the window. The look-ahead (:mod:`~uncertain_cep.query.engine.lookahead`) chains the
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

from uncertain_cep.query.engine.kernels.core import KERNEL_LOCK
from uncertain_cep.query.engine.kernels.instants import NO_TIME

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
        n = len(events)
        none = np.full(n, -1, dtype=np.int64)
        return self.feasible_children(events, earliest, latest, *self.stretches(events),
                                      np.arange(n, dtype=np.int64), none, none, none, window)

    def stretches(self, events: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each event's earliest and latest instant (NO_TIME and -NO_TIME where -1 or
        not one of the room's)."""
        events = np.asarray(events, dtype=np.int64)
        first = np.full(events.shape, NO_TIME, dtype=np.int64)
        last = np.full(events.shape, -NO_TIME, dtype=np.int64)
        if len(self.rows):
            at = np.minimum(np.searchsorted(self.rows, events), len(self.rows) - 1)
            known = (events >= 0) & (self.rows[at] == events)
            first[known], last[known] = self.first[at[known]], self.last[at[known]]
        return first, last

    def feasible_children(self, events: np.ndarray, earliest: np.ndarray,
                          latest: np.ndarray, own_first: np.ndarray, own_last: np.ndarray,
                          owner: np.ndarray, column: np.ndarray, lo: np.ndarray,
                          hi: np.ndarray, window: float) -> np.ndarray:
        """:meth:`feasible` for new tuples made from the tuples ``events`` (with their
        ``earliest`` and ``latest`` instants, and their events' stretches ``own_first``
        .. ``own_last``: :meth:`stretches`) without building them: new tuple ``r`` is row
        ``owner[r]`` with a new event in column ``column[r]`` (none where -1), whose
        stretch is ``lo[r]`` .. ``hi[r]`` (the event is known by its stretch alone). Most
        new tuples of long patterns fail here (58% at localization n = 30), so they are
        judged before their matrices exist.

        >>> room = EventRoom(np.array([10, 11, 12, 13]), np.array([2, 4, 6, 8]),
        ...                  np.array([3, 5, 7, 9]))
        >>> events = np.array([[10, -1, -1, -1]])
        >>> earliest, latest = np.array([[2, 0, 0, 0]]), np.array([[3, 0, 0, 0]])
        >>> room.feasible_children(events, earliest, latest, *room.stretches(events),
        ...                        np.array([0, 0]), np.array([3, 3]),
        ...                        np.array([8, 4]), np.array([9, 5]), np.inf).tolist()
        [True, False]

        (Event 13 at 8-9 fits; event 11 at 4-5 leaves one event, 12, for the two items
        between.)
        """
        bounded = window != np.inf
        with KERNEL_LOCK:
            return _feasible(np.ascontiguousarray(events, dtype=np.int64),
                             np.ascontiguousarray(earliest, dtype=np.int64),
                             np.ascontiguousarray(latest, dtype=np.int64),
                             np.ascontiguousarray(own_first, dtype=np.int64),
                             np.ascontiguousarray(own_last, dtype=np.int64),
                             np.ascontiguousarray(owner, dtype=np.int64),
                             np.ascontiguousarray(column, dtype=np.int64),
                             np.ascontiguousarray(lo, dtype=np.int64),
                             np.ascontiguousarray(hi, dtype=np.int64), self.starts,
                             self.ends, int(window) if bounded else 0, bounded)


@numba.njit(cache=True, nogil=True)
def _events_in(a: int, b: int, own_first: np.ndarray, own_last: np.ndarray, col: int,
               new_first: int, new_last: int, starts: np.ndarray, ends: np.ndarray) -> int:
    """How many events, less the tuple's own ones (their stretches ``own_first`` ..
    ``own_last``, column ``col``'s replaced by ``new_first`` .. ``new_last``), have a
    stretch meeting instants ``a`` .. ``b``."""
    if a > b:
        return 0
    count = int(np.searchsorted(starts, b, side="right")
                - np.searchsorted(ends, a, side="left"))
    for i in range(len(own_first)):
        f, g = (new_first, new_last) if i == col else (own_first[i], own_last[i])
        if f <= b and g >= a:
            count -= 1
    return count


@numba.njit(cache=True, nogil=True, parallel=True)
def _feasible(events: np.ndarray, earliest: np.ndarray, latest: np.ndarray,
              own_first: np.ndarray, own_last: np.ndarray, owner: np.ndarray,
              column: np.ndarray, lo: np.ndarray, hi: np.ndarray,
              starts: np.ndarray, ends: np.ndarray, length: int, bounded: bool
              ) -> np.ndarray:
    """Room in events for new tuples, each judged from its parent's row
    (:meth:`EventRoom.feasible_children`; docs/design.md, Room in events).

    A new tuple fails when, for some run of unmatched items between two matched
    columns, fewer events than the run has items have a stretch meeting the instants
    strictly between the earliest instant of the earlier column and the latest of the
    later one; or, with a window, when the items before the first matched column,
    those after the last, or all unmatched items together find fewer such events
    within ``length`` of the matched columns. Only the room's events count, never the
    tuple's own (SEMANTICS A4: distinct events at strictly increasing instants within
    the window).

    Parameters
    ----------
    events : (p, k) int64
        The parent tuples' events (archive rows, -1 where unmatched).
    earliest, latest : (p, k) int64
        The parents' earliest and latest instant per column.
    own_first, own_last : (p, k) int64
        The stretch of each parent's events (NO_TIME and -NO_TIME where unmatched).
    owner : (n,) int64
        Per new tuple, its parent's row.
    column : (n,) int64
        The column its new event takes (-1: none; the parent itself is judged).
    lo, hi : (n,) int64
        The new event's stretch (its earliest and latest instant).
    starts, ends : int64
        The earliest and the latest instants of the room's events, each sorted.
    length, bounded
        The window ``L`` in instants, and whether there is one.

    Returns
    -------
    (n,) bool
        Whether each new tuple may still have a completion (True also where no column
        or every column is matched).
    """
    n, k = len(owner), events.shape[1]
    out = np.ones(n, dtype=np.bool_)
    for r in numba.prange(n):
        p, col = owner[r], column[r]
        own, first, last = events[p], earliest[p], latest[p]
        f_own, l_own = own_first[p], own_last[p]
        c1, cm, matched = -1, -1, 0
        for c in range(k):
            if own[c] >= 0 or c == col:
                if c1 < 0:
                    c1 = c
                cm = c
                matched += 1
        if matched == 0 or matched == k:
            continue
        new_lo, new_hi = (lo[r], hi[r]) if col >= 0 else (0, 0)
        ok = True
        # Runs between matched columns: strictly between the two.
        q0 = c1
        for q in range(c1 + 1, cm + 1):
            if own[q] < 0 and q != col:
                continue
            if q - q0 > 1:
                a = (new_lo if q0 == col else first[q0]) + 1
                b = (new_hi if q == col else last[q]) - 1
                if _events_in(a, b, f_own, l_own, col, new_lo, new_hi, starts,
                              ends) < q - q0 - 1:
                    ok = False
                    break
            q0 = q
        if ok and bounded:
            # Within the window around the matched columns: before the first, after the
            # last, and every unmatched item together.
            last_lo = new_lo if cm == col else first[cm]
            first_hi = new_hi if c1 == col else last[c1]
            start, end = last_lo - length, first_hi + length
            before = _events_in(start, first_hi - 1, f_own, l_own, col, new_lo, new_hi,
                                starts, ends)
            after = _events_in(last_lo + 1, end, f_own, l_own, col, new_lo, new_hi,
                               starts, ends)
            around = _events_in(start, end, f_own, l_own, col, new_lo, new_hi, starts,
                                ends)
            ok = before >= c1 and after >= k - 1 - cm and around >= k - matched
        out[r] = ok
    return out
