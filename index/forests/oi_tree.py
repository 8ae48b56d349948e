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
:func:`uncertain_cep.index.forests.forest.build_forest`.

Before anything is built, :func:`count_nodes` predicts the number of nodes that forest
will have, exactly, by walking the same memoised states without making a node, and stops
as soon as the count passes the node budget: a group too large to index fails in about a
second with its size, instead of after minutes and gigabytes.

>>> plan = plan_group([1, 2, 2, 3, 4, 5, 6], [3, 3, 3, 7, 6, 6, 7])
>>> plan.count, len(plan.root.children), plan.root.size
(10, 1, 31)
>>> count_nodes([1, 2, 2, 3, 4, 5, 6], [3, 3, 3, 7, 6, 6, 7])
31
>>> try:
...     count_nodes([0, 0, 0], [1000, 1000, 1000], node_budget=2_000_000)
... except NodeBudgetExceeded as e:
...     print(e)
its OI-trees need more than 2,000,000 nodes (at least 2,000,996)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from uncertain_cep.errors import IndexBuildError
from uncertain_cep.index.forests.domains import (
    Domain,
    from_instants,
    instants,
    interval,
    last,
    later_than,
    n_instants,
)
from uncertain_cep.index.forests.isolation import Infeasible, State, propagate, split_isolated
from uncertain_cep.model.feasibility import GroupPairCheck

__all__ = ["GroupInfeasible", "NodeBudgetExceeded", "PlanNode", "PlanTree", "count_nodes",
           "plan_group", "plan_parts"]


class GroupInfeasible(Exception):
    """The group has no order instance; ``events`` (positions in the group) cannot all fit."""

    def __init__(self, events: list[int], window: tuple[int, int] | None = None) -> None:
        super().__init__(events, window)
        self.events = events
        self.window = window


