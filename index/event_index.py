"""The whole index in memory: one forest of OI-trees per dependency group and one R*-tree of
events.

:class:`EventIndex` gathers the groups' forests (each indexed independently by
:func:`~uncertain_cep.index.group_build.build_group_forest`), maps every event to its
nodes, and loads one R*-tree (``rtree``'s R*-variant, bulk-loaded) with one box per event
over ``(group, time interval, code range, numeric attribute ranges)`` (Zhou et al. 4.3;
the boxes: :mod:`uncertain_cep.index.rtree_boxes`). Boxes and query ranges are rounded
outward to doubles (:mod:`uncertain_cep.index.forests.rounding`).

An index read back from disk passes its
:class:`~uncertain_cep.index.rtree_boxes.EventLayout` (each event's position in its group
and its box extents, computed when it was built) and its opened R*-tree, so nothing is
recomputed per event when it is opened.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from functools import cached_property

import numpy as np
from rtree import index as rtree_index

from uncertain_cep.index.column_scan import ColumnScan
from uncertain_cep.index.forests.codes import CodeScheme, code_scheme
from uncertain_cep.index.forests.forest import REAL, GroupForest
from uncertain_cep.index.forests.rounding import float_down, float_up
from uncertain_cep.index.forests.weights import group_weights
from uncertain_cep.index.group_build import BuildSettings, build_group_forest
from uncertain_cep.index.node_table import NodeTable, node_table
from uncertain_cep.index.rtree_boxes import BoxSearch, EventLayout, event_boxes, rtree_properties
from uncertain_cep.index.statistics import EventStatistics, StatisticsBuilder, StatisticsGrid
from uncertain_cep.model.events import Archive
from uncertain_cep.progress import progress_bar

__all__ = ["SCAN_SPAN_FRACTION", "EventIndex", "archive_statistics", "build_forests"]

# A search box bounding neither group nor code range whose time span covers at least this
# fraction of the index's time extent is answered by a column scan, not the R*-tree
# (index/column_scan.py; measured in docs/benchmarks.md, "Item searches by column scan").
SCAN_SPAN_FRACTION = 0.125


def build_forests(archive: Archive, settings: BuildSettings,
                  members: list[np.ndarray] | None = None) -> list[GroupForest]:
    """Every group's forest of ``archive`` (its events in canonical order, ``members``:
    :meth:`~uncertain_cep.model.events.Archive.group_members`, so the forests of an archive
    read back from an index are those it was built with)."""
    members = archive.group_members() if members is None else members
    # A bar on a terminal or in a notebook, only when the build takes a while.
    groups = progress_bar("building OI-trees", " groups", iterable=members)
    return [_build_group(archive, settings, g, m) for g, m in enumerate(groups)]


def _build_group(archive: Archive, settings: BuildSettings, g: int, m: np.ndarray
                 ) -> GroupForest:
    c2 = settings.condition2
    check = c2.for_group(archive, m) if c2 is not None else None
    return build_group_forest(archive.group_labels[g], archive.event_ids[m],
                              archive.t_lo[m], archive.t_hi[m], check, settings,
                              group_weights(archive.instant_weights, m, archive.t_lo[m]))


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
                 load_groups_table: Callable[[np.ndarray], NodeTable] | None = None,
                 built_with_condition2: bool | None = None,
                 time_extent: tuple[int, int] | None = None) -> None:
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
            forests = build_forests(archive, settings, members)
        if forests is not None:
            self.__dict__["forests"] = list(forests)
        elif layout is None or (node_table is None and load_node_table is None):
            raise ValueError("an index whose forests load lazily needs its layout and "
                             "node table")
        self._load_forests = load_forests
        self._load_node_table = load_node_table
        self._load_groups_table = load_groups_table
        # The last table of some groups asked for, and those groups (a query asks twice
        # when it first looks for rows of confidence 1 alone).
        self._groups_table: tuple[bytes, NodeTable] | None = None
        self._groups_table_lock = threading.Lock()
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
        # Known from a stored index's manifest: else read from the instants on first use
        # (at 100M events 1.6 GB of pages each process would read).
        if time_extent is not None:
            self.__dict__["_time_extent"] = (float(time_extent[0]), float(time_extent[1]))
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
    def tables_by_groups(self) -> bool:
        """Whether :meth:`node_table_of` reads less than :attr:`node_table`: the node
        table is expanded from the stored files when first needed (a shard of an index
        whose working copies the cache cannot keep) and has not been yet."""
        return self._load_groups_table is not None and "node_table" not in self.__dict__

    def node_table_of(self, groups: np.ndarray) -> NodeTable:
        """A node table holding the nodes and trees of the groups ``groups`` (ascending
        group codes) as :attr:`node_table` does, every other group none (their events
        no node): what a query whose candidates meet those groups alone reads
        (:mod:`~uncertain_cep.query.engine.reachable_groups`). The whole table where it
        is at hand or read whole anyway."""
        if not self.tables_by_groups:
            return self.node_table
        assert self._load_groups_table is not None
        groups = np.ascontiguousarray(groups, dtype=np.int64)
        key = groups.tobytes()
        with self._groups_table_lock:
            if self._groups_table is None or self._groups_table[0] != key:
                # Let the last one go first: two are never held at once.
                self._groups_table = None
                self._groups_table = (key, self._load_groups_table(groups))
            return self._groups_table[1]

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
        if self.search_log is None and all(self._scanned(lo, hi) for lo, hi in zip(mins, maxs)):
            return [self.column_scan.rows(lo, hi) for lo, hi in zip(mins, maxs)]
        if self.search_log is not None:
            self.search_log.append((mins, maxs))
        with self._rtree_lock:
            ids, counts = self.rtree.intersection_v(mins, maxs)
        return np.split(ids.astype(np.int64), np.cumsum(counts)[:-1])

    def search_access(self, time: tuple[float, float]) -> str:
        """How a box over every group and code in the span ``time`` is searched (what
        EXPLAIN says of an item's search)."""
        box = np.array([-math.inf, float_down(time[0]), -math.inf]), \
            np.array([math.inf, float_up(time[1]), math.inf])
        if self.archive.n_events and self.search_log is None and self._scanned(*box):
            return f"column scan of the {self.archive.n_events:,} events' boxes"
        return str(getattr(self.rtree, "access", "R*-tree search"))

    @cached_property
    def column_scan(self) -> ColumnScan:
        """The events' boxes as columns (:mod:`~uncertain_cep.index.column_scan`)."""
        lay, numeric = self.layout, self.archive.numeric
        return ColumnScan(self.event_group, lay.t_min, lay.t_max, lay.code_lo, lay.code_hi,
                          [(numeric[a].lo, numeric[a].hi) for a in self.attributes])

    @cached_property
    def _time_extent(self) -> tuple[float, float]:
        return float(np.min(self.layout.t_min)), float(np.max(self.layout.t_max))

    def _scanned(self, low: np.ndarray, high: np.ndarray) -> bool:
        """Whether the box from ``low`` to ``high`` is answered by a column scan: it
        bounds neither group nor code range (axes 0 and 2) and its time span covers at
        least :data:`SCAN_SPAN_FRACTION` of the index's time extent. Such a box the
        R*-tree prunes by time and attributes alone, which its bulk load spreads through
        every node; a narrower one (a negation's gap) it finds in a few nodes."""
        if not (low[0] == -math.inf and high[0] == math.inf
                and low[2] == -math.inf and high[2] == math.inf):
            return False
        first, last = self._time_extent
        covered = min(high[1], last) - max(low[1], first)
        return bool(covered >= SCAN_SPAN_FRACTION * (last - first + 1))


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
