"""The predicates a symbol's definition is a conjunction of (SEMANTICS C): a comparison
of a numeric attribute with a number, a closed range, or a categorical attribute's set of
values; immutable, validated when built.

>>> print(Comparison("x", "<", 5), Between("y", 1, 2), InSet("tag", ("a", "b")), sep="; ")
x < 5; y BETWEEN 1 AND 2; tag IN ('a', 'b')
>>> symbol_problem((Comparison("x", "<", 5), InSet("x", ("a",))))[1]
1
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Iterable
from dataclasses import dataclass

from uncertain_cep.errors import QueryParseError
from uncertain_cep.query.language.text import format_number, format_string

__all__ = ["Between", "Comparison", "InSet", "Predicate", "as_tuple", "check_name",
           "check_number", "symbol_problem"]


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMERIC_OPS = ("<", "<=", ">", ">=", "=")


def check_name(name: object, what: str) -> None:
    """Refuse ``name`` (called ``what`` in the message) unless it is an identifier."""
    if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
        raise QueryParseError(
            f"{what} must be an identifier ([A-Za-z_][A-Za-z0-9_]*), got {name!r}"
        )


def check_number(value: object, what: str) -> float:
    """``value`` as a finite float, or a refusal naming ``what``."""
    # bool is an Integral; True as a bound is almost certainly a mistake.
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise QueryParseError(f"{what} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise QueryParseError(f"{what} must be a finite number, got {value!r}")
    return value


def as_tuple(values: object, what: str) -> tuple:
    """``values`` as a tuple, or a refusal naming ``what`` (a bare string is not one)."""
    # A bare string is iterable too, but splitting it into characters is never meant.
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise QueryParseError(f"{what} must be a tuple, got {values!r}")
    return tuple(values)


@dataclass(frozen=True)
class Comparison:
    """A numeric comparison ``attribute op value``.

    Parameters
    ----------
    attribute : str
        Name of a numeric attribute.
    op : str
        One of ``"<"``, ``"<="``, ``">"``, ``">="``, ``"="``.
    value : float
        A finite number; ints are stored as floats.

    Examples
    --------
    >>> c = Comparison("y", ">=", 8)
    >>> c.value, str(c)
    (8.0, 'y >= 8')
    """

    attribute: str
    op: str
    value: float

    def __post_init__(self) -> None:
        check_name(self.attribute, "an attribute name")
        if self.op not in _NUMERIC_OPS:
            raise QueryParseError(
                f"comparison operator must be one of {', '.join(_NUMERIC_OPS)}; got {self.op!r}"
            )
        value = check_number(self.value, f"the value compared with {self.attribute}")
        object.__setattr__(self, "value", value)

    def __str__(self) -> str:
        return f"{self.attribute} {self.op} {format_number(self.value)}"


@dataclass(frozen=True)
class Between:
    """A closed numeric range ``attribute BETWEEN low AND high``.

    Examples
    --------
    >>> str(Between("x", 0, 2.5))
    'x BETWEEN 0 AND 2.5'
    """

    attribute: str
    low: float
    high: float

    def __post_init__(self) -> None:
        check_name(self.attribute, "an attribute name")
        low = check_number(self.low, f"the lower bound of {self.attribute}")
        high = check_number(self.high, f"the upper bound of {self.attribute}")
        if low > high:
            raise QueryParseError(
                f"{self.attribute} BETWEEN {format_number(low)} AND {format_number(high)}: "
                "the lower bound is above the upper bound"
            )
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)

    def __str__(self) -> str:
        return (f"{self.attribute} BETWEEN {format_number(self.low)}"
                f" AND {format_number(self.high)}")


@dataclass(frozen=True)
class InSet:
    """A categorical test: the attribute's value is one of ``values``.

    ``tag = 'v'`` is ``InSet("tag", ("v",))``.

    Examples
    --------
    >>> str(InSet("tag", ("a", "b"))), str(InSet("tag", ("it's",)))
    ("tag IN ('a', 'b')", "tag = 'it''s'")
    """

    attribute: str
    values: tuple[str, ...]

    def __post_init__(self) -> None:
        check_name(self.attribute, "an attribute name")
        values = as_tuple(self.values, f"the values of {self.attribute} IN (...)")
        if not values:
            raise QueryParseError(f"{self.attribute} IN (...) needs at least one value")
        for value in values:
            if not isinstance(value, str):
                raise QueryParseError(
                    f"{self.attribute} IN (...) takes strings only, got {value!r}"
                )
        object.__setattr__(self, "values", values)

    def __str__(self) -> str:
        if len(self.values) == 1:
            return f"{self.attribute} = {format_string(self.values[0])}"
        return f"{self.attribute} IN ({', '.join(map(format_string, self.values))})"


Predicate = Comparison | Between | InSet
_PREDICATE_TYPES = (Comparison, Between, InSet)


def symbol_problem(predicates: tuple[object, ...]) -> tuple[str, int] | None:
    """The first reason ``predicates`` cannot form a symbol, with the predicate's index."""
    kinds: dict[str, str] = {}
    for index, predicate in enumerate(predicates):
        if not isinstance(predicate, _PREDICATE_TYPES):
            return f"a predicate must be a Comparison, Between or InSet, got {predicate!r}", index
        kind = "categorical" if isinstance(predicate, InSet) else "numeric"
        if kinds.setdefault(predicate.attribute, kind) != kind:
            return (f"attribute {predicate.attribute} is used both as a numeric and as a "
                    f"categorical attribute in one definition", index)
    return None
