"""A sharded index too large to map whole, queried in this process slice by slice.

The local engine maps an index's working copy. A sharded index whose copy the cache
cannot hold (:func:`~uncertain_cep.index.store.working_copy.holds_whole`: at 100M
events, 26 shards whose copies side by side took 45 GB against a 20 GiB cache, and
filled the disk) is answered here as the Spark engine answers it, by the time slices
that follow its shards (:func:`~uncertain_cep.pipeline.time_slices.plan_slices`), one
after another: a main slice maps one shard's events, with the node table of the groups
its query meets expanded in memory; a seam's few events are indexed in memory. The
slices' answers are disjoint and together the whole answer (a tuple belongs to the
slice of its first event's earliest instant), so the rows, their order, ``limit``,
``max_rows``, counts and streamed parts are those of the whole index.

What needs the whole index at once (``describe()``, ``forest()``, the ``archive``, the
baselines ``tree_traversal`` and ``possible_worlds``, ``save``) is refused with an
error that says how to get it (a larger cache limit).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from uncertain_cep.errors import AnswerTooLargeError, PlanningError
from uncertain_cep.index.event_index import EventIndex
from uncertain_cep.index.store.reader import IndexReader
from uncertain_cep.index.store.working_copy import LIMIT_ENV, cache_limit, copy_bytes
from uncertain_cep.model.events import Archive
from uncertain_cep.query.evaluation.answer import Answer, best_rows, ranked
from uncertain_cep.query.evaluation.answer_sinks import (
    AllRows,
    CountedRows,
    StreamedRows,
    over_budget,
)
from uncertain_cep.query.evaluation.context import QueryContext
from uncertain_cep.query.evaluation.stats import QueryStats
from uncertain_cep.query.language.patterns import SequencePattern
from uncertain_cep.query.strategies import evaluate

__all__ = ["SlicedAnswer", "SlicedIndex", "answers_by_slices"]


def answers_by_slices(reader: IndexReader) -> bool:
    """Whether the local engine answers the index ``reader`` opened slice by slice: a
    sharded index whose working copy the cache cannot hold."""
    from uncertain_cep.index.store.working_copy import holds_whole

    return reader.manifest.is_sharded and not holds_whole(reader.manifest)


class SlicedAnswer(NamedTuple):
    """Answer rows gathered from slices: ``answer.events`` are positions in ``ids`` (the
    event ids the rows hold, an event of two slices twice), ``t_lo``/``t_hi`` those
    events' intervals, ``weights`` the instant weights of the weighted ones (by id)."""

    answer: Answer
    ids: np.ndarray
    t_lo: np.ndarray
    t_hi: np.ndarray
    weights: dict[Any, list[float]]


