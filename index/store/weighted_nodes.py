"""A weighted index's node probabilities derived, not stored (SEMANTICS A6).

Without instant weights a node's ``poi`` and ``cond`` are ratios of small integers and
compress to almost nothing; with weights they are arbitrary doubles, 55 bytes an event
of the packed node table at 1M events (docs/benchmarks.md). They follow from the trees'
shapes and the events' weights, which the index stores anyway (the events table's
``t_mu``/``t_sigma``/``t_weights``), by Zhou et al.'s counting (4.1) with weights:

* bottom up, a node's weighted count is its own instant's weight times the sum of its
  children's counts (1 for a leaf), times its child tree's count for a virtual node;
* ``cond`` of a node is its count over the sum of its siblings' (1 for a root);
* top down, ``poi`` of a node is its parent's times its ``cond``; a child tree's root
  takes the ``poi`` of the virtual node standing for it (the top tree's root: 1).

Children and child trees sit one level below their parent in the node table's ``depth``
(the depth counting the trees above), so both passes go level by level. An index whose
events table carries weights stores neither column (:func:`derive_probabilities` runs
before the node table is packed, and again when a working copy is expanded), so the
probabilities a query reads are the same wherever the index is opened.

>>> import tempfile
>>> from pathlib import Path
>>> import pandas as pd
>>> import uncertain_cep as uc
>>> df = pd.DataFrame({"event_id": [1, 2], "group": 0, "t_lo": [1, 2], "t_hi": [2, 3],
...                    "x": [0, 1], "t_weights": [[1.0, 3.0], None]})
>>> with tempfile.TemporaryDirectory() as tmp:
...     uc.build_index(df).save(tmp + "/ix")
...     stored = pq.read_schema(Path(tmp) / "ix" / "packed" / "nodes.parquet").names
...     q = "PATTERN SEQ(A, B) DEFINE A AS x = 0, B AS x = 1 WITHIN 1"
...     conf = uc.open_index(tmp + "/ix").query(q)["confidence"].round(12).tolist()
>>> "poi" in stored, conf
(False, [0.8])
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from uncertain_cep.errors import IndexFormatError
from uncertain_cep.index.forests.forest import REAL
from uncertain_cep.model.instant_weights import (
    WEIGHT_COLUMNS,
    InstantWeights,
    stored_instant_weights,
)

__all__ = ["derive_probabilities", "node_probabilities", "stored_weights",
           "weighted_probabilities"]


def stored_weights(event_files: list[Path]) -> tuple[InstantWeights, np.ndarray] | None:
    """The instant weights an events table stores and its rows' ``t_lo``, or None if it
    stores none."""
    if not event_files:
        return None
    names = pq.read_schema(event_files[0]).names
    columns = [c for c in WEIGHT_COLUMNS if c in names]
    if not columns:
        return None
    frame = pd.concat([pq.read_table(f, columns=["t_lo", "t_hi", *columns]).to_pandas()
                       for f in event_files], ignore_index=True)
    t_lo = frame["t_lo"].to_numpy(dtype=np.int64)
    weights = stored_instant_weights(frame, t_lo, frame["t_hi"].to_numpy(dtype=np.int64))
    return None if weights is None else (weights, t_lo)


def derive_probabilities(columns: Path, event_files: list[Path]) -> bool:
    """Write ``poi.npy`` and ``cond.npy`` into the node table's ``columns`` from its shape
    and the weights of ``event_files`` (the index's events table, in row order); False,
    writing nothing, when the table stores no weights."""

    def load(name: str) -> np.ndarray:
        return np.load(columns / f"{name}.npy", mmap_mode="r")

    found = weighted_probabilities(load, event_files, str(columns))
    if found is None:
        return False
    np.save(columns / "poi.npy", found[0])
    np.save(columns / "cond.npy", found[1])
    return True


def weighted_probabilities(load: Callable[[str], np.ndarray], event_files: list[Path],
                           where: str) -> tuple[np.ndarray, np.ndarray] | None:
    """``poi`` and ``cond`` of the node table whose columns ``load(name)`` gives, from the
    weights of ``event_files``; None when they store no weights (``where``: the table's
    place, for the error)."""
    found = stored_weights(event_files)
    if found is None:
        return None
    weights, t_lo = found
    poi, cond = node_probabilities(
        load("parent"), load("child_root"), load("depth"), load("tree"), load("tree_virtual"),
        node_weights(load("kind"), load("row"), load("instant"), weights, t_lo))
    if not (np.isfinite(poi).all() and (poi > 0).all() and (cond > 0).all()):
        raise IndexFormatError(f"{where} holds OI-trees whose weighted probabilities are "
                               "not positive; rebuild the index")
    return poi, cond


def node_weights(kind: np.ndarray, row: np.ndarray, instant: np.ndarray,
                 weights: InstantWeights, t_lo: np.ndarray) -> np.ndarray:
    """Each node's own weight: its event's weight at its instant over that event's
    largest (1 for roots, virtual nodes and unweighted events)."""
    out = np.ones(len(kind))
    real = np.flatnonzero((np.asarray(kind) == REAL) & (np.asarray(row) >= 0))
    rows = np.asarray(row)[real]
    weighted = weights.weighted[rows]
    real, rows = real[weighted], rows[weighted]
    at = weights.start[rows] + (np.asarray(instant)[real] - t_lo[rows])
    out[real] = weights.scaled()[at]
    return out


def node_probabilities(parent: np.ndarray, child_root: np.ndarray, depth: np.ndarray,
                       tree: np.ndarray, tree_virtual: np.ndarray, weight: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
    """``poi`` and ``cond`` of every node of a node table from its shape and each node's
    own ``weight`` (see the module docstring).

    >>> # One tree: a root with two leaves weighing 1 and 3.
    >>> poi, cond = node_probabilities(np.array([-1, 0, 0]), np.full(3, -1),
    ...     np.array([0, 1, 1]), np.zeros(3, dtype=np.int64), np.array([-1]),
    ...     np.array([1.0, 1.0, 3.0]))
    >>> poi.tolist(), cond.tolist()
    ([1.0, 0.25, 0.75], [1.0, 0.25, 0.75])
    """
    parent = np.asarray(parent)
    child_root = np.asarray(child_root)
    n = len(parent)
    by_level = np.argsort(np.asarray(depth), kind="stable")
    bounds = np.searchsorted(np.asarray(depth)[by_level], np.arange(int(np.max(depth,
                                                                              initial=0)) + 2))
    has_children = np.bincount(parent[parent >= 0], minlength=n) > 0
    count = np.zeros(n)
    below = np.zeros(n)
    for level in range(len(bounds) - 2, -1, -1):
        nodes = by_level[bounds[level]:bounds[level + 1]]
        inner = child_root[nodes]
        count[nodes] = (weight[nodes] * np.where(has_children[nodes], below[nodes], 1.0)
                        * np.where(inner >= 0, count[np.maximum(inner, 0)], 1.0))
        up = parent[nodes]
        has = up >= 0
        np.add.at(below, up[has], count[nodes][has])
    cond = np.ones(n)
    rooted = parent >= 0
    cond[rooted] = count[rooted] / below[parent[rooted]]
    poi = np.ones(n)
    above = np.asarray(tree_virtual)[np.asarray(tree)]
    for level in range(len(bounds) - 1):
        nodes = by_level[bounds[level]:bounds[level + 1]]
        up = parent[nodes]
        v = above[nodes]
        poi[nodes] = np.where(up >= 0, poi[np.maximum(up, 0)] * cond[nodes],
                              np.where(v >= 0, poi[np.maximum(v, 0)], 1.0))
    return poi, cond
