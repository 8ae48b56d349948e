"""The public Python API: build an index, query it, save and reopen it.

>>> import pandas as pd
>>> import uncertain_cep as uc
>>> df = pd.DataFrame({"event_id": ["a", "b", "c"], "group": ["p", "p", "q"],
...                    "t_lo": [1, 1, 2], "t_hi": [2, 2, 3], "x": [1.0, 5.0, 9.0]})
>>> idx = uc.build_index(df)
>>> idx.query("PATTERN SEQ(A, B) DEFINE A AS x < 2, B AS x > 4 CONFIDENCE 0.3")
   events  confidence  t_first  t_last
0  (a, c)        0.75        1       3
1  (a, b)        0.50        1       2
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

import numpy as np
import pandas as pd
import pyarrow as pa

from uncertain_cep.answer_streams import (
    DEFAULT_BATCH_ROWS,
    DEFAULT_PART_ROWS,
    ROW_GROUP_ROWS,
    AnswerBatches,
    AnswerParts,
    StreamedAnswer,
    answer_record_batch,
    answer_schema,
)
from uncertain_cep.errors import (
    AnswerTooLargeError,
    InputError,
    ParamEnum,
    QueryError,
)
from uncertain_cep.index.event_index import EventIndex
from uncertain_cep.index.forests.forest import GroupForest
from uncertain_cep.index.group_build import BuildSettings
from uncertain_cep.index.summary import IndexSummary
from uncertain_cep.model.events import Archive, read_archive
from uncertain_cep.model.feasibility import MaxSpeed, PairConstraint, PairPredicate
from uncertain_cep.model.time_axis import TimeAxis
from uncertain_cep.query.evaluation.answer import (
    Answer,
    answer_table,
    distinct_events,
    ranked,
    table_from_rows,
)
from uncertain_cep.query.evaluation.answer_sinks import (
    DEFAULT_MAX_ROWS,
    AllRows,
    CountedRows,
    StreamedRows,
)
from uncertain_cep.query.evaluation.chains import order_instance_fraction
from uncertain_cep.query.evaluation.context import QueryContext
from uncertain_cep.query.evaluation.explain import Explanation
from uncertain_cep.query.evaluation.stats import QueryStats
from uncertain_cep.query.language.parse import bind_query
from uncertain_cep.query.language.patterns import SequencePattern, with_limit
from uncertain_cep.query.strategies import StrategyName, evaluate
from uncertain_cep.results import QueryResult
from uncertain_cep.sliced_index import SlicedIndex, answers_by_slices

if TYPE_CHECKING:
    from uncertain_cep.index.store.manifest import Manifest

_log = logging.getLogger(__name__)

__all__ = ["EngineName", "UncertainIndex", "answer_frame", "build_index", "copy_index",
           "open_index", "query_index"]

class UncertainIndex:
    """An archive of uncertain events with its OI-tree forests and R*-tree.

    Build one with :func:`build_index`, reopen a saved one with :func:`open_index`.
    """

    def __init__(self, index: EventIndex | Callable[[], tuple[EventIndex, Mapping[str, Any]]],
                 provenance: Mapping[str, Any] | None = None, *,
                 opened: str | None = None, sliced: SlicedIndex | None = None) -> None:
        # An index opened from disk is mapped when first used (its first query), so that
        # opening reads its manifest only: ``index`` is then what maps it, giving the
        # provenance of what it mapped (a rebuild since the open is mapped whole, new).
        self._loaded = index if isinstance(index, EventIndex) else None
        self._load = None if isinstance(index, EventIndex) else index
        self._load_lock = threading.Lock()
        # What repr() says of an index not yet mapped (from its manifest).
        self._opened = opened
        # Where a reopened index came from (see IndexSummary.provenance); None if built here.
        self._provenance = dict(provenance) if provenance else None
        # A sharded index too large to map whole: its queries answered shard by shard.
        self._sliced = sliced

    @property
    def _index(self) -> EventIndex:
        """The index, mapped now if it was opened and not yet used."""
        if self._loaded is None:
            if self._sliced is not None:
                raise self._sliced.refusal(
                    "describe(), forest(), order_instance_fraction(), save(), .archive "
                    "and .event_index")
            with self._load_lock:
                if self._loaded is None:
                    assert self._load is not None
                    index, provenance = self._load()
                    self._provenance = dict(provenance)
                    self._loaded, self._load = index, None
        return self._loaded

    # ------------------------------------------------------------ description
    @property
    def archive(self) -> Archive:
        return self._index.archive

    @property
    def event_index(self) -> EventIndex:
        """The underlying index: forests, R*-tree and statistics."""
        return self._index

    @property
    def settings(self) -> BuildSettings:
        return self._index.settings

    @property
    def n_events(self) -> int:
        if self._sliced is not None:
            return self._sliced.reader.manifest.counts.events
        return self.archive.n_events

    @property
    def n_groups(self) -> int:
        if self._sliced is not None:
            return self._sliced.reader.manifest.counts.groups
        return self.archive.n_groups

    @property
    def n_nodes(self) -> int:
        if self._sliced is not None:
            return self._sliced.reader.manifest.counts.nodes
        return self._index.n_nodes

    @property
    def n_trees(self) -> int:
        if self._sliced is not None:
            return self._sliced.reader.manifest.counts.trees
        return self._index.n_trees

    @property
    def _time_axis(self) -> TimeAxis | None:
        return (self._sliced.archive if self._sliced is not None else self.archive).time_axis

    def __repr__(self) -> str:
        if self._loaded is None and self._opened is not None:
            return self._opened
        return (f"<UncertainIndex: {self.n_events} events, {self.n_groups} groups, "
                f"{self.n_trees} OI-trees, {self.n_nodes} nodes, codes={self.settings.codes!r}>")

    def describe(self) -> IndexSummary:
        """A summary of the index: groups, events, OI-trees and nodes (Zhou et al. 4.1),
        the largest tree, the code and time ranges, attributes, build parameters, and per
        group its events and nodes (:class:`~uncertain_cep.index.summary.IndexSummary`).

        Read from what the index holds, without rebuilding trees; an index built here and
        the same index reopened with :func:`open_index` give equal summaries (only
        ``provenance``, which is not compared, says where a reopened one came from).

        >>> import pandas as pd
        >>> idx = build_index(pd.DataFrame({"event_id": [1, 2], "group": 0,
        ...                                 "t_lo": [1, 1], "t_hi": [2, 2]}))
        >>> s = idx.describe()
        >>> s.n_events, s.n_nodes, s.largest_tree
        (2, 5, (0, 0, 5))
        """
        return IndexSummary.of(self._index, self._provenance)

    def forest(self, group: object) -> GroupForest:
        """The OI-tree forest of one group (by its key): trees, nodes, codes."""
        return self._index.forests[self._group_code(group)]

    def _group_code(self, group: object) -> int:
        hits = np.flatnonzero(self.archive.group_labels == group)
        if len(hits) == 0:
            raise InputError(f"no dependency group {group!r} in the index")
        return int(hits[0])

    def _row(self, event_id: object) -> int:
        hits = np.flatnonzero(self.archive.event_ids == event_id)
        if len(hits) == 0:
            raise InputError(f"no event {event_id!r} in the index")
        return int(hits[0])

    # ------------------------------------------------------------ queries
    @overload
    def query(self, query: str | SequencePattern, strategy: str = ..., *,
              limit: int | None = ..., max_rows: int | None = ..., out: None = ...,
              part_rows: int = ...) -> QueryResult: ...

    @overload
    def query(self, query: str | SequencePattern, strategy: str = ..., *,
              limit: int | None = ..., max_rows: int | None = ...,
              out: str | os.PathLike[str], part_rows: int = ...) -> StreamedAnswer: ...

    def query(self, query: str | SequencePattern, strategy: str = "selectivity", *,
              limit: int | None = None, max_rows: int | None = DEFAULT_MAX_ROWS,
              out: str | os.PathLike[str] | None = None,
              part_rows: int = DEFAULT_PART_ROWS) -> QueryResult | StreamedAnswer:
        """Every tuple whose confidence reaches the query's threshold (or the ``limit``
        most confident).

        Parameters
        ----------
        query
            Query text (SEMANTICS C, part A) or a
            :class:`~uncertain_cep.query.language.patterns.SequencePattern`.
        strategy
            ``"selectivity"`` (default: rarest item first, Zhou et al. 5.2),
            ``"sequential"`` (items in pattern order, 5.1), or the baselines
            ``"tree_traversal"`` and ``"possible_worlds"``. Strategies never change the
            answer; ``res.stats`` shows what each did.
        limit
            Only the answer's first ``limit`` rows (the most confident; ties broken by
            event ids as in the full answer): ``LIMIT k`` at the end of the query text
            says the same. The batch engine raises its pruning threshold to the k-th
            row's confidence as it finds better rows (EXPLAIN shows the rises).
        max_rows
            The most rows the answer table may hold (default 5,000,000; None: no
            budget). A query that finds more stops with an
            :class:`~uncertain_cep.errors.AnswerTooLargeError` saying how many it found;
            ask for the best rows (``limit``), their number (:meth:`count`), or all of
            them written as found (``out=``) instead.
        out, part_rows
            Write the answer as it is found to a directory of Parquet parts of up to
            ``part_rows`` rows (default 1,000,000; row groups of up to 100,000) and
            return a
            :class:`~uncertain_cep.answer_streams.StreamedAnswer` (rows, path,
            counters), never the rows: memory does not grow with the answer, and
            ``max_rows`` does not apply. Rows are in the answer's order within each
            row group, not across them; ``uc.read_answer(out)`` reads it back sorted. The
            directory appears only once complete (Ctrl-C or an error leaves none).

        Returns
        -------
        QueryResult
            A DataFrame with one row per tuple: ``events`` (event ids in pattern order),
            ``confidence``, ``t_first``, ``t_last``; sorted by confidence descending, then
            by event ids. ``t_first``/``t_last`` are instants, or for an archive whose
            times were datetimes the start of those instants as datetimes in the input's
            time zone. ``res.stats`` holds the evaluation counters
            (:class:`~uncertain_cep.query.evaluation.stats.QueryStats`); in Jupyter
            it shows as a compact table, and ``res.plot()`` draws the matched events'
            possible times (:class:`~uncertain_cep.results.QueryResult`).
        """
        if out is not None:
            return self._stream_to(out, query, strategy, limit, part_rows)
        return self._evaluate(query, strategy, explain=False, limit=limit,
                              max_rows=_checked_max_rows(max_rows))

    def iter_query(self, query: str | SequencePattern, strategy: str = "selectivity", *,
                   batch_rows: int = DEFAULT_BATCH_ROWS, limit: int | None = None
                   ) -> Iterator[pa.RecordBatch]:
        """The answer's rows as pyarrow record batches of up to ``batch_rows`` rows,
        yielded as the search finds them (for pipelines that consume them: memory does
        not grow with the answer). Columns as in a streamed answer
        (:mod:`~uncertain_cep.answer_streams`); rows in the answer's order within a
        batch, not across batches. The search runs in a thread of its own, at most two
        batches ahead; leaving the loop early (or Ctrl-C) stops it.

        >>> import pandas as pd
        >>> idx = build_index(pd.DataFrame({"event_id": [1, 2, 3], "group": 0,
        ...                                 "t_lo": 0, "t_hi": 2}))
        >>> [b.num_rows for b in idx.iter_query("PATTERN SEQ(A, B)", batch_rows=4)]
        [4, 2]
        """
        _check_rows(batch_rows, "batch_rows")
        pattern = self._bound(query, limit)
        if self._sliced is not None:
            sliced, name = self._sliced, self._strategy(strategy)
            to_batches = self._sliced_batches(pattern, query)
            def search(deliver: Callable[[pa.RecordBatch], None]) -> None:
                sliced.feed(pattern, name, deliver, batch_rows, to_batches)

            return iter(AnswerBatches(search, None))
        ctx = self._context(pattern, strategy, explain=False)
        to_batch = self._batches_of(pattern, query)

        return iter(AnswerBatches(lambda deliver: _feed(ctx, deliver, batch_rows), to_batch))

    def _batches_of(self, pattern: SequencePattern, query: str | SequencePattern
                    ) -> Callable[[Answer], pa.RecordBatch]:
        """Answer rows to record batches of the answer's Arrow schema, sorted."""
        to_batches = self._batches_over(self.archive, pattern, query)
        return lambda answer: to_batches(answer, self.archive.event_ids)

    def _sliced_batches(self, pattern: SequencePattern, query: str | SequencePattern
                        ) -> Callable[[Answer, np.ndarray], pa.RecordBatch]:
        assert self._sliced is not None
        return self._batches_over(self._sliced.archive, pattern, query)

    @staticmethod
    def _batches_over(archive: Archive, pattern: SequencePattern,
                      query: str | SequencePattern
                      ) -> Callable[[Answer, np.ndarray], pa.RecordBatch]:
        """Rows of ``event_ids`` to record batches of the answer's Arrow schema over the
        columns of ``archive`` (the id type, the time axis), sorted."""
        schema = answer_schema(archive.event_ids, _item_symbols(pattern), archive.time_axis,
                               query if isinstance(query, str) else str(pattern))
        # Each part or batch in the answer's order (the search hands them over as found).
        return lambda answer, ids: answer_record_batch(
            answer.take(ranked(answer, ids)), ids, schema, archive.time_axis)

    def _stream_to(self, out: str | os.PathLike[str], query: str | SequencePattern,
                   strategy: str, limit: int | None, part_rows: int) -> StreamedAnswer:
        """The answer written to ``out`` as Parquet parts while it is found."""
        _check_rows(part_rows, "part_rows")
        if not isinstance(out, str | os.PathLike):
            raise InputError(f"out= takes the path of a directory, got {type(out).__name__}")
        pattern = self._bound(query, limit)
        rows = min(part_rows, ROW_GROUP_ROWS)
        empty = Answer.concat([], len(pattern.positive_items))
        if self._sliced is not None:
            sliced, name = self._sliced, self._strategy(strategy)
            to_batches = self._sliced_batches(pattern, query)
            parts = AnswerParts(out, to_batches(empty, sliced.archive.event_ids).schema,
                                None, part_rows)
            def search() -> QueryStats:
                return sliced.feed(pattern, name, parts.write, rows, to_batches)
        else:
            ctx = self._context(pattern, strategy, explain=False)
            to_batch = self._batches_of(pattern, query)
            parts = AnswerParts(out, to_batch(empty).schema, to_batch, part_rows)
            def search() -> QueryStats:
                _feed(ctx, parts.write, rows)
                return ctx.stats
        try:
            stats = search()
            parts.commit()
        except BaseException:
            parts.discard()
            raise
        _log.info("answer streamed to %s: %d rows in %d Parquet parts, %.1f s", out,
                  parts.rows, parts.parts, stats.seconds)
        return StreamedAnswer(Path(out), parts.rows, parts.parts,
                              query if isinstance(query, str) else str(pattern), stats)

    def count(self, query: str | SequencePattern, strategy: str = "selectivity") -> int:
        """The number of rows :meth:`query` would answer, found without making any row
        of the answer table (nor holding the rows: memory does not grow with them).

        >>> import pandas as pd
        >>> idx = build_index(pd.DataFrame({"event_id": [1, 2, 3], "group": 0,
        ...                                 "t_lo": [0, 0, 0], "t_hi": [2, 2, 2]}))
        >>> idx.count("PATTERN SEQ(A, B)"), len(idx.query("PATTERN SEQ(A, B)"))
        (6, 6)
        """
        pattern = self._bound(query, None)
        if self._sliced is not None:
            return self._sliced.count(pattern, self._strategy(strategy))
        ctx = self._context(pattern, strategy, explain=False)
        ctx.sink = CountedRows()
        evaluate(ctx, ctx.stats.strategy)
        rows = ctx.sink.rows
        return rows if pattern.limit is None else min(rows, pattern.limit)

    def explain(self, query: str | SequencePattern, strategy: str = "selectivity", *,
                limit: int | None = None) -> Explanation:
        """Evaluate ``query`` and report what the strategy did: the order items were
        matched in, estimated vs actual candidates per step, entries created (the paper's
        xi), range queries and time per step (:mod:`uncertain_cep.query.evaluation.explain`).

        >>> import pandas as pd
        >>> idx = build_index(pd.DataFrame({"event_id": [1, 2], "group": 0,
        ...     "t_lo": [0, 2], "t_hi": [1, 3], "x_lo": [0.0, 5.0], "x_hi": [1.0, 6.0]}))
        >>> ex = idx.explain("PATTERN SEQ(A, B) DEFINE A AS x < 2, B AS x > 4")
        >>> ex.rows, ex.order
        (1, ['A@1', 'B@2'])
        """
        answer = self._evaluate(query, strategy, explain=True, limit=limit, max_rows=None)
        return Explanation(answer.query_text, len(answer), answer.stats, answer)

    def _bound(self, query: str | SequencePattern, limit: int | None) -> SequencePattern:
        """The query parsed, its window in the index's instants (an error can point at
        WITHIN here, where the text is at hand), ``limit`` in it."""
        if not isinstance(query, str | SequencePattern):
            raise QueryError(f"a query is query text or a SequencePattern, got "
                             f"{type(query).__name__}")
        return with_limit(bind_query(query, self._time_axis), limit)

    @staticmethod
    def _strategy(strategy: str) -> str:
        return StrategyName(StrategyName.get_value(strategy)).value

    def _context(self, pattern: SequencePattern, strategy: str, explain: bool
                 ) -> QueryContext:
        ctx = QueryContext(self._index, pattern, explain=explain)
        ctx.stats.strategy = self._strategy(strategy)
        if self._provenance and "shards" in self._provenance:
            # Opened in this process, a sharded index holds all its shards.
            ctx.stats.shards = int(self._provenance["shards"])
            ctx.stats.shards_read = list(range(ctx.stats.shards))
        return ctx

    def _evaluate(self, query: str | SequencePattern, strategy: str, explain: bool,
                  limit: int | None, max_rows: int | None) -> QueryResult:
        pattern = self._bound(query, limit)
        if self._sliced is not None:
            return self._sliced_result(query, pattern, strategy, explain, max_rows)
        ctx = self._context(pattern, strategy, explain)
        if pattern.limit is None:
            ctx.sink = AllRows(max_rows)
        ctx.table_ids = self.archive.event_ids
        try:
            answer = evaluate(ctx, ctx.stats.strategy)
            frame = answer_table(answer, self.archive.event_ids, self.archive.time_axis)
        except AnswerTooLargeError:
            raise
        except MemoryError as e:
            raise AnswerTooLargeError(
                f"the query ran out of memory ({type(e).__name__}: {e}): its answer or the "
                "candidate tuples it weighs do not fit in this machine's memory; ask for "
                "less (a higher CONFIDENCE, a shorter WITHIN, more selective symbols), or "
                "answer it on a cluster (engine='spark', --engine spark)") from e
        _log.info("query answered: %d rows, %d entries created, %.1f s", len(frame),
                  ctx.stats.entries_created, ctx.stats.seconds)
        rows = distinct_events(answer.events, self.archive.n_events)
        times = dict(zip(self.archive.event_ids[rows].tolist(),
                         zip(self.archive.t_lo[rows].tolist(), self.archive.t_hi[rows].tolist())))
        weights = self.archive.instant_weights
        drawn: dict[Any, list[float]] = {}     # the timeline draws weighted events' weights
        if weights is not None:
            shown = rows[weights.weighted[rows]]
            for key, r in zip(self.archive.event_ids[shown].tolist(), shown.tolist()):
                drawn[key] = weights.values[weights.start[r]:weights.start[r + 1]].tolist()
        return QueryResult.of(frame, query=query if isinstance(query, str) else str(pattern),
                              items=_item_symbols(pattern), event_times=times,
                              stats=ctx.stats, id_dtype=self.archive.event_ids.dtype,
                              time_axis=self.archive.time_axis, event_weights=drawn)

    def _sliced_result(self, query: str | SequencePattern, pattern: SequencePattern,
                       strategy: str, explain: bool, max_rows: int | None) -> QueryResult:
        """:meth:`_evaluate` of an index answered shard by shard."""
        assert self._sliced is not None
        found, stats = self._sliced.answer(pattern, self._strategy(strategy),
                                           max_rows=max_rows, explain=explain)
        axis = self._sliced.archive.time_axis
        frame = answer_table(found.answer, found.ids, axis)
        _log.info("query answered slice by slice: %d rows, %d slices, %.1f s", len(frame),
                  stats.slices, stats.seconds)
        times = dict(zip(found.ids.tolist(), zip(found.t_lo.tolist(), found.t_hi.tolist())))
        return QueryResult.of(frame, query=query if isinstance(query, str) else str(pattern),
                              items=_item_symbols(pattern), event_times=times, stats=stats,
                              id_dtype=self._sliced.archive.event_ids.dtype, time_axis=axis,
                              event_weights=found.weights)

    def order_instance_fraction(self, assignment: Mapping[object, int]) -> float:
        """Fraction of a group's order instances placing each given event at its instant.

        >>> import pandas as pd
        >>> idx = build_index(pd.DataFrame({"event_id": [1, 2], "group": [0, 0],
        ...                                 "t_lo": [1, 1], "t_hi": [2, 2]}))
        >>> idx.order_instance_fraction({1: 1})
        0.5
        """
        rows = [self._row(e) for e in assignment]
        groups = {int(self._index.event_group[r]) for r in rows}
        if len(groups) != 1:
            raise InputError("order_instance_fraction takes events of one dependency group")
        forest = self._index.forests[groups.pop()]
        options = [[int(n) for n in self._index.event_nodes[r] if forest.instant[n] == t]
                   for r, t in sorted(zip(rows, assignment.values()), key=lambda rt: rt[1])]
        return order_instance_fraction(forest, self._index.scheme, options)

    # ------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike[str], *, shard_events: int | None = None) -> None:
        """Write the index to a directory, atomically (see
        :mod:`uncertain_cep.index.store.storage`); with ``shard_events``, an archive of
        more events as shards of about that many, cut by time between its groups'
        clusters (an index read side by side, answering as the whole one)."""
        if shard_events is not None and (isinstance(shard_events, bool)
                                         or not isinstance(shard_events, int)
                                         or shard_events < 1):
            raise InputError(f"shard_events must be a positive int, got {shard_events!r}")
        from uncertain_cep.files import index_location, writing_to
        from uncertain_cep.index.store.remote import save_remote
        from uncertain_cep.index.store.sharded import save_sharded
        from uncertain_cep.index.store.storage import save_index

        location = index_location(path)
        if isinstance(location, str):
            # Another filesystem (s3://, ...): a new version, then the pointer to it.
            save_remote(location, lambda folder: self.save(folder,
                                                           shard_events=shard_events))
            return
        # The draft beside the target is what fails: name the target.
        target = location
        with writing_to(target, "index"):
            if shard_events is not None and self._index.archive.n_events > shard_events:
                save_sharded(self._index, target, shard_events)
            else:
                save_index(self._index, target)


