"""Spark's Python worker daemon, with the query's worker modules loaded before it forks
(issue "No compile wait": a session's first Spark query).

Spark starts one daemon per executor (``python -m pyspark.daemon``) and the daemon forks
a Python worker per running task; Spark keeps a worker for the next task, but stops the
ones idle for a minute. Each new worker imports what its tasks need: for a query slice,
the package's query modules and their compiler (0.8 s on this 2-core machine), then the
compiler's first use in a process (its registries of numpy functions, 0.45 s:
:func:`~uncertain_cep.kernel_cache.prepare_compiler`). A session's first
query, and any query after a minute's pause, paid that in every worker, more than the
query itself on a small index (docs/benchmarks.md, "First queries of a fresh install").

(This file names no compiler: an edit here changes no kernel version.)

This daemon loads those modules once, makes the compiler's first use and loads from the
kernel cache every kernel that runs on one thread (0.3 s: what a worker's first slice
spent loading; :func:`~uncertain_cep.kernel_cache.load_cached_kernels`), then runs
pyspark's own daemon, so every worker it forks starts with them. The parallel kernels
are left to the workers (a few, 0.1 s at a first slice): loading one starts the
compiler's threads. Sessions made by :func:`~uncertain_cep.pipeline.session.
spark_session` use it with ``UNCERTAIN_CEP_WORKER_DAEMON=1``
(``spark.python.daemon.module``); any session may set it, where the executors have the
package. Not by default: the loading moves into the session's first Python job (one
process per executor, where pyspark's workers loaded in parallel), which it makes slower
by about as much as it saves the first query (measured in docs/benchmarks.md); what it
saves for good is every later worker's share: those Spark forks after a minute idle,
and the further workers of an executor with several cores.

pyspark's daemon imports nothing of the workers' before it forks, because a process
with threads besides its own cannot be forked safely. This one keeps that rule: pyarrow's
allocator is told not to start its background thread (``JE_ARROW_MALLOC_CONF``, unless
set), numpy's BLAS starts threads only beyond one core a task (Spark sets
``OMP_NUM_THREADS`` to the task's cores), and the kernels' threads start when a parallel
kernel first runs, which the loading does not do. If the daemon still holds another
thread after loading, or the loading fails, it replaces itself with pyspark's daemon
(``exec``: a new process image, nothing loaded), so a worker is never forked from a
process with threads; the reason goes to the executor's stderr.
"""

from __future__ import annotations

import os
import sys

__all__ = ["preload", "thread_count"]

# What a query slice's worker imports (pipeline/query_job.py's task unpickles the reader
# and the bound pattern, then answers through the batch engine).
_MODULES = ("numpy", "pandas", "pyarrow", "uncertain_cep.pipeline.time_slices",
            "uncertain_cep.pipeline.query_job", "uncertain_cep.query.strategies")


def thread_count() -> int | None:
    """The threads of this process, as the kernel counts them (None where it cannot
    tell: no ``/proc``)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return None


def preload() -> None:
    """Import the worker modules, make the compiler's first use in this process and load
    the kernels that start no thread from the kernel cache."""
    import importlib

    os.environ.setdefault("JE_ARROW_MALLOC_CONF", "background_thread:false")
    for name in _MODULES:
        importlib.import_module(name)
    from uncertain_cep.kernel_cache import load_cached_kernels, prepare_compiler

    prepare_compiler()
    # The kernels a worker runs on one thread, loaded from the cache now rather than at
    # a worker's first slice (0.3 s); the parallel ones would start threads here.
    load_cached_kernels(parallel=False)


def _plain_daemon(reason: str) -> None:
    print(f"uncertain-cep worker daemon: {reason}; running pyspark's daemon instead",
          file=sys.stderr, flush=True)
    os.execv(sys.executable, [sys.executable, "-m", "pyspark.daemon", *sys.argv[1:]])


def main() -> None:
    try:
        preload()
    except Exception as e:     # any failure: pyspark's daemon instead
        _plain_daemon(f"loading the worker modules failed ({type(e).__name__}: {e})")
    threads = thread_count()
    if threads != 1:
        _plain_daemon(f"{threads or 'an unknown number of'} threads after loading")
    from pyspark.daemon import manager

    manager()


if __name__ == "__main__":
    main()
