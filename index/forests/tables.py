"""Forests as Arrow tables and back, and the per-event extents the R*-tree boxes need.

Both builders share this module: the in-process one
(:mod:`uncertain_cep.index.store.storage`) and the Spark job
(:mod:`uncertain_cep.pipeline.build_job`), which turns every group's forest into rows in the
executors. Reading back can keep only some trees of a group (a *sub-forest*): the Spark
query engine loads, per time slice, the trees that slice can touch plus the trees above them
(:func:`forest_from_frames`).

Codes of the paper's scheme and OI counts are arbitrary-precision integers, stored as
decimal strings; they are parsed only when the index uses the paper scheme.

>>> from uncertain_cep.index.forests.oi_tree import plan_group
>>> from uncertain_cep.index.forests.forest_builder import build_forest
>>> f = build_forest(plan_group([1, 2, 2, 3, 4, 5, 6], [3, 3, 3, 7, 6, 6, 7]))
>>> nodes, trees = forest_tables(f, group='S_k')
>>> g = forest_from_frames(trees.to_pandas(), nodes.to_pandas(), paper_codes=True)
>>> g.n_nodes == f.n_nodes and g.paper_code == f.paper_code
True
>>> t_min, t_max, lo, hi = group_extents(f, "compact")
>>> t_min.tolist(), t_max.tolist()
([1, 2, 2, 4, 4, 5, 6], [1, 3, 3, 7, 6, 6, 7])
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, overload

import numpy as np
import pandas as pd
import pyarrow as pa

from uncertain_cep.errors import IndexFormatError
from uncertain_cep.index.forests.forest import REAL, ROOT, VIRTUAL, GroupForest
from uncertain_cep.index.forests.rounding import float_down, float_up

__all__ = ["NODE_COLUMNS", "TREE_COLUMNS", "StoredIntegers", "forest_from_frames", "forest_tables",
           "forests_from_frames", "group_extents", "node_intervals", "node_schema",
           "tree_schema"]

_NODE_INT = ("tree", "parent", "kind", "event", "instant", "depth", "child_tree",
             "compact_code", "compact_end")
_NODE_FLOAT = ("cond", "poi_local", "poi")
NODE_COLUMNS = ("group", "node", *_NODE_INT, *_NODE_FLOAT, "rel", "paper_code", "tree_lo",
                "tree_hi", "node_lo", "node_hi")
TREE_COLUMNS = ("group", "tree", "parent", "virtual", "root", "t_lo", "t_hi", "fanout",
                "height", "order_instances", "paper_lo", "paper_hi", "compact_lo", "compact_hi")



def node_schema(group_type: pa.DataType) -> pa.Schema:
    """Schema of the nodes table; ``group`` holds the group's key as in the archive."""
    return pa.schema([("group", group_type), ("node", pa.int64())]
                     + [(k, pa.int64()) for k in _NODE_INT]
                     + [(k, pa.float64()) for k in _NODE_FLOAT]
                     + [("rel", pa.string()), ("paper_code", pa.string()),
                        # The interval of the node's tree: a time slice keeps the trees that
                        # meet its interval (closed under parent trees, whose intervals
                        # contain their children's) by filtering on these two columns.
                        ("tree_lo", pa.int64()), ("tree_hi", pa.int64()),
                        # The time a node matters to (node_intervals): what a time slice
                        # filters its nodes on.
                        ("node_lo", pa.int64()), ("node_hi", pa.int64())])


def tree_schema(group_type: pa.DataType) -> pa.Schema:
    """Schema of the trees table; ``group`` holds the group's key as in the archive."""
    return pa.schema([("group", group_type)] + [
        (k, pa.string() if k in ("order_instances", "paper_lo", "paper_hi") else pa.int64())
        for k in TREE_COLUMNS[1:]])


