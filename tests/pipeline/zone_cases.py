"""The session time-zone cases, run by tests/pipeline/test_session_time_zones.py on a
classic session and, in a subprocess, on Spark Connect: every source (a DataFrame, a
table, a ``file:`` URI, a path) built in a session of every zone answers the in-process
build's instants, through the Python API and through SQL's ``uc_query`` and
``uc_match``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

import uncertain_cep as uc

ZONES = ("Europe/Berlin", "America/New_York", "Asia/Tokyo")
QUERY = ("PATTERN SEQ(A, B) DEFINE A AS x < 2.5, B AS x >= 2 WITHIN 30s "
         "CONFIDENCE 0.01")
# The input's own zone, unlike every session's: a shift by any offset shows.
INPUT_ZONE = "+01:00"


def archive() -> pd.DataFrame:
    """Events in two groups whose times cross a day in UTC and Berlin's summer time."""
    base = pd.Timestamp("2024-03-31 00:59:50", tz="UTC").tz_convert(INPUT_ZONE)
    starts = [0, 4, 9, 15, 1, 5, 8, 20]
    frame = pd.DataFrame({"event_id": range(len(starts)),
                          "group": ["g"] * 4 + ["h"] * 4,
                          "t_lo": [base + pd.Timedelta(seconds=s) for s in starts],
                          "x": [1.0, 2.0, 3.0, 1.5, 2.5, 3.5, 2.2, 1.0]})
    frame["t_hi"] = frame["t_lo"] + pd.Timedelta(seconds=3)
    return frame


def _seconds(stamps: pd.Series) -> list[int]:
    """Aware datetimes as whole seconds since the epoch."""
    return (stamps.dt.tz_convert("UTC").dt.tz_localize(None)
            .astype("datetime64[s]").astype("int64").tolist())


SOURCES = ("dataframe", "table", "uri", "path")


def check_every_source(spark: Any, folder: Path, zones: tuple[str, ...] = ZONES,
                       sources: tuple[str, ...] = SOURCES) -> list[str]:
    """Build the archive from each of ``sources`` in the first of ``zones`` (the archive
    crosses its summer time), and from a DataFrame in the others, and compare with the
    in-process build; returns the checks run (an AssertionError on a difference). Files
    carry their own zone, so only the DataFrame (and the table, a view of it) depends
    on the session's."""
    frame = archive()
    want = uc.build_index(frame, time_unit="1s").query(QUERY)
    assert len(want) >= 3, want
    instants = {c: _seconds(want[c]) for c in ("t_first", "t_last")}
    path = folder / "in.parquet"
    frame.to_parquet(path, index=False, coerce_timestamps="us")
    before = spark.conf.get("spark.sql.session.timeZone")
    uc.register(spark)
    done = []
    try:
        for zone in zones:
            spark.conf.set("spark.sql.session.timeZone", zone)
            df = spark.createDataFrame(frame)
            df.createOrReplaceTempView("uc_zone_archive")
            inputs = {"dataframe": (df, zone), "table": ("uc_zone_archive", zone),
                      "uri": (path.as_uri(), None), "path": (str(path), None)}
            for name, (source, answer_zone) in inputs.items():
                if name not in sources or (zone != zones[0] and name != "dataframe"):
                    continue
                out = folder / f"{zone.replace('/', '_')}-{name}"
                uc.build_index_spark(source, str(out), time_unit="1s", spark=spark,
                                     partitions=2, log=lambda _: None)
                where = f"{name} source in a {zone} session"
                got = uc.open_index(out).query(QUERY)
                assert [list(e) for e in got["events"]] == [list(e) for e in want["events"]]
                assert got["confidence"].tolist() == want["confidence"].tolist(), where
                for c in ("t_first", "t_last"):
                    # Files keep the input's zone; Spark's own timestamps show in the
                    # session's.
                    zone_shown = str(want[c].dt.tz) if answer_zone is None else answer_zone
                    assert str(got[c].dt.tz) == zone_shown, (where, got[c].dt.tz)
                    assert _seconds(got[c]) == instants[c], (where, c)
                lazy = uc.query_spark(str(out), QUERY, spark=spark, slices=2)
                seconds = lazy.selectExpr("cast(t_first as long) AS f",
                                          "cast(t_last as long) AS l").toPandas()
                assert seconds["f"].tolist() == instants["t_first"], (where, "query_spark")
                assert seconds["l"].tolist() == instants["t_last"], (where, "query_spark")
                if name == "dataframe":
                    # SQL's uc_query answers the same instants in every zone.
                    sql = spark.sql(f"SELECT cast(t_first AS long) AS f, cast(t_last AS "
                                    f"long) AS l FROM uc_query('{out}', '{QUERY}')").toPandas()
                    assert sql["f"].tolist() == instants["t_first"], (where, "uc_query")
                    assert sql["l"].tolist() == instants["t_last"], (where, "uc_query")
                done.append(where)
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)
    return done


MATCH = ("PARTITION BY car_id DEFINE A AS accel > 8, B AS speed > 70 "
         "PATTERN A overlaps B WITHIN 10s")


def check_matches_in_every_zone(spark: Any, zones: tuple[str, ...] = ZONES) -> int:
    """Part B on Spark: point events across New York's change to summer time match as
    :func:`uncertain_cep.match` matches them, collected or lazy, in every zone."""
    start = pd.Timestamp("2024-03-10 06:59:57", tz="UTC")    # New York's clocks jump at 07:00
    cars = pd.DataFrame({"car_id": [1] * 6 + [2] * 6,
                         "time": [start + pd.Timedelta(seconds=s) for s in range(6)] * 2,
                         "accel": [9, 9, 1, 1, -10, -10, 9, 9, 9, 1, -10, -10],
                         "speed": [60, 75, 80, 80, 72, 50, 60, 60, 75, 75, 60, 60]})
    want = uc.match(cars, MATCH, tick="1s")
    assert len(want) >= 2, want
    stamps = [c for c in want.columns if c.endswith(("_ts", "_te")) or c == "detected_at"]
    before = spark.conf.get("spark.sql.session.timeZone")
    uc.register(spark)
    checked = 0
    try:
        for zone in zones:
            spark.conf.set("spark.sql.session.timeZone", zone)
            frame = spark.createDataFrame(cars)
            got = uc.match_spark_pandas(frame, MATCH, tick="1s", spark=spark, partitions=2)
            pd.testing.assert_frame_equal(got, want, check_exact=True)
            lazy = (uc.match_spark(frame, MATCH, tick="1s", spark=spark, partitions=2)
                    .selectExpr(*(f"cast(unix_micros(`{c}`) AS long) AS `{c}`"
                                  for c in stamps)).toPandas())
            lazy = lazy.sort_values(stamps).reset_index(drop=True)
            # SQL's uc_match, whose worker gets timestamps as its own zone's wall times
            # unless they cross over as microseconds.
            frame.createOrReplaceTempView("uc_zone_cars")
            sql = (spark.sql(f"SELECT * FROM uc_match(TABLE(uc_zone_cars), '{MATCH}', "
                             "tick => '1s')")
                   .selectExpr(*(f"cast(unix_micros(`{c}`) AS long) AS `{c}`"
                                 for c in stamps)).toPandas())
            sql = sql.sort_values(stamps).reset_index(drop=True)
            for c in stamps:
                micros = (want[c].dt.tz_convert(None).astype("datetime64[us]")
                          .astype("int64").tolist())
                assert lazy[c].tolist() == micros, (zone, c)
                assert sql[c].tolist() == micros, (zone, c, "uc_match")
            checked += 1
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)
    return checked
