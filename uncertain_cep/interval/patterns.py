"""Part-B temporal patterns over situations as immutable, validated values (SEMANTICS B, C).

A pattern (TPStream section 3, Definitions 7 and 11) defines situations by conditions on
point events, relates pairs of situations by constraints, bounds the match by a window and
names the aggregates to return. :func:`uncertain_cep.interval.language.parse_temporal_query` builds
one from query text; ``str(pattern)`` gives text that parses back to an equal pattern.

>>> from uncertain_cep.interval.conditions import Column, Compare, Literal
>>> from uncertain_cep.interval.relations import AllenRelation as R
>>> p = TemporalPattern(
...     symbols=(SituationDefinition("A", Compare(Column("x"), ">", Literal(8)),
...                                  min_duration=Duration(5, "s")),
...              SituationDefinition("B", Compare(Column("y"), "<", Literal(0)))),
...     constraints=(RelationConstraint("A", "B", frozenset({R.meets, R.overlaps})),),
...     within=Duration(2, "min"), partition_by=("car",),
...     returns=(ReturnItem("avg", "B", "y", "avg_y"),))
>>> print(p)
PARTITION BY car
DEFINE A AS x > 8 AT LEAST 5 SECONDS,
       B AS y < 0
PATTERN A meets; overlaps B
WITHIN 2 MINUTES
RETURN avg(B.y) AS avg_y
>>> p.resolve_units(0.5).within
Duration(value=240.0, unit=None)
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from uncertain_cep.durations import Duration, TimeUnit, seconds_per_unit
from uncertain_cep.errors import InvalidOptionError, ParamEnum, QueryError, QueryParseError
from uncertain_cep.interval.conditions import Condition, check_condition
from uncertain_cep.interval.relations import (
    ALLEN_RELATIONS,
    AllenRelation,
    EndpointRestriction,
    SuccessionRelation,
    inverse,
)

__all__ = ["Aggregate", "Constraint", "Duration", "FollowedBy", "RelationConstraint", "ReturnItem",
           "SituationDefinition", "TemporalPattern", "TimeUnit", "pattern_problem",
           "seconds_per_unit"]

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _check_name(name: object, what: str) -> str:
    if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
        raise QueryParseError(f"{what} must be an identifier ([A-Za-z_][A-Za-z0-9_]*), "
                              f"got {name!r}")
    return name


def _resolved(duration: Duration | None, time_unit: float | str | None) -> Duration | None:
    return None if duration is None else Duration(duration.in_data_units(time_unit))


@dataclass(frozen=True)
class SituationDefinition:
    """``name AS condition [AT LEAST d] [AT MOST d]``: a symbol's situations (B1).

    ``min_duration``/``max_duration`` bound ``te - ts`` inclusively; ``DURATION BETWEEN d1
    AND d2`` sets both.
    """

    name: str
    condition: Condition
    min_duration: Duration | None = None
    max_duration: Duration | None = None

    def __post_init__(self) -> None:
        _check_name(self.name, "a symbol name")
        check_condition(self.condition)
        for bound in (self.min_duration, self.max_duration):
            if bound is not None and not isinstance(bound, Duration):
                raise QueryParseError(f"symbol {self.name}: a duration bound must be a "
                                      f"Duration, got {bound!r}")
        low, high = self.min_duration, self.max_duration
        # Bounds in different units are compared once converted (resolve_units).
        if low is not None and high is not None and low.unit == high.unit and \
                low.value > high.value:
            raise QueryParseError(f"symbol {self.name}: the minimum duration {low} is above "
                                  f"the maximum {high}")

    def __str__(self) -> str:
        text = f"{self.name} AS {self.condition}"
        low, high = self.min_duration, self.max_duration
        if low is not None and high is not None:
            return f"{text} DURATION BETWEEN {low} AND {high}"
        if low is not None:
            return f"{text} AT LEAST {low}"
        if high is not None:
            return f"{text} AT MOST {high}"
        return text


def _check_pair(left: object, right: object, what: str) -> None:
    _check_name(left, f"a symbol of {what}")
    _check_name(right, f"a symbol of {what}")
    if left == right:
        raise QueryParseError(f"{what} relates {left} with itself; it needs two symbols")


@dataclass(frozen=True)
class RelationConstraint:
    """``left r1; r2; ... right``: the pair is in at least one of ``relations`` (TPStream
    Definition 10), or in one of ``succession`` (``followed_by``/``follows``, read from
    ``left`` to ``right``: SEMANTICS B2 makes them relations that may join a disjunction
    like any other). Hierarchy operators are stored as their sets of Allen relations; a
    succession already implied by ``before``/``after`` in the set is dropped.

    >>> c = RelationConstraint("C", "B", frozenset({AllenRelation.during}))
    >>> str(c), str(c.inverted())
    ('C during B', 'B contains C')
    >>> c = RelationConstraint("A", "B", frozenset({AllenRelation.overlaps}),
    ...                        frozenset({SuccessionRelation.followed_by}))
    >>> str(c), str(c.inverted()), c.followed_by_pairs()
    ('A overlaps; followed_by B', 'B overlapped_by; follows A', (FollowedBy(left='A', right='B'),))
    """

    left: str
    right: str
    relations: frozenset[AllenRelation]
    succession: frozenset[SuccessionRelation] = frozenset()

    def __post_init__(self) -> None:
        _check_pair(self.left, self.right, "a relation constraint")
        for given in (self.relations, self.succession):
            if isinstance(given, (str, bytes)):
                raise QueryParseError(f"relations must be a set of relations, got {given!r}")
        try:
            relations = frozenset(AllenRelation(AllenRelation.get_value(r))
                                  for r in self.relations)
            succession = frozenset(SuccessionRelation(SuccessionRelation.get_value(r))
                                   for r in self.succession)
        except InvalidOptionError as error:
            raise QueryParseError(str(error)) from None
        succession = frozenset(r for r in succession if r.base not in relations)
        if not relations and not succession:
            raise QueryParseError(f"the constraint between {self.left} and {self.right} "
                                  "allows no relation")
        object.__setattr__(self, "relations", relations)
        object.__setattr__(self, "succession", succession)

    @property
    def symbols(self) -> tuple[str, str]:
        return self.left, self.right

    def inverted(self) -> RelationConstraint:
        """The same constraint read from ``right`` to ``left``."""
        return RelationConstraint(self.right, self.left,
                                  frozenset(inverse(r) for r in self.relations),
                                  frozenset(r.inverse for r in self.succession))

    def followed_by_pairs(self) -> tuple[FollowedBy, ...]:
        """The disjunction's successions as ``followed_by`` constraints (``A follows B``
        is ``B followed_by A``)."""
        return tuple(FollowedBy(self.left, self.right)
                     if r is SuccessionRelation.followed_by
                     else FollowedBy(self.right, self.left)
                     for r in sorted(self.succession, key=lambda r: r.value))

    def __str__(self) -> str:
        names = [str(r) for r in ALLEN_RELATIONS if r in self.relations]
        names += [str(r) for r in SuccessionRelation if r in self.succession]
        return f"{self.left} {'; '.join(names)} {self.right}"


@dataclass(frozen=True)
class FollowedBy:
    """``left followed_by right`` (SEMANTICS B2); ``B follows A`` is stored as this.

    >>> str(FollowedBy("A", "B"))
    'A followed_by B'
    """

    left: str
    right: str

    def __post_init__(self) -> None:
        _check_pair(self.left, self.right, "followed_by")

    @property
    def symbols(self) -> tuple[str, str]:
        return self.left, self.right

    def __str__(self) -> str:
        return f"{self.left} followed_by {self.right}"


Constraint = RelationConstraint | FollowedBy | EndpointRestriction
_CONSTRAINT_TYPES = (RelationConstraint, FollowedBy, EndpointRestriction)


class Aggregate(ParamEnum):
    """Aggregates over a situation's point events (TPStream Definition 6)."""

    first = "first"
    last = "last"
    min = "min"
    max = "max"
    avg = "avg"
    sum = "sum"
    count = "count"


