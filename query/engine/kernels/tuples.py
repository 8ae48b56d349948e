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
(:mod:`~uncertain_cep.query.engine.kernels.negation`); the states then also keep those nodes,
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

from uncertain_cep.index.forests.forest import REAL
from uncertain_cep.index.node_table import NodeTable
from uncertain_cep.query.engine.kernels.chains import chain_extension, first_above
from uncertain_cep.query.engine.kernels.core import KERNEL_LOCK
from uncertain_cep.query.engine.kernels.instants import NO_TIME
from uncertain_cep.query.engine.kernels.negation import (
    MemoArrays,
    NegatedNodes,
    grown_memo,
    kernel_tables,
    new_memo,
    scratch_arrays,
)
from uncertain_cep.query.engine.kernels.negation_folds import (
    clear_folded,
    exact_columns,
    fold_gap,
    fold_outside,
    fold_segments,
    future_nodes,
    key_width,
)

# NO_TIME (query/engine/kernels/instants.py) is compiled into this module's kernels, and numba's
# on-disk cache is keyed by this file alone: a change of its value (3 * 2**60) must
# change this file too.
__all__ = ["NEGATED_ROOM", "ROOM", "TupleTable", "negated_probabilities", "tuple_probabilities"]

# Classes a programme's layer has room for at first; a tuple that may need more runs
# again with what it asks for. Measured on localization n = 20 query 2's tuples: 2.4%
# run again with room for 64 (13% with 16), and 64 was the fastest of 16 to 256.
ROOM = 64
# The same for the negation programme, whose classes multiply by kept nodes and gap
# bounds: on that query's 175,944 tuples that needed one, 64 took 12.5 s on one thread,
# 512 11.4 s (15% less on the many light tuples, 5% on the heaviest 7%), 2,048 no less.
NEGATED_ROOM = 512



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


# A compiled call that passes arrays costs about 90 ns in reference counting unless it is
# inlined: the chain factor runs once per transition, so inline.
# (With NUMBA_DISABLE_JIT the kernels are plain functions, without ``py_func``.)
_extension_inline = numba.njit(cache=True, nogil=True, inline="always")(
    getattr(chain_extension, "py_func", chain_extension))


# ---------------------------------------------------------------- small hash of rows

@numba.njit(cache=True, nogil=True, inline="always")
def _hash(row: np.ndarray) -> np.uint64:
    """A 64-bit hash of the values of ``row`` (a class's key), the hash of
    :mod:`~uncertain_cep.query.engine.kernels.grouping`'s rows: :func:`_find` takes its
    low bits as the key's home slot."""
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

    With negation, each group's factor is a product over its segments (:func:`fold_segments`:
    the stretch between its columns around some gaps), and each segment's factor
    (:func:`~uncertain_cep.query.engine.kernels.negation.group_factor` of its two ends;
    ``fold``: the NOT items' weights and the negation kernel's tables and scratch,
    ``memo`` its values) is multiplied into the classes as soon as what it reads (its
    earlier end's kept node, its gaps' bounds and, where kept, its later end's node) is
    matched; a kept node leaves the key after its last segment, a
    gap's bounds after theirs: either would otherwise split every later layer (measured
    on localization n = 20 query 2: folding whole groups, once every gap was matched,
    kept three exact nodes at once and 100-2,000 classes a layer).

    (SEMANTICS A4 conditions 1-2, and 4 with negation; docs/design.md, Tuples instead of
    entries.)"""
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
        n_rel, weighed, weighed_start, outside = exact_columns(
            events, cols, m, slot, n_groups, gap_columns, neg, t, rel, widest, near)
        n_segs, outside_at = fold_segments(cols, m, slot, n_groups, gap_columns, outside, rel,
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
            # (:func:`~uncertain_cep.query.engine.kernels.chains._descends`).
            code_lo, code_hi, around = -NO_TIME, NO_TIME, -1
            if j > 0 and a >= 0:
                code_lo, code_hi, around = code[a], code_end[a], tree[a]
            f_end = at[j + 1]
            while True:
                f0 = first_above(node_code, at[j], f_end, code_lo)
                f1 = first_above(node_code, f0, f_end, code_hi)
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
            fold_gap(j, n, d, keys[cur], vec[cur], events, cols, m, slot, groups, rel,
                  n_segs, seg_group, seg_ends, seg_fold, seg_gaps, keep_until,
                  bounds_until, gap_columns, neg[3], base, n_rel, fold, memo, t)
            if j == outside_at:
                fold_outside(n, d, keys[cur], vec[cur], groups[:n_groups], base + n_rel,
                              gap_columns, neg[3], k, fold, memo)
            clear_folded(j, n, keys[cur], rel, keep_until, bounds_until, base, n_rel)
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
    10 of 743,161 tuples' probabilities, so it is not. docs/design.md, Reference
    counts in compiled loops.)"""
    cap = room
    while True:
        out = _programme(events, k, length, bounded, gap_columns, neg, t, floor, lo_out,
                         hi_out, fold, memo, cap)
        if out[0] >= 0.0:
            return out
        while cap < out[3]:
            cap *= 2


