"""The whole index: one forest of OI-trees per dependency group and one R*-tree of events.

Groups are indexed independently by :func:`build_group_forest`, a pure function of the
group's rows and the build settings (the Spark pipeline calls it per group in executors).
:class:`EventIndex` then gathers the forests, maps every event to its nodes, and loads one
R*-tree (``rtree``'s R*-variant, bulk-loaded) with one box per event over
``(group, time interval, code range, numeric attribute ranges)`` (Zhou et al. 4.3).
Boxes and query ranges are rounded outward to doubles (:mod:`uncertain_cep.index.forests.rounding`).

An index read back from disk passes its :class:`EventLayout` (each event's position in
its group and its box extents, computed when it was built) and its opened R*-tree, so
nothing is recomputed per event when it is opened.
"""

from __future__ import annotations

import math
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

import numpy as np
from rtree import index as rtree_index

from uncertain_cep.errors import IndexBuildError, InputError
from uncertain_cep.index.forests.cluster_forest import forest_of_clusters
from uncertain_cep.index.forests.codes import CodeScheme, code_scheme
from uncertain_cep.index.forests.domains import interval
from uncertain_cep.index.forests.forest import REAL, GroupForest
from uncertain_cep.index.forests.forest_builder import build_forest
from uncertain_cep.index.forests.isolation import hall_violation
from uncertain_cep.index.forests.oi_tree import GroupInfeasible, plan_group
from uncertain_cep.index.forests.rounding import float_down, float_up
from uncertain_cep.index.forests.tables import group_extents
from uncertain_cep.index.node_table import NodeTable, node_table
from uncertain_cep.index.statistics import EventStatistics, StatisticsBuilder, StatisticsGrid
from uncertain_cep.model.events import Archive
from uncertain_cep.model.feasibility import GroupPairCheck, PairConstraint
from uncertain_cep.model.values import plain
from uncertain_cep.progress import progress_bar

__all__ = ["BoxSearch", "BuildSettings", "EventIndex", "EventLayout", "archive_statistics",
           "build_group_forest", "event_boxes", "float_down", "float_up", "rtree_properties"]



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
    """Index one dependency group: plan its OI-tree(s) and instantiate them (Zhou et al. 4.1).

    The node budget is checked first, from an exact count of the nodes that makes none
    (:func:`~uncertain_cep.index.forests.oi_tree.count_nodes`), so an oversized group fails
    before anything is allocated. Without Condition 2, a group of several clusters of
    overlapping events is assembled from them, its lone events at array speed
    (:func:`~uncertain_cep.index.forests.cluster_forest.forest_of_clusters`, the same forest).

    Raises
    ------
    InputError
        If the group has no order instance (naming the events that cannot all fit).
    IndexBuildError
        If it needs more nodes than the budget (naming the group, a lower bound of its
        size and what to do), or if memory runs out while it is built.
    """
    try:
        with _recursion_for(len(t_lo)):
            if pair_check is None and settings.multi_tree:
                forest = forest_of_clusters(t_lo, t_hi, settings.node_budget)
                if forest is not None:
                    return forest
            plan = plan_group(t_lo, t_hi, pair_check, settings.multi_tree,
                              settings.node_budget)
            return build_forest(plan)
    except GroupInfeasible as e:
        names = ", ".join(repr(plain(event_ids[i])) for i in e.events)
        if e.window is None:
            violation = hall_violation({i: interval(int(t_lo[i]), int(t_hi[i]))
                                        for i in e.events})
            window = violation.window if violation else None
        else:
            window = e.window
        where = (f" all lie within instants [{window[0]}, {window[1]}], "
                 f"{window[1] - window[0] + 1} instants for {len(e.events)} events"
                 if window else " cannot all be placed at distinct instants"
                 + (" satisfying Condition 2" if pair_check is not None else ""))
        raise InputError(f"group {plain(label)!r} has no order instance: events {names}{where}; "
                         "widen their intervals or use a finer time unit") from None
    except IndexBuildError as e:
        raise IndexBuildError(f"{_too_large(label, len(t_lo))}: {e}; {_REMEDY}raise "
                              f"node_budget= (now {_budget(settings)})") from None
    except MemoryError as e:
        # Within the budget, yet more than this process can hold (a large budget, or
        # little memory): the same advice, never a bare MemoryError.
        raise IndexBuildError(f"{_too_large(label, len(t_lo))}: memory ran out while building "
                              f"its OI-trees (node_budget= is {_budget(settings)}); {_REMEDY}"
                              "give the build more memory") from e


# What to do about a group too large to index (the CLI spells keywords as its flags).
_REMEDY = ("use a coarser time unit (time_unit= with a larger unit) so that intervals span "
           "fewer instants, split the group into smaller dependency groups, or ")


