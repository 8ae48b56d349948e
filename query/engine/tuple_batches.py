"""Partial tuples without their entries: one row per tuple of events, its probability
recomputed from the events alone (:mod:`~uncertain_cep.query.engine.kernels.tuples`).

The batch engine switches a batch to this form once its tuples hold many entries each
(docs/design.md, "Tuples instead of entries"): a tuple whose matched items are scattered
keeps, in its entries, the cross product of the instants of every column next to an
unmatched item, while the dynamic programme over its events needs only the distinct
futures of one walk in pattern order. Extending a tuple batch is then: the item's
candidate events in each tuple's window (from its columns' reachable instants), one
programme per new tuple (its pruning bound, or its confidence once complete), and the
bound's test.

>>> tb = TupleBatch(np.array([[4, -1]]), np.array([0.5]), np.array([[3, -NO_TIME]]),
...                 np.array([[6, NO_TIME]]))
>>> len(tb), tb.take(np.array([0, 0])).events.tolist()
(1, [[4, -1], [4, -1]])
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from uncertain_cep.index.node_table import NodeTable
from uncertain_cep.query.engine.batches import Batch, CandidateNodes, tuple_starts
from uncertain_cep.query.engine.item_windows import every_item_window, windows_from_instants
from uncertain_cep.query.engine.kernels.core import KERNEL_LOCK
from uncertain_cep.query.engine.kernels.instants import NO_TIME
from uncertain_cep.query.engine.lookahead import CandidateInstants

__all__ = ["TupleBatch", "candidate_events", "event_instants", "every_tuple_window",
           "inherited_ends", "item_window", "placed_events", "tuples_of"]


@dataclass(frozen=True)
class TupleBatch:
    """Partial tuples as rows: the events matrix (``n x k``, -1 where unmatched), each
    tuple's summed probability (its pruning bound before Pr(S | e)), per column the
    earliest and latest instant its event can take (+-NO_TIME where unmatched), and,
    where known (else NO_TIME and -NO_TIME; None: nowhere), the earliest instant of its
    first matched column and the latest of its last over the worlds it sums over (an
    answer's ``t_first`` and ``t_last``, SEMANTICS A4); and where known (None: not
    yet), the product of its events' Pr(S | e)."""

    events: np.ndarray
    prob: np.ndarray
    earliest: np.ndarray
    latest: np.ndarray
    first: np.ndarray | None = None
    last: np.ndarray | None = None
    attribute: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.prob)

    def take(self, rows: np.ndarray | slice) -> TupleBatch:
        def part(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else a[rows]

        return TupleBatch(self.events[rows], self.prob[rows], self.earliest[rows],
                          self.latest[rows], part(self.first), part(self.last),
                          part(self.attribute))


def tuples_of(table: NodeTable, batch: Batch) -> TupleBatch:
    """The tuples of a batch in tuple order, each with its entries' summed probability
    and its columns' earliest and latest instants over its entries."""
    starts = tuple_starts(batch.events)
    matched = batch.nodes >= 0
    instants = table.instant[np.maximum(batch.nodes, 0)]
    earliest = np.minimum.reduceat(np.where(matched, instants, NO_TIME), starts, axis=0)
    latest = np.maximum.reduceat(np.where(matched, instants, -NO_TIME), starts, axis=0)
    events = batch.events[starts]
    unmatched = events < 0
    earliest[unmatched], latest[unmatched] = -NO_TIME, NO_TIME
    return TupleBatch(events, np.add.reduceat(batch.prob, starts), earliest, latest)


def every_tuple_window(tuples: TupleBatch, window: float
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Whether each item is matched, and each item's window per tuple (the lower bound
    from its columns' earliest instants, the upper from their latest)."""
    matched = tuples.events >= 0
    lo, hi = every_item_window(tuples.earliest, tuples.latest, matched, window)
    return matched, lo, hi


def item_window(tuples: TupleBatch, item: int, window: float,
                lookahead: CandidateInstants | None) -> tuple[np.ndarray, np.ndarray]:
    """Item ``item``'s window per tuple, narrowed by the look-ahead (the earliest
    instants give its start, the latest its end; either way no completion is lost)."""
    if lookahead is None:
        matched = tuples.events >= 0
        lo = windows_from_instants(tuples.earliest, matched, item, window)[0]
        hi = windows_from_instants(tuples.latest, matched, item, window)[1]
        return lo, hi
    return lookahead.tuple_window(tuples.events, tuples.earliest, tuples.latest, item,
                                  window)


def candidate_events(table: NodeTable, tuples: TupleBatch, candidates: CandidateNodes,
                     start: np.ndarray, stop: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Every distinct (tuple, event) pair of an event with a candidate node in the
    tuple's window (``candidates.nodes[start:stop]``), other than the tuple's own events:
    the tuples' indices, the events' archive rows, and the
    number of (tuple, node) pairs seen. Pairs come in tuple order, each tuple's events
    ascending; the new tuples' matrices are left to the caller, which drops most of
    them first."""
    count = np.maximum(stop - start, 0)
    total = int(count.sum())
    offsets = np.cumsum(count) - count
    with KERNEL_LOCK:
        found, rows = _distinct_fresh_rows(tuples.events, table.row, candidates.nodes,
                                           np.ascontiguousarray(start, dtype=np.int64),
                                           count, offsets, total)
    owner = np.repeat(np.arange(len(tuples), dtype=np.int64), found)
    keep = np.repeat(offsets, found) + (np.arange(int(found.sum()), dtype=np.int64)
                                        - np.repeat(np.cumsum(found) - found, found))
    return owner, rows[keep], total


@numba.njit(cache=True, nogil=True, parallel=True)
def _distinct_fresh_rows(events: np.ndarray, node_row: np.ndarray, nodes: np.ndarray,
                         start: np.ndarray, count: np.ndarray, offsets: np.ndarray,
                         total: int) -> tuple[np.ndarray, np.ndarray]:
    """Per tuple, the distinct archive rows of its candidate nodes
    (``nodes[start:start + count]``) that are none of its events, ascending, written
    from its ``offsets`` on; and how many."""
    n, k = events.shape
    out = np.empty(total, dtype=np.int64)
    found = np.zeros(n, dtype=np.int64)
    for r in numba.prange(n):
        a, c = offsets[r], count[r]
        if c == 0:
            continue
        for i in range(c):
            out[a + i] = node_row[nodes[start[r] + i]]
        out[a:a + c].sort()
        size = 0
        for i in range(c):
            v = out[a + i]
            if size > 0 and out[a + size - 1] == v:
                continue
            own = False
            for col in range(k):
                if events[r, col] == v:
                    own = True
                    break
            if own:
                continue
            out[a + size] = v
            size += 1
        found[r] = size
    return found, out


def event_instants(table: NodeTable, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per archive row of ``rows`` (any shape), its earliest and latest instant
    (NO_TIME and -NO_TIME where -1: no event)."""
    flat = np.ascontiguousarray(rows, dtype=np.int64).reshape(-1)
    with KERNEL_LOCK:
        lo, hi = _stretches(flat, table.row_nodes_start, table.row_nodes, table.instant)
    return lo.reshape(np.shape(rows)), hi.reshape(np.shape(rows))


@numba.njit(cache=True, nogil=True, parallel=True)
def _stretches(rows: np.ndarray, row_nodes_start: np.ndarray, row_nodes: np.ndarray,
               instant: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each event's stretch: the earliest and latest instant of its nodes, rows in
    parallel (:func:`event_instants`; docs/design.md, Room in events).

    Parameters
    ----------
    rows : (n,) int64
        Archive rows (-1: no event).
    row_nodes_start, row_nodes : int64
        The node table's nodes per archive row (row ``e``'s at
        ``row_nodes[row_nodes_start[e]:row_nodes_start[e + 1]]``).
    instant : (nodes,) int64
        The node table's instant per node.

    Returns
    -------
    lo, hi : (n,) int64
        Per row, its nodes' least and greatest instant (NO_TIME and -NO_TIME where -1).
    """
    lo = np.full(len(rows), NO_TIME, dtype=np.int64)
    hi = np.full(len(rows), -NO_TIME, dtype=np.int64)
    for r in numba.prange(len(rows)):
        if rows[r] < 0:
            continue
        for q in range(row_nodes_start[rows[r]], row_nodes_start[rows[r] + 1]):
            lo[r] = min(lo[r], instant[row_nodes[q]])
            hi[r] = max(hi[r], instant[row_nodes[q]])
    return lo, hi


def placed_events(parents: TupleBatch, owner: np.ndarray, items: np.ndarray,
                  new_lo: np.ndarray, new_hi: np.ndarray, window: float) -> np.ndarray:
    """Which new tuples (made from the ``parents`` rows ``owner`` by matching item
    ``items``) have a new event that keeps its place in every world the parent sums
    over: each of its instants (``new_lo`` .. ``new_hi``) at least one instant per item in
    between after every earlier matched column's latest instant and before every later
    one's earliest, and the whole tuple within the window, less one instant per
    unmatched item before its first column and after its last (the programme's
    constraints, :mod:`~uncertain_cep.query.engine.kernels.tuples`).

    Such an event adds no constraint to the worlds its parent sums over, so the new
    tuple's bound is its parent's (every completion of it completes the parent) and its
    programme need not run; its columns' instants are the parent's and the event's own.

    >>> parents = TupleBatch(np.array([[4, -1, 7]]), np.array([0.5]),
    ...                      np.array([[3, -NO_TIME, 10]]), np.array([[5, NO_TIME, 12]]))
    >>> new_lo, new_hi = np.array([6, 9]), np.array([7, 10])   # two events for item 1
    >>> placed_events(parents, np.array([0, 0]), np.array([1, 1]), new_lo, new_hi,
    ...               20.0).tolist()
    [True, False]
    """
    bounded = window != np.inf
    with KERNEL_LOCK:
        return _placed(parents.events, parents.earliest, parents.latest,
                       np.ascontiguousarray(owner, dtype=np.int64),
                       np.ascontiguousarray(items, dtype=np.int64),
                       np.ascontiguousarray(new_lo, dtype=np.int64),
                       np.ascontiguousarray(new_hi, dtype=np.int64),
                       int(window) if bounded else 0, bounded)


def inherited_ends(parents: TupleBatch, owner: np.ndarray, items: np.ndarray,
                   placed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per new tuple (made from the ``parents`` rows ``owner`` by matching item
    ``items``), its first and last instants where they are its parent's: its new event is
    ``placed`` (:func:`placed_events`: its worlds are its parent's) strictly between the
    parent's first and last matched columns (so are its first and last columns), and the
    parent's are known. NO_TIME and -NO_TIME elsewhere.

    >>> parents = TupleBatch(np.array([[4, -1, 7]]), np.array([0.5]),
    ...                      np.array([[3, -NO_TIME, 10]]), np.array([[5, NO_TIME, 12]]),
    ...                      np.array([3]), np.array([11]))
    >>> first, last = inherited_ends(parents, np.array([0, 0]), np.array([1, 1]),
    ...                              np.array([True, False]))
    >>> first.tolist() == [3, NO_TIME], last.tolist() == [11, -NO_TIME]
    (True, True)
    """
    first = np.full(len(owner), NO_TIME, dtype=np.int64)
    last = np.full(len(owner), -NO_TIME, dtype=np.int64)
    if parents.first is None or parents.last is None:
        return first, last
    some = np.flatnonzero(placed)
    matched = parents.events[owner[some]] >= 0
    k = matched.shape[1]
    inner = ((matched.argmax(axis=1) < items[some])
             & (items[some] < k - 1 - matched[:, ::-1].argmax(axis=1)))
    take = some[inner]
    first[take], last[take] = parents.first[owner[take]], parents.last[owner[take]]
    return first, last


@numba.njit(cache=True, nogil=True, parallel=True)
def _placed(events: np.ndarray, earliest: np.ndarray, latest: np.ndarray,
            owner: np.ndarray, items: np.ndarray, new_lo: np.ndarray, new_hi: np.ndarray,
            window: int, bounded: bool) -> np.ndarray:
    """Whether each new tuple's event keeps its place in every world its parent sums
    over (:func:`placed_events`; docs/design.md, Programmes skipped or settled).

    Parameters
    ----------
    events : (p, k) int64
        The parent tuples' events (archive rows, -1 where unmatched).
    earliest, latest : (p, k) int64
        The parents' earliest and latest instant per column.
    owner : (n,) int64
        Per new tuple, its parent's row.
    items : (n,) int64
        The item its new event matches.
    new_lo, new_hi : (n,) int64
        The new event's earliest and latest instant.
    window, bounded
        The window ``L`` in instants, and whether there is one.

    Returns
    -------
    (n,) bool
        Whether ``new_lo`` lies at least ``item - c`` instants after the latest
        instant of every matched column ``c`` before the item and ``new_hi`` at least
        ``c - item`` before the earliest of every one after it (strict order with room
        for the items between), and, with a window, the span from the least earliest
        to the greatest latest instant of the matched columns and the new event is
        within ``window`` less one instant per item before the first of those columns
        and after the last.
    """
    # An integer window: a float one rounds above 2**53 instants.
    k = events.shape[1]
    out = np.empty(len(owner), dtype=np.bool_)
    for r in numba.prange(len(owner)):
        p, item = owner[r], items[r]
        ok = True
        lo_all, hi_all = new_lo[r], new_hi[r]
        first_col, last_col = item, item
        for c in range(k):
            if events[p, c] < 0:
                continue
            # At least one instant per column between (the programme's room).
            if c < item and latest[p, c] + (item - c) > new_lo[r]:
                ok = False
                break
            if c > item and earliest[p, c] - (c - item) < new_hi[r]:
                ok = False
                break
            lo_all = min(lo_all, earliest[p, c])
            hi_all = max(hi_all, latest[p, c])
            first_col, last_col = min(first_col, c), max(last_col, c)
        if ok and bounded:
            ok = hi_all - lo_all <= window - first_col - (k - 1 - last_col)
        out[r] = ok
    return out
