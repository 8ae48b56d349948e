"""Probabilities of chains of OI-tree nodes within one group.

A *chain* is a list of nodes of one group, each descending from the previous one once
virtual nodes are expanded
(:meth:`~uncertain_cep.index.forests.forest.GroupForest.precedes`): the nodes an order
instance must pass through. Its probability is the fraction of the group's OIs that
pass through all of them.

Why it factorises: a virtual node's child tree is independent of the rest of its parent
tree, and inside one tree the path from the root to a node is unique. So the probability
is the product, over every tree the chain touches, of ``poi_local`` of the deepest node it
requires there. Extending a chain ending at ``a`` by a node ``b`` below it multiplies by
``poi(b)`` divided by the ``poi_local`` of ``a``'s nodes in the trees both share
(:func:`extension_factor`).

With negation the OIs are weighted: an event ``x`` standing in a negation gap contributes
``1 - Pr(C | x)``. :func:`weighted_chain_probability` sums the weights of the OIs through a
chain by a dynamic programme that visits only the weighted nodes, the chain, and the nodes
above them.

>>> from uncertain_cep.index.forests.oi_tree import plan_group
>>> from uncertain_cep.index.forests.forest_builder import build_forest
>>> f = build_forest(plan_group([1, 2, 2, 3, 4, 5, 6], [3, 3, 3, 7, 6, 6, 7]))
>>> at = lambda e, t: [n for n in range(f.n_nodes) if f.event[n] == e and f.instant[n] == t][0]
>>> round(chain_probability(f, [at(2, 2)]), 12)
0.5
>>> round(chain_probability(f, [at(2, 2), at(3, 4)]), 12)
0.2
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import pairwise, product

from uncertain_cep.index.forests.codes import CodeScheme, in_ranges
from uncertain_cep.index.forests.forest import VIRTUAL, GroupForest

__all__ = ["Weights", "chain_probability", "extension_factor", "order_instance_fraction",
           "weighted_chain_probability"]

# Per event position in the group: (first instant, last instant, factor) of each weight.
Weights = Mapping[int, Sequence[tuple[int, int, float]]]


def extension_factor(forest: GroupForest, last: int | None, node: int) -> float:
    """P(chain + node) / P(chain) for a chain ending at ``last`` (None: empty chain),
    ``node`` descending from ``last``."""
    if last is None:
        return float(forest.poi[node])
    node_trees = {int(forest.tree[x]) for x in forest.context(node)}
    shared = 1.0
    for x in forest.context(last):
        if int(forest.tree[x]) in node_trees:
            shared *= float(forest.poi_local[x])
    return float(forest.poi[node]) / shared


def chain_probability(forest: GroupForest, chain: Sequence[int]) -> float:
    """Fraction of the group's OIs passing through every node of a chain."""
    p = 1.0
    last = None
    for n in chain:
        p *= extension_factor(forest, last, n)
        last = n
    return p


def order_instance_fraction(forest: GroupForest, scheme: CodeScheme,
                            options: Sequence[Sequence[int]]) -> float:
    """Fraction of the group's OIs that pass through one node of each list of ``options``,
    the lists in time order (each list: the nodes placing one event at one instant).

    The chains that pick one node per list are disjoint sets of OIs, so the fraction is
    the sum of :func:`chain_probability` over those whose nodes descend from one another
    (tested on codes, Zhou et al. 4.2).
    """
    total = 0.0
    for chain in product(*options):
        if all(in_ranges(scheme.code(forest, b), scheme.descendant_code_ranges(forest, a))
               for a, b in pairwise(chain)):
            total += chain_probability(forest, chain)
    return total


def weighted_chain_probability(forest: GroupForest, chain: Sequence[int],
                               weights: Weights) -> float:
    """Sum over the group's OIs through ``chain`` of P(OI) times the product of the weights
    of the (event, instant) pairs the OI uses. Events of the chain must carry no weight.

    Only the *relevant* nodes are visited: the weighted nodes, the chain's nodes, and
    everything above them (parents, and for a tree's root the virtual node standing for
    the tree). Any other subtree's value is exactly 1 (its children's conditional
    probabilities sum to 1), so a node's value is ``own * sum over children c of
    cond(c) * value(c)`` with 1 for irrelevant children, or, where the chain continues
    below it, ``own * cond(c) * value(c)`` for the child ``c`` it continues through.
    """
    f = forest
    weighted: dict[int, float] = {}
    for e, ws in weights.items():
        for n in f.nodes_of_event(e):
            t = int(f.instant[n])
            w = 1.0
            for a, b, factor in ws:
                if a <= t <= b:
                    w *= factor
            if w != 1.0:
                weighted[n] = w
    required: set[int] = set()
    for n in chain:
        required.update(_up_closure(f, int(n), required))
    relevant = set(required)
    for n in weighted:
        relevant.update(_up_closure(f, n, relevant))
    depths = f.global_depth
    value: dict[int, float] = {}
    for x in sorted(relevant, key=lambda n: -depths[n]):
        if f.kind[x] == VIRTUAL:
            root = int(f.tree_root[int(f.child_tree[x])])
            own = value.get(root, 1.0)
        else:
            own = weighted.get(x, 1.0)
        kids = f.children(x)
        below = 0.0 if len(kids) else 1.0
        for c in kids:
            c = int(c)
            if c in required:
                below = float(f.cond[c]) * value[c]
                break
            # Summed in full rather than as 1 + sum(cond * (value - 1)): a weight of 0 on
            # every branch must give exactly 0, not a rounding residue.
            below += float(f.cond[c]) * value.get(c, 1.0)
        value[x] = own * below
    return value.get(int(f.tree_root[0]), 1.0)


def _up(f: GroupForest, n: int) -> int:
    """The node above ``n`` once virtual nodes are expanded (-1 at the top root)."""
    p = int(f.parent[n])
    return p if p >= 0 else int(f.tree_virtual[int(f.tree[n])])


def _up_closure(f: GroupForest, n: int, stop: set[int]) -> list[int]:
    out = []
    while n >= 0 and n not in stop:
        out.append(n)
        n = _up(f, n)
    return out
