"""Two baseline matchers for part-B temporal patterns, for the interval benchmark.

Both take what :func:`uncertain_cep.interval.join.match_join` takes (situation tables per
symbol, as :func:`~uncertain_cep.interval.situations.derive_situations` returns them, and a
parsed :class:`~uncertain_cep.interval.patterns.TemporalPattern`) and return the same answer: the
same rows, columns, dtypes and row order (SEMANTICS B3).

:func:`match_duckdb` -- the pattern as one SQL query, run by DuckDB
    Each symbol's situation table is registered in DuckDB without a copy and the pattern
    is written as one ``SELECT`` (:func:`duckdb_sql` gives its text): the symbol tables
    joined in DEFINE order on the PARTITION BY columns, each constraint written from its
    definition in the ON clause of the join of its later symbol (a disjunction of
    relations as an OR of the relations' endpoint conjunctions, a hierarchy operator as
    its set of Allen relations, an endpoint restriction as itself, ``followed_by`` as
    ``A.te < B.ts`` and two ``NOT EXISTS`` subqueries over the two symbols' tables), and
    the window ``max(te) - min(ts) <= w`` as ``GREATEST(...) - LEAST(...) <= w``.

    It is fair to DuckDB in the way a careful SQL author is: the window's consequences
    for pairs of symbols (``B.te <= A.ts + w`` and ``A.te <= B.ts + w``; by default
    for the pairs a constraint relates, see :func:`duckdb_sql`) and for each symbol
    alone (``te - ts <= w``) are written out as plain conjunctive inequalities, which
    DuckDB's range joins (IEJoin, piecewise merge join) and filter pushdown can use,
    where the exact ``GREATEST - LEAST`` test and the ORs cannot be. The optimiser is
    free to reorder the joins. Everything DuckDB does is timed as is:
    the query, its ``ORDER BY`` and the conversion of the result to pandas; only
    ``detected_at`` is computed in Python afterwards, with the engines' own
    :func:`~uncertain_cep.interval.tables.detected_at`.

:func:`match_nested_loop` -- a nested-loop join with no index and no sort trick
    Symbols are bound in DEFINE order. For each partial match (one chosen situation per
    bound symbol) every situation of the next symbol in the same partition is a
    candidate and is checked against every constraint whose symbols are then all bound
    and against the window so far; the check of one partial match against all
    candidates is vectorised with numpy (the reference's own predicates:
    :func:`~uncertain_cep.interval.relations.holds`,
    :meth:`~uncertain_cep.interval.relations.EndpointRestriction.evaluate`), the loop over
    partial matches is plain Python. ``followed_by`` compares the gap with every
    situation of both symbols in the partition. This is the textbook algorithm the
    range joins of TPStream improve on, written to be plainly correct, not clever.

Both are tested equal to ``match_join`` (and so to the brute force) in
``tests/bench/test_interval_baselines.py``.

>>> import pandas as pd
>>> from uncertain_cep.interval.language import parse_temporal_query
>>> q = parse_temporal_query("DEFINE A AS x > 0, B AS x < 0 PATTERN A meets; before B "
...                          "WITHIN 10")
>>> situations = {"A": pd.DataFrame({"ts": [0, 6], "te": [2, 8]}),
...               "B": pd.DataFrame({"ts": [2, 9], "te": [5, 11]})}
>>> match_nested_loop(situations, q)
   A_ts  A_te  B_ts  B_te  detected_at
0     0     2     2     5            2
1     6     8     9    11            9
>>> match_duckdb(situations, q).equals(match_nested_loop(situations, q))
True
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from uncertain_cep.errors import InputError, InvalidOptionError
from uncertain_cep.interval.patterns import FollowedBy, RelationConstraint, TemporalPattern
from uncertain_cep.interval.relations import (
    ALLEN_RELATIONS,
    AllenRelation,
    EndpointRestriction,
    definition,
    holds,
)
from uncertain_cep.interval.tables import (
    answer_frame,
    checked_situation_table,
    detected_at,
    partition_ids,
)

if TYPE_CHECKING:
    import duckdb

__all__ = ["duckdb_sql", "match_duckdb", "match_nested_loop"]


# ----------------------------------------------------------------------------- DuckDB


def duckdb_sql(pattern: TemporalPattern, *, time_unit: float | str | None = None,
               slack: float = 0.0, window_pairs: str = "related") -> str:
    """The SQL query :func:`match_duckdb` runs for ``pattern``.

    It reads one table (a registered view) per symbol, named after the symbol, and
    selects the answer's columns but ``detected_at``: the PARTITION BY columns (of the
    first symbol's table), ``<S>_ts`` and ``<S>_te`` per symbol and the RETURN aliases,
    ordered as the engines order their answers.

    Parameters
    ----------
    pattern : TemporalPattern
    time_unit : float or str, optional
        Seconds per data unit, if the window carries a unit.
    slack : float
        How much to widen the window in the implied pairwise bounds
        ``B.te <= A.ts + w`` (never in the exact ``GREATEST - LEAST <= w`` test). With
        floating-point times ``A.ts + w`` may round below the value with which the
        exact test still holds; :func:`match_duckdb` passes a slack far above any
        rounding error then, and 0 for integer times.
    window_pairs : {"related", "all"}
        Which pairs of symbols get the window's pairwise bounds. ``"all"``: every
        pair. ``"related"``: the pairs a constraint relates, plus, for a symbol related
        to none before it in DEFINE order, the pair with the symbol just before it (so
        every join has a range condition). "related" is the default because DuckDB
        reorders the joins and builds a range join on the first two inequalities of
        the merged condition list, where the bounds of unrelated pairs tend to come
        first and are looser than the constraints: for ``A1 meets; overlaps A2 AND A2
        starts A3`` they cost it 30x, and "related" was never slower in our trials.

    Raises
    ------
    InvalidOptionError
        An unknown ``window_pairs``.

    Examples
    --------
    >>> from uncertain_cep.interval.language import parse_temporal_query
    >>> print(duckdb_sql(parse_temporal_query(
    ...     "PARTITION BY k DEFINE A AS x > 0, B AS x < 0 PATTERN A followed_by B "
    ...     "WITHIN 5 RETURN max(B.x) AS top")))
    SELECT A.k,
           A.ts AS A_ts, A.te AS A_te,
           B.ts AS B_ts, B.te AS B_te,
           B.max_x AS top
    FROM A
    JOIN B ON
        B.k = A.k
        -- A followed_by B
        AND A.te < B.ts
        AND NOT EXISTS (SELECT 1 FROM A AS other
                        WHERE other.k = A.k AND other.ts < B.ts AND A.te < other.te)
        AND NOT EXISTS (SELECT 1 FROM B AS other
                        WHERE other.k = A.k AND other.ts < B.ts AND A.te < other.te)
        -- WITHIN 5, for A and B
        AND B.te <= A.ts + 5 AND A.te <= B.ts + 5
    WHERE A.te - A.ts <= 5 AND B.te - B.ts <= 5
      AND GREATEST(A.te, B.te) - LEAST(A.ts, B.ts) <= 5
    ORDER BY A.k, A.ts, B.ts
    """
    pattern = pattern.resolve_units(time_unit)
    names = pattern.symbol_names
    alias = _aliases(names)
    keys = [_quote(k) for k in pattern.partition_by]
    first = alias[names[0]]
    within = None if pattern.within is None else pattern.within.value
    paired = _window_pairs(pattern, window_pairs)

    def col(name: str, column: str) -> str:
        return f"{alias[name]}.{_quote(column)}"

    select = [f"{first}.{k}" for k in keys]
    select.append(",\n       ".join(
        f"{col(n, 'ts')} AS {_quote(n + '_ts')}, {col(n, 'te')} AS {_quote(n + '_te')}"
        for n in names))
    select += [f"{col(r.symbol, r.source_column)} AS {_quote(r.alias)}"
               for r in pattern.returns]
    lines = ["SELECT " + ",\n       ".join(select), f"FROM {first}"]
    for level, name in enumerate(names[1:], start=1):
        bound = names[:level]
        conditions = [f"{alias[name]}.{k} = {first}.{k}" for k in keys]
        for constraint in pattern.constraints:
            left, right = constraint.symbols
            # Each constraint at the join of its later symbol (in DEFINE order).
            if name in (left, right) and {left, right} - {name} <= set(bound):
                conditions += _constraint_sql(constraint, alias, keys)
        if within is not None:
            bound_sql = _number(within + slack)
            for other in bound:
                if frozenset((other, name)) not in paired:
                    continue
                a, b = alias[other], alias[name]
                conditions += [f"-- WITHIN {pattern.within}, for {other} and {name}",
                               f"{b}.te <= {a}.ts + {bound_sql} AND "
                               f"{a}.te <= {b}.ts + {bound_sql}"]
        lines.append(f"JOIN {alias[name]} ON\n" + _conjunction(conditions))
    if within is not None:
        w = _number(within)
        lines.append("WHERE " + " AND ".join(f"{alias[n]}.te - {alias[n]}.ts <= {w}"
                                              for n in names))
        lines.append(f"  AND GREATEST({', '.join(col(n, 'te') for n in names)}) - "
                     f"LEAST({', '.join(col(n, 'ts') for n in names)}) <= {w}")
    lines.append("ORDER BY " + ", ".join([f"{first}.{k}" for k in keys]
                                         + [col(n, "ts") for n in names]))
    return "\n".join(lines)


def match_duckdb(situations: Mapping[str, pd.DataFrame], pattern: TemporalPattern, *,
                 time_unit: float | str | None = None,
                 connection: duckdb.DuckDBPyConnection | None = None,
                 window_pairs: str = "related") -> pd.DataFrame:
    """Every match of ``pattern`` among ``situations``, by one DuckDB SQL query.

    Parameters
    ----------
    situations : mapping of symbol name to DataFrame
        As for :func:`~uncertain_cep.interval.join.match_join`.
    pattern : TemporalPattern
    time_unit : float or str, optional
        Seconds per data unit, if the window carries a unit.
    connection : duckdb.DuckDBPyConnection, optional
        Where to run the query (say, one configured with ``threads``); by default a new
        in-memory connection, closed afterwards. Views named after the symbols (see
        :func:`duckdb_sql`) are registered on it for the query and unregistered after.
    window_pairs : {"related", "all"}
        Which pairs of symbols get the window's pairwise bounds; see :func:`duckdb_sql`.

    Returns
    -------
    DataFrame
        What ``match_join`` returns. DuckDB maps some pandas types its own way (a
        nullable ``Int64`` or ``string`` partition column comes back as ``int64`` or
        ``object``, a categorical with other categories), so a column whose dtype
        differs from the one ``match_join`` gives it (the situation tables') is cast
        to it; plain numpy dtypes come back unchanged.

    Raises
    ------
    InputError
        A symbol without a table or a table without a column the query reads. The
        tables are not checked further (``ts < te``, no overlap): the query does not
        need it, and a valid input is the benchmark's business.

    Notes
    -----
    Integer times are compared exactly; floating-point times too, but for the widened
    pairwise bounds (see ``slack`` in :func:`duckdb_sql`), which only let more pairs
    reach the exact window test. Integer times must stay below 2**53 in magnitude when
    the window is not a whole number (they are then compared as doubles, as numpy
    compares them).
    """
    import duckdb

    pattern = pattern.resolve_units(time_unit)
    names = pattern.symbol_names
    tables = {name: _situation_table(situations, name, pattern) for name in names}
    sql = duckdb_sql(pattern, slack=_slack(tables, pattern), window_pairs=window_pairs)
    con = duckdb.connect() if connection is None else connection
    views = _aliases(names)
    try:
        for name in names:
            # A view on the DataFrame: DuckDB scans the pandas columns in place.
            con.register(views[name], tables[name])
        try:
            found = con.sql(sql).df()
        finally:
            for name in names:
                con.unregister(views[name])
    finally:
        if connection is None:
            con.close()
    return _answer_from_sql(found, tables, pattern)


def _window_pairs(pattern: TemporalPattern, which: str) -> set[frozenset[str]]:
    """The pairs of symbols that get the window's pairwise bounds (see
    :func:`duckdb_sql`)."""
    names = pattern.symbol_names
    if which == "all":
        return {frozenset((a, b)) for i, a in enumerate(names) for b in names[:i]}
    if which != "related":
        raise InvalidOptionError(f"window_pairs must be 'related' or 'all', got {which!r}")
    related = {frozenset(c.symbols) for c in pattern.constraints}
    for level, name in enumerate(names[1:], start=1):
        # A symbol related to none bound before it still joins by the window.
        if not any(frozenset((other, name)) in related for other in names[:level]):
            related.add(frozenset((names[level - 1], name)))
    return related


def _situation_table(situations: Mapping[str, pd.DataFrame], name: str,
                     pattern: TemporalPattern) -> pd.DataFrame:
    """``situations[name]`` after the cheap checks: it exists and has the columns the
    query reads."""
    if name not in situations:
        raise InputError(f"no situations given for symbol {name}; given: "
                         f"{', '.join(map(str, situations))}")
    table = situations[name]
    needed = [*pattern.partition_by, "ts", "te",
              *(r.source_column for r in pattern.returns if r.symbol == name)]
    missing = [c for c in dict.fromkeys(needed) if c not in table.columns]
    if missing:
        raise InputError(f"the situations of {name} lack column(s) "
                         f"{', '.join(map(repr, missing))}")
    return table


def _slack(tables: Mapping[str, pd.DataFrame], pattern: TemporalPattern) -> float:
    """Widening of the implied window bounds: 0 for integer times, else 1e-12 of the
    largest magnitude involved, a thousand times the rounding error of ``a + w``
    against ``b - a`` (a few 1e-16 of it)."""
    if pattern.within is None:
        return 0.0
    columns = [t[c] for t in tables.values() for c in ("ts", "te")]
    if all(pd.api.types.is_integer_dtype(c) for c in columns):
        return 0.0
    largest = max((float(np.abs(c.to_numpy(dtype=float)).max()) for c in columns if len(c)),
                  default=0.0)
    return 1e-12 * (largest + pattern.within.value)


def _answer_from_sql(found: pd.DataFrame, tables: Mapping[str, pd.DataFrame],
                     pattern: TemporalPattern) -> pd.DataFrame:
    """The SQL result in the engines' format: their column names (set by position:
    DuckDB renames clashes), their dtypes, and ``detected_at``."""
    names = pattern.symbol_names
    columns = [c for c in pattern.output_columns() if c != "detected_at"]
    found.columns = pd.Index(columns)
    targets: dict[str, object] = {k: tables[names[0]][k].dtype for k in pattern.partition_by}
    for name in names:
        for end in ("ts", "te"):
            targets[f"{name}_{end}"] = _numpy_dtype(tables[name][end])
    for item in pattern.returns:
        targets[item.alias] = _numpy_dtype(tables[item.symbol][item.source_column])
    for column, dtype in targets.items():
        if found[column].dtype != dtype:
            found[column] = found[column].astype(dtype)  # type: ignore[call-overload]
    ends = {name: (found[f"{name}_ts"].to_numpy(), found[f"{name}_te"].to_numpy())
            for name in names}
    found["detected_at"] = detected_at(pattern.constraints, ends)
    return found


def _numpy_dtype(column: pd.Series) -> np.dtype:
    """The dtype ``column.to_numpy()`` has: the engines read ts, te and aggregates so."""
    return column.iloc[:0].to_numpy().dtype


def _constraint_sql(constraint: RelationConstraint | FollowedBy | EndpointRestriction,
                    alias: Mapping[str, str], keys: Sequence[str]) -> list[str]:
    """ON-clause conditions for one constraint, led by a comment naming it."""
    if isinstance(constraint, EndpointRestriction):
        return [f"-- {constraint}", _restriction_sql(constraint, alias)]
    if isinstance(constraint, FollowedBy):
        return [f"-- {constraint}", *_followed_by_sql(constraint, alias, keys)]
    if len(constraint.relations) == len(ALLEN_RELATIONS):
        # Every pair of intervals is in one of the 13: no condition to write.
        return [f"-- {constraint.left} AND {constraint.right}: any relation"]
    names = {"A": constraint.left, "B": constraint.right}
    disjuncts = []
    for relation in sorted(constraint.relations, key=ALLEN_RELATIONS.index):
        disjuncts.append(" AND ".join(
            _restriction_sql(EndpointRestriction(names[r.left], r.left_end, r.op,
                                                 names[r.right], r.right_end), alias)
            for r in definition(relation)))
    for succession in constraint.followed_by_pairs():
        disjuncts.append(" AND ".join(_followed_by_sql(succession, alias, keys)))
    text = f"-- {constraint}"
    if len(disjuncts) == 1:
        return [text, disjuncts[0]]
    return [text, "(" + "\n      OR ".join(f"({d})" for d in disjuncts) + ")"]


def _followed_by_sql(constraint: FollowedBy, alias: Mapping[str, str],
                     keys: Sequence[str]) -> list[str]:
    """The conditions of ``A followed_by B``, to be joined with AND."""
    a, b = alias[constraint.left], alias[constraint.right]
    out = [f"{a}.te < {b}.ts"]
    for name in (constraint.left, constraint.right):
        # Another situation of A's or B's symbol meets the gap [A.te, B.ts) iff it
        # starts before B.ts and ends after A.te (intervals are half-open). The
        # chosen A and B never do, so they need not be excluded.
        same = "".join(f"other.{k} = {a}.{k} AND " for k in keys)
        out.append(f"NOT EXISTS (SELECT 1 FROM {alias[name]} AS other\n"
                   f"                    WHERE {same}other.ts < {b}.ts "
                   f"AND {a}.te < other.te)")
    return out


def _restriction_sql(restriction: EndpointRestriction, alias: Mapping[str, str]) -> str:
    # EndpointRestriction's operators (<, <=, =, >=, >) are SQL's.
    return (f"{alias[restriction.left]}.{restriction.left_end} {restriction.op} "
            f"{alias[restriction.right]}.{restriction.right_end}")


def _conjunction(conditions: list[str]) -> str:
    """An ON clause's conditions, one per line, ANDed; a ``--`` comment line heads the
    conditions after it. ``TRUE`` if there is none (a cross join)."""
    lines: list[str] = []
    started = False
    for condition in conditions:
        if condition.startswith("--"):
            lines.append(f"    {condition}")
        else:
            lines.append(f"    AND {condition}" if started else f"    {condition}")
            started = True
    if not started:
        lines.append("    TRUE")
    return "\n".join(lines)


def _number(value: float) -> str:
    """A SQL literal for ``value``: an integer if whole (integer times then stay integer
    arithmetic), else a DOUBLE (a bare ``12.5`` would be a DECIMAL in DuckDB)."""
    if float(value).is_integer() and abs(value) < 2**62:
        return str(int(value))
    return f"{float(value)!r}::DOUBLE"


def _aliases(names: Sequence[str]) -> dict[str, str]:
    """The table name and alias of each symbol in SQL: the symbol's name, unless two
    names differ only in case (DuckDB's identifiers ignore case): then ``s0``, ``s1``..."""
    if len({n.lower() for n in names}) == len(names):
        return {n: _quote(n) for n in names}
    return {n: f"s{i}" for i, n in enumerate(names)}


_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _quote(identifier: str) -> str:
    """``identifier`` as SQL: bare if plain and not a DuckDB keyword, else quoted."""
    if _PLAIN.fullmatch(identifier) and identifier.lower() not in _keywords():
        return identifier
    return '"' + identifier.replace('"', '""') + '"'


@functools.cache
def _keywords() -> frozenset[str]:
    import duckdb

    with duckdb.connect() as con:
        return frozenset(row[0].lower() for row in
                         con.sql("SELECT keyword_name FROM duckdb_keywords()").fetchall())


# ------------------------------------------------------------------------ nested loop


@dataclass
class _Symbol:
    """One symbol's situations sorted by (partition id, ts), as ``answer_frame`` reads
    them; partition ``p``'s rows are ``start[p]:stop[p]``. The sort only groups the
    partitions: within one, every situation is a candidate, whatever its endpoints."""

    table: pd.DataFrame
    ts: np.ndarray
    te: np.ndarray
    start: np.ndarray
    stop: np.ndarray


def _symbols(situations: Mapping[str, pd.DataFrame],
             pattern: TemporalPattern) -> tuple[dict[str, _Symbol], int]:
    names = pattern.symbol_names
    tables = {name: checked_situation_table(situations, name, pattern) for name in names}
    pids, partitions = partition_ids(tables, list(pattern.partition_by))
    out = {}
    every = np.arange(partitions)
    for name in names:
        order = np.lexsort((tables[name]["ts"].to_numpy(), pids[name]))
        order = order[pids[name][order] >= 0]  # a missing key is in no partition
        pid = pids[name][order]
        table = tables[name].iloc[order].reset_index(drop=True)
        out[name] = _Symbol(table, table["ts"].to_numpy(), table["te"].to_numpy(),
                            np.searchsorted(pid, every, side="left"),
                            np.searchsorted(pid, every, side="right"))
    return out, partitions


def match_nested_loop(situations: Mapping[str, pd.DataFrame], pattern: TemporalPattern, *,
                      time_unit: float | str | None = None) -> pd.DataFrame:
    """Every match of ``pattern`` among ``situations``, by a nested-loop join.

    Parameters
    ----------
    situations : mapping of symbol name to DataFrame
        As for :func:`~uncertain_cep.interval.join.match_join`.
    pattern : TemporalPattern
    time_unit : float or str, optional
        Seconds per data unit, if the window carries a unit.

    Returns
    -------
    DataFrame
        What ``match_join`` returns (built by the same
        :func:`~uncertain_cep.interval.tables.answer_frame`).

    Raises
    ------
    InputError
        As ``match_join``: a symbol without a table, a missing column, ``ts >= te``, or
        overlapping situations of one symbol in one partition.
    """
    pattern = pattern.resolve_units(time_unit)
    names = pattern.symbol_names
    symbols, partitions = _symbols(situations, pattern)
    # The constraints checked when binding names[level]: those whose later symbol it is.
    checks = [[c for c in pattern.constraints
               if name in c.symbols and set(c.symbols) <= set(names[:level + 1])]
              for level, name in enumerate(names)]
    within = None if pattern.within is None else pattern.within.value
    found: list[tuple[int, ...]] = []
    for pid in range(partitions):
        partial: list[tuple[int, ...]] = [()]
        for level, name in enumerate(names):
            new = symbols[name]
            candidates = np.arange(new.start[pid], new.stop[pid])
            grown: list[tuple[int, ...]] = []
            for chosen in partial:
                keep = _admissible(chosen, names[:level], name, candidates, symbols,
                                   checks[level], within, pid)
                grown.extend(chosen + (int(c),) for c in candidates[keep])
            partial = grown
            if not partial:
                break
        found.extend(partial)
    chosen_rows = np.array(found, dtype=np.intp).reshape(len(found), len(names))
    return answer_frame(pattern, symbols,
                        {name: chosen_rows[:, i] for i, name in enumerate(names)})


def _admissible(chosen: tuple[int, ...], bound: Sequence[str], name: str,
                candidates: np.ndarray, symbols: Mapping[str, _Symbol],
                constraints: Sequence[RelationConstraint | FollowedBy | EndpointRestriction],
                within: float | None, pid: int) -> np.ndarray:
    """Which ``candidates`` of ``name`` extend the partial match ``chosen`` (rows of
    ``bound``): a mask, vectorised over the candidates."""
    new = symbols[name]
    ends: dict[str, tuple[np.ndarray, np.ndarray]] = {
        other: (symbols[other].ts[[row]], symbols[other].te[[row]])
        for other, row in zip(bound, chosen)}
    ends[name] = (new.ts[candidates], new.te[candidates])
    ok = np.ones(len(candidates), dtype=bool)
    if within is not None:
        # The span so far, evaluated as the reference does: max(te) - min(ts) <= w.
        latest = np.max(np.broadcast_arrays(*(te for _, te in ends.values())), axis=0)
        earliest = np.min(np.broadcast_arrays(*(ts for ts, _ in ends.values())), axis=0)
        ok &= latest - earliest <= within
    succession = []
    for constraint in constraints:
        if isinstance(constraint, EndpointRestriction):
            ok &= constraint.evaluate(ends)
            continue
        (a_ts, a_te), (b_ts, b_te) = ends[constraint.left], ends[constraint.right]
        if isinstance(constraint, FollowedBy):
            ok &= holds(AllenRelation.before, a_ts, a_te, b_ts, b_te)
            succession.append(constraint)
        else:
            some = np.zeros(len(candidates), dtype=bool)
            for relation in constraint.relations:
                some |= holds(relation, a_ts, a_te, b_ts, b_te)
            for fb in constraint.followed_by_pairs():
                # In a disjunction the gap test runs on every candidate.
                mask = np.ones(len(candidates), dtype=bool)
                _gap_free(mask, fb, ends, symbols, pid)
                some |= mask
            ok &= some
    for constraint in succession:
        # The gap test compares each remaining candidate with every situation of both
        # symbols in the partition: the dearest check, so it runs on the survivors only.
        if not ok.any():
            break
        _gap_free(ok, constraint, ends, symbols, pid)
    return ok


def _gap_free(ok: np.ndarray, constraint: FollowedBy,
              ends: Mapping[str, tuple[np.ndarray, np.ndarray]],
              symbols: Mapping[str, _Symbol], pid: int) -> None:
    """Clear ``ok`` where ``constraint.left followed_by constraint.right`` fails."""
    (a_ts, a_te), (b_ts, b_te) = ends[constraint.left], ends[constraint.right]
    ok &= np.broadcast_to(holds(AllenRelation.before, a_ts, a_te, b_ts, b_te), ok.shape)
    left = np.flatnonzero(ok)
    if not len(left):
        return
    a_te = np.broadcast_to(a_te, ok.shape)[left]
    b_ts = np.broadcast_to(b_ts, ok.shape)[left]
    for other in (constraint.left, constraint.right):
        x = symbols[other]
        x_ts = x.ts[x.start[pid]:x.stop[pid]]
        x_te = x.te[x.start[pid]:x.stop[pid]]
        # [x.ts, x.te) meets [A.te, B.ts) iff x.ts < B.ts and A.te < x.te.
        meets_gap = ((x_ts[None, :] < b_ts[:, None])
                     & (a_te[:, None] < x_te[None, :])).any(axis=1)
        ok[left[meets_gap]] = False
