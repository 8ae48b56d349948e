"""The node budget is checked from an exact count before anything is built (Zhou et al.
4.1; issue "Nothing lost, nothing silent", Fail fast).

Groups far over the budget used to allocate gigabytes and run for minutes before failing
(or be killed); they must fail at once with an error that names the group, says how large
it is and what to do. The count must equal the real node count, or it could reject a group
that builds within the budget.
"""

from __future__ import annotations

import re

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from random_archives import archives, single_groups

import uncertain_cep as uc
from uncertain_cep.index import group_build
from uncertain_cep.index.forests.expansion import GroupInfeasible
from uncertain_cep.index.forests.forest_builder import build_forest
from uncertain_cep.index.forests.node_count import NodeBudgetExceeded, count_nodes
from uncertain_cep.index.forests.oi_tree import plan_group
from uncertain_cep.index.group_build import BuildSettings, build_group_forest
from uncertain_cep.model.events import read_archive
from uncertain_cep.model.feasibility import MaxSpeed, PairPredicate

WIDE = pd.DataFrame({"event_id": [1, 2, 3], "group": 0, "t_lo": [0, 0, 0],
                     "t_hi": [100_000] * 3})
THOUSAND_WIDE = WIDE.assign(t_hi=1000)
OVERLAPPING_CHAIN = pd.DataFrame({"event_id": range(20), "group": 0,
                                  "t_lo": [i * 10 for i in range(20)],
                                  "t_hi": [i * 10 + 500 for i in range(20)]})


def _assert_too_large(error: uc.IndexBuildError, group: str, n_events: int,
                      budget: str = "2,000,000") -> int:
    """The message names the group, its size and every remedy; returns the lower bound."""
    message = str(error)
    assert f"group {group} ({n_events} events) is too large to index" in message
    found = re.search(rf"need more than {budget} nodes \(at least ([\d,]+)\)", message)
    assert found, message
    assert "coarser time unit (time_unit=" in message
    assert "split the group" in message
    assert f"raise node_budget= (now {budget})" in message
    return int(found.group(1).replace(",", ""))


@pytest.mark.timeout(30)
@pytest.mark.parametrize("archive", [WIDE, THOUSAND_WIDE, OVERLAPPING_CHAIN],
                         ids=["3 events 100,000 wide", "3 events 1,000 wide",
                              "20 events 500 wide overlapping"])
def test_a_group_far_over_the_budget_fails_at_once_naming_it_and_what_to_do(archive):
    with pytest.raises(uc.IndexBuildError) as caught:
        uc.build_index(archive)
    assert _assert_too_large(caught.value, "0", len(archive)) > 2_000_000


@pytest.mark.timeout(30)
def test_one_event_with_a_huge_interval_is_counted_without_walking_its_instants():
    archive = pd.DataFrame({"event_id": [7], "group": "g", "t_lo": [0], "t_hi": [10**15]})
    with pytest.raises(uc.IndexBuildError) as caught:
        uc.build_index(archive)
    assert _assert_too_large(caught.value, "'g'", 1) == 10**15 + 2


def test_a_smaller_budget_is_named_in_the_message():
    with pytest.raises(uc.IndexBuildError) as caught:
        uc.build_index(THOUSAND_WIDE.assign(t_hi=30), node_budget=1_000)
    assert _assert_too_large(caught.value, "0", 3, budget="1,000") > 1_000


def test_memory_running_out_while_building_is_an_index_build_error_naming_the_group(
        monkeypatch):
    def out_of_memory(plan):
        raise MemoryError

    monkeypatch.setattr(group_build, "build_forest", out_of_memory)
    with pytest.raises(uc.IndexBuildError) as caught:
        build_group_forest("crowded", [1, 2], [0, 0], [3, 3], None, BuildSettings())
    message = str(caught.value)
    assert "group 'crowded' (2 events) is too large to index: memory ran out" in message
    assert "coarser time unit (time_unit=" in message and "split the group" in message
    assert isinstance(caught.value.__cause__, MemoryError)


# ------------------------------------------------------------- the count is exact

@st.composite
def wide_groups(draw: st.DrawFn) -> tuple[list[int], list[int]]:
    """A few events with intervals up to 12 instants wide: Lemma 1 windows then cut holes
    in the middle of other domains, which the count must follow."""
    n = draw(st.integers(1, 4))
    lo = draw(st.lists(st.integers(0, 12), min_size=n, max_size=n))
    hi = [a + draw(st.integers(0, 11)) for a in lo]
    return lo, hi


