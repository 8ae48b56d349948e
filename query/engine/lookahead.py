"""Look-ahead windows: the instants an item can take so that the pattern can still be
completed.

SEMANTICS A4 conditions 1-2 place each positive item strictly between its matched neighbours
and the whole tuple within the window.
:func:`~uncertain_cep.query.engine.item_windows.item_windows` applies them with one instant of
room per unmatched item in between. Here the room is measured on the candidates themselves:
the unmatched items between an item and its matched neighbour must each find a candidate
instant, in order, strictly increasing. Chaining "the next candidate instant of item j after
x" from the earlier neighbour gives the earliest instant the item can take; chaining "the
previous candidate instant" back from the later neighbour gives the latest. After the last
matched item, the later neighbour is the window's end as seen from the latest instant the
items before the first matched one can start at; before the first matched item,
symmetrically, the window's start as seen from the earliest end.

Only instants are chained (not events, groups or orders), so the windows hold every
instant a completion can use: an entry loses only candidates no completion of it can
reach. Long patterns over sparse symbols gain most: a prefix whose remaining items cannot
fit in the window is cut at once instead of growing until the item that finds no room.

>>> chains = CandidateInstants([np.array([0, 5]), np.array([2, 9]), np.array([3, 10])])
>>> nodes = np.array([[-1, -1, -1]])
>>> instant = np.zeros(0, dtype=np.int64)
>>> lo, hi = chains.tighten(nodes, instant, 1, np.array([-100]), np.array([100]), 7.0)
>>> (int(lo[0]), int(hi[0]))   # item 1 needs item 0 before it and item 2 after it
(1, 9)
"""

from __future__ import annotations

import numba
import numpy as np

from uncertain_cep.query.engine.kernels.core import KERNEL_LOCK
from uncertain_cep.query.engine.kernels.instants import NO_TIME

__all__ = ["CandidateInstants"]


class CandidateInstants:
    """Per positive item, the distinct instants of its candidate nodes, sorted.

    Parameters
    ----------
    instants
        Per item, its candidates' instants in ascending order (repeats allowed).
    """

    def __init__(self, instants: list[np.ndarray]) -> None:
        distinct = [np.unique(np.asarray(t, dtype=np.int64)) for t in instants]
        self.offsets = np.concatenate([[0], np.cumsum([len(t) for t in distinct])]).astype(
            np.int64)
        self.instants = (np.concatenate(distinct) if distinct
                         else np.zeros(0, dtype=np.int64))

    def tighten(self, nodes: np.ndarray, instant: np.ndarray, item: int, lo: np.ndarray,
                hi: np.ndarray, window: float) -> tuple[np.ndarray, np.ndarray]:
        """``lo``/``hi`` (item ``item``'s windows in the entries ``nodes``) narrowed to the
        instants from which the unmatched items can still be placed (module docstring).
        Windows no completion can use come out empty (``lo > hi``)."""
        length, bounded = (0, False) if window == np.inf else (int(window), True)
        with KERNEL_LOCK:
            return _tighten(np.ascontiguousarray(nodes, dtype=np.int64), instant, int(item),
                            np.ascontiguousarray(lo, dtype=np.int64),
                            np.ascontiguousarray(hi, dtype=np.int64), self.instants,
                            self.offsets, length, bounded)


    def tuple_window(self, events: np.ndarray, earliest: np.ndarray, latest: np.ndarray,
                     item: int, window: float) -> tuple[np.ndarray, np.ndarray]:
        """Item ``item``'s window in each partial tuple (rows of ``events``, -1 where
        unmatched, with each column's ``earliest`` and ``latest`` instant), narrowed as
        :meth:`tighten` narrows it: its start from the earliest instants, its end from
        the latest, in one pass (either way no completion is lost).

        >>> chains = CandidateInstants([np.array([0, 5]), np.array([2, 9]),
        ...                             np.array([3, 10])])
        >>> events = np.array([[7, -1, -1]])
        >>> lo, hi = chains.tuple_window(events, np.array([[0, 0, 0]]),
        ...                              np.array([[5, 0, 0]]), 1, 7.0)
        >>> (int(lo[0]), int(hi[0]))   # after item 0, before item 2's last instant 10
        (1, 9)
        """
        length, bounded = (0, False) if window == np.inf else (int(window), True)
        with KERNEL_LOCK:
            return _tuple_window(np.ascontiguousarray(events, dtype=np.int64),
                                 np.ascontiguousarray(earliest, dtype=np.int64),
                                 np.ascontiguousarray(latest, dtype=np.int64), int(item),
                                 self.instants, self.offsets, length, bounded)


