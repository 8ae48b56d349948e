"""Evaluating a query over an on-disk index one time slice at a time.

A tuple belongs to the slice holding the earliest feasible instant of its first event
(its *anchor*), so the slices' answers are disjoint and together the whole answer. A
slice is evaluated on the whole index, opened once per process
(:func:`opened_index`: the columnar index memory-maps its node columns, so opening reads
the events table and the R*-tree file, and a slice's evaluation touches only the nodes
its tuples meet); only the first item's candidates are limited to the slice's anchors.
Answers are exactly those of the whole index; this module has no Spark in it, so the
equality is tested in-process as well as through the Spark engine.

Each slice needs only the events with ``t_max >= lo`` and ``t_min <= max(t_max of its
anchors) + L`` (SEMANTICS A4: every event a tuple anchored in ``[lo, hi)`` involves
happens at most ``L`` instants after its first event); :class:`TimeSlice` records that
span, and the slice's R*-tree searches are bounded by it (``QueryContext.span``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from uncertain_cep.errors import IndexFormatError, PlanningError
from uncertain_cep.index.event_index import EventIndex
from uncertain_cep.index.reader import IndexReader
from uncertain_cep.query.evaluation import QueryContext
from uncertain_cep.query.language import parse_query
from uncertain_cep.query.stats import QueryStats
from uncertain_cep.query.strategies import get_strategy

__all__ = ["SLICE_STRATEGIES", "TimeSlice", "evaluate_slice", "opened_index", "plan_slices"]

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
    index = opened_index(reader)
    ctx = QueryContext(index, parse_query(query))
    ctx.stats.strategy = strategy
    # Every tuple's first event anchored in this slice; every event it meets is at most
    # a window after that one's latest instant, so searches stop at the halo.
    ctx.anchors = (piece.lo, piece.hi)
    ctx.span = (piece.lo, piece.need_hi)
    answer = get_strategy(strategy)(ctx)
    ids = index.archive.event_ids[answer.events].tolist()
    rows = list(zip(map(tuple, ids), answer.confidence.tolist(), answer.t_first.tolist(),
                    answer.t_last.tolist()))
    return rows, ctx.stats


def opened_index(reader: IndexReader) -> EventIndex:
    """The index ``reader`` checked, opened once per process (a Spark executor's Python
    worker answers its later slices and queries from the same open index).

    Every call checks that the directory still holds the manifest ``reader`` checked (by
    content, so on any host of a shared filesystem): all slices of a query answer from
    one version of the index, and a rebuild meanwhile is an IndexFormatError."""
    key = (str(reader.root), reader.manifest)
    index = _OPENED.get(key)
    if index is None:
        # One index at a time: a worker that moves on to another index lets the old go.
        _OPENED.clear()
        index = _OPENED[key] = reader.load()
    # Checked after loading too: a rebuild during the load is caught here.
    if not reader.holds_its_manifest():
        raise IndexFormatError(f"{reader.root} was rebuilt while the query ran; run the "
                               "query again")
    return index


_OPENED: dict[tuple[str, object], EventIndex] = {}
