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

import numba
import numpy as np

from uncertain_cep.index.node_table import NodeArrays
from uncertain_cep.query.engine.kernels.chains import chain_extension, first_above
from uncertain_cep.query.engine.kernels.class_layers import (
    ClassLayers,
    final_cells,
    find_class,
    merge_classes,
    new_layers,
)
from uncertain_cep.query.engine.kernels.instants import NO_TIME
from uncertain_cep.query.engine.kernels.memo import MemoArrays
from uncertain_cep.query.engine.kernels.negation import NegatedArrays
from uncertain_cep.query.engine.kernels.negation_folds import (
    FoldScratch,
    clear_folded,
    exact_columns,
    fold_gap,
    fold_outside,
    fold_segments,
)
from uncertain_cep.query.engine.kernels.tuple_columns import (
    ColumnNodes,
    TupleArrays,
    TupleShape,
    carve_negation,
    column_nodes,
    matched_columns,
)

__all__ = ["TupleArrays", "run_programme"]


# A compiled call that passes arrays costs about 90 ns in reference counting unless it is
# inlined: the chain factor runs once per transition, so inline.
# (With NUMBA_DISABLE_JIT the kernels are plain functions, without ``py_func``.)
_extension_inline = numba.njit(cache=True, nogil=True, inline="always")(
    getattr(chain_extension, "py_func", chain_extension))


# ---------------------------------------------------------------- the programme

@numba.njit(cache=True, nogil=True, inline="always")
def _next_layer(j: int, cur: int, n: int, stamp: int, events: np.ndarray, shape: TupleShape,
                columns: ColumnNodes, layers: ClassLayers, node_arrays: NodeArrays,
                tuple_arrays: TupleArrays) -> tuple[int, int, int, int]:
    """Column ``j``'s layer: each of the ``n`` classes of layer ``cur`` extended by every
    node of the column's event an OI may pass after the class's context node, in the
    window, into the classes of layer ``1 - cur`` (``stamp``: the layer's mark in the
    hash table of keys). Returns how many classes the new layer holds and the earliest
    and latest instant the column took; or -1 and, last, how many classes the layer may
    need, where that is more than the room (the programme runs again with that room).
    (docs/design.md, Tuples instead of entries.)"""
    cols, slot, side, rel, base, n_rel, width, span, clip, bounded = shape
    at, seen, node_code, bound, sig, n_sigs, first_at, span_at = columns
    keys, vec, fst, slot_row, slot_stamp, cum, earliest, key, target = layers
    instant, tree, poi = node_arrays.instant, node_arrays.tree, node_arrays.poi
    tree_level, tree_parent = node_arrays.tree_level, node_arrays.tree_parent
    code, code_end = node_arrays.code, node_arrays.code_end
    tree_virtual, tree_last_code = node_arrays.tree_virtual, node_arrays.tree_last_code
    by_code = tuple_arrays.by_code
    a0 = node_arrays.row_nodes_start[events[cols[j]]]
    left, right = side[j, 0], side[j, 1]
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
    if most > len(slot_row) // 4:
        return -1, NO_TIME, -NO_TIME, most
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
        # (:func:`~uncertain_cep.query.engine.kernels.chains.descends`).
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
                    h = find_class(keys, nxt, slot_row, slot_stamp, stamp, key)
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
    return n_new, t_lo, t_hi, 0