@numba.njit(cache=True, nogil=True)
def _next(instants: np.ndarray, offsets: np.ndarray, j: int, x: int) -> int:
    """The smallest candidate instant of item ``j`` after ``x`` (NO_TIME: none)."""
    a, b = offsets[j], offsets[j + 1]
    if x >= NO_TIME:
        return NO_TIME
    p = a + np.searchsorted(instants[a:b], x, side="right")
    return instants[p] if p < b else NO_TIME


@numba.njit(cache=True, nogil=True)
def _previous(instants: np.ndarray, offsets: np.ndarray, j: int, x: int) -> int:
    """The largest candidate instant of item ``j`` before ``x`` (-NO_TIME: none)."""
    a, b = offsets[j], offsets[j + 1]
    if x <= -NO_TIME:
        return -NO_TIME
    p = a + np.searchsorted(instants[a:b], x, side="left") - 1
    return instants[p] if p >= a else -NO_TIME


@numba.njit(cache=True, nogil=True)
def _forward(instants: np.ndarray, offsets: np.ndarray, x: int, first: int,
             stop: int) -> int:
    """The earliest instant item ``stop - 1`` can take when items ``first..stop-1`` follow
    an item at ``x`` (``x`` itself when there are none; NO_TIME: impossible)."""
    for j in range(first, stop):
        x = _next(instants, offsets, j, x)
    return x


@numba.njit(cache=True, nogil=True)
def _backward(instants: np.ndarray, offsets: np.ndarray, x: int, last: int,
              stop: int) -> int:
    """The latest instant item ``stop + 1`` can take when items ``stop+1..last`` precede
    an item at ``x`` (``x`` itself when there are none; -NO_TIME: impossible)."""
    for j in range(last, stop, -1):
        x = _previous(instants, offsets, j, x)
    return x


@numba.njit(cache=True, nogil=True, inline="always")
def _earliest_start(instants: np.ndarray, offsets: np.ndarray, item: int, k: int,
                    before: int, after: int, last: int, at_before: int, at_last: int,
                    length: int, bounded: bool) -> int:
    """The earliest instant item ``item`` can take, chained from the matched item
    ``before`` it (at ``at_before``) or else from the window's start as the last matched
    item (``last``, at ``at_last``) leaves it; NO_TIME: none."""
    if before >= 0:
        x = _forward(instants, offsets, at_before, before + 1, item)
    elif bounded and after >= 0:
        end = _forward(instants, offsets, at_last, last + 1, k)
        x = (_forward(instants, offsets, end - length - 1, 0, item) if end < NO_TIME
             else NO_TIME)
    else:
        x = _forward(instants, offsets, -NO_TIME + 1, 0, item)
    return x + 1 if x < NO_TIME else NO_TIME


@numba.njit(cache=True, nogil=True, inline="always")
def _latest_end(instants: np.ndarray, offsets: np.ndarray, item: int, k: int,
                before: int, after: int, first: int, at_after: int, at_first: int,
                length: int, bounded: bool) -> int:
    """The latest instant item ``item`` can take, chained back from the matched item
    ``after`` it (at ``at_after``) or else from the window's end as the first matched
    item (``first``, at ``at_first``) leaves it; -NO_TIME: none."""
    if after >= 0:
        x = _backward(instants, offsets, at_after, after - 1, item)
    elif bounded and before >= 0:
        start = _backward(instants, offsets, at_first, first - 1, -1)
        x = (_backward(instants, offsets, start + length + 1, k - 1, item)
             if start > -NO_TIME else -NO_TIME)
    else:
        x = _backward(instants, offsets, NO_TIME - 1, k - 1, item)
    return x - 1 if x > -NO_TIME else -NO_TIME