class NodeBudgetExceeded(IndexBuildError):
    """The group's OI-trees need more than ``budget`` nodes; ``at_least`` of them were
    counted before :func:`count_nodes` stopped (a lower bound, not the full size)."""

    def __init__(self, budget: int, at_least: int) -> None:
        super().__init__(f"its OI-trees need more than {budget:,} nodes (at least {at_least:,})")
        self.budget = budget
        self.at_least = at_least


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
        Largest number of nodes allowed, checked by :func:`count_nodes` before anything is
        built.

    Raises
    ------
    GroupInfeasible
        When the group has no order instance.
    NodeBudgetExceeded
        When the group needs more than ``node_budget`` nodes (an :class:`IndexBuildError`).
    """
    if node_budget is not None:
        count_nodes(t_lo, t_hi, pair_check, multi_tree, node_budget)
    return _Planner(pair_check, multi_tree).top(_initial_state(t_lo, t_hi))


def plan_parts(t_lo: Sequence[int], t_hi: Sequence[int]) -> list[PlanTree]:
    """The OI-trees of a group's isolated subsequences, in time order, as the multi-tree
    planner hangs them below the group's top tree (without Condition 2).

    >>> [t.ti for t in plan_parts([1, 2, 5], [2, 3, 6])]
    [(1, 3), (5, 6)]

    Raises
    ------
    GroupInfeasible
        When the events have no order instance.
    """
    planner = _Planner(None, True)
    trees = []
    for part in planner.top_parts(_initial_state(t_lo, t_hi)):
        tree = planner.tree(part)
        if tree is None:
            raise GroupInfeasible(sorted(part))
        trees.append(tree)
    return trees


def count_nodes(t_lo: Sequence[int], t_hi: Sequence[int], pair_check: GroupPairCheck | None = None,
                multi_tree: bool = True, node_budget: int | None = None) -> int:
    """The number of nodes of the group's forest, without building it (4.1).

    Walks the states :func:`plan_group` would expand, memoised the same way, and adds up
    sizes: a node is one plus the sizes of its children, a virtual node one plus its child
    tree. Each tree keeps a running count of the nodes found so far, which can only grow
    towards its final size, so the walk stops as soon as one passes ``node_budget``: the
    work is bounded by the budget, not by the (possibly astronomical) size of the group.
    Nothing per instant is allocated (domains are intervals), and a state whose one
    remaining event has ``k`` instants left counts ``k`` leaves at once.

    Parameters
    ----------
    t_lo, t_hi, pair_check, multi_tree
        As for :func:`plan_group`.
    node_budget
        Largest number of nodes allowed, or ``None`` to count everything.

    Returns
    -------
    int
        Exactly ``build_forest(plan_group(...)).n_nodes``.

    Raises
    ------
    GroupInfeasible
        When the group has no order instance.
    NodeBudgetExceeded
        As soon as one OI-tree of the group, or the group, is known to need more than
        ``node_budget`` nodes; :func:`plan_group` with that budget fails too.
    """
    return _NodeCounter(pair_check, multi_tree, node_budget).top(_initial_state(t_lo, t_hi))


def _initial_state(t_lo: Sequence[int], t_hi: Sequence[int]) -> State:
    return {e: interval(int(a), int(b)) for e, (a, b) in enumerate(zip(t_lo, t_hi))}


class _Expansion:
    """What the planner and the node counter share: the choices below a state, and what
    each choice leaves to place. Keeping one copy keeps the prediction exact."""

    def __init__(self, pair_check: GroupPairCheck | None, multi_tree: bool) -> None:
        self.pair_check = pair_check
        self.multi = multi_tree
        self._gaps: dict[tuple[int, int], int | None] = {}

    def choices(self, state: State) -> Iterator[tuple[int, int]]:
        """Every (event, instant) that may come next: an event goes no later than the
        instant before the latest instant of every other event, or that event could no
        longer come after it."""
        ends = sorted((last(dom), e) for e, dom in state.items())
        for e in sorted(state):
            if len(ends) == 1:
                yield from ((e, t) for t in instants(state[e]))
                continue
            others_end = ends[1][0] if ends[0][1] == e else ends[0][0]
            for t in instants(state[e]):
                if t >= others_end:
                    break
                yield e, t

    def rest_after(self, state: State, e: int, t: int) -> State | None:
        """What remains once ``e`` takes ``t``: every other event strictly later (Condition
        1) and allowed with it (Condition 2); ``None`` if some event has no instant left."""
        rest: State = {}
        for x, dom in state.items():
            if x == e:
                continue
            kept = self._allowed_after(e, t, x, dom)
            if not kept:
                return None
            rest[x] = kept
        return rest

    def _allowed_after(self, e: int, t: int, x: int, dom: Domain) -> Domain:
        check = self.pair_check
        if check is None:
            return later_than(dom, t)
        if (e, x) not in self._gaps:
            self._gaps[(e, x)] = check.min_gap(e, x)
        gap = self._gaps[(e, x)]
        if gap is not None:
            # The predicate is monotone in the gap (GroupPairCheck.min_gap): one cut.
            return later_than(dom, max(t, t + gap - 1))
        return from_instants(u for u in instants(later_than(dom, t)) if check.allows(e, x, t, u))

    def parts_below(self, rest: State) -> list[State] | None:
        """The isolated subsequences of a non-empty rest (one part for the single tree),
        or ``None`` if Lemma 1 finds it infeasible."""
        if not self.multi:
            return [rest]
        try:
            rest = propagate(rest)
        except Infeasible:
            return None
        return split_isolated(rest, self.pair_check)

    def top_parts(self, state: State) -> list[State]:
        """The group's own isolated subsequences (the whole state for the single tree)."""
        if not self.multi:
            return [state]
        try:
            state = propagate(state)
        except Infeasible as e:
            raise GroupInfeasible(e.events, e.window) from None
        return split_isolated(state, self.pair_check)


class _Planner(_Expansion):
    def __init__(self, pair_check: GroupPairCheck | None, multi_tree: bool) -> None:
        super().__init__(pair_check, multi_tree)
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
        key = _key(state)
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
        key = _key(state)
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
        node = PlanNode(event=e, instant=t)
        if not rest:
            return node
        parts = self.parts_below(rest)
        if parts is None:
            return None
        if len(parts) > 1:
            trees = self._trees_of(parts)
            if trees is None:
                return None
            _attach_chain(node, trees)
            return node
        node.children = self.expand(parts[0])
        _total(node)
        return node if node.children else None


