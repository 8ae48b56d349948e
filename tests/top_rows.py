"""Shared by the tests of top-k answers (issue 48): a top-k answer is the full answer's
first k rows, and a best k of the possible-worlds oracle's."""

from __future__ import annotations

import pandas as pd
from answer_checks import TOL

__all__ = ["assert_a_top_k_of", "assert_first_rows_of"]


def assert_first_rows_of(top: pd.DataFrame, full: pd.DataFrame, k: int) -> None:
    """``top`` is the first ``k`` rows of ``full``, row for row: ties broken alike, the
    confidences equal to 1e-9 (a slice's search bounded by its span sums a tuple's
    weights in another order than the whole index's: 0.9999999999999999 against
    0.999999999999999, shown to 15 digits as 1.0 and 0.999999999999999, both ranked as
    1 to 12 digits)."""
    head = full.head(k).reset_index(drop=True)
    assert list(top["events"]) == list(head["events"]), (top, full)
    assert len(top) == len(head)
    for got, want in zip(top["confidence"], head["confidence"]):
        assert abs(got - want) <= TOL, (top, full)
    assert list(top["t_first"]) == list(head["t_first"])
    assert list(top["t_last"]) == list(head["t_last"])


def assert_a_top_k_of(top: pd.DataFrame, oracle: pd.DataFrame, k: int) -> None:
    """``top`` holds ``min(k, len(oracle))`` rows of the oracle's answer with its
    confidences (to 1e-9), the best ones: position by position its confidences are the
    oracle's first k (rows whose confidences differ by rounding noise may swap)."""
    want = dict(zip(oracle["events"], oracle["confidence"]))
    assert len(top) == min(k, len(oracle))
    for events, confidence in zip(top["events"], top["confidence"]):
        assert abs(want[events] - confidence) <= TOL
    for got, best in zip(top["confidence"], oracle["confidence"].head(k)):
        assert abs(got - best) <= TOL
