"""The batch engine's step on tuples: each tuple's candidate events in its window, one
programme per new tuple, pruned by its bound; complete tuples go to the answer.

A batch whose tuples hold many entries each goes on as tuples (one row per tuple,
:mod:`~uncertain_cep.query.engine.tuple_batches`; docs/design.md, "Tuples instead of
entries"). A step extends every tuple by the item the strategy chose for it:

1. its window into that item's candidates, narrowed by the lookahead;
2. the candidate events in it, with the product of their Pr(S | e), less those that
   leave an unmatched item no room (:mod:`~uncertain_cep.query.engine.event_room`);
3. the new tuples' columns, and their bound's factors besides the programme: Pr(S | e)
   and the events certainly inside a closed gap
   (:mod:`~uncertain_cep.query.engine.negation_bounds`);
4. complete tuples to the spare thread, in pieces (:meth:`Completion.answers
   <uncertain_cep.query.engine.completion.Completion.answers>`); the others through their
   programmes and bound (:meth:`Completion.run_programmes
   <uncertain_cep.query.engine.completion.Completion.run_programmes>`), the survivors back to
   the engine's stack.

The engine (:class:`~uncertain_cep.query.engine.batch_engine.BatchEngine`) is seen here through
:class:`TupleEngine`, what a step needs of it.
"""

from __future__ import annotations

import itertools
from functools import partial
from typing import Protocol

import numpy as np

from uncertain_cep.index.node_table import NodeTable
from uncertain_cep.query.engine.background import Background
from uncertain_cep.query.engine.batches import Batch, CandidateNodes, weight_cuts, window_bounds
from uncertain_cep.query.engine.completion import Completion
from uncertain_cep.query.engine.event_room import EventRoom
from uncertain_cep.query.engine.kernels.instants import NO_TIME
from uncertain_cep.query.engine.lookahead import CandidateInstants
from uncertain_cep.query.engine.negation_bounds import CertainWeighers
from uncertain_cep.query.engine.tuple_batches import (
    TupleBatch,
    candidate_events,
    event_instants,
    inherited_ends,
    item_window,
    placed_events,
)
from uncertain_cep.query.evaluation.context import TOLERANCE, QueryContext

__all__ = ["COMPLETION_PIECE", "TupleEngine", "extend_tuples"]

# Complete tuples handed to the spare thread at a time. Small pieces let both threads end
# together: at the end the searching thread runs what is queued, and copies what is
# running, so the last piece's time is lost once. Measured on localization n = 20 query
# 2: a piece of 16,384 tuples takes about 0.15 s, a whole batch's (about 110,000)
# 0.5-2 s.
COMPLETION_PIECE = 1 << 14


class TupleEngine(Protocol):
    """What a step on tuples needs of the engine: the query, its tables, per-item
    candidates, the bounds' helpers, the spare thread, and the batch size."""

    ctx: QueryContext
    k: int
    limit: int

    @property
    def table(self) -> NodeTable: ...

    @property
    def lookahead(self) -> CandidateInstants | None: ...

    @property
    def room(self) -> EventRoom: ...

    @property
    def certain(self) -> CertainWeighers | None: ...

    @property
    def completion(self) -> Completion: ...

    @property
    def background(self) -> Background: ...

    def candidates(self, item: int) -> CandidateNodes: ...

    def attribute(self, events: np.ndarray) -> np.ndarray: ...

    def passing(self, bound: np.ndarray) -> np.ndarray: ...


