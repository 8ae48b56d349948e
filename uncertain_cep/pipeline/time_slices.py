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

import contextlib
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import pairwise
from typing import Any

import numpy as np

from uncertain_cep.errors import IndexFormatError, PlanningError
from uncertain_cep.index.event_index import EventIndex
from uncertain_cep.index.store.manifest_records import IndexCounts
from uncertain_cep.index.store.mapped_pages import index_columns, release_mapped_pages
from uncertain_cep.index.store.reader import IndexReader, TimeBuckets
from uncertain_cep.index.store.working_copy import (
    LIMIT_ENV,
    cache_limit,
    copy_bytes,
    holds_whole,
    node_tables_thrash,
)
from uncertain_cep.memory_pages import keep_freed_arrays
from uncertain_cep.pipeline.seam_index import seam_index
from uncertain_cep.query.evaluation.context import QueryContext
from uncertain_cep.query.evaluation.stats import QueryStats
from uncertain_cep.query.language.patterns import SequencePattern
from uncertain_cep.query.strategies import evaluate

__all__ = ["SLICE_STRATEGIES", "TimeSlice", "evaluate_slice", "in_task_order", "opened_index",
           "plan_slices", "slice_context"]

# Strategies that only look at the events and trees a slice holds. Tree traversal walks
# whole groups and possible worlds enumerates whole groups, so they need the local engine.
SLICE_STRATEGIES = ("selectivity", "sequential")
# Windows up to this many instants are counted exactly as doubles.
_EXACT_WINDOW = 2.0**52
_INT64_MAX = 2**63 - 1


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
    """Cut the time domain into about ``n_slices`` slices of equal event counts, in time
    order; ``window`` is the query's ``WITHIN`` (infinite without one), each slice's halo.

    Of a sharded index (and a finite window) the slices follow the shards
    (:func:`_slices_by_shard`): a slice's span meets one shard, or it is a *seam* at a
    boundary, a window wide, whose few events are indexed in memory
    (:mod:`uncertain_cep.pipeline.seam_index`). No slice then puts whole shards side by
    side."""
    buckets = reader.time_buckets()
    if not len(buckets.starts):
        return []
    per = max(1, math.ceil(int(buckets.events.sum()) / max(1, n_slices)))
    if reader.manifest.is_sharded:
        by_shard = _slices_by_shard(reader, buckets, window, per)
        if by_shard is not None:
            return by_shard
    width = buckets.width
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


def _slices_by_shard(reader: IndexReader, buckets: TimeBuckets, window: float, per: int
                     ) -> list[TimeSlice] | None:
    """Slices of a sharded index cut where the shards a slice needs change.

    An anchor at instant ``t`` (a tuple's first event, earliest at ``t``, latest at most
    ``t + max_interval``) needs the shards whose events reach ``t`` and start by
    ``t + max_interval + window``: that set changes only where a shard's first instant,
    less the reach, or its last instant plus one, falls. Between two such points every
    slice has one set, so its span meets the shards of that set alone. Each stretch is
    cut further at bucket starts into pieces of about ``per`` events. ``None`` (cut by
    events alone) where the window is infinite or too long to count in instants
    exactly, or the instants reach int64's top (a slice's end would not fit)."""
    if not math.isfinite(window) or window > _EXACT_WINDOW:
        return None
    extents = [(s.t_min, s.t_max) for s in reader.manifest.shards
               if s.t_min is not None and s.t_max is not None]
    if not extents:
        return None
    max_interval = reader.manifest.time.max_interval
    reach = Fraction(max_interval) + Fraction(window)
    start = min(lo for lo, _ in extents)
    stop = max(hi for _, hi in extents) + 1
    if stop > _INT64_MAX:
        return None
    enter = [math.ceil(lo - reach) for lo, _ in extents]
    leave = [hi + 1 for _, hi in extents]
    points = sorted({start, stop} | {p for p in (*enter, *leave) if start < p < stop})
    slices = []
    for lo, hi in pairwise(points):
        if not any(e <= lo < gone for e, gone in zip(enter, leave)):
            continue    # no event starts here: no anchor
        for a, b in _by_events(buckets, lo, hi, per):
            slices.append(TimeSlice(a, b, b - 1 + max_interval, window))
    return slices


