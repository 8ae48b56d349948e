"""The whole index: one forest of OI-trees per dependency group and one R*-tree of events.

Groups are indexed independently by :func:`build_group_forest`, a pure function of the
group's rows and the build settings (the Spark pipeline calls it per group in executors).
:class:`EventIndex` then gathers the forests, maps every event to its nodes, and loads one
R*-tree (``rtree``'s R*-variant, bulk-loaded) with one box per event over
``(group, time interval, code range, numeric attribute ranges)`` (Zhou et al. 4.3).

R*-tree coordinates are doubles. Codes of the compact scheme stay below 2**53 for any
index that fits in memory, so they are exact; the paper scheme's codes grow like
fanout**depth and lose precision past 2**53 (and overflow past ~1.8e308). Boxes and query
ranges are therefore rounded outward (:func:`float_down`/:func:`float_up`), so the
R*-tree may return a few extra candidates but never loses one; every candidate is then
checked exactly on the node's integer code.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from rtree import index as rtree_index

from index.codes import CodeScheme, code_scheme
from index.forest import REAL, GroupForest, build_forest
from index.isolation import hall_violation
from index.oi_tree import GroupInfeasible, plan_group
from uncertain_cep.errors import IndexBuildError, InputError
from uncertain_cep.model.events import Archive
from uncertain_cep.model.feasibility import GroupPairCheck, PairConstraint

__all__ = ["BuildSettings", "EventIndex", "build_group_forest", "float_down", "float_up"]

# Planning recurses once per event along a root-to-leaf path; pure-Python recursion does
# not use the C stack on 3.11+, so a deeper limit is safe.
sys.setrecursionlimit(max(sys.getrecursionlimit(), 100_000))

_FMAX = sys.float_info.max


def float_down(x: int | float) -> float:
    """Largest double <= x (clamped to the double range)."""
    try:
        f = float(x)
    except OverflowError:
        return _FMAX if x > 0 else -math.inf
    return math.nextafter(f, -math.inf) if f > x else f


def float_up(x: int | float) -> float:
    """Smallest double >= x (infinite past the double range)."""
    try:
        f = float(x)
    except OverflowError:
        return math.inf if x > 0 else -_FMAX
    return math.nextafter(f, math.inf) if f < x else f


@dataclass(frozen=True)
class BuildSettings:
    """How the index is built; validated when constructed.

    Parameters
    ----------
    condition2
        Condition 2 (``MaxSpeed`` or ``PairPredicate``), or ``None``.
    multi_tree
        Multi-tree index (default) or the paper's single tree (a baseline).
    codes
        ``"compact"`` (default) or ``"paper"``.
    node_budget
        Largest number of OI-tree nodes for one group.
    """

    condition2: PairConstraint | None = None
    multi_tree: bool = True
    codes: str = "compact"
    node_budget: int | None = 2_000_000

    def __post_init__(self) -> None:
        code_scheme(self.codes)  # validates the name
        if self.node_budget is not None and self.node_budget < 1:
            raise IndexBuildError(f"node_budget must be a positive int, got {self.node_budget}")


def build_group_forest(label: object, event_ids: Sequence[object], t_lo: Sequence[int],
                       t_hi: Sequence[int], pair_check: GroupPairCheck | None,
                       settings: BuildSettings) -> GroupForest:
    """Index one dependency group: plan its OI-tree(s) and instantiate them.

    Raises :class:`InputError` if the group has no order instance (naming the events that
    cannot all fit) and :class:`IndexBuildError` if it needs more nodes than the budget.
    """
    try:
        plan = plan_group(t_lo, t_hi, pair_check, settings.multi_tree, settings.node_budget)
    except GroupInfeasible as e:
        names = ", ".join(repr(_plain(event_ids[i])) for i in e.events)
        if e.window is None:
            violation = hall_violation({i: tuple(range(int(t_lo[i]), int(t_hi[i]) + 1))
                                        for i in e.events})
            window = violation.window if violation else None
        else:
            window = e.window
        where = (f" all lie within instants [{window[0]}, {window[1]}], "
                 f"{window[1] - window[0] + 1} instants for {len(e.events)} events"
                 if window else " cannot all be placed at distinct instants"
                 + (" satisfying Condition 2" if pair_check is not None else ""))
        raise InputError(f"group {_plain(label)!r} has no order instance: events {names}{where}; "
                         "widen their intervals or use a finer time unit") from None
    except IndexBuildError as e:
        raise IndexBuildError(f"group {_plain(label)!r} ({len(t_lo)} events) is too large to "
                              f"index: {e}; use a coarser time unit, split the group, or raise "
                              "node_budget") from None
    return build_forest(plan)


def _plain(x: object) -> object:
    return x.item() if isinstance(x, np.generic) else x


class EventIndex:
    """Forests of every group, each event's nodes, and the R*-tree over events.

    Attributes
    ----------
    forests
        One :class:`GroupForest` per group code.
    members
        Per group, the archive rows of its events, by position in the group.
    event_group, event_pos
        Per archive row: group code and position in the group.
    event_nodes
        Per archive row: its real nodes (ids local to the group's forest).
    """

    def __init__(self, archive: Archive, settings: BuildSettings,
                 forests: Sequence[GroupForest] | None = None) -> None:
        self.archive = archive
        self.settings = settings
        self.scheme: CodeScheme = code_scheme(settings.codes)
        self.members = archive.group_members()
        self.event_group = archive.group_of.astype(np.int64)
        self.event_pos = np.zeros(archive.n_events, dtype=np.int64)
        for m in self.members:
            self.event_pos[m] = np.arange(len(m))
        if forests is None:
            forests = [self._build_group(g) for g in range(archive.n_groups)]
        self.forests = list(forests)
        self.event_nodes = self._map_nodes()
        # Earliest and latest feasible instant of every event: its R*-tree time extent,
        # and what negation gaps are clipped to on every complete match.
        self.event_t_min = np.array([int(self._instants(r).min()) for r in
                                     range(archive.n_events)], dtype=np.int64)
        self.event_t_max = np.array([int(self._instants(r).max()) for r in
                                     range(archive.n_events)], dtype=np.int64)
        self.attributes = archive.numeric_names
        self.rtree = self._load_rtree()

    def _build_group(self, g: int) -> GroupForest:
        m = self.members[g]
        c2 = self.settings.condition2
        check = c2.for_group(self.archive, m) if c2 is not None else None
        return build_group_forest(self.archive.group_labels[g], self.archive.event_ids[m],
                                  self.archive.t_lo[m], self.archive.t_hi[m], check,
                                  self.settings)

    def _map_nodes(self) -> list[np.ndarray]:
        out: list[np.ndarray] = [np.zeros(0, dtype=np.int64)] * self.archive.n_events
        for g, forest in enumerate(self.forests):
            real = np.flatnonzero(forest.kind == REAL)
            rows = self.members[g][forest.event[real]]
            order = np.argsort(rows, kind="stable")
            rows, real = rows[order], real[order]
            cuts = np.flatnonzero(np.diff(rows)) + 1
            for r, nodes in zip(rows[np.r_[0, cuts]] if len(rows) else [],
                                np.split(real, cuts) if len(rows) else []):
                out[int(r)] = nodes
        return out

    # ------------------------------------------------------------------ R*-tree
    def event_code_range(self, row: int) -> tuple[int, int]:
        forest = self.forests[int(self.event_group[row])]
        codes = [self.scheme.code(forest, int(n)) for n in self.event_nodes[row]]
        return min(codes), max(codes)

    def _instants(self, row: int) -> np.ndarray:
        return self.forests[int(self.event_group[row])].instant[self.event_nodes[row]]

    def event_time_range(self, row: int) -> tuple[int, int]:
        return int(self.event_t_min[row]), int(self.event_t_max[row])

    def _boxes(self) -> Iterable[tuple[int, tuple[float, ...], None]]:
        attrs = [self.archive.numeric[a] for a in self.attributes]
        for row in range(self.archive.n_events):
            g = float(self.event_group[row])
            t0, t1 = self.event_time_range(row)
            c0, c1 = self.event_code_range(row)
            box = [g, g, float(t0), float(t1), float_down(c0), float_up(c1)]
            for a in attrs:
                box += [float(a.lo[row]), float(a.hi[row])]
            yield row, tuple(box), None

    def _load_rtree(self) -> rtree_index.Index:
        props = rtree_index.Property()
        props.dimension = 3 + len(self.attributes)
        props.variant = rtree_index.RT_Star
        if self.archive.n_events == 0:
            return rtree_index.Index(properties=props, interleaved=False)
        return rtree_index.Index(self._boxes(), properties=props, interleaved=False)

    def search(self, group: int | None, time: tuple[float, float],
               codes: tuple[int, int] | None, attributes: dict[str, tuple[float, float]]
               ) -> np.ndarray:
        """Rows whose box meets the query box; unbounded where an argument is None/absent."""
        return self.search_many([(group, time, codes)], attributes)[0]

    def search_many(self, queries: Sequence[tuple[int | None, tuple[float, float],
                                                  tuple[int, int] | None]],
                    attributes: dict[str, tuple[float, float]]) -> list[np.ndarray]:
        """:meth:`search` for many ``(group, time, codes)`` boxes sharing the attribute
        ranges, in one call into the R*-tree (``rtree``'s bulk ``intersection_v``)."""
        if not queries:
            return []
        dims = 3 + len(self.attributes)
        mins = np.empty((len(queries), dims))
        maxs = np.empty((len(queries), dims))
        for i, (group, time, codes) in enumerate(queries):
            if group is None:
                mins[i, 0], maxs[i, 0] = -math.inf, math.inf
            else:
                mins[i, 0] = maxs[i, 0] = float(group)
            mins[i, 1], maxs[i, 1] = float_down(time[0]), float_up(time[1])
            if codes is None:
                mins[i, 2], maxs[i, 2] = -math.inf, math.inf
            else:
                mins[i, 2], maxs[i, 2] = float_down(codes[0]), float_up(codes[1])
        for j, a in enumerate(self.attributes):
            mins[:, 3 + j], maxs[:, 3 + j] = attributes.get(a, (-math.inf, math.inf))
        if self.archive.n_events == 0:
            return [np.zeros(0, dtype=np.int64) for _ in queries]
        ids, counts = self.rtree.intersection_v(mins, maxs)
        return np.split(ids.astype(np.int64), np.cumsum(counts)[:-1])
