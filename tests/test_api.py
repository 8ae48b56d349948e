"""The public API: lazy exports, option validation, answer frames, and index internals
that the API relies on (outward float rounding, R*-tree search)."""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from random_archives import archives, patterns

import uncertain_cep as uc
from uncertain_cep.index.forests.rounding import float_down, float_up

ROOT = Path(__file__).resolve().parent.parent
TEXT = """PATTERN SEQ(A, NOT C, B)
DEFINE A AS x BETWEEN 0 AND 4 AND tag = 'a', C AS tag IN ('b', 'c'), B AS x >= 2
WITHIN 4
CONFIDENCE 0.05"""


def _archive() -> pd.DataFrame:
    return pd.DataFrame({
        "event_id": [1, 2, 3, 4, 5, 6],
        "group": ["g", "g", "g", "h", "h", "k"],
        "t_lo": [1, 2, 4, 1, 3, 2],
        "t_hi": [3, 3, 6, 2, 5, 4],
        "x_lo": [0.0, 1.0, 3.0, 2.0, 5.0, 0.0],
        "x_hi": [2.0, 4.0, 6.0, 2.0, 7.0, 3.0],
        "tag": ["a", "b", "a", "c", "a", "a"],
    })


def _plain(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    out.attrs = {}
    return out


def test_every_exported_name_resolves_and_is_listed_by_dir():
    assert uc.__all__
    for name in uc.__all__:
        assert getattr(uc, name) is not None
        assert name in dir(uc)


def test_an_unknown_attribute_raises_attribute_error():
    with pytest.raises(AttributeError, match="no_such_name"):
        uc.no_such_name  # noqa: B018
    assert not hasattr(uc, "build_indexes")


@pytest.mark.parametrize("first", ["uncertain_cep.index", "uncertain_cep.query",
                                   "uncertain_cep.interval", "uncertain_cep.index.event_index",
                                   "uncertain_cep.query.language.parse"])
def test_importing_a_layer_first_then_the_facade_works(first):
    code = f"import {first}; import uncertain_cep as uc; uc.build_index; uc.parse_query"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


def test_files_named_index_or_query_in_the_working_folder_do_not_shadow_the_package(
        tmp_path):
    for name in ("index", "query", "model", "interval"):
        (tmp_path / f"{name}.py").write_text("raise SystemExit('the user file was imported')\n")
    code = ("import uncertain_cep as uc, uncertain_cep.query.evaluation.chains, "
            "uncertain_cep.index.forests.codes; "
            "import pandas as pd; "
            "uc.build_index(pd.DataFrame({'event_id': [1], 'group': 0, 't_lo': [0], 't_hi': [0]}))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


def test_unknown_strategy_lists_the_valid_strategies():
    idx = uc.build_index(_archive())
    with pytest.raises(uc.InvalidOptionError) as info:
        idx.query(TEXT, strategy="nope")
    for name in ("'sequential'", "'tree_traversal'", "'possible_worlds'"):
        assert name in str(info.value)
    assert isinstance(info.value, uc.UncertainCepError)


def test_unknown_codes_lists_the_valid_schemes():
    with pytest.raises(uc.InvalidOptionError) as info:
        uc.build_index(_archive(), codes="nope")
    assert "'compact'" in str(info.value) and "'paper'" in str(info.value)


def test_max_speed_and_pair_predicate_together_are_an_input_error():
    with pytest.raises(uc.InputError, match="not both"):
        uc.build_index(_archive(), max_speed=1.0, pair_predicate=lambda a, b, ta, tb: True)


def test_a_pattern_built_from_python_objects_answers_like_its_text():
    pattern = uc.SequencePattern(
        items=(uc.PatternItem("A"), uc.PatternItem("C", negated=True), uc.PatternItem("B")),
        symbols=(uc.Symbol("A", (uc.Between("x", 0, 4), uc.InSet("tag", ("a",)))),
                 uc.Symbol("C", (uc.InSet("tag", ("b", "c")),)),
                 uc.Symbol("B", (uc.Comparison("x", ">=", 2),))),
        within=4, confidence=0.05)
    assert pattern == uc.parse_query(TEXT)
    idx = uc.build_index(_archive())
    expected = idx.query(TEXT)
    assert len(expected) > 0
    for strategy in ("sequential", "tree_traversal", "possible_worlds"):
        pd.testing.assert_frame_equal(_plain(idx.query(pattern, strategy=strategy)),
                                      _plain(expected), rtol=1e-12)


def test_rows_are_sorted_by_confidence_descending_then_event_ids():
    # Certain instants in separate groups tie at 1; two events sharing [10, 11] tie at 1/2.
    df = pd.DataFrame({"event_id": ["e", "c", "a", "d", "b", "f", "g"],
                       "group": ["1", "2", "3", "4", "5", "6", "6"],
                       "t_lo": [1, 1, 2, 2, 3, 10, 10], "t_hi": [1, 1, 2, 2, 3, 11, 11]})
    res = uc.build_index(df).query("PATTERN SEQ(A, B) WITHIN 20")
    keys = [(-round(c, 9), e) for e, c in zip(res["events"], res["confidence"])]
    assert keys == sorted(keys)
    ones = list(res.loc[res["confidence"] == 1.0, "events"])
    assert ones[:4] == [("a", "b"), ("a", "f"), ("a", "g"), ("b", "f")]
    assert len(ones) > 4 and ones == sorted(ones)
    assert ("f", "g") in set(res.loc[np.isclose(res["confidence"], 0.5), "events"])
    assert list(res.columns) == ["events", "confidence", "t_first", "t_last"]


def test_stats_report_the_strategy_and_its_counters():
    idx = uc.build_index(_archive())
    for strategy in ("sequential", "tree_traversal", "possible_worlds"):
        stats = idx.query(TEXT, strategy=strategy).stats
        assert stats.strategy == strategy and stats.engine == "local"
        assert stats.slices is None and stats.seconds > 0


def test_an_attribute_the_archive_lacks_is_a_query_error():
    idx = uc.build_index(_archive())
    with pytest.raises(uc.QueryError, match="z"):
        idx.query("PATTERN SEQ(A, B) DEFINE A AS z < 3")


def test_order_instance_fraction_across_two_groups_is_an_input_error():
    idx = uc.build_index(_archive())
    assert idx.order_instance_fraction({4: 1}) == pytest.approx(0.5)
    with pytest.raises(uc.InputError, match="one dependency group"):
        idx.order_instance_fraction({1: 1, 4: 1})


big_ints = st.integers(-(2**1100), 2**1100) | st.integers(-(2**60), 2**60)


@given(x=big_ints)
def test_float_down_and_up_bracket_an_int_exactly_and_tightly(x):
    lo, hi = float_down(x), float_up(x)
    assert type(lo) is float and type(hi) is float
    assert lo <= x <= hi
    # Tight: the next double outward of the bound is already on the other side of x.
    assert math.nextafter(lo, math.inf) > x or lo == x
    assert math.nextafter(hi, -math.inf) < x or hi == x


@pytest.mark.parametrize("x", [2**53 + 1, -(2**53 + 1), 2**1024, -(2**1024), 10**400,
                               2**1024 - 2**970, sys.float_info.max, 0])
def test_float_bounds_at_the_edges_of_the_double_range(x):
    assert float_down(x) <= x <= float_up(x)
    assert not math.isnan(float_down(x)) and not math.isnan(float_up(x))


def _meets(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


@st.composite
def searches(draw: st.DrawFn):
    df = draw(archives(max_groups=3, max_events=10))
    idx = uc.build_index(df, codes=draw(st.sampled_from(["compact", "paper"])))
    ix = idx._index
    n_codes = max(ix.event_code_range(r)[1] for r in range(idx.n_events)) + 2
    group = draw(st.none() | st.integers(0, idx.n_groups - 1))
    t0 = draw(st.integers(-3, 20))
    time = (t0, t0 + draw(st.integers(0, 8)))
    codes = None
    if draw(st.booleans()):
        c0 = draw(st.integers(-1, n_codes))
        codes = (c0, c0 + draw(st.integers(0, max(1, n_codes // 3))))
    attributes = {}
    for a in ix.attributes:
        if draw(st.booleans()):
            lo = draw(st.integers(-1, 13))
            attributes[a] = (float(lo), float(lo + draw(st.integers(0, 4))))
    return ix, group, time, codes, attributes


@given(case=searches())
def test_event_index_search_returns_exactly_the_events_whose_box_meets_the_query(case):
    ix, group, time, codes, attributes = case
    expected = set()
    for row in range(ix.archive.n_events):
        if group is not None and int(ix.event_group[row]) != group:
            continue
        if not _meets(ix.event_time_range(row), time):
            continue
        if codes is not None and not _meets(ix.event_code_range(row), codes):
            continue
        numeric = ix.archive.numeric
        if all(_meets((numeric[a].lo[row], numeric[a].hi[row]), q)
               for a, q in attributes.items()):
            expected.add(row)
    found = ix.search(group, time, codes, attributes)
    assert len(found) == len(set(found.tolist()))
    assert set(found.tolist()) == expected


def test_arguments_of_the_wrong_kind_get_clear_errors(tmp_path):
    with pytest.raises(uc.InputError, match=r"a pandas DataFrame, an Arrow table .*, or the path "
                                           r".* got list"):
        uc.build_index([1, 2])
    with pytest.raises(uc.InputError, match="path of an index directory, got NoneType"):
        uc.open_index(None)
    idx = uc.build_index(_archive())
    with pytest.raises(uc.QueryError, match="query text or a SequencePattern, got NoneType"):
        idx.query(None)
    archive_file = tmp_path / "archive.parquet"
    _archive().to_parquet(archive_file)
    with pytest.raises(uc.IndexFormatError, match="is a file, not an index directory"):
        uc.open_index(archive_file)


# --- archives whose times are datetimes ----------------------------------------------------

_UNITS = {"1s": (10**9, uc.Duration(1, "s")), "1min": (60 * 10**9, uc.Duration(1, "min")),
          "250ms": (250 * 10**6, uc.Duration(250, "ms"))}


def _utc_ns(column: pd.Series) -> list[int]:
    """Datetimes as nanoseconds since the epoch (naive ones read as UTC)."""
    naive = column.dt.tz_convert("UTC").dt.tz_localize(None) if column.dt.tz else column
    return naive.to_numpy(dtype="datetime64[ns]").view(np.int64).tolist()


@st.composite
def dated_archives(draw: st.DrawFn):
    """An archive in integer instants and the same archive as datetimes: instant k is the
    unit starting k units after the epoch, and every time lies anywhere inside its unit."""
    df = draw(archives(max_groups=3, max_events=10))
    unit = draw(st.sampled_from(sorted(_UNITS)))
    step = _UNITS[unit][0]
    start = draw(st.integers(-10**9, 4 * 10**9)) * 10**9 // step   # 1938 to 2096
    zone = draw(st.sampled_from([None, "UTC", "Europe/Berlin", "America/New_York"]))
    instants = df.assign(t_lo=df["t_lo"] + start, t_hi=df["t_hi"] + start)
    dated = instants.copy()
    for column in ("t_lo", "t_hi"):
        inside = draw(st.lists(st.integers(0, step - 1), min_size=len(df), max_size=len(df)))
        ns = instants[column].to_numpy(dtype=np.int64) * step + np.array(inside, np.int64)
        times = pd.Series(ns.view("datetime64[ns]"))
        dated[column] = times.dt.tz_localize("UTC").dt.tz_convert(zone) if zone else times
    return instants, dated, unit, zone


@settings(max_examples=20, deadline=None)
@given(case=dated_archives(), pattern=patterns(("x",)),
       strategy=st.sampled_from(["selectivity", "sequential"]))
def test_a_datetime_archive_answers_as_the_same_archive_in_instants(case, pattern, strategy):
    instants, dated, unit, zone = case
    step, one = _UNITS[unit]
    want = uc.build_index(instants).query(pattern, strategy=strategy)
    idx = uc.build_index(dated, time_unit=unit)
    windows = [pattern]
    if pattern.within is not None:
        # WITHIN L instants, written in the unit (6 instants of 250ms: WITHIN 1500 ms).
        windows.append(dataclasses.replace(pattern, within=uc.Duration(
            pattern.within * one.value, one.unit)))
    for query in windows:
        got = idx.query(query, strategy=strategy)
        assert got["events"].tolist() == want["events"].tolist()
        assert got["confidence"].tolist() == want["confidence"].tolist()
        for column in ("t_first", "t_last"):
            assert str(got[column].dt.tz) == str(zone)
            assert _utc_ns(got[column]) == [t * step for t in want[column]]
    assert got.time_axis == uc.TimeAxis(unit, unit_ns=step, timezone=zone)


def test_a_datetime_archive_takes_windows_with_units_and_answers_datetimes():
    base = pd.Timestamp("2024-03-31 01:59:55", tz="Europe/Berlin")   # before summer time
    df = pd.DataFrame({"event_id": ["a", "b", "c"], "group": ["p", "p", "q"],
                       "t_lo": [base, base + pd.Timedelta("3s"), base + pd.Timedelta("7s")],
                       "x": [1.0, 5.0, 9.0]})
    df["t_hi"] = df["t_lo"] + pd.Timedelta("1s")
    idx = uc.build_index(df, time_unit="1s")
    query = "PATTERN SEQ(A, B) DEFINE A AS x < 2, B AS x > 4 WITHIN {} CONFIDENCE 0.3"
    res = idx.query(query.format("6s"))
    assert res["events"].tolist() == [("a", "b")]
    # The start of each instant, in the input's zone (here across the change to +02:00).
    assert res["t_first"].tolist() == [base]
    assert res["t_last"].tolist() == [base + pd.Timedelta("4s")]
    assert str(res["t_first"].dtype) == "datetime64[ns, Europe/Berlin]"
    for window in ("6 SECONDS", "6000 ms", "6", "0.1 MINUTES"):
        pd.testing.assert_frame_equal(idx.query(query.format(window)), res)
    wider = idx.query(query.format("1 MINUTES"))
    assert wider["events"].tolist() == [("a", "b"), ("a", "c")]
    assert wider["t_last"].tolist()[1] == pd.Timestamp("2024-03-31 03:00:03", tz="Europe/Berlin")
    with pytest.raises(uc.QueryError, match=r"line 1, column 56: WITHIN 1500 MILLISECONDS is "
                                            r"1\.5 instants"):
        idx.query(query.format("1500ms"))


def test_naive_datetimes_stay_naive_and_plain_numbers_need_no_unit():
    df = pd.DataFrame({"event_id": [1, 2], "group": 0,
                       "t_lo": pd.to_datetime(["2020-01-01 00:00", "2020-01-01 00:05"]),
                       "t_hi": pd.to_datetime(["2020-01-01 00:01", "2020-01-01 00:06"])})
    res = uc.build_index(df, time_unit="1min").query("PATTERN SEQ(A, B) WITHIN 10 MINUTES")
    assert str(res["t_first"].dtype) == "datetime64[ns]"
    assert res["t_first"].tolist() == [pd.Timestamp("2020-01-01 00:00")]
    assert res["t_last"].tolist() == [pd.Timestamp("2020-01-01 00:06")]
    # Part A's instants are the index's own unit: WITHIN 10 is ten minutes here.
    pd.testing.assert_frame_equal(
        uc.build_index(df, time_unit="1min").query("PATTERN SEQ(A, B) WITHIN 10"), res)


def test_a_window_with_a_unit_on_an_index_of_numbers_says_what_to_do():
    idx = uc.build_index(_archive())
    with pytest.raises(uc.QueryError, match=r"line 3, column 8: WITHIN 4 SECONDS has a time "
                                            r"unit.*\(WITHIN 4\).*time_unit="):
        idx.query(TEXT.replace("WITHIN 4", "WITHIN 4s"))
    with pytest.raises(uc.QueryError, match="WITHIN 4 SECONDS has a time unit"):
        uc.build_index(_archive().assign(t_lo=lambda d: d.t_lo * 2.0, t_hi=lambda d: d.t_hi * 2.0),
                       time_unit=2).query(TEXT.replace("WITHIN 4", "WITHIN 4s"))


_OUT_OF_MEMORY = r'''
import resource
import numpy as np, pandas as pd
import uncertain_cep as uc
n = 2000
t = np.random.default_rng(0).integers(0, 50, n)
df = pd.DataFrame({"event_id": np.arange(n), "group": np.arange(n) // 2, "t_lo": t,
                   "t_hi": t + 3, "x": 1.0})
query = "PATTERN SEQ(A, B) DEFINE A AS x > 0, B AS x > 0 WITHIN 100 CONFIDENCE 0.001"
idx = uc.build_index(df)
uc.build_index(df.head(20)).query(query)      # compiled before the limit
used = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
# About 4M answer rows need some 100 MB; 16 MB more than now cannot hold them.
resource.setrlimit(resource.RLIMIT_AS, (used + 16 * 2**20, resource.RLIM_INFINITY))
try:
    idx.query(query)
except uc.AnswerTooLargeError as e:
    assert isinstance(e, MemoryError) and e.__cause__ is not None
    print("clear:", e)
'''


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs Linux's /proc")
def test_running_out_of_memory_says_the_answer_is_too_large_and_what_to_do():
    # Issue 44 item 10: a bare "MemoryError: Unable to allocate 2.13 MiB". A real
    # allocation failure, under an address-space limit in a process of its own.
    done = subprocess.run([sys.executable, "-c", _OUT_OF_MEMORY], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "clear: the query ran out of memory" in done.stdout
    assert "higher CONFIDENCE, a shorter WITHIN" in done.stdout
