"""Parser for part-A query text (SEMANTICS C): ``PATTERN SEQ(...) DEFINE ... WITHIN ...``.

``WITHIN`` takes a whole number of instants or a duration with a unit, written as part B
writes them (``6s``, ``6 SECONDS``, ``5 MINUTES``, ``2 HOURS``, also ms, min, h, days; the
rule is :data:`uncertain_cep.grammar.DURATION_GRAMMAR`). The pattern keeps the duration;
:func:`bind_query` converts it into instants of an index, blaming the WITHIN clause when
it cannot.

>>> p = parse_query('''
...     PATTERN SEQ(A, NOT C, B)   -- comments run to the end of the line
...     DEFINE A AS x BETWEEN 0 AND 2, C AS tag IN ('a', 'b')
...     within 6
... ''')
>>> p.negations, p.within, p.confidence
(((0, 1, 'C'),), 6, None)
>>> p.symbol("A")
Symbol(name='A', predicates=(Between(attribute='x', low=0.0, high=2.0),))
>>> parse_query("PATTERN SEQ(A) WITHIN 5 minutes").within
Duration(value=5.0, unit=<TimeUnit.MINUTES: 'MINUTES'>)
>>> parse_query("PATTERN SEQ(A B)")
Traceback (most recent call last):
...
uncertain_cep.errors.QueryParseError: line 1, column 15: unexpected 'B'; expected one of: ')', ','
    PATTERN SEQ(A B)
                  ^
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from lark import Lark, Token, Tree, UnexpectedInput

from uncertain_cep.durations import Duration
from uncertain_cep.errors import QueryError, QueryParseError
from uncertain_cep.grammar import (
    COMMON_TERMINALS,
    DURATION_GRAMMAR,
    TERMINAL_WORDS,
    duration,
    keyword_terminals,
    located,
    syntax_error,
    tokens,
    unquote,
)
from uncertain_cep.query.language.patterns import (
    Between,
    Comparison,
    InSet,
    PatternItem,
    Predicate,
    SequencePattern,
    Symbol,
    check_confidence,
    check_limit,
    sequence_problem,
    symbol_problem,
)
from uncertain_cep.query.language.windows import check_within

if TYPE_CHECKING:
    from uncertain_cep.model.time_axis import TimeAxis

__all__ = ["bind_query", "parse_query"]

_KEYWORDS = ("PATTERN", "SEQ", "NOT", "DEFINE", "AS", "BETWEEN", "AND", "IN", "WITHIN",
             "CONFIDENCE", "LIMIT")

# Keywords are regexes that refuse to end inside a longer name (so `NOTE` stays a name) and
# outrank NAME where both could start. Lark's contextual lexer only tries the terminals the
# parser can accept next, so attributes may still be called `in` or `and`.
_GRAMMAR = r"""
start: _PATTERN _SEQ "(" item ("," item)* ")" define? within? confidence? limit?

item: NAME                                          -> positive
    | _NOT NAME                                     -> negated

define: _DEFINE definition ("," definition)*
definition: NAME _AS predicate (_AND predicate)*

predicate: NAME (LT | LE | GT | GE) NUMBER         -> comparison
         | NAME "=" NUMBER                          -> equals_number
         | NAME "=" STRING                          -> equals_string
         | NAME _BETWEEN NUMBER _AND NUMBER         -> between
         | NAME _IN "(" STRING ("," STRING)* ")"    -> in_set
LT: "<"
LE: "<="
GT: ">"
GE: ">="

within: _WITHIN duration
confidence: _CONFIDENCE NUMBER
limit: _LIMIT NUMBER

