"""The instants an item can take in each entry or tuple: strictly after the matched
items before it and before those after it, with room for the items between, and within
the pattern's window of the matched items (SEMANTICS A4 conditions 1-2), for whole
batches at once (compiled).

>>> instants = np.array([[2, -1, 9]]); matched = np.array([[True, False, True]])
>>> windows_from_instants(instants, matched, 1, 10.0)
(array([3]), array([8]))
"""

from __future__ import annotations

import numba
import numpy as np

from uncertain_cep.index.node_table import NodeTable
from uncertain_cep.query.engine.batches import Batch
from uncertain_cep.query.engine.kernels.core import KERNEL_LOCK
from uncertain_cep.query.engine.kernels.instants import NO_TIME

__all__ = ["every_item_window", "item_windows", "windows_from_instants"]


def item_windows(table: NodeTable, batch: Batch, item: int, window: float
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The instants positive item ``item`` can take in each entry: strictly after the
    matched items before it and before those after it, with room for the items between,
    and within the pattern's window of the matched items (SEMANTICS A4 conditions 1-2;
    the columnar form of :meth:`~uncertain_cep.query.evaluation.context.QueryContext.item_window`).
    Empty windows have ``lo > hi``."""
    with KERNEL_LOCK:
        return _item_windows(np.ascontiguousarray(batch.nodes, dtype=np.int64),
                             table.instant, int(item), *_window_length(window))


def windows_from_instants(instants: np.ndarray, matched: np.ndarray, item: int,
                          window: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`item_windows` from an instants matrix and its matched mask."""
    with KERNEL_LOCK:
        return _windows_from_instants(np.ascontiguousarray(instants, dtype=np.int64),
                                      np.ascontiguousarray(matched, dtype=np.bool_),
                                      int(item), *_window_length(window))


def every_item_window(earliest: np.ndarray, latest: np.ndarray, matched: np.ndarray,
                      window: float) -> tuple[np.ndarray, np.ndarray]:
    """Per row and item, :func:`windows_from_instants`' lower bound from the
    ``earliest`` instants and its upper bound from the ``latest`` (``(n, k)`` each):
    every item's window over all entries of a tuple, in one pass.

    >>> m = np.array([[True, False, True]])
    >>> lo, hi = every_item_window(np.array([[2, 0, 9]]), np.array([[4, 0, 9]]), m, 10)
    >>> lo.tolist(), hi.tolist()   # the unmatched item 1 lies in [3, 8]
    ([[-1, 3, 4]], [[7, 8, 14]])
    """
    with KERNEL_LOCK:
        return _every_item_window(np.ascontiguousarray(earliest, dtype=np.int64),
                                  np.ascontiguousarray(latest, dtype=np.int64),
                                  np.ascontiguousarray(matched, dtype=np.bool_),
                                  *_window_length(window))


@numba.njit(cache=True, nogil=True, parallel=True)
def _every_item_window(earliest: np.ndarray, latest: np.ndarray, matched: np.ndarray,
                       length: int, bounded: bool) -> tuple[np.ndarray, np.ndarray]:
    """Every item's window in every row at once (:func:`every_item_window`).

    Item ``i``'s lower bound is the largest ``earliest[r, c] + (i - c)`` over matched
    columns ``c < i`` and its upper bound the smallest ``latest[r, c] - (c - i)`` over
    matched ``c > i``: strictly increasing instants with one instant of room per item
    between (SEMANTICS A4 condition 1). With a window, item ``i`` also lies within
    ``length`` of the matched columns, with room for the items before and after
    (condition 2; docs/design.md, Windows). Used on tuple batches (docs/design.md,
    Tuples instead of entries).

    Parameters
    ----------
    earliest, latest : (n, k) int64
        Per row and positive item, the earliest and latest instant of its matched
        event (not read where unmatched).
    matched : (n, k) bool
        Whether each item is matched.
    length : int
        The window ``L`` in instants (read only when ``bounded``).
    bounded : bool
        Whether the pattern has a window.

    Returns
    -------
    lo, hi : (n, k) int64
        Per row and item, the least and greatest instant it may take (-NO_TIME and
        NO_TIME where nothing bounds it); ``lo > hi`` where there is none.
    """
    n, k = matched.shape
    lo = np.empty((n, k), dtype=np.int64)
    hi = np.empty((n, k), dtype=np.int64)
    for r in numba.prange(n):
        # :func:`_window_of_row` for every item at once: the bound from the columns
        # before an item is the item plus the running maximum of instant - column, the
        # bound from those after it the item plus the running minimum (k, not k^2).
        first, last = -1, -1
        for c in range(k):
            if matched[r, c]:
                if first < 0:
                    first = c
                last = c
        before, seen = 0, False
        for item in range(k):
            lo[r, item] = before + item if seen else -NO_TIME
            if matched[r, item]:
                before = earliest[r, item] - item if not seen else max(
                    before, earliest[r, item] - item)
                seen = True
        after, seen = 0, False
        for item in range(k - 1, -1, -1):
            hi[r, item] = after + item if seen else NO_TIME
            if matched[r, item]:
                after = latest[r, item] - item if not seen else min(
                    after, latest[r, item] - item)
                seen = True
        if bounded and first >= 0:
            for item in range(k):
                lo[r, item] = max(lo[r, item],
                                  earliest[r, last] + (k - 1 - last) - length + item)
                hi[r, item] = min(hi[r, item],
                                  latest[r, first] - first + length - (k - 1 - item))
    return lo, hi


