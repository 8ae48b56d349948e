"""Many tuples' probabilities at once: the dynamic programme of
:mod:`~uncertain_cep.query.engine.kernels.programme` run over a batch of tuples, on
numba's threads without negation and on a pool of Python threads (each with its own
scratch and memo) with it (SEMANTICS A4; docs/design.md, Tuples instead of entries).
"""

from __future__ import annotations

import queue
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from uncertain_cep.index.forests.forest import REAL
from uncertain_cep.index.node_table import NodeArrays, NodeTable
from uncertain_cep.query.engine.kernels.core import KERNEL_LOCK
from uncertain_cep.query.engine.kernels.futures import future_nodes
from uncertain_cep.query.engine.kernels.instants import NO_TIME
from uncertain_cep.query.engine.kernels.memo import grown_memo, new_memo
from uncertain_cep.query.engine.kernels.negation import (
    NegatedArrays,
    NegatedNodes,
    scratch_arrays,
    thread_scratch,
)
from uncertain_cep.query.engine.kernels.negation_folds import FoldScratch, key_width
from uncertain_cep.query.engine.kernels.programme import run_programme
from uncertain_cep.query.engine.kernels.tuple_columns import TupleArrays

__all__ = ["NEGATED_ROOM", "ROOM", "TupleArrays", "TupleTable", "negated_probabilities",
           "surely_below", "tuple_probabilities"]

# Classes a programme's layer has room for at first; a tuple that may need more runs
# again with what it asks for. Measured on localization n = 20 query 2's tuples: 2.4%
# run again with room for 64 (13% with 16), and 64 was the fastest of 16 to 256.
ROOM = 64
# The same for the negation programme, whose classes multiply by kept nodes and gap
# bounds: on that query's 175,944 tuples that needed one, 64 took 12.5 s on one thread,
# 512 11.4 s (15% less on the many light tuples, 5% on the heaviest 7%), 2,048 no less.
NEGATED_ROOM = 512
# How far a programme's sum may stray from the exact one by rounding, at most (sums of
# products of probabilities: about 1e-15 a term).
_ROUNDING = 1e-11


class TupleTable:
    """A :class:`NodeTable` with what the programme reads of it: its
    :class:`NodeArrays` (``nodes``) and :class:`TupleArrays` (``arrays``), whose
    ``future`` is each node itself unless ``classes`` (the index was built without
    Condition 2)."""

    def __init__(self, table: NodeTable, classes: bool = False) -> None:
        self.table = table
        self.nodes = table.arrays
        starts = table.row_nodes_start
        owner = np.repeat(np.arange(len(starts) - 1), np.diff(starts))
        by_code = table.row_nodes[np.lexsort((table.code[table.row_nodes], owner))]
        roots = np.asarray(table.tree_root)
        root_code = np.where(roots >= 0, table.code[np.maximum(roots, 0)], -1)
        # A group's top tree is a chain when none of its nodes is an event's.
        has_trees = table.tree_start[1:] > table.tree_start[:-1]
        top_chain = np.ones(len(has_trees), dtype=np.bool_)
        real_top = (table.kind == REAL) & (table.tree_level[table.tree] == 0)
        top_chain[np.unique(table.group[real_top])] = False
        self.arrays = TupleArrays(
            np.ascontiguousarray(by_code, dtype=np.int64),
            future_nodes(table) if classes else np.arange(len(table.group), dtype=np.int64),
            root_code.astype(np.int64), top_chain & has_trees, *_row_extremes(table))


