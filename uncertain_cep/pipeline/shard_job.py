"""The Spark build's shards: where to cut (one aggregation before the group tasks) and
each shard finished by a task of its own.

Cutting needs instants, which only the in-process reader computes
(:func:`~uncertain_cep.model.event_times.time_columns`): the driver asks Spark for the
row count and approximate quantiles of the input's earliest times (``t_lo``, or ``t``)
in one aggregation, and turns a few of those values into instants with that very
function, as the tasks turn their rows. Any cut instants give an exact index
(:mod:`uncertain_cep.index.shards`); the quantiles only make the shards about equal.

The group tasks write each group's pieces into the shards' directories; then one task
per shard finishes it (node and event columns, R*-tree, statistics over the build's
shared extents, time order, checksums, its manifest) and returns the manifest. The
driver never reads an event, a node or a tree: it sees counts, a few quantiles and the
shards' manifests.
"""

from __future__ import annotations

import base64
import json
import math
import pickle
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from uncertain_cep.errors import UncertainCepError
from uncertain_cep.index.store.manifest import Manifest
from uncertain_cep.index.store.manifest_records import ShardRecord
from uncertain_cep.index.store.rtree_and_statistics import SharedExtents
from uncertain_cep.input_tables import ColumnLabels
from uncertain_cep.model.event_times import time_columns

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["DEFAULT_SHARD_EVENTS", "MIN_SLOT_SHARD_EVENTS", "finish_in_tasks",
           "plan_cuts_spark", "shard_count", "shard_records", "shared_extents_of",
           "written_shards"]

# Events per shard when a build is not told: a shard is what one task finishes (its
# R*-tree bulk load, columns and statistics) and what a query's task opens. Smaller
# shards bulk-load their R*-trees in memory (libspatialindex sorts more than 1,000,000
# entries on disk: 990,000 boxes in 2.1 s, 1,010,000 in 5.3 s), but cut every group into
# more pieces, each a forest of its own: at 10M events, 12 shards of 900,000 built in
# 282 s, 4 of 2.5M in 260 s (docs/benchmarks.md).
DEFAULT_SHARD_EVENTS = 4_000_000
# Under the default, an archive of at least this many events per task slot is cut into
# one shard per slot at least, so that its shard tasks keep every slot busy: 1M events on
# 2 slots built in 40.3-45.8 s as two shards against 48.6-53.9 s as one (the R*-tree and
# statistics phase 9.7-10.6 s against 18.8-19.6 s; docs/benchmarks.md). Smaller shards
# than this cost more in pieces than a slot saves.
MIN_SLOT_SHARD_EVENTS = 250_000
# Quantiles of the earliest times asked for in the one pass that counts the rows (before
# the count, the number of shards is unknown): shards are cut at the nearest of them.
_QUANTILES = 1024


def plan_cuts_spark(frame: DataFrame, *, shard_events: int, time_unit: Any,
                    micros: tuple[str, ...], nanos: tuple[str, ...], slots: int = 1,
                    fill_slots: bool = False) -> tuple[int, ...]:
    """Cut instants for shards of about ``shard_events`` events, from one aggregation
    over the input: its row count and the quantiles of its earliest times on a grid of
    :data:`_QUANTILES`, those at the shards' shares turned into instants (duplicates
    merged); none for one shard. More than one shard are rounded up to a multiple of the
    session's ``slots`` (tasks at once), so that every wave of shard tasks keeps every
    slot busy (measured at 10M events on 2 slots: 3 shards finished in 178 s, one
    directory in 232 s). With ``fill_slots`` (the build's default shards), an archive
    of fewer than ``shard_events`` events is still cut into up to ``slots`` shards of at
    least :data:`MIN_SLOT_SHARD_EVENTS` each."""
    from pyspark.sql import functions as F

    column = "t_lo" if "t_lo" in frame.columns else "t"
    kind = dict(frame.dtypes).get(column, "")
    if not (kind in ("tinyint", "smallint", "int", "bigint", "float", "double")
            or kind.startswith("decimal")):
        return ()      # a time column of text (read as numbers in the tasks): never cut
    grid = [k / _QUANTILES for k in range(1, _QUANTILES)]
    found = frame.agg(F.count(F.lit(1)),
                      F.percentile_approx(F.col(f"`{column}`"), grid, 10_000)).first()
    rows = int(found[0]) if found is not None else 0
    n_shards = shard_count(rows, shard_events, slots, fill_slots)
    if n_shards == 1 or found is None or not found[1]:
        return ()
    at = {min(max(round(k * _QUANTILES / n_shards), 1), _QUANTILES - 1) - 1
          for k in range(1, n_shards)}
    values = [found[1][i] for i in sorted(at) if found[1][i] is not None]
    if not values:
        return ()
    raw = pd.Series(values)
    if column in micros or column in nanos:
        raw = pd.to_datetime(raw.astype(np.int64), unit="us" if column in micros else "ns")
    instants, _, _ = time_columns(pd.DataFrame({"t_lo": raw, "t_hi": raw}),
                                  np.arange(len(raw)), time_unit, ColumnLabels({}))
    return tuple(int(c) for c in np.unique(instants))