@dataclass(frozen=True)
class ReturnItem:
    """``aggregate(symbol.column) AS alias`` in RETURN.

    The aggregate is computed per situation while deriving it; the situation table holds
    it in column :attr:`source_column`.

    >>> ReturnItem("AVG", "B", "speed", "avg_speed").source_column
    'avg_speed'
    """

    aggregate: Aggregate
    symbol: str
    column: str
    alias: str

    def __post_init__(self) -> None:
        if not isinstance(self.aggregate, Aggregate):
            value = self.aggregate.lower() if isinstance(self.aggregate, str) else self.aggregate
            try:
                object.__setattr__(self, "aggregate", Aggregate(Aggregate.get_value(value)))
            except InvalidOptionError as error:
                raise QueryParseError(str(error)) from None
        _check_name(self.symbol, "a symbol name")
        _check_name(self.column, "a column name")
        _check_name(self.alias, "an alias")

    @property
    def source_column(self) -> str:
        return f"{self.aggregate.value}_{self.column}"

    def __str__(self) -> str:
        return f"{self.aggregate.value}({self.symbol}.{self.column}) AS {self.alias}"


@dataclass(frozen=True)
class TemporalPattern:
    """A whole part-B query: situations, constraints, window, partitioning, RETURN.

    Raises :class:`~uncertain_cep.errors.QueryParseError` (without line and column) when
    the parts do not fit: a constraint or RETURN item naming an undefined symbol, a symbol
    defined twice, an alias repeated or clashing with an output column.
    """

    symbols: tuple[SituationDefinition, ...]
    constraints: tuple[Constraint, ...]
    within: Duration | None = None
    source: str | None = None
    partition_by: tuple[str, ...] = ()
    returns: tuple[ReturnItem, ...] = ()

    def __post_init__(self) -> None:
        for field in ("symbols", "constraints", "partition_by", "returns"):
            value = getattr(self, field)
            if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list)):
                raise QueryParseError(f"{field} must be a tuple, got {value!r}")
            object.__setattr__(self, field, tuple(value))
        problem = pattern_problem(self.symbols, self.constraints, self.within, self.source,
                                   self.partition_by, self.returns)
        if problem is not None:
            raise QueryParseError(problem[0])

    @property
    def symbol_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.symbols)

    def symbol(self, name: str) -> SituationDefinition:
        for definition in self.symbols:
            if definition.name == name:
                return definition
        raise KeyError(name)

    def aggregates_of(self, symbol: str) -> tuple[tuple[Aggregate, str], ...]:
        """The ``(aggregate, column)`` pairs RETURN needs from ``symbol``'s situations."""
        seen = dict.fromkeys((r.aggregate, r.column) for r in self.returns if r.symbol == symbol)
        return tuple(seen)

    def output_columns(self) -> tuple[str, ...]:
        """Columns of the answer, in order (SEMANTICS B3)."""
        spans = tuple(f"{s}_{end}" for s in self.symbol_names for end in ("ts", "te"))
        return (self.partition_by + spans + tuple(r.alias for r in self.returns)
                + ("detected_at",))

    def plain_durations(self) -> tuple[tuple[str, str, Duration], ...]:
        """The durations and the window written as plain numbers other than 0 (a 0 is
        the same in every unit), in the order of the query text: each as ``(where,
        keyword, duration)``, ``where`` naming its place and ``keyword`` the word it
        follows.

        >>> from uncertain_cep.interval.language import parse_temporal_query
        >>> parse_temporal_query("DEFINE A AS x > 0 AT LEAST 3, B AS x < 0 BETWEEN 0 AND 5s "
        ...                      "PATTERN A meets B WITHIN 10").plain_durations()
        (('symbol A: AT LEAST', 'AT LEAST', Duration(value=3.0, unit=None)),
         ('WITHIN', 'WITHIN', Duration(value=10.0, unit=None)))
        """
        found: list[tuple[str, str, Duration | None]] = []
        for s in self.symbols:
            low, high = s.min_duration, s.max_duration
            if low is not None and high is not None:
                found += [(f"symbol {s.name}: DURATION BETWEEN", "BETWEEN", low),
                          (f"symbol {s.name}: DURATION BETWEEN {low} AND", "AND", high)]
            else:
                found += [(f"symbol {s.name}: AT LEAST", "AT LEAST", low),
                          (f"symbol {s.name}: AT MOST", "AT MOST", high)]
        found.append(("WITHIN", "WITHIN", self.within))
        return tuple((where, keyword, d) for where, keyword, d in found
                     if d is not None and d.unit is None and d.value != 0)

    def resolve_units(self, time_unit: float | str | None) -> TemporalPattern:
        """The same pattern with every duration and the window in the data's unit.

        Raises
        ------
        QueryError
            If a duration carries a unit and ``time_unit`` is None, or once converted a
            symbol's minimum duration exceeds its maximum.
        """
        symbols = []
        for s in self.symbols:
            low, high = _resolved(s.min_duration, time_unit), _resolved(s.max_duration,
                                                                         time_unit)
            if low is not None and high is not None and low.value > high.value:
                raise QueryError(f"symbol {s.name}: the minimum duration {s.min_duration} is "
                                 f"above the maximum {s.max_duration}")
            symbols.append(dataclasses.replace(s, min_duration=low, max_duration=high))
        return dataclasses.replace(self, symbols=tuple(symbols),
                                   within=_resolved(self.within, time_unit))

    def __str__(self) -> str:
        lines = []
        if self.source is not None:
            lines.append(f"FROM {self.source}")
        if self.partition_by:
            lines.append(f"PARTITION BY {', '.join(self.partition_by)}")
        lines.append("DEFINE " + ",\n       ".join(str(s) for s in self.symbols))
        lines.append("PATTERN " + "\n    AND ".join(str(c) for c in self.constraints))
        if self.within is not None:
            lines.append(f"WITHIN {self.within}")
        if self.returns:
            lines.append("RETURN " + ", ".join(str(r) for r in self.returns))
        return "\n".join(lines)