@numba.njit(cache=True, nogil=True, inline="always")
def _outputs(n: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                      np.ndarray, np.ndarray]:
    """Per tuple its total, first and last instant and states, and per column its
    reachable instants (what :func:`tuple_probabilities` returns)."""
    return (np.zeros(n), np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64),
            np.zeros(n, dtype=np.int64), np.empty((n, k), dtype=np.int64),
            np.empty((n, k), dtype=np.int64))


@numba.njit(cache=True, nogil=True, inline="always")
def _run_rows(events: np.ndarray, length: int, bounded: bool, t: tuple,
              floor: np.ndarray, room: int, out: tuple, start: int, step: int) -> None:
    """The programmes of tuples ``start``, ``start + step``, ... into ``out``
    (:func:`_outputs`). (No negation: None for its arguments.)"""
    total, first, last, states, lo, hi = out
    k = events.shape[1]
    for r in range(start, len(events), step):
        total[r], first[r], last[r], states[r] = _run(
            events[r], k, length, bounded, None, None, t, floor[r], lo[r], hi[r],
            None, None, room)


@numba.njit(cache=True, nogil=True, parallel=True)
def _probabilities(events: np.ndarray, length: int, bounded: bool, t: tuple,
                   floor: np.ndarray, chunks: int, room: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                              np.ndarray]:
    """The programme of every tuple without negation, on numba's threads
    (:func:`tuple_probabilities`; SEMANTICS A4 conditions 1-2; docs/design.md, Tuples
    instead of entries).

    Parameters
    ----------
    events : (n, k) int64
        The tuples' events (archive rows, -1 where unmatched).
    length, bounded
        The window ``L`` in instants, and whether there is one.
    t : tuple
        :attr:`TupleTable.arrays`.
    floor : (n,) float64
        Per tuple, the mass below which its programme stops (0: never).
    chunks : int
        How many strided shares the tuples are cut into (share ``c``: tuples ``c``,
        ``c + chunks``, ...), one per parallel iteration.
    room : int
        The classes a layer has room for at first (:func:`_run`).

    Returns
    -------
    total : (n,) float64
        Each tuple's summed probability (its pruning bound; its probability once
        complete), 0 where it fell below its ``floor``.
    first, last : (n,) int64
        The earliest first and latest last instant over its final states (NO_TIME and
        -NO_TIME where 0).
    states : (n,) int64
        The cells (class and instant) holding mass in its last layer.
    lo, hi : (n, k) int64
        Per column, the earliest and latest instant its event can take in the worlds
        the programme reached (-NO_TIME and NO_TIME where unmatched).
    """
    out = _outputs(len(events), events.shape[1])
    for c in numba.prange(chunks):
        # Every chunks-th tuple: the threads' shares of heavy tuples (which come in runs:
        # one parent's children) even out.
        _run_rows(events, length, bounded, t, floor, room, out, c, chunks)
    return out


@numba.njit(cache=True, nogil=True)
def _probabilities_in_line(events: np.ndarray, length: int, bounded: bool, t: tuple,
                           floor: np.ndarray, room: int
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                      np.ndarray, np.ndarray]:
    """:func:`_probabilities` in the calling thread alone (without numba's threads,
    whose layer admits one caller at a time; docs/design.md, Complete tuples on a
    spare core)."""
    out = _outputs(len(events), events.shape[1])
    _run_rows(events, length, bounded, t, floor, room, out, 0, 1)
    return out


