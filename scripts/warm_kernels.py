"""Compile the query engine's numba kernels once, into numba's on-disk cache.

Every kernel is compiled with ``cache=True``, so a process finds it compiled when
another one compiled it before. A fresh checkout has no cache: without this step each
test worker, each of their Spark Python workers and each command a test starts would
compile the same kernels at once (about 90 s of one core each). scripts/test.sh runs it
before the tests. It answers a few small queries that reach every kernel: both
strategies, with one and with two negations in a gap, in small batches. numba compiles a
kernel once per argument types, and an index opened from disk hands it read-only
(memory-mapped) arrays where one built in memory hands it writable ones: the queries run
on both, the opened index in a second process, beside this one.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

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
    built = uc.build_index(generate_synthetic(300, groups=3, seed=1))
    if sys.argv[1:2] == ["--opened"]:
        with tempfile.TemporaryDirectory() as tmp:
            built.save(Path(tmp) / "index")
            _answer(uc.open_index(Path(tmp) / "index"))
        return
    opened = subprocess.Popen([sys.executable, __file__, "--opened"])
    _answer(built)
    if opened.wait() != 0:
        raise SystemExit("warming the kernels on an opened index failed")
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