def _feed(ctx: QueryContext, deliver: Callable[[Answer], None], rows: int) -> None:
    """Search, handing the answer to ``deliver`` in chunks of ``rows`` rows as it is
    found (of a LIMIT, its best rows once the search is done)."""
    chunks = StreamedRows(deliver, rows)
    if ctx.pattern.limit is None:
        ctx.sink = chunks
        evaluate(ctx, ctx.stats.strategy)
        return
    chunks.add(evaluate(ctx, ctx.stats.strategy))
    chunks.finish(len(ctx.positive))


def _check_rows(rows: object, name: str, hint: str = "") -> None:
    if isinstance(rows, bool) or not isinstance(rows, int | np.integer) or rows < 1:
        raise InputError(f"{name}= must be a whole number of rows, at least 1{hint}, got "
                         f"{rows!r}")


def _checked_max_rows(max_rows: object) -> int | None:
    if max_rows is None:
        return None
    _check_rows(max_rows, "max_rows", ", or None (no budget)")
    return int(max_rows)  # type: ignore[call-overload]


def answer_frame(rows: Sequence[tuple[tuple[Any, ...], float, int, int]], *,
                 time_axis: TimeAxis | None = None) -> pd.DataFrame:
    """The answer table from ``(event ids, confidence, t_first, t_last)`` rows (times in
    instants); with the archive's datetime ``time_axis``, times as datetimes."""
    return table_from_rows(rows, time_axis)


