"""The typed manifest: an exact JSON round trip, and every tampered field refused by name."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pandas as pd
import pytest

import uncertain_cep as uc
from uncertain_cep.errors import IndexFormatError
from uncertain_cep.index.store.format_version import FORMAT_VERSION
from uncertain_cep.index.store.manifest import SELF_CHECKSUM, Manifest, manifest_digest
from uncertain_cep.index.store.manifest_records import (
    BuildRecord,
    RejectedCounts,
    StoredCondition2,
)
from uncertain_cep.index.store.reader import open_reader

EXAMPLE = Path(__file__).parents[2] / "fixtures" / "paper_example" / "archive.csv"


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    """An index with a numeric attribute, a categorical one and Condition 2."""
    df = pd.DataFrame({"event_id": ["a", "b", "c", "d"], "group": ["p", "p", "q", "q"],
                       "t_lo": [1, 3, 2, 6], "t_hi": [2, 4, 4, 7], "x": [1.0, 2.0, 9.0, 9.5],
                       "tag": ["u", "v", "u", "w"]})
    path = tmp_path_factory.mktemp("manifest") / "ix"
    uc.build_index(df, max_speed=2.0, coordinates=("x",)).save(path)
    return path


def _data(path: Path) -> dict:
    """The manifest's fields, less its own checksum."""
    data = json.loads((path / "manifest.json").read_text())
    data.pop(SELF_CHECKSUM)
    return data


def test_the_round_trip_is_exact(saved):
    data = _data(saved)
    manifest = Manifest.from_json(copy.deepcopy(data))
    assert manifest.to_json() == data
    # Field order and types too: the file is what to_json writes, and its own checksum.
    written = {**manifest.to_json(), SELF_CHECKSUM: manifest_digest(data)}
    assert json.dumps(written, indent=2) == (saved / "manifest.json").read_text()
    assert Manifest.from_json(manifest.to_json()) == manifest
    assert manifest.counts.events == 4 and manifest.counts.groups == 2
    assert manifest.attributes.numeric == ("x",) and manifest.attributes.categorical == ("tag",)
    assert manifest.settings.condition2 == StoredCondition2("max_speed", 2.0, ("x",))
    assert manifest.build is None and manifest.rejected is None


def test_the_paper_example_round_trips(tmp_path):
    uc.build_index(pd.read_csv(EXAMPLE), codes="paper", multi_tree=False).save(tmp_path / "ix")
    data = _data(tmp_path / "ix")
    manifest = Manifest.from_json(data)
    assert manifest.to_json() == data
    assert manifest.settings.codes == "paper" and not manifest.settings.multi_tree
    assert manifest.settings.condition2 is None


def test_what_a_spark_build_records_round_trips(saved):
    data = _data(saved) | {
        "build": {"engine": "spark", "master": "local[2]", "tasks": 8,
                  "input": ["/data/a.parquet"]},
        "rejected": {"rows": 5, "groups": 1}}
    manifest = Manifest.from_json(data)
    assert manifest.build == BuildRecord("spark", "local[2]", 8, ("/data/a.parquet",))
    assert manifest.rejected == RejectedCounts(5, 1)
    assert manifest.to_json() == data
    assert manifest.provenance()["build"] == data["build"]


def test_a_user_predicate_is_recorded_but_not_stored(tmp_path):
    df = pd.DataFrame({"event_id": [1, 2], "group": 0, "t_lo": [1, 1], "t_hi": [2, 2]})
    uc.build_index(df, pair_predicate=lambda a, b, ta, tb: True).save(tmp_path / "ix")
    data = _data(tmp_path / "ix")
    assert data["settings"]["condition2"] == {"kind": "user_predicate"}
    manifest = Manifest.from_json(data)
    assert manifest.to_json() == data
    assert manifest.settings.build_settings().condition2 is None


def test_the_reader_holds_the_manifest_on_disk(saved):
    assert open_reader(saved).manifest == Manifest.from_json(_data(saved))


def _set(data: dict, field: str, value: object) -> dict:
    out = copy.deepcopy(data)
    *parents, last = field.split(".")
    node = out
    for key in parents:
        node = node[key]
    node[last] = value
    return out


TAMPERED = [
    ("group_by", 7),
    ("counts.events", "4"),
    ("counts.nodes", True),
    ("counts.trees", 3.0),
    ("counts.groups", -1),
    ("attributes.numeric", "x"),
    ("attributes", ["x"]),
    ("schema", {"x": 1}),
    ("settings.multi_tree", 1),
    ("settings.codes", "fancy"),
    ("settings.node_budget", 2.5),
    ("settings.condition2.kind", "min_speed"),
    ("settings.condition2.v_max", "fast"),
    ("time_axis", 60),
    ("time.t_min", "1"),
    ("time.bucket_width", 0),
    ("rtree.entries", None),
    ("statistics.grid.lows", ["low"]),
    ("statistics.grid.t0", 0.5),
    ("statistics.mean_widths", [1.0, 2.0]),
    ("statistics.categorical", [1]),
    ("input_fingerprint", None),
    ("xxh3_64", ["events/part-00000.parquet"]),
]


