"""Negation folded into a tuple's programme (:mod:`~uncertain_cep.query.engine.kernels.tuples`):
which columns keep their exact node, the segments each group's factor is a product
over, and the folds that multiply a segment's factor into the classes (SEMANTICS A4,
condition 4; the weighted sums of :mod:`~uncertain_cep.query.engine.kernels.negation`).

A group's factor is a product over its *segments*: per gap, the stretch between the
group's last column at or before it and its first after it. OIs are Markov in their
nodes and a tuple's columns are in time order, so the weighted paths between two
columns weigh only the gaps between them. A segment folds in once its ends and its
gaps' bounds are matched; a kept node then leaves the class's key, or, without
Condition 2, stands for its class of nodes with alike futures
(:func:`~uncertain_cep.query.engine.kernels.futures.future_nodes`).
The functions here are inlined into the programme (a compiled call counts every array
it passes, atomically).
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from uncertain_cep.index.node_table import NodeArrays
from uncertain_cep.query.engine.kernels.instants import NO_TIME
from uncertain_cep.query.engine.kernels.memo import MemoArrays, memo_add, memo_lookup
from uncertain_cep.query.engine.kernels.negation import (
    NegatedArrays,
    SumScratch,
    group_factor,
    weighted_sums,
)

__all__ = ["FoldScratch", "clear_folded", "exact_columns", "fold_gap", "fold_outside",
           "fold_segments", "key_width"]


class FoldScratch(NamedTuple):
    """One thread's scratch for the folds: the weighted sums' (``scratch``) and their
    outputs (``found_groups``, ``found_values``), rows of small numbers (``rows``: a
    segment's chain, excluded events and gaps), each segment's last memo key and factor
    (``last_key``, ``last_value``), and per archive row whether a NOT item may weigh
    its nodes (``candidate_row``)."""

    scratch: SumScratch
    found_groups: np.ndarray
    found_values: np.ndarray
    rows: np.ndarray
    last_key: np.ndarray
    last_value: np.ndarray
    candidate_row: np.ndarray


@numba.njit(cache=True, nogil=True, inline="always")
def _unit(v: int, node_arrays: NodeArrays, top_chain: np.ndarray) -> int:
    """The unit node ``v`` lies in: its isolated subsequence's tree where the group's top
    tree is a chain of them, else the group's top tree."""
    group, tree = node_arrays.group, node_arrays.tree
    tree_level, tree_parent = node_arrays.tree_level, node_arrays.tree_parent
    tr = tree[v]
    floor = 1 if top_chain[group[v]] else 0
    while tree_level[tr] > floor:
        tr = tree_parent[tr]
    return tr


@numba.njit(cache=True, nogil=True, inline="always")
def key_width(k: int, n_not: int) -> int:
    """The width of the negation memo's keys (:func:`fold_gap`, :func:`fold_outside`)."""
    return 3 + 2 * n_not + k


@numba.njit(cache=True, nogil=True, inline="always")
def _gap_of_each(gap_columns: np.ndarray, neg_columns: np.ndarray, which: np.ndarray
                 ) -> np.ndarray:
    """Per NOT item (its column before, ``neg_columns``), its gap's index in
    ``gap_columns``, written to ``which``."""
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
def fold_segments(cols: np.ndarray, m: int, slot: np.ndarray, n_groups: int,
              gap_columns: np.ndarray, outside: bool, rel: np.ndarray,
              seg_group: np.ndarray,
              seg_ends: np.ndarray, seg_fold: np.ndarray, seg_gaps: np.ndarray,
              keep_until: np.ndarray, bounds_until: np.ndarray) -> tuple[int, int]:
    """A complete tuple's negation segments: per group and gap, the group's last column
    at or before the gap and its first after it (``seg_ends``, -1 where none; gaps with
    the same ends share a segment, ``seg_gaps``), and the column where the segment's
    factor folds in (``seg_fold``: its later end where that keeps its exact node,
    ``rel``; else the last of its gaps' right columns, since a later end that keeps no
    node enters the factor as its event's first node, the same in every class). OIs
    are Markov in their nodes, so a group's weighted sum through its columns over their
    probability is the product of its segments' (each weighs only the nodes between
    its ends, and only its gaps lie there: the columns are in time order). The layers
    are linear in the classes' mass, so a factor folds in as soon as what it reads is
    in the key; folding it later only keeps the earlier end's node and the gaps'
    bounds in the key longer, splitting the layers between. Writes, per column, the
    fold after which its kept node leaves the key (``keep_until``) and per gap the one
    after which its bounds do (``bounds_until``).
    Returns the number of segments and the column where the groups outside the tuple
    fold in (every gap's bounds known; -1 without ``outside``).
    (docs/design.md, Tuples instead of entries.)"""
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
            seg_fold[q] = max(seg_fold[q],
                              after if after >= 0 and rel[after] >= 0 else jl + 1)
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
def fold_gap(j: int, n: int, d: int, keys: np.ndarray, vec: np.ndarray, events: np.ndarray,
          cols: np.ndarray, m: int, slot: np.ndarray, groups: np.ndarray, rel: np.ndarray,
          n_segs: int, seg_group: np.ndarray, seg_ends: np.ndarray, seg_fold: np.ndarray,
          seg_gaps: np.ndarray, keep_until: np.ndarray, bounds_until: np.ndarray,
          gap_columns: np.ndarray, neg: NegatedArrays, base: int, n_rel: int,
          fold: FoldScratch, memo: MemoArrays, node_arrays: NodeArrays) -> None:
    """Multiply each of the ``n`` classes by the factors of the segments folding at
    column ``j`` (:func:`fold_segments`; a segment's chain: the kept node of each end where
    the class keeps one, else the end's event's first node; its gaps from the class's
    bounds, the other NOT items weighing nothing). Kept nodes from key column ``base``,
    then ``n_rel`` of them, then the gaps' bounds. (SEMANTICS A4 condition 4;
    docs/design.md, Tuples instead of entries.)"""
    row_nodes_start, row_nodes = node_arrays.row_nodes_start, node_arrays.row_nodes
    scratch, found_groups, found_values = fold.scratch, fold.found_groups, fold.found_values
    rows, last_key, last_value = fold.rows, fold.last_key, fold.last_value
    candidate_row, neg_columns = fold.candidate_row, neg.columns
    bounds_at = base + n_rel
    n_not = len(neg_columns)
    chain, mine, gap_a, gap_b = rows[0], rows[1], rows[2], rows[3]
    seg_a, seg_b = rows[4, :n_not], rows[5, :n_not]
    which = _gap_of_each(gap_columns, neg_columns, rows[6, :n_not])
    # A segment's memo key: its group, its two ends' nodes, its gaps, then the tuple's
    # events of its group that a NOT item may weigh (they are excluded from weighing).
    # Per segment folding here, its last key holds the fixed parts, written once; a
    # class fills in its ends and gaps, and where they equal the last class's (classes
    # that differ in other kept nodes come in runs) takes the last factor.
    varying = 3 + 2 * n_not
    for q in range(n_segs):
        if seg_fold[q] != j:
            continue
        s = seg_group[q]
        last_key[q, 0] = groups[s]
        n_mine = 0
        for j2 in range(m):
            # (Only the group's events that a NOT item may weigh are excluded from
            # weighing: the others are not weighed anyway.)
            if slot[j2] == s and candidate_row[events[cols[j2]]]:
                last_key[q, varying + n_mine] = events[cols[j2]]
                n_mine += 1
        last_key[q, varying + n_mine:] = -1
        last_key[q, 1] = -2         # no class yet (an end is a node, or -1: none)
    m_slots, m_keys, m_values = memo[0], memo[1], memo[2]
    for c in range(n):
        factor = 1.0
        _class_gaps(keys, c, bounds_at, which, gap_a, gap_b)
        for q in range(n_segs):
            if seg_fold[q] != j:
                continue
            # The chain: each end's kept node where the class keeps one, else its
            # event's first node; the earlier end first.
            size = 0
            for end in range(2):
                j2 = seg_ends[q, end]
                if j2 >= 0:
                    chain[size] = (keys[c, base + rel[j2]] if rel[j2] >= 0
                                   else row_nodes[row_nodes_start[events[cols[j2]]]])
                    size += 1
            end_a = chain[0] if size > 0 else -1
            end_b = chain[1] if size > 1 else -1
            same = last_key[q, 1] == end_a and last_key[q, 2] == end_b
            for x in range(n_not):
                # (An empty gap, a > b, weighs nothing.)
                inside = seg_gaps[q, which[x]]
                seg_a[x] = gap_a[x] if inside else 1
                seg_b[x] = gap_b[x] if inside else 0
                if last_key[q, 3 + x] != seg_a[x] or last_key[q, 3 + n_not + x] != seg_b[x]:
                    same = False
            if same:
                factor *= last_value[q]
                continue
            key = last_key[q]
            key[1], key[2] = end_a, end_b
            for x in range(n_not):
                key[3 + x] = seg_a[x]
                key[3 + n_not + x] = seg_b[x]
            value = memo_lookup(m_slots, m_keys, m_values, key)
            if value < 0.0:
                n_mine = 0
                while varying + n_mine < len(key) and key[varying + n_mine] >= 0:
                    mine[n_mine] = key[varying + n_mine]
                    n_mine += 1
                value = group_factor(
                    groups[seg_group[q]], chain[:size], mine[:n_mine], seg_a, seg_b, neg,
                    node_arrays, scratch, found_groups, found_values)
                memo_add(memo, key, value)
            last_value[q] = value
            factor *= value
        if factor != 1.0:
            for y in range(d):
                vec[c, y] *= factor


@numba.njit(cache=True, nogil=True, inline="always")
def clear_folded(j: int, n: int, keys: np.ndarray, rel: np.ndarray,
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
def fold_outside(n: int, d: int, keys: np.ndarray, vec: np.ndarray, groups: np.ndarray,
                 bounds_at: int, gap_columns: np.ndarray, neg: NegatedArrays, k: int,
                 fold: FoldScratch, memo: MemoArrays, node_arrays: NodeArrays) -> None:
    """Multiply each of the ``n`` classes by the factor of the groups outside the tuple
    (their weighted sums without a chain: their worlds are independent of the tuple's),
    given the class's gaps (their bounds from key column ``bounds_at``). Only where some
    group outside the tuple has a node that the widest gaps may weigh: else it is 1.
    (docs/design.md, Tuples instead of entries.)"""
    scratch, found_groups, found_values = fold.scratch, fold.found_groups, fold.found_values
    neg_columns = neg.columns
    n_not = len(neg_columns)
    gap_a = np.empty(n_not, dtype=np.int64)
    gap_b = np.empty(n_not, dtype=np.int64)
    which = _gap_of_each(gap_columns, neg_columns, np.empty(n_not, dtype=np.int64))
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
            found = weighted_sums(gap_a, gap_b, none, -1, none, neg, node_arrays, scratch,
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
def exact_columns(events: np.ndarray, cols: np.ndarray, m: int, slot: np.ndarray,
                  n_groups: int, gap_columns: np.ndarray, neg: NegatedArrays,
                  node_arrays: NodeArrays, top_chain: np.ndarray, rel: np.ndarray,
                  widest: np.ndarray, near: np.ndarray
                  ) -> tuple[int, np.ndarray, np.ndarray, bool]:
    """For a complete tuple: the columns nearest to some gap in their group (what the
    negation kernel reads of a chain; written to ``near``) that must keep their exact
    node, numbered in
    ``rel``: where their unit (:func:`_unit`; ``top_chain``: per group whether its top
    tree is a chain of isolated subsequences) may hold a weighed node, or holds another
    such column of the group. The others may stand for any node of their event (their
    pseudo-entry takes its first). Returns how many are kept, and per gap (``start``
    offsets) the sorted instants of the nodes it may weigh, strictly inside the widest it
    can be (written to ``widest``: its least start and greatest end): a gap's bound may
    move to the nearest of those instants, or to the widest, and the same nodes lie
    inside. Last, whether any of them is of a group outside the tuple (else the outside
    groups' factor is 1). (docs/design.md, Tuples instead of entries.)"""
    row_nodes_start, row_nodes = node_arrays.row_nodes_start, node_arrays.row_nodes
    instant, group, row = node_arrays.instant, node_arrays.group, node_arrays.row
    neg_offsets, neg_nodes, neg_instants, neg_columns = (neg.offsets, neg.nodes,
                                                         neg.instants, neg.columns)
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
        units[j] = _unit(row_nodes[row_nodes_start[e]], node_arrays, top_chain)
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
                u = _unit(y, node_arrays, top_chain)
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
