"""Merge keys: which of an entry's nodes and instants its future depends on.

Entries of one tuple whose keys are equal have the same future and are added up
(:func:`~uncertain_cep.query.engine.batches.merge`). A key row holds the entry's events, then per
column the node that matters (or what it stands for: its tree, or its class of nodes with
alike futures; -1 when none matters), then the instants a later window or negation gap
reads. The rules are in :func:`_merge_keys`; each is exact, and the property tests against
the possible-worlds baseline fail when any one is dropped.

Once the first and the last item are matched, the window is decided and their instants
matter only to the answer's ``t_first``/``t_last`` (the earliest and latest over the
tuple's worlds): the key leaves them out (unless an unmatched item or a negation gap is
next to them) and :func:`keep_extreme_ends` gives each merged entry its members'
earliest first node and latest last node.
"""

from __future__ import annotations

import numba
import numpy as np

from uncertain_cep.index.forests.forest import REAL, ROOT
from uncertain_cep.index.node_table import NodeArrays, NodeTable
from uncertain_cep.query.engine.kernels.core import KERNEL_LOCK
from uncertain_cep.query.engine.kernels.instants import NO_TIME

__all__ = ["keep_extreme_ends", "merge_keys"]


def merge_keys(table: NodeTable, events: np.ndarray, nodes: np.ndarray, gaps: np.ndarray,
               classes: bool, item: int = -1) -> np.ndarray:
    """The ``(n, 3k)`` key matrix of entries ``events``/``nodes`` (:func:`_merge_keys`);
    ``gaps``: per NOT item, the positive item before it; ``classes``: the index has no
    Condition 2. With ``item`` (entries that differ in no event but that item's, and
    match the same items, as the extensions of one tuple do), the key holds that event
    and only the matched columns' nodes and instants: ``(n, 2m + 1)`` for ``m`` matched
    items (keys are compared within such a set of entries only, so the matched columns
    need not be named).

    >>> import pandas as pd
    >>> import uncertain_cep as uc
    >>> idx = uc.build_index(pd.DataFrame({"event_id": [1, 2], "group": [0, 1],
    ...                                    "t_lo": [1, 3], "t_hi": [2, 4]}))
    >>> table = idx.event_index.node_table
    >>> events = np.array([[0, 1, -1, -1]])   # two of four items matched
    >>> nodes = np.array([[np.flatnonzero(table.row == 0)[0],
    ...                    np.flatnonzero(table.row == 1)[0], -1, -1]])
    >>> merge_keys(table, events, nodes, np.zeros(0, np.int64), False).shape
    (1, 12)
    >>> merge_keys(table, events, nodes, np.zeros(0, np.int64), False, item=1).shape
    (1, 5)
    """
    matched = int((nodes >= 0).sum(axis=1).max()) if item >= 0 and len(nodes) else -1
    with KERNEL_LOCK:
        return _merge_keys(events, nodes, gaps, table.arrays, classes,
                           table.nests_trees if classes else _NO_TREES, item, matched)


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


# Entries per chunk of the key kernel (each chunk allocates its scratch once).
_CHUNK = 1024
# Nodes a subtree walk visits at most before it gives up (and keeps the node's identity).
_WALK_LIMIT = 256
# What a node below a node may do after an instant (the subtree walk in _merge_keys).
_NOTHING_AFTER, _REAL_AFTER, _UNKNOWN = 0, 1, 2
# Keys of classes of nodes (a node's tree and the set of events above it) lie in
# [-2**62, -2**62 + 2**61): below every -2 - tree and every node id.
_CLASS_BASE = -(1 << 62)
_CLASS_MASK = (1 << 61) - 1


@numba.njit(cache=True, nogil=True)
def _mix(x: int) -> np.uint64:
    """splitmix64's finaliser: a well-spread 64-bit hash of ``x``."""
    z = np.uint64(x) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@numba.njit(cache=True, nogil=True, inline="always")
def _entry_context(nodes: np.ndarray, r: int, node_instant: np.ndarray,
                   node_group: np.ndarray, before_at: np.ndarray, after_at: np.ndarray,
                   group_at: np.ndarray) -> None:
    """Entry ``r``'s context, per column ``d``: the instant of its nearest matched item
    before ``d`` (``before_at``) and after it (``after_at``), and ``d``'s group
    (``group_at``, -1: not matched)."""
    k = nodes.shape[1]
    t_before = -NO_TIME
    for c in range(k):
        before_at[c] = t_before
        group_at[c] = -1
        if nodes[r, c] >= 0:
            t_before = node_instant[nodes[r, c]]
            group_at[c] = node_group[nodes[r, c]]
    t_after = NO_TIME
    for c in range(k - 1, -1, -1):
        after_at[c] = t_after
        if nodes[r, c] >= 0:
            t_after = node_instant[nodes[r, c]]


