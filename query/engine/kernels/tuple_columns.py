"""What a tuple's programme (:mod:`~uncertain_cep.query.engine.kernels.programme`) knows
before its first layer: the matched columns and their groups, the negation's arrays as
views of one allocation, and per node of each column's event what it contributes to a
class's key (docs/design.md, Tuples instead of entries). All inlined into the
programme: a compiled call counts every array it passes, atomically.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from uncertain_cep.index.node_table import NodeArrays
from uncertain_cep.query.engine.kernels.instants import NO_TIME

__all__ = ["ColumnNodes", "TupleArrays", "TupleShape", "carve_negation", "column_nodes",
           "matched_columns"]


class TupleArrays(NamedTuple):
    """What the programme reads besides the :class:`NodeArrays`: each archive row's
    nodes ordered by code (``by_code``, in the row's CSR slots: the nodes that may
    follow a node are then a few runs of them, its descendant code ranges, found by
    bisection) and per node the node standing for it where only its future counts
    (``future``, :func:`~uncertain_cep.query.engine.kernels.futures.future_nodes`); per
    tree its root's compact code (``root_code``, -1 without one), and per group whether
    its top tree is only a chain of isolated subsequences (``top_chain``: each one's tree
    a unit of its own); per archive row its group and the earliest and latest instant its
    nodes hold with the probability of each (``row_group``, ``row_first``,
    ``row_last``, ``row_first_mass``, ``row_last_mass``: what
    :func:`~uncertain_cep.query.engine.kernels.tuples.surely_below` reads)."""

    by_code: np.ndarray
    future: np.ndarray
    root_code: np.ndarray
    top_chain: np.ndarray
    row_group: np.ndarray
    row_first: np.ndarray
    row_last: np.ndarray
    row_first_mass: np.ndarray
    row_last_mass: np.ndarray


@numba.njit(cache=True, nogil=True, inline="always")
def _snap(instants: np.ndarray, value: int, up: bool, limit: int) -> int:
    """The nearest of the sorted ``instants`` at or below ``value`` (at or above it when
    ``up``), or ``limit`` where there is none."""
    if up:
        p = np.searchsorted(instants, value, side="left")
        return instants[p] if p < len(instants) else limit
    p = np.searchsorted(instants, value, side="right") - 1
    return instants[p] if p >= 0 else limit


class ColumnNodes(NamedTuple):
    """Per node of each matched column's event (flat, column ``j``'s from ``at[j]``, in
    code order): its code (``node_code``), what its group's next matched event sees of
    it (``seen``), the gap bounds it sets (``bound``) and its target class among the
    column's (``sig``, ``n_sigs[j]`` of them); per column its first instant
    (``first_at``) and the span of its instants (``span_at``)."""

    at: np.ndarray
    seen: np.ndarray
    node_code: np.ndarray
    bound: np.ndarray
    sig: np.ndarray
    n_sigs: np.ndarray
    first_at: np.ndarray
    span_at: np.ndarray


class TupleShape(NamedTuple):
    """A tuple's matched columns (``cols``), each one's group slot (``slot``), the gap
    it starts and ends (``side``) and the place of its kept node (``rel``, -1: none);
    the layout of a class's key (``base``: where kept nodes start, ``n_rel`` of them,
    ``width`` in all); the window's ``span`` between the first and last matched column,
    the instant first instants are ``clip``-ped at, and whether there is a window."""

    cols: np.ndarray
    slot: np.ndarray
    side: np.ndarray
    rel: np.ndarray
    base: int
    n_rel: int
    width: int
    span: int
    clip: int
    bounded: bool


@numba.njit(cache=True, nogil=True, inline="always")
def matched_columns(events: np.ndarray, k: int, group: np.ndarray,
                     row_nodes_start: np.ndarray, row_nodes: np.ndarray,
                     lo_out: np.ndarray, hi_out: np.ndarray
                     ) -> tuple[np.ndarray, int, np.ndarray, np.ndarray, int, np.ndarray]:
    """The tuple's matched columns (``cols[:m]``), each one's group slot (``slot``; the
    slots' groups in ``groups[:n_groups]``) and the next column of its group
    (``next_same``, -1: none). Sets every column's reachable instants to +-NO_TIME."""
    cols = np.empty(k, dtype=np.int64)
    m = 0
    for c in range(k):
        lo_out[c], hi_out[c] = -NO_TIME, NO_TIME
        if events[c] >= 0:
            cols[m] = c
            m += 1
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
    return cols, m, slot, groups, n_groups, next_same


@numba.njit(cache=True, nogil=True, inline="always")
def carve_negation(pieces: np.ndarray, n_gaps: int, m: int, n_groups: int) -> tuple:
    """The negation's arrays as views of one allocation (``pieces``; empty without a
    gap), zeroed or set to -1 as the programme starts them: ``weighed_start``,
    ``widest``, ``near``, ``keep_until``, ``bounds_until``, and per segment (at most
    one per group and gap) ``seg_group``, ``seg_fold``, ``seg_ends``, ``seg_gaps``."""
    most_segs = n_gaps * n_groups
    at = 0
    weighed_start = pieces[at:at + n_gaps + 1]
    at += n_gaps + 1
    widest = pieces[at:at + 2 * n_gaps].reshape((n_gaps, 2))
    at += 2 * n_gaps
    near = pieces[at:at + m if n_gaps > 0 else at]
    at += len(near)
    keep_until = pieces[at:at + len(near)]
    at += len(near)
    bounds_until = pieces[at:at + n_gaps]
    at += n_gaps
    seg_group = pieces[at:at + most_segs]
    at += most_segs
    seg_fold = pieces[at:at + most_segs]
    at += most_segs
    seg_ends = pieces[at:at + 2 * most_segs].reshape((most_segs, 2))
    at += 2 * most_segs
    seg_gaps = pieces[at:at + most_segs * n_gaps].reshape((most_segs, n_gaps))
    pieces[:] = 0
    near[:] = 0
    keep_until[:] = -1
    bounds_until[:] = -1
    seg_fold[:] = -1
    return (weighed_start, widest, near, keep_until, bounds_until, seg_group, seg_fold,
            seg_ends, seg_gaps)


@numba.njit(cache=True, nogil=True, inline="always")
def column_nodes(events: np.ndarray, cols: np.ndarray, m: int, next_same: np.ndarray,
                  rel: np.ndarray, side: np.ndarray, weighed: np.ndarray,
                 weighed_start: np.ndarray, widest: np.ndarray, node_arrays: NodeArrays,
                 tuple_arrays: TupleArrays) -> ColumnNodes:
    """Per node of each column's event (flat, ``at[j]`` onwards, in code order): its
    code, what its group's next matched event sees of it (``seen``), the gap bounds it
    sets (``bound``, snapped to the instants of the nodes a gap may weigh), and which
    nodes lead to the same class from any class (``sig``: one number per distinct
    target, ``n_sigs`` of them per column); per column, its first instant and the
    span of its instants."""
    row_nodes_start, row_nodes = node_arrays.row_nodes_start, node_arrays.row_nodes
    instant, group, tree, poi = (node_arrays.instant, node_arrays.group, node_arrays.tree,
                                 node_arrays.poi)
    code, by_code = node_arrays.code, tuple_arrays.by_code
    root_code, top_chain = tuple_arrays.root_code, tuple_arrays.top_chain
    tree_level, tree_virtual = node_arrays.tree_level, node_arrays.tree_virtual
    tree_last_code = node_arrays.tree_last_code
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
    first_at = np.empty(m, dtype=np.int64)
    span_at = np.empty(m, dtype=np.int64)
    for j in range(m):
        e = events[cols[j]]
        a0 = row_nodes_start[e]
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
                    # descend from.
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
    return ColumnNodes(at, seen, node_code, bound, sig, n_sigs, first_at, span_at)
