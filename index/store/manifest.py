"""The manifest of an on-disk index, typed: :class:`Manifest`, and its own checksum.

Both builders write ``manifest.json`` last (:mod:`uncertain_cep.index.store.storage`) and
the reader checks it first (:mod:`uncertain_cep.index.store.reader`). In this process it
is a frozen :class:`Manifest`: :meth:`Manifest.from_json` validates every field, so a
missing, mistyped or unknown one is an :class:`~uncertain_cep.errors.IndexFormatError`
naming it by its path in the JSON (``counts.events``), and :meth:`Manifest.to_json` gives
back exactly what was read. The records it holds are
:mod:`uncertain_cep.index.store.manifest_records`, each read field by field through
:mod:`uncertain_cep.index.store.manifest_fields`; the format's name and version are
:mod:`uncertain_cep.index.store.format_version`.

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
from dataclasses import dataclass
from typing import Any

from uncertain_cep.errors import IndexFormatError
from uncertain_cep.index.store.checksums import CHECKSUM
from uncertain_cep.index.store.format_version import FORMAT, FORMAT_VERSION
from uncertain_cep.index.store.manifest_fields import ManifestFields
from uncertain_cep.index.store.manifest_records import (
    AttributeNames,
    BuildRecord,
    IndexCounts,
    RejectedCounts,
    RTreeInfo,
    ShardRecord,
    StoredSettings,
    StoredStatistics,
    TimeDomain,
    time_axis_from_fields,
    time_axis_to_json,
)
from uncertain_cep.model.time_axis import TimeAxis

__all__ = ["SELF_CHECKSUM", "Manifest", "manifest_digest"]

# The manifest file's own checksum: the SHA-256 of its other fields (see manifest_digest),
# so that an edited manifest is refused like an edited table.
SELF_CHECKSUM = "manifest_sha256"


def manifest_digest(data: dict[str, Any]) -> str:
    """The SHA-256 of a manifest's JSON fields (less :data:`SELF_CHECKSUM`), in a
    canonical form: independent of key order and indentation.

    >>> manifest_digest({"b": 1, "a": [1, 2]}) == manifest_digest({"a": [1, 2], "b": 1})
    True
    """
    fields = {k: v for k, v in data.items() if k != SELF_CHECKSUM}
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Manifest:
    """What ``manifest.json`` holds (see :mod:`uncertain_cep.index.store.layout` for the layout).

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
    shards
        A sharded index's shards (:class:`ShardRecord`), in time order; empty for an
        index in one directory. The checksums of a sharded index are those of its own
        files: the shards' manifests and the merged statistics (each shard's manifest
        holds its files' checksums).
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
    shards: tuple[ShardRecord, ...] = ()

    @property
    def is_sharded(self) -> bool:
        return bool(self.shards)

    @classmethod
    def from_json(cls, data: object) -> Manifest:
        """Validate a manifest as loaded from JSON.

        Raises
        ------
        IndexFormatError
            For another format or format version (first, since their fields differ), and
            for a missing, mistyped or unknown field, naming it.
        """
        o = ManifestFields(data)
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
        shards = (tuple(ShardRecord.from_fields(c) for c in o.children("shards"))
                  if "shards" in o.data else ())
        out = cls(
            format_version=FORMAT_VERSION, group_by=o.text("group_by"),
            attributes=AttributeNames.from_fields(o.child("attributes")),
            schema=o.text_map("schema"),
            settings=StoredSettings.from_fields(o.child("settings")),
            time_axis=None if o.raw("time_axis") is None else time_axis_from_fields(
                o.child("time_axis")),
            counts=IndexCounts.from_fields(o.child("counts")),
            time=TimeDomain.from_fields(o.child("time")),
            rtree=RTreeInfo.from_fields(o.child("rtree")),
            statistics=StoredStatistics.from_fields(o.child("statistics")),
            input_fingerprint=o.text("input_fingerprint"), checksums=o.text_map(CHECKSUM),
            build=None if build is None else BuildRecord.from_fields(build),
            rejected=None if rejected is None else RejectedCounts.from_fields(rejected),
            shards=shards)
        o.done()
        return out

    def to_json(self) -> dict[str, Any]:
        """The manifest as JSON values, fields in the order they are written."""
        out: dict[str, Any] = {
            "format": FORMAT, "format_version": self.format_version, "group_by": self.group_by,
            "attributes": self.attributes.to_json(), "schema": dict(self.schema),
            "settings": self.settings.to_json(),
            "time_axis": None if self.time_axis is None else time_axis_to_json(self.time_axis),
            "counts": self.counts.to_json(), "time": self.time.to_json(),
            "rtree": self.rtree.to_json(), "statistics": self.statistics.to_json(),
            "input_fingerprint": self.input_fingerprint, CHECKSUM: dict(self.checksums)}
        if self.build is not None:
            out["build"] = self.build.to_json()
        if self.rejected is not None:
            out["rejected"] = self.rejected.to_json()
        if self.shards:
            out["shards"] = [s.to_json() for s in self.shards]
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
        if self.shards:
            out["shards"] = len(self.shards)
        if self.build is not None:
            out["build"] = self.build.to_json()
        if self.rejected is not None:
            out["rejected"] = self.rejected.to_json()
        return out
