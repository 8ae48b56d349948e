"""The node table stored compact: what cannot be derived, in narrow integers, compressed.

The batch engine reads the node table (:class:`~uncertain_cep.index.node_table.NodeTable`)
as 23 flat 8-byte columns, memory-mapped from a working copy
(:mod:`uncertain_cep.index.store.working_copy`). An index stores far less
(:func:`pack_node_columns`), three Parquet files compressed with zstd:

* ``groups.parquet``: per group (in code order), its label, nodes and trees
  (``group_start`` and ``tree_start`` are their running sums);
* ``nodes.parquet``: per node, its parent as a distance back from it (a parent precedes
  its child), its tree counted from its group's first tree, its archive row, instant,
  compact code and the length of its subtree's code range, kind, depth, ``poi`` and
  ``cond`` (the probabilities stay 8-byte floats: answers are exact to 1e-9);
* ``trees.parquet``: per tree, its parent tree as a distance back, its virtual node and
  root counted from its group's first node, and its last compact code.

Each integer column is stored as its distance from its least value in the narrowest
integer type holding the rest (int8 to int64; the least value is kept in the file's
metadata). The rest is derived when a working copy is made (:func:`expand_node_columns`):
each node's group, the trees' nesting levels, the children lists (children in id order,
which is sibling order), the real nodes of each archive row (in id order), and the root of
the tree each virtual node stands for. About 50 bytes per event are stored where the
working copy has about 700 (docs/benchmarks.md).

>>> import tempfile
>>> from pathlib import Path
>>> import pandas as pd
>>> import uncertain_cep as uc
>>> idx = uc.build_index(pd.DataFrame({"event_id": [1, 2, 3], "group": [0, 0, 1],
...                                    "t_lo": [1, 1, 3], "t_hi": [2, 2, 3]}))
>>> table = idx._index.node_table
>>> with tempfile.TemporaryDirectory() as tmp:
...     for c in NODE_TABLE_COLUMNS:
...         np.save(f"{tmp}/{c}.npy", getattr(table, c))
...     pack_node_columns(Path(tmp), Path(tmp) / "packed")
...     expand_node_columns(Path(tmp) / "packed", Path(tmp) / "again", n_rows=3)
...     same = all(np.array_equal(np.load(f"{tmp}/again/{c}.npy"), getattr(table, c))
...                for c in NODE_TABLE_COLUMNS)
>>> same
True
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

import numba
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from uncertain_cep.errors import IndexFormatError
from uncertain_cep.index.forests.forest import REAL, VIRTUAL
from uncertain_cep.index.node_table import NodeTable, column_dtype, id_dtype

__all__ = ["NODE_TABLE_COLUMNS", "PACKED_NODE_FILES", "expand_node_columns", "group_labels",
           "grouped_by_owner", "narrow_integers", "node_columns_in_memory",
           "pack_node_columns", "read_packed", "widen_integers"]

NODE_TABLE_COLUMNS = tuple(f.name for f in dataclasses.fields(NodeTable))
_GROUPS, _NODES, _TREES = "groups.parquet", "nodes.parquet", "trees.parquet"
PACKED_NODE_FILES = (_GROUPS, _NODES, _TREES)
# Where a file keeps each narrowed column's least value.
_BASES = b"uncertain_cep.bases"
_COMPRESSION = "zstd"
# Stored columns that are node-table columns of their own type (the others are ids).
_STORED_TYPES = frozenset({"instant", "kind", "depth", "poi", "cond"})


def narrow_integers(values: np.ndarray) -> tuple[np.ndarray, int]:
    """``values`` as distances from their least value, in the narrowest signed integer
    type that holds them, and that least value.

    >>> narrow_integers(np.array([1000, 1003, 1255]))
    (array([  0,   3, 255], dtype=int16), 1000)
    """
    values = np.asarray(values, dtype=np.int64)
    if not len(values):
        return values.astype(np.int8), 0
    base = int(values.min())
    span = int(values.max()) - base
    for dtype in (np.int8, np.int16, np.int32):
        if span <= np.iinfo(dtype).max:
            return (values - base).astype(dtype), base
    return values - base, base


def widen_integers(values: np.ndarray, base: int) -> np.ndarray:
    """The int64 values :func:`narrow_integers` narrowed."""
    out = np.asarray(values).astype(np.int64)
    out += base
    return out


def _write(path: Path, columns: dict[str, np.ndarray | pa.Array]) -> None:
    """Write ``columns`` as one Parquet file, integer columns narrowed."""
    arrays: dict[str, np.ndarray | pa.Array] = {}
    bases = {}
    for name, values in columns.items():
        if isinstance(values, pa.Array):
            arrays[name] = values
        elif np.issubdtype(values.dtype, np.integer):
            arrays[name], bases[name] = narrow_integers(values)
        else:
            arrays[name] = np.asarray(values)
    table = pa.table(arrays).replace_schema_metadata({_BASES: json.dumps(bases)})
    pq.write_table(table, path, compression=_COMPRESSION)


def _read(path: Path, column: str, dtype: np.dtype | None = None,
          take: np.ndarray | None = None) -> np.ndarray:
    """One column of a file :func:`_write` wrote (its rows ``take`` only, all without),
    widened back to ``dtype`` (an integer column; default int64, its full type)."""
    try:
        f = pq.ParquetFile(path)
        bases = json.loads((f.schema_arrow.metadata or {}).get(_BASES, b"{}"))
        values = f.read(columns=[column]).column(0).to_numpy()
    except (OSError, ValueError, KeyError, pa.ArrowException) as e:
        raise IndexFormatError(f"{path} is damaged: {e}; rebuild the index") from e
    if take is not None:
        # Taken while still narrow: the rest is never widened.
        values = values[take]
    if column not in bases:
        return values
    if dtype is None:
        return widen_integers(values, int(bases[column]))
    out = values.astype(dtype)
    out += int(bases[column])
    return out


def read_packed(path: Path) -> pd.DataFrame:
    """A packed file's columns, integers widened back to int64 (for inspection and tests;
    the expansion reads one column at a time)."""
    names = pq.read_schema(path).names
    return pd.DataFrame({name: _read(path, name) for name in names})


def _local(ids: np.ndarray, owner_start: np.ndarray) -> np.ndarray:
    """Ids counted from their owner's first id; -1 stays -1."""
    return np.where(ids >= 0, ids - owner_start, -1)


