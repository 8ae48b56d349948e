"""Weighted OI-trees (SEMANTICS A6) at their edges: only the ratios of an event's weights
count, whatever their scale; weights whose products leave the doubles' range refuse the
group with an error that names it, never index zeros or NaNs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import uncertain_cep as uc

QUERY = "PATTERN SEQ(A, B) DEFINE A AS x < 1, B AS x >= 1 WITHIN 3 CONFIDENCE 0.01"


def _chain(n: int, weights: list[list[float]]) -> pd.DataFrame:
    lo = np.arange(n)
    return pd.DataFrame({"event_id": np.arange(n), "group": "g", "t_lo": lo, "t_hi": lo + 1,
                         "x": np.arange(n) % 2, "t_weights": weights})


@pytest.mark.parametrize("scale", [1e-200, 1e-5, 1e5, 1e200])
def test_only_the_ratios_of_an_events_weights_count(scale):
    weights = [[1.0, 3.0], [2.0, 1.0], [1.0, 1.0], [5.0, 1.0], [1.0, 4.0]]
    want = uc.build_index(_chain(5, weights)).query(QUERY)
    got = uc.build_index(_chain(5, [[w * scale for w in ws] for ws in weights])).query(QUERY)
    assert list(got["events"]) == list(want["events"]) and len(want) > 0
    assert got["confidence"].to_numpy() == pytest.approx(want["confidence"].to_numpy(),
                                                         abs=1e-12)


def test_weights_whose_products_underflow_refuse_the_group_by_name():
    # An OI placing two events late weighs 1e-400 relative to the first: below a double.
    with pytest.raises(uc.IndexBuildError, match=r"group 'g'.*smaller than a double holds"):
        uc.build_index(_chain(6, [[1.0, 1e-200]] * 6))
