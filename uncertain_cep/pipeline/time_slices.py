"""Evaluating a query over an on-disk index one time slice at a time.

A tuple belongs to the slice holding the earliest feasible instant of its first event
(its *anchor*), so the slices' answers are disjoint and together the whole answer.

Each slice needs only the events with ``t_max >= lo`` and ``t_min <= max(t_max of its
anchors) + L`` (SEMANTICS A4: every event a tuple anchored in ``[lo, hi)`` involves
happens at most ``L`` instants after its first event); :class:`TimeSlice` records that
span. A slice answers from the index opened once per process (:func:`opened_index`: of a
sharded index, the shards the span meets, or the whole index where the host's cache can
hold it; event and node columns memory-mapped from the host's working copy, so a slice's
evaluation touches only the pages its tuples meet), the R*-tree's searches bounded by
the span.

Only the first item's candidates are limited to the slice's anchors, and the answers are
exactly those of the whole index; this module has no Spark in it, so the equality is
tested in-process as well as through the Spark engine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from uncertain_cep.errors import IndexFormatError, PlanningError
from uncertain_cep.index.event_index import EventIndex
from uncertain_cep.index.store.mapped_pages import index_columns, release_mapped_pages
from uncertain_cep.index.store.reader import IndexReader
from uncertain_cep.index.store.working_copy import holds_whole
from uncertain_cep.query.evaluation.context import QueryContext
from uncertain_cep.query.evaluation.stats import QueryStats
from uncertain_cep.query.language.patterns import SequencePattern
from uncertain_cep.query.strategies import evaluate

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


def evaluate_slice(reader: IndexReader, piece: TimeSlice, pattern: SequencePattern,
                   strategy: str = "selectivity"
                   ) -> tuple[list[tuple[tuple[Any, ...], float, int, int]], QueryStats]:
    """Answer rows ``(event ids, confidence, t_first, t_last)`` of the tuples anchored in
    the slice, and the evaluation counters (with the shards it opened). ``pattern`` is
    bound to the index's time axis (:func:`~uncertain_cep.query.language.parse.bind_query`,
    on the driver: the query is parsed once)."""
    if strategy not in SLICE_STRATEGIES:
        raise PlanningError(f"strategy {strategy!r} needs the whole index; with the Spark "
                            f"engine choose one of: {', '.join(map(repr, SLICE_STRATEGIES))}")
    # Of a sharded index, the shards the slice's span meets (its tuples and every event
    # standing in their negation gaps lie in that span).
    # A remote index: this host's mirror of the version the driver opened.
    reader = reader.on_this_host()
    shards = reader.shards_meeting(piece.lo, piece.need_hi)
    index = opened_index(reader, shards)
    ctx = QueryContext(index, pattern)
    ctx.stats.strategy = strategy
    if reader.manifest.is_sharded:
        ctx.stats.shards_read = list(shards)
        ctx.stats.shards = len(reader.manifest.shards)
    # Every tuple's first event anchored in this slice; every event it meets is at most
    # a window after that one's latest instant, so searches stop at the halo.
    ctx.anchors = (piece.lo, piece.hi)
    ctx.span = (piece.lo, piece.need_hi)
    answer = evaluate(ctx, strategy)
    ids = index.archive.event_ids[answer.events].tolist()
    rows = list(zip(map(tuple, ids), answer.confidence.tolist(), answer.t_first.tolist(),
                    answer.t_last.tolist()))
    # The worker keeps the index open for its next slice, not the pages this one touched
    # (they stay in the host's page cache): its memory does not grow slice by slice.
    release_mapped_pages(index_columns(index))
    return rows, ctx.stats


def _check_unchanged(reader: IndexReader) -> None:
    if not reader.holds_its_manifest():
        raise IndexFormatError(f"{reader.root} was rebuilt while the query ran; run the "
                               "query again")


def opened_index(reader: IndexReader, shards: list[int] | None = None) -> EventIndex:
    """The index ``reader`` checked (of a sharded index, the ``shards`` given, side by
    side, or the whole index where the host's cache can hold its working copy:
    :func:`~uncertain_cep.index.store.working_copy.holds_whole`), opened once per process
    (a Spark executor's Python worker answers its later slices and queries from the
    same open index).

    Every call checks that the directory still holds the manifest ``reader`` checked (by
    content, so on any host of a shared filesystem): all slices of a query answer from
    one version of the index, and a rebuild meanwhile is an IndexFormatError."""
    # Where the host's cache can hold the whole index's working copy, every slice maps
    # that one (made once per host, shared by its processes, kept for the next query);
    # else the shards asked for, side by side.
    wanted = (tuple(shards) if shards is not None and reader.manifest.is_sharded
              and not holds_whole(reader.manifest) else None)
    key = (str(reader.root), reader.manifest, wanted)
    index = _OPENED.get(key)
    if index is None:
        # One index at a time: a worker that moves on to another index lets the old go.
        _OPENED.clear()
        index = _OPENED[key] = reader.load(shards=wanted)
    # Checked after loading too: a rebuild during the load is caught here.
    _check_unchanged(reader)
    return index


_OPENED: dict[tuple[str, object, tuple[int, ...] | None], EventIndex] = {}
