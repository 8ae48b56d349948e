"""Expected candidates of a pattern item within a time window, from the index's statistics
(Zhou et al. 5.2, "Choosing the first pattern item" and "Choosing the next pattern items").

>>> import numpy as np
>>> import pandas as pd
>>> import uncertain_cep as uc
>>> from uncertain_cep.query.evaluation.context import QueryContext
>>> from uncertain_cep.query.language.parse import parse_query
>>> idx = uc.build_index(pd.DataFrame({"event_id": range(4), "group": 0,
...     "t_lo": [0, 10, 20, 30], "t_hi": [1, 11, 21, 31],
...     "x_lo": [0.0, 5.0, 5.0, 5.0], "x_hi": [1.0, 6.0, 6.0, 6.0]}))
>>> ctx = QueryContext(idx.event_index, parse_query(
...     "PATTERN SEQ(A, B) DEFINE A AS x <= 1, B AS x >= 5"))
>>> est = ItemEstimates(ctx)
>>> round(est.expected(0, 0, 31)), round(est.expected(1, 0, 31))
(1, 3)
>>> choice, guess = est.cheapest(np.array([[0.0, 0.0], [0.0, 0.0]]),
...                              np.array([[31.0, 31.0], [31.0, 31.0]]),
...                              np.array([[False, False], [True, False]]))
>>> choice.tolist(), np.round(guess).tolist()
([0, 1], [1.0, 3.0])
"""

from __future__ import annotations

import numba
import numpy as np

from uncertain_cep.index.statistics import expected_in
from uncertain_cep.query.evaluation.context import QueryContext
from uncertain_cep.query.language.symbols import symbol_box

__all__ = ["LONE_ITEM_WEIGHT", "ItemEstimates"]

# An unmatched item with no matched neighbour, when the planner weighs items against
# each other: its expected candidates count this much. Measured, not derived: on the
# benchmark's localization queries in selectivity order it cut the states created by
# a quarter (n experiment: 16.0M -> 12.2M; n = 30 query 2: 21 s -> 10 s) and left
# dodgers and synthetic within 10% (docs/benchmarks.md, "Three misses"). Such an item
# splits a run of unmatched items in two.
LONE_ITEM_WEIGHT = 0.5


class ItemEstimates:
    """Per positive item of ``ctx.pattern``: its statistics profile, and the expected number
    of candidate events with a feasible instant in a window."""

    def __init__(self, ctx: QueryContext) -> None:
        stats = ctx.index.statistics
        self._stats = stats
        self._profiles = []
        for name in ctx.positive:
            symbol = ctx.pattern.symbol(name)
            self._profiles.append(stats.profile(symbol_box(ctx.index.archive, symbol),
                                                symbol.categorical_sets()))
        # (One row per item, for weighing every item of many windows in one pass.)
        self._profile_rows = np.stack(self._profiles).astype(np.float64)

    @property
    def k(self) -> int:
        """The number of positive items."""
        return len(self._profiles)

    def expected(self, item: int, lo: float, hi: float) -> float:
        """Expected candidates of positive item ``item`` with an instant in ``[lo, hi]``."""
        return float(self.expected_many(item, np.array([lo], dtype=np.float64),
                                        np.array([hi], dtype=np.float64))[0])

    def expected_many(self, item: int, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """:meth:`expected` for many windows of one item (infinite bounds allowed)."""
        lo, hi = self._finite(lo, hi)
        return self._stats.expected_many(self._profiles[item], lo, hi)

    def cheapest(self, lo: np.ndarray, hi: np.ndarray, matched: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
        """Per row of item windows (``lo``, ``hi``: rows x items, infinite bounds
        allowed), the unmatched item with the fewest expected candidates, those of an
        item without a matched neighbour weighed by :data:`LONE_ITEM_WEIGHT` (ties go to
        the earlier item), and its expected candidates: :meth:`expected_many` for every
        item at once, in one compiled pass instead of one array pass per item
        (measured: 2.4 s of localization n = 30 query 2 went to the per-item passes)."""
        stats, grid = self._stats, self._stats.grid
        if grid.n_intervals == 0:
            # (No statistics: every window expects none, so the first unmatched item.)
            choice = np.argmin(matched, axis=1).astype(np.int64)
            return choice, np.zeros(len(choice))
        lo, hi = self._finite(lo, hi)
        return _cheapest(self._profile_rows, lo, hi, np.ascontiguousarray(matched),
                         float(grid.t0), float(grid.width), grid.n_intervals,
                         stats.mean_instants / 2, LONE_ITEM_WEIGHT)

    def _finite(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Windows with "no bound" replaced by the statistics grid's ends."""
        grid = self._stats.grid
        lo = np.where(np.isneginf(lo), grid.t0, lo).astype(np.float64)
        hi = np.where(np.isposinf(hi), grid.t0 + grid.width * grid.n_intervals,
                      hi).astype(np.float64)
        return lo, hi


@numba.njit(cache=True, nogil=True)
def _cheapest(profiles: np.ndarray, lo: np.ndarray, hi: np.ndarray, matched: np.ndarray,
              t0: float, width: float, n_intervals: int, half: float, lone: float
              ) -> tuple[np.ndarray, np.ndarray]:
    """The next item of each partial tuple: its unmatched item with the fewest expected
    candidates in its window (:meth:`ItemEstimates.cheapest`; Zhou et al. 5.2,
    "Choosing the next pattern items"; docs/design.md, Selectivity).

    Parameters
    ----------
    profiles : (k, intervals + 1) float64
        Per positive item, its statistics profile: the cumulative expected candidates
        at each boundary of the time grid.
    lo, hi : (n, k) float64
        Per row and item, its window (finite: "no bound" is the grid's end).
    matched : (n, k) bool
        Whether each item is matched.
    t0, width, n_intervals
        The time grid: its start, its intervals' width and their number.
    half : float
        What each window is widened by on either side (half the mean number of
        instants an event may take).
    lone : float
        The weight of an item with no matched neighbour (:data:`LONE_ITEM_WEIGHT`).

    Returns
    -------
    choice : (n,) int64
        Per row, the unmatched item whose expected candidates, weighed by ``lone``
        where it has no matched neighbour, are fewest (ties: the earlier item); 0 where
        every item is matched.
    guess : (n,) float64
        Its expected candidates, unweighed (0 where every item is matched).
    """
    n, k = matched.shape
    choice = np.zeros(n, dtype=np.int64)
    guess = np.zeros(n)
    for r in range(n):
        best = np.inf
        for i in range(k):
            if matched[r, i]:
                continue
            expected = expected_in(profiles[i], lo[r, i], hi[r, i], t0, width,
                                   n_intervals, half)
            weighed = expected
            if not ((i > 0 and matched[r, i - 1]) or (i + 1 < k and matched[r, i + 1])):
                weighed *= lone
            if weighed < best:
                best, choice[r], guess[r] = weighed, i, expected
    return choice, guess
