"""Evaluating a query over an on-disk index one time slice at a time.

An index too large for one process is queried in slices of time. A tuple belongs to the
slice holding the earliest feasible instant of its first event (its *anchor*). Every
event a tuple anchored in ``[lo, hi)`` can involve (its own events, and any event that
can stand in a negation gap) happens after the anchor and at most ``L`` instants after
its first event, so the slice needs exactly the events with ``t_max >= lo`` and
``t_min <= max(t_max of its anchors) + L``: its own events plus a halo of ``L``
(SEMANTICS A4; the time statistics of the index give the latest ``t_max`` per bucket).

The index's reader reads those rows
(:meth:`~uncertain_cep.index.reader.IndexReader.read_slice`: the anchors' range with a
halo of ``L``): of each group it loads the OI-trees whose interval meets the interval
spanned by those events. A parent tree's interval contains its child trees', so that set
is closed under parent trees, which is all the probability computations climb
(:mod:`uncertain_cep.query.chains`); trees outside it keep only their tree-level rows.
Answers are exactly those of the whole index; this module has no Spark in it, so the
equality is tested in-process as well as through the Spark engine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from uncertain_cep.errors import PlanningError
from uncertain_cep.index.reader import IndexReader
from uncertain_cep.query.evaluation import QueryContext
from uncertain_cep.query.language import parse_query
from uncertain_cep.query.stats import QueryStats
from uncertain_cep.query.strategies import get_strategy

__all__ = ["SLICE_STRATEGIES", "TimeSlice", "evaluate_slice", "plan_slices"]

# Strategies that only look at the events and trees a slice holds. Tree traversal walks
# whole groups and possible worlds enumerates whole groups, so they need the local engine.
SLICE_STRATEGIES = ("selectivity", "sequential")


@dataclass(frozen=True)
class TimeSlice:
    """Anchors in ``[lo, hi)``, whose latest feasible instant is ``latest``; the slice
    needs the events with ``t_max >= lo`` and ``t_min <= latest + halo`` (``need_hi``).

    >>> TimeSlice(0, 10, 12, 5.0).need_hi
    17.0
    """

    lo: int
    hi: int
    latest: int
    halo: float

    @property
    def need_hi(self) -> float:
        """The last instant an event the slice needs can start at."""
        return self.latest + self.halo


def plan_slices(reader: IndexReader, window: float, n_slices: int) -> list[TimeSlice]:
    """Cut the time domain into about ``n_slices`` slices of equal event counts; ``window``
    is the query's ``WITHIN`` (infinite without one), each slice's halo."""
    buckets = reader.time_buckets()
    if not len(buckets.starts):
        return []
    width = buckets.width
    total = int(buckets.events.sum())
    per = max(1, math.ceil(total / max(1, n_slices)))
    slices = []
    start_lo, acc, latest = None, 0, None
    for t_lo, count, last in zip(buckets.starts, buckets.events, buckets.latest):
        if start_lo is None:
            start_lo = int(t_lo)
        acc += int(count)
        latest = int(last) if latest is None else max(latest, int(last))
        if acc >= per:
            slices.append(TimeSlice(start_lo, int(t_lo) + width, latest, window))
            start_lo, acc, latest = None, 0, None
    if start_lo is not None and latest is not None:
        slices.append(TimeSlice(start_lo, int(buckets.starts[-1]) + width, latest, window))
    return slices


def evaluate_slice(reader: IndexReader, piece: TimeSlice, query: str,
                   strategy: str = "selectivity"
                   ) -> tuple[list[tuple[tuple[Any, ...], float, int, int]], QueryStats]:
    """Answer rows ``(event ids, confidence, t_first, t_last)`` of the tuples anchored in
    the slice, and the evaluation counters."""
    if strategy not in SLICE_STRATEGIES:
        raise PlanningError(f"strategy {strategy!r} needs the whole index; with the Spark "
                            f"engine choose one of: {', '.join(map(repr, SLICE_STRATEGIES))}")
    index = reader.read_slice(piece.lo, piece.latest, piece.halo)
    if index is None:
        return [], QueryStats(strategy=strategy)
    layout = index.layout
    ctx = QueryContext(index, parse_query(query))
    ctx.stats.strategy = strategy
    ctx.first_rows = (layout.t_min >= piece.lo) & (layout.t_min < piece.hi)
    # first_rows anchors every tuple's first event in this slice.
    answer = get_strategy(strategy)(ctx)
    ids = index.archive.event_ids[answer.events].tolist()
    rows = list(zip(map(tuple, ids), answer.confidence.tolist(), answer.t_first.tolist(),
                    answer.t_last.tolist()))
    return rows, ctx.stats