@numba.njit(cache=True, nogil=True, inline="always")
def _neighbours(c: int, g: int, group_at: np.ndarray, gaps: np.ndarray
                ) -> tuple[bool, bool, int, bool, bool]:
    """What may sit next to column ``c``'s node (of group ``g``): whether an unmatched
    item lies between it and its group's nearest matched node (or the pattern's end) on
    its left and on its right (the first such on the right: ``free``), and whether it is
    its group's nearest node before a negation's gap (the paths from it into the gap are
    its future) or after one (the paths into it)."""
    k = len(group_at)
    need_left = False
    d = c - 1
    while d >= 0:
        if group_at[d] < 0:
            need_left = True
            break
        if group_at[d] == g:
            break
        d -= 1
    need_right = False
    free = -1
    d = c + 1
    while d < k:
        if group_at[d] < 0:
            need_right = True
            free = d
            break
        if group_at[d] == g:
            break
        d += 1
    gap_after, gap_before = False, False
    for j in gaps:
        if c <= j:
            nearest = True
            for d in range(c + 1, j + 1):
                if group_at[d] == g:
                    nearest = False
                    break
            gap_after = gap_after or nearest
        else:
            nearest = True
            for d in range(j + 1, c):
                if group_at[d] == g:
                    nearest = False
                    break
            gap_before = gap_before or nearest
    return need_left, need_right, free, gap_after, gap_before


@numba.njit(cache=True, nogil=True, inline="always")
def _ancestor_in_reach(m: int, c: int, g: int, need_left: bool, gaps: np.ndarray,
                       group_at: np.ndarray, before_at: np.ndarray, after_at: np.ndarray,
                       node_parent: np.ndarray, node_kind: np.ndarray,
                       node_instant: np.ndarray) -> bool:
    """Whether an ancestor of node ``m`` (column ``c``, group ``g``) may take an
    unmatched item between the matched items around it (back to the group's previous
    matched node), or stand in the gap of a negation before ``m`` of which ``m`` is the
    group's nearest node after. Ancestors come earlier the higher they are: none at or
    before the lowest start of those windows and gaps can sit in one."""
    lowest = NO_TIME
    if need_left:
        for d in range(c - 1, -1, -1):
            if group_at[d] == g:
                break
            if group_at[d] < 0:
                lowest = min(lowest, before_at[d])
    for j in gaps:
        if j < c:
            lowest = min(lowest, before_at[j + 1])
    p = node_parent[m]
    while p >= 0 and node_kind[p] == REAL:
        t = node_instant[p]
        if t <= lowest:
            return False
        if need_left:
            for d in range(c - 1, -1, -1):
                if group_at[d] == g:
                    break
                if group_at[d] < 0 and before_at[d] < t < after_at[d]:
                    return True
        for j in gaps:
            if j >= c:
                continue
            nearest = True
            for d in range(j + 1, c):
                if group_at[d] == g:
                    nearest = False
                    break
            # The gap lies between items j and j + 1, wherever placed.
            if nearest and before_at[j + 1] < t < after_at[j]:
                return True
        p = node_parent[p]
    return False


@numba.njit(cache=True, nogil=True, inline="always")
def _placed_below(m: int, low: int, node_kind: np.ndarray, node_instant: np.ndarray,
                  child_start: np.ndarray, child_list: np.ndarray, stack: np.ndarray
                  ) -> int:
    """May a node below ``m`` in its tree be placed after instant ``low``?
    :data:`_REAL_AFTER`, :data:`_NOTHING_AFTER`, or :data:`_UNKNOWN` when a virtual
    node lies below (another tree hangs there) or the subtree is too large to walk."""
    below = _NOTHING_AFTER
    stack[0] = m
    top, visited = 1, 0
    while top > 0:
        top -= 1
        x = stack[top]
        if x != m:
            visited += 1
            if node_kind[x] != REAL or visited > _WALK_LIMIT:
                return _UNKNOWN
            if node_instant[x] > low:
                below = _REAL_AFTER
        for i in range(child_start[x], child_start[x + 1]):
            if top == _WALK_LIMIT:
                return _UNKNOWN
            stack[top] = child_list[i]
            top += 1
    return below


@numba.njit(cache=True, nogil=True, inline="always")
def _class_key(m: int, node_tree: np.ndarray, node_parent: np.ndarray,
               node_kind: np.ndarray, node_row: np.ndarray) -> int:
    """Node ``m``'s class: its tree (an event may have nodes in several) and the set of
    events above it there (a sum of their hashes, so their order does not count)."""
    h = _mix(-1 - node_tree[m])
    p = node_parent[m]
    while p >= 0 and node_kind[p] == REAL:
        h += _mix(node_row[p])
        p = node_parent[p]
    return _CLASS_BASE + int(h & np.uint64(_CLASS_MASK))


