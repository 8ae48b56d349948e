"""One step of the join engine: index ranges by binary search, then the exact filter.

TPStream section 5.2 finds the partners of a partial match in a symbol's buffer by range
queries on the endpoints. A :class:`SymbolArrays` holds one symbol's situations of every
partition, sorted by (partition id, ts); :meth:`SymbolArrays.below` is the binary search.
A :class:`Step` binds one more symbol: :meth:`Step.ranges` turns every constraint to the
symbols already bound, and the window, into a run of candidate indices per partial match;
:meth:`Step.keep` then checks each candidate exactly.

>>> import pandas as pd
>>> s = SymbolArrays(pd.DataFrame({"ts": [0, 5, 1], "te": [2, 9, 3]}),
...                  np.array([0, 0, 1]), partitions=2)
>>> s.ts.tolist(), s.below(Endpoint.ts, np.array([0, 0, 1]), np.array([5, 5, 5]), False)
([0, 5, 1], array([1, 1, 3]))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from uncertain_cep.interval.patterns import (
    Constraint,
    FollowedBy,
    RelationConstraint,
    TemporalPattern,
)
from uncertain_cep.interval.relations import (
    ALLEN_RELATIONS,
    AllenRelation,
    Endpoint,
    EndpointRestriction,
    definition,
    holds,
)
from uncertain_cep.interval.tables import (
    checked_situation_table,
    is_lexsorted,
    partition_ids,
)

__all__ = ["Step", "SymbolArrays", "plan_steps", "symbol_arrays"]

_FLIP = {"<": ">", "<=": ">=", "=": "=", ">=": "<=", ">": "<"}


class SymbolArrays:
    """One symbol's situations over all partitions, sorted by (partition id, ts).

    Rows whose partition id is negative (a missing key) are dropped. Since situations of
    one symbol never overlap, ``te`` is sorted within a partition as well.
    """

    def __init__(self, table: pd.DataFrame, pid: np.ndarray, partitions: int) -> None:
        ts = table["ts"].to_numpy()
        if len(pid) and pid[0] >= 0 and is_lexsorted([pid, ts]):
            # Already in (partition, ts) order with no missing key: no copy.
            self.table = table.reset_index(drop=True)
            self.pid = np.asarray(pid, dtype=np.int64)
        else:
            order = np.lexsort((ts, pid))
            order = order[pid[order] >= 0]
            self.table = table.iloc[order].reset_index(drop=True)
            self.pid = np.asarray(pid[order], dtype=np.int64)
        self.ts = self.table["ts"].to_numpy()
        self.te = self.table["te"].to_numpy()
        every = np.arange(partitions)
        self._partitions = partitions
        self._one_partition = partitions <= 1
        self.first = np.searchsorted(self.pid, every, side="left")
        self.stop = np.searchsorted(self.pid, every, side="right")
        self._ranked: dict[Endpoint, tuple[np.ndarray, np.ndarray]] = {}
        self._offset: dict[Endpoint, tuple[int, int, np.ndarray] | None] = {}

    def __len__(self) -> int:
        return len(self.pid)

    def end(self, which: Endpoint) -> np.ndarray:
        return self.te if which is Endpoint.te else self.ts

    def below(self, which: Endpoint, pid: np.ndarray, values: np.ndarray,
              inclusive: bool) -> np.ndarray:
        """Per query, the index of the first situation of partition ``pid`` whose
        endpoint ``which`` is not below ``values`` (``< value``, or ``<= value`` if
        ``inclusive``); the partition's end if none.

        One ``searchsorted`` serves all partitions, on the key ``pid * width + offset``:
        for integer times the offset is the endpoint minus the smallest (queries clipped
        to just outside the range), else its rank among the distinct endpoints (one more
        search per query, exact for any numbers: no arithmetic on the times themselves).
        """
        side: Literal["left", "right"] = "right" if inclusive else "left"
        if self._one_partition:
            # Every query is in partition 0, the only one: the endpoints alone are sorted.
            return np.searchsorted(self.end(which), values, side=side)
        if values.dtype.kind == "i" and self._offsets(which) is not None:
            low, width, composite = self._offsets(which)  # type: ignore[misc]
            shifted = np.clip(values, low - 1, low + width - 2) - (low - 1)
            return np.searchsorted(composite, pid * width + shifted, side=side)
        if which not in self._ranked:
            ends = self.end(which)
            distinct = np.unique(ends)
            self._ranked[which] = (distinct, self.pid * (len(distinct) + 1)
                                   + np.searchsorted(distinct, ends))
        distinct, composite = self._ranked[which]
        rank = np.searchsorted(distinct, values, side=side)
        return np.searchsorted(composite, pid * (len(distinct) + 1) + rank, side="left")

    def _offsets(self, which: Endpoint) -> tuple[int, int, np.ndarray] | None:
        """(smallest endpoint, width, composite keys) for integer endpoints whose keys fit
        in an int64; ``None`` otherwise."""
        if which not in self._offset:
            ends = self.end(which)
            found = None
            if ends.dtype.kind == "i" and len(ends):
                low, high = int(ends.min()), int(ends.max())
                width = high - low + 3  # room for a query below and one above the range
                if width * (self._partitions + 1) < 2**62:
                    found = (low, width,
                             self.pid * width + (ends.astype(np.int64) - (low - 1)))
            self._offset[which] = found
        return self._offset[which]


def symbol_arrays(situations: Mapping[str, pd.DataFrame], pattern: TemporalPattern
                  ) -> tuple[dict[str, SymbolArrays], int]:
    """Every symbol's checked situations as :class:`SymbolArrays` over shared partition
    ids, and the number of partitions."""
    names = pattern.symbol_names
    tables = {name: checked_situation_table(situations, name, pattern) for name in names}
    pids, partitions = partition_ids(tables, list(pattern.partition_by))
    return ({name: SymbolArrays(tables[name], pids[name], partitions) for name in names},
            partitions)


def _tighten(symbol: SymbolArrays, pid: np.ndarray, low: np.ndarray, high: np.ndarray,
             which: Endpoint, op: str, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Narrow the runs ``[low, high)`` to the situations with ``which op values``."""
    if op in ("<", "<=", "="):
        high = np.minimum(high, symbol.below(which, pid, values, inclusive=op != "<"))
    if op in (">", ">=", "="):
        low = np.maximum(low, symbol.below(which, pid, values, inclusive=op == ">"))
    return low, high


