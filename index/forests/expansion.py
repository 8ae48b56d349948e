"""Expanding a group's states: what the OI-tree planner and the node counter share.

A *state* is what is left to place: the events of a group (positions in it) not yet in a
path, each with the instants it may still take
(:data:`~uncertain_cep.index.forests.isolation.State`).
:class:`StateExpansion` lists the choices below a state (the next event and its instant),
what each choice leaves (Conditions 1 and 2), and how what is left splits into isolated
subsequences (:mod:`uncertain_cep.index.forests.isolation`). The planner
(:mod:`uncertain_cep.index.forests.oi_tree`) makes nodes from it and the node counter
(:mod:`uncertain_cep.index.forests.node_count`) adds up sizes; keeping one copy of the
expansion keeps the count exact. A group without an order instance raises
:class:`GroupInfeasible`.

>>> state = initial_state([1, 2], [2, 3])
>>> expansion = StateExpansion(None, multi_tree=True)
>>> list(expansion.choices(state))
[(0, 1), (0, 2)]
>>> expansion.rest_after(state, 0, 2), expansion.rest_after(state, 1, 2)
({1: ((3, 3),)}, None)
>>> state_key(state)
((0, ((1, 2),)), (1, ((2, 3),)))
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from uncertain_cep.index.forests.domains import (
    Domain,
    from_instants,
    instants,
    interval,
    last,
    later_than,
)
from uncertain_cep.index.forests.isolation import Infeasible, State, propagate, split_isolated
from uncertain_cep.index.forests.weights import GroupWeights
from uncertain_cep.model.feasibility import GroupPairCheck

__all__ = ["GroupInfeasible", "StateExpansion", "initial_state", "state_key"]


class GroupInfeasible(Exception):
    """The group has no order instance; ``events`` (positions in the group) cannot all fit."""

    def __init__(self, events: list[int], window: tuple[int, int] | None = None) -> None:
        super().__init__(events, window)
        self.events = events
        self.window = window


def initial_state(t_lo: Sequence[int], t_hi: Sequence[int],
                  weights: GroupWeights | None = None) -> State:
    """The state of a whole group: every event with its instant interval (without its
    instants of weight zero, SEMANTICS A6)."""
    if weights is None:
        return {e: interval(int(a), int(b)) for e, (a, b) in enumerate(zip(t_lo, t_hi))}
    return {e: weights.domain(e, int(a), int(b)) for e, (a, b) in enumerate(zip(t_lo, t_hi))}


class StateExpansion:
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


def state_key(state: State) -> tuple[tuple[int, Domain], ...]:
    """A state as a dictionary key: states with the same key expand alike (memoised)."""
    return tuple(sorted(state.items()))
