"""Building the OI-trees of one dependency group (Zhou et al. sections 4.1.1 and 4.1.2).

An order instance (OI) assigns every event of a group a distinct instant of its interval
(and, under Condition 2, keeps every pair feasible). The *single-tree* index is the prefix
tree of all OIs: each root-to-leaf path lists the events in time order. The *multi-tree*
index compresses it: whenever the events left to place split into isolated subsequences
(:mod:`uncertain_cep.index.forests.isolation`), each subsequence gets its own OI-tree and
the node is followed by a chain of *virtual nodes*, one per child tree. The OIs of the group
are then the paths of the top tree with every virtual node replaced by any OI of its child
tree.

Every node kept has at least one complete OI below it (no dead ends); nodes of the same
state are computed once and shared while building, then instantiated as a proper tree by
:func:`uncertain_cep.index.forests.forest.build_forest`. The choices below a state are
listed by :mod:`uncertain_cep.index.forests.expansion`; :func:`plan_group` first checks the
node budget (:func:`~uncertain_cep.index.forests.node_count.count_nodes`).

>>> plan = plan_group([1, 2, 2, 3, 4, 5, 6], [3, 3, 3, 7, 6, 6, 7])
>>> plan.count, len(plan.root.children), plan.root.size
(10, 1, 31)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from uncertain_cep.index.forests.domains import Domain
from uncertain_cep.index.forests.expansion import (
    GroupInfeasible,
    StateExpansion,
    initial_state,
    state_key,
)
from uncertain_cep.index.forests.isolation import State, split_isolated
from uncertain_cep.index.forests.node_count import count_nodes
from uncertain_cep.index.forests.weights import GroupWeights
from uncertain_cep.model.feasibility import GroupPairCheck

__all__ = ["PlanNode", "PlanTree", "plan_group", "plan_parts"]


@dataclass(eq=False)
class PlanNode:
    """A node of an OI-tree before ids and codes are assigned.

    ``event``/``instant`` are ``-1`` for a root or a virtual node; a virtual node carries the
    child tree it stands for. ``count`` is the number of OIs of the enclosing tree that
    continue from this node (child trees' OI counts multiplied in), ``size`` the number of
    nodes it expands to, virtual subtrees included.
    """

    event: int = -1
    instant: int = -1
    children: list[PlanNode] = field(default_factory=list)
    child_tree: PlanTree | None = None
    count: float = 1    # an int without instant weights
    size: int = 1


@dataclass(eq=False)
class PlanTree:
    """One OI-tree: a root (no event) and the time interval of its events."""

    root: PlanNode
    ti: tuple[int, int]

    @property
    def count(self) -> float:
        """The tree's number of OIs (an int), or their summed weights (A6)."""
        return self.root.count


def plan_group(t_lo: Sequence[int], t_hi: Sequence[int], pair_check: GroupPairCheck | None = None,
               multi_tree: bool = True, node_budget: int | None = None,
               weights: GroupWeights | None = None) -> PlanTree:
    """Plan the OI-tree(s) of one group from its events' instant intervals.

    Parameters
    ----------
    t_lo, t_hi
        Inclusive instant bounds of the group's events (positions ``0..n-1``).
    pair_check
        Condition 2 bound to this group, or ``None``.
    multi_tree
        ``True`` for the multi-tree index (4.1.2), ``False`` for the single tree (4.1.1).
    node_budget
        Largest number of nodes allowed, checked by :func:`count_nodes` before anything is
        built.
    weights
        The events' instant weights (SEMANTICS A6), or ``None`` for equal weights: counts
        are then weighted sums (floats), instants of weight zero left out
        (:mod:`uncertain_cep.index.forests.weights`).

    Raises
    ------
    GroupInfeasible
        When the group has no order instance.
    NodeBudgetExceeded
        When the group needs more than ``node_budget`` nodes (an
        :class:`~uncertain_cep.errors.IndexBuildError`, raised by
        :func:`~uncertain_cep.index.forests.node_count.count_nodes`).
    """
    if node_budget is not None:
        count_nodes(t_lo, t_hi, pair_check, multi_tree, node_budget, weights)
    return _Planner(pair_check, multi_tree, weights).top(initial_state(t_lo, t_hi, weights))


def plan_parts(t_lo: Sequence[int], t_hi: Sequence[int],
               weights: GroupWeights | None = None) -> list[PlanTree]:
    """The OI-trees of a group's isolated subsequences, in time order, as the multi-tree
    planner hangs them below the group's top tree (without Condition 2).

    >>> [t.ti for t in plan_parts([1, 2, 5], [2, 3, 6])]
    [(1, 3), (5, 6)]

    Raises
    ------
    GroupInfeasible
        When the events have no order instance.
    """
    planner = _Planner(None, True, weights)
    trees = []
    for part in planner.top_parts(initial_state(t_lo, t_hi, weights)):
        tree = planner.tree(part)
        if tree is None:
            raise GroupInfeasible(sorted(part))
        trees.append(tree)
    return trees


class _Planner(StateExpansion):
    def __init__(self, pair_check: GroupPairCheck | None, multi_tree: bool,
                 weights: GroupWeights | None = None) -> None:
        super().__init__(pair_check, multi_tree)
        self.weights = weights
        # Same remaining state => same subtree; memoised by state.
        self._children: dict[tuple[tuple[int, Domain], ...], list[PlanNode]] = {}
        self._trees: dict[tuple[tuple[int, Domain], ...], PlanTree | None] = {}

    def top(self, state: State) -> PlanTree:
        parts = self.top_parts(state)
        if len(parts) > 1:
            trees = []
            for p in parts:
                t = self.tree(p)
                if t is None:
                    raise GroupInfeasible(sorted(p))
                trees.append(t)
            root = PlanNode()
            _attach_chain(root, trees)
            return PlanTree(root, _span({e: d for p in parts for e, d in p.items()}))
        tree = self.tree(parts[0], split=False)
        if tree is None:
            raise GroupInfeasible(sorted(state))
        return tree

    def tree(self, state: State, split: bool = True) -> PlanTree | None:
        """The OI-tree of a state (an isolated subsequence), or None if it has no OI."""
        key = state_key(state)
        if key in self._trees:
            return self._trees[key]
        root = PlanNode()
        parts = split_isolated(state, self.pair_check) if split and self.multi else [state]
        result = None
        if len(parts) > 1:
            trees = self._trees_of(parts)
            if trees is not None:
                _attach_chain(root, trees)
                result = PlanTree(root, _span(state))
        else:
            root.children = self.expand(state)
            _total(root)
            result = PlanTree(root, _span(state)) if root.children else None
        self._trees[key] = result
        return result

    def _trees_of(self, parts: list[State]) -> list[PlanTree] | None:
        trees = []
        for p in parts:
            t = self.tree(p)
            if t is None:
                return None  # one part without an OI: nothing continues here
            trees.append(t)
        return trees

    def expand(self, state: State) -> list[PlanNode]:
        """Children of a node whose remaining events are ``state``: every feasible choice of
        the next event and its instant, each followed by what remains."""
        key = state_key(state)
        cached = self._children.get(key)
        if cached is not None:
            return cached
        children = []
        for e, t in self.choices(state):
            child = self.place(state, e, t)
            if child is not None:
                children.append(child)
        children.sort(key=lambda c: (c.instant, c.event))
        self._children[key] = children
        return children

    def place(self, state: State, e: int, t: int) -> PlanNode | None:
        """The node for event ``e`` at instant ``t``, or None if no OI continues from it."""
        rest = self.rest_after(state, e, t)
        if rest is None:
            return None
        # An OI's weight is the product of its instants' (A6): each node counts its own.
        weight = 1 if self.weights is None else self.weights.weight(e, t)
        node = PlanNode(event=e, instant=t, count=weight)
        if not rest:
            return node
        parts = self.parts_below(rest)
        if parts is None:
            return None
        if len(parts) > 1:
            trees = self._trees_of(parts)
            if trees is None:
                return None
            _attach_chain(node, trees, weight)
            return node
        node.children = self.expand(parts[0])
        _total(node, weight)
        return node if node.children else None


def _attach_chain(node: PlanNode, trees: list[PlanTree], weight: float = 1) -> None:
    """Hang a chain of virtual nodes, one per child tree, below ``node``."""
    below: PlanNode | None = None
    for tree in reversed(trees):
        v = PlanNode(child_tree=tree)
        v.children = [below] if below is not None else []
        _total(v)
        below = v
    node.children = [below] if below is not None else []
    _total(node, weight)


def _total(node: PlanNode, weight: float = 1) -> None:
    """``node``'s count and size from its children's; ``weight``: its own instant's (A6;
    the int 1 keeps unweighted counts exact integers)."""
    below = sum(c.count for c in node.children) if node.children else 1
    inner = node.child_tree.count if node.child_tree is not None else 1
    node.count = below * inner * weight if weight != 1 else below * inner
    node.size = 1 + sum(c.size for c in node.children)
    if node.child_tree is not None:
        node.size += node.child_tree.root.size


def _span(state: State) -> tuple[int, int]:
    return min(d[0][0] for d in state.values()), max(d[-1][1] for d in state.values())
