"""uc.build_index and uc.match take the tables users already hold (a pyarrow Table, a
RecordBatchReader, a DuckDB relation) and give exactly the pandas frame's answer; columns=
names the archive's columns as the input does, and messages then name the input's."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import uncertain_cep as uc
from uncertain_cep.errors import InputError, InvalidOptionError

ZONE = "Europe/Paris"
QUERY = ("PATTERN SEQ(A, NOT B, C) DEFINE A AS x < 3, B AS tag = 'hall', C AS x >= 2 "
         "WITHIN 20s CONFIDENCE 0.05")
COLUMNS = {"event_id": "reading_id", "t_lo": "start", "t_hi": "end"}


def _archive() -> pd.DataFrame:
    """Readings of three people around Paris' change to summer time, with unsigned ids
    past int64's largest value, in the archive's own column names."""
    base = pd.Timestamp("2024-03-31 01:59:40", tz=ZONE)
    starts = [0, 3, 7, 12, 18, 1, 5, 9, 14, 2, 6, 11]
    return pd.DataFrame({
        "event_id": np.array([2**63 + i for i in range(9)] + [1, 2, 3], dtype=np.uint64),
        "group": ["p"] * 5 + ["q"] * 4 + ["r"] * 3,
        "t_lo": [base + pd.Timedelta(seconds=s) for s in starts],
        "t_hi": [base + pd.Timedelta(seconds=s + 4) for s in starts],
        "x": [1.0, 2.5, 3.0, 1.5, 4.0, 2.0, 1.0, 3.5, 2.2, 0.5, 2.5, 3.0],
        "tag": ["room", "hall", "room", "room", "hall", "room", "room", "hall", "room",
                "room", "room", "hall"],
    })


def _answer(data: object, **options: object) -> pd.DataFrame:
    res = uc.build_index(data, time_unit="1s", **options).query(QUERY)
    return pd.DataFrame(res)


@pytest.fixture(scope="module")
def want() -> pd.DataFrame:
    answer = _answer(_archive())
    assert len(answer) >= 4, answer
    assert max(e for row in answer["events"] for e in row) > 2**63
    return answer


def _duckdb(frame: pd.DataFrame) -> duckdb.DuckDBPyRelation:
    """The archive through a real DuckDB query: times as TIMESTAMPTZ, which DuckDB hands
    over in its session's zone (set to the frame's), ids as UBIGINT."""
    con = duckdb.connect(config={"threads": 1})
    con.execute(f"SET TimeZone = '{ZONE}'")
    con.register("readings", frame)
    return con.sql("SELECT event_id::UBIGINT AS event_id, \"group\", t_lo, t_hi, x, tag "
                   "FROM readings WHERE x >= 0 ORDER BY t_lo")


@pytest.mark.parametrize("make", [
    lambda f: pa.Table.from_pandas(f),
    lambda f: pa.RecordBatchReader.from_batches(
        pa.Table.from_pandas(f).schema, pa.Table.from_pandas(f).to_batches(max_chunksize=5)),
    _duckdb,
], ids=["pyarrow_table", "record_batch_reader", "duckdb_relation"])
def test_arrow_inputs_answer_exactly_as_the_pandas_frame(make, want):
    data = make(_archive())
    assert not isinstance(data, pd.DataFrame)
    idx = uc.build_index(data, time_unit="1s")
    got = pd.DataFrame(idx.query(QUERY))
    pd.testing.assert_frame_equal(got, want)
    # The index holds the same archive: ids of the same width, times of the same zone.
    assert idx.archive.event_ids.dtype == np.uint64
    assert idx.archive.time_axis == uc.build_index(_archive(), time_unit="1s").archive.time_axis


def test_columns_renames_the_input_to_the_archive_names(want):
    theirs = _archive().rename(columns=COLUMNS)
    pd.testing.assert_frame_equal(_answer(theirs, columns=COLUMNS), want)
    pd.testing.assert_frame_equal(_answer(pa.Table.from_pandas(theirs), columns=COLUMNS),
                                  want)


def test_a_point_time_column_can_be_renamed_too():
    frame = pd.DataFrame({"id": [1, 2, 3], "group": "g", "when": [1, 2, 3],
                          "x": [1.0, 5.0, 9.0]})
    idx = uc.build_index(frame, columns={"event_id": "id", "t": "when"})
    assert idx.archive.t_lo.tolist() == idx.archive.t_hi.tolist() == [1, 2, 3]


def test_the_input_is_left_as_it_was():
    theirs = _archive().rename(columns=COLUMNS)
    before = theirs.copy()
    uc.build_index(theirs, time_unit="1s", columns=COLUMNS)
    pd.testing.assert_frame_equal(theirs, before)


def _renamed(**changes: object) -> pd.DataFrame:
    return _archive().rename(columns=COLUMNS).assign(**changes)


@pytest.mark.parametrize(("frame", "says"), [
    (lambda: _renamed(start=[pd.NaT, *_archive()["t_lo"][1:]]),
     "(row 0): column 'start' (t_lo) is missing or NaN"),
    (lambda: _renamed(reading_id=[None, *range(1, 12)]),
     "row 0: column 'reading_id' (event_id) is missing"),
    (lambda: _renamed(reading_id=[7] * 12), "reading_id (event_id) 7 appears 12 times"),
    (lambda: _renamed(end=_archive()["t_lo"] - pd.Timedelta(seconds=1)),
     "start (t_lo) = 1711846780 is greater than end (t_hi) = 1711846779"),
    (lambda: _renamed(end=list(range(12))),
     "the time columns must be datetimes in one time zone (or all naive), since answers "
     "are given in it: start (t_lo) is in Europe/Paris, end (t_hi) is not datetimes"),
])
def test_errors_about_renamed_columns_name_the_input_columns(frame, says):
    with pytest.raises(InputError) as e:
        uc.build_index(frame(), time_unit="1s", columns=COLUMNS)
    assert says in str(e.value)


@pytest.mark.parametrize(("drop", "says"), [
    ("event_id", "the archive has no 'event_id' column (columns: ['group', 't_lo', 't_hi', "
     "'x', 'tag']); every event needs a unique event_id: if the input calls it otherwise, "
     "pass columns={'event_id': '<its name>'}"),
    ("t_hi", "the archive has t_lo/t_hi only in part: column 't_hi' is missing (its pair "
     "is column 't_lo'); if the input calls it otherwise, pass columns={'t_hi': "
     "'<its name>'}"),
])
def test_a_missing_column_says_how_to_name_it_with_columns(drop, says):
    with pytest.raises(InputError) as e:
        uc.build_index(_archive().drop(columns=drop), time_unit="1s")
    assert says in str(e.value)


def test_missing_time_columns_say_how_to_name_them_with_columns():
    with pytest.raises(InputError, match=r"pass columns=\{'t_lo': '<its name>', 't_hi': "):
        uc.build_index(_archive().drop(columns=["t_lo", "t_hi"]))


@pytest.mark.parametrize(("columns", "error", "says"), [
    ({"event_id": "reading"}, InputError, "the input has no column 'reading'"),
    ({"t_lo": "start", "t_hi": "start"}, InputError, "maps both 't_lo' and 't_hi'"),
    ({"t_lo": "start", "event_id": "reading_id"}, InputError,
     "the input has a column 't_lo' too"),
    ({"reading_id": "event_id"}, InvalidOptionError,
     "did you mean {'event_id': 'reading_id'}"),
])
def test_conflicting_columns_are_refused_before_any_row_is_read(columns, error, says):
    frame = _renamed(t_lo=1)
    with pytest.raises(error) as e:
        uc.build_index(frame, time_unit="1s", columns=columns)
    assert says in str(e.value)


def test_an_unsupported_input_lists_what_is_accepted():
    with pytest.raises(InputError) as e:
        uc.build_index([{"event_id": 1}])
    message = str(e.value)
    for accepted in ("a pandas DataFrame", "__arrow_c_stream__", "a DuckDB relation",
                     "Parquet or CSV file", "got list"):
        assert accepted in message


def test_match_takes_an_arrow_table_and_a_duckdb_relation():
    events = pd.DataFrame({"car": [1] * 6 + [2] * 6, "time": list(range(6)) * 2,
                           "accel": [9, 9, 1, 1, -10, -10] * 2,
                           "speed": [60, 75, 80, 80, 72, 50, 60, 60, 60, 60, 60, 60]})
    query = ("PARTITION BY car DEFINE A AS accel > 8, B AS speed > 70, C AS accel < -9 "
             "PATTERN A overlaps B AND C during B; B overlaps C")
    want = uc.match(events, query)
    assert len(want) == 1
    pd.testing.assert_frame_equal(uc.match(pa.Table.from_pandas(events), query), want)
    con = duckdb.connect(config={"threads": 1})
    con.register("events", events)
    pd.testing.assert_frame_equal(uc.match(con.sql("SELECT * FROM events"), query), want)
    with pytest.raises(InputError, match="__arrow_c_stream__"):
        uc.match({"time": [1]}, query)