@overload
def query_index(path: str | os.PathLike[str], query: str, strategy: str = ..., *,
                engine: str = ..., master: str | None = ..., verify: bool = ...,
                limit: int | None = ..., max_rows: int | None = ..., out: None = ...
                ) -> QueryResult: ...


@overload
def query_index(path: str | os.PathLike[str], query: str, strategy: str = ..., *,
                engine: str = ..., master: str | None = ..., verify: bool = ...,
                limit: int | None = ..., max_rows: int | None = ...,
                out: str | os.PathLike[str]) -> StreamedAnswer: ...


def query_index(path: str | os.PathLike[str], query: str, strategy: str = "selectivity", *,
                engine: str = "local", master: str | None = None,
                verify: bool = False, limit: int | None = None,
                max_rows: int | None = DEFAULT_MAX_ROWS,
                out: str | os.PathLike[str] | None = None
                ) -> QueryResult | StreamedAnswer:
    """Answer a query over a saved index, in this process or on Spark, as a pandas table.

    With ``engine="spark"`` the answer rows and the slices' counters are collected on the
    driver (for notebooks and the command line); :func:`uncertain_cep.query_spark` keeps
    the answer in Spark as a lazy DataFrame.

    Parameters
    ----------
    engine
        ``"local"``: open the index here (:func:`open_index`) and evaluate;
        ``"spark"``: evaluate by time slices in Spark executors, for indexes too large
        for one process. Both give identical answers.
    master
        Spark master URL for the Spark engine (default local mode).
    verify
        Hash every file of the index first (:func:`open_index`; default: the files
        opening reads, on either engine).
    limit, max_rows
        The answer's first ``limit`` rows only; the most rows it may hold
        (:meth:`UncertainIndex.query`; on Spark each time slice keeps its best
        ``limit`` rows and the driver the best of those).
    out
        Write the answer to this directory of Parquet parts instead, and return a
        :class:`~uncertain_cep.answer_streams.StreamedAnswer`: in this process as it is
        found (:meth:`UncertainIndex.query`), on Spark from the executors (the path must
        be one they share). Either reads back with ``uc.read_answer(out)``.
    """
    from uncertain_cep.files import index_location

    path = index_location(path)
    if EngineName.get_value(engine) == "local":
        idx = open_index(path, verify=verify)
        if out is not None:
            return idx.query(query, strategy=strategy, limit=limit, out=out)
        return idx.query(query, strategy=strategy, limit=limit, max_rows=max_rows)
    if out is not None:
        return _spark_answer_to(out, path, query, strategy, master, verify, limit)
    from uncertain_cep.pipeline.query_job import query_spark_collected

    max_rows = _checked_max_rows(max_rows)
    found = query_spark_collected(
        os.fspath(path), query, StrategyName.get_value(strategy), master=master,
        verify=verify, limit=limit)
    if max_rows is not None and len(found.rows) > max_rows:
        raise AnswerTooLargeError(
            f"the answer holds {len(found.rows):,} rows, more than max_rows={max_rows:,}: "
            "ask for the most confident rows (LIMIT k, or limit=k), count them (idx.count), "
            "or write them from the executors (uc.query_spark(...).write.parquet), or raise "
            "max_rows (None: no budget)", rows=len(found.rows))
    axis = found.archive.time_axis
    frame = answer_frame(found.rows, time_axis=axis)
    return QueryResult.of(frame, query=query, items=_item_symbols(found.pattern),
                          stats=found.stats, id_dtype=found.archive.event_ids.dtype,
                          event_times=_stored_event_times(
                              path, {e for r in found.rows for e in r[0]}),
                          time_axis=axis)


