"""The automata engine: patterns as pairs, pairs by automata, matches by natural joins.

Chen et al. (PieStream) section 3.3: every constraint of a pattern relates two symbols
(an mPiePair, Definition 10); each is detected on its own and the pair results are joined
on the situations they share (Theorem 1), here on the situations' row indices (per
partition the same as joining on start times, which identify a symbol's situations).

Pair results, per kind of constraint:

* **Allen relations and hierarchy operators** (a disjunction of relations): one automaton
  per relation other than ``before``/``after`` (:mod:`~uncertain_cep.interval.automata`)
  runs over the pair's letter stream. A symbol whose situations touch (``[0, 2)`` then
  ``[2, 4)``, possible for interval input) would merge two situations into one run of
  ``phi``, so its situations are split by the parity of their rank in the partition:
  within one parity no two touch, and each pair of situations lies in exactly one of the
  (up to) four streams. ``before``/``after`` are derived from endpoints, as the paper
  does: per A situation, the B situations starting after it ends form a run of the
  sorted table (bounded by the window), found by binary search.
* **followed_by**: its automaton ``(Z|E)+ O+ (I|E)+`` on the stream of *all* situations
  of both symbols: the gap is one ``O`` segment exactly when no situation of either symbol
  meets it (SEMANTICS B2), touching or not. In a disjunction (``A overlaps B; A
  followed_by B``) its pairs join the others' (``follows`` runs it from B to A); no pair is
  found twice, since a disjunction holding ``before`` (``after``) drops its ``followed_by``
  (``follows``) and the Allen relations exclude each other.
* **Endpoint restrictions** have no automaton: they are applied in the join, as soon as
  both their symbols are bound, by the reference's own test
  (:meth:`~uncertain_cep.interval.relations.EndpointRestriction.evaluate`).

Every pair is also cut to the window on its own two situations (their span bounds the
match's), and the window is checked again on every partial and on the full match, with
the reference's formula. A symbol no remaining pair connects to is bound by a cross
product within its partition and the window.

``detected_at`` is the latest of the symbols' ts, of each related pair's *trigger time*
(when its automaton entered the accepting state, or for ``before``/``after`` the later
start, which is TPStream's t3 in every case) and of the endpoints each restriction names:
SEMANTICS B3.

>>> import pandas as pd
>>> from uncertain_cep.interval.language import parse_temporal_query
>>> q = parse_temporal_query("DEFINE A AS x > 0, B AS x < 0 PATTERN A meets; before B "
...                          "WITHIN 10")
>>> situations = {"A": pd.DataFrame({"ts": [0, 6], "te": [2, 8]}),
...               "B": pd.DataFrame({"ts": [2, 9], "te": [5, 11]})}
>>> match_automata(situations, q)
   A_ts  A_te  B_ts  B_te  detected_at
0     0     2     2     5            2
1     6     8     9    11            9
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from uncertain_cep.interval.automata import AUTOMATA, pair_stream
from uncertain_cep.interval.join_steps import Step, SymbolArrays, symbol_arrays
from uncertain_cep.interval.patterns import FollowedBy, RelationConstraint, TemporalPattern
from uncertain_cep.interval.relations import (
    AllenRelation,
    Endpoint,
    EndpointRestriction,
    SuccessionRelation,
)
from uncertain_cep.interval.tables import answer_frame

__all__ = ["match_automata"]


def match_automata(situations: Mapping[str, pd.DataFrame], pattern: TemporalPattern, *,
                   time_unit: float | str | None = None) -> pd.DataFrame:
    """Every match of ``pattern`` among ``situations`` (SEMANTICS B3) by pair automata.

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

    Raises
    ------
    InputError
        As the reference: a symbol without a table, a missing column, ``ts >= te``, or
        overlapping situations of one symbol in one partition.
    """
    pattern = pattern.resolve_units(time_unit)
    names = pattern.symbol_names
    symbols, _ = symbol_arrays(situations, pattern)
    within = None if pattern.within is None else pattern.within.value
    pairs = [_pair_result(i, c, symbols, within) for i, c in enumerate(pattern.constraints)
             if isinstance(c, (RelationConstraint, FollowedBy))]
    found = _natural_join(pattern, symbols, pairs, within)
    detected = np.max([symbols[n].ts[found.rows[n]] for n in names], axis=0)
    for i, constraint in enumerate(pattern.constraints):
        if isinstance(constraint, EndpointRestriction):
            left = _end(symbols, found.rows, constraint.left, constraint.left_end)
            right = _end(symbols, found.rows, constraint.right, constraint.right_end)
            detected = np.maximum(detected, np.maximum(left, right))
        else:
            detected = np.maximum(detected, found.triggers[i])
    return answer_frame(pattern, symbols, found.rows, detected)


@dataclass(frozen=True)
class _Pairs:
    """The pairs of situations satisfying constraint ``index`` (``left``, ``right``)."""

    index: int
    left: str
    right: str
    left_rows: np.ndarray
    right_rows: np.ndarray
    trigger: np.ndarray


def _pair_result(index: int, constraint: RelationConstraint | FollowedBy,
                 symbols: Mapping[str, SymbolArrays], within: float | None) -> _Pairs:
    a, b = symbols[constraint.left], symbols[constraint.right]
    dtype = np.result_type(a.ts, a.te, b.ts, b.te)
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    if isinstance(constraint, FollowedBy):
        parts.append(_followed_by(a, b))
    else:
        for succession in constraint.followed_by_pairs():
            if succession.left == constraint.left:
                parts.append(_followed_by(a, b))
            else:
                b_rows, a_rows, trigger = _followed_by(b, a)
                parts.append((a_rows, b_rows, trigger))
        automata = [AUTOMATA[r] for r in constraint.relations
                    if r not in (AllenRelation.before, AllenRelation.after)]
        if automata:
            for a_rows in _without_touching(a):
                for b_rows in _without_touching(b):
                    stream = pair_stream(a, a_rows, b, b_rows)
                    parts.extend(stream.detect(automaton) for automaton in automata)
        if AllenRelation.before in constraint.relations:
            parts.append(_before(a, b, within))
        if AllenRelation.after in constraint.relations:
            b_rows, a_rows, trigger = _before(b, a, within)
            parts.append((a_rows, b_rows, trigger))
    left = np.concatenate([p[0] for p in parts]).astype(np.int64)
    right = np.concatenate([p[1] for p in parts]).astype(np.int64)
    trigger = np.concatenate([p[2] for p in parts]).astype(dtype)
    # A followed_by gap may span two partitions; the window cuts on the pair alone.
    keep = a.pid[left] == b.pid[right]
    if within is not None:
        keep &= (np.maximum(a.te[left], b.te[right]) - np.minimum(a.ts[left], b.ts[right])
                 <= within)
    return _Pairs(index, constraint.left, constraint.right, left[keep], right[keep],
                  trigger[keep])


def _followed_by(a: SymbolArrays, b: SymbolArrays
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``a followed_by b``: its automaton on the stream of every situation of both."""
    stream = pair_stream(a, np.arange(len(a)), b, np.arange(len(b)))
    return stream.detect(AUTOMATA[SuccessionRelation.followed_by])


