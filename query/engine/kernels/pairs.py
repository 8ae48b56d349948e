"""Each entry's candidates in its window and their chain factors: the pairs an
extension (:mod:`~uncertain_cep.query.engine.kernels.extension`) keeps or drops.

An entry's window holds the item's candidate nodes between two instants
(:class:`~uncertain_cep.query.engine.kernels.chains.CandidateOrder`); a candidate of a
group the entry already holds is valid when some OI passes the entry's nearest matched
nodes of that group before and after the item and the candidate in between (Zhou et
al. 4.2, Lemma 2), and its factor is what inserting it multiplies the chain's
probability by (4.1). A large window of a group with a matched node is not scanned:
its candidates are found by code range (docs/design.md, The batch engine: Candidates,
Chain factors).
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from uncertain_cep.index.forests.forest import REAL, VIRTUAL
from uncertain_cep.index.node_table import NodeArrays
from uncertain_cep.query.engine.kernels.chains import (
    CandidateOrder,
    chain_extension,
    first_above,
)

__all__ = ["Slots", "pair_factors", "slot_position", "window_slots"]


class Slots(NamedTuple):
    """One slot per (entry, candidate in its window) pair, entry ``r``'s from
    ``offset[r]`` (then the total): the candidate's position (``slot_pos``) and factor
    (``slot_factor``, -1.0 where no OI passes), and per entry where its used slots end
    (``slot_end``), how many are valid (``valid``) and whether some came by code range
    (``by_code``). Filled by :func:`pair_factors`."""

    offset: np.ndarray
    slot_pos: np.ndarray
    slot_factor: np.ndarray
    slot_end: np.ndarray
    valid: np.ndarray
    by_code: np.ndarray


@numba.njit(cache=True, nogil=True, inline="always")
def window_slots(start: np.ndarray, stop: np.ndarray) -> Slots:
    """Room for every entry's window (``start[r]:stop[r]``), one slot per candidate."""
    n = len(start)
    offset = np.empty(n + 1, dtype=np.int64)
    offset[0] = 0
    for r in range(n):
        offset[r + 1] = offset[r] + max(stop[r] - start[r], 0)
    return Slots(offset, np.empty(offset[n], dtype=np.int64), np.empty(offset[n]),
                 np.empty(n, dtype=np.int64), np.zeros(n, dtype=np.int64),
                 np.zeros(n, dtype=np.bool_))


@numba.njit(cache=True, nogil=True, inline="always")
def _matched_around(nodes: np.ndarray, r: int, item: int, group: np.ndarray,
                    groups: np.ndarray, before: np.ndarray, after: np.ndarray) -> int:
    """Entry ``r``'s groups (``groups``) and per group its nearest matched node before
    and after ``item`` (``before``, ``after``; -1: none); how many groups."""
    n_groups = 0
    for c in range(nodes.shape[1]):
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
    return n_groups


@numba.njit(cache=True, nogil=True, inline="always")
def _ancestors_in_window(y: int, t_lo: int, t_hi: int, key_base: int, k_lo: int, k_hi: int,
                         block_key: np.ndarray, block_start: np.ndarray,
                         block_code: np.ndarray, code_pos: np.ndarray, parent: np.ndarray,
                         kind: np.ndarray, instant: np.ndarray, child_root: np.ndarray,
                         code: np.ndarray, tree: np.ndarray, tree_virtual: np.ndarray,
                         tree_last_code: np.ndarray, slot_pos: np.ndarray, s: int) -> int:
    """With only a matched node ``y`` after the item in its group: write to ``slot_pos``
    from ``s`` the positions of the window's candidates (blocks ``k_lo`` to ``k_hi``,
    instants ``t_lo`` to ``t_hi``) an OI passes before ``y``: what
    :func:`~uncertain_cep.query.engine.kernels.chains.descends` admits, ``y``'s
    ancestors by code (walked up its tree and on through the virtual nodes its trees
    hang at), and every node of a tree hanging at one of those virtual nodes whose
    codes all lie before ``y``'s (a code range). The next free slot."""
    c_a = code[y]
    # Ancestors, and the trees hanging above, have smaller codes the higher they are:
    # the walk ends once it passes the least code of a candidate in the window (a
    # group's chain of subsequences is thousands long).
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
            # OIs pass every node still above before this one (and every node of a
            # tree hanging there before the walk's node below), so all of those come
            # earlier still: none is in the window.
            break
        if kind[x] == REAL and instant[x] <= t_hi:
            key = key_base + instant[x]
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
                s = _take_code_range(block_start, block_code, code_pos, k_lo, k_hi, code[x],
                                     tree_last_code[t], slot_pos, s)
        if code[x] <= c_min:
            break
        y = x
    return s