def _back(ids: np.ndarray, of: np.ndarray) -> np.ndarray:
    """How far back from each position ``of`` its id in ``ids`` is (0 for none: -1)."""
    return np.where(ids >= 0, of - ids, 0)


def group_labels(packed: Path) -> pd.Index:
    """Every group's label, in code order (what ``groups.parquet`` holds first)."""
    try:
        labels = pq.read_table(packed / _GROUPS, columns=["group"]).column(0)
    except (OSError, KeyError, pa.ArrowException) as e:
        raise IndexFormatError(f"{packed / _GROUPS} is damaged: {e}; rebuild the "
                               "index") from e
    return pd.Index(labels.to_pandas())


def pack_node_columns(columns: Path, packed: Path, labels: pa.Array | None = None, *,
                      probabilities: bool = True) -> None:
    """Store the node table held as ``.npy`` files (one per column of
    :data:`NODE_TABLE_COLUMNS`) in ``columns`` into ``packed`` (see the module docstring),
    with the groups' ``labels`` in code order (default: their codes). One column is in
    memory at a time, besides each node's group and tree starts. ``probabilities=False``
    leaves out ``poi`` and ``cond`` (a weighted index derives them:
    :mod:`uncertain_cep.index.store.weighted_nodes`)."""
    packed.mkdir(parents=True, exist_ok=True)

    def load(name: str) -> np.ndarray:
        return np.load(columns / f"{name}.npy", mmap_mode="r")

    group_start, tree_start = load("group_start"), load("tree_start")
    if labels is None:
        labels = pa.array(np.arange(len(group_start) - 1))
    _write(packed / _GROUPS, {"group": labels, "nodes": np.diff(group_start),
                              "trees": np.diff(tree_start)})
    n_nodes, n_trees = int(group_start[-1]), int(tree_start[-1])
    node_group = np.repeat(np.arange(len(group_start) - 1), np.diff(group_start))
    tree_group = np.repeat(np.arange(len(tree_start) - 1), np.diff(tree_start))
    nodes = np.arange(n_nodes, dtype=np.int64)
    trees = np.arange(n_trees, dtype=np.int64)
    node_columns = {
        "parent_back": _back(load("parent"), nodes),
        "tree": load("tree") - tree_start[node_group],
        "row": load("row"), "instant": load("instant"), "code": load("code"),
        "code_span": load("code_end") - load("code"), "kind": load("kind"),
        "depth": load("depth")}
    if probabilities:
        node_columns.update(poi=load("poi"), cond=load("cond"))
    _write(packed / _NODES, node_columns)
    del node_columns
    _write(packed / _TREES, {
        "parent_back": _back(load("tree_parent"), trees),
        "virtual": _local(load("tree_virtual"), group_start[tree_group]),
        "root": _local(load("tree_root"), group_start[tree_group]),
        "last_code": load("tree_last_code")})


