"""Expected candidates of a pattern item within a time window, from the index's statistics
(Zhou et al. 5.2, "Choosing the first pattern item" and "Choosing the next pattern items").

>>> import pandas as pd
>>> import uncertain_cep as uc
>>> from uncertain_cep.query.evaluation import QueryContext
>>> from uncertain_cep.query.language import parse_query
>>> idx = uc.build_index(pd.DataFrame({"event_id": range(4), "group": 0,
...     "t_lo": [0, 10, 20, 30], "t_hi": [1, 11, 21, 31],
...     "x_lo": [0.0, 5.0, 5.0, 5.0], "x_hi": [1.0, 6.0, 6.0, 6.0]}))
>>> ctx = QueryContext(idx.event_index, parse_query(
...     "PATTERN SEQ(A, B) DEFINE A AS x <= 1, B AS x >= 5"))
>>> est = ItemEstimates(ctx)
>>> round(est.expected(0, 0, 31)), round(est.expected(1, 0, 31))
(1, 3)
"""

from __future__ import annotations

import numpy as np

from uncertain_cep.query.evaluation import QueryContext
from uncertain_cep.query.symbols import symbol_box

__all__ = ["ItemEstimates"]


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

    def expected(self, item: int, lo: float, hi: float) -> float:
        """Expected candidates of positive item ``item`` with an instant in ``[lo, hi]``."""
        return float(self.expected_many(item, np.array([lo], dtype=np.float64),
                                        np.array([hi], dtype=np.float64))[0])

    def expected_many(self, item: int, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """:meth:`expected` for many windows of one item (infinite bounds allowed)."""
        grid = self._stats.grid
        lo = np.where(np.isneginf(lo), grid.t0, lo)
        hi = np.where(np.isposinf(hi), grid.t0 + grid.width * grid.n_intervals, hi)
        return self._stats.expected_many(self._profiles[item], lo, hi)