@pytest.mark.parametrize(("field", "value"), TAMPERED)
def test_a_tampered_field_is_refused_naming_it(saved, field, value):
    with pytest.raises(IndexFormatError, match=f"manifest field {re.escape(repr(field))}"):
        Manifest.from_json(_set(_data(saved), field, value))


@pytest.mark.parametrize(("field", "value"), TAMPERED[:6])
def test_opening_an_index_with_a_tampered_manifest_names_the_field(saved, tmp_path, field,
                                                                   value):
    # The checksums cover every file but the manifest itself.
    import shutil

    copy_ = tmp_path / "ix"
    shutil.copytree(saved, copy_)
    (copy_ / "manifest.json").write_text(json.dumps(_set(_data(saved), field, value)))
    with pytest.raises(IndexFormatError, match=re.escape(f"manifest.json: manifest field "
                                                         f"{field!r}")):
        uc.open_index(copy_)


@pytest.fixture(scope="module")
def dated(tmp_path_factory) -> Path:
    """An index built from datetimes in Europe/Berlin, one instant a minute."""
    stamps = pd.to_datetime(["2024-01-01 10:00", "2024-01-01 10:03"]).tz_localize(
        "Europe/Berlin")
    df = pd.DataFrame({"event_id": [1, 2], "group": 0, "t_lo": stamps,
                       "t_hi": stamps + pd.Timedelta("2min")})
    path = tmp_path_factory.mktemp("dated") / "ix"
    uc.build_index(df, time_unit="1min").save(path)
    return path


def test_the_time_axis_round_trips(saved, dated):
    data = _data(dated)
    assert data["time_axis"] == {"time_unit": "1min", "unit_ns": 60 * 10**9,
                                 "timezone": "Europe/Berlin"}
    manifest = Manifest.from_json(copy.deepcopy(data))
    assert manifest.time_axis == uc.TimeAxis("1min", 60 * 10**9, "Europe/Berlin")
    assert manifest.to_json() == data
    assert manifest.provenance()["time_zone"] == "Europe/Berlin"
    assert _data(saved)["time_axis"] is None


@pytest.mark.parametrize(("field", "value", "wanted"), [
    ("time_axis.unit_ns", "60s", "an integer"),
    ("time_axis.unit_ns", 0, "a positive integer or null"),
    ("time_axis.unit_ns", None, "null when unit_ns is"),    # a zone without datetimes
    ("time_axis.timezone", 1, "a string"),
    ("time_axis.time_unit", None, "a string"),
    ("time_axis.days", 1, "not part of index format"),
])
def test_a_tampered_time_axis_is_refused_naming_the_field(dated, field, value, wanted):
    name = "time_axis.timezone" if value is None and field.endswith("unit_ns") else field
    with pytest.raises(IndexFormatError, match=rf"manifest field {re.escape(repr(name))} .*"
                                               rf"{wanted}"):
        Manifest.from_json(_set(_data(dated), field, value))


def test_a_missing_field_is_named(saved):
    data = _data(saved)
    del data["time"]["max_interval"]
    with pytest.raises(IndexFormatError, match=r"'time\.max_interval' is missing"):
        Manifest.from_json(data)


def test_an_unknown_field_is_refused(saved):
    with pytest.raises(IndexFormatError, match=r"'counts\.edges' is not part of index format"):
        Manifest.from_json(_set(_data(saved), "counts.edges", 3))
    with pytest.raises(IndexFormatError, match=r"'comment' is not part of index format"):
        Manifest.from_json(_data(saved) | {"comment": "mine"})


def test_another_format_or_version_is_refused_before_its_fields(saved):
    with pytest.raises(IndexFormatError, match="not the manifest of an uncertain-cep index"):
        Manifest.from_json({"format": "something else"})
    with pytest.raises(IndexFormatError, match=f"format version 2; .* reads version "
                                               f"{FORMAT_VERSION}"):
        Manifest.from_json({"format": "uncertain-cep index", "format_version": 2})
    with pytest.raises(IndexFormatError, match="must be a JSON object"):
        Manifest.from_json(["format"])


EDITS = [("counts.events", 5), ("attributes.numeric", ["x", "y"]), ("time.t_max", 10**6),
         ("input_fingerprint", "0" * 64)]


@pytest.mark.parametrize(("field", "value"), EDITS)
def test_an_edited_but_well_formed_manifest_is_refused(saved, tmp_path, field, value):
    import shutil

    copy_ = tmp_path / "ix"
    shutil.copytree(saved, copy_)
    raw = json.loads((copy_ / "manifest.json").read_text())
    edited = _set(raw, field, value)
    (copy_ / "manifest.json").write_text(json.dumps(edited, indent=2))
    with pytest.raises(IndexFormatError, match="was edited or damaged"):
        uc.open_index(copy_)


def test_a_dropped_checksum_entry_is_refused(saved, tmp_path):
    import shutil

    copy_ = tmp_path / "ix"
    shutil.copytree(saved, copy_)
    raw = json.loads((copy_ / "manifest.json").read_text())
    raw["xxh3_64"].pop(sorted(raw["xxh3_64"])[-1])
    (copy_ / "manifest.json").write_text(json.dumps(raw))
    with pytest.raises(IndexFormatError, match="was edited or damaged"):
        uc.open_index(copy_)
