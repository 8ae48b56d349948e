"""The reference matcher: every combination of situations, checked from the definitions.

SEMANTICS B3 read literally (TPStream Definitions 11-13): per partition key, every choice
of one situation per symbol is tested against every constraint (Allen relations by their
endpoint formulas, hierarchy operators as their sets, ``followed_by`` by its gap rule,
endpoint restrictions) and the window ``max(te) - min(ts) <= w``. It is quadratic or worse
and exists to be obviously right; the join engine is tested against it.

>>> import pandas as pd
>>> from uncertain_cep.interval.language import parse_temporal_query
>>> q = parse_temporal_query("DEFINE A AS x > 0, B AS x < 0 PATTERN A meets; before B "
...                          "WITHIN 10")
>>> situations = {"A": pd.DataFrame({"ts": [0, 6], "te": [2, 8]}),
...               "B": pd.DataFrame({"ts": [2, 9], "te": [5, 11]})}
>>> match_brute_force(situations, q)
   A_ts  A_te  B_ts  B_te  detected_at
0     0     2     2     5            2
1     6     8     9    11            9

``[0, 2) before [9, 11)`` spans 11 > 10 instants: outside the window.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from uncertain_cep.errors import PlanningError
from uncertain_cep.interval.patterns import FollowedBy, RelationConstraint, TemporalPattern
from uncertain_cep.interval.relations import AllenRelation, Endpoint, EndpointRestriction, holds
from uncertain_cep.interval.tables import checked_situation_table

__all__ = ["match_brute_force"]


def match_brute_force(situations: Mapping[str, pd.DataFrame], pattern: TemporalPattern, *,
                      time_unit: float | str | None = None,
                      max_combinations: int = 2_000_000) -> pd.DataFrame:
    """Every match of ``pattern`` among ``situations`` (SEMANTICS B3).

    Parameters
    ----------
    situations : mapping of symbol name to DataFrame
        Per symbol: the PARTITION BY columns, ``ts``, ``te`` and each RETURN aggregate's
        :attr:`~uncertain_cep.interval.patterns.ReturnItem.source_column`, as
        :func:`~uncertain_cep.interval.situations.derive_situations` returns them.
    pattern : TemporalPattern
    time_unit : float or str, optional
        Seconds per data unit, if the window carries a unit.
    max_combinations : int
        Refuse a partition with more combinations than this (memory is linear in it).

    Returns
    -------
    DataFrame
        The partition columns, ``<S>_ts`` and ``<S>_te`` per symbol in DEFINE order, one
        column per RETURN alias and ``detected_at``; one row per match, sorted by the
        partition columns and then the symbols' ``ts``. Column dtypes follow the tables
        (partition columns: the first symbol's), also when there is no match.

    Raises
    ------
    InputError
        A symbol without a table, a table without a needed column, or two situations of
        one symbol and partition that overlap or repeat (B1: they never do).
    PlanningError
        A partition with more than ``max_combinations`` combinations.
    """
    pattern = pattern.resolve_units(time_unit)
    keys = list(pattern.partition_by)
    names = pattern.symbol_names
    tables = {name: checked_situation_table(situations, name, pattern) for name in names}
    groups = {name: _by_partition(tables[name], keys) for name in names}
    found = []
    for key in groups[names[0]]:
        if all(key in groups[name] for name in names):
            parts = {name: groups[name][key] for name in names}
            found.append(_with_keys(_match_partition(parts, pattern, max_combinations),
                                    parts[names[0]], keys))
    if not found:
        # No partition has every symbol: match empty tables, so the columns keep their types.
        parts = {name: tables[name].iloc[:0] for name in names}
        found.append(_with_keys(_match_partition(parts, pattern, max_combinations),
                                parts[names[0]], keys))
    out = pd.concat(found, ignore_index=True)[list(pattern.output_columns())]
    order = keys + [f"{name}_ts" for name in names]
    return out.sort_values(order, kind="stable").reset_index(drop=True)


def _with_keys(result: pd.DataFrame, first: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """``result`` with the partition columns in front, copied from the first symbol's table
    ``first`` (one partition's rows) so they keep its dtype (int32 stays int32)."""
    rows = np.zeros(len(result), dtype=np.intp)
    for position, column in enumerate(keys):
        result.insert(position, column, first[column].take(rows).reset_index(drop=True))
    return result


def _by_partition(table: pd.DataFrame, keys: list[str]) -> dict[tuple, pd.DataFrame]:
    if not keys:
        return {(): table}
    return {(k if isinstance(k, tuple) else (k,)): part.reset_index(drop=True)
            for k, part in table.groupby(keys, sort=True)}


def _match_partition(parts: Mapping[str, pd.DataFrame], pattern: TemporalPattern,
                     max_combinations: int) -> pd.DataFrame:
    names = list(parts)
    sizes = [len(parts[name]) for name in names]
    total = math.prod(sizes)
    if total > max_combinations:
        raise PlanningError(f"a partition has {total} combinations of situations, more than "
                            f"max_combinations={max_combinations}; the brute-force matcher "
                            "is a reference for small inputs")
    chosen = np.indices(sizes).reshape(len(names), -1)
    ends = {name: (parts[name]["ts"].to_numpy()[chosen[i]],
                   parts[name]["te"].to_numpy()[chosen[i]]) for i, name in enumerate(names)}
    ok = np.ones(total, dtype=bool)
    detected = np.max([ts for ts, _ in ends.values()], axis=0)
    for constraint in pattern.constraints:
        if isinstance(constraint, EndpointRestriction):
            ok &= constraint.evaluate(ends)
            # The later of the two endpoints it names (SEMANTICS B3).
            left = ends[constraint.left][constraint.left_end is Endpoint.te]
            right = ends[constraint.right][constraint.right_end is Endpoint.te]
            detected = np.maximum(detected, np.maximum(left, right))
            continue
        (a_ts, a_te), (b_ts, b_te) = ends[constraint.left], ends[constraint.right]
        if isinstance(constraint, RelationConstraint):
            any_holds = np.zeros(total, dtype=bool)
            for relation in constraint.relations:
                any_holds |= holds(relation, a_ts, a_te, b_ts, b_te)
            for succession in constraint.followed_by_pairs():
                if succession.left == constraint.left:
                    any_holds |= _followed_by(succession, parts, a_ts, a_te, b_ts, b_te)
                else:
                    any_holds |= _followed_by(succession, parts, b_ts, b_te, a_ts, a_te)
            ok &= any_holds
        else:
            ok &= _followed_by(constraint, parts, a_ts, a_te, b_ts, b_te)
        # TPStream's t_d = t3: the third of the pair's four endpoints (SEMANTICS B3).
        detected = np.maximum(detected, np.sort(np.stack([a_ts, a_te, b_ts, b_te]), axis=0)[2])
    if pattern.within is not None:
        latest = np.max([te for _, te in ends.values()], axis=0)
        earliest = np.min([ts for ts, _ in ends.values()], axis=0)
        ok &= latest - earliest <= pattern.within.value
    out = {}
    for name in names:
        out[f"{name}_ts"] = ends[name][0][ok]
        out[f"{name}_te"] = ends[name][1][ok]
    for item in pattern.returns:
        column = parts[item.symbol][item.source_column].to_numpy()
        out[item.alias] = column[chosen[names.index(item.symbol)][ok]]
    out["detected_at"] = detected[ok]
    return pd.DataFrame(out)


def _followed_by(constraint: FollowedBy, parts: Mapping[str, pd.DataFrame], a_ts: np.ndarray,
                 a_te: np.ndarray, b_ts: np.ndarray, b_te: np.ndarray) -> np.ndarray:
    """A before B and no situation of A's or B's symbol meets the gap ``[A.te, B.ts)``.

    The chosen A and B never meet their own gap (half-open intervals), so "other than
    these two" needs no special case.
    """
    ok = holds(AllenRelation.before, a_ts, a_te, b_ts, b_te)
    for name in (constraint.left, constraint.right):
        x_ts = parts[name]["ts"].to_numpy()[None, :]
        x_te = parts[name]["te"].to_numpy()[None, :]
        # [x.ts, x.te) meets [A.te, B.ts) iff x.ts < B.ts and A.te < x.te.
        intersects = (x_ts < b_ts[:, None]) & (a_te[:, None] < x_te)
        ok &= ~intersects.any(axis=1)
    return ok
