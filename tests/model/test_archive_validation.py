"""Reading an archive (SEMANTICS A1/A2): every bad input is an InputError that says where.

Each rejection test checks the error class and that the message names the offending event id
and column (or, for archive-level problems, the column or group). Nothing is dropped: an
accepted archive has exactly one event per input row.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

import uncertain_cep as uc
from uncertain_cep.errors import InputError
from uncertain_cep.model.events import read_archive
from uncertain_cep.model.time_axis import MAX_SPAN


def frame(**columns: object) -> pd.DataFrame:
    """Three valid events in two groups; keyword arguments replace or add columns."""
    data: dict[str, object] = {
        "event_id": ["a", "b", "c"], "group": ["g", "g", "h"],
        "t_lo": [1, 2, 3], "t_hi": [3, 4, 5],
        "x_lo": [0.0, 1.0, 2.0], "x_hi": [1.0, 2.0, 3.0],
    }
    data.update(columns)
    return pd.DataFrame(data)


def names(*parts: str) -> str:
    """A regex that matches a message containing every part (in any order)."""
    return "(?s)" + "".join(f"(?=.*{re.escape(p)})" for p in parts)


# --- rejected rows: the message names the event id and the column ---------------------------


def test_duplicate_event_id_is_rejected_naming_id_and_rows() -> None:
    with pytest.raises(InputError, match=names("event_id 'a'", "rows [0, 2]")):
        read_archive(frame(event_id=["a", "b", "a"]))
    with pytest.raises(InputError, match=names("event_id 7", "rows [0, 2]")):
        read_archive(frame(event_id=[7, 8, 7]))


def test_missing_event_id_is_rejected_naming_row_and_column() -> None:
    with pytest.raises(InputError, match=names("row 1", "'event_id'", "missing")):
        read_archive(frame(event_id=["a", None, "c"]))


def test_missing_group_value_is_rejected_naming_event_and_column() -> None:
    with pytest.raises(InputError, match=names("event 'b'", "'group'", "missing")):
        read_archive(frame(group=["g", None, "h"]))


@pytest.mark.parametrize("column, row, event", [("t_lo", 1, "'b'"), ("t_hi", 2, "'c'")])
def test_nan_time_bound_is_rejected_naming_event_and_column(column: str, row: int,
                                                            event: str) -> None:
    values = [1.0, 2.0, 3.0] if column == "t_lo" else [3.0, 4.0, 5.0]
    values[row] = np.nan
    with pytest.raises(InputError, match=names(f"event {event}", f"'{column}'", "NaN")):
        read_archive(frame(**{column: values}))


def test_t_lo_after_t_hi_is_rejected_naming_event_and_columns() -> None:
    with pytest.raises(InputError, match=names("event 'b'", "t_lo = 5", "t_hi = 4")):
        read_archive(frame(t_lo=[1, 5, 3]))


def test_non_integer_float_time_without_time_unit_is_rejected_naming_event_and_column() -> None:
    with pytest.raises(InputError, match=names("event 'b'", "'t_lo'", "time_unit")):
        read_archive(frame(t_lo=[1.0, 2.5, 3.0]))


def test_datetime_time_without_time_unit_is_rejected_naming_column() -> None:
    stamps = pd.to_datetime(["2020-01-01"] * 3)
    with pytest.raises(InputError, match=names("'t_lo'", "datetimes", "time_unit")):
        read_archive(frame(t_lo=stamps, t_hi=stamps))


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")
def test_infinite_time_with_time_unit_is_rejected_naming_event_and_column() -> None:
    with pytest.raises(InputError, match=names("event 'a'", "'t_lo'")):
        read_archive(frame(t_lo=[-np.inf, 2.0, 3.0], t_hi=[3.0, 4.0, 5.0]), time_unit=1.0)


def test_x_lo_above_x_hi_is_rejected_naming_event_and_columns() -> None:
    with pytest.raises(InputError, match=names("event 'b'", "x_lo = 3.0", "x_hi = 2.0")):
        read_archive(frame(x_lo=[0.0, 3.0, 2.0]))


@pytest.mark.parametrize("column", ["x_lo", "x_hi"])
def test_nan_attribute_bound_is_rejected_naming_event_and_column(column: str) -> None:
    values = [0.0, np.nan, 2.0] if column == "x_lo" else [1.0, np.nan, 3.0]
    with pytest.raises(InputError, match=names("event 'b'", f"'{column}'")):
        read_archive(frame(**{column: values}))


def test_nan_certain_attribute_is_rejected_naming_event_and_column() -> None:
    with pytest.raises(InputError, match=names("event 'c'", "'speed'")):
        read_archive(frame(speed=[1.0, 2.0, np.nan]))


def test_x_lo_without_x_hi_is_rejected_naming_both_columns() -> None:
    with pytest.raises(InputError, match=names("'x_lo'", "x_hi")):
        read_archive(frame().drop(columns="x_hi"))


def test_mu_without_sigma_is_rejected_naming_both_columns() -> None:
    with pytest.raises(InputError, match=names("'x_mu'", "'x_sigma'")):
        read_archive(frame(x_mu=[0.5, 1.5, 2.5]))


@pytest.mark.parametrize("sigma", [0.0, -1.0])
def test_sigma_not_positive_is_rejected_naming_event_and_column(sigma: float) -> None:
    with pytest.raises(InputError, match=names("event 'b'", "x_sigma", "> 0")):
        read_archive(frame(x_mu=[0.5, 1.5, 2.5], x_sigma=[1.0, sigma, 1.0]))


@pytest.mark.parametrize("nan_column", ["x_mu", "x_sigma"])
def test_half_of_mu_sigma_nan_on_one_row_is_rejected_naming_event_and_column(
        nan_column: str) -> None:
    cols = {"x_mu": [0.5, 1.5, 2.5], "x_sigma": [1.0, 1.0, 1.0]}
    cols[nan_column][1] = np.nan
    with pytest.raises(InputError, match=names("event 'b'", f"'{nan_column}'", "NaN")):
        read_archive(frame(**cols))


# --- missing columns ------------------------------------------------------------------------


@pytest.mark.parametrize("drop, expected", [
    (["event_id"], "no 'event_id' column"),
    (["group"], "no 'group' column"),
    (["t_lo", "t_hi"], "no time columns"),
    (["t_hi"], "'t_hi' is missing"),
])
def test_missing_required_column_is_rejected_naming_it(drop: list[str], expected: str) -> None:
    with pytest.raises(InputError, match=re.escape(expected)):
        read_archive(frame().drop(columns=drop))


def test_missing_custom_group_column_is_rejected_naming_it() -> None:
    with pytest.raises(InputError, match=names("'vehicle'", "group_by")):
        read_archive(frame(), group_by="vehicle")


# --- groups without an order instance (A2) --------------------------------------------------


def test_group_without_order_instance_names_group_events_and_window() -> None:
    df = frame(group=["g", "g", "g"], t_lo=[1, 1, 1], t_hi=[2, 2, 2])
    with pytest.raises(InputError,
                       match=names("group 'g'", "'a', 'b', 'c'", "[1, 2]", "no order instance")):
        uc.build_index(df)


def test_group_made_infeasible_by_max_speed_names_group_and_events() -> None:
    df = pd.DataFrame({"event_id": [7, 8, 9], "group": ["road", "road", "other"],
                       "t_lo": [1, 1, 1], "t_hi": [2, 2, 2], "x": [0.0, 100.0, 0.0]})
    uc.build_index(df)  # feasible under Condition 1 alone
    with pytest.raises(InputError, match=names("group 'road'", "7, 8", "Condition 2")):
        uc.build_index(df, max_speed=1.0, coordinates=("x",))


# --- accepted inputs: nothing dropped -------------------------------------------------------


@pytest.mark.parametrize("ids", [["a", "b", "c"], [10, 20, 30], [10.0, 20.0, 30.0]])
def test_string_int_and_integral_float_ids_are_accepted(ids: list[object]) -> None:
    archive = read_archive(frame(event_id=ids))
    assert archive.n_events == 3
    assert [str(i) for i in archive.event_ids] == [str(i).removesuffix(".0") for i in ids]


def test_integral_float_times_are_accepted_as_instants() -> None:
    archive = read_archive(frame(t_lo=[1.0, 2.0, 3.0], t_hi=[3.0, 4.0, 5.0]))
    assert archive.t_lo.tolist() == [1, 2, 3] and archive.t_hi.tolist() == [3, 4, 5]
    assert archive.t_lo.dtype == np.int64


def test_float_times_with_time_unit_are_floor_divided() -> None:
    archive = read_archive(frame(t_lo=[-0.5, 2.49, 3.0], t_hi=[0.0, 2.5, 7.4]), time_unit=0.5)
    assert archive.t_lo.tolist() == [-1, 4, 6]
    assert archive.t_hi.tolist() == [0, 5, 14]


def test_datetime_times_with_time_unit_count_units_since_epoch() -> None:
    lo = pd.to_datetime(["1970-01-01 00:00:05", "1970-01-01 00:00:05.9", "1969-12-31 23:59:59"],
                        format="ISO8601")
    hi = pd.to_datetime(["1970-01-01 00:00:09", "1970-01-01 00:01:00", "1970-01-01 00:00:00"])
    archive = read_archive(frame(t_lo=lo, t_hi=hi), time_unit="1s")
    assert archive.t_lo.tolist() == [5, 5, -1]
    assert archive.t_hi.tolist() == [9, 60, 0]


def test_tz_aware_datetimes_count_units_since_epoch_in_utc() -> None:
    # 00:30 and 01:10 UTC on the night Berlin leaves summer time: 02:30+02:00, 02:10+01:00.
    utc = pd.Series(pd.to_datetime(["2020-10-25 00:30Z", "2020-10-25 01:10Z"]))
    local = utc.dt.tz_convert("Europe/Berlin")
    df = pd.DataFrame({"event_id": [1], "group": [0], "t_lo": local[:1],
                       "t_hi": local[1:].reset_index(drop=True)})
    archive = read_archive(df, time_unit="1s")
    assert archive.t_lo.tolist() == [1603585800]
    assert archive.t_hi.tolist() == [1603588200]


def test_the_archive_remembers_its_time_unit_and_the_datetimes_zone() -> None:
    assert read_archive(frame()).time_axis is None
    assert read_archive(frame(), time_unit=1).time_axis == uc.TimeAxis("1")
    stamps = pd.Series(pd.to_datetime(["2020-01-01 10:00"] * 3))
    naive = read_archive(frame(t_lo=stamps, t_hi=stamps), time_unit="100ms").time_axis
    assert naive == uc.TimeAxis("100ms", unit_ns=10**8, timezone=None)
    zoned = stamps.dt.tz_localize("Asia/Kolkata")
    axis = read_archive(frame(t_lo=zoned, t_hi=zoned).drop(columns=["t_lo", "t_hi"]).assign(
        t=zoned), time_unit=pd.Timedelta("1min")).time_axis
    assert axis == uc.TimeAxis("0 days 00:01:00", unit_ns=60 * 10**9, timezone="Asia/Kolkata")


def test_time_columns_in_different_zones_are_rejected_naming_both() -> None:
    stamps = pd.Series(pd.to_datetime(["2020-01-01 10:00"] * 3)).dt.tz_localize("UTC")
    with pytest.raises(InputError, match=names("t_lo is in UTC", "t_hi is in Europe/Berlin",
                                               "one time zone")):
        read_archive(frame(t_lo=stamps, t_hi=stamps.dt.tz_convert("Europe/Berlin")),
                     time_unit="1s")
    with pytest.raises(InputError, match=names("t_lo is in UTC", "t_hi is naive")):
        read_archive(frame(t_lo=stamps, t_hi=stamps.dt.tz_localize(None)), time_unit="1s")


@pytest.mark.parametrize("unit", [2, 1.0, "two seconds", "-1s", "0s"])
def test_a_time_unit_that_is_not_a_positive_duration_is_rejected_for_datetimes(unit) -> None:
    stamps = pd.to_datetime(["2020-01-01 10:00"] * 3)
    with pytest.raises(InputError, match=names("time_unit", "'t_lo'")
                       if isinstance(unit, (int, float)) else "time_unit"):
        read_archive(frame(t_lo=stamps, t_hi=stamps), time_unit=unit)


def test_single_t_column_is_a_certain_time() -> None:
    archive = read_archive(frame().drop(columns=["t_lo", "t_hi"]).assign(t=[4, 6, 5]))
    assert archive.t_lo.tolist() == archive.t_hi.tolist() == [4, 6, 5]


def test_single_numeric_column_is_a_certain_attribute_and_string_column_categorical() -> None:
    archive = read_archive(frame(speed=[1.5, 2, 3], tag=["r1", "r2", "r1"]))
    assert archive.numeric_names == ("x", "speed")
    assert archive.numeric["speed"].is_certain
    assert archive.numeric["speed"].lo.tolist() == [1.5, 2.0, 3.0]
    assert archive.categorical_names == ("tag",)
    assert archive.categorical["tag"].tolist() == ["r1", "r2", "r1"]


def test_truncated_normal_columns_are_kept_with_nan_rows_uniform() -> None:
    archive = read_archive(frame(x_mu=[0.5, np.nan, 2.5], x_sigma=[1.0, np.nan, 0.1]))
    attr = archive.numeric["x"]
    assert attr.mu is not None and attr.sigma is not None
    assert np.isnan(attr.mu[1]) and attr.sigma[2] == 0.1


@pytest.mark.parametrize("suffix", ["parquet", "csv"])
def test_parquet_and_csv_paths_are_read_like_the_frame(tmp_path, suffix: str) -> None:
    df = frame(event_id=[1, 2, 3], tag=["a", "b", "a"])
    path = tmp_path / f"events.{suffix}"
    if suffix == "csv":
        df.to_csv(path, index=False)
    else:
        df.to_parquet(path)
    from_file, from_frame = read_archive(path), read_archive(df)
    assert from_file.n_events == 3
    pd.testing.assert_frame_equal(from_file.to_frame(), from_frame.to_frame(),
                                  check_dtype=False)


def test_missing_archive_file_is_rejected_naming_path(tmp_path) -> None:
    path = tmp_path / "nope.parquet"
    with pytest.raises(InputError, match=re.escape(str(path))):
        read_archive(path)


def test_every_row_becomes_an_event_in_input_order() -> None:
    n = 50
    df = pd.DataFrame({"event_id": np.arange(n)[::-1], "grp": np.arange(n) % 7,
                       "t_lo": np.arange(n), "t_hi": np.arange(n) + 3})
    archive = read_archive(df, group_by="grp")
    assert archive.n_events == n
    assert archive.event_ids.tolist() == df["event_id"].tolist()
    assert sum(len(m) for m in archive.group_members()) == n
    assert archive.group_labels[archive.group_of].tolist() == df["grp"].tolist()


@pytest.mark.parametrize("plain", [[1.0, 2.0], ["a", "b"]])
def test_an_attribute_given_as_a_column_and_as_a_range_is_refused_naming_both(plain) -> None:
    df = pd.DataFrame({"event_id": [1, 2], "group": 0, "t_lo": [1, 2], "t_hi": [1, 2],
                       "x": plain, "x_lo": [0.0, 1.0], "x_hi": [1.0, 2.0]})
    with pytest.raises(InputError, match=r"'x'.*(x_lo/x_hi|range)"):
        read_archive(df)


def test_build_refuses_an_archive_spanning_more_than_the_engine_answers():
    d = pd.DataFrame({"event_id": ["early", "late"], "group": "g", "t_lo": [-1, 5],
                      "t_hi": [0, MAX_SPAN]})
    with pytest.raises(InputError, match=r"spans \d+ instants, from t_lo = -1 \(event "
                                         r"'early', row 0\) to t_hi = \d+ \(event 'late'"):
        read_archive(d)
    read_archive(d.assign(t_lo=[0, 5]))    # exactly MAX_SPAN is answered


# --- issue 44 item 10: errors that named the wrong thing ------------------------------------


@pytest.mark.parametrize("unit", [float("inf"), float("-inf"), float("nan"), 0.0, -1.0])
def test_a_time_unit_that_is_not_a_positive_finite_number_is_named(unit):
    # time_unit=inf used to put every event at instant 0: "no order instance".
    with pytest.raises(InputError, match=r"time_unit must be a positive finite number, "
                                         rf"got {unit!r}"):
        read_archive(frame(t_lo=[1.0, 2.0, 3.0], t_hi=[3.0, 4.0, 5.0]), time_unit=unit)


def test_a_time_column_of_several_zones_names_the_column_and_the_zones():
    times = pd.Series([pd.Timestamp("2024-01-01 10:00", tz="UTC"),
                       pd.Timestamp("2024-01-01 11:00", tz="Europe/Paris"),
                       pd.Timestamp("2024-01-01 12:00", tz="UTC")], dtype=object)
    with pytest.raises(InputError, match=names("column 't_hi'", "several time zones",
                                               "Europe/Paris, UTC", "tz_convert")):
        read_archive(frame(t_lo=times.map(lambda t: t.tz_convert("UTC")).astype(
            "datetime64[ns, UTC]"), t_hi=times), time_unit="1s")