def _row_extremes(table: NodeTable
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per archive row: its group, the earliest and the latest instant of its nodes, and
    the probability that the event takes each (the sum of ``poi`` of its nodes there:
    an OI passes one node of each of its group's events). A row without nodes: group -1
    and no instants."""
    return _extremes(np.asarray(table.row_nodes_start, dtype=np.int64),
                     np.asarray(table.row_nodes, dtype=np.int64), table.group,
                     table.instant, table.poi)


@numba.njit(cache=True, nogil=True)
def _extremes(starts: np.ndarray, row_nodes: np.ndarray, group: np.ndarray,
              instant: np.ndarray, poi: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_row_extremes` in one pass over the rows' nodes."""
    rows = len(starts) - 1
    row_group = np.full(rows, -1, dtype=np.int64)
    first = np.full(rows, NO_TIME, dtype=np.int64)
    last = np.full(rows, -NO_TIME, dtype=np.int64)
    first_mass = np.zeros(rows)
    last_mass = np.zeros(rows)
    for r in range(rows):
        for q in range(starts[r], starts[r + 1]):
            v = row_nodes[q]
            row_group[r] = group[v]
            t = instant[v]
            if t < first[r]:
                first[r], first_mass[r] = t, 0.0
            if t == first[r]:
                first_mass[r] += poi[v]
            if t > last[r]:
                last[r], last_mass[r] = t, 0.0
            if t == last[r]:
                last_mass[r] += poi[v]
    return row_group, first, last, first_mass, last_mass


@numba.njit(cache=True, nogil=True, inline="always")
def surely_below(events: np.ndarray, k: int, length: int, bounded: bool,
                 tuple_arrays: TupleArrays, floor: float) -> bool:
    """Whether a tuple's programme (``events``: archive rows, -1 where unmatched) must
    fall below ``floor``, told from its events' extreme instants alone.

    Two consecutive matched columns ``p < q`` of different groups, whose events may lie
    at ``last(p)`` and ``first(q)`` with ``first(q) - last(p) < q - p``, break the order
    in the worlds where both do, which have probability ``mass(p) * mass(q)``: groups are
    independent (SEMANTICS A2). So do the first and last matched columns of different
    groups whose extremes lie further apart than the window leaves them. The tuple's sum
    is then at most one minus the largest such probability; below ``floor`` by more than
    rounding, the programme would return 0, and is not run. (Most tuples the search
    makes at a high threshold fail so: localization n = 30 query 1's first pass, 76% of
    2.3M.)"""
    if floor <= 0.0:
        return False
    group, row_first, row_last = (tuple_arrays.row_group, tuple_arrays.row_first,
                                  tuple_arrays.row_last)
    first_mass, last_mass = tuple_arrays.row_first_mass, tuple_arrays.row_last_mass
    worst = 0.0
    c0 = -1
    p = -1
    for c in range(k):
        e = events[c]
        if e < 0:
            continue
        if p < 0:
            c0 = c
        else:
            ep = events[p]
            if group[e] != group[ep] and row_first[e] - row_last[ep] < c - p:
                worst = max(worst, last_mass[ep] * first_mass[e])
        p = c
    if bounded and c0 >= 0:
        e0, e1 = events[c0], events[p]
        span = length - c0 - (k - 1 - p)
        if group[e0] != group[e1] and row_last[e1] - row_first[e0] > span:
            worst = max(worst, first_mass[e0] * last_mass[e1])
    return 1.0 - worst < floor - _ROUNDING


@numba.njit(cache=True, nogil=True, inline="always")
def _outputs(n: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                      np.ndarray, np.ndarray]:
    """Per tuple its total, first and last instant and states, and per column its
    reachable instants (what :func:`tuple_probabilities` returns)."""
    return (np.zeros(n), np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64),
            np.zeros(n, dtype=np.int64), np.empty((n, k), dtype=np.int64),
            np.empty((n, k), dtype=np.int64))


@numba.njit(cache=True, nogil=True, inline="always")
def _run_rows(events: np.ndarray, length: int, bounded: bool, node_arrays: NodeArrays,
              tuple_arrays: TupleArrays, floor: np.ndarray, room: int, out: tuple,
              start: int, step: int) -> None:
    """The programmes of tuples ``start``, ``start + step``, ... into ``out``
    (:func:`_outputs`). (No negation: None for its arguments.)"""
    total, first, last, states, lo, hi = out
    k = events.shape[1]
    for r in range(start, len(events), step):
        if surely_below(events[r], k, length, bounded, tuple_arrays, floor[r]):
            total[r], first[r], last[r], states[r] = 0.0, NO_TIME, -NO_TIME, 0
            lo[r], hi[r] = -NO_TIME, NO_TIME
            continue
        total[r], first[r], last[r], states[r] = run_programme(
            events[r], k, length, bounded, None, None, node_arrays, tuple_arrays, floor[r],
            lo[r], hi[r], None, None, room)


@numba.njit(cache=True, nogil=True, parallel=True)
def _probabilities(events: np.ndarray, length: int, bounded: bool,
                   node_arrays: NodeArrays, tuple_arrays: TupleArrays,
                   floor: np.ndarray, chunks: int, room: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                              np.ndarray]:
    """The programme of every tuple without negation, on numba's threads
    (:func:`tuple_probabilities`; SEMANTICS A4 conditions 1-2; docs/design.md, Tuples
    instead of entries).

    Parameters
    ----------
    events : (n, k) int64
        The tuples' events (archive rows, -1 where unmatched).
    length, bounded
        The window ``L`` in instants, and whether there is one.
    node_arrays, tuple_arrays
        What the programme reads of the node table (:class:`TupleTable`).
    floor : (n,) float64
        Per tuple, the mass below which its programme stops (0: never).
    chunks : int
        How many strided shares the tuples are cut into (share ``c``: tuples ``c``,
        ``c + chunks``, ...), one per parallel iteration.
    room : int
        The classes a layer has room for at first (:func:`run_programme`).

    Returns
    -------
    total : (n,) float64
        Each tuple's summed probability (its pruning bound; its probability once
        complete), 0 where it fell below its ``floor``.
    first, last : (n,) int64
        The earliest first and latest last instant over its final states (NO_TIME and
        -NO_TIME where 0).
    states : (n,) int64
        The cells (class and instant) holding mass in its last layer.
    lo, hi : (n, k) int64
        Per column, the earliest and latest instant its event can take in the worlds
        the programme reached (-NO_TIME and NO_TIME where unmatched).
    """
    out = _outputs(len(events), events.shape[1])
    for c in numba.prange(chunks):
        # Every chunks-th tuple: the threads' shares of heavy tuples (which come in runs:
        # one parent's children) even out.
        _run_rows(events, length, bounded, node_arrays, tuple_arrays, floor, room, out, c,
                  chunks)
    return out


@numba.njit(cache=True, nogil=True)
def _probabilities_in_line(events: np.ndarray, length: int, bounded: bool,
                           node_arrays: NodeArrays, tuple_arrays: TupleArrays,
                           floor: np.ndarray, room: int
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                      np.ndarray, np.ndarray]:
    """:func:`_probabilities` in the calling thread alone (without numba's threads,
    whose layer admits one caller at a time; docs/design.md, Complete tuples on a
    spare core)."""
    out = _outputs(len(events), events.shape[1])
    _run_rows(events, length, bounded, node_arrays, tuple_arrays, floor, room, out, 0, 1)
    return out


def tuple_probabilities(tables: TupleTable, events: np.ndarray, window: float,
                        floor: np.ndarray | None = None, room: int = ROOM,
                        threads: int | None = None
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                   np.ndarray, np.ndarray]:
    """Per tuple (rows of ``events``, -1 where unmatched): its summed probability over
    the worlds where its matched items keep the pattern's order and window (the pruning
    bound; the probability once complete; 0 where it falls below the tuple's ``floor``),
    its earliest first and latest last instant, the number of states of its programme's
    last layer, and each column's reachable instants (``lo``, ``hi``; +-NO_TIME where
    unmatched). ``room``: the classes a layer has room for before a programme runs
    again with more (the same answer whatever it is). ``threads=1``: in the calling
    thread alone (else on numba's threads)."""
    events = np.ascontiguousarray(events, dtype=np.int64)
    bounded = window != np.inf
    length = int(window) if bounded else 0
    floor = (np.zeros(len(events)) if floor is None
             else np.ascontiguousarray(floor, dtype=np.float64))
    if threads == 1:
        return _probabilities_in_line(events, length, bounded, tables.nodes, tables.arrays,
                                      floor, room)
    chunks = max(1, min(4 * numba.get_num_threads(), len(events)))
    with KERNEL_LOCK:
        return _probabilities(events, length, bounded, tables.nodes, tables.arrays, floor,
                              chunks, room)


@numba.njit(cache=True, nogil=True)
def _negated_probabilities(events: np.ndarray, length: int, bounded: bool,
                           gap_columns: np.ndarray, neg: NegatedArrays,
                           node_arrays: NodeArrays, tuple_arrays: TupleArrays,
                           floor: np.ndarray, fold: FoldScratch, room: int
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every complete tuple's probability with its negation (every group's factor,
    the tuple's own and the outside ones, folded into its programme), its first and
    last instants over the worlds that count, and its last layer's states.
    (SEMANTICS A4 condition 4; docs/design.md, Tuples instead of entries.)"""
    n, k = events.shape
    total = np.zeros(n)
    first = np.empty(n, dtype=np.int64)
    last = np.empty(n, dtype=np.int64)
    states = np.zeros(n, dtype=np.int64)
    lo = np.empty(k, dtype=np.int64)
    hi = np.empty(k, dtype=np.int64)
    # Group factors recur across tuples (same chain, events and gaps): one memo.
    memo = new_memo(key_width(k, len(neg.columns)), 1024)
    for r in range(n):
        # (With negation the sum is at most the one without: the same test holds.)
        if surely_below(events[r], k, length, bounded, tuple_arrays, floor[r]):
            total[r], first[r], last[r], states[r] = 0.0, NO_TIME, -NO_TIME, 0
            continue
        total[r], first[r], last[r], states[r] = run_programme(
            events[r], k, length, bounded, gap_columns, neg, node_arrays, tuple_arrays,
            floor[r], lo, hi, fold, memo, room)
        if memo[3][1]:
            memo = grown_memo(memo)
    return total, first, last, states


def negated_probabilities(tables: TupleTable, events: np.ndarray, window: float,
                          gap_columns: np.ndarray, negated: NegatedNodes,
                          floor: np.ndarray | None = None, room: int = NEGATED_ROOM,
                          threads: int | None = None
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per complete tuple (rows of ``events``): its probability with every negation
    (SEMANTICS A4 condition 4; 0 where the probability falls below its ``floor``), its
    earliest first and latest last instant over the worlds that count, and its
    programme's states. The programme keeps, besides what
    :func:`tuple_probabilities` keeps, each gap's bounds (snapped to the instants of the
    nodes it may weigh) and the exact nodes of the columns nearest to a gap where their
    unit may hold a weighed node, until each group's factor can be folded in; the
    groups outside the tuple fold in last, and the bounds then leave the keys.
    ``threads``: how many run the programmes (default: numba's)."""
    events = np.ascontiguousarray(events, dtype=np.int64)
    bounded = window != np.inf
    length = int(window) if bounded else 0
    neg = negated.arrays
    gaps = np.ascontiguousarray(gap_columns, dtype=np.int64)
    floor = (np.zeros(len(events)) if floor is None
             else np.ascontiguousarray(floor, dtype=np.float64))
    # The programme runs without the GIL: slices of the tuples taken by the threads as
    # they come free (a few tuples may take most of the time: measured on localization
    # n = 15, one slice per thread left one thread idle for a third of the run), each
    # thread with its own scratch for the groups' factors.
    threads = max(1, min(threads or numba.get_num_threads(), len(events) // 64))
    pieces = threads if threads == 1 else min(8 * threads, len(events) // 32)
    cuts = np.linspace(0, len(events), pieces + 1).astype(np.int64)
    scratches = scratch_arrays(tables.table, threads)
    free: queue.SimpleQueue[int] = queue.SimpleQueue()
    for i in range(threads):
        free.put(i)
    n_groups = len(tables.table.group_start) - 1
    k, n_not = events.shape[1], len(negated.columns)
    # The events a NOT item may weigh (a tuple's own are excluded from weighing).
    candidate_row = np.zeros(len(tables.table.row_nodes_start) - 1, dtype=np.bool_)
    candidate_row[tables.table.row[negated.nodes]] = True

    def run(piece: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        i = free.get()
        try:
            # The folds' scratch: their rows of small numbers, each segment's last key
            # and factor.
            fold = FoldScratch(
                thread_scratch(scratches, i), np.empty(n_groups, dtype=np.int64),
                np.empty(n_groups), np.empty((7, max(k, n_not, 2)), dtype=np.int64),
                np.empty((max(1, len(gaps)) * k, key_width(k, n_not)), dtype=np.int64),
                np.empty(max(1, len(gaps)) * k), candidate_row)
            a, b = cuts[piece], cuts[piece + 1]
            return _negated_probabilities(events[a:b], length, bounded, gaps, neg,
                                          tables.nodes, tables.arrays, floor[a:b], fold,
                                          room)
        finally:
            free.put(i)

    if threads == 1:
        # (A kernel without numba's threads needs no lock: the spare threads of
        # query/engine/background.py run it beside the search's kernels.)
        return run(0)
    with KERNEL_LOCK, ThreadPoolExecutor(threads) as pool:
        parts = list(pool.map(run, range(pieces)))
    total, first, last, states = (np.concatenate([p[i] for p in parts]) for i in range(4))
    return total, first, last, states
