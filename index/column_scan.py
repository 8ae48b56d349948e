"""Searching the events' boxes by scanning their columns: the access a search takes when
its box bounds neither the group nor the code range.

The batch engine asks one box per query item: every group, every code, the query's time
span and the item's attribute ranges (:mod:`uncertain_cep.query.engine.inputs`). An
R*-tree prunes such a box by time and attribute alone, and a bulk-loaded tree spreads an
attribute's values through all its nodes: on the 10M synthetic archive libspatialindex
spent about 0.8 s per item box, 2.46 s of a 3.24 s query (docs/benchmarks.md, "Item
searches by column scan"). Testing every event's box on its memory-mapped columns, a
million rows at a time, costs a few nanoseconds an event and axis.

The test is the R*-tree's own, on the same doubles, so the scan finds exactly the rows the
tree finds (in row order rather than the tree's): an event's box meets the query box
unless, on some axis, its low end lies above the box's high end or its high end below the
box's low end (libspatialindex's ``Region::intersectsRegion``: a NaN end compares false
and so meets, as there); the ends are the values the tree was loaded with
(:func:`~uncertain_cep.index.rtree_boxes.event_boxes`: group codes and instants as
doubles). An axis the box leaves unbounded (``-inf`` to ``inf``) meets every end and is
not read. Where the rows are in time order of their earliest instant, as a stored index
keeps them, only the rows whose earliest instant lies between the span's start, less the
longest event's extent, and its end are read.

>>> import numpy as np
>>> t_min = np.array([0, 5, 9]); t_max = np.array([2, 7, 12])
>>> scan = ColumnScan(np.zeros(3), t_min, t_max, np.zeros(3), np.zeros(3),
...                   [(np.array([1.0, -4.0, 3.0]), np.array([1.0, -3.5, 3.0]))])
>>> inf = np.inf
>>> scan.rows(np.array([-inf, 6.0, -inf, -inf]), np.array([inf, 20.0, inf, 0.0])).tolist()
[1]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cached_property

import numpy as np

__all__ = ["ColumnScan"]

# Rows tested at a time (each axis read as doubles: 8 MB a piece).
_PIECE = 1 << 20


class ColumnScan:
    """The events' R*-tree boxes as columns: group, time extent, code range, then one
    ``(low, high)`` pair per numeric attribute, one value per archive row."""

    access = "column scan"

    def __init__(self, group: np.ndarray, t_min: np.ndarray, t_max: np.ndarray,
                 code_lo: np.ndarray, code_hi: np.ndarray,
                 attributes: Sequence[tuple[np.ndarray, np.ndarray]]) -> None:
        self._axes = [(group, group), (t_min, t_max), (code_lo, code_hi), *attributes]
        self._t_min, self._t_max = t_min, t_max
        self.n_rows = len(t_min)

    @cached_property
    def _time_order(self) -> tuple[bool, int]:
        """Whether the rows are in order of earliest instant, and the longest extent."""
        if self.n_rows == 0:
            return True, 0
        t_min = np.asarray(self._t_min, dtype=np.int64)
        ordered = bool((t_min[1:] >= t_min[:-1]).all())
        longest = int((np.asarray(self._t_max, dtype=np.int64) - t_min).max())
        return ordered, max(longest, 0)

    def row_range(self, low: float, high: float) -> tuple[int, int]:
        """The rows whose box may meet the time span ``[low, high]``: all of them, or,
        rows in time order, those from the first whose earliest instant reaches
        ``low`` less the longest extent to the last whose earliest instant is within
        ``high``; a margin of the doubles' spacing covers instants beyond 2**53, which
        their doubles round."""
        if not (math.isfinite(low) or math.isfinite(high)):
            return 0, self.n_rows       # every row, without reading the instants
        ordered, longest = self._time_order
        if not ordered or self.n_rows == 0:
            return 0, self.n_rows
        t_min = self._t_min
        start, stop = 0, self.n_rows
        if math.isfinite(low):
            margin = int(np.spacing(abs(low))) + 1
            start = int(np.searchsorted(t_min, _int64(math.floor(low) - longest - margin),
                                        "left"))
        if math.isfinite(high):
            margin = int(np.spacing(abs(high))) + 1
            stop = int(np.searchsorted(t_min, _int64(math.ceil(high) + margin), "right"))
        return start, max(start, stop)

    def rows(self, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        """The rows (ascending, int64) whose box meets the box from corner ``low`` to
        corner ``high`` (one value per axis)."""
        start, stop = self.row_range(float(low[1]), float(high[1]))
        bounded = [a for a in range(len(self._axes))
                   if not (low[a] == -math.inf and high[a] == math.inf)]
        found = []
        for lo in range(start, stop, _PIECE):
            hi = min(lo + _PIECE, stop)
            meets = np.ones(hi - lo, dtype=np.bool_)
            for a in bounded:
                ends_lo, ends_hi = self._axes[a]
                apart = np.asarray(ends_lo[lo:hi], dtype=np.float64) > high[a]
                apart |= np.asarray(ends_hi[lo:hi], dtype=np.float64) < low[a]
                meets &= ~apart
            found.append(np.flatnonzero(meets) + lo)
        return np.concatenate(found).astype(np.int64) if found else np.zeros(0, np.int64)


def _int64(value: int) -> np.int64:
    """``value`` clamped to int64 (a bound past the instants' range keeps every row)."""
    return np.int64(min(max(value, -(2**63)), 2**63 - 1))