@numba.njit(cache=True, nogil=True, parallel=True)
def _tighten(nodes: np.ndarray, instant: np.ndarray, item: int, lo: np.ndarray,
             hi: np.ndarray, instants: np.ndarray, offsets: np.ndarray, length: int,
             bounded: bool) -> tuple[np.ndarray, np.ndarray]:
    """Item ``item``'s windows in a batch's entries narrowed by the look-ahead, entries
    in parallel (:meth:`CandidateInstants.tighten`; docs/design.md, Look-ahead windows).

    The start is raised to the earliest instant chained forward through the unmatched
    items' candidate instants from the matched item before ``item``, or, with none
    before it, from the window's start that the last matched item leaves (else from
    item 0's first candidate instant); the end is lowered likewise to the latest
    instant chained back from the matched item after it, or from the window's end that
    the first matched item leaves (:func:`_earliest_start`, :func:`_latest_end`).

    Parameters
    ----------
    nodes : (n, k) int64
        The entries' nodes (-1 where unmatched).
    instant : (nodes,) int64
        The node table's instant per node.
    item : int
        The positive item whose windows these are.
    lo, hi : (n,) int64
        The windows to narrow (:func:`~uncertain_cep.query.engine.item_windows.item_windows`).
    instants, offsets : int64
        :class:`CandidateInstants`: each item's distinct candidate instants, sorted,
        item ``j``'s at ``offsets[j]:offsets[j + 1]``.
    length, bounded
        The window ``L`` in instants, and whether there is one.

    Returns
    -------
    out_lo, out_hi : (n,) int64
        The narrowed windows; ``out_lo > out_hi`` where no completion can use any
        instant.
    """
    n, k = nodes.shape
    out_lo = lo.copy()
    out_hi = hi.copy()
    for r in numba.prange(n):
        before, after, first, last = -1, -1, -1, -1
        for c in range(k):
            if nodes[r, c] < 0:
                continue
            if first < 0:
                first = c
            last = c
            if c < item:
                before = c
            elif c > item and after < 0:
                after = c
        # (Where a column index is -1 its instant is not read.)
        unused = 0
        low = _earliest_start(instants, offsets, item, k, before, after, last,
                              instant[nodes[r, before]] if before >= 0 else unused,
                              instant[nodes[r, last]] if last >= 0 else unused, length,
                              bounded)
        high = _latest_end(instants, offsets, item, k, before, after, first,
                           instant[nodes[r, after]] if after >= 0 else unused,
                           instant[nodes[r, first]] if first >= 0 else unused, length,
                           bounded)
        out_lo[r] = max(out_lo[r], low)
        out_hi[r] = min(out_hi[r], high)
    return out_lo, out_hi


@numba.njit(cache=True, nogil=True, parallel=True)
def _tuple_window(events: np.ndarray, earliest: np.ndarray, latest: np.ndarray, item: int,
                  instants: np.ndarray, offsets: np.ndarray, length: int, bounded: bool
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Item ``item``'s window in each partial tuple, narrowed by the look-ahead, tuples
    in parallel (:meth:`CandidateInstants.tuple_window`; docs/design.md, Look-ahead
    windows).

    The window from the matched columns (as
    :func:`~uncertain_cep.query.engine.item_windows.windows_from_instants`: SEMANTICS A4
    conditions 1-2) takes its start from their earliest instants and its end from
    their latest; then, as in :func:`_tighten`, the start is chained forward from the
    earliest instants and the end back from the latest.

    Parameters
    ----------
    events : (n, k) int64
        The tuples' events (archive rows, -1 where unmatched).
    earliest, latest : (n, k) int64
        Per tuple and column, the earliest and latest instant of its event.
    item : int
        The positive item whose windows these are.
    instants, offsets : int64
        :class:`CandidateInstants`: each item's distinct candidate instants, sorted,
        item ``j``'s at ``offsets[j]:offsets[j + 1]``.
    length, bounded
        The window ``L`` in instants, and whether there is one.

    Returns
    -------
    out_lo, out_hi : (n,) int64
        Per tuple, the least and greatest instant ``item`` may take; ``out_lo >
        out_hi`` where no completion can use any instant.
    """
    n, k = events.shape
    out_lo = np.empty(n, dtype=np.int64)
    out_hi = np.empty(n, dtype=np.int64)
    for r in numba.prange(n):
        before, after, first, last = -1, -1, -1, -1
        lo, hi = -NO_TIME, NO_TIME
        for c in range(k):
            if events[r, c] < 0:
                continue
            if first < 0:
                first = c
            last = c
            if c < item:
                before = c
                lo = max(lo, earliest[r, c] + (item - c))
            elif c > item:
                if after < 0:
                    after = c
                hi = min(hi, latest[r, c] - (c - item))
        if bounded and first >= 0:
            lo = max(lo, earliest[r, last] + (k - 1 - last) - length + item)
            hi = min(hi, latest[r, first] - first + length - (k - 1 - item))
        # As :func:`_tighten`: the start chained from the earliest instants, the end
        # from the latest.
        out_lo[r] = max(lo, _earliest_start(instants, offsets, item, k, before, after,
                                            last, earliest[r, max(before, 0)],
                                            earliest[r, max(last, 0)], length, bounded))
        out_hi[r] = min(hi, _latest_end(instants, offsets, item, k, before, after, first,
                                        latest[r, max(after, 0)], latest[r, max(first, 0)],
                                        length, bounded))
    return out_lo, out_hi
