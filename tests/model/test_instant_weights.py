"""Instant weights (SEMANTICS A6) are read from t_mu/t_sigma or t_weights and checked,
every error naming the event, its row and the column; an archive that gives them is
refused by the reader (nothing weighs possible worlds by them yet) rather than read as
if its instants were equally likely or its weight columns were attributes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import norm

import uncertain_cep as uc
from uncertain_cep.input_tables import ColumnLabels
from uncertain_cep.model.events import read_archive
from uncertain_cep.model.instant_weights import normal_instant_weights, read_instant_weights


def _read(df: pd.DataFrame, unit=None):
    ids = df["event_id"].to_numpy()
    return read_instant_weights(df, ids, df["t_lo"].to_numpy(), df["t_hi"].to_numpy(), unit,
                                ColumnLabels({}))


def _frame(**columns) -> pd.DataFrame:
    return pd.DataFrame({"event_id": ["e1", "e2"], "group": [0, 0], "t_lo": [1, 2],
                         "t_hi": [2, 3], **columns})


def test_the_semantics_example_weights_are_read_per_instant_and_unweighted_events_store_none():
    w = _read(_frame(t_weights=[[1, 3], None]))
    assert w.of(0).tolist() == [1.0, 3.0] and w.of(1) is None
    assert w.weighted.tolist() == [True, False] and len(w.values) == 2
    assert _read(_frame()) is None


@given(lo=st.integers(-50, 50), width=st.integers(0, 30), mu=st.floats(-80, 80),
       sigma=st.floats(0.05, 40))
def test_normal_weights_are_the_masses_of_each_instants_unit_interval(lo, width, mu, sigma):
    got = normal_instant_weights(lo, lo + width, mu, sigma)
    k = np.arange(lo, lo + width + 1)
    want = norm.cdf(k + 1, mu, sigma) - norm.cdf(k, mu, sigma)
    assert np.allclose(got, want, rtol=1e-9, atol=1e-15)
    # Far out on either side, where differences of values near 1 vanish, the weights
    # keep their ratios (they are relative): computed on the nearer tail.
    far = normal_instant_weights(40, 42, 0.0, 5.0)
    assert (far > 0).all() and far[0] / far[1] == pytest.approx(
        (norm.sf(40, 0, 5) - norm.sf(41, 0, 5)) / (norm.sf(41, 0, 5) - norm.sf(42, 0, 5)))


def test_normal_parameters_follow_the_time_columns_units():
    numbers = _read(_frame(t_mu=[3.0, np.nan], t_sigma=[2.0, np.nan]), unit=2.0)
    # In instants: mu = 1.5, sigma = 1 (time_unit 2).
    assert numbers.of(0) == pytest.approx(normal_instant_weights(1, 2, 1.5, 1.0))
    assert numbers.of(1) is None
    dated = _frame(t_mu=pd.to_datetime([3, None], unit="s"),
                   t_sigma=pd.to_timedelta([2, None], unit="s"))
    assert _read(dated, unit="2s").of(0) == pytest.approx(normal_instant_weights(1, 2, 1.5,
                                                                                 1.0))


@pytest.mark.parametrize(("columns", "message"), [
    ({"t_weights": [[1, -1], None]},
     r"event 'e1' \(row 0\): column 't_weights' gives its instant 2 \(weight 2 of 2\) the "
     r"weight -1"),
    ({"t_weights": [None, [1, np.nan]]}, r"event 'e2' \(row 1\): column 't_weights' .* nan"),
    ({"t_weights": [[1, np.inf], None]}, r"event 'e1' \(row 0\): column 't_weights' .* inf"),
    ({"t_weights": [[1, 2, 3], None]}, r"event 'e1' \(row 0\): .*lists 3 weights.* 2 instants"),
    ({"t_weights": [[0, 0], None]}, r"event 'e1' \(row 0\): column 't_weights' .* zero"),
    ({"t_weights": [["a", 1], None]}, r"event 'e1' \(row 0\): .* not a list of numbers"),
    ({"t_mu": [1.0, 2.0], "t_sigma": [1.0, 0.0]}, r"event 'e2' \(row 1\): .*'t_sigma' = 0"),
    ({"t_mu": [1.0, 2.0], "t_sigma": [1.0, -2.0]}, r"event 'e2' \(row 1\): .*not positive"),
    ({"t_mu": [1.0, np.nan], "t_sigma": [1.0, 1.0]}, r"event 'e2' \(row 1\): column 't_mu' is "
                                                      r"missing"),
    ({"t_mu": [1.0, 2.0]}, r"column 't_mu' without 't_sigma'"),
    ({"t_mu": [1e6, np.nan], "t_sigma": [1.0, np.nan]},
     r"event 'e1' \(row 0\): .*'t_mu'/'t_sigma'.* zero"),
    ({"t_mu": [1.0, np.nan], "t_sigma": [1.0, np.nan], "t_weights": [[1, 1], None]},
     r"event 'e1' \(row 0\): both 't_weights' and 't_mu'/'t_sigma'"),
])
def test_bad_weights_are_refused_naming_the_event_row_and_column(columns, message):
    with pytest.raises(uc.InputError, match=message) as e:
        _read(_frame(**columns))
    assert e.value.row is None or e.value.row in (0, 1)


def test_an_archive_with_weights_is_built_weighted_not_read_as_equal_weights_or_attributes():
    for columns in ({"t_weights": [[1, 3], None]}, {"t_mu": [1.5, 2.5], "t_sigma": [1.0, 1.0]}):
        archive = uc.build_index(_frame(**columns))._index.archive
        assert archive.instant_weights is not None and archive.instant_weights.weighted[0]
        assert not set(archive.numeric_names) & {"t_weights", "t_mu", "t_sigma"}
        # Reading without weights (what a Spark build still does) refuses them.
        with pytest.raises(uc.InputError, match=r"weights .*SEMANTICS A6.*drop the column"):
            read_archive(_frame(**columns))
    # Checked first: a bad weight is named as such.
    with pytest.raises(uc.InputError, match=r"event 'e1' \(row 0\): column 't_weights'"):
        uc.build_index(_frame(t_weights=[[1, -3], None]))
    # The names stay reserved: never an attribute, never a group column.
    with pytest.raises(uc.InputError, match="reserved"):
        uc.build_index(_frame(), group_by="t_mu")


def test_arrow_tables_give_the_weights_pandas_gives():
    import pyarrow as pa

    base = pd.Timestamp("2024-01-01", tz="UTC")
    frame = pd.DataFrame({
        "event_id": [1, 2, 3], "group": 0,
        "t_lo": base + pd.to_timedelta([0, 1, 5], unit="s"),
        "t_hi": base + pd.to_timedelta([2, 3, 6], unit="s"),
        "t_mu": [base + pd.Timedelta(seconds=1.2), pd.NaT, pd.NaT],
        "t_sigma": [pd.Timedelta(seconds=0.7), pd.NaT, pd.NaT],
        "x": [0.0, 1.0, 2.0]})
    lists = frame.drop(columns=["t_mu", "t_sigma"]).assign(
        t_weights=[None, [1.0, 0.0, 2.0], None])
    q = "PATTERN SEQ(A, B) DEFINE A AS x < 0.5, B AS x > 0.5 WITHIN 4 CONFIDENCE 0.01"
    for df in (frame, lists):
        want = uc.build_index(df, time_unit="1s").query(q)
        got = uc.build_index(pa.Table.from_pandas(df, preserve_index=False),
                             time_unit="1s").query(q)
        assert len(want) > 0 and got.equals(want)
        assert uc.build_index(pa.Table.from_pandas(df, preserve_index=False),
                              time_unit="1s").describe().weighted_events == 1