""" + COMMON_TERMINALS + DURATION_GRAMMAR + keyword_terminals(_KEYWORDS)

_PARSER = Lark(_GRAMMAR, parser="lalr", propagate_positions=True)


def parse_query(text: str) -> SequencePattern:
    """Parse part-A query text into a
    :class:`~uncertain_cep.query.language.patterns.SequencePattern`.

    Parameters
    ----------
    text : str
        ``PATTERN SEQ(...) [DEFINE ...] [WITHIN L] [CONFIDENCE theta] [LIMIT k]``;
        keywords are case-insensitive, ``-- comments`` run to the end of the line. ``L``
        is a whole number of instants or a duration with a unit (``6s``, ``5 MINUTES``),
        which the pattern keeps as a :class:`~uncertain_cep.durations.Duration`.
        ``LIMIT k`` asks for the answer's first ``k`` rows (the most confident).

    Raises
    ------
    QueryParseError
        For malformed text and for patterns the text describes but which are invalid (a
        negation first or last, a symbol defined twice or defined but unused, ...). The
        message names the line and column, shows the line with a caret, and for syntax
        errors says what was expected; ``line``, ``column`` and ``expected`` carry the same.
    """
    if not isinstance(text, str):
        raise TypeError(f"query text must be a str, got {type(text).__name__}")
    try:
        tree = _PARSER.parse(text)
    except UnexpectedInput as error:
        raise _syntax_error(text, error) from error
    return _PatternBuilder(text).pattern(tree)


def bind_query(query: str | SequencePattern, time_axis: TimeAxis | None) -> SequencePattern:
    """Parse ``query`` (if text) and convert its window into instants of an index whose
    archive has ``time_axis`` (:meth:`SequencePattern.in_instants`).

    Raises
    ------
    QueryParseError
        For malformed text (:func:`parse_query`).
    QueryError
        For a window the index cannot take (a unit on an index of plain numbers, a window
        that is not a whole number of instants); for query text the message names the
        WITHIN clause's line and column and shows it with a caret.

    >>> from uncertain_cep.model.time_axis import TimeAxis
    >>> bind_query("PATTERN SEQ(A, B)\\nWITHIN 2 MINUTES", TimeAxis("1s", unit_ns=10**9)).within
    120
    >>> bind_query("PATTERN SEQ(A, B)\\nWITHIN 2 MINUTES", None)
    Traceback (most recent call last):
    ...
    uncertain_cep.errors.QueryError: line 2, column 8: WITHIN 2 MINUTES has a time unit, ...
    """
    pattern = parse_query(query) if isinstance(query, str) else query
    try:
        return pattern.in_instants(time_axis)
    except QueryError as error:
        if not isinstance(query, str):
            raise
        line, column = _within_position(query)
        raise QueryError(located(query, line, column, str(error))) from error


def _within_position(text: str) -> tuple[int, int]:
    """Where the number of the WITHIN clause of (valid) query text starts."""
    for child in _PARSER.parse(text).children:
        if isinstance(child, Tree) and child.data == "within":
            window = child.children[0]
            assert isinstance(window, Tree)
            return _position(tokens(window)[0])
    return 1, 1


def _syntax_error(text: str, error: UnexpectedInput) -> QueryParseError:
    return syntax_error(text, error, _PARSER, _KEYWORDS, TERMINAL_WORDS)


def _position(token: Token) -> tuple[int, int]:
    return token.line or 1, token.column or 1


class _PatternBuilder:
    """Turns a parse tree into pattern objects, blaming errors on the token that caused them."""

    def __init__(self, text: str) -> None:
        self._text = text

    def error(self, message: str, position: tuple[int, int]) -> QueryParseError:
        line, column = position
        return QueryParseError(located(self._text, line, column, message),
                               line=line, column=column)

    @contextmanager
    def blame(self, position: tuple[int, int]) -> Iterator[None]:
        """Re-raise a validation error of the pattern classes at ``position``."""
        try:
            yield
        except QueryParseError as error:
            if error.line is not None:  # already located by a finer-grained check
                raise
            raise self.error(str(error), position) from error

    def pattern(self, tree: Tree) -> SequencePattern:
        items: list[PatternItem] = []
        item_positions: list[tuple[int, int]] = []
        symbols: list[Symbol] = []
        symbol_positions: list[tuple[int, int]] = []
        within = confidence = limit = None
        for child in tree.children:
            if child.data in ("positive", "negated"):
                name = child.children[0]
                items.append(PatternItem(str(name), negated=child.data == "negated"))
                # A negated item is blamed at its NOT keyword.
                item_positions.append((child.meta.line, child.meta.column))
            elif child.data == "define":
                for definition in child.children:
                    symbols.append(self.symbol(definition))
                    symbol_positions.append(_position(tokens(definition)[0]))
            elif child.data == "within":
                within = self.within(child.children[0])
            elif child.data == "confidence":
                token = tokens(child)[0]
                with self.blame(_position(token)):
                    confidence = check_confidence(self.number(token))
            elif child.data == "limit":
                token = tokens(child)[0]
                with self.blame(_position(token)):
                    limit = check_limit(self.number(token))
        problem = sequence_problem(tuple(items), tuple(symbols))
        if problem is not None:
            message, part, index = problem
            positions = item_positions if part == "item" else symbol_positions
            raise self.error(message, positions[index])
        return SequencePattern(tuple(items), tuple(symbols), within, confidence, limit)

    def symbol(self, definition: Tree) -> Symbol:
        name = tokens(definition)[0]
        predicate_trees = definition.children[1:]
        predicates = tuple(self.predicate(tree) for tree in predicate_trees)
        problem = symbol_problem(predicates)
        if problem is not None:
            message, index = problem
            attribute = tokens(predicate_trees[index])[0]
            raise self.error(f"symbol {name}: {message}", _position(attribute))
        return Symbol(str(name), predicates)

    def predicate(self, tree: Tree) -> Predicate:
        attribute_token, *rest = tokens(tree)
        attribute = str(attribute_token)
        if tree.data == "comparison":
            op, value = rest
            return Comparison(attribute, str(op), self.number(value))
        if tree.data == "equals_number":
            return Comparison(attribute, "=", self.number(rest[0]))
        if tree.data == "between":
            low, high = rest
            with self.blame(_position(low)):
                return Between(attribute, self.number(low), self.number(high))
        return InSet(attribute, tuple(unquote(value) for value in rest))

    def number(self, token: Token) -> float:
        value = float(token)
        if not math.isfinite(value):
            raise self.error(f"number {token} is too large", _position(token))
        return value

    def within(self, tree: Tree) -> int | Duration:
        token, *unit = tokens(tree)
        if unit:
            if token.startswith("-"):
                raise self.error(f"WITHIN takes a duration >= 0, got {token} {unit[0]}",
                                 _position(token))
            with self.blame(_position(token)):
                return duration(tree)[1]
        # A plain number counts instants: whole, and read as written (`6.0` is no integer).
        if not re.fullmatch(r"[+-]?[0-9]+", token):
            raise self.error(
                f"WITHIN takes a whole number of instants >= 0 or a duration with a unit "
                f"(6s, 5 MINUTES), got {token}", _position(token))
        with self.blame(_position(token)):
            return check_within(int(token))
