"""A session's first Spark query at about its warm speed: the query job's plan run once
ahead, with no index and no work, while the session is otherwise idle (issue "No compile
wait").

With every kernel shipped compiled, a session's first query on
``local-cluster[2,1,1024]`` still took 2-3x its warm time (docs/benchmarks.md, "First
queries of a fresh install"). Traced, the excess was Spark's own first run of a plan: the
driver planning it (about 0.35 s), each executor generating and loading its classes and
running the Arrow paths interpreted for the first time (about 0.5 s), and each Python
worker's first slice (the query's modules imported, the kernels loaded from their cache).
None of it depends on the index or the query: the job :func:`warm_up` runs is the query
job's own plan (one row per slice, ``mapInPandas`` with the collected answer's schema,
``toPandas``; :mod:`~uncertain_cep.pipeline.answer_forms`), whose tasks import and load
what a slice does and answer one placeholder row, which the driver drops.

When it runs, in the background, once per session:

- when :func:`~uncertain_cep.build_index_spark` ends, on the session it ran in (the
  user's own included): the session's next job is likely a query, and until then the
  session idles (a notebook user reading the build's summary);
- when asked: :func:`uncertain_cep.warm_up_spark`, e.g. right after a notebook starts
  its session.

A query waits for a warm-up running on its session before its own job starts
(:func:`wait_for_warm_up`), so the two never compete for task slots; a query asked at
once pays the rest of the warm-up first, about what its own first run would have cost.
A process that ends while one runs waits for it (at most :data:`EXIT_WAIT` seconds) so
that the JVM is not stopped under a running job. Off with ``UNCERTAIN_CEP_SPARK_WARM_UP=0``
and in the command line (one job per process: nothing would follow it;
:data:`~uncertain_cep.pipeline.session.WARM_UP`).
A warm-up that fails costs nothing more than its time: the task catches everything
(a worker without the package answers no row, and the query then says what is missing),
and the driver logs the failure at debug level.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pandas as pd

from uncertain_cep.kernel_cache import load_cached_kernels, prepare_compiler
from uncertain_cep.pipeline import session
from uncertain_cep.pipeline.answer_forms import (
    DRIVER_KERNELS,
    KIND_COLUMN,
    STATS_COLUMN,
    answer_struct,
    detailed_schema,
    slice_numbers,
)
from uncertain_cep.pipeline.session import is_connect, task_slots

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["EXIT_WAIT", "WARM_UP_ENV", "start_warm_up", "wait_for_warm_up",
           "warm_up", "warm_up_enabled", "warm_up_spark"]

log = logging.getLogger(__name__)

WARM_UP_ENV = "UNCERTAIN_CEP_SPARK_WARM_UP"
# Seconds a process ending waits for a warm-up still running.
EXIT_WAIT = 60.0
_DESCRIPTION = "uncertain-cep: warming up the query plan (no data)"

_lock = threading.Lock()
# Per session, its warm-up's thread (once started, the session is never warmed again).
_warm_ups: weakref.WeakKeyDictionary[SparkSession, threading.Thread] = (
    weakref.WeakKeyDictionary())
_exit_registered = False


def warm_up_enabled() -> bool:
    """Whether warm-ups run: :data:`~uncertain_cep.pipeline.session.WARM_UP` and
    ``$UNCERTAIN_CEP_SPARK_WARM_UP`` not ``0`` (or ``false``, ``no``, ``off``)."""
    setting = os.environ.get(WARM_UP_ENV, "1").strip().lower()
    return session.WARM_UP and setting not in {"0", "false", "no", "off"}


def warm_up_spark(spark: SparkSession | None = None, *, master: str | None = None,
                  wait: bool = False) -> float:
    """Run the Spark query's plan once on a session, ahead of its first query, so that
    the first query answers at about the speed of the next ones.

    Parameters
    ----------
    spark, master
        The session (classic or Spark Connect), or a master URL for one made here
        (default: the running session, else local mode).
    wait
        Wait for it (default: it runs in the background and the session's next query
        waits for it to end, so the two never compete for task slots).

    Returns
    -------
    float
        The seconds waited (0.0 without ``wait``, and for a session warmed already).

    Notes
    -----
    A build (:func:`uncertain_cep.build_index_spark`) warms its session when it ends;
    this is for a session that queries an index built elsewhere, e.g. right after a
    notebook starts it. The job runs no data: per task slot two tasks that import the
    query's modules, load the compiled kernels and answer a placeholder row
    (:mod:`~uncertain_cep.pipeline.warm_up`; docs/benchmarks.md, "First queries of a fresh
    install", for what it saves). Asked for here it runs even where
    ``UNCERTAIN_CEP_SPARK_WARM_UP=0`` turns the automatic ones off.
    """
    if spark is None:
        spark = session.spark_session(master)
    start_warm_up(spark, asked=True)
    return wait_for_warm_up(spark) if wait else 0.0


def start_warm_up(spark: SparkSession, *, asked: bool = False) -> threading.Thread | None:
    """Start :func:`warm_up` of ``spark`` on a thread of its own, unless warm-ups are off
    (``asked``: run anyway) or the session was warmed (or is warming) already; returns
    the thread it started."""
    global _exit_registered
    if not asked and not warm_up_enabled():
        return None
    with _lock:
        if spark in _warm_ups:
            return None
        thread = threading.Thread(target=_quietly, args=(spark,), daemon=True,
                                  name="uncertain-cep-spark-warm-up")
        _warm_ups[spark] = thread
        if not _exit_registered:
            # Registered after pyspark's own (the JVM's stop at exit), so run before it.
            atexit.register(_wait_all, EXIT_WAIT)
            _exit_registered = True
    thread.start()
    return thread


def wait_for_warm_up(spark: SparkSession) -> float:
    """Wait for a warm-up running on ``spark`` to end; the seconds waited (0.0 if none
    runs)."""
    with _lock:
        thread = _warm_ups.get(spark)
    if thread is None or not thread.is_alive():
        return 0.0
    started = time.perf_counter()
    thread.join()
    return time.perf_counter() - started


def warm_up(spark: SparkSession) -> float:
    """Run the query job's plan once on ``spark`` with no index: two tasks per task slot
    (a query's default slices; every executor starts its Python worker), each importing
    the query's modules, loading the compiled kernels from their cache and answering one
    placeholder row, collected and dropped. Returns its seconds. Raises what Spark
    raises."""
    started = time.perf_counter()
    if not is_connect(spark):
        spark.sparkContext.setJobDescription(_DESCRIPTION)
    try:
        schema = detailed_schema(answer_struct())
        slice_numbers(spark, 2 * task_slots(spark)).mapInPandas(_warm_task(), schema).toPandas()
    finally:
        if not is_connect(spark):
            spark.sparkContext.setJobDescription(None)  # type: ignore[arg-type]
    return time.perf_counter() - started


def _quietly(spark: SparkSession) -> None:
    try:
        seconds = warm_up(spark)
        # The driver's own kernels (the answer's order), which a query would load while
        # its executors work.
        prepare_compiler()
        load_cached_kernels(DRIVER_KERNELS)
    except Exception as e:       # the first query pays its own start instead
        log.debug("warming the Spark session up failed: %s: %s", type(e).__name__, e)
    else:
        log.debug("Spark session warmed up in %.2f s", seconds)


def _wait_all(timeout: float) -> None:
    with _lock:
        threads = [t for t in _warm_ups.values() if t.is_alive()]
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))


def _warm_task() -> Callable[[Iterator[pd.DataFrame]], Iterator[pd.DataFrame]]:
    """The warm-up's task, defined here so that it travels by value: an executor without
    the package still runs it (and answers nothing) instead of failing to unpickle it."""
    kind, stats = KIND_COLUMN, STATS_COLUMN

    def task(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        try:
            from uncertain_cep.kernel_cache import load_cached_kernels
            from uncertain_cep.pipeline.answer_forms import detailed_frame as frame_of
            from uncertain_cep.pipeline.worker_daemon import preload

            # A worker forked from the package's daemon has done most of it already.
            preload()
            load_cached_kernels()           # the parallel kernels too: a worker may
        except Exception:                   # start threads, its daemon may not
            for _ in batches:
                pass
            return
        for batch in batches:
            for _ in range(len(batch)):
                row = pd.DataFrame({kind: ["row"], "events": [[0]], "confidence": [0.0],
                                    "t_first": [0], "t_last": [0]})
                yield frame_of(row)
                yield frame_of(pd.DataFrame({kind: ["stats"], stats: [b""]}))

    return task

