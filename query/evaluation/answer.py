"""A query's answer as columns: one row per tuple (SEMANTICS A4).

Every strategy returns an :class:`Answer`: the tuples' archive rows (one column per
positive item), their confidences, and the earliest and latest instant of each match.
The answer table users see (:func:`answer_table`) is built from it without a Python loop
over rows, apart from making each row's tuple of event ids. For an archive whose times
were datetimes, ``t_first`` and ``t_last`` are datetimes in the input's time zone: the
start of the instant (:meth:`TimeAxis.datetimes
<uncertain_cep.model.time_axis.TimeAxis.datetimes>`).

>>> a = Answer.from_matches([Match((0, 2), 0.25, 1, 4), Match((1, 2), 0.5, 2, 4)], 2)
>>> answer_table(a, np.array(["x", "y", "z"], dtype=object))
   events  confidence  t_first  t_last
0  (y, z)        0.50        2       4
1  (x, z)        0.25        1       4
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numba
import numpy as np
import pandas as pd

from uncertain_cep.model.time_axis import TimeAxis

__all__ = ["RESULT_COLUMNS", "Answer", "Match", "answer_table", "best_rows",
           "distinct_events", "ranked", "significant", "table_from_rows", "with_ids"]

RESULT_COLUMNS = ["events", "confidence", "t_first", "t_last"]


@dataclass(frozen=True)
class Match:
    """One answer row: the tuple, its confidence, and its earliest/latest instants."""

    events: tuple[int, ...]
    confidence: float
    t_first: int
    t_last: int


@dataclass(frozen=True)
class Answer:
    """Answer rows as columns: ``events`` (n x k archive rows), ``confidence``,
    ``t_first``, ``t_last``; in no particular order. ``ids``: each row's tuple of event
    ids, where made already (:func:`with_ids`), else None."""

    events: np.ndarray
    confidence: np.ndarray
    t_first: np.ndarray
    t_last: np.ndarray
    ids: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.confidence)

    @classmethod
    def from_matches(cls, matches: Sequence[Match], k: int) -> Answer:
        """From answer rows as :class:`~uncertain_cep.query.evaluation.context.Match` objects."""
        events = np.array([m.events for m in matches], dtype=np.int64).reshape(-1, k)
        return cls(events, np.array([m.confidence for m in matches], dtype=np.float64),
                   np.array([m.t_first for m in matches], dtype=np.int64),
                   np.array([m.t_last for m in matches], dtype=np.int64))

    @classmethod
    def concat(cls, parts: Sequence[Answer], k: int) -> Answer:
        if not parts:
            return cls(np.zeros((0, k), np.int64), np.zeros(0), np.zeros(0, np.int64),
                       np.zeros(0, np.int64))
        ids = [p.ids for p in parts if p.ids is not None]
        return cls(np.concatenate([p.events for p in parts]),
                   np.concatenate([p.confidence for p in parts]),
                   np.concatenate([p.t_first for p in parts]),
                   np.concatenate([p.t_last for p in parts]),
                   np.concatenate(ids) if len(ids) == len(parts) else None)

    def take(self, rows: np.ndarray) -> Answer:
        return Answer(self.events[rows], self.confidence[rows], self.t_first[rows],
                      self.t_last[rows], None if self.ids is None else self.ids[rows])

    def rows(self, start: int, stop: int) -> Answer:
        """Rows ``start`` to ``stop`` (views, not copies)."""
        return self.take(slice(start, stop))  # type: ignore[arg-type]


def with_ids(answer: Answer, event_ids: np.ndarray) -> Answer:
    """The answer with each row's tuple of event ids made (``answer.ids``), which the
    answer table then only puts in order: the one part of it that needs no other row,
    so the batch engine makes it while its spare thread finishes.

    >>> a = with_ids(Answer.from_matches([Match((0, 2), 0.25, 1, 4)], 2),
    ...              np.array(["x", "y", "z"], dtype=object))
    >>> a.ids.tolist()
    [('x', 'z')]
    """
    if answer.ids is not None:
        return answer
    order = np.arange(len(answer))
    values = _shared_id_objects(*_distinct_events(answer.events, len(event_ids)), event_ids)
    return replace(answer, ids=_tuples(values(order), len(answer)))


def ranked(answer: Answer, event_ids: np.ndarray) -> np.ndarray:
    """The answer's rows in the answer table's order (confidence descending, then event
    ids: SEMANTICS A4), as row numbers: what :func:`answer_table` sorts by.

    >>> a = Answer.from_matches([Match((0, 2), 0.25, 1, 4), Match((1, 2), 0.5, 2, 4),
    ...                          Match((0, 1), 0.5, 1, 3)], 2)
    >>> ranked(a, np.array(["x", "y", "z"], dtype=object)).tolist()
    [2, 1, 0]
    """
    return _sort_order(_event_keys(answer.events, event_ids),
                       significant(answer.confidence, 15))


def best_rows(answer: Answer, event_ids: np.ndarray, k: int) -> np.ndarray:
    """The row numbers of the answer's first ``k`` rows in the answer table's order
    (:func:`ranked`), in no particular order, found by selection rather than a sort:
    the k-th confidence (as the order rounds it) by a partition, and among the rows tied
    there, the fewest by event ids the same way. What a top-k answer keeps of each batch
    (one of millions of rows tied at confidence 1 costs a pass, not a sort).

    >>> a = Answer.from_matches([Match((0, 2), 0.25, 1, 4), Match((1, 2), 0.5, 2, 4),
    ...                          Match((0, 1), 0.5, 1, 3)], 2)
    >>> sorted(best_rows(a, np.array(["x", "y", "z"], dtype=object), 1).tolist())
    [2]
    """
    n = len(answer)
    if n <= k:
        return np.arange(n)
    primary = -np.round(significant(answer.confidence, 15), 12)
    cut = np.partition(primary, k - 1)[k - 1]
    above = np.flatnonzero(primary < cut)
    tied = np.flatnonzero(primary == cut)
    need = k - len(above)
    if len(tied) > need:
        keys = _event_keys(answer.events[tied], event_ids)
        first = keys[-1]            # lexsort's primary key: the first columns' ranks
        bound = np.partition(first, need - 1)[need - 1]
        near = first <= bound
        tied = tied[near]
        if len(tied) > need:
            tied = tied[np.lexsort([key[near] for key in keys])[:need]]
    return np.concatenate([above, tied])


def answer_table(answer: Answer, event_ids: np.ndarray,
                 time_axis: TimeAxis | None = None) -> pd.DataFrame:
    """The answer table: ``events`` (a tuple of event ids per row, in pattern order),
    ``confidence``, ``t_first``, ``t_last``; sorted by confidence descending, then by
    the event ids. ``t_first``/``t_last`` are instants, or with a datetime
    ``time_axis`` (the archive's) the start of those instants as datetimes."""
    # The answer's distinct events, found once for its sort keys and its id objects.
    distinct, position = _distinct_events(answer.events, len(event_ids))
    keys = _keys_of(distinct, position, event_ids)
    made = answer.ids
    if made is not None:
        return _table(keys, answer.confidence, answer.t_first, answer.t_last,
                      lambda order: made[order], time_axis)
    values = _shared_id_objects(distinct, position, event_ids)
    return _table(keys, answer.confidence, answer.t_first, answer.t_last,
                  lambda order: _tuples(values(order), len(order)), time_axis)


def _shared_id_objects(distinct: np.ndarray, position: np.ndarray, event_ids: np.ndarray
                       ) -> Callable[[np.ndarray], list[np.ndarray]]:
    """The id columns, in a given row order, as object arrays in which each event's id
    is one Python object, made once per distinct event (``distinct``, each cell's
    ``position`` among them: :func:`_distinct_events`): answer rows share events, and
    making an int per cell would cost (and free) millions of objects. The rows are put
    in order before the objects are gathered (one gather of objects, not two)."""
    objects = np.empty(len(distinct), dtype=object)
    objects[:] = event_ids[distinct].tolist()
    # (One gather of whole rows, then per column: gathering a column of a row-major
    # matrix reads every row's cache line once per column.)
    return lambda order: list(objects[position[order].T.copy()])


def table_from_rows(rows: Sequence[tuple[tuple[Any, ...], float, int, int]],
                    time_axis: TimeAxis | None = None) -> pd.DataFrame:
    """:func:`answer_table` from ``(event ids, confidence, t_first, t_last)`` rows (as
    time slices return them, in instants)."""
    k = len(rows[0][0]) if rows else 0
    ids = [np.array([r[0][c] for r in rows], dtype=object) for c in range(k)]
    ids = [col.astype(np.int64) if all(isinstance(v, int) for v in col) else col
           for col in ids]
    def made(order: np.ndarray) -> np.ndarray:
        # (Numeric ids become lists first, so that tuples hold Python ints, not numpy
        # scalars.)
        return _tuples([col[order].tolist() for col in ids], len(order))

    if rows and k:
        event_ids, inverse = np.unique(np.concatenate(ids), return_inverse=True)
        keys = _event_keys(inverse.reshape(k, len(rows)).T.copy(), event_ids)
    else:
        keys = []
    return _table(keys, np.array([r[1] for r in rows], dtype=np.float64),
                  np.array([r[2] for r in rows], dtype=np.int64),
                  np.array([r[3] for r in rows], dtype=np.int64), made, time_axis)


def _table(keys: list[np.ndarray], confidence: np.ndarray, t_first: np.ndarray,
           t_last: np.ndarray, cells: Callable[[np.ndarray], np.ndarray],
           time_axis: TimeAxis | None = None) -> pd.DataFrame:
    """The sorted table; ``keys``: the rows' id sort keys (:func:`_event_keys`);
    ``cells``: the rows' tuples of ids in a given row order; ``time_axis``: datetime
    times give datetime ``t_first``/``t_last``."""
    conf = significant(confidence, 15)
    order = _sort_order(keys, conf)
    series = pd.Series(cells(order), dtype=object, copy=False)
    instants = [t[order].astype(np.int64) for t in (t_first, t_last)]
    times: list[Any] = (instants if time_axis is None or not time_axis.is_datetime
                        else [time_axis.datetimes(t) for t in instants])
    first, last = times
    return pd.DataFrame({"events": series, "confidence": conf[order],
                         "t_first": first, "t_last": last}, columns=RESULT_COLUMNS)


def _sort_order(keys: list[np.ndarray], conf: np.ndarray) -> np.ndarray:
    """The rows by confidence descending, then by ``keys`` (``np.lexsort``'s order: the
    last key first): one sort of the confidences, then a lexsort of the tied rows alone
    (one stable pass per key over every row cost 1.6 s of 2M rows of 27 ids).

    >>> _sort_order([np.array([5, 1, 3, 0])], np.array([0.5, 0.5, 0.9, 0.5])).tolist()
    [2, 3, 1, 0]
    """
    # Confidences equal up to rounding noise must not reorder rows between strategies.
    primary = -np.round(conf, 12)
    order = np.argsort(primary, kind="stable")
    ranked = primary[order]
    same = ranked[1:] == ranked[:-1]
    if not keys or not same.any():
        return order
    if 2 * int(same.sum()) > len(same):
        # Mostly tied (localization n = 20 query 2: 2,972 distinct confidences over
        # 1.18M rows): one lexsort of all is cheaper than gathering the tied rows.
        return np.lexsort([*keys, primary])
    tied = np.zeros(len(order), dtype=bool)
    tied[1:] |= same
    tied[:-1] |= same
    at = np.flatnonzero(tied)
    run = np.cumsum(np.concatenate([[True], ~same]))[at]
    rows = order[at]
    order[at] = rows[np.lexsort([key[rows] for key in keys] + [run])]
    return order


def _tuples(columns: Sequence[Any], n: int) -> np.ndarray:
    """The ``n`` rows of ``columns`` as tuples, in an object array (object columns are
    zipped as they are: their items are the id objects already)."""
    rows = zip(*columns) if len(columns) else (() for _ in range(n))
    return np.fromiter(rows, dtype=object, count=n)


def significant(values: np.ndarray, digits: int = 15) -> np.ndarray:
    """``values`` rounded to ``digits`` significant digits: drops the last-bit noise of
    summing paths (0.9999999999999999 is reported as 1.0), far inside the 1e-9 the
    contract allows.

    >>> significant(np.array([0.9999999999999999, 0.25, 1 / 3, 0.0])).tolist()
    [1.0, 0.25, 0.333333333333333, 0.0]
    """
    values = np.asarray(values, dtype=np.float64)
    out = values.copy()
    finite = np.isfinite(values) & (values != 0)
    x = values[finite]
    scale = 10.0 ** (digits - 1 - np.floor(np.log10(np.abs(x))))
    out[finite] = np.round(x * scale) / scale
    return out


def _event_keys(events: np.ndarray, event_ids: np.ndarray) -> list[np.ndarray]:
    """Sort keys of answer rows by their event ids, for ``np.lexsort`` (last key first):
    each distinct event's rank among the ids the rows hold, packed in column order into
    as few int64 keys as hold them (62 bits each), in one pass over the rows. Ranks, not
    ids: they need fewer bits, and ids of any type (numbers past 2**63, strings) order
    by them as by themselves.

    >>> keys = _event_keys(np.array([[0, 1], [2, 3], [0, 4]]),
    ...                    np.array([30, 0, 10, 50, 20]))
    >>> len(keys), np.lexsort(keys).tolist()
    (1, [1, 0, 2])
    """
    n, k = events.shape
    if n == 0 or k == 0:
        return []
    return _keys_of(*_distinct_events(events, len(event_ids)), event_ids)


def _keys_of(distinct: np.ndarray, position: np.ndarray, event_ids: np.ndarray
             ) -> list[np.ndarray]:
    """:func:`_event_keys` of rows given as their distinct events and each cell's
    position among them (:func:`_distinct_events`)."""
    if position.size == 0:
        return []
    rank = np.unique(event_ids[distinct], return_inverse=True)[1].ravel().astype(np.int64)
    bits = max(len(distinct) - 1, 1).bit_length()
    keys = _packed_ranks(position, rank, bits, max(62 // bits, 1))
    return list(keys[::-1])


def distinct_events(rows: np.ndarray, n_events: int) -> np.ndarray:
    """The distinct archive rows (events) that ``rows`` hold, ascending, of an archive of
    ``n_events``: by a sort of the cells where they are few (a 134-row answer over 1M
    events need not clear and scan an array of 1M), else by a mark per archive event.

    >>> distinct_events(np.array([[4, 1], [1, 2]]), 100).tolist()
    [1, 2, 4]
    """
    if _few(rows, n_events):
        return np.unique(rows)
    used = np.zeros(n_events, dtype=bool)
    used[np.asarray(rows).ravel()] = True
    return np.flatnonzero(used)


def _few(rows: np.ndarray, n_events: int) -> bool:
    return np.size(rows) * 16 < n_events


def _distinct_events(rows: np.ndarray, n_events: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`distinct_events`, and each cell's position among them (``rows``' shape,
    int64)."""
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    if _few(rows, n_events):
        distinct, inverse = np.unique(rows.ravel(), return_inverse=True)
        return distinct, inverse.reshape(rows.shape).astype(np.int64, copy=False)
    distinct = distinct_events(rows, n_events)
    position = np.zeros(n_events, dtype=np.int64)
    position[distinct] = np.arange(len(distinct))
    return distinct, position[rows]


@numba.njit(cache=True, nogil=True)
def _packed_ranks(events: np.ndarray, rank: np.ndarray, bits: int, per_key: int
                  ) -> np.ndarray:
    """Each answer row's event ranks packed into int64 sort keys (:func:`_event_keys`;
    SEMANTICS A4's order by event ids; docs/design.md, Answers).

    Parameters
    ----------
    events : (n, k) int64
        The answer's rows, one column per positive item, each cell an index into
        ``rank`` (the event's position among the answer's distinct events).
    rank : int64
        Per distinct event, its id's rank among the ids the answer holds.
    bits : int
        The bits a rank takes.
    per_key : int
        The ranks one key holds (``bits * per_key <= 62``, or 1 when a rank is wider).

    Returns
    -------
    (n_keys, n) int64
        ``n_keys = ceil(k / per_key)`` keys per row: key ``j`` packs the ranks of
        columns ``j * per_key`` on, the first in the highest bits, so that comparing
        keys in order compares the rows' ids column by column.
    """
    n, k = events.shape
    n_keys = (k + per_key - 1) // per_key
    out = np.zeros((n_keys, n), dtype=np.int64)
    for i in range(n):
        for j in range(n_keys):
            packed = 0
            for c in range(j * per_key, min(k, (j + 1) * per_key)):
                packed = (packed << bits) | rank[events[i, c]]
            out[j, i] = packed
    return out
