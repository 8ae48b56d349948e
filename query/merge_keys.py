"""Merge keys: which of an entry's nodes and instants its future depends on.

Entries of one tuple whose keys are equal have the same future and are added up
(:func:`~uncertain_cep.query.batches.merge`). A key row holds the entry's events, then per
column the node that matters (or what it stands for: its tree, or its class of nodes with
alike futures; -1 when none matters), then the instants a later window or negation gap
reads. The rules are in :func:`_merge_keys`; each is exact, and the property tests against
the possible-worlds baseline fail when any one is dropped.
"""

from __future__ import annotations

import numba
import numpy as np

from uncertain_cep.index.forest import REAL, ROOT
from uncertain_cep.index.node_table import NodeTable
from uncertain_cep.query.instants import NO_TIME
from uncertain_cep.query.kernel_threads import KERNEL_LOCK

__all__ = ["merge_keys"]


def merge_keys(table: NodeTable, events: np.ndarray, nodes: np.ndarray, gaps: np.ndarray,
               classes: bool) -> np.ndarray:
    """The ``(n, 3k)`` key matrix of entries ``events``/``nodes`` (:func:`_merge_keys`);
    ``gaps``: per NOT item, the positive item before it; ``classes``: the index has no
    Condition 2."""
    with KERNEL_LOCK:
        return _merge_keys(events, nodes, table.group, table.instant, gaps, table.tree,
                           table.kind, table.parent, table.child_start, table.child_list,
                           table.row, classes,
                           table.nests_trees if classes else _NO_TREES)


_NO_TREES = np.zeros(0, dtype=np.bool_)


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
    that matter (else a sentinel); see :func:`~uncertain_cep.query.batches.merge`.

    A node that a later item may sit next to stands for its tree (-2 - tree) unless a
    later item could be another event of that tree: OIs pass a tree's events in time
    order, so such an item is one of the node's ancestors (none that may take an
    unmatched item before it: :func:`_past_counts`) or one of its descendants (none
    placed after the matched item right before the first unmatched item that follows
    it: :func:`_below`). From any other node, the factors and the descendant checks see
    the tree only through the virtual node standing for it (query/chain_kernels.py).
    Entries differing only in such a node then have the same future, save the node's
    instant, which the key holds wherever a window or a negation gap reads it. The
    nearest node of a group after a negation's gap keeps its identity when one of its
    ancestors may stand in the gap (the paths into it are weighed); the nearest before
    one keeps it too (the paths out of it are weighed), save with classes.

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
                by_class = classes and not nested[node_tree[m]]
                # What came before the node in its tree (its ancestors) counts if one of
                # them may take an unmatched item before it or stand in a gap before it.
                if _lone_event(m, node_kind, node_parent, child_start):
                    key[r, k + c] = -2 - node_tree[m]
                elif (gap_after and not by_class) or (
                        (need_left or gap_before)
                        and _past_counts(nodes, r, c, m, g, need_left, gaps, node_group,
                                         node_instant, node_kind, node_parent)):
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
                    elif by_class:
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
