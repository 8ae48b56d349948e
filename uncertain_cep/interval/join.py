"""The join engine: temporal pattern matching by range joins on sorted endpoints.

TPStream section 5.2 keeps per symbol a buffer of situations sorted by start and finds the
partners of a partial match by range queries on the endpoints; section 5.4 orders the
symbols by a cost model (:mod:`~uncertain_cep.interval.join_plan`). Here every partition
is processed at once, vectorised with numpy:

1. Each symbol's situations are sorted by (partition id, ts). The situations of one
   symbol never overlap (SEMANTICS B1), so within a partition ``te`` is sorted too and
   any bound on ``ts`` or ``te`` selects a contiguous run of indices.
2. Partial matches are arrays of indices, one array per bound symbol. For the next
   symbol each restriction ``new.ts|te  op  value`` (an Allen relation is a conjunction
   of such, a disjunction of relations takes the hull of their runs, the window bounds
   ``ts >= max(te) - w`` and ``te <= min(ts) + w``) becomes an index bound by
   ``np.searchsorted`` on a composite key (partition id, rank of the endpoint), so one
   call serves every partial match of every partition.
3. The runs are expanded into candidate pairs without a Python loop per partial match
   (``np.repeat``/``cumsum``) and filtered exactly by every constraint between the new
   symbol and the bound ones, evaluated as the reference evaluates it
   (:mod:`~uncertain_cep.interval.brute_force`), and by the window.

``followed_by`` needs the other situations of both symbols; with sorted, non-overlapping
situations only the next situation of A's symbol and the previous one of B's symbol can
meet the gap ``[A.te, B.ts)``, an index lookup.

>>> import pandas as pd
>>> from uncertain_cep.interval.language import parse_temporal_query
>>> q = parse_temporal_query("DEFINE A AS x > 0, B AS x < 0 PATTERN A meets; before B "
...                          "WITHIN 10")
>>> situations = {"A": pd.DataFrame({"ts": [0, 6], "te": [2, 8]}),
...               "B": pd.DataFrame({"ts": [2, 9], "te": [5, 11]})}
>>> match_join(situations, q)
   A_ts  A_te  B_ts  B_te  detected_at
0     0     2     2     5            2
1     6     8     9    11            9
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from uncertain_cep.errors import InvalidOptionError
from uncertain_cep.interval.join_plan import evaluation_order
from uncertain_cep.interval.join_steps import Step, SymbolArrays, plan_steps, symbol_arrays
from uncertain_cep.interval.patterns import TemporalPattern
from uncertain_cep.interval.tables import answer_frame

__all__ = ["match_join"]


def match_join(situations: Mapping[str, pd.DataFrame], pattern: TemporalPattern, *,
               time_unit: float | str | None = None, batch_size: int = 1 << 20,
               order: tuple[str, ...] | None = None) -> pd.DataFrame:
    """Every match of ``pattern`` among ``situations`` (SEMANTICS B3) by range joins.

    Takes and returns exactly what
    :func:`~uncertain_cep.interval.brute_force.match_brute_force` does (same columns,
    dtypes and row order).

    Parameters
    ----------
    situations : mapping of symbol name to DataFrame
        Per symbol: the PARTITION BY columns, ``ts``, ``te`` and each RETURN aggregate's
        source column, as :func:`~uncertain_cep.interval.situations.derive_situations`
        returns them.
    pattern : TemporalPattern
    time_unit : float or str, optional
        Seconds per data unit, if the window carries a unit.
    batch_size : int
        About how many candidate pairs one vectorised step expands at once (bounds memory).
    order : tuple of str, optional
        The evaluation order (every symbol once); by default the cost model of
        :func:`~uncertain_cep.interval.join_plan.evaluation_order` chooses it.

    Raises
    ------
    InputError
        As the reference: a symbol without a table, a missing column, ``ts >= te``, or
        overlapping situations of one symbol in one partition.
    InvalidOptionError
        An ``order`` that does not name every symbol once.
    """
    pattern = pattern.resolve_units(time_unit)
    names = pattern.symbol_names
    symbols, partitions = symbol_arrays(situations, pattern)
    if order is None:
        order = evaluation_order(pattern, {n: len(symbols[n]) for n in names},
                                 partitions=partitions, span=_mean_span(symbols, partitions))
    elif sorted(order) != sorted(names):
        raise InvalidOptionError(f"order must name every symbol once: {', '.join(names)}; "
                                 f"got {order!r}")
    order = tuple(order)
    steps = plan_steps(pattern, order)
    rows = _join(symbols, steps, order, max(int(batch_size), 1))
    return answer_frame(pattern, symbols, rows)


def _mean_span(symbols: Mapping[str, SymbolArrays], partitions: int) -> float | None:
    """Mean time the situations of a partition span (for the window's share)."""
    low = np.full(partitions, np.inf)
    high = np.full(partitions, -np.inf)
    for s in symbols.values():
        # Sorted by (partition, ts) and non-overlapping: a partition's first situation
        # starts first and its last ends last.
        some = s.stop > s.first
        low[some] = np.minimum(low[some], s.ts[s.first[some]])
        high[some] = np.maximum(high[some], s.te[s.stop[some] - 1])
    seen = np.isfinite(low) & np.isfinite(high)
    return float(np.mean(high[seen] - low[seen])) if seen.any() else None


@dataclass
class _Batch:
    """Partial matches of one level: the row of the symbol bound last (``own``), a pointer
    into the previous level's batch (``up``) for the rows bound before, and, copied along,
    only the rows later steps read (``rows``), plus partition id and the running
    ``max(te)``/``min(ts)`` the window needs.

    Copying every bound row at every level would cost O(levels^2) per match; pointers
    make each level O(1) and the full rows are read back once per match at the end.
    """

    pid: np.ndarray
    rows: dict[str, np.ndarray]
    latest: np.ndarray
    earliest: np.ndarray
    own: np.ndarray
    parent: _Batch | None = None
    up: np.ndarray | None = None

    def take(self, which: np.ndarray, keep_rows: frozenset[str] | set[str]) -> _Batch:
        return _Batch(self.pid[which], {n: r[which] for n, r in self.rows.items()
                                        if n in keep_rows},
                      self.latest[which], self.earliest[which], self.own[which],
                      self.parent, None if self.up is None else self.up[which])

    def resolve(self, order: tuple[str, ...]) -> dict[str, np.ndarray]:
        """Every bound symbol's rows, by following the pointers up to the first level."""
        out: dict[str, np.ndarray] = {}
        batch: _Batch | None = self
        at: np.ndarray | None = None
        level = len(order) - 1
        while batch is not None:
            out[order[level]] = batch.own if at is None else batch.own[at]
            if batch.up is not None:
                at = batch.up if at is None else batch.up[at]
            batch, level = batch.parent, level - 1
        return out


def _read_later(steps: list[Step], order: tuple[str, ...]) -> list[frozenset[str]]:
    """Per level, the bound symbols whose rows the later steps read."""
    out = []
    for level in range(len(order)):
        later = {name for step in steps[level + 1:] for c in step.constraints
                 for name in c.symbols}
        out.append(frozenset(later & set(order[:level + 1])))
    return out


def _join(symbols: Mapping[str, SymbolArrays], steps: list[Step], order: tuple[str, ...],
          batch_size: int) -> dict[str, np.ndarray]:
    """Indices of every match, per symbol, in no particular order."""
    first = symbols[order[0]]
    read_later = _read_later(steps, order)
    everything = np.arange(len(first))
    start = _Batch(first.pid, {order[0]: everything}, first.te, first.ts, everything)
    stack = [(1, start.take(chunk, read_later[0]))
             for chunk in np.array_split(everything, max(1, -(-len(first) // batch_size)))]
    done: list[dict[str, np.ndarray]] = []
    # Depth first, so at most one step's expansion per level is in memory at a time.
    while stack:
        level, batch = stack.pop()
        if level == len(order):
            done.append(batch.resolve(order))
            continue
        step, new = steps[level], symbols[order[level]]
        low, high = step.ranges(symbols, batch.pid, batch.rows, batch.latest, batch.earliest)
        counts = np.maximum(high - low, 0)
        for chunk in _chunks(counts, batch_size):
            grown = _expand(batch, chunk, low, counts, order[level], new)
            keep = step.keep(symbols, grown.pid, grown.rows, grown.latest, grown.earliest)
            if keep.any():
                stack.append((level + 1, grown.take(np.flatnonzero(keep), read_later[level])))
    return {name: np.concatenate([d[name] for d in done]) if done
            else np.zeros(0, dtype=np.intp) for name in order}


def _chunks(counts: np.ndarray, batch_size: int) -> Iterator[np.ndarray]:
    """Partial matches with candidates, in groups of about ``batch_size`` candidates."""
    busy = np.flatnonzero(counts)
    if not len(busy):
        return
    sizes = counts[busy]
    group = (np.cumsum(sizes) - sizes) // batch_size
    yield from np.split(busy, np.flatnonzero(np.diff(group)) + 1)


def _expand(batch: _Batch, chunk: np.ndarray, low: np.ndarray, counts: np.ndarray,
            name: str, new: SymbolArrays) -> _Batch:
    """Every (partial match, candidate) pair of ``chunk``: the index runs
    ``[low, low + count)`` laid end to end with repeat/cumsum. The result points back
    at ``batch``; its ``rows`` hold what this step reads (the bound rows and the new)."""
    sizes = counts[chunk]
    owner = np.repeat(chunk, sizes)
    offset = np.arange(len(owner)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    candidate = low[owner] + offset
    rows = {n: r[owner] for n, r in batch.rows.items()}
    rows[name] = candidate
    return _Batch(batch.pid[owner], rows, np.maximum(batch.latest[owner], new.te[candidate]),
                  np.minimum(batch.earliest[owner], new.ts[candidate]), candidate,
                  batch, owner)
