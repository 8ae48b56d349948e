"""Negation corner cases found by the property tests, kept as fixed regressions."""

from __future__ import annotations

import pandas as pd

import uncertain_cep as uc


def test_worlds_ruled_out_by_a_certain_negated_event_do_not_set_t_first():
    # Event 1 is certainly at 3 and certainly satisfies the negated symbol, so a match
    # (4, 7) can only start after it: t_first is 3, although event 4 may be at 2.
    df = pd.DataFrame({
        "event_id": range(8), "group": ["g0"] * 3 + ["g1"] * 2 + ["g2"] * 3,
        "t_lo": [0, 3, 1, 0, 2, 0, 1, 6], "t_hi": [0, 3, 4, 0, 5, 0, 1, 6], "x": 0.0})
    query = "PATTERN SEQ(A, NOT B, A) DEFINE A AS x >= 0, B AS x >= 0"
    idx = uc.build_index(df)
    want = idx.query(query, strategy="possible_worlds")
    for strategy in ("selectivity", "sequential", "tree_traversal"):
        got = idx.query(query, strategy=strategy)
        pd.testing.assert_frame_equal(got, want, check_exact=False, atol=1e-9)
    row = want[want["events"] == (4, 7)].iloc[0]
    assert (row.t_first, row.t_last) == (3, 6)
    assert abs(row.confidence - 2 / 3) < 1e-12
