"""Compile the query engine's numba kernels once, into numba's on-disk cache.

Every kernel is compiled with ``cache=True``, so a process finds it compiled when
another one compiled it before (uncertain_cep/kernel_cache.py: one cache per version of
the kernels' sources, shared by every checkout of the machine; this step then only loads
them, in about 5 s). A new version has no cache: without this step each
test worker, each of their Spark Python workers and each command a test starts would
compile the same kernels at once (about 90 s of one core each). scripts/test.sh runs it
before the tests. It answers a few small queries that reach every kernel: both
strategies, with one and with two negations in a gap, in small batches, as entries and
as tuples (query/engine/tuple_batches.py). numba compiles a
kernel once per argument types; an index opened from disk maps its columns copy-on-write
(index/store/node_columns.py), so it hands the kernels the same writable arrays as one built in
memory and needs no compilation of its own.

The negation kernel (a third of the compilation) and the programme folding it into
complete tuples' probabilities are compiled in a second process, for the types of their
arguments, while this one answers the queries without negation: the two cores share the
work. The queries with negation then find them compiled.
"""

from __future__ import annotations

import subprocess
import sys
import time

import numba
import numpy as np

import uncertain_cep as uc
from uncertain_cep.datasets.synthetic import generate_synthetic
from uncertain_cep.query.engine import batch_engine
from uncertain_cep.query.engine.kernels import negation as negation_kernels
from uncertain_cep.query.engine.kernels.tuples import TupleTable, negated_probabilities
from uncertain_cep.query.evaluation.context import QueryContext
from uncertain_cep.query.language.parse import parse_query

QUERIES = (
    "PATTERN SEQ(A, B, C) DEFINE A AS a0 > 0, B AS a0 > 0.5, C AS a0 > 0 WITHIN 6 "
    "CONFIDENCE 0.05",
    # A common middle item between rare ends: selectivity order inserts it last.
    "PATTERN SEQ(A, B, C) DEFINE A AS a0 > 1.5, B AS a0 > -2, C AS a0 > 1.5 WITHIN 8 "
    "CONFIDENCE 0.01",
)
NEGATION_QUERIES = (
    "PATTERN SEQ(A, NOT N, B) DEFINE A AS a0 > 0, N AS a1 > 0, B AS a0 > 0 WITHIN 6 "
    "CONFIDENCE 0.05",
    "PATTERN SEQ(A, NOT N, NOT M, B) DEFINE A AS a0 > 0, N AS a1 > 0, M AS a1 < -1, "
    "B AS a0 > 0 WITHIN 6 CONFIDENCE 0.05",
    "PATTERN SEQ(A, NOT N, B, C) DEFINE A AS a0 > 0, N AS a1 > 0, B AS a0 > 0.5, "
    "C AS a0 > 0 WITHIN 8",
)


def main() -> None:
    started = time.perf_counter()
    idx = uc.build_index(generate_synthetic(300, groups=3, seed=1))
    if sys.argv[1:2] == ["--negation"]:
        _compile_negation(idx)
        return
    negation = subprocess.Popen([sys.executable, __file__, "--negation"])
    _answer(idx, QUERIES)
    if negation.wait() != 0:
        raise SystemExit("compiling the negation kernel failed")
    _answer(idx, NEGATION_QUERIES)
    print(f"numba kernels compiled or loaded in {time.perf_counter() - started:.0f} s")


def _compile_negation(idx: uc.UncertainIndex) -> None:
    """Compile the negation kernel for the argument types a query hands it, without
    running it (its arguments here are one made-up entry), and the programme of complete
    tuples with negation, on one made-up tuple."""
    ctx = QueryContext(idx.event_index, parse_query(NEGATION_QUERIES[0]))
    engine = batch_engine.BatchEngine(ctx)
    negated = engine.negated
    entry = np.zeros((1, len(ctx.positive)), dtype=np.int64)
    arguments = negation_kernels._factor_arguments(idx.event_index.node_table, entry,
                                                   entry, negated)
    negation_kernels._negation_factors.compile(tuple(numba.typeof(a) for a in arguments))
    negated_probabilities(TupleTable(idx.event_index.node_table),
                 np.arange(len(ctx.positive), dtype=np.int64)[None, :], ctx.window,
                 engine.gaps, negated)


def _answer(idx: uc.UncertainIndex, queries: tuple[str, ...]) -> None:
    saved = batch_engine.BATCH_LIMIT, batch_engine.TUPLE_RATIO
    try:
        # Whole batches, and batches cut between tuples; then every batch as tuples.
        for limit, ratio in ((saved[0], saved[1]), (64, saved[1]), (saved[0], 0)):
            batch_engine.BATCH_LIMIT, batch_engine.TUPLE_RATIO = limit, ratio
            for query in queries:
                for strategy in ("selectivity", "sequential"):
                    idx.query(query, strategy=strategy)
    finally:
        batch_engine.BATCH_LIMIT, batch_engine.TUPLE_RATIO = saved


if __name__ == "__main__":
    main()
