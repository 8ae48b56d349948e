"""A memo of factors in compiled code: an open-addressing map from int64 key rows to
floats, as plain arrays, which the negation kernels
(:mod:`~uncertain_cep.query.engine.kernels.negation`, the folds of
:mod:`~uncertain_cep.query.engine.kernels.negation_folds`) keep per chunk of entries or
per run of tuples, since many share a group's chain, events and gaps.

>>> memo = new_memo(2, 4)
>>> memo_add(memo, np.array([3, 4]), 0.5)
>>> memo_lookup(memo[0], memo[1], memo[2], np.array([3, 4])), int(memo[3][0])
(0.5, 1)
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["MemoArrays", "grown_memo", "memo_add", "memo_lookup", "memo_store", "new_memo"]


# A memo: an open-addressing map from int64 key rows to factors (floats in [0, 1]), as
# plain arrays (slots, key rows, values, and [count, full]) looked up inline: a
# jitclass counts each read of its array attributes atomically (three counts a
# look-up; measured: two thirds of the negation programme's counts). It does not grow
# inside a look-up: a full map stores no more and says so (``full``), and its owner
# grows it between entries or tuples (:func:`grown_memo`).
MemoArrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


@numba.njit(cache=True, nogil=True)
def new_memo(width: int, capacity: int) -> MemoArrays:
    """An empty map for keys of ``width`` with room for ``capacity`` (a power of 2)."""
    return (np.full(2 * capacity, -1, dtype=np.int64),
            np.empty((capacity, width), dtype=np.int64), np.empty(capacity),
            np.zeros(2, dtype=np.int64))


@numba.njit(cache=True, nogil=True)
def grown_memo(memo: MemoArrays) -> MemoArrays:
    """The map with twice the room, holding the same keys."""
    _, keys, values, state = memo
    out = new_memo(keys.shape[1], 2 * len(values))
    for i in range(state[0]):
        memo_store(out[0], out[1], out[2], i, keys[i], values[i])
    out[3][0] = state[0]
    return out


@numba.njit(cache=True, nogil=True, inline="always")
def memo_lookup(slots: np.ndarray, keys: np.ndarray, values: np.ndarray, key: np.ndarray
                ) -> float:
    """The key's factor, or -1.0 where it has none. (Plain arrays, not a jitclass:
    docs/design.md, Reference counts in compiled loops.)"""
    mask = len(slots) - 1
    s = _home(key, mask)
    while True:
        i = slots[s]
        if i < 0:
            return -1.0
        if _same_row(keys, i, key):
            return values[i]
        s = (s + 1) & mask


@numba.njit(cache=True, nogil=True, inline="always")
def memo_store(slots: np.ndarray, keys: np.ndarray, values: np.ndarray, i: int,
               key: np.ndarray, value: float) -> None:
    """Store a key not present yet as row ``i``."""
    for c in range(len(key)):
        keys[i, c] = key[c]
    values[i] = value
    _place(slots, key, i)


@numba.njit(cache=True, nogil=True, inline="always")
def memo_add(memo: MemoArrays, key: np.ndarray, value: float) -> None:
    """Store a key not present yet, unless the map is full (then mark it so)."""
    slots, keys, values, state = memo
    if state[0] == len(values):
        state[1] = 1
        return
    memo_store(slots, keys, values, state[0], key, value)
    state[0] += 1


@numba.njit(cache=True, nogil=True, inline="always")
def _place(slots: np.ndarray, key: np.ndarray, i: int) -> None:
    """Write row index ``i`` into the first free slot (-1) of ``slots`` on ``key``'s
    probe sequence (linear, from :func:`_home`). A map holds at most half as many keys
    as slots (:func:`new_memo`), so there is always one."""
    mask = len(slots) - 1
    s = _home(key, mask)
    while slots[s] >= 0:
        s = (s + 1) & mask
    slots[s] = i


@numba.njit(cache=True, nogil=True, inline="always")
def _same_row(rows: np.ndarray, i: int, key: np.ndarray) -> bool:
    """Whether row ``i`` of ``rows`` holds ``key``."""
    for c in range(len(key)):  # noqa: SIM110 (numba compiles no generator in all())
        if rows[i, c] != key[c]:
            return False
    return True


@numba.njit(cache=True, nogil=True, inline="always")
def _home(key: np.ndarray, mask: int) -> np.int64:
    """``key``'s home slot: a 64-bit hash of its values (the hash of
    :mod:`~uncertain_cep.query.engine.kernels.grouping`'s rows) masked by ``mask``, the
    number of slots less one (a power of 2)."""
    h = np.uint64(0x9E3779B97F4A7C15)
    for c in range(len(key)):
        h ^= np.uint64(key[c]) + np.uint64(0x9E3779B97F4A7C15) + (h << np.uint64(6)) \
            + (h >> np.uint64(2))
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(31)
    return np.int64(h & np.uint64(mask))
