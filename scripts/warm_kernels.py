"""Compile the query engine's numba kernels once, into numba's on-disk cache.

Every kernel is compiled with ``cache=True``, so a process finds it compiled when
another one compiled it before. A fresh checkout has no cache: without this step each
test worker, each of their Spark Python workers and each command a test starts would
compile the same kernels at once (about 90 s of one core each). scripts/test.sh runs it
before the tests. It answers a few small queries that reach every kernel: both
strategies, with one and with two negations in a gap, in small batches. numba compiles a
kernel once per argument types; an index opened from disk maps its columns copy-on-write
(index/node_columns.py), so it hands the kernels the same writable arrays as one built in
memory and needs no compilation of its own.
"""

from __future__ import annotations

import time

import uncertain_cep as uc
from uncertain_cep.datasets.synthetic import generate_synthetic
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
    _answer(uc.build_index(generate_synthetic(300, groups=3, seed=1)))
    print(f"numba kernels compiled or loaded in {time.perf_counter() - started:.0f} s")


def _answer(idx: uc.UncertainIndex) -> None:
    saved = batch_engine.BATCH_LIMIT
    try:
        for limit in (saved, 64):   # whole batches, and batches cut between tuples
            batch_engine.BATCH_LIMIT = limit
            for query in QUERIES:
                for strategy in ("selectivity", "sequential"):
                    idx.query(query, strategy=strategy)
    finally:
        batch_engine.BATCH_LIMIT = saved


if __name__ == "__main__":
    main()