def forest_tables(forest: GroupForest, group: object,
                  group_type: pa.DataType | None = None) -> tuple[pa.Table, pa.Table]:
    """The nodes and trees of one group's forest as Arrow tables; ``group`` is the group's
    key (stored in every row, typed ``group_type`` or as Arrow infers it)."""
    f = forest
    key = pa.array([group], type=group_type)
    group_type = key.type
    cols: dict[str, Any] = {"group": pa.repeat(key[0], f.n_nodes) if f.n_nodes else
                            pa.array([], group_type),
                            "node": np.arange(f.n_nodes, dtype=np.int64)}
    for k in _NODE_INT:
        cols[k] = np.asarray(getattr(f, k), dtype=np.int64)
    for k in _NODE_FLOAT:
        cols[k] = np.asarray(getattr(f, k), dtype=np.float64)
    cols["rel"] = [str(r) for r in f.rel]
    cols["paper_code"] = [str(c) for c in f.paper_code]
    cols["tree_lo"] = f.tree_lo[f.tree]
    cols["tree_hi"] = f.tree_hi[f.tree]
    cols["node_lo"], cols["node_hi"] = node_intervals(f)
    nodes = pa.table(cols, schema=node_schema(group_type))
    trees = pa.table({
        "group": pa.repeat(key[0], f.n_trees),
        "tree": np.arange(f.n_trees, dtype=np.int64),
        "parent": f.tree_parent, "virtual": f.tree_virtual, "root": f.tree_root,
        "t_lo": f.tree_lo, "t_hi": f.tree_hi, "fanout": f.tree_fanout,
        "height": f.tree_height, "order_instances": [str(c) for c in f.tree_count],
        "paper_lo": [str(a) for a, _ in f.tree_paper_range],
        "paper_hi": [str(b) for _, b in f.tree_paper_range],
        "compact_lo": f.tree_compact_range[:, 0], "compact_hi": f.tree_compact_range[:, 1],
    }, schema=tree_schema(group_type))
    return nodes, trees


def node_intervals(forest: GroupForest) -> tuple[np.ndarray, np.ndarray]:
    """Per node, the time interval a time slice must meet to need it: its tree's
    interval, except along a top tree that is a chain of virtual nodes.

    A group whose events split into isolated subsequences has a top tree that is a chain
    (Zhou et al. 4.1, the multi-tree): the root, then one virtual node per subsequence,
    each the only child of the one before (``cond`` 1), standing for that subsequence's
    tree. Such a virtual node matters only to tuples and negation gaps meeting its child
    tree, so its interval is the child tree's; the root keeps the group's. Every OI
    passes every virtual node of the chain, so leaving out the ones whose child trees a
    slice does not meet changes no chain probability and no weighted sum over OIs (each
    contributes a factor of 1); a slice links each virtual node it keeps to the nearest
    one it keeps above it (:func:`uncertain_cep.index.node_rows.node_table_of_rows`).

    >>> from uncertain_cep.index.forests.oi_tree import plan_group
    >>> from uncertain_cep.index.forests.forest_builder import build_forest
    >>> f = build_forest(plan_group([1, 1, 5, 9], [2, 2, 6, 9]))
    >>> lo, hi = node_intervals(f)
    >>> [(int(a), int(b)) for a, b in zip(lo[f.tree == 0], hi[f.tree == 0])]
    [(1, 9), (1, 2), (5, 6), (9, 9)]
    """
    f = forest
    lo, hi = f.tree_lo[f.tree].astype(np.int64), f.tree_hi[f.tree].astype(np.int64)
    top = np.flatnonzero(f.tree == 0) if f.n_trees else np.zeros(0, dtype=np.int64)
    if _is_chain(f, top):
        below = f.child_tree[top[1:]]
        lo[top[1:]], hi[top[1:]] = f.tree_lo[below], f.tree_hi[below]
    return lo, hi


def _is_chain(f: GroupForest, top: np.ndarray) -> bool:
    """Whether the nodes ``top`` (a tree's, by id) are a root followed by virtual nodes,
    each the only child (``cond`` 1) of the one before, each standing for a tree."""
    if len(top) < 3:
        return False
    children = np.diff(f.child_start)[top]
    return bool(f.kind[top[0]] == ROOT and (f.kind[top[1:]] == VIRTUAL).all()
                and (f.parent[top[1:]] == top[:-1]).all() and (f.cond[top[1:]] == 1.0).all()
                and (children[:-1] == 1).all() and children[-1] == 0
                and (f.child_tree[top[1:]] >= 0).all())


