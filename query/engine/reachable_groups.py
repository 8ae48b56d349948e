"""The dependency groups a query's tuples may meet: the node table it needs to read.

A tuple's probability, and the weight of every event standing in one of its negation
gaps, depend only on the OI-trees of the groups of those events (SEMANTICS A3: groups are
independent). So a query reads the node table of the groups holding a candidate of one
of its items, positive or negated, and of no other (``EventIndex.node_table_of``): the
rest of a shard's node table is never expanded (a 3.8M-event shard of the 100M archive:
1.1-1.7 s against 3.4-4.2 s, docs/benchmarks.md).

With a window ``L`` fewer candidates can take part. Every instant a tuple involves (its
events', and those of the events in its gaps, which lie between its first and last)
lies in ``[ts(e1), ts(e1) + L]`` (A4). The tuple holds an event ``x`` of any positive
item, say the one with fewest candidates, at ``ts(x)`` in that span, so ``ts(e1) >=
ts(x) - L`` and every instant involved lies in ``[ts(x) - L, ts(x) + L]``, within
``[t_min(x) - L, t_max(x) + L]`` (``t_min``, ``t_max``: ``x``'s feasible instants). A
candidate whose feasible instants meet none of those *reaches* takes part in no tuple.

>>> t_min, t_max = np.array([0, 10, 40, 100]), np.array([2, 12, 41, 101])
>>> starts, ends = reaches(t_min[[1]], t_max[[1]], 5.0)
>>> starts.tolist(), ends.tolist()
([5], [17])
>>> meeting(starts, ends, t_min, t_max).tolist()
[False, True, False, False]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["groups_met", "meeting", "reaches"]

_INT64 = np.iinfo(np.int64)
# Windows up to this many instants are reached exactly in int64; a longer one reaches
# every candidate.
_EXACT_WINDOW = 2.0**52


def reaches(t_min: np.ndarray, t_max: np.ndarray, window: float
            ) -> tuple[np.ndarray, np.ndarray]:
    """The instants ``[t_min - window, t_max + window]`` of some events, merged into
    disjoint intervals (ascending starts, inclusive ends; integers: instants are)."""
    if not len(t_min):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    # Instants are integers: an event at most ``window`` away is at most floor(window).
    wide = math.floor(window)
    t_min, t_max = np.asarray(t_min, dtype=np.int64), np.asarray(t_max, dtype=np.int64)
    # Saturated at int64's ends (where the wrapped difference is not taken).
    with np.errstate(over="ignore"):
        lo = np.where(t_min < _INT64.min + wide, _INT64.min, t_min - wide)
        hi = np.where(t_max > _INT64.max - wide, _INT64.max, t_max + wide)
    order = np.argsort(lo, kind="stable")
    lo, hi = lo[order], np.maximum.accumulate(hi[order])
    # An interval opens where its start lies past every end before it (ends touching
    # the next start merge too: both are inclusive).
    opens = np.concatenate([[True], lo[1:] > hi[:-1] + 1])
    first = np.flatnonzero(opens)
    ends = hi[np.concatenate([first[1:] - 1, [len(hi) - 1]])]
    return lo[first], ends


def meeting(starts: np.ndarray, ends: np.ndarray, t_min: np.ndarray, t_max: np.ndarray
            ) -> np.ndarray:
    """Whether each event's instants ``[t_min, t_max]`` meet one of the disjoint
    intervals ``[starts, ends]`` (ascending)."""
    if not len(starts):
        return np.zeros(len(t_min), dtype=bool)
    # The last interval starting by the event's end is the only one it can meet first.
    at = np.searchsorted(starts, np.asarray(t_max), side="right") - 1
    return (at >= 0) & (ends[np.maximum(at, 0)] >= np.asarray(t_min))


def groups_met(positive: Sequence[np.ndarray], negated: Sequence[np.ndarray],
               event_group: np.ndarray, t_min: np.ndarray, t_max: np.ndarray,
               window: float) -> np.ndarray:
    """The groups (ascending codes) of the candidates (archive rows) of every positive
    and negated item that may take part in a tuple within ``window`` (see the module
    docstring; every candidate without a finite window)."""
    every = [np.asarray(rows, dtype=np.int64) for rows in (*positive, *negated)]
    if positive and window <= _EXACT_WINDOW:
        fewest = min(every[:len(positive)], key=len)
        starts, ends = reaches(t_min[fewest], t_max[fewest], window)
        every = [rows[meeting(starts, ends, t_min[rows], t_max[rows])] for rows in every]
    if not every:
        return np.zeros(0, dtype=np.int64)
    return np.unique(event_group[np.concatenate(every)])
