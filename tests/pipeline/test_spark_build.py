"""The Spark batch job: same index as the in-process builder, bad input handled, atomic."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from answer_checks import assert_same_answer
from hypothesis import given, settings
from hypothesis import strategies as st
from index_checks import assert_node_columns_match_forests, stored_tables
from random_archives import archives, patterns

import uncertain_cep as uc
from uncertain_cep.cli import main
from uncertain_cep.datasets.synthetic import generate_synthetic
from uncertain_cep.errors import IndexBuildError, IndexFormatError, InputError
from uncertain_cep.index.store.manifest_check import read_manifest
from uncertain_cep.pipeline.query_job import query_spark_rows

EXAMPLE = Path(__file__).parent.parent / "fixtures" / "paper_example" / "archive.csv"


def _table(root: Path, name: str, keys: list[str]) -> pd.DataFrame:
    files = sorted((root / name).glob("*.parquet"))
    frame = pd.concat([pq.read_table(f).to_pandas() for f in files], ignore_index=True)
    return frame.sort_values(keys).reset_index(drop=True)


# Each example runs two Spark jobs (a build and a query); seven random archives per run
# keep CI in budget. Both strategies are checked slice by slice without Spark in
# test_time_slices.py; here one is drawn.
@settings(max_examples=7)
@given(df=archives(max_groups=4, max_events=12), pattern=patterns(),
       codes=st.sampled_from(["compact", "paper"]), tasks=st.integers(1, 4),
       strategy=st.sampled_from(["selectivity", "sequential"]))
def test_spark_index_equals_the_in_process_index(spark, tmp_path_factory, df, pattern, codes,
                                                 tasks, strategy):
    d = tmp_path_factory.mktemp("spark")
    df.to_parquet(d / "in.parquet", index=False)
    try:
        local = uc.build_index(df, codes=codes)
    except InputError as e:
        with pytest.raises(InputError, match=str(e).split(":")[0]):
            uc.build_index_spark(d / "in.parquet", d / "ix", codes=codes, spark=spark,
                                 partitions=tasks, log=lambda _: None)
        assert not (d / "ix").exists()
        return
    uc.build_index_spark(d / "in.parquet", d / "ix", codes=codes, spark=spark,
                         partitions=tasks, log=lambda _: None)
    local.save(d / "local")
    # The same events and node table, packed the same way; the same statistics.
    ours, theirs = stored_tables(d / "ix"), stored_tables(d / "local")
    for name in ours:
        pd.testing.assert_frame_equal(ours[name], theirs[name], check_like=True)
    for name in ("stats/cells.parquet", "stats/categories.parquet"):
        pd.testing.assert_frame_equal(pq.read_table(d / "ix" / name).to_pandas(),
                                      pq.read_table(d / "local" / name).to_pandas())
    # A task writes its groups together: one row group per part file (not one per group).
    assert all(pq.ParquetFile(f).metadata.num_row_groups == 1
               for f in (d / "ix" / "events").glob("*.parquet"))
    manifests = [json.loads((d / x / "manifest.json").read_text()) for x in ("ix", "local")]
    assert manifests[0]["statistics"] == manifests[1]["statistics"]
    assert manifests[0]["time_axis"] == manifests[1]["time_axis"] is None
    expected = local.query(pattern)
    opened = uc.open_index(d / "ix")
    assert_node_columns_match_forests(opened._index)   # several part files per table
    pd.testing.assert_frame_equal(opened.query(pattern), expected)
    rows, stats = query_spark_rows(d / "ix", str(pattern), strategy, spark=spark, slices=3)
    pd.testing.assert_frame_equal(uc.api.answer_frame(rows), pd.DataFrame(expected))
    # An index in one directory has no shards to name.
    assert stats.shards is None and "Shards read" not in str(
        uc.Explanation(str(pattern), len(rows), stats))


def test_cli_build_then_query_equals_the_api(spark, tmp_path, capsys):
    df = pd.read_csv(EXAMPLE)
    df.to_csv(tmp_path / "in.csv", index=False)
    query = ("PATTERN SEQ(A, B, C) DEFINE A AS d1 BETWEEN 0 AND 2 AND d2 BETWEEN 5 AND 10, "
             "B AS d1 BETWEEN 8 AND 9, C AS d1 >= 4 WITHIN 6 CONFIDENCE 0.1")
    assert main(["build", str(tmp_path / "in.csv"), "--out", str(tmp_path / "ix"),
                 "--codes", "paper"]) == 0
    for engine in ("local", "spark"):
        out = tmp_path / f"{engine}.csv"
        assert main(["query", str(tmp_path / "ix"), query, "--engine", engine,
                     "--out", str(out)]) == 0
        got = uc.read_answer(out)
        want = uc.build_index(df).query(query)
        assert got["events"].tolist() == want["events"].tolist()
        assert got["confidence"].tolist() == pytest.approx(want["confidence"].tolist(),
                                                            abs=1e-12)
    assert "indexed 7 events of 1 groups" in capsys.readouterr().out


def _write(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "in.parquet"
    pd.DataFrame(rows).to_parquet(path, index=False)
    return path


GOOD = [{"event_id": i, "group": "g", "t_lo": i, "t_hi": i + 1, "x": float(i)}
        for i in range(0, 10, 2)]


def test_bad_rows_fail_the_build_naming_event_file_and_row(spark, tmp_path):
    rows = GOOD + [{"event_id": 50, "group": "g", "t_lo": 30, "t_hi": 20, "x": 1.0},
                   {"event_id": 51, "group": None, "t_lo": 1, "t_hi": 2, "x": 1.0}]
    path = _write(tmp_path, rows)
    with pytest.raises(InputError) as err:
        uc.build_index_spark(path, tmp_path / "ix", spark=spark, log=lambda _: None)
    message = str(err.value)
    assert "event 50 (row 5 of in.parquet): t_lo = 30 is greater than t_hi = 20" in message
    assert "--on-bad-rows report" in message
    assert not (tmp_path / "ix").exists()


def _mixed_weights(n: int) -> pd.DataFrame:
    """The synthetic archive with normal weights on a third of its events, lists (zeros
    inside) on a third, none on the rest."""
    df = generate_synthetic(n, groups=n // 100, d=1, seed=5, weights="normal")
    width = (df["t_hi"] - df["t_lo"] + 1).to_numpy()
    third = np.arange(n) % 3
    df["t_weights"] = [[float(1 + (k % 3 == 1) * 2) * (k != 1 or w < 3) for k in range(w)]
                       if t == 1 else None for t, w in zip(third, width)]
    df.loc[third != 0, ["t_mu", "t_sigma"]] = np.nan
    return df


def test_a_weighted_archive_builds_on_spark_as_in_process(spark, tmp_path):
    # SEMANTICS A6: the group tasks weigh OIs as the in-process build does; a group's
    # pieces are cut from its weighted forest (three shards); the weights are stored.
    df = _mixed_weights(600)
    path = tmp_path / "in.parquet"
    df.to_parquet(path, index=False)
    uc.build_index_spark(path, tmp_path / "ix", spark=spark, shard_events=200,
                         log=lambda _: None)
    back, here = uc.open_index(tmp_path / "ix"), uc.build_index(df)
    assert len(read_manifest(tmp_path / "ix").shards) >= 3
    assert back.describe().weighted_events == here.describe().weighted_events == 400
    for q in ("PATTERN SEQ(A, B) DEFINE A AS a0 < -1, B AS a0 > 1 WITHIN 40 CONFIDENCE 0.05",
              "PATTERN SEQ(A, NOT N, B) DEFINE A AS a0 < -1, N AS a0 > 2, B AS a0 > 1 "
              "WITHIN 40 CONFIDENCE 0.05"):
        want = here.query(q)
        assert len(want) > 0
        assert_same_answer(back.query(q), want)
        assert_same_answer(back.query(q, strategy="tree_traversal"), want)
    # A bad weight fails the build naming its event and column.
    df.at[1, "t_weights"] = [-1.0] * int(df.at[1, "t_hi"] - df.at[1, "t_lo"] + 1)
    df.to_parquet(path, index=False)
    with pytest.raises(InputError, match=rf"event {df.at[1, 'event_id']} \(row 1 of "
                                         r"in.parquet\): column 't_weights' .*weight -1"):
        uc.build_index_spark(path, tmp_path / "ix2", spark=spark, log=lambda _: None)


def test_datetime_weights_build_on_spark_as_in_process(spark, tmp_path):
    # t_mu a datetime and t_sigma a duration: from pandas' Parquet (nanosecond times, a
    # duration Spark reads as a bare long) and from a Spark DataFrame (an interval).
    df = generate_synthetic(300, groups=3, d=1, seed=8, weights="normal")
    base = pd.Timestamp("2024-03-01", tz="UTC")
    for c in ("t_lo", "t_hi"):
        df[c] = base + pd.to_timedelta(df[c], unit="s")
    # Spark's timestamps hold microseconds: a t_mu finer than that would move.
    df["t_mu"] = (base + pd.to_timedelta(df["t_mu"], unit="s")).dt.round("us")
    df["t_sigma"] = pd.to_timedelta(df["t_sigma"], unit="s").dt.round("us")
    here = uc.build_index(df, time_unit="1s")
    q = "PATTERN SEQ(A, B) DEFINE A AS a0 < -0.5, B AS a0 > 0.5 WITHIN 20 CONFIDENCE 0.05"
    want = here.query(q)
    assert len(want) > 0 and (want["confidence"] < 1).any()
    df.to_parquet(tmp_path / "in.parquet", index=False)
    for k, source in enumerate((tmp_path / "in.parquet", spark.createDataFrame(df))):
        uc.build_index_spark(source, tmp_path / f"ix{k}", spark=spark, time_unit="1s",
                             log=lambda _: None)
        assert_same_answer(uc.open_index(tmp_path / f"ix{k}").query(q), want)


def test_bad_rows_are_reported_with_reasons_and_the_rest_indexed(spark, tmp_path):
    rows = GOOD + [{"event_id": 50, "group": "g", "t_lo": 30, "t_hi": 20, "x": 1.0},
                   {"event_id": 51, "group": None, "t_lo": 1, "t_hi": 2, "x": 1.0},
                   {"event_id": 52, "group": "h", "t_lo": 1, "t_hi": 2, "x": float("nan")},
                   {"event_id": 0, "group": "h", "t_lo": 1, "t_hi": 2, "x": 1.0}]
    path = _write(tmp_path, rows)
    summary = uc.build_index_spark(path, tmp_path / "ix", spark=spark, on_bad_rows="report",
                                   log=lambda _: None)
    rejected = _table(tmp_path / "ix", "rejected_rows", ["event_id", "row"])
    assert rejected["event_id"].tolist() == ["0", "0", "50", "51", "52"]
    reasons = dict(zip(rejected["row"], rejected["reason"]))
    assert "t_lo = 30 is greater than t_hi = 20" in reasons[5]
    assert "column 'group' is missing" in reasons[6]
    assert "column 'x' is missing, NaN or infinite" in reasons[7]
    assert "appears 2 times" in reasons[8] and "appears 2 times" in reasons[0]
    # Nothing is lost: every input row is indexed or rejected.
    assert summary.events + summary.rejected_rows == len(rows)
    idx = uc.open_index(tmp_path / "ix")
    assert sorted(idx.archive.event_ids.tolist()) == [2, 4, 6, 8]
    manifest = json.loads((tmp_path / "ix" / "manifest.json").read_text())
    assert manifest["rejected"] == {"rows": 5, "groups": 0}


def test_duplicate_ids_fail_the_build_naming_their_rows(spark, tmp_path):
    path = _write(tmp_path, GOOD + [dict(GOOD[1], group="h")])
    with pytest.raises(InputError, match=r"event_id 2 appears 2 times \(row 1 of in.parquet, "
                                         r"row 5 of in.parquet\)"):
        uc.build_index_spark(path, tmp_path / "ix", spark=spark, log=lambda _: None)


INFEASIBLE = [{"event_id": 100 + i, "group": "crowded", "t_lo": 0, "t_hi": 1, "x": 0.0}
              for i in range(3)]


def test_a_group_without_order_instance_fails_or_is_reported(spark, tmp_path):
    path = _write(tmp_path, GOOD + INFEASIBLE)
    with pytest.raises(InputError, match=r"group 'crowded' has no order instance: events 100, "
                                         r"101, 102 all lie within instants \[0, 1\]"):
        uc.build_index_spark(path, tmp_path / "ix", spark=spark, log=lambda _: None)
    summary = uc.build_index_spark(path, tmp_path / "ix", spark=spark,
                                   on_bad_groups="report", log=lambda _: None)
    assert (summary.events, summary.groups, summary.rejected_groups) == (5, 1, 1)
    rejected = _table(tmp_path / "ix", "rejected_groups", ["event_id"])
    assert rejected["event_id"].tolist() == ["100", "101", "102"]
    assert rejected["reason"].str.contains("no order instance").all()


def test_an_oversized_group_names_the_group_and_suggests_a_coarser_time_unit(spark, tmp_path):
    wide = [{"event_id": 200 + i, "group": "busy", "t_lo": 0, "t_hi": 12, "x": 0.0}
            for i in range(8)]
    path = _write(tmp_path, GOOD + wide)
    with pytest.raises(IndexBuildError, match=r"group 'busy' \(8 events\) is too large to "
                                              r"index.*coarser time unit") as caught:
        uc.build_index_spark(path, tmp_path / "ix", spark=spark, node_budget=500,
                             log=lambda _: None)
    # The same words as the in-process build: the size found and every remedy.
    with pytest.raises(IndexBuildError) as in_process:
        uc.build_index(pd.DataFrame(wide), node_budget=500)
    assert "need more than 500 nodes (at least " in str(in_process.value)
    assert str(in_process.value) in str(caught.value)
    summary = uc.build_index_spark(path, tmp_path / "ix", spark=spark, node_budget=500,
                                   on_bad_groups="report", log=lambda _: None)
    assert (summary.groups, summary.rejected_groups) == (1, 1)


def test_a_damaged_or_foreign_spark_index_is_refused(spark, tmp_path):
    path = _write(tmp_path, GOOD)
    uc.build_index_spark(path, tmp_path / "ix", spark=spark, log=lambda _: None)
    part = tmp_path / "ix" / "packed" / "nodes.parquet"
    data = bytearray(part.read_bytes())
    data[len(data) // 2] ^= 0xFF
    part.write_bytes(bytes(data))
    with pytest.raises(IndexFormatError, match="does not match its xxh3_64 checksum"):
        uc.open_index(tmp_path / "ix", verify=True)
    # Queries read the working copy the build left, not this file: verify=True hashes it
    # anyway.
    with pytest.raises(IndexFormatError, match="does not match its xxh3_64 checksum"):
        query_spark_rows(tmp_path / "ix", "PATTERN SEQ(A, B) DEFINE A AS x > 0, B AS x > 0",
                         spark=spark, verify=True)
    manifest = json.loads((tmp_path / "ix" / "manifest.json").read_text())
    manifest["format_version"] = 1
    (tmp_path / "ix" / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexFormatError, match="format version 1"):
        uc.open_index(tmp_path / "ix")


def test_an_empty_archive_is_an_empty_index_in_spark_as_in_the_api(spark, tmp_path):
    empty = pd.DataFrame({"event_id": pd.Series([], dtype="int64"),
                          "group": pd.Series([], dtype="int64"),
                          "t_lo": pd.Series([], dtype="int64"),
                          "t_hi": pd.Series([], dtype="int64"),
                          "x": pd.Series([], dtype="float64")})
    empty.to_parquet(tmp_path / "in.parquet", index=False)
    said = []
    summary = uc.build_index_spark(tmp_path / "in.parquet", tmp_path / "ix", spark=spark,
                                   log=said.append)
    assert summary.events == 0 and any("has no rows" in s for s in said)
    query = "PATTERN SEQ(A, B) DEFINE A AS x > 0, B AS x > 0 WITHIN 5"
    for idx in (uc.open_index(tmp_path / "ix"), uc.build_index(empty)):
        assert idx.n_events == 0
        res = idx.query(query)
        assert len(res) == 0 and list(res.columns) == ["events", "confidence", "t_first",
                                                        "t_last"]
    rows, _ = query_spark_rows(tmp_path / "ix", query, "selectivity", spark=spark, slices=2)
    assert rows == []


@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin", None])
def test_a_session_outside_utc_builds_the_same_instants(spark, tmp_path, zone):
    # Timezone-aware timestamps (Parquet isAdjustedToUTC): the session's time zone must
    # not shift them (Arrow hands pandas wall times of the session's zone). Both builders
    # record the input's zone, and both engines answer in it.
    base = pd.Timestamp("2024-03-31 00:59:55", tz="UTC")   # Berlin's summer time at 01:00
    df = pd.DataFrame({"event_id": range(6), "group": [0, 0, 0, 1, 1, 1],
                       "t_lo": [base + pd.Timedelta(seconds=s) for s in (0, 4, 9, 1, 5, 8)],
                       "x": [1.0, 2.0, 3.0, 1.5, 2.5, 3.5]})
    df["t_lo"] = df["t_lo"].dt.tz_convert(zone) if zone else df["t_lo"].dt.tz_localize(None)
    df["t_hi"] = df["t_lo"] + pd.Timedelta(seconds=2)
    df.to_parquet(tmp_path / "in.parquet", index=False, coerce_timestamps="us")
    query = "PATTERN SEQ(A, B) DEFINE A AS x > 0, B AS x > 2 WITHIN 10s CONFIDENCE 0.01"
    local = uc.build_index(df, time_unit="1s")
    want = local.query(query)
    assert len(want) > 0 and str(want["t_first"].dt.tz) == str(zone)
    session = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        uc.build_index_spark(tmp_path / "in.parquet", tmp_path / "ix", time_unit="1s",
                             spark=spark, log=lambda _: None)
    finally:
        spark.conf.set("spark.sql.session.timeZone", session)
    local.save(tmp_path / "local")
    manifests = [json.loads((tmp_path / x / "manifest.json").read_text())
                 for x in ("ix", "local")]
    assert manifests[0]["time_axis"] == manifests[1]["time_axis"] == {
        "time_unit": "1s", "unit_ns": 10**9, "timezone": zone}
    got = uc.open_index(tmp_path / "ix").query(query)
    pd.testing.assert_frame_equal(pd.DataFrame(got), pd.DataFrame(want), check_exact=True)
    on_spark = uc.query_index(tmp_path / "ix", query, engine="spark")
    pd.testing.assert_frame_equal(pd.DataFrame(on_spark), pd.DataFrame(want), check_exact=True)
    # The lazy answer holds timestamps too (Spark keeps instants, not zones).
    lazy = uc.query_spark(tmp_path / "ix", query, spark=spark).toPandas()
    for column in ("t_first", "t_last"):
        assert lazy[column].dt.tz_localize(None).astype("int64").tolist() == (
            want[column].dt.tz_localize(None) if zone is None
            else want[column].dt.tz_convert(None)).astype("int64").tolist()


def test_parquet_files_in_different_time_zones_are_refused(spark, tmp_path):
    stamps = pd.Series(pd.to_datetime(["2024-01-01 10:00", "2024-01-01 10:05"]))
    (tmp_path / "in").mkdir()
    for name, zone in (("a", "UTC"), ("b", "Europe/Berlin")):
        local = stamps.dt.tz_localize("UTC").dt.tz_convert(zone)
        pd.DataFrame({"event_id": [f"{name}1", f"{name}2"], "group": name, "t_lo": local,
                      "t_hi": local}).to_parquet(tmp_path / "in" / f"{name}.parquet",
                                                 coerce_timestamps="us")
    with pytest.raises(InputError, match=r"one time zone.*is UTC.*is Europe/Berlin"):
        uc.build_index_spark(tmp_path / "in", tmp_path / "ix", time_unit="1s", spark=spark,
                             log=lambda _: None)
    assert not (tmp_path / "ix").exists()


def test_a_word_in_a_csv_number_column_is_a_bad_row_at_build_and_the_column_stays_numeric(
        spark, tmp_path):
    # Issue 44 item 11: the column was taken as text, so that the build reported only the
    # other bad rows and every later `x < 5` failed without naming the row.
    rows = [dict(r, x=str(r["x"])) for r in GOOD] + [
        {"event_id": 60, "group": "h", "t_lo": 1, "t_hi": 2, "x": "abc"},
        {"event_id": 61, "group": "g", "t_lo": 9, "t_hi": 3, "x": "7"}]
    pd.DataFrame(rows).to_csv(tmp_path / "in.csv", index=False)
    with pytest.raises(InputError, match=r"event 60 \(row 5 of in.csv\): column 'x' = 'abc' is "
                                         "not a number"):
        uc.build_index_spark(tmp_path / "in.csv", tmp_path / "bad", spark=spark,
                             log=lambda _: None)
    summary = uc.build_index_spark(tmp_path / "in.csv", tmp_path / "ix", spark=spark,
                                   on_bad_rows="report", log=lambda _: None)
    rejected = _table(tmp_path / "ix", "rejected_rows", ["event_id"])
    assert rejected["event_id"].tolist() == ["60", "61"]
    assert "column 'x' = 'abc' is not a number" in rejected["reason"].iloc[0]
    assert "values are" not in rejected["reason"].iloc[0]    # a group's count: left out
    assert rejected["row"].tolist() == [5, 6]
    assert summary.events == len(GOOD)
    idx = uc.open_index(tmp_path / "ix")
    assert idx.archive.numeric_names == ("x",)
    answer = idx.query("PATTERN SEQ(A, B) DEFINE A AS x < 5, B AS x >= 0")
    assert answer.equals(uc.build_index(pd.DataFrame(GOOD)).query(
        "PATTERN SEQ(A, B) DEFINE A AS x < 5, B AS x >= 0"))


def test_the_rejected_rows_of_a_csv_input_carry_their_row_numbers(spark, tmp_path):
    # Issue 44 item 10: Spark's CSV reader gives no row index, and the report's `row`
    # was null (NaN in pandas). Two files, so rows are numbered per file.
    folder = tmp_path / "in"
    folder.mkdir()
    first = GOOD + [{"event_id": 50, "group": "g", "t_lo": 30, "t_hi": 20, "x": 1.0}]
    second = [dict(r, event_id=r["event_id"] + 100) for r in GOOD[:2]] + [
        {"event_id": 150, "group": "h", "t_lo": 3, "t_hi": 1, "x": 1.0},
        {"event_id": 151, "group": "h", "t_lo": 1, "t_hi": 2, "x": 2.0}]
    pd.DataFrame(first).to_csv(folder / "a.csv", index=False)
    pd.DataFrame(second).to_csv(folder / "b.csv", index=False)
    uc.build_index_spark(folder, tmp_path / "ix", spark=spark, on_bad_rows="report",
                         partitions=3, log=lambda _: None)
    rejected = _table(tmp_path / "ix", "rejected_rows", ["event_id"])
    assert rejected["event_id"].tolist() == ["150", "50"]
    assert rejected["row"].tolist() == [2, 5]
    assert rejected["file"].str.endswith(("b.csv", "a.csv")).all()
    assert "row 2 of" in rejected["reason"].iloc[0]


# Shards: cut by the quantiles of the earliest times, each group's pieces written by the
# group tasks and each shard finished by a task of its own; read side by side. Four
# random archives per run (each two Spark jobs and two Spark queries): the cut and the
# shards side by side are held to the oracle on many more without Spark
# (tests/index/shards/, tests/index/store/test_sharded_index.py).
@settings(max_examples=4)
@given(df=archives(max_groups=4, max_events=12), pattern=patterns(),
       shard_events=st.integers(1, 5))
def test_a_sharded_spark_index_answers_as_the_in_process_index(spark, tmp_path_factory, df,
                                                              pattern, shard_events):
    d = tmp_path_factory.mktemp("sharded")
    df.to_parquet(d / "in.parquet", index=False)
    try:
        local = uc.build_index(df)
    except InputError:
        return
    built = uc.build_index_spark(d / "in.parquet", d / "ix", spark=spark, partitions=2,
                                 shard_events=shard_events, log=lambda _: None)
    manifest = read_manifest(d / "ix")
    assert built.shards == max(len(manifest.shards), 1)
    assert manifest.counts.events == len(df) == local.archive.n_events
    for s in manifest.shards:
        assert_node_columns_match_forests(uc.open_index(d / "ix" / s.path)._index)
    expected = local.query(pattern, strategy="possible_worlds")
    assert_same_answer(uc.open_index(d / "ix").query(pattern), expected)
    rows, stats = query_spark_rows(d / "ix", str(pattern), "selectivity", spark=spark,
                                   slices=3)
    assert_same_answer(uc.api.answer_frame(rows), expected)
    if manifest.is_sharded and stats.slices:
        # EXPLAIN names the shards the slices opened.
        assert stats.shards == len(manifest.shards)
        assert set(stats.shards_read) <= set(range(len(manifest.shards)))
        assert "Shards read: " in str(uc.Explanation(str(pattern), len(rows), stats))
    # What notebooks and the command line call (answers with the events' stored times).
    assert_same_answer(uc.query_index(d / "ix", str(pattern), engine="spark"), expected)


def test_a_spark_build_cut_into_shards_names_them_in_its_manifest(spark, tmp_path):
    df = pd.DataFrame({"event_id": range(40), "group": [i % 3 for i in range(40)],
                       "t_lo": [3 * i for i in range(40)], "t_hi": [3 * i + 1 for i in range(40)],
                       "x": [float(i) for i in range(40)]})
    df.to_parquet(tmp_path / "in.parquet", index=False)
    built = uc.build_index_spark(tmp_path / "in.parquet", tmp_path / "ix", spark=spark,
                                 shard_events=10, log=lambda _: None)
    manifest = read_manifest(tmp_path / "ix")
    assert built.shards == len(manifest.shards) == 4
    # Cut at the quantiles of the earliest times (Spark's percentile_approx: the first
    # value reaching each quarter).
    assert [s.counts.events for s in manifest.shards] == [9, 10, 10, 11]
    assert [s.path for s in manifest.shards] == [f"shards/0000{k}" for k in range(4)]
    assert "(4 shards)" in str(built)
    # The Spark query gives a sharded index at least a slice per shard (each task opens
    # about one shard): 8 shards on 2 task slots (4 slices otherwise).
    uc.build_index_spark(tmp_path / "in.parquet", tmp_path / "ix8", spark=spark,
                         shard_events=5, log=lambda _: None)
    assert len(read_manifest(tmp_path / "ix8").shards) == 8
    rows, stats = query_spark_rows(tmp_path / "ix8", "PATTERN SEQ(A, B) DEFINE A AS x < 10, "
                                   "B AS x > 30 WITHIN 100", "selectivity", spark=spark)
    assert stats.slices >= 8
    want = uc.build_index(df).query("PATTERN SEQ(A, B) DEFINE A AS x < 10, B AS x > 30 "
                                    "WITHIN 100")
    assert_same_answer(uc.api.answer_frame(rows), want)


def test_a_spark_build_spanning_more_than_the_engine_answers_is_refused(spark, tmp_path):
    # Each group spans a few instants; together they span more than 2**60 (issue 44
    # item 2): the Spark build reads groups one by one, and refuses the whole at the end.
    rows = [{"event_id": 1, "group": "g", "t_lo": -1, "t_hi": 0, "x": 1.0},
            {"event_id": 2, "group": "g", "t_lo": 0, "t_hi": 1, "x": 2.0},
            {"event_id": 3, "group": "h", "t_lo": 2**60, "t_hi": 2**60 + 1, "x": 3.0}]
    with pytest.raises(InputError, match=r"spans \d+ instants, from -1 to \d+, more than"):
        uc.build_index_spark(_write(tmp_path, rows), tmp_path / "ix", spark=spark,
                             log=lambda _: None)
    assert not (tmp_path / "ix").exists()
    # Exactly 2**60 is answered, as in process.
    rows[2].update(t_lo=2**60 - 2, t_hi=2**60 - 1)
    uc.build_index_spark(_write(tmp_path, rows), tmp_path / "ix", spark=spark,
                         log=lambda _: None)
    got = uc.open_index(tmp_path / "ix").query("PATTERN SEQ(A, B) DEFINE A AS x < 2, "
                                               "B AS x > 2")
    assert [list(e) for e in got["events"]] == [[1, 3]]
    assert got["t_last"].tolist() == [2**60 - 1]
