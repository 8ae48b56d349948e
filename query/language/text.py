"""How values are written in part-A query text: numbers and quoted strings that parse back
to exactly the values they show (:meth:`SequencePattern.__str__
<uncertain_cep.query.language.patterns.SequencePattern>`, error messages)."""

from __future__ import annotations

__all__ = ["format_number", "format_string"]


def format_number(value: float) -> str:
    """Shortest text that reads back as exactly ``value``; whole numbers without ``.0``.

    >>> format_number(6.0), format_number(0.1)
    ('6', '0.1')
    """
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def format_string(value: str) -> str:
    """A string as a query's quoted literal (quotes doubled).

    >>> format_string("it's")
    "'it''s'"
    """
    return "'" + value.replace("'", "''") + "'"
