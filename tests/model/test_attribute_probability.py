"""Attribute pdf masses (SEMANTICS A1/A3) and the maximum-speed Condition 2 (SEMANTICS A2)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import truncnorm

import uncertain_cep as uc
from uncertain_cep.errors import InputError
from uncertain_cep.model.attributes import NumericAttribute
from uncertain_cep.model.events import Archive, read_archive
from uncertain_cep.model.feasibility import MaxSpeed, PairPredicate
from uncertain_cep.model.probability import interval_mass

ROW = np.array([0])
OPEN_FLAGS = [(False, False), (False, True), (True, False), (True, True)]


def uniform(lo: float, hi: float) -> NumericAttribute:
    return NumericAttribute("x", np.array([float(lo)]), np.array([float(hi)]))


def normal(mu: float, sigma: float, lo: float, hi: float) -> NumericAttribute:
    return NumericAttribute("x", np.array([float(lo)]), np.array([float(hi)]),
                            np.array([float(mu)]), np.array([float(sigma)]))


def mass(attr: NumericAttribute, low: float, high: float, low_open: bool = False,
         high_open: bool = False) -> float:
    return float(interval_mass(attr, ROW, low, high, low_open, high_open)[0])


def truncnorm_mass(mu: float, sigma: float, lo: float, hi: float, a: float, b: float) -> float:
    a, b = max(a, lo), min(b, hi)
    if a >= b:
        return 0.0
    dist = truncnorm((lo - mu) / sigma, (hi - mu) / sigma, loc=mu, scale=sigma)
    return float(dist.cdf(b) - dist.cdf(a))


finite = st.floats(-1e3, 1e3, allow_nan=False)


# --- uniform ranges and points --------------------------------------------------------------


@given(finite, st.floats(1e-3, 1e3), finite, finite)
def test_uniform_mass_is_overlap_fraction_whatever_the_bounds_openness(
        lo: float, width: float, q1: float, q2: float) -> None:
    hi = lo + width
    low, high = min(q1, q2), max(q1, q2)
    expected = max(0.0, min(hi, high) - max(lo, low)) / (hi - lo)
    for low_open, high_open in OPEN_FLAGS:
        assert mass(uniform(lo, hi), low, high, low_open, high_open) == pytest.approx(
            expected, abs=1e-9)


def test_uniform_mass_examples() -> None:
    attr = uniform(0, 4)
    assert mass(attr, 1, 2) == pytest.approx(0.25)
    assert mass(attr, -np.inf, np.inf, True, True) == 1.0
    assert mass(attr, 4, np.inf) == 0.0  # a single value of a continuous range has no mass
    assert mass(attr, 5, 6) == 0.0


@pytest.mark.parametrize("low, high, low_open, high_open, expected", [
    (5, np.inf, True, True, 0.0),     # x > 5
    (5, np.inf, False, True, 1.0),    # x >= 5
    (-np.inf, 5, True, True, 0.0),    # x < 5
    (-np.inf, 5, True, False, 1.0),   # x <= 5
    (5, 5, False, False, 1.0),        # x = 5
    (4, 6, True, True, 1.0),
    (5.5, 6, False, False, 0.0),
])
def test_point_value_mass_is_one_or_zero_and_open_bounds_matter(
        low: float, high: float, low_open: bool, high_open: bool, expected: float) -> None:
    assert mass(uniform(5, 5), low, high, low_open, high_open) == expected
    # A point with a normal pdf given is still a point.
    assert mass(normal(3, 1, 5, 5), low, high, low_open, high_open) == expected


def test_rows_are_computed_independently_and_in_the_order_asked() -> None:
    attr = NumericAttribute("x", np.array([0.0, 5.0, 0.0]), np.array([4.0, 5.0, 2.0]),
                            np.array([np.nan, np.nan, 1.0]), np.array([np.nan, np.nan, 0.5]))
    got = interval_mass(attr, np.array([2, 1, 0]), 1.0, 5.0, False, False)
    assert got[0] == pytest.approx(truncnorm_mass(1, 0.5, 0, 2, 1, 5), abs=1e-12)
    assert got.tolist()[1:] == [1.0, 0.75]


# --- truncated normal -----------------------------------------------------------------------


@st.composite
def normal_cases(draw: st.DrawFn) -> tuple[float, ...]:
    """mu, sigma, range and a query; the range's near end lies within 30 sigma of mu."""
    mu = draw(st.floats(-100, 100))
    sigma = draw(st.floats(0.01, 100))
    z_lo = draw(st.floats(-60, 30))
    z_width = draw(st.floats(1e-3, 60))
    if z_lo + z_width < -30:
        z_width = -30 - z_lo
    lo, hi = mu + z_lo * sigma, mu + (z_lo + z_width) * sigma
    q1, q2 = sorted(draw(st.floats(-0.5, 1.5)) for _ in range(2))
    return mu, sigma, lo, hi, lo + q1 * (hi - lo), lo + q2 * (hi - lo)


