"""Situation tables as the matchers read them: checked, sorted, with typed empty answers.

Both matchers (:mod:`~uncertain_cep.interval.brute_force`, the reference, and
:mod:`~uncertain_cep.interval.join`, TPStream 5.2) take one table per symbol and must
answer in exactly the same format, so the input check and the answer's empty form live
here once.

>>> import pandas as pd
>>> from query.temporal_language import parse_temporal_query
>>> q = parse_temporal_query("DEFINE A AS x > 0, B AS x < 0 PATTERN A before B")
>>> checked_situation_table({"A": pd.DataFrame({"ts": [5, 0], "te": [7, 2]})}, "A", q)
   ts  te
0   0   2
1   5   7
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from query.temporal_patterns import TemporalPattern
from uncertain_cep.errors import InputError

__all__ = ["checked_situation_table"]


def checked_situation_table(situations: Mapping[str, pd.DataFrame], name: str,
                            pattern: TemporalPattern) -> pd.DataFrame:
    """``situations[name]`` sorted by (PARTITION BY columns, ts), index reset.

    Raises
    ------
    InputError
        No table for ``name``, a needed column missing (partition columns, ``ts``, ``te``,
        RETURN's aggregates of ``name``), ``ts < te`` failing, or two situations of one
        symbol and partition that overlap (SEMANTICS B1: they never do).
    """
    if name not in situations:
        raise InputError(f"no situations given for symbol {name}; given: "
                         f"{', '.join(map(str, situations))}")
    table = situations[name]
    if not isinstance(table, pd.DataFrame):
        raise InputError(f"the situations of {name} must be a pandas DataFrame, "
                         f"got {type(table).__name__}")
    needed = [*pattern.partition_by, "ts", "te",
              *(r.source_column for r in pattern.returns if r.symbol == name)]
    missing = [c for c in dict.fromkeys(needed) if c not in table.columns]
    if missing:
        raise InputError(f"the situations of {name} lack column(s) "
                         f"{', '.join(map(repr, missing))}")
    table = table.reset_index(drop=True)
    ordered = table.sort_values([*pattern.partition_by, "ts"], kind="stable")
    ts, te = ordered["ts"].to_numpy(), ordered["te"].to_numpy()
    bad = np.flatnonzero(~(ts < te))
    if len(bad):
        row = int(ordered.index[bad[0]])
        raise InputError(f"situation {name} row {row}: ts is not before te", row=row)
    same = np.ones(max(len(ordered) - 1, 0), dtype=bool)
    for key in pattern.partition_by:
        values = ordered[key].to_numpy()
        same &= values[1:] == values[:-1]
    clash = np.flatnonzero(same & (ts[1:] < te[:-1]))
    if len(clash):
        a, b = ordered.index[clash[0]], ordered.index[clash[0] + 1]
        raise InputError(f"situations {name} rows {a} and {b} overlap in one partition; "
                         "situations of one symbol never do", row=int(b))
    return ordered.reset_index(drop=True)
