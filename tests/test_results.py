"""Query results in notebooks: the QueryResult frame, its HTML display and its timeline."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

import uncertain_cep as uc
from uncertain_cep.api import answer_frame
from uncertain_cep.errors import InputError

TEXT = """PATTERN SEQ(A, NOT C, B)
DEFINE A AS x BETWEEN 0 AND 4, C AS tag = 'c', B AS x >= 2
WITHIN 6
CONFIDENCE 0.01"""


def _archive() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    n = 40
    lo = np.sort(rng.integers(0, 60, size=n))
    x = rng.uniform(0, 8, size=n)
    return pd.DataFrame({"event_id": np.arange(100, 100 + n), "group": rng.integers(0, 3, n),
                         "t_lo": lo, "t_hi": lo + rng.integers(0, 3, size=n),
                         "x_lo": x, "x_hi": x + 0.5,
                         "tag": rng.choice(["a", "b", "c"], size=n)})


@pytest.fixture(scope="module")
def index():
    return uc.build_index(_archive(), max_speed=None)


@pytest.fixture(scope="module")
def result(index):
    res = index.query(TEXT)
    assert len(res) > 12  # enough rows to truncate the display
    return res


def test_a_query_result_is_the_answer_frame_with_its_context(index, result):
    assert isinstance(result, uc.QueryResult) and isinstance(result, pd.DataFrame)
    plain = answer_frame(list(zip(result["events"], result["confidence"], result["t_first"],
                                  result["t_last"])))
    pd.testing.assert_frame_equal(pd.DataFrame(result), plain)
    assert result.stats.strategy == "selectivity"
    assert result.query_text == TEXT and result.pattern_items == ("A", "B")
    archive = _archive().set_index("event_id")
    matched = {e for events in result["events"] for e in events}
    assert result.event_times == {e: (int(archive.t_lo[e]), int(archive.t_hi[e]))
                                  for e in matched}


def test_pandas_methods_keep_working_and_derived_frames_stay_answers(result):
    # The context attributes must not hide DataFrame.query / DataFrame.items.
    confident = result.query("confidence > 0.5")
    assert len(confident) == int((result["confidence"] > 0.5).sum())
    assert [name for name, _ in result.items()] == ["events", "confidence", "t_first",
                                                    "t_last"]
    # Issue "Spark SQL access, a quiet console", item 6: pandas habits keep the answer.
    for derived in (confident, result.head(), result[result["confidence"] > 0],
                    result.sort_values("t_first"), result.copy(), result.iloc[::-1]):
        assert type(derived) is uc.QueryResult
        assert derived.stats is result.stats and derived.query_text == TEXT
        assert derived.pattern_items == result.pattern_items
        assert f"{len(derived)} match" in derived._repr_html_()
    # One that lost the answer's columns shows and plots as the DataFrame it is.
    column = result[["confidence"]]
    assert column._repr_html_() == pd.DataFrame(column)._repr_html_()
    assert column.summary() == f"{len(result)} rows"


def test_the_stats_read_as_a_few_lines_and_an_html_table(result):
    shown = repr(result.stats)
    assert shown.startswith("QueryStats\n  strategy") and len(shown.splitlines()) >= 6
    assert max(len(line) for line in shown.splitlines()) < 80
    assert "entries created (xi)" in shown and "<table" in result.stats._repr_html_()


def test_the_notebook_display_shows_counts_query_and_top_rows(result):
    shown = result._repr_html_()
    assert shown is not None
    assert f"{len(result)} matches, confidence " in shown
    assert "PATTERN SEQ(A, NOT C, B)" in shown
    assert shown.count("<tr") == 1 + 10  # header and the top ten rows
    assert f"... and {len(result) - 10} more" in shown
    first = ", ".join(map(str, result["events"].iloc[0]))
    assert first in shown


def test_the_timeline_draws_every_event_of_the_top_tuples_coloured_by_item(result):
    ax = result.plot(top=5)
    bars = ax.patches
    top = result.head(5)
    assert len(bars) == sum(len(e) for e in top["events"])
    # Bars in drawing order: tuple by tuple, item by item; each spans t_lo .. t_hi + 1.
    expected = [(result.event_times[e], item) for events in top["events"]
                for item, e in enumerate(events)]
    colours = {}
    for bar, ((lo, hi), item) in zip(bars, expected):
        assert bar.get_x() == lo and bar.get_width() == hi + 1 - lo
        colours.setdefault(item, bar.get_facecolor())
        assert bar.get_facecolor() == colours[item]
    assert colours[0] != colours[1]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["A", "B"]
    assert "(top 5)" in ax.get_title()
    plt.close("all")


def test_a_saved_timeline_keeps_its_labels_and_legend_inside_the_figure(result, tmp_path):
    # Constrained layout (issue "Spark SQL access, a quiet console", item 6): savefig
    # without bbox_inches clipped the tuple labels and the legend.
    ax = result.plot(top=5)
    figure = ax.figure
    assert type(figure.get_layout_engine()).__name__ == "ConstrainedLayoutEngine"
    figure.savefig(tmp_path / "t.png")
    figure.canvas.draw()
    box = figure.bbox
    for text in [*ax.get_yticklabels(), ax.get_legend()]:
        extent = text.get_window_extent()
        assert box.x0 - 1 <= extent.x0 and extent.x1 <= box.x1 + 1, text
    plt.close("all")


def test_pandas_plotting_stays_reachable(result):
    ax = result.plot.scatter(x="t_first", y="confidence")
    assert len(ax.collections) == 1
    plt.close("all")


def test_plot_with_a_kind_or_pandas_arguments_is_pandas_plotting(result):
    ax = result.plot(kind="hist", y="confidence")
    assert ax.get_ylabel() == "Frequency"
    ax = result.plot(kind="scatter", x="t_first", y="confidence")
    assert len(ax.collections) == 1
    ax = result.plot(x="t_first", y="confidence")
    assert [line.get_label() for line in ax.get_lines()] == ["confidence"]
    plt.close("all")
    ax = result.plot(kind="timeline", top=3)
    assert "(top 3)" in ax.get_title()
    plt.close("all")


def test_an_empty_result_displays_and_plots(index):
    res = index.query(TEXT.replace("CONFIDENCE 0.01", "CONFIDENCE 1").replace(
        "x >= 2", "x >= 100"))
    assert len(res) == 0
    assert "no match" in res._repr_html_()
    assert res.plot().get_title() == "no match"
    plt.close("all")


def test_a_result_without_event_times_says_why_it_cannot_plot(result):
    bare = uc.QueryResult.of(pd.DataFrame(result), query="q", items=("A", "B"),
                             event_times={})
    with pytest.raises(InputError, match="has no possible times"):
        bare.plot()
    plt.close("all")


def test_a_saved_index_answers_with_the_same_context(index, result, tmp_path):
    from uncertain_cep.api import _stored_event_times

    index.save(tmp_path / "ix")
    again = uc.query_index(tmp_path / "ix", TEXT)
    assert again.event_times == result.event_times
    assert _stored_event_times(tmp_path / "ix", set(result.event_times)) == \
        result.event_times


# --- an archive whose times are datetimes ------------------------------------------------

@pytest.fixture(scope="module")
def dated():
    """The archive above with instant k as the second starting k s after 2024-10-27 00:59:30
    UTC (Berlin leaves summer time at 01:00 UTC, inside the answer)."""
    df = _archive()
    start = pd.Timestamp("2024-10-27 00:59:30", tz="UTC")
    for column in ("t_lo", "t_hi"):
        df[column] = (start + pd.to_timedelta(df[column], unit="s")).dt.tz_convert(
            "Europe/Berlin")
    return uc.build_index(df, time_unit="1s"), start


def test_a_datetime_result_shows_datetimes_in_the_input_zone(dated, result):
    idx, start = dated
    res = idx.query(TEXT.replace("WITHIN 6", "WITHIN 6s"))
    assert res["events"].tolist() == result["events"].tolist()
    assert str(res["t_first"].dtype) == "datetime64[ns, Europe/Berlin]"
    offset = pd.Timestamp(start).value // 10**9
    assert [t.value // 10**9 - offset for t in res["t_first"]] == result["t_first"].tolist()
    assert {t.utcoffset() for t in res["t_last"]} == {pd.Timedelta("2h"), pd.Timedelta("1h")}
    assert res.event_times == {e: (lo + offset, hi + offset)
                               for e, (lo, hi) in result.event_times.items()}
    shown = res._repr_html_()
    assert str(res["t_first"].iloc[0]) in shown


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_a_datetime_answer_file_reads_back_the_same_instants(dated, tmp_path, suffix):
    idx, _ = dated
    res = idx.query(TEXT)
    res.to_file(tmp_path / f"a{suffix}")
    back = uc.read_answer(tmp_path / f"a{suffix}")
    if suffix == ".parquet":   # Parquet keeps the zone
        pd.testing.assert_frame_equal(back, pd.DataFrame(res), check_exact=True)
        empty = idx.query(TEXT.replace("x >= 2", "x >= 100"))
        empty.to_file(tmp_path / "empty.parquet")
        assert str(uc.read_answer(tmp_path / "empty.parquet")["t_first"].dtype) == \
            "datetime64[ns, Europe/Berlin]"
        return
    # CSV writes the UTC offset of each time, not the zone's name: the same instants, in UTC.
    assert back["events"].tolist() == res["events"].tolist()
    for column in ("t_first", "t_last"):
        assert str(back[column].dt.tz) == "UTC"
        assert back[column].tolist() == res[column].tolist()


def test_a_naive_datetime_answer_file_stays_naive(tmp_path):
    df = _archive()
    for column in ("t_lo", "t_hi"):
        df[column] = pd.Timestamp("2020-01-01") + pd.to_timedelta(df[column], unit="min")
    res = uc.build_index(df, time_unit="1min").query(TEXT)
    for suffix in (".parquet", ".csv"):
        res.to_file(tmp_path / f"a{suffix}")
        back = uc.read_answer(tmp_path / f"a{suffix}")
        assert str(back["t_first"].dtype) == "datetime64[ns]"
        assert back["t_last"].tolist() == res["t_last"].tolist()


def test_the_timeline_of_a_datetime_result_is_drawn_on_dates(dated):
    from matplotlib import dates

    idx, start = dated
    res = idx.query(TEXT)
    ax = res.plot(top=3, align="absolute")
    first = res["events"].iloc[0][0]
    lo, hi = res.event_times[first]
    offset = pd.Timestamp(start).value // 10**9
    bar = ax.patches[0]
    assert dates.num2date(bar.get_x()) == start + pd.Timedelta(seconds=lo - offset)
    assert bar.get_width() == pytest.approx((hi + 1 - lo) / 86400)
    assert "Europe/Berlin" in ax.get_xlabel()
    ax = res.plot(top=3, align="tuple")
    assert ax.patches[0].get_x() == 0 and "of 1 SECONDS" in ax.get_xlabel()
    # Each row starts at its events' first possible instant, named as a datetime.
    shift = min(res.event_times[e][0] for e in res["events"].iloc[0])
    when = (start + pd.Timedelta(seconds=shift - offset)).tz_convert("Europe/Berlin")
    name = ", ".join(map(str, res["events"].iloc[0]))
    assert f"{name} @ {when}" in [t.get_text() for t in ax.get_yticklabels()]
    plt.close("all")
