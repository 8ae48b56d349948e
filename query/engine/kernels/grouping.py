"""Grouping equal rows of an integer matrix in linear time: the batch engine's "group by
tuple" and "merge entries with the same future" without sorting every column.

:func:`group_rows` numbers the distinct rows in order of first appearance with an
open-addressing hash table that compares whole rows (exact: a hash collision only costs a
probe); :func:`order_by_group` is the counting sort that makes each group contiguous.

>>> ids, first = group_rows(np.array([[3, 1], [2, 2], [3, 1], [2, 2], [0, 5]]))
>>> ids.tolist(), first.tolist()
([0, 1, 0, 1, 2], [0, 1, 4])
>>> order_by_group(ids, len(first)).tolist()
[0, 2, 1, 3, 4]
"""

from __future__ import annotations

import numba
import numpy as np

from uncertain_cep.query.engine.kernels.core import KERNEL_LOCK

__all__ = ["group_rows", "group_rows_in_segments", "order_by_group", "rows_equal"]


@numba.njit(cache=True, nogil=True)
def _row_hash(matrix: np.ndarray, i: int) -> np.uint64:
    """A 64-bit hash of row ``i`` of ``matrix``: column by column, the value combined
    into the hash, then mixed (a multiply and a shift). Equal rows hash alike; the tables
    compare rows (:func:`rows_equal`), so a collision only costs a probe.

    Returns
    -------
    np.uint64
        The hash; the tables take its low bits as a row's home slot.
    """
    h = np.uint64(0x9E3779B97F4A7C15)
    for c in range(matrix.shape[1]):
        h ^= np.uint64(matrix[i, c]) + np.uint64(0x9E3779B97F4A7C15) \
            + (h << np.uint64(6)) + (h >> np.uint64(2))
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(31)
    return h


@numba.njit(cache=True, nogil=True)
def rows_equal(matrix: np.ndarray, a: int, b: int) -> bool:
    """Whether rows ``a`` and ``b`` of ``matrix`` hold the same values, column by
    column."""
    for c in range(matrix.shape[1]):  # noqa: SIM110 (numba compiles no generator in all())
        if matrix[a, c] != matrix[b, c]:
            return False
    return True


