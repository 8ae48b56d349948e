"""An archive's attributes: numeric ranges with a pdf over them, and categorical strings.

Every column of an archive but ``event_id``, the time columns and the dependency-group
column is an attribute (SEMANTICS A1): ``<a>_lo``/``<a>_hi`` a numeric range (uniform,
or a truncated normal when ``<a>_mu``/``<a>_sigma`` are given), a single numeric column
a certain value, and a string column a certain categorical value (plain text columns of
mostly numbers are numeric: :mod:`uncertain_cep.model.number_columns`). Bad values raise
:class:`~uncertain_cep.errors.InputError` naming the event, the row and the column.

>>> import pandas as pd
>>> df = pd.DataFrame({"x_lo": [0.0, 1.0], "x_hi": [1.0, 1.0], "tag": ["a", "b"]})
>>> numeric, categorical = read_attributes(df, np.array([1, 2]), "group")
>>> numeric["x"].hi.tolist(), categorical["tag"].tolist()
([1.0, 1.0], ['a', 'b'])
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import numpy as np
import pandas as pd

from uncertain_cep.errors import InputError
from uncertain_cep.model.number_columns import as_numbers, is_plain_text, mostly_numbers
from uncertain_cep.model.values import as_written

__all__ = ["RESERVED_COLUMNS", "NumericAttribute", "read_attributes", "text_values"]

# The archive's columns that are no attributes (besides the dependency-group column).
# The event id, its time bounds and its instants' weights (model/instant_weights.py).
RESERVED_COLUMNS = {"event_id", "t_lo", "t_hi", "t", "t_mu", "t_sigma", "t_weights"}


@dataclass(frozen=True, eq=False)
class NumericAttribute:
    """One numeric attribute of every event: a range with a pdf over it.

    ``mu``/``sigma`` are NaN where the row's pdf is uniform (or ``None`` for all rows).
    """

    name: str
    lo: np.ndarray
    hi: np.ndarray
    mu: np.ndarray | None = None
    sigma: np.ndarray | None = None

    @property
    def is_certain(self) -> bool:
        return bool(np.all(self.lo == self.hi))


def read_attributes(df: pd.DataFrame, ids: np.ndarray, group_by: str,
                    numeric_text: Collection[str] | None = None
                    ) -> tuple[dict[str, NumericAttribute], dict[str, np.ndarray]]:
    """The numeric and the categorical attributes of an archive's rows (``ids``: their
    event ids, for messages); ``numeric_text`` as for
    :func:`~uncertain_cep.model.events.read_archive`."""
    columns = [c for c in df.columns if c not in RESERVED_COLUMNS and c != group_by]
    for c in columns:
        if not isinstance(c, str):
            raise InputError(f"column name {c!r} is not a string")
        if c.startswith("_uc_"):
            raise InputError(f"column {c!r} uses the prefix '_uc_', which the index reserves "
                             "for its own columns; rename it")
    taken: set[str] = set()
    numeric: dict[str, NumericAttribute] = {}
    categorical: dict[str, np.ndarray] = {}
    for c in columns:
        if c.endswith("_lo"):
            base = c[:-3]
            if f"{base}_hi" not in df.columns:
                raise InputError(f"column {c!r} has no matching {base}_hi column; give both "
                                 "bounds of the attribute range")
            numeric[base] = _numeric_range(df, ids, base)
            taken.update(f"{base}{s}" for s in ("_lo", "_hi", "_mu", "_sigma"))
    for c in columns:
        if c in taken:
            continue
        if c in numeric:
            raise InputError(f"attribute {c!r} is given twice: as column {c!r} and as the "
                             f"range {c}_lo/{c}_hi; keep one of them (a point value x is the "
                             "range x_lo = x_hi = x)")
        for suffix in ("_hi", "_mu", "_sigma"):
            if c.endswith(suffix) and f"{c[:-len(suffix)]}_lo" not in df.columns:
                raise InputError(f"column {c!r} has no matching {c[:-len(suffix)]}_lo column")
        col = df[c]
        if pd.api.types.is_bool_dtype(col) or not (pd.api.types.is_numeric_dtype(col)
                                                   or _is_text(col)):
            raise InputError(f"column {c!r} has type {col.dtype}; attributes must be numeric "
                             "or strings")
        if pd.api.types.is_numeric_dtype(col) or (
                mostly_numbers(col) if numeric_text is None else c in numeric_text):
            values = _finite(col, c, ids)
            numeric[c] = NumericAttribute(c, values, values.copy())
        else:
            missing = col.isna().to_numpy()
            if missing.any():
                i = int(np.flatnonzero(missing)[0])
                raise InputError(f"event {as_written(ids[i])} (row {i}): column {c!r} is "
                                 "missing", row=i)
            categorical[c] = text_values(col)
    clash = set(numeric) & set(categorical)
    if clash:
        raise InputError(f"attribute {sorted(clash)[0]!r} is given both as a range and as a "
                         "single column")
    return numeric, categorical


def text_values(col: pd.Series) -> np.ndarray:
    """A text column (event ids, a categorical attribute) as an object array of str.

    >>> text_values(pd.Series(["a", "b"])).tolist()
    ['a', 'b']
    """
    return col.astype(str).to_numpy(dtype=object)


def _is_text(col: pd.Series) -> bool:
    return bool(pd.api.types.is_string_dtype(col) or pd.api.types.is_object_dtype(col)
                or isinstance(col.dtype, pd.CategoricalDtype))


def _finite(col: pd.Series, name: str, ids: np.ndarray) -> np.ndarray:
    if is_plain_text(col):
        # Numbers read as text (one bad value in a CSV column): each other value is a bad row.
        col = as_numbers(col, name, ids, required=name.endswith(("_lo", "_hi")))
    if not pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
        raise InputError(f"column {name!r} has type {col.dtype}; it must be numeric")
    values = col.to_numpy(dtype=float)
    bad = ~np.isfinite(values)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"event {as_written(ids[i])} (row {i}): column {name!r} is missing, "
                         "NaN or infinite", row=i)
    return values


def _numeric_range(df: pd.DataFrame, ids: np.ndarray, base: str) -> NumericAttribute:
    lo = _finite(df[f"{base}_lo"], f"{base}_lo", ids)
    hi = _finite(df[f"{base}_hi"], f"{base}_hi", ids)
    bad = lo > hi
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"event {as_written(ids[i])} (row {i}): {base}_lo = {lo[i]} is "
                         f"greater than {base}_hi = {hi[i]}; a range needs lo <= hi", row=i)
    has_mu, has_sigma = f"{base}_mu" in df.columns, f"{base}_sigma" in df.columns
    if has_mu != has_sigma:
        present, absent = ((f"{base}_mu", f"{base}_sigma") if has_mu
                           else (f"{base}_sigma", f"{base}_mu"))
        raise InputError(f"column {present!r} needs a {absent!r} column too (truncated normal)")
    if not has_mu:
        return NumericAttribute(base, lo, hi)
    mu = df[f"{base}_mu"].to_numpy(dtype=float)
    sigma = df[f"{base}_sigma"].to_numpy(dtype=float)
    for name, values, other in ((f"{base}_mu", mu, sigma), (f"{base}_sigma", sigma, mu)):
        half = np.isnan(values) & ~np.isnan(other)
        if half.any():
            i = int(np.flatnonzero(half)[0])
            raise InputError(f"event {as_written(ids[i])} (row {i}): column {name!r} is NaN "
                             "while its pair is set; give both (normal) or neither (uniform)",
                             row=i)
        inf = np.isinf(values)
        if inf.any():
            i = int(np.flatnonzero(inf)[0])
            raise InputError(f"event {as_written(ids[i])} (row {i}): column {name!r} is "
                             "infinite", row=i)
    bad_sigma = ~np.isnan(sigma) & (sigma <= 0)
    if bad_sigma.any():
        i = int(np.flatnonzero(bad_sigma)[0])
        raise InputError(f"event {as_written(ids[i])} (row {i}): {base}_sigma = {sigma[i]} "
                         "must be > 0", row=i)
    return NumericAttribute(base, lo, hi, mu, sigma)
