"""The bundled sample archive and the sample generators."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import uncertain_cep as uc
from uncertain_cep.datasets import disjoint_sequence, generate_office_rfid, generate_synthetic
from uncertain_cep.datasets.office_rfid import ROOMS

SAMPLE = Path(__file__).resolve().parent.parent / "datasets" / "sample"


@pytest.fixture(scope="module")
def office() -> pd.DataFrame:
    return pd.read_parquet(SAMPLE / "office_rfid.parquet")


def test_bundled_parquet_equals_a_fresh_run_of_the_generator(office):
    pd.testing.assert_frame_equal(office, generate_office_rfid(), check_exact=True)


def test_bundled_archive_has_the_counts_its_readme_states(office):
    readme = (SAMPLE / "README.md").read_text()
    assert "480 readings" in readme and "12 people" in readme and "8 rooms" in readme
    assert len(office) == 480
    assert office["person"].nunique() == 12
    assert set(office["tag"]) == set(ROOMS) and len(ROOMS) == 8
    assert office["event_id"].is_unique
    assert (office.groupby("person").size() == 40).all()
    width = office["t_hi"] - office["t_lo"] + 1
    assert width.between(1, 4).all()
    assert list(office.columns) == ["event_id", "person", "t_lo", "t_hi", "x_lo", "x_hi",
                                    "y_lo", "y_hi", "tag"]


def test_every_person_of_the_bundled_archive_is_feasible_at_walking_speed(office):
    idx = uc.build_index(office, group_by="person", max_speed=2.0)
    assert idx.n_groups == 12 and idx.n_events == 480
    for person in office["person"].unique():
        assert idx.forest(person).n_order_instances >= 1


@given(people=st.integers(1, 4), readings=st.integers(1, 12), seed=st.integers(0, 2**32 - 1))
def test_office_generator_is_deterministic_and_feasible(people, readings, seed):
    df = generate_office_rfid(people=people, readings_per_person=readings, seed=seed)
    pd.testing.assert_frame_equal(
        df, generate_office_rfid(people=people, readings_per_person=readings, seed=seed))
    assert len(df) == people * readings
    uc.build_index(df, group_by="person", max_speed=2.0)


@given(seed=st.integers(0, 2**32 - 1), clustered=st.booleans())
def test_synthetic_is_deterministic_per_seed(seed, clustered):
    a = generate_synthetic(60, groups=3, seed=seed, clustered=clustered)
    b = generate_synthetic(60, groups=3, seed=seed, clustered=clustered)
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    other = generate_synthetic(60, groups=3, seed=seed + 1, clustered=clustered)
    assert not a.equals(other)


@given(seed=st.integers(0, 2**32 - 1), clustered=st.booleans())
def test_synthetic_groups_are_all_feasible(seed, clustered):
    df = generate_synthetic(300, groups=3, seed=seed, clustered=clustered)
    assert len(df) == 300 and df["event_id"].is_unique
    idx = uc.build_index(df)
    assert idx.n_events == 300
    for g in df["group"].unique():
        assert idx.forest(g).n_order_instances >= 1


def test_synthetic_true_instants_are_distinct_per_group_for_point_intervals():
    # With f = (1, 1) every interval is the true instant itself.
    for clustered in (False, True):
        df = generate_synthetic(500, groups=3, f=(1, 1), seed=7, clustered=clustered)
        assert (df["t_lo"] == df["t_hi"]).all()
        assert not df.duplicated(["group", "t_lo"]).any()
        assert df["t_lo"].between(0, 10 * 500 - 1).all()
        uc.build_index(df)


@given(f_lo=st.integers(1, 6), extra=st.integers(0, 4), d=st.integers(1, 3),
       width=st.floats(0.0, 1.0), seed=st.integers(0, 1000))
def test_synthetic_intervals_have_f_in_the_requested_range(f_lo, extra, d, width, seed):
    f = (f_lo, f_lo + extra)
    df = generate_synthetic(80, groups=2, d=d, f=f, value_width=width, seed=seed)
    n_instants = df["t_hi"] - df["t_lo"] + 1
    assert n_instants.between(*f).all()
    for a in range(d):
        half = (df[f"a{a}_hi"] - df[f"a{a}_lo"]) / 2
        assert (half >= 0).all() and (half <= width + 1e-12).all()
    assert sorted(df.columns) == sorted(
        ["event_id", "group", "t_lo", "t_hi",
         *(f"a{a}_{s}" for a in range(d) for s in ("lo", "hi"))])


@pytest.mark.parametrize("n", range(1, 9))
def test_disjoint_sequence_has_two_to_the_n_order_instances(n):
    df = disjoint_sequence(n)
    assert len(df) == n and (df["t_hi"] - df["t_lo"] + 1 == 2).all()
    assert (df["t_lo"].to_numpy()[1:] > df["t_hi"].to_numpy()[:-1]).all()
    for multi_tree in (True, False):
        idx = uc.build_index(df, multi_tree=multi_tree)
        assert idx.forest(0).n_order_instances == 2**n


@pytest.mark.parametrize("f", [1, 3])
def test_disjoint_sequence_has_f_to_the_n_order_instances(f):
    idx = uc.build_index(disjoint_sequence(4, f=f))
    assert idx.forest(0).n_order_instances == f**4
    assert np.all(idx.archive.t_hi - idx.archive.t_lo + 1 == f)
