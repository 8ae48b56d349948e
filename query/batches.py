"""Partial matches as columns: batches of entries, extended, merged and pruned whole.

A :class:`Batch` holds ``n`` entries of a pattern with ``k`` positive items: an events
matrix (``n x k`` archive rows, -1 where the item is not matched yet), a nodes matrix
(global node ids of :class:`~uncertain_cep.index.node_table.NodeTable`, -1 likewise) and
a probability vector (the fraction of the groups' OIs through those nodes, Zhou et al.
4.1). Every operation below works on the whole batch with numpy gathers, searchsorted,
repeat and sorts, and :mod:`~uncertain_cep.query.chain_kernels` for the chain factors; no
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
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numba
import numpy as np

from uncertain_cep.index.forest import REAL, ROOT
from uncertain_cep.index.node_table import NodeTable
from uncertain_cep.query.chain_kernels import extended
from uncertain_cep.query.grouping_kernels import (
    _rows_equal,
    group_rows,
    group_rows_in_segments,
    order_by_group,
)
from uncertain_cep.query.kernel_threads import KERNEL_LOCK

__all__ = [
    "NO_TIME",
    "Batch",
    "CandidateNodes",
    "candidate_passes",
    "extend",
    "grouping_order",
    "item_windows",
    "merge",
    "prune_bounds",
    "split_by_tuples",
    "tuple_starts",
    "weight_cuts",
    "window_bounds",
    "windows_from_instants",
]

# Instants are int64; these stand for "no bound" without overflowing sums.
NO_TIME = 1 << 60


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

    @classmethod
    def of_rows(cls, table: NodeTable, rows: np.ndarray) -> CandidateNodes:
        _, nodes = table.nodes_of_rows(np.asarray(rows, dtype=np.int64))
        instants = table.instant[nodes]
        order = np.argsort(instants, kind="stable")
        return cls(nodes[order], instants[order])

    def take(self, positions: np.ndarray) -> CandidateNodes:
        return CandidateNodes(self.nodes[positions], self.instants[positions])


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
        out[r] = not _rows_equal(events, r, r - 1)
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


def item_windows(table: NodeTable, batch: Batch, item: int, window: float
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The instants positive item ``item`` can take in each entry: strictly after the
    matched items before it and before those after it, with room for the items between,
    and within the pattern's window of the matched items (SEMANTICS A4 conditions 1-2;
    the columnar form of :meth:`~uncertain_cep.query.evaluation.QueryContext.item_window`).
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


def _window_length(window: float) -> tuple[int, bool]:
    return (0, False) if window == np.inf else (int(window), True)


@numba.njit(cache=True, nogil=True)
def _window_of_row(instants: np.ndarray, matched: np.ndarray, r: int, item: int,
                   length: int, bounded: bool) -> tuple[int, int]:
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
    n = len(matched)
    lo = np.empty(n, dtype=np.int64)
    hi = np.empty(n, dtype=np.int64)
    for r in numba.prange(n):
        lo[r], hi[r] = _window_of_row(instants, matched, r, item, length, bounded)
    return lo, hi


@numba.njit(cache=True, nogil=True, parallel=True)
def _item_windows(nodes: np.ndarray, instant: np.ndarray, item: int, length: int,
                  bounded: bool) -> tuple[np.ndarray, np.ndarray]:
    n, k = nodes.shape
    instants = np.zeros((n, k), dtype=np.int64)
    matched = nodes >= 0
    for r in numba.prange(n):
        for c in range(k):
            if matched[r, c]:
                instants[r, c] = instant[nodes[r, c]]
    return _windows_from_instants(instants, matched, item, length, bounded)


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
           start: np.ndarray, stop: np.ndarray) -> tuple[Batch, np.ndarray]:
    """Every entry of a batch in tuple order extended by every candidate node of ``item``
    in its window (:func:`window_bounds`) that an OI of its group can pass between the
    entry's nodes around it in that group (its probability multiplied by the chain
    factor). Also returns the boundaries of the extensions of each tuple (the segments
    :func:`merge` takes)."""
    events, nodes, prob, offsets = extended(table, batch.events, batch.nodes, batch.prob,
                                            item, start, stop, candidates.nodes)
    segments = np.append(offsets[tuple_starts(batch.events)], len(prob))
    return Batch(events, nodes, prob), segments


_NO_TREES = np.zeros(0, dtype=np.bool_)


def nesting_trees(table: NodeTable) -> np.ndarray:
    """Per tree of ``table``, whether another tree hangs below one of its nodes (computed
    once per table)."""
    nested = _NESTING.get(table)
    if nested is None:
        nested = np.zeros(len(table.tree_parent), dtype=np.bool_)
        parents = np.asarray(table.tree_parent)
        nested[parents[parents >= 0]] = True
        _NESTING[table] = nested
    return nested


_NESTING: weakref.WeakKeyDictionary[NodeTable, np.ndarray] = weakref.WeakKeyDictionary()


def merge(table: NodeTable, batch: Batch, segments: np.ndarray | None = None,
          item: int = 0, gaps: np.ndarray | None = None, classes: bool = False) -> Batch:
    """Add up entries whose futures coincide, in tuple order. Two entries of one tuple
    extend and finish alike when they agree on every node a later item can be inserted
    next to (per group, the matched nodes with an unmatched item between them and the
    group's next or previous matched node) and on every instant a later window or the
    answer reads (the first and last matched items and the neighbours of unmatched ones).

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
    one another (:func:`_merge_keys`)."""
    if len(batch) < 2:
        return batch.in_tuple_order()
    gaps = np.zeros(0, dtype=np.int64) if gaps is None else np.asarray(gaps, np.int64)
    with KERNEL_LOCK:
        key = _merge_keys(batch.events, batch.nodes, table.group, table.instant, gaps,
                          table.tree, table.kind, table.parent, table.child_start,
                          table.child_list, table.row, classes,
                          nesting_trees(table) if classes else _NO_TREES)
    if segments is not None:
        first, prob = group_rows_in_segments(key, batch.events[:, item], batch.prob,
                                             segments)
        return Batch(batch.events[first], batch.nodes[first], prob)
    ids, first_of = group_rows(key)
    prob = np.bincount(ids, weights=batch.prob, minlength=len(first_of))
    return Batch(batch.events[first_of], batch.nodes[first_of], prob).in_tuple_order()


def grouping_order(events: np.ndarray) -> np.ndarray:
    """An order of the rows that makes equal ``events`` rows contiguous (groups in order
    of first appearance; linear time, :mod:`~uncertain_cep.query.grouping_kernels`)."""
    ids, first = group_rows(events)
    return order_by_group(ids, len(first))


@numba.njit(cache=True, nogil=True)
def _lone_event(m: int, node_kind: np.ndarray, node_parent: np.ndarray,
                child_start: np.ndarray) -> bool:
    """Whether node ``m`` places the only event of its tree: a real leaf right below the
    tree's root. Such a tree is independent of everything around it, so every node of it
    leads on to the same nodes with the same factors, and is reached from the same nodes
    with the same factors, and the paths through it weigh only its own event."""
    p = node_parent[m]
    return (node_kind[m] == REAL and p >= 0 and node_kind[p] == ROOT
            and child_start[m + 1] == child_start[m])


# Nodes a subtree walk visits at most before it gives up (and keeps the node's identity).
_WALK_LIMIT = 256
# What a node below ``m`` may do after an instant (:func:`_below`).
_NOTHING_AFTER, _REAL_AFTER, _UNKNOWN = 0, 1, 2
# Keys of classes of nodes (:func:`_class_key`) lie in [-2**62, -2**62 + 2**61): below
# every -2 - tree and every node id.
_CLASS_BASE = -(1 << 62)
_CLASS_MASK = (1 << 61) - 1


@numba.njit(cache=True, nogil=True)
def _below(m: int, low: int, node_kind: np.ndarray, node_instant: np.ndarray,
           child_start: np.ndarray, child_list: np.ndarray) -> int:
    """Whether some node below ``m`` in its tree may be placed after instant ``low``:
    _NOTHING_AFTER, _REAL_AFTER, or _UNKNOWN when a virtual node lies below (another tree
    hangs there) or the subtree is too large to walk (both count as may)."""
    stack = np.empty(_WALK_LIMIT, dtype=np.int64)
    stack[0] = m
    top = 1
    visited = 0
    out = _NOTHING_AFTER
    while top > 0:
        top -= 1
        x = stack[top]
        if x != m:
            visited += 1
            if node_kind[x] != REAL or visited > _WALK_LIMIT:
                return _UNKNOWN
            if node_instant[x] > low:
                out = _REAL_AFTER
        for i in range(child_start[x], child_start[x + 1]):
            if top == _WALK_LIMIT:
                return _UNKNOWN
            stack[top] = child_list[i]
            top += 1
    return out


@numba.njit(cache=True, nogil=True)
def _instant_before(nodes: np.ndarray, node_instant: np.ndarray, r: int, d: int) -> int:
    """The instant of entry ``r``'s nearest matched item before column ``d``."""
    for e in range(d - 1, -1, -1):
        if nodes[r, e] >= 0:
            return node_instant[nodes[r, e]]
    return -NO_TIME


@numba.njit(cache=True, nogil=True)
def _instant_after(nodes: np.ndarray, node_instant: np.ndarray, r: int, d: int) -> int:
    """The instant of entry ``r``'s nearest matched item after column ``d``."""
    for e in range(d + 1, nodes.shape[1]):
        if nodes[r, e] >= 0:
            return node_instant[nodes[r, e]]
    return NO_TIME


@numba.njit(cache=True, nogil=True)
def _past_counts(nodes: np.ndarray, r: int, c: int, m: int, g: int, need_left: bool,
                 gaps: np.ndarray, node_group: np.ndarray, node_instant: np.ndarray,
                 node_kind: np.ndarray, node_parent: np.ndarray) -> bool:
    """Whether an event above node ``m`` (column ``c`` of entry ``r``, group ``g``) in its
    tree may be placed strictly between the matched items around an unmatched item
    before ``m`` (back to the group's previous matched node), or may stand in the gap of
    a negation before ``m`` of which ``m`` is the group's nearest node after."""
    p = node_parent[m]
    while p >= 0 and node_kind[p] == REAL:
        t = node_instant[p]
        if need_left:
            for d in range(c - 1, -1, -1):
                x = nodes[r, d]
                if x >= 0 and node_group[x] == g:
                    break
                if x < 0 and _instant_before(nodes, node_instant, r, d) < t < \
                        _instant_after(nodes, node_instant, r, d):
                    return True
        for j in gaps:
            if j >= c:
                continue
            nearest = True
            for d in range(j + 1, c):
                if nodes[r, d] >= 0 and node_group[nodes[r, d]] == g:
                    nearest = False
                    break
            # The gap lies between items j and j + 1, wherever they are placed.
            if nearest and _instant_before(nodes, node_instant, r, j + 1) < t < \
                    _instant_after(nodes, node_instant, r, j):
                return True
        p = node_parent[p]
    return False


@numba.njit(cache=True, nogil=True)
def _mix(x: int) -> np.uint64:
    """splitmix64's finaliser: a well-spread 64-bit hash of ``x``."""
    z = np.uint64(x) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@numba.njit(cache=True, nogil=True)
def _class_key(m: int, node_kind: np.ndarray, node_parent: np.ndarray,
               node_row: np.ndarray, node_tree: np.ndarray) -> int:
    """The key of ``m``'s class: its tree (an event may have nodes in several) and the set
    of events above it there (a sum of their hashes, so their order does not count)."""
    h = _mix(-1 - node_tree[m])
    p = node_parent[m]
    while p >= 0 and node_kind[p] == REAL:
        h += _mix(node_row[p])
        p = node_parent[p]
    return _CLASS_BASE + int(h & np.uint64(_CLASS_MASK))


@numba.njit(cache=True, nogil=True, parallel=True)
def _merge_keys(events: np.ndarray, nodes: np.ndarray, node_group: np.ndarray,
                node_instant: np.ndarray, gaps: np.ndarray, node_tree: np.ndarray,
                node_kind: np.ndarray, node_parent: np.ndarray, child_start: np.ndarray,
                child_list: np.ndarray, node_row: np.ndarray, classes: bool,
                nested: np.ndarray) -> np.ndarray:
    """Per entry: its events, then the nodes that matter (else -1), then the instants
    that matter (else a sentinel); see :func:`merge`.

    A node that a later item may sit next to stands for its tree (-2 - tree) unless a
    later item could be another event of that tree: OIs pass a tree's events in time
    order, so such an item is one of the node's ancestors (none when its parent is the
    tree's root) or one of its descendants (none placed after the matched item right
    before the first unmatched item that follows it). From any other node, the factors
    and the descendant checks see the tree only through the virtual node standing for it
    (query/chain_kernels.py). Entries differing only in such a node then have the same
    future, save the node's instant, which the key holds wherever a window or a negation
    gap reads it. The nearest node of a group after a negation's gap keeps its identity
    (the paths into it are weighed) unless it sits right below its tree's root; the
    nearest before one keeps it too (the paths out of it are weighed), save with classes.

    With ``classes`` (groups without Condition 2), a node whose future alone counts
    stands for its class: the nodes of its event at its instant in its tree with the same
    set of events above them there. Every OI of such a group is equally likely, so what
    follows a node depends only on the events still to come and the node's instant: the
    subtrees of a class are alike, node for node, with the same factors and the same
    weights in a gap. Trees with other trees hanging below their nodes (``nested``) keep
    identities. The set is keyed by a sum of 64-bit hashes: two sets of one event's nodes
    in one tuple's entries would have to collide for entries to merge wrongly."""
    n, k = events.shape
    key = np.empty((n, 3 * k), dtype=np.int64)
    for r in numba.prange(n):
        first, last = -1, -1
        for c in range(k):
            key[r, c] = events[r, c]
            key[r, k + c] = -1
            key[r, 2 * k + c] = -NO_TIME
            if nodes[r, c] >= 0:
                if first < 0:
                    first = c
                last = c
        for c in range(k):
            m = nodes[r, c]
            if m < 0:
                continue
            g = node_group[m]
            # An unmatched item between this node and its group's nearest matched node
            # (or the pattern's end) on either side: a later item may sit next to it.
            need_left = False
            d = c - 1
            while d >= 0:
                if nodes[r, d] < 0:
                    need_left = True
                    break
                if node_group[nodes[r, d]] == g:
                    break
                d -= 1
            need_right = False
            free = -1
            d = c + 1
            while d < k:
                if nodes[r, d] < 0:
                    need_right = True
                    free = d
                    break
                if node_group[nodes[r, d]] == g:
                    break
                d += 1
            # The nearest node of its group before a negation's gap (the paths from it
            # into the gap are its future) or after one (the paths into it).
            gap_after, gap_before = False, False
            for j in gaps:
                if c <= j:
                    nearest = True
                    for d in range(c + 1, j + 1):
                        if nodes[r, d] >= 0 and node_group[nodes[r, d]] == g:
                            nearest = False
                            break
                    gap_after = gap_after or nearest
                else:
                    nearest = True
                    for d in range(j + 1, c):
                        if nodes[r, d] >= 0 and node_group[nodes[r, d]] == g:
                            nearest = False
                            break
                    gap_before = gap_before or nearest
            if need_left or need_right or gap_after or gap_before:
                # What came before the node in its tree (its ancestors) counts if one of
                # them may take an unmatched item before it or stand in a gap before it.
                past = ((need_left or gap_before)
                        and _past_counts(nodes, r, c, m, g, need_left, gaps, node_group,
                                         node_instant, node_kind, node_parent))
                if _lone_event(m, node_kind, node_parent, child_start):
                    key[r, k + c] = -2 - node_tree[m]
                elif past or (gap_after and not (classes and not nested[node_tree[m]])):
                    key[r, k + c] = m
                else:
                    # Only what follows the node counts: nothing, or its class.
                    below = _NOTHING_AFTER
                    if gap_after:
                        below = _below(m, node_instant[m], node_kind, node_instant,
                                       child_start, child_list)
                    elif need_right:
                        # Items after ``free`` are placed after the item before it.
                        below = _below(m, node_instant[nodes[r, free - 1]], node_kind,
                                       node_instant, child_start, child_list)
                    if below == _NOTHING_AFTER:
                        key[r, k + c] = -2 - node_tree[m]
                    elif classes and not nested[node_tree[m]]:
                        key[r, k + c] = _class_key(m, node_kind, node_parent, node_row,
                                                    node_tree)
                        key[r, 2 * k + c] = node_instant[m]
                    else:
                        key[r, k + c] = m
            read = c in (first, last)
            read = read or (c > 0 and nodes[r, c - 1] < 0) or (c + 1 < k and nodes[r, c + 1] < 0)
            for j in gaps:
                # A negation's gap is bounded by the instants of its items j and j + 1.
                read = read or c == j or c == j + 1
            if read:
                key[r, 2 * k + c] = node_instant[m]
    return key


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