def shard_count(rows: int, shard_events: int, slots: int, fill_slots: bool = False
                ) -> int:
    """How many shards :func:`plan_cuts_spark` cuts ``rows`` events into.

    >>> shard_count(10_000_000, 4_000_000, 2), shard_count(1_000_000, 4_000_000, 2)
    (4, 1)
    >>> [shard_count(n, 4_000_000, 2, fill_slots=True) for n in (400_000, 1_000_000)]
    [1, 2]
    >>> shard_count(1_000_000, 4_000_000, 8, fill_slots=True)    # 250,000 events each
    4
    """
    slots = max(slots, 1)
    n_shards = max(1, math.ceil(rows / shard_events))
    if n_shards > 1:
        n_shards = math.ceil(n_shards / slots) * slots
    if fill_slots:
        n_shards = max(n_shards, min(slots, rows // MIN_SLOT_SHARD_EVENTS))
    return n_shards


def shared_extents_of(summary: DataFrame, attributes: tuple[str, ...]) -> SharedExtents:
    """The instants and attribute extents of every indexed group (from the group tasks'
    summary rows): what every shard's statistics are laid over."""
    from pyspark.sql import functions as F

    ok = summary.where((F.col("status") == "ok") & (F.col("events") > 0))
    columns = [F.min("t_lo"), F.max("t_hi")]
    for j in range(len(attributes)):
        columns += [F.min(F.col("lows")[j]), F.max(F.col("highs")[j])]
    row = ok.agg(*columns).first()
    if row is None or row[0] is None:
        return SharedExtents(None, {a: (0.0, 0.0) for a in attributes})
    return SharedExtents((int(row[0]), int(row[1])),
                         {a: (float(row[2 + 2 * j]), float(row[3 + 2 * j]))
                          for j, a in enumerate(attributes)})


def written_shards(summary: DataFrame) -> list[int]:
    """The shards some group task wrote a piece to, in order."""
    from pyspark.sql import functions as F

    rows = (summary.where(F.col("status") == "ok").select(F.explode("shards").alias("k"))
            .distinct().collect())
    return sorted(int(r[0]) for r in rows)


def finish_in_tasks(spark: SparkSession, shards: list[int],
                    finish: Callable[[int], Manifest]) -> list[Manifest]:
    """Run ``finish(k)`` for every shard ``k``, each in a Spark task of its own; their
    manifests, in the order of ``shards``."""
    wanted = list(shards)

    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for batch in batches:
            for i in batch["id"].tolist():
                k = wanted[int(i)]
                try:
                    done, error = json.dumps(finish(k).to_json()), None
                except UncertainCepError as e:
                    # Ours, raised again on the driver with its own message.
                    done, error = None, base64.b64encode(pickle.dumps(e)).decode()
                yield pd.DataFrame({"shard": [k], "manifest": [done], "error": [error]})

    found = (spark.range(len(wanted), numPartitions=max(len(wanted), 1))
             .mapInPandas(run, "shard bigint, manifest string, error string").collect())
    for row in sorted(found, key=lambda r: int(r[0])):
        if row[2] is not None:
            raise pickle.loads(base64.b64decode(row[2]))
    by_shard = {int(r[0]): Manifest.from_json(json.loads(r[1])) for r in found}
    return [by_shard[k] for k in wanted]


def shard_records(shards: list[int], manifests: list[Manifest], cuts: tuple[int, ...],
                  path: Callable[[int], str]) -> list[ShardRecord]:
    """The index manifest's record of each finished shard: directory, time range
    (cluster starts), extent and counts."""
    return [ShardRecord(path(k), cuts[k - 1] if k > 0 else None,
                        cuts[k] if k < len(cuts) else None, m.time.t_min, m.time.t_max,
                        m.counts)
            for k, m in zip(shards, manifests)]

