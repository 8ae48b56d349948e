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

from uncertain_cep.index.node_table import NodeArrays, NodeTable

__all__ = ["CandidateOrder", "candidate_order", "chain_extension", "descends", "first_above",
           "insertion_factors"]


@numba.njit(cache=True, nogil=True)
def descends(a: int, b: int, code: np.ndarray, code_end: np.ndarray, tree: np.ndarray,
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
    if b >= 0 and not descends(b, m, code, code_end, tree, tree_virtual, tree_last_code):
        return -1.0
    if a >= 0 and not descends(m, a, code, code_end, tree, tree_virtual, tree_last_code):
        return -1.0
    f = chain_extension(b, m, poi, tree, tree_parent, tree_level, tree_virtual)
    if a >= 0:
        f *= (chain_extension(m, a, poi, tree, tree_parent, tree_level, tree_virtual)
              / chain_extension(b, a, poi, tree, tree_parent, tree_level, tree_virtual))
    return f


@numba.njit(cache=True, nogil=True)
def _insertion_factors(before: np.ndarray, node: np.ndarray, after: np.ndarray,
                       node_arrays: NodeArrays) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_insertion` for each triple ``(before[i], node[i], after[i])``
    (:func:`insertion_factors`; Zhou et al. 4.1-4.2).

    Parameters
    ----------
    before, node, after : (n,) int64
        Per triple, the node to insert and its group's nodes before and after it (-1:
        none on that side).
    node_arrays : NodeArrays
        The node table.

    Returns
    -------
    ok : (n,) bool
        Whether an OI of the group passes ``before``, ``node`` and ``after`` in order.
    factor : (n,) float64
        Where ``ok``, ``ext(before, node) * ext(node, after) / ext(before, after)``,
        what inserting ``node`` multiplies the chain's probability by; else 0.
    """
    poi, code, code_end = node_arrays.poi, node_arrays.code, node_arrays.code_end
    tree, tree_parent, tree_level = (node_arrays.tree, node_arrays.tree_parent,
                                     node_arrays.tree_level)
    tree_virtual, tree_last_code = node_arrays.tree_virtual, node_arrays.tree_last_code
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
        np.ascontiguousarray(after, dtype=np.int64), table.arrays)


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