@given(normal_cases(), st.sampled_from(OPEN_FLAGS))
def test_truncated_normal_mass_equals_scipy_truncnorm(case: tuple[float, ...],
                                                      flags: tuple[bool, bool]) -> None:
    mu, sigma, lo, hi, a, b = case
    got = mass(normal(mu, sigma, lo, hi), a, b, *flags)
    assert got == pytest.approx(truncnorm_mass(mu, sigma, lo, hi, a, b), abs=1e-9)


@given(normal_cases())
def test_truncated_normal_mass_is_additive_and_total_one(case: tuple[float, ...]) -> None:
    mu, sigma, lo, hi, a, b = case
    attr = normal(mu, sigma, lo, hi)
    assert mass(attr, lo, hi) == pytest.approx(1.0, abs=1e-12)
    assert mass(attr, -np.inf, a) + mass(attr, a, b) + mass(attr, b, np.inf) == pytest.approx(
        1.0, abs=1e-9)


@given(st.floats(-1e6, 1e6), st.floats(1e-6, 1e3), st.floats(-1e6, 1e6), st.floats(1e-6, 1e6),
       st.floats(0, 1), st.floats(0, 1))
def test_truncated_normal_far_tails_stay_finite_probabilities(
        mu: float, sigma: float, lo: float, width: float, f1: float, f2: float) -> None:
    hi = lo + width
    a, b = lo + min(f1, f2) * width, lo + max(f1, f2) * width
    got = mass(normal(mu, sigma, lo, hi), a, b)
    assert math.isfinite(got) and 0.0 <= got <= 1.0


@pytest.mark.parametrize("mu, lo, hi, a, b", [(100, 0, 1, 0.5, 1), (0, 40, 41, 40, 40.1)])
def test_truncated_normal_mass_is_exact_with_mu_far_outside_the_range(
        mu: float, lo: float, hi: float, a: float, b: float) -> None:
    got = mass(normal(mu, 1, lo, hi), a, b)
    assert got == pytest.approx(truncnorm_mass(mu, 1, lo, hi, a, b), abs=1e-9)


# --- MaxSpeed -------------------------------------------------------------------------------


def two_boxes(x: list[tuple[float, float]], y: list[tuple[float, float]] | None = None
              ) -> Archive:
    cols: dict[str, object] = {"event_id": [10, 20], "group": [0, 0], "t_lo": [0, 0],
                               "t_hi": [9, 9], "x_lo": [x[0][0], x[1][0]],
                               "x_hi": [x[0][1], x[1][1]], "tag": ["a", "b"]}
    if y is not None:
        cols.update(y_lo=[y[0][0], y[1][0]], y_hi=[y[0][1], y[1][1]])
    return read_archive(pd.DataFrame(cols))


@pytest.mark.parametrize("x, y, v_max, gap", [
    ([(0, 1), (4, 5)], None, 1.0, 3),            # 1-D: distance 3
    ([(0, 2), (1, 5)], None, 0.0, 1),            # overlapping: distance 0
    ([(0, 1), (4, 5)], [(0, 1), (5, 6)], 1.0, 5),  # 2-D: sqrt(3^2 + 4^2)
    ([(0, 1), (4, 5)], [(0, 1), (5, 6)], 2.5, 2),
    ([(0, 3), (1, 2)], [(0, 1), (5, 6)], 1.0, 4),  # x overlaps: only y counts
    ([(0, 3), (1, 2)], [(0, 1), (1, 6)], 0.0, 1),  # touching boxes
])
def test_min_gap_follows_mindist_between_boxes(x, y, v_max: float, gap: int) -> None:
    coords = ("x",) if y is None else ("x", "y")
    check = MaxSpeed(v_max, coords).for_group(two_boxes(x, y), [0, 1])
    assert check.min_gap(0, 1) == check.min_gap(1, 0) == gap
    assert check.allows(0, 1, 3, 3 + gap) and check.allows(1, 0, 3, 3 + gap)
    assert gap == 1 or not check.allows(0, 1, 3, 2 + gap)


