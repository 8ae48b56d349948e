"""Situation conditions: boolean expressions over point-event columns (SEMANTICS B1, C).

A symbol's condition (TPStream section 3, the predicate phi of Definition 7) is a tree of
comparisons joined by AND, OR and NOT. It is evaluated on a whole table at once: every
node maps a DataFrame to one boolean per row.

>>> import pandas as pd
>>> c = Or((Compare(Column("speed"), ">", Literal(70)),
...         Not(Compare(Column("gear"), "=", Literal("D")))))
>>> str(c)
"speed > 70 OR NOT gear = 'D'"
>>> c.evaluate(pd.DataFrame({"speed": [80, 50, 60], "gear": ["D", "D", "R"]})).tolist()
[True, False, True]
>>> sorted(c.columns)
['gear', 'speed']
"""

from __future__ import annotations

import math
import numbers
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from uncertain_cep.errors import QueryError, QueryParseError

__all__ = ["And", "Column", "Compare", "Condition", "Literal", "Not", "Or", "check_condition"]

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
    ">": operator.gt, ">=": operator.ge,
}


@dataclass(frozen=True)
class Column:
    """A point-event column, by name.

    >>> str(Column("accel"))
    'accel'
    """

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _IDENTIFIER.fullmatch(self.name):
            raise QueryParseError(
                f"a column name must be an identifier ([A-Za-z_][A-Za-z0-9_]*), got {self.name!r}")

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Literal:
    """A number (stored as float) or a string constant.

    >>> str(Literal(-9)), str(Literal("it's")), Literal(2).value
    ('-9', "'it''s'", 2.0)
    """

    value: float | str

    def __post_init__(self) -> None:
        if isinstance(self.value, str):
            return
        # bool is an Integral; comparing a column with True is almost certainly a mistake.
        if isinstance(self.value, bool) or not isinstance(self.value, numbers.Real):
            raise QueryParseError(f"a constant must be a number or a string, got {self.value!r}")
        value = float(self.value)
        if not math.isfinite(value):
            raise QueryParseError(f"a constant must be a finite number, got {self.value!r}")
        object.__setattr__(self, "value", value)

    def __str__(self) -> str:
        if isinstance(self.value, str):
            return "'" + self.value.replace("'", "''") + "'"
        if self.value.is_integer() and abs(self.value) < 1e15:
            return str(int(self.value))
        return repr(self.value)


Operand = Column | Literal


@dataclass(frozen=True)
class Compare:
    """``left op right`` with ``op`` in ``= != < <= > >=``; at least one side is a column.

    Numbers compare with numbers and strings with strings (strings in code-point order).

    >>> Compare(Column("x"), "<=", Literal(3)).evaluate(pd.DataFrame({"x": [2, 3, 4]})).tolist()
    [True, True, False]
    >>> Compare(Column("x"), "<", Literal("a")).evaluate(pd.DataFrame({"x": [1]}))
    Traceback (most recent call last):
    ...
    uncertain_cep.errors.QueryError: x < 'a': column x holds numbers, compared with a string
    """

    left: Operand
    op: str
    right: Operand

    def __post_init__(self) -> None:
        if self.op not in _OPERATORS:
            raise QueryParseError(
                f"a comparison operator is one of {', '.join(_OPERATORS)}; got {self.op!r}")
        for side in (self.left, self.right):
            if not isinstance(side, (Column, Literal)):
                raise QueryParseError(f"a comparison compares columns and constants, got {side!r}")
        if isinstance(self.left, Literal) and isinstance(self.right, Literal):
            raise QueryParseError(f"{self} compares two constants; name a column")

    @property
    def columns(self) -> frozenset[str]:
        return frozenset(s.name for s in (self.left, self.right) if isinstance(s, Column))

    def evaluate(self, frame: pd.DataFrame) -> np.ndarray:
        left, left_kind = self._values(self.left, frame)
        right, right_kind = self._values(self.right, frame)
        if left_kind != right_kind:
            # Name the column's kind first: that is the side the user cannot change.
            column, kind, other = ((self.left, left_kind, right_kind)
                                   if isinstance(self.left, Column)
                                   else (self.right, right_kind, left_kind))
            raise QueryError(f"{self}: column {column} holds {kind}s, compared with a {other}")
        result = np.asarray(_OPERATORS[self.op](left, right), dtype=bool)
        return np.broadcast_to(result, (len(frame),)).copy()

    def _values(self, operand: Operand, frame: pd.DataFrame) -> tuple[object, str]:
        if isinstance(operand, Literal):
            return operand.value, "string" if isinstance(operand.value, str) else "number"
        if operand.name not in frame.columns:
            raise QueryError(f"{self}: the data has no column {operand.name!r}; columns: "
                             f"{', '.join(map(str, frame.columns))}")
        series = frame[operand.name]
        kind = "number" if pd.api.types.is_numeric_dtype(series) else "string"
        return series.to_numpy(), kind

    def __str__(self) -> str:
        return f"{self.left} {self.op} {self.right}"


