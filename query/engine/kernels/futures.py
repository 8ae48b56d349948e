"""Nodes with alike futures: per node the first node of its class, which a tuple's
programme keeps in a class's key in place of an exact node once only what follows it
counts (:mod:`~uncertain_cep.query.engine.kernels.programme`; the index was built
without Condition 2, so every OI of a group is equally likely).
"""

from __future__ import annotations

import weakref

import numba
import numpy as np

from uncertain_cep.index.forests.forest import REAL
from uncertain_cep.index.node_table import NodeTable

__all__ = ["future_nodes"]


# Per node table, its nodes' classes (computed once per index, not once per query).
_FUTURES: weakref.WeakKeyDictionary[NodeTable, np.ndarray] = weakref.WeakKeyDictionary()


def future_nodes(table: NodeTable) -> np.ndarray:
    """Per node, the first node of its class: the nodes of its event at its instant in
    its tree with the same set of events above them there (the node itself in a tree
    that other trees hang below). Without Condition 2 every OI of a group is equally
    likely, so what follows a node depends only on the events still to come and its
    instant: the subtrees of a class are alike, node for node, with the same factors
    and the same weights in a gap (as :mod:`~uncertain_cep.query.engine.merge_keys` merges
    entries).

    Three events that may each take instants 0 to 2 in one group: the nodes placing the
    last of them at instant 2 after the other two (in either order) are one class.

    >>> import pandas as pd
    >>> import uncertain_cep as uc
    >>> idx = uc.build_index(pd.DataFrame({"event_id": [1, 2, 3], "group": 0,
    ...                                    "t_lo": 0, "t_hi": 2}))
    >>> table = idx.event_index.node_table
    >>> future = future_nodes(table)
    >>> [(int(v), int(future[v])) for v in np.flatnonzero(future != np.arange(len(future)))]
    [(12, 10), (14, 11), (15, 13)]
    >>> [(int(table.row[v]), int(table.instant[v])) for v in (12, 10)]
    [(2, 2), (2, 2)]
    """
    if table in _FUTURES:
        return _FUTURES[table]
    n = len(table.group)
    kind = np.asarray(table.kind)
    parent = np.asarray(table.parent, dtype=np.int64)
    row = np.asarray(table.row, dtype=np.int64)
    tree = np.asarray(table.tree, dtype=np.int64)
    above = _above_hashes(parent, kind, row, REAL)
    real = (kind == REAL) & ~table.nests_trees[tree]
    future = np.arange(n, dtype=np.int64)
    nodes = np.flatnonzero(real)
    order = nodes[np.lexsort((nodes, above[nodes], table.instant[nodes], row[nodes],
                              tree[nodes]))]
    if len(order) == 0:
        return future
    keys = np.stack([tree[order], row[order], table.instant[order],
                     above[order].view(np.int64)])
    start = np.concatenate([[True], (keys[:, 1:] != keys[:, :-1]).any(axis=0)])
    first = order[np.flatnonzero(start)][np.cumsum(start) - 1]
    # (Equal sums of hashes of sets that differ: the node keeps its own identity.)
    same = _same_events_above(order, first, parent, kind, row, REAL)
    future[order[same]] = first[same]
    _FUTURES[table] = future
    return future


@numba.njit(cache=True, nogil=True)
def _above_hashes(parent: np.ndarray, kind: np.ndarray, row: np.ndarray, real: int
                  ) -> np.ndarray:
    """Per node, the sum of a 64-bit hash of each event above it in its tree."""
    out = np.zeros(len(parent), dtype=np.uint64)
    for m in range(len(parent)):
        h = np.uint64(0)
        p = parent[m]
        while p >= 0 and kind[p] == real:
            z = np.uint64(row[p]) + np.uint64(0x9E3779B97F4A7C15)
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            h += z ^ (z >> np.uint64(31))
            p = parent[p]
        out[m] = h
    return out


@numba.njit(cache=True, nogil=True)
def _same_events_above(nodes: np.ndarray, firsts: np.ndarray, parent: np.ndarray,
                       kind: np.ndarray, row: np.ndarray, real: int) -> np.ndarray:
    """Whether each of ``nodes`` has the same set of events above it in its tree as
    the node in ``firsts`` beside it."""
    out = np.ones(len(nodes), dtype=np.bool_)
    # (Room for the deepest node's events, made once: no allocation per node.)
    deepest = 0
    for a in nodes:
        depth = 0
        p = parent[a]
        while p >= 0 and kind[p] == real:
            depth += 1
            p = parent[p]
        deepest = max(deepest, depth)
    rows_a = np.empty(deepest, dtype=np.int64)
    rows_b = np.empty(deepest, dtype=np.int64)
    for i in range(len(nodes)):
        a, b = nodes[i], firsts[i]
        if a == b:
            continue
        n_a, p = 0, parent[a]
        while p >= 0 and kind[p] == real:
            rows_a[n_a] = row[p]
            n_a += 1
            p = parent[p]
        n_b, p = 0, parent[b]
        while p >= 0 and kind[p] == real:
            rows_b[n_b] = row[p]
            n_b += 1
            p = parent[p]
        out[i] = n_a == n_b and (np.sort(rows_a[:n_a]) == np.sort(rows_b[:n_b])).all()
    return out