boxes = st.tuples(finite, st.floats(0, 100))


@given(st.lists(st.tuples(boxes, boxes), min_size=2, max_size=2),
       st.floats(1e-3, 1e3) | st.just(0.0), st.integers(1, 10**6))
def test_allows_agrees_with_min_gap(events, v_max: float, g: int) -> None:
    x = [(b[0][0], b[0][0] + b[0][1]) for b in events]
    y = [(b[1][0], b[1][0] + b[1][1]) for b in events]
    check = MaxSpeed(v_max, ("x", "y")).for_group(two_boxes(x, y), [0, 1])
    gap = check.min_gap(0, 1)
    if gap is None:  # v_max = 0 with separated boxes: no gap is enough
        assert v_max == 0 and not check.allows(0, 1, 0, g)
        return
    assert gap >= 1
    for t in {g, max(1, gap - 1), gap, gap + 1}:
        assert check.allows(0, 1, 0, t) == (t >= gap)
        assert check.allows(0, 1, 5, 5 + t) == (t >= gap)


@pytest.mark.parametrize("v_max", [-1.0, math.nan, math.inf, True, "3", None])
def test_invalid_v_max_is_rejected(v_max: object) -> None:
    with pytest.raises(InputError, match="max_speed"):
        MaxSpeed(v_max)  # type: ignore[arg-type]


def test_empty_coordinates_are_rejected() -> None:
    with pytest.raises(InputError, match="coordinate"):
        MaxSpeed(1.0, ())


@pytest.mark.parametrize("coordinate", ["z", "tag"])
def test_unknown_or_string_coordinate_is_rejected_naming_it(coordinate: str) -> None:
    with pytest.raises(InputError, match=f"coordinate '{coordinate}'"):
        MaxSpeed(1.0, ("x", coordinate)).for_group(two_boxes([(0, 1), (2, 3)]), [0, 1])


def test_numpy_integer_v_max_is_accepted() -> None:
    assert MaxSpeed(np.int64(3), ("x",)).v_max == 3


@pytest.mark.parametrize("v_max", [1e-20, 1e-300])
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_min_gap_terminates_for_a_tiny_v_max(v_max: float) -> None:
    check = MaxSpeed(v_max, ("x",)).for_group(two_boxes([(0, 0), (1e10, 1e10)]), [0, 1])
    exact, calls = check.allows, []

    def counted(*args: int) -> bool:
        calls.append(args)
        if len(calls) > 1000:
            raise RuntimeError("min_gap does not terminate")
        return exact(*args)

    check.allows = counted  # type: ignore[method-assign]
    gap = check.min_gap(0, 1)
    assert gap is None or exact(0, 1, 0, gap)
    assert not exact(0, 1, 0, 10**9)


# --- PairPredicate --------------------------------------------------------------------------


def test_pair_predicate_receives_event_views_with_ids() -> None:
    archive = two_boxes([(0, 1), (2, 3)], [(5, 5), (6, 6)])
    seen = []

    def func(a, b, ta, tb) -> bool:
        seen.append((a, b, ta, tb))
        return tb - ta >= 2

    check = PairPredicate(func).for_group(archive, [1, 0])
    assert check.allows(0, 1, 3, 5) and not check.allows(1, 0, 3, 4)
    assert check.min_gap(0, 1) is None
    a, b, ta, tb = seen[0]
    assert (a["event_id"], b["event_id"], ta, tb) == (20, 10, 3, 5)
    assert a == {"event_id": 20, "group": 0, "t_lo": 0, "t_hi": 9, "x": (2.0, 3.0),
                 "y": (6.0, 6.0), "tag": "b"}


def test_build_index_calls_pair_predicate_on_group_members_in_time_order() -> None:
    df = pd.DataFrame({"event_id": ["p", "q", "r"], "group": ["g", "g", "h"],
                       "t_lo": [0, 0, 0], "t_hi": [3, 3, 3], "x": [0.0, 1.0, 2.0]})
    calls = []

    def func(a, b, ta, tb) -> bool:
        calls.append((a["event_id"], b["event_id"], a["group"], b["group"], ta, tb))
        return True

    uc.build_index(df, pair_predicate=func)
    assert calls
    assert all(ga == gb == "g" and {ea, eb} == {"p", "q"} and ta < tb
               for ea, eb, ga, gb, ta, tb in calls)