@dataclass(frozen=True)
class Not:
    """Logical negation.

    >>> x, y = Compare(Column("x"), ">", Literal(1)), Compare(Column("y"), ">", Literal(1))
    >>> str(Not(And((x, y))))
    'NOT (x > 1 AND y > 1)'
    """

    operand: Condition

    def __post_init__(self) -> None:
        check_condition(self.operand)

    @property
    def columns(self) -> frozenset[str]:
        return self.operand.columns

    def evaluate(self, frame: pd.DataFrame) -> np.ndarray:
        return ~self.operand.evaluate(frame)

    def __str__(self) -> str:
        return f"NOT {_wrapped(self.operand, (Compare, Not))}"


@dataclass(frozen=True)
class And:
    """Conjunction of two or more conditions."""

    operands: tuple[Condition, ...]

    def __post_init__(self) -> None:
        _check_operands(self, "AND")

    @property
    def columns(self) -> frozenset[str]:
        return frozenset().union(*(o.columns for o in self.operands))

    def evaluate(self, frame: pd.DataFrame) -> np.ndarray:
        result = self.operands[0].evaluate(frame)
        for operand in self.operands[1:]:
            result &= operand.evaluate(frame)
        return result

    def __str__(self) -> str:
        return " AND ".join(_wrapped(o, (Compare, Not, And)) for o in self.operands)


@dataclass(frozen=True)
class Or:
    """Disjunction of two or more conditions."""

    operands: tuple[Condition, ...]

    def __post_init__(self) -> None:
        _check_operands(self, "OR")

    @property
    def columns(self) -> frozenset[str]:
        return frozenset().union(*(o.columns for o in self.operands))

    def evaluate(self, frame: pd.DataFrame) -> np.ndarray:
        result = self.operands[0].evaluate(frame)
        for operand in self.operands[1:]:
            result |= operand.evaluate(frame)
        return result

    def __str__(self) -> str:
        return " OR ".join(_wrapped(o, (Compare, Not, And, Or)) for o in self.operands)


Condition = Compare | Not | And | Or
_CONDITION_TYPES = (Compare, Not, And, Or)


def check_condition(value: object) -> None:
    if not isinstance(value, _CONDITION_TYPES):
        raise QueryParseError(f"a condition must be Compare, Not, And or Or, got {value!r}")


def _check_operands(node: And | Or, word: str) -> None:
    operands = node.operands
    if isinstance(operands, (str, bytes)) or not isinstance(operands, (tuple, list)):
        raise QueryParseError(f"{word} takes a tuple of conditions, got {operands!r}")
    if len(operands) < 2:
        raise QueryParseError(f"{word} needs at least two conditions, got {len(operands)}")
    for operand in operands:
        check_condition(operand)
    object.__setattr__(node, "operands", tuple(operands))


def _wrapped(condition: Condition, bare: tuple[type, ...]) -> str:
    """``condition`` as text, in parentheses unless it binds at least as tightly as needed."""
    text = str(condition)
    return text if isinstance(condition, bare) else f"({text})"
