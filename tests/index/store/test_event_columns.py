"""The archive of an index as memory-mapped columns (of its working copy): equal to the
archive the events table holds, read without reading the events table when it has no text
and the working copy is there."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from random_archives import archives

import uncertain_cep as uc
from uncertain_cep.errors import IndexFormatError
from uncertain_cep.index.rtree_boxes import EventLayout
from uncertain_cep.index.store.layout import EVENT_ARRAYS, EVENT_COLUMNS, EVENTS
from uncertain_cep.index.store.manifest import Manifest
from uncertain_cep.index.store.reader import open_reader
from uncertain_cep.index.store.working_copy import working_copy
from uncertain_cep.model.events import Archive, read_archive


def archive_from_events(events: pd.DataFrame, manifest: Manifest
                        ) -> tuple[Archive, EventLayout]:
    """The archive and layout the events table holds (what the mapped columns are made
    from), read as an archive file is."""
    archive = read_archive(events.drop(columns=list(EVENT_COLUMNS)),
                           group_by=manifest.group_by, check_unique_ids=False)
    archive = dataclasses.replace(archive, time_axis=manifest.time_axis)
    pos, t_min, t_max, code_lo, code_hi = (events[c].to_numpy() for c in EVENT_COLUMNS)
    return archive, EventLayout(positions=pos.astype(np.int64), t_min=t_min.astype(np.int64),
                                t_max=t_max.astype(np.int64),
                                code_lo=code_lo.astype(np.float64),
                                code_hi=code_hi.astype(np.float64))


def _assert_same_archive(mapped: Archive, stored: Archive) -> None:
    for field in dataclasses.fields(Archive):
        a, b = getattr(mapped, field.name), getattr(stored, field.name)
        if field.name == "numeric":
            assert list(a) == list(b)
            for name in b:
                for bound in ("lo", "hi", "mu", "sigma"):
                    x, y = getattr(a[name], bound), getattr(b[name], bound)
                    assert (x is None) == (y is None), (name, bound)
                    if y is not None:
                        assert x.dtype == y.dtype
                        np.testing.assert_array_equal(x, y)
        elif field.name == "categorical":
            assert list(a) == list(b)
            for name in b:
                assert a[name].dtype == b[name].dtype
                assert a[name].tolist() == b[name].tolist()
        elif isinstance(b, np.ndarray):
            assert a.dtype == b.dtype, field.name
            # Element types too: ids and labels come back as the same Python objects.
            assert [type(v) for v in a.tolist()] == [type(v) for v in b.tolist()]
            assert a.tolist() == b.tolist(), field.name
        else:
            assert a == b, field.name


def _assert_same_layout(mapped: EventLayout, stored: EventLayout) -> None:
    for field in dataclasses.fields(EventLayout):
        a, b = getattr(mapped, field.name), getattr(stored, field.name)
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


@st.composite
def varied_archives(draw: st.DrawFn) -> pd.DataFrame:
    """Random archives with integer or string ids, integer or string group keys, and with
    or without a categorical attribute."""
    df = draw(archives(max_groups=3, max_events=9))
    if draw(st.booleans()):
        df["event_id"] = [f"e {i}" for i in df["event_id"]]
    if draw(st.booleans()):
        df["group"] = df["group"].str[1:].astype(np.int64) * 7
    if draw(st.booleans()):
        df = df.drop(columns=["tag"])
    order = draw(st.permutations(range(len(df))))
    return df.iloc[list(order)].reset_index(drop=True)


@settings(max_examples=30, deadline=None)
@given(df=varied_archives())
def test_the_mapped_archive_equals_the_archive_in_the_events_table(tmp_path_factory, df):
    path = tmp_path_factory.mktemp("ix") / "index"
    uc.build_index(df).save(path)
    reader = open_reader(path)
    opened = reader.load()
    archive, layout = archive_from_events(reader._read_table(EVENTS), reader.manifest)
    _assert_same_archive(opened.archive, archive)
    _assert_same_layout(opened.layout, layout)
    assert isinstance(opened.archive.t_lo, np.memmap)
    assert isinstance(opened.archive.group_of, np.memmap)


def test_datetime_archives_keep_their_instants_and_time_axis(tmp_path):
    df = pd.DataFrame({"event_id": [1, 2, 3], "group": ["a", "a", "b"],
                       "t_lo": pd.to_datetime(["2024-01-01 00:00:00", "2024-01-01 00:00:02",
                                               "2024-01-01 00:00:01"]).tz_localize("UTC"),
                       "t_hi": pd.to_datetime(["2024-01-01 00:00:01", "2024-01-01 00:00:03",
                                               "2024-01-01 00:00:04"]).tz_localize("UTC"),
                       "x": [1.0, 2.0, 3.0]})
    idx = uc.build_index(df, time_unit="1s")
    idx.save(tmp_path / "ix")
    reader = open_reader(tmp_path / "ix")
    archive, _ = archive_from_events(reader._read_table(EVENTS), reader.manifest)
    opened = reader.load()
    _assert_same_archive(opened.archive, archive)
    query = "PATTERN SEQ(A, B) DEFINE A AS x < 2, B AS x >= 2 WITHIN 3s"
    answer = uc.open_index(tmp_path / "ix").query(query)
    assert len(answer) > 0
    pd.testing.assert_frame_equal(pd.DataFrame(answer), pd.DataFrame(idx.query(query)))


def test_an_archive_without_text_opens_its_working_copy_without_reading_its_events_table(
        tmp_path):
    df = pd.DataFrame({"event_id": [1, 2, 3, 4], "group": [0, 0, 1, 1],
                       "t_lo": [1, 2, 1, 5], "t_hi": [2, 3, 4, 6], "x": [1.0, 2.0, 3.0, 4.0]})
    uc.build_index(df).save(tmp_path / "ix")
    for part in (tmp_path / "ix" / EVENTS).glob("*.parquet"):
        # Not read, so not hashed when opened (verify=True hashes every file).
        part.write_bytes(b"not parquet")
    query = "PATTERN SEQ(A, B) DEFINE A AS x < 2, B AS x >= 2 WITHIN 5"
    assert len(uc.open_index(tmp_path / "ix").query(query)) > 0
    with pytest.raises(IndexFormatError, match="damaged"):
        uc.open_index(tmp_path / "ix", verify=True)


def test_an_archive_with_text_hashes_its_events_table_when_opened(tmp_path):
    df = pd.DataFrame({"event_id": ["a", "b"], "group": [0, 0], "t_lo": [1, 2],
                       "t_hi": [2, 3], "tag": ["x", "y"]})
    uc.build_index(df).save(tmp_path / "ix")
    part = next((tmp_path / "ix" / EVENTS).glob("*.parquet"))
    data = bytearray(part.read_bytes())
    data[len(data) // 2] ^= 0xFF
    part.write_bytes(bytes(data))
    with pytest.raises(IndexFormatError, match="damaged"):
        uc.open_index(tmp_path / "ix")


def test_a_truncated_event_column_of_the_working_copy_is_made_again(tmp_path):
    df = pd.DataFrame({"event_id": [1, 2], "group": [0, 0], "t_lo": [1, 2], "t_hi": [2, 3]})
    uc.build_index(df).save(tmp_path / "ix")
    reader = open_reader(tmp_path / "ix")
    column = working_copy(reader.root, reader.manifest, verified=True) / EVENT_ARRAYS / "t_hi.npy"
    column.write_bytes(column.read_bytes()[:-8])
    assert uc.open_index(tmp_path / "ix").archive.t_hi.tolist() == [2, 3]
    assert len(np.load(column)) == 2


def test_a_write_to_an_opened_archive_never_reaches_its_files(tmp_path):
    df = pd.DataFrame({"event_id": [1, 2], "group": [0, 0], "t_lo": [1, 2], "t_hi": [2, 3],
                       "x": [0.0, 1.0]})
    uc.build_index(df).save(tmp_path / "ix")
    archive = open_reader(tmp_path / "ix").load().archive
    archive.numeric["x"].lo[0] = 5.0   # copy-on-write: this process's copy only
    archive.numeric["x"].lo.flush()
    assert open_reader(tmp_path / "ix").load().archive.numeric["x"].lo[0] == 0.0
    pd.testing.assert_frame_equal(uc.open_index(tmp_path / "ix").query(
        "PATTERN SEQ(A) DEFINE A AS x > 0.5"), uc.build_index(df).query(
        "PATTERN SEQ(A) DEFINE A AS x > 0.5"))