class _Tally:
    """The nodes of one OI-tree found so far, its root included.

    Only nodes known to stay are added (a node once something below it completes an OI,
    a virtual chain once every child tree has one), so the tally never exceeds the tree's
    final size, and passing the budget proves the tree is too large.
    """

    __slots__ = ("budget", "nodes")

    def __init__(self, budget: int | None) -> None:
        self.budget = budget
        self.nodes = 1

    def add(self, n: int) -> None:
        self.nodes += n
        if self.budget is not None and self.nodes > self.budget:
            raise NodeBudgetExceeded(self.budget, self.nodes)


class _NodeCounter(_Expansion):
    """:class:`_Planner` that adds up sizes instead of making nodes (see
    :func:`count_nodes`); every method mirrors the planner's of the same name."""

    def __init__(self, pair_check: GroupPairCheck | None, multi_tree: bool,
                 budget: int | None) -> None:
        super().__init__(pair_check, multi_tree)
        self.budget = budget
        # Per state: the sizes of its children added up (0: none completes an OI) ...
        self._below: dict[tuple[tuple[int, Domain], ...], int] = {}
        # ... and the size of its OI-tree (None: no OI).
        self._trees: dict[tuple[tuple[int, Domain], ...], int | None] = {}

    def top(self, state: State) -> int:
        parts = self.top_parts(state)
        if len(parts) > 1:
            size = 1
            for p in parts:
                t = self.tree(p)
                if t is None:
                    raise GroupInfeasible(sorted(p))
                size += 1 + t
            self._check(size)
            return size
        tree = self.tree(parts[0], split=False)
        if tree is None:
            raise GroupInfeasible(sorted(state))
        return tree

    def tree(self, state: State, split: bool = True) -> int | None:
        key = _key(state)
        if key in self._trees:
            return self._trees[key]
        parts = split_isolated(state, self.pair_check) if split and self.multi else [state]
        size: int | None
        if len(parts) > 1:
            chain = self._chain(parts)
            size = None if chain is None else 1 + chain
            if size is not None:
                self._check(size)
        else:
            tally = _Tally(self.budget)
            size = tally.nodes if self.expand(state, tally) else None
        self._trees[key] = size
        return size

    def _chain(self, parts: list[State]) -> int | None:
        """Nodes of the chain of virtual nodes standing for the parts' trees (each one plus
        its tree), or None if a part has no OI. Added to a tally only when complete: a
        later part without an OI would drop the earlier ones."""
        total = 0
        for p in parts:
            t = self.tree(p)
            if t is None:
                return None
            total += 1 + t
        return total

    def expand(self, state: State, tally: _Tally) -> bool:
        """Add the sizes of the state's children to ``tally``; whether there is one."""
        if len(state) == 1:
            # One event left: one leaf per instant it may take.
            (dom,) = state.values()
            tally.add(n_instants(dom))
            return True
        key = _key(state)
        known = self._below.get(key)
        if known is None:
            start = tally.nodes
            for e, t in self.choices(state):
                self.place(state, e, t, tally)
            self._below[key] = tally.nodes - start
            return tally.nodes > start
        tally.add(known)
        return known > 0

    def place(self, state: State, e: int, t: int, tally: _Tally) -> None:
        """Add the size of the node for ``e`` at ``t`` to ``tally``, if an OI continues."""
        rest = self.rest_after(state, e, t)
        if rest is None:
            return
        if not rest:
            tally.add(1)
            return
        parts = self.parts_below(rest)
        if parts is None:
            return
        if len(parts) > 1:
            chain = self._chain(parts)
            if chain is not None:
                tally.add(1 + chain)
            return
        # Whatever expand adds stays: a child completing an OI keeps this node too.
        if self.expand(parts[0], tally):
            tally.add(1)

    def _check(self, size: int) -> None:
        if self.budget is not None and size > self.budget:
            raise NodeBudgetExceeded(self.budget, size)


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
    return min(d[0][0] for d in state.values()), max(d[-1][1] for d in state.values())


def _key(state: State) -> tuple[tuple[int, Domain], ...]:
    return tuple(sorted(state.items()))
