"""The records a manifest holds: attributes, build settings, counts, time domain, R*-tree,
statistics, and what a Spark build recorded.

Each record is a frozen dataclass that reads itself from its JSON object
(``from_fields``, through
:class:`~uncertain_cep.index.store.manifest_fields.ManifestFields`, which names any
missing, mistyped or unknown field) and writes itself back (``to_json``), so that a round
trip gives back exactly what was read. :class:`~uncertain_cep.index.store.manifest.Manifest`
holds them.

>>> counts = IndexCounts.from_fields(ManifestFields(
...     {"events": 2, "groups": 1, "trees": 1, "nodes": 5}, "counts"))
>>> counts.events, counts.to_json() == {"events": 2, "groups": 1, "trees": 1, "nodes": 5}
(2, True)
>>> IndexCounts.from_fields(ManifestFields(
...     {"events": -1, "groups": 1, "trees": 1, "nodes": 5}, "counts"))
Traceback (most recent call last):
...
uncertain_cep.errors.IndexFormatError: manifest field 'counts.events' must be an integer >= 0, ...
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from uncertain_cep.errors import IndexFormatError
from uncertain_cep.index.forests.codes import CodeSchemeName
from uncertain_cep.index.group_build import BuildSettings
from uncertain_cep.index.statistics import EventStatistics, StatisticsGrid
from uncertain_cep.index.store.manifest_fields import ManifestFields
from uncertain_cep.model.feasibility import MaxSpeed, PairPredicate
from uncertain_cep.model.time_axis import TimeAxis

__all__ = ["AttributeNames", "BuildRecord", "IndexCounts", "RTreeInfo", "RejectedCounts",
           "ShardRecord", "StoredCondition2", "StoredSettings", "StoredStatistics", "TimeDomain",
           "time_axis_from_fields", "time_axis_to_json"]

_CONDITION2_KINDS = ("max_speed", "user_predicate")


@dataclass(frozen=True)
class AttributeNames:
    """The archive's numeric and categorical attributes, in archive order."""

    numeric: tuple[str, ...]
    categorical: tuple[str, ...]

    @classmethod
    def from_fields(cls, o: ManifestFields) -> AttributeNames:
        out = cls(o.texts("numeric"), o.texts("categorical"))
        o.done()
        return out

    def to_json(self) -> dict[str, Any]:
        return {"numeric": list(self.numeric), "categorical": list(self.categorical)}


@dataclass(frozen=True)
class StoredCondition2:
    """Condition 2 as recorded: a maximum speed (with its value and coordinates), or a
    user's predicate (a function, not stored: only that there was one)."""

    kind: str                                # "max_speed" or "user_predicate"
    v_max: float = 0.0
    coordinates: tuple[str, ...] = ()

    @classmethod
    def from_fields(cls, o: ManifestFields) -> StoredCondition2:
        kind = o.text("kind")
        if kind not in _CONDITION2_KINDS:
            raise o.fail("kind", " or ".join(map(repr, _CONDITION2_KINDS)), kind)
        if kind == "user_predicate":
            o.done()
            return cls(kind)
        v_max = o.number("v_max")
        if v_max < 0:
            raise o.fail("v_max", "a number >= 0", v_max)
        out = cls(kind, v_max, o.texts("coordinates"))
        o.done()
        return out

    def to_json(self) -> dict[str, Any]:
        if self.kind == "user_predicate":
            return {"kind": self.kind}
        return {"kind": self.kind, "v_max": self.v_max, "coordinates": list(self.coordinates)}