def _without_touching(s: SymbolArrays) -> list[np.ndarray]:
    """``s``'s rows as one class, or two by rank parity if some touch in a partition."""
    rows = np.arange(len(s))
    if not np.any((s.pid[1:] == s.pid[:-1]) & (s.ts[1:] == s.te[:-1])):
        return [rows]
    rank = rows - s.first[s.pid]
    return [rows[rank % 2 == 0], rows[rank % 2 == 1]]


def _slack(values: np.ndarray, within: float) -> np.ndarray | float:
    """Widen a bound ``value ± w`` computed in floating point beyond its rounding error;
    the exact window test follows."""
    if np.issubdtype(values.dtype, np.floating):
        return 1e-9 * (np.abs(values) + within)
    return 0


def _before(a: SymbolArrays, b: SymbolArrays,
            within: float | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every ``A before B`` pair from endpoints (Chen et al. 3.2-3.3, Q_ba): per A, the B
    situations of its partition starting after A ends (and ending by A.ts + w); the
    trigger is B's start."""
    low = b.below(Endpoint.ts, a.pid, a.te, inclusive=True)
    high = b.stop[a.pid]
    if within is not None:
        latest = a.ts + within
        high = np.minimum(high, b.below(Endpoint.te, a.pid, latest + _slack(latest, within),
                                        inclusive=True))
    owner, candidate = _expand(low, np.maximum(high - low, 0))
    return owner, candidate, b.ts[candidate]


def _expand(low: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every (owner, index) with index in ``[low[owner], low[owner] + counts[owner])``."""
    owner = np.repeat(np.arange(len(low)), counts)
    offset = np.arange(len(owner)) - np.repeat(np.cumsum(counts) - counts, counts)
    return owner, low[owner] + offset


def _end(symbols: Mapping[str, SymbolArrays], rows: Mapping[str, np.ndarray], name: str,
         which: Endpoint) -> np.ndarray:
    return symbols[name].end(which)[rows[name]]


@dataclass
class _Partial:
    """Partial matches: per bound symbol a row index, per joined pair result its trigger."""

    rows: dict[str, np.ndarray]
    triggers: dict[int, np.ndarray]

    def take(self, which: np.ndarray) -> _Partial:
        return _Partial({n: r[which] for n, r in self.rows.items()},
                        {i: t[which] for i, t in self.triggers.items()})


def _natural_join(pattern: TemporalPattern, symbols: Mapping[str, SymbolArrays],
                  pairs: list[_Pairs], within: float | None) -> _Partial:
    """Join the pair results into full matches (Theorem 1), smallest first.

    Each step joins a pair result sharing a bound symbol (a semi-join if it shares both),
    or, when none does, binds one more symbol by a cross product within its partition and
    the window; restrictions and the window filter every step.
    """
    names = pattern.symbol_names
    remaining = sorted(pairs, key=lambda p: len(p.left_rows))
    if remaining:
        first = remaining.pop(0)
        partial = _Partial({first.left: first.left_rows, first.right: first.right_rows},
                           {first.index: first.trigger})
    else:
        partial = _Partial({names[0]: np.arange(len(symbols[names[0]]))}, {})
    partial = _filtered(partial, pattern, symbols, within)
    while len(partial.rows) < len(names) or remaining:
        bound = set(partial.rows)
        closing = [p for p in remaining if p.left in bound and p.right in bound]
        touching = [p for p in remaining if p.left in bound or p.right in bound]
        if closing:
            chosen = closing[0]
            partial = _semi_join(partial, chosen, len(symbols[chosen.right]))
        elif touching:
            chosen = min(touching, key=lambda p: len(p.left_rows))
            partial = _extend(partial, chosen)
        else:
            loose = [n for p in remaining for n in (p.left, p.right)] + list(names)
            partial = _cross(partial, next(n for n in loose if n not in bound), symbols,
                             within)
            chosen = None
        if chosen is not None:
            remaining.remove(chosen)
        partial = _filtered(partial, pattern, symbols, within)
    return partial


def _semi_join(partial: _Partial, pairs: _Pairs, n_right: int) -> _Partial:
    """Keep partial matches whose two situations form a pair; take its trigger."""
    keys = pairs.left_rows * n_right + pairs.right_rows
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    wanted = partial.rows[pairs.left] * n_right + partial.rows[pairs.right]
    at = np.minimum(np.searchsorted(keys, wanted), max(len(keys) - 1, 0))
    found = (keys[at] == wanted) if len(keys) else np.zeros(len(wanted), dtype=bool)
    out = partial.take(np.flatnonzero(found))
    out.triggers[pairs.index] = pairs.trigger[order][at[found]]
    return out


def _extend(partial: _Partial, pairs: _Pairs) -> _Partial:
    """Join on the one bound symbol of ``pairs``: a hash join done by sorting."""
    shared, new = ((pairs.left, pairs.right) if pairs.left in partial.rows
                   else (pairs.right, pairs.left))
    key = pairs.left_rows if shared == pairs.left else pairs.right_rows
    order = np.argsort(key, kind="stable")
    low = np.searchsorted(key[order], partial.rows[shared], side="left")
    high = np.searchsorted(key[order], partial.rows[shared], side="right")
    owner, at = _expand(low, high - low)
    out = partial.take(owner)
    picked = order[at]
    out.rows[new] = (pairs.right_rows if new == pairs.right else pairs.left_rows)[picked]
    out.triggers[pairs.index] = pairs.trigger[picked]
    return out


def _cross(partial: _Partial, name: str, symbols: Mapping[str, SymbolArrays],
           within: float | None) -> _Partial:
    """Bind ``name`` to every situation of the partition within the window (the join
    engine's range step without constraints)."""
    any_name = next(iter(partial.rows))
    pid = symbols[any_name].pid[partial.rows[any_name]]
    latest, earliest = _span(partial, symbols)
    step = Step(name, frozenset(partial.rows), (), within)
    low, high = step.ranges(symbols, pid, partial.rows, latest, earliest)
    owner, candidate = _expand(low, np.maximum(high - low, 0))
    out = partial.take(owner)
    out.rows[name] = candidate
    return out


def _span(partial: _Partial, symbols: Mapping[str, SymbolArrays]) -> tuple[np.ndarray,
                                                                            np.ndarray]:
    latest = np.max([symbols[n].te[r] for n, r in partial.rows.items()], axis=0)
    earliest = np.min([symbols[n].ts[r] for n, r in partial.rows.items()], axis=0)
    return latest, earliest


def _filtered(partial: _Partial, pattern: TemporalPattern, symbols: Mapping[str, SymbolArrays],
              within: float | None) -> _Partial:
    """Partial matches passing every restriction between bound symbols and the window.

    A restriction may be tested more than once (cheap, and the result cannot change); the
    window on bound symbols only is implied by the full window, so it never loses a
    match, and on all symbols it is the reference's test.
    """
    if not partial.rows or not len(next(iter(partial.rows.values()))):
        return partial
    ends = {n: (symbols[n].ts[r], symbols[n].te[r]) for n, r in partial.rows.items()}
    ok = np.ones(len(next(iter(partial.rows.values()))), dtype=bool)
    for constraint in pattern.constraints:
        if isinstance(constraint, EndpointRestriction) and \
                set(constraint.symbols) <= set(partial.rows):
            ok &= constraint.evaluate(ends)
    if within is not None:
        latest, earliest = _span(partial, symbols)
        ok &= latest - earliest <= within
    return partial if ok.all() else partial.take(np.flatnonzero(ok))
