"""A summary of one index: its groups, events, OI-trees, codes, time and attributes.

:class:`IndexSummary` is what :meth:`uncertain_cep.UncertainIndex.describe` returns. Every
number is read from what the index already holds (the archive, each group's
:class:`~uncertain_cep.index.forests.forest.GroupForest`, the per-event layout), so describing
an index built in this process and the same index reopened from disk gives equal summaries;
nothing is rebuilt. The OI-trees are Zhou et al.'s (section 4.1): per dependency group, a
prefix tree of its order instances (4.1.1), or with the multi-tree index a top tree whose
virtual nodes stand for the trees of isolated subsequences (4.1.2).

>>> import pandas as pd
>>> import uncertain_cep as uc
>>> idx = uc.build_index(pd.DataFrame({"event_id": [1, 2, 3], "group": ["p", "p", "q"],
...     "t_lo": [1, 1, 4], "t_hi": [2, 2, 4], "x_lo": [0.0, 1.0, 2.0],
...     "x_hi": [1.0, 3.0, 2.0]}))
>>> s = idx.describe()
>>> s.n_groups, s.n_events, s.n_trees, s.n_nodes, s.code_range, s.time_range
(2, 3, 2, 7, (0, 4), (1, 4))
>>> print(s)  # doctest: +NORMALIZE_WHITESPACE
IndexSummary: 3 events in 2 groups (group)
  OI-trees  2 trees, 7 nodes (2 to 5 per group, median 3.5)
  largest   tree 0 of group 'p', 5 nodes
  codes     compact, 0 .. 4 (3 bits)
  time      1 .. 4 (feasible instants)
  numeric   x [0, 3]
  instants  equally likely within each interval
  build     multi-tree, no Condition 2, node budget 2000000
  source    built in this process (not saved)
>>> s.per_group
  group  events  trees  nodes  order_instances
0     p       2      1      5                2
1     q       1      1      2                1
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from uncertain_cep.model.feasibility import MaxSpeed
from uncertain_cep.model.values import plain
from uncertain_cep.optional import require_matplotlib

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from uncertain_cep.index.event_index import EventIndex
    from uncertain_cep.index.forests.forest import GroupForest

__all__ = ["IndexSummary"]

PER_GROUP_COLUMNS = ["group", "events", "trees", "nodes", "order_instances"]
# Node counts spanning more than this factor are plotted on a log-scaled x axis.
_LOG_SPREAD = 100.0


@dataclass(frozen=True)
class IndexSummary:
    """What an index holds, read from the index without rebuilding anything.

    Build one with :meth:`uncertain_cep.UncertainIndex.describe`. Print it for a compact
    text block; in Jupyter it shows as a small table; :meth:`plot` draws the distribution
    of OI-tree nodes per group; :attr:`per_group` has one row per group.

    Attributes
    ----------
    group_by
        The dependency-group column.
    n_groups, n_events
        Dependency groups and events (archive rows).
    n_trees, n_nodes
        OI-trees and their nodes over every group (Zhou et al. 4.1). Nodes are the root,
        the real nodes (an event at an instant) and the virtual nodes of every tree.
    largest_tree
        ``(group key, tree id within the group, nodes)`` of the tree with the most nodes
        (a tree's own nodes, its virtual nodes included and its child trees' nodes not;
        the first one in group order on ties), or ``None`` for an empty index.
    code_scheme
        ``"compact"`` or ``"paper"`` (Zhou et al. 4.2; see
        :mod:`uncertain_cep.index.forests.codes`).
    code_range
        Smallest and largest node code, or ``None`` for an empty index. Codes are local
        to a group (every group's top root has code 0); this is the union over groups.
        Paper codes grow like fanout**depth: see :attr:`code_bits`.
    time_range
        Earliest and latest feasible instant of any event (the R*-tree's time extent),
        in the index's instants (time columns discretised when it was built), or ``None``.
    numeric
        ``(name, smallest low, largest high)`` per numeric attribute (``None`` bounds
        when the index has no events).
    categorical
        ``(name, number of distinct values)`` per categorical attribute.
    multi_tree, condition2, node_budget
        Build parameters: multi-tree (4.1.2) or single tree (4.1.1); Condition 2 as text
        (``None`` if none); the largest number of nodes a group was allowed.
    group_keys, group_events, group_trees, group_nodes, group_order_instances
        Per group, in group-code order: key, events, OI-trees, nodes and order instances
        (exact ints: they can exceed 64 bits). :attr:`per_group` is these as a DataFrame.
    weighted_events
        Events whose instants carry weights (SEMANTICS A6; 0: every instant of an
        interval equally likely).
    provenance
        Where the index came from; not compared (an index built here and the same one
        reopened from disk have equal summaries). For an index opened from disk: its
        ``path``, the manifest's ``format_version``, ``time_unit`` (and ``time_zone``
        when the times were datetimes: a zone, or ``"naive"``), ``input_fingerprint``,
        and ``build`` and ``rejected`` where the build recorded them (the Spark job
        does). The manifest records no build time, so none is shown. Empty for an index
        built in this process.
    """

    group_by: str
    n_groups: int
    n_events: int
    n_trees: int
    n_nodes: int
    largest_tree: tuple[Any, int, int] | None
    code_scheme: str
    code_range: tuple[int, int] | None
    time_range: tuple[int, int] | None
    numeric: tuple[tuple[str, float | None, float | None], ...]
    categorical: tuple[tuple[str, int], ...]
    multi_tree: bool
    condition2: str | None
    node_budget: int | None
    group_keys: tuple[Any, ...] = field(repr=False)
    group_events: tuple[int, ...] = field(repr=False)
    group_trees: tuple[int, ...] = field(repr=False)
    group_nodes: tuple[int, ...] = field(repr=False)
    group_order_instances: tuple[int, ...] = field(repr=False)
    weighted_events: int = 0
    provenance: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, index: EventIndex, provenance: Mapping[str, Any] | None = None
           ) -> IndexSummary:
        """Summarise an :class:`~uncertain_cep.index.event_index.EventIndex` (see the class
        docstring).

        Linear in the number of events and nodes: per group it counts nodes per tree and
        reads the smallest and largest code; the paper scheme's codes are Python ints, so
        an index with that scheme takes longer.
        """
        archive = index.archive
        forests = index.forests
        n_groups = archive.n_groups
        group_events = np.bincount(archive.group_of.astype(np.int64), minlength=n_groups)
        largest: tuple[Any, int, int] | None = None
        code_lo: int | None = None
        code_hi: int | None = None
        for g, forest in enumerate(forests):
            if forest.n_nodes == 0:
                continue
            sizes = np.bincount(forest.tree, minlength=forest.n_trees)
            t = int(np.argmax(sizes))
            if largest is None or int(sizes[t]) > largest[2]:
                largest = (plain(archive.group_labels[g]), t, int(sizes[t]))
            lo, hi = _code_extremes(forest, index.settings.codes)
            code_lo = lo if code_lo is None else min(code_lo, lo)
            code_hi = hi if code_hi is None else max(code_hi, hi)
        lay = index.layout
        n = archive.n_events
        numeric: list[tuple[str, float | None, float | None]] = []
        for a in archive.numeric_names:
            attr = archive.numeric[a]
            numeric.append((a, float(attr.lo.min()), float(attr.hi.max())) if n
                           else (a, None, None))
        categorical = tuple((a, int(pd.unique(np.asarray(archive.categorical[a])).size))
                            for a in archive.categorical_names)
        settings = index.settings
        return cls(
            group_by=archive.group_by, n_groups=n_groups, n_events=n,
            n_trees=sum(f.n_trees for f in forests), n_nodes=sum(f.n_nodes for f in forests),
            largest_tree=largest, code_scheme=settings.codes,
            code_range=None if code_lo is None or code_hi is None else (code_lo, code_hi),
            time_range=(int(lay.t_min.min()), int(lay.t_max.max())) if n else None,
            numeric=tuple(numeric), categorical=categorical, multi_tree=settings.multi_tree,
            condition2=_describe_condition2(settings.condition2),
            node_budget=settings.node_budget,
            group_keys=tuple(plain(k) for k in archive.group_labels),
            group_events=tuple(int(c) for c in group_events),
            group_trees=tuple(f.n_trees for f in forests),
            group_nodes=tuple(f.n_nodes for f in forests),
            group_order_instances=tuple(int(f.n_order_instances) for f in forests),
            weighted_events=(0 if archive.instant_weights is None
                             else int(archive.instant_weights.weighted.sum())),
            provenance=dict(provenance or {}))

    # ------------------------------------------------------------ tables
    @property
    def per_group(self) -> pd.DataFrame:
        """One row per group: ``group`` (its key), ``events``, ``trees``, ``nodes`` (OI-tree
        nodes) and ``order_instances`` (object dtype where a count exceeds int64)."""
        return pd.DataFrame({"group": list(self.group_keys),
                             "events": np.asarray(self.group_events, dtype=np.int64),
                             "trees": np.asarray(self.group_trees, dtype=np.int64),
                             "nodes": np.asarray(self.group_nodes, dtype=np.int64),
                             "order_instances": _int_column(self.group_order_instances)},
                            columns=PER_GROUP_COLUMNS)

    @property
    def code_bits(self) -> int:
        """Bits of the largest code (beyond 53 a double cannot hold every code exactly)."""
        return max(abs(c) for c in self.code_range).bit_length() if self.code_range else 0

    def rows(self) -> list[tuple[str, str]]:
        """The summary as ``(label, text)`` lines: what ``str`` and the HTML table show."""
        out = []
        if self.group_nodes:
            nodes = np.asarray(self.group_nodes)
            spread = (f" ({int(nodes.min())} to {int(nodes.max())} per group, "
                      f"median {_num(float(np.median(nodes)))})")
        else:
            spread = ""
        out.append(("OI-trees", f"{self.n_trees} trees, {self.n_nodes} nodes{spread}"))
        if self.largest_tree is not None:
            key, tree, size = self.largest_tree
            out.append(("largest", f"tree {tree} of group {key!r}, {size} nodes"))
        codes = self.code_scheme
        if self.code_range is not None:
            codes += (f", {self.code_range[0]} .. {self.code_range[1]} "
                      f"({self.code_bits} bits)")
        out.append(("codes", codes))
        if self.time_range is not None:
            out.append(("time", f"{self.time_range[0]} .. {self.time_range[1]} "
                                "(feasible instants)"))
        if self.numeric:
            out.append(("numeric", ", ".join(
                f"{a} [{_num(lo)}, {_num(hi)}]" if lo is not None and hi is not None
                else f"{a} (no values)" for a, lo, hi in self.numeric)))
        if self.categorical:
            out.append(("categorical", ", ".join(f"{a} ({k} values)"
                                                 for a, k in self.categorical)))
        out.append(("instants", "equally likely within each interval" if not self.weighted_events
                    else f"weighted (SEMANTICS A6) for {self.weighted_events} of "
                         f"{self.n_events} events; the rest equally likely"))
        budget = ("no node budget" if self.node_budget is None
                  else f"node budget {self.node_budget}")
        out.append(("build", f"{'multi-tree' if self.multi_tree else 'single tree'}, "
                             f"{self.condition2 or 'no Condition 2'}, {budget}"))
        out.extend(self._provenance_rows())
        return out

    def _provenance_rows(self) -> list[tuple[str, str]]:
        p = self.provenance
        if not p:
            return [("source", "built in this process (not saved)")]
        out = [("source", f"{p.get('path')} (format version {p.get('format_version')})")]
        if p.get("shards"):
            out.append(("shards", f"{p['shards']} (groups are counted once per shard "
                                  "holding their events)"))
        if p.get("time_unit") is not None:
            out.append(("time unit", str(p["time_unit"])))
        if p.get("time_zone") is not None:
            out.append(("time zone", f"datetimes, {p['time_zone']}"))
        build = p.get("build")
        if isinstance(build, Mapping):
            out.append(("built by", ", ".join(f"{k} {v}" for k, v in build.items()
                                              if k in ("engine", "master", "tasks"))))
        rejected = p.get("rejected")
        if isinstance(rejected, Mapping):
            out.append(("rejected", f"{rejected.get('rows', 0)} rows, "
                                    f"{rejected.get('groups', 0)} groups"))
        return out

    def headline(self) -> str:
        return (f"IndexSummary: {self.n_events} events in {self.n_groups} groups "
                f"({self.group_by})")

    def __str__(self) -> str:
        rows = self.rows()
        width = max(len(label) for label, _ in rows)
        return "\n".join([self.headline()]
                         + [f"  {label:<{width}}  {text}" for label, text in rows])

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        # IPython's plain-text display: the readable summary, not the dataclass repr.
        printer.text(str(self))

    def _repr_html_(self) -> str:
        cells = "".join(f"<tr><th style=\"text-align:left\">{html.escape(label)}</th>"
                        f"<td style=\"text-align:left\">{html.escape(text)}</td></tr>"
                        for label, text in self.rows())
        return (f"<div><p>{html.escape(self.headline())}</p>"
                f"<table>{cells}</table></div>")

    # ------------------------------------------------------------ plot
    def plot(self, ax: Axes | None = None) -> Axes:
        """Histogram of OI-tree nodes per group (how evenly the index's size is spread).

        The x axis is log-scaled, with logarithmic bins, when the largest group has more
        than 100 times the nodes of the smallest. Needs matplotlib (imported here, not
        with the package); draws on ``ax`` or on a new figure's axes, never calls
        ``show()``.

        Returns
        -------
        matplotlib.axes.Axes
        """
        require_matplotlib("describe().plot()")
        from matplotlib.ticker import MaxNLocator

        if ax is None:
            import matplotlib.pyplot as plt

            _, ax = plt.subplots(figsize=(6, 3.5), layout="constrained")
        nodes = np.asarray(self.group_nodes, dtype=np.float64)
        if len(nodes) == 0:
            ax.hist([], bins=1)
        else:
            lo, hi = float(nodes.min()), float(nodes.max())
            n_bins = int(min(30, max(1, np.ceil(np.sqrt(len(nodes))))))
            if lo > 0 and hi / lo > _LOG_SPREAD:
                ax.hist(nodes, bins=np.geomspace(lo, hi * (1 + 1e-9), n_bins + 1).tolist(),
                        edgecolor="white")
                ax.set_xscale("log")
            else:
                ax.hist(nodes, bins=n_bins if hi > lo else 1, edgecolor="white")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("OI-tree nodes per group")
        ax.set_ylabel("groups")
        ax.set_title(f"{self.n_groups} groups, {self.n_nodes} nodes")
        return ax


def _code_extremes(forest: GroupForest, codes: str) -> tuple[int, int]:
    if codes == "paper":
        return min(forest.paper_code), max(forest.paper_code)
    return int(forest.compact_code.min()), int(forest.compact_code.max())


def _describe_condition2(c2: object) -> str | None:
    if c2 is None:
        return None
    if isinstance(c2, MaxSpeed):
        return f"Condition 2: max speed {_num(float(c2.v_max))} over ({', '.join(c2.coordinates)})"
    return "Condition 2: a user pair predicate"


def _int_column(values: tuple[int, ...]) -> np.ndarray:
    big = np.iinfo(np.int64).max
    if all(abs(v) <= big for v in values):
        return np.asarray(values, dtype=np.int64)
    return np.asarray(values, dtype=object)


def _num(x: float) -> str:
    return f"{x:.6g}"
