"""Compile the query engine's kernels when the package is built or installed, never when a
query first runs (issue "No compile wait").

``python -m uncertain_cep.kernel_build`` compiles every kernel of this version of the
package into the machine's cache (:func:`uncertain_cep.kernel_cache.kernel_cache_dir`,
shared by every checkout, environment and Spark worker of the machine), unless that cache
already holds them for this CPU; ``--into DIR`` then copies them to ``DIR/<version>/``.
Two callers:

* the build backend (``build_backend/uncertain_cep_build.py``): every wheel, whether built
  by ``pip wheel``, ``pip install`` of the sdist or ``python -m build``, ships its
  kernels as ``uncertain_cep/_kernels/<version>/``, so a fresh install compiles nothing;
* ``scripts/setup.sh``: a checkout's editable install ships nothing, so setup compiles
  into the machine's cache once per kernel version (about a minute on two cores; a
  version the machine knows costs nothing, not even a process that loads them).

It answers a few small queries that reach every kernel: both strategies, with one and
with two negations in a gap, in small batches, as entries and as tuples. A kernel is
compiled once per argument types; an index opened from disk hands the kernels the same
writable arrays as one built in memory, so it needs no compilation of its own. The
negation kernel (a third of the work) and the programme folding it into complete
tuples' probabilities are compiled in a second process meanwhile, for the types of their
arguments: the two cores share the work. What is compiled for this CPU is marked
(``.compiled-<cpu>`` in the version's folder) only once every query has run.

This file deliberately does not name the compiler: the kernel version hashes every
package source that does, and an edit here changes no kernel.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from llvmlite import binding

from uncertain_cep.kernel_cache import kernel_cache_dir, kernel_version

__all__ = ["compile_kernels", "compiled_marker", "main", "ship_kernels"]

log = logging.getLogger(__name__)

_QUERIES = (
    "PATTERN SEQ(A, B, C) DEFINE A AS a0 > 0, B AS a0 > 0.5, C AS a0 > 0 WITHIN 6 "
    "CONFIDENCE 0.05",
    # A common middle item between rare ends: selectivity order inserts it last.
    "PATTERN SEQ(A, B, C) DEFINE A AS a0 > 1.5, B AS a0 > -2, C AS a0 > 1.5 WITHIN 8 "
    "CONFIDENCE 0.01",
)
_NEGATION_QUERIES = (
    "PATTERN SEQ(A, NOT N, B) DEFINE A AS a0 > 0, N AS a1 > 0, B AS a0 > 0 WITHIN 6 "
    "CONFIDENCE 0.05",
    "PATTERN SEQ(A, NOT N, NOT M, B) DEFINE A AS a0 > 0, N AS a1 > 0, M AS a1 < -1, "
    "B AS a0 > 0 WITHIN 6 CONFIDENCE 0.05",
    "PATTERN SEQ(A, NOT N, B, C) DEFINE A AS a0 > 0, N AS a1 > 0, B AS a0 > 0.5, "
    "C AS a0 > 0 WITHIN 8",
)


def compiled_marker() -> Path:
    """The file saying that this version's kernels are compiled for this machine's CPU
    (its name and features: the compiled code of one kind does not run on another)."""
    cpu = binding.get_host_cpu_name() + ":" + binding.get_host_cpu_features().flatten()
    return kernel_cache_dir() / f".compiled-{hashlib.sha256(cpu.encode()).hexdigest()[:12]}"


def compile_kernels(force: bool = False) -> float:
    """Compile (or load) every kernel of this version into the machine's cache, unless
    it is marked compiled for this CPU already (``force`` compiles all the same).

    Returns
    -------
    float
        Seconds spent; 0.0 when the cache held them.
    """
    marker = compiled_marker()
    if marker.exists() and not force:
        log.info("query kernels already compiled in %s", marker.parent)
        return 0.0
    started = time.perf_counter()
    log.warning("compiling the query kernels for this machine into %s (once per version "
                "of uncertain-cep: about a minute on two cores)", marker.parent)
    _quiet_compile_notice()
    idx = _small_index()
    negation = subprocess.Popen([sys.executable, "-m", "uncertain_cep.kernel_build",
                                 "--negation-only"])
    try:
        _answer(idx, _QUERIES)
    finally:
        if negation.wait() != 0:
            raise RuntimeError("compiling the negation kernel failed (its process printed "
                               "why above)")
    _answer(idx, _NEGATION_QUERIES)
    _expand_node_lists()
    draft = marker.with_name(f"{marker.name}.{os.getpid()}")
    draft.write_text(f"{binding.get_host_cpu_name()}\n")
    os.replace(draft, marker)
    return time.perf_counter() - started


def ship_kernels(into: Path) -> Path:
    """Compile this version's kernels (:func:`compile_kernels`) and copy them to
    ``into/<version>/``: what a wheel ships (:mod:`uncertain_cep.kernel_cache` seeds a new
    cache directory of that version from it). Returns that folder."""
    compile_kernels()
    cache = kernel_cache_dir()
    target = Path(into) / kernel_version()
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for module in sorted(cache.iterdir()):
        # Module folders only: no markers, no drafts of a copy under way (hidden names).
        if module.is_dir() and not module.name.startswith("."):
            shutil.copytree(module, target / module.name)
    return target


def _small_index():
    import uncertain_cep as uc
    from uncertain_cep.datasets.synthetic import generate_synthetic

    return uc.build_index(generate_synthetic(300, groups=3, seed=1))


def _compile_negation_only() -> None:
    """The negation kernel for the argument types a query hands it, compiled without
    running it (its arguments are one made-up entry), and the programme of complete
    tuples with negation, run on one made-up tuple."""
    import numpy as np

    from uncertain_cep.query.engine import batch_engine
    from uncertain_cep.query.engine.kernels.negation import compile_negation_factors
    from uncertain_cep.query.engine.kernels.tuples import TupleTable, negated_probabilities
    from uncertain_cep.query.evaluation.context import QueryContext
    from uncertain_cep.query.language.parse import parse_query

    _quiet_compile_notice()
    idx = _small_index()
    ctx = QueryContext(idx.event_index, parse_query(_NEGATION_QUERIES[0]))
    engine = batch_engine.BatchEngine(ctx)
    table = idx.event_index.node_table
    entry = np.zeros((1, len(ctx.positive)), dtype=np.int64)
    compile_negation_factors(table, entry, entry, engine.negated)
    negated_probabilities(TupleTable(table),
                          np.arange(len(ctx.positive), dtype=np.int64)[None, :],
                          ctx.window, engine.gaps, engine.negated)


def _expand_node_lists() -> None:
    """The counting sort that expands a stored node table's lists (an index opened with
    its node table in memory), for both id types."""
    import numpy as np

    from uncertain_cep.index.store.packed_nodes import grouped_by_owner

    for dtype in (np.int32, np.int64):
        owners = np.array([1, 0], dtype=dtype)
        grouped_by_owner(owners, np.array([0, 1], dtype=dtype), np.array([0, 1, 2], dtype=dtype))


def _quiet_compile_notice() -> None:
    # The cache's notice speaks to a user whose query waits for a compilation; here the
    # compiling is the point, and said once above.
    logging.getLogger("uncertain_cep.kernel_cache").setLevel(logging.ERROR)


def _answer(idx, queries: tuple[str, ...]) -> None:
    from uncertain_cep.query.engine import batch_engine

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


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m uncertain_cep.kernel_build [--into DIR] [--force]``."""
    parser = argparse.ArgumentParser(prog="python -m uncertain_cep.kernel_build",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--into", type=Path, help="also copy the kernels to INTO/<version>/")
    parser.add_argument("--force", action="store_true",
                        help="compile even where the cache says it holds them")
    parser.add_argument("--negation-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.negation_only:
        _compile_negation_only()
        return 0
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    seconds = compile_kernels(force=args.force)
    if seconds:
        print(f"query kernels compiled in {seconds:.0f} s into {kernel_cache_dir()}")
    if args.into is not None:
        print(f"query kernels of version {kernel_version()} copied to "
              f"{ship_kernels(args.into)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
