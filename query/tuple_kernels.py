"""A tuple's probability from its events alone: the dynamic programme over its matched
items in pattern order (SEMANTICS A4 conditions 1-2; Zhou et al. 4.1's chain
factorisation), compiled.

The batch engine keeps one entry per path of nodes through a partial tuple's events, and
every column next to an unmatched item keeps its instant in its entries' merge keys, so
a partial tuple whose matched items are scattered holds the cross product of its
columns' instants (docs/design.md, "Tuples instead of entries"). Once its events are
fixed, a partial tuple's probability needs far less: walked in pattern order, what the
next matched event depends on is

* the first matched instant (the window) and the previous one (strict order, with room
  for the unmatched items between: ``t_q - t_p >= q - p``);
* per group with a *later* matched event, the group's last node so far, and of that only
  what the group's next matched event can see: the node's context node in the deepest
  tree that also holds a node of that event (a tree the next event has no node in is seen
  from outside as its virtual node). A group without a later
  matched event drops out.

States are keyed on exactly that and merged, so each layer holds the distinct futures,
not the paths. The relaxed constraints make a partial tuple's sum an upper bound of every
completion's confidence (the pruning bound); with every item matched it is the tuple's
probability.

With negation (only for complete tuples), the factor of an entry depends on the gaps'
instants and, per group, on its nodes nearest to each gap
(:mod:`~uncertain_cep.query.negation_kernels`); the states then also keep those nodes,
exactly where the node's unit (its isolated subsequence, or the whole group) may hold a
weighed node or another such node of the group, and otherwise one canonical node of the
event at its instant (a unit without weighed nodes contributes the same ratio through any
of its nodes). Each group's factor is folded into the classes once it is known, and
the factor of the groups outside the tuple (which depends on the gaps alone) last; the
gaps' bounds then leave the keys, so the layers after the last fold hold no more classes
than without negation.
"""

from __future__ import annotations

import queue
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from uncertain_cep.index.forest import REAL
from uncertain_cep.index.node_table import NodeTable
from uncertain_cep.query.chain_kernels import _bisect, _extension
from uncertain_cep.query.instants import NO_TIME
from uncertain_cep.query.kernel_threads import KERNEL_LOCK
from uncertain_cep.query.negation_kernels import (
    MemoArrays,
    NegatedNodes,
    _group_factor,
    _same_row,
    _weighted_sums,
    grown_memo,
    kernel_tables,
    memo_add,
    memo_lookup,
    new_memo,
    scratch_arrays,
)

__all__ = ["ROOM", "TupleTable", "negated_probabilities", "tuple_probabilities"]

# Classes a programme's layer has room for at first; a tuple that may need more runs
# again with what it asks for. Measured on localization n = 20 query 2's tuples: 2.4%
# run again with room for 64 (13% with 16), and 64 was the fastest of 16 to 256.
ROOM = 64



class TupleTable:
    """What the kernels read of a :class:`NodeTable`, with derived arrays: per group
    whether its top tree is only a chain of isolated subsequences (so each subsequence's
    tree is one unit, independent of the others), per tree its root's code, and per
    node one that stands for it where only its future counts (:func:`future_nodes`;
    itself unless ``classes``: the index was built without Condition 2)."""

    def __init__(self, table: NodeTable, classes: bool = False) -> None:
        self.table = table
        n_groups = len(table.group_start) - 1
        # A group's top tree is a chain when none of its nodes is an event's.
        top = table.tree_start[:-1]
        chain = np.ones(n_groups, dtype=np.bool_)
        real_top = (table.kind == REAL) & (table.tree_level[table.tree] == 0)
        chain[np.unique(table.group[real_top])] = False
        chain &= table.tree_start[1:] > top
        self.top_chain = chain
        roots = table.tree_root
        self.root_code = np.where(roots >= 0, table.code[np.maximum(roots, 0)], -1).astype(
            np.int64)
        # Each row's nodes by code: the nodes that may follow a node are then a few
        # runs of them (its descendant code ranges), found by bisection.
        starts = table.row_nodes_start
        owner = np.repeat(np.arange(len(starts) - 1), np.diff(starts))
        by_code = table.row_nodes[np.lexsort((table.code[table.row_nodes], owner))]
        self.arrays = (table.row_nodes_start, table.row_nodes, table.instant, table.group,
                       table.tree, table.tree_level, table.tree_parent, table.tree_virtual,
                       table.poi, table.code, table.code_end, table.tree_last_code,
                       self.root_code, table.row, self.top_chain,
                       np.ascontiguousarray(by_code, dtype=np.int64),
                       future_nodes(table) if classes
                       else np.arange(len(table.group), dtype=np.int64))
        # What the negation kernel reads (its own layout), for folding a group's factor.
        self.node_arrays = kernel_tables(table, NegatedNodes([], [], [], []))[1]


def future_nodes(table: NodeTable) -> np.ndarray:
    """Per node, the first node of its class: the nodes of its event at its instant in
    its tree with the same set of events above them there (the node itself in a tree
    that other trees hang below). Without Condition 2 every OI of a group is equally
    likely, so what follows a node depends only on the events still to come and its
    instant: the subtrees of a class are alike, node for node, with the same factors
    and the same weights in a gap (as :mod:`~uncertain_cep.query.merge_keys` merges
    entries)."""
    n = len(table.group)
    kind = np.asarray(table.kind)
    parent = np.asarray(table.parent, dtype=np.int64)
    row = np.asarray(table.row, dtype=np.int64)
    tree = np.asarray(table.tree, dtype=np.int64)
    above = _above_hashes(parent, kind, row, REAL)
    real = (kind == REAL) & ~table.nests_trees[tree]
    future = np.arange(n, dtype=np.int64)
    nodes = np.flatnonzero(real)
    order = nodes[np.lexsort((nodes, above[nodes], table.instant[nodes], row[nodes],
                              tree[nodes]))]
    if len(order) == 0:
        return future
    keys = np.stack([tree[order], row[order], table.instant[order],
                     above[order].view(np.int64)])
    start = np.concatenate([[True], (keys[:, 1:] != keys[:, :-1]).any(axis=0)])
    first = order[np.flatnonzero(start)][np.cumsum(start) - 1]
    # (Equal sums of hashes of sets that differ: the node keeps its own identity.)
    same = _same_events_above(order, first, parent, kind, row, REAL)
    future[order[same]] = first[same]
    return future