@dataclass(frozen=True)
class _Bound:
    """``new.end op other.other_end``: one endpoint restriction seen from the new symbol."""

    end: Endpoint
    op: str
    other: str
    other_end: Endpoint


def _seen_from(restriction: EndpointRestriction, new: str) -> _Bound:
    if restriction.left == new:
        return _Bound(restriction.left_end, restriction.op, restriction.right,
                      restriction.right_end)
    return _Bound(restriction.right_end, _FLIP[restriction.op], restriction.left,
                  restriction.left_end)


def _relation_bounds(constraint: RelationConstraint, new: str) -> list[list[_Bound]]:
    """One conjunction of bounds per relation of the disjunction."""
    names = {"A": constraint.left, "B": constraint.right}
    out = []
    for relation in sorted(constraint.relations, key=ALLEN_RELATIONS.index):
        out.append([_seen_from(EndpointRestriction(names[r.left], r.left_end, r.op,
                                                   names[r.right], r.right_end), new)
                    for r in definition(relation)])
    return out


@dataclass(frozen=True)
class Step:
    """Binding symbol ``new`` after the symbols ``bound``: its constraints and window."""

    new: str
    bound: frozenset[str]
    constraints: tuple[Constraint, ...]
    within: float | None

    def ranges(self, symbols: Mapping[str, SymbolArrays], pid: np.ndarray,
               rows: Mapping[str, np.ndarray], latest: np.ndarray,
               earliest: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per partial match, a run ``[low, high)`` of ``new``'s indices holding every
        partner (and possibly more: :meth:`keep` decides)."""
        new = symbols[self.new]
        low, high = new.first[pid], new.stop[pid]
        # A disjunction's relations ask the same few questions ("first B with ts >= A.te");
        # each is one binary search, asked once.
        found: dict[tuple[Endpoint, str, Endpoint, bool], np.ndarray] = {}

        def first_not_below(b: _Bound, inclusive: bool) -> np.ndarray:
            key = (b.end, b.other, b.other_end, inclusive)
            if key not in found:
                values = symbols[b.other].end(b.other_end)[rows[b.other]]
                found[key] = new.below(b.end, pid, values, inclusive)
            return found[key]

        def tighten(b: _Bound, low: np.ndarray, high: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
            if b.op in ("<", "<=", "="):
                high = np.minimum(high, first_not_below(b, b.op != "<"))
            if b.op in (">", ">=", "="):
                low = np.maximum(low, first_not_below(b, b.op == ">"))
            return low, high

        for constraint in self.constraints:
            if isinstance(constraint, EndpointRestriction):
                low, high = tighten(_seen_from(constraint, self.new), low, high)
            elif isinstance(constraint, FollowedBy):
                low, high = self._followed_by_range(constraint, symbols, pid, rows, low, high)
            elif len(constraint.relations) < len(ALLEN_RELATIONS):
                # A disjunction: the hull of the runs of its relations (followed_by and
                # follows among them).
                hull_low = np.full(len(pid), len(new), dtype=np.int64)
                hull_high = np.zeros(len(pid), dtype=np.int64)
                runs = []
                for conjunction in _relation_bounds(constraint, self.new):
                    r_low, r_high = low, high
                    for b in conjunction:
                        r_low, r_high = tighten(b, r_low, r_high)
                    runs.append((r_low, r_high))
                runs.extend(self._followed_by_range(succession, symbols, pid, rows, low, high)
                            for succession in constraint.followed_by_pairs())
                for r_low, r_high in runs:
                    some = r_low < r_high
                    hull_low = np.where(some, np.minimum(hull_low, r_low), hull_low)
                    hull_high = np.where(some, np.maximum(hull_high, r_high), hull_high)
                low, high = hull_low, hull_high
        if self.within is not None:
            within = self.within
            if latest.dtype.kind == "i" and earliest.dtype.kind == "i" and \
                    float(within).is_integer():
                # Integer times and a whole window: the bounds stay integers, exact, and
                # take the integer binary search.
                start_from, end_by = _saturated_window(latest, earliest, int(within))
            else:
                start_from, end_by = latest - within, earliest + within
            if np.issubdtype(start_from.dtype, np.floating):
                # The exact test is max(te) - min(ts) <= w; the sums here may round the
                # other way, so widen by far more than a rounding error.
                slack = 1e-9 * (np.abs(start_from) + np.abs(end_by) + within)
                start_from, end_by = start_from - slack, end_by + slack
            low, high = _tighten(new, pid, low, high, Endpoint.ts, ">=", start_from)
            low, high = _tighten(new, pid, low, high, Endpoint.te, "<=", end_by)
        return low, high

    def _followed_by_range(self, constraint: FollowedBy, symbols: Mapping[str, SymbolArrays],
                           pid: np.ndarray, rows: Mapping[str, np.ndarray], low: np.ndarray,
                           high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """At most one candidate: B is the first situation after A.te (and none of B's
        symbol ends inside the gap), A the last before B.ts (and none of A's starts in it)."""
        new = symbols[self.new]
        if constraint.right == self.new:
            a, i = symbols[constraint.left], rows[constraint.left]
            a_te = a.te[i]
            low = np.maximum(low, new.below(Endpoint.ts, pid, a_te, inclusive=True))
            high = np.minimum(high, new.below(Endpoint.te, pid, a_te, inclusive=True) + 1)
            following, has = _neighbour(a, i, pid, +1)
            cap = new.below(Endpoint.ts, pid, a.ts[following], inclusive=True)
            return low, np.where(has, np.minimum(high, cap), high)
        b, k = symbols[constraint.right], rows[constraint.right]
        b_ts = b.ts[k]
        high = np.minimum(high, new.below(Endpoint.te, pid, b_ts, inclusive=False))
        low = np.maximum(low, new.below(Endpoint.ts, pid, b_ts, inclusive=False) - 1)
        previous, has = _neighbour(b, k, pid, -1)
        floor = new.below(Endpoint.te, pid, b.te[previous], inclusive=False)
        return np.where(has, np.maximum(low, floor), low), high

    def keep(self, symbols: Mapping[str, SymbolArrays], pid: np.ndarray,
             rows: Mapping[str, np.ndarray], latest: np.ndarray,
             earliest: np.ndarray) -> np.ndarray:
        """Whether each candidate satisfies every constraint of this step and the window,
        evaluated as the reference evaluates them."""
        ends = {name: (symbols[name].ts[r], symbols[name].te[r]) for name, r in rows.items()}
        ok = np.ones(len(pid), dtype=bool)
        for constraint in self.constraints:
            if isinstance(constraint, EndpointRestriction):
                ok &= constraint.evaluate(ends)
                continue
            (a_ts, a_te), (b_ts, b_te) = ends[constraint.left], ends[constraint.right]
            if isinstance(constraint, RelationConstraint):
                some = np.zeros(len(pid), dtype=bool)
                for relation in constraint.relations:
                    some |= holds(relation, a_ts, a_te, b_ts, b_te)
                for succession in constraint.followed_by_pairs():
                    some |= _followed_by_holds(succession, symbols, rows, pid, ends)
                ok &= some
            else:
                ok &= _followed_by_holds(constraint, symbols, rows, pid, ends)
        if self.within is not None:
            ok &= latest - earliest <= self.within
        return ok


def _followed_by_holds(constraint: FollowedBy, symbols: Mapping[str, SymbolArrays],
                       rows: Mapping[str, np.ndarray], pid: np.ndarray,
                       ends: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """``left before right`` with no other situation of either symbol in the gap."""
    (a_ts, a_te), (b_ts, b_te) = ends[constraint.left], ends[constraint.right]
    ok = holds(AllenRelation.before, a_ts, a_te, b_ts, b_te)
    ok &= ~_meets_gap(symbols[constraint.left], rows[constraint.left], +1, pid, a_te, b_ts)
    ok &= ~_meets_gap(symbols[constraint.right], rows[constraint.right], -1, pid, a_te, b_ts)
    return ok


def _neighbour(symbol: SymbolArrays, rows: np.ndarray, pid: np.ndarray,
               step: int) -> tuple[np.ndarray, np.ndarray]:
    """The next (``step=+1``) or previous (-1) situation's index, and whether it exists
    in the same partition."""
    there = rows + step
    inside = (there >= 0) & (there < len(symbol))
    there = np.clip(there, 0, max(len(symbol) - 1, 0))
    return there, inside & (symbol.pid[there] == pid)


def _meets_gap(symbol: SymbolArrays, rows: np.ndarray, step: int, pid: np.ndarray,
               a_te: np.ndarray, b_ts: np.ndarray) -> np.ndarray:
    """Whether the neighbour of the chosen situation intersects the gap ``[A.te, B.ts)``.

    Of A's symbol only the next situation can (earlier ones end by A.ts, later ones start
    after the next ends), of B's only the previous; the test is the reference's.
    """
    there, has = _neighbour(symbol, rows, pid, step)
    return has & (symbol.ts[there] < b_ts) & (a_te < symbol.te[there])


def plan_steps(pattern: TemporalPattern, order: tuple[str, ...]) -> list[Step]:
    """The steps binding ``order[1:]``; ``steps[0]`` binds ``order[0]`` (no constraint).

    Each constraint is checked once, at the step binding the later of its symbols.
    ``pattern`` has its window in data units.
    """
    within = None if pattern.within is None else pattern.within.value
    steps = []
    for level, name in enumerate(order):
        bound = frozenset(order[:level])
        mine = tuple(c for c in pattern.constraints
                     if name in c.symbols and set(c.symbols) - {name} <= bound)
        steps.append(Step(name, bound, mine, within))
    return steps


def _saturated_window(latest: np.ndarray, earliest: np.ndarray, within: int
                      ) -> tuple[np.ndarray, np.ndarray]:
    """``latest - within`` and ``earliest + within`` on int64 times, saturated at int64's
    ends instead of wrapping around: a bound past an end admits every time, as the end
    does.

    >>> big = 2**63 - 1
    >>> lo, hi = _saturated_window(np.array([5, -big]), np.array([5, big]), big)
    >>> lo.tolist() == [5 - big, -big - 1], hi.tolist() == [big, big]
    (True, True)
    """
    info = np.iinfo(np.int64)
    w = min(within, int(info.max))
    floor, ceiling = int(info.min) + w, int(info.max) - w
    with np.errstate(over="ignore"):
        start_from = np.where(latest >= floor, latest - np.int64(w), info.min)
        end_by = np.where(earliest <= ceiling, earliest + np.int64(w), info.max)
    return start_from.astype(np.int64), end_by.astype(np.int64)
