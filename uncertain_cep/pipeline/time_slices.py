"""Evaluating a query over an on-disk index one time slice at a time.

An index too large for one process is queried in slices of time. A tuple belongs to the
slice holding the earliest feasible instant of its first event (its *anchor*). Every
event a tuple anchored in ``[lo, hi)`` can involve (its own events, and any event that
can stand in a negation gap) happens after the anchor and at most ``L`` instants after
its first event, so the slice needs exactly the events with ``t_max >= lo`` and
``t_min <= max(t_max of its anchors) + L``: its own events plus a halo of ``L``
(SEMANTICS A4; the time statistics of the index give the latest ``t_max`` per bucket).

Of each group it loads the OI-trees whose interval meets the interval spanned by those
events. A parent tree's interval contains its child trees', so that set is closed under
parent trees, which is all the probability computations climb (:mod:`uncertain_cep.query.chains`);
trees outside it keep only their tree-level rows
(:func:`uncertain_cep.index.tables.forest_from_frames`).
Answers are exactly those of the whole index; this module has no Spark in it, so the
equality is tested in-process as well as through the Spark engine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.dataset as pads

from uncertain_cep.errors import PlanningError
from uncertain_cep.index.event_index import EventIndex
from uncertain_cep.index.storage import (
    archive_from_events,
    forests_from_tables,
    read_statistics,
    settings_from_json,
    table_files,
)
from uncertain_cep.query.evaluation import QueryContext
from uncertain_cep.query.language import parse_query
from uncertain_cep.query.stats import QueryStats
from uncertain_cep.query.strategies import get_strategy

__all__ = ["SLICE_STRATEGIES", "TimeSlice", "evaluate_slice", "plan_slices"]

# Strategies that only look at the events and trees a slice holds. Tree traversal walks
# whole groups and possible worlds enumerates whole groups, so they need the local engine.
SLICE_STRATEGIES = ("selectivity", "sequential")


@dataclass(frozen=True)
class TimeSlice:
    """Anchors in ``[lo, hi)``; events with ``t_max >= lo`` and ``t_min <= need_hi``."""

    lo: int
    hi: int
    need_hi: float


def plan_slices(root: Path, manifest: dict[str, Any], window: float,
                n_slices: int) -> list[TimeSlice]:
    """Cut the time domain into about ``n_slices`` slices of equal event counts."""
    stats = pads.dataset(str(root / "stats" / "time.parquet")).to_table().to_pandas()
    stats = stats[stats["events"] > 0]
    if stats.empty:
        return []
    width = int(manifest["time"]["bucket_width"])
    total = int(stats["events"].sum())
    per = max(1, math.ceil(total / max(1, n_slices)))
    slices = []
    start_lo, acc, latest = None, 0, -math.inf
    for t_lo, count, last in zip(stats["t_lo"], stats["events"], stats["latest"]):
        if start_lo is None:
            start_lo = int(t_lo)
        acc += int(count)
        latest = max(latest, int(last))
        if acc >= per:
            slices.append(TimeSlice(start_lo, int(t_lo) + width, latest + window))
            start_lo, acc, latest = None, 0, -math.inf
    if start_lo is not None:
        slices.append(TimeSlice(start_lo, int(stats["t_lo"].iloc[-1]) + width, latest + window))
    return slices


def evaluate_slice(root: str | Path, manifest: dict[str, Any], piece: TimeSlice,
                   query: str, strategy: str = "selectivity"
                   ) -> tuple[list[tuple[tuple[Any, ...], float, int, int]], QueryStats]:
    """Answer rows ``(event ids, confidence, t_first, t_last)`` of the tuples anchored in
    the slice, and the evaluation counters."""
    if strategy not in SLICE_STRATEGIES:
        raise PlanningError(f"strategy {strategy!r} needs the whole index; with the Spark "
                            f"engine choose one of: {', '.join(map(repr, SLICE_STRATEGIES))}")
    root = Path(root)
    group_by = manifest["group_by"]
    events = _scan(root, "events", (pads.field("_uc_t_max") >= piece.lo)
                   & (pads.field("_uc_t_min") <= _bound(piece.need_hi)))
    if events.empty:
        return [], QueryStats(strategy=strategy)
    settings = settings_from_json(manifest["settings"], None)
    archive, layout = archive_from_events(events, group_by)
    labels = list(archive.group_labels)
    span = (int(layout.t_min.min()), int(layout.t_max.max()))
    trees = _scan(root, "trees", pads.field("group").isin(labels))
    nodes = _scan(root, "nodes", pads.field("group").isin(labels)
                  & (pads.field("tree_hi") >= span[0]) & (pads.field("tree_lo") <= span[1]))
    forests = forests_from_tables(trees, nodes, archive.group_labels, settings.codes == "paper")
    index = EventIndex(archive, settings, forests, layout=layout,
                       statistics=read_statistics(root, manifest))
    ctx = QueryContext(index, parse_query(query))
    ctx.stats.strategy = strategy
    ctx.first_rows = (layout.t_min >= piece.lo) & (layout.t_min < piece.hi)
    matches = get_strategy(strategy)(ctx)
    ids = archive.event_ids
    rows = [(tuple(_plain(ids[r]) for r in m.events), m.confidence, m.t_first, m.t_last)
            for m in matches if piece.lo <= layout.t_min[m.events[0]] < piece.hi]
    return rows, ctx.stats


def _bound(x: float) -> int:
    return int(min(x, np.iinfo(np.int64).max))


def _scan(root: Path, table: str, condition: Any) -> pd.DataFrame:
    files = [str(root / f) for f in table_files(root, table)]
    return pads.dataset(files, format="parquet").to_table(filter=condition).to_pandas()


def _plain(x: Any) -> Any:
    return x.item() if isinstance(x, np.generic) else x

