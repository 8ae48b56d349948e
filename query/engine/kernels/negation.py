"""Negation on batches: the weighted sum over order instances, compiled (SEMANTICS A4,
condition 4; the dynamic programme of
:func:`~uncertain_cep.query.evaluation.chains.weighted_chain_probability` on a
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

from typing import NamedTuple

import numba
import numpy as np

from uncertain_cep.index.forests.forest import VIRTUAL
from uncertain_cep.index.node_table import NodeArrays, NodeTable
from uncertain_cep.query.engine.kernels.chains import chain_extension
from uncertain_cep.query.engine.kernels.core import KERNEL_LOCK
from uncertain_cep.query.engine.kernels.grouping import group_rows
from uncertain_cep.query.engine.kernels.memo import grown_memo, memo_add, memo_lookup, new_memo

__all__ = ["NegatedArrays", "NegatedNodes", "SumScratch", "compile_negation_factors",
           "group_factor", "negation_factors", "scratch_arrays", "thread_scratch", "weighted_sums"]


class NegatedArrays(NamedTuple):
    """What the kernels read of the NOT items (:attr:`NegatedNodes.arrays`): per NOT
    item ``x``, its nodes ``nodes[offsets[x]:offsets[x + 1]]`` sorted by ``instants``,
    their ``weights`` (``1 - Pr(C | node)``), and its ``columns`` (the column before
    its gap)."""

    offsets: np.ndarray
    nodes: np.ndarray
    instants: np.ndarray
    weights: np.ndarray
    columns: np.ndarray


class SumScratch(NamedTuple):
    """One thread's scratch for :func:`weighted_sums`, one slot per node of the index
    (per group for ``weighted_group``); :func:`scratch_arrays` makes them for several
    threads at once, a row each."""

    weight: np.ndarray
    value: np.ndarray
    relevant: np.ndarray
    required: np.ndarray
    touched: np.ndarray
    weighted_group: np.ndarray


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

    @property
    def arrays(self) -> NegatedArrays:
        """The NOT items as the kernels take them."""
        return NegatedArrays(self.offsets, self.nodes, self.instants, self.weights,
                             self.columns)


@numba.njit(cache=True, nogil=True)
def _up(x: int, parent: np.ndarray, tree: np.ndarray, tree_virtual: np.ndarray) -> int:
    """The node above ``x`` once virtual nodes are expanded (-1 above a group's top)."""
    p = parent[x]
    if p >= 0:
        return p
    return tree_virtual[tree[x]]


@numba.njit(cache=True, nogil=True)
def weighted_sums(gap_a: np.ndarray, gap_b: np.ndarray, exclude: np.ndarray,
                  only_group: int, chain: np.ndarray, neg: NegatedArrays,
                  node_arrays: NodeArrays, scratch: SumScratch, out_groups: np.ndarray,
                  out_values: np.ndarray) -> int:
    """Per group holding weighted nodes (only ``only_group`` if >= 0): the weighted sum
    over its OIs (through ``chain``, nodes of ``only_group`` in time order). Nodes of the
    rows in ``exclude`` carry no weight. Writes ``out_groups``/``out_values``, returns
    how many. (SEMANTICS A4 condition 4; docs/design.md, The batch engine: Negation.)"""
    offsets, neg_nodes, neg_instants, neg_weights = (neg.offsets, neg.nodes, neg.instants,
                                                     neg.weights)
    group, row, kind, parent = (node_arrays.group, node_arrays.row, node_arrays.kind,
                                node_arrays.parent)
    cond, depth, child_root = node_arrays.cond, node_arrays.depth, node_arrays.child_root
    child_start, child_list = node_arrays.child_start, node_arrays.child_list
    tree, tree_virtual = node_arrays.tree, node_arrays.tree_virtual
    group_root = node_arrays.group_root
    weight, value, relevant, required, touched, weighted_group = scratch
    n_touched = 0
    n_groups = 0
    for j in range(len(gap_a)):
        a, b = gap_a[j], gap_b[j]
        if a > b:
            continue
        lo = offsets[j] + np.searchsorted(neg_instants[offsets[j]:offsets[j + 1]], a)
        hi = offsets[j] + np.searchsorted(neg_instants[offsets[j]:offsets[j + 1]], b,
                                          side="right")
        for p in range(lo, hi):
            m = neg_nodes[p]
            g = group[m]
            if only_group >= 0 and g != only_group:
                continue
            mine = False
            for x in exclude:
                if row[m] == x:
                    mine = True
                    break
            if mine:
                continue
            if not relevant[m]:
                relevant[m] = True
                weight[m] = 1.0
                touched[n_touched] = m
                n_touched += 1
            weight[m] *= neg_weights[p]
            if not weighted_group[g]:
                weighted_group[g] = True
                out_groups[n_groups] = g
                n_groups += 1
    if n_groups > 0:
        # Everything above the weighted nodes is relevant; the chain and everything above
        # it is required.
        for i in range(n_touched):
            x = _up(touched[i], parent, tree, tree_virtual)
            while x >= 0 and not relevant[x]:
                relevant[x] = True
                weight[x] = 1.0
                touched[n_touched] = x
                n_touched += 1
                x = _up(x, parent, tree, tree_virtual)
        for m in chain:
            x = m
            while x >= 0 and not required[x]:
                required[x] = True
                if not relevant[x]:
                    relevant[x] = True
                    weight[x] = 1.0
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
        for gi in range(n_groups):
            out_values[gi] = value[group_root[out_groups[gi]]]
    for i in range(n_touched):
        x = touched[i]
        relevant[x] = False
        required[x] = False
        value[x] = 0.0
    for gi in range(n_groups):
        weighted_group[out_groups[gi]] = False
    return n_groups


@numba.njit(cache=True, nogil=True)
def _free_sums(gaps: np.ndarray, neg: NegatedArrays, node_arrays: NodeArrays,
               scratch: SumScratch
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Once per distinct set of gaps: every group's weighted sum without a chain (what a
    group outside the tuple contributes), sorted by group (``free_groups[start[u]:
    start[u + 1]]`` and their values), with their product and how many are 0.
    (docs/design.md, The batch engine: Negation.)"""
    n_all_groups = len(node_arrays.group_root)
    found_groups = np.empty(n_all_groups, dtype=np.int64)
    found_values = np.empty(n_all_groups)
    n_gaps, width = gaps.shape
    half = width // 2
    no_rows = np.empty(0, dtype=np.int64)
    no_chain = np.empty(0, dtype=np.int64)
    start = np.zeros(n_gaps + 1, dtype=np.int64)
    free_groups = np.empty(n_gaps * 4 + 16, dtype=np.int64)
    free_values = np.empty(n_gaps * 4 + 16)
    product = np.ones(n_gaps)
    zeros = np.zeros(n_gaps, dtype=np.int64)
    for u in range(n_gaps):
        m = weighted_sums(gaps[u, :half], gaps[u, half:], no_rows, -1, no_chain, neg,
                          node_arrays, scratch, found_groups, found_values)
        while start[u] + m > len(free_groups):
            free_groups = np.concatenate((free_groups, np.empty(len(free_groups),
                                                                dtype=np.int64)))
            free_values = np.concatenate((free_values, np.empty(len(free_values))))
        order = np.argsort(found_groups[:m])
        for i in range(m):
            free_groups[start[u] + i] = found_groups[order[i]]
            v = found_values[order[i]]
            free_values[start[u] + i] = v
            if v == 0.0:
                zeros[u] += 1
            else:
                product[u] *= v
        start[u + 1] = start[u] + m
    return start, free_groups, free_values, product, zeros


@numba.njit(cache=True, nogil=True, parallel=True)
def _negation_factors(nodes: np.ndarray, events: np.ndarray, gap_id: np.ndarray,
                      gaps: np.ndarray, columns: np.ndarray, neg: NegatedArrays,
                      node_arrays: NodeArrays, scratches: SumScratch, free: tuple
                      ) -> np.ndarray:
    """The entries in one chunk per scratch (thread), in parallel, each chunk with its own
    memo (:func:`_chunk_factors`). (docs/design.md, The batch engine: Negation.)"""
    n = len(nodes)
    out = np.ones(n)
    weight, value, relevant, required, touched, weighted_group = scratches
    chunks = len(weight)
    for c in numba.prange(chunks):
        _chunk_factors(c * n // chunks, (c + 1) * n // chunks, nodes, events, gap_id, gaps,
                       columns, neg, node_arrays,
                       SumScratch(weight[c], value[c], relevant[c], required[c], touched[c],
                                  weighted_group[c]),
                       free, out)
    return out


@numba.njit(cache=True, nogil=True)
def _chunk_factors(r_lo: int, r_hi: int, nodes: np.ndarray, events: np.ndarray,
                   gap_id: np.ndarray, gaps: np.ndarray, columns: np.ndarray,
                   neg: NegatedArrays, node_arrays: NodeArrays, scratch: SumScratch,
                   free: tuple, out: np.ndarray) -> None:
    """The factors of entries ``r_lo`` to ``r_hi`` into ``out``, given every group's
    chain-free sum per set of gaps (``free``: :func:`_free_sums`' ``start``,
    ``free_groups``, ``free_values``, and their ``product`` and number of ``zeros``).

    A group's chain is its nodes nearest to a gap on either side (``columns``: the
    column before each gap): OIs are Markov in their nodes, so the weighted sum through
    the whole chain over its probability is that of these nodes alone (no weighted node
    lies between two others), and merged entries keep the earliest first and latest
    last node of their members (query/engine/merge_keys.py), which need not lie on one OI with
    the others. Every event of the tuple in the group is excluded from weighing.
    (SEMANTICS A4 condition 4; docs/design.md, The batch engine: Negation.)"""
    k = nodes.shape[1]
    group, group_root = node_arrays.group, node_arrays.group_root
    start, free_groups, free_values, product, zeros = free
    half = gaps.shape[1] // 2
    found_groups = np.empty(len(group_root), dtype=np.int64)
    found_values = np.empty(len(group_root))
    chain = np.empty(k, dtype=np.int64)
    mine = np.empty(k, dtype=np.int64)
    # A group's sum depends only on the gaps, the entry's chain in that group and its
    # excluded events: memoised on them, since many entries of a batch share all three.
    memo = new_memo(2 * k + 1, 64)
    key = np.empty(2 * k + 1, dtype=np.int64)
    for r in range(r_lo, r_hi):
        u = gap_id[r]
        rest, rest_zeros = product[u], zeros[u]
        factor = 1.0
        for c in range(k):
            g = group[nodes[r, c]]
            seen = False
            for d in range(c):
                if group[nodes[r, d]] == g:
                    seen = True
                    break
            if seen:
                continue
            # Binary search of g among the groups weighted by these gaps (written out:
            # a slice passed to np.searchsorted costs more than the search).
            i, hi = start[u], start[u + 1]
            top = hi
            while i < top:
                mid = (i + top) // 2
                if free_groups[mid] < g:
                    i = mid + 1
                else:
                    top = mid
            if i >= hi or free_groups[i] != g:
                continue   # no weighted node in this group
            # The group's own factor replaces its chain-free one.
            if free_values[i] == 0.0:
                rest_zeros -= 1
            else:
                rest /= free_values[i]
            size, n_mine = 0, 0
            for d in range(c, k):
                x = nodes[r, d]
                if group[x] != g:
                    continue
                mine[n_mine] = events[r, d]
                n_mine += 1
                if _next_to_gap(nodes, r, d, g, group, columns):
                    chain[size] = x
                    size += 1
            key[0] = u
            for d in range(k):
                key[d + 1] = chain[d] if d < size else -1
                key[k + d + 1] = mine[d] if d < n_mine else -1
            value = memo_lookup(memo[0], memo[1], memo[2], key)
            if value < 0.0:
                value = group_factor(
                    g, chain[:size], mine[:n_mine], gaps[u, :half], gaps[u, half:], neg,
                    node_arrays, scratch, found_groups, found_values)
                memo_add(memo, key, value)
            factor *= value
        out[r] = factor * (0.0 if rest_zeros > 0 else rest)
        if memo[3][1]:
            memo = grown_memo(memo)


@numba.njit(cache=True, nogil=True)
def group_factor(g: int, chain: np.ndarray, mine: np.ndarray, gap_a: np.ndarray,
                 gap_b: np.ndarray, neg: NegatedArrays, node_arrays: NodeArrays,
                 scratch: SumScratch, found_groups: np.ndarray, found_values: np.ndarray
                 ) -> float:
    """Group ``g``'s weighted sum over its OIs through ``chain`` (its nodes nearest to
    the gaps, in time order) over the chain's own probability; the nodes of the rows in
    ``mine`` carry no weight. 1 where no node of the group is weighed. (SEMANTICS A4
    condition 4; docs/design.md, The batch engine: Negation.)"""
    poi, tree, tree_parent = node_arrays.poi, node_arrays.tree, node_arrays.tree_parent
    tree_level, tree_virtual = node_arrays.tree_level, node_arrays.tree_virtual
    prob = 1.0
    last = -1
    for d in range(len(chain)):
        prob *= chain_extension(last, chain[d], poi, tree, tree_parent, tree_level, tree_virtual)
        last = chain[d]
    got = weighted_sums(gap_a, gap_b, mine, g, chain, neg, node_arrays, scratch,
                        found_groups, found_values)
    return found_values[0] / prob if got else 1.0


@numba.njit(cache=True, nogil=True)
def _next_to_gap(nodes: np.ndarray, r: int, d: int, g: int, group: np.ndarray,
                 columns: np.ndarray) -> bool:
    """Whether entry ``r``'s node in column ``d`` (of group ``g``) is its group's nearest
    before or after some gap (``columns``: the column before each)."""
    for j in columns:
        near = True
        lo, hi = (d + 1, j + 1) if d <= j else (j + 1, d)
        for e in range(lo, hi):
            if group[nodes[r, e]] == g:
                near = False
                break
        if near:
            return True
    return False


def negation_factors(table: NodeTable, events: np.ndarray, nodes: np.ndarray,
                     negated: NegatedNodes) -> np.ndarray:
    """P(no negated event in its gap | the entry's nodes) for every complete entry.

    Groups outside an entry's tuple contribute a weighted sum that depends only on the
    gaps: it is computed once per distinct set of gaps and shared by every entry with
    those gaps; only the tuple's own groups are summed per entry."""
    if len(events) == 0 or len(negated.columns) == 0:
        return np.ones(len(events))
    arguments = _factor_arguments(table, events, nodes, negated)
    with KERNEL_LOCK:
        return _negation_factors(*arguments)


def _factor_arguments(table: NodeTable, events: np.ndarray, nodes: np.ndarray,
                      negated: NegatedNodes) -> tuple:
    """The arguments of :func:`_negation_factors` for entries ``events``/``nodes`` (at
    least one), the free groups' sums among them (:func:`compile_negation_factors`
    compiles the kernel for their types without running it)."""
    events = np.ascontiguousarray(events, dtype=np.int64)
    nodes = np.ascontiguousarray(nodes, dtype=np.int64)
    instants = table.instant[nodes]
    gaps = np.concatenate([instants[:, negated.columns] + 1,
                           instants[:, negated.columns + 1] - 1], axis=1)
    gap_id, first = group_rows(gaps)
    neg, node_arrays = negated.arrays, table.arrays
    # One scratch per thread: entries are factored in that many chunks in parallel.
    scratches = scratch_arrays(table, max(1, min(numba.get_num_threads(), len(events))))
    gaps = np.ascontiguousarray(gaps[first])
    free = _free_sums(gaps, neg, node_arrays, thread_scratch(scratches, 0))
    return (nodes, events, gap_id, gaps, np.unique(negated.columns).astype(np.int64), neg,
            node_arrays, scratches, free)


def compile_negation_factors(table: NodeTable, events: np.ndarray, nodes: np.ndarray,
                             negated: NegatedNodes) -> None:
    """Compile (or load) :func:`_negation_factors` for the argument types of these
    entries without running it: what :mod:`uncertain_cep.kernel_build` does at install
    time, where one made-up entry stands for a query's."""
    arguments = _factor_arguments(table, events, nodes, negated)
    _negation_factors.compile(tuple(numba.typeof(a) for a in arguments))


def scratch_arrays(table: NodeTable, threads: int) -> SumScratch:
    """Per thread, the scratch of :func:`weighted_sums`: one slot per node of the whole
    index, allocated here rather than in compiled code: numpy's zeroed allocations are
    mapped lazily, and a call writes only the entries of the nodes it touches (a weight
    is set when its node becomes relevant), so memory and time follow the query, not
    the size of the index."""
    n_nodes, n_groups = len(table.group), len(table.group_start) - 1
    return SumScratch(np.zeros((threads, n_nodes)), np.zeros((threads, n_nodes)),
                      np.zeros((threads, n_nodes), dtype=np.bool_),
                      np.zeros((threads, n_nodes), dtype=np.bool_),
                      np.zeros((threads, n_nodes), dtype=np.int64),
                      np.zeros((threads, n_groups), dtype=np.bool_))


def thread_scratch(scratches: SumScratch, i: int) -> SumScratch:
    """Thread ``i``'s row of :func:`scratch_arrays`' scratch."""
    return SumScratch(*(a[i] for a in scratches))
