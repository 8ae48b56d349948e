"""Pr(S | e): the probability that an event's random attribute values satisfy a symbol.

Per SEMANTICS A3: the product over the symbol's numeric attributes of the pdf mass of the
allowed set, times 1 or 0 for its categorical predicates. Several predicates on one
attribute are intersected first (``x >= 1 AND x <= 3`` is ``P(1 <= x <= 3)``), since they
constrain the same random value.

>>> import pandas as pd
>>> from uncertain_cep.model.events import read_archive
>>> from uncertain_cep.query.language.patterns import Between, InSet, Symbol
>>> archive = read_archive(pd.DataFrame({"event_id": [1, 2], "group": [0, 0],
...     "t_lo": [0, 1], "t_hi": [0, 1], "x_lo": [0.0, 2.0], "x_hi": [4.0, 2.0],
...     "tag": ["a", "b"]}))
>>> s = Symbol("A", (Between("x", 1, 2), InSet("tag", ("a",))))
>>> symbol_probability(archive, s).tolist()
[0.25, 0.0]
>>> symbol_box(archive, s)
{'x': (1.0, 2.0)}
"""

from __future__ import annotations

import numpy as np

from uncertain_cep.errors import QueryError
from uncertain_cep.model.events import Archive
from uncertain_cep.model.probability import interval_mass
from uncertain_cep.query.language.patterns import SequencePattern, Symbol

__all__ = ["check_symbols", "symbol_box", "symbol_probability"]


def check_symbols(archive: Archive, pattern: SequencePattern) -> None:
    """Raise :class:`QueryError` if a symbol names an attribute the archive lacks, or uses
    a numeric comparison on a string attribute (or the reverse)."""
    for item in pattern.items:
        sym = pattern.symbol(item.symbol)
        uses = (("a number", sym.numeric_bounds(), archive.numeric, archive.categorical,
                 "a string", "numeric"),
                ("a string", sym.categorical_sets(), archive.categorical, archive.numeric,
                 "a numeric", "string"))
        for compared, attrs, fitting, other, other_kind, label in uses:
            for attr in attrs:
                if attr not in fitting:
                    kind = other_kind if attr in other else "no such"
                    raise QueryError(f"symbol {sym.name} compares {attr!r} with {compared}, "
                                     f"but the archive has {kind} attribute {attr!r}; "
                                     f"{label} attributes: {list(fitting)}")


def symbol_probability(archive: Archive, symbol: Symbol,
                       rows: np.ndarray | None = None) -> np.ndarray:
    """Pr(symbol | e) for the given archive rows (all rows by default)."""
    idx = np.arange(archive.n_events) if rows is None else np.asarray(rows, dtype=np.int64)
    p = np.ones(len(idx))
    for attr, (lo, hi, lo_open, hi_open) in symbol.numeric_bounds().items():
        if lo > hi or (lo == hi and (lo_open or hi_open)):
            return np.zeros(len(idx))
        p *= interval_mass(archive.numeric[attr], idx, lo, hi, lo_open, hi_open)
    for attr, allowed in symbol.categorical_sets().items():
        values = archive.categorical[attr][idx]
        p *= np.fromiter((v in allowed for v in values), dtype=bool, count=len(idx))
    return p


def symbol_box(archive: Archive, symbol: Symbol) -> dict[str, tuple[float, float]]:
    """The closed box of numeric attribute values a matching event's range must meet."""
    return {attr: (float(lo), float(hi))
            for attr, (lo, hi, _, _) in symbol.numeric_bounds().items()}
