"""Point events in the layout of PieStream's benchmark input (Chen et al.'s reference code).

PieStream's processing-time benchmark reads CSV lines ``id, a_1, ..., a_k, t1, t2``: one
point event per instant ``t1`` (``t2 = t1 + 1``), ``a_i`` in {0, 1} saying whether
situation stream ``i`` holds then. The committed sample
(``../shared/datasets/piestream/events_col4_row100000.csv``) has, per column,
independent alternating runs: runs of 1 last 10 to 100 instants and runs of 0 last 10 to
50, both uniform, and every line has ``id`` 1. :func:`generate_piestream` makes inputs of
that shape at any size and width, and :func:`read_piestream` reads either.

>>> df = generate_piestream(1000, columns=3, seed=2)
>>> list(df.columns), len(df)
(['id', 'a_1', 'a_2', 'a_3', 't1', 't2'], 1000)
>>> bool((df.t2 == df.t1 + 1).all() and df.t1.iloc[0] == 1)
True
>>> runs = df.a_1.ne(df.a_1.shift()).cumsum()
>>> lengths = df.groupby(runs).a_1.agg(["first", "size"]).iloc[1:-1]
>>> bool(lengths[lengths["first"] == 1]["size"].between(10, 100).all())
True
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from uncertain_cep.errors import InputError

__all__ = ["generate_piestream", "piestream_query", "read_piestream"]

# Run lengths of the committed sample, inclusive.
_ON = (10, 100)
_OFF = (10, 50)
#: The relations PieStream's benchmark puts between consecutive symbols.
PIESTREAM_RELATIONS = ("meets", "overlaps", "overlapped-by", "starts", "started-by", "contains")


def generate_piestream(rows: int, columns: int = 4, *, seed: int = 0) -> pd.DataFrame:
    """``rows`` point events with ``columns`` boolean situation streams, as PieStream's.

    Each column alternates runs of 1 (10 to 100 instants) and 0 (10 to 50), starting
    with 0 (as the sample does) at a random phase. Times start at 1.
    """
    if rows < 0 or columns < 1:
        raise ValueError(f"rows must be >= 0 and columns >= 1, got {rows} and {columns}")
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {"id": np.ones(rows, dtype=np.int64)}
    # Enough runs to cover ``rows`` instants even if every run were the shortest.
    pairs = rows // (_ON[0] + _OFF[0]) + 2
    for i in range(1, columns + 1):
        lengths = np.empty(2 * pairs, dtype=np.int64)
        lengths[0::2] = rng.integers(_OFF[0], _OFF[1] + 1, size=pairs)
        lengths[1::2] = rng.integers(_ON[0], _ON[1] + 1, size=pairs)
        lengths[0] = rng.integers(1, lengths[0] + 1)  # a random phase
        # The value flips at each run's end: a running count of flips, odd means 1.
        flips = np.zeros(rows + 1, dtype=np.int8)
        ends = np.cumsum(lengths)
        flips[ends[ends < rows]] = 1
        out[f"a_{i}"] = (np.cumsum(flips[:rows]) & 1).astype(np.int64)
    out["t1"] = np.arange(1, rows + 1, dtype=np.int64)
    out["t2"] = out["t1"] + 1
    return pd.DataFrame(out)


def read_piestream(path: str | Path) -> pd.DataFrame:
    """Read a PieStream CSV (no header: ``id, a_1 .. a_k, t1, t2``) into a DataFrame."""
    try:
        frame = pd.read_csv(path, header=None, dtype=np.int64, engine="pyarrow")
    except (OSError, ValueError) as error:
        raise InputError(f"{path}: cannot read it as a PieStream CSV "
                         f"(integer columns id, a_1 .. a_k, t1, t2): {error}") from error
    if frame.shape[1] < 4:
        raise InputError(f"{path}: {frame.shape[1]} columns; a PieStream CSV has id, at "
                         "least one a_i, t1 and t2")
    k = frame.shape[1] - 3
    frame.columns = ["id", *(f"a_{i}" for i in range(1, k + 1)), "t1", "t2"]
    return frame


def piestream_query(symbols: int, window: int = 10000) -> str:
    """PieStream's benchmark query over ``symbols`` streams: ``Ai AS a_i = 1``, each
    consecutive pair related by any of :data:`PIESTREAM_RELATIONS`, within ``window``.

    >>> print(piestream_query(2, 50))
    DEFINE A1 AS a_1 = 1, A2 AS a_2 = 1
    PATTERN A1 meets; overlaps; overlapped-by; starts; started-by; contains A2
    WITHIN 50
    """
    if symbols < 2:
        raise ValueError(f"a pattern needs at least 2 symbols, got {symbols}")
    relations = "; ".join(PIESTREAM_RELATIONS)
    define = ", ".join(f"A{i} AS a_{i} = 1" for i in range(1, symbols + 1))
    pattern = " AND ".join(f"A{i} {relations} A{i + 1}" for i in range(1, symbols))
    return f"DEFINE {define}\nPATTERN {pattern}\nWITHIN {window}"
