"""Partial matches as columns: batches of entries, extended, merged and pruned whole.

A :class:`Batch` holds ``n`` entries of a pattern with ``k`` positive items: an events
matrix (``n x k`` archive rows, -1 where the item is not matched yet), a nodes matrix
(global node ids of :class:`~uncertain_cep.index.node_table.NodeTable`, -1 likewise) and
a probability vector (the fraction of the groups' OIs through those nodes, Zhou et al.
4.1). Every operation below works on the whole batch with numpy gathers, searchsorted,
repeat and sorts, and :mod:`~uncertain_cep.query.engine.kernels.chains` for the chain factors; no
Python loop runs over entries, only over pattern items.

Batches are kept in tuple order: the entries of one tuple of events are contiguous, so a
batch can be cut between tuples and pruning (which sums a tuple's entries, SEMANTICS A4)
never sees half a tuple.

>>> b = Batch(np.array([[3, -1], [1, -1], [3, -1]]), np.array([[7, -1], [2, -1], [8, -1]]),
...           np.array([0.25, 1.0, 0.5]))
>>> b = b.in_tuple_order(); sorted(b.events[tuple_starts(b.events), 0].tolist())
[1, 3]
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property

import numba
import numpy as np

from uncertain_cep.index.node_table import NodeTable
from uncertain_cep.query.engine.kernels.chains import CandidateOrder, candidate_order
from uncertain_cep.query.engine.kernels.core import KERNEL_LOCK
from uncertain_cep.query.engine.kernels.extension import extended
from uncertain_cep.query.engine.kernels.grouping import (
    group_rows,
    group_rows_in_segments,
    order_by_group,
    rows_equal,
)
from uncertain_cep.query.engine.merge_keys import keep_extreme_ends, merge_keys

__all__ = [
    "Batch",
    "CandidateNodes",
    "Screen",
    "candidate_passes",
    "extend",
    "grouping_order",
    "merge",
    "prune_bounds",
    "split_by_tuples",
    "tuple_starts",
    "weight_cuts",
    "window_bounds",
]


@dataclass(frozen=True)
class Batch:
    """Entries as columns (see the module docstring)."""

    events: np.ndarray  # (n, k) int64
    nodes: np.ndarray   # (n, k) int64
    prob: np.ndarray    # (n,) float64

    def __len__(self) -> int:
        return len(self.prob)

    def take(self, rows: np.ndarray | slice) -> Batch:
        return Batch(self.events[rows], self.nodes[rows], self.prob[rows])

    @staticmethod
    def concat(parts: list[Batch]) -> Batch:
        return Batch(np.concatenate([p.events for p in parts]),
                     np.concatenate([p.nodes for p in parts]),
                     np.concatenate([p.prob for p in parts]))

    def in_tuple_order(self) -> Batch:
        """The entries of each tuple made contiguous (tuples in no particular order)."""
        if len(self) < 2:
            return self
        return self.take(grouping_order(self.events))


@dataclass(frozen=True)
class CandidateNodes:
    """The nodes an item may take, sorted by instant: every real node of every event
    with a positive Pr(symbol | e), found by one R*-tree search over the symbol's
    attribute box (the access path "nodes by instant")."""

    nodes: np.ndarray
    instants: np.ndarray
    table: NodeTable | None = field(default=None, repr=False, compare=False)

    @cached_property
    def order(self) -> CandidateOrder:
        """What the extension kernels read (:class:`CandidateOrder`; the table's
        codes and groups)."""
        if self.table is None:
            raise ValueError("CandidateNodes without a node table has no code order")
        return candidate_order(self.table, self.nodes, self.instants)

    @classmethod
    def of_rows(cls, table: NodeTable, rows: np.ndarray) -> CandidateNodes:
        _, nodes = table.nodes_of_rows(np.asarray(rows, dtype=np.int64))
        instants = table.instant[nodes]
        order = np.argsort(instants, kind="stable")
        return cls(nodes[order], instants[order], table)

    def take(self, positions: np.ndarray) -> CandidateNodes:
        return CandidateNodes(self.nodes[positions], self.instants[positions], self.table)


def tuple_starts(events: np.ndarray) -> np.ndarray:
    """First entry of each tuple in a batch in tuple order."""
    if len(events) == 0:
        return np.zeros(0, dtype=np.int64)
    with KERNEL_LOCK:
        return np.flatnonzero(_tuple_changes(np.ascontiguousarray(events, dtype=np.int64)))


@numba.njit(cache=True, nogil=True, parallel=True)
def _tuple_changes(events: np.ndarray) -> np.ndarray:
    """Whether each row starts a new run of equal rows."""
    n = len(events)
    out = np.empty(n, dtype=np.bool_)
    out[0] = True
    for r in numba.prange(1, n):
        out[r] = not rows_equal(events, r, r - 1)
    return out


def split_by_tuples(events: np.ndarray, weights: np.ndarray, limit: int
                    ) -> Iterator[slice]:
    """Cut rows in tuple order (equal ``events`` rows contiguous) into slices whose summed
    ``weights`` (per row) stay within ``limit``, never inside a tuple (a tuple heavier
    than the limit is one slice)."""
    n = len(events)
    if n == 0:
        return
    if int(weights.sum()) <= limit:
        yield slice(0, n)
        return
    starts = tuple_starts(events)
    bounds = np.append(starts, n)
    cuts = weight_cuts(np.add.reduceat(weights, starts), limit)
    for a, b in itertools.pairwise(cuts.tolist()):
        yield slice(int(bounds[a]), int(bounds[b]))


def weight_cuts(weights: np.ndarray, limit: int) -> np.ndarray:
    """Boundaries cutting units into consecutive runs whose summed ``weights`` stay
    within ``limit`` (a unit heavier than that is a run of its own), from 0 to the
    number of units.

    >>> weight_cuts(np.array([2, 2, 5, 1, 1]), 4).tolist()
    [0, 2, 3, 5]
    """
    total = np.cumsum(weights)
    cuts = [0]
    while cuts[-1] < len(weights):
        base = total[cuts[-1] - 1] if cuts[-1] else 0
        end = int(np.searchsorted(total, base + limit, side="right"))
        cuts.append(max(end, cuts[-1] + 1))
    return np.array(cuts, dtype=np.int64)


def window_bounds(candidates: CandidateNodes, lo: np.ndarray, hi: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Per entry, the candidates in its window ``[lo, hi]``:
    ``candidates.nodes[start:stop]`` (empty when ``stop <= start``)."""
    return (np.searchsorted(candidates.instants, lo, side="left"),
            np.searchsorted(candidates.instants, hi, side="right"))


