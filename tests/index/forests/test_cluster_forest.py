"""A group assembled from its clusters is the forest the whole-group planner builds, array
for array (index/forests/cluster_forest.py): lone events' trees written at array speed, clusters
of overlapping events planned apart and spliced in with their ids, probabilities and both
code schemes renumbered."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from uncertain_cep.index.forests import cluster_forest
from uncertain_cep.index.forests.cluster_forest import forest_of_clusters, isolated_clusters
from uncertain_cep.index.forests.expansion import GroupInfeasible
from uncertain_cep.index.forests.forest import GroupForest
from uncertain_cep.index.forests.forest_builder import build_forest
from uncertain_cep.index.forests.node_count import NodeBudgetExceeded, count_nodes
from uncertain_cep.index.forests.oi_tree import plan_group


@st.composite
def sorted_groups(draw: st.DrawFn) -> tuple[list[int], list[int]]:
    """Canonically ordered groups, sparse or dense, small enough to plan whole at once."""
    n = draw(st.integers(2, 14))
    spread = draw(st.integers(1, 6))
    lo = sorted(draw(st.lists(st.integers(0, n * spread), min_size=n, max_size=n)))
    hi = [a + draw(st.integers(0, draw(st.integers(0, 6)))) for a in lo]
    pairs = sorted(zip(lo, hi))
    lo, hi = [a for a, _ in pairs], [b for _, b in pairs]
    return lo, hi


def _differences(a: GroupForest, b: GroupForest) -> list[str]:
    out = []
    for field in dataclasses.fields(GroupForest):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if isinstance(x, np.ndarray):
            same = x.dtype == y.dtype and x.shape == y.shape and bool((x == y).all())
        else:
            same = x == y
        if not same:
            out.append(field.name)
    return out


@given(group=sorted_groups())
def test_a_group_of_several_clusters_is_the_whole_group_planners_forest(group):
    lo, hi = group
    try:
        assume(count_nodes(lo, hi, node_budget=30_000) <= 30_000)
    except NodeBudgetExceeded:
        assume(False)
    except GroupInfeasible:
        # No order instance: left to the whole-group planner, which names the events.
        assert forest_of_clusters(lo, hi) is None
        return
    whole = build_forest(plan_group(lo, hi))
    assembled = forest_of_clusters(lo, hi)
    if assembled is None:
        assert len(isolated_clusters(np.array(lo), np.array(hi))) == 2   # one cluster
        return
    assert _differences(assembled, whole) == []


def test_paper_codes_past_int64_stay_exact_python_ints(monkeypatch):
    # Paper codes grow like fanout ** depth; past int64 they are Python ints, as the
    # whole-group coder keeps them. Lower the switch so a small group takes that path.
    lo, hi = [0, 2, 4, 6, 100, 200], [3, 5, 7, 9, 101, 203]
    monkeypatch.setattr(cluster_forest, "_INT64_CODES", 8)
    assembled = forest_of_clusters(lo, hi)
    assert assembled is not None
    assert all(type(c) is int for c in assembled.paper_code)
    assert _differences(assembled, build_forest(plan_group(lo, hi))) == []


def test_a_group_without_an_order_instance_is_left_to_the_planner_that_names_it():
    # Three events in two instants, next to a lone event.
    assert forest_of_clusters([0, 0, 0, 10], [1, 1, 1, 12]) is None


def test_clusters_over_the_node_budget_together_fail_like_the_whole_group():
    lo = [10 * i for i in range(50)]
    hi = [a + 5 for a in lo]
    nodes = build_forest(plan_group(lo, hi)).n_nodes
    assert forest_of_clusters(lo, hi, node_budget=nodes).n_nodes == nodes
    with pytest.raises(NodeBudgetExceeded):
        forest_of_clusters(lo, hi, node_budget=nodes - 1)
    with pytest.raises(NodeBudgetExceeded):
        plan_group(lo, hi, node_budget=nodes - 1)
