"""Selectivity statistics: expected events per attribute cell and time interval (Zhou et al.
5.2, "Getting statistical information").

The numeric attribute space is cut into a uniform grid of cells and the time domain into
equal intervals; each event adds one to the cell of its attribute ranges' centres in the
interval of its feasible instants' centre. A pattern item's expected number of candidates
within a time window is then the sum over cells and intervals weighted by how much of each
the item's condition (widened by the attributes' mean range width, since an event is a
candidate when its range *meets* the condition) and the window cover. Categorical
predicates scale the sum by the share of events with an allowed value (the paper has only
numeric attributes; independence is assumed).

These are estimates that order the search (:mod:`uncertain_cep.query.plan.choosers`); answers never
depend
on them.

>>> import numpy as np
>>> grid = StatisticsGrid.for_domain((0, 99), {"x": (0.0, 10.0)}, time_intervals=10)
>>> b = StatisticsBuilder(grid, ())
>>> b.add(np.array([0, 50]), np.array([1, 51]), {"x": (np.array([1.0, 8.0]),
...       np.array([1.0, 8.0]))}, {})
>>> stats = b.finish()
>>> profile = stats.profile({"x": (0.0, 5.0)}, {})
>>> float(stats.expected(profile, 0, 99)), float(stats.expected(profile, 40, 99))
(1.0, 0.0)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np
import pandas as pd

__all__ = ["CELL_BUDGET", "TIME_INTERVALS", "EventStatistics", "StatisticsBuilder",
           "StatisticsGrid", "expected_in"]

TIME_INTERVALS = 256
CELL_BUDGET = 1024
_MAX_BINS = 32


@dataclass(frozen=True)
class StatisticsGrid:
    """Where the cells and intervals lie: ``n_intervals`` of ``width`` instants from ``t0``
    and ``bins`` equal bins per numeric attribute over ``[low, high]``."""

    t0: int
    width: int
    n_intervals: int
    attributes: tuple[str, ...]
    lows: tuple[float, ...]
    highs: tuple[float, ...]
    bins: int

    def __post_init__(self) -> None:
        if self.width < 1 or self.n_intervals < 0 or self.bins < 1:
            raise ValueError(f"invalid statistics grid {self}")
        if not (len(self.attributes) == len(self.lows) == len(self.highs)):
            raise ValueError("one low and one high bound per attribute")

    @classmethod
    def for_domain(cls, time: tuple[int, int] | None,
                   attributes: Mapping[str, tuple[float, float]],
                   time_intervals: int = TIME_INTERVALS,
                   cell_budget: int = CELL_BUDGET) -> StatisticsGrid:
        """A grid over the instants ``time`` (None: no events) and attribute extents."""
        d = len(attributes)
        bins = max(1, min(_MAX_BINS, math.floor(cell_budget ** (1 / d) + 1e-9))) if d else 1
        if time is None:
            return cls(0, 1, 0, tuple(attributes), (0.0,) * d, (0.0,) * d, bins)
        span = time[1] - time[0] + 1
        width = max(1, math.ceil(span / time_intervals))
        return cls(int(time[0]), width, (span - 1) // width + 1, tuple(attributes),
                   tuple(float(lo) for lo, _ in attributes.values()),
                   tuple(float(hi) for _, hi in attributes.values()), bins)

    @property
    def n_cells(self) -> int:
        return self.bins ** len(self.attributes)

    def interval_of(self, t: np.ndarray) -> np.ndarray:
        return np.clip((t - self.t0) // self.width, 0, max(self.n_intervals - 1, 0))

    def cell_of(self, centres: list[np.ndarray], n: int) -> np.ndarray:
        """The cell of ``n`` events given their attribute centres (one array each)."""
        cell = np.zeros(n, dtype=np.int64)
        for j, c in enumerate(centres):
            span = self.highs[j] - self.lows[j]
            b = (np.zeros(len(c), dtype=np.int64) if span <= 0 else
                 np.clip(np.floor((c - self.lows[j]) / span * self.bins), 0, self.bins - 1)
                 .astype(np.int64))
            cell += b * self.bins ** j
        return cell

    def to_json(self) -> dict[str, Any]:
        return {"t0": self.t0, "width": self.width, "intervals": self.n_intervals,
                "attributes": list(self.attributes), "lows": list(self.lows),
                "highs": list(self.highs), "bins": self.bins}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StatisticsGrid:
        return cls(int(data["t0"]), int(data["width"]), int(data["intervals"]),
                   tuple(data["attributes"]), tuple(map(float, data["lows"])),
                   tuple(map(float, data["highs"])), int(data["bins"]))


class StatisticsBuilder:
    """Accumulates events batch by batch (the on-disk build streams the events table)."""

    def __init__(self, grid: StatisticsGrid, categorical: tuple[str, ...]) -> None:
        self.grid = grid
        self.counts = np.zeros((grid.n_intervals, grid.n_cells))
        self.width_sums = np.zeros(len(grid.attributes))
        self.time_width_sum = 0.0
        self.values: dict[str, dict[str, float]] = {a: {} for a in categorical}
        self.n_events = 0

    def add(self, t_min: np.ndarray, t_max: np.ndarray,
            numeric: Mapping[str, tuple[np.ndarray, np.ndarray]],
            categorical: Mapping[str, np.ndarray]) -> None:
        """Count events given their feasible instants, numeric ranges and categories."""
        if not len(t_min):
            return
        g = self.grid
        bounds = [numeric[a] for a in g.attributes]
        interval = g.interval_of((np.asarray(t_min) + np.asarray(t_max)) // 2)
        cell = g.cell_of([(lo + hi) / 2 for lo, hi in bounds], len(t_min))
        np.add.at(self.counts, (interval, cell), 1.0)
        self.width_sums += [float(np.sum(hi - lo)) for lo, hi in bounds]
        self.time_width_sum += float(np.sum(np.asarray(t_max) - np.asarray(t_min) + 1))
        for a, seen in self.values.items():
            uniques, counts = np.unique(np.asarray(categorical[a]).astype(str),
                                        return_counts=True)
            for v, c in zip(uniques.tolist(), counts.tolist()):
                seen[v] = seen.get(v, 0.0) + c
        self.n_events += len(t_min)

    def finish(self) -> EventStatistics:
        n = max(self.n_events, 1)
        return EventStatistics(self.grid, self.counts, tuple(float(w) / n for w in self.width_sums),
                               self.time_width_sum / n, self.values, self.n_events)


@dataclass(frozen=True, eq=False)
class EventStatistics:
    """The statistics of one index; see the module docstring."""

    grid: StatisticsGrid
    counts: np.ndarray                   # (intervals, cells): events counted there
    mean_widths: tuple[float, ...]       # mean attribute range width, per attribute
    mean_instants: float                 # mean number of feasible instants per event
    categories: dict[str, dict[str, float]] = field(default_factory=dict)
    n_events: int = 0

    def profile(self, box: Mapping[str, tuple[float, float]],
                allowed: Mapping[str, frozenset[object] | set[object] | tuple[object, ...]]
                ) -> np.ndarray:
        """Cumulative expected candidates per interval (length ``intervals + 1``) of an item
        whose numeric condition is ``box`` and whose categorical ones are ``allowed``."""
        g = self.grid
        weights = np.ones(1)
        for j, a in enumerate(g.attributes):
            lo, hi = box.get(a, (-math.inf, math.inf))
            half = self.mean_widths[j] / 2
            weights = np.kron(self._bin_cover(j, lo - half, hi + half), weights)
        per_interval = self.counts @ weights if g.n_intervals else np.zeros(0)
        for a, values in allowed.items():
            seen = self.categories.get(a, {})
            total = sum(seen.values())
            share = sum(seen.get(str(v), 0.0) for v in values) / total if total else 0.0
            per_interval = per_interval * share
        return np.concatenate([[0.0], np.cumsum(per_interval)])

    def _bin_cover(self, j: int, lo: float, hi: float) -> np.ndarray:
        """Fraction of each bin of attribute ``j`` inside ``[lo, hi]``."""
        g = self.grid
        low, high = g.lows[j], g.highs[j]
        if high <= low:
            return np.full(g.bins, 1.0 if lo <= low <= hi else 0.0)
        edges = np.linspace(low, high, g.bins + 1)
        inside = np.clip(np.minimum(edges[1:], hi) - np.maximum(edges[:-1], lo), 0, None)
        widths = np.diff(edges)
        # A domain narrower than float resolution collapses bins to width 0: such a bin is
        # covered when the range reaches its edge.
        collapsed = widths <= 0
        cover = np.where(collapsed, ((lo <= edges[:-1]) & (edges[:-1] <= hi)).astype(float),
                         inside / np.where(collapsed, 1.0, widths))
        # Centres outside the domain were counted in the edge bins.
        if lo <= low:
            cover[0] = max(cover[0], 1.0 if hi >= low else 0.0)
        if hi >= high:
            cover[-1] = max(cover[-1], 1.0 if lo <= high else 0.0)
        return cover

    def expected(self, profile: np.ndarray, lo: float, hi: float) -> float:
        """Expected candidates of a :meth:`profile` among events with a feasible instant in
        ``[lo, hi]`` (the window is widened by half the mean interval on each side, since
        events were counted at their centres)."""
        return float(self.expected_many(profile, np.array([lo]), np.array([hi]))[0])

    def expected_many(self, profile: np.ndarray, lo: np.ndarray, hi: np.ndarray
                      ) -> np.ndarray:
        """:meth:`expected` for many windows at once."""
        lo = np.ascontiguousarray(lo, dtype=np.float64)
        hi = np.ascontiguousarray(hi, dtype=np.float64)
        g = self.grid
        if g.n_intervals == 0:
            return np.zeros(len(lo))
        return _expected_each(np.ascontiguousarray(profile, dtype=np.float64), lo, hi,
                              float(g.t0), float(g.width), g.n_intervals,
                              self.mean_instants / 2)

    # ------------------------------------------------------------ storage
    @classmethod
    def combined(cls, parts: Sequence[EventStatistics]) -> EventStatistics:
        """The statistics of several shards counted over one grid, added up."""
        grid = parts[0].grid
        if any(p.grid != grid for p in parts):
            raise ValueError("statistics over different grids cannot be added up")
        n = sum(p.n_events for p in parts)
        weight = [p.n_events / max(n, 1) for p in parts]
        categories: dict[str, dict[str, float]] = {a: {} for a in parts[0].categories}
        for p in parts:
            for a, seen in p.categories.items():
                for v, c in seen.items():
                    categories[a][v] = categories[a].get(v, 0.0) + c
        return cls(grid, np.sum([p.counts for p in parts], axis=0),
                   tuple(sum(w * p.mean_widths[j] for w, p in zip(weight, parts))
                         for j in range(len(grid.attributes))),
                   sum(w * p.mean_instants for w, p in zip(weight, parts)), categories, n)

    def to_frames(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Sparse cell counts ``(interval, cell, events)`` and category counts."""
        interval, cell = np.nonzero(self.counts)
        cells = pd.DataFrame({"interval": interval.astype(np.int32),
                              "cell": cell.astype(np.int32),
                              "events": self.counts[interval, cell]})
        # Sorted by value: the builders meet values in different orders (Spark streams
        # its partitions), and the stored table must not depend on that.
        cats = pd.DataFrame([(a, v, c) for a, seen in self.categories.items()
                             for v, c in sorted(seen.items())],
                            columns=["attribute", "value", "events"]).astype(
            {"attribute": str, "value": str, "events": float})
        return cells, cats

    def to_json(self) -> dict[str, Any]:
        return {"grid": self.grid.to_json(), "mean_widths": list(self.mean_widths),
                "mean_instants": self.mean_instants, "events": self.n_events,
                "categorical": list(self.categories)}

    @classmethod
    def from_frames(cls, data: Mapping[str, Any], cells: pd.DataFrame,
                    cats: pd.DataFrame) -> EventStatistics:
        grid = StatisticsGrid.from_json(data["grid"])
        counts = np.zeros((grid.n_intervals, grid.n_cells))
        counts[cells["interval"].to_numpy(), cells["cell"].to_numpy()] = cells["events"]
        categories: dict[str, dict[str, float]] = {a: {} for a in data["categorical"]}
        for a, v, c in zip(cats["attribute"], cats["value"], cats["events"]):
            categories[str(a)][str(v)] = float(c)
        return cls(grid, counts, tuple(map(float, data["mean_widths"])),
                   float(data["mean_instants"]), categories, int(data["events"]))


