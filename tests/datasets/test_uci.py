"""The UCI loaders turn the paper's real data sets into valid uncertain archives.

The data live in ``shared/datasets`` beside the repository (``../shared/datasets`` from
its root); the tests that need them skip when that directory is absent. Expected values
are computed here independently of the loaders (with pandas) from the original files.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from shared_data import DODGERS, ICU, LPA

import uncertain_cep as uc
from uncertain_cep.datasets import load_dodgers, load_icu, load_localization
from uncertain_cep.errors import InputError

LOADERS = {
    "dodgers": (load_dodgers, DODGERS, ["count"]),
    "icu": (load_icu, ICU, ["code", "value"]),
    "localization": (load_localization, LPA, ["x", "y", "z"]),
}


@pytest.fixture(scope="module")
def default_archives(shared: Path) -> dict[str, pd.DataFrame]:
    return {name: load(path) for name, (load, path, _) in LOADERS.items()}


# --------------------------------------------------------- independent readings of the files
def dodgers_truth(n: int = 5000) -> tuple[pd.DataFrame, int]:
    """The first ``n`` valid rows of Dodgers.data and the -1 rows among the rows read."""
    raw = pd.read_csv(DODGERS, header=None, names=["stamp", "count"])
    valid = np.flatnonzero(raw["count"].to_numpy() != -1)
    last = valid[n - 1]
    rows = raw.iloc[valid[:n]].reset_index(drop=True)
    rows["t"] = pd.to_datetime(rows["stamp"], format="%m/%d/%Y %H:%M")
    return rows, int((raw["count"].iloc[: last + 1] == -1).sum())


def icu_truth(n: int = 5000) -> pd.DataFrame:
    """The first ``n`` ICU records, unwrapped across midnight, in stable time order."""
    raw = pd.read_csv(ICU, sep="\t", header=None, names=["tod", "code", "value"]).iloc[:n]
    sec = pd.to_timedelta(raw["tod"]).dt.total_seconds().to_numpy().astype(np.int64)
    day = np.concatenate([[0], np.cumsum(np.diff(sec) < -12 * 3600)])
    raw = raw.assign(t=sec + 86400 * day, line=np.arange(1, n + 1))
    return raw.iloc[np.argsort(raw["t"].to_numpy(), kind="stable")].reset_index(drop=True)


def lpa_truth(n: int = 5000) -> pd.DataFrame:
    raw = pd.read_csv(LPA, skipinitialspace=True).iloc[:n]
    raw = raw.rename(columns={"x_coordinate": "x", "y_coordinate": "y", "z_coordinate": "z"})
    return raw.iloc[np.argsort(raw["timestamp"].to_numpy(), kind="stable")].reset_index(drop=True)


def normalised(t: np.ndarray, instants: int = 20000) -> np.ndarray:
    t = np.asarray(t, dtype=np.int64)
    return np.rint((t - t.min()) / (t.max() - t.min()) * (instants - 1)).astype(np.int64)


def assert_values_widened(df: pd.DataFrame, truth: pd.DataFrame, attrs: list[str],
                          value_width: float = 0.2) -> None:
    """Each attribute range is centred on the file's value, half-width <= width * std."""
    for a in attrs:
        v = truth[a].to_numpy(dtype=float)
        lo, hi = df[f"{a}_lo"].to_numpy(), df[f"{a}_hi"].to_numpy()
        assert (lo <= v).all() and (v <= hi).all(), a
        np.testing.assert_allclose((lo + hi) / 2, v, rtol=1e-12, atol=1e-12, err_msg=a)
        half = (hi - lo) / 2
        assert half.max() <= value_width * v.std() * (1 + 1e-9), a
        # Drawn uniformly from [0, value_width * std]: spread over the whole range.
        assert half.max() > 0.9 * value_width * v.std(), a
        assert df.attrs["std"][a] == pytest.approx(v.std())