def _spark_answer_to(out: str | os.PathLike[str], path: Path | str, query: str,
                     strategy: str, master: str | None, verify: bool, limit: int | None
                     ) -> StreamedAnswer:
    """A Spark answer written by the executors to ``out`` (Parquet, swapped into place
    once complete)."""
    import time

    from uncertain_cep.pipeline.query_job import query_spark, write_answer_directory

    started = time.perf_counter()
    answer = query_spark(os.fspath(path), query, StrategyName.get_value(strategy),
                         master=master, verify=verify, limit=limit)
    rows = write_answer_directory(answer, Path(out))
    parts = sum(1 for p in Path(out).iterdir() if p.name.endswith(".parquet"))
    stats = QueryStats(strategy=StrategyName.get_value(strategy), engine="spark",
                       seconds=time.perf_counter() - started)
    return StreamedAnswer(Path(out), rows, parts, query, stats)


def copy_index(source: str | os.PathLike[str], target: str) -> None:
    """Copy a saved index to object storage: its stored files, every one hashed first,
    uploaded as a new version at the URI ``target`` (``s3://``, ``gs://``, ``abfs://``,
    ``hdfs://``), whose pointer is replaced last (:mod:`uncertain_cep.index.store.remote`).
    Nothing is rebuilt: what a Spark build wrote to a shared path is published as it is.
    """
    import shutil

    from uncertain_cep.files import index_location
    from uncertain_cep.index.store.reader import open_reader
    from uncertain_cep.index.store.remote import save_remote

    destination = index_location(target)
    if not isinstance(destination, str):
        raise InputError(f"copy_index writes to object storage (an s3://, gs://, abfs:// or "
                         f"hdfs:// URI), not to {target!r}: copy a local index with cp -r")
    reader = open_reader(index_location(source), verify_all=True)
    reader.shards()         # of a remote sharded index: every shard fetched
    def write(folder: Path) -> None:
        shutil.copytree(reader.root, folder, ignore=shutil.ignore_patterns(".*"))

    save_remote(destination, write)


