"""Which item each partial tuple matches next: the strategies' one decision.

The batch engine (:mod:`uncertain_cep.query.engine.batch_engine`) asks an
:class:`ItemChooser` once per batch, with a :class:`ChoiceRequest`: the depth, the
batch's size, the item estimates and, on demand, each tuple's item windows (computed by
the engine from the tuple's matched instants). The chooser answers an
:class:`ItemChoice`: per entry the item to match next (the same for every entry of a
tuple) and the estimated candidates, for EXPLAIN. It never sees the engine.

* :func:`cheapest_item` (Zhou et al. 5.2, selectivity order): the first item is the
  positive item with the fewest expected candidates over the whole time domain
  (:mod:`uncertain_cep.query.plan.estimates`); then each tuple takes its unmatched item
  with the fewest expected candidates in its window, forward, backward or in the middle.
* :func:`in_pattern_order` (5.1, sequential): item ``depth`` for every entry.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple, Protocol

import numpy as np

from uncertain_cep.query.plan.estimates import ItemEstimates

__all__ = ["ChoiceRequest", "ItemChoice", "ItemChooser", "ItemWindows", "cheapest_item",
           "in_pattern_order"]


class ItemWindows(NamedTuple):
    """Per tuple of a batch (in tuple order): its first entry, which items it has
    matched, and each item's window over all the tuple's entries in the index's instants
    (from the earliest instants of its matched items to the latest; infinities for "no
    bound")."""

    starts: np.ndarray      # (tuples,) first entry of each tuple
    matched: np.ndarray     # (tuples, items) bool
    lo: np.ndarray          # (tuples, items) earliest instant the item may take
    hi: np.ndarray          # (tuples, items) latest instant


class ChoiceRequest(NamedTuple):
    """What the engine tells a chooser about a batch."""

    depth: int                          # items matched so far by every entry
    entries: int                        # rows of the batch
    estimates: ItemEstimates
    windows: Callable[[], ItemWindows]  # computed when asked (pattern order: EXPLAIN only)
    explain: bool                       # whether EXPLAIN wants the estimate


class ItemChoice(NamedTuple):
    """A chooser's answer: per entry the item it matches next, and the estimated
    candidates over the batch (``None`` when not estimated)."""

    items: np.ndarray
    estimated: float | None


class ItemChooser(Protocol):
    """A strategy's decision: the next item of every entry of a batch."""

    __name__: str

    def __call__(self, request: ChoiceRequest) -> ItemChoice: ...


def cheapest_item(request: ChoiceRequest) -> ItemChoice:
    """Per tuple, its unmatched item with the fewest expected candidates in its window
    (the first item: over the whole time domain); ties go to the earlier item."""
    estimates = request.estimates
    if request.depth == 0:
        k = estimates.k
        guesses = [estimates.expected(i, -math.inf, math.inf) for i in range(k)]
        first = min(range(k), key=lambda i: (guesses[i], i))
        return ItemChoice(np.full(request.entries, first, dtype=np.int64), guesses[first])
    starts, matched, lo, hi = request.windows()
    choice, guess = estimates.cheapest(lo, hi, matched)
    sizes = np.diff(np.concatenate([starts, [request.entries]]))
    return ItemChoice(np.repeat(choice, sizes), float(guess.sum()))


def in_pattern_order(request: ChoiceRequest) -> ItemChoice:
    """Item ``depth`` next, for every entry; its candidates estimated only for EXPLAIN."""
    item = request.depth
    guess = None
    if request.explain:
        _, _, lo, hi = request.windows()
        guess = float(request.estimates.expected_many(item, lo[:, item], hi[:, item]).sum())
    return ItemChoice(np.full(request.entries, item, dtype=np.int64), guess)
