"""Parser for part-A query text (SEMANTICS C): ``PATTERN SEQ(...) DEFINE ... WITHIN ...``.

>>> p = parse_query('''
...     PATTERN SEQ(A, NOT C, B)   -- comments run to the end of the line
...     DEFINE A AS x BETWEEN 0 AND 2, C AS tag IN ('a', 'b')
...     within 6
... ''')
>>> p.negations, p.within, p.confidence
(((0, 1, 'C'),), 6, None)
>>> p.symbol("A")
Symbol(name='A', predicates=(Between(attribute='x', low=0.0, high=2.0),))
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
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from lark import Lark, Token, Tree, UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from query.patterns import (
    Between,
    Comparison,
    InSet,
    PatternItem,
    Predicate,
    SequencePattern,
    Symbol,
    _check_confidence,
    _check_within,
    _sequence_problem,
    _symbol_problem,
)
from uncertain_cep.errors import QueryParseError

__all__ = ["parse_query"]

_KEYWORDS = ("PATTERN", "SEQ", "NOT", "DEFINE", "AS", "BETWEEN", "AND", "IN", "WITHIN",
             "CONFIDENCE")

# Keywords are regexes that refuse to end inside a longer name (so `NOTE` stays a name) and
# outrank NAME where both could start. Lark's contextual lexer only tries the terminals the
# parser can accept next, so attributes may still be called `in` or `and`.
_GRAMMAR = r"""
start: _PATTERN _SEQ "(" item ("," item)* ")" define? within? confidence?

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

within: _WITHIN NUMBER
confidence: _CONFIDENCE NUMBER

NAME: /[A-Za-z_][A-Za-z0-9_]*/
NUMBER: /[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?/
STRING: /'(?:[^']|'')*'/ | /"(?:[^"]|"")*"/
COMMENT: /--[^\n]*/
%import common.WS
%ignore WS
%ignore COMMENT
""" + "".join(f"_{word}.2: /{word}(?![A-Za-z0-9_])/i\n" for word in _KEYWORDS)

_PARSER = Lark(_GRAMMAR, parser="lalr", propagate_positions=True)

_TERMINAL_WORDS = {
    "NAME": "a name",
    "NUMBER": "a number",
    "STRING": "a quoted string",
    "$END": "end of query",
}
_IGNORED_TERMINALS = {"WS", "COMMENT"}


def parse_query(text: str) -> SequencePattern:
    """Parse part-A query text into a :class:`~query.patterns.SequencePattern`.

    Parameters
    ----------
    text : str
        ``PATTERN SEQ(...) [DEFINE ...] [WITHIN L] [CONFIDENCE theta]``; keywords are
        case-insensitive, ``-- comments`` run to the end of the line.

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


def _syntax_error(text: str, error: UnexpectedInput) -> QueryParseError:
    line, column = error.line, error.column
    if isinstance(error, UnexpectedCharacters):
        char = text[error.pos_in_stream or 0]
        found = ("unterminated string" if char in "'\"" else f"unexpected character {char!r}")
        names: Iterable[str] = error.allowed or ()
    elif isinstance(error, UnexpectedToken) and error.token.type == "$END":
        found = "unexpected end of query"
        # Lark gives $END the last token's place; the end of that token reads better.
        token = error.token
        line, column = (token.end_line, token.end_column) if token.end_line else (1, 1)
        names = error.accepts or error.expected
    elif isinstance(error, UnexpectedToken):
        found = f"unexpected {str(error.token)!r}"
        names = error.accepts or error.expected
    else:  # UnexpectedEOF, which the LALR parser does not raise today
        found = "unexpected end of query"
        names = getattr(error, "expected", ())
    expected = _describe_expected(names)
    if len(expected) == 1:
        found += f"; expected {expected[0]}"
    elif expected:
        found += f"; expected one of: {', '.join(expected)}"
    return QueryParseError(_located(text, line, column, found), line=line, column=column,
                           expected=expected)


