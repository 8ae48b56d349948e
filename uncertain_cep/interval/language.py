"""Parser for part-B query text (SEMANTICS C; TPStream section 3, Listing 1).

::

    [FROM source [alias]]
    [PARTITION BY column, ...]
    DEFINE S AS condition [AT LEAST d | AT MOST d | [DURATION] BETWEEN d1 AND d2], ...
    PATTERN group AND group ...
    [WITHIN d]
    [RETURN agg(S.column) [AS alias], ...] [;]

A constraint group is a disjunction between one pair of symbols (``A meets B; A overlaps
B``, TPStream's form; ``A meets; overlaps B``, the predicate-pair shorthand of Chen et al.;
either order, ``B finishes C`` counts for ``C finished_by B``), a hierarchy operator
(``A SEQ C``, Bhandari and Urban), ``A followed_by B`` / ``A follows B``, or a chain of
endpoint restrictions (``A.ts < C.ts <= B.te``, ISEQ's TList). Relation names take any
case and ``_`` or ``-``. Durations and windows are numbers in the data's unit or carry a
unit (``5s``, ``30 SECONDS``, ``5 MINUTES``, ``2 HOURS``, also ms, min, h, days); the
pattern keeps it (:class:`~uncertain_cep.durations.Duration`) and the matcher converts with
the ``time_unit`` of the data. Columns may be qualified by the source's name or alias
(``CS.accel``). ``-- comments`` run to the end of the line.

>>> p = parse_temporal_query('''
...     PARTITION BY car
...     DEFINE A AS accel > 8 AT LEAST 5s, B AS speed > 70
...     PATTERN A meets; Overlaps B AND B.te < A.te
...     WITHIN 5 minutes''')
>>> print(p.constraints[0]), print(p.constraints[1]), p.within
A meets; overlaps B
B.te < A.te
(None, None, Duration(value=5.0, unit=<TimeUnit.MINUTES: 'MINUTES'>))
>>> try:
...     parse_temporal_query("DEFINE A AS x > 1 PATTERN A meets")
... except QueryParseError as error:
...     print(error)
line 1, column 34: unexpected end of query; expected one of: ';', a name
    DEFINE A AS x > 1 PATTERN A meets
                                     ^
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from lark import Lark, Token, Tree, UnexpectedInput

from uncertain_cep.errors import InvalidOptionError, QueryParseError
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
from uncertain_cep.interval.conditions import And, Column, Compare, Condition, Literal, Not, Or
from uncertain_cep.interval.patterns import (
    Aggregate,
    Constraint,
    Duration,
    FollowedBy,
    RelationConstraint,
    ReturnItem,
    SituationDefinition,
    TemporalPattern,
    pattern_problem,
)
from uncertain_cep.interval.relations import (
    AllenRelation,
    Endpoint,
    EndpointRestriction,
    HierarchyOperator,
    SuccessionRelation,
    inverse,
    lookup_relation,
)

__all__ = ["parse_temporal_query", "plain_duration_positions"]

_KEYWORDS = ("FROM", "PARTITION", "BY", "DEFINE", "AS", "AT", "LEAST", "MOST", "DURATION",
             "BETWEEN", "AND", "OR", "NOT", "PATTERN", "WITHIN", "RETURN")

# Every relation and operator name, with `_` or `-` between words. AND is an operator
# too; the contextual lexer only offers RELATION right after a constraint's first symbol,
# where the separator AND cannot stand.
_RELATION_WORDS = sorted({w.lower() for w in [*(r.value for r in AllenRelation),
                                               *(r.value for r in SuccessionRelation),
                                               *(o.value for o in HierarchyOperator)]},
                         key=len, reverse=True)
_RELATION_REGEX = "|".join(w.replace("_", "[_-]") for w in _RELATION_WORDS)

_GRAMMAR = r"""
start: source? partition? define pattern within? returns? ";"?

source: _FROM NAME NAME?
partition: _PARTITION _BY column ("," column)*

define: _DEFINE definition ("," definition)*
definition: NAME _AS condition bound?
bound: _AT _LEAST duration                        -> at_least
     | _AT _MOST duration                         -> at_most
     | _DURATION? _BETWEEN duration _AND duration -> between

?condition: conjunction
          | condition _OR conjunction             -> or_
?conjunction: negation
            | conjunction _AND negation           -> and_
?negation: _NOT negation                          -> not_
         | "(" condition ")"
         | operand comparator operand             -> compare
?operand: column
        | NUMBER                                  -> number
        | STRING                                  -> string
column: NAME ("." NAME)?
comparator: LT | LE | EQ | NE | GT | GE

pattern: _PATTERN group (_AND group)*
?group: relation_term (";" relation_term)*        -> disjunction
      | endpoint (point_comparator endpoint)+    -> restrictions
relation_term: NAME RELATION (";" RELATION)* NAME
endpoint: NAME "." ENDPOINT
point_comparator: LT | LE | EQ | GT | GE

within: _WITHIN duration
returns: _RETURN return_item ("," return_item)*
return_item: NAME "(" NAME "." NAME ")" (_AS NAME)?

