"""The manifest of an on-disk index, typed: :class:`Manifest` and the records it holds.

Both builders write ``manifest.json`` last (:mod:`uncertain_cep.index.store.storage`) and the
reader checks it first (:mod:`uncertain_cep.index.store.reader`). In this process it is a frozen
:class:`Manifest`: :meth:`Manifest.from_json` validates every field, so a missing,
mistyped or unknown one is an :class:`~uncertain_cep.errors.IndexFormatError` naming it by
its path in the JSON (``counts.events``), and :meth:`Manifest.to_json` gives back exactly
what was read.

>>> import json, tempfile
>>> import pandas as pd
>>> import uncertain_cep as uc
>>> with tempfile.TemporaryDirectory() as tmp:
...     uc.build_index(pd.DataFrame({"event_id": [1, 2], "group": 0, "t_lo": [1, 1],
...                                  "t_hi": [2, 2]})).save(tmp + "/ix")
...     with open(tmp + "/ix/manifest.json") as fh:
...         data = json.load(fh)
>>> digest = data.pop(SELF_CHECKSUM)    # the file's own checksum, checked by the reader
>>> m = Manifest.from_json(data)
>>> m.counts.events, m.time.t_min, m.time.t_max, m.settings.codes
(2, 1, 2, 'compact')
>>> m.to_json() == data
True
>>> Manifest.from_json({**data, "counts": {**data["counts"], "events": "2"}})
Traceback (most recent call last):
...
uncertain_cep.errors.IndexFormatError: manifest field 'counts.events' must be an ..., got str '2'
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any

from uncertain_cep.errors import IndexFormatError
from uncertain_cep.index.forests.codes import CodeSchemeName
from uncertain_cep.index.group_build import BuildSettings
from uncertain_cep.index.statistics import EventStatistics, StatisticsGrid
from uncertain_cep.index.store.checksums import CHECKSUM
from uncertain_cep.model.feasibility import MaxSpeed, PairPredicate
from uncertain_cep.model.time_axis import TimeAxis

__all__ = ["FORMAT", "FORMAT_VERSION", "SELF_CHECKSUM", "AttributeNames", "BuildRecord",
           "IndexCounts", "Manifest", "RTreeInfo", "RejectedCounts", "StoredCondition2",
           "StoredSettings", "StoredStatistics", "TimeDomain", "manifest_digest"]

FORMAT = "uncertain-cep index"
# 5: the time axis (time unit, and for datetimes one instant's length and the time zone)
# replaced the time unit's text; a version-4 index cannot say whether its times were
# datetimes, so it would answer them as integers.
# 6: the events table's numbers are stored again as memory-mapped columns
# (event_columns/), which opening maps instead of reading the events table.
# 7: the tables are in time order and the nodes table has each node's interval
# (node_lo, node_hi), which time slices filter on; a version-6 slice would read whole
# top trees.
# 8: every file's checksum is an xxh3_64 (field "xxh3_64", was "sha256"), fast enough to
# check the memory-mapped columns on every open; a version-7 index left them unchecked.
FORMAT_VERSION = 8
# The manifest file's own checksum: the SHA-256 of its other fields (see manifest_digest),
# so that an edited manifest is refused like an edited table.
SELF_CHECKSUM = "manifest_sha256"
_CONDITION2_KINDS = ("max_speed", "user_predicate")


def manifest_digest(data: dict[str, Any]) -> str:
    """The SHA-256 of a manifest's JSON fields (less :data:`SELF_CHECKSUM`), in a
    canonical form: independent of key order and indentation.

    >>> manifest_digest({"b": 1, "a": [1, 2]}) == manifest_digest({"a": [1, 2], "b": 1})
    True
    """
    fields = {k: v for k, v in data.items() if k != SELF_CHECKSUM}
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


# ---------------------------------------------------------------- validation

class _Object:
    """One JSON object of the manifest, read field by field; every failure names the
    field by its path from the top (``statistics.grid.t0``)."""

    def __init__(self, data: object, path: str = "") -> None:
        if not isinstance(data, dict):
            raise IndexFormatError(f"manifest field {path!r} must be an object, got "
                                   f"{_shown(data)}" if path else
                                   f"the manifest must be a JSON object, got {_shown(data)}")
        self.data: dict[str, Any] = data
        self.path = path
        self.seen: set[str] = set()

    def name(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def raw(self, key: str) -> object:
        self.seen.add(key)
        if key not in self.data:
            raise IndexFormatError(f"manifest field {self.name(key)!r} is missing")
        return self.data[key]

    def fail(self, key: str, wanted: str, value: object) -> IndexFormatError:
        return IndexFormatError(f"manifest field {self.name(key)!r} must be {wanted}, got "
                                f"{_shown(value)}")

    def integer(self, key: str) -> int:
        v = self.raw(key)
        # JSON true/false load as bool, a subclass of int: not a count.
        if not isinstance(v, int) or isinstance(v, bool):
            raise self.fail(key, "an integer", v)
        return v

    def integer_or_none(self, key: str) -> int | None:
        if self.data.get(key, 0) is None:
            self.seen.add(key)
            return None
        return self.integer(key)

    def number(self, key: str) -> float:
        v = self.raw(key)
        if not _is_number(v):
            raise self.fail(key, "a finite number", v)
        return float(v)  # type: ignore[arg-type]

    def flag(self, key: str) -> bool:
        v = self.raw(key)
        if not isinstance(v, bool):
            raise self.fail(key, "true or false", v)
        return v

    def text(self, key: str) -> str:
        v = self.raw(key)
        if not isinstance(v, str):
            raise self.fail(key, "a string", v)
        return v

    def text_or_none(self, key: str) -> str | None:
        if self.data.get(key, "") is None:
            self.seen.add(key)
            return None
        return self.text(key)

    def texts(self, key: str) -> tuple[str, ...]:
        v = self.raw(key)
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise self.fail(key, "a list of strings", v)
        return tuple(v)

    def numbers(self, key: str) -> tuple[float, ...]:
        v = self.raw(key)
        if not isinstance(v, list) or not all(_is_number(x) for x in v):
            raise self.fail(key, "a list of finite numbers", v)
        return tuple(float(x) for x in v)

    def text_map(self, key: str) -> tuple[tuple[str, str], ...]:
        v = self.raw(key)
        if not isinstance(v, dict) or not all(isinstance(x, str) for x in v.values()):
            raise self.fail(key, "an object of strings", v)
        return tuple(v.items())

    def child(self, key: str) -> _Object:
        return _Object(self.raw(key), self.name(key))

    def done(self) -> None:
        """Refuse fields this format version does not have (a round trip would drop them)."""
        extra = sorted(set(self.data) - self.seen)
        if extra:
            raise IndexFormatError(f"manifest field {self.name(extra[0])!r} is not part of "
                                   f"index format version {FORMAT_VERSION}")


def _is_number(v: object) -> bool:
    if isinstance(v, bool):
        return False
    return isinstance(v, int) or (isinstance(v, float) and math.isfinite(v))


def _shown(value: object) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


# ---------------------------------------------------------------- records

@dataclass(frozen=True)
class AttributeNames:
    """The archive's numeric and categorical attributes, in archive order."""

    numeric: tuple[str, ...]
    categorical: tuple[str, ...]

    @classmethod
    def _read(cls, o: _Object) -> AttributeNames:
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
    def _read(cls, o: _Object) -> StoredCondition2:
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
    def _read(cls, o: _Object) -> StoredSettings:
        cond = None if o.raw("condition2") is None else o.child("condition2")
        codes = o.text("codes")
        if codes not in {m.value for m in CodeSchemeName}:
            raise o.fail("codes", "'compact' or 'paper'", codes)
        budget = o.integer_or_none("node_budget")
        if budget is not None and budget < 1:
            raise o.fail("node_budget", "a positive integer or null", budget)
        out = cls(None if cond is None else StoredCondition2._read(cond),
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
    def _read(cls, o: _Object) -> IndexCounts:
        out = cls(*(_count(o, k) for k in ("events", "groups", "trees", "nodes")))
        o.done()
        return out

    def to_json(self) -> dict[str, Any]:
        return {"events": self.events, "groups": self.groups, "trees": self.trees,
                "nodes": self.nodes}


@dataclass(frozen=True)
class TimeDomain:
    """The feasible instants of the index (``None`` without events), the width of the
    time statistics' buckets, and the widest event (latest minus earliest instant)."""

    t_min: int | None
    t_max: int | None
    bucket_width: int
    max_interval: int

    @classmethod
    def _read(cls, o: _Object) -> TimeDomain:
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


def _time_axis(o: _Object) -> TimeAxis:
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


def _time_axis_json(axis: TimeAxis) -> dict[str, Any]:
    return {"time_unit": axis.time_unit, "unit_ns": axis.unit_ns, "timezone": axis.timezone}


@dataclass(frozen=True)
class RTreeInfo:
    """The R*-tree file: its number of dimensions and of entries (one per event)."""

    dimension: int
    entries: int

    @classmethod
    def _read(cls, o: _Object) -> RTreeInfo:
        out = cls(_count(o, "dimension"), _count(o, "entries"))
        o.done()
        return out

    def to_json(self) -> dict[str, Any]:
        return {"dimension": self.dimension, "entries": self.entries}


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
        return cls._read(_Object(statistics.to_json(), "statistics"))

    @classmethod
    def _read(cls, o: _Object) -> StoredStatistics:
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
    def _read(cls, o: _Object) -> BuildRecord:
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
    def _read(cls, o: _Object) -> RejectedCounts:
        out = cls(_count(o, "rows"), _count(o, "groups"))
        o.done()
        return out

    def to_json(self) -> dict[str, Any]:
        return {"rows": self.rows, "groups": self.groups}


def _count(o: _Object, key: str) -> int:
    n = o.integer(key)
    if n < 0:
        raise o.fail(key, "an integer >= 0", n)
    return n


# ---------------------------------------------------------------- the manifest

@dataclass(frozen=True)
class Manifest:
    """What ``manifest.json`` holds (see :mod:`uncertain_cep.index.store.storage` for the layout).

    Attributes
    ----------
    format_version
        :data:`FORMAT_VERSION` (an index of another version is refused when read).
    group_by
        The dependency-group column.
    attributes
        Numeric and categorical attribute names.
    schema
        ``(column, Arrow type)`` of every column of the events table, in table order
        (empty for an index without events).
    settings
        The build settings (:meth:`StoredSettings.build_settings` gives them back).
    time_axis
        The discretisation the archive was read with
        (:class:`~uncertain_cep.model.time_axis.TimeAxis`: the time unit as text and, for
        datetime times, one instant's length and the time zone), or ``None`` for integer
        instants.
    counts, time, rtree, statistics
        Sizes, the time domain, the R*-tree file and the statistics' scalars.
    input_fingerprint
        SHA-256 identifying what was indexed (the input files of a Spark build, else the
        events table).
    checksums
        ``(file, xxh3_64)`` of every other file of the index, in file-name order
        (:mod:`uncertain_cep.index.store.checksums`; the JSON field is named by the algorithm).
    build, rejected
        What a Spark build recorded (``None`` for an index saved in process).
    """

    format_version: int
    group_by: str
    attributes: AttributeNames
    schema: tuple[tuple[str, str], ...]
    settings: StoredSettings
    time_axis: TimeAxis | None
    counts: IndexCounts
    time: TimeDomain
    rtree: RTreeInfo
    statistics: StoredStatistics
    input_fingerprint: str
    checksums: tuple[tuple[str, str], ...]
    build: BuildRecord | None = None
    rejected: RejectedCounts | None = None

    @classmethod
    def from_json(cls, data: object) -> Manifest:
        """Validate a manifest as loaded from JSON.

        Raises
        ------
        IndexFormatError
            For another format or format version (first, since their fields differ), and
            for a missing, mistyped or unknown field, naming it.
        """
        o = _Object(data)
        if o.data.get("format") != FORMAT:
            raise IndexFormatError("not the manifest of an uncertain-cep index")
        o.raw("format")
        version = o.data.get("format_version")
        if version != FORMAT_VERSION or isinstance(version, bool | float):
            raise IndexFormatError(f"index format version {version!r}; this version of "
                                   f"uncertain-cep reads version {FORMAT_VERSION}; rebuild "
                                   "the index")
        o.raw("format_version")
        # Written only by builds that record them; never as null.
        build = o.child("build") if "build" in o.data else None
        rejected = o.child("rejected") if "rejected" in o.data else None
        out = cls(
            format_version=FORMAT_VERSION, group_by=o.text("group_by"),
            attributes=AttributeNames._read(o.child("attributes")),
            schema=o.text_map("schema"),
            settings=StoredSettings._read(o.child("settings")),
            time_axis=None if o.raw("time_axis") is None else _time_axis(
                o.child("time_axis")),
            counts=IndexCounts._read(o.child("counts")),
            time=TimeDomain._read(o.child("time")),
            rtree=RTreeInfo._read(o.child("rtree")),
            statistics=StoredStatistics._read(o.child("statistics")),
            input_fingerprint=o.text("input_fingerprint"), checksums=o.text_map(CHECKSUM),
            build=None if build is None else BuildRecord._read(build),
            rejected=None if rejected is None else RejectedCounts._read(rejected))
        o.done()
        return out

    def to_json(self) -> dict[str, Any]:
        """The manifest as JSON values, fields in the order they are written."""
        out: dict[str, Any] = {
            "format": FORMAT, "format_version": self.format_version, "group_by": self.group_by,
            "attributes": self.attributes.to_json(), "schema": dict(self.schema),
            "settings": self.settings.to_json(),
            "time_axis": None if self.time_axis is None else _time_axis_json(self.time_axis),
            "counts": self.counts.to_json(), "time": self.time.to_json(),
            "rtree": self.rtree.to_json(), "statistics": self.statistics.to_json(),
            "input_fingerprint": self.input_fingerprint, CHECKSUM: dict(self.checksums)}
        if self.build is not None:
            out["build"] = self.build.to_json()
        if self.rejected is not None:
            out["rejected"] = self.rejected.to_json()
        return out

    def provenance(self) -> dict[str, Any]:
        """Where the index came from, as :attr:`IndexSummary.provenance
        <uncertain_cep.index.summary.IndexSummary.provenance>` shows it (less the path)."""
        axis = self.time_axis
        out: dict[str, Any] = {"format_version": self.format_version,
                               "time_unit": None if axis is None else axis.time_unit,
                               "input_fingerprint": self.input_fingerprint}
        if axis is not None and axis.is_datetime:
            out["time_zone"] = axis.timezone or "naive"
        if self.build is not None:
            out["build"] = self.build.to_json()
        if self.rejected is not None:
            out["rejected"] = self.rejected.to_json()
        return out
