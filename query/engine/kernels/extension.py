"""Extension, compiled: every entry of a batch takes each valid candidate of the next
item in its window, in parallel (:func:`extended`), or, for the last item, each new
tuple's pairs are summed at once (:func:`extended_sums`). The pairs and their factors
come from :mod:`~uncertain_cep.query.engine.kernels.pairs`
(docs/design.md, The batch engine: Extension, The last item).
"""

from __future__ import annotations

import numba
import numpy as np

from uncertain_cep.index.node_table import NodeArrays, NodeTable
from uncertain_cep.query.engine.kernels.chains import CandidateOrder
from uncertain_cep.query.engine.kernels.core import KERNEL_LOCK
from uncertain_cep.query.engine.kernels.pairs import pair_factors, slot_position, window_slots

__all__ = ["BLOCK_COST", "extended", "extended_sums"]

# Entries per chunk of the extension kernels (each chunk allocates its scratch once).
_CHUNK = 1024


# A group's nodes below the entry's matched node are found block by block (one block per
# instant with candidates, a few binary searches per code range) when the window holds
# more than this many candidates per block (0: always; tests set it to check both paths).
BLOCK_COST = 16



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
            p = slot_position(r, s, start, offset, slot_pos, by_code)
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
            v = row[candidates[slot_position(r, s, start, offset, slot_pos, by_code)]]
            h = np.int64(((np.uint64(v) * np.uint64(0x9E3779B97F4A7C15))
                          >> np.uint64(32)) & np.uint64(mask))
            while rows[first + table[base + h]] != v:
                h = (h + 1) & mask
            j = first + table[base + h]
            if sums[j] * tuple_factor[t] * factors[j] < floor:
                slot_factor[s] = 0.0


@numba.njit(cache=True, nogil=True, parallel=True)
def _extended(events: np.ndarray, nodes: np.ndarray, prob: np.ndarray, item: int,
              start: np.ndarray, stop: np.ndarray, cands: CandidateOrder, block_cost: int,
              node_arrays: NodeArrays, tuple_bounds: np.ndarray, tuple_factor: np.ndarray,
              candidate_factor: np.ndarray, floor: float
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, int]:
    """Every valid extension of the entries by item ``item``, in entry order
    (:func:`extended`; docs/design.md, The batch engine: Extension, Chain factors).

    Each entry's candidates in its window get their factors
    (:func:`~uncertain_cep.query.engine.kernels.pairs.pair_factors`, the descendant
    tests of Zhou et al. 4.2 and the code ranges of Lemmas 2-3); with a screen, the
    pairs whose new tuple's bound falls short of ``floor`` are dropped
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
    cands : CandidateOrder
        The item's candidates.
    block_cost : int
        :data:`BLOCK_COST`.
    node_arrays : NodeArrays
        The node table.
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
    candidates, row = cands.nodes, node_arrays.row
    # Every (entry, candidate) pair has its own slot, so entries run in parallel; the
    # kept pairs are then written out in entry order.
    pairs = window_slots(start, stop)
    offset, slot_pos, slot_factor, slot_end, valid, by_code = pairs
    chunks = (n + _CHUNK - 1) // _CHUNK
    for chunk in numba.prange(chunks):
        pair_factors(nodes, item, start, stop, cands, block_cost, node_arrays, pairs,
                     chunk * _CHUNK, min(n, (chunk + 1) * _CHUNK))
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
                m = candidates[slot_position(r, s, start, offset, slot_pos, by_code)]
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
            candidates, int(BLOCK_COST), table.arrays, np.ascontiguousarray(bounds, dtype=np.int64),
            np.ascontiguousarray(tuple_factor, dtype=np.float64),
            np.ascontiguousarray(candidate_factor, dtype=np.float64), float(floor))


@numba.njit(cache=True, nogil=True, parallel=True)
def _extended_sums(nodes: np.ndarray, prob: np.ndarray, item: int, tuple_bounds: np.ndarray,
                   start: np.ndarray, stop: np.ndarray, cands: CandidateOrder,
                   block_cost: int, node_arrays: NodeArrays) -> tuple:
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
    cands : CandidateOrder
        The item's candidates.
    block_cost : int
        :data:`BLOCK_COST`.
    node_arrays : NodeArrays
        The node table.

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
    candidates, row, instant = cands.nodes, node_arrays.row, node_arrays.instant
    pairs = window_slots(start, stop)
    offset, slot_pos, slot_factor, slot_end, _, by_code = pairs
    chunks = (n + _CHUNK - 1) // _CHUNK
    for chunk in numba.prange(chunks):
        pair_factors(nodes, item, start, stop, cands, block_cost, node_arrays, pairs,
                     chunk * _CHUNK, min(n, (chunk + 1) * _CHUNK))
    # A tuple's new events lie among the candidates its entries' windows span, so a hash
    # table of twice that many slots per tuple holds them (no allocation per tuple).
    tuple_span = np.zeros(n_tuples + 1, dtype=np.int64)
    for t in range(n_tuples):
        lo, hi = np.int64(1) << 62, np.int64(0)
        for r in range(tuple_bounds[t], tuple_bounds[t + 1]):
            if stop[r] > start[r]:
                lo = min(lo, start[r])
                hi = max(hi, stop[r])
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
                m = candidates[slot_position(r, s, start, offset, slot_pos, by_code)]
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
            candidates, int(BLOCK_COST), table.arrays)
    return entry, new_row, total, first, last, int(created), int(by_code)