def pattern_problem(symbols: tuple[SituationDefinition, ...],
                     constraints: tuple[Constraint, ...], within: Duration | None,
                     source: str | None, partition_by: tuple[str, ...],
                     returns: tuple[ReturnItem, ...]) -> tuple[str, str, int] | None:
    """The first reason the parts do not form a pattern, with the part and its index."""
    names: set[str] = set()
    for index, symbol in enumerate(symbols):
        if not isinstance(symbol, SituationDefinition):
            return f"a symbol must be a SituationDefinition, got {symbol!r}", "symbol", index
        if symbol.name in names:
            return f"symbol {symbol.name} is defined twice", "symbol", index
        names.add(symbol.name)
    if not names:
        return "a pattern defines at least one symbol", "symbol", 0
    if not constraints:
        return "a pattern needs at least one constraint", "constraint", 0
    for index, constraint in enumerate(constraints):
        if not isinstance(constraint, _CONSTRAINT_TYPES):
            return (f"a constraint must be a RelationConstraint, FollowedBy or "
                    f"EndpointRestriction, got {constraint!r}", "constraint", index)
        if constraint.symbols[0] == constraint.symbols[1]:
            return (f"{constraint} relates {constraint.symbols[0]} with itself",
                    "constraint", index)
        for name in constraint.symbols:
            if name not in names:
                return (f"{constraint}: symbol {name} is not defined; defined: "
                        f"{', '.join(sorted(names))}", "constraint", index)
    if within is not None and not isinstance(within, Duration):
        return f"WITHIN must be a Duration, got {within!r}", "within", 0
    if source is not None:
        _check_name(source, "a source name")
    for column in partition_by:
        _check_name(column, "a partition column")
    if len(set(partition_by)) != len(partition_by):
        return "PARTITION BY names a column twice", "partition", 0
    taken = set(partition_by) | {"detected_at"} | {
        f"{s}_{end}" for s in names for end in ("ts", "te")}
    for index, item in enumerate(returns):
        if not isinstance(item, ReturnItem):
            return f"a RETURN item must be a ReturnItem, got {item!r}", "return", index
        if item.symbol not in names:
            return (f"{item}: symbol {item.symbol} is not defined; defined: "
                    f"{', '.join(sorted(names))}", "return", index)
        if item.alias in taken:
            return f"{item}: the alias {item.alias} is already an output column", "return", index
        taken.add(item.alias)
    return None
