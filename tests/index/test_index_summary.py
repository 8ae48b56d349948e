"""UncertainIndex.describe(): counts against independent counts, equal summaries for an
index built here and reopened from disk, text and HTML, and the plot."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from random_archives import archives

import uncertain_cep as uc
from uncertain_cep.datasets import generate_office_rfid
from uncertain_cep.index.forests.oi_tree import PlanTree, plan_group
from uncertain_cep.index.store.format_version import FORMAT_VERSION
from uncertain_cep.index.summary import IndexSummary
from uncertain_cep.model.events import read_archive
from uncertain_cep.model.feasibility import MaxSpeed


def _office() -> pd.DataFrame:
    return generate_office_rfid(people=4, readings_per_person=10, seed=7)


def _walk(tree: PlanTree) -> dict[str, list[int]]:
    """Per OI-tree of a planned group (child trees included): its own nodes, virtual
    nodes, and the instants of its real nodes. Walks the plan, not the forest."""
    out: dict[str, list[int]] = {"sizes": [], "virtuals": [], "instants": []}

    def visit(t: PlanTree) -> None:
        size = virtuals = 0
        stack = [t.root]
        while stack:
            n = stack.pop()
            size += 1
            if n.child_tree is not None:
                virtuals += 1
                visit(n.child_tree)
            elif n.event >= 0:
                out["instants"].append(n.instant)
            stack.extend(n.children)
        out["sizes"].append(size)
        out["virtuals"].append(virtuals)

    visit(tree)
    return out


def _independent(df: pd.DataFrame, group_by: str, max_speed: float | None,
                 multi_tree: bool = True) -> dict[str, dict[object, dict[str, object]]]:
    """Per group: events, trees, nodes, virtual nodes, OIs, largest tree, instants, from
    the rows and the OI-tree planner alone."""
    archive = read_archive(df, group_by=group_by)
    out = {}
    for key, rows in df.groupby(group_by, sort=True):
        members = np.flatnonzero(archive.group_labels[archive.group_of] == key)
        check = (MaxSpeed(max_speed, ("x", "y")).for_group(archive, members)
                 if max_speed is not None else None)
        plan = plan_group(archive.t_lo[members], archive.t_hi[members], check, multi_tree)
        walk = _walk(plan)
        out[key] = {"events": len(rows), "trees": len(walk["sizes"]),
                    "nodes": sum(walk["sizes"]), "virtuals": sum(walk["virtuals"]),
                    "order_instances": plan.count, "largest": max(walk["sizes"]),
                    "t": (min(walk["instants"]), max(walk["instants"]))}
    return out


def _check_counts(s: IndexSummary, df: pd.DataFrame, group_by: str,
                  max_speed: float | None = None, multi_tree: bool = True) -> None:
    ind = _independent(df, group_by, max_speed, multi_tree)
    assert s.n_events == len(df)
    assert s.n_groups == df[group_by].nunique() == len(ind)
    assert s.n_nodes == sum(g["nodes"] for g in ind.values())
    assert s.n_trees == sum(g["trees"] for g in ind.values())
    per = s.per_group.set_index("group")
    assert sorted(per.index) == sorted(ind)
    for key, g in ind.items():
        row = per.loc[key]
        assert (row["events"], row["trees"], row["nodes"]) == (g["events"], g["trees"],
                                                               g["nodes"])
        assert int(row["order_instances"]) == g["order_instances"]
    largest = max(g["largest"] for g in ind.values())
    assert s.largest_tree is not None and s.largest_tree[2] == largest
    assert ind[s.largest_tree[0]]["largest"] == largest
    assert s.time_range == (min(g["t"][0] for g in ind.values()),
                            max(g["t"][1] for g in ind.values()))
    if s.code_scheme == "compact":
        # Pre-order ranks with each virtual node sharing its child root's code.
        assert s.code_range == (0, max(g["nodes"] - g["virtuals"] - 1 for g in ind.values()))


def test_counts_of_a_generated_archive_equal_independent_counts():
    df = _office()
    s = uc.build_index(df, group_by="person", max_speed=2.0).describe()
    _check_counts(s, df, "person", max_speed=2.0)
    assert s.numeric == (("x", df["x_lo"].min(), df["x_hi"].max()),
                         ("y", df["y_lo"].min(), df["y_hi"].max()))
    assert s.categorical == (("tag", df["tag"].nunique()),)
    assert (s.code_scheme, s.multi_tree, s.node_budget) == ("compact", True, 2_000_000)
    assert s.condition2 is not None and "max speed 2" in s.condition2
    assert s.per_group.columns.tolist() == ["group", "events", "trees", "nodes",
                                            "order_instances"]


def test_single_tree_and_paper_codes_are_counted_too():
    df = _office().groupby("person").head(5)
    idx = uc.build_index(df, group_by="person", multi_tree=False, codes="paper")
    s = idx.describe()
    _check_counts(s, df, "person", multi_tree=False)
    assert (s.multi_tree, s.code_scheme, s.condition2) == (False, "paper", None)
    assert s.n_trees == s.n_groups
    forests = idx.event_index.forests
    assert s.code_range == (min(min(f.paper_code) for f in forests),
                            max(max(f.paper_code) for f in forests))


def test_reopened_index_has_an_equal_summary(tmp_path):
    df = _office()
    for codes in ("compact", "paper"):
        idx = uc.build_index(df, group_by="person", max_speed=2.0, codes=codes)
        idx.save(tmp_path / codes)
        here, there = idx.describe(), uc.open_index(tmp_path / codes).describe()
        assert here == there and hash(here) == hash(there)
        pd.testing.assert_frame_equal(here.per_group, there.per_group)
        assert dict(here.provenance) == {}
        assert there.provenance["path"] == str(tmp_path / codes)
        assert there.provenance["format_version"] == FORMAT_VERSION
        assert str(here).splitlines()[:-1] == str(there).splitlines()[:-1]
        assert str(tmp_path / codes) in str(there).splitlines()[-1]


@settings(max_examples=15)
@given(df=archives(max_groups=3, max_events=8))
def test_random_archives_counts_and_round_trip(tmp_path_factory, df):
    idx = uc.build_index(df)
    s = idx.describe()
    _check_counts(s, df, "group")
    path = tmp_path_factory.mktemp("ix") / "index"
    idx.save(path)
    assert uc.open_index(path).describe() == s


def test_text_and_html_show_the_key_numbers_and_escape_keys():
    df = pd.DataFrame({"event_id": [1, 2, 3, 4, 5], "group": ["<b>&co", "<b>&co", "<b>&co",
                                                             "q", "q"],
                       "t_lo": [1, 1, 1, 5, 5], "t_hi": [3, 3, 3, 6, 6],
                       "x_lo": [0.0, 1.0, 2.0, 3.0, 4.0], "x_hi": [1.0, 2.0, 3.0, 4.0, 5.0],
                       "tag": ["a", "b", "a", "a", "c"]})
    s = uc.build_index(df).describe()
    assert s.largest_tree is not None and s.largest_tree[0] == "<b>&co"
    text, page = str(s), s._repr_html_()
    assert text.startswith("IndexSummary: 5 events in 2 groups (group)")
    for needle in (f"{s.n_trees} trees", f"{s.n_nodes} nodes", f"{s.largest_tree[2]} nodes",
                   f"compact, 0 .. {s.code_range[1]}", "1 .. 6", "x [0, 5]", "tag (3 values)",
                   "multi-tree", "node budget 2000000"):
        assert needle in text
        assert needle in page
    width = max(len(label) for label, _ in s.rows())
    # One line per row, values starting in one column.
    assert text.splitlines()[1:] == [f"  {label:<{width}}  {value}" for label, value in s.rows()]
    assert "'<b>&co'" in text
    assert "<b>" not in page and "&lt;b&gt;&amp;co" in page
    assert page.startswith("<div>") and "<table>" in page


def test_plot_draws_one_histogram_of_nodes_per_group():
    matplotlib = pytest.importorskip("matplotlib")  # the bench/dev dependency group
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.axes import Axes

    s = uc.build_index(_office(), group_by="person", max_speed=2.0).describe()
    ax = s.plot()
    try:
        assert isinstance(ax, Axes)
        assert len(ax.containers) == 1
        assert sum(p.get_height() for p in ax.containers[0]) == s.n_groups
        assert ax.get_xscale() == "linear"
        assert "nodes" in ax.get_xlabel() and ax.get_ylabel() == "groups"
        wide = dataclasses.replace(s, group_nodes=(3, 40, 5000, 90000))
        _, given_ax = plt.subplots()
        assert wide.plot(ax=given_ax) is given_ax
        assert given_ax.get_xscale() == "log" and len(given_ax.containers) == 1
    finally:
        plt.close("all")


def test_an_empty_index_is_described():
    empty = pd.DataFrame({"event_id": pd.Series([], dtype=int),
                          "group": pd.Series([], dtype=int),
                          "t_lo": pd.Series([], dtype=int), "t_hi": pd.Series([], dtype=int),
                          "x_lo": pd.Series([], dtype=float), "x_hi": pd.Series([], dtype=float)})
    s = uc.build_index(empty).describe()
    assert (s.n_events, s.n_groups, s.n_nodes, s.largest_tree, s.code_range,
            s.time_range) == (0, 0, 0, None, None, None)
    assert s.numeric == (("x", None, None),)
    assert "0 events in 0 groups" in str(s) and "x (no values)" in str(s)
    assert s.per_group.empty


def test_index_summary_is_exported():
    assert "IndexSummary" in uc.__all__
    assert uc.IndexSummary is IndexSummary
