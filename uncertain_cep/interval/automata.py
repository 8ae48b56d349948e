"""Pair automata over minterms of two predicates (Chen et al., sections 3.1-3.2, Table 1).

For two symbols with predicates ``phi`` (the left symbol, A) and ``psi`` (the right, B),
every instant falls in one of four minterms, the alphabet of the automata:

======  ====================  =================
letter  minterm               meaning
======  ====================  =================
``O``   ``not phi, not psi``  neither situation
``I``   ``not phi, psi``      only B
``Z``   ``phi, not psi``      only A
``E``   ``phi, psi``          both
======  ====================  =================

Each precise relation ``r`` is a symbolic regular expression ``S1+ S2+ [S3+]`` over the
letters (Table 1: ``overlaps`` is ``Z+ E+ I+``); its deterministic automaton (subset
construction of the expression's NFA, preceded by ``Σ*`` so that it finds every
occurrence; Lemmas 1-2) *triggers* when it enters an accepting state (the earliest instant
the relation is certain: TPStream's t3) and *completes* when the interval that ends last
ends. ``before`` and ``after`` have no automaton (Table 1): they are derived from
endpoints (:mod:`~uncertain_cep.interval.automata_join`).

**The stream the automata read.** The paper maps every point event to a letter. Here the
automata read the *situation tables* (so they serve point and interval input alike): the
merged, sorted endpoints of the two symbols' situations cut time into segments, and each
segment gets the letter of who is active in it (:func:`pair_stream`). For point events
this is the paper's stream with each run of equal letters written once: a situation's
endpoints are exactly where its predicate (after the duration bounds) changes. Reading a
run once is equivalent because every automaton here is idempotent on repeated letters
(``δ(δ(q, x), x) = δ(q, x)``, checked when it is built). Consecutive segments then always
differ, and whether a segment triggers depends only on the last ``k`` letters (``k``
segments in the expression; also checked when built), so the automaton runs over a whole
stream at once as a table lookup on each window of ``k`` letters
(:meth:`PairAutomaton.triggers`); the
letter-by-letter run (:meth:`PairAutomaton.run`, the paper's Algorithm 1) is kept and
tested to agree.

>>> a = AUTOMATA[AllenRelation.overlaps]
>>> str(a), a.completion
('overlaps: Z+ E+ I+', 'OZ')
>>> letters = encode("OZEIO")  # A = [1, 3), B = [2, 4) on segment starts 0..4
>>> a.triggers(letters).tolist(), a.triggers_sequential(letters).tolist()
([False, False, False, True, False], [False, False, False, True, False])
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from uncertain_cep.errors import InvalidOptionError
from uncertain_cep.interval.join_steps import SymbolArrays
from uncertain_cep.interval.relations import AllenRelation, SuccessionRelation

__all__ = ["AUTOMATA", "LETTERS", "PairAutomaton", "PairStream", "encode", "pair_automaton",
           "pair_stream"]

#: The alphabet; a letter's code is ``2 * phi + psi``.
LETTERS = "OIZE"
_PHI = frozenset({2, 3})
_PSI = frozenset({1, 3})

_R = AllenRelation
# Table 1 (E(r) for phi = A, psi = B); the inverses swap the roles of I and Z.
_EXPRESSIONS: dict[AllenRelation | SuccessionRelation, tuple[str, ...]] = {
    _R.meets: ("Z", "I"),
    _R.overlaps: ("Z", "E", "I"),
    _R.starts: ("O", "E", "I"),
    _R.during: ("I", "E", "I"),
    _R.finishes: ("I", "E", "O"),
    _R.equals: ("O", "E", "O"),
    _R.met_by: ("I", "Z"),
    _R.overlapped_by: ("I", "E", "Z"),
    _R.started_by: ("O", "E", "Z"),
    _R.contains: ("Z", "E", "Z"),
    _R.finished_by: ("Z", "E", "O"),
    # phi+ (not phi and not psi)+ psi+: phi and psi hold on two letters each.
    SuccessionRelation.followed_by: ("ZE", "O", "IE"),
}


def encode(text: str) -> np.ndarray:
    """Letters as codes: ``encode("OIZE")`` is ``[0, 1, 2, 3]``."""
    return np.array([LETTERS.index(c) for c in text], dtype=np.int64)


@dataclass(frozen=True)
class PairAutomaton:
    """The DFA of one precise relation ``A r B`` over the letters (Chen et al. 3.2).

    Attributes
    ----------
    name : str
        The relation.
    segments : tuple of str
        The expression: segment ``j`` is ``S_j+`` with ``S_j`` the letters written.
    transitions : ndarray of int, shape (states, 4)
        ``transitions[q, letter]``; state 0 is the start.
    accepting : ndarray of bool, shape (states,)
    trigger_table : ndarray of bool, shape (4,) * k
        Whether reading the last of ``k`` consecutive letters enters an accepting state.
    completion : str
        Letters that complete a triggered pair (the interval ending last ends): ``OZ`` if
        B ends last, ``OI`` if A does, empty if both end at the trigger.
    a_back, b_back : int
        A triggered pair's A (B) is the situation active ``a_back`` (``b_back``) segments
        before the triggering one.
    """

    name: str
    segments: tuple[str, ...]
    transitions: np.ndarray
    accepting: np.ndarray
    trigger_table: np.ndarray
    completion: str
    a_back: int
    b_back: int

    def __str__(self) -> str:
        return f"{self.name}: " + " ".join(
            (s if len(s) == 1 else "(" + "|".join(s) + ")") + "+" for s in self.segments)

    def run(self, letters: Iterable[int]) -> np.ndarray:
        """The state after each letter, read one at a time (Algorithm 1's transitions)."""
        state, out = 0, []
        for letter in letters:
            state = int(self.transitions[state, letter])
            out.append(state)
        return np.array(out, dtype=np.int64)

    def triggers_sequential(self, letters: Sequence[int] | np.ndarray) -> np.ndarray:
        """Where the letter-by-letter run enters an accepting state (the trigger)."""
        accepted = self.accepting[self.run(letters)]
        return accepted & ~np.r_[False, accepted[:-1]]

    def triggers(self, letters: np.ndarray) -> np.ndarray:
        """The same as :meth:`triggers_sequential` for a stream without repeated letters,
        by one table lookup per window of ``k`` letters."""
        k = len(self.segments)
        out = np.zeros(len(letters), dtype=bool)
        if len(letters) < k:
            return out
        code = np.zeros(len(letters) - k + 1, dtype=np.int64)
        for j in range(k):
            code = code * 4 + letters[j:len(letters) - k + 1 + j]
        out[k - 1:] = self.trigger_table.reshape(-1)[code]
        return out


def pair_automaton(name: str, segments: Sequence[str]) -> PairAutomaton:
    """The DFA of ``Σ* S1+ ... Sk+`` by subset construction, with its trigger table.

    Raises
    ------
    InvalidOptionError
        If the DFA is not idempotent on repeated letters or its trigger does not depend on
        the last ``k`` letters only: then reading runs once, or the table lookup, would not
        be the paper's automaton (never for Table 1's expressions).

    >>> str(pair_automaton("followed_by", ("ZE", "O", "IE")))
    'followed_by: (Z|E)+ O+ (I|E)+'
    """
    sets = [frozenset(LETTERS.index(c) for c in s) for s in segments]
    k = len(sets)

    def step(states: frozenset[int], letter: int) -> frozenset[int]:
        # NFA state 0 loops on every letter (Σ*); state j >= 1 is "inside S_j+".
        out = {0}
        for q in states:
            if q < k and letter in sets[q]:
                out.add(q + 1)
            if q >= 1 and letter in sets[q - 1]:
                out.add(q)
        return frozenset(out)

    index = {frozenset({0}): 0}
    rows: list[list[int]] = []
    todo = [frozenset({0})]
    while todo:
        current = todo.pop(0)
        row = []
        for letter in range(4):
            target = step(current, letter)
            if target not in index:
                index[target] = len(index)
                todo.append(target)
            row.append(index[target])
        rows.append(row)
    transitions = np.array(rows, dtype=np.int64)
    accepting = np.zeros(len(index), dtype=bool)
    for states, number in index.items():
        accepting[number] = k in states
    if not all(transitions[transitions[q, x], x] == transitions[q, x]
               for q in range(len(index)) for x in range(4)):
        raise InvalidOptionError(f"the automaton of {name} is not idempotent on repeated "
                                 "letters; neighbouring segments must not share a letter")
    table = _trigger_table(name, transitions, accepting, k)
    last = sets[-1]
    completion = "OZ" if last <= _PSI and not last <= _PHI else \
        "OI" if last <= _PHI and not last <= _PSI else ""
    return PairAutomaton(name, tuple(segments), transitions, accepting, table, completion,
                         a_back=k - 1 - max(j for j, s in enumerate(sets) if s <= _PHI),
                         b_back=k - 1 - max(j for j, s in enumerate(sets) if s <= _PSI))


def _trigger_table(name: str, transitions: np.ndarray, accepting: np.ndarray,
                   k: int) -> np.ndarray:
    """Per window of ``k`` letters (no letter repeating the one before), whether its last
    letter enters an accepting state, checked to be the same from every state a stream
    without repeated letters can reach."""
    reachable = {(0, -1)}  # (state, last letter)
    frontier = list(reachable)
    while frontier:
        state, last = frontier.pop()
        for letter in range(4):
            nxt = (int(transitions[state, letter]), letter)
            if letter != last and nxt not in reachable:
                reachable.add(nxt)
                frontier.append(nxt)
    table = np.zeros((4,) * k, dtype=bool)
    for word in itertools.product(range(4), repeat=k):
        if any(x == y for x, y in itertools.pairwise(word)):
            continue
        seen = set()
        for state, last in reachable:
            if last == word[0]:
                continue
            before = state
            for letter in word[:-1]:
                before = int(transitions[before, letter])
            after = int(transitions[before, word[-1]])
            seen.add(bool(accepting[after] and not accepting[before]))
        if len(seen) > 1:
            raise InvalidOptionError(f"the trigger of {name} depends on more than {k} letters; "
                                     "the table lookup cannot run it")
        table[word] = seen == {True}
    return table


#: One automaton per precise relation (Table 1); ``before``/``after`` have none.
AUTOMATA: dict[AllenRelation | SuccessionRelation, PairAutomaton] = {
    relation: pair_automaton(str(relation), segments)
    for relation, segments in _EXPRESSIONS.items()}


@dataclass(frozen=True)
class PairStream:
    """Two symbols' situations as one stream of letters (Definition 9, run-compressed).

    Segment 0 is the time before the first endpoint (``O``); segment ``s >= 1`` starts at
    the ``s``-th distinct (partition, endpoint time) and lasts to the next. Every
    partition's last segment is ``O`` (all its situations have ended), so a partition
    starts from ``O`` as the stream does.

    Attributes
    ----------
    letters : ndarray of int
        Each segment's letter.
    times : ndarray
        Each segment's start (segment 0: the first endpoint; never a trigger).
    a_active, b_active : ndarray of int
        The index of the A (B) situation active in each segment, -1 if none.
    """

    letters: np.ndarray
    times: np.ndarray
    a_active: np.ndarray
    b_active: np.ndarray

    def detect(self, automaton: PairAutomaton) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every pair ``automaton`` triggers on: A's and B's indices and the trigger time.

        The caller keeps pairs whose A and B share a partition: only ``followed_by``'s gap
        (an ``O`` segment) can span two partitions.
        """
        at = np.flatnonzero(automaton.triggers(self.letters))
        return (self.a_active[at - automaton.a_back], self.b_active[at - automaton.b_back],
                self.times[at])


def pair_stream(a: SymbolArrays, a_rows: np.ndarray, b: SymbolArrays,
                b_rows: np.ndarray) -> PairStream:
    """The letter stream of A's situations ``a_rows`` and B's ``b_rows``.

    ``a_rows`` and ``b_rows`` are increasing, and their situations neither overlap nor
    touch within a partition (else a run of ``phi`` would not be one situation; the caller
    splits touching ones apart).

    >>> import pandas as pd
    >>> a = SymbolArrays(pd.DataFrame({"ts": [1], "te": [3]}), np.zeros(1, int), 1)
    >>> b = SymbolArrays(pd.DataFrame({"ts": [2], "te": [4]}), np.zeros(1, int), 1)
    >>> s = pair_stream(a, np.arange(1), b, np.arange(1))
    >>> "".join(LETTERS[x] for x in s.letters), s.times[1:].tolist(), s.a_active.tolist()
    ('OZEIO', [1, 2, 3, 4], [-1, 0, 0, -1, -1])
    """
    na, nb = len(a_rows), len(b_rows)
    times = np.concatenate([a.ts[a_rows], a.te[a_rows], b.ts[b_rows], b.te[b_rows]])
    pid = np.concatenate([a.pid[a_rows], a.pid[a_rows], b.pid[b_rows], b.pid[b_rows]])
    if not len(times):
        nothing = np.full(1, -1, dtype=np.int64)
        return PairStream(nothing + 1, np.zeros(1, dtype=times.dtype), nothing, nothing)
    ones_a, ones_b = np.ones(na, np.int64), np.ones(nb, np.int64)
    d_phi = np.concatenate([ones_a, -ones_a, 0 * ones_b, 0 * ones_b])
    d_psi = np.concatenate([0 * ones_a, 0 * ones_a, ones_b, -ones_b])
    a_start = np.concatenate([a_rows, -ones_a, -ones_b, -ones_b])
    b_start = np.concatenate([-ones_a, -ones_a, b_rows, -ones_b])
    order = np.lexsort((times, pid))
    times, pid = times[order], pid[order]
    # A step: one (partition, time); several endpoints may share it.
    first = np.flatnonzero(np.r_[True, (pid[1:] != pid[:-1]) | (times[1:] != times[:-1])])
    last = np.r_[first[1:] - 1, len(times) - 1]
    phi = np.cumsum(d_phi[order])[last]
    psi = np.cumsum(d_psi[order])[last]
    # Indices grow with (partition, ts), so the active situation is the latest started.
    a_now = np.maximum.accumulate(np.maximum.reduceat(a_start[order], first))
    b_now = np.maximum.accumulate(np.maximum.reduceat(b_start[order], first))
    return PairStream(np.r_[0, 2 * phi + psi], np.r_[times[:1], times[first]],
                      np.r_[-1, np.where(phi > 0, a_now, -1)],
                      np.r_[-1, np.where(psi > 0, b_now, -1)])
