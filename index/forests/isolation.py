"""Isolated subsequences: the two steps of Zhou et al. section 4.1.2.

A *state* maps each not-yet-placed event of a group to its domain: the instants it may
still take, as sorted disjoint intervals (:mod:`uncertain_cep.index.forests.domains`; nothing here
is per instant, so intervals 100,000 instants wide cost no more than narrow ones). Two steps
find the isolated subsequences of a state:

1. *Splitting instants* (Definition 2): an instant ``t`` such that every domain lies wholly
   at or before ``t`` or wholly after it cuts the state in two.
2. *Lemma 1 with interval update*: if ``k >= 2`` events fit only inside a window of exactly
   ``k`` instants, they fill it, so no other event can use those instants; removing them
   from the other domains may create new splitting instants. (The paper updates
   intervals; here a domain may become non-contiguous when a window sits in the middle of
   another event's interval. Such an event straddles the window, so no split happens
   there, which keeps every split exact.)

Both steps repeat to a fixpoint (:func:`propagate`), then :func:`split_isolated` cuts at
every splitting instant. Under Condition 2 a cut is kept only where no pair across it can
violate the predicate; otherwise the two sides stay in one subsequence.

>>> from uncertain_cep.index.forests.domains import interval
>>> state = {1: interval(1, 3), 2: interval(2, 3), 3: interval(2, 3), 4: interval(3, 7),
...          5: interval(4, 6), 6: interval(5, 6), 7: interval(6, 7)}
>>> state = propagate(state)
>>> state[1], state[4]
(((1, 1),), ((4, 7),))
>>> [sorted(part) for part in split_isolated(state)]
[[1], [2, 3], [4, 5, 6, 7]]
"""

from __future__ import annotations

from collections.abc import Mapping

from uncertain_cep.index.forests.domains import Domain, first, instants, last, without
from uncertain_cep.model.feasibility import GroupPairCheck

__all__ = ["Infeasible", "State", "always_allowed", "hall_violation", "propagate",
           "split_isolated"]

State = dict[int, Domain]


class Infeasible(Exception):
    """The state admits no order instance; ``events`` are the ones that cannot all fit."""

    def __init__(self, events: list[int], window: tuple[int, int] | None = None) -> None:
        super().__init__(events, window)
        self.events = events
        self.window = window


def propagate(state: Mapping[int, Domain]) -> State:
    """Apply Lemma 1 windows until nothing changes; raise :class:`Infeasible` on a window
    holding more events than instants, or on an empty domain.

    Works component by component (events linked by overlapping spans): a tight window
    never needs events of two components, so the cost stays near-linear when a group
    splits into many small pieces.
    """
    current = dict(state)
    for e, dom in current.items():
        if not dom:
            raise Infeasible([e])
    pending = _components(current)
    while pending:
        component = pending.pop()
        tight = _tight_windows({e: current[e] for e in component})
        changed = False
        for (a, b), inside in tight:
            for e in component:
                dom = current[e]
                if e in inside or last(dom) < a or first(dom) > b:
                    continue
                kept = without(dom, a, b)
                if not kept:
                    raise Infeasible(sorted(inside | {e}), (a, b))
                if kept != dom:
                    current[e] = kept
                    changed = True
        if changed:
            pending.extend(_components({e: current[e] for e in component}))
    return current


def _components(state: Mapping[int, Domain]) -> list[list[int]]:
    """Events grouped into maximal runs whose spans overlap (splitting instants cut them)."""
    items = sorted(state.items(), key=lambda item: (first(item[1]), item[0]))
    out: list[list[int]] = []
    reach = None
    for e, dom in items:
        if reach is None or first(dom) > reach:
            out.append([e])
            reach = last(dom)
        else:
            out[-1].append(e)
            reach = max(reach, last(dom))
    return out


def hall_violation(state: Mapping[int, Domain]) -> Infeasible | None:
    """The first window holding more events than instants, if any."""
    try:
        _tight_windows(state)
    except Infeasible as e:
        return e
    return None


