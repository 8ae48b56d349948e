"""Compiled kernels over node pairs: the descendant check and the chain factors of
:mod:`uncertain_cep.query.evaluation.chains`, on a
:class:`~uncertain_cep.index.node_table.NodeTable`'s arrays, for whole batches at once.

They walk up a node's enclosing trees (a few steps: nesting is shallow), which does not
vectorise; numba compiles them (cached beside this file).

>>> import pandas as pd
>>> from uncertain_cep.index.event_index import EventIndex
>>> from uncertain_cep.index.group_build import BuildSettings
>>> from uncertain_cep.model.events import read_archive
>>> archive = read_archive(pd.DataFrame({"event_id": [1, 2], "group": 0,
...                                      "t_lo": [1, 1], "t_hi": [2, 2]}))
>>> table = EventIndex(archive, BuildSettings()).node_table
>>> first, second = table.row_nodes[:2], table.row_nodes[2:]   # event 1's, event 2's
>>> at = lambda nodes, t: int(nodes[table.instant[nodes] == t][0])
>>> ok, factor = insertion_factors(table, np.array([at(first, 1)]),
...                                np.array([at(second, 2)]), np.array([-1]))
>>> ok.tolist(), factor.tolist()
([True], [1.0])
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from uncertain_cep.index.forests.forest import REAL, VIRTUAL
from uncertain_cep.index.node_table import NodeTable
from uncertain_cep.query.engine.kernels.core import KERNEL_LOCK

__all__ = ["BLOCK_COST", "CandidateOrder", "candidate_order", "chain_extension", "extended",
           "extended_sums", "first_above", "insertion_factors"]

# Entries per chunk of the extension kernels (each chunk allocates its scratch once).
_CHUNK = 1024


@numba.njit(cache=True, nogil=True)
def _descends(a: int, b: int, code: np.ndarray, code_end: np.ndarray, tree: np.ndarray,
              tree_virtual: np.ndarray, tree_last_code: np.ndarray) -> bool:
    """Whether some OI passes node ``a`` and later node ``b`` (same group): ``b``'s
    code lies in ``a``'s descendant code ranges (Zhou et al. 4.2, Lemma 2; the compact
    scheme of docs/design.md, Codes (4.2))."""
    c = code[b]
    if code[a] < c <= code_end[a]:
        return True
    t = tree[a]
    while tree_virtual[t] >= 0:
        v = tree_virtual[t]
        if tree_last_code[t] < c <= code_end[v]:
            return True
        t = tree[v]
    return False


@numba.njit(cache=True, nogil=True)
def chain_extension(a: int, b: int, poi: np.ndarray, tree: np.ndarray, tree_parent: np.ndarray,
               tree_level: np.ndarray, tree_virtual: np.ndarray) -> float:
    """P(chain + b) / P(chain) for a chain ending at ``a`` (-1: empty), ``b`` after it:
    ``poi[b]`` over the ``poi`` of ``a``'s context node in the deepest shared tree
    (Zhou et al. 4.1; docs/design.md, Probabilities)."""
    if a < 0:
        return poi[b]
    x = a
    la = tree_level[tree[a]]
    tb = tree[b]
    lb = tree_level[tb]
    while la > lb:
        x = tree_virtual[tree[x]]
        la -= 1
    while lb > la:
        tb = tree_parent[tb]
        lb -= 1
    while tree[x] != tb:
        x = tree_virtual[tree[x]]
        tb = tree_parent[tb]
    return poi[b] / poi[x]


@numba.njit(cache=True, nogil=True)
def _insertion(b: int, m: int, a: int, poi: np.ndarray, code: np.ndarray,
               code_end: np.ndarray, tree: np.ndarray, tree_parent: np.ndarray,
               tree_level: np.ndarray, tree_virtual: np.ndarray, tree_last_code: np.ndarray
               ) -> float:
    """The factor of inserting ``m`` between ``b`` and ``a`` (-1: none), or -1.0 when no
    OI passes the three in order (Zhou et al. 5.2; docs/design.md, Selectivity)."""
    if b >= 0 and not _descends(b, m, code, code_end, tree, tree_virtual, tree_last_code):
        return -1.0
    if a >= 0 and not _descends(m, a, code, code_end, tree, tree_virtual, tree_last_code):
        return -1.0
    f = chain_extension(b, m, poi, tree, tree_parent, tree_level, tree_virtual)
    if a >= 0:
        f *= (chain_extension(m, a, poi, tree, tree_parent, tree_level, tree_virtual)
              / chain_extension(b, a, poi, tree, tree_parent, tree_level, tree_virtual))
    return f


@numba.njit(cache=True, nogil=True)
def _insertion_factors(before: np.ndarray, node: np.ndarray, after: np.ndarray,
                       poi: np.ndarray, code: np.ndarray, code_end: np.ndarray,
                       tree: np.ndarray, tree_parent: np.ndarray, tree_level: np.ndarray,
                       tree_virtual: np.ndarray, tree_last_code: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_insertion` for each triple ``(before[i], node[i], after[i])``
    (:func:`insertion_factors`; Zhou et al. 4.1-4.2).

    Parameters
    ----------
    before, node, after : (n,) int64
        Per triple, the node to insert and its group's nodes before and after it (-1:
        none on that side).
    poi, code, code_end, tree, tree_parent, tree_level, tree_virtual, tree_last_code
        The node table's columns of those names.

    Returns
    -------
    ok : (n,) bool
        Whether an OI of the group passes ``before``, ``node`` and ``after`` in order.
    factor : (n,) float64
        Where ``ok``, ``ext(before, node) * ext(node, after) / ext(before, after)``,
        what inserting ``node`` multiplies the chain's probability by; else 0.
    """
    n = len(node)
    ok = np.zeros(n, dtype=np.bool_)
    factor = np.zeros(n)
    for i in range(n):
        f = _insertion(before[i], node[i], after[i], poi, code, code_end, tree,
                       tree_parent, tree_level, tree_virtual, tree_last_code)
        if f >= 0:
            ok[i] = True
            factor[i] = f
    return ok, factor