# ------------------------------------------------------------------------------- all three
@pytest.mark.parametrize("name", list(LOADERS))
def test_default_archive_has_the_papers_shape(name: str, default_archives) -> None:
    df = default_archives[name]
    attrs = LOADERS[name][2]
    assert len(df) == 5000
    assert list(df.columns) == (["event_id", "group", "t_lo", "t_hi"]
                                + [f"{a}_{s}" for a in attrs for s in ("lo", "hi")])
    assert df["event_id"].tolist() == list(range(5000))
    for col in ("event_id", "group", "t_lo", "t_hi"):
        assert df[col].dtype == np.int64, col
    assert (df["group"] == 0).all()
    assert df["t_lo"].min() >= 0 and df["t_hi"].max() <= 19999
    # Both ends of the time domain are used (first event at 0, last at 19999).
    assert df["t_lo"].min() <= 5 and df["t_hi"].max() >= 19994
    width = df["t_hi"] - df["t_lo"] + 1
    assert width.between(2, 6).all()
    assert set(width) == {2, 3, 4, 5, 6}
    for a in attrs:
        assert df[f"{a}_lo"].dtype == np.float64
        assert (df[f"{a}_lo"] <= df[f"{a}_hi"]).all()
    archive = uc.read_archive(df, group_by="group")
    assert archive.n_events == 5000 and archive.numeric_names == tuple(attrs)
    assert archive.categorical_names == ()


@pytest.mark.parametrize("name", list(LOADERS))
def test_every_group_has_an_order_instance(name: str, shared: Path) -> None:
    load, path, _ = LOADERS[name]
    df = load(path, n_events=300, groups=3, seed=7)
    assert sorted(df["group"].unique()) == [0, 1, 2]
    idx = uc.build_index(df)  # raises InputError for a group without an order instance
    assert idx.n_events == 300 and idx.n_groups == 3
    assert all(idx.forest(g).n_trees >= 1 for g in range(3))


@pytest.mark.parametrize("name", list(LOADERS))
def test_same_seed_same_archive(name: str, shared: Path) -> None:
    load, path, _ = LOADERS[name]
    a = load(path, n_events=1000, groups=4, seed=3)
    b = load(path, n_events=1000, groups=4, seed=3)
    pd.testing.assert_frame_equal(a, b)
    c = load(path, n_events=1000, groups=4, seed=4)
    assert not a["group"].equals(c["group"])
    assert not a["t_lo"].equals(c["t_lo"])
    # The events and their order do not depend on the seed.
    assert a["event_id"].equals(c["event_id"])


@pytest.mark.parametrize("name", list(LOADERS))
def test_options_change_the_domain_and_widths(name: str, shared: Path) -> None:
    load, path, attrs = LOADERS[name]
    df = load(path, n_events=400, instants=1000, f=(1, 3), groups=2, value_width=0.0)
    assert len(df) == 400
    assert df["t_lo"].min() >= 0 and df["t_hi"].max() <= 999
    assert (df["t_hi"] - df["t_lo"] + 1).between(1, 3).all()
    for a in attrs:
        assert (df[f"{a}_lo"] == df[f"{a}_hi"]).all()  # value_width=0: certain values
    uc.build_index(df)


@pytest.mark.parametrize("name", list(LOADERS))
def test_missing_file_is_named(name: str, tmp_path: Path) -> None:
    load = LOADERS[name][0]
    missing = tmp_path / "nope" / "data.txt"
    with pytest.raises(InputError, match=r"does not exist") as e:
        load(missing)
    assert str(missing) in str(e.value)


@pytest.mark.parametrize("kwargs, message", [
    ({"n_events": 0}, "n_events must be a positive int"),
    ({"n_events": 2.5}, "n_events must be a positive int"),
    ({"groups": 0}, "groups must be a positive int"),
    ({"instants": 0}, "instants must be a positive int"),
    ({"f": (0, 3)}, "f must be a pair"),
    ({"f": (4, 3)}, "f must be a pair"),
    ({"f": (2, 50)}, "more than instants=20"),
    ({"value_width": -0.1}, "value_width must be a finite number >= 0"),
    ({"value_width": float("nan")}, "value_width must be a finite number >= 0"),
])
def test_bad_options_are_rejected(kwargs, message, tmp_path: Path) -> None:
    path = tmp_path / "Dodgers.data"
    path.write_text("4/10/2005 0:00,3\n4/10/2005 0:05,4\n")
    opts = {"n_events": 2, "instants": 20, **kwargs}
    with pytest.raises(InputError, match=message):
        load_dodgers(path, **opts)


def test_group_too_large_for_the_domain(tmp_path: Path) -> None:
    path = tmp_path / "Dodgers.data"
    path.write_text("".join(f"4/10/2005 0:{m:02d},{m}\n" for m in range(0, 60, 5)))
    with pytest.raises(InputError, match="group 0 has 12 events but the time domain only 10"):
        load_dodgers(path, n_events=12, instants=10, f=(1, 2))


