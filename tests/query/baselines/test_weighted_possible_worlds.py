"""The possible-worlds baseline under instant weights (SEMANTICS A6): the section's
example; equal weights (any constant per event) answer exactly as without weights;
zero weights at an interval's ends answer as the narrower interval; a group whose OIs
all weigh zero is an error naming it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st
from random_archives import archives, patterns

import uncertain_cep as uc
from uncertain_cep.model.events import read_archive
from uncertain_cep.query.baselines.possible_worlds import group_worlds, possible_worlds_answer
from uncertain_cep.query.language.parse import parse_query

A6 = pd.DataFrame({"event_id": ["e1", "e2"], "group": [0, 0], "t_lo": [1, 2], "t_hi": [2, 3],
                   "x": [1.0, 2.0], "t_weights": [[1.0, 3.0], None]})


def test_the_semantics_a6_example():
    archive = read_archive(A6, weighted=True)
    worlds, omega = group_worlds(archive, np.array([0, 1]))
    assert sorted(map(tuple, worlds.tolist())) == [(1, 2), (1, 3), (2, 3)]
    assert omega.sum() == 5
    assert omega[worlds[:, 0] == 2].sum() / omega.sum() == pytest.approx(0.6, abs=1e-12)
    query = parse_query("PATTERN SEQ(A, B) DEFINE A AS x < 1.5, B AS x > 1.5 WITHIN 1")
    (match,) = possible_worlds_answer(archive, query)
    assert match.events == (0, 1) and match.confidence == pytest.approx(0.8, abs=1e-12)
    (plain,) = possible_worlds_answer(read_archive(A6.drop(columns="t_weights")), query)
    assert plain.confidence == pytest.approx(2 / 3, abs=1e-12)


def _answers(archive, pattern) -> dict[tuple[int, ...], tuple[float, int, int]]:
    return {m.events: (m.confidence, m.t_first, m.t_last)
            for m in possible_worlds_answer(archive, pattern)}


def _same(got: dict, want: dict) -> None:
    assert got.keys() == want.keys()
    for events, (conf, first, last) in want.items():
        assert got[events][0] == pytest.approx(conf, abs=1e-12)
        assert got[events][1:] == (first, last)


@settings(max_examples=15)
@given(df=archives(max_events=8), pattern=patterns(("x",)), data=st.data())
def test_equal_weights_answer_exactly_as_without_weights(df, pattern, data):
    note(str(pattern))
    df = df.drop(columns=[c for c in df.columns if c.startswith("y")])
    scale = data.draw(st.lists(st.sampled_from([None, 0.5, 1.0, 7.0]), min_size=len(df),
                               max_size=len(df)))
    weighted = df.assign(t_weights=[None if c is None else [c] * int(hi - lo + 1)
                                    for c, lo, hi in zip(scale, df["t_lo"], df["t_hi"])])
    _same(_answers(read_archive(weighted, weighted=True), pattern),
          _answers(read_archive(df), pattern))


@settings(max_examples=15)
@given(df=archives(max_events=8), pattern=patterns(("x",)), data=st.data())
def test_zero_weights_at_an_intervals_ends_answer_as_the_narrower_interval(df, pattern, data):
    note(str(pattern))
    df = df.drop(columns=[c for c in df.columns if c.startswith("y")]).reset_index(drop=True)
    e = data.draw(st.integers(0, len(df) - 1))
    lo, hi = int(df.at[e, "t_lo"]), int(df.at[e, "t_hi"])
    a = data.draw(st.integers(lo, hi))
    b = data.draw(st.integers(a, hi))
    weights = [None] * len(df)
    weights[e] = [1.0 if a <= t <= b else 0.0 for t in range(lo, hi + 1)]
    narrow = df.copy()
    narrow.loc[e, ["t_lo", "t_hi"]] = [a, b]
    try:
        want = _answers(read_archive(narrow), pattern)
    except uc.InputError:
        # The narrower group has no order: the weighted one has none of weight > 0.
        with pytest.raises(uc.InputError, match="weighs zero"):
            _answers(read_archive(df.assign(t_weights=weights), weighted=True), pattern)
        return
    _same(_answers(read_archive(df.assign(t_weights=weights), weighted=True), pattern), want)


def test_a_group_whose_order_instances_all_weigh_zero_is_named():
    df = pd.DataFrame({"event_id": ["a", "b"], "group": ["g7", "g7"], "t_lo": [1, 1],
                       "t_hi": [2, 2], "x": [1.0, 2.0],
                       "t_weights": [[0.0, 1.0], [0.0, 1.0]]})   # both only at 2
    with pytest.raises(uc.InputError, match=r"group 'g7': every order instance .* zero"):
        possible_worlds_answer(read_archive(df, weighted=True),
                               parse_query("PATTERN SEQ(A, B) DEFINE A AS x < 1.5, B AS x > 1.5"))
