"""The R*-tree's boxes: each event's box, the tree's settings, and what else may search them.

Every event is one box over ``(group, time interval, code range, numeric attribute
ranges)`` (Zhou et al. 4.3), its extents rounded outward to doubles
(:mod:`uncertain_cep.index.forests.rounding`). :class:`EventLayout` holds, per archive
row, the position and extents that make its box (computed when the index is built, and
stored with an index on disk so nothing is recomputed per event when it is opened);
:func:`event_boxes` turns them into box corners; :func:`rtree_properties` are the
settings of every R*-tree an index loads; :class:`BoxSearch` is what may answer an
index's searches instead of its R*-tree.

>>> lows, highs = event_boxes(np.array([0]), np.array([1]), np.array([2]),
...                           np.array([0.0]), np.array([1.0]), [])
>>> lows.tolist(), highs.tolist(), rtree_properties(0).dimension
([[0.0, 1.0, 0.0]], [[0.0, 2.0, 1.0]], 3)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from rtree import index as rtree_index

from uncertain_cep.index.forests.forest import GroupForest
from uncertain_cep.index.forests.tables import group_extents
from uncertain_cep.model.events import Archive

__all__ = ["BoxSearch", "EventLayout", "event_boxes", "merged_by_box", "rtree_properties"]


@dataclass(frozen=True, eq=False)
class EventLayout:
    """Per archive row: its position in its group's forest, the earliest and latest
    instant of its nodes, and its code range as outward-rounded doubles."""

    positions: np.ndarray
    t_min: np.ndarray
    t_max: np.ndarray
    code_lo: np.ndarray
    code_hi: np.ndarray

    @classmethod
    def of(cls, archive: Archive, forests: Sequence[GroupForest], codes: str,
           members: Sequence[np.ndarray] | None = None) -> EventLayout:
        """The layout of an archive indexed in this process (``members``: its
        :meth:`~uncertain_cep.model.events.Archive.group_members`, if already known)."""
        n = archive.n_events
        positions = np.zeros(n, dtype=np.int64)
        t_min = np.zeros(n, dtype=np.int64)
        t_max = np.zeros(n, dtype=np.int64)
        code_lo = np.zeros(n, dtype=np.float64)
        code_hi = np.zeros(n, dtype=np.float64)
        for m, forest in zip(members if members is not None else archive.group_members(),
                             forests):
            positions[m] = np.arange(len(m))
            t_min[m], t_max[m], code_lo[m], code_hi[m] = group_extents(forest, codes)
        return cls(positions, t_min, t_max, code_lo, code_hi)


def rtree_properties(n_attributes: int) -> rtree_index.Property:
    """R*-tree settings of every index: (group, time, code) plus one axis per attribute."""
    props = rtree_index.Property()
    props.dimension = 3 + n_attributes
    props.variant = rtree_index.RT_Star
    return props


def event_boxes(group: np.ndarray, t_min: np.ndarray, t_max: np.ndarray,
                code_lo: np.ndarray, code_hi: np.ndarray,
                attributes: Sequence[tuple[np.ndarray, np.ndarray]]
                ) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper corners of the events' R*-tree boxes, one row per event."""
    lows = [group, t_min, code_lo] + [lo for lo, _ in attributes]
    highs = [group, t_max, code_hi] + [hi for _, hi in attributes]
    return (np.column_stack([np.asarray(c, dtype=np.float64) for c in lows]),
            np.column_stack([np.asarray(c, dtype=np.float64) for c in highs]))


def merged_by_box(found: Sequence[tuple[np.ndarray, np.ndarray]], n_boxes: int
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Bulk searches of the same ``n_boxes`` boxes in several trees (each result rtree's
    ``intersection_v`` form: ids box after box, and how many per box) as one result: each
    box's ids, tree after tree.

    >>> ids, counts = merged_by_box([(np.array([1, 2]), np.array([1, 1])),
    ...                              (np.array([7]), np.array([1, 0]))], 2)
    >>> ids.tolist(), counts.tolist()
    ([1, 7, 2], [2, 1])
    """
    owner = np.concatenate([np.repeat(np.arange(n_boxes), np.asarray(c, dtype=np.int64))
                            for _, c in found])
    ids = np.concatenate([np.asarray(i, dtype=np.int64) for i, _ in found])
    order = np.argsort(owner, kind="stable")
    return ids[order], np.bincount(owner, minlength=n_boxes).astype(np.int64)


class BoxSearch(Protocol):
    """What answers an index's candidate searches besides its R*-tree (a time slice's
    scan of its event boxes, :class:`uncertain_cep.index.store.slice_reads.BoxScan`): rtree's
    bulk ``intersection_v`` and a name for EXPLAIN."""

    access: str

    def intersection_v(self, mins: np.ndarray, maxs: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]: ...