@numba.njit(cache=True, nogil=True)
def _above_hashes(parent: np.ndarray, kind: np.ndarray, row: np.ndarray, real: int
                  ) -> np.ndarray:
    """Per node, the sum of a 64-bit hash of each event above it in its tree."""
    out = np.zeros(len(parent), dtype=np.uint64)
    for m in range(len(parent)):
        h = np.uint64(0)
        p = parent[m]
        while p >= 0 and kind[p] == real:
            z = np.uint64(row[p]) + np.uint64(0x9E3779B97F4A7C15)
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            h += z ^ (z >> np.uint64(31))
            p = parent[p]
        out[m] = h
    return out


@numba.njit(cache=True, nogil=True)
def _same_events_above(nodes: np.ndarray, firsts: np.ndarray, parent: np.ndarray,
                       kind: np.ndarray, row: np.ndarray, real: int) -> np.ndarray:
    """Whether each of ``nodes`` has the same set of events above it in its tree as
    the node in ``firsts`` beside it."""
    out = np.ones(len(nodes), dtype=np.bool_)
    for i in range(len(nodes)):
        a, b = nodes[i], firsts[i]
        if a == b:
            continue
        rows_a = np.empty(0, dtype=np.int64)
        p = parent[a]
        while p >= 0 and kind[p] == real:
            rows_a = np.append(rows_a, row[p])
            p = parent[p]
        rows_b = np.empty(0, dtype=np.int64)
        p = parent[b]
        while p >= 0 and kind[p] == real:
            rows_b = np.append(rows_b, row[p])
            p = parent[p]
        out[i] = (len(rows_a) == len(rows_b)
                  and (np.sort(rows_a) == np.sort(rows_b)).all())
    return out


# A compiled call that passes arrays costs about 90 ns in reference counting unless it is
# inlined: the chain factor runs once per transition, so inline.
# (With NUMBA_DISABLE_JIT the kernels are plain functions, without ``py_func``.)
_extension_inline = numba.njit(cache=True, nogil=True, inline="always")(
    getattr(_extension, "py_func", _extension))


# ---------------------------------------------------------------- small hash of rows

@numba.njit(cache=True, nogil=True, inline="always")
def _hash(row: np.ndarray) -> np.uint64:
    h = np.uint64(0x9E3779B97F4A7C15)
    for v in row:
        h ^= np.uint64(v) + np.uint64(0x9E3779B97F4A7C15) + (h << np.uint64(6)) \
            + (h >> np.uint64(2))
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(31)
    return h


@numba.njit(cache=True, nogil=True, inline="always")
def _find(keys: np.ndarray, layer: int, slot_row: np.ndarray, slot_stamp: np.ndarray,
          stamp: int, key: np.ndarray) -> np.int64:
    """The slot of ``key`` in a table of the rows of ``keys[layer]`` (open addressing; a
    slot is taken when its stamp is the table's current ``stamp``): where it is, or the
    free slot where it goes."""
    mask = len(slot_row) - 1
    s = np.int64(_hash(key) & np.uint64(mask))
    w = len(key)
    while slot_stamp[s] == stamp:
        i = slot_row[s]
        same = True
        for c in range(w):
            if keys[layer, i, c] != key[c]:
                same = False
                break
        if same:
            return s
        s = (s + 1) & mask
    return s


# ---------------------------------------------------------------- the programme

@numba.njit(cache=True, nogil=True, inline="always")
def _unit(v: int, t: tuple) -> int:
    """The unit node ``v`` lies in: its isolated subsequence's tree where the group's top
    tree is a chain of them, else the group's top tree."""
    group, tree, tree_level, tree_parent, top_chain = t[3], t[4], t[5], t[6], t[14]
    tr = tree[v]
    floor = 1 if top_chain[group[v]] else 0
    while tree_level[tr] > floor:
        tr = tree_parent[tr]
    return tr


@numba.njit(cache=True, nogil=True, inline="always")
def _snap(instants: np.ndarray, value: int, up: bool, limit: int) -> int:
    """The nearest of the sorted ``instants`` at or below ``value`` (at or above it when
    ``up``), or ``limit`` where there is none."""
    if up:
        p = np.searchsorted(instants, value, side="left")
        return instants[p] if p < len(instants) else limit
    p = np.searchsorted(instants, value, side="right") - 1
    return instants[p] if p >= 0 else limit