@dataclass(frozen=True)
class StoredSettings:
    """The build settings an index was made with (:class:`BuildSettings`, less a user's
    pair predicate, which is code)."""

    condition2: StoredCondition2 | None
    multi_tree: bool
    codes: str
    node_budget: int | None

    @classmethod
    def of(cls, settings: BuildSettings) -> StoredSettings:
        c2 = settings.condition2
        if isinstance(c2, MaxSpeed):
            cond: StoredCondition2 | None = StoredCondition2(
                "max_speed", float(c2.v_max), tuple(c2.coordinates))
        elif c2 is not None:
            cond = StoredCondition2("user_predicate")
        else:
            cond = None
        return cls(cond, bool(settings.multi_tree), settings.codes,
                   None if settings.node_budget is None else int(settings.node_budget))

    def build_settings(self, pair_predicate: PairPredicate | None = None) -> BuildSettings:
        """The :class:`BuildSettings` to open the index with; a user's predicate is not
        stored (the trees were built with it, and only the possible-worlds baseline needs
        it again), so it is ``pair_predicate`` here."""
        c2 = self.condition2
        condition2: MaxSpeed | PairPredicate | None = None
        if c2 is not None and c2.kind == "max_speed":
            condition2 = MaxSpeed(c2.v_max, c2.coordinates)
        elif c2 is not None:
            condition2 = pair_predicate
        return BuildSettings(condition2=condition2, multi_tree=self.multi_tree,
                             codes=self.codes, node_budget=self.node_budget)

    @classmethod
    def from_fields(cls, o: ManifestFields) -> StoredSettings:
        cond = None if o.raw("condition2") is None else o.child("condition2")
        codes = o.text("codes")
        if codes not in {m.value for m in CodeSchemeName}:
            raise o.fail("codes", "'compact' or 'paper'", codes)
        budget = o.integer_or_none("node_budget")
        if budget is not None and budget < 1:
            raise o.fail("node_budget", "a positive integer or null", budget)
        out = cls(None if cond is None else StoredCondition2.from_fields(cond),
                  o.flag("multi_tree"), codes, budget)
        o.done()
        return out

    def to_json(self) -> dict[str, Any]:
        return {"condition2": None if self.condition2 is None else self.condition2.to_json(),
                "multi_tree": self.multi_tree, "codes": self.codes,
                "node_budget": self.node_budget}


@dataclass(frozen=True)
class IndexCounts:
    """Events, dependency groups, OI-trees and nodes of the index."""

    events: int
    groups: int
    trees: int
    nodes: int

    @classmethod
    def from_fields(cls, o: ManifestFields) -> IndexCounts:
        out = cls(*(_count(o, k) for k in ("events", "groups", "trees", "nodes")))
        o.done()
        return out

    def to_json(self) -> dict[str, Any]:
        return {"events": self.events, "groups": self.groups, "trees": self.trees,
                "nodes": self.nodes}


@dataclass(frozen=True)
class ShardRecord:
    """One shard of a sharded index: its directory (``shards/00000``, a complete index of
    the group pieces it holds, with its own manifest), the cluster starts it holds
    (``[start, end)``, ``None`` where unbounded), the instants its events reach (``None``
    without events) and its counts."""

    path: str
    start: int | None
    end: int | None
    t_min: int | None
    t_max: int | None
    counts: IndexCounts

    @classmethod
    def from_fields(cls, o: ManifestFields) -> ShardRecord:
        path = o.text("path")
        if not re.fullmatch(r"shards/[0-9]{5}", path):
            raise o.fail("path", "a shard directory 'shards/NNNNN'", path)
        out = cls(path, o.integer_or_none("start"), o.integer_or_none("end"),
                  o.integer_or_none("t_min"), o.integer_or_none("t_max"),
                  IndexCounts.from_fields(o.child("counts")))
        o.done()
        return out

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "start": self.start, "end": self.end,
                "t_min": self.t_min, "t_max": self.t_max, "counts": self.counts.to_json()}


@dataclass(frozen=True)
class TimeDomain:
    """The feasible instants of the index (``None`` without events), the width of the
    time statistics' buckets, and the widest event (latest minus earliest instant)."""

    t_min: int | None
    t_max: int | None
    bucket_width: int
    max_interval: int

    @classmethod
    def from_fields(cls, o: ManifestFields) -> TimeDomain:
        out = cls(o.integer_or_none("t_min"), o.integer_or_none("t_max"), o.integer("bucket_width"),
                  _count(o, "max_interval"))
        if out.bucket_width < 1:
            raise o.fail("bucket_width", "a positive integer", out.bucket_width)
        if (out.t_min is None) != (out.t_max is None):
            raise o.fail("t_max", "null exactly when t_min is", out.t_max)
        o.done()
        return out

    def to_json(self) -> dict[str, Any]:
        return {"t_min": self.t_min, "t_max": self.t_max, "bucket_width": self.bucket_width,
                "max_interval": self.max_interval}


def time_axis_from_fields(o: ManifestFields) -> TimeAxis:
    """The archive's :class:`~uncertain_cep.model.time_axis.TimeAxis`: ``time_unit`` (text),
    ``unit_ns`` (positive, or null for times given as numbers) and ``timezone`` (null for
    naive datetimes and numbers)."""
    unit_ns = o.integer_or_none("unit_ns")
    if unit_ns is not None and unit_ns < 1:
        raise o.fail("unit_ns", "a positive integer or null", unit_ns)
    timezone = o.text_or_none("timezone")
    if unit_ns is None and timezone is not None:
        raise o.fail("timezone", "null when unit_ns is (times given as numbers)", timezone)
    out = TimeAxis(o.text("time_unit"), unit_ns, timezone)
    o.done()
    return out


