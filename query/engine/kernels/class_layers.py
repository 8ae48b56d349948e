"""A tuple's programme's layers of classes
(:mod:`~uncertain_cep.query.engine.kernels.programme`): a hash table of class keys over a
layer's rows, merging a layer's classes whose keys became equal, and the last layer's
cells (docs/design.md, Tuples instead of entries). Inlined into the programme.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from uncertain_cep.query.engine.kernels.instants import NO_TIME

__all__ = ["ClassLayers", "final_cells", "find_class", "merge_classes", "new_layers"]


class ClassLayers(NamedTuple):
    """Two layers of classes, room for ``cap`` each (layer ``cur`` read, ``1 - cur``
    built): each class's key (``keys[2, cap, width]``), its mass per instant of the
    column just matched (``vec``) and earliest true first instant (``fst``); a hash
    table of keys (``slot_row``, ``slot_stamp``: 4 * cap slots, a slot taken where its
    stamp is the layer's); and a class's scratch: its cumulative mass and earliest
    first instant per instant (``cum``, ``earliest``), a key being made (``key``) and
    per target of a column's nodes the class it reached (``target``)."""

    keys: np.ndarray
    vec: np.ndarray
    fst: np.ndarray
    slot_row: np.ndarray
    slot_stamp: np.ndarray
    cum: np.ndarray
    earliest: np.ndarray
    key: np.ndarray
    target: np.ndarray


@numba.njit(cache=True, nogil=True, inline="always")
def new_layers(cap: int, width: int, d_max: int, targets: int) -> ClassLayers:
    """Layers with room for ``cap`` classes of keys ``width`` wide and ``d_max``
    instants, for columns of at most ``targets`` targets."""
    return ClassLayers(np.empty((2, cap, width), dtype=np.int64), np.empty((2, cap, d_max)),
                       np.empty((2, cap, d_max), dtype=np.int64),
                       np.empty(4 * cap, dtype=np.int64), np.full(4 * cap, -1, dtype=np.int64),
                       np.empty(d_max), np.empty(d_max, dtype=np.int64),
                       np.empty(width, dtype=np.int64), np.empty(targets, dtype=np.int64))


# ---------------------------------------------------------------- small hash of rows

@numba.njit(cache=True, nogil=True, inline="always")
def _hash(row: np.ndarray) -> np.uint64:
    """A 64-bit hash of the values of ``row`` (a class's key), the hash of
    :mod:`~uncertain_cep.query.engine.kernels.grouping`'s rows: :func:`find_class` takes its
    low bits as the key's home slot."""
    h = np.uint64(0x9E3779B97F4A7C15)
    for v in row:
        h ^= np.uint64(v) + np.uint64(0x9E3779B97F4A7C15) + (h << np.uint64(6)) \
            + (h >> np.uint64(2))
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(31)
    return h


@numba.njit(cache=True, nogil=True, inline="always")
def find_class(keys: np.ndarray, layer: int, slot_row: np.ndarray, slot_stamp: np.ndarray,
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


@numba.njit(cache=True, nogil=True, inline="always")
def merge_classes(n: int, d: int, width: int, keys: np.ndarray, vec: np.ndarray,
                   fst: np.ndarray, cur: int, slot_row: np.ndarray, slot_stamp: np.ndarray,
                   stamp: int, key: np.ndarray) -> int:
    """Merge layer ``cur``'s ``n`` classes that have the same key (after a fold cleared
    part of it) into layer ``1 - cur``, their mass added cell by cell (a cell a factor
    of 0 emptied gives no first instant); how many classes remain."""
    n_new = 0
    nxt = 1 - cur
    for c in range(n):
        for col in range(width):
            key[col] = keys[cur, c, col]
        h = find_class(keys, nxt, slot_row, slot_stamp, stamp, key)
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
    return n_new


@numba.njit(cache=True, nogil=True, inline="always")
def final_cells(n: int, cur: int, vec: np.ndarray, fst: np.ndarray, first_m: int,
                 d: int, cols: np.ndarray, m: int, hi_out: np.ndarray
                 ) -> tuple[float, int, int, int]:
    """The last layer's summed mass, earliest first and latest last instant and number
    of cells holding mass; narrows each column's reachable instants by the ones after
    it."""
    for j in range(m - 2, -1, -1):
        hi_out[cols[j]] = min(hi_out[cols[j]], hi_out[cols[j + 1]] - (cols[j + 1] - cols[j]))
    cells = 0
    total = 0.0
    first, last = NO_TIME, -NO_TIME
    for c in range(n):
        for y in range(d):
            if vec[cur, c, y] > 0.0:
                cells += 1
                total += vec[cur, c, y]
                first = min(first, fst[cur, c, y])
                last = max(last, first_m + y)
    return total, first, last, cells