def forest_from_frames(trees: pd.DataFrame, nodes: pd.DataFrame,
                       paper_codes: bool) -> GroupForest:
    """Rebuild one group's forest from its rows.

    ``trees`` holds every tree of the group; ``nodes`` the nodes of some trees, closed
    under parent trees (all of them for the whole forest). Tree ids stay as stored; node
    ids are renumbered densely in stored order. Trees whose nodes are absent keep their
    tree-level data (intervals, code ranges: the code schemes read them) but have no root
    (``tree_root == -1``). ``rel`` and the paper codes are parsed at once when
    ``paper_codes`` is true, else when first used (:class:`StoredIntegers`).
    """
    trees = trees.sort_values("tree")
    nodes = nodes.sort_values("node")
    old = nodes["node"].to_numpy(dtype=np.int64)
    n = len(old)

    def remap(ids: np.ndarray) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.int64)
        pos = np.searchsorted(old, ids)
        ok = (ids >= 0) & (pos < n)
        ok[ok] = old[pos[ok]] == ids[ok]
        return np.where(ok, pos, -1).astype(np.int64)

    parent = remap(nodes["parent"].to_numpy())
    kind = nodes["kind"].to_numpy(dtype=np.int8)
    tree = nodes["tree"].to_numpy(dtype=np.int64)
    # Children in id order are in sibling order: ids are breadth-first within each tree.
    has_parent = parent >= 0
    child_list = np.flatnonzero(has_parent)
    child_list = child_list[np.argsort(parent[has_parent], kind="stable")]
    child_start = np.zeros(n + 1, dtype=np.int64)
    child_start[1:] = np.cumsum(np.bincount(parent[has_parent], minlength=n))
    n_trees = len(trees)
    virtuals: list[list[int]] = [[] for _ in range(n_trees)]
    for v in np.flatnonzero(kind == VIRTUAL):
        virtuals[int(tree[v])].append(int(v))
    counts = [int(c) for c in trees["order_instances"]]
    # The paper scheme's values are parsed here only for an index of that scheme; other
    # indexes parse them when first used (saving an opened index writes them again).
    rel: Sequence[int] = StoredIntegers(nodes["rel"].to_numpy())
    paper: Sequence[int] = StoredIntegers(nodes["paper_code"].to_numpy())
    paper_range: Sequence[tuple[int, int]] = StoredIntegers(
        trees["paper_lo"].to_numpy(), trees["paper_hi"].to_numpy())
    if paper_codes:
        rel, paper, paper_range = list(rel), list(paper), list(paper_range)
    return GroupForest(
        kind=kind, event=nodes["event"].to_numpy(dtype=np.int64),
        instant=nodes["instant"].to_numpy(dtype=np.int64), tree=tree, parent=parent,
        depth=nodes["depth"].to_numpy(dtype=np.int64), child_start=child_start,
        child_list=child_list.astype(np.int64),
        child_tree=nodes["child_tree"].to_numpy(dtype=np.int64),
        cond=nodes["cond"].to_numpy(dtype=float), poi_local=nodes["poi_local"].to_numpy(float),
        poi=nodes["poi"].to_numpy(dtype=float), rel=rel, paper_code=paper,
        compact_code=nodes["compact_code"].to_numpy(dtype=np.int64),
        compact_end=nodes["compact_end"].to_numpy(dtype=np.int64),
        tree_parent=trees["parent"].to_numpy(dtype=np.int64),
        tree_virtual=remap(trees["virtual"].to_numpy()),
        tree_root=remap(trees["root"].to_numpy()),
        tree_lo=trees["t_lo"].to_numpy(dtype=np.int64),
        tree_hi=trees["t_hi"].to_numpy(dtype=np.int64),
        tree_fanout=trees["fanout"].to_numpy(dtype=np.int64),
        tree_height=trees["height"].to_numpy(dtype=np.int64),
        tree_count=counts, tree_paper_range=paper_range,
        tree_compact_range=trees[["compact_lo", "compact_hi"]].to_numpy(dtype=np.int64),
        tree_virtuals=virtuals)


