"""An archive cut into shards between its groups' clusters, each shard indexed alone and
the shards read side by side, answers every query as the whole archive does and as the
possible-worlds baseline does (SEMANTICS A4), Condition 2 included: the cut is exact."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from answer_checks import assert_same_answer, cases
from hypothesis import event, given, note
from hypothesis import strategies as st

import uncertain_cep as uc
from uncertain_cep.index.shards import index_shards, merge_indexes, shard_of_rows


def _cut_archive(case, data: st.DataObject):
    df, pattern, max_speed, codes, layout = case
    coords = ("x", "y") if "y_lo" in df.columns else ("x",)
    try:
        whole = uc.build_index(df, max_speed=max_speed, coordinates=coords, codes=codes,
                               multi_tree=layout == "multi")
    except uc.InputError:
        return None
    index = whole.event_index
    archive = index.archive
    lo, hi = int(archive.t_lo.min()), int(archive.t_hi.max())
    # Cuts at events' earliest instants, where clusters start (else most cuts would leave
    # one shard), and anywhere.
    instants = st.sampled_from(sorted(set(archive.t_lo.tolist()))) | st.integers(lo, hi + 1)
    cuts = np.unique(data.draw(st.lists(instants, min_size=1, max_size=4), label="cuts"))
    shard = shard_of_rows(archive, cuts, index.settings.condition2)
    split_groups = sum(len(np.unique(shard[archive.group_of == g])) > 1
                       for g in range(archive.n_groups))
    event(f"shards: {len(np.unique(shard))}, groups cut: {min(split_groups, 2)}")
    window = pattern.window if pattern.window is not None else hi - lo
    event(f"window longer than the shortest shard: "
          f"{bool(len(cuts) > 1 and window > int(np.diff(cuts).min()))}")
    parts = [p for _, p in index_shards(archive, index.settings, cuts)]
    merged = uc.UncertainIndex(merge_indexes(parts))
    note(f"cuts {cuts.tolist()}, shard per row {shard.tolist()}")
    return whole, merged, pattern


@pytest.mark.parametrize("strategy", ["selectivity", "sequential", "tree_traversal"])
@given(case=cases(condition2=False), data=st.data())
def test_shards_side_by_side_answer_as_the_whole_archive(strategy, case, data) -> None:
    cut = _cut_archive(case, data)
    if cut is None:
        return
    whole, merged, pattern = cut
    want = whole.query(pattern, strategy="possible_worlds")
    event(f"negation: {bool(pattern.negations)}")
    assert_same_answer(merged.query(pattern, strategy=strategy), want)


@pytest.mark.parametrize("strategy", ["selectivity", "possible_worlds"])
@given(case=cases(condition2=True), data=st.data())
def test_shards_under_condition_2_answer_as_the_whole_archive(strategy, case, data) -> None:
    cut = _cut_archive(case, data)
    if cut is None:
        return
    whole, merged, pattern = cut
    assert_same_answer(merged.query(pattern, strategy=strategy),
                       whole.query(pattern, strategy="possible_worlds"))


def test_a_cut_condition_2_forbids_keeps_the_clusters_in_one_shard() -> None:
    # Two clusters 1 instant apart but 10 apart in space: at speed 1 the later event
    # cannot follow within 10 instants of the earlier one, so the cut at 5 is not exact
    # (it would allow ts = 4 and 5); the one at 40 is.
    df = pd.DataFrame({"event_id": [1, 2, 3], "group": [0, 0, 0], "t_lo": [0, 5, 40],
                       "t_hi": [4, 20, 44], "x": [0.0, 10.0, 10.0]})
    index = uc.build_index(df, max_speed=1.0, coordinates=("x",)).event_index
    shard = shard_of_rows(index.archive, np.array([5, 40]), index.settings.condition2)
    assert shard.tolist() == [0, 0, 2]
    merged = uc.UncertainIndex(merge_indexes(
        [p for _, p in index_shards(index.archive, index.settings, np.array([5, 40]))]))
    query = "PATTERN SEQ(A, B) DEFINE A AS x < 5, B AS x > 5 WITHIN 50"
    assert_same_answer(merged.query(query), uc.UncertainIndex(index).query(
        query, strategy="possible_worlds"))
