"""The Spark query engine: evaluate a query over an index by time slices in executors.

The driver checks the index (format, checksums) and the query, cuts the time domain into
slices of about equal event counts (:func:`~uncertain_cep.pipeline.time_slices.plan_slices`),
and sends each slice to an executor, which reads only its events and trees from the index
directory (a shared filesystem on a cluster) and answers for the tuples anchored in it.
The union of the slices' rows is the answer; only answer rows reach the driver.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from uncertain_cep.errors import PlanningError, UncertainCepError
from uncertain_cep.index.reader import open_reader
from uncertain_cep.pipeline.time_slices import SLICE_STRATEGIES, evaluate_slice, plan_slices
from uncertain_cep.query.language import bind_query
from uncertain_cep.query.stats import QueryStats
from uncertain_cep.query.symbols import check_symbols

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["EVENTS_PER_SLICE", "query_spark"]

EVENTS_PER_SLICE = 250_000


def query_spark(path: str | Path, query: str, strategy: str = "selectivity", *,
                master: str | None = None, spark: SparkSession | None = None,
                slices: int | None = None) -> tuple[list[tuple[Any, ...]], QueryStats]:
    """Answer rows and counters of ``query`` over the index at ``path``, on Spark."""
    started = time.perf_counter()
    if strategy not in SLICE_STRATEGIES:
        raise PlanningError(f"strategy {strategy!r} needs the whole index in one process; "
                            "use --engine local, or with the Spark engine one of: "
                            f"{', '.join(map(repr, SLICE_STRATEGIES))}")
    # Checked once here; executors get the reader (the directory and its manifest).
    reader = open_reader(Path(path).resolve())
    archive = reader.empty_archive()
    # The window in instants (WITHIN 6s on an index of seconds is 6): the slices' halo.
    pattern = bind_query(query, archive.time_axis)
    check_symbols(archive, pattern)
    if spark is None:
        from uncertain_cep.pipeline.session import spark_session

        spark = spark_session(master)
    sc = spark.sparkContext
    # Enough slices to keep every core busy, and small enough that one slice's events and
    # trees stay a modest part of an executor's memory.
    n = slices or max(4 * sc.defaultParallelism,
                      math.ceil(reader.manifest.counts.events / EVENTS_PER_SLICE))
    plan = plan_slices(reader, pattern.window, n)
    if not plan:
        return [], QueryStats(strategy=strategy, engine="spark", slices=0)

    def run(pieces: Any) -> Any:
        for piece in pieces:
            try:
                rows, stats = evaluate_slice(reader, piece, query, strategy)
            except UncertainCepError as e:
                # Surface our own message, not a JVM stack trace.
                yield ("error", f"{type(e).__name__}: {e}")
                continue
            yield ("stats", stats)
            for row in rows:
                yield ("row", row)

    out = sc.parallelize(plan, len(plan)).mapPartitions(run).collect()
    errors = [v for kind, v in out if kind == "error"]
    if errors:
        raise PlanningError(f"a time slice failed: {errors[0]}")
    rows = [v for kind, v in out if kind == "row"]
    parts = [v for kind, v in out if kind == "stats"]
    return rows, QueryStats.merged(parts, engine="spark",
                                   seconds=time.perf_counter() - started)

