"""uc.build_index_spark takes the tables users already hold (pandas, pyarrow, any
``__arrow_c_stream__`` object) and a columns= mapping, and builds the in-process index:
the same answer, the same instants and the input's own time zone, whatever the session's."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import uncertain_cep as uc
from uncertain_cep.errors import InputError
from uncertain_cep.pipeline.sources import resolve_input
from uncertain_cep.pipeline.spark_reader import read_input

QUERY = ("PATTERN SEQ(A, B) DEFINE A AS x < 2.5, B AS x >= 2 WITHIN 30s "
         "CONFIDENCE 0.01")
COLUMNS = {"event_id": "reading_id", "t_lo": "start", "t_hi": "end"}


def _readings() -> pd.DataFrame:
    """Ten readings in the input's names, at times in +01:00 that cross a day in UTC."""
    base = pd.Timestamp("2024-03-31 00:59:50", tz="UTC").tz_convert("+01:00")
    starts = [0, 4, 9, 15, 1, 5, 8, 20, 2, 12]
    frame = pd.DataFrame({"reading_id": np.arange(100, 110, dtype=np.uint32),
                          "group": ["g"] * 5 + ["h"] * 5,
                          "start": [base + pd.Timedelta(seconds=s) for s in starts],
                          "x": [1.0, 2.0, 3.0, 1.5, 2.5, 3.5, 2.2, 1.0, 3.0, 1.2]})
    frame["end"] = frame["start"] + pd.Timedelta(seconds=3)
    return frame


def test_an_arrow_table_with_columns_builds_the_in_process_index(spark, tmp_path):
    frame = _readings()
    want = pd.DataFrame(uc.build_index(frame, time_unit="1s", columns=COLUMNS).query(QUERY))
    assert len(want) >= 3, want
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "Asia/Tokyo")
    try:
        summary = uc.build_index_spark(pa.Table.from_pandas(frame), tmp_path / "ix",
                                       time_unit="1s", columns=COLUMNS, spark=spark,
                                       partitions=2, log=lambda _: None)
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)
    assert summary.events == len(frame)
    got = pd.DataFrame(uc.open_index(tmp_path / "ix").query(QUERY))
    # Rows, confidences, and t_first/t_last as the same instants in the input's zone.
    pd.testing.assert_frame_equal(got, want)
    manifest = json.loads((tmp_path / "ix" / "manifest.json").read_text())
    assert manifest["build"]["input"] == ["the given Table"]
    assert len(manifest["input_fingerprint"]) == 64     # the events table's, as a DataFrame's


def _jobs(spark) -> set[int]:
    return set(spark.sparkContext.statusTracker().getJobIdsForGroup(None))


def test_naive_times_reach_spark_as_the_same_wall_times_in_any_session_zone(spark):
    # A wall time that does not exist in Berlin (the spring-forward gap) stays as it is.
    naive = pd.to_datetime(["2024-03-31 02:30:01", "2024-01-01 00:00:00"])
    table = pa.table({"event_id": [1, 2], "t_lo": pa.array(naive, pa.timestamp("us")),
                      "aware": pa.array(naive.tz_localize("UTC"), pa.timestamp("us", "UTC"))})
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "Europe/Berlin")
    try:
        frame = read_input(spark, resolve_input(table))
        types = {f.name: f.dataType.simpleString() for f in frame.schema.fields}
        rows = frame.selectExpr("cast(t_lo as string)", "unix_micros(aware)").collect()
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)
    assert types == {"event_id": "bigint", "t_lo": "timestamp_ntz", "aware": "timestamp"}
    assert [r[0] for r in rows] == ["2024-03-31 02:30:01", "2024-01-01 00:00:00"]
    assert [r[1] for r in rows] == (naive.tz_localize("UTC").asi8 // 1000).tolist()


@pytest.mark.parametrize(("columns", "says"), [
    ({"t_lo": "start"}, "columns= renames 'start' to 't_lo', but the input has a column "
     "'t_lo' too"),
    ({"event_id": "reading"}, "the input has no column 'reading' (its columns: "
     "['reading_id', 'group', 'start', 'x', 'end', 't_lo'])"),
])
def test_columns_that_contradict_the_spark_schema_fail_before_any_job(spark, tmp_path,
                                                                      columns, says):
    source = spark.createDataFrame(_readings().drop(columns="reading_id")
                                   .assign(reading_id=range(10), t_lo=1)
                                   [["reading_id", "group", "start", "x", "end", "t_lo"]])
    jobs = _jobs(spark)
    with pytest.raises(InputError) as e:
        uc.build_index_spark(source, tmp_path / "ix", time_unit="1s", columns=columns,
                             partitions=2, log=lambda _: None)
    assert says in str(e.value)
    assert _jobs(spark) == jobs
    assert not (tmp_path / "ix").exists()


def test_a_table_of_unsigned_ids_past_int64_is_refused_naming_the_column(spark, tmp_path):
    table = pa.table({"reading_id": pa.array([2**63 + 1], pa.uint64()), "group": ["g"],
                      "t_lo": [1], "t_hi": [2]})
    with pytest.raises(InputError, match="column 'reading_id' of the given Table holds "
                                         "uint64 values that Spark has no type for"):
        uc.build_index_spark(table, tmp_path / "ix", columns={"event_id": "reading_id"},
                             spark=spark, log=lambda _: None)


def test_tables_of_this_process_resolve_before_spark_starts():
    spec = resolve_input(_readings(), columns=COLUMNS)
    assert (spec.kind, spec.label) == ("memory", "the given pandas DataFrame")
    assert isinstance(spec.value, pa.Table) and spec.source_name("t_lo") == "start"
    # The table's columns are known here: a mapping they contradict fails at once.
    with pytest.raises(InputError, match="the input has no column 'begin'"):
        resolve_input(pa.Table.from_pandas(_readings()), columns={"t_lo": "begin"})
    with pytest.raises(InputError, match="a pandas DataFrame, an Arrow table or stream"):
        resolve_input(3)


def test_a_spark_dataframe_is_not_collected_by_the_in_process_builder(spark):
    frame = spark.createDataFrame(pd.DataFrame({"event_id": [1], "group": "g", "t_lo": [1],
                                                "t_hi": [2]}))
    jobs = _jobs(spark)
    with pytest.raises(InputError, match=r"got DataFrame \(a Spark DataFrame stays in "
                                         r"Spark: pass it to uc.build_index_spark"):
        uc.build_index(frame)
    assert _jobs(spark) == jobs
