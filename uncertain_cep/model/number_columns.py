"""Numbers held as text: which text columns are numeric attributes, and their bad rows.

A CSV column of numbers with one ``"abc"`` in it is read as text; taken as a categorical
attribute, every later ``x < 5`` would fail at query time without naming the row. The
rule (README, "Input"):

* a column that must hold numbers (``x_lo``, ``x_hi``, ``x_mu``, ``x_sigma``) is parsed
  as numbers when it holds text, and every value that is not a number is a bad row;
* a single attribute column of plain text values (pandas ``object`` dtype, which is what
  a CSV reader or a mixed Python list gives) is *numeric* when more than half of its
  non-empty values are numbers but not all of them: the others are bad rows. A column
  whose values are all number-like strings (zip codes), or mostly words, stays
  categorical, and so does any column of an explicit ``string`` or ``category`` dtype
  (the way to say "text"); one of numbers held as Python objects is numeric.

The Spark build decides per column over the whole input (a group sees only its rows) and
passes the decision to every task (:func:`numeric_text_columns` there).

>>> import pandas as pd
>>> mostly_numbers(pd.Series(["1.5", "abc", "2", "3"], dtype=object))
True
>>> mostly_numbers(pd.Series(["1", "2"], dtype=object)), mostly_numbers(pd.Series(["a", "1"]))
(False, False)
>>> try:
...     as_numbers(pd.Series(["1.5", "abc", "2"], dtype=object), "x", ["e1", "e2", "e3"])
... except InputError as e:
...     print(e.row, str(e)[:70])
1 event 'e2' (row 1): column 'x' = 'abc' is not a number, but the column
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from uncertain_cep.errors import InputError

__all__ = ["OTHER_ROWS", "as_numbers", "is_plain_text", "mostly_numbers"]

# Bad rows named in one message (the rest are counted).
_SHOWN = 10
# The part of a message that lists every bad row (a caller that numbers rows otherwise,
# such as a Spark task reading one group, removes it).
OTHER_ROWS = re.compile(r" \(\d+ of its \d+ values are; rows that are not: [^)]*\)")


def is_plain_text(col: pd.Series) -> bool:
    """Text whose type nobody chose: pandas' ``object`` dtype (not ``string`` or
    ``category``, which say the column is text)."""
    return bool(pd.api.types.is_object_dtype(col))


def _blank(col: pd.Series) -> np.ndarray:
    return (col.isna() | (col.astype(str).str.strip() == "")).to_numpy()


def mostly_numbers(col: pd.Series) -> bool:
    """Whether a plain text column is numeric: more than half of its non-empty values
    are numbers, and not all of them are strings that spell numbers."""
    if not is_plain_text(col):
        return False
    present = ~_blank(col)
    numbers = int((pd.to_numeric(col, errors="coerce").notna().to_numpy() & present).sum())
    if 2 * numbers <= int(present.sum()):
        return False
    # All numbers: text like zip codes stays text, but numbers held as objects are numbers.
    return numbers < int(present.sum()) or not all(isinstance(v, str) for v in col[present])


def as_numbers(col: pd.Series, name: str, ids: Sequence[Any] | np.ndarray, *,
               required: bool = False) -> pd.Series:
    """A text column of a numeric attribute as floats (empty values as NaN, for the
    caller's check of missing values); every other value that is not a number is an
    :class:`~uncertain_cep.errors.InputError` naming the column and those rows (``row``:
    the first). ``required``: the column must hold numbers (a range's bound), so making
    it text is no way out."""
    values = pd.to_numeric(col, errors="coerce")
    bad = values.isna().to_numpy() & ~_blank(col)
    if bad.any():
        rows = np.flatnonzero(bad)
        i = int(rows[0])
        shown = ", ".join(str(r) for r in rows[:_SHOWN]) + (
            f" and {len(rows) - _SHOWN} more" if len(rows) > _SHOWN else "")
        present = int((~_blank(col)).sum())
        raise InputError(
            f"event {_shown(ids[i])} (row {i}): column {name!r} = {_shown(col.iloc[i])} is "
            f"not a number, but the column holds numbers ({present - len(rows)} of its "
            f"{present} values are; rows that are not: {shown}); fix them"
            + ("" if required else ", or give the column the 'string' dtype to make it a "
               "categorical attribute"), row=i)
    return values.astype(float)


def _shown(value: Any) -> str:
    return repr(value.item() if isinstance(value, np.generic) else value)
