"""The bundled sample archive and the sample generators."""

from __future__ import annotations

import heapq
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


def _has_an_order_instance(t_lo: np.ndarray, t_hi: np.ndarray) -> bool:
    """Whether the events can take distinct instants in their intervals: instant by
    instant, the waiting event with the earliest deadline takes it (exact for unit events
    at integer instants)."""
    events = sorted(zip(t_lo.tolist(), t_hi.tolist()))
    waiting: list[int] = []
    i, t = 0, None
    while i < len(events) or waiting:
        if not waiting:
            t = events[i][0] if t is None else max(t, events[i][0])
        while i < len(events) and events[i][0] <= t:
            heapq.heappush(waiting, events[i][1])
            i += 1
        if heapq.heappop(waiting) < t:
            return False
        t += 1
    return True


@given(seed=st.integers(0, 2**32 - 1), clustered=st.booleans())
def test_synthetic_groups_are_all_feasible(seed, clustered):
    # Feasibility read from the intervals: a clustered group of a hundred events may need
    # more OI-tree nodes than the default budget (seed 5724953 needs 2,039,122), which
    # says nothing of whether it has an order instance.
    df = generate_synthetic(300, groups=3, seed=seed, clustered=clustered)
    assert len(df) == 300 and df["event_id"].is_unique
    for _, group in df.groupby("group"):
        assert _has_an_order_instance(group["t_lo"].to_numpy(), group["t_hi"].to_numpy())


def test_order_instances_found_from_intervals_are_those_of_the_index():
    # The check above, held to the index on groups it can build, feasible or not.
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(1, 7))
        lo = rng.integers(0, 8, n)
        hi = lo + rng.integers(0, 3, n)
        df = pd.DataFrame({"event_id": range(n), "group": 0, "t_lo": lo, "t_hi": hi})
        try:
            feasible = uc.build_index(df).forest(0).n_order_instances >= 1
        except uc.InputError:
            feasible = False
        assert _has_an_order_instance(lo, hi) == feasible, df


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
