"""Instants with a distribution (SEMANTICS A6): an event's weight per instant of its
interval, read from ``t_mu``/``t_sigma`` (a normal cut to the interval) or a ``t_weights``
list column, and checked.

An event without weights (null in those columns) weighs its instants equally, and
nothing is stored for it: :class:`InstantWeights` holds the weighted events' weights
only, one slice per event. Instant ``k`` (covering ``[k, k + 1)`` before
discretisation, as ``floor`` maps times to instants) of a normal ``N(mu, sigma)`` weighs
``Phi((k + 1 - mu) / sigma) - Phi((k - mu) / sigma)``, with ``mu`` and ``sigma`` in
instants: divided by ``time_unit`` where the times are numbers with one, counted from
the epoch in that unit where ``t_mu`` is a datetime (``t_sigma`` then a duration).
Weights are relative: only ratios within one event matter. Every error names the event,
its row and the column.

>>> import pandas as pd
>>> from uncertain_cep.input_tables import ColumnLabels
>>> df = pd.DataFrame({"t_weights": [[1.0, 3.0], None]})
>>> w = read_instant_weights(df, np.array([1, 2]), np.array([1, 2]), np.array([2, 3]),
...                          None, ColumnLabels({}))
>>> w.weighted.tolist(), w.of(0).tolist(), w.of(1)
([True, False], [1.0, 3.0], None)
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa

from uncertain_cep.errors import InputError
from uncertain_cep.input_tables import ColumnLabels
from uncertain_cep.model.event_times import unit_step
from uncertain_cep.model.values import as_written

__all__ = ["WEIGHT_COLUMNS", "InstantWeights", "concatenated_weights", "normal_instant_weights",
           "normal_weights_of", "read_instant_weights", "slices", "stored_instant_weights",
           "typed_weights"]

WEIGHT_COLUMNS = ("t_mu", "t_sigma", "t_weights")


class InstantWeights(NamedTuple):
    """The weighted events' weights: event ``i``'s (if ``weighted[i]``) are
    ``values[start[i]:start[i + 1]]``, one per instant from its ``t_lo`` to its ``t_hi``;
    an event without weights has an empty slice (equal weights). ``mu`` and ``sigma``
    keep, in instants, the normal each event's weights came from (NaN for the others):
    what an index stores instead of the weights themselves."""

    weighted: np.ndarray    # bool, one per event
    start: np.ndarray       # int64, one per event and one more
    values: np.ndarray      # float64, the weights, event after event
    mu: np.ndarray | None = None      # float64 per event, NaN unless from a normal
    sigma: np.ndarray | None = None

    @classmethod
    def none(cls, n: int) -> InstantWeights:
        """``n`` events, none of them weighted (an archive whose weight columns are all
        null, kept as such where other archives of one build have weights)."""
        return cls(np.zeros(n, dtype=bool), np.zeros(n + 1, dtype=np.int64), np.empty(0))

    def of(self, event: int) -> np.ndarray | None:
        """Event ``event``'s weights, or None if it weighs its instants equally."""
        if not self.weighted[event]:
            return None
        return self.values[self.start[event]:self.start[event + 1]]

    def at(self, event: int, t_lo: int, instants: np.ndarray) -> np.ndarray:
        """Event ``event``'s weights at ``instants`` (of its interval, which starts at
        ``t_lo``); ones if it weighs its instants equally."""
        if not self.weighted[event]:
            return np.ones(np.shape(instants))
        return self.values[self.start[event] + (np.asarray(instants) - t_lo)]

    def take(self, rows: np.ndarray) -> InstantWeights:
        """The weights of events ``rows``, in that order."""
        rows = np.asarray(rows, dtype=np.int64)
        start, owner, offset = slices((self.start[1:] - self.start[:-1])[rows])
        return InstantWeights(self.weighted[rows], start,
                              self.values[self.start[rows][owner] + offset],
                              None if self.mu is None else self.mu[rows],
                              None if self.sigma is None else self.sigma[rows])

    def scaled(self) -> np.ndarray:
        """``values`` with each event's largest weight made 1: the same distribution
        (only ratios within an event count), and products over many events kept far
        from the smallest double."""
        largest = np.ones(len(self.weighted))
        events = np.flatnonzero(self.weighted)
        if len(events):
            largest[events] = np.maximum.reduceat(self.values, self.start[events])
        _, owner, _ = slices(self.start[1:] - self.start[:-1])
        return self.values / largest[owner]

    def stored_columns(self) -> dict[str, np.ndarray]:
        """What an index stores of them: ``t_mu``/``t_sigma`` (in instants) for weights
        drawn from a normal, a ``t_weights`` list for the rest (null where none)."""
        n = len(self.weighted)
        nan = np.full(n, np.nan)
        mu = nan if self.mu is None else self.mu
        sigma = nan if self.sigma is None else self.sigma
        listed = self.weighted & np.isnan(mu)
        lists = np.empty(n, dtype=object)      # one list per row, whatever their lengths
        for i in np.flatnonzero(listed).tolist():
            lists[i] = self.values[self.start[i]:self.start[i + 1]].tolist()
        # Every column always (nulls compress to nothing): shards of one index agree.
        return {"t_weights": lists, "t_mu": mu, "t_sigma": sigma}


