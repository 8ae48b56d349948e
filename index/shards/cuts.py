"""Where an archive may be cut by time into shards, and which shard each event goes to.

A group's events fall into *clusters*: runs of events, in order of their earliest instant,
each overlapping the reach (latest instant so far) of the run before it. Two clusters of
one group never hold a common instant, so Condition 1 never links them; the group's order
instances are the product of its clusters' (the top tree of its forest is a chain of
their subsequences, every OI passing every link: design.md, "Shards"). A group may
therefore be cut between any two clusters, and each side indexed as a group of its own
(a *piece*), with the same probability for every tuple. Under Condition 2 a cut is kept
only where every pair of the group's events across it is always allowed
(:func:`~uncertain_cep.index.forests.isolation.always_allowed`, the rule
:func:`~uncertain_cep.index.forests.isolation.split_isolated` applies); elsewhere the
cluster after it stays with the shard before.

A cluster belongs to the shard holding its start: shard ``k`` holds the clusters starting
in ``[cuts[k-1], cuts[k])``. Its events may reach past ``cuts[k]``; a shard's extent is
recorded, and queries read every shard whose extent meets their span.

>>> clusters = find_clusters(np.array([0, 0, 0, 1]), np.array([1, 2, 9, 3]),
...                          np.array([3, 4, 9, 3]))
>>> clusters.of_row.tolist(), clusters.start.tolist(), clusters.events.tolist()
([0, 0, 1, 2], [1, 9, 3], [2, 1, 1])
>>> plan_cuts(clusters.start, clusters.events, 2).tolist()   # 2 events, then 2
[3]
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from uncertain_cep.index.forests.domains import interval
from uncertain_cep.index.forests.isolation import always_allowed
from uncertain_cep.model.events import Archive
from uncertain_cep.model.feasibility import PairConstraint

__all__ = ["Clusters", "find_clusters", "plan_cuts", "shard_of_rows"]


class Clusters(NamedTuple):
    """The clusters of some rows: per row its cluster, per cluster its group, start and
    number of events. Clusters are numbered by ``(group, start)``."""

    of_row: np.ndarray
    group: np.ndarray
    start: np.ndarray
    events: np.ndarray


def find_clusters(group_of: np.ndarray, t_lo: np.ndarray, t_hi: np.ndarray) -> Clusters:
    """The clusters of rows given by group code and instant interval (see the module
    docstring): a row opens a new cluster when its earliest instant lies after the latest
    instant of every earlier row of its group."""
    group_of = np.asarray(group_of, dtype=np.int64)
    t_lo, t_hi = np.asarray(t_lo, dtype=np.int64), np.asarray(t_hi, dtype=np.int64)
    order = np.lexsort((t_hi, t_lo, group_of))
    g, lo = group_of[order], t_lo[order]
    reach = pd.Series(t_hi[order]).groupby(g).cummax().to_numpy()
    opens = np.ones(len(order), dtype=np.bool_)
    if len(order) > 1:
        same_group = g[1:] == g[:-1]
        opens[1:] = ~same_group | (lo[1:] > reach[:-1])
    cluster_sorted = np.cumsum(opens) - 1
    of_row = np.empty(len(order), dtype=np.int64)
    of_row[order] = cluster_sorted
    firsts = np.flatnonzero(opens)
    return Clusters(of_row=of_row, group=g[firsts], start=lo[firsts],
                    events=np.diff(np.r_[firsts, len(order)]).astype(np.int64))


def plan_cuts(starts: np.ndarray, events: np.ndarray, n_shards: int) -> np.ndarray:
    """Cut instants that part clusters (or time buckets), given by their start and number
    of events, into at most ``n_shards`` shards of about equal events; clusters starting
    at one instant stay together, so fewer shards come back when starts are few."""
    if n_shards < 1:
        raise ValueError(f"n_shards must be at least 1, got {n_shards}")
    starts, events = np.asarray(starts, dtype=np.int64), np.asarray(events, dtype=np.int64)
    distinct, at = np.unique(starts, return_inverse=True)
    if len(distinct) < 2:
        return np.zeros(0, dtype=np.int64)
    total = np.cumsum(np.bincount(at, weights=events, minlength=len(distinct)))
    wanted = total[-1] * np.arange(1, n_shards) / n_shards
    # The first start after the one whose running total reaches each share.
    after = np.searchsorted(total, wanted, side="left") + 1
    return np.unique(distinct[after[after < len(distinct)]])


def shard_of_rows(archive: Archive, cuts: np.ndarray,
                  condition2: PairConstraint | None = None) -> np.ndarray:
    """Per archive row, the shard of its cluster (by the cluster's start; under
    Condition 2, moved back to the shard before where the cut would not be exact)."""
    clusters = find_clusters(archive.group_of, archive.t_lo, archive.t_hi)
    shard = np.searchsorted(np.asarray(cuts, dtype=np.int64), clusters.start, side="right")
    if condition2 is not None and len(cuts):
        _keep_unsafe_cuts_together(archive, clusters, shard, condition2)
    return shard[clusters.of_row]


def _keep_unsafe_cuts_together(archive: Archive, clusters: Clusters, shard: np.ndarray,
                               condition2: PairConstraint) -> None:
    """Under Condition 2, give a cluster its predecessor's shard wherever some pair of the
    group's events across that cut may violate the predicate (``shard`` in place)."""
    changes = np.flatnonzero((clusters.group[1:] == clusters.group[:-1])
                             & (shard[1:] != shard[:-1])) + 1
    if not len(changes):
        return
    row_order = np.argsort(clusters.of_row, kind="stable")
    row_start = np.r_[0, np.cumsum(clusters.events)]
    for g in np.unique(clusters.group[changes]).tolist():
        mine = np.flatnonzero(clusters.group == g)
        members = row_order[row_start[mine[0]]:row_start[mine[-1] + 1]]
        check = condition2.for_group(archive, members)
        # Member position of each cluster's first event.
        bounds = row_start[mine] - row_start[mine[0]]
        lo, hi = archive.t_lo[members], archive.t_hi[members]
        for k in range(1, len(mine)):
            if shard[mine[k]] == shard[mine[k - 1]]:
                continue
            cut = int(bounds[k])
            safe = all(always_allowed(a, interval(int(lo[a]), int(hi[a])), b,
                                      interval(int(lo[b]), int(hi[b])), check)
                       for a in range(cut) for b in range(cut, len(members)))
            if not safe:
                shard[mine[k]] = shard[mine[k - 1]]
