"""Counting a group's OI-tree nodes before building them: the node budget (Zhou et al. 4.1).

Before anything is built, :func:`count_nodes` predicts the number of nodes the group's
forest will have, exactly, by walking the same memoised states as the planner
(:mod:`uncertain_cep.index.forests.oi_tree`, through the expansion both share:
:mod:`uncertain_cep.index.forests.expansion`) without making a node, and stops as soon as
the count passes the node budget: a group too large to index fails in about a second with
its size (:class:`NodeBudgetExceeded`), instead of after minutes and gigabytes.

>>> count_nodes([1, 2, 2, 3, 4, 5, 6], [3, 3, 3, 7, 6, 6, 7])
31
>>> try:
...     count_nodes([0, 0, 0], [1000, 1000, 1000], node_budget=2_000_000)
... except NodeBudgetExceeded as e:
...     print(e)
its OI-trees need more than 2,000,000 nodes (at least 2,000,996)
"""

from __future__ import annotations

from collections.abc import Sequence

from uncertain_cep.errors import IndexBuildError
from uncertain_cep.index.forests.domains import Domain, n_instants
from uncertain_cep.index.forests.expansion import (
    GroupInfeasible,
    StateExpansion,
    initial_state,
    state_key,
)
from uncertain_cep.index.forests.isolation import State, split_isolated
from uncertain_cep.index.forests.weights import GroupWeights
from uncertain_cep.model.feasibility import GroupPairCheck

__all__ = ["NodeBudgetExceeded", "count_nodes"]


class NodeBudgetExceeded(IndexBuildError):
    """The group's OI-trees need more than ``budget`` nodes; ``at_least`` of them were
    counted before :func:`count_nodes` stopped (a lower bound, not the full size)."""

    def __init__(self, budget: int, at_least: int) -> None:
        super().__init__(f"its OI-trees need more than {budget:,} nodes (at least {at_least:,})")
        self.budget = budget
        self.at_least = at_least


def count_nodes(t_lo: Sequence[int], t_hi: Sequence[int], pair_check: GroupPairCheck | None = None,
                multi_tree: bool = True, node_budget: int | None = None,
                weights: GroupWeights | None = None) -> int:
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
    weights
        The events' instant weights: instants of weight zero have no node.

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
    return _NodeCounter(pair_check, multi_tree, node_budget).top(
        initial_state(t_lo, t_hi, weights))


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


class _NodeCounter(StateExpansion):
    """The planner (:mod:`uncertain_cep.index.forests.oi_tree`) adding up sizes instead of
    making nodes (see :func:`count_nodes`); every method mirrors the planner's of the same
    name."""

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
        key = state_key(state)
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
        key = state_key(state)
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