@numba.njit(cache=True, nogil=True)
def _expected_each(profile: np.ndarray, lo: np.ndarray, hi: np.ndarray, t0: float,
                   width: float, n_intervals: int, half: float) -> np.ndarray:
    out = np.empty(len(lo))
    for r in range(len(lo)):
        out[r] = expected_in(profile, lo[r], hi[r], t0, width, n_intervals, half)
    return out


@numba.njit(cache=True, nogil=True, inline="always")
def expected_in(profile: np.ndarray, lo: float, hi: float, t0: float, width: float,
                n_intervals: int, half: float) -> float:
    """Expected candidates of a cumulative ``profile`` (per interval boundary of a grid
    of ``n_intervals`` from ``t0``, ``width`` apart) in ``[lo, hi]`` widened by
    ``half`` on each side; compiled, for callers that weigh many windows and items at
    once (:meth:`EventStatistics.expected_many`)."""
    if lo > hi:
        return 0.0
    return max(0.0, _cumulative(profile, hi + 1 + half, t0, width, n_intervals)
               - _cumulative(profile, lo - half, t0, width, n_intervals))


@numba.njit(cache=True, nogil=True, inline="always")
def _cumulative(profile: np.ndarray, t: float, t0: float, width: float,
                n_intervals: int) -> float:
    # Linear within an interval: events were counted per interval.
    x = min(max((t - t0) / width, 0.0), float(n_intervals))
    j = min(int(x), n_intervals - 1)
    return profile[j] + (x - j) * (profile[j + 1] - profile[j])
