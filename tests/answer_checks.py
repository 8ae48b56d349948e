"""Shared by the tests that hold an evaluation path to the possible-worlds oracle: the
answer comparison (to the contract's 1e-9) and random small cases (an archive, a
pattern, Condition 2, codes and layout)."""

from __future__ import annotations

from itertools import pairwise

import pandas as pd
from hypothesis import strategies as st
from random_archives import archives, patterns

__all__ = ["TOL", "assert_same_answer", "assert_same_pairs", "assert_strategy_is_the_oracle",
           "cases"]

TOL = 1e-9


def assert_same_answer(got: pd.DataFrame, want: pd.DataFrame) -> None:
    """The same tuples with confidences within the contract's 1e-9, and both in answer
    order (confidence descending). Tuples whose confidences differ only by rounding noise
    may come in either order: which 12-digit value a sum rounds to depends on the order it
    was added up in."""
    for frame in (got, want):
        conf = list(frame["confidence"])
        assert all(a >= b - TOL for a, b in pairwise(conf)), frame
    a = got.sort_values("events", key=lambda s: s.map(str)).reset_index(drop=True)
    b = want.sort_values("events", key=lambda s: s.map(str)).reset_index(drop=True)
    assert list(a["events"]) == list(b["events"]), (got, want)
    for x, y in zip(a["confidence"], b["confidence"]):
        assert abs(x - y) <= TOL
    assert list(a["t_first"]) == list(b["t_first"])
    assert list(a["t_last"]) == list(b["t_last"])


def assert_strategy_is_the_oracle(idx: object, pattern: object, strategy: str) -> None:
    """``strategy`` answers ``pattern`` on ``idx`` as the possible-worlds baseline does
    (hypothesis notes how large the answer was and whether it negates)."""
    from hypothesis import event

    want = idx.query(pattern, strategy="possible_worlds")  # type: ignore[attr-defined]
    got = idx.query(pattern, strategy=strategy)  # type: ignore[attr-defined]
    event(f"answer rows: {min(len(want), 5)}{'+' if len(want) >= 5 else ''}")
    event(f"negation: {bool(pattern.negations)}")  # type: ignore[attr-defined]
    assert_same_answer(got, want)


def assert_same_pairs(got: list, want: pd.DataFrame) -> None:
    """``got``, ``[events, confidence]`` pairs a job printed as JSON, holds the tuples of
    ``want`` with confidences within the contract's 1e-9 (in any order)."""
    expected = dict(zip(want["events"], want["confidence"]))
    found = {tuple(events): confidence for events, confidence in got}
    assert len(found) == len(got) and sorted(found) == sorted(expected)
    for events, confidence in found.items():
        assert abs(confidence - expected[events]) <= TOL


@st.composite
def cases(draw: st.DrawFn, condition2: bool
          ) -> tuple[pd.DataFrame, object, object, str, str]:
    df = draw(archives())
    attributes = ("x", "y") if "y_lo" in df.columns else ("x",)
    # Single-item patterns too: their t_first and t_last are one event's extremes.
    pattern = draw(patterns(attributes, min_items=1))
    max_speed = draw(st.sampled_from([2.0, 4.0, 10.0])) if condition2 else None
    codes = draw(st.sampled_from(["compact", "paper"]))
    layout = draw(st.sampled_from(["multi", "multi", "single"]))
    return df, pattern, max_speed, codes, layout