class StoredIntegers(Sequence[Any]):
    """Arbitrary-precision integers stored as decimal strings (the paper scheme's codes,
    ``rel``), parsed all at once on first use: a forest read from disk carries every
    field it was stored with, at no cost to the queries that never read these.

    One column gives ints; two give ``(int, int)`` pairs (a tree's code range).

    >>> pairs = StoredIntegers(np.array(["1", "20"]), np.array(["3", "40"]))
    >>> len(pairs), pairs[1], pairs == [(1, 3), (20, 40)]
    (2, (20, 40), True)
    """

    __slots__ = ("_columns", "_n", "_values")

    def __init__(self, *columns: np.ndarray) -> None:
        if not columns or any(len(c) != len(columns[0]) for c in columns):
            raise ValueError("StoredIntegers needs one or more columns of one length")
        self._columns: tuple[np.ndarray, ...] | None = columns
        self._values: list[Any] | None = None
        self._n = len(columns[0])

    def _parsed(self) -> list[Any]:
        if self._values is None:
            assert self._columns is not None
            if len(self._columns) == 1:
                self._values = [int(x) for x in self._columns[0]]
            else:
                self._values = [tuple(int(x) for x in xs) for xs in zip(*self._columns)]
            self._columns = None       # the strings are no longer needed
        return self._values

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> Any: ...
    @overload
    def __getitem__(self, i: slice) -> list[Any]: ...
    def __getitem__(self, i: int | slice) -> Any:
        return self._parsed()[i]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._parsed())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and self._parsed() == list(other)

    __hash__ = None  # type: ignore[assignment]  # equal to a list, so unhashable like one


def forests_from_frames(trees: pd.DataFrame, nodes: pd.DataFrame, labels: np.ndarray,
                        paper_codes: bool) -> list[GroupForest]:
    """The forests of the groups ``labels`` (in that order) from their table rows
    (:func:`forest_from_frames` per group)."""
    tree_groups = dict(iter(trees.groupby("group", sort=False)))
    node_groups = dict(iter(nodes.groupby("group", sort=False)))
    out = []
    for label in labels:
        if label not in tree_groups or label not in node_groups:
            plain = label.item() if isinstance(label, np.generic) else label
            raise IndexFormatError(f"group {plain!r} has events but no OI-trees")
        out.append(forest_from_frames(tree_groups[label], node_groups[label], paper_codes))
    return out


def group_extents(forest: GroupForest, codes: str
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per event position of the group: earliest and latest instant over its nodes, and
    its code range as doubles rounded outward (the R*-tree box; Zhou et al. 4.3)."""
    real = np.flatnonzero(forest.kind == REAL)
    events = forest.event[real]
    n = int(events.max()) + 1 if len(events) else 0
    instants = forest.instant[real]
    t_min = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    t_max = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
    np.minimum.at(t_min, events, instants)
    np.maximum.at(t_max, events, instants)
    if codes == "compact":
        c = forest.compact_code[real]
        lo = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
        hi = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
        np.minimum.at(lo, events, c)
        np.maximum.at(hi, events, c)
        # int64 codes below 2**53 are exact doubles; beyond, round outward.
        exact = (np.abs(lo) < 2**53) & (np.abs(hi) < 2**53)
        if exact.all():
            return t_min, t_max, lo.astype(np.float64), hi.astype(np.float64)
        return (t_min, t_max, np.array([float_down(int(x)) for x in lo]),
                np.array([float_up(int(x)) for x in hi]))
    lo_i: list[int | None] = [None] * n
    hi_i: list[int | None] = [None] * n
    for node, e in zip(real, events):
        code = forest.paper_code[int(node)]
        e = int(e)
        if lo_i[e] is None or code < lo_i[e]:  # type: ignore[operator]
            lo_i[e] = code
        if hi_i[e] is None or code > hi_i[e]:  # type: ignore[operator]
            hi_i[e] = code
    return (t_min, t_max, np.array([float_down(x) for x in lo_i], dtype=np.float64),  # type: ignore[arg-type]
            np.array([float_up(x) for x in hi_i], dtype=np.float64))  # type: ignore[arg-type]