def time_axis_to_json(axis: TimeAxis) -> dict[str, Any]:
    """A time axis as the manifest's ``time_axis`` object (:func:`time_axis_from_fields`)."""
    return {"time_unit": axis.time_unit, "unit_ns": axis.unit_ns, "timezone": axis.timezone}


@dataclass(frozen=True)
class RTreeInfo:
    """The R*-tree: its number of dimensions and of entries (one per event), and how many
    entries each of its chunks holds (consecutive event rows; the last chunk the rest:
    :func:`~uncertain_cep.index.store.rtree_and_statistics.rtree_chunks`)."""

    dimension: int
    entries: int
    chunk_entries: int

    @property
    def chunks(self) -> int:
        """How many trees the R*-tree is stored as (one at least).

        >>> RTreeInfo(5, 2_000_001, 1_000_000).chunks, RTreeInfo(5, 0, 1_000_000).chunks
        (3, 1)
        """
        return max(1, -(-self.entries // self.chunk_entries))

    @classmethod
    def from_fields(cls, o: ManifestFields) -> RTreeInfo:
        dimension, entries = _count(o, "dimension"), _count(o, "entries")
        chunk_entries = o.integer("chunk_entries")
        if chunk_entries < 1:
            raise o.fail("chunk_entries", "an integer >= 1", chunk_entries)
        o.done()
        return cls(dimension, entries, chunk_entries)

    def to_json(self) -> dict[str, Any]:
        return {"dimension": self.dimension, "entries": self.entries,
                "chunk_entries": self.chunk_entries}


@dataclass(frozen=True)
class StoredStatistics:
    """The scalar part of the selectivity statistics (the counts are tables beside it):
    see :class:`~uncertain_cep.index.statistics.EventStatistics`."""

    grid: StatisticsGrid
    mean_widths: tuple[float, ...]
    mean_instants: float
    events: int
    categorical: tuple[str, ...]

    @classmethod
    def of(cls, statistics: EventStatistics) -> StoredStatistics:
        return cls.from_fields(ManifestFields(statistics.to_json(), "statistics"))

    @classmethod
    def from_fields(cls, o: ManifestFields) -> StoredStatistics:
        g = o.child("grid")
        try:
            grid = StatisticsGrid(g.integer("t0"), g.integer("width"), g.integer("intervals"),
                                  g.texts("attributes"), g.numbers("lows"),
                                  g.numbers("highs"), g.integer("bins"))
        except ValueError as e:
            raise IndexFormatError(f"manifest field {o.name('grid')!r} is inconsistent: "
                                   f"{e}") from None
        g.done()
        out = cls(grid, o.numbers("mean_widths"), o.number("mean_instants"), _count(o, "events"),
                  o.texts("categorical"))
        if len(out.mean_widths) != len(grid.attributes):
            raise o.fail("mean_widths", f"{len(grid.attributes)} numbers (one per attribute "
                         "of the grid)", list(out.mean_widths))
        o.done()
        return out

    def to_json(self) -> dict[str, Any]:
        return {"grid": self.grid.to_json(), "mean_widths": list(self.mean_widths),
                "mean_instants": self.mean_instants, "events": self.events,
                "categorical": list(self.categorical)}


@dataclass(frozen=True)
class BuildRecord:
    """How a Spark build ran: engine, master URL, number of tasks and the input files."""

    engine: str
    master: str | None
    tasks: int
    inputs: tuple[str, ...]

    @classmethod
    def from_fields(cls, o: ManifestFields) -> BuildRecord:
        out = cls(o.text("engine"), o.text_or_none("master"), _count(o, "tasks"),
                  o.texts("input"))
        o.done()
        return out

    def to_json(self) -> dict[str, Any]:
        return {"engine": self.engine, "master": self.master, "tasks": self.tasks,
                "input": list(self.inputs)}


@dataclass(frozen=True)
class RejectedCounts:
    """Rows and groups a build set aside (kept in the index's rejected tables)."""

    rows: int
    groups: int

    @classmethod
    def from_fields(cls, o: ManifestFields) -> RejectedCounts:
        out = cls(_count(o, "rows"), _count(o, "groups"))
        o.done()
        return out

    def to_json(self) -> dict[str, Any]:
        return {"rows": self.rows, "groups": self.groups}


def _count(o: ManifestFields, key: str) -> int:
    n = o.integer(key)
    if n < 0:
        raise o.fail(key, "an integer >= 0", n)
    return n
