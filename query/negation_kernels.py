"""Negation on batches: the weighted sum over order instances, compiled (SEMANTICS A4,
condition 4; the dynamic programme of
:func:`~uncertain_cep.query.chains.weighted_chain_probability` on a
:class:`~uncertain_cep.index.node_table.NodeTable`).

For a complete entry, every node of an event outside the tuple whose instant lies strictly
inside a negation's gap, and whose event may satisfy the negated symbol, weighs the OIs
through it by ``1 - Pr(C | x)`` (several NOT items in one gap multiply). Per group that
holds such a node, the weighted sum of its OIs through the entry's nodes in that group is
computed bottom-up over the *relevant* nodes only (the weighted ones, the chain, and what
lies above them; any other subtree sums to exactly 1), and divided by the chain's own
probability. Groups are independent, so the entry's factor is the product. One pass of
compiled code per entry; no Python runs per entry.
"""

from __future__ import annotations

import numba
import numpy as np

from uncertain_cep.index.forest import VIRTUAL
from uncertain_cep.index.node_table import NodeTable
from uncertain_cep.query.chain_kernels import _extension

__all__ = ["NegatedNodes", "negation_factors"]


class NegatedNodes:
    """Per NOT item: the column before its gap and the nodes that may weigh it (sorted
    by instant, with their weights ``1 - Pr(C | x)``), concatenated."""

    def __init__(self, columns: list[int], nodes: list[np.ndarray], instants: list[np.ndarray],
                 weights: list[np.ndarray]) -> None:
        self.columns = np.asarray(columns, dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum([len(n) for n in nodes])]).astype(
            np.int64)
        self.nodes = np.concatenate(nodes).astype(np.int64) if nodes else np.zeros(0, np.int64)
        self.instants = (np.concatenate(instants).astype(np.int64) if instants
                         else np.zeros(0, np.int64))
        self.weights = (np.concatenate(weights).astype(np.float64) if weights
                        else np.zeros(0))


@numba.njit(cache=True, nogil=True)
def _up(x: int, parent: np.ndarray, tree: np.ndarray, tree_virtual: np.ndarray) -> int:
    """The node above ``x`` once virtual nodes are expanded (-1 above a group's top)."""
    p = parent[x]
    if p >= 0:
        return p
    return tree_virtual[tree[x]]


