"""The batch engine: a strategy's search run on columns, depth first, in bounded batches.

A strategy only decides, per partial tuple, which positive item to match next
(:class:`~uncertain_cep.query.plan.choosers.ItemChooser`, asked with a
:class:`~uncertain_cep.query.plan.choosers.ChoiceRequest`); the engine does the rest on
whole batches (:mod:`uncertain_cep.query.engine.batches`): windows, candidates, chain
factors, merging, the exact pruning bound, and the answer rows. Batches are cut between
tuples to at most ``limit`` entries (or candidate pairs), and the deepest batch is extended
first, so memory stays bounded on broad queries while every tuple's entries stay together.

Access paths: an item's candidates come from one R*-tree search over its symbol's
attribute box (bulk ``intersection_v``), kept as the item's nodes sorted by instant; each
partial match then finds the nodes in its window by binary search, whatever the number of
groups. Where a window holds many candidates, the nodes of a group the partial match
already holds a node of before the item come from that node's descendant code ranges
instead (Zhou et al. Lemma 2; one archive group with long OI-trees), and those of a group
it holds a node of only after the item from that node's ancestors and the trees hanging
before it. EXPLAIN reports them per step. A batch whose tuples hold many entries each
goes on as tuples, one row per tuple (:mod:`~uncertain_cep.query.engine.tuple_steps`).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import time
import weakref

import numpy as np

from uncertain_cep.progress import progress_bar
from uncertain_cep.query.engine.background import Background, spare_threads
from uncertain_cep.query.engine.batches import (
    Batch,
    CandidateNodes,
    merge,
    prune_bounds,
    split_by_tuples,
    tuple_starts,
    window_bounds,
)
from uncertain_cep.query.engine.completion import Completed
from uncertain_cep.query.engine.inputs import QueryInputs, tuple_item_windows
from uncertain_cep.query.engine.item_windows import item_windows
from uncertain_cep.query.engine.kernels.extension import extended_sums
from uncertain_cep.query.engine.kernels.instants import NO_TIME
from uncertain_cep.query.engine.kernels.negation import negation_factors
from uncertain_cep.query.engine.pieces import BatchPieces
from uncertain_cep.query.engine.step_counts import StepCounter
from uncertain_cep.query.engine.tuple_batches import TupleBatch, tuples_of
from uncertain_cep.query.engine.tuple_steps import extend_tuples
from uncertain_cep.query.evaluation import interrupts
from uncertain_cep.query.evaluation.answer import Answer
from uncertain_cep.query.evaluation.context import TOLERANCE, QueryContext, raise_threshold
from uncertain_cep.query.plan.choosers import ChoiceRequest, ItemChooser

__all__ = ["BATCH_LIMIT", "TUPLE_RATIO", "BatchEngine"]

# Entries (or candidate pairs) per batch: about 100 MB of columns for a 5-item pattern.
BATCH_LIMIT = 1 << 20

# A batch whose tuples hold this many entries each, or more, goes on as tuples (one row
# per tuple, its probability recomputed from its events: query/engine/tuple_batches.py); 0: every
# batch after the first step. Nor fewer than half the square of their events' mean
# number of nodes: a programme's layer extends each class (about one per node of the
# previous event of the group) by every node of the next event. Measured: with 4
# localization groups (4-7 nodes per event), tuples holding 16-43 entries are 4-8x faster
# as tuples; with one group (17-73 nodes), tuples holding 64-117 entries were 2-5x slower.
TUPLE_RATIO = 8

# How many pieces of complete tuples (query/engine/tuple_steps.py, COMPLETION_PIECE) may wait
# for the spare thread: about four batches' worth.
COMPLETION_QUEUE = 32


class BatchEngine(QueryInputs):
    """One query's search over its inputs (:class:`QueryInputs`), with its counters and
    answers so far."""

    def __init__(self, ctx: QueryContext, limit: int | None = None) -> None:
        super().__init__(ctx)
        self.limit = max(int(limit if limit is not None else BATCH_LIMIT), 1)
        self.counter = StepCounter(ctx)
        # The steps' batches extended in bounded pieces (which count the entries that
        # took candidates by code range).
        # Weakly: a cycle would keep the engine, and the index its context holds (a
        # shard's node table, 1.6 GB at 100M), until the cycle collector next ran.
        self.pieces = BatchPieces(weakref.proxy(self), self.limit)
        # Where answers go (every row, the best k, a count: the context's sink).
        self.sink = ctx.sink
        self._progress = progress_bar("query", " entries", disable=True)  # run() shows one
        # Complete tuples to answers, on a spare core (query/engine/background.py); none
        # until run() starts one.
        self.background = Background(0)

    # ------------------------------------------------------------ the search
    def run(self, choose: ItemChooser) -> Answer:
        """Evaluate the pattern, matching items in the order ``choose`` picks."""
        k = self.k
        if self.table.n_nodes == 0:     # an empty archive: no tuple, nothing to look up
            return self._matches()
        start = Batch(np.full((1, k), -1, dtype=np.int64), np.full((1, k), -1, np.int64),
                      np.ones(1))
        stack: list[tuple[Batch | TupleBatch, int]] = [(start, 0)]
        # Entries created so far, on a terminal or in a notebook, once a query runs long.
        self._progress = progress_bar("query", " entries", unit_scale=True)
        self.background = Background(spare_threads(), most_queued=COMPLETION_QUEUE,
                                     check=interrupts.check)
        try:
            with interrupts.deferred_interrupts():
                self._search(stack, choose)
                self._wind_up()
        finally:
            self.background.close()
            self._progress.close()
        return self._matches()

    def _search(self, stack: list[tuple[Batch | TupleBatch, int]], choose: ItemChooser
                ) -> None:
        k = self.k
        while stack:
            interrupts.check()
            self._collect(self.background.finished())
            batch, depth = stack.pop()
            if depth == k:
                assert isinstance(batch, Batch)   # tuples are finished when completed
                self._finish(batch)
                continue
            if isinstance(batch, Batch) and depth > 0 and self._as_tuples(batch):
                # Many entries per tuple: on as tuples, whose programme needs none.
                batch = tuples_of(self.table, batch)
            items, estimated = choose(ChoiceRequest(
                depth, len(batch), self.estimates,
                functools.partial(tuple_item_windows, self, batch), self.ctx.explain))
            if len(items) == 0:
                continue
            if isinstance(batch, TupleBatch):
                self._tuple_step(batch, items, depth, estimated, stack)
                continue
            if items.min() == items.max():
                self._step(batch, int(items[0]), depth, estimated, stack)
                continue
            # One gather, then a slice per item (a stable order keeps tuples contiguous).
            order = np.argsort(items, kind="stable")
            batch, items = batch.take(order), items[order]
            cuts = np.flatnonzero(np.diff(items)) + 1
            for a, b in itertools.pairwise([0, *cuts.tolist(), len(items)]):
                self._step(batch.take(slice(a, b)), int(items[a]), depth, estimated, stack)
                estimated = None   # counted once per step

    def _as_tuples(self, batch: Batch) -> bool:
        """Whether the batch's tuples hold at least ``TUPLE_RATIO`` entries each and at
        least half the square of their events' mean number of nodes."""
        if TUPLE_RATIO == 0:
            return True
        starts = tuple_starts(batch.events)
        per_tuple = len(batch) / max(len(starts), 1)
        if per_tuple < TUPLE_RATIO:
            return False
        events = batch.events[starts]
        events = events[events >= 0]
        nodes = self.table.row_nodes_start[events + 1] - self.table.row_nodes_start[events]
        return bool(per_tuple >= nodes.mean() ** 2 / 2)

    def _step(self, batch: Batch, item: int, depth: int, estimated: float | None,
              stack: list[tuple[Batch | TupleBatch, int]]) -> None:
        started = time.perf_counter()
        queries_before, by_code_before = self.ctx.stats.range_queries, self.pieces.by_code
        tuples, (created, found, kept) = self._extend_entries(batch, item, depth, stack)
        self._count_step({item: tuples}, depth, estimated, created, found, kept, started,
                         queries_before, by_code_before)

    def _tuple_step(self, tuples: TupleBatch, items: np.ndarray, depth: int,
                    estimated: float | None, stack: list[tuple[Batch | TupleBatch, int]]
                    ) -> None:
        started = time.perf_counter()
        queries_before, by_code_before = self.ctx.stats.range_queries, self.pieces.by_code
        order = np.argsort(items, kind="stable")
        tuples, items = tuples.take(order), items[order]
        distinct, counts = np.unique(items, return_counts=True)
        created, found, kept = extend_tuples(self, tuples, items, depth, stack)
        self._count_step(dict(zip(distinct.tolist(), counts.tolist())), depth, estimated,
                         created, found, kept, started, queries_before, by_code_before,
                         as_tuples=len(tuples))

    def _extend_entries(self, batch: Batch, item: int, depth: int,
                        stack: list[tuple[Batch | TupleBatch, int]]
                        ) -> tuple[int, tuple[int, int, int]]:
        """A step on entries: windows, candidates, extension (and the last step's
        sums); returns the tuples extended, and the entries created, the tuples they
        form and what was kept."""
        ctx, table = self.ctx, self.table
        candidates = self.candidates(item)
        lo, hi = item_windows(table, batch, item, ctx.window)
        if self.lookahead is not None:
            lo, hi = self.lookahead.tighten(batch.nodes, table.instant, item, lo, hi,
                                            ctx.window)
        start, stop = window_bounds(candidates, lo, hi)
        weights = np.maximum(stop - start, 0)
        ctx.stats.range_queries += len(batch)
        ctx.stats.candidates += int(weights.sum())
        tuples = len(tuple_starts(batch.events))
        if depth + 1 == self.k and depth > 0:
            finish = self._extend_and_negate if ctx.negations else self._extend_and_finish
            return tuples, finish(batch, item, depth, start, stop, candidates)
        return tuples, self._extend_and_push(batch, item, depth, start, stop, candidates,
                                             stack)

    def _count_step(self, items: dict[int, int], depth: int, estimated: float | None,
                    created: int, found: int, kept: int, started: float,
                    queries_before: int, by_code_before: int, as_tuples: int = 0) -> None:
        """A step's counters, added to the query's and to its depth's line of EXPLAIN."""
        self.ctx.stats.entries_created += created
        self._progress.update(created)
        self.counter.count(items, depth, estimated, created, found, kept, started,
                           queries_before, self.pieces.by_code - by_code_before, as_tuples)

    def _extend_and_push(self, batch: Batch, item: int, depth: int, start: np.ndarray,
                         stop: np.ndarray, candidates: CandidateNodes,
                         stack: list[tuple[Batch | TupleBatch, int]]
                         ) -> tuple[int, int, int]:
        """Extend by ``item``, merge, prune, and push the survivors in bounded pieces.
        Returns the entries created, the tuples they form and the entries kept."""
        table, gaps = self.table, self.gaps
        created = found = kept = 0
        for grown, segments, made in self.pieces.grown(batch, item, depth, start, stop,
                                                 candidates):
            created += made
            # A merged entry keeps one node per item, its earliest first and latest
            # last: a single item is both, so its entries stay apart (each node's
            # instant is a possible t_first and t_last).
            grown = (merge(table, grown, segments, item, gaps, self.classes) if self.k > 1
                     else grown.in_tuple_order())
            starts, bound = prune_bounds(grown, self.attribute)
            found += len(starts)
            grown = self._keep(grown, starts, bound)
            kept += len(grown)
            if len(grown):
                for piece in split_by_tuples(grown.events, np.ones(len(grown), np.int64),
                                             self.limit):
                    stack.append((grown.take(piece), depth + 1))
        return created, found, kept

    def _extend_and_finish(self, batch: Batch, item: int, depth: int, start: np.ndarray,
                           stop: np.ndarray, candidates: CandidateNodes
                           ) -> tuple[int, int, int]:
        """The last item of a pattern without negation: each new tuple's entries add up
        straight into its confidence. Returns the entries created, the tuples and the
        answers."""
        created = found = kept = 0
        for units in self.pieces.pieces(batch, item, start, stop, candidates):
            sums = [self._tuple_sums(*unit, item) for unit in units]
            events, total, first, last, attribute = (sums[0][:5] if len(sums) == 1
                                                     else _combined_sums(sums, item))
            created += sum(made for *_, made in sums)
            found += len(total)
            kept += self._answer(events, total * attribute, first, last)
        return created, found, kept

    def _wind_up(self) -> None:
        """Collect what the spare thread still does. Where an answer table follows
        (``ctx.table_ids``), this thread first makes the rows' tuples of ids of the
        answers so far (:func:`~uncertain_cep.query.evaluation.answer.with_ids`: the table's most
        costly part, and the one that needs no other row) while the spare thread
        finishes, then helps it."""
        ids = self.ctx.table_ids
        if ids is None or not self.background.threads:
            self._collect(self.background.finish())
            return
        self._collect(self.background.finished())
        self.sink.prepare(ids)
        self._collect(self.background.finish())
        self.sink.prepare(ids)

    def _collect(self, done: list[tuple[int, Completed, float]]) -> None:
        """Complete tuples' answers, done in the background (:mod:`~uncertain_cep.query.
        completion`), counted with the step that made the tuples."""
        for depth, completed, seconds in done:
            self._add(completed.answers)
            ctx = self.ctx
            ctx.stats.entries_created += completed.created
            ctx.stats.tuples_pruned += completed.pruned
            self._progress.update(completed.created)
            step = self.counter.step(depth)
            step.created += completed.created
            step.kept += completed.kept
            step.seconds += seconds

    def passing(self, bound: np.ndarray) -> np.ndarray:
        """Which tuples' bounds reach the threshold (the rest are counted as pruned)."""
        passing = bound >= self.ctx.theta - TOLERANCE
        self.ctx.stats.tuples_pruned += int((~passing).sum())
        return passing

    def _keep(self, batch: Batch, starts: np.ndarray, bound: np.ndarray) -> Batch:
        """The entries of the tuples whose bound reaches the threshold."""
        theta = self.ctx.theta
        if theta <= TOLERANCE or len(batch) == 0:
            return batch
        passing = self.passing(bound)
        sizes = np.diff(np.concatenate([starts, [len(batch)]]))
        return batch.take(np.repeat(passing, sizes))

    # ------------------------------------------------------------ answers
    def _finish(self, batch: Batch) -> None:
        """Complete entries into per-tuple sums, first and last instants."""
        if len(batch) == 0:
            return
        table = self.table
        if self.ctx.negations:
            prob = batch.prob * negation_factors(table, batch.events, batch.nodes,
                                                 self.negated)
            batch = Batch(batch.events, batch.nodes, prob)
        # An entry of probability 0 holds in no world: it sets no instants.
        batch = batch.take(batch.prob > 0)
        if len(batch) == 0:
            return
        batch = batch.in_tuple_order()
        starts = tuple_starts(batch.events)
        total = np.add.reduceat(batch.prob, starts)
        first = np.minimum.reduceat(table.instant[batch.nodes[:, 0]], starts)
        last = np.maximum.reduceat(table.instant[batch.nodes[:, -1]], starts)
        conf = total * self.attribute(batch.events[starts])
        passing = (conf >= self.ctx.theta - TOLERANCE) & (conf > 0)
        self._add([Answer(batch.events[starts][passing], np.minimum(conf[passing], 1.0),
                          first[passing], last[passing])])

    def _extend_and_negate(self, batch: Batch, item: int, depth: int, start: np.ndarray,
                           stop: np.ndarray, candidates: CandidateNodes
                           ) -> tuple[int, int, int]:
        """The last item of a pattern with negation: per piece, the new tuples' bounds
        without negation prune them, then the surviving entries' negation factors and
        each tuple's sum (an entry whose weighted sum is 0 holds in no world and sets no
        instants). Returns the entries created, the tuples and the entries kept."""
        table, ctx = self.table, self.ctx
        theta = ctx.theta
        created = found = kept = 0
        for grown, segments, made in self.pieces.grown(batch, item, depth, start, stop,
                                                 candidates):
            created += made
            # Entries that finish alike (negation factors included) are added up first.
            grown = merge(table, grown, segments, item, self.gaps, self.classes)
            starts = tuple_starts(grown.events)
            ids = np.repeat(np.arange(len(starts)),
                            np.diff(np.append(starts, len(grown))))
            found += len(starts)
            events = grown.events[starts]
            attribute = self.attribute(events)
            bound = np.add.reduceat(grown.prob, starts) * attribute
            passing = (self.passing(bound) if theta > TOLERANCE
                       else np.ones(len(starts), dtype=bool))
            keep = passing[ids]
            kept += int(keep.sum())
            sub, tuple_of = grown.take(keep), ids[keep]
            prob = sub.prob * negation_factors(table, sub.events, sub.nodes, self.negated)
            live = prob > 0
            tuple_of, nodes = tuple_of[live], sub.nodes[live]
            total = np.bincount(tuple_of, weights=prob[live], minlength=len(starts))
            earliest = np.full(len(starts), NO_TIME, dtype=np.int64)
            np.minimum.at(earliest, tuple_of, table.instant[nodes[:, 0]])
            latest = np.full(len(starts), -NO_TIME, dtype=np.int64)
            np.maximum.at(latest, tuple_of, table.instant[nodes[:, -1]])
            conf = total * attribute
            answer = passing & (conf >= theta - TOLERANCE) & (conf > 0)
            self._add([Answer(events[answer], np.minimum(conf[answer], 1.0),
                              earliest[answer], latest[answer])])
        return created, found, kept

    def _tuple_sums(self, part: Batch, candidates: CandidateNodes, start: np.ndarray,
                    stop: np.ndarray, item: int
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                               int]:
        """The last item of a pattern without negation: extension and each new tuple's
        sum in one pass (:func:`~uncertain_cep.query.engine.kernels.extension.extended_sums`), so
        its entries are never written out, merged or regrouped. Returns the new tuples'
        events, summed probabilities, first and last instants, the product of their
        events' Pr(S | e) (the parent tuple's times the new event's), and the entries
        created."""
        starts = tuple_starts(part.events)
        bounds = np.append(starts, len(part))
        entry, new_row, total, first, last, created, by_code = extended_sums(
            self.table, part.nodes, part.prob, item, bounds, start, stop, candidates.order)
        self.pieces.by_code += by_code
        events = part.events[entry]
        events[:, item] = new_row
        parent = self.attribute(part.events[starts])
        attribute = (parent[np.searchsorted(bounds, entry, side="right") - 1]
                     * self.ctx.pr_rows(self.ctx.positive[item], new_row))
        return events, total, first, last, attribute, created

    def _answer(self, events: np.ndarray, conf: np.ndarray, first: np.ndarray,
                last: np.ndarray) -> int:
        """Keep the tuples whose confidence ``conf`` (their sum times Pr(S | e) of their
        events) reaches the threshold; how many."""
        done = Completed()
        done.add(events, conf, first, last, self.ctx.theta)
        self._add(done.answers)
        self.ctx.stats.tuples_pruned += done.pruned
        return done.kept

    def _add(self, answers: list[Answer]) -> None:
        """Hand answer rows to the sink, then prune by what it needs from now on (a
        top-k sink's k-th confidence: :func:`~uncertain_cep.query.evaluation.context.
        raise_threshold`)."""
        for answer in answers:
            if self.base:
                # Back to the index's instants (Python ints would not overflow, nor do
                # these: relative instants lie in [0, MAX_SPAN] above the base).
                answer = dataclasses.replace(answer, t_first=answer.t_first + self.base,
                                             t_last=answer.t_last + self.base)
            self.sink.add(answer)
        raise_threshold(self.ctx)
        if answers and not self._progress.disable:
            # The bar counts entries; beside them, the answer rows found so far.
            self._progress.set_postfix_str(f"{self.sink.rows:,} rows", refresh=False)

    def _matches(self) -> Answer:
        ctx = self.ctx
        ctx.stats.steps.extend(self.counter.in_order())
        ctx.record_time()
        return self.sink.finish(self.k)


def _combined_sums(sums: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                    np.ndarray, int]],
                   item: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-tuple sums of chunks of one tuple's entries, added up per new event (the
    product of Pr(S | e) is the same in every chunk)."""
    events = np.concatenate([s[0] for s in sums])
    new, first_of, ids = np.unique(events[:, item], return_index=True, return_inverse=True)
    total = np.bincount(ids, weights=np.concatenate([s[1] for s in sums]),
                        minlength=len(new))
    first = np.full(len(new), NO_TIME, dtype=np.int64)
    np.minimum.at(first, ids, np.concatenate([s[2] for s in sums]))
    last = np.full(len(new), -NO_TIME, dtype=np.int64)
    np.maximum.at(last, ids, np.concatenate([s[3] for s in sums]))
    attribute = np.concatenate([s[4] for s in sums])[first_of]
    return events[first_of], total, first, last, attribute