def candidate_passes(table: NodeTable, candidates: CandidateNodes, start: np.ndarray,
                     stop: np.ndarray, limit: int) -> Iterator[CandidateNodes]:
    """The candidates that some entry's window ``candidates.nodes[start:stop]`` holds, cut
    by event into passes whose (entry, candidate) pairs stay within ``limit`` (an event
    with more pairs than that is a pass of its own).

    A tuple extended by one pass at a time yields whole new tuples per pass (each new
    tuple takes one event for the item), so merging and pruning each pass alone is
    exact; this bounds the memory of extending one tuple that meets many candidates.

    Two entries meet nodes 0-3 and 0-2; nodes 0 and 1 are of event 0 (4 pairs), node 2
    of event 1 (2 pairs), node 3 of event 2 (1 pair):

    >>> from types import SimpleNamespace
    >>> table = SimpleNamespace(row=np.array([0, 0, 1, 2]))
    >>> c = CandidateNodes(np.arange(4), np.arange(4))
    >>> passes = candidate_passes(table, c, np.array([0, 0]), np.array([4, 3]), limit=4)
    >>> [p.nodes.tolist() for p in passes]
    [[0, 1], [2, 3]]
    """
    open_ = stop > start
    cover = np.cumsum(np.bincount(start[open_], minlength=len(candidates.nodes) + 1)
                      - np.bincount(stop[open_], minlength=len(candidates.nodes) + 1))
    used = np.flatnonzero(cover[:-1] > 0)
    rows, of_row = np.unique(table.row[candidates.nodes[used]], return_inverse=True)
    pairs = np.bincount(of_row, weights=cover[used], minlength=len(rows))
    for first, end in itertools.pairwise(weight_cuts(pairs, limit).tolist()):
        yield candidates.take(used[(of_row >= first) & (of_row < end)])