LT: "<"
LE: "<="
EQ: "="
NE: "!=" | "<>"
GT: ">"
GE: ">="
""" + COMMON_TERMINALS + DURATION_GRAMMAR + keyword_terminals(_KEYWORDS) + (
    f"RELATION.3: /(?:{_RELATION_REGEX})(?![A-Za-z0-9_])/i\n"
    "ENDPOINT.2: /t[se](?![A-Za-z0-9_])/i\n")

_PARSER = Lark(_GRAMMAR, parser="lalr", propagate_positions=True)

# The largest WITHIN: times are int64.
_INT64_MAX = 2**63 - 1

_TERMINAL_WORDS = {
    **TERMINAL_WORDS,
    "RELATION": "a temporal relation",
    "ENDPOINT": "'ts' or 'te'",
}


def parse_temporal_query(text: str) -> TemporalPattern:
    """Parse part-B query text into a :class:`~uncertain_cep.interval.patterns.TemporalPattern`.

    Raises
    ------
    QueryParseError
        For malformed text and for patterns the text describes but which are invalid (an
        undefined symbol in PATTERN or RETURN, a disjunction over two different pairs,
        a negative duration, ...). The message names the line and column, shows the line
        with a caret and, for syntax errors, what was expected; ``line``, ``column`` and
        ``expected`` carry the same. Nothing about the data is checked here.
    """
    if not isinstance(text, str):
        raise TypeError(f"query text must be a str, got {type(text).__name__}")
    try:
        tree = _PARSER.parse(text)
    except UnexpectedInput as error:
        raise _syntax_error(text, error) from error
    return _Builder(text).pattern(tree)


def plain_duration_positions(text: str) -> list[tuple[int, int]]:
    """Where each duration or window written as a plain number other than 0 starts in
    (valid) query text, in text order: the places
    :meth:`~uncertain_cep.interval.patterns.TemporalPattern.plain_durations` lists.

    >>> plain_duration_positions("DEFINE A AS x > 0 AT LEAST 3s, B AS x < 0\\n"
    ...                          "PATTERN A meets B WITHIN 10")
    [(2, 26)]
    """
    return [_position(tokens(tree)[0]) for tree in _PARSER.parse(text).iter_subtrees_topdown()
            if tree.data == "duration" and len(tokens(tree)) == 1
            and float(tokens(tree)[0]) != 0]


def _syntax_error(text: str, error: UnexpectedInput) -> QueryParseError:
    return syntax_error(text, error, _PARSER, _KEYWORDS, _TERMINAL_WORDS)


def _position(item: Token | Tree) -> tuple[int, int]:
    if isinstance(item, Token):
        return item.line or 1, item.column or 1
    return getattr(item.meta, "line", 1), getattr(item.meta, "column", 1)


class _Builder:
    """Turns a parse tree into pattern objects, blaming errors on the text that caused them."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._qualifiers: set[str] = set()

    def error(self, message: str, position: tuple[int, int]) -> QueryParseError:
        line, column = position
        return QueryParseError(located(self._text, line, column, message),
                               line=line, column=column)

    @contextmanager
    def blame(self, position: tuple[int, int]) -> Iterator[None]:
        """Re-raise a validation error of the pattern classes at ``position``."""
        try:
            yield
        except (QueryParseError, InvalidOptionError) as error:
            if isinstance(error, QueryParseError) and error.line is not None:
                raise
            raise self.error(str(error), position) from error

    def pattern(self, tree: Tree) -> TemporalPattern:
        parts: dict[str, Tree] = {child.data: child for child in tree.children
                                  if isinstance(child, Tree)}
        source = None
        if "source" in parts:
            names = [str(t) for t in tokens(parts["source"])]
            source = names[0]
            self._qualifiers = set(names)
        partition = tuple(self.column(c) for c in parts["partition"].children
                          ) if "partition" in parts else ()
        definitions = parts["define"].children
        symbols = tuple(self.definition(d) for d in definitions)
        constraints: list[Constraint] = []
        positions: list[tuple[int, int]] = []
        for group in parts["pattern"].children:
            for constraint, position in self.group(group):
                constraints.append(constraint)
                positions.append(position)
        within = self.window(parts["within"].children[0]) if "within" in parts else None
        items = parts["returns"].children if "returns" in parts else []
        returns = tuple(self.return_item(item) for item in items)
        with self.blame(_position(tree)):
            problem = pattern_problem(symbols, tuple(constraints), within, source,
                                       partition, returns)
        if problem is not None:
            message, part, index = problem
            where = {"symbol": [_position(d) for d in definitions],
                     "constraint": positions or [_position(parts["pattern"])],
                     "return": [_position(i) for i in items]}.get(part)
            position = where[index] if where else _position(parts.get("partition", tree))
            raise self.error(message, position)
        return TemporalPattern(symbols, tuple(constraints), within, source, partition, returns)

    def column(self, tree: Tree) -> str:
        names = tokens(tree)
        if len(names) == 2:
            if str(names[0]) not in self._qualifiers:
                known = " or ".join(sorted(self._qualifiers)) or "(FROM names no source)"
                raise self.error(f"{names[0]}.{names[1]}: columns may be qualified only by "
                                 f"the source's name or alias: {known}", _position(names[0]))
            return str(names[1])
        return str(names[0])

    def definition(self, tree: Tree) -> SituationDefinition:
        name = tokens(tree)[0]
        condition_tree = tree.children[1]
        condition = self.condition(condition_tree)
        low = high = None
        if len(tree.children) > 2:
            bound = tree.children[2]
            durations = [self.duration(d) for d in bound.children]
            if bound.data == "at_least":
                low = durations[0]
            elif bound.data == "at_most":
                high = durations[0]
            else:
                low, high = durations
        with self.blame(_position(tree.children[-1])):
            return SituationDefinition(str(name), condition, low, high)

    def condition(self, tree: Tree) -> Condition:
        kind = tree.data
        if kind in ("or_", "and_"):
            node = Or if kind == "or_" else And
            first, second = (self.condition(c) for c in tree.children)
            # Flatten left-nested chains: `a AND b AND c` is one And of three.
            operands = (first.operands if isinstance(first, node) else (first,)) + (second,)
            return node(operands)
        if kind == "not_":
            return Not(self.condition(tree.children[0]))
        left, comparator, right = tree.children
        with self.blame(_position(tree)):
            return Compare(self.operand(left), str(tokens(comparator)[0]).replace("<>", "!="),
                           self.operand(right))

    def operand(self, tree: Tree) -> Column | Literal:
        if tree.data == "column":
            return Column(self.column(tree))
        token = tokens(tree)[0]
        if tree.data == "string":
            return Literal(unquote(token))
        with self.blame(_position(token)):
            return Literal(float(token))

    def duration(self, tree: Tree) -> Duration:
        with self.blame(_position(tokens(tree)[0])):
            return duration(tree)[1]

    def window(self, tree: Tree) -> Duration:
        """The WITHIN clause's duration; a number past int64 (times are int64) is
        refused here, where the query shows it."""
        window = self.duration(tree)
        text = str(tokens(tree)[0])
        # As written (an integer exactly: 2**63 - 1 as a float rounds up to 2**63).
        exact = int(text) if text.lstrip("+-").isdigit() else window.value
        if exact > _INT64_MAX:
            raise self.error(
                f"WITHIN {tokens(tree)[0]} is longer than the largest window, {_INT64_MAX} "
                "(int64); leave WITHIN out for no window", _position(tokens(tree)[0]))
        return window

    def group(self, tree: Tree) -> list[tuple[Constraint, tuple[int, int]]]:
        if tree.data == "restrictions":
            endpoints = [c for c in tree.children if c.data == "endpoint"]
            comparators = [c for c in tree.children if c.data == "point_comparator"]
            out: list[tuple[Constraint, tuple[int, int]]] = []
            for left, op, right in zip(endpoints, comparators, endpoints[1:]):
                (ls, le), (rs, re_) = tokens(left), tokens(right)
                with self.blame(_position(left)):
                    restriction = EndpointRestriction(str(ls), Endpoint(str(le).lower()),
                                                      str(tokens(op)[0]), str(rs),
                                                      Endpoint(str(re_).lower()))
                out.append((restriction, _position(left)))
            return out
        return [self.disjunction(tree.children)]

    def disjunction(self, terms: list[Tree]) -> tuple[Constraint, tuple[int, int]]:
        first = tokens(terms[0])
        pair = (str(first[0]), str(first[-1]))
        position = _position(first[0])
        relations: set[AllenRelation] = set()
        succession: set[SuccessionRelation] = set()
        for term in terms:
            words = tokens(term)
            left, right = str(words[0]), str(words[-1])
            if (left, right) not in (pair, pair[::-1]):
                raise self.error(f"one disjunction relates one pair of symbols: {left} and "
                                 f"{right} are not {pair[0]} and {pair[1]}; join constraints "
                                 "on different pairs with AND", _position(words[0]))
            for word in words[1:-1]:
                with self.blame(_position(word)):
                    relation = lookup_relation(str(word))
                if isinstance(relation, SuccessionRelation):
                    # A relation like the others (SEMANTICS B2), read from the pair's left.
                    succession.add(relation if (left, right) == pair else relation.inverse)
                    continue
                found = (relation.relations if isinstance(relation, HierarchyOperator)
                         else frozenset({relation}))
                relations |= found if (left, right) == pair else {inverse(r) for r in found}
        with self.blame(position):
            if not relations and len(succession) == 1:
                (only,) = succession
                if only is SuccessionRelation.follows:
                    return FollowedBy(pair[1], pair[0]), position
                return FollowedBy(pair[0], pair[1]), position
            return (RelationConstraint(pair[0], pair[1], frozenset(relations),
                                       frozenset(succession)), position)

    def return_item(self, tree: Tree) -> ReturnItem:
        aggregate, symbol, column, *alias = tokens(tree)
        name = str(alias[0]) if alias else f"{str(aggregate).lower()}_{symbol}_{column}"
        with self.blame(_position(aggregate)):
            return ReturnItem(Aggregate(Aggregate.get_value(str(aggregate).lower())),
                              str(symbol), str(column), name)