def insertion_factors(table: NodeTable, before: np.ndarray, node: np.ndarray,
                      after: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each triple, whether an OI of the group passes ``before``, ``node``, ``after``
    in that order (-1: no node on that side), and what inserting ``node`` between the
    two multiplies the chain's probability by (Zhou et al. 4.1-4.2;
    ``ext(before, node) * ext(node, after) / ext(before, after)``).

    ``before`` and ``after`` are nodes of ``node``'s group or -1.
    """
    return _insertion_factors(
        np.ascontiguousarray(before, dtype=np.int64), np.ascontiguousarray(node, np.int64),
        np.ascontiguousarray(after, dtype=np.int64), table.poi, table.code, table.code_end,
        table.tree, table.tree_parent, table.tree_level, table.tree_virtual,
        table.tree_last_code)


class CandidateOrder(NamedTuple):
    """An item's candidate nodes (sorted by instant) with what the extension kernels read
    of them, in two orders. By instant (``instants``, ``groups``), for a window's scan.
    By group, instant and code, for the nodes below a matched node of the same group
    (its descendant code ranges, Zhou et al. Lemma 2) when a window holds too many to
    scan: ``block_key`` holds each (group, instant) once (``group * span + instant -
    first``, sorted), ``block_start`` where its nodes start, ``block_code`` their codes
    (sorted within a block) and ``code_pos`` their positions by instant; ``group_set``:
    the distinct groups."""

    nodes: np.ndarray
    instants: np.ndarray
    groups: np.ndarray
    block_key: np.ndarray
    block_start: np.ndarray
    block_code: np.ndarray
    code_pos: np.ndarray
    group_set: np.ndarray
    first: int
    span: int


def candidate_order(table: NodeTable, nodes: np.ndarray, instants: np.ndarray
                    ) -> CandidateOrder:
    """The :class:`CandidateOrder` of ``nodes`` sorted by instant (``instants``)."""
    nodes = np.ascontiguousarray(nodes, dtype=np.int64)
    instants = np.ascontiguousarray(instants, dtype=np.int64)
    groups = np.ascontiguousarray(table.group[nodes], dtype=np.int64)
    codes = table.code[nodes]
    first = int(instants[0]) if len(nodes) else 0
    span = int(instants[-1]) - first + 1 if len(nodes) else 1
    if len(nodes) and int(groups.max()) >= (1 << 62) // span:
        # Keys would overflow: no block order (every window is scanned).
        none = np.zeros(0, dtype=np.int64)
        return CandidateOrder(nodes, instants, groups, none, np.zeros(1, np.int64), none,
                              none, np.unique(groups), first, span)
    key = groups * span + (instants - first)
    code_pos = np.lexsort((codes, key)).astype(np.int64)
    key = key[code_pos]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if len(key) else key
    return CandidateOrder(nodes, instants, groups, key[starts],
                          np.append(starts, len(key)).astype(np.int64),
                          np.ascontiguousarray(codes[code_pos], dtype=np.int64), code_pos,
                          np.unique(groups), first, span)


# A group's nodes below the entry's matched node are found block by block (one block per
# instant with candidates, a few binary searches per code range) when the window holds
# more than this many candidates per block (0: always; tests set it to check both paths).
BLOCK_COST = 16


@numba.njit(cache=True, nogil=True)
def _pair_factors(nodes: np.ndarray, item: int, start: np.ndarray, stop: np.ndarray,
                  candidates: np.ndarray, cand_instant: np.ndarray, cand_group: np.ndarray,
                  block_key: np.ndarray, block_start: np.ndarray, block_code: np.ndarray,
                  code_pos: np.ndarray, group_set: np.ndarray, first: int, span: int,
                  block_cost: int, group: np.ndarray, poi: np.ndarray,
                  code: np.ndarray, code_end: np.ndarray, tree: np.ndarray,
                  tree_parent: np.ndarray, tree_level: np.ndarray, tree_virtual: np.ndarray,
                  tree_last_code: np.ndarray, walk: tuple, offset: np.ndarray,
                  slot_pos: np.ndarray, slot_factor: np.ndarray, slot_end: np.ndarray,
                  r_lo: int, r_hi: int, valid: np.ndarray, by_code: np.ndarray) -> None:
    """Entries ``r_lo`` to ``r_hi``: each one's candidates in its window, in its slots
    from ``offset[r]`` (``slot_pos``: the candidate's position; ``slot_factor``: its
    factor, -1.0 where no OI passes or the slot is unused), and how many are valid
    (``valid[r]``), and whether some came by code range (``by_code[r]``):
    :func:`_insertion` per candidate, written out in this function.
    (A compiled call that passes arrays costs about 90 ns in reference counting when it
    is not inlined, as these loops are not, and an allocation about as much: once per
    range of entries is cheap, once per candidate was most of an extension.)
    (docs/design.md, The batch engine: Candidates, Chain factors.)"""
    k = nodes.shape[1]
    # Scratch, one slot per column (the entry's groups, its nearest matched node of each
    # before and after the item, whether that group's nodes come by code range).
    groups = np.empty(k, dtype=np.int64)
    before = np.empty(k, dtype=np.int64)
    after = np.empty(k, dtype=np.int64)
    through = np.empty(k)
    coded = np.empty(k, dtype=np.bool_)
    for r in range(r_lo, r_hi):
        valid[r] = 0
        by_code[r] = False
        slot_end[r] = offset[r]
        if stop[r] <= start[r]:
            continue
        # The entry's nearest matched node before and after the item, per group it holds
        # (found once, not once per candidate), and the factor ext(before, after).
        n_groups = 0
        for c in range(k):
            x = nodes[r, c]
            if x < 0 or c == item:
                continue
            g = group[x]
            i = 0
            while i < n_groups and groups[i] != g:
                i += 1
            if i == n_groups:
                groups[i], before[i], after[i] = g, -1, -1
                n_groups += 1
            if c < item:
                before[i] = x
            elif after[i] < 0:
                after[i] = x
        for i in range(n_groups):
            if after[i] >= 0:
                through[i] = chain_extension(before[i], after[i], poi, tree, tree_parent,
                                        tree_level, tree_virtual)
        # A large window: the candidates of a group with a matched node before the item are
        # the nodes below it, found block by block in its code ranges (with only one after
        # it, the nodes before that one, walked up from it); the scan skips them.
        # Their positions are written to the entry's slots (the scan's after them); an
        # entry that took none reads its window in order.
        window = stop[r] - start[r]
        t_lo, t_hi = cand_instant[start[r]], cand_instant[stop[r] - 1]
        n_coded = 0
        s = offset[r]
        for i in range(n_groups):
            coded[i] = False
            # (At most one block per instant of the window: no search when that is
            # already too many.)
            if ((before[i] < 0 and after[i] < 0) or len(block_key) == 0
                    or (t_hi - t_lo + 1) * block_cost >= window):
                continue
            base = groups[i] * span - first
            k_lo = first_above(block_key, 0, len(block_key), base + t_lo - 1)
            k_hi = first_above(block_key, k_lo, len(block_key), base + t_hi)
            if (k_hi - k_lo) * block_cost >= window:
                continue
            coded[i] = True
            n_coded += 1
            if before[i] < 0:
                # Only a node after the item: the candidates an OI passes before it are
                # what _descends(m, a) admits, its ancestors by code (walked up its
                # tree and on through the virtual nodes its trees hang at), and every
                # node of a tree hanging at one of those virtual nodes whose codes all
                # lie before a's (a code range).
                parent, kind, instant, child_root = walk
                y = after[i]
                c_a = code[y]
                # Ancestors, and the trees hanging above, have smaller codes the higher
                # they are: the walk ends once it passes the least code of a candidate
                # in the window (a group's chain of subsequences is thousands long).
                c_min = c_a
                for blk in range(k_lo, k_hi):
                    if block_start[blk] < block_start[blk + 1]:
                        c_min = min(c_min, block_code[block_start[blk]])
                while True:
                    x = parent[y]
                    if x < 0:
                        # Above a tree's root: on at the virtual node standing for it.
                        x = tree_virtual[tree[y]]
                        if x < 0:
                            break
                    if kind[x] == REAL and instant[x] < t_lo:
                        # OIs pass every node still above before this one (and every
                        # node of a tree hanging there before the walk's node below),
                        # so all of those come earlier still: none is in the window.
                        break
                    if kind[x] == REAL and instant[x] <= t_hi:
                        key = base + instant[x]
                        blk = first_above(block_key, k_lo, k_hi, key) - 1
                        if blk >= k_lo and block_key[blk] == key:
                            u0, u1 = block_start[blk], block_start[blk + 1]
                            q = first_above(block_code, u0, u1, code[x] - 1)
                            if q < u1 and block_code[q] == code[x]:
                                slot_pos[s] = code_pos[q]
                                s += 1
                    elif kind[x] == VIRTUAL and child_root[x] >= 0:
                        t = tree[child_root[x]]
                        if tree_last_code[t] < c_a:
                            s = _take_code_range(block_start, block_code, code_pos, k_lo,
                                                 k_hi, code[x], tree_last_code[t],
                                                 slot_pos, s)
                    if code[x] <= c_min:
                        break
                    y = x
                continue
            b = before[i]
            lo_c, hi_c = code[b], code_end[b]
            t = tree[b]
            while True:
                s = _take_code_range(block_start, block_code, code_pos, k_lo, k_hi, lo_c,
                                     hi_c, slot_pos, s)
                if tree_virtual[t] < 0:
                    break
                v = tree_virtual[t]
                lo_c, hi_c = tree_last_code[t], code_end[v]
                t = tree[v]
        if n_coded == 0:
            s = offset[r] + window
        else:
            # The window's scan, unless every group of the candidates was taken above.
            scan = False
            for j in range(len(group_set)):
                taken = False
                for i in range(n_groups):
                    if groups[i] == group_set[j] and coded[i]:
                        taken = True
                        break
                if not taken:
                    scan = True
                    break
            if scan:
                for p in range(start[r], stop[r]):
                    g = cand_group[p]
                    skip = False
                    for i in range(n_groups):
                        if groups[i] == g:
                            skip = coded[i]
                            break
                    if not skip:
                        slot_pos[s] = p
                        s += 1
        # Each slot's factor: ext(b, m) and ext(m, a), each with its descendant check
        # (``lo`` must lie on an OI path before ``hi``, :func:`_descends`), and the factor
        # is poi[hi] over the poi of lo's context node in the deepest tree both share
        # (:func:`chain_extension`). (Written out here: as an inlined function, its loop made
        # this one about twice as slow.)
        kept = 0
        for u in range(offset[r], s):
            p = slot_pos[u] if n_coded > 0 else start[r] + u - offset[r]
            m = candidates[p]
            g = cand_group[p]
            b, a, ba = -1, -1, 1.0
            for i in range(n_groups):
                if groups[i] == g:
                    b, a, ba = before[i], after[i], through[i]
                    break
            f = -1.0
            for side in range(2):
                lo, hi = (b, m) if side == 0 else (m, a)
                if hi < 0:
                    break
                if lo < 0:
                    f = poi[hi]
                    continue
                c = code[hi]
                ok = code[lo] < c <= code_end[lo]
                t = tree[lo]
                while not ok and tree_virtual[t] >= 0:
                    v = tree_virtual[t]
                    ok = tree_last_code[t] < c <= code_end[v]
                    t = tree[v]
                if not ok:
                    f = -1.0
                    break
                x = lo
                lx = tree_level[tree[lo]]
                th = tree[hi]
                lh = tree_level[th]
                while lx > lh:
                    x = tree_virtual[tree[x]]
                    lx -= 1
                while lh > lx:
                    th = tree_parent[th]
                    lh -= 1
                while tree[x] != th:
                    x = tree_virtual[tree[x]]
                    th = tree_parent[th]
                e = poi[hi] / poi[x]
                f = e if side == 0 else f * e / ba
            slot_factor[u] = f
            if f > 0:
                kept += 1
        slot_end[r] = s
        valid[r] = kept
        by_code[r] = n_coded > 0


@numba.njit(cache=True, nogil=True, inline="always")
def _slot_position(r: int, s: int, start: np.ndarray, offset: np.ndarray,
                   slot_pos: np.ndarray, by_code: np.ndarray) -> int:
    """The candidate position of entry ``r``'s slot ``s``: written out when some of its
    nodes came by code range, else its window's scan filled its slots in order."""
    return slot_pos[s] if by_code[r] else start[r] + s - offset[r]


