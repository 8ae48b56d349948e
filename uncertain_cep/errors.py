"""Errors raised by uncertain-cep, one subclass per pipeline stage.

Every error derives from :class:`UncertainCepError`, so ``except uc.UncertainCepError``
catches everything the library raises on purpose. Messages say what is wrong, where
(event id and column, group, query line and column), and how to fix it.

String options are validated by :class:`ParamEnum` subclasses, which list the valid
values when given a wrong one (the discipline of shapely's ``ParamEnum``).

>>> class Colour(ParamEnum):
...     red = "red"
...     blue = "blue"
>>> Colour.get_value("red")
'red'
>>> Colour.get_value("green")
Traceback (most recent call last):
...
uncertain_cep.errors.InvalidOptionError: 'green' is not a valid colour; choose one of: 'red', 'blue'
"""

from __future__ import annotations

import enum
import re

__all__ = [
    "DEFAULT_MAX_ROWS",
    "AnswerTooLargeError",
    "FileWriteError",
    "IndexBuildError",
    "IndexFormatError",
    "InputError",
    "InvalidOptionError",
    "MissingDependencyError",
    "ParamEnum",
    "PlanningError",
    "QueryError",
    "QueryParseError",
    "UncertainCepError",
    "UsageError",
]


class UncertainCepError(Exception):
    """Root of every error the library raises on purpose."""


class InputError(UncertainCepError, ValueError):
    """The archive (rows, columns, groups) is not valid input; see SEMANTICS A1/A2.

    ``row`` is the 0-based position of the offending row in the table that was read, when
    one row is at fault (the Spark pipeline uses it to reject exactly that row).
    """

    def __init__(self, message: str, row: int | None = None) -> None:
        super().__init__(message)
        self.row = row


class IndexBuildError(UncertainCepError):
    """A dependency group could not be indexed (for example it exceeds the node budget)."""


class IndexFormatError(UncertainCepError):
    """An on-disk index is missing, damaged, or of another format version."""


class QueryParseError(UncertainCepError, ValueError):
    """Query text is malformed. Carries ``line`` and ``column`` (1-based) and ``expected``."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None,
                 expected: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.line = line
        self.column = column
        self.expected = expected


class QueryError(UncertainCepError, ValueError):
    """A well-formed query that cannot run on this archive (unknown attribute, bad value)."""


class PlanningError(UncertainCepError):
    """The planner could not evaluate a query (unknown strategy, inconsistent plan)."""


# The most rows an in-memory answer table holds by default (``max_rows=``, the CLI's
# ``--max-rows``), past which a query stops with an AnswerTooLargeError: about 1 GB of
# table for 3-event tuples (bench/bench_answer_table.py: 16.6M rows of 27 ids took 12.7 GB).
DEFAULT_MAX_ROWS = 5_000_000


class AnswerTooLargeError(QueryError, MemoryError):
    """A query's answer exceeds its budget (``max_rows``), or the query ran out of memory:
    its answer or working set does not fit (also a ``MemoryError``, for code that handles
    those). ``rows``: the answer rows found when it stopped, where known."""

    def __init__(self, message: str, *, rows: int | None = None) -> None:
        super().__init__(message)
        self.rows = rows


class FileWriteError(UncertainCepError, OSError):
    """An index, answer or report could not be written where asked (permissions, a file
    in place of a directory, no space): names the target, never a temporary file."""


class UsageError(UncertainCepError, ValueError):
    """A command line asks for what cannot be: an unknown name, an option of another
    command, a value an option cannot take (the CLI exits with status 2)."""


class InvalidOptionError(UncertainCepError, ValueError):
    """A string option was not one of its valid values."""


class ParamEnum(enum.Enum):
    """An enum of string options whose ``get_value`` names the valid choices on error."""

    @classmethod
    def get_value(cls, item: object) -> str:
        try:
            return str(cls(item).value)
        except ValueError:
            valid = ", ".join(repr(m.value) for m in cls)
            name = re.sub(r"(?<!^)(?=[A-Z])", " ", cls.__name__).lower()
            raise InvalidOptionError(
                f"{item!r} is not a valid {name}; choose one of: {valid}"
            ) from None


class MissingDependencyError(UncertainCepError, ImportError):
    """An optional dependency that the asked-for feature needs is not installed (the
    message names the extra to install)."""