@numba.njit(cache=True, nogil=True, inline="always")
def _instant_read(c: int, first: int, last: int, group_at: np.ndarray, gaps: np.ndarray
                  ) -> bool:
    """Whether a later window or negation gap reads column ``c``'s instant: the first
    and last instants bound the window until both ends are matched (then only t_first
    and t_last read them, :func:`keep_extreme_ends`); an unmatched neighbour's window
    and a negation's gap (bounded by the instants of its items j and j + 1) read it."""
    k = len(group_at)
    read = c in (first, last) and not (first == 0 and last == k - 1)
    read = read or (c > 0 and group_at[c - 1] < 0) or (c + 1 < k and group_at[c + 1] < 0)
    for j in gaps:
        read = read or c == j or c == j + 1
    return read


@numba.njit(cache=True, nogil=True, parallel=True)
def _merge_keys(events: np.ndarray, nodes: np.ndarray, gaps: np.ndarray,
                node_arrays: NodeArrays, classes: bool, nested: np.ndarray, item: int,
                matched: int) -> np.ndarray:
    """Per entry: its events, then the nodes that matter (else -1), then the instants
    that matter (else a sentinel); see :func:`~uncertain_cep.query.engine.batches.merge`.

    A node that a later item may sit next to stands for its tree (-2 - tree) unless a
    later item could be another event of that tree: OIs pass a tree's events in time
    order, so such an item is one of the node's ancestors (none that may take an
    unmatched item before it, or stand in a negation's gap before it) or one of its
    descendants (none placed after the matched item right before the first unmatched
    item that follows it: a walk of its subtree, which gives up, keeping the node's
    identity, past ``_WALK_LIMIT`` nodes or at a virtual node). From any other node, the
    factors and the descendant checks see the tree only through the virtual node
    standing for it (query/engine/kernels/pairs.py).
    Entries differing only in such a node then have the same future, save the node's
    instant, which the key holds wherever a window or a negation gap reads it. The
    nearest node of a group after a negation's gap keeps its identity when one of its
    ancestors may stand in the gap (the paths into it are weighed); the nearest before
    one keeps it too (the paths out of it are weighed).

    With ``classes`` (groups without Condition 2), a node whose future alone counts
    stands for its class: the nodes of its event at its instant in its tree with the same
    set of events above them there. Every OI of such a group is equally likely, so what
    follows a node depends only on the events still to come and the node's instant: the
    subtrees of a class are alike, node for node, with the same factors and the same
    weights in a gap. Trees with other trees hanging below their nodes (``nested``) keep
    identities. The set is keyed by a sum of 64-bit hashes: two sets of one event's nodes
    in one tuple's entries would have to collide for entries to merge wrongly."""
    node_group, node_instant, node_tree = node_arrays.group, node_arrays.instant, node_arrays.tree
    node_kind, node_parent, node_row = node_arrays.kind, node_arrays.parent, node_arrays.row
    child_start, child_list = node_arrays.child_start, node_arrays.child_list
    n, k = events.shape
    # The key's columns: the events (or item ``item``'s only), then per column the node
    # that matters, then the instant; with ``item``, per matched column only (``matched``
    # of them, in pattern order: slot[c] is column c's place).
    e = k if item < 0 else 1
    w = k if item < 0 else matched
    key = np.empty((n, e + 2 * w), dtype=np.int64)
    # Entries run in chunks, each with its scratch: the entry's context per column, the
    # columns' places in the key, and room for a subtree walk. (The helpers are inlined:
    # a compiled call that passes arrays costs about 90 ns in reference counting.)
    chunks = (n + _CHUNK - 1) // _CHUNK
    for chunk in numba.prange(chunks):
        before_at = np.empty(k + 1, dtype=np.int64)
        after_at = np.empty(k + 1, dtype=np.int64)
        group_at = np.empty(k, dtype=np.int64)
        slot = np.empty(k, dtype=np.int64)
        stack = np.empty(_WALK_LIMIT, dtype=np.int64)
        for r in range(chunk * _CHUNK, min(n, (chunk + 1) * _CHUNK)):
            _entry_context(nodes, r, node_instant, node_group, before_at, after_at, group_at)
            for c in range(w):
                key[r, e + c] = -1
                key[r, e + w + c] = -NO_TIME
            first, last = -1, -1
            placed = 0
            for c in range(k):
                if item < 0:
                    key[r, c] = events[r, c]
                slot[c] = c if item < 0 else placed
                if nodes[r, c] >= 0:
                    placed += 1
                    if first < 0:
                        first = c
                    last = c
            if item >= 0:
                key[r, 0] = events[r, item]
            for c in range(k):
                m = nodes[r, c]
                if m < 0:
                    continue
                need_left, need_right, free, gap_after, gap_before = _neighbours(
                    c, node_group[m], group_at, gaps)
                if need_left or need_right or gap_after or gap_before:
                    # What came before the node in its tree (its ancestors) counts if one
                    # of them may take an unmatched item before it or stand in a gap
                    # before it.
                    lone = _lone_event(m, node_kind, node_parent, child_start)
                    past = (not lone and not gap_after and (need_left or gap_before)
                            and _ancestor_in_reach(m, c, node_group[m], need_left, gaps,
                                                   group_at, before_at, after_at,
                                                   node_parent, node_kind, node_instant))
                    if lone:
                        key[r, e + slot[c]] = -2 - node_tree[m]
                    elif gap_after or past:
                        # The nearest node before a gap keeps it even with classes: the
                        # weighed paths out of it end at the group's nearest node after
                        # the gap, which may stand for its tree, so two members of a
                        # class could pair with nodes that do not correspond.
                        key[r, e + slot[c]] = m
                    else:
                        # Only what follows the node counts: nothing, or its class.
                        # (Items after ``free`` are placed after the item before it.)
                        below = (_placed_below(m, node_instant[nodes[r, free - 1]],
                                               node_kind, node_instant, child_start,
                                               child_list, stack)
                                 if need_right else _NOTHING_AFTER)
                        if below == _NOTHING_AFTER:
                            key[r, e + slot[c]] = -2 - node_tree[m]
                        elif classes and not nested[node_tree[m]]:
                            key[r, e + slot[c]] = _class_key(m, node_tree, node_parent,
                                                             node_kind, node_row)
                            key[r, e + w + slot[c]] = node_instant[m]
                        else:
                            key[r, e + slot[c]] = m
                if _instant_read(c, first, last, group_at, gaps):
                    key[r, e + w + slot[c]] = node_instant[m]
    return key


