"""Where a query's answer rows go as they are found: kept whole, the best ``k``, or only
counted.

A strategy hands every batch of answer rows it finds to its context's sink
(:attr:`QueryContext.sink <uncertain_cep.query.evaluation.context.QueryContext>`) and
asks it, between batches, how confident a row must now be to matter (its
:attr:`~AnswerSink.floor`): the batch engine raises its pruning threshold to it, so a
top-``k`` query prunes harder as better rows come in (Zhou et al. 5's confidence
pruning, with a threshold that rises). Each sink is one module-level class behind the
:class:`AnswerSink` protocol:

* :class:`AllRows`: every row, up to a budget of ``max_rows`` (then an
  :class:`~uncertain_cep.errors.AnswerTooLargeError` that says how many rows were found
  and how to ask for less);
* :class:`TopRows`: the first ``k`` rows of the full answer's order (confidence
  descending, then event ids: SEMANTICS A4), ties included exactly as the full answer
  breaks them;
* :class:`CountedRows`: how many rows, none kept;
* :class:`StreamedRows`: every row, handed on in parts of about ``part_rows`` rows as
  they are found (to a Parquet writer, a consumer of record batches), none kept.

>>> ids = np.array(["a", "b", "c", "d"], dtype=object)
>>> top = TopRows(2, ids)
>>> top.add(Answer(np.array([[0, 1], [2, 3], [1, 3]]), np.array([0.5, 0.75, 0.5]),
...                np.zeros(3, np.int64), np.ones(3, np.int64)))
>>> top.floor, top.finish(2).events.tolist()
(0.5, [[2, 3], [0, 1]])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from uncertain_cep.errors import DEFAULT_MAX_ROWS, AnswerTooLargeError
from uncertain_cep.query.evaluation.answer import Answer, best_rows, ranked, with_ids

__all__ = ["DEFAULT_MAX_ROWS", "AllRows", "AnswerSink", "CountedRows", "StreamedRows",
           "TopRows", "over_budget"]



class AnswerSink(Protocol):
    """What a strategy gives the rows it finds to."""

    @property
    def floor(self) -> float:
        """The confidence a row needs from now on to be kept (0: any)."""

    @property
    def rows(self) -> int:
        """Rows handed in so far (of :class:`TopRows`, those it kept)."""

    def add(self, answer: Answer) -> None:
        """Take a batch of answer rows (in any order)."""

    def outranked(self, events: np.ndarray) -> np.ndarray | None:
        """Which partial tuples (rows of event rows, -1 unmatched) can no longer enter
        whatever their completions, beyond the floor's test; None: none can be told."""

    def prepare(self, event_ids: np.ndarray) -> None:
        """Make the kept rows' tuples of event ids now (a spare moment of the engine's:
        :func:`~uncertain_cep.query.evaluation.answer.with_ids`)."""

    def finish(self, k: int) -> Answer:
        """The rows kept (``k``: positive items per row), in no particular order."""


def over_budget(found: int, max_rows: int) -> AnswerTooLargeError:
    """The error of an answer past its ``max_rows`` budget, ``found`` rows found when the
    query stopped, naming what to ask for instead."""
    return AnswerTooLargeError(
        f"the answer holds more than max_rows={max_rows:,} rows ({found:,} found so far, "
        "and the query stopped there): ask for the most confident rows (LIMIT k, or "
        "limit=k), count them (idx.count), or write them to Parquet as they are found "
        "(out=PATH); or raise max_rows (None: no budget) if this machine's memory holds "
        "them", rows=found)


class _CountingSink:
    """What the sinks without a floor share: any row matters (floor 0), the rows handed
    in are counted, and nothing is made ahead of the end."""

    def __init__(self) -> None:
        self._rows = 0

    @property
    def floor(self) -> float:
        return 0.0

    @property
    def rows(self) -> int:
        return self._rows

    def outranked(self, events: np.ndarray) -> np.ndarray | None:
        return None

    def prepare(self, event_ids: np.ndarray) -> None:
        pass


class AllRows(_CountingSink):
    """Every row, at most ``max_rows`` of them (None: no budget)."""

    def __init__(self, max_rows: int | None = DEFAULT_MAX_ROWS) -> None:
        super().__init__()
        self.max_rows = max_rows
        self._parts: list[Answer] = []

    def add(self, answer: Answer) -> None:
        if not len(answer):
            return
        self._parts.append(answer)
        self._rows += len(answer)
        if self.max_rows is not None and self._rows > self.max_rows:
            found, self._parts = self._rows, []
            raise over_budget(found, self.max_rows)

    def prepare(self, event_ids: np.ndarray) -> None:
        self._parts = [with_ids(a, event_ids) for a in self._parts]

    def finish(self, k: int) -> Answer:
        return Answer.concat(self._parts, k)