@numba.njit(cache=True, nogil=True)
def _programme(events: np.ndarray, k: int, length: int, bounded: bool,
               gap_columns: np.ndarray | None, neg: tuple | None, t: tuple, floor: float,
               lo_out: np.ndarray, hi_out: np.ndarray, fold: tuple | None,
               memo: MemoArrays | None, cap: int) -> tuple[float, int, int, int]:
    """The dynamic programme for one tuple (``events``: a row of ``k`` archive rows, -1
    where unmatched). Returns its summed probability (0 once a layer's falls below
    ``floor``: every layer's sum bounds the next), the earliest first and latest last
    instant over its final states, and the number of states of its last layer. Writes
    each column's reachable instants to ``lo_out`` and ``hi_out`` (+-NO_TIME where
    unmatched). A probability of -1 says that a layer may hold more than ``cap``
    classes, and how many (in place of the states): run it again with that room
    (:func:`_run`).

    With negation, each group's factor is a product over its segments (:func:`_segments`:
    the stretch between its columns around some gaps), and each segment's factor
    (:func:`~uncertain_cep.query.negation_kernels._group_factor` of its two ends;
    ``fold``: the NOT items' weights and the negation kernel's tables and scratch,
    ``memo`` its values) is multiplied into the classes as soon as its ends and its
    gaps' bounds are matched; a kept node leaves the key after its last segment, a
    gap's bounds after theirs: either would otherwise split every later layer (measured
    on localization n = 20 query 2: folding whole groups, once every gap was matched,
    kept three exact nodes at once and 100-2,000 classes a layer)."""
    row_nodes_start, row_nodes, instant, group = t[0], t[1], t[2], t[3]
    tree, tree_level, tree_parent, tree_virtual = t[4], t[5], t[6], t[7]
    poi, code, code_end, tree_last_code = t[8], t[9], t[10], t[11]
    root_code, top_chain, by_code, future = t[12], t[14], t[15], t[16]
    cols = np.empty(k, dtype=np.int64)
    m = 0
    for c in range(k):
        lo_out[c], hi_out[c] = -NO_TIME, NO_TIME
        if events[c] >= 0:
            cols[m] = c
            m += 1
    # Each column's group slot and the next column of its group (-1: none).
    slot = np.empty(m, dtype=np.int64)
    groups = np.empty(m, dtype=np.int64)
    n_groups = 0
    for j in range(m):
        g = group[row_nodes[row_nodes_start[events[cols[j]]]]]
        s = 0
        while s < n_groups and groups[s] != g:
            s += 1
        if s == n_groups:
            groups[s] = g
            n_groups += 1
        slot[j] = s
    next_same = np.full(m, -1, dtype=np.int64)
    for j in range(m):
        for j2 in range(j + 1, m):
            if slot[j2] == slot[j]:
                next_same[j] = j2
                break
    span = length - cols[0] - (k - 1 - cols[m - 1]) if bounded else NO_TIME
    # A first instant from which every later one is within the window is clipped there:
    # those states differ only in the first instant the answer reports (kept aside).
    e_last = events[cols[m - 1]]
    latest = -NO_TIME
    for q in range(row_nodes_start[e_last], row_nodes_start[e_last + 1]):
        latest = max(latest, instant[row_nodes[q]])
    clip = latest - span if bounded else -NO_TIME
    # Negation: the columns keeping their exact node (``rel``: their place), and the
    # gaps' bounds, snapped to the instants of the NOT items' nodes.
    rel = np.full(m, -1, dtype=np.int64)
    n_rel = 0
    # (Without negation the caller passes None for its arguments, and numba compiles the
    # programme without the code that reads them: ``gap_columns is None`` is pruned.)
    n_gaps = 0 if gap_columns is None else len(gap_columns)
    # Negation folds per segment: a group's stretch between its columns before and
    # after some gaps (-1 where the group has none: before its first or after its last
    # column), folded in once both ends and those gaps' bounds are matched; a kept node
    # and a gap's bounds leave the key after their last segment's fold. (Pieces of one
    # allocation, empty without a gap: a programme's allocations are much of its cost.)
    most_segs = n_gaps * n_groups
    pieces = rel[:0] if gap_columns is None else np.empty(
        4 * n_gaps + 1 + 2 * m + most_segs * (4 + n_gaps), dtype=np.int64)
    at_piece = 0
    weighed = pieces[:0]
    weighed_start = pieces[at_piece:at_piece + n_gaps + 1]
    at_piece += n_gaps + 1
    widest = pieces[at_piece:at_piece + 2 * n_gaps].reshape((n_gaps, 2))
    at_piece += 2 * n_gaps
    near = pieces[at_piece:at_piece + m if n_gaps > 0 else at_piece]
    at_piece += len(near)
    keep_until = pieces[at_piece:at_piece + len(near)]
    at_piece += len(near)
    bounds_until = pieces[at_piece:at_piece + n_gaps]
    at_piece += n_gaps
    seg_group = pieces[at_piece:at_piece + most_segs]
    at_piece += most_segs
    seg_fold = pieces[at_piece:at_piece + most_segs]
    at_piece += most_segs
    seg_ends = pieces[at_piece:at_piece + 2 * most_segs].reshape((most_segs, 2))
    at_piece += 2 * most_segs
    seg_gaps = pieces[at_piece:at_piece + most_segs * n_gaps].reshape((most_segs, n_gaps))
    pieces[:] = 0
    near[:] = 0
    keep_until[:] = -1
    bounds_until[:] = -1
    seg_fold[:] = -1
    n_segs = 0
    outside_at = -1
    outside = False
    if gap_columns is not None and n_gaps > 0:
        assert neg is not None
        n_rel, weighed, weighed_start, outside = _exact_columns(
            events, cols, m, slot, n_groups, gap_columns, neg, t, rel, widest, near)
        n_segs, outside_at = _segments(cols, m, slot, n_groups, gap_columns, outside,
                                       seg_group, seg_ends, seg_fold, seg_gaps, keep_until,
                                       bounds_until)
    # A class of states: the clipped first instant, per group the context its next
    # matched event sees (-1: none), the exact nodes kept and the gaps' snapped bounds;
    # within a class, one probability (and earliest true first instant) per instant of
    # the column just matched.
    base = 1 + n_groups
    width = base + n_rel + 2 * n_gaps
    # Per node of each column's event (flat, ``at[j]`` onwards): its instant, what its
    # group's next matched event sees of it, the gap bounds it sets, and which nodes
    # lead to the same class from any class (``sig``: one number per distinct target).
    at = np.empty(m + 1, dtype=np.int64)
    at[0] = 0
    for j in range(m):
        e = events[cols[j]]
        at[j + 1] = at[j] + row_nodes_start[e + 1] - row_nodes_start[e]
    seen = np.empty(at[m], dtype=np.int64)
    node_code = np.empty(at[m], dtype=np.int64)
    bound = np.full((at[m], 2), -1, dtype=np.int64)
    sig = np.empty(at[m], dtype=np.int64)
    n_sigs = np.zeros(m, dtype=np.int64)
    side = np.full((m, 2), -1, dtype=np.int64)
    first_at = np.empty(m, dtype=np.int64)
    span_at = np.empty(m, dtype=np.int64)
    for j in range(m):
        e = events[cols[j]]
        a0 = row_nodes_start[e]
        if gap_columns is not None:
            for gi in range(n_gaps):
                if gap_columns[gi] == cols[j]:
                    side[j, 0] = gi
                if gap_columns[gi] + 1 == cols[j]:
                    side[j, 1] = gi
        left, right = side[j, 0], side[j, 1]
        lo_t, hi_t = NO_TIME, -NO_TIME
        seen_tree, seen_of_tree = -1, -1
        for f in range(at[j], at[j + 1]):
            v = by_code[a0 + f - at[j]]
            node_code[f] = code[v]
            lo_t = min(lo_t, instant[v])
            hi_t = max(hi_t, instant[v])
            if next_same[j] < 0:
                seen[f] = -1
            else:
                if tree[v] != seen_tree:
                    # What the group's next event ``later`` sees of a node in this tree
                    # (the same for all its nodes): the node itself (-2) where the tree
                    # holds a node of ``later``, else the virtual node of the outermost
                    # tree around it that holds none (seen from outside a tree, any node
                    # in it is its virtual node: the same descendants outside it and the
                    # same context node in every tree enclosing it); -1 (none) for a
                    # virtual node of a group's top chain of isolated subsequences, which
                    # every OI passes (``poi`` 1) and every later subsequence's nodes
                    # descend from. (Written out: a call passing the arrays costs an
                    # atomic reference count per array.)
                    seen_tree = tr = tree[v]
                    later = events[cols[next_same[j]]]
                    seen_of_tree = -2
                    while tree_level[tr] >= 1:
                        inside = False
                        for q in range(row_nodes_start[later], row_nodes_start[later + 1]):
                            if root_code[tr] <= code[row_nodes[q]] <= tree_last_code[tr]:
                                inside = True
                                break
                        if inside:
                            break
                        seen_of_tree = tree_virtual[tr]
                        tr = tree[seen_of_tree]
                    if (seen_of_tree >= 0 and tree_level[tr] == 0
                            and top_chain[group[seen_of_tree]] and poi[seen_of_tree] == 1.0):
                        seen_of_tree = -1
                seen[f] = v if seen_of_tree == -2 else seen_of_tree
            if left >= 0:
                bound[f, 0] = _snap(weighed[weighed_start[left]:weighed_start[left + 1]],
                                    instant[v], False, widest[left, 0])
            if right >= 0:
                bound[f, 1] = _snap(weighed[weighed_start[right]:weighed_start[right + 1]],
                                    instant[v], True, widest[right, 1])
            # A kept exact node is a class of its own; else the first node alike.
            sig[f] = -1
            if rel[j] < 0:
                for f2 in range(at[j], min(f, at[j] + 8)):
                    if (seen[f2] == seen[f] and bound[f2, 0] == bound[f, 0]
                            and bound[f2, 1] == bound[f, 1]):
                        sig[f] = sig[f2]
                        break
            if sig[f] < 0:
                sig[f] = n_sigs[j]
                n_sigs[j] += 1
        first_at[j], span_at[j] = lo_t, hi_t - lo_t + 1
    # Two layers of classes, room for ``cap`` each (the one read, ``cur``, and the one
    # built; each class's row is set when it is made), and one hash table of class keys,
    # whose stamp moves on with every layer instead of being cleared. No array is
    # swapped or regrown in the loops below: numba counts references to an array
    # variable reassigned in a loop, atomically, on every pass (measured: two thirds of
    # the programme's time). A layer that may need more room returns instead, and the
    # caller runs the tuple again with room enough (:func:`_run`).
    d_max = span_at[:m].max()
    keys = np.empty((2, cap, width), dtype=np.int64)
    vec = np.empty((2, cap, d_max))
    fst = np.empty((2, cap, d_max), dtype=np.int64)
    cur = 0
    slot_row = np.empty(4 * cap, dtype=np.int64)
    slot_stamp = np.full(4 * cap, -1, dtype=np.int64)
    cum = np.empty(d_max)
    earliest = np.empty(d_max, dtype=np.int64)
    stamp = 0
    n = 0
    key = np.empty(width, dtype=np.int64)
    target = np.empty(max(1, n_sigs.max()), dtype=np.int64)
    for j in range(m):
        e = events[cols[j]]
        a0 = row_nodes_start[e]
        left, right = side[j, 0], side[j, 1]
        stamp += 1
        s = slot[j]
        d, first_j = span_at[j], first_at[j]
        n_new = 0
        nxt = 1 - cur
        t_lo, t_hi = NO_TIME, -NO_TIME
        if j > 0:
            gap = cols[j] - cols[j - 1]
            d_prev, first_prev = span_at[j - 1], first_at[j - 1]
        # Each class reaches at most one class per distinct target of the column's nodes.
        most = n * n_sigs[j] if j > 0 else at[1] - at[0]
        if most > cap:
            return -1.0, NO_TIME, -NO_TIME, most
        for c in range(n if j > 0 else 1):
            if j > 0:
                # Per instant of the previous column, the class's mass at or before it.
                acc, low = 0.0, NO_TIME
                for x in range(d_prev):
                    acc += vec[cur, c, x]
                    if vec[cur, c, x] > 0.0:
                        low = min(low, fst[cur, c, x])
                    cum[x] = acc
                    earliest[x] = low
                if acc <= 0.0:
                    continue
                tf, a = keys[cur, c, 0], keys[cur, c, 1 + s]
            for g in range(n_sigs[j]):
                target[g] = -1
            # The nodes that may follow the group's context ``a``: those in its
            # descendant code ranges, one in its tree and one past each tree around it
            # (:func:`~uncertain_cep.query.chain_kernels._descends`).
            code_lo, code_hi, around = -NO_TIME, NO_TIME, -1
            if j > 0 and a >= 0:
                code_lo, code_hi, around = code[a], code_end[a], tree[a]
            f_end = at[j + 1]
            while True:
                f0 = _bisect(node_code, at[j], f_end, code_lo)
                f1 = _bisect(node_code, f0, f_end, code_hi)
                for f in range(f0, f1):
                    v = by_code[a0 + f - at[j]]
                    tv = instant[v]
                    if j == 0:
                        p = poi[v]
                        low = tv
                    else:
                        x = tv - gap - first_prev
                        if x < 0:
                            continue
                        if x >= d_prev:
                            x = d_prev - 1
                        if cum[x] <= 0.0 or tv - tf > span:
                            continue
                        if a >= 0:
                            p = cum[x] * _extension_inline(a, v, poi, tree, tree_parent,
                                                           tree_level, tree_virtual)
                        else:
                            p = cum[x] * poi[v]
                        low = earliest[x]
                    if p <= 0.0:
                        continue
                    # (The first column's class holds its own instant, clipped: no sharing.)
                    r = target[sig[f]] if j > 0 else -1
                    if r < 0:
                        if j == 0:
                            key[0] = min(tv, clip) if bounded else tv
                            for col in range(1, width):
                                key[col] = -1
                        else:
                            for col in range(width):
                                key[col] = keys[cur, c, col]
                        key[1 + s] = seen[f]
                        if rel[j] >= 0:
                            key[base + rel[j]] = v
                        if left >= 0:
                            key[base + n_rel + 2 * left] = bound[f, 0]
                        if right >= 0:
                            key[base + n_rel + 2 * right + 1] = bound[f, 1]
                        h = _find(keys, nxt, slot_row, slot_stamp, stamp, key)
                        if slot_stamp[h] == stamp:
                            r = slot_row[h]
                        else:
                            r = n_new
                            for col in range(width):
                                keys[nxt, r, col] = key[col]
                            for y in range(d):
                                vec[nxt, r, y] = 0.0
                                fst[nxt, r, y] = NO_TIME
                            slot_row[h], slot_stamp[h] = r, stamp
                            n_new += 1
                        if j > 0:
                            target[sig[f]] = r
                    y = tv - first_j
                    vec[nxt, r, y] += p
                    fst[nxt, r, y] = min(fst[nxt, r, y], low)
                    t_lo = min(t_lo, tv)
                    t_hi = max(t_hi, tv)
                if around < 0 or tree_virtual[around] < 0:
                    break
                outer = tree_virtual[around]
                code_lo, code_hi, around = tree_last_code[around], code_end[outer], tree[outer]
        cur = nxt
        n = n_new
        lo_out[cols[j]], hi_out[cols[j]] = t_lo, t_hi
        alike = n_gaps > 0 and rel[j] >= 0 and keep_until[j] > j
        if gap_columns is not None and n > 0 and n_gaps > 0 and (
                (seg_fold[:n_segs] == j).any() or outside_at == j or alike):
            assert neg is not None and fold is not None and memo is not None
            _fold(j, n, d, keys[cur], vec[cur], events, cols, m, slot, groups, rel,
                  n_segs, seg_group, seg_ends, seg_fold, seg_gaps, keep_until,
                  bounds_until, gap_columns, neg[3], base, n_rel, fold, memo, t)
            if j == outside_at:
                _fold_outside(n, d, keys[cur], vec[cur], groups[:n_groups], base + n_rel,
                              gap_columns, neg[3], k, fold, memo)
            _clear_folded(j, n, keys[cur], rel, keep_until, bounds_until, base, n_rel)
            if alike:
                # The node just kept is the earlier end of a segment still open: only
                # what follows it counts now, so it stands for its class (where its
                # group's next event has no node in its tree; else its context is the
                # node itself, and the segment's ends must lie on one OI).
                for c in range(n):
                    v = keys[cur, c, base + rel[j]]
                    if keys[cur, c, 1 + s] != v:
                        keys[cur, c, base + rel[j]] = future[v]
            # Classes that differed only in what left the key merge; a cell a factor of 0
            # emptied gives no first instant.
            stamp += 1
            n_new = 0
            nxt = 1 - cur
            for c in range(n):
                for col in range(width):
                    key[col] = keys[cur, c, col]
                h = _find(keys, nxt, slot_row, slot_stamp, stamp, key)
                if slot_stamp[h] == stamp:
                    r = slot_row[h]
                    for y in range(d):
                        vec[nxt, r, y] += vec[cur, c, y]
                        if vec[cur, c, y] > 0.0:
                            fst[nxt, r, y] = min(fst[nxt, r, y], fst[cur, c, y])
                else:
                    r = n_new
                    for col in range(width):
                        keys[nxt, r, col] = key[col]
                    for y in range(d):
                        vec[nxt, r, y] = vec[cur, c, y]
                        fst[nxt, r, y] = fst[cur, c, y] if vec[cur, c, y] > 0.0 else NO_TIME
                    slot_row[h], slot_stamp[h] = r, stamp
                    n_new += 1
            cur = nxt
            n = n_new
        if n > 0 and floor > 0.0 and vec[cur, :n, :d].sum() < floor:
            n = 0
        if n == 0:
            return 0.0, NO_TIME, -NO_TIME, 0
    # Each column's reachable instants, narrowed by the ones after it.
    for j in range(m - 2, -1, -1):
        hi_out[cols[j]] = min(hi_out[cols[j]], hi_out[cols[j + 1]] - (cols[j + 1] - cols[j]))
    # The final cells, with their first and last instants.
    first_m = first_at[m - 1]
    cells = 0
    total = 0.0
    first, last = NO_TIME, -NO_TIME
    for c in range(n):
        for y in range(span_at[m - 1]):
            if vec[cur, c, y] > 0.0:
                cells += 1
                total += vec[cur, c, y]
                first = min(first, fst[cur, c, y])
                last = max(last, first_m + y)
    return total, first, last, cells