def extend(table: NodeTable, batch: Batch, item: int, candidates: CandidateNodes,
           start: np.ndarray, stop: np.ndarray, screen: Screen | None = None
           ) -> tuple[Batch, np.ndarray, int, int]:
    """Every entry of a batch in tuple order extended by every candidate node of ``item``
    in its window (:func:`window_bounds`) that an OI of its group can pass between the
    entry's nodes around it in that group (its probability multiplied by the chain
    factor). Also returns the boundaries of the extensions of each tuple (the segments
    :func:`merge` takes), the number of valid extensions, and how many entries took
    some candidates from the code ranges below their group's matched node (the access
    path EXPLAIN reports, :class:`~uncertain_cep.query.engine.kernels.chains.CandidateOrder`).

    With ``screen``, only the extensions whose new tuple's pruning bound (its summed
    probability times its events' Pr(S | e), :func:`prune_bounds`) reaches the screen's
    floor are written out: the rest would be pruned as soon as they were merged."""
    starts = tuple_starts(batch.events)
    spec = None
    if screen is not None:
        spec = (np.append(starts, len(batch)), screen.tuple_factor(batch.events[starts]),
                screen.candidate_factor(candidates), screen.floor)
    events, nodes, prob, offsets, valid, by_code = extended(
        table, batch.events, batch.nodes, batch.prob, item, start, stop, candidates.order,
        spec)
    segments = np.append(offsets[starts], len(prob))
    return Batch(events, nodes, prob), segments, valid, by_code


@dataclass(frozen=True)
class Screen:
    """What :func:`extend` screens new tuples by: the product of a tuple's matched
    events' Pr(S | e) (``tuple_factor``, per events row), the new event's
    (``candidate_factor``, per candidate), and the threshold the bound must reach."""

    tuple_factor: Callable[[np.ndarray], np.ndarray]
    candidate_factor: Callable[[CandidateNodes], np.ndarray]
    floor: float


def merge(table: NodeTable, batch: Batch, segments: np.ndarray | None = None,
          item: int = 0, gaps: np.ndarray | None = None, classes: bool = False) -> Batch:
    """Add up entries whose futures coincide, in tuple order. Two entries of one tuple
    extend and finish alike when they agree on every node a later item can be inserted
    next to (per group, the matched nodes with an unmatched item between them and the
    group's next or previous matched node) and on every instant a later window reads
    (the first and last matched items, until both ends of the pattern are matched, and
    the neighbours of unmatched ones); the merged entry keeps its members' earliest first
    and latest last node, which the answer's instants read.

    With negation (``gaps``: per NOT item, the positive item before it), they must also
    agree on every node a negation factor can read. OIs are time-ordered and Markov in
    their nodes (what follows a node depends on the node alone), so a group's weighted
    sum through a chain is its probability times, per gap, the weighted fraction of the
    paths between the chain's last node before the gap and its first node after it
    (SEMANTICS A4, condition 4): per gap and group, the nearest matched node on either
    side is kept; the gap's own bounds are such nodes.

    With ``segments`` (a batch just extended by ``item``, :func:`extend`), entries are
    merged within their segment only, which is where all of a tuple's entries are.
    ``classes``: the index has no Condition 2, so nodes with alike futures may stand for
    one another (:func:`~uncertain_cep.query.engine.merge_keys.merge_keys`)."""
    if len(batch) < 2:
        return batch.in_tuple_order()
    gaps = np.zeros(0, dtype=np.int64) if gaps is None else np.asarray(gaps, np.int64)
    # Within a segment (one tuple's extensions) entries differ in no event but item's.
    key = merge_keys(table, batch.events, batch.nodes, gaps, classes,
                     item if segments is not None else -1)
    if segments is not None:
        first, prob, ids = group_rows_in_segments(key, batch.events[:, item], batch.prob,
                                                  segments)
        nodes = batch.nodes[first]
        keep_extreme_ends(table, batch.nodes, ids, nodes)
        return Batch(batch.events[first], nodes, prob)
    ids, first_of = group_rows(key)
    prob = np.bincount(ids, weights=batch.prob, minlength=len(first_of))
    nodes = batch.nodes[first_of]
    keep_extreme_ends(table, batch.nodes, ids, nodes)
    return Batch(batch.events[first_of], nodes, prob).in_tuple_order()


def grouping_order(events: np.ndarray) -> np.ndarray:
    """An order of the rows that makes equal ``events`` rows contiguous (groups in order
    of first appearance; linear time, :mod:`~uncertain_cep.query.engine.kernels.grouping`)."""
    ids, first = group_rows(events)
    return order_by_group(ids, len(first))


def prune_bounds(batch: Batch, attribute: Callable[[np.ndarray], np.ndarray]
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Per tuple of a batch in tuple order: its first entry and the sum of its entries'
    probabilities times ``attribute`` of its events (the product of its matched events'
    Pr(S | e)), an upper bound of the confidence of every tuple extending it (SEMANTICS
    A4)."""
    starts = tuple_starts(batch.events)
    if len(starts) == 0:
        return starts, np.zeros(0)
    return starts, np.add.reduceat(batch.prob, starts) * attribute(batch.events[starts])