def stored_instant_weights(stored: pd.DataFrame, t_lo: np.ndarray, t_hi: np.ndarray
                           ) -> InstantWeights | None:
    """The weights an index stored (:meth:`InstantWeights.stored_columns` of its events
    table, checked when it was built), normals computed again as the reader did; None
    if no event is weighted.

    >>> w = stored_instant_weights(pd.DataFrame({"t_weights": [[1.0, 3.0], None],
    ...                                          "t_mu": [None, 2.5], "t_sigma": [None, 1.0]}),
    ...                            np.array([1, 2]), np.array([2, 3]))
    >>> w.of(0).tolist(), w.of(1).round(4).tolist()
    ([1.0, 3.0], [0.3829, 0.2417])
    """
    n = len(t_lo)
    per_event: list[np.ndarray | None] = [None] * n
    mu = sigma = None
    if "t_mu" in stored.columns:
        mu = stored["t_mu"].to_numpy(dtype=np.float64, na_value=np.nan)
        sigma = stored["t_sigma"].to_numpy(dtype=np.float64, na_value=np.nan)
        normal = np.flatnonzero(~np.isnan(mu))
        start, values = normal_weights_of(t_lo[normal], t_hi[normal], mu[normal], sigma[normal])
        for k, i in enumerate(normal.tolist()):
            per_event[i] = values[start[k]:start[k + 1]]
    if "t_weights" in stored.columns:
        for i, value in enumerate(stored["t_weights"].tolist()):
            if not _missing(value):
                per_event[i] = np.asarray(value, dtype=np.float64)
    return _gathered(per_event, mu, sigma)


def typed_weights(table: pa.Table) -> pa.Table:
    """``table`` (an events table about to be written) with its ``t_weights`` column, if
    any, typed as lists of doubles even where every row is null, so that the part files
    and shards of one index agree on it."""
    if "t_weights" not in table.column_names:
        return table
    at = table.column_names.index("t_weights")
    return table.set_column(at, "t_weights", table.column(at).cast(pa.list_(pa.float64())))


def concatenated_weights(parts: list[InstantWeights | None], sizes: list[int]
                         ) -> InstantWeights | None:
    """The weights of archives put end to end (``sizes``: their events), or None if none
    of them is weighted."""
    if all(p is None for p in parts):
        return None
    whole = [InstantWeights.none(n) if p is None else p for p, n in zip(parts, sizes)]
    start, base = [np.zeros(1, dtype=np.int64)], 0
    for w in whole:
        start.append(w.start[1:] + base)
        base += int(w.start[-1])

    def column(name: str) -> np.ndarray:
        return np.concatenate([np.full(len(w.weighted), np.nan) if getattr(w, name) is None
                               else getattr(w, name) for w in whole])

    return InstantWeights(np.concatenate([w.weighted for w in whole]), np.concatenate(start),
                          np.concatenate([w.values for w in whole]), column("mu"),
                          column("sigma"))


def _gathered(per_event: list[np.ndarray | None], mu: np.ndarray | None,
              sigma: np.ndarray | None) -> InstantWeights | None:
    weighted = np.array([w is not None for w in per_event], dtype=bool)
    if not weighted.any():
        return None
    start = np.zeros(len(per_event) + 1, dtype=np.int64)
    np.cumsum([0 if w is None else len(w) for w in per_event], out=start[1:])
    values = np.concatenate([w for w in per_event if w is not None])
    return InstantWeights(weighted, start, values.astype(np.float64, copy=False), mu, sigma)