@numba.njit(cache=True, nogil=True)
def _negation_factors(events: np.ndarray, nodes: np.ndarray, columns: np.ndarray,
                      offsets: np.ndarray, neg_nodes: np.ndarray, neg_instants: np.ndarray,
                      neg_weights: np.ndarray, group: np.ndarray, row: np.ndarray,
                      instant: np.ndarray, kind: np.ndarray, parent: np.ndarray,
                      cond: np.ndarray, depth: np.ndarray, child_start: np.ndarray,
                      child_list: np.ndarray, child_root: np.ndarray, tree: np.ndarray,
                      tree_virtual: np.ndarray, group_root: np.ndarray, poi: np.ndarray,
                      tree_parent: np.ndarray, tree_level: np.ndarray) -> np.ndarray:
    n, k = events.shape
    n_nodes = len(group)
    weight = np.ones(n_nodes)
    value = np.zeros(n_nodes)
    relevant = np.zeros(n_nodes, dtype=np.bool_)
    required = np.zeros(n_nodes, dtype=np.bool_)
    touched = np.empty(n_nodes, dtype=np.int64)
    weighted_group = np.zeros(len(group_root), dtype=np.bool_)
    groups = np.empty(len(group_root), dtype=np.int64)
    out = np.ones(n)
    for r in range(n):
        n_touched = 0
        n_groups = 0
        # The weighted nodes: per NOT item, nodes strictly inside its gap.
        for j in range(len(columns)):
            c = columns[j]
            a = instant[nodes[r, c]] + 1
            b = instant[nodes[r, c + 1]] - 1
            if a > b:
                continue
            lo = offsets[j] + np.searchsorted(neg_instants[offsets[j]:offsets[j + 1]], a)
            hi = offsets[j] + np.searchsorted(neg_instants[offsets[j]:offsets[j + 1]], b,
                                              side="right")
            for p in range(lo, hi):
                m = neg_nodes[p]
                x = row[m]
                mine = False
                for cc in range(k):
                    if events[r, cc] == x:
                        mine = True
                        break
                if mine:
                    continue
                if not relevant[m]:
                    relevant[m] = True
                    touched[n_touched] = m
                    n_touched += 1
                weight[m] *= neg_weights[p]
                g = group[m]
                if not weighted_group[g]:
                    weighted_group[g] = True
                    groups[n_groups] = g
                    n_groups += 1
        if n_groups == 0:
            continue
        # Everything above the weighted nodes is relevant...
        first_weighted = n_touched
        for i in range(first_weighted):
            x = _up(touched[i], parent, tree, tree_virtual)
            while x >= 0 and not relevant[x]:
                relevant[x] = True
                touched[n_touched] = x
                n_touched += 1
                x = _up(x, parent, tree, tree_virtual)
        # ... and the chain in those groups, with everything above it, is required.
        chain_prob = 1.0
        for gi in range(n_groups):
            g = groups[gi]
            last = -1
            for c in range(k):
                m = nodes[r, c]
                if group[m] != g:
                    continue
                chain_prob *= _extension(last, m, poi, tree, tree_parent, tree_level,
                                         tree_virtual)
                last = m
                x = m
                while x >= 0 and not required[x]:
                    required[x] = True
                    if not relevant[x]:
                        relevant[x] = True
                        touched[n_touched] = x
                        n_touched += 1
                    x = _up(x, parent, tree, tree_virtual)
        # Bottom-up over the relevant nodes, deepest first.
        order = np.argsort(depth[touched[:n_touched]])[::-1]
        for i in order:
            x = touched[i]
            if kind[x] == VIRTUAL:
                cr = child_root[x]
                own = value[cr] if cr >= 0 and relevant[cr] else 1.0
            else:
                own = weight[x]
            s, e = child_start[x], child_start[x + 1]
            below = 0.0 if e > s else 1.0
            for q in range(s, e):
                ch = child_list[q]
                if required[ch]:
                    below = cond[ch] * value[ch]
                    break
                # Summed in full: a weight of 0 on every branch must give exactly 0.
                below += cond[ch] * (value[ch] if relevant[ch] else 1.0)
            value[x] = own * below
        factor = 1.0
        for gi in range(n_groups):
            factor *= value[group_root[groups[gi]]]
        out[r] = factor / chain_prob
        for i in range(n_touched):
            x = touched[i]
            relevant[x] = False
            required[x] = False
            weight[x] = 1.0
            value[x] = 0.0
        for gi in range(n_groups):
            weighted_group[groups[gi]] = False
    return out


def negation_factors(table: NodeTable, events: np.ndarray, nodes: np.ndarray,
                     negated: NegatedNodes) -> np.ndarray:
    """P(no negated event in its gap | the entry's nodes) for every complete entry."""
    if len(events) == 0 or len(negated.columns) == 0:
        return np.ones(len(events))
    has_trees = table.tree_start[1:] > table.tree_start[:-1]
    group_root = np.where(has_trees, table.tree_root[np.minimum(
        table.tree_start[:-1], max(len(table.tree_root) - 1, 0))] if len(table.tree_root)
        else -1, -1)
    return _negation_factors(
        np.ascontiguousarray(events, dtype=np.int64), np.ascontiguousarray(nodes, np.int64),
        negated.columns, negated.offsets, negated.nodes, negated.instants, negated.weights,
        table.group, table.row, table.instant, table.kind, table.parent, table.cond,
        table.depth, table.child_start, table.child_list, table.child_root, table.tree,
        table.tree_virtual, group_root, table.poi, table.tree_parent, table.tree_level)
