"""Building the OI-trees of one dependency group (Zhou et al. sections 4.1.1 and 4.1.2).

An order instance (OI) assigns every event of a group a distinct instant of its interval
(and, under Condition 2, keeps every pair feasible). The *single-tree* index is the prefix
tree of all OIs: each root-to-leaf path lists the events in time order. The *multi-tree*
index compresses it: whenever the events left to place split into isolated subsequences
(:mod:`uncertain_cep.index.isolation`), each subsequence gets its own OI-tree and the node is
followed
by a chain of *virtual nodes*, one per child tree. The OIs of the group are then the
paths of the top tree with every virtual node replaced by any OI of its child tree.

Every node kept has at least one complete OI below it (no dead ends); nodes of the same
state are computed once and shared while building, then instantiated as a proper tree by
:func:`uncertain_cep.index.forest.build_forest`.

>>> plan = plan_group([1, 2, 2, 3, 4, 5, 6], [3, 3, 3, 7, 6, 6, 7])
>>> plan.count, len(plan.root.children)
(10, 1)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from uncertain_cep.errors import IndexBuildError
from uncertain_cep.index.isolation import Infeasible, State, propagate, split_isolated
from uncertain_cep.model.feasibility import GroupPairCheck

__all__ = ["GroupInfeasible", "PlanNode", "PlanTree", "plan_group"]


class GroupInfeasible(Exception):
    """The group has no order instance; ``events`` (positions in the group) cannot all fit."""

    def __init__(self, events: list[int], window: tuple[int, int] | None = None) -> None:
        super().__init__(events, window)
        self.events = events
        self.window = window


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
    count: int = 1
    size: int = 1


@dataclass(eq=False)
class PlanTree:
    """One OI-tree: a root (no event) and the time interval of its events."""

    root: PlanNode
    ti: tuple[int, int]

    @property
    def count(self) -> int:
        return self.root.count


def plan_group(t_lo: Sequence[int], t_hi: Sequence[int], pair_check: GroupPairCheck | None = None,
               multi_tree: bool = True, node_budget: int | None = None) -> PlanTree:
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
        Largest number of nodes allowed; :class:`IndexBuildError` beyond it.

    Raises
    ------
    GroupInfeasible
        When the group has no order instance.
    """
    state: State = {e: tuple(range(int(a), int(b) + 1)) for e, (a, b) in enumerate(zip(t_lo, t_hi))}
    return _Planner(pair_check, multi_tree, node_budget).top(state)


class _Planner:
    def __init__(self, pair_check: GroupPairCheck | None, multi_tree: bool,
                 node_budget: int | None) -> None:
        self.pair_check = pair_check
        self.multi = multi_tree
        self.budget = node_budget
        # Same remaining state => same subtree; memoised by state.
        self._children: dict[tuple[tuple[int, tuple[int, ...]], ...], list[PlanNode]] = {}
        self._trees: dict[tuple[tuple[int, tuple[int, ...]], ...], PlanTree | None] = {}

    def top(self, state: State) -> PlanTree:
        if self.multi:
            try:
                state = propagate(state)
            except Infeasible as e:
                raise GroupInfeasible(e.events, e.window) from None
            parts = split_isolated(state, self.pair_check)
            if len(parts) > 1:
                trees = [self.tree(p) for p in parts]
                for p, t in zip(parts, trees):
                    if t is None:
                        raise GroupInfeasible(sorted(p))
                root = PlanNode()
                _attach_chain(root, [t for t in trees if t is not None])
                self._check_budget(root)
                return PlanTree(root, _span(state))
        tree = self.tree(state, split=False)
        if tree is None:
            raise GroupInfeasible(sorted(state))
        return tree

    def tree(self, state: State, split: bool = True) -> PlanTree | None:
        """The OI-tree of a state (an isolated subsequence), or None if it has no OI."""
        key = _key(state)
        if key in self._trees:
            return self._trees[key]
        root = PlanNode()
        parts = split_isolated(state, self.pair_check) if split and self.multi else [state]
        if len(parts) > 1:
            trees = [self.tree(p) for p in parts]
            result = None
            if all(t is not None for t in trees):
                _attach_chain(root, [t for t in trees if t is not None])
                result = PlanTree(root, _span(state))
        else:
            root.children = self.expand(state)
            _total(root)
            result = PlanTree(root, _span(state)) if root.children else None
        if result is not None:
            self._check_budget(result.root)
        self._trees[key] = result
        return result

    def expand(self, state: State) -> list[PlanNode]:
        """Children of a node whose remaining events are ``state``: every feasible choice of
        the next event and its instant, each followed by what remains."""
        key = _key(state)
        cached = self._children.get(key)
        if cached is not None:
            return cached
        children = []
        latest = {e: dom[-1] for e, dom in state.items()}
        for e in sorted(state):
            others_end = min((latest[x] for x in state if x != e), default=None)
            for t in state[e]:
                if others_end is not None and others_end <= t:
                    break  # some other event could no longer come after e
                child = self.place(state, e, t)
                if child is not None:
                    children.append(child)
        children.sort(key=lambda c: (c.instant, c.event))
        self._children[key] = children
        return children

    def place(self, state: State, e: int, t: int) -> PlanNode | None:
        """The node for event ``e`` at instant ``t``, or None if no OI continues from it."""
        rest: State = {}
        check = self.pair_check
        for x, dom in state.items():
            if x == e:
                continue
            if check is None:
                kept = tuple(u for u in dom if u > t)
            else:
                kept = tuple(u for u in dom if u > t and check.allows(e, x, t, u))
            if not kept:
                return None
            rest[x] = kept
        node = PlanNode(event=e, instant=t)
        if not rest:
            return node
        if not self.multi:
            node.children = self.expand(rest)
            _total(node)
            return node if node.children else None
        try:
            rest = propagate(rest)
        except Infeasible:
            return None
        parts = split_isolated(rest, check)
        if len(parts) > 1:
            trees = [self.tree(p) for p in parts]
            if any(tr is None for tr in trees):
                return None
            _attach_chain(node, [tr for tr in trees if tr is not None])
            return node
        node.children = self.expand(rest)
        _total(node)
        return node if node.children else None

    def _check_budget(self, root: PlanNode) -> None:
        if self.budget is not None and root.size > self.budget:
            raise IndexBuildError(f"the OI-tree needs more than {self.budget} nodes")


def _attach_chain(node: PlanNode, trees: list[PlanTree]) -> None:
    """Hang a chain of virtual nodes, one per child tree, below ``node``."""
    below: PlanNode | None = None
    for tree in reversed(trees):
        v = PlanNode(child_tree=tree)
        v.children = [below] if below is not None else []
        _total(v)
        below = v
    node.children = [below] if below is not None else []
    _total(node)


def _total(node: PlanNode) -> None:
    below = sum(c.count for c in node.children) if node.children else 1
    inner = node.child_tree.count if node.child_tree is not None else 1
    node.count = below * inner
    node.size = 1 + sum(c.size for c in node.children)
    if node.child_tree is not None:
        node.size += node.child_tree.root.size


def _span(state: State) -> tuple[int, int]:
    return min(d[0] for d in state.values()), max(d[-1] for d in state.values())


def _key(state: State) -> tuple[tuple[int, tuple[int, ...]], ...]:
    return tuple(sorted(state.items()))
