"""The ``uncertain-cep`` command line: demo, build, query, reports and their errors."""

from __future__ import annotations

import html
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import uncertain_cep as uc
from uncertain_cep import cli
from uncertain_cep.answer_files import read_answer
from uncertain_cep.cli_commands import DEMO_QUERIES

ROOT = Path(__file__).resolve().parent.parent
QUERY = "PATTERN SEQ(A, B) DEFINE A AS x < 4, B AS x >= 2 WITHIN 5 CONFIDENCE 0.1"


def _events() -> pd.DataFrame:
    return pd.DataFrame({
        "event_id": [1, 2, 3, 4, 5, 6, 7],
        "person": ["p", "p", "p", "q", "q", "r", "r"],
        "t_lo": [1, 2, 4, 1, 3, 2, 5],
        "t_hi": [3, 3, 6, 2, 5, 4, 6],
        "x_lo": [0.0, 1.0, 3.0, 2.0, 5.0, 0.0, 4.0],
        "x_hi": [2.0, 4.0, 6.0, 2.0, 7.0, 3.0, 4.0],
        "tag": ["a", "b", "a", "b", "a", "b", "a"],
    })


def _expected(res: pd.DataFrame) -> pd.DataFrame:
    """The answer as a report file gives it back: the answer table, no attrs."""
    out = pd.DataFrame(res).reset_index(drop=True)
    out.attrs = {}
    return out


def _read(path: Path) -> pd.DataFrame:
    return read_answer(path)