@st.composite
def groups_with_conditions(draw: st.DrawFn):
    """(t_lo, t_hi, Condition 2 bound to the group or None)."""
    lo, hi = draw(st.one_of(single_groups(max_events=6), wide_groups()))
    kind = draw(st.sampled_from(["none", "none", "speed", "predicate"]))
    if kind == "none":
        return lo, hi, None
    xs = draw(st.lists(st.integers(0, 6), min_size=len(lo), max_size=len(lo)))
    df = pd.DataFrame({"event_id": range(len(lo)), "group": 0, "t_lo": lo, "t_hi": hi,
                       "x_lo": [float(x) for x in xs], "x_hi": [float(x) + 1 for x in xs]})
    if kind == "speed":
        # min_gap is known: domains are cut once per placement.
        constraint = MaxSpeed(draw(st.sampled_from([1.0, 2.0, 3.0])), ("x",))
    else:
        # A user's predicate, not monotone in the gap: asked instant by instant.
        constraint = PairPredicate(lambda a, b, ta, tb: (tb - ta) % 3 != 0
                                   or a["x"][0] == b["x"][0])
    return lo, hi, constraint.for_group(read_archive(df), list(range(len(lo))))


@given(groups_with_conditions(), st.booleans())
def test_the_count_equals_the_nodes_of_the_built_forest(group, multi_tree):
    lo, hi, check = group
    try:
        plan = plan_group(lo, hi, check, multi_tree=multi_tree)
    except GroupInfeasible as e:
        with pytest.raises(GroupInfeasible) as counted:
            count_nodes(lo, hi, check, multi_tree)
        assert (counted.value.events, counted.value.window) == (e.events, e.window)
        return
    assert count_nodes(lo, hi, check, multi_tree) == build_forest(plan).n_nodes


@given(groups_with_conditions(), st.booleans(), st.data())
def test_a_budget_rejects_exactly_the_groups_with_more_nodes(group, multi_tree, data):
    lo, hi, check = group
    try:
        nodes = count_nodes(lo, hi, check, multi_tree)
    except GroupInfeasible:
        return
    budget = data.draw(st.integers(1, 2 * nodes), label="budget")
    if nodes <= budget:
        assert count_nodes(lo, hi, check, multi_tree, budget) == nodes
        plan = plan_group(lo, hi, check, multi_tree, node_budget=budget)
        assert build_forest(plan).n_nodes == nodes
        return
    with pytest.raises(NodeBudgetExceeded) as caught:
        plan_group(lo, hi, check, multi_tree, node_budget=budget)
    # The lower bound is a count of real nodes: over the budget, never over the truth,
    # unless a tree of a dead end alone passed the budget (which the planner rejects too).
    assert budget < caught.value.at_least
    assert caught.value.budget == budget


@given(archives(max_events=10, max_per_group=5))
def test_every_group_of_a_random_archive_is_counted_exactly(df):
    index = uc.build_index(df, node_budget=None)
    archive = read_archive(df)
    members = archive.group_members()
    counts = [count_nodes(archive.t_lo[m], archive.t_hi[m]) for m in members]
    assert counts == [index.forest(label).n_nodes for label in archive.group_labels]
    # A budget of the largest group builds; one node less names that group (every group
    # has a root and a leaf, so that budget is still positive).
    largest = max(counts)
    assert uc.build_index(df, node_budget=largest).n_nodes == sum(counts)
    with pytest.raises(uc.IndexBuildError) as caught:
        uc.build_index(df, node_budget=largest - 1)
    first_too_large = archive.group_labels[counts.index(largest)]
    assert f"group {first_too_large!r}" in str(caught.value)


def test_the_count_matches_the_benchmark_archives():
    """The core benchmark's uniform and clustered archives (bench/bench_core.py), sized so
    the test stays quick."""
    from uncertain_cep.datasets import disjoint_sequence, generate_synthetic

    for df, multi in [(generate_synthetic(1000, seed=7), True),
                      (generate_synthetic(1000, clustered=True, cluster_spread=1 / 20,
                                          seed=7), True),
                      (generate_synthetic(100, clustered=True, cluster_spread=1 / 40,
                                          seed=7), True),
                      (disjoint_sequence(10), False),
                      (generate_synthetic(8, seed=8), False)]:
        index = uc.build_index(df, multi_tree=multi, node_budget=None)
        archive = read_archive(df)
        counted = sum(count_nodes(archive.t_lo[m], archive.t_hi[m], None, multi)
                      for m in archive.group_members())
        assert counted == index.n_nodes