def grouped_by_owner(owners: np.ndarray, members: np.ndarray, starts: np.ndarray
                     ) -> np.ndarray:
    """``members`` grouped by their ``owners`` (non-negative; ``starts``: where each
    owner's members begin, :func:`_starts`), each owner's in their order in ``members``:
    a stable counting sort, one pass (about 0.1 s for a shard's 15M real nodes, where a
    sort of keys and ids packed into int64 took 1.1-1.4 s).

    >>> owners = np.array([2, 0, 2, 1], dtype=np.int32)
    >>> grouped_by_owner(owners, np.array([3, 5, 6, 9], dtype=np.int32),
    ...                  _starts(owners, 3, np.dtype(np.int32))).tolist()
    [5, 9, 3, 6]
    """
    if len(owners) < 2 or bool((owners[1:] >= owners[:-1]).all()):
        return np.ascontiguousarray(members)
    out = np.empty(len(members), dtype=members.dtype)
    _scatter_by_owner(owners, members, starts[:-1].copy(), out)
    return out


@numba.njit(cache=True, nogil=True)
def _scatter_by_owner(owners: np.ndarray, members: np.ndarray, next_at: np.ndarray,
                      out: np.ndarray) -> None:
    for i in range(len(owners)):
        at = next_at[owners[i]]
        out[at] = members[i]
        next_at[owners[i]] = at + 1


def expand_node_columns(packed: Path, columns: Path, *, n_rows: int) -> None:
    """Write the node table stored in ``packed`` (:func:`pack_node_columns`) into
    ``columns``, one ``.npy`` file per column of :data:`NODE_TABLE_COLUMNS`, deriving
    what is not stored; ``n_rows``: the archive's events. A column is written as soon as
    it is made, so memory holds a few columns, not the table. A weighted index's ``poi``
    and ``cond`` are not stored: they are left to
    :func:`~uncertain_cep.index.store.weighted_nodes.derive_probabilities`."""
    columns.mkdir(parents=True, exist_ok=True)

    def save(name: str, values: np.ndarray) -> None:
        np.save(columns / f"{name}.npy", values)

    _expand(packed, n_rows, save)


def node_columns_in_memory(packed: Path, *, n_rows: int, groups: np.ndarray | None = None
                           ) -> dict[str, np.ndarray]:
    """The columns :func:`expand_node_columns` writes, in memory instead (where a copy
    on disk would be evicted before it is used again, writing it is the expansion's
    largest cost: 20-22 s against 5.3-9.8 s for a 3.8M-event shard, docs/benchmarks.md);
    without ``poi`` and ``cond`` for a weighted index.

    With ``groups`` (group codes), the table of those groups alone: every other group
    holds no node and no tree, and the archive rows of those groups no node (see
    :func:`_expand`). A query whose candidates meet a few groups reads no more."""
    arrays: dict[str, np.ndarray] = {}

    def save(name: str, values: np.ndarray) -> None:
        arrays[name] = values

    _expand(packed, n_rows, save, groups)
    return arrays


