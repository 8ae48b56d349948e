"""What both query languages share: their lexical terminals, and syntax errors that name the
line, the column and what was expected there (SEMANTICS C).

>>> from lark import Lark, UnexpectedInput
>>> parser = Lark('start: _GO NAME' + COMMON_TERMINALS + keyword_terminals(("GO",)),
...               parser="lalr")
>>> try:
...     parser.parse("go 1")
... except UnexpectedInput as e:
...     print(syntax_error("go 1", e, parser, ("GO",), TERMINAL_WORDS))
line 1, column 4: unexpected character '1'; expected a name
    go 1
       ^
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from lark import Lark, Token, Tree, UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from uncertain_cep.durations import UNIT_REGEX, Duration, TimeUnit
from uncertain_cep.errors import QueryParseError

__all__ = ["COMMON_TERMINALS", "DURATION_GRAMMAR", "TERMINAL_WORDS", "duration",
           "keyword_terminals", "located", "syntax_error", "tokens", "unquote"]

COMMON_TERMINALS = r"""
NAME: /[A-Za-z_][A-Za-z0-9_]*/
NUMBER: /[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?/
STRING: /'(?:[^']|'')*'/ | /"(?:[^"]|"")*"/
COMMENT: /--[^\n]*/
%import common.WS
%ignore WS
%ignore COMMENT
"""

# A length of time: a number, then optionally a unit (``5s``, ``30 SECONDS``, ``5
# MINUTES``); the rule ``duration`` of both languages (read it with :func:`duration`). A
# unit outranks NAME, and may not end inside a longer word (``5 sets`` is not seconds).
DURATION_GRAMMAR = f"""
duration: NUMBER UNIT?
UNIT.2: /(?:{UNIT_REGEX})(?![A-Za-z0-9_])/i
"""

TERMINAL_WORDS = {
    "NAME": "a name",
    "NUMBER": "a number",
    "STRING": "a quoted string",
    "UNIT": "a time unit",
    "$END": "end of query",
}
_IGNORED_TERMINALS = {"WS", "COMMENT"}


def keyword_terminals(keywords: Iterable[str]) -> str:
    """Grammar lines for case-insensitive keywords that refuse to end inside a longer name
    (so ``NOTE`` stays a name) and outrank NAME where both could start."""
    return "".join(f"_{word}.2: /{word}(?![A-Za-z0-9_])/i\n" for word in keywords)


def syntax_error(text: str, error: UnexpectedInput, parser: Lark, keywords: Iterable[str],
                 words: Mapping[str, str]) -> QueryParseError:
    """A :class:`QueryParseError` for lark's ``error`` on ``text``: where, what was found,
    what was expected (terminals named by ``words``, keywords quoted)."""
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
    keyword_set = set(keywords)
    described = {_describe(name, parser, keyword_set, words) for name in names
                 if name not in _IGNORED_TERMINALS}
    # Literal tokens first, then classes of tokens ("a name").
    expected = tuple(sorted(described, key=lambda d: (not d.startswith("'"), d)))
    if len(expected) == 1:
        found += f"; expected {expected[0]}"
    elif expected:
        found += f"; expected one of: {', '.join(expected)}"
    return QueryParseError(located(text, line, column, found), line=line, column=column,
                           expected=expected)


def _describe(name: str, parser: Lark, keywords: set[str], words: Mapping[str, str]) -> str:
    if name in words:
        return words[name]
    if name.startswith("_") and name[1:] in keywords:
        return f"'{name[1:]}'"
    try:
        return f"'{parser.get_terminal(name).pattern.value}'"
    except KeyError:
        return name


def located(text: str, line: int, column: int, message: str) -> str:
    """``message`` prefixed by its place and followed by the query line with a caret."""
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


def tokens(tree: Tree) -> list[Token]:
    """The tokens among a parse-tree node's children."""
    return [child for child in tree.children if isinstance(child, Token)]


def duration(tree: Tree) -> tuple[Token, Duration]:
    """The number token of a ``duration`` rule (where errors point) and the
    :class:`~uncertain_cep.durations.Duration` it reads, with the unit as written (None for
    a plain number).

    Raises
    ------
    QueryParseError
        For a negative or infinite number (without a position: the caller knows it).
    """
    number, *unit = tokens(tree)
    return number, Duration(float(number), TimeUnit.named(str(unit[0])) if unit else None)


def unquote(token: Token) -> str:
    """A quoted string token's text (a doubled quote stands for one)."""
    quote = token[0]
    return token[1:-1].replace(quote * 2, quote)
