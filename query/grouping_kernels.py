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

__all__ = ["group_rows", "order_by_group"]


@numba.njit(cache=True, nogil=True)
def _group_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n, k = matrix.shape
    size = 1
    while size < 2 * n:
        size *= 2
    mask = size - 1
    slots = np.full(size, -1, dtype=np.int64)      # group id in each slot
    ids = np.empty(n, dtype=np.int64)
    first = np.empty(n, dtype=np.int64)
    groups = 0
    for i in range(n):
        h = np.uint64(0x9E3779B97F4A7C15)
        for c in range(k):
            h ^= np.uint64(matrix[i, c]) + np.uint64(0x9E3779B97F4A7C15) \
                + (h << np.uint64(6)) + (h >> np.uint64(2))
            h *= np.uint64(0xBF58476D1CE4E5B9)
            h ^= h >> np.uint64(31)
        s = np.int64(h & np.uint64(mask))
        while True:
            g = slots[s]
            if g < 0:
                slots[s] = groups
                first[groups] = i
                ids[i] = groups
                groups += 1
                break
            r = first[g]
            same = True
            for c in range(k):
                if matrix[r, c] != matrix[i, c]:
                    same = False
                    break
            if same:
                ids[i] = g
                break
            s = (s + 1) & mask
    return ids, first[:groups].copy()


@numba.njit(cache=True, nogil=True)
def _order_by_group(ids: np.ndarray, groups: int) -> np.ndarray:
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
    return _group_rows(matrix)


def order_by_group(ids: np.ndarray, groups: int) -> np.ndarray:
    """A stable order of the rows that makes each group contiguous (groups in id order)."""
    return _order_by_group(np.ascontiguousarray(ids, dtype=np.int64), int(groups))
