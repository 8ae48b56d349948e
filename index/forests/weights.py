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
from uncertain_cep.model.instant_weights import InstantWeights

__all__ = ["GroupWeights", "group_weights"]


class GroupWeights:
    """Per event of a group (positions ``0..n-1``), its weight per instant from its
    ``t_lo`` on, or ``None`` where it weighs its instants equally."""

    def __init__(self, t_lo: np.ndarray, weights: Sequence[np.ndarray | None]) -> None:
        self.t_lo = np.asarray(t_lo, dtype=np.int64)
        self.weights = tuple(weights)

    def weight(self, event: int, instant: int) -> float:
        """The weight of ``event`` at ``instant`` (1.0 for an unweighted event)."""
        w = self.weights[event]
        return 1.0 if w is None else float(w[instant - int(self.t_lo[event])])

    def domain(self, event: int, lo: int, hi: int) -> Domain:
        """The instants of ``[lo, hi]`` where ``event`` weighs more than zero."""
        w = self.weights[event]
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
        for e, w in enumerate(self.weights):
            if w is not None:
                positive = np.flatnonzero(w > 0)
                base = int(self.t_lo[e])
                lo[e], hi[e] = base + int(positive[0]), base + int(positive[-1])
        return lo, hi

    def leaves(self, event: int, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """``event``'s instants of positive weight in ``[lo, hi]`` and each one's share of
        their total: the leaves of a lone event's tree and their probabilities."""
        instants = np.arange(lo, hi + 1, dtype=np.int64)
        w = self.weights[event]
        if w is None:
            return instants, np.full(len(instants), 1.0 / len(instants))
        values = w[lo - int(self.t_lo[event]):hi - int(self.t_lo[event]) + 1]
        keep = values > 0
        return instants[keep], values[keep] / values[keep].sum()

    def subset(self, events: slice) -> GroupWeights:
        """The weights of a run of the group's events (positions renumbered from 0)."""
        return GroupWeights(self.t_lo[events], self.weights[events])


def group_weights(weights: InstantWeights | None, rows: np.ndarray,
                  t_lo: np.ndarray) -> GroupWeights | None:
    """The weights of a group's events (archive ``rows`` in group order, with their
    ``t_lo``), or ``None`` when none of them is weighted (planned as before)."""
    if weights is None:
        return None
    rows = np.asarray(rows)
    if not weights.weighted[rows].any():
        return None
    # Only ratios within an event matter: each event's largest weight is made 1, so that
    # products over many events stay far from the smallest double.
    scaled = [None if (w := weights.of(int(r))) is None else w / w.max() for r in rows]
    return GroupWeights(np.asarray(t_lo), scaled)
