"""Every strategy equals the possible-worlds baseline on random small archives (A4)."""

from __future__ import annotations

from unittest.mock import patch

import pandas as pd
import pytest
from answer_checks import assert_same_answer, assert_strategy_is_the_oracle, cases
from hypothesis import given, note
from hypothesis import strategies as st

import uncertain_cep as uc
from uncertain_cep.query.engine import batch_engine
from uncertain_cep.query.engine.kernels import extension as extension_kernels


def _check(case: tuple[pd.DataFrame, object, object, str, str], strategy: str) -> None:
    df, pattern, max_speed, codes, layout = case
    note(str(pattern))
    coords = ("x", "y") if "y_lo" in df.columns else ("x",)
    try:
        idx = uc.build_index(df, max_speed=max_speed, coordinates=coords, codes=codes,
                             multi_tree=layout == "multi")
    except uc.InputError:
        # Condition 2 can leave a random group without any order instance; the baseline
        # must agree that it has none.
        assert max_speed is not None
        with pytest.raises(uc.InputError):
            uc.build_index(df, max_speed=max_speed, coordinates=coords,
                           multi_tree=False, codes=codes)
        return
    assert_strategy_is_the_oracle(idx, pattern, strategy)


# The entry-by-entry engines are baselines (query/baselines/entry_*.py), held to the
# oracle too: bench/bench_batches.py's ratios rest on them.
@pytest.mark.parametrize("strategy", ["selectivity", "sequential", "tree_traversal",
                                      "selectivity_entries", "sequential_entries"])
@given(case=cases(condition2=False))
def test_strategy_equals_possible_worlds(strategy: str, case) -> None:
    _check(case, strategy)


@pytest.mark.parametrize("strategy", ["selectivity", "sequential", "tree_traversal"])
@given(case=cases(condition2=True))
def test_strategy_equals_possible_worlds_under_condition_2(strategy: str, case) -> None:
    _check(case, strategy)


@given(case=cases(condition2=True))
def test_a_user_pair_predicate_gives_the_answers_of_the_same_builtin_condition(case):
    df, pattern, max_speed, codes, _ = case
    coords = ("x", "y") if "y_lo" in df.columns else ("x",)

    def same_speed(a, b, ta, tb):
        gaps = [max(0.0, a[c][0] - b[c][1], b[c][0] - a[c][1]) for c in coords]
        return sum(g * g for g in gaps) ** 0.5 <= max_speed * (tb - ta)

    try:
        builtin = uc.build_index(df, max_speed=max_speed, coordinates=coords, codes=codes)
    except uc.InputError:
        with pytest.raises(uc.InputError):
            uc.build_index(df, pair_predicate=same_speed, codes=codes)
        return
    user = uc.build_index(df, pair_predicate=same_speed, codes=codes)
    assert user.n_nodes == builtin.n_nodes
    assert_same_answer(user.query(pattern), builtin.query(pattern))
    assert_same_answer(user.query(pattern, strategy="possible_worlds"), builtin.query(pattern))


@pytest.mark.parametrize("strategy", ["selectivity", "sequential"])
@given(case=st.booleans().flatmap(lambda condition2: cases(condition2=condition2)))
def test_nodes_found_by_code_ranges_give_the_possible_worlds_answer(strategy: str,
                                                                   case) -> None:
    # Every window takes a group's nodes below the entry's matched node from that group's
    # code ranges, however few candidates it holds (engines switch at 16 per block); the
    # batches stay entries (never tuples, which take no code ranges).
    with (patch.object(extension_kernels, "BLOCK_COST", 0),
          patch.object(batch_engine, "TUPLE_RATIO", 1 << 40)):
        _check(case, strategy)
