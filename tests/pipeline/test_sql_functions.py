"""SQL's ``uc_query`` and ``uc_match`` answer the rows and types of ``uc.query_spark`` and
``uc.match_spark`` (issue "Spark SQL access", item 4), on the classic session here; the
Spark Connect run is in test_spark_connect.py, the session time zones in zone_cases.py."""

from __future__ import annotations

import pandas as pd
import pytest

import uncertain_cep as uc
from uncertain_cep.pipeline import sql_functions

QUERY = "PATTERN SEQ(A, B, C) DEFINE A AS x < 4, B AS x > 3, C AS x > 5 WITHIN 6 CONFIDENCE 0.05"
MATCH = "PARTITION BY car DEFINE A AS accel > 8, B AS speed > 70 PATTERN A overlaps B"


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    rows = [{"event_id": 100 + i, "group": f"g{i % 3}", "t_lo": i, "t_hi": i + 1 + i % 3,
             "x": float(i % 8)} for i in range(30)]
    path = tmp_path_factory.mktemp("sql") / "ix"
    uc.build_index(pd.DataFrame(rows)).save(path)
    return path


def _cars() -> pd.DataFrame:
    accel = [9, 9, 1, 1, 9, 9, 1, 9, 9, 1]
    speed = [60, 75, 80, 60, 75, 80, 60, 71, 72, 50]
    return pd.DataFrame({"car": [c for c in (1, 2, 3) for _ in range(10)],
                         "time": list(range(10)) * 3,
                         "accel": accel + accel[::-1] + accel,
                         "speed": speed + speed[::-1] + speed[3:] + speed[:3]})


def test_the_project_session_has_the_functions_and_its_config_key_says_so(spark):
    assert spark.conf.get(sql_functions.CONFIG_KEY) == "true"
    names = {f.name for f in spark.catalog.listFunctions()}
    assert {"uc_query", "uc_match"} <= names, sorted(n for n in names if n.startswith("uc"))


def test_uc_query_answers_query_spark_rows_in_its_order_and_schema(spark, index_dir):
    want = uc.query_spark(str(index_dir), QUERY, spark=spark, slices=3)
    got = spark.sql(f"SELECT * FROM uc_query('{index_dir}', '{QUERY}')")
    assert got.schema == want.schema
    rows = got.collect()
    assert len(rows) > 10
    # The rows in the answer's order, without an ORDER BY.
    assert rows == want.collect()
    local = uc.open_index(index_dir).query(QUERY)
    assert [list(r.events) for r in rows] == [list(e) for e in local["events"]]
    assert [r.confidence for r in rows] == pytest.approx(local["confidence"].tolist(),
                                                         abs=1e-12)


def test_uc_query_takes_the_strategy_by_name_and_refuses_unknown_names(spark, index_dir):
    want = uc.query_spark(str(index_dir), QUERY, strategy="sequential", spark=spark)
    got = spark.sql(f"SELECT * FROM uc_query('{index_dir}', '{QUERY}', "
                    "strategy => 'sequential')")
    assert got.collect() == want.collect()
    with pytest.raises(Exception, match="uc_query has no argument 'slices'; its named "
                                        "arguments are strategy, verify"):
        spark.sql(f"SELECT * FROM uc_query('{index_dir}', '{QUERY}', slices => 2)").collect()


def test_uc_query_errors_name_the_argument_or_the_query_position(spark, index_dir):
    with pytest.raises(Exception, match="uc_query's argument 1 is the index path, a "
                                        "constant string"):
        spark.sql(f"SELECT * FROM uc_query(NULL, '{QUERY}')").collect()
    with pytest.raises(Exception, match=r"QueryError: .*'nope'"):
        spark.sql(f"SELECT * FROM uc_query('{index_dir}', 'PATTERN SEQ(A, B) "
                  "DEFINE A AS nope < 1 WITHIN 3')").collect()
    with pytest.raises(Exception, match=r"IndexFormatError: .*missing"):
        spark.sql(f"SELECT * FROM uc_query('{index_dir / 'missing'}', '{QUERY}')").collect()


def test_uc_match_answers_match_spark_rows_and_schema(spark):
    frame = spark.createDataFrame(_cars())
    frame.createOrReplaceTempView("sql_cars")
    want = uc.match_spark(frame, MATCH, spark=spark, partitions=3)
    got = spark.sql(f"SELECT * FROM uc_match(TABLE(sql_cars), '{MATCH}')")
    assert got.schema == want.schema
    order = ["car", "A_ts", "B_ts"]
    expected = uc.match(_cars(), MATCH)
    assert len(expected) >= 3
    assert sorted(got.collect()) == sorted(want.collect())
    pd.testing.assert_frame_equal(
        got.toPandas().sort_values(order).reset_index(drop=True), expected,
        check_dtype=False)


def test_uc_match_without_partition_by_takes_a_subquery_and_named_options(spark):
    cars = _cars().rename(columns={"time": "ts"})
    spark.createDataFrame(cars).createOrReplaceTempView("sql_cars_ts")
    query = "DEFINE A AS accel > 8, B AS speed > 70 PATTERN A overlaps B"
    got = spark.sql(f"SELECT * FROM uc_match(TABLE(SELECT * FROM sql_cars_ts WHERE car = 3), "
                    f"'{query}', time_column => 'ts')").toPandas()
    want = uc.match(cars[cars.car == 3].reset_index(drop=True), query, time_column="ts")
    assert len(want) >= 1
    pd.testing.assert_frame_equal(got.sort_values(["A_ts", "B_ts"]).reset_index(drop=True),
                                  want, check_dtype=False)


def test_uc_match_errors_say_what_the_arguments_are(spark):
    spark.createDataFrame(_cars()).createOrReplaceTempView("sql_cars_err")
    with pytest.raises(Exception, match="uc_match's argument 1 is the events table"):
        spark.sql(f"SELECT * FROM uc_match('sql_cars_err', '{MATCH}')").collect()
    with pytest.raises(Exception, match="not a valid match engine; choose one of"):
        spark.sql(f"SELECT * FROM uc_match(TABLE(sql_cars_err), '{MATCH}', "
                  "engine => 'fast')").collect()
    with pytest.raises(Exception, match="nope"):
        spark.sql("SELECT * FROM uc_match(TABLE(sql_cars_err), 'PARTITION BY nope DEFINE "
                  "A AS accel > 8 PATTERN A')").collect()