@numba.njit(cache=True, nogil=True, inline="always")
def _run(events: np.ndarray, k: int, length: int, bounded: bool,
         gap_columns: np.ndarray | None, neg: tuple | None, t: tuple, floor: float,
         lo_out: np.ndarray, hi_out: np.ndarray, fold: tuple | None,
         memo: MemoArrays | None, room: int) -> tuple[float, int, int, int]:
    """:func:`_programme` with room for its classes, ``room`` at first: most tuples
    need little, and a few are run again with the room their programme asked for.
    (Inlined: a call counts each array it passes, and this one passes some fifty;
    5.1 -> 4.5 us a tuple. Inlining the programme itself into the parallel loop changed
    10 of 743,161 tuples' probabilities, so it is not.)"""
    cap = room
    while True:
        out = _programme(events, k, length, bounded, gap_columns, neg, t, floor, lo_out,
                         hi_out, fold, memo, cap)
        if out[0] >= 0.0:
            return out
        while cap < out[3]:
            cap *= 2


@numba.njit(cache=True, nogil=True, inline="always")
def _key_width(k: int, n_not: int) -> int:
    """The width of the negation memo's keys (:func:`_fold`, :func:`_fold_outside`)."""
    return 3 + 2 * n_not + k


@numba.njit(cache=True, nogil=True, inline="always")
def _gap_of_each(gap_columns: np.ndarray, neg_columns: np.ndarray) -> np.ndarray:
    """Per NOT item (its column before, ``neg_columns``), its gap's index in
    ``gap_columns``."""
    which = np.empty(len(neg_columns), dtype=np.int64)
    for x in range(len(neg_columns)):
        gi = 0
        while gap_columns[gi] != neg_columns[x]:
            gi += 1
        which[x] = gi
    return which


