"""Situation tables as the matchers read them: checked, sorted, with typed empty answers.

Every matcher (:mod:`~uncertain_cep.interval.brute_force`, the reference;
:mod:`~uncertain_cep.interval.join`, TPStream 5.2; :mod:`~uncertain_cep.interval.automata_join`,
Chen et al. 3.3) takes one table per symbol and must answer in exactly the same format, so
the input check, the partition ids, the answer's form and ``detected_at`` live here once.

>>> import pandas as pd
>>> from uncertain_cep.interval.language import parse_temporal_query
>>> q = parse_temporal_query("DEFINE A AS x > 0, B AS x < 0 PATTERN A before B")
>>> checked_situation_table({"A": pd.DataFrame({"ts": [5, 0], "te": [7, 2]})}, "A", q)
   ts  te
0   0   2
1   5   7
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Protocol

import numpy as np
import pandas as pd

from uncertain_cep.errors import InputError
from uncertain_cep.interval.patterns import (
    Constraint,
    FollowedBy,
    RelationConstraint,
    TemporalPattern,
)
from uncertain_cep.interval.relations import Endpoint, EndpointRestriction

__all__ = ["answer_frame", "checked_situation_table", "detected_at", "is_lexsorted",
           "partition_ids", "plain_numbers"]


class _Sorted(Protocol):
    """One symbol's situations sorted by (partition id, ts), as the engines hold them."""

    table: pd.DataFrame
    ts: np.ndarray
    te: np.ndarray


def plain_numbers(column: pd.Series) -> bool:
    """Whether a column is a plain numpy number (or bool) column: safe to compare and
    sort as an array, exactly as pandas would."""
    return isinstance(column.dtype, np.dtype) and column.dtype.kind in "iufb"


def is_lexsorted(arrays: list[np.ndarray]) -> bool:
    """Whether rows are in lexicographic order of ``arrays`` (first array first).

    >>> is_lexsorted([np.array([1, 1, 2]), np.array([5, 7, 0])])
    True
    """
    if len(arrays[0]) < 2:
        return True
    ok = arrays[-1][1:] >= arrays[-1][:-1]
    for values in reversed(arrays[:-1]):
        ok = (values[1:] > values[:-1]) | ((values[1:] == values[:-1]) & ok)
    return bool(ok.all())


def checked_situation_table(situations: Mapping[str, pd.DataFrame], name: str,
                            pattern: TemporalPattern) -> pd.DataFrame:
    """``situations[name]`` sorted by (PARTITION BY columns, ts), index reset.

    Raises
    ------
    InputError
        No table for ``name``, a needed column missing (partition columns, ``ts``, ``te``,
        RETURN's aggregates of ``name``), ``ts < te`` failing, or two situations of one
        symbol and partition that overlap (SEMANTICS B1: they never do).
    """
    if name not in situations:
        raise InputError(f"no situations given for symbol {name}; given: "
                         f"{', '.join(map(str, situations))}")
    table = situations[name]
    if not isinstance(table, pd.DataFrame):
        raise InputError(f"the situations of {name} must be a pandas DataFrame, "
                         f"got {type(table).__name__}")
    needed = [*pattern.partition_by, "ts", "te",
              *(r.source_column for r in pattern.returns if r.symbol == name)]
    missing = [c for c in dict.fromkeys(needed) if c not in table.columns]
    if missing:
        raise InputError(f"the situations of {name} lack column(s) "
                         f"{', '.join(map(repr, missing))}")
    table = table.reset_index(drop=True)
    columns = [table[c] for c in [*pattern.partition_by, "ts"]]
    if all(plain_numbers(c) for c in columns) and \
            is_lexsorted([c.to_numpy() for c in columns]):
        ordered = table  # derive_situations hands them over sorted
    else:
        ordered = table.sort_values([*pattern.partition_by, "ts"], kind="stable")
    ts, te = ordered["ts"].to_numpy(), ordered["te"].to_numpy()
    bad = np.flatnonzero(~(ts < te))
    if len(bad):
        row = int(ordered.index[bad[0]])
        raise InputError(f"situation {name} row {row}: ts is not before te", row=row)
    same = np.ones(max(len(ordered) - 1, 0), dtype=bool)
    for key in pattern.partition_by:
        values = ordered[key].to_numpy()
        same &= values[1:] == values[:-1]
    clash = np.flatnonzero(same & (ts[1:] < te[:-1]))
    if len(clash):
        a, b = ordered.index[clash[0]], ordered.index[clash[0] + 1]
        raise InputError(f"situations {name} rows {a} and {b} overlap in one partition; "
                         "situations of one symbol never do", row=int(b))
    return ordered.reset_index(drop=True)