def normal_weights_of(lo: np.ndarray, hi: np.ndarray, mu: np.ndarray, sigma: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`normal_instant_weights` of many events at once: their weights, event after
    event, and where each event's begin (and the last one's end)."""
    start, owner, offset = slices(np.asarray(hi, dtype=np.int64)
                                  - np.asarray(lo, dtype=np.int64) + 1)
    k = (np.asarray(lo, dtype=np.int64)[owner] + offset).astype(np.float64)
    return start, _normal_masses(k, np.asarray(mu)[owner], np.asarray(sigma)[owner])


def slices(sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For slices of ``sizes`` laid end to end in one flat array: where each begins (and
    the last ends), and per element its slice and its place in it.

    >>> [a.tolist() for a in slices(np.array([2, 0, 3]))]
    [[0, 2, 2, 5], [0, 0, 2, 2, 2], [0, 1, 0, 1, 2]]
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    start = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=start[1:])
    owner = np.repeat(np.arange(len(sizes)), sizes)
    return start, owner, np.arange(int(start[-1]), dtype=np.int64) - start[owner]


def normal_instant_weights(lo: int, hi: int, mu: float, sigma: float) -> np.ndarray:
    """The weights of instants ``lo..hi`` under ``N(mu, sigma)`` (in instants): the mass
    of ``[k, k + 1)`` each, computed on the tail nearer each instant (a difference of
    two values near 1 would lose the far side's weights).

    >>> normal_instant_weights(0, 2, 1.5, 1.0).round(4).tolist()
    [0.2417, 0.3829, 0.2417]
    """
    k = np.arange(lo, hi + 1, dtype=np.float64)
    return _normal_masses(k, mu, sigma)


def _normal_masses(k: np.ndarray, mu: np.ndarray | float, sigma: np.ndarray | float
                   ) -> np.ndarray:
    # (Imported here: scipy.special costs every process that reads an archive 0.13 s.)
    from scipy.special import ndtr

    a, b = (k - mu) / sigma, (k + 1 - mu) / sigma
    upper = a > 0
    return np.where(upper, ndtr(-a) - ndtr(-b), ndtr(b) - ndtr(a))


def read_instant_weights(df: pd.DataFrame, ids: np.ndarray, t_lo: np.ndarray,
                         t_hi: np.ndarray, unit: float | str | pd.Timedelta | None,
                         labels: ColumnLabels) -> InstantWeights | None:
    """The archive's instant weights (None where it has none of the columns), checked:
    a negative, NaN or infinite weight, a list of the wrong length, ``t_sigma <= 0``,
    one of ``t_mu``/``t_sigma`` without the other, both kinds for one event, or weights
    all zero are errors naming the event, its row and the column."""
    present = [c for c in WEIGHT_COLUMNS if c in df.columns]
    if not present:
        return None
    if ("t_mu" in present) != ("t_sigma" in present):
        have, lack = ("t_mu", "t_sigma") if "t_mu" in present else ("t_sigma", "t_mu")
        raise InputError(f"the archive has column {labels.quoted(have)} without "
                         f"{labels.quoted(lack)}: a normal distribution of instants needs "
                         "both (SEMANTICS A6)")
    n = len(ids)
    per_event: list[np.ndarray | None] = [None] * n
    mu = sigma = None
    if "t_mu" in present:
        mu, sigma = _normal_parameters(df, ids, unit, labels)
        normal = np.flatnonzero(~np.isnan(mu))
        start, values = normal_weights_of(t_lo[normal], t_hi[normal], mu[normal],
                                          sigma[normal])
        # Normals give finite weights >= 0: only "none above zero" is left to find.
        empty = np.zeros(len(normal), dtype=bool)
        if len(normal):
            empty = np.maximum.reduceat(values, start[:-1]) <= 0
        if empty.any():
            k = int(np.flatnonzero(empty)[0])
            i = int(normal[k])
            _checked(values[start[k]:start[k + 1]], i, ids, int(t_lo[i]),
                     labels.quoted("t_mu") + "/" + labels.quoted("t_sigma"))
        for k, i in enumerate(normal.tolist()):
            per_event[i] = values[start[k]:start[k + 1]]
    if "t_weights" in present:
        for i, value in enumerate(df["t_weights"].tolist()):
            if _missing(value):
                continue
            column = labels.quoted("t_weights")
            if per_event[i] is not None:
                raise InputError(f"event {as_written(ids[i])} (row {i}): both {column} and "
                                 f"{labels.quoted('t_mu')}/{labels.quoted('t_sigma')} give "
                                 "its instants' weights; give one", row=i)
            per_event[i] = _listed(value, i, ids, int(t_lo[i]), int(t_hi[i] - t_lo[i] + 1),
                                   column)
    gathered = _gathered(per_event, mu, sigma)
    if gathered is None:
        return InstantWeights(np.zeros(n, dtype=bool), np.zeros(n + 1, dtype=np.int64),
                              np.empty(0))
    return gathered


def _normal_parameters(df: pd.DataFrame, ids: np.ndarray,
                       unit: float | str | pd.Timedelta | None,
                       labels: ColumnLabels) -> tuple[np.ndarray, np.ndarray]:
    """``t_mu`` and ``t_sigma`` in instants (NaN where the event has none)."""
    mu_col, sigma_col = df["t_mu"], df["t_sigma"]
    if pd.api.types.is_datetime64_any_dtype(mu_col):
        if unit is None:
            raise InputError(f"column {labels.quoted('t_mu')} holds datetimes; pass "
                             "time_unit= as a duration (e.g. '1s'), the same the time "
                             "columns are read with")
        step = float(unit_step(unit, labels.quoted("t_mu")).value)
        since = mu_col.dt.tz_convert(None) if mu_col.dt.tz is not None else mu_col
        ns = (since - pd.Timestamp(0)).to_numpy(dtype="timedelta64[ns]")
        mu = np.where(pd.isna(since).to_numpy(), np.nan,
                      ns.astype(np.int64).astype(np.float64) / step)
        if not pd.api.types.is_timedelta64_dtype(sigma_col):
            raise InputError(f"column {labels.quoted('t_mu')} holds datetimes, so column "
                             f"{labels.quoted('t_sigma')} must hold durations (e.g. "
                             f"pd.to_timedelta(..., unit='s')); it has type {sigma_col.dtype}")
        sigma = np.where(pd.isna(sigma_col).to_numpy(), np.nan,
                         sigma_col.to_numpy(dtype="timedelta64[ns]").astype(np.int64)
                         .astype(np.float64) / step)
    else:
        scale = _scale(unit, labels)
        mu = _numbers(mu_col, "t_mu", labels) / scale
        sigma = _numbers(sigma_col, "t_sigma", labels) / scale
    for name, own, other in (("t_mu", mu, sigma), ("t_sigma", sigma, mu)):
        alone = np.isnan(own) & ~np.isnan(other)
        if alone.any():
            i = int(np.flatnonzero(alone)[0])
            raise InputError(f"event {as_written(ids[i])} (row {i}): column "
                             f"{labels.quoted(name)} is missing while its pair is given; give "
                             "both or neither (neither: equal weights)", row=i)
    for name, values in (("t_mu", mu), ("t_sigma", sigma)):
        bad = np.isinf(values)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"event {as_written(ids[i])} (row {i}): column "
                             f"{labels.quoted(name)} is infinite", row=i)
    bad = sigma <= 0
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"event {as_written(ids[i])} (row {i}): column "
                         f"{labels.quoted('t_sigma')} = {as_written(df['t_sigma'].iloc[i])} "
                         "is not positive; a normal distribution needs t_sigma > 0", row=i)
    return mu, sigma


def _numbers(col: pd.Series, name: str, labels: ColumnLabels) -> np.ndarray:
    if pd.api.types.is_bool_dtype(col) or not (pd.api.types.is_numeric_dtype(col)
                                               or col.isna().all()):
        raise InputError(f"column {labels.quoted(name)} has type {col.dtype}; it must hold "
                         "numbers in the unit of t_lo/t_hi (or, for t_mu, datetimes with "
                         "t_sigma durations)")
    return col.to_numpy(dtype=np.float64, na_value=np.nan)


def _scale(unit: float | str | pd.Timedelta | None, labels: ColumnLabels) -> float:
    if unit is None:
        return 1.0
    if isinstance(unit, (str, pd.Timedelta)):
        raise InputError(f"time_unit={unit!r} is a duration but column "
                         f"{labels.quoted('t_mu')} is numeric; give t_mu as datetimes and "
                         "t_sigma as durations, or a numeric time_unit")
    return float(unit)


def _missing(value: object) -> bool:
    if value is None:
        return True
    return isinstance(value, float) and math.isnan(value)


def _listed(value: object, i: int, ids: np.ndarray, first: int, size: int, column: str
            ) -> np.ndarray:
    try:
        weights = np.asarray(value, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as e:
        raise InputError(f"event {as_written(ids[i])} (row {i}): column {column} = "
                         f"{as_written(value)} is not a list of numbers", row=i) from e
    if len(weights) != size:
        raise InputError(f"event {as_written(ids[i])} (row {i}): column {column} lists "
                         f"{len(weights)} weights, but its interval has {size} instants "
                         "(t_hi - t_lo + 1, one weight each)", row=i)
    return _checked(weights, i, ids, first, column)


def _checked(weights: np.ndarray, i: int, ids: np.ndarray, first: int, column: str
             ) -> np.ndarray:
    bad = ~np.isfinite(weights) | (weights < 0)
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise InputError(f"event {as_written(ids[i])} (row {i}): column {column} gives its "
                         f"instant {first + j} (weight {j + 1} of {len(weights)}) the weight "
                         f"{weights[j]}; weights are finite numbers >= 0", row=i)
    if not (weights > 0).any():
        raise InputError(f"event {as_written(ids[i])} (row {i}): column {column} gives every "
                         "instant of its interval weight zero (a normal distribution this "
                         "far from the interval leaves it none); the event must be able to "
                         "happen", row=i)
    return weights