@numba.njit(cache=True, nogil=True, inline="always")
def _take_code_range(block_start: np.ndarray, block_code: np.ndarray, code_pos: np.ndarray,
                     k_lo: int, k_hi: int, lo_c: int, hi_c: int, slot_pos: np.ndarray,
                     s: int) -> int:
    """Write to ``slot_pos`` from ``s`` the positions of the candidates of blocks
    ``k_lo`` to ``k_hi`` whose codes lie in ``(lo_c, hi_c]``; the next free slot."""
    for blk in range(k_lo, k_hi):
        u0, u1 = block_start[blk], block_start[blk + 1]
        q_lo = first_above(block_code, u0, u1, lo_c)
        q_hi = first_above(block_code, q_lo, u1, hi_c)
        for q in range(q_lo, q_hi):
            slot_pos[s] = code_pos[q]
            s += 1
    return s


@numba.njit(cache=True, nogil=True, inline="always")
def first_above(values: np.ndarray, lo: int, hi: int, x: int) -> int:
    """The first position in ``values[lo:hi]`` (sorted) holding more than ``x``."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if values[mid] <= x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(cache=True, nogil=True)
def _screen_tuple(t: int, tuple_bounds: np.ndarray, prob: np.ndarray, start: np.ndarray,
                  candidates: np.ndarray, row: np.ndarray, offset: np.ndarray,
                  slot_pos: np.ndarray, by_code: np.ndarray, slot_factor: np.ndarray,
                  slot_end: np.ndarray,
                  tuple_factor: np.ndarray, candidate_factor: np.ndarray, floor: float,
                  table: np.ndarray, sums: np.ndarray, rows: np.ndarray,
                  factors: np.ndarray) -> None:
    """Tuple ``t``'s new tuples (one per event its entries' valid pairs take): their
    summed probability times ``tuple_factor[t]`` and the event's ``candidate_factor``,
    against ``floor``. A pair whose new tuple falls short gets factor 0.0 (valid, not
    kept). The tuple's hash table, ``sums``, ``rows`` and ``factors`` are its part of
    those arrays (from its first slot; four times that for the table, which holds at
    most four slots per pair). (docs/design.md, The batch engine: Extension.)"""
    first, end = offset[tuple_bounds[t]], offset[tuple_bounds[t + 1]]
    pairs = end - first
    if pairs == 0:
        return
    size = 1
    while size < 2 * pairs:
        size *= 2
    mask = size - 1
    base = 4 * first
    table[base:base + size] = -1
    groups = 0
    for r in range(tuple_bounds[t], tuple_bounds[t + 1]):
        for s in range(offset[r], slot_end[r]):
            f = slot_factor[s]
            if f <= 0:
                continue
            p = _slot_position(r, s, start, offset, slot_pos, by_code)
            v = row[candidates[p]]
            h = np.int64(((np.uint64(v) * np.uint64(0x9E3779B97F4A7C15))
                          >> np.uint64(32)) & np.uint64(mask))
            while True:
                j = table[base + h]
                if j < 0:
                    j = groups
                    table[base + h] = j
                    groups += 1
                    rows[first + j] = v
                    sums[first + j] = 0.0
                    factors[first + j] = candidate_factor[p]
                    break
                if rows[first + j] == v:
                    break
                h = (h + 1) & mask
            sums[first + j] += prob[r] * f
    for r in range(tuple_bounds[t], tuple_bounds[t + 1]):
        for s in range(offset[r], slot_end[r]):
            if slot_factor[s] <= 0:
                continue
            v = row[candidates[_slot_position(r, s, start, offset, slot_pos, by_code)]]
            h = np.int64(((np.uint64(v) * np.uint64(0x9E3779B97F4A7C15))
                          >> np.uint64(32)) & np.uint64(mask))
            while rows[first + table[base + h]] != v:
                h = (h + 1) & mask
            j = first + table[base + h]
            if sums[j] * tuple_factor[t] * factors[j] < floor:
                slot_factor[s] = 0.0


@numba.njit(cache=True, nogil=True, parallel=True)
def _extended(events: np.ndarray, nodes: np.ndarray, prob: np.ndarray, item: int,
              start: np.ndarray, stop: np.ndarray, candidates: np.ndarray,
              cand_instant: np.ndarray, cand_group: np.ndarray, block_key: np.ndarray,
              block_start: np.ndarray, block_code: np.ndarray, code_pos: np.ndarray,
              group_set: np.ndarray, first: int, span: int, block_cost: int,
              row: np.ndarray,
              group: np.ndarray, poi: np.ndarray, code: np.ndarray, code_end: np.ndarray,
              tree: np.ndarray, tree_parent: np.ndarray, tree_level: np.ndarray,
              tree_virtual: np.ndarray, tree_last_code: np.ndarray, walk: tuple,
              tuple_bounds: np.ndarray, tuple_factor: np.ndarray,
              candidate_factor: np.ndarray, floor: float
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, int]:
    """Every valid extension of the entries by item ``item``, in entry order
    (:func:`extended`; docs/design.md, The batch engine: Extension, Chain factors).

    Each entry's candidates in its window get their factors (:func:`_pair_factors`,
    the descendant tests of Zhou et al. 4.2 and the code ranges of Lemmas 2-3); with a
    screen, the pairs whose new tuple's bound falls short of ``floor`` are dropped
    (:func:`_screen_tuple`); the rest are written out.

    Parameters
    ----------
    events, nodes : (n, k) int64
        The entries' events (archive rows) and nodes (-1 where unmatched).
    prob : (n,) float64
        The entries' probabilities.
    item : int
        The positive item being matched.
    start, stop : (n,) int64
        Per entry, its window's candidates: positions ``start[r]:stop[r]`` in
        ``candidates``.
    candidates, cand_instant, cand_group, block_key, block_start, block_code, code_pos,
    group_set, first, span
        The item's :class:`CandidateOrder`, field by field.
    block_cost : int
        :data:`BLOCK_COST`.
    row, group, poi, code, code_end, tree, tree_parent, tree_level, tree_virtual,
    tree_last_code
        The node table's columns of those names.
    walk : tuple
        What a walk up from a node reads (:func:`_walk`).
    tuple_bounds : int64
        The screen: where each tuple of the entries (in tuple order) starts, then
        ``n``; empty for no screen.
    tuple_factor, candidate_factor, floor
        The screen: per tuple and per candidate, the product of the events' Pr(S | e),
        and the bound a new tuple must reach.

    Returns
    -------
    out_events, out_nodes : (m, k) int64
        The kept extensions' events and nodes: their entry's, with the candidate's
        event and node in column ``item``.
    out_prob : (m,) float64
        Their probabilities: the entry's times the candidate's chain factor.
    kept : (n + 1,) int64
        Where each entry's extensions start in the outputs, then ``m``.
    valid : int
        The number of valid pairs (an OI passes them), kept or screened out.
    by_code : int
        The number of entries that took some candidates by code range.
    """
    n, k = nodes.shape
    # Every (entry, candidate) pair has its own slot, so entries run in parallel; the
    # kept pairs are then written out in entry order.
    offset = np.empty(n + 1, dtype=np.int64)
    offset[0] = 0
    for r in range(n):
        offset[r + 1] = offset[r] + max(stop[r] - start[r], 0)
    slot_pos = np.empty(offset[n], dtype=np.int64)
    slot_factor = np.empty(offset[n])
    slot_end = np.empty(n, dtype=np.int64)
    valid = np.zeros(n, dtype=np.int64)
    by_code = np.zeros(n, dtype=np.bool_)
    chunks = (n + _CHUNK - 1) // _CHUNK
    for chunk in numba.prange(chunks):
        _pair_factors(nodes, item, start, stop, candidates, cand_instant, cand_group,
                      block_key, block_start, block_code, code_pos, group_set, first, span,
                      block_cost, group, poi, code, code_end, tree,
                      tree_parent, tree_level, tree_virtual, tree_last_code, walk, offset,
                      slot_pos, slot_factor, slot_end, chunk * _CHUNK,
                      min(n, (chunk + 1) * _CHUNK), valid, by_code)
    screened = len(tuple_bounds) > 0
    if screened:
        n_tuples = len(tuple_bounds) - 1
        table = np.empty(4 * offset[n] + 4, dtype=np.int64)
        sums = np.empty(offset[n])
        rows = np.empty(offset[n], dtype=np.int64)
        factors = np.empty(offset[n])
        for t in numba.prange(n_tuples):
            _screen_tuple(t, tuple_bounds, prob, start, candidates, row, offset, slot_pos,
                          by_code, slot_factor, slot_end, tuple_factor, candidate_factor,
                          floor, table, sums, rows, factors)
    kept = np.zeros(n + 1, dtype=np.int64)
    for r in numba.prange(n):
        c = 0
        for s in range(offset[r], slot_end[r]):
            if slot_factor[s] > 0:
                c += 1
        kept[r + 1] = c
    for r in range(n):
        kept[r + 1] += kept[r]
    total = kept[n]
    out_events = np.empty((total, k), dtype=np.int64)
    out_nodes = np.empty((total, k), dtype=np.int64)
    out_prob = np.empty(total)
    for r in numba.prange(n):
        j = kept[r]
        for s in range(offset[r], slot_end[r]):
            f = slot_factor[s]
            if f > 0:
                m = candidates[_slot_position(r, s, start, offset, slot_pos, by_code)]
                for c in range(k):
                    out_events[j, c] = events[r, c]
                    out_nodes[j, c] = nodes[r, c]
                out_events[j, item] = row[m]
                out_nodes[j, item] = m
                out_prob[j] = prob[r] * f
                j += 1
    return out_events, out_nodes, out_prob, kept, valid.sum(), by_code.sum()


_NO_SCREEN = (np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0), 0.0)


def extended(table: NodeTable, events: np.ndarray, nodes: np.ndarray, prob: np.ndarray,
             item: int, start: np.ndarray, stop: np.ndarray, candidates: CandidateOrder,
             screen: tuple[np.ndarray, np.ndarray, np.ndarray, float] | None = None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, int]:
    """Every valid extension of entries ``(events, nodes, prob)`` by item ``item``, in
    entry order: entry ``r`` may take the candidate nodes
    ``candidates.nodes[start[r]:stop[r]]``;
    each is kept when an OI of its group passes the entry's nearest matched nodes of that
    group before and after the item and it in between (:func:`insertion_factors`), and
    its probability is multiplied by that factor. Returns the new events, nodes and
    probabilities, where each entry's extensions start (``n + 1`` offsets), the number
    of valid pairs, and the number of entries whose window took some nodes from the
    descendant code ranges of their group's matched node (:class:`CandidateOrder`).

    ``screen``: ``(tuple_bounds, tuple_factor, candidate_factor, floor)`` for entries in
    tuple order (``tuple_bounds``: where each tuple starts, then ``n``): a valid pair is
    written out only when its new tuple (the tuple with the candidate's event) reaches
    ``floor`` with its summed probability times the tuple's ``tuple_factor`` and the
    candidate's ``candidate_factor`` (aligned with ``candidates``): the pruning bound it
    will have, known before any of its entries is written."""
    bounds, tuple_factor, candidate_factor, floor = screen if screen is not None else (
        _NO_SCREEN)
    with KERNEL_LOCK:
        return _extended(
            np.ascontiguousarray(events, dtype=np.int64), np.ascontiguousarray(nodes, np.int64),
            np.ascontiguousarray(prob, dtype=np.float64), int(item),
            np.ascontiguousarray(start, dtype=np.int64), np.ascontiguousarray(stop, np.int64),
            *candidates, int(BLOCK_COST), table.row, table.group, table.poi,
            table.code, table.code_end, table.tree, table.tree_parent, table.tree_level,
            table.tree_virtual, table.tree_last_code, _walk(table),
            np.ascontiguousarray(bounds, dtype=np.int64),
            np.ascontiguousarray(tuple_factor, dtype=np.float64),
            np.ascontiguousarray(candidate_factor, dtype=np.float64), float(floor))


@numba.njit(cache=True, nogil=True, parallel=True)
def _extended_sums(nodes: np.ndarray, prob: np.ndarray, item: int, tuple_bounds: np.ndarray,
                   start: np.ndarray, stop: np.ndarray, candidates: np.ndarray,
                   cand_instant: np.ndarray, cand_group: np.ndarray, block_key: np.ndarray,
                   block_start: np.ndarray, block_code: np.ndarray, code_pos: np.ndarray,
                   group_set: np.ndarray, first: int, span: int, block_cost: int,
                   row: np.ndarray, instant: np.ndarray, group: np.ndarray, poi: np.ndarray,
                   code: np.ndarray, code_end: np.ndarray, tree: np.ndarray,
                   tree_parent: np.ndarray, tree_level: np.ndarray, tree_virtual: np.ndarray,
                   tree_last_code: np.ndarray, walk: tuple):
    """:func:`_extended` for the last item to match, each new tuple's pairs added up in
    a hash table per parent tuple instead of written out (:func:`extended_sums`;
    docs/design.md, The batch engine: The last item).

    Parameters
    ----------
    nodes : (n, k) int64
        The entries' nodes, every column but ``item`` matched.
    prob : (n,) float64
        The entries' probabilities.
    item : int
        The last positive item to match.
    tuple_bounds : (t + 1,) int64
        Where each tuple of the entries (in tuple order) starts, then ``n``.
    start, stop : (n,) int64
        Per entry, its window's candidates: positions ``start[r]:stop[r]`` in
        ``candidates``.
    candidates, cand_instant, cand_group, block_key, block_start, block_code, code_pos,
    group_set, first, span
        The item's :class:`CandidateOrder`, field by field.
    block_cost : int
        :data:`BLOCK_COST`.
    row, instant, group, poi, code, code_end, tree, tree_parent, tree_level,
    tree_virtual, tree_last_code
        The node table's columns of those names.
    walk : tuple
        What a walk up from a node reads (:func:`_walk`).

    Returns
    -------
    out_entry : (m,) int64
        Per new tuple, the first entry of its parent tuple with a valid pair for its
        event (the entry's other events are the new tuple's).
    out_row : (m,) int64
        The event (archive row) the item took.
    out_prob : (m,) float64
        The summed probability of the new tuple's pairs.
    out_first, out_last : (m,) int64
        The earliest instant of the first item and the latest of the last over its
        pairs.
    created : int
        The number of valid pairs (the entries created, the paper's xi).
    by_code : int
        The number of entries that took some candidates by code range.

    New tuples come parent tuple by parent tuple, each's in order of first appearance.
    """
    n, k = nodes.shape
    n_tuples = len(tuple_bounds) - 1
    offset = np.empty(n + 1, dtype=np.int64)
    offset[0] = 0
    for r in range(n):
        offset[r + 1] = offset[r] + max(stop[r] - start[r], 0)
    slot_pos = np.empty(offset[n], dtype=np.int64)
    slot_factor = np.empty(offset[n])
    slot_end = np.empty(n, dtype=np.int64)
    valid = np.zeros(n, dtype=np.int64)
    by_code = np.zeros(n, dtype=np.bool_)
    chunks = (n + _CHUNK - 1) // _CHUNK
    for chunk in numba.prange(chunks):
        _pair_factors(nodes, item, start, stop, candidates, cand_instant, cand_group,
                      block_key, block_start, block_code, code_pos, group_set, first, span,
                      block_cost, group, poi, code, code_end, tree,
                      tree_parent, tree_level, tree_virtual, tree_last_code, walk, offset,
                      slot_pos, slot_factor, slot_end, chunk * _CHUNK,
                      min(n, (chunk + 1) * _CHUNK), valid, by_code)
    # A tuple's new events lie among the candidates its entries' windows span, so a hash
    # table of twice that many slots per tuple holds them (no allocation per tuple).
    tuple_span = np.zeros(n_tuples + 1, dtype=np.int64)
    first_candidate = np.zeros(n_tuples, dtype=np.int64)
    for t in range(n_tuples):
        lo, hi = np.int64(1) << 62, np.int64(0)
        for r in range(tuple_bounds[t], tuple_bounds[t + 1]):
            if stop[r] > start[r]:
                lo = min(lo, start[r])
                hi = max(hi, stop[r])
        first_candidate[t] = lo
        tuple_span[t + 1] = tuple_span[t] + max(hi - lo, 0)
    total = tuple_span[n_tuples]
    slots = np.empty(4 * total + 4, dtype=np.int64)
    g_entry = np.empty(total, dtype=np.int64)     # tuple t's groups at tuple_span[t] + g
    g_row = np.empty(total, dtype=np.int64)
    g_prob = np.zeros(total)
    g_first = np.empty(total, dtype=np.int64)
    g_last = np.empty(total, dtype=np.int64)
    counts = np.zeros(n_tuples, dtype=np.int64)
    created = np.zeros(n_tuples, dtype=np.int64)
    for t in numba.prange(n_tuples):
        width = tuple_span[t + 1] - tuple_span[t]
        if width == 0:
            continue
        size = 1
        while size < 2 * width:
            size *= 2
        mask = size - 1
        base = 4 * tuple_span[t]
        slots[base:base + size] = -1
        off = tuple_span[t]
        groups = 0
        made = 0
        for r in range(tuple_bounds[t], tuple_bounds[t + 1]):
            for s in range(offset[r], slot_end[r]):
                f = slot_factor[s]
                if f <= 0:
                    continue
                m = candidates[_slot_position(r, s, start, offset, slot_pos, by_code)]
                made += 1
                v = row[m]
                h = np.int64(((np.uint64(v) * np.uint64(0x9E3779B97F4A7C15))
                              >> np.uint64(32)) & np.uint64(mask))
                while True:
                    j = slots[base + h]
                    if j < 0:
                        j = groups
                        slots[base + h] = j
                        groups += 1
                        g_entry[off + j] = r
                        g_row[off + j] = v
                        g_first[off + j] = np.int64(1) << 62
                        g_last[off + j] = -(np.int64(1) << 62)
                        break
                    if g_row[off + j] == v:
                        break
                    h = (h + 1) & mask
                j += off
                g_prob[j] += prob[r] * f
                first = instant[m] if item == 0 else instant[nodes[r, 0]]
                last = instant[m] if item == k - 1 else instant[nodes[r, k - 1]]
                g_first[j] = min(g_first[j], first)
                g_last[j] = max(g_last[j], last)
        counts[t] = groups
        created[t] = made
    offset = np.zeros(n_tuples + 1, dtype=np.int64)
    for t in range(n_tuples):
        offset[t + 1] = offset[t] + counts[t]
    out = offset[n_tuples]
    out_entry = np.empty(out, dtype=np.int64)
    out_row = np.empty(out, dtype=np.int64)
    out_prob = np.empty(out)
    out_first = np.empty(out, dtype=np.int64)
    out_last = np.empty(out, dtype=np.int64)
    for t in numba.prange(n_tuples):
        for g in range(counts[t]):
            i, j = tuple_span[t] + g, offset[t] + g
            out_entry[j] = g_entry[i]
            out_row[j] = g_row[i]
            out_prob[j] = g_prob[i]
            out_first[j] = g_first[i]
            out_last[j] = g_last[i]
    return (out_entry, out_row, out_prob, out_first, out_last, created.sum(),
            by_code.sum())


def extended_sums(table: NodeTable, nodes: np.ndarray, prob: np.ndarray, item: int,
                  tuple_bounds: np.ndarray, start: np.ndarray, stop: np.ndarray,
                  candidates: CandidateOrder
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int,
                             int]:
    """:func:`extended` for the last item to match, with each new tuple's entries added
    up at once instead of written out: entries ``(nodes, prob)`` in tuple order
    (``tuple_bounds``: where each tuple starts, then ``n``), every other item matched.

    Returns per new tuple: the entry it extends (its other events), the event ``item``
    took, the summed probability, the earliest instant of the first item and the latest
    of the last, over its entries; the number of entries that were created (the
    paper's xi counts them), and as :func:`extended`, the entries that used code
    ranges. New tuples come tuple by tuple, each's in order of first
    appearance."""
    with KERNEL_LOCK:
        entry, new_row, total, first, last, created, by_code = _extended_sums(
            np.ascontiguousarray(nodes, np.int64), np.ascontiguousarray(prob, np.float64),
            int(item), np.ascontiguousarray(tuple_bounds, np.int64),
            np.ascontiguousarray(start, dtype=np.int64), np.ascontiguousarray(stop, np.int64),
            *candidates, int(BLOCK_COST), table.row, table.instant,
            table.group, table.poi, table.code, table.code_end, table.tree, table.tree_parent,
            table.tree_level, table.tree_virtual, table.tree_last_code, _walk(table))
    return entry, new_row, total, first, last, int(created), int(by_code)


def _walk(table: NodeTable) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What a walk up from a node reads: per node its parent, kind, instant and (for a
    virtual node) the root of the tree it stands for."""
    return (table.parent, table.kind, table.instant, table.child_root)
