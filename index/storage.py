"""The on-disk index: Parquet tables plus a manifest, written atomically.

Layout of an index directory::

    manifest.json    format version, build settings, attributes, counts, checksums
    events.parquet   the validated archive (time already discretised), in input order
    trees.parquet    one row per OI-tree: group, parent, virtual node, interval, fanout,
                     height, OI count, code ranges of both schemes
    nodes.parquet    one row per node: group, tree, parent, kind, event, instant,
                     probabilities and codes of both schemes

Codes of the paper's scheme and OI counts are arbitrary-precision integers, stored as
decimal strings. The R*-tree is bulk-loaded again when the index is opened.

A write goes to a temporary sibling directory, every file is flushed to disk, and the
manifest (with a SHA-256 of every table) is written last; the directory is then renamed
into place. An interrupted write therefore never leaves a directory that
:func:`load_index` accepts, and a damaged or foreign one is refused with
:class:`~uncertain_cep.errors.IndexFormatError`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from index.event_index import BuildSettings, EventIndex
from index.forest import GroupForest
from uncertain_cep.errors import IndexFormatError
from uncertain_cep.model.events import read_archive
from uncertain_cep.model.feasibility import MaxSpeed, PairPredicate

__all__ = ["FORMAT_VERSION", "load_index", "save_index"]

FORMAT_VERSION = 1
_TABLES = ("events.parquet", "trees.parquet", "nodes.parquet")
_NODE_INT = ("kind", "event", "instant", "tree", "parent", "depth", "child_tree",
             "compact_code", "compact_end")
_NODE_FLOAT = ("cond", "poi_local", "poi")


def save_index(index: EventIndex, path: str | os.PathLike[str]) -> None:
    """Write ``index`` to the directory ``path`` atomically (replacing an older index)."""
    target = Path(path)
    if target.exists() and not (target / "manifest.json").exists() and any(target.iterdir()):
        raise IndexFormatError(f"{target} exists and is not an index; refusing to overwrite it")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    # mkdtemp makes the directory private (0700); an index is as readable as any directory
    # made under the user's umask.
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(tmp, 0o777 & ~mask)
    try:
        archive = index.archive
        _write(pa.Table.from_pandas(archive.to_frame(), preserve_index=False),
               tmp / "events.parquet")
        _write(_trees_table(index.forests), tmp / "trees.parquet")
        _write(_nodes_table(index.forests), tmp / "nodes.parquet")
        manifest = {
            "format": "uncertain-cep index",
            "format_version": FORMAT_VERSION,
            "group_by": archive.group_by,
            "attributes": {"numeric": list(archive.numeric_names),
                           "categorical": list(archive.categorical_names)},
            "settings": _settings_to_json(index.settings),
            "counts": {"events": archive.n_events, "groups": archive.n_groups,
                       "trees": sum(f.n_trees for f in index.forests),
                       "nodes": sum(f.n_nodes for f in index.forests)},
            "sha256": {name: _sha256(tmp / name) for name in _TABLES},
        }
        # The archive as validated is what the index answers for.
        manifest["input_fingerprint"] = _sha256(tmp / "events.parquet")
        with open(tmp / "manifest.json", "w") as fh:
            json.dump(manifest, fh, indent=2)
            fh.flush()
            os.fsync(fh.fileno())
        _swap_into_place(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def load_index(path: str | os.PathLike[str],
               pair_predicate: PairPredicate | None = None) -> EventIndex:
    """Open an index directory written by :func:`save_index`."""
    root = Path(path)
    manifest = _read_manifest(root)
    for name in _TABLES:
        if not (root / name).exists():
            raise IndexFormatError(f"{root} is damaged: {name} is missing")
        if _sha256(root / name) != manifest["sha256"].get(name):
            raise IndexFormatError(f"{root} is damaged: {name} does not match its checksum in "
                                   "manifest.json; rebuild the index")
    try:
        events = pq.read_table(root / "events.parquet").to_pandas()
        archive = read_archive(events, group_by=manifest["group_by"])
        settings = _settings_from_json(manifest["settings"], pair_predicate)
        forests = _forests_from_tables(pq.read_table(root / "trees.parquet").to_pandas(),
                                       pq.read_table(root / "nodes.parquet").to_pandas(),
                                       archive.n_groups)
    except (OSError, KeyError, ValueError, pa.ArrowException) as e:
        raise IndexFormatError(f"{root} is damaged: {e}") from e
    return EventIndex(archive, settings, forests)


# ---------------------------------------------------------------- writing

def _write(table: pa.Table, path: Path) -> None:
    pq.write_table(table, path)
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _swap_into_place(tmp: Path, target: Path) -> None:
    if not target.exists():
        os.replace(tmp, target)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
    old.rmdir()
    os.replace(target, old)
    os.replace(tmp, target)
    shutil.rmtree(old, ignore_errors=True)


def _trees_table(forests: list[GroupForest]) -> pa.Table:
    cols: dict[str, list[Any]] = {k: [] for k in (
        "group", "tree", "parent", "virtual", "root", "t_lo", "t_hi", "fanout", "height",
        "order_instances", "paper_lo", "paper_hi", "compact_lo", "compact_hi")}
    for g, f in enumerate(forests):
        for t in range(f.n_trees):
            lo, hi = f.tree_paper_range[t]
            values = (g, t, f.tree_parent[t], f.tree_virtual[t], f.tree_root[t], f.tree_lo[t],
                      f.tree_hi[t], f.tree_fanout[t], f.tree_height[t], str(f.tree_count[t]),
                      str(lo), str(hi), f.tree_compact_range[t][0], f.tree_compact_range[t][1])
            for k, v in zip(cols, values):
                cols[k].append(v if isinstance(v, str) else int(v))
    return pa.table(cols)


def _nodes_table(forests: list[GroupForest]) -> pa.Table:
    parts = []
    for g, f in enumerate(forests):
        frame = {"group": np.full(f.n_nodes, g, dtype=np.int64)}
        for k in _NODE_INT:
            frame[k] = np.asarray(getattr(f, k), dtype=np.int64)
        for k in _NODE_FLOAT:
            frame[k] = np.asarray(getattr(f, k), dtype=np.float64)
        frame["rel"] = np.array([str(r) for r in f.rel], dtype=object)
        frame["paper_code"] = np.array([str(c) for c in f.paper_code], dtype=object)
        parts.append(pd.DataFrame(frame))
    if not parts:
        return pa.table({"group": pa.array([], pa.int64())})
    return pa.Table.from_pandas(pd.concat(parts, ignore_index=True), preserve_index=False)


def _settings_to_json(settings: BuildSettings) -> dict[str, Any]:
    c2 = settings.condition2
    if isinstance(c2, MaxSpeed):
        cond: dict[str, Any] | None = {"kind": "max_speed", "v_max": c2.v_max,
                                       "coordinates": list(c2.coordinates)}
    elif c2 is not None:
        cond = {"kind": "user_predicate"}
    else:
        cond = None
    return {"condition2": cond, "multi_tree": settings.multi_tree, "codes": settings.codes,
            "node_budget": settings.node_budget}


# ---------------------------------------------------------------- reading

def _read_manifest(root: Path) -> dict[str, Any]:
    if not root.is_dir():
        raise IndexFormatError(f"{root} is not an index directory (it does not exist)")
    try:
        with open(root / "manifest.json") as fh:
            manifest = json.load(fh)
    except FileNotFoundError:
        raise IndexFormatError(f"{root} has no manifest.json: not an index, or its write was "
                               "interrupted; rebuild it") from None
    except (OSError, ValueError) as e:
        raise IndexFormatError(f"{root}/manifest.json is damaged: {e}") from e
    if not isinstance(manifest, dict) or manifest.get("format") != "uncertain-cep index":
        raise IndexFormatError(f"{root}/manifest.json does not describe an uncertain-cep index")
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        raise IndexFormatError(f"{root} has index format version {version!r}; this version of "
                               f"uncertain-cep reads version {FORMAT_VERSION}; rebuild the index")
    return manifest


def _settings_from_json(data: dict[str, Any], pair_predicate: PairPredicate | None
                        ) -> BuildSettings:
    cond = data.get("condition2")
    condition2: MaxSpeed | PairPredicate | None = None
    if cond is not None and cond["kind"] == "max_speed":
        condition2 = MaxSpeed(cond["v_max"], tuple(cond["coordinates"]))
    elif cond is not None:
        # A user's function is not stored; the trees were built with it, and only the
        # possible-worlds baseline needs it again.
        condition2 = pair_predicate
    return BuildSettings(condition2=condition2, multi_tree=data["multi_tree"],
                         codes=data["codes"], node_budget=data["node_budget"])


def _forests_from_tables(trees: pd.DataFrame, nodes: pd.DataFrame,
                         n_groups: int) -> list[GroupForest]:
    forests = []
    tree_groups = dict(iter(trees.groupby("group", sort=True)))
    node_groups = dict(iter(nodes.groupby("group", sort=True)))
    for g in range(n_groups):
        forests.append(_forest(tree_groups[g].sort_values("tree"), node_groups[g]))
    return forests


def _forest(trees: pd.DataFrame, nodes: pd.DataFrame) -> GroupForest:
    n = len(nodes)
    parent = nodes["parent"].to_numpy(dtype=np.int64)
    kind = nodes["kind"].to_numpy(dtype=np.int8)
    # Node ids are breadth-first per tree, so children in id order are in sibling order.
    has_parent = parent >= 0
    child_list = np.flatnonzero(has_parent)
    child_list = child_list[np.argsort(parent[has_parent], kind="stable")]
    counts = np.bincount(parent[has_parent], minlength=n)
    child_start = np.zeros(n + 1, dtype=np.int64)
    child_start[1:] = np.cumsum(counts)
    tree = nodes["tree"].to_numpy(dtype=np.int64)
    virtual = np.flatnonzero(kind == 2)
    virtuals: list[list[int]] = [[] for _ in range(len(trees))]
    for v in virtual:
        virtuals[int(tree[v])].append(int(v))
    return GroupForest(
        kind=kind, event=nodes["event"].to_numpy(dtype=np.int64),
        instant=nodes["instant"].to_numpy(dtype=np.int64), tree=tree, parent=parent,
        depth=nodes["depth"].to_numpy(dtype=np.int64), child_start=child_start,
        child_list=child_list.astype(np.int64),
        child_tree=nodes["child_tree"].to_numpy(dtype=np.int64),
        cond=nodes["cond"].to_numpy(dtype=float), poi_local=nodes["poi_local"].to_numpy(float),
        poi=nodes["poi"].to_numpy(dtype=float), rel=[int(r) for r in nodes["rel"]],
        paper_code=[int(c) for c in nodes["paper_code"]],
        compact_code=nodes["compact_code"].to_numpy(dtype=np.int64),
        compact_end=nodes["compact_end"].to_numpy(dtype=np.int64),
        tree_parent=trees["parent"].to_numpy(dtype=np.int64),
        tree_virtual=trees["virtual"].to_numpy(dtype=np.int64),
        tree_root=trees["root"].to_numpy(dtype=np.int64),
        tree_lo=trees["t_lo"].to_numpy(dtype=np.int64),
        tree_hi=trees["t_hi"].to_numpy(dtype=np.int64),
        tree_fanout=trees["fanout"].to_numpy(dtype=np.int64),
        tree_height=trees["height"].to_numpy(dtype=np.int64),
        tree_count=[int(c) for c in trees["order_instances"]],
        tree_paper_range=[(int(a), int(b)) for a, b in zip(trees["paper_lo"], trees["paper_hi"])],
        tree_compact_range=trees[["compact_lo", "compact_hi"]].to_numpy(dtype=np.int64),
        tree_virtuals=virtuals)
