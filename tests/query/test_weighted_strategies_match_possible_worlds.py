"""Under instant weights (SEMANTICS A6) every strategy equals the possible-worlds
baseline, which weighs each world by its instants' weights: list weights with zeros
inside and at the ends of intervals, normal weights, events without weights beside
them, Condition 2, negations; and equal weights answer as no weights do, to 1e-12."""

from __future__ import annotations

import pandas as pd
import pytest
from answer_checks import assert_strategy_is_the_oracle, cases
from hypothesis import event, given, note
from hypothesis import strategies as st
from random_archives import instant_weights

import uncertain_cep as uc
from uncertain_cep.model.events import read_archive
from uncertain_cep.query.baselines.possible_worlds import possible_worlds_answer
from uncertain_cep.query.language.parse import parse_query

A6 = pd.DataFrame({"event_id": ["e1", "e2"], "group": [0, 0], "t_lo": [1, 2], "t_hi": [2, 3],
                   "x": [1.0, 2.0], "t_weights": [[1.0, 3.0], None]})


def _check(case, weighted: pd.DataFrame, strategy: str) -> None:
    _, pattern, max_speed, codes, layout = case
    note(str(pattern))
    note(repr(weighted[["t_lo", "t_hi", "t_weights", "t_mu", "t_sigma"]]))
    coords = ("x", "y") if "y_lo" in weighted.columns else ("x",)
    try:
        idx = uc.build_index(weighted, max_speed=max_speed, coordinates=coords, codes=codes,
                             multi_tree=layout == "multi")
    except uc.InputError:
        # A group whose worlds all weigh zero (or, under Condition 2, that has none): the
        # baseline must find no world of positive weight either.
        event("no order instance of positive weight")
        if max_speed is None:
            with pytest.raises(uc.InputError):
                possible_worlds_answer(read_archive(weighted, weighted=True),
                                       pattern if not isinstance(pattern, str)
                                       else parse_query(pattern))
        return
    assert_strategy_is_the_oracle(idx, pattern, strategy)


def test_the_semantics_a6_example_on_every_strategy():
    idx = uc.build_index(A6)
    query = "PATTERN SEQ(A, B) DEFINE A AS x < 1.5, B AS x > 1.5 WITHIN 1"
    for strategy in ("selectivity", "sequential", "tree_traversal", "possible_worlds",
                     "selectivity_entries", "sequential_entries"):
        (row,) = idx.query(query, strategy=strategy).itertuples()
        assert row.events == ("e1", "e2")
        assert row.confidence == pytest.approx(0.8, abs=1e-12)
        assert (row.t_first, row.t_last) == (1, 3)
    plain = uc.build_index(A6.drop(columns="t_weights")).query(query)
    assert plain["confidence"].tolist() == pytest.approx([2 / 3], abs=1e-12)


@pytest.mark.parametrize("strategy", ["selectivity", "sequential", "tree_traversal",
                                      "selectivity_entries", "sequential_entries"])
@given(case=cases(condition2=False), data=st.data())
def test_weighted_strategy_equals_weighted_possible_worlds(strategy: str, case, data) -> None:
    _check(case, data.draw(instant_weights(case[0])), strategy)


@pytest.mark.parametrize("strategy", ["selectivity", "sequential", "tree_traversal"])
@given(case=cases(condition2=True), data=st.data())
def test_weighted_strategy_equals_weighted_possible_worlds_under_condition_2(
        strategy: str, case, data) -> None:
    _check(case, data.draw(instant_weights(case[0])), strategy)


@given(case=cases(condition2=False), data=st.data())
def test_equal_weights_answer_as_no_weights_to_1e_12(case, data) -> None:
    df, pattern, _, codes, layout = case
    scale = data.draw(st.lists(st.sampled_from([None, 0.5, 1.0, 7.0]), min_size=len(df),
                               max_size=len(df)))
    equal = df.assign(t_weights=[None if c is None else [c] * int(hi - lo + 1)
                                 for c, lo, hi in zip(scale, df["t_lo"], df["t_hi"])])
    try:
        plain = uc.build_index(df, codes=codes, multi_tree=layout == "multi")
    except uc.InputError:
        with pytest.raises(uc.InputError):
            uc.build_index(equal, codes=codes, multi_tree=layout == "multi")
        return
    weighted = uc.build_index(equal, codes=codes, multi_tree=layout == "multi")
    want, got = plain.query(pattern), weighted.query(pattern)
    assert list(got["events"]) == list(want["events"])
    assert got["confidence"].to_numpy() == pytest.approx(want["confidence"].to_numpy(),
                                                         abs=1e-12, rel=0)
    assert list(got["t_first"]) == list(want["t_first"])
    assert list(got["t_last"]) == list(want["t_last"])