def keep_extreme_ends(table: NodeTable, nodes: np.ndarray, merged_into: np.ndarray,
                      merged_nodes: np.ndarray) -> None:
    """Give each merged entry (``merged_nodes``, in place) the earliest first-item node
    and the latest last-item node of the entries ``nodes`` merged into it
    (``merged_into``: per entry, its merged entry). Members agree on every key column, so
    any of them stands for the others; the ends' instants differ only where the key left
    them out (both ends matched), and there the answer's ``t_first`` is the earliest and
    ``t_last`` the latest over the tuple's worlds (SEMANTICS A4).

    >>> from types import SimpleNamespace
    >>> t = SimpleNamespace(instant=np.array([5, 3, 9, 7]))
    >>> merged = np.array([[0, 2]])
    >>> keep_extreme_ends(t, np.array([[0, 2], [1, 3]]), np.array([0, 0]), merged)
    >>> merged.tolist()
    [[1, 2]]
    """
    if nodes.shape[1] and len(nodes):
        _keep_extreme_ends(nodes, np.ascontiguousarray(merged_into, dtype=np.int64),
                           table.instant, merged_nodes)


@numba.njit(cache=True, nogil=True)
def _keep_extreme_ends(nodes: np.ndarray, merged_into: np.ndarray, instant: np.ndarray,
                       merged_nodes: np.ndarray) -> None:
    """:func:`keep_extreme_ends`, in place: each merged entry's first-item node becomes
    the earliest of its members' and its last-item node the latest (SEMANTICS A4:
    ``t_first`` and ``t_last`` range over the tuple's worlds; docs/design.md, The batch
    engine: Negation, on why a merged entry's ends need not lie on one OI).

    Parameters
    ----------
    nodes : (n, k) int64
        The entries before merging (-1 where unmatched).
    merged_into : (n,) int64
        Per entry, the merged entry it went into.
    instant : (nodes,) int64
        The node table's instant per node.
    merged_nodes : (g, k) int64
        The merged entries' nodes, each one of its members' (so matched where they
        are); columns 0 and ``k - 1`` are rewritten.
    """
    last = nodes.shape[1] - 1
    for r in range(len(nodes)):
        o = merged_into[r]
        m = nodes[r, 0]
        if m >= 0 and instant[m] < instant[merged_nodes[o, 0]]:
            merged_nodes[o, 0] = m
        m = nodes[r, last]
        if m >= 0 and instant[m] > instant[merged_nodes[o, last]]:
            merged_nodes[o, last] = m