# ---------------------------------------------------------------------------------- Dodgers
def test_dodgers_skips_missing_values_and_counts_them(default_archives) -> None:
    df = default_archives["dodgers"]
    truth, skipped = dodgers_truth()
    assert df.attrs["skipped_missing"] == skipped == 404
    assert_values_widened(df, truth, ["count"])
    # The first valid count (line 380: 4/11/2005 7:35,23) is the first event's.
    assert truth["stamp"].iloc[0] == "4/11/2005 7:35" and truth["count"].iloc[0] == 23
    assert df["count_lo"].iloc[0] <= 23 <= df["count_hi"].iloc[0]


def test_dodgers_times_are_the_normalised_file_times(default_archives) -> None:
    df = default_archives["dodgers"]
    truth, _ = dodgers_truth()
    minutes = (truth["t"] - truth["t"].iloc[0]).dt.total_seconds().to_numpy() // 60
    t = normalised(minutes.astype(np.int64))
    # Five-minute slots are about four instants apart: no collisions, nothing moved.
    assert df.attrs["moved_instants"] == 0
    assert ((df["t_lo"] <= t) & (t <= df["t_hi"])).all()


def test_dodgers_too_few_valid_rows(tmp_path: Path) -> None:
    path = tmp_path / "Dodgers.data"
    path.write_text("4/10/2005 0:00,-1\n4/10/2005 0:05,12\n4/10/2005 0:10,9")
    with pytest.raises(InputError, match=r"has only 2 valid rows \(1 rows with count -1"):
        load_dodgers(path, n_events=3)


def test_dodgers_real_file_has_47497_valid_rows(shared: Path) -> None:
    with pytest.raises(InputError, match=r"only 47497 valid rows \(2903 rows with count -1"):
        load_dodgers(DODGERS, n_events=50000)


@pytest.mark.parametrize("line, why", [
    ("4/10/2005 0:10;9", "expected 'M/D/YYYY H:MM,count'"),
    ("4/10/2005 0:10,nine", "expected 'M/D/YYYY H:MM,count'"),
    ("2005-04-10 00:10,9", "expected 'M/D/YYYY H:MM,count'"),
    ("4/31/2005 0:10,9", "bad date: day is out of range for month"),
    ("4/10/2005 24:10,9", "is not a time of day"),
    ("4/10/2005 0:10,-2", "count -2 is negative and not -1"),
    ("", "got ''"),
])
def test_dodgers_malformed_line(line: str, why: str, tmp_path: Path) -> None:
    path = tmp_path / "Dodgers.data"
    path.write_text(f"4/10/2005 0:00,-1\n4/10/2005 0:05,12\n{line}\n4/10/2005 0:15,9\n")
    with pytest.raises(InputError) as e:
        load_dodgers(path, n_events=3)
    message = str(e.value)
    assert message.startswith(f"{path}, line 3: expected ")
    assert why in message


# -------------------------------------------------------------------------------------- ICU
def test_icu_unwraps_midnight_and_sorts_stably(default_archives) -> None:
    df = default_archives["icu"]
    truth = icu_truth()
    assert_values_widened(df, truth, ["code", "value"])
    assert df.attrs["midnight_wraps"] == 1
    raw = pd.read_csv(ICU, sep="\t", header=None, names=["tod", "code", "value"]).iloc[:5000]
    sec = pd.to_timedelta(raw["tod"]).dt.total_seconds().to_numpy()
    steps = np.diff(sec)
    assert df.attrs["backward_steps"] == int(((steps < 0) & (steps > -3600)).sum())
    # Line 1 (23:21:42, code 21, value 52) is the first event; line 324 (00:00:01) comes
    # after line 323 (23:59:41), the last record before midnight.
    assert truth["line"].iloc[0] == 1
    assert df["code_lo"].iloc[0] <= 21 <= df["code_hi"].iloc[0]
    assert df["value_lo"].iloc[0] <= 52 <= df["value_hi"].iloc[0]
    pos = {line: i for i, line in enumerate(truth["line"])}
    assert pos[324] > pos[323]
    assert (truth["line"].iloc[pos[323] + 1:] >= 324).all()
    # Records of the same second get distinct true instants near their normalised time
    # (moved at most 7 instants with one group), each inside its interval.
    t = normalised(truth["t"].to_numpy())
    assert df.attrs["moved_instants"] > 0
    assert (df["t_lo"] <= t + 7).all() and (df["t_hi"] >= t - 7).all()


def test_icu_too_many_events(shared: Path) -> None:
    with pytest.raises(InputError, match=r"has only 7931 records; n_events=8000"):
        load_icu(ICU, n_events=8000)