def _describe_expected(names: Iterable[str]) -> tuple[str, ...]:
    described = {_describe_terminal(name) for name in names if name not in _IGNORED_TERMINALS}
    # Literal tokens first, then classes of tokens ("a name").
    return tuple(sorted(described, key=lambda d: (not d.startswith("'"), d)))


def _describe_terminal(name: str) -> str:
    if name in _TERMINAL_WORDS:
        return _TERMINAL_WORDS[name]
    if name.startswith("_") and name[1:] in _KEYWORDS:
        return f"'{name[1:]}'"
    try:
        return f"'{_PARSER.get_terminal(name).pattern.value}'"
    except KeyError:
        return name


def _located(text: str, line: int, column: int, message: str) -> str:
    return f"line {line}, column {column}: {message}\n{_excerpt(text, line, column)}"


def _excerpt(text: str, line: int, column: int, width: int = 72) -> str:
    """The query line around ``column``, with a caret under it."""
    lines = text.split("\n")
    source = lines[line - 1] if 0 < line <= len(lines) else ""
    # Tabs would shift the caret; one space per character keeps columns aligned.
    source = source.rstrip("\r").replace("\t", " ")
    start = max(0, min(column - 1 - width // 2, len(source) - width))
    prefix = "..." if start > 0 else ""
    suffix = "..." if start + width < len(source) else ""
    shown = prefix + source[start:start + width] + suffix
    caret = " " * (len(prefix) + column - 1 - start) + "^"
    return f"    {shown}\n    {caret}"


def _tokens(tree: Tree) -> list[Token]:
    return [child for child in tree.children if isinstance(child, Token)]


def _position(token: Token) -> tuple[int, int]:
    return token.line or 1, token.column or 1


def _unquote(token: Token) -> str:
    quote = token[0]
    return token[1:-1].replace(quote * 2, quote)


class _PatternBuilder:
    """Turns a parse tree into pattern objects, blaming errors on the token that caused them."""

    def __init__(self, text: str) -> None:
        self._text = text

    def error(self, message: str, position: tuple[int, int]) -> QueryParseError:
        line, column = position
        return QueryParseError(_located(self._text, line, column, message),
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
        within = confidence = None
        for child in tree.children:
            if child.data in ("positive", "negated"):
                name = child.children[0]
                items.append(PatternItem(str(name), negated=child.data == "negated"))
                # A negated item is blamed at its NOT keyword.
                item_positions.append((child.meta.line, child.meta.column))
            elif child.data == "define":
                for definition in child.children:
                    symbols.append(self.symbol(definition))
                    symbol_positions.append(_position(_tokens(definition)[0]))
            elif child.data == "within":
                within = self.within(_tokens(child)[0])
            elif child.data == "confidence":
                token = _tokens(child)[0]
                with self.blame(_position(token)):
                    confidence = _check_confidence(self.number(token))
        problem = _sequence_problem(tuple(items), tuple(symbols))
        if problem is not None:
            message, part, index = problem
            positions = item_positions if part == "item" else symbol_positions
            raise self.error(message, positions[index])
        return SequencePattern(tuple(items), tuple(symbols), within, confidence)

    def symbol(self, definition: Tree) -> Symbol:
        name = _tokens(definition)[0]
        predicate_trees = definition.children[1:]
        predicates = tuple(self.predicate(tree) for tree in predicate_trees)
        problem = _symbol_problem(predicates)
        if problem is not None:
            message, index = problem
            attribute = _tokens(predicate_trees[index])[0]
            raise self.error(f"symbol {name}: {message}", _position(attribute))
        return Symbol(str(name), predicates)

    def predicate(self, tree: Tree) -> Predicate:
        attribute_token, *rest = _tokens(tree)
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
        return InSet(attribute, tuple(_unquote(value) for value in rest))

    def number(self, token: Token) -> float:
        value = float(token)
        if not math.isfinite(value):
            raise self.error(f"number {token} is too large", _position(token))
        return value

    def within(self, token: Token) -> int:
        if not re.fullmatch(r"[+-]?[0-9]+", token):
            raise self.error(
                f"WITHIN takes a whole number of instants >= 0, got {token}", _position(token))
        with self.blame(_position(token)):
            return _check_within(int(token))