def _item_symbols(pattern: SequencePattern) -> tuple[str, ...]:
    """The symbols of the positive items, in pattern order (one per event of a tuple)."""
    return tuple(pattern.items[i].symbol for i in pattern.positive_items)


def _stored_event_times(location: Path | str, ids: set[Any]
                        ) -> dict[Any, tuple[int, int]]:
    """``(t_lo, t_hi)`` of the given events, read from a saved index (only their rows)."""
    from uncertain_cep.index.store.reader import open_reader

    return open_reader(location, verify_all=False).event_times(ids) if ids else {}


class EngineName(ParamEnum):
    """Where a query over a saved index runs."""

    local = "local"
    spark = "spark"



def build_index(data: pd.DataFrame | Any | str | os.PathLike[str], group_by: str = "group",
                max_speed: float | MaxSpeed | None = None, *,
                coordinates: Sequence[str] = ("x", "y"),
                pair_predicate: Callable[..., bool] | None = None,
                time_unit: float | str | None = None, multi_tree: bool = True,
                codes: str = "compact", node_budget: int | None = 2_000_000,
                columns: Mapping[str, str] | None = None) -> UncertainIndex:
    """Validate an archive and build its index in this process.

    Parameters
    ----------
    data
        Events (SEMANTICS A1): a pandas DataFrame; any object with the Arrow PyCapsule
        interface (``__arrow_c_stream__``: a pyarrow Table or RecordBatchReader, a polars
        DataFrame, a DuckDB relation such as ``duckdb.sql("SELECT ...")``), read as
        ``pd.read_parquet`` reads the same table; or a Parquet/CSV path.
    group_by
        The dependency-group column.
    max_speed
        Condition 2 as a maximum speed over ``coordinates`` (a number or a ``MaxSpeed``).
    pair_predicate
        Condition 2 as ``f(a, b, ta, tb) -> bool`` instead (see ``PairPredicate``).
    time_unit
        Discretisation of non-integer time columns: a number for numeric times
        (instants are ``floor(t / time_unit)``), a duration such as ``"1s"`` for
        datetimes (whole units since the Unix epoch in UTC). An index built from
        datetimes takes windows with units (``WITHIN 6s``) and answers ``t_first`` and
        ``t_last`` as datetimes in the input's time zone.
    multi_tree, codes, node_budget
        Index layout: multi-tree (default) or single tree; ``"compact"`` or ``"paper"``
        codes; the largest number of nodes one group may need.
    columns
        The input's names for the archive's columns, keys ``event_id``, ``t_lo``,
        ``t_hi`` or ``t``: ``columns={"event_id": "reading_id", "t_lo": "start",
        "t_hi": "end"}``. Messages about those columns name them as the input does.

    Raises
    ------
    InputError
        Input that is not a table or path, a ``columns=`` mapping that names a missing
        column, maps one column to two names or to a name the input already holds, and
        bad rows (naming the event, the row and the column).

    Examples
    --------
    >>> import pyarrow as pa
    >>> readings = pa.table({"reading_id": [1, 2], "group": ["g", "g"],
    ...                      "start": [1, 1], "end": [2, 2]})
    >>> build_index(readings, columns={"event_id": "reading_id", "t_lo": "start",
    ...                                "t_hi": "end"}).n_events
    2
    """
    archive = read_archive(data, group_by=group_by, time_unit=time_unit, columns=columns,
                           weighted=True)
    condition2: PairConstraint | None = None
    if max_speed is not None and pair_predicate is not None:
        raise InputError("give either max_speed or pair_predicate for Condition 2, not both")
    if isinstance(max_speed, MaxSpeed):
        condition2 = max_speed
    elif max_speed is not None:
        condition2 = MaxSpeed(max_speed, tuple(coordinates))
    elif pair_predicate is not None:
        condition2 = PairPredicate(pair_predicate)
    settings = BuildSettings(condition2=condition2, multi_tree=multi_tree, codes=codes,
                             node_budget=node_budget)
    return UncertainIndex(EventIndex(archive, settings))


