"""uncertain_cep.input_tables: what counts as an Arrow input, its pandas form, and the
``columns=`` mapping with every conflict it refuses."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uncertain_cep.errors import InputError, InvalidOptionError
from uncertain_cep.input_tables import (
    ArchiveColumn,
    ColumnLabels,
    arrow_table,
    arrow_to_pandas,
    check_column_mapping,
    is_arrow_stream,
    rename_columns,
)


def _table() -> pa.Table:
    """Columns of every kind an archive holds, with the types pandas might get wrong."""
    stamps = pd.date_range("2024-03-31 00:59:58", periods=3, freq="s", tz="Europe/Paris")
    return pa.table({
        "big_id": pa.array([2**63 + 1, 2**64 - 1, 3], pa.uint64()),
        "small": pa.array([1, 2, 3], pa.int8()),
        "with_null": pa.array([1, None, 3], pa.int64()),
        "x": pa.array([0.5, np.nan, 2.0]),
        "tag": pa.array(["a", None, "c"]),
        "kind": pa.array(["p", "q", "p"]).dictionary_encode(),
        "flag": pa.array([True, False, True]),
        "aware_us": pa.array(stamps, pa.timestamp("us", tz="Europe/Paris")),
        "aware_ns": pa.array(stamps, pa.timestamp("ns", tz="+01:00")),
        "naive_ms": pa.array(stamps.tz_localize(None), pa.timestamp("ms")),
        "day": pa.array([pd.Timestamp("2024-01-01").date()] * 3, pa.date32()),
    })


@pytest.mark.parametrize("make", [
    lambda t: t, lambda t: t.to_batches()[0], lambda t: pa.RecordBatchReader.from_batches(
        t.schema, t.to_batches()), lambda t: duckdb.connect().from_arrow(t)],
    ids=["table", "record_batch", "batch_reader", "duckdb_relation"])
def test_arrow_objects_are_streams_and_pandas_is_not(make):
    assert is_arrow_stream(make(_table()))
    frame = _table().to_pandas()
    assert not is_arrow_stream(frame)
    assert not is_arrow_stream(frame["x"])
    assert not any(is_arrow_stream(x) for x in ([1, 2], {"a": [1]}, "events.parquet", None))


def test_an_arrow_table_reads_as_pandas_reads_its_parquet_file(tmp_path):
    table = _table()
    pq.write_table(table, tmp_path / "t.parquet")
    expected = pd.read_parquet(tmp_path / "t.parquet")
    got = arrow_to_pandas(table)
    pd.testing.assert_frame_equal(got, expected)
    # What the archive relies on: ids past int64 keep their value, times their unit and
    # zone, integers without nulls stay integers, strings are objects.
    assert got["big_id"].dtype == np.uint64 and got["big_id"].iloc[1] == 2**64 - 1
    assert str(got["aware_us"].dtype) == "datetime64[us, Europe/Paris]"
    assert got["small"].dtype == np.int8
    assert got["tag"].dtype == object


def test_a_stream_is_read_once_to_its_end():
    table = _table()
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=1))
    pd.testing.assert_frame_equal(arrow_to_pandas(reader), table.to_pandas())


def test_an_array_that_is_no_table_is_an_input_error_with_its_cause():
    with pytest.raises(InputError, match="could not read the Int64Array as an Arrow table") as e:
        arrow_table(pa.array([1, 2]))
    assert isinstance(e.value.__cause__, pa.ArrowException)


@pytest.mark.parametrize("columns", [None, {}, {"event_id": "event_id"}])
def test_no_mapping_or_names_mapped_to_themselves_rename_nothing(columns):
    frame = pd.DataFrame({"event_id": [1], "t_lo": [1], "t_hi": [2]})
    assert check_column_mapping(columns, frame.columns) == {}
    assert rename_columns(frame, columns) is frame


def test_renaming_copies_no_column_and_leaves_the_input_as_it_was():
    frame = pd.DataFrame({"reading_id": np.arange(5), "start": np.arange(5.0)})
    out = rename_columns(frame, {"event_id": "reading_id", "t_lo": "start"})
    assert list(out.columns) == ["event_id", "t_lo"]
    assert list(frame.columns) == ["reading_id", "start"]
    assert np.shares_memory(out["event_id"].to_numpy(), frame["reading_id"].to_numpy())
    assert np.shares_memory(out["t_lo"].to_numpy(), frame["start"].to_numpy())


def test_columns_may_trade_names():
    # The input's t_lo is its end: renamed away at the same time, so nothing is ambiguous.
    frame = pd.DataFrame({"t_lo": [5], "t_hi": [1]})
    out = rename_columns(frame, {"t_lo": "t_hi", "t_hi": "t_lo"})
    assert out[["t_lo", "t_hi"]].iloc[0].tolist() == [1, 5]


def test_an_unknown_name_lists_the_valid_ones_and_a_swapped_pair_is_named():
    with pytest.raises(InvalidOptionError) as e:
        check_column_mapping({"start": "t_lo"}, ["t_lo"])
    message = str(e.value)
    assert "'start' is not a valid archive column" in message
    assert all(repr(m.value) in message for m in ArchiveColumn)
    assert "did you mean {'t_lo': 'start'}" in message
    with pytest.raises(InvalidOptionError, match="keys are the archive's names"):
        check_column_mapping({"group": "person"}, ["person"])


@pytest.mark.parametrize(("columns", "available", "says"), [
    ({"event_id": "reading"}, ["reading_id", "start"],
     "the input has no column 'reading' (its columns: ['reading_id', 'start']); map "
     "'event_id' to one of them"),
    ({"t_lo": "time", "t_hi": "time"}, ["time"],
     "columns= maps both 't_lo' and 't_hi' to column 'time'; a column can be renamed once "
     "(for events whose time is certain, map 't' alone: columns={'t': 'time'})"),
    ({"event_id": "id", "t": "id"}, ["id"],
     "columns= maps both 'event_id' and 't' to column 'id'; a column can be renamed once"),
    ({"t_lo": "start"}, ["start", "t_lo", "t_hi"],
     "columns= renames 'start' to 't_lo', but the input has a column 't_lo' too (its "
     "columns: ['start', 't_lo', 't_hi']): which one is meant? Drop or rename the input's "
     "'t_lo' column, or leave 't_lo' out of columns="),
    ({"t": "when"}, ["when", "t_lo", "t_hi"],
     "columns= maps 't' (one time column, for certain times) to 'when', but the input "
     "also has t_lo/t_hi"),
    ({"event_id": 3}, ["id"], "columns={'event_id': 3}: the value must be the name"),
    (["event_id", "id"], ["id"], "columns= takes a mapping from the archive's names to "
     "yours, e.g. columns={'event_id': 'reading_id'}; got list"),
])
def test_each_conflict_is_an_input_error_saying_what_to_do(columns, available, says):
    with pytest.raises(InputError) as e:
        check_column_mapping(columns, available)
    assert says in str(e.value)


def test_labels_name_renamed_columns_as_the_input_does():
    labels = ColumnLabels({"event_id": "reading_id"})
    assert labels.quoted("event_id") == "'reading_id' (event_id)"
    assert labels.plain("event_id") == "reading_id (event_id)"
    assert labels.quoted("t_lo") == "'t_lo'" and labels.plain("t_lo") == "t_lo"


_NAMES = [m.value for m in ArchiveColumn if m.value != "t"]


@settings(max_examples=30, deadline=None)
@given(st.permutations(["c0", "c1", "c2"]), st.lists(st.booleans(), min_size=3, max_size=3))
def test_renaming_then_naming_back_gives_the_input(theirs, renamed):
    # Any mapping of some archive names to distinct columns of the input renames exactly
    # those columns, keeps their data and order, and the reverse renaming undoes it.
    frame = pd.DataFrame({c: [i] for i, c in enumerate(["c0", "c1", "c2"])})
    columns = {ours: col for ours, col, keep in zip(_NAMES, theirs, renamed) if keep}
    out = rename_columns(frame, columns)
    assert out.to_numpy().tolist() == frame.to_numpy().tolist()
    assert set(out.columns) == ({"c0", "c1", "c2"} - set(columns.values())) | set(columns)
    back = dict(columns)     # ours -> theirs: the renaming undone
    assert list(out.rename(columns=back).columns) == list(frame.columns)