class SlicedIndex:
    """The queries of a sharded index, answered slice by slice (module docstring).

    >>> import tempfile
    >>> import uncertain_cep as uc
    >>> from uncertain_cep.datasets.synthetic import generate_synthetic
    >>> from uncertain_cep.index.store.reader import open_reader
    >>> idx = uc.build_index(generate_synthetic(300, groups=3, seed=1))
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     idx.save(tmp + "/ix", shard_events=100)
    ...     sliced = SlicedIndex(open_reader(tmp + "/ix"))
    ...     q = uc.parse_query("PATTERN SEQ(A, B) DEFINE A AS a0 > 0.9, B AS a0 < 0.1 "
    ...                        "WITHIN 20")
    ...     sliced.count(q, "selectivity") == idx.count(q)
    True
    """

    def __init__(self, reader: IndexReader) -> None:
        self.reader = reader
        # Its columns, no rows: the id type and the time axis.
        self.archive: Archive = reader.empty_archive()

    def refusal(self, what: str) -> PlanningError:
        """The error for ``what`` needs the whole index at once."""
        counts = self.reader.manifest.counts
        need = copy_bytes(counts, len(self.reader.manifest.schema))
        return PlanningError(
            f"{what} needs the whole index in this process, and its working copy would "
            f"take about {need / 2**30:.1f} GiB, more than the cache's limit of "
            f"{cache_limit() / 2**30:.1f} GiB (${LIMIT_ENV}): its "
            f"{len(self.reader.manifest.shards)} shards are queried one after another "
            "instead (query, count, iter_query, explain; strategies 'selectivity' and "
            f"'sequential'). Raise ${LIMIT_ENV} where the disk holds the copy to map it "
            "whole, or query it on a cluster (engine='spark')")

    def contexts(self, pattern: SequencePattern, strategy: str, *, explain: bool = False
                 ) -> Iterator[tuple[QueryContext, EventIndex]]:
        """Each slice's query context and the index it searches, in time order (the
        pages it touched let go when the next is asked for)."""
        from uncertain_cep.pipeline.time_slices import (
            SLICE_STRATEGIES,
            plan_slices,
            slice_context,
        )

        if strategy not in SLICE_STRATEGIES:
            raise self.refusal(f"the strategy {strategy!r}")
        # About one slice a shard: each main slice maps one shard at a time.
        for piece in plan_slices(self.reader, pattern.window, len(self.reader.manifest.shards)):
            with slice_context(self.reader, piece, pattern, strategy,
                               explain=explain) as (ctx, index):
                yield ctx, index

    def answer(self, pattern: SequencePattern, strategy: str, *, max_rows: int | None,
               explain: bool = False) -> tuple[SlicedAnswer, QueryStats]:
        """The whole answer (of a ``LIMIT``, its best rows), at most ``max_rows`` rows
        (an AnswerTooLargeError past them), and the slices' counters merged."""
        started = time.perf_counter()
        k = len(pattern.positive_items)
        parts: list[SlicedAnswer] = []
        stats: list[QueryStats] = []
        found = 0
        for ctx, index in self.contexts(pattern, strategy, explain=explain):
            if pattern.limit is None:
                ctx.sink = AllRows(None if max_rows is None else max_rows - found)
            try:
                got = evaluate(ctx, strategy)
            except AnswerTooLargeError as e:
                if max_rows is None or e.rows is None:
                    raise
                # Past what the budget left this slice: the whole answer's count.
                raise over_budget(found + e.rows, max_rows) from None
            found += len(got)
            if max_rows is not None and pattern.limit is None and found > max_rows:
                raise over_budget(found, max_rows)
            parts.append(_gathered(got, index.archive))
            stats.append(ctx.stats)
            if pattern.limit is not None and len(parts) > 1:
                # The best rows so far: what the next slices must beat.
                parts = [_best(_joined(parts, k), pattern.limit)]
        merged = _joined(parts, k)
        if pattern.limit is not None:
            merged = _best(merged, pattern.limit)
        return merged, _merged_stats(stats, strategy, started)

    def count(self, pattern: SequencePattern, strategy: str) -> int:
        """The answer's number of rows (of a ``LIMIT``, at most it), no row made."""
        rows = 0
        for ctx, _ in self.contexts(dataclasses.replace(pattern, limit=None), strategy):
            ctx.sink = CountedRows()
            evaluate(ctx, strategy)
            rows += ctx.sink.rows
        return rows if pattern.limit is None else min(rows, pattern.limit)

    def feed(self, pattern: SequencePattern, strategy: str,
             deliver: Callable[[pa.RecordBatch], None], rows: int,
             to_batch: Callable[[Answer, np.ndarray], pa.RecordBatch]) -> QueryStats:
        """Hand the answer to ``deliver`` as record batches of up to ``rows`` rows as the
        slices find it (of a ``LIMIT``, its best rows once every slice is done);
        ``to_batch(answer, event_ids)`` makes one, sorted. The counters, merged."""
        started = time.perf_counter()
        if pattern.limit is not None:
            best, stats = self.answer(pattern, strategy, max_rows=None)
            ordered = best.answer.take(ranked(best.answer, best.ids))
            for start in range(0, len(ordered), rows):
                deliver(to_batch(ordered.rows(start, start + rows), best.ids))
            return stats
        parts = []
        for ctx, index in self.contexts(pattern, strategy):
            # Made into batches at once: the slice's index is let go after it.
            ctx.sink = StreamedRows(_batches_to(deliver, to_batch, index.archive.event_ids),
                                    rows)
            evaluate(ctx, strategy)
            parts.append(ctx.stats)
        return _merged_stats(parts, strategy, started)


def _batches_to(deliver: Callable[[pa.RecordBatch], None],
                to_batch: Callable[[Answer, np.ndarray], pa.RecordBatch],
                event_ids: np.ndarray) -> Callable[[Answer], None]:
    def handed(answer: Answer) -> None:
        deliver(to_batch(answer, event_ids))

    return handed


def _gathered(answer: Answer, archive: Archive) -> SlicedAnswer:
    """A slice's answer (rows of its index) with what the rows need copied out of it."""
    rows, position = np.unique(answer.events, return_inverse=True)
    events = position.reshape(answer.events.shape).astype(np.int64, copy=False)
    ids = np.asarray(archive.event_ids[rows])
    weights: dict[Any, list[float]] = {}
    drawn = archive.instant_weights
    if drawn is not None:
        shown = rows[drawn.weighted[rows]]
        for key, r in zip(archive.event_ids[shown].tolist(), shown.tolist()):
            weights[key] = drawn.values[drawn.start[r]:drawn.start[r + 1]].tolist()
    return SlicedAnswer(dataclasses.replace(answer, events=events, ids=None), ids,
                        np.array(archive.t_lo[rows]), np.array(archive.t_hi[rows]), weights)


def _joined(parts: list[SlicedAnswer], k: int) -> SlicedAnswer:
    """The slices' rows as one answer over their ids, one after another."""
    if len(parts) == 1:
        return parts[0]
    offsets = np.cumsum([0] + [len(p.ids) for p in parts[:-1]])
    answers = [dataclasses.replace(p.answer, events=p.answer.events + offset)
               for p, offset in zip(parts, offsets)]
    kinds = {p.ids.dtype for p in parts if len(p.ids)}
    ids = (np.concatenate([p.ids for p in parts]) if len(kinds) <= 1
           else np.concatenate([p.ids.astype(object) for p in parts]))
    return SlicedAnswer(Answer.concat(answers, k), ids,
                        np.concatenate([p.t_lo for p in parts]),
                        np.concatenate([p.t_hi for p in parts]),
                        {key: w for p in parts for key, w in p.weights.items()})


def _best(part: SlicedAnswer, limit: int) -> SlicedAnswer:
    """The first ``limit`` rows of the answer's order (in no particular order)."""
    if len(part.answer) <= limit:
        return part
    return SlicedAnswer(part.answer.take(best_rows(part.answer, part.ids, limit)), *part[1:])


def _merged_stats(parts: list[QueryStats], strategy: str, started: float) -> QueryStats:
    stats = QueryStats.merged(parts, engine="local", seconds=time.perf_counter() - started)
    stats.strategy = strategy
    return stats