def extend_tuples(engine: TupleEngine, tuples: TupleBatch, items: np.ndarray, depth: int,
                  stack: list[tuple[Batch | TupleBatch, int]]) -> tuple[int, int, int]:
    """A step on tuples (sorted by the item each takes next, ``items``): each tuple's
    candidate events for its item in its window, one programme per new tuple
    (:func:`~uncertain_cep.query.engine.kernels.tuples.tuple_probabilities`), pruned by its
    bound; complete tuples become answers. Returns the states the new tuples hold
    (the entries created), the new tuples and the tuples (or answers) kept."""
    ctx, table = engine.ctx, engine.table
    ctx.stats.range_queries += len(tuples)
    cuts = [0, *(np.flatnonzero(np.diff(items)) + 1).tolist(), len(items)]
    start, stop = _tuple_windows(engine, tuples, items, cuts)
    created = found = kept = 0
    parent_attribute = (engine.attribute(tuples.events) if tuples.attribute is None
                        else tuples.attribute)
    complete = depth + 1 == engine.k
    # (The parents' events are candidates, all in the room: their stretches come
    # straight from the node table, once per step.)
    parent_stretches = None if complete else event_instants(table, tuples.events)
    for a, b in itertools.pairwise(weight_cuts(np.maximum(stop - start, 0),
                                               engine.limit).tolist()):
        owner, made_by, rows = _candidate_events(engine, tuples, items, cuts, start,
                                                 stop, a, b)
        found += len(rows)
        if len(rows) == 0:
            continue
        attribute = parent_attribute[owner]
        for c, d in itertools.pairwise([0, *(np.flatnonzero(np.diff(made_by)) + 1)
                                        .tolist(), len(made_by)]):
            item = int(made_by[c])
            attribute[c:d] *= ctx.pr_rows(ctx.positive[item], rows[c:d])
        new_lo, new_hi = event_instants(table, rows)
        if parent_stretches is not None:
            # (No completion where the unmatched items lack events of their own:
            # most new tuples of long patterns, so before their matrices exist.)
            fit = np.flatnonzero(engine.room.feasible_children(
                tuples.events, tuples.earliest, tuples.latest, *parent_stretches,
                owner, made_by, new_lo, new_hi, ctx.window))
            owner, made_by, rows = owner[fit], made_by[fit], rows[fit]
            attribute, new_lo, new_hi = attribute[fit], new_lo[fit], new_hi[fit]
            if len(rows) == 0:
                continue
        # Each new tuple's parent's bound and columns' instants, and the new event's.
        row = np.arange(len(rows))
        total = tuples.prob[owner]
        events = np.take(tuples.events, owner, axis=0)
        earliest = np.take(tuples.earliest, owner, axis=0)
        latest = np.take(tuples.latest, owner, axis=0)
        events[row, made_by] = rows
        earliest[row, made_by], latest[row, made_by] = new_lo, new_hi
        outranked = ctx.sink.outranked(events)
        if outranked is not None and outranked.any():
            # A top k's held rows all at confidence 1: tuples whose ids already rank
            # them after the k-th cannot enter (answer_sinks.TopRows.outranked).
            fit = np.flatnonzero(~outranked)
            ctx.stats.tuples_pruned += len(rows) - len(fit)
            owner, made_by, rows = owner[fit], made_by[fit], rows[fit]
            attribute, new_lo, new_hi = attribute[fit], new_lo[fit], new_hi[fit]
            total, events = total[fit], events[fit]
            earliest, latest = earliest[fit], latest[fit]
            if len(rows) == 0:
                continue
        # The bound's factors besides the programme's: Pr(S | e), and the events
        # certainly inside a gap whose neighbours are matched.
        factor = attribute.copy()
        settled = np.zeros(len(events), dtype=np.bool_)
        if engine.certain is not None and complete:
            gaps_factor, settled = engine.certain.settled(events, earliest, latest)
            factor *= gaps_factor
        elif engine.certain is not None:
            factor *= engine.certain.factors(events, earliest, latest)
        # A new event placed in every world of its parent keeps the parent's bound
        # (exactly: it adds no constraint), and between the parent's first and last
        # columns also its first and last instants.
        placed = placed_events(tuples, owner, made_by, new_lo, new_hi, ctx.window)
        first, last = inherited_ends(tuples, owner, made_by, placed)
        # A placed tuple holds its parent's states; counted as one.
        created += int(placed.sum())
        if complete:
            # An answer needs its first and last instants; with negation, where its
            # factor is the same in every world, from the cheap programme rather
            # than the negation programme (twice the cost).
            known = first != NO_TIME
            unknown = ~known if not ctx.negations else settled & ~known
            run = _worth_running(engine, ~placed | unknown, total, factor)
            _complete(engine, depth, events, total, attribute, factor, first, last,
                      earliest, latest, run, exact=~placed | unknown | known)
            continue
        run = _worth_running(engine, ~placed, total, factor)
        made, grown = _go_on(engine, events, total, attribute, factor, first, last,
                             earliest, latest, run)
        created += made
        kept += len(grown)
        for e in range(0, len(grown), engine.limit):
            stack.append((grown.take(slice(e, e + engine.limit)), depth + 1))
    return created, found, kept