@numba.njit(cache=True, nogil=True)
def _programme(events: np.ndarray, k: int, length: int, bounded: bool,
               gap_columns: np.ndarray | None, neg: NegatedArrays | None,
               node_arrays: NodeArrays, tuple_arrays: TupleArrays, floor: float,
               lo_out: np.ndarray, hi_out: np.ndarray, fold: FoldScratch | None,
               memo: MemoArrays | None, cap: int) -> tuple[float, int, int, int]:
    """The dynamic programme for one tuple (``events``: a row of ``k`` archive rows, -1
    where unmatched). Returns its summed probability (0 once a layer's falls below
    ``floor``: every layer's sum bounds the next), the earliest first and latest last
    instant over its final states, and the number of states of its last layer. Writes
    each column's reachable instants to ``lo_out`` and ``hi_out`` (+-NO_TIME where
    unmatched). A probability of -1 says that a layer may hold more than ``cap``
    classes, and how many (in place of the states): run it again with that room
    (:func:`run_programme`).

    With negation, each group's factor is a product over its segments (:func:`fold_segments`:
    the stretch between its columns around some gaps), and each segment's factor
    (:func:`~uncertain_cep.query.engine.kernels.negation.group_factor` of its two ends;
    ``neg``: the NOT items, ``fold``: the folds' scratch, ``memo`` its values) is
    multiplied into the classes as soon as what it reads (its
    earlier end's kept node, its gaps' bounds and, where kept, its later end's node) is
    matched; a kept node leaves the key after its last segment, a
    gap's bounds after theirs: either would otherwise split every later layer (measured
    on localization n = 20 query 2: folding whole groups, once every gap was matched,
    kept three exact nodes at once and 100-2,000 classes a layer).

    (SEMANTICS A4 conditions 1-2, and 4 with negation; docs/design.md, Tuples instead of
    entries.)"""
    instant, future = node_arrays.instant, tuple_arrays.future
    row_nodes_start, row_nodes = node_arrays.row_nodes_start, node_arrays.row_nodes
    cols, m, slot, groups, n_groups, next_same = matched_columns(
        events, k, node_arrays.group, row_nodes_start, row_nodes, lo_out, hi_out)
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
    pieces = rel[:0] if gap_columns is None else np.empty(
        4 * n_gaps + 1 + 2 * m + n_gaps * n_groups * (4 + n_gaps), dtype=np.int64)
    (weighed_start, widest, near, keep_until, bounds_until, seg_group, seg_fold, seg_ends,
     seg_gaps) = carve_negation(pieces, n_gaps, m, n_groups)
    weighed = pieces[:0]
    n_segs = 0
    outside_at = -1
    outside = False
    # Per column, the gap it starts (its column is the gap's left) and ends.
    side = np.full((m, 2), -1, dtype=np.int64)
    if gap_columns is not None and n_gaps > 0:
        assert neg is not None
        n_rel, weighed, weighed_start, outside = exact_columns(
            events, cols, m, slot, n_groups, gap_columns, neg, node_arrays,
            tuple_arrays.top_chain, rel, widest, near)
        n_segs, outside_at = fold_segments(cols, m, slot, n_groups, gap_columns, outside, rel,
                                           seg_group, seg_ends, seg_fold, seg_gaps,
                                           keep_until, bounds_until)
        for j in range(m):
            for gi in range(n_gaps):
                if gap_columns[gi] == cols[j]:
                    side[j, 0] = gi
                if gap_columns[gi] + 1 == cols[j]:
                    side[j, 1] = gi
    # A class of states: the clipped first instant, per group the context its next
    # matched event sees (-1: none), the exact nodes kept and the gaps' snapped bounds;
    # within a class, one probability (and earliest true first instant) per instant of
    # the column just matched.
    base = 1 + n_groups
    width = base + n_rel + 2 * n_gaps
    columns = column_nodes(events, cols, m, next_same, rel, side, weighed, weighed_start,
                           widest, node_arrays, tuple_arrays)
    n_sigs, first_at, span_at = columns.n_sigs, columns.first_at, columns.span_at
    # Two layers of classes, room for ``cap`` each (the one read, ``cur``, and the one
    # built; each class's row is set when it is made), and one hash table of class keys,
    # whose stamp moves on with every layer instead of being cleared. No array is
    # swapped or regrown in the loops below: numba counts references to an array
    # variable reassigned in a loop, atomically, on every pass (measured: two thirds of
    # the programme's time). A layer that may need more room returns instead, and the
    # caller runs the tuple again with room enough (:func:`run_programme`).
    layers = new_layers(cap, width, span_at[:m].max(), max(1, n_sigs.max()))
    keys, vec, fst, slot_row, slot_stamp, _, _, key, _ = layers
    shape = TupleShape(cols, slot, side, rel, base, n_rel, width, span, clip, bounded)
    cur = 0
    stamp = 0
    n = 0
    for j in range(m):
        stamp += 1
        s = slot[j]
        d = span_at[j]
        nxt = 1 - cur
        n_new, t_lo, t_hi, most = _next_layer(j, cur, n, stamp, events, shape, columns,
                                              layers, node_arrays, tuple_arrays)
        if n_new < 0:
            return -1.0, NO_TIME, -NO_TIME, most
        cur = nxt
        n = n_new
        lo_out[cols[j]], hi_out[cols[j]] = t_lo, t_hi
        alike = n_gaps > 0 and rel[j] >= 0 and keep_until[j] > j
        if gap_columns is not None and n > 0 and n_gaps > 0 and (
                (seg_fold[:n_segs] == j).any() or outside_at == j or alike):
            assert neg is not None and fold is not None and memo is not None
            fold_gap(j, n, d, keys[cur], vec[cur], events, cols, m, slot, groups, rel,
                     n_segs, seg_group, seg_ends, seg_fold, seg_gaps, keep_until,
                     bounds_until, gap_columns, neg, base, n_rel, fold, memo, node_arrays)
            if j == outside_at:
                fold_outside(n, d, keys[cur], vec[cur], groups[:n_groups], base + n_rel,
                             gap_columns, neg, k, fold, memo, node_arrays)
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
            # Classes that differed only in what left the key merge.
            stamp += 1
            n = merge_classes(n, d, width, keys, vec, fst, cur, slot_row, slot_stamp, stamp,
                               key)
            cur = 1 - cur
        if n > 0 and floor > 0.0 and vec[cur, :n, :d].sum() < floor:
            n = 0
        if n == 0:
            return 0.0, NO_TIME, -NO_TIME, 0
    return final_cells(n, cur, vec, fst, first_at[m - 1], span_at[m - 1], cols, m, hi_out)


@numba.njit(cache=True, nogil=True, inline="always")
def run_programme(events: np.ndarray, k: int, length: int, bounded: bool,
         gap_columns: np.ndarray | None, neg: NegatedArrays | None, node_arrays: NodeArrays,
         tuple_arrays: TupleArrays, floor: float, lo_out: np.ndarray, hi_out: np.ndarray,
         fold: FoldScratch | None, memo: MemoArrays | None, room: int
         ) -> tuple[float, int, int, int]:
    """:func:`_programme` with room for its classes, ``room`` at first: most tuples
    need little, and a few are run again with the room their programme asked for.
    (Inlined: a call counts each array it passes, and this one passes some fifty;
    5.1 -> 4.5 us a tuple. Inlining the programme itself into the parallel loop changed
    10 of 743,161 tuples' probabilities, so it is not. docs/design.md, Reference
    counts in compiled loops.)"""
    cap = room
    while True:
        out = _programme(events, k, length, bounded, gap_columns, neg, node_arrays,
                         tuple_arrays, floor, lo_out, hi_out, fold, memo, cap)
        if out[0] >= 0.0:
            return out
        while cap < out[3]:
            cap *= 2
