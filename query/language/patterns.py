"""Part-A sequence patterns as immutable, validated values (SEMANTICS A3 and C).

A pattern is built either by :func:`uncertain_cep.query.language.parse.parse_query` or directly from
Python:

>>> p = SequencePattern(
...     items=(PatternItem("A"), PatternItem("C", negated=True), PatternItem("B")),
...     symbols=(Symbol("A", (Comparison("x", "<", 5),)),),
...     within=6,
... )
>>> print(p)
PATTERN SEQ(A, NOT C, B)
DEFINE A AS x < 5
WITHIN 6

Every constructor validates its arguments and raises
:class:`~uncertain_cep.errors.QueryParseError` (with ``line`` and ``column`` None) when they
do not describe a pattern the query language could express.

A window is a whole number of instants or a :class:`~uncertain_cep.durations.Duration`
with a unit (``WITHIN 6s``), kept as written until the pattern meets an index:
:meth:`SequencePattern.in_instants` converts it with the index's time axis.

>>> from uncertain_cep.model.time_axis import TimeAxis
>>> q = SequencePattern((PatternItem("A"),), within=Duration(2, "min"))
>>> q.within, q.in_instants(TimeAxis("1s", unit_ns=10**9)).within
(Duration(value=2.0, unit=<TimeUnit.MINUTES: 'MINUTES'>), 120)
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass
from typing import TYPE_CHECKING

from uncertain_cep.durations import Duration
from uncertain_cep.errors import InputError, QueryError, QueryParseError
from uncertain_cep.query.language.predicates import (
    Between,
    Comparison,
    InSet,
    Predicate,
    as_tuple,
    check_name,
    check_number,
    symbol_problem,
)
from uncertain_cep.query.language.text import format_number
from uncertain_cep.query.language.windows import check_within, window_instants

if TYPE_CHECKING:
    from uncertain_cep.model.time_axis import TimeAxis

__all__ = ["Between", "Comparison", "Duration", "InSet", "PatternItem", "Predicate",
           "SequencePattern", "Symbol", "check_confidence", "check_limit", "sequence_problem",
           "symbol_problem", "with_limit"]


@dataclass(frozen=True)
class Symbol:
    """A named conjunction of predicates; no predicates means "matches every event".

    A contradictory conjunction (``x > 5 AND x < 3``) is allowed: it matches no event.

    Examples
    --------
    >>> s = Symbol("A", (Comparison("x", ">", 3), Comparison("x", "<=", 5),
    ...                  Between("x", 0, 4), InSet("tag", ("a", "b")), InSet("tag", ("b",))))
    >>> s.numeric_bounds()
    {'x': (3.0, 4.0, True, False)}
    >>> s.categorical_sets()
    {'tag': frozenset({'b'})}
    >>> sorted(s.attributes())
    ['tag', 'x']
    """

    name: str
    predicates: tuple[Predicate, ...] = ()

    def __post_init__(self) -> None:
        check_name(self.name, "a symbol name")
        predicates = as_tuple(self.predicates, f"the predicates of symbol {self.name}")
        problem = symbol_problem(predicates)
        if problem is not None:
            raise QueryParseError(f"symbol {self.name}: {problem[0]}")
        object.__setattr__(self, "predicates", predicates)

    def attributes(self) -> frozenset[str]:
        """Every attribute named by a predicate of this symbol."""
        return frozenset(p.attribute for p in self.predicates)

    def numeric_bounds(self) -> dict[str, tuple[float, float, bool, bool]]:
        """Per numeric attribute, the allowed set as ``(low, high, low_open, high_open)``.

        The set is the intersection of all the attribute's predicates. An unbounded side is
        ``-inf`` or ``inf`` and counts as open. An empty set is returned as is (for example
        ``low > high``); callers treat it as "no value satisfies the symbol".
        """
        bounds: dict[str, tuple[float, float, bool, bool]] = {}
        for predicate in self.predicates:
            if isinstance(predicate, InSet):
                continue
            low, high, low_open, high_open = bounds.get(
                predicate.attribute, (-math.inf, math.inf, True, True))
            for new_low, new_open in _lower_bounds(predicate):
                # At equal bounds the open one is the stricter.
                if new_low > low or (new_low == low and new_open):
                    low, low_open = new_low, new_open
            for new_high, new_open in _upper_bounds(predicate):
                if new_high < high or (new_high == high and new_open):
                    high, high_open = new_high, new_open
            bounds[predicate.attribute] = (low, high, low_open, high_open)
        return bounds

    def categorical_sets(self) -> dict[str, frozenset[str]]:
        """Per categorical attribute, the values allowed by every ``InSet`` on it."""
        sets: dict[str, frozenset[str]] = {}
        for predicate in self.predicates:
            if isinstance(predicate, InSet):
                values = frozenset(predicate.values)
                sets[predicate.attribute] = sets.get(predicate.attribute, values) & values
        return sets


def _lower_bounds(predicate: Comparison | Between) -> list[tuple[float, bool]]:
    if isinstance(predicate, Between):
        return [(predicate.low, False)]
    if predicate.op in (">", ">=", "="):
        return [(predicate.value, predicate.op == ">")]
    return []


def _upper_bounds(predicate: Comparison | Between) -> list[tuple[float, bool]]:
    if isinstance(predicate, Between):
        return [(predicate.high, False)]
    if predicate.op in ("<", "<=", "="):
        return [(predicate.value, predicate.op == "<")]
    return []


@dataclass(frozen=True)
class PatternItem:
    """One position of ``SEQ(...)``: a symbol name, possibly negated (``NOT C``).

    Examples
    --------
    >>> PatternItem("C", negated=True)
    PatternItem(symbol='C', negated=True)
    """

    symbol: str
    negated: bool = False

    def __post_init__(self) -> None:
        check_name(self.symbol, "a symbol name")
        # `SEQ(NOT, B)` cannot be read back: NOT there is the keyword.
        if self.symbol.upper() == "NOT":
            raise QueryParseError(f"{self.symbol!r} is a keyword and cannot name a symbol")
        if not isinstance(self.negated, bool):
            raise QueryParseError(f"negated must be True or False, got {self.negated!r}")

    def __str__(self) -> str:
        return f"NOT {self.symbol}" if self.negated else self.symbol


def check_confidence(confidence: object) -> float:
    value = check_number(confidence, "CONFIDENCE")
    if not 0 < value <= 1:
        raise QueryParseError(
            f"CONFIDENCE must be above 0 and at most 1, got {format_number(value)}")
    return value


def check_limit(limit: object) -> int:
    """``LIMIT k``: a whole number of rows, at least 1.

    >>> check_limit(3.0), check_limit(10)
    (3, 10)
    >>> check_limit(0)
    Traceback (most recent call last):
    ...
    uncertain_cep.errors.QueryParseError: LIMIT must be a whole number of rows, at least 1, got 0
    """
    if isinstance(limit, bool) or not isinstance(limit, numbers.Real):
        raise QueryParseError(f"LIMIT must be a whole number of rows, got {limit!r}")
    value = float(limit)
    if not (math.isfinite(value) and value == math.floor(value) and value >= 1):
        raise QueryParseError(f"LIMIT must be a whole number of rows, at least 1, got "
                              f"{format_number(value)}")
    return int(value)


def sequence_problem(items: tuple[PatternItem, ...],
                      symbols: tuple[Symbol, ...]) -> tuple[str, str, int] | None:
    """The first reason ``items`` and ``symbols`` do not form a pattern.

    Returned as ``(message, part, index)`` with ``part`` ``"item"`` or ``"symbol"`` so that
    the parser can point at the offending token.
    """
    for part, values, cls in (("item", items, PatternItem), ("symbol", symbols, Symbol)):
        for index, value in enumerate(values):
            if not isinstance(value, cls):
                return f"expected a {cls.__name__}, got {value!r}", part, index
    if not any(not item.negated for item in items):
        return "a pattern needs at least one positive (not negated) item", "item", 0
    for index in (0, len(items) - 1):
        if items[index].negated:
            where = "first" if index == 0 else "last"
            return (f"negated item NOT {items[index].symbol} at position {index + 1} cannot be "
                    f"{where}; a negation must stand between two positive items",
                    "item", index)
    used = {item.symbol for item in items}
    defined: set[str] = set()
    for index, symbol in enumerate(symbols):
        if symbol.name in defined:
            return f"symbol {symbol.name} is defined twice", "symbol", index
        if symbol.name not in used:
            return (f"symbol {symbol.name} is defined but not used in the pattern",
                    "symbol", index)
        defined.add(symbol.name)
    return None


@dataclass(frozen=True)
class SequencePattern:
    """``SEQ(items)`` with symbol definitions, a window and a confidence threshold.

    Parameters
    ----------
    items : tuple of PatternItem
        At least one positive item; negated items only between two positive ones.
    symbols : tuple of Symbol
        Definitions of (some of) the symbols named by ``items``, each at most once. An
        undefined symbol, or one defined with no predicates, matches every event; definitions
        with no predicates are dropped so both spellings compare equal.
    within : int, Duration or None
        ``WITHIN L``: ``ts(last) - ts(first) <= L`` instants; a
        :class:`~uncertain_cep.durations.Duration` with a unit (``WITHIN 6s``) is kept
        as written until :meth:`in_instants` binds it to an index; a Duration without a
        unit is a number of instants. None means no window.
    confidence : float or None
        ``CONFIDENCE theta`` with ``0 < theta <= 1``; None reports every tuple with positive
        confidence.
    limit : int or None
        ``LIMIT k``: only the answer's first ``k`` rows (confidence descending, then event
        ids), ``k >= 1``; None: every row.

    Examples
    --------
    >>> p = SequencePattern((PatternItem("A"), PatternItem("B", True), PatternItem("A")),
    ...                     (Symbol("A", (InSet("tag", ("a",)),)),), confidence=0.5)
    >>> p.positive_items, p.negations
    ((0, 2), ((0, 1, 'B'),))
    >>> p.symbol("B")
    Symbol(name='B', predicates=())
    """

    items: tuple[PatternItem, ...]
    symbols: tuple[Symbol, ...] = ()
    within: int | Duration | None = None
    confidence: float | None = None
    limit: int | None = None

    def __post_init__(self) -> None:
        items = as_tuple(self.items, "items")
        symbols = as_tuple(self.symbols, "symbols")
        problem = sequence_problem(items, symbols)
        if problem is not None:
            raise QueryParseError(problem[0])
        object.__setattr__(self, "items", items)
        object.__setattr__(self, "symbols", tuple(s for s in symbols if s.predicates))
        # None stands for "no window" and "no threshold".
        if self.within is not None:
            object.__setattr__(self, "within", check_within(self.within))
        if self.confidence is not None:
            object.__setattr__(self, "confidence", check_confidence(self.confidence))
        if self.limit is not None:
            object.__setattr__(self, "limit", check_limit(self.limit))

    def in_instants(self, time_axis: TimeAxis | None) -> SequencePattern:
        """The same pattern with its window in instants of an index whose archive has
        ``time_axis`` (:attr:`Archive.time_axis <uncertain_cep.model.events.Archive>`);
        itself when the window already is (see :func:`window_instants` for what is
        refused)."""
        if not isinstance(self.within, Duration):
            return self
        return dataclasses.replace(self, within=window_instants(self.within, time_axis))

    @property
    def window(self) -> float:
        """``WITHIN`` in instants (infinite without a window), once :meth:`in_instants`
        has bound a window with a unit.

        Raises
        ------
        QueryError
            For a window with a unit not yet bound to an index.
        """
        if self.within is None:
            return math.inf
        if isinstance(self.within, Duration):
            raise QueryError(f"WITHIN {self.within} has a time unit: bind the pattern to an "
                             "index's time axis first (SequencePattern.in_instants)")
        return self.within

    def symbol(self, name: str) -> Symbol:
        """The definition of ``name``; ``Symbol(name, ())`` if the pattern leaves it open.

        Raises ``KeyError`` if no item of the pattern names ``name``.
        """
        for symbol in self.symbols:
            if symbol.name == name:
                return symbol
        if all(item.symbol != name for item in self.items):
            raise KeyError(name)
        return Symbol(name, ())

    @property
    def positive_items(self) -> tuple[int, ...]:
        """Indices into ``items`` of the positive items, in order."""
        return tuple(i for i, item in enumerate(self.items) if not item.negated)

    @property
    def negations(self) -> tuple[tuple[int, int, str], ...]:
        """``(k, item_index, symbol)`` per negated item standing between positives k and k+1.

        ``k`` counts positive items (as in ``positive_items``), not items.
        """
        result = []
        positives_seen = 0
        for index, item in enumerate(self.items):
            if item.negated:
                result.append((positives_seen - 1, index, item.symbol))
            else:
                positives_seen += 1
        return tuple(result)

    def __str__(self) -> str:
        lines = [f"PATTERN SEQ({', '.join(map(str, self.items))})"]
        for index, symbol in enumerate(self.symbols):
            keyword = "DEFINE" if index == 0 else "      "
            separator = "," if index < len(self.symbols) - 1 else ""
            conjunction = " AND ".join(map(str, symbol.predicates))
            lines.append(f"{keyword} {symbol.name} AS {conjunction}{separator}")
        if self.within is not None:
            lines.append(f"WITHIN {self.within}")
        if self.confidence is not None:
            lines.append(f"CONFIDENCE {format_number(self.confidence)}")
        if self.limit is not None:
            lines.append(f"LIMIT {self.limit}")
        return "\n".join(lines)


def with_limit(pattern: SequencePattern, limit: object) -> SequencePattern:
    """``pattern`` asking for its first ``limit`` rows (None: as it says).

    Raises
    ------
    InputError
        For a ``limit`` that is not a whole number of rows of at least 1, or one that
        differs from the query text's own ``LIMIT``.
    """
    if limit is None:
        return pattern
    if isinstance(limit, bool) or not isinstance(limit, numbers.Integral) or limit < 1:
        raise InputError(f"limit= must be a whole number of rows, at least 1, got {limit!r}")
    if pattern.limit is not None and pattern.limit != limit:
        raise InputError(f"the query says LIMIT {pattern.limit} and the call limit={limit}: "
                         "give the number of rows once")
    return dataclasses.replace(pattern, limit=int(limit))
