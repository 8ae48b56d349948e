"""The Spark match job and ``uncertain-cep match``: the same answer as ``uc.match``."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from interval_cases import AGGRESSIVE_DRIVERS, aggressive_cars

import uncertain_cep as uc
from uncertain_cep import cli

# A group of their own: the Spark job tests may run beside the build tests, each worker
# with its own session.


def _cars() -> pd.DataFrame:
    """Cars 1-3 of the aggressive-drivers fixture, rows shuffled."""
    cars = aggressive_cars()
    return cars[cars["car_id"] != 4].sample(frac=1.0, random_state=1)


def test_cli_match_on_parquet_equals_uc_match(spark, tmp_path, capsys):
    events = _cars()
    events.to_parquet(tmp_path / "in.parquet", index=False)
    expected = uc.match(events, AGGRESSIVE_DRIVERS, time_unit="1s")
    assert len(expected) == 3
    for engine in ("join", "automata"):
        out = tmp_path / engine / "answer.parquet"
        assert cli.main(["match", str(tmp_path / "in.parquet"), AGGRESSIVE_DRIVERS,
                         "--out", str(out), "--engine", engine, "--time-unit", "1s"]) == 0
        pd.testing.assert_frame_equal(pd.read_parquet(out), expected)
        assert [p.name for p in out.parent.iterdir()] == ["answer.parquet"]
    assert "3 matches written to" in capsys.readouterr().out
    # A query the data cannot answer fails on the empty probe, naming the column.
    assert cli.main(["match", str(tmp_path / "in.parquet"),
                     "DEFINE A AS jerk > 1, B AS speed > 70 PATTERN A meets B",
                     "--out", str(tmp_path / "x.csv")]) == 1
    assert "'jerk'" in capsys.readouterr().err and not (tmp_path / "x.csv").exists()


def test_cli_match_reads_a_csv_directory_of_intervals_and_writes_csv(spark, tmp_path):
    intervals = pd.DataFrame({"symbol": ["A", "B", "A", "B", "B"], "ts": [0, 2, 6, 7, 12],
                              "te": [2, 5, 8, 9, 14], "v": [1.5, 2.0, 3.0, 4.0, 5.0]})
    (tmp_path / "in").mkdir()
    intervals.iloc[:2].to_csv(tmp_path / "in" / "a.csv", index=False)
    intervals.iloc[2:].to_csv(tmp_path / "in" / "b.csv", index=False)
    query = ("DEFINE A AS v > 0, B AS v > 0 PATTERN A meets; overlaps; before B WITHIN 8 "
             "RETURN max(B.v) AS top")
    out = tmp_path / "answer.csv"
    assert cli.main(["match", str(tmp_path / "in"), query, "--out", str(out),
                     "--engine", "automata"]) == 0
    expected = uc.match(intervals, query)
    # [0, 2) before [7, 9) spans 9 > 8: outside the window.
    assert expected[["A_ts", "B_ts"]].values.tolist() == [[0, 2], [6, 7], [6, 12]]
    pd.testing.assert_frame_equal(pd.read_csv(out), expected)


def test_cli_match_refuses_a_folder_mixing_number_and_timestamp_times(spark, tmp_path,
                                                                      capsys):
    # Spark would read every file with one file's schema: the timestamps would come back
    # as raw integers and the run would "succeed".
    (tmp_path / "in").mkdir()
    events = pd.DataFrame({"symbol": ["A", "B", "A"], "time": [1, 2, 3], "v": [1.0, 2.0, 3.0]})
    events.to_parquet(tmp_path / "in" / "a.parquet", index=False)
    events.assign(time=pd.to_datetime(events["time"], unit="s").astype("datetime64[us]")) \
        .to_parquet(tmp_path / "in" / "b.parquet", index=False)
    out = tmp_path / "answer.csv"
    assert cli.main(["match", str(tmp_path / "in"),
                     "DEFINE A AS v > 0, B AS v > 0 PATTERN A before B",
                     "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "column 'time' is bigint in" in err and "a.parquet" in err and "b.parquet" in err
    assert not out.exists()


def test_a_malformed_query_exits_2_before_spark_starts(tmp_path, capsys, monkeypatch):
    from uncertain_cep.pipeline import match_job

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("Spark must not start for a malformed query")

    monkeypatch.setattr(match_job, "match_spark_pandas", refuse)
    _cars().to_parquet(tmp_path / "in.parquet", index=False)
    out = tmp_path / "answer.parquet"
    assert cli.main(["match", str(tmp_path / "in.parquet"),
                     "DEFINE A AS accel > 8\nPATTERN A meets", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error:") and "line 2, column" in err
    for bad in (["--engine", "fastest"], ["--out", str(tmp_path / "answer.txt")]):
        args = ["match", str(tmp_path / "in.parquet"), AGGRESSIVE_DRIVERS, "--out", str(out)]
        with pytest.raises(SystemExit) as e:
            cli.main(args + bad)
        assert e.value.code == 2
        assert f"error: argument {bad[0]}:" in capsys.readouterr().err
    assert not out.exists() and sorted(p.name for p in Path(tmp_path).iterdir()) == [
        "in.parquet"]


def test_cli_match_passes_the_tick_on(tmp_path, monkeypatch):
    from uncertain_cep.pipeline import match_job

    seen: dict[str, object] = {}

    def record(*args: object, **kwargs: object) -> pd.DataFrame:
        seen.update(kwargs)
        return pd.DataFrame({"A_ts": [0]})

    monkeypatch.setattr(match_job, "match_spark_pandas", record)
    out = tmp_path / "answer.csv"
    for tick, expected in (("5", 5), ("0.5", 0.5)):
        assert cli.main(["match", str(tmp_path), AGGRESSIVE_DRIVERS, "--out", str(out),
                         "--tick", tick]) == 0
        assert seen["tick"] == expected and type(seen["tick"]) is type(expected)
