"""One group's instant weights as the OI-tree builders use them (SEMANTICS A6).

Zhou et al. count order instances: a node's share of its tree is the number of OIs through
it over the tree's (4.1). With instants of unequal weight (SEMANTICS A6) an OI weighs the
product of its events' instant weights, and every count becomes a weighted sum by the
same recursions: a node's count is its own instant's weight times the sum over its
children (times its child tree's count, for a virtual node). Products factor over
isolated subsequences exactly as counts do, so the multi-tree decomposition, the codes
and every probability the engine derives from ``poi`` and ``cond`` carry over unchanged.

An instant of weight zero is in no world of positive probability: it is left out of the
event's domain before planning (:meth:`GroupWeights.domain`), so no node stands for it
and every node kept has positive probability (no ``0 / 0`` down a chain). An event
weighted nowhere is refused when the archive is read; a group whose OIs all weigh zero
has no order instance left, which the planner reports as for any infeasible group.
Each event's weights are scaled to a largest of 1 (only their ratios count), and a forest
whose weighted sums still leave a probability that is not a positive double (a product
of thousands of tiny weights) is refused, never indexed with zeros or NaNs.

A group none of whose events carries weights is planned exactly as before (integer
counts): :func:`group_weights` gives ``None`` for it.

>>> w = GroupWeights(np.array([1, 2]), (np.array([1.0, 0.0, 3.0]), None))
>>> w.domain(0, 1, 3), w.domain(1, 2, 3)
(((1, 1), (3, 3)), ((2, 3),))
>>> w.weight(0, 3), w.weight(1, 3)
(3.0, 1.0)
>>> w.support(np.array([1, 2]), np.array([3, 3]))
(array([1, 2]), array([3, 3]))
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from uncertain_cep.index.forests.domains import Domain, interval
from uncertain_cep.model.instant_weights import InstantWeights, slices

__all__ = ["GroupWeights", "group_weights"]


class GroupWeights:
    """Per event of a group (positions ``0..n-1``), its weight per instant from its
    ``t_lo`` on, or ``None`` where it weighs its instants equally. Held flat (event ``e``'s
    weights are ``values[start[e]:start[e + 1]]``, empty when unweighted), so that the
    lone events of a group are handled at array speed."""

    def __init__(self, t_lo: np.ndarray, weights: Sequence[np.ndarray | None]) -> None:
        self.t_lo = np.asarray(t_lo, dtype=np.int64)
        self.weighted = np.array([w is not None for w in weights], dtype=np.bool_)
        self.start = np.zeros(len(weights) + 1, dtype=np.int64)
        np.cumsum([0 if w is None else len(w) for w in weights], out=self.start[1:])
        pieces = [np.asarray(w, dtype=np.float64) for w in weights if w is not None]
        self.values = np.concatenate(pieces) if pieces else np.zeros(0)

    @classmethod
    def flat(cls, t_lo: np.ndarray, weighted: np.ndarray, start: np.ndarray,
             values: np.ndarray) -> GroupWeights:
        out = cls.__new__(cls)
        out.t_lo, out.weighted, out.start, out.values = (
            np.asarray(t_lo, dtype=np.int64), weighted, start, values)
        return out

    def _of(self, event: int) -> np.ndarray | None:
        if not self.weighted[event]:
            return None
        return self.values[self.start[event]:self.start[event + 1]]

    def weight(self, event: int, instant: int) -> float:
        """The weight of ``event`` at ``instant`` (1.0 for an unweighted event)."""
        if not self.weighted[event]:
            return 1.0
        return float(self.values[self.start[event] + instant - int(self.t_lo[event])])

    def domain(self, event: int, lo: int, hi: int) -> Domain:
        """The instants of ``[lo, hi]`` where ``event`` weighs more than zero."""
        w = self._of(event)
        if w is None:
            return interval(lo, hi)
        base = int(self.t_lo[event])
        positive = np.zeros(hi - lo + 3, dtype=np.bool_)
        positive[1:-1] = w[lo - base:hi - base + 1] > 0
        edges = np.flatnonzero(positive[1:] != positive[:-1])
        return tuple((lo + int(a), lo + int(b) - 1) for a, b in zip(edges[::2], edges[1::2]))

    def support(self, t_lo: np.ndarray, t_hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each event's first and last instant of positive weight (its interval, narrowed
        at both ends; every event weighs something, the reader checked)."""
        lo, hi = np.array(t_lo, dtype=np.int64), np.array(t_hi, dtype=np.int64)
        positive = np.flatnonzero(self.values > 0)
        owner = np.searchsorted(self.start, positive, side="right") - 1
        events = np.flatnonzero(self.weighted)
        first = positive[np.searchsorted(owner, events, side="left")]
        last = positive[np.searchsorted(owner, events, side="right") - 1]
        lo[events] = self.t_lo[events] + first - self.start[events]
        hi[events] = self.t_lo[events] + last - self.start[events]
        return lo, hi

    def leaves(self, lo: np.ndarray, hi: np.ndarray, events: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[float]]:
        """The leaves of lone ``events``' trees (each event's instants of positive weight
        in ``[lo, hi]``, event after event): their instants and shares of their tree, and
        per event its number of leaves and its tree's count (summed weights; the number
        of instants for an unweighted event)."""
        _, owner, j = slices(hi[events] - lo[events] + 1)
        at = events[owner]
        instant = lo[at] + j
        weighted = self.weighted[at]
        value = np.ones(len(owner))
        value[weighted] = self.values[self.start[at[weighted]]
                                      + instant[weighted] - self.t_lo[at[weighted]]]
        keep = value > 0
        owner, instant, value = owner[keep], instant[keep], value[keep]
        total = np.bincount(owner, weights=value, minlength=len(events))
        sizes = np.bincount(owner, minlength=len(events))
        counts = [float(t) if w else int(n) for w, t, n in
                  zip(self.weighted[events].tolist(), total.tolist(), sizes.tolist())]
        return instant, value / total[owner], sizes, counts

    def subset(self, events: slice) -> GroupWeights:
        """The weights of a run of the group's events (positions renumbered from 0)."""
        a, b, _ = events.indices(len(self.weighted))
        start = self.start[a:b + 1]
        return GroupWeights.flat(self.t_lo[events], self.weighted[events], start - start[0],
                                 self.values[start[0]:start[-1]])


def group_weights(weights: InstantWeights | None, rows: np.ndarray,
                  t_lo: np.ndarray) -> GroupWeights | None:
    """The weights of a group's events (archive ``rows`` in group order, with their
    ``t_lo``), or ``None`` when none of them is weighted (planned as before)."""
    if weights is None:
        return None
    rows = np.asarray(rows)
    if not weights.weighted[rows].any():
        return None
    mine = weights.take(rows)
    return GroupWeights.flat(np.asarray(t_lo), mine.weighted, mine.start, mine.scaled())