@numba.njit(cache=True, nogil=True, inline="always")
def _class_gaps(keys: np.ndarray, c: int, bounds_at: int, which: np.ndarray,
                gap_a: np.ndarray, gap_b: np.ndarray) -> None:
    """Class ``c``'s gap per NOT item (strictly inside its gap's bounds, which its key
    holds from column ``bounds_at``, two per gap), written to ``gap_a`` and ``gap_b``."""
    for x in range(len(which)):
        gap_a[x] = keys[c, bounds_at + 2 * which[x]] + 1
        gap_b[x] = keys[c, bounds_at + 2 * which[x] + 1] - 1


@numba.njit(cache=True, nogil=True, inline="always")
def _segments(cols: np.ndarray, m: int, slot: np.ndarray, n_groups: int,
              gap_columns: np.ndarray, outside: bool, seg_group: np.ndarray,
              seg_ends: np.ndarray, seg_fold: np.ndarray, seg_gaps: np.ndarray,
              keep_until: np.ndarray, bounds_until: np.ndarray) -> tuple[int, int]:
    """A complete tuple's negation segments: per group and gap, the group's last column
    at or before the gap and its first after it (``seg_ends``, -1 where none; gaps with
    the same ends share a segment, ``seg_gaps``), and the column where the segment's
    factor folds in (``seg_fold``: its later end, or without one the last of its gaps'
    right columns). OIs are Markov in their nodes, so a group's weighted sum through
    its columns over their probability is the product of its segments' (each weighs
    only the nodes between its ends, and only its gaps lie there: the columns are in
    time order). Writes, per column, the fold after which its kept node leaves the key
    (``keep_until``) and per gap the one after which its bounds do (``bounds_until``).
    Returns the number of segments and the column where the groups outside the tuple
    fold in (every gap's bounds known; -1 without ``outside``)."""
    n_gaps = len(gap_columns)
    n_segs = 0
    right = 0
    for gi in range(n_gaps):
        jl = 0
        while cols[jl] != gap_columns[gi]:
            jl += 1
        right = max(right, jl + 1)
        for s in range(n_groups):
            before, after = -1, -1
            for j in range(m):
                if slot[j] != s:
                    continue
                if j <= jl:
                    before = j
                elif after < 0:
                    after = j
            q = 0
            while q < n_segs and not (seg_group[q] == s and seg_ends[q, 0] == before
                                      and seg_ends[q, 1] == after):
                q += 1
            if q == n_segs:
                seg_group[q], seg_ends[q, 0], seg_ends[q, 1] = s, before, after
                n_segs += 1
            seg_gaps[q, gi] = True
            seg_fold[q] = max(seg_fold[q], after if after >= 0 else jl + 1)
    for q in range(n_segs):
        before, after = seg_ends[q, 0], seg_ends[q, 1]
        if before >= 0:
            keep_until[before] = max(keep_until[before], seg_fold[q])
        if after >= 0:
            keep_until[after] = max(keep_until[after], seg_fold[q])
        for gi in range(n_gaps):
            if seg_gaps[q, gi]:
                bounds_until[gi] = max(bounds_until[gi], seg_fold[q])
    outside_at = right if outside else -1
    for gi in range(n_gaps):
        bounds_until[gi] = max(bounds_until[gi], outside_at)
    return n_segs, outside_at