@numba.njit(cache=True, nogil=True, parallel=True)
def _group_rows_in_segments(matrix: np.ndarray, order_key: np.ndarray, weights: np.ndarray,
                            seg: np.ndarray
                            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct rows of ``matrix`` segment by segment, segments in parallel, each
    hashed in a table of its own (:func:`group_rows_in_segments`; docs/design.md, The
    batch engine: Merging).

    Parameters
    ----------
    matrix : (n, w) int64
        The rows; equal rows lie within one segment.
    order_key : (n,) int64
        Per row, what orders the groups within a segment (of a group's first row).
    weights : (n,) float64
        Per row, what its group sums.
    seg : (s + 1,) int64
        The segments' boundaries, from 0 to ``n``.

    Returns
    -------
    out_first : (g,) int64
        Each group's first row; groups segment by segment, within a segment ordered by
        ``order_key`` (stable: ties in order of first appearance).
    out_weight : (g,) float64
        Each group's summed ``weights``.
    ids : (n,) int64
        Per row, its group's position in ``out_first``.
    """
    n = len(matrix)
    n_seg = len(seg) - 1
    ids = np.empty(n, dtype=np.int64)
    firsts = np.empty(n, dtype=np.int64)     # segment s's groups at seg[s] + g
    counts = np.zeros(n_seg, dtype=np.int64)
    # Segment s hashes into slots[4 * seg[s]:]: a table of at least twice its rows fits
    # before the next segment's, so nothing is allocated per segment.
    slots = np.empty(4 * n + 4, dtype=np.int64)
    for s in numba.prange(n_seg):
        lo, hi = seg[s], seg[s + 1]
        if hi == lo:     # an empty segment shares its start with the next: touch nothing
            continue
        if hi - lo == 1:
            ids[lo] = 0
            firsts[lo] = lo
            counts[s] = 1
            continue
        size = 1
        while size < 2 * (hi - lo):
            size *= 2
        mask = size - 1
        base = 4 * lo
        slots[base:base + size] = -1
        groups = 0
        for i in range(lo, hi):
            t = np.int64(_row_hash(matrix, i) & np.uint64(mask))
            while True:
                g = slots[base + t]
                if g < 0:
                    slots[base + t] = groups
                    firsts[lo + groups] = i
                    ids[i] = groups
                    groups += 1
                    break
                if rows_equal(matrix, firsts[lo + g], i):
                    ids[i] = g
                    break
                t = (t + 1) & mask
        counts[s] = groups
    offset = np.zeros(n_seg + 1, dtype=np.int64)
    for s in range(n_seg):
        offset[s + 1] = offset[s] + counts[s]
    out_first = np.empty(offset[n_seg], dtype=np.int64)
    out_weight = np.zeros(offset[n_seg])
    rank = np.empty(n, dtype=np.int64)       # segment s's groups at seg[s] + g
    for s in numba.prange(n_seg):
        lo, groups, base = seg[s], counts[s], offset[s]
        # Groups in order of their key, stable: insertion sort while few.
        if groups <= 32:
            for g in range(groups):
                rank[lo + g] = g
            for a in range(1, groups):
                x = rank[lo + a]
                key = order_key[firsts[lo + x]]
                b = a - 1
                while b >= 0 and order_key[firsts[lo + rank[lo + b]]] > key:
                    rank[lo + b + 1] = rank[lo + b]
                    b -= 1
                rank[lo + b + 1] = x
        else:
            keys = np.empty(groups, dtype=np.int64)
            for g in range(groups):
                keys[g] = order_key[firsts[lo + g]]
            order = np.argsort(keys, kind="mergesort")
            for g in range(groups):
                rank[lo + g] = order[g]
        # rank[lo + j] is the j-th group in order; invert it into position per group.
        for j in range(groups):
            out_first[base + j] = firsts[lo + rank[lo + j]]
        for j in range(groups):
            firsts[lo + rank[lo + j]] = j        # reuse: position of group g
        for i in range(lo, seg[s + 1]):
            ids[i] = base + firsts[lo + ids[i]]
            out_weight[ids[i]] += weights[i]
    return out_first, out_weight, ids


def group_rows_in_segments(matrix: np.ndarray, order_key: np.ndarray, weights: np.ndarray,
                           segments: np.ndarray
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct rows of ``matrix`` where equal rows can only occur within one segment
    (``segments``: boundaries, from 0 to the number of rows): each group's first row and
    its summed ``weights``, segment by segment, groups within a segment ordered by
    ``order_key`` of their first row (stable), and per row the position of its group.
    Segments are hashed apart, so each hash table stays small and segments run in
    parallel.

    >>> m = np.array([[1, 5], [1, 4], [1, 5], [2, 7], [2, 7]])
    >>> first, total, group = group_rows_in_segments(m, m[:, 1], np.ones(5),
    ...                                              np.array([0, 3, 5]))
    >>> first.tolist(), total.tolist(), group.tolist()
    ([1, 0, 3], [1.0, 2.0, 2.0], [1, 0, 1, 2, 2])
    """
    with KERNEL_LOCK:
        return _group_rows_in_segments(
            np.ascontiguousarray(matrix, dtype=np.int64),
            np.ascontiguousarray(order_key, dtype=np.int64),
            np.ascontiguousarray(weights, dtype=np.float64),
            np.ascontiguousarray(segments, dtype=np.int64))


@numba.njit(cache=True, nogil=True, parallel=True)
def _row_hashes(matrix: np.ndarray) -> np.ndarray:
    """:func:`_row_hash` of every row of ``matrix``, in parallel: an ``(n,)`` uint64
    array."""
    out = np.empty(len(matrix), dtype=np.uint64)
    for i in numba.prange(len(matrix)):
        out[i] = _row_hash(matrix, i)
    return out


@numba.njit(cache=True, nogil=True)
def _group_rows(matrix: np.ndarray, hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``matrix`` in one open-addressing table (:func:`group_rows`):
    at least twice as many slots as rows, probed linearly from each row's hash, rows
    compared whole (exact).

    Parameters
    ----------
    matrix : (n, w) int64
        The rows.
    hashes : (n,) uint64
        Their :func:`_row_hash` (:func:`_row_hashes`).

    Returns
    -------
    ids : (n,) int64
        Per row, its group (distinct rows numbered by first appearance).
    first : (g,) int64
        Each group's first row.
    """
    n = len(matrix)
    size = 1
    while size < 2 * n:
        size *= 2
    mask = size - 1
    slots = np.full(size, -1, dtype=np.int64)      # group id in each slot
    ids = np.empty(n, dtype=np.int64)
    first = np.empty(n, dtype=np.int64)
    groups = 0
    for i in range(n):
        s = np.int64(hashes[i] & np.uint64(mask))
        while True:
            g = slots[s]
            if g < 0:
                slots[s] = groups
                first[groups] = i
                ids[i] = groups
                groups += 1
                break
            if rows_equal(matrix, first[g], i):
                ids[i] = g
                break
            s = (s + 1) & mask
    return ids, first[:groups].copy()


@numba.njit(cache=True, nogil=True)
def _order_by_group(ids: np.ndarray, groups: int) -> np.ndarray:
    """The counting sort of :func:`order_by_group`.

    Parameters
    ----------
    ids : (n,) int64
        Per row, its group, from 0 to ``groups - 1``.
    groups : int
        The number of groups.

    Returns
    -------
    (n,) int64
        The rows of group 0, then of group 1, and so on, each group's in row order.
    """
    counts = np.zeros(groups + 1, dtype=np.int64)
    for g in ids:
        counts[g + 1] += 1
    for g in range(groups):
        counts[g + 1] += counts[g]
    order = np.empty(len(ids), dtype=np.int64)
    for i in range(len(ids)):
        g = ids[i]
        order[counts[g]] = i
        counts[g] += 1
    return order


def group_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row its group id (distinct rows numbered by first appearance), and each
    group's first row."""
    matrix = np.ascontiguousarray(matrix, dtype=np.int64)
    if matrix.ndim != 2 or len(matrix) == 0:
        return np.zeros(len(matrix), np.int64), np.zeros(0, np.int64)
    with KERNEL_LOCK:
        return _group_rows(matrix, _row_hashes(matrix))


def order_by_group(ids: np.ndarray, groups: int) -> np.ndarray:
    """A stable order of the rows that makes each group contiguous (groups in id order)."""
    return _order_by_group(np.ascontiguousarray(ids, dtype=np.int64), int(groups))
