"""Pieces' forests cut out of their group's forest give the rows each piece's own forest
gives, row for row (index/forests/piece_forests.py), so a group spread over many shards is
built once, not once per piece."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from uncertain_cep.index.forests.cluster_forest import forest_of_clusters, isolated_clusters
from uncertain_cep.index.forests.expansion import GroupInfeasible
from uncertain_cep.index.forests.node_count import NodeBudgetExceeded, count_nodes
from uncertain_cep.index.forests.tables import forests_tables, group_extents
from uncertain_cep.index.group_build import BuildSettings, build_group_forest, piece_forests
from uncertain_cep.model.feasibility import MaxSpeed


@st.composite
def cut_groups(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A canonically ordered group of a few clusters (lone events and overlapping runs),
    and a shard per event: cuts between clusters, any number of them."""
    n = draw(st.integers(2, 30))
    spread = draw(st.integers(1, 5))
    lo = np.sort(np.array(draw(st.lists(st.integers(0, n * spread), min_size=n,
                                        max_size=n)), dtype=np.int64))
    hi = lo + np.array(draw(st.lists(st.integers(0, draw(st.integers(0, 4))), min_size=n,
                                     max_size=n)), dtype=np.int64)
    order = np.lexsort((hi, lo))
    lo, hi = lo[order], hi[order]
    bounds = isolated_clusters(lo, hi)
    n_clusters = len(bounds) - 1
    cut_after = draw(st.lists(st.integers(1, max(1, n_clusters - 1)), max_size=4))
    cluster = np.searchsorted(bounds, np.arange(n), side="right") - 1
    shard = np.searchsorted(np.unique([c for c in cut_after if c < n_clusters]), cluster,
                            side="right")
    # Shards need not be numbered from 0 or without gaps: a group meets some of them.
    return lo, hi, 3 * shard + draw(st.integers(0, 2))


def _rows(forest: object) -> tuple[object, ...]:
    nodes, trees = forests_tables([forest], ["g"])
    return nodes, trees, *(a.tolist() for a in group_extents(forest, "compact"))


@given(group=cut_groups())
def test_every_piece_cut_from_the_group_is_the_pieces_own_forest(group):
    lo, hi, shard = group
    try:
        assume(count_nodes(lo.tolist(), hi.tolist(), node_budget=20_000) <= 20_000)
    except (NodeBudgetExceeded, GroupInfeasible):
        assume(False)
    cut = piece_forests(lo, hi, shard, BuildSettings())
    if forest_of_clusters(lo, hi) is None:
        assert cut is None          # one cluster, or no order instance: piece by piece
        return
    assert cut is not None and sorted(cut) == np.unique(shard).tolist()
    for k, piece in cut.items():
        mine = np.flatnonzero(shard == k)
        own = build_group_forest("g", mine.tolist(), lo[mine], hi[mine], None,
                                 BuildSettings())
        if piece is None:
            # Left to the builder: a piece of one cluster is planned whole.
            assert len(isolated_clusters(lo[mine], hi[mine])) == 2
            continue
        assert all(a == b for a, b in zip(_rows(piece), _rows(own)))


@pytest.mark.parametrize("settings", [BuildSettings(codes="paper"),
                                      BuildSettings(multi_tree=False),
                                      BuildSettings(condition2=MaxSpeed(1.0, ("x",)))])
def test_pieces_are_built_one_by_one_for_paper_codes_one_tree_or_condition2(settings):
    lo, hi = np.array([1, 5, 9]), np.array([2, 6, 10])
    assert piece_forests(lo, hi, np.array([0, 0, 1]), settings) is None


def test_a_group_over_the_node_budget_is_left_to_its_pieces():
    # Each piece fits the budget, the whole group does not: the pieces say so (or not)
    # themselves when built one by one.
    lo = np.array([0, 0, 10, 10, 20, 20])
    hi = lo + 3
    settings = BuildSettings(node_budget=40)
    assert piece_forests(lo, hi, np.array([0, 0, 1, 1, 2, 2]), settings) is None
    assert build_group_forest("g", [0, 1], lo[:2], hi[:2], None, settings).n_nodes <= 40