def tuple_probabilities(tables: TupleTable, events: np.ndarray, window: float,
                        floor: np.ndarray | None = None, room: int = ROOM,
                        threads: int | None = None
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                   np.ndarray, np.ndarray]:
    """Per tuple (rows of ``events``, -1 where unmatched): its summed probability over
    the worlds where its matched items keep the pattern's order and window (the pruning
    bound; the probability once complete; 0 where it falls below the tuple's ``floor``),
    its earliest first and latest last instant, the number of states of its programme's
    last layer, and each column's reachable instants (``lo``, ``hi``; +-NO_TIME where
    unmatched). ``room``: the classes a layer has room for before a programme runs
    again with more (the same answer whatever it is). ``threads=1``: in the calling
    thread alone (else on numba's threads)."""
    events = np.ascontiguousarray(events, dtype=np.int64)
    bounded = window != np.inf
    length = int(window) if bounded else 0
    floor = (np.zeros(len(events)) if floor is None
             else np.ascontiguousarray(floor, dtype=np.float64))
    if threads == 1:
        return _probabilities_in_line(events, length, bounded, tables.arrays, floor, room)
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
    last instants over the worlds that count, and its last layer's states.
    (SEMANTICS A4 condition 4; docs/design.md, Tuples instead of entries.)"""
    n, k = events.shape
    total = np.zeros(n)
    first = np.empty(n, dtype=np.int64)
    last = np.empty(n, dtype=np.int64)
    states = np.zeros(n, dtype=np.int64)
    lo = np.empty(k, dtype=np.int64)
    hi = np.empty(k, dtype=np.int64)
    # Group factors recur across tuples (same chain, events and gaps): one memo.
    memo = new_memo(key_width(k, len(neg[3])), 1024)
    for r in range(n):
        total[r], first[r], last[r], states[r] = _run(
            events[r], k, length, bounded, gap_columns, neg, t, floor[r], lo, hi, fold,
            memo, room)
        if memo[3][1]:
            memo = grown_memo(memo)
    return total, first, last, states


def negated_probabilities(tables: TupleTable, events: np.ndarray, window: float,
                          gap_columns: np.ndarray, negated: NegatedNodes,
                          floor: np.ndarray | None = None, room: int = NEGATED_ROOM,
                          threads: int | None = None
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per complete tuple (rows of ``events``): its probability with every negation
    (SEMANTICS A4 condition 4; 0 where the probability falls below its ``floor``), its
    earliest first and latest last instant over the worlds that count, and its
    programme's states. The programme keeps, besides what
    :func:`tuple_probabilities` keeps, each gap's bounds (snapped to the instants of the
    nodes it may weigh) and the exact nodes of the columns nearest to a gap where their
    unit may hold a weighed node, until each group's factor can be folded in; the
    groups outside the tuple fold in last, and the bounds then leave the keys.
    ``threads``: how many run the programmes (default: numba's)."""
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
    threads = max(1, min(threads or numba.get_num_threads(), len(events) // 64))
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
            # The folds' scratch: their rows of small numbers, each segment's last key
            # and factor.
            fold = (weights, tables.node_arrays, tuple(a[i] for a in scratches),
                    np.empty(n_groups, dtype=np.int64), np.empty(n_groups),
                    np.empty((7, max(k, n_not, 2)), dtype=np.int64),
                    np.empty((max(1, len(gaps)) * k, key_width(k, n_not)), dtype=np.int64),
                    np.empty(max(1, len(gaps)) * k), candidate_row)
            a, b = cuts[piece], cuts[piece + 1]
            return _negated_probabilities(events[a:b], length, bounded, gaps, neg,
                                          tables.arrays, floor[a:b], fold, room)
        finally:
            free.put(i)

    if threads == 1:
        # (A kernel without numba's threads needs no lock: the spare threads of
        # query/engine/background.py run it beside the search's kernels.)
        return run(0)
    with KERNEL_LOCK, ThreadPoolExecutor(threads) as pool:
        parts = list(pool.map(run, range(pieces)))
    total, first, last, states = (np.concatenate([p[i] for p in parts]) for i in range(4))
    return total, first, last, states