def _temporaries(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    """An index built by the CLI from a Parquet archive, and the archive: built once per
    module; the tests only read it. Built in process (``--engine local``): the same
    files as a Spark build (tests/pipeline/test_spark_build.py builds with the CLI on
    Spark and queries on both engines), without a Spark job in every run of these
    tests (it took 35 s of CI's minutes)."""
    root = tmp_path_factory.mktemp("built")
    df = _events()
    df.to_parquet(root / "events.parquet", index=False)
    code = cli.main(["build", str(root / "events.parquet"), "--out", str(root / "ix"),
                     "--group-by", "person", "--engine", "local"])
    assert code == 0
    return root / "ix", df


def test_demo_runs_as_a_quiet_process_and_writes_reports_equal_to_the_api(tmp_path):
    # One run of the demo as a user starts it (its own process and JVM) serves both
    # checks: what it writes, and that it says nothing on stderr.
    out = tmp_path / "demo"
    proc = subprocess.run([sys.executable, "-m", "uncertain_cep.cli", "demo", "--out", str(out)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    assert "reports written" in proc.stdout
    assert _temporaries(out) == []
    # Quiet by default: no Spark banner, log4j WARN lines or stage bars. The JVM itself
    # announces the incubator module Spark adds; nothing else is said on stderr.
    said = [line for line in proc.stderr.splitlines()
            if line.strip() and not line.startswith("WARNING: Using incubator modules")]
    assert said == [], proc.stderr
    idx = uc.open_index(out / "index")
    assert idx.n_events == 480
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["index", "report.html", *(f"{name}.csv" for name in DEMO_QUERIES)])
    first = next(iter(DEMO_QUERIES.values()))[1]
    page = (out / "report.html").read_text()
    assert html.escape(first.splitlines()[0]) in page and "data:image/png;base64," in page
    for name, (_title, text) in DEMO_QUERIES.items():
        report = _read(out / f"{name}.csv")
        pd.testing.assert_frame_equal(report, _expected(idx.query(text)), check_exact=True)


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_build_then_query_report_round_trips_to_the_api_answer(built, tmp_path, capsys, suffix):
    ix, df = built
    report = tmp_path / "reports" / f"report{suffix}"
    assert cli.main(["query", str(ix), QUERY, "--out", str(report)]) == 0
    expected = uc.build_index(df, group_by="person").query(QUERY)
    assert len(expected) > 1
    assert f"{len(expected)} matches written" in capsys.readouterr().out
    pd.testing.assert_frame_equal(_read(report), _expected(expected), check_exact=True)
    assert _temporaries(report.parent) == []


def test_query_prints_the_table_without_out(built, capsys):
    ix, df = built
    assert cli.main(["query", str(ix), QUERY]) == 0
    printed = capsys.readouterr().out
    expected = uc.build_index(df, group_by="person").query(QUERY)
    assert printed.strip() == expected.to_string(index=False).strip()


def test_query_limit_count_and_max_rows_on_the_command_line(built, tmp_path, capsys):
    ix, df = built
    expected = uc.build_index(df, group_by="person").query(QUERY)
    assert len(expected) > 2
    report = tmp_path / "top.parquet"
    assert cli.main(["query", str(ix), QUERY, "--limit", "2", "--out", str(report)]) == 0
    pd.testing.assert_frame_equal(_read(report), _expected(expected.head(2)),
                                  check_exact=True)
    capsys.readouterr()
    assert cli.main(["query", str(ix), QUERY, "--count"]) == 0
    assert capsys.readouterr().out.strip() == str(len(expected))
    assert cli.main(["query", str(ix), QUERY, "--max-rows", "2"]) == 1
    said = capsys.readouterr().err
    assert "max_rows=2" in said and "LIMIT k" in said
    with pytest.raises(SystemExit):
        cli.main(["query", str(ix), QUERY, "--limit", "0"])


def test_query_reads_its_text_from_an_at_file(built, tmp_path):
    ix, df = built
    (tmp_path / "q.txt").write_text(QUERY.replace(" DEFINE", "\nDEFINE") + "\n")
    report = tmp_path / "r.parquet"
    assert cli.main(["query", str(ix), f"@{tmp_path / 'q.txt'}", "--out", str(report)]) == 0
    expected = uc.build_index(df, group_by="person").query(QUERY)
    pd.testing.assert_frame_equal(_read(report), _expected(expected), check_exact=True)


def test_a_missing_at_file_is_a_clean_error(built, tmp_path, capsys):
    ix, _ = built
    assert cli.main(["query", str(ix), f"@{tmp_path / 'absent.txt'}"]) == 1
    assert "error:" in capsys.readouterr().err


def test_malformed_query_exits_1_with_line_and_column(built, tmp_path, capsys):
    ix, _ = built
    assert cli.main(["query", str(ix), "PATTERN SEQ(A B)", "--out",
                     str(tmp_path / "r.csv")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error:")
    assert "line 1, column 15" in err
    assert not (tmp_path / "r.csv").exists()


def test_malformed_query_in_a_real_process_exits_1(built, tmp_path):
    ix, _ = built
    proc = subprocess.run(
        [sys.executable, "-m", "uncertain_cep.cli", "query", str(ix), "PATTERN SEQ(A,\n  B C)"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 1
    assert "error:" in proc.stderr and "line 2, column" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_report_with_another_suffix_is_a_usage_error_leaving_no_file(built, tmp_path,
                                                                     capsys):
    ix, _ = built
    out = tmp_path / "reports"
    out.mkdir()
    with pytest.raises(SystemExit) as e:
        cli.main(["query", str(ix), QUERY, "--out", str(out / "report.txt")])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "error: argument --out:" in err and ".parquet" in err and ".csv" in err
    assert list(out.iterdir()) == []


def test_unknown_strategy_error_lists_the_valid_values(built, capsys):
    ix, _ = built
    with pytest.raises(SystemExit) as e:
        cli.main(["query", str(ix), QUERY, "--strategy", "fastest"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "error: argument --strategy:" in err and "'fastest'" in err
    for name in ("'selectivity'", "'sequential'", "'tree_traversal'", "'possible_worlds'"):
        assert name in err


@pytest.mark.parametrize("strategy", ["selectivity", "sequential"])
def test_explain_prints_the_steps_then_the_same_answer(built, tmp_path, capsys, strategy):
    ix, df = built
    out = tmp_path / "a.csv"
    assert cli.main(["query", str(ix), QUERY, "--strategy", strategy, "--explain",
                     "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    expected = uc.build_index(df, group_by="person").query(QUERY)
    assert f"strategy {strategy}: {len(expected)} answer rows" in printed
    assert "entries created (xi)" in printed and "estimated" in printed
    # One line per positive item of the query.
    steps = [line for line in printed.splitlines() if re.match(r"\s*\d+\s+\w+@\d", line)]
    assert len(steps) == len(uc.parse_query(QUERY).positive_items)
    pd.testing.assert_frame_equal(_read(out), _expected(expected), check_exact=True)


@pytest.mark.parametrize("strategy", ["sequential", "tree_traversal", "possible_worlds"])
def test_query_strategies_write_the_same_report(built, tmp_path, strategy):
    ix, _ = built
    assert cli.main(["query", str(ix), QUERY, "--out", str(tmp_path / "a.csv")]) == 0
    assert cli.main(["query", str(ix), QUERY, "--strategy", strategy,
                     "--out", str(tmp_path / "b.csv")]) == 0
    a, b = _read(tmp_path / "a.csv"), _read(tmp_path / "b.csv")
    pd.testing.assert_frame_equal(a, b, rtol=1e-12)


def test_unknown_codes_in_build_exits_2(tmp_path, capsys):
    _events().to_parquet(tmp_path / "e.parquet", index=False)
    with pytest.raises(SystemExit) as e:
        cli.main(["build", str(tmp_path / "e.parquet"), "--out", str(tmp_path / "ix"),
                  "--group-by", "person", "--codes", "tiny"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "'compact'" in err and "'paper'" in err
    assert not (tmp_path / "ix").exists()


def test_failed_report_write_keeps_the_old_report_and_leaves_no_temporary(tmp_path,
                                                                           monkeypatch):
    res = uc.build_index(_events(), group_by="person").query(QUERY)
    target = tmp_path / "report.csv"
    cli.write_report(res, target)
    before = target.read_bytes()

    def broken(self, path, *args, **kwargs):
        Path(path).write_text("partial")
        raise OSError("disk full")

    monkeypatch.setattr(pd.DataFrame, "to_csv", broken)
    with pytest.raises(OSError, match="disk full"):
        cli.write_report(res.head(1), target)
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.csv"]


def test_empty_answer_writes_a_report_with_the_columns(built, tmp_path):
    ix, _ = built
    report = tmp_path / "empty.parquet"
    text = "PATTERN SEQ(A, B) DEFINE A AS x > 100 CONFIDENCE 0.5"
    assert cli.main(["query", str(ix), text, "--out", str(report)]) == 0
    assert list(_read(report).columns) == ["events", "confidence", "t_first", "t_last"]
    assert len(_read(report)) == 0


def test_report_permissions_follow_the_umask(tmp_path):
    res = uc.build_index(_events(), group_by="person").query(QUERY)
    old = os.umask(0o022)
    try:
        cli.write_report(res, tmp_path / "r.csv")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "r.csv").stat().st_mode) == 0o644


@pytest.mark.parametrize("flags", [["report", "ix", "q", "--out", "r.html", "--top", "-5"],
                                   ["build", "a.parquet", "--out", "ix", "--partitions", "0"],
                                   ["build", "a.parquet", "--out", "ix", "--node-budget", "x"]])
def test_counts_below_one_are_usage_errors(flags, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(flags)
    assert e.value.code == 2
    assert "is not an integer" in capsys.readouterr().err


def test_help_shows_defaults_and_the_exit_codes(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["build", "--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    assert "(default: 2000000)" in text and "--codes {compact,paper}" in text
    assert "2  usage error" in text and "1  the data, the index or the query" in text
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    top = capsys.readouterr().out
    assert "``" not in top and "exit status:" in top


def test_errors_name_flags_as_typed(tmp_path, capsys):
    events = _events()
    events["t_lo"] = pd.to_datetime(events["t_lo"], unit="s")
    events["t_hi"] = pd.to_datetime(events["t_hi"], unit="s")
    events.to_parquet(tmp_path / "e.parquet", index=False)
    assert cli.main(["build", str(tmp_path / "e.parquet"), "--out", str(tmp_path / "ix"),
                     "--group-by", "person", "--engine", "local"]) == 1
    err = capsys.readouterr().err
    assert "--time-unit" in err and "time_unit=" not in err


@pytest.mark.timeout(30)
def test_an_oversized_group_fails_at_once_naming_the_flags_that_fix_it(tmp_path, capsys):
    wide = pd.DataFrame({"event_id": [1, 2, 3], "group": "busy", "t_lo": 0, "t_hi": 100_000})
    wide.to_csv(tmp_path / "e.csv", index=False)
    assert cli.main(["build", str(tmp_path / "e.csv"), "--out", str(tmp_path / "ix"),
                     "--engine", "local"]) == 1
    err = capsys.readouterr().err
    assert "group 'busy' (3 events) is too large to index" in err
    assert "need more than 2,000,000 nodes (at least " in err
    assert "coarser time unit (--time-unit with a larger unit)" in err
    assert "split the group" in err and "raise --node-budget (now 2,000,000)" in err
    assert not (tmp_path / "ix").exists()


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_answer_files_keep_ids_with_spaces_apart(tmp_path, suffix):
    df = pd.DataFrame({"event_id": ["a", "b c", "a b", "c"], "group": [0, 0, 1, 1],
                       "t_lo": [1, 3, 1, 3], "t_hi": [1, 3, 1, 3], "x": 1.0})
    res = uc.build_index(df).query("PATTERN SEQ(A, B) DEFINE A AS x > 0, B AS x > 0 "
                                   "WITHIN 5 CONFIDENCE 0.5")
    assert {("a", "b c"), ("a b", "c")} <= set(res["events"])
    cli.write_report(res, tmp_path / f"r{suffix}")
    back = read_answer(tmp_path / f"r{suffix}")
    pd.testing.assert_frame_equal(back, _expected(res), check_exact=True)
    columns = (pd.read_csv(tmp_path / "r.csv").columns if suffix == ".csv"
               else pd.read_parquet(tmp_path / "r.parquet").columns)
    assert list(columns) == ([] if suffix == ".csv" else ["events"]) + [
        "A", "B", "confidence", "t_first", "t_last"]


def test_parquet_answers_keep_the_id_type_even_when_empty(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    df = pd.DataFrame({"event_id": [10, 20], "group": 0, "t_lo": [1, 3], "t_hi": [1, 3],
                       "x": 1.0})
    idx = uc.build_index(df)
    for name, text in [("some", "PATTERN SEQ(A, B) DEFINE A AS x > 0, B AS x > 0 WITHIN 5"),
                       ("none", "PATTERN SEQ(A, B) DEFINE A AS x > 5, B AS x > 0 WITHIN 5")]:
        idx.query(text).to_file(tmp_path / f"{name}.parquet")
        schema = pq.read_schema(tmp_path / f"{name}.parquet")
        assert schema.field("events").type.value_type == pa.int64()
        assert schema.field("A").type == pa.int64()
    assert read_answer(tmp_path / "some.parquet")["events"].tolist() == [(10, 20)]


def test_a_repeated_symbol_names_its_columns_by_position(tmp_path):
    df = pd.DataFrame({"event_id": [1, 2, 3], "group": [0, 1, 2], "t_lo": [1, 3, 5],
                       "t_hi": [1, 3, 5], "x": 1.0})
    res = uc.build_index(df).query("PATTERN SEQ(A, B, A) DEFINE A AS x > 0, B AS x > 0 "
                                   "WITHIN 9")
    res.to_file(tmp_path / "r.csv")
    assert list(pd.read_csv(tmp_path / "r.csv").columns[:3]) == ["A@1", "B@2", "A@3"]
    pd.testing.assert_frame_equal(read_answer(tmp_path / "r.csv"), _expected(res))


@pytest.mark.parametrize(("flags", "level"), [([], "WARNING"), (["-v"], "INFO"),
                                              (["--verbose"], "INFO"), (["-q"], "ERROR")])
def test_verbosity_flags_go_after_the_command_and_set_the_log_level(tmp_path, flags, level,
                                                                   monkeypatch):
    import logging

    logger = logging.getLogger("uncertain_cep")
    monkeypatch.setattr(logger, "handlers", [])     # restored after the test
    monkeypatch.setattr(logger, "level", logger.level)
    _events().to_parquet(tmp_path / "e.parquet", index=False)
    assert cli.main(["build", str(tmp_path / "e.parquet"), "--out", str(tmp_path / "ix"),
                     "--group-by", "person", "--engine", "local", *flags]) == 0
    assert logging.getLevelName(logger.level) == level


def test_window_past_int64_exits_1_with_one_line_naming_its_position(tmp_path, capsys):
    # Was a numba TypingError traceback (issue 44 item 3).
    uc.build_index(_events(), group_by="person").save(tmp_path / "ix")
    query = "PATTERN SEQ(A, B) DEFINE A AS x < 4, B AS x >= 2 WITHIN 99999999999999999999999"
    assert cli.main(["query", str(tmp_path / "ix"), query]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: line 1, column 57: WITHIN 99999999999999999999999 is "
                          "longer than the largest window")
    assert "Traceback" not in err and "numba" not in err


def test_build_columns_names_the_input_columns_and_answers_as_the_api(tmp_path, capsys):
    theirs = _events().rename(columns={"event_id": "reading_id", "t_lo": "start",
                                       "t_hi": "end"})
    theirs.to_csv(tmp_path / "e.csv", index=False)
    # One pair per --columns or several in one: both add up to one mapping.
    assert cli.main(["build", str(tmp_path / "e.csv"), "--out", str(tmp_path / "ix"),
                     "--group-by", "person", "--engine", "local",
                     "--columns", "event_id=reading_id,t_lo=start", "--columns",
                     "t_hi=end"]) == 0
    assert cli.main(["query", str(tmp_path / "ix"), QUERY, "--out",
                     str(tmp_path / "a.parquet")]) == 0
    want = uc.build_index(_events(), group_by="person").query(QUERY)
    pd.testing.assert_frame_equal(_read(tmp_path / "a.parquet"), _expected(want))


@pytest.mark.parametrize(("value", "says"), [
    ("event_id", "'event_id' is not NAME=COLUMN; write the archive's name, '=' and the "
     "input's column"),
    ("event_id=a,,t_lo=b", "'' is not NAME=COLUMN"),
    ("start=t_lo", "in 'start=t_lo': 'start' is not a valid archive column; choose one of: "
     "'event_id', 't_lo', 't_hi', 't'"),
    ("t_lo=a,t_lo=b", "t_lo is given twice (t_lo=a and t_lo=b); give each name once"),
])
def test_a_malformed_columns_option_is_a_usage_error(tmp_path, capsys, value, says):
    with pytest.raises(SystemExit) as e:
        cli.main(["build", "e.csv", "--out", str(tmp_path / "ix"), "--columns", value])
    assert e.value.code == 2
    assert says in capsys.readouterr().err


def test_a_name_given_by_two_columns_options_is_a_usage_error(tmp_path, capsys):
    _events().to_csv(tmp_path / "e.csv", index=False)
    assert cli.main(["build", str(tmp_path / "e.csv"), "--out", str(tmp_path / "ix"),
                     "--engine", "local", "--columns", "t_lo=t_hi",
                     "--columns", "t_lo=x_lo"]) == 2
    assert "--columns gives t_lo twice (t_lo=t_hi and t_lo=x_lo)" in capsys.readouterr().err


@pytest.mark.parametrize(("renamed", "columns", "says"), [
    ({}, "t_lo=x_lo", "--columns renames 'x_lo' to 't_lo', but the input has a column "
     "'t_lo' too"),
    ({"event_id": "reading_id", "t_lo": "begin"}, "event_id=reading_id",
     "column 't_lo' is missing (its pair is column 't_hi'); if the input calls it "
     "otherwise, pass --columns t_lo=<its name>"),
])
def test_columns_errors_name_the_option_as_typed(tmp_path, capsys, renamed, columns, says):
    _events().rename(columns=renamed).to_csv(tmp_path / "e.csv", index=False)
    assert cli.main(["build", str(tmp_path / "e.csv"), "--out", str(tmp_path / "ix"),
                     "--group-by", "person", "--engine", "local", "--columns", columns]) == 1
    err = capsys.readouterr().err
    assert says in err and "columns=" not in err
    assert not (tmp_path / "ix").exists()
