"""OI-trees against brute force, and both code schemes against the trees."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from random_archives import single_groups

from uncertain_cep.index.forests.codes import COMPACT, PAPER, in_ranges
from uncertain_cep.index.forests.expansion import GroupInfeasible
from uncertain_cep.index.forests.forest import REAL, VIRTUAL, GroupForest
from uncertain_cep.index.forests.forest_builder import build_forest
from uncertain_cep.index.forests.oi_tree import plan_group
from uncertain_cep.model.events import read_archive
from uncertain_cep.model.feasibility import MaxSpeed
from uncertain_cep.query.baselines.possible_worlds import enumerate_order_instances
from uncertain_cep.query.evaluation.chains import chain_probability


def node_paths(forest: GroupForest, tree: int = 0) -> list[tuple[int, ...]]:
    """Every OI as the list of real nodes it passes, virtual nodes expanded."""
    def below(n: int) -> list[tuple[int, ...]]:
        if forest.kind[n] == VIRTUAL:
            heads = node_paths(forest, int(forest.child_tree[n]))
        elif forest.kind[n] == REAL:
            heads = [(n,)]
        else:
            heads = [()]
        kids = forest.children(n)
        if len(kids) == 0:
            return heads
        return [h + t for h in heads for k in kids for t in below(int(k))]
    return below(int(forest.tree_root[tree]))


def oi_set(forest: GroupForest, n_events: int) -> set[tuple[int, ...]]:
    out = set()
    for path in node_paths(forest):
        inst = [0] * n_events
        for n in path:
            inst[forest.event[n]] = int(forest.instant[n])
        assert len(path) == n_events
        out.add(tuple(inst))
    return out


@st.composite
def groups(draw: st.DrawFn):
    lo, hi = draw(single_groups(max_events=6))
    check = None
    if draw(st.booleans()):
        xs = draw(st.lists(st.integers(0, 6), min_size=len(lo), max_size=len(lo)))
        df = pd.DataFrame({"event_id": range(len(lo)), "group": 0, "t_lo": lo, "t_hi": hi,
                           "x_lo": [float(x) for x in xs], "x_hi": [float(x) + 1 for x in xs]})
        check = MaxSpeed(draw(st.sampled_from([1.0, 2.0, 3.0])), ("x",)).for_group(
            read_archive(df), list(range(len(lo))))
    return lo, hi, check


@given(groups())
def test_multi_tree_and_single_tree_hold_exactly_the_brute_force_order_instances(group):
    lo, hi, check = group
    brute = {tuple(int(t) for t in row) for row in enumerate_order_instances(lo, hi, check)}
    for multi in (True, False):
        if not brute:
            with pytest.raises(GroupInfeasible):
                plan_group(lo, hi, check, multi_tree=multi)
            continue
        forest = build_forest(plan_group(lo, hi, check, multi_tree=multi))
        paths = node_paths(forest)
        assert len(paths) == forest.n_order_instances == len(brute)
        assert oi_set(forest, len(lo)) == brute


@st.composite
def feasible_forests(draw: st.DrawFn) -> GroupForest:
    """The multi-tree forest of a random group that has at least one order instance."""
    lo, hi, check = draw(groups())
    assume(len(enumerate_order_instances(lo, hi, check)) > 0)
    return build_forest(plan_group(lo, hi, check))


@given(feasible_forests())
def test_no_node_leads_to_a_dead_end_and_poi_counts_paths(forest):
    paths = node_paths(forest)
    real = np.flatnonzero(forest.kind == REAL)
    on_some_path = {n for p in paths for n in p}
    assert set(real.tolist()) == on_some_path
    for n in real:
        share = sum(n in p for p in paths) / len(paths)
        assert abs(forest.poi[n] - share) < 1e-12


@given(feasible_forests())
def test_code_ranges_agree_with_the_trees_for_both_schemes(forest):
    paths = node_paths(forest)
    real = [int(n) for n in np.flatnonzero(forest.kind == REAL)]
    follows = {(p[i], p[j]) for p in paths for i in range(len(p)) for j in range(i + 1, len(p))}
    for scheme in (COMPACT, PAPER):
        desc = {a: scheme.descendant_code_ranges(forest, a) for a in real}
        anc = {b: scheme.ancestor_code_ranges(forest, b) for b in real}
        for a, b in itertools.product(real, real):
            expected = (a, b) in follows
            assert forest.precedes(a, b) == expected
            assert in_ranges(scheme.code(forest, b), desc[a]) == expected, (scheme.name, a, b)
            assert in_ranges(scheme.code(forest, a), anc[b]) == expected, (scheme.name, a, b)


@given(feasible_forests(), st.data())
def test_chain_probability_is_the_fraction_of_paths_through_the_chain(forest, data):
    paths = node_paths(forest)
    path = data.draw(st.sampled_from(paths))
    chain = sorted(data.draw(st.sets(st.sampled_from(path), min_size=1)),
                   key=lambda n: forest.instant[n])
    share = sum(all(n in p for n in chain) for p in paths) / len(paths)
    assert abs(chain_probability(forest, chain) - share) < 1e-12


def test_codes_are_unique_per_node_and_trees_nest():
    forest = build_forest(plan_group([1, 2, 2, 3, 4, 5, 6], [3, 3, 3, 7, 6, 6, 7]))
    real = np.flatnonzero(forest.kind == REAL)
    assert len({forest.paper_code[n] for n in real}) == len(real)
    assert len(set(forest.compact_code[real].tolist())) == len(real)
    assert forest.compact_code.max() < forest.n_nodes


def test_paper_codes_stay_exact_beyond_double_precision():
    # A chain of 64 events each overlapping the next by one instant: the top tree is 64
    # levels deep with fanout 2, so codes pass 2**64.
    lo = list(range(64))
    hi = [t + 1 for t in lo]
    forest = build_forest(plan_group(lo, hi))
    assert forest.n_order_instances == 65
    assert max(forest.paper_code) > 2**53
    real = [int(n) for n in np.flatnonzero(forest.kind == REAL)][:40]
    for a in real:
        ranges = PAPER.descendant_code_ranges(forest, a)
        for b in real:
            assert in_ranges(forest.paper_code[b], ranges) == forest.precedes(a, b)


@given(feasible_forests(), st.integers(0, 16))
def test_ranges_cut_at_an_instant_keep_every_descendant_up_to_it(forest, until):
    real = [int(n) for n in np.flatnonzero(forest.kind == REAL)]
    for scheme in (COMPACT, PAPER):
        for a in real:
            ranges = scheme.descendant_code_ranges(forest, a, until=until)
            for b in real:
                if forest.instant[b] <= until:
                    assert in_ranges(scheme.code(forest, b), ranges) == forest.precedes(a, b)


@given(feasible_forests(), st.integers(0, 16))
def test_ranges_cut_at_an_instant_keep_every_ancestor_from_it(forest, since):
    real = [int(n) for n in np.flatnonzero(forest.kind == REAL)]
    for scheme in (COMPACT, PAPER):
        for b in real:
            ranges = scheme.ancestor_code_ranges(forest, b, since=since)
            assert len(ranges) <= len(scheme.ancestor_code_ranges(forest, b))
            for a in real:
                if forest.instant[a] >= since:
                    assert in_ranges(scheme.code(forest, a), ranges) == forest.precedes(a, b)