def _tight_windows(state: Mapping[int, Domain]
                   ) -> list[tuple[tuple[int, int], frozenset[int]]]:
    """Windows ``[a, b]`` holding exactly ``b - a + 1 >= 2`` events' whole domains.

    Like the paper's scan (which pairs an event with an *earlier* one), a lone event with a
    single instant is not a window: its instant stays in the other domains, and the tree
    below simply has no node there. This keeps the paper's Table 3 shapes.

    For each right end ``b`` (a domain maximum), the events ending by ``b`` sorted by
    their minimum, largest first: the ``k`` first of them fit in ``[m_k, b]``.
    """
    by_max = sorted(state.items(), key=lambda item: last(item[1]))
    windows = []
    ended: list[tuple[int, int]] = []  # (min, event) of domains ending at or before b
    i = 0
    while i < len(by_max):
        b = last(by_max[i][1])
        while i < len(by_max) and last(by_max[i][1]) == b:
            ended.append((first(by_max[i][1]), by_max[i][0]))
            i += 1
        ended.sort(reverse=True)
        k = 0
        while k < len(ended):
            a = ended[k][0]
            # Take every event whose minimum ties with a: they share the window.
            while k + 1 < len(ended) and ended[k + 1][0] == a:
                k += 1
            count = k + 1
            width = b - a + 1
            if count > width:
                raise Infeasible(sorted(e for _, e in ended[:count]), (a, b))
            if count == width and count > 1:
                windows.append(((a, b), frozenset(e for _, e in ended[:count])))
            k += 1
    return windows


def split_isolated(state: Mapping[int, Domain],
                   pair_check: GroupPairCheck | None = None) -> list[State]:
    """Cut a propagated state at its splitting instants into isolated subsequences, in time
    order. Under Condition 2 a cut survives only if every pair across it is always allowed.
    """
    if not state:
        return []
    items = sorted(state.items(), key=lambda item: (first(item[1]), item[0]))
    parts: list[list[tuple[int, Domain]]] = [[items[0]]]
    reach = last(items[0][1])
    for e, dom in items[1:]:
        if first(dom) > reach:
            parts.append([(e, dom)])
        else:
            parts[-1].append((e, dom))
        reach = max(reach, last(dom))
    if pair_check is not None and len(parts) > 1:
        parts = _merge_unsafe_cuts(parts, pair_check)
    return [dict(p) for p in parts]


def _merge_unsafe_cuts(parts: list[list[tuple[int, Domain]]],
                       pair_check: GroupPairCheck) -> list[list[tuple[int, Domain]]]:
    """Merge neighbouring parts wherever some pair across the cut may violate Condition 2.

    A cut between ``parts[:k]`` and ``parts[k:]`` is safe when every event before it and
    every event after it are allowed at every pair of their instants.
    """
    n = len(parts)
    before: list[tuple[int, Domain]] = []
    safe = [False] * n
    for k in range(1, n):
        before.extend(parts[k - 1])
        after = [x for p in parts[k:] for x in p]
        safe[k] = all(always_allowed(a, da, b, db, pair_check)
                      for a, da in before for b, db in after)
    merged = [list(parts[0])]
    for k in range(1, n):
        if safe[k]:
            merged.append(list(parts[k]))
        else:
            merged[-1].extend(parts[k])
    return merged


def always_allowed(a: int, da: Domain, b: int, db: Domain,
                   pair_check: GroupPairCheck) -> bool:
    """Whether Condition 2 allows event ``a`` (domain ``da``) before event ``b`` (domain
    ``db``, wholly after ``da``) at every pair of their instants."""
    gap = pair_check.min_gap(a, b)
    if gap is not None:
        return first(db) - last(da) >= gap
    # A predicate of unknown shape (a user's) can only be asked instant by instant.
    return all(pair_check.allows(a, b, ta, tb) for ta in instants(da) for tb in instants(db))