@numba.njit(cache=True, nogil=True, inline="always")
def _fold(j: int, n: int, d: int, keys: np.ndarray, vec: np.ndarray, events: np.ndarray,
          cols: np.ndarray, m: int, slot: np.ndarray, groups: np.ndarray, rel: np.ndarray,
          n_segs: int, seg_group: np.ndarray, seg_ends: np.ndarray, seg_fold: np.ndarray,
          seg_gaps: np.ndarray, keep_until: np.ndarray, bounds_until: np.ndarray,
          gap_columns: np.ndarray, neg_columns: np.ndarray, base: int, n_rel: int,
          fold: tuple, memo: MemoArrays, t: tuple) -> None:
    """Multiply each of the ``n`` classes by the factors of the segments folding at
    column ``j`` (:func:`_segments`; a segment's chain: the kept node of each end where
    the class keeps one, else the end's event's first node; its gaps from the class's
    bounds, the other NOT items weighing nothing). Kept nodes from key column ``base``,
    then ``n_rel`` of them, then the gaps' bounds."""
    row_nodes_start, row_nodes, tree_level, tree_parent, poi = t[0], t[1], t[5], t[6], t[8]
    neg, nt, scratch, found_groups, found_values = fold[0], fold[1], fold[2], fold[3], fold[4]
    rows, key, last_key, last_value, candidate_row = fold[5], fold[6], fold[7], fold[8], \
        fold[9]
    bounds_at = base + n_rel
    k, n_not = len(events), len(neg_columns)
    chain, mine, gap_a, gap_b = rows[0], rows[1], rows[2], rows[3]
    seg_a, seg_b, which = rows[4, :n_not], rows[5, :n_not], rows[6, :n_not]
    for x in range(n_not):
        gi = 0
        while gap_columns[gi] != neg_columns[x]:
            gi += 1
        which[x] = gi
    # Each segment's last key and factor: classes that differ in other kept nodes come
    # in runs with the same key for this segment (a compare instead of the memo's hash
    # of the whole key).
    last_key[:n_segs] = -2
    m_slots, m_keys, m_values = memo[0], memo[1], memo[2]
    for c in range(n):
        factor = 1.0
        _class_gaps(keys, c, bounds_at, which, gap_a, gap_b)
        for q in range(n_segs):
            if seg_fold[q] != j:
                continue
            s = seg_group[q]
            size, n_mine = 0, 0
            for j2 in range(m):
                if slot[j2] != s:
                    continue
                e = events[cols[j2]]
                # (Only the group's events that a NOT item may weigh are excluded from
                # weighing: the others are not weighed anyway.)
                if candidate_row[e]:
                    mine[n_mine] = e
                    n_mine += 1
                if j2 == seg_ends[q, 0] or j2 == seg_ends[q, 1]:
                    chain[size] = (keys[c, base + rel[j2]] if rel[j2] >= 0
                                   else row_nodes[row_nodes_start[e]])
                    size += 1
            # (An empty gap, a > b, weighs nothing.)
            for x in range(n_not):
                inside = seg_gaps[q, which[x]]
                seg_a[x] = gap_a[x] if inside else 1
                seg_b[x] = gap_b[x] if inside else 0
            # The memo's key: the group, the chain, the gaps, the excluded events.
            key[0] = groups[s]
            key[1] = chain[0] if size > 0 else -1
            key[2] = chain[1] if size > 1 else -1
            for x in range(n_not):
                key[3 + x] = seg_a[x]
                key[3 + n_not + x] = seg_b[x]
            for y in range(k):
                key[3 + 2 * n_not + y] = mine[y] if y < n_mine else -1
            if _same_row(last_key, q, key):
                factor *= last_value[q]
                continue
            value = memo_lookup(m_slots, m_keys, m_values, key)
            if value < 0.0:
                value = _group_factor(
                    groups[s], chain[:size], mine[:n_mine], seg_a, seg_b, neg, nt, scratch,
                    poi, tree_parent, tree_level, found_groups, found_values)
                memo_add(memo, key, value)
            for y in range(len(key)):
                last_key[q, y] = key[y]
            last_value[q] = value
            factor *= value
        if factor != 1.0:
            for y in range(d):
                vec[c, y] *= factor


@numba.njit(cache=True, nogil=True, inline="always")
def _clear_folded(j: int, n: int, keys: np.ndarray, rel: np.ndarray,
                  keep_until: np.ndarray, bounds_until: np.ndarray, base: int,
                  n_rel: int) -> None:
    """Clear from the ``n`` classes' keys the kept nodes and the gaps' bounds whose last
    fold was at column ``j``: nothing reads them any more, and classes that differ only
    in them merge."""
    bounds_at = base + n_rel
    for c in range(n):
        for j2 in range(len(rel)):
            if rel[j2] >= 0 and keep_until[j2] == j:
                keys[c, base + rel[j2]] = -1
        for gi in range(len(bounds_until)):
            if bounds_until[gi] == j:
                keys[c, bounds_at + 2 * gi] = -1
                keys[c, bounds_at + 2 * gi + 1] = -1