def _too_large(label: object, n_events: int) -> str:
    return f"group {plain(label)!r} ({n_events} events) is too large to index"


def _budget(settings: BuildSettings) -> str:
    return "unset" if settings.node_budget is None else f"{settings.node_budget:,}"


@contextmanager
def _recursion_for(n_events: int) -> Iterator[None]:
    """Room for planning and instantiating a group, restored afterwards: both recurse a
    few frames per event along a root-to-leaf path, and pure-Python recursion does not use
    the C stack on 3.11+, so a deeper limit is safe while they run."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(max(before, 1_000 + 8 * n_events))
    try:
        yield
    finally:
        sys.setrecursionlimit(before)



class BoxSearch(Protocol):
    """What answers an index's candidate searches besides its R*-tree (a time slice's
    scan of its event boxes, :class:`uncertain_cep.index.store.slice_reads.BoxScan`): rtree's
    bulk ``intersection_v`` and a name for EXPLAIN."""

    access: str

    def intersection_v(self, mins: np.ndarray, maxs: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]: ...


class EventIndex:
    """Forests of every group, each event's nodes, and the R*-tree over events.

    Attributes
    ----------
    forests
        One :class:`GroupForest` per group code.
    members
        Per group, the archive row of each event position (``-1`` where the event is not
        in this archive: a time slice of a larger index holds only some of them).
    event_group, event_pos
        Per archive row: group code and position in the group.
    event_nodes
        Per archive row: its real nodes (ids local to the group's forest).
    event_t_min, event_t_max
        Per archive row: earliest and latest feasible instant, its R*-tree time extent and
        what negation gaps are clipped to.
    """

    def __init__(self, archive: Archive, settings: BuildSettings,
                 forests: Sequence[GroupForest] | None = None,
                 layout: EventLayout | None = None,
                 rtree: rtree_index.Index | BoxSearch | None = None,
                 statistics: EventStatistics | None = None, *,
                 node_table: NodeTable | None = None,
                 load_forests: Callable[[], Sequence[GroupForest]] | None = None,
                 load_node_table: Callable[[], NodeTable] | None = None,
                 built_with_condition2: bool | None = None) -> None:
        self.archive = archive
        self.settings = settings
        # Whether the trees were built with Condition 2 (an index opened without the
        # user's predicate it was built with has no condition2 in its settings).
        self.built_with_condition2 = (settings.condition2 is not None
                                      if built_with_condition2 is None
                                      else built_with_condition2)
        self.scheme: CodeScheme = code_scheme(settings.codes)
        self.event_group = np.asarray(archive.group_of, dtype=np.int64)
        members = None
        if forests is None and load_forests is None:
            members = archive.group_members()
            # A bar on a terminal or in a notebook, only when the build takes a while.
            groups = progress_bar("building OI-trees", " groups", iterable=members)
            forests = [self._build_group(g, m) for g, m in enumerate(groups)]
        if forests is not None:
            self.__dict__["forests"] = list(forests)
        elif layout is None or (node_table is None and load_node_table is None):
            raise ValueError("an index whose forests load lazily needs its layout and "
                             "node table")
        self._load_forests = load_forests
        self._load_node_table = load_node_table
        if node_table is not None:
            self.__dict__["node_table"] = node_table
        if layout is None:
            layout = EventLayout.of(archive, self.forests, settings.codes, members)
        self.layout = layout
        self.event_pos = layout.positions
        self.event_t_min = layout.t_min
        self.event_t_max = layout.t_max
        self.attributes = archive.numeric_names
        self.rtree = rtree if rtree is not None else self._load_rtree()
        # libspatialindex is not thread-safe even for reads (its queries share buffers and a
        # memory pool): searches from several threads of one process take turns.
        self._rtree_lock = threading.Lock()
        self._statistics = statistics
        # Query boxes are appended here when a list is set (node-read counting replays them).
        self.search_log: list[tuple[np.ndarray, np.ndarray]] | None = None

    @cached_property
    def forests(self) -> list[GroupForest]:
        """One forest per group code: what the baselines and the inspection API walk (an
        index opened from disk reads them on first use; queries read the node table)."""
        assert self._load_forests is not None
        return list(self._load_forests())

    @cached_property
    def members(self) -> list[np.ndarray]:
        return self._members()

    @cached_property
    def event_nodes(self) -> list[np.ndarray]:
        return self._map_nodes()

    @cached_property
    def node_table(self) -> NodeTable:
        """Every node in flat arrays (stored with an index on disk and mapped on first
        use, else built on first use from the forests): what the batch engine reads."""
        if self._load_node_table is not None:
            return self._load_node_table()
        return node_table(self.forests, self.members, self.archive.n_events)

    @property
    def n_trees(self) -> int:
        if "forests" in self.__dict__:
            return sum(f.n_trees for f in self.forests)
        return int(self.node_table.tree_start[-1])

    @property
    def n_nodes(self) -> int:
        if "forests" in self.__dict__:
            return sum(f.n_nodes for f in self.forests)
        return self.node_table.n_nodes

    @property
    def statistics(self) -> EventStatistics:
        """The selectivity statistics (stored with an index on disk, else computed once)."""
        if self._statistics is None:
            self._statistics = archive_statistics(self.archive, self.layout)
        return self._statistics

    def _build_group(self, g: int, m: np.ndarray) -> GroupForest:
        c2 = self.settings.condition2
        check = c2.for_group(self.archive, m) if c2 is not None else None
        return build_group_forest(self.archive.group_labels[g], self.archive.event_ids[m],
                                  self.archive.t_lo[m], self.archive.t_hi[m], check,
                                  self.settings)

    def _members(self) -> list[np.ndarray]:
        out = []
        for forest in self.forests:
            size = int(forest.event.max()) + 1 if forest.n_nodes else 0
            out.append(np.full(size, -1, dtype=np.int64))
        order = np.argsort(self.event_group, kind="stable")
        bounds = np.searchsorted(self.event_group[order], np.arange(len(self.forests) + 1))
        for g in range(len(self.forests)):
            mine = order[bounds[g]:bounds[g + 1]]
            out[g][self.event_pos[mine]] = mine
        return out

    def _map_nodes(self) -> list[np.ndarray]:
        out: list[np.ndarray] = [np.zeros(0, dtype=np.int64)] * self.archive.n_events
        for g, forest in enumerate(self.forests):
            real = np.flatnonzero(forest.kind == REAL)
            rows = self.members[g][forest.event[real]]
            present = rows >= 0
            rows, real = rows[present], real[present]
            order = np.argsort(rows, kind="stable")
            rows, real = rows[order], real[order]
            if not len(rows):
                continue
            cuts = np.flatnonzero(np.diff(rows)) + 1
            for r, nodes in zip(rows[np.r_[0, cuts]].tolist(), np.split(real, cuts)):
                out[r] = nodes
        return out

    # ------------------------------------------------------------------ R*-tree
    def event_code_range(self, row: int) -> tuple[int, int]:
        forest = self.forests[int(self.event_group[row])]
        codes = [self.scheme.code(forest, int(n)) for n in self.event_nodes[row]]
        return min(codes), max(codes)

    def event_time_range(self, row: int) -> tuple[int, int]:
        return int(self.event_t_min[row]), int(self.event_t_max[row])

    def boxes(self, rows: slice | np.ndarray = slice(None)) -> tuple[np.ndarray, np.ndarray]:
        """R*-tree box corners of the given rows (all by default)."""
        attrs = [(self.archive.numeric[a].lo[rows], self.archive.numeric[a].hi[rows])
                 for a in self.attributes]
        lay = self.layout
        return event_boxes(self.event_group[rows], lay.t_min[rows], lay.t_max[rows],
                           lay.code_lo[rows], lay.code_hi[rows], attrs)

    def _load_rtree(self) -> rtree_index.Index:
        props = rtree_properties(len(self.attributes))
        if self.archive.n_events == 0:
            return rtree_index.Index(properties=props, interleaved=False)
        mins, maxs = self.boxes()
        ids = np.arange(self.archive.n_events, dtype=np.int64)
        return rtree_index.Index((ids, mins, maxs), properties=props, interleaved=False)

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
        if self.search_log is not None:
            self.search_log.append((mins, maxs))
        with self._rtree_lock:
            ids, counts = self.rtree.intersection_v(mins, maxs)
        return np.split(ids.astype(np.int64), np.cumsum(counts)[:-1])


def archive_statistics(archive: Archive, layout: EventLayout) -> EventStatistics:
    """The selectivity statistics of an archive indexed in this process."""
    numeric = {a: (archive.numeric[a].lo, archive.numeric[a].hi) for a in archive.numeric_names}
    n = archive.n_events
    grid = StatisticsGrid.for_domain(
        (int(layout.t_min.min()), int(layout.t_max.max())) if n else None,
        {a: (float(lo.min()), float(hi.max())) if n else (0.0, 0.0)
         for a, (lo, hi) in numeric.items()})
    builder = StatisticsBuilder(grid, archive.categorical_names)
    builder.add(layout.t_min, layout.t_max, numeric, archive.categorical)
    return builder.finish()