def _tuple_windows(engine: TupleEngine, tuples: TupleBatch, items: np.ndarray,
                   cuts: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Each tuple's window into its item's candidates (``cuts``: where ``items``
    changes), as bounds into their arrays."""
    start = np.empty(len(tuples), dtype=np.int64)
    stop = np.empty(len(tuples), dtype=np.int64)
    for a, b in itertools.pairwise(cuts):
        some = tuples.take(slice(a, b))
        lo, hi = item_window(some, int(items[a]), engine.ctx.window, engine.lookahead)
        start[a:b], stop[a:b] = window_bounds(engine.candidates(int(items[a])), lo, hi)
    return start, stop


def _candidate_events(engine: TupleEngine, tuples: TupleBatch, items: np.ndarray,
                      cuts: list[int], start: np.ndarray, stop: np.ndarray, a: int, b: int
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The candidate events of tuples ``a:b`` in their windows: per new tuple, its
    parent, the item it takes and the event's archive row."""
    parts, owners, takers = [], [], []
    for c, d in itertools.pairwise(cuts):
        lo, hi = max(a, c), min(b, d)
        if lo < hi:
            item = int(items[c])
            owner, rows, pairs = candidate_events(
                engine.table, tuples.take(slice(lo, hi)), engine.candidates(item),
                start[lo:hi], stop[lo:hi])
            engine.ctx.stats.candidates += pairs
            parts.append(rows)
            owners.append(owner + lo)
            takers.append(np.full(len(owner), item, dtype=np.int64))
    return np.concatenate(owners), np.concatenate(takers), np.concatenate(parts)


def _worth_running(engine: TupleEngine, run: np.ndarray, total: np.ndarray,
                   factor: np.ndarray) -> np.ndarray:
    """``run`` but for tuples whose parent's bound already falls short: no programme
    can lift it."""
    if engine.ctx.theta > TOLERANCE:
        run &= total * factor >= engine.ctx.theta - TOLERANCE
    return run


def _complete(engine: TupleEngine, depth: int, events: np.ndarray, total: np.ndarray,
              attribute: np.ndarray, factor: np.ndarray, first: np.ndarray,
              last: np.ndarray, earliest: np.ndarray, latest: np.ndarray,
              run: np.ndarray, exact: np.ndarray) -> None:
    """Complete tuples to answers (:meth:`Completion.answers`): they feed only the
    answer, so on a spare core, in pieces, while the search goes on (its kernels in
    that thread; in line where there is none)."""
    spare = engine.background.threads
    piece = COMPLETION_PIECE if spare else len(events)
    for e in range(0, len(events), piece):
        rows = slice(e, e + piece)
        engine.background.submit(
            partial(engine.completion.answers, events[rows], total[rows],
                    attribute[rows], factor[rows], first[rows], last[rows],
                    earliest[rows], latest[rows], run[rows], exact[rows],
                    threads=1 if spare else None), depth)


def _go_on(engine: TupleEngine, events: np.ndarray, total: np.ndarray,
           attribute: np.ndarray, factor: np.ndarray, first: np.ndarray, last: np.ndarray,
           earliest: np.ndarray, latest: np.ndarray, run: np.ndarray
           ) -> tuple[int, TupleBatch]:
    """New tuples that are not complete: their programmes (``run``), then the ones
    whose bound reaches the threshold. Returns the states the programmes held and
    the tuples kept."""
    created = engine.completion.run_programmes(events, total, attribute, factor, first,
                                               last, earliest, latest, run)
    live = total > 0
    if engine.ctx.theta > TOLERANCE:
        live &= engine.passing(total * factor)
    if engine.certain is not None and engine.ctx.theta > TOLERANCE:
        # An event that may lie in a closed gap: its share of the worlds. (Only
        # tuples with such an event are gathered: 15% of the 3.2M live tuples of
        # localization n = 20 query 2.)
        gap, row, pr = engine.certain.likeliest(events, earliest, latest, live)
        likely = np.flatnonzero(live & (gap >= 0))
        bound, held = engine.completion.likeliest_outside(
            events[likely], earliest[likely], latest[likely], total[likely],
            engine.completion.floor(factor[likely]),
            chosen=(gap[likely], row[likely], pr[likely]))
        created += held
        live[likely] = engine.passing(bound * factor[likely])
    return created, TupleBatch(events[live], total[live], earliest[live], latest[live],
                               first[live], last[live], attribute[live])