def _by_events(buckets: TimeBuckets, lo: int, hi: int, per: int) -> list[tuple[int, int]]:
    """``[lo, hi)`` cut at bucket starts into about equal pieces of about ``per`` events
    (by the buckets starting inside)."""
    first, last = np.searchsorted(buckets.starts, [lo, hi], side="left")
    starts, events = buckets.starts[first:last], buckets.events[first:last]
    pieces = max(1, round(int(events.sum()) / per))
    if pieces == 1:
        return [(lo, hi)]
    running = np.cumsum(events)
    wanted = running[-1] * np.arange(1, pieces) / pieces
    at = np.searchsorted(running, wanted, side="left") + 1
    cuts = sorted({int(starts[i]) for i in at if i < len(starts) and starts[i] > lo})
    return list(pairwise([lo, *cuts, hi]))


def in_task_order(plan: Sequence[TimeSlice], reader: IndexReader, lag: int
                  ) -> list[TimeSlice]:
    """The slices of ``plan`` (in time order) in the order to hand them to tasks: a slice
    needing several shards (a seam) after the slices of the last shard it needs and
    ``lag`` more (about the task slots: the working copies it reads are made by then),
    the others in time order."""
    keys = []
    mains = 0
    for piece in plan:
        if len(reader.shards_meeting(piece.lo, piece.need_hi)) == 1:
            keys.append(float(mains))
            mains += 1
        else:
            # After every main slice before it, then lag more.
            keys.append(mains - 1 + lag + 0.5)
    return [piece for _, piece in sorted(zip(keys, plan), key=lambda kp: kp[0])]


def evaluate_slice(reader: IndexReader, piece: TimeSlice, pattern: SequencePattern,
                   strategy: str = "selectivity"
                   ) -> tuple[list[tuple[tuple[Any, ...], float, int, int]], QueryStats]:
    """Answer rows ``(event ids, confidence, t_first, t_last)`` of the tuples anchored in
    the slice, and the evaluation counters (with the shards it opened). ``pattern`` is
    bound to the index's time axis (:func:`~uncertain_cep.query.language.parse.bind_query`,
    on the driver: the query is parsed once)."""
    with slice_context(reader, piece, pattern, strategy) as (ctx, index):
        answer = evaluate(ctx, strategy)
        ids = index.archive.event_ids[answer.events].tolist()
    rows = list(zip(map(tuple, ids), answer.confidence.tolist(), answer.t_first.tolist(),
                    answer.t_last.tolist()))
    return rows, ctx.stats


@contextlib.contextmanager
def slice_context(reader: IndexReader, piece: TimeSlice, pattern: SequencePattern,
                  strategy: str = "selectivity", *, explain: bool = False
                  ) -> Iterator[tuple[QueryContext, EventIndex]]:
    """The query context of the tuples anchored in the slice (its searches bounded by
    the slice's span, the shards it opens in its counters) and the index it searches
    (of a sharded index, the shards the span meets), for the caller to evaluate in the
    block (with a sink of its own, if any; ``explain``: recording its steps); the
    answer's rows are rows of that index.
    When the block ends the pages the evaluation touched are let go."""
    if strategy not in SLICE_STRATEGIES:
        raise PlanningError(f"strategy {strategy!r} needs the whole index; with the Spark "
                            f"engine choose one of: {', '.join(map(repr, SLICE_STRATEGIES))}")
    # Of a sharded index, the shards the slice's span meets (its tuples and every event
    # standing in their negation gaps lie in that span).
    # A remote index: this host's mirror of the version the driver opened.
    reader = reader.on_this_host()
    shards = reader.shards_meeting(piece.lo, piece.need_hi)
    # Events meeting the span: t_hi >= lo and t_lo <= latest + halo, in integers.
    span = (piece.lo, piece.latest + math.floor(piece.halo)) if math.isfinite(piece.halo) \
        else None
    index = opened_index(reader, shards, span)
    ctx = QueryContext(index, pattern, explain=explain)
    ctx.stats.strategy = strategy
    if reader.manifest.is_sharded:
        ctx.stats.shards_read = list(shards)
        ctx.stats.shards = len(reader.manifest.shards)
    # Every tuple's first event anchored in this slice; every event it meets is at most
    # a window after that one's latest instant, so searches stop at the halo.
    ctx.anchors = (piece.lo, piece.hi)
    ctx.span = (piece.lo, piece.need_hi)
    try:
        yield ctx, index
    finally:
        # The worker keeps the index open for its next slice, not the pages this one
        # touched (they stay in the host's page cache): its memory does not grow slice
        # by slice.
        release_mapped_pages(index_columns(index))


def _check_unchanged(reader: IndexReader) -> None:
    if not reader.holds_its_manifest():
        raise IndexFormatError(f"{reader.root} was rebuilt while the query ran; run the "
                               "query again")