@numba.njit(cache=True, nogil=True, inline="always")
def _scan_window(lo: int, hi: int, cand_group: np.ndarray, group_set: np.ndarray,
                 groups: np.ndarray, coded: np.ndarray, n_groups: int,
                 slot_pos: np.ndarray, s: int) -> int:
    """Write to ``slot_pos`` from ``s`` the window's candidates (positions ``lo`` to
    ``hi``) of the groups whose nodes did not come by code range (``coded``), unless
    every group of the candidates (``group_set``) did. The next free slot."""
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
        for p in range(lo, hi):
            g = cand_group[p]
            skip = False
            for i in range(n_groups):
                if groups[i] == g:
                    skip = coded[i]
                    break
            if not skip:
                slot_pos[s] = p
                s += 1
    return s


@numba.njit(cache=True, nogil=True)
def pair_factors(nodes: np.ndarray, item: int, start: np.ndarray, stop: np.ndarray,
                 cands: CandidateOrder, block_cost: int, node_arrays: NodeArrays,
                 slots: Slots, r_lo: int, r_hi: int) -> None:
    """Entries ``r_lo`` to ``r_hi``: each one's candidates in its window, in its slots
    from ``slots.offset[r]`` (``slot_pos``: the candidate's position; ``slot_factor``:
    its factor, -1.0 where no OI passes or the slot is unused), how many are valid
    (``valid[r]``), and whether some came by code range (``by_code[r]``): the
    insertion factor (:func:`~uncertain_cep.query.engine.kernels.chains.insertion_factors`)
    per candidate, written out in this function.
    (A compiled call that passes arrays costs about 90 ns in reference counting when it
    is not inlined, as these loops are not, and an allocation about as much: once per
    range of entries is cheap, once per candidate was most of an extension.)
    (docs/design.md, The batch engine: Candidates, Chain factors.)"""
    candidates, cand_instant, cand_group = cands.nodes, cands.instants, cands.groups
    block_key, block_start, block_code = cands.block_key, cands.block_start, cands.block_code
    code_pos, group_set, first, span = cands.code_pos, cands.group_set, cands.first, cands.span
    group, poi, code, code_end = (node_arrays.group, node_arrays.poi, node_arrays.code,
                                  node_arrays.code_end)
    tree, tree_parent, tree_level = (node_arrays.tree, node_arrays.tree_parent,
                                     node_arrays.tree_level)
    tree_virtual, tree_last_code = node_arrays.tree_virtual, node_arrays.tree_last_code
    parent, kind, instant = node_arrays.parent, node_arrays.kind, node_arrays.instant
    child_root = node_arrays.child_root
    offset, slot_pos, slot_factor, slot_end, valid, by_code = slots
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
        # The nearest matched nodes (found once, not once per candidate), and per group
        # the factor ext(before, after).
        n_groups = _matched_around(nodes, r, item, group, groups, before, after)
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
            key_base = groups[i] * span - first
            k_lo = first_above(block_key, 0, len(block_key), key_base + t_lo - 1)
            k_hi = first_above(block_key, k_lo, len(block_key), key_base + t_hi)
            if (k_hi - k_lo) * block_cost >= window:
                continue
            coded[i] = True
            n_coded += 1
            if before[i] < 0:
                s = _ancestors_in_window(after[i], t_lo, t_hi, key_base, k_lo, k_hi,
                                         block_key, block_start, block_code, code_pos,
                                         parent, kind, instant, child_root, code, tree,
                                         tree_virtual, tree_last_code, slot_pos, s)
                continue
            # The nodes below ``before``: its descendant code ranges (Zhou et al. Lemma 2).
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
            s = _scan_window(start[r], stop[r], cand_group, group_set, groups, coded,
                             n_groups, slot_pos, s)
        # Each slot's factor: ext(b, m) and ext(m, a), each with its descendant check
        # (``lo`` must lie on an OI path before ``hi``, chains.descends), and the factor
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
def slot_position(r: int, s: int, start: np.ndarray, offset: np.ndarray,
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