class TopRows:
    """The first ``k`` rows of the answer's order (confidence descending, then the event
    ids ``event_ids`` of the rows), whichever batches they come in."""

    def __init__(self, k: int, event_ids: np.ndarray) -> None:
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise ValueError(f"a top-k sink keeps k >= 1 rows, got {k!r}")
        self.k = int(k)
        self.event_ids = event_ids
        self._held: Answer | None = None
        # The k-th held row, in the answer's order (None: not yet ranked since _held
        # changed): asked for by every batch and every tuple step of the search.
        self._kth: Answer | None = None

    @property
    def floor(self) -> float:
        """The k-th row's confidence once k rows are held: a row below it (by more than
        the rounding the order allows) can never enter."""
        held = self._held
        if held is None or len(held) < self.k:
            return 0.0
        return float(held.confidence.min())

    @property
    def rows(self) -> int:
        return 0 if self._held is None else len(self._held)

    def add(self, answer: Answer) -> None:
        if not len(answer):
            return
        floor, held = self.floor, self._held
        if floor > 0 and held is not None:
            # A row below the held k-th by more than the order's rounding (12 decimals)
            # ranks after k rows already. One not above the last held row's confidence
            # ranks before it only by its ids, so only if its first event's id is at
            # most that row's: one comparison per row before any ranking (rows tied at
            # the top can be most of an answer: 33M of 39M on bench_answer_forms).
            conf = answer.confidence
            last = self._last_held(held)
            first_ok = (self.event_ids[answer.events[:, 0]]
                        <= self.event_ids[last.events[0, 0]])
            keep = (conf > last.confidence[0]) | ((conf >= floor - 1e-11) & first_ok)
            answer = answer.take(np.flatnonzero(keep))
            if not len(answer):
                return
        answer = answer.take(best_rows(answer, self.event_ids, self.k))
        self._kth = None
        if held is None:
            self._held = answer
            return
        both = Answer.concat([held, answer], answer.events.shape[1])
        self._held = both.take(best_rows(both, self.event_ids, self.k))

    def _last_held(self, held: Answer) -> Answer:
        """The last of the held rows in the answer's order, as a one-row answer."""
        if self._kth is None:
            self._kth = held.take(ranked(held, self.event_ids)[-1:])
        return self._kth

    def outranked(self, events: np.ndarray) -> np.ndarray | None:
        """Which partial tuples ``events`` (one row each, -1 where unmatched) rank after
        the k rows held whatever their completions, or None while that cannot be told.

        Once the held k-th row's confidence rounds to 1, as the order rounds it, no row
        ranks before it by confidence: ties are broken by event ids, column by column.
        A partial tuple whose leading matched columns' ids already compare greater than
        that row's (equal up to a column, greater there) ranks after it, and so does
        every completion. Columns from the first unmatched one on decide nothing.

        >>> top = TopRows(1, np.array([10, 20, 30, 40]))
        >>> top.add(Answer(np.array([[1, 2]]), np.array([1.0]), np.zeros(1, np.int64),
        ...                np.ones(1, np.int64)))
        >>> top.outranked(np.array([[0, -1], [2, -1], [1, 3], [1, 0], [-1, 3]])).tolist()
        [False, True, True, False, False]
        """
        held = self._held
        if held is None or len(held) < self.k or np.round(self.floor, 12) < 1.0:
            return None
        last = self._last_held(held).events[0]
        ids = self.event_ids
        after = np.zeros(len(events), dtype=bool)
        tied = np.ones(len(events), dtype=bool)
        for column, mine in enumerate(last):
            tied &= events[:, column] >= 0
            if not tied.any():
                break
            at = np.flatnonzero(tied)
            theirs = ids[events[at, column]]
            after[at[theirs > ids[mine]]] = True
            tied[at[theirs != ids[mine]]] = False
        return after

    def prepare(self, event_ids: np.ndarray) -> None:
        pass

    def finish(self, k: int) -> Answer:
        return self._held if self._held is not None else Answer.concat([], k)


class CountedRows(_CountingSink):
    """How many rows there are; none is kept."""

    def add(self, answer: Answer) -> None:
        self._rows += len(answer)

    def finish(self, k: int) -> Answer:
        return Answer.concat([], k)


class StreamedRows(_CountingSink):
    """Every row, handed to ``deliver`` in parts of ``part_rows`` rows (the last part
    fewer) in the order found (the receiver sorts a part if it wants: :func:`~uncertain_
    cep.query.evaluation.answer.ranked`); nothing is kept beyond the part being filled,
    so memory does not grow with the answer."""

    def __init__(self, deliver: Callable[[Answer], None], part_rows: int) -> None:
        if isinstance(part_rows, bool) or not isinstance(part_rows, int) or part_rows < 1:
            raise ValueError(f"parts hold part_rows >= 1 rows, got {part_rows!r}")
        super().__init__()
        self.deliver = deliver
        self.part_rows = part_rows
        self._waiting: list[Answer] = []
        self._held = 0

    def add(self, answer: Answer) -> None:
        if not len(answer):
            return
        self._waiting.append(answer)
        self._held += len(answer)
        self._rows += len(answer)
        if self._held >= self.part_rows:
            waiting = (self._waiting[0] if len(self._waiting) == 1
                       else Answer.concat(self._waiting, answer.events.shape[1]))
            whole = len(waiting) - len(waiting) % self.part_rows
            # The rest copied: a view would keep the whole batch until the next part.
            rest = waiting.take(np.arange(whole, len(waiting)))
            self._waiting, self._held = ([rest], len(rest)) if len(rest) else ([], 0)
            for start in range(0, whole, self.part_rows):
                self.deliver(waiting.rows(start, start + self.part_rows))

    def finish(self, k: int) -> Answer:
        if self._waiting:
            part = Answer.concat(self._waiting, k)
            self._waiting, self._held = [], 0
            self.deliver(part)
        return Answer.concat([], k)