def opened_index(reader: IndexReader, shards: list[int] | None = None,
                 span: tuple[int, int] | None = None) -> EventIndex:
    """The index ``reader`` checked, opened once per process (a Spark executor's Python
    worker answers its later slices and queries from the same open index). Of a sharded
    index: the one shard of ``shards`` from its own working copy; of several, where
    ``span`` (the instants the slice's events meet) holds few events, an index of those
    events in memory (:func:`~uncertain_cep.pipeline.seam_index.seam_index`); else those
    shards side by side, or the whole index where the host's cache can hold its working
    copy (:func:`~uncertain_cep.index.store.working_copy.holds_whole`).

    Every call checks that the directory still holds the manifest ``reader`` checked (by
    content, so on any host of a shared filesystem): all slices of a query answer from
    one version of the index, and a rebuild meanwhile is an IndexFormatError."""
    wanted: tuple[int, ...] | None = None
    if shards is not None and reader.manifest.is_sharded:
        if len(shards) == 1:
            wanted = (shards[0],)
        elif span is not None and (seam := seam_index(
                reader, shards, *span, lambda k: _opened(reader, (k,)))) is not None:
            _check_unchanged(reader)
            return seam
        elif not holds_whole(reader.manifest):
            # Where the host's cache can hold the whole index's working copy, every such
            # slice maps that one (made once per host, shared by its processes, kept for
            # the next query); else the shards asked for, side by side.
            wanted = tuple(shards)
            _check_side_by_side(reader, wanted, span)
    index = _opened(reader, wanted)
    # Checked after loading too: a rebuild during the load is caught here.
    _check_unchanged(reader)
    return index


def _check_side_by_side(reader: IndexReader, wanted: tuple[int, ...],
                        span: tuple[int, int] | None) -> None:
    """Refuse, before anything is written, shards side by side whose working copy the
    host's cache cannot hold (a window longer than several shards, or none: a 100M-event
    index's 26 shards side by side took 45 GB and filled the disk)."""
    records = [reader.manifest.shards[k] for k in wanted]
    counts = IndexCounts(*(sum(getattr(r.counts, f) for r in records)
                           for f in ("events", "groups", "trees", "nodes")))
    need = copy_bytes(counts, len(reader.manifest.schema))
    if need > cache_limit():
        why = ("the query has no WITHIN" if span is None
               else f"its events meet instants {span[0]} to {span[1]}")
        raise PlanningError(
            f"a time slice of this query needs {len(wanted)} of the index's "
            f"{len(reader.manifest.shards)} shards at once (shards {wanted[0]} to "
            f"{wanted[-1]}: {why}): their working copy side by side would take about "
            f"{need / 2**30:.1f} GiB, more than the cache's limit of "
            f"{cache_limit() / 2**30:.1f} GiB (${LIMIT_ENV}); give a WITHIN shorter than "
            f"a shard's time span, or raise ${LIMIT_ENV} where the disk holds that much")


def _opened(reader: IndexReader, wanted: tuple[int, ...] | None) -> EventIndex:
    """The index (its shards ``wanted``, or all) opened in this process, kept for the
    next slice; two at most (a seam's shards): a worker that moves on lets the oldest
    go."""
    key = (str(reader.root), reader.manifest, wanted)
    index = _OPENED.pop(key, None)
    if index is None:
        # One shard of an index whose shard copies the cache cannot keep: its node table
        # in memory, not written to be evicted (working_copy.node_tables_thrash), and
        # the only one this worker holds (each is a shard's whole node table).
        in_memory = wanted is not None and len(wanted) == 1 and \
            node_tables_thrash(reader.manifest)
        if in_memory:
            # This process expands shard after shard: their arrays reuse the freed
            # memory of the last instead of fresh pages (3.0 s a slice against 3.9).
            keep_freed_arrays()
        # Freed at once: nothing holds an index in a reference cycle (the query engine
        # did, and a worker kept every shard's node table it had let go until the cycle
        # collector ran: 1.6 GB each at 100M, the next taking 13 s to expand instead of
        # 4; tests/pipeline/test_seam_index.py checks it with the collector off).
        while len(_OPENED) >= (1 if in_memory else _KEPT_OPEN):
            del _OPENED[next(iter(_OPENED))]
        index = reader.load(shards=wanted, node_table_in_memory=in_memory)
    _OPENED[key] = index
    return index


_OPENED: dict[tuple[str, object, tuple[int, ...] | None], EventIndex] = {}
_KEPT_OPEN = 2