def partition_ids(tables: Mapping[str, pd.DataFrame],
                  keys: list[str]) -> tuple[dict[str, np.ndarray], int]:
    """Dense partition ids shared by every symbol, in the sorted order of the keys, and
    how many there are. Rows with a missing key get -1 (the reference's groupby drops
    them)."""
    if not keys:
        return {n: np.zeros(len(t), dtype=np.int64) for n, t in tables.items()}, 1
    both = pd.concat([t[keys] for t in tables.values()], ignore_index=True)
    groups = both.groupby(keys, sort=True, dropna=True, observed=True).ngroup()
    codes = groups.fillna(-1).to_numpy().astype(np.int64)
    bounds = np.cumsum([0] + [len(t) for t in tables.values()])
    pids = {n: codes[bounds[i]:bounds[i + 1]] for i, n in enumerate(tables)}
    return pids, int(codes.max()) + 1 if len(codes) else 0


def answer_frame(pattern: TemporalPattern, symbols: Mapping[str, _Sorted],
                 rows: Mapping[str, np.ndarray],
                 detected: np.ndarray | None = None) -> pd.DataFrame:
    """The reference's answer format from matches given as row indices per symbol.

    ``symbols[s]`` holds ``s``'s situations sorted by (partition id, ts); ``rows[s]`` the
    index of each match's situation of ``s``; ``detected``, if given, each match's
    ``detected_at`` (else :func:`detected_at` computes it). Rows come out sorted by
    partition and the symbols' ts, as the reference sorts them.
    """
    names = pattern.symbol_names
    # Indices sort by (partition id, ts) per symbol, and partition ids follow key order.
    order = np.lexsort(_packed_keys([rows[name] for name in names],
                                    [len(symbols[name].ts) for name in names])[::-1])
    rows = {name: r[order] for name, r in rows.items()}
    ends = {name: (symbols[name].ts[rows[name]], symbols[name].te[rows[name]])
            for name in names}
    out: dict[str, object] = {}
    first = symbols[names[0]].table
    for column in pattern.partition_by:
        out[column] = first[column].take(rows[names[0]]).reset_index(drop=True)
    for name in names:
        out[f"{name}_ts"], out[f"{name}_te"] = ends[name]
    for item in pattern.returns:
        values = symbols[item.symbol].table[item.source_column].to_numpy()
        out[item.alias] = values[rows[item.symbol]]
    out["detected_at"] = (detected_at(pattern.constraints, ends) if detected is None
                          else detected[order])
    # Every column is a fresh array (fancy indexing), so the frame may own them as they are:
    # consolidating 2m+2 columns into one block would copy the whole answer once more.
    return pd.DataFrame({column: out[column] for column in pattern.output_columns()},
                        copy=False)


def _packed_keys(keys: list[np.ndarray], sizes: list[int]) -> list[np.ndarray]:
    """The same lexicographic order with fewer sort keys: consecutive indices packed
    into one int64 (``key * size + next``) while the product of their sizes fits."""
    packed: list[np.ndarray] = []
    current, room = None, 1
    for key, size in zip(keys, sizes):
        size = max(size, 1)
        if current is not None and room * size < 2**62:
            current, room = current * size + key, room * size
        else:
            if current is not None:
                packed.append(current)
            current, room = key.astype(np.int64), size
    if current is not None:
        packed.append(current)
    return packed


def detected_at(constraints: tuple[Constraint, ...],
                ends: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """SEMANTICS B3, computed as the reference computes it (same values and dtype): the
    latest ts, the third of the four endpoints of every related pair (TPStream's t_d =
    t3) and the later endpoint each endpoint restriction names."""
    detected = functools.reduce(np.maximum, [ts for ts, _ in ends.values()])
    for constraint in constraints:
        if isinstance(constraint, EndpointRestriction):
            left = ends[constraint.left][constraint.left_end is Endpoint.te]
            right = ends[constraint.right][constraint.right_end is Endpoint.te]
            detected = np.maximum(detected, np.maximum(left, right))
        elif isinstance(constraint, (RelationConstraint, FollowedBy)):
            (a_ts, a_te), (b_ts, b_te) = ends[constraint.left], ends[constraint.right]
            detected = np.maximum(detected, _third_smallest(a_ts, a_te, b_ts, b_te))
    return detected


def _third_smallest(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> np.ndarray:
    """The third smallest of four (the second largest), without sorting: the larger of
    the two pairs' smaller maxima and larger minima.

    >>> _third_smallest(np.array([4]), np.array([1]), np.array([3]), np.array([2]))
    array([3])
    """
    return np.maximum(np.minimum(np.maximum(a, b), np.maximum(c, d)),
                      np.maximum(np.minimum(a, b), np.minimum(c, d)))
