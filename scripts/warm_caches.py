"""Fill the two caches a fresh checkout lacks, side by side: numba's compiled kernels
and the Spark JVM's class archive. scripts/test.sh runs it before the tests.

Every kernel is compiled with ``cache=True``, so a process finds it compiled when
another one compiled it before. Without this step each test worker, each of their Spark
Python workers and each command a test starts would compile the same kernels at once
(about 90 s of one core each). It answers a few small queries that reach every kernel:
both strategies, with one and with two negations in a gap, in small batches.

The class archive (:mod:`uncertain_cep.pipeline.class_archive`) is recorded by the first
Spark session made for this Java and Spark installation, and written when its JVM exits:
recorded here, in a child process beside the compiling, every Spark session of the tests
maps it (about 4 s less to start, 2.5 s less for its first job).
"""

from __future__ import annotations

import threading
import time

import uncertain_cep as uc
from uncertain_cep.datasets.synthetic import generate_synthetic
from uncertain_cep.pipeline.class_archive import record_class_archive
from uncertain_cep.pipeline.session import spark_available
from uncertain_cep.query import batch_engine

QUERIES = (
    "PATTERN SEQ(A, B, C) DEFINE A AS a0 > 0, B AS a0 > 0.5, C AS a0 > 0 WITHIN 6 "
    "CONFIDENCE 0.05",
    "PATTERN SEQ(A, NOT N, B) DEFINE A AS a0 > 0, N AS a1 > 0, B AS a0 > 0 WITHIN 6 "
    "CONFIDENCE 0.05",
    "PATTERN SEQ(A, NOT N, NOT M, B) DEFINE A AS a0 > 0, N AS a1 > 0, M AS a1 < -1, "
    "B AS a0 > 0 WITHIN 6 CONFIDENCE 0.05",
    "PATTERN SEQ(A, NOT N, B, C) DEFINE A AS a0 > 0, N AS a1 > 0, B AS a0 > 0.5, "
    "C AS a0 > 0 WITHIN 8",
    # A common middle item between rare ends: selectivity order inserts it last.
    "PATTERN SEQ(A, B, C) DEFINE A AS a0 > 1.5, B AS a0 > -2, C AS a0 > 1.5 WITHIN 8 "
    "CONFIDENCE 0.01",
)


def main() -> None:
    started = time.perf_counter()
    said: list[str] = []

    def record() -> None:
        try:
            said.append(str(record_class_archive() or "none (off, unsupported, or being "
                                                      "recorded by another process)"))
        except Exception as e:   # the Spark tests will say what is wrong with Spark
            said.append(f"not recorded: {type(e).__name__}: {e}")

    recorder = threading.Thread(target=record)
    if spark_available():
        recorder.start()
    idx = uc.build_index(generate_synthetic(300, groups=3, seed=1))
    saved = batch_engine.BATCH_LIMIT
    try:
        for limit in (saved, 64):   # whole batches, and batches cut between tuples
            batch_engine.BATCH_LIMIT = limit
            for query in QUERIES:
                for strategy in ("selectivity", "sequential"):
                    idx.query(query, strategy=strategy)
    finally:
        batch_engine.BATCH_LIMIT = saved
    print(f"numba kernels compiled or loaded in {time.perf_counter() - started:.0f} s")
    if spark_available():
        recorder.join()
        print(f"Spark JVM class archive: {said[0]} ({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
