"""An upper bound of a partial tuple's negation factor from the events certainly inside
a gap, for pruning before every item is matched.

SEMANTICS A4 multiplies a world's weight, per NOT item between positive items i and
i + 1, by ``1 - Pr(C | x)`` for every other event ``x`` strictly between ``ts(e_i)`` and
``ts(e_(i+1))``. Once both neighbours of a gap are matched, an event whose every instant
lies after the latest instant the earlier neighbour can take and before the earliest the
later one can take is inside the gap in every world that counts, so its factor is paid
in all of them; every other factor is at most 1. The product over such events therefore
bounds the negation factor of every completion from above (an event certainly inside
cannot be matched by a completion's unmatched item either: that item would lie outside
the gap, so the completion holds in no world). Where most events satisfy the negated
symbol for sure (factor 0), a tuple whose gap certainly holds one is pruned at once,
whichever item comes next, instead of at the end (Zhou et al. evaluate negation only on
complete matches, their section 5.2).

>>> from uncertain_cep.query.engine.kernels.instants import NO_TIME
>>> w = CertainWeighers(columns=np.array([0]), rows=[np.array([5, 6])],
...                     first=[np.array([3, 8])], last=[np.array([4, 9])],
...                     weights=[np.array([0.5, 0.0])])
>>> events = np.array([[1, 2], [1, 2], [1, -1]])
>>> earliest = np.array([[0, 5], [0, 10], [0, -NO_TIME]])
>>> latest = np.array([[2, 6], [2, 12], [2, NO_TIME]])
>>> w.factors(events, earliest, latest).tolist()   # row 5 inside the first gap, 5 and 6
[0.5, 0.0, 1.0]

Once every item is matched, a tuple whose gaps hold each event for sure or not at all
has that product for its negation factor in every world (:meth:`CertainWeighers.settled`),
and needs no negation programme:

>>> factor, settled = w.settled(events[:2], earliest[:2], latest[:2])
>>> factor.tolist(), settled.tolist()
([0.5, 0.0], [True, True])
>>> w.settled(events[:1], earliest[:1], np.array([[2, 9]]))[1].tolist()  # row 6 may be in
[False]
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

import numba
import numpy as np

from uncertain_cep.index.node_table import NodeTable
from uncertain_cep.query.engine.kernels.negation import NegatedNodes
from uncertain_cep.query.engine.tuple_batches import event_instants

__all__ = ["CertainWeighers", "WeigherArrays"]


class WeigherArrays(NamedTuple):
    """:class:`CertainWeighers` as the kernels take it: per NOT item ``x``, the positive
    item before its gap (``columns[x]``), its events at ``offsets[x]:offsets[x + 1]`` by
    earliest instant (archive ``rows``, ``first`` and ``last`` instants, ``weights``
    ``1 - Pr(C | x)``) and their longest stretch (``longest[x]``)."""

    columns: np.ndarray
    offsets: np.ndarray
    rows: np.ndarray
    first: np.ndarray
    last: np.ndarray
    weights: np.ndarray
    longest: np.ndarray


class CertainWeighers:
    """Per NOT item (``columns``: the positive item before its gap), the events that may
    weigh it, by their earliest instant: each event's archive row, its earliest and
    latest instant, and its weight ``1 - Pr(C | x)``."""

    def __init__(self, columns: np.ndarray, rows: list[np.ndarray], first: list[np.ndarray],
                 last: list[np.ndarray], weights: list[np.ndarray]) -> None:
        self.columns = np.asarray(columns, dtype=np.int64)
        orders = [np.argsort(f, kind="stable") for f in first]
        self.offsets = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(
            np.int64)

        def flat(parts: list[np.ndarray], dtype: type) -> np.ndarray:
            return (np.concatenate([p[o] for p, o in zip(parts, orders, strict=True)])
                    .astype(dtype) if parts else np.zeros(0, dtype))

        self.rows, self.first = flat(rows, np.int64), flat(first, np.int64)
        self.last, self.weights = flat(last, np.int64), flat(weights, np.float64)
        # Per NOT item, its events' longest stretch of instants (where a scan for the
        # events reaching past an instant starts).
        self.longest = np.array([int((self.last[a:b] - self.first[a:b]).max(initial=0))
                                 for a, b in itertools.pairwise(self.offsets)],
                                dtype=np.int64)
        self.arrays = WeigherArrays(self.columns, self.offsets, self.rows, self.first,
                                    self.last, self.weights, self.longest)

    @classmethod
    def of(cls, table: NodeTable, negated: NegatedNodes) -> CertainWeighers:
        """The events of each NOT item's nodes in ``negated``, with their instants."""
        rows, first, last, weights = [], [], [], []
        for x in range(len(negated.columns)):
            part = slice(negated.offsets[x], negated.offsets[x + 1])
            row, at = np.unique(table.row[negated.nodes[part]], return_index=True)
            lo, hi = event_instants(table, row)
            rows.append(row)
            first.append(lo)
            last.append(hi)
            weights.append(negated.weights[part][at])
        return cls(negated.columns, rows, first, last, weights)

    def factors(self, events: np.ndarray, earliest: np.ndarray, latest: np.ndarray,
                live: np.ndarray | None = None) -> np.ndarray:
        """Per partial tuple (rows of ``events``, -1 where unmatched, with each column's
        ``earliest`` and ``latest`` instant over the worlds it sums over, or wider): the
        product of the weights of the events certainly inside each gap whose neighbours
        are both matched (1 where none is). Only the tuples ``live`` says (default: all;
        the others get 1): the caller need not gather them."""
        return self._run(events, earliest, latest, False, live)[0]

    def settled(self, events: np.ndarray, earliest: np.ndarray, latest: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
        """Per complete tuple, :meth:`factors`, and whether that is its negation factor
        in every world: no other event may lie in a gap without lying there for sure
        (or the product is 0 already). Then the tuple's confidence is its probability
        without negation times the factor, with the same first and last instants."""
        return self._run(events, earliest, latest, True, None)

    def likeliest(self, events: np.ndarray, earliest: np.ndarray, latest: np.ndarray,
                  live: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per tuple, one event that may lie in a gap whose neighbours are matched,
        without lying there for sure: the one most of whose instants lie within the gap's
        widest, times ``Pr(C | x)``. Returns the gap's earlier column (-1: none), the
        event's archive row and ``Pr(C | x)``: a tuple's confidence is at most its
        probability less ``Pr(C | x)`` times its probability with ``x`` inside the gap
        (docs/design.md, "An event that may lie in a gap"). Only the tuples ``live``
        says (default: all; the others get none, whatever their instants hold)."""
        # (Its kernels run in the calling thread: no lock, also from a spare thread.)
        return _likeliest(np.ascontiguousarray(events, dtype=np.int64),
                          np.ascontiguousarray(earliest, dtype=np.int64),
                          np.ascontiguousarray(latest, dtype=np.int64),
                          _every_or(live, len(events)), self.arrays)

    def _run(self, events: np.ndarray, earliest: np.ndarray, latest: np.ndarray,
             settle: bool, live: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        events = np.ascontiguousarray(events, dtype=np.int64)
        return _factors(events, np.ascontiguousarray(earliest, dtype=np.int64),
                        np.ascontiguousarray(latest, dtype=np.int64),
                        _every_or(live, len(events)), self.arrays, settle)


def _every_or(live: np.ndarray | None, n: int) -> np.ndarray:
    """The kernels' mask of tuples to look at: ``live``, or all ``n``."""
    return (np.ones(n, dtype=np.bool_) if live is None
            else np.ascontiguousarray(live, dtype=np.bool_))


@numba.njit(cache=True, nogil=True)
def _factors(events: np.ndarray, earliest: np.ndarray, latest: np.ndarray,
             live: np.ndarray, weighers: WeigherArrays, settle: bool
             ) -> tuple[np.ndarray, np.ndarray]:
    """Per tuple, the product of the weights of the events certainly inside each gap
    whose two neighbours are matched (:meth:`CertainWeighers.factors`, and with
    ``settle`` :meth:`CertainWeighers.settled`; SEMANTICS A4 condition 4;
    docs/design.md, Programmes skipped or settled).

    An event is inside for sure when its earliest instant lies after the earlier
    neighbour's latest and its latest before the later neighbour's earliest; the tuple's
    own events never weigh. The product bounds the negation factor of every completion
    from above.

    Parameters
    ----------
    events : (n, k) int64
        The tuples' events (archive rows, -1 where unmatched).
    earliest, latest : (n, k) int64
        Per tuple and column, the earliest and latest instant of its event over the
        worlds the tuple sums over, or wider.
    live : (n,) bool
        The tuples to look at; the others get the "none" values.
    weighers : WeigherArrays
        Per NOT item, the positive item before its gap (its gap lies between columns
        ``c`` and ``c + 1``) and the events that may weigh it.
    settle : bool
        Also scan every event that may lie in a gap (any instant strictly inside the
        gap's widest), to tell whether the product is the factor in every world.

    Returns
    -------
    out : (n,) float64
        The product (1 where no event is inside for sure, or the tuple is not live).
    settled : (n,) bool
        With ``settle``: whether every other event lies in each gap for sure or not at
        all (or the product is 0), so that the product is the tuple's negation factor.
        Not meaningful without ``settle``.
    """
    columns, offsets, rows, first, last, weights, longest = weighers
    n, k = events.shape
    out = np.ones(n)
    settled = np.zeros(n, dtype=np.bool_)
    for r in range(n):
        if not live[r]:
            continue
        f = 1.0
        sure = True
        for x in range(len(columns)):
            c = columns[x]
            if events[r, c] < 0 or events[r, c + 1] < 0:
                sure = False
                continue
            # Inside for sure: after the earlier neighbour's latest instant and before
            # the later one's earliest. Maybe inside: within the widest the gap can be.
            a, b = latest[r, c], earliest[r, c + 1]
            wide_a, wide_b = earliest[r, c], latest[r, c + 1]
            lo, hi = offsets[x], offsets[x + 1]
            start = wide_a - longest[x] if settle else a
            q = lo + np.searchsorted(first[lo:hi], start, side="right")
            end = wide_b if settle else b
            while q < hi and first[q] < end and f > 0.0:
                mine = False
                for j in range(k):
                    if events[r, j] == rows[q]:
                        mine = True
                        break
                if not mine:
                    if first[q] > a and last[q] < b:
                        f *= weights[q]
                    elif last[q] > wide_a:
                        sure = False
                q += 1
        out[r] = f
        settled[r] = sure or f == 0.0
    return out, settled


@numba.njit(cache=True, nogil=True)
def _likeliest(events: np.ndarray, earliest: np.ndarray, latest: np.ndarray,
               live: np.ndarray, weighers: WeigherArrays
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per tuple, the event likeliest to lie in a gap whose neighbours are matched
    without lying there for sure (:meth:`CertainWeighers.likeliest`; docs/design.md, An
    event that may lie in a gap). Its score is the share of its instants strictly
    within the gap's widest times ``Pr(C | x)``; events inside for sure (already in
    :func:`_factors`), with ``Pr(C | x) = 0`` or of the tuple are passed over.

    Parameters
    ----------
    events : (n, k) int64
        The tuples' events (archive rows, -1 where unmatched).
    earliest, latest : (n, k) int64
        Per tuple and column, the earliest and latest instant of its event over the
        worlds the tuple sums over, or wider.
    live : (n,) bool
        The tuples to look at; the others get the "none" values.
    weighers : WeigherArrays
        Per NOT item, the positive item before its gap and the events that may weigh
        it.

    Returns
    -------
    gap : (n,) int64
        The chosen gap's earlier column (-1: no such event).
    row : (n,) int64
        The event's archive row (-1: none).
    pr : (n,) float64
        Its ``Pr(C | x)`` (0: none).
    """
    columns, offsets, rows, first, last, weights, longest = weighers
    n, k = events.shape
    gap = np.full(n, -1, dtype=np.int64)
    row = np.full(n, -1, dtype=np.int64)
    pr = np.zeros(n)
    for r in range(n):
        if not live[r]:
            continue
        best = 0.0
        for x in range(len(columns)):
            c = columns[x]
            if events[r, c] < 0 or events[r, c + 1] < 0:
                continue
            a, b = latest[r, c], earliest[r, c + 1]
            wide_a, wide_b = earliest[r, c], latest[r, c + 1]
            lo, hi = offsets[x], offsets[x + 1]
            q = lo + np.searchsorted(first[lo:hi], wide_a - longest[x], side="right")
            while q < hi and first[q] < wide_b:
                if last[q] <= wide_a or (first[q] > a and last[q] < b) or weights[q] >= 1.0:
                    q += 1
                    continue
                mine = False
                for j in range(k):
                    if events[r, j] == rows[q]:
                        mine = True
                        break
                if not mine:
                    # The share of its instants strictly within the gap's widest.
                    inside = min(last[q], wide_b - 1) - max(first[q], wide_a + 1) + 1
                    score = (1.0 - weights[q]) * inside / (last[q] - first[q] + 1)
                    if score > best:
                        best = score
                        gap[r], row[r], pr[r] = c, rows[q], 1.0 - weights[q]
                q += 1
    return gap, row, pr
