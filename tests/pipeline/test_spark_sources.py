"""The Spark jobs as a Spark user calls them: DataFrames, tables and URIs in, lazy
DataFrames out, Spark's own errors as ours."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from index_checks import stored_tables

import uncertain_cep as uc
from uncertain_cep.errors import InputError

ROWS = [{"event_id": i, "group": f"g{i % 2}", "t_lo": i, "t_hi": i + 2, "x": float(i)}
        for i in range(10)]
QUERY = "PATTERN SEQ(A, B) DEFINE A AS x < 4, B AS x > 3 WITHIN 5 CONFIDENCE 0.1"
MATCH = ("PARTITION BY car DEFINE A AS accel > 8, B AS speed > 70 "
         "PATTERN A overlaps B")


def _assert_same_index(a: Path, b: Path) -> None:
    ta, tb = stored_tables(a), stored_tables(b)
    for name in ta:
        pd.testing.assert_frame_equal(ta[name], tb[name], check_like=True)


def _jobs(spark) -> set[int]:
    return set(spark.sparkContext.statusTracker().getJobIdsForGroup(None))


@pytest.fixture(scope="module")
def path_index(spark, tmp_path_factory):
    d = tmp_path_factory.mktemp("sources")
    pd.DataFrame(ROWS).to_parquet(d / "in.parquet", index=False)
    uc.build_index_spark(d / "in.parquet", d / "ix", spark=spark, partitions=2,
                         log=lambda _: None)
    return d


def test_a_dataframe_a_table_and_a_file_uri_build_the_path_build(spark, path_index,
                                                                   tmp_path):
    frame = spark.createDataFrame(pd.DataFrame(ROWS))
    frame.createOrReplaceTempView("uc_archive_view")
    for name, source in (("df", frame), ("table", "uc_archive_view"),
                         ("uri", (path_index / "in.parquet").as_uri())):
        summary = uc.build_index_spark(source, tmp_path / name, partitions=2,
                                       log=lambda _: None)
        assert summary.events == len(ROWS)
        _assert_same_index(tmp_path / name, path_index / "ix")
    manifest = json.loads((tmp_path / "table" / "manifest.json").read_text())
    assert manifest["build"]["input"] == ["table uc_archive_view"]
    assert len(manifest["input_fingerprint"]) == 64


def test_a_directory_with_partition_folders_reads_the_partition_column(spark, path_index,
                                                                       tmp_path):
    df = pd.DataFrame(ROWS)
    for g, part in df.groupby("group"):
        (tmp_path / "in" / f"group={g}").mkdir(parents=True)
        part.drop(columns="group").to_parquet(tmp_path / "in" / f"group={g}" / "p.parquet",
                                              index=False)
    uc.build_index_spark(tmp_path / "in", tmp_path / "ix", spark=spark, partitions=2,
                         log=lambda _: None)
    _assert_same_index(tmp_path / "ix", path_index / "ix")


def test_unknown_schemes_missing_tables_and_columns_are_input_errors(spark, tmp_path):
    with pytest.raises(InputError, match=r"nosuch://bucket/archive.*scheme"):
        uc.build_index_spark("nosuch://bucket/archive", tmp_path / "a", spark=spark)
    with pytest.raises(InputError, match="neither an existing file or directory nor a table"):
        uc.build_index_spark("no_such_table_here", tmp_path / "b", spark=spark)
    with pytest.raises(InputError, match=r"does not exist"):
        uc.build_index_spark(tmp_path / "missing.parquet", tmp_path / "c", spark=spark)
    frame = spark.createDataFrame(pd.DataFrame(ROWS).drop(columns=["event_id"]))
    with pytest.raises(InputError, match="no 'event_id' column"):
        uc.build_index_spark(frame, tmp_path / "d")
    # An output on a filesystem pyarrow does not know is refused before any job runs.
    with pytest.raises(InputError, match=r"nosuch://bucket/index.*pyarrow cannot open"):
        uc.build_index_spark(frame, "nosuch://bucket/index")
    assert not any(tmp_path.iterdir())


def test_the_cli_prints_one_line_for_an_unreadable_input(spark, tmp_path, capsys):
    from uncertain_cep.cli import main

    assert main(["build", "nosuch://bucket/archive", "--out", str(tmp_path / "ix")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "nosuch" in err
    assert "Traceback" not in err and "py4j" not in err and len(err.splitlines()) == 1


def test_nanosecond_timestamps_written_by_pandas_build(spark, tmp_path):
    start = pd.Timestamp("2024-01-01 08:00:00")
    df = pd.DataFrame({"event_id": range(6), "group": ["a", "a", "a", "b", "b", "b"],
                       "t_lo": [start + pd.Timedelta(seconds=3 * i) for i in range(6)],
                       "x": [1.0, 5.0, 2.0, 6.0, 3.0, 7.0]})
    df["t_hi"] = df["t_lo"] + pd.Timedelta(seconds=2)
    assert df["t_lo"].dtype == "datetime64[ns]"
    df.to_parquet(tmp_path / "ns.parquet", index=False)
    uc.build_index_spark(tmp_path / "ns.parquet", tmp_path / "ix", time_unit="1s",
                         spark=spark, partitions=2, log=lambda _: None)
    uc.build_index(df, time_unit="1s").save(tmp_path / "local")
    _assert_same_index(tmp_path / "ix", tmp_path / "local")
    # The session's own setting is back.
    assert spark.conf.get("spark.sql.legacy.parquet.nanosAsLong", None) in (None, "false")


def test_decimals_are_cast_when_exact_and_refused_when_not(spark, tmp_path, path_index):
    from pyspark.sql import functions as F

    base = spark.createDataFrame(pd.DataFrame(ROWS))
    exact = base.withColumn("x", F.col("x").cast("decimal(10,2)"))
    uc.build_index_spark(exact, tmp_path / "ix", partitions=2, log=lambda _: None)
    _assert_same_index(tmp_path / "ix", path_index / "ix")
    wide = base.withColumn("x", F.col("x").cast("decimal(30,10)"))
    with pytest.raises(InputError, match=r"column 'x' .*decimal\(30,10\).*cast\('double'\)"):
        uc.build_index_spark(wide, tmp_path / "wide")


def test_query_spark_is_a_lazy_dataframe_equal_to_the_in_process_answer(spark, path_index):
    from pyspark.sql import DataFrame

    before = _jobs(spark)
    answer = uc.query_spark(path_index / "ix", QUERY, spark=spark, slices=3)
    assert isinstance(answer, DataFrame)
    assert _jobs(spark) == before, "query_spark ran a Spark job before any action"
    assert answer.columns == ["events", "confidence", "t_first", "t_last"]
    assert answer.schema["events"].dataType.simpleString() == "array<bigint>"
    got = answer.toPandas()
    want = uc.open_index(path_index / "ix").query(QUERY)
    assert len(want) > 0
    assert [tuple(e) for e in got["events"]] == want["events"].tolist()
    assert got["confidence"].tolist() == want["confidence"].tolist()
    assert got["t_first"].tolist() == want["t_first"].tolist()
    assert got["t_last"].tolist() == want["t_last"].tolist()
    # And with its counters, for notebooks and the command line.
    res = uc.query_index(path_index / "ix", QUERY, engine="spark")
    pd.testing.assert_frame_equal(pd.DataFrame(res), pd.DataFrame(want))
    assert res.stats.engine == "spark" and res.stats.slices


def test_query_spark_writes_partitioned_parquet_from_the_executors(spark, path_index,
                                                                   tmp_path):
    answer = uc.query_spark(path_index / "ix", QUERY, spark=spark, slices=2)
    answer.write.partitionBy("t_first").parquet(str(tmp_path / "answers"))
    back = spark.read.parquet(str(tmp_path / "answers"))
    assert back.count() == len(uc.open_index(path_index / "ix").query(QUERY))


def test_cli_query_on_spark_writes_a_parquet_directory_from_the_executors(spark, path_index,
                                                                            tmp_path, capsys):
    from uncertain_cep import cli

    out = tmp_path / "answers"
    want = uc.open_index(path_index / "ix").query(QUERY)
    for _ in range(2):   # the second run replaces the first answer whole
        assert cli.main(["query", str(path_index / "ix"), QUERY, "--engine", "spark",
                         "--out", f"{out}/"]) == 0
        assert f"{len(want)} matches written to {out}/" in capsys.readouterr().out
        got = spark.read.parquet(str(out)).toPandas()
        assert sorted(zip(map(tuple, got["events"]), got["confidence"])) == \
            sorted(zip(want["events"], want["confidence"]))
        assert [p.name for p in tmp_path.iterdir()] == ["answers"]   # no draft left
        # Read back sorted, it is the in-process answer; so is the one streamed here.
        pd.testing.assert_frame_equal(uc.read_answer(out), pd.DataFrame(want),
                                      check_exact=True)
    streamed = uc.query_index(path_index / "ix", QUERY, out=tmp_path / "here", limit=3)
    assert streamed.rows == 3
    pd.testing.assert_frame_equal(uc.read_answer(tmp_path / "here"),
                                  pd.DataFrame(want.head(3)), check_exact=True)
    on_spark = uc.query_index(path_index / "ix", QUERY, engine="spark", limit=3,
                              out=tmp_path / "there")
    assert on_spark.rows == 3
    pd.testing.assert_frame_equal(uc.read_answer(tmp_path / "there"),
                                  pd.DataFrame(want.head(3)), check_exact=True)


def test_cli_query_refuses_a_directory_it_would_lose_files_in_or_cannot_write(path_index,
                                                                              tmp_path,
                                                                              capsys):
    from uncertain_cep import cli

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    assert cli.main(["query", str(path_index / "ix"), QUERY, "--engine", "spark",
                     "--out", f"{mine}/"]) == 1
    assert "holds files that are not a Spark answer" in capsys.readouterr().err
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]
    # In this process the answer streams there as it is found, into the same refusal.
    assert cli.main(["query", str(path_index / "ix"), QUERY, "--out", f"{mine}/"]) == 1
    assert "not an answer directory" in capsys.readouterr().err
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]


def test_match_spark_is_a_lazy_dataframe_equal_to_uc_match(spark, tmp_path):
    from pyspark.sql import DataFrame

    cars = pd.DataFrame({"car": [1] * 6 + [2] * 6, "time": list(range(6)) * 2,
                         "accel": [9, 9, 1, 1, 9, 9] * 2,
                         "speed": [60, 75, 80, 60, 75, 80, 50, 50, 75, 75, 50, 50]})
    frame = spark.createDataFrame(cars)
    before = _jobs(spark)
    found = uc.match_spark(frame, MATCH, partitions=2)
    assert isinstance(found, DataFrame)
    assert _jobs(spark) == before, "match_spark ran a Spark job before any action"
    want = uc.match(cars, MATCH)
    assert found.columns == list(want.columns)
    got = found.toPandas().sort_values(["car", "A_ts", "B_ts"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(got, want, check_dtype=False)
    pd.testing.assert_frame_equal(uc.match_spark_pandas(frame, MATCH), want)