def _expand(packed: Path, n_rows: int, put: Callable[[str, np.ndarray], None],
            groups: np.ndarray | None = None) -> None:
    """The node table stored in ``packed``, each column handed to ``put`` as soon as it
    is made, in its column type (see :func:`expand_node_columns`).

    With ``groups``, only those groups' nodes and trees, renumbered in their order: the
    other groups' counts are taken as 0, and the rows of each file taken are those of
    the groups kept. Nothing else changes: a node's parent, tree and code are stored
    relative to its own group (:func:`pack_node_columns`), so a group's nodes mean in
    the smaller table what they mean in the whole one."""
    node_counts, tree_counts = _read(packed / _GROUPS, "nodes"), _read(packed / _GROUPS, "trees")
    stored_nodes, stored_trees = int(node_counts.sum()), int(tree_counts.sum())
    # The ids' type is the whole table's: one kernel build serves every part of it.
    ids = id_dtype(stored_nodes, n_rows)
    node_take = tree_take = None
    if groups is not None:
        kept = np.zeros(len(node_counts), dtype=bool)
        kept[np.asarray(groups, dtype=np.int64)] = True
        node_take = _ranges_of(node_counts, kept)
        tree_take = _ranges_of(tree_counts, kept)
        node_counts, tree_counts = node_counts * kept, tree_counts * kept
    group_start = np.concatenate([[0], np.cumsum(node_counts)]).astype(np.int64)
    tree_start = np.concatenate([[0], np.cumsum(tree_counts)]).astype(np.int64)
    nodes_file, trees_file = packed / _NODES, packed / _TREES

    def save(name: str, values: np.ndarray) -> None:
        put(name, np.ascontiguousarray(values, dtype=column_dtype(name, ids)))

    def read(path: Path, name: str) -> np.ndarray:
        # Widened straight to the column's own type (ids: int32 for most tables): every
        # value and every sum below fits it, and half the bytes of int64 move.
        return _read(path, name, column_dtype(name, ids) if name in _STORED_TYPES else ids,
                     node_take if path == nodes_file else tree_take)

    def save_members(name: str, starts: str, owners: np.ndarray, members: np.ndarray,
                     n_owners: int) -> None:
        # A CSR pair: the members (ascending node ids) grouped by owner, id order kept.
        first = _starts(owners, n_owners, ids)
        save(name, grouped_by_owner(owners, members, first))
        save(starts, first)

    save("group_start", group_start)
    save("tree_start", tree_start)
    n_nodes = int(group_start[-1])
    if _rows(nodes_file) != stored_nodes or _rows(trees_file) != stored_trees:
        raise IndexFormatError(f"{packed} is damaged: its node and tree tables do not "
                               "match its group sizes; rebuild the index")
    save("group", np.repeat(np.arange(len(node_counts), dtype=ids), node_counts))
    parent = _from_back(read(nodes_file, "parent_back"))
    save("parent", parent)
    # Children in id order: the nodes with a parent, stably sorted by it.
    has_parent = np.flatnonzero(parent >= 0).astype(ids)
    save_members("child_list", "child_start", parent[has_parent], has_parent, n_nodes)
    del parent, has_parent
    tree = read(nodes_file, "tree")
    tree += np.repeat(tree_start[:-1].astype(ids), node_counts)
    save("tree", tree)
    del tree
    row = read(nodes_file, "row")
    save("row", row)
    kind = read(nodes_file, "kind")
    save("kind", kind)
    # Each row's real nodes in id order.
    real = np.flatnonzero((kind == REAL) & (row >= 0)).astype(ids)
    save_members("row_nodes", "row_nodes_start", row[real], real, n_rows)
    del row, real
    code = read(nodes_file, "code")
    save("code", code)
    code_end = read(nodes_file, "code_span")
    code_end += code
    del code
    save("code_end", code_end)
    del code_end
    stored = pq.read_schema(nodes_file).names
    for name in ("instant", "depth", "poi", "cond"):
        if name in stored:
            save(name, read(nodes_file, name))
    first_node = np.repeat(group_start[:-1].astype(ids), tree_counts)
    tree_parent = _from_back(read(trees_file, "parent_back"))
    save("tree_parent", tree_parent)
    save("tree_level", _levels(tree_parent))
    virtual, root = read(trees_file, "virtual"), read(trees_file, "root")
    stands = virtual >= 0
    virtual[stands] += first_node[stands]
    rooted = root >= 0
    root[rooted] += first_node[rooted]
    del first_node
    save("tree_virtual", virtual)
    save("tree_root", root)
    save("tree_last_code", read(trees_file, "last_code"))
    # The root of the tree each virtual node stands for.
    child_root = np.full(n_nodes, -1, dtype=ids)
    child_root[virtual[stands]] = root[stands]
    if (kind[virtual[stands]] != VIRTUAL).any():
        raise IndexFormatError(f"{packed} is damaged: a tree's virtual node is not "
                               "virtual; rebuild the index")
    save("child_root", child_root)


def _ranges_of(counts: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """The positions, in a file of every owner's rows in turn (``counts`` each), of the
    rows of the owners ``kept``.

    >>> _ranges_of(np.array([2, 3, 1]), np.array([True, False, True])).tolist()
    [0, 1, 5]
    """
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    lengths = np.asarray(counts, dtype=np.int64)[kept]
    if not len(lengths) or not lengths.sum():
        return np.zeros(0, dtype=np.int64)
    # Each kept row's position: its owner's start plus its place among the owner's rows.
    first = np.repeat(starts[kept] - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
    return first + np.arange(int(lengths.sum()), dtype=np.int64)


def _rows(path: Path) -> int:
    """How many rows a packed file holds (its Parquet footer)."""
    try:
        return int(pq.ParquetFile(path).metadata.num_rows)
    except (OSError, pa.ArrowException) as e:
        raise IndexFormatError(f"{path} is damaged: {e}; rebuild the index") from e


def _from_back(back: np.ndarray) -> np.ndarray:
    """Parent ids from distances back (0: none, -1), in place of ``back``."""
    none = back == 0
    back *= -1
    back += np.arange(len(back), dtype=back.dtype)
    back[none] = -1
    return back


def _starts(keys: np.ndarray, n: int, ids: np.dtype) -> np.ndarray:
    """The CSR starts of ``n`` owners whose members' owners are ``keys``."""
    starts = np.zeros(n + 1, dtype=ids)
    np.cumsum(np.bincount(keys, minlength=n), out=starts[1:])
    return starts


def _levels(tree_parent: np.ndarray) -> np.ndarray:
    """Each tree's nesting level (how many trees enclose it), walking up only the trees
    still below a parent."""
    level = np.zeros(len(tree_parent), dtype=tree_parent.dtype)
    below = np.flatnonzero(tree_parent >= 0)
    up = tree_parent[below]
    while len(below):
        level[below] += 1
        up = tree_parent[up]
        deeper = up >= 0
        below, up = below[deeper], up[deeper]
    return level