def _window_length(window: float) -> tuple[int, bool]:
    return (0, False) if window == np.inf else (int(window), True)


@numba.njit(cache=True, nogil=True)
def _window_of_row(instants: np.ndarray, matched: np.ndarray, r: int, item: int,
                   length: int, bounded: bool) -> tuple[int, int]:
    """Item ``item``'s window in row ``r``, from one instant per matched column
    (SEMANTICS A4 conditions 1-2; the columnar form of
    :meth:`~uncertain_cep.query.evaluation.context.QueryContext.item_window`).

    Parameters
    ----------
    instants : (n, k) int64
        Per row and positive item, its matched instant (not read where unmatched).
    matched : (n, k) bool
        Whether each item is matched.
    r, item : int
        The row and the positive item.
    length, bounded
        The window ``L`` in instants, and whether there is one.

    Returns
    -------
    lo, hi : int
        Strictly after each matched column before ``item`` and before each one after
        it, with one instant per item between, and within ``length`` of the first and
        last matched columns with room for the items outside them: the least and
        greatest instant (-NO_TIME and NO_TIME where unbounded; ``lo > hi``: empty).
    """
    k = matched.shape[1]
    lo, hi = -NO_TIME, NO_TIME
    first, last = -1, -1
    for c in range(k):
        if not matched[r, c]:
            continue
        if first < 0:
            first = c
        last = c
        if c < item:
            lo = max(lo, instants[r, c] + (item - c))
        elif c > item:
            hi = min(hi, instants[r, c] - (c - item))
    if bounded and first >= 0:
        lo = max(lo, instants[r, last] + (k - 1 - last) - length + item)
        hi = min(hi, instants[r, first] - first + length - (k - 1 - item))
    return lo, hi


@numba.njit(cache=True, nogil=True, parallel=True)
def _windows_from_instants(instants: np.ndarray, matched: np.ndarray, item: int,
                           length: int, bounded: bool) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_window_of_row` for every row, in parallel (:func:`windows_from_instants`).

    Parameters
    ----------
    instants : (n, k) int64
        Per row and positive item, its matched instant (not read where unmatched).
    matched : (n, k) bool
        Whether each item is matched.
    item : int
        The positive item whose window is wanted.
    length, bounded
        The window ``L`` in instants, and whether there is one.

    Returns
    -------
    lo, hi : (n,) int64
        Per row, the least and greatest instant ``item`` may take (-NO_TIME and
        NO_TIME where unbounded; ``lo > hi``: empty).
    """
    n = len(matched)
    lo = np.empty(n, dtype=np.int64)
    hi = np.empty(n, dtype=np.int64)
    for r in numba.prange(n):
        lo[r], hi[r] = _window_of_row(instants, matched, r, item, length, bounded)
    return lo, hi


@numba.njit(cache=True, nogil=True, parallel=True)
def _item_windows(nodes: np.ndarray, instant: np.ndarray, item: int, length: int,
                  bounded: bool) -> tuple[np.ndarray, np.ndarray]:
    """Item ``item``'s window in each entry of a batch (:func:`item_windows`): its
    matched nodes' instants gathered, then :func:`_windows_from_instants`.

    Parameters
    ----------
    nodes : (n, k) int64
        The batch's nodes matrix (global node ids, -1 where unmatched).
    instant : (nodes,) int64
        The node table's instant per node.
    item : int
        The positive item whose window is wanted.
    length, bounded
        The window ``L`` in instants, and whether there is one.

    Returns
    -------
    lo, hi : (n,) int64
        Per entry, the least and greatest instant ``item`` may take (-NO_TIME and
        NO_TIME where unbounded; ``lo > hi``: empty).
    """
    n, k = nodes.shape
    instants = np.zeros((n, k), dtype=np.int64)
    matched = nodes >= 0
    for r in numba.prange(n):
        for c in range(k):
            if matched[r, c]:
                instants[r, c] = instant[nodes[r, c]]
    return _windows_from_instants(instants, matched, item, length, bounded)