@numba.njit(cache=True, nogil=True, inline="always")
def _fold_outside(n: int, d: int, keys: np.ndarray, vec: np.ndarray, groups: np.ndarray,
                  bounds_at: int, gap_columns: np.ndarray, neg_columns: np.ndarray, k: int,
                  fold: tuple, memo: MemoArrays) -> None:
    """Multiply each of the ``n`` classes by the factor of the groups outside the tuple
    (their weighted sums without a chain: their worlds are independent of the tuple's),
    given the class's gaps (their bounds from key column ``bounds_at``). Only where some
    group outside the tuple has a node that the widest gaps may weigh: else it is 1."""
    neg, nt, scratch, found_groups, found_values = fold[0], fold[1], fold[2], fold[3], fold[4]
    n_not = len(neg_columns)
    gap_a = np.empty(n_not, dtype=np.int64)
    gap_b = np.empty(n_not, dtype=np.int64)
    which = _gap_of_each(gap_columns, neg_columns)
    # Memoised with the segments' factors: -2 where a group goes, the gaps, then the
    # tuple's groups.
    key = np.full(3 + 2 * n_not + k, -1, dtype=np.int64)
    key[0] = -2
    mine = np.sort(groups)
    key[1 + 2 * n_not:1 + 2 * n_not + len(mine)] = mine
    none = np.empty(0, dtype=np.int64)
    for c in range(n):
        _class_gaps(keys, c, bounds_at, which, gap_a, gap_b)
        key[1:1 + n_not] = gap_a
        key[1 + n_not:1 + 2 * n_not] = gap_b
        value = memo_lookup(memo[0], memo[1], memo[2], key)
        if value < 0.0:
            found = _weighted_sums(gap_a, gap_b, none, -1, none, neg, nt, scratch,
                                   found_groups, found_values)
            value = 1.0
            for q in range(found):
                p = np.searchsorted(mine, found_groups[q])
                if p == len(mine) or mine[p] != found_groups[q]:
                    value *= found_values[q]
            memo_add(memo, key, value)
        if value != 1.0:
            for y in range(d):
                vec[c, y] *= value


@numba.njit(cache=True, nogil=True)
def _exact_columns(events: np.ndarray, cols: np.ndarray, m: int, slot: np.ndarray,
                   n_groups: int, gap_columns: np.ndarray, neg: tuple, t: tuple,
                   rel: np.ndarray, widest: np.ndarray, near: np.ndarray
                   ) -> tuple[int, np.ndarray, np.ndarray, bool]:
    """For a complete tuple: the columns nearest to some gap in their group (what the
    negation kernel reads of a chain; written to ``near``) that must keep their exact
    node, numbered in
    ``rel``: where their unit (:func:`_unit`) may hold a weighed node, or holds another
    such column of the group. The others may stand for any node of their event (their
    pseudo-entry takes its first). Returns how many are kept, and per gap (``start``
    offsets) the sorted instants of the nodes it may weigh, strictly inside the widest it
    can be (written to ``widest``: its least start and greatest end): a gap's bound may
    move to the nearest of those instants, or to the widest, and the same nodes lie
    inside. Last, whether any of them is of a group outside the tuple (else the outside
    groups' factor is 1)."""
    row_nodes_start, row_nodes, instant, group, row = t[0], t[1], t[2], t[3], t[13]
    neg_offsets, neg_nodes, neg_instants, neg_columns = neg
    for cj in gap_columns:
        for s in range(n_groups):
            before, after = -1, -1
            for j in range(m):
                if slot[j] != s:
                    continue
                if cols[j] <= cj:
                    before = j
                elif after < 0:
                    after = j
            if before >= 0:
                near[before] = True
            if after >= 0:
                near[after] = True
    # Each column's instants from its nodes, narrowed by the order (every item is
    # matched), to bound where a gap can lie.
    lo = np.empty(m, dtype=np.int64)
    hi = np.empty(m, dtype=np.int64)
    units = np.empty(m, dtype=np.int64)
    for j in range(m):
        e = events[cols[j]]
        units[j] = _unit(row_nodes[row_nodes_start[e]], t)
        lo[j], hi[j] = NO_TIME, -NO_TIME
        for q in range(row_nodes_start[e], row_nodes_start[e + 1]):
            lo[j] = min(lo[j], instant[row_nodes[q]])
            hi[j] = max(hi[j], instant[row_nodes[q]])
    for j in range(1, m):
        lo[j] = max(lo[j], lo[j - 1] + 1)
    for j in range(m - 2, -1, -1):
        hi[j] = min(hi[j], hi[j + 1] - 1)
    exact = np.zeros(m, dtype=np.bool_)
    for j in range(m):
        for j2 in range(m):
            if (near[j] and near[j2] and j2 != j and slot[j2] == slot[j]
                    and units[j2] == units[j]):
                exact[j] = True
    # The nodes that may be weighed: a NOT item's nodes of other events, strictly inside
    # the widest its gap can be; their units keep exact nodes.
    n_gaps = len(gap_columns)
    start = np.zeros(n_gaps + 1, dtype=np.int64)
    weighed = np.empty(16, dtype=np.int64)
    outside = False
    size = 0
    for gi in range(n_gaps):
        jb = 0
        while cols[jb] != gap_columns[gi]:
            jb += 1
        widest[gi, 0], widest[gi, 1] = lo[jb], hi[jb + 1]
        for x in range(len(neg_columns)):
            if neg_columns[x] != gap_columns[gi]:
                continue
            a, b = lo[jb] + 1, hi[jb + 1] - 1
            p0, p1 = neg_offsets[x], neg_offsets[x + 1]
            q = p0 + np.searchsorted(neg_instants[p0:p1], a)
            while q < p1 and neg_instants[q] <= b:
                y = neg_nodes[q]
                q += 1
                mine = False
                for j in range(m):
                    if events[cols[j]] == row[y]:
                        mine = True
                        break
                if mine:
                    continue
                if size == len(weighed):
                    more = np.empty(2 * size, dtype=np.int64)
                    more[:size] = weighed
                    weighed = more
                weighed[size] = instant[y]
                size += 1
                if not outside:
                    outside = True
                    for j in range(m):
                        if group[row_nodes[row_nodes_start[events[cols[j]]]]] == group[y]:
                            outside = False
                            break
                u = _unit(y, t)
                for j in range(m):
                    if near[j] and units[j] == u:
                        exact[j] = True
        start[gi + 1] = size
        weighed[start[gi]:size] = np.sort(weighed[start[gi]:size])
    n_rel = 0
    for j in range(m):
        if near[j] and exact[j]:
            rel[j] = n_rel
            n_rel += 1
    return n_rel, weighed[:size], start, outside


