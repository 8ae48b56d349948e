"""Saving and opening an index: round trips, atomic writes, refusing damaged indexes."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from random_archives import archives, patterns

import uncertain_cep as uc
import uncertain_cep.index.store.storage as storage
from uncertain_cep.errors import IndexFormatError
from uncertain_cep.index.store.manifest import manifest_digest
from uncertain_cep.model.time_axis import timezone_name

EXAMPLE = Path(__file__).parents[2] / "fixtures" / "paper_example"


def _example() -> uc.UncertainIndex:
    return uc.build_index(pd.read_csv(EXAMPLE / "archive.csv"), codes="paper")


# Each example writes and opens two indexes (about a second): the query engine's own
# properties are tested elsewhere on many more archives.
@settings(max_examples=12)
@given(df=archives(max_groups=3, max_events=8), pattern=patterns())
def test_reopened_index_answers_like_the_original(tmp_path_factory, df, pattern):
    path = tmp_path_factory.mktemp("ix") / "index"
    for codes in ("compact", "paper"):
        idx = uc.build_index(df, codes=codes)
        idx.save(path)
        again = uc.open_index(path)
        assert again.n_nodes == idx.n_nodes and again.n_trees == idx.n_trees
        pd.testing.assert_frame_equal(again.query(pattern), idx.query(pattern))


@pytest.mark.parametrize("zone", [None, "UTC", "America/New_York", "+05:30"])
def test_an_index_built_from_datetimes_reopens_with_its_unit_and_zone(tmp_path, zone):
    base = pd.Timestamp("2024-11-03 05:59:58", tz="UTC")   # New York's clocks go back at 06:00
    stamps = [base + pd.Timedelta(seconds=s) for s in (0, 1, 3, 4, 6)]
    df = pd.DataFrame({"event_id": range(5), "group": [0, 0, 1, 1, 1],
                       "t_lo": pd.Series(stamps).dt.tz_convert(zone) if zone
                       else pd.Series(stamps).dt.tz_localize(None), "x": [1.0, 5.0, 1.0, 5.0, 7.0]})
    df["t_hi"] = df["t_lo"] + pd.Timedelta("1500ms")
    idx = uc.build_index(df, time_unit="500ms")
    query = "PATTERN SEQ(A, B) DEFINE A AS x < 2, B AS x > 4 WITHIN 3s"
    want = idx.query(query)
    assert len(want) == 4 and timezone_name(want["t_first"].dtype, "t_first") == zone
    idx.save(tmp_path / "ix")
    again = uc.open_index(tmp_path / "ix")
    assert again.archive.time_axis == idx.archive.time_axis == uc.TimeAxis(
        "500ms", unit_ns=500 * 10**6, timezone=zone)
    pd.testing.assert_frame_equal(again.query(query), want, check_exact=True)
    pd.testing.assert_frame_equal(uc.query_index(tmp_path / "ix", query), want)
    assert again.describe().provenance["time_zone"] == (zone or "naive")


def test_an_index_of_numbers_records_its_time_unit_when_saved_here(tmp_path):
    df = pd.DataFrame({"event_id": [1, 2], "group": 0, "t_lo": [0.2, 1.1], "t_hi": [0.9, 1.9]})
    uc.build_index(df, time_unit=0.5).save(tmp_path / "ix")
    again = uc.open_index(tmp_path / "ix")
    assert again.archive.time_axis == uc.TimeAxis("0.5")
    assert again.describe().provenance["time_unit"] == "0.5"
    assert again.query("PATTERN SEQ(A, B) WITHIN 3")["t_first"].dtype == "int64"


def test_saving_over_an_index_replaces_it(tmp_path):
    _example().save(tmp_path / "ix")
    small = uc.build_index(pd.DataFrame({"event_id": [1], "group": [0], "t": [3]}))
    small.save(tmp_path / "ix")
    assert uc.open_index(tmp_path / "ix").n_events == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ix"]


def test_a_directory_that_is_not_an_index_is_not_overwritten(tmp_path):
    (tmp_path / "ix").mkdir()
    (tmp_path / "ix" / "notes.txt").write_text("mine")
    with pytest.raises(IndexFormatError, match="not an uncertain-cep index"):
        _example().save(tmp_path / "ix")
    assert (tmp_path / "ix" / "notes.txt").read_text() == "mine"


def test_interrupted_write_leaves_the_old_index_and_no_partial_one(tmp_path, monkeypatch):
    _example().save(tmp_path / "ix")
    calls = []

    def failing_write(table, path):
        calls.append(path)
        if len(calls) == 2:
            raise KeyboardInterrupt("killed mid-write")
        real_write(table, path)

    real_write = storage.write_durably
    monkeypatch.setattr(storage, "write_durably", failing_write)
    small = uc.build_index(pd.DataFrame({"event_id": [1], "group": [0], "t": [3]}))
    with pytest.raises(KeyboardInterrupt):
        small.save(tmp_path / "ix")
    calls.clear()
    with pytest.raises(KeyboardInterrupt):
        small.save(tmp_path / "fresh")
    assert uc.open_index(tmp_path / "ix").n_events == 7
    assert not (tmp_path / "fresh").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ix"]


def test_a_directory_without_manifest_is_refused(tmp_path):
    _example().save(tmp_path / "ix")
    (tmp_path / "ix" / "manifest.json").unlink()
    with pytest.raises(IndexFormatError, match=r"no manifest\.json"):
        uc.open_index(tmp_path / "ix")


def test_another_format_version_is_refused(tmp_path):
    _example().save(tmp_path / "ix")
    manifest = json.loads((tmp_path / "ix" / "manifest.json").read_text())
    manifest["format_version"] = 99
    (tmp_path / "ix" / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexFormatError, match="format version 99"):
        uc.open_index(tmp_path / "ix")


def test_the_rtree_file_survives_being_opened_many_times(tmp_path):
    _example().save(tmp_path / "ix")
    for _ in range(3):
        idx = uc.open_index(tmp_path / "ix")
        assert len(idx.query("PATTERN SEQ(A, B) DEFINE A AS d1 <= 9, B AS d1 <= 9")) > 0
        del idx


def test_a_manifest_missing_a_table_is_refused(tmp_path):
    _example().save(tmp_path / "ix")
    manifest = tmp_path / "ix" / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"packed/', '"gone/'))
    with pytest.raises(IndexFormatError, match="was edited or damaged"):
        uc.open_index(tmp_path / "ix")
    # Even with a matching checksum of its own, it lists no packed node table.
    data = json.loads(manifest.read_text())
    data["manifest_sha256"] = manifest_digest(data)
    manifest.write_text(json.dumps(data))
    with pytest.raises(IndexFormatError, match="no packed files"):
        uc.open_index(tmp_path / "ix")


def _flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("table", ["stats/time.parquet"])
def test_damaged_or_missing_files_that_opening_reads_are_refused(tmp_path, table):
    _example().save(tmp_path / "ix")
    path = tmp_path / "ix" / table
    _flip_a_byte(path)
    with pytest.raises(IndexFormatError, match=f"damaged: {table}"):
        uc.open_index(tmp_path / "ix")
    path.unlink()
    with pytest.raises(IndexFormatError, match=f"{table} is missing"):
        uc.open_index(tmp_path / "ix")


@pytest.mark.parametrize("table", ["events/part-00000.parquet", "packed/nodes.parquet",
                                   "packed/trees.parquet", "packed/groups.parquet",
                                   "rtree.dat", "rtree.idx"])
def test_damaged_stored_files_are_refused_when_a_working_copy_is_made_or_verified(
        tmp_path, monkeypatch, table):
    _example().save(tmp_path / "ix")
    _flip_a_byte(tmp_path / "ix" / table)
    with pytest.raises(IndexFormatError, match=f"damaged: {table}"):
        uc.open_index(tmp_path / "ix", verify=True)
    # With the working copy the save left, mapping reads none of them (but the events
    # table, whose text columns this archive has, which opening hashes); a host without
    # it makes one when the index is first used, hashing them first.
    if not table.startswith("events/"):
        assert uc.open_index(tmp_path / "ix").n_events == _example().n_events
    monkeypatch.setenv("UNCERTAIN_CEP_CACHE", str(tmp_path / "empty-cache"))
    opened = None if table.startswith("events/") else uc.open_index(tmp_path / "ix")
    with pytest.raises(IndexFormatError, match=f"damaged: {table}"):
        (opened or uc.open_index(tmp_path / "ix")).describe()
    (tmp_path / "ix" / table).unlink()
    with pytest.raises(IndexFormatError, match=f"{table} is missing"):
        uc.open_index(tmp_path / "ix")


def test_opening_a_missing_path_is_a_clear_error(tmp_path):
    with pytest.raises(IndexFormatError, match="does not exist"):
        uc.open_index(tmp_path / "nowhere")