def open_index(path: str | os.PathLike[str], *, verify: bool = False) -> UncertainIndex:
    """Open an index written by :meth:`UncertainIndex.save` or the Spark build.

    Parameters
    ----------
    path
        The index directory.
    verify
        Hash every file of the index against its manifest, and map it, before returning.
        By default opening reads the manifest only: it checks the manifest and its own
        checksum, that every file is there, and hashes the statistics (and the shards'
        manifests); the index is mapped when first used (its first query, ``describe``,
        ``n_groups``...: on a host without its working copy, the time to make one).
        Mapping hashes every file it maps (the event columns, the R*-tree files, the
        events table when it has text columns: about 0.13 s per GB); the node table's
        columns are hashed and checked (the numbers the compiled kernels index with) when
        the first query needs them; the nodes and trees tables, which only the baselines
        and a save read, are hashed when first read. ``verify=True`` hashes every file at
        once.

    Raises
    ------
    IndexFormatError
        When ``path`` is not an index, or an edited or older one; a damaged file is
        reported when the index is mapped (with ``verify=True``, now).

    Examples
    --------
    >>> import tempfile
    >>> import pandas as pd
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     build_index(pd.DataFrame({"event_id": [1, 2], "group": 0, "t_lo": [1, 1],
    ...                               "t_hi": [2, 2], "x": 0.0})).save(tmp + "/ix")
    ...     idx = open_index(tmp + "/ix")
    ...     before = repr(idx).endswith("mapped at its first query>")
    ...     rows = len(idx.query("PATTERN SEQ(A, B) DEFINE A AS x >= 0, B AS x >= 0"))
    >>> before, rows, idx.n_events
    (True, 2, 2)
    """
    from uncertain_cep.files import index_location
    from uncertain_cep.index.store.reader import load_index_and_manifest, open_reader

    if not isinstance(path, str | os.PathLike):
        raise InputError(f"open_index takes the path of an index directory, got "
                         f"{type(path).__name__}")
    path = index_location(path)
    reader = open_reader(path, verify_all=bool(verify))
    # What describe() reports of where the index came from.
    provenance = {"path": os.fspath(path), **reader.manifest.provenance()}

    def load() -> tuple[EventIndex, dict[str, Any]]:
        index, manifest = load_index_and_manifest(path, verify_all=bool(verify),
                                                  reader=reader)
        return index, {"path": os.fspath(path), **manifest.provenance()}

    sliced = SlicedIndex(reader) if answers_by_slices(reader) else None
    idx = UncertainIndex(load, provenance, opened=_opened_repr(path, reader.manifest, sliced),
                         sliced=sliced)
    if verify and sliced is None:
        _ = idx.event_index     # every file hashed: map them now too, answering at once
    return idx


def _opened_repr(path: Path | str, manifest: Manifest, sliced: SlicedIndex | None) -> str:
    """What an opened index not yet mapped shows of itself (its manifest's counts)."""
    c = manifest.counts
    shards = f", {len(manifest.shards)} shards" if manifest.is_sharded else ""
    how = "queried shard by shard" if sliced is not None else "mapped at its first query"
    return (f"<UncertainIndex {os.fspath(path)}: {c.events} events, {c.trees} OI-trees, "
            f"{c.nodes} nodes{shards}, codes={manifest.settings.codes!r}; {how}>")