@pytest.mark.parametrize("line, why", [
    ("23:21:43 21", "expected 'HH:MM:SS<TAB>code<TAB>value'"),
    ("23:21:43\tHR\t52", "expected 'HH:MM:SS<TAB>code<TAB>value'"),
    ("23:61:43\t21\t52", "23:61:43 is not a time of day"),
    ("8/16/93 23:21:43\t21\t52", "expected 'HH:MM:SS<TAB>code<TAB>value'"),
])
def test_icu_malformed_line(line: str, why: str, tmp_path: Path) -> None:
    path = tmp_path / "Monitor-Data"
    path.write_text(f"23:21:42\t21\t52\n{line}\n23:21:44\t7\t170\n")
    with pytest.raises(InputError) as e:
        load_icu(path, n_events=3)
    assert str(e.value).startswith(f"{path}, line 2: expected ")
    assert why in str(e.value)


# ----------------------------------------------------------------------------- localization
def test_localization_values_and_order(default_archives) -> None:
    df = default_archives["localization"]
    truth = lpa_truth()
    assert_values_widened(df, truth, ["x", "y", "z"])
    # One backward step (row 1601, about 5 ms) among the first 5,000 rows.
    assert df.attrs["backward_steps"] == 1
    assert (truth["sequence_name"] == "A01").all()
    assert truth["id"].iloc[0] == 0
    assert df["x_lo"].iloc[0] <= 4.0629310607910165 <= df["x_hi"].iloc[0]


def test_localization_keep_labels(shared: Path) -> None:
    df = load_localization(LPA, n_events=50, keep_labels=True)
    truth = lpa_truth(50)
    assert list(df.columns[-3:]) == ["sequence", "tag", "activity"]
    assert df["tag"].tolist() == truth["tag_indicator"].tolist()
    assert df["activity"].tolist() == truth["activity"].tolist()
    archive = uc.read_archive(df)
    assert archive.numeric_names == ("x", "y", "z")
    assert archive.categorical_names == ("sequence", "tag", "activity")


def test_localization_reads_the_uci_layout(shared: Path, tmp_path: Path) -> None:
    """The UCI original (no header, a date column, no id) gives the same archive."""
    truth = pd.read_csv(LPA, skipinitialspace=True, dtype=str).iloc[:200]
    original = tmp_path / "ConfLongDemo_JSI.txt"
    original.write_text("".join(
        f"{r.sequence_name},{r.tag_indicator},{r.timestamp},27.05.2009 14:03:25:127,"
        f"{r.x_coordinate},{r.y_coordinate},{r.z_coordinate},{r.activity}\r\n"
        for r in truth.itertuples()))
    a = load_localization(original, n_events=200, groups=2)
    b = load_localization(LPA, n_events=200, groups=2)
    pd.testing.assert_frame_equal(a, b)


@pytest.mark.parametrize("line, line_no", [
    ("2,A01,020-000-032-221,633790226052091205,4.35,1.82,,walking", 3),
    ("2,A01,020-000-032-221,633790226052091205,4.35,1.82,nan,walking", 3),
    ("2,A01,020-000-032-221,63379022605209120x,4.35,1.82,0.9,walking", 3),
    ("A01,020-000-032-221,633790226052091205,4.35,1.82,0.9,walking", 3),
])
def test_localization_malformed_line(line: str, line_no: int, tmp_path: Path) -> None:
    path = tmp_path / "ConfLongDemo_JSI.csv"
    path.write_text(
        "id, sequence_name, tag_indicator, timestamp, x_coordinate, y_coordinate, "
        "z_coordinate, activity\n"
        "0,A01,010-000-024-033,633790226051280329,4.06,1.89,0.50,walking\n"
        f"{line}\n"
        "3,A01,010-000-024-033,633790226052280329,4.06,1.89,0.50,walking\n")
    with pytest.raises(InputError) as e:
        load_localization(path, n_events=3)
    assert str(e.value).startswith(f"{path}, line {line_no}: expected 8 comma-separated "
                                   "fields 'id,sequence_name")


def test_localization_unknown_first_line(tmp_path: Path) -> None:
    path = tmp_path / "ConfLongDemo_JSI.csv"
    path.write_text("sequence,tag,timestamp,date,x,y,z,activity\n")
    with pytest.raises(InputError, match=r"line 1: expected 8 comma-separated fields "
                                         r"'sequence,tag_id,timestamp,date,x,y,z,activity'"):
        load_localization(path, n_events=1)


def test_localization_too_many_events(shared: Path) -> None:
    with pytest.raises(InputError, match=r"has only 16486 rows of events; n_events=20000"):
        load_localization(LPA, n_events=20000)
