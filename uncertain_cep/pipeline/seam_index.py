"""The index of a seam: the few events around a shard boundary that a time slice
straddling it needs, indexed in memory instead of putting whole shards side by side.

A time slice whose span meets one shard answers from that shard's own working copy
(:func:`~uncertain_cep.pipeline.time_slices.plan_slices` cuts the slices of a sharded
index so that most do). A slice at a boundary, whose tuples may take events from two
shards, needs only the events of its span, ``t_hi >= lo`` and ``t_lo <= hi``: a window's
worth, where a shard holds millions. Those events are indexed again here, each shard's
with the *clusters* they belong to (:mod:`uncertain_cep.index.shards.cuts`): a group's
clusters are independent, so an index over some whole clusters of a piece gives every
tuple of their events the probability the whole piece gives it, as the cut into shards
does (design.md, "Shards"). Under Condition 2 a cut between clusters is not always exact,
so such an index has no seam index (:func:`seam_index` returns ``None``; the slice puts
its shards side by side).

The events of a span with their clusters are found without the clusters themselves
(:func:`whole_clusters_meeting`): the rows meeting ``[lo, hi]`` widened to the rows
meeting the instants those rows reach, until nothing more joins. At that fixpoint every
cluster with a row inside is inside whole (a cluster's events chain by overlapping
instants), whatever the group.

>>> t_lo, t_hi = np.array([0, 3, 6, 20, 30]), np.array([4, 7, 9, 25, 31])
>>> whole_clusters_meeting(t_lo, t_hi, 8, 8).tolist()   # [6, 9] meets [3, 7], it [0, 4]
[0, 1, 2]
>>> whole_clusters_meeting(t_lo, t_hi, 26, 29).tolist()
[]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from uncertain_cep.index.event_index import EventIndex
from uncertain_cep.index.shards.merge import merge_indexes
from uncertain_cep.index.store.reader import IndexReader

__all__ = ["SEAM_EVENTS", "seam_index", "whole_clusters_meeting"]

# A seam holding more events than this (a window far longer than the shards' overlap)
# is answered from its shards side by side: indexing it again would cost more.
SEAM_EVENTS = 200_000
_INT64 = (-(2**63), 2**63 - 1)


def whole_clusters_meeting(t_lo: np.ndarray, t_hi: np.ndarray, lo: int, hi: int
                           ) -> np.ndarray:
    """The rows (ascending) of every event whose instants ``[t_lo, t_hi]`` meet
    ``[lo, hi]``, with every event of their clusters (see the module docstring); ``lo``
    and ``hi`` are integers, clipped to int64."""
    lo, hi = max(int(lo), _INT64[0]), min(int(hi), _INT64[1])
    if lo > hi:
        return np.zeros(0, dtype=np.int64)
    while True:
        inside = (t_hi >= lo) & (t_lo <= hi)
        rows = np.flatnonzero(inside)
        if not len(rows):
            return rows
        wider_lo, wider_hi = min(lo, int(t_lo[rows].min())), max(hi, int(t_hi[rows].max()))
        if (wider_lo, wider_hi) == (lo, hi):
            return rows
        lo, hi = wider_lo, wider_hi


def _events_surely_inside(reader: IndexReader, lo: int, hi: int) -> int:
    """The events of the time buckets lying inside ``[lo, hi]`` (fewer than the span
    holds): a span this counts past the limit is refused before any shard is opened."""
    buckets = reader.time_buckets()
    inside = (buckets.starts >= lo) & (buckets.starts + buckets.width - 1 <= hi)
    return int(buckets.events[inside].sum())


def seam_index(reader: IndexReader, shards: Sequence[int], lo: int, hi: int,
               open_shard: Callable[[int], EventIndex]) -> EventIndex | None:
    """An in-memory index of the events of the sharded index ``reader`` opens whose
    instants meet ``[lo, hi]`` (integers), with their whole clusters, from the shards
    ``shards`` (``open_shard(k)``: shard ``k`` opened from its working copy; only its
    events' instants and the rows taken are read); ``None`` where the index was built
    with Condition 2 or the seam holds more than :data:`SEAM_EVENTS` events. Its groups
    are those of the shards' pieces, its statistics the whole index's (what plans
    use)."""
    if reader.manifest.settings.condition2 is not None or \
            _events_surely_inside(reader, lo, hi) > SEAM_EVENTS:
        return None
    settings = reader.manifest.settings.build_settings()
    chosen: list[tuple[EventIndex, np.ndarray]] = []
    total = 0
    for k in shards:
        if not reader.manifest.shards[k].counts.events:
            continue
        shard = open_shard(k)
        rows = whole_clusters_meeting(shard.archive.t_lo, shard.archive.t_hi, lo, hi)
        total += len(rows)
        if total > SEAM_EVENTS:
            return None
        chosen.append((shard, rows))
    if not chosen:
        return None
    # With no event in the span, an empty index of the first shard answers nothing.
    with_rows = [(shard, rows) for shard, rows in chosen if len(rows)] or chosen[:1]
    return merge_indexes([EventIndex(shard.archive.take_rows(rows), settings)
                          for shard, rows in with_rows], statistics=reader.statistics())