@numba.njit(cache=True, nogil=True, parallel=True)
def _probabilities(events: np.ndarray, length: int, bounded: bool, t: tuple,
                   floor: np.ndarray, chunks: int, room: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                              np.ndarray]:
    n, k = events.shape
    total = np.zeros(n)
    first = np.empty(n, dtype=np.int64)
    last = np.empty(n, dtype=np.int64)
    states = np.zeros(n, dtype=np.int64)
    lo = np.empty((n, k), dtype=np.int64)
    hi = np.empty((n, k), dtype=np.int64)
    for c in numba.prange(chunks):
        # Every chunks-th tuple: the threads' shares of heavy tuples (which come in runs:
        # one parent's children) even out. (No negation: None for its arguments.)
        for r in range(c, n, chunks):
            total[r], first[r], last[r], states[r] = _run(
                events[r], k, length, bounded, None, None, t, floor[r], lo[r], hi[r],
                None, None, room)
    return total, first, last, states, lo, hi


def tuple_probabilities(tables: TupleTable, events: np.ndarray, window: float,
                        floor: np.ndarray | None = None, room: int = ROOM
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                   np.ndarray, np.ndarray]:
    """Per tuple (rows of ``events``, -1 where unmatched): its summed probability over
    the worlds where its matched items keep the pattern's order and window (the pruning
    bound; the probability once complete; 0 where it falls below the tuple's ``floor``),
    its earliest first and latest last instant, the number of states of its programme's
    last layer, and each column's reachable instants (``lo``, ``hi``; +-NO_TIME where
    unmatched). ``room``: the classes a layer has room for before a programme runs
    again with more (the same answer whatever it is)."""
    events = np.ascontiguousarray(events, dtype=np.int64)
    bounded = window != np.inf
    length = int(window) if bounded else 0
    floor = (np.zeros(len(events)) if floor is None
             else np.ascontiguousarray(floor, dtype=np.float64))
    chunks = max(1, min(4 * numba.get_num_threads(), len(events)))
    with KERNEL_LOCK:
        return _probabilities(events, length, bounded, tables.arrays, floor, chunks, room)


@numba.njit(cache=True, nogil=True)
def _negated_probabilities(events: np.ndarray, length: int, bounded: bool,
                           gap_columns: np.ndarray, neg: tuple, t: tuple,
                           floor: np.ndarray, fold: tuple, room: int
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every complete tuple's probability with its negation (every group's factor,
    the tuple's own and the outside ones, folded into its programme), its first and
    last instants over the worlds that count, and its last layer's states."""
    n, k = events.shape
    total = np.zeros(n)
    first = np.empty(n, dtype=np.int64)
    last = np.empty(n, dtype=np.int64)
    states = np.zeros(n, dtype=np.int64)
    lo = np.empty(k, dtype=np.int64)
    hi = np.empty(k, dtype=np.int64)
    # Group factors recur across tuples (same chain, events and gaps): one memo.
    memo = new_memo(_key_width(k, len(neg[3])), 1024)
    for r in range(n):
        total[r], first[r], last[r], states[r] = _run(
            events[r], k, length, bounded, gap_columns, neg, t, floor[r], lo, hi, fold,
            memo, room)
        if memo[3][1]:
            memo = grown_memo(memo)
    return total, first, last, states


def negated_probabilities(tables: TupleTable, events: np.ndarray, window: float,
                          gap_columns: np.ndarray, negated: NegatedNodes,
                          floor: np.ndarray | None = None, room: int = ROOM
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per complete tuple (rows of ``events``): its probability with every negation
    (SEMANTICS A4 condition 4; 0 where the probability falls below its ``floor``), its
    earliest first and latest last instant over the worlds that count, and its
    programme's states. The programme keeps, besides what
    :func:`tuple_probabilities` keeps, each gap's bounds (snapped to the instants of the
    nodes it may weigh) and the exact nodes of the columns nearest to a gap where their
    unit may hold a weighed node, until each group's factor can be folded in; the
    groups outside the tuple fold in last, and the bounds then leave the keys."""
    events = np.ascontiguousarray(events, dtype=np.int64)
    bounded = window != np.inf
    length = int(window) if bounded else 0
    neg = (negated.offsets, negated.nodes, negated.instants, negated.columns)
    weights = (negated.offsets, negated.nodes, negated.instants, negated.weights)
    gaps = np.ascontiguousarray(gap_columns, dtype=np.int64)
    floor = (np.zeros(len(events)) if floor is None
             else np.ascontiguousarray(floor, dtype=np.float64))
    # The programme runs without the GIL: slices of the tuples taken by the threads as
    # they come free (a few tuples may take most of the time: measured on localization
    # n = 15, one slice per thread left one thread idle for a third of the run), each
    # thread with its own scratch for the groups' factors.
    threads = max(1, min(numba.get_num_threads(), len(events) // 64))
    pieces = threads if threads == 1 else min(8 * threads, len(events) // 32)
    cuts = np.linspace(0, len(events), pieces + 1).astype(np.int64)
    scratches = scratch_arrays(tables.table, threads)
    free: queue.SimpleQueue[int] = queue.SimpleQueue()
    for i in range(threads):
        free.put(i)
    n_groups = len(tables.table.group_start) - 1
    k, n_not = events.shape[1], len(negated.columns)
    # The events a NOT item may weigh (a tuple's own are excluded from weighing).
    candidate_row = np.zeros(len(tables.table.row_nodes_start) - 1, dtype=np.bool_)
    candidate_row[tables.table.row[negated.nodes]] = True

    def run(piece: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        i = free.get()
        try:
            # The folds' scratch: their rows of small numbers, the memo's key, each
            # segment's last key and factor.
            fold = (weights, tables.node_arrays, tuple(a[i] for a in scratches),
                    np.empty(n_groups, dtype=np.int64), np.empty(n_groups),
                    np.empty((7, max(k, n_not, 2)), dtype=np.int64),
                    np.empty(_key_width(k, n_not), dtype=np.int64),
                    np.empty((max(1, len(gaps)) * k, _key_width(k, n_not)), dtype=np.int64),
                    np.empty(max(1, len(gaps)) * k), candidate_row)
            a, b = cuts[piece], cuts[piece + 1]
            return _negated_probabilities(events[a:b], length, bounded, gaps, neg,
                                          tables.arrays, floor[a:b], fold, room)
        finally:
            free.put(i)

    with KERNEL_LOCK:
        if threads == 1:
            return run(0)
        with ThreadPoolExecutor(threads) as pool:
            parts = list(pool.map(run, range(pieces)))
    total, first, last, states = (np.concatenate([p[i] for p in parts]) for i in range(4))
    return total, first, last, states
